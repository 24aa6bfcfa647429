"""operators/follow_path.py in the real bpy module: the Panda rig follows a keyed empty as a baked action,
and the action's joints are the core's trajectory; the menu entries and the link search."""
from __future__ import annotations

import importlib
import json
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

ROOT = Path(__file__).resolve().parents[2]
PANDA = ROOT / "tests" / "data" / "robots" / "franka_panda.urdf"
FPS = 24.0
FRAMES = np.array([1.0, 13.0, 25.0, 37.0, 49.0])  # 0.5 s apart
ANGLES = np.radians(np.linspace(-50, 50, 5))
PATH = np.column_stack([0.5 * np.cos(ANGLES), 0.5 * np.sin(ANGLES), 0.35 + 0.1 * np.sin(np.linspace(0, np.pi, 5))])
DOWN = np.array([0.0, 1.0, 0.0, 0.0])


@pytest.fixture
def mods(extension):
    name = extension.__name__
    return {n: importlib.import_module(f"{name}.{m}") for n, m in {
        "anim_io": "operators.anim_io", "common": "operators.common", "rig": "core.model.rig",
        "mech": "core.waypoints.mechanism", "traj": "core.waypoints.trajectory", "wp": "operators.waypoints",
        "kin": "core.model.kinematics", "urdf": "core.model.urdf", "tf": "core.model.transforms"}.items()}


def _scene(clean_scene, mods):
    clean_scene.render.fps, clean_scene.render.fps_base = int(FPS), 1.0
    assert bpy.ops.robot_retarget.import_urdf(filepath=str(PANDA), import_meshes=False) == {'FINISHED'}
    rig = next(o for o in bpy.data.objects if o.type == 'ARMATURE')
    target = bpy.data.objects.new("Target", None)
    clean_scene.collection.objects.link(target)
    target.rotation_mode = "QUATERNION"
    action, slot = mods["anim_io"].new_action(target, "Path")
    mods["anim_io"].write_channels(action, slot, [("location", i, "") for i in range(3)], FRAMES, PATH)
    mods["anim_io"].write_channels(action, slot, [("rotation_quaternion", i, "") for i in range(4)],
                                   FRAMES[[0, -1]], np.vstack([DOWN, DOWN]))
    bpy.context.view_layer.objects.active = target
    return rig, target


def _baked_q(mods, rig, action):
    tree = mods["common"].tree_from_rig(rig)
    layout = mods["rig"].rig_layout(tree)
    channels = [(f'pose.bones["{bone}"].{prop}', index) for bone, prop, index in layout.joint_channels]
    slot = rig.animation_data.action_slot
    frames, q = mods["anim_io"].read_channels(action, slot, channels)
    return tree, frames, q


def test_follow_path_bakes_the_core_trajectory(clean_scene, mods):
    rig, target = _scene(clean_scene, mods)
    bpy.ops.ed.undo_push(message="keyed path")
    assert bpy.ops.robot_retarget.follow_path('EXEC_DEFAULT', True, robot=rig.name, tip_link="panda_hand_tcp",
                                              mode='TANGENT', rate=48.0) == {'FINISHED'}
    rig = bpy.data.objects[rig.name]
    action = rig.animation_data.action
    report = json.loads(action["robot_retarget_report"])
    assert report["unreachable"] == [] and report["limit_violations"] == 0
    tree, frames, q = _baked_q(mods, rig, action)
    assert np.allclose(frames, 1.0 + np.arange(97) * FPS / 48.0)  # 2 s at 48 Hz: every half frame
    chain = mods["mech"].make_chain(mods["kin"].KinematicTree(mods["urdf"].parse_urdf(PANDA)), "panda_hand_tcp")
    quats = np.full((5, 4), np.nan)
    quats[[0, -1]] = DOWN
    core = mods["traj"].follow_path(chain, mods["traj"].PathKeys((FRAMES - 1) / FPS, PATH, quats),
                                    mods["traj"].FollowSettings(rate_hz=48.0, mode="tangent"))
    assert np.allclose(q, core.q, atol=1e-5)  # keys are float32
    tips = tree.forward(q)[:, tree.link_index("panda_hand_tcp")]
    at_keys = tips[::24, :3, 3]
    assert np.max(np.linalg.norm(at_keys - PATH, axis=1)) < 1e-3
    # the target's own keys and actions are untouched; undo removes the bake
    assert target.animation_data.action.name == "Path"
    name = rig.name
    assert bpy.ops.ed.undo() == {'FINISHED'}
    rig = bpy.data.objects[name]
    assert rig.animation_data is None or rig.animation_data.action is None


