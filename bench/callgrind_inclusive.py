#!/usr/bin/env python3
"""Instructions spent inside a few Python functions of one gait or bake, under callgrind.

Callgrind sees C functions only: each named Python function is called through its own little-used C function
of the interpreter (itertools.starmap, iter(callable, sentinel), operator.call, filter, functools.reduce), whose
inclusive cost callgrind_annotate then prints: that function's instructions, calls nested in it included.

    PYTHONHASHSEED=0 valgrind --tool=callgrind --callgrind-out-file=/tmp/cg.out .venv/bin/python \\
        bench/callgrind_inclusive.py --kind stage --robot h1 core.feet.plant:plant_feet \\
        core.chains.solver:ChainKinematics._jacobian
    callgrind_annotate --inclusive=yes /tmp/cg.out | grep -E "starmap_next|calliter_iternext|_operator_call|filter_next|functools_reduce"

The names print in that order (the first function's count is starmap_next's, ...; at most five). --kind: the
gait's retarget stage (bench/gait_retarget_stage.py, the 10 s clip), the plain bake of the walk, or the gait of
the 10 s clip (bench/gait_cpu_pair.py); one run after the setup, which the counts leave out.
"""
from __future__ import annotations

import argparse
import functools
import importlib
import itertools
import operator
import os
import sys
from pathlib import Path

for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):  # one core: before numpy loads BLAS
    os.environ[var] = "1"
HERE = Path(__file__).resolve().parent


def _through_calliter(f):
    def call(*a, **k):
        box = []
        for _ in iter(lambda: box.append(f(*a, **k)) or 1, 1):
            pass
        return box[0]
    return call


def _through_filter(f):
    def call(*a, **k):
        box = []
        list(filter(lambda _: box.append(f(*a, **k)), [0]))
        return box[0]
    return call


TRAMPOLINES = [  # (C function callgrind names, wrapper calling f through it)
    ("starmap_next", lambda f: lambda *a, **k: next(itertools.starmap(lambda: f(*a, **k), [()]))),
    ("calliter_iternext", _through_calliter),
    ("_operator_call", lambda f: lambda *a, **k: operator.call(f, *a, **k)),
    ("filter_next", _through_filter),
    ("functools_reduce", lambda f: lambda *a, **k: functools.reduce(lambda _, __: f(*a, **k), [0], None)),
]


def wrap(spec: str, trampoline) -> None:
    """Replace module:function or module:Class.method by `trampoline` of it, also where it was imported by name."""
    module_name, name = spec.split(":")
    module = importlib.import_module(module_name)
    owner, attr = (getattr(module, name.split(".")[0]), name.split(".")[1]) if "." in name else (module, name)
    original = getattr(owner, attr)
    wrapped = functools.wraps(original)(trampoline(original))
    setattr(owner, attr, wrapped)
    if owner is module:
        for other in list(sys.modules.values()):
            if getattr(other, attr, None) is original:
                setattr(other, attr, wrapped)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("targets", nargs="+", help="module:function or module:Class.method, at most five")
    parser.add_argument("--kind", default="stage", choices=("stage", "bake", "gait"))
    parser.add_argument("--robot", default="h1", choices=("g1", "h1"))
    args = parser.parse_args()
    sys.path[:0] = [str(HERE.parent), str(HERE)]
    for spec, (c_name, trampoline) in zip(args.targets, TRAMPOLINES):
        wrap(spec, trampoline)
        print(f"{spec}: {c_name}")
    if args.kind == "gait":
        from gait_cpu_pair import runner
        run = runner("core", args.robot, True)
    else:
        from gait_retarget_stage import stage
        run = stage("core", args.robot, args.kind == "stage", args.kind == "bake")
    run()


if __name__ == "__main__":
    main()
