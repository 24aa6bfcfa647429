"""How tight one checkout's fitted G1 capsules are, body by body, judged finely (frame-free):
the union's volume on a fine grid, the mean excess over the mesh hull along many directions,
and parts.fit_body's own choice figure (volume / hull area + SPLIT_CAPSULE_COST_M per extra
capsule), each computed the same way for every tree, so two checkouts' fits can be compared.

    ROBOT_RETARGET_CACHE= .venv/bin/python bench/s33_frames/fit_quality.py [REPO ...]

REPO: checkouts whose core/ fits (default this one); each is fitted in a subprocess. REPO@fit.NAME=value@...
sets a constant of core.collision.fit or .parts first (fit._DIRECTIONS remakes its directions).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parents[2]
URDF = HERE / "data/robots/g1/unitree_g1_29dof.urdf"
FIT = """
import json, sys
sys.path.insert(0, sys.argv[1])
from pathlib import Path
from core.collision.proxies import fit_model
from core.model.kinematics import KinematicTree
from core.model.urdf import parse_urdf
import core.collision.fit as fit, core.collision.parts as parts
for knob in sys.argv[3:]:  # fit.NAME=value or parts.NAME=value
    name, value = knob.split("=")
    module, attr = name.split(".")
    setattr({"fit": fit, "parts": parts}[module], attr, type(getattr({"fit": fit, "parts": parts}[module], attr))(value))
fit._UNIT = fit._sphere_directions(fit._DIRECTIONS)
m = fit_model(KinematicTree(parse_urdf(Path(sys.argv[2]))))
print(json.dumps({n: [[m.ends[c].tolist(), float(m.radius[c])] for c in range(len(m.radius)) if m.capsule_body[c] == b]
                  for b, n in enumerate(m.body_names)}))
"""


def fitted(spec: str) -> dict:
    repo, *knobs = spec.split("@")
    env = dict(os.environ, ROBOT_RETARGET_CACHE="")
    out = subprocess.run([sys.executable, "-c", FIT, str(Path(repo).resolve()), str(URDF), *knobs], capture_output=True, text=True,
                         env=env, check=True).stdout
    return json.loads(out)


def main() -> None:
    sys.path.insert(0, str(HERE))
    from scipy.spatial import ConvexHull

    from core.collision.fit import _sphere_directions
    from core.collision.parts import SPLIT_CAPSULE_COST_M, capsules_hold
    from core.collision.proxies import body_mesh
    from core.model.kinematics import KinematicTree
    from core.model.urdf import parse_urdf

    specs = sys.argv[1:] or [str(HERE)]
    fits = [fitted(s) for s in specs]
    repos = [Path(s.split("@")[0] + "".join("_" + k.split(".")[-1] for k in s.split("@")[1:])) for s in specs]
    tree = KinematicTree(parse_urdf(URDF))
    unit = _sphere_directions(4000)
    total = np.zeros((len(repos), 3))
    print(f"{'body':26s} " + " | ".join(f"{r.name[-14:]:>14s}: n  vol cm3 excess mm  cost mm" for r in repos))
    for name in fits[0]:
        mesh = body_mesh(tree, tree.link_names.index(name))
        if mesh is None:
            continue
        support = (mesh.points @ unit.T + mesh.radii[:, None]).max(axis=0)
        area = float(ConvexHull(mesh.points).area)
        sets = [np.array([c[0] for c in f[name]]) for f in fits]
        radii = [np.array([c[1] for c in f[name]]) for f in fits]
        low = np.min([(e.min(axis=1) - r[:, None]).min(axis=0) for e, r in zip(sets, radii)], axis=0)
        high = np.max([(e.max(axis=1) + r[:, None]).max(axis=0) for e, r in zip(sets, radii)], axis=0)
        step = float(np.prod(high - low) / 90 ** 3) ** (1 / 3)
        grid = np.stack(np.meshgrid(*[np.arange(lo + step / 2, hi, step) for lo, hi in zip(low, high)],
                                    indexing="ij"), -1).reshape(-1, 3)
        row = []
        for k, (ends, radius) in enumerate(zip(sets, radii)):
            volume = capsules_hold(grid, ends, radius).any(axis=0).sum() * step ** 3
            reach = (np.maximum(ends[:, 0] @ unit.T, ends[:, 1] @ unit.T) + radius[:, None]).max(axis=0)
            excess = float(np.mean(reach - support))
            cost = volume / area + SPLIT_CAPSULE_COST_M * (len(radius) - 1)
            total[k] += (len(radius), volume, 0)
            row.append(f"{len(radius):>16d} {volume * 1e6:8.1f} {excess * 1e3:9.2f} {cost * 1e3:8.2f}")
        print(f"{name:26s} " + " | ".join(row))
    print("total capsules / volume cm3:", "; ".join(f"{r.name}: {int(t[0])} / {t[1] * 1e6:.0f}"
                                                    for r, t in zip(repos, total)))


if __name__ == "__main__":
    main()
