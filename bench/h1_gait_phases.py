#!/usr/bin/env python3
"""Where the H1's gait on the bundled walk fails, and why (issue 12): phase by phase.

    .venv/bin/python bench/h1_gait_phases.py

1. The gait as generated, per single and double support: how far the multibody ZMP is from its
   target, its worst margin inside the support (the feet as the legs put them), how far a
   stance foot slides and tilts. Then the same ZMP against the soles where the plan wants them
   (flat, still): what is left once the feet are taken out.
2. What the balance asks of double support: how far the cart-table CoM path (the preview
   controller's, from the target ZMP) goes sideways from the middle of the two soles.
3. What the legs give in double support in a walking posture (arms and torso as built, the
   waist upright in pitch, 5 cm below its built height): both soles flat and still at a stance
   width, the waist rolled, its yaw and sideways place solved so that both feet stand; the
   whole-body CoM's sideways range over the rolls that stand, and whether it can cross the
   middle (a roll of 0 standing).
"""
from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy.optimize import least_squares
from scipy.spatial.transform import Rotation

sys.path.insert(0, str(Path(__file__).resolve().parent))
import clips  # noqa: E402
import core.balance.gait as gait  # noqa: E402
from core.balance.correction import Balanced  # noqa: E402
from core.balance.inertia import MassModel, centre_of_mass  # noqa: E402
from core.balance.legs import leg_iks, pose_errors, solve_legs  # noqa: E402
from core.balance.plan import GaitPlan  # noqa: E402
from core.balance.preview import PreviewSettings, follow_zmp  # noqa: E402
from core.balance.support import foot_bodies, foot_links, support_margins  # noqa: E402
from core.feet.geometry import standing_rotation  # noqa: E402
from core.model.kinematics import KinematicTree  # noqa: E402
from core.model.transforms import pose_matrices  # noqa: E402
from core.model.urdf import parse_urdf  # noqa: E402
from core.retarget import auto_map  # noqa: E402

WIDTHS_M = (0.406, 0.40, 0.395, 0.39, 0.385, 0.38, 0.37, 0.36)
ROLLS_RAD = np.linspace(-0.4, 0.4, 17)
STAND_M = 1e-3  # a foot within this of its goal (and its tilt and turn, as metres at 0.2 m a radian) stands


@dataclass
class Run:
    tree: KinematicTree
    plan: GaitPlan
    balanced: Balanced
    report: dict


def run_gait(robot: str = "h1", settings: gait.GaitSettings | None = None) -> Run:
    """The bundled walk's gait on the robot, with the plan it balanced (read from the generator's step)."""
    tree = KinematicTree(parse_urdf(clips.ROBOTS[robot]))
    walk = clips.load(clips.WALK)
    seen = {}
    balance = gait._balance

    def keep(tree, plan, *rest):
        seen["plan"], seen["balanced"] = plan, balance(tree, plan, *rest)
        return seen["balanced"]

    gait._balance = keep
    try:
        result = gait.generate_gait(walk, tree, auto_map(walk, tree), settings=settings)
    finally:
        gait._balance = balance
    return Run(tree, seen["plan"], seen["balanced"], result.report)


def feet_by_side(plan: GaitPlan) -> tuple[int, int]:
    by_side = {side: link for link, side in plan.sides.items()}
    return by_side["left"], by_side["right"]


def phases(plan: GaitPlan) -> list[tuple[str, int, int]]:
    """(kind: 'double' / 'left' / 'right', first sample, end sample) in time order."""
    left, right = (plan.paths[link].down for link in feet_by_side(plan))
    kind = np.where(left & right, "double", np.where(left, "left", "right"))
    edges = np.flatnonzero(kind[1:] != kind[:-1]) + 1
    return [(str(kind[s]), int(s), int(e)) for s, e in zip(np.r_[0, edges], np.r_[edges, len(kind)])]


def across(plan: GaitPlan, rows: slice, point: np.ndarray) -> np.ndarray:
    """How far `point` (F, 2) is from the middle of the soles toward the left one, along the left
    foot's own left (F,), metres; and the feet's width across (F,)."""
    left, right = (plan.paths[link].poses[rows] for link in feet_by_side(plan))
    lateral = left[:, :2, 1] / np.linalg.norm(left[:, :2, 1], axis=1, keepdims=True)
    middle = (left[:, :2, 3] + right[:, :2, 3]) / 2.0
    return (np.einsum("fi,fi->f", point - middle, lateral),
            np.einsum("fi,fi->f", left[:, :2, 3] - right[:, :2, 3], lateral))


