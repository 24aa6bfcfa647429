"""Viewport overlay of self-collision (Bake Settings > Show Collisions): at the current frame, the
axes of the robot's links that overlap another checked link by more than 5 mm, in red.

operators.collision.collision_trace computes the distances over the whole action once (headless,
tested); the gpu draw handler (added at register, drawing only while the toggle is on) looks up
the current frame.
"""
from __future__ import annotations

import numpy as np

from ..operators.collision import collision_trace
from .overlay import ActionOverlay

COLOUR = (1.0, 0.1, 0.1, 1.0)

def _key(robot, action):
    return (tuple(action.frame_range), len(action.layers) if hasattr(action, "layers") else 0,
            action.get("robot_retarget_report_frames", 0))


def _draw(robot, trace, scene) -> None:
    import gpu
    from gpu_extras.batch import batch_for_shader

    segments = trace.segments(scene.frame_current + scene.frame_subframe, np.array(robot.matrix_world))
    if not len(segments):
        return
    shader = gpu.shader.from_builtin('UNIFORM_COLOR')
    gpu.state.depth_test_set('NONE')
    gpu.state.line_width_set(6.0)
    batch = batch_for_shader(shader, 'LINES', {"pos": segments.tolist()})
    shader.uniform_float("color", COLOUR)
    batch.draw(shader)
    gpu.state.line_width_set(1.0)


OVERLAY = ActionOverlay("show_collisions", collision_trace, _key, _draw)
classes = ()
register, unregister = OVERLAY.register, OVERLAY.unregister
