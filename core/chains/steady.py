"""The room a chain made, steady in time: each frame's least change alone flickers (a wrist's
roll on one frame, the shoulder's yaw on the next, both ways out), which a robot plays as
vibration. The change from the shape answer is low-passed over time; the frames the smoothing
put back inside the margin are fixed with smooth bumps (a fix spread over its neighbours), and
where rounds of that do not bring them out (a run switching
answers: the smoothed path goes through the body) the path is blended back, smoothly, into the
frame-by-frame answer around them.
"""
from __future__ import annotations

from typing import Callable

import numpy as np
from scipy.ndimage import maximum_filter1d, uniform_filter1d

from ..motion.filtering import butterworth_lowpass, rate_limit

STEADY_CUTOFF_HZ = 6.0  # the room made is low-passed at the bake's own cutoff
BUMP_S = 1 / 120  # a fix of frames the smoothing put inside is spread over this long (s) each side, twice
BUMP_REACH = 1  # a fix is dilated over this many times BUMP_S before it is spread (_envelope)
STEADY_ROUNDS = 2  # rounds of (fix the frames inside, spread the fix): the first fixes nearly every frame (G1 walk: 162 and
#                  101), a later one a few (5, 2, 1), which the detour windows after the rounds take as well (session 28,
#                  8 before: G1 walk 100 -> 92 step calls, limbs +0.6915 -> +0.6929 deg, jerk 2,343 -> 2,318; the
#                  hop and the H1 stall after two: the same joints)
BLEND_TRIES = 3  # widenings of the blend back into the frame-by-frame answer
BLEND_REACH = 3  # each widening's weight is dilated over this many times BUMP_S before it is spread (_envelope)
INSIDE_M = 0.001  # a frame this far inside the margin is fixed
BLEND_RAMP_M = 0.001  # a frame's weight toward the frame-by-frame answer grows from 0 at INSIDE_M to 1 this much
#                       deeper: a frame a hair either side of INSIDE_M takes nearly the same blend (continuous)
STALLED_ROUNDS = 1  # the rounds stop once this many leave no fewer frames inside than the fewest yet: the
#                    frames left (a run switching answers) only move about, each round a fix (docs/history/self_collision.md)
LAST_FIX = False  # True: the frames the detour left inside take one more bump, weighted by depth, before the finish
#                  (_last_fix; session 29, G1 hop: the finish skipped, 0.29 G of the command fewer, jerk 2,725 -> 2,258,
#                  but limbs +0.962 -> +0.986 deg: the finish's blend toward the frame-by-frame answer is worth that; off)
LAST_FIX_REACH = 2  # that bump's reach (_envelope): at least the weighted fix on the frame itself
MOVED_RAD = 1e-9  # a frame moved no further keeps its depth (its distances move by about as many metres)


def steady_room(x: np.ndarray, shape: np.ndarray, fps: float, lower: np.ndarray, upper: np.ndarray,
                max_step: np.ndarray, inside: Callable, fix: Callable, detour: Callable,
                finish: Callable) -> np.ndarray:
    """steady_room_seen's y."""
    return steady_room_seen(x, shape, fps, lower, upper, max_step, inside, fix, detour, finish)[0]


