"""ChainKinematics.evaluate (core.chains.solver) against the robot's own forward kinematics,
finite differences, and the leg's shape-and-foot evaluation against two separate ones."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from core.chains.points import RobotChain, RobotPath
from core.chains.solver import ChainKinematics, rate_limit
from core.feet.plant import Leg
from core.model.kinematics import REVOLUTE, KinematicTree
from core.model.transforms import axis_angle_to_matrix
from tests.robot_variants import random_root_poses
from core.model.urdf import parse_urdf
from core.motion.bvh import load_bvh
from core.retarget.automap import auto_map
from core.retarget.chain_plans import plan_chains

ROOT = Path(__file__).resolve().parents[2]
WALK = ROOT / "data" / "motion" / "cmu_131_01_walk_m.bvh"
ROBOTS = {"g1": ROOT / "data" / "robots" / "g1" / "unitree_g1_29dof.urdf",
          "h1": ROOT / "tests" / "data" / "robots" / "unitree_h1_19dof.urdf"}


@pytest.fixture(scope="module")
def walk():
    return load_bvh(WALK).to_source_motion()


@pytest.fixture(scope="module", params=list(ROBOTS))
def robot(request, walk):
    tree = KinematicTree(parse_urdf(ROBOTS[request.param]))
    return tree, plan_chains(walk, tree, auto_map(walk, tree), [])


def _pose(tree, frames=40, seed=0):
    rng = np.random.default_rng(seed)
    q = np.clip(rng.uniform(-1.5, 1.5, (frames, tree.dof)), tree.lower, tree.upper)
    return q, random_root_poses(rng, frames)


def _anchor(tree, chain, q, root):
    return root if chain.anchor < 0 else tree.link_transform(q, chain.anchor, root)


def _world(tree, link, local, q, root):
    pose = tree.link_transform(q, link, root)
    return pose[:, :3, :3] @ local + pose[:, :3, 3]


def test_points_match_forward_kinematics(robot):
    tree, plans = robot
    q, root = _pose(tree)
    for plan in plans:
        kin, chain = plan.kin, plan.robot
        points, _ = kin.evaluate(tree, _anchor(tree, chain, q, root), q, False)
        origin = _world(tree, chain.origin[0], np.asarray(chain.origin[1]), q, root)
        for m, (link, local) in enumerate(zip(kin.point_link, kin.point_local)):
            np.testing.assert_allclose(points[:, m], _world(tree, int(link), local, q, root) - origin,
                                       rtol=0, atol=1e-12, err_msg=plan.mapping.name)


def test_jacobian_matches_finite_differences(robot):
    tree, plans = robot
    q, root = _pose(tree, frames=12, seed=1)
    eps = 1e-6
    for plan in plans:
        kin = plan.kin
        anchor = _anchor(tree, plan.robot, q, root)  # the anchor does not move with the chain's variables
        _, jac = kin.evaluate(tree, anchor, q, True)
        for v, col in enumerate(kin.columns):
            up, down = q.copy(), q.copy()
            up[:, col] += eps
            down[:, col] -= eps
            numeric = (kin.evaluate(tree, anchor, up, False)[0] - kin.evaluate(tree, anchor, down, False)[0]) / (2 * eps)
            np.testing.assert_allclose(jac[..., v], numeric, rtol=0, atol=1e-7, err_msg=plan.mapping.name)


def test_leg_shape_and_foot_in_one_evaluation(robot, walk):
    """The leg solve's single evaluation equals the chain shape's and the foot's (relative to
    the hip joint) evaluated separately, points and Jacobians, to 1e-12."""
    tree, plans = robot
    q, root = _pose(tree, seed=2)
    legs = [p for p in plans if p.mapping.role == "leg"]
    assert len(legs) == 2
    for plan in legs:
        frames, points = len(q), len(plan.kin.point_link)
        leg = Leg.build(tree, plan.mapping.side, plan.kin, np.zeros((frames, points, 3)), np.ones(points),
                        plan.robot.anchor)
        chain = plan.kin.chain
        path = RobotPath(chain.paths[0].links, np.full(len(leg.foot.points), leg.link), leg.foot.points, 1.0,
                         (leg.link, leg.foot.points[0]))
        foot_chain = RobotChain("foot", chain.anchor, chain.links, [path], chain.variables,
                                (chain.links[0], np.zeros(3)))
        foot_kin = ChainKinematics.build(tree, foot_chain)
        anchor = _anchor(tree, chain, q, root)
        both, both_jac = leg.solve_kin.evaluate(tree, anchor, q, True)
        shape, shape_jac = plan.kin.evaluate(tree, anchor, q, True)
        feet, feet_jac = foot_kin.evaluate(tree, anchor, q, True)
        rows = leg.shape_rows
        np.testing.assert_allclose(both[:, rows], shape, rtol=0, atol=1e-12)
        np.testing.assert_allclose(both_jac[:, rows], shape_jac, rtol=0, atol=1e-12)
        np.testing.assert_allclose(both[:, rows.stop:], feet, rtol=0, atol=1e-12)
        np.testing.assert_allclose(both_jac[:, rows.stop:], feet_jac, rtol=0, atol=1e-12)
        hip = tree.link_transform(q, chain.links[0], root)[:, :3, 3]
        world = leg.foot.world(tree.link_transform(q, leg.link, root))
        np.testing.assert_allclose(both[:, rows.stop:], world - hip[:, None], rtol=0, atol=1e-12)


def test_joint_motion_matches_rodrigues(robot):
    tree, _ = robot
    q, _ = _pose(tree, frames=100, seed=3)
    for link in range(1, len(tree.link_names)):
        if tree.kind[link] == REVOLUTE:
            np.testing.assert_allclose(tree.joint_motion(q, link)[:, :3, :3],
                                       axis_angle_to_matrix(tree.axes[link], tree.joint_value(q, link)),
                                       rtol=0, atol=1e-12)


def _rate_limit_reference(x, max_step):
    out = x.copy()
    for f in range(1, len(out)):
        out[f] = out[f - 1] + np.clip(x[f] - out[f - 1], -max_step, max_step)
    return out


def test_rate_limit_matches_frame_by_frame():
    rng = np.random.default_rng(4)
    for trial in range(100):
        frames, joints = int(rng.integers(1, 150)), int(rng.integers(1, 7))
        x = np.cumsum(rng.normal(0, 0.05, (frames, joints)), axis=0)
        spikes = rng.random((frames, joints)) < 0.04
        x[spikes] += rng.normal(0, 1.0, spikes.sum())
        max_step = rng.uniform(0.02, 0.3, joints) if trial % 2 else 0.1
        np.testing.assert_allclose(rate_limit(x, max_step), _rate_limit_reference(x, max_step), rtol=0, atol=1e-12)
