"""`gait`: a clip's steps as a robot gait that keeps its balance, at the robot's control cycle.

A BVH clip is read and walked by core.library.gait (the same code as `robot-retarget-core gait`, so
both write the same CSV); the new action is then keyed on the imported robot rig, so an in-process
caller finds it in Blender. FBX clips go through Blender's importer and the Generate Gait code.
"""
from __future__ import annotations

import argparse
from pathlib import Path

from ..core.library.arguments import add_gait_parser


def add_parser(sub) -> None:
    add_gait_parser(sub, run)


def run(args: argparse.Namespace) -> int:
    if Path(args.source).suffix.lower() == ".bvh":
        return _run_core(args)
    from ..core.library import cli as core_cli
    from ..core.library.arguments import command_inputs
    from ..core.library.clip import load_robot as robot_model
    from ..core.library.gait import ClipGait, gait_settings, weighed_robot
    from ..operators.export import scene_fps
    from ..operators.gait import gait_action
    from .common import check_outputs, clip_inputs

    out, report_path = check_outputs([args.out, args.report], args.overwrite, command_inputs(args))
    settings = gait_settings(args)
    weighed_robot(robot_model(args.robot))  # masses first, naming the file, as for a BVH clip
    inputs = clip_inputs(args)
    outcome = gait_action(inputs.scene, inputs.source, inputs.robot, inputs.mapping, inputs.start, inputs.end,
                          settings, contacts=inputs.contacts)
    gait = ClipGait(outcome.result, inputs.mapping, outcome.action.name, inputs.start, scene_fps(inputs.scene))
    return core_cli.write_gait_files(args, gait, inputs.robot_path, out, report_path)


def _run_core(args: argparse.Namespace) -> int:
    """Walk the gait headless in core, then key it on the robot rig (clip frame k is Blender frame k + 1,
    as Blender's BVH importer starts at frame 1; keys at the control cycle, subframes between)."""
    import bpy

    from ..core.library import cli as core_cli
    from ..operators.common import match_scene_to_clip, tree_from_rig
    from ..operators.gait import key_gait
    from .common import load_robot

    gait, robot, out, report_path = core_cli.gait_files(args)
    rig = load_robot(args.robot)
    frames = gait.start + 1.0 + gait.result.time_s * gait.fps
    action, _ = key_gait(rig, tree_from_rig(rig), gait.name, frames, gait.result)
    match_scene_to_clip(bpy.context.scene, gait.fps, int(frames[0]), int(round(frames[-1])))
    return core_cli.write_gait_files(args, gait, robot.path, out, report_path, action=action.name)
