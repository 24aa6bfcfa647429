"""Planted legs too slow for the clip (core.feet.pace): solved frame by frame inside their speed limits.

The G1 is given Romeo's leg speeds (example-robot-data's romeo.urdf: hip yaw 0.32 rad/s, hip roll
and pitch 2.09, knee 6, ankles 2.1); the walk's planted feet then slid in 23 % of its contacts
(0.09 m/s on average over contact frames): the rate limit let a slow joint lag at its top speed
while the other joints kept angles meant for where it should have been.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy.optimize import lsq_linear

from core.feet.pace import _box_step
from core.model.kinematics import KinematicTree
from core.model.urdf import parse_urdf
from core.motion.bvh import load_bvh
from core.retarget.automap import auto_map
from core.retarget.pipeline import retarget
from tests.robot_variants import sped, write_urdf

ROOT = Path(__file__).resolve().parents[2]
WALK = ROOT / "data" / "motion" / "cmu_131_01_walk_m.bvh"
HOP = ROOT / "tests" / "data" / "motion" / "cmu_131_03_hop.bvh"
G1 = ROOT / "data" / "robots" / "g1" / "unitree_g1_29dof.urdf"
ROMEO_LEG_SPEEDS = {"hip_yaw_joint": 0.32, "hip_roll_joint": 2.09, "hip_pitch_joint": 2.09, "knee_joint": 6.0,
                    "ankle_pitch_joint": 2.1, "ankle_roll_joint": 2.1}


@pytest.fixture(scope="module")
def slow_walk(tmp_path_factory):
    path = write_urdf(sped(parse_urdf(G1), ROMEO_LEG_SPEEDS), tmp_path_factory.mktemp("slow") / "g1_slow.urdf")
    tree = KinematicTree(parse_urdf(path))
    motion = load_bvh(WALK).to_source_motion()
    return tree, motion, retarget(motion, tree, auto_map(motion, tree), contacts="auto")


def test_legs_too_slow_for_the_walk_keep_their_planted_feet(slow_walk):
    """Before core.feet.pace: foot_slide_pct 23, foot_slide_mean_m_s 0.09; now 0 and 0.03."""
    tree, motion, result = slow_walk
    report = result.report
    assert report["foot_slide_pct"] < 10.0
    assert report["foot_slide_mean_m_s"] < 0.05
    assert report["contact_preserved_pct"] > 90.0
    assert not any("(foot_slide_pct)" in w for w in report["warnings"])
    speed = np.abs(np.diff(result.q, axis=0)) * motion.fps  # still inside the slower limits
    assert (speed <= tree.velocity * (1 + 1e-9)).all()


def test_a_lag_that_stops_for_a_few_frames_is_paced_with_the_stretch_it_stops_in(tmp_path):
    """The G1 with its leg joints at an eighth of their speed, on the hop: its legs lag in runs a few
    frames apart. Paced run by run, a paced run ended where the unpaced rate limit had caught up,
    not where the paced leg was, and the rate limit then pulled the leg there at top speed, its
    planted foot let go (Romeo's walk: 2 of 13 contacts sliding, the right foot 1.3 m/s in a 3-frame
    gap). Before: foot_slide_mean_m_s 0.021, its worst contact 0.41 m/s; now 0.012 and 0.17."""
    robot = parse_urdf(G1)
    slow = {j.name: j.velocity / 8 for j in robot.joints if any(k in j.name for k in ("hip", "knee", "ankle"))}
    tree = KinematicTree(parse_urdf(write_urdf(sped(robot, slow), tmp_path / "g1_eighth.urdf")))
    motion = load_bvh(HOP).to_source_motion()
    result = retarget(motion, tree, auto_map(motion, tree), contacts="auto")
    assert result.report["foot_slide_mean_m_s"] < 0.015
    speed = np.abs(np.diff(result.q, axis=0)) * motion.fps
    assert (speed <= tree.velocity * (1 + 1e-9)).all()


def test_a_box_step_is_the_exact_minimum_inside_its_box():
    """Each paced frame's step minimises its Gauss-Newton model inside the box its speed allows;
    checked against scipy's bounded least squares on random models, boxes and empty boxes."""
    rng = np.random.default_rng(21)
    for _ in range(300):
        n = int(rng.integers(1, 8))
        a = rng.normal(size=(n + 3, n)) * rng.uniform(0.01, 10.0, size=n)
        hess, grad = a.T @ a + 1e-6 * np.eye(n), rng.normal(size=n) * 3.0
        centre, half = rng.normal(size=n) * 0.5, rng.uniform(0.0, 0.3, size=n)
        half[rng.random(n) < 0.1] = 0.0
        low, high = centre - half, centre + half
        d = _box_step(hess, grad, low, high)
        chol = np.linalg.cholesky(hess)
        best = lsq_linear(chol.T, -np.linalg.solve(chol, grad), bounds=(low, high + 1e-15), method="bvls").x
        assert np.all(d >= low) and np.all(d <= high)
        value = grad @ d + 0.5 * d @ hess @ d
        assert value <= grad @ best + 0.5 * best @ hess @ best + 1e-9 * (1.0 + abs(value))
