"""Where the avoiding bake of a clip started FIRST frames later parts from the whole clip's: per room group
(keep_apart's separate_chains calls, in order), the largest gap (rad) on frames over 0.3 s from the cut of
the shape (the frames' answer before any room), the sampled room (_sampled_apart, interpolated) and the steady
room (the group's result); and whether the sampled frames are the same frames of the motion.

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 .venv/bin/python bench/s31_grid/stage_gap.py g1 hop 1  (-3: ended 3 frames earlier)
"""
from pathlib import Path
import sys, dataclasses
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import numpy as np
from tests.core import test_start_invariance as T
from core.chains import separation as S

log = []
_sampled, _steady, _anch = S._sampled_apart, S._steady, S._anchored_samples


def sampled(problem, separation, shape, max_step, every):
    out = _sampled(problem, separation, shape, max_step, every)
    log.append(("shape", shape.copy())); log.append(("sampled", out.copy()))
    return out


def steady(problem, separation, x, shape, max_step, fps):
    out = _steady(problem, separation, x, shape, max_step, fps)
    log.append(("steady", out[0].copy()))  # _steady gives (x, depth)
    return out


def anchored(inside, every):
    out = _anch(inside, every)
    log.append(("samples", out)); log.append(("inside", inside.copy()))
    return out


S._sampled_apart, S._steady, S._anchored_samples = sampled, steady, anchored
_mapping = T._mapping
T._mapping = lambda robot, clip: dataclasses.replace(_mapping(robot, clip), settings=dataclasses.replace(
    _mapping(robot, clip).settings, avoid_self_collision=True))


def run(robot, clip, index):
    log.clear()
    T._bake(robot, clip, index)
    return list(log)


if __name__ == "__main__":
    import importlib
    for a in sys.argv[4:]:  # --set-like: module.NAME=value
        name, value = a.split("=")
        module, attr = name.rsplit(".", 1)
        setattr(importlib.import_module(module), attr, eval(value))
    robot, clip, first = sys.argv[1], sys.argv[2], int(sys.argv[3])
    count = T._motion(clip).frames
    whole = run(robot, clip, np.arange(count))
    end = first < 0  # FIRST < 0: the clip ended -FIRST frames earlier
    cut = run(robot, clip, np.arange(count + first) if end else np.arange(first, count))
    keep = T._inner(count + first, T._motion(clip).fps, [count + first]) if end else T._inner(count - first, T._motion(clip).fps, [0])
    first = 0 if end else first
    for (name, a), (_, b) in zip(whole, cut):
        if name == "samples":
            mine = a[(a >= first) & (a < first + len(keep))] - first
            print("samples same:", np.array_equal(mine[mine > 40], b[b > 40]), "differ at", np.setxor1d(mine, b)[:12])
        elif name == "inside":
            print("inside differ at", np.flatnonzero(a[first:first + len(b)] != b)[:12])
        else:
            d = np.abs(a[first:first + len(b)] - b)[keep]
            print(f"{name:8s} max {d.max():.4f} at frame {first + np.flatnonzero(keep)[d.max(axis=1).argmax()]} col {d.max(axis=0).argmax()}")
    for name, a in whole[:0]:
        if name == "inside":
            f = np.flatnonzero(a)
            if len(f):
                starts = np.flatnonzero(np.diff(f, prepend=-99) > 1)
                print("runs (first, last):", [(int(f[s]), int(f[e - 1])) for s, e in zip(starts, list(starts[1:]) + [len(f)])])
