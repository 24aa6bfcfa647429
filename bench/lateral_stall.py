#!/usr/bin/env python3
"""The lateral programme on which the interior point stalled (session 24): how it stops, step by step, against HiGHS.

    .venv/bin/python bench/lateral_stall.py [--set banded_lp.NAME=VALUE ...] [PROGRAMME.npz]

The programme (default: tests/data/programmes/h1_walk_lateral_stall.npz, the H1 walk's read start with
s24-legiters' `leg_solve.PREDICTED_STOP = True`) is solved by banded_lp.minimise with the constants given, and
each iteration's step lengths (primal, dual) and the Newton solve's relative residual after refinement are
printed (a collapsed step follows a spoilt direction), then how it stopped, its cost and path against HiGHS's
(`lateral._solve_highs`) and, for the returned multipliers, g^T u against its products and the cost against
the dual's (-h.u + (g^T u).y): the optimality test_lateral_interior.py asserts on the walk's own programme.
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

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE)]
from core.balance import banded_lp, lateral  # noqa: E402
from tests.core.test_lateral_interior import STALLED, _recorded  # noqa: E402


def traced(g, h, lo, hi) -> tuple[banded_lp.Minimised, list, list]:
    """minimise with each step length and each Newton solve's relative residual kept."""
    steps, residuals = [], []
    longest, direction = banded_lp._longest, banded_lp._direction

    def kept_longest(*args):
        steps.append(longest(*args))
        return steps[-1]

    def kept_direction(factor, g, gt, theta, weight, rp, rd, x, s, z, w, rxz, rsw):
        out = direction(factor, g, gt, theta, weight, rp, rd, x, s, z, w, rxz, rsw)
        rhs = rp + gt @ (theta * (rd - rxz / x + rsw / s))
        residuals.append(float(np.abs(rhs - gt @ (weight * (g @ out[1]))).max() / np.abs(rhs).max()))
        return out

    banded_lp._longest, banded_lp._direction = kept_longest, kept_direction
    try:
        return banded_lp.minimise(g, h, lo, hi, max_iter=lateral.INTERIOR_MAX_ITER), steps, residuals
    finally:
        banded_lp._longest, banded_lp._direction = longest, direction


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("programme", nargs="?", default=str(STALLED))
    parser.add_argument("--set", action="append", default=[], metavar="banded_lp.NAME=VALUE")
    args = parser.parse_args()
    for assignment in args.set:
        name, value = assignment.split("=", 1)
        setattr(banded_lp, name.split(".", 1)[1], eval(value))
    target, op, jerk, rows, bound, weight = _recorded(Path(args.programme))
    g, h, lo, hi, interleave = lateral.interior_programme(target, op, jerk, rows, bound, weight)
    started = time.process_time()
    out, steps, residuals = traced(g, h, lo, hi)
    cpu = time.process_time() - started
    for k in range(out.iterations):  # two _longest and two solves per iteration: affine, then corrected
        step = steps[4 * k + 2: 4 * k + 4]
        if len(step) == 2:
            print(f"{k + 1:3d} steps {min(1.0, banded_lp.STEP_SHARE * step[0]):.4f} "
                  f"{min(1.0, banded_lp.STEP_SHARE * step[1]):.4f}  Newton residual {residuals[2 * k + 1]:.1e}")
    print(f"stop {out.stop} after {out.iterations} iterations ({cpu:.2f} s CPU), converged {out.converged}, "
          f"the returned iterate's gap {out.gap:.2e}, cost {out.objective:.12e}")
    scale = np.abs(g.T).multiply(np.abs(out.u)).sum(axis=1).A1.max()
    dual = -h @ out.u + (g.T @ out.u) @ out.y
    print(f"g^T u {np.abs(g.T @ out.u).max() / scale:.1e} of its products; cost - dual {(out.objective - dual) / out.objective:.1e}"
          " of the cost")
    started = time.process_time()
    highs, _ = lateral._solve_highs(target, op, jerk, rows, bound, weight)
    cpu = time.process_time() - started
    held = highs.reshape(2, -1)[:, 2:-2].T.ravel()
    r = g @ held - h
    cost = float(np.sum(np.maximum(lo * r, hi * r)))
    print(f"HiGHS ({cpu:.2f} s CPU): cost {cost:.12e} ({(out.objective - cost) / cost:+.1e} relative for the interior "
          f"point), paths {np.abs(interleave @ out.y - highs).max():.2e} m apart")


if __name__ == "__main__":
    main()
