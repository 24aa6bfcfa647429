"""Legs that put each foot where a gait wants it: a 6D foot pose per sample, all samples at once.

A leg is the joints between the body and a foot that no other foot shares (a waist joint
above both hips is the upper body's). The solve is projected Levenberg-Marquardt on the
foot's position and rotation error in the world. Where a leg has fewer than six joints
(no ankle roll), the foot keeps its place and stays level first and gives in on its
heading: a level sole is what keeps the support polygon whole.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..model.kinematics import REVOLUTE, KinematicTree
from ..model.same_bits import same_bits
from .leg_chain import Link, frames_last, link_walk, rotvec, stacked_walk
from .leg_solve import levenberg_marquardt

FULL_LEG = 6  # joints a leg needs to meet any foot pose from any pelvis (else it has no ankle roll)
TILT_WEIGHT_M = 0.2  # a radian of sole tilt weighs like 20 cm of foot position
YAW_WEIGHT_M = 0.02  # a radian of heading weighs like 2 cm: the first thing a 5-joint leg gives up


@dataclass
class LegIK:
    """One leg: its foot link, the link the leg hangs from, and its own joints in order."""

    foot: int
    base: int  # the link above the leg's first joint (the pelvis)
    links: list[int]  # links from below `base` down to the foot, each with its joint
    columns: np.ndarray  # q columns of the leg's movable joints, in `links` order
    hip: int  # the first jointed link: its origin is the hip, which no leg joint moves
    lower: np.ndarray | None = None  # (J,) the range the gait uses of each leg joint
    upper: np.ndarray | None = None
    revolute: np.ndarray | None = None  # (J,) which of the leg's joints turn (else slide)
    twist: int = -1  # index in `columns` of the hip's vertical joint, -1 without one
    twist_sign: float = 1.0  # +1 when it turns the foot counter-clockwise seen from above
    flat: np.ndarray | None = None  # (3, 3) the foot's rotation in the base's frame standing level
    knee: int = -1  # q column of the joint that shortens the leg most (its knee)
    branching: np.ndarray | None = None  # (J,) the joints whose far turn may mean another branch
    bend: float = 0.0  # a knee angle that is well bent, inside its limits (radians)
    walk: list | None = None  # the links as core.balance.leg_chain walks them, built on first use
    yaw_weight_m: float | None = None  # a radian of the foot's heading weighs like this; None: YAW_WEIGHT_M for
    #                                    legs of five joints (the whole pose's TILT_WEIGHT_M for six)
    sole: np.ndarray | None = None  # (3,) where the foot's place is measured, in its frame (None: its origin, the
    #                                 ankle); a point of the sole: a foot the leg cannot meet tilts about it, no slide
    roll_axis: np.ndarray | None = None  # (3,) the foot's long axis in its frame, and how a radian of a standing foot's
    roll_weight_m: float | None = None  # roll about it weighs (None: as any tilt, TILT_WEIGHT_M)
    neutral: np.ndarray | None = None  # (n,) the robot as built, its legs standing straight (core.retarget.neutral.
    #                                    neutral_legs; None: the zero pose), from which the knee bends

    def built(self, dof: int) -> np.ndarray:
        """(dof,) the joints as built: neutral, or the zero pose where none is given."""
        return np.zeros(dof) if self.neutral is None else self.neutral

    @property
    def straight_knee(self) -> float:
        """The knee's angle with the leg standing straight (radians)."""
        return 0.0 if self.neutral is None else float(self.neutral[self.knee])

    @classmethod
    def build(cls, tree: KinematicTree, foot: int, other_feet: list[int],
              standing: np.ndarray | None = None, neutral: np.ndarray | None = None) -> "LegIK":
        """standing: the foot's world rotation standing level with the robot upright (its pose as built
        by default); neutral: the LegIK's field."""
        shared = set()
        for other in other_feet:
            link = other
            while link >= 0:
                shared.add(link)
                link = int(tree.parent[link])
        path = []
        link = foot
        while link >= 0 and link not in shared:
            path.append(link)
            link = int(tree.parent[link])
        path.reverse()
        if link < 0 or not path:
            raise ValueError(f"foot {tree.link_names[foot]!r} shares every joint with another foot")
        jointed = [i for i in path if tree.qindex[i] >= 0]
        if not jointed:
            raise ValueError(f"foot {tree.link_names[foot]!r} has no joint of its own to move it")
        leg = cls(foot, link, path, np.array([tree.qindex[i] for i in jointed]), jointed[0], neutral=neutral)
        leg.revolute = tree.kind[jointed] == REVOLUTE
        leg.knee, leg.bend = _knee(tree, leg)
        leg.branching = leg.columns != leg.knee  # how far a knee bends is no choice of branch
        leg.lower, leg.upper = tree.lower[leg.columns].copy(), tree.upper[leg.columns].copy()
        zero = built_pose(tree, neutral)
        upright = np.array([abs((zero[link, :3, :3] @ tree.axes[link])[2]) for link in jointed])
        if upright.max() > 0.7:  # the hip's most vertical joint turns the foot
            k = int(np.argmax(upright))
            leg.twist, leg.twist_sign = k, float(np.sign((zero[jointed[k], :3, :3] @ tree.axes[jointed[k]])[2]))
        standing = zero[foot, :3, :3] if standing is None else standing
        leg.flat = standing @ zero[leg.base, :3, :3].T  # the foot level under a level base
        return leg


