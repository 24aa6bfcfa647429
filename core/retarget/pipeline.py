"""Retarget a source clip onto a robot by matching normalised chain shapes.

Order of work: body frames and root first, then chains by the depth of their
robot base (spine before arms, legs before feet), each chain solved through
the pose solved so far; then low-pass filtering inside joint limits, ground
contact and the report.
"""
from __future__ import annotations

import os
import time
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Callable

import numpy as np

from .body_parts import find_body_parts, robot_skeleton
from .facing import solved_robot, up_note
from .chain_plans import RetargetError, RootPlan, body_frames, chain_targets, plan_chains
from .mapping_check import mapping_figures
from .neutral import neutral_posture, standing_root
from .torso import TorsoAim, chest_target
from .viewer import angle_deg, limb_ends, viewer_figures
from ..motion.filtering import lowpass, mean_abs_jerk, step_limits
from ..feet.plant import Leg, PlantResult, PlantSettings, cancel_residual_slide, plant_feet
from ..feet.report import contact_figures, contact_warnings, holding_bodies, resolve_contacts
from ..feet.contacts import Contacts, DetectSettings
from ..model.kinematics import KinematicTree, ancestor_path
from ..model.mesh_paths import missing_meshes
from ..model.urdf import Robot
from ..chains.mapping import Mapping, RetargetSettings
from ..chains.separation import separate_chain, separate_chains
from ..chains.solver import SolveOptions, rate_limit, solve_chain
from ..collision import collision_pairs
from ..collision.avoid import Separation, collision_figures
from ..collision.clearance import TargetClearance
from ..motion.source import SourceMotion, bridged, held_frames
from ..model.transforms import matrix_to_quat, pose_matrices, quat_continuous

Progress = Callable[[float, str], None]
FAR_TIP_DEG = 25.0  # a limb chain whose tip points this far from the actor's on average is said in the warnings
#                    (not a hand: a clip's hands are a few centimetres of noisy markers)
HELD_S = 0.1  # a pose repeated exactly for longer than this is a hold (a T-pose, a clip padded at its ends): solved once
FLOAT_WARN_M = 0.05  # feet this far above (on 3 of 4 frames) the ground the clip's lowest frame set are said in the warnings
PLANTED_ROLES = ("leg", "foot")  # chains that make room in their own solve, not at the bake's end
# a hand's targets give its direction only: the turn they leave free (the wrist's roll with a compensating bend)
# is pulled toward the neutral posture, this many times the rest prior (the settings' own: 0 turns both off), so
# every frame settles on the least rotation from neutral whatever the frame before had (the walk at 60 fps baked
# the G1's wrists 3.2 rad apart)
HAND_FREE_PRIOR = 100.0
# with avoidance, a hand's targets turned out of the trunk before its solve (core.collision.clearance): keep_apart
# finds fewer, shallower frames: the G1's avoiding command 10.42 / 10.46 -> 9.79 / 9.46 G (walk / hop), limbs +0.69 /
# +0.96 -> +0.31 / +0.65 deg over off, jerk 2,323 / 2,725 -> 1,527 / 1,625 (docs/history/self_collision.md, session 30);
# env ROBOT_RETARGET_CLEAR_TARGETS=0 turns it off (measurements)
CLEAR_TARGETS = os.environ.get("ROBOT_RETARGET_CLEAR_TARGETS", "") != "0"
CLEAR_ROUNDS = 0  # solves again to targets moved on by what the solved points still lack (1: a second solve, ~0.1 s)
CLEAR_REPAIRS = False  # True: a cleared hand's jumps tracked (solver._repair_jumps: the turned targets start ~60 more
#                       tracking steps on the G1 hop); False: only rate-limited, keep_apart remakes the hand anyway


