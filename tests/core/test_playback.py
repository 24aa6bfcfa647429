"""Playback at the control cycle (core.playback): ticks, interpolation, limits, retime.

A small URDF written here (two revolute joints and a prismatic one, with
known limits) keeps every expected number checkable by hand; one test runs
the real walk retargeted onto the G1.
"""
from __future__ import annotations

import dataclasses
import functools
import json
import math
from pathlib import Path

import numpy as np
import pytest
from scipy.interpolate import CubicHermiteSpline, PchipInterpolator

from core.retarget.automap import auto_map
from core.motion.bake_csv import BakeTable
from core.motion.bvh import load_bvh
from core.model.kinematics import KinematicTree
from core.playback.prepare import ExportSettings, prepare_playback, require_within_limits
from core.playback import retime as retime_module, sampling
from core.playback.sampling import (JointLimits, LimitViolation, PlaybackError, PlaybackTrack, _hermite,
                                   check_limits, joint_samples, joint_unit, resample, sample_derivatives, slerp,
                                   squad, tick_count, tick_times)
from core.playback.retime import _knots, _needed_stretch, retime
from core.retarget.pipeline import retarget
from core.model.urdf import parse_urdf, parse_urdf_string

ROOT = Path(__file__).resolve().parents[2]
WALK = ROOT / "data" / "motion" / "cmu_131_01_walk_m.bvh"
G1 = ROOT / "data" / "robots" / "g1" / "unitree_g1_29dof.urdf"

URDF = """<robot name="bench_arm">
  <link name="base"/><link name="upper"/><link name="fore"/><link name="slider"/>
  <joint name="shoulder" type="revolute"><parent link="base"/><child link="upper"/>
    <axis xyz="0 0 1"/><limit lower="-1.5" upper="1.5" velocity="2.0" effort="10"/></joint>
  <joint name="elbow" type="revolute"><parent link="upper"/><child link="fore"/>
    <origin xyz="0.3 0 0"/><axis xyz="0 1 0"/><limit lower="-0.5" upper="2.0" velocity="3.0" effort="10"/></joint>
  <joint name="rail" type="prismatic"><parent link="fore"/><child link="slider"/>
    <origin xyz="0.3 0 0"/><axis xyz="1 0 0"/><limit lower="0" upper="0.2" velocity="0.5" effort="10"/></joint>
</robot>"""


@pytest.fixture(scope="module")
def tree() -> KinematicTree:
    return KinematicTree(parse_urdf_string(URDF, "bench_arm.urdf"))


def keyed(q: np.ndarray, fps: float, names=("shoulder", "elbow", "rail")) -> BakeTable:
    """Keys at `fps` with a still root at the origin."""
    frames = len(q)
    quat = np.tile([1.0, 0.0, 0.0, 0.0], (frames, 1))
    return BakeTable(list(names), np.arange(frames) / fps, np.zeros((frames, 3)), quat, np.asarray(q, float))


def sines(fps: float, seconds: float, freq: float, amp=(0.4, 0.3, 0.05), centre=(0.0, 0.6, 0.1)) -> np.ndarray:
    t = np.arange(int(round(seconds * fps)) + 1) / fps
    return np.asarray(centre) + np.asarray(amp) * np.sin(2 * np.pi * freq * t)[:, None]


# ------------------------------------------------------------------ ticks ---

def test_ticks_of_an_hour_at_500_hz_are_exact():
    """t_k = k * period from the integer k: no drift after 1.8 million samples."""
    period = 1 / 500
    keys = np.sin(np.arange(3601) * 0.5)[:, None]  # one key per second for an hour, one joint
    table = BakeTable(["j"], np.arange(3601.0), np.zeros((3601, 3)), np.tile([1.0, 0, 0, 0], (3601, 1)), keys)
    track, _ = resample(table, period)
    assert track.samples == 3600 * 500 + 1
    k = np.arange(track.samples)
    assert np.array_equal(track.time_s, k * period)
    assert track.time_s[-1] == 3600.0 and track.duration_s == 3600.0
    summed = np.cumsum(np.full(track.samples - 1, period))  # what adding periods up would give
    assert not np.array_equal(summed, track.time_s[1:])
    np.testing.assert_array_equal(track.q[::500, 0], keys[:, 0])  # every whole second is a key


