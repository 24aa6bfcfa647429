"""Viewport overlay of self-collision (Bake Settings > Show Collisions): at the current frame, the
axes of the robot's links that overlap another checked link by more than 5 mm, in red.

operators.collision.collision_trace computes the distances over the whole action once (headless,
tested); the gpu draw handler (added at register, drawing only while the toggle is on) looks up
the current frame.
"""
from __future__ import annotations

import bpy
import numpy as np

from ..operators.collision import collision_trace

COLOUR = (1.0, 0.1, 0.1, 1.0)

_handle = None
_cache: dict = {}


def _trace(context):
    robot = context.scene.robot_retarget.robot
    if robot is None or robot.animation_data is None or robot.animation_data.action is None:
        return None, None
    action = robot.animation_data.action
    key = (robot.name, action.name, tuple(action.frame_range), len(action.layers) if hasattr(action, "layers") else 0,
           action.get("robot_retarget_report_frames", 0))
    if _cache.get("key") != key:
        try:
            _cache.update(key=key, trace=collision_trace(robot, context.scene))
        except (ValueError, KeyError):  # no keys or no robot file: nothing to draw
            _cache.update(key=key, trace=None)
    return robot, _cache["trace"]


def _draw():
    import gpu
    from gpu_extras.batch import batch_for_shader

    context = bpy.context
    settings = getattr(context.scene, "robot_retarget", None)
    if settings is None or not settings.show_collisions:
        return
    robot, trace = _trace(context)
    if trace is None:
        return
    scene = context.scene
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


classes = ()


def register():
    """The draw handler is always there and draws only while the toggle is on."""
    global _handle
    if _handle is None:
        _handle = bpy.types.SpaceView3D.draw_handler_add(_draw, (), 'WINDOW', 'POST_VIEW')


def unregister():
    global _handle
    if _handle is not None:
        bpy.types.SpaceView3D.draw_handler_remove(_handle, 'WINDOW')
        _handle = None
    _cache.clear()
