"""Auto-map and Bake: read the armatures into arrays, call core, write an action back."""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import bpy
import numpy as np
from bpy.props import BoolProperty, StringProperty

from ..core.chains.mapping import Mapping
from ..core.model.rig import rig_layout, root_pose_to_bone
from ..core.playback.frame_rate import default_rate_hint
from ..props import mapping_from_settings, settings_from_mapping
from . import anim_io
from .common import (REPORT_PROPERTY, auto_map_objects, bake_frame_range, check_objects, reports_errors,
                     tree_from_rig)
from .contacts import bake_contacts, feet_summary, sample_range
from .collision import collision_summary

if TYPE_CHECKING:  # for the annotations; the code imports them where it runs (registering imports no scipy)
    from ..core.retarget import RetargetResult


@dataclass
class BakeOutcome:
    action: bpy.types.Action
    result: RetargetResult
    frames: np.ndarray  # Blender frame numbers of the keys
    keys: int


def bake_action(scene, source: bpy.types.Object, robot: bpy.types.Object, mapping: Mapping,
                frame_start: int, frame_end: int, *, action_name: str | None = None,
                replace: bool = False, progress=None, contacts=None, warnings: list[str] = ()) -> BakeOutcome:
    """Retarget frames [start, end] of `source` onto `robot` as a new action.

    The root bone carries the robot's root pose (location + quaternion); every
    joint bone its one channel. The source action and any existing robot
    action are never modified (unless `replace` names the action to reuse).
    """
    from ..core.retarget import retarget
    if frame_end < frame_start:
        raise ValueError(f"frame range {frame_start}-{frame_end} is empty")
    tree = tree_from_rig(robot)
    frames = np.arange(frame_start, frame_end + 1, dtype=float)
    report = progress or (lambda fraction, message: None)
    report(0.0, "sampling the source")
    motion, contacts = sample_range(scene, source, mapping, frame_start, frame_end, contacts)
    result = retarget(motion, tree, mapping, progress=lambda f, m: report(0.1 + 0.8 * f, m), contacts=contacts)
    result.report["warnings"][:0] = list(warnings)  # the caller's, stored with the bake's own
    report(0.9, "writing keys")
    source_action = source.animation_data.action if source.animation_data else None
    name = action_name or f"{robot.name}|{source_action.name if source_action else source.name}"
    action, keys = write_robot_action(robot, tree, name, frames, result.root_position, result.root_rotation,
                                      result.q, replace)
    action[REPORT_PROPERTY] = json.dumps(result.report)
    report(1.0, "done")
    return BakeOutcome(action, result, frames, keys)


def write_robot_action(robot: bpy.types.Object, tree, name: str, frames: np.ndarray, root_position: np.ndarray,
                       root_rotation: np.ndarray, q: np.ndarray, replace: bool = False):
    """A new action on the robot rig with keys at Blender `frames` (F,), which may be subframes:
    the root bone carries the root pose (location + quaternion), every joint bone its one
    channel. Returns (action, keys written); kept with a fake user (a bake is the user's work)."""
    layout = rig_layout(tree)
    location, quaternion = root_pose_to_bone(layout, root_position, root_rotation)
    root = layout.root.name
    channels = [(f'pose.bones["{root}"].location', i, root) for i in range(3)]
    channels += [(f'pose.bones["{root}"].rotation_quaternion', i, root) for i in range(4)]
    channels += [(f'pose.bones["{bone}"].{prop}', index, bone) for bone, prop, index in layout.joint_channels]
    values = np.column_stack([location, quaternion, q])
    action, slot = anim_io.new_action(robot, name, replace=replace)
    keys = anim_io.write_channels(action, slot, channels, frames, values)
    action.use_fake_user = True
    return action, keys


def _settings(context):
    return context.scene.robot_retarget


class ROBOT_RETARGET_OT_auto_map(bpy.types.Operator):
    """Fill the chain mapping from the bones' layout and names (works on unseen robots)"""

    bl_idname = "robot_retarget.auto_map"
    bl_label = "Auto-Map Chains"
    bl_options = {'REGISTER', 'UNDO'}

    @reports_errors
    def execute(self, context):
        settings = _settings(context)
        source, robot = check_objects(settings)
        mapping = auto_map_objects(source, robot, context.scene)
        mapping.settings = mapping_from_settings(settings).settings  # keep the user's options
        settings_from_mapping(settings, mapping)
        self.report({'INFO'}, f"Mapped {len(mapping.chains)} chains: "
                    + ", ".join(c.name for c in mapping.chains))
        if mapping.notes:  # what it guessed: shown under Chains in the sidebar too
            self.report({'WARNING'}, f"Auto-map is unsure of {len(mapping.notes)} thing(s): "
                        + "; ".join(mapping.notes))
        return {'FINISHED'}


