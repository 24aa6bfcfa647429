"""`robot-retarget splice`: retarget several clips onto one robot and splice them in order.

Each clip is imported, auto-mapped (or mapped by --mapping) and baked exactly
as `bake` does it; core.splice then joins neighbouring clips at their best
posture pairs with generated transitions. The result is written in the bake
CSV layout, so every tool that reads a bake reads a splice; the report lists
each join (`joins`) with its times, angle difference and transition.
"""
from __future__ import annotations

import argparse
from pathlib import Path

from .common import add_source_up


def add_parser(subparsers) -> None:
    """Register the `splice` subcommand on cli.build_parser()'s subparsers."""
    p = subparsers.add_parser(
        "splice", help="retarget clips onto a robot and splice them at their best posture pairs",
        description="Retarget each --source onto the robot, join neighbouring clips where their postures "
                    "match best (inside their preparatory movements) with a generated transition, and write "
                    "the result in the bake CSV layout.")
    p.add_argument("--robot", required=True, help="robot description (.urdf)")
    p.add_argument("--mapping", help="chain mapping preset (.json); default: automatic mapping per clip")
    p.add_argument("--source", action="append", required=True,
                   help="motion clip (.bvh or .fbx); repeat for each clip, in playing order (at least two)")
    p.add_argument("--threshold-deg", type=float, default=15.0,
                   help="largest integrated angle difference of a join, degrees (5-30, default 15)")
    p.add_argument("--policy", choices=["shortest", "similar"], default="shortest",
                   help="among matching pairs: least preparatory time kept (default) or the most similar")
    p.add_argument("--out", required=True, help="CSV file to write (bake layout)")
    p.add_argument("--report", help="JSON report to write (with `joins`)")
    p.add_argument("--overwrite", action="store_true", help="replace existing output files")
    add_source_up(p)
    p.set_defaults(func=run)


def _bake_clips(args: argparse.Namespace, robot) -> list:
    """Import and bake every source as `bake` would; returns core clips named after the files."""
    import bpy

    from ..core.chains.mapping import Mapping
    from ..core.splice import Clip
    from ..operators.common import action_frame_range, auto_map_objects
    from ..operators.retarget import bake_action
    from .common import import_clip, print_warnings

    preset = Mapping.load(args.mapping) if args.mapping else None
    clips, names = [], set()
    for number, text in enumerate(args.source, start=1):
        path = Path(text)
        source = import_clip(path, args.source_up)
        mapping = preset or auto_map_objects(source, robot, bpy.context.scene)
        outcome = bake_action(bpy.context.scene, source, robot, mapping, *action_frame_range(source))
        result = outcome.result
        print_warnings(result.report.get("warnings", []), prefix=f"{path}: ")
        name = path.stem if path.stem not in names else f"{path.stem}#{number}"
        names.add(name)
        clips.append(Clip(name, result.q, result.fps, result.root_position, result.root_quaternion))
    return clips


def run(args: argparse.Namespace) -> int:

    from ..core.motion.bake_csv import BakeTable, write_bake_csv
    from ..core.splice import SpliceSettings, splice
    from ..operators.common import tree_from_rig
    from ..operators.splice import join_summary
    from .common import CommandError, check_output, load_robot, print_warnings, write_report

    out = check_output(Path(args.out).absolute(), args.overwrite)
    report_path = check_output(Path(args.report).absolute(), args.overwrite) if args.report else None
    if len(args.source) < 2:
        raise CommandError(f"splice needs at least two --source clips, got {len(args.source)}")
    if not 5.0 <= args.threshold_deg <= 30.0:
        raise CommandError(f"--threshold-deg {args.threshold_deg:g}: outside 5-30 degrees")
    settings = SpliceSettings(threshold_deg=args.threshold_deg, policy=args.policy)
    settings.validate()  # before the slow work
    robot_path = Path(args.robot)
    robot = load_robot(args.robot)
    clips = _bake_clips(args, robot)
    tree = tree_from_rig(robot)
    result = splice(clips, settings, tree.joint_names, tree.lower, tree.upper, tree.velocity)
    write_bake_csv(out, BakeTable(result.joint_names, result.time, result.root_position, result.root_quaternion,
                                  result.q), overwrite=args.overwrite)
    report = dict(result.report(), source_files=[str(Path(s).absolute()) for s in args.source],
                  robot_file=str(robot_path.absolute()), out=str(out))
    write_report(report_path, report, args.overwrite)
    print_warnings(result.warnings)
    for join in result.joins:
        print(join_summary(join))
    print(f"Spliced {len(clips)} clips: {len(result.q)} frames, {len(result.q) / result.fps:.2f} s")
    print(f"wrote {out}" + (f" and {report_path}" if report_path else ""))
    return 0
