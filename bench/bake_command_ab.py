#!/usr/bin/env python3
"""The whole `bake` command's CPU, each run a new process (what a user pays: every command is a
robot's first bake), for two or more checkouts alternated run by run.

User+sys CPU of the child (getrusage), one BLAS thread, least of REPEATS after one warm-up round
(which also fills the collision cache); the load is printed after each round.

    mkdir /tmp/before && git archive REV | tar -x -C /tmp/before && ln -s $PWD/.venv /tmp/before/.venv
    .venv/bin/python bench/bake_command_ab.py /tmp/before . [--repeats 5] [--cases g1-walk,g1-hop,h1-walk,h1-hop]
        [--mapping g1=/tmp/g1_avoid.json --mapping h1=/tmp/h1_avoid.json]
        [--robot romeo=/tmp/erd/.../romeo.urdf --cases romeo-walk]   (a robot from elsewhere, by absolute path)

--callgrind: instructions (valgrind's callgrind, load-independent; one repeat is enough) instead of CPU seconds.
Either way PYTHONDONTWRITEBYTECODE is dropped from the children's environment, so the warm-up round writes the
.pyc files a user's install has (this sandbox sets it: every command had compiled our 57 modules, 10 % of a G1
walk bake, in both bakes of a comparison; session 26).

--mapping ROBOT=PRESET bakes that robot's cases with a mapping preset (e.g. one with avoid_self_collision on:
auto_map, settings replaced, Mapping.save); a relative path is read in each checkout (the command runs
there), so checkouts may bake with presets of their own (avoidance off in one, on in another).
"""
from __future__ import annotations

import argparse
import os
import re
import resource
import subprocess
import tempfile
from pathlib import Path

CLIPS = {"walk": "data/motion/cmu_131_01_walk_m.bvh", "hop": "tests/data/motion/cmu_131_03_hop.bvh"}
ROBOTS = {"g1": "data/robots/g1/unitree_g1_29dof.urdf", "h1": "tests/data/robots/unitree_h1_19dof.urdf"}
CODE = 'import sys; sys.path.insert(0, "."); from core.library.cli import main; sys.exit(main())'


def command_cpu(tree: Path, robot: str, clip: str, out: Path, mapping: str | None = None,
                callgrind: bool = False) -> float:
    """User+sys CPU seconds of one bake command run from `tree` (the default bake, or with a preset); with
    callgrind, its instructions instead."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.update(OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", PYTHONHASHSEED="0")
    prefix = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null"] if callgrind else []
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(prefix + [str(tree / ".venv/bin/python"), "-c", CODE, "bake", "--source", CLIPS[clip],
                                    "--robot", ROBOTS[robot], "--out", str(out / "x.csv"), "--report",
                                    str(out / "x.json"), "--overwrite"] + (["--mapping", mapping] if mapping else []),
                          cwd=tree, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if callgrind:
        return float(re.search(r"Collected : (\d+)", done.stderr).group(1))
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("trees", nargs="+", type=Path)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--cases", default="g1-walk,g1-hop,h1-walk,h1-hop")
    parser.add_argument("--mapping", action="append", default=[], help="ROBOT=PRESET: bake that robot with a preset")
    parser.add_argument("--robot", action="append", default=[], metavar="NAME=URDF",
                        help="another robot for --cases (an absolute path, the same for every checkout)")
    parser.add_argument("--callgrind", action="store_true", help="instructions instead of CPU seconds")
    args = parser.parse_args()
    presets = dict(item.split("=", 1) for item in args.mapping)
    ROBOTS.update(item.split("=", 1) for item in args.robot)
    cases = [tuple(case.split("-")) for case in args.cases.split(",")]
    trees = [tree.resolve() for tree in args.trees]
    times: dict = {}
    with tempfile.TemporaryDirectory() as out:
        for round_ in range(args.repeats + 1):
            for robot, clip in cases:
                for tree in trees if round_ % 2 else trees[::-1]:
                    cpu = command_cpu(tree, robot, clip, Path(out), presets.get(robot), args.callgrind)
                    if round_:
                        times.setdefault((robot, clip), {}).setdefault(tree, []).append(cpu)
            print(f"round {round_}: load {open('/proc/loadavg').read().split()[:3]}", flush=True)
    unit = "instructions" if args.callgrind else "least CPU s"
    print("case       " + "  ".join(f"{tree.name:>14}" for tree in trees) + f"   ({unit})")
    for (robot, clip), per in times.items():
        print(f"{robot} {clip:5}   " + "  ".join(f"{min(per[tree]):14.4g}" for tree in trees))


if __name__ == "__main__":
    main()
