"""Long clips for the benchmarks, made from the bundled CMU walk and hop.

Clips are played back to back; each copy starts where the previous one
ended (its horizontal root offset carried on), so the actor walks on instead
of jumping back. Resampling keeps every k-th frame (120 Hz to 30 Hz: every
4th), which is exact for the CMU clips.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from core.motion.bvh import load_bvh  # noqa: E402
from core.motion.source import SourceMotion  # noqa: E402

WALK = ROOT / "data/motion/cmu_131_01_walk_m.bvh"
HOP = ROOT / "tests/data/motion/cmu_131_03_hop.bvh"
ROBOTS = {"g1": ROOT / "data/robots/g1/unitree_g1_29dof.urdf", "h1": ROOT / "tests/data/robots/unitree_h1_19dof.urdf"}


def load(path: Path) -> SourceMotion:
    return load_bvh(path).to_source_motion()


def resampled(motion: SourceMotion, fps: float) -> SourceMotion:
    """Every k-th frame, k = motion.fps / fps (a whole number; CMU's 0.008333 s frames are 120 Hz)."""
    step = motion.fps / fps
    if abs(step - round(step)) > 1e-3 * step:
        raise ValueError(f"{motion.fps:g} fps does not divide into {fps:g} fps")
    k = int(round(step))
    return SourceMotion(motion.bone_names, motion.parents, motion.heads[::k], motion.tails[::k],
                        motion.root_rotation[::k], motion.rest_heads, motion.rest_tails,
                        motion.rest_root_rotation, motion.fps / k, motion.name)


def back_to_back(clips: list[SourceMotion], min_frames: int, name: str) -> SourceMotion:
    """The clips in turn, repeated until at least `min_frames` frames, each carrying on the last's travel."""
    first = clips[0]
    heads, tails, rots, offset, total, i = [], [], [], np.zeros(3), 0, 0
    while total < min_frames:
        clip = clips[i % len(clips)]
        if clip.bone_names != first.bone_names or abs(clip.fps - first.fps) > 1e-3 * first.fps:
            raise ValueError(f"{clip.name}: another skeleton or frame rate than {first.name}")
        shift = offset - np.array([*clip.heads[0, 0, :2], 0.0])
        heads.append(clip.heads + shift)
        tails.append(clip.tails + shift)
        rots.append(clip.root_rotation)
        offset = np.array([*heads[-1][-1, 0, :2], 0.0])
        total += clip.frames
        i += 1
    return SourceMotion(first.bone_names, first.parents, np.concatenate(heads), np.concatenate(tails),
                        np.concatenate(rots), first.rest_heads, first.rest_tails, first.rest_root_rotation,
                        first.fps, name)


def long_clip(min_frames: int = 4000, fps: float = 30.0) -> SourceMotion:
    """The walk and the hop back to back, at `fps`, to at least `min_frames` frames."""
    clips = [resampled(load(WALK), fps), resampled(load(HOP), fps)]
    return back_to_back(clips, min_frames, f"walk+hop x{min_frames}@{fps:g}")


def walk_times(factor: int) -> SourceMotion:
    """The walk repeated `factor` times at its own 120 Hz."""
    walk = load(WALK)
    return back_to_back([walk], factor * walk.frames, f"walk x{factor}")
