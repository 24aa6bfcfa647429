"""Foot contacts of a character clip: detection, and the JSON file that stores them.

A foot that is on the ground must stay put on the robot; this module finds
out when the source's feet are on the ground. Per foot and frame, the heel
and the toe are each "down" while they are low and slow, with hysteresis
(a lower threshold to enter than to leave) and a median filter so mocap
jitter does not flicker; the foot is in contact while its heel or its toe
is down. Heights and speeds are measured in leg lengths, so the same
thresholds work on a clip in metres, centimetres or unknown units.

Contacts are per-foot boolean arrays (F,), frames first. The JSON file
(`Contacts.save`, `Contacts.load`, `tools/robot-retarget bake --contacts FILE`):

    {"format": "robot_retarget.contacts", "version": 1, "fps": 120.0,
     "feet": {"left": [[0, 41], [130, 212]], "right": [[60, 150]]}}

Each [start, end] is one contact in 0-based clip frames, start inclusive,
end exclusive (a Python slice); intervals are sorted and do not overlap.
A foot that is left out has no contacts. `fps` is the clip's frame rate.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..motion.filtering import butterworth_lowpass
from ..motion.fileio import refuse_unknown_fields, write_text_atomic
from ..chains.mapping import Mapping
from ..motion.source import SourceMotion, bridged

CONTACTS_FORMAT = "robot_retarget.contacts"
CONTACTS_VERSION = 1
SIDES = ("left", "right")
SPEED_CUTOFF_HZ = 6.0


class ContactsError(ValueError):
    """Contacts that cannot be used; the message names the file (or origin) and the field."""


@dataclass
class Contacts:
    """Per-foot contact flags: feet[side] is a bool array (F,), True while the foot is down."""

    feet: dict[str, np.ndarray]
    fps: float

    def __post_init__(self) -> None:
        self.feet = {side: np.asarray(flags, dtype=bool).reshape(-1) for side, flags in self.feet.items()}
        lengths = {len(flags) for flags in self.feet.values()}
        if len(lengths) > 1:
            raise ContactsError(f"contacts: feet have different frame counts {sorted(lengths)}")

    @property
    def frames(self) -> int:
        return len(next(iter(self.feet.values()))) if self.feet else 0

    def intervals(self, side: str) -> list[tuple[int, int]]:
        """[(start, end), ...] of one foot, end exclusive."""
        return flags_to_intervals(self.feet.get(side, np.zeros(self.frames, bool)))

    def sliced(self, start: int, end: int) -> "Contacts":
        """Frames [start, end) of every foot (a --frames range of the clip)."""
        return Contacts({side: flags[start:end] for side, flags in self.feet.items()}, self.fps)

    def to_dict(self) -> dict:
        return {"format": CONTACTS_FORMAT, "version": CONTACTS_VERSION, "fps": float(self.fps),
                "feet": {side: [list(i) for i in self.intervals(side)] for side in self.feet}}

    @classmethod
    def from_dict(cls, data, frames: int, origin: str = "<contacts>") -> "Contacts":
        """Validate a parsed file against a clip of `frames` frames."""
        if not isinstance(data, dict) or data.get("format") != CONTACTS_FORMAT:
            raise ContactsError(f"{origin}: not a Robot Retarget contacts file (format != {CONTACTS_FORMAT!r})")
        version = data.get("version")
        if not isinstance(version, int) or isinstance(version, bool) or not 1 <= version <= CONTACTS_VERSION:
            raise ContactsError(f"{origin}: contacts version {version!r} is not one this add-on reads")
        refuse_unknown_fields(data, ("format", "version", "fps", "feet"), ContactsError, origin)
        fps = data.get("fps")
        if isinstance(fps, bool) or not isinstance(fps, (int, float)) or not math.isfinite(fps) or fps <= 0:
            raise ContactsError(f"{origin}: fps: expected a positive number, got {fps!r}")
        feet = data.get("feet")
        if not isinstance(feet, dict):
            raise ContactsError(f"{origin}: feet: expected an object with 'left' and/or 'right'")
        flags = {}
        for side, spans in feet.items():
            if side not in SIDES:
                raise ContactsError(f"{origin}: feet: unknown foot {side!r} (use {' or '.join(SIDES)})")
            flags[side] = _intervals_to_flags(spans, frames, f"{origin}: feet.{side}")
        return cls(flags or {side: np.zeros(frames, bool) for side in SIDES}, float(fps))

    def save(self, path, overwrite: bool = False) -> Path:
        return write_text_atomic(path, json.dumps(self.to_dict(), indent=1) + "\n", overwrite=overwrite)

    @classmethod
    def load(cls, path, frames: int) -> "Contacts":
        """Read a contacts file for a clip of `frames` frames."""
        path = Path(path)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ContactsError(f"{path}: contacts file not found") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise ContactsError(f"{path}: cannot read contacts file ({exc})") from None
        except json.JSONDecodeError as exc:
            raise ContactsError(f"{path}: line {exc.lineno}: invalid JSON ({exc.msg})") from None
        return cls.from_dict(data, frames, str(path))


def contacts_option(value: str | None, clip_frames: int, start: int, end: int, fps: float):
    """`--contacts auto|off|FILE.json` for 0-based frames [start, end) of a clip of `clip_frames`
    frames at `fps`: "auto", "off", or the file's Contacts cut to the baked frames."""
    if value in (None, "off", "auto"):
        return value or "off"
    contacts = Contacts.load(Path(value), frames=clip_frames)
    if abs(contacts.fps - fps) > 1e-3 * fps:
        raise ContactsError(f"{value}: contacts at {contacts.fps:g} fps, but the clip runs at {fps:g} fps")
    return contacts.sliced(start, end)


