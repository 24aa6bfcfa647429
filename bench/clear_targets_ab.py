#!/usr/bin/env python3
"""Targets cleared of the trunk before the arms' solve or not (pipeline.CLEAR_TARGETS), interleaved in one
process: the CPU seconds (process time, least of --repeats) of the chain solve and of keep_apart, per clip.

    OMP_NUM_THREADS=1 .venv/bin/python bench/clear_targets_ab.py [--repeats 3] [--robot g1]
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import replace
from pathlib import Path

for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(var, "1")
sys.path.insert(0, str(Path(__file__).resolve().parent))
import clips  # noqa: E402
import core.retarget.pipeline as pl  # noqa: E402
from core.collision import collision_pairs  # noqa: E402
from core.model.kinematics import KinematicTree  # noqa: E402
from core.model.urdf import parse_urdf  # noqa: E402
from core.retarget import auto_map, retarget  # noqa: E402

SPENT: dict = {}


def timed(name: str, function):
    def run(*args, **kwargs):
        started = time.process_time()
        try:
            return function(*args, **kwargs)
        finally:
            SPENT[name] = SPENT.get(name, 0.0) + time.process_time() - started
    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--robot", default="g1")
    args = parser.parse_args()
    pl.solve_chains, pl.keep_apart = timed("solve", pl.solve_chains), timed("keep_apart", pl.keep_apart)
    tree = KinematicTree(parse_urdf(clips.ROBOTS[args.robot]))
    collision_pairs(tree)
    for name, path in (("walk", clips.WALK), ("hop", clips.HOP)):
        motion = clips.load(path)
        mapping = auto_map(motion, tree)
        mapping.settings = replace(mapping.settings, avoid_self_collision=True)
        best: dict = {}
        for k in range(args.repeats + 1):
            for clear in (False, True):
                pl.CLEAR_TARGETS = clear
                SPENT.clear()
                started = time.process_time()
                retarget(motion, tree, mapping, contacts="auto")
                SPENT["bake"] = time.process_time() - started
                if k:  # the first round warms both
                    for stage, seconds in SPENT.items():
                        best[clear, stage] = min(best.get((clear, stage), seconds), seconds)
        print(f"{args.robot} {name}: " + "; ".join(
            f"{stage} {best[False, stage]:.3f} -> {best[True, stage]:.3f} s" for stage in ("solve", "keep_apart", "bake")))


if __name__ == "__main__":
    main()
