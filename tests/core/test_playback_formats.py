"""Playback files (core.playback.formats): every format written and read back, layouts
checked with independent parsers (csv module, numpy, ElementTree, regular expressions,
plain pickle), exact tick times as written, atomic writes and refusing to overwrite.
"""
from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import pickle
import re
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from core.motion.bake_csv import ROOT_COLUMNS
from core.motion.fileio import OutputError
from core.model.kinematics import KinematicTree
from core.playback.sampling import JointLimits, LimitViolation, PlaybackTrack, sample_derivatives
from core.playback.formats import (FORMATS, PlaybackFormatError, PlaybackMeta, _comment_json, _joints_out,
                                   metadata, read_playback, sidecar_path, write_playback)
from core.motion.numbers import number_text
from core.model.urdf import parse_urdf_string

from .test_playback import URDF

NAMES = ["shoulder", "elbow", "rail"]
NEEDS_NAMES = {"unitree-csv", "pkl"}  # formats that store no joint names or timing


@pytest.fixture(scope="module")
def limits() -> JointLimits:
    return JointLimits.from_tree(KinematicTree(parse_urdf_string(URDF, "bench_arm.urdf")), acceleration=40.0)


def make_track(samples: int = 61, period: float = 0.02, seed: int = 0) -> PlaybackTrack:
    """Smooth joints (one tiny value to exercise exponents), a turning and travelling root."""
    rng = np.random.default_rng(seed)
    t = np.arange(samples) * period
    q = np.column_stack([0.5 * np.sin(2 * t), 0.6 + 0.3 * np.cos(3 * t), 0.1 + 0.05 * np.sin(t)])
    q[3, 0] = 1e-05
    yaw = 0.8 * t + 0.1 * rng.normal()
    quat = np.column_stack([np.cos(yaw / 2), 0 * t, 0 * t, np.sin(yaw / 2)])
    pos = np.column_stack([0.3 * t, 0.02 * np.sin(5 * t), 0.75 + 0.01 * np.cos(4 * t)])
    return PlaybackTrack(NAMES, period, pos, quat, q, np.array([False, False, True]))


def meta(limits, **extra) -> PlaybackMeta:
    return PlaybackMeta(robot="bench_arm", source="/clips/wave.bvh", limits=limits, **extra)


def read_back(path, fmt, track):
    extra = {"joint_names": NAMES, "rate_hz": track.rate_hz} if fmt in NEEDS_NAMES else {}
    return read_playback(path, fmt, **extra)


# ------------------------------------------------------------- round trip ---

@pytest.mark.parametrize("fmt", list(FORMATS))
def test_round_trip(tmp_path, limits, fmt):
    track = make_track()
    path = tmp_path / f"wave{FORMATS[fmt]}"
    written = write_playback(path, track, fmt, meta(limits))
    assert written[0] == path and all(p.is_file() for p in written)
    back = read_back(path, fmt, track)
    assert back.format == fmt and back.track.joint_names == NAMES
    assert back.track.period_s == pytest.approx(track.period_s, rel=1e-15)
    np.testing.assert_array_equal(back.track.q, track.q)  # shortest round-trip text or binary: exact
    if fmt != "ros2-yaml":  # a JointTrajectory has no root
        np.testing.assert_array_equal(back.track.root_position, track.root_position)
        np.testing.assert_array_equal(back.track.root_quaternion, track.root_quaternion)
    if back.metadata:
        assert back.metadata["robot"] == "bench_arm" and back.metadata["joint_names"] == NAMES
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in written)  # no temp files left


def test_format_guessed_from_the_file(tmp_path, limits):
    track = make_track()
    for fmt in ("csv", "unitree-csv", "npz", "ros2-yaml", "mujoco-keyframes"):
        path = tmp_path / f"{fmt}{FORMATS[fmt]}"
        write_playback(path, track, fmt, meta(limits))
        assert read_playback(path, rate_hz=track.rate_hz, joint_names=NAMES).format == fmt


# ------------------------------------------------------------------ layouts ---

