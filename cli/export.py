"""`export`: bake a clip (or open a .blend) and write a robot playback file at the control cycle."""
from __future__ import annotations

import argparse
import contextlib
import dataclasses
import io
from pathlib import Path

import bpy

from .common import (CommandError, add_source_up, bake_clip, check_output, parse_frames, print_warnings,
                     write_report)


def add_parser(sub) -> None:
    p = sub.add_parser("export", help="bake a clip (or open a .blend) and write a robot playback file",
                       description="Write the robot's action at the control cycle (t_k = k * period) as a "
                                   "playback file, checked against position, velocity and acceleration limits.")
    p.add_argument("--source", required=True, help="motion clip (.bvh, .fbx) or scene (.blend) with a baked robot")
    p.add_argument("--robot", help="robot description (.urdf); required for clips; replaces a .blend rig's URDF path")
    p.add_argument("--object", help="robot rig in the .blend (default: the Robot tab's, the active or the only rig)")
    p.add_argument("--mapping", help="chain mapping preset (.json); default: automatic mapping")
    p.add_argument("--frames", help="START:END frames, 0-based, END exclusive (default: all)")
    playback_options(p)
    p.add_argument("--out", required=True, help="playback file to write")
    p.add_argument("--report", help="JSON report to write")
    add_source_up(p)
    p.set_defaults(func=run)


def export_args(argv: list[str]) -> argparse.Namespace:
    """`export` arguments parsed on their own (batch runs one export per clip in this process)."""
    parser = argparse.ArgumentParser(prog="robot-retarget export")
    add_parser(parser.add_subparsers(dest="command"))
    return parser.parse_args(["export", *argv])


def playback_options(p: argparse.ArgumentParser) -> None:
    from ..core.playback.formats import FORMATS

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


def export_settings(args: argparse.Namespace):
    """ExportSettings from --settings (JSON), then the flags given on the command line."""
    from ..core.playback import ExportSettings

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


def open_scene(args: argparse.Namespace):
    """Open a .blend; its robot rig (--object, else the Robot tab's, the active or the only one).

    --robot, when given, replaces the rig's URDF path (the rig must still match it).
    """
    from ..operators.common import action_frame_range
    from ..operators.export import find_robot

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


def export_clip(args: argparse.Namespace) -> tuple[dict, str]:
    """Bake a clip (or open a .blend) and export the robot's action: (REPORT.json dict, summary)."""
    from ..core.playback.formats import output_paths
    from ..operators.export import export_playback, export_summary
    from ..operators.retarget import report_summary

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
        (robot, frames), bake_report, lines = open_scene(args), None, []
    elif not args.robot:
        raise CommandError(f"{source}: --robot ROBOT.urdf is required to bake a clip")
    else:
        outcome, _, robot = bake_clip(args)
        frames, bake_report, lines = None, outcome.result.report, [report_summary(outcome.result.report)]
    exported = export_playback(robot, out, settings, scene=bpy.context.scene, source=str(source),
                               frame_range=frames, bake_report=bake_report)
    report = dict(exported.report, source_file=str(source), out=str(out), action=exported.action_name,
                  robot_file=str(Path(args.robot).absolute()) if args.robot else robot.get("urdf_path"))
    return report, "\n".join(lines + [export_summary(exported)])


def run(args: argparse.Namespace) -> int:
    report, summary = export_clip(args)
    report_path = Path(args.report).absolute() if args.report else None
    write_report(report_path, report, export_settings(args).overwrite)
    print_warnings(report.get("warnings", []))
    print(summary)
    print(f"wrote {' and '.join(report['files'] + ([str(report_path)] if report_path else []))}")
    return 0
