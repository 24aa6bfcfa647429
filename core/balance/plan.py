"""The gait's kinematic plan from a planted bake (issue 12, steps 3-7): where each foot is at
every control cycle, the waist's height and rotation, the upper body's joints and the target
ZMP; the balance correction then moves the waist (core.balance.correction).

The bake (core.retarget with planted feet) has scaled every leg and the waist's travel to the
robot's link lengths. From it: the stances, each step moved to the nearest the robot can take
(core.balance.reach); the swings through their representative points
(core.balance.foot_path); the waist through its poses at those points, its heading held where
the feet allow and its tilt partly kept (core.balance.waist).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.interpolate import CubicSpline, PchipInterpolator
from scipy.spatial.transform import Rotation, RotationSpline

from ..chains.mapping import Mapping
from ..feet.contacts import Contacts
from ..feet.geometry import BodyPoints, standing_rotation
from ..model.kinematics import KinematicTree
from ..model.transforms import pose_matrices
from ..retarget import RetargetResult
from ..retarget.chain_plans import robot_axes
from ..retarget.neutral import neutral_legs
from .foot_path import FootPath, FootSettings, Stance, foot_path, plan_stances, reanchor, sole_height
from .inertia import BalanceError
from .legs import LegIK, built_pose, leg_iks
from .phases import Swing
from .reach import StepBounds, check_steps, heel_off_angles, step_bounds
from .rollover import heel_offs, toe_edge
from .planar_leg import planar_legs
from .support import (NARROW_SOLE_M, foot_bodies, foot_links, foot_width, level_tolerance,
                      narrow_sole_warning, sole_centre)
from .target import target_zmp
from .waist import calm_height, heading, keep_tilt, limit_turn, undipped_height, yaw_bounds


@dataclass
class GaitPlan:
    """Everything over the gait's samples (times (N,) s) before the waist is balanced."""

    times: np.ndarray
    legs: list[LegIK]
    sides: dict[int, str]  # foot link -> side
    bodies: dict[int, BodyPoints]
    paths: dict[int, FootPath]
    swings: dict[str, list[Swing]]
    root_rot: np.ndarray  # (N, 3, 3) the waist's rotation
    height: np.ndarray  # (N,) the waist's height, metres (root z)
    q: np.ndarray  # (N, n) upper body as it will play; legs a first guess
    target: np.ndarray  # (N, 2) target ZMP, metres
    bounds: StepBounds
    steps_moved: int
    level_tol: float  # radians a standing foot may tilt
    rolled: bool  # legs without an ankle roll under the rolled waist (GaitSettings.sagittal_waist)