def steady_room_seen(x: np.ndarray, shape: np.ndarray, fps: float, lower: np.ndarray, upper: np.ndarray,
                     max_step: np.ndarray, inside: Callable, fix: Callable, detour: Callable,
                     finish: Callable) -> tuple:
    """(y, depth): x (F, V, rad: the room made frame by frame) with its change from `shape` (F, V) low-passed
    over time, within [lower, upper] (F, V) and max_step (V,) per frame. inside(y, frames) ->
    (len(frames),) metres inside the margin; fix(y, frames) -> y with those frames moved out,
    each alone; detour(y, frames) -> y with windows around those frames solved together, the
    change smooth in time (core.chains.switches); finish(x, frames) -> x with its frames still inside
    moved out frame by frame and by windows, around `frames` (asked only where needed). Frames still inside after
    STEADY_ROUNDS take a detour, then x's finished answer, blended in smoothly. depth (F,): metres inside the
    margin at y where the last look saw it, NaN where y moved since or no look was asked (steady_gain's bound)."""
    change = x - shape
    unknown = np.full(len(x), np.nan)
    if len(x) < 8 or not (np.abs(change) > 1e-9).any():
        return x, unknown
    y = _bounded(shape + butterworth_lowpass(change, fps, STEADY_CUTOFF_HZ), lower, upper, max_step)
    half = _half(fps)
    look = np.flatnonzero((np.abs(y - shape) > 1e-9).any(axis=1) | (np.abs(change) > 1e-9).any(axis=1))
    depth = inside(y, look)
    fewest, idle = len(look) + 1, 0
    for _ in range(STEADY_ROUNDS):
        frames = look[depth > INSIDE_M]
        if len(frames) == 0:
            return y, _known(unknown, look, depth)
        idle = idle + 1 if len(frames) >= fewest else 0
        if idle >= STALLED_ROUNDS:  # the rounds only move the frames inside about: a run switching answers
            break
        fewest = min(fewest, len(frames))
        bumped = _bounded(y + _envelope(fix(y, frames) - y, half, BUMP_REACH), lower, upper, max_step)
        depth = _again(inside, bumped, y, look, depth)
        y = bumped
    frames = look[depth > INSIDE_M]
    if len(frames):
        around = detour(y, frames)
        depth = _again(inside, around, y, look, depth)
        y = around
    if not (depth > INSIDE_M).any():
        return y, _known(unknown, look, depth)
    if LAST_FIX:
        y, depth = _last_fix(y, look, depth, half, lower, upper, max_step, inside, fix)
        if not (depth > INSIDE_M).any():
            return y, _known(unknown, look, depth)
    y, depth = _blend(finish(x, look[depth > INSIDE_M]), y, look, depth, half, max_step, inside)
    return y, _known(unknown, look, depth)


def _known(unknown: np.ndarray, look: np.ndarray, depth: np.ndarray) -> np.ndarray:
    """(F,) the look frames' depths (len(look),) in a copy of `unknown` (NaN elsewhere)."""
    out = unknown.copy()
    out[look] = depth
    return out


def _last_fix(y: np.ndarray, look: np.ndarray, depth: np.ndarray, half: int, lower: np.ndarray,
              upper: np.ndarray, max_step: np.ndarray, inside: Callable, fix: Callable) -> tuple:
    """(y, depth) after one more bump from a fix of the look frames still inside (depth, metres) alone,
    each frame's fix weighted by how deep it is (_deep: 0 at INSIDE_M, continuous) and spread at reach 2
    (at least the weighted fix on the frame itself): a frame a millimetre or two inside wants a
    millimetre's change, not the finish's window of passes. Linearised, a frame d inside (INSIDE_M
    < d < INSIDE_M + BLEND_RAMP_M) moves out by its weight times d plus the fix's aim, which leaves it
    within INSIDE_M; what it leaves deeper is finished as before."""
    deep = depth > INSIDE_M
    frames = look[deep]
    bump = np.zeros(y.shape)
    bump[frames] = _deep(depth[deep])[:, None] * (fix(y, frames)[frames] - y[frames])
    bumped = _bounded(y + _envelope(bump, half, LAST_FIX_REACH), lower, upper, max_step)
    return bumped, _again(inside, bumped, y, look, depth)


def _blended(x: np.ndarray, y: np.ndarray, look: np.ndarray, depth: np.ndarray, half: int,
             max_step: np.ndarray, inside: Callable) -> np.ndarray:
    """_blend's answer."""
    return _blend(x, y, look, depth, half, max_step, inside)[0]


def _blend(x: np.ndarray, y: np.ndarray, look: np.ndarray, depth: np.ndarray, half: int,
           max_step: np.ndarray, inside: Callable) -> tuple:
    """(out, depth: the look frames', NaN where the last step moved them unlooked): y blended into x
    around the look frames still inside (depth, metres), the blend's weight 1 on them (_deep: from
    INSIDE_M, over BLEND_RAMP_M) and smooth around, widened while the blend leaves frames inside; a
    frame still inside after BLEND_TRIES goes as far toward x (the frame-by-frame answer) as it is deep.
    Every choice a ramp of depth, none a threshold: the output moves with the depths, it does not jump
    where one crosses INSIDE_M."""
    weight = np.zeros(len(y))
    out = y
    for _ in range(BLEND_TRIES):
        deep = _deep(depth)
        if not deep.any():
            return out, depth
        mark = np.zeros((len(y), 1))
        mark[look, 0] = deep
        weight = np.maximum(weight, np.minimum(1.0, _envelope(mark, half, BLEND_REACH)[:, 0]))
        blend = rate_limit(y + weight[:, None] * (x - y), max_step)
        depth = _again(inside, blend, out, look, depth)
        out = blend
    out = out.copy()
    deep = _deep(depth)
    out[look] += deep[:, None] * (x[look] - out[look])
    return out, np.where(deep > 0.0, np.nan, depth)


