"""The canonical body frame (x forward, y left, z up) of a character or robot.

Chains are compared in this frame, derived from landmarks of the rest pose
(hip line, spine), so rest poses and bone-roll conventions do not matter.
"""
from __future__ import annotations

import numpy as np

WORLD_UP = np.array([0.0, 0.0, 1.0])


def canonical_axes(left_hip=None, right_hip=None, left_shoulder=None, right_shoulder=None,
                   up_hint=WORLD_UP) -> np.ndarray:
    """Columns (forward, left, up) in world coordinates from whichever landmarks exist."""
    up_hint = np.asarray(up_hint, dtype=float)
    if left_hip is not None and right_hip is not None:
        left = np.asarray(left_hip) - np.asarray(right_hip)
        if left_shoulder is not None and right_shoulder is not None:
            up = (np.asarray(left_shoulder) + np.asarray(right_shoulder) - np.asarray(left_hip)
                  - np.asarray(right_hip)) / 2.0
        else:
            up = up_hint
    elif left_shoulder is not None and right_shoulder is not None:
        left, up = np.asarray(left_shoulder) - np.asarray(right_shoulder), up_hint
    else:
        return np.eye(3)
    return orthonormal_frame(left, up)


def orthonormal_frame(left, up) -> np.ndarray:
    """Gram-Schmidt: y along `left`, z the part of `up` orthogonal to it, x = y cross z."""
    y = np.asarray(left, dtype=float)
    norm = np.linalg.norm(y)
    if norm < 1e-9:
        raise ValueError("left and right landmarks coincide; cannot find the body's sideways axis")
    y = y / norm
    z = np.asarray(up, dtype=float) - np.dot(up, y) * y
    if np.linalg.norm(z) < 1e-9:
        raise ValueError("the spine is parallel to the hip line; cannot find the body's up axis")
    z = z / np.linalg.norm(z)
    return np.stack([np.cross(y, z), y, z], axis=1)


def orthonormalize(rot: np.ndarray) -> np.ndarray:
    """Nearest rotation matrices (..., 3, 3) by SVD (bridged or scaled input)."""
    u, _, vt = np.linalg.svd(rot)
    fix = np.linalg.det(u @ vt)
    u[..., :, 2] *= fix[..., None]
    return u @ vt
