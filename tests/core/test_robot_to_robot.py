"""Robot motion as the source: G1 onto itself, G1 onto H1 and back.

A robot's bake becomes a clip (core.motion.robot_source) that auto-maps like any
other: onto the same robot it is the identity, onto another humanoid its limbs
point where the first robot's did.
"""
from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from core.model.kinematics import KinematicTree
from core.model.urdf import parse_urdf
from core.motion.bvh import load_bvh
from core.motion.robot_source import robot_motion
from core.retarget.automap import auto_map
from core.retarget.pipeline import retarget

ROOT = Path(__file__).resolve().parents[2]
WALK = ROOT / "data" / "motion" / "cmu_131_01_walk_m.bvh"
G1 = ROOT / "data" / "robots" / "g1" / "unitree_g1_29dof.urdf"
H1 = ROOT / "tests" / "data" / "robots" / "unitree_h1_19dof.urdf"
LIMBS = {"spine", "left_leg", "right_leg", "left_arm", "right_arm"}
OBSERVABLE = [f"{side}_{joint}_joint" for side in ("left", "right")
              for joint in ("hip_pitch", "knee", "shoulder_pitch", "shoulder_roll", "elbow")]


def _as_clip(tree, result):
    root = np.tile(np.eye(4), (len(result.q), 1, 1))
    root[:, :3, :3], root[:, :3, 3] = result.root_rotation, result.root_position
    return robot_motion(tree, result.q, root, fps=result.fps)


@pytest.fixture(scope="module")
def g1_walk():
    clip = load_bvh(WALK)
    walk = dataclasses.replace(clip, motion=clip.motion[:240]).to_source_motion()
    g1 = KinematicTree(parse_urdf(G1))
    return g1, retarget(walk, g1, auto_map(walk, g1))


def test_g1_onto_itself_recovers_its_pose(g1_walk):
    g1, bake = g1_walk
    clip = _as_clip(g1, bake)
    mapping = auto_map(clip, g1)
    assert all((c.source_base, c.source_tips) == (c.robot_base, c.robot_tips) for c in mapping.chains)
    # filtered once is enough; the default weak pull toward the neutral posture would straighten
    # the knees by about 3 degrees (it is there to settle what the clip leaves open)
    # (the pose comes back through the chains: avoidance, on by default, is left out)
    again = retarget(clip, g1, mapping, dataclasses.replace(mapping.settings, filter="none", rest_prior=0.0,
                                                            avoid_self_collision=False))
    assert again.report["limb_direction_error_deg"] < 1.0
    # joints the clip's bones observe come back; a wrist's roll about its own segment does not
    for joint in OBSERVABLE:
        col = g1.joint_names.index(joint)
        assert np.degrees(np.abs(again.q[:, col] - bake.q[:, col]).mean()) < 0.5, joint


def test_g1_onto_h1_and_back(g1_walk):
    g1, bake = g1_walk
    h1 = KinematicTree(parse_urdf(H1))
    mapping = auto_map(_as_clip(g1, bake), h1)
    assert LIMBS <= {c.name for c in mapping.chains}
    on_h1 = retarget(_as_clip(g1, bake), h1, mapping)
    assert on_h1.report["automap_confidence"] == 1.0
    assert on_h1.report["limb_direction_error_deg"] < 6.0, on_h1.report["limb_direction_error_by_limb"]
    back_clip = _as_clip(h1, on_h1)
    back = retarget(back_clip, g1, auto_map(back_clip, g1))
    assert back.report["limb_direction_error_deg"] < 6.0, back.report["limb_direction_error_by_limb"]
