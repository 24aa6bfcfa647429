"""Foot contacts in Blender: per-foot channels on the source armature, detected, edited, baked.

The contacts of a clip are stored with the clip: each foot is a boolean
custom property of the source armature object ("robot_retarget_contact_left",
"..._right") keyed in the source's action with constant interpolation, one
key where a contact begins or ends. They show in the Dope Sheet and Graph
Editor next to the clip and are edited there (move, add, delete keys) or
with *Set Contact* at the current frame. *Detect Contacts* fills them from
the clip; the Bake uses what is there when *Plant Feet* is on.
"""
from __future__ import annotations


import bpy
import numpy as np
from bpy.props import BoolProperty, EnumProperty
from bpy_extras.anim_utils import action_get_channelbag_for_slot

from ..core.feet.contacts import SIDES, Contacts, contacts_option, detect_contacts, range_contacts, flags_to_intervals
from ..core.chains.mapping import Mapping
from ..props import mapping_from_settings
from . import anim_io
from .common import action_frame_range, auto_map_objects, bake_frame_range, check_objects, reports_errors

PROPERTY = "robot_retarget_contact_{}"
GROUP = "Robot Retarget Contacts"


def _path(side: str) -> str:
    return f'["{PROPERTY.format(side)}"]'


def contact_channel(source: bpy.types.Object, side: str):
    """The F-curve of a foot's contact channel in the source's action, or None."""
    adt = source.animation_data
    if adt is None or adt.action is None or adt.action_slot is None:
        return None
    bag = action_get_channelbag_for_slot(adt.action, adt.action_slot)
    return bag.fcurves.find(_path(side)) if bag is not None else None


def has_contacts(source: bpy.types.Object) -> bool:
    """True when the source carries a contact channel for at least one foot."""
    return any(contact_channel(source, s) is not None or PROPERTY.format(s) in source for s in SIDES)


def read_contacts(source: bpy.types.Object, frames: np.ndarray, fps: float) -> Contacts | None:
    """The source's contact channels at Blender `frames` (F,), or None if it has none.

    A keyed channel is evaluated at each frame (> 0.5 is contact); a property
    without keys holds its one value.
    """
    feet = {}
    for side in SIDES:
        fcurve = contact_channel(source, side)
        if fcurve is not None:
            feet[side] = np.array([fcurve.evaluate(float(f)) > 0.5 for f in frames])
        elif PROPERTY.format(side) in source:
            feet[side] = np.full(len(frames), bool(source[PROPERTY.format(side)]))
    return Contacts(feet, fps) if feet else None


def write_contacts(source: bpy.types.Object, frames: np.ndarray, contacts: Contacts) -> int:
    """Replace the source's contact channels: keys at `frames` (F,) where contacts change."""
    adt = source.animation_data
    if adt is None or adt.action is None:
        raise ValueError(f"source {source.name!r} has no action to store contacts in")
    clear_contacts(source)
    keys = 0
    for side, flags in contacts.feet.items():
        if len(flags) == 0:
            continue
        name = PROPERTY.format(side)
        source[name] = bool(flags[0])
        source.id_properties_ui(name).update(description=f"{side.title()} foot on the ground (Robot Retarget)")
        at = np.concatenate([[0], np.flatnonzero(np.diff(flags.astype(np.int8))) + 1])
        keys += anim_io.write_channels(adt.action, adt.action_slot, [(_path(side), 0, GROUP)], frames[at],
                                       flags[at].astype(float), interpolation="CONSTANT")
    return keys


def clear_contacts(source: bpy.types.Object) -> None:
    """Remove the contact channels (keys and properties) from the source."""
    for side in SIDES:
        fcurve = contact_channel(source, side)
        if fcurve is not None:
            bag = action_get_channelbag_for_slot(source.animation_data.action, source.animation_data.action_slot)
            bag.fcurves.remove(fcurve)
        if PROPERTY.format(side) in source:
            del source[PROPERTY.format(side)]


def bake_contacts(plant: bool, source: bpy.types.Object, frames: np.ndarray, fps: float):
    """What a bake plants: the source's contact channels when Plant Feet is on, contacts
    detected on the fly when it has none (the source is not changed), else "off"."""
    if not plant:
        return "off"
    return read_contacts(source, frames, fps) or "auto"


def cli_contacts(value: str | None, clip: tuple[int, int], start: int, end: int, fps: float):
    """`--contacts auto|off|FILE.json` for Blender frames start..end of a clip spanning `clip`
    (first, last). A file holds 0-based clip frames; the baked ones are cut out of it."""
    first, last = clip
    return contacts_option(value, last - first + 1, start - first, end - first + 1, fps)


CONTEXT_S = 60.0  # seconds of the action read around a range for its contacts, each side


def _span(scene, source: bpy.types.Object, start: int, end: int) -> tuple[int, int]:
    """Frames start..end widened to the source action's whole range, at most CONTEXT_S either side:
    contacts are read on it. Sampling a scene costs about 0.7 ms a frame (frame_set): a range of an
    hour's take read the hour (5 min); now a minute around it. On the walk played there and back for
    5.5 min, a 240-frame range started 1-9 frames later keeps its flags (22 starts; 30 s either side
    moved 6), while the window's flags differ from the whole take's by up to 7 (the ground percentile
    over two minutes against over the take; the command line reads a whole BVH file, which is cheap; an FBX
    clip goes through here)."""
    if not (source.animation_data and source.animation_data.action):
        return start, end
    first, last = action_frame_range(source)
    context = int(np.ceil(CONTEXT_S * scene.render.fps / scene.render.fps_base))
    return min(max(first, start - context), start), max(min(last, end + context), end)


