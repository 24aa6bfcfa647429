"""Auto-map and Bake (operators/retarget.py) in the real bpy module, on real clips and robots.

The flow is the one a user clicks through: File > Import > Motion Capture
(.bvh) for the clip, File > Import > URDF Robot for the robot, pick both in
the Robot tab, Auto-Map Chains, Bake Robot Action. Clips are imported with
update_scene_fps=True, so the scene runs at the clip's 120 Hz (the bake uses
the scene's frame rate). Most tests bake the scene range 1-120 to stay fast;
one bakes the whole walk.

Background bpy notes (bpy 5.0.1, checked here):
- An operator that reports an ERROR raises RuntimeError("Error: <message>")
  from the bpy.ops call instead of returning {'CANCELLED'}.
- Undo works (memfile undo) once a first step was pushed with
  bpy.ops.ed.undo_push(); operators only push their own step when called as
  bpy.ops.x.y('EXEC_DEFAULT', True, ...). After undo/redo every Python
  reference to Blender data is stale: look objects and actions up again by
  name. Undo restores Blender data only: files an operator wrote (mapping
  presets) stay on disk.
"""
from __future__ import annotations

import dataclasses
import importlib
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

from bpy_extras import anim_utils  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
WALK = ROOT / "data" / "motion" / "cmu_131_01_walk_m.bvh"
HOP = ROOT / "tests" / "data" / "motion" / "cmu_131_03_hop.bvh"
G1 = ROOT / "data" / "robots" / "g1" / "unitree_g1_29dof.urdf"
H1 = ROOT / "tests" / "data" / "robots" / "unitree_h1_19dof.urdf"
WALK_FRAMES = 995
G1_CHAINS = ["spine", "left_leg", "right_leg", "left_arm", "left_hand", "right_arm", "right_hand"]
Q_TOL = 3e-4     # rad: float32 keys; the sampled clip matches the BVH reader to ~1e-6, which a 3-joint
#                  wrist steering a 5 cm hand segment (weakly determined) turns into up to ~1.3e-4
FK_TOL = 1e-4    # m / matrix entries, float32 pose matrices
LIMIT_TOL = 1e-6  # a float32 key of a value clipped to a limit may round just outside
REPORT = "robot_retarget_report"  # the action's custom property holding the JSON report


@pytest.fixture
def mods(extension):
    name = extension.__name__
    mod = lambda sub: importlib.import_module(f"{name}.{sub}")  # noqa: E731
    return {
        "op": mod("operators.retarget"),
        "props": mod("props"),
        "anim_io": mod("operators.anim_io"),
        "rig": mod("core.model.rig"),
        "bvh": mod("core.motion.bvh"),
        "retarget": mod("core.retarget.pipeline"),
        "kin": mod("core.model.kinematics"),
        "urdf": mod("core.model.urdf"),
        "tf": mod("core.model.transforms"),
    }


# ------------------------------------------------------------------ helpers ---

def import_clip(path: Path) -> bpy.types.Object:
    before = set(bpy.data.objects)
    result = bpy.ops.import_anim.bvh(filepath=str(path), update_scene_fps=True,
                                     update_scene_duration=True)
    assert result == {'FINISHED'}
    new = [o for o in bpy.data.objects if o not in before and o.type == 'ARMATURE']
    assert len(new) == 1
    return new[0]


def import_robot(path: Path, name: str = "") -> bpy.types.Object:
    before = set(bpy.data.objects)
    result = bpy.ops.robot_retarget.import_urdf(filepath=str(path), import_meshes=False, name=name)
    assert result == {'FINISHED'}
    new = [o for o in bpy.data.objects if o not in before and o.type == 'ARMATURE']
    assert len(new) == 1
    return new[0]


