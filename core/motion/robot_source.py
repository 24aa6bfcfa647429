"""A robot's own motion seen as a character clip (robot-to-robot retargeting).

Every link becomes one bone: its head is the link origin, its tail the origin
of its first child link that does not sit on the same point. A link with no
such child (a hand, a foot, a sensor) ends at the mean centre of its
collision primitives, or failing that a short segment along its own x axis.
All tail offsets are constant in the link's frame, so bone lengths never
drift. The rest pose is the zero pose with the root at the origin. Because the
result is an ordinary SourceMotion, a known joint trajectory can be retargeted
back onto the same robot and compared with the answer.
"""
from __future__ import annotations

import numpy as np

from ..model.kinematics import KinematicTree
from .source import SourceMotion

LEAF_LENGTH = 0.05  # metres: the tail segment of a link with nothing to point at
_MIN_LENGTH = 1e-3  # metres: shorter offsets count as "on the same point"
_PRIMITIVES = ("box", "cylinder", "sphere")


def tail_offsets(tree: KinematicTree, leaf_length: float = LEAF_LENGTH) -> np.ndarray:
    """(L, 3) tail of each link's bone as a point in that link's frame, metres."""
    n = len(tree.link_names)
    out = np.zeros((n, 3))
    for i, name in enumerate(tree.link_names):
        kids = [int(k) for k in np.flatnonzero(tree.parent == i)]  # tree order: URDF order
        offsets = [tree.origins[k, :3, 3] for k in kids]
        offset = next((o for o in offsets if np.linalg.norm(o) >= _MIN_LENGTH), None)
        if offset is None:
            offset = _leaf_offset(tree, name, leaf_length)
        out[i] = offset
    return out


def _leaf_offset(tree: KinematicTree, name: str, leaf_length: float) -> np.ndarray:
    """Mean centre of the link's collision primitives, else a segment along its x axis."""
    link = tree.robot.links[name]
    centres = [g.origin[:3, 3] for g in link.collisions if g.kind in _PRIMITIVES]
    if centres:
        centre = np.mean(centres, axis=0)
        if np.linalg.norm(centre) >= _MIN_LENGTH:
            return centre
    return np.array([leaf_length, 0.0, 0.0])


def robot_motion(tree: KinematicTree, q: np.ndarray, root: np.ndarray | None = None,
                 fps: float = 30.0, name: str = "", leaf_length: float = LEAF_LENGTH) -> SourceMotion:
    """The robot moving through joint positions q (F, n) as a SourceMotion.

    root: (F, 4, 4) or (4, 4) world pose of the root link per frame (identity
    if None). Bone names are the link names, parents follow the kinematic tree
    and root_rotation is the root link's world rotation.
    """
    q = np.atleast_2d(np.asarray(q, dtype=float))
    if q.ndim != 2 or q.shape[1] != tree.dof:
        raise ValueError(f"q must have shape (frames, {tree.dof}) for robot "
                         f"{tree.robot.name!r}, got {np.shape(q)}")
    if not fps > 0:
        raise ValueError(f"fps must be positive, got {fps!r}")
    frames = q.shape[0]
    if root is not None:
        root = np.asarray(root, dtype=float)
        if root.shape not in ((4, 4), (frames, 4, 4)):
            raise ValueError(f"root must have shape (4, 4) or ({frames}, 4, 4), got {root.shape}")
    offsets = tail_offsets(tree, leaf_length)
    poses = tree.forward(q, root)  # (F, L, 4, 4)
    rest = tree.zero_pose()  # (L, 4, 4)
    return SourceMotion(
        bone_names=list(tree.link_names),
        parents=tree.parent.astype(int).copy(),
        heads=poses[:, :, :3, 3].copy(),
        tails=np.einsum("flij,lj->fli", poses[:, :, :3, :3], offsets) + poses[:, :, :3, 3],
        root_rotation=poses[:, 0, :3, :3].copy(),
        rest_heads=rest[:, :3, 3].copy(),
        rest_tails=np.einsum("lij,lj->li", rest[:, :3, :3], offsets) + rest[:, :3, 3],
        rest_root_rotation=rest[0, :3, :3].copy(),
        fps=float(fps),
        name=name or tree.robot.name,
    )
