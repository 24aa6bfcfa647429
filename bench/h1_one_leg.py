#!/usr/bin/env python3
"""Can a robot stand still on one flat foot? The least distance across from a standing foot's centre
line that its whole-body CoM reaches in any posture within its joint limits (the foot flat on the
ground, the other foot at least 2 cm up), against the sole's half-width (issue 12's one-leg hold).

    .venv/bin/python bench/h1_one_leg.py [--robot h1|g1] [--starts 30]   (about a minute)

The robot is hung from its right foot (core.model.reroot), so every posture keeps that foot flat; the
CoM's offset toward the robot's left is minimised from random starts (L-BFGS-B in the joint limits),
once with every joint free and once with the arms and torso held at zero. A CoM that stays outside the
sole's half-width cannot be held there: over a hold of seconds the ZMP's mean is the CoM's.
"""
from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from pathlib import Path

for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):  # one core: before numpy loads BLAS
    os.environ[var] = "1"

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(ROOT))
import numpy as np  # noqa: E402
from scipy.optimize import minimize  # noqa: E402

import clips  # noqa: E402
from core.balance.inertia import MassModel, centre_of_mass  # noqa: E402
from core.balance.support import foot_bodies, foot_links  # noqa: E402
from core.model.kinematics import KinematicTree  # noqa: E402
from core.model.reroot import hung_from  # noqa: E402
from core.model.transforms import pose_matrices  # noqa: E402
from core.model.urdf import parse_urdf  # noqa: E402

LIFT_M = 0.02  # the lifted foot's lowest point at least this high
LEG_WORDS = ("hip", "knee", "ankle")


def least_offset(hung: KinematicTree, lifted, lower: np.ndarray, upper: np.ndarray, centre: np.ndarray,
                 starts: int) -> tuple[float, np.ndarray]:
    """The least CoM offset toward +y (metres, in the standing foot's frame, from centre (3,)) over
    postures q in [lower, upper], the lifted foot's body above LIFT_M, its CoM over the foot's length."""
    model = MassModel.build(hung)
    root = pose_matrices(np.eye(3)[None], np.zeros((1, 3)))

    def cost(x: np.ndarray) -> float:
        com = centre_of_mass(hung, x[None], root, model)[0] - centre
        points = lifted.world(hung.link_transform(x[None], lifted.link, root))[0]
        low = float((points[:, 2] - lifted.radius).min())
        return com[1] + 10.0 * com[0] ** 2 + 100.0 * max(0.0, LIFT_M - low) ** 2

    rng = np.random.default_rng(0)
    best = None
    for _ in range(starts):
        start = np.clip(rng.normal(0.0, 0.8, len(lower)), lower, upper)
        out = minimize(cost, start, bounds=list(zip(lower, upper)), method="L-BFGS-B")
        best = out if best is None or out.fun < best.fun else best
    com = centre_of_mass(hung, best.x[None], root, model)[0] - centre
    return float(com[1]), best.x


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--robot", choices=sorted(clips.ROBOTS), default="h1")
    parser.add_argument("--starts", type=int, default=30)
    args = parser.parse_args()
    tree = KinematicTree(parse_urdf(clips.ROBOTS[args.robot]))
    feet = foot_links(tree)
    names = {tree.link_names[link]: link for link in feet}
    right = next(name for name in names if "right" in name)
    left = next(name for name in names if "left" in name)
    hung, _ = hung_from(tree, right)
    bodies = {tree.link_names[body.link]: body for body in foot_bodies(tree, feet)}
    stand, lift = bodies[right], bodies[left]
    lift = dataclasses.replace(lift, link=hung.link_index(left))  # the same points, in the re-hung tree's numbering
    sole = stand.points[:, 2] - stand.radius <= (stand.points[:, 2] - stand.radius).min() + 1e-4
    centre = np.r_[stand.points[sole, :2].mean(axis=0), 0.0]
    half = float((np.abs(stand.points[sole, 1] - centre[1]) + stand.radius[sole]).max())
    print(f"{args.robot}: standing on {right}, its sole {1000 * half:.1f} mm either side of its centre line")
    legs = np.array([any(word in name for word in LEG_WORDS) for name in hung.joint_names])
    for label, free in (("every joint free", np.ones(len(legs), dtype=bool)), ("arms and torso at zero", legs)):
        lower, upper = np.where(free, hung.lower, 0.0), np.where(free, hung.upper, 0.0)
        offset, q = least_offset(hung, lift, lower, upper, centre, args.starts)
        at = [f"{name} {value:+.2f}" for name, value, lo, hi in zip(hung.joint_names, q, lower, upper)
              if hi > lo and min(value - lo, hi - value) < 1e-3]
        print(f"  {label:<24} the CoM at least {1000 * offset:6.1f} mm across from the centre line "
              f"({'outside' if offset > half else 'inside'} the sole); at a limit: {', '.join(at)}")


if __name__ == "__main__":
    main()
