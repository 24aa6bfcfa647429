"""Motion programs in Blender (issue 13): parts as bone collections, basic motions split into
per-part module actions, and programs (Text datablocks) compiled onto the NLA.

- *Make Part Collections*: one bone collection per part of the rig (RIGHTARM, LEFTLEG, WAIST
  ...) from auto-map's chains on the robot itself; the user edits them like any collection.
- *Make Basic Motion*: the robot's active action split by those collections into module actions
  ("WALK2.RIGHTARM" ...), each keyed only on its part's bones; the action itself is untouched.
- *Compile Program*: a new NLA track per part, a strip per module at its computed start
  (repeat for `till`), spoken lines as timeline markers; the Info area gets the timeline and the
  timing check's violations. Every function here runs headless.
"""
from __future__ import annotations

import json
from dataclasses import dataclass

import bpy
import numpy as np
from bpy.props import StringProperty

from ..core.model.rig import rig_layout
from ..core.motion.robot_source import robot_motion
from ..core.program import Library, Module, Part, Timeline, compile_program, parse, robot_limits
from ..core.program.library import parts_from_chains
from . import anim_io
from .common import reports_errors, tree_from_rig
from .export import scene_fps

PARTS_PROPERTY = "robot_retarget_parts"  # on the rig: parts' command settings (positions, speed, fingers), JSON
MOTION_PROPERTY = "robot_retarget_motion"  # on a module action: the basic motion it belongs to
PART_PROPERTY = "robot_retarget_part"  # on a module action: its part
TRACK_PREFIX = "Program"


def chain_joints(tree, mapping) -> dict[str, list[str]]:
    """Mapped chain name -> the robot joints it moves, base to tip."""
    out = {}
    for chain in mapping.chains:
        joints = []
        for tip in chain.robot_tips:
            for link in tree.path(chain.robot_base, tip):
                if tree.qindex[link] >= 0 and tree.joint_names[tree.qindex[link]] not in joints:
                    joints.append(tree.joint_names[tree.qindex[link]])
        out[chain.name] = joints
    return out


def _joint_channels(tree) -> dict[str, tuple[str, int, str]]:
    """Joint name -> its F-curve channel (data path, index, bone), from the rig layout (once per tree)."""
    cache = tree.__dict__.setdefault("_joint_channels", {})
    if not cache:
        for name, (bone, prop, index) in zip(tree.joint_names, rig_layout(tree).joint_channels):
            cache[name] = (f'pose.bones["{bone}"].{prop}', index, bone)
    return cache


def _joint_bones(tree) -> dict[str, str]:
    """Joint name -> the bone carrying its channel."""
    return {name: channel[2] for name, channel in _joint_channels(tree).items()}


def make_part_collections(robot: bpy.types.Object) -> dict[str, list[str]]:
    """Bone collections named by part from auto-map's chains on the robot itself (existing
    collections of those names are kept as the user left them). Returns part -> joints."""
    from ..core.retarget import auto_map
    tree = tree_from_rig(robot)
    mapping = auto_map(robot_motion(tree, np.zeros((1, tree.dof))), tree)  # the robot mapped onto itself
    parts = parts_from_chains(chain_joints(tree, mapping))
    bones = _joint_bones(tree)
    armature = robot.data
    for name, part in parts.items():
        if armature.collections.get(name) is not None:
            continue
        collection = armature.collections.new(name)
        for joint in part.joints:
            collection.assign(armature.bones[bones[joint]])
    return {name: part.joints for name, part in parts.items()}


