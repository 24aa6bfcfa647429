"""Command line of Robot Retarget: `blender -b -c robot_retarget SUBCOMMAND ...`.

main(argv) is also what tools/robot-retarget calls inside bpy-as-a-module,
so everything here must work without a window. Subcommands print their
results to stdout and return a process exit code.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import sys
import tomllib
from pathlib import Path

import bpy
import numpy as np

COMMAND_ID = "robot_retarget"
_MANIFEST = Path(__file__).resolve().with_name("blender_manifest.toml")

_handle = None


def manifest() -> dict:
    """The installed extension's manifest (the build appends wheels/platforms)."""
    with open(_MANIFEST, "rb") as fh:
        return tomllib.load(fh)


def version() -> str:
    return str(manifest()["version"])


def _cmd_version(args: argparse.Namespace) -> int:
    print(f"{COMMAND_ID} {version()}")
    return 0


class CommandError(Exception):
    """A problem with the user's input: printed as one line, exit code 1."""


def import_clip(path: Path) -> bpy.types.Object:
    """Import a motion clip with Blender's own importer; returns its armature."""
    from .core.bvh import load_bvh

    if not path.is_file():
        raise CommandError(f"{path}: source clip not found")
    before = set(bpy.data.objects)
    suffix = path.suffix.lower()
    if suffix not in (".bvh", ".fbx"):
        raise CommandError(f"{path}: unsupported clip type {suffix!r} (use .bvh or .fbx)")
    with contextlib.redirect_stdout(io.StringIO()):  # importer chatter; stdout is for results
        if suffix == ".bvh":
            load_bvh(path)  # our reader names the line of a malformed file; Blender's does not
            bpy.ops.import_anim.bvh(filepath=str(path), update_scene_fps=True, update_scene_duration=True)
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


def _cmd_bake(args: argparse.Namespace) -> int:
    from .core.bake_csv import BakeTable, write_bake_csv
    from .core.fileio import write_text_atomic
    from .core.mapping import Mapping
    from .operators.import_urdf import import_urdf, warning_summary
    from .operators.retarget import action_frame_range, auto_map_objects, bake_action, report_summary

    out = check_output(Path(args.out).absolute(), args.overwrite)
    report_path = check_output(Path(args.report).absolute(), args.overwrite) if args.report else None
    robot_path = Path(args.robot)
    if not robot_path.is_file():
        raise CommandError(f"{robot_path}: robot URDF not found")
    scene = bpy.context.scene
    source = import_clip(Path(args.source))
    robot, warnings = import_urdf(bpy.context, robot_path, import_meshes=False)
    if warnings:
        print(f"warning: {warning_summary(warnings)}", file=sys.stderr)
    mapping = Mapping.load(args.mapping) if args.mapping else auto_map_objects(source, robot, scene)
    start, end = parse_frames(args.frames, *action_frame_range(source))
    outcome = bake_action(scene, source, robot, mapping, start, end)
    result = outcome.result
    table = BakeTable(result.joint_names, np.arange(len(result.q)) / result.fps, result.root_position,
                      result.root_quaternion, result.q)
    write_bake_csv(out, table, overwrite=args.overwrite)
    report = dict(result.report, source_file=str(Path(args.source).absolute()),
                  robot_file=str(robot_path.absolute()), out=str(out), action=outcome.action.name)
    if report_path:
        write_text_atomic(report_path, json.dumps(report, indent=2) + "\n", overwrite=args.overwrite)
    for warning in result.report.get("warnings", []):
        print(f"warning: {warning}", file=sys.stderr)
    print(report_summary(result.report))
    print(f"wrote {out}" + (f" and {report_path}" if report_path else ""))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="robot-retarget",
        description="Retarget character animation onto robots.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    p = sub.add_parser("version", help="print the extension's version")
    p.set_defaults(func=_cmd_version)
    p = sub.add_parser("bake", help="retarget a clip onto a robot and write the bake CSV",
                       description="Retarget a BVH/FBX clip onto a URDF robot; write one CSV row per "
                                   "source frame (time_s, root pose, joints in URDF order; radians, metres).")
    p.add_argument("--source", required=True, help="motion clip (.bvh or .fbx)")
    p.add_argument("--robot", required=True, help="robot description (.urdf)")
    p.add_argument("--mapping", help="chain mapping preset (.json); default: automatic mapping")
    p.add_argument("--frames", help="START:END clip frames, 0-based, END exclusive (default: all)")
    p.add_argument("--out", required=True, help="CSV file to write")
    p.add_argument("--report", help="JSON report to write")
    p.add_argument("--overwrite", action="store_true", help="replace existing output files")
    p.set_defaults(func=_cmd_bake)
    from . import cli_splice
    cli_splice.add_parser(sub)
    return parser


def main(argv: list[str]) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(list(argv))
    except SystemExit as ex:  # --help or a usage error: argparse already printed
        return ex.code if isinstance(ex.code, int) else 1
    if getattr(args, "func", None) is None:
        parser.print_help(sys.stderr)
        return 2
    from .operators.retarget import USER_ERRORS
    try:
        return int(args.func(args))
    except (CommandError, *USER_ERRORS) as ex:  # one line, not a traceback, for bad input
        message = ex.args[0] if isinstance(ex, KeyError) and ex.args else ex
        print(f"robot-retarget: error: {message}", file=sys.stderr)
        return 1


def _execute(argv: list[str]) -> int:
    """Handler for Blender's `-c robot_retarget`: argv is what follows the id."""
    return main(argv)


def register():
    global _handle
    if _handle is None:
        _handle = bpy.utils.register_cli_command(COMMAND_ID, _execute)


def unregister():
    global _handle
    if _handle is not None:
        bpy.utils.unregister_cli_command(_handle)
        _handle = None
