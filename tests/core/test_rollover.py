"""Heel-off geometry (core.balance.rollover) on the G1's feet, and what it buys the step probe
(core.balance.reach.Probe): the rear foot rolled onto its toe edge lets the G1 stand across a
step it cannot stand across with both soles flat."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from core.balance.foot_path import sole_height
from core.balance.legs import leg_iks
from core.balance.plan import foot_width
from core.balance.reach import Probe
from core.balance.rollover import toe_edge
from core.balance.support import CONTACT_M, foot_bodies, foot_links, support_polygon
from core.feet.geometry import standing_rotation
from core.model.kinematics import KinematicTree
from core.model.urdf import parse_urdf

G1 = Path(__file__).resolve().parents[2] / "data" / "robots" / "g1" / "unitree_g1_29dof.urdf"


@pytest.fixture(scope="module")
def g1():
    tree = KinematicTree(parse_urdf(G1))
    feet = foot_links(tree)
    bodies = dict(zip(feet, foot_bodies(tree, feet)))
    zero = tree.zero_pose()
    standing = {link: standing_rotation(bodies[link], zero[link, :3, :3]) for link in feet}
    return tree, feet, bodies, standing


def _level_pose(body, flat):
    pose = np.eye(4)
    pose[:3, :3] = flat
    pose[2, 3] = sole_height(body, flat)
    return pose


def test_a_foot_rolled_about_its_toe_edge_keeps_its_toes_and_lifts_its_heel(g1):
    tree, feet, bodies, standing = g1
    body, flat = bodies[feet[0]], standing[feet[0]]
    edge = toe_edge(body, flat, np.array([1.0, 0.0]))  # the G1 faces +x as built
    level = _level_pose(body, flat)[None]
    before = body.world(level)[0]
    after = body.world(edge.rolled(level, np.array([0.3])))[0]
    toes = before[:, 0] > before[:, 0].max() - 1e-6
    assert toes.sum() == 2  # the G1's sole: two toe and two heel spheres
    assert np.abs(after[toes] - before[toes]).max() < 1e-9  # the toe edge does not move
    length = np.ptp(before[:, 0])
    assert after[~toes, 2] - before[~toes, 2] == pytest.approx(np.full((~toes).sum(), length * np.sin(0.3)), abs=1e-6)
    # on the ground: only the toe edge, a line across the foot
    polygon = support_polygon(after, radius=body.radius)
    assert len(polygon) == 2 and np.ptp(polygon[:, 1]) == pytest.approx(np.ptp(before[toes, 1]))
    assert (after[~toes, 2] - body.radius[~toes]).min() > CONTACT_M


def test_heel_off_lets_the_g1_stand_across_a_step_it_cannot_stand_across_flat(g1):
    tree, feet, bodies, standing = g1
    sides = {feet[0]: "left", feet[1]: "right"} if "left" in tree.link_names[feet[0]] else \
        {feet[0]: "right", feet[1]: "left"}
    legs = {sides[leg.foot]: leg for leg in leg_iks(tree, feet, standing)}
    flats = {sides[link]: standing[link] for link in feet}
    heights = {sides[link]: sole_height(bodies[link], standing[link]) for link in feet}
    probe = Probe.build(tree, legs, np.zeros(tree.dof), 0.69, 0.97, heights,
                        min(foot_width(bodies[link], standing[link]) for link in feet), flats)
    left = next(link for link, side in sides.items() if side == "left")
    edge = toe_edge(bodies[left], flats["left"], probe.forward)
    step = (0.5 * probe.forward - probe.natural * probe.left)[None]  # the right foot 0.5 m ahead
    late = np.array([0.85])  # the waist late in double support, near the front foot
    assert not probe.trial(step, late)[0]
    assert probe.trial(step, late, {"left": (edge, np.array([0.4]))})[0]
    assert probe.trial(step, np.array([0.5]))[0]  # midway both flat stand


def test_a_stance_rolling_onto_its_toe_does_not_slide_but_a_sliding_one_does(g1):
    """The stance slide counts a point while it touches the ground: a heel-off (the heel up 5 cm,
    the toe edge still) slides only by the heel's first few millimetres up (under 0.1 mm); the
    same foot pushed 3 mm forward as it rolls slides 3 mm."""
    from core.balance.gait_report import stance_slide

    tree, feet, bodies, standing = g1
    body, flat = bodies[feet[0]], standing[feet[0]]
    edge = toe_edge(body, flat, np.array([1.0, 0.0]))
    level = np.repeat(_level_pose(body, flat)[None], 40, axis=0)
    angle = np.r_[np.zeros(20), np.linspace(0.0, 0.3, 20)]  # flat, then rolling
    rolled = edge.rolled(level, angle)
    points = body.world(rolled)
    assert (points[-1, :, 2] - body.radius).max() > 0.04  # the heel well up
    assert stance_slide(points, body.radius) < 1e-4
    pushed = rolled.copy()
    pushed[20:, 0, 3] += np.linspace(0.0, 0.003, 20)
    assert stance_slide(body.world(pushed), body.radius) == pytest.approx(0.003, abs=1e-4)
