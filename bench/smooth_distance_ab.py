#!/usr/bin/env python3
"""The smooth trunk proxies' distance (core.collision.smooth.capsule_to_smooth) against an earlier revision's.

Records every call one G1 bake makes (smooth trunk on, `--descent`: the descended polish too), then
replays them with both revisions' smooth.py (the earlier one from `git show`), interleaved, the order
reversed every round, the least CPU time of `--rounds`; and both on random capsules around the two
trunk bodies. Prints the largest difference of any output (distances, points, gradients), which
should be rounding. First the bake itself with each code's distance, interleaved (least of
`--rounds`: the bake's CPU and the CPU inside the distance), which is what a user sees: a replay
alone sees other cache and allocation states than the bake.

    ROBOT_RETARGET_SMOOTH_TRUNK=1 .venv/bin/python bench/smooth_distance_ab.py [--base REV (HEAD~1)]
        [--clips walk,hop] [--rounds 5] [--descent] [--random 20000]

Instructions instead (load-independent): `--record DIR` pickles each clip's calls (this code's bake)
to DIR/<clip>.pkl and stops; `--replay FILE --code base|this` replays them once with one code. Under
callgrind, the replay's instructions less those of replaying an empty list (the imports):

    ROBOT_RETARGET_SMOOTH_TRUNK=1 .venv/bin/python bench/smooth_distance_ab.py --record /tmp/calls
    .venv/bin/python -c "import pickle; pickle.dump([], open('/tmp/calls/none.pkl', 'wb'))"  # the same --code on it
    ROBOT_RETARGET_SMOOTH_TRUNK=1 valgrind --tool=callgrind --callgrind-out-file=/dev/null \
        .venv/bin/python bench/smooth_distance_ab.py --replay /tmp/calls/hop.pkl --code this [--base REV]
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import pickle
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[var] = "1"

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(ROOT))
import numpy as np  # noqa: E402
from scipy.spatial.transform import Rotation  # noqa: E402

import clips  # noqa: E402
import core.chains.separation as separation  # noqa: E402
import core.collision.hulls as hulls  # noqa: E402
from core.collision import collision_pairs, smooth  # noqa: E402
from core.model.kinematics import KinematicTree  # noqa: E402
from core.model.urdf import parse_urdf  # noqa: E402
from core.retarget import auto_map, retarget  # noqa: E402


def base_module(rev: str, folder: Path):
    """The earlier revision's smooth.py, imported on its own (it needs only numpy and scipy)."""
    path = folder / "smooth_base.py"
    path.write_bytes(subprocess.run(["git", "-C", str(ROOT), "show", f"{rev}:core/collision/smooth.py"],
                                    check=True, capture_output=True).stdout)
    spec = importlib.util.spec_from_file_location("smooth_base", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def recorded_calls(tree, clip: str, distance) -> tuple[list, float, float]:
    """Every capsule_to_smooth call of one avoiding bake (placed, proxy, ends, radius, within), made by
    `distance` (a capsule_to_smooth), and the bake's CPU and the CPU inside those calls."""
    calls, spent = [], [0.0]
    inner = hulls.capsule_to_smooth

    def recorded(placed, proxy, model, ends, radius, within=np.inf):
        calls.append((placed.copy(), proxy.copy(), ends.copy(), radius.copy(), within))
        started = time.process_time()
        out = _call(distance, placed, proxy, model, ends, radius, within)
        spent[0] += time.process_time() - started
        return out

    motion = clips.load(clips.WALK if clip == "walk" else clips.HOP)
    mapping = auto_map(motion, tree)
    mapping.settings = replace(mapping.settings, avoid_self_collision=True)
    hulls.capsule_to_smooth = recorded
    try:
        started = time.process_time()
        retarget(motion, tree, mapping, contacts="auto")
        whole = time.process_time() - started
    finally:
        hulls.capsule_to_smooth = inner
    return calls, whole, spent[0]


def _call(distance, placed, proxy, model, ends, radius, within):
    """capsule_to_smooth with `within` where it takes one (since s28-smoothcost: capsules provably
    beyond it are not searched, their distance a lower bound)."""
    if "within" in distance.__code__.co_varnames:
        return distance(placed, proxy, model, ends, radius, within)
    return distance(placed, proxy, model, ends, radius)


def random_calls(model, count: int, seed: int = 0) -> list:
    """One call of `count` random capsules (axes up to 0.34 m, a twentieth points) within about 12 cm
    of a trunk proxy's centre, the proxies placed at random."""
    rng = np.random.default_rng(seed)
    proxy = rng.integers(0, len(model.hull_level), count)
    turn = Rotation.random(count, random_state=rng).as_matrix()
    shift = rng.normal(0.0, 0.3, (count, 3))
    placed = np.einsum("kij,kpj->kpi", turn, model.hull_points[proxy]) + shift[:, None]
    middle = np.einsum("kij,kj->ki", turn, model.hull_points[proxy, 0]) + shift + rng.normal(0.0, 0.12, (count, 3))
    axis = rng.normal(size=(count, 3))
    axis /= np.linalg.norm(axis, axis=1, keepdims=True)
    half = rng.uniform(0.0, 0.17, (count, 1))
    half[: count // 20] = 0.0
    ends = np.stack([middle - half * axis, middle + half * axis], axis=1)
    return [(placed, proxy, ends, rng.uniform(0.02, 0.06, count), np.inf)]


def compare(label: str, calls: list, model, codes: dict, rounds: int) -> None:
    """Print each code's least CPU over the calls and the largest difference of any output (where
    both codes' distance is within the call's `within`: beyond, each may give a lower bound)."""
    best, outs = {}, {}
    for k in range(rounds):
        for name in (list(codes) if k % 2 else list(codes)[::-1]):
            started = time.process_time()
            outs[name] = [_call(codes[name].capsule_to_smooth, p, h, model, e, r, w) for p, h, e, r, w in calls]
            best[name] = min(best.get(name, np.inf), time.process_time() - started)
    near = [(a[0] < c[4]) & (b[0] < c[4]) for a, b, c in zip(outs["base"], outs["this"], calls)]
    diff = max((np.abs(x[k] - y[k]).max() for a, b, k in zip(outs["base"], outs["this"], near) for x, y in zip(a, b)
                if k.any()), default=0.0)
    print(f"{label}: {len(calls)} calls, {sum(len(c[1]) for c in calls)} queries; CPU base {best['base']:.3f} s, "
          f"this {best['this']:.3f} s ({best['this'] / best['base']:.2f} x); largest difference {diff:.2g}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base", default="HEAD~1", help="the earlier revision (git)")
    parser.add_argument("--clips", default="walk,hop")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--descent", action="store_true", help="the descended polish on (POLISH_ROOM, POLISH_DESCENT)")
    parser.add_argument("--random", type=int, default=20000, help="random capsules (0: none)")
    parser.add_argument("--record", type=Path, help="pickle each clip's calls to this folder and stop")
    parser.add_argument("--replay", type=Path, help="replay these pickled calls once with --code and stop")
    parser.add_argument("--code", choices=("base", "this"), default="this")
    args = parser.parse_args()
    if not hulls.smooth_trunk():
        sys.exit("set ROBOT_RETARGET_SMOOTH_TRUNK=1")
    separation.POLISH_ROOM = separation.POLISH_DESCENT = args.descent
    tree = KinematicTree(parse_urdf(clips.ROBOTS["g1"]))
    model = collision_pairs(tree).model
    if args.record:
        args.record.mkdir(parents=True, exist_ok=True)
        for clip in args.clips.split(","):
            with open(args.record / f"{clip}.pkl", "wb") as out:
                pickle.dump(recorded_calls(tree, clip, smooth.capsule_to_smooth)[0], out)
        return
    if args.replay:
        with open(args.replay, "rb") as calls, tempfile.TemporaryDirectory() as folder:
            code = base_module(args.base, Path(folder)) if args.code == "base" else smooth
            for placed, proxy, ends, radius, within in pickle.load(calls):
                _call(code.capsule_to_smooth, placed, proxy, model, ends, radius, within)
        return
    with tempfile.TemporaryDirectory() as folder:
        codes = {"base": base_module(args.base, Path(folder)), "this": smooth}
        print(f"load {open('/proc/loadavg').read().strip()}  (base {args.base})", flush=True)
        if args.random:
            compare("random", random_calls(model, args.random), model, codes, args.rounds)
        for clip in args.clips.split(","):
            bakes = {}  # the bake with each code's distance, interleaved: least (bake CPU, CPU in the distance)
            for k in range(args.rounds):
                for name in (list(codes) if k % 2 else list(codes)[::-1]):
                    calls, whole, spent = recorded_calls(tree, clip, codes[name].capsule_to_smooth)
                    bakes[name] = min(bakes.get(name, (np.inf, np.inf)), (whole, spent))
            print(f"{clip} bake: " + ", ".join(f"{name} {whole:.3f} s CPU, {spent:.3f} s of it in capsule_to_smooth"
                                               for name, (whole, spent) in bakes.items()), flush=True)
            compare(f"{clip} replayed", calls, model, codes, args.rounds)
        print(f"load {open('/proc/loadavg').read().strip()}")


if __name__ == "__main__":
    main()