def setup(scene, clip=WALK, robot=G1, frames=(1, 120), auto_map=True):
    """Import both, pick them in the Robot tab, auto-map, bake `frames` (None: the action's range)."""
    source = import_clip(clip)
    rig = import_robot(robot)
    settings = scene.robot_retarget
    settings.source, settings.robot = source, rig
    if auto_map:
        assert bpy.ops.robot_retarget.auto_map() == {'FINISHED'}
    if frames is not None:
        scene.frame_start, scene.frame_end = frames
        settings.use_scene_range = True
    return settings, source, rig


def bake() -> None:
    assert bpy.ops.robot_retarget.bake() == {'FINISHED'}


def core_model(mods, path: Path):
    tree = mods["kin"].KinematicTree(mods["urdf"].parse_urdf(path))
    return tree, mods["rig"].rig_layout(tree)


def root_channels(layout) -> list[tuple[str, int]]:
    root = layout.root.name
    return ([(f'pose.bones["{root}"].location', i) for i in range(3)]
            + [(f'pose.bones["{root}"].rotation_quaternion', i) for i in range(4)])


def joint_channels(layout) -> list[tuple[str, int]]:
    return [(f'pose.bones["{bone}"].{prop}', index) for bone, prop, index in layout.joint_channels]


def keys(mods, action, slot, layout):
    """(frames, root (F, 7) location+wxyz, q (F, n)) as baked into `action`."""
    read = mods["anim_io"].read_channels
    frames, root = read(action, slot, root_channels(layout))
    joint_frames, q = read(action, slot, joint_channels(layout))
    assert np.array_equal(frames, joint_frames)
    return frames, root, q


def robot_keys(mods, rig, layout):
    adt = rig.animation_data
    return keys(mods, adt.action, adt.action_slot, layout)


def report_of(mods, action) -> dict:
    assert mods["op"].REPORT_PROPERTY == REPORT
    return json.loads(action[mods["op"].REPORT_PROPERTY])


def bvh_motion(mods, path: Path, first: int, last: int):
    """The clip read by core.motion.bvh, Blender frames first..last (BVH frame f = Blender f + 1)."""
    motion = mods["bvh"].load_bvh(path).to_source_motion()
    keep = slice(first - 1, last)
    return dataclasses.replace(motion, heads=motion.heads[keep], tails=motion.tails[keep],
                               root_rotation=motion.root_rotation[keep])


def chain_joints(tree, row) -> set[str]:
    """Joints moved by a mapping row: the movable joints along its robot paths."""
    out = set()
    for tip in row.robot_tips.split(","):
        for link in tree.path(row.robot_base, tip.strip()):
            if tree.qindex[link] >= 0:
                out.add(tree.joint_names[tree.qindex[link]])
    return out


def source_keys(source) -> np.ndarray:
    adt = source.animation_data
    bag = anim_utils.action_get_channelbag_for_slot(adt.action, adt.action_slot)
    out = []
    for fc in bag.fcurves:
        co = np.empty(2 * len(fc.keyframe_points), dtype=np.float32)
        fc.keyframe_points.foreach_get("co", co)
        out.append(co)
    return np.concatenate(out)


# ------------------------------------------------------------------ the flow ---

