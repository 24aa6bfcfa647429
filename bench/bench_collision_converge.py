#!/usr/bin/env python3
"""How near the separation's steps come to the least of their own objective, frame by frame (G1).

On every `--stride`-th close frame of one arm (as bench_collision_floor.py picks them), the arm's
and hand's joints where: the bake put them (the whole separate stage), the separation's passes put them (core.chains.separation._keep_apart on
those frames alone: no ramps in time, no steady room), core.chains.polish.descend_room takes them
from there, SLSQP puts them at the least of the same whole cost (the change's shape metric at
WHOLE_SHAPE_WEIGHT plus the limb line's pull: what the passes' whole steps and the descent aim
for) with every checked pair the margin apart, started from the passes' answer, and the least
limb direction error (bench_collision_floor.py's floor). Printed: each one's mean rise of the
viewer's limb error over the shape answer, its mean whole cost and its least clearance. If the
passes' cost is well above SLSQP's on the same objective, the steps stop short; if SLSQP's error
is well above the floor's, the objective is what costs.

    .venv/bin/python bench/bench_collision_converge.py [--clip walk] [--side left] [--stride 10] [--steps 3] [--clear 0.002]
"""
from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from scipy.optimize import minimize

sys.path.insert(0, str(Path(__file__).resolve().parent))
import clips  # noqa: E402
import core.chains.polish as polish  # noqa: E402
import core.chains.corrections as corrections  # noqa: E402
import core.chains.separation as separation  # noqa: E402
from bench_collision_floor import ArmFrames  # noqa: E402
from bench_collision_step import captured, stage  # noqa: E402
from core.model.kinematics import KinematicTree  # noqa: E402
from core.model.urdf import parse_urdf  # noqa: E402


def groups(seen: dict, fps: float) -> tuple[list, np.ndarray]:
    """((group, its SeparationTerm, shape (F, V), q as the group found it) of each group's separate
    stage, q after the stage)."""
    found, steady = [], separation._steady

    def spy(problem, apart, x, shape, max_step, fps_):
        found.append((problem, apart, shape.copy(), problem.q.copy()))
        return steady(problem, apart, x, shape, max_step, fps_)

    separation._steady = spy
    try:
        after, _ = stage(seen, fps, {})  # the groups' q: copied before it is set back
    finally:
        separation._steady = steady
    return found, after.copy()


def whole_cost(problem, shape: np.ndarray, metric: np.ndarray, x: np.ndarray, f: int) -> float:
    """The whole cost of frame f with the group's joints at x (metric: the shape's there)."""
    d = x - shape[f]
    q = problem.q[f:f + 1].copy()
    q[0, problem.columns] = x
    return float(0.5 * corrections.WHOLE_SHAPE_WEIGHT * d @ metric @ d + problem.pull_cost(q, np.array([f]))[0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clip", default="walk")
    parser.add_argument("--side", default="left")
    parser.add_argument("--stride", type=int, default=10)
    parser.add_argument("--steps", type=int, default=polish.DESCENT_STEPS, help="descend_room's steps")
    parser.add_argument("--clear", type=float, default=polish.DESCENT_CLEAR_M, help="descend_room's clearance (m)")
    args = parser.parse_args()
    polish.DESCENT_STEPS, polish.DESCENT_CLEAR_M = args.steps, args.clear
    warnings.filterwarnings("ignore", "Values in x were outside bounds")
    tree = KinematicTree(parse_urdf(clips.ROBOTS["g1"]))
    motion = clips.load({"walk": clips.WALK, "hop": clips.HOP}[args.clip])
    mapping, seen = captured(motion, tree)
    arm = ArmFrames(motion, mapping, seen, args.side)
    found, after = groups(seen, motion.fps)
    problem, apart, shape, q = next(g for g in found if set(g[0].columns) == set(arm.cols))
    assert (problem.columns == arm.cols).all()
    problem.q[:] = q  # as the group found it: the stage wrote its answer into it
    frames = arm.close[::args.stride]
    started = time.process_time()
    passes = separation._keep_apart(problem.on(frames), apart.on(frames), shape[frames], None, fixes=False)
    middle = time.process_time()
    lower = np.maximum(problem.lower, shape[frames] - separation.MAX_SEPARATION_RAD)
    upper = np.minimum(problem.upper, shape[frames] + separation.MAX_SEPARATION_RAD)
    descent = polish.descend_room(problem.on(frames), apart.on(frames), passes, shape[frames], lower, upper,
                                  corrections._least_change, corrections.WHOLE_SHAPE_WEIGHT, corrections.LOOKAHEAD_M,
                                  corrections.STEP_RAD)
    print(f"{args.clip} {args.side} arm: {len(frames)} of {len(arm.close)} close frames; CPU passes "
          f"{middle - started:.2f} s, descent {time.process_time() - middle:.2f} s")
    rows = []
    for i, f in enumerate(int(f) for f in frames):
        posed = problem.q[f:f + 1].copy()
        posed[0, problem.columns] = shape[f]
        metric = problem.metric(posed, np.array([f]))[0]
        exact = minimize(lambda x: whole_cost(problem, shape, metric, x, f), passes[i], method="SLSQP",
                         bounds=list(zip(lower[i], upper[i])), constraints=[arm.constraint(f)],
                         options={"maxiter": 200, "ftol": 1e-10}).x
        floor = arm.least(f, [shape[f], passes[i]], separation.MAX_SEPARATION_RAD)
        answers = [after[f, problem.columns], passes[i], descent[i], exact] + (
            [floor[1]] if floor is not None else [exact])
        start = arm.error(shape[f], f)
        rows.append([(arm.error(x, f) - start, whole_cost(problem, shape, metric, x, f),
                      1000 * arm.clearance(x, f).min()) for x in answers])
    rows = np.array(rows)  # (frames, answers, 3)
    for k, name in enumerate(("the bake (its steady room)", "the passes", "descend_room", "least whole cost (SLSQP)", "least error (floor)")):
        print(f"  {name:<26} error {rows[:, k, 0].mean():+.2f} deg, whole cost {rows[:, k, 1].mean():.4f}, "
              f"least clearance {rows[:, k, 2].min():+.1f} mm")


if __name__ == "__main__":
    main()
