"""Fast animation I/O shared by every operator: actions, slots, F-curves.

Keys are written in bulk (keyframe_points.add + foreach_set) through the
action slot's channelbag: Blender 5.0 removed Action.fcurves and 4.4/4.5
already have slotted actions, so this one path serves 4.5 and 5.x. Never
keyframe_insert loops, never bpy.ops.nla.bake.

Blender differences handled here:
- ActionChannelbagFCurves.new() takes `group_name` only from 5.0 on; on 4.5
  the group is created with channelbag.groups.new() and assigned to
  fcurve.group instead.
- Keyframe.interpolation's integer values are Blender's internal ones, not
  the UI order (e.g. BACK=3, SINE=12): they are looked up from RNA.

Blender units are taken as metres (the scene's unit scale is ignored).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Iterable, Sequence

import bpy
import numpy as np
from bpy_extras.anim_utils import action_get_channelbag_for_slot

try:  # Blender 5.0+
    from bpy_extras.anim_utils import action_ensure_channelbag_for_slot
except ImportError:  # Blender 4.5: the layer/strip API is there, the helper is not
    def action_ensure_channelbag_for_slot(action, slot):
        layer = action.layers[0] if action.layers else action.layers.new("Layer")
        strip = layer.strips[0] if layer.strips else layer.strips.new(type='KEYFRAME')
        return strip.channelbag(slot, ensure=True)

if TYPE_CHECKING:  # pragma: no cover
    from ..core.motion.source import SourceMotion

# Blender 5.0+: fcurves.new(data_path, index=, group_name=); 4.5: no group_name.
_FCURVES_NEW_HAS_GROUP = "group_name" in (
    bpy.types.ActionChannelbagFCurves.bl_rna.functions["new"].parameters.keys()
)


def interpolation_value(mode: str) -> int:
    """Integer Blender stores for a keyframe interpolation mode ('LINEAR' -> 1)."""
    items = bpy.types.Keyframe.bl_rna.properties["interpolation"].enum_items
    try:
        return items[mode.upper()].value
    except KeyError:
        raise ValueError(
            f"unknown interpolation {mode!r}; expected one of {', '.join(i.identifier for i in items)}"
        ) from None


# --------------------------------------------------------------------------
# Actions and slots

def _find_slot(action: bpy.types.Action, owner: bpy.types.ID) -> bpy.types.ActionSlot | None:
    adt = owner.animation_data
    if adt is not None and adt.action == action and adt.action_slot is not None:
        return adt.action_slot
    for slot in action.slots:
        if slot.target_id_type == owner.id_type and slot.name_display == owner.name:
            return slot
    return None


def clear_slot(action: bpy.types.Action, slot: bpy.types.ActionSlot) -> None:
    """Remove every F-curve and group of `slot` in `action` (other slots untouched)."""
    channelbag = action_get_channelbag_for_slot(action, slot)
    if channelbag is None:
        return
    channelbag.fcurves.clear()
    for group in list(channelbag.groups):
        channelbag.groups.remove(group)


def _keep(old: bpy.types.Action | None, new: bpy.types.Action) -> None:
    """An action about to lose its last user (the one `owner` played: a hand-keyed take) gets a
    fake user, or Blender would drop it when the file is saved."""
    if old is not None and old != new and old.users <= 1 and not old.use_fake_user:
        old.use_fake_user = True


def new_action(
    owner: bpy.types.ID, name: str, *, replace: bool = False,
) -> tuple[bpy.types.Action, bpy.types.ActionSlot]:
    """Create an action with a slot for `owner` and assign both to it.

    Without `replace` this always makes a NEW action: an existing action
    called `name` is never touched (the new one gets Blender's unique name,
    e.g. "name.001"). With `replace`, a local action called `name` is reused:
    its slot for `owner` (the one assigned, else the one named after owner)
    has its F-curves cleared, other slots keep theirs. The action `owner`
    had before is only unassigned, never deleted (`_keep`).
    """
    action = None
    if replace:
        action = next((a for a in bpy.data.actions if a.name == name and a.library is None), None)
    reused = action is not None
    if action is None:
        action = bpy.data.actions.new(name)

    slot = _find_slot(action, owner) if reused else None
    if slot is None:
        slot = action.slots.new(id_type=owner.id_type, name=owner.name)

    adt = owner.animation_data or owner.animation_data_create()
    _keep(adt.action, action)
    adt.action = action
    adt.action_slot = slot
    if reused:
        clear_slot(action, slot)
    return action, slot


# --------------------------------------------------------------------------
# Writing and reading keys

def _new_fcurve(channelbag, data_path: str, index: int, group_name: str) -> bpy.types.FCurve:
    if _FCURVES_NEW_HAS_GROUP:
        return channelbag.fcurves.new(data_path, index=index, group_name=group_name or "")
    fcurve = channelbag.fcurves.new(data_path, index=index)
    if group_name:
        group = channelbag.groups.get(group_name) or channelbag.groups.new(group_name)
        fcurve.group = group
    return fcurve


def _split_channel(channel: Sequence) -> tuple[str, int, str]:
    data_path = channel[0]
    index = int(channel[1]) if len(channel) > 1 else 0
    group = channel[2] if len(channel) > 2 else ""
    return data_path, index, group or ""


def write_channels(
    action: bpy.types.Action,
    slot: bpy.types.ActionSlot,
    channels: list[tuple[str, int, str]],
    frames: np.ndarray,
    values: np.ndarray,
    interpolation: str = "LINEAR",
) -> int:
    """Write keys for C channels at F frames; returns F*C keys written.

    channels: (data_path, array_index, group_name) each, e.g.
    ('pose.bones["hip"].rotation_euler', 0, "hip"). frames (F,) strictly
    increasing; values (F, C) finite. F-curves are created in the slot's
    channelbag (creating the layer/strip if needed); an F-curve that already
    exists for a channel has all its keys replaced. Keys are stored as
    float32, as Blender does.
    """
    frames = np.asarray(frames, dtype=np.float64).reshape(-1)
    values = np.asarray(values, dtype=np.float64)
    n_frames, n_channels = frames.shape[0], len(channels)
    if values.ndim == 1 and n_channels == 1:
        values = values[:, None]
    if values.shape != (n_frames, n_channels):
        raise ValueError(f"values must have shape (frames, channels) = {(n_frames, n_channels)}, got {values.shape}")
    if n_frames > 1 and not np.all(np.diff(frames) > 0):
        raise ValueError("frames must be strictly increasing")
    if not (np.all(np.isfinite(frames)) and np.all(np.isfinite(values))):
        raise ValueError("frames and values must be finite")
    ipo = np.full(n_frames, interpolation_value(interpolation), dtype=np.uint8)  # DNA stores a char

    channelbag = action_ensure_channelbag_for_slot(action, slot)
    co = np.empty((n_frames, 2), dtype=np.float32)
    co[:, 0] = frames
    for c, channel in enumerate(channels):
        data_path, index, group = _split_channel(channel)
        fcurve = channelbag.fcurves.find(data_path, index=index)
        if fcurve is None:
            fcurve = _new_fcurve(channelbag, data_path, index, group)
        else:
            fcurve.keyframe_points.clear()
        points = fcurve.keyframe_points
        points.add(n_frames)
        co[:, 1] = values[:, c]
        points.foreach_set("co", co.reshape(-1))
        points.foreach_set("interpolation", ipo)
        fcurve.update()
    return n_frames * n_channels


def read_channels(
    action: bpy.types.Action,
    slot: bpy.types.ActionSlot,
    channels: list[tuple],
) -> tuple[np.ndarray, np.ndarray]:
    """Keys of `channels` as (frames (F,), values (F, C)), float64.

    Every channel must have keys on the same frames (as write_channels makes
    them). KeyError names a missing data_path/index.
    """
    channelbag = action_get_channelbag_for_slot(action, slot)
    frames = None
    columns = []
    for channel in channels:
        data_path, index, _ = _split_channel(channel)
        fcurve = channelbag.fcurves.find(data_path, index=index) if channelbag is not None else None
        if fcurve is None:
            raise KeyError(
                f"no F-curve {data_path!r} index {index} in action {action.name!r} "
                f"slot {slot.identifier!r}"
            )
        points = fcurve.keyframe_points
        co = np.empty(2 * len(points), dtype=np.float32)
        points.foreach_get("co", co)
        co = co.reshape(-1, 2).astype(np.float64)
        if frames is None:
            frames = co[:, 0]
        elif co.shape[0] != frames.shape[0] or not np.array_equal(co[:, 0], frames):
            raise ValueError(f"F-curve {data_path!r} index {index} has keys on other frames than {channels[0]!r}")
        columns.append(co[:, 1])
    if frames is None:
        return np.empty(0), np.empty((0, 0))
    return frames, np.stack(columns, axis=1)


# --------------------------------------------------------------------------
# Sampling an armature into a SourceMotion

def _orthonormalise(m: np.ndarray) -> np.ndarray:
    """Nearest rotation matrices (polar decomposition) of (..., 3, 3)."""
    u, _, vt = np.linalg.svd(m)
    r = u @ vt
    flip = np.linalg.det(r) < 0  # reflection (negative scale): keep a rotation
    if np.any(flip):
        u = u.copy()
        u[flip, :, -1] *= -1
        r = u @ vt
    return r


def _to_world(matrix_world: np.ndarray, points: np.ndarray) -> np.ndarray:
    return points @ matrix_world[:3, :3].T + matrix_world[:3, 3]


class ArmatureReader:
    """Reads an armature's posed bones as they are evaluated now: world heads and tails of the
    body's bones and its root bone's world rotation. Bone lists and rest data are read once,
    so a live source can be read every tick (Live Retarget) as well as frame by frame
    (sample_armature). A rig whose deforming bones are the body and the rest machinery
    (Rigify) is read as its deforming bones only (core.retarget.names.deform_skeleton)."""

    def __init__(self, obj: bpy.types.Object, depsgraph):
        from ..core.retarget.names import deform_skeleton

        if obj.type != 'ARMATURE':
            raise TypeError(f"{obj.name!r} is not an armature")
        bones = obj.data.bones
        all_names = [b.name for b in bones]
        index = {n: i for i, n in enumerate(all_names)}
        if not all_names:
            raise ValueError(f"armature {obj.name!r} has no bones")
        all_parents = [index[b.parent.name] if b.parent else -1 for b in bones]
        body = deform_skeleton(all_names, all_parents, [b.use_deform for b in bones])
        kept, parents = body if body is not None else (list(range(len(all_names))), all_parents)
        self.obj, self.names = obj, [all_names[i] for i in kept]
        self.parents = np.asarray(parents, dtype=np.int64)
        self.root = int(np.flatnonzero(self.parents < 0)[0])
        pose_order = [pb.name for pb in obj.pose.bones]
        pose_index = {n: i for i, n in enumerate(pose_order)}
        self.perm = None if pose_order == self.names else np.array([pose_index[n] for n in self.names])
        self.buf = np.empty(len(pose_order) * 3, dtype=np.float32)
        evaluated = obj.evaluated_get(depsgraph)
        # an armature outside the view layer (or disabled in viewports) is not animated: frozen
        if not evaluated.is_evaluated or obj.name not in depsgraph.view_layer.objects:
            raise ValueError(f"armature {obj.name!r} is not evaluated in the scene's view layer (unlinked from "
                             "its collections, its collection excluded, or disabled in viewports): its animation "
                             "would read as one still pose; link or enable it")
        mw0 = np.array(evaluated.matrix_world)
        rest_heads = np.empty(len(all_names) * 3, dtype=np.float32)
        rest_tails = np.empty(len(all_names) * 3, dtype=np.float32)
        bones.foreach_get("head_local", rest_heads)
        bones.foreach_get("tail_local", rest_tails)
        self.rest_heads = _to_world(mw0, rest_heads.reshape(-1, 3).astype(np.float64)[kept])
        self.rest_tails = _to_world(mw0, rest_tails.reshape(-1, 3).astype(np.float64)[kept])
        self.rest_root = _orthonormalise(mw0[:3, :3] @ np.array(bones[self.names[self.root]].matrix_local)[:3, :3])

    def pose(self, depsgraph) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Heads (B, 3), tails (B, 3) and the root bone's world rotation (3, 3) as evaluated now."""
        ev = self.obj.evaluated_get(depsgraph)
        mw = np.array(ev.matrix_world)
        pose_bones = ev.pose.bones
        out = []
        for attr in ("head", "tail"):
            pose_bones.foreach_get(attr, self.buf)
            pts = self.buf.reshape(-1, 3).astype(np.float64)
            out.append(_to_world(mw, pts if self.perm is None else pts[self.perm]))
        return out[0], out[1], mw[:3, :3] @ np.array(pose_bones[self.names[self.root]].matrix)[:3, :3]

    def motion(self, heads: np.ndarray, tails: np.ndarray, root_rot: np.ndarray, fps: float) -> "SourceMotion":
        """A SourceMotion of frames (F, B, 3), (F, B, 3), (F, 3, 3) on this armature's bones."""
        from ..core.motion.source import SourceMotion

        return SourceMotion(bone_names=self.names, parents=self.parents, heads=heads, tails=tails,
                            root_rotation=_orthonormalise(root_rot), rest_heads=self.rest_heads,
                            rest_tails=self.rest_tails, rest_root_rotation=self.rest_root, fps=fps,
                            name=self.obj.name)


