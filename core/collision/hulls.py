"""Convex-hull proxies for the trunk's bodies, and the exact distance of any proxy pair.

The G1's pelvis and torso are flat where capsules are round: capsules held the arm up to 27 mm
further out than the meshes need (docs/history/self_collision.md). A trunk body (one that more
than one limb branches from) whose geometry is all mesh gets its hull instead, simplified to at
most HULL_VERTICES vertices (greedily: each time the hull vertex farthest outside) and rounded
by the farthest any mesh vertex stays outside it: it holds the mesh (conservative). Its
capsule row is kept as the hull's bounding capsule (broad phases, bounding spheres, drawing).
"""
from __future__ import annotations

import os

import numpy as np
from scipy.spatial import ConvexHull, QhullError

from ..model.kinematics import FIXED, KinematicTree
from .convex import convex_distance, core_distance, face_normals
from .distance import segment_closest
from .smooth import capsule_to_smooth

# off by default: on, the G1's limb error with avoidance falls (walk +0.63 -> +0.48 deg, hop +1.13 -> +0.69) but
# the avoidance is no longer continuous in its input (flat faces: tests/core/test_steady_continuity.py,
# test_invariance_avoidance.py) and costs twice the CPU (docs/history/self_collision.md, session 17, s17-hulls)
HULL_PROXIES = os.environ.get("ROBOT_RETARGET_HULLS", "") == "1"
# a trunk body as a soft maximum of planes around its mesh instead (core.collision.smooth; wins over HULL_PROXIES).
# Off by default: continuous in its input, 0 % colliding, G1 limbs with avoidance walk +0.62 / hop +0.56 deg over off
# (capsules +0.63 / +1.13; target +0.5), but the hop in an A-pose rest bakes 1.68 deg RMS apart
# (test_invariance_avoidance.py), the walk's jerk is 2.3x off's (test_collision.py's steadiness test) and the bake
# with avoidance takes 1.9x the CPU of capsules' (docs/history/self_collision.md, session 19, s19-trunk)
SMOOTH_TRUNK = os.environ.get("ROBOT_RETARGET_SMOOTH_TRUNK", "") == "1"
HULL_VERTICES = 64  # vertices of a simplified hull, at most (32: rounded by 6 / 10 mm on the G1 pelvis / torso;
# 64: 2.8 / 4.5). At most 127: the searches' vertex indices are kept as int8 (core.collision.avoid)
HULL_FACES = 2 * HULL_VERTICES - 4  # a hull of V vertices has at most 2V - 4 triangles
HULL_TOLERANCE_M = 0.001  # a hull stops growing when no mesh vertex is further outside it than this


def smooth_trunk() -> bool:
    """Whether trunk bodies are smooth proxies (SMOOTH_TRUNK, read when called: tests switch it)."""
    return SMOOTH_TRUNK


def trunk_links(tree: KinematicTree) -> set[int]:
    """The links more than one moving chain branches from (through links fixed to them): the
    pelvis (legs, waist) and the torso (arms), where the hands and forearms come close; none unless
    HULL_PROXIES or SMOOTH_TRUNK."""
    if not (HULL_PROXIES or SMOOTH_TRUNK):
        return set()
    body = {}
    for link in range(len(tree.link_names)):  # each link's body: its own, or the one it is fixed to
        up = link
        while up > 0 and tree.kind[up] == FIXED:
            up = int(tree.parent[up])
        body[link] = up
    branches: dict[int, int] = {}
    for link in range(1, len(tree.link_names)):
        if tree.kind[link] != FIXED:
            owner = body[int(tree.parent[link])]
            branches[owner] = branches.get(owner, 0) + 1
    return {link for link, count in branches.items() if count > 1}


def simplified_hull(points: np.ndarray, most: int = HULL_VERTICES) -> tuple[np.ndarray, np.ndarray, float] | None:
    """The points' (N, 3) hull simplified to at most `most` vertices: vertices (V, 3), outward
    triangles (M, 3) and the radius (m) that makes the rounded hull hold every point; None for a
    flat or degenerate set."""
    try:
        hull = ConvexHull(points)
    except (QhullError, ValueError):
        return None
    candidates = points[hull.vertices]
    centre = candidates.mean(axis=0)
    first = int(np.argmax(np.linalg.norm(candidates - centre, axis=1)))
    chosen = [first, int(np.argmax(np.linalg.norm(candidates - candidates[first], axis=1)))]
    line = candidates[chosen[1]] - candidates[first]
    off = np.cross(candidates - candidates[first], line)
    chosen.append(int(np.argmax(np.linalg.norm(off, axis=1))))
    normal = np.cross(line, candidates[chosen[2]] - candidates[first])
    chosen.append(int(np.argmax(np.abs((candidates - candidates[first]) @ normal))))
    if len(set(chosen)) < 4:
        return None
    while True:
        try:
            simple = ConvexHull(candidates[chosen])
        except QhullError:
            return None
        outside = (candidates @ simple.equations[:, :3].T + simple.equations[:, 3]).max(axis=1)
        if len(chosen) >= most or outside.max() <= HULL_TOLERANCE_M:
            break
        chosen.append(int(np.argmax(outside)))
    vertices = candidates[chosen][simple.vertices]
    index = np.full(len(chosen), -1)
    index[simple.vertices] = np.arange(len(simple.vertices))
    faces = index[simple.simplices]
    corner = vertices[faces]
    flip = np.einsum("mi,mi->m", np.cross(corner[:, 1] - corner[:, 0], corner[:, 2] - corner[:, 0]),
                     simple.equations[:, :3]) < 0
    faces[flip] = faces[flip][:, ::-1]
    core = np.broadcast_to(vertices, (len(candidates),) + vertices.shape)
    gap = core_distance(candidates[:, None], core)[0]
    return vertices, faces, float(gap.max())


