"""Reading playback files back: one reader per format, radians and metres whatever the file holds.

Formats without names or timing (unitree-csv, pkl) take them from the caller.
"""
from __future__ import annotations

import hashlib
import json
import pickle
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np

from ..motion.bake_csv import BakeCSVError, read_bake_csv
from .layout import FORMATS, META_FORMAT, PlaybackFile, PlaybackFormatError, _joints_in, _wxyz, sidecar_path
from .mujoco import FREE_JOINT_WIDTH, has_free_joint, root_columns
from .sampling import PlaybackTrack, tick_times


# -------------------------------------------------------------- readers ---

_TIME_RTOL = 1e-9


def _period_from(times: np.ndarray, path: Path, stated: float | None = None) -> float:
    """The stated period, or the first step; every time must be k * period."""
    if stated is None:
        if len(times) < 2:
            raise PlaybackFormatError(f"{path}: one sample and no stated rate: cannot tell the period")
        stated = float(times[1] - times[0])
    expected = tick_times(len(times), stated)
    off = np.abs(times - expected) > _TIME_RTOL * np.maximum(1.0, np.abs(expected))
    if np.any(off):
        k = int(np.flatnonzero(off)[0])
        raise PlaybackFormatError(f"{path}: sample {k} at {float(times[k])!r} s is not on the "
                                  f"{float(stated)!r} s control cycle ({float(expected[k])!r} s)")
    return stated



def read_playback(path, fmt: str | None = None, *, joint_names: list[str] | None = None,
                  rate_hz: float | None = None) -> PlaybackFile:
    """Read a playback file back (radians). Formats without names or timing (unitree-csv,
    pkl) take `joint_names` and `rate_hz`; `fmt` defaults from the extension and contents."""
    path = Path(path)
    if not path.is_file():
        raise PlaybackFormatError(f"{path}: playback file not found")
    fmt = fmt or _guess_format(path)
    if fmt not in FORMATS:
        raise PlaybackFormatError(f"{path}: unknown format {fmt!r} (one of {', '.join(FORMATS)})")
    try:
        track, info = _READERS[fmt](path, joint_names, rate_hz)
    except (UnicodeDecodeError, ValueError, KeyError, OSError, pickle.UnpicklingError, EOFError) as exc:
        if isinstance(exc, PlaybackFormatError):
            raise
        raise PlaybackFormatError(f"{path}: not a readable {fmt} playback file ({exc})") from None
    _check_samples(path, track)
    return PlaybackFile(path, fmt, track, info)


def _check_samples(path: Path, track: PlaybackTrack) -> None:
    """Every value finite and every root quaternion a rotation, naming the first bad sample: an
    npz with one NaN knee read as a robot never on the ground, and a zero quaternion as no pose."""
    columns = [("root_x", "root_y", "root_z"), ("root_qw", "root_qx", "root_qy", "root_qz"), track.joint_names]
    for names, values in zip(columns, (track.root_position, track.root_quaternion, track.q)):
        bad = ~np.isfinite(np.asarray(values, float).reshape(track.samples, -1))
        if bad.any():
            k, c = np.argwhere(bad)[0]
            raise PlaybackFormatError(f"{path}: sample {k} ({k * track.period_s:.6g} s): {names[c]} is "
                                      f"{values[k][c]}, not a finite number")
    norms = np.linalg.norm(track.root_quaternion, axis=1)
    if np.any(norms < 1e-6):
        k = int(np.argmax(norms < 1e-6))
        raise PlaybackFormatError(f"{path}: sample {k} ({k * track.period_s:.6g} s): root quaternion is zero")


def _guess_format(path: Path) -> str:
    suffix = path.suffix.lower()
    if suffix == ".csv":
        with open(path, "rb") as fh:
            first = fh.readline(64)
        return "csv" if first.startswith(b"time_s") else "unitree-csv"
    for name, ext in FORMATS.items():
        if ext == suffix or (suffix == ".yml" and ext == ".yaml"):
            return name
    raise PlaybackFormatError(f"{path}: cannot tell the playback format from {suffix!r}; name it")


def _names(count: int, given: list[str] | None, path: Path) -> list[str]:
    if given is None:
        return [f"joint_{i}" for i in range(count)]
    if len(given) != count:
        raise PlaybackFormatError(f"{path}: {count} joint columns, but {len(given)} joint names given")
    return list(given)


def _read_csv(path: Path, joint_names, rate_hz) -> tuple[PlaybackTrack, dict]:
    try:
        table = read_bake_csv(path)
    except BakeCSVError as exc:
        raise PlaybackFormatError(str(exc)) from None
    info: dict = {}
    side = sidecar_path(path)
    if side.is_file():
        info = _read_sidecar(side, path, table.joint_names)
    q, prismatic = _joints_in(table.q, info.get("units", {}).get("joints"))
    stated = info.get("period_s") or (1.0 / rate_hz if rate_hz else None)
    period = _period_from(table.time, path, stated)
    return PlaybackTrack(table.joint_names, period, table.root_position, table.root_quaternion, q,
                         prismatic), info


