"""Splicing clips (core.splice.join, core.splice.detect) on built curves and on real retargets.

The built curves make every answer known in advance: the issue's worked
example (A's end-preparatory postures at 1.8, 2.0, 2.2, 2.4 s against B's
posture at 0.2 s with integrated differences 73, 40, 12 and 3 degrees),
preparatory movements whose boundaries are known, and clips that run into a
joint limit. The real clips are the CMU walk and hop retargeted onto the G1.
"""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

from core.retarget.automap import auto_map
from core.motion.bvh import load_bvh
from core.model.kinematics import KinematicTree
from core.retarget.pipeline import retarget
from core.splice.join import Clip, SpliceSettings, choose_pair, pair_table, representative_speed, splice
from core.splice.detect import (DetectSettings, Periods, SpliceError, annotate, detect_accumulated,
                                detect_reversal)
from core.model.transforms import quat_to_matrix
from core.model.urdf import parse_urdf

ROOT = Path(__file__).resolve().parents[2]
WALK = ROOT / "data" / "motion" / "cmu_131_01_walk_m.bvh"
HOP = ROOT / "tests" / "data" / "motion" / "cmu_131_03_hop.bvh"
G1 = ROOT / "data" / "robots" / "g1" / "unitree_g1_29dof.urdf"
JOIN_KEYS = {"a_time_s", "b_time_s", "angle_difference_deg", "transition_s", "discarded_s", "criteria_met"}


# ------------------------------------------------------- the worked example ---

B_POSTURE = np.array([10.0, 20.0, -5.0])  # deg, B at 0.2 s
# A's end-preparatory postures (1.8, 2.0, 2.2, 2.4 s) relative to B's: integrated |diff| 73, 40, 12, 3.
A_END = np.array([[40.0, 23.0, 10.0], [22.0, 12.0, 6.0], [6.0, 4.0, -2.0], [1.5, 1.0, -0.5]])


def worked_example(b_step=(-3.0, -3.0, 3.0)) -> tuple[Clip, Clip]:
    """Postures every 0.2 s (5 fps), annotated with markers like an animator's.

    A: a main movement (0.2-1.8 s), then the approach to B's posture. Joints
    0 and 1 close in steadily (driving down); joint 2 overshoots at 2.2 s and
    comes back, so it drives down into 2.2 s and up into 2.4 s. B leaves its
    0.2 s posture by `b_step` degrees per posture (by default joints 0, 1
    driving down and joint 2 up); its 0 s posture is far from all of A's.
    """
    main = B_POSTURE + A_END[0] + 15.0 * np.sin(np.arange(9)[:, None] * np.pi / 2) * [1.0, -1.0, 0.5]
    a = np.vstack([main, B_POSTURE + A_END])
    b_main = B_POSTURE + np.outer(np.arange(1, 10), b_step)
    b = np.vstack([B_POSTURE + 30.0, B_POSTURE, b_main])
    return (Clip("A", np.radians(a), 5.0, markers={"main_start": 1, "main_end": 9}),
            Clip("B", np.radians(b), 5.0, markers={"main_start": 1, "main_end": 8}))


def _join(a: Clip, b: Clip, **changes):
    settings = SpliceSettings(**changes)
    periods = [annotate(c.q, c.fps, c.name, c.markers) for c in (a, b)]
    table = pair_table(a, periods[0], b, periods[1], settings)
    return table, choose_pair(table, a, periods[0], b, periods[1], settings), periods


def test_worked_example_differences():
    a, b = worked_example()
    table, _, periods = _join(a, b)
    assert periods[0] == Periods(1, 9, "markers") and periods[1] == Periods(1, 8, "markers")
    np.testing.assert_allclose(table.a_frames / a.fps, [1.8, 2.0, 2.2, 2.4])
    np.testing.assert_allclose(table.b_frames / b.fps, [0.0, 0.2])
    np.testing.assert_allclose(table.integrated_deg[:, 1], [73.0, 40.0, 12.0, 3.0], atol=1e-9)
    assert np.all(table.integrated_deg[:, 0] > 30.0)  # B's first posture matches none of them
    np.testing.assert_array_equal(table.passes, [[False, False]] * 2 + [[False, True]] * 2)


