"""`batch`: export every clip of a folder or glob, in-process or in parallel worker processes.

A failing clip is reported and the batch goes on; workers are long-lived (a
Blender start costs seconds) and a worker that dies fails only its clip.
"""
from __future__ import annotations

import argparse
import contextlib
import glob
import io
import json
import queue
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import bpy

from ..operators.common import user_message
from .common import COMMAND_ID, INPUT_ERRORS, CommandError, add_source_up, check_output, write_report
from .export import export_args, export_clip, export_settings, playback_options

CLIP_SUFFIXES = (".bvh", ".fbx", ".blend")
# Workers inside bpy-as-a-module: a fresh interpreter enables this same extension from the same
# Blender user folder (BLENDER_USER_RESOURCES is inherited) and runs cli.main on the arguments.
_MODULE_BOOT = ("import importlib, sys\nimport bpy\nimport addon_utils  # after bpy: it sets up the scripts path\n"
                "if addon_utils.enable(sys.argv[1], default_set=True) is None:\n"
                "    sys.exit(f'robot-retarget: error: cannot enable {sys.argv[1]}')\n"
                "sys.exit(importlib.import_module(sys.argv[1] + '.cli').main(sys.argv[2:]))\n")


def worker_command() -> list[str]:
    """How to start one more of this program: Blender's binary with -b -c, or Python + bpy."""
    if not getattr(bpy.app, "module", False) and bpy.app.binary_path:
        return [bpy.app.binary_path, "-b", "-c", COMMAND_ID]
    return [sys.executable, "-c", _MODULE_BOOT, __package__.rpartition(".")[0]]


def batch_inputs(pattern: str) -> list[Path]:
    """Clips in a folder (not recursive) or matching a glob, sorted; .bvh, .fbx and .blend."""
    folder = Path(pattern)
    found = folder.iterdir() if folder.is_dir() else (Path(p) for p in glob.glob(pattern, recursive=True))
    clips = sorted(p.absolute() for p in found if p.is_file() and p.suffix.lower() in CLIP_SUFFIXES)
    if not clips:
        raise CommandError(f"--inputs {pattern}: no clips ({', '.join(CLIP_SUFFIXES)}) found")
    return clips


def _options_argv(args: argparse.Namespace) -> list[str]:
    """The playback options of a batch, as command-line arguments for its clips and workers."""
    argv = ["--robot", str(Path(args.robot).absolute())]
    options = {"--mapping": args.mapping, "--settings": args.settings, "--format": args.format,
               "--rate": args.rate, "--period": args.period, "--units": args.units,
               "--accel-limit": args.acceleration_limit}
    for flag, value in options.items():
        if value is not None:
            value = Path(value).absolute() if flag in ("--mapping", "--settings") else value
            argv += [flag, repr(value) if isinstance(value, float) else str(value)]
    if getattr(args, "source_up", "Y") != "Y":
        argv += ["--source-up", args.source_up]
    return argv + [f"--{f.replace('_', '-')}" for f in ("retime", "allow_violations", "overwrite")
                   if getattr(args, f)]


def _export_argv(args: argparse.Namespace, clip: Path, out: Path) -> list[str]:
    """The `export` arguments for one clip of a batch."""
    return ["--source", str(clip), "--out", str(out), *_options_argv(args)]


def _clip_status(clip: Path, out: Path, started: float, report: dict | None = None,
                 error: str | None = None) -> dict:
    status = {"source": str(clip), "out": str(out), "status": "ok" if error is None else "failed",
              "seconds": round(time.monotonic() - started, 3)}
    if error is not None:
        return dict(status, error=error)
    keys = ("files", "rate_hz", "samples", "duration_s", "violations", "retimed_seconds_added", "warnings")
    return dict(status, **{k: report.get(k) for k in keys})


