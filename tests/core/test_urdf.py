"""URDF parsing against the shipped G1, H1 and Panda descriptions plus broken inputs."""
from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest

from core.model.transforms import make_transform, rpy_to_matrix
from core.model.mesh_paths import resolve_mesh_path
from core.model.urdf import URDFError, parse_urdf, parse_urdf_string

ROOT = Path(__file__).resolve().parents[2]
G1 = ROOT / "data" / "robots" / "g1" / "unitree_g1_29dof.urdf"
H1 = ROOT / "tests" / "data" / "robots" / "unitree_h1_19dof.urdf"
PANDA = ROOT / "tests" / "data" / "robots" / "franka_panda.urdf"


@pytest.fixture(scope="module")
def g1():
    return parse_urdf(G1)


@pytest.fixture(scope="module")
def h1():
    return parse_urdf(H1)


@pytest.fixture(scope="module")
def panda():
    return parse_urdf(PANDA)


def _declared_joints(path: Path, types: tuple[str, ...]) -> list[str]:
    """Joint names of the given types in file order, read independently by regex
    (skipping XML comments, which in G1 hide a floating base joint)."""
    text = re.sub(r"<!--.*?-->", "", path.read_text(), flags=re.S)
    pairs = re.findall(r'<joint\s+name="([^"]+)"\s+type="([^"]+)"', text)
    return [name for name, kind in pairs if kind in types]


# ---------------------------------------------------------------------- G1 ---

def test_g1_movable_joints_in_file_order(g1):
    names = [j.name for j in g1.movable_joints]
    assert len(names) == 29
    assert names[0] == "left_hip_pitch_joint"
    assert names == _declared_joints(G1, ("revolute",))
    assert all(j.type == "revolute" for j in g1.movable_joints)


def test_g1_root_and_tree(g1):
    assert g1.name == "g1_29dof_rev_1_0"
    assert g1.root_link == "pelvis"
    assert g1.parent_joint("pelvis") is None
    assert g1.parent_joint("left_knee_link").name == "left_knee_joint"
    assert len(g1.joints) == len(g1.links) - 1
    children = {j.child for j in g1.child_joints("torso_link")}
    assert {"left_shoulder_pitch_link", "right_shoulder_pitch_link", "head_link"} <= children
    assert list(g1.links)[:3] == ["pelvis", "pelvis_contour_link", "left_hip_pitch_link"]


def test_g1_knee_limits_match_file(g1):
    knee = g1.joint("left_knee_joint")
    assert (knee.lower, knee.upper) == (-0.087267, 2.8798)
    assert (knee.effort, knee.velocity) == (139.0, 20.0)
    assert knee.parent == "left_hip_yaw_link" and knee.child == "left_knee_link"
    np.testing.assert_allclose(knee.axis, [0, 1, 0])


def test_g1_axes_are_unit(g1):
    for joint in g1.joints:
        assert math.isclose(np.linalg.norm(joint.axis), 1.0, abs_tol=1e-12), joint.name


def test_g1_shoulder_origin(g1):
    expected = make_transform(rpy_to_matrix((0.27931, 5.4949E-05, -0.00019159)),
                              (0.0039563, 0.10022, 0.24778))
    np.testing.assert_allclose(g1.joint("left_shoulder_pitch_joint").origin, expected,
                               atol=1e-15)


def test_g1_path_pelvis_to_ankle(g1):
    assert g1.path("pelvis", "left_ankle_roll_link") == [
        "pelvis", "left_hip_pitch_link", "left_hip_roll_link", "left_hip_yaw_link",
        "left_knee_link", "left_ankle_pitch_link", "left_ankle_roll_link"]
    assert g1.path("left_knee_link", "left_knee_link") == ["left_knee_link"]


