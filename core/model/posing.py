"""Link poses with frames on the last axis, for code that poses the same links many times.

KinematicTree.poses gives (F, 4, 4) matrices: each link is two batched 4x4 products over the
frames. Here a rotation is its three columns, one (3, 3, F) array, and a position (3, F), so a
joint's turn about a principal axis mixes two columns and an origin is a few contiguous vector
products: a collision check over a clip's frames poses its links in a third of the time.
The same transforms as KinematicTree.poses, rounded differently (last bits).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .kinematics import PRISMATIC, REVOLUTE, KinematicTree
from .transforms import axis_angle_to_matrix


@dataclass
class LinkPose:
    """One link's world pose over frames: rotation columns `cols` (3, 3, F), cols[k] the k-th
    column (3, F), and position `pos` (3, F), metres."""

    cols: np.ndarray
    pos: np.ndarray

    def __getitem__(self, frames) -> "LinkPose":
        """The pose on some frames (an index or mask over F)."""
        return LinkPose(self.cols[..., frames], self.pos[..., frames])

    def apply(self, local: np.ndarray) -> np.ndarray:
        """Points (P, 3) in the link's frame -> world (P, 3, F): one product for all of them."""
        frames = self.pos.shape[-1]
        return (local @ self.cols.reshape(3, -1)).reshape(len(local), 3, frames) + self.pos

    def turn(self, vector: np.ndarray) -> np.ndarray:
        """A direction (3,) in the link's frame -> world (3, F)."""
        return (vector @ self.cols.reshape(3, -1)).reshape(3, -1)


class Poser:
    """World poses of a fixed set of links (and their ancestors) of a tree, frames last."""

    def __init__(self, tree: KinematicTree, links):
        needed = set()
        for link in links:
            link = int(link)
            while link > 0 and link not in needed:
                needed.add(link)
                link = int(tree.parent[link])
        self.links = sorted(int(link) for link in links)
        self._steps = [_step(tree, link) for link in sorted(needed)]  # breadth-first: parents before children
        self._tree = tree

    def __call__(self, q: np.ndarray, root: np.ndarray, known: dict | None = None) -> dict[int, LinkPose]:
        """{link: LinkPose} of the links (and ancestors) for q (F, n) and root poses (F, 4, 4);
        known: poses (LinkPose) already computed for these frames, taken as they are."""
        tree, known = self._tree, known or {}
        out = {0: LinkPose(np.ascontiguousarray(root[:, :3, :3].transpose(2, 1, 0)),
                           np.ascontiguousarray(root[:, :3, 3].T))}
        out.update(known)
        for link, parent, shift, turn, kind, axis, principal in self._steps:
            if link in known:
                continue
            base = out[parent]
            cols, pos = base.cols, base.pos
            if shift is not None:
                pos = pos + (shift @ cols.reshape(3, -1)).reshape(3, -1)
            if turn is not None:  # turn[k] is the origin rotation's k-th column
                cols = (turn @ cols.reshape(3, -1)).reshape(cols.shape)
            if kind == REVOLUTE:
                cols = _turned(cols, axis, principal, tree.joint_value(q, link))
            elif kind == PRISMATIC:
                pos = pos + (axis @ cols.reshape(3, -1)).reshape(3, -1) * tree.joint_value(q, link)
            out[link] = LinkPose(cols, pos)
        return out


def _step(tree: KinematicTree, link: int) -> tuple:
    """(link, parent, origin shift (3,) or None, origin rotation's columns (3, 3) or None, joint
    kind, axis, its principal index or -1), kept with the tree: terms are built many times a bake."""
    steps = tree.__dict__.setdefault("_posing_steps", {})
    if link not in steps:
        origin = tree.origins[link]
        axis = np.asarray(tree.axes[link], dtype=float)
        principal = np.flatnonzero(np.abs(axis) == 1.0)
        steps[link] = (link, int(tree.parent[link]), origin[:3, 3].copy() if origin[:3, 3].any() else None,
                       origin[:3, :3].T.copy() if tree.origin_rotates[link] else None, int(tree.kind[link]), axis,
                       int(principal[0]) if len(principal) == 1 else -1)
    return steps[link]


def _turned(cols: np.ndarray, axis: np.ndarray, principal: int, angle: np.ndarray) -> np.ndarray:
    """cols (3, 3, F) of R times Rot(axis, angle): about +-x, +-y or +-z two columns mix."""
    out = np.empty_like(cols)
    if principal >= 0:
        i, j = (principal + 1) % 3, (principal + 2) % 3
        c, s = np.cos(angle), np.sin(angle)
        out[principal] = cols[principal]
        np.multiply(c, cols[i], out=out[i])
        np.multiply(c, cols[j], out=out[j])
        if axis[principal] > 0.0:
            out[i] += s * cols[j]
            out[j] -= s * cols[i]
        else:  # about -x, -y or -z: a + (-s) b is a - s b to the bit, one product fewer
            out[i] -= s * cols[j]
            out[j] += s * cols[i]
        return out
    local = axis_angle_to_matrix(axis, angle)  # (F, 3, 3)
    for k in range(3):
        out[k] = cols[0] * local[:, 0, k] + cols[1] * local[:, 1, k] + cols[2] * local[:, 2, k]
    return out
