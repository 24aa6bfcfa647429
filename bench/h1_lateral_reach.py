#!/usr/bin/env python3
"""Can the H1 (legs without an ankle roll) walk with its soles flat and its ZMP over the stance
foot? Issue 12's third question, answered with numbers from the robot's own URDF.

    .venv/bin/python bench/h1_lateral_reach.py

1. Reach: how far sideways the whole-body centre of mass can go, found by optimisation over the
   pelvis pose and every joint (arms included, joint limits only, no self-collision: an upper
   bound), with both soles flat and still (double support, at the H1's own stance width and
   narrower) or with one sole flat (single support, the other leg anywhere).
2. Balance: how far the ZMP must at least leave its support (the stance sole in single
   support, the span between the soles in double support) for the best lateral motion within
   those reaches, for step timings from the
   bundled walk's and faster. A linear programme over the CoM's lateral path x and the upper
   body's roll angle r at 100 Hz, periodic over a step cycle, with the cart-table ZMP plus the
   upper body's own roll:

       p = x - (z_u / g) x'' - (I_u / (m g)) r''

   z_u is the upper body's CoM height (the highest point that moves sideways: the most ZMP per
   acceleration), I_u its roll inertia about its own CoM; x and r are bounded apart (their
   coupling dropped): a relaxation, so a shortfall above zero means no motion of the robot can
   balance that cycle with its soles flat.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
from scipy.optimize import linprog, minimize
from scipy.spatial.transform import Rotation

sys.path.insert(0, str(Path(__file__).resolve().parent))
import clips  # noqa: E402
from core.balance.inertia import GRAVITY, MassModel, centre_of_mass  # noqa: E402
from core.balance.legs import leg_iks  # noqa: E402
from core.balance.plan import sole_centre  # noqa: E402
from core.balance.support import foot_bodies, foot_links  # noqa: E402
from core.feet.geometry import standing_rotation  # noqa: E402
from core.model.kinematics import KinematicTree, ancestor_path  # noqa: E402
from core.model.transforms import pose_matrices  # noqa: E402
from core.model.urdf import parse_urdf  # noqa: E402

PERIOD_S = 0.01


class Robot:
    """The H1 standing: its feet, their level poses at its own stance width, its masses."""

    def __init__(self, path: Path):
        self.tree = KinematicTree(parse_urdf(path))
        self.model = MassModel.build(self.tree)
        self.feet = foot_links(self.tree)
        bodies = foot_bodies(self.tree, self.feet)
        zero = self.tree.zero_pose()
        self.level = {f: standing_rotation(b, zero[f, :3, :3]) for f, b in zip(self.feet, bodies)}
        self.stand = {f: zero[f].copy() for f in self.feet}
        for f in self.feet:
            self.stand[f][:3, :3] = self.level[f]
        # the sole's lateral extent about the foot link, standing level (points and their radius)
        self.sole = {}
        for f, body in zip(self.feet, bodies):
            lateral = (body.points @ self.level[f].T)[:, 1]
            self.sole[f] = (float((lateral - body.radius).min()), float((lateral + body.radius).max()))
        self.centre = {f: sole_centre(b, self.level[f]) for f, b in zip(self.feet, bodies)}
        self.left, self.right = sorted(self.feet, key=lambda f: -zero[f, 1, 3])
        self.legs = leg_iks(self.tree, self.feet, self.level)

    def com(self, v: np.ndarray) -> np.ndarray:
        root = pose_matrices(Rotation.from_rotvec(v[3:6]).as_matrix()[None], v[None, :3])
        return centre_of_mass(self.tree, v[None, 6:], root, self.model)[0]

    def foot_error(self, v: np.ndarray, foot: int, goal: np.ndarray) -> np.ndarray:
        root = pose_matrices(Rotation.from_rotvec(v[3:6]).as_matrix()[None], v[None, :3])
        pose = self.tree.link_transform(v[None, 6:], foot, root)[0]
        turn = Rotation.from_matrix(goal[:3, :3] @ pose[:3, :3].T).as_rotvec()
        return np.r_[pose[:3, 3] - goal[:3, 3], 0.2 * turn]

    def reach(self, goals: dict[int, np.ndarray], sign: float) -> tuple[float, float]:
        """The furthest the CoM goes along +y (sign 1) or -y (sign -1) with the feet in `goals`
        flat and still: (CoM y, worst foot error in metres)."""
        tree = self.tree
        best = (-np.inf, np.inf)
        for bend in (0.0, 0.4):  # two starts: straight and bent knees
            q = np.zeros(tree.dof)
            for leg in self.legs:
                if leg.knee >= 0:
                    q[leg.knee] = np.clip(np.sign(leg.bend or 1.0) * bend, tree.lower[leg.knee], tree.upper[leg.knee])
            v0 = np.r_[0.0, 0.0, -0.04 * bend / 0.4, 0.0, 0.0, 0.0, q]
            bounds = [(-0.5, 0.5)] * 3 + [(-1.0, 1.0)] * 3 + list(zip(tree.lower, tree.upper))
            cons = [{"type": "eq", "fun": (lambda v, f=f, g=g: self.foot_error(v, f, g))} for f, g in goals.items()]
            result = minimize(lambda v: -sign * self.com(v)[1], v0, method="SLSQP", bounds=bounds, constraints=cons,
                              options={"maxiter": 400, "ftol": 1e-10})
            error = max(float(np.abs(self.foot_error(result.x, f, g)[:3]).max()) for f, g in goals.items())
            if error < 1e-3 and sign * self.com(result.x)[1] > best[0]:
                best = (sign * float(self.com(result.x)[1]), error)
        return best

    def upper_body(self) -> tuple[float, float, float]:
        """Mass (kg), CoM height over the soles (m) and roll inertia about its own CoM (kg m^2) of
        everything above the hips, standing."""
        leg_links = {link for leg in self.legs for link in leg.links}
        poses = self.tree.forward(np.zeros((1, self.tree.dof)))[0]
        keep = [k for k, link in enumerate(self.model.links)
                if not any(a in leg_links for a in ancestor_path(self.tree.parent, 0, int(link)))]
        mass = self.model.mass[keep]
        rot = poses[self.model.links[keep], :3, :3]
        com = np.einsum("kij,kj->ki", rot, self.model.com_local[keep]) + poses[self.model.links[keep], :3, 3]
        centre = mass @ com / mass.sum()
        inertia = sum(r @ i @ r.T + m * (np.dot(c - centre, c - centre) * np.eye(3) - np.outer(c - centre, c - centre))
                      for r, i, m, c in zip(rot, self.model.inertia_local[keep], mass, com))
        ground = self.stand[self.left][2, 3] + self._sole_depth()
        return float(mass.sum()), float(centre[2] - ground), float(inertia[0, 0])

    def _sole_depth(self) -> float:
        body = foot_bodies(self.tree, [self.left])[0]
        return float(((body.points @ self.level[self.left].T)[:, 2] - body.radius).min())


def shortfall(single_s: float, double_s: float, sole: tuple[float, float], ds_reach: float, ss_reach: tuple,
              z_u: float, inertia_ratio: float, roll_max: float, ds_roll: float) -> float:
    """How far (metres) the ZMP must at least leave its support somewhere in a step cycle (double
    support, left single support, double support, right single support, periodic) for the best
    lateral CoM path x and upper-body roll r: |x| <= ds_reach in double support, x within
    ss_reach (toward, away from the stance foot) in single support, |r| <= roll_max (ds_roll in
    double support: 0 where both soles flat lock the pelvis). The support
    is the stance sole (sole: the left one's lateral range; mirrored on the right) in single
    support and the span between the soles in double support. 0 where the cycle can balance."""
    n_ds, n_ss = max(1, round(double_s / PERIOD_S)), max(1, round(single_s / PERIOD_S))
    phases = ["ds"] * n_ds + ["L"] * n_ss + ["ds"] * n_ds + ["R"] * n_ss
    n = len(phases)
    zmp = np.zeros((n, 2 * n + 1))  # variables: x (n), r (n), the shortfall s
    for k in range(n):
        for j, w in (((k - 1) % n, 1.0), (k, -2.0), ((k + 1) % n, 1.0)):
            zmp[k, j] -= z_u / GRAVITY * w / PERIOD_S ** 2
            zmp[k, n + j] -= inertia_ratio * w / PERIOD_S ** 2
        zmp[k, k] += 1.0
    rows, rhs, bounds, rolls = [], [], [], []
    toward, away = ss_reach
    for k, phase in enumerate(phases):
        if phase == "ds":
            lo, hi = -sole[1], sole[1]
            bounds.append((-ds_reach, ds_reach))
            rolls.append((-ds_roll, ds_roll))
        else:
            sign = 1.0 if phase == "L" else -1.0
            lo, hi = sorted((sign * sole[0], sign * sole[1]))
            bounds.append(tuple(sorted((sign * toward, -sign * away))))
            rolls.append((-roll_max, roll_max))
        below = zmp[k].copy()
        below[-1] = -1.0
        rows += [below, -zmp[k] - np.r_[np.zeros(2 * n), 1.0]]  # p - s <= hi, -p - s <= -lo
        rhs += [hi, -lo]
    bounds += rolls + [(0.0, None)]
    cost = np.zeros(2 * n + 1)
    cost[-1] = 1.0
    result = linprog(cost, A_ub=np.array(rows), b_ub=np.array(rhs), bounds=bounds, method="highs")
    return float(result.x[-1])


def walk_timing() -> tuple[float, float]:
    """Median single and double support of the bundled walk's gait on the H1 (seconds)."""
    from core.balance.gait import generate_gait
    from core.retarget import auto_map

    walk = clips.load(clips.WALK)
    tree = KinematicTree(parse_urdf(clips.ROBOTS["h1"]))
    report = generate_gait(walk, tree, auto_map(walk, tree)).report
    swings = [s for side in report["swing_phases"].values() for s in side]
    single = float(np.median([s["touch_down_s"] - s["lift_off_s"] for s in swings]))
    times = sorted((s["lift_off_s"], s["touch_down_s"]) for s in swings)
    gaps = [b[0] - a[1] for a, b in zip(times, times[1:]) if b[0] > a[1]]
    return single, float(np.median(gaps)) if gaps else 0.2


def main() -> None:
    robot = Robot(clips.ROBOTS["h1"])
    left, right = robot.left, robot.right
    width = robot.stand[left][1, 3] - robot.stand[right][1, 3]
    sole = (robot.stand[left][1, 3] + robot.sole[left][0], robot.stand[left][1, 3] + robot.sole[left][1])
    mass_u, z_u, inertia_u = robot.upper_body()
    print(f"H1: {robot.model.total:.1f} kg; upper body {mass_u:.1f} kg, its CoM {z_u:.2f} m over the soles, "
          f"roll inertia {inertia_u:.2f} kg m^2; feet {width:.3f} m apart as built; "
          f"left sole from y = {sole[0]:.3f} to {sole[1]:.3f} m")
    print("double support, both soles flat and still: the CoM's sideways reach")
    reaches = {}
    for narrower in (0.0, 0.01, 0.02, 0.03, 0.04):
        goals = {f: robot.stand[f].copy() for f in (left, right)}
        goals[left][1, 3] -= narrower / 2
        goals[right][1, 3] += narrower / 2
        toward, error = robot.reach(goals, 1.0)
        reaches[narrower] = toward
        if not np.isfinite(toward):
            print(f"    feet {100 * (width - narrower):.1f} cm apart: cannot stand (no pose found with both soles flat)")
            continue
        print(f"    feet {100 * (width - narrower):.1f} cm apart: CoM up to {1000 * toward:+.1f} mm from the middle "
              f"(feet within {1000 * error:.2f} mm)")
    ss_toward, _ = robot.reach({left: robot.stand[left]}, 1.0)
    ss_away, _ = robot.reach({left: robot.stand[left]}, -1.0)
    print(f"single support on the left sole (the other leg anywhere): CoM from {-1000 * ss_away:+.0f} to "
          f"{1000 * ss_toward:+.0f} mm; the sole's inner edge is at {1000 * sole[0]:+.0f} mm")
    single, double = walk_timing()
    print(f"the walk's gait on the H1: single support {single:.2f} s, double support {double:.2f} s (medians)")
    roll = float(robot.tree.upper[robot.legs[0].columns[1]])
    ratio = inertia_u / (robot.model.total * GRAVITY)
    print("the least the ZMP must leave its support over a step cycle, any lateral motion within those reaches:")
    for scale in (0.5, 1.0, 1.5, 2.2, 3.0):
        figures = []
        for narrower, rolls in ((0.0, False), (0.0, True), (0.02, True)):
            # flat soles at the built width lock the pelvis's roll (only the arms move the CoM); narrower, the
            # pelvis may roll as far as the hips let it (a relaxation: the reach above says how far it gets)
            short = shortfall(scale * single, scale * double, (sole[0] - narrower / 2, sole[1] - narrower / 2),
                              reaches[narrower], (ss_toward, ss_away), z_u, ratio, roll if rolls else 0.0,
                              roll if rolls and narrower else 0.0)
            figures.append(f"{1000 * short:.0f} mm")
        print(f"    single {scale * single:.2f} s, double {scale * double:.2f} s: built width, no upper-body roll "
              f"{figures[0]}; rolling in single support {figures[1]}; 2 cm narrower, rolling throughout {figures[2]}")

if __name__ == "__main__":
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()  # --help says what it measures
    main()
