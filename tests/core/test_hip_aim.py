"""core.balance.hip_aim: the H1's hip yaw and roll aiming its planar legs' axis in closed form give
what the Gauss-Newton head solve they replace converges to (core.balance.planar_leg.PlanarLeg)."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
from scipy.spatial.transform import Rotation

from core.balance.hip_aim import HeadAim
from core.balance.leg_chain import Link, frames_last, joint_frames
from core.balance.legs import leg_iks
from core.balance.planar_leg import planar_legs
from core.balance.support import foot_links
from core.model.kinematics import KinematicTree
from core.model.transforms import pose_matrices
from core.model.urdf import parse_urdf
from tests.core.test_gait import ROBOTS


def _h1_planar():
    tree = KinematicTree(parse_urdf(ROBOTS["h1"]))
    return tree, planar_legs(tree, leg_iks(tree, foot_links(tree)))


def _poses(rng, count: int, spread: float):
    """Waist and foot poses around the H1 standing: turned up to `spread` rad about each axis."""
    waist = pose_matrices(Rotation.from_rotvec(rng.uniform(-spread, spread, (count, 3))).as_matrix(),
                          np.column_stack([np.zeros((count, 2)), np.full(count, 1.0)]))
    foot = pose_matrices(Rotation.from_rotvec(rng.uniform(-spread, spread, (count, 3))).as_matrix(),
                         rng.uniform(-0.2, 0.2, (count, 3)))
    return waist, foot


def test_the_closed_form_meets_the_gauss_newton_head():
    tree, legs = _h1_planar()
    rng = np.random.default_rng(3)
    waist, foot = _poses(rng, 400, 0.35)
    for leg in legs:
        assert leg.aim is not None  # the H1's head: hip yaw and roll
        start = rng.uniform(-0.1, 0.1, (400, 2))
        miss, head = leg.plane_miss(waist, foot, start)
        gn_miss, gn_head = replace(leg, aim=None).plane_miss(waist, foot, start)
        assert np.abs(head - gn_head).max() < 1e-12
        assert np.abs(miss - gn_miss).max() < 1e-12
        # the tail's axis is the foot's: the hip pitch axis along the foot's
        axes = _tail_axis(leg, waist, head)
        assert np.abs(np.einsum("fi,fi->f", axes, foot[:, :3, :3] @ leg.axis_foot) - 1.0).max() < 1e-12


def test_of_the_two_solutions_the_one_near_the_start():
    """The yaw half a turn round with the roll mirrored aims the axis as well: the solve keeps to
    the joints it starts from, as the Gauss-Newton steps did."""
    tree, legs = _h1_planar()
    rng = np.random.default_rng(5)
    waist, foot = _poses(rng, 50, 0.2)
    leg = legs[0]
    near = leg.aim.solve(waist[:, :3, :3], foot[:, :3, :3] @ leg.axis_foot, np.zeros((50, 2)))
    far = leg.aim.solve(waist[:, :3, :3], foot[:, :3, :3] @ leg.axis_foot, near + [np.pi, 0.0])
    assert np.abs(near).max() < 1.0
    assert np.abs(np.abs(far[:, 0] - near[:, 0]) - np.pi).max() < 1e-9


def test_principal_axes_pick_the_targets_parts_to_the_bit():
    """The H1's hip axes are principal: the target's products with them are its own entries (HeadAim._picks),
    summed from the waist's columns (given frames last or not), with the bits of the matrix products they stand for."""
    tree, legs = _h1_planar()
    rng = np.random.default_rng(24)
    waist, foot = _poses(rng, 600, 0.4)
    for leg in legs:
        assert leg.aim._picks is not None
        general = replace(leg.aim)
        general._picks = None
        target = foot[:, :3, :3] @ leg.axis_foot
        start = rng.uniform(-0.3, 0.3, (600, 2)) + rng.choice([0.0, np.pi], (600, 1))
        want = general.solve(waist[:, :3, :3], target, start)
        for frame in (None, frames_last(waist)):
            got = leg.aim.solve(waist[:, :3, :3], target, start, frame)
            assert np.array_equal(got, want) and np.array_equal(np.signbit(got), np.signbit(want))
    turned = HeadAim(np.eye(3)[[1, 0, 2]], *[np.eye(3)[k] for k in (2, 0, 1)], np.ones(2), np.zeros(2))
    assert turned._picks is None  # a turn above the first joint: the general products


def _tail_axis(leg, waist, head):
    """The tail's first joint axis in the world (F, 3), the head at `head`."""
    axes, _ = joint_frames(leg.head, np.column_stack([head, np.zeros(len(head))]), waist)
    return axes[:, -1]


def test_heads_of_other_shapes_keep_gauss_newton():
    """Two parallel joints above the tail, or three, have no such closed form: HeadAim.build says None
    (PlanarLeg.plane_miss then walks Gauss-Newton, as before)."""
    z, y = np.array([0.0, 0.0, 1.0]), np.array([0.0, 1.0, 0.0])
    link = lambda axis, k: Link(np.array([0.0, 0.0, -0.1]), None, axis, k)  # noqa: E731
    assert HeadAim.build([link(z, 2), link(np.array([1.0, 0.0, 0.0]), 0), link(y, 1)]) is not None
    assert HeadAim.build([link(z, 2), link(z, 2), link(y, 1)]) is None
    assert HeadAim.build([link(z, 2), link(np.array([1.0, 0.0, 0.0]), 0), link(z, 2), link(y, 1)]) is None
