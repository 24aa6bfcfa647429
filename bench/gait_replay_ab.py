#!/usr/bin/env python3
"""The gait's hot calls replayed with this tree's core and another copy: their CPU and whether they give the same bits.

    cp -r /work/main/core /tmp/before/core_before   # the code before, as a package of another name
    .venv/bin/python bench/gait_replay_ab.py --against /tmp/before/core_before [--robot h1|g1] [--ten]
        [--what legs,place,aim,motion,margins,target,lowpass,chain] [--runs 3] [--lateral-solver highs|interior]

One gait (the walk, or with --ten the 10 s clip, as bench/gait_cpu_pair.py) runs with this tree's core and
records the inputs of every call of: the legs' Levenberg-Marquardt solve (`legs._solve_leg`), the rolled
waist's placement (`SagittalWaist.place`, the waist's state copied before each call) and the closed-form hip
aim (`HeadAim.solve`) and the legs' links' motion in the passes' ZMP (`correction._motion`: the links posed,
their centres of mass, accelerations and torque) and the margin rounds' support margins
(`support.support_margins` as core.balance.margin calls it) and the target ZMP put into the support
(`target.onto_support`) and every zero-phase low-pass (`filtering.butterworth_lowpass`, wherever it was
imported) and the chains' kinematics (`ChainKinematics.evaluate`, the bake's solves). Each call is then
replayed with both codes in turn (each first in every other run, so
neither always replays on the heap the other left), the least CPU of --runs said, and
every output compared bit for bit. A whole gait is no such check: the H1's passes amplify the last bit, and
main's own H1 10 s gait is not the same from one run to the next in one process (session 17: runs part at a
leg solve by 1e-16 m of waist, at a call that varies). The other copy's placement runs on its own classes
(the recorded waist's classes swapped, the hip aims' derived fields worked out again by each code), so a change
of the waist's own fields needs its own check.
--lateral-solver: the recorded gait's lateral programme solver (core.balance.lateral.SOLVER).
--calls FILE: the recorded calls kept in FILE (pickled; recorded and written there when it does not exist), so
rounds of a change replay the same calls without running the gait again.
"""
from __future__ import annotations

import argparse
import copy
import importlib
import inspect
import os
import pickle
import sys
import time
from pathlib import Path

for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):  # one core: before numpy loads BLAS
    os.environ[var] = "1"

import numpy as np  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE)]
from gait_cpu_pair import runner  # noqa: E402

WHAT = ("legs", "place", "aim", "motion", "margins", "target", "lowpass", "chain")
FUNCTIONS = {"legs": ("balance.legs", "_solve_leg"), "margins": ("balance.support", "support_margins"),
             "target": ("balance.target", "onto_support"), "lowpass": ("motion.filtering", "butterworth_lowpass")}


def _copied(value):
    return value.copy() if isinstance(value, np.ndarray) else dict(value) if isinstance(value, dict) else value


def record(robot: str, ten: bool, what: list[str], lateral_solver: str | None = None) -> dict[str, list]:
    """Run one gait with this tree's core; the inputs of each call of `what`."""
    sagittal = importlib.import_module("core.balance.sagittal")
    hip_aim = importlib.import_module("core.balance.hip_aim")
    correction = importlib.import_module("core.balance.correction")
    calls: dict[str, list] = {name: [] for name in what}
    hooks = {"place": (sagittal.SagittalWaist, "place", True), "aim": (hip_aim.HeadAim, "solve", True),
             "motion": (correction, "_motion", False)}
    hooks["chain"] = (importlib.import_module("core.chains.solver").ChainKinematics, "evaluate", True)
    for name, (module, attr) in FUNCTIONS.items():
        hooks[name] = (importlib.import_module("core." + module), attr, False)
    originals = []
    for name in what:
        owner, attr, method = hooks[name]
        original = getattr(owner, attr)

        def hooked(*args, _name=name, _original=original, _method=method, **kwargs):
            if kwargs:  # recorded as positional arguments
                args = inspect.signature(_original).bind(*args, **kwargs).args
            head = [copy.deepcopy(args[0])] if _method and _name == "place" else list(args[:1])
            calls[_name].append(head + [_copied(a) for a in args[1:]])
            return _original(*args)
        # a function imported by name is hooked in every module holding it
        holders = [owner] if method else [m for key, m in list(sys.modules.items())
                                          if key.startswith("core.") and getattr(m, attr, None) is original]
        for holder in holders:
            originals.append((holder, attr, original))
            setattr(holder, attr, hooked)
    try:
        runner("core", robot, ten, lateral_solver)()
    finally:
        for owner, attr, original in originals:
            setattr(owner, attr, original)
    return calls