def test_ui_flow_bakes_the_whole_walk(clean_scene, mods):
    """Import, pick, auto-map, bake with the default range (the source action's, frames 1-995)."""
    scene = clean_scene
    settings, source, rig = setup(scene, frames=None, auto_map=False)
    assert scene.render.fps / scene.render.fps_base == pytest.approx(120.0048, abs=1e-3)

    assert len(settings.chains) == 0
    assert bpy.ops.robot_retarget.auto_map() == {'FINISHED'}
    rows = {row.name: row for row in settings.chains}
    assert list(rows) == G1_CHAINS
    assert all(row.enabled for row in settings.chains)
    assert (rows["spine"].role, rows["left_leg"].role, rows["right_arm"].role) == ("SPINE", "LEG", "ARM")
    assert (rows["left_leg"].side, rows["right_arm"].side, rows["spine"].side) == ("LEFT", "RIGHT", "NONE")
    assert rows["left_leg"].source_base == "LeftHip" and rows["left_leg"].robot_base == "left_hip_pitch_link"
    assert rows["right_arm"].source_base == "RightShoulder"
    assert rows["right_arm"].robot_tips == "right_wrist_roll_link"

    source_action = source.animation_data.action
    source_before = source_keys(source)
    scene.frame_set(37)
    assert not settings.use_scene_range
    bake()

    tree, layout = core_model(mods, G1)
    action = rig.animation_data.action
    assert action is not None and action != source_action
    assert action.name == f"{rig.name}|{source_action.name}"
    assert action.use_fake_user  # kept even when unassigned later
    assert source.animation_data.action == source_action  # the source keeps its action...
    assert np.array_equal(source_keys(source), source_before)  # ...unchanged
    assert scene.frame_current == 37

    # Keys on every frame of the clip, for the root pose and every joint channel; nothing else.
    bag = anim_utils.action_get_channelbag_for_slot(action, rig.animation_data.action_slot)
    assert sorted((fc.data_path, fc.array_index) for fc in bag.fcurves) == sorted(
        root_channels(layout) + joint_channels(layout))
    assert len(bag.fcurves) == 7 + 29
    frames, root, q = robot_keys(mods, rig, layout)
    assert np.array_equal(frames, np.arange(1.0, WALK_FRAMES + 1))
    assert q.shape == (WALK_FRAMES, 29) and np.all(np.isfinite(q)) and np.all(np.isfinite(root))
    assert np.all(np.ptp(q, axis=0) > 0.0)  # every joint of the walking robot moves
    assert np.all(q >= tree.lower - LIMIT_TOL) and np.all(q <= tree.upper + LIMIT_TOL)
    assert np.allclose(np.linalg.norm(root[:, 3:], axis=1), 1.0, atol=1e-6)
    root_pos, _ = mods["rig"].bone_to_root_pose(layout, root[:, :3], root[:, 3:])
    travelled = np.linalg.norm(root_pos[-1, :2] - root_pos[0, :2])
    assert 1.0 < travelled < 2.6  # the robot walks like the clip's 2.6 m, scaled to its legs

    report = report_of(mods, action)
    assert report["frames"] == WALK_FRAMES
    assert report["limit_violations"] == 0
    assert report["source"] == source.name and report["robot"] == "g1_29dof_rev_1_0"
    assert sorted(c["name"] for c in report["chains"]) == sorted(G1_CHAINS)
    assert report["jerk_after"] < report["jerk_before"]


def test_keys_equal_the_core_retarget(clean_scene, mods):
    """Baking in Blender = core retarget of the same frames read from the BVH file."""
    settings, source, rig = setup(clean_scene, frames=(1, 120))
    settings.plant_feet = False  # the chain-shape bake alone (planting: tests/blender/test_contacts_op.py)
    bake()
    tree, layout = core_model(mods, G1)
    frames, root, q = robot_keys(mods, rig, layout)
    assert np.array_equal(frames, np.arange(1.0, 121.0))

    mapping = mods["props"].mapping_from_settings(settings)
    result = mods["retarget"].retarget(bvh_motion(mods, WALK, 1, 120), tree, mapping)
    assert result.q.shape == q.shape == (120, 29)
    np.testing.assert_allclose(q, result.q, rtol=0, atol=Q_TOL)
    location, quaternion = mods["rig"].root_pose_to_bone(layout, result.root_position, result.root_rotation)
    np.testing.assert_allclose(root[:, :3], location, rtol=0, atol=Q_TOL)
    np.testing.assert_allclose(root[:, 3:], quaternion, rtol=0, atol=Q_TOL)
    report = report_of(mods, rig.animation_data.action)
    assert report["limit_violations"] == result.report["limit_violations"] == 0
    assert report["frames"] == 120

    # Feet on the ground: over the baked frames the lowest point of the feet's geometry is at z = 0.
    root_pos, root_rot = mods["rig"].bone_to_root_pose(layout, root[:, :3], root[:, 3:])
    root_world = np.broadcast_to(np.eye(4), (len(q), 4, 4)).copy()
    root_world[:, :3, :3], root_world[:, :3, 3] = root_rot, root_pos
    world = tree.forward(q, root=root_world)
    geometry = importlib.import_module(mods["retarget"].__name__.replace("retarget.pipeline", "feet.geometry"))
    lowest = []
    for name in ("left_leg", "right_leg"):
        link = tree.link_index(settings.chains[name].robot_tips)
        foot = geometry.body_points(tree, link, geometry.subtree_links(tree, link))
        lowest.append(foot.lowest(world[:, link]))
    assert np.min(lowest) == pytest.approx(0.0, abs=1e-4)


