#!/usr/bin/env python3
"""Where a gait's CPU goes, stage by stage (issue 12's 2 s): timers around core.balance's calls.

    .venv/bin/python bench/gait_stage_cpu.py [--robot h1|g1] [--ten] [--runs 2] [--against /tmp/other/core_copy]
        [--lateral-solver highs|interior] [--bake]

One process, one BLAS thread; each run's CPU time (time.process_time) in all and inside each wrapped call
(bake, plan, carried path and its linear programme, the coarse correction and its passes, the control cycle's
passes, margin rounds, trailing rolls, standing over the holds, report), the least run's split printed. Calls
nest (the programme inside the carried path, the passes inside `balance`), so the rows do not add up.
--against: another copy of core as a package directory (as bench/gait_cpu_pair.py), timed instead of this tree's.
The figures printed with each run (worst margin, ZMP RMS, slide) tell whether it walked the gait expected.
--lateral-solver: the lateral programme's solver (core.balance.lateral.SOLVER; this tree's default unless given).
--bake: also the calls inside the clip's bake and plan (BAKE_CALLS: the chains' solve, both plants and the
planted legs' passes inside them, the plan's step bounds, stances and foot paths).
"""
from __future__ import annotations

import argparse
import importlib
import os
import sys
import time
from collections import defaultdict
from pathlib import Path

for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):  # one core: before numpy loads BLAS
    os.environ[var] = "1"

HERE = Path(__file__).resolve().parent
# (module under the package, name): the calls gait.py makes, as gait.py imported them, and the passes inside
GAIT_CALLS = ("retarget", "make_plan", "carried_path", "plan_path", "balance", "refine", "toward_margin",
              "roll_trailing_feet", "stand_over_holds", "gait_report")
INNER_CALLS = (("balance.correction", "refine"), ("balance.margin", "refine"))
CORRECTOR_METHODS = ("solve_standing", "fit_height", "lateral_range", "zmp")
# (module, name) inside the bake (core.retarget.pipeline: the draft plant is `plant_feet`'s first call, the second
# inside `_smooth_planted`; core.feet.plant's `_solve_legs` is one pass of a plant) and the plan
BAKE_CALLS = (("retarget.pipeline", "solve_chains"), ("retarget.pipeline", "plant_feet"),
              ("retarget.pipeline", "_smooth_planted"), ("retarget.pipeline", "_warn_missing_meshes"),
              ("feet.plant", "_first_root"), ("feet.plant", "_solve_legs"), ("feet.plant", "_track"),
              ("feet.plant", "keep_pace"), ("balance.plan", "step_bounds"), ("balance.plan", "_stances"),
              ("balance.plan", "foot_path"), ("balance.plan", "heel_offs"))


def timed(seconds: dict, counts: dict, label: str, call):
    """call, its CPU time added to seconds[label] at each return."""
    def wrapped(*args, **kwargs):
        started = time.process_time()
        try:
            return call(*args, **kwargs)
        finally:
            seconds[label] += time.process_time() - started
            counts[label] += 1
    return wrapped


def instrument(package: str, seconds: dict, counts: dict, bake: bool = False) -> None:
    """Wrap the package's gait stages (module attributes and Corrector methods) with timers; bake: BAKE_CALLS too."""
    gait = importlib.import_module(package + ".balance.gait")
    for name in GAIT_CALLS:
        setattr(gait, name, timed(seconds, counts, f"gait: {name}", getattr(gait, name)))
    for module_name, name in INNER_CALLS + (BAKE_CALLS if bake else ()):
        module = importlib.import_module(f"{package}.{module_name}")
        setattr(module, name, timed(seconds, counts, f"{module_name}.{name}", getattr(module, name)))
    corrector = importlib.import_module(package + ".balance.correction").Corrector
    for name in CORRECTOR_METHODS:
        setattr(corrector, name, timed(seconds, counts, f"Corrector.{name}", getattr(corrector, name)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--robot", default="h1", choices=("g1", "h1"))
    parser.add_argument("--ten", action="store_true", help="the 10 s clip (the walk held at its ends) instead of the walk")
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--against", type=Path, help="another copy of core, as a package directory")
    parser.add_argument("--lateral-solver", choices=("highs", "interior"))
    parser.add_argument("--bake", action="store_true", help="also the calls inside the bake and the plan")
    args = parser.parse_args()
    if args.against is not None:
        sys.path.insert(0, str(args.against.resolve().parent))
    sys.path[:0] = [str(HERE.parent), str(HERE)]
    from gait_cpu_pair import runner

    package = "core" if args.against is None else args.against.resolve().name
    run = runner(package, args.robot, args.ten)
    if args.lateral_solver is not None:
        importlib.import_module(package + ".balance.lateral").SOLVER = args.lateral_solver
    seconds: dict = defaultdict(float)
    counts: dict = defaultdict(int)
    instrument(package, seconds, counts, args.bake)
    best = None
    for k in range(args.runs):
        seconds.clear()
        counts.clear()
        started = time.process_time()
        report = run().report
        cpu = time.process_time() - started
        print(f"run {k}: {cpu:.2f} s CPU, load {os.getloadavg()[0]:.1f}; worst margin "
              f"{1000 * report['min_support_margin_m']:+.2f} mm, ZMP RMS {1000 * report['multibody_zmp_rms_error_m']:.2f} "
              f"mm, slide {1000 * report['stance_slide_m']:.2f} mm, {report['steps']} steps", flush=True)
        if best is None or cpu < best[0]:
            best = (cpu, dict(seconds), dict(counts))
    print(f"{package} {args.robot} {'10 s clip' if args.ten else 'walk'}: least {best[0]:.2f} s CPU; inside it:")
    for label, spent in sorted(best[1].items(), key=lambda item: -item[1]):
        print(f"  {label:32s} {spent:6.2f} s  ({best[2][label]} calls)")


if __name__ == "__main__":
    main()
