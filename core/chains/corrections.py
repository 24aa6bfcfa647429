"""A group's close frames moved out of the margin by linearised corrections (core.chains.separation's
passes hand them over): at the chain's answer the shape's Gauss-Newton matrix H says what a joint
change costs, each close pair's distance gradient g what it buys; per frame the small problem
min 1/2 dx' H dx subject to d + g dx >= margin (a few pairs) is solved on its dual, batched over
frames (_least_change), and taken again from where it lands until the pairs are out. Once out, a
limb's frames take a few more steps toward the least of their whole change plus the distance of
its line from the actor's, kept only where they lower that cost (_Corrections).
"""
from __future__ import annotations

import numpy as np

from .batched import spd_inverse
from .dual import dual_step, exact_step
from .switches import SLACK_SCALE

STEP_RAD = 0.35  # one correction turns no joint further (the linearisation's trust region)
PAIRS_PER_FRAME = 6  # the closest pairs of a frame that constrain its correction
LOOKAHEAD_M = 0.01  # pairs this far beyond the margin are kept from closing in by the correction
TOLERANCE_M = 0.001  # a frame is done when its pairs are this close to the margin
AIM_M = 0.001  # a correction aims this far beyond the margin: the linearisation falls a little short
DUAL_SWEEPS = 24  # Gauss-Seidel sweeps over a frame's pairs for the multipliers
WHOLE_STEPS = 1  # steps of a limb's whole change once out of reach (docs/history/self_collision.md: G1 walk limbs +1.30 -> +0.80 deg
#                 for 2; 1 since session 33: the descended polish after takes the limb down its whole cost, G1 hop limbs
#                 +0.04 deg, jerk lower, 0.13 G instructions fewer)
WHOLE_SHAPE_WEIGHT = 0.03  # a limb's change of shape costs this share in its whole change: a viewer reads the line
#                            (docs/history/self_collision.md: G1 limbs +0.81 / +1.21 -> +0.56 / +1.04 deg with whole steps kept only where cheaper)
WHOLE_OUT_STEPS = 6  # corrections out of reach again after the whole steps: a row they do not bring out is put back
#                     where it was before the whole steps (_keep_cheaper), as after ten; the 7th to 10th moved 1-3 rows
#                     a call, centimetres deep at the trust region (session 28, 10 before: G1 walk / hop 2 calls fewer)
WHOLE_TOLERANCE_RAD = 0.01  # a frame whose whole change wishes no joint further than this is left where it is
HOLD_AT_BOUND = False  # True: a joint a step would carry out of its range is held at its bound wherever it is: each
#                        step the exact least change within the range, every pair within reach (continuous in the
#                        input: the same motion written otherwise makes the same room, docs/history/self_collision.md,
#                        docs/notes/s26-smooth.md);
#                        False: the greedy step, its joints at a bound as HELD_ON_BOUND says
HELD_ON_BOUND = True  # with HOLD_AT_BOUND False: a joint the free step carries out of its range is held on that bound
#                       (wherever it stood) and the others solved again, so a step that just reaches a bound is its own
#                       answer: no jump where it crosses; False: only a joint already on its bound is held, another
#                       is cut at it, a threshold inputs 1e-3 rad apart fall either side of (the G1
#                       walk ended 9 frames earlier: 0.012 rad on a shoulder; docs/history/self_collision.md, session 32)
WHOLE_DAMPING = 0.3  # a whole step's metric plus this times the identity: a proximal pull toward where it starts. The
#                     whole cost is flat along a wrist and the swivel (least eigenvalues 5e-4 to 0.015 against ~20), so a
#                     slope changed by the input's noise moved the step's answer up to 2,000x as far; damped, at most 3x
#                     (G1 hop at +-5e-4 rad input noise: 0.39 -> 0.12 rad alone; limbs 1.65 -> 1.60 deg; session 33)
WHOLE_KEPT_BY_COST = False  # True: a row its whole steps left costlier (linearised, they need not descend) is put back
#                            where it was; a threshold inputs 5e-4 rad apart fall either side of (the G1 walk: 0.15 rad on a
#                            shoulder). Damped, the steps leave limbs the same without it (G1 1.598 / 1.819 deg either way)
SOFT_RANK_SLOPE = 3.0  # a pair ranked past the (PAIRS_PER_FRAME - 1)-th asks this times its distance beyond that pair's less:
#                        two pairs that swap rank at one distance ask the same (the 6th and 7th of the G1 hop's hand deep in
#                        the trunk, 0.04 mm apart, moved the step 0.46 rad); 0: the hard rank
SOFT_RANK_EXTRA = 2  # pairs kept past PAIRS_PER_FRAME with the soft rank (asking less: rarely binding)
EXACT_FROM_HELD = 2  # a frame whose free step carries this many joints (or more) out of their range is solved exactly
#                      (core.chains.dual.exact_step): holding them all at their bounds at once jumps where the set
#                      changes (one joint alone is continuous: HELD_ON_BOUND); 0: never
HELD_WEIGHT = 1e6  # a held joint's change from its bound costs this much (the metric's entries are about 1)


