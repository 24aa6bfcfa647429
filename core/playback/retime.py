"""Retime: stretch only the stretches of a clip that are too fast for the robot.

A robot timing tool must say, for every interval, whether each actuator can
finish its move in it. Rather than slowing the whole clip, each key interval
gets the stretch its fastest joint needs (velocity and acceleration), with
short ramps so the change of speed adds no jerk; the result is checked on
the resampled samples (an interpolant can overshoot) and trimmed back as far
as the checks allow.
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np

from ..motion.bake_csv import BakeTable
from .sampling import (_ROUNDING, TICK_EPS, JointCurves, JointLimits, PlaybackError, _covered, _relative_times,
                       tick_count, tick_times)

def retime(table: BakeTable, limits: JointLimits, period_s: float, *, margin: float = 0.01,
           ramp: float = 1.04, max_rounds: int = 80) -> tuple[BakeTable, int]:
    """New key times that keep every joint inside its velocity and acceleration limits.

    Each round samples the joints at the control cycle on the current key
    times, finds the key intervals whose samples are too fast (velocity
    ratio, or the square root of the acceleration ratio: time stretched by s
    divides velocity by s and acceleration by s²), stretches just those by
    what they need plus `margin`, and lets stretches fade over neighbouring
    intervals by at most `ramp` per interval so the slowing itself does not
    accelerate. Once the sampled motion passes, the stretches are trimmed
    back as far as the checks allow. Returns the retimed keys and the rounds
    used; PlaybackError if it cannot converge.
    """
    times = _relative_times(table)
    if len(times) < 2:
        return dataclasses.replace(table, time=times), 0
    spans = np.diff(times)
    stretch = np.ones_like(spans)
    for rounds in range(1, max_rounds + 1):
        need = _needed_stretch(table.q, spans * stretch, limits, period_s)
        if need.max(initial=0.0) <= 1.0:
            stretch = _trimmed(table.q, spans, stretch, limits, period_s)
            return dataclasses.replace(table, time=_knots(spans * stretch, period_s)), rounds
        stretch = _ramped(np.where(need > 1.0, stretch * need * (1.0 + margin), stretch), ramp)
    raise PlaybackError(f"retime did not bring the motion within limits in {max_rounds} rounds "
                        "(check the velocity and acceleration limits)")


def _trimmed(q_keys, spans, stretch, limits, period_s, steps: int = 5) -> np.ndarray:
    """Scale the extra time (stretch - 1) down as far as the limits still hold (bisection)."""
    low, high = 0.0, 1.0
    for _ in range(steps):
        mid = 0.5 * (low + high)
        if _needed_stretch(q_keys, spans * (1.0 + mid * (stretch - 1.0)), limits, period_s).max(initial=0) <= 1:
            high = mid
        else:
            low = mid
    return 1.0 + high * (stretch - 1.0)


def _knots(spans: np.ndarray, period_s: float) -> np.ndarray:
    """Key times from interval durations, the last one moved up onto a whole tick so the
    retimed motion still ends on its last key."""
    knots = np.concatenate([[0.0], np.cumsum(spans)])
    knots[-1] = tick_count(knots[-1] - 2 * TICK_EPS * period_s, period_s) * period_s  # ceil, in ticks
    return knots


def _needed_stretch(q_keys, spans, limits: JointLimits, period_s: float) -> np.ndarray:
    """Per key interval (durations `spans`): the factor its time must grow by, exact wherever it
    is above 1 (the only values that act: a stretch or a failed check); elsewhere at most 1."""
    knots = _knots(spans, period_s)
    at = tick_times(tick_count(knots[-1], period_s), period_s)
    curves = JointCurves(knots, np.asarray(q_keys, dtype=float), at, limits.lower, limits.upper)
    rows = _fast_rows(curves, limits, period_s)
    need_k = _sample_needs(rows, curves.samples(rows), limits, period_s, len(at))
    over = np.flatnonzero(need_k > 1.0)  # control intervals that act, onto the key intervals they span
    need = np.zeros(len(knots) - 1)
    last = len(need) - 1
    lo = np.clip(np.searchsorted(knots, at[over], side="right") - 1, 0, last)
    hi = np.clip(np.searchsorted(knots, at[over + 1], side="left") - 1, 0, last)
    hi = np.maximum(hi, lo)
    for offset in range(int((hi - lo).max(initial=0)) + 1):
        np.maximum.at(need, np.minimum(lo + offset, hi), need_k[over])
    return need


def _fast_rows(curves: JointCurves, limits: JointLimits, period_s: float) -> np.ndarray:
    """The samples whose differences may break a velocity or acceleration limit (sorted).

    A velocity difference is the mean of q' over its control interval, an
    acceleration difference a weighted mean of q'' over two, so neither beats
    the bound of the segments it spans, give or take rounding and the clip to
    the position limits (at most 1e-12 once the curves are settled), which the
    slack covers. So only the samples near segments whose bound nears a limit
    need computing.
    """
    count = len(curves.at)
    if not curves.settled:
        return np.arange(count)
    vel, acc, size = _rate_bounds(curves)
    noise = 1e-12 + _ROUNDING * size  # how far a sample may be off its exact value
    h, tight = np.diff(curves.times).min(), 1.0 - 1e-9
    slow_v = limits.velocity * tight - noise * (8.0 / h + 4.0 / period_s)
    slow_a = (limits.acceleration * tight - noise * (48.0 / h ** 2 + 8.0 / period_s ** 2)
              - _ROUNDING * vel.max(initial=0.0) / period_s)
    fast = vel >= slow_v
    fast |= acc >= slow_a
    seg = np.concatenate([[0, len(fast) - 1], np.flatnonzero(fast) // fast.shape[1]])  # few: no any(axis)
    first = np.searchsorted(curves.at, curves.times[seg], side="right") - 3  # the differences over
    last = np.searchsorted(curves.at, curves.times[seg + 1], side="left") + 3  # the segment, and a margin
    return _covered(first, last, count)


def _rate_bounds(curves: JointCurves) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per segment and joint: bounds of |q'| (hull of its Bézier points) and of |q''| (at the
    ends: it is linear); and a bound of the control points' size. In place where possible:
    the arrays are large and fresh memory is slow."""
    keys, dx = curves.keys, np.diff(curves.times)
    d0, d2 = curves.controls()  # P1, P2, turned into P1 - P0 and P3 - P2
    d1 = d2 - d0
    np.subtract(d0, keys[:-1], out=d0)
    np.subtract(keys[1:], d2, out=d2)
    acc, a1 = d1 - d0, d2 - d1  # q'' at either end, times dx^2 / 6
    vel = np.maximum(np.abs(d0, out=d0), np.abs(d1, out=d1), out=d0)  # hull of q', times dx / 3
    np.maximum(vel, np.abs(d2, out=d2), out=vel)
    np.maximum(np.abs(acc, out=acc), np.abs(a1, out=a1), out=acc)
    size = max(keys.max(initial=0.0), -keys.min(initial=0.0)) + vel.max(initial=0.0)
    vel *= (3.0 / dx)[:, None]
    acc *= (6.0 / dx ** 2)[:, None]
    return vel, acc, size