def test_path_errors_name_the_links(g1):
    with pytest.raises(URDFError, match="left_ankle_roll_link.*right_knee_link"):
        g1.path("right_knee_link", "left_ankle_roll_link")
    with pytest.raises(KeyError, match="no_such_link"):
        g1.path("pelvis", "no_such_link")
    with pytest.raises(KeyError, match="no_such_joint"):
        g1.joint("no_such_joint")


def test_g1_fixed_joint_with_extra_attribute(g1):
    palm = g1.joint("left_hand_palm_joint")  # carries dont_collapse="true"
    assert palm.type == "fixed" and not palm.movable
    assert palm.lower is None and palm.upper is None


def test_g1_collision_spheres(g1):
    spheres = g1.links["left_ankle_roll_link"].collisions
    assert [g.kind for g in spheres] == ["sphere"] * 4
    assert all(g.radius == 0.005 for g in spheres)
    np.testing.assert_allclose(spheres[2].origin[:3, 3], [0.12, 0.03, -0.03])


def test_g1_visual_meshes_resolve(g1):
    mesh_dir = (G1.parent / "meshes").resolve()
    meshes = [g for link in g1.links.values() for g in link.visuals if g.kind == "mesh"]
    assert len(meshes) >= 29
    for geo in meshes:
        assert geo.filename.startswith("package://example-robot-data/")
        found = resolve_mesh_path(geo.filename, g1.source_path)
        assert found is not None, geo.filename
        assert found.is_file() and found.parent == mesh_dir
        assert found.name == geo.filename.rsplit("/", 1)[1]
        np.testing.assert_array_equal(geo.scale, [1, 1, 1])


# ---------------------------------------------------------------------- H1 ---

H1_MOVABLE = [
    "left_hip_yaw_joint", "left_hip_roll_joint", "left_hip_pitch_joint", "left_knee_joint",
    "left_ankle_joint", "right_hip_yaw_joint", "right_hip_roll_joint",
    "right_hip_pitch_joint", "right_knee_joint", "right_ankle_joint", "torso_joint",
    "left_shoulder_pitch_joint", "left_shoulder_roll_joint", "left_shoulder_yaw_joint",
    "left_elbow_joint", "right_shoulder_pitch_joint", "right_shoulder_roll_joint",
    "right_shoulder_yaw_joint", "right_elbow_joint"]


def test_h1_movable_joints(h1):
    assert h1.name == "h1_19dof"
    assert h1.root_link == "pelvis"
    assert [j.name for j in h1.movable_joints] == H1_MOVABLE
    assert H1_MOVABLE == _declared_joints(H1, ("revolute", "continuous", "prismatic"))
    knee = h1.joint("left_knee_joint")
    assert (knee.lower, knee.upper, knee.effort, knee.velocity) == (-0.26, 2.05, 300.0, 14.0)


def test_h1_missing_meshes_resolve_to_none(h1):
    meshes = [g for link in h1.links.values() for g in link.visuals + link.collisions
              if g.kind == "mesh"]
    assert meshes and meshes[0].filename == "meshes/pelvis_from_dae.obj"
    assert all(resolve_mesh_path(g.filename, h1.source_path) is None for g in meshes)


# ------------------------------------------------------------------- Panda ---

def test_panda_mimic_finger(panda):
    finger2 = panda.joint("panda_finger_joint2")
    assert finger2.type == "prismatic" and finger2.movable
    assert finger2.mimic is not None
    assert (finger2.mimic.joint, finger2.mimic.multiplier, finger2.mimic.offset) == (
        "panda_finger_joint1", 1.0, 0.0)
    assert (finger2.lower, finger2.upper) == (0.0, 0.04)
    np.testing.assert_allclose(finger2.axis, [0, -1, 0])
    assert panda.joint("panda_finger_joint1").mimic is None


def test_panda_movable_excludes_mimic(panda):
    names = [j.name for j in panda.movable_joints]
    assert names == [f"panda_joint{i}" for i in range(1, 8)] + ["panda_finger_joint1"]


