"""G1 walk/hop, avoidance on, planted: CPU s (least of 3, interleaved) and limbs with the separation's stride as is
(4 at 120 Hz) and every frame (_sample_every -> 1).

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 .venv/bin/python bench/s31_default/every_cost.py
"""
from pathlib import Path
import sys, dataclasses, time
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from core.chains import separation
from core.model.kinematics import KinematicTree
from core.model.urdf import parse_urdf
from core.motion.bvh import load_bvh
from core.retarget.automap import auto_map
from core.retarget.pipeline import retarget
R = str(Path(__file__).resolve().parents[2]) + "/"
tree = KinematicTree(parse_urdf(R + "data/robots/g1/unitree_g1_29dof.urdf"))
keep = separation._sample_every
for clip in (R + "data/motion/cmu_131_01_walk_m.bvh", R + "tests/data/motion/cmu_131_03_hop.bvh"):
    motion = load_bvh(clip).to_source_motion(); mapping = auto_map(motion, tree)
    best, limbs, jerk = {}, {}, {}
    for _ in range(3):
        for name, fn in (("stride", keep), ("every", lambda fps, count: 1)):
            separation._sample_every = fn
            t = time.process_time(); r = retarget(motion, tree, mapping, contacts="auto"); t = time.process_time() - t
            best[name] = min(best.get(name, 1e9), t); limbs[name] = r.report["limb_direction_error_deg"]
            jerk[name] = r.report.get("jerk_after"); pct = r.report["self_collision_pct"]
    separation._sample_every = keep
    print(clip.split("/")[-1], {k: (round(best[k], 2), round(limbs[k], 3), jerk[k], pct) for k in best}, flush=True)
