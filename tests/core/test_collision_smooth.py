"""Smooth trunk proxies (core.collision.smooth): they hold the mesh, a capsule's distance to one is
never above the mesh's and close to its hull's where an arm meets it, the least along a capsule's
axis is the least, and the distance's gradient is the one the separation steps along."""
from __future__ import annotations

import types
from pathlib import Path

import numpy as np
import pytest
from scipy.spatial import ConvexHull

from core.collision import collision_model, smooth
from core.collision.convex import core_distance
from core.collision.proxies import body_mesh
from core.model.kinematics import KinematicTree
from core.model.urdf import parse_urdf
from tests.core.test_collision_hulls import fresh_g1, trunk_never_above_brute_force

ROOT = Path(__file__).resolve().parents[2]
G1 = ROOT / "data/robots/g1/unitree_g1_29dof.urdf"
TRUNK = ("pelvis", "torso_link")


@pytest.fixture(scope="module")
def meshes():
    tree = KinematicTree(parse_urdf(G1))
    return {name: body_mesh(tree, tree.link_names.index(name)).points for name in TRUNK}


def _one(fit: dict) -> types.SimpleNamespace:
    """A model of one smooth proxy (the arrays capsule_to_smooth reads)."""
    return types.SimpleNamespace(hull_points=smooth.frame_points(fit["centre"])[None], hull_planes=fit["planes"][None],
                                 hull_slope=fit["slope"][None], hull_level=np.array([fit["level"]]))


def _segments(points: np.ndarray, count: int, seed: int, length: float = 0.12) -> np.ndarray:
    """Random segments (count, 2, 3) around a body's mesh, turned and placed anywhere near it."""
    rng = np.random.default_rng(seed)
    middle = 0.5 * (points.max(axis=0) + points.min(axis=0)) + rng.normal(size=(count, 3)) * np.ptp(points, axis=0) * 0.7
    way = rng.normal(size=(count, 3))
    way /= np.linalg.norm(way, axis=1, keepdims=True)
    return np.stack([middle - 0.5 * length * way, middle + 0.5 * length * way], axis=1)


def _placed(fit: dict, count: int, turn: np.ndarray, shift: np.ndarray) -> np.ndarray:
    return np.broadcast_to(smooth.frame_points(fit["centre"]) @ turn.T + shift, (count, 4, 3))


@pytest.mark.parametrize("name", TRUNK)
def test_smooth_proxy_holds_its_mesh_and_never_says_more_than_the_mesh(meshes, name):
    """Every mesh vertex within the level; a segment's distance (the body turned and moved) never
    above the brute-force distance to the mesh's vertices, nor to its hull's (GJK), and within
    10 mm of the hull's where the segment is within 3 cm of it (capsules: up to 27 mm)."""
    points = meshes[name]
    fit = smooth.fit_smooth(points)
    used = fit["planes"][:, 3] < 1.0
    assert smooth.soft_value(points, fit["planes"][used], fit["slope"][used])[0].max() <= fit["level"] + 1e-12
    count = 300
    turn = np.linalg.qr(np.random.default_rng(1).normal(size=(3, 3)))[0]
    shift = np.array([0.3, -0.2, 0.9])
    ends = _segments(points, count, seed=2) @ turn.T + shift
    gap, on_axis, on_proxy, normal = smooth.capsule_to_smooth(_placed(fit, count, turn, shift), np.zeros(count, int),
                                                              _one(fit), ends, np.zeros(count))
    world = points @ turn.T + shift
    hull = world[ConvexHull(world).vertices]
    exact = core_distance(ends, np.broadcast_to(hull, (count,) + hull.shape))[0]
    s = np.linspace(0.0, 1.0, 200)
    sampled = ends[:, :1] + s[None, :, None] * (ends[:, 1:] - ends[:, :1])
    brute = np.array([np.sqrt(((sampled[k][:, None] - world[None, ::3]) ** 2).sum(-1)).min() for k in range(count)])
    assert (gap <= exact + 1e-9).all() and (gap <= brute + 1e-9).all()
    near = (exact > 0) & (exact < 0.03)
    assert near.sum() > 20 and (exact - gap)[near].max() < 0.010
    assert (gap[exact == 0.0] <= 0.0).all()  # a segment touching the hull is inside the proxy
    # the point on the axis is the segment's, the normal points out (|grad f| <= 1)
    along = np.einsum("ki,ki->k", on_axis - ends[:, 0], ends[:, 1] - ends[:, 0]) / 0.12 ** 2
    assert ((along > -1e-9) & (along < 1 + 1e-9)).all()
    assert (np.linalg.norm(normal, axis=1) <= 1 + 1e-9).all()
    apart = gap > 0.005
    assert (np.einsum("ki,ki->k", on_axis - on_proxy, normal)[apart] > 0).all()


