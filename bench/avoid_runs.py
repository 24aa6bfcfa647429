#!/usr/bin/env python3
"""Self-collision avoidance: one answer per run (core/chains/coherence.py), run by run.

For the bundled walk and hop onto a robot (avoidance on, planted feet, one core) prints, per group
making room and per run of close frames of its first pass: its frames, how many end against the
run's median answer and are started again from it, how many of those then agree with it, and the
runs tried whole on the other answer (whether theirs is against the run's, finished, kept). With
`--skip-each`, the bake again with each run's restart left out in turn: the limbs' and jerk's
change (what that run's restart buys; issue 17's per-run test, docs/history/self_collision.md, session 19,
s19-avoidspeed). Two bakes of the same code in one process may differ by rounding (BLAS rounds by address), and a near
tie then goes the other way: changes of a few hundredths of a degree are within that.

    .venv/bin/python bench/avoid_runs.py [--robot g1] [--clips walk,hop] [--skip-each]
"""
from __future__ import annotations

import argparse
import os
import sys
from dataclasses import replace
from pathlib import Path

for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[var] = "1"

sys.path.insert(0, str(Path(__file__).resolve().parent))
import clips  # noqa: E402
import numpy as np  # noqa: E402

import core.chains.coherence as coherence  # noqa: E402
import core.chains.separation as separation  # noqa: E402
from core.collision import collision_pairs  # noqa: E402
from core.model.kinematics import KinematicTree  # noqa: E402
from core.model.urdf import parse_urdf  # noqa: E402
from core.retarget import auto_map, retarget  # noqa: E402

_ANSWER, _RESTART, _AGAINST = coherence.one_answer_per_run, coherence._restart, coherence._against


class _Watch:
    """Wraps one_answer_per_run: prints its runs (verbose) and leaves out one run's restart (skip)."""

    def __init__(self):
        self.verbose, self.skip, self.group = True, None, 0

    def __call__(self, correct, out, shape):
        self.group += 1
        rows = correct.rows
        run = np.cumsum(np.diff(rows, prepend=rows[0]) > coherence.RUN_GAP_FRAMES)
        first = {"against": None}

        def against(change, consensus):
            found = _AGAINST(change, consensus)
            if first["against"] is None and len(change) == len(rows):
                if self.skip == (self.group, None):
                    pass
                elif self.skip is not None and self.skip[0] == self.group:
                    found = found[run[found] != self.skip[1]]
                first["against"] = (found, consensus.copy())
            return found

        def restart(correct_, out_, shape_, consensus, groups):
            went = _RESTART(correct_, out_, shape_, consensus, groups)
            if self.verbose and first.get("reported") is None and first["against"] is not None:
                first["reported"] = True
                self._report(rows, run, out_, shape_, *first["against"])
            return went

        coherence._against, coherence._restart = against, restart
        try:
            return _ANSWER(correct, out, shape)
        finally:
            coherence._against, coherence._restart = _AGAINST, _RESTART

    def _report(self, rows, run, out, shape, restarted, consensus):
        still = _AGAINST(out[rows] - shape, consensus)
        print(f"  group {self.group}: {len(rows)} close frames, {len(restarted)} started again, "
              f"{len(np.setdiff1d(restarted, still))} of them then on their run's answer")
        for k in np.unique(run):
            members = np.flatnonzero(run == k)
            mine, off = np.intersect1d(restarted, members), np.intersect1d(still, members)
            theirs = np.median(out[rows[off]] - shape[off], axis=0) if len(off) else consensus[members[0]]
            other = len(_AGAINST(theirs[None], consensus[members[:1]])) > 0
            tried = len(off) >= coherence.RETRY_SHARE * len(members)
            print(f"    run {k}: frames {rows[members[0]]}-{rows[members[-1]]} ({len(members)}), against {len(mine)}, "
                  f"then on its answer {len(np.setdiff1d(mine, off))}; "
                  + (("half or more still off it: " + ("theirs against the run's, tried whole" if other else
                      "theirs not against the run's, no other answer to try")) if tried else "not tried"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--robot", default="g1")
    parser.add_argument("--clips", default="walk,hop")
    parser.add_argument("--skip-each", action="store_true")
    args = parser.parse_args()
    watch = _Watch()
    separation.one_answer_per_run = watch
    tree = KinematicTree(parse_urdf(clips.ROBOTS[args.robot]))
    collision_pairs(tree)
    for name in args.clips.split(","):
        motion = clips.load(clips.WALK if name == "walk" else clips.HOP)
        mapping = auto_map(motion, tree)
        off = retarget(motion, tree, mapping, contacts="auto").report
        mapping.settings = replace(mapping.settings, avoid_self_collision=True)

        def bake():
            watch.group = 0
            report = retarget(motion, tree, mapping, contacts="auto").report
            return (report["limb_direction_error_deg"] - off["limb_direction_error_deg"], report["jerk_after"],
                    report["self_collision_pct"])

        print(f"{args.robot} {name}", flush=True)
        watch.verbose, watch.skip = True, None
        base = bake()
        print(f"  limbs {base[0]:+.3f} deg over off, jerk {base[1]:,.0f} rad/s^3, colliding {base[2]:.2f} %", flush=True)
        if not args.skip_each:
            continue
        watch.verbose = False
        groups = watch.group
        for group in range(1, groups + 1):
            for k in range(12):
                watch.skip = (group, k)
                limbs, jerk, pct = bake()
                if abs(limbs - base[0]) >= 1e-3 or abs(jerk - base[1]) >= 1.0 or pct != base[2]:
                    print(f"  group {group} run {k}'s restart left out: limbs {limbs - base[0]:+.3f} deg, "
                          f"jerk {jerk - base[1]:+,.0f} rad/s^3, colliding {pct:.2f} %", flush=True)


if __name__ == "__main__":
    main()
