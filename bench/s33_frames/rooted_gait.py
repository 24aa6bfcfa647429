"""The H1 walk's gait (tests/core/test_gait.py) against the H1 rooted at its torso's: the plan's inputs
and outputs (make_plan) the two gaits hand on, then the feet / torso and joints apart.

    OMP_NUM_THREADS=1 ROBOT_RETARGET_CACHE=DIR .venv/bin/python bench/s33_frames/rooted_gait.py REPO [--off]
"""
import sys, dataclasses
sys.path.insert(0, sys.argv[1])
import numpy as np
from pathlib import Path
import core.balance.gait as gait
from core.model.kinematics import KinematicTree
from core.model.urdf import parse_urdf
from core.motion.bvh import load_bvh
from core.retarget import auto_map
from tests.robot_variants import rooted_at
ROOT = Path(sys.argv[1])
walk = load_bvh(ROOT / "data/motion/cmu_131_01_walk_m.bvh").to_source_motion()
robot = parse_urdf(ROOT / "tests/data/robots/unitree_h1_19dof.urdf")
off = "--off" in sys.argv
seen = []
orig = gait.make_plan
def rec(tree, mapping, bake, flags, times, *a, **k):
    plan = orig(tree, mapping, bake, flags, times, *a, **k)
    person = a[6] if len(a) > 6 else k.get("person")
    seen.append(dict(bq=bake.q.copy(), bpos=bake.root_position.copy(), brot=bake.root_rotation.copy(),
                     pq=None if person is None else person.q.copy(), ppos=None if person is None else person.root_position.copy(),
                     root_rot=plan.root_rot.copy(), height=plan.height.copy(), q=plan.q.copy(), target=plan.target.copy(),
                     flags={s: v.copy() for s, v in flags.feet.items()} if hasattr(flags, "feet") else None))
    return plan
gait.make_plan = rec
trees, results = [KinematicTree(robot), KinematicTree(rooted_at(robot, "torso_link"))], []
for t in trees:
    m = auto_map(walk, t)
    if off: m.settings = dataclasses.replace(m.settings, avoid_self_collision=False)
    results.append(gait.generate_gait(walk, t, m))
a, b = seen
for k in a:
    if k == "flags":
        print("flags equal", all(np.array_equal(a[k][s], b[k][s]) for s in a[k])); continue
    if a[k] is None: print(k, "None"); continue
    print(f"{k:9s} max diff {np.abs(a[k] - b[k]).max():.3e}")
from core.model.transforms import pose_matrices
poses = [pose_matrices(r.root_rotation, r.root_position) for r in results]
for name in ("left_ankle_link", "right_ankle_link", "torso_link"):
    here, there = (t.link_transform(r.q, t.link_index(name), p)[:, :3, 3] for t, r, p in zip(trees, results, poses))
    d = np.abs(here - there).max(axis=1)
    print(f"{name:16s} max {d.max() * 1000:.4f} mm at sample {int(d.argmax())}, median {np.median(d) * 1000:.5f} mm")
for n in trees[0].joint_names:
    d = np.abs(results[1].q[:, trees[1].joint_names.index(n)] - results[0].q[:, trees[0].joint_names.index(n)])
    print(f"  {n:28s} max {d.max():.2e} median {np.median(d):.1e}")
