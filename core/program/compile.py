"""Compile a motion program into a timeline of modules per part (issue 13).

Top-level instructions run in sequence, each when the previous one has finished. A combined
motion (@NAME) places its members by their timings (a `base` motion's modules first, which an
`item` for the same part replaces); a pile-up (@@NAME) plays its motions back to back. Parts
without taught data get modules made from commands (core.program.commands).
"""
from __future__ import annotations

from dataclasses import dataclass


from .commands import COMMANDS, command_module, finger_module, set_module
from .timeline import Item, Timeline
from .timing import check_timing
from .language import Definition, Member, Play, Program, ProgramError, Quoted
from .library import Library, LibraryError, Module


@dataclass
class _Placed:
    items: list[Item]
    voice: list[tuple[str, float]]

    @property
    def duration(self) -> float:
        ends = [i.end_s for i in self.items] + [start for _, start in self.voice]
        return max(ends, default=0.0)

    def shifted(self, by: float) -> "_Placed":
        return _Placed([Item(i.part, i.module, i.from_motion, i.start_s + by, i.repeat) for i in self.items],
                       [(text, start + by) for text, start in self.voice])


def compile_program(program: Program, library: Library, velocity: dict[str, float] | None = None) -> Timeline:
    """The program's timeline; velocity: joint -> limit (rad/s) for the timing check (none: no check)."""
    compiler = _Compiler(program, library)
    at, items, voice = 0.0, [], []
    for play in program.instructions:
        placed = compiler.play(play, ())
        items += placed.shifted(at).items
        voice += placed.shifted(at).voice
        at += placed.duration
    items.sort(key=lambda i: (i.start_s, i.part))
    timeline = Timeline(items, sorted(voice, key=lambda v: v[1]), at)
    if velocity is not None:
        timeline.violations = check_timing(timeline, velocity)
    return timeline


class _Compiler:
    def __init__(self, program: Program, library: Library):
        self.program, self.library = program, library
        self.definitions = {name.lower(): d for name, d in program.definitions.items()}

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
        return self.motion(play.name, play.line, play.column, stack)

    def motion(self, name: str, line: int, column: int, stack: tuple[str, ...]) -> _Placed:
        if name.startswith("@"):
            definition = self.definitions.get(name.lower())
            if definition is None:
                raise self.error(line, column, f"no definition of {name} ('joint motion to {name}' or "
                                               f"'pileup motion to {name}')")
            wanted = "pileup" if name.startswith("@@") else "combined"
            if definition.kind != wanted:
                kinds = {"pileup": "a pile-up (@@)", "combined": "a joint motion (@)"}
                raise self.error(line, column, f"{name} names {kinds[wanted]} but {definition.name} "
                                               f"(line {definition.line}) is {kinds[definition.kind]}")
            if name.lower() in stack:
                raise self.error(line, column, f"{name} plays itself (through {' -> '.join(stack)})")
            inner = stack + (name.lower(),)
            return self.pileup(definition, inner) if wanted == "pileup" else self.combined(definition, inner)
        if not self.library.has_motion(name):
            raise self.error(line, column, f"no basic motion {name!r} in the library {self.library.source}")
        modules = self._library(lambda: self.library.motion(name), line, column)
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
                items += self.motion(member.act, member.line, member.column, stack).items
                continue
            if member.kind == "motion":
                start = self.start(member, items)
                sub = self.motion(member.act, member.line, member.column, stack).shifted(start)
                items += sub.items
                voice += sub.voice
                continue
            if member.part == "VOICE":
                if not isinstance(member.act, Quoted):
                    raise self.error(member.line, member.column, 'VOICE needs a quoted text, <do:="...">')
                voice.append((member.act.text, self.start(member, items)))
                continue
            if member.kind == "item" and member.act == "FAULT":
                items = [i for i in items if i.part != member.part]
                continue
            if member.kind == "item":  # replaces the base motion's module of that part
                items = [i for i in items if not (i.part == member.part and i.from_base)]
            module, origin = self.module(member, items)
            repeat = 1 if member.kind in ("command", "set") or isinstance(member.act, int) else member.timing.repeat
            items.append(Item(member.part, module, origin, self.start(member, items), repeat))  # commands fold it
        return _Placed(items, voice)

    def module(self, member: Member, items: list[Item]) -> tuple[Module, str]:
        """The module a member places, and the motion it comes from."""
        part = self._library(lambda: self.library.part(member.part), member.line, member.column)
        previous = next((i.module for i in reversed(items) if i.part == member.part), None)
        act = member.act
        try:
            if member.kind == "set":
                return set_module(part, act, previous), "set"
            if isinstance(act, int):
                return finger_module(part, act, previous), str(act)
            if isinstance(act, Quoted):  # a motion lends its module for this part
                return self.library.module(act.text, member.part), act.text
            if member.kind == "item" and self.library.has_motion(act):
                return self.library.module(act, member.part), act
            if member.kind == "item" and str(act).lower() not in part.positions and str(act).lower() not in COMMANDS:
                raise LibraryError(f"no module {act!r} in the library {self.library.source}, and part {part.name} "
                                   f"has no position {act!r}")
            return command_module(part, str(act).lower(), member.timing.repeat, previous), str(act).lower()
        except (LibraryError, ValueError) as exc:
            raise self.error(member.line, member.column, str(exc)) from None

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
