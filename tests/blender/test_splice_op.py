"""Splice Strips (operators/splice.py) and `robot-retarget splice` in the real bpy module.

Two short bakes onto the G1 (0.8 s of the CMU walk and of the hop, 120 fps)
become NLA strips of the rig; the operator must put them on a new track,
trimmed and back to back with the transitions between them, and what plays
there must be exactly the core splice of the same clips. Undo takes it all
back; the originals are never modified. The launcher runs the CLI once, on
short slices of the two BVH files written here.
"""
from __future__ import annotations

import importlib
import json
import os
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

ROOT = Path(__file__).resolve().parents[2]
WALK = ROOT / "data" / "motion" / "cmu_131_01_walk_m.bvh"
HOP = ROOT / "tests" / "data" / "motion" / "cmu_131_03_hop.bvh"
G1 = ROOT / "data" / "robots" / "g1" / "unitree_g1_29dof.urdf"
LAUNCHER = ROOT / "tools" / "robot-retarget"
ROOT_HEADER = "time_s,root_x,root_y,root_z,root_qw,root_qx,root_qy,root_qz"
JOIN_KEYS = {"a_time_s", "b_time_s", "angle_difference_deg", "transition_s", "discarded_s", "criteria_met"}
FRAMES = 96        # per baked clip (0.8 s)
HOP_AT = 200       # where the hop strip starts on the NLA
KEY_TOL = 1e-4     # rad / m: keys are float32


@pytest.fixture
def mods(extension):
    name = extension.__name__
    return {sub: importlib.import_module(f"{name}.{sub}") for sub in
            ("operators.splice", "operators.retarget", "operators.anim_io", "core.splice.join", "core.model.rig",
             "operators.import_urdf", "operators.common")}


def _import(path: Path) -> bpy.types.Object:
    before = set(bpy.data.objects)
    assert bpy.ops.import_anim.bvh(filepath=str(path), update_scene_fps=True) == {'FINISHED'}
    return next(o for o in bpy.data.objects if o not in before and o.type == 'ARMATURE')


def baked_strips(scene, mods):
    """The rig with two baked actions as NLA strips (walk at frame 1, hop at HOP_AT), both selected.

    Markers: the walk's main movement ends at action frame 60 and the hop's
    starts at 40, so the join is searched in the last 0.3 s of the walk and
    the first 0.33 s of the hop.
    """
    op = mods["operators.retarget"]
    clips = [_import(WALK), _import(HOP)]
    assert bpy.ops.robot_retarget.import_urdf(filepath=str(G1), import_meshes=False) == {'FINISHED'}
    rig = bpy.context.view_layer.objects.active
    actions = []
    for source, name in zip(clips, ("walk", "hop")):
        mapping = op.auto_map_objects(source, rig, scene)
        actions.append(op.bake_action(scene, source, rig, mapping, 1, FRAMES, action_name=f"G1 {name}").action)
    walk, hop = actions
    walk.pose_markers.new("main_end").frame = 60
    walk.pose_markers.new("main_start").frame = 20
    hop.pose_markers.new("main_start").frame = 40
    track = rig.animation_data.nla_tracks.new()
    track.name = "takes"
    strips = [track.strips.new("walk", 1, walk), track.strips.new("hop", HOP_AT, hop)]
    for strip in strips:
        strip.select = True
    return rig, strips


def joint_paths(mods, rig):
    tree = mods["operators.common"].tree_from_rig(rig)
    layout = mods["core.model.rig"].rig_layout(tree)
    return tree, layout, [(f'pose.bones["{b}"].{p}', i) for b, p, i in layout.joint_channels]


def action_keys(mods, action, paths) -> np.ndarray:
    return mods["operators.anim_io"].read_channels(action, action.slots[0], paths)[1]


def core_result(mods, rig, strips):
    """The core splice of the same strips, read through the operator's own reader."""
    ops = mods["operators.splice"]
    tree, layout, _ = joint_paths(mods, rig)
    fps = bpy.context.scene.render.fps / bpy.context.scene.render.fps_base
    clips = [ops.strip_clip(s, layout, fps)[0] for s in strips]
    return mods["core.splice.join"].splice(clips, None, tree.joint_names, tree.lower, tree.upper, tree.velocity)


