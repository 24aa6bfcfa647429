"""Forward kinematics against hand-computed values and against itself (batched,
per link, with a moving root) on small URDF strings and on the shipped G1."""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from core.model.kinematics import KinematicTree
from core.model.urdf import parse_urdf, parse_urdf_string

DATA = Path(__file__).resolve().parents[2] / "data"
G1 = DATA / "robots" / "g1" / "unitree_g1_29dof.urdf"


def _rx(a):
    c, s = math.cos(a), math.sin(a)
    return np.array([[1, 0, 0], [0, c, -s], [0, s, c]])


def _ry(a):
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, 0, s], [0, 1, 0], [-s, 0, c]])


def _rz(a):
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]])


def _robot(body: str, links: list[str]) -> KinematicTree:
    link_tags = "".join('<link name="%s"/>' % n for n in links)
    text = f'<robot name="t">{link_tags}{body}</robot>'
    return KinematicTree(parse_urdf_string(text))


def _pos(tree: KinematicTree, poses: np.ndarray, name: str) -> np.ndarray:
    return poses[:, tree.link_index(name), :3, 3]


# ------------------------------------------------------------ planar arm ---

L1, L2 = 0.7, 0.4

PLANAR = f"""
<joint name="j1" type="revolute"><parent link="base"/><child link="a"/>
  <axis xyz="0 0 1"/><limit lower="-3" upper="3"/></joint>
<joint name="j2" type="revolute"><parent link="a"/><child link="b"/>
  <origin xyz="{L1} 0 0"/><axis xyz="0 0 1"/><limit lower="-3" upper="3"/></joint>
<joint name="tip_joint" type="fixed"><parent link="b"/><child link="tip"/>
  <origin xyz="{L2} 0 0"/></joint>
"""


@pytest.fixture(scope="module")
def planar():
    return _robot(PLANAR, ["base", "a", "b", "tip"])


def test_planar_arm_structure(planar):
    assert planar.dof == 2
    assert planar.joint_names == ["j1", "j2"]
    assert planar.link_names == ["base", "a", "b", "tip"]
    assert list(planar.parent) == [-1, 0, 1, 2]
    np.testing.assert_array_equal(planar.lower, [-3, -3])
    np.testing.assert_array_equal(planar.upper, [3, 3])


@pytest.mark.parametrize("q1,q2", [(0.0, 0.0), (0.5, 0.0), (0.0, 1.2), (0.3, -0.9),
                                   (-2.5, 2.0), (math.pi / 2, -math.pi / 2)])
def test_planar_arm_tip_by_trigonometry(planar, q1, q2):
    poses = planar.forward(np.array([[q1, q2]]))
    expected_tip = [L1 * math.cos(q1) + L2 * math.cos(q1 + q2),
                    L1 * math.sin(q1) + L2 * math.sin(q1 + q2), 0.0]
    np.testing.assert_allclose(_pos(planar, poses, "tip")[0], expected_tip, atol=1e-12)
    np.testing.assert_allclose(_pos(planar, poses, "b")[0],
                               [L1 * math.cos(q1), L1 * math.sin(q1), 0.0], atol=1e-12)
    # The tip frame is rotated by q1 + q2 about z.
    np.testing.assert_allclose(poses[0, 3, :3, :3], _rz(q1 + q2), atol=1e-12)
    np.testing.assert_allclose(poses[0, :, 3], np.tile([0, 0, 0, 1.0], (4, 1)))


def test_zero_pose_is_forward_of_zero(planar):
    np.testing.assert_allclose(planar.zero_pose(), planar.forward(np.zeros((1, 2)))[0])
    np.testing.assert_allclose(planar.zero_pose()[3, :3, 3], [L1 + L2, 0, 0])


def test_one_dimensional_q_is_one_frame(planar):
    poses = planar.forward(np.array([0.4, 0.2]))
    assert poses.shape == (1, 4, 4, 4)
    np.testing.assert_allclose(poses, planar.forward(np.array([[0.4, 0.2]])))


# -------------------------------------------------------------- prismatic ---

