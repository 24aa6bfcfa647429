"""With self-collision avoidance on, the same motion in the world still gives the same robot motion.

The key variants of test_invariance.py (another rest pose, bones along local X, Z-up, centimetres,
the G1 rooted at its torso or with fixed frames added), baked with `avoid_self_collision` on and
the least change holding a joint at its bound wherever it is (core.chains.corrections.HOLD_AT_BOUND,
off by default: README, *Self-collision*): the joints within 0.5 degrees RMS of the original's and
no frame colliding. The inputs differ by the BVH text's precision (1e-6..1e-4). Holding only a
joint already on its bound (a joint 3e-6 rad short was cut there instead: 0.25 rad apart), one
frame's answer flipped and its run's answer with it: the walk's left arm 35 deg apart on frames
167-239 in an A-pose rest, 2.1 deg RMS with bones along local X, the hop 0.6 deg RMS.
"""
from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from core.chains import corrections
from core.model.kinematics import KinematicTree
from core.model.urdf import parse_urdf
from core.motion.bvh import load_bvh
from core.retarget.automap import auto_map
from core.retarget.pipeline import retarget
from tests import robot_variants as RV
from tests import variants as V
from tests.core.test_invariance import ARMS, CROUCHED, G1, REST_POSES, WALK, _rms_deg, _short

HOP = Path(__file__).resolve().parents[2] / "tests" / "data" / "motion" / "cmu_131_03_hop.bvh"


@pytest.fixture(scope="module", autouse=True, params=[True, False], ids=["held everywhere", "default"])
def hold_at_bound(request):
    """HOLD_AT_BOUND on, and the default (the bake the default flip of issue 17 would give): it holds these too
    (measured in session 32; its 2.1 deg RMS with bones along local X, above, was gone before then)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(corrections, "HOLD_AT_BOUND", request.param)
        yield request.param


def _avoiding(motion, tree):
    mapping = auto_map(motion, tree)
    mapping.settings = dataclasses.replace(mapping.settings, avoid_self_collision=True)
    return retarget(motion, tree, mapping)


def _bake(clip, tree, tmp_path: Path, **read):
    motion = load_bvh(V.write_bvh(clip, tmp_path / "variant.bvh")).to_source_motion(**read)
    return motion, _avoiding(motion, tree)


@pytest.fixture(scope="module")
def clip():
    return _short(load_bvh(WALK))


@pytest.fixture(scope="module")
def g1():
    return KinematicTree(parse_urdf(G1))


@pytest.fixture(scope="module")
def original(clip, g1, tmp_path_factory, hold_at_bound):
    motion, result = _bake(clip, g1, tmp_path_factory.mktemp("original"))
    assert result.report["self_collision_avoided"] and result.report["self_collision_pct"] == 0.0
    assert result.report["self_collision_worst"]["depth_m"] == 0.0
    return motion, result


def _same(result, original_result, q: np.ndarray | None = None) -> None:
    """No frame colliding, the joints (q: result's in the original's order) within 0.5 deg RMS."""
    assert result.report["self_collision_pct"] == 0.0
    assert _rms_deg(result.q if q is None else q, original_result.q) < 0.5


@pytest.mark.parametrize("variant", sorted(REST_POSES))
def test_rest_pose_does_not_matter_with_avoidance(variant, clip, g1, original, tmp_path):
    motion, result = _bake(REST_POSES[variant](clip), g1, tmp_path)
    np.testing.assert_allclose(motion.heads, original[0].heads, atol=1e-4)  # the same motion in the world
    _same(result, original[1])


@pytest.mark.parametrize("variant", ["Z-up", "centimetres"])
def test_axes_and_units_do_not_matter_with_avoidance(variant, clip, g1, original, tmp_path):
    if variant == "Z-up":
        _, result = _bake(V.z_up(clip), g1, tmp_path, up="Z")
    else:
        _, result = _bake(V.scaled(clip, 100.0), g1, tmp_path, scale=0.01)
    _same(result, original[1])


def _robot(robot, tmp_path: Path) -> KinematicTree:
    return KinematicTree(parse_urdf(RV.write_urdf(robot, tmp_path / "variant.urdf")))


def _shared(tree: KinematicTree, result, g1: KinematicTree) -> np.ndarray:
    """The variant's joints in the G1's order (fixed frames add no joints)."""
    return result.q[:, [tree.joint_names.index(n) for n in g1.joint_names]]


def test_g1_rooted_at_its_torso_with_avoidance(g1, original, tmp_path):
    tree = _robot(RV.rooted_at(g1.robot, "torso_link"), tmp_path)
    result = _avoiding(original[0], tree)
    assert tree.robot.root_link == "torso_link"
    _same(result, original[1], _shared(tree, result, g1))


def test_fixed_frames_added_to_g1_with_avoidance(g1, original, tmp_path):
    """An IMU, a camera and a sole frame as leaves, and a frame fixed inside the left leg (the knee
    joint hung from it, turned and 2 cm off): the same bodies, so the same room made."""
    turned = np.array([[0, -1, 0, 0.01], [1, 0, 0, 0], [0, 0, 1, -0.02], [0, 0, 0, 1.0]])
    shift = np.eye(4)
    shift[:3, 3] = [0.03, 0.0, -0.03]
    robot = RV.with_frames(g1.robot, {"imu_link": ("pelvis", np.eye(4)), "camera_mount": ("torso_link", shift),
                                      "left_foot_sole": ("left_ankle_roll_link", shift)},
                           {"left_knee_joint": turned})
    tree = _robot(robot, tmp_path)
    result = _avoiding(original[0], tree)
    _same(result, original[1], _shared(tree, result, g1))


def test_the_hop_in_an_a_pose_rest_with_avoidance(g1, tmp_path):
    """Not the walk alone: the hop's first 240 frames (both arms in the torso and at the pelvis)."""
    hop = _short(load_bvh(HOP))
    _, base = _bake(hop, g1, tmp_path)
    _, posed = _bake(V.arms_posed(hop, ARMS, 45.0), g1, tmp_path)
    assert base.report["self_collision_pct"] == 0.0
    _same(posed, base)


def test_the_hop_on_legs_zeroed_in_a_crouch_with_avoidance(g1, tmp_path):
    """The G1 whose knees and hip pitches zero in a crouch bakes the hop as the G1 with avoidance on:
    its legs' neutral stands straight (core.retarget.neutral.LegMarks). With the crouch as the
    neutral, 2.3 deg RMS apart, max 47 deg: the left arm made room the other way round."""
    motion = _short(load_bvh(HOP)).to_source_motion()
    base = _avoiding(motion, g1)
    tree = _robot(RV.zero_shifted(g1.robot, CROUCHED), tmp_path)
    result = _avoiding(motion, tree)
    shift = np.array([CROUCHED.get(n, 0.0) for n in tree.joint_names])
    assert base.report["self_collision_pct"] == 0.0
    _same(result, base, result.q + shift)
