"""Where a robot touches the ground: points of its bodies, and the contact figures of a bake.

A body is a link with every link fixed to it; its points come from the
URDF's collision geometry (sphere centres with their radius, box corners,
cylinder rims, convex-hull vertices of meshes), or from the visual geometry
when a body has no collision geometry at all. The lowest point of a body is
min(z - radius) over its points in world space.
"""
from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy.spatial import ConvexHull, QhullError

from ..motion.frames import frame_blocks
from .contacts import Contacts
from ..model.kinematics import FIXED, KinematicTree
from ..model.meshes import MeshError, load_mesh, mesh_bounds
from ..model.same_bits import same_bits
from ..model.transforms import axis_angle_to_matrix
from ..model.mesh_paths import resolve_mesh_path
from ..model.urdf import Geometry

SLIDE_SPEED_M_S = 0.1  # a contact interval slides when its foot moves faster than this
PENETRATION_M = 0.02  # a frame penetrates when a foot point is this far below the ground
ON_GROUND_M = 0.01  # a foot is on the ground when its lowest point is at most this high
PIVOT_SOFTNESS_M = 0.003  # points within a few millimetres of the lowest share the contact
_RIM_POINTS = 12


@dataclass
class BodyPoints:
    """Points of one rigid body in the frame of its link, metres; radius 0 except spheres."""

    link: int
    points: np.ndarray  # (K, 3)
    radius: np.ndarray  # (K,)

    def world(self, pose: np.ndarray) -> np.ndarray:
        """Points (F, K, 3) for link poses (F, 4, 4)."""
        return self.points @ pose[:, :3, :3].transpose(0, 2, 1) + pose[:, None, :3, 3]

    def lowest(self, pose: np.ndarray) -> np.ndarray:
        """Height (F,) of the body's lowest point."""
        z = pose[:, 2, :3] @ self.points.T + pose[:, 2, 3:4]  # one matrix product (a hull has hundreds of points)
        return (z - self.radius).min(axis=1)


def rigid_links(tree: KinematicTree, link: int) -> list[int]:
    """`link` and every link attached below it by fixed joints only."""
    out = [link]
    for i in range(len(tree.link_names)):
        if tree.parent[i] in out and tree.kind[i] == FIXED:
            out.append(i)
    return out


def subtree_links(tree: KinematicTree, link: int) -> list[int]:
    """`link` and every link below it, through any joint: a foot is all that hangs off the leg's tip."""
    out = [link]
    for i in range(len(tree.link_names)):  # parents come before children
        if tree.parent[i] in out:
            out.append(i)
    return out


def body_points(tree: KinematicTree, link: int, links: list[int] | None = None,
                bare: np.ndarray | None = None, shape_points=None) -> BodyPoints:
    """The body's collision points (else its visual points, else `bare`, default its origin) in
    `link`'s frame.

    links: the links that make up the body (default: `link` and its fixed children), placed
    as in the zero pose. shape_points: (geom, urdf_path) -> (points, radii) of one shape
    (default geometry_points; box_points for a cheap bound).
    """
    shape_points = shape_points or geometry_points
    links = rigid_links(tree, link) if links is None else links
    zero = tree.zero_pose()
    to_link = np.linalg.inv(zero[link])
    for kind in ("collisions", "visuals"):
        pts, rad = [], []
        for i in links:
            offset = to_link @ zero[i]
            for geom in getattr(tree.robot.links[tree.link_names[i]], kind):
                p, r = shape_points(geom, tree.robot.source_path)
                pts.append(p @ offset[:3, :3].T + offset[:3, 3])
                rad.append(r)
        if pts and sum(len(p) for p in pts):
            return BodyPoints(link, np.concatenate(pts), np.concatenate(rad))
    return BodyPoints(link, np.zeros((1, 3)) if bare is None else np.reshape(bare, (1, 3)).astype(float),
                      np.zeros(1))


