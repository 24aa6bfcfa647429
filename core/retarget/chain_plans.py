"""The plans of a bake that depend on the clip, the robot and the mapping but on no solve: each
chain's source and robot reference points (their fractions, weights and landmarks aligned), the
body frames of actor and robot, where the root goes, and each chain's targets. core.retarget.pipeline
and the live path (core.stream) both build them.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .body_frame import canonical_axes, pelvis_frames, source_body_frames
from .viewer import body_landmarks
from ..chains.mapping import ChainMapping, Mapping
from ..chains.points import (RobotChain, SourceChain, default_fractions, point_weights, polyline_lengths,
                             robot_chain, robot_polyline, sample_polyline, source_chain)
from ..chains.solver import ChainKinematics
from ..model.kinematics import KinematicTree
from ..model.transforms import rotate_each
from ..motion.source import SourceMotion

ANKLE_WEIGHT = 16.0  # a leg's ankle point: where the leg points is what a viewer reads (walk onto H1: left leg 3.1 deg at 8, 2.9 at 16)


class RetargetError(ValueError):
    """The clip, robot or mapping cannot be retargeted; the message says which part."""


@dataclass
class ChainPlan:
    mapping: ChainMapping
    source: SourceChain
    robot: RobotChain
    kin: ChainKinematics
    source_fractions: list[np.ndarray]
    weights: list[np.ndarray]


def plan_chains(motion: SourceMotion, tree: KinematicTree, mapping: Mapping, warnings: list[str]) -> list[ChainPlan]:
    plans = []
    for chain in mapping.enabled_chains():
        src = source_chain(motion, chain)
        try:  # a tip that is not below its base (a preset's typo) names the chain, as source_chain does
            robot_paths = [tree.path(chain.robot_base, t) for t in chain.robot_tips] if chain.robot_tips else []
        except KeyError as exc:
            raise RetargetError(f"chain {chain.name!r}: {exc.args[0]}") from None
        if len(robot_paths) != len(src.paths):
            raise RetargetError(f"chain {chain.name!r}: {len(src.paths)} source tip(s) but "
                                f"{len(robot_paths)} robot tip(s)")
        movable = sum(1 for p in robot_paths for i in p if tree.qindex[i] >= 0)
        count = chain.points or max(3, movable + 1)
        fractions, ankle = _with_ankle(motion, chain, src, chain.source_fractions or default_fractions(count))
        src_frac = [fractions] * len(src.paths)
        aligned, start = _aligned(motion, tree, chain, src, src_frac[0], warnings)
        rob_frac = [np.asarray(chain.robot_fractions or aligned)] * len(src.paths)
        if len(rob_frac[0]) != len(src_frac[0]):
            raise RetargetError(f"chain {chain.name!r}: source and robot fractions differ in count")
        rob = robot_chain(tree, chain, rob_frac, start)
        weights = [point_weights(len(f), chain.tip_weight, chain.weight) for f in src_frac]
        if ankle is not None:
            weights[0][ankle] = ANKLE_WEIGHT * chain.weight
        plans.append(ChainPlan(chain, src, rob, ChainKinematics.build(tree, rob), src_frac, weights))
    plans.sort(key=lambda p: tree.depth(p.robot.links[0]))
    _unmoved(tree, plans, warnings)
    return plans


def _unmoved(tree: KinematicTree, plans: list[ChainPlan], warnings: list[str]) -> None:
    """Warn about joints inside a chain that no chain's reference point moves (a wrist whose link
    holds no point because the tip sits on its origin): they keep their neutral angle."""
    solved = {v for p in plans for v in p.robot.variables}
    for plan in plans:
        still = [tree.joint_of_link[i].name for path in plan.robot.paths for i in path.links[1:-1]
                 if tree.qindex[i] >= 0 and i not in solved]
        if still:
            warnings.append(f"chain {plan.mapping.name!r}: no reference point moves joint(s) {', '.join(still)}; "
                            "they keep their neutral angle (give the chain a tip past them)")


def _with_ankle(motion: SourceMotion, chain: ChainMapping, src: SourceChain, fractions) -> tuple[np.ndarray, int | None]:
    """A leg's reference points with its last landmark (the ankle) among them, and its index.

    Where a leg points (hip to ankle) is what a viewer reads; weighted like the toe, the ankle
    keeps that direction when thigh, shin and foot proportions differ from the actor's
    (walk onto G1, planted: left leg 4.0 deg before; now README, Benchmarks, what a viewer sees)."""
    fractions = np.asarray(fractions, dtype=float)
    if chain.role != "leg" or not chain.source_landmarks or chain.source_fractions or chain.robot_fractions:
        return fractions, None
    path = src.paths[0]
    cum = polyline_lengths(src.polylines(motion, rest=True)[0][0])
    bone = chain.source_landmarks[-1]
    if bone not in motion.bone_names or motion.index(bone) not in path or cum[-1] <= 0:
        return fractions, None
    at = cum[path.index(motion.index(bone))] / cum[-1]
    if not 0.0 < at < 1.0:
        return fractions, None
    merged = np.union1d(fractions, [at])
    return merged, int(np.flatnonzero(np.isclose(merged, at))[0])


def _aligned(motion: SourceMotion, tree: KinematicTree, chain: ChainMapping, src: SourceChain,
             fractions: np.ndarray, warnings: list[str]) -> tuple[np.ndarray, float]:
    """Robot fractions that put landmark joints (knee, ankle, elbow) where the source has
    them, and the fraction where the robot shape starts (robot_start)."""
    if not chain.source_landmarks and not chain.robot_start:
        return fractions, 0.0
    src_lm, rob_lm = chain.source_landmarks or [], chain.robot_landmarks or []
    if len(src_lm) != len(rob_lm):
        raise RetargetError(f"chain {chain.name!r}: source and robot landmark lists differ in length")
    path = src.paths[0]
    src_cum = polyline_lengths(src.polylines(motion, rest=True)[0][0])
    links = tree.path(chain.robot_base, chain.robot_tips[0])
    corners, pts = robot_polyline(tree, links, chain.robot_tip_offset)
    rob_cum = polyline_lengths(pts)

    def robot_at(link: str) -> float:
        """Where `link` is along the chain (a fixed frame: where the joint before it is)."""
        try:
            k = links.index(tree.link_index(link))
        except (KeyError, ValueError):
            raise RetargetError(f"chain {chain.name!r}: robot link {link!r} is not inside the chain") from None
        return rob_cum[max((c for c, i in enumerate(corners) if links.index(i) <= k), default=0)] / rob_cum[-1]

    start = robot_at(chain.robot_start) if chain.robot_start else 0.0
    src_at, rob_at = [0.0], [start]
    for bone, link in zip(src_lm, rob_lm):
        try:
            src_at.append(src_cum[path.index(motion.index(bone))] / src_cum[-1])
        except (KeyError, ValueError):
            raise RetargetError(f"chain {chain.name!r}: source bone {bone!r} is not inside the chain") from None
        rob_at.append(robot_at(link))
    if np.any(np.diff(src_at) <= 0) or np.any(np.diff(rob_at) <= 0):
        # never stop on a mapping's inconsistency: solve without the landmarks, and say so
        warnings.append(f"chain {chain.name!r}: landmarks {src_lm} / {rob_lm} do not run from base to tip "
                        f"(at {np.round(src_at[1:], 2).tolist()} / {np.round(rob_at[1:], 2).tolist()} of the chain); "
                        "solved without them")
        return (np.interp(fractions, [0.0, 1.0], [start, 1.0]), start) if start < 1.0 else (fractions, 0.0)
    return np.interp(fractions, src_at + [1.0], rob_at + [1.0]), start


@dataclass
class BodyLandmarks:
    """Where the body frame comes from: the source's left and right hip (else shoulder) bones,
    its pelvis bone when the hips are used (None: the root bone carries the frame), and the
    robot's canonical axes (3, 3) relative to its root. None sides: no left/right landmarks
    (a one-arm robot), the root bone's own frame."""

    left: int | None
    right: int | None
    pelvis: int | None
    axes_rob: np.ndarray


