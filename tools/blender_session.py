"""Run Blender as a Python module (bpy) with the extension installed.

    import blender_session                        # tools/ on sys.path
    blender_session.ensure_user_folder("build/blender_user")   # before bpy
    ext = blender_session.install_extension("dist/robot_retarget-0.1.0-linux_x64.zip")
    ext.cli.main(["version"])

Blender keeps preferences, extensions and the extensions' wheels (scipy) in
its user resource folder; BLENDER_USER_RESOURCES points it at a folder of our
own so nothing touches the real ~/.config/blender. The variable is read once,
when bpy is first imported, hence ensure_user_folder() must run before that.

install_extension() installs with the same operator as Blender's "Install
from Disk" (extensions.package_install_files), which works without a window
in bpy-as-a-module. A zip whose sha256 matches the last install into the
same user folder is not installed again; the extension is then only
enabled (Blender does not save preferences here, so a new process starts
with it disabled; enabling also syncs its wheels).
"""
from __future__ import annotations

import contextlib
import hashlib
import importlib
import io
import json
import os
import sys
import tomllib
import zipfile
from pathlib import Path
from types import ModuleType

REPO = "user_default"
ENV = "BLENDER_USER_RESOURCES"
_STAMP = "robot_retarget_install.json"


class SessionError(RuntimeError):
    """Setting up the Blender session failed; the message says why."""


def ensure_user_folder(path: str | os.PathLike) -> Path:
    """Use `path` as Blender's user resource folder (create it).

    Must run before bpy is first imported; if bpy is already imported with
    this same folder it is a no-op, with another folder it raises.
    """
    path = Path(path).resolve()
    if "bpy" in sys.modules:
        current = _current_user_folder()
        if current is None or current != path:
            raise SessionError(
                f"bpy is already imported with user folder {current}; cannot switch to {path} "
                f"(call ensure_user_folder before the first `import bpy`)"
            )
        return path
    path.mkdir(parents=True, exist_ok=True)
    os.environ[ENV] = str(path)
    return path


def _current_user_folder() -> Path | None:
    import bpy

    folder = bpy.utils.resource_path('USER')
    return Path(folder).resolve() if folder else None


def _zip_manifest(zip_path: Path) -> dict:
    with zipfile.ZipFile(zip_path) as zf:
        return tomllib.loads(zf.read("blender_manifest.toml").decode("utf-8"))


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def module_name(ext_id: str = "robot_retarget") -> str:
    return f"bl_ext.{REPO}.{ext_id}"


def is_enabled(ext_id: str = "robot_retarget") -> bool:
    import addon_utils
    import bpy

    name = module_name(ext_id)
    loaded_state = addon_utils.check(name)
    return name in bpy.context.preferences.addons and all(loaded_state)


def enable(ext_id: str = "robot_retarget") -> ModuleType:
    """Enable an installed extension (also syncs its wheels) and return its module."""
    import addon_utils

    name = module_name(ext_id)
    if not is_enabled(ext_id):
        errors: list[str] = []
        mod = addon_utils.enable(
            name, default_set=True, persistent=True, handle_error=lambda ex: errors.append(str(ex)),
        )
        if mod is None or not is_enabled(ext_id):
            raise SessionError(f"could not enable {name}: {'; '.join(errors) or 'unknown error'}")
    return importlib.import_module(name)


def install_extension(zip_path: str | os.PathLike, *, force: bool = False) -> ModuleType:
    """Install (if needed) and enable the extension zip; return its module."""
    zip_path = Path(zip_path).resolve()
    if not zip_path.is_file():
        raise SessionError(f"extension zip not found: {zip_path}")
    try:
        ext_id = str(_zip_manifest(zip_path)["id"])
    except (KeyError, zipfile.BadZipFile, tomllib.TOMLDecodeError) as ex:
        raise SessionError(f"{zip_path} is not an extension package: {ex}") from None

    if ENV not in os.environ and "bpy" not in sys.modules:
        raise SessionError(f"call ensure_user_folder() first ({ENV} is not set)")
    import bpy

    repo = next((r for r in bpy.context.preferences.extensions.repos if r.module == REPO), None)
    if repo is None:
        raise SessionError(f"Blender has no {REPO!r} extension repository")
    ext_dir = Path(repo.directory) / ext_id
    stamp = Path(bpy.utils.resource_path('USER')) / _STAMP
    digest = _sha256(zip_path)
    try:
        installed = json.loads(stamp.read_text()) if stamp.is_file() else {}
    except ValueError:
        installed = {}

    up_to_date = (
        not force
        and installed.get(ext_id) == digest
        and (ext_dir / "blender_manifest.toml").is_file()
    )
    if not up_to_date:
        reports: list[str] = []
        chatter = io.StringIO()  # the operator prints progress ("STATUS Installed ...")
        try:
            with contextlib.redirect_stdout(chatter):
                result = bpy.ops.extensions.package_install_files(
                    filepath=str(zip_path), repo=REPO, enable_on_install=True,
                )
        except RuntimeError as ex:  # operator reports of type ERROR become exceptions
            reports.append(str(ex).strip())
            result = {'CANCELLED'}
        if 'FINISHED' not in result or not (ext_dir / "blender_manifest.toml").is_file():
            detail = "; ".join(reports) or chatter.getvalue().strip() or str(result)
            raise SessionError(f"installing {zip_path.name} failed: {detail}")
        installed[ext_id] = digest
        stamp.write_text(json.dumps(installed, indent=1))

    module = enable(ext_id)
    if Path(module.__file__).resolve().parent != ext_dir.resolve():
        raise SessionError(f"{module.__name__} was imported from {module.__file__}, not {ext_dir}")
    return module
