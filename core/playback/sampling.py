"""Robot playback at the control cycle: resampling and limit checks.

A baked action has keys at the clip's frame rate; a controller wants samples
at its own cycle. Sample k sits at t_k = k * period, computed from the
integer tick k (never by adding periods up), so an hour at 500 Hz does not
drift. Between keys joints follow a cubic Hermite with continuous velocity:
Catmull-Rom tangents (accelerations close to a C2 spline's), switched to
monotone PCHIP tangents around any segment that would overshoot a limit
(PCHIP never leaves its two keys). The root position is the same cubic, the
root orientation squad (spherical cubic) between the key quaternions.

Limits are checked on the exact samples that get written, by finite
differences: velocity per control interval (can the actuator finish this
move in one cycle?), acceleration per interior sample. Retime stretches the
too-fast stretches of the clip (with short ramps so the stretch itself adds
no jerk) until every check passes on the resampled result.

Units: seconds, metres, radians (metres for prismatic joints); quaternions
w, x, y, z. Arrays are frames first.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from ..motion.bake_csv import BakeTable
from ..motion.filtering import rate_limit
from ..model.kinematics import KinematicTree
from ..model.transforms import quat_continuous

DEFAULT_PERIOD_S = 0.01
UNITS = ("rad", "deg")
CLIP_REPORT_RAD = 1e-6    # keys outside limits by less than this are float32 noise, not news
LIMIT_RTOL = 1e-9         # relative slack of the velocity/acceleration checks (float rounding)
FLOAT32_KEY = 1e-6        # rad or m: two float32 keys of an action (up to 2.4e-7 each near pi) may differ this much
TICK_EPS = 1e-9           # a duration within this many periods of a whole tick keeps that tick
_FALLBACK_PASSES = 8      # rounds of switching overshooting segments to monotone tangents
_ROUNDING = 1024 * np.finfo(float).eps  # relative error bound of a sampled cubic (and of its hull)


class PlaybackError(ValueError):
    """Settings or motion that cannot be exported; the message names the field or joint."""


@dataclass
class JointLimits:
    """Per joint (URDF movable order): position (rad|m), velocity (/s), acceleration (/s²); inf = none."""

    joint_names: list[str]
    lower: np.ndarray
    upper: np.ndarray
    velocity: np.ndarray
    acceleration: np.ndarray
    prismatic: np.ndarray  # (n,) bool: metres instead of radians

    @classmethod
    def from_tree(cls, tree: KinematicTree, acceleration: float | None = None,
                  joint_acceleration: dict[str, float] | None = None) -> "JointLimits":
        """URDF limits plus the user's acceleration limits (one for all, then per joint)."""
        n = tree.dof
        accel = np.full(n, np.inf if acceleration is None else float(acceleration))
        index = {name: i for i, name in enumerate(tree.joint_names)}
        for name, value in (joint_acceleration or {}).items():
            if name not in index:
                raise PlaybackError(f"acceleration limit for joint {name!r}: robot {tree.robot.name!r} "
                                    f"has no movable joint of that name")
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise PlaybackError(f"joint {name!r}: acceleration limit {value!r} is not a number")
            accel[index[name]] = float(value)
        if np.any(~(accel > 0)):
            bad = tree.joint_names[int(np.flatnonzero(~(accel > 0))[0])]
            raise PlaybackError(f"joint {bad!r}: acceleration limit must be positive")
        prismatic = np.array([j.type == "prismatic" for j in tree.robot.movable_joints], dtype=bool)
        return cls(list(tree.joint_names), tree.lower.copy(), tree.upper.copy(), tree.velocity.copy(),
                   accel, prismatic)

    def to_list(self, degrees: bool = False) -> list[dict]:
        """JSON rows for metadata, in the file's units (degrees only for revolute joints)."""
        rows = []
        for i, name in enumerate(self.joint_names):
            scale = 1.0 if (self.prismatic[i] or not degrees) else 180.0 / math.pi
            value = lambda a: float(a[i]) * scale if np.isfinite(a[i]) else None  # noqa: E731
            rows.append({"joint": name, "type": "prismatic" if self.prismatic[i] else "revolute",
                         "unit": joint_unit(bool(self.prismatic[i]), degrees), "lower": value(self.lower),
                         "upper": value(self.upper), "velocity": value(self.velocity),
                         "acceleration": value(self.acceleration)})
        return rows


