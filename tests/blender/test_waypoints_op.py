"""operators/waypoints.py in the real bpy module: Orient Waypoints keys rotations at location keys.

Background bpy (5.0.1): an operator reporting an ERROR raises RuntimeError
from the bpy.ops call; undo needs a first bpy.ops.ed.undo_push() and the
operator called as bpy.ops.x.y('EXEC_DEFAULT', True, ...); after undo every
Python reference is stale and is looked up again by name.
"""
from __future__ import annotations

import importlib
from pathlib import Path

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

from bpy_extras import anim_utils  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
PANDA = ROOT / "tests" / "data" / "robots" / "franka_panda.urdf"
FRAMES = np.array([1.0, 6.0, 13.0, 21.0, 30.0])
PATH = np.array([[0.0, 0.0, 0.0], [0.3, 0.4, 0.1], [0.8, 0.5, 0.2], [1.2, 0.2, 0.3], [1.5, 0.0, 0.0]])
Q_START = np.array([1.0, 0.0, 0.0, 0.0])
Q_END = np.array([0.8, 0.2, -0.4, 0.4]) / np.linalg.norm([0.8, 0.2, -0.4, 0.4])
TOL = 2e-6  # keys are float32


@pytest.fixture
def mods(extension):
    name = extension.__name__
    return {
        "op": importlib.import_module(f"{name}.operators.waypoints"),
        "anim_io": importlib.import_module(f"{name}.operators.anim_io"),
        "wp": importlib.import_module(f"{name}.core.waypoints.orientations"),
        "opt": importlib.import_module(f"{name}.core.waypoints.optimum"),
        "mech": importlib.import_module(f"{name}.core.waypoints.mechanism"),
        "kin": importlib.import_module(f"{name}.core.model.kinematics"),
        "urdf": importlib.import_module(f"{name}.core.model.urdf"),
    }


def _target(scene, name="Target", mode="QUATERNION"):
    obj = bpy.data.objects.new(name, None)
    scene.collection.objects.link(obj)
    obj.rotation_mode = mode
    bpy.context.view_layer.objects.active = obj
    return obj


def _key(mods, obj, frames=FRAMES, path=PATH, prefix="", rotation=("rotation_quaternion", Q_START, Q_END)):
    anim_io = mods["anim_io"]
    action, slot = anim_io.new_action(obj, "Path")
    anim_io.write_channels(action, slot, [(prefix + "location", i, "") for i in range(3)], frames, path)
    if rotation is not None:
        prop, first, last = rotation
        anim_io.write_channels(action, slot, [(prefix + prop, i, "") for i in range(len(first))],
                               [frames[0], frames[-1]], np.vstack([first, last]))
    return action, slot


def _same_orientation(a, b, tol=TOL):
    a, b = np.atleast_2d(a), np.atleast_2d(b)
    return np.all(np.minimum(np.abs(a - b).max(axis=1), np.abs(a + b).max(axis=1)) < tol)


def _read(mods, obj, path, count):
    adt = obj.animation_data
    return mods["anim_io"].read_channels(adt.action, adt.action_slot, [(path, i) for i in range(count)])


def test_rotation_keys_at_location_keys_equal_the_core(clean_scene, mods):
    obj = _target(clean_scene)
    _key(mods, obj)
    assert bpy.ops.robot_retarget.orient_waypoints(mode='TANGENT', blend='BSPLINE', max_blend=0.8) == {'FINISHED'}
    frames, quats = _read(mods, obj, "rotation_quaternion", 4)
    assert np.array_equal(frames, FRAMES)
    core = mods["opt"].waypoint_orientations(PATH[0], Q_START, PATH[-1], Q_END, PATH[1:-1], mode="tangent",
                                            blend="bspline", max_blend=0.8, approach_axis=(0, 0, 1))
    assert _same_orientation(quats[1:-1], core)
    assert np.allclose(quats[0], Q_START, atol=TOL) and _same_orientation(quats[-1], Q_END)
    assert np.all(np.sum(quats[1:] * quats[:-1], axis=1) > 0)  # one hemisphere: no flips between keys


def test_euler_object_keeps_its_rotation_mode(clean_scene, mods):
    obj = _target(clean_scene, mode="ZXY")
    e0, e1 = np.array([0.1, 0.2, 0.3]), np.array([0.5, -0.3, 6.0])  # a turn beyond 2 pi stays as keyed
    _key(mods, obj, rotation=("rotation_euler", e0, e1))
    outcome = mods["op"].orient_waypoints(obj, None, mods["op"].OrientSettings(
        mode="bisector", approach_axis="-X", interpolation="euler"))
    frames, euler = _read(mods, obj, "rotation_euler", 3)
    assert np.array_equal(frames, FRAMES) and outcome.keys == 15
    assert np.allclose(euler[0], e0, atol=TOL) and np.allclose(euler[-1], e1, atol=1e-5)
    wp = mods["wp"]
    core = mods["opt"].waypoint_orientations(PATH[0], wp.euler_to_quat(e0, "ZXY"), PATH[-1], wp.euler_to_quat(e1, "ZXY"),
                                    PATH[1:-1], mode="bisector", approach_axis=(-1, 0, 0),
                                    interpolation="euler", euler_order="ZXY", start_euler=e0, end_euler=e1)
    assert _same_orientation(wp.euler_to_quat(euler[1:-1], "ZXY"), core, 1e-5)
    assert np.max(np.abs(np.diff(euler, axis=0))) < np.pi  # continuous Euler keys


