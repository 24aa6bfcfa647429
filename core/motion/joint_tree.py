"""Forward kinematics of a joint tree (a BVH hierarchy), batched over frames: a tree level at a time
for a clip, by pointer jumping for one live frame."""
from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from .source import SourceMotion


@dataclass
class FramePose:
    """What BVHClip.pose_frame keeps per scale and up axis."""

    rest: SourceMotion  # the clip's rest pose, one zero frame: its fields but the posed ones
    local: np.ndarray  # (J + 1, 4, 4) joints' rest offsets (position channels' zeroed), and the identity
    jumps: list  # per pointer-jumping step, each joint's ancestor that far up (J: above the roots)
    bone: np.ndarray  # (J, 3) bone vectors, file units
    axes: np.ndarray  # (3, 3) file axes to Blender's

    @classmethod
    def build(cls, clip, scale: float, up: str, axes: np.ndarray) -> "FramePose":
        """clip: a BVHClip; axes: its file axes to Blender's for `up`."""
        rest = clip.to_source_motion(scale, up, rows=np.zeros((1, sum(len(c) for c in clip.channels))))
        joints = len(clip.names)
        local = np.repeat(np.eye(4)[None], joints + 1, axis=0)
        local[:joints, :3, 3] = clip.offsets
        local[clip._channel_layout().positioned, :3, 3] = 0.0
        ancestor = np.array([p if p >= 0 else joints for p in clip.parents] + [joints])
        jumps = []
        while (ancestor[:joints] < joints).any():
            jumps.append(ancestor)
            ancestor = ancestor[ancestor]
        return cls(rest, local, jumps, clip._rest(scale)[0], axes)


def forward_kinematics(parents, t_local: np.ndarray, r_local: np.ndarray):
    """World positions (F, J, 3) and rotations (F, J, 3, 3); parents precede children.

    Joints are placed a tree level at a time (all joints at one depth in one product), so a
    single live frame costs a few operations per level, not per joint."""
    heads = np.empty(t_local.shape)
    rots = np.empty(r_local.shape)
    for joints, parent in tree_levels(tuple(int(p) for p in parents)):
        if parent is None:
            heads[:, joints] = t_local[:, joints]
            rots[:, joints] = r_local[:, joints]
        else:
            heads[:, joints] = heads[:, parent] + (rots[:, parent] @ t_local[:, joints, :, None])[..., 0]
            rots[:, joints] = rots[:, parent] @ r_local[:, joints]
    return heads, rots


@functools.lru_cache(maxsize=32)
def tree_levels(parents: tuple[int, ...]) -> list[tuple[np.ndarray, np.ndarray | None]]:
    """(joints, their parents) per depth of the tree, roots first (parent None)."""
    depth = []
    for p in parents:
        depth.append(0 if p < 0 else depth[p] + 1)
    depth = np.array(depth, dtype=int)
    parents_arr = np.array(parents, dtype=int)
    out = []
    for level in range(int(depth.max()) + 1 if len(depth) else 0):
        joints = np.flatnonzero(depth == level)
        out.append((joints, None if level == 0 else parents_arr[joints]))
    return out