def test_tick_count_keeps_the_last_whole_tick():
    assert tick_count(1.0, 0.01) == 101  # 1.0 / 0.01 = 99.99999999999999 in floats
    assert tick_count(0.999, 0.01) == 100
    assert tick_count(0.0, 0.002) == 1
    assert np.array_equal(tick_times(4, 0.1), [0.0, 0.1, 0.2, 0.30000000000000004])  # 3 * 0.1, not 0.1+0.1+0.1


# ---------------------------------------------------------- interpolation ---

def test_samples_pass_through_the_keys_with_continuous_velocity(tree):
    q = sines(30, 2.0, 0.7)
    track, warnings = resample(keyed(q, 30), 1 / 300, JointLimits.from_tree(tree))
    assert warnings == []
    np.testing.assert_allclose(track.q[::10], q, rtol=0, atol=1e-12)  # every 10th sample is a key
    vel, acc = sample_derivatives(track.q, track.period_s)
    peak_acc = 0.4 * (2 * np.pi * 0.7) ** 2
    assert np.abs(np.diff(vel, axis=0)).max() < 1.5 * peak_acc * track.period_s  # no velocity steps at keys
    truth = np.asarray((0.4, 0.3, 0.05)) * np.sin(2 * np.pi * 0.7 * track.time_s)[:, None] + (0.0, 0.6, 0.1)
    linear = np.column_stack([np.interp(track.time_s, np.arange(61) / 30, q[:, j]) for j in range(3)])
    inner = slice(10, -10)  # tangents at the two end keys are one-sided
    assert np.abs(track.q - truth)[inner].max() < 0.1 * np.abs(linear - truth)[inner].max()  # cubic, not linear


def test_no_overshoot_beyond_limits_where_keys_touch_them(tree):
    """A joint that hits its upper limit and turns back stays inside between keys."""
    limits = JointLimits.from_tree(tree)
    t = np.arange(31) / 30
    shoulder = np.minimum(1.5, 3.0 * np.sin(np.pi * t))  # clamped plateau at the 1.5 rad limit
    q = np.column_stack([shoulder, np.full(31, 0.5), np.full(31, 0.1)])
    at = tick_times(tick_count(1.0, 0.001), 0.001)
    free = _hermite(t, q, at)
    assert free[:, 0].max() > 1.5 + 1e-3  # a plain cubic would overshoot here...
    track, warnings = resample(keyed(q, 30), 0.001, limits)
    assert track.q[:, 0].max() <= 1.5 and warnings == []  # ...the exported samples do not
    np.testing.assert_allclose(track.q[[0, -1]], q[[0, -1]], rtol=0, atol=1e-12)


def test_keys_at_the_velocity_limit_read_back_as_float32_are_held_too(tree):
    """A bake keyed into a Blender action (float32) and exported: keys that ran at the velocity
    limit read back a hair over it, and the cubic between them must still be held (an FBX walk
    failed its export at 22.05 rad/s against 22)."""
    limits = JointLimits.from_tree(tree)
    fps = 30.0
    speed = 2.0 / fps  # the shoulder's limit, per key
    steps = np.r_[np.full(12, speed), np.full(12, -speed), np.full(12, speed)]
    shoulder = np.r_[0.0, np.cumsum(steps)] - 0.3
    q = np.column_stack([shoulder, np.full(len(shoulder), 0.5), np.full(len(shoulder), 0.1)])
    stored = q.astype(np.float32).astype(float)
    assert (np.abs(np.diff(stored[:, 0])) * fps > 2.0).any()  # float32 puts some steps over the limit
    track, warnings = resample(keyed(stored, fps), 0.002, limits)
    assert not [v for v in check_limits(track, limits) if v.kind == "velocity"]
    assert any("held to the velocity limits" in w for w in warnings)


def test_keys_outside_limits_are_clipped_and_reported(tree):
    q = sines(30, 1.0, 0.5)
    q[10:14, 1] = 2.3  # elbow upper limit is 2.0
    track, warnings = resample(keyed(q, 30), 0.01, JointLimits.from_tree(tree))
    assert track.q[:, 1].max() == 2.0
    assert "'elbow'" in warnings[0] and "0.3 rad" in warnings[0]
    # the clipped plateau's cubic ran faster than the limit between keys within it: held, and said
    assert all("held to the velocity limits" in w for w in warnings[1:]) and len(warnings) <= 2


