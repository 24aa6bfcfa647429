"""`balance`: would the robot stand? The balance readout of any motion in the bake CSV layout
(core.library.gait: the same code as `robot-retarget-core balance`)."""
from __future__ import annotations

from ..core.library.arguments import add_balance_parser


def add_parser(sub) -> None:
    from ..core.library.cli import run_balance

    add_balance_parser(sub, run_balance)
