"""The Blender flow on scenes we did not set up: armatures moved, scaled, parented, renamed,
keyed from another frame or at another rate; each baked with the real operators."""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

from . import test_bake  # noqa: E402
from .test_bake import core_model, report_of, robot_keys  # noqa: E402

mods = test_bake.mods  # the fixture: the extension's modules

ROOT = Path(__file__).resolve().parents[2]
WALK = ROOT / "data" / "motion" / "cmu_131_01_walk_m.bvh"
G1 = ROOT / "data" / "robots" / "g1" / "unitree_g1_29dof.urdf"


def import_clip(**options):
    before = set(bpy.data.objects)
    options.setdefault("update_scene_fps", True)
    options.setdefault("update_scene_duration", True)
    assert bpy.ops.import_anim.bvh(filepath=str(WALK), **options) == {'FINISHED'}
    return next(o for o in bpy.data.objects if o not in before and o.type == 'ARMATURE')


def import_robot():
    before = set(bpy.data.objects)
    assert bpy.ops.robot_retarget.import_urdf(filepath=str(G1), import_meshes=False) == {'FINISHED'}
    return next(o for o in bpy.data.objects if o not in before and o.type == 'ARMATURE')


def pick(scene, source, rig, frames=None):
    settings = scene.robot_retarget
    settings.source, settings.robot = source, rig
    settings.plant_feet = True
    if frames is not None:
        scene.frame_start, scene.frame_end = frames
        settings.use_scene_range = True
    assert bpy.ops.robot_retarget.auto_map() == {'FINISHED'}
    return settings


def baked(mods, rig):
    """(frames, root location+quaternion (F, 7), q (F, n), report) of the robot's action."""
    _, layout = core_model(mods, G1)
    frames, root, q = robot_keys(mods, rig, layout)
    return frames, root, q, report_of(mods, rig.animation_data.action)


def reference(clean_scene, mods, frames=(1, 90)):
    source, rig = import_clip(), import_robot()
    pick(clean_scene, source, rig, frames)
    assert bpy.ops.robot_retarget.bake() == {'FINISHED'}
    return baked(mods, rig)


def fresh(clean_scene):
    """An empty scene again (after a reference bake in the same test)."""
    bpy.ops.wm.read_homefile(use_empty=True, use_factory_startup=True)
    return bpy.context.scene


def same_bake(ref, got, q_tol, root_tol):
    f0, r0, q0, rep0 = ref
    f1, r1, q1, rep1 = got
    assert len(f1) == len(f0)
    np.testing.assert_allclose(q1, q0, rtol=0, atol=q_tol)
    np.testing.assert_allclose(r1, r0, rtol=0, atol=root_tol)
    assert rep1["automap_confidence"] == rep0["automap_confidence"] == 1.0
    assert abs(rep1["limb_direction_error_deg"] - rep0["limb_direction_error_deg"]) < 0.01


def test_an_armature_scaled_and_turned_on_its_object_bakes_as_the_plain_import(clean_scene, mods):
    """A Mixamo FBX arrives as centimetre bones under a 0.01 object scale, turned 90 degrees about
    X: the same motion in the world must give the same robot motion."""
    ref = reference(clean_scene, mods)
    scene = fresh(clean_scene)
    source = import_clip(global_scale=100.0, axis_forward='-Y', axis_up='Z')  # bones in centimetres
    source.rotation_euler = (-math.pi / 2, 0.0, math.pi)
    source.scale = (0.01, 0.01, 0.01)
    rig = import_robot()
    pick(scene, source, rig, (1, 90))
    assert bpy.ops.robot_retarget.bake() == {'FINISHED'}
    same_bake(ref, baked(mods, rig), q_tol=3e-4, root_tol=1e-5)  # float32 keys and bone data