def test_worked_example_shortest_preparation_picks_2_2():
    a, b = worked_example()
    table, (i, j, met), _ = _join(a, b, threshold_deg=15.0, policy="shortest")
    assert met and table.a_frames[i] / a.fps == pytest.approx(2.2) and table.b_frames[j] / b.fps == pytest.approx(0.2)
    result = splice([a, b], SpliceSettings(threshold_deg=15.0))
    join = result.joins[0]
    assert (join.a_time_s, join.b_time_s) == (pytest.approx(2.2), pytest.approx(0.2))
    assert join.angle_difference_deg == pytest.approx(12.0) and join.criteria_met
    assert join.discarded_s == pytest.approx(0.2 + 0.2)  # A's 2.4 s posture and B's 0 s posture
    assert join.kept_preparation_s == pytest.approx(0.4)
    assert JOIN_KEYS <= set(join.to_dict())
    json.dumps(result.report())  # plain JSON types only


def test_worked_example_similar_policy_and_tighter_threshold():
    a, b = worked_example()
    table, (i, j, met), _ = _join(a, b, policy="similar")
    assert met and table.a_frames[i] / a.fps == pytest.approx(2.4)
    table, (i, j, met), _ = _join(a, b, threshold_deg=5.0)  # only the 3 deg pair passes
    assert met and table.a_frames[i] / a.fps == pytest.approx(2.4)


def test_direction_reversing_pair_is_rejected():
    a, b = worked_example()
    table, _, _ = _join(a, b, match_direction=True)
    assert not table.direction_ok[2, 1]  # joint 2 drives down into 2.2 s, B's drives up from 0.2 s
    assert table.direction_ok[3, 1]
    _, (i, j, met), _ = _join(a, b, match_direction=True)
    assert met and table.a_frames[i] / a.fps == pytest.approx(2.4) and table.b_frames[j] / b.fps == pytest.approx(0.2)


def test_max_joint_criterion():
    a, b = worked_example()
    table, (i, j, met), _ = _join(a, b, criterion="max_joint", max_joint_deg=5.0)
    np.testing.assert_allclose(table.max_joint_deg[:, 1], [40.0, 22.0, 6.0, 1.5])
    assert met and table.a_frames[i] / a.fps == pytest.approx(2.4)


def test_no_pair_falls_back_to_the_closest_and_says_how_to_fix_it():
    a, b = worked_example()
    b = dataclasses.replace(b, q=b.q - np.radians(20.0))  # now nothing is within 15 deg
    table, (i, j, met), _ = _join(a, b)
    assert not met and not table.passes.any()
    assert (i, j) == np.unravel_index(table.integrated_deg.argmin(), table.integrated_deg.shape)
    result = splice([a, b])
    join = result.joins[0]
    assert not join.criteria_met and join.angle_difference_deg == pytest.approx(table.integrated_deg.min())
    assert join.angle_difference_deg > 15.0
    assert (join.a_time_s, join.b_time_s) == (table.a_frames[i] / a.fps, table.b_frames[j] / b.fps)
    assert result.warnings == [join.message]
    for words in ("no posture pair", "'A'", "'B'", "closest pair", "shared home posture", "main_end"):
        assert words in join.message


def test_bad_settings_and_clips_are_named():
    a, b = worked_example()
    with pytest.raises(SpliceError, match="threshold_deg 400 is outside 5-300"):
        splice([a, b], SpliceSettings(threshold_deg=400))
    with pytest.raises(SpliceError, match="mean_deg 40 is outside 0.5-30"):
        splice([a, b], SpliceSettings(criterion="mean", mean_deg=40))
    with pytest.raises(SpliceError, match="policy 'longest'"):
        splice([a, b], SpliceSettings(policy="longest"))
    with pytest.raises(SpliceError, match="change_percent 60 is outside 5-50"):
        splice([a, b], SpliceSettings(detect=DetectSettings(method="accumulated", change_percent=60)))
    with pytest.raises(SpliceError, match="at least two clips"):
        splice([a])
    q = b.q.copy()
    q[4, 2] = np.nan
    with pytest.raises(SpliceError, match="clip 'B': joint 'waist' is not finite at frame 4"):
        splice([a, dataclasses.replace(b, q=q)], joint_names=["hip", "knee", "waist"])
    with pytest.raises(SpliceError, match="clip 'B' has no valid frame rate"):
        splice([a, dataclasses.replace(b, fps=0.0)])
    with pytest.raises(SpliceError, match="join 'A' -> 'B': candidate pair 9 picked, but there are 5"):
        splice([a, b], picks=[8])
    with pytest.raises(SpliceError, match="clip 'B' has joint array shape"):
        splice([a, dataclasses.replace(b, q=b.q[:, :2])])
    with pytest.raises(SpliceError, match="clip 'A': marker 'main_start' .* comes after 'main_end'"):
        splice([dataclasses.replace(a, markers={"main_start": 10, "main_end": 9}), b])