def body_landmarks_of(motion: SourceMotion, tree: KinematicTree, mapping: Mapping) -> BodyLandmarks:
    zero = tree.zero_pose()
    src, rob = {}, {}
    for key, (bone, link) in body_landmarks(mapping.chains, disabled=True).items():  # a toggle must not turn the body
        try:
            src[key], rob[key] = motion.index(bone), zero[tree.link_index(link), :3, 3]
        except KeyError as exc:
            raise RetargetError(f"{key.replace('_', ' ')}: {exc.args[0]}") from None
    pairs = _pairs(src)
    if not pairs:
        return BodyLandmarks(None, None, None, np.eye(3))
    left, right = pairs[0]
    pelvis = None
    if left == "left_hip" and mapping.source_root in motion.bone_names:
        pelvis = motion.index(mapping.source_root)  # auto-map's: where the legs meet
    return BodyLandmarks(src[left], src[right], pelvis, _axes(tree, rob, pairs[0]))


def robot_axes(tree: KinematicTree, mapping: Mapping) -> np.ndarray:
    """The robot's body axes (3, 3) relative to its root, as body_frames has them, from the robot alone
    (identity without left and right landmarks)."""
    zero = tree.zero_pose()
    rob = {key: zero[tree.link_index(link), :3, 3] for key, (_, link) in body_landmarks(mapping.chains, True).items()}
    pairs = _pairs(rob)
    return _axes(tree, rob, pairs[0]) if pairs else np.eye(3)


