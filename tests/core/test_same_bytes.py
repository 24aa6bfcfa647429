"""The same command writes the same bytes in every process (core.model.same_bits).

numpy 1.26's SIMD transcendental loops turn scalar where a fresh output lands near a strided input,
so the last bits once followed the heap's layout: the H1 walk's gait wrote 4 different CSVs in 6
processes and the chaotic gait carried that to other margins. Each command here runs in processes
with other hash seeds and other heap layouts (a few bytes allocated before it)."""
from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
WALK = "data/motion/cmu_131_01_walk_m.bvh"
H1 = "tests/data/robots/unitree_h1_19dof.urdf"
RUN = ("import sys, numpy as np; pad = np.empty(int(sys.argv[1]), np.uint8); sys.path.insert(0, sys.argv[2]); "
       "from core.library.cli import main; sys.exit(main(sys.argv[3:]))")


def _digest(command: list[str], out: Path, seed: int, pad: int) -> str:
    env = dict(os.environ, PYTHONHASHSEED=str(seed), OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    subprocess.run([sys.executable, "-c", RUN, str(pad), str(ROOT), *command, "--out", str(out), "--overwrite"],
                   cwd=ROOT, env=env, check=True, capture_output=True)
    return hashlib.sha256(out.read_bytes()).hexdigest()


@pytest.mark.parametrize("command", ["bake", "gait"])
def test_the_h1_walk_writes_the_same_bytes_in_every_process(command, tmp_path):
    digests = {_digest([command, "--source", WALK, "--robot", H1], tmp_path / f"{k}.csv", 1 + 7 * k, 8 + 40 * k)
               for k in range(4)}
    assert len(digests) == 1, f"{command}: {len(digests)} different CSVs from 4 processes"
