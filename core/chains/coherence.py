"""One answer along a run of close frames (core.chains.corrections): frames whose
change turns a joint the other way than their run's start again from the run's answer, and a run
whose frames end on the other answer is tried whole on it, first on a sample in time (a run moves
smoothly, so its every k-th frame tells how the whole run would fare).
"""
from __future__ import annotations

from typing import Protocol

import numpy as np


class Corrections(Protocol):
    """What a run's answer needs of separation's corrections (core.chains.corrections._Corrections;
    core.chains.separation hands them over and imports this module, not the other way): the close
    frames, their joints, steps."""

    rows: np.ndarray
    cols: np.ndarray
    q: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    whole: bool

    def step(self, out: np.ndarray, live: np.ndarray, toward: np.ndarray | None = None) -> object: ...

    def out_of_reach(self, out: np.ndarray, live: np.ndarray | None = None) -> None: ...

    def whole_cost(self, out: np.ndarray, live: np.ndarray) -> np.ndarray: ...


def coarse_rows(frames: np.ndarray, every: int, gap: int) -> np.ndarray:
    """Positions into frames (R,) (sorted frame numbers) of a sample over time: each run's (frames
    at most `gap` apart) first and last frames and its every `every`-th frame between."""
    start = np.diff(frames, prepend=frames[0] - gap - 1) > gap  # (R,) the first of a run
    end = np.append(start[1:], True)  # the last of a run
    run = np.cumsum(start) - 1
    index = np.arange(len(frames)) - np.flatnonzero(start)[run]  # position within its run
    return np.flatnonzero(start | end | (index % every == 0))

RUN_GAP_FRAMES = 4  # close frames this near each other are one run, with one answer
RELAX_STEPS = 2  # steps back toward the shape of frames started again from their run's answer
RETRY_SHARE = 0.5  # a run is tried whole on the other answer when this share of its frames ends there
AGAINST_RAD = 0.1  # a frame's change this far from its run's median, the other way, starts from it
GIVE_UP_SHARE = 1.1  # a run's retry stops before its last corrections once its frames against number this
#                      share of the count to beat (G1 hop: 243 and 186 there, 235 and 170 at the end, to beat 180, 154)
TRIAL_EVERY = 3  # a limb's run tried whole on the other answer tries every this many of its close frames first
LIMB_TRIES = False  # a limb's runs tried whole on the other answer at all: its whole steps already bring each frame
#                    to the least whole change, and since the room is made on frames 1/30 s apart no try pays (G1
#                    walk: every try put back; hop: the one kept moved the limbs 0.003 deg) for a quarter of the
#                    step calls of the arm that tries (docs/history/self_collision.md, session 28)
RESTART_COST_RATIO = 3.0  # a limb's frame on the clip's edge its run's answer makes this many times costlier keeps its
#                           own (docs/notes/s25-edge.md: 2-5 the same on the G1; the walk's restarts 0.9x median, 2.8x p90)
CONSENSUS_REACH: int | None = 8  # a frame's run answer: the median change of its run's frames within this many
#                                  frames (0.27 s in the sampled room, 1/30 s apart; 0.07 s at 120 fps where a room is
#                                  made on every frame), not the whole run's, so what lies
#                                  beyond, where a clip is cut or ends, does not decide it (the G1 hop ended 1-9 frames
#                                  earlier: 0.016-0.034 rad on a shoulder a second before the end); None: the whole run
AGAINST_RAMP_RAD = 0.4  # a frame is started again from its run's answer by a share that grows from 0 to 1 as its change
#                         goes this much further against it than AGAINST_RAD (_against_share): a whole restart or none
#                         was a threshold inputs 5e-4 rad apart fell either side of (the G1 walk: 0.18 rad on a wrist;
#                         ramps of 0.05-0.2 left 0.03-0.06 there, session 33); 0: the threshold
AGAINST_FADE_RAD = 0.02  # a joint's change or answer this near none counts less against (none: not at all)
NO_CHANGE_RAD = 1e-7  # a change this small is rounding's: it has no side (the same joints in any process)


