"""Gait from captured legs and waist: robot motion at its control cycle that keeps the person's
steps and swing-leg style while the multibody ZMP stays where the robot can stand (issue 12).

The clip is retargeted with its feet planted (core.retarget), which scales legs and travel to
the robot; core.balance.plan turns that into feet, waist and upper body over the control
cycles with a target ZMP; core.balance.correction moves the waist until the multibody ZMP
follows the target. The correction runs every BALANCE_PERIOD_S (the ZMP that matters for
balance is slow); the legs are then solved once more at every control cycle.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable, NamedTuple

import numpy as np
from scipy.interpolate import CubicSpline
from scipy.ndimage import gaussian_filter1d

from ..chains.mapping import Mapping
from ..feet.contacts import SIDES, Contacts, DetectSettings, foot_tracks
from ..feet.report import resolve_contacts
from ..model.kinematics import KinematicTree
from ..model.same_bits import equal_bits
from ..model.transforms import pose_matrices
from ..motion.source import SourceMotion, held_frames
from ..retarget import RetargetResult, retarget
from ..retarget.facing import solved_robot
from ..retarget.pipeline import HELD_S
from .correction import Balanced, CorrectionSettings, Corrector, balance, refine
from .foot_path import FootSettings, project_person_points, tame_swing
from .gait_report import gait_report, scaled_travel, self_collision_figures
from .holds import end_holds, inner_contacts, stand_over_holds
from .inertia import BalanceError, MassModel, centre_of_mass, com_push
from .lateral import band_constraints, plan_path, support_constraints, zmp_operator
from .lift_off import swing_limits, swing_where_feet_let_go
from .margin import ground_polygons, toward_margin
from .phases import clip_metres_per_unit, gait_contacts, refuse_flight
from .plan import GaitPlan, make_plan
from .preview import PreviewSettings, follow_zmp
from .rollover import Edge, toe_edge
from .support import support_polygon
from .target import onto_support
from .trailing import roll_trailing_feet
from .waist import keep_tilt

Progress = Callable[[float, str], None]
BALANCE_PERIOD_S = 0.01  # the correction's sample period
FINE_PASSES = 3  # multibody passes at the control cycle after the correction's
ROLLED_FINE_PASSES = 10  # the rolled waist's passes again after its height is fitted where the first left it (they
#   stop at the correction's 2 mm tolerance): the H1 walk's ZMP RMS 4.0 / 3.1 / 2.1 / 1.9 mm with 3 / 6 / 10 / 16
#   passes. They run to their count (the best pass is kept), past a pass that does worse: at 100 Hz the H1 walk's
#   went 12.3 / 9.4 / 8.7 / 10.3 mm and stopped there (the correction's stall rule), RMS 8.7 mm, worst margin -11 mm,
#   outside on 0.8 % of samples; run on, 6.5 ... 2.8 mm (2026-12-02, session 13). At 200 Hz none does worse.
ROLLED_COARSE_PASSES = 3  # the rolled waist's multibody passes at the correction's 10 ms (the settings' passes, 24,
#   for the upright): its control-cycle passes start 13-36 mm RMS from the target whatever the coarse passes reached
#   (6.5 mm after 7 steps on the H1 10 s clip), and a coarse pass costs about what a control-cycle pass does (48 against
#   50-70 ms, the cost being per call). H1, four starts each (bench/h1_sensitivity.py [--held], worst margin): 3 passes
#   walk +10.47-+10.50 mm, 10 s clip +10.50-+10.89; the 24 (stopping at the stall rule after 8) walk +10.60-+10.77,
#   10 s clip +9.44-+10.75. A draw, not a trend: 1 pass +9.84-+10.22 (10 s clip), 2 +3.98 (its noise start), 4 walk
#   +6.22: the margin there is set by the right lift-off at 6.02-6.07 s (session 18)
MIN_PUSH = 0.5  # share of the robot's weight the ground must carry at least, at every sample
MAX_THROW_M = 0.04  # a swing that throws the multibody ZMP further from its target is calmed
TAME_SHARE = 0.4  # how much of a too-fast swing's style one round takes back
SUPPORT_SHRINK_M = 0.015  # a planned ZMP stays this far inside the support (issue 12 asks 10 mm of the multibody
#                          ZMP: the H1 walk away from its trailing ankle's limit at 5.85-6.91 s has 9.8 / 7.5 / 4.8 %
#                          of samples under 10 mm at 12 / 14 / 15 mm; at 16 the programme cannot keep it on 4 cm soles)
# the planned support shrunk by no more than this share of half its width (lateral.support_constraints; None: by
# SUPPORT_SHRINK_M everywhere). The H1's 30 mm soles shrink to a line at 15 mm, on the brink of feasible, where the
# programme's answer jumped between equal optima with the start's rounding and the gait with it. H1 walk
# (bench/h1_sensitivity.py, its four starts: as read / float32 / 1e-6 m noise / torso-rooted; worst margin, slide):
# None +5.6 / +8.2 / +7.6 / +5.6 mm, 0.47 / 2.07 / 2.02 / 0.47 mm; 0.8 +5.6 mm all, 2.1-2.2 mm; 0.85 +5.67-+5.72 mm,
# 0.52-0.83 mm; 0.9 +6.6 mm all, 1.28-1.37 mm; 0.95 +7.1-+7.7 mm, 1.4-1.9 mm; 0.99 +7.5-+8.6 mm, 1.9-2.0 mm (session 13)
SHRINK_WIDTH_SHARE: float | None = 0.85
LIFT_LEAD_S = 0.05  # the rolled waist's target put inside the support as its legs put the feet (the report's, shrunk as
#   the lateral plan shrinks it), eased in over this before: a lift-off let go earlier than planned (core.balance.lift_off:
#   25-150 ms on the H1 walk) left the target crossing to the standing foot while the other was already up, and the ZMP,
#   which takes about 50 ms to settle after the target stops, left the standing sole (the H1 scaled 0.9: +2.8 mm at
#   4.865 s). H1 walk / scaled 0.9 / 2 / 4 rolled coarse passes, worst margin: 0.015 s +10.59 / +8.51 / +7.75 / +10.67
#   mm, 0.03 +9.92 / +10.52 / +8.17 / +10.81, 0.05 +10.61 / +10.61 / +10.81 / +10.57; 0 (none) +10.47 / +2.77 / +3.78 /
#   +6.22 (session 19)
CARRY_SAFETY = 0.1  # share of the roll's lateral reach left unused at each end
UNCARRIED_M = 0.005  # the lateral plan's CoM this far past what the roll carries is said (the H1 walk: never past it;
#                     held 2.4 s on one foot: 101 mm, as no posture within its joint limits stands it there,
#                     bench/h1_one_leg.py)
# the lateral plan's path weighs its snap, not its jerk: with absolute values of the jerk the planned ZMP
# jumped from edge to edge of the support (0.05 s high-pass: 47 mm RMS), where neither the cart-table ZMP of
# the path resampled at the cycle nor the multibody ZMP follows; and its support is hard (1e4 a metre past it,
# not 100: a smoother path otherwise leaves the feet). H1 walk (multibody ZMP RMS, outside): jerk 1e-6 as
# before 27.7 mm, 9.2 %;
# snap 5e-4 / 1e-3 / 3e-3 / 1e-2: 8.7 / 6.8 / 8.9 / 10.5 mm, 4.9 / 7.0 / 4.0 / 3.9 % (the feet's misses, not the plan)
LATERAL_SNAP_WEIGHT = 1e-3
LATERAL_EXCESS_WEIGHT = 1e4
COM_HEIGHT_SMOOTH_S = 0.05  # the CoM's height the lateral plan uses, smoothed over this (Gaussian sigma)


@dataclass
class GaitSettings:
    period_s: float = 0.005  # the robot's control cycle
    sensitivity: float = 1.0  # more keeps more representative points (more of the person's style)
    merge_s: float = 0.1  # representative points closer than this become one
    upper_body: bool = True  # arms and torso follow the clip (else they hold its median posture)
    waist_tilt: float = 0.5  # share of the person's pelvis tilt the robot's waist keeps
    lift_m: float = 0.015  # the straight lift after lift-off and lowering before touch-down
    prepare_s: float = 0.06
    zmp_offset_m: tuple[float, float] = (0.0, 0.0)  # target ZMP from the sole's centre, along the level foot
    correction: CorrectionSettings = field(default_factory=CorrectionSettings)
    # For legs without an ankle roll (the H1): the waist rolls and turns on the family that keeps both
    # soles flat (core.balance.sagittal), its CoM path planned within what that roll carries
    # (core.balance.lateral), the steps' width set by the roll. None (the default): on where the legs'
    # lowest three joints turn about one axis (planar_leg.planar_legs), off for legs with an ankle roll;
    # False forces the upright waist. The H1 walk at 200 Hz, rolled against upright: multibody ZMP RMS
    # 2.2 against 3.9 mm, worst margin +6 against -11 mm, outside 0 against 14.1 % of samples, stance
    # slide 0.5 against 139 mm, soles tilted 0.9 against 13 degrees, about 1.3 times the CPU (session 12).
    sagittal_waist: bool | None = None


@dataclass
class GaitResult:
    """Samples every period_s from 0: joints q (N, n), root pose, and the balance behind them."""

    joint_names: list[str]
    time_s: np.ndarray
    q: np.ndarray
    root_position: np.ndarray  # (N, 3) metres
    root_rotation: np.ndarray  # (N, 3, 3)
    period_s: float
    target_zmp: np.ndarray  # (N, 2) metres, world
    zmp: np.ndarray  # (N, 2) multibody
    com: np.ndarray  # (N, 3)
    report: dict


def generate_gait(motion: SourceMotion, tree: KinematicTree, mapping: Mapping, contacts="auto",
                  settings: GaitSettings | None = None, progress: Progress | None = None) -> GaitResult:
    """The gait of `motion` on `tree` (contacts: "auto" or per-foot flags, as for a bake).

    A robot rooted elsewhere than its pelvis (a URDF rooted at the torso) walks from its pelvis
    (core.model.reroot, as the bake does); the result is the URDF's own root pose and joints.
    A clip that holds its first or last pose walks the gait of the clip without its holds and
    stands over them, its waist running up into the walk and settling out of it (core.balance.holds)."""
    started = time.perf_counter(), time.process_time()  # the report's total_seconds, cpu_seconds
    settings = settings or GaitSettings()
    progress = progress or (lambda fraction, message: None)
    if not settings.period_s > 0:
        raise BalanceError(f"control period must be positive, got {settings.period_s!r} s")
    MassModel.build(tree)  # a robot without masses fails before the slow work
    _require_two_legs(tree, mapping)
    warnings: list[str] = []
    end_s = (motion.frames - 1) / motion.fps
    times = np.arange(int(np.floor(end_s / settings.period_s + 1e-9)) + 1) * settings.period_s
    holds = end_holds(motion, HELD_S)
    if holds:
        contacts = inner_contacts(contacts, holds, lambda given: resolve_contacts(given, motion, mapping, warnings))
        motion = motion.at_frames(np.arange(motion.frames)[holds.inner])
    walked_warnings: list[str] = []
    walked = _walked(motion, tree, mapping, contacts, settings, progress, walked_warnings)
    robot, tree, rerooted, plan, balanced, model, _ = walked
    if holds:
        c = settings.correction
        preview = PreviewSettings(settings.period_s, balanced.com_height_m, c.q, c.r, c.preview_s)
        plan, balanced = stand_over_holds(tree, plan, balanced, model, holds.lead / motion.fps, len(times), preview,
                                          c, walked_warnings)
    warnings += walked_warnings
    progress(0.95, "measuring")
    report = gait_report(tree, settings.period_s, plan, balanced, scaled_travel(motion, mapping, walked.root_scale), model,
                     warnings)
    root_pose = pose_matrices(plan.root_rot, balanced.root_position)
    q = balanced.q
    if rerooted is not None:  # back to the URDF's own root and joint order
        link = robot.robot.root_link
        root_pose = rerooted.original_pose(link, tree.link_transform(q, tree.link_index(link), root_pose))
        q = q[:, [tree.joint_names.index(name) for name in robot.joint_names]]
    if mapping.settings.avoid_self_collision:  # measured on the robot as given, after the report's warnings
        report.update(self_collision_figures(robot, mapping, q, root_pose, times, report["warnings"]))
    report.update(total_seconds=time.perf_counter() - started[0], cpu_seconds=time.process_time() - started[1])
    progress(1.0, "done")
    return GaitResult(robot.joint_names, times, q, root_pose[:, :3, 3].copy(), root_pose[:, :3, :3].copy(),
                      settings.period_s, plan.target, balanced.zmp, balanced.com, report)


class _Walked(NamedTuple):
    """A clip's gait before it is measured: the robot as given and as walked (re-rooted at its
    pelvis, rerooted the re-rooting or None), the plan and its balance, the mass model."""

    robot: KinematicTree
    tree: KinematicTree
    rerooted: object
    plan: GaitPlan
    balanced: Balanced
    model: MassModel
    root_scale: float | None  # the bake's leg-length scale (scaled_travel)


def _walked(motion: SourceMotion, tree: KinematicTree, mapping: Mapping, contacts, settings: GaitSettings,
            progress: Progress, warnings: list[str]) -> _Walked:
    """Retarget, plan and balance the clip (generate_gait without its measuring)."""
    given, flags = _walkable(motion, mapping, contacts, warnings)
    progress(0.0, "retargeting the clip")
    held = held_frames(motion, HELD_S)  # the bake solves a held pose once; the plan counts it once
    bake = retarget(motion, tree, mapping, contacts=flags, progress=lambda f, m: progress(0.4 * f, m),
                    figures=False)  # the bake's own report figures are not the gait's
    warnings += bake.report.get("warnings", [])
    robot = tree
    tree, rerooted = solved_robot(tree, mapping.robot_root)
    person = _from_pelvis(robot, tree, rerooted, bake.unplanted) if bake.unplanted is not None else None
    bake = _from_pelvis(robot, tree, rerooted, bake)
    model = MassModel.build(tree)
    progress(0.4, "planning feet and waist")
    end_s = (motion.frames - 1) / motion.fps
    times = np.arange(int(np.floor(end_s / settings.period_s + 1e-9)) + 1) * settings.period_s
    foot = FootSettings(settings.lift_m, settings.prepare_s, settings.sensitivity, settings.merge_s)
    plan = make_plan(tree, mapping, bake, flags, times, foot, settings.upper_body, settings.waist_tilt,
                     settings.zmp_offset_m, settings.correction.reach, warnings, person, settings.sagittal_waist,
                     held)
    _steps_warnings(tree, plan, warnings)
    progress(0.5, "balancing")
    balanced = _balance(tree, plan, model, bake, settings, warnings, given)
    return _Walked(robot, tree, rerooted, plan, balanced, model, bake.report.get("root_scale"))


def _steps_warnings(tree: KinematicTree, plan: GaitPlan, warnings: list[str]) -> None:
    """Say where the plan moved steps, or where the robot cannot lean over a foot."""
    if plan.steps_moved:
        b = plan.bounds
        bounds = (f"(up to {b.forward_m:.2f} m forward, {b.back_m:.2f} m back, feet {b.width_min_m:.2f}-"
                  f"{b.width_max_m:.2f} m apart, turning {np.degrees(b.turn_rad):.0f} degrees)")
        if any(plan.swings.values()):
            warnings.append(f"{plan.steps_moved} step(s) moved to the nearest the robot can take {bounds}; "
                            "later steps aim at the person's footprints again")
        else:  # a clip that never steps: what moved is the stance the person stands in
            warnings.append(f"the clip never steps, and the stance it stands in was moved to the nearest the robot "
                            f"can stand in {bounds}")
    if plan.bounds.lean < 0.5 and not plan.rolled:  # the rolled waist leans by rolling with both soles flat
        warnings.append(f"robot {tree.robot.name!r} can lean only {100 * plan.bounds.lean:.0f} % of the way toward "
                        "a foot with both soles flat (a leg without an ankle roll, or too little hip roll): "
                        "standing on one foot, that foot will tilt or slide; expect the ZMP outside the support")


def _from_pelvis(robot: KinematicTree, tree: KinematicTree, rerooted, bake: RetargetResult) -> RetargetResult:
    """The bake on `tree`, the robot re-rooted at its pelvis: the pelvis's pose as the root pose (its
    frame where the re-rooting puts it), the joints in that tree's order (the same bake when nothing
    was re-rooted)."""
    if tree is robot:
        return bake
    root = pose_matrices(bake.root_rotation, bake.root_position)
    link = tree.robot.root_link
    pelvis = rerooted.new_pose(link, robot.link_transform(bake.q, robot.link_index(link), root))
    q = bake.q[:, [robot.joint_names.index(name) for name in tree.joint_names]]
    return RetargetResult(tree.joint_names, q, pelvis[:, :3, 3].copy(), pelvis[:, :3, :3].copy(), bake.fps,
                          bake.report)


def _require_two_legs(tree: KinematicTree, mapping: Mapping) -> None:
    """A gait steps on a left and a right leg: an arm or a legless robot says so, not that the clip
    has no foot contacts."""
    legs = {c.side for c in mapping.chains if c.role == "leg" and c.enabled}
    missing = [side for side in SIDES if side not in legs]
    if missing:
        chains = ", ".join(c.name for c in mapping.chains if c.enabled) or "none"
        raise BalanceError(f"robot {tree.robot.name!r}: no {' and no '.join(missing)} leg mapped (chains: {chains}): "
                           "a gait steps on two legs; bake the clip instead, or map both legs")


def walkable_contacts(motion: SourceMotion, mapping: Mapping, contacts, warnings: list[str]) -> Contacts:
    """The clip's contacts as a gait uses them (core.balance.phases.gait_contacts); a clip with
    flight phases is refused naming their times."""
    return _walkable(motion, mapping, contacts, warnings)[1]


def _walkable(motion: SourceMotion, mapping: Mapping, contacts, warnings: list[str]) -> tuple[Contacts, Contacts]:
    """The clip's contacts as given or detected, and as the gait uses them (walkable_contacts)."""
    pelvis = mapping.source_root if mapping.source_root in motion.bone_names else motion.bone_names[0]
    refuse_flight(motion, pelvis, clip_metres_per_unit(motion, mapping))
    flags = resolve_contacts(contacts, motion, mapping, warnings)
    if flags is None or not flags.feet:
        raise BalanceError(f"clip {motion.name!r}: no foot contacts, so no steps to keep ({'; '.join(warnings)})")
    up = np.logical_and.reduce([~down for down in flags.feet.values()]) if len(flags.feet) == 2 else None
    soles = ({side: np.minimum(track.heel[:, 2], track.toe[:, 2]) for side, track in foot_tracks(motion, mapping).items()}
             if up is not None and up.any() else None)  # only a tie between the feet reads their heights
    given = flags
    flags, notes = gait_contacts(flags, heights=soles)
    warnings += notes
    unnamed = [side for side in SIDES if side not in flags.feet]
    if unnamed:  # a contacts file of one foot: the plan asked for the other and stopped with "error: right"
        raise BalanceError(f"clip {motion.name!r}: the contacts give no {unnamed[0]} foot; a gait steps with both "
                           "feet (give both in the contacts file)")
    never = [side for side, side_flags in flags.feet.items() if not side_flags.any()]
    if never:  # a clip shorter than a contact: say so, not "the right foot never touches the ground"
        short = (f"; a detected contact lasts at least {DetectSettings.min_contact_s} s"
                 if isinstance(contacts, str) and motion.frames / motion.fps <= DetectSettings.min_contact_s else "")
        raise BalanceError(f"clip {motion.name!r}: the {never[0]} foot is never on the ground over its "
                           f"{motion.frames} frame(s) ({motion.frames / motion.fps:.3f} s{short}): a gait needs "
                           "a stance for each foot")
    return given, flags


