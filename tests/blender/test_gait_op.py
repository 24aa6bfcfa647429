"""Generate Gait as users run it: `robot-retarget gait` in a subprocess (the pipeline's way), the
operator in the Robot tab (headless), and what the balance overlay draws from its action."""
from __future__ import annotations

import importlib
import json

import bpy
import numpy as np
import pytest

from .test_cli import G1, ROOT, ROOT_HEADER, WALK, assert_one_line_error, launcher, read_csv

H1 = ROOT / "tests" / "data" / "robots" / "unitree_h1_19dof.urdf"

HOP = ROOT / "tests" / "data" / "motion" / "cmu_131_03_hop.bvh"
GAIT_KEYS = {"steps", "swing_phases", "representative_points", "zmp_max_error_m", "zmp_rms_error_m",
             "multibody_zmp_max_error_m", "multibody_zmp_rms_error_m", "zmp_outside_support_pct",
             "min_support_margin_m", "stance_slide_m", "com_height_m", "rate_hz", "period_s", "warnings"}


@pytest.fixture(scope="module")
def walk_gait(tmp_path_factory):
    """The first 4 s of the walk through `gait` at 250 Hz (not a whole number of frames per cycle)."""
    folder = tmp_path_factory.mktemp("gait")
    out, report = folder / "gait.csv", folder / "gait.json"
    proc = launcher("gait", "--source", WALK, "--robot", G1, "--frames", "0:480", "--rate", "250",
                    "--out", out, "--report", report)
    assert proc.returncode == 0, proc.stderr
    return proc, out, json.loads(report.read_text())


def test_gait_writes_the_bake_layout_at_the_control_cycle(walk_gait):
    proc, out, report = walk_gait
    header, rows = read_csv(out)
    assert ",".join(header[:8]) == ROOT_HEADER
    assert np.allclose(np.diff(rows[:, 0]), 0.004) and rows[0, 0] == 0.0
    assert 479 / 120.0 - 0.004 < rows[-1, 0] <= 479 / 120.0 + 1e-9  # the clip's 480 frames, no cycle past them
    assert GAIT_KEYS <= set(report) and report["rate_hz"] == pytest.approx(250.0)
    assert report["period_s"] == pytest.approx(0.004) and report["steps"] >= 3
    assert "Gait of" in proc.stdout and "wrote" in proc.stdout
    assert report["waist"] == "upright"  # --waist auto: the G1's legs have an ankle roll
    quaternion = rows[:, 4:8]
    assert np.allclose(np.linalg.norm(quaternion, axis=1), 1.0, atol=1e-9)


def test_balance_reads_the_gait_as_its_report_does(walk_gait, tmp_path):
    """One ZMP definition: `balance` on the gait's CSV gives the gait report's figures."""
    _, out, report = walk_gait
    readout = tmp_path / "readout.json"
    proc = launcher("balance", "--motion", out, "--robot", G1, "--report", readout)
    assert proc.returncode == 0, proc.stderr
    figures = json.loads(readout.read_text())
    assert figures["zmp_outside_support_pct"] == pytest.approx(report["zmp_outside_support_pct"], abs=0.5)
    assert figures["min_support_margin_m"] == pytest.approx(report["min_support_margin_m"], abs=0.002)


def test_gait_refuses_the_hop_naming_its_flights(tmp_path):
    proc = launcher("gait", "--source", HOP, "--robot", G1, "--out", tmp_path / "hop.csv")
    line = assert_one_line_error(proc, "flight phase(s)", "cmu_131_03_hop")
    assert " s" in line and not (tmp_path / "hop.csv").exists()