def one_answer_per_run(correct: "Corrections", out: np.ndarray, shape: np.ndarray) -> None:
    """Frames of a run of close frames whose change turns a joint the other way than the run's
    median change around them (_consensus; the arm in front of the hip there, behind it here) start again
    from that median and come back toward their shape as far as the bodies allow: one answer along a run,
    so the ramp in time mixes no two (a switch between them would pass through the body). A run
    where some frames still end on the other side (the median's answer cannot hold there) is
    tried whole on theirs (their median, where that is against the run's: frames off each their own
    way have no other answer, as the G1 hop's three runs), kept if fewer of its frames then end
    against it (all such runs in the same steps: each frame's steps are its own; a limb's runs only
    with LIMB_TRIES, on a sample of their frames first)."""
    rows = correct.rows
    run = np.cumsum(np.diff(rows, prepend=rows[0]) > RUN_GAP_FRAMES)
    change = out[rows] - shape
    consensus = _consensus(rows, run, change)
    share = _against_share(change, consensus) if AGAINST_RAMP_RAD > 0.0 else None
    against = _against(change, consensus) if share is None else np.flatnonzero(share > 0.0)
    if len(against) == 0:
        return
    ends = against[(rows[against] == 0) | (rows[against] == len(correct.q) - 1)] if correct.whole else against[:0]
    own = (out[rows[ends]].copy(), correct.whole_cost(out, ends)) if len(ends) else None
    before = out[rows[against]].copy()
    _restart(correct, out, shape, consensus, [(against, np.inf)])
    if share is not None:  # started again only in part: between its own answer and the run's
        part = share[against] < 1.0
        at = rows[against[part]]
        out[at] = before[part] + share[against[part]][:, None] * (out[at] - before[part])
        correct.q[at[:, None], correct.cols] = out[at]
    if own is not None:
        _kept_where_cheaper(correct, out, ends, *own)
    if correct.whole and not LIMB_TRIES:
        return
    still = _against(out[rows] - shape, consensus)
    tries = []  # (members, frames against before) of the runs tried whole on the other answer
    for k in np.unique(run[still]):
        members, off = np.flatnonzero(run == k), still[run[still] == k]
        if len(off) < RETRY_SHARE * len(members):
            continue  # a few frames off the run's answer: its median answer holds, the ramps join them
        theirs = np.median(out[rows[off]] - shape[off], axis=0)
        if len(_against(theirs[None], consensus[members[:1]])) == 0:
            continue  # the frames off it are each off their own way: no other answer to try the run on
        consensus[members] = theirs
        tries.append((members, len(off)))
    if not tries:
        return
    saved = out.copy()
    if correct.whole:  # nothing to give up on a limb (_restart): its runs' samples show which to go on with
        tries = _tried_first(correct, out, shape, consensus, tries, saved)
        kept = [True] * len(tries)
    else:
        kept = _restart(correct, out, shape, consensus, [(members, GIVE_UP_SHARE * off) for members, off in tries])
    for (members, off), went_on in zip(tries, kept):
        if not went_on or len(_against(out[rows[members]] - shape[members], consensus[members])) >= off:
            out[rows[members]] = saved[rows[members]]
            correct.q[rows[members][:, None], correct.cols] = saved[rows[members]]


def _consensus(rows: np.ndarray, run: np.ndarray, change: np.ndarray) -> np.ndarray:
    """(R, V) each row's run answer: the median change (R, V) of its run's rows (run (R,), rows (R,) sorted
    frames) within CONSENSUS_REACH frames of it; None: of the whole run."""
    consensus = np.zeros(change.shape)
    if CONSENSUS_REACH is None:
        for k in np.unique(run):
            consensus[run == k] = np.median(change[run == k], axis=0)
        return consensus
    starts = np.searchsorted(run, run)  # run is non-decreasing: each row's run's first and end positions
    ends = np.searchsorted(run, run, side="right")
    lo = np.maximum(starts, np.searchsorted(rows, rows - CONSENSUS_REACH))
    hi = np.minimum(ends, np.searchsorted(rows, rows + CONSENSUS_REACH, side="right"))
    for i, (a, b) in enumerate(zip(lo, hi)):
        consensus[i] = np.median(change[a:b], axis=0)
    return consensus


def _kept_where_cheaper(correct: "Corrections", out: np.ndarray, ends: np.ndarray, own: np.ndarray,
                        cost: np.ndarray) -> None:
    """A limb's rows on the clip's first or last frame (`ends`, into correct.rows) that their run's
    answer left more than RESTART_COST_RATIO times costlier (the whole cost: what a viewer reads) than
    their own answer (own (R, V), cost (R,)) put back on their own. A run cut by the clip's edge
    starts (or ends) where the limb is deepest, not where it comes into the margin: the run's answer
    need not hold there (the G1 walk's frame 0, 82 mm inside: four joints turned to
    MAX_SEPARATION_RAD, 5x its own cost, 37 deg of limb error, and the steady room carried it over
    frames 1-6). Only the clip's ends: put back mid-clip the same rule makes a switch between answers
    (docs/notes/s25-edge.md)."""
    back = correct.whole_cost(out, ends) > RESTART_COST_RATIO * cost
    if back.any():
        at = correct.rows[ends[back]]
        out[at] = own[back]
        correct.q[at[:, None], correct.cols] = own[back]


