"""Auto-map and bake onto humanoids of other shapes than the bundled ones.

The robots are built in the test (tests/robot_variants.humanoid): rooted at the
pelvis or the torso, arms down or sideways in the zero pose, an arm that ends at
the elbow, a wrist or a fixed hand link, a leg that ends at the ankle pitch link
or a foot link, zero to three waist joints, with or without a head, stacked hip
and shoulder joints with or without offsets. Every one must get both legs, both
arms and the spine, bake the walk without a warning, and show the limbs where
the actor has them.
"""
from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from core.collision import collision_pairs
from core.collision.pairs import body_distances
from core.model.kinematics import KinematicTree
from core.motion.bvh import load_bvh
from core.retarget.automap import auto_map
from core.retarget.pipeline import retarget
from tests.robot_variants import humanoid

ROOT = Path(__file__).resolve().parents[2]
WALK = ROOT / "data" / "motion" / "cmu_131_01_walk_m.bvh"

SHAPES = {
    "plain": {},
    "rooted at the torso": {"root": "torso"},
    "T-pose arms": {"arms": "sideways"},
    "T-pose, rooted at the torso": {"root": "torso", "arms": "sideways"},
    "arm ends at the elbow": {"arm_end": "elbow"},
    "arm ends at the wrist": {"arm_end": "wrist"},
    "leg ends at the ankle pitch": {"leg_end": "ankle"},
    "no waist joint": {"waist": 0},
    "three waist joints": {"waist": 3},
    "no head": {"head": False},
    "stacked joints on one point": {"stacked": 0.0},
    "torso root, no waist, no head, elbow and ankle ends": {"root": "torso", "waist": 0, "head": False,
                                                            "arm_end": "elbow", "leg_end": "ankle"},
}


@pytest.fixture(scope="module")
def walk():
    clip = load_bvh(WALK)
    return dataclasses.replace(clip, motion=clip.motion[:240]).to_source_motion()


@pytest.fixture(scope="module")
def bakes(walk):
    out = {}
    for name, shape in SHAPES.items():
        tree = KinematicTree(humanoid(**shape))
        mapping = auto_map(walk, tree)
        out[name] = (tree, mapping, retarget(walk, tree, mapping))
    return out


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_every_shape_gets_legs_arms_and_spine(shape, bakes):
    tree, mapping, result = bakes[shape]
    names = {c.name for c in mapping.chains}
    assert {"spine", "left_leg", "right_leg", "left_arm", "right_arm"} <= names
    assert result.report["warnings"] == []
    assert result.report["automap_confidence"] == 1.0
    by_limb = result.report["limb_direction_error_by_limb"]
    assert max(by_limb.values()) < 5.0, by_limb
    assert result.report["limit_violations"] == 0


@pytest.mark.parametrize("shape", ["no waist joint", "torso root, no waist, no head, elbow and ankle ends"])
def test_avoidance_bakes_a_spine_without_joints(shape, walk):
    """A robot whose spine chain has no joint (torso fixed to the pelvis) bakes with avoidance on:
    the spine's solve moves nothing, so it keeps nothing apart (it stopped the bake with a reshape
    error, 2026-12-02, session 13). The arms and legs still make room and the report says so."""
    tree = KinematicTree(humanoid(**SHAPES[shape]))
    mapping = auto_map(walk, tree)
    mapping.settings = dataclasses.replace(mapping.settings, avoid_self_collision=True)
    report = retarget(walk, tree, mapping).report
    assert report["self_collision_avoided"] is True
    assert report["limit_violations"] == 0
    assert report["self_collision_pct"] == 0.0


def test_avoidance_leaves_a_bake_alone_where_no_pair_comes_near(walk):
    """The plain humanoid's walk never brings a checked pair (its shapes are the hands and the feet) within the
    margin: with avoidance on it bakes the motion it bakes without. With no frame inside, the room's sample grid
    was once the clip's two ends, whose rate limit took 239 frames for one step: the right arm went 0.5 rad off,
    24.8 degrees of limb error, the left 0.17 rad."""
    tree = KinematicTree(humanoid())
    mapping = auto_map(walk, tree).with_settings(avoid_self_collision=False)
    off = retarget(walk, tree, mapping)
    root = np.tile(np.eye(4), (len(off.q), 1, 1))
    root[:, :3, :3], root[:, :3, 3] = off.root_rotation, off.root_position
    nearest = body_distances(tree, collision_pairs(tree), off.q, root, exact_below=1.0).min()
    assert nearest > mapping.settings.collision_margin, nearest  # measured 0.10 m (the two wrists)
    on = retarget(walk, tree, mapping.with_settings(avoid_self_collision=True))
    assert on.report["self_collision_avoided"] is True
    np.testing.assert_allclose(on.q, off.q, rtol=0, atol=1e-12)
    assert on.report["limb_direction_error_by_limb"] == pytest.approx(off.report["limb_direction_error_by_limb"])


def _gimbal_frames(tree, q: np.ndarray) -> np.ndarray:
    """Frames where a shoulder's roll is within 25 degrees of a quarter turn: its pitch and yaw
    axes nearly line up, the answer is not unique to rounding, and two exact descriptions of one
    robot may part by centimetres there (the walk ends with the right arm raised to the side)."""
    out = np.zeros(len(q), dtype=bool)
    for side in ("left", "right"):
        roll = q[:, tree.joint_names.index(f"{side}_shoulder_roll_joint")]
        out |= np.abs(np.abs(roll) - np.pi / 2) < np.radians(25.0)
    return out


@pytest.mark.parametrize("shape", ["rooted at the torso", "T-pose arms", "T-pose, rooted at the torso"])
def test_root_and_zero_pose_do_not_change_the_motion(shape, bakes):
    """The same mechanism with another URDF root or another arm zero: the same angles, once the
    sideways shoulders' quarter turn is taken off (outside the shoulders' gimbal lock)."""
    tree, _, result = bakes[shape]
    tree0, _, plain = bakes["plain"]
    assert tree.joint_names == tree0.joint_names
    shift = np.zeros(tree.dof)
    if "T-pose" in shape:
        for side, sign in (("left", 1.0), ("right", -1.0)):
            shift[tree.joint_names.index(f"{side}_shoulder_roll_joint")] = sign * np.pi / 2
    clear = ~_gimbal_frames(tree0, plain.q)
    assert clear.mean() > 0.8
    err = np.degrees(np.sqrt(np.mean((result.q[clear] + shift - plain.q[clear]) ** 2)))
    assert err < 0.5, err
