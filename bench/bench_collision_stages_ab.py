#!/usr/bin/env python3
"""Self-collision avoidance: its stages' CPU against an earlier revision's, in one process, many rounds.

bench_collision_ab.py's whole bakes (three rounds) spread by tens of per cent on a shared machine,
which hides a change of 10-20 % in the avoidance alone. Here only avoidance-on bakes run, the
earlier revision (imported as `core_base`, as bench_collision_ab.py does) and this code
interleaved, the order reversed every round, and each bake's CPU in the separate stage and its
parts is summed (a part called within itself counted once): per part the least over `--rounds`
rounds and the median of the rounds' after / before ratios.

    .venv/bin/python bench/bench_collision_stages_ab.py [--base REV (HEAD~1)] [--rounds 10] [--robots g1] [--clips walk,hop]
"""
from __future__ import annotations

import argparse
import importlib
import os
import tempfile
import time
from collections import defaultdict
from dataclasses import replace
from pathlib import Path

for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[var] = "1"

import numpy as np  # noqa: E402

import clips  # noqa: E402
from bench_collision_ab import _codes  # noqa: E402  (puts the repo on the path, imports REV as core_base)

# module|older module:attribute path: the first module the package has (the corrections left separation in session 30)
PARTS = ("retarget.pipeline:keep_apart", "chains.corrections|chains.separation:_Corrections._look",
         "chains.corrections|chains.separation:_least_change", "chains.separation:one_answer_per_run",
         "chains.separation:_steady")


def _timed(package: str, part: str, key: tuple, spent: dict, depth: dict) -> None:
    """Wrap package's part (module:attribute path; module|older: the first of them the package has) so its
    CPU time adds to spent[key]."""
    modules, path = part.split(":")
    for module in modules.split("|"):
        try:
            owner = importlib.import_module(f"{package}.{module}")
            break
        except ModuleNotFoundError:
            continue
    names = path.split(".")
    for name in names[:-1]:
        owner = getattr(owner, name)
    call = getattr(owner, names[-1])

    def wrapper(*args, **kwargs):
        if depth[key]:
            return call(*args, **kwargs)
        depth[key] += 1
        started = time.process_time()
        try:
            return call(*args, **kwargs)
        finally:
            depth[key] -= 1
            spent[key] += time.process_time() - started
    setattr(owner, names[-1], wrapper)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", default="HEAD~1", help="the earlier revision (git)")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--robots", default="g1")
    parser.add_argument("--clips", default="walk,hop")
    args = parser.parse_args()
    spent, depth = defaultdict(float), defaultdict(int)
    with tempfile.TemporaryDirectory() as folder:
        codes = _codes(args.base, Path(folder))
        for code, package in (("old", "core_base"), ("new", "core")):
            for part in PARTS:
                _timed(package, part, (code, part), spent, depth)
        print(f"load {open('/proc/loadavg').read().strip()}  (base {args.base}, {args.rounds} rounds)", flush=True)
        for robot in args.robots.split(","):
            for name in args.clips.split(","):
                _compare(robot, name, clips.load(clips.WALK if name == "walk" else clips.HOP), codes, args.rounds,
                         spent)
        print(f"load {open('/proc/loadavg').read().strip()}")


def _compare(robot: str, name: str, motion, codes: dict, rounds: int, spent: dict) -> None:
    """Print per part the least CPU of each code over the rounds and the median ratio."""
    bakes = {}
    for code, (retarget, collision, kinematics, urdf) in codes.items():
        tree = kinematics.KinematicTree(urdf.parse_urdf(clips.ROBOTS[robot]))
        collision.collision_pairs(tree)
        mapping = retarget.auto_map(motion, tree)
        mapping.settings = replace(mapping.settings, avoid_self_collision=True)
        bakes[code] = (retarget, tree, mapping)
    seconds = defaultdict(list)
    for k in range(rounds + 1):  # the first round warms up
        for code in (["old", "new"] if k % 2 else ["new", "old"]):
            retarget, tree, mapping = bakes[code]
            for part in PARTS:
                spent[(code, part)] = 0.0
            started = time.process_time()
            retarget.retarget(motion, tree, mapping, contacts="auto")
            if k:
                seconds[(code, "bake")].append(time.process_time() - started)
                for part in PARTS:
                    seconds[(code, part)].append(spent[(code, part)])
    for part in ("bake",) + PARTS:
        old, new = np.array(seconds[("old", part)]), np.array(seconds[("new", part)])
        label = part.split(":")[-1]
        print(f"{robot} {name:<4} {label:<22} before {1000 * old.min():7.1f} ms  after {1000 * new.min():7.1f} ms  "
              f"least {new.min() / old.min():.2f} x  median of rounds {np.median(new / old):.2f} x", flush=True)


if __name__ == "__main__":
    main()
