#!/usr/bin/env python3
"""The zero-phase low-pass itself, scipy.signal's sosfilt (what forward_backward ran before session 30)
against ours (core.motion.iir: banded solves, no scipy.signal), on the very calls a command makes.

Records every forward_backward call of one command run in-process (its sections, steady states,
signal and pad), checks both give the same numbers (to rounding), then times the recorded calls
alternated between the two, one BLAS thread, least of REPEATS:

    .venv/bin/python bench/lowpass_ab.py bake [--repeats 7] [--record /tmp/calls.pkl]
    .venv/bin/python bench/lowpass_ab.py gait --clip data/motion/cmu_131_01_walk_m.bvh

Instructions instead of seconds (callgrind; the difference between 5 replays and 1 is 4 replays' worth):

    .venv/bin/python bench/lowpass_ab.py bake --record /tmp/calls.pkl    # once, to record
    for impl in scipy ours; do for n in 1 5; do
      valgrind --tool=callgrind --callgrind-out-file=/dev/null .venv/bin/python bench/lowpass_ab.py \
        --replay /tmp/calls.pkl --impl $impl --times $n 2>&1 | grep Collected; done; done
"""
from __future__ import annotations

import argparse
import io
import os
import pickle
import sys
import timeit
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from core.motion import filtering  # noqa: E402

CLIPS = {"bake": "tests/data/motion/cmu_131_03_hop.bvh", "gait": "data/motion/cmu_131_01_walk_m.bvh"}


def scipy_forward_backward(sos: np.ndarray, zi: np.ndarray, x: np.ndarray, padlen: int) -> np.ndarray:
    """forward_backward as it was: scipy.signal.sosfilt forward, then backward (sosfiltfilt's steps)."""
    from scipy import signal

    if padlen > 0:
        x = np.concatenate((2 * x[:1] - x[padlen:0:-1], x, 2 * x[-1:] - x[-2:-(padlen + 2):-1]), axis=0)
    zi = zi.reshape(zi.shape + (1,) * (x.ndim - 1))
    y, _ = signal.sosfilt(sos, x, axis=0, zi=zi * x[:1])
    y, _ = signal.sosfilt(sos, y[::-1], axis=0, zi=zi * y[-1:])
    y = y[::-1]
    return y[padlen:-padlen] if padlen > 0 else y


IMPLS = {"scipy": scipy_forward_backward, "ours": filtering.forward_backward}


def record(command: str, clip: str, robot: str) -> list:
    """(sos, zi, signal, pad) of every forward_backward call of one command, run in-process."""
    from core.library.cli import main

    calls, ours = [], filtering.forward_backward

    def recording(sos, zi, x, padlen):
        calls.append((np.array(sos), np.array(zi), np.array(x), padlen))
        return ours(sos, zi, x, padlen)

    filtering.forward_backward = recording
    out = Path("/tmp") / f"lowpass_ab_{os.getpid()}.csv"
    try:
        with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):
            main([command, "--source", str(ROOT / clip), "--robot", str(ROOT / robot), "--out", str(out), "--overwrite"])
    finally:
        filtering.forward_backward = ours
        out.unlink(missing_ok=True)
    return calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", nargs="?", choices=("bake", "gait"))
    parser.add_argument("--clip")
    parser.add_argument("--robot", default="data/robots/g1/unitree_g1_29dof.urdf")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--record", help="save the calls here (a pickle) for --replay")
    parser.add_argument("--replay", help="run recorded calls --times times with --impl (for callgrind), nothing else")
    parser.add_argument("--impl", choices=tuple(IMPLS), default="ours")
    parser.add_argument("--times", type=int, default=1)
    args = parser.parse_args()
    if args.replay:
        calls = pickle.loads(Path(args.replay).read_bytes())
        if args.impl == "scipy":
            from scipy import signal  # noqa: F401  imported in both counts of a difference, not in the replays
        for _ in range(args.times):
            for call in calls:
                IMPLS[args.impl](*call)
        return
    calls = record(args.command, args.clip or CLIPS[args.command], args.robot)
    if args.record:
        Path(args.record).write_bytes(pickle.dumps(calls))
    worst = max(float(np.abs(scipy_forward_backward(*c) - filtering.forward_backward(*c)).max()
                      / max(np.abs(c[2]).max(), 1e-300)) for c in calls)
    shapes: dict = {}
    for sos, _, x, _ in calls:
        key = f"{len(sos)} sections {x.shape}"
        shapes[key] = shapes.get(key, 0) + 1
    print(f"{args.command}: {len(calls)} calls, largest difference {worst:.1e} of the signal")
    print("  " + ", ".join(f"{n} x {key}" for key, n in sorted(shapes.items(), key=lambda kv: -kv[1])[:8]))
    best = {name: np.inf for name in IMPLS}
    for round_ in range(args.repeats):
        for name in (IMPLS if round_ % 2 else tuple(IMPLS)[::-1]):
            fn = IMPLS[name]
            best[name] = min(best[name], min(timeit.repeat(lambda: [fn(*c) for c in calls], number=3, repeat=3)) / 3)
    print("  " + "  ".join(f"{name} {1e3 * t:.2f} ms" for name, t in best.items())
          + f"  (least of {args.repeats}; load {open('/proc/loadavg').read().split()[0]})")


if __name__ == "__main__":
    main()
