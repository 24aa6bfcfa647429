"""The newer commands (gait, balance) on robots and clips from elsewhere, as an outside check
would run them: a URDF missing one body's mass, a clip of one frame, a clip that never steps."""
from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import numpy as np
import pytest

from core.balance import BalanceError, MassModel, balance_readout
from core.balance.gait import generate_gait
from core.model.kinematics import KinematicTree
from core.model.urdf import parse_urdf
from core.motion.bvh import load_bvh
from core.retarget.automap import auto_map
from core.retarget.pipeline import retarget

ROOT = Path(__file__).resolve().parents[2]
WALK = ROOT / "data" / "motion" / "cmu_131_01_walk_m.bvh"
G1 = ROOT / "data" / "robots" / "g1" / "unitree_g1_29dof.urdf"
H1 = ROOT / "tests" / "data" / "robots" / "unitree_h1_19dof.urdf"
DOUBLE_SUPPORT_FRAME = 260  # both of the walk's feet flat on the ground


@pytest.fixture(scope="module")
def walk():
    return load_bvh(WALK)


@pytest.fixture(scope="module")
def g1():
    return KinematicTree(parse_urdf(G1))


def _frames(clip, frames: np.ndarray):
    return dataclasses.replace(clip, motion=clip.motion[frames]).to_source_motion()


def _g1_with_knee_mass(tmp_path, mass: str | None) -> KinematicTree:
    """G1 with its left knee's <inertial> removed (None) or its mass set."""
    text = G1.read_text()
    knee = re.search(r'<link\s+name="left_knee_link">.*?(<inertial>.*?</inertial>)', text, re.S)
    inertial = knee.group(1)
    changed = "" if mass is None else re.sub(r'<mass value="[^"]*"', f'<mass value="{mass}"', inertial)
    path = tmp_path / "g1_knee.urdf"
    path.write_text(text[:knee.start(1)] + changed + text[knee.end(1):])
    return KinematicTree(parse_urdf(path))


@pytest.mark.parametrize("mass", [None, "0"])
def test_a_moving_body_without_mass_is_named_and_the_bake_still_works(mass, walk, tmp_path):
    """A G1 whose knee lost its <inertial> read the walk's worst margin -514 mm (-469 with it)
    and said nothing: the figures were of another robot. Fixed sensors without mass (the H1's
    camera and logo) are fine, as URDF allows."""
    tree = _g1_with_knee_mass(tmp_path, mass)
    with pytest.raises(BalanceError, match="'left_knee_link' moves and has geometry but no <inertial>"):
        MassModel.build(tree)
    motion = _frames(walk, np.arange(240, 300))
    result = retarget(motion, tree, auto_map(motion, tree), contacts="off", figures=False)
    assert np.all(np.isfinite(result.q)) and len(result.q) == 60
    with pytest.raises(BalanceError, match="left_knee_link"):
        balance_readout(tree, result.q, np.tile(np.eye(4), (60, 1, 1)), motion.fps)
    assert MassModel.build(KinematicTree(parse_urdf(H1))).total > 50.0


def test_a_clip_of_one_frame_is_refused_as_too_short_for_a_gait(walk, g1):
    """Both feet flat on the ground, and the refusal read 'the right foot never touches the ground'."""
    motion = _frames(walk, np.array([DOUBLE_SUPPORT_FRAME]))
    with pytest.raises(BalanceError, match=r"never on the ground over its 1 frame\(s\) \(0\.008 s; a detected "
                                           r"contact lasts at least"):
        generate_gait(motion, g1, auto_map(motion, g1))
    swing = _frames(walk, np.arange(100, 130))  # 0.25 s with the left foot in the air throughout
    with pytest.raises(BalanceError, match=r"the left foot is never on the ground over its 30 frame\(s\) "
                                           r"\(0\.250 s\): a gait needs"):
        generate_gait(swing, g1, auto_map(swing, g1))


def test_a_clip_that_never_steps_stands_and_says_its_stance_moved(walk, g1):
    """The walk's double support held 1.5 s: the person stands a stride apart, wider than the G1
    stands, so the stance is moved; the warning spoke of '1 step(s) moved ... later steps aim at
    the person's footprints again' for a gait of no step."""
    motion = _frames(walk, np.full(180, DOUBLE_SUPPORT_FRAME))
    report = generate_gait(motion, g1, auto_map(motion, g1)).report
    assert report["steps"] == 0 and report["steps_moved"] == 1
    assert report["zmp_outside_support_pct"] == 0.0 and report["min_support_margin_m"] > 0.05
    assert report["stance_slide_m"] < 1e-4
    assert any(w.startswith("the clip never steps, and the stance it stands in was moved") for w in report["warnings"])
    assert not any("step(s) moved" in w for w in report["warnings"])