class _Corrections:
    """Linearised corrections of one group's close frames (`rows`), in place on q and out."""

    def __init__(self, separation, q, cols, rows, metric, lower, upper, steps: int, shape: tuple | None = None):
        self.separation, self.q, self.cols, self.rows = separation, q, cols, rows
        self.lower, self.upper, self.steps = lower, upper, steps
        self.still = separation.still_on(rows)  # links no step moves: once
        if self.still is None:
            self.still = separation.still_poses(q[rows], separation.root[rows])
        self.placed = separation.placed(self.still, len(rows))  # their capsules in the world: once
        # (group, its columns before any room was made (R, V)): a limb's whole change is made least (a pass
        # of the full count of steps hands it: core.chains.separation.LINEAR_STEPS)
        self.group, self.shape = shape if shape is not None else (None, None)
        self.whole = self.group is not None and any(line is not None for line in self.group.lines)
        self.change_metric = metric  # what the change from the shape costs
        # a step out also charges moving the line away from the actor's (PULL_WEIGHT), as at the start
        self.metric = metric + self.group.pull(q[rows], rows)[0] if self.whole else metric
        self.inverse = spd_inverse(self.metric)  # once, for every step
        self.clear_at = np.full((len(rows), len(cols)), np.nan)  # where each row was last seen clear of the margin
        self.radius = np.full(len(rows), STEP_RAD)  # each row's trust region for its whole steps: halved where they failed
        # each row's last looked-at entries (row r, pair p, distance, gradient) and where it was then:
        # a row a step found out of reach is still there for the whole step after it
        self._seen_at = np.full((len(rows), len(cols)), np.nan)
        self._seen = (np.zeros(0, dtype=int), np.zeros(0, dtype=int), np.zeros(0), np.zeros((0, len(cols))))

    def out_of_reach(self, out: np.ndarray, live: np.ndarray | None = None, known: tuple | None = None) -> None:
        """Up to `steps` corrections of the rows (`live`, default all) still inside the margin,
        each from where the last landed (known: the first one's gradient entries, see step); on a limb
        then WHOLE_STEPS toward its least whole change (_whole_step) and out of reach again from there
        (up to WHOLE_OUT_STEPS corrections)."""
        live = np.arange(len(self.rows)) if live is None else live
        every = live
        for _ in range(self.steps):
            live, known = self.step(out, live, known=known), None
            if len(live) == 0:
                break
        if not self.whole:
            return
        kept = self._whole_state(out, every, live)
        moved, live = [], every
        for _ in range(WHOLE_STEPS):
            live = self._whole_step(out, live)
            moved.append(live)
        live = np.unique(np.concatenate(moved))  # out of reach again from where they went
        for _ in range(min(self.steps, WHOLE_OUT_STEPS)):
            if len(live) == 0:
                break
            live = self.step(out, live)
        self._keep_cheaper(out, every, kept, live)

    def _whole_state(self, out: np.ndarray, live: np.ndarray, inside: np.ndarray) -> tuple:
        """(joints (L, V), whole cost (L,), inside (L,) bool) of the live rows where they are;
        inside: the rows a way out left inside (moved since it last looked: not known to be out)."""
        rows = self.rows[live]
        change = out[rows] - self.shape[live]
        cost = 0.5 * np.einsum("rv,rvw,rw->r", change, WHOLE_SHAPE_WEIGHT * self.change_metric[live], change)
        cost += self.group.pull_cost(self.q[rows], rows)
        return out[rows].copy(), cost, np.isin(live, inside)

    def whole_cost(self, out: np.ndarray, live: np.ndarray) -> np.ndarray:
        """(L,) the live rows' whole cost where they are (_whole_state)."""
        return self._whole_state(out, live, live[:0])[1]

    def _keep_cheaper(self, out: np.ndarray, live: np.ndarray, kept: tuple, inside: np.ndarray) -> None:
        """The live rows whose whole steps left them costlier than before (kept: _whole_state
        there), or inside where they were out, put back and their trust region halved: linearised,
        the steps and the ways out after them are no descent of the whole cost (the G1's wrist
        roll swings 0.35 rad across a bound and back; four or eight steps cost the walk's left arm
        more than two)."""
        joints, cost, was_inside = kept
        _, now, now_inside = self._whole_state(out, live, inside)
        costlier = (now_inside == was_inside) & (now > cost) if WHOLE_KEPT_BY_COST else False
        back = live[(now_inside & ~was_inside) | costlier]
        self.radius[back] *= 0.5
        out[self.rows[back]] = joints[np.isin(live, back)]
        self.q[self.rows[back][:, None], self.cols] = out[self.rows[back]]

    def _look(self, out: np.ndarray, live: np.ndarray) -> tuple:
        """The live rows' gradient entries (f into live, p, dist, grad) where they are: looked up
        for rows looked at there before, evaluated for the others (and kept)."""
        seen = (out[self.rows[live]] == self._seen_at[live]).all(axis=1)
        new = live[~seen]
        if len(new):
            separation, frames = self.separation, self.rows[new]
            f, p, dist, grad = separation.gradient(self.q[frames], separation.root[frames],
                                                   separation.margin + LOOKAHEAD_M, placed=self.placed.on(new))
            redone = np.zeros(len(self.rows), dtype=bool)  # a mask, not np.isin: no sort per step
            redone[new] = True
            old = ~redone[self._seen[0]]
            self._seen = tuple(np.concatenate([a[old], b]) for a, b in zip(self._seen, (new[f], p, dist, grad)))
            self._seen_at[new] = out[frames]
        where = np.full(len(self.rows), -1)
        where[live] = np.arange(len(live))
        at = where[self._seen[0]]
        pick = at >= 0
        return (at[pick],) + tuple(a[pick] for a in self._seen[1:])

    def _whole_step(self, out: np.ndarray, live: np.ndarray) -> np.ndarray:
        """One step of the `live` rows toward the least of their whole change from the shape (its
        metric, at WHOLE_SHAPE_WEIGHT) plus PULL_WEIGHT times the limb line's squared distance from the actor's, the pairs
        linearised where they are (sequential quadratic programming). Each correction alone is the
        least step out, and a path of least steps is not the least change: its sum turned the G1's
        shoulder where a bent elbow and a turned hand cost the line less. Line and pull are taken
        again where the limb is (a bend of 0.5 rad is far from linear). The rows moved: those whose
        wished change exceeds WHOLE_TOLERANCE_RAD (the others are where they would go)."""
        rows = self.rows[live]
        matrix, gradient = self.group.pull(self.q[rows], rows)
        change = WHOLE_SHAPE_WEIGHT * self.change_metric[live]
        metric = change + matrix
        slope = np.einsum("rvw,rw->rv", change, out[rows] - self.shape[live]) + gradient
        inverse = spd_inverse(metric)
        wished = -np.einsum("rvw,rw->rv", inverse, slope)
        far = np.abs(wished).max(axis=1) > WHOLE_TOLERANCE_RAD  # undamped: damped, fewer rows pass (H1 walk +0.02 deg)
        if WHOLE_DAMPING:
            metric = metric + WHOLE_DAMPING * np.eye(metric.shape[1])
            inverse = spd_inverse(metric)
            wished = -np.einsum("rvw,rw->rv", inverse, slope)
        if far.any():
            self.step(out, live[far], wished[far], metric=(metric[far], inverse[far]), radius=self.radius[live[far]])
        return live[far]

    def step(self, out: np.ndarray, live: np.ndarray, toward: np.ndarray | None = None,
             known: tuple | None = None, metric: tuple | None = None, radius: np.ndarray | None = None) -> np.ndarray:
        """One correction of the `live` rows (toward (L, V): the change wished for besides, all of
        them moved; else only those inside; metric: (H, H^-1) of those rows instead of the shape's);
        the rows that were inside. known: the live rows' gradient entries (f, p, dist, grad) where
        they are, already evaluated."""
        margin, frames = self.separation.margin, self.rows[live]
        f, p, dist, grad = known if known is not None else self._look(out, live)
        inside, near = np.zeros(len(live), dtype=bool), np.zeros(len(live), dtype=bool)
        inside[f[dist < margin - TOLERANCE_M]] = True
        near[f[dist < margin]] = True
        self.clear_at[live] = np.where(near[:, None], np.nan, out[frames])
        moved = np.ones(len(live), dtype=bool) if toward is not None else inside
        if not moved.any():
            return live[inside]
        keep = moved[f]
        renumber = np.cumsum(moved) - 1
        at, f, dist, grad = live[moved], renumber[f[keep]], dist[keep], grad[keep]
        rows = self.rows[at]
        metric = (self.metric[at], self.inverse[at]) if metric is None else (metric[0][moved], metric[1][moved])
        step = _least_change(metric, f, dist, grad, margin, out[rows], self.lower[at],
                             self.upper[at], None if toward is None else toward[moved],
                             STEP_RAD if radius is None else radius[moved][:, None])
        out[rows] = np.clip(out[rows] + step, self.lower[at], self.upper[at])
        self.q[rows[:, None], self.cols] = out[rows]
        return live[inside]


