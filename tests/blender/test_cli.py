"""`robot-retarget bake` as a pipeline runs it: tools/robot-retarget in a subprocess.

The launcher starts Blender as a module from the repo's .venv, installs the
extension into build/blender_user (rebuilding dist/ first when sources
changed) and calls cli.main(). Each run costs a Blender start (~10 s), so
the successful bake runs once per module (fixture `walk_bake`, 120 frames)
and the other subprocesses are the error cases a pipeline must see as a
non-zero exit code with one line on stderr. A few more cases run in-process
through the `extension` fixture's cli.main().

The CSV and report are checked against the robot's URDF read here with
ElementTree (not through core.model.urdf), so a reader bug cannot hide in both.
"""
from __future__ import annotations

import json
import os
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
LAUNCHER = ROOT / "tools" / "robot-retarget"
WALK = ROOT / "data" / "motion" / "cmu_131_01_walk_m.bvh"
G1 = ROOT / "data" / "robots" / "g1" / "unitree_g1_29dof.urdf"
ROOT_HEADER = "time_s,root_x,root_y,root_z,root_qw,root_qx,root_qy,root_qz"
FRAMES = 120
WALK_FRAME_TIME = 0.008333  # the BVH's "Frame Time"
G1_CHAINS = {"spine", "left_leg", "right_leg", "left_arm", "left_hand", "right_arm", "right_hand"}
# What the launcher itself prints on stderr when it has to rebuild the zip
# because a source file changed (others may edit the repo while tests run).
LAUNCHER_CHATTER = ("robot-retarget: building ", "build_extension: ")


def urdf_joints(path: Path) -> list[tuple[str, float, float]]:
    """(name, lower, upper) of the movable joints, in file order."""
    out = []
    for joint in ET.parse(path).getroot().iter("joint"):
        if joint.get("type") in ("revolute", "continuous", "prismatic"):
            limit = joint.find("limit")
            lower = float(limit.get("lower", "-inf")) if limit is not None else -np.inf
            upper = float(limit.get("upper", "inf")) if limit is not None else np.inf
            out.append((joint.get("name"), lower, upper))
    return out


def launcher(*args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "BLENDER_USER_RESOURCES"}
    return subprocess.run([str(LAUNCHER), *map(str, args)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=900)


def error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.strip() and not line.startswith(LAUNCHER_CHATTER)]


def assert_one_line_error(proc: subprocess.CompletedProcess, *words: str) -> str:
    assert proc.returncode == 1, (proc.returncode, proc.stderr)
    lines = error_lines(proc.stderr)
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("robot-retarget: error: "), lines[0]
    assert "Traceback" not in proc.stderr + proc.stdout
    for word in words:
        assert word in lines[0], (word, lines[0])
    assert "wrote" not in proc.stdout
    return lines[0]


def read_csv(path: Path) -> tuple[list[str], np.ndarray]:
    lines = path.read_text(encoding="utf-8").splitlines()
    rows = [[float(v) for v in line.split(",")] for line in lines[1:]]
    return lines[0].split(","), np.array(rows)


def bad_bvh(tmp_path: Path) -> tuple[Path, int]:
    """The walk with one value missing in one frame row; returns (file, 1-based line)."""
    lines = WALK.read_text(encoding="utf-8").splitlines(keepends=True)
    first_row = next(i for i, line in enumerate(lines) if line.startswith("Frame Time")) + 1
    broken = first_row + 40
    lines[broken] = " ".join(lines[broken].split()[:-1]) + "\n"
    path = tmp_path / "walk_bad_row.bvh"
    path.write_text("".join(lines), encoding="utf-8")
    return path, broken + 1


@pytest.fixture(scope="module")
def walk_bake(tmp_path_factory):
    """One real launcher run: the first 120 frames of the walk on the G1, with a report."""
    folder = tmp_path_factory.mktemp("cli_bake")
    out, report = folder / "walk_g1.csv", folder / "walk_g1.json"
    proc = launcher("bake", "--source", WALK, "--robot", G1, "--frames", f"0:{FRAMES}",
                    "--out", out, "--report", report)
    return proc, out, report


