#!/usr/bin/env python3
"""Rate invariance of the gait (issue 12): the bundled walk resampled to 30 and 60 Hz (tests/variants.py)
against its own 120 Hz, onto a robot at 200 Hz: issue 12's figures for each, and the CPU time.

    .venv/bin/python bench/gait_rates.py [--robot g1|h1]   (about a minute a robot)

Each rate is written to a BVH file and read back, as a clip from elsewhere comes (its frame rate then
30.000003 Hz, from the file's frame time); the 30 Hz clip is also run as resampled in memory (exactly
30 Hz), which lands its feet on other cycles.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):  # one core: before numpy loads BLAS
    os.environ[var] = "1"

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(ROOT))
import clips  # noqa: E402
from core.balance.gait import generate_gait  # noqa: E402
from core.model.kinematics import KinematicTree  # noqa: E402
from core.model.urdf import parse_urdf  # noqa: E402
from core.motion.bvh import load_bvh  # noqa: E402
from core.retarget import auto_map  # noqa: E402
from tests.variants import resampled, write_bvh  # noqa: E402


def line(label: str, motion, tree: KinematicTree) -> str:
    start = time.process_time()
    report = generate_gait(motion, tree, auto_map(motion, tree)).report
    cpu = time.process_time() - start
    return (f"{label:<22} slide {1000 * report['stance_slide_m']:6.2f} mm, worst margin "
            f"{1000 * report['min_support_margin_m']:+6.1f} mm, outside {report['zmp_outside_support_pct']:4.1f} %, "
            f"ZMP RMS {1000 * report['multibody_zmp_rms_error_m']:4.1f} mm, {report['steps']} steps, travel "
            f"{100 * report['travel_m'] / report['source_travel_m']:.0f} %, {cpu:.1f} s CPU")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--robot", choices=sorted(clips.ROBOTS), default="g1")
    args = parser.parse_args()
    tree = KinematicTree(parse_urdf(clips.ROBOTS[args.robot]))
    walk = load_bvh(clips.WALK)
    with tempfile.TemporaryDirectory() as folder:
        for fps in (30, 60, 120):
            clip = resampled(walk, fps) if fps != 120 else walk
            motion = load_bvh(write_bvh(clip, Path(folder) / f"walk_{fps}.bvh")).to_source_motion()
            print(f"{args.robot}: " + line(f"walk at {fps} Hz (file)", motion, tree), flush=True)
    print(f"{args.robot}: " + line("walk at 30 Hz (memory)", resampled(walk, 30).to_source_motion(), tree))


if __name__ == "__main__":
    main()
