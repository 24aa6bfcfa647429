#!/usr/bin/env python3
"""Which of a gait's calls repeat an earlier call's inputs (issue 12's speed: work that could be skipped
with the same bits)?

    .venv/bin/python bench/gait_repeats.py [--robot h1|g1] [--ten] [--lateral-solver highs|interior]

One gait with this tree's core, every wrapped call's arguments and the state it reads (CALLS: the
corrector's height, plan and solved waist rotations, the rolled waist's last placement, the goals and
contacts) hashed to the bit; per function: its calls, how many had an earlier call's inputs, and the CPU
(time.process_time) of all and of those. Objects that are neither arrays, containers nor plain values
count by identity, so a call on another such object is never a repeat.
"""
from __future__ import annotations

import argparse
import functools
import hashlib
import importlib
import os
import sys
import time
from collections import defaultdict
from pathlib import Path

for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):  # one core: before numpy loads BLAS
    os.environ[var] = "1"

import numpy as np  # noqa: E402

HERE = Path(__file__).resolve().parent


def _corrector(c) -> tuple:
    return (c.height, c.base_rot, c.root_rot, None if c.family is None else c.family.params, c.goals, c.down,
            c.tilt_kept, c.level_tol)


# (module under core, attribute path, what of the instance the call reads besides its arguments; None: a function)
CALLS = [("balance.correction", "Corrector." + name, _corrector)
         for name in ("solve", "_legs", "fit_height", "standing", "centre_of_mass", "lateral_range",
                      "solve_standing", "track")] + [
    ("balance.correction", "Corrector.zmp", lambda c: (c.root_rot, c.period)),
    ("balance.sagittal", "SagittalWaist.place", lambda w: (w.params, w.planned)),
    ("balance.sagittal", "SagittalWaist.leaning", lambda w: (w.planned,)),
    ("balance.sagittal", "SagittalWaist._residual", lambda w: (w.planned,)),
    ("balance.correction", "solve_legs", None), ("balance.correction", "follow_zmp", None),
    ("balance.margin", "margins", None), ("balance.margin", "foot_points", lambda c: (c.root_rot,)),
    ("balance.gait", "roll_trailing_feet", None), ("balance.gait", "_onto_feet", None),
    ("balance.plan", "step_bounds", None), ("balance.plan", "foot_path", None),
    ("retarget.pipeline", "plant_feet", None), ("retarget.pipeline", "solve_chains", None),
    ("feet.plant", "_solve_legs", None), ("feet.plant", "_solve_leg", None), ("feet.plant", "_first_root", None),
    ("feet.plant", "_Check.body_depth", lambda c: (c.links,)), ("feet.plant", "_Check.root_change", lambda c: (c.links,)),
]


def digest(h, x) -> None:
    """Feed x's value to the hash h: arrays by dtype, shape and bytes; containers item by item."""
    if isinstance(x, np.ndarray):
        h.update(str((x.dtype, x.shape)).encode())
        h.update(np.ascontiguousarray(x).tobytes())
    elif isinstance(x, dict):
        for k in sorted(x, key=repr):
            h.update(repr(k).encode())
            digest(h, x[k])
    elif isinstance(x, (list, tuple)):
        h.update(b"(")
        for item in x:
            digest(h, item)
        h.update(b")")
    elif x is None or isinstance(x, (int, float, bool, str, slice, np.generic)):
        h.update(repr(x).encode())
    else:
        h.update(f"{type(x).__qualname__}@{id(x)}".encode())


def watch(owner, name: str, label: str, state, stats: dict, seen: dict) -> None:
    """Wrap owner.name: each call's inputs (and state(instance) for a method) hashed, its CPU added up."""
    call = getattr(owner, name)

    @functools.wraps(call)
    def wrapped(*args, **kwargs):
        h = hashlib.blake2b(digest_size=16)
        digest(h, [list(args[1:]), kwargs, state(args[0])] if state is not None else [list(args), kwargs])
        key = h.digest()
        started = time.process_time()
        out = call(*args, **kwargs)
        spent = time.process_time() - started
        row = stats[label]
        row[0] += 1
        row[2] += spent
        if key in seen[label]:
            row[1] += 1
            row[3] += spent
        seen[label].add(key)
        return out
    setattr(owner, name, wrapped)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--robot", default="h1", choices=("g1", "h1"))
    parser.add_argument("--ten", action="store_true", help="the 10 s clip (the walk held) instead of the walk")
    parser.add_argument("--lateral-solver", choices=("highs", "interior"))
    args = parser.parse_args()
    sys.path[:0] = [str(HERE.parent), str(HERE)]
    from gait_cpu_pair import runner

    stats: dict = defaultdict(lambda: [0, 0, 0.0, 0.0])
    seen: dict = defaultdict(set)
    for module, path, state in CALLS:
        owner = importlib.import_module("core." + module)
        *outer, name = path.split(".")
        for part in outer:
            owner = getattr(owner, part)
        if hasattr(owner, name):
            watch(owner, name, path, state, stats, seen)
    runner("core", args.robot, args.ten, args.lateral_solver)()
    print(f"{'call':34s} {'calls':>6s} {'repeats':>8s} {'CPU s':>8s} {'of repeats':>11s}")
    for label, (calls, repeats, spent, again) in sorted(stats.items(), key=lambda kv: -kv[1][2]):
        print(f"{label:34s} {calls:6d} {repeats:8d} {spent:8.3f} {again:11.3f}")


if __name__ == "__main__":
    main()