# ------------------------------------------------------------------ success ---

def test_bake_succeeds(walk_bake):
    proc, out, report = walk_bake
    assert proc.returncode == 0, proc.stderr
    assert error_lines(proc.stderr) == []  # no warnings for the G1 and the walk
    assert proc.stdout.splitlines()[-1] == f"wrote {out} and {report}"
    assert f"Baked {FRAMES} frames" in proc.stdout
    assert sorted(p.name for p in out.parent.iterdir()) == sorted([out.name, report.name])


def test_csv_header_is_the_contract(walk_bake):
    _, out, _ = walk_bake
    header = out.read_text(encoding="utf-8").split("\n", 1)[0]
    joints = [name for name, _, _ in urdf_joints(G1)]
    assert len(joints) == 29
    assert header == ROOT_HEADER + "," + ",".join(joints)


def test_csv_rows(walk_bake):
    _, out, report_path = walk_bake
    report = json.loads(report_path.read_text(encoding="utf-8"))
    header, data = read_csv(out)
    assert data.shape == (FRAMES, 8 + 29)
    assert np.all(np.isfinite(data))

    time = data[:, 0]
    assert time[0] == 0.0
    assert np.array_equal(time, np.arange(FRAMES) / report["fps"])  # k / fps, exactly
    np.testing.assert_allclose(time, np.arange(FRAMES) * WALK_FRAME_TIME, rtol=1e-6, atol=0)

    quat = data[:, 4:8]
    np.testing.assert_allclose(np.linalg.norm(quat, axis=1), 1.0, rtol=0, atol=1e-9)
    assert np.all(np.einsum("fi,fi->f", quat[1:], quat[:-1]) > 0.9)  # sign-continuous, smooth
    position = data[:, 1:4]
    assert np.all((position[:, 2] > 0.5) & (position[:, 2] < 1.0))  # the G1 pelvis stands ~0.7-0.8 m
    assert np.all(np.linalg.norm(np.diff(position, axis=0), axis=1) < 0.05)  # no jumps at 120 Hz

    limits = urdf_joints(G1)
    q = data[:, 8:]
    lower = np.array([lo for _, lo, _ in limits])
    upper = np.array([hi for _, _, hi in limits])
    assert np.all(q >= lower) and np.all(q <= upper)
    assert np.all(np.ptp(q, axis=0) > 0.0)  # every joint moves during the walk


def test_report_json(walk_bake):
    _, out, report_path = walk_bake
    report = json.loads(report_path.read_text(encoding="utf-8"))
    for key in ("frames", "solve_seconds", "frames_per_second", "total_seconds", "stage_seconds",
                "limb_direction_error_deg", "limb_direction_error_by_limb", "torso_orientation_error_deg",
                "limit_violations", "chains", "jerk_before", "jerk_after"):
        assert key in report, key
    assert report["frames"] == FRAMES
    assert report["limit_violations"] == 0
    assert report["solve_seconds"] > 0.0
    # the whole bake's speed (every stage), not the chain solve's
    assert report["frames_per_second"] == pytest.approx(FRAMES / report["total_seconds"])
    assert report["total_seconds"] == pytest.approx(sum(report["stage_seconds"].values()))
    assert report["total_seconds"] > report["solve_seconds"] == pytest.approx(report["stage_seconds"]["solve"])
    assert isinstance(report["chains"], list)
    assert {c["name"] for c in report["chains"]} == G1_CHAINS
    for chain in report["chains"]:
        assert set(chain) >= {"name", "mean_distance", "max_distance", "tip_direction_error_deg"}
        # distances in chain lengths: a hand turned out of the body (avoidance) puts its short chain's points up to
        # its diameter away (the walk's left hand 1.3 at most, 47 degrees off the actor's on average)
        within = 2.0 if chain["name"].endswith("hand") else 1.0
        assert 0.0 <= chain["mean_distance"] <= chain["max_distance"] < within, chain
        assert 0.0 <= chain["tip_direction_error_deg"] <= 180.0, chain
    assert 0.0 <= report["jerk_after"] < report["jerk_before"]  # the low-pass filter smooths
    assert report["out"] == str(out)
    assert Path(report["source_file"]) == WALK and Path(report["robot_file"]) == G1


