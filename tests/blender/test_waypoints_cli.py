"""`robot-retarget waypoints` as a pipeline runs it: one launcher run on the Panda arc, checked against the
URDF read here with ElementTree and FK of the CSV; bad input in-process, one line naming file and key."""
from __future__ import annotations

import json
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

from .test_cli import ROOT_HEADER, _main, assert_one_line_error, launcher, read_csv

ROOT = Path(__file__).resolve().parents[2]
PANDA = ROOT / "tests" / "data" / "robots" / "franka_panda.urdf"
RATE = 50.0
REPORT_KEYS = {"keys", "max_position_error_m", "max_orientation_error_deg", "max_joint_speed_ratio",
               "limit_violations", "unreachable", "warnings"}
KEY_FIELDS = {"time_s", "quaternion", "tangent_angle_deg", "manipulability", "torque_cost", "position_error_m",
              "orientation_error_deg"}


def write_path(folder: Path, **change) -> Path:
    angles = np.radians(np.linspace(-60, 60, 9))
    points = np.column_stack([0.5 * np.cos(angles), 0.5 * np.sin(angles), 0.35 + 0.1 * np.sin(np.linspace(0, np.pi, 9))])
    keys = [{"time_s": 0.5 * i, "position": p.tolist()} for i, p in enumerate(points)]
    keys[0]["quaternion"] = keys[-1]["quaternion"] = [0.0, 1.0, 0.0, 0.0]
    for index, values in change.items():
        keys[int(index[1:])].update(values)
    path = folder / "arc.json"
    path.write_text(json.dumps({"format": "robot_retarget.path", "version": 1, "keys": keys}), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def arc_run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("waypoints_cli")
    path, out, report = write_path(folder), folder / "arc.csv", folder / "arc.json.report"
    proc = launcher("waypoints", "--robot", PANDA, "--tip", "panda_hand_tcp", "--path", path, "--mode",
                    "tangent_mechanism", "--objective", "manipulability", "--blend", "bspline", "--max-blend", "1",
                    "--rate", RATE, "--out", out, "--report", report)
    return proc, path, out, report


def test_csv_and_report(arc_run):
    proc, path, out, report_path = arc_run
    assert proc.returncode == 0, proc.stderr
    assert f"wrote {out}" in proc.stdout
    header, rows = read_csv(out)
    joints = [j.get("name") for j in ET.parse(PANDA).getroot().iter("joint")  # mimic joints follow their leader
              if j.get("type") in ("revolute", "continuous", "prismatic") and j.find("mimic") is None]
    assert header == ROOT_HEADER.split(",") + joints
    assert rows.shape == (201, 8 + len(joints))
    assert np.array_equal(rows[:, 0], np.arange(201) / RATE)  # time_s = k / rate, exactly
    assert np.all(rows[:, 1:8] == [0, 0, 0, 1, 0, 0, 0])  # the base is the root: identity pose
    limits = {j.get("name"): j.find("limit") for j in ET.parse(PANDA).getroot().iter("joint")}
    for c, name in enumerate(joints):
        lower, upper = float(limits[name].get("lower")), float(limits[name].get("upper"))
        assert np.all((rows[:, 8 + c] >= lower) & (rows[:, 8 + c] <= upper))
        speed = np.abs(np.diff(rows[:, 8 + c])) * RATE
        assert np.all(speed <= float(limits[name].get("velocity")))
    report = json.loads(report_path.read_text(encoding="utf-8"))
    assert REPORT_KEYS <= set(report) and [set(k) for k in report["keys"]] == [KEY_FIELDS] * 9
    assert [k["time_s"] for k in report["keys"]] == [0.5 * i for i in range(9)]
    assert report["unreachable"] == [] and report["limit_violations"] == 0
    assert report["max_position_error_m"] < 1e-3 and report["max_orientation_error_deg"] < 0.5
    assert report["mode"] == "tangent_mechanism" and report["out"] == str(out)


def test_fk_of_the_csv_reaches_the_keys(arc_run, extension):
    import importlib

    _, path, out, _ = arc_run
    kin = importlib.import_module(f"{extension.__name__}.core.model.kinematics")
    urdf = importlib.import_module(f"{extension.__name__}.core.model.urdf")
    tree = kin.KinematicTree(urdf.parse_urdf(PANDA))
    _, rows = read_csv(out)
    tips = tree.forward(rows[:, 8:])[:, tree.link_index("panda_hand_tcp"), :3, 3]
    keys = json.loads(path.read_text(encoding="utf-8"))["keys"]
    at_keys = [int(round(k["time_s"] * RATE)) for k in keys]
    assert np.linalg.norm(tips[at_keys] - [k["position"] for k in keys], axis=1).max() < 1e-3


@pytest.mark.parametrize("case", ["position", "tip", "exists", "max_blend", "below", "same", "folder"])
def test_bad_input_in_process(extension, clean_scene, capsys, tmp_path, case):
    out = tmp_path / "out.csv"
    path = write_path(tmp_path, **({"k3": {"position": [0.1, 0.2]}} if case == "position" else {}))
    args = ["waypoints", "--robot", PANDA, "--tip", "hand" if case == "tip" else "panda_hand_tcp", "--path", path,
            "--out", out]
    words = {"position": [str(path), "key 3", "position"], "tip": ["no link 'hand'"],
             "exists": [str(out), "exists", "--overwrite"], "max_blend": ["--max-blend"],
             "below": ["--tip panda_link4", "--base panda_hand", "does not descend from"],
             # these said "no movable joint between ..." without the flags, and "[Errno 21] Is a directory"
             "same": ["--tip panda_link4", "--base panda_link4", "no movable joint between"],
             "folder": [f"{tmp_path}: a folder, not a path file"]}[case]
    if case == "exists":
        out.write_text("keep\n", encoding="utf-8")
    if case == "max_blend":
        args += ["--max-blend", "1.5"]
    if case == "below":  # the two links swapped: the flags are named, not only the links
        args[args.index("--tip") + 1] = "panda_link4"
        args += ["--base", "panda_hand"]
    if case == "same":
        args[args.index("--tip") + 1] = "panda_link4"
        args += ["--base", "panda_link4"]
    if case == "folder":
        args[args.index("--path") + 1] = tmp_path
    code, stdout, stderr = _main(extension, capsys, *args)
    assert_one_line_error(subprocess.CompletedProcess(args, code, stdout, stderr), *words)
    assert (out.read_text(encoding="utf-8") == "keep\n") if case == "exists" else not out.exists()


def test_a_base_link_in_process(extension, clean_scene, capsys, tmp_path):
    """--base: positions in that link's frame, its pose in the root columns, the joint above it at rest."""
    shifted = write_path(tmp_path)
    data = json.loads(shifted.read_text(encoding="utf-8"))
    for key in data["keys"]:
        key["position"][2] -= 0.333  # panda_link1 sits 0.333 m above the root, turned the same way at rest
    shifted.write_text(json.dumps(data), encoding="utf-8")
    out = tmp_path / "base.csv"
    code, stdout, stderr = _main(extension, capsys, "waypoints", "--robot", PANDA, "--tip", "panda_hand_tcp",
                                 "--base", "panda_link1", "--path", shifted, "--rate", RATE, "--out", out)
    assert code == 0, stderr
    _, rows = read_csv(out)
    assert np.allclose(rows[:, 1:8], [0, 0, 0.333, 1, 0, 0, 0]) and np.all(rows[:, 8] == 0.0)
