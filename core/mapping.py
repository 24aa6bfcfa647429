"""Chain mappings and retarget settings, saved as JSON presets (data only)."""
from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

from .fileio import write_text_atomic

PRESET_FORMAT = "robot_retarget.mapping"
PRESET_VERSION = 1
ROLES = ("spine", "leg", "foot", "arm", "hand", "head", "limb")


class MappingError(ValueError):
    """A preset or mapping that cannot be used; the message names file and field."""


@dataclass
class ChainMapping:
    """One source chain paired with one robot chain.

    A chain runs from a base (the limb's first joint) to one tip, or to several
    tips for a branched chain such as the spine (pelvis to both shoulders).
    source_tip_tail appends the tip bone's tail (toes, hands, head ends);
    robot_tip_offset appends a point fixed in the tip link (e.g. the toe of a
    foot link that has no toe link).
    """

    name: str
    source_base: str
    source_tips: list[str]
    robot_base: str
    robot_tips: list[str]
    role: str = "limb"
    side: str = ""
    source_tip_tail: bool = False
    robot_tip_offset: list[float] | None = None
    points: int = 0
    tip_weight: float = 3.0
    weight: float = 1.0
    source_fractions: list[float] | None = None
    robot_fractions: list[float] | None = None
    enabled: bool = True


@dataclass
class RetargetSettings:
    """Solver, root and filter options; stored with the preset so batch runs match the UI."""

    objective: str = "l2"  # "l2" least squares or "l1" robust
    iterations: int = 12
    smoothness: float = 0.02  # pull toward the previous frame where the chain is redundant
    root_mode: str = "follow"  # "follow" or "in_place"
    ground: str = "clip"  # "clip": lowest foot of the clip on z=0; "frame": every frame; "none"
    filter: str = "butterworth"  # "butterworth", "moving_average" or "none"
    cutoff_hz: float = 7.0
    window: int = 5


@dataclass
class Mapping:
    chains: list[ChainMapping] = field(default_factory=list)
    source_root: str = ""
    robot_root: str = ""
    settings: RetargetSettings = field(default_factory=RetargetSettings)

    def enabled_chains(self) -> list[ChainMapping]:
        return [c for c in self.chains if c.enabled]

    def to_dict(self) -> dict:
        return {"format": PRESET_FORMAT, "version": PRESET_VERSION, **asdict(self)}

    @classmethod
    def from_dict(cls, data: dict, origin: str = "<mapping>") -> "Mapping":
        if not isinstance(data, dict) or data.get("format") != PRESET_FORMAT:
            raise MappingError(f"{origin}: not a Robot Retarget mapping preset (format != {PRESET_FORMAT!r})")
        if data.get("version", 0) > PRESET_VERSION:
            raise MappingError(f"{origin}: preset version {data['version']} is newer than this add-on")
        chains = [_build(ChainMapping, c, f"{origin}: chains[{i}]") for i, c in enumerate(data.get("chains", []))]
        settings = _build(RetargetSettings, data.get("settings", {}), f"{origin}: settings")
        mapping = cls(chains, str(data.get("source_root", "")), str(data.get("robot_root", "")), settings)
        for c in chains:
            if c.role not in ROLES:
                raise MappingError(f"{origin}: chain {c.name!r} has unknown role {c.role!r}")
        return mapping

    def save(self, path, overwrite: bool = False) -> Path:
        return write_text_atomic(path, json.dumps(self.to_dict(), indent=2) + "\n", overwrite=overwrite)

    @classmethod
    def load(cls, path) -> "Mapping":
        path = Path(path)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise MappingError(f"{path}: mapping preset not found") from None
        except json.JSONDecodeError as exc:
            raise MappingError(f"{path}: line {exc.lineno}: invalid JSON ({exc.msg})") from None
        return cls.from_dict(data, str(path))


def _build(kind, data, origin: str):
    """Instantiate a dataclass from JSON data, checking names and value types."""
    if not isinstance(data, dict):
        raise MappingError(f"{origin}: expected an object")
    known = {f.name: f for f in fields(kind)}
    unknown = set(data) - set(known)
    if unknown:
        raise MappingError(f"{origin}: unknown field(s) {sorted(unknown)}")
    values = {}
    for name, value in data.items():
        values[name] = _check_value(value, known[name].type, f"{origin}.{name}")
    try:
        return kind(**values)
    except TypeError as exc:
        raise MappingError(f"{origin}: {exc}") from None


def _check_value(value, annotation: str, where: str):
    ann = str(annotation)
    if value is None and "None" in ann:
        return None
    if ann.startswith("list[str]"):
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise MappingError(f"{where}: expected a list of names")
        return list(value)
    if ann.startswith("list[float]"):
        if not isinstance(value, list) or not all(isinstance(v, (int, float)) and math.isfinite(v) for v in value):
            raise MappingError(f"{where}: expected a list of numbers")
        return [float(v) for v in value]
    if ann == "bool":
        if not isinstance(value, bool):
            raise MappingError(f"{where}: expected true or false")
        return value
    if ann in ("int", "float"):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise MappingError(f"{where}: expected a number")
        return int(value) if ann == "int" else float(value)
    if ann == "str":
        if not isinstance(value, str):
            raise MappingError(f"{where}: expected text")
        return value
    raise MappingError(f"{where}: unsupported value")
