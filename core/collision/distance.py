"""Closest points between segments, batched: the one computation every capsule distance is.

Vectorised over any leading axes (frames, pairs): a capsule distance is the
segment distance minus both radii, negative when they overlap (the depth).
"""
from __future__ import annotations

import numpy as np

try:  # np.einsum and np.clip less their Python wrappers: the same products and bounds, a few us less a call
    from numpy._core.multiarray import c_einsum as _einsum
    from numpy._core.umath import clip as _clip
except ImportError:  # pragma: no cover - another numpy's layout
    _einsum, _clip = np.einsum, np.clip

_EPS = 1e-12


def dot(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Dot products (...,) of vectors on the last axis (..., 3)."""
    return _einsum("...i,...i->...", a, b)


def cross_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a x b for vectors on the second-last axis (..., 3, K), broadcast: contiguous rows, no np.cross overhead."""
    return np.stack([a[..., 1, :] * b[..., 2, :] - a[..., 2, :] * b[..., 1, :],
                     a[..., 2, :] * b[..., 0, :] - a[..., 0, :] * b[..., 2, :],
                     a[..., 0, :] * b[..., 1, :] - a[..., 1, :] * b[..., 0, :]], axis=-2)


def segment_closest(p1: np.ndarray, q1: np.ndarray, p2: np.ndarray, q2: np.ndarray):
    """Closest points (..., 3) on segments p1-q1 and p2-q2 (each (..., 3), metres): (c1, c2).

    Degenerate segments (a point) are handled; parallel segments get one of the closest pairs.
    """
    d1, d2, r = q1 - p1, q2 - p2, p1 - p2
    a, e, f = dot(d1, d1), dot(d2, d2), dot(d2, r)
    c, b = dot(d1, r), dot(d1, d2)
    a_ok, e_ok = a > _EPS, e > _EPS
    whole = a_ok.all() and e_ok.all()  # no point among them (a capsule model's): the guards below change nothing
    a_safe, e_safe = (a, e) if whole else (np.where(a_ok, a, 1.0), np.where(e_ok, e, 1.0))
    denom = a * e - b * b
    s = np.where(denom > _EPS * np.maximum(a * e, _EPS), _clip((b * f - c * e) / np.where(denom > 0, denom, 1.0),
                                                                  0.0, 1.0), 0.0)
    t = (b * s + f) / e_safe
    s = np.where(t < 0.0, _clip(-c / a_safe, 0.0, 1.0), np.where(t > 1.0, _clip((b - c) / a_safe, 0.0, 1.0), s))
    t = _clip(t, 0.0, 1.0)
    if not whole:  # a point for the first segment: the second's closest to it; a point for the second: the reverse
        t = np.where(a_ok, t, np.where(e_ok, _clip(f / e_safe, 0.0, 1.0), 0.0))
        s = np.where(a_ok, np.where(e_ok, s, _clip(-c / a_safe, 0.0, 1.0)), 0.0)
    return p1 + d1 * s[..., None], p2 + d2 * t[..., None]


def axis_bound(point: np.ndarray, p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Distances (...,) of points (..., 3) from segments p-q (..., 3): with `point` a segment's middle,
    less its half length, a lower bound of the two segments' distance (no point of that segment is
    further from its middle), for a few operations where segment_closest takes forty."""
    d = q - p
    along = _clip(dot(point - p, d) / np.maximum(dot(d, d), _EPS), 0.0, 1.0)
    gap = point - (p + d * along[..., None])
    return np.sqrt(dot(gap, gap))


def capsule_distance(p1, q1, r1, p2, q2, r2):
    """Signed distance (...,) between capsules (segment ends (..., 3), radii (...,)), metres,
    with the closest points on both axes (c1, c2); negative: they overlap by that much."""
    c1, c2 = segment_closest(p1, q1, p2, q2)
    return np.linalg.norm(c1 - c2, axis=-1) - r1 - r2, c1, c2
