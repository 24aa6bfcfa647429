"""Orientations at position-only waypoints of an end effector and the joint trajectory that follows them:
the pieces (orientations), the curve through the keys (curves), the mechanism's measures and IK
(mechanism), its optimum picked continuously along the path (path_optimum) or precomputed on a grid
(table), the modes put together (optimum) and the path as a joint trajectory (trajectory).

`core.waypoints.waypoint_orientations(...)` is the entry point. May import: core.model, core.motion (its file helpers).
"""
from .optimum import waypoint_orientations

__all__ = ["waypoint_orientations"]
