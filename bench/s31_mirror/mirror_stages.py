"""Where the G1 walk and its mirror image part with avoidance on: each stage's joints of the mirrored bake against
the bake's own partner joints (|q| gap, rad; the off bake's is 1.4e-6 at the end).

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 .venv/bin/python bench/s31_mirror/mirror_stages.py [g1|h1] [--symmetric]

--symmetric: the collision model's right side replaced by the left's mirror image and the pair list closed
under the mirror (the trunk's own proxies stay as fitted, a few mm off the mirror).
--mirrored-model: the mirrored walk baked on the G1 whose every proxy is its partner's mirror image (the trunk's
its own), pairs mirrored: any gap left is the processing's (an order), not the geometry's.
"""
from pathlib import Path
import sys
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import dataclasses
import numpy as np
from core.model.kinematics import KinematicTree
from core.model.urdf import parse_urdf
from core.motion.bvh import load_bvh
from core.retarget.automap import auto_map
from core.retarget import pipeline
from tests import variants as V

R = Path(__file__).resolve().parents[2]
robot = sys.argv[1] if len(sys.argv) > 1 and not sys.argv[1].startswith("-") else "g1"
URDF = R / ("data/robots/g1/unitree_g1_29dof.urdf" if robot == "g1" else "tests/data/robots/unitree_h1_19dof.urdf")
walk = load_bvh(R / "data/motion/cmu_131_01_walk_m.bvh").to_source_motion()


def other(name):
    return name.replace("left", "\0").replace("right", "left").replace("\0", "right")


def symmetrise(tree):
    """The tree's collision model with each right body's capsules the left partner's mirrored, pairs closed."""
    from core.collision.proxies import collision_model
    from core.collision import pairs as P
    model = collision_model(tree)
    M = np.array([1.0, -1.0, 1.0])
    for b, name in enumerate(model.body_names):
        if not name.startswith("right"):
            continue
        src = np.flatnonzero(model.capsule_body == model.body_index(other(name)))
        dst = np.flatnonzero(model.capsule_body == b)
        assert len(src) == len(dst), name
        model.ends[dst] = model.ends[src] * M
        model.radius[dst] = model.radius[src]
    base = P.collision_pairs(tree)
    names = {tuple(sorted(base.names(k))) for k in range(len(base.bodies))}
    names |= {tuple(sorted((other(a), other(b)))) for a, b in names}
    bodies = np.array(sorted({tuple(sorted((model.body_index(a), model.body_index(b)))) for a, b in names}))
    tree._collision_pairs = P._pairs(model, bodies)


def mirror_model(tree):
    """The tree's collision model and pairs mirrored (y -> -y, left <-> right)."""
    from core.collision.proxies import collision_model
    from core.collision import pairs as P
    model = collision_model(tree)
    base = P.collision_pairs(tree)
    M = np.array([1.0, -1.0, 1.0])
    ends, radius = model.ends.copy(), model.radius.copy()
    for b, name in enumerate(model.body_names):
        src = np.flatnonzero(model.capsule_body == model.body_index(other(name)))
        dst = np.flatnonzero(model.capsule_body == b)
        assert len(src) == len(dst), name
        ends[dst], radius[dst] = model.ends[src] * M, model.radius[src]
    names = [tuple(sorted((other(a), other(b)))) for a, b in (base.names(k) for k in range(len(base.bodies)))]
    bodies = np.array(sorted({tuple(sorted((model.body_index(a), model.body_index(b)))) for a, b in names}))
    import copy
    mirrored = copy.copy(model)
    mirrored.ends, mirrored.radius, mirrored._spheres = ends, radius, None
    tree._collision_model = mirrored
    tree._collision_pairs = P._pairs(mirrored, bodies)


from stage_hooks import stages  # noqa: E402 (records each stage)
_groups = pipeline.room_groups
SWAP = [False]


def groups(tree, plans):
    """--swap: on the mirrored bake, the arm groups make room right before left."""
    out = _groups(tree, plans)
    arms = [k for k, g in enumerate(out) if g[0].mapping.role == "arm"]
    if SWAP[0] and len(arms) == 2:
        out[arms[0]], out[arms[1]] = out[arms[1]], out[arms[0]]
    return out


pipeline.room_groups = groups
runs = []
for avoid in (False, True):
    for motion in (walk, V.mirrored_motion(walk)):
        tree = KinematicTree(parse_urdf(str(URDF)))
        if "--symmetric" in sys.argv:
            symmetrise(tree)
        if "--mirrored-model" in sys.argv and motion is not walk:
            mirror_model(tree)
        m = auto_map(motion, tree)
        m.settings = dataclasses.replace(m.settings, avoid_self_collision=avoid)
        stages.clear()
        SWAP[0] = "--swap" in sys.argv and motion is not walk
        out = pipeline.retarget(motion, tree, m, contacts="auto")
        runs.append((list(stages), out))
    names = runs[-1][1].joint_names
    partner = [names.index(other(n)) for n in names]
    print("avoid" if avoid else "off")
    for (stage, a), (stage1, b) in zip(runs[-2][0], runs[-1][0]):
        stage = stage if stage == stage1 else f"{stage}/{stage1.strip()}"
        d = np.abs(np.abs(b[:, partner]) - np.abs(a))
        f, j = np.unravel_index(d.argmax(), d.shape)
        print(f"  {stage:20s} max {d.max():.2e} rad ({names[j]}, frame {f}), rms {np.sqrt((d ** 2).mean()):.2e}, "
              f"frames over 1e-3: {(d.max(1) > 1e-3).sum()}")