# ----------------------------------------------------------------- detection ---

def _smoothstep(t: np.ndarray) -> np.ndarray:
    t = np.clip(t, 0.0, 1.0)
    return 3 * t ** 2 - 2 * t ** 3


def raise_wave_lower(fps: float = 100.0) -> np.ndarray:
    """Raise the arm (0-1 s), wave three times (1-3 s, reversing at once), lower it (3-4 s)."""
    t = np.arange(int(4 * fps) + 1) / fps
    wave = 0.3 * (1 - np.cos(2 * np.pi * 1.5 * (t - 1.0))) * ((t > 1.0) & (t < 3.0))
    shoulder = _smoothstep(t) - wave - _smoothstep(t - 3.0)
    elbow = -0.5 * (_smoothstep(t) - _smoothstep(t - 3.0))
    return np.column_stack([shoulder, elbow, np.zeros_like(t)])


def test_reversal_detector_finds_the_wave():
    q = raise_wave_lower()
    periods = detect_reversal(q, 100.0)
    # The shoulder reverses at 1 s (and the elbow stops there): main starts the 0.2 s margin before;
    # it ends the margin after the last reversal at 3 s.
    # The shoulder's drive falls under a tenth of its peak speed up to 0.1 s before it reverses.
    assert 0.7 <= periods.main_start / 100.0 <= 0.8
    assert 3.2 <= periods.main_end / 100.0 <= 3.3
    wider = detect_reversal(q, 100.0, DetectSettings(margin_s=0.4))
    assert wider.main_start == periods.main_start - 20 and wider.main_end == periods.main_end + 20


def test_reversal_detector_uses_the_previous_key():
    q = raise_wave_lower()
    keys = np.array([0, 50, 90, 150, 200, 250, 300, 320, 400])
    periods = detect_reversal(q, 100.0, keys=keys)
    assert (periods.main_start, periods.main_end) == (90, 320)


def test_reversal_detector_without_events_keeps_everything():
    t = np.linspace(0, 1, 61)[:, None]
    assert detect_reversal(np.zeros((61, 2)), 60.0) == Periods(0, 60, "reversal")
    one_way = np.hstack([t, np.zeros_like(t)])  # one steady move: no reversal, no stop
    assert detect_reversal(one_way, 60.0) == Periods(0, 60, "reversal")


def stepped(steps: list[float], fps: float = 50.0, spacing_s: float = 0.2) -> np.ndarray:
    """One joint whose postures every `spacing_s` change by |steps| (alternating up and down when
    negative), linear in between, plus a still joint."""
    postures = np.concatenate([[0.0], np.cumsum(steps)])
    per = int(round(spacing_s * fps))
    t = np.arange(len(steps) * per + 1) / per
    return np.column_stack([np.interp(t, np.arange(len(postures)), postures), np.zeros_like(t)])


def test_accumulated_detector_finds_the_change_both_ways():
    # prep: 5 steps of 0.2 rad; main: 10 steps of 0.4 rad back and forth; end prep: 5 of 0.2 rad
    steps = [0.2] * 5 + [0.4, -0.4, -0.4, 0.4] * 2 + [0.4, -0.4] + [-0.2] * 5
    q = stepped(steps)
    periods = detect_accumulated(q, 50.0)
    assert (periods.main_start / 50.0, periods.main_end / 50.0) == (pytest.approx(1.0), pytest.approx(3.0))
    assert annotate(q, 50.0, "wave", settings=DetectSettings(method="accumulated")) == periods