def pad_hull(vertices: np.ndarray, faces: np.ndarray, most: int = HULL_VERTICES) -> tuple[np.ndarray, np.ndarray]:
    """The hull's vertices (most, 3) and faces (2 most - 4, 3), padded by repeating the first: a
    repeated vertex or face changes no support point nor any overlap."""
    out_v = np.repeat(vertices[:1], most, axis=0)
    out_v[:len(vertices)] = vertices
    out_f = np.repeat(faces[:1], 2 * most - 4, axis=0)
    out_f[:len(faces)] = faces
    return out_v, out_f


def proxy_distance(model, capsules: np.ndarray, ends: np.ndarray, hull_world, within: float = np.inf,
                   simplex: tuple | None = None) -> tuple:
    """Signed distances (K,) of capsule-pair entries (capsule indices (K, 2), their world ends
    (K, 2, 2, 3)), the points on both cores (K, 3) and the normal from the second toward the first
    (K, 3), and `simplex`. A capsule row that is a hull's (model.hull >= 0) is measured on the hull where its
    bounding capsule comes within `within` (beyond, that capsule's distance: a lower bound):
    hull_world(rows, side) gives those entries' world vertices (n, HULL_VERTICES, 3). simplex: where
    each entry's search on hulls ended last (core.collision.convex.core_search: vertex indices (K, 4)
    on each side, how many (K,)), updated in place."""
    a, b = capsules[:, 0], capsules[:, 1]
    ca, cb = segment_closest(ends[:, 0, 0], ends[:, 0, 1], ends[:, 1, 0], ends[:, 1, 1])
    normal = ca - cb
    length = np.linalg.norm(normal, axis=-1)  # capsule_distance's, measured once for the distance and the normal
    exact = length - model.radius[a] - model.radius[b]
    crossing = np.flatnonzero(length <= 1e-9)  # overlapping axes: along the middles' line
    if len(crossing):  # (the middles of every entry cost two strided means a look: these few only)
        middle = ends[crossing, 0].mean(axis=1) - ends[crossing, 1].mean(axis=1)
        normal[crossing] = np.where(np.linalg.norm(middle, axis=-1, keepdims=True) > 1e-9, middle, [0.0, 0.0, 1.0])
        length = length.copy()
        length[crossing] = np.linalg.norm(normal[crossing], axis=-1)
    normal = normal / length[:, None]
    if model.hull is None:
        return exact, ca, cb, normal, simplex
    hull_a, hull_b = model.hull[a] >= 0, model.hull[b] >= 0
    near = exact < within
    if model.hull_planes is not None:
        _smooth_entries(model, capsules, ends, hull_world, near & (hull_a != hull_b), hull_a,
                        (exact, ca, cb, normal), within)
        return exact, ca, cb, normal, simplex
    for kind_a, kind_b in ((True, False), (False, True), (True, True)):
        rows = np.flatnonzero((hull_a == kind_a) & (hull_b == kind_b) & near)
        if not len(rows):
            continue
        cores, radii, faces = [], [], []
        for side, is_hull in ((0, kind_a), (1, kind_b)):
            caps = capsules[rows, side]
            if is_hull:
                h = model.hull[caps]
                cores.append(hull_world(rows, side))
                radii.append(model.hull_radius[h])
                faces.append((len(cores) - 1, model.hull_faces[h]))
            else:
                cores.append(ends[rows, side])
                radii.append(model.radius[caps])

        def axes(inside, cores=cores, faces=faces):  # the hulls' face normals, for overlapping entries only
            return np.concatenate([face_normals(cores[side][inside], triangles[inside])
                                   for side, triangles in faces], axis=1)
        known = None if simplex is None else tuple(x[rows] for x in simplex)
        exact[rows], ca[rows], cb[rows], normal[rows], ended = convex_distance(
            cores[0], radii[0], cores[1], radii[1], axes, within, normal[rows], known)
        if simplex is not None:
            for x, y in zip(simplex, ended):
                x[rows] = y
    return exact, ca, cb, normal, simplex


def _smooth_entries(model, capsules: np.ndarray, ends: np.ndarray, hull_world, rows: np.ndarray, first: np.ndarray,
                    out: tuple, within: float = np.inf) -> None:
    """proxy_distance's entries `rows` (K,) between a capsule and a smooth trunk proxy
    (core.collision.smooth), the proxy first where `first`: their distances, points and normals
    written into out (exact, ca, cb, normal). Two smooth proxies keep their bounding capsules'
    distance (a lower bound: each bounding capsule holds its proxy). Beyond `within`, a lower bound."""
    exact, ca, cb, normal = out
    for side in (0, 1):
        picked = np.flatnonzero(rows & (first if side == 0 else ~first))
        if not len(picked):
            continue
        other = capsules[picked, 1 - side]
        gap, on_capsule, on_proxy, away = capsule_to_smooth(hull_world(picked, side), model.hull[capsules[picked, side]],
                                                            model, ends[picked, 1 - side], model.radius[other], within)
        exact[picked] = gap
        if side == 0:  # the normal points from the second (the capsule) toward the first
            ca[picked], cb[picked], normal[picked] = on_proxy, on_capsule, -away
        else:
            ca[picked], cb[picked], normal[picked] = on_capsule, on_proxy, away
