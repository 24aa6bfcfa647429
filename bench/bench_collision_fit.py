#!/usr/bin/env python3
"""The collision-proxy fit (core.collision.proxies.fit_model, no disk cache) on the G1 and the H1:
CPU seconds of a first fit (mesh files read included: the meshes' hulls the process keeps are
dropped before each call; the least of --repeats calls, the machine being shared), and per body
the capsule count and the mean excess over its hull (how much further the capsules reach than
the hull, averaged over the fit's directions: what a pair's distance is short of).

    .venv/bin/python bench/bench_collision_fit.py [--repeats 5] [--save table.npz] [--against table.npz]

--save keeps the per-body table; --against compares with a saved one (a faster fit must stay
within 0.5 mm of the excess it replaces).
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[var] = "1"
os.environ["ROBOT_RETARGET_CACHE"] = ""  # fit afresh, whatever is on disk

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
import numpy as np  # noqa: E402

from core.collision.fit import hull_excess  # noqa: E402
from core.collision.proxies import body_geometry, fit_model  # noqa: E402
from core.feet.geometry import _hull  # noqa: E402  (the process's mesh hulls, dropped before each fit)
from core.model.kinematics import KinematicTree  # noqa: E402
from core.model.urdf import parse_urdf  # noqa: E402

ROBOTS = {"g1": ROOT / "data/robots/g1/unitree_g1_29dof.urdf", "h1": ROOT / "tests/data/robots/unitree_h1_19dof.urdf"}
TOLERANCE_M = 0.0005


def excess_table(tree: KinematicTree, model) -> dict[str, tuple[int, float]]:
    """{body: (capsules, mean excess over its hull in metres)} for the bodies fitted to geometry."""
    out = {}
    for body, link in enumerate(model.body_links):
        points, radii, _ = body_geometry(tree, link)
        if points is None:
            continue
        rows = np.flatnonzero(model.capsule_body == body)
        capsules = [(model.ends[c, 0], model.ends[c, 1], model.radius[c]) for c in rows]
        out[model.body_names[body]] = (len(rows), hull_excess(capsules, points, radii))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--save", type=Path)
    parser.add_argument("--against", type=Path)
    args = parser.parse_args()
    saved = dict(np.load(args.against)) if args.against else {}
    table, worse = {}, []
    for name, path in ROBOTS.items():
        tree = KinematicTree(parse_urdf(path))
        spent = []
        for _ in range(args.repeats):
            _hull.cache_clear()
            started = time.process_time()
            model = fit_model(tree)
            spent.append(time.process_time() - started)
        print(f"{name}: fit {min(spent):.2f} s CPU (least of {args.repeats}; median {np.median(spent):.2f} s), "
              f"{len(model.radius)} capsules on {len(model.body_links)} bodies")
        for body, (count, excess) in excess_table(tree, model).items():
            key = f"{name}/{body}"
            table[key] = np.array([count, excess])
            line = f"  {body:32s} {count} capsules, excess {excess * 1e3:5.2f} mm"
            if key in saved:
                was = saved[key]
                line += f"  (was {int(was[0])}, {was[1] * 1e3:5.2f} mm)"
                if excess > was[1] + TOLERANCE_M:
                    worse.append(key)
            print(line)
    if args.save:
        np.savez(args.save, **table)
    if args.against:
        print("excess within 0.5 mm of the saved fit on every body" if not worse else f"looser: {', '.join(worse)}")


if __name__ == "__main__":
    main()
