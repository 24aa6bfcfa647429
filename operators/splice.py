"""Splice Strips: join selected NLA strips of one robot at their best posture pairs.

Reads each strip's action into a core.splice.join.Clip, lets core.splice choose
the joins and make the transitions, and writes the result back as a new NLA
track "Splice" on top: the clips as trimmed strips back to back with each
transition as its own strip (a new action), or the whole result baked into
one new action. Nothing of the user's is modified: original actions stay as
they are (a clip whose root must be moved to continue the previous one gets a
moved copy), the original strips are only muted, and undo restores all.
splice_strips() is the plain function behind the operator, for headless use.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field

import bpy
import numpy as np
from bpy.props import BoolProperty, EnumProperty, FloatProperty, IntProperty, PointerProperty, StringProperty
from bpy_extras.anim_utils import action_get_channelbag_for_slot

from ..core.model.rig import RigLayout, bone_to_root_pose, rig_layout, root_pose_to_bone
from ..core.splice.join import Clip, RootMove, SpliceResult, SpliceSettings, splice
from ..core.splice.detect import MAIN_END, MAIN_START, DetectSettings, SpliceError
from ..core.model.transforms import matrix_to_quat, quat_to_matrix
from . import anim_io
from .common import reports_errors, tree_from_rig

REPORT_PROPERTY = "robot_retarget_splice"
TRACK_NAME = "Splice"
MARKERS = (MAIN_START, MAIN_END)


@dataclass
class SpliceOutcome:
    """What splice_strips made: the new track, its strips and actions, and the core result."""

    result: SpliceResult
    track: bpy.types.NlaTrack
    strips: list = field(default_factory=list)
    actions: list = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


# ------------------------------------------------------------ reading strips ---

def strips_of(obj: bpy.types.Object, selected_only: bool = True) -> list[bpy.types.NlaStrip]:
    """Action strips of `obj` (selected ones by default), in time order."""
    adt = obj.animation_data
    if adt is None:
        return []
    found = [s for t in adt.nla_tracks for s in t.strips if s.select or not selected_only]
    return sorted(found, key=lambda s: s.frame_start)


def selected_strips(scene) -> tuple[bpy.types.Object, list[bpy.types.NlaStrip]]:
    """The selected strips of the one armature that has any; errors name what is wrong."""
    owners = {obj.name: strips_of(obj) for obj in scene.objects}
    owners = {name: strips for name, strips in owners.items() if strips}
    if len(owners) > 1:
        raise SpliceError(f"selected strips belong to several objects ({', '.join(sorted(owners))}); "
                          "select the strips of one robot armature")
    if not owners:
        raise SpliceError("no NLA strips selected: select at least two action strips of one robot armature")
    name, strips = next(iter(owners.items()))
    obj = scene.objects[name]
    if obj.type != 'ARMATURE':
        raise SpliceError(f"object {name!r} is not an armature; splice the strips of a robot rig")
    if len(strips) < 2:
        raise SpliceError(f"only strip {strips[0].name!r} of {name!r} is selected; select at least two")
    return obj, strips


def _channels(layout: RigLayout) -> list[tuple[str, int, str]]:
    """Root location + quaternion, then one channel per joint (the bake's layout)."""
    root = layout.root.name
    out = [(f'pose.bones["{root}"].location', i, root) for i in range(3)]
    out += [(f'pose.bones["{root}"].rotation_quaternion', i, root) for i in range(4)]
    return out + [(f'pose.bones["{bone}"].{prop}', index, bone) for bone, prop, index in layout.joint_channels]


def _rest_values(layout: RigLayout) -> np.ndarray:
    return np.concatenate([np.zeros(3), [1.0, 0.0, 0.0, 0.0], np.zeros(len(layout.joint_channels))])


def _sample(action, slot, channels, frames: np.ndarray, strip_name: str) -> tuple[np.ndarray, list[str]]:
    """(F, C) values of the channels at `frames`; channels without F-curves keep the rest value."""
    bag = action_get_channelbag_for_slot(action, slot) if slot is not None else None
    if bag is None or len(bag.fcurves) == 0:
        raise SpliceError(f"strip {strip_name!r}: action {action.name!r} has no animation for this rig")
    values, missing = np.empty((len(frames), len(channels))), []
    for c, (path, index, bone) in enumerate(channels):
        fcurve = bag.fcurves.find(path, index=index)
        if fcurve is None:
            missing.append(bone)
            values[:, c] = np.nan
        else:
            values[:, c] = [fcurve.evaluate(float(f)) for f in frames]
    return values, missing


def _keys(action, slot, first: float, last: float) -> np.ndarray | None:
    """Keyed frames (clip frames) of a sparsely keyed action; None when keyed on (nearly) every frame."""
    bag = action_get_channelbag_for_slot(action, slot)
    frames = set()
    for fcurve in bag.fcurves:
        co = np.empty(2 * len(fcurve.keyframe_points), dtype=np.float32)
        fcurve.keyframe_points.foreach_get("co", co)
        frames.update(np.round(co[0::2]).astype(int).tolist())
    keys = np.array(sorted(f for f in frames if first <= f <= last), dtype=int)
    if len(keys) < 3 or np.median(np.diff(keys)) <= 1.5:
        return None
    return keys - int(round(first))


def strip_clip(strip: bpy.types.NlaStrip, layout: RigLayout, fps: float) -> tuple[Clip, list[str]]:
    """The strip's action range as a Clip (clip frame 0 = the strip's first action frame)."""
    if strip.type != 'CLIP' or strip.action is None:
        raise SpliceError(f"strip {strip.name!r} is not an action strip; only action strips can be spliced")
    if abs(strip.scale - 1.0) > 1e-6 or abs(strip.repeat - 1.0) > 1e-6:
        raise SpliceError(f"strip {strip.name!r} is scaled or repeated; set Playback Scale and Repeat to 1 first")
    first, last = strip.action_frame_start, strip.action_frame_end
    frames = first + np.arange(int(np.floor(last - first + 1e-6)) + 1)
    if len(frames) < 2:
        raise SpliceError(f"strip {strip.name!r} is shorter than two frames")
    action, slot = strip.action, strip.action_slot
    values, missing = _sample(action, slot, _channels(layout), frames, strip.name)
    values = np.where(np.isnan(values), _rest_values(layout), values)
    warnings = [f"strip {strip.name!r}: no keys for bone(s) {', '.join(sorted(set(missing)))}; "
                "their rest value is used"] if missing else []
    position, rotation = bone_to_root_pose(layout, values[:, :3], values[:, 3:7])
    markers = {}
    for marker in action.pose_markers:
        if marker.name in MARKERS:
            if first - 0.5 <= marker.frame <= last + 0.5:
                markers[marker.name] = marker.frame - first
            else:
                warnings.append(f"strip {strip.name!r}: marker {marker.name!r} (action frame {marker.frame}) "
                                "lies outside the strip's range; ignored")
    clip = Clip(strip.name, values[:, 7:], fps, position, matrix_to_quat(rotation), markers,
                keys=_keys(action, slot, first, last))
    return clip, warnings


# ------------------------------------------------------------ writing actions ---

def _keyed_action(obj, layout: RigLayout, name: str, q: np.ndarray, position: np.ndarray,
                  quaternion: np.ndarray, report: str) -> bpy.types.Action:
    """A new action keyed from frame 0; the object's own action assignment is left as it was."""
    adt = obj.animation_data
    before = (adt.action, adt.action_slot)
    action, slot = anim_io.new_action(obj, name)
    location, bone_quat = root_pose_to_bone(layout, position, quat_to_matrix(quaternion))
    values = np.column_stack([location, bone_quat, q])
    anim_io.write_channels(action, slot, _channels(layout), np.arange(len(q), dtype=float), values)
    action[REPORT_PROPERTY] = report
    adt.action = before[0]
    if before[0] is not None:
        adt.action_slot = before[1]
    return action


def _moved_copy(strip: bpy.types.NlaStrip, layout: RigLayout, move: RootMove) -> tuple:
    """A copy of the strip's action whose root is moved to continue the previous clip."""
    source = strip.action
    action = source.copy()
    action.name = f"{source.name}|spliced"
    slot = next(s for s in action.slots if s.identifier == strip.action_slot.identifier)
    start, end = action.frame_range
    frames = np.arange(np.floor(start), np.ceil(end) + 1)
    channels = _channels(layout)[:7]
    values, _ = _sample(action, slot, channels, frames, strip.name)
    values = np.where(np.isnan(values), _rest_values(layout)[:7], values)
    position, rotation = move.apply(*bone_to_root_pose(layout, values[:, :3], values[:, 3:7]))
    location, quaternion = root_pose_to_bone(layout, position, rotation)
    anim_io.write_channels(action, slot, channels, frames, np.column_stack([location, quaternion]))
    return action, slot


def _place(track, name: str, frame: int, action, slot, first: float | None = None,
           last: float | None = None) -> bpy.types.NlaStrip:
    strip = track.strips.new(name, frame, action)
    if slot is not None:
        strip.action_slot = slot
    if last is not None:
        strip.action_frame_end = last   # end first: the start then trims from the left
        strip.action_frame_start = first
    strip.extrapolation = 'NOTHING'
    return strip


def _write_pieces(obj, layout, track, strips, result: SpliceResult, start: int, report: str, outcome) -> None:
    """Clips as trimmed strips (moved copies where the root continues), transitions as new actions."""
    for piece in result.pieces:
        frame = start + piece.out_first
        if piece.kind == "transition":
            t = result.transitions[piece.index]
            action = _keyed_action(obj, layout, f"{obj.name}|transition {piece.index + 1}", t.q,
                                   t.root_position, t.root_quaternion, report)
            outcome.actions.append(action)
            outcome.strips.append(_place(track, action.name, frame, action, action.slots[0]))
            continue
        source = strips[piece.index]
        action, slot = source.action, source.action_slot
        if not result.root_moves[piece.index].is_identity:
            action, slot = _moved_copy(source, layout, result.root_moves[piece.index])
            action[REPORT_PROPERTY] = report
            outcome.actions.append(action)
        base = source.action_frame_start
        outcome.strips.append(_place(track, source.name, frame, action, slot, base + piece.first, base + piece.last))


def splice_strips(scene, obj: bpy.types.Object, strips: list, settings: SpliceSettings | None = None,
                  bake: bool = False) -> SpliceOutcome:
    """Splice `strips` of robot `obj` in time order onto a new top NLA track (see the module docstring)."""
    tree = tree_from_rig(obj)
    layout = rig_layout(tree)
    fps = scene.render.fps / scene.render.fps_base
    strips = sorted(strips, key=lambda s: s.frame_start)
    clips, warnings = [], []
    for strip in strips:
        clip, notes = strip_clip(strip, layout, fps)
        clips.append(clip)
        warnings += notes
    result = splice(clips, settings, tree.joint_names, tree.lower, tree.upper, tree.velocity)
    report = json.dumps(dict(result.report(), robot=obj.name, strips=[s.name for s in strips]))
    track = obj.animation_data.nla_tracks.new()
    track.name = TRACK_NAME
    outcome = SpliceOutcome(result, track, warnings=warnings + result.warnings)
    start = int(round(strips[0].frame_start))
    if bake:
        action = _keyed_action(obj, layout, f"{obj.name}|splice", result.q, result.root_position,
                               result.root_quaternion, report)
        outcome.actions.append(action)
        outcome.strips.append(_place(track, action.name, start, action, action.slots[0]))
    else:
        _write_pieces(obj, layout, track, strips, result, start, report, outcome)
    _hand_over(obj, strips, outcome)
    obj[REPORT_PROPERTY] = report
    return outcome


def _hand_over(obj, strips: list, outcome: SpliceOutcome) -> None:
    """Mute and deselect the originals, select the new strips; the clips' active action steps aside."""
    for strip in strips:
        strip.mute, strip.select = True, False
    for strip in outcome.strips:
        strip.select = True
    adt = obj.animation_data
    if adt.action is not None and adt.action in {s.action for s in strips}:
        adt.action = None  # it is one of the clips (kept by its strip) and would hide the splice
    elif adt.action is not None:
        outcome.warnings.append(f"the active action {adt.action.name!r} of {obj.name!r} plays over the NLA; "
                                "unassign it to see the splice")


def join_summary(join) -> str:
    text = (f"{join.a_clip} {join.a_time_s:.2f} s -> {join.b_clip} {join.b_time_s:.2f} s: "
            f"{join.angle_difference_deg:.1f}° apart, transition {join.transition_s:.2f} s, "
            f"saves {join.time_saved_s:.2f} s")
    return text if join.criteria_met else text + " (no pair met the criteria)"


# ------------------------------------------------------------------ settings ---

class RobotRetargetSpliceSettings(bpy.types.PropertyGroup):
    """Splice options on the scene, shared by the sidebar and the NLA menu entry."""

    threshold_deg: FloatProperty(name="Threshold", default=15.0, min=5.0, max=30.0, subtype='NONE',
                                 description="Largest integrated angle difference (sum over joints, degrees)")
    criterion: EnumProperty(name="Criterion", default="integrated", items=[
        ("integrated", "Integrated", "Sum over joints of the angle differences"),
        ("max_joint", "Largest Joint", "The largest single-joint difference")])
    max_joint_deg: FloatProperty(name="Largest Joint", default=5.0, min=0.1, max=90.0,
                                 description="Largest single-joint difference (degrees) for that criterion")
    policy: EnumProperty(name="Policy", default="shortest", items=[
        ("shortest", "Shortest Preparation", "Keep the least preparatory time (keeps the tempo)"),
        ("similar", "Most Similar", "The most alike pair of postures")])
    match_direction: BoolProperty(name="Same Direction", description="Moving joints drive the same way")
    match_speed: BoolProperty(name="Similar Speed", description="Integrated drive speeds within the tolerance")
    detector: EnumProperty(name="Detector", default="reversal", items=[
        ("reversal", "Reversal or Stop", "Main movement from the first and last drive reversal or stop"),
        ("accumulated", "Accumulated Change", "Main movement from changes of the angle change per step")])
    margin_s: FloatProperty(name="Margin", default=0.2, min=0.0, max=2.0, unit='TIME_ABSOLUTE')
    change_percent: FloatProperty(name="Change", default=30.0, min=5.0, max=50.0, subtype='PERCENTAGE')
    speed_source: EnumProperty(name="Speed From", default="both", items=[
        ("a", "Earlier Clip", ""), ("b", "Later Clip", ""), ("both", "Both", "")])
    speed_statistic: EnumProperty(name="Statistic", default="median", items=[
        ("mean", "Mean", ""), ("median", "Median", ""), ("mode", "Mode", "")])
    use_speed: BoolProperty(name="Given Speed", description="Move the transition at the speed below")
    speed: FloatProperty(name="Speed", default=1.0, min=0.01, unit='ROTATION', description="Joint speed per second")
    continue_root: BoolProperty(name="Continue Root", default=True,
                                description="Each clip's root carries on from where the previous one ends")
    bake: BoolProperty(name="Bake into One Action", description="One new action instead of strips and transitions")

    def to_settings(self) -> SpliceSettings:
        detect = DetectSettings(method=self.detector, margin_s=self.margin_s, change_percent=self.change_percent)
        return SpliceSettings(
            threshold_deg=self.threshold_deg, criterion=self.criterion, max_joint_deg=self.max_joint_deg,
            policy=self.policy, match_direction=self.match_direction, match_speed=self.match_speed,
            speed_source=self.speed_source, speed_statistic=self.speed_statistic,
            speed_rad_s=self.speed if self.use_speed else None, continue_root=self.continue_root, detect=detect)


# ----------------------------------------------------------------- operators ---

class ROBOT_RETARGET_OT_splice_strips(bpy.types.Operator):
    """Join the selected strips of one robot where their postures match best, with generated transitions"""

    bl_idname = "robot_retarget.splice_strips"
    bl_label = "Splice Strips"
    bl_options = {'REGISTER', 'UNDO'}

    @reports_errors
    def execute(self, context):
        props = context.scene.robot_retarget_splice
        obj, strips = selected_strips(context.scene)
        outcome = splice_strips(context.scene, obj, strips, props.to_settings(), bake=props.bake)
        for warning in outcome.warnings:
            self.report({'WARNING'}, warning)
        for join in outcome.result.joins:
            self.report({'INFO'}, join_summary(join))
        self.report({'INFO'}, f"Spliced {len(strips)} strips of {obj.name!r} onto track {outcome.track.name!r}")
        return {'FINISHED'}


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
