"""BVH reader and forward kinematics, independent of Blender.

The retargeter must see a BVH clip exactly as Blender's own importer would
show it (same world axes, same bone tails), so a clip loaded headless and a
clip imported into a scene give the same SourceMotion. The conventions below
were read from Blender's io_anim_bvh importer and are checked against it by
tests/core/test_bvh.py:

* axes: default import (forward -Z, up Y) maps BVH (x, y, z) to (x, -z, y);
* rotations: channels are intrinsic Euler angles in degrees, the first listed
  channel outermost;
* a joint with position channels replaces its OFFSET by them (a missing axis
  reads as 0), in its parent's frame;
* tails: End Site, else the single child's head, else the mean of the
  children's heads, else the head; bones no longer than 0.001 file units get
  +0.1 file units along BVH Y, and bones still under 1 mm (scene units) are
  extended like Blender's edit-bone pass does.
"""
from __future__ import annotations

import re
import warnings
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from .source import SourceMotion
from .joint_tree import FramePose, forward_kinematics
from ..model.transforms import euler_to_matrix

# Blender importer defaults (axis_forward='-Z', axis_up='Y'): (x, y, z) -> (x, -z, y).
AXIS_MAP = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, -1.0], [0.0, 1.0, 0.0]])
# A file written Z-up (axis_forward='Y', axis_up='Z' in Blender's importer) is read as is.
UP_AXES = {"Y": AXIS_MAP, "Z": np.eye(3)}

CHANNEL_NAMES = ("Xposition", "Yposition", "Zposition", "Xrotation", "Yrotation", "Zrotation")
_CANONICAL = {n.lower(): n for n in CHANNEL_NAMES}


class BVHError(ValueError):
    """A BVH file could not be read; the message says which file and line."""

    def __init__(self, path, line: int | None, message: str):
        self.path = path
        self.line = line
        where = f"{path}" if line is None else f"{path}, line {line}"
        super().__init__(f"{where}: {message}")


@dataclass
class _ChannelLayout:
    positioned: np.ndarray  # joints whose position channels replace their offset
    position_joints: np.ndarray  # per position channel: joint, axis (0-2), MOTION column
    position_axes: np.ndarray
    position_columns: np.ndarray
    rotations: list  # per Euler order: (order, joints (G,), MOTION columns (G, 3), -1 where absent)


