"""The bake CSV (core.motion.bake_csv): the file other tools read after a bake.

Exact round trips (floats written with repr), the header contract, refusal
to overwrite, atomic writes (no temporary files left, an existing file
survives a failed write) and malformed files that fail naming file and line.
"""
from __future__ import annotations

import os

import numpy as np
import pytest

from core.motion.bake_csv import ROOT_COLUMNS, BakeCSVError, BakeTable, read_bake_csv, write_bake_csv
from core.motion.fileio import OutputError

JOINTS = ["left_hip_pitch_joint", "left_knee_joint", "waist_yaw_joint"]
HEADER = ",".join(ROOT_COLUMNS + JOINTS)


def _table(frames: int = 40, seed: int = 0, fps: float = 120.0048) -> BakeTable:
    """Values that need all 17 significant digits, plus awkward ones (-0.0, tiny, huge)."""
    rng = np.random.default_rng(seed)
    quat = rng.normal(size=(frames, 4))
    quat /= np.linalg.norm(quat, axis=1, keepdims=True)
    q = rng.uniform(-3.0, 3.0, (frames, len(JOINTS)))
    q[0, 0], q[1, 1], q[2, 2], q[3, 0] = -0.0, 1e-300, 5e-324, 1.7976931348623157e308
    position = rng.normal(size=(frames, 3)) * [2.0, 2.0, 0.1] + [0.0, 0.0, 0.79]
    return BakeTable(list(JOINTS), np.arange(frames) / fps, position, quat, q)


def _same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    """Equal as float64 bit patterns (so -0.0 != 0.0 and no tolerance)."""
    a, b = np.ascontiguousarray(a, dtype=np.float64), np.ascontiguousarray(b, dtype=np.float64)
    return a.shape == b.shape and np.array_equal(a.view(np.int64), b.view(np.int64))


def _listing(folder) -> list[str]:
    return sorted(os.listdir(folder))


# ----------------------------------------------------------------- round trip ---

def test_round_trip_is_exact(tmp_path):
    table = _table()
    path = tmp_path / "walk.csv"
    assert write_bake_csv(path, table) == path
    got = read_bake_csv(path)
    assert got.joint_names == JOINTS
    for name in ("time", "root_position", "root_quaternion", "q"):
        assert _same_bits(getattr(got, name), getattr(table, name)), name
    assert _listing(tmp_path) == ["walk.csv"]  # no temporary file left behind


def test_file_layout_is_the_contract(tmp_path):
    """Header, column order (time, xyz, wxyz, joints), one row per frame, repr floats."""
    table = _table(frames=5)
    path = write_bake_csv(tmp_path / "walk.csv", table)
    text = path.read_text(encoding="utf-8")
    lines = text.split("\n")
    assert lines[0] == HEADER
    assert HEADER.startswith("time_s,root_x,root_y,root_z,root_qw,root_qx,root_qy,root_qz,")
    assert lines[-1] == "" and len(lines) == 1 + 5 + 1  # header, 5 rows, final newline
    assert "\r" not in text
    first = lines[1].split(",")
    expected = [0.0, *table.root_position[0], *table.root_quaternion[0], *table.q[0]]
    assert first == [repr(float(v)) for v in expected]
    assert first[-3] == "-0.0"  # q[0, 0]: the sign of zero survives


def test_numbers_are_written_as_repr_writes_each(tmp_path):
    """Whole-array formatting gives the text a csv writer of repr(value) gives, digit for digit."""
    import csv
    import io

    rng = np.random.default_rng(3)
    q = rng.normal(size=(40, 3)) * 10.0 ** rng.integers(-12, 17, size=(40, 3))
    q[0] = [-0.0, 5e-324, 1e16]
    table = BakeTable(["a,b", 'q"1', "knee"], np.arange(40) / 120.0, rng.normal(size=(40, 3)),
                      rng.normal(size=(40, 4)), q)
    path = write_bake_csv(tmp_path / "awkward.csv", table)
    expected = io.StringIO()
    writer = csv.writer(expected, lineterminator="\n")
    writer.writerow(ROOT_COLUMNS + table.joint_names)
    for row in np.column_stack([table.time, table.root_position, table.root_quaternion, table.q]):
        writer.writerow([repr(float(v)) for v in row])
    assert path.read_text(encoding="utf-8") == expected.getvalue()


