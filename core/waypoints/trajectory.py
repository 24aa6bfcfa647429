"""A keyed end-effector path as a joint trajectory the robot arm can play.

Keys give the tip's position at times (and its orientation at the first and
last key, optionally at via keys); the via orientations come from
waypoint_orientations. The path is sampled at a rate: positions on the cubic
through the keys (curves.key_curve, parameterised by time: the tangents the
via orientations follow are the directions the tip really moves in),
orientations slerped between the keyed orientations by time. Every sample is solved by IK for position and orientation inside the
joint limits, warm-started from the sample before, so the arm stays on one
branch and its joints move continuously. Nothing fails silently: samples
the arm cannot reach are listed by time, joints too fast for their velocity
limit are named with the keys they run between.

Positions in metres and quaternions (w, x, y, z) in the base link's frame,
times in seconds, joint values in radians; samples first on every array.
"""
from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from ..model.transforms import matrix_to_quat
from ..motion.fileio import refuse_unknown_fields
from . import mechanism as mech
from .curves import key_curve
from .optimum import StateBlend, waypoint_orientations
from .orientations import quat_mul, quat_slerp
from .path_optimum import PathSearch, seeds_for, turn_angles

PATH_FORMAT = "robot_retarget.path"
POSITION_TOL = 1e-3      # arm lengths (1.1 mm on the Panda): a sample further from its target is unreachable
ORIENTATION_TOL = 0.5    # deg
TRACKING = dict(position_tol=5e-5, rotation_tol=5e-4, iterations=150, patience=20)  # IK per sample (arm lengths)


class PathError(ValueError):
    """A path file or keys that cannot be followed; names the file and the key."""


@dataclass(frozen=True)
class PathKeys:
    """Keyed tip poses: times (K,) s, positions (K, 3) m, quaternions (K, 4) with NaN rows where not keyed."""

    time_s: np.ndarray
    position: np.ndarray
    quaternion: np.ndarray
    label: str = "path"

    def __post_init__(self):
        t, p, q = self.time_s, self.position, self.quaternion
        if t.ndim != 1 or t.size < 2 or p.shape != (t.size, 3) or q.shape != (t.size, 4):
            raise PathError(f"{self.label}: needs 2 or more keys, each with a time and a position")
        if not np.all(np.isfinite(t)) or not np.all(np.isfinite(p)):
            raise PathError(f"{self.label}: times and positions must be finite numbers")
        bad = np.flatnonzero(np.diff(t) <= 0)
        if bad.size:
            raise PathError(f"{self.label}, key {bad[0] + 1}: time_s {t[bad[0] + 1]:g} does not come after "
                            f"{t[bad[0]]:g} (times must increase)")
        for i in (0, t.size - 1):
            if not np.all(np.isfinite(q[i])):
                raise PathError(f"{self.label}, key {i}: the {'first' if i == 0 else 'last'} key needs a quaternion")
        norm = np.linalg.norm(q, axis=1, keepdims=True)
        bad = np.flatnonzero(norm[:, 0] < 1e-9)
        if bad.size:
            raise PathError(f"{self.label}, key {bad[0]}: quaternion must not be all zero")
        object.__setattr__(self, "quaternion", q / norm)  # unit quaternions (NaN rows stay NaN)


def path_keys(data: dict, label: str = "path") -> PathKeys:
    """PathKeys from the PATH.json structure ({"format": "robot_retarget.path", "version": 1, "keys": [...]})."""
    if not isinstance(data, dict) or data.get("format") != PATH_FORMAT:
        raise PathError(f'{label}: not a path file ("format" must be "{PATH_FORMAT}")')
    if data.get("version") != 1:
        raise PathError(f"{label}: unsupported version {data.get('version')!r} (this reader knows version 1)")
    refuse_unknown_fields(data, ("format", "version", "keys"), PathError, label)
    keys = data.get("keys")
    if not isinstance(keys, list) or len(keys) < 2:
        raise PathError(f'{label}: "keys" must list 2 or more keys')
    times, positions, quats = [], [], []
    for i, key in enumerate(keys):
        where = f"{label}, key {i}"
        if isinstance(key, dict):  # a via's "quaternoin" was dropped: the via got the mode's orientation
            refuse_unknown_fields(key, ("time_s", "position", "quaternion"), PathError, where)
        try:
            times.append(float(key["time_s"]))
            position = np.array(key["position"], dtype=float)
            quat = np.array(key["quaternion"], dtype=float) if key.get("quaternion") is not None else np.full(4, np.nan)
        except (KeyError, TypeError, ValueError) as exc:
            raise PathError(f"{where}: needs time_s (number) and position [x, y, z] ({exc})") from None
        if position.shape != (3,) or not np.all(np.isfinite(position)):
            raise PathError(f"{where}: position must be 3 finite numbers [x, y, z] in metres")
        if not np.all(np.isnan(quat)):
            if quat.shape != (4,) or not np.all(np.isfinite(quat)) or np.linalg.norm(quat) < 1e-9:
                raise PathError(f"{where}: quaternion must be 4 finite numbers [w, x, y, z], not all zero")
            quat = quat / np.linalg.norm(quat)
        positions.append(position)
        quats.append(quat)
    return PathKeys(np.array(times), np.array(positions), np.array(quats), label)


