"""Capsules fitted to a body's mesh in parts, not to its convex hull.

A hull fills a body's concavities (the torso's waist under its shoulders, where the hands
hang). Split into a few compact parts (k-means on the triangles' centroids, each triangle
whole in one part), each part's hull is covered as a hull is (core.collision.fit); of the
whole hull's fit and every split's, the capsules that fill the least volume, a capsule
charged as SPLIT_CAPSULE_COST_M of excess over the hull's surface, and a split only where its
capsules reach no further beyond the hull (averaged over directions) than the whole's, or
fill less than SPLIT_TIGHTER of its volume (pieces far apart).
Each triangle lies in its part's hull, inside that part's capsules: the union of the parts'
capsules still holds the whole mesh (conservative).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
from scipy.spatial import ConvexHull, QhullError

from .fit import body_frame, first_least, fit_capsules, hull_excess

MAX_PARTS = 3  # parts a body's mesh is split into, at most (4 chose the same G1 capsules, 1.7 times the fit's time)
SPLIT_CAPSULE_COST_M = 0.003  # a capsule's charge, as excess over the hull's surface. At 1 mm the hands took
# 8 capsules (83 on the G1): with avoidance 0.2 / 0.4 % of the walk's / hop's frames collided, not 0.1 / 0.3
PART_CAPSULES = 3  # capsules per part when split
SPLIT_TIGHTER = 0.5  # a split filling under this share of the whole fit's volume is taken even if it reaches further
GRID_STEPS = 24  # grid points along each axis of the box the volumes are counted in
_KMEANS_ROUNDS = 30


@dataclass
class BodyMesh:
    """A body's geometry in its link's frame: mesh triangles, and solid shapes (spheres, boxes,
    cylinders) that are never split."""

    points: np.ndarray  # (P, 3) metres
    radii: np.ndarray  # (P,) metres, 0 but for sphere centres
    triangles: np.ndarray  # (T, 3) rows of points
    solid: np.ndarray  # (P,) the solid shape a point belongs to, -1 for a mesh vertex


def fit_body(mesh: BodyMesh) -> list[tuple]:
    """[(end a (3,), end b (3,), radius)] covering the body's mesh: the whole hull's fit or the
    parts' of a split, whichever fills least volume (SPLIT_CAPSULE_COST_M charged per capsule)
    without reaching further beyond the hull. Chosen in the body's own frame (fit.body_frame: the
    excess's directions and the volumes' grid turn with the body), so the link's frame does not
    decide."""
    if not len(mesh.triangles):
        return fit_capsules(mesh.points, mesh.radii)
    centre, frame = body_frame(mesh.points)
    local = dataclasses.replace(mesh, points=(mesh.points - centre) @ frame.T)
    return [(a @ frame + centre, b @ frame + centre, r) for a, b, r in _fit_body_in_frame(local)]


def _fit_body_in_frame(mesh: BodyMesh) -> list[tuple]:
    whole = fit_capsules(mesh.points, mesh.radii)
    candidates = [whole] + [_fit_parts(mesh, labels) for labels in _splits(mesh)]
    volume = union_volumes(candidates)
    area = _hull_area(mesh.points)
    reach = np.array([hull_excess(c, mesh.points, mesh.radii) for c in candidates])
    # a split that bulges further out than the whole's fit is no tighter where it counts, unless it
    # fills far less: pieces apart (two brackets on one link) have a hull mostly of air between them
    volume[(reach > reach[0]) & (volume > SPLIT_TIGHTER * volume[0])] = np.inf
    cost = volume / area + SPLIT_CAPSULE_COST_M * np.array([len(c) - 1 for c in candidates])
    return candidates[first_least(cost)]


def union_volumes(candidates: list[list[tuple]]) -> np.ndarray:
    """The volume (m^3) each set of capsules fills, counted on one grid around them all."""
    every = [c for capsules in candidates for c in capsules]
    ends = np.array([[a, b] for a, b, _ in every])  # (C, 2, 3)
    radius = np.array([r for _, _, r in every])
    low = (ends.min(axis=1) - radius[:, None]).min(axis=0)
    high = (ends.max(axis=1) + radius[:, None]).max(axis=0)
    # cells of equal volume, but no more than GRID_STEPS^2 along the longest side: a line of capsules
    # without radius (a mesh of slivers) has no volume to share out
    step = max(float(np.prod(high - low) / GRID_STEPS ** 3) ** (1 / 3), float(np.max(high - low)) / GRID_STEPS ** 2)
    axes = [np.arange(lo + step / 2, hi, step) for lo, hi in zip(low, high)]
    grid = np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).reshape(-1, 3)
    held = capsules_hold(grid, ends, radius)  # (C, G)
    first = np.cumsum([0] + [len(c) for c in candidates[:-1]])
    return np.logical_or.reduceat(held, first, axis=0).sum(axis=1) * step ** 3


def capsules_hold(points: np.ndarray, ends: np.ndarray, radius: np.ndarray) -> np.ndarray:
    """(C, N) whether each capsule (ends (C, 2, 3), radius (C,)) holds each point (N, 3)."""
    axis = ends[:, 1] - ends[:, 0]  # (C, 3)
    length2 = np.maximum(np.einsum("ci,ci->c", axis, axis), 1e-18)
    offset = points[None] - ends[:, None, 0]  # (C, N, 3)
    share = np.clip(np.einsum("cni,ci->cn", offset, axis) / length2[:, None], 0.0, 1.0)
    gap = offset - share[..., None] * axis[:, None]
    return np.einsum("cni,cni->cn", gap, gap) <= radius[:, None] ** 2


def _fit_parts(mesh: BodyMesh, labels: np.ndarray) -> list[tuple]:
    """The capsules of each part's hull; labels (T + solids,): each triangle's part, then each
    solid's."""
    triangles = len(mesh.triangles)
    solid_part = np.append(labels[triangles:], -1)[mesh.solid]  # each point's part through its solid; -1 none
    out = []
    for part in np.unique(labels):
        rows = np.union1d(mesh.triangles[labels[:triangles] == part].ravel(),
                          np.flatnonzero(solid_part == part))
        out += fit_capsules(mesh.points[rows], mesh.radii[rows], PART_CAPSULES)
    return out


