"""Motion programs in Blender: parts as bone collections of the G1 rig, basic motions made from
bakes of the bundled walk, a program compiled onto the NLA (tracks, strip times, markers, undo)."""
from __future__ import annotations

import importlib

import bpy
import pytest

PROGRAM = """( a modified walk, then two steps )
10 motion <do:="@KARATE">
20 motion <do:="@@STEPS">
30 joint motion to @KARATE
40   base <do:="WALK2">
50   item RIGHTARM <do:="WALK3">
60   VOICE <do:="hai"> <from:=timer 5>
70 end
80 pileup motion to @@STEPS
90   repeat while 2
100    motion <do:="WALK3">
110  end
120 end
"""


def _bake_motion(settings, robot, frames, name, extension):
    ops = importlib.import_module(extension.__name__ + ".operators.program")
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = frames
    assert bpy.ops.robot_retarget.bake() == {'FINISHED'}
    return ops.make_basic_motion(robot, robot.animation_data.action, name)


def test_compile_a_program_onto_the_nla(walk_on_g1, extension, tmp_path):
    settings, source, robot = walk_on_g1(frames=(1, 121))
    ops = importlib.import_module(extension.__name__ + ".operators.program")
    parts = ops.make_part_collections(robot)
    assert {"LEFTLEG", "RIGHTLEG", "LEFTARM", "RIGHTARM", "WAIST"} <= set(parts)
    assert robot.data.collections.get("RIGHTARM") is not None
    assert all(len(joints) >= 2 for joints in parts.values())
    walk2 = _bake_motion(settings, robot, (1, 121), "WALK2", extension)
    walk3 = _bake_motion(settings, robot, (200, 260), "WALK3", extension)
    assert set(walk2) == set(walk3) == set(parts) and walk2["RIGHTARM"].name == "WALK2.RIGHTARM"
    fps = bpy.context.scene.render.fps / bpy.context.scene.render.fps_base
    d2, d3 = 120 / fps, 60 / fps
    playing = robot.animation_data.action.name

    text = bpy.data.texts.new("steps")
    text.from_string(PROGRAM)
    bpy.context.scene.frame_start = 1
    bpy.ops.ed.undo_push(message="before the program")
    assert bpy.ops.robot_retarget.compile_program('EXEC_DEFAULT', True, text="steps") == {'FINISHED'}
    robot = bpy.data.objects[robot.name]
    tracks = {t.name.split(": ")[-1]: t for t in robot.animation_data.nla_tracks if t.name.startswith("Program")}
    assert set(tracks) == set(parts)
    arm = [(s.action.name, s.frame_start) for s in tracks["RIGHTARM"].strips]
    assert arm[0] == ("WALK3.RIGHTARM", 1.0)  # the modified motion lends WALK3's arm
    leg = [(s.action.name, round(s.frame_start, 3)) for s in tracks["LEFTLEG"].strips]
    assert [name for name, _ in leg] == ["WALK2.LEFTLEG", "WALK3.LEFTLEG", "WALK3.LEFTLEG"]
    assert [frame for _, frame in leg] == pytest.approx([1.0, 1 + round(d2 * fps), 1 + round((d2 + d3) * fps)],
                                                        abs=1.0)
    markers = [m for m in bpy.context.scene.timeline_markers if m.name.startswith("VOICE")]
    assert [(m.name, m.frame) for m in markers] == [("VOICE: hai", 1 + round(0.5 * fps))]
    assert robot.animation_data.action.name == playing  # what the robot plays is not changed
    assert bpy.data.actions["WALK2.LEFTLEG"].get("robot_retarget_part") == "LEFTLEG"

    # the same library saved as a .blend serves the command line
    blend = tmp_path / "library.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(blend), copy=True)
    from .test_cli import launcher

    program = tmp_path / "steps.txt"
    program.write_text(PROGRAM)
    proc = launcher("program", "--library", blend, "--program", program, "--out", tmp_path / "timeline.json")
    assert proc.returncode == 0, proc.stderr
    items = __import__("json").loads((tmp_path / "timeline.json").read_text())["items"]
    assert [(i["module"], round(i["start_s"] * fps)) for i in items if i["part"] == "LEFTLEG"] == \
        [("WALK2", 0), ("WALK3", round(d2 * fps)), ("WALK3", round((d2 + d3) * fps))]

    name = robot.name
    bpy.ops.ed.undo()
    robot = bpy.data.objects[name]
    assert not [t for t in robot.animation_data.nla_tracks if t.name.startswith("Program")]
    assert not [m for m in bpy.context.scene.timeline_markers if m.name.startswith("VOICE")]


