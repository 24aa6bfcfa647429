"""Pieces every subcommand shares: the one-line user error, inputs (a clip, a robot, a mapping,
a frame range), checked outputs, and baking a clip the way `bake` does.

Everything here runs without a window: `blender -b -c robot_retarget ...` and
tools/robot-retarget (bpy as a module) both call cli.main().
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path

import bpy

from ..operators.common import USER_ERRORS

COMMAND_ID = "robot_retarget"


class CommandError(Exception):
    """A problem with the user's input: printed as one line, exit code 1."""


# Everything a subcommand may raise for bad input: printed as one line, never a traceback.
INPUT_ERRORS = (CommandError, *USER_ERRORS)


def add_clip_arguments(p: argparse.ArgumentParser, robot_help: str = "robot description (.urdf)") -> None:
    """--source, --robot, --mapping, --frames: one clip onto one robot (bake, gait)."""
    p.add_argument("--source", required=True, help="motion clip (.bvh or .fbx)")
    p.add_argument("--robot", required=True, help=robot_help)
    p.add_argument("--mapping", help="chain mapping preset (.json); default: automatic mapping")
    p.add_argument("--frames", help="START:END clip frames, 0-based, END exclusive (default: all)")


def add_outputs(p: argparse.ArgumentParser, out_help: str) -> None:
    """--out, --report, --overwrite."""
    p.add_argument("--out", required=True, help=out_help)
    p.add_argument("--report", help="JSON report to write")
    p.add_argument("--overwrite", action="store_true", help="replace existing output files")


def add_source_up(p: argparse.ArgumentParser) -> None:
    """--source-up: the BVH file's up axis (Blender's importer's axis_up; FBX files say their own)."""
    p.add_argument("--source-up", choices=["Y", "Z"], default="Y",
                   help="up axis of a BVH clip: Y (the BVH convention, default) or Z (written by some "
                        "exporters; read as Y the actor lies on its back)")


def import_clip(path: Path, up: str = "Y") -> bpy.types.Object:
    """Import a motion clip with Blender's own importer; returns its armature. up: a BVH file's up axis."""
    from ..core.motion.bvh import load_bvh

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
    count = last - first + 1
    if not text:
        return first, last
    try:
        start_text, end_text = text.split(":")
        start = int(start_text) if start_text.strip() else 0
        end = int(end_text) if end_text.strip() else count
    except ValueError:
        raise CommandError(f"--frames {text!r}: expected START:END, e.g. 0:240") from None
    start, end = max(start, 0), min(end, count)
    if end <= start:
        raise CommandError(f"--frames {text!r}: no frames in range (the clip has {count})")
    return first + start, first + end - 1


def check_output(path: Path, overwrite: bool) -> Path:
    """Fail before the slow work if the result could not be written."""
    if path.exists() and not overwrite:
        raise CommandError(f"{path}: file exists (pass --overwrite to replace it)")
    if not path.parent.is_dir():
        raise CommandError(f"{path}: folder {path.parent} does not exist")
    if not os.access(path.parent, os.W_OK):
        raise CommandError(f"{path}: folder {path.parent} is not writable")
    return path


def write_report(path: Path | None, report: dict, overwrite: bool) -> None:
    """REPORT.json, atomically (nothing half-written)."""
    from ..core.motion.fileio import write_text_atomic

    if path is not None:
        write_text_atomic(path, json.dumps(report, indent=2) + "\n", overwrite=overwrite)


def print_warnings(warnings, prefix: str = "") -> None:
    for warning in warnings:
        print(f"warning: {prefix}{warning}", file=sys.stderr)


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
    from ..operators.common import action_frame_range, auto_map_objects
    from ..operators.contacts import cli_contacts

    robot_path = Path(args.robot)
    if not robot_path.is_file():
        raise CommandError(f"{robot_path}: robot URDF not found")
    scene = bpy.context.scene
    source = import_clip(Path(args.source), getattr(args, "source_up", "Y"))
    robot = load_robot(args.robot)
    mapping = Mapping.load(args.mapping) if args.mapping else auto_map_objects(source, robot, scene)
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
