"""Make the repository's `core` package importable as a top-level package.

The repository root is the Blender extension (its __init__ imports bpy), so
the headless tests import `core` directly instead of through the extension.
"""
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

DATA = ROOT / "data"
TEST_DATA = ROOT / "tests" / "data"


# --- Blender user folder -----------------------------------------------------
# Blender reads BLENDER_USER_RESOURCES once, when bpy is first imported, and
# keeps preferences and installed extensions there. Point it at a fresh
# temporary folder before any test module can import bpy, so test runs never
# touch (or depend on) a real ~/.config/blender. A value already set wins.
import atexit as _atexit
import os as _os
import shutil as _shutil
import tempfile as _tempfile

if "BLENDER_USER_RESOURCES" not in _os.environ:
    _BLENDER_USER = _tempfile.mkdtemp(prefix="rr_blender_user_")
    _os.environ["BLENDER_USER_RESOURCES"] = _BLENDER_USER
    _atexit.register(_shutil.rmtree, _BLENDER_USER, True)
