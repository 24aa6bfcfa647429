"""A limb's room made, polished where a pair binds: the frames whose closest pair sits at the
margin are taken toward the least of their whole change (the shape's at a small share, the limb
line's distance from the actor's: core.chains.change_cost) by steps that each lower that cost
and keep the pairs out (sequential quadratic programming with a backtracking line search), in
a wider room than the passes' (a frame held at the passes' bound gets more). The passes' whole
steps are kept only where cheaper after the fact and stop short; these do not undo themselves.
On in an avoiding bake since session 33 (core.chains.separation.POLISH_ROOM; docs/history/self_collision.md).
descend_room takes every frame moved from the shape further, to where its cost stops falling (damped steps, a step
that ends inside taken back out; core.chains.separation.POLISH_DESCENT, on; docs/notes/s25-step.md).
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from .batched import spd_inverse

POLISH_STEPS = 4  # SQP steps (8: the same limbs, G1 2026-12-02)
POLISH_TRIES = (1.0, 0.5, 0.25)  # step lengths tried in turn: the first that lowers the cost and stays out is taken
POLISH_DECREASE = 1e-6  # a step must lower a frame's cost by at least this share of it
POLISH_NEAR_M = 0.005  # frames whose closest pair is within margin + this are polished: where the room binds
POLISH_CLEAR_M = 0.004  # a polished frame keeps its pairs this far beyond the margin (or no closer than
#                         it was), so its gain low-passed in time leaves few frames inside


class _Polish:
    """The close frames (`rows`) of one group: their whole cost, clearance and SQP steps."""

    def __init__(self, problem, separation, x: np.ndarray, shape: np.ndarray, rows: np.ndarray,
                 lower: np.ndarray, upper: np.ndarray, shape_weight: float, lookahead: float):
        self.problem, self.separation, self.shape, self.rows = problem, separation, shape, rows
        self.lookahead = lookahead
        self.q = problem.q[rows].copy()
        self.q[:, problem.columns] = x[rows]
        # the links the group does not move: placed once for the clip where the term keeps them (with_still)
        self.still = None if separation.still is not None else separation.still_poses(self.q, separation.root[rows])
        self.change = shape_weight * problem.metric(self.q, rows)  # what the change from the shape costs
        self.lower, self.upper = lower[rows], upper[rows]

    def kept(self, live: np.ndarray) -> dict:
        """What a look at the live rows takes of the still links: their capsules placed or their poses."""
        if self.still is None:
            return self.separation.kept_on(self.rows[live])
        return {"still": {link: pose[live] for link, pose in self.still.items()}}

    def posed(self, at: np.ndarray, live: np.ndarray) -> np.ndarray:
        q = self.q[live].copy()
        q[:, self.problem.columns] = at
        return q

    def cost(self, at: np.ndarray, live: np.ndarray) -> np.ndarray:
        """(L,) the whole cost of the live rows with the group's joints at `at` (L, V)."""
        d = at - self.shape[self.rows[live]]
        return (0.5 * np.einsum("rv,rvw,rw->r", d, self.change[live], d)
                + self.problem.pull_cost(self.posed(at, live), self.rows[live]))

    def clearance(self, at: np.ndarray, live: np.ndarray, within: float | None = None) -> np.ndarray:
        """(L,) the live rows' least pair distance (m; exact up to margin + lookahead). within: exact only below
        this, beyond a lower bound no less (a step asked only whether it keeps a level: fewer exact pairs)."""
        separation, root = self.separation, self.separation.root[self.rows[live]]
        if within is not None:
            return separation.least(self.posed(at, live), root, within, **self.kept(live))
        dist = separation.distance(self.posed(at, live), root, separation.margin + self.lookahead, **self.kept(live))
        return dist.min(axis=1, initial=np.inf)

    def pairs(self, at: np.ndarray, live: np.ndarray) -> tuple:
        """The live rows' pair entries within margin + lookahead at `at`: (f, dist, grad)."""
        separation, frames = self.separation, self.rows[live]
        f, _, d, g = separation.gradient(self.posed(at, live), separation.root[frames],
                                         separation.margin + self.lookahead, **self.kept(live))
        return f, d, g

    def looked(self, at: np.ndarray, live: np.ndarray) -> tuple:
        """clearance(at, live) and pairs(at, live) from one evaluation (the separation's look), the clearance
        exact below margin + lookahead and inf beyond (no (F, Q) array: descend_room reads it against a lower level)."""
        separation, frames = self.separation, self.rows[live]
        _, (f, _, d, g) = separation.look(self.posed(at, live), separation.root[frames],
                                          separation.margin + self.lookahead, dense=False, **self.kept(live))
        gap = np.full(len(frames), np.inf)
        np.minimum.at(gap, f, d)
        return gap, (f, d, g)

    def model(self, at: np.ndarray, live: np.ndarray, damping: np.ndarray | None = None) -> tuple:
        """((H, H^-1) (L, V, V), wish (L, V)): the whole cost's Gauss-Newton model at `at` (damping
        (L,): that share of its mean diagonal added, Levenberg-Marquardt) and its least's step."""
        frames = self.rows[live]
        matrix, gradient = self.problem.pull(self.posed(at, live), frames)
        metric = self.change[live] + matrix
        if damping is not None:
            scale = damping * np.trace(metric, axis1=1, axis2=2) / metric.shape[1]
            metric = metric + scale[:, None, None] * np.eye(metric.shape[1])
        inverse = spd_inverse(metric)
        wish = -np.einsum("rvw,rw->rv", inverse,
                          np.einsum("rvw,rw->rv", self.change[live], at - self.shape[frames]) + gradient)
        return (metric, inverse), wish

    def step(self, at: np.ndarray, live: np.ndarray, least_change: Callable, radius: float) -> np.ndarray:
        """(L, V) the SQP step of the live rows from `at`: toward the least of the whole cost's
        model there, the pairs linearised there kept POLISH_CLEAR_M beyond the margin."""
        f, d, g = self.pairs(at, live)
        metric, wish = self.model(at, live)
        return least_change(metric, f, d, g, self.separation.margin + POLISH_CLEAR_M, at,
                            self.lower[live], self.upper[live], wish, radius)


