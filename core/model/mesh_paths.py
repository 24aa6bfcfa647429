"""Where a URDF's <mesh filename> is on disk: robots ship without their ROS workspace, so package://
URIs are looked for next to the URDF and in given package roots, exact names before case-folded ones."""
from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Iterator

if TYPE_CHECKING:
    from .urdf import Robot

_MAX_PARENTS = 3  # how far above the URDF's folder mesh lookup may climb


def _split_mesh_uri(filename: str) -> tuple[str | None, list[str], Path | None]:
    """(package name, path components, absolute path if the URI gives one)."""
    name = filename.strip().replace("\\", "/")
    pkg = None
    if name.startswith("package://"):
        pkg, _, name = name[len("package://"):].partition("/")
    elif name.startswith("file://"):
        name = name[len("file://"):]
    path = Path(name)
    parts = [p for p in path.parts if p not in ("", ".", path.anchor)]
    absolute = path if pkg is None and path.is_absolute() else None
    return pkg or None, parts, absolute


def _casefold_hit(candidate: Path) -> Path | None:
    """A file in candidate's folder whose name matches ignoring case."""
    folder, want = candidate.parent, candidate.name.lower()
    if not folder.is_dir():
        return None
    for entry in sorted(os.listdir(folder)):
        if entry.lower() == want and (folder / entry).is_file():
            return (folder / entry).resolve()
    return None


def resolve_mesh_path(filename: str, urdf_path: str | os.PathLike | None,
                      package_roots=()) -> Path | None:
    """Find the file a URDF <mesh filename> means, or None if it is not on disk.

    Robots are usually shipped without their ROS workspace, so package:// URIs
    are looked up in the given package roots (the package folder itself or a
    folder containing it) and then next to the URDF, dropping leading path
    components one by one and also trying up to three parent folders. Exact
    names win over case-insensitive matches (STL vs stl exports).
    """
    pkg, parts, absolute = _split_mesh_uri(filename)
    if not parts:
        return None
    candidates = _mesh_candidates(pkg, parts, absolute, urdf_path, package_roots)
    seen = []
    for cand in candidates:  # lazily, as strings: the first places tried usually hold the file, and a
        if os.path.isfile(cand):  # bake asks for every mesh (pathlib made this 12 ms of the G1's bake)
            return Path(os.path.realpath(cand))
        seen.append(cand)
    for cand in dict.fromkeys(seen):
        hit = _casefold_hit(Path(cand))
        if hit is not None:
            return hit
    return None


def _mesh_candidates(pkg: str | None, parts: list[str], absolute: Path | None,
                     urdf_path: str | os.PathLike | None, package_roots) -> Iterator[str]:
    """The places a <mesh filename> may mean, in the order resolve_mesh_path tries them."""
    if absolute is not None:
        yield str(absolute)
    for root in map(str, package_roots):
        if pkg is not None and os.path.basename(root) == pkg:
            yield os.path.join(root, *parts)
        yield os.path.join(root, *([pkg] if pkg else []), *parts)
    if urdf_path is not None:
        here = os.path.realpath(urdf_path)
        here = here if os.path.isdir(here) else os.path.dirname(here)
        bases = [here]
        while len(bases) <= _MAX_PARENTS and os.path.dirname(bases[-1]) != bases[-1]:
            bases.append(os.path.dirname(bases[-1]))
        full = ([pkg] if pkg else []) + parts
        for k in range(len(full)):
            for base in bases:
                yield os.path.join(base, *full[k:])


def missing_meshes(robot: "Robot") -> list[tuple[str, str]]:
    """(link, filename) of each <mesh> whose file is not on disk near the URDF: a robot copied
    without its meshes folder bakes on rough stand-ins (capsules along its bones for
    self-collision, feet on their links' origins), which the report must say."""
    if robot.source_path is None:
        return []
    out = []
    for name, link in robot.links.items():
        for geom in list(link.collisions) + list(link.visuals):
            if geom.kind == "mesh" and resolve_mesh_path(geom.filename or "", robot.source_path) is None:
                out.append((name, geom.filename or ""))
    return out
