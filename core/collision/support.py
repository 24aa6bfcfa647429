"""A separating-axis lower bound of two bodies' mesh distance, along the capsules' contact normal.

For convex bodies A, B and any unit vector n, min over B of n.v less max over A of n.u is at most
their signed distance (separating axis; also when they overlap). With A, B each body's mesh hull
(simplified to at most SUPPORT_VERTICES vertices and rounded by the farthest mesh point it leaves
outside: core.collision.hulls.simplified_hull) and n the capsule pair's own contact normal, it
recovers most of the room the capsules cost where the G1's arms bind (capsules 1.27-1.56 cm, this
bound 2.42-4.17, exact hulls 3.25-5.12: docs/history/self_collision.md, session 29). A handful of
vectorised operations per entry: rotate n into each body's frame, one product with its vertices,
a max and a min. The capsules stay the proxies (broad phases, drawing, the allowed-collision
matrix); where this bound is larger it stands in, with the two support vertices as the
closest points. Its gradient: the support vertices' motion along n (the support function's
derivative, n held) and the turn of n itself with the capsules' closest points (normal_turn).
"""
from __future__ import annotations

import os

import numpy as np

from .distance import _einsum, cross_rows
from .hulls import pad_hull, simplified_hull

# on: every look and the report take max(capsule distance, this bound) for bodies with meshes. Off by default:
# the G1's limbs with avoidance walk +0.69 -> +0.38, hop +0.96 -> +0.60 deg over off (with the descent +0.16 /
# +0.36), 0 % colliding, but the avoiding bake command grows by 0.9 / 2.0 G instructions (10.42 -> 11.32,
# 10.60 -> 12.55) and the default one by 0.11 / 0.14 G, its report (docs/history/self_collision.md, session 29)
SUPPORT_BOUND = os.environ.get("ROBOT_RETARGET_SUPPORT_BOUND", "") == "1"
SUPPORT_VERTICES = 64  # a body's simplified hull's vertices, at most (128: G1 limbs no lower, the hop's jerk 1.3x)


def support_bound() -> bool:
    """Whether looks and reports use the bound (SUPPORT_BOUND, read when called: tests switch it)."""
    return SUPPORT_BOUND


def fit_support(meshes: list) -> tuple[np.ndarray, np.ndarray] | None:
    """Per body (its BodyMesh or None): its simplified hull's vertices (B, SUPPORT_VERTICES, 3), padded,
    in its link's frame, and the radius (B,) that makes the rounded hull hold its mesh and solid
    shapes (-1: no mesh, no bound); None when no body has a mesh."""
    points, radius = [], []
    for mesh in meshes:
        hull = simplified_hull(mesh.points, SUPPORT_VERTICES) if mesh is not None else None
        if hull is None:
            points.append(None)
            radius.append(-1.0)
            continue
        vertices, faces, rounding = hull
        points.append(pad_hull(vertices, faces, SUPPORT_VERTICES)[0])
        radius.append(rounding + float(mesh.radii.max(initial=0.0)))  # a solid's points are its centres
    if all(p is None for p in points):
        return None
    shape = next(p for p in points if p is not None).shape
    return np.stack([np.zeros(shape) if p is None else p for p in points]), np.array(radius)


def support_gap(model, bodies: np.ndarray, frames: tuple, normal: np.ndarray) -> tuple:
    """The bound for entries (K,) between bodies (K, 2) (model indices, both with support points),
    each placed by its link's world frame (frames[side]: (K, 4, 3), the rotation's three columns and
    the origin) and the unit normal (K, 3) from the second toward the first: the gap (K,) and the
    support vertices on the first and second (K, 3), in the world."""
    gap, points = -model.support_radius[bodies].sum(axis=1), []
    for side, sign in ((0, -1.0), (1, 1.0)):
        frame = frames[side]
        local = _einsum("kcj,kj->kc", frame[:, :3], normal)  # n in the link's frame
        extreme, vertex = np.empty(len(normal)), np.empty((len(normal), 3))
        body = bodies[:, side]
        for each in np.unique(body):  # a few bodies: one product with each one's vertices, no (K, S, 3) gather
            rows = np.flatnonzero(body == each)
            along = local[rows] @ model.support_points[each].T  # (n, S): n.v less n.origin
            pick = along.argmax(axis=1) if sign > 0 else along.argmin(axis=1)
            extreme[rows] = along[np.arange(len(rows)), pick]
            vertex[rows] = model.support_points[each][pick]
        gap -= sign * (extreme + _einsum("kj,kj->k", frame[:, 3], normal))
        points.append(_einsum("kcj,kc->kj", frame[:, :3], vertex) + frame[:, 3])
    return gap, points[0], points[1]