def polish_room(problem, separation, x: np.ndarray, shape: np.ndarray, lower: np.ndarray, upper: np.ndarray,
                least_change: Callable, shape_weight: float, lookahead: float, radius: float) -> np.ndarray:
    """x (F, V) with its frames moved from `shape` whose closest pair is within POLISH_NEAR_M of
    the margin taken POLISH_STEPS down their whole cost within [lower, upper] (F, V); each step
    kept only where it lowers that cost and leaves no pair closer than the margin +
    POLISH_CLEAR_M, or than it was. least_change: core.chains.corrections' least change (its
    linearised step, passed in by core.chains.separation, which imports this module)."""
    if all(line is None for line in problem.lines):
        return x
    rows = np.flatnonzero((np.abs(x - shape) > 1e-9).any(axis=1))
    if len(rows) == 0:
        return x
    margin = separation.margin
    q = problem.q[rows].copy()
    q[:, problem.columns] = x[rows]
    gap = separation.distance(q, separation.root[rows], margin + lookahead).min(axis=1, initial=np.inf)
    rows, gap = rows[gap < margin + POLISH_NEAR_M], gap[gap < margin + POLISH_NEAR_M]
    if len(rows) == 0:
        return x
    polish = _Polish(problem, separation, x, shape, rows, lower, upper, shape_weight, lookahead)
    x = x.copy()
    live = np.arange(len(rows))
    now = polish.cost(x[rows], live)
    for _ in range(POLISH_STEPS):
        if len(live) == 0:
            break
        frames = rows[live]
        step = polish.step(x[frames], live, least_change, radius)
        pending, done = np.arange(len(live)), np.zeros(len(live), dtype=bool)
        for length in POLISH_TRIES:  # backtracking: the first length that lowers the cost and stays out
            if len(pending) == 0:
                break
            at = live[pending]
            trial = np.clip(x[rows[at]] + length * step[pending], polish.lower[at], polish.upper[at])
            cost, clear = polish.cost(trial, at), polish.clearance(trial, at)
            ok = (cost < now[at] * (1.0 - POLISH_DECREASE)) & (clear >= np.minimum(margin + POLISH_CLEAR_M, gap[at]))
            x[rows[at[ok]]] = trial[ok]
            polish.q[at[ok][:, None], problem.columns] = trial[ok]
            now[at[ok]], gap[at[ok]] = cost[ok], clear[ok]
            done[pending[ok]] = True
            pending = pending[~ok]
        live = live[done]
    return x


