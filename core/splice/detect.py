"""The clip model of splicing, and where a clip's main movement begins and ends.

A clip is a start preparatory movement, a main movement (the gesture that
carries meaning) and an end preparatory movement. Splicing may only cut inside
the preparatory movements, so these two boundaries decide what can be thrown
away. Animators can pin them with pose markers `main_start` / `main_end`;
otherwise one of two detectors reads them from the joint curves:

- "reversal" (default): the main movement starts a margin (0.2 s, or the
  previous keyed posture) before the first moment any joint reverses its drive
  direction or stops, and ends a margin after the last such moment (the same
  rule run backwards in time, so the final return home is preparatory).
- "accumulated": postures every interval (or the keys); the integrated angle
  change between adjacent postures is tracked, and the main movement starts
  at the first posture where that change differs from the previous step by
  more than `change_percent` (30 %, 5-50 %), confirmed when the average of
  the following steps differs from the average of the steps before by more
  than `average_percent` (10 %); the end is found the same way backwards.
  The confirmation can be switched off (`confirm`), and the boundaries can
  be moved out by the reversal rule's margin (`accumulated_margin`).
- "fixed": preparatory windows of a fixed duration (`window_s`) from the
  clip's start and end, for clips whose preparation is known to be that long.

Markers may also sit inside a repeated main movement (a wave of five swings):
the repetitions outside them then count as preparatory and a join may cut them.

Frames are 0-based clip frames; q is (frames, joints) in radians. Clip and its
checks live here too, so core.splice.join holds only the joining itself.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

import numpy as np

MAIN_START, MAIN_END = "main_start", "main_end"
DETECTORS = ("reversal", "accumulated", "fixed")
CONFIRM_STEPS = 5  # steps averaged to confirm a change (1 s at the default interval)


class SpliceError(ValueError):
    """Clips that cannot be spliced; the message names the clip, joint or setting."""


@dataclass(frozen=True)
class Periods:
    """Frames [0, main_start) start-preparatory, [main_start, main_end] main, the rest end-preparatory.

    The boundary postures themselves are join candidates too, so a clip whose
    main movement runs to its last frame still offers that last posture.
    """

    main_start: int
    main_end: int
    source: str = "given"  # 'markers', 'reversal', 'accumulated', 'given' or 'markers+<detector>'

    def start_frames(self) -> np.ndarray:
        return np.arange(0, self.main_start + 1)

    def end_frames(self, frames: int) -> np.ndarray:
        return np.arange(self.main_end, frames)

    def to_dict(self, fps: float) -> dict:
        return {"main_start_s": self.main_start / fps, "main_end_s": self.main_end / fps, "source": self.source}


@dataclass
class DetectSettings:
    """How to find the main movement when it is not annotated."""

    method: str = "reversal"
    margin_s: float = 0.2         # reversal: main starts/ends this long before/after the first/last event
    interval_s: float = 0.2       # drive direction from the change over this interval; posture spacing
    change_percent: float = 30.0  # accumulated: step change against the previous step (5-50)
    average_percent: float = 10.0  # accumulated: confirmation on the averages
    confirm: bool = True          # accumulated: require that confirmation
    accumulated_margin: bool = False  # accumulated: move the boundaries out by margin_s (or a key)
    window_s: float = 0.5         # fixed: preparatory windows this long from each end
    still_deg_s: float = 2.0      # a joint slower than this is still
    stop_fraction: float = 0.1    # ...or slower than this fraction of its own peak speed
    min_range_deg: float = 2.0    # joints moving less than this over the clip are ignored

    def validate(self) -> None:
        if self.method not in DETECTORS:
            raise SpliceError(f"detector {self.method!r}: expected one of {', '.join(DETECTORS)}")
        if not 5.0 <= self.change_percent <= 50.0:
            raise SpliceError(f"change_percent {self.change_percent:g} is outside 5-50 %")
        if not 0.0 < self.average_percent <= 50.0:
            raise SpliceError(f"average_percent {self.average_percent:g} is outside 0-50 %")
        for name in ("margin_s", "still_deg_s", "stop_fraction", "min_range_deg", "window_s"):
            if not getattr(self, name) >= 0.0:
                raise SpliceError(f"{name} must be >= 0, got {getattr(self, name)!r}")
        if not self.interval_s > 0.0:
            raise SpliceError(f"interval_s must be positive, got {self.interval_s!r}")


def interval_frames(fps: float, interval_s: float) -> int:
    """Whole frames spanning `interval_s` (at least one, so adjacent keys still count)."""
    return max(1, int(round(interval_s * fps)))


def drive_velocity(q: np.ndarray, fps: float, interval_s: float) -> np.ndarray:
    """(F, n) rad/s: the change over `interval_s` centred on each frame, one-sided at the ends."""
    frames = q.shape[0]
    half = max(1, interval_frames(fps, interval_s) // 2)
    index = np.arange(frames)
    ahead, behind = np.minimum(index + half, frames - 1), np.maximum(index - half, 0)
    span = np.maximum(ahead - behind, 1)[:, None]
    return (q[ahead] - q[behind]) * fps / span


def _drive_states(q: np.ndarray, fps: float, settings: DetectSettings) -> np.ndarray:
    """(F, n) in {-1, 0, +1}: each joint driving down, still, or driving up."""
    v = drive_velocity(q, fps, settings.interval_s)
    peak = np.abs(v).max(axis=0)
    threshold = np.maximum(np.radians(settings.still_deg_s), settings.stop_fraction * peak)
    states = np.sign(v) * (np.abs(v) > threshold)
    active = np.ptp(q, axis=0) >= np.radians(settings.min_range_deg)
    return (states * active).astype(np.int8)


def _first_event(states: np.ndarray) -> int | None:
    """First frame where any joint that was driving stops or reverses."""
    if len(states) < 2:
        return None
    prev, cur = states[:-1], states[1:]
    hits = np.flatnonzero(((prev != 0) & (cur != prev)).any(axis=1))
    return int(hits[0]) + 1 if hits.size else None


def _keys_before(keys: np.ndarray | None, frame: int, fallback: int) -> int:
    """The last keyed posture before `frame` (keyed clips), else `fallback` (the margin)."""
    if keys is None:
        return fallback
    earlier = keys[keys < frame]
    return int(earlier[-1]) if earlier.size else 0


def detect_reversal(q: np.ndarray, fps: float, settings: DetectSettings | None = None,
                    keys: np.ndarray | None = None) -> Periods:
    """Main movement from the first and last drive reversal or stop (see the module docstring).

    A clip without any (still, or one monotonic move) is all main movement:
    only its first and last postures may be joined, nothing of it is cut.
    """
    settings = settings or DetectSettings()
    frames = q.shape[0]
    states = _drive_states(q, fps, settings)
    first, back = _first_event(states), _first_event(states[::-1])
    if first is None or back is None:
        return Periods(0, frames - 1, "reversal")
    margin = int(round(settings.margin_s * fps))
    mirrored = None if keys is None else (frames - 1 - np.asarray(keys, dtype=int))[::-1]
    start = _keys_before(keys, first, max(first - margin, 0))
    end = frames - 1 - _keys_before(mirrored, back, max(back - margin, 0))
    start, end = sorted((start, end))
    return Periods(start, end, "reversal")


def _postures(frames: int, fps: float, interval_s: float, keys: np.ndarray | None) -> np.ndarray:
    if keys is not None and len(keys) >= 2:
        return np.asarray(keys, dtype=int)
    return np.arange(0, frames, interval_frames(fps, interval_s))


def _first_change(steps: np.ndarray, still: float, settings: DetectSettings) -> int | None:
    """Index of the first step that changes against the previous one and shifts the average."""
    moving = np.flatnonzero(steps >= still)
    if moving.size == 0:
        return None
    first = int(moving[0])  # leading still steps are rest before the preparatory movement
    for k in range(first + 1, len(steps)):
        previous = max(steps[k - 1], still)
        if abs(steps[k] - steps[k - 1]) <= settings.change_percent / 100.0 * previous:
            continue
        if not settings.confirm:
            return k
        before = max(steps[first:k].mean(), still)
        after = steps[k:k + CONFIRM_STEPS].mean()
        if abs(after - before) > settings.average_percent / 100.0 * before:
            return k
    return None


def _accumulated_start(q: np.ndarray, fps: float, settings: DetectSettings,
                       keys: np.ndarray | None) -> int | None:
    postures = _postures(q.shape[0], fps, settings.interval_s, keys)
    if postures.size < 3:
        return None
    steps = np.abs(np.diff(q[postures], axis=0)).sum(axis=1)
    spacing = np.diff(postures).mean() / fps
    still = max(np.radians(settings.still_deg_s) * spacing, 0.05 * steps.max())
    k = _first_change(steps, still, settings)
    return None if k is None else int(postures[k])


def detect_accumulated(q: np.ndarray, fps: float, settings: DetectSettings | None = None,
                       keys: np.ndarray | None = None) -> Periods:
    """Main movement from changes of the accumulated angle change (see the module docstring)."""
    settings = settings or DetectSettings()
    frames = q.shape[0]
    mirrored = None if keys is None else (frames - 1 - np.asarray(keys, dtype=int))[::-1]
    start = _accumulated_start(q, fps, settings, keys)
    back = _accumulated_start(q[::-1], fps, settings, mirrored)
    if settings.accumulated_margin:  # the reversal rule's margin (or the previous key), both ends
        margin = int(round(settings.margin_s * fps))
        if start is not None:
            start = _keys_before(keys, start, max(start - margin, 0))
        if back is not None:
            back = _keys_before(mirrored, back, max(back - margin, 0))
    start = 0 if start is None else start
    end = frames - 1 if back is None else frames - 1 - back
    start, end = sorted((start, end))
    return Periods(start, end, "accumulated")


def detect_fixed(q: np.ndarray, fps: float, settings: DetectSettings | None = None,
                 keys: np.ndarray | None = None) -> Periods:
    """Preparatory windows of `window_s` from the start and from the end; a clip shorter than both
    windows is split at its middle frame (keys are not used: the windows are durations)."""
    settings = settings or DetectSettings()
    frames = q.shape[0]
    window = int(round(settings.window_s * fps))
    start, end = min(window, frames - 1), max(frames - 1 - window, 0)
    if start > end:
        start = end = (frames - 1) // 2
    return Periods(start, end, "fixed")


DETECT = {"reversal": detect_reversal, "accumulated": detect_accumulated, "fixed": detect_fixed}


def periods_from_markers(markers: Mapping[str, float], frames: int, clip: str) -> tuple[int | None, int | None]:
    """(main_start, main_end) clip frames from markers named main_start / main_end (either may be absent)."""
    out = []
    for name in (MAIN_START, MAIN_END):
        if name not in markers:
            out.append(None)
            continue
        frame = float(markers[name])
        if not np.isfinite(frame) or not -0.5 <= frame <= frames - 0.5:
            raise SpliceError(f"clip {clip!r}: marker {name!r} at frame {frame:g} is outside the clip "
                              f"(frames 0-{frames - 1})")
        out.append(int(round(frame)))
    if None not in out and out[0] > out[1]:
        raise SpliceError(f"clip {clip!r}: marker {MAIN_START!r} (frame {out[0]}) comes after "
                          f"{MAIN_END!r} (frame {out[1]})")
    return out[0], out[1]


def annotate(q: np.ndarray, fps: float, clip: str, markers: Mapping[str, float] | None = None,
             settings: DetectSettings | None = None, keys: np.ndarray | None = None) -> Periods:
    """Periods of one clip: markers where given, the detector for whatever they leave open."""
    settings = settings or DetectSettings()
    settings.validate()
    frames = q.shape[0]
    start, end = periods_from_markers(markers or {}, frames, clip)
    if start is not None and end is not None:
        return Periods(start, end, "markers")
    found = DETECT[settings.method](q, fps, settings, keys)
    if start is None and end is None:
        return found
    if start is None:  # the marker wins over the detector
        start = min(found.main_start, end)
    if end is None:
        end = max(found.main_end, start)
    return Periods(start, end, f"markers+{settings.method}")


# ------------------------------------------------------------- clip model ---

@dataclass
class Clip:
    """One robot clip: q (F, n) rad at `fps`; a root pose unless the robot is fixed-base.

    markers: clip frames of `main_start` / `main_end` annotations; periods:
    given outright (skips markers and detection); keys: frames of keyed
    postures for sparse hand-keyed clips (the detectors use them).
    """

    name: str
    q: np.ndarray
    fps: float
    root_position: np.ndarray | None = None    # (F, 3) m
    root_quaternion: np.ndarray | None = None  # (F, 4) wxyz
    markers: dict[str, float] = field(default_factory=dict)
    periods: Periods | None = None
    keys: np.ndarray | None = None

    @property
    def frames(self) -> int:
        return int(np.shape(self.q)[0])

    @property
    def has_root(self) -> bool:
        return self.root_position is not None and self.root_quaternion is not None


def _check_clip(clip: Clip, joints: int, names: list[str], with_root: bool) -> None:
    q = np.asarray(clip.q, dtype=float)
    if q.ndim != 2 or q.shape[1] != joints:
        raise SpliceError(f"clip {clip.name!r} has joint array shape {q.shape}, expected (frames, {joints})")
    if q.shape[0] < 2:
        raise SpliceError(f"clip {clip.name!r} has {q.shape[0]} frame(s); at least 2 are needed")
    if not (np.isfinite(clip.fps) and clip.fps > 0):
        raise SpliceError(f"clip {clip.name!r} has no valid frame rate ({clip.fps!r} fps)")
    bad = np.argwhere(~np.isfinite(q))
    if bad.size:
        raise SpliceError(f"clip {clip.name!r}: joint {names[bad[0, 1]]!r} is not finite at frame {bad[0, 0]}")
    if clip.has_root != with_root:
        raise SpliceError(f"clip {clip.name!r} {'has' if clip.has_root else 'has no'} root motion "
                          f"but the first clip {'does not' if clip.has_root else 'does'}")
    if with_root:
        for label, array, width in (("root position", clip.root_position, 3),
                                    ("root quaternion", clip.root_quaternion, 4)):
            if np.shape(array) != (q.shape[0], width) or not np.all(np.isfinite(array)):
                raise SpliceError(f"clip {clip.name!r}: {label} must be finite, shape ({q.shape[0]}, {width})")


def check_clips(clips: list[Clip], joint_names: list[str] | None) -> list[str]:
    """Fail early, naming the clip and joint, rather than splice mismatched clips; returns joint names."""
    if len(clips) < 2:
        raise SpliceError(f"splicing needs at least two clips, got {len(clips)}")
    joints = np.shape(clips[0].q)[1] if np.ndim(clips[0].q) == 2 else 0
    names = list(joint_names) if joint_names is not None else [f"joint {k}" for k in range(joints)]
    if len(names) != joints:
        raise SpliceError(f"{len(names)} joint names for {joints} joint columns of clip {clips[0].name!r}")
    for clip in clips:
        _check_clip(clip, joints, names, clips[0].has_root)
    return names


def clip_periods(clip: Clip, settings: DetectSettings) -> Periods:
    """Given periods (checked), else markers, else detection."""
    if clip.periods is None:
        return annotate(np.asarray(clip.q, float), clip.fps, clip.name, clip.markers, settings, clip.keys)
    p = clip.periods
    if not 0 <= p.main_start <= p.main_end <= clip.frames - 1:
        raise SpliceError(f"clip {clip.name!r}: main movement frames {p.main_start}-{p.main_end} do not fit "
                          f"its {clip.frames} frames")
    return p
