"""The generated transition between two join postures, and the joint speed it moves at.

Two shapes: 'eased' (default) is the straight line in joint space with the
clips' own end velocities blended in by a cubic, lengthened while a seam
would still change velocity more than the clips do from frame to frame;
'linear' is the plain straight interpolation of the joint angles at the
representative speed (constant speed, its velocity steps at the seams; its
length rounds up to whole frames, so no joint moves faster than the speed).
Both last the largest joint change over the representative speed (at least
the time the joints' velocity limits need) and stay inside the joint limits.

Arrays are frames first, radians, rad/s.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .detect import Clip, Periods
from .settings import SpliceSettings

STRETCH_STEP = 1.25   # an eased transition whose seams jump is lengthened by this factor per try


@dataclass
class Transition:
    """Generated frames from A's join posture (first row) to B's (last row), (n+1, J) rad.

    n = 0 (one row) when the postures coincide: B goes on from A's posture.
    """

    q: np.ndarray
    fps: float
    speed_rad_s: float
    velocity_jump_rad_s: float  # largest change of joint velocity across either seam
    allowed_jump_rad_s: float   # the clips' own largest frame-to-frame velocity change
    root_position: np.ndarray | None = None
    root_quaternion: np.ndarray | None = None

    @property
    def duration_s(self) -> float:
        return (len(self.q) - 1) / self.fps


def _main_speeds(clip: Clip, periods: Periods, still: float) -> np.ndarray:
    segment = np.asarray(clip.q, float)[periods.main_start:periods.main_end + 1]
    if len(segment) < 2:
        segment = np.asarray(clip.q, float)
    speeds = np.abs(np.diff(segment, axis=0)).ravel() * clip.fps
    return speeds[speeds > still]


def representative_speed(a: Clip, pa: Periods, b: Clip, pb: Periods, settings: SpliceSettings) -> float | None:
    """The joint speed (rad/s) the transition moves at: given, or a statistic of the main movements.

    Samples are every moving joint's frame-to-frame speed in the chosen main
    movement(s); None when nothing there moves.
    """
    if settings.speed_rad_s is not None:
        return float(settings.speed_rad_s)
    still = np.radians(settings.still_deg_s)
    parts = {"a": [(a, pa)], "b": [(b, pb)], "both": [(a, pa), (b, pb)]}[settings.speed_source]
    samples = np.concatenate([_main_speeds(clip, p, still) for clip, p in parts])
    if samples.size == 0:
        return None
    if settings.speed_statistic == "mean":
        return float(samples.mean())
    if settings.speed_statistic == "median":
        return float(np.median(samples))
    counts, edges = np.histogram(samples, bins="auto")
    k = int(np.argmax(counts))
    return float((edges[k] + edges[k + 1]) / 2)


def edge_velocity(q: np.ndarray, frame: int, fps: float, arriving: bool) -> np.ndarray:
    """Frame-to-frame velocity (rad/s) arriving at `frame` (A) or leaving it (B); zero at a clip edge."""
    other = frame - 1 if arriving else frame + 1
    if not 0 <= other < len(q):
        return np.zeros(q.shape[1:])
    return (q[frame] - q[other]) * fps if arriving else (q[other] - q[frame]) * fps


def hermite(p0: np.ndarray, v0: np.ndarray, p1: np.ndarray, v1: np.ndarray, n: int, fps: float) -> np.ndarray:
    """(n+1, ...) cubic from p0 with velocity v0 to p1 with velocity v1 over n frames.

    It is the straight line in joint space plus an ease term that vanishes at
    both ends; with zero end velocities it is the line itself, smoothly eased.
    """
    duration = n / fps
    s = (np.arange(n + 1) / n).reshape((-1,) + (1,) * np.ndim(p0))
    h00, h10 = 2 * s ** 3 - 3 * s ** 2 + 1, s ** 3 - 2 * s ** 2 + s
    h01, h11 = -2 * s ** 3 + 3 * s ** 2, s ** 3 - s ** 2
    return h00 * p0 + h10 * duration * v0 + h01 * p1 + h11 * duration * v1


def _seam_jump(qa: np.ndarray, a_frame: int, qb: np.ndarray, b_frame: int, path: np.ndarray, fps: float) -> float:
    """Largest change of joint velocity (rad/s) from one frame to the next at either seam.

    The frames around the path are A's before its join posture and B's after
    its own (a one-row path stands for both postures, merged); a clip edge
    counts as rest.
    """
    before = qa[a_frame - 1] if a_frame > 0 else path[0]
    after = qb[b_frame + 1] if b_frame + 1 < len(qb) else path[-1]
    accel = np.abs(np.diff(np.vstack([before, path, after]), n=2, axis=0))
    return float(max(accel[0].max(), accel[-1].max()) * fps)


def _own_jump(qa: np.ndarray, qb: np.ndarray, fps: float) -> float:
    """The clips' own largest frame-to-frame velocity change (rad/s)."""
    jumps = [np.abs(np.diff(q, n=2, axis=0)).max() for q in (qa, qb) if len(q) >= 3]
    return float(max(jumps) * fps) if jumps else math.inf