def sample_range(scene, source: bpy.types.Object, mapping: Mapping, start: int, end: int, contacts):
    """(source sampled on frames start..end, contacts): "auto" on a range of a longer action is the whole
    action's contacts cut to the range (core.feet.contacts.range_contacts: detected on the range, its ground
    percentile moved with where the range begins; the walk from frame 4 onto the H1 baked 0.46 rad apart),
    read at most a minute either side of the range (CONTEXT_S)."""
    first, last = _span(scene, source, start, end) if isinstance(contacts, str) and contacts == "auto" else (start, end)
    motion = anim_io.sample_armature(source, np.arange(first, last + 1, dtype=float), scene=scene)
    if (first, last) == (start, end):
        return motion, contacts
    cut = (start - first, end - first + 1)
    return motion.at_frames(np.arange(*cut)), range_contacts(contacts, motion, mapping, *cut)


def detect_for_source(scene, source: bpy.types.Object, mapping: Mapping, start: int, end: int) -> Contacts:
    """Contacts on frames start..end of the source (its legs from `mapping`), read on its action
    around them as a bake reads them (sample_range)."""
    first, last = _span(scene, source, start, end)
    motion = anim_io.sample_armature(source, np.arange(first, last + 1, dtype=float), scene=scene)
    return detect_contacts(motion, mapping).sliced(start - first, end - first + 1)


def summary(contacts: Contacts) -> str:
    return ", ".join(f"{len(flags_to_intervals(f))} {side}" for side, f in contacts.feet.items())


def feet_summary(report: dict) -> str:
    """One line for the Info area: how well the feet stayed planted (empty without feet)."""
    if report.get("ground_penetration_pct") is None:
        return ""
    head = "Feet planted" if report.get("feet_planted") else "Feet not planted (no contacts used)"
    if report.get("foot_slide_pct") is None:
        return f"{head}; {report['ground_penetration_pct']:.1f}% of frames below the ground"
    return (f"{head}: {report['foot_slide_pct']:.0f}% of contacts slide (mean "
            f"{report['foot_slide_mean_m_s']:.3f} m/s), contact kept in {report['contact_preserved_pct']:.0f}% "
            f"of contact frames, {report['ground_penetration_pct']:.1f}% of frames below the ground")


class ROBOT_RETARGET_OT_detect_contacts(bpy.types.Operator):
    """Find when the source's feet are on the ground and key them as contact channels on the source"""

    bl_idname = "robot_retarget.detect_contacts"
    bl_label = "Detect Contacts"
    bl_options = {'REGISTER', 'UNDO'}

    @reports_errors
    def execute(self, context):
        settings = context.scene.robot_retarget
        source, robot = check_objects(settings)
        mapping = (mapping_from_settings(settings) if len(settings.chains)
                   else auto_map_objects(source, robot, context.scene))
        start, end = bake_frame_range(context.scene, settings, source)
        contacts = detect_for_source(context.scene, source, mapping, start, end)
        write_contacts(source, np.arange(start, end + 1, dtype=float), contacts)
        self.report({'INFO'}, f"Contacts on {source.name!r}: {summary(contacts)} (frames {start}-{end})")
        return {'FINISHED'}


class ROBOT_RETARGET_OT_set_contact(bpy.types.Operator):
    """Key a foot's contact channel at the current frame: on the ground from here, or lifted from here"""

    bl_idname = "robot_retarget.set_contact"
    bl_label = "Set Contact"
    bl_options = {'REGISTER', 'UNDO'}

    side: EnumProperty(name="Foot", items=[(s, s.title(), "") for s in SIDES])
    down: BoolProperty(name="On the Ground", default=True)

    @classmethod
    def poll(cls, context):
        source = context.scene.robot_retarget.source
        return source is not None and source.animation_data is not None and source.animation_data.action

    def execute(self, context):
        source = context.scene.robot_retarget.source
        name = PROPERTY.format(self.side)
        source[name] = self.down
        source.keyframe_insert(_path(self.side), frame=context.scene.frame_current, group=GROUP)
        fcurve = contact_channel(source, self.side)
        for point in fcurve.keyframe_points:
            point.interpolation = 'CONSTANT'
        return {'FINISHED'}


class ROBOT_RETARGET_OT_clear_contacts(bpy.types.Operator):
    """Remove the contact channels from the source (the bake then follows the chain shapes only)"""

    bl_idname = "robot_retarget.clear_contacts"
    bl_label = "Clear Contacts"
    bl_options = {'REGISTER', 'UNDO'}

    @classmethod
    def poll(cls, context):
        source = context.scene.robot_retarget.source
        return source is not None and has_contacts(source)

    def execute(self, context):
        clear_contacts(context.scene.robot_retarget.source)
        return {'FINISHED'}


classes = (ROBOT_RETARGET_OT_detect_contacts, ROBOT_RETARGET_OT_set_contact, ROBOT_RETARGET_OT_clear_contacts)
