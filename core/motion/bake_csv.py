"""The bake CSV: one row per source frame, root pose then joints in URDF order.

Header `time_s,root_x,root_y,root_z,root_qw,root_qx,root_qy,root_qz,<joints>`,
radians and metres, quaternion w first. Other tools read this file, so its
columns are a contract: extend only by appending.
"""
from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .fileio import write_text_atomic
from .numbers import number_text

ROOT_COLUMNS = ["time_s", "root_x", "root_y", "root_z", "root_qw", "root_qx", "root_qy", "root_qz"]


class BakeCSVError(ValueError):
    """A bake CSV that cannot be read; names the file and line."""


@dataclass
class BakeTable:
    """A baked robot motion: time (F,) s, root position (F,3) m, root quaternion (F,4) wxyz, q (F,n)."""

    joint_names: list[str]
    time: np.ndarray
    root_position: np.ndarray
    root_quaternion: np.ndarray
    q: np.ndarray


def bake_csv_text(table: BakeTable) -> str:
    data = np.column_stack([table.time, table.root_position, table.root_quaternion, table.q])
    if data.shape[1] != len(ROOT_COLUMNS) + len(table.joint_names):
        raise ValueError(f"{len(table.joint_names)} joint names for {table.q.shape[1]} joint columns")
    if not np.all(np.isfinite(data)):
        raise ValueError("refusing to write a bake with non-finite values")
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerow(ROOT_COLUMNS + list(table.joint_names))
    return out.getvalue() + number_text(data, ",").decode("ascii")  # every number as repr() writes it


def write_bake_csv(path, table: BakeTable, overwrite: bool = False) -> Path:
    """Write atomically; never replaces an existing file unless `overwrite`."""
    return write_text_atomic(path, bake_csv_text(table), overwrite=overwrite)


def read_bake_csv(path) -> BakeTable:
    path = Path(path)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise BakeCSVError(f"{path}: file not found") from None
    except UnicodeDecodeError as exc:
        raise BakeCSVError(f"{path}: not a text (UTF-8) file (byte {exc.start})") from None
    if not lines:
        raise BakeCSVError(f"{path}: empty file")
    header = next(csv.reader([lines[0]]))
    if header[: len(ROOT_COLUMNS)] != ROOT_COLUMNS:
        hint = ""
        if header and _is_number(header[0]):  # numbers on line 1: a file without a header (unitree-csv)
            hint = ("; line 1 holds numbers, so this file has no header (a unitree-csv export?): "
                    "export the motion as csv or npz to read it here")
        raise BakeCSVError(f"{path}, line 1: header must start with {','.join(ROOT_COLUMNS)}{hint}")
    data = numbers(path, lines, header)
    _check_frames(path, data)
    return BakeTable(header[len(ROOT_COLUMNS):], data[:, 0], data[:, 1:4], data[:, 4:8], data[:, 8:])


def numbers(path, lines: list[str], header: list[str]) -> np.ndarray:
    """The rows after the header as an array (rows, columns), naming the line of a bad one."""
    rows = []
    for number, line in enumerate(lines[1:], start=2):
        values = line.split(",")
        if len(values) != len(header):
            raise BakeCSVError(f"{path}, line {number}: {len(values)} values, expected {len(header)}")
        try:
            rows.append([float(v) for v in values])
        except ValueError:
            raise BakeCSVError(f"{path}, line {number}: not a number") from None
    data = np.array(rows, dtype=float).reshape(len(rows), len(header))
    bad = ~np.isfinite(data)
    if bad.any():  # float() reads nan and inf: a motion holding them poses nothing
        row, column = np.argwhere(bad)[0]
        raise BakeCSVError(f"{path}, line {row + 2}: {header[column]} is "
                           f"{lines[row + 1].split(',')[column].strip()}, not a finite number")
    return data


def _check_frames(path, data: np.ndarray) -> None:
    """Frame times that increase and root quaternions that are rotations, naming the first bad line:
    a repeated time makes a rate of zero and a zero quaternion no orientation at all."""
    if len(data) > 1 and np.any(np.diff(data[:, 0]) <= 0):
        line = int(np.argmax(np.diff(data[:, 0]) <= 0)) + 3
        raise BakeCSVError(f"{path}, line {line}: time_s {data[line - 2, 0]!r} does not increase")
    norms = np.linalg.norm(data[:, 4:8], axis=1)
    if np.any(norms < 1e-6):
        raise BakeCSVError(f"{path}, line {int(np.argmax(norms < 1e-6)) + 2}: root quaternion is zero")


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True
