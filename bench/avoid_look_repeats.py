#!/usr/bin/env python3
"""Self-collision avoidance: how much of the looks' work is the same frame at the same joints again.

Every look of an avoidance-on bake (core.collision.avoid.SeparationTerm._near: posing, broad phase,
exact capsule distances) over some frames, counted by the stage that asked (the corrections' steps,
the first look of a pass, the steady room's depth checks and fixes, the detour windows, the legs) and
by how many of its frames were looked at before with the same joints and root to the bit (what a
memo per (frame, q) could spare; issue 17's speed target, docs/history/self_collision.md, session 22 s22-avoidcpu).

    .venv/bin/python bench/avoid_look_repeats.py [--robot g1] [--clips walk,hop]
"""
from __future__ import annotations

import argparse
import inspect
import os
import sys
from collections import Counter
from dataclasses import replace
from pathlib import Path

for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[var] = "1"

sys.path.insert(0, str(Path(__file__).resolve().parent))
import clips  # noqa: E402

from core.collision import avoid  # noqa: E402
from core.model.kinematics import KinematicTree  # noqa: E402
from core.model.urdf import parse_urdf  # noqa: E402
from core.retarget import auto_map, retarget  # noqa: E402

STAGES = ("_look", "_separate", "_violation", "_solve_window", "_solve_legs", "inside", "fix", "distance")


def _stage() -> str:
    """The innermost caller of a look named in STAGES, with the one that called it."""
    names = [frame.function for frame in inspect.stack()[2:12]]
    for k, name in enumerate(names):
        if name in STAGES:
            return f"{name} <- {names[k + 1]}" if k + 1 < len(names) else name
    return " <- ".join(names[:3])


def count(robot: str, clip: Path) -> None:
    """Print the looks of one avoidance-on bake (after a first bake that fills the caches)."""
    motion = clips.load(clip)
    tree = KinematicTree(parse_urdf(clips.ROBOTS[robot]))
    mapping = auto_map(motion, tree)
    mapping.settings = replace(mapping.settings, avoid_self_collision=True)
    retarget(motion, tree, mapping, contacts="auto")
    seen, calls, frames, again = set(), Counter(), Counter(), Counter()
    near = avoid.SeparationTerm._near

    def counting(self, q, root, *args, **kwargs):
        stage = _stage()
        calls[stage] += 1
        frames[stage] += len(q)
        for k in range(len(q)):
            key = (q[k].tobytes(), root[k].tobytes())
            again[stage] += key in seen
            seen.add(key)
        return near(self, q, root, *args, **kwargs)

    avoid.SeparationTerm._near = counting
    try:
        retarget(motion, tree, mapping, contacts="auto")
    finally:
        avoid.SeparationTerm._near = near
    print(f"{robot} {clip.stem}: looks, frames, frames at joints looked at before")
    for stage in sorted(frames, key=frames.get, reverse=True):
        print(f"  {calls[stage]:5d} {frames[stage]:7d} {again[stage]:6d}  {stage}")
    total, repeated = sum(frames.values()), sum(again.values())
    print(f"  total {total} frames, {repeated} again ({100.0 * repeated / max(total, 1):.1f} %)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--robot", default="g1")
    parser.add_argument("--clips", default="walk,hop")
    args = parser.parse_args()
    for name in args.clips.split(","):
        count(args.robot, {"walk": clips.WALK, "hop": clips.HOP}[name])


if __name__ == "__main__":
    main()