def make_plan(tree: KinematicTree, mapping: Mapping, bake: RetargetResult, flags: Contacts, times: np.ndarray,
              foot: FootSettings, upper_body: bool, waist_tilt: float, zmp_offset_m, reach: float,
              warnings: list[str], person: RetargetResult | None = None,
              sagittal_waist: bool | None = None, repeated: np.ndarray | None = None) -> GaitPlan:
    """sagittal_waist: as GaitSettings.sagittal_waist (None: the rolled waist where the legs are planar).
    person: the bake before its feet were planted (RetargetResult.unplanted): the feet step where
    the scaled clip has them. The planted bake pins a foot the person swings wherever the gait's
    contacts keep it down, and holds the body back with it (the walk onto the G1: 1.52 of 2.00 m).
    repeated: (F,) frames repeating a held one (core.balance.phases.held_frames), counted once where a stance
    is posed (plan_stances) and the waist's knots at a hold's ends (held_ends)."""
    ft = _Feet.of(tree, mapping)
    feet, sides, by_side, bodies, standing, flats, legs, leg_of = (ft.links, ft.sides, ft.by_side, ft.bodies,
                                                                   ft.standing, ft.flats, ft.legs, ft.leg_of)
    if sagittal_waist is None:
        sagittal_waist = planar_legs(tree, legs) is not None
    clip_root = pose_matrices(bake.root_rotation, bake.root_position)
    clip_feet = {sides[link]: tree.link_transform(bake.q, link, clip_root) for link in feet}
    aims = None
    if person is not None:
        person_root = pose_matrices(person.root_rotation, person.root_position)
        aims = {sides[link]: tree.link_transform(person.q, link, person_root) for link in feet}
    width = min(foot_width(bodies[link], standing[link]) for link in feet)
    if width < NARROW_SOLE_M:
        warnings.append(narrow_sole_warning(tree, width))
    bounds = step_bounds(tree, leg_of, np.median(bake.q, axis=0), float(np.median(bake.root_position[:, 2])), reach,
                         {s: sole_height(bodies[by_side[s]], f) for s, f in flats.items()}, width, flats,
                         sagittal_waist)

    placing = not (sagittal_waist or bounds.lean < 1.0)  # a foot in the air at the clip's start is placed (below)
    stances, moved = _stances(bake, clip_feet, flags, {side: bodies[link] for side, link in by_side.items()}, flats,
                              bounds, aims, repeated, placing)
    paths, swings = {}, {}
    frames = len(bake.q)
    for side, link in by_side.items():
        paths[link], swings[side] = foot_path(side, clip_feet[side], stances[side], bake.fps, frames, times,
                                              bodies[link], foot, warnings, flats[side])
    if not placing:  # a foot placed at the clip's start carries weight from the start
        # (foot_path.FootPath.placed) where the waist cannot go over the other foot with both soles flat (the H1
        # upright: worst margin -11 -> -245 mm with the target there), and for the rolled waist, whose passes
        # amplify any change of the plan (the H1 walk: +10.8 -> +10.6 mm, slide 0.83 -> 0.99 mm)
        for path in paths.values():
            path.placed[:] = False
    edges = {side: toe_edge(bodies[link], flats[side], bounds.forward_axis) for side, link in by_side.items()}
    heel_offs(paths, sides, edges, lambda steps: heel_off_angles(bounds, flats, edges, steps))
    root_rot, position, rate = _plan_waist(tree, ft, bake, times, paths, stances, person, repeated, waist_tilt,
                                           sagittal_waist)
    q = np.clip(_joints(bake.q, bake.fps, times, np.concatenate([leg.columns for leg in legs]), upper_body),
                tree.lower, tree.upper)  # a cubic through angles at a limit overshoots it between frames
    target = _target(paths, bodies, sides, standing, zmp_offset_m)
    return GaitPlan(times, legs, sides, bodies, paths, swings, root_rot, calm_height(position[:, 2], rate),
                    q, target, bounds, moved, level_tolerance(width), sagittal_waist)


@dataclass
class _Feet:
    """The robot's feet: links, sides (link -> "left"/"right") and back, each foot's body, its level standing
    rotation (by link and by side) and the leg that moves it (by side)."""

    links: list[int]
    sides: dict[int, str]
    by_side: dict[str, int]
    bodies: dict[int, BodyPoints]
    standing: dict[int, np.ndarray]
    flats: dict[str, np.ndarray]
    legs: list[LegIK]
    leg_of: dict[str, LegIK]

    @classmethod
    def of(cls, tree: KinematicTree, mapping: Mapping) -> "_Feet":
        feet = foot_links(tree)
        sides = foot_sides(tree, mapping, feet)
        by_side = {side: link for link, side in sides.items()}
        bodies = dict(zip(feet, foot_bodies(tree, feet)))
        neutral = neutral_legs(tree, mapping, robot_axes(tree, mapping))  # the legs as built: standing straight
        built = built_pose(tree, neutral)
        standing = {link: standing_rotation(bodies[link], built[link, :3, :3]) for link in feet}  # soles level
        legs = leg_iks(tree, feet, standing, neutral)
        return cls(feet, sides, by_side, bodies, standing, {side: standing[link] for side, link in by_side.items()},
                   legs, {sides[leg.foot]: leg for leg in legs})


