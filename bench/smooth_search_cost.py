#!/usr/bin/env python3
"""Where the smooth trunk's distance (core.collision.smooth.capsule_to_smooth) spends: numpy's per-call
overhead or the elements, and whether a search with a fixed number of vectorised evaluations per call
(session 29's brief) is cheaper than the bracketed Newton search it would replace.

Replays the calls one avoiding G1 bake makes (recorded by bench/smooth_distance_ab.py --record), either as
recorded or all queries in ONE call (the same answers: the search is per row; the per-call overhead then
counts once), and with two fixed-evaluation searches in the Newton search's place:

- `fixed`: f at the stretch's two ends and the search's start (one evaluation of three points a row), the
  bracket of f's slope's sign change, then STEPS Newton steps on every row, each falling back to the ends'
  tangents' crossing where it leaves the bracket (the first step from the least of the three) (no per-row convergence test, no rows taken out);
- `sampled`: f at SAMPLES fixed fractions of each row's stretch in one evaluation, the two tangents' crossing
  in the bracketing interval (or Newton from the least sample), then Newton steps as above (the brief's candidate).

Each is compared with the Newton search on the same calls (the largest distance and gradient differences
where either is within the call's reach) and timed interleaved (least of --rounds).

    ROBOT_RETARGET_SMOOTH_TRUNK=1 .venv/bin/python bench/smooth_distance_ab.py --record /tmp/calls --clips hop
    ROBOT_RETARGET_SMOOTH_TRUNK=1 .venv/bin/python bench/smooth_search_cost.py /tmp/calls/hop.pkl \\
        [--variants fixed:3,sampled:2:9] [--rounds 3]
    # instructions of one way (less those of --way none: the imports and the model):
    ROBOT_RETARGET_SMOOTH_TRUNK=1 valgrind --tool=callgrind --callgrind-out-file=/dev/null \\
        .venv/bin/python bench/smooth_search_cost.py /tmp/calls/hop.pkl --way many|one|none|fixed:3|sampled:2:9
"""
from __future__ import annotations

import argparse
import os
import pickle
import sys
import time
from pathlib import Path

for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[var] = "1"

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(ROOT))
import numpy as np  # noqa: E402

import clips  # noqa: E402
from core.collision import collision_pairs, hulls, smooth  # noqa: E402
from core.model.kinematics import KinematicTree  # noqa: E402
from core.model.urdf import parse_urdf  # noqa: E402


def _tangents_cross(a, fa, da, b, fb, db):
    """Where the tangents at a and b (values fa, fb, slopes da < 0 < db) cross: their lower envelope's least."""
    return (fb - fa + da * a - db * b) / (da - db)


def _steps(rows, c, a, fa, da, b, fb, db, steps: int):
    """`steps` evaluations from c on every row, each bracket [a, b] narrowed by the slope's sign and the next
    point Newton's where inside the bracket, else the tangents' crossing; f, slope, weights at the last."""
    for step in range(steps):
        fc, dc, sc, share, total = rows.at(c)
        if step == steps - 1:
            return c, fc, share, total
        below = dc < 0.0
        a, fa, da = np.where(below, c, a), np.where(below, fc, fa), np.where(below, dc, da)
        b, fb, db = np.where(below, b, c), np.where(below, fb, fc), np.where(below, db, dc)
        ahead = c - dc / np.maximum(sc, 1e-12)
        c = np.where((ahead > a) & (ahead < b), ahead, _tangents_cross(a, fa, da, b, fb, db))
    raise ValueError("steps must be at least 1")


def fixed_search(points: np.ndarray, steps: int):
    """A `smooth._newton` replacement: f at `points` (fractions of each row's stretch [lo, hi]: 0, the start, 1 for
    `fixed`; evenly spaced for `sampled`), then `steps` evaluations on the rows whose least is inside."""
    def search(rows, u, lo, hi):
        count, width = len(u), len(points) if points is not None else 3
        t, f, grad = np.empty(count), np.empty(count), np.empty((count, 3))
        every = rows.take(np.repeat(np.arange(count), width))
        fractions = np.stack([lo, u, hi], 1) if points is None else lo[:, None] + (hi - lo)[:, None] * points
        value, first, second, share, total = every.at(fractions.ravel())
        value, first, second = (x.reshape(count, width) for x in (value, first, second))
        turn = (first < 0.0).sum(axis=1)  # samples before f's slope turns: the least is in [turn - 1, turn]
        end = np.flatnonzero((turn == 0) | (turn == width))
        pick = np.where(turn[end] == 0, 0, width - 1)
        t[end], f[end] = fractions[end, pick], value[end, pick]
        grad[end] = every.gradient(share, total, width * end + pick)
        inner = np.flatnonzero((turn > 0) & (turn < width))
        if not len(inner):
            return t, f, grad
        k, right = inner, turn[inner]
        a, fa, da = fractions[k, right - 1], value[k, right - 1], first[k, right - 1]
        b, fb, db = fractions[k, right], value[k, right], first[k, right]
        least = np.argmin(value[k], axis=1)  # Newton from the least sample where it stays in the bracket
        ahead = fractions[k, least] - first[k, least] / np.maximum(second[k, least], 1e-12)
        start = np.where((ahead > a) & (ahead < b), ahead, _tangents_cross(a, fa, da, b, fb, db))
        rows = rows.take(inner)
        c, fc, share, total = _steps(rows, start, a, fa, da, b, fb, db, steps)
        t[inner], f[inner], grad[inner] = c, fc, rows.gradient(share, total, np.arange(len(inner)))
        return t, f, grad
    return search