def test_panda_fixed_joints_and_missing_meshes(panda):
    fixed = [j.name for j in panda.joints if j.type == "fixed"]
    assert fixed == ["panda_joint8", "panda_hand_joint", "panda_hand_tcp_joint"]
    assert panda.root_link == "panda_link0"
    hand = panda.links["panda_hand"].visuals[0]
    assert hand.filename.endswith("visual/hand.dae")
    assert resolve_mesh_path(hand.filename, panda.source_path) is None


# --------------------------------------------------------------- synthetic ---

# Line numbers below are relied on by the error tests.
BASE = """<robot name="r">
  <link name="a"/>
  <link name="b"/>
  <joint name="j" type="revolute">
    <parent link="a"/>
    <child link="b"/>
    <axis xyz="0 0 1"/>
    <limit lower="-1" upper="1"/>
  </joint>
</robot>"""

EXTRA_JOINT = """  <link name="c"/>
  <joint name="{name}" type="fixed">
    <parent link="{parent}"/>
    <child link="{child}"/>
  </joint>
</robot>"""


def _with_extra(name: str, parent: str, child: str) -> str:
    """BASE plus link 'c' (line 10) and a fixed joint (line 11)."""
    return BASE.replace("</robot>", EXTRA_JOINT.format(name=name, parent=parent,
                                                       child=child))


BAD_CASES = {
    "unknown parent": (BASE.replace('parent link="a"', 'parent link="ghost"'),
                       ["joint 'j'", "parent link 'ghost'", "line 4"]),
    "duplicate joint": (_with_extra("j", "b", "c"),
                        ["joint 'j'", "duplicate", "line 11", "line 4"]),
    "two roots": (BASE.replace("</robot>", '  <link name="c"/>\n</robot>'),
                  ["link 'c'", "root", "line 10", "'a'"]),
    "second parent": (_with_extra("j2", "c", "b"),
                      ["joint 'j2'", "link 'b'", "already has parent joint 'j'", "line 11"]),
    "cycle below root": (BASE.replace("</robot>", """  <link name="c"/>
  <link name="d"/>
  <joint name="cd" type="fixed"><parent link="c"/><child link="d"/></joint>
  <joint name="dc" type="fixed"><parent link="d"/><child link="c"/></joint>
</robot>"""), ["link 'c'", "not reachable from root 'a'", "cycle", "line 10"]),
    "missing limit": (BASE.replace('    <limit lower="-1" upper="1"/>\n', ""),
                      ["joint 'j'", "<limit", "line 4"]),
    "limit lower above its default upper": (BASE.replace(' upper="1"', "").replace('"-1"', '"0.5"'),
                                            ["joint 'j'", "lower 0.5 > upper 0.0", "line 8"]),
    "non-numeric xyz": (BASE.replace('<axis xyz="0 0 1"/>', '<origin xyz="0 zero 1"/>'),
                        ["joint 'j'", "xyz='0 zero 1'", "line 7"]),
    "bad limit number": (BASE.replace('upper="1"', 'upper="one"'),
                         ["joint 'j'", "upper='one'", "not a number", "line 8"]),
    "zero axis": (BASE.replace('xyz="0 0 1"', 'xyz="0 0 0"'),
                  ["joint 'j'", "axis", "line 7"]),
    "bad type": (BASE.replace('type="revolute"', 'type="hinge"'),
                 ["joint 'j'", "'hinge'", "line 4"]),
    "not well formed": (BASE.replace("  </joint>\n", ""), ["not well-formed", "mismatched tag", "line 9"]),
    "wrong root element": (BASE.replace("robot", "robbot"), ["<robbot>", "line 1"]),
    "unknown mimic": (BASE.replace("</joint>", '  <mimic joint="nope"/>\n  </joint>', 1),
                      ["joint 'j'", "'nope'", "line 9"]),
    "mesh without filename": (BASE.replace('<link name="b"/>',
                              '<link name="b"><visual><geometry><mesh/></geometry>'
                              '</visual></link>'), ["link 'b'", "filename", "line 3"]),
}


