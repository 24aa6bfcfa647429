"""What `robot-retarget-core` imports before it knows what to run: a pipeline pays the imports of
every command it starts. `--help` and the parsers import no scipy (it cost ~0.5 s of CPU a start
when the command imported every subcommand's modules at the top); a subcommand imports what it
runs. Each case runs in a fresh interpreter, the way a pipeline starts the command."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import contextlib, io, json, sys
sys.path.insert(0, {root!r})
from core.library.cli import main
with contextlib.redirect_stdout(io.StringIO()) as out:
    try:
        main({argv!r})
    except SystemExit:
        pass
scipy = lambda: sorted(m for m in sys.modules if m.partition(".")[0] == "scipy")
before = scipy()
import core.library.clip  # what a bake runs: the probe must see its scipy
print(json.dumps({{"help": out.getvalue(), "scipy": before, "after_clip": scipy()}}))
"""


@pytest.mark.parametrize("argv", [["--help"], ["bake", "--help"], ["gait", "--help"], ["batch", "--help"]])
def test_help_imports_no_scipy(argv):
    proc = subprocess.run([sys.executable, "-c", PROBE.format(root=str(ROOT), argv=argv)],
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    seen = json.loads(proc.stdout.strip().splitlines()[-1])
    assert "usage: robot-retarget-core" in seen["help"]
    assert seen["scipy"] == []
    assert "scipy.spatial" in seen["after_clip"] and "scipy.linalg" in seen["after_clip"]
