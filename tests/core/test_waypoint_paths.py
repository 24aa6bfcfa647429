"""Issue 15 in core: tangents and ratios from the curve through all keys, the tangent-constrained
mechanism optimum, continuity of the mechanism modes on the seven-point Panda arc, the
single-branch lookup table and the blend raised by the robot's state."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from core.model.kinematics import KinematicTree
from core.model.transforms import quat_to_matrix
from core.model.urdf import parse_urdf
from core.waypoints import mechanism as mech
from core.waypoints import table as tables
from core.waypoints.curves import key_curve
from core.waypoints.optimum import StateBlend, state_risk, waypoint_orientations
from core.waypoints.orientations import path_geometry
from core.waypoints.path_optimum import PathSearch, best_sequence, turn_angles

PANDA = Path(__file__).resolve().parents[1] / "data" / "robots" / "franka_panda.urdf"
Z = np.array([0.0, 0.0, 1.0])
DOWN = np.array([0.0, 1.0, 0.0, 0.0])  # the tool pointing at the floor
FULL = [(0.0, 0.0), (0.01, 1.0), (0.99, 1.0), (1.0, 0.0)]  # u = 1 at every via point


def panda_arc() -> np.ndarray:
    """(9, 3) m: start, seven via points, end on a smooth arc in front of the Panda, rising in the middle."""
    angles = np.radians(np.linspace(-60, 60, 9))
    return np.column_stack([0.5 * np.cos(angles), 0.5 * np.sin(angles), 0.35 + 0.1 * np.sin(np.linspace(0, np.pi, 9))])


@pytest.fixture(scope="module")
def panda():
    return mech.make_chain(KinematicTree(parse_urdf(PANDA)), "panda_hand_tcp")


# ---------------------------------------------------------------- curves ---

def test_cubic_curves_pass_the_keys_and_follow_a_circle():
    angles = np.radians([0.0, 20.0, 50.0, 70.0, 110.0, 130.0, 180.0])  # uneven steps
    points = np.column_stack([np.cos(angles), np.sin(angles), np.zeros_like(angles)])
    exact = np.column_stack([-np.sin(angles), np.cos(angles), np.zeros_like(angles)])
    for kind, tolerance in (("spline", 2.5), ("bspline", 0.5)):
        curve = key_curve(points, kind=kind)
        assert np.allclose(curve.position(curve.params), points, atol=1e-12)
        error = np.degrees(np.arccos(np.clip(np.sum(curve.tangent(curve.params[1:-1]) * exact[1:-1], 1), -1, 1)))
        assert error.max() < tolerance
        arc = curve.key_arc_lengths()
        assert np.allclose(arc, angles, rtol=5e-3, atol=2e-3)  # radius 1: arc length = angle
    natural = key_curve(points, kind="spline")
    assert np.allclose(natural._curve(natural.params[[0, -1]], 2), 0.0)  # no curvature at the ends


def test_curve_options_of_waypoint_orientations():
    points = panda_arc()
    times = np.arange(9) * 0.5
    for curve in ("spline", "bspline"):
        geometry = path_geometry(points[0], points[-1], points[1:-1], "arc", curve=curve, times=times)
        expected = key_curve(points, times, curve).tangent(times[1:-1])
        assert np.allclose(geometry.tangent, expected)
        out = waypoint_orientations(points[0], DOWN, points[-1], DOWN, points[1:-1], blend="custom",
                                    blend_curve=FULL, curve=curve, times=times)
        assert np.allclose(np.einsum("vij,j->vi", quat_to_matrix(out), Z), expected, atol=1e-9)
    arc = path_geometry(points[0], points[-1], points[1:-1], "arc")
    straight = path_geometry(points[0], points[-1], points[1:-1], "straight")
    chord = path_geometry(points[0], points[-1], points[1:-1], "path")
    assert np.all(np.diff(arc.ratio) > 0) and not np.allclose(arc.ratio, straight.ratio, atol=1e-3)
    assert np.allclose(arc.ratio, chord.ratio, atol=0.01)  # keys evenly spread: close to the polyline's
    with pytest.raises(ValueError, match="curve must be one of"):
        path_geometry(points[0], points[-1], points[1:-1], curve="nurbs")
    with pytest.raises(ValueError, match="times must increase"):
        key_curve(points, np.zeros(9))


# ------------------------------------------------------ tangent_mechanism ---

@pytest.mark.parametrize("objective", ["manipulability", "torque"])
def test_tangent_mechanism_keeps_the_tangent_and_beats_tangent_mode(panda, objective):
    points = panda_arc()
    common = dict(chain=panda, objective=objective, blend="custom", blend_curve=FULL, curve="spline")
    best = waypoint_orientations(points[0], DOWN, points[-1], DOWN, points[1:-1], mode="tangent_mechanism", **common)
    plain = waypoint_orientations(points[0], DOWN, points[-1], DOWN, points[1:-1], mode="tangent", **common)
    tangents = key_curve(points).tangent(key_curve(points).params[1:-1])
    off = np.degrees(np.arccos(np.clip(np.sum(np.einsum("vij,j->vi", quat_to_matrix(best), Z) * tangents, 1), -1, 1)))
    assert off.max() < 0.5
    # the arm's own figure for an orientation: the best over the same IK starts the search uses
    restarts = PathSearch().restarts
    ours = mech.orientation_scores(panda, points[1:-1], best, objective, restarts=restarts)
    theirs = mech.orientation_scores(panda, points[1:-1], plain, objective, restarts=restarts)
    assert ours.reached.all() and theirs.reached.all()
    assert np.all(ours.score >= theirs.score - 1e-9 * np.abs(theirs.score))
    assert np.sum(ours.score) > np.sum(theirs.score) * (1.05 if objective == "manipulability" else 0.95)
    if objective == "manipulability":
        assert np.max(ours.score - theirs.score) > 0.02


def test_a_weighted_mix_of_optima_stays_available(panda):
    points = panda_arc()
    mix = waypoint_orientations(points[0], DOWN, points[-1], DOWN, points[1:-1], chain=panda,
                                mode={"tangent_mechanism": 1.0, "mechanism": 1.0})
    assert mix.shape == (7, 4) and np.allclose(np.linalg.norm(mix, axis=1), 1.0)


# ------------------------------------------------------------ continuity ---

@pytest.mark.parametrize("mode", ["mechanism", "tangent_mechanism"])
@pytest.mark.parametrize("objective", ["manipulability", "torque"])
def test_mechanism_modes_turn_little_between_keys_on_the_arc(panda, mode, objective):
    points = panda_arc()
    for blend in ({"blend": "parabola"}, {"blend": "custom", "blend_curve": FULL}):
        out = waypoint_orientations(points[0], DOWN, points[-1], DOWN, points[1:-1], mode=mode, chain=panda,
                                    objective=objective, curve="spline", **blend)
        assert np.degrees(turn_angles(out[1:], out[:-1])).max() <= 45.0
        assert mech.orientation_scores(panda, points[1:-1], out, objective).reached.all()


def test_mechanism_with_a_table_stays_continuous(panda):
    points = panda_arc()
    box = np.stack([points.min(axis=0), points.max(axis=0)]) + [[-0.05], [0.05]]
    table = tables.build_table(panda, "manipulability", resolution=3, bounds=box)
    grid = table.quats.reshape(-1, 4)
    assert not np.any(np.isnan(grid))
    centre = table.quats[1, 1, 1]
    assert np.degrees(turn_angles(grid, centre)).max() < 90.0  # one branch around the centre's
    out = waypoint_orientations(points[0], DOWN, points[-1], DOWN, points[1:-1], mode="mechanism", chain=panda,
                                table=table, blend="custom", blend_curve=FULL)
    assert np.degrees(turn_angles(out[1:], out[:-1])).max() <= 45.0


def test_table_lookup_never_averages_across_branches():
    a = np.array([1.0, 0.0, 0.0, 0.0])
    b = np.array([np.cos(np.pi / 4), 0.0, 0.0, np.sin(np.pi / 4)])  # 90 degrees away: another branch
    table = tables.OrientationTable(np.zeros(3), np.ones(3), np.stack([a, b]).reshape(2, 1, 1, 4), "manipulability")
    for x, expected in ((0.4, a), (0.6, b)):
        got = table.lookup([[x, 0.0, 0.0]])[0]
        assert turn_angles(got, expected) < 1e-9
    near = np.array([np.cos(0.1), 0.0, 0.0, np.sin(0.1)])  # 11 degrees: the same branch, averaged
    table.quats[1, 0, 0] = near
    assert np.degrees(turn_angles(table.lookup([[0.5, 0.0, 0.0]])[0], a)) == pytest.approx(np.degrees(0.1), abs=0.2)


def test_best_sequence_trades_gain_against_turns():
    quats = np.array([[1.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 1.0]])  # identity and a half turn
    candidates = np.broadcast_to(quats, (3, 2, 4))
    gain = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0]])  # the middle prefers the half turn
    assert best_sequence(gain, candidates, None, None, PathSearch(continuity=0.1, max_turn_deg=180)).tolist() == [0, 1, 0]
    assert best_sequence(gain, candidates, None, None, PathSearch(continuity=8.0, max_turn_deg=180)).tolist() == [0, 0, 0]
    assert best_sequence(gain, candidates, None, None, PathSearch(continuity=0.1)).tolist() == [0, 0, 0]  # the ceiling
    # keyed ends at the half turn: keeping to them wins (no ceiling from the ends, their turn is the blend's)
    assert best_sequence(gain, candidates, quats[1], quats[1], PathSearch()).tolist() == [1, 1, 1]


# ------------------------------------------------------------ state blend ---

def test_blend_from_the_robot_state(panda):
    points = panda_arc()
    plain = waypoint_orientations(points[0], DOWN, points[-1], DOWN, points[1:-1], chain=panda)
    optimum = waypoint_orientations(points[0], DOWN, points[-1], DOWN, points[1:-1], chain=panda,
                                    blend="custom", blend_curve=FULL)
    interp = waypoint_orientations(points[0], DOWN, points[-1], DOWN, points[1:-1], max_blend=0.0)
    held = mech.orientation_scores(panda, points[1:-1], interp, "manipulability", restarts=PathSearch().restarts)
    manip = held.score / panda.length ** 3  # lengths in arm lengths
    threshold = float(np.median(manip))  # half the via points hold the interpolated orientation worse
    risk = state_risk(panda, points[1:-1], interp, StateBlend(min_manipulability=threshold, limit_margin=0.05))
    lo, hi = panda.tree.lower[:7], panda.tree.upper[:7]
    margin = np.min(np.minimum(held.q - lo, hi - held.q) / (hi - lo), axis=1)  # share of the range left
    expected = np.maximum(np.clip(1.0 - manip / threshold, 0.0, 1.0), np.clip(1.0 - margin / 0.05, 0.0, 1.0))
    assert np.allclose(risk, expected)
    assert np.sum(risk > 0) >= 3 and np.sum(risk == 0) >= 1
    huge = StateBlend(min_manipulability=1e9)  # every pose counts as near a singularity
    assert np.allclose(state_risk(panda, points[1:-1], interp, huge), 1.0, atol=1e-6)
    strained = waypoint_orientations(points[0], DOWN, points[-1], DOWN, points[1:-1], chain=panda, state_blend=huge)
    ratio = path_geometry(points[0], points[-1], points[1:-1]).ratio
    inner = 8 * ratio * (1 - ratio) >= 1.0
    assert np.all(turn_angles(strained[inner], optimum[inner]) < 1e-5)  # all the way to the optimum
    assert np.all(turn_angles(strained, optimum) <= turn_angles(plain, optimum) + 1e-9)
    calm = StateBlend(min_manipulability=1e-9, limit_margin=1e-9)  # risk only where a joint sits on its limit
    relaxed = waypoint_orientations(points[0], DOWN, points[-1], DOWN, points[1:-1], chain=panda, state_blend=calm)
    free = state_risk(panda, points[1:-1], interp, calm) == 0
    assert free.sum() >= 3 and np.allclose(relaxed[free], plain[free])  # no risk: the plain blend
    far = np.array([[2.0, 0.0, 0.5]])  # out of reach: the largest risk
    assert state_risk(panda, far, DOWN[None], StateBlend())[0] == 1.0
    with pytest.raises(ValueError, match="state_blend needs chain"):
        waypoint_orientations(points[0], DOWN, points[-1], DOWN, points[1:-1], state_blend=StateBlend())
