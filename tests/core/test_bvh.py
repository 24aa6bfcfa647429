"""BVH reader: parsing, errors, forward kinematics, and agreement with Blender's importer."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from core.motion.bvh import AXIS_MAP, BVHError, load_bvh

ROOT = Path(__file__).resolve().parents[2]
WALK = ROOT / "data" / "motion" / "cmu_131_01_walk_m.bvh"
HOP = ROOT / "tests" / "data" / "motion" / "cmu_131_03_hop.bvh"
HOP_SCALE = 0.056444  # CMU "inch-ish" units to metres

WALK_NAMES = [
    "Hips", "LHipJoint", "LeftHip", "LeftKnee", "LeftAnkle", "LeftToe",
    "RHipJoint", "RightHip", "RightKnee", "RightAnkle", "RightToe",
    "lowerback", "Chest", "Chest2", "lowerneck", "Neck", "Head",
    "LeftCollar", "LeftShoulder", "LeftElbow", "LeftWrist", "lhand", "LFingers", "LThumb",
    "RightCollar", "RightShoulder", "RightElbow", "RightWrist", "rhand", "RFingers", "RThumb",
]

# A two-joint rig with XYZ channel order; expected positions worked out by hand below.
XYZ_BVH = """HIERARCHY
ROOT Base
{
  OFFSET 0 0 0
  CHANNELS 6 Xposition Yposition Zposition Xrotation Yrotation Zrotation
  JOINT Arm
  {
    OFFSET 0 2 0
    CHANNELS 3 Xrotation Yrotation Zrotation
    End Site
    {
      OFFSET 1 0 0
    }
  }
}
MOTION
Frames: 2
Frame Time: 0.1
0 0 0 0 0 0 0 0 0
1 2 3 90 90 0 0 0 90
"""

# Exercises every rotation order, positions on a non-root joint, a joint with no
# channels, a childless joint without End Site, a branching joint, a duplicate name.
ODD_BVH = """HIERARCHY
ROOT Pelvis
{
  OFFSET 0.1 0.9 -0.2
  CHANNELS 6 Zposition Xposition Yposition Zrotation Xrotation Yrotation
  JOINT Spine
  {
    OFFSET 0 0.3 0.02
    CHANNELS 3 Xrotation Zrotation Yrotation
    JOINT Neck
    {
      OFFSET 0.01 0.25 0
      CHANNELS 3 Yrotation Xrotation Zrotation
      End Site
      {
        OFFSET 0 0.15 0
      }
    }
    JOINT Arm
    {
      OFFSET 0.2 0.2 0
      CHANNELS 6 Xposition Yposition Zposition Yrotation Zrotation Xrotation
      JOINT Fixed
      {
        OFFSET 0.3 0 0
        CHANNELS 0
        JOINT Hand
        {
          OFFSET 0.2 0 0.05
          CHANNELS 3 Xrotation Yrotation Zrotation
        }
      }
    }
  }
  JOINT Leg
  {
    OFFSET 0.1 -0.1 0
    CHANNELS 3 Zrotation Yrotation Xrotation
    JOINT Leg
    {
      OFFSET 0 -0.45 0.03
      CHANNELS 3 Zrotation Xrotation Yrotation
      End Site
      {
        OFFSET 0 -0.4 0
      }
    }
  }
}
MOTION
Frames: {frames}
Frame Time: 0.04
{rows}
"""


def _write(tmp_path: Path, text: str, name: str = "clip.bvh") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def _odd_bvh(tmp_path: Path, frames: int = 6) -> Path:
    rng = np.random.default_rng(7)
    n_channels = 6 + 3 + 3 + 6 + 0 + 3 + 3 + 3
    rows = rng.uniform(-120, 120, size=(frames, n_channels))
    rows[:, :3] = rng.uniform(-0.5, 0.5, size=(frames, 3))  # root position
    rows[:, 12:15] = rng.uniform(-0.3, 0.3, size=(frames, 3))  # Arm position
    text = ODD_BVH.replace("{frames}", str(frames)).replace(
        "{rows}", "\n".join(" ".join(f"{v:.6f}" for v in r) for r in rows))
    return _write(tmp_path, text, "odd_rig.bvh")


# ---------------------------------------------------------------- parsing


def test_walk_skeleton_and_timing():
    clip = load_bvh(WALK)
    assert clip.names == WALK_NAMES
    assert len(clip.names) == 31 and clip.parents[0] == -1
    assert all(0 <= p < j for j, p in enumerate(clip.parents[1:], 1))
    assert clip.motion.shape == (995, 96)
    assert clip.frames == 995
    assert clip.fps == pytest.approx(120.0, rel=1e-4)
    assert clip.channels[0] == ["Xposition", "Yposition", "Zposition", "Zrotation", "Yrotation", "Xrotation"]
    assert clip.channels[WALK_NAMES.index("LeftShoulder")] == ["Zrotation", "Xrotation", "Yrotation"]
    assert sorted(clip.end_sites) == sorted(WALK_NAMES.index(n) for n in
                                            ("LeftToe", "RightToe", "Head", "LFingers", "LThumb",
                                             "RFingers", "RThumb"))
    np.testing.assert_allclose(clip.offsets[2], [0.070429, -0.092715, 0.040477])
    np.testing.assert_allclose(clip.motion[0, :3], [0.295202, 0.953915, -1.913373])


def test_hop_parses_short_frame_time():
    clip = load_bvh(HOP)
    assert clip.frame_time == pytest.approx(0.0083333)
    assert clip.motion.shape == (1102, 96)
    assert clip.fps == pytest.approx(120.0, rel=1e-4)
    motion = clip.to_source_motion(scale=HOP_SCALE)
    assert motion.name == "cmu_131_03_hop"
    assert motion.fps == pytest.approx(1 / 0.0083333)
    assert motion.heads.shape == (1102, 31, 3)
    # A standing person: head between 1.3 m and 2.1 m above the feet in Blender's Z-up.
    height = motion.heads[0, :, 2].max() - motion.heads[0, :, 2].min()
    assert 1.3 < height < 2.1


def test_nan_token_parses_to_nan(tmp_path):
    text = XYZ_BVH.replace("1 2 3 90 90 0 0 0 90", "1 nan 3 90 NaN 0 0 0 90")
    clip = load_bvh(_write(tmp_path, text))
    assert np.isnan(clip.motion[1, 1]) and np.isnan(clip.motion[1, 4])
    assert not np.isnan(clip.motion[0]).any()
    motion = clip.to_source_motion()
    assert np.isnan(motion.heads[1]).any() and np.isfinite(motion.heads[0]).all()


def test_motion_header_tolerates_blank_lines_and_crlf(tmp_path):
    text = XYZ_BVH.replace("MOTION\n", "MOTION\n\n").replace("\n", "\r\n")
    clip = load_bvh(_write(tmp_path, text))
    assert clip.motion.shape == (2, 9)


# ---------------------------------------------------------------- errors


def _line_of(text: str, needle: str) -> int:
    return next(i + 1 for i, ln in enumerate(text.splitlines()) if needle in ln)


ERROR_CASES = {
    # name: (edit applied to XYZ_BVH, line marker or number, words expected in the message)
    "no_hierarchy": (lambda t: t.replace("HIERARCHY", "HIERARCY"), 1, "HIERARCHY"),
    "no_root": (lambda t: t.replace("ROOT Base", "BONE Base"), 2, "ROOT"),
    "missing_brace": (lambda t: t.replace("    }\n  }\n}\n", "    }\n  }\n"), "MOTION", "unbalanced"),
    "extra_brace": (lambda t: t.replace("}\nMOTION", "}\n}\nMOTION"), 16, "unbalanced"),
    "bad_channel_count": (lambda t: t.replace("CHANNELS 3", "CHANNELS 4"), "CHANNELS 4", "declares 4"),
    "unknown_channel": (lambda t: t.replace("Xrotation Yrotation Zrotation\n  JOINT",
                                            "Xrotation Wrotation Zrotation\n  JOINT"),
                        "Wrotation", "Wrotation"),
    "bad_offset": (lambda t: t.replace("OFFSET 0 2 0", "OFFSET 0 two 0"), "two", "'two'"),
    "no_motion": (lambda t: t.split("MOTION")[0], 15, "MOTION"),
    "no_frames": (lambda t: t.replace("Frames: 2", "Frame count 2"), "Frame count", "Frames"),
    "no_frame_time": (lambda t: t.replace("Frame Time: 0.1", "Frametime 0.1"), "Frametime", "Frame Time"),
    "short_row": (lambda t: t.replace("1 2 3 90 90 0 0 0 90", "1 2 3 90 90 0 0 0"), "1 2 3 90",
                  "has 8 values, expected 9"),
    "too_few_rows": (lambda t: t.replace("Frames: 2", "Frames: 5"), "Frames: 5", "only 2 frame rows"),
    "non_numeric_value": (lambda t: t.replace("1 2 3 90 90", "1 2 x3 90 90"), "x3", "'x3'"),
}


@pytest.mark.parametrize("case", sorted(ERROR_CASES))
def test_malformed_file_names_file_and_line(tmp_path, case):
    edit, where, words = ERROR_CASES[case]
    text = edit(XYZ_BVH)
    assert text != XYZ_BVH
    line = where if isinstance(where, int) else _line_of(text, where)
    path = _write(tmp_path, text, f"{case}.bvh")
    with pytest.raises(BVHError) as info:
        load_bvh(path)
    message = str(info.value)
    assert str(path) in message and f"line {line}:" in message, message
    assert words in message, message
    assert info.value.line == line


def test_missing_file_names_file(tmp_path):
    path = tmp_path / "nope.bvh"
    with pytest.raises(BVHError, match="nope.bvh"):
        load_bvh(path)


def test_empty_file_and_extra_rows(tmp_path):
    with pytest.raises(BVHError, match="line 1:.*HIERARCHY"):
        load_bvh(_write(tmp_path, "", "empty.bvh"))
    # Rows beyond "Frames:" are ignored with a warning rather than rejected.
    with pytest.warns(UserWarning, match="1 rows"):
        clip = load_bvh(_write(tmp_path, XYZ_BVH + "0 0 0 0 0 0 0 0 0\n", "extra.bvh"))
    assert clip.frames == 2


def test_error_is_value_error():
    assert issubclass(BVHError, ValueError)


# ---------------------------------------------------------------- kinematics


def test_xyz_order_hand_computed(tmp_path):
    motion = load_bvh(_write(tmp_path, XYZ_BVH, "xyz.bvh")).to_source_motion()
    # Frame 1: root at (1, 2, 3), R = Rx(90) Ry(90); Arm head = root + R (0, 2, 0) = (1, 2, 5).
    # Arm world rotation Rx(90) Ry(90) Rz(90) sends its End Site (1, 0, 0) to (0, 0, 1): tail (1, 2, 6).
    # Blender axes (x, y, z) -> (x, -z, y).
    np.testing.assert_allclose(motion.heads[1], [[1, -3, 2], [1, -5, 2]], atol=1e-12)
    np.testing.assert_allclose(motion.tails[1], [[1, -5, 2], [1, -6, 2]], atol=1e-12)
    # Frame 0 is the rest pose; the rest arrays agree with it.
    np.testing.assert_allclose(motion.heads[0], [[0, 0, 0], [0, 0, 2]], atol=1e-12)
    np.testing.assert_allclose(motion.tails[0], [[0, 0, 2], [1, 0, 2]], atol=1e-12)
    np.testing.assert_allclose(motion.rest_heads, motion.heads[0], atol=1e-12)
    np.testing.assert_allclose(motion.rest_tails, motion.tails[0], atol=1e-12)
    # Root rotation in Blender axes: Rx(90) Ry(90) sends BVH X to BVH Y, i.e. Blender X to Blender Z.
    np.testing.assert_allclose(motion.root_rotation[1] @ [1, 0, 0], [0, 0, 1], atol=1e-12)
    np.testing.assert_allclose(motion.rest_root_rotation, np.eye(3))
    assert motion.bone_names == ["Base", "Arm"] and list(motion.parents) == [-1, 0]
    assert motion.fps == pytest.approx(10.0) and motion.name == "xyz"


def test_scale_multiplies_positions(tmp_path):
    clip = load_bvh(_write(tmp_path, XYZ_BVH))
    a, b = clip.to_source_motion(), clip.to_source_motion(scale=0.01)
    np.testing.assert_allclose(b.heads, a.heads * 0.01, atol=1e-14)
    np.testing.assert_allclose(b.rest_tails, a.rest_tails * 0.01, atol=1e-14)
    np.testing.assert_allclose(b.root_rotation, a.root_rotation)
    with pytest.raises(ValueError):
        clip.to_source_motion(scale=0.0)


def test_odd_rig_structure(tmp_path):
    clip = load_bvh(_odd_bvh(tmp_path))
    assert clip.names == ["Pelvis", "Spine", "Neck", "Arm", "Fixed", "Hand", "Leg", "Leg.001"]
    assert list(clip.parents) == [-1, 0, 1, 1, 3, 4, 0, 6]
    assert clip.channels[4] == []
    motion = clip.to_source_motion()
    # Childless joint without End Site: Blender gives it 0.1 file units along BVH +Y.
    np.testing.assert_allclose(motion.rest_tails[5] - motion.rest_heads[5], AXIS_MAP @ [0, 0.1, 0])
    # Branching joint: tail at the mean of its children's heads.
    np.testing.assert_allclose(motion.rest_tails[1], motion.rest_heads[[2, 3]].mean(axis=0))
    # Bones are rigid: their length never changes.
    length = np.linalg.norm(motion.tails - motion.heads, axis=-1)
    np.testing.assert_allclose(length, np.broadcast_to(
        np.linalg.norm(motion.rest_tails - motion.rest_heads, axis=-1), length.shape), atol=1e-12)
    # Position channels on a non-root joint replace its offset in the parent frame,
    # so the Spine-to-Arm distance is the length of Arm's position channels (cols 12:15).
    d = np.linalg.norm(motion.heads[:, 3] - motion.heads[:, 1], axis=-1)
    np.testing.assert_allclose(d, np.linalg.norm(clip.motion[:, 12:15], axis=-1), atol=1e-12)


def test_walk_rest_matches_offsets():
    clip = load_bvh(WALK)
    motion = clip.to_source_motion()
    np.testing.assert_allclose(motion.rest_heads[2], AXIS_MAP @ (clip.offsets[1] + clip.offsets[2]))
    # Heads are rigidly separated by the offset length at every frame.
    d = np.linalg.norm(motion.heads[:, 3] - motion.heads[:, 2], axis=-1)
    np.testing.assert_allclose(d, np.linalg.norm(clip.offsets[3]), atol=1e-9)
    rot = motion.root_rotation
    np.testing.assert_allclose(rot @ np.swapaxes(rot, -1, -2), np.broadcast_to(np.eye(3), rot.shape),
                               atol=1e-12)


# ---------------------------------------------------------------- Blender agrees


def _blender_import(path: Path, scale: float):
    """Import with Blender's own BVH importer (defaults, except scale) into an empty scene."""
    bpy = pytest.importorskip("bpy")
    bpy.ops.wm.read_factory_settings(use_empty=True)
    result = bpy.ops.import_anim.bvh(filepath=str(path), global_scale=scale)
    assert result == {"FINISHED"}
    arms = [ob for ob in bpy.context.scene.objects if ob.type == "ARMATURE"]
    assert len(arms) == 1
    return bpy, arms[0]


