"""Robot playback at the control cycle: resampling and limit checks (sampling), retime of the
too-fast stretches (retime), the six file formats' writers (formats), their readers (readers) and
what both share (layout, mujoco), and export settings with the resample-check-retime sequence (prepare).

Inside: sampling <- retime; sampling <- layout <- readers <- formats <- prepare. May import: core.model, core.motion.
"""
from .formats import FORMATS, PlaybackMeta, read_playback, write_playback
from .prepare import ExportSettings, PlaybackResult, prepare_playback, require_within_limits
from .sampling import JointLimits, LimitViolation, PlaybackError, PlaybackTrack, violation_summary

__all__ = ["FORMATS", "ExportSettings", "JointLimits", "LimitViolation", "PlaybackError", "PlaybackMeta",
           "PlaybackResult", "PlaybackTrack", "prepare_playback", "read_playback", "require_within_limits",
           "violation_summary", "write_playback"]
