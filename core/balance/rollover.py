"""Heel-off: in late double support a walking robot's rear foot rolls onto its toe edge, so the
rear leg reaches further forward with its ankle in range while the front foot takes the weight.

A foot rolls about a line across its sole: the line through the foot's forward-most points (its
toe edge), across the foot. Rolling by a positive angle lifts the heel; the toe edge stays where
it stands, so the foot still holds its place on the ground (core.balance.support takes the hull
of the geometry within 5 mm of the ground, which is then the toe edge).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..feet.geometry import BodyPoints
from ..model.transforms import axis_angle_to_matrix

EDGE_M = 0.002  # points this close to the forward-most one are on the toe edge


@dataclass
class Edge:
    """A line the foot rolls about, in the foot link's frame (metres): a point on it and its
    direction (across the foot, to its left: rolling by a positive angle lifts the heel)."""

    point: np.ndarray  # (3,)
    axis: np.ndarray  # (3,) unit

    def rolled(self, pose: np.ndarray, angle: np.ndarray | float) -> np.ndarray:
        """Foot link poses (..., 4, 4) rolled about the edge by angle (...,) radians."""
        angle = np.asarray(angle, dtype=float)
        turn = np.broadcast_to(axis_angle_to_matrix(self.axis, angle.ravel()).reshape(angle.shape + (3, 3)),
                               pose.shape[:-2] + (3, 3))
        local = np.broadcast_to(np.eye(4), pose.shape).copy()
        local[..., :3, :3] = turn
        local[..., :3, 3] = self.point - turn @ self.point
        return pose @ local


def toe_edge(body: BodyPoints, flat: np.ndarray, forward: np.ndarray) -> Edge:
    """The foot's toe edge: the line through its forward-most points, across the foot. flat: the
    foot's rotation standing level (3, 3); forward: the robot's forward on the ground (2,) in
    the pose `flat` was read in."""
    ahead = flat.T @ np.array([forward[0], forward[1], 0.0])  # the robot's forward in the foot's frame
    left = flat.T @ np.array([-forward[1], forward[0], 0.0])
    reach = body.points @ ahead
    front = body.points[reach >= reach.max() - EDGE_M]
    return Edge(front.mean(axis=0), left / np.linalg.norm(left))