@pytest.mark.parametrize("case", list(BAD_CASES))
def test_malformed_urdf_errors_name_element_and_line(case):
    text, needles = BAD_CASES[case]
    with pytest.raises(URDFError) as info:
        parse_urdf_string(text)
    message = str(info.value)
    for needle in needles:
        assert needle in message, (case, message)


def test_pure_cycle_has_no_root():
    text = BASE.replace("</robot>", """  <joint name="back" type="fixed">
    <parent link="b"/>
    <child link="a"/>
  </joint>
</robot>""")
    with pytest.raises(URDFError, match="no root link"):
        parse_urdf_string(text)


def test_file_errors_name_the_path(tmp_path):
    missing = tmp_path / "nowhere" / "robot.urdf"
    with pytest.raises(URDFError, match=re.escape(str(missing))):
        parse_urdf(missing)
    bad = tmp_path / "bad.urdf"
    bad.write_text(BASE.replace('parent link="a"', 'parent link="ghost"'))
    with pytest.raises(URDFError) as info:
        parse_urdf(bad)
    assert str(bad) in str(info.value) and "line 4" in str(info.value)


def test_rpy_yaw_rotates_x_to_y():
    robot = parse_urdf_string(BASE.replace(
        "<axis", f'<origin xyz="1 2 3" rpy="0 0 {math.pi / 2!r}"/>\n    <axis'))
    origin = robot.joint("j").origin
    np.testing.assert_allclose(origin[:3, :3] @ [1, 0, 0], [0, 1, 0], atol=1e-12)
    np.testing.assert_allclose(origin[:3, 3], [1, 2, 3])
    assert robot.source_path is None


def test_limits_defaults_and_axis_normalised():
    robot = parse_urdf_string("""<robot name="r">
  <link name="a"/><link name="b"/><link name="c"/>
  <joint name="spin" type="continuous">
    <parent link="a"/><child link="b"/>
    <axis xyz="0 0 2"/>
    <limit velocity="3" lower="-1" upper="1" effort="4"/>
  </joint>
  <joint name="slide" type="prismatic">
    <parent link="b"/><child link="c"/>
    <limit upper="0.5" lower="-0.5"/>
    <mimic joint="spin" multiplier="-2" offset="0.1"/>
  </joint>
</robot>""")
    spin, slide = robot.joints
    np.testing.assert_allclose(spin.axis, [0, 0, 1])
    assert (spin.lower, spin.upper, spin.velocity, spin.effort) == (None, None, 3.0, 4.0)
    np.testing.assert_allclose(slide.axis, [1, 0, 0])
    assert (slide.lower, slide.upper, slide.velocity, slide.effort) == (-0.5, 0.5, None, None)
    assert (slide.mimic.multiplier, slide.mimic.offset) == (-2.0, 0.1)
    assert [j.name for j in robot.movable_joints] == ["spin"]
    np.testing.assert_array_equal(spin.origin, np.eye(4))


def test_limit_without_bounds_holds_the_joint_at_zero_as_the_spec_says():
    """URDF's lower and upper default to 0: robots in the wild rely on it."""
    robot = parse_urdf_string("""<robot name="r">
  <link name="a"/><link name="b"/><link name="c"/>
  <joint name="held" type="revolute">
    <parent link="a"/><child link="b"/><axis xyz="0 0 1"/>
    <limit effort="5" velocity="2"/>
  </joint>
  <joint name="half" type="revolute">
    <parent link="b"/><child link="c"/><axis xyz="0 1 0"/>
    <limit lower="-1.2" effort="5" velocity="2"/>
  </joint>
</robot>""")
    held, half = robot.joints
    assert (held.lower, held.upper, held.velocity) == (0.0, 0.0, 2.0)
    assert (half.lower, half.upper) == (-1.2, 0.0)


