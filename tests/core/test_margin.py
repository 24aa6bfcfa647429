"""The target moved inward where the multibody ZMP is short of its margin (core.balance.margin)."""
from __future__ import annotations

import numpy as np

from core.balance.margin import MARGIN_GOAL_M, MARGIN_SPREAD_S, inward_target

PERIOD_S = 0.005


def test_the_target_moves_inward_by_what_the_short_cycles_lack_and_nowhere_else():
    """Three cycles 6, 4 and 8 mm inside a sole whose inward normal is +y: the target moves along +y by
    at least what each lacks of the goal, eased in and out, and stays put away from them."""
    n = 200
    target = np.column_stack([np.linspace(0.0, 0.3, n), np.full(n, 0.1)])
    margin = np.full(n, 0.02)
    margin[100:103] = [0.006, 0.004, 0.008]
    grad = np.tile([0.0, 1.0], (n, 1))
    moved = inward_target(target, margin, grad, PERIOD_S)
    shift = moved - target
    assert np.allclose(shift[:, 0], 0.0)
    short = MARGIN_GOAL_M - margin[100:103]
    assert (shift[100:103, 1] >= short - 1e-12).all()
    assert shift[:, 1].max() <= short.max() + 1e-12
    assert (shift[:, 1] >= 0.0).all()
    reach = 3 * int(round(MARGIN_SPREAD_S / PERIOD_S))
    assert np.allclose(shift[:100 - reach], 0.0) and np.allclose(shift[103 + reach:], 0.0)
    assert np.abs(np.diff(shift[:, 1])).max() < 0.5 * short.max()  # eased, not a jump


def test_a_target_with_its_margin_is_left_as_it_is():
    target = np.random.default_rng(3).normal(size=(50, 2))
    margin = np.full(50, MARGIN_GOAL_M + 1e-3)
    margin[10] = -np.inf  # no support there: nothing to move toward
    assert inward_target(target, margin, np.zeros((50, 2)), PERIOD_S) is target
