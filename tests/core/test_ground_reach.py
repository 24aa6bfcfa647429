"""Which bodies the ground check looks at (core.feet.geometry.ground_candidates): a body's reach
from its link's origin decides, and the cheap bound that spares reading most meshes' hulls
(Bodies.reach_bound, from the boxes around the meshes) must decide as the exact reach does."""
from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from core.feet.geometry import NEAR_M, Bodies, _hull, ground_candidates, lowest_points, rigid_links
from core.model.kinematics import FIXED, KinematicTree
from core.model.urdf import parse_urdf

ROOT = Path(__file__).resolve().parents[2]
G1 = ROOT / "data" / "robots" / "g1" / "unitree_g1_29dof.urdf"
ROBOTS = [G1, ROOT / "tests/data/robots/unitree_h1_19dof.urdf", ROOT / "tests/data/robots/simple_humanoid.urdf"]


def _standing(tree: KinematicTree, frames: int = 40) -> tuple[np.ndarray, np.ndarray]:
    """Joints (F, n) spread over their limits (seeded) and the root (F, 4, 4) that stands the zero
    pose on the ground: a clip's worth of varied poses without baking one."""
    rng = np.random.default_rng(7)
    lower, upper = tree.lower, tree.upper
    q = rng.uniform(np.maximum(lower, -1.0), np.minimum(upper, 1.0), (frames, tree.dof))
    q[0] = 0.0
    root = np.tile(np.eye(4), (frames, 1, 1))
    root[:, 2, 3] = -lowest_points(tree, np.zeros((1, tree.dof)), np.eye(4)[None], skip=set(), near_m=np.inf)[0]
    return q, root


def _exact_candidates(tree: KinematicTree, q: np.ndarray, root: np.ndarray, reach_m: float = 0.6) -> list[int]:
    """ground_candidates' rule with every body's exact reach, read from its points here."""
    low = tree.forward(q, root)[:, :, 2, 3].min(axis=0)
    bodies = Bodies(tree)
    return [i for i in range(len(low)) if low[i] <= reach_m or (
        (i == 0 or tree.kind[i] != FIXED) and low[i] <= bodies.reach(i) + reach_m - NEAR_M)]


@pytest.mark.parametrize("urdf", ROBOTS, ids=lambda p: p.stem)
def test_the_bound_is_never_under_the_reach_and_picks_the_same_bodies(urdf):
    tree = KinematicTree(parse_urdf(urdf))
    bounds = [Bodies(tree).reach_bound(i) for i in range(len(tree.link_names))]  # before any hull is read
    fresh = KinematicTree(parse_urdf(urdf))
    reach = [Bodies(fresh).reach(i) for i in range(len(fresh.link_names))]
    assert all(b >= r for b, r in zip(bounds, reach))
    q, root = _standing(tree)
    picked = ground_candidates(tree, q, root)
    assert picked == _exact_candidates(fresh, q, root)
    assert 0 < len(picked) < len(tree.link_names)


def test_a_mesh_hung_far_under_a_high_link_is_looked_at_and_high_meshes_are_not_hulled():
    """A mesh hung 0.85 m under the G1's torso (its own shape, moved down) is a candidate, as its
    exact reach says; the bodies that stay high are ruled out without their hulls."""
    tree = KinematicTree(parse_urdf(G1))
    torso = tree.robot.links["torso_link"]
    mesh = next(g for g in torso.collisions if g.kind == "mesh")
    hung = np.array(mesh.origin, float)
    hung[2, 3] -= 0.85
    robot = dataclasses.replace(tree.robot, links={**tree.robot.links, "torso_link": dataclasses.replace(
        torso, collisions=list(torso.collisions) + [dataclasses.replace(mesh, origin=hung)])})
    hanging = KinematicTree(robot)
    q, root = _standing(tree)
    q[:] = 0.0  # the G1 standing in its zero pose: the torso's origin 0.84 m up
    index = hanging.link_index("torso_link")
    _hull.cache_clear()
    assert index in ground_candidates(hanging, q, root)
    files = {g.filename for i in rigid_links(hanging, index)
             for g in hanging.robot.links[hanging.link_names[i]].collisions if g.kind == "mesh"}
    assert _hull.cache_info().currsize == len(files) == 3  # the torso's body (head, logo) could reach: hulled
    assert index not in ground_candidates(tree, q, root)
    assert index in _exact_candidates(hanging, q, root) and index not in _exact_candidates(tree, q, root)
    _hull.cache_clear()
    ground_candidates(KinematicTree(parse_urdf(G1)), q, root)
    assert _hull.cache_info().currsize == 0  # standing, no body but the legs' (candidates by height) reaches down


def test_feet_floating_over_another_body_on_the_ground_name_that_body():
    """simple_humanoid carries a 1 m collision disc on BODY: planting keeps it above the ground, so
    in the hop the feet float on many contact frames (46 %; 75 % before session 22's root sign mend, when a
    floating foot raised the root). The warning said only that the feet float;
    it now names the body that comes lower than them there. Without the disc the feet plant and
    no body is named."""
    from core.motion.bvh import load_bvh
    from core.retarget import auto_map, retarget

    hop = load_bvh(ROOT / "tests/data/motion/cmu_131_03_hop.bvh").to_source_motion()
    simple = parse_urdf(ROOT / "tests/data/robots/simple_humanoid.urdf")
    body = simple.links["BODY"]
    bare = dataclasses.replace(simple, links={**simple.links, "BODY": dataclasses.replace(
        body, collisions=[g for g in body.collisions if g.kind != "cylinder"])})
    said = {}
    for name, robot in (("disc", simple), ("bare", bare)):
        tree = KinematicTree(robot)
        result = retarget(hop, tree, auto_map(hop, tree), contacts="auto")
        said[name] = (result.report["contact_preserved_pct"],
                      [w for w in result.report["warnings"] if w.startswith("planted feet are on the ground")])
    kept, warned = said["disc"]
    assert len(warned) == 1 and "('BODY' on" in warned[0], said
    kept, warned = said["bare"]
    assert kept > said["disc"][0] + 15.0 and not any("BODY" in w for w in warned), said  # 90 against 54 %