def _balance(tree: KinematicTree, plan: GaitPlan, model: MassModel, bake: RetargetResult,
             settings: GaitSettings, warnings: list[str], given: Contacts) -> Balanced:
    """Balance the waist every BALANCE_PERIOD_S, then solve the legs at every control cycle."""
    period = settings.period_s
    stride = max(1, int(round(BALANCE_PERIOD_S / period)))
    rows = np.arange(0, len(plan.times), stride)
    coarse, rough, com_height = _coarse_stage(tree, plan, model, bake, settings, warnings, rows, stride)
    fine = Corrector(tree, plan.legs, model, {link: path.poses for link, path in plan.paths.items()},
                     {link: path.down for link, path in plan.paths.items()}, plan.root_rot,
                     _resample(plan.times[rows], coarse.height, plan.times), plan.q, period, settings.correction,
                     plan.level_tol, plan.rolled)
    if coarse.family is not None and coarse.family.params is not None:  # the waist's roll from where it got
        fine.family.params = _resample(plan.times[rows], coarse.family.params, plan.times)
    legs = np.concatenate([leg.columns for leg in plan.legs])
    guess = plan.q.copy()
    guess[:, legs] = _resample(plan.times[rows], rough.q[:, legs], plan.times)
    # the waist's command: where it stands, or for the rolled waist where an upright one would (its place
    # across is the family's, added again by the fine placement: it was resampled from the placed waist,
    # and the H1 walk's fine passes started 0.1 m and 0.18 rad from the coarse waist, 111 mm RMS against 24)
    command = rough.root_position[:, :2] if coarse.family is None else coarse.command
    xy = _resample(plan.times[rows], command, plan.times)
    # the height fitted again: a stance's last few cycles (the rolled waist too: with one round, as its
    # figures were measured before its target and passes were mended, its legs missed their feet by up to
    # 19 mm where the passes had rolled a hip up, H1 walk outside 7.0 %; with two 4.6 %)
    # the contacts end and start on the clip's frames: within one, a foot lifts off where its leg lets it go
    # (lands where it reaches), before the height is fitted for it (fitted, it fought the next stance's height)
    limits = swing_limits(plan.swings, given, 1.0 / bake.fps)

    def let_go(q: np.ndarray, root_pos: np.ndarray) -> int:
        return swing_where_feet_let_go(fine, q, root_pos, plan.paths, plan.swings, limits)

    q, root_pos, _ = fine.solve_standing(guess, xy, rounds=2, settle=let_go)
    com_path = _resample(plan.times[rows], rough.com_path, plan.times)
    # what the coarse samples did not see (the swing legs between them): a few passes at the cycle
    q, root_pos, com_path, zmp, com = refine(fine, q, root_pos, xy, com_path, plan.target, com_height, FINE_PASSES)
    if fine.family is not None:
        q, root_pos, com_path, zmp, com = _rolled_passes(tree, fine, plan, q, root_pos, com_path, com_height)
    let_go(q, root_pos)  # and where the passes' waist let it go
    plan.root_rot = fine.root_rot  # the waist as it stands: its tilt given up where a foot could not stand
    c = settings.correction
    _, cart_zmp = follow_zmp(plan.target, PreviewSettings(period, com_height, c.q, c.r, c.preview_s))
    return Balanced(q, root_pos, com_path, cart_zmp, zmp, com, com_height, rough.height_change_m)