def test_least_along_the_axis_is_the_least(meshes):
    """The bracketed Newton search's least is every sampled point's least (it had crept along
    sharp edges and stopped up to 4 mm above it: the room made jumped between close inputs)."""
    fit = smooth.fit_smooth(meshes["pelvis"])
    used = fit["planes"][:, 3] < 1.0
    planes, slope = fit["planes"][used], fit["slope"][used]
    ends = _segments(meshes["pelvis"], 4000, seed=0, length=0.06)
    t = smooth.segment_least(ends[:, 0], ends[:, 1], planes, slope)
    least = smooth.soft_value(ends[:, 0] + t[:, None] * (ends[:, 1] - ends[:, 0]), planes, slope)[0]
    s = np.linspace(0.0, 1.0, 1001)
    sampled = np.stack([smooth.soft_value(ends[:, 0] + x * (ends[:, 1] - ends[:, 0]), planes, slope)[0] for x in s], 1)
    assert (least <= sampled.min(axis=1) + 1e-10).all()
    assert (0.0 < t).sum() > 100 and (t < 1.0).sum() > 100  # both ends and inside seen
    assert smooth.segment_least(ends[:0, 0], ends[:0, 1], planes, slope).shape == (0,)  # no capsule near: nothing


def test_distance_gradient_is_the_central_difference(meshes):
    """Moving a capsule's axis by a small step changes its distance by the reported gradient (the
    constraint's own: the separation's steps carry it through the joints)."""
    fit = smooth.fit_smooth(meshes["torso_link"])
    count = 400
    ends = _segments(meshes["torso_link"], count, seed=4)
    placed = _placed(fit, count, np.eye(3), np.zeros(3))
    gap, _, _, grad = smooth.capsule_to_smooth(placed, np.zeros(count, int), _one(fit), ends, np.zeros(count))
    step = 1e-6
    for axis in range(3):
        move = np.zeros(3)
        move[axis] = step
        ahead = smooth.capsule_to_smooth(placed, np.zeros(count, int), _one(fit), ends + move, np.zeros(count))[0]
        back = smooth.capsule_to_smooth(placed, np.zeros(count, int), _one(fit), ends - move, np.zeros(count))[0]
        np.testing.assert_allclose(grad[:, axis], (ahead - back) / (2 * step), atol=1e-5)


def test_g1_smooth_trunk_never_above_the_brute_force_mesh_distance(monkeypatch, tmp_path):
    """The G1 with smooth trunk proxies on (core.collision.hulls.SMOOTH_TRUNK): its pelvis and torso
    are smooth proxies, and wherever a checked pair with one comes within 5 cm in random postures,
    it says no more than the meshes' vertex-to-vertex distance, within 2 mm (test_collision_hulls.py)."""
    g1 = fresh_g1(monkeypatch, tmp_path, "SMOOTH_TRUNK")
    model = collision_model(g1)
    assert model.hull_planes is not None
    assert sorted(model.body_names[model.capsule_body[c]] for c in np.flatnonzero(model.hull >= 0)) == list(TRUNK)
    trunk_never_above_brute_force(g1)
