"""Export Robot Playback: a robot's baked action as a file a controller or simulator plays.

The operator (sidebar and File > Export) and the command line share one
plain function, export_playback(robot, path, settings): read the robot's
active action keys, resample them at the control cycle, check (and if asked
retime) against the limits, write atomically. It writes files only, never
Blender data, so there is nothing to undo.

The exported root pose is the root link's pose in the armature's space (the
bake's world, with the robot object at the origin).
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import bpy
import numpy as np
from bpy.props import BoolProperty, EnumProperty, FloatProperty, StringProperty
from bpy_extras.anim_utils import action_get_channelbag_for_slot

from ..core.motion.bake_csv import BakeTable
from ..core.playback import (ExportSettings, JointLimits, PlaybackResult, prepare_playback,
                             require_within_limits, violation_summary)
from ..core.playback.formats import FORMATS, PlaybackMeta, write_playback
from ..core.playback.frame_rate import bake_warnings, export_fps
from ..core.playback.mimic import mimic_joints, mimic_limit_warnings
from ..core.playback.report import export_report, playback_summary
from ..core.model.rig import bone_to_root_pose, rig_layout
from ..core.model.transforms import matrix_to_quat, quat_continuous
from . import anim_io
from .common import REPORT_PROPERTY, extension_version, reports_errors, tree_from_rig

FORMAT_ITEMS = [
    ("csv", "CSV + metadata", "time_s, root pose (quaternion w x y z), joints; sidecar .meta.json"),
    ("unitree-csv", "Unitree CSV", "No header: root x y z, quaternion x y z w, joints (BeyondMimic, LAFAN1 G1)"),
    ("npz", "NumPy .npz", "fps, root_pos, root_rot (x y z w), dof_pos, joint_names"),
    ("pkl", "GMR pickle", "dict of fps, root_pos, root_rot (x y z w), dof_pos (General Motion Retargeting)"),
    ("ros2-yaml", "ROS 2 JointTrajectory", "trajectory_msgs/JointTrajectory as YAML (joints only)"),
    ("mujoco-keyframes", "MuJoCo keyframes", "<keyframe> of <key time qpos>: free joint (w x y z), joints"),
]


@dataclass
class ExportOutcome:
    """What an export wrote and found."""

    paths: list[Path]
    result: PlaybackResult
    action_name: str
    report: dict = field(default_factory=dict)


def is_robot_rig(obj) -> bool:
    return obj is not None and obj.type == 'ARMATURE' and bool(obj.get("urdf_path"))


def find_robot(context, name: str | None = None):
    """The robot to export: by name, else the Robot tab's robot, the active rig, or the only rig."""
    if name:
        obj = bpy.data.objects.get(name)
        if not is_robot_rig(obj):  # a typo read "is not a robot rig" as if the object were there
            rigs = sorted(o.name for o in context.scene.objects if is_robot_rig(o))
            what = "no object of that name" if obj is None else "not a robot rig (an armature imported from a URDF)"
            raise ValueError(f"object {name!r}: {what}; robot rigs in the scene: {', '.join(rigs) or 'none'}")
        return obj
    settings = getattr(context.scene, "robot_retarget", None)
    for obj in (getattr(settings, "robot", None), getattr(context, "active_object", None)):
        if is_robot_rig(obj):
            return obj
    rigs = [o for o in context.scene.objects if is_robot_rig(o)]
    if len(rigs) == 1:
        return rigs[0]
    if not rigs:
        raise ValueError("no robot rig in the scene (File > Import > URDF Robot, then bake)")
    raise ValueError(f"several robot rigs ({', '.join(sorted(o.name for o in rigs))}): pick one")


def _channels(layout) -> list[tuple]:
    root = layout.root.name
    channels = [(f'pose.bones["{root}"].location', i, root) for i in range(3)]
    channels += [(f'pose.bones["{root}"].rotation_quaternion', i, root) for i in range(4)]
    return channels + [(f'pose.bones["{b}"].{p}', i, b) for b, p, i in layout.joint_channels]


