"""The collision fit's shortcut: the smallest circle around a slab seen along an axis is searched
only among the rows that can be on the slab's outline (crossings of a cut seen edge on only at
its line's ends, ...). From any centre, the farthest of those rows must be as far as the farthest
of all rows: on every G1 body (flat, coplanar and rounded parts) and on random hulls."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from core.collision import fit
from core.collision.proxies import body_geometry
from core.model.kinematics import FIXED, KinematicTree
from core.model.urdf import parse_urdf

G1 = Path(__file__).resolve().parents[2] / "data/robots/g1/unitree_g1_29dof.urdf"


def _farthest_both_ways(points, radii, rng, centres=20):
    """The farthest distance from centres in each slab's box, among the outline rows and among all
    rows, for every slab and axis; and the share of rows searched."""
    points, radii, edges, facets = fit._hull_piece(points, radii)
    axes = fit._principal_axes(points)
    configs = [(k, count) for k in range(3) for count in range(1 if k == 0 else 2, fit.MAX_CAPSULES + 1)]
    slabs = fit._slabs(points, radii, edges, axes, configs)
    rim = fit._rim(slabs, slabs.points @ axes.T, fit._Outline.of(len(points), len(edges), facets, axes))
    found, every = [], []
    for axis, on_rim in zip(axes, rim):
        flat = slabs.points @ np.linalg.svd(axis[None])[2][1:].T  # (M, 2) seen along the axis
        low, high = np.minimum.reduceat(flat, slabs.starts), np.maximum.reduceat(flat, slabs.starts)
        for share in rng.random((centres, 2)):
            centre = low + share * (high - low)
            reach = np.linalg.norm(flat - centre[slabs.owner], axis=1) + slabs.radii
            every.append(np.maximum.reduceat(reach, slabs.starts))
            found.append(np.maximum.reduceat(np.where(on_rim, reach, -np.inf), slabs.starts))
    return np.array(found), np.array(every), rim.mean()


def test_outline_rows_hold_the_farthest_point_on_every_g1_body():
    tree = KinematicTree(parse_urdf(G1))
    rng = np.random.default_rng(0)
    shortcuts = 0
    for link in range(len(tree.link_names)):
        if link and tree.kind[link] == FIXED:
            continue
        points, radii, _ = body_geometry(tree, link)
        if points is None:
            continue
        found, every, searched = _farthest_both_ways(points, radii, rng)
        np.testing.assert_allclose(found, every, rtol=0, atol=1e-15, err_msg=tree.link_names[link])
        shortcuts += len(points) > 100 and searched < 0.4  # most rows left out of the search
    assert shortcuts >= 20


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_outline_rows_hold_the_farthest_point_on_random_hulls(seed):
    rng = np.random.default_rng(seed)
    cloud = rng.normal(size=(400, 3)) * [0.2, 0.06, 0.03] @ np.linalg.qr(rng.normal(size=(3, 3)))[0]
    found, every, _ = _farthest_both_ways(cloud, np.zeros(len(cloud)), rng)
    np.testing.assert_allclose(found, every, rtol=0, atol=1e-15)
    balls = rng.normal(size=(30, 3)) * [0.1, 0.05, 0.05]  # spheres: no facets, every row searched
    found, every, searched = _farthest_both_ways(balls, rng.random(30) * 0.02, rng)
    np.testing.assert_allclose(found, every, rtol=0, atol=1e-15)
    assert searched == 1.0


def test_a_body_whose_spreads_tie_gets_the_same_capsules_from_a_urdf_written_again(tmp_path):
    """The G1's shoulder is a cylinder across the arm: its spread is the same in every direction
    across the cylinder, and SVD left the axes there to rounding. The same URDF written again to
    12 digits (rpy 1.5707963267949) got another capsule (radius 40.37 against 40.45 mm), the left
    and right shoulders different ones, and the hop baked with avoidance turned a wrist 0.29 rad
    differently on 44 frames. Now both read the link frame's axes in the tied plane."""
    from tests.robot_variants import write_urdf

    robot = parse_urdf(G1)
    trees = [KinematicTree(robot), KinematicTree(parse_urdf(write_urdf(robot, tmp_path / "again.urdf")))]
    fitted = []
    for tree in trees:
        bodies = {}
        for side in ("left", "right"):
            points, radii, _ = body_geometry(tree, tree.link_index(f"{side}_shoulder_pitch_link"))
            bodies[side] = fit.fit_capsules(points, radii)
        fitted.append(bodies)
    for side in ("left", "right"):
        (a0, b0, r0), = fitted[0][side]
        (a1, b1, r1), = fitted[1][side]
        assert abs(r0 - r1) < 1e-9 and np.abs(a0 - a1).max() < 1e-9 and np.abs(b0 - b1).max() < 1e-9
    mirror = np.array([1.0, -1.0, 1.0])  # the shoulders mirror each other about the body's middle
    left, right = fitted[0]["left"][0], fitted[0]["right"][0]
    assert abs(left[2] - right[2]) < 1e-6
    assert np.abs(np.diff(left[:2], axis=0) - np.diff(right[:2], axis=0) * mirror).max() < 1e-6


