#!/usr/bin/env python3
"""The H1's waist on its roll-yaw family (core.balance.sagittal, GaitSettings.sagittal_waist, on by
default for its legs since 2026-12-02): how far it rolls and yaws with both soles flat, by stance width, and the gait's figures with it.

    .venv/bin/python bench/h1_family.py [--no-gait]

1. Both soles flat and parallel, side by side at a width, the waist 5 cm below its built height:
   the largest roll with the waist's yaw held straight, and the largest yaw with it upright (both
   within the clamps sagittal.py uses: roll 0.4, yaw 0.33 rad).
2. The bundled walk's gait with the waist placed on the family (sagittal_waist on, one BLAS thread):
   the report's figures and its CPU time, and how
   far the CoM stays from the target ZMP where the waist rolls to its clamp.
"""
from __future__ import annotations

import os
import sys
import time
from pathlib import Path

for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):  # one core: before numpy loads BLAS
    os.environ[var] = "1"

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import clips  # noqa: E402
from core.balance.inertia import MassModel  # noqa: E402
from core.balance.legs import leg_iks  # noqa: E402
from core.balance.planar_leg import planar_legs  # noqa: E402
from core.balance.sagittal import SagittalWaist, _Samples  # noqa: E402
from core.balance.support import foot_bodies, foot_links  # noqa: E402
from core.feet.geometry import standing_rotation  # noqa: E402
from core.model.kinematics import KinematicTree  # noqa: E402
from core.model.urdf import parse_urdf  # noqa: E402

WIDTHS_M = (0.405, 0.40, 0.395, 0.39, 0.385, 0.38)


def reach_by_width(tree: KinematicTree) -> None:
    feet = foot_links(tree)
    zero = tree.zero_pose()
    standing = {link: standing_rotation(body, zero[link, :3, :3]) for link, body in zip(feet, foot_bodies(tree, feet))}
    legs = leg_iks(tree, feet, standing)
    planar = planar_legs(tree, legs)
    model = MassModel.build(tree)
    q = np.zeros((1, tree.dof))
    one, none = np.ones(1), np.zeros(1)
    print("width (m)  roll reach (rad)  yaw reach (rad)  arccos(width / hips)")
    for width in WIDTHS_M:
        goals = []
        for p in planar:
            goal = np.eye(4)[None].copy()
            goal[0, :3, :3] = standing[p.leg.foot]
            goal[0, :3, 3] = [0.0, p.left * width / 2, zero[p.leg.foot, 2, 3] - zero[0, 2, 3]]
            goals.append(goal)
        waist = SagittalWaist(tree, planar, model, q, {p.leg.foot: one for p in planar}, 0.01)
        heads = [q[:, p.head_columns] for p in planar]
        held = _Samples(np.zeros((1, 2)), none - 0.05, np.eye(3)[None], np.array([[0.0, 1.0, 0.0]]), np.zeros((1, 3)),
                        goals, [30.0 * one] * 2, none, none, none, 10.0 * one, none, np.full(1, -1), none,
                        none - 0.4, none + 0.4)
        roll = waist._fit(np.array([[0.0, 0.3, 0.0]]), np.ones(3, bool), held, heads)[0][0, 1]
        held.yaw_w, held.roll_w = 0.02 * one, 10.0 * one
        yaw = waist._fit(np.array([[0.0, 0.0, 0.3]]), np.ones(3, bool), held, heads)[0][0, 2]
        hips = 2 * abs(zero[tree.link_index("left_hip_pitch_link"), 1, 3])
        print(f"{width:.3f}      {abs(roll):.3f}             {abs(yaw):.3f}            {np.arccos(min(1, width / hips)):.3f}")


def gait_figures(tree: KinematicTree) -> None:
    from scipy.spatial.transform import Rotation

    from core.balance.gait import GaitSettings, generate_gait
    from core.retarget import auto_map

    walk = clips.load(clips.WALK)
    start = time.process_time()
    result = generate_gait(walk, tree, auto_map(walk, tree), settings=GaitSettings(sagittal_waist=True))
    cpu = time.process_time() - start
    r = result.report
    print(f"gait (sagittal_waist on, {cpu:.1f} s of CPU): multibody ZMP RMS {1000 * r['multibody_zmp_rms_error_m']:.0f} mm, worst margin "
          f"{1000 * r['min_support_margin_m']:.0f} mm, outside {r['zmp_outside_support_pct']:.1f} %, slide "
          f"{1000 * r['stance_slide_m']:.1f} mm, tilt {r['stance_tilt_deg']:.1f} deg, travel {r['travel_m']:.2f} of "
          f"{r['source_travel_m']:.2f} m, waist height change {100 * r['waist_height_change_m']:.0f} cm")
    roll = Rotation.from_matrix(result.root_rotation).as_euler("ZYX")[:, 2]
    gap = np.linalg.norm(result.com[:, :2] - result.target_zmp, axis=1)
    clamp = np.abs(roll) > 0.38
    if clamp.any():
        print(f"waist rolled to its clamp on {100 * clamp.mean():.1f} % of samples; the CoM there "
              f"{100 * gap[clamp].min():.1f}-{100 * np.median(gap[clamp]):.1f} cm (least, median) from the target ZMP")


def main() -> None:
    tree = KinematicTree(parse_urdf(clips.ROBOTS["h1"]))
    reach_by_width(tree)
    if "--no-gait" not in sys.argv:
        gait_figures(tree)


if __name__ == "__main__":
    main()
