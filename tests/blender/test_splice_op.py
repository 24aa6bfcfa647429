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

    # What plays on the NLA is the core result, frame by frame.
    scene = bpy.context.scene
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
    strips[1].scale = 2.0
    with pytest.raises(RuntimeError, match="strip 'hop' is scaled or repeated"):
        bpy.ops.robot_retarget.splice_strips()
    assert len(rig.animation_data.nla_tracks) == 1  # nothing made


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
