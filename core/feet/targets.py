"""Where a planted foot must be: its sole points per frame, from the contacts and the unplanted legs.

A contact's first frame fixes the foot's heading and the point it stands
on; the foot is laid flat there. During the contact it tilts only as far as
the unplanted foot tilts beyond its stance tilt plus a dead zone (heel
strike, toe-off), and rolls over its lowest point rather than sliding. It
keeps its heading unless the source pivots on that foot further than a dead
zone; then it turns with it, about the point it stands on. Around a contact
the goals blend from and back to the free foot.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.ndimage import distance_transform_edt

from .contacts import flags_to_intervals
from .geometry import pivot_weights as _pivot_weights
from ..model.same_bits import same_bits
from ..model.transforms import axis_angle_to_matrix, rotate_points


@dataclass
class FootFrames:
    """The unplanted foot of one leg, measured with the root at the origin (root rotation applied)."""

    rel: np.ndarray  # (F, 4, 4) foot link pose relative to the root position
    wanted: np.ndarray  # (F, 3, 3) world rotation a planted foot should have (before holding its heading)
    heading: np.ndarray  # (F,) radians, the wanted foot's forward axis about world z
    pivot_step: np.ndarray  # (F-1, 2) horizontal step of the point the planted foot stands on, metres
    root_height: np.ndarray  # (F,) root z that puts the wanted foot on the ground, ankle kept

    @classmethod
    def measure(cls, tree, leg, q, root_rot, flags, fps: float, settings) -> "FootFrames":
        root = np.zeros(root_rot.shape[:-2] + (4, 4))
        root[:, :3, :3], root[:, 3, 3] = root_rot, 1.0
        rel = tree.link_transform(q, leg.link, root)
        near = max(1, int(round(settings.stance_s * fps)))
        wanted = _flattening(rel[:, :3, :3] @ leg.flat.T, flags, np.radians(settings.flat_deg), near) @ rel[:, :3, :3]
        turn = wanted @ leg.flat.T
        heading = same_bits(np.arctan2, turn[:, 1, 0], turn[:, 0, 0])  # strided: see core.model.same_bits
        sole, radius = leg.foot.points[leg.sole], leg.foot.radius[leg.sole]
        local = rotate_points(wanted, sole)  # the wanted foot, its origin at 0
        weights = _pivot_weights(local[..., 2] - radius)  # the point the planted foot stands on
        lift = -np.einsum("fs,fs->f", weights, local[..., 2] - radius)  # its origin above the ground
        points = rotate_points(rel[:, :3, :3], sole) + rel[:, None, :3, 3]
        step = np.einsum("fs,fsi->fi", weights[:-1], points[1:, :, :2] - points[:-1, :, :2])
        return cls(rel, wanted, heading, step, lift - rel[:, 2, 3])


def _rot_z(angle: np.ndarray) -> np.ndarray:
    return axis_angle_to_matrix(np.array([0.0, 0.0, 1.0]), angle)


def _flattening(turn: np.ndarray, flags: np.ndarray, dead: float, near: int) -> np.ndarray:
    """Rotations (F, 3, 3) that tilt the foot toward flat, about a horizontal axis.

    turn: the foot's rotation away from standing flat. Its stance tilt (the
    median sole normal over the contact frames within `near` frames of the
    contact nearest in time, in the foot's heading frame: what the unplanted
    solve gives a foot the source holds flat) and up to `dead` more count as
    flat; a steeper foot (heel strike, toe-off) keeps the rest of its tilt, so
    the correction never exceeds stance tilt plus `dead`. Not over the whole
    clip: then where the clip was cut tilted the feet (the walk cut at frame
    400: its ankles up to 0.2 rad off the whole clip's). Not over one contact
    alone either: in one of the walk's the unplanted foot stands tilted 55-106
    degrees, and taken as flat it sank (ground_penetration_pct 3) and slid in 8 %
    of the contacts; the contacts around it outvote it.
    """
    up = turn[:, :, 2]
    yaw = _rot_z(same_bits(np.arctan2, turn[:, 1, 0], turn[:, 0, 0]))
    local = np.einsum("fji,fj->fi", yaw, up)
    ref = _stance_normals(local, flags, near)
    ref /= np.linalg.norm(ref, axis=1, keepdims=True)
    axis, angle = _axis_angle(ref, local)
    goal = np.einsum("fij,fjk,k->fi", yaw, axis_angle_to_matrix(axis, np.clip(angle - dead, 0.0, None)),
                     np.array([0.0, 0.0, 1.0]))
    axis, angle = _axis_angle(up, goal)
    return axis_angle_to_matrix(axis, angle)


def _stance_normals(normals: np.ndarray, flags: np.ndarray, near: int) -> np.ndarray:
    """Per frame (F, 3): the median of `normals` (F, 3) over the contact frames within `near`
    frames of the contact nearest in time (over every frame without contacts)."""
    spans = flags_to_intervals(flags)
    if not spans:
        return np.broadcast_to(np.median(normals, axis=0), normals.shape).copy()
    down = np.flatnonzero(flags)
    medians = np.array([np.median(normals[down[np.searchsorted(down, a - near):np.searchsorted(down, b + near)]],
                                  axis=0) for a, b in spans])
    return medians[_nearest_interval(spans, len(flags))]


def _axis_angle(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Axis (F, 3) and angle (F,) of the shortest rotation from unit vectors a to b."""
    axis = np.cross(a, b)
    sin = np.linalg.norm(axis, axis=1)
    angle = same_bits(np.arctan2, sin, np.einsum("fi,fi->f", a, b))  # few frames: see core.model.same_bits
    axis = np.where(sin[:, None] > 1e-12, axis / np.maximum(sin, 1e-12)[:, None], [1.0, 0.0, 0.0])
    return axis, angle


@dataclass
class FootGoals:
    """Where one foot's sole points must be: fixed once, then blended with the free foot."""

    planted: np.ndarray  # (F, S, 3) world, metres: the planted foot near contacts
    weight: np.ndarray  # (F,) 0 (free) to 1 (planted)
    radius: np.ndarray  # (S,) sphere radius of each sole point

    def at(self, free: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Goals (F, S, 3) given the free foot's sole points, and the frames (F,) to solve:
        near a contact, or where the free foot would sink."""
        w = self.weight[:, None, None]
        sinking = (free[..., 2] - self.radius).min(axis=1) < 0.0
        points = w * self.planted + (1 - w) * free
        points[..., 2] = np.maximum(points[..., 2], self.radius)  # no goal below the ground
        return points, (self.weight > 0) | sinking


def free_sole(leg, frames: "FootFrames", world: np.ndarray) -> np.ndarray:
    """Sole points (F, S, 3) of the unplanted foot under the root `world` (F, 4, 4)."""
    origin = frames.rel[:, :3, 3] + world[:, :3, 3]  # only the root's position moved
    return rotate_points(frames.rel[:, :3, :3], leg.foot.points[leg.sole]) + origin[:, None]


def blend_weights(flags: np.ndarray, frames: float) -> np.ndarray:
    """1 in contact, easing to 0 over `frames` frames on either side (smoothstep)."""
    if not flags.any():
        return np.zeros(len(flags))
    distance = distance_transform_edt(~flags)
    x = np.clip(1.0 - distance / (frames + 1.0), 0.0, 1.0)
    return x * x * (3.0 - 2.0 * x)


def foot_goals(leg, frames: FootFrames, world: np.ndarray, flags: np.ndarray, fps: float,
               settings) -> FootGoals:
    """Sole targets planted during and around each contact, from the free foot under `world`."""
    sole, radius = leg.foot.points[leg.sole], leg.foot.radius[leg.sole]
    free = free_sole(leg, frames, world)
    weight = blend_weights(flags, settings.blend_s * fps)
    planted = free.copy()
    spans = flags_to_intervals(flags)
    owner = _nearest_interval(spans, len(flags))
    bounds = np.searchsorted(owner, np.arange(len(spans) + 1))  # frames of interval k: bounds[k]:bounds[k+1]
    for k, (start, end) in enumerate(spans):
        # the frames this contact owns, and a window around them and its start: cost per
        # contact grows with its own length, not the clip's
        rows = bounds[k] + np.flatnonzero(weight[bounds[k]:bounds[k + 1]] > 0)
        if len(rows) == 0:
            continue
        lo, hi = min(rows[0], start), max(rows[-1], start) + 1
        turn = _held_turn(frames.heading[lo:hi], start - lo, np.radians(settings.turn_deg))
        planted[rows] = _planted(frames.heading[lo:hi], frames.wanted[lo:hi], free[start], turn, rows - lo,
                                 start - lo, sole, radius)
    return FootGoals(planted, weight, radius)


def _nearest_interval(spans: list[tuple[int, int]], frames: int) -> np.ndarray:
    """Index (F,) of the contact interval nearest to each frame, ascending (-1 without contacts)."""
    if not spans:
        return np.full(frames, -1)
    f = np.arange(frames)
    starts, ends = np.array([s for s, _ in spans]), np.array([e - 1 for _, e in spans])
    after = np.clip(np.searchsorted(starts, f, side="right") - 1, 0, len(spans) - 1)  # last start <= f
    before = np.minimum(after + 1, len(spans) - 1)
    d_after = np.maximum(np.maximum(starts[after] - f, f - ends[after]), 0)
    d_before = np.maximum(np.maximum(starts[before] - f, f - ends[before]), 0)
    return np.where(d_before < d_after, before, after)


def _held_turn(heading: np.ndarray, start: int, dead: float) -> np.ndarray:
    """Heading (F,) a planted foot keeps: the one at `start`, turning only where the free
    foot turns further than `dead` from it (the source pivots on its foot)."""
    change = np.unwrap(heading)
    change = change - change[start]
    return heading[start] + np.sign(change) * np.clip(np.abs(change) - dead, 0.0, None)


def _planted(free_heading: np.ndarray, wanted: np.ndarray, first: np.ndarray, heading: np.ndarray,
             rows: np.ndarray, start: int, sole: np.ndarray, radius: np.ndarray) -> np.ndarray:
    """Sole points (len(rows), S, 3) of a foot planted on frame `start` where it stood then.

    free_heading, wanted: the free foot's heading and wanted rotation (FootFrames) over the
    window that `rows` and `start` index.

    Its rotation is the wanted one (flat, or tilted as far as the source's
    foot is) turned to its held heading; it rolls and turns about the point it
    stands on, which never moves: each frame's step of the foot is undone at
    that point, and the point stays on the ground.
    """
    rot = _rot_z(heading - free_heading) @ wanted
    local = rotate_points(rot, sole)  # origin at 0
    weights = _pivot_weights(local[..., 2] - radius)
    step = -np.einsum("fs,fsi->fi", weights[:-1], local[1:, :, :2] - local[:-1, :, :2])
    travel = np.concatenate([np.zeros((1, 2)), np.cumsum(step, axis=0)])
    shift = weights[start] @ (first[:, :2] - local[start, :, :2]) + travel - travel[start]
    lift = -np.einsum("fs,fs->f", weights, local[..., 2] - radius)
    return local[rows] + np.concatenate([shift[rows], lift[rows, None]], axis=1)[:, None, :]