def phase_table(run: Run) -> None:
    tree, plan, balanced = run.tree, run.plan, run.balanced
    links = list(plan.paths)
    root = pose_matrices(plan.root_rot, balanced.root_position)
    poses = tree.poses(balanced.q, root, links)
    radius = np.concatenate([plan.bodies[link].radius for link in links])
    actual = np.concatenate([plan.bodies[link].world(poses[link]) for link in links], axis=1)
    planned = np.concatenate([plan.bodies[link].world(plan.paths[link].poses) for link in links], axis=1)
    margin = support_margins(actual, balanced.zmp, 0.0, radius)
    flat_margin = support_margins(planned, balanced.zmp, 0.0, radius)
    tilts = {}
    for leg in plan.legs:
        _, tilt, _ = pose_errors(tree, [leg], balanced.q, root, {leg.foot: plan.paths[leg.foot].poses})
        tilts[leg.foot] = tilt
    print("phase   times (s)      ZMP to target RMS  worst margin  stance slide  stance tilt")
    for kind, start, end in phases(plan):
        error = np.linalg.norm(balanced.zmp[start:end] - plan.target[start:end], axis=1)
        slide, tilt = 0.0, 0.0
        for link in links:
            if plan.paths[link].down[start]:
                points = plan.bodies[link].world(poses[link][start:end])
                slide = max(slide, float(np.linalg.norm(points[:, :, :2] - points[:1, :, :2], axis=-1).max()))
                tilt = max(tilt, float(np.degrees(tilts[link][start:end].max())))
        print(f"{kind:7s} {plan.times[start]:5.2f}-{plan.times[end - 1]:5.2f}   {1000 * np.sqrt(np.mean(error ** 2)):6.1f} mm"
              f"        {1000 * margin[start:end].min():+5.0f} mm    {1000 * slide:5.1f} mm     {tilt:4.1f} deg")
    print(f"the ZMP outside the feet as the legs put them: {100 * np.mean(margin < 0):.1f} % of samples "
          f"(worst {1000 * margin.min():+.0f} mm); over the soles where the plan wants them (flat, still): "
          f"{100 * np.mean(flat_margin < 0):.1f} % (worst {1000 * flat_margin.min():+.0f} mm, "
          f"{100 * np.mean(flat_margin < 0.01):.1f} % less than 10 mm inside)")


def double_support_demand(run: Run) -> list[tuple[float, float, float, float, float]]:
    """Per double support: (start s, end s, width across m, the preview CoM's least and most
    sideways from the middle of the soles, m); printed with the gait's own CoM."""
    plan, balanced = run.plan, run.balanced
    c = gait.GaitSettings().correction
    period = float(plan.times[1] - plan.times[0])
    com, _ = follow_zmp(plan.target, PreviewSettings(period, balanced.com_height_m, c.q, c.r, c.preview_s))
    out = []
    print("double support: the CoM's way sideways from the middle of the soles (+ toward the left foot)")
    for kind, start, end in phases(plan):
        if kind != "double":
            continue
        rows = slice(start, end)
        asked, width = across(plan, rows, com[rows])
        done, _ = across(plan, rows, balanced.com[rows, :2])
        out.append((plan.times[start], plan.times[end - 1], float(width.mean()), float(asked.min()), float(asked.max())))
        print(f"    {plan.times[start]:5.2f}-{plan.times[end - 1]:5.2f} s, feet {100 * width.mean():.1f} cm across: "
              f"asked {100 * asked.min():+5.1f} to {100 * asked.max():+5.1f} cm; the gait's CoM "
              f"{100 * done.min():+5.1f} to {100 * done.max():+5.1f} cm")
    return out


