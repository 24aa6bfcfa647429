#!/usr/bin/env python3
"""The least change's dual sweeps (core.chains.dual) in the G1 walk and hop bakes with avoidance on: every
sweep call's rows captured, then timed on both paths (numpy's sweeps, the Python floats'), least of 3, checked
the same bits over two or more frames; the sweeps' total for each FLOAT_ENTRIES a bake could use.

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 .venv/bin/python bench/dual_paths.py
"""
from __future__ import annotations

import sys
import timeit
from dataclasses import replace
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

import clips  # noqa: E402
from core.chains import dual  # noqa: E402
from core.model.kinematics import KinematicTree  # noqa: E402
from core.model.urdf import parse_urdf  # noqa: E402
from core.retarget import auto_map, retarget  # noqa: E402


def main() -> None:
    captured = []
    arrays, floats = dual._sweep_arrays, dual._sweep_floats
    dual._sweep_arrays = lambda rows, sweeps: (captured.append(rows.copy()), arrays(rows, sweeps))[1]
    dual._sweep_floats = lambda rows, sweeps: (captured.append(rows.copy()), floats(rows, sweeps))[1]
    tree = KinematicTree(parse_urdf(clips.ROBOTS["g1"]))
    for name, clip in (("walk", clips.WALK), ("hop", clips.HOP)):
        captured.clear()
        motion = clips.load(clip)
        mapping = auto_map(motion, tree)
        mapping.settings = replace(mapping.settings, avoid_self_collision=True)
        retarget(motion, tree, mapping)
        on_arrays, on_floats, entries = [], [], []
        for rows in captured:
            number = 3 if rows.size < 20000 else 1
            on_arrays.append(min(timeit.repeat(lambda: arrays(rows, 24), number=number, repeat=3)) / number)
            on_floats.append(min(timeit.repeat(lambda: floats(rows, 24), number=number, repeat=3)) / number)
            entries.append(rows.shape[0] * rows.shape[2])
            if rows.shape[2] > 1:
                assert np.array_equal(arrays(rows, 24), floats(rows, 24))
        on_arrays, on_floats, entries = map(np.array, (on_arrays, on_floats, entries))
        print(f"{name}: {len(entries)} calls, the cheaper path each {1e3 * np.minimum(on_arrays, on_floats).sum():.1f} ms")
        for limit in (64, 128, 192, 256, 384, 512):
            total = np.where(entries <= limit, on_floats, on_arrays).sum()
            print(f"  FLOAT_ENTRIES {limit:4d}: sweeps {1e3 * total:.1f} ms")


if __name__ == "__main__":
    main()
