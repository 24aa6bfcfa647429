#!/usr/bin/env python3
"""A robot's first-ever collision fit (what a user's first bake of a robot pays before the disk
cache holds it: core.collision.store): the CPU seconds of collision_pairs (the capsule model and
the checked pairs) in a new process with an empty cache folder, and with --bound also of the
first look with the meshes' separating-axis bound on (core.collision.support: its hulls fitted
there since session 30, in the model's fit before). Two or more checkouts alternated run by run,
least of REPEATS (the machine is shared). --callgrind: the child's instructions instead (valgrind's
callgrind, load-independent, imports included: the same in every checkout; one repeat is enough).

    mkdir /tmp/before && git archive REV | tar -x -C /tmp/before && ln -s $PWD/.venv /tmp/before/.venv
    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 .venv/bin/python bench/collision_first_fit.py /tmp/before . \
        [--repeats 5] [--robot data/robots/g1/unitree_g1_29dof.urdf] [--bound] [--callgrind]
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import tempfile
from pathlib import Path

CHILD = """
import json, sys, time
sys.path.insert(0, ".")
import numpy as np
from core.collision import collision_pairs, support
from core.collision.pairs import pair_distances
from core.model.kinematics import KinematicTree
from core.model.urdf import parse_urdf
tree = KinematicTree(parse_urdf(sys.argv[1]))
started = time.process_time()
pairs = collision_pairs(tree)
fit = time.process_time() - started
support.SUPPORT_BOUND = sys.argv[2] == "1"
q = np.zeros((1, tree.dof))
started = time.process_time()
pair_distances(tree, pairs, q, None)  # the first look: with the bound, its hulls
look = time.process_time() - started
print(json.dumps({"fit": fit, "look": look}))
"""


def first_fit(tree: Path, robot: str, bound: bool, callgrind: bool = False) -> dict:
    """{fit, look} CPU seconds in a new process run from `tree`, its cache folder empty (with callgrind,
    also the whole child's instructions)."""
    prefix = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null"] if callgrind else []
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, ROBOT_RETARGET_CACHE=cache, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
        done = subprocess.run(prefix + [str(tree / ".venv/bin/python"), "-c", CHILD, robot, "1" if bound else "0"],
                              cwd=tree, env=env, check=True, capture_output=True, text=True)
    out = json.loads(done.stdout.splitlines()[-1])
    if callgrind:
        out["instructions"] = float(re.search(r"Collected : (\d+)", done.stderr).group(1))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("trees", nargs="+", type=Path)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--robot", default="data/robots/g1/unitree_g1_29dof.urdf")
    parser.add_argument("--bound", action="store_true", help="the first look with the separating-axis bound on")
    parser.add_argument("--callgrind", action="store_true", help="the child's instructions (and its CPU under valgrind)")
    args = parser.parse_args()
    trees = [tree.resolve() for tree in args.trees]
    seen: dict = {tree: [] for tree in trees}
    for round_ in range(args.repeats):
        for tree in trees if round_ % 2 else trees[::-1]:
            seen[tree].append(first_fit(tree, args.robot, args.bound, args.callgrind))
        print(f"round {round_}: load {open('/proc/loadavg').read().split()[:3]}", flush=True)
    for tree, runs in seen.items():
        fit, look = sorted(r["fit"] for r in runs), sorted(r["look"] for r in runs)
        print(f"{str(tree):40s} fit {fit[0]:.3f} s (median {fit[len(fit) // 2]:.3f}), first look "
              f"{look[0]:.3f} s (median {look[len(look) // 2]:.3f})" + (" bound on" if args.bound else "")
              + (f", {min(r['instructions'] for r in runs) / 1e9:.3f} G instructions" if args.callgrind else ""))


if __name__ == "__main__":
    main()
