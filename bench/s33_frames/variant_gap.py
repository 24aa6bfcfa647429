"""The G1 hop's first 240 frames (tests/core/test_unseen_robots.py's hop240) baked on a G1 described
otherwise against the G1: the limbs and torso figures and the joints furthest apart (rad).

    OMP_NUM_THREADS=1 ROBOT_RETARGET_CACHE=DIR .venv/bin/python bench/s33_frames/variant_gap.py REPO \
        {arms,merged,continuous,mimic} [--off] [--still] [--g1-pairs]

REPO: the checkout that bakes (e.g. a clone with the default flip). arms: clavicles jointed at one
point (test_arms_jointed_at_one_point_start_at_their_shoulders); --off: avoidance off; --still: the
clavicles' limits +-1e-9 rad; --g1-pairs: the variant checks the G1's pairs only (allow / check).
"""
import sys, dataclasses, tempfile
sys.path.insert(0, sys.argv[1])
import numpy as np
from pathlib import Path
from core.model.kinematics import KinematicTree
from core.model.urdf import parse_urdf
from core.motion.bvh import load_bvh
from core.retarget import auto_map, retarget
from tests import robot_variants as RV
ROOT = Path(sys.argv[1])
G1 = ROOT / "data/robots/g1/unitree_g1_29dof.urdf"
clip = load_bvh(ROOT / "tests/data/motion/cmu_131_03_hop.bvh")
hop = dataclasses.replace(clip, motion=clip.motion[:360]).to_source_motion()
hop = dataclasses.replace(hop, heads=hop.heads[:240], tails=hop.tails[:240], root_rotation=hop.root_rotation[:240])
off = "--off" in sys.argv
CLAV = 1e-9 if "--still" in sys.argv else 0.5
def bake(tree):
    m = auto_map(hop, tree)
    if off: m.settings = dataclasses.replace(m.settings, avoid_self_collision=False)
    return retarget(hop, tree, m, contacts="auto")
g1 = KinematicTree(parse_urdf(G1)); base = bake(g1)
def arms(robot):
    from core.model.urdf import Joint, Link
    from core.model.transforms import invert_transform
    sternum = np.eye(4); sternum[:3, 3] = [0.0, 0.0, 0.25]
    links, joints = dict(robot.links), []
    for joint in robot.joints:
        if joint.name.endswith("shoulder_pitch_joint"):
            side = joint.name.split("_")[0]
            links[f"{side}_clavicle"] = Link(f"{side}_clavicle", [], [], None)
            joints.append(Joint(f"{side}_clavicle_joint", "revolute", "torso_link", f"{side}_clavicle", sternum.copy(),
                                np.array([1.0, 0.0, 0.0]), -CLAV, CLAV, 10.0, 10.0))
            joint = dataclasses.replace(joint, parent=f"{side}_clavicle", origin=invert_transform(sternum) @ joint.origin)
        joints.append(joint)
    return dataclasses.replace(robot, links=links, joints=joints)
make = {"arms": arms, "merged": RV.fixed_merged,
        "continuous": lambda r: RV.retyped(r, {"waist_yaw_joint": "continuous", "left_wrist_roll_joint": "continuous"}),
        "mimic": lambda r: RV.mimicking(r, "right_wrist_yaw_joint", "right_wrist_roll_joint", 0.5)}[sys.argv[2]]
with tempfile.TemporaryDirectory() as d:
    tree = KinematicTree(parse_urdf(RV.write_urdf(make(g1.robot), Path(d) / "v.urdf")))
if "--g1-pairs" in sys.argv:  # the variant checks the G1's pairs only
    from core.collision import collision_pairs
    pa, pb = collision_pairs(g1), collision_pairs(tree)
    na = {tuple(sorted(pa.names(i))) for i in range(len(pa.bodies))}
    extra = [list(p) for p in {tuple(sorted(pb.names(i))) for i in range(len(pb.bodies))} - na]
    missing = [list(p) for p in na - {tuple(sorted(pb.names(i))) for i in range(len(pb.bodies))}]
    print("allowed", len(extra), "checked", len(missing))
    m = auto_map(hop, tree); m.allow_collision = extra; m.check_collision = missing
    res = retarget(hop, tree, m, contacts="auto")
else:
    res = bake(tree)
print("torso", base.report["torso_orientation_error_deg"], res.report["torso_orientation_error_deg"])
if tree.joint_names != g1.joint_names: print("extra joints", [n for n in tree.joint_names if n not in g1.joint_names], "clavicle max", [float(np.abs(res.q[:, tree.joint_names.index(n)]).max()) for n in tree.joint_names if "clavicle" in n])
print("limbs", base.report["limb_direction_error_deg"], res.report["limb_direction_error_deg"], "colliding", base.report["self_collision_pct"], res.report["self_collision_pct"])
gaps = []
for n in tree.joint_names:
    if n in g1.joint_names:
        a = res.q[:, tree.joint_names.index(n)]; b = base.q[:, g1.joint_names.index(n)]
        d = np.abs(a - b); gaps.append((d.max(), n, int(d.argmax()), int((d > 1e-3).sum())))
for g in sorted(gaps, reverse=True)[:8]: print(f"{g[1]:28s} {g[0]:.4f} at frame {g[2]}  frames>1e-3: {g[3]}")
