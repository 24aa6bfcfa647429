"""Export Robot Playback in real bpy, and `export` / `batch` through the real launcher.

In-process tests bake 120 frames of the walk onto the G1 the way a user
does (import, pick, auto-map, bake) and export the robot's action with the
operator or the headless function. Subprocess tests run tools/robot-retarget
exactly as a pipeline would: a clip, a saved .blend, and a batch of a small
folder (two short slices of the walk and one corrupt clip) with 1 and 2
workers. Launcher runs cost a Blender start each (~5 s, plus ~4 s per clip
with --workers 2, whose clips run in their own processes).
"""
from __future__ import annotations

import importlib
import json
import os
import re
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

ROOT = Path(__file__).resolve().parents[2]
LAUNCHER = ROOT / "tools" / "robot-retarget"
WALK = ROOT / "data" / "motion" / "cmu_131_01_walk_m.bvh"
G1 = ROOT / "data" / "robots" / "g1" / "unitree_g1_29dof.urdf"
LAUNCHER_CHATTER = ("robot-retarget: building ", "build_extension: ")


@pytest.fixture
def mods(extension):
    name = extension.__name__
    return {sub: importlib.import_module(f"{name}.{sub}") for sub in
            ("operators.export", "operators.anim_io", "core.playback", "core.playback.formats", "core.model.rig",
             "operators.import_urdf", "operators.common")}


def urdf_joint_names(path: Path) -> list[str]:
    return [j.get("name") for j in ET.parse(path).getroot().iter("joint")
            if j.get("type") in ("revolute", "continuous", "prismatic")]


def walk_slice(folder: Path, name: str, start: int, frames: int) -> Path:
    """A shorter copy of the walk: the same header, `frames` rows from `start`."""
    lines = WALK.read_text(encoding="utf-8").splitlines(keepends=True)
    first = next(i for i, line in enumerate(lines) if line.startswith("Frame Time")) + 1
    head = [f"Frames: {frames}\n" if line.startswith("Frames:") else line for line in lines[:first]]
    path = folder / name
    path.write_text("".join(head + lines[first + start:first + start + frames]), encoding="utf-8")
    return path


def broken_clip(folder: Path) -> tuple[Path, int]:
    """A walk slice whose 11th frame row lost a value; returns (file, 1-based line)."""
    path = walk_slice(folder, "broken.bvh", 0, 40)
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    row = next(i for i, line in enumerate(lines) if line.startswith("Frame Time")) + 11
    lines[row] = " ".join(lines[row].split()[:-1]) + "\n"
    path.write_text("".join(lines), encoding="utf-8")
    return path, row + 1


def launcher(*args) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "BLENDER_USER_RESOURCES"}
    return subprocess.run([str(LAUNCHER), *map(str, args)], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=900)


def error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.strip() and not line.startswith(LAUNCHER_CHATTER)]


def bake_walk(walk_on_g1, frames=(1, 120)):
    """The user's flow: import clip and robot, pick both, auto-map, bake the scene range."""
    _, _, rig = walk_on_g1(frames)
    assert bpy.ops.robot_retarget.bake() == {'FINISHED'}
    return rig


def action_keys(mods, rig):
    layout = mods["core.model.rig"].rig_layout(mods["operators.common"].tree_from_rig(rig))
    channels = mods["operators.export"]._channels(layout)
    adt = rig.animation_data
    frames, values = mods["operators.anim_io"].read_channels(adt.action, adt.action_slot, channels)
    return layout, frames, values


# ---------------------------------------------------------------- operator ---

