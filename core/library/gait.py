"""`gait` and `balance` for a BVH clip or a motion file and a URDF robot: the one code path of the
extension's command line and `robot-retarget-core`, as core.library.clip is for `bake`.

A gait reads its clip with core.motion.bvh (Blender's importer's conventions), maps it as `bake` does
(the preset, else auto-map over the whole clip) and reads `--contacts auto` on the whole clip cut to
`--frames`, so the package's command and the extension's write the same CSV for the same clip.
"""
from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..chains.mapping import Mapping
from ..model.kinematics import KinematicTree
from ..model.transforms import matrix_to_quat, pose_matrices, quat_continuous, quat_to_matrix
from ..motion.bake_csv import BakeTable, read_bake_csv
from .arguments import GAIT_MIN_PERIOD_S, CommandError, check_contacts, control_period, refuse_folder
from .blas import one_blas_thread

if TYPE_CHECKING:  # for the annotations; the functions import what they run (the summaries need no solver)
    from ..balance.gait import GaitResult, GaitSettings
    from .clip import RobotModel

WAISTS = {"auto": None, "rolled": True, "upright": False}  # --waist: GaitSettings.sagittal_waist


def gait_settings(args: argparse.Namespace) -> GaitSettings:
    """GaitSettings from `gait`'s flags, checked before the slow work."""
    from ..balance.gait import GaitSettings
    if args.contacts == "off":
        raise CommandError("--contacts off: a gait needs the clip's steps (auto or a contacts file)")
    check_contacts(args)
    if not (np.isfinite(args.sensitivity) and args.sensitivity > 0):
        raise CommandError(f"--sensitivity {args.sensitivity:g}: must be a positive number")
    if not args.merge_s >= 0:  # nan was taken, as if no --merge-s had been given
        raise CommandError(f"--merge-s {args.merge_s:g}: must be a number, not negative")
    period = control_period(args, GAIT_MIN_PERIOD_S)
    return GaitSettings(period_s=0.005 if period is None else period, sensitivity=args.sensitivity,
                        merge_s=args.merge_s,
                        upper_body=args.upper_body, sagittal_waist=WAISTS[args.waist])


@dataclass
class ClipGait:
    """A clip's gait: the result, the mapping used, its action's name and the first clip frame (0-based)."""

    result: GaitResult
    mapping: Mapping
    name: str
    start: int
    fps: float  # the clip's frame rate: the gait's time 0 is clip frame `start`


def weighed_robot(robot: RobotModel) -> RobotModel:
    """The robot, its masses checked before the clip is read: an error names the URDF file (it named
    the <robot name>, which variants of one robot share)."""
    from ..balance.inertia import BalanceError, MassModel

    try:
        MassModel.build(robot.tree)
    except BalanceError as exc:
        raise CommandError(f"{robot.path}: {exc}") from None
    return robot


def gait_clip_file(source, robot: RobotModel, frames: str | None, contacts: str, up: str,
                   settings: GaitSettings, progress=None) -> ClipGait:
    """Read a BVH clip, map it and walk `frames` (START:END, 0-based) as a gait; `contacts` auto or a
    contacts file (clip_input, as `bake` reads them)."""
    from ..balance.gait import generate_gait
    from .clip import clip_input
    clip = clip_input(source, robot, frames, contacts, up)
    with one_blas_thread():
        result = generate_gait(clip.frames, robot.tree, clip.mapping, clip.contacts, settings, progress)
    result.report["warnings"][:0] = clip.notes
    return ClipGait(result, clip.mapping, f"{robot.name}|{Path(source).stem} gait", clip.start, clip.motion.fps)


def gait_table(result: GaitResult) -> BakeTable:
    """The bake CSV's rows of a gait: one per control cycle, time k x period from 0."""
    return BakeTable(result.joint_names, result.time_s, result.root_position,
                     quat_continuous(matrix_to_quat(result.root_rotation)), result.q)


def gait_summary(report: dict) -> str:
    """The gait's one line: steps, ZMP against its target and the feet, slide."""
    margin = report["min_support_margin_m"]
    lifted = report.get("samples_without_support", 0)  # the worst margin is over the others
    return (f"Gait of {report['steps']} steps at {report['rate_hz']:.0f} Hz: multibody ZMP "
            f"{1000 * report['multibody_zmp_rms_error_m']:.0f} mm RMS from its target, outside the feet on "
            f"{report['zmp_outside_support_pct']:.1f} % of samples (worst margin "
            f"{'none' if margin is None else f'{1000 * margin:.0f} mm'}"
            f"{f' where a foot is down; no foot down on {lifted} samples' if lifted else ''}); stance slide "
            f"{1000 * report['stance_slide_m']:.1f} mm"
            + (f"; generated in {report['cpu_seconds']:.1f} s of CPU" if "cpu_seconds" in report else ""))  # older reports lack it


