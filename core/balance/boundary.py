"""Where a ladder of trials stops standing, found between its rungs: a choice continuous in its input.

The gait picks a step's share (core.balance.reach.check_steps) and a waist height change
(core.balance.stance.fit_waist) as the first of a few rungs that stands. A trial on the edge
between two rungs then jumps a whole rung for an input difference of rounding: the walk cut at
frame 200 onto the G1 took a 45-degree turning step at 0.55 of its length where the coarse-grid
retarget had taken 0.7 (5.5 cm, and every later step planned from it), and the H1 walk rounded to
float32 raised its waist 10 cm where the walk as read raised it 7. Between the rung that failed
and the one that stood, the value is taken where the trials' excess over their tolerances (a
continuous measure, negative where they stand) crosses zero, linearly: on the edge of a rung both
brackets give that rung, so the answer moves with its input. (Bisecting the yes/no test instead
was no better: the quick trial solves' answer is noisy at the edge, 2e-4 m of height from 4e-7 of
input on the H1 walk.)
"""
from __future__ import annotations

import numpy as np


def crossing(failing: np.ndarray, standing: np.ndarray, excess_failing: np.ndarray,
             excess_standing: np.ndarray) -> np.ndarray:
    """Per trial, the value between `failing` (its excess >= 0 where it fails) and `standing` (its
    excess < 0) where the excess crosses zero, linearly; `failing` itself where it stands after all
    (a quick trial solved again)."""
    over = np.clip(excess_failing, 0.0, None)
    under = np.clip(excess_standing, None, 0.0)
    span = over - under
    share = np.divide(over, span, out=np.ones_like(span), where=span > 0.0)
    return failing + share * (standing - failing)
