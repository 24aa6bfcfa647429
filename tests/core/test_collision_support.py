"""The meshes' separating-axis bound (core.collision.support): never above the rounded hulls' distance,
exact along their own closest-point direction, and on the G1 between the capsules' and the hulls'."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from core.collision import collision_pairs, support
from core.collision.convex import core_distance
from core.collision.pairs import pair_distances
from core.collision.support import support_gap
from core.model.kinematics import KinematicTree
from core.model.urdf import parse_urdf

ROOT = Path(__file__).resolve().parents[2]
G1 = ROOT / "data/robots/g1/unitree_g1_29dof.urdf"


@pytest.fixture(scope="module")
def g1():
    return KinematicTree(parse_urdf(G1))


def _close_pairs(g1, count: int, seed: int):
    """Random postures' body pairs whose capsules come within 5 cm, both bodies with a mesh: postures,
    frames, pairs, bodies (K, 2) and their link poses (K, 2, 4, 4)."""
    pairs = collision_pairs(g1)
    model = pairs.model
    rng = np.random.default_rng(seed)
    q = g1.lower + rng.random((count, g1.dof)) * (g1.upper - g1.lower)
    capsules = pairs.body_distance(pair_distances(g1, pairs, q, None, support=False))
    f, p = np.nonzero(capsules < 0.05)
    bodies = pairs.bodies[p]
    keep = (model.support_radius[bodies] >= 0).all(axis=1)
    f, p, bodies = f[keep], p[keep], bodies[keep]
    poses = g1.forward(q)[f[:, None], np.asarray(model.body_links)[bodies]]
    return pairs, q, f, p, bodies, poses, capsules


def _hulls(model, bodies: np.ndarray, poses: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Both bodies' support hull vertices in the world (K, S, 3) each."""
    return tuple(np.einsum("kij,ksj->ksi", poses[:, side, :3, :3], model.support_points[bodies[:, side]])
                 + poses[:, side, None, :3, 3] for side in (0, 1))


def _frames(poses: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Link frames (K, 4, 3) as support_gap reads them: the rotation's columns, then the origin."""
    return tuple(np.concatenate([poses[:, side, :3, :3].transpose(0, 2, 1), poses[:, side, None, :3, 3]], axis=1)
                 for side in (0, 1))


def test_the_bound_is_never_above_the_hulls_distance_and_is_it_along_their_closest_direction(g1):
    """Separating axis: for any unit vector the gap of the projections is at most the rounded hulls'
    distance (also when they overlap), and along the direction between their nearest points it is
    that distance; the support vertices lie on the hulls, each gap the normal's product with them."""
    pairs, _, _, _, bodies, poses, _ = _close_pairs(g1, 30, 11)
    model = pairs.model
    on_a, on_b = _hulls(model, bodies, poses)
    radii = model.support_radius[bodies].sum(axis=1)
    dist, near_a, near_b, overlap = core_distance(on_a, on_b)
    assert len(dist) > 50 and (~overlap).sum() > 30
    rng = np.random.default_rng(2)
    for _ in range(5):
        n = rng.normal(size=(len(dist), 3))
        n /= np.linalg.norm(n, axis=1, keepdims=True)
        gap, a, b = support_gap(model, bodies, _frames(poses), n)
        assert (gap <= dist - radii + 1e-9).all()
        np.testing.assert_allclose(np.einsum("ki,ki->k", a - b, n) - radii, gap, atol=1e-12)
        assert np.abs(on_a - a[:, None]).sum(axis=2).min(axis=1).max() < 1e-9  # a hull vertex
    apart = ~overlap
    n = near_a[apart] - near_b[apart]
    n /= np.linalg.norm(n, axis=1, keepdims=True)
    gap = support_gap(model, bodies[apart], tuple(x[apart] for x in _frames(poses)), n)[0]
    np.testing.assert_allclose(gap, dist[apart] - radii[apart], atol=1e-7)


def test_g1_body_distances_lie_between_the_capsules_and_the_hulls_and_recover_half_the_room(g1, monkeypatch):
    """Random postures: where the capsules come within 5 cm, each body pair's distance with the bound
    is no less than the capsules' and no more than the larger of theirs and the rounded hulls' (the
    bound never is), and it recovers at least 40 % of the room the hulls would give (53 % here; where
    the G1 arms bind in an avoiding bake, 55-87 % by body pair)."""
    monkeypatch.setattr(support, "SUPPORT_BOUND", True)
    pairs, q, f, p, bodies, poses, capsules = _close_pairs(g1, 40, 5)
    model = pairs.model
    bound = pairs.body_distance(pair_distances(g1, pairs, q, None))[f, p]
    capsules = capsules[f, p]
    on_a, on_b = _hulls(model, bodies, poses)
    hull, _, _, overlap = core_distance(on_a, on_b)
    hull -= model.support_radius[bodies].sum(axis=1)
    apart = ~overlap
    assert apart.sum() > 100
    assert (bound >= capsules).all()
    assert (bound[apart] <= np.maximum(capsules, hull)[apart] + 1e-9).all()
    room = (np.maximum(capsules, hull) - capsules)[apart].sum()
    assert (bound - capsules)[apart].sum() >= 0.4 * room > 0


def test_the_hulls_are_fitted_on_the_bounds_first_use_and_kept_on_disk(monkeypatch, tmp_path):
    """Off by default, the bound costs a robot's first fit nothing (its hulls were 28 % of the G1's):
    looks with it off fit no hull, the first look with it on fits them once and the disk cache keeps
    them, so a new process reads them (the same to the bit) without fitting."""
    from core.collision import pairs as pairs_module
    from core.collision import proxies, store

    monkeypatch.setenv(store.CACHE_ENV, str(tmp_path))
    monkeypatch.setattr(proxies, "_MODELS", {})
    monkeypatch.setattr(pairs_module, "_PAIRS", {})
    fits, fit = [], proxies.fit_support_of
    monkeypatch.setattr(proxies, "fit_support_of", lambda tree, model: fits.append(tree) or fit(tree, model))
    tree = KinematicTree(parse_urdf(G1))
    pairs = collision_pairs(tree)
    q = tree.lower + np.random.default_rng(3).random((20, tree.dof)) * (tree.upper - tree.lower)
    monkeypatch.setattr(support, "SUPPORT_BOUND", False)
    off = pair_distances(tree, pairs, q, None)
    (saved,) = tmp_path.glob("*.npz")
    with np.load(saved) as data:
        assert any(key.startswith("model.") for key in data.files)
        assert not any(key.startswith("support.") for key in data.files)
    assert not fits
    monkeypatch.setattr(support, "SUPPORT_BOUND", True)
    on = pair_distances(tree, pairs, q, None)
    pair_distances(tree, pairs, q, None)
    assert len(fits) == 1
    assert (on >= off).all() and (on > off + 1e-4).sum() > 100  # the bound stands in on many entries
    monkeypatch.setattr(proxies, "_MODELS", {})  # as a new process
    monkeypatch.setattr(pairs_module, "_PAIRS", {})
    again = collision_pairs(KinematicTree(parse_urdf(G1))).model
    np.testing.assert_array_equal(again.support_points, pairs.model.support_points)
    np.testing.assert_array_equal(again.support_radius, pairs.model.support_radius)
    assert len(fits) == 1 and (pairs.model.support_radius >= 0).sum() > 20