def test_csv_header_units_and_sidecar(tmp_path, limits):
    track = make_track()
    violation = LimitViolation("shoulder", "velocity", 0.1, 0.14, 3, 2.5, 2.0, "rad/s")
    path = tmp_path / "wave.csv"
    write_playback(path, track, "csv", meta(limits, violations=[violation], retimed_seconds_added=0.25),
                   degrees=True)
    rows = list(csv.reader(io.StringIO(path.read_text(encoding="utf-8"))))
    assert rows[0] == ["time_s", "root_x", "root_y", "root_z", "root_qw", "root_qx", "root_qy", "root_qz", *NAMES]
    data = np.array(rows[1:], dtype=float)
    assert data.shape == (61, 11)
    np.testing.assert_allclose(data[:, 8:10], np.degrees(track.q[:, :2]), rtol=1e-15)  # revolute: degrees
    assert np.array_equal(data[:, 10], track.q[:, 2])  # prismatic: metres either way
    np.testing.assert_array_equal(data[:, 4:8], track.root_quaternion)  # w x y z
    side = json.loads(sidecar_path(path).read_text(encoding="utf-8"))
    assert sidecar_path(path).name == "wave.meta.json"
    assert side["robot"] == "bench_arm" and side["source"] == "/clips/wave.bvh"
    assert side["joint_names"] == NAMES and side["quaternion_order"] == "wxyz"
    assert side["units"] == {"time": "s", "length": "m", "angle": "deg", "joints": ["deg", "deg", "m"]}
    assert side["rate_hz"] == 50.0 and side["period_s"] == 0.02 and side["samples"] == 61
    assert side["content_sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    assert [row["joint"] for row in side["limits"]] == NAMES
    assert side["limits"][1]["upper"] == pytest.approx(np.degrees(2.0)) and side["limits"][2]["upper"] == 0.2
    assert side["limits"][0]["acceleration"] == pytest.approx(np.degrees(40.0))
    assert side["violations"] == [violation.to_dict()] and side["retimed_seconds_added"] == 0.25
    np.testing.assert_allclose(read_playback(path).track.q, track.q, rtol=1e-15, atol=1e-16)  # back in radians


def test_csv_edited_after_export_is_detected(tmp_path, limits):
    path = tmp_path / "wave.csv"
    write_playback(path, make_track(), "csv", meta(limits))
    path.write_text(path.read_text(encoding="utf-8").replace("0.02,", "0.0200001,", 1), encoding="utf-8")
    with pytest.raises(PlaybackFormatError, match="content hash differs from wave.meta.json"):
        read_playback(path)


def test_unitree_csv_layout(tmp_path):
    track = make_track()
    path = tmp_path / "wave.csv"
    write_playback(path, track, "unitree-csv")
    data = np.loadtxt(path, delimiter=",")
    assert not path.read_text(encoding="utf-8").startswith("time") and data.shape == (61, 3 + 4 + 3)
    np.testing.assert_array_equal(data[:, :3], track.root_position)
    np.testing.assert_array_equal(data[:, 3:7], track.root_quaternion[:, [1, 2, 3, 0]])  # x y z w
    np.testing.assert_array_equal(data[:, 7:], track.q)


def test_npz_and_gmr_pickle_layouts(tmp_path):
    track = make_track()
    write_playback(tmp_path / "wave.npz", track, "npz")
    with np.load(tmp_path / "wave.npz", allow_pickle=False) as data:
        assert {"fps", "root_pos", "root_rot", "dof_pos", "joint_names"} <= set(data.files)
        assert float(data["fps"]) == 50.0 and list(data["joint_names"]) == NAMES
        assert data["root_pos"].shape == (61, 3) and data["dof_pos"].shape == (61, 3)
        np.testing.assert_array_equal(data["root_rot"], track.root_quaternion[:, [1, 2, 3, 0]])
    write_playback(tmp_path / "wave.pkl", track, "pkl")
    with open(tmp_path / "wave.pkl", "rb") as fh:
        data = pickle.load(fh)
    assert sorted(data) == ["dof_pos", "fps", "root_pos", "root_rot"]
    assert data["fps"] == 50 and isinstance(data["fps"], int)
    arrays = [data[k] for k in ("root_pos", "root_rot", "dof_pos")]
    assert all(isinstance(a, np.ndarray) and a.dtype == np.float64 for a in arrays)
    np.testing.assert_array_equal(data["root_rot"], track.root_quaternion[:, [1, 2, 3, 0]])
    np.testing.assert_array_equal(data["dof_pos"], track.q)


def test_ros2_yaml_is_a_consistent_joint_trajectory(tmp_path):
    track = make_track()
    path = tmp_path / "wave.yaml"
    write_playback(path, track, "ros2-yaml")
    text = path.read_text(encoding="utf-8")
    assert re.search(r"^joint_names: \[\"shoulder\", \"elbow\", \"rail\"\]$", text, re.M)
    lists = {key: [json.loads(v) for v in re.findall(rf"^\s+-? ?{key}: (\[.*\])$", text, re.M)]
             for key in ("positions", "velocities", "accelerations")}
    pos, vel, acc = (np.array(lists[k]) for k in ("positions", "velocities", "accelerations"))
    assert pos.shape == vel.shape == acc.shape == (61, 3)
    np.testing.assert_array_equal(pos, track.q)
    np.testing.assert_allclose(vel, np.gradient(pos, 0.02, axis=0), rtol=1e-12)  # consistent with positions
    np.testing.assert_allclose(acc[1:-1], np.diff(pos, 2, axis=0) / 0.02 ** 2, rtol=1e-9, atol=1e-9)
    stamps = [(int(s), int(n)) for s, n in re.findall(r"time_from_start: \{sec: (\d+), nanosec: (\d+)\}", text)]
    assert stamps == [(k * 20_000_000 // 10 ** 9, k * 20_000_000 % 10 ** 9) for k in range(61)]
    assert not re.search(r"(?<![\d.])\d+e[-+]", text)  # 1e-05 would be a string to YAML 1.1 readers
    assert "1.0e-05" in text


def test_ros2_yaml_keeps_joint_names_that_look_like_numbers(tmp_path):
    """Only numbers get YAML 1.1's "1.0e-05" form: a joint named "j1e" (or "2e_knee") reads back."""
    import dataclasses

    track = dataclasses.replace(make_track(), joint_names=["j1e", "2e_knee", "rail"])
    path = tmp_path / "names.yaml"
    write_playback(path, track, "ros2-yaml")
    assert re.search(r'^joint_names: \["j1e", "2e_knee", "rail"\]$', path.read_text(encoding="utf-8"), re.M)
    assert read_playback(path).track.joint_names == ["j1e", "2e_knee", "rail"]


def test_mujoco_keyframes_layout(tmp_path):
    track = make_track()
    path = tmp_path / "wave.xml"
    write_playback(path, track, "mujoco-keyframes")
    root = ET.parse(path).getroot()
    assert root.tag == "mujoco"
    keys = root.findall("./keyframe/key")
    assert len(keys) == 61
    assert [k.get("time") for k in keys] == [repr(k * 0.02) for k in range(61)]
    qpos = np.array([k.get("qpos").split() for k in keys], dtype=float)
    np.testing.assert_array_equal(qpos[:, :3], track.root_position)
    np.testing.assert_array_equal(qpos[:, 3:7], track.root_quaternion)  # free joint: w x y z
    np.testing.assert_array_equal(qpos[:, 7:], track.q)


# --------------------------------------------------- numbers as repr() ---
#
# The writers format whole arrays at once; the text must be what repr() gives
# each value (the shortest that reads back exactly), byte for byte.

def awkward_values(rng) -> np.ndarray:
    """Doubles of every kind: ordinary ones at many scales, any bit pattern, short decimals and
    their neighbours (shortest-text edge cases), near powers of ten, decimal halfway points,
    zeros of both signs, powers of two, the edges of the range written without an exponent."""
    short = np.array([float(f"{rng.integers(1, 10 ** 17) % 10 ** d}e{e}") for d, e in
                      zip(rng.integers(1, 18, 3000), rng.integers(-22, 14, 3000))])
    halfway = np.array([float(f"{m}5e{e}") for m, e in zip(rng.integers(10 ** 14, 10 ** 16, 2000),
                                                          rng.integers(-20, 1, 2000))])
    edges = [0.0, -0.0, 1e-4, 1e16, 5e-324, 2.2250738585072014e-308, 1e308, 0.1, 0.5, 1e22]
    near_tens = 10.0 ** rng.integers(-5, 17, 2000) * (1 + rng.integers(-9, 9, 2000) * 2e-16)
    parts = [rng.normal(size=20000) * 10.0 ** rng.integers(-8, 20, 20000),
             rng.integers(-2 ** 63, 2 ** 63 - 1, 20000, dtype=np.int64).view(np.float64),
             short, np.nextafter(short, np.inf), np.nextafter(short, -np.inf), halfway,
             np.nextafter(halfway, np.inf), near_tens, np.ldexp(1.0, rng.integers(-30, 60, 500)),
             np.nextafter(edges, np.inf), np.nextafter(edges, -np.inf), edges, [1.7976931348623157e308]]
    values = np.concatenate(parts)
    values = values[np.isfinite(values)]
    return values * rng.choice([-1.0, 1.0], len(values))


def repr_text(values: np.ndarray, sep: str, yaml: bool = False) -> bytes:
    """The straightforward way: repr() of each value."""
    text = "".join(sep.join(map(repr, row)) + "\n" for row in values.tolist())
    return (re.sub(r"(?<![\d.])(\d+)e", r"\1.0e", text) if yaml else text).encode()


def test_numbers_are_written_as_repr_writes_them():
    values = awkward_values(np.random.default_rng(7))
    for cols, sep, yaml in ((7, ",", False), (5, ", ", True), (1, " ", False), (36, ",", False)):
        block = values[:len(values) // cols * cols].reshape(-1, cols)
        assert number_text(block, sep, yaml) == repr_text(block, sep, yaml)
    assert number_text(np.zeros((3, 0)), ",") == b"\n\n\n" and number_text(np.zeros((0, 4)), ",") == b""


def awkward_track(seed: int = 5) -> PlaybackTrack:
    """A small random track with the numbers that format differently: negative zero, tiny and huge
    values (exponents, in velocities and accelerations too), short decimals, subnormals."""
    rng = np.random.default_rng(seed)
    q = rng.normal(size=(40, 3)) * [0.5, 2e-5, 3.0]
    q[:4] = [[-0.0, 1e-05, 0.1], [1e16, -2.5e-7, 1e-4], [5e-324, 0.0, -123456789.125], [-1e-300, 1.5, 7.0]]
    quat = rng.normal(size=(40, 4))
    quat /= np.linalg.norm(quat, axis=1, keepdims=True)
    pos = rng.normal(size=(40, 3)) * [1.0, 1e-9, 1e3]
    pos[0] = [-0.0, 0.0, 1e-5]
    return PlaybackTrack(NAMES, 1 / 300, pos, quat, q, np.array([False, False, True]))


def reference_files(track: PlaybackTrack, fmt: str, info: dict, degrees: bool) -> list[bytes]:
    """The text writers as they were: every number through repr() on its own."""
    text = lambda row, sep: sep.join(repr(float(v)) for v in row)  # noqa: E731
    if fmt == "csv":
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(ROOT_COLUMNS + NAMES)
        for row in np.column_stack([track.time_s, track.root_position, track.root_quaternion,
                                    _joints_out(track, degrees)]):
            writer.writerow([repr(float(v)) for v in row])
        data = out.getvalue().encode("utf-8")
        side = dict(info, columns=ROOT_COLUMNS + NAMES, content_sha256=hashlib.sha256(data).hexdigest())
        return [data, (json.dumps(side, indent=2) + "\n").encode("utf-8")]
    if fmt == "unitree-csv":
        rows = np.column_stack([track.root_position, track.root_quaternion[:, [1, 2, 3, 0]], track.q])
        return ["".join(text(row, ",") + "\n" for row in rows).encode("utf-8")]
    if fmt == "mujoco-keyframes":
        rows = np.column_stack([track.root_position, track.root_quaternion, track.q])
        keys = [f'    <key time="{t!r}" qpos="{text(row, " ")}"/>' for t, row in zip(track.time_s.tolist(), rows)]
        head = ['<?xml version="1.0" encoding="utf-8"?>', "<!-- Robot Retarget playback. qpos = free joint x y z "
                "(m), quaternion w x y z, then the joints in URDF order (rad; m for prismatic joints). Include "
                "this file in the robot's MJCF (<include file=\"...\"/>): its free joint must come first and its "
                "joints in this order. -->", f"<!-- robot_retarget: {_comment_json(info)} -->",
                '<mujoco model="bench_arm playback">', "  <keyframe>"]
        return [("\n".join(head + keys + ["  </keyframe>", "</mujoco>"]) + "\n").encode("utf-8")]
    vel, acc = sample_derivatives(track.q, track.period_s)
    lines = ["# Robot Retarget playback: trajectory_msgs/JointTrajectory",
             f"# robot 'bench_arm', source '/clips/wave.bvh', {track.rate_hz:g} Hz, joints in URDF order",
             "# positions rad, velocities rad/s, accelerations rad/s^2 (m, m/s, m/s^2 for prismatic joints);",
             "# velocities and accelerations are the finite differences of the positions",
             "# the floating base (root) pose is not part of a JointTrajectory",
             f"# robot_retarget: {_comment_json(info)}", "header:", "  stamp: {sec: 0, nanosec: 0}",
             '  frame_id: ""', f"joint_names: {json.dumps(NAMES)}", "points:"]
    for p, v, a, t in zip(track.q, vel, acc, np.rint(track.time_s * 1e9).astype(np.int64).tolist()):
        lines += [f"  - positions: [{text(p, ', ')}]", f"    velocities: [{text(v, ', ')}]",
                  f"    accelerations: [{text(a, ', ')}]", "    effort: []",
                  f"    time_from_start: {{sec: {t // 10 ** 9}, nanosec: {t % 10 ** 9}}}"]
    return [re.sub(r"(?<![\d.])(\d+)e", r"\1.0e", "\n".join(lines) + "\n").encode("utf-8")]


@pytest.mark.parametrize("fmt", ["csv", "unitree-csv", "ros2-yaml", "mujoco-keyframes"])
def test_text_files_are_those_of_formatting_each_value(tmp_path, limits, fmt):
    track = awkward_track()
    for degrees in ([False, True] if fmt == "csv" else [False]):
        path = tmp_path / f"awkward{degrees}{FORMATS[fmt]}"
        written = write_playback(path, track, fmt, meta(limits), degrees=degrees)
        expected = reference_files(track, fmt, metadata(track, fmt, meta(limits), degrees), degrees)
        assert [p.read_bytes() for p in written] == expected


# -------------------------------------------------------------- exact ticks ---

def test_tick_times_exact_as_written_over_a_long_motion(tmp_path):
    """Two minutes at 500 Hz: every written time is k * period exactly (core checks a full hour)."""
    period, samples = 1 / 500, 2 * 60 * 500 + 1
    k = np.arange(samples)
    track = PlaybackTrack(["j"], period, np.zeros((samples, 3)), np.tile([1.0, 0, 0, 0], (samples, 1)),
                          np.sin(k * period)[:, None])
    path = tmp_path / "long.csv"
    write_playback(path, track, "csv")
    times = [float(line.split(",", 1)[0]) for line in path.read_text(encoding="utf-8").splitlines()[1:]]
    assert times == [i * period for i in range(samples)]
    assert times[-1] == 120.0
    stamps = np.rint(track.time_s * 1e9).astype(np.int64)  # what ros2-yaml writes, all 60001 of them
    assert np.array_equal(stamps, k * 2_000_000)


# ---------------------------------------------------------------- writing ---

def test_refuses_to_overwrite_unless_asked(tmp_path, limits):
    path = tmp_path / "wave.csv"
    path.write_text("yesterday\n", encoding="utf-8")
    with pytest.raises(OutputError, match=f"{path}: file exists"):
        write_playback(path, make_track(), "csv", meta(limits))
    assert path.read_text(encoding="utf-8") == "yesterday\n" and not sidecar_path(path).exists()
    path.unlink()
    sidecar_path(path).write_text("{}\n", encoding="utf-8")  # the sidecar alone also blocks
    with pytest.raises(OutputError, match="wave.meta.json: file exists"):
        write_playback(path, make_track(), "csv", meta(limits))
    assert not path.exists()
    write_playback(path, make_track(), "csv", meta(limits), overwrite=True)
    assert read_playback(path).track.samples == 61


def test_interrupted_write_leaves_the_old_file(tmp_path, monkeypatch):
    path = tmp_path / "wave.npz"
    write_playback(path, make_track(seed=1), "npz")
    before = path.read_bytes()

    def full_disk(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", full_disk)
    with pytest.raises(OutputError, match=f"{path}: write failed \\(No space left on device\\)"):
        write_playback(path, make_track(seed=2), "npz", overwrite=True)
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["wave.npz"]  # the temporary file is gone too

    def killed(fd):
        raise KeyboardInterrupt  # the process dies in the middle of the write

    monkeypatch.setattr(os, "fsync", killed)
    with pytest.raises(KeyboardInterrupt):
        write_playback(path, make_track(seed=3), "npz", overwrite=True)
    assert path.read_bytes() == before


def test_csv_and_sidecar_are_written_together_or_not_at_all(tmp_path, limits, monkeypatch):
    path = tmp_path / "wave.csv"
    write_playback(path, make_track(seed=1), "csv", meta(limits))
    old_csv, old_side = path.read_bytes(), sidecar_path(path).read_bytes()
    real_replace = os.replace

    def sidecar_fails(src, dst):
        if str(dst).endswith(".meta.json"):
            raise OSError(13, "Permission denied")
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", sidecar_fails)
    with pytest.raises(OutputError, match="wave.meta.json: write failed"):
        write_playback(path, make_track(seed=2), "csv", meta(limits), overwrite=True)
    assert path.read_bytes() == old_csv and sidecar_path(path).read_bytes() == old_side
    fresh = tmp_path / "fresh.csv"
    with pytest.raises(OutputError):
        write_playback(fresh, make_track(), "csv", meta(limits))
    assert not fresh.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["wave.csv", "wave.meta.json"]


def test_bad_destination_is_a_clear_error(tmp_path):
    blocker = tmp_path / "not_a_folder"
    blocker.write_text("", encoding="utf-8")
    with pytest.raises(OutputError, match="does not exist"):
        write_playback(blocker / "wave.csv", make_track(), "csv")
    with pytest.raises(ValueError, match="'pkl' stores radians"):
        write_playback(tmp_path / "wave.pkl", make_track(), "pkl", degrees=True)
    bad = make_track()
    bad.q[4, 1] = np.nan
    with pytest.raises(ValueError, match="non-finite q"):
        write_playback(tmp_path / "wave.npz", bad, "npz")
    assert [p.name for p in tmp_path.iterdir()] == ["not_a_folder"]


# ---------------------------------------------------------------- reading ---

def test_bad_files_name_the_file_and_line(tmp_path):
    track = make_track()
    path = tmp_path / "wave.csv"
    write_playback(path, track, "unitree-csv")
    lines = path.read_text(encoding="utf-8").splitlines()
    lines[6] = lines[6].rsplit(",", 1)[0]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(PlaybackFormatError, match=f"{path}, line 7: 9 values, expected 10"):
        read_playback(path, "unitree-csv", rate_hz=50)
    with pytest.raises(PlaybackFormatError, match="stores no timing"):
        read_playback(path, "unitree-csv")

    path = tmp_path / "wave.yaml"
    write_playback(path, track, "ros2-yaml")
    text = path.read_text(encoding="utf-8").splitlines()
    number = next(i for i, line in enumerate(text) if "velocities" in line) + 1
    text[number - 1] = "    velocities: [0.1, oops]"
    path.write_text("\n".join(text) + "\n", encoding="utf-8")
    with pytest.raises(PlaybackFormatError, match=f"{path}, line {number}: cannot read 'velocities'"):
        read_playback(path)

    path = tmp_path / "wave.xml"
    write_playback(path, track, "mujoco-keyframes")
    path.write_text(path.read_text(encoding="utf-8").replace('qpos="', 'qpos="1 ', 1), encoding="utf-8")
    with pytest.raises(PlaybackFormatError, match="<key> 1 has 10 qpos values, expected 11"):
        read_playback(path)


@pytest.mark.parametrize("fmt", ["npz", "pkl", "unitree-csv", "mujoco-keyframes"])
def test_nan_values_and_zero_quaternions_name_the_sample(tmp_path, fmt):
    """The readers took NaN and a zero root quaternion as numbers: `balance` read an npz with one
    NaN knee as a robot never on the ground, exit 0."""
    for field, row, words in (("q", 7, "sample 7 \\(0.14 s\\): elbow is nan"),
                              ("root_quaternion", 3, "sample 3 \\(0.06 s\\): root quaternion is zero")):
        track = make_track()
        values = getattr(track, field)
        values[row] = np.nan if field == "q" else 0.0
        path = tmp_path / f"wave_{field}{FORMATS[fmt]}"
        if field == "q":  # the writers refuse what is not finite: put it in the file afterwards
            write_playback(path, make_track(), fmt)
            _spoil(path, fmt, row)
        else:
            write_playback(path, track, fmt)
        with pytest.raises(PlaybackFormatError, match=words):
            read_back(path, fmt, track)


def _spoil(path, fmt: str, row: int) -> None:
    """Sample `row`'s elbow (joint 1) made NaN in a written file."""
    if fmt == "npz":
        data = dict(np.load(path, allow_pickle=False))
        data["dof_pos"][row, 1] = np.nan
        np.savez(path, **data)
    elif fmt == "pkl":
        data = pickle.loads(path.read_bytes())
        data["dof_pos"][row, 1] = np.nan
        path.write_bytes(pickle.dumps(data))
    elif fmt == "unitree-csv":
        lines = path.read_text(encoding="utf-8").splitlines()
        values = lines[row].split(",")
        values[8] = "nan"
        lines[row] = ",".join(values)
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    else:
        text = path.read_text(encoding="utf-8")
        keys = [m.end() for m in re.finditer('qpos="', text)]
        start = keys[row]
        values = text[start:text.index('"', start)].split()
        values[8] = "nan"
        path.write_text(text[:start] + " ".join(values) + text[text.index('"', start):], encoding="utf-8")


def test_csv_off_the_control_cycle_is_refused(tmp_path):
    path = tmp_path / "wave.csv"
    write_playback(path, make_track(), "csv")
    sidecar_path(path).unlink()
    lines = path.read_text(encoding="utf-8").splitlines()
    lines[5] = "0.0801," + lines[5].split(",", 1)[1]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(PlaybackFormatError, match="sample 4 at 0.0801 s is not on the 0.02 s control cycle"):
        read_playback(path)


def test_pickle_reader_runs_no_code(tmp_path):
    class Sneaky:
        def __reduce__(self):
            return (os.system, ("echo pwned",))

    path = tmp_path / "evil.pkl"
    path.write_bytes(pickle.dumps({"fps": 30, "root_pos": Sneaky()}))
    with pytest.raises(PlaybackFormatError, match="refusing to load (posix|nt).system"):
        read_playback(path, joint_names=NAMES)
