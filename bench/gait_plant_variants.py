#!/usr/bin/env python3
"""Cheaper planting for the gait's bake, tried against issue 12's gate (session 24: none kept).

    .venv/bin/python bench/gait_plant_variants.py VARIANT [--cpu [--robot h1|g1] [--runs 3]]
        [--cut START:END [--period S]]

The gait bakes its clip with planted feet (core.retarget with figures=False), and the planting is most of
that bake's CPU: a draft plant (one pass, 6 iterations), then the draft's angles smoothed and planted again
(three passes, each moving the root toward the feet that missed their goals). VARIANT replaces
core.retarget.pipeline._plant (or its chains' solve) in this process and in the gate's processes by the same
steps less some:

    p1          the second plant in one pass (its root where the first pass put it)
    nodraft     no draft: the chains' filtered angles planted once as the second plant is
    nodraft-p1  both
    draft-only  the draft, not planted again (with its own root)
    track0      the second plant without its tracking of frames that jump (PlantSettings.track_iterations 0)
    redo1mm     the second plant's passes 2 and 3 solve again only the frames whose root moved more than 1 mm
                (core.feet.plant.REDO_M 1e-4 m: 850 and 839 of the H1 10 s clip's 994 frames; 1 mm: 607 and 522)
    legs-norepair  the chains' solve of the legs without its jump repair (core.chains.solver._repair_jumps,
                the arms keep theirs): the plant solves the legs again

Without --cpu or --cut, bench/h1_cut_check.py's cases run with the variant (2-3 minutes, two gaits at a time).
--cut START:END: the G1 gait of the walk cut there at --period (tests/core/test_gait.py's cut walks: 200:500 at
0.003 and 0.005 s) with this tree's planting and the variant, each one's stance slide and worst margin.
--cpu: the 10 s clip's gait (bench/gait_cpu_pair.py's) with this tree's planting and the variant in turn in one
process, the least CPU of each over --runs and of the bake inside it.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):  # one core: before numpy loads BLAS
    os.environ[var] = "1"

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE)]

from core.feet.plant import PlantResult, PlantSettings, cancel_residual_slide, plant_feet  # noqa: E402
from core.motion.filtering import lowpass, step_limits  # noqa: E402
from core.chains.solver import rate_limit  # noqa: E402
import core.feet.plant as plant_module  # noqa: E402
import core.retarget.pipeline as pipeline  # noqa: E402

VARIANTS = ("p1", "nodraft", "nodraft-p1", "draft-only", "track0", "redo1mm", "legs-norepair")
MAIN_PLANT = pipeline._plant
MAIN_SOLVE_CHAINS, MAIN_SOLVE_CHAIN = pipeline.solve_chains, pipeline.solve_chain


def legs_unrepaired(motion, tree, plans, *args, **kwargs):
    """pipeline.solve_chains with the legs' chains solved without their jump repair (max_step None)."""
    legs = {id(p.kin) for p in plans if p.mapping.role == "leg"}

    def solve_chain(tree, kin, anchor, q, targets, weights, options=None, max_step=None):
        MAIN_SOLVE_CHAIN(tree, kin, anchor, q, targets, weights, options, None if id(kin) in legs else max_step)

    pipeline.solve_chain = solve_chain
    try:
        return MAIN_SOLVE_CHAINS(motion, tree, plans, *args, **kwargs)
    finally:
        pipeline.solve_chain = MAIN_SOLVE_CHAIN


def use(name: str | None) -> None:
    """Bake as variant `name` from now on in this process (None: as this tree does)."""
    pipeline._plant = MAIN_PLANT if name in (None, "legs-norepair") else variant_plant(name)
    pipeline.solve_chains = legs_unrepaired if name == "legs-norepair" else MAIN_SOLVE_CHAINS


