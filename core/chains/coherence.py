"""A sample of a run of close frames in time: a run moves smoothly, so its every k-th frame tells
how the whole run would fare (core.chains.separation tries a run on another answer on such a
sample before its other frames).
"""
from __future__ import annotations

import numpy as np


def coarse_rows(frames: np.ndarray, every: int, gap: int) -> np.ndarray:
    """Positions into frames (R,) (sorted frame numbers) of a sample over time: each run's (frames
    at most `gap` apart) first and last frames and its every `every`-th frame between."""
    start = np.diff(frames, prepend=frames[0] - gap - 1) > gap  # (R,) the first of a run
    end = np.append(start[1:], True)  # the last of a run
    run = np.cumsum(start) - 1
    index = np.arange(len(frames)) - np.flatnonzero(start)[run]  # position within its run
    return np.flatnonzero(start | end | (index % every == 0))
