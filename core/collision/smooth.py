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
a bracketed Newton search), less the level and the capsule's radius. The search is bounded first
by h = max_i max(x_i, a_i x_i) <= f, piecewise linear along the axis (_least): a capsule whose
bound is beyond what the caller asks about is not searched, and the others are searched on the
stretch where f's least can be, over only the planes that count there.
"""
from __future__ import annotations

import numpy as np
from scipy.spatial import ConvexHull, HalfspaceIntersection, QhullError

SHARP_M = 0.002  # how far the planes' soft maximum rounds an edge (m): the faces' fat grows with it (SHARP_M log 3 at a corner)
SOFT_M = 0.001  # how far across a plane its slope turns from a_i to 1 (m)
PLANE_TOLERANCE_M = 0.001  # planes are added until no corner of theirs is further outside the mesh's hull
PLANES = 64  # planes at most (padded to this with planes that never count)
HARD_STEPS = 3  # the piecewise-linear lower bound's cutting planes along a capsule's axis, at most (the G1: 98 % of rows) ...
HARD_TOLERANCE_M = 1e-12  # ... until its least is known this closely
NEWTON_STEPS = 60  # the search along a capsule's axis at most (Newton where it converges, else false position) ...
NEWTON_TOLERANCE = 1e-10  # ... until the bracket is this narrow or a Newton step this short (a fraction of the axis)
UNSEEN_M = SHARP_M * np.log(1e16)  # a plane's phi this far below the largest weighs under 1e-16 of it: not searched
BLOCK = 2048  # rows searched at once, each block its own loop (the G1 walk's and hop's calls search fewer)
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
    f, weight, rise, dphi = _terms(p @ planes[:, :3].T - planes[:, 3], slope)
    grad = (weight * dphi) @ planes[:, :3]
    if direction is None:
        return f, grad
    return (f, grad) + _derivatives(weight, rise, dphi, direction @ planes[:, :3].T, 1.0 - slope)


def _terms(x: np.ndarray, slope: np.ndarray):
    """From the planes' offsets x_i (K, M) of points and their slopes a_i ((M,) or (K, M)): f (K,),
    each plane's share of it (K, M) (softmax weights), the softplus's slope (the logistic of
    x_i / SOFT_M) and phi_i' in [a_i, 1] (K, M)."""
    z = x / SOFT_M
    small = np.exp(-np.abs(z))
    rise = np.where(z >= 0.0, 1.0, small) / (1.0 + small)
    rest = 1.0 - slope
    phi = slope * x + rest * (SOFT_M * (np.maximum(z, 0.0) + np.log1p(small)))  # a x + (1 - a) softplus
    top = phi.max(axis=1, keepdims=True)
    weight = np.exp((phi - top) / SHARP_M)
    total = weight.sum(axis=1)
    weight /= total[:, None]
    return top[:, 0] + SHARP_M * np.log(total), weight, rise, slope + rest * rise


def _derivatives(weight: np.ndarray, rise: np.ndarray, dphi: np.ndarray, along: np.ndarray, rest: np.ndarray):
    """f's first and second derivative (K,) along a direction d from _terms' weights, logistic and
    phi_i' (K, M), n_i . d (K, M) and 1 - a_i."""
    s = dphi * along
    first = np.einsum("km,km->k", weight, s)
    curve = rest * rise * (1.0 - rise) * (along * along / SOFT_M) + s * s / SHARP_M
    return first, np.einsum("km,km->k", weight, curve) - first * first / SHARP_M


def segment_least(a: np.ndarray, b: np.ndarray, planes: np.ndarray, slope: np.ndarray) -> np.ndarray:
    """Where (K,) on each segment a-b ((K, 3) each) f is least, as a fraction from a: f is convex
    along it, so its slope is increasing; a bracketed Newton search on the slope's zero, on the
    segments whose least is inside (the slope negative at a and positive at b)."""
    return _least(a, b, planes, slope)[0]