def test_splice_strips_on_the_nla(clean_scene, mods):
    rig, strips = baked_strips(clean_scene, mods)
    tree, layout, paths = joint_paths(mods, rig)
    walk, hop = (s.action for s in strips)
    before = {a.name: action_keys(mods, a, paths) for a in (walk, hop)}
    expected = core_result(mods, rig, strips)
    rig_name = rig.name
    bpy.ops.ed.undo_push(message="takes")

    assert bpy.ops.robot_retarget.splice_strips('EXEC_DEFAULT', True) == {'FINISHED'}
    rig = bpy.data.objects[rig_name]
    track = rig.animation_data.nla_tracks[-1]
    assert track.name == "Splice" and len(rig.animation_data.nla_tracks) == 2
    new = list(track.strips)
    assert [s.action.name for s in new] == ["G1 walk", f"{rig_name}|transition 1", "G1 hop|spliced"]
    assert rig.animation_data.action is None  # the last bake stepped aside for the NLA
    for left, right in zip(new, new[1:]):  # back to back
        assert right.frame_start == left.frame_end
    join = expected.joins[0]
    a_frame, b_frame = round(join.a_time_s * expected.fps), round(join.b_time_s * expected.fps)
    assert 59 <= a_frame <= FRAMES - 1 and 0 <= b_frame <= 39  # inside the marked windows
    assert (new[0].action_frame_start, new[0].action_frame_end) == (1, 1 + a_frame)  # trimmed
    assert (new[2].action_frame_start, new[2].action_frame_end) == (1 + b_frame, FRAMES)
    assert new[1].frame_end - new[1].frame_start == pytest.approx(join.transition_s * expected.fps)
    assert all(s.mute for s in bpy.data.objects[rig_name].animation_data.nla_tracks["takes"].strips)

    report = json.loads(rig["robot_retarget_splice"])
    assert len(report["joins"]) == 1 and JOIN_KEYS <= set(report["joins"][0])
    for key in ("a_time_s", "b_time_s", "angle_difference_deg", "transition_s", "discarded_s", "time_saved_s"):
        assert report["joins"][0][key] == pytest.approx(getattr(join, key)), key
    assert report["joins"][0]["criteria_met"] == join.criteria_met
    for name, keys in before.items():  # the originals are untouched
        assert np.array_equal(action_keys(mods, bpy.data.actions[name], paths), keys)

    # The chosen pair is marked where it plays on the new track.
    scene = bpy.context.scene
    n = round(join.transition_s * expected.fps)
    marks = {m.name: m.frame for m in scene.timeline_markers}
    assert marks == {f"Splice 1: walk {join.a_time_s:.2f} s": 1 + a_frame,
                     f"Splice 1: hop {join.b_time_s:.2f} s": 1 + a_frame + n}

    # What plays on the NLA is the core result, frame by frame.
    bones = [(b, p, i) for b, p, i in layout.joint_channels]
    for k in list(range(0, len(expected.q), 7)) + [a_frame, a_frame + 1, len(expected.q) - 1]:
        scene.frame_set(1 + k)
        played = [getattr(rig.pose.bones[b], p)[i] for b, p, i in bones]
        np.testing.assert_allclose(played, expected.q[k], rtol=0, atol=KEY_TOL, err_msg=f"frame {k}")

    assert bpy.ops.ed.undo() == {'FINISHED'}
    rig = bpy.data.objects[rig_name]
    assert [t.name for t in rig.animation_data.nla_tracks] == ["takes"]
    assert not any(s.mute for s in rig.animation_data.nla_tracks["takes"].strips)
    assert f"{rig_name}|transition 1" not in bpy.data.actions and "G1 hop|spliced" not in bpy.data.actions
    assert len(bpy.context.scene.timeline_markers) == 0  # the join markers go with it