def test_prismatic_joint_slides_along_normalised_axis():
    tree = _robot("""
      <joint name="lift" type="prismatic"><parent link="base"/><child link="slider"/>
        <origin xyz="0.1 0.2 0.3"/><axis xyz="0 0 2"/><limit lower="0" upper="0.5"/></joint>
      <joint name="f" type="fixed"><parent link="slider"/><child link="pad"/>
        <origin xyz="0.05 0 0"/></joint>""", ["base", "slider", "pad"])
    q = np.array([[0.0], [0.25], [0.5]])
    poses = tree.forward(q)
    np.testing.assert_allclose(_pos(tree, poses, "slider"),
                               [[0.1, 0.2, 0.3], [0.1, 0.2, 0.55], [0.1, 0.2, 0.8]], atol=1e-12)
    np.testing.assert_allclose(_pos(tree, poses, "pad") - _pos(tree, poses, "slider"),
                               np.tile([0.05, 0, 0], (3, 1)), atol=1e-12)
    # Sliding never rotates.
    np.testing.assert_allclose(poses[:, 2, :3, :3], np.tile(np.eye(3), (3, 1, 1)), atol=1e-12)


def test_prismatic_axis_is_in_the_rotated_joint_frame():
    tree = _robot("""
      <joint name="s" type="prismatic"><parent link="base"/><child link="c"/>
        <origin xyz="1 0 0" rpy="0 0 1.5707963267948966"/><axis xyz="1 0 0"/>
        <limit lower="-1" upper="1"/></joint>""", ["base", "c"])
    poses = tree.forward(np.array([[0.3]]))
    np.testing.assert_allclose(_pos(tree, poses, "c")[0], [1.0, 0.3, 0.0], atol=1e-12)


def test_revolute_after_prismatic():
    # Slide up by d, then rotate about x by a: a point 0.2 along y ends at (0, 0.2 cos a, d + 0.2 sin a).
    tree = _robot("""
      <joint name="s" type="prismatic"><parent link="base"/><child link="c"/>
        <axis xyz="0 0 1"/><limit lower="-1" upper="1"/></joint>
      <joint name="r" type="continuous"><parent link="c"/><child link="d"/><axis xyz="1 0 0"/></joint>
      <joint name="f" type="fixed"><parent link="d"/><child link="e"/><origin xyz="0 0.2 0"/></joint>
      """, ["base", "c", "d", "e"])
    assert np.isinf(tree.lower[1]) and np.isinf(tree.upper[1])  # continuous: unlimited
    d, a = 0.4, 0.7
    e = _pos(tree, tree.forward(np.array([[d, a]])), "e")[0]
    np.testing.assert_allclose(e, [0.0, 0.2 * math.cos(a), d + 0.2 * math.sin(a)], atol=1e-12)


# ------------------------------------------------------------ rpy origins ---

@pytest.mark.parametrize("rpy", [(math.pi / 2, 0.0, math.pi / 2), (0.3, -0.4, 1.1), (-1.0, 0.6, -2.0)])
def test_rpy_origins_compose_as_fixed_axis_xyz(rpy):
    r, p, y = rpy
    tree = _robot(f"""
      <joint name="j" type="revolute"><parent link="base"/><child link="c"/>
        <origin xyz="0.5 -0.2 0.1" rpy="{r!r} {p!r} {y!r}"/><axis xyz="0 1 0"/>
        <limit lower="-2" upper="2"/></joint>
      <joint name="f" type="fixed"><parent link="c"/><child link="tip"/>
        <origin xyz="0.1 0.2 0.3"/></joint>""", ["base", "c", "tip"])
    for angle in (0.0, 0.8):
        poses = tree.forward(np.array([[angle]]))
        rot = _rz(y) @ _ry(p) @ _rx(r) @ _ry(angle)
        np.testing.assert_allclose(poses[0, 1, :3, :3], rot, atol=1e-12)
        np.testing.assert_allclose(_pos(tree, poses, "tip")[0],
                                   np.array([0.5, -0.2, 0.1]) + rot @ [0.1, 0.2, 0.3], atol=1e-12)


def test_rpy_quarter_turns_by_hand():
    # roll 90 then yaw 90 (fixed axes): x -> y and y -> z.
    tree = _robot("""
      <joint name="f0" type="fixed"><parent link="base"/><child link="c"/>
        <origin xyz="1 0 0" rpy="1.5707963267948966 0 1.5707963267948966"/></joint>
      <joint name="fx" type="fixed"><parent link="c"/><child link="px"/><origin xyz="1 0 0"/></joint>
      <joint name="fy" type="fixed"><parent link="c"/><child link="py"/><origin xyz="0 1 0"/></joint>
      """, ["base", "c", "px", "py"])
    assert tree.dof == 0
    poses = tree.forward(np.zeros((1, 0)))
    np.testing.assert_allclose(_pos(tree, poses, "px")[0], [1, 1, 0], atol=1e-12)
    np.testing.assert_allclose(_pos(tree, poses, "py")[0], [1, 0, 1], atol=1e-12)


