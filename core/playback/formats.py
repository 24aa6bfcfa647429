"""Playback files controllers and simulators read: one writer and one reader per format.

| format             | file  | root quaternion | what                                              |
| ------------------ | ----- | --------------- | ------------------------------------------------- |
| `csv`              | .csv  | w x y z         | header + rows, sidecar `<name>.meta.json`         |
| `unitree-csv`      | .csv  | x y z w         | no header: root x y z, quaternion, joints         |
| `npz`              | .npz  | x y z w         | fps, root_pos, root_rot, dof_pos, joint_names     |
| `pkl`              | .pkl  | x y z w         | exactly fps, root_pos, root_rot, dof_pos (GMR)    |
| `ros2-yaml`        | .yaml | (no root)       | trajectory_msgs/JointTrajectory                   |
| `mujoco-keyframes` | .xml  | w x y z         | <keyframe><key time qpos/>: free joint, joints    |

`mujoco-keyframes` without the free joint (a fixed-base arm): qpos is the joints only (core.playback.mujoco).

Joints are in URDF order (movable joints), in radians (metres for prismatic
joints); `csv` and `npz` may hold degrees, and say so. Every file is written
atomically (temporary file + rename) and never replaces an existing file
unless asked. Readers return radians whatever the file holds.
"""
from __future__ import annotations

import hashlib
import io
import json
import math
import pickle
import re
import xml.etree.ElementTree as ET
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from xml.sax.saxutils import quoteattr

import numpy as np

from ..motion.bake_csv import ROOT_COLUMNS, BakeCSVError, BakeTable, bake_csv_text, read_bake_csv
from ..motion.fileio import OutputError, write_bytes_atomic
from ..motion.numbers import number_rows, number_text
from .mujoco import FREE_JOINT_WIDTH, fixed_root_pose, has_free_joint, root_columns
from .sampling import JointLimits, LimitViolation, PlaybackTrack, tick_times

FORMATS = {"csv": ".csv", "unitree-csv": ".csv", "npz": ".npz", "pkl": ".pkl",
           "ros2-yaml": ".yaml", "mujoco-keyframes": ".xml"}
RADIAN_ONLY = ("unitree-csv", "pkl", "ros2-yaml", "mujoco-keyframes")
QUATERNION_ORDER = {"csv": "wxyz", "unitree-csv": "xyzw", "npz": "xyzw", "pkl": "xyzw",
                    "ros2-yaml": None, "mujoco-keyframes": "wxyz"}
META_FORMAT = "robot_retarget.playback"
META_VERSION = 1
_TIME_RTOL = 1e-9
_DEG = 180.0 / math.pi


class PlaybackFormatError(ValueError):
    """A playback file that cannot be read; the message names the file and line or key."""


@dataclass
class PlaybackMeta:
    """What a file says about itself beyond the samples."""

    robot: str = ""
    source: str = ""
    limits: JointLimits | None = None
    violations: list = field(default_factory=list)  # LimitViolation or dicts
    retimed_seconds_added: float = 0.0
    generator: str = "robot_retarget"


@dataclass
class PlaybackFile:
    """A file read back: the track in radians/metres and its metadata (may be empty)."""

    path: Path
    format: str
    track: PlaybackTrack
    metadata: dict


def sidecar_path(path) -> Path:
    """walk.csv -> walk.meta.json: the csv format's metadata file."""
    path = Path(path)
    return path.with_name(f"{path.stem}.meta.json")


def output_paths(path, fmt: str) -> list[Path]:
    """Every file a write of `fmt` to `path` creates (csv adds its sidecar)."""
    return [Path(path), sidecar_path(path)] if fmt == "csv" else [Path(path)]


# ------------------------------------------------------------ metadata ---

def metadata(track: PlaybackTrack, fmt: str, meta: PlaybackMeta | None, degrees: bool) -> dict:
    """The self-description every format carries (sidecar, comment or npz entry)."""
    meta = meta or PlaybackMeta()
    prismatic = track.is_prismatic()
    violations = [v.to_dict() if isinstance(v, LimitViolation) else dict(v) for v in meta.violations]
    return {
        "format": META_FORMAT, "version": META_VERSION, "file_format": fmt, "generator": meta.generator,
        "robot": meta.robot, "source": meta.source, "joint_names": list(track.joint_names),
        "units": {"time": "s", "length": "m", "angle": "deg" if degrees else "rad",
                  "joints": ["m" if p else ("deg" if degrees else "rad") for p in prismatic]},
        "quaternion_order": QUATERNION_ORDER[fmt], "rate_hz": track.rate_hz, "period_s": track.period_s,
        "samples": track.samples, "duration_s": track.duration_s,
        "limits": meta.limits.to_list(degrees) if meta.limits is not None else [],
        "violations": violations, "retimed_seconds_added": float(meta.retimed_seconds_added),
    }


