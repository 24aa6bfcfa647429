"""Where the avoiding bake of a clip played twice parts from the clip baked once: per room group (keep_apart's
separate_chains calls, in order), the largest gap (rad) on frames over 0.3 s from the ends and the seam, of the
shape, the sampled room and the steady room, for each copy; and whether each copy's sampled frames are the whole
clip's, the runs (frames inside) that cross the seam.

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 .venv/bin/python bench/s32_invar/twice_stages.py g1 hop [module.NAME=value ...]
"""
from pathlib import Path
import sys
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import numpy as np
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "s31_grid"))
import stage_gap as G  # noqa: E402  (its hooks record the stages)
from tests.core import test_start_invariance as T  # noqa: E402


if __name__ == "__main__":
    import importlib
    for a in sys.argv[3:]:
        name, value = a.split("=")
        module, attr = name.rsplit(".", 1)
        setattr(importlib.import_module(module), attr, eval(value))
    robot, clip = sys.argv[1], sys.argv[2]
    count, fps = T._motion(clip).frames, T._motion(clip).fps
    whole = G.run(robot, clip, np.arange(count))
    twice = G.run(robot, clip, np.r_[np.arange(count), np.arange(count)])
    keeps = [T._inner(count, fps, [count]), T._inner(count, fps, [0])]
    group = -1
    for (name, a), (_, b) in zip(whole, twice):
        if name == "samples":
            group += 1
            for copy in (0, 1):
                mine = b[(b >= copy * count) & (b < (copy + 1) * count)] - copy * count
                print(f"group {group} copy {copy} samples differ at", np.setxor1d(mine, a)[:12])
        elif name == "inside":
            f = np.flatnonzero(b > 0)
            print(f"group {group} inside at the seam:", f[(f > count - 10) & (f < count + 10)], "first/last inside whole:", np.flatnonzero(a > 0)[[0, -1]] if (a > 0).any() else None)
        else:
            for copy in (0, 1):
                d = np.abs(a - b[copy * count:(copy + 1) * count])[keeps[copy]]
                at = np.flatnonzero(keeps[copy])[d.max(axis=1).argmax()]
                print(f"  {name:8s} copy {copy} max {d.max():.4f} at frame {at} col {d.max(axis=0).argmax()}")