KNEE_BEND_RAD = 0.6
TWIST_SLACK_RAD = np.radians(20.0)  # the hip's vertical joint stays this close to the foot's turn


def built_pose(tree: KinematicTree, neutral: np.ndarray | None) -> np.ndarray:
    """(L, 4, 4) link transforms with the joints at neutral (n,) and the root at the origin: the robot
    as built, its legs standing straight (the zero pose, to the bit, where neutral is None or zero)."""
    if neutral is None or not np.any(neutral):
        return tree.zero_pose()
    return tree.forward(neutral[None])[0]


def _knee(tree: KinematicTree, leg: LegIK) -> tuple[int, float]:
    """The column and bent angle of the joint that brings the foot closest to the hip when it
    turns KNEE_BEND_RAD (either way, inside its limits) from the leg standing straight: the leg's knee."""
    best = (np.inf, -1, 0.0)
    built = leg.built(tree.dof)
    for col in leg.columns:
        for angle in (-KNEE_BEND_RAD, KNEE_BEND_RAD):
            q = built[None].copy()
            q[0, col] = np.clip(built[col] + angle, tree.lower[col], tree.upper[col])
            poses = tree.poses(q, None, [leg.hip, leg.foot])
            distance = float(np.linalg.norm(poses[leg.foot][0, :3, 3] - poses[leg.hip][0, :3, 3]))
            best = min(best, (distance, int(col), float(q[0, col])))
    return best[1], best[2]


def leg_iks(tree: KinematicTree, feet: list[int], standing: dict[int, np.ndarray] | None = None,
            neutral: np.ndarray | None = None) -> list[LegIK]:
    """A LegIK per foot; standing: each foot's level rotation (core.balance.support.standing_rotation);
    neutral: the robot as built (LegIK.neutral)."""
    return [LegIK.build(tree, foot, [f for f in feet if f != foot], (standing or {}).get(foot), neutral)
            for foot in feet]


def _walk(tree: KinematicTree, leg: LegIK) -> list[Link]:
    """The leg's walk (core.balance.leg_chain), built on first use."""
    if leg.walk is None:
        leg.walk = link_walk(tree, leg.links) + ([] if leg.sole is None else [Link(leg.sole.copy(), None, None)])
    return leg.walk


def _pose_weights(weights: np.ndarray, prior: np.ndarray) -> np.ndarray:
    """Per-sample weights (F, 6) of the pose error: a swing foot (prior above the stance's) cares
    less how it is turned, its place and a leg that moves smoothly first."""
    swing = np.clip((prior - STANCE_PRIOR_M) / (SWING_PRIOR_M - STANCE_PRIOR_M), 0.0, 1.0)
    w = np.repeat(weights[None, :], len(prior), axis=0)
    w[:, 3:] *= (1.0 - (1.0 - SWING_TURN_SHARE) * swing)[:, None]
    return w


