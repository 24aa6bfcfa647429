#!/usr/bin/env python3
"""Where the G1's separate stage loses limb direction: its answer by stage, against variants of the step.

The bake with avoidance on is run once per clip and what its separate stage (core.retarget.pipeline.
keep_apart) was handed is kept; that stage alone is then run again under each variant (a module
attribute patched for the call), interleaved over `--repeats` rounds in one process, and measured:
the limb direction error a viewer reads (core.retarget.viewer, all four limbs, as the report),
its rise over the pose handed in (what the stage costs the limbs; the legs made room before it and
are the same in every variant), the frames a pair of an arm's group is more than 1 mm inside the
margin (steady.INSIDE_M) or 5 mm (the report's overlap), the joints' mean jerk and the stage's CPU.

    .venv/bin/python bench/bench_collision_step.py [--repeats 3] [--clips walk,hop] [--variants base,frames,...]

Variants (VARIANTS): base (as the bake), frames (the frame-by-frame room, no steady room: where the
passes land before time is taken into account), the whole steps' and costs' constants, polish
(POLISH_ROOM), descent (the polish by core.chains.polish.descend_room) and its constants. --frames
also prints the limbs of each variant's frame-by-frame room (what separation._steady is handed).
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[var] = "1"

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import clips  # noqa: E402
import core.chains.change_cost as change_cost  # noqa: E402
import core.chains.corrections as corrections  # noqa: E402
import core.chains.polish as polish  # noqa: E402
import core.chains.separation as separation  # noqa: E402
import core.retarget.pipeline as pipeline  # noqa: E402
from bench_collision_floor import separation_inputs  # noqa: E402
from core.model.kinematics import KinematicTree  # noqa: E402
from core.model.urdf import parse_urdf  # noqa: E402
from core.retarget import auto_map  # noqa: E402
from core.retarget.viewer import viewer_figures  # noqa: E402

MODULES = {"separation": separation, "change_cost": change_cost, "polish": polish, "corrections": corrections}
VARIANTS = {
    "base": {},
    "frames": {"STEADY_ROOM": False},
    "whole4": {"corrections.WHOLE_STEPS": 4},
    "shape01": {"corrections.WHOLE_SHAPE_WEIGHT": 0.01},
    "pull10": {"change_cost.PULL_WEIGHT": 10.0},
    "polish": {"POLISH_ROOM": True},
    "descent": {"POLISH_ROOM": True, "POLISH_DESCENT": True},
    "descent-c0": {"POLISH_ROOM": True, "POLISH_DESCENT": True, "polish.DESCENT_CLEAR_M": 0.0},
    "descent-c0-s5": {"POLISH_ROOM": True, "POLISH_DESCENT": True, "polish.DESCENT_CLEAR_M": 0.0,
                      "polish.DESCENT_STEPS": 5},
    "descent-c0-s10": {"POLISH_ROOM": True, "POLISH_DESCENT": True, "polish.DESCENT_CLEAR_M": 0.0,
                       "polish.DESCENT_STEPS": 10},
    "descent-c4": {"POLISH_ROOM": True, "POLISH_DESCENT": True, "polish.DESCENT_CLEAR_M": 0.004},
    "descent-s10": {"POLISH_ROOM": True, "POLISH_DESCENT": True, "polish.DESCENT_STEPS": 10},
    "descent-s2": {"POLISH_ROOM": True, "POLISH_DESCENT": True, "polish.DESCENT_STEPS": 2},
    "descent-d1": {"POLISH_ROOM": True, "POLISH_DESCENT": True, "polish.DESCENT_DAMPING": 1.0},
    "descent-c3": {"POLISH_ROOM": True, "POLISH_DESCENT": True, "polish.DESCENT_CLEAR_M": 0.003},
}


def stage(seen: dict, fps: float, patch: dict) -> tuple[np.ndarray, float]:
    """(q after the separate stage, its CPU seconds) with the separation module's attributes patched."""
    where = {name: (MODULES[name.split(".")[0]], name.split(".")[-1]) if "." in name else (separation, name)
             for name in patch}
    saved = {name: getattr(*where[name]) for name in patch}
    q = seen["before"].copy()
    try:
        for name, value in patch.items():
            setattr(*where[name], value)
        started = time.process_time()
        pipeline.keep_apart(seen["tree"], seen["plans"], q, seen["root"], seen["targets"], seen["settings"],
                            seen["apart"], fps)
        return q, time.process_time() - started
    finally:
        for name, value in saved.items():
            setattr(*where[name], value)


