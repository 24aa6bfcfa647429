#!/usr/bin/env python3
"""Start-up CPU of two or more checkouts, alternated run by run: what an animator pays at every
Blender start with the extension enabled, and a pipeline at every command.

    mkdir /tmp/before && git archive REV | tar -x -C /tmp/before
    ln -s $PWD/.venv /tmp/before/.venv && ln -s $PWD/wheels /tmp/before/wheels   # no scipy download
    .venv/bin/python bench/startup_ab.py /tmp/before . [--repeats 5] [--cases enable,version,...]

Cases (each a new process, run from the checkout):
  enable        import bpy, then install (the same zip: enable only) the checkout's extension into its
                build/blender_user, as the Blender tests do (tools/blender_session.py); the child also
                says its own CPU split (bpy import / enable) and how many scipy modules were loaded
  version       tools/robot-retarget version
  bake10        tools/robot-retarget bake of the walk's first 10 frames onto the G1 (bench_startup.py's)
  core-help     python -m core.library.cli gait --help
  core-bake     python -m core.library.cli bake of the whole walk onto the G1 (planted feet)
  core-gait     python -m core.library.cli gait of the whole walk onto the G1
User+sys CPU of the child and its children (getrusage) and wall time; least of REPEATS after one
warm-up round (a `version` first builds and installs each checkout's zip). The load is printed after each round.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import tempfile
import time
from pathlib import Path

from bench_startup import walk_slice

WALK = "data/motion/cmu_131_01_walk_m.bvh"
G1 = "data/robots/g1/unitree_g1_29dof.urdf"
ENABLE = """
import json, sys, time
sys.path.insert(0, "tools")
import blender_session, build_extension
blender_session.ensure_user_folder("build/blender_user")
started = time.process_time()
import bpy
imported = time.process_time()
blender_session.install_extension(build_extension.zip_path(build_extension.current_platform(), "dist"))
enabled = time.process_time()
print(json.dumps({"bpy": imported - started, "enable": enabled - imported,
                  "scipy": sum(name.partition(".")[0] == "scipy" for name in sys.modules)}))
"""


def commands(tree: Path, tmp: Path) -> dict[str, list[str]]:
    python, core = str(tree / ".venv" / "bin" / "python"), ["-m", "core.library.cli"]
    launcher = str(tree / "tools" / "robot-retarget")
    out = ["--out", str(tmp / "out.csv"), "--overwrite"]
    return {
        "enable": [python, "-c", ENABLE],
        "version": [launcher, "version"],
        "bake10": [launcher, "bake", "--source", str(tmp / "clip10.bvh"), "--robot", G1, *out],
        "core-help": [python, *core, "gait", "--help"],
        "core-bake": [python, *core, "bake", "--source", WALK, "--robot", G1, *out],
        "core-gait": [python, *core, "gait", "--source", WALK, "--robot", G1, *out],
    }


def run(cmd: list[str], tree: Path) -> tuple[float, float, str]:
    """(CPU s, wall s, stdout) of one command run in `tree`."""
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    env.pop("BLENDER_USER_RESOURCES", None)
    before, started = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    proc = subprocess.run(cmd, cwd=tree, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode:
        raise SystemExit(f"{tree}: {' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), wall, proc.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("trees", nargs="+", type=Path)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--cases", default="enable,version,bake10,core-help,core-bake,core-gait")
    args = parser.parse_args()
    trees, cases = [t.resolve() for t in args.trees], args.cases.split(",")
    cpu: dict = {}
    wall: dict = {}
    split: dict = {}
    with tempfile.TemporaryDirectory(prefix="rr_startup_ab_") as tmp:
        walk_slice(Path(tmp) / "clip10.bvh", 0, 10)
        for tree in trees:  # builds and installs each checkout's zip, which `enable` then finds
            run(commands(tree, Path(tmp))["version"], tree)
        for round_ in range(args.repeats + 1):
            for case in cases:
                for tree in trees if round_ % 2 else trees[::-1]:
                    seconds, elapsed, out = run(commands(tree, Path(tmp))[case], tree)
                    if round_:
                        cpu.setdefault(case, {}).setdefault(tree, []).append(seconds)
                        wall.setdefault(case, {}).setdefault(tree, []).append(elapsed)
                        if case == "enable":
                            split.setdefault(tree, []).append(json.loads(out.strip().splitlines()[-1]))
            print(f"round {round_}: load {open('/proc/loadavg').read().split()[:3]}", flush=True)
    print("case        " + "  ".join(f"{t.name:>22}" for t in trees) + "   (least CPU s / least wall s)")
    for case in cases:
        print(f"{case:11} " + "  ".join(f"{min(cpu[case][t]):10.3f} / {min(wall[case][t]):8.3f}" for t in trees))
    for tree in trees:
        least = {key: min(s[key] for s in split.get(tree, [])) for key in ("bpy", "enable", "scipy")} if split else {}
        if least:
            print(f"{tree.name}: in the enable child, bpy import {least['bpy']:.3f} s CPU, enable "
                  f"{least['enable']:.3f} s CPU, scipy modules loaded {least['scipy']}")


if __name__ == "__main__":
    main()
