"""Hull proxies: the batched convex distance against brute force over dense samples, against the
capsule distance where a hull is a capsule's, overlaps measured no shallower than they are, and
the G1 trunk's simplified hulls holding every mesh vertex."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy.spatial import ConvexHull

from core.collision import collision_model
from core.collision.convex import convex_distance, core_distance, face_normals
from core.collision.distance import capsule_distance
from core.collision.hulls import HULL_VERTICES, simplified_hull
from core.collision.proxies import body_mesh
from core.model.kinematics import KinematicTree
from core.model.urdf import parse_urdf

ROOT = Path(__file__).resolve().parents[2]
G1 = ROOT / "data/robots/g1/unitree_g1_29dof.urdf"


def _surface(points: np.ndarray, steps: int = 24) -> np.ndarray:
    """Dense samples (S, 3) of the surface of the points' hull: a grid on each triangle."""
    hull = ConvexHull(points)
    u, v = np.meshgrid(np.linspace(0, 1, steps), np.linspace(0, 1, steps))
    keep = u + v <= 1.0
    u, v = u[keep], v[keep]
    corner = points[hull.simplices]  # (T, 3, 3)
    return (corner[:, None, 0] + u[None, :, None] * (corner[:, None, 1] - corner[:, None, 0])
            + v[None, :, None] * (corner[:, None, 2] - corner[:, None, 0])).reshape(-1, 3)


def _inside(point: np.ndarray, points: np.ndarray) -> bool:
    hull = ConvexHull(points)
    return bool((hull.equations[:, :3] @ point + hull.equations[:, 3]).max() <= 1e-9)


def test_hull_to_segment_and_hull_to_hull_distances_match_brute_force():
    rng = np.random.default_rng(3)
    count = 12
    a = rng.normal(size=(count, 16, 3)) * 0.05 + rng.normal(size=(count, 1, 3)) * 0.2
    segment = rng.normal(size=(count, 2, 3)) * 0.08
    b = rng.normal(size=(count, 10, 3)) * 0.04 + rng.normal(size=(count, 1, 3)) * 0.2
    gap_s, pa_s, pb_s, over_s = core_distance(a, segment)
    gap_h, pa_h, pb_h, over_h = core_distance(a, b)
    s = np.linspace(0, 1, 400)
    checked = 0
    for k in range(count):
        on_a = _surface(a[k])
        on_seg = segment[k, 0] + s[:, None] * (segment[k, 1] - segment[k, 0])
        for gap, pa, pb, over, other in ((gap_s, pa_s, pb_s, over_s, on_seg), (gap_h, pa_h, pb_h, over_h,
                                                                                 _surface(b[k]))):
            brute = np.sqrt(((on_a[:, None] - other[None]) ** 2).sum(-1).min())
            if over[k]:
                assert gap[k] == 0.0 and brute < 5e-3  # overlapping: some samples meet
                continue
            assert gap[k] <= brute + 1e-9 and brute - gap[k] < 2e-3, (k, gap[k], brute)
            assert np.linalg.norm(pa[k] - pb[k]) == pytest.approx(gap[k], abs=1e-12)
            assert _inside(pa[k], a[k])  # the witness lies on the hull
            checked += 1
    assert checked >= count  # both kinds seen apart, not only overlapping


def test_a_capsules_hull_measures_what_the_capsule_does():
    """A capsule's surface sampled into a hull (radius 0) against another capsule: the hull lies
    inside the capsule, so a little further, by no more than the sampling's sagitta."""
    rng = np.random.default_rng(4)
    count = 40
    p, q, r = rng.normal(size=(count, 3)) * 0.1, rng.normal(size=(count, 3)) * 0.1, 0.02 + 0.03 * rng.random(count)
    p2 = rng.normal(size=(count, 3)) * 0.1 + 0.15
    q2 = p2 + rng.normal(size=(count, 3)) * 0.1
    r2 = 0.01 + 0.02 * rng.random(count)
    sphere = rng.normal(size=(400, 3))
    sphere /= np.linalg.norm(sphere, axis=1, keepdims=True)
    hulls = np.concatenate([p[:, None] + r[:, None, None] * sphere[None, :200],
                            q[:, None] + r[:, None, None] * sphere[None, 200:]], axis=1)
    want = capsule_distance(p, q, r, p2, q2, r2)[0]
    got, _, _, normal, _ = convex_distance(hulls, np.zeros(count), np.stack([p2, q2], axis=1), r2,
                                        lambda rows: np.zeros((len(rows), 1, 3)) + [0.0, 0.0, 1.0])
    apart = want > 0.0
    assert apart.sum() > 10
    assert np.all(got[apart] >= want[apart] - 1e-9) and np.all(got[apart] - want[apart] < 0.2 * r[apart])
    np.testing.assert_allclose(np.linalg.norm(normal, axis=1), 1.0)


