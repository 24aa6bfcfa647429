"""The lateral plan's programme by the banded interior point (core.balance.banded_lp, plan_path's default)
against HiGHS (its fallback) and the optimality (KKT) conditions, on the H1 walk's own programme (its gait's
plan_path call, kept)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy import sparse

from core.balance import banded_lp, gait, lateral
from core.balance.lateral import band_constraints, plan_path, support_constraints, zmp_operator
from core.motion.bvh import load_bvh
from tests.core import test_lateral as planned
from tests.core.test_gait import WALK, _gait
from tests.core.test_lateral import HEIGHT_M, PERIOD_S, _steps


@pytest.fixture(scope="module")
def walk_programme():
    """plan_path's arguments in the H1 walk's gait (positional, keyword)."""
    kept = []
    real = gait.plan_path
    gait.plan_path = lambda *args, **kwargs: kept.append((args, kwargs)) or real(*args, **kwargs)
    try:
        _gait(load_bvh(WALK).to_source_motion(), "h1")
    finally:
        gait.plan_path = real
    return kept[0]


def _interior(args, kwargs):
    """The programme as banded_lp takes it, and its minimiser."""
    target, period, heights, weight, constraints = args
    n = len(target)
    op = zmp_operator(n, period, heights)
    jerk = weight * lateral.differences(n, kwargs["order"]) / period ** kwargs["order"]
    rows = sparse.vstack([c.rows for c in constraints]).tocsr()
    bound = np.concatenate([c.bound for c in constraints])
    g, h, lo, hi, interleave = lateral.interior_programme(target, op, jerk, rows, bound, kwargs["excess_weight"])
    return g, h, lo, hi, interleave, banded_lp.minimise(g, h, lo, hi)


def test_the_newton_matrix_is_banded_and_assembled_as_the_normal_matrix():
    """x and y interleaved per sample, every row of the programme (ZMP, snap, support) reaches at most 8
    unknowns on: band_assembly's product is the lower band of g^T diag(theta) g, the rest of it zero."""
    target, polygons, _ = _steps(120)
    n = len(target)
    op = zmp_operator(n, PERIOD_S, HEIGHT_M)
    support = support_constraints(polygons, op, 0.012)
    jerk = 1e-3 * lateral.differences(n, 4) / PERIOD_S ** 4
    g = lateral.interior_programme(target, op, jerk, support.rows, support.bound, 1e4)[0]
    band, u = banded_lp.band_assembly(g)
    assert u == 8
    theta = np.random.default_rng(1).uniform(0.1, 10.0, g.shape[0])
    full = (g.T @ sparse.diags(theta) @ g).toarray()
    lower = (band @ theta).reshape(u + 1, g.shape[1])
    for k in range(u + 1):
        assert np.allclose(lower[k, :g.shape[1] - k], np.diag(full, -k), rtol=1e-12, atol=0.0)
    assert not np.any(np.tril(full, -(u + 1)))


def test_the_walks_programme_meets_its_optimality_conditions(walk_programme):
    """The interior point's path and multipliers on the H1 walk's programme: every multiplier in its box,
    g^T u = 0, each row off its kink priced at its slope (r > 0: the excess or absolute value's upper
    weight; r < 0: the lower), and the path's cost equal to the dual's (-h.u): the optimum."""
    g, h, lo, hi, _, out = _interior(*walk_programme)
    r = (g @ out.y - h) / np.sqrt(g.multiply(g).sum(axis=1)).A1  # metres along each row's unit normal
    u = out.u
    assert np.all(u >= lo) and np.all(u <= hi)
    scale = np.abs(g.T).multiply(np.abs(u)).sum(axis=1).A1.max()  # the products' size, against which g^T u is 0
    # 5e-10-4e-8 over processes on session 22's first walk programme, 1.6e-7 on the walk since the planted root's
    # sign mend: within 1e-6 (the programme's last bits vary from process to process, and the stop with them)
    assert np.abs(g.T @ u).max() < 1e-6 * scale
    share = (u - lo) / (hi - lo)  # where in its box
    off = 1e-8  # metres: a row nearer its kink is on it to the solve's accuracy (one row at 3.9e-9 m since the mend)
    assert np.all(share[r > off] > 1 - 1e-5) and np.all(share[r < -off] < 1e-5)
    dual = -h @ u + (g.T @ u) @ out.y
    assert 0.0 <= out.objective - dual < 1e-8 * out.objective


