"""Self-collision on the Blender side: the bake report's line listing frames with contacts, and
what the viewport overlay highlights (colliding links at a frame), computed headless."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..core.feet.contacts import flags_to_intervals
from ..core.model.transforms import pose_matrices, quat_to_matrix
from .common import tree_from_rig
from .export import action_table, scene_fps


def frame_ranges(frames, first: int) -> list[list[int]]:
    """[[first, last], ...] Blender frames of bake frame indices (0 = the bake's first frame)."""
    flags = np.zeros(max(frames, default=-1) + 1, dtype=bool)
    flags[list(frames)] = True
    return [[first + a, first + b - 1] for a, b in flags_to_intervals(flags)]


def collision_summary(report: dict, first: int) -> str:
    """One line for the Info area: how many frames have limbs through the body, the worst, and where."""
    if report.get("self_collision_pct") is None:
        return ""
    if not report.get("self_collision_frames"):
        return "No self-collision (no checked links overlap by more than 5 mm)"
    worst = report["self_collision_worst"]
    ranges = frame_ranges(report["self_collision_frames"], first)
    listed = ", ".join(f"{a}" if a == b else f"{a}-{b}" for a, b in ranges[:12]) + (" ..." if len(ranges) > 12 else "")
    return (f"Self-collision in {report['self_collision_pct']:.1f}% of frames (worst {worst['pair'][0]} / "
            f"{worst['pair'][1]} {100 * worst['depth_m']:.1f} cm at frame {first + worst['frame']}); "
            f"frames with contacts: {listed}")


@dataclass
class CollisionTrace:
    """The robot action's checked pairs per key: Blender frame (F,), signed body-pair distances (F, P)."""

    frames: np.ndarray
    distance: np.ndarray
    pairs: object  # core.collision.pairs.CollisionPairs
    tree: object
    q: np.ndarray
    root: np.ndarray

    def at(self, frame: float) -> int:
        return int(np.clip(np.searchsorted(self.frames, frame - 1e-6), 0, len(self.frames) - 1))

    def colliding(self, frame: float) -> list[tuple[str, str, float]]:
        """(link, link, depth m) of the pairs overlapping by more than PENETRATION_M at `frame`."""
        from ..core.collision.figures import PENETRATION_M
        row = self.distance[self.at(frame)]
        return [(*self.pairs.names(int(p)), float(-row[p])) for p in np.flatnonzero(row < -PENETRATION_M)]

    def segments(self, frame: float, matrix: np.ndarray) -> np.ndarray:
        """World line segments (2K, 3) along the capsule axes of the colliding links at `frame`
        (matrix: the rig's world matrix (4, 4)); what the overlay draws in red."""
        i = self.at(frame)
        model = self.pairs.model
        bodies = sorted({model.body_index(name) for a, b, _ in self.colliding(frame) for name in (a, b)})
        capsules = np.flatnonzero(np.isin(model.capsule_body, bodies))
        if len(capsules) == 0:
            return np.zeros((0, 3))
        links = [int(link) for link in np.unique(model.capsule_link[capsules])]
        ends = model.world_ends(self.tree.poses(self.q[i:i + 1], self.root[i:i + 1], links), capsules)[0]
        points = ends.reshape(-1, 3) @ matrix[:3, :3].T + matrix[:3, 3]
        return points


def collision_trace(robot, scene) -> CollisionTrace:
    """The checked pairs' distances over the robot's active action (headless)."""
    from ..core.collision import collision_pairs
    from ..core.collision.pairs import pair_distances
    fps = scene_fps(scene)
    table = action_table(robot, fps)
    tree = tree_from_rig(robot)
    root = pose_matrices(quat_to_matrix(table.root_quaternion), table.root_position)
    pairs = collision_pairs(tree)
    distance = pairs.body_distance(pair_distances(tree, pairs, table.q, root))
    frames = robot.animation_data.action.frame_range[0] + table.time * fps
    return CollisionTrace(frames, distance, pairs, tree, table.q, root)