def test_operator_exports_the_baked_action(clean_scene, mods, tmp_path, walk_on_g1):
    rig = bake_walk(walk_on_g1)
    actions_before = sorted(a.name for a in bpy.data.actions)
    layout, frames, keys = action_keys(mods, rig)
    out = tmp_path / "walk.csv"
    result = bpy.ops.robot_retarget.export_playback(filepath=str(out), format="csv", rate_hz=500.0,
                                                    allow_violations=True)
    assert result == {'FINISHED'}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["walk.csv", "walk.meta.json"]
    back = mods["core.playback.formats"].read_playback(out)
    track, meta = back.track, back.metadata
    fps = clean_scene.render.fps / clean_scene.render.fps_base
    duration = (frames[-1] - frames[0]) / fps
    assert track.period_s == 0.002 and track.samples == int(duration / 0.002) + 1
    assert track.joint_names == urdf_joint_names(G1) == meta["joint_names"]
    assert meta["robot"] == rig["urdf_robot"] and meta["source"] == rig.animation_data.action.name
    assert meta["rate_hz"] == 500.0 and meta["quaternion_order"] == "wxyz"
    # between keys the samples follow the keys closely (cubic); at t = 0 they are the first key
    key_time = (frames - frames[0]) / fps
    linear = np.column_stack([np.interp(track.time_s, key_time, keys[:, 7 + j]) for j in range(29)])
    assert np.abs(track.q - linear).max() < 0.02
    np.testing.assert_allclose(track.q[0], keys[0, 7:], rtol=0, atol=1e-12)
    position, rotation = mods["core.model.rig"].bone_to_root_pose(layout, keys[:1, :3], keys[:1, 3:7])
    np.testing.assert_allclose(track.root_position[0], position[0], atol=1e-9)
    lower = np.array([float(j.find("limit").get("lower")) for j in ET.parse(G1).getroot().iter("joint")
                      if j.get("type") == "revolute"])
    assert np.all(track.q >= lower)
    # it wrote files only: no new action, the robot's keys untouched
    assert sorted(a.name for a in bpy.data.actions) == actions_before
    assert np.array_equal(action_keys(mods, rig)[2], keys)
    assert 'UNDO' not in bpy.types.ROBOT_RETARGET_OT_export_playback.bl_options


def test_operator_limits_retime_and_overwrite(clean_scene, mods, tmp_path, walk_on_g1):
    bake_walk(walk_on_g1)
    out = tmp_path / "walk.xml"
    strict = dict(filepath=str(out), format="mujoco-keyframes", timing="PERIOD", period_ms=5.0,
                  use_acceleration_limit=True, acceleration_limit=150.0)
    with pytest.raises(RuntimeError, match="limit violation.*retime the motion or allow violations"):
        bpy.ops.robot_retarget.export_playback(**strict)
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(RuntimeError, match="mujoco_free_joint is false .* the root moves"):  # a walk has no fixed base
        bpy.ops.robot_retarget.export_playback(**strict, allow_violations=True, mujoco_free_joint=False)
    assert list(tmp_path.iterdir()) == []
    assert bpy.ops.robot_retarget.export_playback(**strict, allow_violations=True) == {'FINISHED'}
    allowed = mods["core.playback.formats"].read_playback(out)
    meta = allowed.metadata
    assert meta["violations"] and meta["period_s"] == 0.005
    assert set(meta["violations"][0]) == {"joint", "kind", "time_s", "end_time_s", "samples", "value", "limit",
                                          "unit"}
    before = out.read_bytes()
    with pytest.raises(RuntimeError, match="file exists"):
        bpy.ops.robot_retarget.export_playback(**strict, retime=True)
    assert out.read_bytes() == before
    assert bpy.ops.robot_retarget.export_playback(**strict, retime=True, overwrite=True) == {'FINISHED'}
    retimed = mods["core.playback.formats"].read_playback(out)
    assert retimed.metadata["violations"] == [] and retimed.metadata["retimed_seconds_added"] > 0
    added = retimed.metadata["retimed_seconds_added"]
    assert retimed.track.duration_s == pytest.approx(allowed.track.duration_s + added, abs=0.005)


def test_every_format_from_one_action(clean_scene, mods, tmp_path, walk_on_g1):
    rig = bake_walk(walk_on_g1, frames=(1, 60))
    export, formats = mods["operators.export"], mods["core.playback.formats"]
    settings = mods["core.playback"].ExportSettings(period_s=0.01, retime=True)
    tracks = {}
    for fmt, ext in formats.FORMATS.items():
        settings.format = fmt
        outcome = export.export_playback(rig, tmp_path / f"walk_{fmt}{ext}", settings, scene=clean_scene)
        assert outcome.report["format"] == fmt and outcome.report["violations"] == []
        tracks[fmt] = formats.read_playback(outcome.paths[0], fmt, joint_names=urdf_joint_names(G1),
                                            rate_hz=100.0).track
    reference = tracks["csv"]
    for fmt, track in tracks.items():
        np.testing.assert_array_equal(track.q, reference.q, err_msg=fmt)
        if fmt != "ros2-yaml":
            np.testing.assert_array_equal(track.root_quaternion, reference.root_quaternion, err_msg=fmt)


