"""generate_gait of the walk onto the G1 and the H1, avoidance off / on: CPU s (least of 2, interleaved), warnings
added, self_collision_pct of the gait.

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 .venv/bin/python bench/s31_default/gait_ab.py
"""
from pathlib import Path
import sys, dataclasses, time
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from core.balance.gait import generate_gait
from core.model.kinematics import KinematicTree
from core.model.urdf import parse_urdf
from core.motion.bvh import load_bvh
from core.retarget.automap import auto_map
R = str(Path(__file__).resolve().parents[2]) + "/"
motion = load_bvh(R + "data/motion/cmu_131_01_walk_m.bvh").to_source_motion()
for robot in ("data/robots/g1/unitree_g1_29dof.urdf", "tests/data/robots/unitree_h1_19dof.urdf"):
    tree = KinematicTree(parse_urdf(R + robot)); best, rep = {}, {}
    for _ in range(2):
        for avoid in (False, True):
            m = auto_map(motion, tree); m.settings = dataclasses.replace(m.settings, avoid_self_collision=avoid)
            t = time.process_time(); g = generate_gait(motion, tree, m); t = time.process_time() - t
            best[avoid] = min(best.get(avoid, 1e9), t); rep[avoid] = g.report
    new = [w for w in rep[True]["warnings"] if w not in rep[False]["warnings"]]
    print(robot.split("/")[-1], {k: round(v, 2) for k, v in best.items()}, "pct on:", rep[True].get("self_collision_pct"),
          "new warnings:", new, flush=True)
