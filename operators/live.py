"""Live Retarget: the robot rig follows a source armature that is animated live (a mocap plugin
streaming into Blender, or an action playing), frame by frame, through core.stream.

LiveRig does one tick's work (read the source's current pose, stream it, pose the robot and the
ghost of the forecast, keep what Record needs) and runs without a window, so tests and scripts
drive it directly. The operator is only the modal loop around it: a timer in the UI. Timers do
not run under --background, where the operator refuses and points to `robot-retarget stream`.
"""
from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING

import bpy
import numpy as np
from bpy.props import BoolProperty, EnumProperty, FloatProperty

from ..core.model.rig import rig_layout, root_pose_to_bone
from ..core.stream.predict import PredictSettings
from ..props import mapping_from_settings
from . import anim_io
from .common import REPORT_PROPERTY, check_objects, reports_errors, tree_from_rig
from .retarget import write_robot_action

if TYPE_CHECKING:  # for the annotations; the code imports them where it runs (registering imports no scipy)
    from ..core.stream.session import StreamSettings

GHOST_SUFFIX = " (forecast)"
NO_WINDOW = ("Live Retarget runs on a timer in Blender's window; without one (--background, scripts) "
             "use `robot-retarget stream`, or drive operators.live.LiveRig tick by tick")
_PREDICTORS = [("NONE", "None", "Output the pose of the latest frame"),
               ("EXTRAPOLATE", "Extrapolate", "A straight line through the latest samples, carried ahead"),
               ("MATCH", "Match", "Continue from where the stream moved alike before"),
               ("AUTO", "Auto", "Whichever of extrapolate and match has been closer lately")]
_PLACEMENTS = [("OUTPUT", "Output", "Forecast the filtered output"),
               ("SOLUTION", "Solution", "Forecast the robot's solution before filtering"),
               ("MODEL", "Model", "Forecast the source's bones before mapping")]


class RobotRetargetLiveSettings(bpy.types.PropertyGroup):
    rate_hz: FloatProperty(name="Rate", default=60.0, min=1.0, max=1000.0, subtype='FREQUENCY',
                           description="How often the source is read and the robot posed (a timer in the UI)")
    predictor: EnumProperty(name="Predictor", items=_PREDICTORS, default='AUTO',
                            description="How the pose ahead is forecast")
    placement: EnumProperty(name="Forecast", items=_PLACEMENTS, default='OUTPUT',
                            description="What the prediction unit forecasts")
    auto_horizon: BoolProperty(name="Measured Latency", default=True,
                               description="Forecast as far ahead as the measured processing latency (the "
                                           "forecast also covers the filter's lag)")
    predict_ms: FloatProperty(name="Ahead (ms)", default=50.0, min=0.0, max=1000.0,
                              description="How far ahead to forecast, milliseconds (when not measured)")
    filter_hz: FloatProperty(name="Filter", default=7.0, min=0.0, max=100.0, subtype='FREQUENCY',
                             description="Causal low-pass cutoff (0: no filter)")
    ghost: BoolProperty(name="Ghost", default=True, description="Show the forecast pose as a wire ghost")
    record: BoolProperty(name="Record", default=False,
                         description="Keep the robot's poses and write them to a new action when stopped")


def _live(context):
    return context.scene.robot_retarget_live


def stream_settings(live) -> StreamSettings:
    from ..core.stream.session import StreamSettings
    return StreamSettings(predict_ms=None if live.auto_horizon else live.predict_ms,
                          placement=live.placement.lower(),
                          predict=PredictSettings(predictor=live.predictor.lower()),
                          filter="butterworth" if live.filter_hz > 0 else "none", filter_hz=live.filter_hz or 7.0)


class LiveRig:
    """One live session: the source armature streamed onto the robot rig, tick by tick."""

    def __init__(self, scene, source: bpy.types.Object, robot: bpy.types.Object, mapping, settings: StreamSettings,
                 rate_hz: float, ghost: bool = True, record: bool = False):
        from ..core.stream.session import StreamSession
        self.scene, self.source, self.robot = scene, source, robot
        self.tree = tree_from_rig(robot)
        self.layout = rig_layout(self.tree)
        self.depsgraph = anim_io.scene_depsgraph(scene)
        self.reader = anim_io.ArmatureReader(source, self.depsgraph)
        heads, tails, rot = self.reader.pose(self.depsgraph)
        skeleton = self.reader.motion(heads[None], tails[None], rot[None], rate_hz)
        self.session = StreamSession(skeleton, self.tree, mapping, settings, rate_hz=rate_hz)
        self.stashed = robot.animation_data.action if robot.animation_data else None
        if robot.animation_data:
            robot.animation_data.action = None  # the rig is posed by hand while live
        self.ghost = _make_ghost(scene, robot) if ghost else None
        self.record, self.start_frame = record, scene.frame_current
        self.recorded: list[tuple[float, np.ndarray]] = []
        self.seq = 0

    def tick(self, time_s: float) -> bool:
        """Read the source now, stream it, pose the rig (the latest frame's pose) and the ghost
        (the forecast). False when the frame did not come through (held)."""
        self.depsgraph.update()
        heads, tails, rot = self.reader.pose(self.depsgraph)
        frame = self.reader.motion(heads[None], tails[None], rot[None], self.session.rate_hz)
        out = self.session.push_frame(self.seq, time_s, frame)
        self.seq += 1
        if out is None:
            return False
        now = self.session.current if self.session.current is not None else out.vector
        _pose_rig(self.robot, self.layout, *self.session.pose_of(now))
        if self.ghost is not None:
            _pose_rig(self.ghost, self.layout, out.pose.q, out.pose.root_position, out.pose.root_rotation)
        if self.record:
            self.recorded.append((time_s, now.copy()))
        return True

    def finish(self, keep: bool = True) -> bpy.types.Action | None:
        """Give the rig its action back, remove the ghost, and write what was recorded."""
        action = None
        if keep and self.record and len(self.recorded) >= 2:
            action = self._write()
        if self.robot.animation_data is not None:
            self.robot.animation_data.action = self.stashed
        if self.ghost is not None:
            bpy.data.objects.remove(self.ghost)
            self.ghost = None
        return action

    def _write(self) -> bpy.types.Action:
        times = np.array([t for t, _ in self.recorded])
        poses = [self.session.pose_of(v) for _, v in self.recorded]
        q = np.array([p[0] for p in poses])
        fps = self.scene.render.fps / self.scene.render.fps_base
        frames = self.start_frame + (times - times[0]) * fps
        action, _ = write_robot_action(self.robot, self.tree, f"{self.robot.name}|live",
                                       frames, np.array([p[1] for p in poses]), np.array([p[2] for p in poses]), q)
        action[REPORT_PROPERTY] = json.dumps(self.session.report())
        return action


