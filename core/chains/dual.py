"""The multipliers of a frame's few pair rows (core.chains.corrections' least change): projected
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
FLOAT_ENTRIES = 128  # up to this many frames x pairs the sweeps run on Python floats: a numpy sweep costs 2 calls a
#                     pair whatever the frames, a float sweep a pair's row a frame (the G1's dual calls, both paths
#                     timed: floats cheaper up to ~130 entries, numpy's from ~140; docs/history, session 27)


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
    """_sweep_arrays on Python floats, frame by frame: each row's sum taken in the order numpy's
    takes it over two or more frames (0 + a0 l0 + a1 l1 + ... + ask), so the same bits there. A frame
    whose sweep moved nothing is left out of the later sweeps (they would move nothing again).
    Each frame sweeps on its own up to the next sweep where it moved no multiplier by CONVERGED
    (_frame_sweeps); the sweeps stop where every frame still sweeping did, as the numpy sweeps do:
    frames behind that sweep go on to it, and no frame ever sweeps past it."""
    count = rows.shape[0]
    run = _frame_sweeps(count)
    frames = rows.transpose(2, 0, 1).tolist()  # (R, K, K + 1)
    state = [(0,) + (0.0,) * count for _ in frames]  # (sweeps done, multipliers...)
    dropped = [False] * len(frames)
    at = 1  # no sweep before this one moved every frame's multipliers by less than CONVERGED
    while True:
        for r, frame in enumerate(frames):
            if state[r][0] < at and not dropped[r]:
                state[r], dropped[r] = run(frame, state[r], at, sweeps, CONVERGED)
        reached = max([at] + [done[0] for done in state])
        if reached == at:  # every frame still sweeping there is settled: the numpy sweeps stop after it
            break
        at = reached
    lam = [done[1:] for done in state]
    # laid out as the numpy sweeps' (contiguous rows): dx's einsum rounds by its operand's layout
    return np.ascontiguousarray(np.array(lam, dtype=float).reshape(len(frames), count).T)


_SWEEPS: dict = {}  # pair count -> its frame's sweeps (_frame_sweeps)


def _frame_sweeps(count: int):
    """run(frame, state, at, sweeps, converged) -> (state, dropped): one frame's sweeps over its
    `count` pairs (rows `frame`, K lists of K + 1) from state (sweeps done, multipliers...) until a
    sweep from `at` on moves no multiplier by `converged`, one moves nothing (dropped) or `sweeps`
    are done. Each row's sum 0 + a0 l0 + ... + ask in that order, its own multiplier's term (a zero
    entry times a finite l >= 0: +0.0, which changes no sum that is not -0.0, and 0.0 + x never is)
    left out. Written out for the pair count once, rows and multipliers as local names: a step's
    sweeps are Python's overhead, not arithmetic (the same sums in the same order: the same bits)."""
    if count not in _SWEEPS:
        names = [[f"a{k}_{j}" for j in range(count + 1)] for k in range(count)]
        lam = "".join(f"l{k}, " for k in range(count))
        lines = ["def run(frame, state, at, sweeps, converged):",
                 "    " + "".join(f"({', '.join(row)},), " for row in names) + "= frame",
                 f"    done, {lam}= state",
                 "    while done < sweeps:", "        change = 0.0"]
        for k in range(count):
            total = "".join(f" + {names[k][j]} * l{j}" for j in range(count) if j != k)
            lines += [f"        total = 0.0{total} + {names[k][count]}",
                      "        new = total if total > 0.0 else 0.0", f"        moved = abs(new - l{k})",
                      "        if moved > change:", "            change = moved", f"        l{k} = new"]
        lines += ["        done += 1", "        if not change > 0.0:", f"            return (done, {lam}), True",
                  "        if change < converged and done >= at:", f"            return (done, {lam}), False",
                  f"    return (done, {lam}), False"]
        scope: dict = {}
        exec("\n".join(lines), scope)  # noqa: S102 - code built from integers only
        _SWEEPS[count] = scope["run"]
    return _SWEEPS[count]
