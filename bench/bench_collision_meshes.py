#!/usr/bin/env python3
"""Self-collision checked against the meshes: how many frames of the G1's walk and hop really
overlap, and the least arm-direction change that keeping the arms out of the body needs.

For every `--step`-th frame of a bake (avoidance off and on), each checked pair whose capsules
overlap is tested on the bodies' convex hulls: the depth of each hull's vertices inside the
other hull (a lower estimate of the penetration depth). A frame counts when some pair overlaps
deeper than 5 mm, as the report's self_collision_pct does with the capsules. The bound: where
an elbow or wrist body (which only the arm's joints move; a hand the wrist can turn away is
left out) is inside another body's hull by d at distance L from the shoulder, the arm must
turn by at least atan(d / L); averaged over frames and the four limbs, that is the least rise
of limb_direction_error_deg avoidance can cost, before any margin.

    .venv/bin/python bench/bench_collision_meshes.py [--step 2]
"""
from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
from scipy.spatial import ConvexHull

sys.path.insert(0, str(Path(__file__).resolve().parent))
import clips  # noqa: E402
from core.collision import collision_pairs  # noqa: E402
from core.collision.figures import PENETRATION_M  # noqa: E402
from core.collision.pairs import pair_distances  # noqa: E402
from core.collision.proxies import body_geometry  # noqa: E402
from core.model.kinematics import KinematicTree  # noqa: E402
from core.model.transforms import pose_matrices  # noqa: E402
from core.model.urdf import parse_urdf  # noqa: E402
from core.retarget import auto_map, retarget  # noqa: E402

ARM_BODIES = ("elbow", "wrist_roll", "wrist_pitch")  # moved by the arm's joints, not turned away by the wrist


def hulls(tree, model) -> dict:
    """Per body: its hull's vertices (K, 3) and face planes (H, 4) in the body link's frame."""
    out = {}
    for body, link in enumerate(model.body_links):
        points, radii, _ = body_geometry(tree, link)
        if points is not None and len(points) > 4 and not radii.any():
            hull = ConvexHull(points)
            out[body] = (points[hull.vertices], hull.equations)
    return out


def depth_in(hull_of: tuple, points: np.ndarray) -> tuple[float, int]:
    """How deep (m) the deepest of the points lies inside a hull (<= 0: outside), and which."""
    inside = -(points @ hull_of[1][:, :3].T + hull_of[1][:, 3]).max(axis=1)
    k = int(np.argmax(inside))
    return float(inside[k]), k


def check(tree, pairs, shapes, q, root, frames) -> tuple[float, float, dict]:
    """(% frames the capsules overlap > 5 mm, % frames the hulls do, {side: mean arm angle needed})."""
    model = pairs.model
    proxy = pairs.body_distance(pair_distances(tree, pairs, q[frames], root[frames]))
    hull_hit = np.zeros(len(frames), bool)
    needed = {side: np.zeros(len(frames)) for side in ("left", "right")}
    shoulders = {side: tree.link_index(f"{side}_shoulder_pitch_link") for side in needed}
    for i, f in enumerate(frames):
        poses = tree.poses(q[f:f + 1], root[f:f + 1], list(model.body_links) + list(shoulders.values()))
        for p in np.flatnonzero(proxy[i] < 0.0):
            a, b = pairs.bodies[p]
            if a not in shapes or b not in shapes:
                continue
            pose = {x: poses[model.body_links[x]][0] for x in (a, b)}
            for inner, outer in ((a, b), (b, a)):
                rel = np.linalg.inv(pose[outer]) @ pose[inner]
                d, k = depth_in(shapes[outer], shapes[inner][0] @ rel[:3, :3].T + rel[:3, 3])
                hull_hit[i] |= d > PENETRATION_M
                name, other = model.body_names[inner], model.body_names[outer]
                side = name.split("_")[0]
                if d > 0 and side in needed and any(arm in name for arm in ARM_BODIES) \
                        and not other.startswith(side + "_"):
                    point = pose[inner][:3, :3] @ shapes[inner][0][k] + pose[inner][:3, 3]
                    reach = np.linalg.norm(point - poses[shoulders[side]][0, :3, 3])
                    needed[side][i] = max(needed[side][i], np.degrees(np.arctan2(d, reach)))
    return 100 * (proxy < -PENETRATION_M).any(axis=1).mean(), 100 * hull_hit.mean(), needed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--step", type=int, default=2, help="check every n-th frame")
    args = parser.parse_args()
    tree = KinematicTree(parse_urdf(clips.ROBOTS["g1"]))
    pairs = collision_pairs(tree)
    shapes = hulls(tree, pairs.model)
    for name, path in (("walk", clips.WALK), ("hop", clips.HOP)):
        motion = clips.load(path)
        mapping = auto_map(motion, tree)
        for avoid in (False, True):
            mapping.settings = replace(mapping.settings, avoid_self_collision=avoid)
            result = retarget(motion, tree, mapping, contacts="auto")
            root = pose_matrices(result.root_rotation, result.root_position)
            frames = np.arange(0, len(result.q), args.step)
            proxy_pct, hull_pct, needed = check(tree, pairs, shapes, result.q, root, frames)
            line = (f"g1 {name:<4} avoid {'on ' if avoid else 'off'}: frames overlapping > 5 mm: capsules "
                    f"{proxy_pct:.1f} %, hulls {hull_pct:.1f} %")
            if not avoid:
                bound = sum(v.mean() for v in needed.values()) / 4
                line += (f"; arms inside the body on {100 * (needed['left'] > 0).mean():.0f} / "
                         f"{100 * (needed['right'] > 0).mean():.0f} % of frames (left / right), least limb "
                         f"error rise to keep them out {bound:.2f} deg")
            print(line, flush=True)


if __name__ == "__main__":
    main()