def test_the_walks_path_is_highs_path(walk_programme, monkeypatch):
    """On the H1 walk's programme the interior point plans HiGHS's path, at no higher cost, and what the plan
    reports (violation, misses) is the same. The optimum is flat along the path: in its last bits the programme
    differs from process to process and from change to change (1e-13 m of heights, 6e-11 m of bounds), and the
    interior point's last iterations with it. Session 22: 1.5e-8 to 5e-7 m from HiGHS's vertex; since the planted
    root's sign mend 6.5e-6 m, its ZMP 1.2e-4 m; since the preview loop's recursion became a LAPACK solve (session
    32, the same filter within 1e-14) 4.2e-5 m, ZMP 4.6e-4 m, at a cost 8e-9 below HiGHS's (153.6715354 against
    153.6715366) and the two paths' midpoint between them: both optimal to the solvers' tolerance. So: within
    1e-4 m of path (a tenth of a millimetre) and 1e-3 m of ZMP, the cost no higher."""
    args, kwargs = walk_programme
    monkeypatch.setattr(lateral, "SOLVER", "highs")
    highs = plan_path(*args, **kwargs)
    monkeypatch.setattr(lateral, "SOLVER", "interior")
    interior = plan_path(*args, **kwargs)
    assert np.abs(interior.com - highs.com).max() < 1e-4
    assert np.abs(interior.zmp - highs.zmp).max() < 1e-3
    assert abs(interior.violation_m - highs.violation_m) < 1e-9 and interior.missed == highs.missed
    g, h, lo, hi, interleave, out = _interior(*walk_programme)
    cost = lambda com: float(np.sum(np.maximum(lo * (g @ com - h), hi * (g @ com - h))))  # noqa: E731
    held = highs.com[2:-2].ravel()  # the unknowns interleaved: x and y of samples 2..n-3
    assert np.abs(interleave @ held - highs.com.T.ravel()).max() < 1e-9
    assert out.objective <= cost(held) + 1e-9 * cost(held)


@pytest.mark.parametrize("solver", ["interior", "highs"])
@pytest.mark.parametrize("check", [planned.test_zmp_stays_inside_the_shrunk_support_and_the_path_is_still_at_both_ends,
                                   planned.test_com_across_stays_in_its_band_and_an_impossible_band_is_measured,
                                   planned.test_a_sole_as_narrow_as_twice_the_margin_keeps_a_share_of_its_width])
def test_the_plans_hold_by_either_solver(check, solver, monkeypatch):
    """test_lateral's plans (the support, the band, one it cannot keep, soles shrunk to a strip moved by
    1e-7 m) by the interior point itself (no plan fell back to HiGHS) and by HiGHS alone (the fallback's
    plans, and SOLVER = "highs")."""
    monkeypatch.setattr(lateral, "SOLVER", solver)
    before = lateral.fallbacks
    check()
    assert lateral.fallbacks == before


