"""Capsules fitted to a mesh in parts (core.collision.parts): an L-shaped body, whose hull fills
the corner between its arms, gets one set of capsules per arm, holding every point of its
triangles; on every G1 body the chosen capsules fill no more volume than the whole hull's fit
(one of the candidates) or are fewer, and reach no further beyond the hull."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from core.collision.fit import fit_capsules, hull_excess
from core.collision.parts import BodyMesh, capsules_hold, fit_body, union_volumes
from core.collision.proxies import body_mesh
from core.model.kinematics import FIXED, KinematicTree
from core.model.urdf import parse_urdf

G1 = Path(__file__).resolve().parents[2] / "data/robots/g1/unitree_g1_29dof.urdf"
_BOX_FACES = np.array([[0, 1, 3], [0, 3, 2], [4, 6, 7], [4, 7, 5], [0, 4, 5], [0, 5, 1],
                       [2, 3, 7], [2, 7, 6], [0, 2, 6], [0, 6, 4], [1, 5, 7], [1, 7, 3]])


def _box(low, high) -> tuple[np.ndarray, np.ndarray]:
    corners = np.array([[x, y, z] for x in (low[0], high[0]) for y in (low[1], high[1]) for z in (low[2], high[2])])
    return corners, _BOX_FACES.copy()


def _arrays(capsules):
    return np.array([[a, b] for a, b, _ in capsules]), np.array([r for _, _, r in capsules])


def test_an_l_shaped_body_is_covered_arm_by_arm_and_whole():
    (a, fa), (b, fb) = _box([0, 0, 0], [0.3, 0.05, 0.05]), _box([0, 0.05, 0], [0.05, 0.3, 0.05])
    points = np.concatenate([a, b])
    mesh = BodyMesh(points, np.zeros(len(points)), np.concatenate([fa, fb + 8]), np.full(len(points), -1))
    capsules = fit_body(mesh)
    whole = fit_capsules(points, np.zeros(len(points)))
    parts, hull = union_volumes([capsules, whole])
    assert parts < 0.5 * hull  # the hull's fit fills the corner between the arms
    rng = np.random.default_rng(3)
    weights = rng.dirichlet(np.ones(3), size=(len(mesh.triangles), 50))  # points on every triangle
    on_faces = np.einsum("tkc,tci->tki", weights, points[mesh.triangles]).reshape(-1, 3)
    ends, radius = _arrays(capsules)
    inflated = radius + 1e-9
    assert capsules_hold(np.concatenate([on_faces, points]), ends, inflated).any(axis=0).all()


def test_two_pieces_far_apart_are_covered_piece_by_piece():
    """Two small tetrahedra 1 m apart on one link: the hull's fit is long capsules through the air
    between them (its parts' capsules bulge a little further out, averaged over directions, but
    fill a fraction of the volume); the split is taken and still holds every point."""
    corners = np.array([[0.0, 0, 0], [0.05, 0, 0], [0, 0.05, 0], [0, 0, 0.05]])
    faces = np.array([[0, 2, 1], [0, 1, 3], [0, 3, 2], [1, 2, 3]])
    points = np.concatenate([corners, corners + [1.0, 0.0, 0.0]])
    mesh = BodyMesh(points, np.zeros(len(points)), np.concatenate([faces, faces + 4]), np.full(len(points), -1))
    capsules = fit_body(mesh)
    parts, hull = union_volumes([capsules, fit_capsules(points, np.zeros(len(points)))])
    assert parts < 0.5 * hull
    ends, radius = _arrays(capsules)
    assert capsules_hold(points, ends, radius + 1e-9).any(axis=0).all()


def test_a_body_of_solid_shapes_only_keeps_the_hull_fit():
    points = np.array([[0.0, 0, 0], [0.1, 0, 0], [0.2, 0, 0]])
    radii = np.array([0.02, 0.03, 0.02])
    mesh = BodyMesh(points, radii, np.zeros((0, 3), dtype=int), np.zeros(3, dtype=int))
    for (a, b, r), (c, d, s) in zip(fit_body(mesh), fit_capsules(points, radii)):
        assert np.array_equal(a, c) and np.array_equal(b, d) and r == s


def test_on_every_g1_body_the_parts_are_tighter_or_fewer_and_reach_no_further_than_the_hull_fit():
    tree = KinematicTree(parse_urdf(G1))
    split = 0
    for link in range(len(tree.link_names)):
        if link and tree.kind[link] == FIXED:
            continue
        mesh = body_mesh(tree, link)
        if mesh is None:
            continue
        capsules = fit_body(mesh)
        whole = fit_capsules(mesh.points, mesh.radii)
        parts, hull = union_volumes([capsules, whole])
        assert parts <= hull or len(capsules) < len(whole), tree.link_names[link]  # tighter, or fewer capsules
        assert hull_excess(capsules, mesh.points, mesh.radii) <= hull_excess(whole, mesh.points, mesh.radii) + 1e-12
        split += len(capsules) != len(whole) or parts < hull
    assert split >= 4  # the pelvis, the hips' pitch and roll links


def test_a_mesh_of_slivers_only_is_covered_without_failing():
    """Triangles without area (points on one line, as a mesh exported from a wire can have): the
    k-means still weighs them (alike) and the volume grid stays finite; the capsules hold every point."""
    points = np.column_stack([np.linspace(0.0, 0.3, 7), np.zeros(7), np.zeros(7)])
    triangles = np.array([[i, i + 1, i + 2] for i in range(5)])
    mesh = BodyMesh(points, np.zeros(len(points)), triangles, np.full(len(points), -1))
    ends, radius = _arrays(fit_body(mesh))
    assert capsules_hold(points, ends, radius + 1e-9).any(axis=0).all()
    assert (union_volumes([fit_body(mesh)]) >= 0.0).all()
