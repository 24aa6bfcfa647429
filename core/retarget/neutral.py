"""The robot's neutral posture: where every solve starts and what its weak prior leans toward.

The zero pose of a URDF is a convention: G1's and H1's arms hang with the forearm
forward, a T-pose robot's stick out sideways. A solver that starts from and leans
toward zero therefore gives another motion for the same mechanism described with
another zero. Arms are instead posed by solving them to hang beside the body with
the forearm and hand forward (which is G1's and H1's zero pose), and what that
leaves open (a wrist's roll) goes to the middle of the joint's range; every other
joint keeps the zero pose (legs straight, waist upright in every humanoid URDF
we know).
"""
from __future__ import annotations

import numpy as np

from ..chains.points import sample_polyline
from ..chains.solver import SolveOptions, solve_chain
from ..feet.geometry import lowest_points
from ..model.kinematics import KinematicTree
from ..motion.source import SourceMotion
from .body_parts import find_body_parts, robot_skeleton

HANGING = ("arm", "hand")  # chains whose neutral is solved: hanging down beside the body
NEUTRAL_ELBOW_RAD = np.radians(90.0)  # the forearm and hand point forward


def neutral_posture(motion: SourceMotion, tree: KinematicTree, plans, targets, axes_rob: np.ndarray,
                    rest_prior: float) -> np.ndarray:
    """(n,) the zero pose with the arms and hands solved to hang (see the module's docstring)."""
    q = np.clip(0.0, tree.lower, tree.upper)[None].copy()
    root = np.eye(4)[None]
    axes = np.asarray(axes_rob)
    for plan in plans:
        if plan.mapping.role not in HANGING:
            continue
        shape = _hanging_shape(motion, plan, -axes[:, 2], axes[:, 0])
        anchor = root if plan.robot.anchor < 0 else tree.link_transform(q, plan.robot.anchor, root)
        q[:, plan.kin.columns] = tree.neutral[plan.kin.columns]
        options = SolveOptions(iterations=30, smoothness=0.0, rest_prior=rest_prior, rest=tree.neutral)
        solve_chain(tree, plan.kin, anchor, q, shape[None], targets[id(plan)][1], options)
    return q[0]


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
