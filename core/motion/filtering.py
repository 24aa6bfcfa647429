"""Smoothing of joint trajectories (frames on axis 0).

Retargeted joint angles inherit mocap jitter and solver chatter; robots
amplify it into jerk. These filters are zero-phase (no lag, so contacts stay
on their frames) and finish by clipping to joint limits, because a low-pass
can overshoot a limit the solver respected.
"""
from __future__ import annotations

import functools

import numpy as np

from .iir import butter_lowpass_sos, sos_filter, sos_steady_state


PAD_RATE_HZ = 120.0  # edges are padded over the time scipy's default pad (3 x (2 x sections + 1) frames) spans at this rate


def butterworth_lowpass(q: np.ndarray, fps: float, cutoff_hz: float, order: int = 4) -> np.ndarray:
    """Zero-phase Butterworth low-pass along frames (forward-backward, so no lag).

    A cutoff at or above Nyquist cannot be designed and would pass everything
    anyway, so the input is returned unchanged (as a copy). Short clips get a
    shorter edge padding instead of failing.
    """
    q = np.array(q, dtype=float)
    if fps <= 0:
        raise ValueError(f"fps must be positive, got {fps!r}")
    if cutoff_hz <= 0:
        raise ValueError(f"cutoff_hz must be positive, got {cutoff_hz!r}")
    if cutoff_hz >= 0.5 * fps or q.shape[0] < 2:
        return q
    sos = butter_sos(order, float(cutoff_hz), float(fps))
    # The edges are padded over the same time at any frame rate (a pad counted in frames made the
    # last 40 ms of a 500 Hz clip differ from the 120 Hz bake by 0.26 rad), and never over more
    # frames than the clip has.
    padlen = min(int(round(3 * (2 * len(sos) + 1) * fps / PAD_RATE_HZ)), q.shape[0] - 1)
    return forward_backward(sos, butter_zi(order, float(cutoff_hz), float(fps)), q, padlen)


def forward_backward(sos: np.ndarray, zi: np.ndarray, x: np.ndarray, padlen: int) -> np.ndarray:
    """scipy.signal.sosfiltfilt(sos, x, axis=0, padlen=padlen) (odd padding) given the sections' steady
    state zi = sosfilt_zi(sos): the same padding, states and passes, each section's recursion a banded
    solve (to rounding: ~1e-13 of the signal), without solving for zi on every call (a gait filters
    about 150 times with a handful of designs) or importing scipy.signal (~1 G instructions)."""
    if padlen > 0:  # odd extension: each end mirrored through the end sample
        x = np.concatenate((2 * x[:1] - x[padlen:0:-1], x, 2 * x[-1:] - x[-2:-(padlen + 2):-1]), axis=0)
    channels = np.asfortranarray(x.reshape(len(x), -1))  # (frames, channels), each channel's frames contiguous
    y = sos_filter(sos, zi[:, :, None] * channels[0], channels)
    y = sos_filter(sos, zi[:, :, None] * y[-1], y, backward=True)
    y = np.ascontiguousarray(y).reshape(x.shape)
    return y[padlen:-padlen] if padlen > 0 else y


@functools.lru_cache(maxsize=64)
def butter_sos(order: int, cutoff_hz: float, fps: float) -> np.ndarray:
    """The filter's second-order sections, designed once per (order, cutoff, rate): a bake filters
    dozens of times with a handful of designs."""
    sos = butter_lowpass_sos(order, cutoff_hz, fps)
    sos.setflags(write=False)  # shared by every call: only read
    return sos


@functools.lru_cache(maxsize=64)
def butter_zi(order: int, cutoff_hz: float, fps: float) -> np.ndarray:
    """The design's steady state per section for a unit step (scipy's sosfilt_zi, a solve per section),
    once per (order, cutoff, rate) like the design."""
    zi = sos_steady_state(butter_sos(order, cutoff_hz, fps))
    zi.setflags(write=False)  # shared by every call: only read
    return zi


def moving_average(q: np.ndarray, window: int) -> np.ndarray:
    """Centered moving average whose window shrinks symmetrically near the ends.

    Shrinking (instead of zero padding) keeps the ends where they are: a
    constant stays constant and a straight ramp is reproduced exactly. Even
    windows are widened by one so the average stays centered.
    """
    q = np.array(q, dtype=float)
    window = int(window)
    if window < 1:
        raise ValueError(f"window must be >= 1, got {window}")
    half = window // 2  # an even window w behaves as w + 1
    n = q.shape[0]
    if half == 0 or n < 3:
        return q
    idx = np.arange(n)
    h = np.minimum(half, np.minimum(idx, n - 1 - idx))
    csum = np.concatenate([np.zeros((1,) + q.shape[1:]), np.cumsum(q, axis=0)])
    width = (2 * h + 1).reshape((n,) + (1,) * (q.ndim - 1))
    return (csum[idx + h + 1] - csum[idx - h]) / width


