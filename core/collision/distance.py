"""Closest points between segments, batched: the one computation every capsule distance is.

Vectorised over any leading axes (frames, pairs): a capsule distance is the
segment distance minus both radii, negative when they overlap (the depth).
"""
from __future__ import annotations

import numpy as np

_EPS = 1e-12


def _dot(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.einsum("...i,...i->...", a, b)


def segment_closest(p1: np.ndarray, q1: np.ndarray, p2: np.ndarray, q2: np.ndarray):
    """Closest points (..., 3) on segments p1-q1 and p2-q2 (each (..., 3), metres): (c1, c2).

    Degenerate segments (a point) are handled; parallel segments get one of the closest pairs.
    """
    d1, d2, r = q1 - p1, q2 - p2, p1 - p2
    a, e, f = _dot(d1, d1), _dot(d2, d2), _dot(d2, r)
    c, b = _dot(d1, r), _dot(d1, d2)
    a_ok, e_ok = a > _EPS, e > _EPS
    a_safe, e_safe = np.where(a_ok, a, 1.0), np.where(e_ok, e, 1.0)
    denom = a * e - b * b
    s = np.where(denom > _EPS * np.maximum(a * e, _EPS), np.clip((b * f - c * e) / np.where(denom > 0, denom, 1.0),
                                                                  0.0, 1.0), 0.0)
    t = (b * s + f) / e_safe
    s = np.where(t < 0.0, np.clip(-c / a_safe, 0.0, 1.0), np.where(t > 1.0, np.clip((b - c) / a_safe, 0.0, 1.0), s))
    t = np.clip(t, 0.0, 1.0)
    # a point for the first segment: the second's closest to it; a point for the second: the reverse
    t = np.where(a_ok, t, np.where(e_ok, np.clip(f / e_safe, 0.0, 1.0), 0.0))
    s = np.where(a_ok, np.where(e_ok, s, np.clip(-c / a_safe, 0.0, 1.0)), 0.0)
    return p1 + d1 * s[..., None], p2 + d2 * t[..., None]


def axis_bound(point: np.ndarray, p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Distances (...,) of points (..., 3) from segments p-q (..., 3): with `point` a segment's middle,
    less its half length, a lower bound of the two segments' distance (no point of that segment is
    further from its middle), for a few operations where segment_closest takes forty."""
    d = q - p
    along = np.clip(_dot(point - p, d) / np.maximum(_dot(d, d), _EPS), 0.0, 1.0)
    gap = point - (p + d * along[..., None])
    return np.sqrt(_dot(gap, gap))


def capsule_distance(p1, q1, r1, p2, q2, r2):
    """Signed distance (...,) between capsules (segment ends (..., 3), radii (...,)), metres,
    with the closest points on both axes (c1, c2); negative: they overlap by that much."""
    c1, c2 = segment_closest(p1, q1, p2, q2)
    return np.linalg.norm(c1 - c2, axis=-1) - r1 - r2, c1, c2
