"""Follow Path with Robot: a robot arm rig follows a keyed target (an empty or a bone) as a baked action.

The target's location keys (and its rotation at the first and last key, or at
every key with mode Keyed, e.g. after Orient Waypoints) are taken into the
rig's armature space, where the rig's root link stands at its rest; the core
(core.waypoints.trajectory.follow_path) samples the path at a rate and solves
the arm's joints; the result is a new action on the rig (root bone at rest,
one key per sample), with the report on the action and in the Info area.
Existing actions are never modified.
"""
from __future__ import annotations

import json
from dataclasses import dataclass

import bpy
import numpy as np
from bpy.props import BoolProperty, EnumProperty, FloatProperty, StringProperty

from ..core.waypoints.mechanism import base_pose, make_chain
from ..core.waypoints.optimum import StateBlend
from ..core.waypoints.orientations import quat_mul
from ..core.model.transforms import matrix_to_quat
from ..core.waypoints.trajectory import FollowSettings, PathKeys, Trajectory, follow_path
from .common import REPORT_PROPERTY, reports_errors, tree_from_rig
from .export import scene_fps
from .retarget import write_robot_action
from .waypoints import (AXES, CURVE_ITEMS, _active_bone, _location_keys, _rotation_values, _target, _to_quat,
                        draw_links, fill_links, keys_space, picked_robot, rigid)


@dataclass
class FollowOutcome:
    action: bpy.types.Action
    trajectory: Trajectory
    frames: np.ndarray  # (N,) Blender frames of the keys (subframes where the rate asks)
    keys: int


def follow_path_action(scene, obj, bone: str | None, robot, tip_link: str, base_link: str = "",
                       settings: FollowSettings = FollowSettings(), keyed: bool = False,
                       progress=None) -> FollowOutcome:
    """Bake `robot` following the keys of `obj` (or its pose bone `bone`) into a new action.

    keyed=True takes every key's rotation as keyed; else only the first and
    last, the via orientations coming from settings.mode.
    """
    owner, prefix, label = _target(obj, bone)
    frames, positions = _location_keys(obj, owner, prefix, label)
    mode = owner.rotation_mode
    quats = np.full((frames.size, 4), np.nan)
    for i in (range(frames.size) if keyed else (0, frames.size - 1)):
        quats[i] = _to_quat(_rotation_values(obj, owner, prefix, mode, frames[i]), mode)
    tree = tree_from_rig(robot)
    if not tip_link:
        raise ValueError("Follow Path needs Tip Link: the robot link the target stands for")
    chain = make_chain(tree, tip_link, base_link or None)
    # the rig's root link stands at its rest: the armature space is its frame
    to_base = np.linalg.inv(base_pose(chain)) @ rigid(robot.matrix_world.inverted_safe() @ keys_space(obj, owner))
    turn = matrix_to_quat(to_base[:3, :3])
    fps = scene_fps(scene)
    keys = PathKeys((frames - frames[0]) / fps, positions @ to_base[:3, :3].T + to_base[:3, 3],
                    np.where(np.isnan(quats), np.nan, quat_mul(turn, np.nan_to_num(quats))), label)
    result = follow_path(chain, keys, settings, progress)
    count = len(result.time_s)
    key_frames = frames[0] + result.time_s * fps
    name = f"{robot.name}|{label.split(' ', 1)[1].strip(chr(39))}"
    action, written = write_robot_action(robot, tree, name, key_frames, np.zeros((count, 3)),
                                         np.broadcast_to(np.eye(3), (count, 3, 3)), result.q)
    action[REPORT_PROPERTY] = json.dumps(result.report)
    return FollowOutcome(action, result, key_frames, written)


def follow_summary(report: dict) -> str:
    """One line for the Info area: reach, errors, speed."""
    text = (f"{report['samples']} samples at {report['rate_hz']:g} Hz; keys up to {report['farthest_key_m']:.2f} m "
            f"from the first joint, the arm reaches {report['reach_m']:.2f} m; largest error "
            f"{report['max_position_error_m'] * 1000:.2f} mm, {report['max_orientation_error_deg']:.2f} deg; "
            f"fastest joint at {report['max_joint_speed_ratio']:.0%} of its limit")
    if report["unreachable"]:
        text += f"; {len(report['unreachable'])} samples out of reach from {report['unreachable'][0]:.2f} s"
    return text


