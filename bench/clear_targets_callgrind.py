#!/usr/bin/env python3
"""Instructions of the stages the arms' cleared targets move, in one cold G1 bake with avoidance, under callgrind.

The chain solve, keep_apart, the solver's jump repairs, the clearances' build and their calls, each through a
C function of the interpreter (bench/callgrind_inclusive.py's trampolines) whose inclusive cost callgrind_annotate
prints, in this order: starmap_next, calliter_iternext, _operator_call, filter_next, functools_reduce.

    ROBOT_RETARGET_CLEAR_TARGETS=1 OMP_NUM_THREADS=1 PYTHONHASHSEED=0 valgrind --tool=callgrind \\
        --callgrind-out-file=/tmp/cg.out .venv/bin/python bench/clear_targets_callgrind.py hop
    callgrind_annotate --inclusive=yes /tmp/cg.out | grep -E "TOTALS|starmap_next|calliter_iternext|_operator_call|filter_next|functools_reduce"

The total includes compiling the modules where no .pyc exists (this sandbox sets PYTHONDONTWRITEBYTECODE: ~0.8 G
of a G1 bake); the stages' own counts do not.
"""
from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE)]
import callgrind_inclusive  # noqa: E402
import clips  # noqa: E402

STAGES = ["core.retarget.pipeline:solve_chains", "core.retarget.pipeline:keep_apart",
          "core.chains.solver:_repair_jumps", "core.retarget.pipeline:_clearances",
          "core.collision.clearance:TargetClearance.__call__"]


def main() -> None:
    for spec, (c_name, trampoline) in zip(STAGES, callgrind_inclusive.TRAMPOLINES):
        callgrind_inclusive.wrap(spec, trampoline)
        print(f"{spec}: {c_name}")
    bake(sys.argv[1:] == ["hop"])


def bake(hop: bool) -> None:
    """One cold avoiding G1 bake of the hop (else the walk), its figures printed."""
    from core.model.kinematics import KinematicTree
    from core.model.urdf import parse_urdf
    from core.retarget import auto_map, retarget
    tree = KinematicTree(parse_urdf(clips.ROBOTS["g1"]))
    motion = clips.load(clips.HOP if hop else clips.WALK)
    mapping = auto_map(motion, tree)
    mapping.settings = replace(mapping.settings, avoid_self_collision=True)
    report = retarget(motion, tree, mapping, contacts="auto").report
    print(f"colliding {report['self_collision_pct']:.2f} %, limbs {report['limb_direction_error_deg']:.3f} deg")


if __name__ == "__main__":
    main()
