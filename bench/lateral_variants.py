#!/usr/bin/env python3
"""The H1's lateral programme (core.balance.lateral) by HiGHS's cutting planes against variants of it: CPU and path.

    .venv/bin/python bench/lateral_variants.py [--ten] [--runs 3] [--knots 2,3]

One H1 gait (the walk, or with --ten the 10 s clip, as bench/gait_cpu_pair.py) runs with this tree's core and
its programme (`plan_path`'s arguments) is kept; then, one process, one BLAS thread, each variant is solved
--runs times and its least CPU printed with how far its CoM path is from the programme's own (metres):
- as it is (`plan_path` with `lateral.SOLVER = "highs"`, the default until session 23);
- HiGHS options set on every solver the programme makes (`lateral._equalities`): Dantzig / steepest-edge
  pricing instead of Devex, presolve off, the primal simplex, a longer or shorter refactorisation interval,
  looser feasibility tolerances;
- the programme by banded_lp's interior point (lateral.SOLVER = "interior", session 22; the default since session 23);
- the CoM on a coarser grid (issue 12's speed, session 21): the path a cubic B-spline with a knot every K
  samples (--knots), its ZMP error and every constraint row still on every sample, the snap on the knots;
  the same cutting planes (`lateral._solve_cutting`).
A path within 1e-8 m of the programme's is the same optimum (the tolerance it is flat to); further is another
plan, which the H1's passes amplify (a gait to check with bench/h1_cut_check.py).
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):  # one core: before numpy loads BLAS
    os.environ[var] = "1"

import numpy as np  # noqa: E402
from scipy import sparse  # noqa: E402
from scipy.interpolate import BSpline  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE)]
from gait_cpu_pair import runner  # noqa: E402

from core.balance import gait, lateral  # noqa: E402

OPTIONS = [("Dantzig pricing", {"simplex_dual_edge_weight_strategy": 0}),
           ("steepest-edge pricing", {"simplex_dual_edge_weight_strategy": 2}),
           ("presolve off", {"presolve": "off"}),
           ("primal simplex", {"simplex_strategy": 4}),
           ("refactorise every 50", {"simplex_update_limit": 50}),
           ("refactorise every 400", {"simplex_update_limit": 400}),
           ("feasibility tolerances 1e-6", {"primal_feasibility_tolerance": 1e-6, "dual_feasibility_tolerance": 1e-6})]


def captured(ten: bool) -> tuple[tuple, dict]:
    """plan_path's arguments (positional, keyword) in one H1 gait."""
    kept = []
    real = gait.plan_path

    def keep(*args, **kwargs):
        kept.append((args, kwargs))
        return real(*args, **kwargs)

    gait.plan_path = keep
    try:
        runner("core", "h1", ten)()
    finally:
        gait.plan_path = real
    return kept[0]


def least(call, runs: int):
    """(least CPU seconds over runs, the last result)."""
    best, out = np.inf, None
    for _ in range(runs):
        started = time.process_time()
        out = call()
        best = min(best, time.process_time() - started)
    return best, out


def with_options(options: dict):
    """lateral._equalities setting options on every solver it makes (restore with the returned original)."""
    real = lateral._equalities

    def made(highs, *args):
        solver = real(highs, *args)
        for name, value in options.items():
            solver.setOptionValue(name, value)
        return solver

    lateral._equalities = made
    return real


def on_knots(args: tuple, kwargs: dict, every: int) -> np.ndarray:
    """plan_path's programme with the CoM a cubic B-spline (clamped) with a knot every `every` samples, its
    ZMP error and constraint rows on every sample, the snap (order) on the spline's coefficients: the path (N, 2)."""
    target, period, heights, weight, constraints = args
    order, excess_weight = kwargs["order"], kwargs["excess_weight"]
    n = len(target)
    inner = np.r_[np.arange(0, n - 1, every), n - 1].astype(float)
    basis = BSpline.design_matrix(np.arange(n, dtype=float), np.r_[[0.0] * 3, inner, [n - 1.0] * 3], 3).tocsr()
    k = basis.shape[1]
    two = lambda m: sparse.block_diag([m, m]).tocsr()  # noqa: E731
    zmp = two(lateral.zmp_operator(n, period, heights) @ basis)
    snap = two(weight * lateral.differences(k, order) / (every * period) ** order)
    still = two(sparse.vstack([lateral.differences(n, 1)[:2], lateral.differences(n, 1)[-2:]]) @ basis)
    nr, nj = 2 * n, snap.shape[0]
    eye = lambda m: sparse.identity(m, format="csr")  # noqa: E731
    zero = lambda r, c: sparse.csr_matrix((r, c))  # noqa: E731
    equal = sparse.vstack([sparse.hstack([zmp, -eye(nr), eye(nr), zero(nr, 2 * nj)]),
                           sparse.hstack([snap, zero(nj, 2 * nr), -eye(nj), eye(nj)]),
                           sparse.hstack([still, zero(still.shape[0], 2 * nr + 2 * nj)])]).tocsc()
    bound = np.r_[target[:, 0], target[:, 1], np.zeros(nj + still.shape[0])]
    cost = np.r_[np.zeros(2 * k), np.ones(2 * nr + 2 * nj)]
    rows = sparse.vstack([c.rows for c in constraints]).tocsr() @ two(basis)
    limits = np.concatenate([c.bound for c in constraints])
    solved = lateral._solve_cutting(cost, equal, bound, 2 * k, rows.tocsr(), limits, excess_weight)
    return (two(basis) @ solved[0]).reshape(2, n).T


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ten", action="store_true", help="the 10 s clip instead of the walk")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--knots", default="2,3", help="knot spacings (samples) of the coarser CoM grid")
    args = parser.parse_args()
    call_args, call_kwargs = captured(args.ten)
    lateral.SOLVER = "highs"  # the lines below are HiGHS's and its variants' (the interior point is the default since
    #                           session 23; its own line sets it)
    solve = lambda: lateral.plan_path(*call_args, **call_kwargs).com  # noqa: E731
    seconds, own = least(solve, args.runs)
    rows = sum(len(c.bound) for c in call_args[4])
    print(f"H1 {'10 s clip' if args.ten else 'walk'}: {len(own)} samples, {rows} constraint rows; "
          f"load {os.getloadavg()[0]:.1f}")
    print(f"{'as it is':32s} {seconds:6.3f} s")
    for label, options in OPTIONS:
        real = with_options(options)
        try:
            seconds, com = least(solve, args.runs)
        finally:
            lateral._equalities = real
        print(f"{label:32s} {seconds:6.3f} s  path {np.abs(com - own).max():.1e} m apart")
    lateral.SOLVER = "interior"
    try:
        seconds, com = least(solve, args.runs)
    finally:
        lateral.SOLVER = "highs"
    print(f"{'banded interior point':32s} {seconds:6.3f} s  path {np.abs(com - own).max():.1e} m apart")
    for every in (int(k) for k in args.knots.split(",")):
        seconds, com = least(lambda: on_knots(call_args, call_kwargs, every), args.runs)
        print(f"{f'CoM knots every {every} samples':32s} {seconds:6.3f} s  path {np.abs(com - own).max():.1e} m apart")


if __name__ == "__main__":
    main()
