#!/usr/bin/env python3
"""Start-up cost of tools/robot-retarget: `version`, a 10-frame `bake`, and batch overhead per clip.

    .venv/bin/python bench/bench_startup.py [--runs 7] [--clips 8] [--frames 60] [--root CHECKOUT]

Process wall times (fork to exit), median of RUNS after one warm-up run
that rebuilds dist/<zip> and installs it if needed:
  tools/robot-retarget version
  tools/robot-retarget bake --source CLIP10.bvh --robot G1.urdf --out OUT.csv --overwrite
(CLIP10.bvh: the first 10 frames of data/motion/cmu_131_01_walk_m.bvh), and
the launcher's own split of one bake (ROBOT_RETARGET_TIMES=1).
Batch, CLIPS slices of FRAMES frames cut from the walk, median of 3 runs:
  tools/robot-retarget batch --robot G1.urdf --mapping PRESET.json --inputs CLIPS/ --out-dir OUT/ \\
      --format npz --rate 50 --allow-violations --overwrite --workers 1
per-clip overhead = batch wall / CLIPS - the mean bake+export time of a clip
in a warm process (a second process runs the batch's own reset and
export_clip on every clip after one warm-up clip). --allow-violations: some
slices break a velocity limit at 50 Hz, and a failed clip would skip its export.
--root measures another checkout, e.g. the code before a change:
  mkdir /tmp/before && git archive HEAD | tar -x -C /tmp/before
  ln -s $PWD/.venv /tmp/before/.venv && ln -s $PWD/wheels /tmp/before/wheels  # no scipy download
  .venv/bin/python bench/bench_startup.py --root /tmp/before
Not a test: it prints figures, one a line.
"""
from __future__ import annotations

import argparse
import contextlib
import importlib
import io
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WALK = ROOT / "data" / "motion" / "cmu_131_01_walk_m.bvh"
G1 = ROOT / "data" / "robots" / "g1" / "unitree_g1_29dof.urdf"
LIMIT_S = 0.2  # the bound on the batch overhead per clip


def walk_slice(path: Path, start: int, frames: int) -> Path:
    """`frames` frames of the walk from `start`, with the walk's header."""
    lines = WALK.read_text(encoding="utf-8").splitlines(keepends=True)
    first = next(i for i, line in enumerate(lines) if line.startswith("Frame Time")) + 1
    head = [f"Frames: {frames}\n" if line.startswith("Frames:") else line for line in lines[:first]]
    path.write_text("".join(head + lines[first + start:first + start + frames]), encoding="utf-8")
    return path


def write_preset(path: Path) -> Path:
    """The automatic walk-on-G1 mapping, saved as a preset (what the UI's Save Mapping writes)."""
    sys.path.insert(0, str(ROOT))
    from core.model.kinematics import KinematicTree
    from core.model.urdf import parse_urdf
    from core.motion.bvh import load_bvh
    from core.retarget.automap import auto_map

    tree = KinematicTree(parse_urdf(G1))
    return auto_map(load_bvh(WALK).to_source_motion(), tree).save(path, overwrite=True)


def wall(cmd: list, env: dict | None = None) -> tuple[float, subprocess.CompletedProcess]:
    started = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    seconds = time.perf_counter() - started
    if proc.returncode != 0:
        sys.exit(f"bench_startup: {' '.join(map(str, cmd))} failed ({proc.returncode}):\n{proc.stderr}")
    return seconds, proc


def median_wall(cmd: list, runs: int) -> tuple[float, float]:
    """(median, min) process time over `runs`, after one warm-up run."""
    wall(cmd)
    times = [wall(cmd)[0] for _ in range(runs)]
    return statistics.median(times), min(times)


def bench_commands(launcher: Path, tmp: Path, runs: int) -> None:
    clip = walk_slice(tmp / "clip10.bvh", 0, 10)
    med, low = median_wall([launcher, "version"], runs)
    print(f"version: {med:.3f} s median, {low:.3f} s min ({runs} runs)")
    bake = [launcher, "bake", "--source", clip, "--robot", G1, "--out", tmp / "clip10.csv", "--overwrite"]
    med, low = median_wall(bake, runs)
    print(f"bake 10 frames: {med:.3f} s median, {low:.3f} s min ({runs} runs)")
    _, proc = wall(bake, dict(os.environ, ROBOT_RETARGET_TIMES="1"))
    split = [line for line in proc.stderr.splitlines() if line.startswith("robot-retarget: times")]
    print(f"bake 10 frames, {split[0].partition(': ')[2] if split else 'steps: (this launcher does not say)'}")


