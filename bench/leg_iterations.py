#!/usr/bin/env python3
"""The legs' Levenberg-Marquardt iterations on recorded calls, with and without a change of leg_solve's constants.

    .venv/bin/python bench/gait_replay_ab.py --against /tmp/before/core_before --ten --what legs \
        --calls /tmp/legs_h1_ten.pkl                  # records the H1 10 s clip's leg solves once
    .venv/bin/python bench/leg_iterations.py /tmp/legs_h1_ten.pkl [--base leg_solve.PREDICTED_STOP=False]
        [--set leg_solve.GAIN_TOL=1e-4 ...]

Each recorded `legs._solve_leg` call is replayed with the --base constants and then with --set on top of them:
the residuals each made (the iterations' cost is mostly per residual, whatever its sample count: issue 12), how
many of them were on fewer than 50 samples (the stragglers), and how far the answers moved: the largest joint
change, the largest increase of a foot's position error, and the largest rise of a sample's cost (the solve's own
measure, as a share of it: GAIN_TOL is what the stop allows). Replays are deterministic, so no timing here.
"""
from __future__ import annotations

import argparse
import ast
import importlib
import pickle
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE)]
from gait_replay_ab import replay  # noqa: E402

STRAGGLERS = 50  # samples under which a residual counts as a straggler's


def _assign(assignments: list[str]) -> None:
    for item in assignments:
        name, value = item.split("=", 1)
        module_name, constant = name.rsplit(".", 1)
        setattr(importlib.import_module(f"core.balance.{module_name}"), constant, ast.literal_eval(value))


def counted(calls: list) -> tuple[list, int, int]:
    """The calls' outputs, and the residuals evaluated (all, and on fewer than STRAGGLERS samples)."""
    solve = importlib.import_module("core.balance.leg_solve")
    original, sizes = solve._residual, []

    def residual(chain, g, x, *rest):
        sizes.append(x.shape[1])
        return original(chain, g, x, *rest)
    solve._residual = residual
    try:
        outs, _ = replay("legs", calls, "core")
    finally:
        solve._residual = original
    return outs, len(sizes), sum(size < STRAGGLERS for size in sizes)


def moved(before: list, after: list) -> dict[str, float]:
    """How far the answers (joints (F, J), weighted error (F, 6 + J)) moved, the worst sample's."""
    before, after = zip(*[(a, b) for a, b in zip(before, after) if len(a[0])])  # a solve of no samples moves none
    joints = max(float(np.abs(a[0] - b[0]).max()) for a, b in zip(before, after))
    foot = max(float((np.linalg.norm(b[1][:, :3], axis=1) - np.linalg.norm(a[1][:, :3], axis=1)).max())
               for a, b in zip(before, after))
    cost = max(float((((b[1] ** 2).sum(1) - (a[1] ** 2).sum(1)) / np.maximum((a[1] ** 2).sum(1), 1e-300)).max())
               for a, b in zip(before, after))
    samples = sum(len(a[0]) for a in before)
    changed = sum(int((np.abs(a[0] - b[0]).max(1) > 1e-6).sum()) for a, b in zip(before, after))
    return {"joints_rad": joints, "foot_worse_m": foot, "cost_rise_share": cost, "changed": changed,
            "samples": samples}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("calls", type=Path, help="a pickle written by gait_replay_ab.py --calls")
    parser.add_argument("--base", action="append", default=[], metavar="MODULE.NAME=VALUE",
                        help="constants of core.balance's modules for the first replay")
    parser.add_argument("--set", action="append", default=[], metavar="MODULE.NAME=VALUE",
                        help="constants set on top of --base for the second")
    args = parser.parse_args()
    calls = pickle.loads(args.calls.read_bytes())["legs"]
    _assign(args.base)
    before, total, small = counted(calls)
    print(f"{', '.join(args.base) or 'the tree'}: {len(calls)} calls, {total} residuals, {small} on fewer than "
          f"{STRAGGLERS} samples", flush=True)
    if not args.set:
        return
    _assign(args.set)
    after, total, small = counted(calls)
    m = moved(before, after)
    print(f"with {', '.join(args.set)}: {total} residuals, {small} on fewer than {STRAGGLERS} samples; answers moved: "
          f"joints {m['joints_rad']:.2e} rad at most ({m['changed']} of {m['samples']} samples by over a "
          f"micro-radian), a foot's error {1e6 * m['foot_worse_m']:+.1f} um at worst, a sample's cost "
          f"{m['cost_rise_share']:+.2e} of it at worst")


if __name__ == "__main__":
    main()
