#!/usr/bin/env python3
"""Gait generator figures and speed (issue 12): the bundled walk onto G1 and H1 at 200 Hz through
core.balance.gait.generate_gait, its report against the issue's targets, the time for a 10 s clip
(the walk with its first and last frame held: standing before and after), and the whole
`tools/robot-retarget gait` command on the walk (start-up and import included), once.

    .venv/bin/python bench/bench_gait.py
"""
from __future__ import annotations

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
from core.balance.gait import generate_gait  # noqa: E402
from core.model.kinematics import KinematicTree  # noqa: E402
from core.model.urdf import parse_urdf  # noqa: E402
from core.motion.source import SourceMotion  # noqa: E402
from core.retarget import auto_map  # noqa: E402

TARGETS = [("multibody ZMP RMS to target", "multibody_zmp_rms_error_m", "<= 10 mm", 1000, "mm"),
           ("worst support margin", "min_support_margin_m", ">= 10 mm", 1000, "mm"),
           ("samples with ZMP outside", "zmp_outside_support_pct", "0 %", 1, "%"),
           ("stance slide", "stance_slide_m", "< 1 mm", 1000, "mm"),
           ("cart-table ZMP RMS to target", "zmp_rms_error_m", "-", 1000, "mm")]


def held(motion: SourceMotion, seconds: float) -> SourceMotion:
    """The clip with its first and last frames held so that it lasts `seconds`."""
    extra = max(0, int(round(seconds * motion.fps)) - motion.frames)
    index = np.r_[np.zeros(extra // 2, int), np.arange(motion.frames), np.full(extra - extra // 2, motion.frames - 1)]
    return SourceMotion(motion.bone_names, motion.parents, motion.heads[index], motion.tails[index],
                        motion.root_rotation[index], motion.rest_heads, motion.rest_tails, motion.rest_root_rotation,
                        motion.fps, motion.name)


def main() -> None:
    walk = clips.load(clips.WALK)
    for robot in ("g1", "h1"):
        tree = KinematicTree(parse_urdf(clips.ROBOTS[robot]))
        mapping = auto_map(walk, tree)
        started = time.perf_counter()
        report = generate_gait(walk, tree, mapping).report
        seconds = time.perf_counter() - started
        print(f"{robot}: walk ({walk.frames / walk.fps:.1f} s) at {report['rate_hz']:.0f} Hz in {seconds:.2f} s; "
              f"{report['steps']} steps; travel {report['travel_m']:.2f} m of the scaled source's "
              f"{report['source_travel_m']:.2f} m ({100 * report['travel_m'] / report['source_travel_m']:.0f} %)")
        for label, key, target, scale, unit in TARGETS:
            print(f"    {label}: {scale * report[key]:.1f} {unit} (target {target})")
    tree = KinematicTree(parse_urdf(clips.ROBOTS["g1"]))
    ten = held(walk, 10.0)
    mapping = auto_map(ten, tree)
    started = time.perf_counter()
    generate_gait(ten, tree, mapping)
    print(f"g1: a 10 s clip at 200 Hz generated in {time.perf_counter() - started:.2f} s (target under 2 s)")
    with tempfile.TemporaryDirectory() as folder:
        started = time.perf_counter()
        subprocess.run([str(clips.ROOT / "tools" / "robot-retarget"), "gait", "--source", str(clips.WALK),
                        "--robot", str(clips.ROBOTS["g1"]), "--out", str(Path(folder) / "gait.csv")],
                       check=True, capture_output=True)
        print(f"g1: tools/robot-retarget gait on the walk: {time.perf_counter() - started:.2f} s whole command")


if __name__ == "__main__":
    main()