def test_mapping_preset_from_the_ui_gives_the_same_csv(walk_bake, clean_scene, tmp_path, walk_on_g1):
    """Map in Blender, save the preset, bake with --mapping: the same CSV as the auto-mapped run."""
    import bpy

    proc, auto_out, _ = walk_bake
    assert proc.returncode == 0, proc.stderr
    walk_on_g1(frames=None)
    preset = tmp_path / "g1_walk.json"
    assert bpy.ops.robot_retarget.mapping_save(filepath=str(preset)) == {'FINISHED'}

    out = tmp_path / "walk_preset.csv"
    proc = launcher("bake", "--source", WALK, "--robot", G1, "--mapping", preset,
                    "--frames", f"0:{FRAMES}", "--out", out)
    assert proc.returncode == 0, proc.stderr
    header, data = read_csv(out)
    auto_header, auto = read_csv(auto_out)
    assert header == auto_header and data.shape == auto.shape
    # The preset went through Blender's float32 properties (0.02 -> 0.0199999996): same to ~1e-7.
    np.testing.assert_allclose(data, auto, rtol=0, atol=1e-6)


# ------------------------------------------------------------ bad input ---

def test_missing_source_file(tmp_path):
    source, out = tmp_path / "no_such_clip.bvh", tmp_path / "out.csv"
    proc = launcher("bake", "--source", source, "--robot", G1, "--out", out)
    assert_one_line_error(proc, str(source), "not found")
    assert list(tmp_path.iterdir()) == []


def test_malformed_bvh_names_the_line(tmp_path):
    source, line = bad_bvh(tmp_path)
    out = tmp_path / "out.csv"
    proc = launcher("bake", "--source", source, "--robot", G1, "--out", out)
    assert_one_line_error(proc, f"{source}, line {line}:", "values, expected")
    assert not out.exists()


def test_malformed_urdf_names_the_element(tmp_path):
    text = G1.read_text(encoding="utf-8")
    start = text.index('<joint name="left_knee_joint"')
    end = text.index("</joint>", start)
    block = text[start:end]
    assert 'lower="-0.087267"' in block
    robot = tmp_path / "g1_bad_limit.urdf"
    robot.write_text(text[:start] + block.replace('lower="-0.087267"', 'lower="bent"') + text[end:],
                     encoding="utf-8")
    limit_line = text[:start].count("\n") + 1 + block.count("\n", 0, block.index("<limit"))
    out = tmp_path / "out.csv"
    proc = launcher("bake", "--source", WALK, "--robot", robot, "--frames", "0:10", "--out", out)
    assert_one_line_error(proc, str(robot), f"line {limit_line}", "joint 'left_knee_joint'",
                          "<limit>", "lower='bent'")
    assert not out.exists()


def test_existing_out_is_not_replaced(tmp_path):
    out = tmp_path / "walk.csv"
    out.write_text("yesterday's bake\n", encoding="utf-8")
    before = out.stat().st_mtime_ns
    proc = launcher("bake", "--source", WALK, "--robot", G1, "--frames", "0:10", "--out", out)
    assert_one_line_error(proc, str(out), "exists", "--overwrite")
    assert out.read_text(encoding="utf-8") == "yesterday's bake\n"
    assert out.stat().st_mtime_ns == before
    assert [p.name for p in tmp_path.iterdir()] == ["walk.csv"]


def test_out_folder_must_exist(tmp_path):
    out = tmp_path / "no_such_folder" / "walk.csv"
    proc = launcher("bake", "--source", WALK, "--robot", G1, "--frames", "0:10", "--out", out)
    assert_one_line_error(proc, str(out.parent), "does not exist")
    assert not out.parent.exists()


# ------------------------------------------------------- in-process cli.main ---

