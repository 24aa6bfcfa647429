"""How far keep_apart's answer moves when its input joints move by a rounding's worth: the G1 walk (avoidance on)
made room for from q and from q + noise (uniform, +-EPS rad), max joint gap (rad) and the frames over 1e-3 rad.

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 .venv/bin/python bench/s31_mirror/room_sensitivity.py [hop] [EPS] \
        [--seed N] [--set core.chains.separation.ONE_ANSWER_PER_RUN=False ...]

--seed N: another draw of the noise (default 0), to tell a rare flip from a typical one.
"""
from pathlib import Path
import sys
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import dataclasses
from core.model.kinematics import KinematicTree
from core.model.urdf import parse_urdf
from core.motion.bvh import load_bvh
from core.retarget.automap import auto_map
from core.retarget import pipeline
from bench.knobs import apply_sets
from bench.noise_gap import noisy_input, print_gap

R = Path(__file__).resolve().parents[2]
path = R / ("tests/data/motion/cmu_131_03_hop.bvh" if "hop" in sys.argv else "data/motion/cmu_131_01_walk_m.bvh")
clip = path.name
seed = int(sys.argv[sys.argv.index("--seed") + 1]) if "--seed" in sys.argv else 0
eps = float(next((a for k, a in enumerate(sys.argv[1:]) if a[0].isdigit() and sys.argv[k] != "--seed"), "1e-12"))
apply_sets(sys.argv)
motion = load_bvh(path).to_source_motion()
tree = KinematicTree(parse_urdf(str(R / "data/robots/g1/unitree_g1_29dof.urdf")))
_keep = pipeline.keep_apart


def keep(tree, plans, q, root, *a, **k):
    base = q.copy()
    _keep(tree, plans, q, root, *a, **k)
    noisy = noisy_input(base, eps, seed)
    _keep(tree, plans, noisy, root, *a, **k)
    print_gap(clip, eps, tree.joint_names, q, noisy)


pipeline.keep_apart = keep
m = auto_map(motion, tree)
m.settings = dataclasses.replace(m.settings, avoid_self_collision=True)
pipeline.retarget(motion, tree, m, contacts="auto")