def solve_legs(tree: KinematicTree, legs: list[LegIK], q: np.ndarray, root: np.ndarray, goals: dict[int, np.ndarray],
               rest: np.ndarray | None = None, air: dict[int, np.ndarray] | None = None,
               iterations: int = 20, quick: bool = False,
               period_s: float | None = 0.005) -> tuple[np.ndarray, dict[int, np.ndarray]]:
    """q (F, n) with every leg's joints moved so its foot meets goals[foot] (F, 4, 4), inside
    joint limits, starting from q; and each foot's remaining position error (F,), metres.

    Samples that still miss, or whose leg has wandered far from `rest` (F, n) (another branch
    of the leg's solutions: a hip rolled half a turn), start again from `rest`: a knee stopped
    straight against its limit cannot bend out of it, the error has no gradient there. A foot in
    the air leans on `rest` a little (air[foot] (F,): 0 on the ground to 1 in the air, ramping
    between), so a leg that cannot reach its goal stays near the person's posture instead of
    jumping between branches. quick: one solve from q, no restarts (a probe of many trials).
    period_s: the time between samples, which tells a jump from a fast move; None when the
    samples are no motion (a probe's trials), which need not join up."""
    q = q.copy()
    rest = q if rest is None else rest
    misses = {}
    problems, shares = [], []
    for leg in legs:
        base = tree.link_transform(q, leg.base, root)  # the pelvis: no leg joint moves it
        goal = goals[leg.foot] if leg.sole is None else at_sole(goals[leg.foot], leg.sole)
        share = np.asarray(air[leg.foot], float) if air is not None else np.zeros(len(q))
        prior = STANCE_PRIOR_M + (SWING_PRIOR_M - STANCE_PRIOR_M) * share
        problems.append((leg, base, goal, q[:, leg.columns], rest[:, leg.columns], prior, _bounds(leg, base, goal)))
        shares.append(share)
    solved = _solve_together(tree, problems, iterations, QUICK_GAIN_TOL if quick else None)
    if quick:
        for (leg, *_), (x, err) in zip(problems, solved):
            q[:, leg.columns] = x
            misses[leg.foot] = np.linalg.norm(err[:, :3], axis=1)
        return q, misses
    restarts = [_restart(problem, x, err, share, rest) for problem, (x, err), share in zip(problems, solved, shares)]
    redone = _solve_together(tree, [r[2] for r in restarts if len(r[0])], 2 * iterations)
    for (leg, base, goal, _, leg_rest, prior, bounds), (x, err), (again, wander, _) in zip(problems, solved, restarts):
        if len(again):
            y, y_err = redone.pop(0)
            cost, y_cost = (err[again] ** 2).sum(1), (y_err ** 2).sum(1)
            nearer = np.abs(y - leg_rest[again])[:, leg.branching].max(axis=1) < wander[again]
            take = (y_cost < cost - 1e-12) | ((y_cost <= np.maximum(cost, RESTART_TOL ** 2)) & nearer)
            x[again[take]], err[again[take]] = y[take], y_err[take]
    if period_s is not None:
        _continuous(tree, [(leg, base, goal, x, err, leg_rest, prior, bounds)
                           for (leg, base, goal, _, leg_rest, prior, bounds), (x, err) in zip(problems, solved)],
                    iterations, JUMP_RAD_S * period_s)
    for (leg, *_), (x, err) in zip(problems, solved):
        q[:, leg.columns] = x
        misses[leg.foot] = np.linalg.norm(err[:, :3], axis=1)
    return q, misses


def _restart(problem: tuple, x: np.ndarray, err: np.ndarray, share: np.ndarray, rest: np.ndarray) -> tuple:
    """(again, wander, the restart's problem) of one leg solved to x (F, J) with error err: the samples that still
    miss on the ground (a swing foot may miss) or whose leg wandered more than WANDER_RAD from its rest, started
    again from `rest` (F, n), a knee bent at least as far as a bent knee (out of the straight leg's dead spot)."""
    leg, base, goal, _, leg_rest, prior, bounds = problem
    wander = np.abs(x - leg_rest)[:, leg.branching].max(axis=1)
    missing = (np.abs(err[:, :6]) > RESTART_TOL).any(axis=1) & (share < 0.5)
    again = np.flatnonzero(missing | (wander > WANDER_RAD))
    start = rest[again].copy()
    if leg.knee >= 0:
        straight = leg.straight_knee
        bent = np.abs(start[:, leg.knee] - straight) < abs(leg.bend - straight)
        start[bent, leg.knee] = leg.bend
    # the cost a restart must come to (solve_legs takes it only below); a wanderer's restart runs to the end: it
    # comes back to about its rival's cost, and a race would stop it on a rounding (the H1 walk's float32 start
    # 1.9 mm away)
    raced = missing[again] | RACE_WANDERERS
    beat = np.where(raced, np.maximum((err[again] ** 2).sum(1), RESTART_TOL ** 2), np.inf)
    return again, wander, (leg, base[again], goal[again], start[:, leg.columns], leg_rest[again], prior[again],
                           (bounds[0][again], bounds[1][again]), beat)


