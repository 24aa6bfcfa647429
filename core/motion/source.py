"""Source motion: what the retargeter needs to know about a character clip.

Both the BVH reader and the Blender armature sampler produce this, so the
solver never cares where a clip came from. World frame is Z-up, metres.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..model.kinematics import ancestor_path
from ..model.transforms import orthonormalize
from .filtering import bridge_nans


@dataclass
class SourceMotion:
    """A character clip as bone segments in world space.

    bone_names: B bone names; parents: (B,) parent index, -1 for a root.
    heads, tails: (F, B, 3) world positions in metres of each bone's start
    (the joint) and end. root_rotation: (F, 3, 3) world rotation of bone 0's
    frame (any consistent bone-frame convention). rest_*: the same in the rest
    pose (no frame axis). fps: frames per second of the clip.
    """

    bone_names: list[str]
    parents: np.ndarray
    heads: np.ndarray
    tails: np.ndarray
    root_rotation: np.ndarray
    rest_heads: np.ndarray
    rest_tails: np.ndarray
    rest_root_rotation: np.ndarray
    fps: float
    name: str = ""

    @property
    def frames(self) -> int:
        return self.heads.shape[0]

    def index(self, bone: str) -> int:
        try:
            return self.bone_names.index(bone)
        except ValueError:
            raise KeyError(f"source has no bone {bone!r}") from None

    def at_frames(self, index: np.ndarray, name: str | None = None) -> "SourceMotion":
        """The clip played at frames `index` (K,) of this one (a frame may repeat: a held pose)."""
        return SourceMotion(self.bone_names, self.parents, self.heads[index], self.tails[index],
                            self.root_rotation[index], self.rest_heads, self.rest_tails, self.rest_root_rotation,
                            self.fps, self.name if name is None else name)

    def without_leaves(self, gone: np.ndarray) -> "SourceMotion":
        """The clip without the leaf bones marked in `gone` (B,) bool; the others re-indexed."""
        keep = ~np.asarray(gone, dtype=bool)
        parents = np.asarray(self.parents)
        if (gone := ~keep).any() and (np.isin(np.flatnonzero(gone), parents) | (parents[gone] < 0)).any():
            raise ValueError("only leaf bones with a parent can be left out")
        new = np.cumsum(keep) - 1
        kept_parents = np.where(parents[keep] >= 0, new[np.maximum(parents[keep], 0)], -1)
        return SourceMotion([n for n, k in zip(self.bone_names, keep) if k], kept_parents, self.heads[:, keep],
                            self.tails[:, keep], self.root_rotation, self.rest_heads[keep], self.rest_tails[keep],
                            self.rest_root_rotation, self.fps, self.name)

    def children(self, i: int) -> list[int]:
        return [j for j, p in enumerate(self.parents) if p == i]

    def path(self, base: str, tip: str) -> list[int]:
        """Bone indices from `base` down to `tip` (inclusive)."""
        path = ancestor_path(self.parents, self.index(base), self.index(tip))
        if path is None:
            raise KeyError(f"source bone {tip!r} does not descend from {base!r}")
        return path


def held_frames(motion: SourceMotion, longer_s: float) -> np.ndarray:
    """(F,) True where a frame repeats the one before it exactly, in runs held longer than longer_s (a clip
    padded by holding its first or last frame): the gait retargets a held pose once and poses a stance from
    each pose once, and the retarget solves a held pose once, so holding a clip's ends does not change its motion."""
    same = np.zeros(motion.frames, dtype=bool)
    same[1:] = ((motion.heads[1:] == motion.heads[:-1]).all(axis=(1, 2))
                & (motion.tails[1:] == motion.tails[:-1]).all(axis=(1, 2))
                & (motion.root_rotation[1:] == motion.root_rotation[:-1]).all(axis=(1, 2)))
    starts, ends = (np.flatnonzero(np.diff(np.r_[0, same.astype(np.int8), 0]) == way) for way in (1, -1))
    for a, b in zip(starts, ends):
        same[a:b] = (b - a) / motion.fps > longer_s
    return same


def bridged(motion: SourceMotion) -> tuple[SourceMotion, np.ndarray]:
    """The motion with its frames holding NaN values (dropped mocap frames) filled by interpolation,
    and those frames' indices: anything reading the clip as a whole (the bake, contact detection)
    reads one bad frame as one bad frame, not a clip without feet. ValueError when every frame has one."""
    stacked = np.concatenate([motion.heads.reshape(motion.frames, -1), motion.tails.reshape(motion.frames, -1),
                              motion.root_rotation.reshape(motion.frames, -1)], axis=1)
    bad = ~np.isfinite(stacked).all(axis=1)
    if not bad.any():
        return motion, np.zeros(0, dtype=int)
    if bad.all():
        raise ValueError(f"source {motion.name!r}: every frame has missing (NaN) values")
    filled, _ = bridge_nans(np.where(np.isfinite(stacked), stacked, np.nan))
    n = motion.heads[0].size
    heads = filled[:, :n].reshape(motion.heads.shape)
    tails = filled[:, n:2 * n].reshape(motion.tails.shape)
    rot = orthonormalize(filled[:, 2 * n:].reshape(-1, 3, 3))
    return (SourceMotion(motion.bone_names, motion.parents, heads, tails, rot, motion.rest_heads, motion.rest_tails,
                         motion.rest_root_rotation, motion.fps, motion.name), np.flatnonzero(bad))