def joint_unit(prismatic: bool, degrees: bool = False) -> str:
    return "m" if prismatic else ("deg" if degrees else "rad")


@dataclass
class PlaybackTrack:
    """Samples at t_k = k * period_s: root (N,3) m, root quaternion (N,4) wxyz, q (N,n) rad|m."""

    joint_names: list[str]
    period_s: float
    root_position: np.ndarray
    root_quaternion: np.ndarray
    q: np.ndarray
    prismatic: np.ndarray | None = None  # (n,) bool; None: all revolute

    @property
    def samples(self) -> int:
        return len(self.q)

    @property
    def time_s(self) -> np.ndarray:
        return tick_times(self.samples, self.period_s)

    @property
    def rate_hz(self) -> float:
        return 1.0 / self.period_s

    @property
    def duration_s(self) -> float:
        return (self.samples - 1) * self.period_s

    def is_prismatic(self) -> np.ndarray:
        n = len(self.joint_names)
        return np.zeros(n, dtype=bool) if self.prismatic is None else np.asarray(self.prismatic, dtype=bool)


@dataclass
class LimitViolation:
    """Consecutive samples of one joint over one limit: where, how far, against what."""

    joint: str
    kind: str          # "position" | "velocity" | "acceleration"
    time_s: float      # first sample (velocity: start of the control interval)
    end_time_s: float  # last sample of the run
    samples: int
    value: float       # the worst value in the run (signed), SI units
    limit: float       # the limit it broke (signed like value)
    unit: str

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    def describe(self) -> str:
        span = f"{self.time_s:.4f} s" if self.samples == 1 else \
            f"{self.time_s:.4f}-{self.end_time_s:.4f} s ({self.samples} samples)"
        return (f"joint {self.joint!r}: {self.kind} {self.value:.4g} {self.unit} beyond "
                f"{self.limit:.4g} {self.unit} at {span}")


# ------------------------------------------------------------- sampling ---

def tick_times(count: int, period_s: float) -> np.ndarray:
    """t_k = k * period for k = 0..count-1, each from its integer k (no accumulation)."""
    return np.arange(count, dtype=np.float64) * float(period_s)


def tick_count(duration_s: float, period_s: float) -> int:
    """Samples whose tick time lies inside [0, duration]."""
    return int(math.floor(duration_s / period_s + TICK_EPS)) + 1


def sample_derivatives(q: np.ndarray, period_s: float) -> tuple[np.ndarray, np.ndarray]:
    """Velocity (central differences, one-sided at the ends) and acceleration (second
    differences, ends copy their neighbour) of samples q (N, n): consistent with q by construction."""
    q = np.asarray(q, dtype=float)
    if len(q) < 2:
        return np.zeros_like(q), np.zeros_like(q)
    vel = np.gradient(q, period_s, axis=0)
    acc = np.zeros_like(q)
    if len(q) >= 3:
        acc[1:-1] = np.diff(q, 2, axis=0) / period_s ** 2
        acc[0], acc[-1] = acc[1], acc[-2]
    return vel, acc


def _relative_times(table: BakeTable) -> np.ndarray:
    time = np.asarray(table.time, dtype=float).reshape(-1)
    if len(time) == 0:
        raise PlaybackError("the motion has no keys")
    if not np.all(np.isfinite(time)) or np.any(np.diff(time) <= 0):
        bad = int(np.flatnonzero(~(np.diff(time) > 0))[0]) + 1 if len(time) > 1 else 0
        raise PlaybackError(f"key times must increase (key {bad} at {float(time[bad])!r} s does not)")
    return time - time[0]


def _hermite(times: np.ndarray, values: np.ndarray, at: np.ndarray, tangents=None) -> np.ndarray:
    """C1 cubic Hermite through the keys (frames first), Catmull-Rom tangents by default."""
    if len(times) == 1:
        return np.repeat(values[:1], len(at), axis=0)
    if tangents is None:
        tangents = np.gradient(values, times, axis=0)
    from scipy.interpolate import CubicHermiteSpline  # here: the formats and flags need no scipy (~0.2 s)

    return CubicHermiteSpline(times, values, tangents, axis=0)(at)


