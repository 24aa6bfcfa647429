#!/usr/bin/env python3
"""The gait's CPU time against another copy of core, run alternately (issue 12's speed on a shared machine).

A busy machine spreads one CPU time by tens of per cent, so a change is timed against the code before it
in the same minutes: each run is its own process (one BLAS thread), this tree's core and the other copy
taking turns, and each prints its CPU time and the report's figures (the figures show whether the two
walk the same gait).

    cp -r /work/main/core /tmp/before/core_before   # the code before, as a package of another name
    .venv/bin/python bench/gait_cpu_pair.py --against /tmp/before/core_before [--robot h1] [--runs 3] [--ten]
        [--lateral-solver highs|interior]

--ten times the 10 s clip (the walk with its first and last frames held, bench_gait.py) instead of the walk.
--one-process: both copies imported once and run in turn in this process (least of --runs each), and the
last runs' joints, root and multibody ZMP compared: a change on the cost side shows 0 (the G1) or the
rounding the passes amplify (the H1). Run it with PYTHONHASHSEED=0 (a gait's last digits follow it).
--lateral-solver: both copies' lateral programme solver (core.balance.lateral.SOLVER; each copy's default unless
given).
"""
from __future__ import annotations

import argparse
import importlib
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ONE_RUN = """
import os, sys, time
for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[var] = "1"
root, package, robot, ten, solver = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4] == "1", sys.argv[5]
sys.path[:0] = [root, {bench!r}]
from gait_cpu_pair import runner
run = runner(package, robot, ten, solver or None)
started = time.process_time()
r = run().report
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
    parser.add_argument("--one-process", action="store_true", help="both copies in turn in this process, compared")
    parser.add_argument("--lateral-solver", choices=("highs", "interior"), help="both copies' lateral.SOLVER")
    args = parser.parse_args()
    other = args.against.resolve()
    if args.one_process:
        return one_process(args, other)
    script = ONE_RUN.format(bench=str(HERE))
    env = dict(os.environ, PYTHONHASHSEED="0")  # the same hash order in both: a gait's last digits follow it
    for _ in range(args.runs):
        for root, package in ((str(other.parent), other.name), (str(HERE.parent), "core")):
            subprocess.run([sys.executable, "-c", script, root, package, args.robot, "1" if args.ten else "0",
                            args.lateral_solver or ""], check=True, env=env)


def one_process(args, other: Path) -> None:
    """--one-process: both copies in turn here, the least CPU of each and how far their gaits are apart."""
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        if os.environ.get(var) != "1":
            sys.exit(f"set {var}=1 before Python starts (BLAS reads it when numpy loads)")
    import numpy as np

    sys.path[:0] = [str(other.parent), str(HERE.parent), str(HERE)]
    runs = {name: runner(name, args.robot, args.ten, args.lateral_solver) for name in (other.name, "core")}
    best, last = {name: np.inf for name in runs}, {}
    for k in range(args.runs):
        for name, run in runs.items():
            started = time.process_time()
            last[name] = run()
            cpu = time.process_time() - started
            best[name] = min(best[name], cpu)
            print(f"run {k} {name:>12}: {cpu:6.2f} s CPU, load {os.getloadavg()[0]:.1f}", flush=True)
    for name, result in last.items():
        r = result.report
        print(f"{name:>12} least {best[name]:.2f} s: ZMP RMS {1000 * r['multibody_zmp_rms_error_m']:.4f} mm, worst margin "
              f"{1000 * r['min_support_margin_m']:.4f} mm, outside {r['zmp_outside_support_pct']:.2f} %, slide "
              f"{1000 * r['stance_slide_m']:.4f} mm, tilt {r['stance_tilt_deg']:.4f} deg, travel {r['travel_m']:.5f} m, "
              f"{r['steps']} steps")
    a, b = last[other.name], last["core"]
    print(f"core / {other.name}: {best['core'] / best[other.name]:.3f} of the CPU; joints {np.abs(a.q - b.q).max():.2g} rad, "
          f"root {np.abs(a.root_position - b.root_position).max():.2g} m, ZMP {np.abs(a.zmp - b.zmp).max():.2g} m apart")


def runner(package: str, robot: str, ten: bool, lateral_solver: str | None = None):
    """A call that runs the gait of the walk (or the 10 s clip) on robot with `package`'s core (its lateral
    programme by lateral_solver where given)."""
    if lateral_solver is not None:
        importlib.import_module(package + ".balance.lateral").SOLVER = lateral_solver
    gait = importlib.import_module(package + ".balance.gait")
    walk, tree, mapping, contacts = clip(package, robot, ten)
    return lambda: gait.generate_gait(walk, tree, mapping, contacts=contacts)


def clip(package: str, robot: str, ten: bool):
    """(clip, robot tree, mapping, contacts) of the walk (or the 10 s clip) on robot, with `package`'s core."""
    import clips
    import numpy as np

    kinematics = importlib.import_module(package + ".model.kinematics")
    urdf = importlib.import_module(package + ".model.urdf")
    retarget = importlib.import_module(package + ".retarget")
    contacts_module = importlib.import_module(package + ".feet.contacts")
    tree = kinematics.KinematicTree(urdf.parse_urdf(clips.ROBOTS[robot]))
    walk, contacts = clips.load(clips.WALK), "auto"
    if ten:  # as bench_gait.held and held_contacts, on this package's contacts
        extra = max(0, int(round(10.0 * walk.fps)) - walk.frames)
        own = contacts_module.detect_contacts(walk, retarget.auto_map(walk, tree))
        contacts = contacts_module.Contacts({side: np.r_[np.full(extra // 2, d[0]), d, np.full(extra - extra // 2, d[-1])]
                                             for side, d in own.feet.items()}, own.fps)
        walk = walk.at_frames(np.r_[np.zeros(extra // 2, int), np.arange(walk.frames),
                                    np.full(extra - extra // 2, walk.frames - 1)])
    return walk, tree, retarget.auto_map(walk, tree), contacts

if __name__ == "__main__":
    main()
