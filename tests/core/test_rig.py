"""core.model.rig: the armature layout reproduces the robot's forward kinematics."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from core.model.kinematics import FIXED, KinematicTree
from core.model.rig import (
    MIN_LENGTH,
    bone_to_root_pose,
    link_matrix_from_bone,
    rig_layout,
    root_pose_to_bone,
)
from core.model.transforms import axis_angle_to_matrix, make_transform, quat_to_matrix
from core.model.urdf import parse_urdf, parse_urdf_string

ROOT = Path(__file__).resolve().parents[2]
ROBOTS = {
    "g1": ROOT / "data" / "robots" / "g1" / "unitree_g1_29dof.urdf",
    "h1": ROOT / "tests" / "data" / "robots" / "unitree_h1_19dof.urdf",
    "panda": ROOT / "tests" / "data" / "robots" / "franka_panda.urdf",
}


@pytest.fixture(scope="module", params=sorted(ROBOTS))
def robot(request):
    tree = KinematicTree(parse_urdf(ROBOTS[request.param]))
    return request.param, tree, rig_layout(tree)


@pytest.fixture(scope="module")
def g1():
    tree = KinematicTree(parse_urdf(ROBOTS["g1"]))
    return tree, rig_layout(tree)


def _b4(bone):
    return make_transform(bone.axis_change)


def _random_q(tree, rng, frames):
    lo = np.where(np.isfinite(tree.lower), tree.lower, -np.pi)
    hi = np.where(np.isfinite(tree.upper), tree.upper, np.pi)
    return rng.uniform(lo, hi, (frames, tree.dof))


def _random_root(rng):
    axis = rng.normal(size=3)
    axis /= np.linalg.norm(axis)
    return make_transform(axis_angle_to_matrix(axis, rng.uniform(-np.pi, np.pi)),
                          rng.uniform(-2, 2, 3))


def _channel_values(tree, layout, q):
    """Joint value per bone name (mimic bones follow their leader)."""
    out = {}
    for bone in layout.bones[1:]:
        out[bone.name] = float(tree.joint_value(q, bone.link))
    return out


def _compose(layout, values, root_local=None):
    """Independent Blender-style pose: parent pose @ (parent rest^-1 @ rest) @ basis."""
    pose = {}
    for bone in layout.bones:
        if bone.kind == "root":
            basis = np.eye(4) if root_local is None else root_local
            pose[bone.name] = bone.matrix @ basis
            continue
        basis = np.eye(4)
        value = values[bone.name]
        if bone.kind == "prismatic":
            basis[0, 3] = value
        else:
            c, s = np.cos(value), np.sin(value)
            basis[:3, :3] = [[1, 0, 0], [0, c, -s], [0, s, c]]
        parent = layout.bone(bone.parent)
        rel = np.linalg.inv(parent.matrix) @ bone.matrix
        pose[bone.name] = pose[parent.name] @ rel @ basis
    return pose


# ------------------------------------------------------------------ counts ---

def test_bone_count_and_channels(robot):
    name, tree, layout = robot
    movable = [j for j in tree.robot.joints if j.movable]
    mimics = [j for j in movable if j.mimic is not None]
    assert len(layout.bones) == len(tree.robot.movable_joints) + 1 + len(mimics)
    assert len(layout.bones) == len(movable) + 1
    # one channel per q column, in tree.joint_names order, naming the joint's child link
    assert len(layout.joint_channels) == tree.dof
    for jname, (bone_name, prop, index) in zip(tree.joint_names, layout.joint_channels):
        joint = tree.robot.joint(jname)
        bone = layout.bone(bone_name)
        assert bone.joint == jname and bone.name == joint.child and index == 0
        assert prop == ("location" if joint.type == "prismatic" else "rotation_euler")
        assert bone.kind == joint.type
        assert bone.lower == joint.lower and bone.upper == joint.upper
        assert bone.velocity == joint.velocity and bone.effort == joint.effort
    assert layout.bones[0].kind == "root" and layout.bones[0].parent is None
    assert layout.bones[0].name == tree.robot.root_link
    seen = set()
    for bone in layout.bones:  # parents before children
        assert bone.parent is None or bone.parent in seen
        seen.add(bone.name)
        assert bone.length >= MIN_LENGTH


def test_counts_per_robot(robot):
    name, tree, layout = robot
    expected = {"g1": (30, 29), "h1": (20, 19), "panda": (10, 8)}[name]
    assert (len(layout.bones), len(layout.joint_channels)) == expected


def test_panda_mimic_finger_has_bone_but_no_column():
    tree = KinematicTree(parse_urdf(ROBOTS["panda"]))
    layout = rig_layout(tree)
    finger2 = layout.bone("panda_rightfinger")
    assert finger2.joint == "panda_finger_joint2" and finger2.kind == "prismatic"
    assert finger2.mimic == ("panda_finger_joint1", 1.0, 0.0)
    assert "panda_finger_joint2" not in tree.joint_names
    assert all(ch[0] != "panda_rightfinger" for ch in layout.joint_channels)
    assert layout.bone("panda_leftfinger").mimic is None


# ------------------------------------------------------------------ frames ---

def test_rest_matrices_are_rigid_and_x_is_joint_axis(robot):
    _, tree, layout = robot
    zero = tree.zero_pose()
    for bone in layout.bones:
        rot = bone.matrix[:3, :3]
        assert np.allclose(rot.T @ rot, np.eye(3), atol=1e-12)
        assert np.isclose(np.linalg.det(rot), 1.0)
        assert np.allclose(bone.matrix[3], [0, 0, 0, 1])
        # head at the link origin
        assert np.allclose(bone.matrix[:3, 3], zero[bone.link][:3, 3], atol=1e-12)
        assert np.allclose(bone.link_matrix, zero[bone.link], atol=1e-12)
        if bone.kind == "root":
            continue
        world_axis = zero[bone.link][:3, :3] @ tree.axes[bone.link]
        assert np.allclose(rot[:, 0], world_axis / np.linalg.norm(world_axis), atol=1e-12)
        assert np.allclose(bone.axis, tree.robot.joint(bone.joint).axis)


def test_y_points_at_first_child_body(g1):
    tree, layout = g1
    zero = tree.zero_pose()
    knee = layout.bone("left_knee_link")
    ankle = zero[tree.link_index("left_ankle_pitch_link")][:3, 3]
    to_child = ankle - knee.matrix[:3, 3]
    x = knee.matrix[:3, 0]
    perp = to_child - x * (x @ to_child)
    assert np.allclose(knee.matrix[:3, 1], perp / np.linalg.norm(perp), atol=1e-12)
    assert np.isclose(knee.length, np.linalg.norm(to_child))


@pytest.mark.parametrize("with_root", [False, True])
def test_bone_chain_reproduces_forward_kinematics(robot, with_root):
    """The key property: rest matrices + one local-X channel per bone = URDF FK."""
    _, tree, layout = robot
    rng = np.random.default_rng(7)
    qs = _random_q(tree, rng, 25)
    for q in qs:
        root = _random_root(rng) if with_root else np.eye(4)
        loc, quat = root_pose_to_bone(layout, root[None, :3, 3], root[None, :3, :3])
        root_local = make_transform(quat_to_matrix(quat[0]), loc[0])
        pose = _compose(layout, _channel_values(tree, layout, q), root_local)
        frames = tree.forward(q[None], root=root)[0]
        for bone in layout.bones:
            expected = frames[bone.link] @ _b4(bone)
            assert np.abs(pose[bone.name] - expected).max() < 1e-9, bone.name
            link = link_matrix_from_bone(bone, pose[bone.name])
            assert np.abs(link - frames[bone.link]).max() < 1e-9
            # merged fixed links ride on the bone with their constant offset
            for link, offset in bone.merged_links:
                got = link_matrix_from_bone(bone, pose[bone.name]) @ offset
                assert np.abs(got - frames[tree.link_index(link)]).max() < 1e-9, link


def test_channel_rotation_is_joint_rotation(g1):
    """B @ Rx(q) = R(axis, q) @ B for every bone (the identity the rig relies on)."""
    tree, layout = g1
    for bone in layout.bones[1:]:
        q = 0.7
        c, s = np.cos(q), np.sin(q)
        rx = np.array([[1, 0, 0], [0, c, -s], [0, s, c]])
        lhs = bone.axis_change @ rx
        rhs = axis_angle_to_matrix(tree.axes[bone.link], q) @ bone.axis_change
        assert np.allclose(lhs, rhs, atol=1e-12)


def test_link_matrix_from_bone_batched(g1):
    tree, layout = g1
    rng = np.random.default_rng(3)
    q = _random_q(tree, rng, 6)
    frames = tree.forward(q)
    bone = layout.bone("left_elbow_link")
    posed = frames[:, bone.link] @ _b4(bone)
    assert np.allclose(link_matrix_from_bone(bone, posed), frames[:, bone.link], atol=1e-12)


# --------------------------------------------------------------- root pose ---

def test_root_pose_round_trip_and_continuity(robot):
    _, tree, layout = robot
    rng = np.random.default_rng(11)
    n = 200
    t = np.linspace(0, 4 * np.pi, n)
    axis = np.array([0.3, -0.5, 0.8]) / np.linalg.norm([0.3, -0.5, 0.8])
    rot = axis_angle_to_matrix(axis, t)  # several full turns: quaternion sign must not jump
    pos = rng.normal(size=(n, 3))
    loc, quat = root_pose_to_bone(layout, pos, rot)
    assert loc.shape == (n, 3) and quat.shape == (n, 4)
    assert np.allclose(np.linalg.norm(quat, axis=1), 1.0)
    assert np.all(np.einsum("ij,ij->i", quat[1:], quat[:-1]) > 0)
    back_pos, back_rot = bone_to_root_pose(layout, loc, quat)
    assert np.allclose(back_pos, pos, atol=1e-12)
    assert np.allclose(back_rot, rot, atol=1e-12)
    # the posed root bone is the root link frame times B
    root = layout.bones[0]
    local = np.broadcast_to(np.eye(4), (n, 4, 4)).copy()
    local[:, :3, :3], local[:, :3, 3] = quat_to_matrix(quat), loc
    posed = root.matrix @ local
    world = np.broadcast_to(np.eye(4), (n, 4, 4)).copy()
    world[:, :3, :3], world[:, :3, 3] = rot, pos
    assert np.allclose(posed, world @ _b4(root), atol=1e-12)


def test_identity_root_pose_is_rest(robot):
    _, _, layout = robot
    loc, quat = root_pose_to_bone(layout, np.zeros((1, 3)), np.eye(3)[None])
    assert np.allclose(loc, 0) and np.allclose(quat, [[1, 0, 0, 0]])


# ------------------------------------------------------------ merged links ---

def test_g1_fixed_links_are_merged(g1):
    tree, layout = g1
    owner = {link: bone.name for bone in layout.bones for link, _ in bone.merged_links}
    assert set(owner) == set(tree.link_names)  # every link rides on exactly one bone
    assert sum(len(b.merged_links) for b in layout.bones) == len(tree.link_names)
    assert owner["head_link"] == "torso_link"
    assert owner["logo_link"] == "torso_link"
    assert owner["imu_in_torso"] == "torso_link"
    assert owner["imu_in_pelvis"] == "pelvis"
    assert owner["pelvis_contour_link"] == "pelvis"
    assert owner["left_rubber_hand"] == "left_wrist_yaw_link"
    assert owner["right_rubber_hand"] == "right_wrist_yaw_link"
    assert layout.bone_of_link("head_link").name == "torso_link"
    for name in ("head_link", "imu_in_torso", "left_rubber_hand"):
        assert name not in {b.name for b in layout.bones}
    zero = tree.zero_pose()
    for bone in layout.bones:
        first = bone.merged_links[0]
        assert first[0] == bone.link_name and np.array_equal(first[1], np.eye(4))
        for link, offset in bone.merged_links:
            got = zero[bone.link] @ offset
            assert np.allclose(got, zero[tree.link_index(link)], atol=1e-12)


def test_fixed_chain_between_bodies():
    """A movable joint below a chain of fixed links: parent is the nearest body."""
    text = """<robot name="r">
      <link name="base"/><link name="f1"/><link name="f2"/><link name="arm"/><link name="tip"/>
      <joint name="a" type="fixed"><parent link="base"/><child link="f1"/>
        <origin xyz="0 0 0.5" rpy="0.3 0 0"/></joint>
      <joint name="b" type="fixed"><parent link="f1"/><child link="f2"/>
        <origin xyz="0.1 0 0" rpy="0 0.2 0"/></joint>
      <joint name="c" type="revolute"><parent link="f2"/><child link="arm"/>
        <origin xyz="0 0.2 0" rpy="0 0 0.4"/><axis xyz="0 1 1"/>
        <limit lower="-1" upper="1" effort="5" velocity="2"/></joint>
      <joint name="d" type="continuous"><parent link="arm"/><child link="tip"/>
        <origin xyz="0 0 0.3"/><axis xyz="1 0 0"/></joint>
    </robot>"""
    tree = KinematicTree(parse_urdf_string(text))
    layout = rig_layout(tree)
    assert [b.name for b in layout.bones] == ["base", "arm", "tip"]
    assert layout.bone("arm").parent == "base"
    assert [m for m, _ in layout.bone("base").merged_links] == ["base", "f1", "f2"]
    tip = layout.bone("tip")
    assert tip.kind == "continuous" and tip.lower is None and tip.upper is None
    # tip is a leaf: Y is still perpendicular to the axis
    assert abs(tip.matrix[:3, 0] @ tip.matrix[:3, 1]) < 1e-12
    for q in (np.array([0.3, -2.0]), np.array([-0.9, 5.0])):
        pose = _compose(layout, _channel_values(tree, layout, q))
        frames = tree.forward(q[None])[0]
        for bone in layout.bones:
            assert np.abs(pose[bone.name] - frames[bone.link] @ _b4(bone)).max() < 1e-9


def test_degenerate_child_directions():
    """Child origins on the joint axis or coincident fall back to a perpendicular Y."""
    text = """<robot name="r">
      <link name="base"/><link name="a"/><link name="b"/><link name="c"/>
      <joint name="ja" type="revolute"><parent link="base"/><child link="a"/>
        <axis xyz="0 0 1"/><limit lower="-1" upper="1"/></joint>
      <joint name="jb" type="revolute"><parent link="a"/><child link="b"/>
        <origin xyz="0 0 0.4"/><axis xyz="0 0 1"/><limit lower="-1" upper="1"/></joint>
      <joint name="jc" type="prismatic"><parent link="b"/><child link="c"/>
        <axis xyz="0 0 -1"/><limit lower="0" upper="0.1"/></joint>
    </robot>"""
    tree = KinematicTree(parse_urdf_string(text))
    layout = rig_layout(tree)
    for bone in layout.bones:
        rot = bone.matrix[:3, :3]
        assert np.allclose(rot.T @ rot, np.eye(3), atol=1e-12)
        assert bone.length >= MIN_LENGTH
    assert np.allclose(layout.bone("c").matrix[:3, 0], [0, 0, -1])
    assert layout.joint_channels[2] == ("c", "location", 0)


def test_long_link_names_are_clipped_uniquely():
    long_a = "x" * 70 + "_a"
    long_b = "x" * 70 + "_b"
    text = f"""<robot name="r"><link name="base"/><link name="{long_a}"/><link name="{long_b}"/>
      <joint name="ja" type="continuous"><parent link="base"/><child link="{long_a}"/></joint>
      <joint name="jb" type="continuous"><parent link="base"/><child link="{long_b}"/></joint>
    </robot>"""
    layout = rig_layout(KinematicTree(parse_urdf_string(text)))
    names = [b.name for b in layout.bones]
    assert len(set(names)) == 3 and all(len(n.encode()) <= 63 for n in names)
    assert layout.bones[1].link_name == long_a and layout.bones[2].link_name == long_b
    assert layout.bone_of_link(long_b) is layout.bones[2]


def test_fixed_only_robot_has_just_a_root():
    text = """<robot name="r"><link name="base"/><link name="cam"/>
      <joint name="j" type="fixed"><parent link="base"/><child link="cam"/>
        <origin xyz="0 0 1"/></joint></robot>"""
    tree = KinematicTree(parse_urdf_string(text))
    assert tree.kind[1] == FIXED
    layout = rig_layout(tree)
    assert [b.name for b in layout.bones] == ["base"] and layout.joint_channels == []
    assert [m for m, _ in layout.bones[0].merged_links] == ["base", "cam"]