def _as_package(waist, package: str):
    """A recorded rolled waist on `package`'s classes (its legs and their hip aims too)."""
    sagittal = importlib.import_module(package + ".balance.sagittal")
    hip_aim = importlib.import_module(package + ".balance.hip_aim")
    waist = copy.deepcopy(waist)
    waist.__class__ = sagittal.SagittalWaist
    for leg in waist.legs:
        leg.__class__ = sagittal.PlanarLeg
        if leg.aim is not None:
            leg.aim = _aim_as_package(leg.aim, hip_aim)
    if hasattr(sagittal, "PlanarPair"):  # a code that pairs the legs builds its pair on these legs
        waist.pair = sagittal.PlanarPair.build(waist.legs)
    return waist


def _aim_as_package(aim, hip_aim):
    """A recorded hip aim on the module hip_aim's class, its derived fields worked out by that code (calls
    recorded with another code keep that code's fields)."""
    aim = copy.copy(aim)
    aim.__class__ = hip_aim.HeadAim
    aim.__post_init__()
    return aim


def _as_class(value, module: str, name: str):
    """A shallow copy of a recorded object on `module`'s class `name`."""
    value = copy.copy(value)
    value.__class__ = getattr(importlib.import_module(module), name)
    return value


def replay(name: str, calls: list, package: str) -> tuple[list, float]:
    """Each recorded call of `name` with `package`'s code: (outputs, CPU seconds)."""
    call, work = _prepared(name, calls, package)
    started = time.process_time()
    return [call(*args) for args in work], time.process_time() - started


def _prepared(name: str, calls: list, package: str) -> tuple:
    """The call to replay with `package`'s code and each recorded call's arguments, copied (objects on its classes)."""
    def rest(args, first):
        return [first] + [_copied(a) for a in args[1:]]
    if name in FUNCTIONS:
        module, attr = FUNCTIONS[name]
        function = getattr(importlib.import_module(package + "." + module), attr)
        kinds = [p.kind for p in inspect.signature(function).parameters.values()]
        # a code from before an argument was added runs without it
        taken = None if inspect.Parameter.VAR_POSITIONAL in kinds else len(kinds)
        return function, [[_copied(a) for a in args[:taken]] for args in calls]
    if name == "place":
        return (lambda waist, *args: waist.place(*args),
                [rest(args, _as_package(args[0], package)) for args in calls])
    if name == "motion":
        return (importlib.import_module(package + ".balance.correction")._motion,
                [[_as_class(args[0], package + ".model.posing", "Poser"),
                  _as_class(args[1], package + ".balance.inertia", "MassModel")] + [_copied(a) for a in args[2:]]
                 for args in calls])
    if name == "chain":
        work = [rest(args, _as_class(args[0], package + ".chains.solver", "ChainKinematics")) for args in calls]
        for args in work:
            args[0]._steps = None  # each code reads the tree itself
        return lambda kinematics, *args: kinematics.evaluate(*args), work
    hip_aim = importlib.import_module(package + ".balance.hip_aim")
    return hip_aim.HeadAim.solve, [rest(args, _aim_as_package(args[0], hip_aim)) for args in calls]


def _same(a, b) -> bool:
    if hasattr(a, "torque"):  # a LinkMotion
        return all(_same(getattr(a, f), getattr(b, f)) for f in ("com", "acc", "torque"))
    if isinstance(a, tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if a is None or b is None:
        return a is None and b is None
    return np.array_equal(a, b)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", type=Path, required=True, help="another copy of core, as a package directory")
    parser.add_argument("--robot", default="h1", choices=("g1", "h1"))
    parser.add_argument("--ten", action="store_true", help="the 10 s clip instead of the walk")
    parser.add_argument("--what", default=",".join(WHAT), help="of " + ", ".join(WHAT))
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--lateral-solver", choices=("highs", "interior"), help="the recorded gait's lateral.SOLVER")
    parser.add_argument("--calls", type=Path, help="recorded calls read from (or written to) this pickle")
    args = parser.parse_args()
    other = args.against.resolve()
    sys.path.insert(0, str(other.parent))
    what = [w for w in args.what.split(",") if w]
    if args.calls is not None and args.calls.exists():
        calls = pickle.loads(args.calls.read_bytes())
    else:
        calls = record(args.robot, args.ten, what, args.lateral_solver)
        if args.calls is not None:
            args.calls.write_bytes(pickle.dumps(calls))
    for name in what:
        if not calls[name]:
            print(f"{name}: no calls in this gait (the G1 has no rolled waist, nor a target put into its support)")
            continue
        best = {other.name: np.inf, "core": np.inf}
        for run in range(args.runs):
            outs = {}
            for package in (other.name, "core")[::1 if run % 2 == 0 else -1]:  # each code first in turn
                outs[package], cpu = replay(name, calls[name], package)
                best[package] = min(best[package], cpu)
            same = sum(_same(a, b) for a, b in zip(outs[other.name], outs["core"]))
        print(f"{name}: {len(calls[name])} calls, {best[other.name]:.3f} s ({other.name}) against {best['core']:.3f} s "
              f"(core): {best['core'] / best[other.name]:.2f} of the CPU; {same} of {len(calls[name])} the same bits; "
              f"load {os.getloadavg()[0]:.1f}", flush=True)


if __name__ == "__main__":
    main()
