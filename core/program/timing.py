"""The compiled timeline as joint keys: the timing check against velocity limits, and the composed
joint trajectory at a rate (issue 13).

Each part's modules are laid end to end in time order (a repeated module plays again from its
first key); between two keys a joint must move |dq| in dt, which needs |dq| / dt. A part
without a module at some time holds its last value (or its first before its first module).
"""
from __future__ import annotations

import numpy as np

from .timeline import Timeline, Violation


def part_keys(timeline: Timeline, part: str) -> tuple[list[str], np.ndarray, np.ndarray]:
    """(joints, times (K,), values (K, J)) of one part over the whole timeline."""
    times, values, joints = [], [], []
    for item in timeline.items:
        if item.part != part:
            continue
        joints = item.module.joints
        for k in range(item.repeat):
            start = item.start_s + k * item.module.duration
            times.append(start + item.module.times)
            values.append(item.module.values)
    if not times:
        return joints, np.zeros(0), np.zeros((0, len(joints)))
    times, values = np.concatenate(times), np.concatenate(values)
    order = np.argsort(times, kind="stable")
    return joints, times[order], values[order]


def robot_limits(tree) -> tuple[dict[str, float], dict[str, tuple[float, float]]]:
    """A kinematic tree's velocity limits and (lower, upper) position limits by joint name, for
    compile_program's timing and range checks."""
    velocity = dict(zip(tree.joint_names, (float(v) for v in tree.velocity)))
    limits = {name: (float(lo), float(hi)) for name, lo, hi in zip(tree.joint_names, tree.lower, tree.upper)}
    return velocity, limits


def check_timing(timeline: Timeline, velocity: dict[str, float]) -> list[Violation]:
    """Every keyed interval where a joint would have to turn faster than its limit."""
    out: list[Violation] = []
    for part in sorted({item.part for item in timeline.items}):
        joints, times, values = part_keys(timeline, part)
        if len(times) < 2:
            continue
        dt = np.diff(times)
        dq = np.abs(np.diff(values, axis=0))
        for j, joint in enumerate(joints):
            limit = velocity.get(joint)
            if limit is None or not np.isfinite(limit):
                continue
            with np.errstate(divide="ignore", invalid="ignore"):
                speed = np.where(dt > 1e-9, dq[:, j] / np.maximum(dt, 1e-12), np.where(dq[:, j] > 1e-9, np.inf, 0.0))
            for k in np.flatnonzero(speed > limit * (1 + 1e-9)):  # a jump in no time has no finite speed: None
                out.append(Violation(part, joint, float(times[k]), float(speed[k]) if np.isfinite(speed[k]) else None,
                                     float(limit)))
    out.sort(key=lambda v: (v.time_s, v.part, v.joint))
    return out


def compose(timeline: Timeline, joint_names: list[str], rate_hz: float,
            rest: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(times (N,) s, q (N, n)) at the rate over the timeline's duration; joints of no part stay at
    `rest` (zeros by default); a part's joints interpolate linearly between its keys."""
    count = int(np.floor(timeline.duration_s * rate_hz + 1e-9)) + 1
    times = np.arange(count) / rate_hz
    q = np.tile(np.zeros(len(joint_names)) if rest is None else rest, (count, 1))
    column = {name: i for i, name in enumerate(joint_names)}
    for part in sorted({item.part for item in timeline.items}):
        joints, key_times, values = part_keys(timeline, part)
        for j, joint in enumerate(joints):
            if joint in column and len(key_times):
                q[:, column[joint]] = np.interp(times, key_times, values[:, j])
    return times, q