def lowpass(q: np.ndarray, fps: float, method: str = "butterworth", cutoff_hz: float = 6.0,
            window: int = 5, lower=None, upper=None) -> np.ndarray:
    """Smooth with the named method, then clip into [lower, upper] so limits still hold.

    method: 'butterworth', 'moving_average' or 'none'. lower/upper broadcast
    against a frame of q (e.g. (n,) arrays; +-inf for unlimited joints).
    """
    key = method.lower().replace("-", "_").replace(" ", "_")
    if key == "butterworth":
        out = butterworth_lowpass(q, fps, cutoff_hz)
    elif key in ("moving_average", "average"):
        out = moving_average(q, window)
    elif key == "none":
        out = np.array(q, dtype=float)
    else:
        raise ValueError(f"unknown filter method {method!r} (use 'butterworth', 'moving_average' or 'none')")
    if lower is not None or upper is not None:
        lo = -np.inf if lower is None else np.asarray(lower, dtype=float)
        hi = np.inf if upper is None else np.asarray(upper, dtype=float)
        out = np.clip(out, lo, hi)
    return out


def mean_abs_jerk(q: np.ndarray, fps: float) -> float:
    """Mean |d^3 q / dt^3| over frames and channels, in units per s^3 (a smoothness score)."""
    q = np.asarray(q, dtype=float)
    if q.shape[0] < 4:
        return 0.0
    return float(np.mean(np.abs(np.diff(q, n=3, axis=0))) * fps ** 3)


def bridge_nans(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Fill NaN frames by linear interpolation per channel, holding the nearest valid value at the ends.

    Lets filters and solvers run over clips with dropped mocap frames; the
    returned mask (F,) marks frames that had any NaN so callers can report or
    down-weight them. Raises ValueError when a channel has no valid frame.
    """
    x = np.array(x, dtype=float)
    if x.shape[0] == 0:
        return x, np.zeros(0, dtype=bool)
    flat = x.reshape(x.shape[0], -1)
    bad = np.isnan(flat)
    frame_mask = bad.any(axis=1)
    if not frame_mask.any():
        return x, frame_mask
    if bad.all():
        raise ValueError("bridge_nans: every value is NaN; nothing to interpolate from")
    empty = np.flatnonzero(bad.all(axis=0))
    if empty.size:
        raise ValueError(f"bridge_nans: channel(s) {empty.tolist()} are NaN on every frame")
    # Channels usually share a NaN pattern (whole dropped frames): interpolate each pattern once.
    patterns, which = np.unique(bad[:, bad.any(axis=0)].T, axis=0, return_inverse=True)
    cols = np.flatnonzero(bad.any(axis=0))
    for p, pattern in enumerate(patterns):
        good, missing = np.flatnonzero(~pattern), np.flatnonzero(pattern)
        lo_pos = np.clip(np.searchsorted(good, missing) - 1, 0, len(good) - 1)
        hi_pos = np.minimum(lo_pos + 1, len(good) - 1)
        lo, hi = good[lo_pos], good[hi_pos]
        span = np.where(hi > lo, hi - lo, 1)
        w = np.clip((missing - lo) / span, 0.0, 1.0)[:, None]  # clipping holds the edges
        c = cols[which.ravel() == p]
        flat[np.ix_(missing, c)] = flat[np.ix_(lo, c)] * (1.0 - w) + flat[np.ix_(hi, c)] * w
    return flat.reshape(x.shape), frame_mask


# A joint without a velocity limit still may not turn faster than this (0.35 rad a frame at 120 Hz).
# It is a speed, not a step per frame: as a step, a clip at 24 Hz was held to a fifth of the
# speed it had at 120 Hz and one at 1 Hz to 0.35 rad/s (the walk's limbs 13 degrees off).
MAX_SPEED_RAD_S = 42.0


def step_limits(velocity: np.ndarray, fps: float) -> np.ndarray:
    """Each joint's largest change between frames at `fps` (rad or m): its velocity limit
    (tree.velocity, inf where the URDF gives none) capped at MAX_SPEED_RAD_S, over one frame."""
    return np.minimum(velocity, MAX_SPEED_RAD_S) / fps


def rate_limit(x: np.ndarray, max_step: np.ndarray) -> np.ndarray:
    """Limit every joint's change per frame: where a limit forces a switch of
    branch, the robot moves there at its top speed instead of teleporting.

    max_step: per joint (n,), or per step and joint (F-1, n)."""
    out = x.copy()
    if len(x) < 2:
        return out
    bound = np.broadcast_to(max_step, (len(x) - 1,) + x.shape[1:])
    jumps = np.flatnonzero((np.abs(np.diff(x, axis=0)) > bound).any(axis=1)) + 1  # frames x jumps to
    if len(jumps) == 0:
        return out
    f, frames = int(jumps[0]), len(out)
    while f < frames:
        step = x[f] - out[f - 1]
        out[f] = out[f - 1] + np.minimum(np.maximum(step, -bound[f - 1], out=step), bound[f - 1], out=step)
        if np.array_equal(out[f], x[f]):  # caught up: x itself is followed until its next jump
            later = jumps[np.searchsorted(jumps, f, side="right"):]
            if len(later) == 0:
                break
            f = int(later[0])
        else:
            f += 1
    return out