def _evaluated(action, slot, channels) -> tuple[np.ndarray, np.ndarray]:
    """Channels evaluated on every whole frame of the action (keys on different frames)."""
    bag = action_get_channelbag_for_slot(action, slot)
    start, end = (int(round(f)) for f in action.frame_range)
    frames = np.arange(start, end + 1, dtype=float)
    values = np.empty((len(frames), len(channels)))
    for c, (path, index, _) in enumerate(channels):
        curve = bag.fcurves.find(path, index=index) if bag is not None else None
        if curve is None:
            raise KeyError(f"no F-curve {path!r} index {index} in action {action.name!r}")
        values[:, c] = [curve.evaluate(f) for f in frames]
    return frames, values


def action_table(robot, fps: float, frame_range: tuple[int, int] | None = None,
                 whole_frames: bool = False) -> BakeTable:
    """The robot's active action as keyed samples (or, with whole_frames, evaluated on every whole
    frame): time from 0 s, root pose, joints in URDF order."""
    adt = robot.animation_data
    if adt is None or adt.action is None or adt.action_slot is None:
        raise ValueError(f"robot rig {robot.name!r} has no action to export (bake one first)")
    tree = tree_from_rig(robot)
    layout = rig_layout(tree)
    channels = _channels(layout)
    try:
        frames, values = (_evaluated(adt.action, adt.action_slot, channels) if whole_frames
                          else anim_io.read_channels(adt.action, adt.action_slot, channels))
    except ValueError:  # hand-edited: keys on different frames per channel
        frames, values = _evaluated(adt.action, adt.action_slot, channels)
    if frame_range is not None:
        keep = (frames >= frame_range[0]) & (frames <= frame_range[1])
        frames, values = frames[keep], values[keep]
    if len(frames) == 0:
        raise ValueError(f"action {adt.action.name!r} has no keys in the chosen frames")
    quat = values[:, 3:7] / np.linalg.norm(values[:, 3:7], axis=1, keepdims=True)
    position, rotation = bone_to_root_pose(layout, values[:, :3], quat)
    return BakeTable(list(tree.joint_names), (frames - frames[0]) / fps, position,
                     quat_continuous(matrix_to_quat(rotation)), values[:, 7:])


def even_rate(time_s: np.ndarray) -> float | None:
    """Samples per second of keys spaced evenly in time (a gait keyed at its 200 Hz control cycle
    in a 30 fps scene: 200), else None (keys a user moved or deleted). Velocities and
    accelerations taken at any other rate are wrong by its ratio squared."""
    if len(time_s) < 2:
        return None
    step = np.diff(time_s)
    return float(1.0 / step[0]) if step[0] > 0 and np.allclose(step, step[0], rtol=1e-3, atol=1e-9) else None


def action_samples(robot, fps: float) -> tuple[BakeTable, float]:
    """The active action as samples evenly spaced in time, and their rate (Hz): its keys where
    they are evenly spaced (a gait keyed at its control cycle), else every whole frame. What
    takes velocities and accelerations (balance, its overlay) reads the motion this way."""
    table = action_table(robot, fps)
    rate = even_rate(table.time)
    if rate is None:
        return action_table(robot, fps, whole_frames=True), fps
    return table, rate


def scene_fps(scene) -> float:
    return scene.render.fps / scene.render.fps_base


def action_fps(robot, scene, choice: str = "auto") -> tuple[float, list[str]]:
    """The frame rate of the robot's action (the scene's, checked against the rate its bake stored)
    and the warnings that choice gives (core.playback.frame_rate)."""
    action = robot.animation_data.action if robot.animation_data else None
    baked = json.loads(action.get(REPORT_PROPERTY, "{}")).get("fps") if action is not None else None
    return export_fps(scene_fps(scene), baked, choice, action.name if action is not None else robot.name)


