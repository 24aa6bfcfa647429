#!/usr/bin/env python3
"""Where the G1's avoiding bake binds, how much room the capsules cost against the meshes' hulls.

Bakes the walk and the hop with avoidance on and takes every frame on which a checked body pair's
proxies are within 2 cm (the 1 cm margin binds there). For each such pair: its frames, the mean proxy
distance, and the mean distance the meshes' convex hulls have there more (the slack a tighter
proxy would give back), split by side: the first body's capsules against the second's hull, and
the second's capsules against the first's hull (each the room that side's capsules alone cost).
A hull holds its mesh, so the slack is a lower bound of what the meshes allow. Lists pairs on at
least --least frames.

    .venv/bin/python bench/collision_slack.py [--least 30]
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

import clips  # noqa: E402  (puts the repository on the path)
from core.collision import collision_pairs  # noqa: E402
from core.collision.convex import core_distance  # noqa: E402
from core.collision.pairs import body_distances  # noqa: E402
from core.collision.proxies import body_mesh  # noqa: E402
from core.model.kinematics import KinematicTree  # noqa: E402
from core.model.urdf import parse_urdf  # noqa: E402
from core.retarget import auto_map, retarget  # noqa: E402

NEAR_M = 0.02  # a pair this close on its proxies is where the margin binds


def _placed(poses: dict, link: int, frames: np.ndarray, points: np.ndarray) -> np.ndarray:
    """(F, N, 3) points of a link's frame in the world on some frames."""
    pose = poses[link][frames]
    return np.einsum("fij,nj->fni", pose[:, :3, :3], points) + pose[:, None, :3, 3]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--least", type=int, default=30)
    args = parser.parse_args()
    tree = KinematicTree(parse_urdf(clips.ROBOTS["g1"]))
    pairs = collision_pairs(tree)
    model = pairs.model
    hulls = {}
    for body, link in enumerate(model.body_links):
        mesh = body_mesh(tree, link)
        if mesh is not None:
            hulls[body] = mesh.points[ConvexHull(mesh.points).vertices]

    def capsules_to(body: int, poses: dict, frames: np.ndarray, hull: np.ndarray) -> np.ndarray:
        link, best = model.body_links[body], np.full(len(frames), np.inf)
        for c in np.flatnonzero(model.capsule_body == body):
            best = np.minimum(best, core_distance(_placed(poses, link, frames, model.ends[c]), hull)[0] - model.radius[c])
        return best

    for name, path in (("walk", clips.WALK), ("hop", clips.HOP)):
        motion = clips.load(path)
        mapping = auto_map(motion, tree)
        mapping.settings = replace(mapping.settings, avoid_self_collision=True)
        q = retarget(motion, tree, mapping, contacts="auto").q
        dist = body_distances(tree, pairs, q, None, exact_below=2 * NEAR_M)  # (F, P); distances need no root
        poses = tree.poses(q, None, [int(link) for link in model.body_links])
        print(f"G1 {name}: pair, frames within {100 * NEAR_M:.0f} cm, proxy distance, hull slack (cm): "
              "both hulls, first's capsules, second's capsules")
        rows = []
        for k in range(len(pairs.bodies)):
            frames = np.flatnonzero(dist[:, k] < NEAR_M)
            a, b = (int(x) for x in pairs.bodies[k])
            if len(frames) < args.least or a not in hulls or b not in hulls:
                continue
            on_a = _placed(poses, model.body_links[a], frames, hulls[a])
            on_b = _placed(poses, model.body_links[b], frames, hulls[b])
            both = core_distance(on_a, on_b)[0]
            rows.append((len(frames), model.body_names[a], model.body_names[b], dist[frames, k].mean(),
                         (both - dist[frames, k]).mean(), (both - capsules_to(a, poses, frames, on_b)).mean(),
                         (both - capsules_to(b, poses, frames, on_a)).mean()))
        for count, first, second, proxy, slack, by_first, by_second in sorted(rows, reverse=True):
            print(f"  {first:22} {second:24} {count:4d}  {100 * proxy:5.2f}  {100 * slack:5.2f}  "
                  f"{100 * by_first:5.2f}  {100 * by_second:5.2f}")


if __name__ == "__main__":
    main()