def test_accumulated_detector_thresholds():
    # a single 35 % spike at 0.6 s is not confirmed by the average; a lasting 25 % change
    # at 1.8 s passes 20 % but not the default 30 %
    steps = [0.2, 0.2, 0.2, 0.27] + [0.2] * 5 + [0.25] * 8
    q = stepped(steps)
    assert detect_accumulated(q, 50.0).main_start == 0  # nothing found: all main movement
    found = detect_accumulated(q, 50.0, DetectSettings(change_percent=20.0))
    assert found.main_start / 50.0 == pytest.approx(1.8)


def test_markers_override_and_complete_detection():
    q = raise_wave_lower()
    detected = detect_reversal(q, 100.0)
    both = annotate(q, 100.0, "wave", {"main_start": 120, "main_end": 260})
    assert both == Periods(120, 260, "markers")
    start_only = annotate(q, 100.0, "wave", {"main_start": 120})
    assert start_only == Periods(120, detected.main_end, "markers+reversal")
    with pytest.raises(SpliceError, match="clip 'wave': marker 'main_end' at frame 900 is outside"):
        annotate(q, 100.0, "wave", {"main_end": 900})


# ---------------------------------------------------------------- transitions ---

def limit_clips(fps: float = 60.0) -> tuple[Clip, Clip, np.ndarray, np.ndarray]:
    """A ends rising fast into joint 0's upper limit; B leaves it falling; limits +-1 rad."""
    t = np.arange(int(1.5 * fps)) / fps
    a = np.column_stack([0.97 * np.sin(2 * np.pi * 0.6 * t + 0.3), 0.5 * np.cos(2 * np.pi * t)])
    b = np.column_stack([0.9 * np.cos(2 * np.pi * 0.5 * t + 0.2), -0.4 + 0.3 * np.sin(2 * np.pi * t)])
    clips = (Clip("rise", a, fps, periods=Periods(0, len(t) - 1)), Clip("fall", b, fps, periods=Periods(0, len(t) - 1)))
    return clips[0], clips[1], np.array([-1.0, -1.0]), np.array([1.0, 1.0])


def test_transition_stays_inside_limits_without_velocity_jumps():
    a, b, lower, upper = limit_clips()
    result = splice([a, b], SpliceSettings(threshold_deg=30.0), lower=lower, upper=upper)
    join, transition = result.joins[0], result.transitions[0]
    assert np.all(result.q >= lower) and np.all(result.q <= upper)
    assert np.all(transition.q >= lower) and np.all(transition.q <= upper)
    assert transition.velocity_jump_rad_s <= transition.allowed_jump_rad_s
    # measured on the result: the velocity change across each seam is no larger than the clips' own
    start = result.pieces[1].out_first
    end = start + len(transition.q) - 1
    own = max(np.abs(np.diff(c.q, 2, axis=0)).max() for c in (a, b))
    for seam in (start, end):
        assert np.abs(np.diff(result.q[seam - 1:seam + 2], 2, axis=0)).max() <= own + 1e-12
    assert join.transition_s == pytest.approx(transition.duration_s)
    assert join.transition_s > 0


def test_transition_speed_statistics_and_given_speed():
    a, b, lower, upper = limit_clips()
    pa, pb = a.periods, b.periods
    speeds = {stat: representative_speed(a, pa, b, pb, SpliceSettings(speed_statistic=stat))
              for stat in ("mean", "median", "mode")}
    assert all(0.1 < s < 5.0 for s in speeds.values()) and len(set(speeds.values())) == 3
    assert representative_speed(a, pa, b, pb, SpliceSettings(speed_source="a")) != speeds["median"]
    slow = splice([a, b], SpliceSettings(speed_rad_s=0.2), lower=lower, upper=upper).joins[0]
    fast = splice([a, b], SpliceSettings(speed_rad_s=2.0), lower=lower, upper=upper).joins[0]
    assert slow.speed_rad_s == 0.2 and slow.transition_s > fast.transition_s
    gap = np.abs(a.q[int(round(slow.a_time_s * a.fps))] - b.q[int(round(slow.b_time_s * b.fps))]).max()
    assert slow.transition_s == pytest.approx(gap / 0.2, abs=1.0 / a.fps)  # largest change / speed


