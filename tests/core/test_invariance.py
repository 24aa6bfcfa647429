"""The same motion in the world gives the same robot motion, whatever the file's conventions.

Each variant re-rigs the bundled CMU walk (tests/variants.py): another rest pose,
bones along local X, Z-up, centimetres, another naming convention, extra bones
that are not limbs. Auto-map must pick the same chains and the bake must give the
same joint angles (within 0.5 degrees RMS) as the original file.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from core.chains.mapping import Mapping
from core.model.kinematics import KinematicTree
from core.model.urdf import parse_urdf
from core.motion.bvh import load_bvh
from core.retarget.automap import auto_map
from core.retarget.pipeline import retarget
from tests import variants as V

ROOT = Path(__file__).resolve().parents[2]
WALK = ROOT / "data" / "motion" / "cmu_131_01_walk_m.bvh"
G1 = ROOT / "data" / "robots" / "g1" / "unitree_g1_29dof.urdf"
FRAMES = 240  # four seconds of the walk: two strides
ARMS = {"left": ["LeftShoulder", "LeftElbow", "LeftWrist"], "right": ["RightShoulder", "RightElbow", "RightWrist"]}


def _short(clip):
    import dataclasses
    return dataclasses.replace(clip, motion=clip.motion[:FRAMES])


@pytest.fixture(scope="module")
def clip():
    return _short(load_bvh(WALK))


@pytest.fixture(scope="module")
def g1():
    return KinematicTree(parse_urdf(G1))


def _bake(clip, tree, tmp_path: Path, **read):
    motion = load_bvh(V.write_bvh(clip, tmp_path / "variant.bvh")).to_source_motion(**read)
    mapping = auto_map(motion, tree)
    return motion, mapping, retarget(motion, tree, mapping)


@pytest.fixture(scope="module")
def original(clip, g1, tmp_path_factory):
    return _bake(clip, g1, tmp_path_factory.mktemp("original"))


def _chains(mapping: Mapping, names: dict[str, str] | None = None) -> list[tuple]:
    back = {v: k for k, v in (names or {}).items()}
    def src(n):
        return back.get(n, n)
    return [(c.name, src(c.source_base), [src(t) for t in c.source_tips], c.robot_base, list(c.robot_tips),
             [src(b) for b in c.source_landmarks or []]) for c in mapping.chains]


def _rms_deg(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.degrees(np.sqrt(np.mean((a - b) ** 2))))


REST_POSES = {
    "bones along local X": lambda c: V.along_x(c),
    "T-pose": lambda c: V.arms_posed(c, ARMS, 0.0),
    "A-pose": lambda c: V.arms_posed(c, ARMS, 45.0),
    "arms forward": lambda c: V.arms_posed(c, ARMS, 0.0, 90.0),  # the CMU rest already has arms down
}


@pytest.mark.parametrize("variant", sorted(REST_POSES))
def test_rest_pose_does_not_matter(variant, clip, g1, original, tmp_path):
    changed = REST_POSES[variant](clip)
    motion, mapping, result = _bake(changed, g1, tmp_path)
    before = original[0]
    assert not np.allclose(motion.rest_heads, before.rest_heads, atol=1e-3)  # the rest pose really differs
    np.testing.assert_allclose(motion.heads, before.heads, atol=1e-4)  # the motion does not
    assert _chains(mapping) == _chains(original[1])
    assert _rms_deg(result.q, original[2].q) < 0.5


def test_bones_along_x_are_no_standing_person(clip):
    """The variant the issue describes: all-zero rotations make a line of bones along X."""
    rest = V.along_x(clip)
    heads = np.array(rest.offsets)
    kids = [j for j in range(len(rest.names)) if rest.parents[j] >= 0 and np.linalg.norm(heads[j]) > 1e-6]
    along = [abs(heads[j, 0]) / np.linalg.norm(heads[j]) for j in kids
             if V.main_child_direction(rest, int(rest.parents[j])) is not None
             and np.allclose(V.main_child_direction(rest, int(rest.parents[j])), heads[j])]
    assert along and min(along) > 0.999


def test_z_up_file_read_as_z_up(clip, g1, original, tmp_path):
    motion, mapping, result = _bake(V.z_up(clip), g1, tmp_path, up="Z")
    assert _chains(mapping) == _chains(original[1])
    assert _rms_deg(result.q, original[2].q) < 0.5


def test_centimetres(clip, g1, original, tmp_path):
    motion, mapping, result = _bake(V.scaled(clip, 100.0), g1, tmp_path, scale=0.01)
    assert _chains(mapping) == _chains(original[1])
    assert _rms_deg(result.q, original[2].q) < 0.5


@pytest.mark.parametrize("convention", sorted(V.CONVENTIONS))
def test_naming_conventions(convention, clip, g1, original, tmp_path):
    names = V.convention_names(convention)
    motion, mapping, result = _bake(V.renamed(clip, names), g1, tmp_path)
    assert _chains(mapping, names) == _chains(original[1])
    assert _rms_deg(result.q, original[2].q) < 0.5


@pytest.mark.parametrize("scramble", [False, True], ids=["named", "scrambled names"])
def test_extra_bones_are_not_limbs(scramble, clip, g1, original, tmp_path):
    """Twist bones, a finger, foot IK targets under the root and a 60 cm prop in the right hand:
    named, the helpers are known by their names; scrambled, by the symmetry of the two sides."""
    extra = V.cmu_extra_bones(clip)
    names = {n: f"bone{i:02d}" for i, n in enumerate(extra.names)} if scramble else {}
    motion, mapping, result = _bake(V.renamed(extra, names), g1, tmp_path)
    assert _chains(mapping, names) == _chains(original[1])
    assert _rms_deg(result.q, original[2].q) < 0.5


@pytest.mark.parametrize("suffix", ["_end", "_End", "Nub"])
def test_fbx_leaf_bones_are_end_sites(suffix, clip, g1, original, tmp_path):
    """An FBX written by Blender (leaf bones on, its default) ends every limb in a motionless bone
    from the last bone's end, as long again: its far end is no body point. Mapped and baked as the
    same clip without them (with them the head outreached the arms and was mapped as one)."""
    leafy = V.with_leaf_bones(clip, suffix)
    motion, mapping, result = _bake(leafy, g1, tmp_path)
    assert len(motion.bone_names) == len(clip.names) + len(clip.end_sites)
    assert _chains(mapping) == _chains(original[1])
    np.testing.assert_allclose(result.q, original[2].q, rtol=0, atol=1e-6)  # the file written again: 2e-8


def _other_side(name: str) -> str:
    return name.replace("left", "\0").replace("right", "left").replace("\0", "right")


@pytest.mark.parametrize("robot", ["g1", "h1"])
def test_the_mirrored_walk_bakes_the_mirrored_motion(robot):
    """The walk seen in a mirror onto a robot built the same on both sides: each joint moves as its
    partner on the other side did (the same angle up to the sign a mirror gives roll and yaw), and
    each limb reads the error its partner did. A tie broken toward the left would show here. The G1's
    collision meshes are not mirror images (its torso's capsules 7 mm off their own mirror image, a wrist 7.3 mm
    off its partner's: bench/s31_mirror/mesh_symmetry.py), so its arms make room otherwise on each side: it is
    baked without avoidance; the H1 with."""
    tree = KinematicTree(parse_urdf(G1 if robot == "g1" else ROOT / "tests" / "data" / "robots" / "unitree_h1_19dof.urdf"))
    walk = load_bvh(WALK).to_source_motion()
    settings = {"avoid_self_collision": False} if robot == "g1" else {}
    bakes = [retarget(m, tree, auto_map(m, tree).with_settings(**settings), contacts="auto")
             for m in (walk, V.mirrored_motion(walk))]
    names = bakes[0].joint_names
    partner = [names.index(_other_side(n)) for n in names]
    np.testing.assert_allclose(np.abs(bakes[1].q[:, partner]), np.abs(bakes[0].q), rtol=0, atol=1e-5)  # G1 1.4e-6
    errors = [b.report["limb_direction_error_by_limb"] for b in bakes]
    assert {_other_side(k): v for k, v in errors[1].items()} == pytest.approx(errors[0], abs=1e-4)
    assert bakes[1].report["contact_preserved_pct"] == bakes[0].report["contact_preserved_pct"]


# ------------------------------------------------------------------ robots ---

from core.model.reroot import hung_from, reroot  # noqa: E402
from tests import robot_variants as RV  # noqa: E402

SIDEWAYS = {"left_shoulder_roll_joint": np.pi / 2, "right_shoulder_roll_joint": -np.pi / 2}


def _robot_bake(robot, motion, tmp_path: Path):
    tree = KinematicTree(parse_urdf(RV.write_urdf(robot, tmp_path / "variant.urdf")))
    mapping = auto_map(motion, tree)
    result = retarget(motion, tree, mapping)
    root = np.tile(np.eye(4), (len(result.q), 1, 1))
    root[:, :3, :3], root[:, :3, 3] = result.root_rotation, result.root_position
    return tree, mapping, result, tree.forward(result.q, root)


@pytest.fixture(scope="module")
def robot_original(original, g1, tmp_path_factory):
    return _robot_bake(g1.robot, original[0], tmp_path_factory.mktemp("g1"))


def _same_world_motion(variant, robot_original, skip=()):
    """Every link the variant did not re-frame is where it is on the original, every frame."""
    tree, _, _, poses = variant
    tree0, _, _, poses0 = robot_original
    links = [n for n in tree0.link_names if n not in skip]
    a = np.stack([poses[:, tree.link_index(n), :3, 3] for n in links], axis=1)
    b = np.stack([poses0[:, tree0.link_index(n), :3, 3] for n in links], axis=1)
    return float(np.abs(a - b).max())


@pytest.mark.parametrize("sideways", [False, True], ids=["arms down", "T-pose arms"])
def test_robot_rooted_at_its_torso(sideways, g1, original, robot_original, tmp_path):
    """G1's URDF re-rooted at the torso (legs hang from the waist joints), optionally with a
    sideways arm zero pose too: the same chains, joint angles and link motion."""
    robot = RV.zero_shifted(g1.robot, SIDEWAYS) if sideways else g1.robot
    robot = RV.rooted_at(robot, "torso_link")
    variant = _robot_bake(robot, original[0], tmp_path)
    tree, mapping, result, _ = variant
    assert tree.robot.root_link == "torso_link" and tree.parent[tree.link_index("pelvis")] >= 0
    assert mapping.robot_root == "pelvis"
    assert [(c.name, c.robot_base, c.robot_tips) for c in mapping.chains] == \
        [(c.name, c.robot_base, c.robot_tips) for c in robot_original[1].chains]
    shift = np.array([SIDEWAYS.get(n, 0.0) if sideways else 0.0 for n in tree.joint_names])
    assert _rms_deg(result.q + shift, robot_original[2].q) < 0.5
    reframed = set(reroot(g1.robot, "torso_link").frame_change) | {"pelvis"}
    assert _same_world_motion(variant, robot_original, skip=reframed) < 0.005  # metres


def test_sideways_arm_zero_pose(g1, original, robot_original, tmp_path):
    """Shoulder roll origins turned 90 degrees (limits shifted to match): the zero pose is a
    T-pose, the motion is the same."""
    variant = _robot_bake(RV.zero_shifted(g1.robot, SIDEWAYS), original[0], tmp_path)
    tree, mapping, result, poses = variant
    zero = tree.zero_pose()
    upper_arm = zero[tree.link_index("left_elbow_link"), :3, 3] - zero[tree.link_index("left_shoulder_roll_link"), :3, 3]
    assert abs(upper_arm[2]) < 0.03 and upper_arm[1] > 0.15  # the variant's zero pose really is sideways
    shift = np.array([SIDEWAYS.get(n, 0.0) for n in tree.joint_names])
    assert _rms_deg(result.q + shift, robot_original[2].q) < 0.5
    assert _same_world_motion(variant, robot_original) < 0.005


def test_rerooting_keeps_every_link_where_it_was(g1):
    """Forward kinematics of the re-rooted robot, carried back through frame_change, is the
    original's for random joint values."""
    rerooted = reroot(g1.robot, "torso_link")
    tree = KinematicTree(rerooted.robot)
    assert tree.joint_names == g1.joint_names
    q = np.random.default_rng(3).uniform(g1.lower, g1.upper, (20, g1.dof))
    poses0 = g1.forward(q)
    torso = poses0[:, g1.link_index("torso_link")]
    poses = tree.forward(q, torso)
    for name in g1.link_names:
        back = rerooted.original_pose(name, poses[:, tree.link_index(name)])
        np.testing.assert_allclose(back, poses0[:, g1.link_index(name)], atol=1e-12)


@pytest.mark.parametrize("root", ["left_ankle_roll_link", "torso_link", "right_knee_link"])
def test_hung_from_its_pelvis_a_re_rooted_g1_is_the_g1(g1, root):
    """A G1 rooted elsewhere, hung from its pelvis again, has every link frame where the G1 has
    it, the pelvis's too: re-hung, the pelvis frame sat on the joint it hung from (from the ankle:
    on the left hip joint, 12 cm off), and a root's path or tilt solved about it moved the robot;
    it is moved to the trunk joint (the waist), where the G1 puts it."""
    tree = KinematicTree(RV.rooted_at(g1.robot, root))
    hung, rerooted = hung_from(tree, "pelvis")
    assert hung.robot.root_link == "pelvis" and rerooted is not None
    zero, zero0 = hung.zero_pose(), g1.zero_pose()
    for name in g1.link_names:
        np.testing.assert_allclose(zero[hung.link_index(name)], zero0[g1.link_index(name)], atol=1e-12, err_msg=name)
    assert hung_from(g1, "pelvis") == (g1, None)  # the G1's own pelvis frame is on its waist joint


def test_a_root_bone_on_the_floor(clip, g1, original, tmp_path):
    """A reference root on the floor that only travels and turns (game rigs): the hips' own
    tilt still carries the body frame, so the bake is the original's."""
    motion, mapping, result = _bake(V.ground_root(clip), g1, tmp_path)
    np.testing.assert_allclose(motion.heads[:, 1:], original[0].heads, atol=1e-4)  # the same joints in the world
    assert motion.bone_names[0] == "Reference" and mapping.source_root == "Hips"
    assert _chains(mapping) == _chains(original[1])
    assert _rms_deg(result.q, original[2].q) < 0.5


CROUCHED = {f"{side}_{joint}": turn for side in ("left", "right")
            for joint, turn in (("knee_joint", 0.6), ("hip_pitch_joint", -0.3))}  # the soles pitched 0.3 rad


def test_planted_feet_stand_level_whatever_the_legs_zero(g1, original, tmp_path):
    """G1 whose knees and hips zero in a crouch (its soles pitched 0.3 rad in the zero pose):
    planted feet are laid level by their soles, not by the zero pose, so the planted bake moves
    every link as the original's does."""
    motion = original[0]

    def planted(robot, name):
        tree = KinematicTree(parse_urdf(RV.write_urdf(robot, tmp_path / f"{name}.urdf")))
        result = retarget(motion, tree, auto_map(motion, tree), contacts="auto")
        root = np.tile(np.eye(4), (len(result.q), 1, 1))
        root[:, :3, :3], root[:, :3, 3] = result.root_rotation, result.root_position
        return tree, None, result, tree.forward(result.q, root)

    base, variant = planted(g1.robot, "g1"), planted(RV.zero_shifted(g1.robot, CROUCHED), "crouched")
    assert variant[2].report["contact_preserved_pct"] == pytest.approx(base[2].report["contact_preserved_pct"], abs=2)
    # within a centimetre (68 mm when the zero pose's tilted sole was taken as level)
    assert _same_world_motion(variant, base) < 0.01


ANKLES_TOO = {**CROUCHED, "left_ankle_pitch_joint": 0.2, "right_ankle_pitch_joint": 0.2}  # the soles pitched 0.5 rad


@pytest.mark.parametrize("shifts", [CROUCHED, ANKLES_TOO], ids=["knees and hips", "ankles too"])
def test_legs_zeroed_in_a_crouch_bake_as_straight_legs(shifts, g1, original, robot_original, tmp_path):
    """G1 whose knees and hip pitches (and ankles) zero in a crouch, baked without planting: the
    neutral posture stands the legs straight by their knees, ankles and soles
    (core.retarget.neutral.LegMarks), not by the zero pose, so the joints are the G1's (with the
    crouch's zero as the neutral: 0.59 deg RMS apart, knees 1.7 deg, max 3.9 deg)."""
    variant = _robot_bake(RV.zero_shifted(g1.robot, shifts), original[0], tmp_path)
    tree, _, result, _ = variant
    zero = tree.zero_pose()
    knee, ankle = (zero[tree.link_index(f"left_{n}_link"), :3, 3] for n in ("knee", "ankle_pitch"))
    assert knee[0] - ankle[0] > 0.08  # the variant's zero pose really crouches (the shin 17 deg off the vertical)
    shift = np.array([shifts.get(n, 0.0) for n in tree.joint_names])
    assert _rms_deg(result.q + shift, robot_original[2].q) < 0.05
    assert _same_world_motion(variant, robot_original) < 0.001
