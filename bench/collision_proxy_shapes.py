#!/usr/bin/env python3
"""Would another cheap sphere-swept shape hold the G1's bodies tighter than their fitted capsules?

For each body the arms meet, how far its proxy reaches beyond its mesh's hull along 400 directions
(mean and worst, cm; "flat": directions within 20 deg of horizontal in the link's frame, where
arms pass): the fitted capsules (core.collision), the best single lozenge (a rectangle swept by a
sphere) and the best single rounded box (a box swept by a sphere), each searched over a grid of
how far its core is pulled in from the hull's extent (per axis), in the hull's principal axes and in
the link's, its radius then the least that holds every hull vertex. Both have closed-form segment
distances; neither is worth it where it is not tighter.

    .venv/bin/python bench/collision_proxy_shapes.py
"""
from __future__ import annotations

import itertools
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import numpy as np  # noqa: E402
from scipy.spatial import ConvexHull  # noqa: E402

import clips  # noqa: E402  (puts the repository on the path)
from core.collision.fit import _principal_axes, _sphere_directions  # noqa: E402
from core.collision.proxies import body_mesh, collision_model  # noqa: E402
from core.model.kinematics import KinematicTree  # noqa: E402
from core.model.urdf import parse_urdf  # noqa: E402

BODIES = ("pelvis", "torso_link", "waist_yaw_link", "left_hip_pitch_link", "left_hip_roll_link", "left_elbow_link",
          "left_wrist_roll_link", "left_wrist_pitch_link", "left_wrist_yaw_link")
UNIT = _sphere_directions(400)
FLAT = np.abs(UNIT[:, 2]) < np.sin(np.radians(20))
GRID = 12  # pull-ins tried per axis


def _excess(reach: np.ndarray, held: np.ndarray) -> str:
    over = 100 * (reach - held)
    return f"{over.mean():5.2f} / {over.max():5.2f} (flat {over[FLAT].mean():5.2f})"


def _swept(points: np.ndarray, axes: np.ndarray, flat_core: bool) -> tuple[float, np.ndarray]:
    """The least mean excess of a box (or, flat_core, a rectangle across each axis in turn) swept by a
    sphere around the points, frame `axes` (3, 3): (mean, reach (D,))."""
    along = points @ axes.T
    middle = 0.5 * (along.min(axis=0) + along.max(axis=0))
    half, local = 0.5 * np.ptp(along, axis=0), along - middle
    held, best = (points @ UNIT.T).max(axis=0), (np.inf, None)
    thin_axes = range(3) if flat_core else [None]
    for thin in thin_axes:
        spans = [np.zeros(1) if k == thin else np.linspace(0.0, half[k], GRID) for k in range(3)]
        for pulled in itertools.product(*spans):
            core = np.where(np.arange(3) == thin, 0.0, half - np.array(pulled))
            radius = np.sqrt((np.maximum(np.abs(local) - core, 0.0) ** 2).sum(axis=1)).max()
            reach = (middle @ axes) @ UNIT.T + np.abs(UNIT @ axes.T) @ core + radius
            if (reach - held).mean() < best[0]:
                best = ((reach - held).mean(), reach)
    return best


def main() -> None:
    tree = KinematicTree(parse_urdf(clips.ROBOTS["g1"]))
    model = collision_model(tree)
    print("G1 body, excess over the mesh's hull (cm): mean / worst (flat mean)")
    for name in BODIES:
        body = model.body_index(name)
        points = body_mesh(tree, model.body_links[body]).points
        points = points[ConvexHull(points).vertices]
        held = (points @ UNIT.T).max(axis=0)
        rows = np.flatnonzero(model.capsule_body == body)
        capsules = np.max([np.maximum(UNIT @ model.ends[c, 0], UNIT @ model.ends[c, 1]) + model.radius[c]
                           for c in rows], axis=0)
        shapes = {f"{len(rows)} capsules": capsules}
        for label, flat in (("lozenge", True), ("rounded box", False)):
            fits = [_swept(points, axes, flat) for axes in (_principal_axes(points), np.eye(3))]
            shapes[label] = min(fits, key=lambda fit: fit[0])[1]
        print(f"{name:22} " + "   ".join(f"{label} {_excess(reach, held)}" for label, reach in shapes.items()))


if __name__ == "__main__":
    main()
