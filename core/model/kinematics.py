"""Batched forward kinematics of a URDF robot.

Every link gets a world transform for many frames at once (frames first);
fixed joints are evaluated like any other link so callers can name any URDF
link (a palm, a head, a foot sphere) without caring about merging.
"""
from __future__ import annotations

import numpy as np

from .transforms import axis_angle_to_matrix
from .urdf import Robot

FIXED, REVOLUTE, PRISMATIC = 0, 1, 2


def ancestor_path(parents, base: int, tip: int) -> list[int] | None:
    """Indices from `base` down to `tip` in a parent-index tree, or None if unrelated."""
    out = [tip]
    while out[-1] != base:
        parent = int(parents[out[-1]])
        if parent < 0:
            return None
        out.append(parent)
    return out[::-1]


class KinematicTree:
    """Index arrays over a Robot for fast FK; q columns follow robot.movable_joints."""

    def __init__(self, robot: Robot):
        self.robot = robot
        self.joint_names = [j.name for j in robot.movable_joints]
        qcol = {name: i for i, name in enumerate(self.joint_names)}
        order = [robot.root_link]
        for link in order:  # breadth-first: parents before children
            order.extend(j.child for j in robot.child_joints(link))
        self.link_names = order
        self._index = {name: i for i, name in enumerate(order)}
        n_links = len(order)
        self.parent = np.full(n_links, -1, dtype=int)
        self.origins = np.tile(np.eye(4), (n_links, 1, 1))
        self.axes = np.zeros((n_links, 3))
        self.kind = np.zeros(n_links, dtype=int)
        self.qindex = np.full(n_links, -1, dtype=int)
        self.qscale = np.ones(n_links)
        self.qoffset = np.zeros(n_links)
        self.joint_of_link: list = [None] * n_links
        for i, name in enumerate(order[1:], start=1):
            joint = robot.parent_joint(name)
            self.joint_of_link[i] = joint
            self.parent[i] = self._index[joint.parent]
            self.origins[i] = joint.origin
            self.axes[i] = joint.axis
            if joint.type in ("revolute", "continuous"):
                self.kind[i] = REVOLUTE
            elif joint.type == "prismatic":
                self.kind[i] = PRISMATIC
            if self.kind[i] != FIXED:
                leader, multiplier, offset = robot.mimic_source(joint.name)  # itself when no mimic
                if joint.mimic is not None and leader.name in qcol:  # a mimic of a mimic too
                    self.qindex[i] = qcol[leader.name]
                    self.qscale[i] = multiplier
                    self.qoffset[i] = offset
                elif joint.name in qcol:
                    self.qindex[i] = qcol[joint.name]
        # most URDF origins only translate; solvers skip the rotation product for them
        self.origin_rotates = ~np.all(np.isclose(self.origins[:, :3, :3], np.eye(3), rtol=0, atol=0), axis=(1, 2))
        joints = robot.movable_joints
        self.lower = np.array([-np.inf if j.lower is None else j.lower for j in joints])
        self.upper = np.array([np.inf if j.upper is None else j.upper for j in joints])
        self.velocity = np.array([np.inf if not j.velocity else j.velocity for j in joints])

    @property
    def neutral(self) -> np.ndarray:
        """(n,) the middle of each joint's range (0 where unlimited): a posture defined by the
        mechanism, not by where its URDF puts zero, that solvers start from and lean toward."""
        finite = np.isfinite(self.lower) & np.isfinite(self.upper)
        middle = np.where(finite, (np.where(finite, self.lower, 0.0) + np.where(finite, self.upper, 0.0)) / 2, 0.0)
        return np.clip(middle, self.lower, self.upper)

    @property
    def dof(self) -> int:
        return len(self.joint_names)

    def link_index(self, name: str) -> int:
        try:
            return self._index[name]
        except KeyError:
            raise KeyError(f"robot {self.robot.name!r} has no link {name!r}") from None

    def joint_value(self, q: np.ndarray, link: int) -> np.ndarray:
        """Position of the joint above `link` for q (..., n); mimic joints follow their leader."""
        col = self.qindex[link]
        if col < 0:
            return np.zeros(q.shape[:-1])
        return q[..., col] * self.qscale[link] + self.qoffset[link]

    def joint_motion(self, q: np.ndarray, link: int) -> np.ndarray:
        """(…, 4, 4) motion of the joint above `link` (rotation or slide about its axis)."""
        value = self.joint_value(q, link)
        return self._motion_into(np.broadcast_to(np.eye(4), value.shape + (4, 4)).copy(), value, link)

    def _motion_into(self, out: np.ndarray, value: np.ndarray, link: int) -> np.ndarray:
        """out (…, 4, 4), an identity per frame (a view will do), made the joint's motion for value (…)."""
        if self.kind[link] == REVOLUTE:
            axis = self.axes[link]
            principal = np.flatnonzero(np.abs(axis) == 1.0)
            if len(principal) == 1:  # nearly every URDF joint turns about +-x, +-y or +-z
                k = int(principal[0])
                i, j = (k + 1) % 3, (k + 2) % 3
                c, s = np.cos(value), axis[k] * np.sin(value)
                out[..., i, i] = c
                out[..., j, j] = c
                out[..., j, i] = s
                out[..., i, j] = -s
            else:
                out[..., :3, :3] = axis_angle_to_matrix(axis, value)
        elif self.kind[link] == PRISMATIC:
            out[..., :3, 3] = self.axes[link] * value[..., None]
        return out

    def local(self, q: np.ndarray, link: int) -> np.ndarray:
        """The link's transform in its parent's frame for q (F, n): its origin (4, 4), times its joint's
        motion (F, 4, 4) where it moves. The origin multiplies the frames' motions side by side as one
        BLAS product (numpy's stacked product calls BLAS once a frame): the same dot products, their
        bits, a tenth of the time at 1,600 frames."""
        origin = self.origins[link]
        if self.kind[link] == FIXED:
            return origin
        value = self.joint_value(q, link)
        rows = np.broadcast_to(np.eye(4)[:, None], (4, len(value), 4)).copy()  # [r, f, c]: each frame's motion
        self._motion_into(rows.transpose(1, 0, 2), value, link)
        return (origin @ rows.reshape(4, -1)).reshape(4, len(value), 4).transpose(1, 0, 2)

    def forward(self, q, root=None) -> np.ndarray:
        """World transforms (F, L, 4, 4) of all links for joint positions q (F, n).

        root: (F, 4, 4) or (4, 4) world transform of the root link (identity if None).
        """
        q = np.atleast_2d(np.asarray(q, dtype=float))
        frames = q.shape[0]
        out = np.empty((frames, len(self.link_names), 4, 4))
        out[:, 0] = np.eye(4) if root is None else root
        for i in range(1, len(self.link_names)):
            out[:, i] = carried(out[:, self.parent[i]], self.local(q, i))
        return out

    def poses(self, q, root, links, known: dict | None = None) -> dict[int, np.ndarray]:
        """World transforms {link: (F, 4, 4)} of `links`, evaluating only them and their ancestors;
        known: transforms already computed for these q and root (taken as they are)."""
        q = np.atleast_2d(np.asarray(q, dtype=float))
        known = known or {}
        needed = set()
        for link in links:
            while link >= 0 and link not in needed and link not in known:
                needed.add(int(link))
                link = int(self.parent[link])
        out = {0: np.broadcast_to(np.eye(4) if root is None else root, (q.shape[0], 4, 4)), **known}
        for i in sorted(needed - {0}):  # parents come before children
            out[i] = carried(out[int(self.parent[i])], self.local(q, i))
        return {link: out[link] for link in links}

    def zero_pose(self) -> np.ndarray:
        """(L, 4, 4) link transforms at q = 0 with the root at the origin (computed once; a copy)."""
        if getattr(self, "_zero", None) is None:
            self._zero = self.forward(np.zeros((1, self.dof)))[0]
        return self._zero.copy()

    def path(self, base: str, tip: str) -> list[int]:
        """Link indices from base down to tip (inclusive)."""
        path = ancestor_path(self.parent, self.link_index(base), self.link_index(tip))
        if path is None:
            raise KeyError(f"robot link {tip!r} does not descend from {base!r}")
        return path

    def depth(self, link: int) -> int:
        d = 0
        while self.parent[link] >= 0:
            link, d = self.parent[link], d + 1
        return d

    def movable_depth(self, link: int) -> int:
        """The movable joints above a link, its own included: fixed links merged or split do not change it."""
        d = 0
        while link > 0:
            d += int(self.qindex[link] >= 0)
            link = int(self.parent[link])
        return d

    def link_transform(self, q, link: int, root=None) -> np.ndarray:
        """World transform (F, 4, 4) of one link, evaluating only its ancestors."""
        q = np.atleast_2d(np.asarray(q, dtype=float))
        chain = []
        while link > 0:
            chain.append(link)
            link = int(self.parent[link])
        out = np.broadcast_to(np.eye(4) if root is None else root, (q.shape[0], 4, 4)).copy()
        for i in reversed(chain):
            out = carried(out, self.local(q, i))
        return out


def carried(poses: np.ndarray, local: np.ndarray) -> np.ndarray:
    """poses (F, 4, 4) times local: a fixed local (4, 4) as one BLAS product over the frames' rows (numpy's
    stacked product calls BLAS once a frame: the same dot products, their bits), one (F, 4, 4) frame by frame."""
    if local.ndim == 2:
        return (np.reshape(poses, (-1, 4)) @ local).reshape(np.shape(poses))
    return poses @ local