def _plan_waist(tree: KinematicTree, ft: _Feet, bake: RetargetResult, times: np.ndarray, paths: dict,
                stances: dict, person: RetargetResult | None, repeated: np.ndarray | None, waist_tilt: float,
                sagittal_waist: bool) -> tuple[np.ndarray, np.ndarray, float]:
    """The waist's rotation and position at `times` through knots at the feet's representative points (its turn
    kept within what the legs' yaw allows), the foot paths re-anchored to it, and the control rate."""
    end_s = (len(bake.q) - 1) / bake.fps
    # and a foot's first landing where the clip starts with it in the air (a touch-down of no swing: without it
    # the cut walk's waist turned and sank in one curve from the clip's start to the other foot's lift-off)
    landings = [stances[ft.sides[link]][0].start / bake.fps for link, path in paths.items() if path.placed.any()]
    knots = np.unique(np.concatenate([[0.0, end_s], [p.time_s for path in paths.values() for p in path.points],
                                      landings, held_ends(repeated, bake.fps)]))
    heights = bake.root_position[:, 2]
    if sagittal_waist and person is not None:  # issue 12: no dip the person does not make
        heights = undipped_height(heights, person.root_position[:, 2], None if repeated is None else ~repeated)
    data_rot, position = _waist(bake, knots, times, heights)
    data_rot = keep_tilt(data_rot, waist_tilt)
    rate = 1.0 / (times[1] - times[0]) if len(times) > 1 else 1.0
    root_rot = limit_turn(data_rot, [(np.unwrap(heading(path.poses[:, :3, :3] @ ft.standing[link].T)), path.down,
                                      yaw_bounds(tree, ft.leg_of[ft.sides[link]])) for link, path in paths.items()],
                          rate)

    def turn(t: float) -> tuple[np.ndarray, np.ndarray]:  # the waist's turn at t, about the waist
        i = int(np.clip(np.searchsorted(times, t), 0, len(times) - 1))
        return root_rot[i] @ data_rot[i].T, position[i]

    for path in paths.values():
        reanchor(path, turn)
    return root_rot, position, rate


CHECK_ROUNDS = 3  # the stances planned again at most this often where a step did not stand


def _stances(bake: RetargetResult, clip_feet: dict[str, np.ndarray], flags: Contacts, bodies: dict[str, BodyPoints],
             flats: dict[str, np.ndarray], bounds: StepBounds,
             aims: dict[str, np.ndarray] | None,
             repeated: np.ndarray | None = None, placing: bool = False) -> tuple[dict[str, list[Stance]], int]:
    """The stances (core.balance.foot_path.plan_stances), each step inside the bounds and then checked
    with the legs (core.balance.reach.check_steps): a step too far for its width and turn together
    is shortened toward the stance as built, and the later ones planned again from it. placing: a foot
    in the air at the clip's start stands on its first stance from the start (FootPath.placed) while the
    waist goes over the other foot, so that step is checked as the clip's last one is, with the waist
    over its standing foot: the walk cut at frame 333 placed the right foot 0.39 m ahead of the left,
    within the bounds, where no leg reached it from over the left foot (slide 28 mm, sole 17 degrees)."""
    shrink: dict[tuple[str, int], float] = {}

    def nearest_step(ref, pose, stance):
        return bounds.limit(ref.pose, flats[ref.side], pose, flats[stance.side], stance.side,
                            shrink.get((stance.side, stance.start), 1.0))

    def plan():
        try:
            return plan_stances(clip_feet, {side: flags.feet[side] for side in clip_feet}, bodies, flats, nearest_step,
                                aims, repeated)
        except ValueError as exc:
            raise BalanceError(f"clip {bake.report.get('source', '')!r}: {exc}") from None

    checked: dict[tuple, float] = {}  # a step planned again unchanged is not checked again

    def check(stepped: list[Stance]) -> np.ndarray:
        last = max(stepped, key=lambda st: st.start)  # the step into the stance the clip ends in
        placed = [st for st in stepped if placing and st.start > 0 and st is stances[st.side][0]]
        steps = [(*bounds.relative(st.reference.pose, flats[st.reference.side], st.pose, flats[st.side], st.side),
                  st is last or any(st is p for p in placed), st.reference.side == "left") for st in stepped]
        keys = [(*np.round(place, 9), round(turn, 9), *rest) for place, turn, *rest in steps]
        new = [i for i, key in enumerate(keys) if key not in checked]
        if new:
            shares = check_steps(bounds, [steps[i][:2] for i in new], [steps[i][2] for i in new],
                                 [steps[i][3] for i in new])
            checked.update((keys[i], float(share)) for i, share in zip(new, shares))
        return np.array([checked[key] for key in keys])

    stances, moved = plan()
    for _ in range(CHECK_ROUNDS):
        stepped = [st for items in stances.values() for st in items if st.reference is not None]
        shares = check(stepped)
        if (shares >= 1.0).all():
            break
        for stance, share in zip(stepped, shares):
            shrink[(stance.side, stance.start)] = shrink.get((stance.side, stance.start), 1.0) * share
        stances, moved = plan()
    return stances, moved