def test_hand_edited_action_and_robot_choice(clean_scene, mods, tmp_path, walk_on_g1):
    """Keys on different frames per channel (a deleted key) are sampled on every frame instead."""
    rig = bake_walk(walk_on_g1, frames=(1, 40))
    export = mods["operators.export"]
    _, frames, keys = action_keys(mods, rig)
    bag = mods["operators.anim_io"].action_get_channelbag_for_slot(rig.animation_data.action,
                                                                    rig.animation_data.action_slot)
    curve = next(c for c in bag.fcurves if "left_knee" in c.data_path)
    curve.keyframe_points.remove(curve.keyframe_points[10])
    fps = clean_scene.render.fps / clean_scene.render.fps_base
    table = export.action_table(rig, fps)
    assert len(table.time) == len(frames)
    knee = urdf_joint_names(G1).index("left_knee_joint")
    keep = np.arange(len(frames)) != 10
    np.testing.assert_allclose(table.q[keep], keys[keep, 7:], atol=1e-6)
    assert table.q[10, knee] == pytest.approx(curve.evaluate(frames[10]), abs=1e-6)  # the gap: from the curve
    assert export.find_robot(bpy.context) == rig
    assert bpy.ops.robot_retarget.import_urdf(filepath=str(G1), import_meshes=False, name="second") == {'FINISHED'}
    clean_scene.robot_retarget.robot = None
    bpy.context.view_layer.objects.active = clean_scene.objects[0]  # not a rig
    with pytest.raises(ValueError, match=r"several robot rigs \(.*second.*\): pick one"):
        export.find_robot(bpy.context)
    assert export.find_robot(bpy.context, "second").name == "second"
    # a typo in --object read "is not a robot rig" as if the object were there, naming no rig
    with pytest.raises(ValueError, match=rf"object 'secnod': no object of that name; robot rigs in the scene: "
                                         rf"{rig.name}, second$"):
        export.find_robot(bpy.context, "secnod")
    with pytest.raises(ValueError, match=r"object '.*': not a robot rig .* robot rigs in the scene: "):
        export.find_robot(bpy.context, clean_scene.objects[0].name)


def test_menu_panel_and_registration(extension):
    menu = bpy.types.TOPBAR_MT_file_export._dyn_ui_initialize()
    assert any(getattr(f, "__module__", "").endswith(".operators.export") for f in menu)
    panel = bpy.types.ROBOT_RETARGET_PT_export
    assert panel.bl_parent_id == "ROBOT_RETARGET_PT_main" and panel.bl_category == "Robot"
    assert bpy.ops.robot_retarget.export_playback.get_rna_type().name == "Export Robot Playback"


# ----------------------------------------------------------- command line ---

def test_cli_export_of_a_clip(tmp_path):
    clip = walk_slice(tmp_path, "walk_short.bvh", 0, 150)
    out, report_path = tmp_path / "walk.csv", tmp_path / "walk_report.json"
    proc = launcher("export", "--source", clip, "--robot", G1, "--format", "csv", "--rate", "500", "--retime",
                    "--out", out, "--report", report_path)
    assert proc.returncode == 0, proc.stderr
    assert error_lines(proc.stderr) == []
    assert proc.stdout.splitlines()[-1] == f"wrote {out} and {tmp_path / 'walk.meta.json'} and {report_path}"
    report = json.loads(report_path.read_text(encoding="utf-8"))
    for key in ("frames", "solve_seconds", "chains", "limit_violations", "jerk_after", "rate_hz", "samples",
                "violations", "retimed_seconds_added"):
        assert key in report, key
    assert report["frames"] == 150 and report["rate_hz"] == 500.0
    assert report["violations"] == [] and report["retimed_seconds_added"] >= 0.0
    lines = out.read_text(encoding="utf-8").splitlines()
    assert len(lines) - 1 == report["samples"]
    assert [float(line.split(",", 1)[0]) for line in lines[1:]] == [k * 0.002 for k in range(report["samples"])]