def read_path(path) -> PathKeys:
    """A PATH.json file; errors name the file and the key."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise PathError(f"{path}: path file not found") from None
    except IsADirectoryError:  # said "[Errno 21] Is a directory"
        raise PathError(f"{path}: a folder, not a path file (PATH.json)") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise PathError(f"{path}: not a JSON file ({exc})") from None
    return path_keys(data, str(path))


@dataclass(frozen=True)
class FollowSettings:
    """How the path is turned into a trajectory; defaults match the command line's."""

    rate_hz: float = 100.0
    mode: object = "tangent"           # a mode of waypoint_orientations, or a mapping of modes to weights
    objective: str = "manipulability"  # manipulability | torque
    blend: str = "parabola"            # parabola | bspline
    max_blend: float = 1.0
    approach_axis: tuple = (0.0, 0.0, 1.0)
    curve: str = "spline"              # the tangents' curve: spline | bspline | bezier
    distances: str = "arc"             # the division ratio: arc | path | straight
    state_blend: StateBlend | None = None
    search: PathSearch = field(default_factory=PathSearch)


@dataclass
class Trajectory:
    """The joint trajectory following a path, and its report."""

    time_s: np.ndarray           # (N,) s, k / rate
    q: np.ndarray                # (N, n) rad, every joint of the robot (off the chain: at rest)
    joint_names: list[str]
    base_position: np.ndarray    # (3,) m, the base link in the root-link frame
    base_quaternion: np.ndarray  # (4,)
    target_position: np.ndarray  # (N, 3) m, the tip's target in the base frame
    target_quaternion: np.ndarray  # (N, 4)
    key_quaternion: np.ndarray   # (K, 4) the orientation of every key (via keys from the mode)
    report: dict


def key_orientations(chain, keys: PathKeys, settings: FollowSettings, to_root: np.ndarray) -> np.ndarray:
    """(K, 4) in the root frame: keyed ones as given, via keys without one from waypoint_orientations."""
    turn = matrix_to_quat(to_root[:3, :3])
    positions = keys.position @ to_root[:3, :3].T + to_root[:3, 3]
    quats = np.where(np.isnan(keys.quaternion), np.nan, quat_mul(turn, np.nan_to_num(keys.quaternion)))
    if keys.time_s.size > 2:
        vias = waypoint_orientations(
            positions[0], quats[0], positions[-1], quats[-1], positions[1:-1], mode=settings.mode,
            blend=settings.blend, max_blend=settings.max_blend, approach_axis=settings.approach_axis,
            curve=settings.curve, times=keys.time_s, distances=settings.distances, chain=chain,
            objective=settings.objective, search=settings.search, state_blend=settings.state_blend)
        missing = np.isnan(quats[1:-1, 0])
        quats[1:-1][missing] = vias[missing]
    for i in range(1, len(quats)):  # one hemisphere along the keys
        if np.dot(quats[i], quats[i - 1]) < 0:
            quats[i] = -quats[i]
    return quats


def sample_times(keys: PathKeys, rate_hz: float) -> np.ndarray:
    """(N,) s from the first key: k / rate up to the last key."""
    if not (np.isfinite(rate_hz) and rate_hz > 0):
        raise PathError(f"rate {rate_hz!r}: must be a positive number of samples per second")
    count = int(np.floor((keys.time_s[-1] - keys.time_s[0]) * rate_hz + 1e-9)) + 1
    return np.arange(count) / rate_hz


