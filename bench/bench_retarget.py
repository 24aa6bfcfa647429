#!/usr/bin/env python3
"""Retarget speed: the bundled CMU walk onto the Unitree G1, all auto-mapped chains.

Measures the whole retarget without planted feet (contacts "off"; the report's
frames_per_second, every stage) on one core, with the chain solve's share;
BLAS threads are pinned to 1 before numpy loads. Prints frames/s for each
repeat and the best, plus the fidelity figures of the report. Planted feet
(the default bake): bench/bench_bake.py.

    .venv/bin/python bench/bench_retarget.py [--repeats 5] [--robot URDF] [--clip BVH]
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[var] = "1"

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from core.retarget.automap import auto_map  # noqa: E402
from core.motion.bvh import load_bvh  # noqa: E402
from core.model.kinematics import KinematicTree  # noqa: E402
from core.retarget.pipeline import retarget  # noqa: E402
from core.model.urdf import parse_urdf  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--robot", default=str(ROOT / "data/robots/g1/unitree_g1_29dof.urdf"))
    parser.add_argument("--clip", default=str(ROOT / "data/motion/cmu_131_01_walk_m.bvh"))
    args = parser.parse_args()
    tree = KinematicTree(parse_urdf(args.robot))
    motion = load_bvh(args.clip).to_source_motion()
    mapping = auto_map(motion, tree)
    rates = []
    for _ in range(args.repeats):
        report = retarget(motion, tree, mapping).report
        rates.append(report["frames_per_second"])
        print(f"{report['frames']} frames in {report['total_seconds']:.3f} s (chain solve {report['solve_seconds']:.3f} s):"
              f" {rates[-1]:.0f} frames/s")
    print(f"best {max(rates):.0f} frames/s, median {np.median(rates):.0f} frames/s "
          f"({len(mapping.chains)} chains, {tree.dof} joints)")
    for chain in report["chains"]:
        print(f"  {chain['name']:<11} tip-direction error {chain['tip_direction_error_deg']:5.2f} deg, "
              f"mean distance {chain['mean_distance']:.3f}")
    print(f"limit violations {report['limit_violations']}, max speed / velocity limit "
          f"{report['max_speed_ratio']:.2f}, jerk {report['jerk_before']:.0f} -> {report['jerk_after']:.0f} rad/s^3")


if __name__ == "__main__":
    main()
