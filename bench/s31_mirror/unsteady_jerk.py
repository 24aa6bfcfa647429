"""The G1 walk's joint jerk with avoidance on and the steady room off (STEADY_ROOM False: the ablation
tests/core/test_collision.py::test_room_made_is_steady_in_time_on_the_g1_walk holds above 10x the off bake's),
steady, and off; with the pairs' postures drawn in URDF order (--urdf-pairs) or the clearance's capsules in
index order (--index-clearing), the orders before session 31.

    ROBOT_RETARGET_CACHE= OMP_NUM_THREADS=1 .venv/bin/python bench/s31_mirror/unsteady_jerk.py [--urdf-pairs] [--index-clearing]
"""
from pathlib import Path
import sys
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import dataclasses
import numpy as np
from core.model.kinematics import KinematicTree
from core.model.urdf import parse_urdf
from core.motion.bvh import load_bvh
from core.retarget.automap import auto_map
from core.retarget.pipeline import retarget
import core.chains.separation as separation
import core.collision.pairs as pairs
import core.collision.clearance as clearance

if "--urdf-pairs" in sys.argv:
    pairs.canonical_joints = lambda tree, decimals=6: np.arange(tree.dof)
if "--index-clearing" in sys.argv:
    clearance._clearing_order = lambda tree, zero, model, kin, capsules, decimals=6: np.array(sorted(capsules))
R = Path(__file__).resolve().parents[2]
walk = load_bvh(R / "data/motion/cmu_131_01_walk_m.bvh").to_source_motion()
tree = KinematicTree(parse_urdf(str(R / "data/robots/g1/unitree_g1_29dof.urdf")))
out = {}
for name, avoid, steady in (("off", False, True), ("steady", True, True), ("unsteady", True, False)):
    separation.STEADY_ROOM = steady
    m = auto_map(walk, tree)
    m.settings = dataclasses.replace(m.settings, avoid_self_collision=avoid)
    r = retarget(walk, tree, m, contacts="auto").report
    out[name] = r["jerk_after"]
    print(f"{name:9s} jerk {r['jerk_after']:8.0f}  limbs {r['limb_direction_error_deg']:.3f}  colliding "
          f"{r['self_collision_pct']:.2f} %", flush=True)
print(f"unsteady / off {out['unsteady'] / out['off']:.2f}, steady / off {out['steady'] / out['off']:.2f}")
