#!/usr/bin/env python3
"""Self-collision avoidance's CPU against an earlier revision's, in one process.

The earlier revision's `core` (git archive REV) is imported as a second package, `core_base`, so
both codes bake in the same spells of load: per robot and clip, avoidance off (this code), on (REV)
and on (this code) interleaved, the order reversed every round, the least CPU time of `--repeats`
rounds after one warm-up, one core. On a machine shared with other work a single call spreads by
tens of per cent and two processes see different load; compare the ratios printed here.

    .venv/bin/python bench/bench_collision_ab.py [--base REV (HEAD~1)] [--repeats 3] [--robots g1,h1]
"""
from __future__ import annotations

import argparse
import importlib
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[var] = "1"

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(ROOT))
import clips  # noqa: E402


def _codes(base: str, folder: Path) -> dict:
    """{"old": (retarget module, collision module, KinematicTree, parse_urdf) of REV, "new": this code's}."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", base, "core"], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True)
    (folder / "core").rename(folder / "core_base")
    sys.path.insert(0, str(folder))
    out = {}
    for key, package in (("old", "core_base"), ("new", "core")):
        out[key] = tuple(importlib.import_module(f"{package}.{name}") for name in
                         ("retarget", "collision", "model.kinematics", "model.urdf"))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", default="HEAD~1", help="the earlier revision (git)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--robots", default="g1,h1")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        codes = _codes(args.base, Path(folder))
        print(f"load {open('/proc/loadavg').read().strip()}  (base {args.base})", flush=True)
        for robot in args.robots.split(","):
            trees = {}
            for key, (_, collision, kinematics, urdf) in codes.items():
                trees[key] = kinematics.KinematicTree(urdf.parse_urdf(clips.ROBOTS[robot]))
                collision.collision_pairs(trees[key])  # fitted once per robot, as a session keeps them
            for name, path in (("walk", clips.WALK), ("hop", clips.HOP)):
                _compare(robot, name, clips.load(path), codes, trees, args.repeats)
        print(f"load {open('/proc/loadavg').read().strip()}")


def _compare(robot: str, name: str, motion, codes: dict, trees: dict, repeats: int) -> None:
    """Print each bake's least CPU time and figures, and the avoidance's own CPU in both codes."""
    runs = {"off": ("new", False), "before": ("old", True), "after": ("new", True)}
    mappings = {run: codes[code][0].auto_map(motion, trees[code]) for run, (code, _) in runs.items()}
    best, reports = {}, {}
    for k in range(repeats + 1):
        for run in (list(runs) if k % 2 else list(runs)[::-1]):
            code, avoid = runs[run]
            mappings[run].settings = replace(mappings[run].settings, avoid_self_collision=avoid)
            started = time.process_time()
            report = codes[code][0].retarget(motion, trees[code], mappings[run], contacts="auto").report
            cpu = time.process_time() - started
            if k and cpu < best.get(run, float("inf")):
                best[run], reports[run] = cpu, report
    off = best["off"]
    for run in runs:
        report = reports[run]
        print(f"{robot} {name:<4} {run:<6} {best[run]:.3f} s CPU ({100 * (best[run] / off - 1):+4.0f} % over off)  "
              f"colliding {report['self_collision_pct']:.2f} %  worst {100 * report['self_collision_worst']['depth_m']:.2f} cm"
              f"  limbs {report['limb_direction_error_deg'] - reports['off']['limb_direction_error_deg']:+.3f} deg  "
              f"jerk {report['jerk_after']:,.0f} rad/s^3", flush=True)
    print(f"{robot} {name:<4} the avoidance's own CPU: {best['before'] - off:.3f} -> {best['after'] - off:.3f} s; "
          f"whole bake {best['after'] / best['before']:.2f} x before", flush=True)


if __name__ == "__main__":
    main()
