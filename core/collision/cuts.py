"""Capsules cut by planes where they bulge past a body's flat faces: each capsule of a body is
taken within the half-spaces that bound the body's mesh along the directions where its capsules
reach furthest beyond it.

A capsule is round where the G1's pelvis, torso and hips are flat: it reaches 2.5 cm past the
pelvis's sides and 5 cm past the torso's front and back (the wrist comes that much too soon,
and the arm turns away from the actor's to keep clear: docs/history/self_collision.md). A
half-space {n . x <= h} with h the mesh's support along n holds the whole mesh, so every capsule
cut by it still holds its part: the body's capsules cut by the same planes hold the mesh. A
pair's distance is then at least the largest of its capsules' distance and each plane's distance
from the other capsule (a lower bound: conservative as the capsules are), in closed form, a few
products an entry; the planes change nothing where a capsule already hugs the mesh.

A cut capsule is a hull row of the collision model (core.collision.proxies): its points are the
link frame's origin and the planes' normals as points (placed in the world as a hull's
vertices are), `cut_offset` the planes' offsets.
"""
from __future__ import annotations

import numpy as np

from .smooth import box_directions

CUTS = True  # bodies' capsules cut by the planes of their flat faces (off: plain capsules, FIT_VERSION 7's)
CUT_MIN_M = 0.005  # a direction is cut where the body's capsules reach this far past its mesh
_UNCUT = 1e3  # a padding plane's offset: everything is far inside it, its distance far below the capsules'


def cut_planes(capsules: list[tuple], points: np.ndarray, radii: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The planes cutting a body's capsules [(end a, end b, radius)] around its geometry (points
    (N, 3) with sphere radii (N,)), in its link's frame: unit normals (K, 3) and offsets (K,), the
    geometry's support along each of the cube's 26 directions where the capsules reach more than
    CUT_MIN_M further (K may be 0)."""
    unit = box_directions()
    reach = np.max([np.maximum(unit @ a, unit @ b) + r for a, b, r in capsules], axis=0)
    held = (points @ unit.T + radii[:, None]).max(axis=0)
    cut = reach - held > CUT_MIN_M
    return unit[cut], held[cut]


def cut_points(normals: np.ndarray, offsets: np.ndarray, count: int) -> tuple[np.ndarray, np.ndarray]:
    """One cut capsule's hull row: points (count + 1, 3), the origin then each normal's tip, and
    offsets (count,), padded with planes that never count."""
    points = np.zeros((count + 1, 3))
    points[1:, 2] = 1.0
    points[1:len(normals) + 1] = normals
    offset = np.full(count, _UNCUT)
    offset[:len(offsets)] = offsets
    return points, offset


def cut_entries(model, capsules: np.ndarray, ends: np.ndarray, hull_world, near: np.ndarray, out: tuple) -> None:
    """proxy_distance's entries (capsule pairs (K, 2), their world ends (K, 2, 2, 3)) where `near`
    (K,) and a side is a cut capsule: each plane's distance from the other side's capsule (its
    nearer end, less its radius), where larger than the capsules' distance, written into out
    (exact, ca, cb, normal): the point on the plane, the end, and the plane's normal. Two cut
    capsules take both sides' planes; a plane is never cut by the other side's planes (a lower
    bound still)."""
    exact, ca, cb, normal = out
    for side in (0, 1):
        rows = np.flatnonzero(near & (model.hull[capsules[:, side]] >= 0))
        if not len(rows):
            continue
        world = hull_world(rows, side)  # (n, K + 1, 3)
        origin = world[:, 0]
        unit = world[:, 1:] - origin[:, None]  # (n, K, 3): rotations keep them unit
        offset = model.cut_offset[model.hull[capsules[rows, side]]] + np.einsum("nki,ni->nk", unit, origin)
        other = ends[rows, 1 - side]  # (n, 2, 3)
        height = np.einsum("nki,nei->nke", unit, other) - offset[..., None]  # (n, K, 2) each end above each plane
        end = np.argmin(height, axis=2)  # (n, K)
        gap = np.take_along_axis(height, end[..., None], axis=2)[..., 0] - model.radius[capsules[rows, 1 - side], None]
        plane = np.argmax(gap, axis=1)
        pick = np.arange(len(rows))
        best = gap[pick, plane]
        wins = best > exact[rows]
        if not wins.any():
            continue
        rows, pick, plane = rows[wins], pick[wins], plane[wins]
        n = unit[pick, plane]
        tip = other[pick, end[pick, plane]]
        foot = tip - height[pick, plane, end[pick, plane], None] * n
        exact[rows] = best[wins]
        if side == 0:  # the normal points from the second toward the first: here from the end to the plane
            ca[rows], cb[rows], normal[rows] = foot, tip, -n
        else:
            ca[rows], cb[rows], normal[rows] = tip, foot, n
