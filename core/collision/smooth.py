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
NEWTON_STEPS = 60  # the search along a capsule's axis at most (Newton where it converges, else halving) ...
NEWTON_TOLERANCE = 1e-10  # ... until the bracket is this narrow or a Newton step this short (a fraction of the axis)
UNSEEN_M = SHARP_M * np.log(1e16)  # a plane's phi this far below the largest weighs under 1e-16 of it: not searched
BLOCK = 512  # rows evaluated at once: their (BLOCK, M) temporaries stay in the cache (the G1 walk's calls reach 5,000)
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
    """f at points p (K, 3) for one proxy's planes (M, 4) and slopes (M,): f (K,), its gradient
    (K, 3) and, given a direction d (K, 3), f's first and second derivative along it (K,)."""
    x = p @ planes[:, :3].T - planes[:, 3]
    z = x / SOFT_M
    small = np.exp(-np.abs(z))
    soft = SOFT_M * (np.maximum(z, 0.0) + np.log1p(small))  # softplus
    rise = np.where(z >= 0.0, 1.0, small) / (1.0 + small)  # its slope: the logistic of z
    phi = slope * x + (1.0 - slope) * soft
    top = phi.max(axis=1, keepdims=True)
    weight = np.exp((phi - top) / SHARP_M)
    total = weight.sum(axis=1)
    f = top[:, 0] + SHARP_M * np.log(total)
    weight /= total[:, None]
    dphi = slope + (1.0 - slope) * rise  # (K, M) phi_i' in [a_i, 1]
    grad = (weight * dphi) @ planes[:, :3]
    if direction is None:
        return f, grad
    along = direction @ planes[:, :3].T  # n_i . d
    s = dphi * along
    first = (weight * s).sum(axis=1)
    curve = (1.0 - slope) * rise * (1.0 - rise) / SOFT_M  # phi_i''
    second = (weight * (curve * along * along + s * s / SHARP_M)).sum(axis=1) - first * first / SHARP_M
    return f, grad, first, second


def _along(x: np.ndarray, along: np.ndarray, slope: np.ndarray, rest: np.ndarray):
    """f (K,) and its first and second derivative along a segment (K,) from the planes' offsets
    x_i (K, M) of points on it and n_i . d (K, M) (rest = 1 - a_i): soft_value's sums without the
    gradient's product with the normals, which the search does not need."""
    z = x / SOFT_M
    small = np.exp(-np.abs(z))
    rise = np.where(z >= 0.0, 1.0, small) / (1.0 + small)
    phi = slope * x + rest * (SOFT_M * (np.maximum(z, 0.0) + np.log1p(small)))
    top = phi.max(axis=1, keepdims=True)
    weight = np.exp((phi - top) / SHARP_M)
    total = weight.sum(axis=1)
    weight /= total[:, None]
    s = (slope + rest * rise) * along
    first = np.einsum("km,km->k", weight, s)
    curve = rest * rise * (1.0 - rise) * (along * along / SOFT_M) + s * s / SHARP_M
    return top[:, 0] + SHARP_M * np.log(total), first, np.einsum("km,km->k", weight, curve) - first * first / SHARP_M


def segment_least(a: np.ndarray, b: np.ndarray, planes: np.ndarray, slope: np.ndarray) -> np.ndarray:
    """Where (K,) on each segment a-b ((K, 3) each) f is least, as a fraction from a: f is convex
    along it, so its slope is increasing; a bracketed Newton search on the slope's zero, on the
    segments whose least is inside (the slope negative at a and positive at b)."""
    return _least(a, b, planes, slope)[0]


def _least(a: np.ndarray, b: np.ndarray, planes: np.ndarray, slope: np.ndarray):
    """segment_least's fractions (K,), and f (K,) and its gradient (K, 3) there. An inside least is
    searched from where the tangents at the ends cross (the least of a V, which a flat face's side
    and the next make), on the planes that can count anywhere on its segment (_counting)."""
    count, d = len(a), b - a
    f, grad, first = _in_blocks(np.concatenate([a, b]), planes, slope, np.concatenate([d, d]))
    t = np.where(first[:count] >= 0.0, 0.0, 1.0)
    live = np.flatnonzero((t == 1.0) & (first[count:] > 0.0))
    fa, fb, ga, gb = f[live], f[count + live], first[live], first[count + live]
    ends = np.where(t == 1.0, np.arange(count) + count, np.arange(count))
    f, grad = f[ends], grad[ends]
    if not len(live):
        return t, f, grad
    cross = np.clip((fb - fa - gb) / (ga - gb), 0.0, 1.0)  # ga < 0 < gb
    start = a[live] @ planes[:, :3].T - planes[:, 3]  # x_i(u) = x_i(a) + u n_i . d: linear along the segment
    along = d[live] @ planes[:, :3].T
    for i in range(0, len(live), BLOCK):  # BLOCK rows at a time, each on the planes that can count on it
        rows = np.arange(i, min(i + BLOCK, len(live)))
        kept = _counting(start[rows], along[rows], slope, fa[rows] + ga[rows] * cross[rows])
        t[live[rows]] = _newton(np.take_along_axis(start[rows], kept, 1), np.take_along_axis(along[rows], kept, 1),
                                slope[kept], cross[rows])
    for i in range(0, len(live), BLOCK):
        rows = live[i:i + BLOCK]
        f[rows], grad[rows] = soft_value(a[rows] + t[rows, None] * d[rows], planes, slope)
    return t, f, grad