def rig_parts(robot: bpy.types.Object, tree=None) -> dict[str, Part]:
    """The rig's parts: each bone collection whose bones carry joints (part name = collection name,
    upper case), with command settings from the rig's PARTS_PROPERTY JSON."""
    tree = tree or tree_from_rig(robot)
    joint_of_bone = {bone: joint for joint, bone in _joint_bones(tree).items()}
    settings = json.loads(robot.get(PARTS_PROPERTY, "{}") or "{}").get("parts", {})
    parts = {}
    for collection in robot.data.collections_all:
        joints = [joint_of_bone[b.name] for b in collection.bones if b.name in joint_of_bone]
        if joints:
            name = collection.name.upper()
            parts[name] = Part(name, [j for j in tree.joint_names if j in joints])
    for name, spec in settings.items():
        name = name.upper()
        part = parts.setdefault(name, Part(name, list(spec.get("joints", []))))
        part.positions = {k.lower(): np.asarray(v, float).reshape(-1) for k, v in (spec.get("positions") or {}).items()}
        part.speed = float(spec.get("speed", part.speed))
        part.fingers = [list(f) for f in spec.get("fingers") or []]
    return parts


def _channels(tree, joints: list[str]):
    channels = _joint_channels(tree)
    return [channels[j] for j in joints]


def _keyed_action(robot, name: str, channels, frames, values) -> bpy.types.Action:
    """A new action keyed on `channels`, made without changing what the robot plays."""
    adt = robot.animation_data or robot.animation_data_create()
    playing, slot_before = adt.action, adt.action_slot
    action, slot = anim_io.new_action(robot, name)
    anim_io.write_channels(action, slot, channels, frames, values)
    adt.action = playing
    if playing is not None and slot_before is not None:
        adt.action_slot = slot_before
    action.use_fake_user = True
    return action


def make_basic_motion(robot: bpy.types.Object, action: bpy.types.Action,
                      name: str | None = None) -> dict[str, bpy.types.Action]:
    """The action split by the rig's parts into module actions "<name>.<PART>" (keys at the
    action's own frames; the action is untouched). Returns part -> module action."""
    from .export import _evaluated  # keys read per channel where they differ

    tree = tree_from_rig(robot)
    name = name or action.name
    slot = next((s for s in action.slots if s.target_id_type == 'OBJECT'), None) or action.slots[0]
    out = {}
    for part in rig_parts(robot, tree).values():
        channels = _channels(tree, part.joints)
        try:
            frames, values = anim_io.read_channels(action, slot, channels)
        except ValueError:
            frames, values = _evaluated(action, slot, channels)
        module = _keyed_action(robot, f"{name}.{part.name}", channels, frames, values)
        module[MOTION_PROPERTY], module[PART_PROPERTY] = name, part.name
        out[part.name] = module
    return out


def blend_library(robot: bpy.types.Object, scene) -> Library:
    """The blend file's module actions (made by Make Basic Motion, or keyed by hand and given the
    two properties) as a program library, times in seconds from each module's first key."""
    tree = tree_from_rig(robot)
    parts = rig_parts(robot, tree)
    fps = scene_fps(scene)
    modules = {}
    for action in bpy.data.actions:
        motion, part = action.get(MOTION_PROPERTY), action.get(PART_PROPERTY)
        if not motion or part not in parts or not action.slots:
            continue
        channels = _channels(tree, parts[part].joints)
        frames, values = anim_io.read_channels(action, action.slots[0], channels)
        times = (frames - frames[0]) / fps
        modules[(motion, part)] = Module(motion, part, list(parts[part].joints), times, values)
        modules[(motion, part)].action = action
    return Library(parts, {}, f"{bpy.path.basename(bpy.data.filepath) or 'this file'}", modules)


