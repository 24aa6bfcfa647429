"""Capsules fitted to a body's convex hull: split greedily where a split saves the most volume.

A flat torso or a wide pelvis in one capsule is a sphere-swept line as thick as the body
is wide: a hand reads 5-8 cm deep in it while the mesh is clear. Each split cuts one piece
of the hull in two across one of its principal axes; each half is wrapped by its thinnest
capsule. A capsule is convex, so covering a piece's hull vertices and the points where its
edges cross the cut covers the whole piece: the capsules contain the meshes.
"""
from __future__ import annotations

from itertools import combinations

import numpy as np
from scipy.spatial import ConvexHull, QhullError

MAX_CAPSULES = 6  # per body
CAPSULE_COST_M = 0.001  # a further capsule must cut the mean excess by this much to be worth its distances
_DIRECTIONS = 64  # directions the excess over the hull is averaged over


def fit_capsules(points: np.ndarray, radii: np.ndarray, most: int = MAX_CAPSULES) -> list[tuple]:
    """[(end a (3,), end b (3,), radius)] covering the convex hull of the points (spheres of
    `radii` around them): the hull cut into 1 to `most` equal slabs across one of its principal
    axes, each slab wrapped by its thinnest capsule along one principal axis; the set whose
    excess over the hull is least (the mean, over directions, of how much further the capsules
    reach than the hull: what a pair's distance is short of), CAPSULE_COST_M per extra capsule."""
    points, radii, edges = _hull_piece(points, radii)
    held = _support(points, radii)
    axes = _principal_axes(points)
    best, best_cost = None, np.inf
    for k, cut in enumerate(axes):
        along = points @ cut
        for count in range(1 if k == 0 else 2, most + 1):  # one slab is the same whatever the cut
            bounds = np.linspace(along.min(), along.max(), count + 1)
            slabs = [_slab(points, radii, edges, along, lo, hi) for lo, hi in zip(bounds[:-1], bounds[1:])]
            for axis in axes:
                capsules = [_fit_on_axis(*slab, axis) for slab in slabs]
                reach = np.max([_reach(c) for c in capsules], axis=0)
                cost = float(np.mean(reach - held)) + CAPSULE_COST_M * (count - 1)
                if cost < best_cost:
                    best, best_cost = capsules, cost
        if len(points) < 2:
            break
    return best


def _hull_piece(points: np.ndarray, radii: np.ndarray) -> tuple:
    """(points, radii, edges): the hull's vertices (every sphere kept) and its edges."""
    if len(points) >= 5 and not radii.any():
        try:
            hull = ConvexHull(points)
        except QhullError:
            return points, radii, _hull_edges(points)
        keep = hull.vertices
        index = np.full(len(points), -1)
        index[keep] = np.arange(len(keep))
        simplices = index[hull.simplices]
        pairs = np.concatenate([simplices[:, [0, 1]], simplices[:, [1, 2]], simplices[:, [0, 2]]])
        return points[keep], radii[keep], np.unique(np.sort(pairs, axis=1), axis=0)
    return points, radii, _hull_edges(points)


def _sphere_directions(count: int) -> np.ndarray:
    """Unit vectors (count, 3) spread evenly over the sphere (a Fibonacci lattice)."""
    k = np.arange(count) + 0.5
    z = 1.0 - 2.0 * k / count
    angle = np.pi * (1.0 + 5 ** 0.5) * k
    return np.column_stack([np.sqrt(1.0 - z * z) * np.cos(angle), np.sqrt(1.0 - z * z) * np.sin(angle), z])


_UNIT = _sphere_directions(_DIRECTIONS)


def _reach(capsule: tuple) -> np.ndarray:
    """How far the capsule reaches along each direction (D,), metres."""
    a, b, radius = capsule
    return np.maximum(_UNIT @ a, _UNIT @ b) + radius


def _support(points: np.ndarray, radii: np.ndarray) -> np.ndarray:
    """How far the hull reaches along each direction (D,), metres."""
    return (points @ _UNIT.T + radii[:, None]).max(axis=0)