def _comment_json(data: dict) -> str:
    """JSON that is safe inside XML and YAML comments (no '--', one line)."""
    return json.dumps(data, separators=(",", ":")).replace("--", "-\\u002d")  # "--" only occurs in strings


def _joints_out(track: PlaybackTrack, degrees: bool) -> np.ndarray:
    q = np.array(track.q, dtype=float)
    if degrees:
        q[:, ~track.is_prismatic()] *= _DEG
    return q


def _joints_in(q: np.ndarray, units: list | None) -> tuple[np.ndarray, np.ndarray | None]:
    """Back to radians; prismatic mask from per-joint units when the file states them."""
    if not units:
        return q, None
    units = np.array(units)
    q = np.array(q, dtype=float)
    q[:, units == "deg"] /= _DEG
    return q, units == "m"


def _check_finite(track: PlaybackTrack) -> None:
    for name in ("root_position", "root_quaternion", "q"):
        if not np.all(np.isfinite(getattr(track, name))):
            raise ValueError(f"refusing to write a playback with non-finite {name}")
    if track.q.shape[1] != len(track.joint_names):
        raise ValueError(f"{len(track.joint_names)} joint names for {track.q.shape[1]} joint columns")


def _xyzw(wxyz: np.ndarray) -> np.ndarray:
    return np.asarray(wxyz)[:, [1, 2, 3, 0]]


def _wxyz(xyzw: np.ndarray) -> np.ndarray:
    return np.asarray(xyzw)[:, [3, 0, 1, 2]]


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
        raise PlaybackFormatError(f"{path}: sample {k} at {times[k]!r} s is not on the "
                                  f"{stated!r} s control cycle ({expected[k]!r} s)")
    return stated


# -------------------------------------------------------------- writers ---

def write_playback(path, track: PlaybackTrack, fmt: str, meta: PlaybackMeta | None = None, *,
                   degrees: bool = False, overwrite: bool = False, free_joint: bool = True) -> list[Path]:
    """Write `track` as `fmt`; returns the files written (nothing is written on error).

    free_joint=False (mujoco-keyframes only) writes the joints without the root, for a fixed-base
    MJCF; it refuses a track whose root moves."""
    if fmt not in FORMATS:
        raise ValueError(f"format {fmt!r}: expected one of {', '.join(FORMATS)}")
    if degrees and fmt in RADIAN_ONLY:
        raise ValueError(f"format {fmt!r} stores radians by convention; degrees are offered for csv and npz")
    _check_finite(track)
    paths = output_paths(path, fmt)
    if not overwrite:
        for target in paths:
            if target.exists():
                raise OutputError(f"{target}: file exists (choose another name or allow overwriting)")
    info = metadata(track, fmt, meta, degrees)
    if fmt == "mujoco-keyframes" and not free_joint:
        info.update(free_joint=False, root_pose=fixed_root_pose(track))  # only then: the default stays as it was
    blobs = _WRITERS[fmt](track, info, degrees)
    before = {target: target.read_bytes() if target.exists() else None for target in paths[:-1]}
    done: list[Path] = []
    try:
        for target, blob in zip(paths, blobs):
            write_bytes_atomic(target, blob, overwrite=overwrite)
            done.append(target)
    except BaseException:
        _roll_back(done, before)  # a csv without its sidecar (or with a stale one) is half an export
        raise
    return paths


def _roll_back(done: list[Path], before: dict) -> None:
    for target in done:
        if before.get(target) is None:
            target.unlink(missing_ok=True)
        else:
            write_bytes_atomic(target, before[target], overwrite=True)


def _write_csv(track: PlaybackTrack, info: dict, degrees: bool) -> list[bytes]:
    """The bake CSV layout (core.motion.bake_csv), with a sidecar."""
    columns = ROOT_COLUMNS + list(track.joint_names)
    table = BakeTable(list(track.joint_names), track.time_s, track.root_position, track.root_quaternion,
                      _joints_out(track, degrees))
    data = bake_csv_text(table).encode("utf-8")
    info = dict(info, columns=columns, content_sha256=hashlib.sha256(data).hexdigest())
    return [data, (json.dumps(info, indent=2) + "\n").encode("utf-8")]


def _write_unitree(track: PlaybackTrack, info: dict, degrees: bool) -> list[bytes]:
    data = np.column_stack([track.root_position, _xyzw(track.root_quaternion), track.q])
    return [number_text(data, ",")]


def _write_npz(track: PlaybackTrack, info: dict, degrees: bool) -> list[bytes]:
    arrays = dict(fps=np.float64(track.rate_hz), root_pos=track.root_position,
                  root_rot=_xyzw(track.root_quaternion), dof_pos=_joints_out(track, degrees),
                  joint_names=np.array(track.joint_names, dtype=str), metadata=np.array(json.dumps(info)))
    return [_npz_bytes(arrays)]