def test_baked_action_drives_the_rig(clean_scene, mods):
    """Played back, the rig's pose bones are the URDF forward kinematics of the baked q."""
    settings, source, rig = setup(clean_scene, frames=(1, 120))
    bake()
    tree, layout = core_model(mods, G1)
    frames, root, q = robot_keys(mods, rig, layout)
    root_pos, root_rot = mods["rig"].bone_to_root_pose(layout, root[:, :3], root[:, 3:])
    mw = np.array(rig.matrix_world)
    for frame in (1, 45, 120):
        clean_scene.frame_set(frame)
        k = frame - 1
        # every joint's evaluated channel is its key and inside the URDF limits
        for col, (bone, prop, index) in enumerate(layout.joint_channels):
            pb = rig.pose.bones[bone]
            value = getattr(pb, prop)[index]
            assert value == pytest.approx(q[k, col], abs=1e-6), (frame, bone)
            assert pb["urdf_lower"] - LIMIT_TOL <= value <= pb["urdf_upper"] + LIMIT_TOL, (frame, bone)
        expected = tree.forward(q[k][None], root=mods["tf"].make_transform(root_rot[k], root_pos[k]))[0]
        for bone in layout.bones:
            got = mw @ np.array(rig.pose.bones[bone.name].matrix)
            b4 = np.eye(4)
            b4[:3, :3] = bone.axis_change
            assert np.abs(got - expected[bone.link] @ b4).max() < FK_TOL, (frame, bone.name)


def test_bake_twice_keeps_the_first_action(clean_scene, mods):
    settings, source, rig = setup(clean_scene, frames=(1, 60))
    _, layout = core_model(mods, G1)
    bake()
    first = rig.animation_data.action
    first_slot = rig.animation_data.action_slot
    name = first.name
    _, root1, q1 = keys(mods, first, first_slot, layout)

    bake()
    second = rig.animation_data.action
    assert second != first and second.name == f"{name}.001"
    assert bpy.data.actions[name] == first and first.use_fake_user  # still there, kept
    _, root_again, q_again = keys(mods, first, first_slot, layout)
    assert np.array_equal(q_again, q1) and np.array_equal(root_again, root1)
    _, root2, q2 = robot_keys(mods, rig, layout)
    np.testing.assert_allclose(q2, q1, rtol=0, atol=1e-6)  # same input, same bake
    np.testing.assert_allclose(root2, root1, rtol=0, atol=1e-6)
    assert REPORT in first and REPORT in second


