"""operators/import_urdf.py in the real bpy module (no mocks): the rig IS the robot."""
from __future__ import annotations

import importlib
import shutil
from pathlib import Path

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

from mathutils import Matrix  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
G1 = ROOT / "data" / "robots" / "g1" / "unitree_g1_29dof.urdf"
H1 = ROOT / "tests" / "data" / "robots" / "unitree_h1_19dof.urdf"
PANDA = ROOT / "tests" / "data" / "robots" / "franka_panda.urdf"
TOL = 2e-5  # Blender stores bones and matrices as float32


@pytest.fixture
def mods(extension):
    name = extension.__name__
    return {
        "op": importlib.import_module(f"{name}.operators.import_urdf"),
        "common": importlib.import_module(f"{name}.operators.common"),
        "urdf": importlib.import_module(f"{name}.core.model.urdf"),
        "mesh_paths": importlib.import_module(f"{name}.core.model.mesh_paths"),
        "kin": importlib.import_module(f"{name}.core.model.kinematics"),
        "rig": importlib.import_module(f"{name}.core.model.rig"),
        "meshes": importlib.import_module(f"{name}.core.model.meshes"),
        "tf": importlib.import_module(f"{name}.core.model.transforms"),
    }


def _core(mods, path):
    tree = mods["kin"].KinematicTree(mods["urdf"].parse_urdf(path))
    return tree, mods["rig"].rig_layout(tree)


def _armatures():
    return [o for o in bpy.data.objects if o.type == 'ARMATURE']


def _np(m) -> np.ndarray:
    return np.array([list(row) for row in m])


def _b4(bone) -> np.ndarray:
    out = np.eye(4)
    out[:3, :3] = bone.axis_change
    return out


def _import(path, **kw):
    result = bpy.ops.robot_retarget.import_urdf(filepath=str(path), **kw)
    assert result == {'FINISHED'}
    arms = _armatures()
    assert len(arms) == 1
    return arms[0]


def _set_q(obj, layout, q):
    for (bone, prop, index), value in zip(layout.joint_channels, q):
        getattr(obj.pose.bones[bone], prop)[index] = value


def _random_q(tree, rng):
    lo = np.where(np.isfinite(tree.lower), tree.lower, -np.pi)
    hi = np.where(np.isfinite(tree.upper), tree.upper, np.pi)
    return rng.uniform(lo, hi)


# ------------------------------------------------------------------- G1 ---

def test_g1_rig_structure(clean_scene, mods):
    obj = _import(G1)
    tree, layout = _core(mods, G1)
    robot = tree.robot
    arm = obj.data
    assert obj.type == 'ARMATURE' and len(arm.bones) == 30
    assert obj.users_collection[0].name == robot.name  # its own collection...
    assert obj.users_collection[0].name in clean_scene.collection.children  # ...in the scene
    assert bpy.context.view_layer.objects.active == obj and obj.mode == 'OBJECT'

    # armature-level description of the robot
    assert obj["urdf_robot"] == robot.name == "g1_29dof_rev_1_0"
    assert Path(obj["urdf_path"]) == G1.resolve() and Path(obj["urdf_path"]).is_absolute()
    urdf_order = [j.name for j in robot.joints if j.type in ("revolute", "continuous", "prismatic")]
    assert list(obj["urdf_joint_order"]) == urdf_order == tree.joint_names

    # one free channel per joint, limited as the URDF says
    limited = 0
    for bone in layout.bones:
        pb = obj.pose.bones[bone.name]
        assert tuple(pb.lock_scale) == (True, True, True)
        assert pb["urdf_link"] == bone.link_name
        if bone.kind == "root":
            assert pb.rotation_mode == 'QUATERNION' and pb.parent is None
            assert not any(pb.lock_location) and not any(pb.lock_rotation)
            assert "urdf_joint" not in pb and pb["urdf_joint_type"] == "root"
            continue
        joint = robot.joint(bone.joint)
        assert pb.parent.name == bone.parent and not pb.bone.use_connect
        assert pb.rotation_mode == 'XYZ'
        assert tuple(pb.lock_rotation) == (False, True, True)
        assert tuple(pb.lock_location) == (True, True, True)
        assert pb["urdf_joint"] == joint.name and pb["urdf_joint_type"] == "revolute"
        assert np.allclose(list(pb["urdf_axis"]), joint.axis)
        assert pb["urdf_lower"] == pytest.approx(joint.lower)
        assert pb["urdf_upper"] == pytest.approx(joint.upper)
        assert pb["urdf_velocity"] == pytest.approx(joint.velocity)
        assert pb["urdf_effort"] == pytest.approx(joint.effort)
        cons = [c for c in pb.constraints if c.type == 'LIMIT_ROTATION']
        assert len(cons) == 1 and len(pb.constraints) == 1
        con = cons[0]
        assert con.use_limit_x and not con.use_limit_y and not con.use_limit_z
        assert con.owner_space == 'LOCAL'
        assert con.min_x == pytest.approx(joint.lower, abs=1e-6)
        assert con.max_x == pytest.approx(joint.upper, abs=1e-6)
        limited += 1
    assert limited == 29
    assert list(obj.pose.bones["torso_link"]["urdf_merged_links"]) == [
        "logo_link", "head_link", "imu_in_torso", "d435_link", "mid360_link"]

    # rest bones: head at the link origin, local X = joint axis in the world
    zero = tree.zero_pose()
    for bone in layout.bones:
        rest = _np(arm.bones[bone.name].matrix_local)
        assert np.abs(rest - bone.matrix).max() < TOL, bone.name
        assert arm.bones[bone.name].length == pytest.approx(bone.length, abs=1e-6)
        if bone.kind != "root":
            world_axis = zero[bone.link][:3, :3] @ tree.axes[bone.link]
            assert np.allclose(rest[:3, 0], world_axis, atol=TOL)


