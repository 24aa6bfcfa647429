"""What clearance.SWIVEL (the elbows swivelled out before the arms' solve, on) gains on the G1 hop, per arm,
in one checkout: tests/core/test_clearance_swivel.py asks each arm 0.05 deg nearer the actor's.

    OMP_NUM_THREADS=1 ROBOT_RETARGET_CACHE=DIR .venv/bin/python bench/s33_frames/swivel_gain.py [REPO]
"""
from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

REPO = Path(sys.argv[1]).resolve() if len(sys.argv) > 1 else Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

import core.collision.clearance as clearance  # noqa: E402
from core.model.kinematics import KinematicTree  # noqa: E402
from core.model.urdf import parse_urdf  # noqa: E402
from core.motion.bvh import load_bvh  # noqa: E402
from core.retarget import auto_map, retarget  # noqa: E402

g1 = KinematicTree(parse_urdf(REPO / "data/robots/g1/unitree_g1_29dof.urdf"))
hop = load_bvh(REPO / "tests/data/motion/cmu_131_03_hop.bvh").to_source_motion()
reports = {}
for swivel in (True, False):
    clearance.SWIVEL = swivel
    mapping = auto_map(hop, g1)
    mapping.settings = replace(mapping.settings, avoid_self_collision=True)
    reports[swivel] = retarget(hop, g1, mapping, contacts="auto").report
for arm in ("left_arm", "right_arm"):
    on, off = (reports[s]["limb_direction_error_by_limb"][arm] for s in (True, False))
    print(f"{arm}: swivelled {on:.3f}, plain {off:.3f}, gain {off - on:+.3f} deg")
print(f"jerk {reports[True]['jerk_after']:,.0f} / {reports[False]['jerk_after']:,.0f}, colliding "
      f"{reports[True]['self_collision_pct']} / {reports[False]['self_collision_pct']}")