def foot_sides(tree: KinematicTree, mapping: Mapping, feet: list[int]) -> dict[int, str]:
    """Each foot link's side, from the mapped leg chain it ends (contacts are per side)."""
    out = {}
    for chain in mapping.chains:
        if chain.role != "leg" or chain.side not in ("left", "right") or not chain.robot_tips:
            continue
        path = set(tree.path(chain.robot_base, chain.robot_tips[0]))
        for link in feet:
            if link in path or int(tree.parent[link]) in path:
                out[link] = chain.side
    missing = [tree.link_names[f] for f in feet if f not in out]
    if missing or len(set(out.values())) != len(feet):
        raise BalanceError(f"robot {tree.robot.name!r}: cannot tell the side of foot link(s) "
                           f"{', '.join(missing) or ', '.join(tree.link_names[f] for f in feet)} from the "
                           "mapping's left and right leg chains")
    return out


def held_ends(held: np.ndarray | None, fps: float) -> np.ndarray:
    """The times (s) where a held frame (core.balance.phases.held_frames) starts and stops being held: the
    waist's knots, so its rotation spline stands still there instead of swinging on past its last knot (the
    10 s clip's heading swung 0.35 rad past the walk's over its held end, between knots 2.5 s apart)."""
    if held is None:
        return np.zeros(0)
    starts, ends = (np.flatnonzero(np.diff(np.r_[0, held.astype(np.int8), 0]) == way) for way in (1, -1))
    return np.concatenate([starts - 1, ends - 1]) / fps  # the repeats starts..ends-1 hold frame starts-1


def _waist(bake: RetargetResult, knots: np.ndarray, times: np.ndarray,
           heights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The root's rotation (N, 3, 3) and position (N, 3) through its poses at the knots, at the
    clip's heights (F,) metres: cubic in position, a rotation spline (continuous angular velocity)
    in rotation."""
    clip_time = np.arange(len(bake.q)) / bake.fps
    clip_position = np.column_stack([bake.root_position[:, :2], heights])
    position = np.column_stack([np.interp(knots, clip_time, clip_position[:, k]) for k in range(3)])
    if len(knots) < 3:
        return np.repeat(bake.root_rotation[:1], len(times), 0), np.repeat(position[:1], len(times), 0)
    nearest = np.clip(np.round(knots * bake.fps).astype(int), 0, len(bake.q) - 1)
    rotation = RotationSpline(knots, Rotation.from_matrix(bake.root_rotation[nearest]))(times).as_matrix()
    return rotation, PchipInterpolator(knots, position)(times)


def _joints(q: np.ndarray, fps: float, times: np.ndarray, legs: np.ndarray, upper_body: bool) -> np.ndarray:
    """Every joint at the samples: the retargeted angles (cubic through every clip frame) or,
    without the upper body, its median posture; the legs' columns are a first guess only."""
    clip_time = np.arange(len(q)) / fps
    out = CubicSpline(clip_time, q, axis=0)(np.clip(times, 0.0, clip_time[-1])) if len(q) > 3 else \
        np.repeat(q[:1], len(times), axis=0)
    if not upper_body:
        others = np.setdiff1d(np.arange(q.shape[1]), legs)
        out[:, others] = np.median(q[:, others], axis=0)
    return out


def _target(paths: dict[int, FootPath], bodies, sides, standing, offset) -> np.ndarray:
    sole, down, placed = {}, {}, {}
    for link, path in paths.items():
        ahead, left = np.asarray(offset, dtype=float)  # along the level foot, whichever way its link frame points
        centre = sole_centre(bodies[link], standing[link]) + standing[link].T @ np.array([ahead, left, 0.0])
        sole[sides[link]] = (path.poses[:, :3, :3] @ centre + path.poses[:, :3, 3])[:, :2]
        down[sides[link]] = path.down
        placed[sides[link]] = path.placed
    return target_zmp(sole, down, placed)
