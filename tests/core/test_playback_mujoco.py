"""mujoco-keyframes without the free joint: a fixed-base MJCF (the Franka Panda) has no free joint,
so its keys are the joints only; the default layout stays as it was; a moving root is refused."""
from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

from core.model.urdf import parse_urdf
from core.playback.formats import read_playback, write_playback
from core.playback.prepare import ExportSettings
from core.playback.sampling import PlaybackError, PlaybackTrack

from .test_playback_formats import NAMES, make_track, meta
from .test_playback_formats import limits as _limits

limits = _limits  # the bench arm's limits (a module fixture)

ROOT = Path(__file__).resolve().parents[2]
PANDA = ROOT / "tests" / "data" / "robots" / "franka_panda.urdf"
HOP = ROOT / "tests" / "data" / "motion" / "cmu_131_03_hop.bvh"
# sha256 of make_track() written with meta(limits) by the writer before free_joint existed (ac24b32~1)
DEFAULT_SHA256 = "a86380fa5345f1f5099105a27ee51e41141300d9d0c99bbbe65673d123c14e4b"


def qpos_rows(path: Path) -> np.ndarray:
    keys = ET.parse(path).getroot().findall("./keyframe/key")
    return np.array([k.get("qpos").split() for k in keys], dtype=float)


def comment_json(path: Path) -> dict:
    return json.loads(re.search(r"robot_retarget: (\{.*\}) -->", path.read_text(encoding="utf-8")).group(1))


def still_track(track: PlaybackTrack, pose=(0.1, -0.2, 0.3), quat=(0.0, 0.0, 0.6, 0.8)) -> PlaybackTrack:
    frames = track.samples
    return PlaybackTrack(track.joint_names, track.period_s, np.tile(pose, (frames, 1)), np.tile(quat, (frames, 1)),
                         track.q, track.is_prismatic())


