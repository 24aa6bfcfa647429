"""The body frame of a live source, decided from the frames seen so far.

Offline (core.retarget.body_frame) the pelvis that carries the body's tilt and the carrier's
mean up are chosen over the whole clip. A stream has only its past, so the same tests run
on running statistics that settle within a few frames and never look ahead.
"""
from __future__ import annotations

import math

import numpy as np

from ..retarget.body_frame import PELVIS_OFF_LINE_M, PELVIS_RIGID_M, RIGID_DEG, WORLD_UP
from ..retarget.chain_plans import BodyLandmarks


class _Running:
    """Running mean and variance (Welford) of a number or a small vector."""

    def __init__(self):
        self.count, self.mean, self.m2 = 0, 0.0, 0.0

    def add(self, value) -> None:
        self.count += 1
        delta = value - self.mean
        self.mean = self.mean + delta / self.count
        self.m2 = self.m2 + delta * (value - self.mean)

    @property
    def std(self) -> float:
        return math.sqrt(self.m2 / self.count) if self.count else 0.0


def frame_of(left, up) -> np.ndarray:
    """core.retarget.body_frame.orthonormal_frame for one frame, in plain floats (a live frame
    cannot spend tens of microseconds on three small vectors): y along `left`, z the part of
    `up` across it, x = y cross z."""
    lx, ly, lz = (float(v) for v in left)
    n = math.sqrt(lx * lx + ly * ly + lz * lz)
    if n < 1e-9:
        raise ValueError("left and right landmarks coincide; cannot find the body's sideways axis")
    yx, yy, yz = lx / n, ly / n, lz / n
    ux, uy, uz = (float(v) for v in up)
    d = ux * yx + uy * yy + uz * yz
    zx, zy, zz = ux - d * yx, uy - d * yy, uz - d * yz
    m = math.sqrt(zx * zx + zy * zy + zz * zz)
    if m < 1e-9:
        raise ValueError("the spine is parallel to the hip line; cannot find the body's up axis")
    zx, zy, zz = zx / m, zy / m, zz / m
    return np.array([[yy * zz - yz * zy, yx, zx], [yz * zx - yx * zz, yy, zy], [yx * zy - yy * zx, yz, zz]])


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
        local = local / max(math.sqrt(local @ local), 1e-12)  # np.linalg.norm of a vector, without its wrapper
        self.local_left.add(local)
        self.local_up.add(carrier[2])  # the world's up in the carrier's frame: carrier.T @ (0, 0, 1)
        mean = self.local_left.mean
        mean = mean / max(math.sqrt(mean @ mean), 1e-12)
        self.spread.add(math.degrees(math.acos(min(1.0, max(-1.0, float(local @ mean))))))
        if self.spread.mean > RIGID_DEG:  # the carrier does not carry the hips: the world's up
            return frame_of(left, WORLD_UP)
        local_up = frame_of(self.local_left.mean, self.local_up.mean)[:, 2]
        return frame_of(left, carrier @ local_up)

    def _pelvis(self, left_hip, right_hip, points, fallback) -> np.ndarray:
        """core.retarget.body_frame.pelvis_frames on running statistics."""
        centre, left = (left_hip + right_hip) / 2.0, left_hip - right_hip
        chosen = None
        for point, (across_stat, offset_stat) in zip(points, self.pelvis):
            offset = point - centre
            across = offset - (offset @ left) / max(float(left @ left), 1e-12) * left
            across_stat.add(math.sqrt(across @ across))
            offset_stat.add(math.sqrt(offset @ offset))
            if chosen is None and across_stat.mean >= PELVIS_OFF_LINE_M and offset_stat.std <= PELVIS_RIGID_M:
                chosen = across
        return fallback if chosen is None else frame_of(left, chosen)