class ROBOT_RETARGET_OT_follow_path(bpy.types.Operator):
    """Bake a new action in which the robot arm's tip follows the keyed target (an empty or a bone)"""

    bl_idname = "robot_retarget.follow_path"
    bl_label = "Follow Path with Robot"
    bl_options = {'REGISTER', 'UNDO'}

    bone: StringProperty(name="Bone", description="Pose bone of the target (empty: the active pose bone in "
                         "Pose Mode, else the object)")
    robot: StringProperty(name="Robot", description="Robot arm rig (empty: the Robot tab's robot)")
    tip_link: StringProperty(name="Tip Link", description="Robot link the target stands for")
    base_link: StringProperty(name="Base Link", description="Link the arm hangs from (empty: the robot's root)")
    mode: EnumProperty(name="Via Orientation", items=[
        ("KEYED", "Keyed", "The target's rotation at every key (e.g. after Orient Waypoints)"),
        ("TANGENT", "Tangent", "Approach axis along the path, roll interpolated"),
        ("TANGENT_MECHANISM", "Tangent + Mechanism", "Approach axis along the path, roll the arm holds best"),
        ("MECHANISM", "Mechanism", "The orientation the arm holds best"),
    ], default="KEYED")
    objective: EnumProperty(name="Objective", items=[
        ("MANIPULABILITY", "Manipulability", "Stay far from singularities"),
        ("TORQUE", "Gravity Torque", "Least squared gravity torques"),
    ], default="MANIPULABILITY")
    blend: EnumProperty(name="Blend", items=[
        ("PARABOLA", "Parabola", "u = 4 r (1 - r), r = share of the path done"),
        ("BSPLINE", "B-Spline Bump", "A smooth cubic B-spline bump, flat at both ends"),
    ], default="PARABOLA")
    max_blend: FloatProperty(name="Maximum", min=0.0, max=1.0, default=1.0, subtype='FACTOR')
    curve: EnumProperty(name="Path Curve", items=CURVE_ITEMS[1:], default="SPLINE",
                        description="The cubic through the keys the tip follows (and whose tangents the vias take)")
    state_blend: BoolProperty(name="Blend by Robot State", default=False,
                              description="Turn further toward the optimum where the interpolated orientation "
                                          "brings the arm near a singularity or a joint limit")
    approach_axis: EnumProperty(name="Approach Axis", items=[(k, k, f"Tip link's local {k} axis") for k in AXES],
                                default="Z")
    rate: FloatProperty(name="Rate", min=1.0, max=2000.0, default=100.0, description="Samples per second")

    @classmethod
    def poll(cls, context):
        return context.object is not None

    def draw(self, context):
        layout = self.layout
        layout.prop(self, "bone")
        layout.prop_search(self, "robot", bpy.data, "objects")
        draw_links(layout, self, context)
        for name in ("mode", "objective", "blend", "max_blend", "curve", "state_blend",
                     "approach_axis", "rate"):
            layout.prop(self, name)

    def _robot(self, context):
        robot = picked_robot(self, context)
        if robot is None or robot.type != 'ARMATURE':
            raise ValueError("Follow Path needs Robot: a robot rig (File > Import > URDF Robot), "
                             "named here or picked in the Robot tab")
        return robot

    def invoke(self, context, event):
        fill_links(context, picked_robot(self, context))  # before the redo panel draws
        return self.execute(context)

    @reports_errors
    def execute(self, context):
        obj, robot = context.object, self._robot(context)
        fill_links(context, robot)
        if obj == robot:
            raise ValueError("select the keyed target (an empty or a bone), not the robot rig")
        bone = self.bone or _active_bone(context)
        mode = "tangent" if self.mode == "KEYED" else self.mode.lower()
        settings = FollowSettings(rate_hz=self.rate, mode=mode, objective=self.objective.lower(),
                                  blend=self.blend.lower(), max_blend=self.max_blend,
                                  approach_axis=AXES[self.approach_axis], curve=self.curve.lower(),
                                  state_blend=StateBlend() if self.state_blend else None)
        wm = context.window_manager
        wm.progress_begin(0, 100)
        try:
            outcome = follow_path_action(context.scene, obj, bone, robot, self.tip_link, self.base_link, settings,
                                         self.mode == "KEYED", lambda f, m: wm.progress_update(int(100 * f)))
        finally:
            wm.progress_end()
        report = outcome.trajectory.report
        for warning in report["warnings"]:
            self.report({'WARNING'}, warning)
        self.report({'INFO'}, f"{follow_summary(report)} -> action {outcome.action.name!r}")
        return {'FINISHED'}


classes = (ROBOT_RETARGET_OT_follow_path,)
