"""`balance`: would the robot stand? The balance readout of any motion in the bake CSV layout."""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from .common import CommandError, check_outputs, print_warnings, write_report


def add_parser(sub) -> None:
    p = sub.add_parser("balance", help="ZMP against the support polygon for a robot motion (bake CSV)",
                       description="The balance readout of a motion in the bake CSV layout: the multibody "
                                   "zero moment point against the support polygon of the feet on the ground.")
    p.add_argument("--motion", required=True, help="robot motion in the bake CSV layout (time_s, root pose, joints); "
                   "an exported playback file (.csv with its .meta.json, .npz) is read in its own units")
    p.add_argument("--robot", required=True, help="robot description (.urdf) with <inertial> masses")
    p.add_argument("--report", help="JSON report to write")
    p.add_argument("--per-frame", action="store_true", help="also write zmp_m, com_m and support_margin_m per frame")
    p.add_argument("--overwrite", action="store_true", help="replace an existing report")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..core.balance import balance_readout
    from ..core.model.kinematics import KinematicTree
    from ..core.model.transforms import pose_matrices, quat_to_matrix
    from ..core.model.urdf import parse_urdf

    report_path, = check_outputs([args.report], args.overwrite, [args.motion])
    tree = KinematicTree(parse_urdf(args.robot))
    names, time_s, root_position, root_quaternion, joints = _read_motion(Path(args.motion))
    missing = [name for name in tree.joint_names if name not in names]
    if missing:
        more = f" and {len(missing) - 5} more" if len(missing) > 5 else ""  # another robot's motion misses many
        raise CommandError(f"{args.motion}: no column for {len(missing)} of the {len(tree.joint_names)} joints of "
                           f"{args.robot}: {', '.join(missing[:5])}{more}")
    if len(time_s) < 2:
        raise CommandError(f"{args.motion}: needs at least two rows to tell the rate")
    q = joints[:, [names.index(name) for name in tree.joint_names]]
    root = pose_matrices(quat_to_matrix(root_quaternion), root_position)
    fps = 1.0 / float(np.median(np.diff(time_s)))
    report = balance_readout(tree, q, root, fps, per_frame=args.per_frame)
    report.update(motion_file=str(Path(args.motion).absolute()), robot_file=str(Path(args.robot).absolute()),
                  rate_hz=fps)
    write_report(report_path, report, args.overwrite)
    print_warnings(report["warnings"])
    margin = report["min_support_margin_m"]
    print(f"{report['frames']} frames: ZMP outside the support on {report['zmp_outside_support_pct']:.1f} % of "
          f"frames; worst margin {'none' if margin is None else f'{1000 * margin:.0f} mm'}; "
          f"{report['frames_without_support']} frames without a foot on the ground, "
          f"{report['frames_without_ground_force']} where the motion asks the ground for (nearly) no push")
    if report_path:
        print(f"wrote {report_path}")
    return 0


def _read_motion(path: Path):
    """(joint names, time (N,) s, root position (N, 3), root quaternion (N, 4), joints (N, n) rad|m).
    A playback file that says its units (an export's .csv with its sidecar, an .npz) is read through
    core.playback, so an export in degrees is not taken for radians; else the bake CSV layout."""
    from ..core.motion.bake_csv import read_bake_csv
    from ..core.playback import read_playback
    from ..core.playback.formats import sidecar_path

    if path.suffix.lower() == ".npz" or (path.suffix.lower() == ".csv" and sidecar_path(path).is_file()):
        track = read_playback(path).track
        return (list(track.joint_names), np.arange(track.samples) * track.period_s, track.root_position,
                track.root_quaternion, track.q)
    table = read_bake_csv(path)
    return table.joint_names, table.time, table.root_position, table.root_quaternion, table.q