# ------------------------------------------------------------------ mimic ---

MIMIC = f"""
<joint name="lead" type="revolute"><parent link="base"/><child link="a"/>
  <axis xyz="0 0 1"/><limit lower="-3" upper="3"/></joint>
<joint name="follow" type="revolute"><parent link="a"/><child link="b"/>
  <origin xyz="{L1} 0 0"/><axis xyz="0 0 1"/><limit lower="-3" upper="3"/>
  <mimic joint="lead" multiplier="-2.0" offset="0.25"/></joint>
<joint name="tip_joint" type="fixed"><parent link="b"/><child link="tip"/>
  <origin xyz="{L2} 0 0"/></joint>
"""


@pytest.mark.parametrize("q1", [0.0, 0.4, -1.1])
def test_mimic_joint_follows_leader(q1):
    tree = _robot(MIMIC, ["base", "a", "b", "tip"])
    assert tree.joint_names == ["lead"]  # the mimic joint is driven, not a variable
    assert tree.qindex[tree.link_index("b")] == 0
    q2 = -2.0 * q1 + 0.25
    np.testing.assert_allclose(tree.joint_value(np.array([[q1]]), tree.link_index("b")), [q2])
    tip = _pos(tree, tree.forward(np.array([[q1]])), "tip")[0]
    np.testing.assert_allclose(tip, [L1 * math.cos(q1) + L2 * math.cos(q1 + q2),
                                     L1 * math.sin(q1) + L2 * math.sin(q1 + q2), 0.0], atol=1e-12)


def test_prismatic_mimic_gripper():
    tree = _robot("""
      <joint name="left" type="prismatic"><parent link="base"/><child link="l"/>
        <axis xyz="0 1 0"/><limit lower="0" upper="0.04"/></joint>
      <joint name="right" type="prismatic"><parent link="base"/><child link="r"/>
        <axis xyz="0 -1 0"/><limit lower="0" upper="0.04"/><mimic joint="left"/></joint>
      """, ["base", "l", "r"])
    poses = tree.forward(np.array([[0.03]]))
    np.testing.assert_allclose(_pos(tree, poses, "l")[0], [0, 0.03, 0], atol=1e-12)
    np.testing.assert_allclose(_pos(tree, poses, "r")[0], [0, -0.03, 0], atol=1e-12)


# --------------------------------------------------------------------- G1 ---

@pytest.fixture(scope="module")
def g1():
    return KinematicTree(parse_urdf(G1))


