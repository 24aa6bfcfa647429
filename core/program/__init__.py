"""Motion programs (issue 13): a language that composes per-part modules into timed performances,
compiled to a timeline of modules per part, checked against the robot's velocity and position limits.

May import core.model and core.motion; nothing in core imports it.
"""
from .compile import compile_program
from .timeline import Item, Timeline, Violation
from .language import Program, ProgramError, parse
from .library import Library, LibraryError, Module, Part
from .timing import check_timing, compose, robot_limits

__all__ = ["Item", "Library", "LibraryError", "Module", "Part", "Program", "ProgramError", "Timeline", "Violation",
           "check_timing", "compile_program", "compose", "parse", "robot_limits"]
