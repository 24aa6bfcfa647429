#!/usr/bin/env python3
"""The bundled walk's gait at other control cycles (issue 12): 100, 200 and 250 Hz onto a robot, and the
same clip moved a micrometre or two along x (near-equal starts: the H1's passes amplify such a difference
to millimetres, so one run's figure is one draw).

    .venv/bin/python bench/gait_control_rates.py [--robot h1|g1] [--rates 100 200 250] [--moved 0 1e-6 2e-6]

About half a minute a run for the H1 on an idle core (10 s CPU at 100 Hz, 12 s at 250 Hz).
"""
from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import time
from pathlib import Path

for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):  # one core: before numpy loads BLAS
    os.environ[var] = "1"

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(ROOT))
import clips  # noqa: E402
from core.balance.gait import GaitSettings, generate_gait  # noqa: E402
from core.model.kinematics import KinematicTree  # noqa: E402
from core.model.urdf import parse_urdf  # noqa: E402
from core.retarget import auto_map  # noqa: E402


def moved(motion, dx_m: float):
    """The clip moved dx_m metres along x (its bones' heads and tails; the rest pose as it was)."""
    if dx_m == 0.0:
        return motion
    heads, tails = motion.heads.copy(), motion.tails.copy()
    heads[..., 0] += dx_m
    tails[..., 0] += dx_m
    return dataclasses.replace(motion, heads=heads, tails=tails)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--robot", choices=sorted(clips.ROBOTS), default="h1")
    parser.add_argument("--rates", type=float, nargs="+", default=[100.0, 200.0, 250.0])
    parser.add_argument("--moved", type=float, nargs="+", default=[0.0], help="metres along x")
    args = parser.parse_args()
    tree = KinematicTree(parse_urdf(clips.ROBOTS[args.robot]))
    walk = clips.load(clips.WALK)
    for rate in args.rates:
        for dx in args.moved:
            motion = moved(walk, dx)
            start = time.process_time()
            report = generate_gait(motion, tree, auto_map(motion, tree), settings=GaitSettings(period_s=1.0 / rate)).report
            cpu = time.process_time() - start
            print(f"{args.robot} {rate:5.0f} Hz, moved {1e6 * dx:3.0f} um: ZMP RMS "
                  f"{1000 * report['multibody_zmp_rms_error_m']:4.1f} mm, worst margin "
                  f"{1000 * report['min_support_margin_m']:+6.1f} mm, outside {report['zmp_outside_support_pct']:4.2f} %, "
                  f"slide {1000 * report['stance_slide_m']:5.2f} mm, tilt {report['stance_tilt_deg']:.1f} deg, "
                  f"{report['steps']} steps, travel {100 * report['travel_m'] / report['source_travel_m']:.0f} %, "
                  f"{cpu:.1f} s CPU", flush=True)


if __name__ == "__main__":
    main()