def balance_file(motion_path: Path, tree: KinematicTree, robot_path: Path, per_frame: bool = False) -> dict:
    """`balance`'s report: the readout of a motion file (bake CSV layout, or an export that says its
    units) on the robot; errors name the file and the joints it lacks."""
    from ..balance.support import balance_readout
    names, time_s, root_position, root_quaternion, joints = read_motion(motion_path)
    missing = [name for name in tree.joint_names if name not in names]
    if missing:
        more = f" and {len(missing) - 5} more" if len(missing) > 5 else ""  # another robot's motion misses many
        raise CommandError(f"{motion_path}: no column for {len(missing)} of the {len(tree.joint_names)} joints of "
                           f"{robot_path}: {', '.join(missing[:5])}{more}")
    if len(time_s) < 2:
        raise CommandError(f"{motion_path}: needs at least two rows to tell the rate")
    q = joints[:, [names.index(name) for name in tree.joint_names]]
    root = pose_matrices(quat_to_matrix(root_quaternion), root_position)
    fps = 1.0 / float(np.median(np.diff(time_s)))
    with one_blas_thread():
        report = balance_readout(tree, q, root, fps, per_frame=per_frame)
    note = degrees_note(tree, q, motion_path)
    if note:
        report["warnings"].insert(0, note)
    driven = {j.name for j in tree.robot.joints if j.movable}  # mimic joints too: exports write them
    unused = [name for name in names if name not in driven]
    if unused:  # another robot's motion (a G1 29-dof bake on a 23-dof URDF) was read without a word
        more = f" and {len(unused) - 5} more" if len(unused) > 5 else ""
        report["warnings"].insert(0, f"{Path(motion_path).absolute()}: {len(unused)} column(s) name no joint of "
                                     f"{Path(robot_path).absolute()}, not read: {', '.join(unused[:5])}{more}")
    report.update(motion_file=str(Path(motion_path).absolute()), robot_file=str(Path(robot_path).absolute()),
                  rate_hz=fps)
    return report


def degrees_note(tree: KinematicTree, q: np.ndarray, path) -> str | None:
    """A motion in degrees read as radians (an export in degrees without its .meta.json sidecar, which
    says the units) puts the joints far past their limits and the robot on its head: say so, when read as
    degrees nearly every sample would be within the limits."""
    revolute = np.array([j.type == "revolute" for j in tree.robot.movable_joints])
    limited = revolute & np.isfinite(tree.lower) & np.isfinite(tree.upper)
    if not limited.any() or len(q) == 0:
        return None
    lower, upper, values = tree.lower[limited], tree.upper[limited], q[:, limited]

    def outside(x: np.ndarray) -> float:
        return float(np.mean((x < lower - 0.1) | (x > upper + 0.1)))

    past, as_degrees = outside(values), outside(np.radians(values))
    if past < 0.2 or as_degrees > 0.05:
        return None
    return (f"{Path(path).absolute()}: {100 * past:.0f} % of the joint values are past the robot's limits, "
            f"{100 * as_degrees:.0f} % if they were degrees: read as radians (an export in degrees needs its "
            ".meta.json sidecar next to it)")


def balance_summary(report: dict) -> str:
    margin = report["min_support_margin_m"]
    return (f"{report['frames']} frames: ZMP outside the support on {report['zmp_outside_support_pct']:.1f} % of "
            f"frames; worst margin {'none' if margin is None else f'{1000 * margin:.0f} mm'}; "
            f"{report['frames_without_support']} frames without a foot on the ground, "
            f"{report['frames_without_ground_force']} where the motion asks the ground for (nearly) no push")


def read_motion(path: Path):
    """(joint names, time (N,) s, root position (N, 3), root quaternion (N, 4), joints (N, n) rad|m).
    A playback file that says its units (an export's .csv with its sidecar, an .npz) is read through
    core.playback, so an export in degrees is not taken for radians; else the bake CSV layout."""
    from ..playback import read_playback
    from ..playback.formats import sidecar_path

    path = Path(path).absolute()
    refuse_folder(path, "--motion", "motion file", "")
    if not path.is_file():
        raise CommandError(f"{path}: motion file not found")
    _refuse_unread(path)
    if path.suffix.lower() == ".npz" or (path.suffix.lower() == ".csv" and sidecar_path(path).is_file()):
        track = read_playback(path).track
        return (list(track.joint_names), np.arange(track.samples) * track.period_s, track.root_position,
                track.root_quaternion, track.q)
    table = read_bake_csv(path)
    return table.joint_names, table.time, table.root_position, table.root_quaternion, table.q


def _refuse_unread(path: Path) -> None:
    """A clip, or a playback format balance does not read, said as such: a pkl read 'not a text (UTF-8)
    file (byte 0)', a ros2-yaml or mujoco-keyframes file 'header must start with time_s,...'."""
    from ..playback.formats import FORMATS

    suffix = path.suffix.lower()
    if suffix in (".bvh", ".fbx", ".blend"):
        raise CommandError(f"{path}: a clip, not a robot motion (--motion takes a bake CSV or an export): "
                           "bake, gait or export it onto the robot first")
    fmt = next((name for name, ext in FORMATS.items() if suffix in (ext, ".yml" if ext == ".yaml" else ext)), None)
    if fmt in ("pkl", "ros2-yaml", "mujoco-keyframes"):
        raise CommandError(f"{path}: a {fmt} playback file: --motion reads a bake CSV, or an export as csv (with "
                           "its .meta.json) or npz")
