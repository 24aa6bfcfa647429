#!/usr/bin/env python3
"""Where two starts of an H1 gait part: every solve_legs call of each, compared call by call.

    .venv/bin/python bench/start_calls.py [--start float32] [--scale S] [--set MODULE.NAME=VALUE ...]

Runs the H1 walk from the read start and from --start (bench/h1_sensitivity.py's starts: float32, noise,
"ulp SEED"), records every `solve_legs` call of each (bench/solve_legs_replay.py), and prints per call index its
caller, its samples, how far its inputs are apart (joints, root, goals; rad or m) and how far its outputs are
(joints, the feet's position errors), and how many samples' feet errors differ by over 10 um and 100 um. The first
call whose outputs are far more apart than its inputs is where the gait amplifies the rounding; replay that call
(the pickle, --keep) to see which decision flips. Session 26: with the legs' race on every restart, the height
fit's trial (call 18), a leg near its straight knee stopping on the gain rule on one start only.
"""
from __future__ import annotations

import argparse
import pickle
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import h1_sensitivity  # noqa: E402  (sets one BLAS thread before numpy loads)
import numpy as np  # noqa: E402
from solve_legs_replay import recorded  # noqa: E402

NAMES = ("tree", "legs", "q", "root", "goals", "rest", "air", "iterations", "quick", "period_s")


def apart(a, b) -> float:
    """The largest difference of two arrays or dicts of arrays (inf: other shapes)."""
    if a is None or b is None:
        return 0.0
    if isinstance(a, dict):
        return max((apart(a[k], b[k]) for k in a), default=0.0)
    a, b = np.asarray(a, float), np.asarray(b, float)
    if a.shape != b.shape:
        return np.inf
    return float(np.abs(a - b).max()) if a.size else 0.0


def line(index: int, one: tuple, other: tuple) -> str:
    """One call of both starts: inputs and outputs apart."""
    a, b = dict(zip(NAMES, one[0]), **one[1]), dict(zip(NAMES, other[0]), **other[1])
    inputs = " ".join(f"{k} {apart(a.get(k), b.get(k)):.1e}" for k in ("q", "root", "goals"))
    (q, miss), (q_b, miss_b) = one[2], other[2]
    shares = ""
    if q.shape == q_b.shape and q.size:
        feet = np.max([np.abs(miss[f] - miss_b[f]) for f in miss], axis=0)
        shares = f", samples over 10 um {int((feet > 1e-5).sum())}, over 100 um {int((feet > 1e-4).sum())}"
    return (f"{index:3d} {one[3]:24s} {len(a['q']):5d} {'quick' if a.get('quick') else 'full ':5s} in {inputs} -> "
            f"out q {apart(q, q_b):.1e} feet {apart(miss, miss_b):.1e}{shares}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--start", default="float32")
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--set", action="append", default=[], metavar="MODULE.NAME=VALUE")
    parser.add_argument("--keep", type=Path, help="pickle both starts' calls here")
    args = parser.parse_args()
    calls = {how: recorded(lambda how=how: h1_sensitivity.run((how, "h1", False, False, None, False, args.set,
                                                                 args.scale)))
             for how in ("read", args.start)}
    read, other = calls["read"], calls[args.start]
    print(f"{', '.join(args.set) or 'the tree'}: {len(read)} and {len(other)} solve_legs calls (read, {args.start})")
    for index, (one, two) in enumerate(zip(read, other)):
        print(line(index, one, two))
    if args.keep:
        args.keep.write_bytes(pickle.dumps(calls))


if __name__ == "__main__":
    main()
