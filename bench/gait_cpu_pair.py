#!/usr/bin/env python3
"""The gait's CPU time against another copy of core, run alternately (issue 12's speed on a shared machine).

A busy machine spreads one CPU time by tens of per cent, so a change is timed against the code before it
in the same minutes: each run is its own process (one BLAS thread), this tree's core and the other copy
taking turns, and each prints its CPU time and the report's figures (the figures show whether the two
walk the same gait).

    cp -r /work/main/core /tmp/before/core_before   # the code before, as a package of another name
    .venv/bin/python bench/gait_cpu_pair.py --against /tmp/before/core_before [--robot h1] [--runs 3] [--ten]

--ten times the 10 s clip (the walk with its first and last frames held, bench_gait.py) instead of the walk.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ONE_RUN = """
import os, sys, time
for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[var] = "1"
import importlib
root, package, robot, ten = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4] == "1"
sys.path[:0] = [root, {bench!r}]
import clips
gait = importlib.import_module(package + ".balance.gait")
kinematics = importlib.import_module(package + ".model.kinematics")
urdf = importlib.import_module(package + ".model.urdf")
retarget = importlib.import_module(package + ".retarget")
contacts_module = importlib.import_module(package + ".feet.contacts")
tree = kinematics.KinematicTree(urdf.parse_urdf(clips.ROBOTS[robot]))
walk = clips.load(clips.WALK)
contacts = "auto"
if ten:
    import numpy as np
    extra = max(0, int(round(10.0 * walk.fps)) - walk.frames)
    index = np.r_[np.zeros(extra // 2, int), np.arange(walk.frames), np.full(extra - extra // 2, walk.frames - 1)]
    own = contacts_module.detect_contacts(walk, retarget.auto_map(walk, tree))
    contacts = contacts_module.Contacts({{side: np.r_[np.full(extra // 2, d[0]), d, np.full(extra - extra // 2, d[-1])]
                                         for side, d in own.feet.items()}}, own.fps)
    walk = walk.at_frames(index)
mapping = retarget.auto_map(walk, tree)
started = time.process_time()
r = gait.generate_gait(walk, tree, mapping, contacts=contacts).report
cpu = time.process_time() - started
print(f"{{package:>12}} {{robot}}: {{cpu:6.2f}} s CPU for {{r['duration_s']:.1f}} s; ZMP RMS "
      f"{{1000 * r['multibody_zmp_rms_error_m']:.4f}} mm, worst margin {{1000 * r['min_support_margin_m']:.4f}} mm, "
      f"outside {{r['zmp_outside_support_pct']:.2f}} %, slide {{1000 * r['stance_slide_m']:.4f}} mm, tilt "
      f"{{r['stance_tilt_deg']:.4f}} deg, travel {{r['travel_m']:.5f}} m, {{r['steps']}} steps", flush=True)
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", type=Path, required=True, help="another copy of core, as a package directory")
    parser.add_argument("--robot", default="h1", choices=("g1", "h1"))
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--ten", action="store_true", help="the 10 s clip instead of the walk")
    args = parser.parse_args()
    other = args.against.resolve()
    script = ONE_RUN.format(bench=str(HERE))
    env = dict(os.environ, PYTHONHASHSEED="0")  # the same hash order in both: a gait's last digits follow it
    for _ in range(args.runs):
        for root, package in ((str(other.parent), other.name), (str(HERE.parent), "core")):
            subprocess.run([sys.executable, "-c", script, root, package, args.robot, "1" if args.ten else "0"],
                           check=True, env=env)


if __name__ == "__main__":
    main()
