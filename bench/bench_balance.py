#!/usr/bin/env python3
"""Balance readout speed: core.balance.balance_readout on the default bake of the walk (995 frames),
median of five calls after one warm-up, per robot; and the whole `tools/robot-retarget balance`
command on that bake's CSV (start-up included), once.

    .venv/bin/python bench/bench_balance.py
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[var] = "1"

sys.path.insert(0, str(Path(__file__).resolve().parent))
import clips  # noqa: E402
from core.balance import balance_readout  # noqa: E402
from core.model.kinematics import KinematicTree  # noqa: E402
from core.model.transforms import pose_matrices  # noqa: E402
from core.model.urdf import parse_urdf  # noqa: E402
from core.motion.bake_csv import BakeTable, write_bake_csv  # noqa: E402
from core.retarget import auto_map, retarget  # noqa: E402


def main() -> None:
    walk = clips.load(clips.WALK)
    for robot in ("g1", "h1"):
        tree = KinematicTree(parse_urdf(clips.ROBOTS[robot]))
        result = retarget(walk, tree, auto_map(walk, tree), contacts="auto")
        root = pose_matrices(result.root_rotation, result.root_position)
        balance_readout(tree, result.q, root, result.fps)
        times = []
        for _ in range(5):
            started = time.perf_counter()
            readout = balance_readout(tree, result.q, root, result.fps)
            times.append(time.perf_counter() - started)
        print(f"{robot}: readout of {readout['frames']} frames in {1000 * sorted(times)[2]:.0f} ms (median of 5); "
              f"ZMP outside the support on {readout['zmp_outside_support_pct']:.0f} % of frames")
        if robot == "g1":
            with tempfile.TemporaryDirectory() as folder:
                csv = Path(folder) / "walk.csv"
                write_bake_csv(csv, BakeTable(result.joint_names, np.arange(len(result.q)) / result.fps,
                                              result.root_position, result.root_quaternion, result.q))
                started = time.perf_counter()
                subprocess.run([str(clips.ROOT / "tools" / "robot-retarget"), "balance", "--motion", str(csv),
                                "--robot", str(clips.ROBOTS[robot])], check=True, capture_output=True)
                print(f"g1: tools/robot-retarget balance on the walk's CSV: {time.perf_counter() - started:.2f} s "
                      "whole command")


if __name__ == "__main__":
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()  # --help says what it measures
    main()
