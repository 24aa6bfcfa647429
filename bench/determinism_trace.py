#!/usr/bin/env python3
"""Where do two runs of the same command part? Every call into `core`, hashed, in order.

    .venv/bin/python bench/determinism_trace.py --log A.log [--pad BYTES] -- bake --source ... --robot ... --out ...
    .venv/bin/python bench/determinism_trace.py --compare A.log B.log
    .venv/bin/python bench/determinism_trace.py --ufuncs -- gait --source ... --robot ... --out ...

The first form runs a `robot-retarget-core` command with every function and method of `core` wrapped: each
call writes a line on entry (a hash of its arguments) and on return (a hash of what it returned and of its
arguments after, for those it fills in place). `--pad` allocates a small array first, so the run's arrays land
elsewhere in memory; run it again with another PYTHONHASHSEED or pad. The second form prints the first line the
two logs differ on, with the calls open there: a return that differs after the same entry and the same
callees is the function whose own arithmetic depends on the process; an entry that differs is its caller's.
Slow (every argument is hashed): use a short cut of a clip (`--frames`). The log moves few of the run's
arrays (hashes read arrays in place, lines go straight to the file) but some: a layout that parts may need a
few seeds and pads to show up (session 24: 1 run in 9 of the bake's planting, replayed alone).
The third form wraps numpy's transcendental functions (UFUNCS) instead: every call on fewer than 8 values or
on strided views is run again with its output laid right after its inputs and far from them, and the
sites whose answers differ are printed (core/model/same_bits.py says why they differ).
"""
from __future__ import annotations

import argparse
import dataclasses
import functools
import hashlib
import importlib
import inspect
import pkgutil
import sys
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

import core  # noqa: E402

_DEPTH = [0]
_PAD: list = []
_LOG: list = []  # [the log file]: lines go straight out (a growing list would move the run's arrays)


def _feed(h, value, depth: int = 0) -> None:
    """Add `value`'s content to the hash: arrays by their bytes, containers by their items, objects by vars."""
    if isinstance(value, int) and abs(value) > 1 << 40:  # an id(), where the object sits: not its content
        h.update(b"id")
    elif isinstance(value, np.ndarray):
        h.update(f"a{value.dtype}{value.shape}".encode())
        if value.dtype != object and value.flags.c_contiguous:
            h.update(value.data)  # no copy: a copy would move the run's own arrays
        elif value.dtype != object:
            h.update(np.ascontiguousarray(value).tobytes())
        else:
            for item in value.ravel():
                _feed(h, item, depth + 1)
    elif isinstance(value, (np.generic, float, int, complex, bool, str, bytes, type(None))):
        h.update(repr(value).encode() if not isinstance(value, np.generic) else value.tobytes())
    elif depth > 5 or type(value).__name__.endswith("Timer"):
        h.update(type(value).__name__.encode())
    elif isinstance(value, (list, tuple)):
        h.update(b"(")
        for item in value:
            _feed(h, item, depth + 1)
        h.update(b")")
    elif isinstance(value, (set, frozenset)):
        h.update(b"{" + b"".join(sorted(_digest(item, depth + 1).encode() for item in value)) + b"}")
    elif isinstance(value, dict):
        h.update(b"{")
        for key, item in value.items():
            _feed(h, key, depth + 1)
            if not (isinstance(key, str) and "second" in key):  # timings differ from run to run anyway
                _feed(h, item, depth + 1)
        h.update(b"}")
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        h.update(type(value).__name__.encode())
        for field in dataclasses.fields(value):
            _feed(h, getattr(value, field.name, None), depth + 1)
    elif hasattr(value, "__dict__") and not isinstance(value, (types.ModuleType, type, types.FunctionType)):
        h.update(type(value).__name__.encode())
        _feed(h, vars(value), depth + 1)
    else:
        h.update(type(value).__name__.encode())


def _digest(value, depth: int = 0) -> str:
    h = hashlib.blake2b(digest_size=6)
    _feed(h, value, depth)
    return h.hexdigest()


