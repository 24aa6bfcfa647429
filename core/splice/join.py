"""Splice robot clips where they are most alike, with a generated transition.

Clip A is joined to clip B at the pair of postures (one in A's end
preparatory movement, one in B's start preparatory movement) that are most
alike; what follows in A and what precedes in B is dropped and a transition
generated in joint space fills the gap. The main movements stay whole and keep
their tempo, instead of every clip returning to a home pose. Three or more
clips are joined pairwise in order. Periods come from core.splice.detect.

Root motion across a join: B is moved rigidly, a turn about the vertical and
a shift, so that its root continues from where A's ends: the robot carries
on from where it stands and in the direction it faces, instead of jumping back
to where B was recorded. Heights and tilts stay B's own (each clip was
grounded by its own retarget). During the transition the root follows a cubic
from A's position and velocity to B's moved ones and turns by a slerp.

Arrays are frames first; joint positions in radians, roots in metres with
quaternions w first, times in seconds from each clip's first frame.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

import numpy as np

from .detect import (Clip, DetectSettings, Periods, SpliceError, check_clips, clip_periods,
                            interval_frames)
from ..model.transforms import matrix_to_quat, quat_continuous, quat_to_matrix

POLICIES = ("shortest", "similar")
CRITERIA = ("integrated", "max_joint")
SPEED_SOURCES = ("a", "b", "both")
SPEED_STATISTICS = ("mean", "median", "mode")
FALLBACK_SPEED = 1.0  # rad/s, when no clip has a moving main movement to measure
STRETCH_STEP = 1.25   # a transition whose seams jump is lengthened by this factor per try

@dataclass
class SpliceSettings:
    """Join criteria, policy and transition speed; ranges as the animators' tool offers them."""

    threshold_deg: float = 15.0      # integrated angle difference allowed (5-30)
    criterion: str = "integrated"    # or 'max_joint': the largest single-joint difference
    max_joint_deg: float = 5.0       # threshold of the 'max_joint' criterion
    policy: str = "shortest"         # least preparatory time kept (tempo), or 'similar'
    match_direction: bool = False    # every joint moving in both postures moves the same way
    match_speed: bool = False        # integrated drive speeds within speed_tolerance
    speed_tolerance: float = 0.3     # relative
    interval_s: float = 0.2          # drive direction/speed from the change over this interval
    still_deg_s: float = 2.0         # slower joints count as still
    speed_source: str = "both"       # whose main movement sets the transition speed: 'a', 'b', 'both'
    speed_statistic: str = "median"  # 'mean', 'median' or 'mode' of the joint speeds
    speed_rad_s: float | None = None  # given speed, overrides the statistic
    max_stretch: float = 4.0         # a transition may grow this much to avoid velocity jumps
    continue_root: bool = True       # B's root continues from A's (else as recorded)
    max_candidates: int = 240        # postures compared per side (evenly thinned beyond)
    detect: DetectSettings = field(default_factory=DetectSettings)

    def validate(self) -> None:
        if not 5.0 <= self.threshold_deg <= 30.0:
            raise SpliceError(f"threshold_deg {self.threshold_deg:g} is outside 5-30 degrees")
        for name, allowed in (("criterion", CRITERIA), ("policy", POLICIES),
                              ("speed_source", SPEED_SOURCES), ("speed_statistic", SPEED_STATISTICS)):
            if getattr(self, name) not in allowed:
                raise SpliceError(f"{name} {getattr(self, name)!r}: expected one of {', '.join(allowed)}")
        if self.speed_rad_s is not None and not (np.isfinite(self.speed_rad_s) and self.speed_rad_s > 0):
            raise SpliceError(f"speed_rad_s must be a positive speed, got {self.speed_rad_s!r}")
        checks = {"max_joint_deg": self.max_joint_deg > 0, "speed_tolerance": self.speed_tolerance >= 0,
                  "interval_s": self.interval_s > 0, "still_deg_s": self.still_deg_s >= 0,
                  "max_stretch": self.max_stretch >= 1, "max_candidates": self.max_candidates >= 2}
        for name, ok in checks.items():
            if not ok:
                raise SpliceError(f"{name} has an invalid value {getattr(self, name)!r}")
        self.detect.validate()

    @property
    def threshold(self) -> float:
        return self.threshold_deg if self.criterion == "integrated" else self.max_joint_deg