@dataclass
class RetargetResult:
    """Joint positions q (F, n) in radians (metres for prismatic), root pose per frame."""

    joint_names: list[str]
    q: np.ndarray
    root_position: np.ndarray  # (F, 3) metres, world
    root_rotation: np.ndarray  # (F, 3, 3)
    fps: float
    report: dict = field(default_factory=dict)
    unplanted: "RetargetResult | None" = None  # a planted bake before planting: feet where the scaled clip has them
    #                                             (with avoidance, the chains that make room as the bake has them)

    @property
    def root_quaternion(self) -> np.ndarray:
        """(F, 4) wxyz, sign-continuous over frames."""
        return quat_continuous(matrix_to_quat(self.root_rotation))

    def at_frames(self, index: np.ndarray) -> "RetargetResult":
        """The bake played at its frames `index` (a frame may repeat: a held pose)."""
        unplanted = None if self.unplanted is None else self.unplanted.at_frames(index)
        return RetargetResult(self.joint_names, self.q[index], self.root_position[index], self.root_rotation[index],
                              self.fps, self.report, unplanted)


def retarget(motion: SourceMotion, tree: KinematicTree, mapping: Mapping,
             settings: RetargetSettings | None = None, progress: Progress | None = None,
             contacts=None, figures: bool = True) -> RetargetResult:
    """Solve joint angles for every frame of `motion`; never stops on an impossible pose.

    contacts: None or "off" (feet follow the chain shapes, the clip is put on
    the ground), "auto" (detected from the clip) or a core.contacts.Contacts /
    {side: bool array (F,)}: feet in contact stay planted (core.feet.plant).
    figures: False for a caller that uses the motion only (the gait): the report keeps its
    source, robot, frames, warnings and mapping, not the fit, contact, viewer and collision figures.
    """
    held = held_frames(motion, HELD_S)
    if held.any():
        return _held_once(motion, held, tree, mapping, settings, progress, contacts, figures)
    settings = settings or mapping.settings
    progress = progress or (lambda fraction, message: None)
    warnings: list[str] = []
    stages = StageTimer()
    robot = tree
    # a robot rooted at its torso is solved from its pelvis (mapping.robot_root), its root frame facing where
    # the robot does, then carried back
    tree, rerooted = solved_robot(tree, mapping.robot_root)
    if motion.frames == 0:
        raise RetargetError(f"source {motion.name!r} has no frames to retarget")
    with stages("plan"):
        motion = _bridged(motion, warnings)
        # an arm (no leg chain, no legs on the robot): its warnings spoke of feet it does not have
        legless = not any(c.role == "leg" for c in mapping.enabled_chains()) and \
            not find_body_parts(robot_skeleton(tree)).legs
        _warn_missing_meshes(robot.robot, warnings, legs=not legless)
        plans, root, root_scale, targets, aim, axes_rob = _plan(motion, tree, mapping, settings, warnings)
        pairs = checked_pairs(tree, mapping)
        apart = Separation(tree, pairs, settings.collision_margin, order=[p.kin.chain.variables for p in plans]) \
            if settings.avoid_self_collision else None
    with stages("solve"):
        q = solve_chains(motion, tree, plans, root, targets, settings, progress, axes_rob, aim, apart)
        root_rot, root_pos = root[:, :3, :3].copy(), root[:, :3, 3].copy()  # the torso may lean the root
    progress(0.95, "filtering")
    with stages("filter"):
        raw = q.copy()
        q = lowpass(q, motion.fps, method=settings.filter, cutoff_hz=settings.cutoff_hz,
                    window=settings.window, lower=tree.lower, upper=tree.upper)
        q = rate_limit(q, step_limits(tree.velocity, motion.fps))
    progress(0.96, "planting feet")
    with stages("contacts"):
        flags = resolve_contacts(contacts, motion, mapping, [] if legless else warnings)
    with stages("plant"):
        legs = [Leg.build(tree, p.mapping.side, p.kin, *targets[id(p)], p.robot.anchor)
                for p in plans if p.mapping.role == "leg" and p.mapping.side in ("left", "right")]
        planted = _plant(tree, legs, q, root_rot, root_pos, flags, motion.fps, settings, warnings, apart)
    free = (q.copy(), root_pos.copy()) if planted is not None else None  # the root on the scaled clip's path
    with stages("ground"):
        q, root_pos = (planted.q, planted.root_position) if planted else (
            q, _ground(tree, plans, legs, q, root_rot, root_pos, settings, warnings))
        root = pose_matrices(root_rot, root_pos)
    if apart is not None:
        with stages("separate"):
            keep_apart(tree, plans, q, root, targets, settings, apart, motion.fps)
        if free is not None:  # the room, made once against the planted legs, is the unplanted motion's too
            made = np.concatenate([np.zeros(0, dtype=int), *(p.kin.columns for group in room_groups(tree, plans)
                                                              for p in group)])
            free[0][:, made] = q[:, made]
    with stages("report"):
        report = _bake_report(motion, tree, robot, mapping, plans, targets, legs, q, raw, root, root_scale, flags,
                              planted is not None, pairs, apart, stages.seconds["solve"], warnings, figures)
    report.update(stages.report(len(q)))
    unplanted = None
    if free is not None:
        unplanted = RetargetResult(robot.joint_names, *_urdf_root(robot, tree, rerooted, free[0],
                                                                  pose_matrices(root_rot, free[1])), motion.fps)
    progress(1.0, "done")
    return RetargetResult(robot.joint_names, *_urdf_root(robot, tree, rerooted, q, root), motion.fps, report,
                          unplanted)


