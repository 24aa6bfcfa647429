"""Orientations at position-only waypoints of an end effector.

Animators and robot programmers often key only where a hand or a foot goes.
Slerping the start and end orientations by distance looks stiff in the
middle; an orientation chosen only for the path (or the mechanism) jumps away
from the keyed ends. Each via point therefore blends the two: the optimal
orientation is reached by a fraction u = max_blend * f(r) of the way from the
interpolated one, r = d_s / (d_s + d_e), with f = 0 at both ends so the keyed
start and end orientations are met continuously.

This module holds the pieces (quaternions, the path's geometry, the blend,
the interpolated orientation); optimum.waypoint_orientations puts them
together with the modes' optima.

Quaternions are (w, x, y, z); positions are metres in one common frame; via
points come first on every batched array (V, ...). Euler orders use Blender's
naming: "XYZ" means X is applied first (R = Rz Ry Rx), angles stored (x, y, z).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence, Union

import numpy as np

from ..model.transforms import euler_to_matrix, matrix_to_quat, quat_to_matrix
from .curves import CURVES, key_curve

BLENDS = ("parabola", "bspline", "custom")
INTERPOLATIONS = ("slerp", "euler")
DISTANCES = ("path", "straight", "arc")
SPANS = ("neighbours", "ends")
EULER_ORDERS = ("XYZ", "XZY", "YXZ", "YZX", "ZXY", "ZYX")
LENGTH_TOL = 1e-9  # m: positions closer than this coincide

BlendSpec = Union[str, Callable[[np.ndarray], np.ndarray]]


# ------------------------------------------------------------ quaternions ---

def _unit(v: np.ndarray) -> np.ndarray:
    norm = np.linalg.norm(v, axis=-1, keepdims=True)
    return v / np.where(norm > 0, norm, 1.0)


def quat_mul(a, b) -> np.ndarray:
    """Hamilton product a * b of (..., 4) quaternions (apply b, then a)."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    w1, x1, y1, z1 = np.moveaxis(a, -1, 0)
    w2, x2, y2, z2 = np.moveaxis(b, -1, 0)
    return np.stack([
        w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2,
        w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
        w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2,
        w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2,
    ], axis=-1)


def quat_slerp(a, b, t) -> np.ndarray:
    """Spherical interpolation along the shorter arc (q and -q are one orientation)."""
    a, b = _unit(np.asarray(a, float)), _unit(np.asarray(b, float))
    t = np.asarray(t, float)[..., None]
    dot = np.sum(a * b, axis=-1, keepdims=True)
    b = np.where(dot < 0, -b, b)
    dot = np.clip(np.abs(dot), 0.0, 1.0)
    angle = np.arccos(dot)
    sin = np.sin(angle)
    near = sin < 1e-8  # almost equal: linear interpolation is exact enough
    safe = np.where(near, 1.0, sin)
    wa = np.where(near, 1.0 - t, np.sin((1.0 - t) * angle) / safe)
    wb = np.where(near, t, np.sin(t * angle) / safe)
    return _unit(wa * a + wb * b)


def quat_between(u, v) -> np.ndarray:
    """Shortest rotation taking unit vectors u onto v (..., 3) -> (..., 4).

    Opposite vectors have no unique shortest rotation: a half turn about a
    fixed perpendicular of u is used, so the choice is at least repeatable.
    """
    u, v = _unit(np.asarray(u, float)), _unit(np.asarray(v, float))
    u, v = np.broadcast_arrays(u, v)
    q = np.concatenate([1.0 + np.sum(u * v, -1, keepdims=True), np.cross(u, v)], axis=-1)
    opposite = q[..., 0] < 1e-9
    if np.any(opposite):
        helper = np.where(np.abs(u[..., :1]) < 0.9, [1.0, 0.0, 0.0], [0.0, 1.0, 0.0])
        q[opposite] = np.concatenate([np.zeros(u.shape[:-1] + (1,)), _unit(np.cross(u, helper))], -1)[opposite]
    return _unit(q)


def quat_average(quats, weights) -> np.ndarray:
    """Weighted mean orientation of (..., K, 4) quaternions (largest eigenvector, sign-free)."""
    quats, weights = np.asarray(quats, float), np.asarray(weights, float)
    m = np.einsum("...k,...ki,...kj->...ij", weights, quats, quats)
    _, vectors = np.linalg.eigh(m)
    return vectors[..., :, -1]


