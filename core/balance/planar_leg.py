"""A leg without an ankle roll (the H1's): its lowest joints turn about one axis, so with its sole level
its hip stays in a plane fixed to the foot. What such a leg is (PlanarLeg), how the rolled waist solves
it standing (standing_legs), and whether a robot's legs are all so (planar_legs)."""
from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from ..model.kinematics import REVOLUTE, KinematicTree
from ..model.transforms import rotate_points
from .hip_aim import HeadAim
from .leg_chain import Link, frames_last, joint_frames_last, last_origin, link_walk, stacked_walk
from .legs import FULL_LEG, LegIK, built_pose
from .support import foot_bodies, sole_centre

PARALLEL_COS = 0.999  # joint axes this parallel turn in one plane
HEAD_ITERATIONS = 6
WALKS_KEPT = 8  # PlanarPair's walks for so many shapes of stack
HEAD_CONVERGED_RAD = 1e-9  # a head step this small leaves the next one (its square) below a double's rounding


@dataclass
class PlanarLeg:
    """A leg's joints above its planar tail (head) and the plane the tail keeps in the foot frame."""

    leg: LegIK
    head: list[Link]  # the walk from the base through the tail's first link
    head_columns: np.ndarray  # q columns of the joints above the tail
    axis_foot: np.ndarray  # (3,) the tail's joint axis in the foot link's frame
    offset_m: float  # the hip's distance from the foot link's origin along that axis
    left: float  # +1 for a leg on the waist's left (+y), -1 on its right
    aim: HeadAim | None = None  # the head's two joints in closed form (None: Gauss-Newton)

    @classmethod
    def build(cls, tree: KinematicTree, leg: LegIK) -> "PlanarLeg | None":
        """None for a leg whose foot can roll (six joints) or whose lowest joints do not turn in one plane."""
        if len(leg.columns) >= FULL_LEG:
            return None
        jointed = [link for link in leg.links if tree.qindex[link] >= 0]
        zero = built_pose(tree, leg.neutral)  # the leg standing straight
        axes = np.array([zero[link, :3, :3] @ tree.axes[link] for link in jointed])
        tail = 1
        while tail < len(jointed) and abs(axes[-tail - 1] @ axes[-1]) > PARALLEL_COS:
            tail += 1
        head = len(jointed) - tail
        if tail < 3 or head < 2 or not (tree.kind[jointed] == REVOLUTE).all():
            return None
        first = jointed[head]
        foot = zero[leg.foot]
        axis_foot = foot[:3, :3].T @ axes[-1]
        offset = float(axis_foot @ (foot[:3, :3].T @ (zero[first, :3, 3] - foot[:3, 3])))
        walk = link_walk(tree, leg.links[:leg.links.index(first) + 1])
        side = float(np.sign((zero[leg.base, :3, :3].T @ (zero[first, :3, 3] - zero[leg.base, :3, 3]))[1]))
        return cls(leg, walk, leg.columns[:head], axis_foot, offset, side, HeadAim.build(walk))

    def plane_miss(self, base: np.ndarray | None, goal: np.ndarray, x: np.ndarray, target: np.ndarray | None = None,
                   frame: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """How far (F,) the hip is from its foot's plane with the waist at base (F, 4, 4) and the foot at
        goal (F, 4, 4), the head joints turned so the tail's axis is the foot's (from x (F, H)); and those
        head angles. target: the foot's axis in the world (F, 3) (goal's rotation times axis_foot), frame:
        base frames last (leg_chain.frames_last), where the caller has them (the same for every residual
        of one placement, and for both legs; base may then be None)."""
        target = self.aim_of(goal) if target is None else target
        frame = frames_last(base) if frame is None else frame
        aimed = None if self.aim is None else self.aim.solve(None if base is None else base[:, :3, :3], target, x,
                                                             frame)
        if aimed is not None:  # the hip where the head puts it (down_last's origin of the tail's first joint)
            hip = last_origin(self.head, np.ascontiguousarray(aimed.T), frame).T
            return np.einsum("fi,fi->f", target, hip - goal[:, :3, 3]) - self.offset_m, aimed
        x = np.column_stack([x, np.zeros(len(x))])
        for _ in range(HEAD_ITERATIONS):
            axes, _ = joint_frames_last(self.head, x, frame)
            step = _aim_step(axes[:, :-1], axes[:, -1], target)
            x[:, :-1] += step
            if np.abs(step).max(initial=0.0) < HEAD_CONVERGED_RAD:  # quadratic: the next step is below rounding
                break
        _, origins = joint_frames_last(self.head, x, frame)
        return np.einsum("fi,fi->f", target, origins[:, -1] - goal[:, :3, 3]) - self.offset_m, x[:, :-1]

    def aim_of(self, goal: np.ndarray) -> np.ndarray:
        """The tail's axis as the foot at goal (F, 4, 4) has it, in the world (F, 3)."""
        # one BLAS product (the stacked one's bits where the BLAS kernel sums alike: tests/core/test_rotations.py)
        return rotate_points(goal[:, :3, :3], self.axis_foot[None])[:, 0]


@dataclass
class PlanarPair:
    """Both legs' plane misses as one stack of samples, trial after trial, each trial's left leg's rows then its
    right's: one closed-form head solve and one walk to the hips on 2 T F samples in place of one of each per leg
    and trial (a residual of the rolled waist was about half the per-call work of these, each leg's). Built where
    both heads aim in closed form by the same numbers picking the target's parts (HeadAim._picks) and walk alike but
    for their shifts (the H1's mirrored legs: leg_chain.stacked_walk); a row's arithmetic is then its own leg's
    alone, so each leg and trial gets the bits it gets apart."""

    legs: list[PlanarLeg]
    template: list[Link]  # the heads' stacked walk, a shift the legs differ in as its (2,) values, one a leg
    offsets: np.ndarray  # (2, 1) each leg's offset_m
    _walks: dict = field(default_factory=dict, repr=False)  # (trials, frames) -> the walk on those rows (_walk)

    @classmethod
    def build(cls, legs: list[PlanarLeg]) -> "PlanarPair | None":
        """None unless two legs aim alike in closed form and walk alike (then each leg is solved apart)."""
        aims = [p.aim for p in legs]
        if len(legs) != 2 or any(a is None or a._picks is None for a in aims) or not _same_aims(*aims):
            return None
        template = stacked_walk([p.head for p in legs], [1, 1])
        return None if template is None else cls(legs, template, np.array([[p.offset_m] for p in legs]))

    def plane_misses(self, rot: np.ndarray, pos: np.ndarray, targets: np.ndarray, goal_at: np.ndarray,
                     starts: list[list[np.ndarray] | None]) -> tuple[np.ndarray, np.ndarray] | None:
        """PlanarLeg.plane_miss of each leg under each of T trials' waist rotations (T F, 3, 3) and places (T F, 3),
        targets and goal_at (2 T F, 3) the legs' tail axes and foot places stacked as the rows are; starts per
        trial both legs' head angles (F, 2) to start from, None: the first trial's answers. The misses (T, 2, F)
        and head angles (2 T F, 2); None where some sample cannot be aimed (the caller solves each apart)."""
        trials = len(starts)
        frames = len(pos) // trials
        legs_frame = np.empty((4, 3, trials, 2, frames))  # frames last (leg_chain.frames_last), once for each leg
        legs_frame[:3] = rot.reshape(trials, 1, frames, 3, 3).transpose(4, 3, 0, 1, 2)
        legs_frame[3] = pos.reshape(trials, 1, frames, 3).transpose(3, 0, 1, 2)
        legs_frame = legs_frame.reshape(4, 3, -1)
        both = self.legs[0].aim.solutions(None, targets, legs_frame)
        if both is None:
            return None
        a, b = both
        if all(s is not None for s in starts):
            aimed = self.legs[0].aim.nearer(a, b, np.concatenate([h for hs in starts for h in hs]))
        else:  # the first trial's rows first: the others start from its answers
            first = self.legs[0].aim.nearer(a[:, :2 * frames], b[:, :2 * frames], np.concatenate(starts[0]))
            rows = [first] + [self.legs[0].aim.nearer(a[:, 2 * k * frames:2 * (k + 1) * frames],
                                                     b[:, 2 * k * frames:2 * (k + 1) * frames],
                                                     first if starts[k] is None else np.concatenate(starts[k]))
                              for k in range(1, trials)]
            aimed = np.concatenate(rows)
        hip = last_origin(self._walk(trials, frames), np.ascontiguousarray(aimed.T), legs_frame).T
        miss = np.einsum("fi,fi->f", targets, hip - goal_at).reshape(trials, 2, frames) - self.offsets
        return miss, aimed

    def _walk(self, trials: int, frames: int) -> list[Link]:
        """The heads' walk with each leg's shifts on its rows (plane_misses' layout), kept for the last few shapes
        (a placement asks the same few again and again)."""
        walk = self._walks.get((trials, frames))
        if walk is None:
            if len(self._walks) >= WALKS_KEPT:
                self._walks.clear()
            walk = [replace(link, shift=[k if np.ndim(k) == 0 else np.tile(np.repeat(k, frames), trials)
                                         for k in link.shift]) for link in self.template]
            self._walks[(trials, frames)] = walk
        return walk


def _same_aims(a: HeadAim, b: HeadAim) -> bool:
    return all(np.array_equal(getattr(a, f), getattr(b, f)) for f in ("before", "first", "second", "aim", "scale",
                                                                      "offset"))


STANCE_YAW_WEIGHT_M = 0.5  # a radian of a standing foot's heading (its toe slides as it turns). 0.02 before
#   session 11: where the waist's path leaves a hip 8-10 mm off its foot's plane a five-joint leg gave up the heading
#   and turned the standing foot 1-3 degrees (H1 walk: slides 1.7-12 mm); 0.2 (its tilt's) since, the place measured
#   at the ankle: slides 0.0-0.7 mm off the legs' limits, 0.5 / 1.0 then: two more stances slid 5-14 mm
STANCE_ROLL_WEIGHT_M = 0.02  # a radian of a standing foot's roll about its long axis, about the sole's centre


def standing_legs(tree: KinematicTree, legs: list[LegIK]) -> list[LegIK]:
    """The legs as the rolled waist solves them: a standing foot the leg cannot meet (its hip off the
    foot's plane by the path's smoothing, a joint at its limit) rolls about its long axis at the sole's
    centre, which moves no point of its sole across the ground, before it turns or moves (its place
    measured at the ankle and its roll weighed as any tilt, the H1 walk's hips 13 mm off their planes
    slid their feet 1.6 mm: a degree of tilt about the ankle moves the sole 1 mm, and the heading gave way)."""
    zero = tree.zero_pose()
    out = []
    for leg, planar, body in zip(legs, planar_legs(tree, legs), foot_bodies(tree, [leg.foot for leg in legs])):
        standing = leg.flat @ zero[leg.base, :3, :3]  # the foot's level rotation, the robot upright
        along = np.cross(planar.axis_foot, standing[2])  # the world's up in the foot's frame: standing's last row
        out.append(replace(leg, yaw_weight_m=STANCE_YAW_WEIGHT_M, sole=sole_centre(body, standing),
                           roll_axis=along / np.linalg.norm(along), roll_weight_m=STANCE_ROLL_WEIGHT_M, walk=None))
    return out


def _aim_step(axes: np.ndarray, aim: np.ndarray, target: np.ndarray) -> np.ndarray:
    """The Gauss-Newton step (F, H) of the joints about axes (F, H, 3) that turns the unit vector aim
    (F, 3) they carry toward target (F, 3): d aim / d angle = axis x aim. Two joints (the H1's hip
    yaw and roll) are solved in closed form: a batched LAPACK solve of 2 x 2 systems cost more than
    the rest of the step."""
    error = target - aim
    jac = np.empty_like(axes)  # (F, H, 3) the cross products, as numpy.cross forms them
    jac[..., 0] = axes[..., 1] * aim[:, None, 2] - axes[..., 2] * aim[:, None, 1]
    jac[..., 1] = axes[..., 2] * aim[:, None, 0] - axes[..., 0] * aim[:, None, 2]
    jac[..., 2] = axes[..., 0] * aim[:, None, 1] - axes[..., 1] * aim[:, None, 0]
    if jac.shape[1] != 2:
        normal = np.einsum("fhi,fki->fhk", jac, jac) + 1e-9 * np.eye(jac.shape[1])
        return np.linalg.solve(normal, np.einsum("fhi,fi->fh", jac, error)[..., None])[..., 0]
    first, second = jac[:, 0], jac[:, 1]
    a = np.einsum("fi,fi->f", first, first) + 1e-9
    b = np.einsum("fi,fi->f", first, second)
    d = np.einsum("fi,fi->f", second, second) + 1e-9
    r0, r1 = np.einsum("fi,fi->f", first, error), np.einsum("fi,fi->f", second, error)
    det = a * d - b * b
    return np.column_stack([(d * r0 - b * r1) / det, (a * r1 - b * r0) / det])


def planar_legs(tree: KinematicTree, legs: list[LegIK]) -> list[PlanarLeg] | None:
    """Every leg as a PlanarLeg, or None where any leg can roll its foot (it needs none of this)."""
    built = [PlanarLeg.build(tree, leg) for leg in legs]
    return None if any(p is None for p in built) or len(built) != 2 else built