def _pairs(marks: dict) -> list[tuple[str, str]]:
    """The left and right landmark keys of `marks`, hips first."""
    return [(f"left_{k}", f"right_{k}") for k in ("hip", "shoulder") if f"left_{k}" in marks and f"right_{k}" in marks]


def _axes(tree: KinematicTree, rob: dict, pair: tuple[str, str]) -> np.ndarray:
    try:
        return canonical_axes(**{k: rob[k] for k in pair if k in rob})
    except ValueError as exc:
        raise RetargetError(f"robot {tree.robot.name!r}: {exc}") from None


def body_frames(motion: SourceMotion, tree: KinematicTree, mapping: Mapping):
    """Per-frame source body frame (F, 3, 3) and the robot's (root-relative) body axes.

    Both come from the hip line and the world's up: the source's from its animated frames
    (core.retarget.body_frame.source_body_frames), carried by its pelvis (mapping.source_root,
    not the file's root bone, which may be a reference on the floor), never from its rest pose.
    """
    marks = body_landmarks_of(motion, tree, mapping)
    if marks.left is None:
        return motion.root_rotation @ motion.rest_root_rotation.T, marks.axes_rob
    left, right = motion.heads[:, marks.left], motion.heads[:, marks.right]
    carrier = motion.root_rotation
    if marks.pelvis is not None:
        frames = pelvis_frames(left, right, [motion.heads[:, marks.pelvis], motion.tails[:, marks.pelvis]])
        carrier = frames if frames is not None else carrier
    try:
        body_src = source_body_frames(left - right, carrier)
    except ValueError as exc:
        raise RetargetError(f"source {motion.name!r}: {exc}") from None
    return body_src, marks.axes_rob


@dataclass
class RootPlan:
    """Where the robot root goes: its hip centre follows the source's, scaled by leg length."""

    hips: list[int]  # the source's hip bones (each leg chain's first)
    scale: float  # robot leg length / source leg length
    hips_rob: np.ndarray  # (3,) the robot's hip centre in its root frame
    in_place: bool  # root_mode "in_place": no travel over the floor

    @classmethod
    def build(cls, motion: SourceMotion, tree: KinematicTree, plans, settings) -> "RootPlan":
        zero = tree.zero_pose()
        legs = [p for p in plans if p.mapping.role == "leg"]
        src_len = np.mean([_rest_length(motion, p.source) for p in legs])
        rob_len = np.mean([p.robot.paths[0].length for p in legs])
        hips_rob = np.mean([zero[p.robot.paths[0].links[0], :3, 3] for p in legs], axis=0)
        return cls([p.source.paths[0][0] for p in legs], float(rob_len / src_len), hips_rob,
                   settings.root_mode == "in_place")

    def __call__(self, heads: np.ndarray, root_rot: np.ndarray) -> np.ndarray:
        """Root positions (F, 3) for bone heads (F, B, 3) and root rotations (F, 3, 3)."""
        target = self.scale * (np.add.reduce(heads[:, self.hips], axis=1) / len(self.hips))  # their mean (a live frame's cost)
        if self.in_place:
            target[:, :2] = 0.0
        return target - root_rot @ self.hips_rob


def _rest_length(motion: SourceMotion, chain: SourceChain) -> float:
    pts = chain.polylines(motion, rest=True)[0][0]
    return float(np.linalg.norm(np.diff(pts, axis=0), axis=1).sum())


def chain_targets(motion, plan: ChainPlan, body_src, body_rob):
    """Target points relative to the robot chain's origin: the normalised source shape."""
    to_robot = body_rob @ np.swapaxes(body_src, 1, 2)  # source world -> robot world directions
    targets, weights = [], []
    for polyline, frac, w, rpath in zip(plan.source.polylines(motion), plan.source_fractions,
                                        plan.weights, plan.robot.paths):
        lengths = np.linalg.norm(np.diff(polyline, axis=1), axis=2).sum(1)
        pts = sample_polyline(polyline, frac) - polyline[:, :1]
        shape = pts / np.maximum(lengths, 1e-9)[:, None, None]
        targets.append(rpath.length * rotate_each(to_robot, shape))
        weights.append(w / rpath.length ** 2)
    return np.concatenate(targets, axis=1), np.concatenate(weights)
