"""What the viewport overlays share: a trace of the robot's active action computed once and kept
until the action changes, and a draw handler that is always registered and draws only while its
Robot-tab toggle is on (no handler to add or remove as the toggle flips, nothing drawn headless)."""
from __future__ import annotations

from typing import Callable

import bpy


class ActionOverlay:
    """compute(robot, scene) -> trace (headless, raises ValueError/KeyError when there is nothing
    to draw); key(robot, action) -> anything that changes when the trace must be computed again;
    draw(robot, trace, scene) draws with gpu; toggle: the scene setting that switches it on."""

    def __init__(self, toggle: str, compute: Callable, key: Callable, draw: Callable):
        self.toggle, self.compute, self.key, self.draw = toggle, compute, key, draw
        self.handle = None
        self.cache: dict = {}

    def trace(self, context):
        """(robot, trace) for the Robot tab's robot and its active action, or (None, None)."""
        robot = context.scene.robot_retarget.robot
        if robot is None or robot.animation_data is None or robot.animation_data.action is None:
            return None, None
        key = (robot.name, robot.animation_data.action.name, self.key(robot, robot.animation_data.action))
        if self.cache.get("key") != key:
            try:
                self.cache.update(key=key, trace=self.compute(robot, context.scene))
            except (ValueError, KeyError):  # nothing to draw (no keys, no masses, no robot file)
                self.cache.update(key=key, trace=None)
        return robot, self.cache["trace"]

    def _draw(self) -> None:
        context = bpy.context
        settings = getattr(context.scene, "robot_retarget", None)
        if settings is None or not getattr(settings, self.toggle):
            return
        robot, trace = self.trace(context)
        if trace is not None:
            self.draw(robot, trace, context.scene)

    def register(self) -> None:
        if self.handle is None:
            self.handle = bpy.types.SpaceView3D.draw_handler_add(self._draw, (), 'WINDOW', 'POST_VIEW')

    def unregister(self) -> None:
        if self.handle is not None:
            bpy.types.SpaceView3D.draw_handler_remove(self.handle, 'WINDOW')
            self.handle = None
        self.cache.clear()