def test_root_quaternion_squad():
    """Constant angular velocity is reproduced exactly; keys are passed; unit and sign-continuous."""
    fps, rate, omega = 30.0, 500.0, 2.5  # rad/s about z, past +-180 degrees
    t = np.arange(91) / fps
    keys = np.column_stack([np.cos(omega * t / 2), 0 * t, 0 * t, np.sin(omega * t / 2)])
    keys[1::2] *= -1  # the bake may hand over either sign
    at = tick_times(tick_count(t[-1], 1 / rate), 1 / rate)
    out = squad(t, keys, at)
    truth = np.column_stack([np.cos(omega * at / 2), 0 * at, 0 * at, np.sin(omega * at / 2)])
    np.testing.assert_allclose(np.abs(np.einsum("ij,ij->i", out, truth)), 1.0, atol=1e-12)
    assert np.all(np.einsum("ij,ij->i", out[1:], out[:-1]) > 0)
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, atol=1e-12)
    bent = np.array([[1.0, 0, 0, 0], [np.cos(0.4), np.sin(0.4), 0, 0], [np.cos(0.3), 0, np.sin(0.3), 0]])
    out = squad(np.array([0.0, 1.0, 2.0]), bent, np.array([0.0, 1.0, 2.0]))
    np.testing.assert_allclose(out, bent, atol=1e-12)
    half = slerp(bent[:1], bent[1:2], np.array([0.5]))
    np.testing.assert_allclose(half, [[np.cos(0.2), np.sin(0.2), 0, 0]], atol=1e-12)


def test_derivatives_are_the_finite_differences_of_the_samples():
    q = np.random.default_rng(1).normal(size=(50, 2)).cumsum(axis=0)
    vel, acc = sample_derivatives(q, 0.01)
    np.testing.assert_allclose(vel, np.gradient(q, 0.01, axis=0))
    np.testing.assert_allclose(acc[1:-1], np.diff(q, 2, axis=0) / 1e-4)
    assert np.array_equal(acc[0], acc[1]) and np.array_equal(acc[-1], acc[-2])


# ---------------------------------------------------------------- limits ---

def test_violations_found_on_a_motion_made_too_fast(tree):
    """Sines at 1.5 Hz: shoulder peaks at 0.4 * 2π * 1.5 = 3.77 rad/s (limit 2), the elbow at 2.83 (limit 3)."""
    limits = JointLimits.from_tree(tree, acceleration=20.0, joint_acceleration={"elbow": 100.0})
    track, _ = resample(keyed(sines(120, 2.0, 1.5), 120), 0.002, limits)
    found = check_limits(track, limits)
    kinds = {(v.joint, v.kind) for v in found}
    assert ("shoulder", "velocity") in kinds and ("elbow", "velocity") not in kinds
    assert ("shoulder", "acceleration") in kinds  # 0.4 (3π)² = 35.5 rad/s² > 20
    assert ("elbow", "acceleration") not in kinds  # 26.6 rad/s² < 100 (per-joint limit wins)
    worst = max((v for v in found if v.kind == "velocity"), key=lambda v: abs(v.value))
    assert abs(worst.value) == pytest.approx(0.4 * 2 * np.pi * 1.5, rel=1e-3)
    assert abs(worst.limit) == 2.0 and np.sign(worst.limit) == np.sign(worst.value)
    assert worst.unit == "rad/s" and worst.samples > 1 and worst.end_time_s > worst.time_s
    # runs: the speed peaks at t = 0, 1/3, ..., 2 s -> 7 runs of consecutive samples
    assert sum(v.joint == "shoulder" and v.kind == "velocity" for v in found) == 7
    vel = np.diff(track.q[:, 0]) / 0.002
    for v in found:
        if v.joint == "shoulder" and v.kind == "velocity":
            k0, k1 = round(v.time_s / 0.002), round(v.end_time_s / 0.002)
            assert np.all(np.abs(vel[k0:k1 + 1]) > 2.0)  # the run is over the limit...
            assert k0 == 0 or abs(vel[k0 - 1]) <= 2.0  # ...and is all of it
            assert k1 == len(vel) - 1 or abs(vel[k1 + 1]) <= 2.0
    json.dumps([v.to_dict() for v in found])  # reports are JSON


