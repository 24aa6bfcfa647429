"""A smooth convex proxy for a flat trunk body: a soft maximum of planes around its mesh.

Capsules are round where the G1's pelvis and torso are flat (they held the arm up to 27 mm
further out than the meshes need); the meshes' hulls are tight but their distance is not smooth
(an arm inside is pushed out along whichever face needs least, and the room made jumped between
close inputs: docs/history/self_collision.md, session 17). This proxy is the set {f <= level} of

    f(p) = SHARP_M * log(sum_i exp(phi_i(x_i) / SHARP_M)),   x_i = n_i . p - h_i,

planes (n_i, h_i) supporting the mesh (h_i = max over its vertices of n_i . v), with

    phi_i(x) = a_i x + (1 - a_i) * SOFT_M * log(1 + exp(x / SOFT_M)),   a_i = h_least / h_i'

(h_i' the plane's offset from the mesh's centre): x itself outside the plane, a_i x deep inside,
so deep inside every plane weighs by how far across the body it is and the level sets shrink to
the centre as scaled copies (the way out varies smoothly; no medial plane to fall either side of).
Every phi_i has slope in [a_i, 1], so f is 1-Lipschitz: f(p) - level is a lower bound of p's
distance to the set, and the level is f's largest value on the mesh's vertices (f is convex, so
the set holds every triangle): the proxy holds the mesh and never reports a pair further apart
than it is. A capsule's distance to it: f's least along the capsule's axis (one convex unknown,
a bracketed Newton search), less the level and the capsule's radius.
"""
from __future__ import annotations

import numpy as np
from scipy.spatial import ConvexHull, HalfspaceIntersection, QhullError

SHARP_M = 0.002  # how far the planes' soft maximum rounds an edge (m): the faces' fat grows with it (SHARP_M log 3 at a corner)
SOFT_M = 0.001  # how far across a plane its slope turns from a_i to 1 (m)
PLANE_TOLERANCE_M = 0.001  # planes are added until no corner of theirs is further outside the mesh's hull
PLANES = 64  # planes at most (padded to this with planes that never count)
NEWTON_STEPS = 14  # the search along a capsule's axis (bracketed: halves the bracket when Newton leaves it)
_FAR = 1e3  # a padding plane's offset (m): exp(-FAR / SHARP_M) is 0


def box_directions() -> np.ndarray:
    """The 26 directions of a cube's faces, edges and corners (unit, (26, 3))."""
    steps = np.array([(i, j, k) for i in (-1, 0, 1) for j in (-1, 0, 1) for k in (-1, 0, 1) if (i, j, k) != (0, 0, 0)])
    return steps / np.linalg.norm(steps, axis=1, keepdims=True)


def plane_normals(points: np.ndarray) -> np.ndarray:
    """Unit normals (M, 3) of planes that bound the points' hull tightly: the cube's 26 directions,
    then greedily the hull facet that cuts deepest the corner of the planes' polytope farthest
    outside the hull, until none is PLANE_TOLERANCE_M outside or there are PLANES."""
    hull = ConvexHull(points)
    facets = hull.equations  # (T, 4): outward normal, offset (n . x + e <= 0 inside)
    normals = box_directions()
    centre = points[hull.vertices].mean(axis=0)
    while len(normals) < PLANES:
        offset = (points @ normals.T).max(axis=0)
        corners = HalfspaceIntersection(np.hstack([normals, -offset[:, None]]), centre).intersections
        outside = corners @ facets[:, :3].T + facets[:, 3]  # (K, T)
        worst = np.unravel_index(np.argmax(outside), outside.shape)
        if outside[worst] <= PLANE_TOLERANCE_M:
            break
        normals = np.vstack([normals, facets[worst[1], :3]])
    return normals


def fit_smooth(points: np.ndarray) -> dict | None:
    """The smooth proxy of a body's mesh vertices (N, 3) in its link's frame: planes (PLANES, 4)
    (normal, offset; padded), slopes a_i (PLANES,), the level, the centre (3,) and the corners
    (K, 3) of the polytope that bounds the set (for its bounding capsule); None for a flat set."""
    try:
        normals = plane_normals(points)
    except (QhullError, ValueError):
        return None
    centre = 0.5 * (points.max(axis=0) + points.min(axis=0))
    offset = (points @ normals.T).max(axis=0)
    across = offset - normals @ centre  # > 0: the centre is inside every plane
    if (across <= 1e-6).any():
        return None
    planes = np.zeros((PLANES, 4))
    planes[:, 2], planes[:, 3] = 1.0, _FAR
    planes[:len(normals), :3], planes[:len(normals), 3] = normals, offset
    slope = np.ones(PLANES)
    slope[:len(normals)] = across.min() / across
    level = float(soft_value(points, planes, slope)[0].max())
    # f >= max_i x_i (each phi_i(x) >= x), so the set lies within the planes moved out by the level
    halfspaces = np.hstack([normals, -(offset + level)[:, None]])
    try:
        corners = HalfspaceIntersection(halfspaces, centre).intersections
    except QhullError:
        return None
    return {"planes": planes, "slope": slope, "level": level, "centre": centre, "corners": corners}