def _main(extension, capsys, *args) -> tuple[int, str, str]:
    code = extension.cli.main([str(a) for a in args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_csv_matches_the_baked_action(extension, clean_scene, capsys, tmp_path):
    """In-process, the CLI also leaves its action in Blender: the CSV holds the same motion."""
    import importlib

    import bpy

    name = extension.__name__
    anim_io = importlib.import_module(f"{name}.operators.anim_io")
    rig_mod = importlib.import_module(f"{name}.core.model.rig")
    tree_from_rig = importlib.import_module(f"{name}.operators.common").tree_from_rig
    out, report_path = tmp_path / "tail.csv", tmp_path / "tail.json"
    code, stdout, stderr = _main(extension, capsys, "bake", "--source", WALK, "--robot", G1,
                                 "--frames", "960:", "--out", out, "--report", report_path)
    assert code == 0, stderr
    assert stderr == ""
    report = json.loads(report_path.read_text(encoding="utf-8"))
    assert report["frames"] == 995 - 960
    header, data = read_csv(out)
    assert data.shape == (35, 37) and data[0, 0] == 0.0

    action = bpy.data.actions[report["action"]]
    robot = next(o for o in bpy.data.objects if o.get("urdf_path") and o.animation_data
                 and o.animation_data.action == action)
    layout = rig_mod.rig_layout(tree_from_rig(robot))
    root = layout.root.name
    channels = ([(f'pose.bones["{root}"].location', i) for i in range(3)]
                + [(f'pose.bones["{root}"].rotation_quaternion', i) for i in range(4)]
                + [(f'pose.bones["{b}"].{p}', i) for b, p, i in layout.joint_channels])
    frames, values = anim_io.read_channels(action, robot.animation_data.action_slot, channels)
    assert np.array_equal(frames, np.arange(961.0, 996.0))  # clip frame k = Blender frame k + 1
    scene = bpy.context.scene  # a .blend saved now plays and exports at the clip's rate
    assert scene.render.fps / scene.render.fps_base == pytest.approx(report["fps"])
    assert (scene.frame_start, scene.frame_end) == (961, 995)
    np.testing.assert_allclose(values[:, 7:], data[:, 8:], rtol=0, atol=1e-6)
    location, quaternion = rig_mod.root_pose_to_bone(layout, data[:, 1:4],
                                                     _quat_matrices(data[:, 4:8]))
    np.testing.assert_allclose(values[:, :3], location, rtol=0, atol=1e-6)
    np.testing.assert_allclose(values[:, 3:7], quaternion, rtol=0, atol=1e-6)

    # --overwrite replaces both files
    code, _, stderr = _main(extension, capsys, "bake", "--source", WALK, "--robot", G1, "--frames",
                            "0:5", "--out", out, "--report", report_path, "--overwrite")
    assert code == 0, stderr
    assert read_csv(out)[1].shape == (5, 37)
    assert json.loads(report_path.read_text(encoding="utf-8"))["frames"] == 5
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tail.csv", "tail.json"]


def _quat_matrices(quat: np.ndarray) -> np.ndarray:
    w, x, y, z = np.asarray(quat).T
    return np.stack([
        np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)], -1),
        np.stack([2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)], -1),
        np.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], -1),
    ], axis=-2)


@pytest.mark.parametrize("case", ["frames", "frames_syntax", "mapping", "robot", "folder", "report_exists"])
def test_bad_input_in_process(extension, clean_scene, capsys, tmp_path, case):
    out = tmp_path / "out.csv"
    args = ["bake", "--source", WALK, "--robot", G1, "--out", out]
    if case == "frames":
        args += ["--frames", "50:50"]
        words = ["--frames", "no frames", "995"]
    elif case == "frames_syntax":
        args += ["--frames", "10-20"]
        words = ["--frames", "START:END"]
    elif case == "mapping":
        preset = tmp_path / "missing_preset.json"
        args += ["--mapping", preset, "--frames", "0:10"]
        words = [str(preset), "not found"]
    elif case == "robot":
        robot = tmp_path / "missing.urdf"
        args[4] = robot
        words = [str(robot), "not found"]
    elif case == "folder":  # a folder of clips is batch's; it read "source clip not found"
        args[2] = WALK.parent
        words = [str(WALK.parent), "a folder, not a clip file", "--inputs"]
    else:
        report = tmp_path / "report.json"
        report.write_text("{}\n", encoding="utf-8")
        args += ["--report", report]
        words = [str(report), "exists", "--overwrite"]
    code, stdout, stderr = _main(extension, capsys, *args)
    assert code == 1
    lines = stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("robot-retarget: error: "), stderr
    for word in words:
        assert word in lines[0], (word, lines[0])
    assert not out.exists()
    assert "wrote" not in stdout
    if case == "report_exists":
        assert report.read_text(encoding="utf-8") == "{}\n"


