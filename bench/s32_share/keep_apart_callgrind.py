#!/usr/bin/env python3
"""Instructions of keep_apart's stages in one cold in-process avoiding G1 bake, under callgrind: the whole
keep_apart, the sampled room (_sampled_apart), its frame-by-frame passes (_keep_apart), the steady room (_steady)
and the look at every frame that anchors the samples (the first _violation of each _sampled_apart).

    ROBOT_RETARGET_CLEAR_TARGETS=1 OMP_NUM_THREADS=1 PYTHONHASHSEED=0 valgrind --tool=callgrind \\
        --callgrind-out-file=/tmp/cg.out .venv/bin/python bench/s32_share/keep_apart_callgrind.py hop
    callgrind_annotate --inclusive=yes /tmp/cg.out | grep -E "TOTALS|starmap_next|calliter_iternext \\[|_operator_call|filter_next|functools_reduce"

In that order: starmap_next keep_apart, calliter_iternext _sampled_apart, _operator_call the anchoring look,
filter_next _steady, functools_reduce _keep_apart (bench/callgrind_inclusive.py's trampolines).
"""
from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent.parent), str(HERE.parent)]
import callgrind_inclusive  # noqa: E402
import clear_targets_callgrind  # noqa: E402
import core.chains.separation as separation  # noqa: E402

TRAMPOLINE = [trampoline for _, trampoline in callgrind_inclusive.TRAMPOLINES]


def _wrap_anchoring_look() -> None:
    """The first _violation inside each _sampled_apart (its look at every frame) through _operator_call."""
    violation, sampled = separation._violation, separation._sampled_apart
    counted, armed = TRAMPOLINE[2](violation), [False]

    def look(*args, **kwargs):
        if armed[0]:
            armed[0] = False
            return counted(*args, **kwargs)
        return violation(*args, **kwargs)

    def sampled_apart(*args, **kwargs):
        armed[0] = True
        return sampled(*args, **kwargs)

    separation._violation = look
    separation._sampled_apart = TRAMPOLINE[1](sampled_apart)


def main() -> None:
    _wrap_anchoring_look()
    callgrind_inclusive.wrap("core.retarget.pipeline:keep_apart", TRAMPOLINE[0])
    separation._steady = TRAMPOLINE[3](separation._steady)
    separation._keep_apart = TRAMPOLINE[4](separation._keep_apart)
    clear_targets_callgrind.bake(sys.argv[1:] == ["hop"])


if __name__ == "__main__":
    main()