def test_a_source_parented_to_a_turned_empty_gives_the_same_joint_motion(clean_scene, mods):
    ref = reference(clean_scene, mods)
    scene = fresh(clean_scene)
    source = import_clip()
    holder = bpy.data.objects.new("Holder", None)
    scene.collection.objects.link(holder)
    holder.location, holder.rotation_euler = (2.0, 1.0, 0.0), (0.0, 0.0, math.radians(30))
    source.parent = holder
    rig = import_robot()
    pick(scene, source, rig, (1, 90))
    assert bpy.ops.robot_retarget.bake() == {'FINISHED'}
    f0, r0, q0, rep0 = ref
    f1, r1, q1, rep1 = baked(mods, rig)
    np.testing.assert_allclose(q1, q0, rtol=0, atol=1e-5)
    turn = np.array([[math.cos(math.radians(30)), -math.sin(math.radians(30))],
                     [math.sin(math.radians(30)), math.cos(math.radians(30))]])
    # the root's travel on the floor, turned with the holder: the root bone stands upright, its
    # location channels are the world's X, Z and -Y
    path0, path1 = ((np.column_stack([r[:, 0], -r[:, 2]]) - [r[0, 0], -r[0, 2]]) for r in (r0, r1))
    np.testing.assert_allclose(r1[:, 1], r0[:, 1], rtol=0, atol=1e-5)  # height
    np.testing.assert_allclose(path1, path0 @ turn.T, rtol=0, atol=1e-5)


def test_non_ascii_bone_names_bake_and_save_as_preset(clean_scene, mods, tmp_path):
    ref = reference(clean_scene, mods)
    scene = fresh(clean_scene)
    source = import_clip()
    for bone in source.data.bones:
        bone.name = "骨" + bone.name + "ä"  # Blender renames the action's channels with the bones
    rig = import_robot()
    settings = pick(scene, source, rig, (1, 90))
    assert bpy.ops.robot_retarget.bake() == {'FINISHED'}
    same_bake(ref, baked(mods, rig), q_tol=1e-6, root_tol=1e-6)
    preset = tmp_path / "Übung.json"
    assert bpy.ops.robot_retarget.mapping_save(filepath=str(preset)) == {'FINISHED'}
    bases = [row.source_base for row in settings.chains]
    settings.chains.clear()
    assert bpy.ops.robot_retarget.mapping_load(filepath=str(preset)) == {'FINISHED'}
    assert [row.source_base for row in settings.chains] == bases and "骨LeftHipä" in bases


def test_a_clip_keyed_from_frame_100_bakes_at_its_own_frames(clean_scene, mods):
    ref = reference(clean_scene, mods)
    scene = fresh(clean_scene)
    source = import_clip(frame_start=100)
    rig = import_robot()
    pick(scene, source, rig, (100, 189))
    assert bpy.ops.robot_retarget.bake() == {'FINISHED'}
    got = baked(mods, rig)
    assert np.array_equal(got[0], np.arange(100.0, 190.0))
    same_bake(ref, got, q_tol=1e-6, root_tol=1e-6)


def test_a_robots_own_keyed_action_outlives_the_bake(clean_scene, mods):
    """The robot's hand-keyed action lost its only user to the bake: Blender drops such an action
    when the file is saved. It is kept (a fake user) and the bake is a new action."""
    source, rig = import_clip(), import_robot()
    pick(clean_scene, source, rig, (1, 30))
    rig.pose.bones[1].keyframe_insert("rotation_euler", frame=1)
    own = rig.animation_data.action
    name = own.name
    assert not own.use_fake_user
    assert bpy.ops.robot_retarget.bake() == {'FINISHED'}
    assert rig.animation_data.action.name != name
    assert bpy.data.actions[name].use_fake_user and bpy.data.actions[name].users == 1


def test_a_renamed_robot_rig_bakes_and_a_renamed_bone_is_named(clean_scene, mods):
    source, rig = import_clip(), import_robot()
    rig.name, rig.data.name = "Mein Roboter", "Gerüst"
    pick(clean_scene, source, rig, (1, 30))
    assert bpy.ops.robot_retarget.bake() == {'FINISHED'}
    assert rig.animation_data.action.name.startswith("Mein Roboter|")
    actions = set(bpy.data.actions)
    knee = rig.data.bones["left_knee_link"]
    knee.name = "Knie links"  # the bake keyed 'left_knee_link' in vain: the knee never moved
    for op in (bpy.ops.robot_retarget.bake, bpy.ops.robot_retarget.auto_map, bpy.ops.robot_retarget.check_balance):
        with pytest.raises(RuntimeError, match="bone 'left_knee_link' .*renamed to 'Knie links'; rename it back"):
            op()
    assert set(bpy.data.actions) == actions  # nothing half-written
    knee.name = "left_knee_link"
    assert bpy.ops.robot_retarget.bake() == {'FINISHED'}