def geometry_points(geom: Geometry, urdf_path) -> tuple[np.ndarray, np.ndarray]:
    """Points (K, 3) and radii (K,) of one shape, in its link's frame."""
    if geom.kind == "sphere":
        local, radius = np.zeros((1, 3)), np.array([geom.radius or 0.0])
    elif geom.kind == "box":
        half = np.asarray(geom.size, float) / 2
        signs = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], float)
        local, radius = signs * half, np.zeros(8)
    elif geom.kind == "cylinder":
        angle = np.linspace(0, 2 * np.pi, _RIM_POINTS, endpoint=False)
        ring = np.column_stack([np.cos(angle), np.sin(angle), np.zeros_like(angle)]) * (geom.radius or 0.0)
        ends = [ring + [0, 0, s * (geom.length or 0.0) / 2] for s in (-1, 1)]
        local = np.concatenate(ends)
        radius = np.zeros(len(local))
    else:
        local = _mesh(geom, urdf_path, _hull)
        radius = np.zeros(len(local))
    return local @ geom.origin[:3, :3].T + geom.origin[:3, 3], radius


def box_points(geom: Geometry, urdf_path) -> tuple[np.ndarray, np.ndarray]:
    """geometry_points, but a mesh gives the 8 corners of the box around its vertices: no
    point of the mesh is farther from any point than the farthest corner, and the box costs
    a read of the file, not a hull (Bodies.reach_bound)."""
    if geom.kind in ("sphere", "box", "cylinder"):
        return geometry_points(geom, urdf_path)
    local = _mesh(geom, urdf_path, _box)
    return local @ geom.origin[:3, :3].T + geom.origin[:3, 3], np.zeros(len(local))


def _mesh(geom: Geometry, urdf_path, read) -> np.ndarray:
    """read(path, mtime) of the geometry's mesh file, scaled (empty when the file is not found)."""
    path = resolve_mesh_path(geom.filename or "", urdf_path) if urdf_path is not None else None
    local = read(str(path), os.stat(path).st_mtime_ns) if path is not None else np.zeros((0, 3))
    return local * np.asarray(geom.scale, float)


@functools.lru_cache(maxsize=256)
def _box(path: str, mtime_ns: int) -> np.ndarray:
    """Corners (8, 3) of the box around a mesh file's vertices (empty if unreadable, as _hull)."""
    try:
        bounds = mesh_bounds(Path(path))
    except MeshError:
        return np.zeros((0, 3))
    if not len(bounds):
        return bounds
    (low, high) = bounds
    return np.array([[x, y, z] for x in (low[0], high[0]) for y in (low[1], high[1]) for z in (low[2], high[2])])


@functools.lru_cache(maxsize=256)
def _hull(path: str, mtime_ns: int) -> np.ndarray:
    """Convex-hull vertices of a mesh file (empty if unreadable): all a ground test needs."""
    try:
        verts, _ = load_mesh(Path(path))
    except MeshError:
        return np.zeros((0, 3))
    if len(verts) < 5:
        return verts
    try:
        return verts[ConvexHull(verts).vertices]
    except Exception:  # flat or degenerate meshes: every vertex is a candidate
        return verts


def standing_rotation(body: BodyPoints, rotation: np.ndarray) -> np.ndarray:
    """The foot's rotation (3, 3) standing level: `rotation` (its zero pose) turned the least so
    that its sole faces straight down. The sole is the plane of the foot's points when they lie
    in one (spheres or a box face), else the convex hull's largest face below it; a robot whose
    zero pose has a bent ankle still stands on a flat sole."""
    points = body.points
    down = rotation.T @ np.array([0.0, 0.0, -1.0])  # the world's down in the foot's frame, as built
    normal = _sole_normal(points, down)
    if normal is None:
        return rotation
    world = rotation @ normal
    axis = np.cross(world, [0.0, 0.0, -1.0])
    sin, cos = np.linalg.norm(axis), float(world @ [0.0, 0.0, -1.0])
    if sin < 1e-9:
        return rotation
    return axis_angle_to_matrix(axis / sin, same_bits(np.arctan2, sin, cos)) @ rotation  # core.model.same_bits