def test_menu_link_search_and_bad_input(clean_scene, mods):
    rig, target = _scene(clean_scene, mods)
    draw = bpy.types.VIEW3D_MT_object_animation._dyn_ui_initialize()
    assert mods["wp"]._menu in draw
    links = mods["wp"].rig_links(rig)
    assert "panda_hand_tcp" in links and "panda_link0" in links  # merged fixed links too
    with pytest.raises(RuntimeError, match="needs Robot"):
        bpy.ops.robot_retarget.follow_path(tip_link="panda_hand_tcp")
    with pytest.raises(RuntimeError, match="no link 'hand'"):
        bpy.ops.robot_retarget.follow_path(robot=rig.name, tip_link="hand")
    assert rig.animation_data is None or rig.animation_data.action is None  # nothing half-written


def test_orient_then_follow_the_keyed_orientations(clean_scene, mods):
    """Orient Waypoints (tangent + mechanism, from the rig) keys the target; Follow Path in Keyed mode holds them."""
    rig, target = _scene(clean_scene, mods)
    assert bpy.ops.robot_retarget.orient_waypoints(mode='TANGENT_MECHANISM', robot=rig.name,
                                                   tip_link="panda_hand_tcp", use_table=False) == {'FINISHED'}
    adt = target.animation_data
    frames, keyed = mods["anim_io"].read_channels(adt.action, adt.action_slot,
                                                  [("rotation_quaternion", i) for i in range(4)])
    assert np.array_equal(frames, FRAMES)
    assert bpy.ops.robot_retarget.follow_path(robot=rig.name, tip_link="panda_hand_tcp", mode='KEYED',
                                              rate=24.0) == {'FINISHED'}
    report = json.loads(rig.animation_data.action["robot_retarget_report"])
    held = np.array([k["quaternion"] for k in report["keys"]])
    dots = np.abs(np.sum(held * keyed / np.linalg.norm(keyed, axis=1, keepdims=True), axis=1))
    assert np.all(dots > np.cos(np.radians(0.01) / 2))  # the keyed orientations, as keyed
    assert max(k["orientation_error_deg"] for k in report["keys"]) < 0.5
    assert report["unreachable"] == []


def test_orient_options_curve_ratio_and_reach(clean_scene, mods):
    """The redo panel's curve and ratio reach the core (by the keys' times); a via key out of reach is named."""
    rig, target = _scene(clean_scene, mods)
    assert bpy.ops.robot_retarget.orient_waypoints(mode='TANGENT', curve='BSPLINE', distances='ARC') == {'FINISHED'}
    adt = target.animation_data
    _, keyed = mods["anim_io"].read_channels(adt.action, adt.action_slot, [("rotation_quaternion", i) for i in range(4)])
    opt = importlib.import_module(f"{mods['wp'].__name__.rsplit('.', 2)[0]}.core.waypoints.optimum")
    core = opt.waypoint_orientations(PATH[0], DOWN, PATH[-1], DOWN, PATH[1:-1], curve="bspline", distances="arc",
                                     times=(FRAMES - 1) / FPS)
    dots = np.abs(np.sum(keyed[1:-1] / np.linalg.norm(keyed[1:-1], axis=1, keepdims=True) * core, axis=1))
    assert np.all(dots > 1 - 1e-6)
    far = PATH.copy()
    far[2] = [1.6, 0.0, 0.4]
    mods["anim_io"].write_channels(adt.action, adt.action_slot, [("location", i, "") for i in range(3)], FRAMES, far)
    outcome = mods["wp"].orient_waypoints(target, None, mods["wp"].OrientSettings(
        mode="tangent_mechanism", robot=rig.name, tip_link="panda_hand_tcp", use_table=False, state_blend=True))
    assert any("frame 25 is out of the robot's reach" in note for note in outcome.notes)
    assert sum("out of the robot's reach" in note for note in outcome.notes) == 1


def test_the_waypoints_panel_offers_both_operators(clean_scene, mods, extension):
    from .test_panels import draw_panel

    rig, _ = _scene(clean_scene, mods)
    clean_scene.robot_retarget.robot = rig
    panel = importlib.import_module(f"{extension.__name__}.panels.waypoints_panel").ROBOT_RETARGET_PT_waypoints
    drawn = draw_panel(panel, bpy.context)
    assert ("operator", "robot_retarget.orient_waypoints") in drawn
    assert ("operator", "robot_retarget.follow_path") in drawn