@dataclass
class BVHClip:
    """A parsed BVH file: skeleton in file units and raw channel values.

    Kept raw (degrees, file units, BVH axes) so nothing is lost before the
    caller picks a scale; to_source_motion() does the conversion.
    """

    names: list[str]
    parents: np.ndarray
    offsets: np.ndarray
    channels: list[list[str]]
    end_sites: dict[int, np.ndarray]
    frame_time: float
    motion: np.ndarray
    path: Path | None = None

    @property
    def frames(self) -> int:
        return int(self.motion.shape[0])

    @property
    def fps(self) -> float:
        return 1.0 / self.frame_time

    def to_source_motion(self, scale: float = 1.0, up: str = "Y", rows: np.ndarray | None = None) -> SourceMotion:
        """World heads/tails per frame in Blender's axes; metres = file units * scale.

        up: the file's up axis, "Y" (the BVH convention, Blender's default) or "Z".
        rows: channel values (F, K) to pose instead of the clip's own MOTION lines (a live
        stream of frames on this hierarchy); the skeleton's rest data is computed once per scale.
        """
        if not scale > 0:
            raise ValueError(f"scale must be positive, got {scale!r}")
        if up not in UP_AXES:
            raise ValueError(f"up axis must be one of {sorted(UP_AXES)}, got {up!r}")
        t_local, r_local = self._local_transforms(rows)
        heads, rots = forward_kinematics(self.parents, t_local, r_local)
        bone, rest_heads = self._rest(scale)
        tails = heads + np.einsum("fjab,jb->fja", rots, bone)
        rest_tails = rest_heads + bone

        c = UP_AXES[up]
        return SourceMotion(
            bone_names=list(self.names),
            parents=np.asarray(self.parents, dtype=int).copy(),
            heads=heads @ c.T * scale,
            tails=tails @ c.T * scale,
            root_rotation=c @ rots[:, 0] @ c.T,
            rest_heads=rest_heads @ c.T * scale,
            rest_tails=rest_tails @ c.T * scale,
            rest_root_rotation=np.eye(3),
            fps=self.fps,
            name=self.path.stem if self.path is not None else "",
        )

    def pose_frame(self, values: np.ndarray, scale: float = 1.0, up: str = "Y") -> SourceMotion:
        """to_source_motion(scale, up, rows=values[None]) for one frame (K,) of a live stream, in a
        fraction of the time: every joint is placed at once by pointer jumping (each joint's
        transform composed with its ancestors', log2 of the depth products) instead of a tree
        level at a time, and what does not depend on the frame is kept per scale and up axis."""
        cache = self.__dict__.setdefault("_frame_cache", {})
        if (scale, up) not in cache:
            cache[scale, up] = FramePose.build(self, scale, up, UP_AXES[up])
        pose = cache[scale, up]
        layout = self._channel_layout()
        local = pose.local.copy()  # (J + 1, 4, 4); the last is the identity every root hangs from
        local[layout.position_joints, layout.position_axes, 3] = values[layout.position_columns]
        for order, joints, columns in layout.rotations:
            angles = np.radians(np.where(columns >= 0, values[np.maximum(columns, 0)], 0.0))
            local[joints, :3, :3] = euler_to_matrix(angles, order)
        world = local
        for ancestor in pose.jumps:
            world = world[ancestor] @ world
        world = world[:-1]
        rots, c = world[:, :3, :3], pose.axes
        heads = world[:, :3, 3]
        tails = heads + (rots @ pose.bone[:, :, None])[..., 0]
        return replace(pose.rest, heads=(heads @ c.T * scale)[None], tails=(tails @ c.T * scale)[None],
                       root_rotation=(c @ rots[0] @ c.T)[None])

    def _rest(self, scale: float) -> tuple[np.ndarray, np.ndarray]:
        """Bone vectors (J, 3) and rest heads (J, 3), file units, computed once per scale."""
        cache = self.__dict__.setdefault("_rest_cache", {})
        if scale not in cache:
            rest_heads, _ = forward_kinematics(
                self.parents, self.offsets[None], np.broadcast_to(np.eye(3), (1, len(self.names), 3, 3)))
            cache[scale] = (self._bone_vectors(scale), rest_heads[0])
        return cache[scale]

    def _local_transforms(self, motion: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Per-frame joint translation (F, J, 3) and rotation (F, J, 3, 3) in the parent frame
        from channel values (F, K). Joints sharing an Euler order are turned in one call, so
        one live frame costs a few array operations, not a few per joint."""
        motion = self.motion if motion is None else motion
        n_frames, n_joints = motion.shape[0], len(self.names)
        layout = self._channel_layout()
        t = np.repeat(np.asarray(self.offsets, float)[None], n_frames, axis=0)
        t[:, layout.positioned] = 0.0  # like Blender: position channels replace the offset
        t[:, layout.position_joints, layout.position_axes] = motion[:, layout.position_columns]
        r = np.empty((n_frames, n_joints, 3, 3))
        r[:] = np.eye(3)
        for order, joints, columns in layout.rotations:
            angles = np.radians(np.where(columns >= 0, motion[:, np.maximum(columns, 0)], 0.0))  # (F, G, 3)
            r[:, joints] = euler_to_matrix(angles, order)
        return t, r

    def _channel_layout(self) -> "_ChannelLayout":
        """Where each joint's channels sit in a MOTION line, read once per clip."""
        cached = self.__dict__.get("_layout")
        if cached is not None:
            return cached
        positioned, pos_joints, pos_axes, pos_cols = [], [], [], []
        groups: dict[str, tuple[list[int], list[list[int]]]] = {}
        col = 0
        for j, chans in enumerate(self.channels):
            cols = range(col, col + len(chans))
            col += len(chans)
            pos = [(c[0], k) for c, k in zip(chans, cols) if c.endswith("position")]
            rot = [(c[0], k) for c, k in zip(chans, cols) if c.endswith("rotation")]
            if pos:
                positioned.append(j)
                for axis, k in pos:
                    pos_joints.append(j), pos_axes.append("XYZ".index(axis)), pos_cols.append(k)
            if rot:
                order = "".join(a for a, _ in rot)
                order += "".join(a for a in "XYZ" if a not in order)  # absent axes: angle 0
                joints, columns = groups.setdefault(order, ([], []))
                joints.append(j)
                columns.append([k for _, k in rot] + [-1] * (3 - len(rot)))
        layout = _ChannelLayout(np.array(positioned, dtype=int), np.array(pos_joints, dtype=int),
                                np.array(pos_axes, dtype=int), np.array(pos_cols, dtype=int),
                                [(order, np.array(j, dtype=int), np.array(c, dtype=int).reshape(-1, 3))
                                 for order, (j, c) in groups.items()])
        self.__dict__["_layout"] = layout
        return layout

    def _bone_vectors(self, scale: float) -> np.ndarray:
        """Head-to-tail vector of each bone in its own rest frame (file units), Blender's rule."""
        n = len(self.names)
        offsets = np.asarray(self.offsets, float)
        vec = np.zeros((n, 3))
        for j in range(n):
            kids = [k for k in range(n) if self.parents[k] == j]
            if j in self.end_sites:
                vec[j] = self.end_sites[j]
            elif kids:
                vec[j] = offsets[kids].mean(axis=0)
            if np.linalg.norm(vec[j]) <= 0.001:  # read_bvh: zero-length node
                vec[j, 1] += 0.1
        # bvh_node_dict2armature: edit bones still under 1 mm in scene units.
        lengths = np.linalg.norm(vec, axis=1) * scale
        nonzero = lengths[lengths > 0]
        average = nonzero.mean() if nonzero.size else 0.1
        out = vec.copy()
        for j in np.flatnonzero(lengths < 0.001):
            p = int(self.parents[j])
            if p >= 0 and lengths[p] > 0:
                out[j] += vec[p]
            else:
                out[j, 1] += average / scale
        return out


# ---------------------------------------------------------------- parsing


class _HierarchyParser:
    """Recursive-descent parser over (token, line) pairs of the HIERARCHY block."""

    def __init__(self, path, tokens: list[tuple[str, int]], end_line: int):
        self.path = path
        self.tokens = tokens
        self.pos = 0
        self.end_line = end_line  # reported when tokens run out (the MOTION line or EOF)
        self.names: list[str] = []
        self.parents: list[int] = []
        self.offsets: list[np.ndarray | None] = []
        self.channels: list[list[str]] = []
        self.end_sites: dict[int, np.ndarray] = {}

    def error(self, line: int | None, message: str) -> BVHError:
        return BVHError(self.path, line, message)

    def next(self, what: str) -> tuple[str, int]:
        if self.pos >= len(self.tokens):
            raise self.error(self.end_line, f"expected {what}, found end of hierarchy")
        tok = self.tokens[self.pos]
        self.pos += 1
        return tok

    def expect(self, word: str, what: str | None = None) -> int:
        tok, line = self.next(what or repr(word))
        if tok.lower() != word.lower():
            raise self.error(line, f"expected {what or repr(word)}, found {tok!r}")
        return line

    def rest_of_line(self, line: int) -> list[str]:
        out = []
        while self.pos < len(self.tokens) and self.tokens[self.pos][1] == line:
            out.append(self.tokens[self.pos][0])
            self.pos += 1
        return out

    def parse(self) -> None:
        self.expect("HIERARCHY", "HIERARCHY")
        while self.pos < len(self.tokens) and self.tokens[self.pos][0].lower() == "root":
            self.joint(-1)
        if not self.names:
            tok, line = self.tokens[self.pos] if self.pos < len(self.tokens) else ("end of hierarchy", self.end_line)
            raise self.error(line, f"expected ROOT, found {tok!r}")
        if self.pos < len(self.tokens):
            tok, line = self.tokens[self.pos]
            hint = " (unbalanced braces)" if tok == "}" else ""
            raise self.error(line, f"expected MOTION after the root joint, found {tok!r}{hint}")

    def joint(self, parent: int) -> None:
        keyword, line = self.next("ROOT or JOINT")
        words = self.rest_of_line(line)
        has_brace = bool(words) and words[-1] == "{"
        words = words[:-1] if has_brace else words
        if not words:
            raise self.error(line, f"{keyword} without a name")
        j = len(self.names)
        self.names.append(self._unique("_".join(words)))
        self.parents.append(parent)
        self.offsets.append(None)
        self.channels.append([])
        if not has_brace:
            self.expect("{", f"'{{' after {keyword} {self.names[j]}")
        self._joint_body(j, line)

    def _joint_body(self, j: int, open_line: int) -> None:
        name = self.names[j]
        while True:
            if self.pos >= len(self.tokens):
                raise self.error(self.end_line, f"unbalanced braces: joint {name!r} opened at line "
                                                f"{open_line} is never closed")
            tok, line = self.next("'}'")
            low = tok.lower()
            if tok == "}":
                break
            if low == "offset":
                self.offsets[j] = self.vector(line)
            elif low == "channels":
                self.channels[j] = self.channel_list(line)
            elif low == "joint":
                self.pos -= 1
                self.joint(j)
            elif low == "end":
                self.end_site(j, line)
            else:
                hint = " (unbalanced braces?)" if low in ("root", "motion") else ""
                raise self.error(line, f"unexpected {tok!r} in joint {name!r}{hint}")
        if self.offsets[j] is None:
            raise self.error(open_line, f"joint {name!r} has no OFFSET")

    def vector(self, line: int) -> np.ndarray:
        out = np.empty(3)
        for i in range(3):
            tok, tline = self.next("an OFFSET value")
            try:
                out[i] = float(tok)
            except ValueError:
                raise self.error(tline, f"OFFSET value {tok!r} is not a number") from None
        return out

    def channel_list(self, line: int) -> list[str]:
        tok, tline = self.next("a CHANNELS count")
        try:
            count = int(tok)
        except ValueError:
            raise self.error(tline, f"CHANNELS count {tok!r} is not an integer") from None
        words = self.rest_of_line(tline)
        if count != len(words):
            raise self.error(tline, f"CHANNELS declares {count} channels but lists {len(words)}")
        out = []
        for w in words:
            if w.lower() not in _CANONICAL:
                raise self.error(tline, f"unknown channel name {w!r}")
            if _CANONICAL[w.lower()] in out:
                raise self.error(tline, f"channel {w!r} listed twice")
            out.append(_CANONICAL[w.lower()])
        return out

    def end_site(self, j: int, line: int) -> None:
        tok, tline = self.next("'Site'")
        if tok.lower() != "site":
            raise self.error(tline, f"expected 'Site' after 'End', found {tok!r}")
        self.rest_of_line(tline)  # some exporters name End Sites; Blender ignores it too
        self.expect("{", "'{' after End Site")
        self.expect("OFFSET", "OFFSET in End Site")
        self.end_sites[j] = self.vector(tline)
        self.expect("}", "'}' closing End Site")

    def _unique(self, name: str) -> str:
        """Blender renames duplicate joint names to name.001, name.002, ..."""
        if name not in self.names:
            return name
        i = 1
        while f"{name}.{i:03d}" in self.names:
            i += 1
        return f"{name}.{i:03d}"


_FRAMES_RE = re.compile(r"^\s*frames\s*:\s*(\S+)\s*$", re.IGNORECASE)
_FRAME_TIME_RE = re.compile(r"^\s*frame\s+time\s*:\s*(\S+)\s*$", re.IGNORECASE)


def _lineno(lines: list[str], i: int) -> int:
    """1-based line number of index i, or the last line when i is past the end."""
    return i + 1 if i < len(lines) else max(len(lines), 1)


def _next_content_line(lines: list[str], i: int) -> int:
    """Index of the first non-blank line at or after i (len(lines) if none)."""
    while i < len(lines) and not lines[i].strip():
        i += 1
    return i


def _motion_header(path, lines: list[str], motion_idx: int) -> tuple[int, float, int]:
    """Parse 'Frames:' and 'Frame Time:'; return (frames, frame_time, index of first row)."""
    if motion_idx >= len(lines):
        raise BVHError(path, _lineno(lines, motion_idx), "no MOTION section")
    i = _next_content_line(lines, motion_idx + 1)
    m = _FRAMES_RE.match(lines[i]) if i < len(lines) else None
    if m is None:
        raise BVHError(path, _lineno(lines, i), "expected 'Frames: <count>' after MOTION")
    try:
        frames = int(m.group(1))
    except ValueError:
        raise BVHError(path, i + 1, f"frame count {m.group(1)!r} is not an integer") from None
    if frames < 0:
        raise BVHError(path, i + 1, f"negative frame count {frames}")
    k = _next_content_line(lines, i + 1)
    m = _FRAME_TIME_RE.match(lines[k]) if k < len(lines) else None
    if m is None:
        raise BVHError(path, _lineno(lines, k), "expected 'Frame Time: <seconds>'")
    try:
        frame_time = float(m.group(1))
    except ValueError:
        raise BVHError(path, k + 1, f"frame time {m.group(1)!r} is not a number") from None
    if not (np.isfinite(frame_time) and frame_time > 0):
        raise BVHError(path, k + 1, f"frame time must be positive, got {m.group(1)!r}")
    return frames, frame_time, k + 1


def _parse_rows(path, lines: list[str], start: int, frames: int, n_channels: int, frames_line: int):
    """Validate row lengths, then convert the whole motion block in one numpy call."""
    if n_channels == 0:
        return np.zeros((frames, 0))
    rows = [(i + 1, ln) for i, ln in enumerate(lines[start:], start) if ln.strip()]
    if len(rows) < frames:
        raise BVHError(path, frames_line, f"'Frames: {frames}' but only {len(rows)} frame rows follow")
    if len(rows) > frames:
        warnings.warn(f"{path}: {len(rows) - frames} rows after the {frames} declared frames ignored",
                      stacklevel=3)
    rows = rows[:frames]
    for lineno, text in rows:
        found = len(text.split())
        if found != n_channels:
            raise BVHError(path, lineno, f"frame row has {found} values, expected {n_channels}")
    try:
        values = np.array(" ".join(text for _, text in rows).split(), dtype=float)
    except ValueError:
        for lineno, text in rows:
            for tok in text.split():
                try:
                    float(tok)
                except ValueError:
                    raise BVHError(path, lineno, f"frame value {tok!r} is not a number") from None
        raise
    return values.reshape(frames, n_channels)


def load_bvh(path) -> BVHClip:
    """Read a BVH file; raises BVHError naming the file and line on any defect."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8-sig", errors="replace")
    except FileNotFoundError:
        raise BVHError(path, None, "file not found") from None
    except OSError as exc:
        raise BVHError(path, None, f"cannot read file ({exc.strerror or exc})") from None
    lines = text.splitlines()

    tokens: list[tuple[str, int]] = []
    motion_idx = len(lines)
    for i, ln in enumerate(lines):
        words = ln.split()
        if words and words[0].lower() == "motion":
            motion_idx = i
            break
        tokens.extend((w, i + 1) for w in words)

    parser = _HierarchyParser(path, tokens, end_line=_lineno(lines, motion_idx))
    parser.parse()
    frames, frame_time, first_row = _motion_header(path, lines, motion_idx)
    n_channels = sum(len(c) for c in parser.channels)
    frames_line = _lineno(lines, _next_content_line(lines, motion_idx + 1))
    motion = _parse_rows(path, lines, first_row, frames, n_channels, frames_line)
    return BVHClip(
        names=parser.names,
        parents=np.array(parser.parents, dtype=int),
        offsets=np.array(parser.offsets, dtype=float).reshape(-1, 3),
        channels=parser.channels,
        end_sites=parser.end_sites,
        frame_time=frame_time,
        motion=motion,
        path=path,
    )
