"""Are the G1's fitted collision proxies the same bodies in the world whatever its links' frames?

The G1 with every link's frame but the root's turned at random (tests/core/test_unseen_gait.py's
turns, tests/robot_variants.frames_turned), fitted afresh (no disk cache); each body's capsules
posed in the zero pose and matched to the G1's. Prints per body the worst end / radius gap (m).

    ROBOT_RETARGET_CACHE= .venv/bin/python bench/s32_frames/probe.py [--steps] [--merged]

--steps: for each differing body, which stage differs (the whole hull's fit, the parts' split).
--merged: the G1 with its fixed links merged (tests/robot_variants.fixed_merged) instead.
--reordered: its links and joints listed in another order too (tests/core/test_unseen_gait.py's seed).
"""
from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("ROBOT_RETARGET_CACHE", "")
ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import numpy as np
from scipy.spatial.transform import Rotation

from core.collision import fit, parts
from core.collision.proxies import body_mesh, fit_model
from core.model.kinematics import KinematicTree
from core.model.urdf import parse_urdf
from tests import robot_variants as RV

G1 = ROOT / "data" / "robots" / "g1" / "unitree_g1_29dof.urdf"


def turns(robot) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(13)
    return {n: Rotation.from_rotvec(rng.normal(size=3)).as_matrix() for n in robot.links if n != robot.root_link}


def world_capsules(tree: KinematicTree, model) -> dict[str, list]:
    zero = tree.zero_pose()
    out: dict[str, list] = {}
    for row, body in enumerate(model.capsule_body):
        link = model.body_links[body]
        a, b = (zero[link][:3, :3] @ e + zero[link][:3, 3] for e in model.ends[row])
        out.setdefault(model.body_names[body], []).append((a, b, float(model.radius[row])))
    return out


def gap(caps: list, other: list) -> float:
    """The worst, over `caps`, of the least end-or-radius gap to a capsule of `other` (either end order)."""
    if len(caps) != len(other):
        return np.inf
    worst = 0.0
    for a, b, r in caps:
        best = min(max(min(max(np.linalg.norm(a - c), np.linalg.norm(b - d)),
                           max(np.linalg.norm(a - d), np.linalg.norm(b - c))), abs(r - s)) for c, d, s in other)
        worst = max(worst, best)
    return worst


def capsules_gap(one: list, two: list, turn: np.ndarray) -> float:
    """Capsules fitted in a link's frame (one) against those fitted in its turned frame (two), turned back."""
    return gap(one, [(turn @ a, turn @ b, r) for a, b, r in two])


def main() -> None:
    base = KinematicTree(parse_urdf(G1))
    with tempfile.TemporaryDirectory() as folder:
        if "--merged" in sys.argv:
            other = KinematicTree(parse_urdf(RV.write_urdf(RV.fixed_merged(base.robot), Path(folder) / "m.urdf")))
        else:
            turned = RV.frames_turned(base.robot, turns(base.robot))
            if "--reordered" in sys.argv:  # listed in another order too, as the gait test's
                turned = RV.reordered(turned, seed=13)
            other = KinematicTree(parse_urdf(RV.write_urdf(turned, Path(folder) / "t.urdf")))
        one, two = world_capsules(base, fit_model(base)), world_capsules(other, fit_model(other))
        print(f"{'body':32s} {'caps':>9s} {'worst gap m':>12s}")
        differ = []
        for name in sorted(set(one) | set(two)):
            g = gap(one.get(name, []), two.get(name, [])) if name in one and name in two else np.inf
            print(f"{name:32s} {len(one.get(name, [])):4d} {len(two.get(name, [])):4d} {g:12.3g}")
            if g > 1e-6:
                differ.append(name)
        print(f"{len(differ)} of {len(set(one) | set(two))} bodies differ by > 1e-6 m")
        if "--steps" in sys.argv:
            steps(base, other, differ)


def steps(base: KinematicTree, other: KinematicTree, names: list[str]) -> None:
    """Where each differing body's fit first differs: the whole hull's fit, the splits, the choice."""
    for name in names:
        i, j = base.link_index(name), other.link_index(name)
        m1, m2 = body_mesh(base, i), body_mesh(other, j)
        if m1 is None or m2 is None:
            print(name, "no mesh (solid shapes / trunk hull)")
            continue
        zero1, zero2 = base.zero_pose()[i], other.zero_pose()[j]
        turn = zero1[:3, :3].T @ zero2[:3, :3]  # the turned frame's axes in the G1 link's frame
        whole = capsules_gap(fit.fit_capsules(m1.points, m1.radii), fit.fit_capsules(m2.points, m2.radii), turn)
        s1, s2 = parts._splits(m1), parts._splits(m2)
        same_split = len(s1) == len(s2) and all(np.array_equal(a, b) for a, b in zip(s1, s2))
        chosen = capsules_gap(parts.fit_body(m1), parts.fit_body(m2), turn)
        print(f"{name:32s} whole-hull fit gap {whole:.3g}  splits same: {same_split}  chosen gap {chosen:.3g}")


if __name__ == "__main__":
    main()
