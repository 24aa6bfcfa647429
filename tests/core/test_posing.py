"""Link poses with frames last (core.model.posing) against the tree's own forward kinematics."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from core.model.kinematics import KinematicTree
from core.model.posing import Poser
from tests.robot_variants import random_root_poses
from core.model.urdf import parse_urdf

ROOT = Path(__file__).resolve().parents[2]
ROBOTS = {"g1": ROOT / "data/robots/g1/unitree_g1_29dof.urdf", "h1": ROOT / "tests/data/robots/unitree_h1_19dof.urdf"}


@pytest.fixture(scope="module", params=sorted(ROBOTS))
def tree(request):
    return KinematicTree(parse_urdf(ROBOTS[request.param]))


def _postures(tree: KinematicTree, frames: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Random joint positions within the limits (F, n) and root poses (F, 4, 4)."""
    rng = np.random.default_rng(seed)
    q = rng.uniform(np.maximum(tree.lower, -2.0), np.minimum(tree.upper, 2.0), size=(frames, tree.dof))
    return q, random_root_poses(rng, frames)


def test_poser_gives_the_trees_link_poses_and_keeps_known_ones(tree):
    """Every link of G1 and H1 in random postures and root poses: the frames-last rotation's
    columns and position are KinematicTree.poses's matrix; links given as known are taken as
    they are and their descendants posed from them."""
    q, root = _postures(tree, 30, 5)
    links = list(range(1, len(tree.link_names)))
    poses = Poser(tree, links)(q, root)
    expected = tree.poses(q, root, links)
    for link in links:
        np.testing.assert_allclose(poses[link].cols.transpose(2, 1, 0), expected[link][:, :3, :3], atol=1e-12)
        np.testing.assert_allclose(poses[link].pos.T, expected[link][:, :3, 3], atol=1e-12)
    # a known link moved by a metre: its descendants follow it, the other links do not
    leaf = max(links, key=tree.depth)
    parent = int(tree.parent[leaf])
    moved = {parent: type(poses[parent])(poses[parent].cols, poses[parent].pos + 1.0)}
    again = Poser(tree, [leaf, 1])(q, root, moved)
    np.testing.assert_allclose(again[leaf].pos, poses[leaf].pos + 1.0, atol=1e-12)
    np.testing.assert_allclose(again[1].pos, poses[1].pos, atol=1e-12)
    # some frames of a pose
    np.testing.assert_array_equal(poses[leaf][[2, 5]].pos, poses[leaf].pos[:, [2, 5]])



def test_joints_about_negative_axes_pose_as_the_tree_does():
    """A joint about -x, -y or -z (neither robot has one) turns its link as the tree's forward
    kinematics does, and as the joint about +x, +y or +z turned the other way, to the bit."""
    flipped = KinematicTree(parse_urdf(ROBOTS["g1"]))
    plain = KinematicTree(parse_urdf(ROBOTS["g1"]))
    turned = [link for link in range(1, len(flipped.link_names))
              if flipped.qindex[link] >= 0 and np.abs(flipped.axes[link]).max() == 1.0]
    flipped.axes[turned] *= -1.0
    q, root = _postures(plain, 30, 7)
    links = list(range(1, len(plain.link_names)))
    poses = Poser(flipped, links)(q, root)
    expected = flipped.poses(q, root, links)
    back = Poser(plain, links)(-q, root)
    for link in links:
        np.testing.assert_allclose(poses[link].cols.transpose(2, 1, 0), expected[link][:, :3, :3], atol=1e-12)
        np.testing.assert_allclose(poses[link].pos.T, expected[link][:, :3, 3], atol=1e-12)
        np.testing.assert_array_equal(poses[link].cols, back[link].cols)
