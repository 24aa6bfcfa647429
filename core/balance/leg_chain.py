"""How a leg's joints place its foot, fast over many samples (core.balance.legs solves with it).

A leg is walked link by link from its base: each link's fixed shift and turn from its parent
and its joint. The rotation is carried as its three columns, so every fixed transform and
every turn about a principal axis is a few sums over (F, 3) arrays, no 3x3 product per sample.
Legs built alike (a left and a right leg: the same joints, axes and fixed turns, the shifts
mirrored) walk as one batch, their shifts given per row.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..model.kinematics import PRISMATIC, KinematicTree
from ..model.same_bits import same_bits
from ..model.transforms import axis_angle_to_matrix


@dataclass
class Link:
    """One link of a leg as foot_chain walks it: its fixed shift and turn from the parent, and its
    joint (the axis, and for a principal axis which one and its sign)."""

    shift: np.ndarray | list  # (3,); legs solved together: each of x, y, z a number or per row (F,)
    turn: np.ndarray | None  # (3, 3), None where the origin does not rotate
    axis: np.ndarray | None  # (3,) unit, None for a fixed joint
    principal: int = -1  # 0, 1, 2 for +-x, +-y, +-z; -1 for another axis
    prismatic: bool = False
    scale: float = 1.0
    offset: float = 0.0


def link_walk(tree: KinematicTree, links: list[int]) -> list[Link]:
    """The walk down `links` (each with its joint, or fixed), from the link above the first."""
    walk = []
    for link in links:
        origin = tree.origins[link]
        joint = tree.qindex[link] >= 0
        axis = tree.axes[link] if joint else None
        principal = np.flatnonzero(np.abs(axis) == 1.0) if joint else []
        walk.append(Link(origin[:3, 3].copy(), origin[:3, :3].copy() if tree.origin_rotates[link] else None,
                         axis, int(principal[0]) if len(principal) == 1 else -1,
                         bool(tree.kind[link] == PRISMATIC), float(tree.qscale[link]), float(tree.qoffset[link])))
    return walk


def foot_chain(walk: list[Link], x: np.ndarray, base: np.ndarray):
    """Foot rotation (F, 3, 3) and position (F, 3) for the leg's joints x (F, J) under `base`
    (F, 4, 4), and per joint its world axis and position (F, J, 3) (frames first: the walk's
    own layout, frames last, is foot_chain_last's)."""
    cols, pos, axes, origins = foot_chain_last(walk, x, base)
    rot = np.empty((len(x), 3, 3))
    for k in range(3):
        rot[:, :, k] = cols[k].T
    return rot, pos.T, axes.transpose(2, 0, 1), origins.transpose(2, 0, 1)


def foot_chain_last(walk: list[Link], x: np.ndarray, base: np.ndarray):
    """foot_chain with frames last: the foot rotation's columns (3 x (3, F)), its position (3, F)
    and each joint's world axis and position (J, 3, F). This runs at every iteration of every solve:
    the rotation is carried as its three columns and every fixed transform, axis and principal-axis
    turn is a sum over them, no 3x3 product per sample; frames last, each of those sums runs over
    contiguous rows of F numbers (frames first, numpy's loops over rows of three cost several times)."""
    return _along(walk, x, base, to_foot=True)


def joint_frames(walk: list[Link], x: np.ndarray, base: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per joint its world axis and position (F, J, 3) for the joints x (F, J) under base (F, 4, 4),
    as foot_chain gives them (the same sums), without turning past the last joint or assembling
    the foot's rotation: a solve that only aims a joint's axis (core.balance.sagittal) needs no more."""
    return joint_frames_last(walk, x, frames_last(base))


def joint_frames_last(walk: list[Link], x: np.ndarray, frame: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """joint_frames with the base given frames last (4, 3, F) (frames_last): a caller that walks several
    legs or trials under the same waist turns it once."""
    _, _, axes, origins = down_last(walk, np.ascontiguousarray(x.T), frame, to_foot=False)
    return axes.transpose(2, 0, 1), origins.transpose(2, 0, 1)


def _along(walk: list[Link], x: np.ndarray, base: np.ndarray, to_foot: bool):
    """Down the leg, frames last: the frame's columns (3 x (3, F)) and position (3, F) where it stops
    (the foot, or the last joint when not to_foot), and each joint's world axis and position (J, 3, F)."""
    return down_last(walk, np.ascontiguousarray(x.T), frames_last(base), to_foot)


def frames_last(base: np.ndarray) -> np.ndarray:
    """Poses (F, 4, 4) as (4, 3, F): [k] the rotation's column k (3, F), [3] the position (3, F)."""
    return np.ascontiguousarray(base[:, :3, :].transpose(2, 1, 0))


def frames_last_of(rot: np.ndarray, pos: np.ndarray) -> np.ndarray:
    """frames_last of the poses with rotations rot (F, 3, 3) and positions pos (F, 3), without the (F, 4, 4)."""
    out = np.empty((4, 3, len(pos)))
    out[:3] = rot.transpose(2, 1, 0)
    out[3] = pos.T
    return out


def down_last(walk: list[Link], angles: np.ndarray, frame: np.ndarray, to_foot: bool = True):
    """_along with the joints (J, F) and the base frame (4, 3, F) (frames_last) given frames last."""
    cols = [frame[0], frame[1], frame[2]]
    pos = frame[3]
    count, frames = angles.shape
    axes, origins = np.empty((count, 3, frames)), np.empty((count, 3, frames))  # filled, not stacked
    j = 0
    for link in walk:
        cols, pos = fixed_step(cols, pos, link)
        if link.axis is None:
            continue
        axis = world_axis(cols, link)
        axes[j] = axis
        origins[j] = pos
        value = angles[j] * link.scale + link.offset
        j += 1
        if j == count and not to_foot:
            break
        if link.prismatic:
            pos = pos + axis * value
        else:
            cols = turned(cols, link, value)
    return cols, pos, axes, origins


def last_origin(walk: list[Link], angles: np.ndarray, frame: np.ndarray) -> np.ndarray:
    """The world position (3, F) of the walk's joint after the H joints angles (H, F) turn, under the base frame
    (4, 3, F): down_last's last origin with to_foot False and one more joint, without the other joints' axes and
    origins (the rolled waist's residual asks only where the hip is: core.balance.planar_leg)."""
    cols, pos = [frame[0], frame[1], frame[2]], frame[3]
    j = 0
    for link in walk:
        cols, pos = fixed_step(cols, pos, link)
        if link.axis is None:
            continue
        if j == len(angles):
            return pos
        value = angles[j] * link.scale + link.offset
        j += 1
        if link.prismatic:
            pos = pos + world_axis(cols, link) * value
        else:
            cols = turned(cols, link, value)
    raise ValueError("the walk has no joint after the angles given")


def fixed_step(cols: list[np.ndarray], pos: np.ndarray, link: Link) -> tuple[list[np.ndarray], np.ndarray]:
    """A frame's columns (3 x (3, F)) and position (3, F) carried by the link's fixed shift and turn."""
    pos = pos + combine(cols, link.shift)
    if link.turn is not None:
        cols = [combine(cols, link.turn[:, k]) for k in range(3)]
    return cols, pos


def world_axis(cols: list[np.ndarray], link: Link) -> np.ndarray:
    """The link's joint axis (3, F) in the world, its frame's columns given."""
    return cols[link.principal] * link.axis[link.principal] if link.principal >= 0 else combine(cols, link.axis)


def combine(cols: list[np.ndarray], weights) -> np.ndarray:
    """sum_k cols[k] * weights[k] (3, F): a rotation given by its columns (frames last) times a
    vector (a weight may be per frame (F,): legs solved together, stacked_walk)."""
    out = None
    for column, weight in zip(cols, weights):
        if isinstance(weight, np.ndarray) and weight.ndim:
            term = column * weight
        elif weight != 0.0:
            term = column if weight == 1.0 else column * weight
        else:
            continue
        out = term if out is None else out + term
    return np.zeros_like(cols[0]) if out is None else out


def turned(cols: list[np.ndarray], link: Link, angle: np.ndarray) -> list[np.ndarray]:
    """A rotation's columns (3 x (3, F)) turned by angle (F,) about the link's joint axis, fixed
    in its own frame: about a principal axis (nearly every URDF joint) two columns mix."""
    k = link.principal
    if k < 0:
        turn = axis_angle_to_matrix(link.axis, angle)  # (F, 3, 3)
        return [sum(cols[i] * turn[:, i, m] for i in range(3)) for m in range(3)]
    i, j = (k + 1) % 3, (k + 2) % 3
    c, s = np.cos(angle), link.axis[k] * np.sin(angle)
    out = list(cols)
    out[i] = cols[i] * c + cols[j] * s
    out[j] = cols[j] * c - cols[i] * s
    return out


def rotvec(m: np.ndarray) -> np.ndarray:
    """Rotation vectors (F, 3) of rotations (F, 3, 3) (angles below pi)."""
    v = 0.5 * np.stack([m[:, 2, 1] - m[:, 1, 2], m[:, 0, 2] - m[:, 2, 0], m[:, 1, 0] - m[:, 0, 1]], axis=1)
    sin = np.linalg.norm(v, axis=1)
    cos = 0.5 * (m[:, 0, 0] + m[:, 1, 1] + m[:, 2, 2] - 1.0)
    angle = same_bits(np.arctan2, sin, cos)  # strided, or few frames: see core.model.same_bits
    return v * np.where(sin > 1e-12, angle / np.maximum(sin, 1e-12), 1.0)[:, None]


def stacked_walk(walks: list[list[Link]], counts: list[int]) -> list[Link] | None:
    """One walk for legs built alike (the same joints, axes and fixed turns; shifts may differ),
    leg k's rows counts[k] in turn; None for legs that are not."""
    if len({len(w) for w in walks}) != 1 or len({sum(link.axis is not None for link in w) for w in walks}) != 1:
        return None
    out = []
    for parts in zip(*walks):
        a = parts[0]
        alike = all(p.prismatic == a.prismatic and p.principal == a.principal and p.scale == a.scale
                    and p.offset == a.offset and same_array(p.turn, a.turn) and same_array(p.axis, a.axis) for p in parts)
        if not alike or (a.axis is not None and a.principal < 0):
            return None
        shifts = np.array([p.shift for p in parts])
        shift = [float(shifts[0, k]) if (shifts[:, k] == shifts[0, k]).all() else np.repeat(shifts[:, k], counts)
                 for k in range(3)]
        out.append(Link(shift, a.turn, a.axis, a.principal, a.prismatic, a.scale, a.offset))
    return out


def same_array(a: np.ndarray | None, b: np.ndarray | None) -> bool:
    return (a is None and b is None) or (a is not None and b is not None and np.array_equal(a, b))
