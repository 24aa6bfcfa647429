"""The step probe's trial solves (core.balance.reach) of a gait's plan: how many solve_legs calls and rows,
and their CPU, for this tree's core and another copy, interleaved in one process.

    .venv/bin/python bench/probe_solves.py --against /tmp/s26stack/core_before [--robot g1|h1] [--runs 5]

The gait's plan is made once per code (plan.make_plan, the bundled walk, the sagittal waist as the gait's
settings have it); each round times one make_plan of each code, CPU (time.process_time)."""
from __future__ import annotations

import argparse
import importlib
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]


def counted(package: str, robot: str):
    """A function making the plan of the walk with `package`'s code, and the counts of its probe solves."""
    from gait_cpu_pair import runner

    reach = importlib.import_module(f"{package}.balance.reach")
    counts = {"calls": 0, "rows": 0}
    solve = reach.solve_legs

    def solve_legs(tree, legs, q, *args, **kwargs):
        counts["calls"] += 1
        counts["rows"] += len(q)
        return solve(tree, legs, q, *args, **kwargs)

    reach.solve_legs = solve_legs
    plan = importlib.import_module(f"{package}.balance.plan")
    made = {}
    make_plan = plan.make_plan

    def record(*args, **kwargs):
        made["args"] = (args, kwargs)
        return make_plan(*args, **kwargs)

    gait = importlib.import_module(f"{package}.balance.gait")
    gait.make_plan = record
    runner(package, robot, False)()
    gait.make_plan = make_plan
    args, kwargs = made["args"]
    return lambda: make_plan(*args, **kwargs), counts


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--against", type=Path, required=True, help="another copy of core, as a package directory")
    parser.add_argument("--robot", default="h1", choices=("g1", "h1"))
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    sys.path.insert(0, str(args.against.parent))
    codes = {name: counted(name, args.robot) for name in (args.against.name, "core")}
    times = {name: [] for name in codes}
    for name, (make, counts) in codes.items():
        counts["calls"] = counts["rows"] = 0
        make()
        print(f"{name}: {counts['calls']} probe solves, {counts['rows']} rows a plan")
    for _ in range(args.runs):
        for name, (make, _) in codes.items():
            start = time.process_time()
            make()
            times[name].append(time.process_time() - start)
    for name, spent in times.items():
        print(f"{name}: make_plan least {min(spent):.3f} s, median {sorted(spent)[len(spent) // 2]:.3f} s")


if __name__ == "__main__":
    main()
