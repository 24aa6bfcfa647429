"""The G1 walk and the mirrored walk, avoidance on: each limb's direction error against its partner's in the
mirrored bake (deg; the mirror test's second check, tests/core/test_invariance.py), and |q|'s gap (rad).

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 .venv/bin/python bench/s31_mirror/mirror_limbs.py
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
from tests import variants as V

R = Path(__file__).resolve().parents[2]
walk = load_bvh(R / "data/motion/cmu_131_01_walk_m.bvh").to_source_motion()
tree = KinematicTree(parse_urdf(str(R / "data/robots/g1/unitree_g1_29dof.urdf")))


def other(name):
    return name.replace("left", "\0").replace("right", "left").replace("\0", "right")


bakes = []
for motion in (walk, V.mirrored_motion(walk)):
    m = auto_map(motion, tree)
    m.settings = dataclasses.replace(m.settings, avoid_self_collision=True)
    bakes.append(retarget(motion, tree, m, contacts="auto"))
names = bakes[0].joint_names
partner = [names.index(other(n)) for n in names]
d = np.abs(np.abs(bakes[1].q[:, partner]) - np.abs(bakes[0].q))
print(f"|q| gap max {d.max():.3f} rad, rms {np.sqrt((d ** 2).mean()):.4f}")
errors = [b.report["limb_direction_error_by_limb"] for b in bakes]
for limb, value in errors[0].items():
    print(f"  {limb:16s} walk {value:.3f}  mirrored's {other(limb):16s} {errors[1][other(limb)]:.3f}  "
          f"gap {errors[1][other(limb)] - value:+.3f} deg")
print("limbs", round(bakes[0].report["limb_direction_error_deg"], 3), round(bakes[1].report["limb_direction_error_deg"], 3))
