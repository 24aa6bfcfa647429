"""Contacts in the real bpy module: Detect / Set / Clear Contacts (operators/contacts.py), the
bake planting what the source's channels say, and `bake --contacts` through cli.main in-process.

The flow is the user's: import the walk and the G1, pick them, Auto-Map,
Detect Contacts (keys on the source), edit, Bake. The bake's keys are
compared with core.retarget.pipeline on the same frames read from the BVH file.
"""
from __future__ import annotations

import dataclasses
import importlib
import json
from pathlib import Path

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

ROOT = Path(__file__).resolve().parents[2]
WALK = ROOT / "data" / "motion" / "cmu_131_01_walk_m.bvh"
G1 = ROOT / "data" / "robots" / "g1" / "unitree_g1_29dof.urdf"
FIRST, LAST = 1, 120  # Blender frames baked (clip frames 0-119)
Q_TOL = 3e-4  # rad: float32 keys, and the sampled clip vs the BVH reader (~1e-6), which the 3-joint wrists
#               (weakly determined) turn into up to ~1.3e-4 (see test_bake.py)


@pytest.fixture
def mods(extension):
    name = extension.__name__
    mod = lambda sub: importlib.import_module(f"{name}.{sub}")  # noqa: E731
    return {"ops": mod("operators.contacts"), "bake": mod("operators.retarget"), "props": mod("props"),
            "anim_io": mod("operators.anim_io"), "rig": mod("core.model.rig"), "bvh": mod("core.motion.bvh"),
            "retarget": mod("core.retarget.pipeline"), "contacts": mod("core.feet.contacts"), "kin": mod("core.model.kinematics"),
            "urdf": mod("core.model.urdf"), "automap": mod("core.retarget.automap"), "cli": extension.cli}


def _bake(mods, rig) -> tuple[np.ndarray, np.ndarray, dict]:
    """Bake; (root location+quaternion (F, 7), q (F, n), report) as keyed."""
    assert bpy.ops.robot_retarget.bake() == {'FINISHED'}
    layout = mods["rig"].rig_layout(mods["kin"].KinematicTree(mods["urdf"].parse_urdf(G1)))
    root = layout.root.name
    channels = ([(f'pose.bones["{root}"].location', i) for i in range(3)]
                + [(f'pose.bones["{root}"].rotation_quaternion', i) for i in range(4)]
                + [(f'pose.bones["{b}"].{p}', i) for b, p, i in layout.joint_channels])
    adt = rig.animation_data
    _, values = mods["anim_io"].read_channels(adt.action, adt.action_slot, channels)
    return values[:, :7], values[:, 7:], json.loads(adt.action[mods["bake"].REPORT_PROPERTY])


def _core(mods, settings, contacts):
    """core.retarget.pipeline of the same frames read from the BVH file (Blender frame f = BVH frame f - 1);
    "auto": the whole clip's contacts cut to them, as the bake reads a range of a longer action."""
    motion = mods["bvh"].load_bvh(WALK).to_source_motion()
    if isinstance(contacts, str) and contacts == "auto":
        contacts = _whole_clip_contacts(mods, settings, motion)
    keep = slice(FIRST - 1, LAST)
    motion = dataclasses.replace(motion, heads=motion.heads[keep], tails=motion.tails[keep],
                                 root_rotation=motion.root_rotation[keep])
    tree = mods["kin"].KinematicTree(mods["urdf"].parse_urdf(G1))
    return mods["retarget"].retarget(motion, tree, mods["props"].mapping_from_settings(settings),
                                     contacts=contacts), motion


def _whole_clip_contacts(mods, settings, motion):
    """Contacts detected on the whole walk (995 frames), cut to the baked frames."""
    whole = mods["contacts"].detect_contacts(motion, mods["props"].mapping_from_settings(settings))
    return whole.sliced(FIRST - 1, LAST)


def test_detect_contacts_keys_the_source(clean_scene, mods, walk_on_g1):
    settings, source, _ = walk_on_g1((FIRST, LAST))
    before = len(source.animation_data.action.slots)
    assert bpy.ops.robot_retarget.detect_contacts() == {'FINISHED'}
    frames = np.arange(FIRST, LAST + 1.0)
    stored = mods["ops"].read_contacts(source, frames, 120.0)
    # read on the whole action, as the bake reads a range of it: where a range begins does not move its contacts
    expected = _whole_clip_contacts(mods, settings, mods["bvh"].load_bvh(WALK).to_source_motion())
    for side in ("left", "right"):
        np.testing.assert_array_equal(stored.feet[side], expected.feet[side])
        fcurve = mods["ops"].contact_channel(source, side)
        assert all(p.interpolation == 'CONSTANT' for p in fcurve.keyframe_points)
        # one key on the first frame, then one where the foot touches down or lifts off
        assert len(fcurve.keyframe_points) == 1 + np.count_nonzero(np.diff(expected.feet[side]))
    assert any(stored.feet["right"]) and any(stored.feet["left"])
    assert len(source.animation_data.action.slots) == before  # keyed in the clip's own slot


