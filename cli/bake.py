"""`bake`: retarget one clip onto a robot and write the bake CSV (and the report).

A BVH clip is read and baked by core.library (the same code as `robot-retarget-core bake`, so
both write the same bytes); the new action is then keyed on the imported robot rig, so an
in-process caller finds it in Blender. FBX clips go through Blender's importer.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from ..core.library.arguments import add_bake_parser
from .common import bake_clip, load_robot


def add_parser(sub) -> None:
    add_bake_parser(sub, run)


def run(args: argparse.Namespace) -> int:
    if Path(args.source).suffix.lower() == ".bvh":
        return _run_core(args)
    from ..core.library import cli as core_cli
    from ..core.library.clip import ClipBake, RobotModel, bake_table
    from ..operators.common import tree_from_rig

    out, report_path = core_cli.bake_outputs(args)
    outcome, robot_path, rig = bake_clip(args)
    bake = ClipBake(outcome.result, None, bake_table(outcome.result), outcome.action.name)
    robot = RobotModel(robot_path.absolute(), tree_from_rig(rig))
    return core_cli.write_bake_files(args, bake, robot, out, report_path)


def _run_core(args: argparse.Namespace) -> int:
    """Bake headless in core, then key the result on the robot rig (clip frame k is Blender frame k + 1,
    as Blender's BVH importer starts at frame 1)."""
    from ..core.library import cli as core_cli
    import bpy

    from ..operators.common import REPORT_PROPERTY, match_scene_to_clip, tree_from_rig
    from ..operators.retarget import write_robot_action

    bake, robot, out, report_path = core_cli.bake_files(args)
    rig = load_robot(args.robot)
    result = bake.result
    frames = bake.start + 1.0 + np.arange(len(result.q))
    action, _ = write_robot_action(rig, tree_from_rig(rig), bake.name, frames, result.root_position,
                                   result.root_rotation, result.q)
    action[REPORT_PROPERTY] = json.dumps(result.report)
    match_scene_to_clip(bpy.context.scene, result.fps, int(frames[0]), int(frames[-1]))
    return core_cli.write_bake_files(args, bake, robot, out, report_path, action=action.name)
