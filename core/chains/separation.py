"""Keeping a chain's bodies apart: on the frames where a checked pair comes closer than the
margin, the least change of the chain's joints, measured by the chain shape, that restores it.

Linearised: at the chain's answer the shape's Gauss-Newton matrix H says what a joint change
costs, each close pair's distance gradient g what it buys; per frame the small problem
min 1/2 dx' H dx subject to d + g dx >= margin (a few pairs) is solved on its dual, batched over
frames, and taken again from where it lands until the pairs are out (core.chains.corrections: this
module runs the passes over a clip, that one a pass's steps). A joint the shape does not
see (a wrist's roll about the forearm) is nearly free, so it turns first, the elbow before the
shoulder when the shape says so; a limb's H also charges the turn of the line a viewer reads
(shoulder to wrist), so it turns last. Once out, a limb's frames take a few more steps toward
the least of their whole change plus the distance of the limb's line from the actor's (a path
of least steps is not the least change, and the shape is not what a viewer reads), kept only
where they lower that cost (linearised, they need not); what a change costs is
core.chains.change_cost's. The rows themselves come from outside (core.collision builds them;
chains never imports it): only frames near a contact pay, a clip without contacts costs a
distance check.
"""
from __future__ import annotations

import numpy as np

from ..model.kinematics import KinematicTree
from .change_cost import (LINE_WEIGHT, PULL_WEIGHT, ChainGroup, _limb_line, _limb_metric, _line_cost, _line_pull,
                          _shape_metric)
from .coherence import NO_CHANGE_RAD, one_answer_per_run
from . import corrections
from .corrections import _Corrections, _dual_step, _least_change
from .solver import ChainKinematics, ChainProblem, SolveOptions, rate_limit
from .polish import descend_room, polish_room
from . import steady as steady_stage
from .steady import blend_reach, steady_gain, steady_room_seen
from .switches import _violation, _windows, solve_switches

# the costs of a change live in change_cost, a pass's corrections in corrections; their functions stay reachable
# here, where tests look for them. corrections' constants (STEP_RAD, HOLD_AT_BOUND, ...) are read and set there
# only (this module reads them there when called): a copy here would change nothing when set
__all__ = ["LINE_WEIGHT", "PULL_WEIGHT", "_Corrections", "_dual_step", "_least_change", "_limb_line", "_limb_metric",
           "_line_cost", "_line_pull", "_shape_metric", "room_in_time", "separate_chain", "separate_chains"]