DESCENT_STEPS = 1  # damped SQP steps of descend_room (G1 walk / hop limbs with no clearance: +0.41 / +0.77 deg
#                    for 10 steps, +0.41 / +0.74 for 3, docs/notes/s25-step.md; one since session 33: it meets issue 17's
#                    limbs at a third of the looks)
DESCENT_DAMPING = 0.1  # the first steps' damping, a share of the model's mean diagonal
DESCENT_UP, DESCENT_DOWN = 4.0, 3.0  # the damping's growth where a step failed, its fall where one was kept
DESCENT_GIVE_UP = 1e3  # a row whose damping grew past this is where its descent ends
DESCENT_AIM_M = 0.001  # a step that ended inside is taken back out this far beyond the level (least_change adds its own AIM_M)
DESCENT_CLEAR_M = 0.002  # the descent keeps its pairs this far beyond the margin (or no closer than they were):
#                          its move low-passed in time then leaves no frame inside (0: 0.2-0.3 % of frames, more jerk)


def descend_room(problem, separation, x: np.ndarray, shape: np.ndarray, lower: np.ndarray, upper: np.ndarray,
                 least_change: Callable, shape_weight: float, lookahead: float, radius: float,
                 clear: float | None = None) -> np.ndarray:
    """x (F, V, its frames out of the margin) with each frame moved from `shape` taken down its
    whole cost (as polish_room's) to where it stops falling: Levenberg-Marquardt damped SQP steps
    (the damping grown where a step failed: the undamped model asks for steps the trust region
    cuts, and a cut step is often no descent) whose pairs are linearised to reach the level they keep,
    the margin + clear (default DESCENT_CLEAR_M), plus least_change's own aim (corrections.AIM_M, 1 mm:
    the figures in docs/history/self_collision.md were measured so; the acceptance below reads the
    level itself); a step that ends inside is taken back out (a
    second-order correction: the surface curves away from its tangent); a step is kept only where
    it lowers the cost and leaves no pair closer than that level or than it was. The passes' way
    out and their few whole steps stop at about 1.5 times the cost an exact solve reaches on the
    G1's arms (docs/notes/s25-step.md)."""
    if all(line is None for line in problem.lines):
        return x
    rows = np.flatnonzero((np.abs(x - shape) > 1e-9).any(axis=1))
    if len(rows) == 0:
        return x
    margin = separation.margin + (DESCENT_CLEAR_M if clear is None else clear)
    polish = _Polish(problem, separation, x, shape, rows, lower, upper, shape_weight, lookahead)
    x = x.copy()
    live = np.arange(len(rows))
    now = polish.cost(x[rows], live)
    gap, pairs = polish.looked(x[rows], live)
    floor = np.minimum(margin, gap)
    damping = np.full(len(rows), DESCENT_DAMPING)
    for taken in range(DESCENT_STEPS):
        if len(live) == 0:
            break
        frames = rows[live]
        at = x[frames]
        f, d, g = pairs if taken == 0 else polish.pairs(at, live)  # the first from the floor's look
        metric, wish = polish.model(at, live, damping[live])
        step = least_change(metric, f, d, g, margin, at, polish.lower[live], polish.upper[live], wish, radius)
        trial = np.clip(at + step, polish.lower[live], polish.upper[live])
        cost, gap = polish.cost(trial, live), polish.clearance(trial, live, margin)  # read against floor <= margin
        out = np.flatnonzero(gap < floor[live])
        if len(out):  # back out of the margin from where the step went
            f, d, g = polish.pairs(trial[out], live[out])
            back = least_change((metric[0][out], metric[1][out]), f, d, g, margin + DESCENT_AIM_M, trial[out],
                                polish.lower[live[out]], polish.upper[live[out]], None, radius)
            trial[out] = np.clip(trial[out] + back, polish.lower[live[out]], polish.upper[live[out]])
            cost[out], gap[out] = polish.cost(trial[out], live[out]), polish.clearance(trial[out], live[out], margin)
        ok = (cost < now[live]) & (gap >= floor[live])
        kept = live[ok]
        x[rows[kept]] = trial[ok]
        polish.q[kept[:, None], problem.columns] = trial[ok]
        now[kept] = cost[ok]
        damping[kept] /= DESCENT_DOWN
        damping[live[~ok]] *= DESCENT_UP
        live = live[damping[live] < DESCENT_GIVE_UP]
    return x