def test_where_a_range_begins_does_not_move_its_contacts(clean_scene, mods, walk_on_g1):
    """Detect Contacts (and a bake's "auto") on Blender frames 5-300 read the whole action, as on frames
    1-995: detected on the range alone, its ground level (a percentile over the range) began a left
    contact 7 frames earlier (clip frames 255-261)."""
    settings, source, _ = walk_on_g1((5, 300))
    assert bpy.ops.robot_retarget.detect_contacts() == {'FINISHED'}
    part = mods["ops"].read_contacts(source, np.arange(5, 301.0), 120.0)
    clean_scene.frame_start, clean_scene.frame_end = 1, 995
    assert bpy.ops.robot_retarget.detect_contacts() == {'FINISHED'}
    whole = mods["ops"].read_contacts(source, np.arange(5, 301.0), 120.0)
    for side in ("left", "right"):
        np.testing.assert_array_equal(part.feet[side], whole.feet[side], err_msg=side)
    motion, contacts = mods["ops"].sample_range(clean_scene, source, mods["props"].mapping_from_settings(settings),
                                                5, 300, "auto")
    assert motion.frames == 296
    for side in ("left", "right"):
        np.testing.assert_array_equal(contacts.feet[side], whole.feet[side], err_msg=side)


def test_a_range_of_a_long_take_reads_a_minute_around_it(clean_scene, mods, walk_on_g1):
    """Sampling the scene costs ~0.7 ms a frame: a range of an hour's take reads at most CONTEXT_S either
    side for its contacts (else 5 minutes for a 1 s bake), and a short take whole."""
    _, source, _ = walk_on_g1((5, 300))
    span = mods["ops"]._span
    assert span(clean_scene, source, 5, 300) == (1, 995)  # the walk: all of it
    from bpy_extras.anim_utils import action_get_channelbag_for_slot

    curve = action_get_channelbag_for_slot(source.animation_data.action, source.animation_data.action_slot).fcurves[0]
    curve.keyframe_points.insert(432_000, curve.keyframe_points[-1].co[1])  # the take now lasts an hour
    context = int(np.ceil(mods["ops"].CONTEXT_S * clean_scene.render.fps / clean_scene.render.fps_base))
    assert abs(context - 7200) <= 1  # the walk's 120 fps
    assert span(clean_scene, source, 200_000, 200_120) == (200_000 - context, 200_120 + context)
    assert span(clean_scene, source, 5, 300) == (1, 300 + context)


def test_bake_plants_what_the_channels_say(clean_scene, mods, walk_on_g1):
    settings, source, rig = walk_on_g1((FIRST, LAST))
    _, q_auto, report = _bake(mods, rig)
    assert report["feet_planted"] is True  # no channels yet: contacts detected on the fly
    assert mods["ops"].read_contacts(source, np.arange(FIRST, LAST + 1.0), 120.0) is None  # source untouched
    core_auto, _ = _core(mods, settings, "auto")
    np.testing.assert_allclose(q_auto, core_auto.q, rtol=0, atol=1e-3)
    settings.plant_feet = False
    _, q_plain, report = _bake(mods, rig)
    assert report["feet_planted"] is False
    core_plain, _ = _core(mods, settings, "off")
    np.testing.assert_allclose(q_plain, core_plain.q, rtol=0, atol=Q_TOL)
    settings.plant_feet = True

    assert bpy.ops.robot_retarget.detect_contacts() == {'FINISHED'}
    root, q, report = _bake(mods, rig)
    assert report["feet_planted"] is True
    for key in ("foot_slide_pct", "foot_slide_mean_m_s", "ground_penetration_pct", "contact_preserved_pct"):
        assert isinstance(report[key], float), key
    assert report["contact_preserved_pct"] >= 95.0 and report["ground_penetration_pct"] == 0.0
    stored = mods["ops"].read_contacts(source, np.arange(FIRST, LAST + 1.0), 120.0)
    core, _ = _core(mods, settings, stored)
    np.testing.assert_allclose(q, core.q, rtol=0, atol=1e-3)
    assert np.abs(q - q_plain).max() > 0.01

    settings.plant_feet = False  # the switch restores the plain bake exactly
    _, q_off, report = _bake(mods, rig)
    assert report["feet_planted"] is False
    np.testing.assert_array_equal(q_off, q_plain)


