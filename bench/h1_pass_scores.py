#!/usr/bin/env python3
"""Each multibody pass's RMS ZMP error in one H1 gait, call by call: where the passes settle and where they oscillate.

    .venv/bin/python bench/h1_pass_scores.py [--runs read,noise] [--held] [--scale S] [--set MODULE.NAME=VALUE ...]

Runs bench/h1_sensitivity.py's gait (its starts, --held, --scale and --set) in this process with
core.balance.correction.refine wrapped: one line per call (the coarse passes at 10 ms, the control cycle's first
passes, the rolled waist's, each margin round's), its samples and each pass's RMS error to the target it follows
(mm; the last of a call only measures), then the gait's worst margin. Session 23: with `--set
gait.ROLLED_COARSE_PASSES=1` the coarse call measures once and corrects nothing, and the control cycle's passes
then settle (HiGHS's plan, read start: 3.2 mm) or oscillate (the interior point's: 12.5-35 mm) as the start has it.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import h1_sensitivity  # noqa: E402  (sets one BLAS thread before numpy loads)


def scored(calls: list[tuple[int, list[float]]]) -> None:
    """correction.refine (as gait, margin and correction.balance call it) wrapped: each call appends (its samples,
    []) to calls, and each pass's score (correction.rms_error inside it) goes on the last list."""
    from core.balance import correction, gait, margin

    inner_refine, inner_rms = correction.refine, correction.rms_error

    def refine(corrector, q, *args, **kwargs):
        calls.append((len(q), []))
        return inner_refine(corrector, q, *args, **kwargs)

    def rms_error(error):
        out = inner_rms(error)
        if calls:
            calls[-1][1].append(out)
        return out

    correction.refine = gait.refine = margin.refine = refine
    correction.rms_error = rms_error


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", default="read", help="starts, comma-separated (bench/h1_sensitivity.py's)")
    parser.add_argument("--held", action="store_true", help="the 10 s clip instead of the walk")
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--set", action="append", default=[], metavar="MODULE.NAME=VALUE")
    args = parser.parse_args()
    calls: list[tuple[int, list[float]]] = []
    scored(calls)
    for how in args.runs.split(","):
        calls.clear()
        out = h1_sensitivity.run((how, "h1", False, False, None, args.held, args.set, args.scale))
        print(f"{how}{''.join(', ' + a for a in args.set)}: worst margin "
              f"{1000 * out['report']['min_support_margin_m']:+.2f} mm")
        for index, (samples, scores) in enumerate(calls):
            print(f"  refine {index} ({samples} samples): " + " ".join(f"{1000 * s:.2f}" for s in scores))


if __name__ == "__main__":
    main()