def _bake_report(motion, tree, robot, mapping, plans, targets, legs, q, raw, root, root_scale, flags,
                 planted: bool, pairs, apart, solve_s: float, warnings: list[str], figures: bool) -> dict:
    """The bake's report: the fit, contact, viewer and collision figures (figures: False keeps the
    source, robot, frames and warnings only, for a caller that uses the motion alone), then the mapping."""
    if figures:
        report = _report(motion, tree, plans, targets, q, raw, root, solve_s, warnings)
        measured = flags if flags is not None else resolve_contacts("auto", motion, mapping, [])
        report.update(_figures(motion, tree, plans, report["chains"], legs, q, root, measured, planted,
                               pairs, apart, warnings))
    else:
        report = {"source": motion.name, "robot": tree.robot.name, "frames": int(len(q)),
                  "fps": float(motion.fps), "warnings": warnings}
    _mapping_report(report, motion, robot, mapping, root_scale, warnings)
    return report


def _plan(motion: SourceMotion, tree: KinematicTree, mapping: Mapping, settings: RetargetSettings,
          warnings: list[str]):
    """The chains to solve, the root's path (poses (F, 4, 4) and the scale of a floating root, else None),
    each chain's reference-point targets by id(plan), the torso's aim and the robot's body axes."""
    plans = plan_chains(motion, tree, mapping, warnings)
    if not plans:
        raise RetargetError("no chain could be mapped between the source and the robot")
    body_src, axes_rob = body_frames(motion, tree, mapping)
    root_rot, root_pos, root_scale = _root_path(motion, tree, plans, settings, body_src @ axes_rob.T)
    body_rob = root_rot @ axes_rob
    root = pose_matrices(root_rot, root_pos)
    targets = {id(plan): chain_targets(motion, plan, body_src, body_rob) for plan in plans}
    aim = torso_aim(motion, tree, mapping, plans, targets, body_rob @ np.swapaxes(body_src, 1, 2), root_rot,
                    root_scale is not None)
    return plans, root, root_scale, targets, aim, axes_rob


def _mapping_report(report: dict, motion: SourceMotion, robot: KinematicTree, mapping: Mapping, root_scale,
                    warnings: list[str]) -> None:
    """The mapping's figures and its reasons and notes as warnings; what was assumed of a robot written Y-up."""
    report.update(mapping_figures(motion, mapping), root_scale=root_scale)
    warnings += [f"mapping: {reason}" for reason in report["mapping"]["reasons"]]
    warnings += [f"auto-map: {note}" for note in mapping.notes]
    upright = up_note(robot, mapping.robot_root)
    if upright is not None and not any(upright in note for note in mapping.notes):
        warnings.append(upright)  # a preset on a robot written Y-up: what was assumed


