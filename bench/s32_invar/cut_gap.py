"""The test's measure (tests/core/test_start_invariance.py: largest limb joint gap, rad, and the wrists', on frames over
0.3 s from a cut or seam, contacts off) of the avoiding bake of a clip cut against the whole clip's, for cuts given as
+N (started N frames later), -N (ended N frames earlier) or x2 (played twice).

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 .venv/bin/python bench/s32_invar/cut_gap.py g1 hop -1 -3 x2 [--off] [module.NAME=value ...]
"""
from pathlib import Path
import sys, dataclasses, importlib
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import numpy as np
from tests.core import test_start_invariance as T


def _bake(robot, clip, index, on):
    m = T._mapping(robot, clip)
    m = dataclasses.replace(m, settings=dataclasses.replace(m.settings, avoid_self_collision=on))
    return T.retarget(T._motion(clip).at_frames(index), T._tree(robot), m, contacts="off", figures=False).q


def gap(robot, clip, cut, whole, on=True):
    count, fps, tree = T._motion(clip).frames, T._motion(clip).fps, T._tree(robot)
    if cut == "x2":
        q = _bake(robot, clip, np.r_[np.arange(count), np.arange(count)], on)
        parts = [T._apart(tree, q[:count], whole, T._inner(count, fps, [count])),
                 T._apart(tree, q[count:], whole, T._inner(count, fps, [0]))]
        return {k: max(parts, key=lambda p: p[k][0])[k] for k in parts[0]}
    n = int(cut)
    index = np.arange(n, count) if n > 0 else np.arange(count + n)
    q = _bake(robot, clip, index, on)
    return T._apart(tree, q, whole[index], T._inner(len(index), fps, [0] if n > 0 else [len(index)]))


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if "=" not in a and a != "--off"]
    for a in sys.argv[1:]:
        if "=" in a:
            name, value = a.split("=")
            module, attr = name.rsplit(".", 1)
            setattr(importlib.import_module(module), attr, eval(value))
    on = "--off" not in sys.argv
    robot, clip, cuts = args[0], args[1], args[2:]
    whole = _bake(robot, clip, np.arange(T._motion(clip).frames), on)
    for cut in cuts:
        g = gap(robot, clip, cut, whole, on)
        print(f"{robot} {clip} {cut:>3s}: limbs {g['limbs'][0]:.4f} ({g['limbs'][1]})  hands {g.get('hands', (0, ''))[0]:.3f}", flush=True)
