"""How far the robot can step: the bounds behind "a position the robot cannot reach moves to the
nearest reachable one" (issue 12, step 4).

The robot is probed once, standing on two level feet with an upright waist at the gait's
height: a step is within reach when the legs meet both feet (within joint limits, the hip's
twist bounded, the soles level within core.balance.support.level_tolerance) with the waist
where a walk's double support has it (15-85 % of the way from one foot to the other along the
step; across, only as far toward them as the robot can lean standing as built: a leg without an
ankle roll cannot lean sideways with its foot flat, but its waist still goes forward from one foot
to the other). That gives the longest step forward and back, the widest and
narrowest stance and the turn between the feet. A person's step outside them is clamped to them
in the frame of the foot stepped from; then each step is checked with the legs at its own
length, width and turn together (check_steps; legs without an ankle roll at its length along,
their width and turn bounded apart) and shortened toward the stance as built until it stands.
heel_off_angles: how far a rear foot rolls onto its toe edge at lift-off
(core.balance.rollover).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..model.kinematics import KinematicTree
from ..model.transforms import axis_angle_to_matrix, pose_matrices
from .rollover import HEEL_OFF_WAIST, ROLLS_RAD, Edge
from .support import level_tolerance
from .legs import FULL_LEG, LegIK, built_pose, leg_length, pose_errors, solve_legs, stretch
from .waist import heading, wrap, yaw_bounds

POSITION_TOL_M = 0.002
TURN_TOL_RAD = 0.005
PROBES = 33  # step lengths tried per direction
SWAYS = (1.0, 0.8, 0.6, 0.4, 0.2, 0.0)  # shares of the way from one foot to the other the waist is probed at
STEP_SWAY = 0.7  # each step is checked with the waist 15 % to 85 % of the way between the feet: in the
#                 G1 walk's double supports it goes from 13-61 % to 49-89 % of the way to the front foot
LAST_SWAY = 0.85  # and a stance the clip ends in, where the robot stands for long, 7.5 % to 92.5 %
LAST_BEYOND = 0.15  # or, knowing the foot stood on, the waist up to this share of the step behind it (the G1
#                   walk: at 0 its last stance slid 14 mm; 0.1-0.25 meet the targets, and at 0.25 no last stance
#                   stands, not even as built, so the walk ends in the stance as built)
MARGIN = 0.85  # of the probed bounds a step may use: the waist is not always where the probe had it
PARALLEL_TURN_RAD = np.radians(2.0)  # the most a fewer-jointed leg's foot turns from the other's
NARROWER = np.linspace(0.0, 0.1, 51)  # metres narrower than built tried with parallel soles


@dataclass
class StepBounds:
    """Steps the robot can stand across, between foot link origins, in the frame of the foot
    stepped from (forward, to the stepping side), metres and radians."""

    forward_m: float
    back_m: float
    width_min_m: float
    width_max_m: float
    turn_rad: float
    forward_axis: np.ndarray  # (2,) the robot's forward on the ground in its zero pose
    left_axis: np.ndarray  # (2,)
    lean: float = 1.0  # share of the way to a foot the waist can go with both soles flat
    natural_m: float = 0.0  # the width between the feet as built
    probe: "Probe | None" = None  # what the bounds were probed with: each step is checked with it
    planes: bool = False  # legs without an ankle roll: the width is between the feet's planes at the hips

    def limit(self, ref_pose: np.ndarray, ref_flat: np.ndarray, pose: np.ndarray, flat: np.ndarray,
              side: str, shrink: float = 1.0) -> np.ndarray:
        """The stance pose (4, 4) nearest `pose` the robot can step to from ref_pose (flats: each
        foot's level rotation in the zero pose; side: the foot stepping, 'left' or 'right');
        shrink: the share of that step from the stance beside ref_pose as built it takes (a step
        within the bounds the robot still cannot stand across, found by check_steps)."""
        turn = float(heading(ref_pose[:3, :3] @ ref_flat.T))
        frame = axis_angle_to_matrix(np.array([0.0, 0.0, 1.0]), turn)[:2, :2]
        forward, left = frame @ self.forward_axis, frame @ self.left_axis
        rel = pose[:2, 3] - ref_pose[:2, 3]
        sign = 1.0 if side == "left" else -1.0
        dx = shrink * float(np.clip(rel @ forward, -self.back_m, self.forward_m))
        rel_turn = shrink * float(np.clip(wrap(heading(pose[:3, :3] @ flat.T) - turn), -self.turn_rad, self.turn_rad))
        # legs without an ankle roll: the width between the feet's fore-aft planes where the hips are,
        # halfway along the step (a turned foot's plane crosses the other's)
        bend = 0.5 * dx * np.tan(rel_turn) if self.planes else 0.0
        dy = sign * float(np.clip(sign * (rel @ left - bend), self.width_min_m, self.width_max_m))
        dy = sign * self.natural_m + shrink * (dy - sign * self.natural_m) + bend
        out = pose.copy()
        out[:2, 3] = ref_pose[:2, 3] + dx * forward + dy * left
        out[:3, :3] = axis_angle_to_matrix(np.array([0.0, 0.0, 1.0]), turn + rel_turn) @ flat
        return out

    def relative(self, ref_pose: np.ndarray, ref_flat: np.ndarray, pose: np.ndarray, flat: np.ndarray,
                 side: str) -> tuple[np.ndarray, float]:
        """The right foot's place (2,) and turn (radians) from the left foot, in the left foot's
        frame as the probe has it (the robot's zero pose), for a step of `side` from ref_pose."""
        turn = float(heading(ref_pose[:3, :3] @ ref_flat.T))
        frame = axis_angle_to_matrix(np.array([0.0, 0.0, 1.0]), turn)[:2, :2]
        rel = frame.T @ (pose[:2, 3] - ref_pose[:2, 3])
        rel_turn = float(wrap(heading(pose[:3, :3] @ flat.T) - turn))
        if side == "right":
            return rel, rel_turn
        back = axis_angle_to_matrix(np.array([0.0, 0.0, 1.0]), -rel_turn)[:2, :2]
        return -(back @ rel), -rel_turn


SHRINKS = np.array([0.85, 0.7, 0.55, 0.4, 0.25, 0.1, 0.0])  # shares of a step tried where it does not stand


def check_steps(bounds: StepBounds, steps: list[tuple[np.ndarray, float]], last: list[bool],
                standing_left: list[bool] | None = None) -> np.ndarray:
    """Per step (the right foot's place and turn from the left, StepBounds.relative), the largest
    share of it (from the stance as built) the robot stands across with the waist anywhere double
    support has it (STEP_SWAY), 1 where the whole step stands: a step inside the bounds may still
    be too far for its width and turn together. last: per step, whether the robot stands there at
    the clip's end. standing_left: per step, whether the foot stood on while stepping is the left
    one; then a last stance is also checked with the waist over that foot and LAST_BEYOND past it
    (the target ZMP ramps from that foot to between the feet and the waist trails it: with the G1
    walk's last stance as the person's, the waist stood 23 % of the way behind the foot at
    touch-down, and the landing foot was out of reach). Without it, a last stance is
    checked with the waist toward each foot as far as the robot leans (LAST_SWAY)."""
    probe = bounds.probe
    out = np.ones(len(steps))
    if not steps or not _probed(bounds):
        return out
    natural = -bounds.natural_m * probe.left
    if not _full_legs(probe):
        steps = [(_along(bounds, place), 0.0) for place, _ in steps]

    def stand(shares_of_step: np.ndarray, index: np.ndarray) -> np.ndarray:
        offsets = np.array([natural + a * (steps[i][0] - natural) for a, i in zip(shares_of_step, index)])
        turns = np.array([a * steps[i][1] for a, i in zip(shares_of_step, index)])
        whole = np.array([last[i] for i in index])
        if standing_left is not None:  # every step as a step, a last one also from behind its standing foot
            # (both in one solve)
            trials = []
            if whole.any():
                behind = np.array([[-LAST_BEYOND, 0.0] if standing_left[i] else [1.0 + LAST_BEYOND, 1.0]
                                   for i in index[whole]])
                trials.append((np.repeat(offsets[whole], 2, axis=0), behind.ravel(), np.repeat(turns[whole], 2)))
            ok, *beyond = probe.stands_each([(offsets, probe.sway, turns)], trials)
            if beyond:
                ok[whole] &= beyond[0].reshape(-1, 2).all(axis=1)
            return ok
        ok = np.ones(len(index), dtype=bool)
        asked = [(sway, rows) for sway, rows in ((probe.sway, ~whole), (LAST_SWAY, whole)) if rows.any()]
        for (_, rows), stood in zip(asked, probe.stands_each([(offsets[rows], sway, turns[rows])
                                                              for sway, rows in asked])):
            ok[rows] = stood
        return ok

    every = np.arange(len(steps))
    failed = every[~stand(np.ones(len(steps)), every)]
    if len(failed):
        index = np.repeat(failed, len(SHRINKS))
        ok = stand(np.tile(SHRINKS, len(failed)), index).reshape(len(failed), len(SHRINKS))
        out[failed] = np.where(ok.any(axis=1), SHRINKS[np.argmax(ok, axis=1)], 0.0)
    return out


def _full_legs(probe: "Probe | None") -> bool:
    """Whether the probe's legs meet any foot pose (six joints). A leg without an ankle roll meets a
    foot's place, level and heading together only in special poses: its stances stand parallel,
    within the widths the probe found (the H1), and its steps and heel-offs are checked along (_along)."""
    return probe is not None and min(len(leg.columns) for leg in probe.legs.values()) >= FULL_LEG


def _probed(bounds: StepBounds) -> bool:
    """Whether the probe can tell a step: it stands six-joint legs anywhere, fewer-jointed ones
    only where they stand flat as built."""
    probe = bounds.probe
    if probe is None:
        return False
    if _full_legs(probe):
        return True
    if probe.built_stands is None:  # a probe not from step_bounds (which asks it with its other trials)
        probe.built_stands = bool(probe.stands(-bounds.natural_m * probe.left[None])[0])
    return probe.built_stands


def _along(bounds: StepBounds, place: np.ndarray) -> np.ndarray:
    """The right foot's place (2,) for a step of legs without an ankle roll as the probe can stand
    it, the feet parallel (turn 0): its length along, at the built width, where such legs stand
    flat under an upright waist (their width and turn are bounded apart). What binds along is what binds six joints: the legs' reach and the
    ankles' pitch range with the waist toward or over a foot, which a leg without an ankle roll
    meets like any other (and a heel-off relieves: the rear foot rolls about its toe edge, parallel
    to its pitch joints)."""
    probe = bounds.probe
    return float(place @ probe.forward) * probe.forward - bounds.natural_m * probe.left


def heel_off_angles(bounds: StepBounds, flats: dict[str, np.ndarray], edges: dict[str, Edge],
                    steps: list[tuple[str, np.ndarray, str, np.ndarray]]) -> np.ndarray:
    """Per step (rear side, rear foot pose, front side, front foot pose), the smallest heel-off
    (core.balance.rollover.ROLLS_RAD) with which the robot stands at lift-off, the waist over the
    front foot (the largest tried where none does: rolling still helps the leg), radians."""
    probe = bounds.probe
    if not steps or not _probed(bounds):
        return np.zeros(len(steps))
    places, turns, shares, rear_left = [], [], [], []
    for rear_side, rear, front_side, front in steps:
        left, right = (rear, front) if rear_side == "left" else (front, rear)
        place, turn = bounds.relative(left, flats["left"], right, flats["right"], "right")
        if not _full_legs(probe):
            place, turn = _along(bounds, place), 0.0
        places.append(place)
        turns.append(turn)
        shares.append(HEEL_OFF_WAIST if front_side == "right" else 1.0 - HEEL_OFF_WAIST)
        rear_left.append(rear_side == "left")
    count, tries = len(steps), len(ROLLS_RAD)
    angle = np.repeat(ROLLS_RAD[None], count, axis=0).ravel()
    rear_left = np.repeat(rear_left, tries)
    ok = probe.trial(np.repeat(places, tries, axis=0), np.repeat(shares, tries),
                     {"left": (edges["left"], np.where(rear_left, angle, 0.0)),
                      "right": (edges["right"], np.where(rear_left, 0.0, angle))},
                     turns=np.repeat(turns, tries)).reshape(count, tries)
    return np.where(ok.any(axis=1), ROLLS_RAD[np.argmax(ok, axis=1)], ROLLS_RAD[-1])


FAMILY_ROLL_RAD = (0.15, 0.25)  # legs without an ankle roll: the waist's roll across double support
FAMILY_STEP_M = 0.5


def step_bounds(tree: KinematicTree, legs: dict[str, LegIK], rest: np.ndarray, height: float,
                reach: float, foot_height: dict[str, float], foot_width: float,
                standing: dict[str, np.ndarray], sagittal_waist: bool = False) -> StepBounds:
    """Probe the robot at waist height `height` (root z, metres) from the posture `rest` (n,);
    a foot counts as level within core.balance.support.level_tolerance of its width.
    sagittal_waist: legs without an ankle roll step as GaitSettings.sagittal_waist has them."""
    probe = Probe.build(tree, legs, rest, height, reach, foot_height, foot_width, standing)
    natural, forward_axis, left_axis = probe.natural, probe.forward, probe.left
    # how far toward a foot the waist can go standing as built (less without an ankle roll): the most of SWAYS
    # that stands (the last without one), every sway's trials in one solve (a solve costs mostly per call)
    built = -natural * left_axis[None]
    stood = probe.stands_each([(built, sway, None) for sway in SWAYS])
    lean = next((sway for sway, ok in zip(SWAYS, stood) if ok[0]), SWAYS[-1])
    # a step: the waist along it where double support has it, not over a foot, and across only as far
    # as the robot leans (a leg without an ankle roll: the H1 walk's steps were probed with the waist
    # midway, 0.80 m forward, and it stepped 0.74-0.77 m)
    probe.sway, probe.lean = STEP_SWAY, lean
    span = 1.2 * min(leg_length(tree, leg) for leg in legs.values())
    lengths = np.linspace(0.0, span, PROBES)
    walks = [(lengths, natural, True, 1.0), (lengths, natural, True, -1.0), (natural + lengths, 0.0, False, 1.0)]
    planar = min(len(leg.columns) for leg in legs.values()) < FULL_LEG
    widths = parallel_widths(natural, foot_width)
    # the step lengths, and for legs without an ankle roll the parallel widths and the stance as built
    # (_probed), all at the step's sway in one solve
    stood = probe.stands_each([(probe.walk_offsets(walks), STEP_SWAY, None)]
                              + ([(-widths[:, None] * left_axis, STEP_SWAY, None), (built, STEP_SWAY, None)]
                                 if planar else []))
    ahead, behind, wide = probe.longest(walks, stood[0])
    narrow = max(foot_width + 0.02, 0.5 * natural)  # feet never overlap
    turn = min(min(abs(lo), abs(hi)) for lo, hi in (yaw_bounds(tree, leg) for leg in legs.values()))
    width_min, width_max = min(narrow, natural), max(MARGIN * wide, natural)
    if planar:
        # no ankle roll: a flat foot keeps its hip near the foot's own fore-aft plane, so the feet
        # stand parallel, no wider than built and no narrower than the legs stand flat
        turn = min(turn, PARALLEL_TURN_RAD)
        width_min, width_max = probe.parallel_width(natural, foot_width, stood[1]), natural
        probe.built_stands = bool(stood[2][0])
        if sagittal_waist:  # and the waist rolls across (core.balance.sagittal) where they stand narrower
            #               than the hips: by up to arccos(width / built width)
            width_min = max(width_min, natural * np.cos(FAMILY_ROLL_RAD[1]))
            width_max = max(width_min, natural * np.cos(FAMILY_ROLL_RAD[0]))
            ahead, behind = min(ahead, FAMILY_STEP_M), min(behind, FAMILY_STEP_M)
    # each step of full legs is checked with them (check_steps): the margin ahead only cost travel on
    # every step the person takes longer (the G1 walk's last four: 80 % of the scaled source's travel)
    ahead = ahead if _full_legs(probe) else MARGIN * ahead
    return StepBounds(ahead, MARGIN * behind, width_min, width_max, turn, forward_axis, left_axis, lean,
                      natural, probe, sagittal_waist and not _full_legs(probe))


def parallel_widths(natural: float, foot_width: float) -> np.ndarray:
    """The widths (W,) parallel_width tries: narrower than built, the feet never overlapping."""
    return natural - NARROWER[natural - NARROWER > foot_width + 0.02]


class Probe:
    """Can the robot stand with its left foot at the origin and its right foot at an offset?"""

    def __init__(self, tree, legs, rest, height, reach, foot_height, forward_axis, left_axis, tilt_tol, standing):
        self.tree, self.legs, self.rest, self.height, self.tilt_tol = tree, legs, rest, height, tilt_tol
        self.standing = standing  # per side: the foot's level rotation
        self.reach = [reach * leg_length(tree, legs[s]) for s in ("left", "right")]
        self.foot_height, self.forward, self.left = foot_height, forward_axis, left_axis
        self.sway = 1.0
        self.lean = 1.0  # share of the way toward a foot the waist goes across (1: as far as a trial asks)
        self.natural = 0.0  # the width between the feet as built, metres
        self.built_stands: bool | None = None  # whether legs stand as built at the step's sway (_probed), once asked

    @classmethod
    def build(cls, tree: KinematicTree, legs: dict[str, LegIK], rest: np.ndarray, height: float, reach: float,
              foot_height: dict[str, float], foot_width: float, standing: dict[str, np.ndarray]) -> "Probe":
        """The probe of step_bounds: the robot's forward and left from its feet as built (its legs standing
        straight, LegIK.neutral)."""
        built = built_pose(tree, legs["left"].neutral)
        feet = {side: built[leg.foot, :3, 3] for side, leg in legs.items()}
        across = feet["left"][:2] - feet["right"][:2]  # the width the robot stands at as built
        natural = float(np.linalg.norm(across))
        left_axis = across / max(natural, 1e-9)
        probe = cls(tree, legs, rest, height, reach, foot_height, np.array([left_axis[1], -left_axis[0]]), left_axis,
                    level_tolerance(foot_width), standing)
        probe.natural = natural
        return probe

    def walk_offsets(self, probes: list[tuple[np.ndarray, float, bool, float]]) -> np.ndarray:
        """The right foot's offsets (T, 2) of longest's probes, probe after probe."""
        offsets = []
        for lengths, other, along, sign in probes:
            if along:
                offsets.append(sign * lengths[:, None] * self.forward - other * self.left)
            else:
                offsets.append(-lengths[:, None] * self.left + other * self.forward)
        return np.concatenate(offsets)

    def longest(self, probes: list[tuple[np.ndarray, float, bool, float]], ok: np.ndarray | None = None) -> list[float]:
        """Per probe (lengths (increasing), other, along, sign), the longest of `lengths` that
        stands, with every shorter one standing too; along: a step forward (sign -1: back) at
        lateral distance `other`, else a side step. All probes' trials in one solve; ok: stands of
        walk_offsets(probes) where the caller solved them with others."""
        ok = self.stands(self.walk_offsets(probes)) if ok is None else ok
        out = []
        for (lengths, *_), fine in zip(probes, np.split(ok, np.cumsum([len(p[0]) for p in probes])[:-1])):
            failed = np.flatnonzero(~fine)
            last = (failed[0] - 1) if len(failed) else len(lengths) - 1
            out.append(float(lengths[max(last, 0)]))
        return out

    def parallel_width(self, natural: float, foot_width: float, ok: np.ndarray | None = None) -> float:
        """The narrowest lateral distance between parallel level feet the robot stands across,
        every width between it and the built one standing too (metres); ok: stands of
        parallel_widths' offsets where the caller solved them with others."""
        widths = parallel_widths(natural, foot_width)
        ok = self.stands(-widths[:, None] * self.left) if ok is None else ok
        failed = np.flatnonzero(~ok)
        return float(widths[(failed[0] - 1) if len(failed) else -1]) if ok[0] else natural

    def stands(self, offsets: np.ndarray, turns: np.ndarray | None = None, sway: float | None = None) -> np.ndarray:
        """Whether the robot stands on each trial (offsets (T, 2) of the right foot from the left,
        turned by turns (T,) radians, the waist by half of it) with the waist between the feet, and
        `sway` (the probe's own by default) of the way to each."""
        return self.stands_each([(offsets, self.sway if sway is None else sway, turns)])[0]

    def stands_each(self, groups: list[tuple[np.ndarray, float, np.ndarray | None]],
                    trials: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = ()) -> list[np.ndarray]:
        """stands of each group (offsets, sway, turns or None), then trial's answer to each of trials
        (offsets, shares, turns), in one solve: every trial is its own problem (legs solved as trials,
        not a motion), so each answers as it would alone."""
        offsets, shares, turns = [], [], []
        for offset, sway, turn in groups:
            count = len(offset)
            offsets.append(np.concatenate([offset] * 3))
            shares.append(np.repeat([0.5 - sway / 2, 0.5, 0.5 + sway / 2], count))
            turns.append(np.zeros(3 * count) if turn is None else np.concatenate([turn] * 3))
        for offset, share, turn in trials:
            offsets.append(offset)
            shares.append(share)
            turns.append(turn)
        ok = self.trial(np.concatenate(offsets), np.concatenate(shares), turns=np.concatenate(turns))
        parts = np.split(ok, np.cumsum([len(share) for share in shares])[:-1])
        return ([part.reshape(3, len(group[0])).all(axis=0) for part, group in zip(parts, groups)]
                + parts[len(groups):])

    def trial(self, offsets: np.ndarray, shares: np.ndarray, rolls: dict[str, tuple[Edge, np.ndarray]] | None = None,
              solved: bool = False, turns: np.ndarray | None = None):
        """Whether the robot stands on each trial: the right foot at offsets (T, 2) from the left,
        the waist upright at shares (T,) of the way from the left ankle to the right (across, no
        further than the probe's lean), lowered as
        far as the legs' reach asks; rolls: per side, a foot rolled about an edge (core.balance.
        rollover) by angles (T,) radians (a heel-off), else level. solved: also the joints (T, n)
        and the root poses (T, 4, 4); turns (T,): the right foot turned from the left by so much,
        radians, the waist by half of it."""
        count = len(offsets)
        left_leg, right_leg = self.legs["left"], self.legs["right"]
        zero = self.tree.zero_pose()
        turns = np.zeros(count) if turns is None else turns
        goals = {}
        across = offsets @ self.left  # the waist goes along the step as asked, across only as far as it leans
        leaned = shares if self.lean >= 1.0 else np.clip(shares, 0.5 - self.lean / 2, 0.5 + self.lean / 2)
        place = (shares * (offsets @ self.forward))[:, None] * self.forward + (leaned * across)[:, None] * self.left
        for side, leg, where, turn in (("left", left_leg, np.zeros((count, 2)), np.zeros(count)),
                                       ("right", right_leg, offsets, turns)):
            pose = np.repeat(np.eye(4)[None], count, axis=0)
            pose[:, :3, :3] = axis_angle_to_matrix(np.array([0.0, 0.0, 1.0]), turn) @ self.standing[side]
            pose[:, :2, 3] = where
            pose[:, 2, 3] = self.foot_height[side]
            if rolls and side in rolls:
                edge, angles = rolls[side]
                pose = edge.rolled(pose, angles)
            goals[leg.foot] = pose
        hip_offset = zero[0, :3, 3] - (zero[left_leg.hip, :3, 3] + zero[right_leg.hip, :3, 3]) / 2.0
        rot = axis_angle_to_matrix(np.array([0.0, 0.0, 1.0]), turns / 2.0)
        position = np.column_stack([place + (rot @ hip_offset)[:, :2], np.full(count, self.height)])
        q = np.repeat(self.rest[None], count, axis=0)
        legs = [left_leg, right_leg]
        position[:, 2] -= stretch(self.tree, legs, self.reach, q, pose_matrices(rot, position), goals)
        root = pose_matrices(rot, position)
        q, _ = solve_legs(self.tree, legs, q, root, goals, q, period_s=None)  # trials, not a motion
        miss, tilt, turn = pose_errors(self.tree, legs, q, root, goals)
        ok = (miss < POSITION_TOL_M) & (tilt < self.tilt_tol) & (turn < TURN_TOL_RAD)
        return (ok, q, root) if solved else ok
