"""Splicing clips: preparatory/main periods of a clip (detect), one frame rate for all (resample),
the settings an animator chooses (settings), which posture pair joins two clips (pairs), the
generated transition (transition), and the join with its root motion (join).

`core.splice.splice(clips, ...)` is the entry point. May import: core.model, core.motion.
"""
from .detect import Clip, DetectSettings, SpliceError
from .join import SpliceResult, SpliceSettings, splice

__all__ = ["Clip", "DetectSettings", "SpliceError", "SpliceResult", "SpliceSettings", "splice"]