@pytest.mark.parametrize("command", ["stream", "splice"])
def test_stream_and_splice_name_the_preset_made_for_another_robot(extension, clean_scene, capsys, tmp_path,
                                                                 command):
    """A preset for the H1 given with the G1 stopped `bake` naming the preset file, but `stream` and
    `splice` said only "robot 'g1_29dof_rev_1_0' has no link ...", with no file: which of the
    pipeline's files was wrong was left to guess."""
    from core.model.kinematics import KinematicTree
    from core.model.urdf import parse_urdf
    from core.motion.bvh import load_bvh
    from core.retarget import auto_map

    h1 = ROOT / "tests" / "data" / "robots" / "unitree_h1_19dof.urdf"
    preset = tmp_path / "walk_h1.json"
    auto_map(load_bvh(WALK).to_source_motion(), KinematicTree(parse_urdf(h1))).save(preset)
    out = tmp_path / "out.csv"
    args = (["stream", "--skeleton", WALK, "--robot", G1, "--mapping", preset, "--max-frames", "1"]
            if command == "stream" else
            ["splice", "--robot", G1, "--mapping", preset, "--source", WALK, "--source", WALK, "--out", out])
    code, stdout, stderr = _main(extension, capsys, *args)
    lines = error_lines(stderr)
    assert code == 1 and len(lines) == 1, stderr
    assert str(preset) in lines[0] and "robot 'g1_29dof_rev_1_0' has no link" in lines[0], lines[0]
    assert not out.exists() and not stdout


@pytest.mark.parametrize("flags, said", [(["--fps", "0"], "--fps must be positive, got 0.0"),
                                         (["--mean-deg", "99", "--criterion", "mean"], "--mean-deg 99 is outside"),
                                         (["--margin-s", "-1"], "--margin-s must be >= 0")])
def test_splice_names_the_flag_of_a_value_out_of_range(extension, clean_scene, capsys, tmp_path, flags, said):
    """`splice --fps 0` said "fps must be positive, got 0.0": the settings' name, not the flag."""
    out = tmp_path / "out.csv"
    code, stdout, stderr = _main(extension, capsys, "splice", "--robot", G1, "--source", WALK, "--source", WALK,
                                 "--out", out, *flags)
    lines = error_lines(stderr)
    assert code == 1 and len(lines) == 1, stderr
    assert lines[0].startswith(f"robot-retarget: error: {said}") and not out.exists() and not stdout


def test_a_z_up_bvh_with_source_up_z_bakes_like_the_y_up_file(walk_bake, tmp_path):
    """The walk rewritten as a Z-up BVH (world and rest offsets): read with --source-up Z it bakes
    the same robot motion; read as Y-up the actor lies on its back and auto-map says something
    is off instead of baking quietly."""
    from core.motion.bvh import load_bvh
    from tests import variants

    z_up = variants.write_bvh(variants.z_up(load_bvh(WALK)), tmp_path / "walk_z_up.bvh")
    out, report = tmp_path / "z.csv", tmp_path / "z.json"
    proc = launcher("bake", "--source", z_up, "--source-up", "Z", "--robot", G1, "--frames", f"0:{FRAMES}",
                    "--out", out, "--report", report)
    assert proc.returncode == 0, proc.stderr
    header, rows = read_csv(out)
    header0, rows0 = read_csv(walk_bake[1])
    assert header == header0
    joints = [k for k, name in enumerate(header) if name not in ROOT_HEADER.split(",")]
    assert np.degrees(np.sqrt(np.mean((rows[:, joints] - rows0[:, joints]) ** 2))) < 0.5
    lying = launcher("bake", "--source", z_up, "--robot", G1, "--frames", f"0:{FRAMES}",
                     "--out", tmp_path / "lying.csv", "--report", tmp_path / "lying.json")
    if lying.returncode == 0:  # if it bakes at all, the report must not look fine
        assert json.loads((tmp_path / "lying.json").read_text())["automap_confidence"] < 1.0


