"""Robot tab > Programs: part collections, basic motions and compiling a motion program (issue 13)."""
from __future__ import annotations

import bpy

from .sidebar import _RobotPanel


class ROBOT_RETARGET_PT_programs(_RobotPanel, bpy.types.Panel):
    bl_label = "Programs"
    bl_parent_id = "ROBOT_RETARGET_PT_main"
    bl_options = {'DEFAULT_CLOSED'}

    def draw(self, context):
        layout = self.layout
        settings = context.scene.robot_retarget
        column = layout.column()
        column.enabled = settings.robot is not None
        column.operator("robot_retarget.make_parts", icon='GROUP_BONE')
        column.operator("robot_retarget.make_basic_motion", icon='ACTION')
        column.operator("robot_retarget.set_frame_times", icon='TIME')
        column.prop_search(settings, "program_text", bpy.data, "texts", icon='TEXT')
        row = column.row()
        row.enabled = bool(settings.program_text)
        row.operator("robot_retarget.compile_program", icon='NLA').text = settings.program_text


classes = (ROBOT_RETARGET_PT_programs,)
