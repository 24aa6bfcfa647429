#!/usr/bin/env python3
"""Whether the legs' stacked solve (`legs._solve_together`: a left and a right leg built alike as one
Levenberg-Marquardt call, their shifts per row) gives each sample the bits it gets with its leg solved alone.

    PYTHONHASHSEED=0 .venv/bin/python bench/leg_pair_bits.py [--robot h1|g1] [--ten] [--set leg_solve.X=value ...]

One gait runs as it does (the stacked calls' answers are the ones it goes on with); at every call of
`_solve_together` each leg's problem is also solved alone, and the samples whose joints or error differ in any
bit are counted, with the stack's size and each leg's (the step's LAPACK solve gives way to
chains.batched.spd_solve_last from LAST_SMALL_BATCH systems, _normal's products go row by row from
NORMAL_ROWS_FROM samples, a drop gathers by index from INDEX_GATHER_FROM: choices by the batch's size).
Also the calls by how many legs they hold: what is left for stacking to take. --set: a core.balance constant
changed for the whole run (bench/leg_iterations.py's form), to see which size choice parts the bits.
"""
from __future__ import annotations

import argparse
import collections
import importlib
import sys
from pathlib import Path


HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--robot", default="h1", choices=("g1", "h1"))
    parser.add_argument("--ten", action="store_true", help="the 10 s clip instead of the walk")
    parser.add_argument("--set", action="append", default=[], help="module.CONSTANT=value under core.balance")
    args = parser.parse_args()
    from gait_cpu_pair import runner
    from leg_iterations import _assign
    _assign(args.set)
    legs = importlib.import_module("core.balance.legs")
    original = legs._solve_together
    groups: collections.Counter = collections.Counter()
    parted: list[tuple[int, list[int], int]] = []  # (stack size, each leg's size, samples whose bits differ)

    def hooked(tree, problems, *rest, **kwargs):
        out = original(tree, problems, *rest, **kwargs)
        groups[len(problems)] += 1
        if len(problems) > 1:
            counts = [len(p[1]) for p in problems]
            if legs.stacked_walk([legs._walk(tree, p[0]) for p in problems], counts) is None:
                groups["not alike"] += 1
                return out
            alone = [original(tree, [p], *rest, **kwargs)[0] for p in problems]
            differ = sum(int((~((a[0] == s[0]).all(1) & (a[1] == s[1]).all(1))).sum())
                         for a, s in zip(alone, out))
            parted.append((sum(counts), counts, differ))
        return out
    legs._solve_together = hooked
    try:
        runner("core", args.robot, args.ten, None)()
    finally:
        legs._solve_together = original
    print(f"{args.robot} {'10 s clip' if args.ten else 'walk'}: _solve_together calls by legs "
          f"{dict(sorted(groups.items(), key=str))}")
    samples = sum(s for s, _, _ in parted)
    differ = [(s, c, d) for s, c, d in parted if d]
    print(f"stacked calls {len(parted)} on {samples} samples; {len(differ)} calls with {sum(d for *_, d in differ)} "
          f"samples not the bits of their leg alone")
    for size, counts, count in differ:
        print(f"  stack {size} (legs {counts}): {count} samples differ")


if __name__ == "__main__":
    main()
