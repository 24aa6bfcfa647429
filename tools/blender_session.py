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
with it disabled; enabling also syncs its wheels). The stamp keeps the zip's
path, size and mtime too, so an unchanged zip is not even hashed again.

With precompile=True (tools/robot-retarget) the installed extension and its
wheels are byte-compiled once per install: Blender's wheel install writes no
.pyc files, and where bytecode writing is off (PYTHONDONTWRITEBYTECODE, as
in many CI and container images) every process would otherwise compile
scipy's sources again, over a second per start.
"""
from __future__ import annotations

import contextlib
import hashlib
import importlib
import io
import json
import os
import subprocess
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


def _zip_identity(zip_path: Path) -> dict:
    """What says "the same file as last time" without reading 50 MB: path, size, mtime."""
    st = zip_path.stat()
    return {"path": str(zip_path), "size": st.st_size, "mtime_ns": st.st_mtime_ns}


def _read_stamp(stamp: Path) -> dict:
    try:
        return json.loads(stamp.read_text()) if stamp.is_file() else {}
    except ValueError:
        return {}


def _stamp_entry(installed: dict, ext_id: str) -> dict:
    entry = installed.get(ext_id)
    if isinstance(entry, str):  # stamps written before the zip identity was kept: the digest only
        return {"sha256": entry}
    return dict(entry) if isinstance(entry, dict) else {}


def _zip_digest(zip_path: Path, entry: dict) -> tuple[str, dict]:
    """sha256 of the zip, hashed only when path, size or mtime differ from the stamp's."""
    identity = _zip_identity(zip_path)
    if entry.get("sha256") and all(entry.get(k) == v for k, v in identity.items()):
        return entry["sha256"], identity
    return _sha256(zip_path), identity


def compile_bytecode(folders: list[Path]) -> None:
    """Write .pyc files for every module under `folders` (skipping wheels' tests).

    In a separate interpreter, so the bpy process is not forked and nothing
    reaches stdout (it is for the command's results); one process, not a pool:
    after the first time only the extension's own few files are new. A failure
    only costs speed, so it is not an error.
    """
    folders = [str(f) for f in folders if f.is_dir()]
    if folders:
        skip_tests = r"[/\\]site-packages[/\\].+[/\\]tests?[/\\]"
        subprocess.run([sys.executable, "-m", "compileall", "-qq", "-x", skip_tests, *folders],
                       stdin=subprocess.DEVNULL, capture_output=True)


def _install_zip(zip_path: Path, ext_dir: Path) -> None:
    import bpy

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


def install_extension(zip_path: str | os.PathLike, *, force: bool = False,
                      precompile: bool = False) -> ModuleType:
    """Install (if needed) and enable the extension zip; return its module.

    precompile=True also byte-compiles the installed copy and its wheels, once per install.
    """
    zip_path = Path(zip_path).resolve()
    if not zip_path.is_file():
        raise SessionError(f"extension zip not found: {zip_path}")
    ext_id = _zip_ext_id(zip_path)
    if ENV not in os.environ and "bpy" not in sys.modules:
        raise SessionError(f"call ensure_user_folder() first ({ENV} is not set)")
    import bpy

    repo = next((r for r in bpy.context.preferences.extensions.repos if r.module == REPO), None)
    if repo is None:
        raise SessionError(f"Blender has no {REPO!r} extension repository")
    stamp = Path(bpy.utils.resource_path('USER')) / _STAMP
    installed = _read_stamp(stamp)
    entry = _stamp_entry(installed, ext_id)
    digest, identity = _zip_digest(zip_path, entry)
    ext_dir = Path(repo.directory) / ext_id

    if force or entry.get("sha256") != digest or not (ext_dir / "blender_manifest.toml").is_file():
        _install_zip(zip_path, ext_dir)
        entry = {"sha256": digest}
    module = enable(ext_id)
    if Path(module.__file__).resolve().parent != ext_dir.resolve():
        raise SessionError(f"{module.__name__} was imported from {module.__file__}, not {ext_dir}")
    if precompile and entry.get("bytecode") != digest:  # tried once per install: a retry would fail alike
        compile_bytecode([ext_dir, Path(repo.directory).parent / ".local"])
        entry["bytecode"] = digest
    entry.update(identity)
    if installed.get(ext_id) != entry:
        installed[ext_id] = entry
        stamp.write_text(json.dumps(installed, indent=1))
    return module


def _zip_ext_id(zip_path: Path) -> str:
    """The extension id from the zip's manifest: which folder the install goes to."""
    try:
        return str(_zip_manifest(zip_path)["id"])
    except (KeyError, zipfile.BadZipFile, tomllib.TOMLDecodeError) as ex:
        raise SessionError(f"{zip_path} is not an extension package: {ex}") from None