def test_three_clips_join_in_order():
    a, b = worked_example()
    c = dataclasses.replace(a, name="C")
    b = dataclasses.replace(b, markers={"main_start": 1, "main_end": 9})
    result = splice([a, b, c])
    assert [(j.a_clip, j.b_clip) for j in result.joins] == [("A", "B"), ("B", "C")]
    kinds = [(p.kind, p.index) for p in result.pieces]
    assert kinds == [("clip", 0), ("transition", 0), ("clip", 1), ("transition", 1), ("clip", 2)]
    frames = sum(p.last - p.first + 1 for p in result.pieces if p.kind == "clip")
    frames += sum(p.last - 1 for p in result.pieces if p.kind == "transition")
    assert len(result.q) == frames
    for piece in result.pieces:  # every piece sits where the result says
        source = ([a, b, c][piece.index].q[piece.first:piece.last + 1] if piece.kind == "clip"
                  else result.transitions[piece.index].q)
        np.testing.assert_allclose(result.q[piece.out_first:piece.out_first + len(source)], source, atol=1e-12)


# ---------------------------------------------------------------- real clips ---

@pytest.fixture(scope="module")
def g1() -> KinematicTree:
    return KinematicTree(parse_urdf(G1))


def _retarget(path: Path, tree: KinematicTree, first: int, count: int) -> Clip:
    motion = load_bvh(path).to_source_motion()
    keep = slice(first, first + count)
    motion = dataclasses.replace(motion, heads=motion.heads[keep], tails=motion.tails[keep],
                                 root_rotation=motion.root_rotation[keep])
    result = retarget(motion, tree, auto_map(motion, tree))
    return Clip(f"{path.stem}@{first}", result.q, result.fps, result.root_position, result.root_quaternion)


def _cut(clip: Clip, first: int, count: int) -> Clip:
    keep = slice(first, first + count)
    return Clip(f"{clip.name}+{first}", clip.q[keep], clip.fps, clip.root_position[keep], clip.root_quaternion[keep])


@pytest.fixture(scope="module")
def real(g1) -> dict[str, Clip]:
    """2 s clips at 120 fps with 0.5 s preparatory windows.

    Two takes of one walk retarget overlap by 0.33 s (the same postures
    occur in both windows); the hop and a later walk share no posture within
    the thresholds: mocap of different gaits never returns to a common pose.
    """
    walk = _retarget(WALK, g1, 0, 600)
    clips = {"walk": _cut(walk, 0, 240), "walk_overlap": _cut(walk, 200, 240), "walk_late": _cut(walk, 360, 240),
             "hop": _retarget(HOP, g1, 300, 240)}
    return {k: dataclasses.replace(c, periods=Periods(60, 179)) for k, c in clips.items()}


def _check_seams(result, tree: KinematicTree) -> None:
    q, pos = result.q, result.root_position
    assert np.all(q >= tree.lower - 1e-12) and np.all(q <= tree.upper + 1e-12)
    assert np.all(np.isfinite(q)) and np.all(np.isfinite(pos))
    np.testing.assert_allclose(np.linalg.norm(result.root_quaternion, axis=1), 1.0, atol=1e-9)
    step = np.abs(np.diff(q, axis=0)).max(axis=1)  # rad per frame
    assert step.max() <= np.max(tree.velocity) / result.fps * 1.5 + 1e-9
    root_step = np.linalg.norm(np.diff(pos, axis=0), axis=1)
    assert root_step.max() < 0.03  # m per frame (3.6 m/s): no jump back to a clip's recorded start
    for join in result.joins:
        assert join.velocity_jump_rad_s <= join.allowed_jump_rad_s
        seam_a = int(round(join.out_time_s * result.fps))
        seam_b = seam_a + int(round(join.transition_s * result.fps))
        for seam in (seam_a, seam_b):  # velocity changes across the seams: no more than the clips' own
            jump = np.abs(np.diff(q[seam - 1:seam + 2], 2, axis=0)).max() * result.fps
            assert jump <= join.allowed_jump_rad_s * 1.0001
        forward = quat_to_matrix(result.root_quaternion[[seam_a - 1, seam_b + 1]])[:, :2, 0]  # heading: yaw only
        forward /= np.linalg.norm(forward, axis=1, keepdims=True)
        assert np.degrees(np.arccos(np.clip(forward[0] @ forward[1], -1, 1))) < 10.0


