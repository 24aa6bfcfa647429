"""Robot tab > Balance: the active robot action's balance readout (Check Balance computes it)."""
from __future__ import annotations

import json

import bpy

from .sidebar import _RobotPanel, robot_and_action


class ROBOT_RETARGET_PT_balance(_RobotPanel, bpy.types.Panel):
    bl_label = "Balance"
    bl_parent_id = "ROBOT_RETARGET_PT_main"
    bl_options = {'DEFAULT_CLOSED'}

    def draw(self, context):
        from ..operators.balance import BALANCE_PROPERTY, balance_summary
        from ..operators.gait import GAIT_PROPERTY, gait_summary

        layout = self.layout
        settings = context.scene.robot_retarget
        row = layout.row()
        row.enabled = settings.source is not None and settings.robot is not None
        row.operator("robot_retarget.generate_gait", icon='MOD_DYNAMICPAINT')
        picked = robot_and_action(layout, context)
        if picked is None:
            return
        _, action = picked
        row = layout.row(align=True)
        row.enabled = action is not None
        row.operator("robot_retarget.check_balance", icon='ORIENTATION_GIMBAL')
        row.prop(settings, "show_balance", text="", icon='OVERLAY')
        gait = action.get(GAIT_PROPERTY) if action is not None else None
        if gait:
            report = json.loads(gait)
            box = layout.box()
            box.label(text=f"Gait: {report['steps']} steps at {report['rate_hz']:.0f} Hz", icon='MOD_DYNAMICPAINT')
            for line in gait_summary(report).split("; ")[1:]:
                box.label(text=line, icon='DOT')
        stored = action.get(BALANCE_PROPERTY) if action is not None else None
        if not stored:
            return
        readout = json.loads(stored)
        box = layout.box()
        ok = readout["zmp_outside_support_pct"] == 0.0
        box.label(text=balance_summary(readout), icon='CHECKMARK' if ok else 'ERROR')
        for first, last in readout["frames_outside"][:6]:
            box.label(text=f"frames {first}-{last}: ZMP outside the feet", icon='DOT')
        if len(readout["frames_outside"]) > 6:
            box.label(text=f"... and {len(readout['frames_outside']) - 6} more spans", icon='BLANK1')


classes = (ROBOT_RETARGET_PT_balance,)