@pytest.fixture(scope="module")
def panda_files(tmp_path_factory) -> dict:
    """The Panda's hop exported by the CLI with and without the free joint."""
    folder = tmp_path_factory.mktemp("panda")
    files = {}
    for name, flags in (("free", []), ("fixed", ["--no-free-joint"])):
        files[name] = folder / f"{name}.xml"
        proc = subprocess.run([sys.executable, "-m", "core.library.cli", "export", "--source", HOP, "--robot", PANDA,
                               "--frames", "0:30", "--format", "mujoco-keyframes", "--out", files[name], *flags],
                              cwd=ROOT, capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stderr
    return files


def test_panda_without_free_joint_has_the_joints_only_and_reads_back_equal(panda_files):
    joints = [j.name for j in parse_urdf(PANDA).joints if j.movable]  # the second finger (a mimic) too
    free, fixed = qpos_rows(panda_files["free"]), qpos_rows(panda_files["fixed"])
    assert fixed.shape == (len(free), len(joints))
    assert free.shape[1] == len(joints) + 7
    np.testing.assert_array_equal(fixed, free[:, 7:])
    info = comment_json(panda_files["fixed"])
    assert info["free_joint"] is False and info["root_pose"] == free[0, :7].tolist()
    assert "no free joint" in panda_files["fixed"].read_text(encoding="utf-8").splitlines()[1]
    assert "free_joint" not in comment_json(panda_files["free"])
    a, b = read_playback(panda_files["free"]).track, read_playback(panda_files["fixed"]).track
    assert a.joint_names == b.joint_names == joints
    for name in ("time_s", "root_position", "root_quaternion", "q"):
        np.testing.assert_array_equal(getattr(b, name), getattr(a, name), err_msg=name)


def test_without_the_comment_the_width_tells_the_layout(tmp_path, panda_files):
    """A keyframe file someone else wrote: qpos as wide as the joint count has no free joint."""
    joints = read_playback(panda_files["free"]).track.joint_names
    for name in ("free", "fixed"):
        bare = tmp_path / f"{name}.xml"
        bare.write_text(re.sub(r"<!--.*?-->\n", "", panda_files[name].read_text(encoding="utf-8")), encoding="utf-8")
        read = read_playback(bare, joint_names=joints).track
        np.testing.assert_array_equal(read.q, qpos_rows(panda_files["fixed"]))
        np.testing.assert_array_equal(read.root_quaternion, np.tile([1.0, 0, 0, 0], (read.samples, 1)))


def test_default_unchanged_byte_for_byte(tmp_path, limits):
    path = tmp_path / "wave.xml"
    write_playback(path, make_track(), "mujoco-keyframes", meta(limits))
    assert hashlib.sha256(path.read_bytes()).hexdigest() == DEFAULT_SHA256
    again = tmp_path / "again.xml"
    write_playback(again, make_track(), "mujoco-keyframes", meta(limits), free_joint=True)
    assert again.read_bytes() == path.read_bytes()


def test_a_moving_root_is_refused_naming_the_setting(tmp_path, limits):
    path = tmp_path / "walk.xml"
    with pytest.raises(PlaybackError, match="mujoco_free_joint is false .* the root moves"):
        write_playback(path, make_track(), "mujoco-keyframes", meta(limits), free_joint=False)
    assert not path.exists()
    turning = make_track()
    turning = still_track(turning)
    turning.root_quaternion[5:] = [0.0, 0.0, 0.8, 0.6]  # turns in place
    with pytest.raises(PlaybackError, match="mujoco_free_joint"):
        write_playback(path, turning, "mujoco-keyframes", free_joint=False)
    assert not path.exists()


def test_a_still_root_off_the_origin_round_trips_through_the_comment(tmp_path, limits):
    track = still_track(make_track())
    path = tmp_path / "arm.xml"
    write_playback(path, track, "mujoco-keyframes", meta(limits), free_joint=False)
    assert qpos_rows(path).shape == (track.samples, len(NAMES))
    read = read_playback(path).track
    for name in ("root_position", "root_quaternion", "q"):
        np.testing.assert_array_equal(getattr(read, name), getattr(track, name), err_msg=name)
    other = tmp_path / "arm.csv"  # the setting is mujoco's: other formats ignore it
    write_playback(other, track, "csv", free_joint=False)
    np.testing.assert_array_equal(read_playback(other).track.root_position, track.root_position)


def test_settings_file_key(tmp_path):
    assert ExportSettings().mujoco_free_joint is True
    path = tmp_path / "export.json"
    path.write_text(json.dumps({"format": "mujoco-keyframes", "mujoco_free_joint": False}), encoding="utf-8")
    assert ExportSettings.load(path).mujoco_free_joint is False
    path.write_text(json.dumps({"mujoco_free_joint": "no"}), encoding="utf-8")
    with pytest.raises(PlaybackError, match="mujoco_free_joint: 'no' is not true or false"):
        ExportSettings.load(path)


ARM_MJCF = """<mujoco model="arm2"><worldbody>{base}
  <body name="upper" pos="0 0 0.1"><joint name="shoulder" type="hinge" axis="0 0 1"/>
    <geom type="capsule" size="0.02" fromto="0 0 0 0.3 0 0"/>
    <body name="fore" pos="0.3 0 0"><joint name="elbow" type="hinge" axis="0 1 0"/>
      <geom type="capsule" size="0.02" fromto="0 0 0 0.25 0 0"/></body></body>{end}
</worldbody><include file="keys.xml"/></mujoco>"""


@pytest.mark.parametrize("free_joint", [True, False])
def test_mujoco_loads_the_keys_into_a_two_joint_arm(tmp_path, free_joint):
    """Where MuJoCo is installed: each layout loads into its MJCF (floating or fixed base), qpos as written."""
    mujoco = pytest.importorskip("mujoco")
    base, end = ('<body name="base" pos="0 0 0.5"><freejoint/><geom type="box" size="0.05 0.05 0.05"/>',
                 "</body>") if free_joint else ("", "")
    (tmp_path / "arm.xml").write_text(ARM_MJCF.format(base=base, end=end), encoding="utf-8")
    track = make_track()
    track = PlaybackTrack(["shoulder", "elbow"], track.period_s, track.root_position, track.root_quaternion,
                          track.q[:, :2])
    write_playback(tmp_path / "keys.xml", track if free_joint else still_track(track), "mujoco-keyframes",
                   free_joint=free_joint)
    model = mujoco.MjModel.from_xml_path(str(tmp_path / "arm.xml"))
    np.testing.assert_array_equal(model.key_qpos.reshape(model.nkey, model.nq), qpos_rows(tmp_path / "keys.xml"))
    assert model.nq == (9 if free_joint else 2)
