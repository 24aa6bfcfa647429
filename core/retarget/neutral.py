"""The robot's neutral posture: where every solve starts and what its weak prior leans toward.

The zero pose of a URDF is a convention: G1's and H1's arms hang with the forearm
forward, a T-pose robot's stick out sideways; legs may zero straight or in a crouch.
A solver that starts from and leans toward zero therefore gives another motion for
the same mechanism described with another zero. Arms are instead posed by solving
them to hang beside the body with the forearm and hand forward (which is G1's and
H1's zero pose), and what that leaves open (a wrist's roll) goes to the middle of
the joint's range. Legs stand straight by their mechanism (LegMarks): thigh and
shin hanging straight down seen from the side, the knee axis sideways, the sole
level (the G1's and H1's zero pose). A leg whose zero pose already stands so, within
STRAIGHT_DEG, keeps it to the bit; any other is solved to it (the G1 zeroed in a
crouch baked the walk 0.59 deg RMS apart from the G1, now 1e-5 deg). The gait reads the
same straight legs (neutral_legs) as the robot as built. Every other
joint keeps the zero pose (the waist upright in every humanoid URDF we know).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..chains.points import sample_polyline
from ..chains.solver import SolveOptions, solve_chain
from ..feet.geometry import body_points, lowest_points, standing_rotation, subtree_links
from ..model.kinematics import FIXED, REVOLUTE, KinematicTree
from ..motion.source import SourceMotion
from .body_parts import find_body_parts, robot_skeleton

HANGING = ("arm", "hand")  # chains whose neutral is solved: hanging down beside the body
NEUTRAL_ELBOW_RAD = np.radians(90.0)  # the forearm and hand point forward
# a leg whose zero pose leans (LegMarks.lean) less than this stands straight and keeps it to the bit: a URDF's
# rounding leans a straight leg 0.01 deg at most (offsets to 0.1 mm over a 0.3 m thigh; the G1 0.0004 deg, the
# H1 0), the crouched zeros we know lean 17-34 deg; a 0.1 deg crouch kept as the neutral moved the G1's walk
# 0.009 deg RMS (with avoidance, any change may flip a branch: the hop 0.05 deg RMS, 0.2 deg 0.33)
STRAIGHT_DEG = 0.05
STRAIGHT_ITERATIONS = 30
STRAIGHT_STEP_RAD = 1e-6  # central differences of LegMarks.lean


def neutral_posture(motion: SourceMotion, tree: KinematicTree, plans, targets, axes_rob: np.ndarray,
                    rest_prior: float) -> np.ndarray:
    """(n,) the zero pose with the arms and hands solved to hang and the legs to stand straight (see the
    module's docstring)."""
    q = np.clip(0.0, tree.lower, tree.upper)[None].copy()
    root = np.eye(4)[None]
    axes = np.asarray(axes_rob)
    for plan in plans:
        if plan.mapping.role == "leg":
            _stand_straight(tree, q, plan.robot.paths[0].links, plan.mapping.robot_landmarks, axes)
        if plan.mapping.role not in HANGING:
            continue
        shape = _hanging_shape(motion, plan, -axes[:, 2], axes[:, 0])
        anchor = root if plan.robot.anchor < 0 else tree.link_transform(q, plan.robot.anchor, root)
        q[:, plan.kin.columns] = tree.neutral[plan.kin.columns]
        options = SolveOptions(iterations=30, smoothness=0.0, rest_prior=rest_prior, rest=tree.neutral)
        solve_chain(tree, plan.kin, anchor, q, shape[None], targets[id(plan)][1], options)
    return q[0]


@dataclass
class LegMarks:
    """The points and directions that say whether a leg stands straight: the hip (its hip pitch
    joint), the knee (its first landmark link, turning about the knee axis), the ankle (its tip
    link) and the sole's outward normal in that link's frame (the foot laid level by
    core.feet.geometry.standing_rotation; a foot without geometry keeps its zero orientation)."""

    columns: np.ndarray  # (V,) q columns of the leg's joints
    hip: int  # the link whose origin is the hip (its joint on the knee's axis)
    knee: int
    ankle: int
    sole: np.ndarray  # (3,) in the ankle link's frame

    @classmethod
    def on(cls, tree: KinematicTree, links: list[int], landmarks: list[str] | None,
           axes: np.ndarray) -> "LegMarks | None":
        """The marks of the leg chain's links (its base down to its tip) and robot_landmarks; None
        for a leg without a turning knee landmark between a hip joint and its tip."""
        landmarks = landmarks or []
        knee = tree.link_index(landmarks[0]) if landmarks and landmarks[0] in tree.link_names else -1
        if knee not in links[:-1] or tree.kind[knee] != REVOLUTE:
            return None
        zero = tree.zero_pose()
        hips = [i for i in links[:links.index(knee)] if tree.kind[i] == REVOLUTE]
        if not hips:
            return None
        # the thigh swings about the hip joint whose axis is the knee's (the hip pitch), not the chain's
        # first joint (the H1's hip yaw sits 4 cm behind its knee)
        along = [abs(zero[i, :3, :3] @ tree.axes[i] @ zero[knee, :3, :3] @ tree.axes[knee]) for i in hips]
        hip = hips[len(hips) - 1 - int(np.argmax(along[::-1]))]  # of equals, the nearest the knee
        ankle = links[-1]
        columns = np.array(list(dict.fromkeys(int(tree.qindex[i]) for i in links  # a mimic moves with its leader
                                              if tree.kind[i] != FIXED and tree.qindex[i] >= 0)), dtype=int)
        body = body_points(tree, ankle, subtree_links(tree, ankle))  # as planting's foot, from its tip link
        level = standing_rotation(body, axes.T @ zero[ankle, :3, :3])  # level to the body's up
        return cls(columns, hip, knee, ankle, level.T @ np.array([0.0, 0.0, -1.0]))

    def lean(self, tree: KinematicTree, q: np.ndarray, axes: np.ndarray) -> np.ndarray:
        """(F, 6) sines of how far the leg is from standing straight for q (F, n), root at the origin:
        the thigh's (hip to knee) and the shin's (knee to ankle) lean forward, the knee axis's turn
        off the sideways axis toward forward and up, and the sole's tilt forward and sideways."""
        poses = tree.poses(q, None, [self.hip, self.knee, self.ankle])
        hip, knee, ankle = (poses[i][:, :3, 3] for i in (self.hip, self.knee, self.ankle))
        thigh, shin = (knee - hip) @ axes, (ankle - knee) @ axes  # (F, 3) forward, left, up
        axis = (poses[self.knee][:, :3, :3] @ tree.axes[self.knee]) @ axes
        sole = (poses[self.ankle][:, :3, :3] @ self.sole) @ axes
        return np.column_stack([thigh[:, 0] / np.linalg.norm(thigh, axis=1), shin[:, 0] / np.linalg.norm(shin, axis=1),
                                axis[:, 0], axis[:, 2], sole[:, 0], sole[:, 1]])


def neutral_legs(tree: KinematicTree, mapping, axes_rob: np.ndarray) -> np.ndarray:
    """(n,) the zero pose with every enabled leg chain of `mapping` stood straight, as neutral_posture
    stands them: what the gait (core.balance) reads as the legs' posture as built, where it has no
    bake to solve from."""
    q = np.clip(0.0, tree.lower, tree.upper)[None].copy()
    for chain in mapping.enabled_chains():
        if chain.role == "leg" and chain.robot_tips:
            _stand_straight(tree, q, tree.path(chain.robot_base, chain.robot_tips[0]), chain.robot_landmarks,
                            np.asarray(axes_rob))
    return q[0]


def _stand_straight(tree: KinematicTree, q: np.ndarray, links: list[int], landmarks: list[str] | None,
                    axes: np.ndarray) -> None:
    """Solve the leg's joints in q (1, n) to stand straight (LegMarks.lean all zero) when its zero
    pose does not already, within STRAIGHT_DEG: Gauss-Newton, least change where the marks leave
    joints open."""
    leg = LegMarks.on(tree, links, landmarks, axes)
    if leg is None:
        return
    lean = start = leg.lean(tree, q, axes)[0]
    if np.abs(lean).max() <= np.sin(np.radians(STRAIGHT_DEG)):
        return
    x, cols = q[0].copy(), leg.columns
    for _ in range(STRAIGHT_ITERATIONS):
        trial = np.repeat(x[None], 2 * len(cols), axis=0)
        trial[2 * np.arange(len(cols)), cols] += STRAIGHT_STEP_RAD
        trial[2 * np.arange(len(cols)) + 1, cols] -= STRAIGHT_STEP_RAD
        moved = leg.lean(tree, trial, axes)
        jacobian = (moved[0::2] - moved[1::2]).T / (2 * STRAIGHT_STEP_RAD)
        step = np.linalg.lstsq(jacobian, -lean, rcond=None)[0]
        x[cols] += step / max(1.0, np.abs(step).max() / 0.5)  # at most half a radian a step
        lean = leg.lean(tree, x[None], axes)[0]
        if np.abs(step).max() < 1e-12:
            break
    if np.abs(lean).max() >= np.abs(start).max():
        return  # no straighter than its zero pose (a leg that cannot stand straight): as it was
    # a straight pose past a joint's limit: the nearest the joint allows (the other joints as solved)
    q[0, cols] = np.clip(x[cols], tree.lower[cols], tree.upper[cols])


def _hanging_shape(motion: SourceMotion, plan, down: np.ndarray, forward: np.ndarray) -> np.ndarray:
    """Target points (M, 3) of an arm hanging along `down`, bent toward `forward` by
    NEUTRAL_ELBOW_RAD after its landmark (the elbow); a hand points along the forearm."""
    out = []
    bent = np.cos(NEUTRAL_ELBOW_RAD) * down + np.sin(NEUTRAL_ELBOW_RAD) * forward
    landmarks = plan.mapping.source_landmarks or []
    for polyline, path, rpath, fractions in zip(plan.source.polylines(motion, rest=True), plan.source.paths,
                                                plan.robot.paths, plan.source_fractions):
        seg = np.linalg.norm(np.diff(polyline[0], axis=0), axis=1)
        if plan.mapping.role == "hand":
            elbow = 0
        elif landmarks and landmarks[0] in motion.bone_names and motion.index(landmarks[0]) in path:
            elbow = path.index(motion.index(landmarks[0]))
        else:
            elbow = len(seg) // 2
        steps = np.where((np.arange(len(seg)) < elbow)[:, None], down, bent) * seg[:, None]
        canonical = np.concatenate([np.zeros((1, 3)), np.cumsum(steps, axis=0)])[None]
        out.append(rpath.length * sample_polyline(canonical, np.asarray(fractions))[0] / max(seg.sum(), 1e-9))
    return np.concatenate(out)


def standing_root(tree: KinematicTree, legs_driven: bool = False) -> np.ndarray:
    """Root position (3,) in metres of a robot whose base stays fixed: a legged robot driven
    without its legs (an upper-body clip) stands on them in its zero pose, its lowest point on
    the ground; with its base at the origin its legs went through the floor unreported. A robot
    without legs (an arm on its base), or whose legs the clip drives with the root held (root
    mode "fixed"), keeps its base at the origin. The bake and the live path both place it here."""
    if legs_driven or not find_body_parts(robot_skeleton(tree)).legs:
        return np.zeros(3)
    q = np.clip(0.0, tree.lower, tree.upper)[None]
    lowest = lowest_points(tree, q, np.eye(4)[None], skip=set(), near_m=np.inf)[0]
    return np.array([0.0, 0.0, -lowest]) if np.isfinite(lowest) else np.zeros(3)