def _sample_needs(rows: np.ndarray, q: np.ndarray, limits: JointLimits, period_s: float,
                  count: int) -> np.ndarray:
    """Per control interval (of `count` samples): the stretch its samples need (velocity ratio,
    or the square root of the acceleration ratio at either end), from the samples q at sorted
    `rows`, where those are consecutive; 0 elsewhere."""
    need_k = np.zeros(max(count - 1, 0))
    step = np.diff(q, axis=0)
    accel = np.diff(step, axis=0)  # == np.diff(q, 2, axis=0), bit for bit
    pair = np.diff(rows) == 1  # (differences across a gap are computed, then dropped)
    need_k[rows[:-1][pair]] = _worst_ratio(step, period_s, limits.velocity)[pair]
    triple = rows[2:] - rows[:-2] == 2
    if triple.any():  # acceleration at sample c touches intervals c - 1 and c
        ra = np.sqrt(_worst_ratio(accel, period_s ** 2, limits.acceleration)[triple])
        center = rows[1:-1][triple]
        np.maximum.at(need_k, center - 1, ra)
        np.maximum.at(need_k, center, ra)
    return need_k


def _worst_ratio(delta: np.ndarray, scale: float, limit: np.ndarray) -> np.ndarray:
    """max over joints of |delta| / scale / limit, overwriting `delta`."""
    np.abs(delta, out=delta)
    delta /= scale
    delta /= limit
    return delta.max(axis=1)


def _ramped(stretch: np.ndarray, ramp: float) -> np.ndarray:
    """Raise stretches so neighbours differ by at most `ramp` (max filter in log space)."""
    log, step = np.log(stretch), math.log(ramp)
    i = np.arange(len(log)) * step
    forward = np.maximum.accumulate(log + i) - i
    backward = np.maximum.accumulate((log - i)[::-1])[::-1] + i
    return np.exp(np.maximum(forward, backward))


# ------------------------------------------------------------- pipeline ---
