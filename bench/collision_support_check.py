#!/usr/bin/env python3
"""The meshes' separating-axis bound (core.collision.support) checked on the G1's avoiding bakes.

For the walk and the hop baked with avoidance on and the bound on (support.SUPPORT_BOUND, off by
default), every checked body pair of two meshed bodies whose capsules come within --reach on a frame
is measured three ways: the capsules (the bound off), the bound (what the looks and the report use)
and the exact distance of the bodies' full convex hulls (core.collision.convex.core_distance on every
hull vertex: a hull holds its mesh, so hulls apart means meshes apart). Prints the frames where the
hulls overlap at all (stricter than the report, which counts overlaps deeper than 5 mm), their least
distance, and per body pair binding on at least 30 frames (bound within 2 cm) the means over those
frames (cm): capsules / bound / hulls.

    .venv/bin/python bench/collision_support_check.py [--reach 0.03] [--clips walk,hop]
"""
from __future__ import annotations

import argparse
import os
import sys
from dataclasses import replace
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent))
import numpy as np  # noqa: E402
from scipy.spatial import ConvexHull  # noqa: E402

import clips  # noqa: E402
from core.collision import collision_pairs, support  # noqa: E402
from core.collision.figures import PENETRATION_M  # noqa: E402
from core.collision.convex import core_distance  # noqa: E402
from core.collision.pairs import body_distances  # noqa: E402
from core.collision.proxies import body_mesh  # noqa: E402
from core.model.kinematics import KinematicTree  # noqa: E402
from core.model.transforms import pose_matrices  # noqa: E402
from core.model.urdf import parse_urdf  # noqa: E402
from core.retarget import auto_map, retarget  # noqa: E402


def full_hulls(tree, model) -> dict:
    """Per meshed body: its mesh's convex hull vertices (V, 3) in its link's frame."""
    out = {}
    for body, link in enumerate(model.body_links):
        mesh = body_mesh(tree, link)
        if mesh is not None and not mesh.radii.any():
            out[body] = mesh.points[ConvexHull(mesh.points).vertices]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reach", type=float, default=0.03, help="capsule distance (m) below which a pair is measured")
    parser.add_argument("--clips", default="walk,hop")
    args = parser.parse_args()
    support.SUPPORT_BOUND = True
    tree = KinematicTree(parse_urdf(clips.ROBOTS["g1"]))
    pairs = collision_pairs(tree)
    model = pairs.model
    hulls = full_hulls(tree, model)
    for name in args.clips.split(","):
        motion = clips.load(clips.WALK if name == "walk" else clips.HOP)
        mapping = auto_map(motion, tree)
        mapping.settings = replace(mapping.settings, avoid_self_collision=True)
        result = retarget(motion, tree, mapping, contacts="auto")
        q, root = result.q, pose_matrices(result.root_rotation, result.root_position)
        capsules = body_distances(tree, pairs, q, root, exact_below=args.reach, support=False)
        bound = body_distances(tree, pairs, q, root, exact_below=args.reach)
        poses = tree.poses(q, root, [int(link) for link in model.body_links])
        overlap, least, lines = np.zeros(len(q), bool), np.inf, []
        for p, (a, b) in enumerate(pairs.bodies.tolist()):
            frames = np.flatnonzero(capsules[:, p] < args.reach)
            if not len(frames) or a not in hulls or b not in hulls:
                continue
            on = [np.einsum("fij,nj->fni", poses[model.body_links[x]][frames, :3, :3], hulls[x])
                  + poses[model.body_links[x]][frames, None, :3, 3] for x in (a, b)]
            exact, _, _, inside = core_distance(*on)
            overlap[frames[inside]] = True
            least = min(least, float(np.where(inside, 0.0, exact).min()))
            binding = bound[frames, p] < 0.02
            if binding.sum() >= 30:
                at = frames[binding]
                lines.append(f"    {model.body_names[a]}-{model.body_names[b]} ({binding.sum()} frames): "
                             f"{100 * capsules[at, p].mean():.2f} / {100 * bound[at, p].mean():.2f}"
                             f" / {100 * exact[binding].mean():.2f}")
        print(f"g1 {name}: frames where full hulls overlap {100 * overlap.mean():.2f} % (the report: "
              f"{100 * (bound < -PENETRATION_M).any(axis=1).mean():.2f} % deeper than 5 mm); least full-hull distance "
              f"{100 * least:.2f} cm; binding pairs (cm, capsules / bound / hulls):", flush=True)
        print("\n".join(lines), flush=True)


if __name__ == "__main__":
    main()
