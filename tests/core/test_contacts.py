"""Contact detection (core.feet.contacts) on a hand-built walk with known footfalls and on the CMU
clips, and the contacts JSON file: round trip and errors that name the file."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from core.motion.bvh import load_bvh
from core.feet.contacts import (Contacts, ContactsError, DetectSettings, detect_contacts, flags_to_intervals,
                           foot_tracks)
from core.chains.mapping import ChainMapping, Mapping
from core.motion.source import SourceMotion

ROOT = Path(__file__).resolve().parents[2]
WALK = ROOT / "data" / "motion" / "cmu_131_01_walk_m.bvh"
HOP = ROOT / "tests" / "data" / "motion" / "cmu_131_03_hop.bvh"
HOP_SCALE = 0.056444
FPS = 60.0
STEP = 36  # frames per step: each foot swings 36 frames, then stands 36 (a slow walk, no flight)


# ---------------------------------------------------------------- synthetic ---

def _leg_names(side: str) -> list[str]:
    s = side[0].upper()
    return [f"{s}Hip", f"{s}Knee", f"{s}Ankle", f"{s}Toe"]


def _walk_mapping() -> Mapping:
    chains = [ChainMapping(f"{side}_leg", _leg_names(side)[0], [_leg_names(side)[3]], "base", ["foot"],
                           role="leg", side=side, source_tip_tail=True,
                           source_landmarks=_leg_names(side)[1:3], robot_landmarks=["knee", "ankle"])
              for side in ("left", "right")]
    return Mapping(chains)


def _foot_path(frames: int, phase: int, stride: float, lift: float) -> tuple[np.ndarray, np.ndarray]:
    """Ankle position (F, 3) of one foot: stands still, then swings `stride` forward on an arc.

    Returns the track and its known contact flags (F,). A foot with phase 0
    starts standing, phase STEP starts swinging.
    """
    f = np.arange(frames) + phase
    cycle, t = f // (2 * STEP), f % (2 * STEP)
    swing = t >= STEP
    u = np.where(swing, (t - STEP) / STEP, 0.0)
    x = stride * (cycle + np.where(swing, 0.5 - 0.5 * np.cos(np.pi * u), 0.0))
    z = np.where(swing, lift * np.sin(np.pi * u), 0.0)
    return np.column_stack([x, np.zeros(frames), z]), ~swing


def synthetic_walk(frames: int = 300, scale: float = 1.0) -> tuple[SourceMotion, dict[str, np.ndarray]]:
    """A two-legged walk along +x whose footfalls are known: (motion, {side: flags (F,)}).

    Bones per leg: hip -> knee -> ankle -> toe (the toe bone's tail is the toe
    tip, 0.15 in front of the ankle); the hips ride 0.85 above the ground.
    """
    names, parents = ["Hips"], [-1]
    for side in ("left", "right"):
        for k, name in enumerate(_leg_names(side)):
            names.append(name)
            parents.append(0 if k == 0 else len(names) - 2)
    heads = np.zeros((frames, len(names), 3))
    tails = np.zeros_like(heads)
    known = {}
    for side, width, phase in (("left", 0.1, 0), ("right", -0.1, STEP)):
        ankle, flags = _foot_path(frames, phase, 0.6, 0.12)
        ankle[:, 1] = width
        ankle[:, 2] += 0.08
        toe = ankle + [0.15, 0.0, -0.07]
        hip = np.column_stack([0.6 * np.arange(frames) / (2 * STEP) + 0.15, np.full(frames, width),
                               np.full(frames, 0.85)])
        knee = (hip + ankle) / 2 + [0.08, 0.0, 0.0]
        first = names.index(_leg_names(side)[0])
        joints = [hip, knee, ankle, ankle + [0.1, 0.0, -0.06]]
        for k in range(4):
            heads[:, first + k] = joints[k]
            tails[:, first + k] = joints[k + 1] if k < 3 else toe
        known[side] = flags
    heads[:, 0] = (heads[:, 1] + heads[:, 5]) / 2
    tails[:, 0] = heads[:, 0] + [0.0, 0.0, 0.1]
    rest_heads, rest_tails = heads[0].copy(), tails[0].copy()
    rot = np.broadcast_to(np.eye(3), (frames, 3, 3)).copy()
    motion = SourceMotion(names, np.array(parents), heads * scale, tails * scale, rot, rest_heads * scale,
                          rest_tails * scale, np.eye(3), FPS, "synthetic walk")
    return motion, known


def _mismatch(found: np.ndarray, known: np.ndarray) -> list[int]:
    """Per known contact, how many frames its detected start and end are off (worst of the two)."""
    got = flags_to_intervals(found)
    out = []
    for start, end in flags_to_intervals(known):
        overlapping = [g for g in got if g[0] < end and g[1] > start]
        assert len(overlapping) == 1, (start, end, got)
        g = overlapping[0]
        out.append(max(abs(g[0] - start) if start > 0 else 0, abs(g[1] - end) if end < len(known) else 0))
    return out


def test_synthetic_walk_footfalls_are_found():
    motion, known = synthetic_walk()
    contacts = detect_contacts(motion, _walk_mapping())
    assert set(contacts.feet) == {"left", "right"}
    for side in ("left", "right"):
        assert len(contacts.intervals(side)) == len(flags_to_intervals(known[side]))
        # touch-down and lift-off within a few frames (the foot is slow just before and after)
        assert max(_mismatch(contacts.feet[side], known[side])) <= 6
        assert np.mean(contacts.feet[side] == known[side]) > 0.9


def test_detection_does_not_depend_on_units():
    motion, _ = synthetic_walk()
    in_cm, _ = synthetic_walk(scale=100.0)
    mapping = _walk_mapping()
    a, b = detect_contacts(motion, mapping), detect_contacts(in_cm, mapping)
    for side in ("left", "right"):
        np.testing.assert_array_equal(a.feet[side], b.feet[side])


def test_a_jitter_does_not_split_a_contact():
    motion, known = synthetic_walk()
    jitter = np.random.default_rng(1).normal(0.0, 0.002, motion.heads.shape)
    noisy = SourceMotion(motion.bone_names, motion.parents, motion.heads + jitter, motion.tails + jitter,
                         motion.root_rotation, motion.rest_heads, motion.rest_tails, motion.rest_root_rotation,
                         motion.fps, "noisy")
    contacts = detect_contacts(noisy, _walk_mapping())
    for side in ("left", "right"):
        assert len(contacts.intervals(side)) == len(flags_to_intervals(known[side]))


@pytest.mark.xfail(strict=True, reason=(
    "the ground level is a clip-wide low percentile of each foot's slow heights: one stance 0.08 m low pulls the "
    "left foot's level down and its other stances read 0.1 leg lengths above it (114 of 240 frames off, "
    "2026-12-03); see test_contacts_do_not_depend_on_where_the_clip_was_cut and "
    "docs/history/planted_feet.md (session 15, s15-cutcontacts)"))
def test_one_low_rest_does_not_move_the_ground():
    """A stance of one foot 0.08 m lower (a marker slipped, a step into a dip) is that stance's
    business: the other footfalls are found as without it. A clip-wide low percentile took it
    as the ground and lost the others (0.08 m is ~0.1 leg lengths, above height_on)."""
    motion, known = synthetic_walk()
    dipped_heads, dipped_tails = motion.heads.copy(), motion.tails.copy()
    first, end = flags_to_intervals(known["left"])[1]
    bones = [motion.index(name) for name in _leg_names("left")[2:]]
    for bone in bones:
        dipped_heads[first:end, bone, 2] -= 0.08
        dipped_tails[first:end, bone, 2] -= 0.08
    dipped = SourceMotion(motion.bone_names, motion.parents, dipped_heads, dipped_tails, motion.root_rotation,
                          motion.rest_heads, motion.rest_tails, motion.rest_root_rotation, motion.fps, "dipped")
    mapping = _walk_mapping()
    plain, low = detect_contacts(motion, mapping), detect_contacts(dipped, mapping)
    away = np.ones(motion.frames, bool)
    away[max(0, first - 12):end + 12] = False
    for side in ("left", "right"):
        np.testing.assert_array_equal(low.feet[side][away], plain.feet[side][away], err_msg=side)
        assert np.mean(low.feet[side] == known[side]) > 0.85


def test_no_legs_is_refused():
    motion, _ = synthetic_walk()
    arms_only = Mapping([ChainMapping("arm", "LHip", ["LToe"], "a", ["b"], role="arm", side="left")])
    with pytest.raises(ContactsError, match="no left or right leg"):
        detect_contacts(motion, arms_only)


def test_foot_tracks_use_the_ankle_and_the_toe_tip():
    motion, _ = synthetic_walk()
    tracks = foot_tracks(motion, _walk_mapping())
    np.testing.assert_allclose(tracks["left"].heel, motion.heads[:, motion.index("LAnkle")])
    np.testing.assert_allclose(tracks["left"].toe, motion.tails[:, motion.index("LToe")])


# ----------------------------------------------------------------- CMU clips ---

@pytest.fixture(scope="module")
def cmu():
    from core.retarget.automap import auto_map
    from core.model.kinematics import KinematicTree
    from core.model.urdf import parse_urdf

    tree = KinematicTree(parse_urdf(ROOT / "data" / "robots" / "g1" / "unitree_g1_29dof.urdf"))
    walk = load_bvh(WALK).to_source_motion()
    return tree, walk, auto_map(walk, tree)


def test_cmu_walk_footfalls(cmu):
    _, walk, mapping = cmu
    contacts = detect_contacts(walk, mapping)
    for side in ("left", "right"):
        spans = contacts.intervals(side)
        assert 5 <= len(spans) <= 15, spans  # 8 s of walking and turning
        assert 0.3 < contacts.feet[side].mean() < 0.8
        assert all(end - start >= 0.05 * walk.fps for start, end in spans)
    # feet take turns: consecutive touch-downs are mostly by different feet
    starts = sorted((s, side) for side in ("left", "right") for s, _ in contacts.intervals(side))
    turns = [a[1] != b[1] for a, b in zip(starts, starts[1:])]
    assert np.mean(turns) >= 0.6
    # somewhere one foot stands while the other swings
    only_one = contacts.feet["left"] ^ contacts.feet["right"]
    assert only_one.mean() > 0.3


def test_cmu_hop_footfalls_in_any_units(cmu):
    _, _, walk_mapping = cmu
    clip = load_bvh(HOP)
    raw, metres = clip.to_source_motion(), clip.to_source_motion(scale=HOP_SCALE)
    a, b = detect_contacts(raw, walk_mapping), detect_contacts(metres, walk_mapping)
    for side in ("left", "right"):
        np.testing.assert_array_equal(a.feet[side], b.feet[side])
        assert 3 <= len(a.intervals(side)) <= 15
    # the hop's kicks lift the right foot more often than the left (standing) one
    assert a.feet["left"].mean() > a.feet["right"].mean()
    # and there is a moment in the air with both feet up
    assert (~a.feet["left"] & ~a.feet["right"]).any()


CUT_OPEN = pytest.mark.xfail(strict=True, reason=(
    "the ground level is a clip-wide percentile of the slow heights: the walk's one low left toe (frames 390-404) "
    "puts the toes' ground 0.05 leg lengths lower in 0:500 than in the whole clip (94, 88 and 61 frames differ "
    "beyond 0.3 s of the cuts 0:500, 200:800, 100:700; 2026-12-02). The whole walk's contacts sit on a 2 mm "
    "window of the toe level (0.0421 leg lengths: -1 mm drops left 262-281, a toe 0.05 above it, and the G1 "
    "gait's stance tilts 5.5 degrees (target 1); +1 mm starts it 7 frames earlier and the H1 slides 21.7 mm/s), "
    "while the hop onto the H1 sinks with its toe level above 0.055 (0.032 now). A median over each point's "
    "rests, and the edge of a kernel density of the rests (2026-12-03: every walk cut agrees), miss one or the "
    "other; see README, Planted feet, and docs/history/planted_feet.md (session 15, s15-cutcontacts)"))


@pytest.mark.parametrize("start, end", [pytest.param(0, 500, marks=CUT_OPEN), pytest.param(200, 800, marks=CUT_OPEN),
                                        pytest.param(100, 700, marks=CUT_OPEN), (400, 995)])
def test_contacts_do_not_depend_on_where_the_clip_was_cut(cmu, start, end):
    """Frames start:end of the walk detected alone have the whole clip's contacts on those frames,
    beyond 0.3 s of a cut (where the speed filter and the hysteresis have nothing before them)."""
    _, walk, mapping = cmu
    whole = detect_contacts(walk, mapping)
    cut = detect_contacts(walk.at_frames(np.arange(start, end)), mapping)
    edge = int(round(0.3 * walk.fps))
    far = slice(edge if start > 0 else 0, (end - start) - (edge if end < walk.frames else 0))
    for side in ("left", "right"):
        np.testing.assert_array_equal(cut.feet[side][far], whole.feet[side][start:end][far], err_msg=side)


def test_stricter_thresholds_find_less_contact(cmu):
    _, walk, mapping = cmu
    loose = detect_contacts(walk, mapping)
    strict = detect_contacts(walk, mapping, DetectSettings(height_on=0.02, height_off=0.03, speed_on=0.05,
                                                          speed_off=0.1))
    for side in ("left", "right"):
        assert strict.feet[side].sum() < loose.feet[side].sum()
        assert not (strict.feet[side] & ~loose.feet[side]).any()


# ---------------------------------------------------------------- the file ---

def test_file_round_trip(tmp_path):
    flags = {"left": np.zeros(50, bool), "right": np.zeros(50, bool)}
    flags["left"][3:20] = flags["left"][30:50] = True
    flags["right"][0:10] = True
    contacts = Contacts(flags, 120.0)
    path = contacts.save(tmp_path / "walk.contacts.json")
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data == {"format": "robot_retarget.contacts", "version": 1, "fps": 120.0,
                    "feet": {"left": [[3, 20], [30, 50]], "right": [[0, 10]]}}
    back = Contacts.load(path, frames=50)
    assert back.fps == 120.0
    for side in flags:
        np.testing.assert_array_equal(back.feet[side], flags[side])
    with pytest.raises(OSError, match="exists"):
        contacts.save(path)
    sliced = back.sliced(25, 40)
    assert sliced.frames == 15 and sliced.intervals("left") == [(5, 15)] and sliced.intervals("right") == []


@pytest.mark.parametrize("content, words", [
    ("{", ["line 1", "invalid JSON"]),
    ('{"format": "something else", "version": 1, "fps": 30, "feet": {}}', ["not a Robot Retarget contacts"]),
    ('{"format": "robot_retarget.contacts", "version": 2, "fps": 30, "feet": {}}', ["version 2"]),
    ('{"format": "robot_retarget.contacts", "version": 1, "fps": 0, "feet": {}}', ["fps"]),
    ('{"format": "robot_retarget.contacts", "version": 1, "fps": 30, "feet": {"middle": []}}', ["middle"]),
    ('{"format": "robot_retarget.contacts", "version": 1, "fps": 30, "feet": {"left": [[5, 3]]}}',
     ["feet.left[0]", "empty"]),
    ('{"format": "robot_retarget.contacts", "version": 1, "fps": 30, "feet": {"left": [[0, 5], [4, 9]]}}',
     ["feet.left[1]", "overlaps"]),
    ('{"format": "robot_retarget.contacts", "version": 1, "fps": 30, "feet": {"right": [[90, 120]]}}',
     ["feet.right[0]", "100 frames"]),
    ('{"format": "robot_retarget.contacts", "version": 1, "fps": 30, "feet": {"right": [[1.5, 4]]}}',
     ["feet.right[0]", "whole frame"]),
    ('{"format": "robot_retarget.contacts", "version": 1, "fps": 30, "feet": {}, "extra": 1}', ["extra"]),
])
def test_bad_files_are_named(tmp_path, content, words):
    path = tmp_path / "bad.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(ContactsError) as info:
        Contacts.load(path, frames=100)
    message = str(info.value)
    assert message.startswith(str(path)), message
    for word in words:
        assert word in message, message


def test_missing_file_is_named(tmp_path):
    with pytest.raises(ContactsError, match="no_such.json: contacts file not found"):
        Contacts.load(tmp_path / "no_such.json", frames=10)