def joint_samples(times: np.ndarray, keys: np.ndarray, at: np.ndarray, lower: np.ndarray,
                  upper: np.ndarray) -> np.ndarray:
    """Joints at times `at`: C1 cubic through the keys that never leaves [lower, upper]."""
    return JointCurves(times, keys, at, lower, upper).samples()


class JointCurves:
    """The joints' C1 cubics through their keys (frames first), to be sampled at times `at`.

    Catmull-Rom tangents keep accelerations low (close to a C2 spline); around
    any segment whose samples would leave the limits the tangents switch to
    monotone PCHIP ones, which never overshoot their keys. A segment's cubic
    stays inside the hull of its Bézier control points and depends only on its
    two keys and tangents, so only the joints and segments whose hull reaches
    a limit are sampled to find the overshoots: the tangents (and every sample)
    are bit for bit those of sampling everything each pass, at a fraction of
    the cost (retime builds these curves many times).
    """

    def __init__(self, times: np.ndarray, keys: np.ndarray, at: np.ndarray, lower: np.ndarray,
                 upper: np.ndarray):
        n = np.shape(keys)[1]
        self.times, self.at = times, at
        self.lower, self.upper = (np.broadcast_to(np.asarray(b, dtype=float), (n,)) for b in (lower, upper))
        self.keys = np.clip(keys, self.lower, self.upper)
        self.segment = np.clip(np.searchsorted(times, at, side="right") - 1, 0, max(len(times) - 2, 0))
        single = len(times) == 1
        self.tangents = np.zeros_like(self.keys) if single else np.gradient(self.keys, times, axis=0)
        self.settled = single or self._settle()  # False: some samples still overshoot (and get clipped)

    def samples(self, rows: np.ndarray | None = None) -> np.ndarray:
        """The samples at at[rows] (all by default), clipped to the limits."""
        if len(self.times) == 1:
            return np.repeat(self.keys[:1], len(self.at) if rows is None else len(rows), axis=0)
        q = _hermite(self.times, self.keys, self.at, self.tangents) if rows is None else self._evaluate(rows)
        return np.clip(q, self.lower, self.upper, out=q)

    def controls(self) -> tuple[np.ndarray, np.ndarray]:
        """The inner Bézier control points P1, P2 of every segment (keys - 1, joints); P0 and P3
        are keys[:-1] and keys[1:]. Fresh arrays the caller may overwrite."""
        third = (np.diff(self.times) / 3.0)[:, None]
        p1 = self.tangents[:-1] * third
        p1 += self.keys[:-1]
        p2 = self.tangents[1:] * third
        return p1, np.subtract(self.keys[1:], p2, out=p2)

    def _evaluate(self, rows: np.ndarray, joints: np.ndarray | None = None) -> np.ndarray:
        """Unclipped samples at at[rows] (of some joints) from a spline through just their segments."""
        if rows.size == 0:
            return np.zeros((0, self.keys.shape[1] if joints is None else len(joints)))
        knots = _covered(self.segment[rows], self.segment[rows] + 1, len(self.times))
        pick = knots if joints is None else np.ix_(knots, joints)
        return _hermite(self.times[knots], self.keys[pick], self.at[rows], self.tangents[pick])

    def _settle(self) -> bool:
        """Switch to PCHIP the tangents around overshooting samples until none overshoots (True)
        or the passes run out; each pass looks only at the samples whose cubic it changed."""
        safe = np.full_like(self.keys, np.nan)
        rows, joints = self._hull_reach()
        for _ in range(_FALLBACK_PASSES - 1):
            rows, cols = self._outside(rows, joints)
            if rows.size == 0:
                return True
            joints = np.unique(cols)
            ends = np.concatenate([self.segment[rows], self.segment[rows] + 1])  # both ends' tangents
            cols = np.concatenate([cols, cols])
            _monotone_tangents(self.times, self.keys, safe, ends, cols)
            self.tangents[ends, cols] = safe[ends, cols]
            switched = np.zeros(len(self.times), dtype=bool)
            switched[ends] = True
            rows = np.flatnonzero(switched[self.segment] | switched[self.segment + 1])
        return self._outside(rows, joints)[0].size == 0

    def _hull_reach(self) -> tuple[np.ndarray, np.ndarray]:
        """The samples and joints that may leave the limits: segments whose hull reaches one,
        allowing for rounding (and the last segment if samples overrun the last key by a hair)."""
        p1, p2 = self.controls()
        top = np.maximum(p1, p2)
        bottom = np.minimum(p1, p2, out=p1)
        for key in (self.keys[:-1], self.keys[1:]):
            np.maximum(top, key, out=top)
            np.minimum(bottom, key, out=bottom)
        slack = _ROUNDING * max(top.max(initial=0.0), -bottom.min(initial=0.0))
        reach = top > self.upper + 1e-12 - slack
        reach |= bottom < self.lower - 1e-12 + slack
        if self.at[-1] > self.times[-1]:
            reach[-1] = True
        seg, joints = np.divmod(np.flatnonzero(reach), reach.shape[1])  # few: cheaper than any(axis)
        hit = np.zeros(len(reach), dtype=bool)
        hit[seg] = True
        return np.flatnonzero(hit[self.segment]), np.unique(joints)

    def _outside(self, rows: np.ndarray, joints: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(rows, joints) of the samples among `rows` x `joints` beyond the limits."""
        q = self._evaluate(rows, joints)
        hit, cols = np.nonzero((q > self.upper[joints] + 1e-12) | (q < self.lower[joints] - 1e-12))
        return rows[hit], joints[cols]


def _monotone_tangents(times: np.ndarray, keys: np.ndarray, safe: np.ndarray, knots: np.ndarray,
                       joints: np.ndarray) -> None:
    """Fill in `safe` (NaN: not yet) the PCHIP tangents at (knots, joints).

    A PCHIP tangent depends only on the neighbouring keys (three at either
    end of the clip), so a PCHIP through the keys within two of the wanted
    ones gives those tangents bit for bit, without the whole clip's cost.
    """
    todo = np.isnan(safe[knots, joints])
    if not todo.any():
        return
    knots = _covered(knots[todo], knots[todo], len(times))
    joints = np.unique(joints[todo])
    near = _covered(knots - 2, knots + 2, len(times))
    from scipy.interpolate import PchipInterpolator

    tangents = PchipInterpolator(times[near], keys[np.ix_(near, joints)], axis=0).derivative()(times[near])
    safe[np.ix_(knots, joints)] = tangents[np.searchsorted(near, knots)]


def _covered(starts: np.ndarray, stops: np.ndarray, size: int) -> np.ndarray:
    """The integers of [0, size) inside any [start, stop] (sorted, each once)."""
    count = np.zeros(size + 1, dtype=np.int64)
    np.add.at(count, np.minimum(np.maximum(starts, 0), size), 1)  # (np.clip is slow on small arrays)
    np.add.at(count, np.minimum(np.maximum(stops + 1, 0), size), -1)
    return np.flatnonzero(np.cumsum(count[:-1]) > 0)


def resample(table: BakeTable, period_s: float, limits: JointLimits | None = None
             ) -> tuple[PlaybackTrack, list[str]]:
    """The keyed motion sampled at the control cycle, inside the position limits.

    Keys outside the limits are clipped to them first; the warnings name
    those joints and by how much.
    """
    times = _relative_times(table)
    q_keys = np.asarray(table.q, dtype=float).reshape(len(times), -1)
    if not (np.all(np.isfinite(q_keys)) and np.all(np.isfinite(table.root_position))
            and np.all(np.isfinite(table.root_quaternion))):
        raise PlaybackError("the motion has non-finite key values")
    at = tick_times(tick_count(times[-1], period_s), period_s)
    n = q_keys.shape[1]
    lower = limits.lower if limits is not None else np.full(n, -np.inf)
    upper = limits.upper if limits is not None else np.full(n, np.inf)
    q = joint_samples(times, q_keys, at, lower, upper)
    position = _hermite(times, np.asarray(table.root_position, dtype=float), at)
    quaternion = squad(times, np.asarray(table.root_quaternion, dtype=float), at)
    warnings = _keys_outside(q_keys, limits) if limits is not None else []
    if limits is not None:
        q, shift = hold_key_speeds(times, np.clip(q_keys, lower, upper), at, q, limits.velocity, period_s)
        if shift > 0:
            warnings.append(f"samples held to the velocity limits where the curve between keys within them "
                            f"ran faster (moved up to {shift:.2g} rad or m)")
    prismatic = limits.prismatic.copy() if limits is not None else None
    track = PlaybackTrack(list(table.joint_names), float(period_s), position, quaternion, q, prismatic)
    return track, warnings


def hold_key_speeds(times: np.ndarray, keys: np.ndarray, at: np.ndarray, q: np.ndarray, velocity: np.ndarray,
                    period_s: float) -> tuple[np.ndarray, float]:
    """Samples (T, n) whose steps stay within the velocity limits wherever the keys' own speeds do.

    A bake holds every joint within its velocity limit from key to key, but the cubic between
    keys runs up to half again as fast near a turn: without this, exports of the Talos or Romeo
    walk broke their limits by 0.1 % (median) to 6 %. Each step between samples whose keys on
    both sides are within the limit is clipped to it; a motion whose keys are too fast keeps
    its violations there for the check to report. keys: as sampled (clipped to the
    position limits). Also the largest shift (rad, or m for a prismatic joint).
    """
    if len(times) < 2 or len(q) < 2 or not np.isfinite(velocity).any():
        return q, 0.0
    dt = np.maximum(np.diff(times), 1e-12)[:, None]
    key_speed = np.abs(np.diff(keys, axis=0)) / dt  # (K-1, n)
    within = key_speed <= velocity * (1 + LIMIT_RTOL) + FLOAT32_KEY / dt  # keys read back from Blender are float32
    seg = np.clip(np.searchsorted(times, at, side="right") - 1, 0, len(times) - 2)
    step = np.where(within[seg[1:]] & within[seg[:-1]], velocity * period_s, np.inf)  # (T-1, n)
    if not (np.abs(np.diff(q, axis=0)) > step * (1 + LIMIT_RTOL)).any():
        return q, 0.0
    held = rate_limit(q, step)
    return held, float(np.abs(held - q).max())


def _keys_outside(keys: np.ndarray, limits: JointLimits) -> list[str]:
    """Joints whose keys leave their limits by more than float32 noise (they get clipped)."""
    over = np.maximum(keys - limits.upper, limits.lower - keys).max(axis=0, initial=-np.inf)
    warnings = []
    for j in np.flatnonzero(over > CLIP_REPORT_RAD):
        unit = joint_unit(bool(limits.prismatic[j]))
        warnings.append(f"joint {limits.joint_names[j]!r}: keys outside its limits by up to "
                        f"{over[j]:.3g} {unit}; samples clipped to [{limits.lower[j]:.4g}, "
                        f"{limits.upper[j]:.4g}] {unit}")
    return warnings


# ----------------------------------------------------------- quaternions ---

def slerp(a: np.ndarray, b: np.ndarray, h: np.ndarray) -> np.ndarray:
    """Shortest-arc spherical interpolation between unit quaternions, h (N,) in [0, 1]."""
    dot = np.einsum("...i,...i->...", a, b)
    b = np.where(dot[..., None] < 0, -b, b)
    dot = np.clip(np.abs(dot), -1.0, 1.0)
    angle = np.arccos(dot)[..., None]
    h = np.asarray(h, dtype=float)[..., None]
    small = angle < 1e-6
    sin = np.where(small, 1.0, np.sin(angle))
    wa = np.where(small, 1.0 - h, np.sin((1.0 - h) * angle) / sin)
    wb = np.where(small, h, np.sin(h * angle) / sin)
    out = wa * a + wb * b
    return out / np.linalg.norm(out, axis=-1, keepdims=True)


def squad(times: np.ndarray, quats: np.ndarray, at: np.ndarray) -> np.ndarray:
    """Spherical cubic through key quaternions (F,4) wxyz at times (F,), sampled at `at`."""
    q = quat_continuous(quats / np.linalg.norm(quats, axis=1, keepdims=True))
    if len(q) == 1:
        return np.repeat(q, len(at), axis=0)
    ctrl = q.copy()  # inner control points: q_i exp(-(log(q_i⁻¹ q_i+1) + log(q_i⁻¹ q_i-1)) / 4)
    if len(q) > 2:
        from scipy.spatial.transform import Rotation

        rot = Rotation.from_quat(q[:, [1, 2, 3, 0]])
        mid = rot[1:-1]
        inv = mid.inv()
        turn = (inv * rot[2:]).as_rotvec() + (inv * rot[:-2]).as_rotvec()
        ctrl[1:-1] = (mid * Rotation.from_rotvec(-turn / 4.0)).as_quat()[:, [3, 0, 1, 2]]
    seg = np.clip(np.searchsorted(times, at, side="right") - 1, 0, len(q) - 2)
    h = np.clip((at - times[seg]) / (times[seg + 1] - times[seg]), 0.0, 1.0)
    outer = slerp(q[seg], q[seg + 1], h)
    inner = slerp(ctrl[seg], ctrl[seg + 1], h)
    return quat_continuous(slerp(outer, inner, 2.0 * h * (1.0 - h)))


# --------------------------------------------------------------- limits ---

def check_limits(track: PlaybackTrack, limits: JointLimits) -> list[LimitViolation]:
    """Every run of samples outside position, velocity or acceleration limits, per joint.

    Velocity is checked per control interval (reported at its start),
    acceleration per interior sample, both as finite differences of the samples.
    """
    q, time = track.q, track.time_s
    outside = (q < limits.lower - 1e-12) | (q > limits.upper + 1e-12)
    found = _runs("position", outside, q, (limits.lower, limits.upper), time, limits, "")
    for order, kind, bound, suffix in ((1, "velocity", limits.velocity, "/s"),
                                       (2, "acceleration", limits.acceleration, "/s^2")):
        if len(q) > order:
            rate = np.diff(q, order, axis=0) / track.period_s ** order
            bad = np.abs(rate) > bound * (1 + LIMIT_RTOL)
            found += _runs(kind, bad, rate, (-bound, bound), time[order - 1:], limits, suffix)
    found.sort(key=lambda v: (v.time_s, v.joint, v.kind))
    return found


def _runs(kind, bad, values, bounds, time, limits: JointLimits, suffix: str) -> list[LimitViolation]:
    """Group consecutive bad samples per joint into one violation each (worst value kept, with
    the bound on its side); a joint's runs are found together, as there may be thousands."""
    out = []
    low, high = bounds
    for j in np.flatnonzero(bad.any(axis=0)):
        idx = np.flatnonzero(bad[:, j])
        starts = np.flatnonzero(np.diff(idx, prepend=-2) > 1)
        sizes = np.diff(starts, append=len(idx))
        magnitude = np.abs(values[idx, j])
        peak = np.repeat(np.maximum.reduceat(magnitude, starts), sizes)
        first = np.minimum.reduceat(np.where(magnitude == peak, np.arange(len(idx)), len(idx)), starts)
        worst = values[idx[first], j]  # the first largest, as argmax picks
        bound = np.where(worst > high[j], high[j], low[j])
        unit = joint_unit(bool(limits.prismatic[j])) + suffix
        out += [LimitViolation(limits.joint_names[j], kind, *run, unit) for run in
                zip(time[idx[starts]].tolist(), time[idx[starts + sizes - 1]].tolist(), sizes.tolist(),
                    worst.tolist(), bound.tolist())]
    return out


def violation_summary(violations: list[LimitViolation], shown: int = 3) -> str:
    """One line: how many, and the first few."""
    if not violations:
        return "no limit violations"
    head = "; ".join(v.describe() for v in violations[:shown])
    more = f" (and {len(violations) - shown} more)" if len(violations) > shown else ""
    return f"{len(violations)} limit violation(s): {head}{more}"