def test_edited_contacts_change_the_bake(clean_scene, mods, walk_on_g1):
    settings, source, rig = walk_on_g1((FIRST, LAST))
    assert bpy.ops.robot_retarget.detect_contacts() == {'FINISHED'}
    frames = np.arange(FIRST, LAST + 1.0)
    detected = mods["ops"].read_contacts(source, frames, 120.0)
    _, q_detected, _ = _bake(mods, rig)
    start, end = detected.intervals("left")[0]
    middle = FIRST + (start + end) // 2
    clean_scene.frame_set(middle)
    assert bpy.ops.robot_retarget.set_contact(side="left", down=False) == {'FINISHED'}
    edited = mods["ops"].read_contacts(source, frames, 120.0)
    assert not edited.feet["left"][middle - FIRST:end].any()
    np.testing.assert_array_equal(edited.feet["left"][:middle - FIRST], detected.feet["left"][:middle - FIRST])
    _, q_edited, _ = _bake(mods, rig)
    assert np.abs(q_edited[middle - FIRST:end] - q_detected[middle - FIRST:end]).max() > 0.01

    assert bpy.ops.robot_retarget.clear_contacts() == {'FINISHED'}
    assert not mods["ops"].has_contacts(source)
    assert mods["ops"].read_contacts(source, frames, 120.0) is None


def test_detect_needs_a_source(clean_scene, mods):
    with pytest.raises(RuntimeError, match="pick a source"):
        bpy.ops.robot_retarget.detect_contacts()


# ----------------------------------------------------------------- the CLI ---

def _cli(mods, capsys, tmp_path, name, *extra) -> tuple[int, str, dict | None, np.ndarray | None]:
    out, report = tmp_path / f"{name}.csv", tmp_path / f"{name}.json"
    code = mods["cli"].main(["bake", "--source", str(WALK), "--robot", str(G1), "--frames", "0:120",
                             "--out", str(out), "--report", str(report), *map(str, extra)])
    err = capsys.readouterr().err
    if code:
        return code, err, None, None
    data = np.loadtxt(out, delimiter=",", skiprows=1)
    return code, err, json.loads(report.read_text(encoding="utf-8")), data


def test_cli_contacts_off_auto_and_file(extension, clean_scene, mods, capsys, tmp_path):
    code, err, auto, auto_csv = _cli(mods, capsys, tmp_path, "auto")  # the default
    assert code == 0, err
    assert auto["feet_planted"] is True and auto["contact_preserved_pct"] >= 95.0
    code, err, off, off_csv = _cli(mods, capsys, tmp_path, "off", "--contacts", "off")
    assert code == 0, err
    assert off["feet_planted"] is False and off["foot_slide_pct"] > auto["foot_slide_pct"]
    assert np.abs(auto_csv[:, 8:] - off_csv[:, 8:]).max() > 0.01

    none = mods["contacts"].Contacts({"left": np.zeros(995, bool), "right": np.zeros(995, bool)}, 120.0048)
    path = none.save(tmp_path / "none.json")
    code, err, empty, empty_csv = _cli(mods, capsys, tmp_path, "empty", "--contacts", path)
    assert code == 0, err
    np.testing.assert_array_equal(empty_csv, off_csv)  # no contacts in the file: the plain bake

    motion = mods["bvh"].load_bvh(WALK).to_source_motion()
    tree = mods["kin"].KinematicTree(mods["urdf"].parse_urdf(G1))
    clip = mods["contacts"].detect_contacts(motion, mods["automap"].auto_map(motion, tree))
    path = clip.save(tmp_path / "walk.json")
    code, err, from_file, file_csv = _cli(mods, capsys, tmp_path, "file", "--contacts", path)
    assert code == 0, err
    assert from_file["feet_planted"] is True and from_file["contact_preserved_pct"] >= 95.0
    assert np.abs(file_csv[:, 8:] - off_csv[:, 8:]).max() > 0.01


@pytest.mark.parametrize("content, words", [
    (None, ["no_such.json", "not found"]),
    ('{"format": "robot_retarget.contacts", "version": 1, "fps": 120.0048, "feet": {"left": [[0, 5000]]}}',
     ["contacts.json", "feet.left[0]", "995 frames"]),
    ('{"format": "robot_retarget.contacts", "version": 1, "fps": 30, "feet": {}}', ["contacts.json", "30 fps"]),
])
def test_cli_bad_contacts_file(extension, clean_scene, mods, capsys, tmp_path, content, words):
    path = tmp_path / ("no_such.json" if content is None else "contacts.json")
    if content is not None:
        path.write_text(content, encoding="utf-8")
    code, err, _, _ = _cli(mods, capsys, tmp_path, "bad", "--contacts", path)
    assert code == 1
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("robot-retarget: error: "), err
    for word in words:
        assert word in lines[0], lines[0]
    assert not (tmp_path / "bad.csv").exists()
