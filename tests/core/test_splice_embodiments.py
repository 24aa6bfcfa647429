"""The splice method's embodiments on built curves whose answers are known in advance.

The worked example (tests/core/test_splice.py: A's end-preparatory postures
at 1.8, 2.0, 2.2, 2.4 s, 73/40/12/3 degrees from B's 0.2 s posture) under
each way of choosing the join: angle only, the same drive direction with its
fallback, the closest integrated drive speed, the speed of the joint that
changes most, fixed-duration windows; the detector variants; the linear
transition; criteria and defaults for robots of 6 to 40 joints; and clips at
24, 30 and 120 fps spliced together, checked in seconds.
"""
from __future__ import annotations

import re

import numpy as np
import pytest

from core.splice.detect import DetectSettings, Periods, annotate, detect_accumulated, detect_fixed
from core.splice.join import Clip, SpliceSettings, splice
from core.splice.settings import THRESHOLD_RANGE, default_sum_threshold

from .test_splice import _join, limit_clips, raise_wave_lower, stepped, worked_example


def _times(table, i, j, a, b) -> tuple[float, float]:
    return table.a_frames[i] / a.fps, table.b_frames[j] / b.fps


# ------------------------------------------------------------ angle only ---

def test_angle_only_takes_the_shortest_preparation():
    a, b = worked_example()
    table, (i, j, met), _ = _join(a, b, threshold_deg=15.0)
    assert met and _times(table, i, j, a, b) == (pytest.approx(2.2), pytest.approx(0.2))
    join = splice([a, b], SpliceSettings(threshold_deg=15.0)).joins[0]
    assert (join.a_time_s, join.b_time_s, join.fallback) == (pytest.approx(2.2), pytest.approx(0.2), "")
    # the candidates an animator may pick instead: the best first, the 3 deg pair among them
    assert (join.candidates[0]["a_time_s"], join.candidates[0]["b_time_s"]) == (pytest.approx(2.2), pytest.approx(0.2))
    other = next(c for c in join.candidates if c["a_time_s"] == pytest.approx(2.4) and c["b_time_s"] == pytest.approx(0.2))
    picked = splice([a, b], SpliceSettings(threshold_deg=15.0), picks=[join.candidates.index(other)]).joins[0]
    assert (picked.a_time_s, picked.angle_difference_deg, picked.criteria_met) == (pytest.approx(2.4),
                                                                                  pytest.approx(3.0), True)


# ------------------------------------------------- same drive direction ---

def test_same_direction_falls_back_to_the_shortest_passing_pair():
    """B leaves 0.2 s with joint 1 driving up: every A posture arrives with it driving down, so no
    pair drives the same way. The fallback is the shortest preparation within the angle threshold
    (2.2 s, 12 deg), not the closest pair (2.4 s, 3 deg), whatever the policy."""
    a, b = worked_example(b_step=(-3.0, 3.0, 3.0))
    table, (i, j, met), _ = _join(a, b, match_direction=True)
    assert not table.passes.any() and not table.direction_ok[1:, 1].any()  # 1.8 s arrives at rest
    assert met and _times(table, i, j, a, b) == (pytest.approx(2.2), pytest.approx(0.2))
    for policy in ("shortest", "similar", "speed"):
        join = splice([a, b], SpliceSettings(match_direction=True, policy=policy)).joins[0]
        assert (join.a_time_s, join.b_time_s) == (pytest.approx(2.2), pytest.approx(0.2)), policy
        assert join.criteria_met and join.fallback == "conditions"
        assert "the same drive direction" in join.message and "shortest preparation" in join.message
    # with the direction condition met by the 2.4 s pair (the default B), that pair is taken
    a, b = worked_example()
    join = splice([a, b], SpliceSettings(match_direction=True)).joins[0]
    assert join.a_time_s == pytest.approx(2.4) and join.fallback == ""


# -------------------------------------------------------------- speeds ---

def test_closest_integrated_speed_policy_follows_b():
    """A arrives at 2.2 s at 160 deg/s summed over joints, at 2.4 s at 45 deg/s. The policy takes
    the passing pair whose speed is closest to B's: B slow (45 deg/s) -> 2.4 s, B fast -> 2.2 s."""
    for step, expected in (((-3.0, -3.0, 3.0), 2.4), ((-16.0, -8.0, 8.0), 2.2)):
        a, b = worked_example(b_step=step)
        table, _, _ = _join(a, b, policy="speed")
        np.testing.assert_allclose(np.degrees(table.speed_a[2:, 1]), [160.0, 45.0], atol=1e-9)
        np.testing.assert_allclose(np.degrees(table.speed_b[:, 1]), 5.0 * np.abs(step).sum(), atol=1e-9)
        join = splice([a, b], SpliceSettings(policy="speed")).joins[0]
        assert join.a_time_s == pytest.approx(expected) and join.b_time_s == pytest.approx(0.2), step
        assert join.speed_gap_rad_s == pytest.approx(0.0, abs=1e-9)
    shortest = splice(list(worked_example()), SpliceSettings(policy="shortest")).joins[0]
    assert shortest.a_time_s == pytest.approx(2.2)  # the speed, not the tempo, decided above


