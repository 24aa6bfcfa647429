#!/usr/bin/env python3
"""The H1 gait's CPU over the cut check's default cases, and which of them fall back to HiGHS (issue 12).

    .venv/bin/python bench/h1_draws_cpu.py [--set MODULE.NAME=VALUE ...] [--jobs 2] [--cases walk,10 s clip]

A change that moves the legs' answers by a rounding walks the chaotic H1 gait into another draw, and a draw can
cost more than the change saves: the lateral programme's interior point may stall short of its gap on one draw
(`lateral.fallbacks`; HiGHS then plans it, about a second more). One gait's CPU says which draw it fell on, not what
the change costs, so this runs every default case of bench/h1_cut_check.py (the walk, the 10 s clip, the H1 scaled
0.9 and 1.1, each from its four starts), each gait in its own process, and prints each one's CPU, fallbacks and
margin, and their sums. Run it from each tree to compare (a copy of main's tree for main's figures).
"""
from __future__ import annotations

import argparse
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import h1_cut_check  # noqa: E402
import h1_sensitivity  # noqa: E402  (sets one BLAS thread before numpy loads)


def timed(job: tuple) -> dict:
    """h1_sensitivity.run's gait, with its CPU time and the lateral programme's fallbacks in this process."""
    started = time.process_time()
    out = h1_sensitivity.run(job)
    from core.balance import lateral
    return {"cpu": time.process_time() - started, "fallbacks": lateral.fallbacks,
            "margin_mm": 1000 * out["report"]["min_support_margin_m"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", action="append", default=[], metavar="MODULE.NAME=VALUE")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--cases", help="labels of h1_cut_check's cases, comma-separated (default: its four first)")
    args = parser.parse_args()
    cases = h1_cut_check.CASES[:4] if args.cases is None else \
        [c for c in h1_cut_check.CASES if c[0] in args.cases.split(",")]
    labels, jobs = [], []
    for label, held, scale, starts, extra in cases:
        for how in starts:
            labels.append(f"{label} {how}")
            jobs.append((how, "h1", False, False, None, held, args.set + extra, scale))
    with ProcessPoolExecutor(args.jobs, max_tasks_per_child=1) as pool:  # each gait its own process and constants
        results = list(pool.map(timed, jobs))
    for label, r in zip(labels, results):
        print(f"{label:<22} {r['cpu']:6.2f} s CPU  fallbacks {r['fallbacks']}  margin {r['margin_mm']:+.2f} mm", flush=True)
    print(f"{len(results)} gaits{''.join(', ' + a for a in args.set)}: {sum(r['cpu'] for r in results):.1f} s CPU in all, "
          f"{sum(r['fallbacks'] > 0 for r in results)} fell back to HiGHS")


if __name__ == "__main__":
    main()