def test_bake_into_one_action(clean_scene, mods):
    rig, strips = baked_strips(clean_scene, mods)
    _, layout, paths = joint_paths(mods, rig)
    expected = core_result(mods, rig, strips)
    clean_scene.robot_retarget_splice.bake = True
    assert bpy.ops.robot_retarget.splice_strips() == {'FINISHED'}
    track = rig.animation_data.nla_tracks["Splice"]
    assert len(track.strips) == 1
    action = track.strips[0].action
    assert action.name == f"{rig.name}|splice"
    np.testing.assert_allclose(action_keys(mods, action, paths), expected.q, rtol=0, atol=KEY_TOL)
    root = layout.root.name
    location = mods["operators.anim_io"].read_channels(
        action, action.slots[0], [(f'pose.bones["{root}"].location', i) for i in range(3)])[1]
    assert np.linalg.norm(np.diff(location, axis=0), axis=1).max() < 0.03  # root carries on, no jump
    assert json.loads(action["robot_retarget_splice"])["frames"] == len(expected.q)


def test_bad_selection_is_named(clean_scene, mods):
    rig, strips = baked_strips(clean_scene, mods)
    strips[1].select = False
    with pytest.raises(RuntimeError, match="only strip 'walk' of .* is selected"):
        bpy.ops.robot_retarget.splice_strips()
    strips[1].select = True
    strips[1].use_reverse = True
    with pytest.raises(RuntimeError, match="strip 'hop' plays reversed; turn off Reversed"):
        bpy.ops.robot_retarget.splice_strips()
    assert len(rig.animation_data.nla_tracks) == 1 and not bpy.context.scene.timeline_markers  # nothing made


def _played(rig, layout, frames) -> np.ndarray:
    """(len(frames), joints) joint values the NLA plays at scene `frames`."""
    out = []
    for frame in frames:
        bpy.context.scene.frame_set(int(frame))
        out.append([getattr(rig.pose.bones[b], p)[i] for b, p, i in layout.joint_channels])
    return np.array(out)


def test_a_second_run_replaces_its_own_track(clean_scene, mods):
    """Re-run on the original (muted) strips with other settings: one Splice track, the earlier
    run's actions and markers gone, the user's track and actions untouched."""
    rig, strips = baked_strips(clean_scene, mods)
    assert bpy.ops.robot_retarget.splice_strips() == {'FINISHED'}
    first = json.loads(rig["robot_retarget_splice"])["joins"][0]
    for strip in rig.animation_data.nla_tracks["Splice"].strips:
        strip.select = False
    for strip in strips:
        strip.select = True
    with pytest.raises(RuntimeError, match="on the track 'Splice' an earlier splice made"):
        rig.animation_data.nla_tracks["Splice"].strips[0].select = True
        bpy.ops.robot_retarget.splice_strips()
    rig.animation_data.nla_tracks["Splice"].strips[0].select = False
    clean_scene.robot_retarget_splice.policy = "similar"
    clean_scene.robot_retarget_splice.linear = True
    assert bpy.ops.robot_retarget.splice_strips() == {'FINISHED'}
    second = json.loads(rig["robot_retarget_splice"])["joins"][0]
    assert second["transition_shape"] == "linear" and first["transition_shape"] == "eased"
    assert [t.name for t in rig.animation_data.nla_tracks] == ["takes", "Splice"]
    assert "G1 walk" in bpy.data.actions and "G1 hop" in bpy.data.actions
    assert len([a for a in bpy.data.actions if "transition" in a.name]) == 1  # the first run's is removed
    assert [a.name for a in bpy.data.actions if a.name.startswith("G1 hop|")] == ["G1 hop|spliced"]
    names = sorted(m.name for m in clean_scene.timeline_markers)
    assert names == sorted([f"Splice 1: walk {second['a_time_s']:.2f} s", f"Splice 1: hop {second['b_time_s']:.2f} s"])

    # A track of the user's that happens to be called Splice is not taken for an earlier run's.
    rig.animation_data.nla_tracks["Splice"].name = "mine"
    user = rig.animation_data.nla_tracks.new()
    user.name = "Splice"
    user.strips.new("pose", 500, bpy.data.actions["G1 walk"])
    for track in rig.animation_data.nla_tracks:
        for strip in track.strips:
            strip.select = track.name == "takes"
    for _ in range(2):  # the second time, the track the first of these runs made is replaced
        assert bpy.ops.robot_retarget.splice_strips() == {'FINISHED'}
        for track in rig.animation_data.nla_tracks:
            for strip in track.strips:
                strip.select = track.name == "takes"
        tracks = rig.animation_data.nla_tracks
        assert [t.name for t in tracks] == ["takes", "mine", "Splice", "Splice"]  # the user's, then ours
        assert [s.name for s in tracks[2].strips] == ["pose"] and len(tracks[3].strips) == 3