def _run_in_process(jobs: list[tuple[Path, Path]], args: argparse.Namespace):
    """One clip after another in this Blender, each in a fresh empty scene."""
    for clip, out in jobs:
        started = time.monotonic()
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                bpy.ops.wm.read_homefile(use_empty=True, use_factory_startup=True)
            report, _ = export_clip(export_args(_export_argv(args, clip, out)))
            yield _clip_status(clip, out, started, report)
        except INPUT_ERRORS as exc:
            yield _clip_status(clip, out, started, error=user_message(exc))
        except Exception as exc:  # a bug on one clip must not stop the batch
            yield _clip_status(clip, out, started, error=f"{type(exc).__name__}: {exc}")


_RESULT = "robot-retarget-result: "


def _serve(args: argparse.Namespace) -> int:
    """Worker side of `batch --workers N`: export each clip named on stdin, answer on stdout."""
    for line in sys.stdin:
        job = json.loads(line)
        status = next(_run_in_process([(Path(job["clip"]), Path(job["out"]))], args))
        print(_RESULT + json.dumps(status), flush=True)
    return 0


def _feed_worker(command: list[str], pending: queue.Queue, done: queue.Queue) -> None:
    """Hand clips to one worker process until none are left; a worker that dies is replaced."""
    proc = None
    with tempfile.TemporaryFile("w+") as log:
        while True:
            try:
                clip, out = pending.get_nowait()
            except queue.Empty:
                break
            started = time.monotonic()
            if proc is None:
                proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log,
                                        text=True)
            try:
                proc.stdin.write(json.dumps({"clip": str(clip), "out": str(out)}) + "\n")
                proc.stdin.flush()
                answer = next((a for a in iter(proc.stdout.readline, "") if a.startswith(_RESULT)), None)
            except OSError:
                answer = None
            if answer is not None:
                done.put(json.loads(answer[len(_RESULT):]))
                continue
            log.seek(0)
            last = ([line for line in log.read().splitlines() if line.strip()] or [""])[-1]
            done.put(_clip_status(clip, out, started, error=f"worker process died (exit code {proc.wait()}) {last}"))
            proc = None
        if proc is not None:
            proc.stdin.close()
            proc.wait()


def _run_in_workers(jobs: list[tuple[Path, Path]], args: argparse.Namespace):
    """`args.workers` processes of this program, each taking the next clip when done with one."""
    pending, done = queue.Queue(), queue.Queue()
    for job in jobs:
        pending.put(job)
    command = worker_command() + ["batch", "--inputs", args.inputs, "--out-dir", args.out_dir,
                                  *_options_argv(args), "--serve"]
    for _ in range(min(args.workers, len(jobs))):
        threading.Thread(target=_feed_worker, args=(command, pending, done), daemon=True).start()
    for _ in jobs:
        yield done.get()


class Progress:
    """A bar with an estimate of time left, on stderr (one line per update when not a terminal)."""

    WIDTH = 24

    def __init__(self, total: int, stream=None):
        self.total, self.stream, self.started = total, stream or sys.stderr, time.monotonic()
        self.tty = self.stream.isatty()

    def update(self, done: int, failed: int) -> None:
        elapsed = time.monotonic() - self.started
        filled = self.WIDTH * done // self.total
        text = f"[{'#' * filled}{'.' * (self.WIDTH - filled)}] {done}/{self.total} clips"
        text += (f", {failed} failed" if failed else "") + f", {_clock(elapsed)} elapsed"
        if 0 < done < self.total:
            text += f", ~{_clock(elapsed / done * (self.total - done))} left"
        self.stream.write(f"\r\033[K{text}" if self.tty else text + "\n")
        self.stream.flush()

    def clear(self) -> None:
        if self.tty:
            self.stream.write("\r\033[K")

    def close(self) -> None:
        if self.tty:
            self.stream.write("\n")


def _clock(seconds: float) -> str:
    minutes, secs = divmod(int(round(seconds)), 60)
    return f"{minutes // 60}:{minutes % 60:02d}:{secs:02d}" if minutes >= 60 else f"{minutes}:{secs:02d}"