def soft_value(p: np.ndarray, planes: np.ndarray, slope: np.ndarray, direction: np.ndarray | None = None):
    """f at points p (K, 3) for planes (K or 1, M, 4) and slopes (K or 1, M): f (K,), its gradient
    (K, 3) and, given a direction d (K, 3), f's first and second derivative along it (K,)."""
    x = np.einsum("kmi,ki->km", planes[..., :3], p) - planes[..., 3] if planes.ndim == 3 else \
        p @ planes[:, :3].T - planes[:, 3]
    z = np.clip(x / SOFT_M, -50.0, 50.0)
    soft = SOFT_M * np.logaddexp(0.0, z)
    rise = 0.5 * (1.0 + np.tanh(0.5 * z))  # the softplus' slope: the logistic of z
    phi = slope * x + (1.0 - slope) * soft
    top = phi.max(axis=-1, keepdims=True)
    weight = np.exp((phi - top) / SHARP_M)
    total = weight.sum(axis=-1, keepdims=True)
    f = top[..., 0] + SHARP_M * np.log(total[..., 0])
    weight /= total
    dphi = slope + (1.0 - slope) * rise  # (K, M) phi_i' in [a_i, 1]
    normals = planes[..., :3] if planes.ndim == 3 else planes[None, :, :3]
    grad = np.einsum("km,kmi->ki", weight * dphi, np.broadcast_to(normals, weight.shape + (3,)))
    if direction is None:
        return f, grad
    along = np.einsum("kmi,ki->km", np.broadcast_to(normals, weight.shape + (3,)), direction)  # n_i . d
    s = dphi * along
    first = (weight * s).sum(axis=-1)
    curve = (1.0 - slope) * rise * (1.0 - rise) / SOFT_M  # phi_i''
    second = (weight * curve * along ** 2).sum(axis=-1) + ((weight * s ** 2).sum(axis=-1) - first ** 2) / SHARP_M
    return f, grad, first, second


def segment_least(a: np.ndarray, b: np.ndarray, planes: np.ndarray, slope: np.ndarray) -> np.ndarray:
    """Where (K,) on each segment a-b ((K, 3) each) f is least, as a fraction from a: f is convex
    along it, so its slope is increasing; a bracketed Newton search on the slope's zero."""
    d = b - a
    count = len(a)
    lo, hi = np.zeros(count), np.ones(count)
    t = np.full(count, 0.5)
    start = soft_value(a, planes, slope, d)[2]
    end = soft_value(b, planes, slope, d)[2]
    at_a, at_b = start >= 0.0, end <= 0.0
    for _ in range(NEWTON_STEPS):
        _, _, first, second = soft_value(a + t[:, None] * d, planes, slope, d)
        lo, hi = np.where(first < 0.0, t, lo), np.where(first < 0.0, hi, t)
        step = t - first / np.where(second > 1e-12, second, 1e-12)
        t = np.where((step > lo) & (step < hi), step, 0.5 * (lo + hi))
    return np.where(at_a, 0.0, np.where(at_b, 1.0, t))


def frame_points(centre: np.ndarray) -> np.ndarray:
    """Four points (4, 3) in the body's frame (its centre and a unit step along each axis) that,
    placed in the world like a hull's vertices, give the body's pose back (local_frame)."""
    return centre + np.vstack([np.zeros(3), np.eye(3)])


def local_frame(placed: np.ndarray, centre: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The rotation (K, 3, 3) and translation (K, 3) (link to world) of frame_points placed in the
    world (K, 4, 3) for a body whose centre is `centre` (K, 3) in its frame."""
    turn = np.swapaxes(placed[:, 1:] - placed[:, :1], 1, 2)  # columns: the axes in the world
    return turn, placed[:, 0] - np.einsum("kij,kj->ki", turn, centre)


def capsule_to_smooth(placed: np.ndarray, centre: np.ndarray, planes: np.ndarray, slope: np.ndarray,
                      level: np.ndarray, ends: np.ndarray, radius: np.ndarray):
    """Signed distances (K,) from capsules (world axis ends (K, 2, 3), radii (K,)) to smooth proxies
    (their frame_points placed in the world (K, 4, 3), centres (K, 3), planes (K, M, 4), slopes
    (K, M), levels (K,)): a lower bound of the Euclidean distance, negative inside (no deeper than
    the overlap); the nearest point on each capsule's axis (K, 3), a point on the proxy's surface
    (K, 3) and the unit normal (K, 3) from the proxy toward the capsule (f's gradient)."""
    turn, shift = local_frame(placed, centre)
    local = np.einsum("kji,kej->kei", turn, ends - shift[:, None])  # R^T (x - t)
    t = segment_least(local[:, 0], local[:, 1], planes, slope)
    point = local[:, 0] + t[:, None] * (local[:, 1] - local[:, 0])
    f, grad = soft_value(point, planes, slope)
    normal = grad / np.maximum(np.linalg.norm(grad, axis=1, keepdims=True), 1e-12)
    gap = f - level
    surface = point - gap[:, None] * normal
    to_world = np.einsum("kij,kj->ki", turn, normal)
    return (gap - radius, np.einsum("kij,kj->ki", turn, point) + shift, np.einsum("kij,kj->ki", turn, surface) + shift,
            to_world)
