"""The built extension package, its install into bpy, and the command line."""
from __future__ import annotations

import os
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

bpy = pytest.importorskip("bpy")

import build_extension  # noqa: E402  (tools/ is put on sys.path by conftest)

ROOT = Path(__file__).resolve().parents[2]
MANIFEST = tomllib.loads((ROOT / "blender_manifest.toml").read_text())
SCIPY = build_extension.scipy_pin(ROOT)


def test_committed_manifest_has_no_wheels():
    assert MANIFEST["id"] == "robot_retarget"
    assert "wheels" not in MANIFEST and "platforms" not in MANIFEST


def test_zip_validates(extension_zip):
    build_extension.validate(extension_zip)  # raises BuildError with blender_ext's output


def test_zip_contents(extension_zip):
    with zipfile.ZipFile(extension_zip) as zf:
        names = zf.namelist()
        staged = tomllib.loads(zf.read("blender_manifest.toml").decode())
    top = {n.split("/", 1)[0] for n in names}
    for excluded in ("tests", "tools", ".ci", "bench", "docs", ".git", "build", "dist", ".venv"):
        assert excluded not in top, f"{excluded}/ was packed"
    for excluded in ("Makefile", "requirements-dev.txt", "pytest.ini", ".gitignore"):
        assert excluded not in names
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]

    assert "__init__.py" in names and "cli/__init__.py" in names
    assert "core/__init__.py" in names and "operators/anim_io.py" in names
    assert any(n.startswith("data/") for n in names)

    wheels = [n for n in names if n.startswith("wheels/")]
    assert len(wheels) == 1, wheels
    assert wheels[0].startswith(f"wheels/scipy-{SCIPY}-cp311-cp311-")
    assert staged["wheels"] == [f"./{wheels[0]}"]
    assert staged["platforms"] == [build_extension.current_platform()]
    assert staged["version"] == MANIFEST["version"]


def test_extension_enabled(extension):
    import addon_utils

    name = "bl_ext.user_default.robot_retarget"
    assert extension.__name__ == name
    assert addon_utils.check(name) == (True, True)
    assert name in bpy.context.preferences.addons
    user = Path(os.environ["BLENDER_USER_RESOURCES"]).resolve()
    assert Path(extension.__file__).resolve().is_relative_to(user)


def test_scipy_in_blender(extension):
    import scipy
    from scipy.spatial.transform import Rotation

    assert scipy.__version__ == SCIPY
    assert Rotation.from_euler("z", 90, degrees=True).as_matrix()[0, 1] == pytest.approx(-1.0)
    # The bundled wheel was unpacked into the user folder's extension site-packages.
    user = Path(os.environ["BLENDER_USER_RESOURCES"])
    site = user / "extensions" / ".local" / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}" / "site-packages"
    assert (site / "scipy" / "__init__.py").is_file()
    assert (site / f"scipy-{SCIPY}.dist-info").is_dir()


def _new_session(code: str, lines: int) -> list[str]:
    """The last `lines` lines a new Blender session with the same user folder prints, which
    first enables the extension (as `ext`), then runs `code`."""
    enable = ("import importlib, sys, bpy, addon_utils\n"
              "assert addon_utils.enable('bl_ext.user_default.robot_retarget', default_set=True)\n"
              "ext = importlib.import_module('bl_ext.user_default.robot_retarget')\n")
    proc = subprocess.run([sys.executable, "-c", enable + code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr + proc.stdout
    return proc.stdout.strip().splitlines()[-lines:]


def test_scipy_from_bundled_wheel_in_new_session(extension):
    """A new Blender session with the same user folder enables the extension and
    imports scipy from the bundled wheel.

    (In the session that installs, Blender appends the wheel folder to
    sys.path, so the venv's own scipy of the same pinned version is found
    first; at start-up Blender puts it ahead.)
    """
    version, path = _new_session("import scipy, scipy.optimize\nprint(scipy.__version__); print(scipy.__file__)\n", 2)
    assert version == SCIPY
    user = Path(os.environ["BLENDER_USER_RESOURCES"]).resolve()
    assert Path(path).resolve().is_relative_to(user / "extensions" / ".local")


def test_enabling_imports_no_scipy(extension):
    """Blender's start with the extension enabled, and a command that needs no math (`version`),
    import no scipy: the operators import core's solvers where they run them (registering them
    imported scipy.signal, scipy.stats, ndimage and the rest: ~0.5 s of CPU at every start).
    A bake's filter imports scipy.linalg's LAPACK when it runs, and not scipy.signal (checked last:
    the probe sees the one and not the other)."""
    loaded, after_filter = _new_session(
        "assert ext.cli.main(['version']) == 0\n"
        "scipy = lambda: sorted(m for m in sys.modules if m.partition('.')[0] == 'scipy')\n"
        "print(scipy())\n"
        "ext.core.motion.filtering.butterworth_lowpass([[0.0], [1.0], [0.0], [1.0]], 120.0, 6.0)\n"
        "print(('scipy.linalg' in scipy(), 'scipy.signal' in scipy()))\n", 2)
    assert loaded == "[]"
    assert after_filter == "(True, False)"


def test_cli_version(extension, capsys):
    assert extension.cli.main(["version"]) == 0
    assert capsys.readouterr().out == f"robot_retarget {MANIFEST['version']}\n"


def test_cli_usage_error(extension, capsys):
    assert extension.cli.main(["no-such-command"]) != 0
    assert "robot-retarget" in capsys.readouterr().err
    assert extension.cli.main([]) != 0


def test_cli_command_registered(extension):
    assert extension.cli._handle is not None


def _launcher(*args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "BLENDER_USER_RESOURCES"}
    return subprocess.run(
        [str(ROOT / "tools" / "robot-retarget"), *args],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=900,
    )


def test_launcher_version():
    """tools/robot-retarget end to end: .venv, zip in dist/ (built if stale), install, CLI."""
    proc = _launcher("version")
    assert proc.returncode == 0, proc.stderr + proc.stdout
    assert proc.stdout == f"robot_retarget {MANIFEST['version']}\n"


def test_launcher_bad_command():
    proc = _launcher("no-such-command")
    assert proc.returncode != 0
    assert proc.stdout == ""
    assert "invalid choice" in proc.stderr


def test_install_again_skips_same_zip(extension, extension_zip):
    import blender_session

    init = Path(extension.__file__)
    before = init.stat().st_mtime_ns
    assert blender_session.install_extension(extension_zip) is extension
    assert init.stat().st_mtime_ns == before  # not unpacked again
    assert blender_session.is_enabled()


def test_user_folder_cannot_change_after_bpy_import(extension, tmp_path):
    import blender_session

    current = Path(os.environ["BLENDER_USER_RESOURCES"])
    assert blender_session.ensure_user_folder(current) == current.resolve()
    with pytest.raises(blender_session.SessionError, match="already imported"):
        blender_session.ensure_user_folder(tmp_path / "other")


def test_clean_scene_keeps_extension_enabled(clean_scene, extension):
    import blender_session

    assert blender_session.is_enabled()
    assert len(bpy.data.objects) == 0 and clean_scene == bpy.context.scene


def test_factory_settings_disable_extensions_then_enable(extension, capsys):
    """Why clean_scene does not use read_factory_settings: it resets preferences."""
    import blender_session

    bpy.ops.wm.read_factory_settings(use_empty=True)
    assert not blender_session.is_enabled()
    module = blender_session.enable()
    assert module is extension  # same module object: later tests keep working
    assert blender_session.is_enabled() and module.cli._handle is not None
    assert module.cli.main(["version"]) == 0
    assert capsys.readouterr().out.startswith("robot_retarget ")
