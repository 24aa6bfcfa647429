"""The multipliers of a frame's few pair rows (core.chains.separation's least change): projected
Gauss-Seidel on the dual of min 1/2 dx' H dx subject to g dx >= need, all frames at once.

A sweep is K sequential updates (one per pair), so its numpy form pays two calls per pair and
sweep whatever the frames: on a step of one to a few frames (most of a bake's steps: the frames
that oscillate at a pass's end) that overhead is nearly all of it. There the same sums, in the
same order, run on Python floats (_sweep_floats): the same multipliers to the bit over two or more
frames (over one numpy sums a row in two SIMD lanes, here in order: a bake's joints move by 4e-10
rad at most; docs/history/self_collision.md, session 15).
"""
from __future__ import annotations

import numpy as np

try:  # np.einsum less its Python wrapper (which adds only the `optimize` path): 2-3 us less a call, 24 K calls a step
    from numpy._core.multiarray import c_einsum as _einsum
except ImportError:  # pragma: no cover - another numpy's layout
    _einsum = np.einsum

CONVERGED = 1e-10  # the sweeps stop once no multiplier moved further
_largest = np.maximum.reduce  # ndarray.max less its Python wrapper
FLOAT_ENTRIES = 64  # up to this many frames x pairs the sweeps run on Python floats: a numpy sweep costs 2 calls a
#                     pair whatever the frames, a float sweep a pair's row a frame (even at 12 x 6, 16 x 4, 48 x 2)


def dual_step(inverse: np.ndarray, g: np.ndarray, need: np.ndarray, sweeps: int) -> np.ndarray:
    """dx (R, V) = H^-1 g' lambda with lambda >= 0 solving the dual of min 1/2 dx' H dx, g dx >= need
    (H^-1: `inverse` (R, V, V), g (R, K, V), need (R, K)): each pair's multiplier is what its row
    asks once the others' are counted, the row's ask riding as a last multiplier fixed at 1, up to
    `sweeps` sweeps over the pairs (fewer once no multiplier moves by CONVERGED)."""
    hg = inverse @ g.transpose(0, 2, 1)  # (R, V, K)
    m = (g @ hg).transpose(1, 2, 0)  # (K, K, R): every frame's matrix, frames last
    count = len(m)
    diag = np.maximum(np.einsum("kkr->kr", m), 1e-12)
    rows = np.empty((count, count + 1, m.shape[2]))
    rows[:, :count] = -m / diag[:, None]
    rows[np.arange(count), np.arange(count)] = 0.0
    rows[:, count] = need.T / diag
    if m.shape[2] * count <= FLOAT_ENTRIES:
        pairs = _sweep_floats(rows, sweeps)
    else:
        pairs = _sweep_arrays(rows, sweeps)
    return np.einsum("rvk,kr->rv", hg, pairs)


def exact_step(metric: np.ndarray, inverse: np.ndarray, g: np.ndarray, need: np.ndarray, low: np.ndarray,
               high: np.ndarray, slack: float, sweeps: int) -> np.ndarray:
    """dx (R, V) of least 1/2 dx' H dx with g dx >= need (R, K; a row of g all zero asks nothing; a pair
    may fall short at a steep price: a shortfall s costs as much as s / slack of scaled change) and
    low <= dx <= high (R, V), each frame solved exactly: the least-distance problem in w = L' dx
    (H = L L') by the switch windows' NNLS (core.chains.switches._least_distance). Exact, so the answer does
    not depend on the rows' order or on how far sweeps went, and a bound reached is a row like any other:
    continuous in the input where sweeps stopped short are not (dual_step's answer moves with the rows'
    order). Where NNLS gives up: dual_step's answer (`inverse`: H^-1, `sweeps`), clipped to the range."""
    from .switches import _least_distance  # the windows' solver; switches reads nothing of this module

    out = np.zeros(low.shape)
    width = low.shape[1]
    unscales = np.linalg.inv(np.linalg.cholesky(metric)).transpose(0, 2, 1)  # dx = unscale w
    for r, unscale in enumerate(unscales):
        asked = np.abs(g[r]).max(axis=1) > 0.0
        rows, asks = g[r][asked] @ unscale, need[r][asked]
        below, above = np.isfinite(low[r]), np.isfinite(high[r])
        count = len(rows)
        a = np.zeros((count + below.sum() + above.sum(), width + count))
        a[:count, :width], a[:count, width:] = rows, slack * np.eye(count)
        a[count:count + below.sum(), :width] = unscale[below]
        a[count + below.sum():, :width] = -unscale[above]
        b = np.concatenate([asks, low[r][below], -high[r][above]])
        try:
            u, _, _ = _least_distance(a, b, np.ones(len(b), dtype=bool))
        except RuntimeError:  # scipy's reference NNLS, where the active set did not settle, gave up too
            u = None
        if u is not None:
            out[r] = unscale @ u[:width]
        else:  # no answer (which the slack rules out) or NNLS gave up: the sweeps' answer
            out[r] = np.clip(dual_step(inverse[r:r + 1], g[r:r + 1], need[r:r + 1], sweeps)[0], low[r], high[r])
    return out