def test_the_interior_point_says_why_it_stopped(walk_programme):
    """On the H1 walk's programme the interior point closes its gap (converged: its best iterate's within
    ACCEPT_GAP); capped at one iteration, or on a programme with a non-finite entry, or with an unknown no
    row weighs (its Newton matrix singular), it says it did not, so plan_path does not take its path."""
    g, h, lo, hi, _, out = _interior(*walk_programme)
    assert out.converged and out.stop == "gap" and out.gap < banded_lp.ACCEPT_GAP
    capped = banded_lp.minimise(g, h, lo, hi, max_iter=1)
    assert not capped.converged and capped.stop == "iterations" and capped.gap > 1e-3
    broken = h.copy()
    broken[len(h) // 2] = np.nan
    assert banded_lp.minimise(g, broken, lo, hi).stop == "non-finite"
    assert not banded_lp.minimise(g, broken, lo, hi).converged
    unweighed = sparse.hstack([g, sparse.csr_matrix((g.shape[0], 1))]).tocsr()  # an unknown no row touches
    alone = banded_lp.minimise(unweighed, h, lo, hi)
    assert not alone.converged and alone.stop == "singular"


def test_a_stop_short_of_the_gap_counts_only_near_the_optimum():
    """A stall or a Newton matrix that cannot be factored ends the walk's solves near the optimum (relative gap
    about 1e-9, session 22): within ACCEPT_GAP that is the optimum, further it is not; the cap never is."""
    y = np.zeros(1)
    near, far = 0.1 * banded_lp.ACCEPT_GAP, 10.0 * banded_lp.ACCEPT_GAP
    for stop in ("stall", "singular"):
        assert banded_lp.Minimised(y, y, 0.0, 40, stop, near).converged
        assert not banded_lp.Minimised(y, y, 0.0, 40, stop, far).converged
    assert not banded_lp.Minimised(y, y, 0.0, 80, "iterations", near).converged
    assert not banded_lp.Minimised(y, y, 0.0, 40, "non-finite", near).converged


def test_an_interior_point_that_does_not_converge_falls_back_to_highs(walk_programme, monkeypatch):
    """plan_path on the H1 walk's programme with the interior point capped at one iteration plans
    HiGHS's path to the bit, and counts the fallback; uncapped (the default) it plans its own path and
    counts none."""
    args, kwargs = walk_programme
    monkeypatch.setattr(lateral, "SOLVER", "highs")
    highs = plan_path(*args, **kwargs)
    monkeypatch.setattr(lateral, "SOLVER", "interior")
    before = lateral.fallbacks
    own = plan_path(*args, **kwargs)
    assert lateral.fallbacks == before and not np.array_equal(own.com, highs.com)
    monkeypatch.setattr(lateral, "INTERIOR_MAX_ITER", 1)
    fallen = plan_path(*args, **kwargs)
    assert lateral.fallbacks == before + 1
    assert np.array_equal(fallen.com, highs.com) and np.array_equal(fallen.zmp, highs.zmp)
    assert fallen.violation_m == highs.violation_m and fallen.missed == highs.missed


def test_a_band_it_cannot_keep_is_missed_as_highs_misses_it(monkeypatch):
    """Where the constraints cannot all hold (the CoM held 27 mm from the middle), the interior point's
    plan misses the same rows by the same amount as HiGHS's, at the same cost."""
    target, polygons, _ = _steps()
    n = len(target)
    op = zmp_operator(n, PERIOD_S, HEIGHT_M)
    across = np.tile([0.0, 1.0], (n, 1))
    constraints = [support_constraints(polygons, op, 0.012), band_constraints(across, np.full(n, -0.027),
                                                                              np.full(n, 0.027))]
    plans = {}
    for solver in ("highs", "interior"):
        monkeypatch.setattr(lateral, "SOLVER", solver)
        plans[solver] = plan_path(target, PERIOD_S, HEIGHT_M, 1e-3, constraints, order=4, excess_weight=1e4)
    assert plans["highs"].missed > 0
    assert plans["interior"].missed == plans["highs"].missed
    assert abs(plans["interior"].violation_m - plans["highs"].violation_m) < 1e-7
    assert np.abs(plans["interior"].com - plans["highs"].com).max() < 1e-6


STALLED = Path(__file__).resolve().parents[1] / "data" / "programmes" / "h1_walk_lateral_stall.npz"


def _recorded(path: Path) -> tuple:
    """plan_path's programme as recorded in a gait (_solve_interior's arguments, the matrices as CSR parts)."""
    d = np.load(path)
    n = len(d["target"])
    csr = lambda k, width: sparse.csr_matrix((d[k + "_data"], d[k + "_indices"], d[k + "_indptr"]),  # noqa: E731
                                             shape=(len(d[k + "_indptr"]) - 1, width))
    return d["target"], csr("op", n), csr("jerk", n), csr("rows", 2 * n), d["bound"], float(d["excess_weight"])


def test_a_flat_objective_whose_gap_still_closes_is_not_a_stall():
    """The H1 walk's programme on another draw (session 24: s24-legiters' leg stop, the read start, recorded):
    its steps collapse for two rounds where round-off spoils the Newton direction (weights 1e-11..3e14 apart),
    then the gap closes while the objective stays 4e-8 above its best. Counted as a stall (no better objective
    in STALL_ROUNDS) it stopped 1.2e-7 short and HiGHS planned it; the gap closing is progress, so it converges,
    its best iterate an optimum by its own dual (g^T u 1e-7 of its products, the cost within 3e-8 of the dual's;
    the walk's own: under 1e-6 and 1e-8) and no costlier than HiGHS's path within that tolerance (7e-8 cheaper;
    a flat optimum: 3.5e-6 m apart, as the walk's own lands 6.5e-6 m from it; on a machine whose BLAS fuses
    multiply-adds 2.8e-8 costlier and 1.7e-5 m apart)."""
    target, op, jerk, rows, bound, weight = _recorded(STALLED)
    g, h, lo, hi, interleave = lateral.interior_programme(target, op, jerk, rows, bound, weight)
    out = banded_lp.minimise(g, h, lo, hi, max_iter=lateral.INTERIOR_MAX_ITER)
    assert out.converged and out.stop == "gap"
    scale = np.abs(g.T).multiply(np.abs(out.u)).sum(axis=1).A1.max()
    assert np.abs(g.T @ out.u).max() < 1e-6 * scale
    dual = -h @ out.u + (g.T @ out.u) @ out.y
    assert 0.0 <= out.objective - dual < 1e-7 * out.objective
    before = lateral.fallbacks
    z = lateral._solve_interior(target, op, jerk, rows, bound, weight)
    assert z is not None and lateral.fallbacks == before
    highs, _ = lateral._solve_highs(target, op, jerk, rows, bound, weight)
    # a flat optimum: its points spread with the rounding (3.5e-6 m apart where OpenBLAS runs its Haswell kernels,
    # 1.7e-5 m under its AVX-512 ones, which fuse multiply-adds); the cost below is what must hold
    assert np.abs(z - highs).max() < 5e-5
    held = highs.reshape(2, -1)[:, 2:-2].T.ravel()  # the unknowns interleaved: x and y of samples 2..n-3
    assert np.abs(interleave @ held - highs).max() < 1e-9
    r = g @ held - h
    # no costlier than HiGHS's path within the optimum's own tolerance (its cost within 1e-7 of its dual's, above):
    # 7e-8 cheaper on one machine, 2.8e-8 costlier where the BLAS fuses multiply-adds
    assert out.objective <= float(np.sum(np.maximum(lo * r, hi * r))) * (1.0 + 1e-7)
