"""Clips from different sources at one frame rate, so they can be compared and joined.

Motion from different sources rarely shares a rate (a BVH at 120 fps, an FBX
at 30, a hand-keyed action at 24). Each clip is sampled at k / fps seconds
over its own duration: joints and root position linearly (a line between two
postures stays inside the joint limits), the root orientation by slerp.
Markers, given periods and keys move with it, so they keep their times in
seconds. The rate is the first clip's unless the caller gives one.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from .detect import Clip, Periods, SpliceError

SAME_RATE = 1e-3  # relative: rates this close are one rate (a BVH frame time written to 6 decimals)


def _linear(values: np.ndarray, at: np.ndarray) -> np.ndarray:
    """(len(at), ...) values (F, ...) sampled at fractional frames `at`."""
    low = np.clip(np.floor(at).astype(int), 0, len(values) - 1)
    high = np.minimum(low + 1, len(values) - 1)
    w = (at - low).reshape((-1,) + (1,) * (values.ndim - 1))
    return (1.0 - w) * values[low] + w * values[high]


def resample_clip(clip: Clip, fps: float) -> Clip:
    """The clip sampled at `fps` over its own duration (its last frame or just before it)."""
    if not (np.isfinite(clip.fps) and clip.fps > 0):
        raise SpliceError(f"clip {clip.name!r} has no valid frame rate ({clip.fps!r} fps)")
    ratio = fps / clip.fps
    count = int(np.floor((clip.frames - 1) * ratio + 1e-6)) + 1
    if count < 2:
        raise SpliceError(f"clip {clip.name!r} lasts {(clip.frames - 1) / clip.fps:.3f} s: "
                          f"less than two frames at {fps:g} fps")
    at = np.arange(count) / ratio  # source frames
    position = quaternion = None
    if clip.has_root:
        position = _linear(np.asarray(clip.root_position, float), at)
        from scipy.spatial.transform import Rotation, Slerp  # here: the splice settings need no scipy

        wxyz = np.asarray(clip.root_quaternion, float)
        slerp = Slerp(np.arange(clip.frames, dtype=float), Rotation.from_quat(wxyz[:, [1, 2, 3, 0]]))
        quaternion = slerp(np.clip(at, 0, clip.frames - 1)).as_quat()[:, [3, 0, 1, 2]]
    periods = None
    if clip.periods is not None:
        last = count - 1
        periods = Periods(min(int(round(clip.periods.main_start * ratio)), last),
                          min(int(round(clip.periods.main_end * ratio)), last), clip.periods.source)
    keys = None if clip.keys is None else np.unique(np.minimum(np.round(np.asarray(clip.keys) * ratio), count - 1)
                                                    .astype(int))
    markers = {name: frame * ratio for name, frame in clip.markers.items()}
    return replace(clip, q=_linear(np.asarray(clip.q, float), at), fps=float(fps), root_position=position,
                   root_quaternion=quaternion, markers=markers, periods=periods, keys=keys)


def common_rate(clips: list[Clip], fps: float | None = None) -> tuple[list[Clip], list[dict]]:
    """All clips at `fps` (default: the first clip's); returns them and one note per clip resampled."""
    target = float(fps if fps is not None else clips[0].fps)
    out, notes = [], []
    for clip in clips:
        if abs(clip.fps - target) <= SAME_RATE * target:
            out.append(replace(clip, fps=target))
            continue
        out.append(resample_clip(clip, target))
        notes.append({"clip": clip.name, "from_fps": float(clip.fps), "to_fps": target,
                      "frames": [clip.frames, out[-1].frames]})
    return out, notes
