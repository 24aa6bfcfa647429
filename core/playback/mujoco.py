"""MuJoCo keyframes with or without a free joint: a fixed-base MJCF (an arm) has none.

qpos is the free joint (x y z, quaternion w x y z) then the joints in URDF
order; without the free joint it is the joints only, and the root pose, which
must then be constant, goes into the file's metadata comment instead.
"""
from __future__ import annotations

import numpy as np

from .sampling import PlaybackError, PlaybackTrack

FREE_JOINT_WIDTH = 7          # x y z, w x y z
_CONSTANT_M = 1e-9            # root travel (m) below which a root counts as still
_CONSTANT_QUAT = 1e-9         # quaternion change (either sign) below which it counts as unturned


def fixed_root_pose(track: PlaybackTrack) -> list[float]:
    """The root pose (x y z w x y z) of a track whose root never moves; refuse one that moves:
    a fixed-base MJCF cannot play it and dropping the root would lose the motion silently."""
    pos, quat = np.asarray(track.root_position), np.asarray(track.root_quaternion)
    travel = float(np.max(np.linalg.norm(pos - pos[0], axis=1)))
    turn = np.minimum(np.linalg.norm(quat - quat[0], axis=1), np.linalg.norm(quat + quat[0], axis=1))
    if travel > _CONSTANT_M or float(np.max(turn)) > _CONSTANT_QUAT:
        dot = np.clip(np.abs(quat @ quat[0]), 0.0, 1.0)
        angle = float(np.degrees(2.0 * np.arccos(dot.min())))
        raise PlaybackError(f"mujoco_free_joint is false (--no-free-joint) but the root moves "
                            f"({travel * 1000:.4g} mm, {angle:.4g}°): a fixed-base MJCF cannot play it; "
                            "keep the free joint for a robot whose base moves")
    return [float(v) for v in (*pos[0], *quat[0])]


def has_free_joint(width: int, joint_count: int | None, info: dict) -> bool:
    """Whether a key's qpos starts with the free joint: as the file's comment says, else a width
    equal to the joint count means joints only."""
    if "free_joint" in info:
        return bool(info["free_joint"])
    return not (joint_count is not None and width == joint_count)


def root_columns(frames: int, info: dict) -> tuple[np.ndarray, np.ndarray]:
    """The root pose of a file without a free joint: the one its comment states, else the origin."""
    pose = np.asarray(info.get("root_pose", [0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0]), dtype=float)
    if pose.shape != (FREE_JOINT_WIDTH,):
        raise ValueError(f"root_pose {pose.tolist()!r}: expected x y z w x y z")
    return np.tile(pose[:3], (frames, 1)), np.tile(pose[3:], (frames, 1))
