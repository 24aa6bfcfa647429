#!/usr/bin/env python3
"""How many residual calls and head solves the rolled waist's placements make, and over how many samples (issue 12).

    .venv/bin/python bench/gait_replay_ab.py --against /tmp/before/core_before --ten --what place \
        --calls /tmp/place.pkl                       # records the H1 10 s clip's placements once
    .venv/bin/python bench/place_residuals.py /tmp/place.pkl --against /tmp/before/core_before

Each recorded `SagittalWaist.place` is replayed with this tree's core and the other copy, counting the calls of the
waist's residual (`_residual`, or `_residuals` where trials are stacked) and of the closed-form hip aim (`HeadAim.solve`,
or `solutions` where both legs are stacked) and the samples they work on: a code that stacks makes fewer calls on
the same samples (the same arithmetic, less per-call work).
"""
from __future__ import annotations

import argparse
import collections
import os
import pickle
import sys
from pathlib import Path

for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):  # one core: before numpy loads BLAS
    os.environ[var] = "1"

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE)]
from gait_replay_ab import _prepared  # noqa: E402


def _samples(name: str, args: tuple) -> int:
    """The samples a residual call works on: each trial's (or its rows') for `_residuals`, params' for `_residual`."""
    rows = args[4] if len(args) > 4 else None
    if name == "_residuals":
        return len(args[1]) * (len(args[1][0]) if rows is None else len(rows))
    return len(args[1]) if rows is None else len(rows)


def counts(calls: list, package: str) -> collections.Counter:
    """Residual calls, head solves and their samples over the recorded placements replayed with `package`."""
    call, work = _prepared("place", calls, package)
    aim = sys.modules[package + ".balance.hip_aim"].HeadAim
    waist = sys.modules[package + ".balance.sagittal"].SagittalWaist
    out: collections.Counter = collections.Counter()
    residual = "_residuals" if hasattr(waist, "_residuals") else "_residual"
    solve = "solutions" if hasattr(aim, "solutions") else "solve"
    originals = {(waist, residual): getattr(waist, residual), (aim, solve): getattr(aim, solve)}

    def counted(owner, name, key, size):
        original = originals[(owner, name)]

        def wrapped(*args, **kwargs):
            out[key] += 1
            out[key + " samples"] += size(args)
            return original(*args, **kwargs)
        setattr(owner, name, wrapped)

    counted(waist, residual, "residual calls", lambda args: _samples(residual, args))
    counted(aim, solve, "head solves", lambda args: len(args[2]))
    try:
        for args in work:
            call(*args)
    finally:
        for (owner, name), original in originals.items():
            setattr(owner, name, original)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("calls", type=Path, help="placements recorded by gait_replay_ab.py --what place --calls")
    parser.add_argument("--against", type=Path, required=True, help="another copy of core, as a package directory")
    args = parser.parse_args()
    other = args.against.resolve()
    sys.path.insert(0, str(other.parent))
    calls = pickle.loads(args.calls.read_bytes())["place"]
    for package in (other.name, "core"):
        found = counts(calls, package)
        print(f"{package:>12}: {len(calls)} placements; " + ", ".join(f"{k} {v:,}" for k, v in sorted(found.items())))


if __name__ == "__main__":
    main()
