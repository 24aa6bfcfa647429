"""waypoint_orientations: the interpolated orientation turned toward the modes' optimum.

Modes: "tangent" and "bisector" (the approach axis along the path, roll from
the interpolated orientation), "mechanism" (the orientation the arm holds
best) and "tangent_mechanism" (the approach axis on the tangent, the roll the
arm holds best); a mapping of modes to weights averages several optima.
The mechanism modes pick via point after via point continuously
(path_optimum). The blend u = max_blend * f(r) may be raised where the
interpolated orientation would bring the arm near a singularity or a joint
limit (StateBlend). Quaternions (w, x, y, z), positions in metres, via first.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..model.transforms import quat_continuous
from . import mechanism as mech
from .orientations import (BlendSpec, PathGeometry, _choice, _quat, _vec3, align_axis, bisector_directions,
                           blend_weights, canonical_quat, interpolated_orientations, path_geometry, quat_average,
                           quat_slerp)
from .path_optimum import PathSearch, hold_scores, mechanism_search, seeds_for, tangent_mechanism_search

MODES = ("tangent", "bisector", "mechanism", "tangent_mechanism")
MECHANISM_MODES = ("mechanism", "tangent_mechanism")


@dataclass(frozen=True)
class StateBlend:
    """Blend more of the optimum where the interpolated orientation strains the arm.

    The risk at a via point is 1 where the arm cannot hold the interpolated
    orientation, else the larger of 1 - m / min_manipulability and
    1 - margin / limit_margin (each clipped to [0, 1]), m the manipulability
    with lengths in arm lengths (m^3 / MechanismChain.length^3, so one
    threshold holds for the arm at any scale; 0.05 is 0.065 m^3 on the
    Panda) and margin the smallest distance to a joint limit over the
    joint's range.
    u becomes u + (1 - u) * risk * min(1, 8 r (1 - r)): unchanged at the keyed
    ends, up to 1 where the arm is at risk.
    """

    min_manipulability: float = 0.05
    limit_margin: float = 0.1


def _mode_weights(mode) -> dict[str, float]:
    """{"tangent": 1} from a mode name, or a validated weighted mapping of modes."""
    weights = {mode: 1.0} if isinstance(mode, str) else dict(mode)
    for name, weight in weights.items():
        _choice("mode", name, MODES)
        if not (np.isfinite(weight) and weight >= 0):
            raise ValueError(f"mode weight for {name!r} must be finite and >= 0, got {weight}")
    if not weights or sum(weights.values()) <= 0:
        raise ValueError("mode weights must include a positive weight")
    return {name: float(w) for name, w in weights.items() if w > 0}


def optimal_orientations(mode, geometry: PathGeometry, via: np.ndarray, interpolated: np.ndarray,
                         approach_axis, chain=None, objective: str = "manipulability", table=None,
                         ends=None, search: PathSearch = PathSearch()) -> np.ndarray:
    """The optimal orientation (V, 4) of each via point: one mode or a weighted mean of several.

    ends (start quaternion, end quaternion): the keyed orientations the mechanism modes stay continuous with.
    """
    weights = _mode_weights(mode)
    results, w = [], []
    for name, weight in weights.items():
        if name == "tangent":
            q = align_axis(interpolated, approach_axis, geometry.tangent)
        elif name == "bisector":
            q = align_axis(interpolated, approach_axis, bisector_directions(geometry.before, via, geometry.after))
        else:
            if chain is None:
                raise ValueError(f'mode "{name}" needs chain= (core.waypoints.mechanism.make_chain)')
            mech.check_objective(objective)
            previous, following = (None, None) if ends is None else ends
            if name == "tangent_mechanism":
                q = tangent_mechanism_search(chain, via, geometry.tangent, interpolated, approach_axis, objective,
                                             search, previous, following).quats
            else:
                q = mechanism_search(chain, via, interpolated, objective, search, previous, following, table).quats
            q = np.where(np.isnan(q[:, :1]), interpolated, q)  # out of reach: the interpolated orientation
        results.append(q)
        w.append(weight)
    if len(results) == 1:
        return results[0]
    stacked = np.stack(results, axis=1)  # (V, M, 4)
    return quat_average(stacked, np.broadcast_to(np.asarray(w), stacked.shape[:2]))


def state_risk(chain, via, quats, state: StateBlend, search: PathSearch = PathSearch()) -> np.ndarray:
    """(V,) in [0, 1]: how close holding `quats` at `via` brings the arm to a singularity or a limit."""
    via = np.asarray(via, float).reshape(-1, 3)
    seeds = np.broadcast_to(seeds_for(chain, None, search), (via.shape[0],) + (search.restarts + 1, chain.columns.size))
    q, score = hold_scores(chain, via, np.asarray(quats, float)[:, None], np.ascontiguousarray(seeds),
                           "manipulability")
    q, m = q[:, 0], score[:, 0] / chain.length ** 3  # 3 of the Jacobian's 6 rows are lengths
    lo, hi = mech.joint_limits(chain.tree, chain.columns)
    margin = np.min(np.minimum(q - lo, hi - q) / (hi - lo), axis=1)
    risk = np.maximum(np.clip(1.0 - m / state.min_manipulability, 0.0, 1.0),
                      np.clip(1.0 - margin / state.limit_margin, 0.0, 1.0))
    return np.where(np.isfinite(m), risk, 1.0)


OPTIONS = {"interpolation", "euler_order", "start_euler", "end_euler", "blend_curve", "distances",
           "tangent_span", "curve", "times", "chain", "objective", "table", "search", "state_blend"}


def waypoint_orientations(start_pos, start_quat, end_pos, end_quat, via_positions,
                          mode="tangent", blend: BlendSpec = "parabola", max_blend: float = 1.0,
                          approach_axis=(0, 0, 1), **options) -> np.ndarray:
    """One unit quaternion (w, x, y, z) per via point, shape (V, 4).

    mode: "tangent", "bisector", "mechanism", "tangent_mechanism", or a mapping
    of modes to weights (e.g. {"tangent": 1, "mechanism": 2}) for a weighted
    mean of optima.
    blend: "parabola", "bspline", "custom" (with blend_curve) or a callable f(r).
    approach_axis: the effector's local axis aligned with the path direction.
    options: interpolation ("slerp" | "euler"), euler_order, start_euler,
    end_euler, blend_curve, distances ("path" | "straight" | "arc"),
    tangent_span ("neighbours" | "ends"), curve ("bezier" | "spline" |
    "bspline") and times (s per key, the curve's parameter); for the
    mechanism modes chain, objective ("manipulability" | "torque", also
    "gravity"), table (a table.OrientationTable), search (a PathSearch) and
    state_blend (a StateBlend: more of the optimum where the arm is at risk).
    The result stays in one hemisphere, starting from that of start_quat with
    w >= 0, so q and -q inputs give identical output and keys stay smooth.
    """
    unknown = sorted(set(options) - OPTIONS)
    if unknown:
        raise TypeError(f"unknown option(s) {', '.join(unknown)}; expected some of {', '.join(sorted(OPTIONS))}")
    q0, q1 = _quat(start_quat, "start_quat"), _quat(end_quat, "end_quat")
    axis = _vec3(approach_axis, "approach_axis")
    if np.linalg.norm(axis) < 1e-12:
        raise ValueError("approach_axis must be a non-zero vector")
    geometry = path_geometry(start_pos, end_pos, via_positions, options.get("distances", "path"),
                             options.get("tangent_span", "neighbours"), options.get("curve", "bezier"),
                             options.get("times"))
    via = np.asarray(via_positions, float).reshape(-1, 3)
    ratio = geometry.ratio
    interpolated = interpolated_orientations(
        q0, q1, ratio, options.get("interpolation", "slerp"), options.get("euler_order", "XYZ"),
        options.get("start_euler"), options.get("end_euler"))
    u = blend_weights(ratio, blend, max_blend, options.get("blend_curve"))
    chain, search = options.get("chain"), options.get("search") or PathSearch()
    state = options.get("state_blend")
    if state is not None:
        if chain is None:
            raise ValueError("state_blend needs chain= (core.waypoints.mechanism.make_chain)")
        risk = state_risk(chain, via, interpolated, state, search)
        u = u + (1.0 - u) * risk * np.minimum(1.0, 8.0 * ratio * (1.0 - ratio))
    optimal = optimal_orientations(mode, geometry, via, interpolated, axis, chain,
                                   options.get("objective", "manipulability"), options.get("table"),
                                   (q0, q1), search)
    result = quat_slerp(interpolated, optimal, u)
    return quat_continuous(np.vstack([canonical_quat(q0), result]))[1:]


__all__ = ["waypoint_orientations", "optimal_orientations", "StateBlend", "state_risk", "MODES", "MECHANISM_MODES"]
