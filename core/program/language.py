"""The motion program language (issue 13): tokens and a parser to a small syntax tree.

    program    := { instruction } { definition }
    instruction:= 'motion <do:=' NAME '>'
    definition := 'joint motion to @'ID { member } 'end'
                | 'pileup motion to @@'ID { 'motion <do:=' NAME '>' | repeat } 'end'
    repeat     := 'repeat while' INT { 'motion <do:=' NAME '>' | repeat } 'end'
    member     := 'base <do:=' NAME '>' | 'item' PART '<do:=' ACT '>' { timing }
                | 'motion <do:=' NAME '>' { timing } | PART '<do:=' COMMAND '>' { timing }
                | 'set' PART { '<' FACTOR ':=' VALUE '>' }
    timing     := '<from:=timer' INT '>' | '<from:=item' PART '[' INT | 'back' ']>' | '<till:=repeat' INT '>'

Lines may start with a line number; "( ... )" is a comment; keywords are case-insensitive.
Every error names the line and column and what was expected.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field


class ProgramError(ValueError):
    """A program that cannot be read or compiled; the message starts with 'line L, column C'."""

    def __init__(self, line: int, column: int, message: str, source: str = "<program>"):
        super().__init__(f"{source}: line {line}, column {column}: {message}")
        self.line, self.column = line, column


@dataclass
class Token:
    kind: str  # word, name (quoted), int, number, symbol
    text: str
    line: int
    column: int


@dataclass
class Timing:
    timer: float | None = None  # seconds after the combined motion starts
    after_part: str | None = None  # start when this part's module reaches a frame ...
    after_frame: int | None = None  # ... this one (0-based), or its end when None
    repeat: int = 1
    line: int = 0
    column: int = 0


@dataclass
class Member:
    """One line of a combined motion: kind is base, item, motion, command or set."""

    kind: str
    part: str | None
    act: object  # a name (str), an int, a quoted text (Quoted), a dict of set factors
    timing: Timing
    line: int
    column: int
    value_at: tuple[int, int] = (0, 0)  # line, column of the act (<do:=VALUE>): where errors about it point
    part_at: tuple[int, int] = (0, 0)   # ... of the part's name


@dataclass
class Quoted:
    text: str


@dataclass
class Play:
    """`motion <do:=NAME>` in a program or a pile-up; or `repeat while N ... end`."""

    name: str | None
    line: int
    column: int
    repeat: int = 1
    body: list["Play"] = field(default_factory=list)
    value_at: tuple[int, int] = (0, 0)  # line, column of the name (<do:=NAME>): where errors about it point


@dataclass
class Definition:
    kind: str  # combined (@) or pileup (@@)
    name: str  # with its @ or @@
    members: list  # Member for combined, Play for pile-up
    line: int
    column: int


@dataclass
class Program:
    instructions: list[Play]
    definitions: dict[str, Definition]
    source: str = "<program>"


_TOKEN = re.compile(r'\s+|\((?:[^()]*)\)|"(?P<name>[^"\n]*)"|(?P<number>-?\d+\.\d*|-?\d*\.\d+)|(?P<int>-?\d+)'
                    r'|(?P<word>[@]{0,2}[A-Za-z_][A-Za-z0-9_.]*)|(?P<symbol>:=|[<>\[\]:=,])')


def tokens(text: str, source: str = "<program>") -> list[Token]:
    out: list[Token] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = re.sub(r"^\s*\d+(?=\s|$)", lambda m: " " * len(m.group(0)), raw)  # an optional line number
        at = 0
        while at < len(line):
            match = _TOKEN.match(line, at)
            if match is None:
                raise ProgramError(number, at + 1, f"unexpected character {line[at]!r}", source)
            kind = match.lastgroup
            if kind is not None:
                out.append(Token(kind, match.group(kind), number, at + 1))
            at = match.end()
    return out


class _Reader:
    def __init__(self, items: list[Token], source: str):
        self.items, self.at, self.source = items, 0, source

    def peek(self, ahead: int = 0) -> Token | None:
        i = self.at + ahead
        return self.items[i] if i < len(self.items) else None

    def error(self, expected: str, token: Token | None = None) -> ProgramError:
        token = token or self.peek()
        if token is None:
            last = self.items[-1] if self.items else Token("", "", 1, 1)
            return ProgramError(last.line, last.column + len(last.text), f"expected {expected}, found the end",
                                self.source)
        return ProgramError(token.line, token.column, f"expected {expected}, found {token.text!r}", self.source)

    def next(self) -> Token:
        token = self.peek()
        if token is None:
            raise self.error("more")
        self.at += 1
        return token

    def word(self, *options: str) -> Token:
        token = self.peek()
        if token is None or token.kind != "word" or token.text.lower() not in options:
            raise self.error(" or ".join(repr(o) for o in options))
        return self.next()

    def is_word(self, *options: str, ahead: int = 0) -> bool:
        token = self.peek(ahead)
        return token is not None and token.kind == "word" and token.text.lower() in options

    def symbol(self, text: str) -> Token:
        token = self.peek()
        if token is None or token.kind != "symbol" or token.text != text:
            raise self.error(repr(text))
        return self.next()

    def is_symbol(self, text: str, ahead: int = 0) -> bool:
        token = self.peek(ahead)
        return token is not None and token.kind == "symbol" and token.text == text

    def integer(self) -> int:
        token = self.peek()
        if token is None or token.kind != "int":
            raise self.error("a whole number")
        return int(self.next().text)

    def option(self, key: str) -> Token:
        """'<' key ':=' and the value's first token."""
        self.symbol("<")
        self.word(key)
        self.symbol(":=")
        return self.next()


