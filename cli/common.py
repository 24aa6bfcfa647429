"""Pieces every subcommand shares: the one-line user error, inputs (a clip, a robot, a mapping,
a frame range), checked outputs, and baking a clip the way `bake` does.

Everything here runs without a window: `blender -b -c robot_retarget ...` and
tools/robot-retarget (bpy as a module) both call cli.main().
"""
from __future__ import annotations

import argparse
import contextlib
import io
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path

import bpy

from ..core.library.arguments import (CommandError, add_clip_arguments, add_outputs, add_source_up, check_output,
                                      check_outputs, clip_range, print_warnings, refuse_folder, self_collision_settings,
                                      write_report)
from ..operators.common import USER_ERRORS

COMMAND_ID = "robot_retarget"
# The flags and output checks live in core.library.arguments (robot-retarget-core has the same).
__all__ = ["CommandError", "INPUT_ERRORS", "add_clip_arguments", "add_outputs", "add_source_up", "check_output",
           "check_outputs", "print_warnings", "write_report", "import_clip", "parse_frames", "load_robot", "ClipInputs",
           "clip_inputs", "bake_clip", "COMMAND_ID"]


# Everything a subcommand may raise for bad input: printed as one line, never a traceback.
INPUT_ERRORS = (CommandError, *USER_ERRORS)


def import_clip(path: Path, up: str = "Y") -> bpy.types.Object:
    """Import a motion clip with Blender's own importer; returns its armature. up: a BVH file's up axis."""
    from ..core.motion.bvh import load_bvh

    refuse_folder(path)
    if not path.is_file():
        raise CommandError(f"{path}: source clip not found")
    before = set(bpy.data.objects)
    suffix = path.suffix.lower()
    if suffix not in (".bvh", ".fbx"):
        raise CommandError(f"{path}: unsupported clip type {suffix!r} (use .bvh or .fbx)")
    with contextlib.redirect_stdout(io.StringIO()):  # importer chatter; stdout is for results
        if suffix == ".bvh":
            load_bvh(path)  # our reader names the line of a malformed file; Blender's does not
            axes = {"Y": {}, "Z": {"axis_forward": "Y", "axis_up": "Z"}}[up]
            bpy.ops.import_anim.bvh(filepath=str(path), update_scene_fps=True, update_scene_duration=True, **axes)
        else:
            bpy.ops.import_scene.fbx(filepath=str(path))
    armatures = [o for o in bpy.data.objects if o not in before and o.type == 'ARMATURE']
    if not armatures:
        raise CommandError(f"{path}: the file has no armature")
    return armatures[0]


def parse_frames(text: str | None, first: int, last: int) -> tuple[int, int]:
    """START:END in 0-based clip frames, END exclusive (Python slice), to Blender frames."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        start, end = clip_range(text, last - first + 1)
    print_warnings(str(note.message) for note in caught)
    return first + start, first + end - 1


def load_robot(path_text: str):
    """Import a URDF as a rig (no meshes): the rig, with import warnings on stderr."""
    from ..operators.import_urdf import import_urdf, warning_summary

    robot_path = Path(path_text)
    if not robot_path.is_file():
        raise CommandError(f"{robot_path}: robot URDF not found")
    robot, warnings = import_urdf(bpy.context, robot_path, import_meshes=False)
    if warnings:
        print(f"warning: {warning_summary(warnings)}", file=sys.stderr)
    return robot


@dataclass
class ClipInputs:
    """A clip and a robot imported, the mapping, the frames to use and the contacts to plant."""

    scene: bpy.types.Scene
    source: bpy.types.Object
    robot: bpy.types.Object
    robot_path: Path
    mapping: object
    start: int
    end: int
    contacts: object


def clip_inputs(args: argparse.Namespace) -> ClipInputs:
    """Import args.source and args.robot, map (args.mapping or automatic), read args.frames and
    args.contacts: what bake and gait both start from."""
    from ..core.chains.mapping import Mapping
    from ..operators.common import action_frame_range, auto_map_objects, tree_from_rig
    from ..operators.contacts import cli_contacts

    robot_path = Path(args.robot)
    if not robot_path.is_file():
        raise CommandError(f"{robot_path}: robot URDF not found")
    scene = bpy.context.scene
    source = import_clip(Path(args.source), getattr(args, "source_up", "Y"))
    robot = load_robot(args.robot)
    if args.mapping:
        mapping = Mapping.load(args.mapping)
        mapping.check_names(str(Path(args.mapping).absolute()), bones=[b.name for b in source.data.bones],
                            source=source.name, links=list(tree_from_rig(robot).link_names), robot=robot.name)
    else:
        mapping = auto_map_objects(source, robot, scene)
    mapping = mapping.with_settings(**self_collision_settings(args))
    clip = action_frame_range(source)
    start, end = parse_frames(args.frames, *clip)
    contacts = cli_contacts(getattr(args, "contacts", None), clip, start, end,
                            scene.render.fps / scene.render.fps_base)
    return ClipInputs(scene, source, robot, robot_path, mapping, start, end, contacts)


def bake_clip(args: argparse.Namespace):
    """Import args.source and args.robot, map (preset or automatic), bake args.frames.

    Returns (BakeOutcome, robot URDF path, robot rig); the rig now plays the new action.
    """
    from ..operators.retarget import bake_action

    inputs = clip_inputs(args)
    return (bake_action(inputs.scene, inputs.source, inputs.robot, inputs.mapping, inputs.start, inputs.end,
                        contacts=inputs.contacts), inputs.robot_path, inputs.robot)
