"""`bake`: retarget one clip onto a robot and write the bake CSV (and the report)."""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from .common import (CommandError, add_clip_arguments, add_outputs, add_source_up, bake_clip, check_output,
                     print_warnings, write_report)


def add_parser(sub) -> None:
    p = sub.add_parser("bake", help="retarget a clip onto a robot and write the bake CSV",
                       description="Retarget a BVH/FBX clip onto a URDF robot; write one CSV row per "
                                   "source frame (time_s, root pose, joints in URDF order; radians, metres).")
    add_clip_arguments(p)
    p.add_argument("--contacts", default="auto", metavar="auto|off|FILE.json",
                   help="feet to keep planted: contacts detected from the clip (auto, the default), none "
                        "(off), or a contacts file in 0-based clip frames")
    add_outputs(p, "CSV file to write")
    add_source_up(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..core.motion.bake_csv import BakeTable, write_bake_csv
    from ..operators.retarget import report_summary

    out = check_output(Path(args.out).absolute(), args.overwrite)
    report_path = check_output(Path(args.report).absolute(), args.overwrite) if args.report else None
    if args.contacts not in ("auto", "off") and not Path(args.contacts).is_file():
        raise CommandError(f"{args.contacts}: contacts file not found")
    outcome, robot_path, _ = bake_clip(args)
    result = outcome.result
    table = BakeTable(result.joint_names, np.arange(len(result.q)) / result.fps, result.root_position,
                      result.root_quaternion, result.q)
    write_bake_csv(out, table, overwrite=args.overwrite)
    report = dict(result.report, source_file=str(Path(args.source).absolute()),
                  robot_file=str(robot_path.absolute()), out=str(out), action=outcome.action.name)
    write_report(report_path, report, args.overwrite)
    print_warnings(result.report.get("warnings", []))
    print(report_summary(result.report))
    print(f"wrote {out}" + (f" and {report_path}" if report_path else ""))
    return 0