def test_speed_condition_filters_pairs():
    """Within 30 % of each other: 45 vs 45 deg/s passes, 160 vs 45 does not; 0 % keeps only equal."""
    a, b = worked_example()
    table, (i, j, met), _ = _join(a, b, match_speed=True)
    assert not table.speed_ok[2, 1] and table.speed_ok[3, 1]
    assert met and _times(table, i, j, a, b) == (pytest.approx(2.4), pytest.approx(0.2))
    loose, _, _ = _join(a, b, match_speed=True, speed_tolerance=0.8)
    assert loose.speed_ok[2, 1]  # |160 - 45| / 160 = 0.72
    join = splice([a, b], SpliceSettings(match_speed=True, speed_tolerance=0.8)).joins[0]
    assert join.a_time_s == pytest.approx(2.2)


def test_largest_joint_speed_variant():
    """B leaves driving joint 0 alone at 80 deg/s. Summed over joints, A's 2.4 s posture (45 deg/s)
    is closest to B's 80; compared on the joint that changes most (joint 0), A's 2.2 s posture
    (joint 0 at 80 deg/s) matches exactly."""
    a, b = worked_example(b_step=(-16.0, 0.0, 0.0))
    join = splice([a, b], SpliceSettings(policy="speed")).joins[0]
    assert join.a_time_s == pytest.approx(2.4)
    table, _, _ = _join(a, b, policy="speed", speed_measure="largest_joint")
    np.testing.assert_allclose(np.degrees(table.speed_a[2:, 1]), [80.0, 22.5], atol=1e-9)
    np.testing.assert_allclose(np.degrees(table.speed_b[2:, 1]), [80.0, 80.0], atol=1e-9)
    join = splice([a, b], SpliceSettings(policy="speed", speed_measure="largest_joint")).joins[0]
    assert join.a_time_s == pytest.approx(2.2) and join.speed_gap_rad_s == pytest.approx(0.0, abs=1e-9)
    table, (i, j, _), _ = _join(a, b, match_speed=True, speed_measure="largest_joint")
    assert table.speed_ok[2, 1] and not table.speed_ok[3, 1]  # 22.5 vs 80 is outside 30 %


# ----------------------------------------------------- fixed-duration windows ---

def test_fixed_duration_windows():
    """No markers: 0.6 s windows from each end are A's 1.8-2.4 s and B's 0-0.6 s postures; the
    join is the worked example's 2.2 s / 0.2 s. Windows too short to hold it move the join."""
    a, b = worked_example(b_step=(-6.0, -6.0, 6.0))
    a.markers, b.markers = {}, {}
    fixed = DetectSettings(method="fixed", window_s=0.6)
    assert annotate(a.q, a.fps, "A", settings=fixed) == Periods(3, 9, "fixed")
    assert annotate(b.q, b.fps, "B", settings=fixed) == Periods(3, 7, "fixed")
    result = splice([a, b], SpliceSettings(detect=fixed))
    join = result.joins[0]
    assert (join.a_time_s, join.b_time_s, join.criteria_met) == (pytest.approx(2.2), pytest.approx(0.2), True)
    assert result.report()["clips"][0] == {"name": "A", "main_start_s": 0.6, "main_end_s": 1.8, "source": "fixed"}
    short = splice([a, b], SpliceSettings(detect=DetectSettings(method="fixed", window_s=0.0))).joins[0]
    assert (short.a_time_s, short.b_time_s) == (pytest.approx(2.4), 0.0)  # only the clips' ends are left
    tiny = detect_fixed(np.zeros((5, 2)), 10.0, DetectSettings(method="fixed", window_s=1.0))
    assert tiny == Periods(2, 2, "fixed")  # shorter than both windows: split at the middle


# ------------------------------------------------------------ detector variants ---

def test_accumulated_rule_without_confirmation_takes_the_first_change():
    steps = [0.2, 0.2, 0.2, 0.27] + [0.2] * 5 + [0.25] * 8  # a single 35 % spike at 0.6 s
    q = stepped(steps)
    assert detect_accumulated(q, 50.0).main_start == 0  # not confirmed by the average
    unconfirmed = detect_accumulated(q, 50.0, DetectSettings(method="accumulated", confirm=False))
    assert unconfirmed.main_start / 50.0 == pytest.approx(0.6)