def test_balance_readout_of_a_bake(walk_bake, tmp_path):
    """`balance` reads the bake CSV: the retargeted walk keeps the human's balance, not the
    robot's, so its ZMP leaves the G1's feet on many frames; standing still it would not."""
    report = tmp_path / "balance.json"
    proc = launcher("balance", "--motion", walk_bake[1], "--robot", G1, "--report", report, "--per-frame")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(report.read_text())
    assert data["frames"] == FRAMES and len(data["zmp_m"]) == FRAMES
    assert data["mass_kg"] == pytest.approx(33.34, abs=0.01)
    assert 0.0 < data["zmp_outside_support_pct"] < 100.0
    assert "ZMP outside the support" in proc.stdout


def test_balance_reads_an_export_in_degrees_in_its_own_units(walk_bake, tmp_path):
    """An export says its units (csv sidecar, npz): read as radians, degrees would tip the robot
    over (feet off the ground on many frames)."""
    from core.motion.bake_csv import read_bake_csv
    from core.playback import PlaybackTrack, write_playback

    table = read_bake_csv(walk_bake[1])
    track = PlaybackTrack(table.joint_names, float(np.median(np.diff(table.time))), table.root_position,
                          table.root_quaternion, table.q)
    reports = {}
    for name, fmt in (("rad.csv", None), ("deg.csv", "csv"), ("deg.npz", "npz")):
        motion = walk_bake[1] if fmt is None else tmp_path / name
        if fmt:
            write_playback(motion, track, fmt, degrees=True)
        proc = launcher("balance", "--motion", motion, "--robot", G1, "--report", tmp_path / f"{name}.json")
        assert proc.returncode == 0, proc.stderr
        reports[name] = json.loads((tmp_path / f"{name}.json").read_text())
    for name in ("deg.csv", "deg.npz"):
        for key in ("frames_without_support", "zmp_outside_support_pct", "min_support_margin_m"):
            assert reports[name][key] == pytest.approx(reports["rad.csv"][key], abs=1e-6), (name, key)
    # without its sidecar the export is read as radians: the report says the values look like degrees
    from core.playback.formats import sidecar_path

    assert not any("sidecar" in w for name in reports for w in reports[name]["warnings"])
    sidecar_path(tmp_path / "deg.csv").unlink()
    proc = launcher("balance", "--motion", tmp_path / "deg.csv", "--robot", G1, "--report", tmp_path / "bare.json")
    assert proc.returncode == 0, proc.stderr
    warning = json.loads((tmp_path / "bare.json").read_text())["warnings"][0]
    assert "deg.csv" in warning and "degrees" in warning and "sidecar" in warning and "sidecar" in proc.stderr


def test_balance_names_a_missing_joint(walk_bake, tmp_path):
    header, rows = read_csv(walk_bake[1])
    keep = [k for k, name in enumerate(header) if name != "left_knee_joint"]
    bad = tmp_path / "no_knee.csv"
    bad.write_text(",".join(header[k] for k in keep) + "\n"
                   + "\n".join(",".join(repr(v) for v in row[keep]) for row in rows) + "\n")
    assert_one_line_error(launcher("balance", "--motion", bad, "--robot", G1), "left_knee_joint")


