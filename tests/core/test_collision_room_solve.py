"""Room made in the arms' own solve (core.chains.room_solve, off by default): its hinge rows' Jacobian,
what the solve leaves inside, and that a bake with the switch off never runs it."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

import core.chains.room_solve as room_solve
import core.retarget.pipeline as pipeline
from core.collision import collision_pairs
from core.collision.avoid import Separation
from core.model.kinematics import KinematicTree
from core.model.transforms import pose_matrices
from core.model.urdf import parse_urdf
from core.retarget import auto_map, retarget

ROOT = Path(__file__).resolve().parents[2]
G1 = ROOT / "data/robots/g1/unitree_g1_29dof.urdf"
WALK = ROOT / "data/motion/cmu_131_01_walk_m.bvh"
LEFT_ARM = ["left_shoulder_pitch_link", "left_shoulder_roll_link", "left_shoulder_yaw_link", "left_elbow_link"]
LEFT_HAND = ["left_wrist_roll_link", "left_wrist_pitch_link", "left_wrist_yaw_link"]


@pytest.fixture(scope="module")
def g1():
    return KinematicTree(parse_urdf(G1))


@pytest.fixture(scope="module")
def walk():
    from core.motion.bvh import load_bvh

    motion = load_bvh(WALK).to_source_motion()
    return motion.at_frames(np.arange(240))


def _bake(motion, tree, avoid: bool):
    mapping = auto_map(motion, tree)
    mapping.settings = replace(mapping.settings, avoid_self_collision=avoid)
    return retarget(motion, tree, mapping, contacts="auto")


def test_hinge_rows_jacobian_is_the_finite_difference(g1, walk):
    """The rows the solve carries (weight * (aim - distance) of the left arm's and hand's pairs, over the
    arm's joints with the hand held) change as their Jacobian says, on the walk's frames where the arm
    is in the body without avoidance (a wrong sign or joint order would pull the arm further in)."""
    bake = _bake(walk, g1, False)
    q, root = bake.q, pose_matrices(bake.root_rotation, bake.root_position)
    variables = [g1.link_index(name) for name in LEFT_ARM + LEFT_HAND]
    separation = Separation(g1, collision_pairs(g1), 0.01, order=[variables])
    term = separation.term(variables, root).with_still(q)
    hinge = room_solve.Hinge(term, 0.013, slice(0, len(LEFT_ARM)))
    frames = np.arange(len(q))
    res, jac = hinge(q, frames)
    deep = np.flatnonzero((res > 0.002 * term.weight).any(axis=1))  # clear of the hinge's kink
    assert len(deep) > 50
    columns = [g1.qindex[v] for v in variables[:len(LEFT_ARM)]]
    eps = 1e-6
    for k, column in enumerate(columns):
        up, down = q[deep].copy(), q[deep].copy()
        up[:, column] += eps
        down[:, column] -= eps
        numeric = (hinge(up, deep)[0] - hinge(down, deep)[0]) / (2 * eps)
        inside = res[deep] > 0.002 * term.weight
        np.testing.assert_allclose(jac[deep][..., k][inside], numeric[inside], atol=1e-4 * term.weight)


def test_room_made_in_the_solve_leaves_fewer_frames_inside(g1, walk, monkeypatch):
    """With the room made in the arms' solve, a bake with the end-of-bake stage left out collides on
    far fewer frames than the same bake without it (G1 walk's first 240 frames: the stage mends only
    what filtering and planting moved back), and with that stage it collides on none."""
    monkeypatch.setattr(pipeline, "keep_apart", lambda *args: None)
    without = _bake(walk, g1, True).report["self_collision_pct"]
    monkeypatch.setattr(room_solve, "ROOM_IN_SOLVE", True)
    solved = _bake(walk, g1, True).report["self_collision_pct"]
    assert without > 50.0 and solved < 0.3 * without
    monkeypatch.undo()
    monkeypatch.setattr(room_solve, "ROOM_IN_SOLVE", True)
    assert _bake(walk, g1, True).report["self_collision_pct"] == 0.0


def test_bake_with_the_switch_off_does_not_make_room_in_the_solve(g1, walk, monkeypatch):
    """Off by default: an avoiding bake never calls room_in_solve (its answers are session 20's)."""
    def refuse(*args, **kwargs):
        raise AssertionError("room made in the solve with ROOM_IN_SOLVE off")

    assert room_solve.ROOM_IN_SOLVE is False
    monkeypatch.setattr(room_solve, "room_in_solve", refuse)
    assert _bake(walk, g1, True).report["self_collision_pct"] == 0.0
