"""Is the G1's collision model mirror-symmetric (left_X's capsules = right_X's with y negated, in their link
frames) and the same for the URDF's parts reordered (tests/robot_variants.reordered)? And the pair lists?

    OMP_NUM_THREADS=1 .venv/bin/python bench/s31_mirror/proxy_symmetry.py
"""
from pathlib import Path
import sys
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import tempfile
import numpy as np
from core.model.kinematics import KinematicTree
from core.model.urdf import parse_urdf
from core.collision import collision_pairs
from core.collision.proxies import collision_model
from tests import robot_variants as RV

R = Path(__file__).resolve().parents[2]
g1 = parse_urdf(str(R / "data/robots/g1/unitree_g1_29dof.urdf"))
tree = KinematicTree(g1)
model = collision_model(tree)
M = np.diag([1.0, -1.0, 1.0])


def caps(model, name):
    b = model.body_index(name)
    rows = np.flatnonzero(model.capsule_body == b)
    return model.ends[rows], model.radius[rows]


def other(name):
    return name.replace("left", "@").replace("right", "left").replace("@", "right")


print("bodies", len(model.body_names), "capsules", len(model.radius))
for name in model.body_names:
    if not name.startswith("left"):
        continue
    (ea, ra), (eb, rb) = caps(model, name), caps(model, other(name))
    if len(ra) != len(rb):
        print(f"{name}: {len(ra)} vs {len(rb)} capsules")
        continue
    # best match of each mirrored capsule (either end order)
    worst = 0.0
    for e, r in zip(ea @ M, ra):
        d = [min(np.abs(e - f).max(), np.abs(e[::-1] - f).max()) + abs(r - s) for f, s in zip(eb, rb)]
        worst = max(worst, min(d))
    print(f"{name:28s} {len(ra)} capsules, mirror gap {1000 * worst:.2f} mm")

pairs = collision_pairs(tree)
names = {tuple(sorted(pairs.names(k))) for k in range(len(pairs.bodies))}
mirrored = {tuple(sorted((other(a), other(b)))) for a, b in names}
print("pairs", len(names), "not mirrored:", sorted(names - mirrored))

tmp = Path(tempfile.mkdtemp())
re = KinematicTree(parse_urdf(RV.write_urdf(RV.reordered(g1), tmp / "re.urdf")))
rm = collision_model(re)
print("reordered bodies", sorted(rm.body_names) == sorted(model.body_names))
worst = 0.0
for name in model.body_names:
    (ea, ra), (eb, rb) = caps(model, name), caps(rm, name)
    if len(ra) != len(rb) or np.abs(ea - eb).max() > 1e-9 or np.abs(ra - rb).max() > 1e-9:
        print("  differs:", name, len(ra), len(rb),
              np.abs(ea - eb).max() if ea.shape == eb.shape else "")
rp = collision_pairs(re)
rnames = {tuple(sorted(rp.names(k))) for k in range(len(rp.bodies))}
print("reordered pairs", len(rnames), "missing", sorted(names - rnames), "extra", sorted(rnames - names))

# every link's frame turned (tests/core/test_unseen_gait.py's turns), listed in another order: the same capsules
# in the world's zero pose?
from scipy.spatial.transform import Rotation
rng = np.random.default_rng(13)
turns = {n: Rotation.from_rotvec(rng.normal(size=3)).as_matrix() for n in g1.links if n != g1.root_link}
tt = KinematicTree(parse_urdf(RV.write_urdf(RV.reordered(RV.frames_turned(g1, turns), seed=13), tmp / "turned.urdf")))
tm = collision_model(tt)
z0, z1 = tree.zero_pose(), tt.zero_pose()
for name in model.body_names:
    (ea, ra), (eb, rb) = caps(model, name), caps(tm, name)
    pa, pb = z0[tree.link_index(name)], z1[tt.link_index(name)]
    wa = ea @ pa[:3, :3].T + pa[:3, 3]
    wb = eb @ pb[:3, :3].T + pb[:3, 3]
    gap = np.inf if len(ra) != len(rb) else max(
        min(np.abs(a - b).max(), np.abs(a[::-1] - b).max()) + abs(r - s) for a, r, b, s in zip(wa, ra, wb, rb))
    if gap > 1e-6:
        print(f"turned {name:28s} {len(ra)} / {len(rb)} capsules, gap {1000 * gap:.2f} mm")
tp = collision_pairs(tt)
tnames = {tuple(sorted(tp.names(k))) for k in range(len(tp.bodies))}
print("turned pairs", len(tnames), "missing", sorted(names - tnames), "extra", sorted(tnames - names))
