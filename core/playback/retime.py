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
from .sampling import (TICK_EPS, JointLimits, PlaybackError, _relative_times, joint_samples, tick_count,
                       tick_times)

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
    """Per key interval (durations `spans`): the factor its time must grow by (<= 1: fine)."""
    knots = _knots(spans, period_s)
    at = tick_times(tick_count(knots[-1], period_s), period_s)
    q = joint_samples(knots, np.asarray(q_keys, dtype=float), at, limits.lower, limits.upper)
    need_k = np.zeros(max(len(at) - 1, 0))
    if len(at) >= 2:
        need_k = (np.abs(np.diff(q, axis=0)) / period_s / limits.velocity).max(axis=1)
        if len(at) >= 3:  # acceleration at interior sample k+1 touches intervals k, k+1
            ra = np.sqrt((np.abs(np.diff(q, 2, axis=0)) / period_s ** 2 / limits.acceleration).max(axis=1))
            need_k[:-1] = np.maximum(need_k[:-1], ra)
            need_k[1:] = np.maximum(need_k[1:], ra)
    need = np.zeros(len(knots) - 1)
    last = len(need) - 1
    lo = np.clip(np.searchsorted(knots, at[:-1], side="right") - 1, 0, last)
    hi = np.clip(np.searchsorted(knots, at[1:], side="left") - 1, 0, last)
    hi = np.maximum(hi, lo)
    for offset in range(int((hi - lo).max(initial=0)) + 1):
        np.maximum.at(need, np.minimum(lo + offset, hi), need_k)
    return need


def _ramped(stretch: np.ndarray, ramp: float) -> np.ndarray:
    """Raise stretches so neighbours differ by at most `ramp` (max filter in log space)."""
    log, step = np.log(stretch), math.log(ramp)
    i = np.arange(len(log)) * step
    forward = np.maximum.accumulate(log + i) - i
    backward = np.maximum.accumulate((log - i)[::-1])[::-1] + i
    return np.exp(np.maximum(forward, backward))


# ------------------------------------------------------------- pipeline ---
