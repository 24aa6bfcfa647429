"""One answer per run of close frames (core/chains/coherence.py) on a stand-in for the corrections:
each frame has one answer the bodies allow (`home`), and every way out of reach ends there."""
from __future__ import annotations

import numpy as np

from core.chains.coherence import one_answer_per_run


class _Home:
    """Corrections whose every frame ends at its own answer, wherever it starts (a limb: whole)."""

    whole = True

    def __init__(self, home: np.ndarray):
        self.rows = np.arange(len(home))
        self.cols = np.arange(home.shape[1])
        self.q = np.zeros(home.shape)
        self.lower, self.upper = np.full(home.shape, -1.0), np.full(home.shape, 1.0)
        self.home, self.calls = home, []

    def out_of_reach(self, out: np.ndarray, live: np.ndarray | None = None) -> None:
        live = np.arange(len(self.rows)) if live is None else live
        self.calls.append(len(live))
        out[self.rows[live]] = self.home[live]
        self.q[self.rows[live][:, None], self.cols] = out[self.rows[live]]

    def step(self, out, live, toward=None):
        raise AssertionError("a limb's runs take no steps of their own here")


def _run(groups: list[tuple[tuple[float, float], int]]) -> _Home:
    home = np.array([answer for answer, count in groups for _ in range(count)])
    correct = _Home(home)
    out = home.copy()
    one_answer_per_run(correct, out, np.zeros(home.shape))
    np.testing.assert_array_equal(out, home)  # every frame back at its own answer: nothing kept elsewhere
    return correct


def test_a_run_whose_frames_are_off_each_their_own_way_is_not_tried_on_another_answer():
    """Five frames on (0.3, 0.3) rad, the run's median; four turn the first joint the other way, four
    the second: their median turns neither (0, 0), so there is no other answer to try the run on
    (the G1 hop's three runs, tried and put back every time before): the frames are started again
    from the run's answer once, and not tried whole."""
    correct = _run([((0.3, 0.3), 5), ((-0.3, 0.3), 4), ((0.3, -0.3), 4)])
    assert correct.calls == [8]


def test_a_run_whose_frames_off_it_share_an_answer_is_tried_on_it():
    """The same with five frames turning the first joint the other way and three the second: their
    median (-0.3, 0.3) is against the run's on the first joint, so the run is tried on it (on a
    sample first), and put back as every frame ends where it was."""
    correct = _run([((0.3, 0.3), 5), ((-0.3, 0.3), 5), ((0.3, -0.3), 3)])
    assert correct.calls[0] == 8 and len(correct.calls) > 1
