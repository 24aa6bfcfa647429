"""`balance`: would the robot stand? The balance readout of any motion in the bake CSV layout
(core.library: the same code as `robot-retarget-core balance`)."""
from __future__ import annotations

import argparse

from ..core.library.arguments import add_balance_parser


def add_parser(sub) -> None:
    add_balance_parser(sub, run)


def run(args: argparse.Namespace) -> int:
    from ..core.library.cli import run_balance

    return run_balance(args)