def _wrap(function, name: str):
    try:  # an argument named for seconds is a timing: left out
        names = [p.name for p in inspect.signature(function).parameters.values()
                 if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        names = []

    def digests(args, kwargs) -> list[str]:
        return [_digest(None if "second" in n else a) for n, a in zip(names, args)] + \
            [_digest(a) for a in args[len(names):]] + \
            [f"{k}={_digest(None if 'second' in k else v)}" for k, v in kwargs.items()]

    @functools.wraps(function)
    def traced(*args, **kwargs):
        if not _LOG:  # not logging (yet)
            return function(*args, **kwargs)
        depth = _DEPTH[0]
        parts = digests(args, kwargs)
        _LOG[0].write(f"{depth} > {name} {','.join(parts)}\n")
        _DEPTH[0] = depth + 1
        try:
            result = function(*args, **kwargs)
        finally:
            _DEPTH[0] = depth
        _LOG[0].write(f"{depth} < {name} {_digest(result)} {_digest(digests(args, kwargs))}\n")
        return result
    traced.__traced__ = True
    return traced


def _targets(module) -> list[tuple[object, str, object, str]]:
    """(owner, attribute, function, name) for the functions and methods `module` defines."""
    found = []
    for attr, value in list(vars(module).items()):
        if inspect.isfunction(value) and value.__module__ == module.__name__:
            found.append((module, attr, value, f"{module.__name__}.{attr}"))
        elif inspect.isclass(value) and value.__module__ == module.__name__:
            for method_name, method in list(vars(value).items()):
                if inspect.isfunction(method) and method_name not in ("__repr__", "__hash__", "__eq__"):
                    found.append((value, method_name, method, f"{module.__name__}.{value.__name__}.{method_name}"))
    return found


def install() -> int:
    """Wrap every function of core's modules, and every module's reference to one (from-imports)."""
    modules = [core]
    for info in pkgutil.walk_packages(core.__path__, "core."):
        try:
            modules.append(importlib.import_module(info.name))
        except Exception:  # a module that needs bpy
            continue
    wrapped = {}
    for module in modules:
        for owner, attr, function, name in _targets(module):
            if getattr(function, "__traced__", False) or generatorlike(function):
                continue
            wrapped[id(function)] = _wrap(function, name)
            setattr(owner, attr, wrapped[id(function)])
    for module in modules:
        for attr, value in list(vars(module).items()):
            if id(value) in wrapped and not getattr(value, "__traced__", False):
                setattr(module, attr, wrapped[id(value)])
    return len(wrapped)


def generatorlike(function) -> bool:
    return inspect.isgeneratorfunction(function) or inspect.iscoroutinefunction(function)


# numpy 1.26's AVX512 loops of these take a scalar path when the output starts within 64 bytes of an input
# (small arrays, scalars), and the two paths round differently
UFUNCS = ("exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sin", "cos", "tan", "arcsin", "arccos",
          "arctan", "arctan2", "sinh", "cosh", "tanh", "arcsinh", "arccosh", "arctanh", "cbrt", "power", "hypot")
_SITES: dict = {}


def _far_call(ufunc, args):
    """The ufunc on these very inputs, its output 64 bytes away from anything else."""
    shape = np.broadcast_shapes(*(np.shape(a) for a in args))
    buffer = np.empty(int(np.prod(shape)) + 16, np.result_type(*args, 1.0))
    out = buffer[8:-8].reshape(shape)
    ufunc(*args, out=out)
    return out


def _near_call(ufunc, args, last: int):
    """The ufunc on copies of the inputs laid out with their own strides in one buffer, input
    `last` at its end and the output right after its last value: where a fresh output can land."""
    shape = np.broadcast_shapes(*(np.shape(a) for a in args))
    dtype = np.result_type(*args, 1.0)
    spans = [sum((n - 1) * abs(st) for n, st in zip(a.shape, a.strides)) + a.itemsize if a.size else 0
             for a in args]
    order = [k for k in range(len(args)) if k != last] + [last]
    buffer = np.zeros(sum(spans) + 8 * len(args) + dtype.itemsize * (int(np.prod(shape)) + 8), np.uint8)
    offset, copies = 0, [None] * len(args)
    for k in order:
        a = args[k]
        if min(a.strides, default=0) < 0:
            return None
        view = np.lib.stride_tricks.as_strided(buffer[offset:].view(a.dtype), a.shape, a.strides)
        view[...] = a
        copies[k] = view
        offset += -(-spans[k] // 8) * 8
    out = buffer[offset:offset + dtype.itemsize * int(np.prod(shape))].view(dtype).reshape(shape)
    ufunc(*copies, out=out)
    return out


def _layout_dependent(ufunc, args) -> bool:
    far = _far_call(ufunc, args)
    for last in range(len(args)):
        near = _near_call(ufunc, args, last)
        if near is not None and not np.array_equal(near, far, equal_nan=True):
            return True
    return False


def _site() -> str:
    import traceback
    for frame in reversed(traceback.extract_stack()[:-2]):
        if "/core/" in frame.filename:
            return f"{frame.filename.split('/core/', 1)[1]}:{frame.lineno}"
    return "?"


def _watch(ufunc):
    def watched(*args, **kwargs):
        result = ufunc(*args, **kwargs)
        if set(kwargs) - {"out"}:
            return result
        arrays = [np.asarray(a) for a in args]
        if not all(a.dtype.kind == "f" for a in arrays):
            return result
        risky = np.size(result) < 8 or not all(a.flags.c_contiguous or a.ndim == 0 for a in arrays)
        if not risky:
            return result
        where = _site()
        if where.startswith("model/same_bits.py"):  # its output is laid out on purpose
            return result
        site = f"{where} {ufunc.__name__}"
        calls, apart = _SITES.get(site, (0, 0))
        _SITES[site] = (calls + 1, apart + _layout_dependent(ufunc, arrays))
        return result
    return watched


def watch_ufuncs() -> None:
    """np.<ufunc> for the ones above: a call on fewer than 8 values or on strided views is checked
    against the SIMD answer (such calls are the ones whose path follows the memory layout)."""
    for name in UFUNCS:
        setattr(np, name, _watch(getattr(np, name)))


def report_ufuncs() -> None:
    print("site, numpy function, calls at risk (fewer than 8 values or strided), calls whose bits follow where "
          "the output lands", 
          file=sys.stderr)
    for site, (calls, apart) in sorted(_SITES.items(), key=lambda kv: (-kv[1][1], kv[0])):
        print(f"  {site} {calls} {apart}", file=sys.stderr)


def compare(a: Path, b: Path, context: int = 12) -> None:
    lines_a = a.read_text().splitlines()
    lines_b = b.read_text().splitlines()
    for index, (line_a, line_b) in enumerate(zip(lines_a, lines_b)):
        if line_a != line_b:
            break
    else:
        print(f"the same for {min(len(lines_a), len(lines_b))} lines ({len(lines_a)} and {len(lines_b)})")
        return
    open_calls = []
    for line in lines_a[:index]:
        depth, kind, name = line.split()[:3]
        if kind == ">":
            open_calls.append(line)
        else:
            open_calls.pop()
    print("open calls:")
    for line in open_calls:
        print("   ", line)
    print(f"line {index}:")
    for line in lines_a[max(0, index - context):index]:
        print("    ", line)
    print("A:  ", line_a)
    print("B:  ", line_b)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--log", type=Path)
    parser.add_argument("--pad", type=int, default=0, help="bytes of an array allocated first")
    parser.add_argument("--compare", type=Path, nargs=2)
    parser.add_argument("--ufuncs", action="store_true",
                        help="no call log: numpy's transcendental functions checked for layout instead")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    if args.compare:
        compare(*args.compare)
        return 0
    _PAD.append(np.empty(args.pad, np.uint8))  # kept alive: the run's arrays land after it
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if args.ufuncs:
        watch_ufuncs()
        from core.library.cli import main as cli_main
        try:
            return cli_main(command)
        finally:
            report_ufuncs()
    count = install()
    from core.library.cli import main as cli_main
    with open(args.log, "w") as log:
        _LOG[:] = [log]
        code = cli_main(command)
    print(f"{count} functions traced -> {args.log}", file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())
