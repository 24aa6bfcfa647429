#!/usr/bin/env python3
"""The H1's gait on clips that stand still around the walk (issue 12): the bundled walk, the 10 s clip
(bench/bench_gait.py's: the walk with its first and last frames held, on the walk's own contacts) and
the walk held 2.4 s on one leg in mid-swing (tests/core/test_gait.py's held_walk_gait, a dance pose):
the report's balance figures, then each phase's ZMP error, margin, slide and tilt
(bench/h1_gait_phases.py) and each stance's slide and ankle (bench/h1_stances.py). The 10 s clip walks the
walk without its holds and stands over them (core.balance.holds): its phases and stances are that walk's,
timed from the walk's start; the first line's figures are the whole clip's.

    .venv/bin/python bench/h1_held.py [--clip walk|held|hold|all] [--robot h1|g1] [--turn-back]

--turn-back: each double support's yaw turned back with the plan's heading (CorrectionSettings.turn_back_yaw).

About 10-12 s of CPU per clip on the H1, one BLAS thread.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):  # one core: before numpy loads BLAS
    os.environ[var] = "1"

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import clips  # noqa: E402
import core.balance.gait as gait  # noqa: E402
from bench_gait import held, held_contacts  # noqa: E402
from core.balance.correction import CorrectionSettings  # noqa: E402
from core.feet.contacts import detect_contacts  # noqa: E402
from core.model.kinematics import KinematicTree  # noqa: E402
from core.model.urdf import parse_urdf  # noqa: E402
from core.retarget import auto_map  # noqa: E402
from h1_gait_phases import Run, phase_table  # noqa: E402
from h1_stances import stances  # noqa: E402

FIGURES = (("multibody ZMP RMS", "multibody_zmp_rms_error_m", 1000, "mm"),
           ("worst margin", "min_support_margin_m", 1000, "mm"),
           ("outside", "zmp_outside_support_pct", 1, "%"),
           ("stance slide", "stance_slide_m", 1000, "mm"),
           ("stance tilt", "stance_tilt_deg", 1, "deg"))


def clip_and_contacts(name: str, tree: KinematicTree):
    walk = clips.load(clips.WALK)
    if name == "held":
        ten = held(walk, 10.0)
        return ten, held_contacts(detect_contacts(walk, auto_map(walk, tree)), ten.frames)
    if name == "hold":
        k, hold = int(4.5 * walk.fps), int(2.4 * walk.fps)
        return walk.at_frames(np.r_[np.arange(k), np.full(hold, k), np.arange(k, walk.frames)], "walk_hold"), "auto"
    return walk, "auto"


def run(name: str, robot: str, turn_back: bool = False) -> None:
    tree = KinematicTree(parse_urdf(clips.ROBOTS[robot]))
    clip, contacts = clip_and_contacts(name, tree)
    seen = {}
    balance = gait._balance

    def keep(tree, plan, *rest):  # the plan the generator balanced, for the phase tables
        seen["plan"], seen["balanced"] = plan, balance(tree, plan, *rest)
        return seen["balanced"]

    gait._balance = keep
    try:
        started = time.process_time()
        settings = gait.GaitSettings(correction=CorrectionSettings(turn_back_yaw=turn_back))
        report = gait.generate_gait(clip, tree, auto_map(clip, tree), contacts=contacts, settings=settings).report
        cpu = time.process_time() - started
    finally:
        gait._balance = balance
    print(f"{robot} {name}{' (yaw turned back)' if turn_back else ''} ({report['duration_s']:.1f} s, {cpu:.1f} s CPU, {report['steps']} steps): " + ", ".join(
        f"{label} {scale * report[key]:.2f} {unit}" for label, key, scale, unit in FIGURES))
    phase_table(Run(tree, seen["plan"], seen["balanced"], report))
    stances(tree, seen["plan"], seen["balanced"])


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clip", default="all", choices=["walk", "held", "hold", "all"])
    parser.add_argument("--robot", default="h1", choices=["h1", "g1"])
    parser.add_argument("--turn-back", action="store_true", help="CorrectionSettings(turn_back_yaw=True)")
    args = parser.parse_args()
    for name in (["walk", "held", "hold"] if args.clip == "all" else [args.clip]):
        run(name, args.robot, args.turn_back)