def test_chosen_action_name_is_not_modified_without_replace(clean_scene, mods):
    settings, source, rig = setup(clean_scene, frames=(1, 60))
    settings.plant_feet = False  # compares a 30-frame with a 60-frame bake: chain shapes only
    settings.avoid_self_collision = False  # (a room made near a cut end moves with it: tests/core/test_start_invariance.py)
    _, layout = core_model(mods, G1)
    settings.action_name = "G1 walk"
    bake()
    take = rig.animation_data.action
    assert take.name == "G1 walk"
    take_slot = rig.animation_data.action_slot
    frames_before, root_before, q_before = keys(mods, take, take_slot, layout)
    report_before = take[REPORT]

    clean_scene.frame_end = 30  # a different bake under the same chosen name
    assert not settings.replace_action
    bake()
    new = rig.animation_data.action
    assert new != take and new.name == "G1 walk.001"
    assert len(robot_keys(mods, rig, layout)[0]) == 30
    frames, root, q = keys(mods, take, take_slot, layout)  # the existing action: untouched
    assert np.array_equal(frames, frames_before) and len(frames) == 60
    assert np.array_equal(q, q_before) and np.array_equal(root, root_before)
    assert take[REPORT] == report_before

    # With Replace Existing, that action is reused and holds only the new keys.
    settings.replace_action = True
    count = len(bpy.data.actions)
    bake()
    assert rig.animation_data.action == take and len(bpy.data.actions) == count
    frames, _, q = keys(mods, take, take_slot, layout)
    assert np.array_equal(frames, np.arange(1.0, 31.0))
    np.testing.assert_allclose(q, q_before[:30], rtol=0, atol=0.05)  # same clip, shorter range
    assert report_of(mods, take)["frames"] == 30


def test_undo_restores_the_previous_action(clean_scene, mods):
    """Undo of a bake gives the robot back the action it had; redo brings the bake back."""
    settings, source, rig = setup(clean_scene, frames=(1, 40))
    _, layout = core_model(mods, G1)
    rig_name, source_name = rig.name, source.name
    bpy.ops.ed.undo_push(message="setup")

    assert bpy.ops.robot_retarget.bake('EXEC_DEFAULT', True) == {'FINISHED'}
    first = rig.animation_data.action.name
    _, _, q_first = robot_keys(mods, rig, layout)
    settings.action_name = "second take"
    assert bpy.ops.robot_retarget.bake('EXEC_DEFAULT', True) == {'FINISHED'}
    assert rig.animation_data.action.name == "second take"

    assert bpy.ops.ed.undo() == {'FINISHED'}
    rig = bpy.data.objects[rig_name]  # references are stale after undo
    assert rig.animation_data.action.name == first
    assert "second take" not in bpy.data.actions
    _, _, q = robot_keys(mods, rig, layout)
    assert np.array_equal(q, q_first)
    assert report_of(mods, rig.animation_data.action)["frames"] == 40
    assert bpy.context.scene.robot_retarget.robot == rig
    assert bpy.context.scene.robot_retarget.source == bpy.data.objects[source_name]

    assert bpy.ops.ed.undo() == {'FINISHED'}  # back to before any bake
    rig = bpy.data.objects[rig_name]
    assert rig.animation_data is None or rig.animation_data.action is None
    assert first not in bpy.data.actions

    assert bpy.ops.ed.redo() == {'FINISHED'}
    assert bpy.ops.ed.redo() == {'FINISHED'}
    rig = bpy.data.objects[rig_name]
    assert rig.animation_data.action.name == "second take"
    assert first in bpy.data.actions


# ------------------------------------------------------------------ errors ---

def test_missing_source_or_robot_is_named(clean_scene, mods):
    settings, source, rig = setup(clean_scene, frames=(1, 30), auto_map=False)
    settings.source = None
    with pytest.raises(RuntimeError, match="pick a source armature"):
        bpy.ops.robot_retarget.bake()
    with pytest.raises(RuntimeError, match="pick a source armature"):
        bpy.ops.robot_retarget.auto_map()
    settings.source, settings.robot = source, None
    with pytest.raises(RuntimeError, match="pick a robot rig"):
        bpy.ops.robot_retarget.bake()
    assert rig.animation_data is None  # nothing baked
    assert len(settings.chains) == 0
    assert list(bpy.data.actions) == [source.animation_data.action]


def test_source_without_action_is_named(clean_scene, mods):
    settings, source, rig = setup(clean_scene, frames=None)
    source.animation_data.action = None
    with pytest.raises(RuntimeError, match=f"source '{source.name}' has no action"):
        bpy.ops.robot_retarget.bake()
    assert rig.animation_data is None


