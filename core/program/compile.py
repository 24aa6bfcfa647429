"""Compile a motion program into a timeline of modules per part (issue 13).

Top-level instructions run in sequence, each when the previous one has finished. A combined
motion (@NAME) places its members by their timings (a `base` motion's modules first, which an
`item` for the same part replaces); a pile-up (@@NAME) plays its motions back to back. Parts
without taught data get modules made from commands (core.program.commands).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .commands import COMMANDS, command_module, finger_module, set_module
from .timeline import Item, Timeline
from .timing import check_timing
from .language import Definition, Member, Play, Program, ProgramError, Quoted
from .library import Library, LibraryError, Module

LIMIT_TOLERANCE = 1e-6  # rad or m: a module's values as a CSV rounds them may sit this far past a limit


@dataclass
class _Placed:
    items: list[Item]
    voice: list[tuple[str, float]]

    @property
    def duration(self) -> float:
        ends = [i.end_s for i in self.items] + [start for _, start in self.voice]
        return max(ends, default=0.0)

    def shifted(self, by: float) -> "_Placed":
        return _Placed([Item(i.part, i.module, i.from_motion, i.start_s + by, i.repeat, i.from_base)
                        for i in self.items], [(text, start + by) for text, start in self.voice])

    def as_base(self) -> "_Placed":
        """The same placements marked as a base: an `item` for one of their parts replaces it."""
        return _Placed([Item(i.part, i.module, i.from_motion, i.start_s, i.repeat, True) for i in self.items],
                       self.voice)


def compile_program(program: Program, library: Library, velocity: dict[str, float] | None = None,
                    limits: dict[str, tuple[float, float]] | None = None) -> Timeline:
    """The program's timeline; velocity: joint -> limit (rad/s) for the timing check (none: no check);
    limits: joint -> (lower, upper), a module driving a joint outside them is an error at its line."""
    compiler = _Compiler(program, library, limits)
    compiler.check_names()
    at, items, voice = 0.0, [], []
    for play in program.instructions:
        placed = compiler.play(play, ())
        items += placed.shifted(at).items
        voice += placed.shifted(at).voice
        at += placed.duration
    items.sort(key=lambda i: (round(i.start_s, 9), i.part))
    timeline = Timeline(items, sorted(voice, key=lambda v: v[1]), at)
    if velocity is not None:
        timeline.violations = check_timing(timeline, velocity)
    return timeline


class _Compiler:
    def __init__(self, program: Program, library: Library, limits: dict[str, tuple[float, float]] | None = None):
        self.program, self.library, self.limits = program, library, limits or {}
        self.definitions = {name.lstrip("@").lower(): d for name, d in program.definitions.items()}

    def check_names(self) -> None:
        """Every @ and @@ name any definition or line uses must be defined, with its kind."""
        def plays(items):
            for play in items:
                if play.name is None:
                    yield from plays(play.body)
                else:
                    yield play.name, *play.value_at
        used = list(plays(self.program.instructions))
        for definition in self.program.definitions.values():
            if definition.kind == "pileup":
                used += list(plays(definition.members))
            else:
                used += [(m.act, *m.value_at) for m in definition.members
                         if m.kind in ("base", "motion") and isinstance(m.act, str)]
        for name, line, column in used:
            if name.startswith("@"):
                self.definition(name, line, column)

    def error(self, line: int, column: int, message: str) -> ProgramError:
        return ProgramError(line, column, message, self.program.source)

    def play(self, play: Play, stack: tuple[str, ...]) -> _Placed:
        if play.name is None:  # repeat while N ... end
            placed, at = _Placed([], []), 0.0
            for _ in range(play.repeat):
                for inner in play.body:
                    part = self.play(inner, stack).shifted(at)
                    placed.items += part.items
                    placed.voice += part.voice
                    at = max(at, part.duration)
            return placed
        return self.motion(play.name, *play.value_at, stack)

    def definition(self, name: str, line: int, column: int) -> Definition:
        definition = self.definitions.get(name.lstrip("@").lower())
        wanted = "pileup" if name.startswith("@@") else "combined"
        if definition is None:
            kind = "pileup motion to" if wanted == "pileup" else "joint motion to"
            raise self.error(line, column, f"no definition of {name} (expected '{kind} {name}')")
        if definition.kind != wanted:
            kinds = {"pileup": "a pile-up (@@)", "combined": "a joint motion (@)"}
            raise self.error(line, column, f"{name} names {kinds[wanted]} but {definition.name} "
                                           f"(line {definition.line}) is {kinds[definition.kind]}")
        return definition

    def motion(self, name: str, line: int, column: int, stack: tuple[str, ...]) -> _Placed:
        if name.startswith("@"):
            definition = self.definition(name, line, column)
            wanted = definition.kind
            if name.lower() in stack:
                raise self.error(line, column, f"{name} plays itself (through {' -> '.join(stack)})")
            inner = stack + (name.lower(),)
            return self.pileup(definition, inner) if wanted == "pileup" else self.combined(definition, inner)
        if not self.library.has_motion(name):
            raise self.error(line, column, f"no basic motion {name!r} in the library {self.library.source}")
        modules = self._library(lambda: self.library.motion(name), line, column)
        for module in modules.values():
            self._within_limits(module, line, column)
        return _Placed([Item(part, module, name, 0.0, 1, True) for part, module in modules.items()], [])

    def pileup(self, definition: Definition, stack) -> _Placed:
        placed, at = _Placed([], []), 0.0
        for play in definition.members:
            part = self.play(play, stack)
            shifted = part.shifted(at)
            placed.items += shifted.items
            placed.voice += shifted.voice
            at += part.duration
        return placed

    def combined(self, definition: Definition, stack) -> _Placed:
        items: list[Item] = []
        voice: list[tuple[str, float]] = []
        for member in definition.members:
            if member.kind == "base":
                base = self.motion(member.act, *member.value_at, stack).as_base()
                items += base.items
                voice += base.voice
                continue
            if member.kind == "motion":  # played `till` times back to back
                start = self.start(member, items)
                sub = self.motion(member.act, *member.value_at, stack)
                for k in range(member.timing.repeat):
                    copy = sub.shifted(start + k * sub.duration)
                    items += copy.items
                    voice += copy.voice
                continue
            if member.part == "VOICE":
                if not isinstance(member.act, Quoted):
                    raise self.error(*member.value_at, 'VOICE needs a quoted text, <do:="...">')
                voice.append((member.act.text, self.start(member, items)))
                continue
            self._library(lambda: self.library.part(member.part), *member.part_at)  # a known part
            if member.kind == "item" and str(member.act).upper() == "FAULT":
                items = [i for i in items if i.part != member.part]
                continue
            start = self.start(member, items)  # from what is placed so far, the base included
            module, origin, folded = self.module(member, items)
            self._within_limits(module, *member.value_at)
            if member.kind == "item":  # replaces the base motion's module of that part
                items = [i for i in items if not (i.part == member.part and i.from_base)]
            item = Item(member.part, module, origin, start, 1 if folded else member.timing.repeat)
            self._refuse_overlap(member, item, items)
            items.append(item)
        return _Placed(items, voice)

    def _refuse_overlap(self, member: Member, item: Item, items: list[Item]) -> None:
        """Two modules of one part at once had their keys interleaved (core.program.timing.part_keys):
        `WAIST <do:=turn>` over a base's WAIST jumped between both at every key, said only as timing
        violations."""
        clash = next((i for i in items if i.part == item.part and i.start_s < item.end_s - 1e-9
                      and item.start_s < i.end_s - 1e-9), None)
        if clash is not None:
            fix = f"; `item {item.part} <do:=...>` replaces the base motion's" if clash.from_base else ""
            raise self.error(member.line, member.column,
                             f"{item.part} already plays {clash.module.name} at {clash.start_s:.2f}-{clash.end_s:.2f} s "
                             f"(this one: {item.start_s:.2f}-{item.end_s:.2f} s): one part plays one module at a "
                             f"time{fix}")

    def module(self, member: Member, items: list[Item]) -> tuple[Module, str, bool]:
        """The module a member places, the motion it comes from, and whether its repeats are
        already in it (a command's module holds them all)."""
        part = self._library(lambda: self.library.part(member.part), *member.part_at)
        previous = next((i.module for i in reversed(items) if i.part == member.part), None)
        act = member.act
        try:
            if member.kind == "set":
                return set_module(part, act, previous), "set", True
            if isinstance(act, int):
                return finger_module(part, act, previous), str(act), True
            if isinstance(act, Quoted):  # a motion lends its module for this part
                return self.library.module(act.text, member.part), act.text, False
            if member.kind == "item" and self.library.has_motion(act):
                return self.library.module(act, member.part), act, False
            if member.kind == "item" and str(act).lower() not in part.positions and str(act).lower() not in COMMANDS:
                raise LibraryError(f"no module {act!r} in the library {self.library.source}, and part {part.name} "
                                   f"has no position {act!r}")
            return command_module(part, str(act).lower(), member.timing.repeat, previous), str(act).lower(), True
        except (LibraryError, ValueError) as exc:
            raise self.error(*member.value_at, str(exc)) from None

    def _within_limits(self, module: Module, line: int, column: int) -> None:
        """A set WAIST <end:=9>, or a parts.json position past a joint's range, composed a motion holding
        the G1's waist at 9 rad (limits +-2.618) with "0 timing violation(s)" said."""
        for j, joint in enumerate(module.joints):
            lower, upper = self.limits.get(joint, (-np.inf, np.inf))
            values = module.values[:, j]
            outside = np.flatnonzero((values < lower - LIMIT_TOLERANCE) | (values > upper + LIMIT_TOLERANCE))
            if outside.size:
                k = outside[0]
                raise self.error(line, column, f"{module.name} drives {joint} to {values[k]:.4g} at "
                                               f"{module.times[k]:.2f} s of the module, outside its limits "
                                               f"[{lower:.4g}, {upper:.4g}]")

    def start(self, member: Member, items: list[Item]) -> float:
        timing = member.timing
        if timing.after_part is not None:
            placed = next((i for i in reversed(items) if i.part == timing.after_part), None)
            if placed is None:
                raise self.error(timing.line, timing.column, f"no module of {timing.after_part} placed before this "
                                                             f"line to start from")
            if timing.after_frame is None:
                return placed.end_s
            if not 0 <= timing.after_frame < len(placed.module.times):
                raise self.error(timing.line, timing.column,
                                 f"{timing.after_part}'s module {placed.module.name} has frames "
                                 f"0-{len(placed.module.times) - 1}, not {timing.after_frame}")
            return placed.start_s + float(placed.module.times[timing.after_frame])
        return timing.timer or 0.0

    def _library(self, get, line: int, column: int):
        try:
            return get()
        except LibraryError as exc:
            raise self.error(line, column, str(exc)) from None