def test_real_overlapping_takes_join_where_they_match(real, g1):
    result = splice([real["walk"], real["walk_overlap"]], lower=g1.lower, upper=g1.upper,
                    velocity=g1.velocity, joint_names=g1.joint_names)
    join = result.joins[0]
    assert join.criteria_met and not join.message
    assert join.threshold_deg == 2.5 * 29  # the sum's default for a 29-joint robot
    assert join.angle_difference_deg <= join.threshold_deg
    assert 1.49 <= join.a_time_s <= 2.0 and 0.0 <= join.b_time_s <= 0.5
    assert join.discarded_s > 0 and join.time_saved_s > 0
    _check_seams(result, g1)


def _windows_hold(result, join_index: int) -> None:
    """The chosen pair lies in A's end and B's start preparatory windows (seconds of each clip)."""
    join = result.joins[join_index]
    pa, pb = result.periods[join_index], result.periods[join_index + 1]
    fps = result.fps
    assert pa.main_end / fps - 1e-9 <= join.a_time_s and join.b_time_s <= pb.main_start / fps + 1e-9


def test_real_walk_hop_walk(real, g1):
    """Different gaits share no posture: each join must still be the closest pair inside the windows,
    make the seams continuous, save time against a cut through the home pose, and say what to do."""
    clips = [real["walk"], real["hop"], real["walk_late"]]
    result = splice(clips, lower=g1.lower, upper=g1.upper, velocity=g1.velocity, joint_names=g1.joint_names)
    assert len(result.joins) == 2
    _check_seams(result, g1)
    duration = sum((c.frames - 1) / result.fps for c in clips)
    for k, join in enumerate(result.joins):
        _windows_hold(result, k)
        table = pair_table(clips[k], result.periods[k], clips[k + 1], result.periods[k + 1], SpliceSettings())
        assert not join.criteria_met and join.fallback == "closest"
        assert join.angle_difference_deg == pytest.approx(table.integrated_deg.min())  # the closest pair
        assert join.angle_difference_deg > join.threshold_deg == 72.5
        assert join.time_saved_s > 0.3 and join.discarded_s > 0  # 0.35 s least with the arms kept out of the body
        assert "sum criterion" not in join.message  # its needed threshold is above what the tool accepts
        assert "the mean criterion at" in join.message and "shared home posture" in join.message
        duration += join.transition_s - join.discarded_s
    assert (len(result.q) - 1) / result.fps == pytest.approx(duration, abs=1e-9)  # seconds add up
    # the root carries on: the hop starts where the walk stopped, not where it was recorded
    hop_piece = result.pieces[2]
    hop_start = result.root_position[hop_piece.out_first]
    transition_end = result.transitions[0].root_position[-1]
    np.testing.assert_allclose(hop_start, transition_end, atol=1e-9)


def test_real_walk_hop_meets_the_mean_criterion_when_asked(real, g1):
    """The message's suggestion works: the mean threshold it names lets the closest pair pass."""
    clips = [real["walk"], real["hop"]]
    first = splice(clips, joint_names=g1.joint_names).joins[0]
    suggested = float(first.message.split("the mean criterion at ")[1].split(" deg")[0])
    assert 0.5 <= suggested <= 30.0
    again = splice(clips, SpliceSettings(criterion="mean", mean_deg=suggested), lower=g1.lower, upper=g1.upper,
                   velocity=g1.velocity, joint_names=g1.joint_names)
    join = again.joins[0]
    assert join.criteria_met and join.fallback == "" and join.mean_difference_deg <= suggested
    _windows_hold(again, 0)
    _check_seams(again, g1)