def blend_reach(fps: float) -> int:
    """Frames either side of a frame left inside within which the blend (_blended) reads the finished
    answer: each widening's weight reaches (BLEND_REACH + 2) x half frames beyond the frames still inside,
    which are frames the widening before moved (15 frames at 120 fps, 0.125 s; at 30 fps too: half is at
    least a frame). Only where the rate limit carries a blend on beyond its weight may a later widening
    read further (the G1 hop: frames -5 to +9)."""
    return BLEND_TRIES * (BLEND_REACH + 2) * _half(fps)


def _half(fps: float) -> int:
    """BUMP_S in frames, at least one."""
    return max(1, int(round(BUMP_S * fps)))


def _deep(depth: np.ndarray) -> np.ndarray:
    """(len(depth),) 0 at INSIDE_M inside the margin or less, 1 from BLEND_RAMP_M deeper, linear between."""
    return np.clip((depth - INSIDE_M) / BLEND_RAMP_M, 0.0, 1.0)


def _again(inside: Callable, y: np.ndarray, before: np.ndarray, look: np.ndarray, depth: np.ndarray) -> np.ndarray:
    """depth (len(look),) measured again where y moved from `before` by more than rounding (the
    rate limit re-rounds every frame of a stretch at a joint's top speed: most of a clip's frames)."""
    depth = depth.copy()
    moved = np.flatnonzero((np.abs(y[look] - before[look]) > MOVED_RAD).any(axis=1))
    if len(moved):
        depth[moved] = inside(y, look[moved])
    return depth


def _bounded(y: np.ndarray, lower: np.ndarray, upper: np.ndarray, max_step: np.ndarray) -> np.ndarray:
    """y within its room and its joints' speed."""
    return rate_limit(np.clip(y, lower, upper), max_step)


def _envelope(bump: np.ndarray, half: int, reach: int = 2) -> np.ndarray:
    """A smooth change (F, V) like `bump`, each sign's part dilated over reach x half frames, then
    averaged twice over half frames. From reach 2 it is at least bump each way wherever bump is
    (each average of a frame's window holds the frame's own value; 3: all of it for half frames
    either side); reach 1 (the rounds' bumps) falls short of a lone frame's fix, which the next
    round fixes again, and overshoots its neighbours less (G1 hop jerk 2.8 -> 2.4 x the bake's
    without, docs/history/self_collision.md)."""
    out = np.zeros(bump.shape)
    for sign in (1.0, -1.0):
        part = np.maximum(sign * bump, 0.0)
        if not part.any():
            continue
        part = maximum_filter1d(part, 2 * reach * half + 1, axis=0, mode="nearest")
        for _ in range(2):
            part = uniform_filter1d(part, 2 * half + 1, axis=0, mode="nearest")
        out += sign * part
    return out


def steady_gain(y: np.ndarray, better: np.ndarray, fps: float, lower: np.ndarray, upper: np.ndarray,
                max_step: np.ndarray, inside: Callable, depth: np.ndarray | None = None,
                reach: Callable | None = None) -> np.ndarray:
    """y (F, V, clear of the margin) moved toward `better` (F, V: each frame's own better answer)
    by that move low-passed in time, within [lower, upper] and max_step; where that puts frames
    inside the margin, y is blended back in smoothly around them (y itself where that fails).
    depth (F,: metres inside the margin at y, NaN unknown; steady_room's) and reach(change (L, V)) -> (L,)
    (metres a change can bring a pair closer at most): a frame whose depth plus its move's reach is
    within INSIDE_M is not looked at (the same answer: only deeper frames take a blend)."""
    move = better - y
    if len(y) < 8 or not (np.abs(move) > 1e-9).any():
        return y
    out = _bounded(y + butterworth_lowpass(move, fps, STEADY_CUTOFF_HZ), lower, upper, max_step)
    look = np.flatnonzero((np.abs(out - y) > 1e-9).any(axis=1))
    if depth is None or reach is None:
        after = inside(out, look)
    else:
        after = np.zeros(len(look))
        near = np.flatnonzero(~(depth[look] + reach(out[look] - y[look]) <= INSIDE_M))  # NaN: looked at
        after[near] = inside(out, look[near])
    if not (after > INSIDE_M).any():
        return out
    half = _half(fps)  # the blend's last resort moves frames by their depth: it may outrun a joint by a hair
    return rate_limit(_blended(y, out, look, after, half, max_step, inside), max_step)  # (G1 hop: 5e-5 of its speed)
