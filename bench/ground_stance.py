#!/usr/bin/env python3
"""Bakes with the feet not planted (contacts off) grounded as now, by the clip's lowest foot frame, against
a ground read from the feet's stance-like frames (a foot's lowest point moving under 0.1 m/s): per robot
and clip, how high the feet stand on 3 of 4 frames, how many frames a foot would then be 2 cm or more
under the ground, and how many stance frames stand within 1 cm of it. Nothing is changed by this: it
measures whether such a ground would do better (README "Still open", session 20).

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 .venv/bin/python bench/ground_stance.py
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
import core.retarget.pipeline as pipeline  # noqa: E402
from core.feet.geometry import SLIDE_SPEED_M_S, _contact_point_speed  # noqa: E402
from core.model.kinematics import KinematicTree  # noqa: E402
from core.model.transforms import pose_matrices  # noqa: E402
from core.model.urdf import parse_urdf  # noqa: E402
from core.motion.bvh import load_bvh  # noqa: E402
from core.retarget import auto_map, retarget  # noqa: E402

ROBOTS = {"g1": ROOT / "data/robots/g1/unitree_g1_29dof.urdf", "h1": ROOT / "tests/data/robots/unitree_h1_19dof.urdf"}
CLIPS = {"walk": ROOT / "data/motion/cmu_131_01_walk_m.bvh", "hop": ROOT / "tests/data/motion/cmu_131_03_hop.bvh"}


def main() -> None:
    seen: dict = {}
    ground = pipeline._ground

    def kept(tree, plans, legs, q, root_rot, root_pos, settings, warnings):
        out = ground(tree, plans, legs, q, root_rot, root_pos, settings, warnings)
        root = pose_matrices(root_rot, out)
        poses = [tree.link_transform(q, leg.link, root) for leg in legs]
        seen["heights"] = np.array([leg.body.lowest(p) for leg, p in zip(legs, poses)])  # (feet, F) m
        seen["speeds"] = np.array([_contact_point_speed(leg.body, p, seen["fps"]) for leg, p in zip(legs, poses)])
        return out

    pipeline._ground = kept
    for robot, urdf in ROBOTS.items():
        tree = KinematicTree(parse_urdf(urdf))
        for clip, path in CLIPS.items():
            motion = load_bvh(path).to_source_motion()
            seen["fps"] = motion.fps
            report = retarget(motion, tree, auto_map(motion, tree), contacts=None).report
            heights, lowest = seen["heights"], seen["heights"].min(axis=0)
            standing = heights[seen["speeds"] < SLIDE_SPEED_M_S]
            print(f"{robot} {clip}, lowest frame (now): feet {100 * np.percentile(lowest, 25):.1f} cm up on 3 of 4 "
                  f"frames, contact_preserved_pct {report['contact_preserved_pct']:.1f}")
            for name, level in (("stance median", np.median(standing)), ("stance p25", np.percentile(standing, 25)),
                                ("stance p10", np.percentile(standing, 10))):
                moved = lowest - level
                print(f"  {name} (+{100 * level:.1f} cm): {100 * np.percentile(moved, 25):.1f} cm on 3 of 4 frames, "
                      f"{100 * np.mean(moved < -0.02):.1f} % of frames 2+ cm under (deepest {100 * moved.min():.1f} cm), "
                      f"stance within 1 cm {100 * np.mean(np.abs(standing - level) <= 0.01):.0f} %")


if __name__ == "__main__":
    main()