def test_contacts_of_one_foot_are_refused_naming_the_other(walk, g1):
    """A contacts file giving the left foot alone stopped the gait with the bare KeyError 'right'."""
    from core.feet.contacts import Contacts

    motion = _frames(walk, np.arange(60))
    contacts = Contacts({"left": np.ones(60, bool)}, motion.fps)
    with pytest.raises(BalanceError, match="the contacts give no right foot"):
        generate_gait(motion, g1, auto_map(motion, g1), contacts=contacts)


def test_a_balance_on_feet_without_soles_says_why_it_fails(g1):
    """simple_humanoid's legs end at the ankle with no foot geometry: its support is a point and the
    readout said 100 % outside with no word of why."""
    simple = KinematicTree(parse_urdf(ROOT / "tests" / "data" / "robots" / "simple_humanoid.urdf"))
    warned = {}
    for name, tree in (("simple", simple), ("g1", g1)):
        readout = balance_readout(tree, np.zeros((20, tree.dof)), np.tile(np.eye(4), (20, 1, 1)), 100.0)
        warned[name] = [w for w in readout["warnings"] if "stands on soles" in w]
    assert len(warned["simple"]) == 1 and "'r_ankle', 'l_ankle'" in warned["simple"][0]
    assert warned["g1"] == []


def test_a_gait_whose_stance_foot_lifts_says_so_instead_of_a_negative_worst(walk, g1):
    """The walk's frames 100-400 as a G1 gait at the default 5 ms: its stance foot lifts up to 7 mm
    at 1.73-1.81 s, no foot on the ground there. The report read 3.4 % of samples outside with a
    worst margin of +19 mm and warned "worst -19 mm outside": the worst was taken over the samples
    with a foot down, the outside share over all. Now the lifted samples are counted and said."""
    report = generate_gait(_frames(walk, np.arange(100, 400)), g1, auto_map(walk.to_source_motion(), g1)).report
    lifted = report["samples_without_support"]
    said = [w for w in report["warnings"] if "the multibody ZMP leaves the feet" in w]
    assert bool(said) == (report["zmp_outside_support_pct"] > 0.0)
    for w in said:
        assert all(float(mm) >= 0.0 for mm in re.findall(r"worst (-?[\d.]+) mm outside", w)), w
        assert (f"no foot within 5 mm of the ground on {lifted} of them" in w) == (lifted > 0), w
    if lifted and report["min_support_margin_m"] > 0.0:  # every sample outside is one without a foot down
        assert report["zmp_outside_support_pct"] == pytest.approx(100.0 * lifted / report["samples"])
        assert "worst" not in said[0]


def _core_command(*args):
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-m", "core.library.cli", *map(str, args)], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)


def test_the_packages_gait_and_balance_say_what_is_wrong_in_one_line(tmp_path):
    """`robot-retarget-core gait` / `balance` (no Blender) on bad input: one line naming the file or
    flag, exit 1, nothing written."""
    hop = ROOT / "tests" / "data" / "motion" / "cmu_131_03_hop.bvh"
    out = tmp_path / "gait.csv"
    urdf = tmp_path / "g1.urdf"
    urdf.write_bytes(G1.read_bytes())
    cases = [(["gait", "--source", hop, "--robot", G1, "--out", out], ("flight phase", "cmu_131_03_hop")),
             (["gait", "--source", WALK, "--robot", G1, "--contacts", "off", "--out", out], ("--contacts off",)),
             (["gait", "--source", WALK, "--robot", G1, "--rate", "0", "--out", out], ("--rate",)),
             (["gait", "--source", WALK, "--robot", tmp_path / "none.urdf", "--out", out], ("none.urdf",)),
             (["balance", "--motion", tmp_path / "none.csv", "--robot", G1], ("none.csv", "not found")),
             (["balance", "--motion", tmp_path, "--robot", G1], ("a folder", "--motion")),
             (["gait", "--source", WALK, "--robot", ROOT / "data", "--out", out], ("a folder", "--robot")),
             (["gait", "--source", WALK, "--robot", G1, "--contacts", tmp_path, "--out", out], ("a folder", "--contacts")),
             # an output named like an input is refused even with --overwrite (a report replaced the URDF)
             (["balance", "--motion", WALK, "--robot", urdf, "--report", urdf, "--overwrite"],
              ("urdf", "two of the command's files")),
             (["gait", "--source", WALK, "--robot", urdf, "--out", out, "--report", urdf, "--overwrite"],
              ("urdf", "two of the command's files"))]
    for args, words in cases:
        proc = _core_command(*args)
        lines = proc.stderr.strip().splitlines()
        assert proc.returncode == 1 and len(lines) == 1, proc.stderr
        assert lines[0].startswith("robot-retarget-core: error:") and all(w in lines[0] for w in words), lines[0]
        assert not out.exists() and urdf.read_bytes() == G1.read_bytes()


