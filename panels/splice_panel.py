"""Robot tab > Splice Strips: splice options, the button, and the main-movement markers.

The markers are pose markers on each selected strip's action (`main_start`,
`main_end`, in action frames); they are shown here as editable frames so an
animator can pin what the detector would otherwise guess.
"""
from __future__ import annotations

import bpy

from ..operators.splice import MARKERS, strips_of

_LABELS = {"main_start": "Main Start", "main_end": "Main End"}


class ROBOT_RETARGET_PT_splice(bpy.types.Panel):
    bl_space_type = 'VIEW_3D'
    bl_region_type = 'UI'
    bl_category = "Robot"
    bl_label = "Splice Strips"
    bl_parent_id = "ROBOT_RETARGET_PT_main"
    bl_options = {'DEFAULT_CLOSED'}

    def draw(self, context):
        props = getattr(context.scene, "robot_retarget_splice", None)
        if props is None:
            return
        layout = self.layout
        layout.use_property_split = True
        col = layout.column()
        col.prop(props, "criterion")
        if props.criterion == "integrated":
            col.prop(props, "auto_threshold")
            if not props.auto_threshold:
                col.prop(props, "threshold_deg")
        else:
            col.prop(props, "mean_deg" if props.criterion == "mean" else "max_joint_deg")
        col.prop(props, "policy")
        col.prop(props, "match_direction")
        col.prop(props, "match_speed")
        if props.match_speed or props.policy == "speed":
            col.prop(props, "speed_measure")
        if props.match_speed:
            col.prop(props, "speed_tolerance")
        col.prop(props, "interval_s")
        col.prop(props, "still_deg_s")
        col.separator()
        _draw_detector(col, props)
        col.separator()
        col.prop(props, "use_speed")
        if props.use_speed:
            col.prop(props, "speed")
        else:
            col.prop(props, "speed_source")
            col.prop(props, "speed_statistic")
        col.prop(props, "linear")
        col.prop(props, "continue_root")
        col.prop(props, "bake")
        button = layout.column()
        button.scale_y = 1.3
        button.operator("robot_retarget.splice_strips", icon='NLA')
        robot = context.scene.robot_retarget.robot
        if robot is not None:
            _draw_markers(layout, context.scene, robot)


def _draw_detector(col, props) -> None:
    """The detector and only the settings it uses."""
    col.prop(props, "detector")
    if props.detector == "fixed":
        col.prop(props, "window_s")
        return
    if props.detector == "accumulated":
        col.prop(props, "change_percent")
        col.prop(props, "confirm")
        if props.confirm:
            col.prop(props, "average_percent")
        col.prop(props, "accumulated_margin")
    if props.detector == "reversal" or props.accumulated_margin:
        col.prop(props, "margin_s")


def _draw_markers(layout, scene, robot) -> None:
    """One box per selected strip: its action's main_start / main_end markers."""
    strips = [s for s in strips_of(robot) if s.action is not None]
    if not strips:
        layout.label(text="Select NLA strips to see their markers", icon='INFO')
        return
    for strip in strips:
        box = layout.box()
        box.label(text=f"{strip.name} ({strip.action.name})", icon='ACTION')
        current = round(strip.action_frame_start + (scene.frame_current - strip.frame_start) / (strip.scale or 1.0))
        for name in MARKERS:
            row = box.row(align=True)
            marker = strip.action.pose_markers.get(name)
            if marker is not None:
                row.prop(marker, "frame", text=_LABELS[name])
            else:
                row.label(text=f"{_LABELS[name]}: detected")
            op = row.operator("robot_retarget.splice_marker", text="", icon='MARKER_HLT')
            op.action, op.marker, op.frame = strip.action.name, name, current
            if marker is not None:
                op = row.operator("robot_retarget.splice_marker", text="", icon='X')
                op.action, op.marker, op.remove = strip.action.name, name, True


classes = (ROBOT_RETARGET_PT_splice,)