def _coarse_stage(tree: KinematicTree, plan: GaitPlan, model: MassModel, bake: RetargetResult,
                  settings: GaitSettings, warnings: list[str], rows: np.ndarray, stride: int):
    """The waist balanced on the samples `rows` (every `stride`-th control cycle): its Corrector, the correction's
    result and the CoM height the cart-table model assumes. Too fast swings are calmed as it goes (replan);
    the rolled waist's CoM is first planned where the roll carries it (carried_path)."""
    period = settings.period_s * stride
    coarse = Corrector(tree, plan.legs, model, {link: path.poses[rows] for link, path in plan.paths.items()},
                       {link: path.down[rows] for link, path in plan.paths.items()}, plan.root_rot[rows],
                       plan.height[rows], plan.q[rows], period, settings.correction, plan.level_tol,
                       plan.rolled)
    clip_root = pose_matrices(bake.root_rotation, bake.root_position)
    clip_com = centre_of_mass(tree, bake.q, clip_root, model)
    # where the waist is from the CoM, in the waist's own frame (the robot turns)
    local = np.median(np.einsum("fji,fj->fi", bake.root_rotation, bake.root_position - clip_com), axis=0)
    offset = np.einsum("fij,j->fi", plan.root_rot, local)[:, :2]

    def replan(q_now: np.ndarray, root_now: np.ndarray) -> bool:  # issue 12, step 4
        rate = 1.0 / period
        zmp, com = coarse.zmp(q_now, root_now[:, :3, 3])  # the readout's ZMP, the links no leg moves weighed once
        push = com_push(com, rate)  # unfiltered
        thrown = np.linalg.norm(zmp - plan.target[rows], axis=1)
        moved = False
        for link, path in plan.paths.items():
            moved |= project_person_points(path, plan.times[rows], tree.link_transform(q_now, link, root_now))
            for knots in path.swings:  # a swing so fast the robot cannot keep its balance is calmed
                inside = (plan.times[rows] >= knots.times[0]) & (plan.times[rows] <= knots.times[-1])
                if inside.any() and (push[inside].min() < MIN_PUSH
                                     or thrown[inside].max() > MAX_THROW_M):
                    tame_swing(path, knots, TAME_SHARE)
                    moved = True
        if moved:
            coarse.goals = {link: path.poses[rows] for link, path in plan.paths.items()}
        return moved

    com_height = float(np.mean(clip_com[:, 2]))
    path = None
    if coarse.family is not None:  # legs without an ankle roll: the CoM only where the roll carries it
        com, zmp, heights, short = carried_path(coarse, plan, rows, offset[rows], com_height, settings.correction)
        warnings += uncarried_warning(plan.times[rows], short)
        # the target is the plan's own ZMP, which the programme kept inside the support; the cart-table ZMP
        # of a spline through its CoM (its second derivative) left the support by up to 0.19 m at the
        # phase changes (the H1 walk: 21.7 mm RMS from the programme's ZMP at its own samples)
        plan.target, path = _resample_linear(plan.times[rows], zmp, plan.times), (com, zmp)
    passes = None if coarse.family is None else min(settings.correction.passes, ROLLED_COARSE_PASSES)
    rough = balance(coarse, plan.q[rows], offset[rows], com_height, plan.target[rows], replan, path, passes)
    plan.root_rot = keep_tilt(plan.root_rot, np.interp(plan.times, plan.times[rows], coarse.tilt_kept))
    return coarse, rough, com_height