def _held_once(motion, held, tree, mapping, settings, progress, contacts, figures) -> RetargetResult:
    """The bake with each held pose (`held` (F,), core.motion.source.held_frames) solved once, played at the
    clip's frames: the solve's coarse grid and the feet's stance medians read a hold as many frames, and the
    walk held 0.85 s came out another walk (a leg 1 rad apart). The report's figures weigh a held pose once."""
    kept = np.flatnonzero(~held)
    bake = retarget(motion.at_frames(kept), tree, mapping, settings, progress,
                    _at_frames(contacts, kept, motion.frames), figures)
    index = np.cumsum(~held) - 1
    bake.report["frames"] = int(motion.frames)
    if "self_collision_frames" in bake.report:
        hit = np.isin(index, bake.report["self_collision_frames"])
        bake.report["self_collision_frames"] = [int(f) for f in np.flatnonzero(hit)]
    return bake.at_frames(index)


def _at_frames(contacts, kept: np.ndarray, frames: int):
    """Given contacts (None, "off", "auto", Contacts or {side: flags (F,)}) at frames `kept`
    (as given when they are not the clip's `frames`: resolve_contacts says so)."""
    if contacts is None or isinstance(contacts, str):
        return contacts
    feet = contacts.feet if isinstance(contacts, Contacts) else contacts
    if any(len(down) != frames for down in feet.values()):
        return contacts
    flags = {side: np.asarray(down)[kept] for side, down in feet.items()}
    return Contacts(flags, contacts.fps) if isinstance(contacts, Contacts) else flags