def _solve_together(tree: KinematicTree, problems: list[tuple], iterations: int,
                    gain_tol: float | None = None) -> list[tuple[np.ndarray, np.ndarray]]:
    """_solve_leg of each problem (leg, base, goal, start, rest, prior, bounds[, beat]); legs built
    alike (a left and a right leg) as one batch: a solve's cost is mostly per call, not per sample."""
    counts = [len(p[1]) for p in problems]
    walk = stacked_walk([_walk(tree, p[0]) for p in problems], counts) if len(problems) > 1 else None
    if walk is None:
        return [_solve_leg(tree, *p[:6], iterations, p[6], beat=p[7] if len(p) > 7 else None, gain_tol=gain_tol)
                for p in problems]
    joined = [np.concatenate([p[k] for p in problems]) for k in range(1, 6)]
    bounds = tuple(np.concatenate([p[6][k] for p in problems]) for k in range(2))
    beat = np.concatenate([p[7] for p in problems]) if len(problems[0]) > 7 else None
    x, err = _solve_leg(tree, problems[0][0], *joined, iterations, bounds, walk, beat=beat, gain_tol=gain_tol)
    cuts = np.cumsum(counts)[:-1]
    return list(zip(np.split(x, cuts), np.split(err, cuts)))


def at_sole(poses: np.ndarray, sole: np.ndarray) -> np.ndarray:
    """Foot poses (F, 4, 4) moved to the point sole (3,) of the foot's frame (its rotation kept)."""
    out = poses.copy()
    out[:, :3, 3] += poses[:, :3, :3] @ sole
    return out


JUMP_RAD_S = 30.0  # a leg joint turning faster than this (rad/s) has likely switched branch


def _bounds(leg: LegIK, base: np.ndarray, goal: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-sample joint bounds (F, J): the joint limits, and the hip's vertical joint near the
    foot's turn from the base (a leg reaching sideways by twisting its hip is no person's)."""
    lower = np.repeat(leg.lower[None], len(goal), axis=0)
    upper = np.repeat(leg.upper[None], len(goal), axis=0)
    if leg.twist >= 0:
        turn = goal[:, :3, :3] @ np.swapaxes(base[:, :3, :3] @ leg.flat, 1, 2)  # foot's turn from level-under-base
        centre = leg.twist_sign * same_bits(np.arctan2, turn[:, 1, 0], turn[:, 0, 0])  # see core.model.same_bits
        k = leg.twist
        lower[:, k] = np.minimum(np.maximum(lower[:, k], centre - TWIST_SLACK_RAD), upper[:, k])
        upper[:, k] = np.maximum(np.minimum(upper[:, k], centre + TWIST_SLACK_RAD), lower[:, k])
    return lower, upper


def _continuous(tree: KinematicTree, legs: list[tuple], iterations: int, jump_rad: float, rounds: int = 4) -> None:
    """Where a leg jumps between two samples, each is solved again from the other's angles
    (forward, then backward) and kept when it meets its goal as well: one branch throughout.
    legs: (leg, base, goal, x, err, rest, prior, bounds) each, x and err changed in place; the
    legs' samples to redo are solved together in each round."""
    going = list(legs)
    for _ in range(rounds):
        trials = []
        for leg, base, goal, x, err, rest, prior, bounds in going:
            jump = np.flatnonzero(np.abs(np.diff(x, axis=0)).max(axis=1) > jump_rad)
            if len(jump):  # both directions in one solve: forward kept where it helps, else backward
                redo, source = np.r_[jump + 1, jump], np.r_[jump, jump + 1]
                trials.append((jump, redo, source, (leg, base[redo], goal[redo], x[source], rest[redo], prior[redo],
                                                    (bounds[0][redo], bounds[1][redo]))))
        going = [item for item in going if any(t[3][0] is item[0] for t in trials)]
        solved = _solve_together(tree, [t[3] for t in trials], iterations)
        for (jump, redo, source, _), (y, y_err), (leg, base, goal, x, err, rest, prior, bounds) in \
                zip(trials, solved, list(going)):
            cost, y_cost = (err[redo] ** 2).sum(1), (y_err ** 2).sum(1)
            closer = np.abs(y - x[source]).max(axis=1) < np.abs(x[redo] - x[source]).max(axis=1) - 1e-6
            # a swing foot (prior > 0) may give up a little of its goal for a leg that does not jump
            slack = np.where(prior[redo] > 2 * STANCE_PRIOR_M, SWING_SLACK_M ** 2, RESTART_TOL ** 2)
            take = closer & (y_cost <= np.maximum(cost * 1.5, cost + slack))
            half = np.arange(len(redo)) < len(jump)
            take &= half if take[half].any() else ~half
            if not take.any():
                going = [item for item in going if item[0] is not leg]
                continue
            x[redo[take]], err[redo[take]] = y[take], y_err[take]
        if not going:
            break


