"""Automatic chain mapping from the CMU walk onto G1 and H1, with renamed and
mirrored source bones, and robots that have nothing to map."""
from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import numpy as np
import pytest

from core.retarget.automap import AutoMapError, auto_map
from core.motion.bvh import load_bvh
from core.model.kinematics import KinematicTree
from core.chains.mapping import Mapping
from core.model.urdf import parse_urdf, parse_urdf_string

ROOT = Path(__file__).resolve().parents[2]
WALK = ROOT / "data" / "motion" / "cmu_131_01_walk_m.bvh"
G1 = ROOT / "data" / "robots" / "g1" / "unitree_g1_29dof.urdf"
H1 = ROOT / "tests" / "data" / "robots" / "unitree_h1_19dof.urdf"
PANDA = ROOT / "tests" / "data" / "robots" / "franka_panda.urdf"

BODY = ("spine", "left_leg", "right_leg", "left_arm", "right_arm")
# Geometric limbs of the CMU skeleton (bone names of the original file).
CMU_LIMBS = {
    "left_leg": {"LHipJoint", "LeftHip", "LeftKnee", "LeftAnkle", "LeftToe"},
    "right_leg": {"RHipJoint", "RightHip", "RightKnee", "RightAnkle", "RightToe"},
    "left_arm": {"LeftCollar", "LeftShoulder", "LeftElbow", "LeftWrist", "lhand", "LFingers", "LThumb"},
    "right_arm": {"RightCollar", "RightShoulder", "RightElbow", "RightWrist", "rhand", "RFingers", "RThumb"},
}


@pytest.fixture(scope="module")
def walk():
    return load_bvh(WALK).to_source_motion()


@pytest.fixture(scope="module", params=["g1", "h1"])
def humanoid(request):
    return KinematicTree(parse_urdf({"g1": G1, "h1": H1}[request.param]))


def _renamed(motion, names):
    return dataclasses.replace(motion, bone_names=list(names))


def _chains(mapping: Mapping) -> dict:
    return {c.name: c for c in mapping.chains}


def _source_bones(motion, chain) -> set[str]:
    """Every source bone a chain touches (all paths from base to tips)."""
    return {motion.bone_names[i] for tip in chain.source_tips for i in motion.path(chain.source_base, tip)}


def _robot_links(tree, chain) -> set[str]:
    return {tree.link_names[i] for tip in chain.robot_tips for i in tree.path(chain.robot_base, tip)}


def _structure(mapping: Mapping, motion) -> list[tuple]:
    """Mapping with source bones as indices, so renamed sources can be compared."""
    out = []
    for c in mapping.chains:
        out.append((c.name, c.role, c.side, motion.index(c.source_base),
                    tuple(motion.index(t) for t in c.source_tips), c.robot_base, tuple(c.robot_tips),
                    c.source_tip_tail))
    return out


# ---------------------------------------------------------------- humanoids ---

def test_humanoid_body_chains(walk, humanoid):
    mapping = auto_map(walk, humanoid)
    chains = _chains(mapping)
    assert set(BODY) <= set(chains), sorted(chains)
    assert mapping.source_root == "Hips" and mapping.robot_root == "pelvis"
    for name in BODY:
        c = chains[name]
        assert c.enabled
        side = name.split("_")[0] if "_" in name else ""
        assert c.side == side
        assert c.role == (name.split("_")[1] if side else "spine")
    for name in ("left_leg", "right_leg", "left_arm", "right_arm"):
        side = chains[name].side
        links = _robot_links(humanoid, chains[name])
        assert all(link.startswith(f"{side}_") for link in links), (name, links)
        bones = _source_bones(walk, chains[name])
        assert bones <= CMU_LIMBS[name], (name, bones)
        assert len(links) >= 3 and len(bones) >= 3  # hip-knee-ankle, shoulder-elbow-wrist
    # Legs reach at least the ankle, arms at least the wrist.
    for side, prefix in (("left", "Left"), ("right", "Right")):
        assert f"{prefix}Ankle" in _source_bones(walk, chains[f"{side}_leg"])
        assert f"{prefix}Elbow" in _source_bones(walk, chains[f"{side}_arm"])
        assert f"{prefix}Wrist" in _source_bones(walk, chains[f"{side}_arm"])
        assert f"{side}_knee_link" in _robot_links(humanoid, chains[f"{side}_leg"])
        assert f"{side}_elbow_link" in _robot_links(humanoid, chains[f"{side}_arm"])
    # The spine runs from the pelvis to both shoulders (left first, then right).
    spine = chains["spine"]
    assert spine.source_base == "Hips" and spine.robot_base == "pelvis"
    assert len(spine.source_tips) == len(spine.robot_tips) == 2
    assert spine.robot_tips[0].startswith("left_") and spine.robot_tips[1].startswith("right_")
    assert spine.source_tips[0] in CMU_LIMBS["left_arm"] and spine.source_tips[1] in CMU_LIMBS["right_arm"]