def _least_change(metric: tuple, f: np.ndarray, dist: np.ndarray, grad: np.ndarray, margin: float,
                  x: np.ndarray, lower: np.ndarray, upper: np.ndarray, toward: np.ndarray | None = None,
                  radius: float | np.ndarray = STEP_RAD) -> np.ndarray:
    """Per frame, the joint change dx (R, V) of least 1/2 (dx - t)' H (dx - t) with d + g dx >= margin
    (metric: H (R, V, V) and its inverse)
    for its PAIRS_PER_FRAME closest pairs (entries: frame f (K,), distance (K,), gradient (K, V);
    t: `toward`, default none), joints the free step carries past a bound held on it (HELD_ON_BOUND; False:
    only those already on it) and those frames solved again,
    no joint turned further than STEP_RAD. With HOLD_AT_BOUND, every pair and the range solved exactly
    (core.chains.dual.exact_step): a joint held on its bound and the others solved again from where they
    were met the free answer only where H is diagonal (the G1 walk's shoulder yaw reaching its bound moved
    the room 0.16 rad between inputs 1e-15 apart), and sweeps stopped short move with the pairs' order."""
    need, g = _pair_rows(f, dist, grad, margin, x.shape)
    toward = np.zeros(x.shape) if toward is None else toward
    need = need - np.einsum("rkv,rv->rk", g, toward)  # what is left to open beyond the wished change
    metric, inverse = metric
    if HOLD_AT_BOUND:  # the least change within the range, exactly: a joint that would cross ends on its bound
        step = toward + exact_step(metric, inverse, g, need, lower - x - toward, upper - x - toward, SLACK_SCALE,
                                   DUAL_SWEEPS)
    else:
        step = toward + _dual_step(inverse, g, need)
        below, above = x + step < lower, x + step > upper  # joints the free step carries out of their range
        if not HELD_ON_BOUND:  # only joints on their bound are held: one 3e-6 rad short is cut there instead
            below, above = below & (x <= lower + 1e-9), above & (x >= upper - 1e-9)
        again = np.flatnonzero((below | above).any(axis=1))  # once more where a joint would leave its range
        exact = again[(below | above)[again].sum(axis=1) >= EXACT_FROM_HELD] if EXACT_FROM_HELD else again[:0]
        if len(exact):  # several joints out: the least change within the range, exactly
            step[exact] = toward[exact] + exact_step(metric[exact], inverse[exact], g[exact], need[exact],
                                                     (lower - x - toward)[exact], (upper - x - toward)[exact],
                                                     SLACK_SCALE, DUAL_SWEEPS)
            again = np.setdiff1d(again, exact)
        if len(again):
            # a held joint's move to its bound (0 elsewhere, where a bound may be infinite)
            to_bound = np.where(below, lower, np.where(above, upper, x + toward)) - x - toward if HELD_ON_BOUND \
                else np.zeros(x.shape)
            step[again] = toward[again] + _held(metric[again], g[again], need[again], (below | above)[again],
                                                to_bound[again])
    largest = np.abs(step).max(axis=1, keepdims=True)
    return step * np.minimum(1.0, radius / np.maximum(largest, 1e-12))