def test_position_violations_and_prismatic_units(tree):
    limits = JointLimits.from_tree(tree)
    q = np.tile([0.0, 0.5, 0.1], (20, 1))
    q[5:8, 2] = 0.25  # rail upper 0.2 m
    track = PlaybackTrack(["shoulder", "elbow", "rail"], 0.1, np.zeros((20, 3)), np.tile([1.0, 0, 0, 0], (20, 1)), q)
    found = [v for v in check_limits(track, limits) if v.kind == "position"]
    assert len(found) == 1
    v = found[0]
    assert (v.joint, v.time_s, v.end_time_s, v.samples, v.value, v.limit, v.unit) == \
        ("rail", 0.5, 0.7000000000000001, 3, 0.25, 0.2, "m")
    assert "rail" in v.describe() and "0.25 m" in v.describe()


def test_limits_from_tree_name_the_bad_joint(tree):
    with pytest.raises(PlaybackError, match="'wrist'.*no movable joint"):
        JointLimits.from_tree(tree, joint_acceleration={"wrist": 10.0})
    with pytest.raises(PlaybackError, match="'elbow': acceleration limit must be positive"):
        JointLimits.from_tree(tree, joint_acceleration={"elbow": 0.0})
    with pytest.raises(PlaybackError, match="'elbow': acceleration limit 'fast' is not a number"):
        JointLimits.from_tree(tree, joint_acceleration={"elbow": "fast"})
    rows = JointLimits.from_tree(tree, 5.0).to_list(degrees=True)
    assert rows[0] == {"joint": "shoulder", "type": "revolute", "unit": "deg", "lower": pytest.approx(-85.94366927),
                       "upper": pytest.approx(85.94366927), "velocity": pytest.approx(114.591559),
                       "acceleration": pytest.approx(286.4788976)}
    assert rows[2]["unit"] == "m" and rows[2]["upper"] == 0.2 and rows[2]["acceleration"] == 5.0


# ---------------------------------------------------------------- retime ---

def slow_fast_slow(fps=120) -> np.ndarray:
    """2 s gentle, 1 s far too fast (3 Hz), 2 s gentle, continuous."""
    t = np.arange(int(5 * fps) + 1) / fps
    freq = np.where((t >= 2) & (t < 3), 3.0, 0.25)
    phase = np.concatenate([[0.0], np.cumsum(2 * np.pi * freq[:-1] / fps)])
    return np.column_stack([0.4 * np.sin(phase), 0.6 + 0.3 * np.sin(phase), 0.1 + 0.05 * np.sin(phase)])


def test_retime_removes_violations_and_says_how_much_longer(tree):
    limits = JointLimits.from_tree(tree, acceleration=30.0)
    table = keyed(slow_fast_slow(), 120)
    plain = prepare_playback(table, limits, ExportSettings(period_s=0.002))
    assert plain.violations and plain.retimed_seconds_added == 0.0
    fixed = prepare_playback(table, limits, ExportSettings(period_s=0.002, retime=True))
    assert fixed.violations == []  # checked on the samples that get written
    added = fixed.retimed_seconds_added
    assert added > 0 and fixed.track.duration_s == pytest.approx(5.0 + added, abs=0.002)
    ratio = max(v.value / v.limit for v in plain.violations if v.kind == "velocity")
    print(f"retime added {added:.3f} s; slowing the whole clip would add at least {5 * (ratio - 1):.3f} s")
    assert added < 0.5 * 5 * (ratio - 1)  # far less than slowing the whole clip
    assert np.array_equal(fixed.track.q[:500], plain.track.q[:500])  # the first gentle second is untouched
    np.testing.assert_allclose(fixed.track.q[-1], table.q[-1], atol=1e-12)  # same path, ends on its last key
    assert fixed.track.time_s[-1] == (fixed.track.samples - 1) * 0.002
    vel = np.abs(np.diff(fixed.track.q, axis=0)) / 0.002
    assert np.all(vel <= limits.velocity * (1 + 1e-9))
    require_within_limits(fixed, allow=False)
    with pytest.raises(PlaybackError, match="limit violation.*retime the motion or allow violations"):
        require_within_limits(plain, allow=False)
    require_within_limits(plain, allow=True)


def test_retime_reports_when_it_cannot_converge(tree):
    limits = JointLimits.from_tree(tree, acceleration=1.0)
    with pytest.raises(PlaybackError, match="retime did not bring the motion within limits in 1 rounds"):
        retime(keyed(slow_fast_slow(), 120), limits, 0.002, max_rounds=1)