def flags_to_intervals(flags: np.ndarray) -> list[tuple[int, int]]:
    """Runs of True in a bool array (F,) as [(start, end), ...], end exclusive."""
    padded = np.concatenate([[False], np.asarray(flags, bool), [False]])
    edges = np.flatnonzero(np.diff(padded.astype(np.int8)))
    return [(int(a), int(b)) for a, b in zip(edges[::2], edges[1::2])]


def close_gaps(flags: np.ndarray, frames: float) -> np.ndarray:
    """flags (F,) bool with every run of False shorter than `frames` between two runs of True set True."""
    out = np.array(flags, dtype=bool)
    for start, end in flags_to_intervals(~out):
        if 0 < start and end < len(out) and end - start < frames:
            out[start:end] = True
    return out


def _intervals_to_flags(spans, frames: int, where: str) -> np.ndarray:
    if not isinstance(spans, list):
        raise ContactsError(f"{where}: expected a list of [start, end] frame pairs")
    flags = np.zeros(frames, dtype=bool)
    last_end = 0
    for k, span in enumerate(spans):
        if (not isinstance(span, list) or len(span) != 2
                or not all(isinstance(v, int) and not isinstance(v, bool) for v in span)):
            raise ContactsError(f"{where}[{k}]: expected [start, end] whole frame numbers, got {span!r}")
        start, end = span
        if not 0 <= start < end:
            raise ContactsError(f"{where}[{k}]: [{start}, {end}] is empty or negative (end is exclusive)")
        if end > frames:
            raise ContactsError(f"{where}[{k}]: [{start}, {end}] runs past the clip's {frames} frames")
        if start < last_end:
            raise ContactsError(f"{where}[{k}]: [{start}, {end}] overlaps or precedes the interval before")
        flags[start:end] = True
        last_end = end
    return flags


# ------------------------------------------------------------------ detection ---

@dataclass
class DetectSettings:
    """Thresholds in leg lengths (height) and leg lengths per second (speed)."""

    height_on: float = 0.05  # a point may touch down this close to its ground level
    height_off: float = 0.08  # ... and lifts off above this
    speed_on: float = 0.15
    speed_off: float = 0.3
    median_s: float = 0.05  # median filter against flicker
    min_contact_s: float = 0.05  # shorter contacts are dropped
    min_gap_s: float = 0.05  # shorter gaps between two contacts are closed


@dataclass
class FootTrack:
    """The two points of a source foot that touch the ground, (F, 3) each, in clip units."""

    side: str
    heel: np.ndarray
    toe: np.ndarray
    leg_length: float = 1.0  # the leg's rest length, hip to toe tip, in the same units


@dataclass
class FootLandmarks:
    """Which source bones a foot's heel and toe are (indices), and the leg's rest length."""

    side: str
    ankle: int
    toe: int
    toe_is_tail: bool  # the toe is the bone's tail (an End Site), not its head
    leg_length: float

    def points(self, motion: SourceMotion) -> tuple[np.ndarray, np.ndarray]:
        """Heel and toe (F, 3) over the clip's frames."""
        return motion.heads[:, self.ankle], (motion.tails if self.toe_is_tail else motion.heads)[:, self.toe]


def foot_landmarks(motion: SourceMotion, mapping: Mapping) -> dict[str, FootLandmarks]:
    """Heel (the ankle landmark) and toe (the chain's end) of each sided leg chain."""
    feet = {}
    for chain in mapping.enabled_chains():
        if chain.role != "leg" or chain.side not in SIDES:
            continue
        try:
            path = motion.path(chain.source_base, chain.source_tips[0])
            ankle = motion.index(chain.source_landmarks[-1]) if chain.source_landmarks else path[-1]
        except (KeyError, IndexError) as exc:
            raise ContactsError(f"chain {chain.name!r}: {exc.args[0] if exc.args else exc}") from None
        rest = np.concatenate([motion.rest_heads[path], motion.rest_tails[path[-1:]]])
        length = float(np.linalg.norm(np.diff(rest, axis=0), axis=1).sum())
        feet[chain.side] = FootLandmarks(chain.side, ankle, path[-1], bool(chain.source_tip_tail), max(length, 1e-9))
    return feet


