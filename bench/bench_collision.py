#!/usr/bin/env python3
"""Self-collision: the bundled walk and hop onto the G1 and the H1, avoidance off and on.

For each bake (core.retarget.retarget with planted feet, the default; the least CPU time of
`--repeats` calls in one process, one core, off and on interleaved) prints the frames/s of that
CPU time and the CPU seconds, self_collision_pct, the worst overlap,
the limb direction error a viewer sees, the joints' mean jerk (report jerk_after: mean |d^3 q/dt^3|
over frames and joints; a correction that flickers frame to frame shows there), and the cost of avoidance (speed and limb error).
The robot's capsules and its allowed-collision matrix are computed once per robot, before
the timed calls (as in a Blender session or a batch worker, which keep them).

    .venv/bin/python bench/bench_collision.py [--repeats 5] [--polish [--descent]] [--hold-at-bound]

--polish: the avoidance's bakes with the steady room polished where a pair binds
(core.chains.separation.POLISH_ROOM, on by default since session 33: the third bake is then the second's), a third
bake interleaved with the two; the second bake takes the module's own setting.
--descent: that polish by its damped descent (core.chains.separation.POLISH_DESCENT, on by default).
--hold-at-bound: the least change holds a joint a step would carry out of its range at its bound
wherever it is (core.chains.corrections.HOLD_AT_BOUND: continuous in the input, off by default).
ROBOT_RETARGET_SUPPORT_BOUND=1 in the environment: the looks and the report with the meshes' separating-axis
bound (core.collision.support, off by default).
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
import core.chains.corrections as corrections  # noqa: E402
import core.chains.separation as separation  # noqa: E402
from core.collision import collision_pairs  # noqa: E402
from core.model.kinematics import KinematicTree  # noqa: E402
from core.model.urdf import parse_urdf  # noqa: E402
from core.retarget import auto_map, retarget  # noqa: E402


def bakes(motion, tree, mapping, repeats: int, polish: bool = False) -> dict:
    """{avoid: (report, CPU seconds)} for bakes without and with avoidance, interleaved (off, on,
    off, on, ...) after one warm-up of each, the least CPU time of `repeats`: on a shared machine
    the other work only ever adds time, and interleaving gives both the same spells of load.
    polish: a third bake, avoidance on with its room polished (key "polish")."""
    best, default = {}, separation.POLISH_ROOM
    for k in range(repeats + 1):
        for avoid in (False, True, "polish") if polish else (False, True):
            mapping.settings = replace(mapping.settings, avoid_self_collision=bool(avoid))
            separation.POLISH_ROOM = True if avoid == "polish" else default
            started = time.process_time()  # CPU time: the machine is shared, wall time spreads widely
            report = retarget(motion, tree, mapping, contacts="auto").report
            cpu = time.process_time() - started
            separation.POLISH_ROOM = default
            if k and (avoid not in best or cpu < best[avoid][1]):
                best[avoid] = (report, cpu)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--polish", action="store_true", help="a third bake: avoidance with its room polished")
    parser.add_argument("--descent", action="store_true",
                        help="the polish by its damped descent (separation.POLISH_DESCENT)")
    parser.add_argument("--hold-at-bound", action="store_true",
                        help="hold a joint at its bound wherever it is (corrections.HOLD_AT_BOUND)")
    args = parser.parse_args()
    if args.hold_at_bound:
        corrections.HOLD_AT_BOUND = True
    if args.descent:
        separation.POLISH_DESCENT = True
    clips_ = {"walk": clips.load(clips.WALK), "hop": clips.load(clips.HOP)}
    for robot in ("g1", "h1"):
        tree = KinematicTree(parse_urdf(clips.ROBOTS[robot]))
        started = time.perf_counter()
        pairs = collision_pairs(tree)
        print(f"{robot}: {len(pairs.model.body_links)} bodies, {len(pairs.model.radius)} capsules, "
              f"{len(pairs.bodies)} checked pairs (fitted and sampled in {time.perf_counter() - started:.1f} s)")
        for name, motion in clips_.items():
            mapping = auto_map(motion, tree)
            figures = bakes(motion, tree, mapping, args.repeats, args.polish)
            for avoid, (report, cpu) in figures.items():
                worst = report["self_collision_worst"]
                label = "on+polish" if avoid == "polish" else "on " if avoid else "off"
                print(f"  {name:<5} avoid {label} {len(motion.heads) / cpu:6.0f} frames/s "
                      f"({cpu:.2f} s CPU)  self_collision_pct {report['self_collision_pct']:5.1f}  worst "
                      f"{100 * worst['depth_m']:4.1f} cm {'/'.join(worst['pair'] or [])}  limbs "
                      f"{report['limb_direction_error_deg']:.2f} deg  jerk {report['jerk_after']:,.0f} rad/s^3",
                      flush=True)
            (on, cpu_on), (off, cpu_off) = figures[True], figures[False]
            more = on["limb_direction_error_deg"] - off["limb_direction_error_deg"]
            print(f"  {name:<5} avoidance: bake {100 * (cpu_on / cpu_off - 1):+.0f} % CPU time "
                  f"(speed {100 * (1 - cpu_off / cpu_on):.0f} % lower), limbs {more:+.2f} deg")
            if "polish" in figures:
                polished, cpu_polish = figures["polish"]
                print(f"  {name:<5} avoidance polished: bake {100 * (cpu_polish / cpu_off - 1):+.0f} % CPU time "
                      f"({100 * (cpu_polish / cpu_on - 1):+.0f} % against avoidance), limbs "
                      f"{polished['limb_direction_error_deg'] - off['limb_direction_error_deg']:+.2f} deg, "
                      f"jerk {polished['jerk_after'] / on['jerk_after']:.2f} x avoidance's")


if __name__ == "__main__":
    main()
