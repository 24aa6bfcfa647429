"""Robots from outside the project, baked as a user would (auto-map, default settings).

`tests/data/robots/simple_humanoid.urdf` (example-robot-data, BSD-2-Clause) ends each arm
in three wrist joints stacked on one point with no link beyond: a hand chain there has no
length, and auto-mapping one used to stop the bake ("robot chain 'LARM_LINK5' has no length").
"""
from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from core.model.kinematics import KinematicTree
from core.model.urdf import parse_urdf
from core.motion.bvh import load_bvh
from core.retarget.automap import auto_map
from core.retarget.pipeline import retarget

ROOT = Path(__file__).resolve().parents[2]
HOP = ROOT / "tests" / "data" / "motion" / "cmu_131_03_hop.bvh"
SIMPLE = ROOT / "tests" / "data" / "robots" / "simple_humanoid.urdf"


@pytest.fixture(scope="module")
def hop():
    clip = load_bvh(HOP)
    return dataclasses.replace(clip, motion=clip.motion[:360]).to_source_motion()


@pytest.fixture(scope="module")
def simple_bake(hop):
    tree = KinematicTree(parse_urdf(SIMPLE))
    mapping = auto_map(hop, tree)
    return tree, mapping, retarget(hop, tree, mapping)


def test_stacked_wrist_without_a_hand_link_bakes_arms_without_hands(simple_bake):
    tree, mapping, result = simple_bake
    chains = {c.name: c for c in mapping.chains}
    assert {"spine", "left_leg", "right_leg", "left_arm", "right_arm"} <= set(chains)
    assert not any(c.role == "hand" for c in mapping.chains)
    assert chains["left_arm"].robot_base.startswith("LARM") and chains["right_arm"].robot_base.startswith("RARM")
    assert result.report["limit_violations"] == 0
    by_limb = result.report["limb_direction_error_by_limb"]
    assert max(by_limb[k] for k in ("left_arm", "right_arm")) < 15.0, by_limb


def test_legs_ending_at_the_ankle_raise_no_false_left_right_warning(simple_bake):
    """Its legs end at the ankle (no foot link): the check of left and right took the knee-to-ankle
    direction for the feet's facing and said the legs were crossed on 98 % of frames."""
    _, _, result = simple_bake
    assert not [w for w in result.report["warnings"] if w.startswith("mapping:")], result.report["warnings"]
    assert result.report["automap_confidence"] == 1.0


def _upper_body(tmp_path) -> Path:
    """The H1 without its legs: a torso whose arms hang lowest (as alex_nub_hands of
    example-robot-data, whose arms auto-map took for legs and planted as feet)."""
    import xml.etree.ElementTree as ET
    root = ET.parse(ROOT / "tests" / "data" / "robots" / "unitree_h1_19dof.urdf").getroot()
    leg_words = ("hip", "knee", "ankle", "foot")
    for elem in list(root):
        if elem.tag in ("link", "joint") and any(w in elem.get("name", "") for w in leg_words):
            root.remove(elem)
    path = tmp_path / "h1_upper_body.urdf"
    ET.ElementTree(root).write(path)
    return path


def test_arms_hanging_lowest_on_a_legless_robot_are_arms(hop, tmp_path):
    tree = KinematicTree(parse_urdf(_upper_body(tmp_path)))
    mapping = auto_map(hop, tree)
    chains = {c.name: c for c in mapping.chains}
    assert not any(c.role == "leg" for c in mapping.chains)
    assert chains["left_arm"].robot_base == "left_shoulder_pitch_link"
    assert chains["right_arm"].robot_base == "right_shoulder_pitch_link"
    result = retarget(hop, tree, mapping)
    by_limb = result.report["limb_direction_error_by_limb"]
    assert set(by_limb) == {"left_arm", "right_arm"} and max(by_limb.values()) < 15.0, by_limb
    assert any("named as arms" in w for w in result.report["warnings"])