def test_a_program_error_names_its_line_and_column(walk_on_g1, extension):
    settings, source, robot = walk_on_g1(frames=(1, 30))
    importlib.import_module(extension.__name__ + ".operators.program").make_part_collections(robot)
    text = bpy.data.texts.new("bad")
    text.from_string('motion <do:="@X">\njoint motion to @Y\nend\n')
    with pytest.raises(RuntimeError, match=r"line 1, column 13: no definition of @X"):
        bpy.ops.robot_retarget.compile_program(text="bad")


def test_program_on_the_command_line(tmp_path):
    """`robot-retarget program` with a library folder made from a bake of the walk on the G1."""
    import json

    import numpy as np

    from .test_cli import G1, WALK, assert_one_line_error, launcher, read_csv, urdf_joints

    bake = tmp_path / "walk.csv"
    assert launcher("bake", "--source", WALK, "--robot", G1, "--frames", "0:120", "--out", bake).returncode == 0
    lines = bake.read_text().splitlines()
    library = tmp_path / "library"
    library.mkdir()
    (library / "WALK2.csv").write_text("\n".join(lines[:61]) + "\n")
    (library / "WALK3.csv").write_text("\n".join([lines[0]] + lines[61:]) + "\n")
    joints = [name for name, _, _ in urdf_joints(G1)]
    parts = {"RIGHTARM": [j for j in joints if j.startswith(("right_shoulder", "right_elbow"))],
             "LEFTARM": [j for j in joints if j.startswith(("left_shoulder", "left_elbow"))],
             "RIGHTLEG": [j for j in joints if j.startswith(("right_hip", "right_knee", "right_ankle"))],
             "LEFTLEG": [j for j in joints if j.startswith(("left_hip", "left_knee", "left_ankle"))]}
    (library / "parts.json").write_text(json.dumps({"format": "robot_retarget.parts", "version": 1,
                                                    "parts": {k: {"joints": v} for k, v in parts.items()}}))
    program = tmp_path / "steps.txt"
    program.write_text(PROGRAM)
    out, motion = tmp_path / "timeline.json", tmp_path / "motion.csv"
    proc = launcher("program", "--library", library, "--program", program, "--out", out, "--motion", motion,
                    "--rate", "50", "--robot", G1)
    assert proc.returncode == 0, proc.stderr
    timeline = json.loads(out.read_text())
    assert timeline["format"] == "robot_retarget.timeline" and timeline["version"] == 1
    d2, d3 = 60 * 0.008333, 59 * 0.008333
    assert timeline["duration_s"] == pytest.approx(d2 + 2 * d3, abs=1e-3)
    starts = [(i["part"], i["module"], round(i["start_s"], 4)) for i in timeline["items"]]
    assert ("RIGHTARM", "WALK3", 0.0) in starts and ("LEFTLEG", "WALK2", 0.0) in starts
    assert [s for p, m, s in starts if p == "LEFTLEG"] == pytest.approx([0.0, d2, d2 + d3], abs=1e-3)
    assert [i["start_s"] for i in timeline["items"]] == sorted(i["start_s"] for i in timeline["items"])
    assert timeline["voice"] == [{"text": "hai", "start_s": pytest.approx(0.5)}]
    assert all(set(v) == {"part", "joint", "time_s", "speed", "limit"} for v in timeline["violations"])
    header, rows = read_csv(motion)
    assert header[8:] == joints and np.allclose(np.diff(rows[:, 0]), 0.02)

    program.write_text('motion <do:="@KARATE">\njoint motion to @KARATE\n item RIGHTARM <do:=NOPE>\nend\n')
    proc = launcher("program", "--library", library, "--program", program, "--out", tmp_path / "t2.json")
    assert_one_line_error(proc, "line 3, column 21", "NOPE")  # at the value, not at `item`


