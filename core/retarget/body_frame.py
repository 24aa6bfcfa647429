"""The canonical body frame (x forward, y left, z up) of a character or robot.

Chains are compared in this frame. It comes from the hip line and the world's
up where the body actually is: the robot's zero pose, and the source's animated
frames rather than its rest pose, since a file's rest pose may be a T-pose, an
A-pose or a straight line of bones.
"""
from __future__ import annotations

import numpy as np

WORLD_UP = np.array([0.0, 0.0, 1.0])
RIGID_DEG = 5.0  # the hip line rides on the root bone when it stays within this of one direction
PELVIS_OFF_LINE_M = 0.01  # a pelvis point this far off the hip line can carry the tilt ...
PELVIS_RIGID_M = 0.005  # ... when its distance to the hips' centre varies by less than this


def canonical_axes(left_hip=None, right_hip=None, left_shoulder=None, right_shoulder=None,
                   up_hint=WORLD_UP) -> np.ndarray:
    """Columns (forward, left, up) in world coordinates from whichever landmarks exist.

    Landmarks are points (3,) or per-frame points (F, 3); the result is (3, 3) or (F, 3, 3).
    """
    up_hint = np.asarray(up_hint, dtype=float)
    if left_hip is not None and right_hip is not None:
        left = np.asarray(left_hip) - np.asarray(right_hip)
        if left_shoulder is not None and right_shoulder is not None:
            up = (np.asarray(left_shoulder) + np.asarray(right_shoulder) - np.asarray(left_hip)
                  - np.asarray(right_hip)) / 2.0
        else:
            up = np.broadcast_to(up_hint, left.shape)
    elif left_shoulder is not None and right_shoulder is not None:
        left = np.asarray(left_shoulder) - np.asarray(right_shoulder)
        up = np.broadcast_to(up_hint, left.shape)
    else:
        return np.eye(3)
    return orthonormal_frame(left, up)


def orthonormal_frame(left, up) -> np.ndarray:
    """Gram-Schmidt: y along `left`, z the part of `up` orthogonal to it, x = y cross z (batched)."""
    y = np.asarray(left, dtype=float)
    up = np.asarray(up, dtype=float)
    norm = np.linalg.norm(y, axis=-1, keepdims=True)
    if np.any(norm < 1e-9):
        raise ValueError("left and right landmarks coincide; cannot find the body's sideways axis")
    y = y / norm
    z = up - np.sum(up * y, axis=-1, keepdims=True) * y
    znorm = np.linalg.norm(z, axis=-1, keepdims=True)
    if np.any(znorm < 1e-9):
        raise ValueError("the spine is parallel to the hip line; cannot find the body's up axis")
    z = z / znorm
    return np.stack([np.cross(y, z), y, z], axis=-1)


def source_body_frames(left: np.ndarray, carrier: np.ndarray, up=WORLD_UP) -> np.ndarray:
    """Body frames (F, 3, 3) of a clip from its hip line `left` (F, 3) and a carrier bone's
    rotation (F, 3, 3), the root bone that carries the hips.

    y runs along each frame's hip line (the body's heading is where its hips face) and z
    rides on the carrier: the world's up as the carrier sees it on average, so a pelvis
    upright on average is upright.
    Neither the file's rest pose nor the spine's lean enter (the spine chain matches
    those). A root bone that does not carry the hips (one on the ground that only
    travels) gives per-frame frames from the hip line and the world's up.
    """
    up = np.asarray(up, dtype=float)
    local = np.einsum("fji,fj->fi", carrier, left)
    local = local / np.maximum(np.linalg.norm(local, axis=1, keepdims=True), 1e-12)
    mean = local.mean(axis=0)
    spread = np.degrees(np.arccos(np.clip(local @ (mean / max(np.linalg.norm(mean), 1e-12)), -1.0, 1.0)))
    if np.median(spread) > RIGID_DEG:
        return orthonormal_frame(left, np.broadcast_to(up, left.shape))
    local_up = orthonormal_frame(mean, np.einsum("fji,j->fi", carrier, up).mean(axis=0))[:, 2]
    return orthonormal_frame(left, carrier @ local_up)  # y on each frame's own hip line: the heading


def pelvis_frames(left_hip: np.ndarray, right_hip: np.ndarray, pelvis_points: list[np.ndarray]) -> np.ndarray | None:
    """Rotations (F, 3, 3) fixed to the pelvis, from points that ride on it: the hips and the
    first of `pelvis_points` (the pelvis bone's head, else its tail) that sits off the hip
    line and keeps its place to it. None when none does. A clip's root bone may be a
    reference on the floor that only turns with the heading; the pelvis carries the tilt."""
    centre = (left_hip + right_hip) / 2.0
    left = left_hip - right_hip
    for point in pelvis_points:
        offset = point - centre
        across = offset - np.sum(offset * left, axis=1, keepdims=True) / np.maximum(
            np.sum(left * left, axis=1, keepdims=True), 1e-12) * left
        size = np.linalg.norm(across, axis=1)
        if np.median(size) < PELVIS_OFF_LINE_M or np.std(np.linalg.norm(offset, axis=1)) > PELVIS_RIGID_M:
            continue  # on the hip line, or not riding on the pelvis
        return orthonormal_frame(left, across)
    return None
