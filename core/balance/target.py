"""The target ZMP: under the stance foot, ramping across double support (issue 12, step 5).

In single support the target sits at a chosen point of the stance foot's sole (its centre
by default, plus a robot-specific offset in the foot's frame); in double support it moves
from the foot being left to the foot being stepped on along a smooth ramp, so a preview
controller can follow it without a step. Before the first and after the last single
support it stays between the feet; a clip that starts with a foot in the air starts between
the feet and goes to the foot the person stands on until the other lands.
"""
from __future__ import annotations

import numpy as np

from ..feet.contacts import flags_to_intervals


def target_zmp(sole: dict[str, np.ndarray], down: dict[str, np.ndarray],
               placed: dict[str, np.ndarray] | None = None) -> np.ndarray:
    """Target ZMP (F, 2) from each foot's sole point on the ground (F, 2), metres, and its
    contact flags (F,) ('left', 'right'). placed: per foot (F,), where it is down only because the
    clip starts with it in the air (core.balance.foot_path): the target goes from between the feet
    to the foot the person stands on over that span, and steps from there once the other lands."""
    placed = placed or {}
    down = {side: flags & ~placed[side] if side in placed else flags for side, flags in down.items()}
    out = _target(sole, down)
    mid = (sole["left"] + sole["right"]) / 2.0
    for flags in placed.values():
        first = int(np.argmin(flags)) if not flags.all() else len(flags)  # the samples before its first landing
        if first > 0:
            s = _smoothstep(np.linspace(0.0, 1.0, first + 1)[:-1])[:, None]
            out[:first] = (1 - s) * mid[:first] + s * out[:first]
    return out


def _target(sole: dict[str, np.ndarray], down: dict[str, np.ndarray]) -> np.ndarray:
    left, right = down["left"], down["right"]
    frames = len(left)
    mid = (sole["left"] + sole["right"]) / 2.0
    out = mid.copy()
    single = {"left": left & ~right, "right": right & ~left}
    owner = np.full(frames, "", dtype=object)  # the stance foot in each single support
    for side, flags in single.items():
        out[flags] = sole[side][flags]
        owner[flags] = side
    for start, end in flags_to_intervals(left & right):
        before = owner[start - 1] if start > 0 else ""
        after = owner[end] if end < frames else ""
        s = _smoothstep(np.linspace(0.0, 1.0, end - start + 2)[1:-1])[:, None]
        span = slice(start, end)
        if before and after and before != after:  # a step: from the foot left to the foot stepped on
            out[span] = (1 - s) * sole[before][span] + s * sole[after][span]
        elif before and after:  # the other foot only touched: the stance foot keeps the ZMP
            out[span] = sole[before][span]
        elif before:  # the clip ends standing: from the foot to between the feet
            out[span] = (1 - s) * sole[before][span] + s * mid[span]
        elif after:  # the clip starts standing: from between the feet to the first stance foot
            out[span] = (1 - s) * mid[span] + s * sole[after][span]
    return out


def _smoothstep(s: np.ndarray) -> np.ndarray:
    """0 to 1 with zero slope at both ends (3 s^2 - 2 s^3)."""
    return s * s * (3.0 - 2.0 * s)
