#!/usr/bin/env python3
"""The gait's first stage alone: the ordinary retarget it runs (figures=False), its CPU and its output's hash.

A change meant to keep the gait's bits must keep this stage's: the SHA-256 of the bake's q, root and its
unplanted copy is printed per robot, so two trees (or a change and the code before it) compare in seconds
instead of a whole gait. Also the plain bake (figures=True, the walk, contacts auto) with --bake.

    PYTHONHASHSEED=0 .venv/bin/python bench/gait_retarget_stage.py [--robot h1|g1] [--ten] [--bake] [--runs 3]
        [--package core] [--root /work/wtN]
    valgrind --tool=callgrind --callgrind-out-file=/tmp/cg.out .venv/bin/python bench/gait_retarget_stage.py \
        --robot h1 --ten --runs 1 --warm 0

--package/--root: another copy of core (a package directory's name and its parent), as bench/gait_cpu_pair.py.
--warm: runs before the timed ones (imports, caches), 1 by default; 0 under callgrind (the whole process counted).
"""
from __future__ import annotations

import argparse
import hashlib
import importlib
import os
import sys
import time
from pathlib import Path

for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):  # one core: before numpy loads BLAS
    os.environ[var] = "1"

HERE = Path(__file__).resolve().parent


def stage(package: str, robot: str, ten: bool, bake: bool):
    """A call that runs the gait's retarget (or with `bake` the ordinary bake) of gait_cpu_pair's clip."""
    from gait_cpu_pair import clip

    gait = importlib.import_module(package + ".balance.gait")
    retarget = importlib.import_module(package + ".retarget")
    walk, tree, mapping, contacts = clip(package, robot, ten)
    if bake:
        return lambda: retarget.retarget(walk, tree, mapping, contacts=contacts)

    def run():
        _, flags = gait._walkable(walk, mapping, contacts, [])
        return retarget.retarget(walk, tree, mapping, contacts=flags, figures=False)
    return run


def digest(result) -> str:
    """SHA-256 (first 16 hex digits) of the bake's q, root position and rotation, and its unplanted copy's."""
    h = hashlib.sha256()
    for bake in (result, result.unplanted):
        if bake is not None:
            for a in (bake.q, bake.root_position, bake.root_rotation):
                h.update(a.tobytes())
    return h.hexdigest()[:16]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--robot", default="h1", choices=("g1", "h1"))
    parser.add_argument("--ten", action="store_true", help="the 10 s clip instead of the walk")
    parser.add_argument("--bake", action="store_true", help="the ordinary bake (figures, contacts auto)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--warm", type=int, default=1)
    parser.add_argument("--package", default="core")
    parser.add_argument("--root", type=Path, default=HERE.parent)
    args = parser.parse_args()
    sys.path[:0] = [str(args.root), str(HERE)]
    run = stage(args.package, args.robot, args.ten, args.bake)
    for _ in range(args.warm):
        run()
    for k in range(args.runs):
        started = time.process_time()
        result = run()
        cpu = time.process_time() - started
        print(f"run {k} {args.package} {args.robot}{' ten' if args.ten else ''}{' bake' if args.bake else ''}: "
              f"{cpu:.3f} s CPU, {digest(result)}", flush=True)


if __name__ == "__main__":
    main()
