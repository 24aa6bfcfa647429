#!/usr/bin/env python3
"""Self-collision avoidance on the same motion written otherwise: each rest-pose variant of the walk's
and the hop's first 240 frames baked onto the G1 with avoidance on (and HOLD_AT_BOUND, as
tests/core/test_invariance_avoidance.py), its joints' RMS and largest difference from the original's
in degrees; with --sweep, the left arm's room made on inputs 0, 0.1, ..., 1 of the way from the
walk's original to its A-pose (tests/core/test_steady_continuity.py): the largest change between
neighbours, in radians (a jump shows there).

    .venv/bin/python bench/avoid_invariance.py [--sweep]
"""
from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import tempfile
from pathlib import Path

for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[var] = "1"
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from core.chains import corrections  # noqa: E402
from core.model.kinematics import KinematicTree  # noqa: E402
from core.model.urdf import parse_urdf  # noqa: E402
from core.motion.bvh import load_bvh  # noqa: E402
from core.retarget.automap import auto_map  # noqa: E402
from core.retarget.pipeline import retarget  # noqa: E402
from tests import variants as V  # noqa: E402
from tests.core.test_invariance import G1, REST_POSES, WALK, _rms_deg, _short  # noqa: E402
from tests.core.test_invariance_avoidance import HOP  # noqa: E402


def _bake(clip, tree, folder: Path):
    motion = load_bvh(V.write_bvh(clip, folder / "variant.bvh")).to_source_motion()
    mapping = auto_map(motion, tree)
    mapping.settings = dataclasses.replace(mapping.settings, avoid_self_collision=True)
    return retarget(motion, tree, mapping)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sweep", action="store_true", help="also the room made between two close inputs")
    args = parser.parse_args()
    corrections.HOLD_AT_BOUND = True
    tree = KinematicTree(parse_urdf(G1))
    with tempfile.TemporaryDirectory() as folder:
        for name, path in (("walk", WALK), ("hop", HOP)):
            clip = _short(load_bvh(path))
            base = _bake(clip, tree, Path(folder))
            for variant in sorted(REST_POSES):
                result = _bake(REST_POSES[variant](clip), tree, Path(folder))
                print(f"{name:<4} {variant:<20} {_rms_deg(result.q, base.q):.4f} deg RMS, at most "
                      f"{np.degrees(np.abs(result.q - base.q)).max():.2f} deg, colliding "
                      f"{result.report['self_collision_pct']:.1f} %", flush=True)
    if args.sweep:
        from tests.core import test_steady_continuity as T
        with tempfile.TemporaryDirectory() as folder:
            inputs = T.captured_inputs(lambda name: Path(tempfile.mkdtemp(dir=folder, prefix=name)))
            rooms = [T._room(inputs, t) for t in np.linspace(0.0, 1.0, 11)]
        steps = [np.abs(b - a).max() for a, b in zip(rooms, rooms[1:])]
        print("walk, original to A-pose in 10 steps: the room made moves at most "
              f"{max(steps):.4f} rad a step, {np.abs(rooms[-1] - rooms[0]).max():.4f} rad end to end")


if __name__ == "__main__":
    main()
