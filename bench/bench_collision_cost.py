#!/usr/bin/env python3
"""Self-collision avoidance: the CPU time a bake spends in the avoidance's own code, by stage.

The whole-bake ratio of bench_collision.py spreads by tens of per cent on a shared machine; the
avoidance's own seconds, each the least of `--repeats` bakes, spread far less. For the bundled walk
and hop onto each robot (planted feet, avoidance on, one core) prints the milliseconds spent in:
the legs' room in the chain solve (`legs`), the planted-leg solves' checks and re-solves (`plant`),
the other chains' room at the end of the bake (`separate`, switch windows included) and building
the separation's rows outside that (`terms`); and their sum (the least total of the bakes).

    .venv/bin/python bench/bench_collision_cost.py [--repeats 5] [--robots g1,h1]
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from collections import defaultdict
from dataclasses import replace
from pathlib import Path

for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[var] = "1"

sys.path.insert(0, str(Path(__file__).resolve().parent))
import clips  # noqa: E402
import core.feet.plant as plant  # noqa: E402
import core.retarget.pipeline as pipeline  # noqa: E402
from core.collision import collision_pairs  # noqa: E402
from core.collision.avoid import Separation  # noqa: E402
from core.model.kinematics import KinematicTree  # noqa: E402
from core.model.urdf import parse_urdf  # noqa: E402
from core.retarget import auto_map, retarget  # noqa: E402

STAGES = ((pipeline, "separate_chain", "legs"), (plant, "_apart", "plant"), (pipeline, "keep_apart", "separate"),
          (Separation, "term", "terms"))


def timed(seconds: dict) -> None:
    """Wrap each stage's function so its CPU time adds to seconds[stage] (not nested in another's)."""
    depth = [0]
    for owner, name, stage in STAGES:
        def wrapper(*args, _call=getattr(owner, name), _stage=stage, **kwargs):
            if depth[0]:
                return _call(*args, **kwargs)
            depth[0] += 1
            started = time.process_time()
            try:
                return _call(*args, **kwargs)
            finally:
                depth[0] -= 1
                seconds[_stage] += time.process_time() - started
        setattr(owner, name, wrapper)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--robots", default="g1,h1")
    args = parser.parse_args()
    seconds: dict = defaultdict(float)
    timed(seconds)
    clips_ = {"walk": clips.load(clips.WALK), "hop": clips.load(clips.HOP)}
    for robot in args.robots.split(","):
        tree = KinematicTree(parse_urdf(clips.ROBOTS[robot]))
        collision_pairs(tree)  # fitted once per robot, as a session or a batch worker keeps them
        for name, motion in clips_.items():
            mapping = auto_map(motion, tree)
            mapping.settings = replace(mapping.settings, avoid_self_collision=True)
            least, total = {}, float("inf")
            for k in range(args.repeats + 1):  # the first bake warms up
                seconds.clear()
                retarget(motion, tree, mapping, contacts="auto")
                if k:
                    total = min(total, sum(seconds.values()))
                    least = {stage: min(least.get(stage, float("inf")), s) for stage, s in seconds.items()}
            print(f"{robot} {name:<5} avoidance {1000 * total:6.1f} ms CPU  ("
                  + ", ".join(f"{stage} {1000 * s:.1f}" for stage, s in sorted(least.items())) + ")", flush=True)


if __name__ == "__main__":
    main()
