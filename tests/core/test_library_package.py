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


def test_fresh_venv_installs_and_bakes_the_walk_like_this_tree(tmp_path):
    source = tmp_path / "src"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    shutil.copytree(ROOT / "core", source / "core", ignore=shutil.ignore_patterns("__pycache__"))
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    python, command = venv / "bin" / "python", venv / "bin" / "robot-retarget-core"
    # the same numpy and scipy as this tree's .venv: bytes are only the same from the same arithmetic
    pins = [line for line in (ROOT / "requirements-dev.txt").read_text(encoding="utf-8").splitlines()
            if line.startswith(("numpy==", "scipy=="))]
    pip = subprocess.run([str(python), "-m", "pip", "install", "--disable-pip-version-check", "-q", str(source),
                          *pins],
                         capture_output=True, text=True, timeout=600)
    assert pip.returncode == 0, pip.stderr
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
