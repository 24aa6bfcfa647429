"""Feet & contacts inside Bake Settings: Plant Feet, and the source's editable contact channels."""
from __future__ import annotations

import bpy

from ..core.feet.contacts import SIDES
from ..operators.contacts import PROPERTY, contact_channel, has_contacts


def _contact_count(source, side: str) -> int:
    """Keys that put the foot down: one per contact of the channel."""
    fcurve = contact_channel(source, side)
    if fcurve is None:
        return 0
    return sum(1 for point in fcurve.keyframe_points if point.co[1] > 0.5)


class ROBOT_RETARGET_PT_contacts(bpy.types.Panel):
    bl_label = "Feet & Contacts"
    bl_space_type = 'VIEW_3D'
    bl_region_type = 'UI'
    bl_category = "Robot"
    bl_parent_id = "ROBOT_RETARGET_PT_settings"

    def draw(self, context):
        settings = context.scene.robot_retarget
        layout = self.layout
        layout.prop(settings, "plant_feet")
        source = settings.source
        if source is None:
            layout.label(text="Pick a source to see its contacts", icon='INFO')
            return
        row = layout.row(align=True)
        row.operator("robot_retarget.detect_contacts", icon='SNAP_FACE')
        row.operator("robot_retarget.clear_contacts", text="", icon='X')
        if not has_contacts(source):
            if settings.plant_feet:
                layout.label(text="No channels: the bake detects contacts itself", icon='INFO')
            return
        col = layout.column(align=True)
        for side in SIDES:
            name = PROPERTY.format(side)
            if name not in source:
                continue
            row = col.row(align=True)
            row.label(text=f"{side.title()}: {_contact_count(source, side)} contacts")
            down = bool(source[name])
            op = row.operator("robot_retarget.set_contact", text="Lift Here" if down else "Down Here",
                              icon='KEYFRAME_HLT')
            op.side, op.down = side, not down
        layout.label(text="Edit the keys in the Dope Sheet (source object)", icon='ACTION')


classes = (ROBOT_RETARGET_PT_contacts,)