def scene_depsgraph(scene):
    """The scene's evaluated dependency graph (the context's, which also evaluates pending edits)."""
    return bpy.context.evaluated_depsgraph_get() if scene == bpy.context.scene else scene.view_layers[0].depsgraph


def sample_armature(obj: bpy.types.Object, frames: Iterable[float], *, scene=None) -> "SourceMotion":
    """Sample an armature's posed bones into a SourceMotion (world space), frame by frame.

    For each frame: scene.frame_set, then ArmatureReader.pose. Rest data comes from the
    armature's bones under the object's current world matrix. The scene's current frame is
    restored afterwards.
    """
    if obj.type != 'ARMATURE':
        raise TypeError(f"{obj.name!r} is not an armature")
    scene = scene or (bpy.context.scene if obj.name in bpy.context.scene.objects else obj.users_scene[0])
    frames = np.asarray(list(frames), dtype=np.float64).reshape(-1)
    frame_before, subframe_before = scene.frame_current, scene.frame_subframe
    depsgraph = scene_depsgraph(scene)
    reader = ArmatureReader(obj, depsgraph)
    n_bones = len(reader.names)
    heads = np.empty((frames.size, n_bones, 3))
    tails = np.empty((frames.size, n_bones, 3))
    root_rot = np.empty((frames.size, 3, 3))
    try:
        for k, frame in enumerate(frames):
            whole = int(np.floor(frame))
            scene.frame_set(whole, subframe=float(frame - whole))
            heads[k], tails[k], root_rot[k] = reader.pose(depsgraph)
    finally:
        scene.frame_set(frame_before, subframe=subframe_before)
    return reader.motion(heads, tails, root_rot, scene.render.fps / scene.render.fps_base)
