"""Heel-off where the trailing leg needs it, at the control cycle (legs without an ankle roll under the
rolled waist, core.balance.sagittal).

The plan rolls a rear foot onto its toe edge before a long step's lift-off by an angle probed with the
waist over the front foot at its built height (core.balance.rollover); the balanced waist is elsewhere
(lower, further on, rolled), and over the last cycles of a double support the trailing leg of the H1's
walk stood at its ankle's -0.87 rad limit or straight and short of its foot: the foot slid 1-7 mm and
tilted. A person's heel comes up there. So over each double support before a lift-off, the smallest
further roll about the toe edge with which the trailing foot stands is found at every cycle, and the
heel rises smoothly to the largest of them by the lift-off, as late as still covers every cycle's need;
the swing starts from there. The toe edge stays where it stands (the stance slide counts only the
points on the ground).
"""
from __future__ import annotations

import numpy as np

from ..model.transforms import pose_matrices
from .correction import STAND_TOL_M, Corrector
from .foot_path import FootPath
from .legs import pose_errors, solve_legs
from .rollover import Edge

TRAIL_ROLLS_RAD = np.array([0.02, 0.04, 0.07, 0.1, 0.15, 0.2, 0.3, 0.4])  # further rolls tried, smallest first
TRIAL_ITERATIONS = 20
TRAIL_STAND_M = 0.5 * STAND_TOL_M  # a trailing foot this near its goal (and level within half the tolerance) stands


def roll_trailing_feet(corrector: Corrector, q: np.ndarray, root_pos: np.ndarray, paths: dict[int, FootPath],
                       toes: dict[int, Edge], heels: dict[int, Edge]) -> np.ndarray:
    """Roll each foot that cannot stand in the double support before its lift-off onto its toe edge,
    and in the one after its touch-down onto its heel edge (the leading leg reaching: toe up, the
    ankle behind its limit), paths changed in place (the corrector's goals with them); each leg
    solved again where its foot moved, under the waist at root_pos (N, 3): the legs q (N, n) after.
    toes, heels: per foot link its toe edge and its heel edge (rolling by a positive angle about
    either lifts the rest of the foot)."""
    root = pose_matrices(corrector.root_rot, root_pos)
    q = q.copy()
    for leg in corrector.legs:
        path = paths[leg.foot]
        held = np.all([other.down for link, other in paths.items() if link != leg.foot], axis=0) & path.down
        for knots in path.swings:
            lift = int(np.searchsorted(path.times, knots.times[0] + 1e-9)) - 1
            touch = int(np.searchsorted(path.times, knots.times[-1] - 1e-9))
            if 0 < lift and held[lift]:  # heel-off: rising to the lift-off
                before = np.flatnonzero(~held[:lift])
                rows = np.arange(before[-1] + 1 if len(before) else 0, lift + 1)
                if _roll_end(corrector, leg, q, root, path, toes[leg.foot], rows, knots, 0, 1):
                    q[rows[0]:touch + 1] = corrector.legs_under(q[rows[0]:touch + 1], root[rows[0]:touch + 1],
                                                                slice(rows[0], touch + 1))
            if touch < len(q) and held[touch]:  # heel-strike: falling from the touch-down
                after = np.flatnonzero(~held[touch:])
                rows = np.arange(touch, touch + after[0] if len(after) else len(q))[::-1]
                if _roll_end(corrector, leg, q, root, path, heels[leg.foot], rows, knots, -1, -2):
                    q[lift:rows[0] + 1] = corrector.legs_under(q[lift:rows[0] + 1], root[lift:rows[0] + 1],
                                                               slice(lift, rows[0] + 1))
    return q