def test_gait_waist_flag_reaches_the_generator(tmp_path):
    """--waist upright on the H1 (legs without an ankle roll, rolled by default) keeps its waist upright,
    and the report says which waist the legs took."""
    proc = launcher("gait", "--source", WALK, "--robot", H1, "--frames", "0:240", "--waist", "upright",
                    "--out", tmp_path / "h1.csv", "--report", tmp_path / "h1.json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads((tmp_path / "h1.json").read_text())["waist"] == "upright"
    proc = launcher("gait", "--source", WALK, "--robot", H1, "--waist", "sideways", "--out", tmp_path / "x.csv")
    assert proc.returncode != 0 and "--waist" in proc.stderr


def test_gait_checks_its_arguments_before_the_work(tmp_path):
    proc = launcher("gait", "--source", WALK, "--robot", G1, "--rate", "-5", "--out", tmp_path / "g.csv")
    assert_one_line_error(proc, "--rate")
    proc = launcher("gait", "--source", WALK, "--robot", G1, "--rate", "100", "--period", "0.01",
                    "--out", tmp_path / "g.csv")
    assert proc.returncode == 2 and "not allowed with argument" in proc.stderr
    proc = launcher("gait", "--source", WALK, "--robot", G1, "--contacts", "off", "--out", tmp_path / "g.csv")
    assert_one_line_error(proc, "--contacts off")


def test_generate_gait_in_the_robot_tab(walk_on_g1, extension):
    settings, source, robot = walk_on_g1(frames=(1, 360))
    source_action = source.animation_data.action
    keys_before = {fc.data_path: len(fc.keyframe_points) for fc in source_action.fcurves} \
        if hasattr(source_action, "fcurves") else None
    assert bpy.ops.robot_retarget.generate_gait('EXEC_DEFAULT', period_ms=5.0) == {'FINISHED'}
    action = robot.animation_data.action
    assert action.name.endswith(" gait") and action.use_fake_user
    report = json.loads(action["robot_retarget_gait"])
    assert GAIT_KEYS <= set(report)
    ops = importlib.import_module(extension.__name__ + ".operators.anim_io")
    layout = importlib.import_module(extension.__name__ + ".core.model.rig")
    tree = importlib.import_module(extension.__name__ + ".operators.common").tree_from_rig(robot)
    channel = layout.rig_layout(tree).joint_channels[0]
    frames, _ = ops.read_channels(action, robot.animation_data.action_slot,
                                  [(f'pose.bones["{channel[0]}"].{channel[1]}', channel[2], channel[0])])
    assert np.allclose(np.diff(frames), 0.6, atol=1e-3)  # 5 ms at the walk's 120 fps: subframe keys
    assert frames[0] == 1.0
    assert source.animation_data.action is source_action  # the source is not touched
    if keys_before is not None:
        assert {fc.data_path: len(fc.keyframe_points) for fc in source_action.fcurves} == keys_before

    # what the overlay draws, at a frame in double support and one in single support
    overlay = importlib.import_module(extension.__name__ + ".panels.balance_overlay")
    trace = overlay.overlay_trace(robot, bpy.context.scene)
    assert len(trace.frames) == len(frames) and trace.target is not None
    matrix = np.array(robot.matrix_world)
    shapes = [overlay.overlay_geometry(trace, f, matrix) for f in np.linspace(frames[0], frames[-1], 40)]
    assert all({"zmp", "com", "target"} <= set(s) for s in shapes)
    corners = [len(s["support"]) // 2 for s in shapes if "support" in s]
    assert len(corners) == len(shapes) and min(corners) >= 4  # a foot's sole at least
    assert max(corners) > min(corners)  # both feet at some frames, one at others

    # Check Balance reads the gait at its keys' own 200 Hz, as the gait's report does: read at the
    # scene's 120 fps its accelerations were 0.36 of the real ones (25.5 against 0 % outside)
    assert bpy.ops.robot_retarget.check_balance() == {'FINISHED'}
    stored = json.loads(action["robot_retarget_balance"])
    assert stored["rate_hz"] == pytest.approx(200.0) and stored["frames"] == len(frames)
    assert stored["zmp_outside_support_pct"] == pytest.approx(report["zmp_outside_support_pct"], abs=0.5)
    assert stored["min_support_margin_m"] == pytest.approx(report["min_support_margin_m"], abs=0.002)


def test_an_fbx_clip_walks_through_the_command_as_its_bvh(clean_scene, walk_gait, tmp_path):
    """`robot-retarget gait` on an FBX (the walk exported by Blender's own exporter, leaf bones on, its
    default) goes through Blender's importer and Generate Gait's code, not core's BVH reader: the same
    steps at the same times within a few frames, balanced as the BVH's gait, and `balance` on its CSV
    reads its report's figures. (Leaf bones off, the file does not carry the toes' length: Blender's
    importer makes each toe as long as its foot and the gait walks other steps;
    docs/history/robots_and_clips_from_elsewhere.md, session 18.)"""
    assert bpy.ops.import_anim.bvh(filepath=str(WALK), update_scene_fps=True) == {'FINISHED'}
    fbx = tmp_path / "walk.fbx"
    assert bpy.ops.export_scene.fbx(filepath=str(fbx), object_types={'ARMATURE'}, bake_anim=True) == {'FINISHED'}
    out, report_path = tmp_path / "fbx.csv", tmp_path / "fbx.json"
    proc = launcher("gait", "--source", fbx, "--robot", G1, "--frames", "0:480", "--rate", "250",
                    "--out", out, "--report", report_path)
    assert proc.returncode == 0, proc.stderr
    report, bvh = json.loads(report_path.read_text()), walk_gait[2]
    assert report["source_file"] == str(fbx) and report["samples"] == bvh["samples"]
    assert report["steps"] == bvh["steps"]
    for side in ("left", "right"):
        for ours, theirs in zip(report["swing_phases"][side], bvh["swing_phases"][side], strict=True):
            assert ours["lift_off_s"] == pytest.approx(theirs["lift_off_s"], abs=0.1)
            assert ours["touch_down_s"] == pytest.approx(theirs["touch_down_s"], abs=0.1)
    assert report["zmp_outside_support_pct"] == 0.0 and report["min_support_margin_m"] >= 0.010
    assert report["stance_slide_m"] < 0.001
    assert report["travel_m"] == pytest.approx(bvh["travel_m"], rel=0.15)
    readout = tmp_path / "readout.json"
    proc = launcher("balance", "--motion", out, "--robot", G1, "--report", readout)
    assert proc.returncode == 0, proc.stderr
    figures = json.loads(readout.read_text())
    assert figures["min_support_margin_m"] == pytest.approx(report["min_support_margin_m"], abs=0.002)


def test_an_fbx_gait_onto_a_robot_without_masses_names_the_urdf_first(tmp_path):
    """The FBX path weighs the robot before Blender imports the clip, and names the file (it named the
    <robot name> after the import), as the BVH path does."""
    import re

    urdf = tmp_path / "g1_kinematics_only.urdf"
    urdf.write_text(re.sub(r"<inertial>.*?</inertial>", "", G1.read_text(), flags=re.S))
    clip = tmp_path / "never_read.fbx"
    clip.write_bytes(b"")  # an import would fail on it: the masses are checked first
    proc = launcher("gait", "--source", clip, "--robot", urdf, "--out", tmp_path / "g.csv")
    assert_one_line_error(proc, str(urdf), "<inertial>")