def canonical_quat(q) -> np.ndarray:
    """The representative of q / -q with w >= 0 (first non-zero component positive on ties)."""
    q = _unit(np.asarray(q, float))
    lead = np.take_along_axis(q, np.argmax(np.abs(q) > 1e-12, axis=-1)[..., None], -1)
    return q * np.where(lead < 0, -1.0, 1.0)


def euler_to_quat(angles, order: str = "XYZ") -> np.ndarray:
    """Blender-style Euler angles (..., 3) = (x, y, z) in radians -> quaternions."""
    i, j, k = _euler_axes(order)
    angles = np.asarray(angles, float)
    stacked = np.stack([angles[..., k], angles[..., j], angles[..., i]], -1)
    return matrix_to_quat(euler_to_matrix(stacked, order[::-1]))


def quat_to_euler(q, order: str = "XYZ") -> np.ndarray:
    """Quaternions -> Blender-style Euler angles (x, y, z) for R = R_k R_j R_i."""
    i, j, k = _euler_axes(order)
    m = quat_to_matrix(q)
    e = 1.0 if (j - i) % 3 == 1 else -1.0  # even permutation of XYZ
    out = np.empty(m.shape[:-2] + (3,))
    out[..., j] = np.arcsin(np.clip(-e * m[..., k, i], -1.0, 1.0))
    out[..., i] = np.arctan2(e * m[..., k, j], m[..., k, k])
    out[..., k] = np.arctan2(e * m[..., j, i], m[..., i, i])
    return out


def _euler_axes(order: str) -> tuple[int, int, int]:
    if order not in EULER_ORDERS:
        raise ValueError(f"Euler order must be one of {', '.join(EULER_ORDERS)}, got {order!r}")
    return tuple("XYZ".index(c) for c in order)


# --------------------------------------------------------------- the path ---

@dataclass(frozen=True)
class PathGeometry:
    """Where each via point sits: distances to the ends and its neighbours, (V, ...) arrays."""

    d_start: np.ndarray  # (V,) m from the start (along the path or straight)
    d_end: np.ndarray    # (V,) m to the end
    before: np.ndarray   # (V, 3) m, the point the tangent's Bezier starts from
    after: np.ndarray    # (V, 3) m, the point it ends at
    tangent: np.ndarray  # (V, 3) unit direction of travel (zero at a cusp)

    @property
    def ratio(self) -> np.ndarray:
        """r = d_s / (d_s + d_e) in [0, 1]: 0 at the start, 1 at the end."""
        return self.d_start / (self.d_start + self.d_end)


def path_geometry(start_pos, end_pos, via_positions, distances: str = "path",
                  tangent_span: str = "neighbours", curve: str = "bezier", times=None) -> PathGeometry:
    """Distances, Bezier end points and tangents of every via point.

    distances="path" measures along the polyline start, via..., end, so each
    via point gets its own place along the path; "straight" uses the direct
    distances to start and end; "arc" the arc length along the curve through
    all keys (curves.key_curve; the "spline" one when curve="bezier").
    tangent_span="neighbours" fits each tangent's Bezier through the nearest
    distinct points before and after (the local direction of travel); "ends"
    fits it from start to end as for one via. curve="spline" or "bspline"
    takes the tangent from the cubic through all keys instead, parameterised
    by `times` (s, one per key) when given, else by chord length.
    """
    _choice("distances", distances, DISTANCES)
    _choice("tangent_span", tangent_span, SPANS)
    _choice("curve", curve, CURVES)
    start, end = _vec3(start_pos, "start_pos"), _vec3(end_pos, "end_pos")
    via = np.asarray(via_positions, float).reshape(-1, 3)
    if via.shape[0] == 0 or not np.all(np.isfinite(via)):
        raise ValueError("via_positions must hold one or more finite (x, y, z) points")
    points = np.vstack([start, via, end])
    cum = np.concatenate([[0.0], np.cumsum(np.linalg.norm(np.diff(points, axis=0), axis=1))])
    through = None
    if curve != "bezier" or distances == "arc":
        through = key_curve(points, times, "spline" if curve == "bezier" else curve)
    if distances == "path":
        d_s, d_e = cum[1:-1], cum[-1] - cum[1:-1]
    elif distances == "arc":
        arc = through.key_arc_lengths()
        d_s, d_e = arc[1:-1], arc[-1] - arc[1:-1]
    else:
        d_s, d_e = np.linalg.norm(via - start, axis=1), np.linalg.norm(end - via, axis=1)
    bad = np.flatnonzero(d_s + d_e <= LENGTH_TOL)
    if bad.size:
        raise ValueError(f"via point {bad[0]} coincides with the start and the end: "
                         "its place on the path d_s / (d_s + d_e) is undefined")
    if tangent_span == "ends":
        count = via.shape[0]
        before, after = np.tile(start, (count, 1)), np.tile(end, (count, 1))
    else:  # nearest points whose distance along the path differs: held (repeated) keys are skipped
        i_before = np.searchsorted(cum, cum[1:-1] - LENGTH_TOL, side="left") - 1
        i_after = np.searchsorted(cum, cum[1:-1] + LENGTH_TOL, side="right")
        before = np.where((i_before >= 0)[:, None], points[np.clip(i_before, 0, None)], via)
        after = np.where((i_after < len(points))[:, None], points[np.clip(i_after, None, len(points) - 1)], via)
    if curve == "bezier":
        tangent = bezier_tangents(before, via, after)
    else:
        tangent = through.tangent(through.params[1:-1])
    return PathGeometry(d_s, d_e, before, after, tangent)


