"""Mapping sanity checks on the animated frames (core.retarget.mapping_check) and the report's
`mapping` / `automap_confidence`."""
from __future__ import annotations

import copy
import json
from pathlib import Path

import numpy as np
import pytest

from core.chains.mapping import Mapping
from core.model.kinematics import KinematicTree
from core.model.urdf import parse_urdf
from core.motion.bvh import load_bvh
from core.retarget import auto_map, retarget
from core.retarget.mapping_check import check_mapping

ROOT = Path(__file__).resolve().parents[2]
CLIPS = {"walk": (ROOT / "data/motion/cmu_131_01_walk_m.bvh", 1.0),
         "hop": (ROOT / "tests/data/motion/cmu_131_03_hop.bvh", 0.056444)}
ROBOTS = {"g1": ROOT / "data/robots/g1/unitree_g1_29dof.urdf", "h1": ROOT / "tests/data/robots/unitree_h1_19dof.urdf"}


@pytest.fixture(scope="module", params=[(c, r) for c in CLIPS for r in ROBOTS], ids=lambda p: f"{p[0]}-{p[1]}")
def case(request):
    clip, robot = request.param
    path, scale = CLIPS[clip]
    motion = load_bvh(path).to_source_motion(scale=scale)
    tree = KinematicTree(parse_urdf(ROBOTS[robot]))
    return motion, tree, auto_map(motion, tree)


def test_the_automatic_mapping_of_the_bundled_clips_passes_every_check(case):
    motion, _, mapping = case
    assert check_mapping(motion, mapping.chains) == (1.0, [])


def test_left_and_right_arms_swapped_are_caught(case):
    motion, _, mapping = case
    swapped = copy.deepcopy(mapping)
    for chain in swapped.chains:
        if chain.role == "arm":
            chain.side = {"left": "right", "right": "left"}[chain.side]
    confidence, reasons = check_mapping(motion, swapped.chains)
    assert confidence < 1.0
    assert any("right_arm on the body's left of left_arm" in r for r in reasons), reasons


def test_arms_taken_for_legs_are_caught(case):
    motion, _, mapping = case
    wrong = copy.deepcopy(mapping)
    legs = [c for c in wrong.chains if c.role == "leg"]
    arms = [c for c in wrong.chains if c.role == "arm"]
    for leg, arm in zip(legs, arms):
        leg.role, arm.role = "arm", "leg"
    confidence, reasons = check_mapping(motion, wrong.chains)
    assert confidence <= 0.5
    assert any("Wrist) near the ground" in r for r in reasons) and any("above the pelvis" in r for r in reasons)


def test_the_report_says_which_chains_were_used_and_how_sure(case):
    motion, tree, mapping = case
    report = retarget(motion, tree, mapping, contacts="off").report
    used = report["mapping"]["chains"]
    assert [c["name"] for c in used] == [c.name for c in mapping.chains]
    assert all(c["source_base"] and c["robot_tips"] for c in used)
    assert report["automap_confidence"] == report["mapping"]["automap_confidence"] == 1.0
    assert not [w for w in report["warnings"] if w.startswith("mapping:")]
    wrong = copy.deepcopy(mapping)
    for chain in wrong.chains:
        if chain.role == "arm":
            chain.side = {"left": "right", "right": "left"}[chain.side]
    report = retarget(motion, tree, wrong, contacts="off").report
    assert report["automap_confidence"] < 1.0
    assert [w for w in report["warnings"] if w.startswith("mapping:") and "left_arm" in w]


def test_an_upside_down_clip_is_not_trusted(tmp_path):
    """The walk written Z-up and read as Y-up hangs upside down: its hands are the low leaves.
    Whatever auto-map makes of it, the report's confidence and warnings say it is wrong, naming
    the bones, instead of baking quietly."""
    import dataclasses

    from core.motion.bvh import load_bvh
    from core.model.kinematics import KinematicTree
    from core.model.urdf import parse_urdf
    from core.retarget.automap import auto_map
    from core.retarget.pipeline import retarget
    from tests import variants

    root = Path(__file__).resolve().parents[2]
    clip = load_bvh(root / "data" / "motion" / "cmu_131_01_walk_m.bvh")
    clip = dataclasses.replace(clip, motion=clip.motion[:120])
    upside_down = load_bvh(variants.write_bvh(variants.z_up(clip), tmp_path / "z.bvh")).to_source_motion()
    g1 = KinematicTree(parse_urdf(root / "data" / "robots" / "g1" / "unitree_g1_29dof.urdf"))
    report = retarget(upside_down, g1, auto_map(upside_down, g1)).report
    assert report["automap_confidence"] < 0.5
    assert any("named like a leg" in w and "RightHip" in w for w in report["warnings"])
    assert any("upside down or lying" in w and "--source-up Y or Z" in w for w in report["warnings"])


def test_the_reports_mapping_is_a_preset_that_bakes_the_same_again(case, tmp_path):
    """A user saves a bake's `mapping` and passes it back as --mapping: same angles."""
    motion, tree, mapping = case
    first = retarget(motion, tree, mapping, contacts="off")
    path = tmp_path / "from_report.json"
    path.write_text(json.dumps(first.report["mapping"]))
    again = retarget(motion, tree, Mapping.load(path), contacts="off")
    np.testing.assert_allclose(again.q, first.q, atol=1e-12)


def test_a_preset_without_landmarks_bakes(case):
    """Landmarks are optional in a preset (a hand-written one, or one saved with them null)."""
    motion, tree, mapping = case
    bare = copy.deepcopy(mapping)
    for chain in bare.chains:
        chain.source_landmarks = chain.robot_landmarks = None
    report = retarget(motion, tree, Mapping.from_dict(bare.to_dict()), contacts="off").report
    assert report["frames"] == motion.frames and "mapping" in report
