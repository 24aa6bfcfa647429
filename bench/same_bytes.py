#!/usr/bin/env python3
"""Do runs of the same command in other processes write the same bytes?

    .venv/bin/python bench/same_bytes.py [--runs 6] [--cases h1-walk-bake,g1-hop-bake,h1-walk-gait] [--keep DIR]
        [--tree /work/main]

Each case's `robot-retarget-core` command (this tree's, not installed) runs --runs times, one process at a
time, each with another PYTHONHASHSEED and another heap layout (a small array of another size allocated before
the command; the address space is randomised as usual), and its CSV's SHA-256 is printed per run. One hash per
case: every run wrote the same file. The machine is shared: one process at a time, a few seconds each.
"""
from __future__ import annotations

import argparse
import hashlib
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WALK = "data/motion/cmu_131_01_walk_m.bvh"
HOP = "tests/data/motion/cmu_131_03_hop.bvh"
H1 = "tests/data/robots/unitree_h1_19dof.urdf"
G1 = "data/robots/g1/unitree_g1_29dof.urdf"
CASES = {
    "h1-walk-bake": ["bake", "--source", WALK, "--robot", H1],
    "g1-hop-bake": ["bake", "--source", HOP, "--robot", G1],
    "h1-walk-gait": ["gait", "--source", WALK, "--robot", H1],
}
# the command after `pad` bytes of numpy memory: where its arrays land moves with it
RUN = ("import sys, numpy as np; pad = np.empty(int(sys.argv[1]), np.uint8); sys.path.insert(0, sys.argv[2]); "
       "from core.library.cli import main; sys.exit(main(sys.argv[3:]))")


def run_once(tree: Path, command: list[str], out: Path, seed: int, pad: int) -> str:
    """The CSV's SHA-256 after one run of `tree`'s code in a fresh process."""
    env = dict(os.environ, PYTHONHASHSEED=str(seed))
    subprocess.run([sys.executable, "-c", RUN, str(pad), str(tree), *command, "--out", str(out), "--overwrite"],
                   cwd=ROOT, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return hashlib.sha256(out.read_bytes()).hexdigest()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=6)
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--keep", type=Path, help="keep every run's CSV here")
    parser.add_argument("--tree", type=Path, default=ROOT, help="the checkout whose code runs")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        folder = args.keep or Path(scratch)
        folder.mkdir(parents=True, exist_ok=True)
        apart = 0
        for case in args.cases.split(","):
            hashes = []
            for k in range(args.runs):
                seed, pad = 1 + 7 * k, 8 + 40 * k
                digest = run_once(args.tree.resolve(), CASES[case], folder / f"{case}-{k}.csv", seed, pad)
                hashes.append(digest)
                print(f"{case} run {k}: PYTHONHASHSEED={seed} pad {pad} B -> {digest[:16]}", flush=True)
            distinct = len(set(hashes))
            apart += distinct > 1
            print(f"{case}: {distinct} distinct CSV{'s' if distinct > 1 else ''} in {args.runs} runs", flush=True)
    return 1 if apart else 0


if __name__ == "__main__":
    sys.exit(main())