def _make_ghost(scene, robot: bpy.types.Object) -> bpy.types.Object:
    """A wire copy of the rig (sharing its armature) that shows the forecast pose."""
    ghost = robot.copy()
    ghost.name = robot.name + GHOST_SUFFIX
    ghost.animation_data_clear()
    ghost.display_type = 'WIRE'
    ghost.show_in_front = True
    ghost.hide_select = True
    for key in list(ghost.keys()):
        if key.startswith("urdf"):
            del ghost[key]  # not a robot rig of its own
    scene.collection.objects.link(ghost)
    return ghost


def _pose_rig(rig: bpy.types.Object, layout, q: np.ndarray, root_position: np.ndarray,
              root_rotation: np.ndarray) -> None:
    location, quaternion = root_pose_to_bone(layout, root_position[None], root_rotation[None])
    root = rig.pose.bones[layout.root.name]
    root.location, root.rotation_quaternion = location[0], quaternion[0]
    bones = rig.pose.bones
    for value, (bone, prop, index) in zip(q, layout.joint_channels):
        getattr(bones[bone], prop)[index] = float(value)


class ROBOT_RETARGET_OT_live(bpy.types.Operator):
    """Drive the robot from the source armature as it moves, with the pose forecast ahead (Esc stops)"""

    bl_idname = "robot_retarget.live"
    bl_label = "Live Retarget"
    bl_options = {'REGISTER', 'UNDO'}

    _rig: LiveRig | None = None
    _timer = None

    def execute(self, context):
        """Without a window there is no timer to run on (and Blender calls execute, not invoke)."""
        self.report({'ERROR'}, NO_WINDOW)
        return {'CANCELLED'}

    @reports_errors
    def invoke(self, context, event):
        if bpy.app.background or context.window is None:
            return self.execute(context)
        settings = context.scene.robot_retarget
        source, robot = check_objects(settings)
        live = _live(context)
        self._rig = LiveRig(context.scene, source, robot, mapping_from_settings(settings), stream_settings(live),
                            live.rate_hz, ghost=live.ghost, record=live.record)
        self._start = time.perf_counter()
        self._timer = context.window_manager.event_timer_add(1.0 / live.rate_hz, window=context.window)
        context.window_manager.modal_handler_add(self)
        context.workspace.status_text_set("Live Retarget: Esc to stop")
        return {'RUNNING_MODAL'}

    def modal(self, context, event):
        if event.type == 'ESC':
            return self._stop(context)
        if event.type == 'TIMER':
            try:
                self._rig.tick(time.perf_counter() - self._start)
            except (ReferenceError, KeyError, ValueError) as exc:  # the source or the rig was deleted or changed
                self.report({'ERROR'}, f"Live Retarget stopped: {exc}")
                return self._stop(context)
            report = self._rig.session.report()
            context.workspace.status_text_set(
                f"Live Retarget: {report['frames']} frames, latency p50 {report['latency_ms']['p50']:.1f} ms, "
                f"forecasting {report['predict_ms']:.0f} ms ahead; Esc to stop")
        return {'PASS_THROUGH'}

    def _stop(self, context):
        context.window_manager.event_timer_remove(self._timer)
        context.workspace.status_text_set(None)
        action = self._rig.finish()
        report = self._rig.session.report()
        text = (f"Live Retarget: {report['frames']} frames, {report['dropped']} dropped, latency p50 "
                f"{report['latency_ms']['p50']:.1f} ms")
        if action is not None:
            text += f"; recorded into action {action.name!r}"
        self.report({'INFO'}, text)
        return {'FINISHED'}


classes = (RobotRetargetLiveSettings, ROBOT_RETARGET_OT_live)


def register():
    bpy.types.Scene.robot_retarget_live = bpy.props.PointerProperty(type=RobotRetargetLiveSettings)


def unregister():
    del bpy.types.Scene.robot_retarget_live