SEPARATION_PASSES = 3  # separation passes followed by the ramp in time and the rate limit
SAMPLED_PASSES = 2  # the same on the frames 1 / SAMPLE_HZ apart that the steady room starts from: it low-passes the
#                    room and fixes every frame that leaves inside, so a third pass's few frames are redone there
#                    (G1 / H1 walk and hop: the third pass found no frame inside, the same joints to the bit)
FIX_STEPS = 3  # linearised corrections per fix pass: a frame its neighbours' reach holds inside stays so
FIX_PASSES = 4  # then passes within each frame's neighbours' reach (the rate limit keeps them)
MAX_SEPARATION_RAD = 0.5  # a joint moves at most this far from its shape-only answer to make room (no flips)
LINEAR_STEPS = 10  # linearised corrections per pass, each from where the one before landed
WHOLE_PASSES = 1  # the first passes whose frames take a limb's whole steps (docs/history/self_collision.md: the third's cost 5 %, cleared
#                  none; session 33: the second's, with the descended polish after, G1 hop limbs the same, 39 M instructions)
DETOUR_SMOOTH = 30.0  # the steady room's detours charge their change's second difference this much (switches)
DETOUR_HALF_WIDTHS = (4, 8)  # frames each side of a frame the steady room left inside, solved together
DETOUR_STEPS = 3  # linearisations per detour window (6, as the switch windows: 1.5 x the NNLS time, limbs the same)
STEADY_ROOM = True  # the room made is made steady in time where the bake gives its frame rate (core.chains.steady)
POLISH_ROOM = True  # the steady room polished where a pair binds (core.chains.polish; on since session 33: with the descent,
#                    issue 17's G1 hop limbs within +0.5 deg of off; docs/history/self_collision.md)
POLISH_DESCENT = True  # the polish by core.chains.polish.descend_room (a damped SQP to where the whole cost stops
#                       falling, on frames POLISH_SAMPLE_HZ apart) instead of polish_room (docs/notes/s25-step.md)
POLISH_SAMPLE_HZ = 15.0  # the descended polish is made on frames about this often: its move is low-passed at
#                        STEADY_CUTOFF_HZ (session 33, G1 hop limbs / instructions a command: see NOTE_s33-cost.md)
POLISH_ROOM_RAD = 0.7  # the polish moves a joint at most this far from its shape answer (the passes: 0.5)
SAMPLE_HZ = 30.0  # with the steady room, the frame-by-frame room is made on frames about this often (5x its cutoff;
#                   session 26: 60 -> 30 Hz, the G1 walk / hop avoidance 0.66 / 0.86 of its instructions, docs/history/self_collision.md)
SETTLED_RAD = 1e-4  # a frame no pass moved further (0.1 mm at 1 m) is not looked at again
ONE_ANSWER_PER_RUN = True  # ablation switches (bench/bench_collision_ablate.py): each stage can be left out
DETOURS = True  # the steady room's detour windows around the frames its rounds left inside
FINISH_WHOLE = False  # True: the steady room's finish over the whole clip (before session 26), not only as far as the
#                      blend reads it either side of the frames it is for (steady.blend_reach: 15 frames; 0.25 s before
#                      session 29, 30 frames at 120 fps: the G1 hop's joints within 1e-17 rad, 0.15 G fewer)
ANCHOR_CENTROID = True  # a run clear of the clip's ends counts its grid from its depth-weighted centroid (rounded), not
#                         its deepest peak: at 120 fps a peak is flat to 0.1 mm over a few frames, so inputs 5e-4 rad
#                         apart chose peaks a frame apart in 6 of the G1 hop's runs, which moved every sample of them
#                         (docs/history/self_collision.md, session 32, s32-lips)
FIX_RAMP_M = 0.001  # the steady room's fix moves a frame out by a share growing from 0 at steady.INSIDE_M (the depth it
#                     fixes from) to 1 this much deeper: a frame just past the threshold moves just past it, not out to
#                     margin + AIM_M (2 mm of distance: the G1 walk's frame 780 fixed in one of two inputs 5e-4 rad apart,
#                     0.031 rad on a shoulder; session 33). Linearised, a frame δ past it ends about δ short of it; 0: all
FINISH_SWITCHES = True  # the finish's switch windows (after its fix passes), where the detours left frames inside


def separate_chain(tree: KinematicTree, kin: ChainKinematics, anchor: np.ndarray, q: np.ndarray,
                   targets: np.ndarray, weights: np.ndarray, separation, options: SolveOptions | None = None,
                   max_step: np.ndarray | None = None) -> None:
    """Move the chain's columns of q (F, n) in place, from where they are, so that the checked
    pairs its joints move stay `separation.margin` apart (separate_chains with one chain)."""
    separate_chains(tree, [(kin, anchor, targets, weights)], q, separation, options, max_step)


