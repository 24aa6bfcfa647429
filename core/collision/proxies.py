"""Capsule proxies of a robot's bodies, fitted once per robot and kept with its tree.

A body is a link that moves (or the root) with every link fixed to it; its
geometry is each link's URDF <collision> shapes, or its <visual> ones where a
link has none (G1's rubber hands). One to three capsules cover a body: cut
along the axis that gives the smallest total volume, each slab of the body's
convex hull wrapped by the thinnest capsule on that axis. A capsule is convex,
so covering a slab's hull vertices and where the hull's edges cross the cuts
covers the whole slab: the proxies contain the meshes, and a distance between
proxies is never more than between the meshes (conservative).
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from itertools import combinations

import numpy as np
from scipy.spatial import ConvexHull, QhullError

from ..feet.geometry import body_points, rigid_links
from ..model.kinematics import FIXED, KinematicTree

MAX_CAPSULES = 2  # per body
EXTRA_CAPSULE_COST = 0.15  # a further capsule must save this share of volume to be worth its distances


@dataclass
class CollisionModel:
    """Capsules of a robot's bodies in their link frames (metres)."""

    body_links: list[int]  # link carrying each body (B,)
    body_names: list[str]  # that link's name
    capsule_body: np.ndarray  # (C,) body of each capsule
    ends: np.ndarray  # (C, 2, 3) segment ends in the body link's frame
    radius: np.ndarray  # (C,)

    @property
    def capsule_link(self) -> np.ndarray:
        return np.asarray(self.body_links, dtype=int)[self.capsule_body]

    def body_index(self, name: str) -> int:
        try:
            return self.body_names.index(name)
        except ValueError:
            raise KeyError(f"no collision body on link {name!r} (bodies: {', '.join(self.body_names)})") from None

    def world_ends(self, poses: dict[int, np.ndarray], capsules: np.ndarray | None = None) -> np.ndarray:
        """Segment ends (F, C, 2, 3) in the world for link poses {link: (F, 4, 4)}."""
        capsules = np.arange(len(self.radius)) if capsules is None else capsules
        links = self.capsule_link[capsules]
        frames = len(next(iter(poses.values())))
        out = np.empty((frames, len(capsules), 2, 3))
        for link in np.unique(links):
            rows = np.flatnonzero(links == link)
            pose = poses[int(link)]
            out[:, rows] = np.einsum("fij,ckj->fcki", pose[:, :3, :3], self.ends[capsules[rows]]) \
                + pose[:, None, None, :3, 3]
        return out


def collision_model(tree: KinematicTree) -> CollisionModel:
    """The robot's capsules, fitted on first use and kept with the tree, and for the process per
    robot file (a batch reads the robot again for every clip; its meshes are read once)."""
    return per_robot(tree, "_collision_model", _MODELS, fit_model)


_MODELS: dict = {}
KEEP_ROBOTS = 4  # robots whose capsules and pairs a process keeps


def robot_key(tree: KinematicTree) -> tuple | None:
    """What identifies a robot for the process caches: its file (path, modification time) and its
    tree's shape; None for a robot built in memory (cached with its tree only)."""
    path = tree.robot.source_path
    try:
        stamp = os.stat(path).st_mtime_ns if path is not None else None
    except OSError:
        return None
    if stamp is None:
        return None
    shapes = tuple((name, tuple(_shape_key(g) for g in link.collisions), tuple(_shape_key(g) for g in link.visuals))
                   for name, link in tree.robot.links.items())
    numbers = b"".join(a.tobytes() for a in (tree.parent, tree.origins, tree.axes, tree.lower, tree.upper))
    return str(path), stamp, tuple(tree.link_names), numbers, hash(shapes)  # a robot re-described in memory differs


def _shape_key(geom) -> tuple:
    return (geom.kind, geom.filename, geom.radius, geom.length, tuple(np.ravel(geom.size if geom.size is not None else ())),
            tuple(np.ravel(geom.scale)), np.asarray(geom.origin).tobytes())


def per_robot(tree: KinematicTree, attribute: str, cache: dict, build):
    """build(tree), kept with the tree (as `attribute`) and for the process per robot file in
    `cache` (the last KEEP_ROBOTS robots): a batch reads the robot again for every clip."""
    value = getattr(tree, attribute, None)
    if value is None:
        key = robot_key(tree)
        value = cache.get(key) if key is not None else None
        if value is None:
            value = build(tree)
            if key is not None:
                while len(cache) >= KEEP_ROBOTS:
                    cache.pop(next(iter(cache)))
                cache[key] = value
        setattr(tree, attribute, value)
    return value