@functools.lru_cache(maxsize=None)
def walk_on_g1() -> tuple[KinematicTree, BakeTable]:
    """The first 3 s of the walk retargeted onto the G1 (keys at 120 Hz)."""
    motion = load_bvh(WALK).to_source_motion()
    motion = dataclasses.replace(motion, heads=motion.heads[:360], tails=motion.tails[:360],
                                 root_rotation=motion.root_rotation[:360])
    tree = KinematicTree(parse_urdf(G1))
    result = retarget(motion, tree, auto_map(motion, tree))
    return tree, BakeTable(result.joint_names, np.arange(len(result.q)) / result.fps, result.root_position,
                           result.root_quaternion, result.q)


def test_walk_on_g1_at_500_hz():
    """The real bake: resampled inside the limits; retime fixes the few interpolation overshoots."""
    tree, table = walk_on_g1()
    limits = JointLimits.from_tree(tree, acceleration=400.0)
    out = prepare_playback(table, limits, ExportSettings(period_s=0.002, retime=True))
    assert out.violations == [] and out.warnings == []
    assert 0 <= out.retimed_seconds_added < 0.5 * out.source_duration_s
    assert np.all(out.track.q >= tree.lower) and np.all(out.track.q <= tree.upper)
    np.testing.assert_allclose(np.linalg.norm(out.track.root_quaternion, axis=1), 1.0, atol=1e-12)


# ----------------------------------------------- against dense references ---
#
# Sampling, retime and the limit check look only where limits can bite (and
# find runs a joint at a time); these straightforward versions look at every
# sample, as the code used to. The fast ones must give the same bits.

def dense_joint_samples(times, keys, at, lower, upper) -> np.ndarray:
    """Sample everything each pass; switch tangents around overshooting samples to PCHIP."""
    keys = np.clip(keys, lower, upper)
    tangents = np.gradient(keys, times, axis=0)
    safe = PchipInterpolator(times, keys, axis=0).derivative()(times)
    for _ in range(sampling._FALLBACK_PASSES):
        samples = CubicHermiteSpline(times, keys, tangents, axis=0)(at)
        rows, cols = np.nonzero((samples > upper + 1e-12) | (samples < lower - 1e-12))
        if rows.size == 0:
            break
        seg = np.clip(np.searchsorted(times, at[rows], side="right") - 1, 0, len(times) - 2)
        for end in (seg, seg + 1):
            tangents[end, cols] = safe[end, cols]
    return np.clip(samples, lower, upper)


def dense_needed_stretch(q_keys, spans, limits: JointLimits, period_s: float) -> np.ndarray:
    """Velocity and acceleration ratios of every sample, onto the key intervals."""
    knots = _knots(spans, period_s)
    at = tick_times(tick_count(knots[-1], period_s), period_s)
    q = dense_joint_samples(knots, np.asarray(q_keys, dtype=float), at, limits.lower, limits.upper)
    need_k = (np.abs(np.diff(q, axis=0)) / period_s / limits.velocity).max(axis=1)
    ra = np.sqrt((np.abs(np.diff(q, 2, axis=0)) / period_s ** 2 / limits.acceleration).max(axis=1))
    need_k[:-1] = np.maximum(need_k[:-1], ra)
    need_k[1:] = np.maximum(need_k[1:], ra)
    need = np.zeros(len(knots) - 1)
    lo = np.clip(np.searchsorted(knots, at[:-1], side="right") - 1, 0, len(need) - 1)
    hi = np.maximum(np.clip(np.searchsorted(knots, at[1:], side="left") - 1, 0, len(need) - 1), lo)
    for offset in range(int((hi - lo).max(initial=0)) + 1):
        np.maximum.at(need, np.minimum(lo + offset, hi), need_k)
    return need


