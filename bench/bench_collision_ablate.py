#!/usr/bin/env python3
"""Self-collision avoidance: each stage left out in turn (an ablation), in one process.

Per robot and clip, the bake without avoidance, today's pipeline and each variant (module constants
set for its bake, put back after) interleaved, the order reversed every round, the least CPU time of
`--repeats` rounds after one warm-up, one core. Per variant: colliding frames, the deepest overlap,
the limbs' direction error over the bake without (all four, and each arm's), the joints' jerk, the avoidance's own CPU (the
bake's less the bake's without), the CPU in one answer per run and in the steady room, the switch
windows solved (detours and finish), the corrections' step calls and frame-steps (the passes' work, free of
the load), and how far its joints are from today's (RMS, deg).

    .venv/bin/python bench/bench_collision_ablate.py [--repeats 3] [--robots g1,h1] [--clips walk,hop]
        [--variants base,no-runs,...]

The descent-* variants (not run by default) turn on the descended polish (separation.POLISH_ROOM and
POLISH_DESCENT) and change it or the passes: `--variants base,descent,descent-steps-2,descent-raw`.
"""
from __future__ import annotations

import argparse
import contextlib
import os
import time
from collections import defaultdict
from dataclasses import replace

for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[var] = "1"

import numpy as np  # noqa: E402

import clips  # noqa: E402  (puts the repository on the path)
from core import collision  # noqa: E402
from core.chains import coherence, corrections, polish, separation, steady, switches  # noqa: E402
from core.model.kinematics import KinematicTree  # noqa: E402
from core.model.urdf import parse_urdf  # noqa: E402
from core.retarget import auto_map, retarget  # noqa: E402
from bench_collision_stages_ab import _timed  # noqa: E402  (a part's CPU added up, not nested)

