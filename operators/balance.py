"""Robot tab > Balance: would the robot stand its action? The readout of core.balance, stored
on the action so the sidebar shows it without computing again."""
from __future__ import annotations

import json

import bpy
import numpy as np

from ..core.feet.contacts import flags_to_intervals
from ..core.model.transforms import pose_matrices, quat_to_matrix
from .common import reports_errors, tree_from_rig
from .export import action_samples, find_robot, scene_fps

BALANCE_PROPERTY = "robot_retarget_balance"


def action_balance(robot, scene) -> dict:
    """The balance readout of the robot's active action at its keys (headless: no UI needed),
    with the scene frames whose ZMP leaves the support as [first, last] ranges; stored on the
    action. Keys evenly spaced are read at their own rate (a gait keyed at its control cycle
    reads as its report does, in a scene of any frame rate); keys spaced unevenly, at every
    whole frame."""
    from ..core.balance import balance_readout
    fps = scene_fps(scene)
    table, rate = action_samples(robot, fps)
    tree = tree_from_rig(robot)
    root = pose_matrices(quat_to_matrix(table.root_quaternion), table.root_position)
    readout = balance_readout(tree, table.q, root, rate, per_frame=True)
    frames = robot.animation_data.action.frame_range[0] + table.time * fps  # scene frame of each sample
    margins = np.array([-np.inf if m is None else m for m in readout.pop("support_margin_m")])
    readout.pop("zmp_m"), readout.pop("com_m")
    readout["rate_hz"] = rate
    readout["frames_outside"] = [[int(np.floor(frames[a] + 1e-6)), int(np.ceil(frames[b - 1] - 1e-6))]
                                 for a, b in flags_to_intervals(margins < 0.0)]
    robot.animation_data.action[BALANCE_PROPERTY] = json.dumps(readout)
    return readout


def balance_summary(readout: dict) -> str:
    margin = readout["min_support_margin_m"]
    rate = f" keys at {readout['rate_hz']:.0f} Hz" if "rate_hz" in readout else " frames"
    return (f"ZMP outside the support on {readout['zmp_outside_support_pct']:.0f} % of {readout['frames']}{rate}; "
            f"worst margin {'none' if margin is None else f'{1000 * margin:.0f} mm'}")


class ROBOT_RETARGET_OT_check_balance(bpy.types.Operator):
    """Compute the robot action's zero moment point against the support polygon of its feet"""

    bl_idname = "robot_retarget.check_balance"
    bl_label = "Check Balance"
    bl_options = {'REGISTER', 'UNDO'}  # stores the readout on the action

    @reports_errors
    def execute(self, context):
        readout = action_balance(find_robot(context), context.scene)
        for warning in readout["warnings"]:
            self.report({'WARNING'}, warning)
        self.report({'INFO'}, balance_summary(readout))
        return {'FINISHED'}


classes = (ROBOT_RETARGET_OT_check_balance,)