def variant(name: str):
    """`fixed:STEPS` or `sampled:STEPS:SAMPLES` -> a _newton replacement."""
    kind, *numbers = name.split(":")
    if kind == "fixed":
        return fixed_search(None, int(numbers[0]))
    return fixed_search(np.linspace(0.0, 1.0, int(numbers[1])), int(numbers[0]))


def replay(calls: list, model, one: bool = False) -> list:
    """The calls' answers, as recorded or all queries in one call (each query's own `within`)."""
    if not one:
        return [hulls.capsule_to_smooth(p, h, model, e, r, w) for p, h, e, r, w in calls]
    joined = [np.concatenate([c[i] for c in calls]) for i in range(4)]
    within = np.concatenate([np.full(len(c[1]), c[4]) for c in calls])
    block, smooth.BLOCK = smooth.BLOCK, 1 << 30
    try:
        return [hulls.capsule_to_smooth(*joined[:2], model, joined[2], joined[3], within)]
    finally:
        smooth.BLOCK = block


def differences(calls: list, base: list, other: list) -> str:
    """The largest distance and gradient differences where either answer is within its call's reach."""
    gap = [np.concatenate([out[k] for out in outs]) for outs in (base, other) for k in (0, 3)]
    within = np.concatenate([np.full(len(c[1]), c[4]) for c in calls])
    near = (gap[0] < within) | (gap[2] < within)
    moved = gap[2][near] - gap[0][near]
    turned = np.abs(gap[3][near] - gap[1][near]).max(axis=1)
    return (f"distance - Newton's: max {moved.max():.2g} m, min {moved.min():.2g} m, over 1e-6 m {np.mean(np.abs(moved) > 1e-6):.1%}"
            f"; gradient max {turned.max():.2g}, over 1e-3 {np.mean(turned > 1e-3):.1%} ({near.sum()} within reach)")


def recorded(path: Path) -> tuple:
    """The G1's collision model (smooth trunk on) and the calls pickled at `path`."""
    if not hulls.smooth_trunk():
        sys.exit("set ROBOT_RETARGET_SMOOTH_TRUNK=1")
    model = collision_pairs(KinematicTree(parse_urdf(clips.ROBOTS["g1"]))).model
    with open(path, "rb") as stored:
        return model, pickle.load(stored)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("calls", type=Path, help="a pickle of bench/smooth_distance_ab.py --record")
    parser.add_argument("--variants", default="fixed:3,sampled:2:9,sampled:3:9")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--way", help="replay once this way and stop (many, one, none or a variant), for callgrind")
    args = parser.parse_args()
    model, calls = recorded(args.calls)
    newton = smooth._newton
    if args.way:
        if args.way not in ("many", "one", "none"):
            smooth._newton = variant(args.way)
        if args.way != "none":
            replay(calls, model, one=args.way == "one")
        return
    print(f"{len(calls)} calls, {sum(len(c[1]) for c in calls)} queries; load {open('/proc/loadavg').read().split()[:3]}")
    ways = {"Newton, as recorded": ("many", newton), "Newton, one call": ("one", newton)}
    ways.update({name: ("many", variant(name)) for name in args.variants.split(",")})
    best, outs = {}, {}
    for k in range(args.rounds):
        for name, (way, search) in (list(ways.items()) if k % 2 else list(ways.items())[::-1]):
            smooth._newton = search
            started = time.process_time()
            outs[name] = replay(calls, model, one=way == "one")
            best[name] = min(best.get(name, np.inf), time.process_time() - started)
    smooth._newton = newton
    base = outs["Newton, as recorded"]
    for name in ways:
        print(f"{name:22s} {best[name]:.3f} s CPU ({best[name] / best['Newton, as recorded']:.2f} x); "
              f"{differences(calls, base, outs[name])}")


if __name__ == "__main__":
    main()