@pytest.mark.parametrize("command, flags", [
    ("gait", ["--source", WALK, "--robot", G1, "--out", "x.csv"]),
    ("balance", ["--motion", "x.csv", "--robot", G1]),
    ("bake", ["--source", WALK, "--robot", G1, "--out", "x.csv"])])
def test_an_unknown_flag_is_refused_with_the_subcommands_usage(command, flags, capsys):
    """A mistyped flag (`--rates`) after a subcommand shows that subcommand's usage and name: it
    showed the top-level `usage: robot-retarget-core [-h] COMMAND ...`, which lists no flag."""
    from core.library.cli import main

    assert main([command, *map(str, flags), "--rates", "50"]) == 2
    err = capsys.readouterr().err
    assert f"usage: robot-retarget-core {command} " in err
    assert f"robot-retarget-core {command}: error: unrecognized arguments: --rates 50" in err
    assert main(["--rates", "50"]) == 2  # with no subcommand, the top-level usage as before
    assert "usage: robot-retarget-core [-h] COMMAND" in capsys.readouterr().err
    assert main(["--bogus", command, *map(str, flags)]) == 2  # before the subcommand: the top level's to refuse
    err = capsys.readouterr().err
    assert "usage: robot-retarget-core [-h] COMMAND" in err and f"robot-retarget-core {command}: error" not in err
    assert "unrecognized arguments: --bogus" in err


@pytest.mark.parametrize("command, flags, said", [
    ("gait", ["--rate", "inf"], "--rate inf: expected a positive number of Hz"),  # said 'period 0.0 s'
    ("gait", ["--rate", "1e9"], "--rate 1e+09: expected a positive number of Hz, at most 10000"),  # MemoryError
    ("gait", ["--period", "1e-9"], "--period 1e-09: expected a positive number of seconds"),
    ("gait", ["--merge-s", "nan"], "--merge-s nan: must be a number"),  # walked as if not given
    ("gait", ["--sensitivity", "inf"], "--sensitivity inf: must be a positive number"),
    ("export", ["--rate", "1e9", "--contacts", "off"], "--rate 1e+09: expected a positive number of Hz, at most 100000")])
def test_a_control_rate_or_width_that_is_not_a_number_the_command_can_use_is_one_line(command, flags, said, tmp_path,
                                                                                      capsys):
    """Rates past what memory holds, infinite or not-a-number values: one line naming the flag, exit 1,
    before the clip is read (a gait at 1e9 Hz ended in a MemoryError's traceback)."""
    from core.library.cli import main

    out = tmp_path / "out.csv"
    assert main([command, "--source", str(WALK), "--robot", str(G1), "--out", str(out), *flags]) == 1
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"robot-retarget-core: error: {said}"), lines
    assert not out.exists()


