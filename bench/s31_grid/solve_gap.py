"""Where the avoiding bake's solve (before keep_apart) of a clip started FIRST frames later parts from the whole
clip's: per cleared chain (pipeline._solve_cleared calls, in order), the largest gap on frames over 0.3 s from the
cut of its targets as cleared (m), its joints as solved (rad) and rate-limited (rad).

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 .venv/bin/python bench/s31_grid/solve_gap.py g1 hop 8 [module.NAME=value]
"""
from pathlib import Path
import sys, dataclasses, importlib
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import numpy as np
from tests.core import test_start_invariance as T
from core.retarget import pipeline as P

log = []
_solve_chain, _clearance_call = P.solve_chain, None


def logged_solve(tree, kin, anchor, q, goal, weights, step, max_step=None):
    log.append((f"goal {kin.chain.variables[:1]}", goal.reshape(len(goal), -1).copy()))
    _solve_chain(tree, kin, anchor, q, goal, weights, step, max_step)
    log.append((f"solved {kin.chain.variables[:1]}", q[:, kin.columns].copy()))


P.solve_chain = logged_solve
_mapping = T._mapping
T._mapping = lambda robot, clip: dataclasses.replace(_mapping(robot, clip), settings=dataclasses.replace(
    _mapping(robot, clip).settings, avoid_self_collision=True))

if __name__ == "__main__":
    for a in sys.argv[4:]:
        name, value = a.split("=")
        module, attr = name.rsplit(".", 1)
        setattr(importlib.import_module(module), attr, eval(value))
    robot, clip, first = sys.argv[1], sys.argv[2], int(sys.argv[3])
    count = T._motion(clip).frames
    log.clear(); T._bake(robot, clip, np.arange(count)); whole = list(log)
    log.clear(); T._bake(robot, clip, np.arange(first, count)); cut = list(log)
    keep = T._inner(count - first, T._motion(clip).fps, [0])
    for (name, a), (_, b) in zip(whole, cut):
        d = np.abs(a[first:] - b)[keep]
        if d.size and d.max() > 1e-3:
            print(f"{name:14s} max {d.max():.4f} at frame {first + np.flatnonzero(keep)[d.max(axis=1).argmax()]} col {d.max(axis=0).argmax()}")
