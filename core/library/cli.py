"""`robot-retarget-core`: bake, export, batch, gait and balance for BVH clips and URDF robots, without Blender.

The flags are the extension's (core.library.arguments), the files come from the same functions
(core.library.clip), so a pipeline can switch between `blender -b -c robot_retarget ...` and this
command and get the same bytes. .fbx and .blend inputs need Blender: such a clip fails with a
line saying so.

Each subcommand imports the modules it runs inside its functions: `--help` imports no scipy, and a
bake none of the gait's or the batch engines' modules (a pipeline pays the imports per command).
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
import tomllib
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterator

from ..motion.bake_csv import write_bake_csv
from ..playback.formats import FORMATS, output_paths
from ..playback.sampling import JointLimits, PlaybackError
from .arguments import (CommandError, add_bake_parser, add_balance_parser, add_batch_parser, add_export_parser,
                        add_gait_parser, check_contacts, check_output, check_outputs, command_inputs, export_settings,
                        print_warnings, run_command, self_collision_settings, write_report)

if TYPE_CHECKING:  # for the annotations
    from .batch import ClipJob, Summary
    from .clip import RobotModel
    from .gait import ClipGait

PROG = "robot-retarget-core"
GENERATOR = "robot_retarget"
USER_ERRORS = (ValueError, KeyError, OSError)


def package_version() -> str:
    """The extension's manifest version next to this tree, else the installed package's."""
    manifest = Path(__file__).resolve().parents[2] / "blender_manifest.toml"
    try:
        with open(manifest, "rb") as fh:
            return str(tomllib.load(fh)["version"])
    except (OSError, KeyError, tomllib.TOMLDecodeError):
        pass
    from importlib import metadata  # here: it imports the email package (~25 ms a command)

    try:
        return metadata.version(PROG)
    except metadata.PackageNotFoundError:
        return "?"


def bake_outputs(args: argparse.Namespace) -> tuple[Path, Path | None]:
    """`bake`'s checks before the slow work: (CSV path, report path or None)."""
    out, report_path = check_outputs([args.out, args.report], args.overwrite, command_inputs(args))
    check_contacts(args)
    return out, report_path


def bake_files(args: argparse.Namespace):
    """`bake` up to the files: checks the outputs first, bakes. (bake, robot, out, report path)."""
    from .clip import bake_clip_file, load_robot
    out, report_path = bake_outputs(args)
    robot = load_robot(args.robot, args.mapping, self_collision_settings(args))
    bake = bake_clip_file(args.source, robot, args.frames, args.contacts, args.source_up)
    return bake, robot, out, report_path


def write_bake_files(args: argparse.Namespace, bake, robot, out: Path, report_path: Path | None,
                     action: str | None = None) -> int:
    """The bake CSV and REPORT.json; the lines on stdout."""
    from ..retarget.summary import report_summary
    from .clip import bake_report
    write_bake_csv(out, bake.table, overwrite=args.overwrite)
    report = bake_report(bake, args.source, robot, out)
    if action is not None:
        report["action"] = action
    write_report(report_path, report, args.overwrite)
    print_warnings(bake.result.report.get("warnings", []))
    print(report_summary(bake.result.report))
    print(f"wrote {out}" + (f" and {report_path}" if report_path else ""))
    return 0


def run_bake(args: argparse.Namespace) -> int:
    return write_bake_files(args, *bake_files(args))


def export_outputs(args: argparse.Namespace):
    """`export`'s checks before the slow work: (settings, playback file path)."""
    settings = export_settings(args)
    source = Path(args.source).absolute()
    if args.frame_rate in ("scene", "bake") and source.suffix.lower() != ".blend":  # a no-op would mislead
        raise CommandError(f"--frame-rate {args.frame_rate}: {source} is a clip, timed by its own frame time "
                           "(a BVH's Frame Time); --frame-rate chooses the rate of a .blend's baked action")
    if source.suffix.lower() == ".blend" and self_collision_settings(args):
        raise CommandError(f"--avoid-self-collision / --collision-margin: {source} holds a baked action; these "
                           "flags choose how a clip is baked (bake it again from its clip)")
    out = Path(args.out).absolute()
    wanted = FORMATS[settings.format]
    if out.suffix.lower() not in (wanted, ".yml" if wanted == ".yaml" else wanted):
        raise CommandError(f"{out}: {settings.format} playback files are named *{wanted} (readers, ours "
                           "included, tell the format by its extension)")
    check_outputs(output_paths(out, settings.format) + [args.report], settings.overwrite, command_inputs(args))
    return settings, out