def test_pick_another_candidate_pair(clean_scene, mods):
    """The redo panel lists each join's candidates; picking the second one splices there."""
    rig, strips = baked_strips(clean_scene, mods)
    expected = core_result(mods, rig, strips)
    candidates = expected.joins[0].candidates
    assert len(candidates) >= 2 and candidates[0]["a_time_s"] == expected.joins[0].a_time_s
    picks = (2,) + (1,) * 7
    assert bpy.ops.robot_retarget.splice_strips('EXEC_DEFAULT', picks=picks) == {'FINISHED'}
    join = json.loads(rig["robot_retarget_splice"])["joins"][0]
    assert join["pick"] == 1
    assert (join["a_time_s"], join["b_time_s"]) == (pytest.approx(candidates[1]["a_time_s"]),
                                                    pytest.approx(candidates[1]["b_time_s"]))
    track = rig.animation_data.nla_tracks["Splice"]
    a_frame = round(join["a_time_s"] * expected.fps)
    assert track.strips[0].action_frame_end == 1 + a_frame  # walk trimmed at the picked posture

    from .test_panels import RecordingLayout  # the redo panel draws the list and the picker

    operator = mods["operators.splice"].ROBOT_RETARGET_OT_splice_strips
    log: list = []
    rna = bpy.ops.robot_retarget.splice_strips.get_rna_type()
    props = SimpleNamespace(layout=RecordingLayout(log, bpy.context), picks=picks, bl_rna=rna,
                            candidates_json=json.dumps([{"a_clip": "walk", "b_clip": "hop",
                                                         "candidates": join["candidates"]}]))
    operator.draw(props, bpy.context)
    labels = [d for kind, d in log if kind == "label"]
    assert labels[0] == "Join 1: walk -> hop" and len(labels) == 1 + len(join["candidates"])
    assert labels[2].startswith(f"2. {join['a_time_s']:.2f} s -> {join['b_time_s']:.2f} s")
    assert ("prop", "SimpleNamespace.picks") in log


def test_scaled_and_repeated_strips_are_played_as_the_nla_plays_them(clean_scene, mods):
    """The hop strip at scale 2 (twice as long) and the walk strip repeated twice: each is read as
    it plays, its kept part becomes a new action, and the Splice track plays the core result."""
    rig, strips = baked_strips(clean_scene, mods)
    walk, hop = strips
    walk.repeat = 2.0  # 1-191, still before the hop at HOP_AT
    hop.scale = 2.0
    tree, layout, paths = joint_paths(mods, rig)
    ops = mods["operators.splice"]
    clips = [ops.strip_clip(s, layout, 120.0)[0] for s in strips]
    assert clips[0].frames == 2 * (FRAMES - 1) + 1 and clips[1].frames == 2 * (FRAMES - 1) + 1
    hop_keys = action_keys(mods, hop.action, paths)
    np.testing.assert_allclose(clips[1].q[::2], hop_keys, atol=KEY_TOL)  # every second frame is a key
    np.testing.assert_allclose(clips[0].q[FRAMES - 1:], action_keys(mods, walk.action, paths), atol=KEY_TOL)
    assert clips[0].markers == {"main_start": 19.0, "main_end": 59.0 + FRAMES - 1}  # end in the last repeat
    assert clips[1].markers == {"main_start": 78.0}
    expected = core_result(mods, rig, strips)
    assert bpy.ops.robot_retarget.splice_strips() == {'FINISHED'}
    new = list(rig.animation_data.nla_tracks["Splice"].strips)
    assert [s.action.name for s in new] == ["G1 walk|played", f"{rig.name}|transition 1", "G1 hop|played"]
    frames = list(range(0, len(expected.q), 11)) + [len(expected.q) - 1]
    np.testing.assert_allclose(_played(rig, layout, [1 + k for k in frames]), expected.q[frames], atol=KEY_TOL)
    assert hop.scale == 2.0 and walk.repeat == 2.0 and hop.mute  # the originals are only muted


