#!/usr/bin/env python3
"""Whole-bake speed with planted feet (the default), one core: what a user waits for.

Runs core.retarget.retarget(..., contacts="auto") three times per clip in one process and
prints the median call's frames_per_second (frames over the whole bake) with every stage's
seconds (the first call also reads the robot's meshes for the ground checks, ~0.1 s):
- the bundled walk onto the G1 and the H1,
- a long clip (walk and hop back to back to >= 4,000 frames at 30 Hz),
- scaling: the walk 1x, 4x and 16x its length (time per frame should not grow),
- with --memory N: peak memory (max RSS) of one bake of N frames (the walk repeated), in a
  fresh process (432000 is an hour at 120 Hz).

    .venv/bin/python bench/bench_bake.py [--skip-scaling] [--memory FRAMES]
"""
from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[var] = "1"

sys.path.insert(0, str(Path(__file__).resolve().parent))
import clips  # noqa: E402
from core.model.kinematics import KinematicTree  # noqa: E402
from core.model.urdf import parse_urdf  # noqa: E402
from core.retarget import auto_map, retarget  # noqa: E402


REPEATS = 3


def bake(robot: str, motion, repeats: int | None = None) -> tuple[dict, float]:
    """(report, wall seconds) of the median of `repeats` retarget calls in this process; the robot's
    meshes are read on the first (as in a Blender session or a batch worker, which keep them)."""
    tree = KinematicTree(parse_urdf(clips.ROBOTS[robot]))
    mapping = auto_map(motion, tree)
    runs = []
    for _ in range(repeats or REPEATS):
        started = time.perf_counter()
        report = retarget(motion, tree, mapping, contacts="auto").report
        runs.append((time.perf_counter() - started, report))
    runs.sort(key=lambda run: run[0])
    wall, report = runs[len(runs) // 2]
    return report, wall


def line(name: str, report: dict, wall: float) -> str:
    stages = ", ".join(f"{k} {v:.3f}" for k, v in report["stage_seconds"].items())
    return (f"{name:<28} {report['frames']:>6} frames  {wall:6.2f} s  {report['frames_per_second']:6.0f} frames/s"
            f"  ({stages})  slide {report['foot_slide_pct']:.0f} %, kept {report['contact_preserved_pct']:.0f} %")


def memory(frames: int) -> None:
    """Bake `frames` frames of the repeated walk onto the G1 in this process; print peak RSS."""
    walk = clips.load(clips.WALK)
    motion = clips.back_to_back([walk], frames, f"walk to {frames}")
    report, wall = bake("g1", motion, repeats=1)
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(line(f"walk repeated ({frames})", report, wall))
    print(f"peak memory {peak_mb:.0f} MB for {report['frames']} frames")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skip-scaling", action="store_true")
    parser.add_argument("--memory", type=int, metavar="FRAMES", help="peak memory of one bake this long")
    parser.add_argument("--in-process-memory", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.in_process_memory:
        memory(args.in_process_memory)
        return
    walk, hop = clips.load(clips.WALK), clips.load(clips.HOP)
    for robot in ("g1", "h1"):
        for name, motion in (("walk", walk), ("hop", hop)):
            print(line(f"{name} onto {robot}", *bake(robot, motion)), flush=True)
    print(line("walk+hop 30 Hz onto g1", *bake("g1", clips.long_clip())), flush=True)
    if not args.skip_scaling:
        per_frame = {}
        for factor in (1, 4, 16):
            report, wall = bake("g1", clips.walk_times(factor), repeats=1 if factor > 4 else None)
            per_frame[factor] = wall / report["frames"]
            print(line(f"walk x{factor} onto g1", report, wall), flush=True)
        print("time per frame relative to 1x: " + ", ".join(f"{k}x {v / per_frame[1]:.2f}" for k, v in per_frame.items()))
    if args.memory:
        subprocess.run([sys.executable, __file__, "--in-process-memory", str(args.memory)], check=True)


if __name__ == "__main__":
    main()