def test_accumulated_rule_with_the_reversal_margin():
    steps = [0.2] * 5 + [0.4, -0.4, -0.4, 0.4] * 2 + [0.4, -0.4] + [-0.2] * 5
    q = stepped(steps)
    plain = detect_accumulated(q, 50.0)
    margin = detect_accumulated(q, 50.0, DetectSettings(method="accumulated", accumulated_margin=True))
    assert (plain.main_start / 50.0, plain.main_end / 50.0) == (pytest.approx(1.0), pytest.approx(3.0))
    assert (margin.main_start / 50.0, margin.main_end / 50.0) == (pytest.approx(0.8), pytest.approx(3.2))
    keyed = detect_accumulated(q, 50.0, DetectSettings(accumulated_margin=True), keys=np.arange(0, 201, 10))
    assert (keyed.main_start, keyed.main_end) == (40, 160)  # the previous keyed posture, both ends
    wave = detect_fixed(raise_wave_lower(), 100.0)  # 0.5 s by default
    assert (wave.main_start, wave.main_end) == (50, 350)


# ------------------------------------------------------------- linear transition ---

def test_linear_transition_is_straight_at_the_speed():
    a, b, lower, upper = limit_clips()
    result = splice([a, b], SpliceSettings(transition="linear", speed_rad_s=0.5), lower=lower, upper=upper)
    join, transition = result.joins[0], result.transitions[0]
    path = transition.q
    assert join.transition_shape == "linear" and len(path) > 2
    np.testing.assert_allclose(np.diff(path, 2, axis=0), 0.0, atol=1e-12)  # constant joint velocity
    gap = np.abs(path[-1] - path[0]).max()
    assert gap / 0.5 <= join.transition_s < gap / 0.5 + 1.0 / a.fps
    assert np.abs(np.diff(path, axis=0)).max() * a.fps <= 0.5 + 1e-9  # whole frames: never faster
    assert np.all(path >= lower) and np.all(path <= upper)
    eased = splice([a, b], SpliceSettings(speed_rad_s=0.5), lower=lower, upper=upper).joins[0]
    assert eased.transition_shape == "eased" and eased.velocity_jump_rad_s < join.velocity_jump_rad_s


# --------------------------------------------------- criteria and their defaults ---

def _near_pair(joints: int, apart_deg: tuple[float, float], seed: int = 3) -> tuple[Clip, Clip]:
    """A ends on a posture, B starts between apart_deg[0] and apart_deg[1] away from it on every joint."""
    rng = np.random.default_rng(seed)
    posture = rng.uniform(-1, 1, joints)
    offset = np.radians(rng.uniform(*apart_deg, joints)) * rng.choice([-1.0, 1.0], joints)
    ramp = np.linspace(0, 1, 20)[:, None] * rng.uniform(-0.5, 0.5, joints)
    a = Clip("A", posture - ramp[::-1], 20.0, periods=Periods(0, 19))
    b = Clip("B", posture + offset + ramp, 20.0, periods=Periods(0, 19))
    return a, b


@pytest.mark.parametrize("joints", [6, 12, 29, 40])
def test_defaults_fit_robots_of_6_to_40_joints(joints):
    """Postures 0.9-2.1 deg apart on every joint join under every criterion's default; 8.4-11 deg
    apart do not, for any joint count from 6 to 40."""
    assert SpliceSettings().threshold_for(joints) == default_sum_threshold(joints)
    assert default_sum_threshold(joints) == max(15.0, 2.5 * joints)
    for criterion in ("integrated", "mean", "max_joint"):
        near = splice(list(_near_pair(joints, (0.9, 2.1))), SpliceSettings(criterion=criterion)).joins[0]
        far = splice(list(_near_pair(joints, (8.4, 11.0))), SpliceSettings(criterion=criterion)).joins[0]
        assert near.criteria_met and not far.criteria_met, (criterion, near.mean_difference_deg,
                                                            far.mean_difference_deg)


def test_mean_criterion_on_the_worked_example():
    a, b = worked_example()
    table, (i, j, met), _ = _join(a, b, criterion="mean", mean_deg=5.0)
    np.testing.assert_allclose(table.measure("mean")[:, 1], np.array([73.0, 40.0, 12.0, 3.0]) / 3)
    assert met and _times(table, i, j, a, b) == (pytest.approx(2.2), pytest.approx(0.2))
    assert SpliceSettings(criterion="sum").criterion == "integrated"  # the command line's word
    assert SpliceSettings(criterion="largest").criterion == "max_joint"


