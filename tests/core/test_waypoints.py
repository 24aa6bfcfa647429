"""Orientations at position-only waypoints: interpolated, optimal (tangent, bisector,
mechanism on the Panda) and their blend, checked against explicit geometry."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from core.model.kinematics import KinematicTree
from core.model.transforms import quat_to_matrix
from core.model.urdf import parse_urdf
from core.waypoints.orientations import (
    blend_weights,
    euler_to_quat,
    interpolated_orientations,
    quat_slerp,
    quat_to_euler,
)
from core.waypoints import mechanism as mech
from core.waypoints import table as tables
from core.waypoints.optimum import waypoint_orientations

PANDA = Path(__file__).resolve().parents[1] / "data" / "robots" / "franka_panda.urdf"
Z = np.array([0.0, 0.0, 1.0])
FULL = [(0.0, 0.0), (0.01, 1.0), (0.99, 1.0), (1.0, 0.0)]  # u = 1 strictly inside


def _angle(a, b) -> np.ndarray:
    """Rotation angle (rad) between orientations, sign-free."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    chord = np.minimum(np.linalg.norm(a - b, axis=-1), np.linalg.norm(a + b, axis=-1))
    return 4.0 * np.arcsin(np.clip(chord / 2.0, 0.0, 1.0))  # exact for small angles, unlike arccos


def _random_quat(rng, n=None):
    q = rng.normal(size=(4,) if n is None else (n, 4))
    return q / np.linalg.norm(q, axis=-1, keepdims=True)


def _case(seed=0):
    rng = np.random.default_rng(seed)
    p0, p1 = rng.normal(size=3), rng.normal(size=3)
    via = 0.5 * (p0 + p1) + 0.4 * rng.normal(size=(1, 3))
    return p0, _random_quat(rng), p1, _random_quat(rng), via


def _bezier_tangent(p0, v, p2):
    """Tangent at V of B(s) = (1-s)^2 P0 + 2s(1-s) C + s^2 P2, by its control point and finite differences."""
    a, b = np.linalg.norm(v - p0), np.linalg.norm(p2 - v)
    s0 = a / (a + b)
    c = (v - (1 - s0) ** 2 * p0 - s0 ** 2 * p2) / (2 * s0 * (1 - s0))
    curve = lambda s: (1 - s) ** 2 * p0 + 2 * s * (1 - s) * c + s ** 2 * p2  # noqa: E731
    assert np.allclose(curve(s0), v)
    h = 1e-6
    d = (curve(s0 + h) - curve(s0 - h)) / (2 * h)
    return d / np.linalg.norm(d)


# ------------------------------------------------------------------ blend ---

@pytest.mark.parametrize("blend", ["parabola", "bspline"])
def test_blend_is_zero_at_the_ends_and_continuous(blend):
    r = np.linspace(0.0, 1.0, 2001)
    u = blend_weights(r, blend, 0.8)
    assert u[0] == 0.0 and u[-1] == 0.0
    assert np.all((u >= 0) & (u <= 0.8 + 1e-12))
    assert u[1000] == pytest.approx(0.8)  # both peak at r = 1/2
    assert np.max(np.abs(np.diff(u))) < 5e-3
    assert np.allclose(u, u[::-1])


def test_custom_blend_curve_and_bad_curves():
    assert blend_weights([0.25, 0.5], "custom", 1.0, [0.0, 1.0, 0.0]) == pytest.approx([0.5, 1.0])
    with pytest.raises(ValueError, match="0 at r = 0 and r = 1"):
        blend_weights([0.5], "custom", 1.0, [0.2, 1.0, 0.0])
    with pytest.raises(ValueError, match="blend_curve"):
        blend_weights([0.5], "custom")
    with pytest.raises(ValueError, match="max_blend"):
        blend_weights([0.5], "parabola", 1.5)
    assert blend_weights([0.5], lambda r: np.sin(np.pi * r), 0.5) == pytest.approx([0.5])


# ----------------------------------------------------------------- blend u ---

def test_via_at_the_ends_gives_the_interpolated_orientation():
    p0, q0, p1, q1, _ = _case(1)
    for blend in ("parabola", "bspline"):
        out = waypoint_orientations(p0, q0, p1, q1, [p0, p1], mode="tangent", blend=blend,
                                    distances="straight")
        assert _angle(out[0], q0) < 1e-7 and _angle(out[1], q1) < 1e-7