def variant_plant(name: str):
    """A stand-in for pipeline._plant that plants as `name` says (the module docstring)."""
    def plant(tree, legs, q, root_rot, root_pos, flags, fps, settings, warnings, apart=None):
        if flags is None or settings.filter == "none" or settings.root_mode != "follow" or not legs:
            return MAIN_PLANT(tree, legs, q, root_rot, root_pos, flags, fps, settings, warnings, apart)
        again = PlantSettings(iterations=6, passes=1 if name.endswith("p1") else 3,
                              track_iterations=0 if name == "track0" else 3)
        if name.startswith("nodraft"):
            once = plant_feet(tree, legs, q, root_rot, root_pos, flags, fps, again, apart)
            if once is None:
                return None
            smooth = lowpass(once.q, fps, method="butterworth", cutoff_hz=3.0 * settings.cutoff_hz,
                             lower=tree.lower, upper=tree.upper)
            smooth = rate_limit(smooth, step_limits(tree.velocity, fps))
            return PlantResult(smooth, cancel_residual_slide(tree, legs, smooth, root_rot, once.root_position, flags),
                               once.lifted_m)
        draft = plant_feet(tree, legs, q, root_rot, root_pos, flags, fps,
                           PlantSettings(passes=1, lift=False, iterations=6, track_iterations=0))
        if draft is None or name == "draft-only":
            return draft
        original, redo = pipeline.PlantSettings, plant_module.REDO_M
        pipeline.PlantSettings = lambda **kwargs: again  # _smooth_planted's second plant
        plant_module.REDO_M = 1e-3 if name == "redo1mm" else redo
        try:
            return pipeline._smooth_planted(tree, legs, draft, root_rot, root_pos, flags, fps, settings, apart)
        finally:
            pipeline.PlantSettings, plant_module.REDO_M = original, redo
    return plant


def cpu(name: str, robot: str, runs: int) -> None:
    """This tree's planting and the variant in turn, the least CPU of each (the gait, the bake inside it)."""
    from gait_cpu_pair import runner
    import core.balance.gait as gait

    baked = {"cpu": 0.0}
    retarget = gait.retarget

    def timed(*args, **kwargs):
        started = time.process_time()
        try:
            return retarget(*args, **kwargs)
        finally:
            baked["cpu"] = time.process_time() - started

    gait.retarget = timed
    run = runner("core", robot, True)
    best = {}
    for k in range(runs):
        for label in ("this tree", name):
            use(None if label == "this tree" else name)
            started = time.process_time()
            report = run().report
            spent = time.process_time() - started
            least = best.setdefault(label, [float("inf"), float("inf")])
            least[:] = min(least[0], spent), min(least[1], baked["cpu"])
            print(f"run {k} {label:>10}: gait {spent:.2f} s CPU, bake {baked['cpu']:.3f} s; worst margin "
                  f"{1000 * report['min_support_margin_m']:+.2f} mm, ZMP RMS {1000 * report['multibody_zmp_rms_error_m']:.2f}"
                  f" mm; load {os.getloadavg()[0]:.1f}", flush=True)
    for label, (spent, bake) in best.items():
        print(f"{label:>10} least: gait {spent:.2f} s, bake {bake:.3f} s of CPU")


VARIANT_ENV = "GAIT_PLANT_VARIANT"
if os.environ.get(VARIANT_ENV) in VARIANTS:  # a process of the gate (h1_cut_check's pool spawns them)
    use(os.environ[VARIANT_ENV])


def cut(name: str, frames: str, period_s: float) -> None:
    """The G1 gait of the walk cut at frames START:END, this tree's planting and the variant's."""
    import numpy as np
    import clips
    from core.balance.gait import GaitSettings, generate_gait
    from core.model.kinematics import KinematicTree
    from core.model.urdf import parse_urdf
    from core.retarget import auto_map

    start, end = (int(v) for v in frames.split(":"))
    walk = clips.load(clips.WALK)
    motion = walk.at_frames(np.arange(start, end), f"walk_{start}_{end}")
    tree = KinematicTree(parse_urdf(clips.ROBOTS["g1"]))
    for label in ("this tree", name):
        use(None if label == "this tree" else name)
        report = generate_gait(motion, tree, auto_map(motion, tree), settings=GaitSettings(period_s=period_s)).report
        print(f"{label:>10}: walk {frames} onto the G1 at {period_s} s: stance slide {1000 * report['stance_slide_m']:.2f}"
              f" mm, worst margin {1000 * report['min_support_margin_m']:+.2f} mm", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("variant", choices=VARIANTS)
    parser.add_argument("--cpu", action="store_true", help="time it against this tree's planting instead of gating it")
    parser.add_argument("--robot", default="h1", choices=("g1", "h1"))
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--cut", metavar="START:END", help="the G1 gait of the walk cut there instead")
    parser.add_argument("--period", type=float, default=0.005, help="--cut's control period, s")
    args = parser.parse_args()
    if args.cpu:
        return cpu(args.variant, args.robot, args.runs)
    if args.cut:
        return cut(args.variant, args.cut, args.period)
    os.environ[VARIANT_ENV] = args.variant  # the gate's processes are spawned: they import this file again
    import h1_cut_check
    sys.argv = [sys.argv[0]]
    h1_cut_check.main()


if __name__ == "__main__":
    main()