def set_frame_times(robot: bpy.types.Object, action: bpy.types.Action, times: list[float], scene) -> np.ndarray:
    """Move a module action's keys to `times` (seconds from its first key, one per key); refused,
    naming the joint, where a joint would have to turn faster than its URDF velocity limit.
    Returns the new frames."""
    from ..core.program import check_timing
    from ..core.program.timeline import Item, Timeline

    tree = tree_from_rig(robot)
    part = action.get(PART_PROPERTY)
    parts = rig_parts(robot, tree)
    if part not in parts:
        raise ValueError(f"action {action.name!r} is not a module of one of the rig's parts (Make Basic Motion)")
    channels = _channels(tree, parts[part].joints)
    slot = action.slots[0]
    frames, values = anim_io.read_channels(action, slot, channels)
    times = np.asarray(times, float)
    if len(times) != len(frames):
        raise ValueError(f"module {action.name!r} has {len(frames)} keys; {len(times)} times were given")
    if times[0] != 0.0 or np.any(np.diff(times) <= 0):
        given = ", ".join(f"{t:g}" for t in times)
        raise ValueError(f"module {action.name!r}: times must start at 0 and increase ({given})")
    module = Module(action.name, part, parts[part].joints, times, values)
    violations = check_timing(Timeline([Item(part, module, action.name, 0.0)], [], module.duration),
                              dict(zip(tree.joint_names, tree.velocity)))
    if violations:
        v = violations[0]
        speed = "jump in no time" if v.speed is None else f"turn at {v.speed:.2f} rad/s"
        raise ValueError(f"module {action.name!r}: joint {v.joint} cannot make it: from {v.time_s:.2f} s it would "
                         f"{speed}, its limit is {v.limit:.2f}; give it more time")
    new = frames[0] + times * scene_fps(scene)
    anim_io.clear_slot(action, slot)
    anim_io.write_channels(action, slot, channels, new, values)
    return new


@dataclass
class CompiledProgram:
    timeline: Timeline
    tracks: list
    markers: list


def compile_to_nla(scene, robot: bpy.types.Object, text: str, source: str = "<program>",
                   frame_start: int | None = None) -> CompiledProgram:
    """Compile `text` against the blend library onto new NLA tracks of `robot` (headless)."""
    tree = tree_from_rig(robot)
    library = blend_library(robot, scene)
    timeline = compile_program(parse(text, source), library, *robot_limits(tree))
    fps = scene_fps(scene)
    start = scene.frame_start if frame_start is None else frame_start
    adt = robot.animation_data or robot.animation_data_create()
    tracks = {}
    for item in timeline.items:
        track = tracks.get(item.part)
        if track is None:
            track = tracks[item.part] = adt.nla_tracks.new()
            track.name = f"{TRACK_PREFIX} {source}: {item.part}"
        action = getattr(item.module, "action", None)
        if action is None:  # a command's module, or one read from a file: key it now
            channels = _channels(tree, item.module.joints)
            action = _keyed_action(robot, f"{item.module.name}.{item.part}", channels,
                                   start + item.module.times * fps, item.module.values)
        strip = track.strips.new(f"{item.part} {item.module.name}", int(round(start + item.start_s * fps)), action)
        strip.action_slot = action.slots[0]
        strip.repeat = float(item.repeat)
        strip.extrapolation = 'NOTHING'
    markers = [scene.timeline_markers.new(f"VOICE: {text_}", frame=int(round(start + at * fps)))
               for text_, at in timeline.voice]
    return CompiledProgram(timeline, list(tracks.values()), markers)


def timeline_lines(timeline: Timeline) -> list[str]:
    lines = [f"{i.part} {i.module.name}: {i.start_s:.2f}-{i.end_s:.2f} s" + (f" x{i.repeat}" if i.repeat > 1 else "")
             for i in timeline.items]
    lines += [f"VOICE {text!r} at {at:.2f} s" for text, at in timeline.voice]
    lines += [f"too fast: {v.part} {v.joint} at {v.time_s:.2f} s needs "
              f"{'a jump in no time' if v.speed is None else f'{v.speed:.2f}'}, limit {v.limit:.2f}"
              for v in timeline.violations]
    return lines


def _robot(context) -> bpy.types.Object:
    robot = context.scene.robot_retarget.robot
    if robot is None:
        raise ValueError("pick a robot rig in the Robot tab")
    return robot


class ROBOT_RETARGET_OT_make_parts(bpy.types.Operator):
    """Make one bone collection per body part of the robot (RIGHTARM, LEFTLEG, WAIST ...) from its
    auto-mapped chains; motion programs drive the robot by these parts"""

    bl_idname = "robot_retarget.make_parts"
    bl_label = "Make Part Collections"
    bl_options = {'REGISTER', 'UNDO'}

    @reports_errors
    def execute(self, context):
        parts = make_part_collections(_robot(context))
        self.report({'INFO'}, f"Parts: {', '.join(f'{p} ({len(j)})' for p, j in parts.items())}")
        return {'FINISHED'}


