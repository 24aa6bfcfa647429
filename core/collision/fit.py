"""Capsules fitted to a body's convex hull: the hull cut into equal slabs, the cut, the count
and the capsules' axis that reach least beyond it.

A flat torso or a wide pelvis in one capsule is a sphere-swept line as thick as the body
is wide: a hand reads 5-8 cm deep in it while the mesh is clear. Cut into slabs across one
of its principal axes, each slab is wrapped by its thinnest capsule. A capsule is convex, so
covering a slab's hull vertices and the points where the hull's edges cross its cuts covers
the whole slab: the capsules contain the meshes.
"""
from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations

import numpy as np
from scipy.spatial import ConvexHull, QhullError

MAX_CAPSULES = 6  # per body
SNAP_M = 1e-7  # points are snapped to this grid in the body's frame (and the capsules thickened by it): a
# symmetric body (the G1's four sole spheres) written again to 9 digits broke its ties otherwise, and the
# smallest circles' search (Badoiu-Clarkson, a few steps) took another path to another capsule (3 for 5)
CAPSULE_COST_M = 0.001  # a further capsule must cut the mean excess by this much to be worth its distances
_DIRECTIONS = 64  # directions the excess over the hull is averaged over


def fit_capsules(points: np.ndarray, radii: np.ndarray, most: int = MAX_CAPSULES) -> list[tuple]:
    """[(end a (3,), end b (3,), radius)] covering the convex hull of the points (spheres of
    `radii` around them): the hull cut into 1 to `most` equal slabs across one of its principal
    axes, each slab wrapped by its thinnest capsule along one principal axis; the set whose
    excess over the hull is least (the mean, over directions, of how much further the capsules
    reach than the hull: what a pair's distance is short of), CAPSULE_COST_M per extra capsule.

    Every (cut, count, axis) is fitted at once, as arrays: one Python-level fit per slab and
    axis cost the G1 seconds of interpreter overhead."""
    centre, frame = body_frame(_hull_piece(points, radii)[0])  # the hull's vertices, as the slabs' axes always were
    local = np.round((points - centre) @ frame.T / SNAP_M) * SNAP_M
    capsules = _fit_in_frame(local, radii, most)
    return [(a @ frame + centre, b @ frame + centre, r + SNAP_M) for a, b, r in capsules]


def _fit_in_frame(points: np.ndarray, radii: np.ndarray, most: int) -> list[tuple]:
    """fit_capsules on points given in their body_frame: the slabs cut across its axes."""
    points, radii, edges, facets = _hull_piece(points, radii)
    held = _support(points, radii)
    axes = np.eye(3)
    cuts = range(3) if len(points) >= 2 else range(1)
    configs = [(k, count) for k in cuts for count in range(1 if k == 0 else 2, most + 1)]  # one slab: any cut
    slabs = _slabs(points, radii, edges, axes, configs)
    ends, radius = _fit_slabs(slabs, axes, _Outline.of(len(points), len(edges), facets, axes))  # (A, S, 2, 3), (A, S)
    reach = np.maximum(ends[..., 0, :] @ _UNIT.T, ends[..., 1, :] @ _UNIT.T) + radius[..., None]  # (A, S, D)
    first = np.cumsum([0] + [count for _, count in configs[:-1]])
    worst = np.maximum.reduceat(reach, first, axis=1)  # (A, configs, D): each direction's farthest capsule
    extra = CAPSULE_COST_M * (np.array([count for _, count in configs]) - 1)
    cost = (worst - held).mean(axis=-1) + extra
    cost[:, ~slabs.whole] = np.inf
    config, axis = divmod(first_least(cost.T.ravel()), len(axes))  # in (cut, count, axis) order
    rows = range(first[config], first[config] + configs[config][1])
    return [(ends[axis, s, 0], ends[axis, s, 1], float(radius[axis, s])) for s in rows]


COST_TIE_M = 1e-9  # costs this close are equal: rounding (a frame turned, a URDF written again) must not choose


def first_least(cost: np.ndarray) -> int:
    """The first index whose cost (metres) is within COST_TIE_M of the least: a cylinder fitted across
    either of its two like axes costs the same but for rounding, which then chose between them."""
    return int(np.argmax(cost <= cost.min() + COST_TIE_M))