def _read_sidecar(side: Path, path: Path, names: list[str]) -> dict:
    try:
        info = json.loads(side.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise PlaybackFormatError(f"{side}: line {exc.lineno}: invalid JSON ({exc.msg})") from None
    if not isinstance(info, dict) or info.get("format") != META_FORMAT:
        raise PlaybackFormatError(f"{side}: not a Robot Retarget playback sidecar")
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if info.get("content_sha256") not in (None, digest):
        raise PlaybackFormatError(f"{path}: content hash differs from {side.name} (the file changed "
                                  "after export)")
    if info.get("joint_names") not in (None, list(names)):
        raise PlaybackFormatError(f"{side}: joint_names do not match the header of {path.name}")
    return info


def _read_unitree(path: Path, joint_names, rate_hz) -> tuple[PlaybackTrack, dict]:
    if not rate_hz:
        raise PlaybackFormatError(f"{path}: unitree-csv stores no timing; give the rate")
    rows = []
    width = None
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        values = line.split(",")
        width = width or len(values)
        if len(values) != width or width < 7:
            raise PlaybackFormatError(f"{path}, line {number}: {len(values)} values, expected "
                                      f"{width if width >= 7 else 'at least 7'}")
        try:
            rows.append([float(v) for v in values])
        except ValueError:
            raise PlaybackFormatError(f"{path}, line {number}: not a number") from None
    if not rows:
        raise PlaybackFormatError(f"{path}: empty file")
    data = np.array(rows)
    names = _names(data.shape[1] - 7, joint_names, path)
    return PlaybackTrack(names, 1.0 / rate_hz, data[:, :3], _wxyz(data[:, 3:7]), data[:, 7:]), {}


def _gmr_arrays(data: dict, path: Path, joint_names) -> tuple[float, np.ndarray, np.ndarray, np.ndarray]:
    for key in ("fps", "root_pos", "root_rot", "dof_pos"):
        if key not in data:
            raise PlaybackFormatError(f"{path}: no {key!r} entry")
    fps = float(np.asarray(data["fps"]).reshape(-1)[0])
    pos, rot, dof = (np.asarray(data[k], dtype=float) for k in ("root_pos", "root_rot", "dof_pos"))
    frames = len(pos)
    if pos.shape != (frames, 3) or rot.shape != (frames, 4) or dof.ndim != 2 or len(dof) != frames:
        raise PlaybackFormatError(f"{path}: root_pos {pos.shape}, root_rot {rot.shape}, dof_pos "
                                  f"{dof.shape}: expected (N,3), (N,4), (N,ndof)")
    if not fps > 0:
        raise PlaybackFormatError(f"{path}: fps {fps!r} is not positive")
    return fps, pos, rot, dof


def _read_npz(path: Path, joint_names, rate_hz) -> tuple[PlaybackTrack, dict]:
    with np.load(path, allow_pickle=False) as data:
        fps, pos, rot, dof = _gmr_arrays(data, path, joint_names)
        names = [str(n) for n in data["joint_names"]] if "joint_names" in data else None
        info = json.loads(str(data["metadata"])) if "metadata" in data else {}
    names = _names(dof.shape[1], names if names is not None else joint_names, path)
    q, prismatic = _joints_in(dof, info.get("units", {}).get("joints"))
    period = info.get("period_s") or 1.0 / fps
    return PlaybackTrack(names, period, pos, _wxyz(rot), q, prismatic), info


class _ArraysOnly(pickle.Unpickler):
    """Unpickle plain containers and numpy arrays only: a .pkl must not run code."""

    _ALLOWED = {("numpy.core.multiarray", "_reconstruct"), ("numpy._core.multiarray", "_reconstruct"),
                ("numpy.core.multiarray", "scalar"), ("numpy._core.multiarray", "scalar"),
                ("numpy.core.numeric", "_frombuffer"), ("numpy._core.numeric", "_frombuffer"),
                ("numpy", "ndarray"), ("numpy", "dtype")}

    def find_class(self, module: str, name: str):
        if (module, name) not in self._ALLOWED:
            raise pickle.UnpicklingError(f"refusing to load {module}.{name}")
        return super().find_class(module, name)


def _read_pkl(path: Path, joint_names, rate_hz) -> tuple[PlaybackTrack, dict]:
    with open(path, "rb") as fh:
        data = _ArraysOnly(fh).load()
    if not isinstance(data, dict):
        raise PlaybackFormatError(f"{path}: expected a dict with fps, root_pos, root_rot, dof_pos")
    fps, pos, rot, dof = _gmr_arrays(data, path, joint_names)
    names = _names(dof.shape[1], joint_names, path)
    return PlaybackTrack(names, 1.0 / fps, pos, _wxyz(rot), dof), {}


def _comment_info(text: str) -> dict:
    """The metadata JSON a writer put in a `robot_retarget:` comment (empty if none)."""
    match = re.search(r"robot_retarget: (\{.*\})", text)
    return json.loads(match.group(1)) if match else {}


_TIME = re.compile(r"\{\s*sec:\s*(-?\d+)\s*,\s*nanosec:\s*(\d+)\s*\}")


def _read_ros2_yaml(path: Path, joint_names, rate_hz) -> tuple[PlaybackTrack, dict]:
    text = path.read_text(encoding="utf-8")
    info = _comment_info(text)
    names, points, current = None, [], {}
    for number, line in enumerate(text.splitlines(), start=1):
        body = line.strip()
        key, _, value = body.lstrip("- ").partition(":")
        try:
            if key == "joint_names":
                names = json.loads(value)
            elif key in ("positions", "velocities", "accelerations"):
                if key == "positions":
                    current = {}
                    points.append(current)
                current[key] = json.loads(value)
            elif key == "time_from_start":
                sec, nanosec = _TIME.fullmatch(value.strip()).groups()
                current["ns"] = int(sec) * 1_000_000_000 + int(nanosec)
        except (json.JSONDecodeError, AttributeError):
            raise PlaybackFormatError(f"{path}, line {number}: cannot read {key!r}: {value.strip()[:40]!r}") from None
    return _ros_track(path, names, points, info), info


def _ros_track(path: Path, names, points: list[dict], info: dict) -> PlaybackTrack:
    if names is None or not points:
        raise PlaybackFormatError(f"{path}: no joint_names or no points (not a JointTrajectory)")
    for i, point in enumerate(points):
        if len(point.get("positions", ())) != len(names) or "ns" not in point:
            raise PlaybackFormatError(f"{path}: point {i}: {len(point.get('positions', ()))} positions for "
                                      f"{len(names)} joints, or no time_from_start")
    q = np.array([p["positions"] for p in points], dtype=float)
    ns = np.array([p["ns"] for p in points], dtype=np.int64)
    period = _period_from(ns / 1e9, path, info.get("period_s"))
    if not np.array_equal(ns, np.rint(tick_times(len(ns), period) * 1e9).astype(np.int64)):
        raise PlaybackFormatError(f"{path}: time_from_start is not k * {period!r} s to the nanosecond")
    frames = len(q)
    quat = np.tile([1.0, 0.0, 0.0, 0.0], (frames, 1))
    units = info.get("units", {}).get("joints")
    return PlaybackTrack(list(names), period, np.zeros((frames, 3)), quat, q,
                         None if not units else np.array(units) == "m")


def _read_mujoco(path: Path, joint_names, rate_hz) -> tuple[PlaybackTrack, dict]:
    text = path.read_text(encoding="utf-8")
    try:
        root = ET.fromstring(text)
    except ET.ParseError as exc:
        raise PlaybackFormatError(f"{path}, line {exc.position[0]}: invalid XML ({exc})") from None
    info = _comment_info(text)
    keys = root.findall("./keyframe/key") if root.tag == "mujoco" else root.findall("./key")
    if not keys:
        raise PlaybackFormatError(f"{path}: no <keyframe><key> elements")
    try:
        times = np.array([float(k.get("time", "nan")) for k in keys])
        rows = [np.array(k.get("qpos", "").split(), dtype=float) for k in keys]
    except ValueError as exc:
        raise PlaybackFormatError(f"{path}: <key> with a non-numeric time or qpos ({exc})") from None
    width = len(rows[0])
    given = info.get("joint_names", joint_names)
    free = has_free_joint(width, None if given is None else len(given), info)
    least = FREE_JOINT_WIDTH if free else 0
    bad = next((i for i, r in enumerate(rows) if len(r) != width), None)
    if bad is not None or width < least:
        raise PlaybackFormatError(f"{path}: <key> {bad or 0} has {len(rows[bad or 0])} qpos values, "
                                  f"expected {max(width, least)}")
    data = np.stack(rows)
    names = _names(width - least, given, path)
    period = _period_from(times, path, info.get("period_s") or (1.0 / rate_hz if rate_hz else None))
    units = info.get("units", {}).get("joints")
    root = (data[:, :3], data[:, 3:7]) if free else root_columns(len(data), info)
    return PlaybackTrack(names, period, *root, data[:, least:],
                         None if not units else np.array(units) == "m"), info


_READERS = {"csv": _read_csv, "unitree-csv": _read_unitree, "npz": _read_npz, "pkl": _read_pkl,
            "ros2-yaml": _read_ros2_yaml, "mujoco-keyframes": _read_mujoco}
