"""The G1 walk baked (planted, avoidance on / off) on the G1 and on the same URDF with its parts listed in another
order (tests/robot_variants.reordered) or numbered link names: max / RMS joint gap (rad).

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 .venv/bin/python bench/s31_default/order_gap.py
"""
from pathlib import Path
import sys
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import dataclasses, tempfile
from pathlib import Path
import numpy as np
from core.model.kinematics import KinematicTree
from core.model.urdf import parse_urdf
from core.motion.bvh import load_bvh
from core.retarget.automap import auto_map
from core.retarget.pipeline import retarget
from tests import robot_variants as RV
R = str(Path(__file__).resolve().parents[2]) + "/"
g1 = parse_urdf(R + "data/robots/g1/unitree_g1_29dof.urdf")
motion = load_bvh(R + "data/motion/cmu_131_01_walk_m.bvh").to_source_motion()
base = KinematicTree(g1)
tmp = Path(tempfile.mkdtemp())
for name, robot in (("reordered", RV.reordered(g1)), ("numbered", RV.numbered(g1))):
    tree = KinematicTree(parse_urdf(RV.write_urdf(robot, tmp / f"{name}.urdf")))
    for avoid in (False, True):
        out = []
        for t in (base, tree):
            m = auto_map(motion, t); m.settings = dataclasses.replace(m.settings, avoid_self_collision=avoid)
            out.append(retarget(motion, t, m, contacts="auto"))
        if name == "numbered":
            cols = list(range(base.dof))  # numbered keeps the joint order? compare by position in tree order
        else:
            cols = [tree.joint_names.index(n) for n in base.joint_names]
        d = np.abs(out[1].q[:, cols] - out[0].q)
        print(name, "avoid" if avoid else "off", f"max {d.max():.4f} rad ({base.joint_names[int(d.max(0).argmax())]}), rms {np.sqrt((d**2).mean()):.4f}", flush=True)
