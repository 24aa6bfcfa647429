"""A robot's fitted capsules and checked pairs kept on disk, so a new process (a command-line
bake, a batch worker) reads them instead of fitting and sampling again (seconds for the G1).

Keyed by the content of the URDF and of every mesh file it names, the tree's numbers and
FIT_VERSION: an edited robot or a changed fit is fitted afresh. A folder that cannot be
written, or a file that cannot be read, only costs the fit.
"""
from __future__ import annotations

import hashlib
import io
import os
import sys
from pathlib import Path

import numpy as np

from ..model.kinematics import KinematicTree
from ..model.mesh_paths import resolve_mesh_path
from ..motion.fileio import write_bytes_atomic
from . import hulls, smooth, support

FIT_VERSION = 11  # raise when the capsule fit, the pair rules, the mesh reading or what an entry holds change
#                 (9: the support hulls an entry of their own, fitted on first use: code before it, sharing the
#                 folder, would read a model without them and drop the bound; 10: the pairs' sampled postures drawn
#                 in the robot's own joint order, core.collision.pairs.canonical_joints; 11: capsules fitted in
#                 the body's own frame, core.collision.fit.body_frame, not the link's; a link's visuals of parts
#                 without a collision shape read too, core.collision.proxies.link_shapes)
CACHE_ENV = "ROBOT_RETARGET_CACHE"  # a folder for the cache; empty: no disk cache


def cache_folder() -> Path | None:
    """The user's cache folder for collision models, or None when turned off."""
    chosen = os.environ.get(CACHE_ENV)
    if chosen is not None:
        return Path(chosen) if chosen else None
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local"
    elif sys.platform == "darwin":
        base = Path.home() / "Library" / "Caches"
    else:
        base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "robot_retarget" / "collision"


def robot_digest(tree: KinematicTree, numbers: bytes) -> str | None:
    """A hash of what the fit reads: the URDF's and its meshes' bytes and the tree's `numbers`;
    None for a robot without a file."""
    path = tree.robot.source_path
    if path is None:
        return None
    digest = hashlib.sha256((f"collision {FIT_VERSION} hulls {hulls.HULL_PROXIES}"
                             f" support {support.SUPPORT_VERTICES}"
                             + (f" smooth trunk {smooth.SHARP_M} {smooth.SOFT_M} {smooth.PLANES} {smooth.PLANE_TOLERANCE_M}"
                                if hulls.SMOOTH_TRUNK else "")).encode())
    try:
        digest.update(Path(path).read_bytes())
        meshes = {geom.filename for link in tree.robot.links.values()
                  for geom in list(link.collisions) + list(link.visuals) if geom.kind == "mesh"}
        for name in sorted(meshes):
            mesh = resolve_mesh_path(name, path)
            digest.update(name.encode() + (Path(mesh).read_bytes() if mesh is not None else b"missing"))
    except OSError:
        return None
    digest.update(numbers)
    return digest.hexdigest()


def load(digest: str | None) -> dict[str, np.ndarray] | None:
    """The arrays saved under this digest, or None (not saved, unreadable, turned off)."""
    folder = cache_folder()
    if digest is None or folder is None:
        return None
    try:
        with np.load(folder / f"{digest}.npz", allow_pickle=False) as data:
            return {key: data[key] for key in data.files}
    except (OSError, ValueError, KeyError):
        return None


def save(digest: str | None, arrays: dict[str, np.ndarray]) -> None:
    """Keep the arrays under this digest, atomically; a folder that cannot be written is skipped."""
    folder = cache_folder()
    if digest is None or folder is None:
        return
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        write_bytes_atomic(folder / f"{digest}.npz", buffer.getvalue(), overwrite=True)
    except OSError:
        pass


def stored(tree: KinematicTree, part: str, build, to_arrays, from_arrays):
    """build(tree), or what was saved for this robot under `part` (to_arrays(value) -> {name:
    array} saves it, from_arrays(arrays) rebuilds it); saved after a build."""
    digest = getattr(tree, "_collision_digest", False)
    if digest is False:
        digest = robot_digest(tree, tree_numbers(tree))
        tree._collision_digest = digest
    saved = load(digest) or {}
    prefix = f"{part}."
    mine = {key[len(prefix):]: value for key, value in saved.items() if key.startswith(prefix)}
    if mine:
        try:
            return from_arrays(mine)
        except (KeyError, ValueError, IndexError):
            pass  # an unreadable entry: fit again
    value = build(tree)
    saved = load(digest) or {}  # building one part may have saved another
    saved.update({prefix + key: np.asarray(array) for key, array in to_arrays(value).items()})
    save(digest, saved)
    return value


def tree_numbers(tree: KinematicTree) -> bytes:
    """The tree's joints and shapes as bytes: a robot re-described in memory is another robot."""
    shapes = [(name, [_shape(g) for g in link.collisions], [_shape(g) for g in link.visuals])
              for name, link in tree.robot.links.items()]
    arrays = b"".join(np.ascontiguousarray(a).tobytes() for a in (tree.parent, tree.origins, tree.axes, tree.lower,
                                                                   tree.upper, tree.kind))
    return repr((tree.link_names, shapes)).encode() + arrays


def _shape(geom) -> tuple:
    return (geom.kind, geom.filename, geom.radius, geom.length,
            np.ravel(geom.size if geom.size is not None else ()).tolist(), np.ravel(geom.scale).tolist(),
            np.round(np.asarray(geom.origin), 12).tolist())
