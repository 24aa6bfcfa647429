"""The robot's torso follows the actor's chest, whatever the two bodies' proportions.

Matching the spine chain's normalised shape (pelvis to both shoulders) asks a
robot with wider shoulders or a shorter trunk for a shape it cannot take, and
the compromise tilts its torso. Instead the spine's targets are the robot's own
zero-pose spine turned, about its first waist joint, so that its chest frame
(shoulder line, and hips to shoulders) is the actor's: reachable whenever the
waist can turn that far. What the waist cannot do is left to the root
(core.retarget.pipeline), within the robot's heading.
"""
from __future__ import annotations

import numpy as np

from ..chains.solver import ChainKinematics
from ..model.kinematics import KinematicTree
from ..model.transforms import rotate_each, rotate_points
from ..motion.source import SourceMotion
from .viewer import body_landmarks, chest_frames

CHEST = ("left_shoulder", "right_shoulder", "left_hip", "right_hip")


def chest_bones(motion: SourceMotion, chains) -> list[int] | None:
    """The source bones (left and right shoulder, left and right hip) whose heads set the actor's
    chest, or None without all four."""
    marks = body_landmarks(chains, disabled=True)
    if not all(k in marks for k in CHEST):
        return None
    return [motion.index(marks[k][0]) for k in CHEST]


def source_chest(motion: SourceMotion, chains) -> np.ndarray | None:
    """The actor's chest frames (F, 3, 3) in the world, or None without both hips and shoulders."""
    bones = chest_bones(motion, chains)
    return None if bones is None else chest_frames(*(motion.heads[:, bone] for bone in bones))


def robot_chest(tree: KinematicTree, chains, poses: dict[int, np.ndarray]) -> np.ndarray:
    """The robot's chest frames (F, 3, 3) from link poses {link: (F, 4, 4)} (see body_landmarks)."""
    marks = body_landmarks(chains, disabled=True)
    return chest_frames(*(poses[tree.link_index(marks[k][1])][:, :3, 3] for k in CHEST))


def chest_links(tree: KinematicTree, chains) -> list[int]:
    marks = body_landmarks(chains, disabled=True)
    return [tree.link_index(marks[k][1]) for k in CHEST]


class SpineShape:
    """The spine chain's zero-pose reference points, read once: spine_targets turns them."""

    def __init__(self, tree: KinematicTree, kin: ChainKinematics, chains):
        zero = tree.zero_pose()
        self.zero_chest = robot_chest(tree, chains, {i: zero[i][None] for i in chest_links(tree, chains)})[0]
        link, local = kin.chain.origin
        origin = zero[link, :3, :3] @ local + zero[link, :3, 3]
        points = np.einsum("mij,mj->mi", zero[kin.point_link, :3, :3], kin.point_local) + zero[kin.point_link, :3, 3]
        waist = zero[kin.chain.variables[0], :3, 3] if kin.chain.variables else origin
        self.moved = kin.mask.any(axis=1)  # points the waist joints carry; the rest ride on the pelvis
        self.rel = np.where(self.moved[:, None], points - waist, points - origin)
        self.waist_offset = waist - origin

    def __call__(self, chest_target: np.ndarray, root_rot: np.ndarray) -> np.ndarray:
        turn = chest_target @ (root_rot @ self.zero_chest).swapaxes(1, 2)  # world rotation of the torso from zero
        world = rotate_points(root_rot, self.rel)
        turned = rotate_each(turn, world)
        return np.where(self.moved[None, :, None], turned + (root_rot @ self.waist_offset)[:, None], world)


def spine_targets(tree: KinematicTree, kin: ChainKinematics, chains, chest_target: np.ndarray,
                  root_rot: np.ndarray) -> np.ndarray:
    """Targets (F, M, 3) of the spine chain's reference points, relative to its origin: the
    zero-pose points turned with the torso so its chest frame is `chest_target` (F, 3, 3, world)."""
    return SpineShape(tree, kin, chains)(chest_target, root_rot)