def test_cli_export_of_a_saved_scene(clean_scene, mods, tmp_path, walk_on_g1):
    """Bake here, save the .blend; the launcher opens it and exports the same samples."""
    rig = bake_walk(walk_on_g1, frames=(1, 90))
    scene_file = tmp_path / "walk_g1.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(scene_file), copy=True)
    settings = mods["core.playback"].ExportSettings(format="mujoco-keyframes", period_s=0.02, retime=True)
    here = mods["operators.export"].export_playback(rig, tmp_path / "here.xml", settings, scene=clean_scene)
    out = tmp_path / "there.xml"
    proc = launcher("export", "--source", scene_file, "--format", "mujoco-keyframes", "--rate", "50",
                    "--retime", "--out", out)
    assert proc.returncode == 0, proc.stderr
    there = mods["core.playback.formats"].read_playback(out).track
    np.testing.assert_array_equal(there.q, here.result.track.q)
    np.testing.assert_array_equal(there.root_position, here.result.track.root_position)


@pytest.fixture(scope="module")
def batch_folder(tmp_path_factory):
    """Two good walk slices and one corrupt clip, plus a mapping preset saved from the UI."""
    folder = tmp_path_factory.mktemp("batch_clips")
    walk_slice(folder, "walk_a.bvh", 0, 100)
    walk_slice(folder, "walk_b.bvh", 400, 80)
    _, line = broken_clip(folder)
    return folder, line


@pytest.fixture
def preset(clean_scene, tmp_path, walk_on_g1):
    bake_walk(walk_on_g1, frames=(1, 2))
    path = tmp_path / "g1_walk_mapping.json"
    assert bpy.ops.robot_retarget.mapping_save(filepath=str(path)) == {'FINISHED'}
    return path


@pytest.mark.parametrize("workers,fmt", [(1, "npz"), (2, "ros2-yaml")])
def test_cli_batch_continues_past_a_corrupt_clip(batch_folder, preset, mods, tmp_path, workers, fmt):
    folder, line = batch_folder
    out_dir, report_path = tmp_path / "out", tmp_path / "batch.json"
    out_dir.mkdir()
    proc = launcher("batch", "--robot", G1, "--mapping", preset, "--inputs", folder, "--format", fmt,
                    "--rate", "200", "--retime", "--out-dir", out_dir, "--workers", workers, "--report", report_path)
    assert proc.returncode == 1, proc.stderr
    # one line per clip as each finishes: with several workers, in the order they finish
    status = sorted((s for s in proc.stdout.splitlines() if not s.startswith("batch:")), key=lambda s: s.split()[1])
    assert status[0].startswith("FAILED  broken.bvh: ") and f"broken.bvh, line {line}:" in status[0]
    assert [s.split()[1] for s in status[1:]] == ["walk_a.bvh", "walk_b.bvh"]
    assert all(s.startswith("ok      ") for s in status[1:])
    assert proc.stdout.splitlines()[-1].startswith("batch: 2 of 3 clips exported, 1 failed")
    progress = error_lines(proc.stderr)
    assert progress[0].startswith("[....") and "3/3 clips, 1 failed" in progress[-1]
    assert any(re.search(r"~\d+:\d\d left", p) for p in progress)
    ext = mods["core.playback.formats"].FORMATS[fmt]
    assert sorted(p.name for p in out_dir.iterdir()) == [f"walk_a{ext}", f"walk_b{ext}"]
    summary = json.loads(report_path.read_text(encoding="utf-8"))
    assert (summary["succeeded"], summary["failed"], summary["workers"]) == (2, 1, workers)
    clips = {Path(c["source"]).name: c for c in summary["clips"]}
    assert clips["broken.bvh"]["status"] == "failed" and f"line {line}" in clips["broken.bvh"]["error"]
    for name, frames in (("walk_a.bvh", 100), ("walk_b.bvh", 80)):
        clip = clips[name]
        assert clip["status"] == "ok" and clip["violations"] == [] and clip["rate_hz"] == 200.0
        track = mods["core.playback.formats"].read_playback(clip["out"], fmt).track
        assert track.samples == clip["samples"] and track.period_s == 0.005
        assert track.duration_s >= (frames - 1) / 120.01 - 0.005


