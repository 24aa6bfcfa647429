"""Frames in blocks: per-frame work on a long clip is done block by block, so its memory stays
bounded however long the clip is (an hour at 120 Hz is 432,000 frames)."""
from __future__ import annotations

BLOCK_FRAMES = 8192


def frame_blocks(frames: int, size: int = BLOCK_FRAMES) -> list[slice]:
    """Consecutive slices of at most `size` frames covering `frames` (one empty slice for none)."""
    return [slice(start, min(start + size, frames)) for start in range(0, frames, size)] or [slice(0, 0)]
