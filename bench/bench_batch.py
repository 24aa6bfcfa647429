#!/usr/bin/env python3
"""Throughput of `robot-retarget-core batch` over a library of short clips, per engine.

    .venv/bin/python bench/bench_batch.py [--clips 200] [--seconds 5] [--skip-dask]

The library: the bundled walk and hop cut into SECONDS pieces (tests/library_clips.py), CLIPS
files. Each run is the real command in a fresh process, timed from start to exit:
  python -m core.library.cli batch --robot G1.urdf --inputs LIB/ --format npz --rate 50
      --allow-violations --overwrite --out-dir OUT/ --engine E --workers N
(auto-map per clip; --allow-violations: some pieces break a wrist velocity limit at 50 Hz, and
a failed clip would skip its export). Printed: clips/s and frames/s for local 1, local 2 and
dask on a local cluster of 2; the speed-up of 2 workers, next to what the machine allows at that
moment (two independent --workers 1 batches over the two halves, side by side); dask against
local 2; and the per-clip
overhead of local 1: its wall time minus the time its clips spent inside run_clip (bake and
export, as the summary report times each clip), per clip. CPU seconds (the command
and every process it started) show what a run cost apart from what other processes took.
Not a test: it prints figures, one a line.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from library_clips import make_library  # noqa: E402


G1 = ROOT / "data" / "robots" / "g1" / "unitree_g1_29dof.urdf"


def run_batch(library: Path, out: Path, engine: str, workers: int) -> tuple[float, float, dict]:
    """(wall seconds, CPU seconds of the command and all its processes, summary report) of one batch."""
    report = out / "summary.json"
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "core.library.cli", "batch", "--robot", str(G1), "--inputs",
                           str(library), "--format", "npz", "--rate", "50", "--allow-violations", "--overwrite",
                           "--out-dir", str(out), "--engine", engine, "--workers", str(workers),
                           "--report", str(report)], cwd=ROOT, capture_output=True, text=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if proc.returncode != 0:
        raise SystemExit(f"batch --engine {engine} --workers {workers} failed:\n{proc.stderr[-2000:]}")
    return wall, cpu, json.loads(report.read_text(encoding="utf-8"))


def side_by_side(tmp: Path, clips: list[Path]) -> float:
    """Wall seconds of two independent `--workers 1` batches over the two halves, run at once: the
    parallel ceiling of the machine as it is (other processes take cores too)."""
    procs, started = [], time.perf_counter()
    for k, half in enumerate((clips[::2], clips[1::2])):
        folder, out = tmp / f"half_{k}", tmp / f"out_half_{k}"
        folder.mkdir()
        out.mkdir()
        for clip in half:
            shutil.copy(clip, folder / clip.name)
        procs.append(subprocess.Popen([sys.executable, "-m", "core.library.cli", "batch", "--robot", str(G1),
                                       "--inputs", str(folder), "--format", "npz", "--rate", "50",
                                       "--allow-violations", "--out-dir", str(out)], cwd=ROOT,
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    for proc in procs:
        proc.wait()
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clips", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--skip-dask", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench_batch_") as tmp:
        tmp = Path(tmp)
        clips = make_library(tmp / "library", args.clips, args.seconds)
        runs, summaries = {}, {}
        for engine, workers in [("local", 1), ("local", 2)] + ([] if args.skip_dask else [("dask", 2)]):
            out = tmp / f"out_{engine}_{workers}"
            out.mkdir()
            wall, cpu, summary = run_batch(tmp / "library", out, engine, workers)
            frames = sum(c["frames"] for c in summary["clips"])
            runs[(engine, workers)], summaries[(engine, workers)] = wall, summary
            print(f"{engine} --workers {workers}: {args.clips} clips ({frames} frames) in {wall:.1f} s: "
                  f"{args.clips / wall:.2f} clips/s, {frames / wall:.0f} frames/s; CPU {cpu / args.clips:.3f} s "
                  f"per clip, {cpu / wall:.2f} cores busy on average", flush=True)
        ceiling = runs[("local", 1)] / side_by_side(tmp, clips)
        print(f"speed-up of local 2 workers over 1: {runs[('local', 1)] / runs[('local', 2)]:.2f}x; what this "
              f"machine allows now: {ceiling:.2f}x (two --workers 1 batches of half the clips side by side)")
        if not args.skip_dask:
            print(f"dask 2 workers against local 2: {runs[('dask', 2)] / runs[('local', 2)] - 1:+.1%} time")
        inside = sum(c["seconds"] for c in summaries[("local", 1)]["clips"])
        overhead = (runs[("local", 1)] - inside) / args.clips
        print(f"local --workers 1: {inside / args.clips:.3f} s per clip inside run_clip (bake + export), "
              f"per-clip overhead {overhead:.3f} s (start-up, reading clips, progress, summary)")
        print(f"load average at the end (other processes on this machine): {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
