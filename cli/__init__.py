"""Command line of Robot Retarget: `blender -b -c robot_retarget SUBCOMMAND ...`.

One module per subcommand (bake, export, batch, splice, balance, gait, program, stream, waypoints), the shared pieces in
cli.common. main(argv) is also what tools/robot-retarget calls inside
bpy-as-a-module, so everything here must work without a window. Subcommands
print their results to stdout and return a process exit code.
"""
from __future__ import annotations

import argparse

import bpy

from . import balance, bake, batch, export, gait, program, splice, stream, waypoints
from ..operators.common import user_message
from .common import COMMAND_ID, INPUT_ERRORS

_handle = None


def _cmd_version(args: argparse.Namespace) -> int:
    from ..operators.common import extension_version

    print(f"{COMMAND_ID} {extension_version()}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="robot-retarget",
        description="Retarget character animation onto robots.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    p = sub.add_parser("version", help="print the extension's version")
    p.set_defaults(func=_cmd_version)
    for command in (bake, export, batch, splice, balance, gait, program, stream, waypoints):
        command.add_parser(sub)
    parser.subcommands = sub.choices  # {name: parser}: parse_arguments refuses a flag with its subcommand's usage
    return parser


def main(argv: list[str]) -> int:
    from ..core.library.arguments import run_command

    return run_command(build_parser(), argv, "robot-retarget", INPUT_ERRORS, user_message)


def _execute(argv: list[str]) -> int:
    """Handler for Blender's `-c robot_retarget`: argv is what follows the id."""
    return main(argv)


def register():
    global _handle
    if _handle is None:
        _handle = bpy.utils.register_cli_command(COMMAND_ID, _execute)


def unregister():
    global _handle
    if _handle is not None:
        bpy.utils.unregister_cli_command(_handle)
        _handle = None
