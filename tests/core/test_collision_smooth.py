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


@pytest.fixture
def g1_smooth(monkeypatch, tmp_path):
    """The G1 with smooth trunk proxies on (core.collision.hulls.SMOOTH_TRUNK), fitted afresh."""
    from core.collision import hulls, pairs, proxies, store
    monkeypatch.setattr(hulls, "SMOOTH_TRUNK", True)
    monkeypatch.setenv(store.CACHE_ENV, str(tmp_path / "cache"))
    monkeypatch.setattr(proxies, "_MODELS", {})
    monkeypatch.setattr(pairs, "_PAIRS", {})
    return KinematicTree(parse_urdf(G1))


def test_g1_smooth_trunk_never_above_the_brute_force_mesh_distance(g1_smooth):
    """Random postures: wherever a checked pair with a smooth trunk comes within 5 cm, it says no
    more than the meshes' vertex-to-vertex distance, within 2 mm (as test_collision_hulls.py)."""
    from core.collision import collision_pairs
    from core.collision.pairs import pair_distances
    from tests.core.test_collision_hulls import _mesh_world
    g1 = g1_smooth
    model = collision_model(g1)
    assert model.hull_planes is not None
    assert sorted(model.body_names[model.capsule_body[c]] for c in np.flatnonzero(model.hull >= 0)) == list(TRUNK)
    pairs = collision_pairs(g1)
    rng = np.random.default_rng(5)
    q = g1.lower + rng.random((12, g1.dof)) * (g1.upper - g1.lower)
    proxy = pairs.body_distance(pair_distances(g1, pairs, q, None))
    trunk = set(model.capsule_body[model.hull >= 0].tolist())
    checked = 0
    for f in range(len(q)):
        poses = g1.forward(q[f:f + 1])[0]
        for p, (a, b) in enumerate(pairs.bodies):
            if proxy[f, p] > 0.05 or not ({int(a), int(b)} & trunk):
                continue
            wa, wb = (_mesh_world(g1, model, body, poses)[::5] for body in (a, b))
            if not len(wa) or not len(wb):
                continue
            brute = np.sqrt(((wa[:, None] - wb[None]) ** 2).sum(-1).min())
            assert proxy[f, p] <= brute + 2e-3
            checked += 1
    assert checked > 5