def hull_excess(capsules: list[tuple], points: np.ndarray, radii: np.ndarray) -> float:
    """How much further the capsules reach than the points' hull, averaged over directions (m)."""
    reach = np.max([np.maximum(_UNIT @ a, _UNIT @ b) + r for a, b, r in capsules], axis=0)
    return float(np.mean(reach - _support(points, radii)))


def _hull_piece(points: np.ndarray, radii: np.ndarray) -> tuple:
    """(points, radii, edges, facets): the hull's vertices (every sphere kept), its edges, and its
    facets (vertex triples (F, 3), edge triples (F, 3), outward normals (F, 3)) when it is a
    polyhedron, else None."""
    if len(points) >= 5 and not radii.any():
        try:
            hull = ConvexHull(points)
        except QhullError:
            return points, radii, _hull_edges(points), None
        keep = hull.vertices
        index = np.full(len(points), -1)
        index[keep] = np.arange(len(keep))
        simplices = index[hull.simplices]
        edges, sides = _edges(simplices, len(keep))
        return points[keep], radii[keep], edges, (simplices, sides, hull.equations[:, :3])
    return points, radii, _hull_edges(points), None


def _edges(simplices: np.ndarray, count: int) -> tuple[np.ndarray, np.ndarray]:
    """(E, 2) sorted index pairs, each once: the edges of triangles (F, 3) over `count` points;
    and each triangle's three edges (F, 3)."""
    pairs = np.sort(np.concatenate([simplices[:, [0, 1]], simplices[:, [1, 2]], simplices[:, [0, 2]]]), axis=1)
    code, sides = np.unique(pairs[:, 0] * count + pairs[:, 1], return_inverse=True)
    return np.column_stack([code // count, code % count]), sides.reshape(3, -1).T


def _sphere_directions(count: int) -> np.ndarray:
    """Unit vectors (count, 3) spread evenly over the sphere (a Fibonacci lattice)."""
    k = np.arange(count) + 0.5
    z = 1.0 - 2.0 * k / count
    angle = np.pi * (1.0 + 5 ** 0.5) * k
    return np.column_stack([np.sqrt(1.0 - z * z) * np.cos(angle), np.sqrt(1.0 - z * z) * np.sin(angle), z])


_UNIT = _sphere_directions(_DIRECTIONS)




def _support(points: np.ndarray, radii: np.ndarray) -> np.ndarray:
    """How far the hull reaches along each direction (D,), metres."""
    return (points @ _UNIT.T + radii[:, None]).max(axis=0)


AXES_TIE = 1e-6  # principal spreads this close (relative) do not decide the axes between them
ROUND_WIDTH = 0.9  # a section narrowest across no less than this share of its widest is near round: a
# 12-gon's 0.97 (its farthest point, on the mirror plane, keeps left and right alike), a square's 0.71
FARTHEST_TIE = 1e-6  # points this close (relative) to the farthest are as far: the first of them is taken


def _principal_axes(points: np.ndarray) -> np.ndarray:
    """The points' principal axes, largest spread first. Where spreads tie (a cylinder across its
    axis, a sphere), the points' spread does not decide the axes in that plane and SVD returns
    whatever rounding leaves: G1 written again to 12 digits turned a shoulder's slabs and changed
    its capsule. There the first axis of the tied plane is the one across which the points are
    narrowest (_narrowest_direction); where all three tie, it points to the farthest point (the
    first of those as far, in the points' order), so a turned link frame does not decide; the link
    frame's axes only for points without extent in the plane."""
    if len(points) < 2:
        return np.eye(3)
    centred = points - points.mean(axis=0)
    _, spread, axes = np.linalg.svd(centred, full_matrices=False)
    if len(axes) < 3:
        return np.vstack([axes, np.cross(*axes[:2])[None] if len(axes) == 2 else np.eye(3)[:3 - len(axes)]])[:3]
    tied = np.abs(np.diff(spread)) <= AXES_TIE * spread[0]
    if tied.all():
        first = _farthest_direction(centred, np.eye(3))
        if first is None:
            return np.eye(3)
        second = _farthest_direction(centred, np.eye(3) - np.outer(first, first))
        if second is None:
            second = np.linalg.svd(first[None])[2][1]
        return np.array([first, second, np.cross(first, second)])
    if tied.any():
        k = int(np.argmax(tied))  # axes k and k + 1 span the tied plane; the other axis is kept
        single = axes[2 if k == 0 else 0]
        plane = np.eye(3) - np.outer(single, single)
        first = _narrowest_direction(centred, axes[k:k + 2])
        first = _farthest_direction(centred, plane) if first is None else first
        if first is None:  # no extent in the plane: the frame's axes, taken into it
            frame = plane
            first = frame[int(np.argmax(np.linalg.norm(frame, axis=1) - 1e-9 * np.arange(3)))]
            first = first / np.linalg.norm(first)
        axes = axes.copy()
        axes[k], axes[k + 1] = first, np.cross(single, first)  # right-handed either way
    return axes


def _narrowest_direction(centred: np.ndarray, plane: np.ndarray) -> np.ndarray | None:
    """The unit direction in the plane (2, 3) across which the points are narrowest: the normal of an
    edge of their hull seen in it (a square's side, not its diagonal: slabs cut along it halve a
    square section). Of edges as narrow (a square's), the one at the first-listed point, toward its
    first-listed neighbour; None for points on a line in the plane, or near round (ROUND_WIDTH)."""
    flat = centred @ plane.T  # (N, 2)
    scale = max(float(np.abs(flat).max()), 1e-300)
    try:
        hull = ConvexHull(flat)
    except (QhullError, ValueError):
        return None
    ring = hull.vertices  # counter-clockwise
    key = np.round(flat / (1e-9 * scale))  # points that coincide seen in the plane (a cylinder's two rings)
    keys, first_of = np.unique(key, axis=0, return_index=True)
    first = first_of[np.searchsorted(keys.view([("", float)] * 2).ravel(),  # each corner as its first-listed point
                                     key[ring].copy().view([("", float)] * 2).ravel())]
    edge = flat[np.roll(ring, -1)] - flat[ring]
    normal = np.column_stack([edge[:, 1], -edge[:, 0]]) / np.linalg.norm(edge, axis=1)[:, None]
    width = np.ptp(flat @ normal.T, axis=0)
    if width.min() > ROUND_WIDTH * np.linalg.norm(flat[ring][:, None] - flat[ring][None], axis=-1).max():
        return None  # near round (a cylinder's ring): no side to cut along; the farthest point's direction
    narrow = np.flatnonzero(width <= width.min() * (1.0 + AXES_TIE))
    ends = np.sort(np.column_stack([first[narrow], np.roll(first, -1)[narrow]]), axis=1)
    pick = narrow[np.lexsort((ends[:, 1], ends[:, 0]))[0]]
    return normal[pick] @ plane


def _farthest_direction(centred: np.ndarray, projector: np.ndarray) -> np.ndarray | None:
    """The unit direction, within the projector's (3, 3) subspace, of the first point farthest in it
    (FARTHEST_TIE); None when every point lies outside it."""
    inside = centred @ projector
    length = np.linalg.norm(inside, axis=1)
    if length.max() <= 1e-12 * max(float(np.abs(centred).max()), 1e-300):
        return None
    k = int(np.argmax(length >= (1.0 - FARTHEST_TIE) * length.max()))
    return inside[k] / length[k]


SIGN_TIE = 1e-6  # a skew or reach this small (relative; URDFs round origins to 9 digits) decides no sign


def body_frame(points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(centre (3,), axes (3, 3) rows, right-handed) that the points decide, not the frame they are
    given in: their mean and principal axes (largest spread first), each of the first two pointing
    where the points are skewed (their third moment along it), else where they reach further, else
    (symmetric across it) to the side of the first point off the plane through the mean. The
    fit works in it: the directions its excess is averaged over and the grid its volumes are
    counted on then turn with the body, so a link frame turned another way fits the same capsules
    (before, the G1 with its frames turned at random fitted capsules up to 1 cm apart)."""
    centre = points.mean(axis=0) if len(points) else np.zeros(3)
    axes = _principal_axes(points).copy()
    if len(points) < 2:
        return centre, axes
    size = max(float(np.abs(points - centre).max()), 1e-12)
    for k in range(2):
        along = (points - centre) @ axes[k] / size
        skew = float(np.mean(along ** 3))
        reach = float(along.max() + along.min())
        first = np.flatnonzero(np.abs(along) > SIGN_TIE)  # a body symmetric across it: its first point
        decide = skew if abs(skew) > SIGN_TIE else reach if abs(reach) > SIGN_TIE else \
            along[first[0]] if len(first) else 1.0
        axes[k] *= np.sign(decide)
    axes[2] = np.cross(axes[0], axes[1])
    return centre, axes


def _hull_edges(points: np.ndarray) -> np.ndarray:
    """(E, 2) index pairs: the convex hull's edges, or every pair for a few or flat points."""
    if len(points) >= 5:
        try:
            return _edges(ConvexHull(points).simplices, len(points))[0]
        except QhullError:
            pass
    if len(points) > 200:  # flat and large: thin it, every vertex is still covered
        return np.zeros((0, 2), dtype=int)
    return np.array(list(combinations(range(len(points)), 2)), dtype=int).reshape(-1, 2)


@dataclass
class _Slabs:
    """Every slab of every (cut, count), slab after slab: the hull's vertices in each and the
    points where its edges cross the slab's cuts."""

    points: np.ndarray  # (M, 3) metres
    radii: np.ndarray  # (M,)
    starts: np.ndarray  # (S,) each slab's first row
    owner: np.ndarray  # (M,) each row's slab
    vertex: np.ndarray  # (M,) the hull vertex a row is, -1 for a crossing or one on a cut
    cut: np.ndarray  # (M,) a crossing's cut: 2 x its axis, + 1 for the slab's upper cut; -1 for a vertex
    edge: np.ndarray  # (M,) the hull edge a crossing is on, -1 for a vertex
    whole: np.ndarray  # (configs,) bool: no slab of that (cut, count) is empty


def _slabs(points: np.ndarray, radii: np.ndarray, edges: np.ndarray, axes: np.ndarray, configs: list) -> _Slabs:
    parts, sizes = [], []
    for k in sorted({k for k, _ in configs}):
        along = points @ axes[k]
        bounds = [np.linspace(along.min(), along.max(), count + 1) for kk, count in configs if kk == k]
        lo = np.concatenate([b[:-1] for b in bounds])
        hi = np.concatenate([b[1:] for b in bounds])
        pts, rad, vertex, part, edge, size = _cut(points, radii, edges, along, lo, hi)
        parts.append((pts, rad, vertex, np.where(part > 0, 2 * k + part - 1, -1), edge))
        sizes.append(size)
    sizes = np.concatenate(sizes)
    counts = np.array([count for _, count in configs])
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    whole = np.minimum.reduceat(sizes, np.concatenate([[0], np.cumsum(counts)[:-1]])) > 0
    points, radii, vertex, cut, edge = (np.concatenate(column) for column in zip(*parts))
    return _Slabs(points, radii, np.minimum(starts, max(len(points) - 1, 0)), np.repeat(np.arange(len(sizes)), sizes),
                  vertex, cut, edge, whole)


def _cut(points, radii, edges, along, lo, hi) -> tuple:
    """The hull's parts between cuts lo[s] and hi[s] (S,), slab after slab: its vertices in the slab
    (with a hair's tolerance) and where its edges cross the two cuts; the vertex each row is (-1: a
    crossing, or a vertex on a cut); which part of the slab a row is (0 a vertex, 1 on the lower
    cut, 2 on the upper); the edge a crossing is on (-1: a vertex); and each slab's row count."""
    span = 1e-9 * max(float(np.ptp(along)), 1e-12)
    slab, vertex = np.nonzero((along >= lo[:, None] - span) & (along <= hi[:, None] + span))
    cuts = np.column_stack([lo, hi]).ravel()  # slab s is cut by 2s and 2s + 1
    a, b = edges[:, 0], edges[:, 1]
    low, high = np.minimum(along[a], along[b]), np.maximum(along[a], along[b])
    column, edge = np.nonzero((low < cuts[:, None]) & (cuts[:, None] < high))  # strictly: an end on a cut is a vertex
    ia, ib = a[edge], b[edge]
    share = (cuts[column] - along[ia]) / (along[ib] - along[ia])
    crossing = points[ia] + share[:, None] * (points[ib] - points[ia])
    key = np.concatenate([3 * slab, 3 * (column // 2) + 1 + column % 2])  # vertices, then lower, upper cut
    order = np.argsort(key, kind="stable")
    pts = np.concatenate([points[vertex], crossing])[order]
    rad = np.concatenate([radii[vertex], np.maximum(radii[ia], radii[ib])])[order]
    on_cut = np.minimum(np.abs(along[vertex] - lo[slab]), np.abs(along[vertex] - hi[slab])) <= 2 * span
    which = np.concatenate([np.where(on_cut, -1, vertex), np.full(len(edge), -1)])[order]
    on_edge = np.concatenate([np.full(len(vertex), -1), edge])[order]
    return pts, rad, which, key[order] % 3, on_edge, np.bincount(key // 3, minlength=len(lo))


@dataclass
class _Outline:
    """What of the hull can be on a slab's rim seen along each axis. A vertex inside a slab only
    if it is on the whole hull's outline (some of its facets face along the axis, some against);
    a crossing on a cut across the axis only if one of its edge's facets faces out of the slab
    (with the cut's own outward normal, it then has one across the axis). Without facets (spheres,
    flat hulls) everything can be."""

    vertex: np.ndarray  # (A, N) bool
    facing: np.ndarray | None  # (A, E, 2) bool: an edge has a facet facing against, with each axis

    @classmethod
    def of(cls, count: int, edges: int, facets, axes: np.ndarray) -> "_Outline":
        if facets is None:
            return cls(np.ones((len(axes), count), dtype=bool), None)
        simplices, sides, normals = facets
        facing = normals @ axes.T  # (F, A)
        against, along = _any_facet(simplices, count, facing <= 1e-9), _any_facet(simplices, count, facing >= -1e-9)
        edge = np.stack([_any_facet(sides, edges, facing <= 1e-9), _any_facet(sides, edges, facing >= -1e-9)], -1)
        return cls(against & along, edge)


def _any_facet(corners: np.ndarray, count: int, true: np.ndarray) -> np.ndarray:
    """(A, count) whether any facet an item is on (vertices or edges: `corners` (F, 3) of each
    facet) is `true` (F, A) for each axis."""
    items = corners.T.ravel()  # corner after corner
    return np.array([np.bincount(items, np.tile(column, 3), minlength=count) > 0 for column in true.T])


def _rim(slabs: _Slabs, coords: np.ndarray, outline: _Outline) -> np.ndarray:
    """(A, M) the rows that can be farthest from a centre seen along each axis: vertices on the
    hull's outline or on a cut; crossings of a cut across the axis on the outline; of a cut across
    another axis (seen edge on: a line) only its two ends. coords (M, A): rows along the axes.
    Without facets (spheres, flat hulls) every row."""
    vertex, cut = slabs.vertex, slabs.cut
    rim = np.repeat(((vertex < 0) & (cut < 0))[None], len(coords.T), axis=0)
    inside = np.flatnonzero(vertex >= 0)
    rim[:, inside] = outline.vertex[:, vertex[inside]]
    rows = np.flatnonzero(cut >= 0)
    if not len(rows):
        return rim
    if outline.facing is None:  # spheres (a crossing's radius counts too) or a flat hull
        rim[:, rows] = True
        return rim
    k, upper = cut[rows] // 2, cut[rows] % 2 == 1
    facing = outline.facing[k, slabs.edge[rows]]  # the upper cut's outward normal is +axis: an edge
    rim[k, rows] = np.where(upper, facing[:, 0], facing[:, 1])  # facet must face against it, the lower's with it
    group = slabs.owner[rows] * 2 + upper  # a slab's crossings of one cut follow each other
    first = np.flatnonzero(np.r_[True, np.diff(group) != 0])
    size = np.diff(np.r_[first, len(rows)])
    for turn in (1, 2):  # seen along the axis after k, the line runs along the one after that, and so on
        seen, line = (k + turn) % 3, coords[rows, (k + 3 - turn) % 3]
        least, most = np.minimum.reduceat(line, first), np.maximum.reduceat(line, first)
        rim[seen, rows] = (line == np.repeat(least, size)) | (line == np.repeat(most, size))
    return rim


def _centres(x, y, radii, owner, starts, rim) -> tuple[np.ndarray, np.ndarray]:
    """The centres (x (I,), y (I,)) of the smallest circles around each instance's points (rows
    x, y (R,) with radii, of instance `owner`, instance i's first row starts[i]) by Badoiu-Clarkson:
    from the box's middle, ever shorter steps toward the farthest point. The farthest point is
    always among the `rim` rows (R,) bool, the only ones searched."""
    cx = 0.5 * (np.minimum.reduceat(x, starts) + np.maximum.reduceat(x, starts))
    cy = 0.5 * (np.minimum.reduceat(y, starts) + np.maximum.reduceat(y, starts))
    rim |= (np.bincount(owner[rim], minlength=len(starts)) == 0)[owner]  # never empty
    x, y, radii = x[rim], y[rim], radii[rim]
    rows = np.bincount(owner[rim], minlength=len(starts))  # per instance, one after another
    first = np.minimum(np.concatenate([[0], np.cumsum(rows)[:-1]]), len(x) - 1)
    index = -np.arange(len(x))
    for step in range(1, 28):
        dx, dy = x - np.repeat(cx, rows), y - np.repeat(cy, rows)
        reach = np.sqrt(dx * dx + dy * dy) + radii
        top = np.maximum.reduceat(reach, first)
        far = -np.maximum.reduceat(np.where(reach == np.repeat(top, rows), index, -len(x)), first)  # the first farthest
        cx, cy = cx + (x[far] - cx) / (step + 1), cy + (y[far] - cy) / (step + 1)
    return cx, cy


def _fit_slabs(slabs: _Slabs, axes: np.ndarray, outline: _Outline) -> tuple[np.ndarray, np.ndarray]:
    """Each slab's thinnest capsule along each axis: ends (A, S, 2, 3) and radii (A, S). The
    axis goes through the centre of the smallest circle around the slab seen along it; the
    ends are pulled in as far as the end caps still hold every point, or one sphere if shorter
    than wide."""
    sides = np.array([np.linalg.svd(axis[None])[2][1:] for axis in axes])  # (A, 2, 3) across each axis
    count, rows = len(axes), len(slabs.points)
    starts = (slabs.starts + rows * np.arange(count)[:, None]).ravel()  # (A S,) axis after axis
    owner = (slabs.owner + len(slabs.starts) * np.arange(count)[:, None]).ravel()  # (A M,)
    size = np.tile(np.bincount(slabs.owner, minlength=len(slabs.starts)), count)  # (A S,) rows of each
    flat = np.concatenate([slabs.points @ side.T for side in sides])  # (A M, 2)
    x, y = flat[:, 0].copy(), flat[:, 1].copy()
    radii = np.tile(slabs.radii, count)
    coords = slabs.points @ axes.T  # (M, A)
    cx, cy = _centres(x, y, radii, owner, starts, _rim(slabs, coords, outline).ravel())
    dx, dy = x - np.repeat(cx, size), y - np.repeat(cy, size)
    across = np.sqrt(dx * dx + dy * dy)
    radius = np.maximum.reduceat(across + radii, starts)  # (A S,)
    along = coords.T.ravel()  # (A M,)
    reach = np.sqrt(np.clip((np.repeat(radius, size) - radii) ** 2 - across ** 2, 0.0, None))
    lo = np.minimum.reduceat(along + reach, starts)
    hi = np.maximum.reduceat(along - reach, starts)
    sphere = lo > hi  # shorter than wide
    middle = 0.5 * (lo + hi)
    lo, hi = np.where(sphere, middle, lo), np.where(sphere, middle, hi)
    if sphere.any():
        ball = np.maximum.reduceat(np.sqrt((along - np.repeat(middle, size)) ** 2 + across ** 2) + radii, starts)
        radius = np.where(sphere, ball, radius)
    radius = radius.reshape(count, -1)
    base = np.einsum("asj,ajk->ask", np.stack([cx, cy], -1).reshape(count, -1, 2), sides)  # (A, S, 3)
    lo, hi = lo.reshape(count, -1, 1), hi.reshape(count, -1, 1)
    ends = np.stack([base + lo * axes[:, None], base + hi * axes[:, None]], axis=2)
    return ends, radius
