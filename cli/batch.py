"""`batch`: export every clip of a folder or glob onto one or more robots.

BVH clips never start Blender: core.library.cli.run_batch bakes and exports them on its engine
(worker processes importing core only, or a Dask cluster), exactly as `robot-retarget-core batch`
does. FBX clips and .blend scenes need Blender: they run in this Blender (--workers 1) or in
Blender worker processes (`batch ... --serve`), each taking the next clip when done with one.
"""
from __future__ import annotations

import argparse
import atexit
import contextlib
import importlib
import io
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

import bpy

from ..core.library.arguments import add_batch_parser
from ..operators.common import extension_version, user_message
from .common import COMMAND_ID, INPUT_ERRORS
from .export import export_args, export_clip

STANDALONE = "robot_retarget_core"  # core's import name in worker processes (as when pip-installed)
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


def standalone_cli():
    """This extension's core imported as `robot_retarget_core` (its own tree, linked from a temporary
    folder put on sys.path): worker processes and Dask workers import it by that name without
    importing the extension, which would start Blender."""
    name = f"{STANDALONE}.library.cli"
    if name not in sys.modules:
        folder = Path(tempfile.mkdtemp(prefix="rr_core_"))
        (folder / STANDALONE).symlink_to(Path(__file__).resolve().parents[1] / "core", target_is_directory=True)
        atexit.register(shutil.rmtree, folder, True)
        sys.path.insert(0, str(folder))
        importlib.invalidate_caches()
    return importlib.import_module(name)


def _playback_argv(args: argparse.Namespace) -> list[str]:
    """The batch's playback and contacts options as `export` (and Blender worker) arguments."""
    argv = []
    options = {"--settings": args.settings, "--format": args.format, "--rate": args.rate, "--period": args.period,
               "--units": args.units, "--accel-limit": args.acceleration_limit}
    for flag, value in options.items():
        if value is not None:
            value = Path(value).absolute() if flag == "--settings" else value
            argv += [flag, repr(value) if isinstance(value, float) else str(value)]
    if getattr(args, "source_up", "Y") != "Y":
        argv += ["--source-up", args.source_up]
    argv += ["--contacts", getattr(args, "contacts", "auto")]
    return argv + [f"--{f.replace('_', '-')}" for f in ("retime", "allow_violations", "overwrite", "no_free_joint")
                   if getattr(args, f, False)]


def _export_argv(args: argparse.Namespace, job) -> list[str]:
    """The `export` arguments for one clip of a batch in Blender."""
    argv = ["--source", job.source, "--out", job.out, "--robot", job.robot.urdf]
    argv += ["--mapping", job.robot.mapping] if job.robot.mapping else []
    baked = Path(job.source).suffix.lower() == ".blend"  # its action is baked: export refuses how-to-bake flags
    if job.robot.avoid_self_collision is not None and not baked:
        argv += ["--avoid-self-collision" if job.robot.avoid_self_collision else "--no-avoid-self-collision"]
    if job.robot.collision_margin is not None and not baked:
        argv += ["--collision-margin", repr(job.robot.collision_margin)]
    argv += _playback_argv(args)
    if getattr(args, "frame_rate", None) and Path(job.source).suffix.lower() == ".blend":
        argv += ["--frame-rate", args.frame_rate]  # a .blend's only: export refuses it with a clip
    return argv + (["--overwrite"] if job.overwrite and not args.overwrite else [])


def _run_in_blender(jobs, args: argparse.Namespace):
    """One clip after another in this Blender, each in a fresh empty scene."""
    from ..core.library.batch import clip_status
    for job in jobs:
        started = time.monotonic()
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                bpy.ops.wm.read_homefile(use_empty=True, use_factory_startup=True)
            report, _ = export_clip(export_args(_export_argv(args, job)))
            mapping = None if job.robot.mapping else report.get("mapping")
            yield clip_status(job, started, report, mapping=mapping)
        except INPUT_ERRORS as exc:
            yield clip_status(job, started, error=user_message(exc))
        except Exception as exc:  # a bug on one clip must not stop the batch
            yield clip_status(job, started, error=f"{type(exc).__name__}: {exc}")


def _serve(args: argparse.Namespace) -> int:
    """A Blender worker of `batch --workers N`: export each clip named on stdin, answer on stdout."""
    from ..core.library.engines import RESULT, job_from_message
    for line in sys.stdin:
        status = next(_run_in_blender([job_from_message(json.loads(line))], args))
        print(RESULT + json.dumps(status), flush=True)
    return 0


def _blender_runner(args: argparse.Namespace):
    """How the clips that need Blender run: here (--workers 1) or in Blender worker processes."""
    from ..core.library.batch import clip_status
    from ..core.library.engines import job_message, run_worker_pool

    def run(jobs):
        if not jobs:
            return
        if args.workers == 1:
            yield from _run_in_blender(jobs, args)
            return
        robots = [a for urdf in args.robot for a in ("--robot", str(Path(urdf).absolute()))]
        command = worker_command() + ["batch", "--inputs", args.inputs, "--out-dir", args.out_dir, *robots,
                                      *_playback_argv(args), "--serve"]
        started = time.monotonic()
        yield from run_worker_pool(command, [job_message(j) for j in jobs], args.workers,
                                   lambda i, why: clip_status(jobs[i], started, error=why))
    return run


def _cmd_batch(args: argparse.Namespace) -> int:
    if args.serve:
        return _serve(args)
    return standalone_cli().run_batch(args, generator=f"robot_retarget {extension_version()}",
                                      blender_runner=_blender_runner(args))


def add_parser(sub) -> None:
    """The `batch` subcommand (flags shared with robot-retarget-core, core.library.arguments)."""
    add_batch_parser(sub, _cmd_batch)
