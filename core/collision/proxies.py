"""Capsule proxies of a robot's bodies, fitted once per robot and kept with its tree, for the
process, and on disk (core.collision.store).

A body is a link that moves (or the root) with every link fixed to it; its
geometry is each link's URDF <collision> shapes, or its <visual> ones where a
link has none (G1's rubber hands), and a link's visuals of parts without a
collision shape (link_shapes: fixed links merged into it). Capsules cover a
body's mesh in parts (core.collision.parts), or its convex hull (core.collision.fit): they contain
the meshes, so a distance between proxies is never more than between the
meshes (conservative).
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..feet.geometry import geometry_points, rigid_links
from ..model.kinematics import FIXED, KinematicTree
from ..model.meshes import MeshError, load_mesh
from ..model.transforms import rotate_points
from ..model.urdf import Geometry, Link
from ..model.mesh_paths import resolve_mesh_path
from .fit import fit_capsules
from .hulls import pad_hull, simplified_hull, smooth_trunk, trunk_links
from .support import fit_support
from .parts import BodyMesh, fit_body
from .smooth import fit_smooth, frame_points
from .store import stored, tree_numbers


@dataclass
class CollisionModel:
    """Capsules of a robot's bodies in their link frames (metres)."""

    body_links: list[int]  # link carrying each body (B,)
    body_names: list[str]  # that link's name
    capsule_body: np.ndarray  # (C,) body of each capsule
    ends: np.ndarray  # (C, 2, 3) segment ends in the body link's frame
    radius: np.ndarray  # (C,)
    # hull proxies (core.collision.hulls): each capsule row's hull, -1 for a capsule (C,); None: none
    hull: np.ndarray | None = None
    hull_points: np.ndarray | None = None  # (H, HULL_VERTICES, 3) vertices in the body link's frame, padded
    hull_faces: np.ndarray | None = None  # (H, HULL_FACES, 3) outward triangles, padded
    hull_radius: np.ndarray | None = None  # (H,) metres the hull is rounded by to hold the mesh
    # smooth trunk proxies instead (core.collision.smooth): hull_points are then each one's frame_points (H, 4, 3)
    hull_planes: np.ndarray | None = None  # (H, PLANES, 4) planes' normals and offsets in the link's frame
    hull_slope: np.ndarray | None = None  # (H, PLANES) each plane's slope deep inside
    hull_level: np.ndarray | None = None  # (H,) the level of the soft maximum that holds the mesh

    def __post_init__(self):
        self._support: tuple | None = None  # (support_points, support_radius) once fitted
        self._fit_support: Callable | None = None  # fit_support_of(model) -> that pair or None; None: none to fit

    def support_from(self, fit: Callable) -> "CollisionModel":
        """The model whose support hulls fit(model) gives on first use (support_points): the bound is
        off by default, and the hulls were 28 % of the G1's first-ever fit (6.7 of 24.1 G instructions,
        bench/collision_first_fit.py)."""
        self._fit_support, self._support = fit, None
        return self

    def _support_hulls(self) -> tuple:
        if self._support is None:
            fitted = self._fit_support(self) if self._fit_support is not None else None
            self._support = fitted if fitted is not None else (None, None)
        return self._support

    @property
    def support_points(self) -> np.ndarray | None:
        """Each body's rounded mesh hull for the separating-axis bound (core.collision.support): vertices
        (B, SUPPORT_VERTICES, 3) in the body link's frame, padded; None when no body has a mesh. Fitted on
        first use."""
        return self._support_hulls()[0]

    @property
    def support_radius(self) -> np.ndarray | None:
        """(B,) metres each support hull is rounded by to hold its mesh, -1 for a body without one."""
        return self._support_hulls()[1]

    def arrays(self) -> dict[str, np.ndarray]:
        """The model as arrays (core.collision.store keeps them on disk)."""
        out = {"body_links": np.asarray(self.body_links, dtype=int), "body_names": np.asarray(self.body_names),
               "capsule_body": self.capsule_body, "ends": self.ends, "radius": self.radius}
        for name in _HULL_ARRAYS:
            if getattr(self, name) is not None:
                out[name] = getattr(self, name)
        return out

    @classmethod
    def from_arrays(cls, arrays: dict[str, np.ndarray]) -> "CollisionModel":
        hulls = {name: arrays[name].astype(int if name in ("hull", "hull_faces") else float)
                 for name in _HULL_ARRAYS if name in arrays}
        return cls([int(b) for b in arrays["body_links"]], [str(n) for n in arrays["body_names"]],
                   arrays["capsule_body"].astype(int), arrays["ends"].reshape(-1, 2, 3).astype(float),
                   arrays["radius"].astype(float), **hulls)

    def body_spheres(self) -> tuple[np.ndarray, np.ndarray]:
        """Each body's bounding sphere in its link's frame: centres (B, 3) and radii (B,), metres."""
        if getattr(self, "_spheres", None) is None:
            middle = self.ends.mean(axis=1)
            reach = 0.5 * np.linalg.norm(self.ends[:, 1] - self.ends[:, 0], axis=-1) + self.radius
            centre = np.array([middle[self.capsule_body == b].mean(axis=0) for b in range(len(self.body_links))])
            radius = np.array([(np.linalg.norm(middle[self.capsule_body == b] - centre[b], axis=-1)
                                + reach[self.capsule_body == b]).max() for b in range(len(self.body_links))])
            self._spheres = (centre.reshape(-1, 3), radius)
        return self._spheres

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
            out[:, rows] = rotate_points(pose[:, :3, :3], self.ends[capsules[rows]]) \
                + pose[:, None, None, :3, 3]
        return out

    def world_hulls(self, poses: dict[int, np.ndarray]) -> np.ndarray:
        """Hull vertices (F, H, HULL_VERTICES, 3) in the world for link poses {link: (F, 4, 4)}."""
        links = self.capsule_link[np.flatnonzero(self.hull >= 0)][np.argsort(self.hull[self.hull >= 0])]
        return np.stack([rotate_points(poses[int(link)][:, :3, :3], self.hull_points[h])
                         + poses[int(link)][:, None, :3, 3] for h, link in enumerate(links)], axis=1)