def _in_blocks(p: np.ndarray, planes: np.ndarray, slope: np.ndarray, direction: np.ndarray):
    """soft_value's f, gradient and slope along `direction` at points p (K, 3), BLOCK rows at a time."""
    parts = [soft_value(p[i:i + BLOCK], planes, slope, direction[i:i + BLOCK])[:3] for i in range(0, max(len(p), 1), BLOCK)]
    return tuple(np.concatenate(x) for x in zip(*parts)) if len(parts) != 1 else parts[0]


def _counting(start: np.ndarray, along: np.ndarray, slope: np.ndarray, least: np.ndarray) -> np.ndarray:
    """The planes (K, P) that can count on each segment, planes that cannot padding the rows that
    need fewer (a few negligible terms more): phi_i lies within SOFT_M log 2 above
    max(x_i, a_i x_i), which is largest at an end (x_i is linear along the segment), and f is at
    least `least` (K,) there and at most the largest phi_j + SHARP_M log M, so a plane whose bound
    stays UNSEEN_M below that weighs under 1e-16 of the largest term everywhere on the segment."""
    high = np.maximum(np.maximum(start, slope * start), np.maximum(start + along, slope * (start + along)))
    counts = high + SOFT_M * np.log(2.0) >= (least - SHARP_M * np.log(start.shape[1]) - UNSEEN_M)[:, None]
    order = np.argsort(~counts, axis=1, kind="stable")  # the planes that count first
    return order[:, :counts.sum(axis=1).max()]


def _newton(start: np.ndarray, along: np.ndarray, slope: np.ndarray, u: np.ndarray) -> np.ndarray:
    """The least (K,) of f along segments whose planes' offsets are start + u along ((K, P) each):
    rtsafe from u (K,) in the bracket [0, 1] where f's slope goes from negative to positive."""
    rest = 1.0 - slope
    t = u.copy()
    live = np.arange(len(u))
    lo, hi = np.zeros(len(u)), np.ones(len(u))
    moved = np.ones(len(u))  # the step before last (rtsafe: a Newton step must halve it)
    for _ in range(NEWTON_STEPS):
        if not len(live):
            break
        _, first, second = _along(start + u[:, None] * along, along, slope, rest)
        lo, hi = np.where(first < 0.0, u, lo), np.where(first < 0.0, hi, u)
        step = first / np.maximum(second, 1e-12)
        # Newton creeps along a sharp edge's side (the slope a narrow step): halve the bracket when it
        # leaves it or does not move less than half as far as the step before last
        newton = (u - step > lo) & (u - step < hi) & (np.abs(step) < 0.5 * moved)
        moved = np.where(newton, np.abs(step), 0.5 * (hi - lo))
        going = np.abs(first) > 1e-12  # f's slope (m per axis): here is the least, kept
        u = np.where(going, np.where(newton, u - step, 0.5 * (lo + hi)), u)
        t[live] = u
        # a Newton step this short leaves the next one about its square: done
        going &= (hi - lo > NEWTON_TOLERANCE) & ~(newton & (np.abs(step) < NEWTON_TOLERANCE))
        if not going.all():
            live, lo, hi, u, moved = live[going], lo[going], hi[going], u[going], moved[going]
            start, along, slope, rest = start[going], along[going], slope[going], rest[going]
    return t


def frame_points(centre: np.ndarray) -> np.ndarray:
    """Four points (4, 3) in the body's frame (its centre and a unit step along each axis) that,
    placed in the world like a hull's vertices, give the body's pose back (local_frame)."""
    return centre + np.vstack([np.zeros(3), np.eye(3)])


def local_frame(placed: np.ndarray, centre: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The rotation (K, 3, 3) and translation (K, 3) (link to world) of frame_points placed in the
    world (K, 4, 3) for a body whose centre is `centre` (K, 3) in its frame."""
    turn = np.swapaxes(placed[:, 1:] - placed[:, :1], 1, 2)  # columns: the axes in the world
    return turn, placed[:, 0] - np.einsum("kij,kj->ki", turn, centre)


def capsule_to_smooth(placed: np.ndarray, proxy: np.ndarray, model, ends: np.ndarray, radius: np.ndarray):
    """Signed distances (K,) from capsules (world axis ends (K, 2, 3), radii (K,)) to smooth proxies
    (their frame_points placed in the world (K, 4, 3), their rows `proxy` (K,) in the model's
    hull_points, hull_planes, hull_slope, hull_level): a lower bound of the Euclidean distance,
    negative inside (no deeper than the overlap); a point on each capsule's axis (K, 3) and on the
    proxy's surface (K, 3), and f's gradient there (K, 3), from the proxy toward the capsule: not
    unit (|grad f| <= 1), so that a constraint's gradient along it is the distance's own (a unit
    normal, or one averaged along the axis, made the room jump between close inputs)."""
    centre = model.hull_points[proxy, 0]
    turn, shift = local_frame(placed, centre)
    local = np.einsum("kji,kej->kei", turn, ends - shift[:, None])  # R^T (x - t)
    f, point, grad = np.zeros(len(proxy)), np.zeros((len(proxy), 3)), np.zeros((len(proxy), 3))
    for h in np.unique(proxy):
        rows = np.flatnonzero(proxy == h)
        used = model.hull_planes[h, :, 3] < 0.5 * _FAR
        a, b = local[rows, 0], local[rows, 1]
        t, f[rows], grad[rows] = _least(a, b, model.hull_planes[h, used], model.hull_slope[h, used])
        point[rows] = a + t[:, None] * (b - a)
    gap = f - model.hull_level[proxy]
    surface = point - gap[:, None] * grad / np.maximum(np.einsum("ki,ki->k", grad, grad), 1e-24)[:, None]
    return (gap - radius, np.einsum("kij,kj->ki", turn, point) + shift, np.einsum("kij,kj->ki", turn, surface) + shift,
            np.einsum("kij,kj->ki", turn, grad))
