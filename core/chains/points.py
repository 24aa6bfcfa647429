"""Link chains of the source and the robot, and the reference points on them.

A chain's polyline runs through its joints from the base to the tip(s). The
source polyline is measured on every frame (captured bone lengths drift); the
robot polyline is rigid per link, so each robot reference point is a fixed
point in one link's frame.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..model.kinematics import FIXED, KinematicTree
from .mapping import ChainMapping
from ..motion.source import SourceMotion


class ChainError(ValueError):
    """A chain that names bones or links the data does not have."""


def default_fractions(count: int) -> np.ndarray:
    """Uniform fractions of the chain length, base excluded, tip included."""
    return np.arange(1, count + 1) / count


def point_weights(count: int, tip_weight: float, weight: float = 1.0) -> np.ndarray:
    w = np.full(count, weight, dtype=float)
    w[-1] = tip_weight * weight
    return w


def polyline_lengths(points: np.ndarray) -> np.ndarray:
    """Cumulative arc length (..., K) of polylines (..., K, 3), starting at 0."""
    seg = np.linalg.norm(np.diff(points, axis=-2), axis=-1)
    return np.concatenate([np.zeros(seg.shape[:-1] + (1,)), np.cumsum(seg, axis=-1)], axis=-1)


def sample_polyline(points: np.ndarray, fractions: np.ndarray) -> np.ndarray:
    """Points at `fractions` of the arc length of polylines (F, K, 3) -> (F, m, 3)."""
    cum = polyline_lengths(points)  # (F, K)
    target = cum[:, -1:] * np.asarray(fractions)[None, :]  # (F, m)
    k = points.shape[1]
    seg = np.clip((cum[:, None, :] < target[:, :, None]).sum(-1) - 1, 0, k - 2)  # (F, m)
    rows = np.arange(points.shape[0])[:, None]
    start, end = cum[rows, seg], cum[rows, seg + 1]
    alpha = np.where(end > start, (target - start) / np.where(end > start, end - start, 1.0), 0.0)
    a, b = points[rows, seg], points[rows, seg + 1]
    return a + alpha[..., None] * (b - a)


@dataclass
class SourceChain:
    """Source side of a chain: per path, bone indices and whether the tip's tail ends it."""

    name: str
    paths: list[list[int]]
    tail: bool

    def polylines(self, motion: SourceMotion, rest: bool = False) -> list[np.ndarray]:
        heads = motion.rest_heads[None] if rest else motion.heads
        tails = motion.rest_tails[None] if rest else motion.tails
        out = []
        for path in self.paths:
            pts = heads[:, path]
            if self.tail:
                pts = np.concatenate([pts, tails[:, path[-1:]]], axis=1)
            out.append(pts)
        return out


def source_chain(motion: SourceMotion, chain: ChainMapping) -> SourceChain:
    try:
        paths = [motion.path(chain.source_base, tip) for tip in chain.source_tips]
    except KeyError as exc:
        raise ChainError(f"chain {chain.name!r}: {exc.args[0]}") from None
    if not paths:
        raise ChainError(f"chain {chain.name!r}: no source tip bone")
    if not chain.source_tip_tail and any(len(p) < 2 for p in paths):
        raise ChainError(f"chain {chain.name!r}: source chain {chain.source_base!r} has no length")
    return SourceChain(chain.name, paths, chain.source_tip_tail)


@dataclass
class RobotPath:
    """One robot path: its links, and each reference point as a fixed point in a link frame."""

    links: list[int]
    point_link: np.ndarray  # (m,) link index holding each reference point
    point_local: np.ndarray  # (m, 3) point in that link's frame, metres
    length: float  # polyline length, metres
    tip_local: tuple[int, np.ndarray]  # the path's last polyline point (link, local point)


@dataclass
class RobotChain:
    name: str
    anchor: int  # link whose pose (solved earlier) carries the chain; -1 for the root itself
    links: list[int]  # chain links in parent-before-child order (base included)
    paths: list[RobotPath]
    variables: list[int]  # links whose joints this chain moves (q columns via tree.qindex)
    origin: tuple[int, np.ndarray]  # where the shape starts: (link, point in its frame)