def parse(text: str, source: str = "<program>") -> Program:
    reader = _Reader(tokens(text, source), source)
    instructions: list[Play] = []
    definitions: dict[str, Definition] = {}
    while reader.peek() is not None and reader.is_word("motion"):
        instructions.append(_play(reader))
    while reader.peek() is not None:
        start = reader.peek()
        if reader.is_word("joint"):
            definition = _combined(reader)
        elif reader.is_word("pileup"):
            definition = _pileup(reader)
        elif reader.is_word("motion"):
            raise ProgramError(start.line, start.column, "top-level 'motion' lines come before the definitions "
                               "('joint motion to', 'pileup motion to')", source)
        else:
            raise reader.error("'joint motion to' or 'pileup motion to'")
        if definition.name.lower() in (d.lower() for d in definitions):
            raise ProgramError(start.line, start.column, f"{definition.name} is defined twice", source)
        definitions[definition.name] = definition
    return Program(instructions, definitions, source)


def _name(reader: _Reader) -> str:
    token = reader.peek()
    if token is None or token.kind not in ("name", "word"):
        raise reader.error('a motion name in quotes ("WALK2", "@KARATE", "@@STEPS")')
    return reader.next().text


def _play(reader: _Reader) -> Play:
    start = reader.word("motion")
    token = reader.option("do")
    if token.kind not in ("name", "word"):
        raise reader.error('a motion name in quotes', token)
    reader.symbol(">")
    return Play(token.text, start.line, start.column, value_at=_at(token))


def _combined(reader: _Reader) -> Definition:
    start = reader.word("joint")
    reader.word("motion")
    reader.word("to")
    name = reader.next()
    if name.kind != "word" or not name.text.startswith("@") or name.text.startswith("@@"):
        raise reader.error("a joint motion's name, @NAME", name)
    members = []
    while not reader.is_word("end"):
        if reader.peek() is None or (reader.is_word("joint", "pileup") and reader.is_word("motion", ahead=1)):
            raise reader.error(f"'end' closing joint motion {name.text} (line {start.line})")
        members.append(_member(reader))
    reader.word("end")
    return Definition("combined", name.text, members, start.line, start.column)


def _pileup(reader: _Reader) -> Definition:
    start = reader.word("pileup")
    reader.word("motion")
    reader.word("to")
    name = reader.next()
    if name.kind != "word" or not name.text.startswith("@@"):
        raise reader.error("a pile-up's name, @@NAME", name)
    body = _plays(reader, f"pileup motion {name.text} (line {start.line})")
    return Definition("pileup", name.text, body, start.line, start.column)


