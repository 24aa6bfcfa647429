"""The hands' free turn held near neutral on the live path, as the bake holds it (session 19).

A hand chain is given the hand's direction only: one turn of its wrist (the roll, with the pitch
and yaw bending back) is left free, and two branches about 3 rad apart point the hand alike. The
bake pulls every frame along that turn toward the neutral posture (`SolveOptions.free_prior`,
core.retarget.pipeline.HAND_FREE_PRIOR); the stream's frame solver (core.chains.frame.solve_frame)
has no such pull, so a warm-started wrist drifted along the free turn wherever the frames before
had taken it: the walk streamed at 60 Hz and at 120 Hz put the G1's wrists 3.4 rad apart, and
3.2 rad from the bake's. A hand chain (one no other chain hangs from) therefore takes, in place
of the frame solver's step, one Gauss-Newton step of the bake's objective with the free pull
(the targets linearised where the frame before left the wrist); the first frame settles from
neutral with the frame solver, then takes a few such steps. It moves the wrist along the free
turn and barely moves what the targets decide.
"""
from __future__ import annotations

import numpy as np

from ..chains.frame import FrameKinematics, clip_values
from ..chains.solver import SolveOptions, free_metric


def hold_free_turn(fk: FrameKinematics, anchor: np.ndarray, q: np.ndarray, targets: np.ndarray,
                   weights: np.ndarray, options: SolveOptions, previous: np.ndarray, lower: np.ndarray,
                   upper: np.ndarray, free_prior: float) -> None:
    """One step of the hands' objective (targets, smoothness toward `previous`, rest prior) plus
    `free_prior` times the pull toward `options.rest` along the turns the targets leave free
    (core.chains.solver.free_metric), from q (n,), updated in place within lower/upper (B, V).
    fk: the hand chains side by side; anchor (B, 4, 4), targets (B, M, 3), weights (B, M)."""
    cols = fk.variable_columns  # (B, V)
    x = q[cols]
    points, jac = fk.evaluate_rows(anchor, q)
    sw = np.sqrt(weights)[:, :, None]  # (B, M, 1)
    count, size = cols.shape
    res = ((points - targets) * sw).reshape(count, -1)
    jwt = (jac * sw[:, None]).reshape(count, size, -1)  # (B, V, 3M)
    hess = jwt @ jwt.transpose(0, 2, 1)
    rest = clip_values(0.0 if options.rest is None else options.rest[cols], lower, upper)
    metric = free_prior * free_metric(hess)
    smooth, prior = options.smoothness, options.rest_prior
    grad = (jwt @ res[:, :, None])[:, :, 0] + smooth * (x - previous) + prior * (x - rest) \
        + (metric @ (x - rest)[:, :, None])[:, :, 0]
    system = hess + metric + (smooth + prior) * np.eye(size)
    q[cols] = clip_values(x - np.linalg.solve(system, grad[:, :, None])[:, :, 0], lower, upper)