def test_time_column_starts_at_zero_and_steps_by_one_frame(tmp_path):
    fps = 120.0048
    got = read_bake_csv(write_bake_csv(tmp_path / "t.csv", _table(frames=12, fps=fps)))
    assert got.time[0] == 0.0
    assert np.array_equal(got.time, np.arange(12) / fps)


def test_header_only_file_reads_as_zero_frames(tmp_path):
    empty = BakeTable(list(JOINTS), np.empty(0), np.empty((0, 3)), np.empty((0, 4)), np.empty((0, 3)))
    path = write_bake_csv(tmp_path / "none.csv", empty)
    assert path.read_text(encoding="utf-8") == HEADER + "\n"
    got = read_bake_csv(path)
    assert got.joint_names == JOINTS
    assert got.q.shape == (0, 3) and got.root_quaternion.shape == (0, 4) and got.time.shape == (0,)


# ------------------------------------------------------------ overwriting ---

def test_refuses_to_overwrite(tmp_path):
    path = tmp_path / "walk.csv"
    path.write_text("a file the user cares about\n", encoding="utf-8")
    with pytest.raises(OutputError, match="exists") as info:
        write_bake_csv(path, _table())
    assert str(path) in str(info.value)
    assert path.read_text(encoding="utf-8") == "a file the user cares about\n"
    assert _listing(tmp_path) == ["walk.csv"]


def test_overwrite_when_allowed(tmp_path):
    path = tmp_path / "walk.csv"
    write_bake_csv(path, _table(seed=1))
    write_bake_csv(path, _table(seed=2), overwrite=True)
    assert _same_bits(read_bake_csv(path).q, _table(seed=2).q)
    assert _listing(tmp_path) == ["walk.csv"]


# ------------------------------------------------------- failed writes ---

@pytest.mark.parametrize("field", ["q", "root_position"])
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_values_are_refused_and_existing_file_survives(tmp_path, field, bad):
    path = tmp_path / "walk.csv"
    write_bake_csv(path, _table(seed=1))
    before = path.read_bytes()
    table = _table(seed=2)
    getattr(table, field)[7, 1] = bad
    with pytest.raises(ValueError, match="non-finite"):
        write_bake_csv(path, table, overwrite=True)
    assert path.read_bytes() == before
    assert _listing(tmp_path) == ["walk.csv"]


@pytest.mark.parametrize("field", ["root_quaternion", "time"])
def test_non_finite_quaternion_or_time_is_refused(tmp_path, field):
    path = tmp_path / "walk.csv"
    table = _table()
    getattr(table, field)[3, ...] = np.nan
    with pytest.raises(ValueError, match="non-finite"):
        write_bake_csv(path, table)
    assert not path.exists()


def test_joint_names_must_match_q_columns(tmp_path):
    path = tmp_path / "walk.csv"
    table = _table()
    table.joint_names = JOINTS[:2]  # 2 names, 3 columns
    with pytest.raises(ValueError):
        write_bake_csv(path, table)
    assert not path.exists()


def test_failed_replace_leaves_no_temporary_file(tmp_path):
    """A write that fails after the temporary file exists (target is a folder) cleans up."""
    target = tmp_path / "walk.csv"
    target.mkdir()
    (target / "inside.txt").write_text("keep", encoding="utf-8")
    with pytest.raises(OutputError) as info:
        write_bake_csv(target, _table(), overwrite=True)
    assert str(target) in str(info.value)
    assert _listing(tmp_path) == ["walk.csv"]
    assert _listing(target) == ["inside.txt"]


def test_missing_folder_is_named(tmp_path):
    path = tmp_path / "no_such_folder" / "walk.csv"
    with pytest.raises(OutputError, match="does not exist") as info:
        write_bake_csv(path, _table())
    assert str(path.parent) in str(info.value)
    assert not path.parent.exists()


# ------------------------------------------------------- malformed files ---

def _write_lines(tmp_path, lines: list[str], name: str = "bad.csv"):
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _good_lines(tmp_path) -> list[str]:
    path = write_bake_csv(tmp_path / "good.csv", _table(frames=6))
    return path.read_text(encoding="utf-8").splitlines()