def bench_batch(root: Path, tmp: Path, clips: int, frames: int) -> None:
    folder, out = tmp / "clips", tmp / "out"
    folder.mkdir()
    out.mkdir()
    for i in range(clips):
        walk_slice(folder / f"walk_{i:02d}.bvh", 100 * i, frames)
    preset = write_preset(tmp / "preset.json")
    cmd = [root / "tools" / "robot-retarget", "batch", "--robot", G1, "--mapping", preset, "--inputs", folder,
           "--out-dir", out, "--format", "npz", "--rate", "50", "--allow-violations", "--overwrite",
           "--workers", "1"]
    walls = [wall(cmd)[0] for _ in range(3)]
    batch_s = statistics.median(walls)
    proc = wall([sys.executable, __file__, "--root", root, "--inside", preset, folder, out])[1]
    inside = json.loads(proc.stdout.strip().splitlines()[-1])  # Blender may print lines of its own
    work_s = statistics.mean(inside["export"])
    print(f"batch --workers 1, {clips} clips x {frames} frames: {batch_s:.3f} s wall (median of 3), "
          f"{batch_s / clips:.3f} s per clip")
    print(f"bake+export of one clip in a warm process: {work_s:.3f} s mean; "
          f"scene reset (read_homefile) {statistics.mean(inside['reset']) * 1000:.1f} ms")
    overhead = batch_s / clips - work_s
    print(f"batch per-clip overhead: {overhead:.3f} s ({'under' if overhead < LIMIT_S else 'OVER'} {LIMIT_S} s)")


def inside(root: Path, preset: Path, folder: Path, out: Path) -> None:
    """In one bpy process (the --root checkout's extension): time the batch's reset and export per clip."""
    sys.path.insert(0, str(root / "tools"))
    import blender_session
    import build_extension

    blender_session.ensure_user_folder(root / "build" / "blender_user")
    import bpy

    ext = blender_session.install_extension(build_extension.zip_path(build_extension.current_platform(),
                                                                     root / "dist", root))
    export = importlib.import_module(ext.__name__ + ".cli.export")
    clips = sorted(folder.glob("*.bvh"))
    times: dict[str, list[float]] = {"reset": [], "export": []}
    for i, clip in enumerate([clips[0], *clips]):  # the first one warms up
        started = time.perf_counter()
        with contextlib.redirect_stdout(io.StringIO()):
            bpy.ops.wm.read_homefile(use_empty=True, use_factory_startup=True)
        reset = time.perf_counter()
        export.export_clip(export.export_args([
            "--source", str(clip), "--out", str(out / f"{clip.stem}.npz"), "--robot", str(G1),
            "--mapping", str(preset), "--format", "npz", "--rate", "50", "--allow-violations", "--overwrite"]))
        if i:
            times["reset"].append(reset - started)
            times["export"].append(time.perf_counter() - reset)
    print(json.dumps(times))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=7, help="timed runs per command (after one warm-up)")
    parser.add_argument("--clips", type=int, default=8)
    parser.add_argument("--frames", type=int, default=60, help="frames per batch clip (120 Hz)")
    parser.add_argument("--root", type=Path, default=ROOT, help="checkout whose tools/robot-retarget to time")
    parser.add_argument("--inside", nargs=3, type=Path, metavar=("PRESET", "CLIPS", "OUT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    root = args.root.resolve()
    if args.inside:
        inside(root, *args.inside)
        return 0
    with tempfile.TemporaryDirectory(prefix="rr_bench_startup_") as tmp:
        bench_commands(root / "tools" / "robot-retarget", Path(tmp), args.runs)
        bench_batch(root, Path(tmp), args.clips, args.frames)
    return 0


if __name__ == "__main__":
    sys.exit(main())