def export_files(args: argparse.Namespace, generator: str) -> tuple[dict, str]:
    """`export` of a BVH clip: checks, bake (feet planted as `bake` plants them), write."""
    from .clip import bake_clip_file, export_bake, load_robot
    settings, out = export_outputs(args)
    if not args.robot:
        raise CommandError(f"{Path(args.source).absolute()}: --robot ROBOT.urdf is required to bake a clip")
    check_contacts(args)
    robot = load_robot(args.robot, args.mapping, self_collision_settings(args))
    if settings.joint_acceleration_limits:  # a joint the robot lacks fails before the bake, naming the file
        try:
            JointLimits.from_tree(robot.tree, settings.acceleration_limit, settings.joint_acceleration_limits)
        except PlaybackError as exc:
            raise CommandError(f"{Path(args.settings).absolute()}: {exc}") from None
    bake = bake_clip_file(args.source, robot, args.frames, args.contacts, args.source_up)
    return export_bake(bake, robot, out, settings, args.source, generator)


def finish_export(args: argparse.Namespace, report: dict, summary: str) -> int:
    report_path = Path(args.report).absolute() if args.report else None
    write_report(report_path, report, export_settings(args).overwrite)
    print_warnings(report.get("warnings", []))
    print(summary)
    print(f"wrote {' and '.join(report['files'] + ([str(report_path)] if report_path else []))}")
    return 0


def run_export(args: argparse.Namespace) -> int:
    return finish_export(args, *export_files(args, f"{GENERATOR} {package_version()}"))


# ------------------------------------------------------------ gait, balance ---

def gait_files(args: argparse.Namespace) -> tuple[ClipGait, RobotModel, Path, Path | None]:
    """`gait` up to the files: checks the flags and outputs first, then walks the clip."""
    from .clip import load_robot
    from .gait import gait_clip_file, gait_settings, weighed_robot
    out, report_path = check_outputs([args.out, args.report], args.overwrite, command_inputs(args))
    settings = gait_settings(args)
    robot = weighed_robot(load_robot(args.robot, args.mapping, self_collision_settings(args)))
    gait = gait_clip_file(args.source, robot, args.frames, args.contacts, args.source_up, settings)
    return gait, robot, out, report_path


def write_gait_files(args: argparse.Namespace, gait: ClipGait, robot_path: Path, out: Path,
                     report_path: Path | None, action: str | None = None) -> int:
    """The gait's CSV (one row per control cycle) and REPORT.json; the lines on stdout."""
    from .gait import gait_summary, gait_table
    result = gait.result
    write_bake_csv(out, gait_table(result), overwrite=args.overwrite)
    report = dict(result.report, source_file=str(Path(args.source).absolute()),
                  robot_file=str(Path(robot_path).absolute()), out=str(out), action=action or gait.name)
    write_report(report_path, report, args.overwrite)
    print_warnings(result.report.get("warnings", []))
    print(gait_summary(result.report))
    print(f"wrote {out}" + (f" and {report_path}" if report_path else ""))
    return 0


def run_gait(args: argparse.Namespace) -> int:
    gait, robot, out, report_path = gait_files(args)
    return write_gait_files(args, gait, robot.path, out, report_path)


def run_balance(args: argparse.Namespace) -> int:
    """The balance readout of a motion file on a robot."""
    from .clip import load_robot
    from .gait import balance_file, balance_summary, weighed_robot
    report_path, = check_outputs([args.report], args.overwrite, command_inputs(args))
    robot = weighed_robot(load_robot(args.robot))
    report = balance_file(Path(args.motion), robot.tree, robot.path, args.per_frame)
    write_report(report_path, report, args.overwrite)
    print_warnings(report["warnings"])
    print(balance_summary(report))
    if report_path:
        print(f"wrote {report_path}")
    return 0


# ------------------------------------------------------------------ batch ---

def _needs_blender(jobs: list[ClipJob]) -> Iterator[dict]:
    from .batch import clip_status
    for job in jobs:
        yield clip_status(job, time.monotonic(), error=f"{job.source}: {Path(job.source).suffix.lower()} files need Blender: "
                                          "batch them with the extension's command (blender -b -c robot_retarget batch)")


