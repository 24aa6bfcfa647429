"""The G1's fitted capsules (no disk cache) in one checkout, per body: count, radii and total
volume-ish figures, to compare two trees' fits.

    ROBOT_RETARGET_CACHE= .venv/bin/python bench/s32_frames/g1_capsules.py [REPO] > out.txt

REPO: the checkout whose core/ fits (default this one).
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ.setdefault("ROBOT_RETARGET_CACHE", "")
REPO = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

import numpy as np  # noqa: E402

from core.collision.proxies import fit_model  # noqa: E402
from core.model.kinematics import KinematicTree  # noqa: E402
from core.model.urdf import parse_urdf  # noqa: E402

tree = KinematicTree(parse_urdf(Path(__file__).resolve().parents[2] / "data/robots/g1/unitree_g1_29dof.urdf"))
model = fit_model(tree)
for b, name in enumerate(model.body_names):
    rows = np.flatnonzero(model.capsule_body == b)
    length = np.linalg.norm(model.ends[rows, 1] - model.ends[rows, 0], axis=-1)
    print(f"{name:28s} {len(rows)} r {' '.join(f'{r * 1000:.2f}' for r in model.radius[rows])} mm"
          f"  len {' '.join(f'{x * 1000:.1f}' for x in length)} mm")
print("capsules", len(model.radius))
