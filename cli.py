"""Command line of Robot Retarget: `blender -b -c robot_retarget SUBCOMMAND ...`.

main(argv) is also what tools/robot-retarget calls inside bpy-as-a-module,
so everything here must work without a window. Subcommands print their
results to stdout and return a process exit code.
"""
from __future__ import annotations

import argparse
import contextlib
import dataclasses
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


def _bake_clip(args: argparse.Namespace):
    """Import args.source and args.robot, map (preset or automatic), bake args.frames.

    Returns (BakeOutcome, robot URDF path, robot rig); the rig now plays the new action.
    """
    from .core.mapping import Mapping
    from .operators.import_urdf import import_urdf, warning_summary
    from .operators.contacts import cli_contacts
    from .operators.retarget import action_frame_range, auto_map_objects, bake_action

    robot_path = Path(args.robot)
    if not robot_path.is_file():
        raise CommandError(f"{robot_path}: robot URDF not found")
    scene = bpy.context.scene
    source = import_clip(Path(args.source))
    robot, warnings = import_urdf(bpy.context, robot_path, import_meshes=False)
    if warnings:
        print(f"warning: {warning_summary(warnings)}", file=sys.stderr)
    mapping = Mapping.load(args.mapping) if args.mapping else auto_map_objects(source, robot, scene)
    clip = action_frame_range(source)
    start, end = parse_frames(args.frames, *clip)
    contacts = cli_contacts(getattr(args, "contacts", None), clip, start, end,
                            scene.render.fps / scene.render.fps_base)
    return bake_action(scene, source, robot, mapping, start, end, contacts=contacts), robot_path, robot


def _cmd_bake(args: argparse.Namespace) -> int:
    from .core.bake_csv import BakeTable, write_bake_csv
    from .core.fileio import write_text_atomic
    from .operators.retarget import report_summary

    out = check_output(Path(args.out).absolute(), args.overwrite)
    report_path = check_output(Path(args.report).absolute(), args.overwrite) if args.report else None
    if args.contacts not in ("auto", "off") and not Path(args.contacts).is_file():
        raise CommandError(f"{args.contacts}: contacts file not found")
    outcome, robot_path, _ = _bake_clip(args)
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


# ------------------------------------------------------------------ export ---

def export_settings(args: argparse.Namespace):
    """ExportSettings from --settings (JSON), then the flags given on the command line."""
    from .core.playback import ExportSettings

    settings = ExportSettings.load(args.settings) if args.settings else ExportSettings()
    changes: dict = {}
    if args.rate is not None:
        if not args.rate > 0:
            raise CommandError(f"--rate {args.rate:g}: expected a positive number of Hz")
        changes["period_s"] = 1.0 / args.rate
    if args.period is not None:
        if not args.period > 0:
            raise CommandError(f"--period {args.period:g}: expected a positive number of seconds")
        changes["period_s"] = args.period
    for flag in ("format", "units", "acceleration_limit"):
        if getattr(args, flag) is not None:
            changes[flag] = getattr(args, flag)
    for flag in ("retime", "allow_violations", "overwrite"):
        if getattr(args, flag):
            changes[flag] = True
    return dataclasses.replace(settings, **changes).validate()


def _open_scene(args: argparse.Namespace):
    """Open a .blend; its robot rig (--object, else the Robot tab's, the active or the only one).

    --robot, when given, replaces the rig's URDF path (the rig must still match it).
    """
    from .operators.export import find_robot
    from .operators.retarget import action_frame_range

    path = Path(args.source).absolute()
    if not path.is_file():
        raise CommandError(f"{path}: scene not found")
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            bpy.ops.wm.open_mainfile(filepath=str(path), load_ui=False)
    except RuntimeError as exc:
        raise CommandError(f"{path}: cannot open ({str(exc).strip().splitlines()[-1]})") from None
    robot = find_robot(bpy.context, args.object)
    if args.robot:
        robot["urdf_path"] = str(Path(args.robot).absolute())
    frames = parse_frames(args.frames, *action_frame_range(robot)) if args.frames else None
    return robot, frames