def bezier_tangents(before, via, after) -> np.ndarray:
    """Unit tangents at the via points of quadratic Beziers through before, via, after.

    The curve B(s) = (1-s)^2 P0 + 2 s (1-s) C + s^2 P2 passes through V at
    s0 = a / (a + b), a = |V - P0|, b = |P2 - V|, when its middle control
    point is C = V - ((1-s0)^2 (P0 - V) + s0^2 (P2 - V)) / (2 s0 (1-s0)).
    Then B'(s0) is proportional to b (V - P0) / a + a (P2 - V) / b, which
    stays defined when C runs off to infinity. A side of zero length leaves
    the other side's direction; a cusp (both cancel) gives a zero vector.
    """
    incoming, outgoing = via - before, after - via
    a = np.linalg.norm(incoming, axis=-1, keepdims=True)
    b = np.linalg.norm(outgoing, axis=-1, keepdims=True)
    both = (a > LENGTH_TOL) & (b > LENGTH_TOL)
    tangent = np.where(both, b * _unit(incoming) + a * _unit(outgoing), incoming + outgoing)
    return _unit(np.where(np.linalg.norm(tangent, axis=-1, keepdims=True) > LENGTH_TOL, tangent, 0.0))


def bisector_directions(before, via, after) -> np.ndarray:
    """Unit bisectors of the directions before-to-via and via-to-after (zero at a cusp)."""
    direction = _unit(via - before) + _unit(after - via)
    return _unit(np.where(np.linalg.norm(direction, axis=-1, keepdims=True) > 1e-9, direction, 0.0))


def align_axis(quats, axis, directions) -> np.ndarray:
    """Turn each orientation the least so its local `axis` points along `directions`.

    Keeping the smallest swing keeps the roll about the axis from the given
    orientation. Rows with a zero direction are returned unchanged.
    """
    quats = _unit(np.asarray(quats, float))
    current = quat_to_matrix(quats) @ _unit(np.asarray(axis, float))
    turned = _unit(quat_mul(quat_between(current, directions), quats))
    defined = np.linalg.norm(directions, axis=-1, keepdims=True) > 0.5
    return np.where(defined, turned, quats)


# ------------------------------------------------------------------ blend ---

def _bspline_bump(r: np.ndarray) -> np.ndarray:
    """Uniform cubic B-spline basis on knots 0, 1/4, 1/2, 3/4, 1, scaled to peak 1 at r = 1/2."""
    x = 4.0 * np.clip(r, 0.0, 1.0)
    y = np.where(x < 1, x ** 3,
                 np.where(x < 2, -3 * x ** 3 + 12 * x ** 2 - 12 * x + 4,
                          np.where(x < 3, 3 * x ** 3 - 24 * x ** 2 + 60 * x - 44, (4 - x) ** 3)))
    return y / 4.0  # basis * 6 peaks at 4 (the basis peaks at 2/3)