def test_g1_pose_matches_forward_kinematics(clean_scene, mods):
    """Setting rotation_euler.x = q on each joint bone reproduces URDF FK."""
    obj = _import(G1, import_meshes=False)
    tree, layout = _core(mods, G1)
    rng = np.random.default_rng(5)
    for _ in range(5):
        q = _random_q(tree, rng)
        _set_q(obj, layout, q)
        bpy.context.view_layer.update()
        frames = tree.forward(q[None])[0]
        for bone in layout.bones:
            got = _np(obj.matrix_world @ obj.pose.bones[bone.name].matrix)
            assert np.abs(got - frames[bone.link] @ _b4(bone)).max() < TOL, bone.name
            link = mods["rig"].link_matrix_from_bone(bone, got)
            assert np.abs(link - frames[bone.link]).max() < TOL


def test_g1_root_pose_and_moved_armature(clean_scene, mods):
    """Root bone channels from root_pose_to_bone place the robot; the object transform composes."""
    obj = _import(G1, import_meshes=False)
    tree, layout = _core(mods, G1)
    tf = mods["tf"]
    obj_world = tf.make_transform(tf.rpy_to_matrix([0.2, -0.4, 1.1]), [1.0, -2.0, 0.5])
    obj.matrix_world = Matrix(obj_world.tolist())
    rng = np.random.default_rng(9)
    root_rot = tf.rpy_to_matrix([0.3, 0.1, -2.5])
    root_pos = np.array([0.4, 0.2, 0.79])
    loc, quat = mods["rig"].root_pose_to_bone(layout, root_pos[None], root_rot[None])
    root_pb = obj.pose.bones[layout.bones[0].name]
    root_pb.location = loc[0]
    root_pb.rotation_quaternion = quat[0]
    q = _random_q(tree, rng)
    _set_q(obj, layout, q)
    bpy.context.view_layer.update()
    frames = tree.forward(q[None], root=tf.make_transform(root_rot, root_pos))[0]
    for bone in layout.bones:
        got = _np(obj.matrix_world @ obj.pose.bones[bone.name].matrix)
        assert np.abs(got - obj_world @ frames[bone.link] @ _b4(bone)).max() < TOL, bone.name
    # and back: the root bone's channels give the root link pose
    pos, rot = mods["rig"].bone_to_root_pose(layout, np.array(root_pb.location)[None],
                                             np.array(root_pb.rotation_quaternion)[None])
    assert np.allclose(pos[0], root_pos, atol=1e-6) and np.allclose(rot[0], root_rot, atol=1e-6)


