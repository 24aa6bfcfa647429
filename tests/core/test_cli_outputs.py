"""The commands' own files: no output may replace another output or an input (a user who
types --report with the CSV's name, or an output named like the clip, loses nothing), and
`batch` makes its output folder. Runs `robot-retarget-core` in process."""
from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from library_clips import make_library  # noqa: E402
from core.library.cli import main  # noqa: E402
from core.playback import read_playback  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
G1 = ROOT / "data" / "robots" / "g1" / "unitree_g1_29dof.urdf"


@pytest.fixture
def clip(tmp_path) -> Path:
    return make_library(tmp_path / "clips", 1, seconds=1.0)[0]


def _fails_naming(capsys, argv: list[str], name: str) -> str:
    assert main([str(a) for a in argv]) == 1
    err = capsys.readouterr().err
    assert name in err and "each output needs a name of its own" in err, err
    return err


def test_report_named_like_the_csv_is_refused_before_anything_is_written(tmp_path, clip, capsys):
    out = tmp_path / "same.csv"
    _fails_naming(capsys, ["bake", "--source", clip, "--robot", G1, "--out", out, "--report", out,
                           "--overwrite"], "same.csv")
    assert not out.exists()


def test_an_output_named_like_the_clip_leaves_the_clip_alone(tmp_path, clip, capsys):
    before = clip.read_bytes()
    _fails_naming(capsys, ["bake", "--source", clip, "--robot", G1, "--out", clip, "--overwrite"], clip.name)
    assert clip.read_bytes() == before


def test_export_report_named_like_the_playback_sidecar_is_refused(tmp_path, clip, capsys):
    out = tmp_path / "c.csv"
    _fails_naming(capsys, ["export", "--source", clip, "--robot", G1, "--out", out, "--report",
                           tmp_path / "c.meta.json", "--contacts", "off"], "c.meta.json")
    assert not out.exists()


def test_batch_makes_its_output_folder(tmp_path, clip):
    out_dir = tmp_path / "new" / "library"
    assert main(["batch", "--robot", str(G1), "--inputs", str(clip.parent), "--out-dir", str(out_dir),
                 "--format", "npz", "--contacts", "off"]) == 0
    written = sorted(out_dir.iterdir())
    assert [p.suffix for p in written] == [".npz"]
    read_playback(written[0])
    shutil.rmtree(out_dir)


def test_rows_past_the_declared_frames_are_a_report_warning_not_a_python_one(tmp_path, clip, capsys):
    text = clip.read_text(encoding="utf-8").splitlines()
    k = next(i for i, line in enumerate(text) if line.startswith("Frames:"))
    frames = int(text[k].split()[1])
    text[k] = f"Frames: {frames - 5}"
    short = tmp_path / "short.bvh"
    short.write_text("\n".join(text) + "\n", encoding="utf-8")
    report = tmp_path / "short.json"
    assert main(["bake", "--source", str(short), "--robot", str(G1), "--out", str(tmp_path / "short.csv"),
                 "--report", str(report), "--contacts", "off"]) == 0
    err = capsys.readouterr().err
    assert "UserWarning" not in err and "5 rows after the" in err
    assert any("5 rows after the" in w for w in json.loads(report.read_text())["warnings"])


