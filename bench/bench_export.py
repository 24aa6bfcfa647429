#!/usr/bin/env python3
"""Benchmark robot playback export: one minute of G1 motion at 500 Hz, and batches.

    .venv/bin/python bench/bench_export.py [--seconds 60] [--rate 500] [--clips 4] [--frames 240] [--no-batch]

Part 1 (core, no Blender): the bundled walk retargeted onto the G1, played
forwards and backwards until it lasts a minute (keys at the clip's 120 Hz),
then timed: resampling at 500 Hz plus the limit checks, retime against an
acceleration limit, and writing every format.
Part 2: `tools/robot-retarget batch` (bake + export) on CLIPS slices of the
walk with --workers 1 and 2, wall clock including Blender's start. Not a
test: it prints figures.
"""
from __future__ import annotations

import argparse
import dataclasses
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")  # one BLAS thread: figures comparable on a shared 2-core machine
import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from core.retarget.automap import auto_map  # noqa: E402
from core.motion.bake_csv import BakeTable  # noqa: E402
from core.motion.bvh import load_bvh  # noqa: E402
from core.model.kinematics import KinematicTree  # noqa: E402
from core.playback import ExportSettings, JointLimits, prepare_playback  # noqa: E402
from core.playback.formats import FORMATS, PlaybackMeta, write_playback  # noqa: E402
from core.retarget.pipeline import retarget  # noqa: E402
from core.model.urdf import parse_urdf  # noqa: E402

WALK = ROOT / "data" / "motion" / "cmu_131_01_walk_m.bvh"
G1 = ROOT / "data" / "robots" / "g1" / "unitree_g1_29dof.urdf"
LAUNCHER = ROOT / "tools" / "robot-retarget"
ACCELERATION_LIMIT = 400.0  # rad/s^2, for the retime figure


def minute_of_walk(tree: KinematicTree, seconds: float) -> BakeTable:
    """The walk on the G1, forwards then backwards (continuous), repeated to `seconds`."""
    motion = load_bvh(WALK).to_source_motion()
    result = retarget(motion, tree, auto_map(motion, tree))
    order = np.concatenate([np.arange(len(result.q)), np.arange(len(result.q) - 2, 0, -1)])
    frames = int(seconds * result.fps) + 1
    index = np.resize(order, frames)
    return BakeTable(result.joint_names, np.arange(frames) / result.fps, result.root_position[index],
                     result.root_quaternion[index], result.q[index])


def timed(label: str, func):
    started = time.perf_counter()
    value = func()
    print(f"  {label:<30} {time.perf_counter() - started:7.2f} s", end="")
    return value


def bench_core(seconds: float, rate: float) -> None:
    tree = KinematicTree(parse_urdf(G1))
    table = minute_of_walk(tree, seconds)
    limits = JointLimits.from_tree(tree)
    print(f"{seconds:g} s of G1 motion: {len(table.time)} keys at 120 Hz -> {rate:g} Hz, {tree.dof} joints")
    settings = ExportSettings.from_rate(rate, allow_violations=True)
    plain = timed("resample + limit checks", lambda: prepare_playback(table, limits, settings))
    print(f"   {plain.track.samples} samples, {len(plain.violations)} violation runs")
    strict = JointLimits.from_tree(tree, ACCELERATION_LIMIT)
    retimed = timed(f"... + retime ({ACCELERATION_LIMIT:g} rad/s^2)",
                    lambda: prepare_playback(table, strict, dataclasses.replace(settings, retime=True)))
    print(f"   +{retimed.retimed_seconds_added:.2f} s, {len(retimed.violations)} violations left")
    meta = PlaybackMeta(robot=tree.robot.name, source=str(WALK), limits=limits, violations=plain.violations)
    with tempfile.TemporaryDirectory(prefix="rr_bench_export_") as folder:
        for fmt, ext in FORMATS.items():
            path = Path(folder) / f"minute{ext}"
            paths = timed(f"write {fmt}", lambda: write_playback(path, plain.track, fmt, meta, overwrite=True))
            print(f"   {sum(p.stat().st_size for p in paths) / 1e6:6.1f} MB")


def walk_slices(folder: Path, count: int, frames: int) -> None:
    lines = WALK.read_text(encoding="utf-8").splitlines(keepends=True)
    first = next(i for i, line in enumerate(lines) if line.startswith("Frame Time")) + 1
    head = [f"Frames: {frames}\n" if line.startswith("Frames:") else line for line in lines[:first]]
    total = len(lines) - first
    for i in range(count):
        start = (i * frames) % max(total - frames, 1)
        (folder / f"walk_{i:02d}.bvh").write_text("".join(head + lines[first + start:first + start + frames]),
                                                  encoding="utf-8")


def bench_batch(count: int, frames: int, rate: float) -> None:
    tree = KinematicTree(parse_urdf(G1))
    motion = load_bvh(WALK).to_source_motion()
    with tempfile.TemporaryDirectory(prefix="rr_bench_batch_") as tmp:
        folder = Path(tmp)
        clips = folder / "clips"
        clips.mkdir()
        walk_slices(clips, count, frames)
        preset = folder / "g1_walk.json"
        auto_map(motion, tree).save(preset)
        subprocess.run([str(LAUNCHER), "version"], cwd=ROOT, capture_output=True)  # build + install first
        print(f"batch of {count} clips x {frames} frames, bake + npz export at {rate:g} Hz with retime:")
        for workers in (1, 2):
            out = folder / f"out_{workers}"
            out.mkdir()
            started = time.perf_counter()
            proc = subprocess.run([str(LAUNCHER), "batch", "--robot", str(G1), "--mapping", str(preset),
                                   "--inputs", str(clips), "--format", "npz", "--rate", str(rate), "--retime",
                                   "--out-dir", str(out), "--workers", str(workers)],
                                  cwd=ROOT, capture_output=True, text=True)
            wall = time.perf_counter() - started
            print(f"  --workers {workers}: {wall:6.1f} s wall ({wall / count:.1f} s per clip), "
                  f"exit {proc.returncode}: {proc.stdout.strip().splitlines()[-1]}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--rate", type=float, default=500.0)
    parser.add_argument("--clips", type=int, default=4)
    parser.add_argument("--frames", type=int, default=240)
    parser.add_argument("--no-batch", action="store_true")
    args = parser.parse_args()
    bench_core(args.seconds, args.rate)
    if not args.no_batch:
        bench_batch(args.clips, args.frames, args.rate)
    return 0


if __name__ == "__main__":
    sys.exit(main())
