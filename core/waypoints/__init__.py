"""Orientations at position-only waypoints of an end effector: interpolated, tangent, bisector
(orientations) and the mechanism's optimum by IK over candidate orientations (mechanism).

`core.waypoints.waypoint_orientations(...)` is the entry point. May import: core.model.
"""
from .orientations import waypoint_orientations

__all__ = ["waypoint_orientations"]
