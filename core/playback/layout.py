"""What the playback formats share: their names and extensions, quaternion orders, the
self-description (metadata) every file carries, and the unit and quaternion conversions.

The writers (formats) and the readers (readers) both sit on this module.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .sampling import JointLimits, LimitViolation, PlaybackTrack


FORMATS = {"csv": ".csv", "unitree-csv": ".csv", "npz": ".npz", "pkl": ".pkl",
           "ros2-yaml": ".yaml", "mujoco-keyframes": ".xml"}
RADIAN_ONLY = ("unitree-csv", "pkl", "ros2-yaml", "mujoco-keyframes")
QUATERNION_ORDER = {"csv": "wxyz", "unitree-csv": "xyzw", "npz": "xyzw", "pkl": "xyzw",
                    "ros2-yaml": None, "mujoco-keyframes": "wxyz"}
META_FORMAT = "robot_retarget.playback"
META_VERSION = 1
_DEG = 180.0 / math.pi


class PlaybackFormatError(ValueError):
    """A playback file that cannot be read; the message names the file and line or key."""


@dataclass
class PlaybackMeta:
    """What a file says about itself beyond the samples."""

    robot: str = ""
    source: str = ""
    limits: JointLimits | None = None
    violations: list = field(default_factory=list)  # LimitViolation or dicts
    retimed_seconds_added: float = 0.0
    generator: str = "robot_retarget"
    mimic: tuple = ()  # MimicJoint (core.playback.mimic): driven joints the formats that list them get


@dataclass
class PlaybackFile:
    """A file read back: the track in radians/metres and its metadata (may be empty)."""

    path: Path
    format: str
    track: PlaybackTrack
    metadata: dict


def sidecar_path(path) -> Path:
    """walk.csv -> walk.meta.json: the csv format's metadata file."""
    path = Path(path)
    return path.with_name(f"{path.stem}.meta.json")


def output_paths(path, fmt: str) -> list[Path]:
    """Every file a write of `fmt` to `path` creates (csv adds its sidecar)."""
    return [Path(path), sidecar_path(path)] if fmt == "csv" else [Path(path)]


# ------------------------------------------------------------ metadata ---

def metadata(track: PlaybackTrack, fmt: str, meta: PlaybackMeta | None, degrees: bool) -> dict:
    """The self-description every format carries (sidecar, comment or npz entry)."""
    meta = meta or PlaybackMeta()
    prismatic = track.is_prismatic()
    violations = [v.to_dict() if isinstance(v, LimitViolation) else dict(v) for v in meta.violations]
    return {
        "format": META_FORMAT, "version": META_VERSION, "file_format": fmt, "generator": meta.generator,
        "robot": meta.robot, "source": meta.source, "joint_names": list(track.joint_names),
        "units": {"time": "s", "length": "m", "angle": "deg" if degrees else "rad",
                  "joints": ["m" if p else ("deg" if degrees else "rad") for p in prismatic]},
        "quaternion_order": QUATERNION_ORDER[fmt], "rate_hz": track.rate_hz, "period_s": track.period_s,
        "samples": track.samples, "duration_s": track.duration_s,
        "limits": meta.limits.to_list(degrees) if meta.limits is not None else [],
        "violations": violations, "retimed_seconds_added": float(meta.retimed_seconds_added),
    }


def _joints_out(track: PlaybackTrack, degrees: bool) -> np.ndarray:
    q = np.array(track.q, dtype=float)
    if degrees:
        q[:, ~track.is_prismatic()] *= _DEG
    return q


def _joints_in(q: np.ndarray, units: list | None) -> tuple[np.ndarray, np.ndarray | None]:
    """Back to radians; prismatic mask from per-joint units when the file states them."""
    if not units:
        return q, None
    units = np.array(units)
    q = np.array(q, dtype=float)
    q[:, units == "deg"] /= _DEG
    return q, units == "m"


def _xyzw(wxyz: np.ndarray) -> np.ndarray:
    return np.asarray(wxyz)[:, [1, 2, 3, 0]]


def _wxyz(xyzw: np.ndarray) -> np.ndarray:
    return np.asarray(xyzw)[:, [3, 0, 1, 2]]
