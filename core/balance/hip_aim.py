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

from .leg_chain import Link
from .waist import wrap

REACH_TOL = 1e-12  # a negative squared lever beyond this: the axis cannot be aimed (the solve falls back)
SIGNS = np.array([[1.0], [-1.0]])  # gamma's sign in the two solutions


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

    def solve(self, base_rot: np.ndarray, target: np.ndarray, start: np.ndarray) -> np.ndarray | None:
        """The head's joints x (F, 2) that turn the tail's axis onto target (F, 3) under the waist's
        rotation base_rot (F, 3, 3), of the two solutions the nearer start (F, 2); None where some
        sample cannot be aimed (the caller's Gauss-Newton then finds the nearest).

        Rot(w1, a) Rot(w2, b) p = v: the middle vector c = Rot(w2, b) p = alpha w1 + beta w2 +
        gamma (w1 x w2) keeps its parts along both axes, and each angle is the first subproblem's
        (the sine axis . (u x w), the cosine of the parts across the axis), which with c so written
        are a few products of v with fixed vectors: no (F, 3) cross product."""
        cos, p_w1, p_w2, p_normal, p_triple, p_normal_triple, normal2 = self._fixed
        v = np.einsum("fji,fj->fi", base_rot, target) @ self.before  # the target in the frame of the first joint
        v_w1, v_w2, v_normal, v_lever = (v @ self._against).T
        alpha = (cos * p_w2 - v_w1) / (cos * cos - 1.0)
        beta = (cos * v_w1 - p_w2) / (cos * cos - 1.0)
        lever2 = (1.0 - alpha ** 2 - beta * beta - 2.0 * alpha * beta * cos) / normal2
        if (lever2 < -REACH_TOL).any():
            return None
        lever = np.sqrt(np.maximum(lever2, 0.0))
        # the two solutions differ only in gamma's sign: the parts without it are worked out once (a + (-g) is
        # a - g to the bit, so each solution is what it was with its own gamma)
        sine, cosine = beta * v_normal, alpha * v_w1 + beta * v_w2
        tilt, fall = lever * v_lever, lever * v_normal
        square = v_w1 ** 2
        sine2, cosine2 = alpha * p_triple, alpha * p_w1 + beta * p_w2
        tilt2, fall2 = lever * p_normal_triple, lever * p_normal
        square2 = p_w2 ** 2
        # both solutions at once, rows (2, F): gamma's sign a column (times -1 is a negation, exact), the same
        # elementwise arithmetic as each on its own (half the calls), and the nearer start taken
        tilt, fall = tilt * SIGNS, fall * SIGNS
        tilt2, fall2 = tilt2 * SIGNS, fall2 * SIGNS
        first = np.arctan2(sine + tilt, cosine + fall - square)
        second = np.arctan2(sine2 + tilt2, cosine2 + fall2 - square2)
        a, b = (first - self.offset[0]) / self.scale[0], (second - self.offset[1]) / self.scale[1]
        far = np.abs(wrap((a - start[:, 0]) * self.scale[0])) + np.abs(wrap((b - start[:, 1]) * self.scale[1]))
        nearer = far[1] < far[0]
        return np.column_stack([np.where(nearer, a[1], a[0]), np.where(nearer, b[1], b[0])])
