"""Retarget a clip onto a robot: auto-map (automap), canonical body frames (body_frame) and the
pipeline (pipeline: plan, chain solve, filter, rate limit, planted feet, grounding, report).

`core.retarget.retarget(motion, tree, mapping, ...)` is the entry point.
May import: core.model, core.motion, core.chains, core.feet, core.collision (self-collision figures and avoidance).
"""
from .automap import AutoMapError, auto_map
from .pipeline import RetargetError, RetargetResult, retarget

__all__ = ["AutoMapError", "RetargetError", "RetargetResult", "auto_map", "retarget"]