def refined_spine_targets(tree: KinematicTree, kin: ChainKinematics, chains, chest_target: np.ndarray,
                          q: np.ndarray, root: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(targets (F, M, 3), residual (F, 3, 3)) from a solved spine: its points turned by what is
    left of the chest's rotation about the joint that carries the torso. A waist of several
    joints does not turn about one point; from a solved pose the rest is small and turns
    about its last joint, so the second solve lands on the chest's orientation exactly."""
    anchor = root if kin.chain.anchor < 0 else tree.link_transform(q, kin.chain.anchor, root)
    points, _ = kin.evaluate(tree, anchor, q, False)  # (F, M, 3) relative to the chain origin
    last = max(kin.chain.variables, key=tree.depth)
    link, local = kin.chain.origin
    poses = tree.poses(q, root, [last, link] + chest_links(tree, chains))
    origin = np.einsum("fij,j->fi", poses[link][:, :3, :3], local) + poses[link][:, :3, 3]
    joint = (poses[last][:, :3, 3] - origin)[:, None]
    residual = chest_target @ robot_chest(tree, chains, poses).swapaxes(1, 2)
    moved = kin.mask.any(axis=1)[None, :, None]
    turned = joint + rotate_each(residual, points - joint)
    return np.where(moved, turned, points), residual


def residual_deg(residual: np.ndarray) -> np.ndarray:
    """Angle (F,) in degrees of rotations (F, 3, 3)."""
    cos = (np.trace(residual, axis1=1, axis2=2) - 1.0) / 2.0
    return np.degrees(np.arccos(np.clip(cos, -1.0, 1.0)))


def _swing(rot: np.ndarray) -> np.ndarray:
    """The part (F, 3, 3) of rotations (F, 3, 3) that tilts the vertical: the shortest rotation
    taking z to rot @ z, so the heading (the turn about z) is left out."""
    z = np.array([0.0, 0.0, 1.0])
    tip = rot[:, :, 2]
    axis = np.cross(z, tip)
    s = np.linalg.norm(axis, axis=1)
    c = np.clip(tip[:, 2], -1.0, 1.0)
    k = np.where(s[:, None] > 1e-12, axis / np.maximum(s, 1e-12)[:, None], np.array([1.0, 0.0, 0.0]))
    cross = np.zeros((len(rot), 3, 3))
    cross[:, 0, 1], cross[:, 0, 2], cross[:, 1, 2] = -k[:, 2], k[:, 1], -k[:, 0]
    cross -= cross.swapaxes(1, 2)
    return np.eye(3) + s[:, None, None] * cross + (1.0 - c)[:, None, None] * (cross @ cross)


def leaned_root(tree: KinematicTree, chains, root: np.ndarray, residual: np.ndarray) -> np.ndarray:
    """The root (F, 4, 4) tilted by what the solved waist leaves of the chest's lean (the swing of
    the torso's `residual` rotation, its heading kept), turned about the hip centre so the legs
    keep their place."""
    tilt = _swing(residual)
    zero = tree.zero_pose()
    hips = np.mean([zero[i, :3, 3] for i in chest_links(tree, chains)[2:]], axis=0)  # root frame
    out = root.copy()
    out[:, :3, :3] = tilt @ root[:, :3, :3]
    pivot = np.einsum("fij,j->fi", root[:, :3, :3], hips) + root[:, :3, 3]
    out[:, :3, 3] = pivot - np.einsum("fij,j->fi", out[:, :3, :3], hips)
    return out


def chest_target(motion: SourceMotion, chains, to_robot: np.ndarray) -> np.ndarray | None:
    """The actor's chest frames carried into the robot's world (F, 3, 3), or None without them."""
    chest = source_chest(motion, chains)
    return None if chest is None else to_robot @ chest


LEAN_DEG = 0.5  # a torso this far from the chest once the waist has converged leans the root
MAX_AIMS = 3  # spine solves aimed from the solved pose before the root leans


class TorsoAim:
    """The spine chain's targets from one solve to the next.

    First the robot's zero-pose spine turned to the chest; then, while that still brings
    the torso closer, the same aimed from the solved pose; then, if the waist (its joints
    or their limits) leaves the torso leaning short of the chest and the root floats, the
    root tilts by the rest (its heading kept) and the spine is aimed once more.
    """

    def __init__(self, tree: KinematicTree, chains, kin: ChainKinematics, chest: np.ndarray, may_lean: bool):
        self.tree, self.chains, self.kin, self.chest, self.may_lean = tree, chains, kin, chest, may_lean
        self.passes: list[tuple[float, str]] = []  # (worst residual, degrees; what followed)

    def first_targets(self, root_rot: np.ndarray) -> np.ndarray:
        return spine_targets(self.tree, self.kin, self.chains, self.chest, root_rot)

    def next_targets(self, q: np.ndarray, root: np.ndarray) -> np.ndarray | None:
        """Targets for another spine solve (the root may be tilted in place), or None when done."""
        turned, residual = refined_spine_targets(self.tree, self.kin, self.chains, self.chest, q, root)
        worst = float(residual_deg(residual).max())
        converging = not self.passes or worst < 0.5 * self.passes[-1][0]
        if worst < LEAN_DEG or any(step == "lean" for _, step in self.passes):
            return None
        if converging and len(self.passes) < MAX_AIMS:
            self.passes.append((worst, "aim"))
        elif self.may_lean:
            root[:] = leaned_root(self.tree, self.chains, root, residual)
            turned, _ = refined_spine_targets(self.tree, self.kin, self.chains, self.chest, q, root)
            self.passes.append((worst, "lean"))
        else:
            return None
        return turned