def _rolled_passes(tree: KinematicTree, fine: Corrector, plan: GaitPlan, q: np.ndarray, root_pos: np.ndarray,
                   com_path: np.ndarray, com_height: float):
    """The rolled waist after its first control-cycle passes: they carried it on after its height was fitted,
    and the trailing leg of a long step came up to 10 mm short of its foot (H1 walk, 6.03-6.05 s), so the
    height is fitted again where the passes left the waist, then the passes again from there; before each, a
    trailing foot that cannot stand before its lift-off rolls onto its toe (core.balance.trailing)."""
    toes, heels = _edges(tree, plan, 1.0), _edges(tree, plan, -1.0)
    q = roll_trailing_feet(fine, q, root_pos, plan.paths, toes, heels)
    q, root_pos, _ = fine.solve_standing(q, fine.command, rounds=2)
    plan.target = _onto_feet(fine, q, root_pos, plan)
    q, root_pos, com_path, zmp, com = refine(fine, q, root_pos, fine.command, com_path, plan.target, com_height,
                                             ROLLED_FINE_PASSES, stall_share=np.inf)  # ROLLED_FINE_PASSES' note
    rolled = roll_trailing_feet(fine, q, root_pos, plan.paths, toes, heels)
    if not equal_bits(rolled, q):  # else refine's best pass measured these legs under this waist already
        zmp, com = fine.zmp(rolled, root_pos)
    q = rolled
    plan.target = _onto_feet(fine, q, root_pos, plan)
    # then the few cycles short of issue 12's margin (a touch-down's jerk, a heel the trailing roll raised
    # after the target was planned): the target moved inward there (core.balance.margin)
    return toward_margin(fine, q, root_pos, com_path, plan.target, com_height, plan.paths, zmp, com)


