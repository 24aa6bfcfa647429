"""`robot-retarget splice`: retarget several clips onto one robot and splice them in order.

Each clip is imported, auto-mapped (or mapped by --mapping) and baked exactly
as `bake` does it; core.splice then joins neighbouring clips at their best
posture pairs with generated transitions. The result is written in the bake
CSV layout, so every tool that reads a bake reads a splice; the report lists
each join (`joins`) with its times, angle difference and transition.
"""
from __future__ import annotations

import argparse
import math
from pathlib import Path

from ..core.splice.detect import DETECTORS, MAIN_END, MAIN_START
from ..core.splice.settings import MAX_JOINT_DEFAULT_DEG, PER_JOINT_DEFAULT_DEG, POLICIES, THRESHOLD_RANGE
from .common import CommandError, add_source_up


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
    p.add_argument("--main", action="append", metavar="A_START:A_END",
                   help="main movement of a clip in seconds of that clip, as markers main_start/main_end "
                        "would give it; repeat once per --source, in the same order; leave a side empty "
                        "(e.g. '1.2:') or write 'auto' to detect it")
    p.add_argument("--fps", type=float, help="frame rate of the result; clips at other rates are resampled "
                                             "(default: the first clip's)")
    _add_join_arguments(p)
    _add_detect_arguments(p)
    _add_transition_arguments(p)
    p.add_argument("--pick", action="append", type=int, metavar="N",
                   help="use candidate pair N (1 = best, see the report's candidates) for the next join; "
                        "repeat once per join")
    p.add_argument("--out", required=True, help="CSV file to write (bake layout)")
    p.add_argument("--report", help="JSON report to write (with `joins`)")
    p.add_argument("--overwrite", action="store_true", help="replace existing output files")
    add_source_up(p)
    p.set_defaults(func=run)


def _range(criterion: str) -> str:
    low, high = THRESHOLD_RANGE[criterion]
    return f"{low:g}-{high:g}"


def _add_join_arguments(p: argparse.ArgumentParser) -> None:
    """Criterion and threshold, the optional conditions and the policy."""
    p.add_argument("--criterion", choices=["sum", "mean", "largest", "integrated", "max_joint"], default="sum",
                   help="posture difference: sum over joints (default), mean over joints, or the largest joint")
    p.add_argument("--threshold-deg", type=float,
                   help=f"sum criterion: largest summed difference, degrees ({_range('integrated')}; default 15, "
                        f"or {PER_JOINT_DEFAULT_DEG:g} per joint beyond 6 joints)")
    p.add_argument("--mean-deg", type=float, default=PER_JOINT_DEFAULT_DEG,
                   help=f"mean criterion threshold, degrees ({_range('mean')}, default {PER_JOINT_DEFAULT_DEG:g})")
    p.add_argument("--max-joint-deg", type=float, default=MAX_JOINT_DEFAULT_DEG,
                   help=f"largest-joint criterion threshold, degrees ({_range('max_joint')}, "
                        f"default {MAX_JOINT_DEFAULT_DEG:g})")
    p.add_argument("--direction", action="store_true",
                   help="every joint moving in both postures must drive the same way (when no pair does: the "
                        "shortest preparation within the threshold)")
    p.add_argument("--speed-match", action="store_true", help="drive speeds must be within --speed-tolerance")
    p.add_argument("--speed-measure", choices=["integrated", "largest"], default="integrated",
                   help="drive speed: summed over joints (default) or of the joint that changes most")
    p.add_argument("--speed-tolerance", type=float, default=0.3, help="relative drive-speed tolerance (0.3)")
    p.add_argument("--policy", choices=list(POLICIES), default="shortest",
                   help="among matching pairs: least preparatory time kept (default), the most similar, "
                        "or the closest drive speed")
    p.add_argument("--interval-s", type=float, default=0.2,
                   help="drive direction and speed from the change over this interval, s (0.2)")
    p.add_argument("--still-deg-s", type=float, default=2.0, help="joints slower than this are still, deg/s (2)")


def _add_detect_arguments(p: argparse.ArgumentParser) -> None:
    """The main-movement detector and its settings (used where --main leaves a boundary open)."""
    p.add_argument("--detector", choices=list(DETECTORS), default="reversal",
                   help="main movement from drive reversals or stops (default), accumulated angle change, "
                        "or fixed-duration preparatory windows")
    p.add_argument("--margin-s", type=float, default=0.2, help="reversal rule's margin, s (0.2)")
    p.add_argument("--change-percent", type=float, default=30.0, help="accumulated: step change, %% (5-50, 30)")
    p.add_argument("--average-percent", type=float, default=10.0,
                   help="accumulated: confirmation on the average, %% (10)")
    p.add_argument("--no-confirm", action="store_true", help="accumulated: without the confirmation")
    p.add_argument("--accumulated-margin", action="store_true",
                   help="accumulated: move the boundaries out by --margin-s as the reversal rule does")
    p.add_argument("--window-s", type=float, default=0.5, help="fixed: preparatory window length, s (0.5)")


def _add_transition_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--speed-source", choices=["a", "b", "both"], default="both",
                   help="whose main movement sets the transition speed (both)")
    p.add_argument("--speed-statistic", choices=["mean", "median", "mode"], default="median",
                   help="statistic of the main movements' joint speeds (median)")
    p.add_argument("--speed-rad-s", type=float, help="a given transition joint speed, rad/s (overrides the statistic)")
    p.add_argument("--linear", action="store_true",
                   help="straight interpolation at the representative speed instead of the velocity-blended ease")


