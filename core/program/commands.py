"""Modules for parts without taught data, made from positioning commands (issue 13).

A part's settings (parts.json) name positions (joint values) and a speed. A move goes from
where the part last was in the combined motion (else from its target) to a named position at
that speed. `parrot` opens and closes once per repeat; `goggle` sweeps right to left, N sweeps
ending left; a finger pattern N closes finger i where bit i is set (thumb 1, index 2, middle 4,
ring 8, little 16: 0 an open hand, 31 a fist).
"""
from __future__ import annotations

import numpy as np

from .library import Module, Part

COMMANDS = ("parrot", "goggle")  # besides moves to a part's named positions
MIN_MOVE_S = 0.1  # a command's module lasts at least this long (a hold at a position)
FINGERS = ("thumb", "index", "middle", "ring", "little")


def _position(part: Part, name) -> np.ndarray:
    name = getattr(name, "text", name)  # a quoted position name
    if isinstance(name, (int, float)):
        return np.full(len(part.joints), float(name))
    key = str(name).lower()
    if key not in part.positions:
        known = ", ".join(sorted(part.positions)) or "none"
        raise ValueError(f"part {part.name} has no position {name!r} (its positions: {known})")
    return part.positions[key]


def _path(part: Part, name: str, points: list[np.ndarray], speed: float | None = None) -> Module:
    """A module through joint values `points`, each leg at the speed (rad/s)."""
    speed = speed or part.speed
    times = [0.0]
    for a, b in zip(points, points[1:]):
        times.append(times[-1] + max(float(np.abs(b - a).max()) / speed, MIN_MOVE_S))
    if len(points) == 1:
        points, times = [points[0], points[0]], [0.0, MIN_MOVE_S]
    return Module(name, part.name, list(part.joints), np.array(times), np.array(points, float))


def _last(previous: Module | None, fallback: np.ndarray) -> np.ndarray:
    return previous.values[-1] if previous is not None and previous.values.shape[1] == len(fallback) else fallback


def command_module(part: Part, command: str, repeat: int, previous: Module | None) -> Module:
    """The module of `PART <do:=command>` repeated `repeat` times (folded into the module)."""
    if command == "parrot":
        closed, opened = _position(part, "close"), _position(part, "open")
        return _path(part, "parrot", [_last(previous, closed)] + [opened, closed] * repeat)
    if command == "goggle":
        right, left = _position(part, "right"), _position(part, "left")
        sweep = [left if (repeat - k) % 2 == 0 else right for k in range(repeat + 1)]  # N sweeps, ending left
        start = _last(previous, sweep[0])
        return _path(part, "goggle", ([start] if not np.allclose(start, sweep[0]) else []) + sweep)
    target = _position(part, command)
    return _path(part, command, [_last(previous, target), target])


def finger_module(part: Part, pattern: int, previous: Module | None) -> Module:
    if not 0 <= pattern <= 31:
        raise ValueError(f"finger pattern {pattern}: use 0-31 (bit i closes finger i: thumb 1, index 2, middle 4, "
                         "ring 8, little 16; 0 an open hand, 31 a fist)")
    if len(part.fingers) != 5:
        raise ValueError(f"part {part.name} has no five fingers in its settings ('fingers': thumb to little)")
    opened = _position(part, "open")
    closed = _position(part, "close" if "close" in part.positions else "closed")
    target = opened.copy()
    for bit, finger in enumerate(part.fingers):
        if pattern >> bit & 1:
            for joint in finger:
                target[part.joints.index(joint)] = closed[part.joints.index(joint)]
    return _path(part, f"fingers {pattern}", [_last(previous, target), target])


def set_module(part: Part, factors: dict, previous: Module | None) -> Module:
    """`set PART <start:=..> <end:=..> <speed:=..>`: a move between positions (names or values)."""
    unknown = sorted(set(factors) - {"start", "end", "speed"})
    if unknown:
        raise ValueError(f"set {part.name}: unknown factor(s) {', '.join(unknown)} (start, end, speed)")
    end = _position(part, factors["end"]) if "end" in factors else None
    if end is None:
        raise ValueError(f"set {part.name}: needs <end:=...>")
    start = _position(part, factors["start"]) if "start" in factors else _last(previous, end)
    speed = factors.get("speed")
    if speed is not None and not float(speed) > 0:
        raise ValueError(f"set {part.name}: speed must be positive")
    return _path(part, "set", [start, end], None if speed is None else float(speed))