def test_g1_meshes_on_bones(clean_scene, mods):
    obj = _import(G1)
    tree, layout = _core(mods, G1)
    robot = tree.robot
    children = [o for o in bpy.data.objects if o.parent == obj]
    assert children and all(o.type == 'MESH' and o.parent_type == 'BONE' for o in children)
    n_visuals = sum(len(link.visuals) for link in robot.links.values())
    assert len(children) == n_visuals == 35
    assert all(o.users_collection[0] == obj.users_collection[0] for o in children)

    # pelvis at rest: world bounding box equals the STL's box placed by the URDF
    pelvis = bpy.data.objects["pelvis"]
    assert pelvis.parent_bone == "pelvis"
    geo = robot.links["pelvis"].visuals[0]
    path = mods["mesh_paths"].resolve_mesh_path(geo.filename, G1, ())
    verts, _ = mods["meshes"].load_mesh(path)
    placed = verts @ geo.origin[:3, :3].T + geo.origin[:3, 3]
    corners = np.array([list(pelvis.matrix_world @ Matrix.Translation(c).translation)
                        for c in pelvis.bound_box])
    assert np.allclose(corners.min(0), placed.min(0), atol=1e-5)
    assert np.allclose(corners.max(0), placed.max(0), atol=1e-5)
    assert len(pelvis.data.vertices) == len(verts)

    # every visual sits at its link frame (times its origin) at rest and after posing
    rng = np.random.default_rng(2)
    for q in (np.zeros(tree.dof), _random_q(tree, rng)):
        _set_q(obj, layout, q)
        bpy.context.view_layer.update()
        frames = tree.forward(q[None])[0]
        for child in children:
            link = child["urdf_link"]
            visuals = robot.links[link].visuals
            k = 0 if child.name == link else int(child.name.rsplit("visual", 1)[1])
            want = frames[tree.link_index(link)] @ visuals[k].origin
            assert np.abs(_np(child.matrix_world) - want).max() < TOL, child.name
    # the head and rubber hands are merged: their meshes ride on torso / wrist bones
    assert bpy.data.objects["head_link"].parent_bone == "torso_link"
    assert bpy.data.objects["left_rubber_hand"].parent_bone == "left_wrist_yaw_link"


def test_import_function_and_tree_from_rig(clean_scene, mods, tmp_path):
    op = mods["op"]
    copy = tmp_path / "g1.urdf"
    shutil.copy(G1, copy)
    # a ROS-style package folder elsewhere: package://example-robot-data/robots/...
    pkg = tmp_path / "ws" / "example-robot-data" / "robots" / "g1_description"
    pkg.mkdir(parents=True)
    (pkg / "meshes").symlink_to(G1.parent / "meshes")
    obj, warnings = op.import_urdf(bpy.context, copy, package_roots=[str(tmp_path / "ws")],
                                   name="MyRobot")
    assert obj.name == "MyRobot" and warnings == []  # meshes found through package_roots
    assert len([o for o in bpy.data.objects if o.parent == obj]) == 35
    tree = mods["common"].tree_from_rig(obj)
    assert tree.joint_names == list(obj["urdf_joint_order"]) and tree.dof == 29
    copy.unlink()
    with pytest.raises(mods["urdf"].URDFError) as err:
        mods["common"].tree_from_rig(obj)
    assert "MyRobot" in str(err.value) and str(copy) in str(err.value)
    plain = bpy.data.objects.new("Plain", None)
    with pytest.raises(mods["urdf"].URDFError, match="Plain"):
        mods["common"].tree_from_rig(plain)


def test_no_meshes_option_and_edit_mode_start(clean_scene, mods):
    # start with another armature in edit mode: the import must still work
    other = bpy.data.objects.new("Other", bpy.data.armatures.new("Other"))
    clean_scene.collection.objects.link(other)
    bpy.context.view_layer.objects.active = other
    bpy.ops.object.mode_set(mode='EDIT')
    result = bpy.ops.robot_retarget.import_urdf(filepath=str(G1), import_meshes=False)
    assert result == {'FINISHED'}
    obj = bpy.data.objects["g1_29dof_rev_1_0"]
    assert other.mode == 'OBJECT' and obj.mode == 'OBJECT'
    assert len(obj.data.bones) == 30 and len(other.data.bones) == 0
    assert not [o for o in bpy.data.objects if o.parent == obj]
    assert len(bpy.data.meshes) == 0


# --------------------------------------------------------------- H1, Panda ---

def test_h1_missing_meshes_warn_but_import(clean_scene, mods, capfd):
    obj = _import(H1)
    out = capfd.readouterr()
    assert "Warning:" in out.out + out.err and "could not be loaded" in out.out + out.err
    assert len(obj.data.bones) == 20
    _, warnings = mods["op"].import_urdf(bpy.context, H1)
    assert warnings and all(w.startswith("mesh not found") for w in warnings)
    summary = mods["op"].warning_summary(warnings)
    assert summary.startswith(f"{len(warnings)} meshes could not be loaded")
    # the primitive spheres (foot contacts, hands) are still built and attached
    spheres = [o for o in bpy.data.objects if o.parent == obj]
    assert spheres and all(o.parent_bone in obj.data.bones for o in spheres)
    assert bpy.data.objects["left_foot_sphere_1_link"].parent_bone == "left_ankle_link"