def test_zero_blend_reproduces_interpolation_everywhere():
    p0, q0, p1, q1, via = _case(2)
    out = waypoint_orientations(p0, q0, p1, q1, via, max_blend=0.0)
    d_s, d_e = np.linalg.norm(via[0] - p0), np.linalg.norm(p1 - via[0])
    assert _angle(out[0], quat_slerp(q0, q1, d_s / (d_s + d_e))) < 1e-9


def test_full_blend_in_tangent_mode_aligns_the_axis_with_the_bezier_tangent():
    for seed in range(5):
        p0, q0, p1, q1, via = _case(seed)
        axis = np.array([0.3, -1.0, 0.5]) / np.linalg.norm([0.3, -1.0, 0.5])
        out = waypoint_orientations(p0, q0, p1, q1, via, mode="tangent", blend="custom",
                                    blend_curve=FULL, approach_axis=axis)
        got = quat_to_matrix(out[0]) @ axis
        assert np.allclose(got, _bezier_tangent(p0, via[0], p1), atol=1e-6)
        # roll kept from the interpolated orientation: the turn is the smallest swing
        d_s, d_e = np.linalg.norm(via[0] - p0), np.linalg.norm(p1 - via[0])
        interp = quat_slerp(q0, q1, d_s / (d_s + d_e))
        swing = np.arccos(np.clip(np.dot(quat_to_matrix(interp) @ axis, got), -1, 1))
        assert _angle(out[0], interp) == pytest.approx(swing, abs=1e-7)


def test_bisector_mode_follows_the_bisector():
    p0, q0, p1, q1, via = _case(3)
    out = waypoint_orientations(p0, q0, p1, q1, via, mode="bisector", blend="custom", blend_curve=FULL)
    a = (via[0] - p0) / np.linalg.norm(via[0] - p0)
    b = (p1 - via[0]) / np.linalg.norm(p1 - via[0])
    assert np.allclose(quat_to_matrix(out[0]) @ Z, (a + b) / np.linalg.norm(a + b), atol=1e-9)


# ------------------------------------------------------------- properties ---

@pytest.mark.parametrize("mode", ["tangent", "bisector", {"tangent": 1.0, "bisector": 2.0}])
def test_results_are_unit_quaternions(mode):
    rng = np.random.default_rng(4)
    for seed in range(10):
        p0, q0, p1, q1, _ = _case(seed)
        via = rng.normal(size=(5, 3))
        out = waypoint_orientations(p0, q0, p1, q1, via, mode=mode, blend="bspline", max_blend=0.7)
        assert out.shape == (5, 4)
        assert np.allclose(np.linalg.norm(out, axis=1), 1.0)


@pytest.mark.parametrize("blend", ["parabola", "bspline"])
def test_small_via_moves_give_small_turns(blend):
    rng = np.random.default_rng(5)
    for seed in range(10):
        p0, q0, p1, q1, via = _case(seed)
        base = waypoint_orientations(p0, q0, p1, q1, via, blend=blend)
        for _ in range(5):
            moved = waypoint_orientations(p0, q0, p1, q1, via + 1e-5 * rng.normal(size=3), blend=blend)
            assert _angle(base[0], moved[0]) < 1e-3


def test_continuity_as_the_via_reaches_the_start():
    p0, q0, p1, q1, via = _case(6)
    direction = via[0] - p0
    for eps in (1e-2, 1e-4, 1e-6):
        out = waypoint_orientations(p0, q0, p1, q1, [p0 + eps * direction])
        assert _angle(out[0], q0) < 10 * eps


def test_q_and_minus_q_give_the_same_result():
    p0, q0, p1, q1, via = _case(7)
    via = np.vstack([via, via + 0.2])
    a = waypoint_orientations(p0, q0, p1, q1, via, mode={"tangent": 1, "bisector": 1})
    for s0, s1 in ((-1, 1), (1, -1), (-1, -1)):
        b = waypoint_orientations(p0, s0 * q0, p1, s1 * q1, via, mode={"tangent": 1, "bisector": 1})
        assert np.allclose(a, b, atol=1e-12)


