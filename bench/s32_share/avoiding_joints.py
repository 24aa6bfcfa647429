#!/usr/bin/env python3
"""The avoiding bakes' joints (G1/H1 walk/hop: q and unplanted.q, rad) saved to DIR/{robot}_{clip}[_u].npy, with
their figures: two trees' files `cmp` equal when a change keeps every joint to the bit.

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 .venv/bin/python bench/s32_share/avoiding_joints.py DIR
    for f in BEFORE/*.npy; do cmp $f AFTER/$(basename $f); done
"""
from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent.parent), str(HERE.parent)]
import clips  # noqa: E402


def main() -> None:
    from core.model.kinematics import KinematicTree
    from core.model.urdf import parse_urdf
    from core.retarget import auto_map, retarget
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    for robot in ("g1", "h1"):
        tree = KinematicTree(parse_urdf(clips.ROBOTS[robot]))
        for clip in ("hop", "walk"):
            motion = clips.load(clips.HOP if clip == "hop" else clips.WALK)
            mapping = auto_map(motion, tree)
            mapping.settings = replace(mapping.settings, avoid_self_collision=True)
            result = retarget(motion, tree, mapping, contacts="auto")
            np.save(out / f"{robot}_{clip}.npy", result.q)
            if result.unplanted is not None:
                np.save(out / f"{robot}_{clip}_u.npy", result.unplanted.q)
            report = result.report
            print(robot, clip, f"colliding {report['self_collision_pct']:.2f} %, "
                  f"limbs {report['limb_direction_error_deg']:.4f} deg", flush=True)


if __name__ == "__main__":
    main()
