"""Exact distances between convex cores (hulls of a few vertices: a capsule's axis is two),
batched over entries: GJK on the cores' Minkowski difference, every entry's simplex at once.

A proxy is a core swept by a sphere (a capsule: a segment and its radius; a hull proxy: a
simplified hull and the margin that makes it hold the mesh), so its distance is the cores'
less both radii. Cores that overlap get minus their overlap along the hulls' face normals: an
upper bound of the penetration depth (the least over every direction), so an overlap is never
reported shallower than it is.
"""
from __future__ import annotations

import numpy as np

GJK_ROUNDS = 48  # simplex updates at most: a hull of a few dozen vertices converges in under ten
_REL = 1e-12  # converged when |v|^2 - v.w is this small against |v|^2 (w: the support point along -v)
_TINY = 1e-14  # m^2: the origin is on the simplex (the cores touch or overlap)


def _dot(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.einsum("...i,...i->...", a, b)


def triangle_closest(p0: np.ndarray, p1: np.ndarray, p2: np.ndarray) -> np.ndarray:
    """Barycentric weights (K, 3) of the point of each triangle (corners (K, 3)) nearest the origin,
    zero on the corners that do not carry it (the Voronoi regions of corners, edges and face, in
    Ericson's order: the first region that holds wins)."""
    ab, ac = p1 - p0, p2 - p0
    d1, d2 = -_dot(ab, p0), -_dot(ac, p0)
    d3, d4 = -_dot(ab, p1), -_dot(ac, p1)
    d5, d6 = -_dot(ab, p2), -_dot(ac, p2)
    va, vb, vc = d3 * d6 - d5 * d4, d5 * d2 - d1 * d6, d1 * d4 - d3 * d2
    t_ab = d1 / _safe(d1 - d3)
    t_ac = d2 / _safe(d2 - d6)
    t_bc = (d4 - d3) / _safe((d4 - d3) + (d5 - d6))
    face = 1.0 / _safe(va + vb + vc)
    regions = [(d1 <= 0) & (d2 <= 0), (d3 >= 0) & (d4 <= d3), (vc <= 0) & (d1 >= 0) & (d3 <= 0),
               (d6 >= 0) & (d5 <= d6), (vb <= 0) & (d2 >= 0) & (d6 <= 0), (va <= 0) & (d4 >= d3) & (d5 >= d6)]
    region = np.select(regions, [0, 1, 2, 3, 4, 5], 6)
    zero, one = np.zeros_like(d1), np.ones_like(d1)
    candidates = np.stack([np.stack(w, axis=-1) for w in (
        (one, zero, zero), (zero, one, zero), (1.0 - t_ab, t_ab, zero), (zero, zero, one),
        (1.0 - t_ac, zero, t_ac), (zero, 1.0 - t_bc, t_bc), (va * face, vb * face, vc * face))], axis=-2)
    return np.take_along_axis(candidates, region[..., None, None], axis=-2)[..., 0, :]


def _safe(x: np.ndarray) -> np.ndarray:
    """x with zeros made ones: a denominator of a region that does not hold."""
    return np.where(x == 0.0, 1.0, x)


def _cross(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """u x v over the last axis (..., 3): without np.cross's overhead."""
    return np.stack([u[..., 1] * v[..., 2] - u[..., 2] * v[..., 1], u[..., 2] * v[..., 0] - u[..., 0] * v[..., 2],
                     u[..., 0] * v[..., 1] - u[..., 1] * v[..., 0]], axis=-1)


def _segment_closest(p0: np.ndarray, p1: np.ndarray) -> np.ndarray:
    d = p1 - p0
    length = _dot(d, d)
    t = np.clip(-_dot(p0, d) / np.where(length > 0, length, 1.0), 0.0, 1.0)
    return np.stack([1.0 - t, t], axis=-1)


def _tetra_closest(s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Weights (K, 4) of the point of each tetrahedron (K, 4, 3) nearest the origin, and whether the
    origin is inside (K,): the nearest of its faces' nearest points when outside. Only the faces
    through the newest vertex (the last) are looked at: the old triangle's nearest point is where
    the search came from, and the newest vertex lies beyond it."""
    faces = np.array([(1, 2, 3), (0, 2, 3), (0, 1, 3)])
    others = np.array([0, 1, 2])
    corner = s[:, faces]  # (K, 3 faces, 3 corners, 3)
    a, b, c = corner[:, :, 0], corner[:, :, 1], corner[:, :, 2]
    normal = _cross(b - a, c - a)
    origin_side, vertex_side = -_dot(normal, a), _dot(normal, s[:, others] - a)
    inside = (origin_side * vertex_side > 0.0).all(axis=1)  # the origin on the other vertex's side of these faces
    w = triangle_closest(a.reshape(-1, 3), b.reshape(-1, 3), c.reshape(-1, 3)).reshape(len(s), 3, 3)
    point = np.einsum("kfj,kfji->kfi", w, corner)
    best = np.argmin(_dot(point, point), axis=1)
    rows = np.arange(len(s))
    weights = np.zeros((len(s), 4))
    weights[rows[:, None], faces[best]] = w[rows, best]
    return weights, inside


def _closest(s: np.ndarray, count: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Weights (K, 4) of the nearest point to the origin of each simplex (first `count` of s (K, 4, 3)),
    and whether it holds the origin (a full tetrahedron around it)."""
    weights = np.zeros((len(s), 4))
    inside = np.zeros(len(s), dtype=bool)
    for n in (1, 2, 3, 4):
        rows = np.flatnonzero(count == n)
        if not len(rows):
            continue
        if n == 1:
            weights[rows, 0] = 1.0
        elif n == 2:
            weights[rows, :2] = _segment_closest(s[rows, 0], s[rows, 1])
        elif n == 3:
            weights[rows, :3] = triangle_closest(s[rows, 0], s[rows, 1], s[rows, 2])
        else:
            weights[rows], inside[rows] = _tetra_closest(s[rows])
    return weights, inside


def _support(points: np.ndarray, direction: np.ndarray) -> np.ndarray:
    """Index (K,) of each vertex set's (K, N, 3) farthest point along direction (K, 3)."""
    return np.argmax(np.matmul(points, direction[:, :, None])[..., 0], axis=1)


def core_distance(a: np.ndarray, b: np.ndarray, beyond: np.ndarray | float = np.inf,
                  start: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Distance (K,) between the convex hulls of vertex sets a (K, Na, 3) and b (K, Nb, 3) (metres),
    their nearest points on a and on b (K, 3), and whether they overlap (K,) (distance 0 there).
    A vertex set may repeat a vertex (padding). Entries shown further apart than `beyond` (K,) stop
    there with a lower bound of their distance (a separating direction's gap; points not nearest).
    start: a guess (K, 3) of the direction from b toward a (default: from b's middle to a's)."""
    return core_search(a, b, beyond, start)[:4]


def core_search(a: np.ndarray, b: np.ndarray, beyond: np.ndarray | float = np.inf, start: np.ndarray | None = None,
                simplex: tuple | None = None) -> tuple:
    """core_distance, from a simplex where one is known: (vertex indices on a (K, 4), on b (K, 4),
    how many (K,), 0: none), the last answer's for these entries (a solver's next look is near: it
    ends in a round or two); with the simplex each entry ended on, the same way, last.

    The entries still searching are kept packed (their sets, simplices' vertex indices and points
    on both sets): a round touches only them."""
    count = len(a)
    gap, near_a, near_b = np.zeros(count), np.zeros((count, 3)), np.zeros((count, 3))
    overlap = np.zeros(count, dtype=bool)
    final = (np.zeros((count, 4), dtype=int), np.zeros((count, 4), dtype=int), np.zeros(count, dtype=int))
    live = np.arange(count)
    limit = np.minimum(np.broadcast_to(np.asarray(beyond, dtype=float), (count,)), 1e9)  # finite: 0 * limit is 0
    ia, ib, size = _first_simplex(a, b, start, simplex)
    on_a, on_b = a[live[:, None], ia], b[live[:, None], ib]
    slots = np.arange(4)

    def finish(which, apart=None, vw=None, vv=None, pa=None, pb=None, touching=None):
        out = live[which]
        final[0][out], final[1][out], final[2][out] = ia[which], ib[which], size[which]
        if apart is None:  # the origin inside a tetrahedron: the sets overlap
            overlap[out] = True
            return
        gap[out] = np.where(apart[which], vw[which] / np.sqrt(np.maximum(vv[which], _TINY)), np.sqrt(vv[which]))
        near_a[out], near_b[out], overlap[out] = pa[which], pb[which], touching[which]

    for _ in range(GJK_ROUNDS):
        rows = np.arange(len(live))
        (ia, ib, on_a, on_b, size), weights, inside = _reduced(ia, ib, on_a, on_b, size)
        pa, pb = np.einsum("lk,lki->li", weights, on_a), np.einsum("lk,lki->li", weights, on_b)
        v = pa - pb
        vv = _dot(v, v)
        ja, jb = _support(a, -v), _support(b, v)
        wa, wb = a[rows, ja], b[rows, jb]
        vw = _dot(v, wa - wb)
        touching = (vv < _TINY) & ~inside
        apart = (vw > limit * np.sqrt(vv)) & ~inside  # w's plane across -v parts them by more than the limit
        again = ((ia == ja[:, None]) & (ib == jb[:, None]) & (slots < size[:, None])).any(axis=1)
        done = touching | apart | (vv - vw <= _REL * vv) | again
        if inside.any():
            finish(inside)
        done &= ~inside
        if done.any():
            finish(done, apart, vw, vv, pa, pb, touching)
        keep = ~(done | inside)
        if not keep.all():
            live, a, b, limit, ia, ib, on_a, on_b, size, ja, jb, wa, wb = (
                x[keep] for x in (live, a, b, limit, ia, ib, on_a, on_b, size, ja, jb, wa, wb))
            rows = np.arange(len(live))
        if not len(live):
            break
        ia[rows, size], ib[rows, size], on_a[rows, size], on_b[rows, size] = ja, jb, wa, wb
        size = size + 1
    else:  # out of rounds: the last simplex's nearest point (the newest vertex not yet weighed)
        every = np.ones(len(live), dtype=bool)
        size = size - 1
        v = pa[keep] - pb[keep]
        finish(every, np.zeros(len(live), dtype=bool), np.zeros(len(live)), _dot(v, v), pa[keep], pb[keep],
               np.zeros(len(live), dtype=bool))
    gap[overlap] = 0.0
    return gap, near_a, near_b, overlap, final


def _first_simplex(a: np.ndarray, b: np.ndarray, start: np.ndarray | None, simplex: tuple | None):
    """Vertex indices on a and on b (K, 4) and how many (K,) each search starts from: the last
    search's simplex where known, else the two sets' points facing each other along `start`."""
    count = len(a)
    ia, ib = np.zeros((count, 4), dtype=int), np.zeros((count, 4), dtype=int)
    start = a.mean(axis=1) - b.mean(axis=1) if start is None else start
    ia[:, 0], ib[:, 0] = _support(a, -start), _support(b, start)
    size = np.ones(count, dtype=int)
    if simplex is not None:
        known = simplex[2] > 0
        ia[known] = np.minimum(simplex[0][known], a.shape[1] - 1)  # any indices are a simplex: kept in range
        ib[known] = np.minimum(simplex[1][known], b.shape[1] - 1)
        size[known] = np.minimum(simplex[2][known], 3)  # a tetrahedron's faces are searched only through its newest
    return ia, ib, size


def _reduced(ia: np.ndarray, ib: np.ndarray, on_a: np.ndarray, on_b: np.ndarray, size: np.ndarray) -> tuple:
    """Simplices (vertex indices (L, 4) and points (L, 4, 3) on a and b, how many (L,)) cut to the
    vertices that carry their point nearest the origin, first: the same five, their weights (L, 4)
    and whether they hold the origin (L,) (a full tetrahedron, kept whole)."""
    rows = np.arange(len(size))
    found, inside = _closest(on_a - on_b, size)
    lost = found.sum(axis=1) < 0.5  # a degenerate simplex lost its weights: keep its newest vertex
    found[lost] = 0.0
    found[lost, size[lost] - 1] = 1.0
    pick = (rows[:, None], np.argsort(found <= 0.0, axis=1, kind="stable"))
    size = np.where(inside, 4, np.maximum((found > 0.0).sum(axis=1), 1))
    return (ia[pick], ib[pick], on_a[pick], on_b[pick], size), found[pick], inside


def face_normals(vertices: np.ndarray, faces: np.ndarray) -> np.ndarray:
    """Unit outward normals (K, M, 3) of hulls' faces (vertex triples (K, M, 3), counter-clockwise
    seen from outside) on their vertices (K, V, 3), in whatever frame the vertices are."""
    rows = np.arange(len(vertices))[:, None]
    corner = [vertices[rows, faces[..., k]] for k in range(3)]
    normal = np.cross(corner[1] - corner[0], corner[2] - corner[0])
    return normal / np.maximum(np.linalg.norm(normal, axis=-1, keepdims=True), 1e-18)


def overlap_depth(a: np.ndarray, b: np.ndarray, axes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray,
                                                                           np.ndarray]:
    """Overlapping vertex sets a (K, Na, 3), b (K, Nb, 3): the least of their overlaps along the
    axes (K, M, 3) (the hulls' face normals: no less than the penetration depth), the unit
    direction (K, 3) moving a along which parts them, and a's and b's deepest vertices (K, 3)."""
    rows = np.arange(len(a))
    on_a, on_b = np.einsum("kni,kmi->knm", a, axes), np.einsum("kni,kmi->knm", b, axes)
    up = on_a.max(axis=1) - on_b.min(axis=1)  # a moves down along the axis by this much
    down = on_b.max(axis=1) - on_a.min(axis=1)  # ... or up by this
    least = np.minimum(up, down)
    k = np.argmin(least, axis=1)
    axis = axes[rows, k]
    direction = np.where((up[rows, k] <= down[rows, k])[:, None], -axis, axis)
    return least[rows, k], direction, a[rows, _support(a, -direction)], b[rows, _support(b, direction)]


def convex_distance(a: np.ndarray, ra: np.ndarray, b: np.ndarray, rb: np.ndarray, axes, beyond: float = np.inf,
                    start: np.ndarray | None = None, simplex: tuple | None = None):
    """Signed distance (K,) between proxies: cores a (K, Na, 3) and b (K, Nb, 3) swept by radii
    ra, rb (K,); points on the cores (K, 3) where it is measured and the unit normal (K, 3) from
    b toward a (moving a along it parts them). Overlapping cores: minus their overlap along
    axes(rows) (M, 3) for those entries (the hulls' world face normals), less the radii. Entries
    further apart than `beyond`: a lower bound above it. start: a guess of the normal; simplex:
    where each entry's search ended last (core_search), and last the simplex it ends on now."""
    gap, pa, pb, inside, simplex = core_search(a, b, beyond + ra + rb, start, simplex)
    normal = (pa - pb) / np.maximum(np.linalg.norm(pa - pb, axis=-1), 1e-300)[:, None]
    rows = np.flatnonzero(inside)
    if len(rows):
        depth, direction, deep_a, deep_b = overlap_depth(a[rows], b[rows], axes(rows))
        gap[rows], normal[rows], pa[rows], pb[rows] = -depth, direction, deep_a, deep_b
    return gap - ra - rb, pa, pb, normal, simplex
