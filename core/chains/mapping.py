"""Chain mappings and retarget settings, saved as JSON presets (data only)."""
from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path

from ..motion.fileio import read_json, refuse_unknown_fields, write_text_atomic

PRESET_FORMAT = "robot_retarget.mapping"
PRESET_VERSION = 1
ROLES = ("spine", "leg", "foot", "arm", "hand", "head", "limb")
SETTING_CHOICES = {
    "objective": ("l2", "l1"),
    "root_mode": ("follow", "in_place", "fixed"),
    "ground": ("clip", "frame", "none"),
    "filter": ("butterworth", "moving_average", "none"),
}
# The numbers a preset may hold: the sidebar's bounds (props.py), so a preset bakes on the command
# line as it does once loaded into the sidebar (which clamps to them). Outside them a bake went on
# without a word: a negative tip weight put NaN into the solve's weights, a negative smoothness or
# `points` threw limbs tens of degrees off. (low, high); None: unbounded.
CHAIN_RANGES = {"points": (0, 64), "tip_weight": (0.0, None), "weight": (0.0, None)}
SETTING_RANGES = {"iterations": (1, 100), "smoothness": (0.0, None), "rest_prior": (0.0, None),
                  "cutoff_hz": (0.1, 100.0), "window": (1, 99), "collision_margin": (0.0, 0.2)}


class MappingError(ValueError):
    """A preset or mapping that cannot be used; the message names file and field."""