def _sole_normal(points: np.ndarray, down: np.ndarray) -> np.ndarray | None:
    """Outward normal (3,) of the sole in the foot's frame, the side of `down`; None for a point."""
    if len(points) < 3:
        return None
    centred = points - points.mean(axis=0)
    _, sizes, axes = np.linalg.svd(centred, full_matrices=False)
    if sizes[-1] < 1e-6 * max(sizes[0], 1e-12):  # all in one plane
        normal = axes[-1]
        return normal if normal @ down >= 0 else -normal
    try:
        hull = ConvexHull(points)
    except QhullError:
        return None
    faces: dict[tuple, list] = {}  # the hull's triangles grouped by face (their shared normal)
    for simplex, equation in zip(hull.simplices, hull.equations):
        normal = equation[:3]
        if normal @ down < np.cos(np.radians(45.0)):
            continue
        a, b, c = points[simplex]
        face = faces.setdefault(tuple(np.round(normal, 4)), [normal, 0.0])
        face[1] += 0.5 * np.linalg.norm(np.cross(b - a, c - a))
    return max(faces.values(), key=lambda face: face[1])[0] if faces else None


SOLVE_POINTS = 24  # foot points a planted-leg solve carries: the sole's outline and the body's extremes


def _farthest(points: np.ndarray, keep: list[int], count: int) -> list[int]:
    """Grow `keep` to `count` indices of `points` (K, d), each next the farthest from those kept."""
    keep = list(keep) or [int(np.argmin(points[:, -1]))]
    dist = np.min(np.linalg.norm(points[:, None] - points[keep][None], axis=-1), axis=1)
    while len(keep) < min(count, len(points)):
        pick = int(np.argmax(dist))
        keep.append(pick)
        dist = np.minimum(dist, np.linalg.norm(points - points[pick], axis=-1))
    return keep