def slerp_keys(times: np.ndarray, key_times: np.ndarray, key_quats: np.ndarray) -> np.ndarray:
    """Orientations (N, 4) at `times`: slerp between the surrounding keys by the share of their interval."""
    j = np.clip(np.searchsorted(key_times, times, side="right") - 1, 0, key_times.size - 2)
    frac = np.clip((times - key_times[j]) / (key_times[j + 1] - key_times[j]), 0.0, 1.0)
    return quat_slerp(key_quats[j], key_quats[j + 1], frac)


def _held(chain, result: mech.IKResult) -> np.ndarray:
    """(B,) the pose is held within the report's tolerances."""
    return ~_lost(chain, result.position_error, result.rotation_error)


def _lost(chain, position_error: np.ndarray, rotation_error: np.ndarray) -> np.ndarray:
    """(B,) further than POSITION_TOL arm lengths or ORIENTATION_TOL degrees from the target."""
    return (position_error > POSITION_TOL * chain.length) | (np.degrees(rotation_error) > ORIENTATION_TOL)


def branch_start(chain, positions, quats, objective: str = "manipulability", search: PathSearch = PathSearch(),
                 coarse: int = 40, restarts: int = 40) -> np.ndarray | None:
    """(C,) joint values at the first sample whose branch carries the arm along the whole path.

    Every start the seed and restarts reach is tracked over `coarse` samples
    of the path at once (a batch). The branches that hold all of them with a
    largest joint step within twice the smoothest one's (and under 0.2 rad)
    are smooth enough; of those the one with the best mean objective along
    the way wins, so a redundant arm also holds the path well (a branch that
    runs into a limit has to jump). None when the first sample is out of reach.
    """
    tight = dataclasses.replace(chain, ik=dataclasses.replace(chain.ik, **TRACKING))
    seeds = seeds_for(chain, None, search, restarts)
    first = mech.solve_ik(tight, np.repeat(positions[:1], len(seeds), 0), np.repeat(quats[:1], len(seeds), 0), seeds)
    starts = first.q[_held(chain, first)]
    if starts.size == 0:
        return None
    q, worst, ok = starts.copy(), np.zeros(len(starts)), np.ones(len(starts), bool)
    merit = mech.objective_scores(chain, mech.chain_frames(chain, q), objective)
    steps = np.unique(np.linspace(0, len(positions) - 1, min(coarse, len(positions))).round().astype(int))[1:]
    for k in steps:
        step = mech.solve_ik(tight, np.repeat(positions[k:k + 1], len(q), 0), np.repeat(quats[k:k + 1], len(q), 0), q)
        worst = np.maximum(worst, np.abs(step.q - q).max(axis=1))
        ok &= _held(chain, step)
        q = step.q
        merit += mech.objective_scores(chain, mech.chain_frames(chain, q), objective)
    worst = np.where(ok, worst, worst + 1e3)
    smooth = worst <= max(2.0 * worst.min(), 0.2)
    return starts[int(np.argmax(np.where(smooth, merit, -np.inf)))] if np.any(smooth) else starts[int(np.argmin(worst))]