_HULL_ARRAYS = ("hull", "hull_points", "hull_faces", "hull_radius", "hull_planes", "hull_slope", "hull_level")


def collision_model(tree: KinematicTree) -> CollisionModel:
    """The robot's capsules, fitted on first use and kept with the tree, and for the process per
    robot file (a batch reads the robot again for every clip; its meshes are read once). Its
    support hulls are fitted on their first use and kept on disk with the capsules."""
    return per_robot(tree, "_collision_model", _MODELS,
                     lambda t: stored(t, "model", fit_model, CollisionModel.arrays, CollisionModel.from_arrays)
                     .support_from(lambda model: stored(t, "support", lambda _: fit_support_of(t, model),
                                                        _support_arrays, _support_from_arrays)))


def fit_support_of(tree: KinematicTree, model: CollisionModel) -> tuple[np.ndarray, np.ndarray] | None:
    """The model's support hulls (core.collision.support.fit_support) from its bodies' meshes."""
    return fit_support([body_mesh(tree, link) for link in model.body_links])


def _support_arrays(fitted: tuple | None) -> dict[str, np.ndarray]:
    """The support hulls as arrays for the store (none: empty ones, so a robot without meshes is not fitted again)."""
    points, radius = fitted if fitted is not None else (np.zeros((0, 0, 3)), np.zeros(0))
    return {"points": points, "radius": radius}


def _support_from_arrays(arrays: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray] | None:
    radius = arrays["radius"].astype(float)
    return (arrays["points"].astype(float), radius) if len(radius) else None


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
    return str(path), stamp, tree_numbers(tree)  # a robot re-described in memory differs


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
    """The robot's capsules and hull proxies, fitted (no cache); its support hulls on their first use."""
    links, names, owner, ends, radius, hulls = [], [], [], [], [], []
    trunk = trunk_links(tree)
    for link in range(len(tree.link_names)):
        if link != 0 and tree.kind[link] == FIXED:
            continue
        mesh = body_mesh(tree, link)
        whole = mesh is not None and link in trunk and not mesh.radii.any()
        hull = (fit_smooth(mesh.points) if smooth_trunk() else simplified_hull(mesh.points)) if whole else None
        if isinstance(hull, dict):  # the smooth proxy, and the capsule that bounds it
            fitted = fit_capsules(hull["corners"], np.zeros(len(hull["corners"])), 1)
            hulls.append((len(radius), hull))
        elif hull is not None:  # its hull, and the capsule that bounds it
            fitted = fit_capsules(hull[0], np.full(len(hull[0]), hull[2]), 1)
            hulls.append((len(radius), hull))
        elif mesh is not None:
            fitted = fit_body(mesh)
        else:
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
    model = CollisionModel(links, names, np.array(owner, dtype=int), np.array(ends, dtype=float).reshape(-1, 2, 3),
                           np.array(radius, dtype=float))
    if hulls:
        model.hull = np.full(len(radius), -1)
        model.hull[[row for row, _ in hulls]] = np.arange(len(hulls))
    if hulls and smooth_trunk():
        model.hull_points = np.array([frame_points(fit["centre"]) for _, fit in hulls])
        model.hull_planes = np.array([fit["planes"] for _, fit in hulls])
        model.hull_slope = np.array([fit["slope"] for _, fit in hulls])
        model.hull_level = np.array([fit["level"] for _, fit in hulls])
    elif hulls:
        padded = [pad_hull(vertices, faces) for _, (vertices, faces, _) in hulls]
        model.hull_points = np.array([v for v, _ in padded])
        model.hull_faces = np.array([f for _, f in padded])
        model.hull_radius = np.array([r for _, (_, _, r) in hulls])
    return model.support_from(lambda fitted: fit_support_of(tree, fitted))


