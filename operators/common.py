"""Shared pieces of the Blender side: user errors, the Robot tab's objects, frame ranges, a rig's tree.

Every operator reports bad input the same way (`reports_errors` on its
execute), and the command line prints the same messages (`user_message`).
Imports only core and anim_io, so every operator module and the command line
may import it without a cycle.
"""
from __future__ import annotations

import functools
import tomllib
from pathlib import Path

import bpy

from ..core.model.kinematics import KinematicTree
from ..core.model.rig import rig_layout
from ..core.model.urdf import URDFError, parse_urdf
from ..core.chains.mapping import Mapping
from . import anim_io

# Every core error is a ValueError (URDFError, MappingError, AutoMapError, ChainError, RetargetError,
# ContactsError, SpliceError, PlaybackError ...) or an OSError (files); KeyError names a missing bone.
USER_ERRORS = (ValueError, KeyError, OSError)
REPORT_PROPERTY = "robot_retarget_report"
_MANIFEST = Path(__file__).resolve().parents[1] / "blender_manifest.toml"
_TREE_CACHE: dict = {}


def user_message(exc: BaseException) -> str:
    """The one line a user sees for a user error (a KeyError's bare argument, not its repr)."""
    if isinstance(exc, KeyError) and exc.args:
        return str(exc.args[0])
    return str(exc)


def reports_errors(method):
    """Wrap an operator's execute or invoke: a user error becomes an ERROR report and CANCELLED.

    Blender checks the argument count of execute (self, context) and invoke
    (self, context, event), so the wrapper keeps the wrapped one's.
    """
    def call(self, *args):
        try:
            return method(self, *args)
        except USER_ERRORS as exc:
            self.report({'ERROR'}, user_message(exc))
            return {'CANCELLED'}

    if method.__code__.co_argcount == 3:
        def wrapper(self, context, event):
            return call(self, context, event)
    else:
        def wrapper(self, context):
            return call(self, context)
    return functools.wraps(method)(wrapper)


def manifest() -> dict:
    """The installed extension's manifest (the build appends wheels/platforms)."""
    with open(_MANIFEST, "rb") as fh:
        return tomllib.load(fh)


def extension_version() -> str:
    """The extension's version, or "?" when the manifest cannot be read."""
    try:
        return str(manifest()["version"])
    except (OSError, KeyError, tomllib.TOMLDecodeError):
        return "?"


def check_objects(settings) -> tuple[bpy.types.Object, bpy.types.Object]:
    """The Robot tab's source armature and robot rig, or a ValueError saying what to pick."""
    if settings.source is None or settings.source.type != 'ARMATURE':
        raise ValueError("pick a source armature in the Robot tab")
    if settings.robot is None or settings.robot.type != 'ARMATURE':
        raise ValueError("pick a robot rig in the Robot tab (File > Import > URDF Robot)")
    return settings.source, settings.robot


def action_frame_range(obj: bpy.types.Object) -> tuple[int, int]:
    """The frames an armature's action covers (its keyed range), for the bake's default."""
    action = obj.animation_data.action if obj.animation_data else None
    if action is None:
        raise ValueError(f"source {obj.name!r} has no action to retarget")
    start, end = action.frame_range
    return int(round(start)), int(round(end))


def bake_frame_range(scene, settings, source: bpy.types.Object) -> tuple[int, int]:
    """The frames a bake (or contact detection) covers: the scene range or the source action's."""
    return (scene.frame_start, scene.frame_end) if settings.use_scene_range else action_frame_range(source)


def match_scene_to_clip(scene, fps: float, first: int, last: int) -> None:
    """The scene's frame rate and range as Blender's BVH importer sets them for a clip (a rate
    that is no whole number through fps_base), so a .blend saved after a headless bake plays and
    exports at the clip's rate."""
    scene.render.fps = max(1, int(round(fps)))
    scene.render.fps_base = scene.render.fps / fps
    scene.frame_start, scene.frame_end = first, last


def tree_from_rig(obj) -> KinematicTree:
    """The KinematicTree of an imported rig, re-read from its "urdf_path".

    Raises URDFError naming the object and the path if the rig has no URDF,
    the file is gone, its movable joints no longer match the rig, or a bone was renamed or deleted.
    """
    label = getattr(obj, "name", repr(obj))
    path = obj.get("urdf_path") if obj is not None else None
    if not path:
        raise URDFError(f"object {label!r} is not a robot rig (it has no 'urdf_path' "
                        "property); import the robot with File > Import > URDF Robot")
    path = Path(bpy.path.abspath(str(path)))
    try:
        stat = path.stat()
    except OSError:
        raise URDFError(f"robot rig {label!r}: its URDF file {str(path)!r} (property "
                        "'urdf_path') is gone; restore the file, point 'urdf_path' at "
                        "its new location or re-import the robot") from None
    key = (str(path), stat.st_mtime_ns, stat.st_size)
    cached = _TREE_CACHE.get(key)
    if cached is None:
        tree = KinematicTree(parse_urdf(path))
        cached = (tree, {bone.name: bone.link_name or bone.name for bone in rig_layout(tree).bones})
        _TREE_CACHE.clear()  # one robot at a time is the common case; keep it small
        _TREE_CACHE[key] = cached
    tree, bone_names = cached
    order = obj.get("urdf_joint_order")
    if order is not None and list(order) != tree.joint_names:
        raise URDFError(f"robot rig {label!r}: the movable joints of {str(path)!r} no longer "
                        "match the rig (the file changed since import); re-import the robot")
    _check_rig_bones(obj, label, bone_names)
    return tree


def _check_rig_bones(obj, label: str, bone_names: dict[str, str]) -> None:
    """Actions key a rig's bones by their URDF link names: a bone the user renamed or deleted
    would be keyed in vain and the joint would never move, so it is named here instead."""
    bones = getattr(getattr(obj, "data", None), "bones", None)
    if bones is None:
        return
    missing = [name for name in bone_names if name not in bones]
    if not missing:
        return
    pose = getattr(obj, "pose", None)
    renamed = {pb.get("urdf_link"): pb.name for pb in (pose.bones if pose else ())}
    name = missing[0]
    link = bone_names[name]
    now = (f"renamed to {renamed[link]!r}; rename it back" if link in renamed
           else "deleted; re-import the robot")
    raise URDFError(f"robot rig {label!r}: bone {name!r} (URDF link {link!r}) was {now}: the robot's "
                    f"actions key its bones by their URDF link names ({len(missing)} bone(s) missing)")


def auto_map_objects(source: bpy.types.Object, robot: bpy.types.Object, scene) -> Mapping:
    """Automatic chain mapping from the source's animation (up to AUTO_MAP_FRAMES frames spread
    over its action, else the current frame) and the robot's URDF: auto-map reads the body from
    the motion, not from one pose."""
    from ..core.retarget.automap import auto_map, automap_frames
    try:
        start, end = action_frame_range(source)
        frames = automap_frames(start, end)
    except ValueError:  # no action: the pose on screen
        frames = [scene.frame_current]
    motion = anim_io.sample_armature(source, frames, scene=scene)
    return auto_map(motion, tree_from_rig(robot))
