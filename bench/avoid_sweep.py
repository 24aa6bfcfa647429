#!/usr/bin/env python3
"""Where the avoidance's room jumps between two close inputs: a clip's first 240 frames and the same
clip in an A-pose rest (its inputs to separate_chains differ by the BVH text's precision), the room
made by each arm group at inputs mixed 0, 1/steps, ..., 1 of the way (HOLD_AT_BOUND on, as
tests/core/test_steady_continuity.py and test_invariance_avoidance.py). Prints each step's largest
change (rad, frame, column); with --bisect, narrows the largest jump of the first group (the left arm)
to 1e-10 of the way and names the first stage of the separate stage whose answers there part
(the sampled passes, the steady room's fixes and detours, the polish). A continuous room moves by about
its input's step; a jump is a decision (a threshold, a count, an order) that flips.

    [ROBOT_RETARGET_SMOOTH_TRUNK=1] .venv/bin/python bench/avoid_sweep.py [--clip walk|hop] [--steps 20]
        [--descent] [--bisect]
"""
from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import tempfile
from pathlib import Path

for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[var] = "1"
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from core.chains import corrections, separation  # noqa: E402
from core.model.kinematics import KinematicTree  # noqa: E402
from core.model.urdf import parse_urdf  # noqa: E402
from core.motion.bvh import load_bvh  # noqa: E402
from core.retarget import pipeline  # noqa: E402
from core.retarget.automap import auto_map  # noqa: E402
from tests import variants as V  # noqa: E402
from tests.core.test_invariance import ARMS, G1, WALK, _short  # noqa: E402
from tests.core.test_invariance_avoidance import HOP  # noqa: E402

STAGES = ("_separate", "room_in_time", "solve_switches", "_steady", "descend_room", "polish_room", "steady_gain")


def captured(clip_path: Path) -> dict:
    """{name: [every separate_chains call's arguments]} of the original's and the A-pose's bakes."""
    tree = KinematicTree(parse_urdf(G1))
    clip = _short(load_bvh(clip_path))
    found: dict = {}
    solve = pipeline.separate_chains

    def capture(tree, chains, q, term, options, max_step, fps, name):
        if term is not None:
            found.setdefault(name, []).append((tree, [tuple(np.copy(c) if isinstance(c, np.ndarray) else c for c in ch)
                                                      for ch in chains], q.copy(), term.separation, term.variables,
                                               term.root.copy(), options, max_step, fps))
        solve(tree, chains, q, term, options, max_step, fps)
    with tempfile.TemporaryDirectory() as folder:
        for name, changed in (("original", clip), ("A-pose", V.arms_posed(clip, ARMS, 45.0))):
            motion = load_bvh(V.write_bvh(changed, Path(folder) / f"{name}.bvh")).to_source_motion()
            mapping = auto_map(motion, tree)
            mapping.settings = dataclasses.replace(mapping.settings, avoid_self_collision=True)
            pipeline.separate_chains = lambda *a, n=name: capture(*a, n)
            try:
                pipeline.retarget(motion, tree, mapping)
            finally:
                pipeline.separate_chains = solve
    return found


def room(found: dict, group: int, t: float) -> np.ndarray:
    """The group's columns (F, V) of the room made from inputs t of the way (arrays mixed linearly)."""
    a, b = found["original"][group], found["A-pose"][group]

    def mix(u, v):
        return u + t * (v - u) if isinstance(u, np.ndarray) and u.dtype.kind == "f" else u
    tree, chains, q, apart, variables, root, options, max_step, fps = a
    chains = [tuple(mix(u, v) for u, v in zip(ca, cb)) for ca, cb in zip(chains, b[1])]
    q = mix(q, b[2])
    separation.separate_chains(tree, chains, q, apart.term(variables, mix(root, b[5])), options, max_step, fps)
    return q[:, np.concatenate([chain[0].columns for chain in a[1]])]


def staged(found: dict, group: int, t: float) -> list:
    """[(stage, its answer)] in the order the separate stage returns them at t."""
    record, saved = [], {}
    for name in STAGES:
        saved[name] = function = getattr(separation, name)

        def wrapped(*args, _name=name, _function=function, **kwargs):
            out = _function(*args, **kwargs)
            record.append((_name, np.array(out[0] if isinstance(out, tuple) else out)))
            return out
        setattr(separation, name, wrapped)
    try:
        room(found, group, t)
    finally:
        for name, function in saved.items():
            setattr(separation, name, function)
    return record


def bisect(found: dict, a: float, b: float) -> None:
    """Narrow the jump between a and b to 1e-10 of the way; print where the stages first part."""
    ra, rb = room(found, 0, a), room(found, 0, b)
    while b - a > 1e-10:
        m = 0.5 * (a + b)
        rm = room(found, 0, m)
        if np.abs(rm - ra).max() >= np.abs(rb - rm).max():
            b, rb = m, rm
        else:
            a, ra = m, rm
    print(f"the jump: {np.abs(rb - ra).max():.4f} rad between t = {a!r} and {b!r}")
    for (name, x), (other, y) in zip(staged(found, 0, a), staged(found, 0, b)):
        apart = np.abs(x - y).max() if x.shape == y.shape else np.inf
        print(f"  {name:<15} {apart:.3g}" + ("" if name == other else f" (the other: {other})"))
        if apart > 1e-3 or name != other:
            break


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clip", choices=("walk", "hop"), default="walk")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--descent", action="store_true", help="the descended polish on (POLISH_ROOM, POLISH_DESCENT)")
    parser.add_argument("--bisect", action="store_true", help="narrow the left arm's largest jump and name its stage")
    args = parser.parse_args()
    corrections.HOLD_AT_BOUND = True
    separation.POLISH_ROOM = separation.POLISH_DESCENT = args.descent
    found = captured(WALK if args.clip == "walk" else HOP)
    ts = np.linspace(0.0, 1.0, args.steps + 1)
    for group in range(len(found["original"])):
        rooms = [room(found, group, t) for t in ts]
        steps = [np.abs(y - x) for x, y in zip(rooms, rooms[1:])]
        for t, step in zip(ts, steps):
            frame, column = np.unravel_index(step.argmax(), step.shape)
            print(f"group {group} t {t:.3f} -> {t + ts[1]:.3f}: {step.max():.3g} rad (frame {frame}, column {column})")
        largest = int(np.argmax([s.max() for s in steps]))
        print(f"group {group}: largest step {steps[largest].max():.3g} rad, end to end "
              f"{np.abs(rooms[-1] - rooms[0]).max():.3g}", flush=True)
        if group == 0 and args.bisect:
            bisect(found, ts[largest], ts[largest + 1])


if __name__ == "__main__":
    main()
