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

    def whole_cost(self, out: np.ndarray, live: np.ndarray) -> np.ndarray:
        """The change from the shape (zeros) squared: what the restart's put-back compares."""
        return 0.5 * (out[self.rows[live]] ** 2).sum(axis=1)


class _Costly(_Home):
    """As _Home, but a frame started again from its run's answer ends at `restarted` (R, V) where
    that is given (not NaN): the run's answer holds there only at a cost."""

    def __init__(self, home: np.ndarray, restarted: np.ndarray):
        super().__init__(home)
        self.restarted = restarted

    def out_of_reach(self, out: np.ndarray, live: np.ndarray | None = None) -> None:
        super().out_of_reach(out, live)
        live = np.arange(len(self.rows)) if live is None else live
        far = live[~np.isnan(self.restarted[live]).any(axis=1)]
        out[self.rows[far]] = self.restarted[far]
        self.q[self.rows[far][:, None], self.cols] = out[self.rows[far]]


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


def test_a_run_whose_frames_off_it_share_an_answer_is_tried_on_it(monkeypatch):
    """The same with five frames turning the first joint the other way and three the second: their
    median (-0.3, 0.3) is against the run's on the first joint, so the run is tried on it (on a
    sample first), and put back as every frame ends where it was (a limb's runs: with LIMB_TRIES)."""
    import core.chains.coherence as coherence

    monkeypatch.setattr(coherence, "LIMB_TRIES", True)
    correct = _run([((0.3, 0.3), 5), ((-0.3, 0.3), 5), ((0.3, -0.3), 3)])
    assert correct.calls[0] == 8 and len(correct.calls) > 1


def test_a_limbs_run_is_not_tried_on_another_answer_by_default():
    """The same run on a limb without LIMB_TRIES: its frames off the run's answer are started again
    from it once, and the run is not tried whole on theirs (its whole steps already settle each frame)."""
    correct = _run([((0.3, 0.3), 5), ((-0.3, 0.3), 5), ((0.3, -0.3), 3)])
    assert correct.calls == [8]


def _restarted_at(frame: int) -> np.ndarray:
    """Seven frames on (0.3, 0.3) rad but `frame`, whose own answer turns the first joint the other
    way (-0.2, 0.2); started again from the run's answer it ends at (0.5, 0.5): 6x its own cost."""
    home = np.tile([0.3, 0.3], (7, 1))
    home[frame] = (-0.2, 0.2)
    restarted = np.full(home.shape, np.nan)
    restarted[frame] = (0.5, 0.5)
    correct = _Costly(home, restarted)
    out = home.copy()
    one_answer_per_run(correct, out, np.zeros(home.shape))
    return out[frame]


def test_a_frame_on_the_clips_edge_the_runs_answer_makes_far_costlier_keeps_its_own():
    """The clip's first and last frames keep their own answer where the run's costs them more than
    RESTART_COST_RATIO times theirs (the G1 walk's frame 0: 37 deg of limb error where 18 did)."""
    np.testing.assert_array_equal(_restarted_at(0), (-0.2, 0.2))
    np.testing.assert_array_equal(_restarted_at(6), (-0.2, 0.2))


def test_a_frame_inside_the_clip_takes_its_runs_answer_at_a_cost():
    """The same frame mid-clip takes the run's answer: put back there, it would switch answers
    between its neighbours (the G1 walk's frame 771 went to 37 deg that way)."""
    np.testing.assert_array_equal(_restarted_at(3), (0.5, 0.5))


def test_a_runs_answer_near_a_frame_does_not_change_where_the_run_is_cut_further_away(monkeypatch):
    """A run of 30 close frames, 16 turning the first joint one way then 14 the other: each frame's run answer is
    the median of its run's frames within CONSENSUS_REACH, so the run started 3 frames later (13 and 14: the whole
    run's median turns the other way) leaves every frame beyond that reach of the cut with its answer. Of the whole
    run, the avoiding G1 hop ended 1-9 frames earlier moved a shoulder 0.016-0.034 rad a second before the end."""
    import core.chains.coherence as coherence

    change = np.r_[np.full(16, 0.3), np.full(14, -0.3)][:, None] * [1.0, 0.0] + [0.0, 0.3]
    rows = np.arange(30)

    def answers(first: int) -> np.ndarray:
        return coherence._consensus(rows[first:], np.zeros(30 - first, dtype=int), change[first:])

    whole, later = answers(0), answers(3)
    far = slice(3 + coherence.CONSENSUS_REACH + 1, None)
    np.testing.assert_array_equal(later[far.start - 3:], whole[far])
    assert whole[0, 0] == 0.3 and whole[-1, 0] == -0.3  # each end its own side's answer
    monkeypatch.setattr(coherence, "CONSENSUS_REACH", None)
    assert answers(0)[10, 0] == 0.3 and answers(3)[7, 0] == -0.3  # the whole run's: frame 10 turned with the cut
