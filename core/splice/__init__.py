"""Splicing clips: preparatory/main periods of a clip (detect) and the join at the best-matching
posture pair with a generated transition (join).

`core.splice.splice(clips, ...)` is the entry point. May import: core.model, core.motion.
"""
from .detect import Clip, DetectSettings, SpliceError
from .join import SpliceResult, SpliceSettings, splice

__all__ = ["Clip", "DetectSettings", "SpliceError", "SpliceResult", "SpliceSettings", "splice"]