def _least(a: np.ndarray, b: np.ndarray, planes: np.ndarray, slope: np.ndarray, reach: np.ndarray | None = None,
           proxy: np.ndarray | None = None):
    """segment_least's fractions (K,), and f (K,) and its gradient (K, 3) there; planes (M, 4) and
    slopes (M,) one proxy's, or with `proxy` (K,) each row's proxy's among planes (H, M, 4) and
    slopes (H, M). f is bounded below by h(u) = max_i max(x_i, a_i x_i) (phi_i >= both), piecewise
    linear along the segment: its least H (_hard_least, a few cutting planes) bounds f's, and f's
    least lies where h <= H + SOFT_M log 2 + SHARP_M log M (_bracket). On that stretch only the
    planes that can count there are summed (_counting), and the Newton search starts where the soft
    maximum of h's two last lines is least. Rows whose H is above `reach` (K,) are not searched: f
    there is H (a lower bound), its gradient the bounding plane's normal."""
    if proxy is None:
        planes, slope, proxy = planes[None], slope[None], np.zeros(len(a), dtype=int)
    start, along = np.empty((len(a), planes.shape[1])), np.empty((len(a), planes.shape[1]))
    for h in np.unique(proxy):  # x_i(u) = x_i(a) + u n_i . d: linear along the segment
        rows = np.flatnonzero(proxy == h)
        start[rows] = a[rows] @ planes[h, :, :3].T - planes[h, :, 3]
        along[rows] = (b[rows] - a[rows]) @ planes[h, :, :3].T
    normals = planes[:, :, :3].reshape(-1, 3)
    plane = proxy[:, None] * planes.shape[1] + np.arange(planes.shape[1])  # rows in normals
    slope = np.take(slope, proxy, axis=0)
    lower, upper, u, top = _hard_least(start, along, slope, reach)
    t, f, grad = u, lower.copy(), np.take(normals, plane[np.arange(len(a)), top], axis=0)
    rows = np.arange(len(a)) if reach is None else np.flatnonzero(lower <= reach)
    for i in range(0, len(rows), BLOCK):  # BLOCK rows at a time, each on the planes that can count on its stretch
        block = rows[i:i + BLOCK]
        lo, hi = _bracket(start[block], along[block], slope[block], upper[block] + SOFT_M * np.log(2.0)
                          + SHARP_M * np.log(planes.shape[1]))
        counts = _counting(start[block], along[block], slope[block], lo, hi, lower[block])
        searched = _Rows.of(start[block], along[block], slope[block], normals, plane[block], counts, lower[block])
        t[block], f[block], grad[block] = _newton(searched, np.clip(u[block], lo, hi), lo, hi)
    return t, f, grad


