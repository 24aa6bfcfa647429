#!/usr/bin/env python3
"""How often a start that differs from the read one by rounding walks another H1 gait: many such starts, not one.

    .venv/bin/python bench/start_spread.py [--held] [--scale S] [--starts 10] [--set MODULE.NAME=VALUE ...]

tests/core/test_gait.py checks one rounded start of the H1 walk (its positions as float32: ankles within 1 mm of
the read start's). One start is one draw of a chaotic gait, so a change that passes it may be lucky. This runs the
read start, the float32 start and --starts more (bench/h1_sensitivity.py's "ulp SEED": every position and root turn
times 1 + u, u uniform within float32's half ulp, seeded), one after another in one process (one core), and prints
how far each start's ankles end from the read start's (mm, the worst sample) and its worst support margin; then
how many end over 1 mm (the test's limit) and over 0.1 mm. Session 26 (the legs' race, leg_solve.RACE_STEPS):
main's walk parts no start by 1 mm, every raced variant 3-7 of 11 by 1.9-2.0 mm.
--held: the 10 s clip (its contacts detected on each start, as bench/h1_cut_check.py runs it; main's starts there
end 2.8 mm (float32) and 25 mm (half-ulp) from the read one already). --scale S: the H1 S times as large.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import h1_sensitivity  # noqa: E402  (sets one BLAS thread before numpy loads)
import numpy as np  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--held", action="store_true", help="the 10 s clip, not the walk")
    parser.add_argument("--scale", type=float, default=1.0, help="the robot this many times as large")
    parser.add_argument("--starts", type=int, default=10, help="seeded half-ulp starts besides the float32 one")
    parser.add_argument("--set", action="append", default=[], metavar="MODULE.NAME=VALUE")
    args = parser.parse_args()
    clock = time.process_time()
    runs = iter(h1_sensitivity.run((how, "h1", False, False, None, args.held, args.set, args.scale))
                for how in ["read", "float32"] + [f"ulp {seed}" for seed in range(args.starts)])
    base = next(runs)
    print(f"{', '.join(args.set) or 'the tree'}: read start margin "
          f"{1e3 * base['report']['min_support_margin_m']:+.2f} mm", flush=True)
    apart = []
    for result in runs:
        apart.append(float(np.linalg.norm(result["feet"] - base["feet"], axis=2).max()))
        print(f"  {result['how']:8s} ankles {1e3 * apart[-1]:7.3f} mm  margin "
              f"{1e3 * result['report']['min_support_margin_m']:+.2f} mm", flush=True)
    apart = np.array(apart)
    print(f"over 1 mm: {int((apart > 1e-3).sum())} of {len(apart)}; over 0.1 mm: {int((apart > 1e-4).sum())}; "
          f"median {1e3 * np.median(apart):.3f} mm ({time.process_time() - clock:.0f} s CPU)")


if __name__ == "__main__":
    main()