@pytest.mark.parametrize("workers", [1, 2])
def test_cli_batch_of_clips_and_a_saved_scene(clean_scene, mods, tmp_path, walk_on_g1, workers):
    """A .blend in the folder goes to Blender (this process or a Blender worker), the BVH clips to
    core workers; one summary, each output where it belongs."""
    rig = bake_walk(walk_on_g1, frames=(1, 60))
    folder = tmp_path / "clips"
    folder.mkdir()
    bpy.ops.wm.save_as_mainfile(filepath=str(folder / "scene.blend"), copy=True)
    walk_slice(folder, "walk_a.bvh", 0, 60)
    walk_slice(folder, "walk_b.bvh", 300, 60)
    out_dir, report_path = tmp_path / "out", tmp_path / "batch.json"
    out_dir.mkdir()
    proc = launcher("batch", "--robot", G1, "--inputs", folder, "--format", "npz", "--rate", "50",
                    "--allow-violations", "--out-dir", out_dir, "--workers", workers, "--report", report_path)
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in out_dir.iterdir()) == ["scene.npz", "walk_a.npz", "walk_b.npz"]
    summary = json.loads(report_path.read_text(encoding="utf-8"))
    assert summary["succeeded"] == 3 and summary["workers"] == workers
    read = mods["core.playback.formats"].read_playback
    scene = read(out_dir / "scene.npz").track
    assert scene.joint_names == mods["operators.common"].tree_from_rig(rig).joint_names
    assert scene.duration_s == pytest.approx(59 / 120.0048, abs=0.02)
    for name in ("walk_a", "walk_b"):
        assert read(out_dir / f"{name}.npz").track.samples == scene.samples


def test_a_worker_that_dies_fails_its_clip_and_is_replaced(extension, tmp_path):
    """--workers N: a crashed worker process is replaced and its clip tried once more; a clip that
    kills its worker again fails alone (core.library.engines.run_worker_pool, Blender workers too)."""
    import importlib
    import sys

    starts = tmp_path / "starts.log"
    crash = ("import sys; open(sys.argv[1], 'a').write('start\\n'); "
             "sys.stderr.write('Segmentation fault\\n'); sys.exit(139)")
    engines = importlib.import_module(extension.__name__ + ".core.library.engines")
    results = list(engines.run_worker_pool([sys.executable, "-c", crash, str(starts)], [{"clip": "a"}, {"clip": "b"}],
                                           1, lambda i, why: {"status": "failed", "index": i, "error": why}))
    assert sorted(r["index"] for r in results) == [0, 1] and all(r["status"] == "failed" for r in results)
    assert all("worker process died (exit code 139, tried 2 times) Segmentation fault" in r["error"] for r in results)
    assert starts.read_text(encoding="utf-8").count("start") == 4  # each clip: its worker, then a new one


# -------------------------------------------------------- in-process errors ---

def _main(extension, capsys, *args) -> tuple[int, str, str]:
    code = extension.cli.main([str(a) for a in args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.parametrize("case", ["no_robot", "violations", "blend_missing", "no_clips", "workers", "degrees"])
def test_bad_input_is_one_line(extension, clean_scene, capsys, tmp_path, case):
    clip = walk_slice(tmp_path, "walk.bvh", 0, 30)
    out = tmp_path / "out.csv"
    if case == "no_robot":
        args, words = ["export", "--source", clip, "--out", out], ["--robot ROBOT.urdf is required"]
    elif case == "violations":
        args = ["export", "--source", clip, "--robot", G1, "--accel-limit", "1", "--out", out]
        words = ["limit violation", "acceleration", "retime the motion or allow violations"]
    elif case == "blend_missing":
        args, words = ["export", "--source", tmp_path / "gone.blend", "--out", out], ["gone.blend: scene not found"]
    elif case == "degrees":
        args, words = ["export", "--source", clip, "--robot", G1, "--format", "pkl", "--units", "deg",
                       "--out", out], ["'pkl' stores radians"]
    else:
        (tmp_path / "empty").mkdir()
        preset = tmp_path / "preset.json"
        preset.write_text('{"format": "robot_retarget.mapping", "version": 1}', encoding="utf-8")
        args = ["batch", "--robot", G1, "--mapping", preset, "--inputs", tmp_path / "empty", "--out-dir", tmp_path]
        if case == "workers":
            args = [*args[:6], tmp_path, *args[7:], "--workers", "0"]
        words = ["--workers 0: expected 1 or more"] if case == "workers" else ["no clips"]
    code, stdout, stderr = _main(extension, capsys, *args)
    lines = stderr.splitlines()
    assert code == 1 and len(lines) == 1 and lines[0].startswith("robot-retarget: error: "), stderr
    for word in words:
        assert word in lines[0], (word, lines[0])
    assert not out.exists() and "wrote" not in stdout