def separate_chains(tree: KinematicTree, chains: list, q: np.ndarray, separation,
                    options: SolveOptions | None = None, max_step: np.ndarray | None = None,
                    fps: float | None = None) -> None:
    """Move the columns of chains making room together (an arm and the hand hanging from it:
    [(kin, anchor (F, 4, 4), targets, weights[, limb])]) in place, so that the checked pairs their
    joints move stay `separation.margin` apart; each change costs what it does to its own chain's
    shape, so a hand turns away where that costs less than moving the arm. limb: (base link, tip
    link) of the line a viewer reads (shoulder to wrist): a change that turns that line costs more
    (core.chains.change_cost), so a swivel about it, a bend or the hand make room first.

    separation: the rows keeping bodies apart over all their joints (core.collision.avoid.SeparationTerm:
    margin, root, distance(q, root, within, still), depth(q, root, still), near(q, frames), gradient(q, root, within, still),
    still_poses(q, root), with_still(q), still_on(frames) and kept_on(frames): the still links posed, and
    their capsules placed, once over all frames).
    max_step: (V,) per frame, the chains' columns one after the other.
    fps: the clip's frame rate: with max_step, the room made is made steady in time (_steady), the
    frame-by-frame room it starts from made on frames about 1 / SAMPLE_HZ apart (_sampled_apart).
    """
    if separation is None:
        return
    chains = [(chain[:4], chain[4] if len(chain) > 4 else None) for chain in chains]
    group = ChainGroup([ChainProblem(tree, kin, anchor, q, targets, weights, options or SolveOptions())
                    for (kin, anchor, targets, weights), _ in chains if len(kin.columns)],
                   [limb for (kin, *_), limb in chains if len(kin.columns)])
    if len(group.columns) == 0:
        return
    shape = np.clip(q[:, group.columns], group.lower, group.upper)
    separation = separation.with_still(q)  # the links the group does not move: posed once for every look
    steady = STEADY_ROOM and fps is not None and max_step is not None
    every = _sample_every(fps, len(shape)) if steady else 1
    seen = _violation(group, separation, shape, np.arange(len(shape))) if every > 1 else None  # at the shape
    if seen is not None and not (seen > 0).any():  # no frame inside the margin: no room to make (the sampled
        return  # grid, then the clip's two ends, would rate-limit the clip as one step)
    if every > 1:
        x = _sampled_apart(group, separation, shape, max_step, every, seen)
    else:
        x = _keep_apart(group, separation, shape, max_step, fixes=not steady)
    if steady:
        x, depth = _steady(group, separation, x, shape, max_step, fps)
        if POLISH_ROOM:
            x = _polished(group, separation, x, shape, max_step, fps, depth, seen)
    q[:, group.columns] = x


def _sampled_apart(problem: ChainGroup, separation, shape: np.ndarray, max_step: np.ndarray,
                   every: int, depth: np.ndarray | None = None) -> np.ndarray:
    """_keep_apart (SAMPLED_PASSES passes, no fixes) on frames `every` apart counted from each contact run's
    deepest peak (_anchored_samples: the same frames of the motion wherever the clip starts), the change from
    the shape interpolated in time between them: the steady room keeps only that change's part
    below STEADY_CUTOFF_HZ, which frames 1 / SAMPLE_HZ apart tell as well as every frame, for a
    fraction of the frame-steps (docs/history/self_collision.md). One look at every frame finds the runs; the
    first pass then looks only at the samples it found inside. depth: that look's (F,) when already made."""
    if depth is None:
        depth = _violation(problem, separation, shape, np.arange(len(shape)))
    sample = _anchored_samples(depth, every)
    change = _keep_apart(problem.on(sample), separation.on(sample), shape[sample], max_step, SAMPLED_PASSES,
                         fixes=False, inside=depth[sample] > 0, at=sample) - shape[sample]  # not all `every` apart
    return np.clip(shape + _between(len(shape), sample, change), problem.lower, problem.upper)


def _sample_every(fps: float, count: int, hz: float | None = None) -> int:
    """The stride of the frames about 1 / hz (default SAMPLE_HZ) apart that the room is made on; 1 (every frame)
    where the clip's rate is at most that or it has too few frames for two strides."""
    every = max(1, int(round(fps / (hz or SAMPLE_HZ))))
    return every if count > 2 * every else 1