def test_overlapping_boxes_report_their_depth_and_the_way_out():
    """Boxes overlapping 12 mm along x (less than along y, z): the depth and the direction that
    parts them; a segment through a box, its depth less both radii."""
    corners = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], float)
    box = ConvexHull(corners)
    faces = box.simplices.copy()
    flip = np.einsum("mi,mi->m", np.cross(corners[faces[:, 1]] - corners[faces[:, 0]],
                                          corners[faces[:, 2]] - corners[faces[:, 0]]), box.equations[:, :3]) < 0
    faces[flip] = faces[flip][:, ::-1]
    a = corners * [0.1, 0.2, 0.2]
    b = corners * [0.1, 0.1, 0.1] + [0.188, 0.05, 0.0]
    axes = np.concatenate([face_normals(a[None], faces[None]), face_normals(b[None], faces[None])], axis=1)
    dist, _, _, normal, _ = convex_distance(a[None], np.zeros(1), b[None], np.zeros(1), lambda rows: axes[rows])
    assert dist[0] == pytest.approx(-0.012)
    np.testing.assert_allclose(normal[0], [-1.0, 0.0, 0.0], atol=1e-12)
    segment = np.array([[[0.05, -0.5, 0.0], [0.05, 0.5, 0.0]]])
    dist, _, _, normal, _ = convex_distance(a[None], np.array([0.003]), segment, np.array([0.01]),
                                         lambda rows: axes[rows, :12])
    assert dist[0] == pytest.approx(-0.05 - 0.013)
    np.testing.assert_allclose(normal[0], [-1.0, 0.0, 0.0], atol=1e-12)


def fresh_g1(monkeypatch, tmp_path, switch: str) -> KinematicTree:
    """The G1 with a trunk proxy switch of core.collision.hulls on (HULL_PROXIES, SMOOTH_TRUNK),
    fitted afresh in a private cache."""
    from core.collision import hulls, pairs, proxies, store
    monkeypatch.setattr(hulls, switch, True)
    monkeypatch.setenv(store.CACHE_ENV, str(tmp_path / "cache"))
    monkeypatch.setattr(proxies, "_MODELS", {})
    monkeypatch.setattr(pairs, "_PAIRS", {})
    return KinematicTree(parse_urdf(G1))


@pytest.fixture
def g1(monkeypatch, tmp_path):
    """The G1 with hull proxies on (core.collision.hulls.HULL_PROXIES), fitted afresh in a private cache."""
    return fresh_g1(monkeypatch, tmp_path, "HULL_PROXIES")


def test_g1_trunk_hulls_hold_every_mesh_vertex_and_are_tighter_than_capsules(g1):
    model = collision_model(g1)
    hulled = np.flatnonzero(model.hull >= 0)
    assert sorted(model.body_names[model.capsule_body[c]] for c in hulled) == ["pelvis", "torso_link"]
    for c in hulled:
        body = model.capsule_body[c]
        mesh = body_mesh(g1, model.body_links[body])
        h = model.hull[c]
        vertices = model.hull_points[h]
        assert len(np.unique(vertices, axis=0)) <= HULL_VERTICES
        gap = core_distance(mesh.points[:, None], np.broadcast_to(vertices, (len(mesh.points),) + vertices.shape))[0]
        assert gap.max() <= model.hull_radius[h] + 1e-9  # the rounded hull holds the mesh
        assert model.hull_radius[h] < 0.006
        # the same as fitting afresh
        again = simplified_hull(mesh.points)
        assert again[2] == pytest.approx(model.hull_radius[h])


def test_g1_hull_distance_never_above_the_brute_force_mesh_distance(g1):
    """Random postures (as tests/core/test_collision.py's capsules): wherever a checked pair with a
    hull comes within 5 cm, it says no more than the meshes' vertex-to-vertex distance, within 2 mm."""
    trunk_never_above_brute_force(g1)


def trunk_never_above_brute_force(g1) -> None:
    """Wherever a checked pair with a trunk proxy (model.hull >= 0) comes within 5 cm in 12 random
    postures, it says no more than the meshes' vertex-to-vertex distance, within 2 mm."""
    from core.collision import collision_pairs
    from core.collision.pairs import pair_distances
    pairs = collision_pairs(g1)
    model = pairs.model
    rng = np.random.default_rng(5)
    q = g1.lower + rng.random((12, g1.dof)) * (g1.upper - g1.lower)
    proxy = pairs.body_distance(pair_distances(g1, pairs, q, None))
    hulled = set(model.capsule_body[model.hull >= 0].tolist())
    checked = 0
    for f in range(len(q)):
        poses = g1.forward(q[f:f + 1])[0]
        for p, (a, b) in enumerate(pairs.bodies):
            if proxy[f, p] > 0.05 or not ({int(a), int(b)} & hulled):
                continue
            wa, wb = (_mesh_world(g1, model, body, poses)[::5] for body in (a, b))
            if not len(wa) or not len(wb):  # a body of spheres (the feet): no mesh to compare with
                continue
            brute = np.sqrt(((wa[:, None] - wb[None]) ** 2).sum(-1).min())
            assert proxy[f, p] <= brute + 2e-3
            checked += 1
    assert checked > 5


def _mesh_world(tree, model, body, poses) -> np.ndarray:
    link = model.body_links[body]
    mesh = body_mesh(tree, link)
    if mesh is None:
        return np.zeros((0, 3))
    return mesh.points @ poses[link, :3, :3].T + poses[link, :3, 3]
