"""The order a URDF lists its parts in decides nothing about the avoiding bake.

Two places took an order from the file: the allowed-collision matrix's sampled postures drew each joint's
column in the URDF's joint order (the G1 listed otherwise checked 4 pairs fewer and 3 more), and a hand's
targets were cleared of the trunk's capsules in their index order, which the URDF's listing sets (the G1 listed
otherwise baked its avoiding walk 0.53 rad apart, left wrist roll). Both now follow the robot's own order
(core.collision.pairs.canonical_joints, core.collision.clearance._clearing_order).

Nor does the pose a robot's joints are zeroed in: the hands' clearing order read the trunk's capsules by their
distance from the hand's origin in the zero pose, so the G1 with its arms zeroed sideways (shoulder rolls turned
90 deg, limits shifted with them) cleared in another order and baked its avoiding walk 0.36 rad apart (right wrist
roll; 0.92 deg RMS); the order is now read with every joint halfway between its limits.
"""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from core.collision.pairs import collision_pairs
from core.model.kinematics import KinematicTree
from core.model.urdf import parse_urdf
from core.motion.bvh import load_bvh
from core.retarget.automap import auto_map
from core.retarget.pipeline import retarget
from tests import robot_variants as RV
from tests.core.test_invariance import G1, SIDEWAYS, WALK, _short


@pytest.fixture(scope="module")
def trees(tmp_path_factory):
    robot = parse_urdf(G1)
    path = RV.write_urdf(RV.reordered(robot), tmp_path_factory.mktemp("order") / "g1_reordered.urdf")
    return KinematicTree(robot), KinematicTree(parse_urdf(path))


def _named_pairs(tree: KinematicTree) -> set:
    pairs = collision_pairs(tree)
    return {frozenset(pairs.names(k)) for k in range(len(pairs.bodies))}


def test_the_g1_listed_in_another_order_checks_the_same_pairs(trees):
    g1, listed = trees
    assert g1.joint_names != listed.joint_names  # the variant does list its joints otherwise
    assert _named_pairs(listed) == _named_pairs(g1)


def test_the_g1_listed_in_another_order_bakes_the_same_avoiding_walk(trees):
    motion = load_bvh(WALK).to_source_motion()
    bakes = []
    for tree in trees:
        mapping = auto_map(motion, tree)
        mapping.settings = dataclasses.replace(mapping.settings, avoid_self_collision=True)
        bakes.append(retarget(motion, tree, mapping, contacts="auto"))
    g1, listed = trees
    columns = [listed.joint_names.index(name) for name in g1.joint_names]
    gap = np.abs(bakes[1].q[:, columns] - bakes[0].q)
    assert bakes[0].report["self_collision_pct"] == bakes[1].report["self_collision_pct"] == 0.0
    assert gap.max() < 1e-9, f"{g1.joint_names[int(gap.max(axis=0).argmax())]} {gap.max():.3g} rad apart"


def test_the_g1_with_its_arms_zeroed_sideways_bakes_the_same_avoiding_walk(trees, tmp_path):
    g1 = trees[0]
    sideways = KinematicTree(parse_urdf(RV.write_urdf(RV.zero_shifted(g1.robot, SIDEWAYS), tmp_path / "g1_t.urdf")))
    motion = _short(load_bvh(WALK)).to_source_motion()
    bakes = []
    for tree in (g1, sideways):
        mapping = auto_map(motion, tree)
        mapping.settings = dataclasses.replace(mapping.settings, avoid_self_collision=True)
        bakes.append(retarget(motion, tree, mapping))
    shift = np.array([SIDEWAYS.get(name, 0.0) for name in sideways.joint_names])
    gap = np.abs(bakes[1].q + shift - bakes[0].q)
    assert bakes[0].report["self_collision_pct"] == bakes[1].report["self_collision_pct"] == 0.0
    assert gap.max() < 1e-9, f"{g1.joint_names[int(gap.max(axis=0).argmax())]} {gap.max():.3g} rad apart"
