"""The core as a package: `pip install` into a fresh virtual environment without Blender, then the
console command bakes and exports the bundled walk to the same bytes as the extension's command
line (tools/robot-retarget: Blender as a module, the extension installed) and this tree's.

Slow (a venv and a pip install, ~30-60 s, PyPI for setuptools and the wheels), but run: it is the only test of
the package as users get it. The source is installed from a temporary copy of the files the
package is built from, so the build leaves nothing in the work tree.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path


ROOT = Path(__file__).resolve().parents[2]
WALK = ROOT / "data" / "motion" / "cmu_131_01_walk_m.bvh"
G1 = ROOT / "data" / "robots" / "g1" / "unitree_g1_29dof.urdf"


def test_pyproject_lists_every_core_package_and_the_manifest_version():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    listed = set(project["tool"]["setuptools"]["packages"])
    found = {"robot_retarget_core" + "".join(f".{p}" for p in d.relative_to(ROOT / "core").parts)
             for d in [ROOT / "core", *(ROOT / "core").rglob("*")] if (d / "__init__.py").is_file()}
    assert listed == found
    manifest = tomllib.loads((ROOT / "blender_manifest.toml").read_text(encoding="utf-8"))
    assert project["project"]["version"] == manifest["version"]  # the files' generator line


def test_core_never_imports_above_itself():
    """A relative import that leaves core/ would break the installed package."""
    import ast

    for path in (ROOT / "core").rglob("*.py"):
        depth = len(path.relative_to(ROOT / "core").parts) - 1  # folders below core/
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level:
                assert node.level - 1 <= depth, f"{path}: from {'.' * node.level}{node.module or ''}"


def _installed(tmp_path: Path, pins: list[str]) -> tuple[Path, Path]:
    """A fresh virtual environment with the package installed from a copy of its files (and `pins`):
    its python and its console command."""
    source = tmp_path / "src"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    shutil.copytree(ROOT / "core", source / "core", ignore=shutil.ignore_patterns("__pycache__"))
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    python, command = venv / "bin" / "python", venv / "bin" / "robot-retarget-core"
    pip = subprocess.run([str(python), "-m", "pip", "install", "--disable-pip-version-check", "-q", str(source),
                          *pins],
                         capture_output=True, text=True, timeout=600)
    assert pip.returncode == 0, pip.stderr
    return python, command


def test_fresh_venv_installs_and_bakes_the_walk_like_this_tree(tmp_path):
    # the same numpy and scipy as this tree's .venv: bytes are only the same from the same arithmetic
    pins = [line for line in (ROOT / "requirements-dev.txt").read_text(encoding="utf-8").splitlines()
            if line.startswith(("numpy==", "scipy=="))]
    python, command = _installed(tmp_path, pins)
    no_bpy = subprocess.run([str(python), "-c", "import bpy"], capture_output=True, text=True)
    assert no_bpy.returncode != 0 and "No module named 'bpy'" in no_bpy.stderr

    runs = {}
    launcher_env = {k: v for k, v in os.environ.items() if k != "BLENDER_USER_RESOURCES"}
    for who, argv0 in (("installed", [str(command)]), ("tree", [sys.executable, "-m", "core.library.cli"]),
                       ("extension", [str(ROOT / "tools" / "robot-retarget")])):
        out = tmp_path / who
        out.mkdir()
        # without planted feet: their solve can differ in a last bit between processes (see
        # tests/blender/test_cli_core.py::test_planted_feet_bake_agrees_to_the_last_bits)
        for args in (["bake", "--contacts", "off", "--out", out / "walk.csv"],
                     ["export", "--contacts", "off", "--format", "npz", "--rate", "50", "--allow-violations",
                      "--out", out / "walk.npz"]):
            proc = subprocess.run([*argv0, args[0], "--source", WALK, "--robot", G1, "--frames", "0:240",
                                   *map(str, args[1:])], cwd=tmp_path if who == "installed" else ROOT,
                                  env=launcher_env if who == "extension" else None,
                                  capture_output=True, text=True, timeout=900)
            assert proc.returncode == 0, proc.stderr
        runs[who] = out
    for name in ("walk.csv", "walk.npz"):
        installed = (runs["installed"] / name).read_bytes()
        assert installed == (runs["extension"] / name).read_bytes(), name  # the extension's command line
        assert installed == (runs["tree"] / name).read_bytes(), name
    assert (runs["installed"] / "walk.csv").read_text(encoding="utf-8").count("\n") == 241


# a playback CSV with its fifth sample off the 0.02 s cycle, read back: the message a user sees
_OFF_CYCLE = """
import sys
from pathlib import Path
import numpy as np
from robot_retarget_core.playback.formats import read_playback
path = Path(sys.argv[1])
pose = "0,0,0,1,0,0,0,0.0"  # root x y z, qw qx qy qz, one joint
rows = ["time_s,root_x,root_y,root_z,root_qw,root_qx,root_qy,root_qz,j1"] + [f"{k * 0.02:.4f},{pose}" for k in range(8)]
rows[5] = f"0.0801,{pose}"
path.write_text("\\n".join(rows) + "\\n", encoding="utf-8")
try:
    read_playback(path, "csv")
except Exception as exc:
    print(f"numpy {np.__version__}: {exc}")
"""


def test_fresh_venv_with_the_newest_numpy_and_scipy_bakes_and_reads_like_this_tree(tmp_path):
    """`pip install robot-retarget-core` as a pipeline gets it: no pins, so today's numpy and scipy (numpy 2 where
    this tree's .venv has Blender's 1.26). The planted-feet bake of the walk agrees with this tree's within
    1e-7 (other arithmetic, not other bits), and messages print numbers, not numpy 2's `np.float64(...)`."""
    python, command = _installed(tmp_path, [])
    versions = subprocess.run([str(python), "-c", "import numpy, scipy; print(numpy.__version__, scipy.__version__)"],
                              capture_output=True, text=True, check=True).stdout.strip()
    outs = {}
    for who, argv0 in (("installed", [str(command)]), ("tree", [sys.executable, "-m", "core.library.cli"])):
        outs[who] = tmp_path / f"{who}.csv"
        proc = subprocess.run([*argv0, "bake", "--source", str(WALK), "--robot", str(G1), "--frames", "0:240",
                               "--out", str(outs[who])], cwd=tmp_path if who == "installed" else ROOT,
                              capture_output=True, text=True, timeout=900)
        assert proc.returncode == 0, f"{who} (numpy, scipy {versions}): {proc.stderr}"
    import numpy as np

    installed, tree = (np.loadtxt(outs[w], delimiter=",", skiprows=1) for w in ("installed", "tree"))
    assert installed.shape == tree.shape == (240, tree.shape[1])
    assert np.abs(installed - tree).max() < 1e-7, versions
    said = subprocess.run([str(python), "-c", _OFF_CYCLE, str(tmp_path / "wave.csv")], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert "sample 4 at 0.0801 s is not on the 0.02 s control cycle (0.08 s)" in said.stdout, said.stdout + said.stderr