def export_playback(robot, path, settings: ExportSettings, *, scene=None, source: str = "",
                    frame_range: tuple[int, int] | None = None, bake_report: dict | None = None
                    ) -> ExportOutcome:
    """Write the robot's active action to `path` as settings.format (headless-safe)."""
    scene = scene or bpy.context.scene
    settings.validate()
    tree = tree_from_rig(robot)
    limits = JointLimits.from_tree(tree, settings.acceleration_limit, settings.joint_acceleration_limits)
    fps, notes = action_fps(robot, scene, settings.frame_rate)
    table = action_table(robot, fps, frame_range)
    result = prepare_playback(table, limits, settings)
    result.warnings[:0] = notes
    require_within_limits(result, settings.allow_violations)
    mimic = mimic_joints(tree.robot)
    result.warnings += mimic_limit_warnings(result.track, mimic)
    action = robot.animation_data.action
    meta = PlaybackMeta(robot=str(robot.get("urdf_robot", robot.name)), source=source or action.name,
                        limits=limits, violations=result.violations,
                        retimed_seconds_added=result.retimed_seconds_added,
                        generator=f"robot_retarget {extension_version()}", mimic=mimic)
    paths = write_playback(path, result.track, settings.format, meta,
                           degrees=settings.units == "deg", overwrite=settings.overwrite,
                           free_joint=settings.mujoco_free_joint)
    if bake_report is None:
        bake_report = json.loads(action.get(REPORT_PROPERTY, "{}"))
    bake_report = dict(bake_report, warnings=bake_warnings(bake_report.get("warnings", []), fps))
    return ExportOutcome(paths, result, action.name, export_report(bake_report, result, settings, paths))


def export_summary(outcome: ExportOutcome) -> str:
    return playback_summary(outcome.result, outcome.action_name)


# -------------------------------------------------------------- operator ---