@dataclass
class ChainMapping:
    """One source chain paired with one robot chain.

    A chain runs from a base (the limb's first joint) to one tip, or to several
    tips for a branched chain such as the spine (pelvis to both shoulders).
    source_tip_tail appends the tip bone's tail (toes, hands, head ends);
    robot_tip_offset appends a point fixed in the tip link (e.g. the toe of a
    foot link that has no toe link). Landmarks name matching joints inside
    the chain (knee and ankle, elbow): robot reference points are placed so
    that these joints correspond, whatever the limb proportions. robot_start
    names the link where the robot limb's shape begins when its first joints
    sit on short offsets (a hip or shoulder built from three stacked joints).
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
    source_landmarks: list[str] | None = None
    robot_landmarks: list[str] | None = None
    robot_start: str | None = None
    enabled: bool = True


@dataclass
class RetargetSettings:
    """Solver, root and filter options; stored with the preset so batch runs match the UI."""

    objective: str = "l2"  # "l2" least squares or "l1" robust
    iterations: int = 8
    smoothness: float = 0.02  # pull toward the previous frame where the chain is redundant
    rest_prior: float = 0.01  # weak pull toward the zero pose: one answer for every frame
    root_mode: str = "follow"  # "follow", "in_place", or "fixed" (the robot's base never moves)
    ground: str = "clip"  # "clip": lowest foot of the clip on z=0; "frame": every frame; "none"
    filter: str = "butterworth"  # "butterworth", "moving_average" or "none"
    cutoff_hz: float = 7.0
    window: int = 5
    avoid_self_collision: bool = True  # keep checked link pairs apart in the chain and planted-leg solves
    collision_margin: float = 0.01  # metres between checked links' collision proxies


@dataclass
class Mapping:
    """Chains, the body's roots (source pelvis bone, robot link the body is solved from) and
    settings. notes: what auto-map guessed rather than saw, for the report and the sidebar
    (not saved in presets)."""

    chains: list[ChainMapping] = field(default_factory=list)
    source_root: str = ""
    robot_root: str = ""
    settings: RetargetSettings = field(default_factory=RetargetSettings)
    notes: list[str] = field(default_factory=list, compare=False)
    allow_collision: list[list[str]] = field(default_factory=list)  # [link, link] pairs that may touch
    check_collision: list[list[str]] = field(default_factory=list)  # pairs checked whatever the robot's matrix says

    def enabled_chains(self) -> list[ChainMapping]:
        return [c for c in self.chains if c.enabled]

    def to_dict(self) -> dict:
        data = asdict(self)
        data.pop("notes")
        return {"format": PRESET_FORMAT, "version": PRESET_VERSION, **data}

    @classmethod
    def from_dict(cls, data: dict, origin: str = "<mapping>") -> "Mapping":
        """A preset's mapping; a bake report's `mapping` reads as one too (its figures ignored)."""
        if not isinstance(data, dict) or data.get("format") != PRESET_FORMAT:
            raise MappingError(f"{origin}: not a Robot Retarget mapping preset (format != {PRESET_FORMAT!r})")
        version = data.get("version", 0)
        if not isinstance(version, int) or version > PRESET_VERSION:
            raise MappingError(f"{origin}: preset version {version!r} is not one this add-on reads")
        refuse_unknown_fields(data, {"format", "version", "chains", "source_root", "robot_root", "settings",
                                     "allow_collision", "check_collision"} | set(REPORT_ONLY), MappingError, origin)
        if not isinstance(data.get("chains", []), list):
            raise MappingError(f"{origin}: chains: expected a list of chains")
        chains = [_build(ChainMapping, c, f"{origin}: chains[{i}]") for i, c in enumerate(data.get("chains", []))]
        settings = _build(RetargetSettings, data.get("settings", {}), f"{origin}: settings")
        for key in ("source_root", "robot_root"):
            _check_value(data.get(key, ""), "str", f"{origin}: {key}")
        pairs = {key: _link_pairs(data.get(key, []), f"{origin}: {key}") for key in ("allow_collision", "check_collision")}
        mapping = cls(chains, data.get("source_root", ""), data.get("robot_root", ""), settings, **pairs)
        for i, c in enumerate(chains):
            if c.role not in ROLES:
                raise MappingError(f"{origin}: chains[{i}] ({c.name!r}).role: unknown role {c.role!r} (one of {', '.join(ROLES)})")
        for key, allowed in SETTING_CHOICES.items():
            if getattr(settings, key) not in allowed:
                raise MappingError(f"{origin}: settings.{key}: {getattr(settings, key)!r} is not one of "
                                   f"{', '.join(allowed)}")
        _check_ranges(settings, SETTING_RANGES, f"{origin}: settings")
        for i, c in enumerate(chains):
            where = f"{origin}: chains[{i}] ({c.name!r})"
            _check_ranges(c, CHAIN_RANGES, where)
            if c.robot_tip_offset is not None and len(c.robot_tip_offset) != 3:
                raise MappingError(f"{where}.robot_tip_offset: expected 3 numbers (x, y, z in the tip link), "
                                   f"got {len(c.robot_tip_offset)}")
            for key in ("source_fractions", "robot_fractions"):
                values = getattr(c, key) or []
                if not all(0.0 <= v <= 1.0 for v in values):
                    raise MappingError(f"{where}.{key}: fractions of the chain's length lie in 0-1, got {values}")
        return mapping

    def check_names(self, origin: str, bones: list[str] | None = None, source: str = "",
                    links: list[str] | None = None, robot: str = "") -> None:
        """MappingError naming the preset (`origin`), the chain and the bone or link that the
        clip (`bones`, named `source`) or the robot (`links`, named `robot`) does not have: a
        preset written for another skeleton or robot fails before the bake, saying which file."""
        roots = [("source_root", self.source_root, bones, f"source {source!r} has no bone"),
                 ("robot_root", self.robot_root, links, f"robot {robot!r} has no link")]
        for key, name, names, lacks in roots:  # empty: auto-map's choice; unknown was ignored silently
            if name and names is not None and name not in names:
                raise MappingError(f"{origin}: {key}: {lacks} {name!r}")
        for chain in self.enabled_chains():
            if bones is not None:
                for bone in [chain.source_base, *chain.source_tips, *(chain.source_landmarks or [])]:
                    if bone not in bones:
                        raise MappingError(f"{origin}: chain {chain.name!r}: source {source!r} has no bone {bone!r}")
            if links is not None:
                for link in [chain.robot_base, *chain.robot_tips, *(chain.robot_landmarks or []),
                             *([chain.robot_start] if chain.robot_start else [])]:
                    if link not in links:
                        raise MappingError(f"{origin}: chain {chain.name!r}: robot {robot!r} has no link {link!r}")
        for key in ("allow_collision", "check_collision"):
            for pair in getattr(self, key) if links is not None else []:
                for link in pair:
                    if link not in links:
                        raise MappingError(f"{origin}: {key} {pair}: robot {robot!r} has no link {link!r}")

    def with_settings(self, **changes) -> "Mapping":
        """This mapping with some settings changed (a command's flags over its preset's); the same
        mapping when nothing changes."""
        if not changes:
            return self
        return replace(self, settings=replace(self.settings, **changes))

    def save(self, path, overwrite: bool = False) -> Path:
        return write_text_atomic(path, json.dumps(self.to_dict(), indent=2) + "\n", overwrite=overwrite)

    @classmethod
    def load(cls, path) -> "Mapping":
        return cls.from_dict(read_json(path, MappingError, "mapping preset"), str(path))


REPORT_ONLY = {"automap_confidence", "reasons", "notes"}  # what a bake report's mapping adds to its preset


def _check_ranges(values, ranges: dict[str, tuple], where: str) -> None:
    """MappingError naming the field whose number lies outside its (low, high) range."""
    for key, (low, high) in ranges.items():
        value = getattr(values, key)
        if value < low or (high is not None and value > high):
            span = f"at least {low}" if high is None else f"{low} to {high}"
            raise MappingError(f"{where}.{key}: {value!r} is outside its range ({span})")


def _link_pairs(value, where: str) -> list[list[str]]:
    """[[link, link], ...]: robot link pairs of the collision overrides."""
    if not isinstance(value, list) or not all(isinstance(p, list) and len(p) == 2 and all(isinstance(n, str) for n in p)
                                              for p in value):
        raise MappingError(f"{where}: expected a list of [link, link] pairs")
    return [list(p) for p in value]


def _build(kind, data, origin: str):
    """Instantiate a dataclass from JSON data, checking names and value types."""
    if not isinstance(data, dict):
        raise MappingError(f"{origin}: expected an object")
    known = {f.name: f for f in fields(kind)}
    refuse_unknown_fields(data, known, MappingError, origin)
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
        if ann == "int" and value != int(value):
            raise MappingError(f"{where}: expected a whole number")
        return int(value) if ann == "int" else float(value)
    if ann.startswith("str"):  # "str" or "str | None" (None handled above)
        if not isinstance(value, str):
            raise MappingError(f"{where}: expected text")
        return value
    raise MappingError(f"{where}: unsupported value")