def test_every_chain_resolves(walk, humanoid):
    """All names exist and every chain runs down the tree on both sides."""
    for c in auto_map(walk, humanoid).chains:
        for tip in c.source_tips:
            assert len(walk.path(c.source_base, tip)) >= 1
        for tip in c.robot_tips:
            assert len(humanoid.path(c.robot_base, tip)) >= 2, c.name


def test_auto_map_is_deterministic(walk, humanoid):
    assert auto_map(walk, humanoid) == auto_map(walk, humanoid)


def in_centimetres(text: str) -> str:
    """The same BVH in centimetres: OFFSETs and position channels times 100."""
    head, motion = text.split("MOTION", 1)
    positions, channel = [], 0
    for line in head.splitlines():
        words = line.split()
        if words[:1] == ["CHANNELS"]:
            positions += [channel + k for k, name in enumerate(words[2:]) if name.lower().endswith("position")]
            channel += int(words[1])
    head = re.sub(r"(OFFSET)\s+(\S+)\s+(\S+)\s+(\S+)",
                  lambda m: "OFFSET " + " ".join(f"{100 * float(v):.6f}" for v in m.groups()[1:]), head)
    lines = motion.strip("\n").splitlines()
    rows = []
    for row in lines[2:]:
        values = row.split()
        for k in positions:
            values[k] = f"{100 * float(values[k]):.6f}"
        rows.append(" ".join(values))
    return head + "MOTION\n" + "\n".join(lines[:2] + rows) + "\n"


def test_units_do_not_change_the_map(humanoid, tmp_path):
    """The walk in metres (scale 1) and the same file in centimetres (scale 0.01) map alike."""
    cm = tmp_path / "walk_cm.bvh"
    cm.write_text(in_centimetres(WALK.read_text()))
    a = auto_map(load_bvh(WALK).to_source_motion(scale=1.0), humanoid)
    b = auto_map(load_bvh(cm).to_source_motion(scale=0.01), humanoid)
    assert a == b


# ------------------------------------------------------------ renamed bones ---

def test_scrambled_names_map_like_named(walk, humanoid):
    """Without telling names, structure and sides come from geometry alone (CMU's hip and
    collar joints start on the midline, so sides must come from the whole limb)."""
    scrambled = _renamed(walk, [f"b{i}" for i in range(len(walk.bone_names))])
    named = auto_map(walk, humanoid)
    blind = auto_map(scrambled, humanoid)
    assert _structure(blind, scrambled) == _structure(named, walk)


def _mirror_name(name: str) -> str:
    """Swap every side marker the CMU names use: Left/Right, the L/R prefixes, lhand/rhand."""
    name = name.replace("Left", "\0").replace("Right", "Left").replace("\0", "Right")
    name = re.sub(r"^L(?=[A-Z])", "\0", name)
    name = re.sub(r"^R(?=[A-Z])", "L", name).replace("\0", "R")
    return {"lhand": "rhand", "rhand": "lhand"}.get(name, name)


