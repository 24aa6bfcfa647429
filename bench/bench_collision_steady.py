#!/usr/bin/env python3
"""Self-collision avoidance with and without the room made steady in time (core.chains.steady):
the bundled walk and hop onto the G1 and the H1, avoidance on, the two alternated in one process
(the steady stage left out by separation.STEADY_ROOM = False: the code before it), the least CPU time
of `--repeats` each; prints self_collision_pct, the limb direction error, the joints' mean jerk
(report jerk_after) and the CPU time, and the bake without avoidance's limb error and jerk.

    .venv/bin/python bench/bench_collision_steady.py [--repeats 3]
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import replace
from pathlib import Path

for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[var] = "1"

sys.path.insert(0, str(Path(__file__).resolve().parent))
import clips  # noqa: E402
from core.chains import separation  # noqa: E402
from core.model.kinematics import KinematicTree  # noqa: E402
from core.model.urdf import parse_urdf  # noqa: E402
from core.retarget import auto_map, retarget  # noqa: E402


def bake(motion, tree, mapping, avoid: bool, steady: bool) -> tuple[dict, float]:
    """(report, CPU seconds) of one bake."""
    separation.STEADY_ROOM = steady
    mapping.settings = replace(mapping.settings, avoid_self_collision=avoid)
    started = time.process_time()
    report = retarget(motion, tree, mapping, contacts="auto").report
    return report, time.process_time() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    for robot in ("g1", "h1"):
        tree = KinematicTree(parse_urdf(clips.ROBOTS[robot]))
        for name, path in (("walk", clips.WALK), ("hop", clips.HOP)):
            motion = clips.load(path)
            mapping = auto_map(motion, tree)
            off, _ = bake(motion, tree, mapping, False, True)
            best = {}
            for k in range(args.repeats + 1):  # the first of each a warm-up
                for steady in (False, True):
                    report, cpu = bake(motion, tree, mapping, True, steady)
                    if k and (steady not in best or cpu < best[steady][1]):
                        best[steady] = (report, cpu)
            print(f"{robot} {name:<4} off: limbs {off['limb_direction_error_deg']:.2f} deg, jerk "
                  f"{off['jerk_after']:,.0f} rad/s^3")
            for steady, (report, cpu) in best.items():
                print(f"  {'steady' if steady else 'before'}: {report['self_collision_pct']:.1f} % colliding, limbs "
                      f"{report['limb_direction_error_deg'] - off['limb_direction_error_deg']:+.2f} deg, jerk "
                      f"{report['jerk_after']:,.0f} rad/s^3, {cpu:.2f} s CPU", flush=True)
            print(f"  CPU steady / before: {best[True][1] / best[False][1] - 1:+.0%}", flush=True)


if __name__ == "__main__":
    main()
