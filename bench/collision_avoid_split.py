#!/usr/bin/env python3
"""Instructions of a warm G1 avoiding bake's avoidance and of the distances its looks measure, under callgrind.

One avoiding bake first (the collision model, caches, imports), then the functions named below are wrapped
through little-used C functions of the interpreter (bench/callgrind_inclusive.py's trampolines) and the bake is
run again: callgrind_annotate's inclusive counts of those C functions are the second bake's
`separate_chains` (the avoidance: starmap_next), `avoid.proxy_distance` (every look's distances: calliter_iternext)
and `hulls.capsule_to_smooth` (the smooth trunk's distance, with ROBOT_RETARGET_SMOOTH_TRUNK=1: _operator_call).

    [ROBOT_RETARGET_SMOOTH_TRUNK=1] PYTHONHASHSEED=0 valgrind --tool=callgrind --callgrind-out-file=/tmp/cg.out \\
        .venv/bin/python bench/collision_avoid_split.py hop
    callgrind_annotate --inclusive=yes /tmp/cg.out | grep -E "starmap_next|calliter_iternext|_operator_call"
"""
from __future__ import annotations

import os
import sys
from dataclasses import replace
from pathlib import Path

for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[var] = "1"
HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE)]

import clips  # noqa: E402
from callgrind_inclusive import TRAMPOLINES, wrap  # noqa: E402
from core.collision import collision_pairs  # noqa: E402
from core.model.kinematics import KinematicTree  # noqa: E402
from core.model.urdf import parse_urdf  # noqa: E402
from core.retarget import auto_map, retarget  # noqa: E402

TARGETS = ("core.chains.separation:separate_chains", "core.collision.hulls:proxy_distance",
           "core.collision.hulls:capsule_to_smooth")


def main() -> None:
    clip = sys.argv[1] if len(sys.argv) > 1 else "hop"
    tree = KinematicTree(parse_urdf(clips.ROBOTS["g1"]))
    collision_pairs(tree)
    motion = clips.load(clips.HOP if clip == "hop" else clips.WALK)
    mapping = auto_map(motion, tree)
    mapping.settings = replace(mapping.settings, avoid_self_collision=True)
    retarget(motion, tree, mapping, contacts="auto")
    for spec, (c_name, trampoline) in zip(TARGETS, TRAMPOLINES):
        wrap(spec, trampoline)
        print(f"{spec}: {c_name}")
    retarget(motion, tree, mapping, contacts="auto")


if __name__ == "__main__":
    main()
