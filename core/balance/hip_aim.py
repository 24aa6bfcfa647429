"""Two hip joints that aim the leg's planar axis, in closed form (core.balance.sagittal).

A leg without an ankle roll keeps its hip in its foot's plane when the two joints above its planar
tail (the H1's hip yaw and roll) turn the tail's axis onto the foot's: two rotations that take one
unit vector onto another, Paden and Kahan's second subproblem (Murray, Li and Sastry 1994, 3.2.2).
Solved by Gauss-Newton this took four walks of the head per placement residual, about a fifth of
the H1 gait's CPU; the closed form is one, and meets the converged Gauss-Newton angles to 6e-16 rad
on the H1 walk.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..model.same_bits import same_bits
from .leg_chain import Link
from .waist import wrap

REACH_TOL = 1e-12  # a negative squared lever beyond this: the axis cannot be aimed (the solve falls back)


@dataclass
class HeadAim:
    """The head as turns about its two joints: the tail's axis in the world is
    base . before . Rot(first, a) . Rot(second, b) . aim, a and b the joints' angles."""

    before: np.ndarray  # (3, 3) the fixed turns above the first joint
    first: np.ndarray  # (3,) unit, in the frame after `before`
    second: np.ndarray  # (3,) unit, the second joint's axis moved by the fixed turn between the two
    aim: np.ndarray  # (3,) unit, the tail's axis carried the same way
    scale: np.ndarray  # (2,) angle = x * scale + offset (core.balance.leg_chain.Link)
    offset: np.ndarray

    def __post_init__(self):
        w1, w2, p = self.first, self.second, self.aim
        normal = np.cross(w1, w2)
        self._against = np.column_stack([w1, w2, normal, np.cross(w1, normal)])  # v's products with these
        self._fixed = (float(w1 @ w2), float(w1 @ p), float(w2 @ p), float(normal @ p), float(w1 @ np.cross(w2, p)),
                       float(normal @ np.cross(w2, p)), float(normal @ normal))
        self._picks = _selections(self.before, self._against)

    @classmethod
    def build(cls, head: list[Link]) -> "HeadAim | None":
        """None unless the head walks exactly two revolute joints above the tail's first, their axes
        not parallel (then they aim nothing the one could not)."""
        turns, joints = [np.eye(3)], []
        for link in head:
            if link.turn is not None:
                turns[-1] = turns[-1] @ link.turn
            if link.axis is not None:
                if link.prismatic:
                    return None
                joints.append(link)
                turns.append(np.eye(3))
        if len(joints) != 3:
            return None
        unit = [j.axis / np.linalg.norm(j.axis) for j in joints]
        between, after = turns[1], turns[2]
        if abs(unit[0] @ between @ unit[1]) > 1.0 - 1e-9:
            return None
        return cls(turns[0], unit[0], between @ unit[1], between @ after @ unit[2],
                   np.array([joints[0].scale, joints[1].scale]), np.array([joints[0].offset, joints[1].offset]))

    def solve(self, base_rot: np.ndarray | None, target: np.ndarray, start: np.ndarray,
              frame: np.ndarray | None = None) -> np.ndarray | None:
        """The head's joints x (F, 2) that turn the tail's axis onto target (F, 3) under the waist's
        rotation base_rot (F, 3, 3), of the two solutions the nearer start (F, 2); None where some
        sample cannot be aimed (the caller's Gauss-Newton then finds the nearest). frame: the waist
        frames last (4, 3, F) (leg_chain.frames_last) where the caller has them (base_rot may then be None).

        Rot(w1, a) Rot(w2, b) p = v: the middle vector c = Rot(w2, b) p = alpha w1 + beta w2 +
        gamma (w1 x w2) keeps its parts along both axes, and each angle is the first subproblem's
        (the sine axis . (u x w), the cosine of the parts across the axis), which with c so written
        are a few products of v with fixed vectors: no (F, 3) cross product."""
        both = self.solutions(base_rot, target, frame)
        return None if both is None else self.nearer(*both, start)

    def solutions(self, base_rot: np.ndarray | None, target: np.ndarray,
                  frame: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray] | None:
        """Both solutions' joints (a, b), each (2, F) (rows: gamma's + and - sign), of solve; None where some
        sample cannot be aimed. Each sample's are its own inputs' alone (elementwise), so samples stacked
        (both legs, several trials: core.balance.planar_leg.PlanarPair) get the bits each gets alone."""
        cos, p_w1, p_w2, p_normal, p_triple, p_normal_triple, normal2 = self._fixed
        v_w1, v_w2, v_normal, v_lever = self._target_parts(base_rot, target, frame)
        alpha = (cos * p_w2 - v_w1) / (cos * cos - 1.0)
        beta = (cos * v_w1 - p_w2) / (cos * cos - 1.0)
        lever2 = (1.0 - alpha ** 2 - beta * beta - 2.0 * alpha * beta * cos) / normal2
        if (lever2 < -REACH_TOL).any():
            return None
        lever = np.sqrt(np.maximum(lever2, 0.0))
        # the two solutions differ only in gamma's sign, rows (2, F): s + g and s - g (s + (-g) to the bit), the parts
        # without it worked out once and each arctan2 one call over both
        first = _both(beta * v_normal, lever * v_lever, alpha * v_w1 + beta * v_w2, lever * v_normal, v_w1 ** 2)
        second = _both(alpha * p_triple, lever * p_normal_triple, alpha * p_w1 + beta * p_w2, lever * p_normal,
                       p_w2 ** 2)
        return self._joint(first, 0), self._joint(second, 1)

    def nearer(self, a: np.ndarray, b: np.ndarray, start: np.ndarray) -> np.ndarray:
        """Of the solutions (a, b) (solutions) the one nearer start (F, 2), as (F, 2)."""
        apart = np.empty((2,) + a.shape)  # both joints' turns from the start, wrapped in one call
        np.subtract(a, start[:, 0], out=apart[0])
        np.subtract(b, start[:, 1], out=apart[1])
        for k in (0, 1):
            if self.scale[k] != 1.0:
                apart[k] *= self.scale[k]
        far = np.abs(wrap(apart))
        nearer = far[0, 1] + far[1, 1] < far[0, 0] + far[1, 0]  # (a's + b's) of the second against the first's
        out = np.empty((2, len(nearer)))  # rows: returned as its transpose (F, 2), whose columns are contiguous
        for row, both in zip(out, (a, b)):
            np.copyto(row, both[0])
            np.copyto(row, both[1], where=nearer)
        return out.T

    def _target_parts(self, base_rot: np.ndarray, target: np.ndarray, frame: np.ndarray | None):
        """The target in the first joint's frame, v (F, 3), as its products (F,) with w1, w2, w1 x w2 and
        w1 x (w1 x w2). Where `before` is the identity and those are principal axes (the H1's: _picks),
        each is one of v's entries or its negative, the bits the products give; v's entries as three
        sums over the waist's columns, einsum's order."""
        if self._picks is None:
            base_rot = frame[:3].transpose(2, 1, 0) if base_rot is None else base_rot
            v = np.einsum("fji,fj->fi", base_rot, target) @ self.before
            return (v @ self._against).T
        columns = base_rot.transpose(2, 1, 0) if frame is None else frame  # [i][j] the rotation's (j, i) entry
        t = target.T
        v = [columns[i][0] * t[0] + columns[i][1] * t[1] + columns[i][2] * t[2] for i in range(3)]
        return [v[k] if sign > 0 else -v[k] for k, sign in self._picks]

    def _joint(self, angle: np.ndarray, k: int) -> np.ndarray:
        """The joint's x for a turn (Link's angle = x * scale + offset; x itself where they are 1 and 0)."""
        if self.scale[k] == 1.0 and self.offset[k] == 0.0:
            return angle
        return (angle - self.offset[k]) / self.scale[k]