def robot_chain(tree: KinematicTree, chain: ChainMapping, fractions: list[np.ndarray],
                start: float = 0.0) -> RobotChain:
    """Resolve a chain on the robot and fix its reference points at the zero pose.

    `start` is the fraction of the first path where the shape begins (its
    origin); lengths are measured from there.
    """
    try:
        link_paths = [tree.path(chain.robot_base, tip) for tip in chain.robot_tips]
    except KeyError as exc:
        raise ChainError(f"chain {chain.name!r}: {exc.args[0]}") from None
    zero = tree.zero_pose()
    offset = None if chain.robot_tip_offset is None else np.asarray(chain.robot_tip_offset, float)
    paths, movers = [], set()
    for links, frac in zip(link_paths, fractions):
        corners, pts = robot_polyline(tree, links, chain.robot_tip_offset)
        holders = [(corners[k], _local(zero, corners[k], pts[k + 1])) for k in range(len(corners) - 1)]
        if offset is not None:
            holders.append((links[-1], offset))
        if len(pts) < 2:
            raise ChainError(f"chain {chain.name!r}: robot chain {chain.robot_base!r} has no length")
        cum = polyline_lengths(pts)
        if cum[-1] < 1e-6:
            raise ChainError(f"chain {chain.name!r}: robot chain {chain.robot_base!r} has no length")
        point_link, point_local = [], []
        for g in frac:
            link, local = _point_at(cum, holders, g)
            point_link.append(link)
            point_local.append(local)
            movers.update(links[: links.index(link) + 1])
        begin = start if not paths else 0.0
        if not paths:
            origin = _point_at(cum, holders, start) if start > 0 else (links[0], _local(zero, links[0], pts[0]))
        paths.append(RobotPath(links, np.array(point_link), np.array(point_local),
                               float(cum[-1] * (1.0 - begin)), (holders[-1][0], holders[-1][1])))
    ordered = sorted({i for p in link_paths for i in p}, key=tree.depth)
    variables = [i for i in ordered if i in movers and tree.kind[i] != FIXED and tree.qindex[i] >= 0]
    anchor = int(tree.parent[ordered[0]])
    return RobotChain(chain.name, anchor, ordered, paths, variables, origin)


def robot_polyline(tree: KinematicTree, links: list[int], tip_offset=None) -> tuple[list[int], np.ndarray]:
    """A robot path's shape at the zero pose: the links at its corners (its base, its joints and
    its tip) and their points (C, 3), the tip offset's point appended. A frame fixed inside the
    path (a flange, a sensor mount) is no joint: as a corner it bent the polyline, and G1 with a
    frame fixed 2 cm off its knee baked its ankles 0.09 rad apart. A path from the root link starts
    at its first joint: the root's frame is wherever the URDF puts it (a G1 re-rooted at an ankle and
    hung from its pelvis again has the pelvis frame at the hip, and its spine leaned 0.3 deg apart)."""
    last = len(links) - 1
    first = 1 if last > 0 and tree.parent[links[0]] < 0 else 0
    corners = [i for k, i in enumerate(links) if k >= first and (k in (first, last) or tree.kind[i] != FIXED)]
    zero = tree.zero_pose()
    pts = [zero[i, :3, 3] for i in corners]
    if tip_offset is not None:
        pts.append(zero[links[-1], :3, :3] @ np.asarray(tip_offset, float) + zero[links[-1], :3, 3])
    return corners, np.array(pts).reshape(-1, 3)


def _point_at(cum: np.ndarray, holders: list, g: float) -> tuple[int, np.ndarray]:
    """The point at fraction g of a rigid-per-link polyline, as (link, local point)."""
    s = g * cum[-1]
    k = int(np.clip(np.searchsorted(cum, s, side="left") - 1, 0, len(cum) - 2))
    span = cum[k + 1] - cum[k]
    alpha = 0.0 if span <= 0 else (s - cum[k]) / span
    link, end_local = holders[k]
    return link, alpha * end_local  # each segment starts at its holder link's origin


def _local(zero: np.ndarray, link: int, world_point: np.ndarray) -> np.ndarray:
    rot, pos = zero[link, :3, :3], zero[link, :3, 3]
    return rot.T @ (world_point - pos)
