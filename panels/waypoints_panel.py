"""Robot tab > Waypoints: orient a keyed target's waypoints and let the robot arm follow it (issues 5, 15)."""
from __future__ import annotations

import bpy

from .sidebar import _RobotPanel


class ROBOT_RETARGET_PT_waypoints(_RobotPanel, bpy.types.Panel):
    bl_label = "Waypoints"
    bl_parent_id = "ROBOT_RETARGET_PT_main"
    bl_options = {'DEFAULT_CLOSED'}

    def draw(self, context):
        column = self.layout.column()
        column.enabled = context.object is not None
        column.operator("robot_retarget.orient_waypoints", icon='ORIENTATION_GIMBAL')
        row = column.row()
        row.enabled = context.scene.robot_retarget.robot is not None
        row.operator("robot_retarget.follow_path", icon='CURVE_PATH')


classes = (ROBOT_RETARGET_PT_waypoints,)
