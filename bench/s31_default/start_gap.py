"""Largest joint gap (rad, limbs / hands) between a clip baked whole and started FIRST frames later, on the frames
0.3 s from the cut (tests/core/test_start_invariance.py's measure), contacts off; avoidance off / on /
on with corrections.HOLD_AT_BOUND / on without the hands' target clearance.

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 .venv/bin/python bench/s31_default/start_gap.py
"""
from pathlib import Path
import sys, dataclasses
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import numpy as np
from tests.core import test_start_invariance as T
from core.chains import corrections
from core.retarget import pipeline

def gap(robot, clip, first, **changes):
    m = T._mapping(robot, clip)
    m = dataclasses.replace(m, settings=dataclasses.replace(m.settings, **changes))
    motion = T._motion(clip); tree = T._tree(robot)
    whole = T.retarget(motion, tree, m, contacts="off", figures=False)
    index = np.arange(first, motion.frames)
    cut = T.retarget(motion.at_frames(index), tree, m, contacts="off", figures=False)
    keep = T._inner(len(index), motion.fps, [0])
    return {k: (round(v[0], 4), v[1]) for k, v in T._apart(tree, cut.q, whole.q[index], keep).items()}

if __name__ == "__main__":
  for robot, clip in [(r, c) for r in ("h1", "g1") for c in ("walk", "hop")]:
      for first in (1, 3):
          row = {"off": gap(robot, clip, first, avoid_self_collision=False),
                 "on": gap(robot, clip, first, avoid_self_collision=True)}
          corrections.HOLD_AT_BOUND = True
          row["on+hold"] = gap(robot, clip, first, avoid_self_collision=True)
          corrections.HOLD_AT_BOUND = False
          pipeline.CLEAR_TARGETS = False
          row["on-clear"] = gap(robot, clip, first, avoid_self_collision=True)
          pipeline.CLEAR_TARGETS = True
          print(robot, clip, first, {k: v["limbs"] for k, v in row.items()}, flush=True)
