"""A compiled motion program: modules on a timeline per part, spoken lines, timing violations."""
from __future__ import annotations

from dataclasses import dataclass, field

from .library import Module


@dataclass
class Item:
    """A module on the timeline: it starts at start_s and plays `repeat` times."""

    part: str
    module: Module
    from_motion: str
    start_s: float
    repeat: int = 1
    from_base: bool = False

    @property
    def end_s(self) -> float:
        return self.start_s + self.repeat * self.module.duration


@dataclass
class Violation:
    part: str
    joint: str
    time_s: float
    speed: float | None  # rad/s (or m/s) needed; None for a jump in no time (modules that do not join)
    limit: float


@dataclass
class Timeline:
    items: list[Item]
    voice: list[tuple[str, float]]
    duration_s: float
    violations: list[Violation] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"format": "robot_retarget.timeline", "version": 1, "duration_s": self.duration_s,
                "items": [{"part": i.part, "module": i.module.name, "from_motion": i.from_motion,
                           "start_s": i.start_s, "end_s": i.end_s, "repeat": i.repeat} for i in self.items],
                "voice": [{"text": text, "start_s": start} for text, start in self.voice],
                "violations": [{"part": v.part, "joint": v.joint, "time_s": v.time_s, "speed": v.speed,
                                "limit": v.limit} for v in self.violations]}


