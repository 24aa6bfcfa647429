"""Robot tab > Live: Live Retarget and its prediction, filter and record settings."""
from __future__ import annotations

import bpy

from .sidebar import _RobotPanel


class ROBOT_RETARGET_PT_live(_RobotPanel, bpy.types.Panel):
    bl_label = "Live"
    bl_parent_id = "ROBOT_RETARGET_PT_main"
    bl_options = {'DEFAULT_CLOSED'}

    def draw(self, context):
        layout = self.layout
        settings, live = context.scene.robot_retarget, context.scene.robot_retarget_live
        row = layout.row()
        row.enabled = settings.source is not None and settings.robot is not None
        row.operator("robot_retarget.live", icon='PLAY')
        layout.use_property_split = True
        layout.prop(live, "rate_hz")
        layout.prop(live, "predictor")
        col = layout.column()
        col.enabled = live.predictor != 'NONE'
        col.prop(live, "placement")
        col.prop(live, "auto_horizon")
        sub = col.row()
        sub.enabled = not live.auto_horizon
        sub.prop(live, "predict_ms")
        layout.prop(live, "filter_hz")
        layout.prop(live, "ghost")
        layout.prop(live, "record")


classes = (ROBOT_RETARGET_PT_live,)