def test_mirrored_names_win_over_geometry(walk, humanoid):
    """Names that say left on the geometric right are believed: the 'left_leg' chain then
    drives the robot's left leg with the performer's right leg (a mirrored retarget).

    Geometry is only consulted when the names do not settle the side, so a rig with
    deliberately or mistakenly swapped names is mirrored, not corrected.
    """
    names = [_mirror_name(n) for n in walk.bone_names]
    assert names[walk.index("LeftHip")] == "RightHip" and names[walk.index("LHipJoint")] == "RHipJoint"
    mirrored = _renamed(walk, names)
    chains = _chains(auto_map(mirrored, humanoid))
    assert set(BODY) <= set(chains)
    for name in ("left_leg", "right_leg", "left_arm", "right_arm"):
        geometric = {walk.bone_names[mirrored.index(b)] for b in _source_bones(mirrored, chains[name])}
        other = name.replace("left", "\0").replace("right", "left").replace("\0", "right")
        assert geometric <= CMU_LIMBS[other], (name, geometric)  # the opposite geometric limb
        assert all(link.startswith(chains[name].side + "_") for link in _robot_links(humanoid, chains[name]))


def test_left_right_words_only_swapped(walk, humanoid):
    """Swapping only the words Left/Right leaves the CMU L/R prefixes (LHipJoint, LFingers)
    telling the opposite story. Documented behaviour: the first bone of a limb decides
    (LHipJoint for the legs, LeftCollar for the arms), so the legs keep their geometric sides
    and the arms are mirrored; each chain still stays within one geometric limb, and left and
    right chains never share a limb.
    """
    words = [n.replace("Left", "\0").replace("Right", "Left").replace("\0", "Right") for n in walk.bone_names]
    swapped = _renamed(walk, words)
    chains = _chains(auto_map(swapped, humanoid))
    assert set(BODY) <= set(chains)
    limb_of = {}
    for name in ("left_leg", "right_leg", "left_arm", "right_arm"):
        geometric = {walk.bone_names[swapped.index(b)] for b in _source_bones(swapped, chains[name])}
        limb = next(k for k, v in CMU_LIMBS.items() if geometric <= v)
        limb_of[name] = limb
    assert limb_of["left_leg"] == "left_leg" and limb_of["right_leg"] == "right_leg"
    assert limb_of["left_arm"] == "right_arm" and limb_of["right_arm"] == "left_arm"


# ------------------------------------------------------------ other robots ---

def test_panda_gets_one_arm_from_the_right_arm(walk):
    tree = KinematicTree(parse_urdf(PANDA))
    chains = auto_map(walk, tree).chains
    roles = sorted(c.role for c in chains)
    assert roles in (["arm"], ["arm", "hand"]), roles
    arm = next(c for c in chains if c.role == "arm")
    assert arm.side == ""
    assert _source_bones(walk, arm) <= CMU_LIMBS["right_arm"]
    assert "RightElbow" in _source_bones(walk, arm)
    for c in chains:
        assert _source_bones(walk, c) <= CMU_LIMBS["right_arm"]
        assert all(link.startswith("panda_") for link in _robot_links(tree, c))


def _urdf(body: str, links: list[str]) -> KinematicTree:
    tags = "".join('<link name="%s"/>' % n for n in links)
    return KinematicTree(parse_urdf_string(f'<robot name="blob">{tags}{body}</robot>'))


@pytest.mark.parametrize("tree", [
    pytest.param(lambda: _urdf("", ["base"]), id="single-link"),
    pytest.param(lambda: _urdf("""
        <joint name="a" type="fixed"><parent link="base"/><child link="cam"/><origin xyz="0 0 0.3"/></joint>
        <joint name="b" type="fixed"><parent link="base"/><child link="imu"/><origin xyz="0.1 0 0"/></joint>
        """, ["base", "cam", "imu"]), id="only-fixed-joints"),
    pytest.param(lambda: _urdf("""
        <joint name="w" type="continuous"><parent link="base"/><child link="wheel"/>
          <origin xyz="0.2 0 0"/><axis xyz="0 1 0"/></joint>
        """, ["base", "wheel"]), id="one-bare-wheel"),
])
def test_robot_without_limbs_raises(walk, tree):
    with pytest.raises(AutoMapError, match="blob"):
        auto_map(walk, tree())


def test_source_without_limbs_raises(humanoid):
    """A source that is one straight bone gives nothing to pair with the robot's limbs."""
    from core.motion.source import SourceMotion
    heads = np.zeros((2, 1, 3))
    tails = heads + [0.0, 0.0, 0.5]
    stick = SourceMotion(["stick"], np.array([-1]), heads, tails, np.tile(np.eye(3), (2, 1, 1)),
                         heads[0], tails[0], np.eye(3), 30.0, "stick")
    with pytest.raises(AutoMapError, match="looks like a single chain") as error:
        auto_map(stick, humanoid)
    assert "Map the chains by hand" in str(error.value)