@pytest.mark.parametrize("line, mutate, words", [
    (4, lambda row: row.rsplit(",", 1)[0], "values, expected"),          # a value missing
    (6, lambda row: row + ",0.5", "values, expected"),                    # one too many
    (3, lambda row: row.replace(",", ",abc,", 1).rsplit(",", 1)[0], "not a number"),
    (5, lambda row: "", "values, expected"),                              # blank line in the data
    (7, lambda row: row.replace(row.split(",")[2], "1.0.0", 1), "not a number"),
    # float() reads these: the balance readout took a NaN knee for a robot never on the ground
    (4, lambda row: ",".join(row.split(",")[:-1] + ["nan"]), "waist_yaw_joint is nan, not a finite"),
    (5, lambda row: ",".join(row.split(",")[:3] + ["-inf"] + row.split(",")[4:]), "root_z is -inf"),
    (6, lambda row: ",".join(row.split(",")[:4] + ["0", "0", "0", "0"] + row.split(",")[8:]), "quaternion is zero"),
])
def test_malformed_row_names_file_and_line(tmp_path, line, mutate, words):
    lines = _good_lines(tmp_path)
    lines[line - 1] = mutate(lines[line - 1])
    path = _write_lines(tmp_path, lines)
    with pytest.raises(BakeCSVError, match=words) as info:
        read_bake_csv(path)
    assert str(info.value).startswith(f"{path}, line {line}: ")


def test_frame_times_that_do_not_increase_name_the_line(tmp_path):
    lines = _good_lines(tmp_path)
    lines[4] = lines[3].split(",")[0] + "," + lines[4].split(",", 1)[1]  # line 5 repeats line 4's time
    path = _write_lines(tmp_path, lines)
    with pytest.raises(BakeCSVError, match="time_s .* does not increase") as info:
        read_bake_csv(path)
    assert str(info.value).startswith(f"{path}, line 5: ")


@pytest.mark.parametrize("header", [
    "time,root_x,root_y,root_z,root_qw,root_qx,root_qy,root_qz,j",      # renamed column
    "time_s,root_x,root_y,root_z,root_qx,root_qy,root_qz,root_qw,j",    # xyzw order
    "time_s,root_x,root_y",                                              # too short
    "0.0,0.1,0.2,0.3,1.0,0.0,0.0,0.0,0.5",                              # no header at all
])
def test_bad_header_names_file_and_line_1(tmp_path, header):
    path = _write_lines(tmp_path, [header, "0.0,0.1,0.2,0.3,1.0,0.0,0.0,0.0,0.5"])
    with pytest.raises(BakeCSVError, match="header") as info:
        read_bake_csv(path)
    assert str(info.value).startswith(f"{path}, line 1: ")


def test_empty_and_missing_files_are_named(tmp_path):
    empty = tmp_path / "empty.csv"
    empty.write_text("", encoding="utf-8")
    with pytest.raises(BakeCSVError, match="empty") as info:
        read_bake_csv(empty)
    assert str(empty) in str(info.value)
    missing = tmp_path / "missing.csv"
    with pytest.raises(BakeCSVError, match="not found") as info:
        read_bake_csv(missing)
    assert str(missing) in str(info.value)


def test_binary_file_is_named(tmp_path):
    path = tmp_path / "walk.csv"
    path.write_bytes(b"\xff\xfe\x00\x01 not text \x80\x81\n")
    with pytest.raises(BakeCSVError) as info:
        read_bake_csv(path)
    assert str(path) in str(info.value)


def test_a_file_without_a_header_is_told_to_be_exported_as_csv(tmp_path):
    """A headerless file (a unitree-csv export: numbers from line 1) names the file and line and says what to
    export instead; a header with other words gets no such hint."""
    path = tmp_path / "baked.csv"
    write_bake_csv(path, _table())
    headerless = tmp_path / "unitree.csv"
    headerless.write_text("\n".join(path.read_text(encoding="utf-8").splitlines()[1:]) + "\n", encoding="utf-8")
    with pytest.raises(BakeCSVError, match=r"unitree\.csv, line 1: .*no header.*export the motion as csv or npz"):
        read_bake_csv(headerless)
    renamed = tmp_path / "renamed.csv"
    renamed.write_text("t," + path.read_text(encoding="utf-8").split(",", 1)[1], encoding="utf-8")
    with pytest.raises(BakeCSVError, match=r"line 1: header must start with time_s") as caught:
        read_bake_csv(renamed)
    assert "no header" not in str(caught.value)
