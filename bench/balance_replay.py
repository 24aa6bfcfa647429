#!/usr/bin/env python3
"""One balance-stage function's calls of a gait, recorded and replayed against another copy of core (session 27).

A whole gait under callgrind takes 5-10 minutes on the shared machine; a function's own calls replayed take
seconds, and their answers are checked to the bit against the recorded ones (the copy's and this tree's).

    cp -r /work/main/core /tmp/before/core_before
    .venv/bin/python bench/balance_replay.py record --function target._into [--robot h1] [--out calls.pkl]
    .venv/bin/python bench/balance_replay.py time --function target._into --against /tmp/before/core_before
    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 valgrind --tool=callgrind --collect-atstart=no \\
        --toggle-collect=functools_reduce --callgrind-out-file=/dev/null \\
        .venv/bin/python bench/balance_replay.py once --function target._into [--against COPY]

record runs the 10 s clip's gait twice with this tree's core (PYTHONHASHSEED=0) and keeps the second run's
calls; time replays them with both copies (least of --runs passes each); once makes one pass inside
functools.reduce (callgrind's toggle) with the copy given, else with this tree's. Functions: FUNCTIONS. A
swing keeps its spline pieces across its calls (foot_path.SwingKnots), so foot_path._interpolate is replayed
with a dict a swing (by its lift-off time) where the copy's takes one.
"""
from __future__ import annotations

import argparse
import copy
import functools
import importlib
import os
import pickle
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
FUNCTIONS = ("target._into", "foot_path._interpolate", "lateral.support_constraints")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=("record", "time", "once"))
    parser.add_argument("--function", required=True, choices=FUNCTIONS)
    parser.add_argument("--robot", default="h1", choices=("g1", "h1"))
    parser.add_argument("--out", type=Path, help="the calls' pickle (default /tmp/balance_replay_<function>.pkl)")
    parser.add_argument("--against", type=Path, help="another copy of core, as a package directory")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(var, "1")
    sys.path[:0] = [str(HERE.parent), str(HERE)]
    out = args.out or Path(f"/tmp/balance_replay_{args.function}.pkl")
    if args.action == "record":
        return record(args.function, args.robot, out)
    calls = pickle.load(open(out, "rb"))
    if args.action == "once":
        call, given = replayer(args.function, package_of(args.against), calls), fresh(calls)
        functools.reduce(lambda a, b: call(given), [0, 1])  # the copies made outside the collected pass
        return
    import numpy as np

    for package in ([package_of(args.against)] if args.against else []) + ["core"]:
        call = replayer(args.function, package, calls)
        if not all(same(a, r) for a, (_, r) in zip(call(fresh(calls)), calls)):
            sys.exit(f"{package}: the answers differ from the recorded ones")
        best = np.inf
        for _ in range(args.runs):
            given = fresh(calls)
            started = time.process_time()
            call(given)
            best = min(best, time.process_time() - started)
        print(f"{package:>12} {args.function}: {len(calls)} calls, the same bits, least {1000 * best:.2f} ms")


def package_of(copy_dir: Path | None) -> str:
    if copy_dir is None:
        return "core"
    sys.path.insert(0, str(copy_dir.resolve().parent))
    return copy_dir.name


def record(function: str, robot: str, out: Path) -> None:
    """The second gait's calls of function (arguments and answer), every module's name for it rebound."""
    from gait_cpu_pair import runner

    module_name, name = function.split(".")
    run = runner("core", robot, True)
    run()
    original = getattr(importlib.import_module(f"core.balance.{module_name}"), name)
    calls = []

    def recorded(*a, **k):
        given = copy.deepcopy((a, k))
        answer = original(*a, **k)
        calls.append((given, copy.deepcopy(answer)))
        return answer

    for module in list(sys.modules.values()):
        if getattr(module, "__name__", "").startswith("core.") and getattr(module, name, None) is original:
            setattr(module, name, recorded)
    run()
    pickle.dump(calls, open(out, "wb"))
    print(f"{len(calls)} calls of {function} into {out}")


def fresh(calls: list) -> list:
    """The calls' arguments copied (a call may change its arguments in place)."""
    return [copy.deepcopy(c[0]) for c in calls]


def replayer(function: str, package: str, calls: list):
    """A call replaying the calls (their arguments given: fresh) with package's function."""
    module_name, name = function.split(".")
    target = getattr(importlib.import_module(f"{package}.balance.{module_name}"), name)
    kept = function == "foot_path._interpolate" and "kept" in target.__code__.co_varnames

    def call(given: list) -> list:
        if function != "foot_path._interpolate":
            return [target(*a, **k) for a, k in given]
        pieces: dict = {}  # (a recording from a tree whose swings keep pieces holds a swing's dict too: not used)
        return [target(*a[:3], *((pieces.setdefault(float(a[0][0]), {}),) if kept else ())) for a, k in given]
    return call


def same(a, b) -> bool:
    """Whether two answers are the same to the bit (arrays by their bytes, sparse matrices by their parts)."""
    import dataclasses

    import numpy as np
    from scipy import sparse

    if sparse.issparse(a):
        a, b = a.tocsr(), b.tocsr()
        return a.shape == b.shape and all(same(getattr(a, n), getattr(b, n)) for n in ("data", "indices", "indptr"))
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and a.shape == b.shape and a.tobytes() == b.tobytes()
    if dataclasses.is_dataclass(a):
        return all(same(getattr(a, f.name), getattr(b, f.name)) for f in dataclasses.fields(a))
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return a == b


if __name__ == "__main__":
    main()