def _both(sine: np.ndarray, tilt: np.ndarray, cosine: np.ndarray, fall: np.ndarray, square: np.ndarray) -> np.ndarray:
    """arctan2(sine +- tilt, cosine +- fall - square) as rows (2, F), + first."""
    up, across = np.empty((2, len(sine))), np.empty((2, len(sine)))
    np.add(sine, tilt, out=up[0])
    np.subtract(sine, tilt, out=up[1])
    np.add(cosine, fall, out=across[0])
    np.subtract(cosine, fall, out=across[1])
    np.subtract(across, square, out=across)
    return same_bits(np.arctan2, up, across)  # few frames: see core.model.same_bits


def _selections(before: np.ndarray, against: np.ndarray) -> list[tuple[int, float]] | None:
    """Per column of against (3, 4) the entry of v it picks and its sign, where `before` is the identity and each
    column is a principal axis or its negative (v's product with it is that entry, x * 1 plus zeros); else None."""
    if not np.array_equal(before, np.eye(3)):
        return None
    picks = []
    for column in against.T:
        nonzero = np.flatnonzero(column)
        if len(nonzero) != 1 or abs(column[nonzero[0]]) != 1.0:
            return None
        picks.append((int(nonzero[0]), float(column[nonzero[0]])))
    return picks
