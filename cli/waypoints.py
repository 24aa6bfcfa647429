"""`waypoints`: a keyed end-effector path (PATH.json) as a robot arm's joint trajectory (bake CSV layout)."""
from __future__ import annotations

import argparse
from pathlib import Path

from .common import CommandError, add_outputs, check_outputs, print_warnings, write_report

MODES = ("interpolated", "tangent", "bisector", "mechanism", "tangent_mechanism")


def add_parser(sub) -> None:
    p = sub.add_parser("waypoints", help="follow a keyed tip path with a robot arm (joint trajectory)",
                       description="Orient the via keys of a tip path (PATH.json: times, positions in the base "
                                   "link's frame, orientations at the first and last key), sample it at a rate and "
                                   "solve the arm's joints for every sample inside their limits. Writes the bake "
                                   "CSV layout, one row per sample (root columns: the base link's pose).")
    p.add_argument("--robot", required=True, help="robot description (.urdf)")
    p.add_argument("--tip", required=True, metavar="LINK", help="the effector's link (the keyed frame)")
    p.add_argument("--base", metavar="LINK", help="the link the path is given in (default: the URDF's root)")
    p.add_argument("--path", required=True, help="PATH.json: {\"format\": \"robot_retarget.path\", ...}")
    p.add_argument("--mode", choices=MODES, default="tangent",
                   help="orientation at via keys without one (default tangent; interpolated: no optimum)")
    p.add_argument("--objective", choices=("manipulability", "torque"), default="manipulability",
                   help="what the mechanism modes optimise (default manipulability)")
    p.add_argument("--blend", choices=("parabola", "bspline"), default="parabola",
                   help="how far each via turns toward the optimum along the path (default parabola)")
    p.add_argument("--max-blend", type=float, default=1.0, metavar="U", help="largest blend, 0 to 1 (default 1)")
    p.add_argument("--rate", type=float, default=100.0, metavar="HZ", help="samples per second (default 100)")
    add_outputs(p, "CSV file to write (bake CSV layout, one row per sample, time_s = k / rate)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import numpy as np

    from ..core.model.kinematics import KinematicTree
    from ..core.model.urdf import parse_urdf
    from ..core.motion.bake_csv import BakeTable, write_bake_csv
    from ..core.waypoints.mechanism import make_chain
    from ..core.waypoints.trajectory import FollowSettings, follow_path, read_path

    out, report_path = check_outputs([args.out, args.report], args.overwrite)
    if not args.rate > 0:
        raise CommandError(f"--rate {args.rate:g}: must be positive (Hz)")
    if not 0.0 <= args.max_blend <= 1.0:
        raise CommandError(f"--max-blend {args.max_blend:g}: must be between 0 and 1")
    robot = Path(args.robot)
    if not robot.is_file():
        raise CommandError(f"{robot}: robot URDF not found")
    keys = read_path(args.path)
    tree = KinematicTree(parse_urdf(robot))
    try:
        chain = make_chain(tree, args.tip, args.base)
    except (KeyError, ValueError) as exc:  # no such link, --tip not below --base or the same link: say the flags
        raise CommandError(f"{robot}: --tip {args.tip} --base {args.base or tree.link_names[0]}: {exc.args[0]}") from None
    interpolated = args.mode == "interpolated"
    settings = FollowSettings(rate_hz=args.rate, mode="tangent" if interpolated else args.mode,
                              objective=args.objective, blend=args.blend,
                              max_blend=0.0 if interpolated else args.max_blend)
    result = follow_path(chain, keys, settings)
    count = len(result.time_s)
    table = BakeTable(result.joint_names, result.time_s, np.tile(result.base_position, (count, 1)),
                      np.tile(result.base_quaternion, (count, 1)), result.q)
    write_bake_csv(out, table, overwrite=args.overwrite)
    report = dict(result.report, mode=args.mode, robot_file=str(robot.absolute()),
                  path_file=str(Path(args.path).absolute()), out=str(out), tip=args.tip,
                  base=args.base or tree.link_names[0])
    write_report(report_path, report, args.overwrite)
    print_warnings(report["warnings"])
    print(f"{count} samples at {args.rate:g} Hz; largest error {report['max_position_error_m'] * 1000:.2f} mm, "
          f"{report['max_orientation_error_deg']:.2f} deg; fastest joint at "
          f"{report['max_joint_speed_ratio']:.0%} of its limit; {report['limit_violations']} samples outside "
          f"limits; {len(report['unreachable'])} unreachable")
    print(f"wrote {out}" + (f" and {report_path}" if report_path else ""))
    return 0