def tighten(model, capsules: np.ndarray, out: tuple, body_frames, within: float = np.inf) -> tuple | None:
    """proxy_distance's answer `out` (distances (K,), points on both (K, 3), normals (K, 3)) for capsule
    pairs (K, 2), in place: where both bodies have meshes and the bound along the entry's normal is
    larger than its distance (below `within`: beyond, the distance is already far enough), the bound
    and its support vertices. body_frames(rows, side): those entries' link frames (n, 4, 3) on that
    side. Which entries are now a bound (K,) bool and the capsules' closest points on both (K, 3)
    before (their normal_turn); None when none is.

    Each entry keeps its own bound (a body pair's best alone, carried by its one entry, lowered the
    G1 hop's limbs to +0.49 deg but switched rows look to look: 7x the CPU, 3.5x the jerk)."""
    exact, ca, cb, normal = out
    if not support_bound() or model.support_radius is None:  # in this order: the hulls are fitted on first use
        return None
    bodies = model.capsule_body[capsules]
    rows = np.flatnonzero((exact < within) & (model.support_radius[bodies] >= 0).all(axis=1))
    if not len(rows):
        return None
    gap, on_a, on_b = support_gap(model, bodies[rows], (body_frames(rows, 0), body_frames(rows, 1)), normal[rows])
    better = np.flatnonzero(gap > exact[rows])
    if not len(better):
        return None
    closest = (ca.copy(), cb.copy())
    picked = rows[better]
    exact[picked], ca[picked], cb[picked] = gap[better], on_a[better], on_b[better]
    tight = np.zeros(len(exact), dtype=bool)
    tight[picked] = True
    return (tight, *closest)


def normal_turn(lever: np.ndarray, axis: np.ndarray, moment: np.ndarray, moves: tuple, ends: np.ndarray,
                on_a: np.ndarray, on_b: np.ndarray) -> np.ndarray:
    """(V, K) the rate of lever.n per joint, n the unit vector between the closest points on two
    capsules' axes (n = (on_a - on_b) / |on_a - on_b|): what a bound along n, held, misses of its
    derivative (its support vertices a*, b*: lever = a* - b*). Per joint (V), a point x of a body it
    moves goes at axis x x + moment (axis, moment (V, 3, K); a slide: axis 0, moment its direction);
    moves: which of the two bodies it moves ((V, K) each); ends: both axes' world ends (K, 2, 2, 3).
    A closest point inside its segment slides along it to stay closest: the two conditions that the
    gap stays square to both axes (to one, when the other point sits on an end) give the slide.
    Every term is the joint's axis or moment dotted with a vector of the entry's: two products."""
    w = (on_a - on_b).T  # (3, K)
    length = np.sqrt((w * w).sum(axis=0))
    n = w / length
    lever = lever.T - (lever.T * n).sum(axis=0) * n  # only its part square to n turns with n
    d1, d2 = (ends[:, 0, 1] - ends[:, 0, 0]).T, (ends[:, 1, 1] - ends[:, 1, 0]).T  # (3, K)
    a11, a12, a22 = (d1 * d1).sum(axis=0), (d1 * d2).sum(axis=0), (d2 * d2).sum(axis=0)
    s = ((on_a.T - ends[:, 0, 0].T) * d1).sum(axis=0) / np.maximum(a11, 1e-18)
    t = ((on_b.T - ends[:, 1, 0].T) * d2).sum(axis=0) / np.maximum(a22, 1e-18)
    free_s = (s > 1e-7) & (s < 1.0 - 1e-7) & (a11 > 1e-12)
    free_t = (t > 1e-7) & (t < 1.0 - 1e-7) & (a22 > 1e-12)
    # a point x of body A goes at axis.(x x v) + moment.v along v (and of B, the same with its moves):
    # rate.v = move_a (axis.(on_a x v) + moment.v) - move_b (axis.(on_b x v) + moment.v), v in d1, d2, lever
    toward = np.stack([d1, d2, lever])  # (3 vectors, 3, K)
    vectors = np.concatenate([cross_rows(on_a.T, toward), cross_rows(on_b.T, toward), cross_rows(d1, w)[None],
                              cross_rows(d2, w)[None]])  # (8, 3, K); the last two: w.(spin x d) = spin.(d x w)
    spin = _einsum("vik,mik->vmk", axis, vectors)  # (V, 8, K)
    slide = _einsum("vik,mik->vmk", moment, toward)  # (V, 3, K)
    move_a, move_b = moves
    rate = move_a[:, None] * (spin[:, 0:3] + slide) - move_b[:, None] * (spin[:, 3:6] + slide)  # (V, 3, K)
    # the conditions (w + dw).d1 = 0 and (w + dw).d2 = 0 to first order, dw = rate + d1 ds - d2 dt
    c1 = -(rate[:, 0] + move_a * spin[:, 6])  # (V, K)
    c2 = -(rate[:, 1] + move_b * spin[:, 7])
    det = a12 * a12 - a11 * a22  # [[a11, -a12], [a12, -a22]] [ds, dt] = [c1, c2]
    both = free_s & free_t & (np.abs(det) > 1e-9 * np.maximum(a11 * a22, 1e-18))
    ds = np.where(both, (-a22 * c1 + a12 * c2) / np.where(both, det, 1.0), 0.0)
    dt = np.where(both, (-a12 * c1 + a11 * c2) / np.where(both, det, 1.0), 0.0)
    only_s, only_t = free_s & ~free_t, free_t & ~both  # parallel axes: the first point held
    ds = np.where(only_s, c1 / np.where(only_s, a11, 1.0), ds)
    dt = np.where(only_t, -c2 / np.where(only_t, a22, 1.0), dt)
    along_d1, along_d2 = (lever * d1).sum(axis=0), (lever * d2).sum(axis=0)
    return (rate[:, 2] + along_d1 * ds - along_d2 * dt) / length
