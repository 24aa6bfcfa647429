"""Robot tab > Balance > Generate Gait: the source's steps as a robot gait that keeps its balance
(core.balance.gait), written as a new robot action with keys at the control cycle.

`gait_action` does the work without a UI context (the command line and tests call it); the
operator reads the Robot tab, reports progress and warnings, and is undoable like Bake.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING

import bpy
import numpy as np
from bpy.props import BoolProperty, EnumProperty, FloatProperty

from ..core.chains.mapping import Mapping
from ..core.library.gait import gait_summary
from ..props import mapping_from_settings, settings_from_mapping
from .common import auto_map_objects, bake_frame_range, check_objects, reports_errors, tree_from_rig
from .contacts import bake_contacts, sample_range
from .export import scene_fps
from .retarget import write_robot_action

if TYPE_CHECKING:  # for the annotations; the code imports them where it runs (registering imports no scipy)
    from ..core.balance.gait import GaitResult, GaitSettings

GAIT_PROPERTY = "robot_retarget_gait"  # the gait's report (JSON) on its action
TRACE_PROPERTY = "robot_retarget_gait_trace"  # per key: time, target ZMP, multibody ZMP, CoM (JSON)


@dataclass
class GaitOutcome:
    action: bpy.types.Action
    result: GaitResult
    frames: np.ndarray  # Blender frames of the keys (subframes where the period is not a whole frame)
    keys: int


def gait_action(scene, source: bpy.types.Object, robot: bpy.types.Object, mapping: Mapping, frame_start: int,
                frame_end: int, settings: GaitSettings | None = None, *, contacts="auto",
                action_name: str | None = None, replace: bool = False, progress=None) -> GaitOutcome:
    """Frames [start, end] of `source` as a gait on `robot`: a new action keyed every control
    period from frame_start. The source and existing robot actions are never modified."""
    from ..core.balance.gait import generate_gait
    if frame_end < frame_start:
        raise ValueError(f"frame range {frame_start}-{frame_end} is empty")
    report = progress or (lambda fraction, message: None)
    tree = tree_from_rig(robot)
    fps = scene_fps(scene)
    report(0.0, "sampling the source")
    motion, contacts = sample_range(scene, source, mapping, frame_start, frame_end, contacts)
    result = generate_gait(motion, tree, mapping, contacts, settings,
                           progress=lambda f, m: report(0.05 + 0.85 * f, m))
    report(0.9, "writing keys")
    frames = frame_start + result.time_s * fps
    source_action = source.animation_data.action if source.animation_data else None
    name = action_name or f"{robot.name}|{source_action.name if source_action else source.name} gait"
    action, keys = key_gait(robot, tree, name, frames, result, replace)
    report(1.0, "done")
    return GaitOutcome(action, result, frames, keys)


def key_gait(robot: bpy.types.Object, tree, name: str, frames: np.ndarray, result: GaitResult,
             replace: bool = False) -> tuple[bpy.types.Action, int]:
    """A new action on `robot` keyed at `frames` (Blender frames, subframes allowed) with the gait's
    joints and root, its report and its ZMP trace (what the balance overlay draws); (action, keys written)."""
    action, keys = write_robot_action(robot, tree, name, frames, result.root_position, result.root_rotation,
                                      result.q, replace)
    action[GAIT_PROPERTY] = json.dumps(result.report)
    action[TRACE_PROPERTY] = json.dumps({"frames": np.round(frames, 4).tolist(),
                                         "target_zmp": np.round(result.target_zmp, 5).tolist(),
                                         "zmp": np.round(result.zmp, 5).tolist(),
                                         "com": np.round(result.com, 5).tolist()})
    return action, keys


class ROBOT_RETARGET_OT_generate_gait(bpy.types.Operator):
    """Turn the source's steps into a robot gait that keeps its balance: feet flat and still on the
    ground, the waist moved until the zero moment point stays over the feet; a new action keyed at
    the control cycle"""

    bl_idname = "robot_retarget.generate_gait"
    bl_label = "Generate Gait"
    bl_options = {'REGISTER', 'UNDO'}

    period_ms: FloatProperty(name="Control Period", description="The robot's control cycle: one key per period",
                             default=5.0, min=0.5, max=100.0)
    sensitivity: FloatProperty(name="Sensitivity", description="How much of the person's swing style to keep: "
                               "higher keeps more of its turning points", default=1.0, min=0.1, max=10.0)
    merge_s: FloatProperty(name="Merge Width", description="Turning points of a swing closer than this become one",
                           default=0.1, min=0.0, max=1.0, unit='TIME_ABSOLUTE')
    upper_body: BoolProperty(name="Upper Body", default=True,
                             description="Arms and torso follow the clip (off: they hold its median posture)")
    waist: EnumProperty(name="Waist", default='AUTO', description="How the waist carries the body over a flat "
                        "foot on legs without an ankle roll",
                        items=[('AUTO', "Auto", "Rolled where the legs have no ankle roll, else upright"),
                               ('ROLLED', "Rolled", "Rolls and yaws over the standing foot: balanced, slower"),
                               ('UPRIGHT', "Upright", "Stays upright: faster, the ZMP may leave the feet")])

    @reports_errors
    def execute(self, context):
        from ..core.balance.gait import GaitSettings
        settings = context.scene.robot_retarget
        source, robot = check_objects(settings)
        if len(settings.chains) == 0:
            automatic = auto_map_objects(source, robot, context.scene)
            automatic.settings = mapping_from_settings(settings).settings
            settings_from_mapping(settings, automatic)
        mapping = mapping_from_settings(settings)
        start, end = bake_frame_range(context.scene, settings, source)
        wm = context.window_manager
        wm.progress_begin(0, 100)
        try:
            contacts = bake_contacts(True, source, np.arange(start, end + 1.0), scene_fps(context.scene))
            gait = GaitSettings(period_s=self.period_ms / 1000.0, sensitivity=self.sensitivity, merge_s=self.merge_s,
                                upper_body=self.upper_body,
                                sagittal_waist={'AUTO': None, 'ROLLED': True, 'UPRIGHT': False}[self.waist])
            outcome = gait_action(context.scene, source, robot, mapping, start, end, gait, contacts=contacts,
                                  progress=lambda f, m: wm.progress_update(int(100 * f)))
        finally:
            wm.progress_end()
        for warning in outcome.result.report.get("warnings", []):
            self.report({'WARNING'}, warning)
        self.report({'INFO'}, f"{gait_summary(outcome.result.report)} -> action {outcome.action.name!r}")
        return {'FINISHED'}

    def invoke(self, context, event):
        return context.window_manager.invoke_props_dialog(self)


classes = (ROBOT_RETARGET_OT_generate_gait,)
