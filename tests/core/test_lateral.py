"""The CoM path planned inside what the legs carry (core.balance.lateral): its cart-table ZMP stays
inside each sample's support shrunk by the margin, its CoM across inside its band, and where the
two cannot both hold the plan says by how much."""
from __future__ import annotations

import numpy as np

from core.balance.inertia import GRAVITY
from core.balance import lateral
from core.balance.lateral import band_constraints, plan_path, support_constraints, zmp_operator

PERIOD_S, HEIGHT_M = 0.01, 0.7


def _square(centre_y: float, half_m: float = 0.05) -> np.ndarray:
    """A sole from above, counter-clockwise (4, 2)."""
    return np.array([[-half_m, centre_y - half_m], [half_m, centre_y - half_m], [half_m, centre_y + half_m],
                     [-half_m, centre_y + half_m]])


def _steps(n: int = 300):
    """Weight shifts between two soles 0.2 m apart, 0.6 s on each; the target ZMP jumps between
    their centres and, half of the time, points 8 cm outside the sole it stands on."""
    side = np.where((np.arange(n) // 60) % 2 == 0, 0.1, -0.1)
    polygons = [_square(y) for y in side]
    target = np.column_stack([np.zeros(n), side * 1.8])
    return target, polygons, side


def test_zmp_stays_inside_the_shrunk_support_and_the_path_is_still_at_both_ends():
    target, polygons, side = _steps()
    op = zmp_operator(len(target), PERIOD_S, HEIGHT_M)
    planned = plan_path(target, PERIOD_S, HEIGHT_M, 1e-6, [support_constraints(polygons, op, 0.012)])
    assert planned.violation_m < 1e-6 and planned.missed == 0
    inner = np.abs(planned.zmp[:, 1] - side)  # distance from the sole's centre across
    assert inner.max() <= 0.05 - 0.012 + 1e-6 and np.abs(planned.zmp[:, 0]).max() <= 0.038 + 1e-6
    # the ZMP is the cart-table's of the path (p = c - h/g c'')
    c = planned.com[:, 1]
    assert np.allclose(planned.zmp[1:-1, 1], c[1:-1] - HEIGHT_M / GRAVITY * np.diff(c, 2) / PERIOD_S ** 2)
    assert np.allclose(c[:3], c[0]) and np.allclose(c[-3:], c[-1])
    # it goes as near the target as the support lets it: at the sole's edge where the target is outside
    assert np.median(inner) > 0.03


def test_com_across_stays_in_its_band_and_an_impossible_band_is_measured():
    target, polygons, side = _steps()
    n = len(target)
    op = zmp_operator(n, PERIOD_S, HEIGHT_M)
    across = np.tile([0.0, 1.0], (n, 1))
    lo, hi = np.full(n, -0.08), np.full(n, 0.08)  # standing still the CoM is over the ZMP: 62 mm at least
    planned = plan_path(target, PERIOD_S, HEIGHT_M, 1e-6, [support_constraints(polygons, op, 0.012),
                                                           band_constraints(across, lo, hi)])
    assert planned.violation_m < 1e-6
    assert np.abs(planned.com[:, 1]).max() <= 0.08 + 1e-6
    # the CoM held 27 mm from the middle: on the far sole the ZMP cannot stay 0.6 s (the cart falls)
    tight = plan_path(target, PERIOD_S, HEIGHT_M, 1e-6, [support_constraints(polygons, op, 0.012),
                                                         band_constraints(across, lo / 3, hi / 3)])
    assert tight.violation_m > 0.005 and tight.missed > 0


def _narrow_steps(n: int = 340, half_across_m: float = 0.012):
    """Walking in place on soles 10 cm long and 2 * half_across_m wide (the H1's are 30 mm wide), 0.1 m
    either side: 0.6 s on each, 0.2 s of double support between (the hull of both soles), starting and
    ending in one; the target ZMP at the standing sole's centre, ramping across the double support.
    (polygons, target, the standing sole's centre across or NaN in double support)."""
    phase = (np.arange(n) + 60) % 160
    side = np.where(phase < 80, 0.1, -0.1)
    double = (phase % 80) >= 60
    sole = lambda y: np.array([[-0.05, y - half_across_m], [0.05, y - half_across_m],  # noqa: E731
                               [0.05, y + half_across_m], [-0.05, y + half_across_m]])
    both = np.array([[-0.05, -0.1 - half_across_m], [0.05, -0.1 - half_across_m], [0.05, 0.1 + half_across_m],
                     [-0.05, 0.1 + half_across_m]])
    polygons = [both if d else sole(y) for d, y in zip(double, side)]
    ramp = np.clip(((phase % 80) - 60) / 20.0, 0.0, 1.0)
    target = np.column_stack([np.zeros(n), side * (1.0 - 2.0 * ramp)])
    return polygons, target, np.where(double, np.nan, side)


def test_a_sole_as_narrow_as_twice_the_margin_keeps_a_share_of_its_width():
    """Shrunk by a 12 mm margin, a 24 mm sole is a line; with width_share 0.9 it is shrunk by 0.9 of
    its half-width instead (a 2.4 mm strip), and the plan moves with its soles as they move: soles
    moved by 1e-7 m (rounding) move the path by less than 1e-5 m (the H1 walk's plan, its 30 mm
    soles shrunk by 15 mm, moved 1.6 mm from a float32 start; on these soles without width_share
    HiGHS returned no path at all, status "Not Set", 2026-12-02)."""
    polygons, target, side = _narrow_steps()
    op = zmp_operator(len(target), PERIOD_S, HEIGHT_M)
    single = np.isfinite(side)
    rng = np.random.default_rng(3)
    moved = [poly + rng.normal(0.0, 1e-7, poly.shape) for poly in polygons]
    plans = [plan_path(target, PERIOD_S, HEIGHT_M, 1e-3, [support_constraints(p, op, 0.012, width_share=0.9)],
                       order=4, excess_weight=1e4) for p in (polygons, moved)]
    for planned in plans:
        assert planned.violation_m < 1e-6 and planned.missed == 0
        assert np.abs(planned.zmp[single, 1] - side[single]).max() <= 0.0012 + 1e-6  # inside the 2.4 mm strip
        assert np.abs(planned.zmp[:, 0]).max() <= 0.05 - 0.0108 + 1e-6
    assert np.abs(plans[0].com - plans[1].com).max() < 1e-5


def test_rows_added_as_they_bind_give_the_whole_programmes_path(monkeypatch):
    """plan_path adds its constraint rows as the path reaches them (lateral._solve_cutting, HiGHS
    going on from its basis): the same path and excess as with every row at once, where the rows
    bind (the target outside the soles, a band the CoM cannot keep)."""
    monkeypatch.setattr(lateral, "SOLVER", "highs")
    target, polygons, side = _steps()
    n = len(target)
    op = zmp_operator(n, PERIOD_S, HEIGHT_M)
    across = np.tile([0.0, 1.0], (n, 1))
    for lo, hi in ((np.full(n, -0.08), np.full(n, 0.08)), (np.full(n, -0.027), np.full(n, 0.027))):
        constraints = [support_constraints(polygons, op, 0.012), band_constraints(across, lo, hi)]
        cut = plan_path(target, PERIOD_S, HEIGHT_M, 1e-3, constraints, order=4, excess_weight=1e4)
        with monkeypatch.context() as patch:
            patch.setattr(lateral, "_solve_cutting", lambda *args: None)
            whole = plan_path(target, PERIOD_S, HEIGHT_M, 1e-3, constraints, order=4, excess_weight=1e4)
        assert np.abs(cut.com - whole.com).max() < 1e-6
        assert abs(cut.violation_m - whole.violation_m) < 1e-6 and cut.missed == whole.missed


def test_the_first_solve_starts_from_its_blocks_optimum(monkeypatch):
    """Without its constraint rows the programme falls apart into the path across x and along y
    (lateral._block_basis): the two halves' optimal bases together are optimal for the whole, HiGHS
    takes no iteration from them, and the planned path is the one a cold start gives."""
    from scipy.optimize._highspy import _core as highs
    monkeypatch.setattr(lateral, "SOLVER", "highs")
    target, polygons, side = _steps()
    op = zmp_operator(len(target), PERIOD_S, HEIGHT_M)
    constraints = [support_constraints(polygons, op, 0.012)]
    captured = []
    solve = lateral._solve_cutting
    monkeypatch.setattr(lateral, "_solve_cutting", lambda *args: captured.append(args) or solve(*args))
    warm = plan_path(target, PERIOD_S, HEIGHT_M, 1e-3, constraints, order=4, excess_weight=1e4)
    cost, equal, equal_bound, nz = captured[0][:4]
    free = np.arange(equal.shape[1]) < nz
    start = lateral._block_basis(highs, cost, equal, equal_bound, free)
    assert start is not None
    cold, blocks = (lateral._equalities(highs, cost, equal, equal_bound, free) for _ in range(2))
    blocks.setBasis(start)
    cold.run()
    blocks.run()
    assert blocks.getInfo().simplex_iteration_count == 0 < cold.getInfo().simplex_iteration_count
    assert np.isclose(blocks.getInfo().objective_function_value, cold.getInfo().objective_function_value,
                      rtol=1e-12, atol=0.0)
    monkeypatch.setattr(lateral, "_block_basis", lambda *args: None)
    again = plan_path(target, PERIOD_S, HEIGHT_M, 1e-3, constraints, order=4, excess_weight=1e4)
    assert np.abs(warm.com - again.com).max() < 1e-9


def test_samples_sharing_a_polygon_get_the_rows_of_each_its_own():
    """support_constraints shrinks a polygon the samples share once: the rows and bounds are those of every
    sample given its own copy (a narrow sole too, whose shrink follows its width)."""
    target, polygons, side = _steps(120)
    narrow = np.array([[-0.05, -0.012], [0.05, -0.012], [0.05, 0.012], [-0.05, 0.012]])
    shared = [narrow if k % 3 == 0 else p for k, p in enumerate(polygons)]
    op = zmp_operator(len(target), PERIOD_S, HEIGHT_M)
    for width_share in (None, 0.9):
        once = support_constraints(shared, op, 0.012, width_share)
        each = support_constraints([p.copy() for p in shared], op, 0.012, width_share)
        assert len(once.bound) == 4 * len(shared) and once.bound.tobytes() == each.bound.tobytes()
        assert (once.rows != each.rows).nnz == 0 and once.rows.data.tobytes() == each.rows.data.tobytes()
