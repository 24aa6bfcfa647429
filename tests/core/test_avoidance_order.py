"""The order a URDF lists its parts in decides nothing about the avoiding bake.

Two places took an order from the file: the allowed-collision matrix's sampled postures drew each joint's
column in the URDF's joint order (the G1 listed otherwise checked 4 pairs fewer and 3 more), and a hand's
targets were cleared of the trunk's capsules in their index order, which the URDF's listing sets (the G1 listed
otherwise baked its avoiding walk 0.53 rad apart, left wrist roll). Both now follow the robot's own order
(core.collision.pairs.canonical_joints, core.collision.clearance._clearing_order).
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
from tests.core.test_invariance import G1, WALK


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