def test_deleted_urdf_is_named(clean_scene, mods, tmp_path):
    urdf = tmp_path / "robots" / "g1.urdf"
    urdf.parent.mkdir()
    shutil.copy(G1, urdf)
    source = import_clip(WALK)
    rig = import_robot(urdf, name="G1 copy")
    settings = clean_scene.robot_retarget
    settings.source, settings.robot = source, rig
    urdf.unlink()
    for op in (bpy.ops.robot_retarget.auto_map, bpy.ops.robot_retarget.bake):
        with pytest.raises(RuntimeError) as info:
            op()
        message = str(info.value)
        assert str(urdf) in message and "G1 copy" in message, message
    assert rig.animation_data is None


def test_empty_chain_list_auto_maps_before_baking(clean_scene, mods):
    settings, source, rig = setup(clean_scene, frames=(1, 30), auto_map=False)
    assert len(settings.chains) == 0
    bake()
    assert [row.name for row in settings.chains] == G1_CHAINS
    _, layout = core_model(mods, G1)
    frames, _, q = robot_keys(mods, rig, layout)
    assert np.array_equal(frames, np.arange(1.0, 31.0)) and q.shape == (30, 29)
    assert report_of(mods, rig.animation_data.action)["limit_violations"] == 0


def test_auto_map_on_bake_keeps_the_users_options(clean_scene, mods):
    settings, source, rig = setup(clean_scene, frames=(1, 30), auto_map=False)
    settings.root_mode, settings.filter, settings.iterations = "in_place", "moving_average", 12
    bake()
    assert len(settings.chains) == len(G1_CHAINS)
    assert (settings.root_mode, settings.filter, settings.iterations) == ("in_place", "moving_average", 12)


def test_unfinished_chain_row_is_named(clean_scene, mods):
    settings, source, rig = setup(clean_scene, frames=(1, 30))
    assert bpy.ops.robot_retarget.chain_add() == {'FINISHED'}
    added = settings.chains[settings.active_chain]
    assert settings.active_chain == len(G1_CHAINS) and added.name == f"chain_{len(G1_CHAINS) + 1}"
    with pytest.raises(RuntimeError, match=f"chain '{added.name}'"):
        bpy.ops.robot_retarget.bake()
    assert rig.animation_data is None
    assert bpy.ops.robot_retarget.chain_remove() == {'FINISHED'}
    assert [row.name for row in settings.chains] == G1_CHAINS
    bake()


def test_row_order_does_not_change_the_bake(clean_scene, mods):
    settings, source, rig = setup(clean_scene, frames=(1, 40))
    _, layout = core_model(mods, G1)
    bake()
    _, root1, q1 = robot_keys(mods, rig, layout)

    settings.active_chain = 0
    assert bpy.ops.robot_retarget.chain_move(direction='UP') == {'CANCELLED'}  # already first
    assert bpy.ops.robot_retarget.chain_move(direction='DOWN') == {'FINISHED'}
    assert settings.active_chain == 1
    settings.active_chain = len(settings.chains) - 1
    assert bpy.ops.robot_retarget.chain_move(direction='DOWN') == {'CANCELLED'}  # already last
    assert bpy.ops.robot_retarget.chain_move(direction='UP') == {'FINISHED'}
    order = [row.name for row in settings.chains]
    assert order == ["left_leg", "spine", "right_leg", "left_arm", "left_hand", "right_hand", "right_arm"]
    bake()
    _, root2, q2 = robot_keys(mods, rig, layout)
    np.testing.assert_allclose(q2, q1, rtol=0, atol=1e-6)
    np.testing.assert_allclose(root2, root1, rtol=0, atol=1e-6)


# --------------------------------------------------------- mapping presets ---

def _row_values(row) -> dict:
    out = {}
    for prop in row.bl_rna.properties:
        if prop.identifier == "rna_type":
            continue
        value = getattr(row, prop.identifier)
        out[prop.identifier] = tuple(value) if prop.type == 'FLOAT' and prop.array_length else value
    return out