def test_several_via_points_on_an_arc():
    """Keys on a half circle: each via has its own place along the path and the local tangent."""
    angles = np.linspace(0.0, np.pi, 11)
    points = np.column_stack([np.cos(angles), np.sin(angles), np.zeros_like(angles)])
    q0, q1 = euler_to_quat([0.2, 0.0, 0.0]), euler_to_quat([0.0, 0.3, 1.0])
    out = waypoint_orientations(points[0], q0, points[-1], q1, points[1:-1], blend="custom", blend_curve=FULL)
    tangents = np.column_stack([-np.sin(angles), np.cos(angles), np.zeros_like(angles)])[1:-1]
    assert np.allclose(np.einsum("vij,j->vi", quat_to_matrix(out), Z), tangents, atol=1e-9)
    assert np.all(np.sum(out[1:] * out[:-1], axis=1) > 0)  # one hemisphere: keys stay smooth
    # interpolation by arc length: equal steps on the circle give equal slerp steps
    interp = waypoint_orientations(points[0], q0, points[-1], q1, points[1:-1], max_blend=0.0)
    assert np.allclose(_angle(interp, quat_slerp(q0, q1, np.arange(1, 10) / 10)), 0.0, atol=1e-7)


def test_held_keys_and_coincident_points():
    p0, q0, p1, q1, via = _case(8)
    held = waypoint_orientations(p0, q0, p1, q1, np.vstack([via, via]))
    assert np.allclose(held[0], held[1])
    with pytest.raises(ValueError, match="coincides with the start and the end"):
        waypoint_orientations(p0, q0, p0, q1, [p0])
    with pytest.raises(ValueError, match="approach_axis"):
        waypoint_orientations(p0, q0, p1, q1, via, approach_axis=(0, 0, 0))
    with pytest.raises(ValueError, match="mode must be one of"):
        waypoint_orientations(p0, q0, p1, q1, via, mode="sideways")
    with pytest.raises(TypeError, match="unknown option"):
        waypoint_orientations(p0, q0, p1, q1, via, colour="red")
    with pytest.raises(ValueError, match="needs chain"):
        waypoint_orientations(p0, q0, p1, q1, via, mode="mechanism")


def test_euler_interpolation():
    e0, e1 = np.array([0.1, -0.4, 3.0]), np.array([0.5, 0.2, -2.9])  # z crosses +-pi
    assert np.allclose(quat_to_euler(euler_to_quat(e0, "XYZ"), "XYZ"), e0)  # middle angle in range
    for order in ("XZY", "YXZ", "YZX", "ZXY", "ZYX"):
        q = euler_to_quat(e0, order)
        assert _angle(euler_to_quat(quat_to_euler(q, order), order), q) < 1e-9
    out = interpolated_orientations(euler_to_quat(e0), euler_to_quat(e1), np.array([0.5]), "euler",
                                    start_euler=e0, end_euler=e1)
    assert _angle(out[0], euler_to_quat(0.5 * (e0 + e1))) < 1e-9  # the long way round, as keyed
    via = waypoint_orientations(np.zeros(3), euler_to_quat(e0), np.array([2.0, 0, 0]), euler_to_quat(e1),
                                [[1.0, 0.5, 0]], max_blend=0.0, interpolation="euler",
                                start_euler=e0, end_euler=e1)
    assert _angle(via[0], out[0]) < 1e-9


# -------------------------------------------------------------- mechanism ---

@pytest.fixture(scope="module")
def panda():
    tree = KinematicTree(parse_urdf(PANDA))
    return mech.make_chain(tree, "panda_hand_tcp", candidates=mech.candidate_orientations(16, 4))


