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
from pathlib import Path as _Path

if "BLENDER_USER_RESOURCES" not in _os.environ:
    _BLENDER_USER = _tempfile.mkdtemp(prefix="rr_blender_user_")
    _os.environ["BLENDER_USER_RESOURCES"] = _BLENDER_USER
    _atexit.register(_shutil.rmtree, _BLENDER_USER, True)

# --- Collision model cache ---------------------------------------------------
# Fitted capsules are kept on disk per robot file (core/collision/store.py).
# Tests keep theirs in the repository's ignored .pytest_cache, never in the
# user's ~/.cache; a value already set wins (an empty one turns it off).
_os.environ.setdefault("ROBOT_RETARGET_CACHE", str(_Path(__file__).resolve().parents[1] / ".pytest_cache" / "robot_retarget"))
