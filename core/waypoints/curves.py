"""The curve an end effector travels through its keys, for tangents and arc lengths.

The quadratic Bezier through a via point's neighbours (orientations.bezier_tangents)
sees only three keys; a cubic through *all* keys gives tangents that agree with
the path the tip really follows between keys, which is what a trajectory samples:

- "spline": the natural cubic spline (C2, no curvature at the ends);
- "bspline": the interpolating cubic B-spline with not-a-knot ends (scipy's
  make_interp_spline): the first and last two segments are one cubic, which
  follows a circle's keys closest (tangents within half a degree on uneven keys).

A spline clamped to rest at the ends was tried and left out: it bends the
path next to the ends (7 degree tangent errors on a circle).

The parameter is the keys' times in seconds when given, else the chord length
(cumulative straight-line distance) in metres. Positions in metres, keys first.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

CURVES = ("bezier", "spline", "bspline")
ARC_SAMPLES = 64  # polyline points per key interval when measuring arc length


@dataclass(frozen=True)
class KeyCurve:
    """A cubic through the keys: position(s) (..., 3) m at parameter s (key times or chord length)."""

    params: np.ndarray  # (K,) the parameter at each key, increasing
    kind: str
    _curve: object

    def position(self, s) -> np.ndarray:
        return np.asarray(self._curve(np.asarray(s, float)))

    def velocity(self, s) -> np.ndarray:
        """d position / d s (m/s when the parameter is time)."""
        return np.asarray(self._curve.derivative()(np.asarray(s, float)))

    def tangent(self, s) -> np.ndarray:
        """Unit direction of travel (..., 3); zero where the curve stands still."""
        v = self.velocity(s)
        norm = np.linalg.norm(v, axis=-1, keepdims=True)
        return np.where(norm > 1e-12, v / np.where(norm > 0, norm, 1.0), 0.0)

    def key_arc_lengths(self) -> np.ndarray:
        """(K,) m: arc length from the first key to each key, along the curve."""
        fine = np.concatenate([np.linspace(a, b, ARC_SAMPLES, endpoint=False)
                               for a, b in zip(self.params[:-1], self.params[1:])] + [self.params[-1:]])
        steps = np.linalg.norm(np.diff(self.position(fine), axis=0), axis=1)
        cum = np.concatenate([[0.0], np.cumsum(steps)])
        return cum[::ARC_SAMPLES]


def chord_params(points: np.ndarray) -> np.ndarray:
    """Cumulative straight-line distance (K,) m; repeated keys get a tiny step so it increases."""
    steps = np.linalg.norm(np.diff(points, axis=0), axis=1)
    return np.concatenate([[0.0], np.cumsum(np.maximum(steps, 1e-9))])


def key_curve(points, params=None, kind: str = "spline") -> KeyCurve:
    """The cubic through `points` (K, 3) at `params` (K,) (default: chord length).

    kind "bezier" has no curve through all keys; its arc lengths and sampled
    positions come from the "spline" curve.
    """
    if kind not in CURVES:
        raise ValueError(f"curve must be one of {', '.join(CURVES)}, got {kind!r}")
    points = np.asarray(points, float).reshape(-1, 3)
    if points.shape[0] < 2:
        raise ValueError("a curve through keys needs at least 2 keys")
    s = chord_params(points) if params is None else np.asarray(params, float)
    if s.shape != (points.shape[0],) or not np.all(np.diff(s) > 0):
        raise ValueError("the keys' times must increase strictly (one time per key)")
    from scipy.interpolate import CubicSpline, make_interp_spline  # here: the waypoint tools' start needs no scipy

    if kind == "bspline" and points.shape[0] >= 4:
        curve = make_interp_spline(s, points, k=3)
    else:  # a not-a-knot B-spline needs 4 keys: fewer get the natural spline (a line through 2)
        curve = CubicSpline(s, points, axis=0, bc_type="natural")
    return KeyCurve(s, kind, curve)


__all__ = ["CURVES", "KeyCurve", "key_curve", "chord_params"]