def test_panda_prismatic_and_mimic_driver(clean_scene, mods):
    obj = _import(PANDA)
    tree, layout = _core(mods, PANDA)
    assert len(obj.data.bones) == 10 and list(obj["urdf_joint_order"]) == tree.joint_names
    left = obj.pose.bones["panda_leftfinger"]
    right = obj.pose.bones["panda_rightfinger"]
    assert tuple(left.lock_location) == (False, True, True)
    assert tuple(left.lock_rotation) == (True, True, True)
    con = left.constraints[0]
    assert con.type == 'LIMIT_LOCATION' and con.use_min_x and con.use_max_x
    assert (con.min_x, con.max_x) == pytest.approx((0.0, 0.04))
    assert right["urdf_mimic_joint"] == "panda_finger_joint1"
    assert obj.animation_data and len(obj.animation_data.drivers) == 1
    driver = obj.animation_data.drivers[0].driver
    assert driver.is_valid and driver.is_simple_expression  # runs without Python auto-exec
    rng = np.random.default_rng(4)
    q = _random_q(tree, rng)
    _set_q(obj, layout, q)
    bpy.context.view_layer.update()
    assert right.location[0] == pytest.approx(q[tree.joint_names.index("panda_finger_joint1")])
    frames = tree.forward(q[None])[0]
    for bone in layout.bones:
        got = _np(obj.pose.bones[bone.name].matrix)
        assert np.abs(got - frames[bone.link] @ _b4(bone)).max() < TOL, bone.name


# ------------------------------------------------------------------ errors ---

BROKEN = """<?xml version="1.0"?>
<robot name="broken">
  <link name="base"/>
  <link name="arm"/>
  <joint name="shoulder" type="revolute">
    <parent link="base"/><child link="arm"/>
    <axis xyz="0 0 1"/>
    <limit lower="1.5" upper="-1.5" effort="1" velocity="1"/>
  </joint>
</robot>
"""


def test_malformed_urdf_reports_error_and_creates_nothing(clean_scene, tmp_path):
    path = tmp_path / "broken.urdf"
    path.write_text(BROKEN)
    before = (len(bpy.data.objects), len(bpy.data.armatures), len(bpy.data.collections))
    with pytest.raises(RuntimeError) as err:
        bpy.ops.robot_retarget.import_urdf(filepath=str(path))
    message = str(err.value)
    assert "joint 'shoulder'" in message and "line 8" in message and "broken.urdf" in message
    assert (len(bpy.data.objects), len(bpy.data.armatures), len(bpy.data.collections)) == before
    with pytest.raises(RuntimeError, match="cannot read URDF"):
        bpy.ops.robot_retarget.import_urdf(filepath=str(tmp_path / "missing.urdf"))
    assert len(bpy.data.objects) == before[0]


def test_failure_midway_leaves_nothing_behind(clean_scene, mods, monkeypatch):
    op = mods["op"]
    real = op._new_mesh
    calls = []

    def flaky(*args):  # the third mesh fails after bones and two meshes exist
        calls.append(1)
        if len(calls) == 3:
            raise RuntimeError("simulated failure")
        return real(*args)

    monkeypatch.setattr(op, "_new_mesh", flaky)
    before = {k: len(getattr(bpy.data, k)) for k in ("objects", "meshes", "armatures",
                                                      "collections")}
    with pytest.raises(RuntimeError, match="simulated"):
        op.import_urdf(bpy.context, G1)
    assert {k: len(getattr(bpy.data, k)) for k in before} == before


# -------------------------------------------------------------------- undo ---

def test_undo_removes_the_rig(clean_scene):
    """Undo in background bpy: it is disabled at startup until ed.undo_push()
    initialises it, and bpy.ops only pushes an operator's undo step when called
    with undo=True (positional: 'EXEC_DEFAULT', True). Then ed.undo works."""
    bpy.ops.ed.undo_push(message="before import")
    result = bpy.ops.robot_retarget.import_urdf('EXEC_DEFAULT', True, filepath=str(G1))
    assert result == {'FINISHED'} and len(_armatures()) == 1
    assert len(bpy.data.meshes) > 0
    assert bpy.ops.ed.undo.poll()
    bpy.ops.ed.undo()
    assert _armatures() == [] and len(bpy.data.armatures) == 0
    assert len(bpy.data.meshes) == 0 and "g1_29dof_rev_1_0" not in bpy.data.collections
    bpy.ops.ed.redo()
    assert len(_armatures()) == 1 and len(_armatures()[0].data.bones) == 30


def test_menu_entry_registered(extension):
    op = importlib.import_module(f"{extension.__name__}.operators.import_urdf")
    draw_funcs = getattr(bpy.types.TOPBAR_MT_file_import.draw, "_draw_funcs", [])
    assert op._menu_import in draw_funcs
    assert hasattr(bpy.types, "ROBOT_RETARGET_OT_import_urdf")
