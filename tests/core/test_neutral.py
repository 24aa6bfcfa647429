"""The neutral posture's legs (core.retarget.neutral): straight by the mechanism, whatever the zero pose.

A robot whose legs' zero pose already stands straight keeps it to the bit (its bakes, the H1's balanced
gait 0.33 mm over its margin target among them, do not move); one whose legs zero in a crouch gets
the same posture as the straight-zero robot. Bakes with such robots: test_invariance*.py.
"""
from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from core.model.kinematics import KinematicTree
from core.model.urdf import parse_urdf
from core.motion.bvh import load_bvh
from core.retarget import neutral as N
from core.retarget.automap import auto_map
from core.retarget.pipeline import _plan
from tests import robot_variants as RV
from tests.core.test_invariance import ANKLES_TOO, CROUCHED, G1, WALK, _short

ROBOTS = Path(__file__).resolve().parents[1] / "data" / "robots"
STRAIGHT = {"g1": G1, "h1": ROBOTS / "unitree_h1_19dof.urdf", "simple humanoid": ROBOTS / "simple_humanoid.urdf"}


@pytest.fixture(scope="module")
def motion():
    return _short(load_bvh(WALK)).to_source_motion()


def _neutral(motion, tree: KinematicTree) -> tuple[np.ndarray, list]:
    """The bake's neutral posture and its leg chains' plans, with the body axes."""
    mapping = auto_map(motion, tree)
    plans, _, _, targets, _, axes = _plan(motion, tree, mapping, mapping.settings, [])
    legs = [(p, axes) for p in plans if p.mapping.role == "leg"]
    return N.neutral_posture(motion, tree, plans, targets, axes, mapping.settings.rest_prior), legs


def _variant(robot, tmp_path: Path, name: str = "variant") -> KinematicTree:
    return KinematicTree(parse_urdf(RV.write_urdf(robot, tmp_path / f"{name}.urdf")))


def _marks(tree, plan, axes):
    """A leg chain plan's LegMarks."""
    return N.LegMarks.on(tree, plan.robot.paths[0].links, plan.mapping.robot_landmarks, axes)


@pytest.mark.parametrize("robot", sorted(STRAIGHT))
def test_legs_that_zero_straight_keep_their_zero_pose(robot, motion):
    """The zero pose's lean (the G1's thighs 0.0004 deg: its knee is 2 micrometres off the line under
    its hip pitch joint) is over a hundred times under STRAIGHT_DEG: the neutral legs are the zero pose."""
    tree = KinematicTree(parse_urdf(STRAIGHT[robot]))
    neutral, legs = _neutral(motion, tree)
    assert len(legs) == 2
    for plan, axes in legs:
        marks = _marks(tree, plan, axes)
        assert marks is not None
        lean = np.degrees(np.arcsin(np.abs(marks.lean(tree, np.zeros((1, tree.dof)), axes)))).max()
        assert lean < 0.01 * N.STRAIGHT_DEG
        assert np.array_equal(neutral[marks.columns], np.zeros(len(marks.columns)))


@pytest.mark.parametrize("shifts", [CROUCHED, ANKLES_TOO], ids=["knees and hips", "ankles too"])
def test_legs_zeroed_in_a_crouch_get_the_straight_neutral(shifts, motion, tmp_path):
    """The G1 with its knees, hip pitches (and ankles) zeroed in a crouch: the neutral legs are the
    G1's zero pose, within the G1's own 0.0004 deg of lean (its legs solved to none)."""
    g1 = KinematicTree(parse_urdf(G1))
    tree = _variant(RV.zero_shifted(g1.robot, shifts), tmp_path)
    shift = np.array([shifts.get(n, 0.0) for n in tree.joint_names])
    neutral, legs = _neutral(motion, tree)
    expected, _ = _neutral(motion, g1)
    legs_moved = np.flatnonzero(shift)
    assert np.abs(expected[legs_moved] - shift[legs_moved]).min() > 0.1  # the variant's zero pose is no neutral
    np.testing.assert_allclose(neutral + shift, expected, rtol=0, atol=2e-5)
    for plan, axes in legs:
        marks = _marks(tree, plan, axes)
        assert np.abs(marks.lean(tree, neutral[None], axes)).max() < 1e-9


def test_a_straight_leg_past_its_knee_limit_stops_at_the_limit(motion, tmp_path):
    """The crouched G1 whose knees cannot straighten past 0.2 rad of their crouch (straight is 0.6
    rad back): the knee stops at its limit, the other joints as solved, the rest of the robot as
    the zero pose."""
    g1 = KinematicTree(parse_urdf(G1))
    robot = RV.zero_shifted(g1.robot, CROUCHED)
    robot = dataclasses.replace(robot, joints=[dataclasses.replace(j, lower=-0.2) if j.name.endswith("knee_joint")
                                               else j for j in robot.joints])
    tree = _variant(robot, tmp_path)
    neutral, legs = _neutral(motion, tree)
    knees = [tree.joint_names.index(f"{side}_knee_joint") for side in ("left", "right")]
    assert np.array_equal(neutral[knees], [-0.2, -0.2])
    hips = [tree.joint_names.index(f"{side}_hip_pitch_joint") for side in ("left", "right")]
    np.testing.assert_allclose(neutral[hips], 0.3, atol=1e-4)  # the thigh still hangs straight down
    others = [i for i in range(tree.dof) if not any(i in _marks(tree, p, a).columns for p, a in legs)]
    np.testing.assert_allclose(neutral[others], _neutral(motion, g1)[0][others], rtol=0, atol=1e-9)
