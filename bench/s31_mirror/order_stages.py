"""Where the G1 walk baked on the G1 and on its URDF listed in another order (tests/robot_variants.reordered)
part with avoidance on: each stage's joints (and each room group's) compared by name, max gap (rad).

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 .venv/bin/python bench/s31_mirror/order_stages.py [turned|numbered]

turned: every link's frame but the root's turned at random too (tests/core/test_unseen_gait.py's turns);
numbered: and its parts named link0.. / joint0.. (compared through the names' map).
"""
from pathlib import Path
import sys
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import dataclasses
import tempfile
import numpy as np
from core.model.kinematics import KinematicTree
from core.model.urdf import parse_urdf
from core.motion.bvh import load_bvh
from core.retarget.automap import auto_map
from core.retarget import pipeline
from tests import robot_variants as RV

R = Path(__file__).resolve().parents[2]
g1 = parse_urdf(str(R / "data/robots/g1/unitree_g1_29dof.urdf"))
walk = load_bvh(R / "data/motion/cmu_131_01_walk_m.bvh").to_source_motion()
from stage_hooks import stages  # noqa: E402 (records each stage)
runs = []
tmp = Path(tempfile.mkdtemp())
variant = RV.reordered(g1)
names = {n: n for n in list(g1.links) + [j.name for j in g1.joints]}
if "turned" in sys.argv or "numbered" in sys.argv:
    from scipy.spatial.transform import Rotation
    rng = np.random.default_rng(13)
    turns = {n: Rotation.from_rotvec(rng.normal(size=3)).as_matrix() for n in g1.links if n != g1.root_link}
    variant = RV.reordered(RV.frames_turned(g1, turns), seed=13)
if "numbered" in sys.argv:
    names = {n: f"link{k}" for k, n in enumerate(variant.links)}
    names.update({j.name: f"joint{k}" for k, j in enumerate(variant.joints)})
    variant = RV.renamed_robot(variant, names.__getitem__)
for robot in (g1, variant):
    tree = KinematicTree(parse_urdf(RV.write_urdf(robot, tmp / f"{len(runs)}.urdf")))
    m = auto_map(walk, tree)
    m.settings = dataclasses.replace(m.settings, avoid_self_collision=True)
    stages.clear()
    out = pipeline.retarget(walk, tree, m, contacts="auto")
    runs.append((list(stages), tree))
(s0, t0), (s1, t1) = runs
cols = [t1.joint_names.index(names[n]) for n in t0.joint_names]
for (stage, a), (stage1, b) in zip(s0, s1):
    d = np.abs(b[:, cols] - a)
    f, j = np.unravel_index(d.argmax(), d.shape)
    print(f"{stage:26s}/{stage1.strip():26s} max {d.max():.2e} rad ({t0.joint_names[j]}, frame {f}), "
          f"frames over 1e-3: {(d.max(1) > 1e-3).sum()}")
