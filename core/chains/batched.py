"""Small symmetric positive definite systems, many at once: a Cholesky factorisation written
over the frames axis.

numpy's batched solve and inverse run LAPACK once per matrix; for thousands of 6x6 or 7x7
systems (one per frame of a Levenberg-Marquardt or least-change step) that per-matrix cost is
most of the step (700 7x7 systems: 5.5 ms by np.linalg.solve, 0.6 ms here). The factorisation
loops over the matrix's few columns instead, each column one vectorised operation over frames;
below about 30 systems that loop's fixed cost is the larger, and numpy's solve does them.
"""
from __future__ import annotations

import numpy as np

PIVOT_FLOOR = 1e-13  # a pivot at or below this share of its diagonal: not positive definite
SMALL_BATCH = 32  # fewer systems than this: numpy's per-matrix solve is faster than the column loop's ~40 calls


def spd_solve(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """x (R, n) or (R, n, k) with a x = b for symmetric positive definite a (R, n, n).

    Rows whose matrix turns out not positive definite (a pivot at or below PIVOT_FLOOR of its
    diagonal) are solved by np.linalg.solve instead, so the answer never depends on the path.
    A vector b goes to numpy's per-matrix solve below LAST_SMALL_BATCH systems (10 x faster than
    the column loop at 40-120 6x6 systems with numpy 1.26) and to spd_solve_last above."""
    vector = b.ndim == 2
    if vector:  # frames last: one operation over contiguous rows per step (0.3-0.5 x the loop below)
        if len(a) < LAST_SMALL_BATCH:
            return np.linalg.solve(a, b[..., None])[..., 0]
        return spd_solve_last(np.ascontiguousarray(a.transpose(1, 2, 0)), np.ascontiguousarray(b.T)).T
    rhs = b
    if len(a) < SMALL_BATCH:
        return np.linalg.solve(a, rhs)
    n = a.shape[-1]
    low = np.zeros(a.shape)
    bad = np.zeros(len(a), dtype=bool)
    for j in range(n):
        pivot = a[:, j, j] - np.einsum("rk,rk->r", low[:, j, :j], low[:, j, :j])
        bad |= ~(pivot > PIVOT_FLOOR * np.abs(a[:, j, j]))
        low[:, j, j] = np.sqrt(np.where(bad, 1.0, pivot))
        if j + 1 < n:
            low[:, j + 1:, j] = (a[:, j + 1:, j] - np.einsum("rik,rk->ri", low[:, j + 1:, :j], low[:, j, :j])) \
                / low[:, j, j, None]
    y = np.zeros(rhs.shape)
    for i in range(n):  # forward: low y = b
        y[:, i] = (rhs[:, i] - np.einsum("rk,rkc->rc", low[:, i, :i], y[:, :i])) / low[:, i, i, None]
    x = np.zeros(rhs.shape)
    for i in range(n - 1, -1, -1):  # back: low' x = y
        x[:, i] = (y[:, i] - np.einsum("rk,rkc->rc", low[:, i + 1:, i], x[:, i + 1:])) / low[:, i, i, None]
    if bad.any():
        x[bad] = np.linalg.solve(a[bad], rhs[bad])
    return x


def spd_inverse(a: np.ndarray) -> np.ndarray:
    """Inverses (R, n, n) of symmetric positive definite a (R, n, n), for systems solved many times."""
    return spd_solve(a, np.broadcast_to(np.eye(a.shape[-1]), a.shape))


def spd_solve_last(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """x (n, F) with a x = b for symmetric positive definite a (n, n, F), b (n, F): the systems
    frames last, each step of the factorisation one operation over contiguous rows of F numbers
    (4,000 6x6 systems: 0.35 ms against np.linalg.solve's 2.2 ms). Below LAST_SMALL_BATCH systems
    numpy's per-matrix solve is the faster, and rows whose pivot falls at or below PIVOT_FLOOR of
    its diagonal are solved by it too (as spd_solve)."""
    n, count = len(b), b.shape[1]
    if count < LAST_SMALL_BATCH:
        return np.linalg.solve(a.transpose(2, 0, 1), b.T[..., None])[..., 0].T
    low: list[list] = [[None] * n for _ in range(n)]
    inverse = [None] * n
    bad = np.zeros(count, dtype=bool)
    for c in range(n):
        for i in range(c, n):
            s = a[i, c]
            for k in range(c):
                s = s - low[i][k] * low[c][k]
            if i == c:
                bad |= ~(s > PIVOT_FLOOR * np.abs(a[c, c]))
                inverse[c] = 1.0 / np.sqrt(np.where(bad, 1.0, s))
            else:
                low[i][c] = s * inverse[c]
    y = [None] * n
    for i in range(n):  # forward: low y = b
        s = b[i]
        for k in range(i):
            s = s - low[i][k] * y[k]
        y[i] = s * inverse[i]
    x = np.empty(b.shape)
    for i in range(n - 1, -1, -1):  # back: low' x = y
        s = y[i]
        for k in range(i + 1, n):
            s = s - low[k][i] * x[k]
        x[i] = s * inverse[i]
    if bad.any():
        x[:, bad] = np.linalg.solve(a[:, :, bad].transpose(2, 0, 1), b[:, bad].T[..., None])[..., 0].T
    return x


LAST_SMALL_BATCH = 256  # fewer systems than this: numpy's per-matrix solve beats spd_solve_last's ~100 operations