def run_batch(args: argparse.Namespace, generator: str | None = None,
              blender_runner: Callable[[list[ClipJob]], Iterator[dict]] | None = None) -> int:
    """Every clip onto every robot; BVH clips on the chosen engine, the rest through `blender_runner`."""
    from .batch import BatchOptions, Summary, batch_inputs, batch_robots, plan_batch, remove_leftovers
    from .clip import NEEDS_BLENDER
    from .engines import run_dask, run_local
    settings = export_settings(args)
    if args.workers < 1:
        raise CommandError(f"--workers {args.workers}: expected 1 or more")
    if args.scheduler and args.engine != "dask":
        raise CommandError("--scheduler is the address of a Dask scheduler: use it with --engine dask")
    robots = batch_robots(args.robot, args.mapping, self_collision_settings(args))
    jobs = plan_batch(batch_inputs(args.inputs), robots, Path(args.out_dir), settings.format)
    report_path = _summary_path(Path(args.report).absolute(), settings.overwrite) if args.report else None
    summary = Summary(robots, settings, args.engine, args.workers)
    todo = batch_todo(jobs, settings.format, settings.overwrite, summary)
    options = BatchOptions(settings, args.source_up, generator or f"{GENERATOR} {package_version()}",
                           contacts=args.contacts)
    core_jobs = [j for j in todo if Path(j.source).suffix.lower() not in NEEDS_BLENDER]
    blender_jobs = [j for j in todo if Path(j.source).suffix.lower() in NEEDS_BLENDER]
    if args.engine == "dask":
        stream = run_dask(core_jobs, options, args.workers, args.scheduler) if core_jobs else iter(())
    else:
        stream = run_local(core_jobs, options, args.workers)
    _report_progress(summary, stream, len(todo), (blender_runner or _needs_blender)(blender_jobs))
    remove_leftovers(todo, settings.format)
    result = summary.to_dict(jobs)
    write_report(report_path, result, True)  # _summary_path said it may go there
    print(f"batch: {result['succeeded']} of {len(jobs)} clips exported, {result['failed']} failed"
          + (f", {result['skipped']} skipped (complete)" if result["skipped"] else "")
          + f" ({result['seconds']:.1f} s)" + (f"; wrote {report_path}" if report_path else ""))
    return 1 if result["failed"] else 0


def batch_todo(jobs: list[ClipJob], fmt: str, overwrite: bool, summary: Summary) -> list[ClipJob]:
    """The jobs to run; complete outputs are skipped (into the summary) unless `overwrite`. Every
    job run may replace its outputs: they were missing or did not read back when the batch began,
    so what is there when it writes is this batch's own (a worker killed after writing a clip's
    file, whose clip an engine retries, left it: the retry failed with 'file exists')."""
    from .batch import complete_outputs, skipped_status, status_line
    todo = []
    for job in jobs:
        if not overwrite and complete_outputs(job.out, fmt):
            summary.clips.append(skipped_status(job))
            print(status_line(summary.clips[-1]), flush=True)
        else:
            todo.append(dataclasses.replace(job, overwrite=True))
    return todo


def _summary_path(path: Path, overwrite: bool) -> Path:
    """Where the batch's summary goes. Re-running the same command resumes the batch (complete
    clips are skipped), and its summary lists every clip again, the skipped ones too: so the
    summary of an earlier run of a batch is replaced. Any other file there is kept unless
    --overwrite (which also redoes every clip)."""
    return check_output(path, overwrite or _is_batch_summary(path))


def _is_batch_summary(path: Path) -> bool:
    try:
        old = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return False
    return isinstance(old, dict) and {"clips", "succeeded", "failed", "skipped", "engine"} <= set(old)


def _report_progress(summary: Summary, stream: Iterator[dict], total: int, more: Iterator[dict]) -> None:
    from .batch import Progress, status_line
    progress, done, failed = Progress(total), 0, 0
    progress.update(0, 0)
    for source in (stream, more):
        for status in source:
            summary.clips.append(status)
            done += 1
            failed += status["status"] != "ok"
            progress.clear()
            print(status_line(status), flush=True)
            progress.update(done, failed)
    progress.close()


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=PROG, description="Retarget BVH clips onto URDF robots, export "
                                                            "playback files, walk balanced gaits and read a "
                                                            "motion's balance, without Blender.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    add_bake_parser(sub, run_bake)
    add_export_parser(sub, run_export)
    add_batch_parser(sub, run_batch)
    add_gait_parser(sub, run_gait)
    add_balance_parser(sub, run_balance)
    parser.subcommands = sub.choices  # {name: parser}: parse_arguments refuses a flag with its subcommand's usage
    return parser


def main(argv: list[str] | None = None) -> int:
    return run_command(build_parser(), sys.argv[1:] if argv is None else argv, PROG, USER_ERRORS, _message)


def _message(exc: BaseException) -> str:
    """A KeyError's bare argument (a missing bone or joint), not its repr."""
    return str(exc.args[0]) if isinstance(exc, KeyError) and exc.args else str(exc)


if __name__ == "__main__":
    sys.exit(main())
