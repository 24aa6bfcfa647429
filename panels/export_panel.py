"""Robot tab > Playback Export: what would be exported, and the button that does it."""
from __future__ import annotations

import bpy

from .sidebar import robot_and_action


class ROBOT_RETARGET_PT_export(bpy.types.Panel):
    bl_space_type = 'VIEW_3D'
    bl_region_type = 'UI'
    bl_category = "Robot"
    bl_label = "Playback Export"
    bl_parent_id = "ROBOT_RETARGET_PT_main"

    def draw(self, context):
        from ..operators.export import scene_fps

        layout = self.layout
        picked = robot_and_action(layout, context)
        if picked is None:
            return
        robot, action = picked
        col = layout.column(align=True)
        col.label(text=f"Robot: {robot.name}", icon='ARMATURE_DATA')
        if action is None:
            col.label(text="No action: bake one first", icon='INFO')
        else:
            start, end = action.frame_range
            seconds = (end - start) / scene_fps(context.scene)
            col.label(text=f"{action.name}: frames {start:.0f}-{end:.0f} ({seconds:.2f} s)", icon='ACTION')
        row = layout.row()
        row.enabled = action is not None
        row.operator("robot_retarget.export_playback", icon='EXPORT', text="Export Robot Playback...")


classes = (ROBOT_RETARGET_PT_export,)