def _urdf_root(robot: KinematicTree, tree: KinematicTree, rerooted, q: np.ndarray,
               root: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """q, and the root position (F, 3) and rotation (F, 3, 3) of the URDF's own root link for a
    bake solved on `tree` (the robot hung from its pelvis when rerooted is not None)."""
    if rerooted is None:
        return q, root[:, :3, 3].copy(), root[:, :3, :3].copy()
    root_link = robot.robot.root_link
    pose = rerooted.original_pose(root_link, tree.link_transform(q, tree.link_index(root_link), root))
    return q, pose[:, :3, 3].copy(), pose[:, :3, :3].copy()


def _root_path(motion, tree, plans, settings, floating_rot) -> tuple[np.ndarray, np.ndarray, float | None]:
    """The root's rotation (F, 3, 3) and position (F, 3) before the solve, and the leg-length scale of
    its travel: the actor's hips scaled where the robot's legs are driven (floating_rot, from the body
    frames), else a fixed base (None scale): at the origin, or standing on legs the clip does not drive."""
    frames = motion.frames
    driven_legs = any(p.mapping.role == "leg" for p in plans)
    if driven_legs and settings.root_mode != "fixed":
        plan = RootPlan.build(motion, tree, plans, settings)
        return floating_rot, plan(motion.heads, floating_rot), plan.scale
    root_rot = np.broadcast_to(np.eye(3), (frames, 3, 3)).copy()
    return root_rot, np.tile(standing_root(tree, driven_legs), (frames, 1)), None


def _figures(motion, tree, plans, chains, legs, q, root, contacts, planted: bool, pairs, apart, warnings) -> dict:
    """The report's contact, viewer and self-collision figures, and the warnings they call for (feet
    that float, slide or sink; a limb chain that cannot take the actor's posture)."""
    out = contact_figures(tree, legs, q, root, contacts, motion.fps)
    out["feet_planted"] = planted
    held_by = (lambda: holding_bodies(tree, legs, q, root, contacts)) if contacts is not None else None
    warnings += contact_warnings(out, planted, held_by)
    warnings += [f"chain {c['name']!r}: its tip points {c['tip_direction_error_deg']:.0f} degrees from the actor's "
                 "on average: the robot cannot take that limb's posture (its joints' ranges, its proportions) or "
                 "the chain is mapped to another limb"
                 for c, plan in zip(chains, plans) if c["tip_direction_error_deg"] > FAR_TIP_DEG
                 and plan.mapping.role != "hand"]
    out.update(viewer_figures(motion, tree, [p.mapping for p in plans], q, root))
    out.update(collision_figures(tree, pairs, q, root, apart.margin if apart is not None else 0.0),
               self_collision_avoided=apart is not None)
    return out


class StageTimer:
    """Seconds per stage of a bake, so the report's speed is the whole bake's, not one stage's."""

    def __init__(self):
        self.seconds: dict[str, float] = {}

    @contextmanager
    def __call__(self, stage: str):
        started = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[stage] = self.seconds.get(stage, 0.0) + time.perf_counter() - started

    def report(self, frames: int) -> dict:
        """frames_per_second over the whole bake, and every stage's seconds."""
        total = sum(self.seconds.values())
        return {"frames_per_second": float(frames / total) if total > 0 else float("inf"),
                "total_seconds": float(total),
                "stage_seconds": {stage: float(s) for stage, s in self.seconds.items()}}


def solve_chains(motion, tree, plans, root, targets, settings, progress, axes_rob, aim=None,
                 apart: Separation | None = None) -> np.ndarray:
    """Every chain in tree order, each through the pose solved so far: q (F, n).

    aim: (spine plan, core.retarget.torso.TorsoAim) solves the spine again while the torso is
    short of the actor's chest, tilting `root` in place when the waist cannot lean far enough.
    apart: keeps the robot's checked link pairs apart (a later chain gives way to the ones before):
    here the legs and feet only, whose swing frames planting keeps; every other chain makes room
    once, at the end of the bake (keep_apart), after filtering and planting have moved it.
    """
    neutral = neutral_posture(motion, tree, plans, targets, axes_rob, settings.rest_prior)
    options = SolveOptions(settings.iterations, settings.smoothness, settings.rest_prior, settings.objective,
                           rest=neutral)
    q = np.zeros((len(root), tree.dof))
    q[:] = neutral
    clear = _clearances(tree, plans, root, apart) if apart is not None and CLEAR_TARGETS else {}
    for k, plan in enumerate(plans):
        progress(k / len(plans), f"solving chain {plan.mapping.name}")
        max_step = step_limits(tree.velocity[plan.kin.columns], motion.fps)
        step = options if plan.mapping.role != "hand" else \
            replace(options, free_prior=HAND_FREE_PRIOR * options.rest_prior)
        while True:
            anchor = root if plan.robot.anchor < 0 else tree.link_transform(q, plan.robot.anchor, root)
            goal, weights = targets[id(plan)]
            if id(plan) in clear:
                _solve_cleared(tree, plan, anchor, q, root, goal, weights, clear[id(plan)], step, max_step)
            else:
                solve_chain(tree, plan.kin, anchor, q, goal, weights, step, max_step)
            if apart is not None and plan.mapping.role in PLANTED_ROLES:
                separate_chain(tree, plan.kin, anchor, q, *targets[id(plan)],
                               apart.term(plan.kin.chain.variables, root), step, max_step)
            turned = aim[1].next_targets(q, root) if aim is not None and plan is aim[0] else None
            if turned is None:
                break
            targets[id(plan)] = (turned, targets[id(plan)][1])
            step = replace(step, iterations=max(2, options.iterations // 2))  # from the solved pose: close
    return q


def _clearances(tree, plans, root, apart: Separation) -> dict:
    """{id(plan): TargetClearance} of the arms and the chains hanging from them (room_groups), before their
    solve: their targets moved out of the bodies they are checked against."""
    out = {}
    for group in room_groups(tree, plans):
        if group[0].mapping.role != "arm":
            continue
        for plan in group:
            term = apart.term(plan.kin.chain.variables, root)
            clearance = TargetClearance.build(tree, term, plan.kin, apart.margin, hand=plan is not group[0])
            if clearance is not None:
                out[id(plan)] = clearance
    return out


def _solve_cleared(tree, plan, anchor, q, root, goal, weights, clearance: TargetClearance, step, max_step) -> None:
    """solve_chain to the targets moved out of the bodies posed at q (its origin where q puts it); then,
    CLEAR_ROUNDS times, to the targets moved on by as much as the solved points still need to move out
    (the chain's least squares falls short of targets it cannot take exactly)."""
    link, local = plan.robot.origin
    pose = tree.link_transform(q, link, root)
    origin = pose[:, :3, :3] @ local + pose[:, :3, 3]
    goal = clearance(q, root, origin, goal)
    if not CLEAR_REPAIRS and plan.mapping.role != "arm":  # an arm (its elbow swivelled) is tracked as uncleared
        solve_chain(tree, plan.kin, anchor, q, goal, weights, step)
        q[:, plan.kin.columns] = rate_limit(q[:, plan.kin.columns], max_step)
        return
    solve_chain(tree, plan.kin, anchor, q, goal, weights, step, max_step)
    for _ in range(CLEAR_ROUNDS):
        points, _ = plan.kin.evaluate(tree, anchor, q, False)
        pose = tree.link_transform(q, link, root)
        origin = pose[:, :3, :3] @ local + pose[:, :3, 3]
        short = clearance(q, root, origin, points) - points
        if not short.any():
            break
        goal = goal + short
        solve_chain(tree, plan.kin, anchor, q, goal, weights, replace(step, iterations=max(2, step.iterations // 2)),
                    max_step)


def torso_aim(motion, tree, mapping, plans, targets, to_robot, root_rot, floating):
    """(spine plan, TorsoAim) with the spine's first targets set, or None without a chest to follow."""
    chest = chest_target(motion, mapping.chains, to_robot)
    spine = next((p for p in plans if p.mapping.role == "spine" and p.kin.chain.variables), None)
    if chest is None or spine is None:
        return None
    aim = TorsoAim(tree, mapping.chains, spine.kin, chest, floating)
    targets[id(spine)] = (aim.first_targets(root_rot), targets[id(spine)][1])
    return spine, aim


def _bridged(motion: SourceMotion, warnings: list[str]) -> SourceMotion:
    """Fill NaN frames by interpolation so one bad frame never stops a bake."""
    try:
        motion, frames = bridged(motion)
    except ValueError as exc:
        raise RetargetError(str(exc)) from None
    if len(frames):
        warnings.append(f"bridged {len(frames)} frame(s) with missing values (first: frame {frames[0]})")
    return motion


def _foot_heights(tree, plans, q, root) -> np.ndarray | None:
    """Lowest foot point per frame (F,), from the tips of leg and foot chains."""
    tips = [p.robot.paths[0].tip_local for p in plans if p.mapping.role in ("leg", "foot")]
    if not tips:
        return None
    heights = []
    for link, local in tips:
        pose = tree.link_transform(q, link, root)
        heights.append(np.einsum("fj,j->f", pose[:, 2, :3], local) + pose[:, 2, 3])
    return np.min(heights, axis=0)


def keep_apart(tree, plans, q, root, targets, settings, apart: Separation, fps: float) -> None:
    """Every chain but the legs and feet (which keep their planted soles) makes room once, after
    filtering and planting, in place, in tree order; a hand together with the arm it hangs from."""
    options = SolveOptions(settings.iterations, settings.smoothness, settings.rest_prior, settings.objective)
    for group in room_groups(tree, plans):
        chains, variables = [], []
        for plan in group:  # anchors before the group moves: a hand's metric is read where it is
            anchor = root if plan.robot.anchor < 0 else tree.link_transform(q, plan.robot.anchor, root)
            chains.append((plan.kin, anchor, *targets[id(plan)], _viewed_limb(tree, plan)))
            variables += list(plan.kin.chain.variables)
        columns = np.concatenate([plan.kin.columns for plan in group])
        max_step = step_limits(tree.velocity[columns], fps)
        separate_chains(tree, chains, q, apart.term(variables, root), options, max_step, fps)


def _viewed_limb(tree, plan) -> tuple[int, int] | None:
    """(base link, tip link) of the line a viewer reads on an arm or a leg (shoulder to wrist,
    hip to ankle: core.retarget.viewer), None on other chains."""
    chain = plan.mapping
    if chain.role not in ("arm", "leg") or not chain.robot_tips or not chain.source_tips:
        return None
    return tuple(tree.link_index(name) for name in limb_ends(chain)[2:])


def room_groups(tree, plans) -> list[list]:
    """The chains that make room at the end of a bake, in tree order: a chain hanging from an
    arm's tip (its hand) joins that arm, so the hand may turn away instead of the arm moving."""
    groups, arms = [], {}
    for plan in plans:
        if plan.mapping.role in PLANTED_ROLES:
            continue
        base = plan.robot.links[0]
        arm = next((group for tip, group in arms.items() if ancestor_path(tree.parent, tip, base) is not None), None)
        if arm is not None and plan.mapping.role != "arm":
            arm.append(plan)
            continue
        groups.append([plan])
        if plan.mapping.role == "arm":
            arms[plan.robot.links[-1]] = groups[-1]
    return groups


def checked_pairs(tree, mapping: Mapping):
    """The robot's checked collision pairs with the preset's overrides (core.collision.pairs)."""
    try:
        return collision_pairs(tree, mapping.allow_collision, mapping.check_collision)
    except KeyError as exc:
        raise RetargetError(f"mapping collision pairs: {exc.args[0]}") from None


def _plant(tree, legs, q, root_rot, root_pos, flags, fps, settings, warnings, apart=None):
    """Planted q and root (core.feet.plant), or None to keep the unplanted bake."""
    if flags is None:
        return None
    if settings.root_mode != "follow" or not legs:
        warnings.append("feet not planted: planting needs mapped left/right legs and root mode 'follow'")
        return None
    if not any(flags.feet[leg.side].any() for leg in legs if leg.side in flags.feet):
        frames = len(q)
        warnings.append(f"feet not planted: no foot is on the ground on any of the clip's {frames} frames "
                        f"({frames / fps:.3f} s; a detected contact lasts at least {DetectSettings.min_contact_s} s),"
                        " so contact_preserved_pct and foot_slide_pct measure no contact")
        return None
    # filtered bakes plant twice (_smooth_planted): the first plant is a draft whose angles are
    # smoothed and planted again from a fresh root, so one pass of 6 iterations and no lift will do
    draft = PlantSettings(passes=1, lift=False, iterations=6, track_iterations=0) if settings.filter != "none" else None
    # the draft's legs are planted again with the separation (_smooth_planted): it need not carry it
    planted = plant_feet(tree, legs, q, root_rot, root_pos, flags, fps, draft, apart if draft is None else None)
    if planted is not None and settings.filter != "none":
        planted = _smooth_planted(tree, legs, planted, root_rot, root_pos, flags, fps, settings, apart)
    if planted is not None and planted.lifted_m > 0.01:
        warnings.append(f"feet planted; the robot was raised up to {100 * planted.lifted_m:.0f} cm where "
                        "another body (a knee, a hand) would pass through the ground")
    return planted


def _smooth_planted(tree, legs, planted, root_rot, root_pos, flags, fps, settings, apart=None):
    """Per-frame leg solves chatter where a knee meets its limit under a planted foot: plant
    once more from the filtered angles, then smooth what is left above the bake's cutoff
    (walk onto G1: joint jerk 5,300 -> 1,400 rad/s^3, feet still within the slide targets)."""
    smooth = lowpass(planted.q, fps, method=settings.filter, cutoff_hz=settings.cutoff_hz,
                     window=settings.window, lower=tree.lower, upper=tree.upper)
    # the draft's smoothed angles start every leg close to its answer: 6 iterations, not 12
    again = plant_feet(tree, legs, smooth, root_rot, root_pos, flags, fps, PlantSettings(iterations=6),
                       apart) or planted
    q = lowpass(again.q, fps, method="butterworth", cutoff_hz=3.0 * settings.cutoff_hz,
                lower=tree.lower, upper=tree.upper)
    q = rate_limit(q, step_limits(tree.velocity, fps))
    root_pos = cancel_residual_slide(tree, legs, q, root_rot, again.root_position, flags)
    return PlantResult(q, root_pos, max(planted.lifted_m, again.lifted_m))


def _warn_missing_meshes(robot: Robot, warnings: list[str], legs: bool = True) -> None:
    """legs: whether feet are mapped (an arm's warning spoke of feet it does not have)."""
    missing = missing_meshes(robot)
    if missing:
        link, filename = missing[0]
        total = sum(g.kind == "mesh" for lk in robot.links.values() for g in list(lk.collisions) + list(lk.visuals))
        rough = ("self-collision and the feet use rough stand-ins (capsules along the bones, feet at their links' "
                 "origins), so self_collision_pct and the feet's figures are rough" if legs else
                 "self-collision uses rough stand-ins (capsules along the bones), so self_collision_pct is rough")
        warnings.append(f"robot {robot.name!r}: {len(missing)} of {total} mesh files not found next to "
                        f"{robot.source_path} (first: link {link!r}, {filename}): {rough}")


def _ground(tree, plans, legs, q, root_rot, root_pos, settings, warnings: list[str]) -> np.ndarray:
    """The root moved so the feet stand on the ground: their lowest points, as the report's
    ground_penetration_pct measures them (a leg chain's tip is the toe: grounding on it put a
    heel-first clip's heels 8 cm into the floor). With the clip's lowest frame setting the ground, a
    frame the robot cannot crouch into like the actor (or a capture glitch) lifts every other: said in
    the warnings (the walk with ten frames 0.4 m low onto the G1: 0.31 m on 3 of 4 frames)."""
    if settings.ground == "none" or settings.root_mode == "fixed":
        return root_pos
    root = pose_matrices(root_rot, root_pos)
    lowest = np.min([leg.body.lowest(tree.link_transform(q, leg.link, root)) for leg in legs], axis=0) \
        if legs else _foot_heights(tree, plans, q, root)
    if lowest is None:
        return root_pos
    out = root_pos.copy()
    out[:, 2] -= lowest.min() if settings.ground == "clip" else lowest
    above = float(np.percentile(lowest - lowest.min(), 25))
    if settings.ground == "clip" and above > FLOAT_WARN_M:
        warnings.append(f"feet {above:.2f} m or more above the ground on 3 of 4 frames: the clip's lowest foot (frame "
                        f"{int(np.argmin(lowest))}, a pose the robot cannot crouch into like the actor) sets the "
                        "ground; plant the feet (contacts auto) or ground every frame (setting ground 'frame')")
    return out


def _report(motion, tree, plans, all_targets, q, raw, root, solve_seconds, warnings) -> dict:
    chains = []
    for plan in plans:
        anchor = root if plan.robot.anchor < 0 else tree.link_transform(q, plan.robot.anchor, root)
        targets, _ = all_targets[id(plan)]
        points, _ = plan.kin.evaluate(tree, anchor, q, False)
        dist, tip_err = [], []
        for sl, rpath in zip(plan.kin.path_slices, plan.robot.paths):
            dist.append(np.linalg.norm(points[:, sl] - targets[:, sl], axis=-1) / rpath.length)
            tip_err.append(angle_deg(points[:, sl][:, -1], targets[:, sl][:, -1]))
        dist = np.concatenate(dist, axis=1)
        chains.append({"name": plan.mapping.name, "mean_distance": float(dist.mean()),
                       "max_distance": float(dist.max()),
                       "tip_direction_error_deg": float(np.mean(tip_err))})
    outside = (q < tree.lower - 1e-9) | (q > tree.upper + 1e-9)
    speed = np.abs(np.diff(q, axis=0)) * motion.fps / tree.velocity if len(q) > 1 else np.zeros((1, tree.dof))
    return {
        "source": motion.name, "robot": tree.robot.name, "frames": int(len(q)), "fps": float(motion.fps),
        "solve_seconds": float(solve_seconds),
        "limit_violations": int(outside.sum()), "chains": chains,
        "jerk_before": mean_abs_jerk(raw, motion.fps), "jerk_after": mean_abs_jerk(q, motion.fps),
        "max_speed_ratio": float(speed.max()) if speed.size else 0.0, "warnings": warnings,
    }
