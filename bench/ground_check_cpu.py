#!/usr/bin/env python3
"""CPU of the planted check's first ground test (ground_candidates, then lowest_points as
core.feet.plant's _Check.body_depth) on a fresh G1 tree in a fresh process, for checkouts
alternated: what reading the bodies' meshes costs every bake command.

The joints and root are the G1's planted bake of each clip by this checkout (baked once, here);
each run parses the G1 again, so no mesh is read in advance. One BLAS thread, least of REPEATS
after a warm-up round, the load printed per round.

    .venv/bin/python bench/ground_check_cpu.py /tmp/before . [--repeats 7]
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from core.model.kinematics import KinematicTree  # noqa: E402
from core.model.transforms import pose_matrices  # noqa: E402
from core.model.urdf import parse_urdf  # noqa: E402
from core.motion.bvh import load_bvh  # noqa: E402
from core.retarget import auto_map, retarget  # noqa: E402

G1 = "data/robots/g1/unitree_g1_29dof.urdf"
CLIPS = {"walk": "data/motion/cmu_131_01_walk_m.bvh", "hop": "tests/data/motion/cmu_131_03_hop.bvh"}
RUN = r'''
import sys, time; sys.path.insert(0, ".")
import numpy as np
from core.model.kinematics import KinematicTree
from core.model.urdf import parse_urdf
from core.feet import geometry
tree = KinematicTree(parse_urdf(sys.argv[2])); saved = np.load(sys.argv[1])
feet = {i for name in ("left_ankle_roll_link", "right_ankle_roll_link")
        for i in geometry.subtree_links(tree, tree.link_index(name))}
start = time.process_time()
bodies = geometry.Bodies(tree)
extra = {"bodies": bodies} if "bodies" in geometry.ground_candidates.__code__.co_varnames else {}  # before s20-open
links = geometry.ground_candidates(tree, saved["q"], saved["root"], **extra)
geometry.lowest_points(tree, saved["q"], saved["root"], feet, bodies, links=links, exact_below=0.0)
print(time.process_time() - start)
'''


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("trees", nargs="+", type=Path)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    trees = [tree.resolve() for tree in args.trees]
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    times: dict = {}
    with tempfile.TemporaryDirectory() as out:
        for clip, path in CLIPS.items():
            tree = KinematicTree(parse_urdf(ROOT / G1))
            motion = load_bvh(ROOT / path).to_source_motion()
            result = retarget(motion, tree, auto_map(motion, tree), contacts="auto")
            np.savez(Path(out) / f"{clip}.npz", q=result.q, root=pose_matrices(result.root_rotation,
                                                                               result.root_position))
        for round_ in range(args.repeats + 1):
            for clip in CLIPS:
                for tree in trees if round_ % 2 else trees[::-1]:
                    run = subprocess.run([str(tree / ".venv/bin/python"), "-c", RUN, str(Path(out) / f"{clip}.npz"),
                                          G1], cwd=tree, env=env, check=True, capture_output=True, text=True)
                    if round_:
                        times.setdefault(clip, {}).setdefault(tree, []).append(float(run.stdout.split()[-1]))
            print(f"round {round_}: load {open('/proc/loadavg').read().split()[:3]}", flush=True)
    print("clip   " + "  ".join(f"{tree.name:>12}" for tree in trees) + "   (least CPU s)")
    for clip, per in times.items():
        print(f"{clip:5}  " + "  ".join(f"{min(per[tree]):12.3f}" for tree in trees))


if __name__ == "__main__":
    main()