def _onto_feet(fine: Corrector, q: np.ndarray, root_pos: np.ndarray, plan: GaitPlan) -> np.ndarray:
    """The plan's target inside the support as the legs q under root_pos put the feet, shrunk as the
    lateral plan shrinks it (core.balance.target.onto_support)."""
    if LIFT_LEAD_S <= 0:
        return plan.target
    return onto_support(plan.target, *ground_polygons(fine, q, root_pos, plan.paths), SUPPORT_SHRINK_M,
                        SHRINK_WIDTH_SHARE, fine.period, LIFT_LEAD_S)


def _edges(tree: KinematicTree, plan: GaitPlan, way: float) -> dict[int, Edge]:
    """Each foot link's toe edge (way +1) or heel edge (-1: the edge of the robot's backward, whose
    positive roll lifts the toe) (core.balance.rollover), the foot standing level."""
    zero = tree.zero_pose()
    return {leg.foot: toe_edge(plan.bodies[leg.foot], leg.flat @ zero[leg.base, :3, :3], way * plan.bounds.forward_axis)
            for leg in plan.legs}


def carried_path(coarse: Corrector, plan: GaitPlan, rows: np.ndarray, offset: np.ndarray, com_height: float,
                 settings: CorrectionSettings) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(CoM, cart-table ZMP) (R, 2) on the coarse samples rows for legs without an ankle roll, the
    CoM's height (R,) and how far (R,) metres the CoM is planned past what the roll carries: the
    path whose ZMP follows the plan's target as closely as it can while staying SUPPORT_SHRINK_M
    inside the support polygon, its CoM across within what the waist's roll carries
    (core.balance.lateral; where both cannot hold, the support wins and the legs miss their feet).
    The ZMP is the target the robot can then meet. The waist's height is fitted first: where the
    legs cannot stand it moves the CoM by centimetres, which the cart-table's ZMP must know."""
    preview = PreviewSettings(coarse.period, com_height, settings.q, settings.r, settings.preview_s)
    com, _ = follow_zmp(plan.target[rows], preview)
    coarse.fit_height(plan.q[rows], com + offset)
    across, lo, hi, heights = coarse.lateral_range(plan.q[rows], com + offset)
    heights = gaussian_filter1d(heights, COM_HEIGHT_SMOOTH_S / coarse.period, mode="nearest")
    room = hi - lo
    op = zmp_operator(len(rows), coarse.period, heights)
    polygons = _support_polygons(plan, rows)
    planned = plan_path(plan.target[rows], coarse.period, heights, LATERAL_SNAP_WEIGHT,
                        [support_constraints(polygons, op, SUPPORT_SHRINK_M, SHRINK_WIDTH_SHARE),
                         band_constraints(across, lo + CARRY_SAFETY * room, hi - CARRY_SAFETY * room)],
                        order=4, excess_weight=LATERAL_EXCESS_WEIGHT)
    reach = np.einsum("fi,fi->f", across, planned.com)
    short = np.maximum(np.maximum(lo - reach, reach - hi), 0.0)  # past the roll's whole reach
    return planned.com, planned.zmp, heights, short


