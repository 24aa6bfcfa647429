#!/usr/bin/env python3
"""The whole default bake's CPU (planted feet) against an earlier revision's, in one process.

The earlier revision's `core` is imported as `core_base` (bench_collision_ab._codes), so both
bake in the same spells of load: per robot and clip, old and new alternate (the order reversed
every round), the least process time of `--repeats` rounds after one warm-up, one core. Prints
the ratio new/old, how far the joints and root moved, and the report figures both ways (they
should agree to their printed digits).

    .venv/bin/python bench/bench_bake_ab.py [--base REV (HEAD~1)] [--repeats 5] [--robots g1,h1]
        [--contacts auto|off]
"""
from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np

import clips  # noqa: E402  (bench_collision_ab puts this folder and the repo on the path)
from bench_collision_ab import _codes  # noqa: E402

FIGURES = (("limb_direction_error_deg", "{:.4f}"), ("contact_preserved_pct", "{:.2f}"),
           ("foot_slide_pct", "{:.2f}"), ("foot_slide_mean_m_s", "{:.5f}"), ("ground_penetration_pct", "{:.2f}"),
           ("jerk_after", "{:.1f}"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", default="HEAD~1", help="the earlier revision (git)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--robots", default="g1,h1")
    parser.add_argument("--clips", default="walk,hop")
    parser.add_argument("--contacts", default="auto")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        codes = _codes(args.base, Path(folder))
        print(f"load {open('/proc/loadavg').read().strip()}  (base {args.base}, contacts {args.contacts})", flush=True)
        ratios = []
        for robot in args.robots.split(","):
            trees = {key: kinematics.KinematicTree(urdf.parse_urdf(clips.ROBOTS[robot]))
                     for key, (_, _, kinematics, urdf) in codes.items()}
            for name in args.clips.split(","):
                motion = clips.load({"walk": clips.WALK, "hop": clips.HOP}[name])
                ratios.append(_compare(f"{robot} {name}", motion, codes, trees, args.repeats, args.contacts))
        print(f"geometric mean new/old {np.exp(np.mean(np.log(ratios))):.3f}; "
              f"load {open('/proc/loadavg').read().strip()}")


def _compare(label: str, motion, codes: dict, trees: dict, repeats: int, contacts: str) -> float:
    """Print the least CPU of each code, their ratio and how far their answers are apart."""
    mappings = {key: code[0].auto_map(motion, trees[key]) for key, code in codes.items()}
    best, results = {}, {}
    for k in range(repeats + 1):
        for key in (("old", "new") if k % 2 else ("new", "old")):
            started = time.process_time()
            result = codes[key][0].retarget(motion, trees[key], mappings[key], contacts=contacts)
            cpu = time.process_time() - started
            if k and cpu < best.get(key, np.inf):
                best[key] = cpu
            results[key] = result
    old, new = results["old"], results["new"]
    joints = np.abs(new.q - old.q).max()
    root = np.abs(new.root_position - old.root_position).max()
    figures = "  ".join(f"{key} {fmt.format(old.report[key])}" + ("" if fmt.format(old.report[key]) ==
                        fmt.format(new.report[key]) else f" -> {fmt.format(new.report[key])} (!)")
                        for key, fmt in FIGURES if old.report.get(key) is not None)
    ratio = best["new"] / best["old"]
    print(f"{label:<9} old {best['old']:.3f} s  new {best['new']:.3f} s CPU  {ratio:.3f} x   "
          f"joints {joints:.1e} rad  root {root:.1e} m   {figures}", flush=True)
    return ratio


if __name__ == "__main__":
    main()