class ROBOT_RETARGET_OT_export_playback(bpy.types.Operator):
    """Write the robot's action at the control cycle as a playback file, checked against its limits"""

    bl_idname = "robot_retarget.export_playback"
    bl_label = "Export Robot Playback"
    bl_options = {'REGISTER'}  # writes a file, changes no Blender data: nothing to undo

    filepath: StringProperty(subtype='FILE_PATH', options={'SKIP_SAVE'})
    filter_glob: StringProperty(default="*.csv;*.npz;*.pkl;*.yaml;*.xml", options={'HIDDEN'})
    robot: StringProperty(name="Robot", description="Robot rig to export (empty: the Robot tab's robot)")
    format: EnumProperty(name="Format", items=FORMAT_ITEMS, default="csv")
    timing: EnumProperty(name="Control Cycle", default="RATE", items=[
        ("RATE", "Rate", "Samples per second"), ("PERIOD", "Period", "Time between samples")])
    rate_hz: FloatProperty(name="Rate (Hz)", default=100.0, min=1.0, max=100000.0)
    period_ms: FloatProperty(name="Period (ms)", default=10.0, min=0.01, max=1000.0)
    units: EnumProperty(name="Joint Units", default="rad", items=[
        ("rad", "Radians", "Revolute joints in radians"),
        ("deg", "Degrees", "Revolute joints in degrees (csv and npz only)")])
    use_acceleration_limit: BoolProperty(name="Acceleration Limit", default=False,
                                         description="Check joint accelerations against one limit")
    acceleration_limit: FloatProperty(name="Limit (/s²)", default=100.0, min=1e-3,
                                      description="rad/s² for revolute joints, m/s² for prismatic ones")
    retime: BoolProperty(name="Retime", default=False,
                         description="Slow down only the segments that break velocity or acceleration limits")
    allow_violations: BoolProperty(name="Allow Violations", default=False,
                                   description="Write even if limits are broken (they go into the metadata)")
    overwrite: BoolProperty(name="Overwrite", default=False, description="Replace existing files")
    frame_rate: EnumProperty(name="Frame Rate", default="auto", items=[
        ("auto", "Scene (Checked)", "The scene's frame rate; refused if the action was baked at another"),
        ("scene", "Scene", "The scene's frame rate, even if the action was baked at another"),
        ("bake", "Bake", "The frame rate the action was baked at, whatever the scene's now")])
    mujoco_free_joint: BoolProperty(name="Free Joint", default=True,
                                    description="MuJoCo keyframes: qpos starts with the root's free joint; "
                                                "off for a fixed-base MJCF (an arm), whose root must not move")

    @classmethod
    def poll(cls, context):
        return any(is_robot_rig(o) for o in context.scene.objects)

    def settings(self) -> ExportSettings:
        period = self.period_ms / 1000.0 if self.timing == "PERIOD" else 1.0 / self.rate_hz
        return ExportSettings(format=self.format, period_s=period, units=self.units,
                              acceleration_limit=self.acceleration_limit if self.use_acceleration_limit else None,
                              retime=self.retime, allow_violations=self.allow_violations,
                              overwrite=self.overwrite, mujoco_free_joint=self.mujoco_free_joint,
                              frame_rate=self.frame_rate)

    @reports_errors
    def invoke(self, context, event):
        robot = find_robot(context, self.robot or None)
        action = robot.animation_data.action if robot.animation_data else None
        stem = re.sub(r"[^\w.-]+", "_", action.name if action else robot.name).strip("_") or "playback"
        folder = Path(bpy.path.abspath("//")) if bpy.data.filepath else Path.home()
        self.filepath = str(folder / (stem + FORMATS[self.format]))
        context.window_manager.fileselect_add(self)
        return {'RUNNING_MODAL'}

    def check(self, context):
        """Keep the file name's extension in step with the chosen format."""
        path = Path(self.filepath)
        wanted = FORMATS[self.format]
        if path.name and path.suffix.lower() != wanted:
            self.filepath = str(path.with_suffix(wanted))
            return True
        return False

    def draw(self, context):
        layout = self.layout
        layout.use_property_split = True
        layout.prop(self, "format")
        layout.prop(self, "timing")
        layout.prop(self, "rate_hz" if self.timing == "RATE" else "period_ms")
        layout.prop(self, "units")
        layout.prop(self, "frame_rate")
        if self.format == "mujoco-keyframes":
            layout.prop(self, "mujoco_free_joint")
        col = layout.column(heading="Limits")
        col.prop(self, "use_acceleration_limit")
        sub = col.column()
        sub.active = self.use_acceleration_limit
        sub.prop(self, "acceleration_limit")
        col.prop(self, "retime")
        col.prop(self, "allow_violations")
        layout.prop(self, "overwrite")

    @reports_errors
    def execute(self, context):
        if not self.filepath:
            self.report({'ERROR'}, "No output file given")
            return {'CANCELLED'}
        robot = find_robot(context, self.robot or None)
        outcome = export_playback(robot, bpy.path.abspath(self.filepath), self.settings(), scene=context.scene)
        for warning in outcome.result.warnings:
            self.report({'WARNING'}, warning)
        if outcome.result.violations:
            self.report({'WARNING'}, violation_summary(outcome.result.violations))
        written = ", ".join(str(p) for p in outcome.paths)
        self.report({'INFO'}, f"{export_summary(outcome)} -> {written}")
        return {'FINISHED'}


def _menu_export(self, context):
    self.layout.operator(ROBOT_RETARGET_OT_export_playback.bl_idname, text="Robot Playback (.csv, .npz, ...)")


classes = (ROBOT_RETARGET_OT_export_playback,)


def register():
    bpy.types.TOPBAR_MT_file_export.append(_menu_export)


def unregister():
    bpy.types.TOPBAR_MT_file_export.remove(_menu_export)