S, C, T, W, P, K = separation, coherence, steady, switches, polish, corrections
_POLISHED = S._polished
DESCENT = ((S, "POLISH_ROOM", True), (S, "POLISH_DESCENT", True))  # the descended polish (core.chains.polish)
VARIANTS = {  # name: ((module, constant, value), ...) left out or changed
    "base": (),
    "no-runs": ((S, "ONE_ANSWER_PER_RUN", False),),
    "no-retry": ((C, "RETRY_SHARE", 2.0),),  # one answer per run without trying a run whole on the other answer
    "against-0.2": ((C, "AGAINST_RAD", 0.2),),  # fewer frames started again from their run's answer
    "against-0.3": ((C, "AGAINST_RAD", 0.3),),
    "no-whole": ((S, "WHOLE_PASSES", 0),),
    "passes-1": ((S, "SEPARATION_PASSES", 1),),
    "passes-2": ((S, "SEPARATION_PASSES", 2),),
    "no-rounds": ((T, "STEADY_ROUNDS", 0),),
    "no-detours": ((S, "DETOURS", False),),
    "no-finish": ((S, "FIX_PASSES", 0), (S, "FINISH_SWITCHES", False)),
    "no-sample": ((S, "SAMPLE_HZ", 1e9),),
    "sample-40": ((S, "SAMPLE_HZ", 40.0),),  # every third frame at 120 fps
    "sample-30": ((S, "SAMPLE_HZ", 30.0),),  # every fourth frame at 120 fps
    "finish-whole": ((S, "FINISH_WHOLE", True),),  # the steady room's finish over the whole clip (before session 26)
    "finish-no-switches": ((S, "FINISH_SWITCHES", False),),
    "sample-60": ((S, "SAMPLE_HZ", 60.0),),  # every second frame at 120 fps (before session 26)
    "passes-1+sample-40": ((S, "SEPARATION_PASSES", 1), (S, "SAMPLE_HZ", 40.0)),
    "detour-steps-2": ((S, "DETOUR_STEPS", 2),),
    "detour-4": ((S, "DETOUR_HALF_WIDTHS", (4,)),),
    "detour-8": ((S, "DETOUR_HALF_WIDTHS", (8,)),),
    "no-runs+passes-1": ((S, "ONE_ANSWER_PER_RUN", False), (S, "SEPARATION_PASSES", 1)),
    "no-runs+no-whole": ((S, "ONE_ANSWER_PER_RUN", False), (S, "WHOLE_PASSES", 0)),
    "no-whole+passes-1": ((S, "WHOLE_PASSES", 0), (S, "SEPARATION_PASSES", 1)),
    "no-runs+no-whole+passes-1": ((S, "ONE_ANSWER_PER_RUN", False), (S, "WHOLE_PASSES", 0),
                                  (S, "SEPARATION_PASSES", 1)),
    # session 28 (the defaults since: LIMB_TRIES False, SAMPLED_PASSES 2)
    "limb-tries": ((C, "LIMB_TRIES", True),),  # a limb's runs tried whole on the other answer (before session 28)
    "sampled-passes-3": ((S, "SAMPLED_PASSES", 3),),  # three passes on the sampled frames (before session 28)
    "sampled-passes-1": ((S, "SAMPLED_PASSES", 1),),
    "whole-passes-1": ((S, "WHOLE_PASSES", 1),),
    "detour-steps-4": ((S, "DETOUR_STEPS", 4),),  # the G1 hop's detour ends out: no finish
    "switch-aim-4mm": ((W, "SWITCH_AIM_M", 0.004),),
    "linear-steps-6": ((S, "LINEAR_STEPS", 6),),
    "linear-steps-8": ((S, "LINEAR_STEPS", 8),),
    "aim-2mm": ((K, "AIM_M", 0.002),),
    "step-0.5": ((K, "STEP_RAD", 0.5),),
    "inside-2mm": ((T, "INSIDE_M", 0.002),),
    # session 29 (s29-finish): a last bump for the frames the detour left inside, the finish only where that fails
    "last-fix": ((T, "LAST_FIX", True),),  # G1 hop: no finish, limbs +0.024 deg, jerk -17 %, 0.29 G fewer
    "last-fix-reach-1": ((T, "LAST_FIX", True), (T, "LAST_FIX_REACH", 1)),
    "last-fix-reach-3": ((T, "LAST_FIX", True), (T, "LAST_FIX_REACH", 3)),
    "rounds-1": ((T, "STEADY_ROUNDS", 1),),  # one steady round, then the detour
    "rounds-1+last-fix": ((T, "STEADY_ROUNDS", 1), (T, "LAST_FIX", True)),
    # session 28, the descended polish (measured before s28-fewer's defaults)
    "descent": DESCENT,
    "descent-steps-1": DESCENT + ((P, "DESCENT_STEPS", 1),),
    "descent-steps-2": DESCENT + ((P, "DESCENT_STEPS", 2),),
    "descent+no-whole": DESCENT + ((S, "WHOLE_PASSES", 0),),
    "descent+whole-1": DESCENT + ((K, "WHOLE_STEPS", 1),),
    "descent+whole-passes-1": DESCENT + ((S, "WHOLE_PASSES", 1),),
    "descent-steps-1+whole-passes-1": DESCENT + ((P, "DESCENT_STEPS", 1), (S, "WHOLE_PASSES", 1)),
    "descent-steps-1+whole-passes-1+clear-1mm": DESCENT + ((P, "DESCENT_STEPS", 1), (S, "WHOLE_PASSES", 1),
                                                           (P, "DESCENT_CLEAR_M", 0.001)),
    "descent-reach-1.0": DESCENT + ((S, "POLISH_ROOM_RAD", 1.0),),
    "descent-steps-6": DESCENT + ((P, "DESCENT_STEPS", 6),),
    "descent-clear-1mm": DESCENT + ((P, "DESCENT_CLEAR_M", 0.001),),
    "descent-clear-4mm": DESCENT + ((P, "DESCENT_CLEAR_M", 0.004),),
    # the descent polished again from where its low-passed move left the room
    "descent-twice": DESCENT + ((S, "_polished", lambda p, s, x, *args: _POLISHED(p, s, _POLISHED(p, s, x, *args), *args)),),
    # diagnosis: each sampled frame's descent interpolated, not low-passed nor checked (may leave frames inside)
    "descent-raw": DESCENT + ((S, "steady_gain", lambda y, better, *args: better),),
}
PARTS = ("chains.separation:one_answer_per_run", "chains.separation:_steady")


@contextlib.contextmanager
def _variant(changes: tuple):
    """The module constants set for one bake, put back after."""
    saved = [(module, name, getattr(module, name)) for module, name, _ in changes]
    try:
        for module, name, value in changes:
            setattr(module, name, value)
        yield
    finally:
        for module, name, value in saved:
            setattr(module, name, value)


