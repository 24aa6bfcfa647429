"""The figures two off-by-default options' tests ask of the G1 walk (tests/core/test_collision.py), in one
checkout: the unsteady room's jerk over the steady room's (separation.STEADY_ROOM False; the test asks
> 4) and the polish's (separation.POLISH_ROOM, plain and descended) limbs gain and speed ratio, both on
arms solved to the actor's own targets (pipeline.CLEAR_TARGETS False), as the tests bake them.

    OMP_NUM_THREADS=1 ROBOT_RETARGET_CACHE=DIR .venv/bin/python bench/s33_frames/off_options.py [REPO]

REPO: the checkout whose core/ bakes (default this one).
"""
from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

REPO = Path(sys.argv[1]).resolve() if len(sys.argv) > 1 else Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
DATA = Path(__file__).resolve().parents[2]

import core.chains.separation as separation  # noqa: E402
import core.retarget.pipeline as pipeline  # noqa: E402
from core.model.kinematics import KinematicTree  # noqa: E402
from core.model.urdf import parse_urdf  # noqa: E402
from core.motion.bvh import load_bvh  # noqa: E402
from core.retarget import auto_map, retarget  # noqa: E402

g1 = KinematicTree(parse_urdf(DATA / "data/robots/g1/unitree_g1_29dof.urdf"))
walk = load_bvh(DATA / "data/motion/cmu_131_01_walk_m.bvh").to_source_motion()


def bake(avoid: bool) -> dict:
    mapping = auto_map(walk, g1)
    mapping.settings = replace(mapping.settings, avoid_self_collision=avoid)
    return retarget(walk, g1, mapping, contacts="auto").report


def figures(report: dict) -> str:
    return (f"limbs {report['limb_direction_error_deg']:.3f} jerk {report['jerk_after']:,.0f} speed "
            f"{report['max_speed_ratio']:.4f} colliding {report['self_collision_pct']:.2f} %")


off, steady = bake(False), bake(True)
separation.STEADY_ROOM = False
unsteady = bake(True)
separation.STEADY_ROOM = True
print(f"off      {figures(off)}\nsteady   {figures(steady)}\nunsteady {figures(unsteady)}"
      f"  -> unsteady / steady jerk {unsteady['jerk_after'] / steady['jerk_after']:.2f} (test: > 4)")
pipeline.CLEAR_TARGETS = False
base = bake(True)
print(f"own targets steady {figures(base)}")
separation.POLISH_ROOM = True
for descent, gain in ((False, 0.05), (True, 0.15)):
    separation.POLISH_DESCENT = descent
    polished = bake(True)
    print(f"polish descent={descent} {figures(polished)}  gain "
          f"{base['limb_direction_error_deg'] - polished['limb_direction_error_deg']:.3f} (test: > {gain})")
