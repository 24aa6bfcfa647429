"""`gait`: a clip's steps as a robot gait that keeps its balance, at the robot's control cycle."""
from __future__ import annotations

import argparse
from pathlib import Path

from .common import (CommandError, add_clip_arguments, add_outputs, add_source_up, check_outputs, clip_inputs,
                     print_warnings, write_report)


def add_parser(sub) -> None:
    p = sub.add_parser("gait", help="turn a clip's steps into a balanced robot gait at the control cycle",
                       description="Retarget a walking or dancing clip into robot motion at its control cycle whose "
                                   "zero moment point stays over its feet: feet flat and still on the ground, the "
                                   "swing legs through the person's representative points, the waist balanced "
                                   "by preview control. Writes the bake CSV layout, one row per control cycle.")
    add_clip_arguments(p, robot_help="robot description (.urdf) with <inertial> masses")
    rate = p.add_mutually_exclusive_group()
    rate.add_argument("--rate", type=float, metavar="HZ", help="control rate (default 200 Hz)")
    rate.add_argument("--period", type=float, metavar="S", help="control period in seconds (default 0.005)")
    p.add_argument("--sensitivity", type=float, default=1.0,
                   help="how much of the person's swing style to keep: higher keeps more of its turning points "
                        "(default 1)")
    p.add_argument("--merge-s", type=float, default=0.1, metavar="S",
                   help="turning points of a swing closer than this become one (default 0.1 s)")
    upper = p.add_mutually_exclusive_group()
    upper.add_argument("--upper-body", dest="upper_body", action="store_true", default=True,
                       help="arms and torso follow the clip (default)")
    upper.add_argument("--no-upper-body", dest="upper_body", action="store_false",
                       help="arms and torso hold the clip's median posture")
    p.add_argument("--waist", choices=list(WAISTS), default="auto",
                   help="legs without an ankle roll: the waist rolls and yaws to carry the body over a flat foot "
                        "(rolled; balanced, about 1.3 times the CPU time) or stays upright (upright; faster, its "
                        "ZMP may leave the feet); auto (the default) rolls it exactly where the legs need it")
    p.add_argument("--contacts", default="auto", metavar="auto|FILE.json",
                   help="the clip's foot contacts: detected (auto, the default) or a contacts file in 0-based "
                        "clip frames")
    add_outputs(p, "CSV file to write (bake CSV layout, one row per control cycle)")
    add_source_up(p)
    p.set_defaults(func=run)


WAISTS = {"auto": None, "rolled": True, "upright": False}  # GaitSettings.sagittal_waist


def period_from(args: argparse.Namespace) -> float:
    if args.rate is not None:
        if not args.rate > 0:
            raise CommandError(f"--rate {args.rate:g}: must be positive (Hz)")
        return 1.0 / args.rate
    if args.period is not None:
        if not args.period > 0:
            raise CommandError(f"--period {args.period:g}: must be positive (seconds)")
        return args.period
    return 0.005


def run(args: argparse.Namespace) -> int:
    from ..core.balance.gait import GaitSettings
    from ..core.model.transforms import matrix_to_quat, quat_continuous
    from ..core.motion.bake_csv import BakeTable, write_bake_csv
    from ..operators.gait import gait_action, gait_summary

    out, report_path = check_outputs([args.out, args.report], args.overwrite, [args.source])
    if args.contacts == "off":
        raise CommandError("--contacts off: a gait needs the clip's steps (auto or a contacts file)")
    if args.contacts != "auto" and not Path(args.contacts).is_file():
        raise CommandError(f"{args.contacts}: contacts file not found")
    if not args.sensitivity > 0:
        raise CommandError(f"--sensitivity {args.sensitivity:g}: must be positive")
    if args.merge_s < 0:
        raise CommandError(f"--merge-s {args.merge_s:g}: must not be negative")
    settings = GaitSettings(period_s=period_from(args), sensitivity=args.sensitivity, merge_s=args.merge_s,
                            upper_body=args.upper_body, sagittal_waist=WAISTS[args.waist])
    inputs = clip_inputs(args)
    outcome = gait_action(inputs.scene, inputs.source, inputs.robot, inputs.mapping, inputs.start, inputs.end,
                          settings, contacts=inputs.contacts)
    result = outcome.result
    table = BakeTable(result.joint_names, result.time_s, result.root_position,
                      quat_continuous(matrix_to_quat(result.root_rotation)), result.q)
    write_bake_csv(out, table, overwrite=args.overwrite)
    report = dict(result.report, source_file=str(Path(args.source).absolute()),
                  robot_file=str(inputs.robot_path.absolute()), out=str(out), action=outcome.action.name)
    write_report(report_path, report, args.overwrite)
    print_warnings(result.report.get("warnings", []))
    print(gait_summary(result.report))
    print(f"wrote {out}" + (f" and {report_path}" if report_path else ""))
    return 0
