"""A swing's poses through its knots (core.balance.foot_path.SwingKnots): the spline pieces a swing keeps from
its last call are taken only where their inputs are those to the bit, so a moved knot gives what a fresh swing
gives."""
from __future__ import annotations

import numpy as np
from scipy.spatial.transform import Rotation

from core.balance.foot_path import SwingKnots


def _swing() -> SwingKnots:
    """Lift-off, lift, two of the person's points, lowering, touch-down: the foot rising, turning and landing."""
    times = np.array([0.0, 0.06, 0.2, 0.3, 0.44, 0.5])
    poses = np.tile(np.eye(4), (len(times), 1, 1))
    poses[:, :3, 3] = [[0.0, 0.1, 0.05], [0.0, 0.1, 0.065], [0.15, 0.1, 0.12], [0.3, 0.11, 0.1],
                       [0.4, 0.1, 0.065], [0.4, 0.1, 0.05]]
    poses[:, :3, :3] = Rotation.from_euler("z", [0.0, 0.0, 0.1, 0.2, 0.25, 0.25]).as_matrix()
    return SwingKnots(times, poses, ["lift_off", "preparatory", "peak", "peak", "preparatory", "touch_down"])


def test_a_moved_point_gives_what_a_fresh_swing_gives():
    times = np.linspace(0.005, 0.495, 99)
    swing = _swing()
    first = swing.interpolated(times).copy()
    swing.poses[2, :3, 3] += [0.02, -0.01, 0.03]  # a person's point moves; the lift and lowering stay
    swing.poses[3, :3, :3] = Rotation.from_euler("z", 0.3).as_matrix()
    again = swing.interpolated(times)
    fresh = _swing()
    fresh.poses[:] = swing.poses
    assert again.tobytes() == fresh.interpolated(times).tobytes()
    lift = times <= 0.06
    assert np.array_equal(again[lift], first[lift]) and not np.array_equal(again, first)
    swing.poses[0, :3, 3] += 0.01  # the lift-off moves: every piece's values (and the turn's start) with it
    assert swing.interpolated(times).tobytes() == _interpolated_fresh(swing, times).tobytes()


def _interpolated_fresh(swing: SwingKnots, times: np.ndarray) -> np.ndarray:
    return SwingKnots(swing.times.copy(), swing.poses.copy(), list(swing.kinds)).interpolated(times)
