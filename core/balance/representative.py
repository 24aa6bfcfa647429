"""Representative points of a swing: the times that carry a person's style of stepping.

Within one swing (lift-off to touch-down) each channel of the swing foot (toe x, y, z,
and its roll, pitch, yaw when known) is smoothed and its maxima and minima found with a
prominence threshold: `sensitivity` divides it, so a higher sensitivity keeps more of
the person's style and never fewer points. The union over channels is merged where
points are closer than `merge_s` (one point at their mean time); lift-off and
touch-down are added. Every channel (feet, waist, upper body) is sampled at these times.
"""
from __future__ import annotations

import numpy as np

from ..motion.filtering import butterworth_lowpass

PROMINENCE = 0.2  # of a channel's range within the swing, at sensitivity 1
SMOOTH_HZ = 8.0


def representative_times(time_s: np.ndarray, channels: np.ndarray, lift_off_s: float, touch_down_s: float,
                         sensitivity: float = 1.0, merge_s: float = 0.1) -> np.ndarray:
    """Sorted times (s) of one swing's representative points, lift-off and touch-down included.

    time_s: (F,) sample times; channels: (F, C) the swing foot's channels (metres, radians).
    """
    if not sensitivity > 0:
        raise ValueError(f"sensitivity must be positive, got {sensitivity!r}")
    time_s = np.asarray(time_s, dtype=float)
    inside = (time_s >= lift_off_s) & (time_s <= touch_down_s)
    t = time_s[inside]
    values = np.asarray(channels, dtype=float).reshape(len(time_s), -1)[inside]
    extrema: list[float] = []
    if len(t) >= 5:
        fps = (len(t) - 1) / max(t[-1] - t[0], 1e-9)
        smooth = butterworth_lowpass(values, fps, SMOOTH_HZ) if len(t) > 15 and SMOOTH_HZ < 0.45 * fps else values
        for channel in smooth.T:
            span = float(np.ptp(channel))
            if span <= 1e-9:
                continue
            threshold = PROMINENCE * span / sensitivity
            for signal in (channel, -channel):
                peaks = prominent_peaks(signal, threshold)
                extrema.extend(t[peaks].tolist())
    merged = _merge(sorted(extrema), merge_s)
    keep = [p for p in merged if lift_off_s + merge_s / 2 < p < touch_down_s - merge_s / 2]
    return np.array([lift_off_s, *keep, touch_down_s])


def prominent_peaks(signal: np.ndarray, prominence: float) -> np.ndarray:
    """Indices of the maxima of a 1-D signal that stand at least `prominence` above the higher of
    the two lowest points between them and a higher sample (or the signal's end) on either side:
    scipy.signal.find_peaks(signal, prominence=prominence)[0] (a flat top counts once, at its
    middle; the ends are never peaks), without importing scipy.signal (1 G instructions)."""
    x = np.asarray(signal, dtype=float)
    rising = np.flatnonzero(np.diff(x) > 0) + 1  # samples above their left neighbour
    peaks = []
    for left in rising:
        right = left
        while right + 1 < len(x) and x[right + 1] == x[left]:
            right += 1
        if right + 1 < len(x) and x[right + 1] < x[left]:
            peaks.append((left + right) // 2)
    return np.array([p for p in peaks if _prominence(x, p) >= prominence], dtype=np.intp)


def _prominence(x: np.ndarray, peak: int) -> float:
    """How far the peak stands above the higher of its two bases: the lowest sample on each side
    before a sample higher than the peak."""
    bases = []
    for side in (x[peak::-1], x[peak:]):
        higher = np.flatnonzero(side > x[peak])
        bases.append(side[: higher[0] if len(higher) else len(side)].min())
    return float(x[peak] - max(bases))


def _merge(times: list[float], width: float) -> list[float]:
    """Points closer than `width` to their neighbour become one, at the group's mean time."""
    groups: list[list[float]] = []
    for t in times:
        if groups and t - groups[-1][-1] < width:
            groups[-1].append(t)
        else:
            groups.append([t])
    return [float(np.mean(g)) for g in groups]
