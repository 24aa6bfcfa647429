"""Where (seconds) the G1 / H1 bake started FIRST frames later leaves the whole clip's bake, avoidance on.

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 .venv/bin/python bench/s31_default/where_gap.py
"""
from pathlib import Path
import sys, dataclasses
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import numpy as np
from tests.core import test_start_invariance as T
for robot, clip, first in (("g1", "hop", 3), ("g1", "walk", 1), ("h1", "walk", 1)):
    m = T._mapping(robot, clip); motion = T._motion(clip); tree = T._tree(robot)
    whole = T.retarget(motion, tree, m, contacts="off", figures=False)
    index = np.arange(first, motion.frames)
    cut = T.retarget(motion.at_frames(index), tree, m, contacts="off", figures=False)
    dq = np.abs(cut.q - whole.q[index]).max(axis=1)
    bad = np.flatnonzero(dq > 0.005)
    runs = np.split(bad, np.flatnonzero(np.diff(bad) > 1) + 1) if len(bad) else []
    print(robot, clip, first, f"{len(bad)} of {len(index)} frames > 0.005 rad; runs (s):",
          [(round(r[0] / motion.fps, 2), round(r[-1] / motion.fps, 2), round(float(dq[r].max()), 3)) for r in runs][:12])