def _splits(mesh: BodyMesh) -> list[np.ndarray]:
    """Each triangle's and solid's part (T + solids,) for 2 to MAX_PARTS parts: k-means on the
    triangles' centroids weighted by their area (a few big faces outweigh fine detail), a solid
    going whole to the part nearest its middle."""
    corners = mesh.points[mesh.triangles]  # (T, 3, 3)
    centres = corners.mean(axis=1)
    area = 0.5 * np.linalg.norm(np.cross(corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0]), axis=1)
    # every triangle counts a little (a sliver still belongs to a part); all slivers count alike
    weight = area + 1e-12 * area.max() if area.max() > 0 else np.ones(len(area))
    solids = mesh.solid.max() + 1
    middles = np.array([mesh.points[mesh.solid == s].mean(axis=0) for s in range(solids)]).reshape(-1, 3)
    out = []
    for count in range(2, MAX_PARTS + 1):
        seeds = _kmeans(centres, weight, count)
        if len(seeds) < count:
            break
        out.append(np.concatenate([_nearest(centres, seeds), _nearest(middles, seeds)]))
    return out


def _kmeans(points: np.ndarray, weight: np.ndarray, count: int) -> np.ndarray:
    """`count` cluster centres (K, 3) of the weighted points (Lloyd's rounds from farthest-point
    seeds: no random start, the same body always splits the same way); fewer when parts empty."""
    mean = np.average(points, axis=0, weights=weight)
    seeds = [points[np.argmax(np.einsum("ni,ni->n", points - mean, points - mean))]]
    for _ in range(1, count):
        gap = np.min([np.einsum("ni,ni->n", points - s, points - s) for s in seeds], axis=0)
        seeds.append(points[np.argmax(gap)])
    seeds, labels = np.array(seeds), None
    for _ in range(_KMEANS_ROUNDS):
        previous, labels = labels, _nearest(points, seeds)
        if previous is not None and np.array_equal(labels, previous):
            break  # the same parts: the same centres
        mass = np.bincount(labels, weight, minlength=count)
        if (mass <= 0).any():
            return seeds[mass > 0]
        seeds = np.stack([np.bincount(labels, weight * points[:, i], minlength=count) for i in range(3)], -1)
        seeds /= mass[:, None]
    return seeds


def _nearest(points: np.ndarray, seeds: np.ndarray) -> np.ndarray:
    """(N,) the nearest seed of each point (|p - s|^2 less the |p|^2 all seeds share)."""
    return np.argmin(np.einsum("ki,ki->k", seeds, seeds) - 2.0 * points @ seeds.T, axis=1)


def _hull_area(points: np.ndarray) -> float:
    """The points' hull's surface (m^2): what a volume of excess is spread over."""
    try:
        return float(ConvexHull(points).area)
    except (QhullError, ValueError):
        return float(max(np.ptp(points, axis=0).max(), 1e-3) ** 2)
