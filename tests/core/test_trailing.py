"""A standing foot of a five-joint leg (the H1's: no ankle roll) that its leg cannot meet: it rolls
about its sole's centre, no point of its sole moving across the ground (core.balance.sagittal.
standing_legs), and a trailing (leading) foot rolls onto its toe (heel) edge as late (as early) as
covers what each cycle needs (core.balance.trailing.heel_rise). The walk's figures with both are in
tests/core/test_gait.py (the H1's slide under 1 mm)."""
from __future__ import annotations

import numpy as np
import pytest

from core.balance.legs import leg_iks, solve_legs
from core.balance.planar_leg import standing_legs
from core.balance.support import CONTACT_M, foot_bodies, foot_links, foot_width, level_tolerance
from core.balance.trailing import heel_rise
from core.feet.geometry import standing_rotation
from core.model.kinematics import KinematicTree
from core.model.transforms import pose_matrices
from core.model.urdf import parse_urdf
from tests.core.test_gait import ROBOTS

ACROSS_M = np.array([0.005, 0.01, 0.015])  # the waist moved sideways: each hip this far off its foot's plane


def _sole_travel(tree, legs, feet, bodies, root, goals):
    """Per foot the furthest (F,) a point of its sole moves across the ground from its goal, metres,
    and its sole's tilt (F,) radians, the legs solved under root (F, 4, 4)."""
    q0 = np.zeros((len(root), tree.dof))
    q, _ = solve_legs(tree, legs, q0, root, goals, q0, {f: np.zeros(len(root)) for f in feet}, period_s=None)
    travel, tilt = [], []
    for foot, body in zip(feet, bodies):
        pose = tree.link_transform(q, foot, root)
        reached, wanted = body.world(pose), body.world(goals[foot])
        bottom = wanted[0, :, 2] - body.radius
        sole = bottom <= bottom.min() + CONTACT_M
        travel.append(np.linalg.norm(reached[:, sole, :2] - wanted[:, sole, :2], axis=-1).max(axis=1))
        up = np.einsum("fij,fj->fi", pose[:, :3, :3], goals[foot][:, 2, :3])
        tilt.append(np.arccos(np.clip(up[:, 2], -1.0, 1.0)))
    return travel, tilt


def test_a_standing_foot_its_leg_cannot_meet_rolls_about_its_sole():
    """The H1 standing, its waist 6 cm low and moved 5-15 mm sideways: each hip is off its foot's
    fore-aft plane, where a leg without an ankle roll cannot keep its sole flat, in place and on its
    heading at once. Solved as the plan's legs (the place at the ankle, the heading given up first)
    the feet turn and their soles slide 5-19 mm; as the rolled waist's legs they roll about the
    sole's centre by under a degree and no point of the soles moves 0.05 mm."""
    tree = KinematicTree(parse_urdf(ROBOTS["h1"]))
    feet = foot_links(tree)
    bodies = foot_bodies(tree, feet)
    zero = tree.zero_pose()
    legs = leg_iks(tree, feet, {f: standing_rotation(b, zero[f, :3, :3]) for f, b in zip(feet, bodies)})
    root = pose_matrices(np.repeat(np.eye(3)[None], len(ACROSS_M), axis=0),
                         np.column_stack([0.0 * ACROSS_M, ACROSS_M, np.full(len(ACROSS_M), zero[0, 2, 3] - 0.06)]))
    goals = {f: np.repeat(zero[f][None], len(ACROSS_M), axis=0) for f in feet}
    plain, _ = _sole_travel(tree, legs, feet, bodies, root, goals)
    rolled, tilt = _sole_travel(tree, standing_legs(tree, legs), feet, bodies, root, goals)
    width = min(foot_width(b, standing_rotation(b, zero[b.link, :3, :3])) for b in bodies)
    for before, after, tilted in zip(plain, rolled, tilt):
        assert (before > 0.004).all()
        assert (after < 5e-5).all()
        assert (tilted < np.radians(1.5)).all() and (tilted < level_tolerance(width)).all()
        assert (np.diff(tilted) > 0).all()  # it rolls further the further the hip is off its plane


@pytest.mark.parametrize("need", [np.r_[0.0, 0.0, 0.0, 0.02, 0.02, 0.07, 0.04, 0.1],
                                  np.r_[0.0, 0.0, 0.01, 0.01, 0.0, 0.03, 0.02, 0.05],
                                  np.r_[0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.04]])
def test_the_heel_rises_smoothly_and_as_late_as_covers_every_cycles_need(need):
    rise = heel_rise(need)
    assert rise[-1] == pytest.approx(need.max())
    assert (np.diff(rise) >= -1e-12).all()
    assert (rise >= need - 1e-9).all()
    first, count = int(np.flatnonzero(rise)[0]), len(need)
    assert first <= int(np.flatnonzero(need)[0])
    if first < int(np.flatnonzero(need)[0]):  # it started before the first need: a cycle later misses one
        s = np.clip((np.arange(count) - first) / (count - first - 1), 0.0, 1.0)
        assert (need.max() * s * s * (3.0 - 2.0 * s) < need - 1e-9).any()