class _Rows:
    """Each searched segment's planes that can count on it, flattened (no row padded to another's
    count): planes' offsets at the segment's start x_i(0) and n_i . d (E,), slopes a_i, 1 - a_i (E,),
    normals (E, 3) and the row each entry is of (E,); each row's count and first entry (K,) and a
    lower bound of its largest phi_j anywhere on its stretch (K,), which the weights are taken
    relative to (no largest sought at each point; on the stretch no phi is so far above it that its
    exponential overflows, _bracket)."""

    def __init__(self, start, along, slope, normals, row, counts, base):
        self.start, self.along, self.slope, self.normals = start, along, slope, normals
        self.row, self.counts, self.base = row, counts, base
        self.first = np.cumsum(counts) - counts
        # the sums' constant factors, once: phi_i / SHARP_M = a_i x / SHARP_M + (1 - a_i) SOFT_M / SHARP_M softplus
        self.rest = 1.0 - slope
        self.sharp_slope, self.sharp_rest = slope / SHARP_M, self.rest * (SOFT_M / SHARP_M)
        self.shift = base[row] / SHARP_M
        self.bend = self.rest * along * along / SOFT_M  # phi_i'' along the segment, over the logistic's slope

    @classmethod
    def of(cls, start: np.ndarray, along: np.ndarray, slope: np.ndarray, normals: np.ndarray, plane: np.ndarray,
           counts: np.ndarray, base: np.ndarray) -> "_Rows":
        """From every plane's offset (K, M), n_i . d (K, M) and slope (K, M) on each row, the proxies'
        normals (H M, 3) and each row's planes' rows among them (K, M), which planes count on each row
        (K, M) bool, and each row's lower bound of the largest phi_j (K,)."""
        return cls(start[counts], along[counts], slope[counts], np.take(normals, plane[counts], axis=0),
                   np.repeat(np.arange(len(counts)), counts.sum(axis=1)), counts.sum(axis=1), base)

    def _entries(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The rows' (indices, ascending) entries (E',), their counts and first entries among them."""
        counts = self.counts[rows]
        begin = np.cumsum(counts) - counts
        return np.repeat(self.first[rows] - begin, counts) + np.arange(counts.sum()), counts, begin

    def take(self, rows: np.ndarray) -> "_Rows":
        """The rows `rows` (indices, ascending)."""
        entry, counts, _ = self._entries(rows)
        return _Rows(self.start[entry], self.along[entry], self.slope[entry], np.take(self.normals, entry, axis=0),
                     np.repeat(np.arange(len(rows)), counts), counts, self.base[rows])

    def at(self, u: np.ndarray):
        """f (K,), its first and second derivative along the segment (K,) at fractions u (K,), and
        each entry's weight times phi_i' (E,) and the weights' sum (K,), for `gradient`."""
        x = self.start + u[self.row] * self.along
        z = x / SOFT_M
        small = np.exp(-np.abs(z))
        rise = np.where(z >= 0.0, 1.0, small) / (1.0 + small)
        softplus = np.maximum(z, 0.0) + np.log1p(small)  # over SOFT_M
        weight = np.exp(self.sharp_slope * x + self.sharp_rest * softplus - self.shift)
        total = np.add.reduceat(weight, self.first)
        dphi = self.slope + self.rest * rise
        share = weight * dphi
        s = dphi * self.along
        first = np.add.reduceat(share * self.along, self.first) / total
        curve = weight * (self.bend * rise * (1.0 - rise) + s * s / SHARP_M)
        second = np.add.reduceat(curve, self.first) / total - first * first / SHARP_M
        return self.base + SHARP_M * np.log(total), first, second, share, total

    def gradient(self, share: np.ndarray, total: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """f's gradient (n, 3) on rows `rows` (n,) from `at`'s weights times phi_i' (E,) and sums (K,)."""
        entry, _, begin = self._entries(rows)
        return np.add.reduceat(share[entry, None] * np.take(self.normals, entry, axis=0), begin) / total[rows, None]


def _hard_least(start: np.ndarray, along: np.ndarray, slope: np.ndarray, reach: np.ndarray | None = None):
    """h(u) = max_i max(x_i, a_i x_i) on [0, 1] for planes' offsets start + u along and slopes a_i ((K, M) each):
    a lower bound (K,) and an upper bound (K,) of its least, where to start f's search (K,) (where
    the soft maximum of the last two lines is least) and the plane (K,) largest at h's least.
    Kelley's cutting planes in one unknown: the line largest at each end, then where the left's
    and the right's cross, replacing the one on that side by the line largest there, until the two
    lines' crossing is on h (h's pieces: a few steps), or their crossing, a lower bound, is above
    `reach` (K,)."""
    count = len(start)

    def largest(x0, dx, a, u):  # h at u (K,), its largest line's slope (K,) and plane (K,)
        x = x0 + u[:, None] * dx
        y = np.maximum(x, a * x)
        top = np.argmax(y, axis=1)
        k = np.arange(len(u))
        return y[k, top], np.where(x[k, top] >= 0.0, dx[k, top], a[k, top] * dx[k, top]), top

    v0, m0, top0 = largest(start, along, slope, np.zeros(count))
    v1, m1, top1 = largest(start, along, slope, np.ones(count))
    right = m0 < 0.0  # h falls from 0: its least is further on, at 1 when h still falls there
    soft, top = right.astype(float), np.where(right, top1, top0)  # then where the two last lines' soft maximum is least
    upper = np.where(right, v1, v0)
    lower = upper.copy()
    live = np.flatnonzero(right & (m1 > 0.0))
    c_lo, m_lo, c_hi, m_hi = v0[live], m0[live], v1[live] - m1[live], m1[live]  # the lines c + m u
    x0, dx, a = start[live], along[live], slope[live]
    reach = np.full(len(live), np.inf) if reach is None else reach[live]
    for _ in range(HARD_STEPS):
        if not len(live):
            break
        cross = np.clip((c_hi - c_lo) / (m_lo - m_hi), 0.0, 1.0)
        model = c_lo + m_lo * cross
        v, m, at = largest(x0, dx, a, cross)
        upper[live], lower[live], top[live] = v, model, at
        # the soft maximum of the two lines is least where they differ by SHARP_M log(-m_hi / m_lo)
        soft[live] = cross + SHARP_M * np.log(np.maximum(-m_hi / m_lo, 1e-12)) / (m_lo - m_hi)
        going = (v > model + HARD_TOLERANCE_M) & (model <= reach)
        left = m < 0.0
        c_lo, m_lo = np.where(left, v - m * cross, c_lo), np.where(left, m, m_lo)
        c_hi, m_hi = np.where(left, c_hi, v - m * cross), np.where(left, m_hi, m)
        if not going.all():
            live, c_lo, m_lo, c_hi, m_hi, x0, dx, a, reach = (
                x[going] for x in (live, c_lo, m_lo, c_hi, m_hi, x0, dx, a, reach))
    return lower, upper, np.clip(soft, 0.0, 1.0), top


def _bracket(start: np.ndarray, along: np.ndarray, slope: np.ndarray, level: np.ndarray):
    """Where (lo (K,), hi (K,)) on [0, 1] h = max_i max(x_i, a_i x_i) is at most `level` (K,), for planes'
    offsets start + u along ((K, M) each): each plane's x_i must stay below level, or level / a_i below 0."""
    bound = np.where(level[:, None] >= 0.0, level[:, None], level[:, None] / slope)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = (bound - start) / along
    lo = np.maximum(np.where(along < 0.0, ratio, 0.0).max(axis=1), 0.0)
    hi = np.minimum(np.where(along > 0.0, ratio, 1.0).min(axis=1), 1.0)
    return lo, np.maximum(hi, lo)


def _counting(start: np.ndarray, along: np.ndarray, slope: np.ndarray, lo: np.ndarray, hi: np.ndarray,
              least: np.ndarray) -> np.ndarray:
    """Which planes (K, M) bool can count on each segment's stretch [lo, hi] (K,): phi_i lies within SOFT_M log 2
    above max(x_i, a_i x_i), which is largest at an end of the stretch (x_i is linear along it), and
    the largest phi_j is at least h's least `least` (K,) everywhere, so a plane whose bound stays
    UNSEEN_M below that weighs under 1e-16 of the largest term everywhere on the stretch."""
    near, far = start + lo[:, None] * along, start + hi[:, None] * along
    high = np.maximum(np.maximum(near, slope * near), np.maximum(far, slope * far))
    return high + SOFT_M * np.log(2.0) >= (least - UNSEEN_M)[:, None]


def _newton(rows: _Rows, u: np.ndarray, lo: np.ndarray, hi: np.ndarray):
    """The least of f on each row's stretch [lo, hi] (K,) that holds it: where (K,), f (K,) and its
    gradient (K, 3) there. Newton on f's slope from u (K,), falling back where a Newton step leaves
    the bracket or does not shrink to under half the step before last (deep inside, f's curvature
    falls off along the axis and Newton overshoots) to false position (Illinois) on the bracket, or,
    while f's slope at an end is not known, to that end (the least is often there: an end of [0, 1]
    whose slope points outward is the answer). f and its gradient are the last evaluation's (within
    NEWTON_TOLERANCE of the answer, where f's slope is about 0). Rows done stay in the arrays (held)
    until fewer than half search on."""
    t, f, grad = u.copy(), np.zeros(len(u)), np.zeros((len(u), 3))
    first_lo, first_hi = np.full(len(u), np.nan), np.full(len(u), np.nan)
    live, active = np.arange(len(u)), np.ones(len(u), dtype=bool)
    moved = last = hi - lo  # the last two steps
    was_below = np.zeros(len(u), dtype=bool)  # the last evaluation moved lo (else hi)
    for _ in range(NEWTON_STEPS):
        value, first, second, share, total = rows.at(u)
        below = first < 0.0
        # Illinois: an end kept twice has its slope halved, so false position does not stall on it
        first_hi = np.where(below & was_below, 0.5 * first_hi, first_hi)
        first_lo = np.where(below | was_below, first_lo, 0.5 * first_lo)
        lo, hi = np.where(below, u, lo), np.where(below, hi, u)
        first_lo, first_hi = np.where(below, first, first_lo), np.where(below, first_hi, first)
        was_below = below
        step = first / np.maximum(second, 1e-12)
        ahead, size = u - step, np.abs(step)
        newton = (ahead > lo) & (ahead < hi) & (size < 0.5 * last)
        fallback = lo - first_lo * (hi - lo) / (first_hi - first_lo)  # NaN while an end's slope is not known: go there
        end = np.where(np.isnan(first_lo) & (np.isfinite(first_hi) | (step > 0.0)), lo, hi)
        fallback = np.where(np.isnan(fallback), end, fallback)
        going = active & (np.abs(first) > 1e-12)  # f's slope (m per axis): here is the least, kept
        target = np.where(going, np.where(newton, ahead, fallback), u)
        last, moved = moved, np.abs(target - u)
        u = target
        # a Newton step this short leaves the next one about its square: done
        going &= (hi - lo > NEWTON_TOLERANCE) & ~(newton & (size < NEWTON_TOLERANCE))
        done = np.flatnonzero(active != going)
        if len(done):
            at = live[done]
            t[at], f[at], grad[at] = u[done], value[done], rows.gradient(share, total, done)
        active = going
        searching = np.count_nonzero(active)
        if not searching:
            return t, f, grad
        if 2 * searching < len(active):
            keep = np.flatnonzero(active)
            rows = rows.take(keep)
            live, lo, hi, u, moved, last, first_lo, first_hi, was_below, active = (
                x[keep] for x in (live, lo, hi, u, moved, last, first_lo, first_hi, was_below, active))
    done = np.flatnonzero(active)  # NEWTON_STEPS ran out: the last point's
    value, _, _, share, total = rows.at(u)
    t[live[done]], f[live[done]], grad[live[done]] = u[done], value[done], rows.gradient(share, total, done)
    return t, f, grad


def frame_points(centre: np.ndarray) -> np.ndarray:
    """Four points (4, 3) in the body's frame (its centre and a unit step along each axis) that,
    placed in the world like a hull's vertices, give the body's pose back (local_frame)."""
    return centre + np.vstack([np.zeros(3), np.eye(3)])


def local_frame(placed: np.ndarray, centre: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The rotation (K, 3, 3) and translation (K, 3) (link to world) of frame_points placed in the
    world (K, 4, 3) for a body whose centre is `centre` (K, 3) in its frame."""
    turn = np.swapaxes(placed[:, 1:] - placed[:, :1], 1, 2)  # columns: the axes in the world
    return turn, placed[:, 0] - np.einsum("kij,kj->ki", turn, centre)


def capsule_to_smooth(placed: np.ndarray, proxy: np.ndarray, model, ends: np.ndarray, radius: np.ndarray,
                      within: float = np.inf):
    """Signed distances (K,) from capsules (world axis ends (K, 2, 3), radii (K,)) to smooth proxies
    (their frame_points placed in the world (K, 4, 3), their rows `proxy` (K,) in the model's
    hull_points, hull_planes, hull_slope, hull_level): a lower bound of the Euclidean distance,
    negative inside (no deeper than the overlap); a point on each capsule's axis (K, 3) and on the
    proxy's surface (K, 3), and f's gradient there (K, 3), from the proxy toward the capsule: not
    unit (|grad f| <= 1), so that a constraint's gradient along it is the distance's own (a unit
    normal, or one averaged along the axis, made the room jump between close inputs). A capsule
    provably further than `within` is not searched: its distance is then a lower bound (_least)."""
    centre = model.hull_points[proxy, 0]
    turn, shift = local_frame(placed, centre)
    local = np.einsum("kji,kej->kei", turn, ends - shift[:, None])  # R^T (x - t)
    a, b = local[:, 0], local[:, 1]
    t, f, grad = _least(a, b, model.hull_planes, model.hull_slope, model.hull_level[proxy] + radius + within, proxy)
    point = a + t[:, None] * (b - a)
    gap = f - model.hull_level[proxy]
    surface = point - gap[:, None] * grad / np.maximum(np.einsum("ki,ki->k", grad, grad), 1e-24)[:, None]
    return (gap - radius, np.einsum("kij,kj->ki", turn, point) + shift, np.einsum("kij,kj->ki", turn, surface) + shift,
            np.einsum("kij,kj->ki", turn, grad))
