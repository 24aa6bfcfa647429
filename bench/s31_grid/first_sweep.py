"""Largest limb / wrist joint gap (rad) of the avoiding bake started FIRST = 1..9 frames later (frames over 0.3 s
from the cut), per robot and clip, contacts off: which of test_start_invariance's cuts the avoiding bake passes.

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 .venv/bin/python bench/s31_grid/first_sweep.py [g1|h1 ...]
"""
from pathlib import Path
import sys
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import numpy as np
from tests.core import test_start_invariance as T
from start_gap import _bake

if __name__ == "__main__":
    for robot in sys.argv[1:] or ["g1", "h1"]:
        for clip in ("walk", "hop"):
            motion, tree = T._motion(clip), T._tree(robot)
            whole = _bake(robot, clip, motion, True)
            row = {}
            for first in range(1, 10):
                index = np.arange(first, motion.frames)
                gap = T._apart(tree, _bake(robot, clip, motion.at_frames(index), True), whole[index],
                               T._inner(len(index), motion.fps, [0]))
                row[first] = (round(gap["limbs"][0], 4), round(gap.get("hands", (0.0,))[0], 3))
            print(robot, clip, row, flush=True)