class ROBOT_RETARGET_OT_bake(bpy.types.Operator):
    """Retarget the source's animation onto the robot as a new action, inside joint limits"""

    bl_idname = "robot_retarget.bake"
    bl_label = "Bake Robot Action"
    bl_options = {'REGISTER', 'UNDO'}

    @reports_errors
    def execute(self, context):
        from ..core.retarget.summary import report_summary
        settings = _settings(context)
        wm = context.window_manager
        source, robot = check_objects(settings)
        if len(settings.chains) == 0:
            automatic = auto_map_objects(source, robot, context.scene)
            automatic.settings = mapping_from_settings(settings).settings  # keep the user's options
            settings_from_mapping(settings, automatic)
        mapping = mapping_from_settings(settings)
        start, end = bake_frame_range(context.scene, settings, source)
        fps = context.scene.render.fps / context.scene.render.fps_base
        hint = default_rate_hint(fps)  # Blender keeps no frame time for an imported BVH: only a warning can say
        wm.progress_begin(0, 100)
        try:
            contacts = bake_contacts(settings.plant_feet, source, np.arange(start, end + 1.0), fps)
            outcome = bake_action(context.scene, source, robot, mapping, start, end,
                                  action_name=settings.action_name or None,
                                  replace=settings.replace_action,
                                  progress=lambda f, m: wm.progress_update(int(100 * f)), contacts=contacts,
                                  warnings=[hint] if hint else [])
        finally:
            wm.progress_end()
        for warning in outcome.result.report.get("warnings", []):
            self.report({'WARNING'}, warning)
        self.report({'INFO'}, f"{report_summary(outcome.result.report)} -> action {outcome.action.name!r}")
        if feet_summary(outcome.result.report):
            self.report({'INFO'}, feet_summary(outcome.result.report))
        if collision_summary(outcome.result.report, int(start)):
            self.report({'INFO'}, collision_summary(outcome.result.report, int(start)))
        return {'FINISHED'}


class ROBOT_RETARGET_OT_chain_add(bpy.types.Operator):
    """Add a chain row to the mapping"""

    bl_idname = "robot_retarget.chain_add"
    bl_label = "Add Chain"
    bl_options = {'REGISTER', 'UNDO'}

    def execute(self, context):
        settings = _settings(context)
        row = settings.chains.add()
        row.name = f"chain_{len(settings.chains)}"
        settings.active_chain = len(settings.chains) - 1
        return {'FINISHED'}


class ROBOT_RETARGET_OT_chain_remove(bpy.types.Operator):
    """Remove the active chain row"""

    bl_idname = "robot_retarget.chain_remove"
    bl_label = "Remove Chain"
    bl_options = {'REGISTER', 'UNDO'}

    @classmethod
    def poll(cls, context):
        settings = _settings(context)
        return 0 <= settings.active_chain < len(settings.chains)

    def execute(self, context):
        settings = _settings(context)
        settings.chains.remove(settings.active_chain)
        settings.active_chain = min(settings.active_chain, len(settings.chains) - 1)
        return {'FINISHED'}


class ROBOT_RETARGET_OT_chain_move(bpy.types.Operator):
    """Move the active chain row up or down"""

    bl_idname = "robot_retarget.chain_move"
    bl_label = "Move Chain"
    bl_options = {'REGISTER', 'UNDO'}

    direction: bpy.props.EnumProperty(items=[("UP", "Up", ""), ("DOWN", "Down", "")])

    def execute(self, context):
        settings = _settings(context)
        index = settings.active_chain
        target = index - 1 if self.direction == "UP" else index + 1
        if not (0 <= index < len(settings.chains) and 0 <= target < len(settings.chains)):
            return {'CANCELLED'}
        settings.chains.move(index, target)
        settings.active_chain = target
        return {'FINISHED'}


class ROBOT_RETARGET_OT_mapping_save(bpy.types.Operator):
    """Save the chain mapping and bake settings as a JSON preset"""

    bl_idname = "robot_retarget.mapping_save"
    bl_label = "Save Mapping Preset"

    filepath: StringProperty(subtype='FILE_PATH')
    filter_glob: StringProperty(default="*.json", options={'HIDDEN'})
    overwrite: BoolProperty(name="Overwrite", default=False, description="Replace an existing file")

    def invoke(self, context, event):
        if not self.filepath:
            self.filepath = "robot_mapping.json"
        context.window_manager.fileselect_add(self)
        return {'RUNNING_MODAL'}

    @reports_errors
    def execute(self, context):
        path = mapping_from_settings(_settings(context)).save(bpy.path.abspath(self.filepath),
                                                              overwrite=self.overwrite)
        self.report({'INFO'}, f"Saved mapping to {path}")
        return {'FINISHED'}


class ROBOT_RETARGET_OT_mapping_load(bpy.types.Operator):
    """Load a chain mapping and bake settings from a JSON preset"""

    bl_idname = "robot_retarget.mapping_load"
    bl_label = "Load Mapping Preset"
    bl_options = {'REGISTER', 'UNDO'}

    filepath: StringProperty(subtype='FILE_PATH')
    filter_glob: StringProperty(default="*.json", options={'HIDDEN'})

    def invoke(self, context, event):
        context.window_manager.fileselect_add(self)
        return {'RUNNING_MODAL'}

    @reports_errors
    def execute(self, context):
        mapping = Mapping.load(Path(bpy.path.abspath(self.filepath)))
        settings_from_mapping(_settings(context), mapping)
        self.report({'INFO'}, f"Loaded {len(mapping.chains)} chains from {self.filepath}")
        return {'FINISHED'}


classes = (ROBOT_RETARGET_OT_auto_map, ROBOT_RETARGET_OT_bake, ROBOT_RETARGET_OT_chain_add,
           ROBOT_RETARGET_OT_chain_remove, ROBOT_RETARGET_OT_chain_move, ROBOT_RETARGET_OT_mapping_save,
           ROBOT_RETARGET_OT_mapping_load)