def _roll_end(corrector: Corrector, leg, q: np.ndarray, root: np.ndarray, path: FootPath, edge: Edge,
              rows: np.ndarray, knots, end: int, next_to: int) -> bool:
    """Roll the foot about edge over rows (the swing's end last) as far as it needs to stand, and the
    swing's knots end (its lift-off or touch-down) and next_to (the straight lift or lowering) with
    it; False where the foot stands as it is."""
    need = _needed_roll(corrector, leg, q, root, path.poses, edge, rows)
    if not need.any():
        return False
    profile = heel_rise(need)
    path.poses[rows] = edge.rolled(path.poses[rows], profile)
    lift_m = knots.poses[next_to, 2, 3] - knots.poses[end, 2, 3]
    knots.poses[end] = path.poses[rows[-1]]
    knots.poses[next_to] = path.poses[rows[-1]]
    knots.poses[next_to, 2, 3] += lift_m  # the straight lift (lowering), from the edge
    path.refresh([knots])
    return True


def _needed_roll(corrector: Corrector, leg, q: np.ndarray, root: np.ndarray, poses: np.ndarray, edge: Edge,
                 rows: np.ndarray) -> np.ndarray:
    """(len(rows),) the smallest further roll about the toe edge (TRAIL_ROLLS_RAD) with which the
    foot stands at each of rows, 0 where it stands as it is or where none does (a hip off the foot's plane
    rolls the foot about its long axis, which no roll about an edge mends: rolled to the largest there, the
    H1 walk's landings stood on their heels 20 degrees up, 42 mm off)."""
    stands = _stands(corrector, leg, q[rows], root[rows], poses[rows])
    if stands.all():
        return np.zeros(len(rows))
    bad = rows[~stands]
    count = len(TRAIL_ROLLS_RAD)
    at = np.repeat(bad, count)
    angles = np.tile(TRAIL_ROLLS_RAD, len(bad))
    goals = edge.rolled(poses[at], angles)
    solved, _ = solve_legs(corrector.tree, [leg], q[at], root[at], {leg.foot: goals},
                           corrector.rest[at], {leg.foot: np.zeros(len(at))}, TRIAL_ITERATIONS, period_s=None)
    ok = _stands(corrector, leg, solved, root[at], goals).reshape(len(bad), count)
    need = np.zeros(len(rows))
    need[~stands] = np.where(ok.any(axis=1), TRAIL_ROLLS_RAD[np.argmax(ok, axis=1)], 0.0)
    return need


def _stands(corrector: Corrector, leg, q: np.ndarray, root: np.ndarray, goals: np.ndarray) -> np.ndarray:
    """(F,) True where the leg's foot is at its goal: the sole's point the leg is solved at
    (core.balance.planar_leg.standing_legs; the ankle measured, the foot's roll about that point of up
    to a degree moved it 0.9 mm) within TRAIL_STAND_M, tilted under half the level tolerance."""
    _, tilt, _ = pose_errors(corrector.tree, [leg], q, root, {leg.foot: goals})
    sole = np.zeros(3) if leg.sole is None else leg.sole
    pose = corrector.tree.link_transform(q, leg.foot, root)
    miss = np.linalg.norm(pose[:, :3, :3] @ sole + pose[:, :3, 3] - (goals[:, :3, :3] @ sole + goals[:, :3, 3]), axis=1)
    return (miss < TRAIL_STAND_M) & (tilt < 0.5 * corrector.level_tol)


def heel_rise(need: np.ndarray) -> np.ndarray:
    """A heel-off angle (F,) rising smoothly from 0 to need's largest at the last sample, starting as
    late as keeps it at or above need (F,) everywhere (from the first sample where none does).
    Rising no faster than 2 rad/s instead, and held from the first sample needing the most, it began
    earlier: the H1 walk's worst margin went from +5.6 to -7.5 mm (0.12 % of samples outside)."""
    top, count = float(need.max()), len(need)
    for first in range(int(np.flatnonzero(need)[0]), -1, -1):
        s = np.clip((np.arange(count) - first + 1) / (count - first), 0.0, 1.0)
        rise = top * s * s * (3.0 - 2.0 * s)
        if (rise >= need - 1e-9).all():
            break
    return rise
