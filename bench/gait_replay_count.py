#!/usr/bin/env python3
"""The recorded hot calls of one gait replayed once with one copy of core, for callgrind to count (issue 12).

Instruction counts are the same run to run, so they compare two codes on a shared machine where the CPU spreads
by tens of per cent; they do not see the kernel's time (page faults of large temporaries: compare the CPU too).

    .venv/bin/python bench/gait_replay_ab.py --against /tmp/before/core_before --ten --lateral-solver interior \
        --what legs --calls /tmp/legs.pkl            # records the calls once
    PYTHONHASHSEED=0 valgrind --tool=callgrind --collect-atstart=no --toggle-collect=functools_reduce \
        .venv/bin/python bench/gait_replay_count.py /tmp/legs.pkl /tmp/before core_before [--what legs]

ROOT PACKAGE: the directory holding the copy and its package name (`. core` for this tree's). Only the replay
runs inside functools.reduce (the toggle); the imports and the pickle's loading are not counted.
"""
from __future__ import annotations

import argparse
import functools
import importlib
import os
import pickle
import sys
from pathlib import Path

for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):  # one core: before numpy loads BLAS
    os.environ[var] = "1"

HERE = Path(__file__).resolve().parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("calls", type=Path, help="a pickle written by gait_replay_ab.py --calls")
    parser.add_argument("root", type=Path, help="the directory holding the copy of core")
    parser.add_argument("package", help="the copy's package name")
    parser.add_argument("--what", default="legs",
                        choices=("legs", "place", "aim", "motion", "margins", "target", "lowpass", "chain"))
    args = parser.parse_args()
    sys.path[:0] = [str(args.root.resolve()), str(HERE.parent), str(HERE)]
    import gait_replay_ab

    importlib.import_module(args.package + ".balance.legs")
    calls = pickle.loads(args.calls.read_bytes())[args.what]
    functools.reduce(lambda a, b: gait_replay_ab.replay(args.what, calls, args.package), [0, 1])


if __name__ == "__main__":
    main()