def _custom_curve(curve) -> Callable[[np.ndarray], np.ndarray]:
    """Piecewise-linear f from samples: (K,) evenly spaced over [0, 1], or (K, 2) (r, f) pairs."""
    if curve is None:
        raise ValueError('blend="custom" needs blend_curve: samples of f over r in [0, 1]')
    pts = np.asarray(curve, float)
    if pts.ndim == 1:
        pts = np.column_stack([np.linspace(0.0, 1.0, pts.size), pts])
    if pts.ndim != 2 or pts.shape[1] != 2 or pts.shape[0] < 2 or not np.all(np.isfinite(pts)):
        raise ValueError("blend_curve must be (K,) values or (K, 2) (r, f) pairs, K >= 2, finite")
    if not (np.all(np.diff(pts[:, 0]) > 0) and pts[0, 0] == 0.0 and pts[-1, 0] == 1.0):
        raise ValueError("blend_curve r values must increase from 0 to 1")
    return lambda r: np.interp(r, pts[:, 0], pts[:, 1])


def blend_weights(ratio, blend: BlendSpec = "parabola", max_blend: float = 1.0,
                  blend_curve=None) -> np.ndarray:
    """u = max_blend * f(r), clipped to [0, 1]: how far each via turns toward the optimum.

    f is "parabola" 4 r (1 - r), "bspline" (a smooth C2 bump), "custom"
    (blend_curve samples) or a callable; f must be 0 at r = 0 and r = 1 so
    the keyed ends are reproduced and u stays continuous along the path.
    """
    if not 0.0 <= float(max_blend) <= 1.0:
        raise ValueError(f"max_blend must be in [0, 1], got {max_blend}")
    if callable(blend):
        f = blend
    else:
        _choice("blend", blend, BLENDS)
        f = {"parabola": lambda r: 4.0 * r * (1.0 - r), "bspline": _bspline_bump,
             "custom": None}[blend] or _custom_curve(blend_curve)
    ends = np.asarray(f(np.array([0.0, 1.0])), float)
    if not np.allclose(ends, 0.0, atol=1e-9):
        raise ValueError(f"the blend curve must be 0 at r = 0 and r = 1 (it is {ends[0]:g} and {ends[1]:g})")
    values = np.asarray(f(np.asarray(ratio, float)), float)
    if not np.all(np.isfinite(values)):
        raise ValueError("the blend curve gave a non-finite value")
    return np.clip(float(max_blend) * values, 0.0, 1.0)


# ----------------------------------------------------------- orientations ---

def interpolated_orientations(start_quat, end_quat, ratio, interpolation: str = "slerp",
                              euler_order: str = "XYZ", start_euler=None, end_euler=None) -> np.ndarray:
    """Orientation at each ratio r between the ends: slerp (shorter arc) or linear Euler angles.

    Euler interpolation follows the given angles (start_euler / end_euler,
    radians, Blender order) when the data is in Euler angles, else angles
    derived from the quaternions.
    """
    _choice("interpolation", interpolation, INTERPOLATIONS)
    ratio = np.asarray(ratio, float)
    if interpolation == "slerp":
        return quat_slerp(start_quat, end_quat, ratio)
    e0 = quat_to_euler(start_quat, euler_order) if start_euler is None else _vec3(start_euler, "start_euler")
    e1 = quat_to_euler(end_quat, euler_order) if end_euler is None else _vec3(end_euler, "end_euler")
    return euler_to_quat(e0 + ratio[:, None] * (e1 - e0), euler_order)


# ---------------------------------------------------------------- helpers ---

def _choice(name: str, value, allowed: Sequence[str]) -> None:
    if value not in allowed:
        raise ValueError(f"{name} must be one of {', '.join(allowed)}, got {value!r}")


def _vec3(value, name: str) -> np.ndarray:
    v = np.asarray(value, float)
    if v.shape != (3,) or not np.all(np.isfinite(v)):
        raise ValueError(f"{name} must be 3 finite numbers, got {value!r}")
    return v


def _quat(value, name: str) -> np.ndarray:
    q = np.asarray(value, float)
    if q.shape != (4,) or not np.all(np.isfinite(q)) or np.linalg.norm(q) < 1e-12:
        raise ValueError(f"{name} must be a non-zero quaternion (w, x, y, z), got {value!r}")
    return q / np.linalg.norm(q)


__all__ = ["interpolated_orientations", "blend_weights", "path_geometry", "PathGeometry", "bezier_tangents", "bisector_directions",
           "align_axis", "quat_slerp", "quat_mul", "quat_between", "quat_average", "canonical_quat",
           "euler_to_quat", "quat_to_euler"]
