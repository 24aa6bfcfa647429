"""What a viewer sees: limb directions and the torso's orientation, compared in each body's heading frame.

A chain's error measured in its own solved base frame hides a torso that leans
or twists unlike the actor's: every limb turns with it, unseen. These figures
are measured in the world instead, after removing only each body's heading
(its pelvis's yaw about the vertical), so a lean, a twist or a limb pointing
elsewhere shows as it does on screen. Both bodies are measured the same way,
from joint positions only (hips, shoulders, ankles, wrists), so bone-axis
conventions and rest poses do not enter.
"""
from __future__ import annotations

import numpy as np

from ..chains.mapping import ChainMapping
from ..model.kinematics import KinematicTree
from ..model.same_bits import same_bits
from ..motion.source import SourceMotion

UP = np.array([0.0, 0.0, 1.0])


def _unit(v: np.ndarray) -> np.ndarray:
    return v / np.maximum(np.linalg.norm(v, axis=-1, keepdims=True), 1e-12)


def unheading(left: np.ndarray) -> np.ndarray:
    """Rotations (F, 3, 3) that turn each frame's heading to +x: minus the yaw of the body whose
    left-pointing axis is `left` (F, 3) (its forward is left x up)."""
    forward = np.cross(left, UP)
    yaw = same_bits(np.arctan2, forward[:, 1], forward[:, 0])  # strided: see core.model.same_bits
    c, s = np.cos(yaw), np.sin(yaw)
    out = np.zeros((len(yaw), 3, 3))
    out[:, 0, 0], out[:, 0, 1], out[:, 1, 0], out[:, 1, 1], out[:, 2, 2] = c, s, -s, c, 1.0
    return out


def chest_frames(left_shoulder, right_shoulder, left_hip, right_hip) -> np.ndarray:
    """Frames (F, 3, 3), columns forward, left, up: left along the shoulder line, up the part of the
    spine (hip centre to shoulder centre) across it."""
    left = _unit(left_shoulder - right_shoulder)
    spine = (left_shoulder + right_shoulder - left_hip - right_hip) / 2.0
    up = _unit(spine - np.einsum("fi,fi->f", spine, left)[:, None] * left)
    return np.stack([np.cross(left, up), left, up], axis=2)


def angle_deg(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Angle (F,) in degrees between the vectors (F, 3) of a and b, frame by frame."""
    cos = np.einsum("fi,fi->f", a, b) / np.maximum(np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1), 1e-12)
    return np.degrees(np.arccos(np.clip(cos, -1.0, 1.0)))


def limb_ends(chain: ChainMapping) -> tuple[str, str, str, str]:
    """(source first joint, source tip, robot first joint, robot tip) of a leg (hip to ankle) or an
    arm (shoulder to wrist): the ankle is the last landmark of a hip-to-toe leg."""
    src_tip = chain.source_landmarks[-1] if chain.role == "leg" and chain.source_landmarks else chain.source_tips[0]
    rob_tip = chain.robot_landmarks[-1] if chain.role == "leg" and chain.robot_landmarks else chain.robot_tips[0]
    return chain.source_base, src_tip, chain.robot_start or chain.robot_base, rob_tip


def body_landmarks(chains: list[ChainMapping], disabled: bool = False) -> dict[str, tuple[str, str]]:
    """{"left_hip", "right_hip", "left_shoulder", "right_shoulder": (source bone, robot link)} where the
    legs and arms join the body: points that ride on the pelvis and the chest (a robot limb's first
    link, not where its shape starts, which swings with the limb). disabled: count switched-off
    chains too (switching an arm off must not turn the torso)."""
    out = {}
    for c in chains:
        key = {"leg": "hip", "arm": "shoulder"}.get(c.role)
        if key and (c.enabled or disabled) and c.side in ("left", "right") and c.source_tips and c.robot_tips:
            out[f"{c.side}_{key}"] = (c.source_base, c.robot_base)
    return out


def viewer_figures(motion: SourceMotion, tree: KinematicTree, chains: list[ChainMapping], q: np.ndarray,
                   root: np.ndarray) -> dict:
    """limb_direction_error_deg (mean over the legs and arms), limb_direction_error_by_limb and
    torso_orientation_error_deg, each averaged over frames; None where the mapping lacks the limbs.

    root: (F, 4, 4) world pose of the robot's root link.
    """
    limbs = [c for c in chains if c.enabled and c.role in ("leg", "arm") and c.side in ("left", "right")
             and c.source_tips and c.robot_tips]
    ends = {c.name: limb_ends(c) for c in limbs}
    marks = body_landmarks(limbs)
    links = sorted({tree.link_index(name) for e in ends.values() for name in e[2:]}
                   | {tree.link_index(rob) for _, rob in marks.values()})
    poses = tree.poses(q, root, links)
    src = {bone: motion.heads[:, motion.index(bone)] for e in ends.values() for bone in e[:2]}
    for c in limbs:  # a limb that ends at its last bone's tail (an End Site after the elbow)
        if c.source_tip_tail and ends[c.name][1] == c.source_tips[0]:
            src[("tail", c.name)] = motion.tails[:, motion.index(c.source_tips[0])]
            ends[c.name] = (ends[c.name][0], ("tail", c.name), *ends[c.name][2:])
    rob = {tree.link_names[i]: pose[:, :3, 3] for i, pose in poses.items()}
    joint = {key: (motion.heads[:, motion.index(bone)], rob[link]) for key, (bone, link) in marks.items()}
    hips = [joint.get(f"{s}_hip") for s in ("left", "right")]
    shoulders = [joint.get(f"{s}_shoulder") for s in ("left", "right")]
    pelvis = hips if all(hips) else shoulders if all(shoulders) else None
    out = {"limb_direction_error_deg": None, "limb_direction_error_by_limb": {},
           "torso_orientation_error_deg": None}
    if pelvis is None:
        return out
    turn = [unheading(pelvis[0][k] - pelvis[1][k]) for k in (0, 1)]  # actor, robot
    for chain in limbs:
        base_s, tip_s, base_r, tip_r = ends[chain.name]
        actor = np.einsum("fij,fj->fi", turn[0], src[tip_s] - src[base_s])
        robot = np.einsum("fij,fj->fi", turn[1], rob[tip_r] - rob[base_r])
        out["limb_direction_error_by_limb"][chain.name] = float(np.mean(angle_deg(actor, robot)))
    by_limb = out["limb_direction_error_by_limb"]
    out["limb_direction_error_deg"] = float(np.mean(list(by_limb.values())))
    if all(hips) and all(shoulders):
        frames = [turn[k] @ chest_frames(shoulders[0][k], shoulders[1][k], hips[0][k], hips[1][k]) for k in (0, 1)]
        relative = np.swapaxes(frames[0], 1, 2) @ frames[1]
        cos = (np.trace(relative, axis1=1, axis2=2) - 1.0) / 2.0
        out["torso_orientation_error_deg"] = float(np.mean(np.degrees(np.arccos(np.clip(cos, -1.0, 1.0)))))
    return out