def test_panel_ranges_are_the_core_ranges(mods):
    """What the panel accepts is what core accepts, so a suggested threshold can always be typed in."""
    from_core = importlib.import_module(mods["operators.splice"].__name__.replace("operators.splice",
                                                                                   "core.splice.settings"))
    props = mods["operators.splice"].RobotRetargetSpliceSettings.bl_rna.properties
    for name, criterion in (("threshold_deg", "integrated"), ("mean_deg", "mean"), ("max_joint_deg", "max_joint")):
        assert (props[name].hard_min, props[name].hard_max) == pytest.approx(from_core.THRESHOLD_RANGE[criterion])


def test_panel_shows_every_splice_setting(clean_scene, extension):
    """Each setting appears in the Robot tab for the criterion, detector and speed options that use it."""
    from .test_panels import draw_panel

    panel = importlib.import_module(f"{extension.__name__}.panels.splice_panel").ROBOT_RETARGET_PT_splice
    props = clean_scene.robot_retarget_splice
    shown = set()
    for criterion, detector, auto, confirm, match_speed in (
            ("integrated", "reversal", False, True, True), ("mean", "accumulated", True, True, False),
            ("max_joint", "accumulated", True, False, False), ("integrated", "fixed", True, True, False)):
        props.criterion, props.detector, props.auto_threshold = criterion, detector, auto
        props.confirm, props.match_speed, props.accumulated_margin = confirm, match_speed, not confirm
        shown |= {d.split(".")[-1] for kind, d in draw_panel(panel, bpy.context) if kind == "prop"}
    wanted = {name for name in props.bl_rna.properties.keys() if name not in ("rna_type", "name", "speed")}
    assert wanted <= shown, wanted - shown


# ------------------------------------------------------------------ CLI ---

def _bvh_slice(path: Path, first: int, count: int, out: Path) -> Path:
    """A copy of `path` with frames [first, first + count) only."""
    lines = path.read_text(encoding="utf-8").splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("Frames:"))
    body = lines[at + 2:][first:first + count]
    out.write_text("\n".join(lines[:at] + [f"Frames: {len(body)}", lines[at + 1]] + body) + "\n", encoding="utf-8")
    return out


def test_cli_splice(tmp_path):
    walk = _bvh_slice(WALK, 0, 180, tmp_path / "walk.bvh")
    hop = _bvh_slice(HOP, 300, 180, tmp_path / "hop.bvh")
    out, report_path = tmp_path / "spliced.csv", tmp_path / "spliced.json"
    env = {k: v for k, v in os.environ.items() if k != "BLENDER_USER_RESOURCES"}
    proc = subprocess.run([str(LAUNCHER), "splice", "--robot", str(G1), "--source", str(walk), "--source", str(hop),
                           "--threshold-deg", "20", "--policy", "similar", "--out", str(out),
                           "--report", str(report_path)], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=900)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-1] == f"wrote {out} and {report_path}"

    joints = [j.get("name") for j in ET.parse(G1).getroot().iter("joint")
              if j.get("type") in ("revolute", "continuous", "prismatic")]
    lines = out.read_text(encoding="utf-8").splitlines()
    assert lines[0] == ROOT_HEADER + "," + ",".join(joints)
    data = np.array([[float(v) for v in line.split(",")] for line in lines[1:]])
    report = json.loads(report_path.read_text(encoding="utf-8"))
    assert data.shape == (report["frames"], 8 + len(joints))
    np.testing.assert_array_equal(data[:, 0], np.arange(len(data)) / report["fps"])
    assert len(report["joins"]) == 1
    join = report["joins"][0]
    assert JOIN_KEYS <= set(join) and isinstance(join["criteria_met"], bool)
    assert join["a_clip"] == "walk" and join["b_clip"] == "hop"
    kept = 180 - round(join["a_time_s"] * report["fps"]) - 1 + round(join["b_time_s"] * report["fps"])
    assert report["frames"] == 2 * 180 - kept + round(join["transition_s"] * report["fps"]) - 1
    assert np.linalg.norm(np.diff(data[:, 1:4], axis=0), axis=1).max() < 0.05  # no root jump at the seam


