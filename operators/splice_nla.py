"""Splice Strips on the NLA: read strips as they play, write the spliced track, mark the joins.

Each strip is read as it plays on the NLA, at the scene's frame rate: a
strip with a playback scale or repeat other than 1 is sampled through the
NLA's own time mapping (the action range stretched by the scale, repeated),
and its kept part becomes a new action (`<action>|played`), since a trimmed
copy of the original strip could not play it. A reversed strip is refused.
The result goes on a track "Splice" on top: the clips trimmed back to back
with each transition as its own strip, or the whole result baked into one
action. A second run replaces the track the earlier one made if it is still
as that run left it (and the actions only it used); the chosen pair of each
join is marked on the timeline, which the NLA editor shows, and the earlier
run's markers go.
Nothing of the user's is modified: original actions stay as they are, the
original strips are only muted, and undo restores all.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field

import bpy
import numpy as np
from bpy_extras.anim_utils import action_get_channelbag_for_slot

from ..core.model.rig import RigLayout, bone_to_root_pose, rig_layout, root_pose_to_bone
from ..core.model.transforms import matrix_to_quat, quat_to_matrix
from ..core.splice.detect import MAIN_END, MAIN_START, SpliceError
from ..core.splice.join import Clip, RootMove, SpliceResult, SpliceSettings, splice
from . import anim_io
from .common import tree_from_rig

REPORT_PROPERTY = "robot_retarget_splice"
MARKER_PROPERTY = "robot_retarget_splice_markers"  # names of the timeline markers the last run made
TRACK_PROPERTY = "robot_retarget_splice_track"  # the track the last run made and its strips' names
TRACK_NAME = "Splice"
MARKERS = (MAIN_START, MAIN_END)


@dataclass
class SpliceOutcome:
    """What splice_strips made: the new track, its strips and actions, the markers and the core result."""

    result: SpliceResult
    track: bpy.types.NlaTrack
    strips: list = field(default_factory=list)
    actions: list = field(default_factory=list)
    markers: list = field(default_factory=list)
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


def is_plain(strip: bpy.types.NlaStrip) -> bool:
    """Played at scale 1, once: the strip's action frames are scene frames."""
    return abs(strip.scale - 1.0) <= 1e-6 and abs(strip.repeat - 1.0) <= 1e-6


def played_frames(strip: bpy.types.NlaStrip) -> np.ndarray:
    """Action frames the strip plays at each of its scene frames (the NLA's time mapping).

    Scaled: action time runs 1/scale as fast; repeated: it wraps to the
    range's start, except on the strip's last frame after whole repeats.
    """
    first, last = strip.action_frame_start, strip.action_frame_end
    length = (last - first) or 1.0
    count = int(np.floor(strip.frame_end - strip.frame_start + 1e-6)) + 1
    local = np.arange(count, dtype=float)
    frames = first + np.fmod(local, length * strip.scale) / strip.scale
    whole = abs(strip.repeat - round(strip.repeat)) <= 1e-6
    if whole and abs(local[-1] - (strip.frame_end - strip.frame_start)) <= 1e-6:
        frames[-1] = last
    return frames


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


def _strip_markers(strip, frames: int, warnings: list[str]) -> dict[str, float]:
    """main_start / main_end as clip frames: main_start in the first repeat, main_end in the last."""
    first, last = strip.action_frame_start, strip.action_frame_end
    repeats = max(int(np.ceil(strip.repeat - 1e-6)), 1)
    markers = {}
    for marker in strip.action.pose_markers:
        if marker.name not in MARKERS:
            continue
        if not first - 0.5 <= marker.frame <= last + 0.5:
            warnings.append(f"strip {strip.name!r}: marker {marker.name!r} (action frame {marker.frame}) "
                            "lies outside the strip's range; ignored")
            continue
        repeat = repeats - 1 if marker.name == MAIN_END else 0
        frame = (marker.frame - first + repeat * (last - first)) * strip.scale
        markers[marker.name] = float(min(frame, frames - 1))
    return markers


def strip_clip(strip: bpy.types.NlaStrip, layout: RigLayout, fps: float) -> tuple[Clip, list[str]]:
    """The strip as it plays, as a Clip (clip frame 0 = the strip's first frame)."""
    if strip.type != 'CLIP' or strip.action is None:
        raise SpliceError(f"strip {strip.name!r} is not an action strip; only action strips can be spliced")
    if strip.use_reverse:
        raise SpliceError(f"strip {strip.name!r} plays reversed; turn off Reversed (or splice a reversed copy "
                          "of its action) first")
    frames = played_frames(strip)
    if len(frames) < 2:
        raise SpliceError(f"strip {strip.name!r} is shorter than two frames")
    action, slot = strip.action, strip.action_slot
    values, missing = _sample(action, slot, _channels(layout), frames, strip.name)
    values = np.where(np.isnan(values), _rest_values(layout), values)
    warnings = [f"strip {strip.name!r}: no keys for bone(s) {', '.join(sorted(set(missing)))}; "
                "their rest value is used"] if missing else []
    position, rotation = bone_to_root_pose(layout, values[:, :3], values[:, 3:7])
    markers = _strip_markers(strip, len(frames), warnings)
    keys = _keys(action, slot, strip.action_frame_start, strip.action_frame_end) if is_plain(strip) else None
    clip = Clip(strip.name, values[:, 7:], fps, position, matrix_to_quat(rotation), markers, keys=keys)
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