def _batch_jobs(args: argparse.Namespace, settings) -> list[tuple[Path, Path]]:
    from ..core.chains.mapping import Mapping
    from ..core.playback.formats import FORMATS

    for path, what in ((args.robot, "robot URDF"), (args.mapping, "mapping preset")):
        if not Path(path).is_file():
            raise CommandError(f"{path}: {what} not found")
    Mapping.load(args.mapping)  # a bad preset fails the batch at once, not every clip
    out_dir = Path(args.out_dir).absolute()
    check_output(out_dir / "probe", overwrite=True)  # the folder exists and is writable
    clips = batch_inputs(args.inputs)
    outs = [out_dir / (clip.stem + FORMATS[settings.format]) for clip in clips]
    for i, out in enumerate(outs):
        if outs.index(out) != i:
            raise CommandError(f"{clips[outs.index(out)]} and {clips[i]} would both write {out}")
    if args.workers < 1:
        raise CommandError(f"--workers {args.workers}: expected 1 or more")
    return list(zip(clips, outs))


def _cmd_batch(args: argparse.Namespace) -> int:
    if args.serve:
        return _serve(args)
    settings = export_settings(args)
    jobs = _batch_jobs(args, settings)
    report_path = check_output(Path(args.report).absolute(), settings.overwrite) if args.report else None
    runner = _run_in_process if args.workers == 1 else _run_in_workers
    progress, results, started, failed = Progress(len(jobs)), [], time.monotonic(), 0
    progress.update(0, 0)
    for status in runner(jobs, args):
        results.append(status)
        failed = sum(r["status"] != "ok" for r in results)
        progress.clear()
        name = Path(status["source"]).name
        if status["status"] == "ok":
            print(f"ok      {name} -> {status['out']} ({status['samples']} samples, "
                  f"{len(status['violations'])} violations, {status['seconds']:.1f} s)", flush=True)
        else:
            print(f"FAILED  {name}: {status['error']}", flush=True)
        progress.update(len(results), failed)
    progress.close()
    order = {str(clip): i for i, (clip, _) in enumerate(jobs)}
    results.sort(key=lambda r: order[r["source"]])
    summary = {"robot_file": str(Path(args.robot).absolute()), "mapping_file": str(Path(args.mapping).absolute()),
               "format": settings.format, "rate_hz": settings.rate_hz, "workers": args.workers,
               "clips": results, "succeeded": len(results) - failed, "failed": failed,
               "seconds": round(time.monotonic() - started, 3)}
    write_report(report_path, summary, settings.overwrite)
    print(f"batch: {summary['succeeded']} of {len(jobs)} clips exported, {failed} failed "
          f"({summary['seconds']:.1f} s)" + (f"; wrote {report_path}" if report_path else ""))
    return 1 if failed else 0




def add_parser(sub) -> None:
    """The `batch` subcommand."""
    p = sub.add_parser("batch", help="export every clip of a folder or glob, in parallel processes",
                       description="Bake and export every clip (.bvh, .fbx, .blend) with one mapping preset; "
                                   "a failing clip is reported and the batch goes on; exit 1 if any failed.")
    p.add_argument("--robot", required=True, help="robot description (.urdf)")
    p.add_argument("--mapping", required=True, help="chain mapping preset (.json) saved from the UI")
    p.add_argument("--inputs", required=True, metavar="DIR_OR_GLOB", help="folder of clips, or a glob (quote it: 'clips/*.bvh')")
    playback_options(p)
    p.add_argument("--out-dir", required=True, metavar="DIR", help="folder for the playback files (<clip name>.<ext>)")
    p.add_argument("--workers", type=int, default=1, metavar="N", help="clips exported at the same time (processes)")
    p.add_argument("--report", help="JSON summary report to write")
    add_source_up(p)
    p.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)  # a worker of --workers N
    p.set_defaults(func=_cmd_batch)
