#!/usr/bin/env python3
"""The legs' whole solve (`legs.solve_legs`: first solve, restarts from rest, continuity rounds) on recorded calls,
with and without a change of core.balance's constants: the residuals, and how far what the caller gets moves.

    .venv/bin/python bench/solve_legs_replay.py /tmp/solve_h1_ten.pkl [--ten] [--robot h1]
        [--base leg_solve.RACE_STEPS=None] [--set leg_solve.RACE_STEPS=6 ...]

The pickle holds every `solve_legs` call of one gait (recorded there with this tree's code when it does not
exist). bench/leg_iterations.py replays the single Levenberg-Marquardt solves, where a restart stopped early
looks far off; here a restart counts by what solve_legs keeps of it: the joints the caller gets, and each
foot's position error, standing feet (air share under 0.5) apart from swinging ones. Replays are
deterministic, so no timing here (the residual count is the cost: issue 12).
"""
from __future__ import annotations

import argparse
import copy
import importlib
import pickle
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE)]
from leg_iterations import _assign  # noqa: E402

CALLERS = ("trailing", "stance", "correction", "reach")  # the modules that import solve_legs by name


def record(robot: str, ten: bool) -> list:
    """Every solve_legs call's arguments in one gait with this tree's code."""
    from gait_cpu_pair import runner
    return [(args, kwargs) for args, kwargs, *_ in recorded(runner("core", robot, ten, None))]


def recorded(run) -> list:
    """Every solve_legs call that run() makes: its arguments and what it returned, copied, and its caller."""
    legs = importlib.import_module("core.balance.legs")
    calls, original = [], legs.solve_legs

    def hooked(*args, **kwargs):
        given = (copy.deepcopy(args), copy.deepcopy(kwargs))
        out = original(*args, **kwargs)
        caller = sys._getframe(1).f_code
        calls.append(given + (copy.deepcopy(out), f"{Path(caller.co_filename).stem}.{caller.co_name}"))
        return out
    modules = [importlib.import_module("core.balance." + name) for name in CALLERS]
    for module in modules:
        module.solve_legs = hooked
    try:
        run()
    finally:
        for module in modules:
            module.solve_legs = original
    return calls


def replayed(calls: list) -> tuple[list, int]:
    """Each call's (q, misses) with the constants as they are now, and the residuals worked out."""
    solve = importlib.import_module("core.balance.leg_solve")
    legs = importlib.import_module("core.balance.legs")
    original, count = solve._residual, [0]

    def residual(*args):
        count[0] += 1
        return original(*args)
    solve._residual = residual
    try:
        outs = [legs.solve_legs(*copy.deepcopy(args), **kwargs) for args, kwargs in calls]
    finally:
        solve._residual = original
    return outs, count[0]


def compared(calls: list, before: list, after: list) -> str:
    """The largest joint change, and the feet whose error grew or shrank by over a micrometre, standing / swinging."""
    joints = max((float(np.abs(a[0] - b[0]).max()) for a, b in zip(before, after) if a[0].size), default=0.0)
    parts = {True: [], False: []}
    for (args, kwargs), a, b in zip(calls, before, after):
        air = args[6] if len(args) > 6 else kwargs.get("air")
        for foot, miss in a[1].items():
            standing = np.asarray(air[foot], float) < 0.5 if air is not None else np.ones(len(miss), bool)
            for flag in (True, False):
                parts[flag].append((b[1][foot] - miss)[standing == flag])
    lines = [f"joints {joints:.2e} rad at most"]
    for flag, name in ((True, "standing"), (False, "swinging")):
        change = np.concatenate(parts[flag]) if parts[flag] else np.zeros(0)
        if change.size:
            lines.append(f"{name} feet: {int((change > 1e-6).sum())} of {change.size} worse by over 1 um (worst "
                         f"{1e3 * change.max():+.3f} mm), {int((change < -1e-6).sum())} better (best "
                         f"{1e3 * change.min():+.3f} mm)")
    return "; ".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("calls", type=Path, help="solve_legs calls pickled (recorded there when missing)")
    parser.add_argument("--robot", default="h1", choices=("g1", "h1"))
    parser.add_argument("--ten", action="store_true", help="record the 10 s clip, not the walk")
    parser.add_argument("--base", action="append", default=[], metavar="MODULE.NAME=VALUE")
    parser.add_argument("--set", action="append", default=[], metavar="MODULE.NAME=VALUE")
    args = parser.parse_args()
    if args.calls.exists():
        calls = pickle.loads(args.calls.read_bytes())
    else:
        calls = record(args.robot, args.ten)
        args.calls.write_bytes(pickle.dumps(calls))
    _assign(args.base)
    before, total = replayed(calls)
    print(f"{', '.join(args.base) or 'the tree'}: {len(calls)} solve_legs calls, {total} residuals", flush=True)
    if args.set:
        _assign(args.set)
        after, total = replayed(calls)
        print(f"with {', '.join(args.set)}: {total} residuals; {compared(calls, before, after)}")


if __name__ == "__main__":
    main()
