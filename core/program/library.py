"""What motion programs are made of (issue 13): parts, modules and basic motions.

A part is a named group of robot joints (parts.json: its joints, and for parts driven by
commands the positions those commands name, their speed and, for a hand, its fingers). A
module is one part's drive data: keys at frame times that need not be evenly spaced. A basic
motion is a set of modules, one per part, that start together; a library folder holds one
bake CSV per motion or module (its file name is its name).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..motion.bake_csv import ROOT_COLUMNS, BakeCSVError, numbers, read_bake_csv
from ..motion.fileio import refuse_unknown_fields

PARTS_FORMAT = "robot_retarget.parts"
PARTS_VERSION = 1


class LibraryError(ValueError):
    """A parts file, motion or module that cannot be used; the message names the file."""


@dataclass
class Part:
    name: str
    joints: list[str]
    positions: dict[str, np.ndarray] = field(default_factory=dict)  # named joint values (J,)
    speed: float = 1.0  # rad/s of the moves commands make
    fingers: list[list[str]] = field(default_factory=list)  # per finger (thumb first), its joints


@dataclass
class Module:
    """One part's keys: times (K,) seconds from 0, values (K, J) in its part's joint order."""

    name: str
    part: str
    joints: list[str]
    times: np.ndarray
    values: np.ndarray

    @property
    def duration(self) -> float:
        return float(self.times[-1]) if len(self.times) else 0.0


@dataclass
class Library:
    parts: dict[str, Part]
    tables: dict[str, tuple[list[str], np.ndarray, np.ndarray]]  # name -> (joints, times, values)
    source: str = "<library>"
    modules: dict[tuple[str, str], Module] = field(default_factory=dict)  # (name, part) -> its own keys

    @classmethod
    def load(cls, folder) -> "Library":
        folder = Path(folder)
        if not folder.is_dir():
            raise LibraryError(f"{folder}: library folder not found")
        parts = load_parts(folder / "parts.json")
        tables = {path.stem: read_table(path) for path in sorted(folder.glob("*.csv"))}
        return cls(parts, tables, str(folder))

    def part(self, name: str) -> Part:
        try:
            return self.parts[name]
        except KeyError:
            raise LibraryError(f"{self.source}: no part {name!r} (parts: {', '.join(sorted(self.parts))})") from None

    def has_motion(self, name: str) -> bool:
        return name in self.tables or any(key[0] == name for key in self.modules)

    def motion(self, name: str) -> dict[str, Module]:
        """A basic motion's modules: its own per part (made in Blender), else one per part whose
        joints all have columns in its file."""
        own = {part: module for (motion, part), module in self.modules.items() if motion == name}
        if own:
            return own
        if name not in self.tables:
            raise LibraryError(f"{self.source}: no motion {name!r}")
        joints = self.tables[name][0]
        return {part: self.module(name, part) for part, spec in self.parts.items()
                if spec.joints and all(j in joints for j in spec.joints)}

    def module(self, name: str, part: str) -> Module:
        """`part`'s module from the file `name` (a module file, or a motion lending its module)."""
        if (name, part) in self.modules:
            return self.modules[(name, part)]
        if name not in self.tables:
            raise LibraryError(f"{self.source}: no module or motion {name!r}")
        joints, times, values = self.tables[name]
        spec = self.part(part)
        missing = [j for j in spec.joints if j not in joints]
        if missing:
            raise LibraryError(f"{self.source}/{name}.csv: no column for part {part}'s joint(s) {', '.join(missing)}")
        cols = [joints.index(j) for j in spec.joints]
        return Module(name, part, list(spec.joints), times - times[0], values[:, cols])


PART_NAMES = {"left_leg": "LEFTLEG", "right_leg": "RIGHTLEG", "left_arm": "LEFTARM", "right_arm": "RIGHTARM",
              "left_hand": "LEFTWRIST", "right_hand": "RIGHTWRIST", "spine": "WAIST", "head": "HEAD",
              "left_foot": "LEFTFOOT", "right_foot": "RIGHTFOOT"}


def parts_from_chains(chains: dict[str, list[str]]) -> dict[str, Part]:
    """Parts named the program's way (RIGHTARM, LEFTLEG, WAIST ...) from mapped chains: chain name ->
    the robot joints it moves, in order; a joint belongs to the first chain that has it."""
    parts, taken = {}, set()
    for chain, joints in chains.items():
        name = PART_NAMES.get(chain, chain.upper().replace("_", ""))
        own = [j for j in joints if j not in taken]
        if own:
            parts[name] = Part(name, own)
            taken.update(own)
    return parts


