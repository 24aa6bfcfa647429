#!/usr/bin/env python3
"""Self-collision avoidance: the switch and detour windows (core/chains/switches.py, _solve_window) of the G1's
avoiding bakes (hop and walk with planted feet, the hop without), captured from one bake each with the code of
CAPTURE_ROOT, replayed with each ROOT's switches.py, interleaved (the order reversed every round), least CPU of
N a window, one BLAS thread, and a hash of each window's answer (the same hash: the same bits).

    .venv/bin/python bench/avoid_windows_ab.py CAPTURE_ROOT ROOT[,ROOT...] [N]
    e.g. .venv/bin/python bench/avoid_windows_ab.py . .,/tmp/before 5
"""
from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
import time
from dataclasses import replace

for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[var] = "1"


def main() -> None:
    capture, roots, rounds = sys.argv[1], sys.argv[2].split(","), int(sys.argv[3]) if len(sys.argv) > 3 else 7
    sys.path[:0] = [capture, capture + "/bench"]
    import numpy as np

    import clips
    import core.chains.switches as switches
    from core.model.kinematics import KinematicTree
    from core.model.urdf import parse_urdf
    from core.retarget import auto_map, retarget

    tree = KinematicTree(parse_urdf(clips.ROBOTS["g1"]))
    calls, solve = [], switches._solve_window

    def captured(problem, separation, x, frames, *args, **kwargs):
        calls.append((problem, separation, x.copy(), frames, args, kwargs))
        solve(problem, separation, x, frames, *args, **kwargs)

    switches._solve_window = captured
    for clip, contacts in (("hop", "auto"), ("walk", "auto"), ("hop", None)):
        motion = clips.load(clips.WALK if clip == "walk" else clips.HOP)
        mapping = auto_map(motion, tree)
        mapping.settings = replace(mapping.settings, avoid_self_collision=True)
        retarget(motion, tree, mapping, contacts=contacts)
    switches._solve_window = solve
    modules = []
    for k, root in enumerate(roots):
        spec = importlib.util.spec_from_file_location(f"core.chains.switches_{k}", root + "/core/chains/switches.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        modules.append(module)
    best = [[np.inf] * len(calls) for _ in modules]
    hashes = [[""] * len(calls) for _ in modules]
    for round_ in range(rounds):
        order = list(enumerate(modules))
        for m, module in order if round_ % 2 == 0 else order[::-1]:
            for i, (problem, separation, x, frames, args, kwargs) in enumerate(calls):
                y = x.copy()
                started = time.process_time()
                module._solve_window(problem, separation, y, frames, *args, **kwargs)
                best[m][i] = min(best[m][i], time.process_time() - started)
                hashes[m][i] = hashlib.md5(y.tobytes()).hexdigest()[:8]
    print("window (frames)   " + "   ".join(f"{root:>22}" for root in roots) + "   (least ms, answer's hash)")
    for i, call in enumerate(calls):
        print(f"{i:2d} ({len(call[3]):2d} frames)     "
              + "   ".join(f"{1e3 * best[m][i]:9.2f} ms {hashes[m][i]}" for m in range(len(modules))))
    print("total             " + "   ".join(f"{1e3 * sum(best[m]):12.1f} ms" for m in range(len(modules))))


if __name__ == "__main__":
    main()