def _random_q(tree: KinematicTree, frames: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.uniform(tree.lower, tree.upper, size=(frames, tree.dof))


def _random_root(frames: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    out = np.tile(np.eye(4), (frames, 1, 1))
    for f in range(frames):
        a, b, c = rng.uniform(-math.pi, math.pi, 3)
        out[f, :3, :3] = _rz(a) @ _ry(b) @ _rx(c)
        out[f, :3, 3] = rng.normal(size=3)
    return out


def test_g1_batched_equals_per_frame(g1):
    q = _random_q(g1, 7, seed=1)
    root = _random_root(7, seed=2)
    batch = g1.forward(q, root)
    assert batch.shape == (7, len(g1.link_names), 4, 4)
    for f in range(7):
        np.testing.assert_allclose(batch[f], g1.forward(q[f:f + 1], root[f])[0], atol=1e-12)


def test_g1_poses_are_rigid_transforms(g1):
    poses = g1.forward(_random_q(g1, 5, seed=3), _random_root(5, seed=4))
    rot = poses[..., :3, :3]
    np.testing.assert_allclose(rot @ np.swapaxes(rot, -1, -2), np.broadcast_to(np.eye(3), rot.shape),
                               atol=1e-12)
    np.testing.assert_allclose(np.linalg.det(rot), 1.0, atol=1e-12)


@pytest.mark.parametrize("link", ["left_rubber_hand", "right_wrist_yaw_link", "left_ankle_roll_link",
                                  "mid360_link", "pelvis"])
def test_g1_link_transform_equals_forward(g1, link):
    q = _random_q(g1, 6, seed=5)
    i = g1.link_index(link)
    np.testing.assert_allclose(g1.link_transform(q, i), g1.forward(q)[:, i], atol=1e-12)
    root = _random_root(6, seed=6)
    np.testing.assert_allclose(g1.link_transform(q, i, root), g1.forward(q, root)[:, i], atol=1e-12)


def test_g1_root_moves_everything_rigidly(g1):
    q = _random_q(g1, 4, seed=7)
    root = _random_root(4, seed=8)
    local = g1.forward(q)
    world = g1.forward(q, root)
    np.testing.assert_allclose(world, root[:, None] @ local, atol=1e-12)
    # Distances between links are unchanged by the root.
    d_local = np.linalg.norm(local[:, :, None, :3, 3] - local[:, None, :, :3, 3], axis=-1)
    d_world = np.linalg.norm(world[:, :, None, :3, 3] - world[:, None, :, :3, 3], axis=-1)
    np.testing.assert_allclose(d_world, d_local, atol=1e-12)
    # A single (4, 4) root applies to every frame.
    np.testing.assert_allclose(g1.forward(q, root[0]), root[0] @ local, atol=1e-12)


def test_g1_knee_bends_the_shin_by_its_angle(g1):
    """Bending only the left knee rotates the ankle about the knee axis by exactly that angle."""
    knee = g1.link_index("left_knee_link")
    ankle = g1.link_index("left_ankle_pitch_link")
    col = g1.joint_names.index("left_knee_joint")
    q = np.zeros((2, g1.dof))
    q[1, col] = 1.0
    poses = g1.forward(q)
    shin0 = poses[0, ankle, :3, 3] - poses[0, knee, :3, 3]
    shin1 = poses[1, ankle, :3, 3] - poses[1, knee, :3, 3]
    np.testing.assert_allclose(poses[0, knee, :3, 3], poses[1, knee, :3, 3], atol=1e-12)
    axis = poses[0, knee, :3, :3] @ g1.axes[knee]  # the knee axis in world (zero pose)
    np.testing.assert_allclose(axis, poses[1, knee, :3, :3] @ g1.axes[knee], atol=1e-12)
    shin0, shin1 = (s - np.dot(s, axis) * axis for s in (shin0, shin1))  # across the axis
    angle = math.atan2(np.dot(np.cross(shin0, shin1), axis), np.dot(shin0, shin1))
    assert angle == pytest.approx(1.0, abs=1e-9)
    # Links not below the knee do not move.
    others = [i for i in range(len(g1.link_names)) if knee not in g1.path(g1.link_names[0], g1.link_names[i])]
    np.testing.assert_allclose(poses[0, others], poses[1, others], atol=1e-12)


def test_g1_limits_and_indices(g1):
    assert g1.dof == 29
    assert np.all(g1.lower < g1.upper)
    assert np.all(np.isfinite(g1.lower)) and np.all(np.isfinite(g1.upper))
    movable = [i for i in range(len(g1.link_names)) if g1.qindex[i] >= 0]
    assert sorted(g1.qindex[movable]) == list(range(29))


def test_one_product_a_link_gives_the_stacked_products_bits():
    """forward, poses and link_transform multiply each origin by the frames' joint motions side by side, and the
    frames by a fixed link's origin over their rows, as one BLAS product each (KinematicTree.local, carried):
    the bits of numpy's stacked products (a BLAS call per frame), with the root moving and without."""
    tree = KinematicTree(parse_urdf(G1))
    rng = np.random.default_rng(24)
    for frames in (1, 5, 300):
        q = np.clip(rng.uniform(-1.5, 1.5, (frames, tree.dof)), tree.lower, tree.upper)
        root = np.tile(np.eye(4), (frames, 1, 1))
        root[:, :3, 3] = rng.normal(size=(frames, 3))
        want = np.empty((frames, len(tree.link_names), 4, 4))
        want[:, 0] = root
        for i in range(1, len(tree.link_names)):
            local = tree.origins[i] if tree.kind[i] == 0 else tree.origins[i] @ tree.joint_motion(q, i)
            want[:, i] = want[:, tree.parent[i]] @ local
        assert np.array_equal(tree.forward(q, root), want)
        links = list(range(1, len(tree.link_names), 4))
        poses = tree.poses(q, root, links)
        assert all(np.array_equal(poses[k], want[:, k]) for k in links)
        assert all(np.array_equal(tree.link_transform(q, k, root), want[:, k]) for k in links)