def _played_copy(obj, layout: RigLayout, strip, clip: Clip, move: RootMove, first: int, last: int,
                 report: str) -> bpy.types.Action:
    """The kept frames of a scaled or repeated strip as played, root moved, as a new action."""
    position, rotation = move.apply(np.asarray(clip.root_position), quat_to_matrix(clip.root_quaternion))
    keep = slice(first, last + 1)
    return _keyed_action(obj, layout, f"{strip.action.name}|played", np.asarray(clip.q)[keep], position[keep],
                         matrix_to_quat(rotation[keep]), report)


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


def _write_pieces(obj, layout, track, strips, clips, result: SpliceResult, start: int, report: str,
                  outcome) -> None:
    """Clips as trimmed strips (moved or played copies where needed), transitions as new actions."""
    for piece in result.pieces:
        frame = start + piece.out_first
        if piece.kind == "transition":
            t = result.transitions[piece.index]
            action = _keyed_action(obj, layout, f"{obj.name}|transition {piece.index + 1}", t.q,
                                   t.root_position, t.root_quaternion, report)
            outcome.actions.append(action)
            outcome.strips.append(_place(track, action.name, frame, action, action.slots[0]))
            continue
        source, move = strips[piece.index], result.root_moves[piece.index]
        if not is_plain(source):
            action = _played_copy(obj, layout, source, clips[piece.index], move, piece.first, piece.last, report)
            outcome.actions.append(action)
            outcome.strips.append(_place(track, source.name, frame, action, action.slots[0]))
            continue
        action, slot = source.action, source.action_slot
        if not move.is_identity:
            action, slot = _moved_copy(source, layout, move)
            action[REPORT_PROPERTY] = report
            outcome.actions.append(action)
        base = source.action_frame_start
        outcome.strips.append(_place(track, source.name, frame, action, slot, base + piece.first, base + piece.last))


# ------------------------------------------------------ the previous splice ---

def _track_of(obj, strip) -> bpy.types.NlaTrack | None:
    return next((t for t in obj.animation_data.nla_tracks if any(s == strip for s in t.strips)), None)


def _made_by_splice(obj, track) -> bool:
    """The track the earlier run made, as it left it: its name and the names of its strips.
    A user's own track called "Splice", or the earlier track renamed or edited, is not it."""
    made = json.loads(obj.get(TRACK_PROPERTY, "{}"))
    return track.name == made.get("track") and [s.name for s in track.strips] == made.get("strips")


def _refuse_own_strips(obj, strips: list) -> None:
    for strip in strips:
        track = _track_of(obj, strip)
        if track is not None and _made_by_splice(obj, track):
            raise SpliceError(f"strip {strip.name!r} is on the track {track.name!r} an earlier splice made; select "
                              "the original strips (muted on their own track) to splice again")


def _remove_previous(scene, obj) -> None:
    """Drop the earlier run's track "Splice", the actions only it used, and its timeline markers."""
    tracks = obj.animation_data.nla_tracks
    for track in [t for t in tracks if _made_by_splice(obj, t)]:
        made = {s.action for s in track.strips if s.action is not None and REPORT_PROPERTY in s.action}
        tracks.remove(track)
        for action in made:
            if action.users == 0:
                bpy.data.actions.remove(action)
    for name in json.loads(obj.get(MARKER_PROPERTY, "[]")):
        marker = scene.timeline_markers.get(name)
        if marker is not None:
            scene.timeline_markers.remove(marker)


def _mark_joins(scene, obj, result: SpliceResult, start: int) -> list:
    """Timeline markers at each join's two postures, where they play on the spliced track."""
    made = []
    for k, join in enumerate(result.joins, start=1):
        a_frame = start + int(round(join.out_time_s * result.fps))
        b_frame = a_frame + int(round(join.transition_s * result.fps))
        for clip, seconds, frame in ((join.a_clip, join.a_time_s, a_frame), (join.b_clip, join.b_time_s, b_frame)):
            made.append(scene.timeline_markers.new(f"Splice {k}: {clip} {seconds:.2f} s", frame=frame))
    obj[MARKER_PROPERTY] = json.dumps([m.name for m in made])
    return made


# ------------------------------------------------------------------ splice ---

def splice_strips(scene, obj: bpy.types.Object, strips: list, settings: SpliceSettings | None = None,
                  bake: bool = False, picks: list[int] | None = None) -> SpliceOutcome:
    """Splice `strips` of robot `obj` in time order onto a track "Splice" (see the module docstring).

    picks[k]: candidate pair of join k to use instead of the best (0).
    """
    tree = tree_from_rig(obj)
    layout = rig_layout(tree)
    fps = scene.render.fps / scene.render.fps_base
    strips = sorted(strips, key=lambda s: s.frame_start)
    _refuse_own_strips(obj, strips)
    clips, warnings = [], []
    for strip in strips:
        clip, notes = strip_clip(strip, layout, fps)
        clips.append(clip)
        warnings += notes
    result = splice(clips, settings, tree.joint_names, tree.lower, tree.upper, tree.velocity, picks)
    report = json.dumps(dict(result.report(), robot=obj.name, strips=[s.name for s in strips]))
    _remove_previous(scene, obj)  # only now: a failed run leaves the earlier one as it was
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
        _write_pieces(obj, layout, track, strips, clips, result, start, report, outcome)
    outcome.markers = _mark_joins(scene, obj, result, start)
    obj[TRACK_PROPERTY] = json.dumps({"track": track.name, "strips": [s.name for s in track.strips]})
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
