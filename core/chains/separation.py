"""Keeping a chain's bodies apart: the chain solve again on the frames where a checked pair
comes closer than the margin, with hinge rows for those pairs next to the chain shape.

The rows themselves come from outside (core.collision builds them; chains never imports it):
only frames near a contact pay for them, so a clip without contacts costs a distance check.
"""
from __future__ import annotations

import numpy as np
from scipy.ndimage import maximum_filter1d

from ..model.kinematics import KinematicTree
from .solver import ChainKinematics, ChainProblem, SolveOptions, rate_limit

SEPARATION_PASSES = 2  # separation passes, each followed by the ramp and the rate limit
SEPARATION_PAD = 4  # frames solved with the separation rows before and after a close approach
MAX_SEPARATION_RAD = 0.5  # a joint moves at most this far from its shape-only answer to make room (no flips)


def separate_chain(tree: KinematicTree, kin: ChainKinematics, anchor: np.ndarray, q: np.ndarray,
                   targets: np.ndarray, weights: np.ndarray, separation, options: SolveOptions | None = None,
                   max_step: np.ndarray | None = None) -> None:
    """Move the chain's columns of q (F, n) in place, from where they are, so that the checked
    pairs its joints move stay `separation.margin` apart: after its solve_chain, and again as
    a bake's last word when filtering and planting have moved the limbs by centimetres.

    separation: the rows keeping bodies apart (core.collision.avoid.SeparationTerm: margin,
    root, distance(q, root), near(q, frames), residuals(q, root)).
    """
    if len(kin.columns) == 0 or separation is None:
        return
    problem = ChainProblem(tree, kin, anchor, q, targets, weights, options or SolveOptions())
    q[:, kin.columns] = _keep_apart(problem, separation, np.clip(q[:, kin.columns], problem.lower, problem.upper),
                                    max_step)


def _keep_apart(problem: ChainProblem, separation, x: np.ndarray, max_step: np.ndarray | None,
                passes: int = SEPARATION_PASSES) -> np.ndarray:
    """x after `passes` of _separate, the room made after each ramped in time (it starts
    early enough for the joints' speed) and rate limited: velocity limits hold, a last overlap may not.
    Later passes look only at the frames the pass before moved, and solve those still overlapping
    (the ramp leaves many a hair inside the margin)."""
    shape, frames = x, None
    for k in range(passes):
        last = x
        x = _separate(problem, separation, x, separation.margin if k == 0 else 0.0, frames)
        if max_step is not None:
            x = rate_limit(shape + ramped(x - shape, max_step), max_step)
        frames = np.flatnonzero((x != last).any(axis=1))
        if len(frames) == 0:
            break
    return x


def _separate(problem: ChainProblem, separation, x: np.ndarray, within: float, frames: np.ndarray | None = None,
              iterations: int = 8) -> np.ndarray:
    """x with the frames (of `frames`, default all) where bodies come closer than `within` solved
    again, the separation rows added to the chain shape, each from its own pose and pulled toward the frame before,
    within MAX_SEPARATION_RAD of it: a limb deep inside the body gives way, it does not swing
    round the other side."""
    q = problem.q.copy()
    q[:, problem.kin.columns] = x
    near = np.zeros(len(q), dtype=bool)
    look = slice(None) if frames is None else frames
    near[look] = separation.distance(q[look], separation.root[look]).min(axis=1, initial=np.inf) < within
    if not near.any():
        return x
    near = maximum_filter1d(near, 2 * SEPARATION_PAD + 1)  # a few frames either side: room made gradually
    close = np.flatnonzero(near)
    guarded = ChainProblem(problem.tree, problem.kin, problem.anchor, problem.q, problem.targets, problem.weights,
                       problem.options, separation.near(q, close))
    before = np.clip(problem.q[:, problem.kin.columns], problem.lower, problem.upper)  # the chain not yet moved
    guarded.box = (np.maximum(problem.lower, np.minimum(x, before) - MAX_SEPARATION_RAD),
                   np.minimum(problem.upper, np.maximum(x, before) + MAX_SEPARATION_RAD))
    out = x.copy()
    ref = x[np.maximum(close - 1, 0)]
    out[close], cost = guarded.solve(x[close], ref, close, iterations=iterations)
    # runs of frames where the limb is still inside: again from where the chain was before its
    # solve (the limbs before it made room there; a wrist that turned the hand into the hip
    # starts from the hand held clear), one start per run so neighbours stay on one branch
    runs = np.cumsum(np.diff(close, prepend=close[0] - 2) > 1) - 1
    q[close[:, None], problem.kin.columns] = out[close]
    stuck = separation.distance(q[close], separation.root[close]).min(axis=1) < 0.0
    retry = np.isin(runs, runs[stuck])
    if retry.any():
        rows, their = close[retry], runs[retry]
        again, cost_again = guarded.solve(before[rows], ref[retry], rows, iterations=iterations)
        better = (np.bincount(their, cost_again, runs[-1] + 1) < np.bincount(their, cost[retry], runs[-1] + 1))[their]
        out[rows[better]] = again[better]
    return out


def ramped(change: np.ndarray, max_step: np.ndarray) -> np.ndarray:
    """A change of joint positions (F, V) spread over neighbouring frames at no more than
    max_step (V,) per frame, never smaller than asked anywhere: the largest cone-shaped
    envelope of its positive and of its negative part (a limb that must give way starts
    moving before the frame that needs it, and returns after)."""
    out = []
    ramp = np.arange(len(change))[:, None] * max_step  # (F, V)
    for part in (np.clip(change, 0.0, None), np.clip(-change, 0.0, None)):
        # max over k of part[k] - |f - k| * max_step: running maxima forward and backward
        ahead = np.maximum.accumulate(part + ramp, axis=0) - ramp
        behind = np.maximum.accumulate((part - ramp)[::-1], axis=0)[::-1] + ramp
        out.append(np.maximum(ahead, behind))
    return out[0] - out[1]