def test_panda_has_masses_and_exact_derivatives(panda):
    assert panda.mass.sum() > 15.0 and panda.columns.tolist() == list(range(7))
    rng = np.random.default_rng(9)
    q = rng.uniform(-1, 1, (3, 7))
    q[:, 3] = -1.5
    frames = mech.chain_frames(panda, q)
    jac, tau = mech.jacobian(panda, frames), mech.gravity_torques(panda, frames)

    def potential(qq):  # minus the potential energy: its gradient is the gravity torque
        f = mech.chain_frames(panda, qq)
        centres = np.einsum("blik,lk->bli", f[..., :3, :3], panda.com) + f[..., :3, 3]
        return np.einsum("l,bli,i->b", panda.mass, centres, panda.gravity)

    h = 1e-6
    for c in range(7):
        dq = q.copy()
        dq[:, c] += h
        moved = mech.chain_frames(panda, dq)
        assert np.allclose((moved[:, panda.tip, :3, 3] - frames[:, panda.tip, :3, 3]) / h, jac[:, :3, c], atol=1e-5)
        turn = moved[:, panda.tip, :3, :3] @ np.swapaxes(frames[:, panda.tip, :3, :3], 1, 2)
        assert np.allclose(mech.rotation_vectors(turn) / h, jac[:, 3:, c], atol=1e-5)
        assert np.allclose((potential(dq) - potential(q)) / h, tau[:, c], atol=1e-3)


@pytest.mark.parametrize("objective", ["manipulability", "gravity"])
def test_mechanism_mode_improves_on_the_interpolated_orientation(panda, objective):
    p0, p1 = np.array([0.5, -0.3, 0.3]), np.array([0.5, 0.3, 0.3])
    down = np.array([0.0, 1.0, 0.0, 0.0])  # tool pointing at the floor, a common pick pose
    via = np.array([[0.45, 0.0, 0.45]])  # equidistant: the parabola gives u = 1
    out = waypoint_orientations(p0, down, p1, down, via, mode="mechanism", chain=panda, objective=objective)
    interp = waypoint_orientations(p0, down, p1, down, via, max_blend=0.0)
    best = mech.orientation_scores(panda, via, out, objective)
    base = mech.orientation_scores(panda, via, interp, objective)
    assert best.reached[0] and base.reached[0]
    # kept continuous with the keyed ends (path_optimum), the optimum gives up a little: 0.091 -> 0.095
    assert best.score[0] > base.score[0] * (1.03 if objective == "manipulability" else 0.95)


def test_lookup_table_matches_its_grid_and_feeds_the_blend(panda, tmp_path):
    bounds = np.array([[0.35, -0.1, 0.35], [0.55, 0.1, 0.55]])
    table = tables.build_table(panda, "manipulability", resolution=2, bounds=bounds, refine=0)
    assert table.quats.shape == (2, 2, 2, 4) and not np.any(np.isnan(table.quats))
    corner = table.lookup(bounds[:1])
    assert _angle(corner[0], table.quats[0, 0, 0]) < 1e-9
    table.save(tmp_path / "t.npz")
    again = tables.OrientationTable.load(tmp_path / "t.npz")
    assert again.objective == "manipulability" and np.array_equal(again.quats, table.quats)
    down = np.array([0.0, 1.0, 0.0, 0.0])
    out = waypoint_orientations([0.3, -0.2, 0.4], down, [0.6, 0.2, 0.4], down, [[0.45, 0.0, 0.45]],
                                mode={"tangent": 1.0, "mechanism": 1.0}, chain=panda, table=table)
    assert np.allclose(np.linalg.norm(out, axis=1), 1.0)
    with pytest.raises(ValueError, match="built for"):
        waypoint_orientations([0.3, -0.2, 0.4], down, [0.6, 0.2, 0.4], down, [[0.45, 0.0, 0.45]],
                              mode="mechanism", chain=panda, table=table, objective="torque")


def test_unreachable_positions_keep_the_interpolated_orientation(panda):
    far = np.array([[3.0, 0.0, 0.0]])
    assert not mech.reachable(panda, far)[0]
    p0, p1, down = np.array([0.5, -0.3, 0.3]), np.array([0.5, 0.3, 0.3]), np.array([0.0, 1.0, 0.0, 0.0])
    out = waypoint_orientations(p0, down, p1, down, far, mode="mechanism", chain=panda, blend="custom",
                                blend_curve=FULL)
    assert _angle(out[0], waypoint_orientations(p0, down, p1, down, far, max_blend=0.0)[0]) < 1e-9
    with pytest.raises(ValueError, match="objective must be one of"):
        waypoint_orientations(p0, down, p1, down, far, mode="mechanism", chain=panda, objective="comfort")
