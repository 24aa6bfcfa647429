"""Atomic file writing: a crash or a full disk never leaves a half-written file."""
from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path


class OutputError(OSError):
    """A file that cannot be written; the message names the path and why."""


def write_bytes_atomic(path, data: bytes, overwrite: bool = False) -> Path:
    """Write to a temporary file in the same folder, then rename over the target."""
    path = Path(path)
    if path.exists() and not overwrite:
        raise OutputError(f"{path}: file exists (choose another name or allow overwriting)")
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        raise OutputError(f"{path}: folder {folder} does not exist")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=folder)
    except OSError as exc:
        raise OutputError(f"{path}: cannot write in {folder} ({exc.strerror})") from None
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; a written file should read like any other
        os.replace(tmp, path)
    except BaseException as exc:  # also Ctrl-C: never leave the temporary file behind
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(exc, OSError):
            raise OutputError(f"{path}: write failed ({exc.strerror or exc})") from None
        raise
    return path


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_text_atomic(path, text: str, overwrite: bool = False) -> Path:
    return write_bytes_atomic(path, text.encode("utf-8"), overwrite=overwrite)


def read_json(path, error: type[Exception], what: str):
    """Parse a JSON file; a missing or malformed file raises `error` naming file and line."""
    path = Path(path)
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise error(f"{path}: {what} not found") from None
    except UnicodeDecodeError:
        raise error(f"{path}: {what} is not a text (UTF-8) file") from None
    except json.JSONDecodeError as exc:
        raise error(f"{path}: line {exc.lineno}: invalid JSON ({exc.msg})") from None


def refuse_unknown_fields(data: dict, known, error: type[Exception], where: str) -> None:
    """A typo'd field ("positons") would be read as absent and fail far from its cause, or not at all:
    name it, and the fields this reader knows."""
    unknown = sorted(set(data) - set(known))
    if unknown:
        names = sorted(known) if isinstance(known, (set, frozenset)) else list(known)  # a file's own order
        raise error(f"{where}: unknown field(s) {unknown} (known: {', '.join(names)})")
