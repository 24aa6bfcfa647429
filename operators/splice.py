"""Splice Strips: join selected NLA strips of one robot at their best posture pairs.

The work is operators.splice_nla.splice_strips() (read the strips as they
play, let core.splice choose the joins and make the transitions, write a
track "Splice"); here are the scene settings the panel shows, the operator
with its redo panel (the best few candidate pairs of each join, to pick
another), and the main-movement marker operator.
"""
from __future__ import annotations

import json

import bpy
from bpy.props import BoolProperty, EnumProperty, FloatProperty, IntProperty, IntVectorProperty, PointerProperty, \
    StringProperty

from ..core.splice.detect import DetectSettings
from ..core.splice.settings import MAX_JOINT_DEFAULT_DEG, PER_JOINT_DEFAULT_DEG, SUM_DEFAULT_DEG, THRESHOLD_RANGE, \
    SpliceSettings
from .common import reports_errors
from .splice_nla import MARKERS, REPORT_PROPERTY, TRACK_NAME, selected_strips, splice_strips, strip_clip, strips_of

__all__ = ["MARKERS", "REPORT_PROPERTY", "TRACK_NAME", "join_summary", "selected_strips", "splice_strips",
           "strip_clip", "strips_of"]

MAX_PICKS = 8  # joins whose pair can be picked in the redo panel; later joins take the best pair


def join_summary(join) -> str:
    text = (f"{join.a_clip} {join.a_time_s:.2f} s -> {join.b_clip} {join.b_time_s:.2f} s: "
            f"{join.angle_difference_deg:.1f}° apart, transition {join.transition_s:.2f} s, "
            f"{_time_saved(join.time_saved_s)}")
    if getattr(join, "fallback", "") == "conditions":
        return text + " (within the threshold; the direction/speed conditions not met)"
    return text if join.criteria_met else text + " (no pair met the criteria)"


def _time_saved(seconds: float) -> str:
    """'saves 0.40 s', or 'adds 0.30 s' where the join is longer than what it cuts (not 'saves -0.00 s')."""
    if seconds <= -0.005:
        return f"adds {-seconds:.2f} s"
    return f"saves {max(seconds, 0.0):.2f} s"


# ------------------------------------------------------------------ settings ---

def _threshold(name: str, criterion: str, default: float, description: str) -> FloatProperty:
    low, high = THRESHOLD_RANGE[criterion]
    return FloatProperty(name=name, default=default, min=low, max=high, description=description)


