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