def test_balance_on_a_clip_or_a_playback_format_it_does_not_read_says_which_it_reads(tmp_path, capsys):
    """`balance --motion` given the clip itself or an export it cannot read (pkl: 'not a text (UTF-8)
    file'; ros2-yaml, mujoco-keyframes: 'header must start with time_s,...') says what the file is and
    what it reads; an npz export of the same motion reads."""
    from core.library.cli import main

    files = [WALK]
    for fmt, ext in (("pkl", "pkl"), ("ros2-yaml", "yaml"), ("mujoco-keyframes", "xml"), ("npz", "npz")):
        out = tmp_path / f"walk.{ext}"
        assert main(["export", "--source", str(WALK), "--robot", str(G1), "--frames", "0:240", "--contacts", "off",
                     "--format", fmt, "--rate", "50", "--allow-violations", "--out", str(out)]) == 0
        files.append(out)
    capsys.readouterr()
    for path, said in zip(files, ("a clip, not a robot motion", "a pkl playback file", "a ros2-yaml playback file",
                                  "a mujoco-keyframes playback file")):
        assert main(["balance", "--motion", str(path), "--robot", str(G1)]) == 1
        lines = capsys.readouterr().err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"robot-retarget-core: error: {path}: {said}"), lines
        assert "--motion" in lines[0]
    assert main(["balance", "--motion", str(files[-1]), "--robot", str(G1)]) == 0
    assert " frames: ZMP outside the support on " in capsys.readouterr().out



def test_balance_of_another_robots_motion_names_the_columns_it_did_not_read(tmp_path, capsys):
    """A 29-dof G1 bake read on a G1 whose six wrist joints are fixed (a 23-dof URDF): the readout
    ran on the joints it has and said nothing of the six columns it dropped."""
    import json

    from core.library.cli import main
    from tests.robot_variants import retyped, write_urdf

    bake = tmp_path / "walk.csv"
    assert main(["bake", "--source", str(WALK), "--robot", str(G1), "--frames", "0:240", "--contacts", "off",
                 "--out", str(bake)]) == 0
    wrists = [j.name for j in parse_urdf(G1).joints if "wrist" in j.name and j.type != "fixed"]
    fewer = write_urdf(retyped(parse_urdf(G1), dict.fromkeys(wrists, "fixed")), tmp_path / "g1_23.urdf")
    for robot, dropped in ((fewer, wrists), (G1, [])):
        report = tmp_path / f"{robot.stem}.json"
        assert main(["balance", "--motion", str(bake), "--robot", str(robot), "--report", str(report)]) == 0
        said = [w for w in json.loads(report.read_text())["warnings"] if "name no joint of" in w]
        assert len(said) == bool(dropped), said
        if dropped:
            assert f"{len(dropped)} column(s) name no joint of {robot}" in said[0] and dropped[0] in said[0]
            assert said[0] in capsys.readouterr().err


def test_balance_reads_an_export_onto_a_robot_with_mimic_joints_without_a_word_of_its_columns(tmp_path, capsys):
    """Exports write a robot's mimic joints (multiplier x leader + offset); `balance` of that export on the
    same URDF warned that the mimic's column named no joint of it (a gripper's every export)."""
    import json

    from core.library.cli import main
    from tests.robot_variants import mimicking, write_urdf

    robot = write_urdf(mimicking(parse_urdf(G1), "right_wrist_yaw_joint", "left_wrist_yaw_joint"),
                       tmp_path / "g1_mimic.urdf")
    export, report = tmp_path / "walk.csv", tmp_path / "balance.json"
    assert main(["export", "--source", str(WALK), "--robot", str(robot), "--frames", "0:240", "--contacts", "off",
                 "--format", "csv", "--rate", "50", "--allow-violations", "--out", str(export)]) == 0
    assert "right_wrist_yaw_joint" in export.read_text().splitlines()[0]  # the mimic's column is written
    assert main(["balance", "--motion", str(export), "--robot", str(robot), "--report", str(report)]) == 0
    assert not [w for w in json.loads(report.read_text())["warnings"] if "name no joint of" in w]


def test_the_highest_rate_said_is_taken():
    """1 / 1e-5 is 99999.99999999999 in floats: `--rate 100000` was refused with 'at most 100000'."""
    import argparse

    from core.library.arguments import control_period
    from core.playback.prepare import MIN_PERIOD_S, ExportSettings

    args = argparse.Namespace(rate=100000.0, period=None)
    assert control_period(args, MIN_PERIOD_S) == pytest.approx(1e-5)
    assert ExportSettings.from_rate(100000).period_s == pytest.approx(1e-5)
    with pytest.raises(Exception, match="at most 100000"):
        control_period(argparse.Namespace(rate=100001.0, period=None), MIN_PERIOD_S)


