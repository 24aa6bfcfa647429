"""The target moved inward where the multibody ZMP is short of its margin (core.balance.margin)."""
from __future__ import annotations

import numpy as np

from core.balance import margin as margin_module
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


class _Waist:
    """What toward_margin reads and leaves on a corrector (the upright waist: no family)."""

    period = PERIOD_S
    command = None
    root_rot = None
    family = None


def _rounds_run(monkeypatch, worst_mm: list[float]) -> int:
    """How many rounds of passes toward_margin runs when its measurements' worst margins are worst_mm in turn."""
    return len(_passes_run(monkeypatch, worst_mm)[0])


def test_the_rounds_stop_once_the_margin_is_enough_and_not_before(monkeypatch):
    """The H1 10 s clip's rounds (+5.48, +10.27, +10.85 mm: the third round's passes were measured and never
    kept) stop after two; the H1 scaled 0.9's (+6.50, +8.06, +9.75, +10.62) run all three; without the
    stop every round runs."""
    enough = 1000 * margin_module.MARGIN_ENOUGH_M
    assert 10.0 < enough < 10.85
    assert _rounds_run(monkeypatch, [5.48, 10.27, 10.85, 10.52]) == 2
    assert _rounds_run(monkeypatch, [6.50, 8.06, 9.75, 10.62]) == margin_module.MARGIN_ROUNDS
    assert _rounds_run(monkeypatch, [enough + 1.0]) == 0
    monkeypatch.setattr(margin_module, "MARGIN_ENOUGH_M", None)
    assert _rounds_run(monkeypatch, [5.48, 10.27, 10.85, 10.52]) == margin_module.MARGIN_ROUNDS


def _passes_run(monkeypatch, worst_mm: list[float]) -> tuple[list[tuple[int, float]], int]:
    """toward_margin with its measurements' worst margins worst_mm in turn: each pass run's start (0: the
    given legs, k: what the k-th run returned) and its target at the short sample, and the state it keeps."""
    n = 40
    measured = iter(worst_mm)
    runs = []

    def margins(corrector, q, root_pos, paths, zmp):
        margin = np.full(n, 0.03)
        margin[n // 2] = next(measured) / 1000.0
        return margin, np.tile([0.0, 1.0], (n, 1))

    def refine(corrector, q, root_pos, xy, com_path, target, com_height, passes, **kwargs):
        runs.append((int(q[0, 0]), float(target[n // 2, 1])))
        return np.full((n, 3), float(len(runs))), root_pos, com_path, np.zeros((n, 2)), np.zeros((n, 3))

    monkeypatch.setattr(margin_module, "margins", margins)
    monkeypatch.setattr(margin_module, "refine", refine)
    zeros = np.zeros((n, 2))
    kept = margin_module.toward_margin(_Waist(), np.zeros((n, 3)), np.zeros((n, 3)), zeros, zeros, 0.7, {}, zeros,
                                       np.zeros((n, 3)))
    return runs, int(kept[0][0, 0])


def test_a_gait_short_of_10_mm_after_its_rounds_retries_from_its_best_round_with_half_the_push(monkeypatch):
    """The H1 scaled 0.9 with the planted root's sign mended: its rounds end short (the third +9.01 mm,
    the second +9.75 the best), a whole push more from the last round overshoots; the retries start from
    the best round, half its shortfall then a quarter, and keep the first that is enough."""
    runs, kept = _passes_run(monkeypatch, [6.50, 8.06, 9.75, 9.01, 8.55, 10.81])
    assert len(runs) == margin_module.MARGIN_ROUNDS + 2
    assert [start for start, _ in runs[3:]] == [2, 2]
    best_aim = runs[1][1]  # the target the best (second) round's passes followed
    half, quarter = runs[3][1] - best_aim, runs[4][1] - best_aim
    assert half > 0 and np.isclose(quarter, half / 2)
    assert kept == 5


def test_the_retries_stop_after_misses_and_a_gait_at_10_mm_does_not_retry(monkeypatch):
    runs, kept = _passes_run(monkeypatch, [6.50, 8.06, 9.75, 9.01] + [8.0] * 10)
    assert len(runs) == margin_module.MARGIN_ROUNDS + margin_module.MARGIN_PATIENCE and kept == 2
    runs, kept = _passes_run(monkeypatch, [6.50, 8.06, 9.75, 10.2])
    assert len(runs) == margin_module.MARGIN_ROUNDS and kept == 3