def test_a_moved_rig_and_a_bone_target(clean_scene, mods):
    """The path is taken into the rig's space: a rig moved and turned with its target bakes the same joints;
    a pose bone of another armature works as the target."""
    from mathutils import Euler, Vector

    rig, target = _scene(clean_scene, mods)
    bpy.ops.robot_retarget.follow_path(robot=rig.name, tip_link="panda_hand_tcp", mode='TANGENT', rate=24.0)
    _, _, at_origin = _baked_q(mods, rig, rig.animation_data.action)
    holder = bpy.data.objects.new("Holder", None)  # the rig and the target ride on one moved parent
    clean_scene.collection.objects.link(holder)
    holder.location, holder.rotation_euler = Vector((1.0, -2.0, 0.5)), Euler((0.3, -0.2, 1.1))
    rig.parent = target.parent = holder
    bpy.context.view_layer.update()
    bpy.ops.robot_retarget.follow_path(robot=rig.name, tip_link="panda_hand_tcp", mode='TANGENT', rate=24.0)
    _, _, moved = _baked_q(mods, rig, rig.animation_data.action)
    assert np.allclose(moved, at_origin, atol=1e-5)
    # a bone of an armature at the origin, keyed like the empty
    arm = bpy.data.objects.new("Hand", bpy.data.armatures.new("Hand"))
    clean_scene.collection.objects.link(arm)
    rig.parent = None
    bpy.context.view_layer.objects.active = arm
    bpy.ops.object.mode_set(mode='EDIT')
    bone = arm.data.edit_bones.new("ik")
    bone.tail = (0.0, 0.0, 0.1)  # the bone's Y axis along world +Z: its rest space is not the armature's
    bpy.ops.object.mode_set(mode='POSE')
    pose_bone = arm.pose.bones["ik"]
    pose_bone.rotation_mode = "QUATERNION"
    rest = np.array(arm.data.bones["ik"].matrix_local)
    local = (PATH - rest[:3, 3]) @ rest[:3, :3]  # the path in the bone's rest space
    prefix = 'pose.bones["ik"].'
    action, slot = mods["anim_io"].new_action(arm, "HandPath")
    mods["anim_io"].write_channels(action, slot, [(prefix + "location", i, "ik") for i in range(3)], FRAMES, local)
    down_local = mods["tf"].matrix_to_quat(rest[:3, :3].T @ mods["tf"].quat_to_matrix(DOWN))
    mods["anim_io"].write_channels(action, slot, [(prefix + "rotation_quaternion", i, "ik") for i in range(4)],
                                   FRAMES[[0, -1]], np.vstack([down_local, down_local]))
    rig.location = (0.0, 0.0, 0.0)
    bpy.context.view_layer.update()
    assert bpy.ops.robot_retarget.follow_path(bone="ik", robot=rig.name, tip_link="panda_hand_tcp", mode='TANGENT',
                                              rate=24.0) == {'FINISHED'}
    _, _, from_bone = _baked_q(mods, rig, rig.animation_data.action)
    assert np.allclose(from_bone, at_origin, atol=1e-4)
    bpy.ops.object.mode_set(mode='OBJECT')


def _redo_panel(operator_class, context, **values) -> list:
    """Draw an operator's redo panel with the checking layout stand-in of test_panels."""
    from .test_panels import RecordingLayout

    module, _, name = operator_class.bl_idname.partition(".")
    rna = getattr(getattr(bpy.ops, module), name).get_rna_type()
    props = {p.identifier: (tuple(p.default_array) if getattr(p, "is_array", False) else p.default)
             for p in rna.properties if p.identifier != "rna_type"}
    log: list = []
    stand_in = SimpleNamespace(bl_rna=rna, layout=RecordingLayout(log, context), **{**props, **values})
    operator_class.draw(stand_in, context)
    return log


def test_links_are_picked_from_the_rig(clean_scene, mods, extension):
    rig, _ = _scene(clean_scene, mods)
    assert bpy.ops.robot_retarget.follow_path('INVOKE_DEFAULT', robot=rig.name, tip_link="panda_hand_tcp",
                                              mode='TANGENT', rate=10.0) == {'FINISHED'}
    listed = [item.name for item in getattr(bpy.context.window_manager, mods["wp"].LINKS)]
    assert listed == mods["wp"].rig_links(rig)
    follow = importlib.import_module(f"{extension.__name__}.operators.follow_path").ROBOT_RETARGET_OT_follow_path
    drawn = _redo_panel(follow, bpy.context)
    assert ("prop_search", f"SimpleNamespace.tip_link in {mods['wp'].LINKS}") in drawn
    assert ("prop_search", f"SimpleNamespace.base_link in {mods['wp'].LINKS}") in drawn
    orient = mods["wp"].ROBOT_RETARGET_OT_orient_waypoints
    drawn = _redo_panel(orient, bpy.context, mode="TANGENT_MECHANISM", blend="CUSTOM")
    assert ("prop_search", f"SimpleNamespace.tip_link in {mods['wp'].LINKS}") in drawn
    assert ("prop", "SimpleNamespace.state_blend") in drawn and ("prop", "SimpleNamespace.custom_curve") in drawn