def _duration_frames(p0: np.ndarray, p1: np.ndarray, fps: float, speed: float, velocity, peak: float,
                     whole=round) -> int:
    """Frames for the largest joint change at `speed`, and at least `peak` times what the velocity
    limits allow (a cubic peaks at 1.5 times its mean speed, a line at 1); `whole` rounds to frames."""
    span = np.abs(p1 - p0)
    seconds = span.max() / speed
    if velocity is not None:
        seconds = max(seconds, peak * float(np.max(span / np.asarray(velocity, float))))
    return int(whole(seconds * fps - 1e-9 if whole is math.ceil else seconds * fps))


def _within(path: np.ndarray, lower, upper) -> np.ndarray:
    if lower is None and upper is None:
        return path
    return np.clip(path, lower if lower is not None else -np.inf, upper if upper is not None else np.inf)


def make_transition(qa: np.ndarray, a_frame: int, qb: np.ndarray, b_frame: int, fps: float, speed: float,
                    settings: SpliceSettings, lower=None, upper=None, velocity=None) -> Transition:
    """Transition from A's posture `a_frame` to B's `b_frame` at the joint speed `speed`.

    Zero frames (one row) when the postures coincide: B continues straight
    from A's posture. 'linear': the straight line at constant speed. 'eased':
    the clips' end velocities are blended in so the seams do not jump; while
    they still jump more than the clips' own frame-to-frame changes, the
    transition is lengthened (up to max_stretch). Values stay in the limits.
    """
    p0, p1 = qa[a_frame], qb[b_frame]
    allowed = _own_jump(qa, qb, fps)
    if settings.transition == "linear":
        n = _duration_frames(p0, p1, fps, speed, velocity, 1.0, math.ceil)  # never faster than the speed
        path = p0 + (p1 - p0) * (np.arange(n + 1) / max(n, 1))[:, None]
        path = _within(path, lower, upper)
        return Transition(path, fps, speed, _seam_jump(qa, a_frame, qb, b_frame, path, fps), allowed)
    v0, v1 = edge_velocity(qa, a_frame, fps, True), edge_velocity(qb, b_frame, fps, False)
    shortest = _duration_frames(p0, p1, fps, speed, velocity, 1.5)
    longest = max(shortest, 1) * settings.max_stretch
    best, n = None, shortest
    while True:
        path = _within(hermite(p0, v0, p1, v1, n, fps) if n > 0 else p0[None].copy(), lower, upper)
        jump = _seam_jump(qa, a_frame, qb, b_frame, path, fps)
        if best is None or jump < best[1]:
            best = (path, jump)
        if jump <= allowed or n >= longest:
            break
        n = max(n + 1, math.ceil(n * STRETCH_STEP))
    return Transition(best[0], fps, speed, best[1], allowed)