def _options(settings) -> dict:
    return {name: getattr(settings, name) for name in (
        "source_root", "robot_root", "objective", "iterations", "smoothness", "rest_prior",
        "root_mode", "ground", "filter", "cutoff_hz", "window")}


def test_save_preset_refuses_to_overwrite(clean_scene, mods, tmp_path):
    settings, source, rig = setup(clean_scene, frames=None)
    path = tmp_path / "g1_walk.json"
    assert bpy.ops.robot_retarget.mapping_save(filepath=str(path)) == {'FINISHED'}
    saved = json.loads(path.read_text(encoding="utf-8"))
    assert [c["name"] for c in saved["chains"]] == G1_CHAINS
    before = path.read_bytes()
    settings.chains["left_arm"].enabled = False
    with pytest.raises(RuntimeError, match="exists"):
        bpy.ops.robot_retarget.mapping_save(filepath=str(path))
    assert path.read_bytes() == before
    assert bpy.ops.robot_retarget.mapping_save(filepath=str(path), overwrite=True) == {'FINISHED'}
    saved = json.loads(path.read_text(encoding="utf-8"))
    assert [c["enabled"] for c in saved["chains"]] == [c != "left_arm" for c in G1_CHAINS]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g1_walk.json"]


def test_load_bad_preset_is_named(clean_scene, mods, tmp_path):
    settings, source, rig = setup(clean_scene, frames=None)
    path = tmp_path / "broken.json"
    path.write_text('{"format": "robot_retarget.mapping",\n "chains": [}\n', encoding="utf-8")
    with pytest.raises(RuntimeError, match="line 2") as info:
        bpy.ops.robot_retarget.mapping_load(filepath=str(path))
    assert str(path) in str(info.value)
    assert [row.name for row in settings.chains] == G1_CHAINS  # the rows are kept


def test_preset_round_trip_into_another_scene(clean_scene, mods, tmp_path):
    settings, source, rig = setup(clean_scene, frames=None)
    settings.smoothness, settings.root_mode, settings.cutoff_hz = 0.05, "in_place", 5.5
    settings.chains["right_arm"].tip_weight = 4.25
    settings.chains["left_hand"].enabled = False
    path = tmp_path / "g1_walk.json"
    assert bpy.ops.robot_retarget.mapping_save(filepath=str(path)) == {'FINISHED'}

    other = bpy.data.scenes.new("Other")
    with bpy.context.temp_override(scene=other):
        assert bpy.ops.robot_retarget.mapping_load(filepath=str(path)) == {'FINISHED'}
    loaded = other.robot_retarget
    assert [_row_values(r) for r in loaded.chains] == [_row_values(r) for r in settings.chains]
    assert _options(loaded) == _options(settings)
    assert loaded.chains["left_hand"].enabled is False
    assert mods["props"].mapping_from_settings(loaded) == mods["props"].mapping_from_settings(settings)


def test_disabled_chain_keeps_its_joints_still(clean_scene, mods):
    settings, source, rig = setup(clean_scene, frames=(1, 120))
    tree, layout = core_model(mods, G1)
    # the left arm's own joints (its tip joint, the wrist roll, is the left hand chain's base)
    arm = chain_joints(tree, settings.chains["left_arm"]) - chain_joints(tree, settings.chains["left_hand"])
    assert arm == {"left_shoulder_pitch_joint", "left_shoulder_roll_joint", "left_shoulder_yaw_joint",
                   "left_elbow_joint"}
    columns = [tree.joint_names.index(j) for j in sorted(arm)]
    bake()
    _, _, q_all = robot_keys(mods, rig, layout)
    assert np.all(np.ptp(q_all[:, columns], axis=0) > 0.01)  # the arm swings in the walk

    settings.chains["left_arm"].enabled = False
    bake()
    _, _, q = robot_keys(mods, rig, layout)
    rest = np.clip(0.0, tree.lower, tree.upper)
    np.testing.assert_allclose(q[:, columns], np.broadcast_to(rest[columns], (120, len(columns))),
                               rtol=0, atol=1e-7)
    names = [c["name"] for c in report_of(mods, rig.animation_data.action)["chains"]]
    assert "left_arm" not in names and "right_arm" in names


