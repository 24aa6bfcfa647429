"""Planted legs that keep pace with their joints' speed limits.

Each frame of a planted leg is solved on its own (core.feet.plant), then every joint is held to
its velocity limit (rate_limit). A joint too slow for the clip then lags at its top speed while
the other joints keep the angles they took for where it should have been, so the foot leaves
its goal: Romeo's hip yaw turns at 0.32 rad/s and its hip pitch at 2.09, and its walk slid in 31 %
of its contacts (foot_slide_pct), the legs' own solutions in 69 % before the root's creep was
taken out. Where the lag moves a planted foot off its goal, the frames the leg lags over are
solved again in order, each inside the box its velocity limits allow from the frame before: the
slow joint gives way and the others hold as much of the goal as they can, so the foot turns
about the point it stands on instead of sliding.
"""
from __future__ import annotations

import numpy as np

from ..motion.filtering import rate_limit
from .contacts import close_gaps, flags_to_intervals

PACE_TOL_M = 0.01  # a planted foot moved this far off its goal by the lag is solved again (ON_GROUND_M)
PACE_PASSES = 2  # Gauss-Newton passes over a lagging stretch, each linearized where the last one ended
DAMPING = 1e-3  # Levenberg damping of each frame's step, relative to its Hessian's diagonal


def keep_pace(problem, q: np.ndarray, max_step: np.ndarray, sustained: float) -> None:
    """Solve again, in place in q (F, n), the stretches where the leg of `problem` (a planted leg's
    LegProblem, its frames in `problem.frames`) cannot follow its solution at its top speed and
    that holds a planted foot more than PACE_TOL_M off its goal on `sustained` of their frames or
    more, with the lags less than `sustained` frames from them. Fewer is a branch switch, which the rate
    limit crosses at top speed (the G1's and H1's stretches lag over 1-3 frames at 120 Hz). max_step: (n,)
    per frame."""
    cols, frames = problem.leg.kin.columns, problem.frames
    step = max_step[cols]
    paced = rate_limit(q[:, cols], step)
    lag = (np.abs(paced - q[:, cols]) > 1e-12).any(axis=1)
    if not lag[frames].any():
        return
    row = np.full(len(q), -1)
    row[frames] = np.arange(len(frames))
    late = frames[lag[frames]]
    worse = problem.pivot_miss(paced[late], row[late]) - problem.pivot_miss(q[late][:, cols], row[late])
    broken = np.zeros(len(q), dtype=bool)
    broken[late] = (worse > PACE_TOL_M) & problem.planted[row[late]]
    gated = np.zeros(len(q), dtype=bool)  # the first frame of each lag that breaks a foot long enough
    for start, end in flags_to_intervals(lag):
        gated[start] = broken[start:end].sum() >= sustained
    # a paced lag takes in the lags less than `sustained` away: paced up to such a gap, the leg is not
    # where the unpaced rate limit caught up, and would be pulled there at top speed with its foot let go
    # (Romeo's crouch: lags 3 frames apart, the right foot 1.3 m/s between them); lags that are all
    # short stay the rate limit's (the H1's branch switches, a few frames each)
    for start, end in flags_to_intervals(close_gaps(lag, sustained)):
        if gated[start:end].any():
            _stretch(problem, q, row, start, end, step)


def _stretch(problem, q: np.ndarray, row: np.ndarray, start: int, end: int, step: np.ndarray) -> None:
    """Frames start:end solved in order, each inside its speed box from the frame before (a frame
    the leg does not solve is only held to it); Gauss-Newton passes, each linearized where the
    last one ended. Where the leg catches up after `end` is left to the caller's rate_limit."""
    cols = problem.leg.kin.columns
    wanted = q[:, cols].copy()
    x = rate_limit(wanted, step)
    span = np.arange(start, end)
    solved = span[row[span] >= 0]
    lower, upper = problem.tree.lower[cols], problem.tree.upper[cols]
    for _ in range(PACE_PASSES):
        res, jac = problem.residuals(x[solved], row[solved])
        hess = jac.transpose(0, 2, 1) @ jac
        grad = (jac.transpose(0, 2, 1) @ res[..., None])[..., 0]
        hess += DAMPING * np.einsum("fii->fi", hess)[:, None, :] * np.eye(len(cols)) + 1e-9 * np.eye(len(cols))
        base = x[solved].copy()
        newton = base + np.linalg.solve(hess, -grad[..., None])[..., 0]  # each frame's step without its box
        model = {f: k for k, f in enumerate(solved.tolist())}
        for f in span:
            low, high = np.maximum(x[f - 1] - step, lower), np.minimum(x[f - 1] + step, upper)
            high = np.maximum(high, low)
            k = model.get(int(f))
            if k is None:
                x[f] = np.clip(wanted[f], low, high)
            elif np.all(newton[k] >= low) and np.all(newton[k] <= high):
                x[f] = newton[k]
            else:
                x[f] = base[k] + _box_step(hess[k], grad[k], low - base[k], high - base[k])
    q[start:end, cols] = x[start:end]


def _box_step(hess: np.ndarray, grad: np.ndarray, low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """The step d minimising grad.d + d.hess.d / 2 with low <= d <= high (hess positive definite):
    a primal active set, exact. It starts from the Newton step clipped, the clipped variables held
    on their bounds; a Newton step of the others stops at the first bound it meets, which joins
    them; a held variable whose bound no longer pushes back is let go."""
    n = len(grad)
    d = np.clip(np.linalg.solve(hess, -grad), low, high)
    pinned = high - low <= 1e-15  # a box of no width: held whatever the gradient
    held = pinned | (d <= low) | (d >= high)
    for _ in range(4 * n + 4):
        free = np.flatnonzero(~held)
        move = np.zeros(n)
        if len(free):
            sub = hess[free]
            move[free] = np.linalg.solve(sub[:, free], -(grad[free] + sub[:, held] @ d[held])) - d[free]
        with np.errstate(divide="ignore", invalid="ignore"):
            room = np.where(move > 0, (high - d) / move, np.where(move < 0, (low - d) / move, np.inf))
        alpha = min(1.0, room[free].min(initial=np.inf))
        d = np.clip(d + alpha * move, low, high)
        if alpha < 1.0:
            held[free[room[free] <= alpha]] = True
            continue
        slope = grad + hess @ d
        wrong = held & ~pinned & (((d <= low) & (slope < 0)) | ((d >= high) & (slope > 0)))
        if not wrong.any():
            break
        held[np.argmax(np.where(wrong, np.abs(slope), -1.0))] = False
    return d