@dataclass
class PairTable:
    """Every candidate pair: A's end-preparatory postures (rows) x B's start-preparatory ones."""

    a_frames: np.ndarray        # (P,) clip frames of A
    b_frames: np.ndarray        # (Q,) clip frames of B
    integrated_deg: np.ndarray  # (P, Q) sum over joints of |angle_A - angle_B|
    max_joint_deg: np.ndarray   # (P, Q) largest single-joint difference
    worst_joint: np.ndarray     # (P, Q) column of that joint
    direction_ok: np.ndarray    # (P, Q) no joint drives the opposite way
    speed_ok: np.ndarray        # (P, Q) integrated drive speeds close
    passes: np.ndarray          # (P, Q) every switched-on criterion met

    def measure(self, criterion: str) -> np.ndarray:
        return self.integrated_deg if criterion == "integrated" else self.max_joint_deg


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


@dataclass
class JoinResult:
    """One join, as reported to the animator (times in each clip's own seconds)."""

    a_clip: str
    b_clip: str
    a_time_s: float
    b_time_s: float
    angle_difference_deg: float      # integrated over joints
    max_joint_difference_deg: float
    worst_joint: str
    transition_s: float
    discarded_s: float               # of A after the join plus of B before it
    kept_preparation_s: float        # preparatory time still played around the join
    time_saved_s: float              # against playing both whole with a cut through the home pose
    criteria_met: bool
    speed_rad_s: float
    velocity_jump_rad_s: float
    allowed_jump_rad_s: float
    out_time_s: float = 0.0          # where the transition starts in the spliced result
    message: str = ""

    def to_dict(self) -> dict:
        return {k: (float(v) if isinstance(v, (float, np.floating)) else v) for k, v in asdict(self).items()}


@dataclass
class Piece:
    """A stretch of the result: clip frames first..last (inclusive), or a transition's 0..n."""

    kind: str       # 'clip' or 'transition'
    index: int      # clip index, or join index for a transition
    first: int
    last: int
    out_first: int  # result frame of `first` (a transition shares its ends with the clips)