def _npz_bytes(arrays: dict) -> bytes:
    """What np.savez writes, but with a fixed time stamp on every member: the same motion gives the
    same bytes whenever (and by whichever command) it is written."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as archive:
        for name, value in arrays.items():
            member = io.BytesIO()
            np.lib.format.write_array(member, np.asanyarray(value), allow_pickle=False)
            archive.writestr(zipfile.ZipInfo(f"{name}.npy", date_time=(1980, 1, 1, 0, 0, 0)), member.getvalue())
    return out.getvalue()


def _gmr_fps(rate_hz: float) -> float | int:
    """A whole rate as int (tools index frames with it), else float."""
    return int(round(rate_hz)) if abs(rate_hz - round(rate_hz)) < 1e-9 else float(rate_hz)


def _write_pkl(track: PlaybackTrack, info: dict, degrees: bool) -> list[bytes]:
    data = {"fps": _gmr_fps(track.rate_hz), "root_pos": np.array(track.root_position, dtype=np.float64),
            "root_rot": _xyzw(track.root_quaternion).astype(np.float64),
            "dof_pos": np.array(track.q, dtype=np.float64)}
    return [pickle.dumps(data, protocol=4)]


def _write_ros2_yaml(track: PlaybackTrack, info: dict, degrees: bool) -> list[bytes]:
    from .sampling import sample_derivatives

    vel, acc = sample_derivatives(track.q, track.period_s)
    ns = np.rint(track.time_s * 1e9).astype(np.int64)
    lines = ["# Robot Retarget playback: trajectory_msgs/JointTrajectory",
             f"# robot {info['robot']!r}, source {info['source']!r}, {track.rate_hz:g} Hz, joints in URDF order",
             "# positions rad, velocities rad/s, accelerations rad/s^2 (m, m/s, m/s^2 for prismatic joints);",
             "# velocities and accelerations are the finite differences of the positions",
             "# the floating base (root) pose is not part of a JointTrajectory",
             f"# robot_retarget: {_comment_json(info)}",
             "header:", "  stamp: {sec: 0, nanosec: 0}", "  frame_id: \"\"",
             f"joint_names: {json.dumps(list(track.joint_names))}", "points:"]
    head = "\n".join(lines) + "\n"  # comments and quoted names: no number for YAML to misread
    point = (b"  - positions: [%s]\n    velocities: [%s]\n    accelerations: [%s]\n    effort: []\n"
             b"    time_from_start: {sec: %d, nanosec: %d}\n")
    rows = zip(number_rows(track.q, ", ", yaml=True), number_rows(vel, ", ", yaml=True), number_rows(acc, ", ", yaml=True),
               ns.tolist())
    return [head.encode("utf-8") + b"".join([point % (p, v, a, *divmod(t, 1_000_000_000)) for p, v, a, t in rows])]


def _write_mujoco(track: PlaybackTrack, info: dict, degrees: bool) -> list[bytes]:
    model = quoteattr(f"{info['robot'] or 'robot'} playback")
    if info.get("free_joint", True):
        qpos = number_rows(np.column_stack([track.root_position, track.root_quaternion, track.q]), " ")
        layout = ("<!-- Robot Retarget playback. qpos = free joint x y z (m), quaternion w x y z, then the "
                  "joints in URDF order (rad; m for prismatic joints). Include this file in the robot's "
                  "MJCF (<include file=\"...\"/>): its free joint must come first and its joints in this "
                  "order. -->")
    else:
        qpos = number_rows(track.q, " ")
        layout = ("<!-- Robot Retarget playback, no free joint (fixed base). qpos = the joints in URDF "
                  "order (rad; m for prismatic joints). Include this file in the robot's MJCF "
                  "(<include file=\"...\"/>): it must have no free joint and its joints in this order; "
                  "the root stays at root_pose (x y z, w x y z) in the comment below. -->")
    head = ['<?xml version="1.0" encoding="utf-8"?>', layout,
            f"<!-- robot_retarget: {_comment_json(info)} -->",
            f"<mujoco model={model}>", "  <keyframe>"]
    keys = [b'    <key time="%s" qpos="%s"/>\n' % key for key in zip(number_rows(track.time_s[:, None], ""), qpos)]
    return [("\n".join(head) + "\n").encode("utf-8") + b"".join(keys) + b"  </keyframe>\n</mujoco>\n"]


_WRITERS = {"csv": _write_csv, "unitree-csv": _write_unitree, "npz": _write_npz, "pkl": _write_pkl,
            "ros2-yaml": _write_ros2_yaml, "mujoco-keyframes": _write_mujoco}


# -------------------------------------------------------------- readers ---

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
