"""One BLAS thread while a clip is baked and exported: the same bytes in every process.

OpenBLAS rounds some matrix products differently with another thread count, and the thread count
differs between processes (Blender sets up its own, a worker process another, the environment
another), so the extension's command line and `robot-retarget-core` would write files that differ
in the last bits. numpy and scipy do not offer a thread setting; the OpenBLAS libraries they load
do (openblas_set_num_threads), found here among the libraries this process has loaded (Linux:
/proc/self/maps). Elsewhere, or with another BLAS, nothing changes: set OPENBLAS_NUM_THREADS=1
in the environment for the same bytes. A batch's worker processes run one BLAS thread anyway.
"""
from __future__ import annotations

import contextlib
import ctypes
from pathlib import Path

# (get, set) function names of the OpenBLAS builds numpy and scipy wheels ship.
_NAMES = [("openblas_get_num_threads64_", "openblas_set_num_threads64_"),
          ("scipy_openblas_get_num_threads64_", "scipy_openblas_set_num_threads64_"),
          ("scipy_openblas_get_num_threads", "scipy_openblas_set_num_threads"),
          ("openblas_get_num_threads", "openblas_set_num_threads")]
_CONTROLS: list | None = None


def _loaded_openblas() -> list[str]:
    try:
        maps = Path("/proc/self/maps").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    return sorted({line.split()[-1] for line in maps.splitlines()
                   if "openblas" in line.rsplit("/", 1)[-1].lower() and line.split()[-1].startswith("/")})


def _controls() -> list:
    """(get, set) of every OpenBLAS loaded now (numpy's, scipy's); looked up once."""
    global _CONTROLS
    if _CONTROLS is None:
        found = []
        for path in _loaded_openblas():
            try:
                lib = ctypes.CDLL(path)
            except OSError:
                continue
            for get_name, set_name in _NAMES:
                if hasattr(lib, get_name) and hasattr(lib, set_name):
                    get, put = getattr(lib, get_name), getattr(lib, set_name)
                    get.restype, put.argtypes = ctypes.c_int, [ctypes.c_int]
                    found.append((get, put))
                    break
        _CONTROLS = found
    return _CONTROLS


@contextlib.contextmanager
def one_blas_thread():
    """Run the block with every loaded OpenBLAS on one thread; the previous counts after."""
    controls = _controls()
    before = [get() for get, _ in controls]
    for _, put in controls:
        put(1)
    try:
        yield
    finally:
        for (_, put), count in zip(controls, before):
            put(count)
