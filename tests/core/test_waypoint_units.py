"""Waypoints do not depend on the arm's units: the robot and its path s times as large (a robot in
millimetres, a bigger arm of the same shape) follow the path with the same joints, and the report's
figures scale as their units say. The IK measured lengths in metres against radians (damping, the
rotation's weight, tolerances), so the Panda x2 moved up to 0.115 rad and x0.5 3.5 rad (the UR5 x0.5
5.1 rad) from the unscaled run on the tests' arc."""
from __future__ import annotations

import dataclasses
from functools import lru_cache
from pathlib import Path

import numpy as np
import pytest

from core.model.kinematics import KinematicTree
from core.model.urdf import parse_urdf
from core.waypoints import mechanism as mech
from core.waypoints.optimum import StateBlend, state_risk, waypoint_orientations
from core.waypoints.trajectory import FollowSettings, follow_path
from tests.core.test_waypoint_trajectory import arc_keys
from tests.robot_variants import scaled_robot, slide_inserted, write_urdf

ROBOTS = Path(__file__).resolve().parents[1] / "data" / "robots"
ARMS = {"panda": ("franka_panda.urdf", "panda_hand_tcp"), "ur5": ("ur5_robot.urdf", "tool0")}
SETTINGS = FollowSettings(rate_hz=50.0, mode="tangent_mechanism")  # the via search and the tracking IK


@lru_cache(maxsize=None)
def _chain(arm: str, scale: float, folder: str) -> mech.MechanismChain:
    """The arm scaled (written out, so its masses scale too)."""
    urdf, tip = ARMS[arm]
    scaled = scaled_robot(parse_urdf(ROBOTS / urdf), scale)
    robot = parse_urdf(write_urdf(scaled, Path(folder) / f"{arm}_{scale:g}.urdf"))
    return mech.make_chain(KinematicTree(robot), tip)


@lru_cache(maxsize=None)
def _followed(arm: str, scale: float, folder: str):
    """The arm scaled following the tests' arc scaled alike."""
    chain = _chain(arm, scale, folder)
    keys = arc_keys()
    return chain, follow_path(chain, dataclasses.replace(keys, position=keys.position * scale), SETTINGS)


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return str(tmp_path_factory.mktemp("scaled_arms"))


@pytest.mark.parametrize("arm,scale", [("panda", 2.0), ("panda", 0.5), ("panda", 1000.0), ("ur5", 2.0), ("ur5", 0.5)])
def test_the_arm_scaled_with_its_path_moves_the_same_joints(arm, scale, folder):
    chain, plain = _followed(arm, 1.0, folder)
    scaled_chain, scaled = _followed(arm, scale, folder)
    assert not plain.report["unreachable"] and not scaled.report["unreachable"]
    np.testing.assert_allclose(scaled.q, plain.q, atol=1e-6)
    assert scaled_chain.length == pytest.approx(scale * chain.length, rel=1e-12)
    np.testing.assert_allclose(scaled.target_position, scale * plain.target_position, rtol=1e-9, atol=1e-12 * scale)
    report, reference = scaled.report, plain.report
    assert report["reach_m"] == pytest.approx(scale * reference["reach_m"], rel=1e-9)
    assert report["max_joint_speed_ratio"] == pytest.approx(reference["max_joint_speed_ratio"], rel=1e-6)
    for key, base in zip(report["keys"], reference["keys"]):
        # 3 of J's 6 rows are lengths: sqrt(det(J J^T)) x s^3; torques m g l = s^3 s: squared x s^8
        assert key["manipulability"] == pytest.approx(scale ** 3 * base["manipulability"], rel=1e-6)
        assert key["torque_cost"] == pytest.approx(scale ** 8 * base["torque_cost"], rel=1e-6)
        assert key["quaternion"] == pytest.approx(base["quaternion"], abs=1e-9)
        assert key["position_error_m"] <= 5e-5 * scaled_chain.length


def test_the_arm_length_is_its_joint_offsets():
    """The IK's unit: the joint offsets from the first moving joint to the tip, not the base's mount."""
    tree = KinematicTree(parse_urdf(ROBOTS / "franka_panda.urdf"))
    chain = mech.make_chain(tree, "panda_hand_tcp")
    names = ["panda_joint2", "panda_joint3", "panda_joint4", "panda_joint5", "panda_joint6", "panda_joint7",
             "panda_joint8", "panda_hand_joint", "panda_hand_tcp_joint"]
    joints = {j.name: j for j in tree.robot.joints}
    assert chain.length == pytest.approx(sum(np.linalg.norm(joints[n].origin[:3, 3]) for n in names), rel=1e-12)
    assert chain.length == pytest.approx(1.0897, abs=1e-4)  # 0.316 + 0.0825 + 0.3928 + 0.088 + 0.107 + 0.1034


@pytest.mark.parametrize("scale", [2.0, 0.5])
def test_the_risk_near_a_singularity_is_the_same_at_any_scale(scale, folder):
    """Blend by Robot State's threshold is in arm lengths (m / length^3). In m^3 the risk at the arc's
    last five vias was 0.05 to 0.21 on the Panda, 0 on the Panda x2 and 0.88 on the Panda x0.5."""
    keys = arc_keys()
    via = keys.position[1:-1]
    interpolated = waypoint_orientations(keys.position[0], keys.quaternion[0], keys.position[-1], keys.quaternion[-1],
                                         via, max_blend=0.0)
    state = StateBlend(min_manipulability=0.1, limit_margin=0.05)
    risk = state_risk(_chain("panda", 1.0, folder), via, interpolated, state)
    assert np.sum(risk > 0) >= 2 and np.sum(risk < 1) >= 2  # the threshold splits the vias
    np.testing.assert_allclose(state_risk(_chain("panda", scale, folder), scale * via, interpolated, state), risk,
                               atol=1e-9)


def test_a_sliding_joint_scales_with_the_arm(folder):
    """A telescopic forearm (tests/robot_variants.slide_inserted, +-5 cm, 10 cm on the arm x2): its
    metres count in arm lengths in the IK's step, so the slide moves s times as far and the rest the same.
    Counted in metres the UR5 x2 with the slide moved 0.23 rad and x0.5 0.62 rad from the unscaled."""
    base = slide_inserted(parse_urdf(ROBOTS / "ur5_robot.urdf"), "elbow_joint", 0.05)
    keys = arc_keys()
    runs = []
    for scale in (1.0, 2.0):
        robot = parse_urdf(write_urdf(scaled_robot(base, scale), Path(folder) / f"ur5_slide_{scale:g}.urdf"))
        chain = mech.make_chain(KinematicTree(robot), "tool0")
        result = follow_path(chain, dataclasses.replace(keys, position=keys.position * scale), SETTINGS)
        assert not result.report["unreachable"]
        sliding = np.array([robot.joint(name).type == "prismatic" for name in result.joint_names])
        runs.append(result.q / np.where(sliding, scale, 1.0))
    assert sliding.sum() == 1 and np.ptp(runs[0][:, sliding]) > 0.05  # the slide works along the arc
    np.testing.assert_allclose(runs[1], runs[0], atol=1e-6)