def _world_capsules(tree: KinematicTree) -> dict[str, list]:
    """Each body's fitted capsules (ends, radius) placed in the zero pose, by body name."""
    from core.collision.proxies import fit_model

    model, zero = fit_model(tree), tree.zero_pose()
    out: dict[str, list] = {}
    for row, body in enumerate(model.capsule_body):
        pose = zero[model.body_links[body]]
        a, b = (pose[:3, :3] @ end + pose[:3, 3] for end in model.ends[row])
        out.setdefault(model.body_names[body], []).append((a, b, float(model.radius[row])))
    return out


def _worst_gap(caps: list, other: list) -> float:
    """Over `caps`, the worst of the least end-or-radius gap (m) to a capsule of `other`, either end first."""
    if len(caps) != len(other):
        return np.inf
    return max(min(max(min(max(np.linalg.norm(a - c), np.linalg.norm(b - d)),
                           max(np.linalg.norm(a - d), np.linalg.norm(b - c))), abs(r - s)) for c, d, s in other)
               for a, b, r in caps)


@pytest.fixture(scope="module")
def g1_capsules():
    return _world_capsules(KinematicTree(parse_urdf(G1)))


@pytest.mark.parametrize("variant", ["frames turned", "fixed links merged"])
def test_the_g1_described_otherwise_fits_the_same_capsules(variant, g1_capsules, tmp_path):
    """The G1 with every link frame but the root's turned at random (and its links listed in another
    order), or with its fixed links merged into their parents, written to a URDF: every body gets
    the G1's capsules in the world. Before, the fit read the link frame (the directions its excess
    is averaged over, the grid its volumes are counted on: 29 of 30 bodies up to 1 cm apart), and a
    merged link with collisions dropped its visual-only parts (the rubber hands, the pelvis shell)."""
    from scipy.spatial.transform import Rotation

    from tests import robot_variants as RV

    robot = parse_urdf(G1)
    if variant == "frames turned":
        rng = np.random.default_rng(13)
        turns = {n: Rotation.from_rotvec(rng.normal(size=3)).as_matrix() for n in robot.links if n != robot.root_link}
        other = RV.reordered(RV.frames_turned(robot, turns), seed=13)
    else:
        other = RV.fixed_merged(robot)
    fitted = _world_capsules(KinematicTree(parse_urdf(RV.write_urdf(other, tmp_path / "other.urdf"))))
    assert set(fitted) == set(g1_capsules)
    gaps = {name: _worst_gap(g1_capsules[name], fitted[name]) for name in g1_capsules}
    assert max(gaps.values()) < 1e-6, {n: g for n, g in gaps.items() if g >= 1e-6}


def test_a_detailed_visual_beside_a_simple_collision_shape_is_not_a_shape_of_its_own():
    """The G1's shoulders are drawn by a detailed mesh and collided as a cylinder (its visual reaches
    31-71 mm beyond the cylinder): the collision shape alone is the body's; a link whose collisions
    repeat one of its visual meshes reads its other visuals too (a merged hand, see above)."""
    from core.collision.proxies import link_shapes

    def same(shapes, expected):  # the very shapes (a Geometry's arrays have no == of one truth)
        return len(shapes) == len(expected) and all(a is b for a, b in zip(shapes, expected))

    robot = parse_urdf(G1)
    shoulder = robot.links["left_shoulder_roll_link"]
    assert shoulder.visuals and [g.kind for g in shoulder.collisions] == ["cylinder"]
    assert same(link_shapes(shoulder), shoulder.collisions)
    contour = robot.links["pelvis_contour_link"]  # drawn and collided by one mesh: nothing more
    assert same(link_shapes(contour), contour.collisions)
    hand = robot.links["left_rubber_hand"]  # no collision shape: its visual
    assert not hand.collisions and same(link_shapes(hand), hand.visuals)