class Stance:
    """The H1 on two flat, parallel soles a given width apart, its waist rolled: the waist's yaw
    and sideways place that let both legs stand, and the whole-body CoM there."""

    def __init__(self, tree: KinematicTree):
        self.tree, self.model = tree, MassModel.build(tree)
        feet = foot_links(tree)
        zero = tree.zero_pose()
        flat = {f: standing_rotation(b, zero[f, :3, :3]) for f, b in zip(feet, foot_bodies(tree, feet))}
        self.legs = leg_iks(tree, feet, flat)
        self.left, self.right = sorted(feet, key=lambda f: -zero[f, 1, 3])
        self.stand = {f: zero[f].copy() for f in feet}
        for f in feet:
            self.stand[f][:3, :3] = flat[f]
        self.start = np.zeros((1, tree.dof))
        for leg in self.legs:
            self.start[0, leg.knee] = leg.bend

    def pose(self, width: float, roll: float, place: np.ndarray):
        """Legs solved for the waist rolled by roll and turned and moved across by place (yaw, y)."""
        rotation = Rotation.from_euler("zx", [[place[0], roll]]).as_matrix()
        root = pose_matrices(rotation, np.array([[0.0, place[1], -0.05]]))
        goals = {}
        for foot, sign in ((self.left, 1.0), (self.right, -1.0)):
            goals[foot] = self.stand[foot][None].copy()
            goals[foot][0, 1, 3] = sign * width / 2.0
        q, _ = solve_legs(self.tree, self.legs, self.start, root, goals, period_s=None, iterations=60)
        return q, root, goals

    def misses(self, width: float, roll: float, place: np.ndarray) -> np.ndarray:
        q, root, goals = self.pose(width, roll, place)
        out = []
        for leg in self.legs:
            position, tilt, turn = pose_errors(self.tree, [leg], q, root, {leg.foot: goals[leg.foot]})
            out += [position[0], 0.2 * tilt[0], 0.2 * turn[0]]
        return np.array(out)

    def sway(self, width: float) -> list[tuple[float, float, float]]:
        """(roll, CoM sideways m, yaw) for each roll of ROLLS_RAD at which both soles stand."""
        out = []
        for roll in ROLLS_RAD:
            best = min((least_squares(lambda p: self.misses(width, roll, p), [yaw, 0.0], diff_step=1e-4)
                        for yaw in (-0.3, 0.0, 0.3)), key=lambda r: r.cost)
            if np.abs(self.misses(width, roll, best.x)).max() < STAND_M:
                q, root, _ = self.pose(width, roll, best.x)
                out.append((float(roll), float(centre_of_mass(self.tree, q, root, self.model)[0, 1]), float(best.x[0])))
        return out


def main() -> None:
    run = run_gait()
    phase_table(run)
    demand = double_support_demand(run)
    stance = Stance(run.tree)
    print("what the legs give in double support (walking posture: arms and torso as built, soles flat and still)")
    bands = {}
    for width in WIDTHS_M:
        sway = stance.sway(width)
        if not sway:
            print(f"    feet {100 * width:.1f} cm across: no roll in +-{ROLLS_RAD[-1]:.1f} rad stands")
            continue
        rolls, com, yaw = (np.array(column) for column in zip(*sway))
        crosses = bool(np.any(np.abs(rolls) < 1e-9))
        # the rolls that stand are one run through 0, or a run on each side that the CoM cannot pass between
        bands[width] = [(com.min(), com.max())] if crosses else [
            (com[side].min(), com[side].max()) for side in (rolls < 0, rolls > 0) if side.any()]
        print(f"    feet {100 * width:.1f} cm across: CoM {100 * com.min():+.1f} to {100 * com.max():+.1f} cm, waist roll "
              f"{rolls.min():+.2f} to {rolls.max():+.2f} rad standing, yaw up to {np.abs(yaw).max():.2f} rad; "
              f"{'crosses the middle' if crosses else 'cannot stand upright: the CoM cannot cross the middle'}")
    nearest = [min(bands, key=lambda w: abs(w - width)) if bands else None for _, _, width, _, _ in demand]
    fits = sum(w is not None and _fits(bands[w], low, high) for w, (_, _, _, low, high) in zip(nearest, demand))
    print(f"double supports whose sideways CoM path fits what the legs give at their own width (the nearest "
          f"measured): {fits} of {len(demand)}")
    for width, band in bands.items():
        count = sum(_fits(band, low, high) for _, _, _, low, high in demand)
        print(f"    had every stance been {100 * width:.1f} cm across: {count} of {len(demand)}")


def _fits(band: list[tuple[float, float]], low: float, high: float) -> bool:
    """Whether a sideways path from low to high (m) lies within one run of the band."""
    return any(lo <= low and high <= hi for lo, hi in band)

if __name__ == "__main__":
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()  # --help says what it measures
    main()
