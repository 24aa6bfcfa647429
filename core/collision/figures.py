"""The report's self-collision figures for a bake (frames colliding, the deepest overlap, the pairs
overlapping most) and the pairs a viewport highlights at one frame: exact body distances where a
pair may overlap, lower bounds elsewhere (core.collision.pairs). What keeps bodies apart while
solving is core.collision.avoid's.
"""
from __future__ import annotations

import numpy as np

from ..model.kinematics import KinematicTree
from ..motion.frames import frame_blocks
from .pairs import CollisionPairs, body_distances, pair_distances

PENETRATION_M = 0.005  # a frame collides when a checked pair overlaps deeper than this
TOP_PAIRS = 5  # the pairs overlapping on most frames the report lists


def collision_figures(tree: KinematicTree, pairs: CollisionPairs, q: np.ndarray, root: np.ndarray,
                      near: float = 0.0) -> dict:
    """The report's self-collision figures for a bake (q (F, n), root poses (F, 4, 4)); near:
    distances exact below this from the first look (a bake that kept pairs a margin apart has
    its closest pair there).

    self_collision_pct: frames where a checked pair overlaps deeper than PENETRATION_M;
    self_collision_worst: the deepest overlap (pair, depth_m >= 0, frame); self_collision_pairs:
    the pairs overlapping on most frames with their frame counts; self_collision_frames: those frames.
    """
    frames = len(q)
    closest, which, deep = _overlaps(tree, pairs, q, root, near)  # exact where bodies may overlap
    if frames and closest.min() >= near:  # nothing overlaps: the closest pair's distance exact too
        _closest_exact(tree, pairs, q, root, closest, which, max(2.0 * near, 0.01))
    hit = deep.any(axis=1)
    counts = deep.sum(axis=0)
    worst = {"pair": None, "depth_m": 0.0, "frame": None}
    if frames and np.isfinite(closest).any():
        f = int(np.argmin(closest))
        worst = {"pair": list(pairs.names(int(which[f]))), "depth_m": float(max(0.0, -closest[f])), "frame": f}
    order = [int(p) for p in np.argsort(-counts, kind="stable")[:TOP_PAIRS] if counts[p] > 0]
    return {"self_collision_pct": float(100.0 * hit.mean()) if frames else 0.0,
            "self_collision_worst": worst,
            "self_collision_pairs": [{"pair": list(pairs.names(p)), "frames": int(counts[p])} for p in order],
            "self_collision_frames": [int(f) for f in np.flatnonzero(hit)]}


def _closest_exact(tree, pairs, q, root, closest: np.ndarray, which: np.ndarray, start: float) -> None:
    """closest (F,), lower bounds where nothing overlaps, made exact where the least distance can
    be: exact distances below a reach that doubles until the least of them is within it (a pair
    whose bound is beyond the reach is further still), only on frames whose bound is below it."""
    reach = start
    while True:
        rows = np.flatnonzero(closest < reach)
        exact, pair, _ = _overlaps(tree, pairs, q[rows], root[rows], reach)
        if len(rows) and exact.min() < reach or reach > 1.0:
            closest[rows], which[rows] = exact, pair
            return
        reach *= 2.0


def _overlaps(tree, pairs, q, root, exact_below: float):
    """Per frame: the least body-pair distance (F,) and its pair (F,), and which pairs overlap
    deeper than PENETRATION_M (F, P); exact where a pair may be closer than `exact_below`."""
    closest = np.full(len(q), np.inf)
    which = np.zeros(len(q), dtype=int)
    deep = np.zeros((len(q), len(pairs.bodies)), dtype=bool)
    for block in frame_blocks(len(q)):
        dist = body_distances(tree, pairs, q[block], root[block], exact_below=exact_below)
        if dist.shape[1] == 0:
            break
        which[block], closest[block] = dist.argmin(axis=1), dist.min(axis=1)
        deep[block] = dist < -PENETRATION_M
    return closest, which, deep


def colliding_links(tree: KinematicTree, pairs: CollisionPairs, q: np.ndarray, root: np.ndarray,
                    depth: float = PENETRATION_M) -> list[tuple[str, str, float]]:
    """(link, link, depth m) of every checked pair overlapping deeper than `depth` in one pose
    (q (n,), root (4, 4)): what a viewport highlights at the current frame."""
    dist = pairs.body_distance(pair_distances(tree, pairs, q[None], root[None]))[0]
    return [(*pairs.names(int(p)), float(-dist[p])) for p in np.flatnonzero(dist < -depth)]
