"""operators/anim_io.py against the real bpy module (no mocks)."""
from __future__ import annotations

import importlib

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

from bpy_extras import anim_utils  # noqa: E402

BONES = [  # name, parent, head, tail (armature space)
    ("root", None, (0.0, 0.0, 0.0), (0.0, 0.0, 1.0)),
    ("spine", "root", (0.0, 0.0, 1.0), (0.0, 0.2, 2.0)),
    ("arm", "spine", (0.0, 0.2, 2.0), (1.0, 0.2, 2.0)),
    ("leg", "root", (0.3, 0.0, 0.0), (0.3, 0.1, -1.0)),
]


@pytest.fixture
def anim_io(extension):
    return importlib.import_module(f"{extension.__name__}.operators.anim_io")


def make_armature(name="Rig"):
    arm = bpy.data.armatures.new(name)
    obj = bpy.data.objects.new(name, arm)
    bpy.context.scene.collection.objects.link(obj)
    bpy.context.view_layer.objects.active = obj
    bpy.ops.object.mode_set(mode='EDIT')
    for bone, parent, head, tail in BONES:
        eb = arm.edit_bones.new(bone)
        eb.head, eb.tail = head, tail
        if parent:
            eb.parent = arm.edit_bones[parent]
    bpy.ops.object.mode_set(mode='OBJECT')
    for pb in obj.pose.bones:
        pb.rotation_mode = 'XYZ'
    return obj


def rot_channels(bones=("root", "spine", "arm")):
    return [(f'pose.bones["{b}"].rotation_euler', i, b) for b in bones for i in range(3)]


def random_keys(frames, channels, seed=0):
    rng = np.random.default_rng(seed)
    # float32-representable values: Blender stores keys as float32.
    return rng.uniform(-1.0, 1.0, (len(frames), len(channels))).astype(np.float32).astype(np.float64)


def test_new_action_never_replaces(clean_scene, anim_io):
    obj = make_armature()
    channels = rot_channels()[:3]
    frames = np.arange(1.0, 11.0)
    values = random_keys(frames, channels)

    first, slot1 = anim_io.new_action(obj, "Walk")
    anim_io.write_channels(first, slot1, channels, frames, values)
    second, slot2 = anim_io.new_action(obj, "Walk")

    assert second != first and second.name != "Walk"
    assert first.name == "Walk" and bpy.data.actions.get("Walk") == first
    assert obj.animation_data.action == second and obj.animation_data.action_slot == slot2
    got_frames, got = anim_io.read_channels(first, slot1, channels)  # untouched
    assert np.array_equal(got_frames, frames) and np.array_equal(got, values)
    assert not anim_utils.action_get_channelbag_for_slot(second, slot2) or \
        len(anim_utils.action_get_channelbag_for_slot(second, slot2).fcurves) == 0


def test_new_action_replace_reuses_and_clears(clean_scene, anim_io):
    obj = make_armature()
    other = bpy.data.objects.new("Other", None)
    clean_scene.collection.objects.link(other)
    channels = rot_channels()[:3]
    frames = np.arange(1.0, 6.0)
    values = random_keys(frames, channels)

    action, slot = anim_io.new_action(obj, "Take")
    anim_io.write_channels(action, slot, channels, frames, values)
    other_slot = action.slots.new(id_type='OBJECT', name="Other")
    anim_io.write_channels(action, other_slot, [("location", 0, "Object")], frames, values[:, :1])

    again, slot_again = anim_io.new_action(obj, "Take", replace=True)
    assert again == action and slot_again == slot
    assert len(anim_utils.action_get_channelbag_for_slot(action, slot).fcurves) == 0
    # Another slot of the same action keeps its keys.
    assert anim_io.read_channels(action, other_slot, [("location", 0)])[1].shape == (5, 1)