def foot_tracks(motion: SourceMotion, mapping: Mapping) -> dict[str, FootTrack]:
    """Heel and toe tracks of each sided leg chain (see foot_landmarks)."""
    return {side: FootTrack(side, *foot.points(motion), foot.leg_length)
            for side, foot in foot_landmarks(motion, mapping).items()}


def detect_contacts(motion: SourceMotion, mapping: Mapping,
                    settings: DetectSettings | None = None) -> Contacts:
    """Contacts of every sided leg of `mapping` (raises ContactsError without legs). Frames with
    missing (NaN) values are read bridged: one NaN frame left no foot on the ground in the whole clip
    (the speed filter spreads it), and `--frames` ranges, cut from the whole clip's contacts, planted none."""
    settings = settings or DetectSettings()
    try:
        motion, _ = bridged(motion)
    except ValueError as exc:
        raise ContactsError(str(exc)) from None
    tracks = foot_tracks(motion, mapping)
    if not tracks:
        raise ContactsError(f"source {motion.name!r}: no left or right leg chain is mapped, "
                            "so there are no feet to detect contacts for")
    fps = float(motion.fps)
    leg = float(np.mean([t.leg_length for t in tracks.values()]))
    speeds = {(s, p): _speed(getattr(t, p), fps) / leg for s, t in tracks.items() for p in ("heel", "toe")}
    levels = _ground_levels(tracks, speeds, settings)
    feet = {}
    for side, track in tracks.items():
        down = np.zeros(motion.frames, dtype=bool)
        for point in ("heel", "toe"):
            height = (getattr(track, point)[:, 2] - levels[point]) / leg
            down |= _hysteresis(height, speeds[side, point], settings)
        feet[side] = _clean(down, fps, settings)
    return Contacts(feet, fps)


def _speed(points: np.ndarray, fps: float) -> np.ndarray:
    """Speed (F,) of a point track (F, 3) in units per second, from central differences
    of the track low-passed at SPEED_CUTOFF_HZ (mocap jitter would read as motion)."""
    if len(points) < 2:
        return np.zeros(len(points))
    smooth = butterworth_lowpass(points, fps, SPEED_CUTOFF_HZ, order=2)
    return np.linalg.norm(np.gradient(smooth, axis=0), axis=1) * fps


def _ground_levels(tracks: dict[str, FootTrack], speeds: dict, settings: DetectSettings) -> dict[str, float]:
    """Height of heel and toe when they rest on the ground, shared by both feet.

    A low percentile of the heights while the point is slow; the lower foot
    wins, so a foot that is never put down (hopping on the other) still
    gets the real ground.
    """
    levels = {}
    for point in ("heel", "toe"):
        candidates = []
        for side, track in tracks.items():
            z = getattr(track, point)[:, 2]
            slow = speeds[side, point] < settings.speed_on
            candidates.append(np.percentile(z[slow] if slow.sum() >= 10 else z, 15))
        levels[point] = float(min(candidates))
    return levels


def _hysteresis(height: np.ndarray, speed: np.ndarray, settings: DetectSettings) -> np.ndarray:
    """Down from when a point is low and slow until it is high or fast."""
    enter = (height < settings.height_on) & (speed < settings.speed_on)
    leave = (height > settings.height_off) | (speed > settings.speed_off)
    out = np.zeros(len(height), dtype=bool)
    state = False
    for f in range(len(height)):
        state = (not leave[f]) if state else bool(enter[f])
        out[f] = state
    return out


def _clean(flags: np.ndarray, fps: float, settings: DetectSettings) -> np.ndarray:
    """Median filter, then close short gaps and drop short contacts."""
    from scipy.ndimage import median_filter  # here: SIDES and the contact files need no scipy

    window = max(1, int(round(settings.median_s * fps)) | 1)
    out = median_filter(flags.astype(np.uint8), size=window, mode="nearest").astype(bool)
    out = close_gaps(out, settings.min_gap_s * fps)
    for start, end in flags_to_intervals(out):
        if end - start < settings.min_contact_s * fps:
            out[start:end] = False
    return out


def range_contacts(planted, motion: SourceMotion, mapping: Mapping, start: int, end: int):
    """`--contacts auto` on frames [start, end) of a clip: the whole clip's contacts cut to them, as
    auto-map reads the whole clip, so where a range begins does not move its feet. Detected on the
    range, a percentile over it set the ground: the walk from frame 4 began a left contact 7 frames
    earlier and its H1 knee baked 0.46 rad apart (docs/history/retarget.md, session 16)."""
    if not isinstance(planted, str) or planted != "auto" or (start, end) == (0, motion.frames):
        return planted
    try:
        whole: Contacts = detect_contacts(motion, mapping)
    except ContactsError:
        return planted  # the bake says why its feet were not planted
    return whole.sliced(start, end)
