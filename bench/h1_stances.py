#!/usr/bin/env python3
"""The bundled walk's gait onto a robot, stance by stance (issue 12): how far each stance foot slides
(as the report counts it) and tilts, and where its ankle pitch stands at a limit; then each step's
length and width and the waist's height at its touch-down.

    .venv/bin/python bench/h1_stances.py [--robot h1|g1] [--sagittal-waist]

About 10 s for the H1 (20 s with --sagittal-waist, GaitSettings.sagittal_waist), one BLAS thread. Without
the flag the waist is held upright (sagittal_waist=False), not the H1's default rolled waist.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):  # one core: before numpy loads BLAS
    os.environ[var] = "1"

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from h1_gait_phases import run_gait  # noqa: E402  (its clips puts the repository on the path)
import core.balance.gait as gait  # noqa: E402
import core.balance.gait_report as gait_report  # noqa: E402
from core.balance.legs import pose_errors  # noqa: E402
from core.feet.contacts import flags_to_intervals  # noqa: E402
from core.model.kinematics import KinematicTree  # noqa: E402
from core.model.transforms import pose_matrices  # noqa: E402

AT_LIMIT_RAD = 0.01  # an ankle this near its limit stands at it


def stances(tree: KinematicTree, plan, balanced) -> None:
    root = pose_matrices(plan.root_rot, balanced.root_position)
    poses = tree.poses(balanced.q, root, list(plan.paths))
    print("stance            slide     tilt    ankle pitch (its range)      at its limit")
    for leg in plan.legs:
        path, ankle = plan.paths[leg.foot], leg.columns[-1]
        low, high = tree.lower[ankle], tree.upper[ankle]
        _, tilt, _ = pose_errors(tree, [leg], balanced.q, root, {leg.foot: path.poses})
        for start, end in flags_to_intervals(path.down):
            slide = gait_report.stance_slide(plan.bodies[leg.foot].world(poses[leg.foot][start:end]),
                                      plan.bodies[leg.foot].radius)
            angle = balanced.q[start:end, ankle]
            stuck = np.flatnonzero((angle <= low + AT_LIMIT_RAD) | (angle >= high - AT_LIMIT_RAD))
            where = f"{plan.times[start + stuck[0]]:.2f}-{plan.times[start + stuck[-1]]:.2f} s" if len(stuck) else ""
            print(f"{plan.sides[leg.foot]:5s} {plan.times[start]:5.2f}-{plan.times[end - 1]:5.2f} s "
                  f"{1000 * slide:6.1f} mm {np.degrees(tilt[start:end].max()):5.1f} deg  "
                  f"{angle.min():+.2f} to {angle.max():+.2f} ({low:+.2f}, {high:+.2f})  {where}")


def steps(plan, balanced) -> None:
    """Each touch-down: the step from the other foot's last stance, in that foot's frame."""
    landings = sorted((plan.times[start], plan.sides[link], plan.paths[link].poses[start])
                      for link in plan.paths for start, _ in flags_to_intervals(plan.paths[link].down))
    last = {}
    print("touch-down  foot   ahead    across   waist height")
    for time_s, side, pose in landings:
        other = last.get("right" if side == "left" else "left")
        if other is not None:
            forward = other[:2, 0] / np.linalg.norm(other[:2, 0])
            rel = pose[:2, 3] - other[:2, 3]
            row = int(round(time_s / (plan.times[1] - plan.times[0])))
            print(f"{time_s:6.2f} s    {side:5s} {rel @ forward:+.3f} m {abs(rel[0] * forward[1] - rel[1] * forward[0]):.3f} m  "
                  f"{balanced.root_position[row, 2]:.3f} m")
        last[side] = pose


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--robot", default="h1", choices=["h1", "g1"])
    parser.add_argument("--sagittal-waist", action="store_true", help="GaitSettings(sagittal_waist=True)")
    args = parser.parse_args()
    run = run_gait(args.robot, gait.GaitSettings(sagittal_waist=args.sagittal_waist))
    tree, plan, balanced, r = run.tree, run.plan, run.balanced, run.report
    b = plan.bounds
    print(f"{args.robot} (sagittal_waist {'on' if args.sagittal_waist else 'off'}): multibody ZMP RMS "
          f"{1000 * r['multibody_zmp_rms_error_m']:.1f} mm, worst margin {1000 * r['min_support_margin_m']:.0f} mm, "
          f"outside {r['zmp_outside_support_pct']:.1f} %, slide {1000 * r['stance_slide_m']:.1f} mm, tilt "
          f"{r['stance_tilt_deg']:.1f} deg, {r['steps']} steps, travel {r['travel_m']:.2f} of {r['source_travel_m']:.2f} m")
    print(f"step bounds: {b.forward_m:.3f} m forward, {b.back_m:.3f} m back, {b.width_min_m:.3f}-{b.width_max_m:.3f} m "
          f"across, the waist leaning {100 * b.lean:.0f} % of the way toward a foot")
    stances(tree, plan, balanced)
    steps(plan, balanced)


if __name__ == "__main__":
    main()
