"""The probes' `--set module.NAME=value` switches: a module constant set before the run (an ablation without editing
the code), e.g. `--set core.chains.separation.ONE_ANSWER_PER_RUN=False`."""
from __future__ import annotations

import importlib


def apply_sets(argv: list[str]) -> None:
    """Set every `--set module.NAME=value` of argv (value a Python literal or expression) and say so."""
    for k, arg in enumerate(argv):
        if arg == "--set":
            name, value = argv[k + 1].split("=", 1)
            module, attr = name.rsplit(".", 1)
            setattr(importlib.import_module(module), attr, eval(value))
            print("set", name, "=", value)
