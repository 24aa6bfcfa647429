"""A sum of piecewise-linear penalties minimised by a primal-dual interior point whose Newton systems are banded.

    minimise over y   sum_i max(lo_i r_i, hi_i r_i),   r = G y - h,   lo_i <= 0 <= hi_i

(|r| weighed w: lo = -w, hi = w; an excess weighed w: lo = 0, hi = w). Its dual is a linear programme
in u with box bounds, G^T u = 0, lo <= u <= hi, solved by Mehrotra's predictor-corrector (as Koenker and
Portnoy's Frisch-Newton for quantile regression); y comes out as that programme's multipliers. Each
Newton step solves G^T diag(theta) G dy = rhs, which is banded when each row of G touches a few
neighbouring columns: the lateral plan's CoM path with x and y interleaved per sample (its ZMP operator,
snap and support rows reach two samples either way) has half-bandwidth 8 over 1,648 unknowns, so a step
is a banded Cholesky (O(n band^2)) instead of a simplex's thousands of pivots (core.balance.lateral).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import sparse
from scipy.linalg import cho_solve_banded, cholesky_banded

REFINE = 3  # iterative refinement of each Newton solve (the H1 walk's path 3.4e-6 -> 1.5e-8 m of HiGHS's vertex)
STEP_SHARE = 0.99995  # of the longest step keeping the iterate interior
GAP_TOL = 1e-10  # the complementarity gap, relative to the objective, at which it stops
# iterations without a better objective (past rounding) nor a smaller gap after which it stops: at the optimum the
# objective is flat to rounding while the gap still closes (the iterate slides along the optimal face), and a
# Newton direction spoilt by round-off (the weights 1e-11..1e14 apart) may collapse the steps for a round or two
STALL_ROUNDS = 3
RIDGE = 1e-12  # added to the Newton matrix's diagonal (relative) where the Cholesky meets a non-positive pivot
# a stop short of GAP_TOL (a stall, or the Cholesky failing at the end, where the weights spread 1e-18-1e22) still
# counts as the optimum within this relative gap; the H1's programmes all end at GAP_TOL (1.7e-10 to 3.1e-9, 32-43
# iterations, session 23), 20 iterations leave 6e-3 to 4e-2
ACCEPT_GAP = 1e-8


@dataclass
class Minimised:
    y: np.ndarray  # the minimiser (n,)
    u: np.ndarray  # each row's multiplier (m,), in [lo, hi]: the dual, g^T u = 0 at the optimum
    objective: float
    iterations: int
    stop: str = "gap"  # why it stopped: "gap", "stall", "singular" (Cholesky), "iterations" (max_iter), "non-finite"
    gap: float = 0.0  # the best iterate's complementarity gap relative to 1 + |objective|

    @property
    def converged(self) -> bool:
        """Whether y is the optimum: the gap closed (y, the least objective met, is no costlier than the iterate
        that closed it), or the solve stopped within ACCEPT_GAP of it with finite iterates (not at its iteration
        cap, nor on a Newton matrix it could not factor far from the end)."""
        return self.stop == "gap" or (self.stop in ("stall", "singular") and self.gap < ACCEPT_GAP)


def band_assembly(g: sparse.csr_matrix) -> tuple[sparse.csr_matrix, int]:
    """(S, u): S @ theta is the lower band (u + 1, n), LAPACK's layout, of G^T diag(theta) G; u the
    half-bandwidth (the widest row's span). Built once: each iteration's Newton matrix is one product."""
    g = g.tocsr()
    g.sort_indices()
    m, n = g.shape
    counts = np.diff(g.indptr)
    first = g.indices[g.indptr[:-1]]
    u = int((g.indices[g.indptr[1:] - 1] - first).max())
    window = np.zeros((m, u + 1))  # each row's entries from its first column on
    row = np.repeat(np.arange(m), counts)
    window[row, g.indices - first[row]] = g.data
    at, rows, values = [], [], []
    for p in range(u + 1):
        for q in range(p, u + 1):
            v = window[:, p] * window[:, q]
            keep = np.flatnonzero(v)
            at.append((q - p) * n + first[keep] + p)
            rows.append(keep)
            values.append(v[keep])
    s = sparse.csr_matrix((np.concatenate(values), (np.concatenate(at), np.concatenate(rows))), shape=((u + 1) * n, m))
    return s, u


def minimise(g: sparse.csr_matrix, h: np.ndarray, lo: np.ndarray, hi: np.ndarray, square: np.ndarray | None = None,
             max_iter: int = 80) -> Minimised:
    """The y minimising sum_i max(lo_i r_i, hi_i r_i) + sum_i square_i r_i^2 / 2 (square: none unless given),
    r = g y - h (module docstring); every row's box lo_i < hi_i (a row weighed by its square alone takes a tiny
    box: the barrier needs room). The iterate with the least objective is returned: it stops at GAP_TOL, after
    STALL_ROUNDS with neither a better objective nor a smaller gap, where the Newton matrix has lost its positive
    definiteness even with RIDGE (the optimal face's rows, weights 1e-18-1e22 apart), at a non-finite iterate or
    after max_iter; which of these, and the returned iterate's gap, say whether it is the optimum
    (Minimised.converged)."""
    g = g.tocsr()
    gt = g.T.tocsr()
    m, n = g.shape
    band, u = band_assembly(g)
    cap = hi - lo
    square = np.zeros(m) if square is None else square

    def objective(y: np.ndarray) -> float:
        r = g @ y - h
        return float(np.sum(np.maximum(lo * r, hi * r)) + 0.5 * square @ (r * r))

    y, x, s, z, w = _start(g, gt, band, u, h, cap)
    b = -(gt @ lo)
    best, best_f, since, iterations, dual = y, objective(y), 0, 0, x + lo
    best_gap, stop = float(x @ z + s @ w), "iterations"
    least_gap = best_gap
    for iterations in range(1, max_iter + 1):
        r = g @ y - h
        rp, rd = b - gt @ (x + square * r), -r - z + w
        gap = x @ z + s @ w
        theta = 1.0 / (z / x + w / s)
        factor = _factor((band @ (theta + square)).reshape(u + 1, n))
        if factor is None:
            stop = "singular"
            break
        dx, dy, dz, dw, ap, ad = _mehrotra(factor, g, gt, theta, square, rp, rd, x, s, z, w, gap)
        x, s = x + ap * dx, s - ap * dx
        y, z, w = y + ad * dy, z + ad * dz, w + ad * dw
        f = objective(y)
        if not np.isfinite(f):
            stop = "non-finite"
            break
        gap = float(x @ z + s @ w)
        if f < best_f - 1e-13 * abs(best_f):
            best, best_f, since, dual, best_gap = y, f, 0, x + lo, gap
        else:
            since = 0 if gap < least_gap else since + 1
        least_gap = min(least_gap, gap)
        if gap < GAP_TOL * (1.0 + abs(best_f)):
            stop = "gap"
            break
        if since >= STALL_ROUNDS:
            stop = "stall"
            break
    return Minimised(best, dual, best_f, iterations, stop, best_gap / (1.0 + abs(best_f)))


def _start(g: sparse.csr_matrix, gt: sparse.csr_matrix, band: sparse.csr_matrix, u: int, h: np.ndarray,
           cap: np.ndarray) -> tuple:
    """(y, x, s, z, w) the interior point starts from: y on the least-squares path (none where g^T g is too
    ill-conditioned to factor), u at the middle of its box (x = u - lo, s = hi - u), z and w from y's residuals."""
    m, n = g.shape
    factor = _factor((band @ np.ones(m)).reshape(u + 1, n))
    y = np.zeros(n) if factor is None else cho_solve_banded((factor, True), gt @ h, check_finite=False)
    x = cap / 2.0
    s = cap - x
    r = g @ y - h
    spread = max(float(np.abs(r).max()), 1e-12)
    z, w = np.maximum(-r, 0.0) + 0.1 * spread, np.maximum(r, 0.0) + 0.1 * spread
    return y, x, s, z, w


def _mehrotra(factor: np.ndarray, g: sparse.csr_matrix, gt: sparse.csr_matrix, theta: np.ndarray,
              square: np.ndarray, rp: np.ndarray, rd: np.ndarray, x: np.ndarray, s: np.ndarray, z: np.ndarray,
              w: np.ndarray, gap: float) -> tuple:
    """(dx, dy, dz, dw, primal step, dual step): Mehrotra's predictor-corrector, the affine-scaling direction
    first, then the centred and corrected one (its centring from how far the affine step closes the gap)."""
    def solve(rxz, rsw):
        return _direction(factor, g, gt, theta, theta + square, rp, rd, x, s, z, w, rxz, rsw)

    dx, dy, dz, dw = solve(-x * z, -s * w)  # affine scaling
    ap, ad = min(1.0, _longest(x, dx, s, -dx)), min(1.0, _longest(z, dz, w, dw))
    mu_aff = (x + ap * dx) @ (z + ad * dz) + (s - ap * dx) @ (w + ad * dw)
    mu = (mu_aff / gap) ** 3 * gap / (2 * len(x))
    dx, dy, dz, dw = solve(mu - x * z - dx * dz, mu - s * w + dx * dw)  # centred and corrected
    ap = min(1.0, STEP_SHARE * _longest(x, dx, s, -dx))
    ad = min(1.0, STEP_SHARE * _longest(z, dz, w, dw))
    return dx, dy, dz, dw, ap, ad


def _factor(ab: np.ndarray) -> np.ndarray | None:
    """The banded Cholesky factor of ab, with RIDGE on its diagonal where it has lost definiteness."""
    for ridge in (0.0, RIDGE):
        if ridge:
            ab[0] *= 1.0 + ridge
        try:
            return cholesky_banded(ab, lower=True, check_finite=False)
        except np.linalg.LinAlgError:
            continue
    return None


def _direction(factor: np.ndarray, g: sparse.csr_matrix, gt: sparse.csr_matrix, theta: np.ndarray, weight: np.ndarray,
               rp: np.ndarray, rd: np.ndarray, x: np.ndarray, s: np.ndarray, z: np.ndarray, w: np.ndarray,
               rxz: np.ndarray, rsw: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The Newton step (dx, dy, dz, dw) for complementarity right-hand sides rxz (x z) and rsw (s w), the
    Newton matrix g^T diag(weight) g factored, its solve refined REFINE times against the matrix itself."""
    t = theta * (rd - rxz / x + rsw / s)
    rhs = rp + gt @ t
    dy = cho_solve_banded((factor, True), rhs, check_finite=False)
    for _ in range(REFINE):
        dy += cho_solve_banded((factor, True), rhs - gt @ (weight * (g @ dy)), check_finite=False)
    dx = theta * (g @ dy) - t
    return dx, dy, (rxz - z * dx) / x, (rsw + w * dx) / s


def _longest(a: np.ndarray, da: np.ndarray, b: np.ndarray, db: np.ndarray) -> float:
    """The longest step (at most 1 / STEP_SHARE) keeping a + t da and b + t db non-negative."""
    out = 1.0 / STEP_SHARE
    for v, dv in ((a, da), (b, db)):
        neg = dv < 0
        if neg.any():
            out = min(out, float(np.min(-v[neg] / dv[neg])))
    return out