def solve_points(body: BodyPoints, flat_rotation: np.ndarray, count: int = SOLVE_POINTS) -> BodyPoints:
    """The few points of a foot a leg solve needs (a mesh hull has hundreds to thousands).

    Keeps the outline of the sole (the points within 1 cm of the lowest when
    the foot stands flat, thinned along their 2D hull) and fills up with the
    body's points farthest from those, so toe, heel and edges still meet the
    ground test. A body with few points is returned as it is.
    """
    if len(body.points) <= count:
        return body
    flat = body.points @ flat_rotation.T  # in the world frame of the flat foot
    sole = sole_indices(body, flat_rotation)
    outline = sole
    if len(sole) > 3:
        try:
            outline = sole[ConvexHull(flat[sole, :2]).vertices]
        except Exception:  # collinear or coincident sole points: all are candidates
            outline = sole
    keep = [int(outline[i]) for i in _farthest(flat[outline], [], count // 2)]
    keep = _farthest(flat, keep, count)
    return BodyPoints(body.link, body.points[keep], body.radius[keep])


def sole_indices(body: BodyPoints, flat_rotation: np.ndarray, tolerance: float = 0.01) -> np.ndarray:
    """Points that touch a flat floor when the foot link has `flat_rotation` (its zero pose)."""
    z = body.points @ flat_rotation[2] - body.radius
    return np.flatnonzero(z <= z.min() + tolerance)


COARSE_POINTS = 32  # points of a body's first, cheap ground test
NEAR_M = 0.4  # metres; a link origin higher than this and than its body's reach cannot touch the ground
_ROUNDING_M = 1e-9  # a bound's slack: a box corner that is a mesh vertex gives its reach, rounded otherwise


class Bodies:
    """Body points of a robot's links, built on first use and kept with the tree (meshes are read once
    per robot, not once per bake)."""

    def __init__(self, tree: KinematicTree):
        self.tree = tree
        if getattr(tree, "_body_points", None) is None:
            tree._body_points = {}
        self._cache = tree._body_points

    def __call__(self, link: int) -> BodyPoints:
        if link not in self._cache:
            self._cache[link] = body_points(self.tree, link)
        return self._cache[link]

    def reach(self, link: int) -> float:
        """How far (m) the body gets from its link's origin: no point of it is farther (a box hung
        0.9 m under a waist reaches 0.95 m; the G1's torso 0.49 m, the H1's 0.70 m)."""
        if ("reach", link) not in self._cache:
            body = self(link)
            self._cache["reach", link] = float((np.linalg.norm(body.points, axis=1) + body.radius).max())
        return self._cache["reach", link]

    def reach_bound(self, link: int) -> float:
        """At least reach(link), from the boxes around the body's meshes instead of their hulls: a
        mesh is read, not merged and hulled (hulling the G1's bodies that stay high cost ~0.1 s CPU
        of every bake command, each a new process)."""
        if ("bound", link) not in self._cache:
            if ("reach", link) in self._cache:
                bound = self._cache["reach", link]
            else:
                body = body_points(self.tree, link, shape_points=box_points)
                bound = float((np.linalg.norm(body.points, axis=1) + body.radius).max()) + _ROUNDING_M
            self._cache["bound", link] = bound
        return self._cache["bound", link]

    def may_reach(self, link: int, height: float, margin: float) -> bool:
        """height <= reach(link) + margin: whether the body may get down `height` (m) from its link's
        origin, less a margin; its hulls are read only when reach_bound cannot rule it out."""
        return height <= self.reach_bound(link) + margin and height <= self.reach(link) + margin

    def lowest(self, link: int, pose: np.ndarray, exact_below: float = 0.02) -> np.ndarray:
        """Height (F,) of the body's lowest point, exact wherever it is below `exact_below`.

        A hull of hundreds of points is tested first on a spread-out few (never lower than
        the truth, and higher by at most their covering distance); only frames where that
        could hide a point below `exact_below` are tested on every point.
        """
        body = self(link)
        if len(body.points) <= COARSE_POINTS:
            return body.lowest(pose)
        if ("coarse", link) not in self._cache:
            keep = _farthest(body.points, [], COARSE_POINTS)
            cover = np.min(np.linalg.norm(body.points[:, None] - body.points[keep][None], axis=-1), axis=1).max()
            self._cache["coarse", link] = (BodyPoints(link, body.points[keep], body.radius[keep]),
                                           float(cover + body.radius.max()))
        coarse, cover = self._cache["coarse", link]
        low = coarse.lowest(pose)
        near = np.flatnonzero(low < exact_below + cover)
        low[near] = body.lowest(pose[near])
        return low


def lowest_points(tree: KinematicTree, q: np.ndarray, root: np.ndarray, skip: set[int],
                  bodies: Bodies | None = None, near_m: float = NEAR_M, links: list[int] | None = None,
                  exact_below: float = 0.02) -> np.ndarray:
    """Lowest point (F,) of every body except those whose link is in `skip`, exact wherever it is
    below `exact_below` (above it, a value between the truth and a few centimetres over it).

    Bodies whose link origin never comes within `near_m` of the ground, nor within their own
    reach over `exact_below` (Bodies.reach: a shape hung far under its link), are not tested on
    those frames: they cannot get below it. links: the only links to look at (default every
    link; see ground_candidates).
    """
    bodies = bodies or Bodies(tree)
    links = [i for i in (range(len(tree.link_names)) if links is None else links)
             if i not in skip and (i == 0 or tree.kind[i] != FIXED)]
    lowest = np.full(len(q), np.inf)
    for block in frame_blocks(len(q)):  # every link's pose of a long clip would not fit in memory at once
        for link, pose in tree.poses(q[block], root[block], links).items():
            low = pose[:, 2, 3].min(initial=np.inf)
            if low > near_m and not bodies.may_reach(link, low, exact_below):
                continue  # read no hull of a body that stays high
            within = near_m if np.isinf(near_m) else max(near_m, bodies.reach(link) + exact_below)
            near = np.flatnonzero(pose[:, 2, 3] <= within)
            if len(near):
                rows = near + block.start
                lowest[rows] = np.minimum(lowest[rows], bodies.lowest(link, pose[near], exact_below))
    return lowest


def ground_candidates(tree: KinematicTree, q: np.ndarray, root: np.ndarray, reach_m: float = 0.6,
                      bodies: Bodies | None = None) -> list[int]:
    """Links whose origin comes within `reach_m` of the ground somewhere in the clip, or within
    their body's own reach (Bodies.reach) and the margin reach_m leaves over lowest_points'
    near_m: the only ones later checks of the same motion need to look at (root changes are
    centimetres, not decimetres). A box hung 0.9 m under a waist 0.77 m up was never looked at
    and sank 18 cm; so every body's reach is checked, first against the boxes around its meshes
    (Bodies.may_reach): hulling the G1's every mesh cost ~0.1 s CPU of each bake command."""
    low = np.full(len(tree.link_names), np.inf)
    for block in frame_blocks(len(q)):
        low = np.minimum(low, tree.forward(q[block], root[block])[:, :, 2, 3].min(axis=0))
    bodies = bodies or Bodies(tree)
    margin = reach_m - NEAR_M
    return [i for i in range(len(low)) if low[i] <= reach_m or (
        np.isfinite(low[i]) and (i == 0 or tree.kind[i] != FIXED) and bodies.may_reach(i, low[i], margin))]



def contact_report(feet: dict[str, BodyPoints], poses: dict[str, np.ndarray], contacts: Contacts | None,
                   fps: float) -> dict:
    """foot_slide_pct, foot_slide_mean_m_s, ground_penetration_pct, contact_preserved_pct.

    poses: world pose (F, 4, 4) of each foot link. Slide is the horizontal
    speed of the foot's lowest point, as a point fixed in the foot (so the
    foot rolling over its heel or toe is not a slide); an interval slides when
    its mean speed exceeds SLIDE_SPEED_M_S. Penetration counts frames whose
    lowest foot point is more than PENETRATION_M below the ground; a contact
    frame is preserved when the robot foot's lowest point is at most
    ON_GROUND_M above it.
    """
    frames = len(next(iter(poses.values()))) if poses else 0
    lowest = np.full(frames, np.inf)
    speeds, sliding, intervals, preserved, total = [], 0, 0, 0, 0
    for side, body in feet.items():
        pose = poses[side]
        low = body.lowest(pose)
        lowest = np.minimum(lowest, low)
        if contacts is None or side not in contacts.feet:
            continue
        speed = _contact_point_speed(body, pose, fps)
        for start, end in contacts.intervals(side):
            span = speed[start:max(end - 1, start + 1)]
            speeds.append(span)
            sliding += int(span.mean() > SLIDE_SPEED_M_S)
            intervals += 1
        down = contacts.feet[side]
        preserved += int((low[down] <= ON_GROUND_M).sum())
        total += int(down.sum())
    allspeed = np.concatenate(speeds) if speeds else np.zeros(0)
    return {
        "foot_slide_pct": 100.0 * sliding / intervals if intervals else 0.0,
        "foot_slide_mean_m_s": float(allspeed.mean()) if allspeed.size else 0.0,
        "ground_penetration_pct": float(100.0 * np.mean(lowest < -PENETRATION_M)) if frames else 0.0,
        "contact_preserved_pct": 100.0 * preserved / total if total else 100.0,
    }


def pivot_weights(height: np.ndarray) -> np.ndarray:
    """Soft choice (..., K) of the lowest points: weights sum to 1, near-ties share.

    A flat foot stands on all its sole points (its centre), a rolling foot on
    its heel or toe edge.
    """
    w = np.exp(-(height - height.min(axis=-1, keepdims=True)) / PIVOT_SOFTNESS_M)
    return w / w.sum(axis=-1, keepdims=True)


def _contact_point_speed(body: BodyPoints, pose: np.ndarray, fps: float) -> np.ndarray:
    """Horizontal speed (F,) of the point the foot stands on, from each frame to the next.

    The point is fixed in the foot (pivot_weights at the first frame), so a
    foot rolling over its toe or turning about the point it stands on does
    not count as sliding.
    """
    if len(pose) < 2:
        return np.zeros(len(pose))
    pts = body.world(pose)  # (F, K, 3)
    weights = pivot_weights(pts[:-1, :, 2] - body.radius)
    step = np.einsum("fk,fki->fi", weights, pts[1:, :, :2] - pts[:-1, :, :2])
    speed = np.linalg.norm(step, axis=1) * fps
    return np.append(speed, speed[-1])

