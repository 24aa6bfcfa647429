"""Robot tab > Balance: Check Balance on a baked action, stored and drawn, equal to core's readout."""
from __future__ import annotations

import importlib
import json

import bpy
import numpy as np


def test_check_balance_of_a_baked_walk(walk_on_g1, extension):
    settings, source, robot = walk_on_g1(frames=(1, 90))
    assert bpy.ops.robot_retarget.bake() == {'FINISHED'}
    assert bpy.ops.robot_retarget.check_balance() == {'FINISHED'}
    action = robot.animation_data.action
    stored = json.loads(action["robot_retarget_balance"])
    assert stored["frames"] == 90 and abs(stored["mass_kg"] - 33.34) < 0.01
    assert 0.0 < stored["zmp_outside_support_pct"] < 100.0  # a human's balance, not the robot's
    outside = sum(last - first + 1 for first, last in stored["frames_outside"])
    assert outside == round(stored["zmp_outside_support_pct"] * stored["frames"] / 100.0)

    # the same numbers from core on the same keys
    ops = importlib.import_module(extension.__name__ + ".operators.export")
    core = importlib.import_module(extension.__name__ + ".core.balance")
    transforms = importlib.import_module(extension.__name__ + ".core.model.transforms")
    table = ops.action_table(robot, ops.scene_fps(bpy.context.scene))
    root = np.tile(np.eye(4), (len(table.q), 1, 1))
    root[:, :3, :3] = transforms.quat_to_matrix(table.root_quaternion)
    root[:, :3, 3] = table.root_position
    tree = importlib.import_module(extension.__name__ + ".operators.common").tree_from_rig(robot)
    direct = core.balance_readout(tree, table.q, root, ops.scene_fps(bpy.context.scene))
    assert direct["zmp_outside_support_pct"] == stored["zmp_outside_support_pct"]


def test_check_balance_without_an_action_says_so(walk_on_g1):
    settings, source, robot = walk_on_g1(frames=(1, 30))
    robot.animation_data_clear()
    try:
        bpy.ops.robot_retarget.check_balance()
    except RuntimeError as exc:
        assert "no action" in str(exc)
    else:
        raise AssertionError("Check Balance ran without an action")
