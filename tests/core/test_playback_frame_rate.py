"""Which frame rate makes a Blender action's frames seconds: the scene's, checked against the bake's."""
from __future__ import annotations

import json

import pytest

from core.playback import ExportSettings, PlaybackError
from core.playback.frame_rate import bake_warnings, default_rate_hint, export_fps


def test_the_scene_rate_when_the_bake_agrees_or_stored_none():
    assert export_fps(120.0, 120.0) == (120.0, [])
    assert export_fps(30.0, None, "bake") == (30.0, [])  # a hand-keyed action: nothing to check against
    ntsc = 30 / (30 / 29.97)  # fps / fps_base as Blender stores 29.97
    assert export_fps(29.97, ntsc) == (29.97, [])


def test_a_disagreement_is_refused_naming_both_rates_then_either_is_taken():
    with pytest.raises(PlaybackError, match=r"'walk' was baked at 24 fps but the scene runs at 120 fps .*5 times"):
        export_fps(120.0, 24.0, "auto", "walk")
    fps, notes = export_fps(120.0, 24.0, "scene", "walk")
    assert fps == 120.0 and "exported at the scene's 120 fps" in notes[0]
    fps, notes = export_fps(120.0, 24.0, "bake", "walk")
    assert fps == 24.0 and "exported at the bake's 24 fps" in notes[0]


def test_the_hint_only_at_blenders_default():
    assert "Blender's default" in default_rate_hint(24.0)
    assert default_rate_hint(120.0) is None and default_rate_hint(23.976) is None


def test_the_hint_calms_a_24_fps_clip_and_tells_a_bvh_what_to_do():
    """A clip truly at 24 fps (an FBX keyed in seconds) is told there is nothing to do; a 120 Hz BVH
    where its rate is written (Frame Time) and what to set."""
    hint = default_rate_hint(24.0)
    assert "right for a clip recorded at 24 fps (nothing to do then)" in hint
    for words in ("Scene FPS", "Frame Time 0.00833333", "five times too long", "1 / Frame Time", "bake again"):
        assert words in hint, words


def test_the_stored_hint_goes_when_the_export_is_not_at_24_fps():
    """A bake at 24 fps, the scene then set to the clip's 120 and exported at it (frame_rate scene):
    the stored hint no longer holds; at 24 fps (frame_rate bake, or the scene left) it still does.
    The older wording of the hint (stored with bakes before) goes too."""
    older = ("the clip was read at the scene's 24 fps, Blender's default: a BVH imported without the importer's "
             "Scene FPS is keyed one frame per clip frame")
    stored = ["auto-map: robot: no legs", default_rate_hint(24.0), older]
    assert bake_warnings(stored, 120.0) == ["auto-map: robot: no legs"]
    assert bake_warnings(stored, 24.0) == stored


def test_settings_key(tmp_path):
    path = tmp_path / "export.json"
    path.write_text(json.dumps({"frame_rate": "bake"}), encoding="utf-8")
    assert ExportSettings.load(path).frame_rate == "bake"
    path.write_text(json.dumps({"frame_rate": "clip"}), encoding="utf-8")
    with pytest.raises(PlaybackError, match="frame_rate 'clip': expected one of auto, scene, bake"):
        ExportSettings.load(path)


def test_export_of_a_clip_refuses_a_frame_rate_it_would_not_use(tmp_path):
    """`--frame-rate` chooses a .blend action's rate; a BVH is timed by its Frame Time, so `scene` or
    `bake` with one would do nothing while the user thinks it did: refused, nothing written."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    clip, robot = root / "tests" / "data" / "motion" / "cmu_131_03_hop.bvh", root / "tests" / "data" / "robots" / "franka_panda.urdf"
    for choice in ("bake", "auto"):
        out = tmp_path / f"{choice}.npz"
        proc = subprocess.run([sys.executable, "-m", "core.library.cli", "export", "--source", clip, "--robot", robot,
                               "--frames", "0:10", "--format", "npz", "--out", out, "--frame-rate", choice], cwd=root,
                              capture_output=True, text=True, timeout=600)
        if choice == "auto":
            assert proc.returncode == 0 and out.is_file(), proc.stderr
            continue
        assert proc.returncode == 1 and not out.exists(), proc.stderr
        assert f"--frame-rate bake: {clip} is a clip, timed by its own frame time" in proc.stderr, proc.stderr