def _counted(spent: dict) -> None:
    """Count the corrections' step calls and frame-steps (rows per call): the passes' work, free of the
    load; and the switch-window solves (detours, and the finish where the detours left frames inside)."""
    step, switches = S._Corrections.step, S.solve_switches

    def stepped(self, out, live, *args, **kwargs):
        spent["steps"] += 1
        spent["frame-steps"] += len(live)
        return step(self, out, live, *args, **kwargs)

    def windows(*args, **kwargs):
        spent["windows"] += 1
        return switches(*args, **kwargs)
    S._Corrections.step, S.solve_switches = stepped, windows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=lambda v: max(1, int(v)), default=3)  # at least one timed round
    parser.add_argument("--robots", default="g1,h1")
    parser.add_argument("--clips", default="walk,hop")
    parser.add_argument("--variants", default=",".join(v for v in VARIANTS if not v.startswith("descent")))
    args = parser.parse_args()
    spent, depth = defaultdict(float), defaultdict(int)
    for part in PARTS:
        _timed("core", part, part.split(":")[1], spent, depth)
    _counted(spent)
    variants = ["base"] + [v for v in args.variants.split(",") if v != "base"]
    print(f"load {open('/proc/loadavg').read().strip()}", flush=True)
    for robot in args.robots.split(","):
        tree = KinematicTree(parse_urdf(clips.ROBOTS[robot]))
        collision.collision_pairs(tree)  # fitted once per robot, as a session keeps them
        for name in args.clips.split(","):
            motion = clips.load(clips.WALK if name == "walk" else clips.HOP)
            _ablate(f"{robot} {name}", motion, tree, variants, args.repeats, spent)
    print(f"load {open('/proc/loadavg').read().strip()}")


def _ablate(label: str, motion, tree, variants: list, repeats: int, spent: dict) -> None:
    """Print per variant its least CPU over the rounds and the figures of that bake."""
    runs = ["off"] + variants
    best, results, parts = {}, {}, {}
    for k in range(repeats + 1):
        for run in (runs if k % 2 else runs[::-1]):
            mapping = auto_map(motion, tree)
            mapping.settings = replace(mapping.settings, avoid_self_collision=run != "off")
            spent.clear()
            with _variant(VARIANTS.get(run, ())):
                started = time.process_time()
                result = retarget(motion, tree, mapping, contacts="auto")
                cpu = time.process_time() - started
            if k and cpu < best.get(run, np.inf):
                best[run], results[run], parts[run] = cpu, result, dict(spent)
    off, base = results["off"].report, results["base"]
    print(f"{label}: off {best['off']:.3f} s CPU  limbs {off['limb_direction_error_deg']:.3f} deg  "
          f"jerk {off['jerk_after']:,.0f}  load {open('/proc/loadavg').read().split()[0]}", flush=True)
    print(f"{'variant':<26} {'coll %':>6} {'worst cm':>8} {'limbs':>7} {'L / R arm':>11} {'jerk':>6} {'own CPU':>7} {'runs':>5} "
          f"{'steady':>6} {'windows':>7} {'steps':>5} {'frame-steps':>11} {'RMS deg':>7}")
    for run in variants:
        report, used = results[run].report, parts[run]
        rms = np.degrees(np.sqrt(np.mean((results[run].q - base.q) ** 2)))
        print(f"{run:<26} {report['self_collision_pct']:6.2f} {100 * report['self_collision_worst']['depth_m']:8.2f} "
              f"{report['limb_direction_error_deg'] - off['limb_direction_error_deg']:+7.3f} "
              f"{_arm(report, off, 'left'):+5.2f} {_arm(report, off, 'right'):+5.2f} "
              f"{report['jerk_after']:6,.0f} {best[run] - best['off']:7.3f} {used.get('one_answer_per_run', 0):5.3f} "
              f"{used.get('_steady', 0):6.3f} {int(used.get('windows', 0)):7d} "
              f"{int(used.get('steps', 0)):5d} {int(used.get('frame-steps', 0)):11d} {rms:7.3f}", flush=True)


def _arm(report: dict, off: dict, side: str) -> float:
    """An arm's limb direction error over the bake without avoidance (deg; nan where the report has no such limb)."""
    name = f"{side}_arm"
    by, without = report.get("limb_direction_error_by_limb", {}), off.get("limb_direction_error_by_limb", {})
    return by[name] - without[name] if name in by and name in without else float("nan")


if __name__ == "__main__":
    main()