def test_pose_bone_and_axis_angle_switch(clean_scene, mods):
    arm = bpy.data.armatures.new("Rig")
    obj = bpy.data.objects.new("Rig", arm)
    clean_scene.collection.objects.link(obj)
    bpy.context.view_layer.objects.active = obj
    bpy.ops.object.mode_set(mode='EDIT')
    bone = arm.edit_bones.new("ik.target")
    bone.tail = (0.0, 0.2, 0.0)
    bpy.ops.object.mode_set(mode='POSE')
    pb = obj.pose.bones["ik.target"]
    pb.rotation_mode = "AXIS_ANGLE"
    prefix = 'pose.bones["ik.target"].'
    _key(mods, obj, prefix=prefix, rotation=None)
    bpy.ops.robot_retarget.orient_waypoints(bone="ik.target")
    assert obj.pose.bones["ik.target"].rotation_mode == "QUATERNION"
    frames, quats = _read(mods, obj, prefix + "rotation_quaternion", 4)
    assert np.array_equal(frames, FRAMES)
    core = mods["opt"].waypoint_orientations(PATH[0], Q_START, PATH[-1], Q_START, PATH[1:-1],
                                            approach_axis=(0, 1, 0))  # bones: +Y by default
    assert _same_orientation(quats[1:-1], core)
    adt = obj.animation_data
    fcurve = anim_utils.action_get_channelbag_for_slot(adt.action, adt.action_slot).fcurves.find(
        prefix + "rotation_quaternion", index=0)
    assert fcurve.group is not None and fcurve.group.name == "ik.target"  # new channels join the bone's group
    bpy.ops.object.mode_set(mode='OBJECT')


def test_undo_removes_the_rotation_keys(clean_scene, mods):
    obj = _target(clean_scene)
    _key(mods, obj, rotation=None)
    bpy.ops.ed.undo_push(message="keyed path")
    assert bpy.ops.robot_retarget.orient_waypoints('EXEC_DEFAULT', True, mode='BISECTOR') == {'FINISHED'}
    assert _read(mods, bpy.data.objects["Target"], "rotation_quaternion", 4)[0].size == 5
    assert bpy.ops.ed.undo() == {'FINISHED'}
    with pytest.raises(KeyError):
        _read(mods, bpy.data.objects["Target"], "rotation_quaternion", 4)
    assert _read(mods, bpy.data.objects["Target"], "location", 3)[0].size == 5
    assert bpy.ops.ed.redo() == {'FINISHED'}
    assert _read(mods, bpy.data.objects["Target"], "rotation_quaternion", 4)[0].size == 5


def test_bad_input_is_reported(clean_scene, mods):
    obj = _target(clean_scene)
    with pytest.raises(RuntimeError, match="no location keys"):
        bpy.ops.robot_retarget.orient_waypoints()
    _key(mods, obj, frames=FRAMES[:2], path=PATH[:2], rotation=None)
    with pytest.raises(RuntimeError, match="has 2 location key.*at least 3"):
        bpy.ops.robot_retarget.orient_waypoints()
    _key(mods, obj, path=np.tile(PATH[1], (5, 1)), rotation=None)
    with pytest.raises(RuntimeError, match="same place"):
        bpy.ops.robot_retarget.orient_waypoints()
    _key(mods, obj, rotation=None)
    with pytest.raises(RuntimeError, match="needs Robot"):
        bpy.ops.robot_retarget.orient_waypoints(mode='MECHANISM')
    with pytest.raises(KeyError, match="no pose bone"):
        mods["op"].orient_waypoints(obj, "hand")


def test_mechanism_mode_on_the_panda_rig(clean_scene, mods):
    """The rig at the origin: the core, given the same chain, gives the same keys."""
    assert bpy.ops.robot_retarget.import_urdf(filepath=str(PANDA), import_meshes=False) == {'FINISHED'}
    rig = next(o for o in bpy.data.objects if o.type == 'ARMATURE')
    obj = _target(clean_scene)
    frames, path = FRAMES[[0, 2, 4]], np.array([[0.5, -0.3, 0.3], [0.45, 0.0, 0.45], [0.5, 0.3, 0.3]])
    down = np.array([0.0, 1.0, 0.0, 0.0])
    _key(mods, obj, frames=frames, path=path, rotation=("rotation_quaternion", down, down))
    bpy.ops.robot_retarget.orient_waypoints(mode='MECHANISM', robot=rig.name, tip_link="panda_hand_tcp",
                                            use_table=False)
    _, quats = _read(mods, obj, "rotation_quaternion", 4)
    chain = mods["mech"].make_chain(mods["kin"].KinematicTree(mods["urdf"].parse_urdf(PANDA)), "panda_hand_tcp")
    core = mods["opt"].waypoint_orientations(path[0], down, path[-1], down, path[1:2], mode="mechanism",
                                            chain=chain)
    assert _same_orientation(quats[1:2], core, 1e-5)