SWING_PRIOR_M = 0.02  # a swing leg's radian from the person's posture weighs like 2 cm of foot position
STANCE_PRIOR_M = 0.002  # and a stance leg's like 2 mm: a tenth of a millimetre off its goal at most where it
#                         reaches, and no snap of a straightening knee where it cannot
SWING_TURN_SHARE = 0.35  # of the rotation weight left to a foot in mid-swing
SWING_SLACK_M = 0.03  # how much further from its goal a swing foot may end to keep its leg on one branch
WANDER_RAD = 1.0  # a leg joint this far from its rest angle may be on another branch
RACE_WANDERERS = False  # True: a wanderer's restart races its rival too (leg_solve.RACE_STEPS; session 25: the
#                         H1 walk's float32 start 1.9 mm from the read one)
QUICK_GAIN_TOL: float | None = None  # a quick solve's leg_solve.GAIN_TOL (None: the same). No restart follows a
#   quick solve, and a leg near its straight knee passes a point where the cost barely falls: the H1 walk's
#   height-fit trial at 3.95 s stopped there on one rounding (a gain of 9.7e-4 of its cost) and went on to its
#   goal on the other (1.19e-3), with the race on. 1e-4 mends that trial, +25 of 1,517 residuals (session 26: off)
RESTART_TOL = 1e-3  # metres (or weighted radians) of error left that send a sample to the restart