def test_balance_of_another_robots_motion_counts_the_joints_it_lacks(extension, capsys, tmp_path):
    """The H1's bake checked against the G1 named five of the 13 joints it lacks and no more, as
    if those five were all: a user fixing them one by one met the next five."""
    from core.library.cli import main as core_main

    h1 = ROOT / "tests" / "data" / "robots" / "unitree_h1_19dof.urdf"
    motion = tmp_path / "walk_h1.csv"
    assert core_main(["bake", "--source", str(WALK), "--robot", str(h1), "--frames", "0:20", "--out", str(motion),
                      "--contacts", "off"]) == 0
    capsys.readouterr()
    code, stdout, stderr = _main(extension, capsys, "balance", "--motion", motion, "--robot", G1)
    header = motion.read_text().splitlines()[0].split(",")
    lacking = [name for name, _, _ in urdf_joints(G1) if name not in header]
    assert code == 1 and len(lacking) == 13
    assert f"no column for 13 of the 29 joints of {G1}: {', '.join(lacking[:5])} and 8 more" in stderr, stderr


def test_splice_main_sides_may_each_be_auto(extension):
    """`--main 1:auto` and `auto:7` detect the side written auto, as an empty side does."""
    import importlib

    parse_main = importlib.import_module(f"{extension.__name__}.cli.splice").parse_main
    assert parse_main("1:auto", "a.bvh") == parse_main("1:", "a.bvh") == (1.0, None)
    assert parse_main("AUTO:7", "a.bvh") == parse_main(":7", "a.bvh") == (None, 7.0)
    assert parse_main("auto", "a.bvh") == (None, None)
    with pytest.raises(Exception, match="expected A_START:A_END"):
        parse_main("1:soon", "a.bvh")
    for empty in ("0:0", "2.5:2.5", "3:1"):  # a main movement of no length cut the clip to an instant
        with pytest.raises(Exception, match="A_END must come after A_START"):
            parse_main(empty, "a.bvh")


def test_splice_summary_says_what_a_join_saves_or_adds(extension):
    """A join that saves nothing reads 'saves 0.00 s', not '-0.00'; one longer than what it cuts, 'adds'."""
    import importlib
    from types import SimpleNamespace

    summary = importlib.import_module(f"{extension.__name__}.operators.splice").join_summary
    join = dict(a_clip="walk", a_time_s=1.0, b_clip="hop", b_time_s=0.5, angle_difference_deg=12.0,
                transition_s=0.4, criteria_met=True)
    assert summary(SimpleNamespace(**join, time_saved_s=-1e-9)).endswith("saves 0.00 s")
    assert summary(SimpleNamespace(**join, time_saved_s=-0.3)).endswith("adds 0.30 s")
    assert summary(SimpleNamespace(**join, time_saved_s=1.25)).endswith("saves 1.25 s")


def test_an_fbx_bake_takes_the_self_collision_flags(clean_scene, tmp_path):
    """An FBX clip goes through Blender's importer and the UI's bake (cli.common.clip_inputs), not core's
    BVH path: --avoid-self-collision and --collision-margin reach that bake too (the walk's arms out of
    the G1's body), and are said in its report's mapping."""
    import bpy

    assert bpy.ops.import_anim.bvh(filepath=str(WALK), update_scene_fps=True) == {'FINISHED'}
    fbx = tmp_path / "walk.fbx"
    assert bpy.ops.export_scene.fbx(filepath=str(fbx), object_types={'ARMATURE'}, bake_anim=True) == {'FINISHED'}
    figures = {}
    for flag in ("--no-avoid-self-collision", "--avoid-self-collision"):
        report_path = tmp_path / f"{flag}.json"
        proc = launcher("bake", "--source", fbx, "--robot", G1, "--frames", "0:240", flag, "--collision-margin",
                        "0.015", "--out", tmp_path / f"{flag}.csv", "--report", report_path)
        assert proc.returncode == 0, proc.stderr
        report = json.loads(report_path.read_text())
        assert report["mapping"]["settings"]["collision_margin"] == 0.015
        figures[flag] = (report["mapping"]["settings"]["avoid_self_collision"], report["self_collision_pct"] > 0)
    assert figures == {"--no-avoid-self-collision": (False, True), "--avoid-self-collision": (True, False)}