class RobotRetargetSpliceSettings(bpy.types.PropertyGroup):
    """Splice options on the scene, shared by the sidebar and the NLA menu entry."""

    criterion: EnumProperty(name="Criterion", default="integrated", items=[
        ("integrated", "Sum", "Sum over joints of the angle differences"),
        ("mean", "Mean", "Mean over joints of the angle differences (one threshold fits any joint count)"),
        ("max_joint", "Largest Joint", "The largest single-joint difference")])
    auto_threshold: BoolProperty(name="Scale with Joints", default=True,
                                 description=f"Sum threshold {SUM_DEFAULT_DEG:g}° up to 6 joints, "
                                             f"{PER_JOINT_DEFAULT_DEG:g}° per joint beyond")
    threshold_deg: _threshold("Threshold", "integrated", SUM_DEFAULT_DEG,
                              "Largest integrated angle difference (sum over joints, degrees)")
    mean_deg: _threshold("Mean", "mean", PER_JOINT_DEFAULT_DEG, "Largest mean angle difference per joint (degrees)")
    max_joint_deg: _threshold("Largest Joint", "max_joint", MAX_JOINT_DEFAULT_DEG,
                              "Largest single-joint difference (degrees) for that criterion")
    policy: EnumProperty(name="Policy", default="shortest", items=[
        ("shortest", "Shortest Preparation", "Keep the least preparatory time (keeps the tempo)"),
        ("similar", "Most Similar", "The most alike pair of postures"),
        ("speed", "Closest Speed", "The pair whose drive speeds are closest")])
    match_direction: BoolProperty(name="Same Direction", description="Moving joints drive the same way")
    match_speed: BoolProperty(name="Similar Speed", description="Drive speeds within the tolerance")
    speed_measure: EnumProperty(name="Speed Of", default="integrated", items=[
        ("integrated", "All Joints", "Drive speeds summed over joints"),
        ("largest_joint", "Joint Changing Most", "The drive speed of the joint that changes most")])
    speed_tolerance: FloatProperty(name="Speed Tolerance", default=0.3, min=0.0, max=2.0, subtype='FACTOR',
                                   description="Relative difference of drive speeds allowed")
    interval_s: FloatProperty(name="Interval", default=0.2, min=0.01, max=2.0, unit='TIME_ABSOLUTE',
                              description="Drive direction and speed from the change over this interval")
    still_deg_s: FloatProperty(name="Still Below", default=2.0, min=0.0, max=90.0,
                               description="Joints slower than this (degrees per second) count as still")
    detector: EnumProperty(name="Detector", default="reversal", items=[
        ("reversal", "Reversal or Stop", "Main movement from the first and last drive reversal or stop"),
        ("accumulated", "Accumulated Change", "Main movement from changes of the angle change per step"),
        ("fixed", "Fixed Windows", "Preparatory windows of a fixed duration from the start and the end")])
    margin_s: FloatProperty(name="Margin", default=0.2, min=0.0, max=2.0, unit='TIME_ABSOLUTE')
    change_percent: FloatProperty(name="Change", default=30.0, min=5.0, max=50.0, subtype='PERCENTAGE')
    average_percent: FloatProperty(name="Confirm Average", default=10.0, min=0.1, max=50.0, subtype='PERCENTAGE')
    confirm: BoolProperty(name="Confirm", default=True, description="Confirm a change on the averages")
    accumulated_margin: BoolProperty(name="Add Margin", description="Move the boundaries out by the margin")
    window_s: FloatProperty(name="Window", default=0.5, min=0.0, max=10.0, unit='TIME_ABSOLUTE',
                            description="Length of each preparatory window")
    speed_source: EnumProperty(name="Speed From", default="both", items=[
        ("a", "Earlier Clip", ""), ("b", "Later Clip", ""), ("both", "Both", "")])
    speed_statistic: EnumProperty(name="Statistic", default="median", items=[
        ("mean", "Mean", ""), ("median", "Median", ""), ("mode", "Mode", "")])
    use_speed: BoolProperty(name="Given Speed", description="Move the transition at the speed below")
    speed: FloatProperty(name="Speed", default=1.0, min=0.01, unit='ROTATION', description="Joint speed per second")
    linear: BoolProperty(name="Linear Transition",
                         description="Straight interpolation at the speed, without blending the clips' velocities")
    continue_root: BoolProperty(name="Continue Root", default=True,
                                description="Each clip's root carries on from where the previous one ends")
    bake: BoolProperty(name="Bake into One Action", description="One new action instead of strips and transitions")

    def to_settings(self) -> SpliceSettings:
        detect = DetectSettings(method=self.detector, margin_s=self.margin_s, interval_s=self.interval_s,
                                change_percent=self.change_percent, average_percent=self.average_percent,
                                confirm=self.confirm, accumulated_margin=self.accumulated_margin,
                                window_s=self.window_s, still_deg_s=self.still_deg_s)
        return SpliceSettings(
            threshold_deg=None if self.auto_threshold else self.threshold_deg, criterion=self.criterion,
            mean_deg=self.mean_deg, max_joint_deg=self.max_joint_deg, policy=self.policy,
            match_direction=self.match_direction, match_speed=self.match_speed, speed_measure=self.speed_measure,
            speed_tolerance=self.speed_tolerance, interval_s=self.interval_s, still_deg_s=self.still_deg_s,
            speed_source=self.speed_source, speed_statistic=self.speed_statistic,
            speed_rad_s=self.speed if self.use_speed else None, transition="linear" if self.linear else "eased",
            continue_root=self.continue_root, detect=detect)


# ----------------------------------------------------------------- operators ---

def _candidate_line(number: int, c: dict) -> str:
    verdict = "" if c["passes"] else (" (angle only)" if c["criteria_met"] else " (fails)")
    return (f"{number}. {c['a_time_s']:.2f} s -> {c['b_time_s']:.2f} s, {c['angle_difference_deg']:.1f}°, "
            f"kept {c['kept_preparation_s']:.2f} s{verdict}")