@dataclass
class RootMove:
    """Rigid move applied to a clip's root: p' = R p + t, R' = R Rclip."""

    rotation: np.ndarray = field(default_factory=lambda: np.eye(3))
    translation: np.ndarray = field(default_factory=lambda: np.zeros(3))

    def apply(self, position: np.ndarray, rotation: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return position @ self.rotation.T + self.translation, self.rotation @ rotation

    @property
    def is_identity(self) -> bool:
        return bool(np.allclose(self.rotation, np.eye(3), atol=1e-9) and np.allclose(self.translation, 0, atol=1e-6))


@dataclass
class SpliceResult:
    """The spliced motion (frames first) and how it was made."""

    joint_names: list[str]
    clip_names: list[str]
    q: np.ndarray
    fps: float
    joins: list[JoinResult]
    pieces: list[Piece]
    transitions: list[Transition]
    periods: list[Periods]
    root_moves: list[RootMove]
    root_position: np.ndarray | None = None
    root_quaternion: np.ndarray | None = None
    warnings: list[str] = field(default_factory=list)

    @property
    def time(self) -> np.ndarray:
        return np.arange(len(self.q)) / self.fps

    def report(self) -> dict:
        clips = [dict(name=name, **p.to_dict(self.fps)) for name, p in zip(self.clip_names, self.periods)]
        return {"frames": int(len(self.q)), "fps": float(self.fps), "duration_s": float(len(self.q) / self.fps),
                "joins": [j.to_dict() for j in self.joins], "clips": clips, "warnings": list(self.warnings)}


# --------------------------------------------------------------- the pairs ---

def _thinned(frames: np.ndarray, limit: int) -> np.ndarray:
    if len(frames) <= limit:
        return frames
    return np.unique(np.round(np.linspace(frames[0], frames[-1], limit)).astype(int))


def _drive(q: np.ndarray, frames: np.ndarray, fps: float, interval_s: float, ahead: bool) -> np.ndarray:
    """(P, n) rad/s over the interval: arriving at A's postures (behind), leaving B's (ahead)."""
    h = interval_frames(fps, interval_s)
    other = np.minimum(frames + h, len(q) - 1) if ahead else np.maximum(frames - h, 0)
    span = np.abs(other - frames)
    change = (q[other] - q[frames]) if ahead else (q[frames] - q[other])
    return change * fps / np.maximum(span, 1)[:, None]


def pair_table(a: Clip, pa: Periods, b: Clip, pb: Periods, settings: SpliceSettings) -> PairTable:
    """Compare every posture of A's end preparatory movement with every one of B's start."""
    af = _thinned(pa.end_frames(a.frames), settings.max_candidates)
    bf = _thinned(pb.start_frames(), settings.max_candidates)
    qa, qb = np.asarray(a.q, float), np.asarray(b.q, float)
    diff = np.abs(qa[af][:, None, :] - qb[bf][None, :, :])
    integrated, largest = np.degrees(diff.sum(axis=-1)), np.degrees(diff.max(axis=-1))
    va = _drive(qa, af, a.fps, settings.interval_s, ahead=False)
    vb = _drive(qb, bf, b.fps, settings.interval_s, ahead=True)
    still = np.radians(settings.still_deg_s)
    sa, sb = np.sign(va) * (np.abs(va) >= still), np.sign(vb) * (np.abs(vb) >= still)
    direction_ok = ~((sa[:, None, :] * sb[None, :, :]) < 0).any(axis=-1)
    speed_a, speed_b = np.abs(va).sum(axis=1)[:, None], np.abs(vb).sum(axis=1)[None, :]
    speed_ok = np.abs(speed_a - speed_b) <= settings.speed_tolerance * np.maximum(np.maximum(speed_a, speed_b), still)
    table = PairTable(af, bf, integrated, largest, diff.argmax(axis=-1), direction_ok, speed_ok,
                      np.zeros(integrated.shape, dtype=bool))
    table.passes = table.measure(settings.criterion) <= settings.threshold + 1e-9
    if settings.match_direction:
        table.passes &= direction_ok
    if settings.match_speed:
        table.passes &= speed_ok
    return table


def choose_pair(table: PairTable, a: Clip, pa: Periods, b: Clip, pb: Periods,
                settings: SpliceSettings) -> tuple[int, int, bool]:
    """(row, column, criteria met): by policy among passing pairs, else the closest pair."""
    measure = table.measure(settings.criterion)
    kept = (table.a_frames[:, None] - pa.main_end) / a.fps + (pb.main_start - table.b_frames[None, :]) / b.fps
    if table.passes.any():
        primary, secondary = (kept, measure) if settings.policy == "shortest" else (measure, kept)
        primary = np.where(table.passes, primary, np.inf)
        met = True
    else:
        primary, secondary, met = measure, kept, False
    flat = int(np.lexsort((secondary.ravel(), np.round(primary.ravel(), 9)))[0])
    i, j = np.unravel_index(flat, measure.shape)
    return int(i), int(j), met


def _fallback_message(table: PairTable, i: int, j: int, a: Clip, b: Clip, settings: SpliceSettings) -> str:
    """Say that no pair passed, what was chosen, and how to get a pair that does."""
    conditions = [f"{settings.criterion} difference <= {settings.threshold:g} deg"]
    conditions += ["same drive direction"] * settings.match_direction + ["close drive speed"] * settings.match_speed
    window_a = f"{table.a_frames[0] / a.fps:.2f}-{table.a_frames[-1] / a.fps:.2f} s"
    window_b = f"{table.b_frames[0] / b.fps:.2f}-{table.b_frames[-1] / b.fps:.2f} s"
    chosen = f"{a.name} {table.a_frames[i] / a.fps:.2f} s, {b.name} {table.b_frames[j] / b.fps:.2f} s"
    return (f"no posture pair of clip {a.name!r} (end, {window_a}) and clip {b.name!r} (start, {window_b}) "
            f"meets {' and '.join(conditions)}; joined at the closest pair ({chosen}, "
            f"{table.integrated_deg[i, j]:.1f} deg integrated). "
            f"Widen the preparatory windows (marker main_end earlier in {a.name!r}, main_start later in "
            f"{b.name!r}), raise the threshold, or give both clips a shared home posture.")


# -------------------------------------------------------------- transition ---

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


def _edge_velocity(q: np.ndarray, frame: int, fps: float, arriving: bool) -> np.ndarray:
    """Frame-to-frame velocity (rad/s) arriving at `frame` (A) or leaving it (B); zero at a clip edge."""
    other = frame - 1 if arriving else frame + 1
    if not 0 <= other < len(q):
        return np.zeros(q.shape[1:])
    return (q[frame] - q[other]) * fps if arriving else (q[other] - q[frame]) * fps


def _hermite(p0: np.ndarray, v0: np.ndarray, p1: np.ndarray, v1: np.ndarray, n: int, fps: float) -> np.ndarray:
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


def make_transition(qa: np.ndarray, a_frame: int, qb: np.ndarray, b_frame: int, fps: float, speed: float,
                    settings: SpliceSettings, lower=None, upper=None, velocity=None) -> Transition:
    """Transition from A's posture `a_frame` to B's `b_frame` at the joint speed `speed`.

    Length: the largest joint change over the speed (at least 1.5 times its
    velocity-limited time, the cubic's peak), in whole frames; zero frames
    when the postures coincide (B continues straight from A's posture). The
    clips' end velocities are blended in so the seams do not jump; while they
    still jump more than the clips' own frame-to-frame changes, the transition
    is lengthened (up to max_stretch). Values are clipped into the joint limits.
    """
    p0, p1 = qa[a_frame], qb[b_frame]
    v0, v1 = _edge_velocity(qa, a_frame, fps, True), _edge_velocity(qb, b_frame, fps, False)
    span = np.abs(p1 - p0)
    seconds = span.max() / speed
    if velocity is not None:
        seconds = max(seconds, 1.5 * float(np.max(span / np.asarray(velocity, float))))
    shortest = int(round(seconds * fps))
    longest = max(shortest, 1) * settings.max_stretch
    allowed, best, n = _own_jump(qa, qb, fps), None, shortest
    while True:
        path = _hermite(p0, v0, p1, v1, n, fps) if n > 0 else p0[None].copy()
        if lower is not None or upper is not None:
            path = np.clip(path, lower if lower is not None else -np.inf, upper if upper is not None else np.inf)
        jump = _seam_jump(qa, a_frame, qb, b_frame, path, fps)
        if best is None or jump < best[1]:
            best = (path, jump)
        if jump <= allowed or n >= longest:
            break
        n = max(n + 1, math.ceil(n * STRETCH_STEP))
    return Transition(best[0], fps, speed, best[1], allowed)


def _home_seconds(a: Clip, b: Clip, speed: float) -> float:
    """A plain cut through the home pose: A played out, then straight to B's first posture."""
    return float(np.abs(np.asarray(b.q, float)[0] - np.asarray(a.q, float)[-1]).max() / speed)


def join_clips(a: Clip, pa: Periods, b: Clip, pb: Periods, settings: SpliceSettings, names: list[str],
               lower=None, upper=None, velocity=None) -> tuple[JoinResult, Transition, int, int]:
    """Choose the pair, build the transition, and describe the join; returns A's and B's join frames."""
    table = pair_table(a, pa, b, pb, settings)
    i, j, met = choose_pair(table, a, pa, b, pb, settings)
    a_frame, b_frame = int(table.a_frames[i]), int(table.b_frames[j])
    speed = representative_speed(a, pa, b, pb, settings)
    message = "" if met else _fallback_message(table, i, j, a, b, settings)
    if speed is None:
        speed = FALLBACK_SPEED
        message = (message + " " if message else "") + (
            f"the main movements of {a.name!r} and {b.name!r} do not move: transition at {FALLBACK_SPEED:g} rad/s")
    qa, qb = np.asarray(a.q, float), np.asarray(b.q, float)
    transition = make_transition(qa, a_frame, qb, b_frame, a.fps, speed, settings, lower, upper, velocity)
    discarded = (a.frames - 1 - a_frame) / a.fps + b_frame / b.fps
    kept = (a_frame - pa.main_end) / a.fps + (pb.main_start - b_frame) / b.fps
    result = JoinResult(
        a.name, b.name, a_frame / a.fps, b_frame / b.fps, float(table.integrated_deg[i, j]),
        float(table.max_joint_deg[i, j]), names[int(table.worst_joint[i, j])], transition.duration_s,
        discarded, kept, discarded + _home_seconds(a, b, speed) - transition.duration_s, met, speed,
        transition.velocity_jump_rad_s, transition.allowed_jump_rad_s, message=message)
    return result, transition, a_frame, b_frame


# -------------------------------------------------------------- root motion ---

def _yaw(rotation: np.ndarray) -> float:
    return float(math.atan2(rotation[1, 0], rotation[0, 0]))


def _turn(angle: float) -> np.ndarray:
    c, s = math.cos(angle), math.sin(angle)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def _slerp(q0: np.ndarray, q1: np.ndarray, s: np.ndarray) -> np.ndarray:
    """(len(s), 4) wxyz along the shorter arc."""
    q1 = -q1 if np.dot(q0, q1) < 0 else q1
    dot = min(float(np.dot(q0, q1)), 1.0)
    if dot > 0.9995:
        out = q0 + s[:, None] * (q1 - q0)
    else:
        theta = math.acos(dot)
        out = (np.sin((1 - s) * theta)[:, None] * q0 + np.sin(s * theta)[:, None] * q1) / math.sin(theta)
    return out / np.linalg.norm(out, axis=1, keepdims=True)


def _root_join(a_pos: np.ndarray, a_rot: np.ndarray, a_frame: int, b: Clip, b_frame: int, n: int,
               continue_root: bool) -> tuple[RootMove, np.ndarray, np.ndarray]:
    """B's root move and the transition's root (positions (n+1, 3), quaternions (n+1, 4))."""
    fps = b.fps
    b_pos, b_rot = np.asarray(b.root_position, float), quat_to_matrix(b.root_quaternion)
    v0 = _edge_velocity(a_pos, a_frame, fps, True)
    move = RootMove()
    if continue_root:
        turn = _turn(_yaw(a_rot[a_frame]) - _yaw(b_rot[b_frame]))
        v1 = turn @ _edge_velocity(b_pos, b_frame, fps, False)
        anchor = a_pos[a_frame] + (n / fps) * (v0 + v1) / 2
        anchor[2] = b_pos[b_frame, 2]
        move = RootMove(turn, anchor - turn @ b_pos[b_frame])
    moved_pos, moved_rot = move.apply(b_pos, b_rot)
    quats = matrix_to_quat(np.stack([a_rot[a_frame], moved_rot[b_frame]]))
    if n == 0:  # merged postures: B's root continues from A's
        return move, a_pos[a_frame][None].copy(), quats[:1]
    v1 = _edge_velocity(moved_pos, b_frame, fps, False)
    position = _hermite(a_pos[a_frame], v0, moved_pos[b_frame], v1, n, fps)
    s = np.arange(n + 1) / n
    return move, position, _slerp(quats[0], quats[1], 3 * s ** 2 - 2 * s ** 3)


# ------------------------------------------------------------------ splice ---

def splice(clips: list[Clip], settings: SpliceSettings | None = None, joint_names: list[str] | None = None,
           lower=None, upper=None, velocity=None) -> SpliceResult:
    """Join clips pairwise in order; lower/upper/velocity are the robot's joint limits (n,) if known."""
    settings = settings or SpliceSettings()
    settings.validate()
    names = check_clips(clips, joint_names)
    periods = [clip_periods(clip, settings.detect) for clip in clips]
    joins = [join_clips(clips[k], periods[k], clips[k + 1], periods[k + 1], settings, names, lower, upper, velocity)
             for k in range(len(clips) - 1)]
    return _assemble(clips, periods, joins, settings, names)


def _kept_ranges(clips: list[Clip], joins: list) -> list[tuple[int, int]]:
    """(first, last) clip frames kept; B starts after its join posture when it merged with A's."""
    starts = [0] + [b_frame + (len(t.q) == 1) for _, t, _, b_frame in joins]
    ends = [a_frame for _, _, a_frame, _ in joins] + [clips[-1].frames - 1]
    return [(min(first, last), last) for first, last in zip(starts, ends)]


def _assemble(clips: list[Clip], periods: list[Periods], joins: list, settings: SpliceSettings,
              names: list[str]) -> SpliceResult:
    """Concatenate the kept parts and transitions; carry each clip's root on from the one before."""
    fps, with_root = clips[0].fps, clips[0].has_root
    q_parts, pos_parts, rot_parts, pieces, moves, out = [], [], [], [], [RootMove()], 0
    for k, (first, last) in enumerate(_kept_ranges(clips, joins)):
        clip = clips[k]
        pieces.append(Piece("clip", k, first, last, out))
        q_parts.append(np.asarray(clip.q, float)[first:last + 1])
        if with_root:
            pos, rot = moves[k].apply(np.asarray(clip.root_position, float), quat_to_matrix(clip.root_quaternion))
            pos_parts.append(pos[first:last + 1])
            rot_parts.append(rot[first:last + 1])
        out += last - first + 1
        if k == len(joins):
            break
        join, transition, a_frame, b_frame = joins[k]
        n = len(transition.q) - 1
        if n > 0:
            pieces.append(Piece("transition", k, 0, n, out - 1))
        join.out_time_s = (out - 1) / fps
        q_parts.append(transition.q[1:-1])
        if with_root:
            move, t_pos, t_quat = _root_join(pos, rot, a_frame, clips[k + 1], b_frame, n, settings.continue_root)
            transition.root_position, transition.root_quaternion = t_pos, t_quat
            pos_parts.append(t_pos[1:-1])
            rot_parts.append(quat_to_matrix(t_quat[1:-1]))
        moves.append(move if with_root else RootMove())
        out += max(n - 1, 0)
    result = SpliceResult(names, [c.name for c in clips], np.concatenate(q_parts), fps, [j[0] for j in joins],
                          pieces, [j[1] for j in joins], periods, moves,
                          warnings=[j[0].message for j in joins if j[0].message])
    if with_root:
        result.root_position = np.concatenate(pos_parts)
        result.root_quaternion = quat_continuous(matrix_to_quat(np.concatenate(rot_parts)))
    return result