def test_disabled_chain_leaves_other_chains_unchanged(clean_scene, mods):
    settings, source, rig = setup(clean_scene, frames=(1, 120))
    tree, layout = core_model(mods, G1)
    left = chain_joints(tree, settings.chains["left_arm"]) | chain_joints(tree, settings.chains["left_hand"])
    others = [i for i, name in enumerate(tree.joint_names) if name not in left]
    assert len(others) == 29 - 7
    bake()
    _, root_all, q_all = robot_keys(mods, rig, layout)
    settings.chains["left_arm"].enabled = False
    bake()
    _, root, q = robot_keys(mods, rig, layout)
    np.testing.assert_allclose(root, root_all, rtol=0, atol=1e-6)
    np.testing.assert_allclose(q[:, others], q_all[:, others], rtol=0, atol=1e-6)


# -------------------------------------------------------------- another robot ---

def test_h1_hop(clean_scene, mods):
    settings, source, rig = setup(clean_scene, clip=HOP, robot=H1, frames=(1, 240))
    assert [row.name for row in settings.chains] == ["spine", "left_leg", "right_leg", "left_arm", "right_arm"]
    bake()
    tree, layout = core_model(mods, H1)
    assert tree.dof == 19
    frames, root, q = robot_keys(mods, rig, layout)
    assert np.array_equal(frames, np.arange(1.0, 241.0)) and q.shape == (240, 19)
    assert np.all(q >= tree.lower - LIMIT_TOL) and np.all(q <= tree.upper + LIMIT_TOL)
    speed = np.abs(np.diff(q, axis=0)) * (clean_scene.render.fps / clean_scene.render.fps_base)
    assert np.all(speed <= tree.velocity * (1 + 1e-6))  # velocity limits hold too
    report = report_of(mods, rig.animation_data.action)
    assert report["limit_violations"] == 0 and report["frames"] == 240
    assert report["max_speed_ratio"] <= 1.0 + 1e-6
    assert report["robot"] == "h1_19dof" and report["source"] == source.name


def test_a_robot_whose_root_faces_plus_y_stands_where_the_g1_does(clean_scene, mods, tmp_path):
    """The G1 with its pelvis frame turned a quarter turn about the vertical (the URDF faces +y,
    not REP 103's +x), baked with the default settings: the root bone carries the URDF's own
    pelvis frame, and every bone stands where the G1's does (before, its joints were up to 1.3
    rad apart: core.retarget.facing)."""
    from scipy.spatial.transform import Rotation

    from tests import robot_variants as RV

    settings, source, g1_rig = setup(clean_scene, frames=(1, 120))
    bake()
    urdf = mods["urdf"]
    turn = Rotation.from_rotvec([0.0, 0.0, np.pi / 2]).as_matrix()
    robot = RV.frames_turned(urdf.parse_urdf(G1), {"pelvis": turn})
    turned = import_robot(RV.write_urdf(robot, tmp_path / "g1_facing_y.urdf"), name="g1_facing_y")
    settings.robot = turned
    assert bpy.ops.robot_retarget.auto_map() == {'FINISHED'}
    bake()
    layouts = [core_model(mods, G1)[1], core_model(mods, tmp_path / "g1_facing_y.urdf")[1]]
    q = [robot_keys(mods, rig, layout)[2] for rig, layout in zip((g1_rig, turned), layouts)]
    np.testing.assert_allclose(q[1], q[0], rtol=0, atol=Q_TOL)
    for frame in (1, 60, 120):
        clean_scene.frame_set(frame)
        for bone in layouts[0].bones:
            heads = [np.array(rig.matrix_world) @ np.array(rig.pose.bones[bone.name].matrix)[:, 3]
                     for rig in (g1_rig, turned)]
            assert np.abs(heads[1] - heads[0]).max() < FK_TOL, (frame, bone.name)
