"""The extension's command line and `robot-retarget-core` write the same bytes for BVH/URDF inputs.

The extension runs in-process (cli.main, Blender as a module, the installed extension); the
package's command runs from this tree in a subprocess without Blender. Both bake the bundled
walk; a bake CSV without planted feet, a csv playback with its sidecar and an npz must be
byte-identical (playback exports bake without planted feet), and so must the extension's batch. The subprocess inherits this process's
environment: the same BLAS thread count (OpenBLAS rounds some products differently with another).
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
WALK = ROOT / "data" / "motion" / "cmu_131_01_walk_m.bvh"
G1 = ROOT / "data" / "robots" / "g1" / "unitree_g1_29dof.urdf"


def core_command(*args) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, "-m", "core.library.cli", *map(str, args)], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return proc


def extension_command(extension, capsys, *args) -> str:
    code = extension.cli.main([str(a) for a in args])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return captured.out


def both_commands(extension, capsys, tmp_path, command, fmt, *options) -> dict:
    """{"extension": {file name: bytes}, "core": {...}} of one command run by both."""
    outputs = {}
    for who in ("extension", "core"):
        folder = tmp_path / who
        folder.mkdir()
        name = "walk.csv" if fmt != "npz" else "walk.npz"
        args = [command, "--source", WALK, "--robot", G1, "--frames", "100:400", "--out", folder / name, *options]
        args += ["--format", fmt, "--rate", "50", "--allow-violations"] if fmt else []
        if who == "extension":
            stdout = extension_command(extension, capsys, *args)
        else:
            stdout = core_command(*args).stdout
        outputs[who] = {p.name: p.read_bytes() for p in folder.iterdir()}
        assert stdout.splitlines()[-1].startswith("wrote ")
    return outputs


# without planted feet: their solve can round a last bit differently in another process (below)
@pytest.mark.parametrize("command,fmt,options", [("bake", None, ["--contacts", "off"]),
                                                 ("export", "csv", ["--contacts", "off"]),
                                                 ("export", "npz", ["--contacts", "off"])])
def test_same_bytes_as_robot_retarget_core(extension, clean_scene, capsys, tmp_path, command, fmt, options):
    outputs = both_commands(extension, capsys, tmp_path, command, fmt, *options)
    assert outputs["extension"] == outputs["core"]
    assert len(outputs["core"]) == (2 if fmt == "csv" else 1)  # a csv playback has its sidecar


def test_planted_feet_bake_agrees_to_the_last_bits(extension, clean_scene, capsys, tmp_path):
    """With planted feet (the default) the same code can round a last bit differently in another
    process: somewhere in the foot solve numpy's result depends on where arrays sit in memory
    (a bake repeated in one process differs now and then too). Same header, same rows, values
    within 1e-12."""
    import numpy as np

    outputs = both_commands(extension, capsys, tmp_path, "bake", None)
    ext, core = (outputs[w]["walk.csv"].decode("utf-8").splitlines() for w in ("extension", "core"))
    assert ext[0] == core[0] and len(ext) == len(core) == 301
    values = [np.array([[float(v) for v in line.split(",")] for line in rows[1:]]) for rows in (ext, core)]
    np.testing.assert_allclose(values[0], values[1], rtol=1e-12, atol=1e-12)


def test_the_extensions_bvh_batch_runs_core_workers(extension, clean_scene, capsys, tmp_path):
    """--workers 2 on BVH clips: core worker processes (no Blender), the same files as the package's."""
    import shutil

    clips = tmp_path / "clips"
    clips.mkdir()
    for name in ("a", "b", "c"):
        shutil.copy(WALK, clips / f"walk_{name}.bvh")
    for who in ("extension", "core"):
        out = tmp_path / who
        out.mkdir()
        args = ["batch", "--robot", G1, "--inputs", clips, "--format", "npz", "--rate", "50", "--allow-violations",
                "--out-dir", out, "--workers", 2, "--report", tmp_path / f"{who}.json", "--contacts", "off"]
        extension_command(extension, capsys, *args) if who == "extension" else core_command(*args)
    for clip in ("walk_a", "walk_b", "walk_c"):
        assert (tmp_path / "extension" / f"{clip}.npz").read_bytes() == (tmp_path / "core" / f"{clip}.npz").read_bytes()
    summary = json.loads((tmp_path / "extension.json").read_text(encoding="utf-8"))
    assert (summary["succeeded"], summary["engine"], summary["workers"]) == (3, "local", 2)
    assert all(c["mapping"]["chains"] for c in summary["clips"])  # auto-mapped: recorded per clip


def test_gait_and_balance_without_blender_agree_with_the_extensions(extension, clean_scene, capsys, tmp_path):
    """`robot-retarget-core gait` and `balance` (no Blender) walk and weigh a BVH clip as the extension's
    commands do: the same rows (the gait's bake plants feet: last bits may differ between processes),
    the same report, and the extension keys its gait on the robot rig from the clip's first frame."""
    import bpy
    import numpy as np

    reports, rows = {}, {}
    for who in ("extension", "core"):
        folder = tmp_path / who
        folder.mkdir()
        gait = ["gait", "--source", WALK, "--robot", G1, "--frames", "100:400", "--out", folder / "gait.csv",
                "--report", folder / "gait.json"]
        balance = ["balance", "--motion", folder / "gait.csv", "--robot", G1, "--report", folder / "balance.json"]
        for args in (gait, balance):
            stdout = extension_command(extension, capsys, *args) if who == "extension" else core_command(*args).stdout
            assert stdout.splitlines()[-1].startswith("wrote ")
        lines = (folder / "gait.csv").read_text(encoding="utf-8").splitlines()
        rows[who] = (lines[0], np.array([[float(v) for v in line.split(",")] for line in lines[1:]]))
        reports[who] = {name: json.loads((folder / f"{name}.json").read_text(encoding="utf-8"))
                        for name in ("gait", "balance")}
    assert rows["extension"][0] == rows["core"][0]
    np.testing.assert_allclose(rows["extension"][1], rows["core"][1], rtol=0, atol=1e-9)
    assert len(rows["core"][1]) == int(299 / 120 / 0.005) + 1  # one row per 5 ms over the 300 frames
    for name, keys in (("gait", ("steps", "min_support_margin_m", "stance_slide_m", "multibody_zmp_rms_error_m")),
                       ("balance", ("frames", "zmp_outside_support_pct", "min_support_margin_m"))):
        for key in keys:
            assert reports["extension"][name][key] == pytest.approx(reports["core"][name][key], abs=1e-9), key
    assert reports["core"]["gait"]["steps"] >= 2
    assert reports["core"]["balance"]["min_support_margin_m"] == pytest.approx(
        reports["core"]["gait"]["min_support_margin_m"], abs=0.002)  # one ZMP definition
    action = bpy.data.actions[reports["extension"]["gait"]["action"]]
    assert action.name.endswith(" gait") and "robot_retarget_gait" in action
    assert tuple(action.frame_range)[0] == pytest.approx(101.0)  # clip frame 100 on Blender frame 101