def uncarried_warning(times: np.ndarray, short: np.ndarray) -> list[str]:
    """The warning (none or one) where the CoM is planned further across than the waist's roll
    carries it by more than UNCARRIED_M (short (R,) metres at times (R,) s): a long stance on one
    foot of legs without an ankle roll, whose hips' roll stops before the body is over the foot."""
    over = short > UNCARRIED_M
    if not over.any():
        return []
    at = times[over]
    return [f"the waist's roll cannot carry the CoM over the standing foot at {at[0]:.2f}-{at[-1]:.2f} s (up to "
            f"{1000 * short.max():.0f} mm short): legs without an ankle roll lean the body over one foot only by "
            "rolling the waist, as far as the hips' roll allows; the stance foot rolls onto its edge or the ZMP "
            "leaves it there"]


def _support_polygons(plan: GaitPlan, rows: np.ndarray) -> list[np.ndarray | None]:
    """The planned support polygon at each of rows: the hull of the feet that are down. A planted
    foot stands still, so the H1 walk's 829 samples have 23 polygons: each hull is taken once."""
    links = list(plan.paths)
    points = [plan.bodies[link].world(plan.paths[link].poses[rows]) for link in links]
    out, hulls = [], {}
    for k in range(len(rows)):
        down = [i for i, link in enumerate(links) if plan.paths[link].down[rows[k]]]
        if not down:
            out.append(None)
            continue
        corners = np.concatenate([points[i][k] for i in down])
        key = (tuple(down), corners.tobytes())
        if key not in hulls:
            hulls[key] = support_polygon(corners, 0.0, np.concatenate([plan.bodies[links[i]].radius for i in down]))
        out.append(hulls[key])
    return out


def _resample_linear(t: np.ndarray, values: np.ndarray, times: np.ndarray) -> np.ndarray:
    """Straight lines through (t, values (R, 2)) at times (N,): a ZMP inside each sample's support
    polygon stays inside between two samples on the same polygon (a cubic overshoots)."""
    return np.column_stack([np.interp(times, t, column) for column in values.T])


def _resample(t: np.ndarray, values: np.ndarray, times: np.ndarray) -> np.ndarray:
    """Cubic through (t, values) at times, held at the last value past its end."""
    if len(t) < 4:
        return np.array([np.interp(times, t, column) for column in np.atleast_2d(values.T)]).T.reshape(
            (len(times),) + values.shape[1:])
    return CubicSpline(t, values, axis=0, extrapolate=True)(np.clip(times, t[0], t[-1]))
