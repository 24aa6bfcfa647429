"""Fixtures for tests that run the real extension inside bpy (Blender as a module).

The user folder is the temporary one tests/conftest.py set before bpy was
imported, so the install below never touches a real Blender configuration.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TOOLS = ROOT / "tools"
if str(TOOLS) not in sys.path:
    sys.path.insert(0, str(TOOLS))


@pytest.fixture(scope="session")
def extension_zip(tmp_path_factory) -> Path:
    """Build the zip for this platform with tools/build_extension.py.

    Runs the build script as a subprocess (as `make build` does); the script
    already runs blender_ext.py validate on the zip and fails if it does not
    pass. The zip goes to a temporary folder, not dist/: others may rebuild
    dist/ (tools/robot-retarget does when sources change) while tests run.
    """
    out = tmp_path_factory.mktemp("dist")
    proc = subprocess.run(
        [sys.executable, str(TOOLS / "build_extension.py"), "--out", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=900,
    )
    if proc.returncode != 0:
        pytest.fail(f"build_extension.py failed ({proc.returncode}):\n{proc.stderr}\n{proc.stdout}")
    zips = [Path(line) for line in proc.stdout.splitlines() if line.endswith(".zip")]
    assert len(zips) == 1 and zips[0].is_file() and zips[0].parent == out, proc.stdout
    return zips[0]


@pytest.fixture(scope="session")
def extension(extension_zip):
    """The installed and enabled extension module (bl_ext.user_default.robot_retarget)."""
    pytest.importorskip("bpy")
    import blender_session

    return blender_session.install_extension(extension_zip)


@pytest.fixture
def clean_scene(extension):
    """An empty factory scene, with the extension still enabled.

    Uses bpy.ops.wm.read_homefile(use_empty=True, use_factory_startup=True):
    it loads the factory startup file without its objects and keeps the
    preferences. bpy.ops.wm.read_factory_settings(use_empty=True) would
    reset the preferences too, which DISABLES every add-on and extension
    (checked with bpy 5.0.1); it is also ~10x slower. Should an extension
    ever end up disabled anyway, it is re-enabled here.
    """
    import bpy
    import blender_session

    bpy.ops.wm.read_homefile(use_empty=True, use_factory_startup=True)
    if not blender_session.is_enabled():
        blender_session.enable()
    assert blender_session.is_enabled()
    return bpy.context.scene


WALK = ROOT / "data" / "motion" / "cmu_131_01_walk_m.bvh"
G1 = ROOT / "data" / "robots" / "g1" / "unitree_g1_29dof.urdf"


@pytest.fixture
def walk_on_g1(clean_scene):
    """The user's set-up, as a function of the scene range to bake: the walk imported with
    Blender's importer, the G1 without meshes, both picked in the Robot tab, auto-mapped.
    Returns (settings, source armature, robot rig)."""
    import bpy

    def set_up(frames=(1, 120)):
        assert bpy.ops.import_anim.bvh(filepath=str(WALK), update_scene_fps=True) == {'FINISHED'}
        source = bpy.context.view_layer.objects.active
        assert bpy.ops.robot_retarget.import_urdf(filepath=str(G1), import_meshes=False) == {'FINISHED'}
        settings = clean_scene.robot_retarget
        settings.source, settings.robot = source, bpy.context.view_layer.objects.active
        assert bpy.ops.robot_retarget.auto_map() == {'FINISHED'}
        if frames is not None:
            clean_scene.frame_start, clean_scene.frame_end = frames
            settings.use_scene_range = True
        return settings, source, settings.robot

    return set_up


# --- Rigify on Blender 4.5 ------------------------------------------------------
# bpy 4.5 deadlocks while tearing itself down at interpreter exit once Rigify has
# generated a rig in a session that also ran the other Blender tests (every test has
# passed by then; 5.0 exits normally; Rigify's test alone exits normally). Sessions
# that used Rigify on 4.x therefore end with os._exit, after pytest has reported.
RIGIFY_USED: list[bool] = []


@pytest.fixture
def rigify():
    """Blender's Rigify add-on, enabled for one test (and the session marked, see above)."""
    import addon_utils

    RIGIFY_USED.append(True)
    addon_utils.enable("rigify", default_set=True)
    yield
    addon_utils.disable("rigify", default_set=True)


def pytest_sessionfinish(session, exitstatus):
    session.config._robot_retarget_status = int(exitstatus)


def pytest_unconfigure(config):
    import os

    import bpy

    if RIGIFY_USED and bpy.app.version < (5, 0, 0):
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(getattr(config, "_robot_retarget_status", 0))