def _solve_leg(tree: KinematicTree, leg: LegIK, base: np.ndarray, goal: np.ndarray,
               start: np.ndarray, rest: np.ndarray, prior: np.ndarray, iterations: int,
               bounds: tuple[np.ndarray, np.ndarray], walk: list[Link] | None = None,
               beat: np.ndarray | None = None, gain_tol: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Projected Levenberg-Marquardt for one leg (or legs built alike: walk from stacked_walk),
    every sample its own problem, all at once, frames last (core.balance.leg_solve); samples drop
    out as they converge. Returns the leg's joints (F, J) and weighted error (F, 6 + J)."""
    # a leg of six joints meets the whole pose; with fewer, the foot keeps its place and stays level
    yaw = TILT_WEIGHT_M if len(leg.columns) >= FULL_LEG else YAW_WEIGHT_M
    yaw = yaw if leg.yaw_weight_m is None else leg.yaw_weight_m
    weights = np.array([1.0, 1.0, 1.0, TILT_WEIGHT_M, TILT_WEIGHT_M, yaw])
    lower, upper = bounds
    roll_axis = roll_more = None
    if leg.roll_weight_m is not None:  # a standing foot's roll (its swing's as any tilt)
        swing = np.clip((prior - STANCE_PRIOR_M) / (SWING_PRIOR_M - STANCE_PRIOR_M), 0.0, 1.0)
        roll_more = (leg.roll_weight_m / TILT_WEIGHT_M - 1.0) * (1.0 - swing)
        roll_axis = (goal[:, :3, :3] @ leg.roll_axis).T
    x, err = levenberg_marquardt(_walk(tree, leg) if walk is None else walk, leg.revolute, frames_last(base),
                                 goal[:, :3, :3].transpose(1, 2, 0), goal[:, :3, 3].T,
                                 _pose_weights(weights, prior).T, start.T, rest.T, prior, lower.T, upper.T,
                                 roll_axis, roll_more, iterations, beat, gain_tol)
    return x.T, err.T


def leg_length(tree: KinematicTree, leg: LegIK) -> float:
    """Hip to ankle with the leg straight, metres: the longest over the knee's range (a robot
    whose zero pose bends its knee has a longer leg than its zero pose shows)."""
    built = built_pose(tree, leg.neutral)
    lengths = [float(np.linalg.norm(built[leg.hip, :3, 3] - built[leg.foot, :3, 3]))]
    if leg.knee >= 0:
        lower, upper = tree.lower[leg.knee], tree.upper[leg.knee]
        if np.isfinite(lower) and np.isfinite(upper):
            q = np.repeat(leg.built(tree.dof)[None], 41, axis=0)
            q[:, leg.knee] = np.linspace(lower, upper, 41)
            poses = tree.poses(q, None, [leg.hip, leg.foot])
            lengths.append(float(np.linalg.norm(poses[leg.foot][:, :3, 3] - poses[leg.hip][:, :3, 3], axis=1).max()))
    return max(lengths)


def hip_positions(tree: KinematicTree, leg: LegIK, q: np.ndarray, root: np.ndarray) -> np.ndarray:
    """World position (F, 3) of the leg's hip: its first joint, which no leg joint moves."""
    return (tree.link_transform(q, leg.base, root) @ tree.origins[leg.hip])[:, :3, 3]


def stretch(tree: KinematicTree, legs: list[LegIK], reach: list[float], q: np.ndarray, root: np.ndarray,
            goals: dict[int, np.ndarray], down: dict[int, np.ndarray] | None = None) -> np.ndarray:
    """How far (F,) the waist must come down so that no hip is further than its leg's reach from
    its foot's goal (ankle), metres, counting only feet that are down (all without `down`)."""
    need = np.zeros(len(q))
    for leg, length in zip(legs, reach):
        hip = hip_positions(tree, leg, q, root)
        ankle = goals[leg.foot][:, :3, 3]
        across = np.linalg.norm(hip[:, :2] - ankle[:, :2], axis=1)
        below = hip[:, 2] - ankle[:, 2] - np.sqrt(np.clip(length ** 2 - across ** 2, 0.0, None))
        need = np.maximum(need, below if down is None else np.where(down[leg.foot], below, 0.0))
    return need


def within_reach(tree: KinematicTree, legs: list[LegIK], reach: list[float], q: np.ndarray, root: np.ndarray,
                 goals: dict[int, np.ndarray], air: dict[int, np.ndarray]) -> dict[int, np.ndarray]:
    """Goals with every foot in the air (air[foot] (F,)) pulled toward its hip to the leg's reach:
    the nearest place a swing foot can be (a stance foot stays; the waist comes down for it)."""
    out = dict(goals)
    for leg, length in zip(legs, reach):
        hip = hip_positions(tree, leg, q, root)
        away = goals[leg.foot][:, :3, 3] - hip
        distance = np.linalg.norm(away, axis=1)
        far = air[leg.foot] & (distance > length)
        if far.any():
            moved = goals[leg.foot].copy()
            moved[far, :3, 3] = hip[far] + away[far] * (length / distance[far])[:, None]
            out[leg.foot] = moved
    return out


def pose_errors(tree: KinematicTree, legs: list[LegIK], q: np.ndarray, root: np.ndarray,
                goals: dict[int, np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Worst foot position error (F,) metres, sole tilt error (F,) and heading error (F,) radians
    over the legs (a foot that stands in place but turns slides at its toe)."""
    position, tilt, turn = np.zeros(len(q)), np.zeros(len(q)), np.zeros(len(q))
    for leg in legs:
        pose = tree.link_transform(q, leg.foot, root)
        goal = goals[leg.foot]
        position = np.maximum(position, np.linalg.norm(pose[:, :3, 3] - goal[:, :3, 3], axis=1))
        # the goal's world up in the foot's frame, carried by the pose the leg reached
        up = goal[:, 2, :3]  # rows of R are the world axes in the foot's frame
        normal = np.einsum("fij,fj->fi", pose[:, :3, :3], up)
        tilt = np.maximum(tilt, same_bits(np.arccos, np.clip(normal[:, 2], -1.0, 1.0)))
        turn = np.maximum(turn, np.abs(rotvec(goal[:, :3, :3] @ np.swapaxes(pose[:, :3, :3], 1, 2))[:, 2]))
    return position, tilt, turn
