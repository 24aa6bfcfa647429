"""Playback files controllers and simulators read: one writer per format (the readers are in
core.playback.readers, what both share in core.playback.layout; their names import from here too).

| format             | file  | root quaternion | what                                              |
| ------------------ | ----- | --------------- | ------------------------------------------------- |
| `csv`              | .csv  | w x y z         | header + rows, sidecar `<name>.meta.json`         |
| `unitree-csv`      | .csv  | x y z w         | no header: root x y z, quaternion, joints         |
| `npz`              | .npz  | x y z w         | fps, root_pos, root_rot, dof_pos, joint_names     |
| `pkl`              | .pkl  | x y z w         | exactly fps, root_pos, root_rot, dof_pos (GMR)    |
| `ros2-yaml`        | .yaml | (no root)       | trajectory_msgs/JointTrajectory                   |
| `mujoco-keyframes` | .xml  | w x y z         | <keyframe><key time qpos/>: free joint, joints    |

`mujoco-keyframes` without the free joint (a fixed-base arm): qpos is the joints only (core.playback.mujoco).

Joints are in URDF order (movable joints; mimic joints as multiplier x leader +
offset, except in ros2-yaml: core.playback.mimic), in radians (metres for prismatic
joints); `csv` and `npz` may hold degrees, and say so. Every file is written
atomically (temporary file + rename) and never replaces an existing file
unless asked. Readers return radians whatever the file holds.
"""
from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import pickle
import zipfile
from pathlib import Path

import numpy as np

from ..motion.bake_csv import ROOT_COLUMNS, BakeTable, bake_csv_text
from ..motion.fileio import OutputError, write_bytes_atomic
from ..motion.numbers import number_rows, number_text
from .layout import (FORMATS, META_FORMAT, META_VERSION, QUATERNION_ORDER, RADIAN_ONLY, PlaybackFile,
                     PlaybackFormatError, PlaybackMeta, _joints_out, _xyzw, metadata, output_paths, sidecar_path)
from . import mimic
from .mujoco import fixed_root_pose
from .readers import read_playback
from .sampling import PlaybackTrack

__all__ = ["FORMATS", "META_FORMAT", "META_VERSION", "QUATERNION_ORDER", "RADIAN_ONLY", "PlaybackFile",
           "PlaybackFormatError", "PlaybackMeta", "metadata", "output_paths", "read_playback", "sidecar_path",
           "write_playback"]  # the readers and the shared layout moved out; their names still import from here


# -------------------------------------------------------------- writers ---

def _comment_json(data: dict) -> str:
    """JSON that is safe inside XML and YAML comments (no '--', one line)."""
    return json.dumps(data, separators=(",", ":")).replace("--", "-\\u002d")  # "--" only occurs in strings


def _check_finite(track: PlaybackTrack) -> None:
    for name in ("root_position", "root_quaternion", "q"):
        if not np.all(np.isfinite(getattr(track, name))):
            raise ValueError(f"refusing to write a playback with non-finite {name}")
    if track.q.shape[1] != len(track.joint_names):
        raise ValueError(f"{len(track.joint_names)} joint names for {track.q.shape[1]} joint columns")


def write_playback(path, track: PlaybackTrack, fmt: str, meta: PlaybackMeta | None = None, *,
                   degrees: bool = False, overwrite: bool = False, free_joint: bool = True) -> list[Path]:
    """Write `track` as `fmt`; returns the files written (nothing is written on error).

    free_joint=False (mujoco-keyframes only) writes the joints without the root, for a fixed-base
    MJCF; it refuses a track whose root moves. The robot's mimic joints (meta.mimic) are written
    as multiplier x leader + offset wherever the format lists them (core.playback.mimic)."""
    if fmt not in FORMATS:
        raise ValueError(f"format {fmt!r}: expected one of {', '.join(FORMATS)}")
    if degrees and fmt in RADIAN_ONLY:
        raise ValueError(f"format {fmt!r} stores radians by convention; degrees are offered for csv and npz")
    _check_finite(track)
    driven = meta.mimic if meta is not None and fmt not in mimic.LEFT_OUT else ()
    track = mimic.with_mimic_joints(track, driven)
    if driven:
        meta = dataclasses.replace(meta, limits=mimic.with_mimic_limits(meta.limits, driven))
    paths = output_paths(path, fmt)
    if not overwrite:
        for target in paths:
            if target.exists():
                raise OutputError(f"{target}: file exists (choose another name or allow overwriting)")
    info = metadata(track, fmt, meta, degrees)
    if driven:
        info["mimic"] = mimic.mimic_info(driven)  # only then: files of robots without them stay as they were
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
    from xml.sax.saxutils import quoteattr  # here: xml.sax pulls in urllib, http and email (~15 ms a start)

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
