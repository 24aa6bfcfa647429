"""URDF mimic joints in playback files: the Panda's second finger (a mimic of the first) is written
as multiplier x leader + offset in every format that lists a model's joints, not left at rest."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from core.model.kinematics import KinematicTree
from core.model.urdf import URDFError, parse_urdf, parse_urdf_string
from core.motion.bake_csv import BakeTable
from core.playback import ExportSettings, JointLimits, PlaybackError, PlaybackMeta, prepare_playback
from core.playback.formats import FORMATS, read_playback, write_playback
from core.playback.mimic import LEFT_OUT, mimic_joints, mimic_limit_warnings, with_mimic_joints

ROOT = Path(__file__).resolve().parents[2]
PANDA = ROOT / "tests" / "data" / "robots" / "franka_panda.urdf"
HOP = ROOT / "tests" / "data" / "motion" / "cmu_131_03_hop.bvh"
NEEDS_NAMES = ("unitree-csv", "pkl")


def movable_names(robot) -> list[str]:
    return [j.name for j in robot.joints if j.movable]


def panda_motion(tree: KinematicTree, seconds: float = 2.0, fps: float = 30.0) -> BakeTable:
    """The arm still at mid-range, the first finger opening and closing across its 0-0.04 m."""
    t = np.arange(int(seconds * fps) + 1) / fps
    q = np.tile(np.where(np.isfinite(tree.lower), 0.5 * (tree.lower + tree.upper), 0.0), (len(t), 1))
    q[:, tree.joint_names.index("panda_finger_joint1")] = 0.02 - 0.015 * np.cos(np.pi * t)
    return BakeTable(list(tree.joint_names), t, np.zeros((len(t), 3)), np.tile([1.0, 0, 0, 0], (len(t), 1)), q)


@pytest.fixture(scope="module")
def panda():
    robot = parse_urdf(PANDA)
    tree = KinematicTree(robot)
    limits = JointLimits.from_tree(tree)
    result = prepare_playback(panda_motion(tree), limits, ExportSettings(period_s=0.01))
    return robot, tree, limits, result.track


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_panda_second_finger_follows_the_first_in_every_format(tmp_path, panda, fmt):
    robot, tree, limits, track = panda
    path = tmp_path / f"panda{FORMATS[fmt]}"
    write_playback(path, track, fmt, PlaybackMeta(robot="panda", limits=limits, mimic=mimic_joints(robot)))
    names = movable_names(robot)
    extra = {"joint_names": names, "rate_hz": track.rate_hz} if fmt in NEEDS_NAMES else {}
    read = read_playback(path, fmt, **extra)
    finger1 = track.q[:, tree.joint_names.index("panda_finger_joint1")]
    assert np.ptp(finger1) > 0.02  # the first finger moves
    if fmt in LEFT_OUT:  # ROS derives mimic joints itself; a trajectory controller refuses them
        assert read.track.joint_names == tree.joint_names
        return
    assert read.track.joint_names == names == tree.joint_names + ["panda_finger_joint2"]
    np.testing.assert_array_equal(read.track.q[:, names.index("panda_finger_joint2")], finger1)
    np.testing.assert_array_equal(read.track.q[:, :len(tree.joint_names)], track.q)
    if read.metadata:
        assert read.metadata["mimic"] == [{"joint": "panda_finger_joint2", "leader": "panda_finger_joint1",
                                           "multiplier": 1.0, "offset": 0.0}]
        assert read.metadata["units"]["joints"][-2:] == ["m", "m"]
        rows = read.metadata["limits"]  # a row per written joint, the mimic one with its own range
        assert [row["joint"] for row in rows] == names
        assert rows[-1] == {"joint": "panda_finger_joint2", "type": "prismatic", "unit": "m", "lower": 0.0,
                            "upper": 0.04, "velocity": 0.2, "acceleration": None}


def test_the_exported_panda_file_holds_the_second_finger(tmp_path):
    """End to end as a user runs it: `export` of a clip onto the Panda, keys without the free joint;
    qpos is as wide as the MJCF's joints (9) and the second finger equals the first."""
    out = tmp_path / "panda.xml"
    proc = subprocess.run([sys.executable, "-m", "core.library.cli", "export", "--source", HOP, "--robot", PANDA,
                           "--frames", "0:20", "--format", "mujoco-keyframes", "--no-free-joint", "--out", out],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    read = read_playback(out).track
    names = movable_names(parse_urdf(PANDA))
    assert read.joint_names == names and read.q.shape[1] == 9
    np.testing.assert_array_equal(read.q[:, names.index("panda_finger_joint2")],
                                  read.q[:, names.index("panda_finger_joint1")])


SLIDES = """<robot name="slides">
  <link name="base"/><link name="a"/><link name="b"/><link name="c"/><link name="d"/>
  <joint name="lead" type="prismatic"><parent link="base"/><child link="a"/><axis xyz="1 0 0"/>
    <limit lower="-1" upper="1" velocity="1" effort="1"/></joint>
  <joint name="follow" type="revolute"><parent link="a"/><child link="b"/><axis xyz="0 0 1"/>
    <limit lower="-3" upper="3" velocity="1" effort="1"/><mimic joint="lead" multiplier="-2" offset="0.25"/></joint>
  <joint name="next" type="continuous"><parent link="b"/><child link="c"/><axis xyz="0 0 1"/></joint>
  <joint name="second" type="revolute"><parent link="c"/><child link="d"/><axis xyz="0 1 0"/>
    <limit lower="-3" upper="3" velocity="1" effort="1"/><mimic joint="follow" multiplier="0.5" offset="-0.1"/></joint>
</robot>"""


def slides_track(robot):
    tree = KinematicTree(robot)
    t = np.arange(11) * 0.1
    q = np.column_stack([0.3 * np.sin(t), np.cos(t)])
    return tree, BakeTable(list(tree.joint_names), t, np.zeros((11, 3)), np.tile([1.0, 0, 0, 0], (11, 1)), q)


def test_multiplier_offset_a_mimic_of_a_mimic_and_the_urdf_order(tmp_path):
    robot = parse_urdf_string(SLIDES, "slides.urdf")
    tree, table = slides_track(robot)
    limits = JointLimits.from_tree(tree)
    track = prepare_playback(table, limits, ExportSettings(period_s=0.1)).track
    path = tmp_path / "slides.npz"
    write_playback(path, track, "npz", PlaybackMeta(limits=limits, mimic=mimic_joints(robot)))
    read = read_playback(path).track
    assert read.joint_names == ["lead", "follow", "next", "second"]  # the URDF's order, mimic joints in place
    lead = track.q[:, 0]
    np.testing.assert_allclose(read.q[:, 1], -2.0 * lead + 0.25, rtol=0, atol=1e-15)
    np.testing.assert_allclose(read.q[:, 3], 0.5 * (-2.0 * lead + 0.25) - 0.1, rtol=0, atol=1e-15)
    np.testing.assert_array_equal(read.q[:, [0, 2]], track.q)
    assert read.is_prismatic().tolist() == [True, False, False, False]
    for link, column in (("b", 1), ("d", 3)):  # what the rig and every solver see: the same values
        np.testing.assert_allclose(tree.joint_value(track.q, tree.link_index(link)), read.q[:, column],
                                   rtol=0, atol=1e-15)


def test_mimic_joints_in_a_circle_are_refused_naming_them_and_the_file(tmp_path):
    path = tmp_path / "circle.urdf"
    path.write_text(SLIDES.replace('<mimic joint="lead" multiplier="-2" offset="0.25"/>', '<mimic joint="second"/>'))
    with pytest.raises(URDFError) as info:
        parse_urdf(path)
    assert str(info.value).startswith(f"{path}, line 5: joint 'follow': <mimic> joints follow each other in a "
                                      "circle (follow -> second -> follow)"), str(info.value)


def test_a_motion_without_the_leader_is_refused():
    robot = parse_urdf_string(SLIDES, "slides.urdf")
    tree, table = slides_track(robot)
    track = prepare_playback(table, JointLimits.from_tree(tree), ExportSettings(period_s=0.1)).track
    track.joint_names = ["other", "next"]
    with pytest.raises(PlaybackError, match="mimic joint 'follow' follows 'lead', which the motion does not have"):
        with_mimic_joints(track, mimic_joints(robot))


def test_a_mimic_of_an_unknown_joint_names_the_joint_and_file(tmp_path):
    bad = tmp_path / "panda_typo.urdf"
    bad.write_text(PANDA.read_text(encoding="utf-8").replace('<mimic joint="panda_finger_joint1"/>',
                                                             '<mimic joint="panda_finger_jiont1"/>'), encoding="utf-8")
    with pytest.raises(URDFError) as info:
        parse_urdf(bad)
    message = str(info.value)
    for needle in (str(bad), "joint 'panda_finger_joint2'", "<mimic> joint 'panda_finger_jiont1'",
                   "line 348"):  # the <mimic>'s line, where the typo is (its <joint> starts on 342)
        assert needle in message, message


def test_mujoco_holds_the_keys_of_the_panda_with_both_fingers_together(tmp_path, panda):
    """Where MuJoCo is installed: the Panda's URDF (meshes left out) compiles to a 9-wide qpos with the
    mimic as an equality; every key loads whole and keeps that equality."""
    mujoco = pytest.importorskip("mujoco")
    robot, tree, limits, track = panda
    keys = tmp_path / "keys.xml"
    write_playback(keys, track, "mujoco-keyframes", PlaybackMeta(limits=limits, mimic=mimic_joints(robot)),
                   free_joint=False)
    text = re.sub(r"<(visual|collision)>.*?</\1>", "", PANDA.read_text(encoding="utf-8"), flags=re.S)
    spec = mujoco.MjSpec.from_string(text)
    read = read_playback(keys).track
    for k in range(0, read.samples, 25):
        spec.add_key(time=float(read.time_s[k]), qpos=read.q[k].tolist())
    model = spec.compile()
    assert model.nq == len(read.joint_names) == 9
    data = mujoco.MjData(model)
    for k in range(model.nkey):
        mujoco.mj_resetDataKeyframe(model, data, k)
        mujoco.mj_forward(model, data)
        np.testing.assert_array_equal(data.qpos, read.q[25 * k])
        equality = data.efc_pos[data.efc_type == mujoco.mjtConstraint.mjCNSTR_EQUALITY]
        assert equality.size == 1 and abs(equality[0]) < 1e-12


def test_a_file_read_back_and_written_again_keeps_its_mimic_joints_once(tmp_path, panda):
    """A round trip: the Panda's keys read back hold both fingers; written again with the robot's
    mimic joints they are the same file, not a 10-wide qpos with the second finger twice."""
    robot, tree, limits, track = panda
    meta = PlaybackMeta(robot="panda", limits=limits, mimic=mimic_joints(robot))
    for fmt in ("npz", "mujoco-keyframes", "csv"):
        first, again = tmp_path / f"first{FORMATS[fmt]}", tmp_path / f"again{FORMATS[fmt]}"
        write_playback(first, track, fmt, meta)
        write_playback(again, read_playback(first).track, fmt, meta)
        assert again.read_bytes() == first.read_bytes(), fmt


def test_a_mimic_leaving_its_own_limits_warns_naming_it_and_its_leader():
    """The limit check and retime drive the leader only; 'follow' = -2 x 'lead' + 0.25 leaves its own
    -0.2 rad (down to -0.25) while 'lead' keeps to its +-1 m: the export says so, naming both joints."""
    robot = parse_urdf_string(SLIDES.replace('<limit lower="-3" upper="3" velocity="1" effort="1"/><mimic joint="lead"',
                                             '<limit lower="-0.2" upper="0.5" velocity="9" effort="1"/><mimic joint="lead"'),
                              "slides.urdf")
    tree, table = slides_track(robot)
    limits = JointLimits.from_tree(tree)
    result = prepare_playback(table, limits, ExportSettings(period_s=0.1))
    assert not result.violations  # the free joints keep to their limits
    mimic = mimic_joints(robot)
    warnings = mimic_limit_warnings(result.track, mimic)
    assert len(warnings) == 1 and warnings[0].startswith("mimic joint 'follow' (= -2 x 'lead' +0.25) leaves"), warnings
    assert "'follow': position -0.25" in warnings[0] and "beyond -0.2 rad" in warnings[0], warnings
    follow = -2.0 * result.track.q[:, 0] + 0.25
    assert follow.min() < -0.2  # what the warning is about: the value written
    assert mimic_limit_warnings(result.track, mimic_joints(parse_urdf_string(SLIDES, "slides.urdf"))) == []


def test_the_export_of_a_mimic_beyond_its_limits_prints_the_warning(tmp_path):
    """End to end: the Panda's second finger at 2 x the first + 5 cm, past its 4 cm (the clip leaves the
    first finger shut at 0 m): the export writes it as the URDF says and warns, naming it."""
    urdf = tmp_path / "panda_wide.urdf"
    urdf.write_text(PANDA.read_text(encoding="utf-8").replace('<mimic joint="panda_finger_joint1"/>',
                    '<mimic joint="panda_finger_joint1" multiplier="2" offset="0.05"/>'), encoding="utf-8")
    out = tmp_path / "panda.npz"
    proc = subprocess.run([sys.executable, "-m", "core.library.cli", "export", "--source", HOP, "--robot", urdf,
                           "--frames", "0:20", "--format", "npz", "--out", out], cwd=ROOT, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    read = read_playback(out).track
    names = read.joint_names
    np.testing.assert_allclose(read.q[:, names.index("panda_finger_joint2")],
                               2 * read.q[:, names.index("panda_finger_joint1")] + 0.05, rtol=0, atol=1e-15)
    assert read.q[:, names.index("panda_finger_joint2")].min() > 0.04
    assert ("warning: mimic joint 'panda_finger_joint2' (= 2 x 'panda_finger_joint1' +0.05) leaves its own limits"
            in proc.stderr), proc.stderr
    assert "'panda_finger_joint2': position 0.05 m beyond 0.04 m" in proc.stderr, proc.stderr
