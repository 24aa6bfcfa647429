"""Preparing a playback: export settings, then resample, check and (if asked) retime.

Sits above sampling, retime and formats (the settings validate a format
name), so those three never import each other in a circle.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from ..motion.bake_csv import BakeTable
from ..motion.fileio import read_json, refuse_unknown_fields
from .formats import FORMATS, RADIAN_ONLY
from .frame_rate import CHOICES as FRAME_RATES
from .retime import retime
from .sampling import (DEFAULT_PERIOD_S, UNITS, JointLimits, LimitViolation, PlaybackError, PlaybackTrack,
                       _relative_times, check_limits, resample, violation_summary)

# The shortest period an export takes (100 kHz, the Export operator's highest rate): a mistyped rate
# (1e9 Hz) asked for 60 GB of samples and ended in a MemoryError's traceback.
MIN_PERIOD_S = 1e-5


def period_allowed(period_s: float, shortest: float = MIN_PERIOD_S) -> bool:
    """A finite period no shorter than `shortest`, within a rounding of it: the Export operator's 0.01 ms
    is a float32 (9.9999998e-06 s), and 1 / 1e5 Hz rounds under 1e-5 s."""
    return math.isfinite(period_s) and period_s >= shortest * (1.0 - 1e-6)


@dataclass
class ExportSettings:
    """What an export writes and how strictly; also read from a JSON settings file."""

    format: str = "csv"
    period_s: float = DEFAULT_PERIOD_S
    units: str = "rad"
    acceleration_limit: float | None = None               # rad/s² (m/s²) for every joint
    joint_acceleration_limits: dict = field(default_factory=dict)  # joint -> rad/s², wins over the global
    retime: bool = False
    allow_violations: bool = False
    overwrite: bool = False
    mujoco_free_joint: bool = True  # false: mujoco-keyframes without the root, for a fixed-base MJCF
    frame_rate: str = "auto"  # a Blender action's frames to seconds: the scene's, the bake's (frame_rate.py)

    @property
    def rate_hz(self) -> float:
        return 1.0 / self.period_s

    @classmethod
    def from_rate(cls, rate_hz: float, **kwargs) -> "ExportSettings":
        if not (isinstance(rate_hz, (int, float)) and rate_hz > 0 and period_allowed(1.0 / rate_hz)):  # inf: 0 s
            raise PlaybackError(f"rate {rate_hz!r} Hz: expected a positive number, at most {1 / MIN_PERIOD_S:g}")
        return cls(period_s=1.0 / float(rate_hz), **kwargs)

    def validate(self) -> "ExportSettings":
        if self.format not in FORMATS:
            raise PlaybackError(f"format {self.format!r}: expected one of {', '.join(FORMATS)}")
        if not period_allowed(self.period_s):
            raise PlaybackError(f"period {self.period_s!r} s: expected a positive number, at least {MIN_PERIOD_S:g} s "
                                f"(a rate of at most {1 / MIN_PERIOD_S:g} Hz)")
        if self.units not in UNITS:
            raise PlaybackError(f"units {self.units!r}: expected one of {', '.join(UNITS)}")
        if self.units == "deg" and self.format in RADIAN_ONLY:
            raise PlaybackError(f"format {self.format!r} stores radians by convention; "
                                "degrees are offered for csv and npz")
        if self.frame_rate not in FRAME_RATES:
            raise PlaybackError(f"frame_rate {self.frame_rate!r}: expected one of {', '.join(FRAME_RATES)}")
        if self.acceleration_limit is not None and not self.acceleration_limit > 0:
            raise PlaybackError(f"acceleration limit {self.acceleration_limit!r}: expected a positive number")
        return self

    @classmethod
    def load(cls, path) -> "ExportSettings":
        """Settings saved as JSON: any field above, or rate_hz instead of period_s."""
        return cls.from_dict(read_json(path, PlaybackError, "settings file"), str(path))

    @classmethod
    def from_dict(cls, data: dict, origin: str = "<settings>") -> "ExportSettings":
        if not isinstance(data, dict):
            raise PlaybackError(f"{origin}: expected a JSON object")
        refuse_unknown_fields(data, _SETTING_TYPES, PlaybackError, origin)
        for key, value in data.items():
            kinds = _SETTING_TYPES[key]
            if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
                raise PlaybackError(f"{origin}: {key}: {value!r} is not {_KIND_WORDS[kinds]}")
        data = dict(data)
        if "rate_hz" in data:
            rate = data.pop("rate_hz")
            data["period_s"] = 1.0 / rate if rate > 0 else rate
        try:
            return cls(**data).validate()
        except PlaybackError as exc:
            raise PlaybackError(f"{origin}: {exc}") from None


_NUMBER = (int, float)
_SETTING_TYPES = {"format": (str,), "rate_hz": _NUMBER, "period_s": _NUMBER, "units": (str,),
                  "acceleration_limit": (*_NUMBER, type(None)), "joint_acceleration_limits": (dict,),
                  "retime": (bool,), "allow_violations": (bool,), "overwrite": (bool,),
                  "mujoco_free_joint": (bool,), "frame_rate": (str,)}
_KIND_WORDS = {(str,): "text", _NUMBER: "a number", (*_NUMBER, type(None)): "a number or null",
               (dict,): "an object (joint: limit)", (bool,): "true or false"}  # said as the JSON's words


@dataclass
class PlaybackResult:
    """A track ready to write, what it breaks, and what retime did."""

    track: PlaybackTrack
    violations: list[LimitViolation]
    retimed_seconds_added: float = 0.0
    warnings: list[str] = field(default_factory=list)
    source_duration_s: float = 0.0


def prepare_playback(table: BakeTable, limits: JointLimits, settings: ExportSettings) -> PlaybackResult:
    """Resample at the control cycle, check limits, retime if asked and needed."""
    settings.validate()
    if list(table.joint_names) != list(limits.joint_names):
        raise PlaybackError(f"motion joints {list(table.joint_names)[:3]}... do not match the robot's "
                            f"URDF order {limits.joint_names[:3]}...")
    source_duration = float(_relative_times(table)[-1])
    track, warnings = resample(table, settings.period_s, limits)
    violations = check_limits(track, limits)
    added = 0.0
    if settings.retime and any(v.kind != "position" for v in violations):
        retimed, _ = retime(table, limits, settings.period_s)
        track, warnings = resample(retimed, settings.period_s, limits)
        violations = check_limits(track, limits)  # the written samples, not the solver's view
        added = float(retimed.time[-1] - source_duration)
    return PlaybackResult(track, violations, added, warnings, source_duration)


def require_within_limits(result: PlaybackResult, allow: bool) -> None:
    """Refuse a motion the robot cannot play unless the user explicitly allows it."""
    if result.violations and not allow:
        raise PlaybackError(f"{violation_summary(result.violations)}; retime the motion or allow violations")