def test_a_robot_without_masses_is_named_by_its_file(tmp_path, capsys):
    """Variants of one robot share its <robot name>: `gait` and `balance` on a URDF written for
    kinematics only named 'g1_29dof_rev_1_0', not which of the user's files lacks the masses."""
    from core.library.cli import main
    from tests.robot_variants import massless, write_urdf

    urdf = write_urdf(massless(parse_urdf(G1)), tmp_path / "g1_kinematics_only.urdf")
    bake = tmp_path / "walk.csv"
    assert main(["bake", "--source", str(WALK), "--robot", str(urdf), "--frames", "0:120", "--contacts", "off",
                 "--out", str(bake)]) == 0  # the bake needs no masses
    capsys.readouterr()
    for args in (["gait", "--source", str(WALK), "--robot", str(urdf), "--out", str(tmp_path / "gait.csv")],
                 ["balance", "--motion", str(bake), "--robot", str(urdf)]):
        assert main(args) == 1
        lines = capsys.readouterr().err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"robot-retarget-core: error: {urdf}: "), lines
        assert "<inertial>" in lines[0]


def test_the_export_operators_shortest_period_is_still_taken():
    """The Export operator's Period field stops at 0.01 ms, a float32 (9.9999998e-06 s): the settings'
    new shortest period (1e-05 s, which stops a mistyped 1e9 Hz) must take it; half of it is refused."""
    from core.playback import ExportSettings, PlaybackError

    assert ExportSettings(period_s=float(np.float32(0.01)) / 1000.0).validate()
    with pytest.raises(PlaybackError, match="at least 1e-05 s"):
        ExportSettings(period_s=5e-6).validate()


def _with_a_nan(path: Path, frame: int, tmp_path: Path) -> Path:
    """The BVH at `path` with its first value of frame `frame` (0-based) made `nan` (a dropped mocap value)."""
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    first = next(i for i, line in enumerate(lines) if line.startswith("Frame Time")) + 1
    values = lines[first + frame].split()
    lines[first + frame] = " ".join(["nan"] + values[1:]) + "\n"
    out = tmp_path / f"{path.stem}_nan.bvh"
    out.write_text("".join(lines), encoding="utf-8")
    return out


def test_one_nan_value_does_not_unplant_every_foot_of_a_frame_range(tmp_path):
    """`export --frames 0:50` of the walk with one NaN in frame 0 warned "feet not planted: no foot is
    on the ground on any of the clip's 50 frames" and baked floating feet: a range's contacts are the
    whole clip's cut to it (range_contacts), and their detection on the unbridged clip low-passed the
    NaN into every foot speed. Now the NaN frame is bridged there too: the same contacts as the clean clip's."""
    from core.feet.contacts import detect_contacts
    from core.library.clip import bake_clip_file, load_robot

    robot = load_robot(G1)
    broken = _with_a_nan(WALK, 0, tmp_path)
    clean, nan = (bake_clip_file(path, robot, "0:50", "auto").result.report for path in (WALK, broken))
    assert clean["feet_planted"] and clean["contact_preserved_pct"] > 95.0
    assert nan["feet_planted"] and nan["contact_preserved_pct"] == pytest.approx(clean["contact_preserved_pct"])
    assert not any("feet not planted" in w for w in nan["warnings"])
    assert any(w.startswith("bridged 1 frame(s)") for w in nan["warnings"])
    whole = {name: load_bvh(path).to_source_motion() for name, path in (("clean", WALK), ("nan", broken))}
    mapping = auto_map(whole["clean"], robot.tree)
    feet = {name: detect_contacts(motion, mapping).feet for name, motion in whole.items()}
    for side in ("left", "right"):
        assert feet["clean"][side].sum() > 100 and np.array_equal(feet["nan"][side], feet["clean"][side])


@pytest.mark.parametrize("frames", ["-100:", "0:-1", "-5:-1"])
def test_a_negative_frame_range_is_refused_not_the_whole_clip(frames, tmp_path):
    """`export --frames=-100:` (a Python slice's last 100 frames) exported all 995 frames of the walk,
    said only as a warning ("using 0:995"); `0:-1` was "no frames in range". Both are one line now."""
    out = tmp_path / "walk.csv"
    proc = _core_command("export", "--source", WALK, "--robot", G1, f"--frames={frames}", "--out", out)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 1 and len(lines) == 1, proc.stderr
    assert lines[0] == (f"robot-retarget-core: error: --frames {frames!r}: frames are 0-based, 0 or more (the clip "
                        "has 995: 0:995); a negative frame does not count from the end")
    assert not out.exists() and not list(tmp_path.iterdir())
