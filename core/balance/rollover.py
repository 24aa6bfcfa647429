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


HEEL_OFF_SHARE = 0.5  # of the double support before a lift-off over which the rear foot rolls onto its toe
ROLLS_RAD = np.array([0.0, 0.1, 0.2, 0.3, 0.4])  # heel-off angles tried, the smallest that stands kept
HEEL_OFF_WAIST = 1.0  # the probe's waist at lift-off: over the front foot (the walk's reaches 0.89 of the way)


def heel_offs(paths: dict, sides: dict[int, str], edges: dict[str, Edge], angles) -> int:
    """Roll each rear foot onto its toe edge over the late part of the double support before its
    lift-off, and start its swing from there: the rear leg reaches the stance it leaves with its
    ankle in range while the waist goes on to the front foot. paths: foot link -> FootPath (changed
    in place); angles(rear side, rear pose, front side, front pose) -> radians per step, batched:
    a list of such steps in, an array of angles out. Returns how many feet rolled."""
    by_side = {side: link for link, side in sides.items()}
    steps = []  # (rear link, sample of lift-off, first sample of the roll, knots)
    for link, path in paths.items():
        other_link = by_side["right" if sides[link] == "left" else "left"]
        other = paths[other_link]
        for knots in path.swings:
            lift = int(np.searchsorted(path.times, knots.times[0], side="right")) - 1
            if lift <= 0 or not other.down[lift]:
                continue
            # the front foot's touch-down: the double support's start (a foot placed because the clip starts with
            # it in the air lands at its first contact: from the clip's start, the rear foot of the cut walk rolled
            # for 0.2 s with its ankle at its limit)
            before = np.flatnonzero(~(other.down & ~other.placed)[:lift])
            start = before[-1] + 1 if len(before) else 0
            first = lift - int(HEEL_OFF_SHARE * (lift - start))
            if first < lift and path.down[first:lift + 1].all():
                steps.append((link, lift, first, knots, other_link))
    if not steps:
        return 0
    rolled = angles([(sides[link], paths[link].poses[lift], sides[other], paths[other].poses[lift])
                     for link, lift, _, _, other in steps])
    count = 0
    for (link, lift, first, knots, _), angle in zip(steps, rolled):
        if angle <= 0.0:
            continue
        path, edge = paths[link], edges[sides[link]]
        flat = path.poses[first].copy()
        s = np.linspace(0.0, 1.0, lift - first + 1)
        path.poses[first:lift + 1] = edge.rolled(np.repeat(flat[None], len(s), axis=0), angle * s * s * (3 - 2 * s))
        start = edge.rolled(flat[None], np.array([angle]))[0]
        raised = start.copy()
        raised[2, 3] += knots.poses[1, 2, 3] - knots.poses[0, 2, 3]  # the straight lift, from the toe
        knots.poses[0], knots.poses[1] = start, raised
        path.refresh([knots])
        count += 1
    return count
