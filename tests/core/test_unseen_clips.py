"""Clips from elsewhere, built from the bundled hop (tests/variants.py), baked as a user would
(auto-map, default settings) onto G1."""
from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from core.feet.geometry import lowest_points
from core.model.kinematics import KinematicTree
from core.model.transforms import pose_matrices
from core.model.urdf import parse_urdf
from core.motion.bvh import load_bvh
from core.retarget.automap import auto_map
from core.retarget.pipeline import retarget
from tests import variants as V

ROOT = Path(__file__).resolve().parents[2]
HOP = ROOT / "tests" / "data" / "motion" / "cmu_131_03_hop.bvh"
G1 = ROOT / "data" / "robots" / "g1" / "unitree_g1_29dof.urdf"


@pytest.fixture(scope="module")
def hop():
    clip = load_bvh(HOP)
    return dataclasses.replace(clip, motion=clip.motion[:240])


@pytest.fixture(scope="module")
def g1():
    return KinematicTree(parse_urdf(G1))


def _bake(clip, tree):
    motion = clip.to_source_motion()
    return retarget(motion, tree, auto_map(motion, tree))


def test_an_upper_body_clip_leaves_a_legged_robot_standing(hop, g1):
    """A capture of the upper body only drives the arms; the base stays fixed, and stayed at the
    origin: G1's legs went 79 cm through the floor and no figure said so. It stands on its legs."""
    upper = V.without(hop, {"LHipJoint", "RHipJoint"})
    result = _bake(upper, g1)
    assert not any(c.role == "leg" for c in auto_map(upper.to_source_motion(), g1).chains)
    root = pose_matrices(result.root_rotation, result.root_position)
    lowest = lowest_points(g1, result.q, root, skip=set(), near_m=np.inf)
    assert np.abs(lowest).max() < 1e-6, (lowest.min(), lowest.max())  # on the ground, every frame
    assert 0.7 < result.root_position[:, 2].min() == result.root_position[:, 2].max() < 0.9  # the pelvis
    whole = _bake(hop, g1)
    arms = [i for i, n in enumerate(g1.joint_names) if "shoulder" in n or "elbow" in n]
    assert result.report["limb_direction_error_by_limb"]["left_arm"] < 10.0
    assert np.abs(result.q[:, arms]).max() > 0.3  # the arms move (against a standing still robot)
    assert np.ptp(whole.root_position[:, 2]) > 0.0  # the whole clip still floats the base


def test_an_upper_body_stream_leaves_a_legged_robot_standing_as_the_bake_does(hop, g1):
    """The live path puts a fixed base where the bake does: on the legs, not at the origin."""
    from core.stream.session import StreamSession, StreamSettings
    from core.stream.predict import PredictSettings

    upper = V.without(hop, {"LHipJoint", "RHipJoint"})
    mapping = auto_map(upper.to_source_motion(), g1)
    session = StreamSession(upper, g1, mapping, StreamSettings(predict=PredictSettings(predictor="none")))
    outputs = [session.push(f, f / upper.fps, upper.motion[f]) for f in range(20)]
    streamed = np.array([o.pose.root_position for o in outputs])
    np.testing.assert_allclose(streamed, np.repeat(_bake(upper, g1).root_position[:1], 20, axis=0), atol=1e-9)


def test_a_manipulator_keeps_its_base_at_the_origin(hop):
    tree = KinematicTree(parse_urdf(ROOT / "tests" / "data" / "robots" / "franka_panda.urdf"))
    result = _bake(hop, tree)
    assert np.abs(result.root_position).max() == 0.0


def test_a_clip_too_short_for_a_contact_says_its_feet_were_not_planted(hop, g1):
    """A clip of 3 frames (25 ms) holds no contact as long as detection asks (50 ms): its feet were
    silently not planted, and contact_preserved_pct read 100 over no contact frame."""
    short = dataclasses.replace(hop, motion=hop.motion[:3])
    motion = short.to_source_motion()
    result = retarget(motion, g1, auto_map(motion, g1), contacts="auto")
    assert not result.report["feet_planted"]
    said = [w for w in result.report["warnings"] if w.startswith("feet not planted")]
    assert len(said) == 1 and "3 frames" in said[0] and "contact_preserved_pct" in said[0], said
    motion = hop.to_source_motion()
    whole = retarget(motion, g1, auto_map(motion, g1), contacts="auto").report
    assert whole["feet_planted"] and not [w for w in whole["warnings"] if w.startswith("feet not planted")]
