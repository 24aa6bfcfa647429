"""Retargeting on real data, through the public functions only.

Known answers come from core.motion.robot_source: a robot's own joint trajectory,
seen as a character clip, retargeted back onto the same robot must give the
trajectory back. The CMU walk and hop check the everyday path (auto map,
limits, root motion, scale invariance); hand-built URDFs check chains with
more or fewer links than the source, and poses the robot cannot reach.
"""
from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from core.retarget.automap import auto_map
from core.motion.bvh import load_bvh
from core.model.kinematics import KinematicTree
from core.chains.mapping import ChainMapping, Mapping, RetargetSettings
from core.retarget.pipeline import retarget
from core.motion.robot_source import robot_motion, tail_offsets
from core.model.urdf import parse_urdf, parse_urdf_string

ROOT = Path(__file__).resolve().parents[2]
WALK = ROOT / "data" / "motion" / "cmu_131_01_walk_m.bvh"
HOP = ROOT / "tests" / "data" / "motion" / "cmu_131_03_hop.bvh"
HOP_SCALE = 0.056444
G1 = ROOT / "data" / "robots" / "g1" / "unitree_g1_29dof.urdf"
H1 = ROOT / "tests" / "data" / "robots" / "unitree_h1_19dof.urdf"
PANDA = ROOT / "tests" / "data" / "robots" / "franka_panda.urdf"

# Joints whose value the chain shapes pin down (a bend between two long segments, or the
# first joint that swings a long segment), as opposed to twists about a segment.
OBSERVABLE = ["left_hip_pitch_joint", "right_hip_pitch_joint", "left_knee_joint", "right_knee_joint",
              "left_shoulder_pitch_joint", "right_shoulder_pitch_joint", "left_elbow_joint",
              "right_elbow_joint"]


# ----------------------------------------------------------------- helpers ---

def _settings(base: RetargetSettings, **changes) -> RetargetSettings:
    """base with changes; fields this version of the settings does not have are skipped."""
    names = {f.name for f in dataclasses.fields(base)}
    return dataclasses.replace(base, **{k: v for k, v in changes.items() if k in names})


def _sines(tree: KinematicTree, centre: np.ndarray, amplitude: np.ndarray, frames: int = 60,
           fps: float = 30.0, seed: int = 0) -> np.ndarray:
    """Smooth joint trajectories: per joint a sum of three 0.2-1 Hz sines scaled to
    centre +- amplitude, then clipped into the joint limits."""
    rng = np.random.default_rng(seed)
    t = np.arange(frames) / fps
    q = np.empty((frames, tree.dof))
    for j in range(tree.dof):
        wave = sum(rng.uniform(0.3, 1.0) * np.sin(2 * np.pi * rng.uniform(0.2, 1.0) * t
                                                  + rng.uniform(0, 2 * np.pi)) for _ in range(3))
        q[:, j] = centre[j] + amplitude[j] * wave / np.abs(wave).max()
    return np.clip(q, tree.lower, tree.upper)


def _natural_trajectory(tree: KinematicTree, seed: int = 0) -> np.ndarray:
    """Centred between the zero pose and the middle of each range, 40 % of the half-range.

    The middle of G1's hip-roll range is 70 degrees of abduction, where the thigh lies
    almost along the hip-pitch axis and hip pitch cannot be observed; this trajectory
    stays in postures where the observable joints really are observable.
    """
    middle, half = (tree.lower + tree.upper) / 2, (tree.upper - tree.lower) / 2
    zero = np.clip(0.0, tree.lower, tree.upper)
    return _sines(tree, (zero + middle) / 2, 0.4 * half, seed=seed)


def _wide_trajectory(tree: KinematicTree, seed: int = 0) -> np.ndarray:
    """60 % of each joint's range around the middle of the range."""
    middle, half = (tree.lower + tree.upper) / 2, (tree.upper - tree.lower) / 2
    return _sines(tree, middle, 0.6 * half, seed=seed)


def _yaw(angle: np.ndarray) -> np.ndarray:
    c, s = np.cos(angle), np.sin(angle)
    out = np.zeros(np.shape(angle) + (3, 3))
    out[..., 0, 0], out[..., 0, 1], out[..., 1, 0], out[..., 1, 1], out[..., 2, 2] = c, -s, s, c, 1.0
    return out


def _walking_root(frames: int) -> np.ndarray:
    """Root poses (F, 4, 4): 1.2 m forward with a sideways sway, turning +-0.6 rad."""
    s = np.linspace(0.0, 1.0, frames)
    out = np.tile(np.eye(4), (frames, 1, 1))
    out[:, :3, :3] = _yaw(0.6 * np.sin(2 * np.pi * s))
    out[:, :3, 3] = np.stack([1.2 * s, 0.3 * np.sin(np.pi * s), np.full(frames, 0.8)], axis=1)
    return out