def _sweep_arrays(rows: np.ndarray, sweeps: int) -> np.ndarray:
    """Multipliers (K, R) of the rows (K, K + 1, R), frames on the last axis: one product and one
    clip per pair and sweep."""
    count, frames = rows.shape[0], rows.shape[2]
    lam = np.zeros((count + 1, frames))  # (K + 1, R)
    lam[count] = 1.0
    last, row = np.empty((count, frames)), np.empty(frames)
    # views made once: a sweep is 2K numpy calls on a few hundred numbers, so each call's own cost counts
    pairs, asks, multipliers = lam[:count], list(rows), list(lam[:count])
    for _ in range(sweeps):
        np.copyto(last, pairs)
        for ask, multiplier in zip(asks, multipliers):
            _einsum("jr,jr->r", ask, lam, out=row)
            np.maximum(row, 0.0, out=multiplier)
        np.subtract(pairs, last, out=last)
        if _largest(np.abs(last, out=last), axis=None, initial=0.0) < CONVERGED:
            break
    return pairs


def _sweep_floats(rows: np.ndarray, sweeps: int) -> np.ndarray:
    """_sweep_arrays on Python floats, frame by frame within each sweep: each row's sum taken in
    the order numpy's takes it over two or more frames (0 + a0 l0 + a1 l1 + ... + ask), so the
    same bits there. A frame whose sweep moved nothing is left out of the later sweeps (they
    would move nothing again)."""
    count = rows.shape[0]
    asks = rows.transpose(2, 0, 1).tolist()  # (R, K, K + 1)
    lam = [[0.0] * count for _ in asks]
    live = list(zip(asks, lam))
    sweep = _frame_sweep(count)
    for _ in range(sweeps):
        if not live:
            break
        changes = [sweep(frame, multipliers) for frame, multipliers in live]
        if max(changes) < CONVERGED:
            break
        # a sweep that moved a frame's multipliers not at all moves them no more: that frame is done
        live = [entry for entry, change in zip(live, changes) if change > 0.0]
    # laid out as the numpy sweeps' (contiguous rows): dx's einsum rounds by its operand's layout
    return np.ascontiguousarray(np.array(lam).T.reshape(count, len(asks)))


_SWEEPS: dict = {}  # pair count -> its frame sweep (_frame_sweep)


def _frame_sweep(count: int):
    """sweep(frame, multipliers) -> how far they moved: one sweep over a frame's `count` pairs (rows
    `frame`, K lists of K + 1), multipliers in place, each row's sum 0 + a0 l0 + ... + ask in that order.
    Written out for the pair count once (no loops: half the time of the loop over zip, the same
    sums in the same order, so the same bits; a step's sweeps are Python's overhead, not arithmetic)."""
    if count not in _SWEEPS:
        lines = ["def sweep(frame, multipliers):", "    change = 0.0"]
        for k in range(count):
            total = " + ".join(f"ask[{j}] * multipliers[{j}]" for j in range(count))
            lines += [f"    ask = frame[{k}]", f"    total = 0.0 + {total} + ask[{count}]",
                      "    new = total if total > 0.0 else 0.0", f"    moved = abs(new - multipliers[{k}])",
                      "    if moved > change:", "        change = moved", f"    multipliers[{k}] = new"]
        scope: dict = {}
        exec("\n".join(lines + ["    return change"]), scope)  # noqa: S102 - code built from integers only
        _SWEEPS[count] = scope["sweep"]
    return _SWEEPS[count]
