"""The "Robot" tab in the 3D View sidebar: pick armatures, map chains, bake."""
from __future__ import annotations

import textwrap

import bpy


class ROBOT_RETARGET_UL_chains(bpy.types.UIList):
    """Chain rows: name, source base to tip, robot base to tip."""

    def draw_item(self, context, layout, data, item, icon, active_data, active_propname, index):
        row = layout.row(align=True)
        row.prop(item, "enabled", text="")
        row.prop(item, "name", text="", emboss=False)
        row.label(text=f"{item.source_base} → {item.source_tips}")
        row.label(text=f"{item.robot_base} → {item.robot_tips}")


def _draw_notes(layout, notes: str, width: int = 48) -> None:
    """Auto-map's notes (what it guessed rather than saw), wrapped to the sidebar's width."""
    lines = [line for line in notes.splitlines() if line.strip()]
    if not lines:
        return
    box = layout.box()
    box.label(text="Auto-map guessed:", icon='ERROR')
    for note in lines:
        for k, part in enumerate(textwrap.wrap(note, width)):
            box.label(text=part, icon='DOT' if k == 0 else 'BLANK1')


def robot_and_action(layout, context):
    """(robot rig, its active action or None) for the panels that work on the robot's action;
    None after drawing why there is no robot."""
    from ..operators.export import find_robot

    try:
        robot = find_robot(context)
    except ValueError as exc:
        layout.label(text=str(exc), icon='INFO')
        return None
    return robot, robot.animation_data.action if robot.animation_data else None


class _RobotPanel:
    bl_space_type = 'VIEW_3D'
    bl_region_type = 'UI'
    bl_category = "Robot"


class ROBOT_RETARGET_PT_main(_RobotPanel, bpy.types.Panel):
    bl_label = "Robot Retarget"

    def draw(self, context):
        settings = context.scene.robot_retarget
        layout = self.layout
        layout.use_property_split = True
        layout.prop(settings, "source")
        row = layout.row(align=True)
        row.prop(settings, "robot")
        row.operator("robot_retarget.import_urdf", text="", icon='IMPORT')
        col = layout.column()
        col.operator("robot_retarget.auto_map", icon='LINKED')
        bake = layout.column()
        bake.scale_y = 1.4
        bake.enabled = settings.source is not None and settings.robot is not None
        bake.operator("robot_retarget.bake", icon='ACTION')


class ROBOT_RETARGET_PT_chains(_RobotPanel, bpy.types.Panel):
    bl_label = "Chains"
    bl_parent_id = "ROBOT_RETARGET_PT_main"

    def draw(self, context):
        settings = context.scene.robot_retarget
        layout = self.layout
        row = layout.row()
        row.template_list("ROBOT_RETARGET_UL_chains", "", settings, "chains", settings, "active_chain", rows=5)
        buttons = row.column(align=True)
        buttons.operator("robot_retarget.chain_add", icon='ADD', text="")
        buttons.operator("robot_retarget.chain_remove", icon='REMOVE', text="")
        buttons.separator()
        buttons.operator("robot_retarget.chain_move", icon='TRIA_UP', text="").direction = "UP"
        buttons.operator("robot_retarget.chain_move", icon='TRIA_DOWN', text="").direction = "DOWN"
        presets = layout.row(align=True)
        presets.operator("robot_retarget.mapping_load", icon='FILEBROWSER', text="Load Preset")
        presets.operator("robot_retarget.mapping_save", icon='FILE_TICK', text="Save Preset")
        _draw_notes(layout, settings.automap_notes)
        if not (0 <= settings.active_chain < len(settings.chains)):
            return
        item = settings.chains[settings.active_chain]
        col = layout.column()
        col.use_property_split = True
        col.prop(item, "role")
        col.prop(item, "side")
        source_bones = settings.source.data if settings.source else None
        robot_bones = settings.robot.data if settings.robot else None
        _bone_field(col, item, "source_base", source_bones)
        col.prop(item, "source_tips")
        col.prop(item, "source_tip_tail")
        _bone_field(col, item, "robot_base", robot_bones)
        col.prop(item, "robot_tips")
        col.prop(item, "use_tip_offset")
        if item.use_tip_offset:
            col.prop(item, "robot_tip_offset", text="")
        col.prop(item, "points")
        col.prop(item, "tip_weight")
        col.prop(item, "weight")
        advanced = col.column(heading="Advanced")
        advanced.prop(item, "source_landmarks")
        advanced.prop(item, "robot_landmarks")
        advanced.prop(item, "robot_start")
        advanced.prop(item, "source_fractions")
        advanced.prop(item, "robot_fractions")


def _bone_field(layout, item, prop: str, armature) -> None:
    if armature is not None:
        layout.prop_search(item, prop, armature, "bones")
    else:
        layout.prop(item, prop)


class ROBOT_RETARGET_PT_settings(_RobotPanel, bpy.types.Panel):
    bl_label = "Bake Settings"
    bl_parent_id = "ROBOT_RETARGET_PT_main"
    bl_options = {'DEFAULT_CLOSED'}

    def draw(self, context):
        settings = context.scene.robot_retarget
        layout = self.layout
        layout.use_property_split = True
        col = layout.column(heading="Frames")
        col.prop(settings, "use_scene_range")
        layout.prop(settings, "action_name")
        layout.prop(settings, "replace_action")
        layout.separator()
        layout.prop(settings, "root_mode")
        layout.prop(settings, "ground")
        layout.separator()
        layout.prop(settings, "avoid_self_collision")
        row = layout.row()
        row.active = settings.avoid_self_collision
        row.prop(settings, "collision_margin")
        layout.prop(settings, "show_collisions", icon='OVERLAY')
        layout.separator()
        layout.prop(settings, "filter")
        if settings.filter == "butterworth":
            layout.prop(settings, "cutoff_hz")
        elif settings.filter == "moving_average":
            layout.prop(settings, "window")
        layout.separator()
        layout.prop(settings, "objective")
        layout.prop(settings, "iterations")
        layout.prop(settings, "smoothness")
        layout.prop(settings, "rest_prior")


classes = (ROBOT_RETARGET_UL_chains, ROBOT_RETARGET_PT_main, ROBOT_RETARGET_PT_chains,
           ROBOT_RETARGET_PT_settings)
