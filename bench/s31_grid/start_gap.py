"""Largest limb joint gap (rad; +Nh: the wrists') between a clip baked whole and started FIRST frames later, on the frames over 0.3 s
from the cut (tests/core/test_start_invariance.py's measure), contacts off, avoidance on; plus played twice and
ended 3 frames earlier. One whole bake per case, so a row costs 5-6 bakes.

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 .venv/bin/python bench/s31_grid/start_gap.py [g1|h1 ...] [--off] [module.NAME=value ...]
"""
from pathlib import Path
import sys, dataclasses
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import numpy as np
from tests.core import test_start_invariance as T


def _bake(robot, clip, motion, on):
    m = T._mapping(robot, clip)
    m = dataclasses.replace(m, settings=dataclasses.replace(m.settings, avoid_self_collision=on))
    return T.retarget(motion, T._tree(robot), m, contacts="off", figures=False).q


def row(robot, clip, on=True):
    motion, tree = T._motion(clip), T._tree(robot)
    whole = _bake(robot, clip, motion, on)
    out = {}
    for first in (1, 3, 4, 8):
        index = np.arange(first, motion.frames)
        cut = _bake(robot, clip, motion.at_frames(index), on)
        out[f"+{first}"] = round(T._apart(tree, cut, whole[index], T._inner(len(index), motion.fps, [0]))["limbs"][0], 4)
        out[f"+{first}h"] = round(T._apart(tree, cut, whole[index], T._inner(len(index), motion.fps, [0])).get("hands", (0.0,))[0], 3)
    index = np.arange(motion.frames - 3)
    cut = _bake(robot, clip, motion.at_frames(index), on)
    out["-3"] = round(T._apart(tree, cut, whole[index], T._inner(len(index), motion.fps, [len(index)]))["limbs"][0], 4)
    twice = _bake(robot, clip, motion.at_frames(np.concatenate([np.arange(motion.frames)] * 2)), on)
    keep = T._inner(motion.frames, motion.fps, [motion.frames])
    out["x2"] = round(max(T._apart(tree, twice[:motion.frames], whole, keep)["limbs"][0],
                          T._apart(tree, twice[motion.frames:], whole, T._inner(motion.frames, motion.fps, [0]))["limbs"][0]), 4)
    return out


if __name__ == "__main__":
    import importlib
    for a in [a for a in sys.argv[1:] if "=" in a]:  # module.NAME=value, e.g. core.chains.corrections.HOLD_AT_BOUND=True
        name, value = a.split("=")
        module, attr = name.rsplit(".", 1)
        setattr(importlib.import_module(module), attr, eval(value))
    robots = [a for a in sys.argv[1:] if not a.startswith("--") and "=" not in a] or ["g1", "h1"]
    for robot in robots:
        for clip in ("walk", "hop"):
            print(robot, clip, row(robot, clip, "--off" not in sys.argv), flush=True)
