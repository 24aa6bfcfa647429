#!/usr/bin/env python3
"""Planted feet: the CMU walk and hop onto the G1 and the H1, with contacts and without.

For each pair it bakes twice through core.retarget.pipeline (contacts "off", then
"auto": detected from the clip) and prints the report's foot figures against
the targets of issue 6, the leg chains' tip-direction error of both bakes,
and the time. Both bakes are measured against the same detected contacts.

    .venv/bin/python bench/bench_contacts.py [--robot g1|h1] [--clip walk|hop]
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[var] = "1"

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from core.retarget.automap import auto_map  # noqa: E402
from core.motion.bvh import load_bvh  # noqa: E402
from core.model.kinematics import KinematicTree  # noqa: E402
from core.retarget.pipeline import retarget  # noqa: E402
from core.model.urdf import parse_urdf  # noqa: E402

ROBOTS = {"g1": ROOT / "data/robots/g1/unitree_g1_29dof.urdf", "h1": ROOT / "tests/data/robots/unitree_h1_19dof.urdf"}
CLIPS = {"walk": ROOT / "data/motion/cmu_131_01_walk_m.bvh", "hop": ROOT / "tests/data/motion/cmu_131_03_hop.bvh"}
# issue 6: (report key, target, True when the value must stay below the target)
TARGETS = [("foot_slide_pct", 5.0, True), ("foot_slide_mean_m_s", 0.02, True),
           ("ground_penetration_pct", 0.0, True), ("contact_preserved_pct", 95.0, False)]
MAX_TIP_GROWTH_DEG = 1.0


def _legs_tip_error(report: dict) -> dict[str, float]:
    return {c["name"]: c["tip_direction_error_deg"] for c in report["chains"] if c["name"].endswith("_leg")}


def _line(report: dict) -> str:
    return "  ".join(f"{key} {report[key]:.3f}" for key, _, _ in TARGETS)


def bench(robot: str, clip: str) -> bool:
    """Print one robot/clip pair; True when every target is met."""
    tree = KinematicTree(parse_urdf(ROBOTS[robot]))
    motion = load_bvh(CLIPS[clip]).to_source_motion()
    mapping = auto_map(motion, tree)
    started = time.perf_counter()
    plain = retarget(motion, tree, mapping, contacts="off").report
    middle = time.perf_counter()
    planted = retarget(motion, tree, mapping, contacts="auto").report
    done = time.perf_counter()
    print(f"{clip} ({planted['frames']} frames) onto {robot}: off {middle - started:.2f} s, "
          f"contacts {done - middle:.2f} s")
    print(f"  off:      {_line(plain)}")
    print(f"  contacts: {_line(planted)}")
    ok = True
    for key, target, below in TARGETS:
        met = planted[key] <= target if below else planted[key] >= target
        ok &= met
        print(f"    {key:<24} {planted[key]:8.3f}  target {'<=' if below else '>='} {target:g}"
              f"  {'ok' if met else 'MISSED'}")
    before, after = _legs_tip_error(plain), _legs_tip_error(planted)
    for name in before:
        growth = after[name] - before[name]
        ok &= growth <= MAX_TIP_GROWTH_DEG
        print(f"    {name:<10} tip-direction error {before[name]:.2f} -> {after[name]:.2f} deg "
              f"({growth:+.2f}, target <= +{MAX_TIP_GROWTH_DEG:g})  {'ok' if growth <= MAX_TIP_GROWTH_DEG else 'MISSED'}")
    for warning in planted["warnings"]:
        print(f"    warning: {warning}")
    return ok


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--robot", choices=list(ROBOTS), action="append")
    parser.add_argument("--clip", choices=list(CLIPS), action="append")
    args = parser.parse_args()
    results = [bench(robot, clip) for robot in args.robot or list(ROBOTS) for clip in args.clip or list(CLIPS)]
    print(f"{sum(results)} of {len(results)} robot/clip pairs meet every target")


if __name__ == "__main__":
    main()