def test_write_read_round_trip(clean_scene, anim_io):
    obj = make_armature()
    channels = rot_channels() + [('pose.bones["leg"].location', 2, "leg")]
    assert len(channels) == 10
    frames = np.arange(500, dtype=np.float64) * 0.5 + 1.0  # sub-frames too
    values = random_keys(frames, channels, seed=1)

    action, slot = anim_io.new_action(obj, "RoundTrip")
    assert anim_io.write_channels(action, slot, channels, frames, values) == 500 * 10
    got_frames, got = anim_io.read_channels(action, slot, channels)
    assert got.shape == (500, 10)
    assert np.array_equal(got_frames, frames)
    assert np.array_equal(got, values)

    # Writing the same channels again replaces their keys.
    anim_io.write_channels(action, slot, channels[:2], frames[:3], values[:3, :2])
    assert np.array_equal(anim_io.read_channels(action, slot, channels[:2])[1], values[:3, :2])


def test_fcurves_live_in_slot_channelbag(clean_scene, anim_io):
    obj = make_armature()
    channels = rot_channels()
    action, slot = anim_io.new_action(obj, "Bag")
    anim_io.write_channels(action, slot, channels, np.arange(1.0, 4.0), np.zeros((3, 9)))

    bag = anim_utils.action_get_channelbag_for_slot(action, slot)
    assert bag is not None and bag.slot == slot
    adt = obj.animation_data
    assigned = (anim_utils.animdata_get_channelbag_for_assigned_slot(adt)  # Blender 5.0+
                if hasattr(anim_utils, "animdata_get_channelbag_for_assigned_slot")
                else anim_utils.action_get_channelbag_for_slot(adt.action, adt.action_slot))
    assert bag == assigned
    assert [(fc.data_path, fc.array_index) for fc in bag.fcurves] == [(p, i) for p, i, _ in channels]
    assert {fc.group.name for fc in bag.fcurves} == {"root", "spine", "arm"}
    assert all(fc.group.name in fc.data_path for fc in bag.fcurves)
    assert slot.target_id_type == 'OBJECT' and slot.name_display == obj.name


def test_groups_without_group_name_argument(clean_scene, anim_io, monkeypatch):
    """The Blender 4.5 path (fcurves.new has no group_name there)."""
    monkeypatch.setattr(anim_io, "_FCURVES_NEW_HAS_GROUP", False)
    obj = make_armature()
    channels = rot_channels()
    action, slot = anim_io.new_action(obj, "Old")
    anim_io.write_channels(action, slot, channels, np.arange(1.0, 4.0), np.ones((3, 9)))
    bag = anim_utils.action_get_channelbag_for_slot(action, slot)
    assert sorted(g.name for g in bag.groups) == ["arm", "root", "spine"]
    assert all(fc.group is not None and fc.group.name in fc.data_path for fc in bag.fcurves)


@pytest.mark.parametrize("mode", ["CONSTANT", "LINEAR", "BEZIER", "SINE", "BACK", "ELASTIC"])
def test_interpolation(clean_scene, anim_io, mode):
    obj = make_armature()
    channels = rot_channels()[:2]
    action, slot = anim_io.new_action(obj, mode)
    values = np.array([[0.0, 1.0], [1.0, 3.0], [2.0, 5.0]])
    anim_io.write_channels(action, slot, channels, np.array([1.0, 11.0, 21.0]), values, interpolation=mode)
    bag = anim_utils.action_get_channelbag_for_slot(action, slot)
    for fc in bag.fcurves:
        assert [kp.interpolation for kp in fc.keyframe_points] == [mode] * 3
    fc = bag.fcurves[0]
    if mode == "CONSTANT":
        assert fc.evaluate(10.9) == pytest.approx(0.0)
    elif mode == "LINEAR":
        assert fc.evaluate(6.0) == pytest.approx(0.5)
    assert fc.evaluate(11.0) == pytest.approx(1.0)