def _pair_rows(f: np.ndarray, dist: np.ndarray, grad: np.ndarray, margin: float, shape: tuple) -> tuple:
    """(need (R, K), g (R, K, V)) of each frame's closest pairs (entries: frame f (K,), distance (K,), gradient
    (K, V)), closest first; a frame with fewer pairs asks nothing of the rest (need -1). HOLD_AT_BOUND: every
    pair; else PAIRS_PER_FRAME, and with SOFT_RANK_SLOPE SOFT_RANK_EXTRA more, each past the
    (PAIRS_PER_FRAME - 1)-th asking SLOPE times its distance beyond that pair's less (continuous where two swap)."""
    order = np.lexsort((dist, f))  # by frame, closest first
    f, dist, grad = f[order], dist[order], grad[order]
    rank = np.arange(len(f)) - np.searchsorted(f, f)
    soft = SOFT_RANK_SLOPE > 0.0 and not HOLD_AT_BOUND
    most = len(f) if HOLD_AT_BOUND else PAIRS_PER_FRAME + (SOFT_RANK_EXTRA if soft else 0)  # held: every pair
    keep = rank < most
    width = min(most, int(rank.max(initial=0)) + 1)  # no frame has more: the dual sweeps no empty column
    need = np.full((shape[0], width), -1.0)  # no pair: no constraint
    g = np.zeros((shape[0], width, shape[1]))
    ask = margin + AIM_M - dist
    if soft:
        ranked = np.full(shape[0], np.inf)  # each frame's (PAIRS_PER_FRAME - 1)-th distance
        at = rank == PAIRS_PER_FRAME - 2
        ranked[f[at]] = dist[at]
        ask = ask - SOFT_RANK_SLOPE * np.maximum(0.0, dist - ranked[f])
    need[f[keep], rank[keep]], g[f[keep], rank[keep]] = ask[keep], grad[keep]
    return need, g


def _held(metric: np.ndarray, g: np.ndarray, need: np.ndarray, held: np.ndarray, to_bound: np.ndarray) -> np.ndarray:
    """The step (R, V, beyond the wished change) with the joints `held` (R, V) moved to_bound (R, V) and held there
    (at HELD_WEIGHT), the others solved again for the pairs (metric H (R, V, V), g, need as _least_change's)."""
    held = np.where(held, HELD_WEIGHT, 0.0)
    h = metric + held[:, :, None] * np.eye(metric.shape[1])
    inverse = spd_inverse(h)
    toward = np.einsum("rvw,rw->rv", inverse, held * to_bound)  # the quadratic's least: the held joints on their bound
    return toward + _dual_step(inverse, g, need - np.einsum("rkv,rv->rk", g, toward))


def _dual_step(inverse: np.ndarray, g: np.ndarray, need: np.ndarray) -> np.ndarray:
    """dx = H^-1 g' lambda with lambda >= 0 solving the dual of min 1/2 dx' H dx, g dx >= need
    (H^-1: `inverse`), DUAL_SWEEPS projected Gauss-Seidel sweeps over each frame's few pairs
    (core.chains.dual)."""
    return dual_step(inverse, g, need, DUAL_SWEEPS)
