"""The frame rate that turns a .blend's baked action into seconds (core.playback.frame_rate).

The user's trap: the walk (120 Hz) imported with Blender's importer defaults into the factory
scene (24 fps) and baked keys one frame per clip frame; Blender keeps no frame time for the clip,
so the export is five times too long. The bake now warns (stored with the action, printed by every
export of it); a scene whose rate changed after the bake is refused until the user says which
rate is right (--frame-rate / Frame Rate), instead of silently exporting at the scene's.
"""
from __future__ import annotations

import json

import numpy as np
import pytest

from . import test_export
from .test_export import G1, WALK, _main

bpy = pytest.importorskip("bpy")
mods = test_export.mods  # the fixture: the extension's modules by name
FRAMES = (1, 120)  # one second of the walk at its 120 Hz


@pytest.fixture
def baked_at_24(clean_scene, tmp_path):
    """The walk imported with the importer's defaults (no Scene FPS), baked at the factory 24 fps."""
    assert clean_scene.render.fps == 24 and clean_scene.render.fps_base == 1.0
    assert bpy.ops.import_anim.bvh(filepath=str(WALK)) == {'FINISHED'}
    source = bpy.context.view_layer.objects.active
    assert bpy.ops.robot_retarget.import_urdf(filepath=str(G1), import_meshes=False) == {'FINISHED'}
    settings = clean_scene.robot_retarget
    settings.source, settings.robot = source, bpy.context.view_layer.objects.active
    assert bpy.ops.robot_retarget.auto_map() == {'FINISHED'}
    clean_scene.frame_start, clean_scene.frame_end = FRAMES
    settings.use_scene_range = True
    assert bpy.ops.robot_retarget.bake() == {'FINISHED'}
    return settings.robot


def saved(tmp_path, name="scene.blend"):
    path = tmp_path / name
    bpy.ops.wm.save_as_mainfile(filepath=str(path), copy=True)
    return path


def test_a_bake_at_blenders_default_rate_warns_and_every_export_says_it(baked_at_24, extension, capsys, tmp_path):
    report = json.loads(baked_at_24.animation_data.action["robot_retarget_report"])
    assert report["fps"] == 24.0
    assert any("Blender's default" in w and "Scene FPS" in w for w in report["warnings"]), report["warnings"]
    blend, out = saved(tmp_path), tmp_path / "walk.npz"
    code, stdout, stderr = _main(extension, capsys, "export", "--source", blend, "--format", "npz", "--out", out,
                                 "--allow-violations")
    assert code == 0, stderr
    assert "warning: the clip was read at the scene's 24 fps, Blender's default" in stderr
    assert "(4.950 s)" in stdout  # still five times the walk's 0.99 s: Blender kept no frame time to tell


def test_a_scene_rate_changed_after_the_bake_is_refused_until_chosen(baked_at_24, extension, capsys, tmp_path):
    """The user sets the scene to the clip's 120 fps after baking at 24: the keys are frames, so the
    export's length hangs on which rate is right; it is refused naming both, then either is taken."""
    scene = bpy.context.scene
    scene.render.fps, scene.render.fps_base = 120, 1.0
    blend = saved(tmp_path)
    out = tmp_path / "walk.npz"
    code, stdout, stderr = _main(extension, capsys, "export", "--source", blend, "--format", "npz", "--out", out,
                                 "--allow-violations")
    lines = stderr.splitlines()
    assert code == 1 and len(lines) == 1 and lines[0].startswith("robot-retarget: error: "), stderr
    for words in ("was baked at 24 fps but the scene runs at 120 fps", "5 times", "--frame-rate", "bake again"):
        assert words in lines[0], (words, lines[0])
    assert not out.exists()
    durations = {}
    for choice in ("scene", "bake"):
        path = tmp_path / f"{choice}.npz"
        code, stdout, stderr = _main(extension, capsys, "export", "--source", blend, "--format", "npz", "--out",
                                     path, "--allow-violations", "--frame-rate", choice)
        assert code == 0, stderr
        assert f"exported at the {choice}'s" in stderr
        assert ("Blender's default" in stderr) == (choice == "bake"), stderr  # exported at 120 fps: no such hint
        with np.load(path) as data:
            durations[choice] = (len(data["dof_pos"]) - 1) / float(data["fps"])
    assert durations == {"scene": pytest.approx(0.99, abs=0.01), "bake": pytest.approx(4.95, abs=0.01)}


def test_the_operator_refuses_then_exports_at_the_chosen_rate(baked_at_24, mods, tmp_path):
    scene = bpy.context.scene
    scene.render.fps = 120
    export = mods["operators.export"]
    settings = mods["core.playback"].ExportSettings(format="csv", allow_violations=True)
    with pytest.raises(mods["core.playback"].PlaybackError, match="baked at 24 fps but the scene runs at 120"):
        export.export_playback(baked_at_24, tmp_path / "auto.csv", settings, scene=scene)
    assert not (tmp_path / "auto.csv").exists()
    out = tmp_path / "scene.csv"
    assert bpy.ops.robot_retarget.export_playback(filepath=str(out), format="csv", allow_violations=True,
                                                  frame_rate="scene") == {'FINISHED'}
    track = mods["core.playback.formats"].read_playback(out).track
    assert track.duration_s == pytest.approx((FRAMES[1] - FRAMES[0]) / 120, abs=0.01)
    scene.render.fps = 24  # back at the bake's rate: nothing to choose
    again = export.export_playback(baked_at_24, tmp_path / "same.csv", settings, scene=scene)
    assert again.result.track.duration_s == pytest.approx((FRAMES[1] - FRAMES[0]) / 24, abs=0.01)


def test_batch_passes_the_frame_rate_to_a_blend_and_not_to_a_clip(baked_at_24, extension, mods, capsys, tmp_path):
    """`batch --frame-rate scene` over a .blend whose scene was set to the clip's 120 fps after the bake,
    and a BVH beside it: the .blend is exported at 120 fps (the flag was dropped on the way to each
    clip's export, so it was refused as if not given); the BVH, timed by its Frame Time, is not refused. The
    self-collision flags reach the BVH's bake and not the .blend's export, which refuses them (its action is baked)."""
    bpy.context.scene.render.fps = 120
    folder = tmp_path / "clips"
    folder.mkdir()
    saved(folder)
    test_export.walk_slice(folder, "walk_a.bvh", 0, 30)
    out_dir, report = tmp_path / "out", tmp_path / "batch.json"
    code, stdout, stderr = _main(extension, capsys, "batch", "--robot", G1, "--inputs", folder, "--format", "npz",
                                 "--allow-violations", "--out-dir", out_dir, "--report", report, "--frame-rate", "scene",
                                 "--no-avoid-self-collision", "--collision-margin", "0.02")
    summary = json.loads(report.read_text(encoding="utf-8"))
    assert code == 0 and summary["succeeded"] == 2, (stderr, summary)
    track = mods["core.playback.formats"].read_playback(out_dir / "scene.npz").track
    assert track.duration_s == pytest.approx((FRAMES[1] - FRAMES[0]) / 120, abs=0.01)