def _export(args: argparse.Namespace) -> tuple[dict, str]:
    """Bake a clip (or open a .blend) and export the robot's action: (REPORT.json dict, summary)."""
    from .core.playback_formats import output_paths
    from .operators.export import export_playback, export_summary
    from .operators.retarget import report_summary

    settings = export_settings(args)
    out = Path(args.out).absolute()
    for path in output_paths(out, settings.format):
        check_output(path, settings.overwrite)
    if args.report:
        check_output(Path(args.report).absolute(), settings.overwrite)
    if args.robot and not Path(args.robot).is_file():
        raise CommandError(f"{args.robot}: robot URDF not found")
    source = Path(args.source).absolute()
    if source.suffix.lower() == ".blend":
        (robot, frames), bake_report, lines = _open_scene(args), None, []
    elif not args.robot:
        raise CommandError(f"{source}: --robot ROBOT.urdf is required to bake a clip")
    else:
        outcome, _, robot = _bake_clip(args)
        frames, bake_report, lines = None, outcome.result.report, [report_summary(outcome.result.report)]
    exported = export_playback(robot, out, settings, scene=bpy.context.scene, source=str(source),
                               frame_range=frames, bake_report=bake_report)
    report = dict(exported.report, source_file=str(source), out=str(out), action=exported.action_name,
                  robot_file=str(Path(args.robot).absolute()) if args.robot else robot.get("urdf_path"))
    return report, "\n".join(lines + [export_summary(exported)])


def _cmd_export(args: argparse.Namespace) -> int:
    from .core.fileio import write_text_atomic

    report, summary = _export(args)
    report_path = Path(args.report).absolute() if args.report else None
    if report_path:
        overwrite = export_settings(args).overwrite
        write_text_atomic(report_path, json.dumps(report, indent=2) + "\n", overwrite=overwrite)
    for warning in report.get("warnings", []):
        print(f"warning: {warning}", file=sys.stderr)
    print(summary)
    print(f"wrote {' and '.join(report['files'] + ([str(report_path)] if report_path else []))}")
    return 0


# ------------------------------------------------------------------- batch ---

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
    p.add_argument("--contacts", default="auto", metavar="auto|off|FILE.json",
                   help="feet to keep planted: contacts detected from the clip (auto, the default), none "
                        "(off), or a contacts file in 0-based clip frames")
    p.add_argument("--out", required=True, help="CSV file to write")
    p.add_argument("--report", help="JSON report to write")
    p.add_argument("--overwrite", action="store_true", help="replace existing output files")
    p.set_defaults(func=_cmd_bake)
    p = sub.add_parser("export", help="bake a clip (or open a .blend) and write a robot playback file",
                       description="Write the robot's action at the control cycle (t_k = k * period) as a "
                                   "playback file, checked against position, velocity and acceleration limits.")
    p.add_argument("--source", required=True, help="motion clip (.bvh, .fbx) or scene (.blend) with a baked robot")
    p.add_argument("--robot", help="robot description (.urdf); required for clips; replaces a .blend rig's URDF path")
    p.add_argument("--object", help="robot rig in the .blend (default: the Robot tab's, the active or the only rig)")
    p.add_argument("--mapping", help="chain mapping preset (.json); default: automatic mapping")
    p.add_argument("--frames", help="START:END frames, 0-based, END exclusive (default: all)")
    _playback_options(p)
    p.add_argument("--out", required=True, help="playback file to write")
    p.add_argument("--report", help="JSON report to write")
    p.set_defaults(func=_cmd_export)
    from . import cli_batch
    cli_batch.add_parser(sub)
    from . import cli_splice
    cli_splice.add_parser(sub)
    return parser


def _playback_options(p: argparse.ArgumentParser) -> None:
    from .core.playback_formats import FORMATS

    p.add_argument("--settings", metavar="EXPORT.json", help="export settings (.json): format, rate_hz, units, limits, retime, ...")
    p.add_argument("--format", choices=list(FORMATS), help="playback format (default: csv)")
    cycle = p.add_mutually_exclusive_group()
    cycle.add_argument("--rate", type=float, metavar="HZ", help="control rate in Hz (default: 100, i.e. a 10 ms period)")
    cycle.add_argument("--period", type=float, metavar="SECONDS", help="control period in seconds (instead of --rate)")
    p.add_argument("--units", choices=["rad", "deg"], help="revolute joint units (default: rad; deg: csv, npz)")
    p.add_argument("--accel-limit", dest="acceleration_limit", type=float, metavar="A",
                   help="acceleration limit for every joint, rad/s^2 (m/s^2 for prismatic joints)")
    p.add_argument("--retime", action="store_true", help="slow down the segments that break velocity or "
                                                         "acceleration limits")
    p.add_argument("--allow-violations", action="store_true", help="write even if limits are broken")
    p.add_argument("--overwrite", action="store_true", help="replace existing output files")


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
