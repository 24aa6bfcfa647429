"""Start gap (as start_gap.py) with the separation's sampled frames every frame (_sample_every -> 1), and with the
first cut a multiple of the stride (4 at 120 Hz).

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 .venv/bin/python bench/s31_default/grid_gap.py
"""
from pathlib import Path
import sys, dataclasses, time
sys.path.insert(0, str(Path(__file__).resolve().parents[2])); sys.path.insert(0, str(Path(__file__).parent))
from start_gap import gap
from core.chains import separation
for robot, clip in (("h1", "walk"), ("h1", "hop"), ("g1", "walk"), ("g1", "hop")):
    row = {f"grid4 first={f}": gap(robot, clip, f, avoid_self_collision=True)["limbs"] for f in (4, 8)}
    keep = separation._sample_every
    separation._sample_every = lambda fps, count: 1
    t = time.process_time()
    row.update({f"every-frame first={f}": gap(robot, clip, f, avoid_self_collision=True)["limbs"] for f in (1, 3)})
    separation._sample_every = keep
    print(robot, clip, row, f"{time.process_time() - t:.1f} s", flush=True)