@pytest.mark.parametrize("which", ["walk", "hop", "odd_rig", "odd_rig_tiny"])
def test_matches_blender_importer(tmp_path, which):
    # odd_rig_tiny: at this scale the 0.1-unit stub bones are under 1 mm, which
    # triggers the importer's second (edit-bone) zero-length rule.
    path, scale = {"walk": (WALK, 1.0), "hop": (HOP, HOP_SCALE),
                   "odd_rig": (None, 1.0), "odd_rig_tiny": (None, 0.004)}[which]
    if path is None:
        path = _odd_bvh(tmp_path)
    motion = load_bvh(path).to_source_motion(scale=scale)
    atol = 1e-4 * min(scale, 1.0)
    bpy, arm = _blender_import(path, scale)
    world = arm.matrix_world
    names = [b.name for b in arm.data.bones]
    assert sorted(names) == sorted(motion.bone_names)

    rest_heads = np.array([world @ arm.data.bones[n].head_local for n in motion.bone_names])
    rest_tails = np.array([world @ arm.data.bones[n].tail_local for n in motion.bone_names])
    np.testing.assert_allclose(motion.rest_heads, rest_heads, atol=atol)
    np.testing.assert_allclose(motion.rest_tails, rest_tails, atol=atol)

    scene = bpy.context.scene
    last = motion.frames - 1
    for bvh_frame in sorted({0, 1, last // 3, last // 2, last}):
        scene.frame_set(bvh_frame + 1)  # Blender frame 1 holds BVH frame 0
        pose = arm.pose.bones
        heads = np.array([world @ pose[n].head for n in motion.bone_names])
        tails = np.array([world @ pose[n].tail for n in motion.bone_names])
        np.testing.assert_allclose(motion.heads[bvh_frame], heads, atol=atol,
                                   err_msg=f"{which} heads, BVH frame {bvh_frame}")
        np.testing.assert_allclose(motion.tails[bvh_frame], tails, atol=atol,
                                   err_msg=f"{which} tails, BVH frame {bvh_frame}")