class ROBOT_RETARGET_OT_splice_strips(bpy.types.Operator):
    """Join the selected strips of one robot where their postures match best, with generated transitions"""

    bl_idname = "robot_retarget.splice_strips"
    bl_label = "Splice Strips"
    bl_options = {'REGISTER', 'UNDO'}

    picks: IntVectorProperty(name="Pair", size=MAX_PICKS, min=1, max=SpliceSettings.candidates,
                             default=(1,) * MAX_PICKS, options={'SKIP_SAVE'},
                             description="Candidate pair of each join (1: the best ranked)")
    candidates_json: StringProperty(options={'HIDDEN', 'SKIP_SAVE'})  # what the redo panel lists

    @reports_errors
    def execute(self, context):
        props = context.scene.robot_retarget_splice
        obj, strips = selected_strips(context.scene)
        picks = [p - 1 for p in self.picks][:len(strips) - 1]
        outcome = splice_strips(context.scene, obj, strips, props.to_settings(), bake=props.bake, picks=picks)
        joins = outcome.result.joins
        self.candidates_json = json.dumps([{"a_clip": j.a_clip, "b_clip": j.b_clip, "candidates": j.candidates}
                                           for j in joins[:MAX_PICKS]])
        for warning in outcome.warnings:
            self.report({'WARNING'}, warning)
        for join in joins:
            self.report({'INFO'}, join_summary(join))
        self.report({'INFO'}, f"Spliced {len(strips)} strips of {obj.name!r} onto track {outcome.track.name!r}")
        return {'FINISHED'}

    def draw(self, context):
        """The redo panel: each join's best candidate pairs, and which one to use."""
        layout = self.layout
        joins = json.loads(self.candidates_json or "[]")
        if not joins:
            layout.label(text="Run once to list the candidate pairs", icon='INFO')
        for k, join in enumerate(joins):
            box = layout.box()
            box.label(text=f"Join {k + 1}: {join['a_clip']} -> {join['b_clip']}", icon='NLA')
            for number, candidate in enumerate(join["candidates"], start=1):
                icon = 'RADIOBUT_ON' if number == self.picks[k] else 'RADIOBUT_OFF'
                box.label(text=_candidate_line(number, candidate), icon=icon)
            box.prop(self, "picks", index=k, text="Pair")


class ROBOT_RETARGET_OT_splice_marker(bpy.types.Operator):
    """Set or clear a main-movement marker (pose marker) on an action"""

    bl_idname = "robot_retarget.splice_marker"
    bl_label = "Main Movement Marker"
    bl_options = {'REGISTER', 'UNDO'}

    action: StringProperty(name="Action")
    marker: EnumProperty(name="Marker", items=[(m, m, "") for m in MARKERS])
    frame: IntProperty(name="Frame", description="Action frame")
    remove: BoolProperty(name="Remove")

    def execute(self, context):
        action = bpy.data.actions.get(self.action)
        if action is None:
            self.report({'ERROR'}, f"no action {self.action!r}")
            return {'CANCELLED'}
        marker = action.pose_markers.get(self.marker)
        if self.remove:
            if marker is not None:
                action.pose_markers.remove(marker)
            return {'FINISHED'}
        marker = marker or action.pose_markers.new(self.marker)
        marker.frame = self.frame
        return {'FINISHED'}


def _menu(self, context):
    self.layout.separator()
    self.layout.operator(ROBOT_RETARGET_OT_splice_strips.bl_idname, icon='NLA')


_MENUS = ("NLA_MT_strips", "NLA_MT_edit", "NLA_MT_context_menu")  # Strip menu (5.x), Edit (4.x), right click

classes = (RobotRetargetSpliceSettings, ROBOT_RETARGET_OT_splice_strips, ROBOT_RETARGET_OT_splice_marker)


def register():
    bpy.types.Scene.robot_retarget_splice = PointerProperty(type=RobotRetargetSpliceSettings)
    for name in _MENUS:
        menu = getattr(bpy.types, name, None)
        if menu is not None:
            menu.append(_menu)


def unregister():
    for name in _MENUS:
        menu = getattr(bpy.types, name, None)
        if menu is not None:
            menu.remove(_menu)
    del bpy.types.Scene.robot_retarget_splice
