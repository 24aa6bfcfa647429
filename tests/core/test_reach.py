"""The step probe's trials stacked in one solve (core.balance.reach): each trial answers as alone."""
from __future__ import annotations

import numpy as np
import pytest

from core.balance.reach import STEP_SWAY, SWAYS, parallel_widths
from core.model.kinematics import KinematicTree
from core.model.same_bits import equal_bits
from core.model.urdf import parse_urdf
from tests.core.test_gait import ROBOTS, _step_bounds


@pytest.fixture(scope="module", params=["g1", "h1"])
def bounds(request):
    return _step_bounds(KinematicTree(parse_urdf(ROBOTS[request.param])))


def test_stacked_trials_are_each_trials_own_legs(bounds):
    """The probe's legs are solved as trials, not a motion: a trial's joints are its own to the bit whether
    it is solved alone or stacked with others of other sways and offsets (what lets step_bounds ask every
    sway, the step lengths, the parallel widths and the stance as built in two solves)."""
    probe = bounds.probe
    rng = np.random.default_rng(26)
    offsets = -probe.natural * probe.left + rng.normal(0.0, 0.15, (9, 2))
    shares = rng.uniform(0.0, 1.0, 9)
    stacked, q_stacked, root_stacked = probe.trial(offsets, shares, solved=True)
    for rows in (np.arange(9) < 1, np.arange(9) % 3 == 1, np.arange(9) >= 5):
        alone, q_alone, root_alone = probe.trial(offsets[rows], shares[rows], solved=True)
        assert np.array_equal(alone, stacked[rows])
        assert equal_bits(q_alone, q_stacked[rows]) and equal_bits(root_alone, root_stacked[rows])


def test_step_bounds_asks_as_the_loop_of_single_questions_did(bounds):
    """step_bounds' lean (the most of SWAYS that stands as built), step lengths and parallel widths, asked
    in two stacked solves, are what asking each question in its own solve gives."""
    probe = bounds.probe
    built = -probe.natural * probe.left[None]
    probe.lean = 1.0  # as the sways were asked: across as far as a trial asks
    lean = next((sway for sway in SWAYS if probe.stands(built, sway=sway)[0]), SWAYS[-1])
    stood = probe.stands_each([(built, sway, None) for sway in SWAYS])
    assert [bool(ok[0]) for ok in stood] == [bool(probe.stands(built, sway=sway)[0]) for sway in SWAYS]
    probe.lean = bounds.lean
    assert bounds.lean == lean and probe.sway == STEP_SWAY
    widths = parallel_widths(probe.natural, 0.05)
    offsets = -widths[:, None] * probe.left
    together = probe.stands_each([(offsets, STEP_SWAY, None), (built, STEP_SWAY, None)])
    assert np.array_equal(together[0], probe.stands(offsets)) and together[1][0] == probe.stands(built)[0]
    if probe.built_stands is not None:  # legs without an ankle roll: asked with the step lengths
        assert probe.built_stands == bool(probe.stands(built)[0])


def test_a_steps_stances_and_its_last_stance_from_behind_in_one_solve(bounds):
    """check_steps asks a step's stances and, for a last one, the waist behind its standing foot in one
    solve (stands_each with trials): the answers stands and trial give each alone."""
    probe = bounds.probe
    rng = np.random.default_rng(12)
    offsets = -probe.natural * probe.left + rng.normal(0.0, 0.1, (4, 2))
    turns = rng.normal(0.0, 0.05, 4)
    behind = (np.repeat(offsets[:2], 2, axis=0), np.array([-0.15, 0.0, 1.15, 1.0]), np.repeat(turns[:2], 2))
    stood, beyond = probe.stands_each([(offsets, STEP_SWAY, turns)], [behind])
    assert np.array_equal(stood, probe.stands(offsets, turns))
    assert np.array_equal(beyond, probe.trial(behind[0], behind[1], turns=behind[2]))
