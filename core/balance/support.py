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

from ..feet.geometry import BodyPoints, body_points, standing_rotation, subtree_links
from ..model.kinematics import KinematicTree
from ..retarget.automap import robot_body
from ..retarget.facing import solved_robot
from ..retarget.body_parts import find_body_parts, robot_skeleton
from .inertia import BalanceError, MassModel, ground_push, link_motion, zmp_of

CONTACT_M = 0.005  # foot geometry this close to the ground supports the robot
ALL_PAIRS_POINTS = 48  # feet with more points than this get a hull per frame (support_margins)
LIGHT_PUSH = 0.1  # a frame whose ground push is below this share of the weight has no ZMP to stand on
ALL_PAIRS_BUDGET = 2_000_000  # frames x points^3 per block of the all-pairs test (~16 MB a float array)


def level_tolerance(foot_width_m: float) -> float:
    """How far (radians) a foot may roll and still have its whole sole within CONTACT_M of the
    ground (it rolls about one edge; with a margin): a leg without an ankle roll keeps its foot
    this level."""
    return float(0.8 * np.arctan(CONTACT_M / max(foot_width_m, CONTACT_M)))


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


def sole_centre(body: BodyPoints, flat: np.ndarray) -> np.ndarray:
    """The centre of the sole in the foot link's frame: the middle of the points that touch a
    level floor when the foot stands level, taken along the level foot's own length and width (the
    link frame's axes may point anywhere: a G1 whose feet's frames were turned aimed 1.5 mm ahead)."""
    level = body.points @ flat.T
    bottom = level[:, 2] - body.radius
    touching = level[bottom <= bottom.min() + CONTACT_M]
    return flat.T @ ((touching.min(axis=0) + touching.max(axis=0)) / 2.0)


NARROW_SOLE_M = 0.03  # a sole narrower than this is a line to balance on (feet without geometry: a point)


def foot_width(body: BodyPoints, flat: np.ndarray) -> float:
    """Across the sole (the foot's lateral extent standing level), metres."""
    level = body.points @ flat.T
    return float(np.ptp(level[:, 1]) + 2 * body.radius.max())


def narrow_soles(tree: KinematicTree) -> list[str]:
    """A warning when a foot's sole is under NARROW_SOLE_M across: the readout's support is then
    a line or a point and the ZMP is outside on nearly every frame, whatever the motion (a leg
    ending at its ankle without foot geometry, mesh files missing). Cached on the tree, as the
    readout asks on every call."""
    cache = tree.__dict__.setdefault("_narrow_soles", {})
    if "warnings" not in cache:
        zero = tree.zero_pose()
        widths = {tree.link_names[body.link]: foot_width(body, standing_rotation(body, zero[body.link, :3, :3]))
                  for body in _feet_seen_from_pelvis(tree)}
        narrow = [name for name, width in widths.items() if width < NARROW_SOLE_M]
        cache["warnings"] = [narrow_sole_warning(tree, min(widths.values()), narrow)] if narrow else []
    return list(cache["warnings"])


def narrow_sole_warning(tree: KinematicTree, width_m: float, feet: list[str] = ()) -> str:
    """What a sole `width_m` across means for balance, naming the feet when known."""
    who = f"foot {', '.join(map(repr, feet))} " if feet else ""
    return (f"robot {tree.robot.name!r}: {who}stands on soles {100 * width_m:.1f} cm across (its feet' collision or "
            "visual geometry): a line or a point to balance on, so the ZMP leaves the support on nearly every "
            "frame; give the feet their soles")


def _feet_seen_from_pelvis(tree: KinematicTree) -> list[BodyPoints]:
    """The feet's bodies in `tree`'s own link frames, found on the robot hung from its pelvis: a
    URDF rooted in a leg (at a foot) has its legs only from the middle of the body, and its
    root's subtree is the whole robot (core.retarget.automap.robot_body)."""
    hung = robot_body(tree)[0]
    if hung is tree:
        return foot_bodies(tree, foot_links(tree))
    _, rerooted = solved_robot(tree, hung.robot.root_link)
    out = []
    for body in foot_bodies(hung, foot_links(hung)):
        name = hung.link_names[body.link]
        change = rerooted.frame_change.get(name) if rerooted is not None else None
        points = body.points if change is None else body.points @ change[:3, :3].T + change[:3, 3]
        out.append(BodyPoints(tree.link_index(name), points, body.radius))
    return out


