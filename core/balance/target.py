"""The target ZMP: under the stance foot, ramping across double support (issue 12, step 5).

In single support the target sits at a chosen point of the stance foot's sole (its centre
by default, plus a robot-specific offset in the foot's frame); in double support it moves
from the foot being left to the foot being stepped on along a smooth ramp, so a preview
controller can follow it without a step. Before the first and after the last single
support it stays between the feet; a clip that starts with a foot in the air starts between
the feet and goes to the foot the person stands on until the other lands. Once the legs have
put the feet (a lift-off may let go earlier than planned), the target is put inside the support
they stand on (onto_support).
"""
from __future__ import annotations

import numpy as np

from ..feet.contacts import flags_to_intervals
from ..model.same_bits import equal_bits
from .correction import _envelope
from .lateral import shrunk_edges


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


def onto_support(target: np.ndarray, polygons: list[np.ndarray | None], index: np.ndarray, margin_m: float,
                 width_share: float | None, period_s: float, lead_s: float) -> np.ndarray:
    """target (N, 2) moved into each sample's support polygon (polygons[index] (N,), counter-clockwise, or
    None: left) shrunk as the lateral plan shrinks it (core.balance.lateral.shrunk_edges), the move eased
    in over lead_s before (and out after) and the eased target put into the shrunk polygon again: a
    lift-off moved earlier after the target was planned (core.balance.lift_off) left it crossing to the
    standing foot while the other was already up, where the ZMP lagging it left the standing sole."""
    shrunk = [None if p is None or len(p) < 3 else shrunk_edges(p, margin_m, width_share) for p in polygons]
    first = _into(target, shrunk, index)
    shift = first - target
    shift[np.linalg.norm(shift, axis=1) < OUTSIDE_TOL_M] = 0.0
    if not shift.any():
        return target
    width = max(1, int(round(lead_s / period_s)))
    eased = np.column_stack([_envelope(np.clip(way * column, 0.0, None), width) * way  # each axis, each way
                             for column in shift.T for way in (1.0, -1.0)])
    return _into(target + eased[:, 0::2] + eased[:, 1::2], shrunk, index, (target, first))


def _into(points: np.ndarray, shrunk: list[tuple[np.ndarray, np.ndarray] | None], index: np.ndarray,
          known: tuple[np.ndarray, np.ndarray] | None = None) -> np.ndarray:
    """points (N, 2) each onto its shrunk polygon shrunk[index] (normals, bounds), or left where None.
    known: (points, their answer) of an earlier call on the same polygons: a polygon whose points are
    those to the bit (the eased move is 0 on most of them) takes that answer (the same products)."""
    out = points.copy()
    order = np.argsort(index, kind="stable")
    starts = np.searchsorted(index[order], np.arange(len(shrunk) + 1))
    for i, edges in enumerate(shrunk):
        rows = order[starts[i]:starts[i + 1]]
        if edges is None or not len(rows):
            continue
        p = out[rows]
        if known is not None and equal_bits(p, known[0][rows]):
            out[rows] = known[1][rows]
            continue
        pairs = list(zip(*edges))
        for _ in range(4):  # onto each violated edge in turn: a few sweeps settle on a convex polygon
            before = p.tobytes()
            for n, b in pairs:  # np.clip(x, 0.0, None) is np.maximum(x, 0.0) behind a Python wrapper
                miss = p @ n
                miss -= b
                p -= np.maximum(miss, 0.0, out=miss)[:, None] * n
            if p.tobytes() == before:  # a sweep that left every bit (-0.0 too) would repeat itself: settled
                break
        out[rows] = p
    return out


OUTSIDE_TOL_M = 1e-4  # a target this close to its shrunk support is left where the plan put it


def _smoothstep(s: np.ndarray) -> np.ndarray:
    """0 to 1 with zero slope at both ends (3 s^2 - 2 s^3)."""
    return s * s * (3.0 - 2.0 * s)