def test_a_preset_for_another_skeleton_or_robot_names_its_file(tmp_path, clip, capsys):
    from core.library.clip import read_clip
    from core.model.kinematics import KinematicTree
    from core.model.urdf import parse_urdf
    from core.retarget import auto_map

    mapping = auto_map(read_clip(clip), KinematicTree(parse_urdf(G1)))
    preset = tmp_path / "walk_g1.json"
    mapping.save(preset)
    h1 = ROOT / "tests" / "data" / "robots" / "unitree_h1_19dof.urdf"
    assert main(["bake", "--source", str(clip), "--robot", str(h1), "--mapping", str(preset),
                 "--out", str(tmp_path / "a.csv")]) == 1
    err = capsys.readouterr().err
    assert str(preset) in err and "robot 'h1_19dof' has no link" in err and err.count("\n") == 1
    leg = next(c for c in mapping.chains if c.role == "leg")
    leg.source_base = "LeftHipp"
    mapping.save(preset, overwrite=True)
    assert main(["bake", "--source", str(clip), "--robot", str(G1), "--mapping", str(preset),
                 "--out", str(tmp_path / "b.csv")]) == 1
    err = capsys.readouterr().err
    assert str(preset) in err and f"chain {leg.name!r}" in err and "no bone 'LeftHipp'" in err

    mapping = auto_map(read_clip(clip), KinematicTree(parse_urdf(G1)))
    mapping.allow_collision = [["left_rubber_hand", "right_rubber_hnd"]]  # a typo in the collision overrides
    mapping.save(preset, overwrite=True)
    assert main(["bake", "--source", str(clip), "--robot", str(G1), "--mapping", str(preset),
                 "--out", str(tmp_path / "c.csv")]) == 1
    err = capsys.readouterr().err
    assert str(preset) in err and "allow_collision" in err and "no link 'right_rubber_hnd'" in err
    assert not (tmp_path / "c.csv").exists()


@pytest.mark.parametrize("field,value,words", [
    ("robot_root", "pelvis_link", "robot_root: robot 'g1_29dof_rev_1_0' has no link 'pelvis_link'"),
    ("source_root", "Hipps", "has no bone 'Hipps'"),
    ("tip_weight", -5.0, "tip_weight: -5.0 is outside its range (at least 0.0)"),
    ("points", -3, "points: -3 is outside its range (0 to 64)"),
    ("smoothness", -1.0, "settings.smoothness: -1.0 is outside its range"),
    ("iterations", 0, "settings.iterations: 0 is outside its range (1 to 100)"),
])
def test_a_preset_value_the_sidebar_would_not_take_names_its_file_and_field(tmp_path, clip, capsys, field,
                                                                            value, words):
    """Each of these once baked without a word (a new user's hand-edited preset): an unknown root
    was ignored, a negative tip weight put NaN into the solve, a negative smoothness threw the
    G1's arms 60 degrees off. Now the bake stops before anything is written, naming the field."""
    from core.library.clip import read_clip
    from core.model.kinematics import KinematicTree
    from core.model.urdf import parse_urdf
    from core.retarget import auto_map

    mapping = auto_map(read_clip(clip), KinematicTree(parse_urdf(G1)))
    data = mapping.to_dict()
    leg = next(c for c in data["chains"] if c["role"] == "leg")
    target = data if field.endswith("_root") else leg if field in leg else data["settings"]
    target[field] = value
    preset = tmp_path / "edited.json"
    preset.write_text(json.dumps(data), encoding="utf-8")
    out = tmp_path / "a.csv"
    assert main(["bake", "--source", str(clip), "--robot", str(G1), "--mapping", str(preset),
                 "--out", str(out), "--contacts", "off"]) == 1
    err = capsys.readouterr().err
    assert str(preset) in err and field in err and words in err and err.count("\n") == 1, err
    assert not out.exists()


@pytest.mark.parametrize("side", ["robot", "source"])
def test_a_chain_whose_tip_is_not_below_its_base_is_named(tmp_path, clip, capsys, side):
    """A preset whose left leg starts at the right hip stopped with "robot link 'left_ankle_roll_link'
    does not descend from 'right_hip_pitch_link'": which of the preset's chains was left to guess
    (the source side named it already)."""
    from core.library.clip import read_clip
    from core.model.kinematics import KinematicTree
    from core.model.urdf import parse_urdf
    from core.retarget import auto_map

    mapping = auto_map(read_clip(clip), KinematicTree(parse_urdf(G1)))
    legs = {c.side: c for c in mapping.chains if c.role == "leg"}
    if side == "robot":
        legs["left"].robot_base = legs["right"].robot_base
    else:
        legs["left"].source_base = legs["right"].source_base
    preset = mapping.save(tmp_path / "crossed.json")
    out = tmp_path / "a.csv"
    assert main(["bake", "--source", str(clip), "--robot", str(G1), "--mapping", str(preset),
                 "--out", str(out), "--contacts", "off"]) == 1
    err = capsys.readouterr().err
    assert err.count("chain") == 1 and f"chain {legs['left'].name!r}: {side}" in err, err
    assert "does not descend from" in err, err
    assert err.count("\n") == 1 and not out.exists()


