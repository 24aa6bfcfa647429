"""Viewport overlay of balance (Robot tab > Balance > Show in Viewport): at the current frame, the
support polygon of the feet on the ground, the multibody ZMP, the target ZMP of a generated gait
and the ground projection of the centre of mass, drawn on the floor under the robot.

`overlay_trace` computes what is drawn for the whole action once (headless, tested); the gpu
draw handler (added at register, drawing only while the toggle is on) looks up the current frame. A gait keeps its own ZMP and target on its action
(operators.gait); any other action gets the balance readout's.
"""
from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np

from ..core.model.transforms import pose_matrices, quat_to_matrix
from .overlay import ActionOverlay

COLOURS = {"support": (0.2, 0.8, 0.3, 1.0), "zmp": (1.0, 0.2, 0.2, 1.0), "target": (1.0, 0.8, 0.1, 1.0),
           "com": (0.3, 0.5, 1.0, 1.0)}
LIFT_M = 0.002  # drawn just above the floor so the grid does not hide it


@dataclass
class OverlayTrace:
    """Per key of the robot's action: Blender frame (F,), ZMP (F, 2), target ZMP (F, 2) or None,
    CoM (F, 3) and the support polygon (M, 2) or None; metres, in the rig's space."""

    frames: np.ndarray
    zmp: np.ndarray
    target: np.ndarray | None
    com: np.ndarray
    polygons: list

    def at(self, frame: float) -> int:
        return int(np.clip(np.searchsorted(self.frames, frame - 1e-6), 0, len(self.frames) - 1))


def overlay_trace(robot, scene) -> OverlayTrace:
    """What the overlay draws for the robot's active action (headless)."""
    from ..core.balance import balance_readout
    from ..core.balance.support import foot_bodies, foot_links, support_polygon
    from ..operators.common import tree_from_rig
    from ..operators.export import action_samples, scene_fps
    from ..operators.gait import TRACE_PROPERTY

    fps = scene_fps(scene)
    action = robot.animation_data.action
    table, rate = action_samples(robot, fps)
    tree = tree_from_rig(robot)
    root = pose_matrices(quat_to_matrix(table.root_quaternion), table.root_position)
    stored = action.get(TRACE_PROPERTY)
    first = action.frame_range[0]
    if stored:
        trace = json.loads(stored)
        frames, zmp, com = (np.asarray(trace[k], float) for k in ("frames", "zmp", "com"))
        target = np.asarray(trace["target_zmp"], float)
    else:
        readout = balance_readout(tree, table.q, root, rate, per_frame=True)
        frames = first + table.time * fps
        zmp, com, target = np.asarray(readout["zmp_m"]), np.asarray(readout["com_m"]), None
    feet = foot_links(tree)
    bodies = foot_bodies(tree, feet)
    poses = tree.poses(table.q, root, feet)
    points = np.concatenate([body.world(poses[body.link]) for body in bodies], axis=1)
    radius = np.concatenate([body.radius for body in bodies])
    keys = first + table.time * fps
    index = np.clip(np.searchsorted(keys, frames - 1e-6), 0, len(keys) - 1)
    polygons = [support_polygon(points[i], 0.0, radius) for i in index]
    return OverlayTrace(frames, zmp, target, com, polygons)


def overlay_geometry(trace: OverlayTrace, frame: float, matrix: np.ndarray) -> dict[str, np.ndarray]:
    """World-space geometry at `frame` (matrix: the rig's world matrix (4, 4)): 'support' line
    segments (2K, 3); 'zmp', 'target', 'com' points (1, 3), each only when there is one."""
    i = trace.at(frame)

    def world(xy) -> np.ndarray:
        p = np.array([xy[0], xy[1], LIFT_M, 1.0])
        return (matrix @ p)[:3]

    out = {"zmp": world(trace.zmp[i])[None], "com": world(trace.com[i][:2])[None]}
    if trace.target is not None:
        out["target"] = world(trace.target[i])[None]
    polygon = trace.polygons[i]
    if polygon is not None and len(polygon) >= 2:
        corners = np.array([world(p) for p in polygon])
        out["support"] = np.stack([corners, np.roll(corners, -1, axis=0)], axis=1).reshape(-1, 3)
    return out


def _key(robot, action):
    # a new gait or a new Check Balance refreshes what is drawn
    return (action.get("robot_retarget_gait_trace", "")[:64], action.get("robot_retarget_balance", ""),
            tuple(action.frame_range))


def _draw(robot, trace: OverlayTrace, scene) -> None:
    import gpu
    from gpu_extras.batch import batch_for_shader

    geometry = overlay_geometry(trace, scene.frame_current + scene.frame_subframe, np.array(robot.matrix_world))
    shader = gpu.shader.from_builtin('UNIFORM_COLOR')
    gpu.state.depth_test_set('NONE')
    gpu.state.line_width_set(2.0)
    gpu.state.point_size_set(10.0)
    for name, coords in geometry.items():
        batch = batch_for_shader(shader, 'LINES' if name == "support" else 'POINTS', {"pos": coords.tolist()})
        shader.uniform_float("color", COLOURS[name])
        batch.draw(shader)
    gpu.state.point_size_set(1.0)
    gpu.state.line_width_set(1.0)


OVERLAY = ActionOverlay("show_balance", overlay_trace, _key, _draw)
classes = ()
register, unregister = OVERLAY.register, OVERLAY.unregister
