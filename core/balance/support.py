"""The support polygon under the feet and the ZMP's margin to its edge, frame by frame.

The support polygon is the convex hull of the foot geometry (collision shapes, else
visuals, as core.feet reads them) that lies within CONTACT_M of the ground: one foot in
single support, both in double support. The margin is the ZMP's signed distance to the
polygon's edge: positive inside, negative outside (a frame with nothing on the ground
has no support at all).
"""
from __future__ import annotations

import numpy as np
from scipy.spatial import ConvexHull, QhullError

from ..feet.geometry import BodyPoints, body_points, subtree_links
from ..model.kinematics import KinematicTree
from ..retarget.body_parts import find_body_parts, robot_skeleton
from .inertia import BalanceError, MassModel, multibody_zmp

CONTACT_M = 0.005  # foot geometry this close to the ground supports the robot


def foot_links(tree: KinematicTree) -> list[int]:
    """The link at the end of each leg (its last joint's link); the foot is it and all below."""
    parts = find_body_parts(robot_skeleton(tree))
    feet = []
    for leg in parts.legs:
        jointed = [n for n in leg if tree.qindex[n] >= 0]
        feet.append(jointed[-1] if jointed else leg[-1])
    if not feet:
        raise BalanceError(f"robot {tree.robot.name!r}: found no legs, so no feet to stand on")
    return feet


def foot_bodies(tree: KinematicTree, feet: list[int]) -> list[BodyPoints]:
    return [body_points(tree, link, subtree_links(tree, link)) for link in feet]


def support_margins(points: np.ndarray, zmp: np.ndarray, ground_z: float = 0.0,
                    radius: np.ndarray | None = None) -> tuple[np.ndarray, list]:
    """(margin (F,), polygon per frame (M, 2) or None) for foot points (F, P, 3) and ZMP (F, 2);
    radius (P,): a sphere's point touches the ground at its centre's height minus its radius."""
    margins = np.full(len(zmp), -np.inf)
    polygons: list = []
    bottom = points[..., 2] - (0.0 if radius is None else radius)
    for f in range(len(zmp)):
        down = points[f, bottom[f] <= ground_z + CONTACT_M, :2]
        polygon = _hull(down)
        polygons.append(polygon)
        if polygon is not None:
            margins[f] = _signed_distance(polygon, zmp[f])
    return margins, polygons


def _hull(points: np.ndarray) -> np.ndarray | None:
    """Counter-clockwise hull vertices (M, 2); a segment or a point for degenerate contact."""
    if len(points) == 0:
        return None
    unique = np.unique(np.round(points, 6), axis=0)
    if len(unique) >= 3:
        try:
            return unique[ConvexHull(unique).vertices]
        except QhullError:  # all on one line
            pass
    order = np.argsort(unique[:, 0] + 1e-3 * unique[:, 1])
    return unique[order[[0, -1]]] if len(unique) > 1 else unique


def _signed_distance(polygon: np.ndarray, p: np.ndarray) -> float:
    """Distance from p to the polygon's boundary, positive inside (counter-clockwise vertices)."""
    a, b = polygon, np.roll(polygon, -1, axis=0)
    edge = b - a
    length = np.maximum(np.linalg.norm(edge, axis=1), 1e-12)
    t = np.clip(np.einsum("ij,ij->i", p - a, edge) / length ** 2, 0.0, 1.0)
    nearest = float(np.min(np.linalg.norm(a + t[:, None] * edge - p, axis=1)))
    if len(polygon) < 3:
        return -nearest
    cross = edge[:, 0] * (p - a)[:, 1] - edge[:, 1] * (p - a)[:, 0]
    return nearest if np.all(cross >= 0) else -nearest


def balance_readout(tree: KinematicTree, q: np.ndarray, root: np.ndarray, fps: float, ground_z: float = 0.0,
                    per_frame: bool = False) -> dict:
    """Would the robot stand? frames, zmp_outside_support_pct, min_support_margin_m (over the frames
    with a foot on the ground), frames_without_support (and with per_frame: zmp_m, com_m,
    support_margin_m per frame, metres, world)."""
    model = MassModel.build(tree)
    zmp, com = multibody_zmp(tree, q, root, fps, ground_z, model)
    feet = foot_links(tree)
    poses = tree.poses(q, root, feet)
    bodies = foot_bodies(tree, feet)
    points = np.concatenate([body.world(poses[body.link]) for body in bodies], axis=1)
    margins, _ = support_margins(points, zmp, ground_z, np.concatenate([body.radius for body in bodies]))
    supported = margins[np.isfinite(margins)]
    out = {"frames": int(len(q)), "mass_kg": model.total,
           "zmp_outside_support_pct": float(100.0 * np.mean(margins < 0.0)) if len(q) else 0.0,
           "min_support_margin_m": float(supported.min()) if supported.size else None,
           "frames_without_support": int(np.sum(~np.isfinite(margins)))}
    if per_frame:
        out.update(zmp_m=zmp.tolist(), com_m=com.tolist(),
                   support_margin_m=[float(m) if np.isfinite(m) else None for m in margins])
    return out