def settings_from_args(args: argparse.Namespace):
    """SpliceSettings from the flags, checked before any slow work."""
    from ..core.splice import DetectSettings, SpliceError, SpliceSettings

    if args.threshold_deg is not None and args.criterion not in ("sum", "integrated"):
        raise CommandError(f"--threshold-deg is the sum criterion's threshold; with --criterion {args.criterion} "
                           f"give --{'mean' if args.criterion == 'mean' else 'max-joint'}-deg")

    detect = DetectSettings(method=args.detector, margin_s=args.margin_s, interval_s=args.interval_s,
                            change_percent=args.change_percent, average_percent=args.average_percent,
                            confirm=not args.no_confirm, accumulated_margin=args.accumulated_margin,
                            window_s=args.window_s, still_deg_s=args.still_deg_s)
    settings = SpliceSettings(
        threshold_deg=args.threshold_deg, criterion=args.criterion, mean_deg=args.mean_deg,
        max_joint_deg=args.max_joint_deg, policy=args.policy, match_direction=args.direction,
        match_speed=args.speed_match, speed_measure={"largest": "largest_joint"}.get(args.speed_measure,
                                                                                    args.speed_measure),
        speed_tolerance=args.speed_tolerance, interval_s=args.interval_s, still_deg_s=args.still_deg_s,
        speed_source=args.speed_source, speed_statistic=args.speed_statistic, speed_rad_s=args.speed_rad_s,
        transition="linear" if args.linear else "eased", fps=args.fps, detect=detect)
    try:
        settings.validate()
    except SpliceError as exc:  # "fps must be positive, got 0.0": the setting is the flag --fps
        name, _, rest = str(exc).partition(" ")
        raise CommandError(f"--{name.replace('_', '-')} {rest}" if hasattr(args, name) else str(exc)) from None
    return settings


def parse_main(text: str, source: str) -> tuple[float | None, float | None]:
    """'A_START:A_END' seconds (a side left empty or 'auto' is detected; 'auto' alone detects both)."""
    if text.strip().lower() == "auto":
        return None, None
    try:
        start_text, end_text = text.split(":")
        times = [float(t) if t.strip() and t.strip().lower() != "auto" else None for t in (start_text, end_text)]
    except ValueError:
        raise CommandError(f"--main {text!r} for {source}: expected A_START:A_END in seconds, e.g. 0.5:2.0") \
            from None
    if any(t is not None and not (math.isfinite(t) and t >= 0) for t in times):
        raise CommandError(f"--main {text!r} for {source}: times must be seconds >= 0")
    if None not in times and times[0] >= times[1]:  # 0:0 cut the clip to its first instant
        raise CommandError(f"--main {text!r} for {source}: A_END must come after A_START")
    return times[0], times[1]


def _check_counts(args: argparse.Namespace) -> list[tuple[float | None, float | None]]:
    if len(args.source) < 2:
        raise CommandError(f"splice needs at least two --source clips, got {len(args.source)}")
    if args.main is not None and len(args.main) != len(args.source):
        raise CommandError(f"{len(args.main)} --main for {len(args.source)} --source clips: give one per clip "
                           "('auto' to detect one)")
    if args.pick is not None and (len(args.pick) > len(args.source) - 1 or min(args.pick) < 1):
        raise CommandError(f"--pick {args.pick}: one candidate number (1 = best) per join, "
                           f"{len(args.source) - 1} join(s)")
    return [parse_main(t, s) for t, s in zip(args.main, args.source)] if args.main else []


def _main_markers(clip, times: tuple[float | None, float | None], source: str) -> dict[str, float]:
    """Marker frames of the clip from --main seconds; a time past the clip's end is an error."""
    duration = (clip.frames - 1) / clip.fps
    markers = {}
    for name, t in zip((MAIN_START, MAIN_END), times):
        if t is None:
            continue
        if t > duration + 0.5 / clip.fps:
            raise CommandError(f"--main for {source}: {name} {t:g} s is past the clip's end ({duration:.3f} s)")
        markers[name] = t * clip.fps
    return markers


def _bake_clips(args: argparse.Namespace, robot) -> list:
    """Import and bake every source as `bake` would; returns core clips named after the files."""
    import bpy

    from ..core.chains.mapping import Mapping
    from ..core.splice import Clip
    from ..operators.common import action_frame_range, auto_map_objects, tree_from_rig
    from ..operators.retarget import bake_action
    from .common import import_clip, print_warnings

    preset = Mapping.load(args.mapping) if args.mapping else None
    clips, names = [], set()
    for number, text in enumerate(args.source, start=1):
        path = Path(text)
        source = import_clip(path, args.source_up)
        if preset is not None:  # a preset for another skeleton or robot fails naming its file, as in `bake`
            preset.check_names(str(Path(args.mapping).absolute()), bones=[b.name for b in source.data.bones],
                               source=source.name, links=list(tree_from_rig(robot).link_names), robot=robot.name)
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
    from ..core.splice import splice
    from ..operators.common import tree_from_rig
    from ..operators.splice import join_summary
    from .common import check_outputs, load_robot, print_warnings, write_report

    out, report_path = check_outputs([args.out, args.report], args.overwrite)
    mains = _check_counts(args)
    settings = settings_from_args(args)  # before the slow work
    robot_path = Path(args.robot)
    robot = load_robot(args.robot)
    clips = _bake_clips(args, robot)
    for clip, times, source in zip(clips, mains, args.source):
        clip.markers = _main_markers(clip, times, source)
    tree = tree_from_rig(robot)
    picks = [n - 1 for n in args.pick or []]
    result = splice(clips, settings, tree.joint_names, tree.lower, tree.upper, tree.velocity, picks)
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