def scanned_limits(track: PlaybackTrack, limits: JointLimits) -> list[LimitViolation]:
    """check_limits run by run, joint by joint."""
    q, time, found = track.q, track.time_s, []
    checks = [("position", (q < limits.lower - 1e-12) | (q > limits.upper + 1e-12), q,
               np.where(q > limits.upper, limits.upper, limits.lower), time, "")]
    for order, kind, bound, suffix in ((1, "velocity", limits.velocity, "/s"),
                                       (2, "acceleration", limits.acceleration, "/s^2")):
        rate = np.diff(q, order, axis=0) / track.period_s ** order
        checks.append((kind, np.abs(rate) > bound * (1 + 1e-9), rate, np.where(rate < 0, -bound, bound),
                       time[order - 1:], suffix))
    for kind, bad, values, limit, times, suffix in checks:
        for j in np.flatnonzero(bad.any(axis=0)):
            idx = np.flatnonzero(bad[:, j])
            for run in np.split(idx, np.flatnonzero(np.diff(idx) > 1) + 1):
                worst = run[np.argmax(np.abs(values[run, j]))]
                found.append(LimitViolation(limits.joint_names[j], kind, float(times[run[0]]), float(times[run[-1]]),
                                            len(run), float(values[worst, j]), float(limit[worst, j]),
                                            joint_unit(bool(limits.prismatic[j])) + suffix))
    return sorted(found, key=lambda v: (v.time_s, v.joint, v.kind))


def random_motion(seed: int, keys: int = 40, joints: int = 4) -> tuple[np.ndarray, np.ndarray, JointLimits]:
    """Unevenly spaced keys; limits that cut into the motion (clipped plateaus, overshooting cubics)."""
    rng = np.random.default_rng(seed)
    times = np.concatenate([[0.0], np.cumsum(rng.uniform(0.004, 0.05, keys - 1))])
    q = np.cumsum(rng.normal(scale=rng.uniform(0.02, 0.3), size=(keys, joints)), axis=0)
    span = np.ptp(q, axis=0) + 1e-3
    lower = q.min(axis=0) + rng.uniform(-0.05, 0.3, joints) * span
    upper = np.maximum(q.max(axis=0) - rng.uniform(-0.05, 0.3, joints) * span, lower + 0.1 * span)
    if seed % 3 == 0:  # start on the upper limit, end on the lower one, turning hard: overshoots at the ends
        q[:3, 0] = upper[0] + [0.1, -0.01 * span[0], -0.6 * span[0]]
        q[-3:, 0] = lower[0] - [-0.6 * span[0], -0.01 * span[0], 0.1]
    limits = JointLimits([f"j{i}" for i in range(joints)], lower, upper, rng.uniform(0.5, 20.0, joints),
                         np.where(rng.random(joints) < 0.2, np.inf, rng.uniform(20.0, 3000.0, joints)),
                         rng.random(joints) < 0.25)
    return times, q, limits


@pytest.mark.parametrize("passes", [8, 2])
def test_sampling_gives_the_bits_of_sampling_everything(passes, monkeypatch):
    monkeypatch.setattr(sampling, "_FALLBACK_PASSES", passes)
    for seed in range(120):
        times, q, limits = random_motion(seed)
        period = [0.001, 0.002, 0.0037, 0.01][seed % 4]
        at = tick_times(tick_count(times[-1], period), period)
        fast = joint_samples(times, q, at, limits.lower, limits.upper)
        assert fast.tobytes() == dense_joint_samples(times, q, at, limits.lower, limits.upper).tobytes(), seed
    tree, table = walk_on_g1()
    at = tick_times(tick_count(table.time[-1], 0.002), 0.002)
    fast = joint_samples(table.time, table.q, at, tree.lower, tree.upper)
    assert fast.tobytes() == dense_joint_samples(table.time, table.q, at, tree.lower, tree.upper).tobytes()


@pytest.mark.parametrize("passes", [8, 2])  # 2: some overshoots are left (clipped), so retime checks all
def test_retime_needs_are_those_of_the_dense_check(passes, monkeypatch):
    """Exact wherever a stretch is needed (> 1: the only values retime acts on), at most 1 elsewhere."""
    monkeypatch.setattr(sampling, "_FALLBACK_PASSES", passes)
    for seed in range(120):
        times, q, limits = random_motion(seed)
        spans = np.diff(times) * np.random.default_rng(seed).uniform(0.8, 4.0, len(times) - 1)
        period = [0.001, 0.002, 0.0037, 0.01][seed % 4]
        fast, dense = _needed_stretch(q, spans, limits, period), dense_needed_stretch(q, spans, limits, period)
        over = dense > 1.0
        assert np.array_equal(fast[over], dense[over]) and np.all(fast[~over] <= 1.0), seed