def test_set_frame_times_refuses_a_joint_too_slow(walk_on_g1, extension):
    settings, source, robot = walk_on_g1(frames=(1, 13))
    assert robot.data.collections.get("LEFTLEG") is not None  # made when the URDF was imported
    ops = importlib.import_module(extension.__name__ + ".operators.program")
    modules = _bake_motion(settings, robot, (1, 13), "SHORT", extension)
    action = modules["LEFTLEG"]
    keys = 13
    slow = [0.1 * k for k in range(keys)]  # 1.2 s instead of 0.1 s: any leg can do that
    frames = ops.set_frame_times(robot, action, slow, bpy.context.scene)
    fps = bpy.context.scene.render.fps / bpy.context.scene.render.fps_base
    assert frames[-1] - frames[0] == pytest.approx(1.2 * fps)
    fast = [0.0005 * k for k in range(keys)]  # the whole step in 6 ms: no knee turns that fast
    with pytest.raises(RuntimeError, match=r"joint left_\w+ cannot make it: .* rad/s, its limit is"):
        bpy.ops.robot_retarget.set_frame_times(module=action.name, times=", ".join(f"{t:g}" for t in fast))
    with pytest.raises(RuntimeError, match="has 13 keys; 2 times were given"):
        bpy.ops.robot_retarget.set_frame_times(module=action.name, times="0, 1")


def test_the_program_commands_motion_keeps_every_joint_inside_the_urdfs_limits(extension, capsys, tmp_path):
    """A Panda program driving its first three joints wrote 0 for the others, outside panda_joint4's
    limits [-3.0718, -0.0698]; its `wrote` line left the report out. A `set` past a limit is refused
    at its line, naming the joint, nothing written."""
    import json

    import numpy as np

    from .test_cli import ROOT, _main, read_csv, urdf_joints

    panda = ROOT / "tests" / "data" / "robots" / "franka_panda.urdf"
    library = tmp_path / "library"
    library.mkdir()
    (library / "parts.json").write_text(json.dumps({"format": "robot_retarget.parts", "version": 1, "parts": {
        "ARM": {"joints": ["panda_joint1", "panda_joint2", "panda_joint3"], "positions": {"out": 0.5}, "speed": 1.0}}}))
    program = tmp_path / "reach.txt"
    program.write_text('motion <do:="@R">\njoint motion to @R\n ARM <do:=out>\nend\n')
    out, motion, report = tmp_path / "timeline.json", tmp_path / "motion.csv", tmp_path / "report.json"
    code, stdout, stderr = _main(extension, capsys, "program", "--library", library, "--program", program, "--out", out,
                                 "--motion", motion, "--rate", 50, "--robot", panda, "--report", report)
    assert code == 0, stderr
    assert stdout.splitlines()[-1] == f"wrote {out} and {motion} and {report}"
    header, rows = read_csv(motion)
    for name, lower, upper in urdf_joints(panda):
        if name in header:
            values = rows[:, header.index(name)]
            assert np.all((values >= lower) & (values <= upper)), (name, values.min(), values.max())
    assert np.all(rows[:, header.index("panda_joint4")] == -0.0698)  # 0 clipped into its range
    assert rows[-1, header.index("panda_joint2")] == 0.5

    program.write_text('motion <do:="@R">\njoint motion to @R\n set ARM <end:=3> <speed:=1>\nend\n')
    for path in (out, motion, report):
        path.unlink()
    code, stdout, stderr = _main(extension, capsys, "program", "--library", library, "--program", program, "--out", out,
                                 "--motion", motion, "--robot", panda)
    assert code == 1 and "line 3, column 10" in stderr and "panda_joint1 to 3" in stderr, stderr
    assert "outside its limits [-2.897, 2.897]" in stderr and not out.exists() and not motion.exists()