def test_notes_say_what_was_guessed(walk, humanoid):
    """Named bones leave nothing to guess; scrambled names make auto-map take left and right
    from the posture, and it says so, naming the bones."""
    assert auto_map(walk, humanoid).notes == []
    scrambled = _renamed(walk, [f"bone{i:02d}" for i in range(len(walk.bone_names))])
    notes = auto_map(scrambled, humanoid).notes
    assert any(n.startswith("source: legs") and "do not say left and right" in n for n in notes)
    assert any(n.startswith("source: arms") for n in notes)


def without_joints(text: str, names: set[str]) -> str:
    """The BVH with each named joint's subtree replaced by an End Site where that joint was, and
    its channels dropped: an arm that ends after the elbow, as simulation characters are built."""
    head, motion = text.split("MOTION", 1)
    lines, out, drop, channel, i = head.splitlines(), [], set(), 0, 0
    while i < len(lines):
        words = lines[i].split()
        if words[:1] in (["JOINT"], ["ROOT"]) and words[1] in names:
            indent = lines[i][: len(lines[i]) - len(lines[i].lstrip())]
            depth, offset = 0, None
            while True:
                i += 1
                s = lines[i].split()
                if s[:1] == ["OFFSET"] and offset is None:
                    offset = lines[i].strip()
                if s[:1] == ["CHANNELS"]:
                    drop |= set(range(channel, channel + int(s[1])))
                    channel += int(s[1])
                depth += s == ["{"]
                depth -= s == ["}"]
                if s == ["}"] and depth == 0:
                    break
            out += [f"{indent}End Site", f"{indent}{{", f"{indent}\t{offset}", f"{indent}}}"]
        else:
            if words[:1] == ["CHANNELS"]:
                channel += int(words[1])
            out.append(lines[i])
        i += 1
    rows = motion.strip("\n").splitlines()
    keep = [k for k in range(channel) if k not in drop]
    body = [" ".join(row.split()[k] for k in keep) for row in rows[2:]]
    return "\n".join(out) + "\nMOTION\n" + "\n".join(rows[:2] + body) + "\n"


def test_an_arm_ending_at_an_end_site_after_the_elbow(humanoid, tmp_path):
    """No wrist joint: the arm runs shoulder to the elbow bone's tail (the End Site is the wrist),
    the elbow is its landmark, no hand chain follows, and it bakes like the full skeleton's arm."""
    from core.retarget import retarget

    cut = tmp_path / "no_wrists.bvh"
    cut.write_text(without_joints(WALK.read_text(), {"LeftWrist", "RightWrist"}))
    motion = load_bvh(cut).to_source_motion()
    assert "LeftWrist" not in motion.bone_names and motion.frames == 995
    mapping = auto_map(motion, humanoid)
    arms = {c.side: c for c in mapping.chains if c.role == "arm"}
    for side, name in (("left", "Left"), ("right", "Right")):
        arm = arms[side]
        assert (arm.source_base, arm.source_tips, arm.source_tip_tail) == (f"{name}Shoulder", [f"{name}Elbow"], True)
        assert arm.source_landmarks == [f"{name}Elbow"]
    assert not [c for c in mapping.chains if c.role == "hand"]
    # the arms' shapes alone: a robot's hand that no chain turns leaves the arm more room to make (G1 with
    # avoidance: 1.89 -> 3.64 deg, the full skeleton's hand turns out of the body instead)
    full_mapping = auto_map(load_bvh(WALK).to_source_motion(), humanoid).with_settings(avoid_self_collision=False)
    full = retarget(load_bvh(WALK).to_source_motion(), humanoid, full_mapping)
    cut_bake = retarget(motion, humanoid, mapping.with_settings(avoid_self_collision=False))
    for limb in ("left_arm", "right_arm"):
        before = full.report["limb_direction_error_by_limb"][limb]
        after = cut_bake.report["limb_direction_error_by_limb"][limb]
        assert after < before + 1.0, (limb, before, after)