def test_retime_gives_what_the_dense_check_gives(tree, monkeypatch):
    tree_g1, walk = walk_on_g1()
    cases = [(keyed(slow_fast_slow(), 120), JointLimits.from_tree(tree, acceleration=30.0)),
             (walk, JointLimits.from_tree(tree_g1, acceleration=400.0))]
    for seed in range(8):
        times, q, limits = random_motion(seed + 1000, keys=60, joints=3)
        limits = dataclasses.replace(limits, velocity=limits.velocity * 3, acceleration=np.full(3, 300.0))
        cases.append((BakeTable(limits.joint_names, times, np.zeros((60, 3)), np.tile([1.0, 0, 0, 0], (60, 1)), q),
                      limits))
    results = [retime(table, limits, 0.002) for table, limits in cases]
    monkeypatch.setattr(retime_module, "_needed_stretch", dense_needed_stretch)
    for (table, limits), (fast, rounds) in zip(cases, results):
        dense, dense_rounds = retime(table, limits, 0.002)
        assert rounds == dense_rounds and fast.time.tobytes() == dense.time.tobytes()


def test_limit_runs_are_those_of_a_run_by_run_scan(tree):
    for seed in range(60):
        times, q, limits = random_motion(seed, keys=30)
        track, _ = resample(BakeTable(limits.joint_names, times, np.zeros((30, 3)),
                                      np.tile([1.0, 0, 0, 0], (30, 1)), q), 0.002)
        track.q[::7] = np.clip(track.q[::7] * 1.3, limits.lower - 0.5, limits.upper + 0.5)  # position runs too
        assert check_limits(track, limits) == scanned_limits(track, limits), seed


# -------------------------------------------------------------- settings ---

def test_settings_validate_and_load(tmp_path):
    assert ExportSettings.from_rate(500).period_s == 0.002
    assert ExportSettings().rate_hz == 100.0
    with pytest.raises(PlaybackError, match="format 'bvh'.*csv, unitree-csv, npz, pkl, ros2-yaml, mujoco-keyframes"):
        ExportSettings(format="bvh").validate()
    with pytest.raises(PlaybackError, match="'pkl' stores radians"):
        ExportSettings(format="pkl", units="deg").validate()
    with pytest.raises(PlaybackError, match="rate -5"):
        ExportSettings.from_rate(-5)
    path = tmp_path / "export.json"
    path.write_text(json.dumps({"format": "ros2-yaml", "rate_hz": 200, "retime": True,
                                "joint_acceleration_limits": {"elbow": 50.0}}), encoding="utf-8")
    settings = ExportSettings.load(path)
    assert (settings.format, settings.period_s, settings.retime) == ("ros2-yaml", 0.005, True)
    path.write_text('{"format": "csv", "speed": 2}', encoding="utf-8")
    with pytest.raises(PlaybackError, match=f"{path}: unknown field.*speed"):
        ExportSettings.load(path)
    path.write_text('{"retime": "yes"}', encoding="utf-8")
    with pytest.raises(PlaybackError, match="retime: 'yes' is not true or false"):
        ExportSettings.load(path)
    path.write_text('{"rate_hz": "fast"}', encoding="utf-8")  # read "is not a int or float"
    with pytest.raises(PlaybackError, match="rate_hz: 'fast' is not a number$"):
        ExportSettings.load(path)
    path.write_text('{"rate_hz": 0}', encoding="utf-8")
    with pytest.raises(PlaybackError, match="period 0 s: expected a positive number"):
        ExportSettings.load(path)
    path.write_text('{"format": "csv",\n "rate_hz": }', encoding="utf-8")
    with pytest.raises(PlaybackError, match=f"{path}: line 2: invalid JSON"):
        ExportSettings.load(path)
    assert math.isclose(ExportSettings.from_dict({"period_s": 0.005}).rate_hz, 200.0)


def test_motion_must_match_the_robot(tree):
    table = keyed(sines(30, 1.0, 0.5), 30, names=("shoulder", "rail", "elbow"))
    with pytest.raises(PlaybackError, match="do not match the robot's URDF order"):
        prepare_playback(table, JointLimits.from_tree(tree), ExportSettings())
    bad = keyed(sines(30, 1.0, 0.5), 30)
    bad.time[5] = bad.time[4]
    with pytest.raises(PlaybackError, match="key 5 .* does not"):
        resample(bad, 0.01)