def fit_model(tree: KinematicTree) -> CollisionModel:
    links, names, owner, ends, radius = [], [], [], [], []
    for link in range(len(tree.link_names)):
        if link != 0 and tree.kind[link] == FIXED:
            continue
        points, radii, missing = body_geometry(tree, link)
        fitted = fit_capsules(points, radii) if points is not None else []
        fitted += bone_capsules(tree, link) if missing else []
        if not fitted:
            continue
        for a, b, r in fitted:
            owner.append(len(links))
            ends.append((a, b))
            radius.append(r)
        links.append(link)
        names.append(tree.link_names[link])
    return CollisionModel(links, names, np.array(owner, dtype=int), np.array(ends, dtype=float).reshape(-1, 2, 3),
                          np.array(radius, dtype=float))


def body_geometry(tree: KinematicTree, link: int) -> tuple[np.ndarray | None, np.ndarray | None, bool]:
    """Points (K, 3) and radii (K,) of a body in its link's frame: each of its links' collision
    shapes, else that link's visual ones (G1's rubber hands have no collision shape, and are
    what touches the belly); (None, None) without any, and whether some link's shapes could
    not be read (mesh files missing)."""
    points, radii, missing = [], [], False
    for i in rigid_links(tree, link):
        urdf_link = tree.robot.links[tree.link_names[i]]
        if not (urdf_link.collisions or urdf_link.visuals):
            continue
        found = body_points(tree, link, [i])  # collisions, else visuals, of this one link
        if len(found.points) == 1 and not found.points.any() and not found.radius.any():
            missing = True  # its mesh files are missing: no shape to fit
            continue
        points.append(found.points)
        radii.append(found.radius)
    if not points:
        return None, None, missing
    return np.concatenate(points), np.concatenate(radii), missing


BONE_RADIUS = 0.15  # a bone capsule's radius per metre of its length ...
BONE_RADIUS_M = (0.02, 0.05)  # ... within these


def bone_capsules(tree: KinematicTree, link: int) -> list[tuple]:
    """A body whose geometry cannot be read (mesh files not shipped, as the test H1's): one capsule
    from its link's origin to each child body's, as thick as a limb of that length. Rough, but
    a thigh still meets the other thigh."""
    group = rigid_links(tree, link)
    children = [c for c in range(len(tree.link_names)) if tree.parent[c] in group and c not in group]
    if not children:  # the end of a limb: its farthest fixed link (a hand sphere) ends the bone
        children = [c for c in group if c != link]
    zero = tree.zero_pose()
    ends = [(np.linalg.inv(zero[link]) @ zero[c])[:3, 3] for c in children]
    if not children:
        return []
    if len(children) > 2 and tree.parent[children[0]] == link and all(tree.kind[c] == FIXED for c in children):
        ends = [max(ends, key=np.linalg.norm)]
    out = []
    for end in ends:
        length = float(np.linalg.norm(end))
        if length > 0.05:
            out.append((np.zeros(3), end, float(np.clip(BONE_RADIUS * length, *BONE_RADIUS_M))))
    return out


def fit_capsules(points: np.ndarray, radii: np.ndarray, most: int = MAX_CAPSULES) -> list[tuple]:
    """[(end a (3,), end b (3,), radius)] covering the convex hull of the points (spheres of
    `radii` around them): the set of 1 to `most` capsules of smallest volume (a further capsule
    must save EXTRA_CAPSULE_COST of it), along the principal axis one capsule fits best, the
    hull cut into slabs along any principal axis."""
    edges = _hull_edges(points)
    centred = points - points.mean(axis=0)
    _, _, axes = np.linalg.svd(centred, full_matrices=False) if len(points) > 1 else (None, None, np.eye(3))
    axes = np.vstack([axes, np.eye(3)])[:3] if len(axes) < 3 else axes
    singles = [[_fit_on_axis(points, radii, axis)] for axis in axes]
    costs = [_volume(*_capsule_size(fit[0])) for fit in singles]
    k = int(np.argmin(costs))
    best, best_cost, axis = singles[k], costs[k], axes[k]
    # capsules along the best one-capsule axis, cut along it (a limb's segments) or across it
    # (strips side by side: a flat hand or a wide hip motor is thinner in two or three)
    for cut in axes:
        along = points @ cut
        for count in range(2, most + 1):
            cuts = np.linspace(along.min(), along.max(), count + 1)
            capsules = [_fit_on_axis(*_slab(points, radii, edges, along, lo, hi), axis)
                        for lo, hi in zip(cuts[:-1], cuts[1:])]
            cost = sum(_volume(*_capsule_size(c)) for c in capsules) * (1 + EXTRA_CAPSULE_COST * (count - 1))
            if cost < best_cost:
                best, best_cost = capsules, cost
    return best


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
    span = max(hi - lo, 1e-12) * 1e-9
    inside = (along >= lo - span) & (along <= hi + span)
    pts, rad = [points[inside]], [radii[inside]]
    a, b = edges[:, 0], edges[:, 1]
    for cut in (lo, hi):
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


def _capsule_size(capsule: tuple) -> tuple[float, float]:
    a, b, radius = capsule
    return radius, float(np.linalg.norm(b - a))


def _volume(radius: float, length: float) -> float:
    return np.pi * radius ** 2 * length + 4.0 / 3.0 * np.pi * radius ** 3
