"""The body frame of a live source, decided from the frames seen so far.

Offline (core.retarget.body_frame) the pelvis that carries the body's tilt and the carrier's
mean up are chosen over the whole clip. A stream has only its past, so the same tests run
on running statistics that settle within a few frames and never look ahead.
"""
from __future__ import annotations

import numpy as np

from ..retarget.body_frame import (PELVIS_OFF_LINE_M, PELVIS_RIGID_M, RIGID_DEG, WORLD_UP, orthonormal_frame)
from ..retarget.pipeline import BodyLandmarks


class _Running:
    """Running mean and variance (Welford) of a value of any shape."""

    def __init__(self):
        self.count, self.mean, self.m2 = 0, 0.0, 0.0

    def add(self, value) -> None:
        self.count += 1
        delta = value - self.mean
        self.mean = self.mean + delta / self.count
        self.m2 = self.m2 + delta * (value - self.mean)

    @property
    def std(self):
        return np.sqrt(self.m2 / self.count) if self.count else 0.0


class CausalBodyFrame:
    """The source body frame (3, 3) of each new frame from its own and earlier frames only."""

    def __init__(self, marks: BodyLandmarks):
        self.marks = marks
        self.pelvis = [(_Running(), _Running()), (_Running(), _Running())]  # per pelvis point: (across, offset)
        self.local_left, self.local_up, self.spread = _Running(), _Running(), _Running()

    def __call__(self, heads: np.ndarray, tails: np.ndarray, root_rotation: np.ndarray,
                 rest_root_rotation: np.ndarray) -> np.ndarray:
        """heads, tails: (B, 3) one frame's bone ends; root_rotation: (3, 3)."""
        m = self.marks
        if m.left is None:
            return root_rotation @ rest_root_rotation.T
        left_hip, right_hip = heads[m.left], heads[m.right]
        left = left_hip - right_hip
        carrier = root_rotation
        if m.pelvis is not None:
            carrier = self._pelvis(left_hip, right_hip, [heads[m.pelvis], tails[m.pelvis]], carrier)
        local = carrier.T @ left
        local = local / max(float(np.linalg.norm(local)), 1e-12)
        self.local_left.add(local)
        self.local_up.add(carrier.T @ WORLD_UP)
        mean = self.local_left.mean / max(float(np.linalg.norm(self.local_left.mean)), 1e-12)
        self.spread.add(float(np.degrees(np.arccos(np.clip(local @ mean, -1.0, 1.0)))))
        if self.spread.mean > RIGID_DEG:  # the carrier does not carry the hips: the world's up
            return orthonormal_frame(left, WORLD_UP)
        local_up = orthonormal_frame(self.local_left.mean, self.local_up.mean)[:, 2]
        return orthonormal_frame(left, carrier @ local_up)

    def _pelvis(self, left_hip, right_hip, points, fallback) -> np.ndarray:
        """core.retarget.body_frame.pelvis_frames on running statistics."""
        centre, left = (left_hip + right_hip) / 2.0, left_hip - right_hip
        chosen = None
        for point, (across_stat, offset_stat) in zip(points, self.pelvis):
            offset = point - centre
            across = offset - (offset @ left) / max(float(left @ left), 1e-12) * left
            across_stat.add(float(np.linalg.norm(across)))
            offset_stat.add(float(np.linalg.norm(offset)))
            if chosen is None and across_stat.mean >= PELVIS_OFF_LINE_M and offset_stat.std <= PELVIS_RIGID_M:
                chosen = across
        return fallback if chosen is None else orthonormal_frame(left, chosen)
