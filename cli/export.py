"""`export`: bake a clip (or open a .blend) and write a robot playback file at the control cycle."""
from __future__ import annotations

import argparse
import contextlib
import io
from pathlib import Path

import bpy

from ..core.library.arguments import add_export_parser
from .common import CommandError, bake_clip, parse_frames


def add_parser(sub) -> None:
    add_export_parser(sub, run)


def export_args(argv: list[str]) -> argparse.Namespace:
    """`export` arguments parsed on their own (batch runs one export per clip in this process)."""
    parser = argparse.ArgumentParser(prog="robot-retarget export")
    add_parser(parser.add_subparsers(dest="command"))
    return parser.parse_args(["export", *argv])


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
    """Bake a clip (or open a .blend) and export the robot's action: (REPORT.json dict, summary).

    A BVH clip onto a URDF is baked and written by core.library, as `robot-retarget-core export`
    does (the same bytes); FBX clips and .blend scenes go through Blender."""
    from ..core.library import cli as core_cli
    from ..operators.common import extension_version
    from ..operators.export import export_playback, export_summary
    from ..core.retarget.summary import report_summary

    source = Path(args.source).absolute()
    if source.suffix.lower() == ".bvh":
        return core_cli.export_files(args, f"{core_cli.GENERATOR} {extension_version()}")
    settings, out = core_cli.export_outputs(args)
    if args.robot and not Path(args.robot).is_file():
        raise CommandError(f"{args.robot}: robot URDF not found")
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
    from ..core.library import cli as core_cli

    return core_cli.finish_export(args, *export_clip(args))