def _bvh_every_other(path: Path, first: int, count: int, out: Path) -> Path:
    """Frames [first, first + count) of `path`, every second one, at half the frame rate."""
    lines = path.read_text(encoding="utf-8").splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("Frames:"))
    frame_time = float(lines[at + 1].split(":")[1]) * 2
    body = lines[at + 2:][first:first + count:2]
    out.write_text("\n".join(lines[:at] + [f"Frames: {len(body)}", f"Frame Time: {frame_time:.7f}"] + body) + "\n",
                   encoding="utf-8")
    return out


def test_cli_splice_steering_flags(tmp_path):
    """A 120 fps walk and a 60 fps hop at --fps 60; the walk's main movement given by --main, the
    rest from fixed windows; the mean criterion, the direction condition, a linear transition, and
    the second candidate pair picked."""
    walk = _bvh_slice(WALK, 0, 180, tmp_path / "walk.bvh")
    hop = _bvh_every_other(HOP, 300, 180, tmp_path / "hop60.bvh")
    out, report_path = tmp_path / "spliced.csv", tmp_path / "spliced.json"
    env = {k: v for k, v in os.environ.items() if k != "BLENDER_USER_RESOURCES"}
    base = [str(LAUNCHER), "splice", "--robot", str(G1), "--source", str(walk), "--source", str(hop)]
    bad = subprocess.run(base + ["--main", "0.5:", "--out", str(out)], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=300)
    assert bad.returncode == 1 and "1 --main for 2 --source clips" in bad.stderr and not out.exists()
    flags = ["--main", "0.5:", "--main", "auto", "--fps", "60", "--detector", "fixed", "--window-s", "0.4",
             "--criterion", "mean", "--mean-deg", "20", "--direction", "--linear", "--speed-statistic", "mean",
             "--pick", "2", "--out", str(out), "--report", str(report_path)]
    proc = subprocess.run(base + flags, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(report_path.read_text(encoding="utf-8"))
    assert report["fps"] == 60.0
    assert [(r["clip"], round(r["from_fps"]), r["to_fps"]) for r in report["resampled"]] == [("walk", 120, 60.0)]
    assert "clip 'walk' resampled from 120.0" in proc.stderr and " to 60 fps" in proc.stderr
    walk_clip, hop_clip = report["clips"]
    assert walk_clip["main_start_s"] == pytest.approx(0.5) and walk_clip["source"] == "markers+fixed"
    assert walk_clip["main_end_s"] == pytest.approx((89 - 24) / 60)  # 90 frames at 60 fps, 0.4 s window
    assert hop_clip == {"name": "hop60", "main_start_s": pytest.approx(0.4), "main_end_s": pytest.approx(65 / 60),
                        "source": "fixed"}
    join = report["joins"][0]
    assert join["pick"] == 1 and len(join["candidates"]) >= 2
    second = join["candidates"][1]
    assert (join["a_time_s"], join["b_time_s"]) == (second["a_time_s"], second["b_time_s"])
    assert join["a_time_s"] >= walk_clip["main_end_s"] - 1e-9 and join["b_time_s"] <= hop_clip["main_start_s"] + 1e-9
    assert join["transition_shape"] == "linear" and join["threshold_deg"] == 20.0
    assert join["criteria_met"] == second["criteria_met"]
    data = np.loadtxt(out, delimiter=",", skiprows=1)
    assert data.shape[0] == report["frames"]
    np.testing.assert_allclose(data[:, 0], np.arange(len(data)) / 60.0)