def frame_by_frame(seen: dict, fps: float, patch: dict) -> np.ndarray:
    """q with each group's columns where the frame-by-frame room put them, before the steady room
    (what separation._steady is handed; the pose handed in where a group has none)."""
    q, steady = seen["before"].copy(), separation._steady

    def spy(problem, apart, x, shape, max_step, fps_):
        q[:, problem.columns] = x
        return steady(problem, apart, x, shape, max_step, fps_)

    separation._steady = spy
    try:
        stage(seen, fps, patch)
    finally:
        separation._steady = steady
    return q


def figures(motion, mapping, seen: dict, q: np.ndarray) -> dict:
    """limbs (deg, the four), by limb, frames inside by 1 / 5 mm (% of frames), jerk (rad/s^3)."""
    tree, root = seen["tree"], seen["root"]
    view = viewer_figures(motion, tree, mapping.enabled_chains(), q, root)
    depth = np.zeros(len(q))
    for group in pipeline.room_groups(tree, seen["plans"]):
        variables = [v for plan in group for v in plan.kin.chain.variables]
        term = seen["apart"].term(variables, root)
        if term is not None:
            depth = np.maximum(depth, term.depth(q, root))
    jerk = np.abs(np.diff(q, 3, axis=0)).mean() * motion.fps ** 3
    return {"limbs": view["limb_direction_error_deg"], "by_limb": view["limb_direction_error_by_limb"],
            "inside1": 100.0 * float(np.mean(depth > 0.001)), "inside5": 100.0 * float(np.mean(depth > 0.005)),
            "jerk": float(jerk)}


def captured(motion, tree) -> tuple:
    """(mapping, what the separate stage was handed: seen with its targets and settings)."""
    mapping = auto_map(motion, tree)
    keep = pipeline.keep_apart
    extra = {}

    def watched(tree_, plans, q, root, targets, settings, apart, fps):
        extra.update(targets=targets, settings=settings)
        keep(tree_, plans, q, root, targets, settings, apart, fps)

    pipeline.keep_apart = watched
    try:
        seen = separation_inputs(motion, tree, mapping)
    finally:
        pipeline.keep_apart = keep
    seen.update(extra)
    return mapping, seen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--clips", default="walk,hop")
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--frames", action="store_true", help="also the limbs of the frame-by-frame room")
    args = parser.parse_args()
    tree = KinematicTree(parse_urdf(clips.ROBOTS["g1"]))
    names = args.variants.split(",")
    for clip in args.clips.split(","):
        motion = clips.load({"walk": clips.WALK, "hop": clips.HOP}[clip])
        mapping, seen = captured(motion, tree)
        start = figures(motion, mapping, seen, seen["before"])
        print(f"{clip}: handed in: limbs {start['limbs']:.3f} deg, inside {start['inside1']:.1f} % (1 mm)", flush=True)
        best = {}
        for _ in range(args.repeats):
            for name in names:
                q, cpu = stage(seen, motion.fps, VARIANTS[name])
                if name not in best or cpu < best[name][1]:
                    best[name] = (q, cpu)
        for name in names:
            q, cpu = best[name]
            got = figures(motion, mapping, seen, q)
            arms = " ".join(f"{k.split('_')[0][0]}{k.split('_')[1][0]} {v - start['by_limb'][k]:+.2f}"
                            for k, v in got["by_limb"].items() if "arm" in k)
            if args.frames:
                early = figures(motion, mapping, seen, frame_by_frame(seen, motion.fps, VARIANTS[name]))
                print(f"  {name:<14} frame by frame: limbs {early['limbs']:.3f} ({early['limbs'] - start['limbs']:+.3f})")
            print(f"  {name:<14} limbs {got['limbs']:.3f} ({got['limbs'] - start['limbs']:+.3f}; {arms}) "
                  f"inside {got['inside1']:.1f} / {got['inside5']:.1f} % jerk {got['jerk']:,.0f} "
                  f"CPU {cpu:.2f} s", flush=True)


if __name__ == "__main__":
    main()