@pytest.mark.parametrize("shift_deg", [8.0, 20.0, 60.0, 170.0])
def test_warnings_suggest_only_thresholds_the_tool_accepts(shift_deg):
    a, b = worked_example()
    b.q = b.q - np.radians(shift_deg)
    join = splice([a, b]).joins[0]
    assert not join.criteria_met and "shared home posture" in join.message
    offers = re.findall(r"the (sum|mean|largest joint) criterion at ([0-9.]+) deg", join.message)
    names = {"sum": "integrated", "mean": "mean", "largest joint": "max_joint"}
    for name, value in offers:
        low, high = THRESHOLD_RANGE[names[name]]
        assert low <= float(value) <= high
        passing = splice([a, b], SpliceSettings(criterion=names[name], **{
            {"integrated": "threshold_deg", "mean": "mean_deg", "max_joint": "max_joint_deg"}[names[name]]:
                float(value)})).joins[0]
        assert passing.criteria_met  # the suggestion works
    if shift_deg == 170.0:  # 3 joints ~170 deg apart: over every criterion's highest threshold
        assert not offers and "No threshold the tool accepts" in join.message
    else:
        assert offers


# ------------------------------------------------------ clips at any frame rate ---

RAMP = np.radians([24.0, -12.0, 6.0])  # rad/s per joint: 42 deg/s summed at the end of A and B
START = {"A": np.radians([10.0, 20.0, -5.0]), "B": np.radians([-30.0, 5.0, 15.0]), "C": np.radians([0.0, 0.0, 0.0])}


def analytic(name: str, t: np.ndarray, next_start: np.ndarray | None) -> np.ndarray:
    """(len(t), 3) rad of a 2 s clip defined in continuous time.

    Start preparation (0-0.5 s): from the clip's start posture at twice RAMP.
    Main (0.5-1.5 s): a wave that vanishes at both ends. End preparation
    (1.5-2 s): towards `next_start` at RAMP, arriving at 2 s. So the pair
    within 16 deg keeping the least preparation is A at 2 - 16/42 s (on any
    frame grid of 24 or 120 fps: 1.625 s) and B at 0 s.
    """
    t = np.asarray(t, float)[:, None]
    start = START[name]
    q = start + 2 * RAMP * np.minimum(t, 0.5)
    wave = 0.2 * np.sin(2 * np.pi * (np.clip(t, 0.5, 1.5) - 0.5)) * [1.0, -1.0, 0.5]
    q = q + wave
    if next_start is not None:  # the end ramp lands on the next clip's start posture
        end_from = next_start - 0.5 * RAMP
        main_end = start + 2 * RAMP * 0.5
        blend = np.clip((t - 0.5) / 1.0, 0, 1)
        q = q + blend * (end_from - main_end) + RAMP * np.clip(t - 1.5, 0, 0.5)
    return q


def rate_clips() -> tuple[list[Clip], dict]:
    clips, exact = [], {}
    for name, fps, follower in (("A", 24.0, "B"), ("B", 30.0, "C"), ("C", 120.0, None)):
        t = np.arange(int(round(2.0 * fps)) + 1) / fps
        nxt = START[follower] if follower else None
        clips.append(Clip(name, analytic(name, t, nxt), fps, markers={"main_start": 0.5 * fps, "main_end": 1.5 * fps}))
        exact[name] = (lambda s, n=name, x=nxt: analytic(n, np.atleast_1d(s), x)[0])
    return clips, exact


@pytest.mark.parametrize("fps", [None, 120.0])
def test_clips_at_24_30_and_120_fps(fps):
    clips, exact = rate_clips()
    settings = SpliceSettings(threshold_deg=16.0, speed_rad_s=0.5, transition="linear", fps=fps)
    result = splice(clips, settings)
    rate = fps or 24.0
    assert result.fps == rate
    resampled = [(r["clip"], r["from_fps"], r["to_fps"]) for r in result.report()["resampled"]]
    assert resampled == [(c.name, c.fps, rate) for c in clips if c.fps != rate]
    assert any("resampled from 30 to" in w for w in result.warnings)
    for join, (a_name, b_name) in zip(result.joins, (("A", "B"), ("B", "C"))):
        assert join.criteria_met and (join.a_clip, join.b_clip) == (a_name, b_name)
        assert (join.a_time_s, join.b_time_s) == (pytest.approx(1.625), pytest.approx(0.0, abs=1e-12))
        # the seams in seconds: the result plays A's posture at the join time, then B's, exactly
        start = join.out_time_s
        end = start + join.transition_s
        np.testing.assert_allclose(result.q[int(round(start * rate))], exact[a_name](1.625), atol=1e-9)
        np.testing.assert_allclose(result.q[int(round(end * rate))], exact[b_name](0.0), atol=1e-9)
        gap = np.abs(exact[b_name](0.0) - exact[a_name](1.625)).max()
        assert gap / 0.5 <= join.transition_s < gap / 0.5 + 1.0 / rate  # largest change at 0.5 rad/s
    # the whole result lasts: A to 1.625 s, transition, B 0-1.625 s, transition, C whole (2 s)
    expected = 1.625 + result.joins[0].transition_s + 1.625 + result.joins[1].transition_s + 2.0
    assert (len(result.q) - 1) / rate == pytest.approx(expected, abs=1e-9)
