#!/usr/bin/env python3
"""Does a change of the H1 gait's CPU walk the same gait on every case bench/h1_cut_check.py judges?

    .venv/bin/python bench/h1_same_bits.py --set MODULE.NAME=VALUE [--set ...] [--base MODULE.NAME=VALUE ...]
        [--cases walk,10 s clip,...] [--starts read,float32,...]

Each case of h1_cut_check (the walk and the 10 s clip from four starts, the H1 scaled 0.9 and 1.1, the walk
with the rolled coarse passes capped) runs twice in this process, with the --base constants (e.g.
"lateral.SOLVER='interior'") and then with those and the --set ones, and prints how far apart the two gaits'
joints are and both worst margins. 0 rad on every line: the change is the same gait to the bit wherever a
cut is judged, and needs no margin check; anything else: run bench/h1_cut_check.py with the change. Gaits of
one process also part with no change at all (session 23, a constant set to its own value: the walk's noise
start 8.4e-5 rad apart, its torso start 1.6e-5, the others 1e-9 or 0; what numpy's allocations leave in the
last bits, which the H1's passes amplify), so a line apart is no proof of a change: bench/gait_replay_ab.py
compares the calls themselves.
One process, one gait at a time (the machine is shared): about 50 gaits, 3-4 minutes at low load.
"""
from __future__ import annotations

import argparse
import ast
import importlib
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import h1_cut_check  # noqa: E402  (via h1_sensitivity: one BLAS thread before numpy loads)
import h1_sensitivity  # noqa: E402

import numpy as np  # noqa: E402


def _apply(assignments: list[str]) -> list[tuple]:
    """Each "module.NAME=value" set on core.balance.module; what it was, to put back."""
    before = []
    for assignment in assignments:
        name, value = assignment.split("=", 1)
        module_name, constant = name.rsplit(".", 1)
        module = importlib.import_module(f"core.balance.{module_name}")
        before.append((module, constant, getattr(module, constant)))
        setattr(module, constant, ast.literal_eval(value))
    return before


def _restore(before: list[tuple]) -> None:
    for module, constant, value in reversed(before):
        setattr(module, constant, value)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", action="append", default=[], metavar="MODULE.NAME=VALUE")
    parser.add_argument("--base", action="append", default=[], metavar="MODULE.NAME=VALUE")
    parser.add_argument("--cases", default=None, help="labels of h1_cut_check's cases, comma-separated (all)")
    parser.add_argument("--starts", default=None, help="starts to run (each case's own)")
    args = parser.parse_args()
    cases = h1_cut_check.CASES if args.cases is None else [c for c in h1_cut_check.CASES
                                                          if c[0] in args.cases.split(",")]
    print(f"H1, base {args.base or 'main'}, change {args.set}: joints apart (rad), worst margin base / change (mm)")
    spent = [0.0, 0.0]
    apart_any = 0.0
    for label, held, scale, starts, extra in cases:
        for how in starts if args.starts is None else [s for s in starts if s in args.starts.split(",")]:
            out = []
            for k, change in enumerate(([], args.set)):
                before = _apply(args.base + extra + change)
                started = time.process_time()
                out.append(h1_sensitivity.run((how, "h1", False, False, None, held, [], scale)))
                spent[k] += time.process_time() - started
                _restore(before)
            apart = float(np.abs(out[0]["q"] - out[1]["q"]).max())
            apart_any = max(apart_any, apart)
            margins = [1000 * r["report"]["min_support_margin_m"] for r in out]
            print(f"{label:14s} {how:8s} joints {apart:.3g}  margin {margins[0]:+.4f} / {margins[1]:+.4f}", flush=True)
    print(f"CPU of all gaits: base {spent[0]:.1f} s, change {spent[1]:.1f} s ({spent[1] / spent[0]:.3f})")
    print("the same gait everywhere" if apart_any == 0.0 else f"gaits apart, up to {apart_any:.3g} rad: run h1_cut_check")


if __name__ == "__main__":
    main()