def test_a_source_unlinked_from_the_scene_is_named(clean_scene, mods):
    """An armature in no collection of the scene is not evaluated: the bake read one still pose on
    every frame and said nothing."""
    source, rig = import_clip(), import_robot()
    pick(clean_scene, source, rig, (1, 30))
    clean_scene.collection.objects.unlink(source)
    for op in (bpy.ops.robot_retarget.bake, bpy.ops.robot_retarget.auto_map, bpy.ops.robot_retarget.detect_contacts):
        with pytest.raises(RuntimeError, match=f"armature '{source.name}' is not evaluated"):
            op()
    assert rig.animation_data is None or rig.animation_data.action is None
    clean_scene.collection.objects.link(source)
    assert bpy.ops.robot_retarget.bake() == {'FINISHED'}


def test_balance_and_gait_are_undone_one_step_each(clean_scene, mods):
    """Check Balance stores its readout on the action and had no undo step: an undo after it
    took back the step before (the bake) as well."""
    source, rig = import_clip(), import_robot()
    pick(clean_scene, source, rig, (1, 120))
    rig_name = rig.name
    bpy.ops.ed.undo_push(message="set up")
    assert bpy.ops.robot_retarget.bake('EXEC_DEFAULT', True) == {'FINISHED'}
    baked_name = rig.animation_data.action.name
    assert bpy.ops.robot_retarget.check_balance('EXEC_DEFAULT', True) == {'FINISHED'}
    assert "robot_retarget_balance" in rig.animation_data.action
    assert bpy.ops.robot_retarget.generate_gait('EXEC_DEFAULT', True, period_ms=10.0) == {'FINISHED'}
    gait_name = bpy.data.objects[rig_name].animation_data.action.name
    assert gait_name != baked_name

    assert bpy.ops.ed.undo() == {'FINISHED'}  # the gait
    rig = bpy.data.objects[rig_name]
    assert gait_name not in bpy.data.actions and rig.animation_data.action.name == baked_name
    assert "robot_retarget_balance" in rig.animation_data.action
    assert bpy.ops.ed.undo() == {'FINISHED'}  # the balance readout, the bake kept
    rig = bpy.data.objects[rig_name]
    assert rig.animation_data.action.name == baked_name
    assert "robot_retarget_balance" not in rig.animation_data.action


def test_an_fbx_with_blenders_leaf_bones_maps_and_bakes_as_the_bvh(clean_scene, mods, tmp_path):
    """Blender's FBX exporter adds a leaf bone at every limb's end (on by default), as long as the
    bone before it: the head's leaf then reached further from the chest than the hanging arms, and
    auto-map took the neck for an arm and the right arm for the head."""
    ref = reference(clean_scene, mods)
    source = next(o for o in bpy.data.objects if o.type == 'ARMATURE' and not o.get("urdf_path"))
    bvh_chains = {c.name: (c.source_base, c.source_tips) for c in clean_scene.robot_retarget.chains}
    path = tmp_path / "walk.fbx"
    bpy.ops.object.select_all(action='DESELECT')
    source.select_set(True)
    assert bpy.ops.export_scene.fbx(filepath=str(path), use_selection=True, add_leaf_bones=True,
                                    bake_anim=True) == {'FINISHED'}
    scene = fresh(clean_scene)
    scene.render.fps, scene.render.fps_base = 120, 1.0  # the walk's rate (importing the FBX does not set it)
    before = set(bpy.data.objects)
    assert bpy.ops.import_scene.fbx(filepath=str(path)) == {'FINISHED'}
    fbx = next(o for o in bpy.data.objects if o not in before and o.type == 'ARMATURE')
    assert any(b.name.endswith("_end") for b in fbx.data.bones)
    rig = import_robot()
    settings = pick(scene, fbx, rig, (1, 90))
    assert {c.name: (c.source_base, c.source_tips) for c in settings.chains} == bvh_chains
    assert bpy.ops.robot_retarget.bake() == {'FINISHED'}
    f1, r1, q1, rep1 = baked(mods, rig)
    assert len(f1) == len(ref[0])
    assert rep1["automap_confidence"] == 1.0
    assert abs(rep1["limb_direction_error_deg"] - ref[3]["limb_direction_error_deg"]) < 0.05