def _tried_first(correct: "Corrections", out: np.ndarray, shape: np.ndarray, consensus: np.ndarray,
                 tries: list, saved: np.ndarray) -> list:
    """The tries (members, frames against before) worth finishing, finished: each run's every
    TRIAL_EVERY-th close frame (and its ends) is tried on its new answer first, all runs in the
    same steps; a run whose sample then ends against that answer more often than the run did
    before, beyond a sample's spread (one standard error), would not be kept: its sample is put
    back (`saved`); the others' remaining frames follow (G1 walk / hop: 2 and 2 of 6 and 3 runs
    put back, none of them kept when tried whole). Each frame's steps are its own, so a run
    finished ends where it would have tried whole: the same joints, a third of the frames' steps
    spent on a run not kept."""
    rows = correct.rows
    samples = [members[coarse_rows(rows[members], TRIAL_EVERY, RUN_GAP_FRAMES)] for members, _ in tries]
    _restart(correct, out, shape, consensus, [(sample, np.inf) for sample in samples])
    going, rest = [], []
    for (members, off), sample in zip(tries, samples):
        share, before = len(_against(out[rows[sample]] - shape[sample], consensus[sample])) / len(sample), off / len(members)
        if share < before + np.sqrt(before * (1.0 - before) / len(sample)):  # within a sample's spread: go on
            going.append((members, off))
            rest.append(np.setdiff1d(members, sample))
        else:
            out[rows[sample]] = saved[rows[sample]]
            correct.q[rows[sample][:, None], correct.cols] = saved[rows[sample]]
    if any(len(r) for r in rest):
        _restart(correct, out, shape, consensus, [(r, np.inf) for r in rest if len(r)])
    return going


def _against_share(change: np.ndarray, consensus: np.ndarray) -> np.ndarray:
    """(R,) how far each row is started again from its run's answer: 0 up to AGAINST_RAD of change against the
    consensus (opposite signs, both counted less within AGAINST_FADE_RAD of none), 1 from AGAINST_RAMP_RAD
    further; continuous in the change and the consensus, where _against's sides and threshold jump."""
    fade = np.minimum(1.0, np.abs(change) / AGAINST_FADE_RAD) * np.minimum(1.0, np.abs(consensus) / AGAINST_FADE_RAD)
    apart = np.where(consensus * change < 0.0, np.abs(consensus - change) * fade, 0.0).max(axis=1, initial=0.0)
    return np.clip((apart - AGAINST_RAD) / AGAINST_RAMP_RAD, 0.0, 1.0)


def _against(change: np.ndarray, consensus: np.ndarray) -> np.ndarray:
    """Rows whose change turns some joint the other way than the consensus, by more than AGAINST_RAD.
    A change or consensus within NO_CHANGE_RAD of none has no side: its sign is rounding's."""
    sides = (consensus * change < 0.0) & (np.abs(consensus) > NO_CHANGE_RAD) & (np.abs(change) > NO_CHANGE_RAD)
    return np.flatnonzero((sides & (np.abs(consensus - change) > AGAINST_RAD)).any(axis=1))


def _restart(correct: "Corrections", out: np.ndarray, shape: np.ndarray, consensus: np.ndarray,
             groups: list) -> list[bool]:
    """Rows of each group (which, give_up) started again from shape + consensus, out of reach from
    there, then back toward their shape as far as the bodies allow; all groups in the same steps
    (a row's steps are its own). give_up: after the way back, a group stops there (False) when this
    many of its rows already turn against the consensus: a run tried whole on the other answer that
    will not be kept (the last corrections change that count by a few; a limb's whole steps have
    no way back of their own: never given up there)."""
    which = np.concatenate([rows for rows, _ in groups])
    at = correct.rows[which]
    out[at] = np.clip(shape[which] + consensus[which], correct.lower[which], correct.upper[which])
    correct.q[at[:, None], correct.cols] = out[at]
    correct.out_of_reach(out, which)
    if correct.whole:  # its whole change already came back toward the shape as far as the bodies allow;
        return [True] * len(groups)  # nothing is left to give up (the caller counts the rows against the consensus)
    for _ in range(RELAX_STEPS):
        correct.step(out, which, shape[which] - out[at])
    went_on = [len(_against(out[correct.rows[rows]] - shape[rows], consensus[rows])) < give_up
               for rows, give_up in groups]
    if any(went_on):
        correct.out_of_reach(out, np.concatenate([rows for (rows, _), on in zip(groups, went_on) if on]))
    return went_on