def test_bad_input(clean_scene, anim_io):
    obj = make_armature()
    action, slot = anim_io.new_action(obj, "Bad")
    channels = rot_channels()[:2]
    with pytest.raises(ValueError, match="interpolation"):
        anim_io.write_channels(action, slot, channels, [1.0, 2.0], np.zeros((2, 2)), interpolation="WOBBLY")
    with pytest.raises(ValueError, match="shape"):
        anim_io.write_channels(action, slot, channels, [1.0, 2.0], np.zeros((2, 3)))
    with pytest.raises(ValueError, match="increasing"):
        anim_io.write_channels(action, slot, channels, [2.0, 1.0], np.zeros((2, 2)))
    anim_io.write_channels(action, slot, channels, [1.0, 2.0], np.zeros((2, 2)))
    with pytest.raises(KeyError, match=r'pose\.bones\["nope"\]\.location.* index 1'):
        anim_io.read_channels(action, slot, channels + [('pose.bones["nope"].location', 1, "")])


def test_frame_set_evaluates_written_values(clean_scene, anim_io):
    obj = make_armature()
    channels = rot_channels()
    frames = np.arange(1.0, 31.0)
    values = random_keys(frames, channels, seed=2)
    action, slot = anim_io.new_action(obj, "Eval")
    anim_io.write_channels(action, slot, channels, frames, values)
    for frame in (1, 7, 30):
        clean_scene.frame_set(frame)
        for c, (path, index, bone) in enumerate(channels):
            got = obj.pose.bones[bone].rotation_euler[index]
            assert got == pytest.approx(values[frame - 1, c], abs=1e-6), (frame, path, index)


def test_undo_restores_state_before_write(clean_scene, anim_io):
    """Undo works in background bpy (memfile undo; the ops poll true once a step is pushed).

    As with an operator flagged REGISTER|UNDO, a step is pushed after the
    change; undo then returns to the step before it. Python references to
    data-blocks are invalid after undo: everything is looked up again by name.
    """
    obj = make_armature()
    channels = rot_channels()
    frames = np.arange(1.0, 21.0)
    values = random_keys(frames, channels, seed=3)
    first, slot = anim_io.new_action(obj, "Before")
    anim_io.write_channels(first, slot, channels, frames, values)
    bpy.ops.ed.undo_push(message="before retarget")

    action, slot = anim_io.new_action(obj, "Retarget")
    anim_io.write_channels(action, slot, channels, frames, values * 2.0)
    bpy.ops.ed.undo_push(message="retarget")
    assert "Retarget" in bpy.data.actions

    assert bpy.ops.ed.undo() == {'FINISHED'}
    obj = bpy.data.objects["Rig"]
    assert "Retarget" not in bpy.data.actions
    assert obj.animation_data.action.name == "Before"
    restored = obj.animation_data.action
    _, got = anim_io.read_channels(restored, obj.animation_data.action_slot, channels)
    assert np.array_equal(got, values)

    assert bpy.ops.ed.redo() == {'FINISHED'}
    obj = bpy.data.objects["Rig"]
    assert obj.animation_data.action.name == "Retarget"
    _, got = anim_io.read_channels(obj.animation_data.action, obj.animation_data.action_slot, channels)
    assert np.array_equal(got, values * 2.0)


# --------------------------------------------------------------------------
# sample_armature against forward kinematics done here with numpy only

def _euler_xyz(angles):
    x, y, z = angles
    cx, sx, cy, sy, cz, sz = np.cos(x), np.sin(x), np.cos(y), np.sin(y), np.cos(z), np.sin(z)
    rx = np.array([[1, 0, 0], [0, cx, -sx], [0, sx, cx]])
    ry = np.array([[cy, 0, sy], [0, 1, 0], [-sy, 0, cy]])
    rz = np.array([[cz, -sz, 0], [sz, cz, 0], [0, 0, 1]])
    return rz @ ry @ rx  # Blender's 'XYZ' euler: X first, then Y, then Z


