"""Causal feet for a live stream (issue 14, item 4).

A source foot is down while its heel or toe is low and slow, decided from past frames with the
offline detector's hysteresis (core.feet.contacts.DetectSettings); its robot foot is then held
where it touched down by moving the root (the root follows the planted foot), and it is let go
when the source foot lifts. No foot point ever goes below the ground. Offline planting solves
the legs over the whole clip (core.feet.plant); live, moving the root is what one frame allows.
"""
from __future__ import annotations

import numpy as np

from ..feet.contacts import SPEED_CUTOFF_HZ, DetectSettings, foot_landmarks
from ..feet.geometry import body_points, solve_points, standing_rotation, subtree_links
from ..model.kinematics import KinematicTree
from ..motion.source import SourceMotion

SETTLE_S = 0.2  # a jump of the root's offset when the set of planted feet changes fades over this


class _SourceFeet:
    """Heel and toe of every source foot at once (S feet, S x 2 points): smoothed causally,
    their speed and the ground's level; one set of array operations serves all feet."""

    def __init__(self, landmarks: list, bones: int):
        # rows of [heads; tails] (2B, 3): each foot's heel, then its toe
        self.rows = np.array([[lm.ankle, lm.toe + (bones if lm.toe_is_tail else 0)] for lm in landmarks]).reshape(-1)
        self.smooth: np.ndarray | None = None  # (S, 2, 3) heel, toe
        self.speed = np.zeros((len(landmarks), 2))
        self.level: np.ndarray | None = None  # (S, 2) lowest slow height seen per point
        self.down = np.zeros(len(landmarks), dtype=bool)

    def update(self, frame: SourceMotion, dt: float, leg: float, settings: DetectSettings) -> np.ndarray:
        """Which feet are down (S,) after this frame."""
        points = np.concatenate([frame.heads[0], frame.tails[0]])[self.rows].reshape(-1, 2, 3)
        alpha = 1.0 - np.exp(-2.0 * np.pi * SPEED_CUTOFF_HZ * dt)
        if self.smooth is None:
            self.smooth, self.level = points.copy(), points[:, :, 2].copy()
        previous = self.smooth
        self.smooth = previous + alpha * (points - previous)
        moved = self.smooth - previous
        self.speed = np.sqrt(np.add.reduce(moved * moved, axis=2)) / dt / leg  # np.linalg.norm without its wrapper
        slow = self.speed < settings.speed_on
        self.level = np.where(slow, np.minimum(self.level, points[:, :, 2]), self.level)
        height = (points[:, :, 2] - self.level) / leg
        lifted = ((height > settings.height_off) | (self.speed > settings.speed_off)).all(axis=1)
        touching = ((height < settings.height_on) & slow).any(axis=1)
        self.down = np.where(self.down, ~lifted, touching)
        return self.down


class CausalFeet:
    """Where the root goes so planted feet stay put and no foot enters the ground."""

    def __init__(self, skeleton: SourceMotion, tree: KinematicTree, mapping, foot_links: dict[str, int],
                 settings: DetectSettings | None = None):
        self.settings = settings or DetectSettings()
        marks = foot_landmarks(skeleton, mapping)
        self.sides = [side for side in marks if side in foot_links]
        self.source = _SourceFeet([marks[side] for side in self.sides], len(skeleton.bone_names))
        self.leg = float(np.mean([marks[s].leg_length for s in self.sides])) if self.sides else 1.0
        zero = tree.zero_pose()
        self.points = {}
        for side in self.sides:
            link = foot_links[side]
            body = body_points(tree, link, subtree_links(tree, link))  # a sole past the tip is the foot
            self.points[side] = solve_points(body, standing_rotation(body, zero[link, :3, :3]))
        self.offset: np.ndarray | None = None  # (3,) added to the root position
        self.pending = np.zeros(3)  # what is left of a jump, fading over SETTLE_S
        self.anchors: dict[str, np.ndarray] = {}  # planted side -> where its foot stays (x, y)
        self._planted: set[str] = set()

    def contacts(self) -> dict[str, bool]:
        return {side: bool(down) for side, down in zip(self.sides, self.source.down)}

    def lowest(self, foot_poses: dict[str, np.ndarray]) -> float:
        """Height of the lowest foot point for world foot poses (4, 4) per side."""
        return min(float(self.points[side].lowest(foot_poses[side][None])[0]) for side in self.sides)

    def step(self, frame: SourceMotion, foot_poses: dict[str, np.ndarray], dt: float) -> np.ndarray:
        """The offset (3,) to add to this frame's root position; foot_poses: world (4, 4) per
        side for the root as retargeted (without an offset)."""
        if not self.sides:
            return np.zeros(3)
        down = self.source.update(frame, dt, self.leg, self.settings)
        centre, lowest = {}, {}
        for side in self.sides:
            world = self.points[side].world(foot_poses[side][None])[0]  # (P, 3)
            centre[side] = world[:, :2].sum(axis=0) / len(world)  # their mean, without np.mean's wrapper
            lowest[side] = float((world[:, 2] - self.points[side].radius).min())
        if self.offset is None:  # the actor starts on the ground
            self.offset = np.array([0.0, 0.0, -min(lowest.values())])
        planted = [side for side, is_down in zip(self.sides, down) if is_down]
        for side in planted:
            self.anchors.setdefault(side, centre[side] + self.offset[:2] + self.pending[:2])
        for side in [s for s in self.anchors if s not in planted]:
            del self.anchors[side]
        wanted = self.offset.copy()
        if planted:
            wanted[:2] = sum(self.anchors[s] - centre[s] for s in planted) / len(planted)  # their mean
            wanted[2] = -min(lowest[s] for s in planted)
        shown = self.offset + self.pending
        if set(planted) != self._planted:  # a new set of feet: fade the jump
            self.pending = shown - wanted
        self._planted = set(planted)
        self.pending *= np.exp(-dt / SETTLE_S)
        self.offset = wanted
        out = self.offset + self.pending
        out[2] = max(out[2], -min(lowest.values()))  # never into the ground
        return out
