#!/usr/bin/env python3
"""The collision-proxy fit (core.collision.proxies.fit_model, no disk cache; the separating-axis bound's
support hulls, fitted on their first use since session 30, left out) on the G1 and the H1:
CPU seconds of a first fit (mesh files read included: the meshes' hulls the process keeps are
dropped before each call; the least of --repeats calls, the machine being shared), and per body
the capsule count, the mean excess over its hull (how much further the capsules reach than
the hull, averaged over the fit's directions: what a pair's distance is short of) and, for a
body with meshes, the volume its capsules fill against that of the whole hull's fit (the
capsules fitted to the mesh in parts, core.collision.parts, against those of its hull).

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

from core.collision.fit import fit_capsules, hull_excess  # noqa: E402
from core.collision.parts import union_volumes  # noqa: E402
from core.collision.proxies import body_geometry, body_mesh, fit_model  # noqa: E402
from core.feet.geometry import _hull  # noqa: E402  (the process's mesh hulls, dropped before each fit)
from core.model.kinematics import KinematicTree  # noqa: E402
from core.model.urdf import parse_urdf  # noqa: E402

ROBOTS = {"g1": ROOT / "data/robots/g1/unitree_g1_29dof.urdf", "h1": ROOT / "tests/data/robots/unitree_h1_19dof.urdf"}
TOLERANCE_M = 0.0005


def excess_table(tree: KinematicTree, model) -> tuple[dict, dict]:
    """{body: (capsules, mean excess over its hull in metres)} for the bodies fitted to geometry;
    {body: (volume its capsules fill, volume the whole hull's fit fills), m^3} for those with meshes."""
    out = {}
    volumes = {}
    for body, link in enumerate(model.body_links):
        points, radii, _ = body_geometry(tree, link)
        if points is None:
            continue
        rows = np.flatnonzero(model.capsule_body == body)
        capsules = [(model.ends[c, 0], model.ends[c, 1], model.radius[c]) for c in rows]
        out[model.body_names[body]] = (len(rows), hull_excess(capsules, points, radii))
        mesh = body_mesh(tree, link)
        if mesh is not None:
            volumes[model.body_names[body]] = union_volumes([capsules, fit_capsules(mesh.points, mesh.radii)])
    return out, volumes


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
        excess_of, volumes = excess_table(tree, model)
        for body, (count, excess) in excess_of.items():
            key = f"{name}/{body}"
            table[key] = np.array([count, excess])
            line = f"  {body:32s} {count} capsules, excess {excess * 1e3:5.2f} mm"
            if body in volumes:
                line += f", fill {volumes[body][0] * 1e6:5.0f} cm3 (hull's fit {volumes[body][1] * 1e6:5.0f})"
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