def parts_file(parts: dict[str, Part]) -> dict:
    """parts.json's content for `parts`."""
    return {"format": PARTS_FORMAT, "version": PARTS_VERSION,
            "parts": {name: {"joints": part.joints,
                             **({"positions": {k: v.tolist() for k, v in part.positions.items()},
                                 "speed": part.speed} if part.positions else {}),
                             **({"fingers": part.fingers} if part.fingers else {})}
                      for name, part in parts.items()}}


def read_table(path: Path) -> tuple[list[str], np.ndarray, np.ndarray]:
    """(joint names, times (K,), values (K, J)) of a bake CSV, or of one with only time_s and
    joint columns (a module file)."""
    text = path.read_text(encoding="utf-8").splitlines()
    header = text[0].split(",") if text else []
    if header[: len(ROOT_COLUMNS)] == ROOT_COLUMNS:
        try:
            table = read_bake_csv(path)
        except BakeCSVError as exc:
            raise LibraryError(str(exc)) from None
        times, joints, values = table.time, table.joint_names, table.q
    else:
        if not header or header[0] != "time_s":
            raise LibraryError(f"{path}, line 1: header must start with time_s")
        try:
            data = numbers(path, text, header)
        except BakeCSVError as exc:
            raise LibraryError(str(exc)) from None
        times, joints, values = data[:, 0], header[1:], data[:, 1:]
    if len(times) == 0:
        raise LibraryError(f"{path}: no frames")
    if np.any(np.diff(times) <= 0):
        raise LibraryError(f"{path}, line {int(np.argmax(np.diff(times) <= 0)) + 3}: frame times must increase")
    return list(joints), np.asarray(times, float), np.asarray(values, float)


def load_parts(path: Path) -> dict[str, Part]:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise LibraryError(f"{path}: parts file not found") from None
    except json.JSONDecodeError as exc:
        raise LibraryError(f"{path}, line {exc.lineno}: not JSON ({exc.msg})") from None
    if not isinstance(data, dict) or data.get("format") != PARTS_FORMAT:
        raise LibraryError(f"{path}: not a Robot Retarget parts file (format != {PARTS_FORMAT!r})")
    if data.get("version") != PARTS_VERSION:
        raise LibraryError(f"{path}: parts version {data.get('version')!r}, this reads {PARTS_VERSION}")
    refuse_unknown_fields(data, FILE_KEYS, LibraryError, f"{path}: the file")
    if not isinstance(data.get("parts"), dict) or not data["parts"]:
        raise LibraryError(f'{path}: no parts ("parts": {{"RIGHTARM": {{"joints": [...]}}, ...}})')
    parts = {}
    for name, spec in data["parts"].items():
        if not isinstance(spec, dict):
            raise LibraryError(f'{path}: part {name} must be an object ({{"joints": [...], ...}})')
        refuse_unknown_fields(spec, PART_KEYS, LibraryError, f"{path}: part {name}")
        joints = list(spec.get("joints") or [])
        if not joints:
            raise LibraryError(f"{path}: part {name} has no joints")
        positions = {}
        for key, value in (spec.get("positions") or {}).items():
            value = np.asarray(value, float).reshape(-1)
            if len(value) == 1:
                value = np.full(len(joints), value[0])
            if len(value) != len(joints):
                raise LibraryError(f"{path}: part {name} position {key!r} has {len(value)} values for "
                                   f"{len(joints)} joints")
            positions[key.lower()] = value
        fingers = [list(f) for f in spec.get("fingers") or []]
        for finger in fingers:
            unknown = [j for j in finger if j not in joints]
            if unknown:
                raise LibraryError(f"{path}: part {name}'s finger joint(s) {', '.join(unknown)} not among its joints")
        speed = float(spec.get("speed", 1.0))
        if not speed > 0:
            raise LibraryError(f"{path}: part {name}'s speed must be positive")
        parts[name.upper()] = Part(name.upper(), joints, positions, speed, fingers)
    return parts


FILE_KEYS = ("format", "version", "parts")
PART_KEYS = ("joints", "positions", "speed", "fingers")