def test_primitive_geometry():
    robot = parse_urdf_string("""<robot name="r"><link name="a">
  <visual><origin xyz="0 0 1"/><geometry><box size="1 2 3"/></geometry></visual>
  <visual><geometry><cylinder radius="0.5" length="2"/></geometry></visual>
  <collision><geometry><mesh filename="m.stl" scale="0.001 0.001 0.001"/></geometry></collision>
</link></robot>""")
    box, cyl = robot.links["a"].visuals
    assert box.kind == "box" and box.origin[2, 3] == 1.0
    np.testing.assert_array_equal(box.size, [1, 2, 3])
    assert (cyl.kind, cyl.radius, cyl.length) == ("cylinder", 0.5, 2.0)
    (mesh,) = robot.links["a"].collisions
    assert mesh.filename == "m.stl"
    np.testing.assert_allclose(mesh.scale, [0.001] * 3)
    assert robot.root_link == "a" and robot.joints == []


# --------------------------------------------------------- mesh resolution ---

def test_resolve_package_roots_case_and_file_uri(tmp_path):
    pkg = tmp_path / "ws" / "my_robot"
    (pkg / "meshes").mkdir(parents=True)
    part = pkg / "meshes" / "part.stl"
    part.write_bytes(b"x")
    urdf = tmp_path / "elsewhere" / "robot.urdf"
    uri = "package://my_robot/meshes/part.stl"
    assert resolve_mesh_path(uri, urdf) is None
    assert resolve_mesh_path(uri, urdf, package_roots=[pkg]) == part.resolve()
    assert resolve_mesh_path(uri, urdf, package_roots=[pkg.parent]) == part.resolve()
    # STL vs stl: an exact match is not there, the case-insensitive one is used
    assert resolve_mesh_path("package://my_robot/meshes/PART.STL", urdf,
                             package_roots=[pkg.parent]) == part.resolve()
    assert resolve_mesh_path(f"file://{part}", None) == part.resolve()
    assert resolve_mesh_path("meshes/part.stl", pkg / "robot.urdf") == part.resolve()


def test_resolve_prefers_exact_case(tmp_path):
    (tmp_path / "meshes").mkdir()
    upper = tmp_path / "meshes" / "Part.STL"
    upper.write_bytes(b"x")
    lower = tmp_path / "part.stl"
    lower.write_bytes(b"y")
    urdf = tmp_path / "robot.urdf"
    if (tmp_path / "meshes" / "part.stl").exists():
        pytest.skip("case-insensitive file system")
    assert resolve_mesh_path("meshes/part.stl", urdf) == lower.resolve()
    assert resolve_mesh_path("meshes/Part.STL", urdf) == upper.resolve()


def test_inertials_are_read():
    """Mass, inertial origin and the symmetric inertia tensor of every link; G1 weighs about 33 kg."""
    from pathlib import Path

    from core.model.urdf import parse_urdf

    root = Path(__file__).resolve().parents[2]
    g1 = parse_urdf(root / "data" / "robots" / "g1" / "unitree_g1_29dof.urdf")
    masses = [link.inertial.mass for link in g1.links.values() if link.inertial is not None]
    assert len(masses) >= 30 and abs(sum(masses) - 33.3) < 0.5
    pelvis = g1.links["pelvis"].inertial
    assert pelvis.mass == pytest.approx(3.813)
    np.testing.assert_allclose(pelvis.origin[:3, 3], [0.0, 0.0, -0.07605])
    np.testing.assert_allclose(pelvis.inertia, pelvis.inertia.T)
    assert pelvis.inertia[0, 0] == pytest.approx(0.010549) and pelvis.inertia[0, 2] == pytest.approx(2.1e-06)


def test_a_negative_mass_names_the_link():
    from core.model.urdf import URDFError, parse_urdf_string

    text = ('<robot name="r"><link name="base"><inertial><mass value="-1"/></inertial></link></robot>')
    with pytest.raises(URDFError, match="link 'base'.*negative"):
        parse_urdf_string(text, "r.urdf")