def _self_mapping(tree: KinematicTree, mapping: Mapping) -> Mapping:
    """The auto map with each chain's source side set to exactly its robot side.

    A robot seen through robot_motion has bones named after its links, so a chain
    can start and end on the same links on both sides; the robot's tip point is
    moved onto the bone tail robot_motion uses. Then a perfect retarget exists.
    """
    tails = tail_offsets(tree)
    chains = []
    for c in mapping.chains:
        changes = {"source_base": c.robot_base, "source_tips": list(c.robot_tips),
                   "source_fractions": c.robot_fractions,
                   "source_landmarks": getattr(c, "robot_landmarks", None), "robot_start": None}
        if c.source_tip_tail:
            changes["robot_tip_offset"] = [float(v) for v in tails[tree.link_index(c.robot_tips[0])]]
        names = {f.name for f in dataclasses.fields(c)}
        chains.append(dataclasses.replace(c, **{k: v for k, v in changes.items() if k in names}))
    return dataclasses.replace(mapping, chains=chains)


def _chain_report(result) -> dict:
    return {c["name"]: c for c in result.report["chains"]}


def _angles_deg(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    cos = np.einsum("fi,fi->f", a, b) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    return np.degrees(np.arccos(np.clip(cos, -1.0, 1.0)))


def _rotation_error_deg(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    trace = np.einsum("fij,fij->f", a, b)  # trace(a^T b)
    return np.degrees(np.arccos(np.clip((trace - 1.0) / 2.0, -1.0, 1.0)))


def _root(result) -> np.ndarray:
    out = np.tile(np.eye(4), (len(result.q), 1, 1))
    out[:, :3, :3] = result.root_rotation
    out[:, :3, 3] = result.root_position
    return out


def _assert_within_limits(tree: KinematicTree, q: np.ndarray) -> None:
    assert np.all(np.isfinite(q))
    below, above = q < tree.lower, q > tree.upper
    assert not below.any() and not above.any(), \
        [tree.joint_names[j] for j in np.flatnonzero((below | above).any(axis=0))]


# ---------------------------------------------------------------- fixtures ---

@pytest.fixture(scope="module")
def g1():
    return KinematicTree(parse_urdf(G1))


@pytest.fixture(scope="module")
def h1():
    return KinematicTree(parse_urdf(H1))


@pytest.fixture(scope="module")
def walk():
    return load_bvh(WALK).to_source_motion()


@pytest.fixture(scope="module")
def walk_g1_map(walk, g1):
    return auto_map(walk, g1)


@pytest.fixture(scope="module")
def walk_g1(walk, g1, walk_g1_map):
    return retarget(walk, g1, walk_g1_map)


# ------------------------------------------------------------ robot_motion ---

def test_robot_motion_bones_follow_the_links(g1):
    q = _natural_trajectory(g1)[:5]
    root = _walking_root(5)
    motion = robot_motion(g1, q, root, fps=50.0, name="probe")
    poses = g1.forward(q, root)
    assert motion.bone_names == g1.link_names
    np.testing.assert_array_equal(motion.parents, g1.parent)
    assert motion.frames == 5 and motion.fps == 50.0 and motion.name == "probe"
    np.testing.assert_allclose(motion.heads, poses[:, :, :3, 3], atol=1e-12)
    np.testing.assert_allclose(motion.root_rotation, root[:, :3, :3], atol=1e-12)
    zero = g1.zero_pose()
    np.testing.assert_allclose(motion.rest_heads, zero[:, :3, 3], atol=1e-12)
    np.testing.assert_allclose(motion.rest_root_rotation, np.eye(3), atol=1e-12)
    # Tails: the knee bone ends at the ankle, a parent at its first child off its origin.
    knee, ankle = g1.link_index("left_knee_link"), g1.link_index("left_ankle_pitch_link")
    np.testing.assert_allclose(motion.tails[:, knee], motion.heads[:, ankle], atol=1e-12)
    pelvis, left_hip = g1.link_index("pelvis"), g1.link_index("left_hip_pitch_link")
    np.testing.assert_allclose(motion.rest_tails[pelvis], motion.rest_heads[left_hip], atol=1e-12)
    # Every bone has length, and bone lengths never change over frames.
    lengths = np.linalg.norm(motion.tails - motion.heads, axis=-1)
    assert lengths.min() > 1e-3
    np.testing.assert_allclose(lengths, np.broadcast_to(
        np.linalg.norm(motion.rest_tails - motion.rest_heads, axis=-1), lengths.shape), atol=1e-12)


def test_robot_motion_leaf_tails():
    tree = KinematicTree(parse_urdf_string("""
      <robot name="leaf">
        <link name="base"/>
        <link name="foot"><collision><origin xyz="0.1 0 -0.02"/><geometry><sphere radius="0.01"/></geometry></collision>
          <collision><origin xyz="-0.02 0 -0.02"/><geometry><box size="0.1 0.1 0.1"/></geometry></collision>
          <collision><origin xyz="5 5 5"/><geometry><mesh filename="far.stl"/></geometry></collision></link>
        <link name="hand"/>
        <joint name="a" type="revolute"><parent link="base"/><child link="foot"/><origin xyz="0 0 -0.5"/>
          <axis xyz="0 1 0"/><limit lower="-1" upper="1"/></joint>
        <joint name="b" type="continuous"><parent link="base"/><child link="hand"/><origin xyz="0 0.3 0"/>
          <axis xyz="0 0 1"/></joint>
      </robot>"""))
    motion = robot_motion(tree, np.array([[0.0, 0.0], [0.5, np.pi / 2]]))
    foot, hand = tree.link_index("foot"), tree.link_index("hand")
    # Foot: mean of its primitive centres (meshes have no known centre), rotated with the link.
    np.testing.assert_allclose(motion.rest_tails[foot], [0.04, 0.0, -0.52], atol=1e-12)
    pose = tree.forward(np.array([[0.5, np.pi / 2]]))[0, foot]
    np.testing.assert_allclose(motion.tails[1, foot], pose[:3, :3] @ [0.04, 0, -0.02] + pose[:3, 3], atol=1e-12)
    # Hand: nothing to point at, a short segment along its own x axis.
    np.testing.assert_allclose(motion.rest_tails[hand], [0.05, 0.3, 0.0], atol=1e-12)
    np.testing.assert_allclose(motion.tails[1, hand], [0.0, 0.35, 0.0], atol=1e-12)
    # The base's first child off its origin is the foot.
    np.testing.assert_allclose(motion.rest_tails[0], [0.0, 0.0, -0.5], atol=1e-12)


def test_robot_motion_checks_shapes(g1):
    with pytest.raises(ValueError, match="29"):
        robot_motion(g1, np.zeros((3, 5)))
    with pytest.raises(ValueError, match="root"):
        robot_motion(g1, np.zeros((3, 29)), root=np.zeros((2, 4, 4)))
    one = robot_motion(g1, np.zeros(29))  # a single frame as a 1-D vector
    assert one.frames == 1


# --------------------------------------------------------- self-retarget ---

def _self_retarget(tree, q, root=None, **changes):
    """The robot's motion retargeted onto itself through the robot's own chains: mapped on it
    standing (auto-map reads a clip's posture, and a clip of extreme postures is not a person
    standing: it would map fewer chains and leave the rest untested)."""
    motion = robot_motion(tree, q, root)
    mapping = _self_mapping(tree, auto_map(robot_motion(tree, np.zeros((2, tree.dof))), tree))
    # the known answer is the motion as given: nothing keeps the robot's own links apart
    return retarget(motion, tree, mapping, _settings(mapping.settings, filter="none", avoid_self_collision=False,
                                                     **changes))


BODY_CHAINS = ("spine", "left_leg", "right_leg", "left_arm", "right_arm")


def _joint_errors(tree, result, q) -> dict:
    return {name: np.abs(result.q[:, tree.joint_names.index(name)] - q[:, tree.joint_names.index(name)])
            for name in OBSERVABLE}


def test_self_retarget_is_exact_without_regularisation(g1):
    """With the smoothness and rest-pose pulls off, the known answer is the least-squares
    optimum: shapes, observable joints and the root all come back."""
    q = _natural_trajectory(g1)
    root = _walking_root(len(q))
    result = _self_retarget(g1, q, root, smoothness=0.0, rest_prior=0.0)
    chains = _chain_report(result)
    assert set(BODY_CHAINS) <= set(chains)
    for name, c in chains.items():
        body = name in BODY_CHAINS  # hands: a 3-joint wrist steering a 5 cm segment
        assert c["mean_distance"] < (0.005 if body else 0.02), (name, c)
        assert c["tip_direction_error_deg"] < (0.25 if body else 1.5), (name, c)
    for name, err in _joint_errors(g1, result, q).items():
        assert err.mean() < 0.01 and np.percentile(err, 95) < 0.02 and err.max() < 0.2, \
            (name, err.mean(), err.max())
    # Root: same rotation, same horizontal path; height only shifted by the ground clip.
    assert _rotation_error_deg(result.root_rotation, root[:, :3, :3]).max() < 0.01
    np.testing.assert_allclose(result.root_position[:, :2], root[:, :2, 3], atol=1e-4)
    assert np.ptp(result.root_position[:, 2] - root[:, 2, 3]) < 1e-4
    assert result.report["limit_violations"] == 0


def test_self_retarget_default_settings(g1):
    q = _natural_trajectory(g1)
    result = _self_retarget(g1, q)
    for name, c in _chain_report(result).items():
        body = name in BODY_CHAINS
        assert c["mean_distance"] < (0.02 if body else 0.05), (name, c)
        assert c["tip_direction_error_deg"] < (1.5 if body else 2.0), (name, c)
    # The smoothness and rest-pose pulls cost some accuracy, but not much.
    for name, err in _joint_errors(g1, result, q).items():
        assert err.mean() < 0.1 and err.max() < 0.5, (name, err.mean(), err.max())
    _assert_within_limits(g1, result.q)


WIDE_MINIMA = pytest.mark.xfail(strict=True, reason=(
    "BUG/limitation: the solver settles in a wrong local minimum on an extreme but feasible "
    "posture (right hip roll -0.8..-2.2 rad): frames 0-22 of seed 1 get a straight right knee "
    "with hip yaw flipped by ~2 rad instead of the bent knee; right_leg tip error 6.7 deg (seed 1) "
    "and 6.0 deg (seed 2) although an exact answer exists"))


@pytest.mark.parametrize("seed", [0, pytest.param(1, marks=WIDE_MINIMA), pytest.param(2, marks=WIDE_MINIMA)])
def test_self_retarget_wide_motion_keeps_chain_shapes(g1, seed):
    """60 % of every range around its middle: extreme postures, body shapes still matched."""
    q = _wide_trajectory(g1, seed=seed)
    result = _self_retarget(g1, q)
    _assert_within_limits(g1, result.q)
    for name, c in _chain_report(result).items():
        if name in BODY_CHAINS:
            assert c["mean_distance"] < 0.03, (name, c)
            assert c["tip_direction_error_deg"] < 2.0, (name, c)


@pytest.mark.parametrize("which", ["g1", "h1"])
def test_auto_map_of_a_robot_onto_itself_is_the_identity(which, g1, h1):
    tree = {"g1": g1, "h1": h1}[which]
    motion = robot_motion(tree, np.zeros((2, tree.dof)))
    mapping = auto_map(motion, tree)
    assert {"left_leg", "right_leg", "left_arm", "right_arm", "spine"} <= {c.name for c in mapping.chains}
    for c in mapping.chains:
        assert (c.source_base, c.source_tips) == (c.robot_base, c.robot_tips), c.name


def test_self_retarget_with_plain_auto_map(g1):
    """A robot's own motion through the plain auto map (no test-side mapping) comes back exactly
    when nothing regularises: auto-map sees the robot's links and maps each chain onto itself."""
    q = _natural_trajectory(g1)
    root = _walking_root(len(q))
    motion = robot_motion(g1, q, root)
    mapping = auto_map(motion, g1)
    result = retarget(motion, g1, mapping, _settings(mapping.settings, filter="none", smoothness=0.0, rest_prior=0.0,
                                                      avoid_self_collision=False))
    for name, c in _chain_report(result).items():
        assert c["tip_direction_error_deg"] < (0.25 if name in BODY_CHAINS else 1.5), (name, c)
    for name, err in _joint_errors(g1, result, q).items():
        assert err.mean() < 0.01 and np.percentile(err, 95) < 0.02, (name, err.mean())
    assert _rotation_error_deg(result.root_rotation, root[:, :3, :3]).max() < 0.01


def test_self_retarget_l1_is_exact_too(g1):
    """The robust objective has the same optimum when the source is reachable exactly
    (it once compared trial costs under new IRLS weights with the cost under old ones)."""
    q = _natural_trajectory(g1)
    result = _self_retarget(g1, q, smoothness=0.0, rest_prior=0.0, objective="l1")
    for name, c in _chain_report(result).items():
        body = name in BODY_CHAINS
        assert c["mean_distance"] < (0.005 if body else 0.02), (name, c)
        assert c["tip_direction_error_deg"] < (0.25 if body else 1.5), (name, c)


# ------------------------------------------------------------ walk on G1 ---

def test_walk_on_g1_report(walk_g1, g1, walk):
    report = walk_g1.report
    assert report["frames"] == 995 == walk.frames
    assert report["limit_violations"] == 0
    assert report["fps"] == pytest.approx(walk.fps)
    assert walk_g1.q.shape == (995, g1.dof)
    assert walk_g1.joint_names == g1.joint_names
    _assert_within_limits(g1, walk_g1.q)
    for array in (walk_g1.root_position, walk_g1.root_rotation, walk_g1.root_quaternion):
        assert np.all(np.isfinite(array))
    rot = walk_g1.root_rotation
    np.testing.assert_allclose(rot @ np.swapaxes(rot, 1, 2), np.broadcast_to(np.eye(3), rot.shape), atol=1e-9)
    np.testing.assert_allclose(np.linalg.det(rot), 1.0, atol=1e-9)
    assert report["warnings"] == []


def test_frames_per_second_is_the_whole_bakes(walk, g1, walk_g1_map):
    """frames_per_second divides by the whole retarget (planted feet included), not the chain solve."""
    import time

    started = time.perf_counter()
    report = retarget(walk, g1, walk_g1_map, contacts="auto").report
    wall = time.perf_counter() - started
    stages = report["stage_seconds"]
    assert walk_g1_map.settings.avoid_self_collision  # the default: the avoidance's own stage counts too
    assert list(stages) == ["plan", "solve", "filter", "contacts", "plant", "ground", "separate", "report"]
    assert sum(stages.values()) == pytest.approx(report["total_seconds"])
    assert 0.95 * wall <= report["total_seconds"] <= wall  # the stages cover the whole call
    assert report["frames_per_second"] == pytest.approx(report["frames"] / report["total_seconds"])
    assert report["solve_seconds"] == pytest.approx(stages["solve"])
    assert stages["plant"] > 0 and report["feet_planted"]


def test_a_bake_without_figures_is_the_same_motion(walk, g1, walk_g1):
    """figures=False (the gait's bake) skips the fit, viewer and collision figures, not the motion:
    the same joints and root, the report's warnings and mapping kept."""
    bare = retarget(walk, g1, auto_map(walk, g1), figures=False)
    assert np.array_equal(bare.q, walk_g1.q) and np.array_equal(bare.root_position, walk_g1.root_position)
    assert np.array_equal(bare.root_rotation, walk_g1.root_rotation)
    assert bare.report["warnings"] == walk_g1.report["warnings"] and bare.report["mapping"] == walk_g1.report["mapping"]
    assert "chains" in walk_g1.report and "chains" not in bare.report
    assert bare.report["stage_seconds"]["report"] < walk_g1.report["stage_seconds"]["report"]


def test_walk_on_g1_chain_errors(walk_g1):
    chains = _chain_report(walk_g1)
    assert {"spine", "left_leg", "right_leg", "left_arm", "right_arm"} <= set(chains)
    for name in ("left_leg", "right_leg"):
        assert chains[name]["tip_direction_error_deg"] < 2.0, chains[name]
    for name in ("left_arm", "right_arm"):
        assert chains[name]["tip_direction_error_deg"] < 5.0, chains[name]
    for c in chains.values():
        assert np.isfinite(c["mean_distance"]) and np.isfinite(c["tip_direction_error_deg"])


def _leg_length_source(motion) -> float:
    idx = [motion.index(n) for n in ("LeftHip", "LeftKnee", "LeftAnkle")]
    return float(np.linalg.norm(np.diff(motion.rest_heads[idx], axis=0), axis=1).sum())


def _leg_length_robot(tree, links) -> float:
    zero = tree.zero_pose()
    pts = zero[[tree.link_index(n) for n in links], :3, 3]
    return float(np.linalg.norm(np.diff(pts, axis=0), axis=1).sum())


def test_walk_on_g1_root_travels_like_the_hips(walk_g1, walk, g1):
    """The robot root covers the source hips' horizontal path scaled by the leg ratio."""
    ratio = _leg_length_robot(g1, ["left_hip_pitch_link", "left_knee_link", "left_ankle_pitch_link"]) \
        / _leg_length_source(walk)
    hips = walk.heads[:, walk.index("Hips"), :2]
    root = walk_g1.root_position[:, :2]
    src, rob = hips[-1] - hips[0], root[-1] - root[0]
    assert np.linalg.norm(src) > 1.0  # the clip really walks
    assert np.linalg.norm(rob) == pytest.approx(ratio * np.linalg.norm(src), rel=0.2)
    assert _angles_deg(np.append(src, 0.0)[None], np.append(rob, 0.0)[None])[0] < 10.0  # same heading
    # Path length along the way, not just the end points.
    src_path = np.linalg.norm(np.diff(hips, axis=0), axis=1).sum()
    rob_path = np.linalg.norm(np.diff(root, axis=0), axis=1).sum()
    assert rob_path == pytest.approx(ratio * src_path, rel=0.2)
    # Standing height: the pelvis stays above the ground by most of a leg.
    assert walk_g1.root_position[:, 2].min() > 0.5 * _leg_length_robot(
        g1, ["left_hip_pitch_link", "left_knee_link", "left_ankle_pitch_link"])


# --------------------------------------------------------------- hop on H1 ---

@pytest.fixture(scope="module")
def hop_h1(h1):
    clip = load_bvh(HOP)
    out = {}
    for scale in (1.0, HOP_SCALE):
        motion = clip.to_source_motion(scale=scale)
        out[scale] = (motion, retarget(motion, h1, auto_map(motion, h1)))
    return out


def test_hop_on_h1(hop_h1, h1):
    motion, result = hop_h1[HOP_SCALE]
    assert result.report["frames"] == motion.frames
    assert result.report["limit_violations"] == 0
    _assert_within_limits(h1, result.q)
    chains = _chain_report(result)
    for name in ("left_leg", "right_leg", "left_arm", "right_arm"):
        assert chains[name]["tip_direction_error_deg"] < 5.0, chains[name]


def test_hop_scale_is_irrelevant(hop_h1, h1):
    """Chains are compared normalised and the root follows the hips scaled by the leg ratio,
    so a clip in inches and the same clip in metres give the same robot motion."""
    (m1, r1), (m2, r2) = hop_h1[1.0], hop_h1[HOP_SCALE]
    assert auto_map(m1, h1) == auto_map(m2, h1)
    np.testing.assert_allclose(r1.q, r2.q, atol=1e-6)
    np.testing.assert_allclose(r1.root_position, r2.root_position, atol=1e-6)
    np.testing.assert_allclose(r1.root_rotation, r2.root_rotation, atol=1e-9)
    # ... while the source itself differs by the scale.
    np.testing.assert_allclose(m2.heads, HOP_SCALE * m1.heads, rtol=1e-9, atol=1e-12)


# -------------------------------------------------- more and fewer links ---

def _serial_arm(name: str, lengths: list[float], bend_axes: str) -> KinematicTree:
    """A fixed base, a yaw and a pitch joint at the shoulder, then one link per length;
    joints between links bend about the axes in bend_axes (cycled)."""
    axis = {"y": "0 1 0", "z": "0 0 1"}
    links = ["base", "shoulder"]
    joints = ['<joint name="yaw" type="revolute"><parent link="base"/><child link="shoulder"/>'
              '<origin xyz="0 0 0.5"/><axis xyz="0 0 1"/><limit lower="-3.1" upper="3.1"/></joint>']
    parent, offset = "shoulder", 0.0
    for k, length in enumerate(lengths):
        bend = "y" if k == 0 else bend_axes[(k - 1) % len(bend_axes)]
        joints.append(f'<joint name="j{k}" type="revolute"><parent link="{parent}"/><child link="l{k}"/>'
                      f'<origin xyz="{offset} 0 0"/><axis xyz="{axis[bend]}"/>'
                      '<limit lower="-2.5" upper="2.5"/></joint>')
        links.append(f"l{k}")
        parent, offset = f"l{k}", length
    joints.append(f'<joint name="tip_joint" type="fixed"><parent link="{parent}"/><child link="tip"/>'
                  f'<origin xyz="{offset} 0 0"/></joint>')
    links.append("tip")
    tags = "".join('<link name="%s"/>' % n for n in links)
    return KinematicTree(parse_urdf_string(f'<robot name="{name}">{tags}{"".join(joints)}</robot>'))


@pytest.fixture(scope="module")
def three_link_motion():
    source = _serial_arm("three", [0.3, 0.25, 0.2], "y")
    rng = np.random.default_rng(3)
    t = np.arange(80) / 30.0
    q = np.stack([0.8 * np.sin(2 * np.pi * rng.uniform(0.2, 0.6) * t + rng.uniform(0, 2 * np.pi))
                  for _ in range(source.dof)], axis=1)
    return robot_motion(source, q, name="three")


@pytest.mark.parametrize("name,lengths,bend_axes,max_deg", [
    ("two", [0.4, 0.3], "y", 2.0),
    ("snake", [0.1] * 6, "zy", 1.0),
])
def test_chain_with_more_or_fewer_links(three_link_motion, name, lengths, bend_axes, max_deg):
    robot = _serial_arm(name, lengths, bend_axes)
    chain = ChainMapping("arm", "shoulder", ["tip"], "shoulder", ["tip"], role="limb")
    mapping = Mapping([chain], "base", "base", RetargetSettings(filter="none"))
    result = retarget(three_link_motion, robot, mapping)
    _assert_within_limits(robot, result.q)
    np.testing.assert_allclose(result.root_position, 0.0)  # no legs: fixed base
    np.testing.assert_allclose(result.root_rotation, np.broadcast_to(np.eye(3), result.root_rotation.shape))
    poses = robot.forward(result.q)
    m = three_link_motion
    src = m.heads[:, m.index("tip")] - m.heads[:, m.index("shoulder")]
    rob = poses[:, robot.link_index("tip"), :3, 3] - poses[:, robot.link_index("shoulder"), :3, 3]
    angles = _angles_deg(src, rob)
    assert angles.mean() < max_deg / 2 and angles.max() < max_deg, (angles.mean(), angles.max())
    assert _chain_report(result)["arm"]["tip_direction_error_deg"] < max_deg / 2
    # Reach as a fraction of the chain length follows the source where the robot can bend enough.
    reach_src = np.linalg.norm(src, axis=1) / 0.75
    reach_rob = np.linalg.norm(rob, axis=1) / sum(lengths)
    assert np.median(np.abs(reach_rob - reach_src)) < 0.05


# ------------------------------------------------------------------- Panda ---

def test_panda_from_the_walk_is_fixed_base(walk):
    panda = KinematicTree(parse_urdf(PANDA))
    mapping = auto_map(walk, panda)
    roles = sorted(c.role for c in mapping.chains)
    assert roles in (["arm"], ["arm", "hand"]), roles
    right_arm = set(walk.path("RightCollar", "RightWrist")) | set(walk.path("RightCollar", "RFingers")) \
        | set(walk.path("RightCollar", "RThumb"))
    for c in mapping.chains:
        bones = {i for tip in c.source_tips for i in walk.path(c.source_base, tip)}
        assert bones <= right_arm, c
    result = retarget(walk, panda, mapping)
    assert result.report["frames"] == walk.frames
    assert result.report["limit_violations"] == 0
    _assert_within_limits(panda, result.q)
    np.testing.assert_array_equal(result.root_position, 0.0)
    np.testing.assert_array_equal(result.root_rotation, np.broadcast_to(np.eye(3), (walk.frames, 3, 3)))
    assert np.ptp(result.q[:, :7], axis=0).max() > 0.2  # the arm really moves


# -------------------------------------------------------------- NaN frames ---

def test_nan_frames_are_bridged(walk, g1, walk_g1_map):
    whole = [100, 101, 102, 500]
    heads, tails = walk.heads.copy(), walk.tails.copy()
    heads[whole] = np.nan
    tails[whole[:3]] = np.nan
    heads[700, walk.index("LeftToe")] = np.nan  # one point of one bone
    broken = dataclasses.replace(walk, heads=heads, tails=tails)
    settings = _settings(walk_g1_map.settings, filter="none")
    result = retarget(broken, g1, walk_g1_map, settings)
    clean = retarget(walk, g1, walk_g1_map, settings)
    assert np.all(np.isfinite(result.q)) and np.all(np.isfinite(result.root_position))
    _assert_within_limits(g1, result.q)
    warnings = " ".join(result.report["warnings"])
    assert "bridged" in warnings and "5 frame" in warnings and "100" in warnings
    assert clean.report["warnings"] == []
    q = result.q
    for frames, before, after in (([100, 101, 102], 99, 103), ([500], 499, 501)):
        low, high = np.minimum(q[before], q[after]), np.maximum(q[before], q[after])
        for f in frames:
            outside = np.maximum(low - q[f], q[f] - high).max()
            assert outside < 0.02, (f, outside)
    # The root (from the hips) is interpolated too.
    pos = result.root_position
    np.testing.assert_allclose(pos[101, :2], (pos[99, :2] + pos[103, :2]) / 2, atol=0.01)
    # Frames far from the gaps are hardly affected.
    far = np.r_[0:90, 115:490, 515:690, 715:995]
    assert np.abs(result.q[far] - clean.q[far]).max() < 0.05


def test_all_nan_source_is_refused(walk, g1, walk_g1_map):
    from core.retarget.pipeline import RetargetError
    short = dataclasses.replace(walk, heads=np.full_like(walk.heads[:5], np.nan), tails=walk.tails[:5],
                                root_rotation=walk.root_rotation[:5])
    with pytest.raises(RetargetError, match="NaN"):
        retarget(short, g1, walk_g1_map)


# ------------------------------------------------------ filters and limits ---

@pytest.mark.parametrize("changes,max_tip_deg", [
    ({"filter": "butterworth", "cutoff_hz": 7.0}, 5.0),
    ({"filter": "butterworth", "cutoff_hz": 1.0}, None),  # smoothed far below the gait: limits only
    ({"filter": "moving_average", "window": 9}, 5.0),
    ({"objective": "l1"}, 5.0),
    ({"objective": "l1", "filter": "none"}, 5.0),
], ids=["butterworth", "butterworth-1hz", "moving-average", "l1", "l1-unfiltered"])
def test_limits_hold(walk, g1, walk_g1_map, changes, max_tip_deg):
    """Filtering can overshoot a limit the solver respected; the result must still be inside."""
    result = retarget(walk, g1, walk_g1_map, _settings(walk_g1_map.settings, **changes))
    assert result.report["limit_violations"] == 0
    _assert_within_limits(g1, result.q)
    assert np.all(np.isfinite(result.root_position))
    at_limit = np.isclose(result.q, g1.lower, atol=1e-9) | np.isclose(result.q, g1.upper, atol=1e-9)
    assert at_limit.any()  # the walk does push joints onto their limits, so clipping was needed
    if max_tip_deg is not None:
        chains = _chain_report(result)
        for name in ("left_leg", "right_leg", "left_arm", "right_arm"):
            assert chains[name]["tip_direction_error_deg"] < max_tip_deg, chains[name]


def test_filter_smooths(walk, g1, walk_g1_map):
    raw = retarget(walk, g1, walk_g1_map, _settings(walk_g1_map.settings, filter="none"))
    smooth = retarget(walk, g1, walk_g1_map, _settings(walk_g1_map.settings, filter="butterworth",
                                                       cutoff_hz=3.0))
    jerk = lambda q: np.abs(np.diff(q, n=3, axis=0)).mean()  # noqa: E731
    assert jerk(smooth.q) < 0.5 * jerk(raw.q)
    assert smooth.report["jerk_after"] < smooth.report["jerk_before"]


# ------------------------------------------------------- impossible poses ---

def _wrist_points(tree, q, arm: str):
    """Elbow, wrist and hand positions relative to the shoulder, in the torso frame."""
    poses = tree.forward(q)
    torso = poses[:, tree.link_index("torso_link")]
    names = [f"{arm}_elbow_link", f"{arm}_wrist_roll_link", f"{arm}_rubber_hand"]
    shoulder = poses[:, tree.link_index(f"{arm}_shoulder_pitch_link"), :3, 3]
    pts = np.stack([poses[:, tree.link_index(n), :3, 3] - shoulder for n in names], axis=1)
    return np.einsum("fji,fmj->fmi", torso[:, :3, :3], pts)


@pytest.mark.parametrize("joint,beyond", [("left_elbow_joint", -2.2), ("left_knee_joint", -0.9)])
def test_bent_backwards_beyond_the_limits(g1, joint, beyond):
    """A limb bent backwards past the robot's limit: the joint stops at its limit, the
    rest of the body is untouched, and the limb gets as close as it can."""
    frames = 40
    q = np.zeros((frames, g1.dof))
    col = g1.joint_names.index(joint)
    q[:, col] = np.linspace(0.0, beyond, frames)
    motion = robot_motion(g1, q)
    mapping = _self_mapping(g1, auto_map(motion, g1))
    # (the limits alone: avoidance, on by default, lifts the elbow up to 0.15 rad off its bound)
    result = retarget(motion, g1, mapping, _settings(mapping.settings, filter="none", avoid_self_collision=False))
    _assert_within_limits(g1, result.q)
    assert result.report["limit_violations"] == 0
    past = q[:, col] < g1.lower[col] - 0.05
    assert past.sum() > 10
    np.testing.assert_allclose(result.q[past, col], g1.lower[col], atol=1e-3)
    reachable = q[:, col] > g1.lower[col] + 0.05
    # (default settings: the rest-pose pull shortens reachable bends a little)
    np.testing.assert_allclose(result.q[reachable, col], q[reachable, col], atol=0.06)
    side_chains = {"right_leg", "right_arm", "spine", "left_leg" if "elbow" in joint else "left_arm"}
    for name, c in _chain_report(result).items():
        if name in side_chains:  # the prior leans arms to the neutral posture: about 1 mm at the wrist
            assert c["mean_distance"] < 3e-3 and c["tip_direction_error_deg"] < 0.1, (name, c)
    if "elbow" in joint:
        # Closer to the source than simply clipping the true angles into the limits.
        target = _wrist_points(g1, q, "left")
        solved = np.linalg.norm(_wrist_points(g1, result.q, "left") - target, axis=-1).mean(axis=1)
        clipped = np.linalg.norm(_wrist_points(g1, np.clip(q, g1.lower, g1.upper), "left") - target,
                                 axis=-1).mean(axis=1)
        assert solved[past].mean() < 0.8 * clipped[past].mean()
        assert np.all(solved[past] <= clipped[past] + 1e-3)


# ------------------------------------------------------------ what a viewer sees ---

def _yawed(rot_deg: float, axis: int = 2) -> np.ndarray:
    a = np.radians(rot_deg)
    c, s = np.cos(a), np.sin(a)
    i, j = [(1, 2), (2, 0), (0, 1)][axis]
    out = np.eye(4)
    out[i, i], out[i, j], out[j, i], out[j, j] = c, -s, s, c
    return out


def test_viewer_figures_in_the_report(walk_g1):
    report = walk_g1.report
    assert set(report["limb_direction_error_by_limb"]) == {"left_leg", "right_leg", "left_arm", "right_arm"}
    assert report["limb_direction_error_deg"] == pytest.approx(np.mean(list(report["limb_direction_error_by_limb"].values())))
    assert 0.0 < report["limb_direction_error_deg"] < 10.0 and 0.0 < report["torso_orientation_error_deg"] < 20.0


@pytest.mark.parametrize("clip", ["walk", "hop"])
@pytest.mark.parametrize("robot", ["g1", "h1"])
def test_what_a_viewer_sees_with_the_default_bake(clip, robot, g1, h1):
    """The issue's targets, with the default settings (auto-map, planted feet): the limbs point
    where the actor's do (mean at most 2 degrees, none above 3), the torso leans and twists like
    the chest (at most 5), and no joint jumps beyond its velocity limit."""
    tree = {"g1": g1, "h1": h1}[robot]
    path = WALK if clip == "walk" else ROOT / "tests" / "data" / "motion" / "cmu_131_03_hop.bvh"
    motion = load_bvh(path).to_source_motion()
    report = retarget(motion, tree, auto_map(motion, tree), contacts="auto").report
    assert report["limb_direction_error_deg"] <= 2.0, report["limb_direction_error_by_limb"]
    assert max(report["limb_direction_error_by_limb"].values()) <= 3.0, report["limb_direction_error_by_limb"]
    assert report["torso_orientation_error_deg"] <= 5.0
    assert report["max_speed_ratio"] <= 1.0 + 1e-9
    # the test H1 ships without meshes, which the report says (test_unseen_robots)
    assert report["automap_confidence"] == 1.0
    assert [w for w in report["warnings"] if "mesh files not found" not in w] == []
    assert len(report["warnings"]) == (robot == "h1")


def test_viewer_figures_ignore_heading_but_see_a_lean(walk_g1, walk, g1, walk_g1_map):
    """Turning the whole robot about the vertical changes nothing; leaning it forward shows in the
    torso and every limb, although each chain's own tip error (measured in its solved base) does not move."""
    from core.retarget.viewer import viewer_figures

    root = np.tile(np.eye(4), (len(walk_g1.q), 1, 1))
    root[:, :3, :3], root[:, :3, 3] = walk_g1.root_rotation, walk_g1.root_position
    base = viewer_figures(walk, g1, walk_g1_map.chains, walk_g1.q, root)
    turned = viewer_figures(walk, g1, walk_g1_map.chains, walk_g1.q, _yawed(40.0) @ root)
    assert turned["torso_orientation_error_deg"] == pytest.approx(base["torso_orientation_error_deg"], abs=1e-6)
    for limb, error in base["limb_direction_error_by_limb"].items():
        assert turned["limb_direction_error_by_limb"][limb] == pytest.approx(error, abs=1e-6)
    lean = root.copy()
    lean[:, :3, :3] = root[:, :3, :3] @ _yawed(15.0, axis=1)[:3, :3]  # pitch the pelvis 15 degrees
    leaning = viewer_figures(walk, g1, walk_g1_map.chains, walk_g1.q, lean)
    assert leaning["torso_orientation_error_deg"] > base["torso_orientation_error_deg"] + 8.0
    assert leaning["limb_direction_error_deg"] > base["limb_direction_error_deg"] + 5.0


def test_landmarks_out_of_order_never_stop_the_bake(walk, g1, walk_g1_map):
    """A mapping whose landmarks do not run from base to tip (an auto-map edge case or a hand-edited
    preset) is solved without them, with a warning naming the chain, instead of an error."""
    mapping = dataclasses.replace(walk_g1_map, chains=[dataclasses.replace(c) for c in walk_g1_map.chains])
    leg = next(c for c in mapping.chains if c.name == "left_leg")
    leg.source_landmarks = list(reversed(leg.source_landmarks))
    result = retarget(walk, g1, mapping, contacts="off")
    assert np.all(np.isfinite(result.q)) and result.report["limit_violations"] == 0
    warning = [w for w in result.report["warnings"] if "left_leg" in w and "landmarks" in w]
    assert warning and "solved without them" in warning[0]
    assert not [w for w in result.report["warnings"] if "right_leg" in w and "landmarks" in w]


def test_a_clip_without_frames_is_refused_by_name(walk, g1, walk_g1_map):
    from core.retarget.pipeline import RetargetError

    empty = dataclasses.replace(walk, heads=walk.heads[:0], tails=walk.tails[:0],
                                root_rotation=walk.root_rotation[:0], name="empty")
    with pytest.raises(RetargetError, match="'empty' has no frames"):
        retarget(empty, g1, walk_g1_map)
