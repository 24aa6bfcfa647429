#!/usr/bin/env python3
"""Per-limb figures of the bundled walk and hop onto a robot, avoidance off and on: colliding %, the mean
limb direction error and each limb's, the CPU of each bake, and the pairs that collide with avoidance off.

    .venv/bin/python bench/collision_bylimb.py [g1|h1]              (capsules)
    ROBOT_RETARGET_SMOOTH_TRUNK=1 .venv/bin/python bench/collision_bylimb.py g1   (smooth trunk proxies)
    DESCENT=1 ...                                                 (the descended polish on)
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import clips  # noqa: E402
import core.chains.separation as separation  # noqa: E402
from core.collision import collision_pairs  # noqa: E402
from core.model.kinematics import KinematicTree  # noqa: E402
from core.model.urdf import parse_urdf  # noqa: E402
from core.retarget import auto_map, retarget  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("robot", nargs="?", default="g1", choices=sorted(clips.ROBOTS))
    args = parser.parse_args()
    if os.environ.get("DESCENT"):
        separation.POLISH_ROOM = separation.POLISH_DESCENT = True
    tree = KinematicTree(parse_urdf(clips.ROBOTS[args.robot]))
    collision_pairs(tree)
    for name, path in (("walk", clips.WALK), ("hop", clips.HOP)):
        motion = clips.load(path)
        mapping = auto_map(motion, tree)
        for avoid in (False, True):
            mapping.settings = replace(mapping.settings, avoid_self_collision=avoid)
            started = time.process_time()
            report = retarget(motion, tree, mapping, contacts="auto").report
            limbs = {k: round(v, 2) for k, v in report["limb_direction_error_by_limb"].items()}
            print(name, "on" if avoid else "off", f"{time.process_time() - started:.2f} s",
                  f"{report['self_collision_pct']:.2f} %", f"{report['limb_direction_error_deg']:.3f} deg", limbs,
                  "" if avoid else report["self_collision_pairs"], flush=True)


if __name__ == "__main__":
    main()