def _principal_axes(points: np.ndarray) -> np.ndarray:
    if len(points) < 2:
        return np.eye(3)
    _, _, axes = np.linalg.svd(points - points.mean(axis=0), full_matrices=False)
    if len(axes) < 3:
        return np.vstack([axes, np.cross(*axes[:2])[None] if len(axes) == 2 else np.eye(3)[:3 - len(axes)]])[:3]
    return axes


def _hull_edges(points: np.ndarray) -> np.ndarray:
    """(E, 2) index pairs: the convex hull's edges, or every pair for a few or flat points."""
    if len(points) >= 5:
        try:
            simplices = ConvexHull(points).simplices
            pairs = np.concatenate([simplices[:, [0, 1]], simplices[:, [1, 2]], simplices[:, [0, 2]]])
            return np.unique(np.sort(pairs, axis=1), axis=0)
        except QhullError:
            pass
    if len(points) > 200:  # flat and large: thin it, every vertex is still covered
        return np.zeros((0, 2), dtype=int)
    return np.array(list(combinations(range(len(points)), 2)), dtype=int).reshape(-1, 2)


def _slab(points, radii, edges, along, lo, hi):
    """The hull's part between two cuts: its vertices in the slab and where its edges cross the cuts."""
    span = 1e-9 * max(float(np.ptp(along)), 1e-12)
    inside = (along >= lo - span) & (along <= hi + span)
    pts, rad = [points[inside]], [radii[inside]]
    a, b = edges[:, 0], edges[:, 1]
    for cut in (lo, hi):
        if not np.isfinite(cut):
            continue
        cross = (along[a] - cut) * (along[b] - cut) < 0
        if cross.any():
            ia, ib = a[cross], b[cross]
            share = (cut - along[ia]) / (along[ib] - along[ia])
            pts.append(points[ia] + share[:, None] * (points[ib] - points[ia]))
            rad.append(np.maximum(radii[ia], radii[ib]))
    return np.concatenate(pts), np.concatenate(rad)


def _fit_on_axis(points: np.ndarray, radii: np.ndarray, axis: np.ndarray) -> tuple:
    """The thinnest capsule along `axis` holding every point with its radius: the axis through
    the centre of the smallest circle around the points seen along it, ends pulled in as far as
    the end caps still hold every point."""
    side = np.linalg.svd(axis[None])[2][1:]  # two unit vectors across the axis
    flat = points @ side.T  # (K, 2)
    rim = _outline(flat, radii)
    centre = 0.5 * (flat[rim].min(axis=0) + flat[rim].max(axis=0))
    for step in range(1, 28):  # Badoiu-Clarkson: walk toward the farthest point, ever shorter steps
        far = rim[np.argmax(np.hypot(*(flat[rim] - centre).T) + radii[rim])]
        centre = centre + (flat[far] - centre) / (step + 1)
    across = np.linalg.norm(flat - centre, axis=1)
    radius = float((across + radii).max())
    along = points @ axis
    reach = np.sqrt(np.clip((radius - radii) ** 2 - across ** 2, 0.0, None))
    lo, hi = float((along + reach).min()), float((along - reach).max())
    if lo > hi:  # shorter than wide: one sphere will do
        lo = hi = 0.5 * (lo + hi)
        radius = float((np.sqrt((along - lo) ** 2 + across ** 2) + radii).max())
    base = side.T @ centre
    return base + lo * axis, base + hi * axis, radius


def _outline(flat: np.ndarray, radii: np.ndarray) -> np.ndarray:
    """Indices of the points that can be farthest from a centre: the 2D hull's, and every sphere."""
    if len(flat) < 8:
        return np.arange(len(flat))
    try:
        rim = ConvexHull(flat).vertices
    except QhullError:
        return np.arange(len(flat))
    return np.union1d(rim, np.flatnonzero(radii > 0))


def _volume(capsule: tuple) -> float:
    a, b, radius = capsule
    return np.pi * radius ** 2 * float(np.linalg.norm(b - a)) + 4.0 / 3.0 * np.pi * radius ** 3