def test_an_acceleration_limit_for_a_joint_the_robot_lacks_names_the_settings_file_before_the_bake(
        tmp_path, clip, capsys, monkeypatch):
    """An export settings file written for the H1 ("left_ankle_joint") given with the G1 failed after
    the whole bake with a line that did not say which file held the joint."""
    import core.library.clip as clip_module  # the command imports its bake from there when it runs

    settings = tmp_path / "h1_export.json"
    settings.write_text(json.dumps({"rate_hz": 50, "joint_acceleration_limits": {"left_ankle_joint": 40.0}}))
    baked = []
    monkeypatch.setattr(clip_module, "bake_clip_file", lambda *a, **k: baked.append(a) or pytest.fail("baked"))
    out = tmp_path / "a.csv"
    assert main(["export", "--source", str(clip), "--robot", str(G1), "--settings", str(settings),
                 "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert f"{settings}: acceleration limit for joint 'left_ankle_joint'" in err and err.count("\n") == 1, err
    assert not baked and not out.exists()


def test_an_export_named_for_another_format_is_refused(tmp_path, clip, capsys):
    out = tmp_path / "walk.csv"
    assert main(["export", "--source", str(clip), "--robot", str(G1), "--format", "npz", "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert "walk.csv: npz playback files are named *.npz" in err and not out.exists()


def test_ctrl_c_mid_bake_is_one_line_and_exit_130_with_nothing_written(tmp_path, clip, capsys, monkeypatch):
    """A real SIGINT while the clip bakes (as Ctrl-C sends it): one line on stderr, the shell's
    code for SIGINT, no traceback and no output file."""
    import signal

    import core.library.clip as clip_module  # the command imports its bake from there when it runs

    bake = clip_module.bake_clip_file

    def interrupted_bake(*args, **kwargs):
        signal.raise_signal(signal.SIGINT)
        return bake(*args, **kwargs)

    monkeypatch.setattr(clip_module, "bake_clip_file", interrupted_bake)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)  # even where the runner ignores it
    try:
        out = tmp_path / "walk.csv"
        assert main(["bake", "--source", str(clip), "--robot", str(G1), "--out", str(out)]) == 130
    finally:
        signal.signal(signal.SIGINT, previous)
    err = capsys.readouterr().err
    assert err.strip() == "robot-retarget-core: interrupted" and not out.exists()


def test_a_folder_as_the_source_is_said_to_be_one(tmp_path, clip, capsys):
    """A folder given to bake (batch's --inputs takes folders) read "unsupported clip type ''"."""
    out = tmp_path / "walk.csv"
    assert main(["bake", "--source", str(clip.parent), "--robot", str(G1), "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert f"{clip.parent}: a folder, not a clip file" in err and "--inputs" in err and not out.exists(), err


def test_frames_past_the_clip_are_used_up_to_its_end_and_the_report_says_so(tmp_path, clip, capsys):
    out, report = tmp_path / "tail.csv", tmp_path / "tail.json"
    assert main([str(a) for a in ["bake", "--source", clip, "--robot", G1, "--frames", "10:100000",
                                  "--out", out, "--report", report]]) == 0, capsys.readouterr().err
    written = json.loads(report.read_text(encoding="utf-8"))
    count = written["frames"] + 10
    assert any(w.startswith("--frames '10:100000'") and f"using 10:{count}" in w for w in written["warnings"]), \
        written["warnings"]
