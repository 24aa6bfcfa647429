#!/usr/bin/env python3
"""Self-collision avoidance: save the joints of the bundled walk and hop baked onto the G1 and the
H1 with avoidance on (each clip's own mapping, planted feet), one .npy (F, n) rad per bake, to
compare a refactor's bakes with the code before it bit for bit (np.array_equal).

Pin the process, or two bakes of the same code may differ (docs/history/self_collision.md, What was tried):

    OPENBLAS_NUM_THREADS=1 PYTHONHASHSEED=0 setarch x86_64 -R .venv/bin/python bench/avoid_joints.py OUT
"""
from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from core.model.kinematics import KinematicTree  # noqa: E402
from core.model.urdf import parse_urdf  # noqa: E402
from core.motion.bvh import load_bvh  # noqa: E402
from core.retarget import auto_map, retarget  # noqa: E402

ROBOTS = {"g1": ROOT / "data/robots/g1/unitree_g1_29dof.urdf", "h1": ROOT / "tests/data/robots/unitree_h1_19dof.urdf"}
CLIPS = {"walk": ROOT / "data/motion/cmu_131_01_walk_m.bvh", "hop": ROOT / "tests/data/motion/cmu_131_03_hop.bvh"}


def main(out: Path) -> None:
    """Bake every robot and clip with avoidance on and save q as OUT/{robot}_{clip}.npy."""
    out.mkdir(parents=True, exist_ok=True)
    for robot, urdf in ROBOTS.items():
        tree = KinematicTree(parse_urdf(urdf))
        for clip, path in CLIPS.items():
            motion = load_bvh(path).to_source_motion()
            mapping = auto_map(motion, tree)
            mapping.settings = replace(mapping.settings, avoid_self_collision=True)
            q = retarget(motion, tree, mapping, contacts="auto").q
            np.save(out / f"{robot}_{clip}.npy", q)
            print(robot, clip, q.shape, flush=True)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
