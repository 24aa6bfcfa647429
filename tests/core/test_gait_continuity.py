"""The gait's choices between rungs of trials are continuous in their input (issue 12): a step on
the edge of what the robot stands across, or a waist height on the edge of what lets a foot stand,
must not jump a whole rung for a difference of rounding (core.balance.boundary).

Before (2026-12-03): the walk cut at frame 200 onto the G1 took a 45-degree turning step at 0.55 of
its length with one retarget and 0.7 with another 0.05 rad away (every later step planned from it;
the cut's last stance 16 cm apart), and the H1 walk rounded to float32 raised its waist 10 cm where
the walk as read raised it 7 cm.
"""
from __future__ import annotations

import numpy as np

from core.balance.reach import check_steps
from core.model.kinematics import KinematicTree
from core.model.urdf import parse_urdf
from tests.core.test_gait import ROBOTS, _step_bounds


def test_a_step_too_far_is_shortened_by_a_share_continuous_in_its_length():
    """A step of the G1 walk the robot cannot stand across whole (0.39 m forward, turned 45 degrees, as
    the plan hands it over) taken at lengths from half of it to all of it: the step the robot takes
    (its share times the length asked) grows with the length asked and then stays, never jumping.
    With the first rung of SHRINKS that stands (0.85, 0.7, ...), it fell by 0.15 of the step where a
    rung stopped standing."""
    tree = KinematicTree(parse_urdf(ROBOTS["g1"]))
    bounds = _step_bounds(tree)
    natural = -bounds.natural_m * bounds.probe.left
    place, turn = np.array([0.3938, -0.1185]), 0.7854  # the G1 walk's, right from left (StepBounds.relative)
    scales = np.linspace(0.5, 1.0, 41)
    steps = [(natural + s * (place - natural), s * turn) for s in scales]
    shares = check_steps(bounds, steps, [False] * len(steps), [True] * len(steps))
    taken = shares * scales  # of the whole step, from the stance as built
    assert shares.min() < 0.95, "the step must be too far somewhere along the scan for it to say anything"
    assert np.abs(np.diff(taken)).max() < 0.03, np.round(taken, 3)