class ROBOT_RETARGET_OT_make_basic_motion(bpy.types.Operator):
    """Split the robot's active action by its part collections into module actions, one per part,
    for motion programs (the action itself is not changed)"""

    bl_idname = "robot_retarget.make_basic_motion"
    bl_label = "Make Basic Motion"
    bl_options = {'REGISTER', 'UNDO'}

    motion_name: StringProperty(name="Name", description="The basic motion's name in programs (empty: the action's)")

    @reports_errors
    def execute(self, context):
        robot = _robot(context)
        action = robot.animation_data.action if robot.animation_data else None
        if action is None:
            raise ValueError("the robot rig has no active action to make a basic motion of")
        modules = make_basic_motion(robot, action, self.motion_name or None)
        if not modules:
            raise ValueError("the robot rig has no part collections (Make Part Collections)")
        self.report({'INFO'}, f"Basic motion {self.motion_name or action.name!r}: modules "
                    + ", ".join(sorted(modules)))
        return {'FINISHED'}


class ROBOT_RETARGET_OT_compile_program(bpy.types.Operator):
    """Compile a motion program (a text in this file) onto the robot's NLA: one track per part, a
    strip per module at its time, spoken lines as markers, with a check of the joints' speeds"""

    bl_idname = "robot_retarget.compile_program"
    bl_label = "Compile Program"
    bl_options = {'REGISTER', 'UNDO'}

    text: StringProperty(name="Program", description="Name of the Text datablock holding the program")

    @reports_errors
    def execute(self, context):
        robot = _robot(context)
        text = bpy.data.texts.get(self.text)
        if text is None:
            raise ValueError(f"no text {self.text!r} in this file (write the program in the Text Editor)")
        compiled = compile_to_nla(context.scene, robot, text.as_string(), text.name)
        for line in timeline_lines(compiled.timeline):
            self.report({'WARNING'} if line.startswith("too fast") else {'INFO'}, line)
        self.report({'INFO'}, f"Program {text.name!r}: {len(compiled.timeline.items)} modules on "
                    f"{len(compiled.tracks)} tracks, {compiled.timeline.duration_s:.2f} s; "
                    f"{len(compiled.timeline.violations)} timing violation(s)")
        return {'FINISHED'}


class ROBOT_RETARGET_OT_set_frame_times(bpy.types.Operator):
    """Give a module's keys new times (seconds from its first key, dense where the motion is
    complex); refused where a joint could not turn that fast"""

    bl_idname = "robot_retarget.set_frame_times"
    bl_label = "Set Frame Times"
    bl_options = {'REGISTER', 'UNDO'}

    module: StringProperty(name="Module", description="The module action (e.g. WALK2.RIGHTARM)")
    times: StringProperty(name="Times", description="One time in seconds per key, from 0, comma-separated")

    @reports_errors
    def execute(self, context):
        action = bpy.data.actions.get(self.module)
        if action is None:
            raise ValueError(f"no action {self.module!r} in this file")
        try:
            times = [float(t) for t in self.times.replace(";", ",").split(",") if t.strip()]
        except ValueError:
            raise ValueError(f"times {self.times!r}: numbers in seconds, comma-separated") from None
        frames = set_frame_times(_robot(context), action, times, context.scene)
        self.report({'INFO'}, f"Module {action.name!r}: {len(frames)} keys over {times[-1]:.2f} s")
        return {'FINISHED'}

    def invoke(self, context, event):
        return context.window_manager.invoke_props_dialog(self)


classes = (ROBOT_RETARGET_OT_make_parts, ROBOT_RETARGET_OT_make_basic_motion, ROBOT_RETARGET_OT_compile_program,
           ROBOT_RETARGET_OT_set_frame_times)