def sole_outlines(tree: KinematicTree) -> list[BodyPoints]:
    """Each foot's points that can be a corner of a support polygon: those on the outline of the
    sole (points inside it never are), and every point off the sole's plane (a foot on its toe
    or edge). Cached on the tree: the readout's support test grows with the cube of the points."""
    cache = tree.__dict__.setdefault("_sole_outlines", {})
    if "bodies" not in cache:
        zero = tree.zero_pose()
        bodies = []
        for body in _feet_seen_from_pelvis(tree):
            level = body.points @ standing_rotation(body, zero[body.link, :3, :3]).T
            bottom = level[:, 2] - body.radius
            sole = bottom <= bottom.min() + 1e-4
            keep = ~sole
            if sole.sum() >= 3:
                outline = _hull(level[sole, :2])
                on = np.array([any(np.allclose(p, v, atol=1e-6) for v in outline) for p in level[sole, :2]])
                keep[np.flatnonzero(sole)[on]] = True
            else:
                keep[sole] = True
            bodies.append(BodyPoints(body.link, body.points[keep], body.radius[keep]))
        cache["bodies"] = bodies
    return cache["bodies"]


def support_margins(points: np.ndarray, zmp: np.ndarray, ground_z: float = 0.0,
                    radius: np.ndarray | None = None) -> np.ndarray:
    """Margins (F,) of the ZMP (F, 2) to the support polygon of foot points (F, P, 3): positive
    inside, negative outside, -inf with nothing on the ground. radius (P,): a sphere's point
    touches the ground at its centre's height minus its radius. zmp may be several ZMPs (Z, F, 2)
    over the same support: margins (Z, F), the polygon found once (the margin's gradient, margin.py).

    The all-pairs test below costs F x P^3: feet of a few dozen points go through it in
    blocks of frames; feet given as meshes (hundreds of hull points: Talos's 308 asked for
    217 GiB) get each frame's ground points reduced to their hull first."""
    several = np.ndim(zmp) == 3
    zmps = np.asarray(zmp, dtype=float) if several else np.asarray(zmp, dtype=float)[None]
    if points.shape[1] > ALL_PAIRS_POINTS:
        bottom = points[..., 2] - (0.0 if radius is None else radius)
        down = bottom <= ground_z + CONTACT_M
        out = np.full((len(zmps), len(points)), -np.inf)
        for f in np.flatnonzero(down.any(axis=1)):
            hull = _hull(points[f, down[f], :2])
            flat = np.column_stack([hull, np.full(len(hull), ground_z)])
            out[:, f] = _margins_all_pairs(flat[None], zmps[:, f:f + 1], ground_z, None)[:, 0]
        return out if several else out[0]
    # frames grouped by which points touch the ground, each group's test over those points alone: the same
    # numbers (a point off the ground takes no part in it), at an eighth of the cost on one foot of two
    bottom = points[..., 2] - (0.0 if radius is None else radius)
    patterns, group = _ground_patterns(bottom <= ground_z + CONTACT_M)
    out = np.full((len(zmps), len(points)), -np.inf)
    for k, pattern in enumerate(patterns):
        cols = np.flatnonzero(pattern)
        if len(cols) == 0:
            continue
        frames = np.flatnonzero(group == k)
        part = points[frames][:, cols]
        block = max(1, ALL_PAIRS_BUDGET // len(cols) ** 3)
        out[:, frames] = np.concatenate([
            _margins_all_pairs(part[i:i + block], zmps[:, frames[i:i + block]], ground_z,
                               None if radius is None else radius[cols]) for i in range(0, len(frames), block)], axis=1)
    return out if several else out[0]


def _ground_patterns(down: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct rows of down (F, P) (U, P) and each frame's (F,). Up to 62 points a row is one integer, its
    bits the points on the ground: a sort of numbers, not of rows (np.unique over axis 0 took a third of the
    margins' time); the patterns' order does not touch the margins."""
    if down.shape[1] > 62:
        patterns, group = np.unique(down, axis=0, return_inverse=True)
        return patterns, group.ravel()
    bits = np.arange(down.shape[1], dtype=np.int64)
    codes, group = np.unique(down @ (1 << bits), return_inverse=True)
    return (codes[:, None] >> bits) & 1 == 1, group


def _margins_all_pairs(points: np.ndarray, zmps: np.ndarray, ground_z: float,
                       radius: np.ndarray | None) -> np.ndarray:
    """support_margins (Z, F) on all frames at once, for each of the ZMPs (Z, F, 2): an edge (i, j)
    between two points on the ground is on the hull when no other such point lies to its right, so
    no hull is built frame by frame. Frames last: every product runs over a contiguous row of frames
    (frames first, its inner loops ran over a few points, each operand broadcast through numpy's buffers)."""
    bottom = points[..., 2] - (0.0 if radius is None else radius)
    down = np.ascontiguousarray((bottom <= ground_z + CONTACT_M).T)  # (P, F)
    x, y = np.ascontiguousarray(points[..., :2].transpose(2, 1, 0))  # (P, F) each
    ex, ey = x[None] - x[:, None], y[None] - y[:, None]  # (i, j, F): from point i to point j
    # (i, j, k, F): point k left (+) or right (-) of the edge from i to j
    cross = ex[:, :, None] * ey[:, None] - ey[:, :, None] * ex[:, None]
    pair = down[:, None] & down[None]  # (i, j, F)
    eps = 1e-9
    others = down[None, None]
    on_hull = pair & np.all((cross >= -eps) | ~others, axis=2)
    spans = np.any((cross > eps) & others, axis=2)  # some point strictly left: the hull has area
    hull_edge = on_hull & spans & ~np.eye(len(down), dtype=bool)[:, :, None]
    has_hull = hull_edge.any(axis=(0, 1))
    length2 = np.maximum(ex * ex + ey * ey, 1e-18)
    grounded = down.any(axis=0)
    out = np.empty((len(zmps), points.shape[0]))
    for row, zmp in zip(out, zmps):
        to_x, to_y = zmp[:, 0] - x, zmp[:, 1] - y  # (i, F)
        t = np.clip((to_x[:, None] * ex + to_y[:, None] * ey) / length2, 0.0, 1.0)
        off_x, off_y = to_x[:, None] - t * ex, to_y[:, None] - t * ey
        gap = np.sqrt(off_x * off_x + off_y * off_y)  # (i, j, F) to each segment
        side = ex * to_y[:, None] - ey * to_x[:, None]
        inside = has_hull & np.all(side >= -eps, axis=(0, 1), where=hull_edge)
        boundary = np.min(np.where(hull_edge, gap, np.inf), axis=(0, 1))
        nearest_any = np.min(np.where(pair, gap, np.inf), axis=(0, 1))  # a segment or a point of contact
        margin = np.where(has_hull, np.where(inside, boundary, -boundary), -nearest_any)
        row[:] = np.where(grounded, margin, -np.inf)
    return out


def support_polygon(points: np.ndarray, ground_z: float = 0.0, radius: np.ndarray | None = None) -> np.ndarray | None:
    """The support polygon of one frame's foot points (P, 3), counter-clockwise (M, 2), or None."""
    bottom = points[:, 2] - (0.0 if radius is None else radius)
    return _hull(points[bottom <= ground_z + CONTACT_M, :2])


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


def balance_readout(tree: KinematicTree, q: np.ndarray, root: np.ndarray, fps: float, ground_z: float = 0.0,
                    per_frame: bool = False) -> dict:
    """Would the robot stand? frames, zmp_outside_support_pct, min_support_margin_m (over the frames
    with a foot on the ground and the ground pushing), frames_without_support (no foot on the
    ground), frames_without_ground_force (the motion asks the ground for less than LIGHT_PUSH of
    the weight: the ZMP is undefined there, and such a frame counts as outside the support), and
    with per_frame: zmp_m, com_m, support_margin_m per frame (metres, world; None: no margin)."""
    model = MassModel.build(tree)
    motion = link_motion(tree, q, root, fps, model)
    zmp, com = zmp_of(motion, model, ground_z)
    bodies = sole_outlines(tree)
    poses = tree.poses(q, root, [body.link for body in bodies])
    points = np.concatenate([body.world(poses[body.link]) for body in bodies], axis=1)
    margins = support_margins(points, zmp, ground_z, np.concatenate([body.radius for body in bodies]))
    grounded = np.isfinite(margins)
    light = grounded & (ground_push(motion, model) < LIGHT_PUSH)
    margins[light] = -np.inf
    supported = margins[np.isfinite(margins)]
    out = {"frames": int(len(q)), "mass_kg": model.total,
           "zmp_outside_support_pct": float(100.0 * np.mean(margins < 0.0)) if len(q) else 0.0,
           "min_support_margin_m": float(supported.min()) if supported.size else None,
           "frames_without_support": int(np.sum(~grounded)),
           "frames_without_ground_force": int(np.sum(light)), "warnings": narrow_soles(tree)}
    if per_frame:
        out.update(zmp_m=zmp.tolist(), com_m=com.tolist(),
                   support_margin_m=[float(m) if np.isfinite(m) else None for m in margins])
    return out