def _anchored_samples(depth: np.ndarray, every: int) -> np.ndarray:
    """Every `every`-th frame counted from each run's deepest peak (_anchor; depth (F,) m inside the margin:
    frames inside at most 2 * every apart are one run), as far as halfway to the next run, and the clip's first
    and last frames: the same frames of the motion wherever the clip starts or ends, unless the cut takes a
    run's peak (a grid counted from the clip's first frame samples other frames of a clip cut 1-3 frames later:
    its room moved the G1's arms up to 0.55 rad all through it). A sample closer than every / 2 to the one
    before (where two runs' grids meet, or at an end) is left out. No frame inside: the two ends (no room to
    make)."""
    count = len(depth)
    frames = np.flatnonzero(depth > 0)
    if len(frames) == 0:
        return np.unique([0, count - 1])
    first = np.flatnonzero(np.diff(frames, prepend=frames[0] - 2 * every - 1) > 2 * every)  # (R,) into frames
    last = np.append(first[1:] - 1, len(frames) - 1)
    anchor = np.array([_anchor(depth, frames[a], frames[b]) for a, b in zip(first, last)])
    ends = np.append((frames[last[:-1]] + frames[first[1:]]) // 2, count)  # each run's grid stops halfway to the next
    starts = np.append(0, ends[:-1])
    grid = [a + every * np.arange(-((a - s) // every), (e - 1 - a) // every + 1)
            for a, s, e in zip(anchor, starts, ends)]
    sample = np.union1d(np.concatenate(grid), [0, count - 1])
    keep = np.ones(len(sample), dtype=bool)
    keep[1:-1] = np.diff(sample)[:-1] >= max(1, every // 2)
    near_last = np.flatnonzero(keep)[-2] if keep.sum() > 2 else None
    if near_last is not None and sample[-1] - sample[near_last] < max(1, every // 2):
        keep[near_last] = False
    return sample[keep]


def _anchor(depth: np.ndarray, first: int, last: int) -> int:
    """A run's (frames first..last) frame its grid is counted from, which a cut elsewhere leaves where it is in the
    motion. ANCHOR_CENTROID: a run clear of the clip's ends, its depth-weighted centroid (moves by a rounding where
    its depths move a little, where a peak jumps between near-equal frames); a run cut by one end, its other end.
    Else (and a run over the whole clip) its deepest peak (a frame deeper than the one before and at least as deep
    as the one after, neither an end of the clip); a run with none (deepest at a cut end) is counted from its end
    away from the cut."""
    run = depth[first:last + 1]
    if ANCHOR_CENTROID and (first > 0) != (last < len(depth) - 1):  # cut by one end of the clip: a peak there may be
        return last if first == 0 else first  # noise's (a flat stretch), the far end is where the motion leaves the margin
    if ANCHOR_CENTROID and first > 0:  # a frame's weight fades to 0 at the run's edge
        weight = np.maximum(run, 0.0)
        return first + int(np.rint(np.dot(np.arange(len(run)), weight) / weight.sum()))
    before = np.r_[np.inf if first == 0 else depth[first - 1], run[:-1]]
    after = np.r_[run[1:], np.inf if last == len(depth) - 1 else depth[last + 1]]
    peak = np.flatnonzero((run > before) & (run >= after))
    if len(peak):
        return first + int(peak[np.argmax(run[peak])])
    return last if first == 0 and last < len(depth) - 1 else first


def _between(count: int, sample: np.ndarray, change: np.ndarray) -> np.ndarray:
    """(count, V) the change on the sampled frames (len(sample), V) interpolated in time between them."""
    frames = np.arange(count)
    return np.stack([np.interp(frames, sample, column) for column in change.T], axis=1)


def _polished(problem: ChainGroup, separation, x: np.ndarray, shape: np.ndarray, max_step: np.ndarray,
              fps: float, depth: np.ndarray | None = None, runs: np.ndarray | None = None) -> np.ndarray:
    """x (steady, clear) moved toward its frames polished where a pair binds (core.chains.polish,
    within POLISH_ROOM_RAD of the shape), that move low-passed in time (steady_gain). depth (F,): metres
    inside the margin at x (NaN unknown; _steady's): a frame the move cannot bring within INSIDE_M is not looked at.
    runs (F,): metres inside the margin at the shape (_sampled_apart's look): the descent's frames are counted from
    the contact runs as the passes' are (_anchored_samples: a clip cut a few frames later descends the same frames)."""
    lower = np.maximum(problem.lower, shape - POLISH_ROOM_RAD)
    upper = np.minimum(problem.upper, shape + POLISH_ROOM_RAD)
    every = _sample_every(fps, len(x), POLISH_SAMPLE_HZ)
    if POLISH_DESCENT and every > 1:  # on frames 1 / POLISH_SAMPLE_HZ apart, counted from the runs as the passes'
        if runs is None:
            runs = _violation(problem, separation, shape, np.arange(len(shape)))
        sample = _anchored_samples(runs, every)
        moved = descend_room(problem.on(sample), separation.on(sample), x[sample], shape[sample], lower[sample],
                             upper[sample], corrections._least_change, corrections.WHOLE_SHAPE_WEIGHT,
                             corrections.LOOKAHEAD_M, corrections.STEP_RAD) - x[sample]
        better = x + _between(len(x), sample, moved)
    else:
        better = (descend_room if POLISH_DESCENT else polish_room)(
            problem, separation, x, shape, lower, upper, corrections._least_change, corrections.WHOLE_SHAPE_WEIGHT,
            corrections.LOOKAHEAD_M, corrections.STEP_RAD)
    return steady_gain(x, better, fps, lower, upper, max_step,
                       lambda y, frames: _violation(problem, separation, y, frames), depth, separation.reach)


def _steady(problem: ChainGroup, separation, x: np.ndarray, shape: np.ndarray, max_step: np.ndarray,
            fps: float) -> tuple:
    """(x, depth) with the room made low-passed in time and the frames that put inside fixed
    (core.chains.steady): each frame's least change alone flickers frame to frame. depth (F,): metres inside
    the margin where the last look saw it (NaN: not seen since it moved)."""
    lower = np.maximum(problem.lower, shape - MAX_SEPARATION_RAD)
    upper = np.minimum(problem.upper, shape + MAX_SEPARATION_RAD)

    def inside(y, frames):  # signed: below 0, how far clear at least (the polish's steady_gain reads it)
        return _violation(problem, separation, y, frames, signed=POLISH_ROOM)

    def fix(y, frames):
        out, _ = _separate(problem, separation, y, frames, None, None, LINEAR_STEPS, False)
        if FIX_RAMP_M > 0.0 and len(frames):  # a frame just past INSIDE_M moves just past it (FIX_RAMP_M)
            depth = _violation(problem, separation, y, frames) - steady_stage.INSIDE_M  # read when called
            share = np.clip(depth / FIX_RAMP_M, 0.0, 1.0)
            out[frames] = y[frames] + share[:, None] * (out[frames] - y[frames])
        return out

    def finish(y, near):  # the fix passes and switch windows _keep_apart left out, around the frames `near`
        if FINISH_WHOLE:
            return _finished(problem, separation, y, shape, max_step)
        out = y.copy()
        for frames in _windows(near, blend_reach(fps), len(y)):
            out[frames] = _finished(problem.on(frames), separation.on(frames), y[frames], shape[frames], max_step)
        return out

    def detour(y, frames):
        if not DETOURS:
            return y
        return solve_switches(problem, separation, y, shape, max_step, MAX_SEPARATION_RAD, inside=frames,
                              smooth=DETOUR_SMOOTH, half_widths=DETOUR_HALF_WIDTHS, steps=DETOUR_STEPS)

    return steady_room_seen(x, shape, fps, lower, upper, max_step, inside, fix, detour, finish)


def _finished(problem: ChainGroup, separation, y: np.ndarray, shape: np.ndarray, max_step: np.ndarray) -> np.ndarray:
    """y after the fix passes (each frame within its neighbours' reach) and the switch windows. A pass after the
    first looks only at the frames not seen clear of the margin where they now are: a frame seen clear and not
    moved since is left as it is all the same (no pair of it is near)."""
    reach = (np.full(y.shape, -np.inf), np.full(y.shape, np.inf))
    frames = None  # every frame on the first pass
    for _ in range(FIX_PASSES):
        if frames is None or len(frames):
            solved, clear = _separate(problem, separation, y, frames, _within_reach(y, max_step, reach), None,
                                      FIX_STEPS, False)
        else:
            solved, clear = y, np.zeros(len(y), dtype=bool)
        seen = clear if frames is None else clear | ~_marked(frames, len(y))  # the others: seen clear, unmoved
        y = rate_limit(solved, max_step)
        frames = np.flatnonzero(~(seen & (y == solved).all(axis=1)))
    return solve_switches(problem, separation, y, shape, max_step, MAX_SEPARATION_RAD) if FINISH_SWITCHES else y


def _marked(frames: np.ndarray, count: int) -> np.ndarray:
    """(count,) bool, True on `frames`."""
    out = np.zeros(count, dtype=bool)
    out[frames] = True
    return out


def _keep_apart(problem: ChainGroup, separation, x: np.ndarray, max_step: np.ndarray | None,
                passes: int | None = None, fixes: bool = True, inside: np.ndarray | None = None,
                at: np.ndarray | None = None) -> np.ndarray:
    """x after `passes` of _separate, the room made after each ramped in time (it starts
    early enough for the joints' speed) and rate limited, then up to FIX_PASSES more on what the
    ramps left inside, each frame moved only as far as its neighbours' speed allows (the rate
    limit keeps it): velocity limits hold, a last overlap may not.
    Later passes look only at the frames the pass before moved, not at those it left clear of
    the margin where the ramp and the rate limit did not touch them.
    fixes: False leaves the fix passes and the switch windows out (_steady smooths x first and
    finishes it only where it needs it).
    inside: (F,) bool, the frames known inside the margin at x: the first pass looks only at them (the others
    are clear). at: (F,) the rows' frames where they are not every frame (no fixes then): max_step is per frame,
    so a step over two frames' gap may go twice as far."""
    passes = SEPARATION_PASSES if passes is None else passes
    step = max_step if at is None or max_step is None else np.diff(at)[:, None] * max_step  # (V,) or (F-1, V)
    shape, frames = x, None if inside is None else np.flatnonzero(inside)
    held = (np.full(x.shape, -np.inf), np.full(x.shape, np.inf))  # where the ramps took a joint: no way back
    seen = np.zeros(len(x), dtype=bool)  # frames seen clear of the margin where they are
    for k in range(passes + (FIX_PASSES if fixes else 0)):
        last, fixing = x, k >= passes and max_step is not None
        bounds = _within_reach(x, max_step, held) if fixing else held
        solved, clear = _separate(problem, separation, x, frames, bounds, shape if k == 0 else None,
                                  FIX_STEPS if fixing else LINEAR_STEPS, k < WHOLE_PASSES)
        if k == 0 and inside is not None:
            clear |= ~inside
        seen = (seen & (solved == last).all(axis=1)) | clear
        x = solved
        if max_step is not None:
            x = rate_limit(x if fixing else room_in_time(shape, x, max_step, at), step)
            # a joint the ramp turned back (a neighbour's answer the other way won) is held on
            # that side, so the next pass makes room with the others instead of undoing it
            held = (np.where(x > solved + NO_CHANGE_RAD, np.maximum(held[0], x), held[0]),
                    np.where(x < solved - NO_CHANGE_RAD, np.minimum(held[1], x), held[1]))
        still = (np.abs(x - solved) <= NO_CHANGE_RAD).all(axis=1)  # no ramp moved it (rounding's changes aside)
        clear &= still  # seen clear where it still is
        seen &= still
        frames = np.flatnonzero((np.abs(x - last) > SETTLED_RAD).any(axis=1) & ~clear)
        if len(frames) == 0:
            break
    if max_step is not None and fixes:  # where a run switches answers, a window of frames goes around the body together
        x = solve_switches(problem, separation, x, shape, max_step, MAX_SEPARATION_RAD, seen)
    return x


def _within_reach(x: np.ndarray, max_step: np.ndarray, held: tuple) -> tuple:
    """(lower, upper) (F, V): where each frame's joints may go with both neighbours where they
    are and no joint faster than max_step, inside `held`."""
    before, after = np.vstack([x[:1], x[:-1]]), np.vstack([x[1:], x[-1:]])
    return (np.maximum(held[0], np.maximum(before, after) - max_step),
            np.minimum(held[1], np.minimum(before, after) + max_step))


def _separate(problem: ChainGroup, separation, x: np.ndarray, frames: np.ndarray | None = None,
              held: tuple | None = None, shape: np.ndarray | None = None,
              steps: int = LINEAR_STEPS, whole: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """x with the frames (of `frames`, default all) where bodies come closer than the margin
    moved by the least change of chain shape that keeps them out, within MAX_SEPARATION_RAD of
    where the chains were before any room was made: a limb deep inside the body gives way, it
    does not swing round the other side. shape: x before any room was made, on a first pass:
    frames whose change turns a joint against the run around them start again from its median.
    whole: a limb's frames take its whole steps once out (the first WHOLE_PASSES passes).
    Also (F,) bool: the frames whose every pair was seen clear of the margin where they end."""
    cols, margin = problem.columns, separation.margin
    q = problem.q.copy()
    q[:, cols] = x
    look = np.arange(len(q)) if frames is None else np.asarray(frames)
    if len(look) == 0:
        return x, np.zeros(len(x), dtype=bool)
    # the frames' distances and the close pairs' gradients at once: the first correction starts from them
    dist, (f, p, d, g) = separation.look(q[look], separation.root[look], margin + corrections.LOOKAHEAD_M,
                                         **separation.kept_on(look))
    close = dist.min(axis=1, initial=np.inf) < margin
    rows = look[close]
    clear = np.zeros(len(x), dtype=bool)
    clear[look[~close]] = True
    if len(rows) == 0:
        return x, clear
    first = close[f]
    first = ((np.cumsum(close) - 1)[f[first]], p[first], d[first], g[first])
    start = np.clip(problem.q[rows][:, cols], problem.lower, problem.upper)  # before any room was made
    lower = np.maximum(problem.lower, start - MAX_SEPARATION_RAD)
    upper = np.minimum(problem.upper, start + MAX_SEPARATION_RAD)
    if held is not None:  # (lower (F, V), upper (F, V)) a joint may not go back past; never past where it is
        lower = np.minimum(np.maximum(lower, held[0][rows]), x[rows])
        upper = np.maximum(np.minimum(upper, held[1][rows]), x[rows])
    metric = problem.metric(q[rows], rows)
    separation = separation.near(q, rows, dist=dist[close])  # only pairs a correction can bring into the margin
    out = x.copy()
    correct = corrections._Corrections(separation, q, cols, rows, metric, lower, upper, steps,
                                       (problem, start) if whole and steps == LINEAR_STEPS else None)
    correct.out_of_reach(out, known=first)
    if shape is not None and ONE_ANSWER_PER_RUN:
        one_answer_per_run(correct, out, shape[rows])
    clear[rows] = (out[rows] == correct.clear_at).all(axis=1)
    return out, clear


def room_in_time(shape: np.ndarray, moved: np.ndarray, max_step: np.ndarray,
                 at: np.ndarray | None = None) -> np.ndarray:
    """Joint positions (F, V) that go at least as far from `shape` as `moved` does, each way,
    wherever it does, and never faster than max_step (V,) per frame when `shape` is not: the room
    made is ramped around the moving chain itself (a change ramped on its own, added to a shape
    already at full speed, would be cut back by the rate limit where it is needed). at: (F,) the
    rows' frames when they are not every frame (the sampled room's)."""
    change = moved - shape  # a change within NO_CHANGE_RAD of none is rounding's: it neither ramps nor holds
    above = _cone(np.where(change > NO_CHANGE_RAD, moved, -np.inf), max_step, at)
    below = -_cone(np.where(change < -NO_CHANGE_RAD, -moved, -np.inf), max_step, at)
    return np.minimum(np.maximum(shape, above), below)


def _cone(values: np.ndarray, max_step: np.ndarray, at: np.ndarray | None = None) -> np.ndarray:
    """max over k of values[k] - |at[f] - at[k]| * max_step (F, V) (at: (F,) frames, default 0..F-1):
    running maxima forward and backward."""
    ramp = (np.arange(len(values)) if at is None else at)[:, None] * max_step  # (F, V)
    ahead = np.maximum.accumulate(values + ramp, axis=0) - ramp
    behind = np.maximum.accumulate((values - ramp)[::-1], axis=0)[::-1] + ramp
    return np.maximum(ahead, behind)