def body_geometry(tree: KinematicTree, link: int) -> tuple[np.ndarray | None, np.ndarray | None, bool]:
    """Points (K, 3) and radii (K,) of a body in its link's frame: each of its links' shapes
    (link_shapes: collision shapes, else visual ones: G1's rubber hands have no collision shape,
    and are what touches the belly); (None, None) without any, and whether some link's shapes
    could not be read (mesh files missing)."""
    points, radii, missing = [], [], False
    zero = tree.zero_pose()
    to_link = np.linalg.inv(zero[link])
    for i in rigid_links(tree, link):
        urdf_link = tree.robot.links[tree.link_names[i]]
        shapes = link_shapes(urdf_link)
        if not shapes:
            continue
        offset = to_link @ zero[i]
        found = [geometry_points(geom, tree.robot.source_path) for geom in shapes]
        if not sum(len(p) for p, _ in found):  # collision meshes missing: the visual ones, as feet.body_points
            found = [geometry_points(geom, tree.robot.source_path) for geom in urdf_link.visuals]
        if not sum(len(p) for p, _ in found):
            missing = True  # its mesh files are missing: no shape to fit
            continue
        points += [p @ offset[:3, :3].T + offset[:3, 3] for p, _ in found]
        radii += [r for _, r in found]
    if not points:
        return None, None, missing
    return np.concatenate(points), np.concatenate(radii), missing


def link_shapes(link: Link) -> list[Geometry]:
    """A link's shapes: its collision ones, else its visual ones; and, where some of its collision
    shapes repeat visual meshes (a part drawn and collided alike), the visuals no collision shape
    repeats: parts of their own without one, as an exporter merging fixed links leaves them (the
    G1's rubber hands on its wrists, its pelvis shell beside the contour). A link whose collisions
    repeat none of its visuals (a detailed visual beside a simple collision shape, the G1's
    shoulders) keeps its collisions alone."""
    if not link.collisions:
        return list(link.visuals)
    drawn = [v for v in link.visuals if any(_repeats(c, v) for c in link.collisions)]
    if not drawn:
        return list(link.collisions)
    return list(link.collisions) + [v for v in link.visuals if not any(v is d for d in drawn)]


def _repeats(collision: Geometry, visual: Geometry) -> bool:
    """Whether a collision shape is the visual's mesh, placed and scaled alike."""
    return (collision.kind == visual.kind == "mesh" and collision.filename == visual.filename
            and np.allclose(collision.scale, visual.scale) and np.allclose(collision.origin, visual.origin))


def body_mesh(tree: KinematicTree, link: int) -> BodyMesh | None:
    """The body's triangles and solid shapes in its link's frame (the shapes body_geometry
    reads, meshes whole rather than their hulls); None without any mesh, or when a mesh file
    cannot be read (body_geometry then says what is missing)."""
    zero = tree.zero_pose()
    to_link = np.linalg.inv(zero[link])
    points, triangles, solid, radii, count, solids = [], [], [], [], 0, 0
    for i in rigid_links(tree, link):
        urdf_link = tree.robot.links[tree.link_names[i]]
        offset = to_link @ zero[i]
        for geom in link_shapes(urdf_link):
            if geom.kind == "mesh":
                source = tree.robot.source_path
                path = resolve_mesh_path(geom.filename or "", source) if source is not None else None
                try:
                    verts, faces = load_mesh(path) if path is not None else (None, None)
                except MeshError:
                    verts = None
                if verts is None or not len(faces):
                    return None
                local = (verts * np.asarray(geom.scale, float)) @ geom.origin[:3, :3].T + geom.origin[:3, 3]
                triangles.append(faces + count)
                solid.append(np.full(len(local), -1))
                radius = np.zeros(len(local))
            else:
                local, radius = geometry_points(geom, tree.robot.source_path)
                solid.append(np.full(len(local), solids))
                solids += 1
            points.append(local @ offset[:3, :3].T + offset[:3, 3])
            radii.append(radius)
            count += len(local)
    if not triangles:
        return None
    return BodyMesh(np.concatenate(points), np.concatenate(radii), np.concatenate(triangles), np.concatenate(solid))


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