def _expected_pose(obj, angles_by_bone, loc_by_bone):
    """World head, tail (B, 3) and root world matrix from rest matrices + keys."""
    mw = np.array(obj.matrix_world)
    pose = {}
    heads, tails = [], []
    for bone in obj.data.bones:
        rest = np.array(bone.matrix_local)
        basis = np.eye(4)
        basis[:3, :3] = _euler_xyz(angles_by_bone.get(bone.name, (0.0, 0.0, 0.0)))
        basis[:3, 3] = loc_by_bone.get(bone.name, (0.0, 0.0, 0.0))
        if bone.parent is None:
            m = rest @ basis
        else:
            m = pose[bone.parent.name] @ np.linalg.inv(np.array(bone.parent.matrix_local)) @ rest @ basis
        pose[bone.name] = m
        heads.append((mw @ m @ [0, 0, 0, 1])[:3])
        tails.append((mw @ m @ [0, bone.length, 0, 1])[:3])
    return np.array(heads), np.array(tails), mw @ pose[obj.data.bones[0].name]


def test_sample_armature_matches_forward_kinematics(clean_scene, anim_io):
    obj = make_armature()
    obj.location = (1.0, -2.0, 0.5)
    obj.rotation_euler = (0.3, 0.0, 1.2)
    obj.scale = (2.0, 2.0, 2.0)
    clean_scene.render.fps, clean_scene.render.fps_base = 30, 1.001
    channels = rot_channels() + [('pose.bones["root"].location', i, "root") for i in range(3)]
    frames = np.arange(1.0, 41.0)
    values = random_keys(frames, channels, seed=4) * 0.8
    action, slot = anim_io.new_action(obj, "Sampled")
    anim_io.write_channels(action, slot, channels, frames, values)
    clean_scene.frame_set(17)

    sample_frames = [1, 5, 12.5, 40]
    motion = anim_io.sample_armature(obj, sample_frames)

    assert clean_scene.frame_current == 17  # restored
    assert motion.name == "Rig" and motion.fps == pytest.approx(30 / 1.001)
    assert motion.bone_names == [b[0] for b in BONES]
    assert list(motion.parents) == [-1, 0, 1, 0]
    assert motion.heads.shape == motion.tails.shape == (4, 4, 3)
    assert motion.root_rotation.shape == (4, 3, 3)

    for k, frame in enumerate(sample_frames):
        lo = int(np.floor(frame)) - 1
        hi = min(lo + 1, len(frames) - 1)
        row = values[lo] + (frame - np.floor(frame)) * (values[hi] - values[lo])  # LINEAR keys
        angles = {b: row[3 * i:3 * i + 3] for i, b in enumerate(("root", "spine", "arm"))}
        heads, tails, root = _expected_pose(obj, angles, {"root": row[9:12]})
        np.testing.assert_allclose(motion.heads[k], heads, atol=1e-4)
        np.testing.assert_allclose(motion.tails[k], tails, atol=1e-4)
        expected_rot = root[:3, :3] / 2.0  # the object's uniform scale 2
        np.testing.assert_allclose(motion.root_rotation[k], expected_rot, atol=1e-4)
        np.testing.assert_allclose(motion.root_rotation[k] @ motion.root_rotation[k].T, np.eye(3), atol=1e-9)

    rest_heads, rest_tails, rest_root = _expected_pose(obj, {}, {})
    np.testing.assert_allclose(motion.rest_heads, rest_heads, atol=1e-5)
    np.testing.assert_allclose(motion.rest_tails, rest_tails, atol=1e-5)
    np.testing.assert_allclose(motion.rest_root_rotation, rest_root[:3, :3] / 2.0, atol=1e-5)

    # The pose bones Blender evaluated agree at the last sampled frame too.
    clean_scene.frame_set(40)
    mw = np.array(obj.matrix_world)
    blender_heads = np.array([(mw @ [*pb.head, 1.0])[:3] for pb in obj.pose.bones])
    np.testing.assert_allclose(motion.heads[-1], blender_heads, atol=1e-5)