def _plays(reader: _Reader, what: str) -> list[Play]:
    body: list[Play] = []
    while not reader.is_word("end"):
        if reader.peek() is None or (reader.is_word("joint", "pileup") and reader.is_word("motion", ahead=1)):
            raise reader.error(f"'end' closing {what}")
        if reader.is_word("repeat"):
            token = reader.word("repeat")
            reader.word("while")
            count = reader.integer()
            if count < 1:
                raise ProgramError(token.line, token.column, f"repeat while {count}: needs 1 or more", reader.source)
            inner = _plays(reader, f"repeat (line {token.line})")
            body.append(Play(None, token.line, token.column, count, inner))
        elif reader.is_word("motion"):
            body.append(_play(reader))
        else:
            raise reader.error("'motion <do:=...>', 'repeat while N' or 'end'")
    reader.word("end")
    return body


def _member(reader: _Reader) -> Member:
    start = reader.peek()
    if reader.is_word("base"):
        reader.next()
        token = reader.option("do")
        reader.symbol(">")
        return Member("base", None, token.text, Timing(), start.line, start.column, _at(token))
    if reader.is_word("set"):
        reader.next()
        part = reader.next()
        first = reader.peek() or part
        factors = {}
        while reader.is_symbol("<"):
            reader.symbol("<")
            key = reader.next()
            reader.symbol(":=")
            value = reader.next()
            reader.symbol(">")
            factors[key.text.lower()] = _value(value)
        return Member("set", part.text.upper(), factors, Timing(), start.line, start.column, _at(first), _at(part))
    if reader.is_word("motion"):
        reader.next()
        token = reader.option("do")
        reader.symbol(">")
        return Member("motion", None, token.text, _timings(reader), start.line, start.column, _at(token))
    kind = "item" if reader.is_word("item") else "command"
    if kind == "item":
        reader.next()
    part = reader.next()
    if part.kind != "word":
        raise reader.error("a part name (RIGHTARM, MOUTH, ...)", part)
    token = reader.option("do")
    reader.symbol(">")
    return Member(kind, part.text.upper(), _value(token), _timings(reader), start.line, start.column, _at(token),
                  _at(part))


def _at(token: Token) -> tuple[int, int]:
    return token.line, token.column


def _value(token: Token):
    if token.kind == "int":
        return int(token.text)
    if token.kind == "number":
        return float(token.text)
    if token.kind == "name":
        return Quoted(token.text)
    return token.text


def _timings(reader: _Reader) -> Timing:
    timing = Timing()
    while reader.is_symbol("<") and (reader.is_word("from", ahead=1) or reader.is_word("till", ahead=1)):
        start = reader.symbol("<")
        timing.line, timing.column = start.line, start.column
        if reader.is_word("from"):
            reader.next()
            reader.symbol(":=")
            if reader.is_word("timer"):
                reader.next()
                token = reader.peek()
                tenths = reader.integer()
                if tenths < 0:
                    raise ProgramError(token.line, token.column, f"timer {tenths}: a time from the start, 0 or more "
                                       "tenths of a second", reader.source)
                timing.timer = tenths / 10
            elif reader.is_word("item"):
                reader.next()
                part = reader.next()
                if part.kind != "word":
                    raise reader.error("a part name", part)
                reader.symbol("[")
                timing.after_part = part.text.upper()
                if reader.is_word("back"):
                    reader.next()
                    timing.after_frame = None
                else:
                    timing.after_frame = reader.integer()
                reader.symbol("]")
            else:
                raise reader.error("'timer N' or 'item PART[N]'")
        else:
            reader.next()
            reader.symbol(":=")
            reader.word("repeat")
            timing.repeat = reader.integer()
            if timing.repeat < 1:
                raise ProgramError(start.line, start.column, "till:=repeat needs 1 or more", reader.source)
        reader.symbol(">")
    return timing