def track(chain, positions, quats, q_start, progress=None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """IK along the samples, each warm-started from the one before.

    A sample the warm start cannot hold is tried from the seed and restarts
    (taking the reached solution nearest the previous joints), unless the
    sample before was out of reach too (then the warm start leads back onto
    the path where it comes within reach again). Returns
    q (N, C), position error (N,) m, orientation error (N,) rad.
    """
    tight = dataclasses.replace(chain, ik=dataclasses.replace(chain.ik, **TRACKING))
    count = positions.shape[0]
    q = np.empty((count, chain.columns.size))
    p_err, r_err = np.empty(count), np.empty(count)
    previous, lost = q_start, False
    for k in range(count):
        result = mech.solve_ik(tight, positions[k:k + 1], quats[k:k + 1], previous[None], None)
        if not _held(chain, result)[0] and not lost:  # a stall just short of the tight tolerance keeps its branch
            seeds = seeds_for(chain, previous, PathSearch())
            others = mech.solve_ik(tight, np.repeat(positions[k:k + 1], len(seeds), 0),
                                   np.repeat(quats[k:k + 1], len(seeds), 0), seeds, None)
            if np.any(_held(chain, others)):
                near = np.where(_held(chain, others), np.linalg.norm(others.q - previous, axis=1), np.inf)
                pick = int(np.argmin(near))
                result = mech.IKResult(*(getattr(others, f)[pick:pick + 1] for f in
                                         ("q", "position_error", "rotation_error", "reached", "score")))
        q[k], p_err[k], r_err[k] = result.q[0], result.position_error[0], result.rotation_error[0]
        previous, lost = q[k], not _held(chain, result)[0]
        if progress is not None and k % 25 == 0:
            progress(k / count, f"solving sample {k} of {count}")
    return q, p_err, r_err


def follow_path(chain: mech.MechanismChain, keys: PathKeys, settings: FollowSettings = FollowSettings(),
                progress: Callable[[float, str], None] | None = None) -> Trajectory:
    """Sample the keyed path at settings.rate_hz and solve the arm's joints for every sample."""
    report_progress = progress or (lambda fraction, message: None)
    base = mech.base_pose(chain)
    times = sample_times(keys, settings.rate_hz)
    report_progress(0.0, "orienting the via keys")
    key_quats = key_orientations(chain, keys, settings, base)
    root_positions = keys.position @ base[:3, :3].T + base[:3, 3]
    curve = key_curve(root_positions, keys.time_s, "spline" if settings.curve == "bezier" else settings.curve)
    positions = curve.position(keys.time_s[0] + times)
    quats = slerp_keys(keys.time_s[0] + times, keys.time_s, key_quats)
    q_start = branch_start(chain, positions, quats, settings.objective, settings.search)
    warnings = []
    ticks = (keys.time_s - keys.time_s[0]) * settings.rate_hz
    for i in np.flatnonzero(np.abs(ticks - np.round(ticks)) > 1e-6):
        warnings.append(f"{keys.label}, key {i} (time {keys.time_s[i]:g} s) falls between two samples at "
                        f"{settings.rate_hz:g} Hz: the rows pass it in between (its errors are solved at its time)")
    if q_start is None:
        warnings.append(f"{keys.label}: the first key (time {keys.time_s[0]:g} s) is out of the arm's reach")
        q_start = chain.seed
    q, p_err, r_err = track(chain, positions, quats, q_start, lambda f, m: report_progress(0.1 + 0.8 * f, m))
    report_progress(0.9, "checking the trajectory")
    full = np.broadcast_to(chain.rest_q, (times.size, chain.tree.dof)).copy()
    full[:, chain.columns] = q
    base_inverse = np.linalg.inv(base)
    report = trajectory_report(chain, keys, times, q, p_err, r_err, key_quats, curve, settings, warnings)
    report_progress(1.0, "done")
    return Trajectory(times, full, list(chain.tree.joint_names), base[:3, 3].copy(), matrix_to_quat(base[:3, :3]),
                      positions @ base_inverse[:3, :3].T + base_inverse[:3, 3],
                      quat_mul(matrix_to_quat(base_inverse[:3, :3]), quats),
                      quat_mul(matrix_to_quat(base_inverse[:3, :3]), key_quats), report)


def _key_solutions(chain, keys: PathKeys, times, q, key_positions, key_quats):
    """IK at every key's own time, warm-started from the sample at or before it: q (K, C) and errors."""
    tight = dataclasses.replace(chain, ik=dataclasses.replace(chain.ik, **TRACKING))
    k = np.clip(np.searchsorted(keys.time_s[0] + times, keys.time_s + 1e-9, side="right") - 1, 0, len(times) - 1)
    return mech.solve_ik(tight, key_positions, key_quats, q[k], None)


def trajectory_report(chain, keys: PathKeys, times, q, p_err, r_err, key_quats, curve, settings: FollowSettings,
                      warnings: list[str]) -> dict:
    """The REPORT.json figures: per key, the worst errors, speed and limits, what could not be reached."""
    key_positions = curve.position(keys.time_s)
    solved = _key_solutions(chain, keys, times, q, key_positions, key_quats)
    frames = mech.chain_frames(chain, solved.q)
    jac = mech.jacobian(chain, frames)
    manip = mech.manipulability(jac)
    torque = (np.sum(mech.gravity_torques(chain, frames) ** 2, axis=1) if np.any(chain.mass > 0)
              else np.full(len(keys.time_s), np.nan))
    axis = np.asarray(settings.approach_axis, float) / np.linalg.norm(settings.approach_axis)
    approach = frames[:, chain.tip, :3, :3] @ axis
    tangent = curve.tangent(keys.time_s)
    defined = np.linalg.norm(tangent, axis=1) > 0.5
    tangent_deg = np.degrees(np.arccos(np.clip(np.sum(approach * tangent, axis=1), -1.0, 1.0)))
    held = matrix_to_quat(frames[:, chain.tip, :3, :3])
    base_turn = matrix_to_quat(np.linalg.inv(mech.base_pose(chain))[:3, :3])
    report_keys = []
    for i, t in enumerate(keys.time_s):
        report_keys.append({
            "time_s": float(t), "quaternion": [float(v) for v in quat_mul(base_turn, key_quats[i])],
            "tangent_angle_deg": float(tangent_deg[i]) if defined[i] else None,
            "manipulability": float(manip[i]), "torque_cost": None if np.isnan(torque[i]) else float(torque[i]),
            "position_error_m": float(solved.position_error[i]),
            "orientation_error_deg": float(np.degrees(turn_angles(held[i], key_quats[i])))})
    lost = _lost(chain, p_err, r_err)
    key_lost = _lost(chain, solved.position_error, solved.rotation_error)
    origin, reach = mech.arm_reach(chain)
    distance = np.linalg.norm(key_positions - origin, axis=1)
    for i in np.flatnonzero(key_lost):
        warnings.append(f"{keys.label}, key {i} (time {keys.time_s[i]:g} s): the arm cannot hold it "
                        f"({solved.position_error[i] * 1000:.1f} mm, {np.degrees(solved.rotation_error[i]):.1f} deg off; "
                        f"it is {distance[i]:.2f} m from the first joint, the arm reaches {reach:.2f} m)")
    if np.any(lost):
        warnings.append(f"{int(lost.sum())} of {len(times)} samples out of reach, first at {times[lost][0]:.3f} s")
    speed = speed_report(chain, keys, times, q)
    warnings += [f"{s['joint']} needs {s['speed']:.2f} rad/s (limit {s['limit']:.2f}) at {s['time_s']:.3f} s, "
                 f"between key {s['from_key']} and key {s['to_key']}: key {s['to_key']} is too fast"
                 for s in speed["too_fast"]]
    lo, hi = chain.tree.lower[chain.columns], chain.tree.upper[chain.columns]
    return {
        "keys": report_keys,
        "max_position_error_m": float(max(p_err.max(), solved.position_error.max())),
        "max_orientation_error_deg": float(np.degrees(max(r_err.max(), solved.rotation_error.max()))),
        "max_joint_speed_ratio": speed["max_ratio"],
        "limit_violations": int(np.sum(np.any((q < lo - 1e-9) | (q > hi + 1e-9), axis=1))),
        "unreachable": [float(t) for t in times[lost]],
        "warnings": warnings,
        "too_fast": speed["too_fast"],
        "rate_hz": float(settings.rate_hz), "samples": int(len(times)),
        "mode": settings.mode if isinstance(settings.mode, str) else dict(settings.mode),
        "objective": settings.objective,
        "joints": [chain.tree.joint_names[c] for c in chain.columns],
        "reach_m": reach, "farthest_key_m": float(distance.max()),
    }


def speed_report(chain, keys: PathKeys, times, q) -> dict:
    """Fastest joint speed over its limit, and each joint too fast per key interval (its worst sample)."""
    if len(times) < 2:
        return {"max_ratio": 0.0, "too_fast": []}
    rate = 1.0 / (times[1] - times[0])
    speed = np.abs(np.diff(q, axis=0)) * rate  # (N-1, C) rad/s between samples
    limit = chain.tree.velocity[chain.columns]
    ratio = speed / limit
    interval = np.clip(np.searchsorted(keys.time_s - keys.time_s[0], times[1:] - 1e-12, side="left") - 1,
                       0, len(keys.time_s) - 2)
    too_fast = []
    for j in range(len(keys.time_s) - 1):
        rows = np.flatnonzero(interval == j)
        for c in np.flatnonzero(np.any(ratio[rows] > 1.0, axis=0)) if rows.size else []:
            worst = rows[np.argmax(ratio[rows, c])]
            too_fast.append({"joint": chain.tree.joint_names[chain.columns[c]], "from_key": j, "to_key": j + 1,
                             "time_s": float(times[worst + 1]), "speed": float(speed[worst, c]),
                             "limit": float(limit[c])})
    return {"max_ratio": float(ratio.max()), "too_fast": too_fast}


__all__ = ["PathKeys", "PathError", "path_keys", "read_path", "FollowSettings", "Trajectory", "follow_path",
           "sample_times", "slerp_keys", "key_orientations", "PATH_FORMAT"]
