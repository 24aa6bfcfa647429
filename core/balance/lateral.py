"""The CoM path planned as one smooth path over the clip, inside what the legs can carry (issue 12).

The preview controller (core.balance.preview) gives the CoM path whose cart-table ZMP follows a
target, with no bound on where the CoM goes. Legs without an ankle roll (core.balance.sagittal)
move the CoM across only as far as the waist's roll leans it, a range that changes sample by
sample; a path outside that range is one the roll cannot follow. Here the path c (N, 2) minimises

    sum |p_k - target_k|^2 + jerk_weight sum |c'''_k|^2,    p = c - (z_c / g) c''

subject to each sample's ZMP p_k inside its support polygon shrunk by a margin, and the CoM's
component across the waist's heading inside [lo_k, hi_k]; with the squares replaced by absolute
values it is a sparse linear programme (banded differences), and each constraint gets an excess
that costs much more than any error, so where they cannot all be met the plan says where and by
how much.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np
from scipy import sparse
from scipy.optimize import linprog
from scipy.sparse.csgraph import connected_components

from .banded_lp import minimise
from .inertia import GRAVITY

logger = logging.getLogger(__name__)

EXCESS_WEIGHT = 100.0  # a metre past a constraint costs as much as this many metres of ZMP error
SLACK_M = 1e-4  # a constraint counts as missed beyond this
# plan_path's solver: "interior" (banded_lp's interior point; HiGHS where it does not converge) or "highs"
# (cutting-plane dual simplex). The same optimum to 3e-7 of its cost, 11-48x faster (H1 walk 0.07 against 0.84 s,
# 10 s clip 0.08 against 0.94 s, held on one foot 0.08 against 3.8 s; session 22). Where the optimum is flat (the 10
# s clip's: 1,647 kinked rows for 1,648 unknowns) it stops inside the optimal face, 5e-5 m from HiGHS's vertex: another
# draw of the H1's chaotic gait, which bench/h1_cut_check.py judges (session 23: the default gait's cases all hold)
SOLVER = "interior"
INTERIOR_MAX_ITER = 80  # banded_lp.minimise's cap (the H1's programmes take 32-43)
# plan_path calls whose interior point did not converge and were planned by HiGHS instead (a debug counter: the plan
# is HiGHS's, so nothing the user sees changes)
fallbacks = 0


@dataclass
class Constraints:
    """Linear inequalities rows . z <= bound on the stacked path z = (c_x, c_y) (2N,)."""

    rows: sparse.csr_matrix
    bound: np.ndarray


@dataclass
class PlannedPath:
    com: np.ndarray  # (N, 2) metres
    zmp: np.ndarray  # (N, 2) its cart-table ZMP
    violation_m: float  # the furthest a constraint is missed (0: all met together)
    missed: int  # how many constraints are missed


def differences(n: int, order: int) -> sparse.csr_matrix:
    """The (n - order, n) forward difference of the given order."""
    d = sparse.identity(n, format="csr")
    for _ in range(order):
        d = d[1:] - d[:-1]
    return d.tocsr()


def zmp_operator(n: int, period_s: float, com_height_m: float | np.ndarray) -> sparse.csr_matrix:
    """p = c - z c'' / (g + z'') on n samples (central second difference; the ends held still), the
    CoM's height z (metres, one or (n,)) known: its vertical acceleration scales the ground's push."""
    z = np.broadcast_to(np.asarray(com_height_m, dtype=float), (n,))
    lift = np.zeros(n)
    lift[1:-1] = np.diff(z, 2) / period_s ** 2
    scale = z / (GRAVITY + lift) / period_s ** 2
    second = sparse.diags([np.r_[scale[1:-1], 0.0], np.r_[0.0, -2.0 * scale[1:-1], 0.0], np.r_[0.0, scale[1:-1]]],
                          [-1, 0, 1], shape=(n, n))
    return (sparse.identity(n) - second).tocsr()


def support_constraints(polygons: list[np.ndarray | None], op: sparse.csr_matrix, margin_m: float,
                        width_share: float | None = None) -> Constraints:
    """Each sample's cart-table ZMP (op @ c per axis) inside its counter-clockwise polygon (M, 2),
    shrunk by margin_m (a segment or a point: within margin_m of it is not asked; skipped); with
    width_share, by no more than that share of half the polygon's narrowest width. A sole as narrow
    as twice the margin (the H1's 30 mm at 15 mm) otherwise shrinks to a line, on the brink of
    feasible (rows met to 1e-6 m or missed by it as rounding has it), and the programme's answer
    jumps between its equal optima there: the H1 walk's CoM 1.6 mm, its ZMP 9.7 mm apart from a
    float32 start; 1.3e-6 m with 0.9 (bench/h1_sensitivity.py --stages)."""
    entries, bounds = [], []
    shrunk: dict[int, tuple[np.ndarray, np.ndarray]] = {}  # by polygon: the samples share a few (the H1 10 s clip 23 of 828)
    for k, poly in enumerate(polygons):
        if poly is None or len(poly) < 3:
            continue
        if id(poly) not in shrunk:  # the list holds every polygon: an id is one polygon's throughout
            shrunk[id(poly)] = shrunk_edges(poly, margin_m, width_share)
        normal, bound = shrunk[id(poly)]
        entries.append((k, normal))
        bounds.append(bound)
    if not entries:
        return Constraints(sparse.csr_matrix((0, 2 * op.shape[0])), np.zeros(0))
    return Constraints(_edge_rows(op.tocsr(), entries), np.concatenate(bounds))


def shrunk_edges(poly: np.ndarray, margin_m: float, width_share: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """A counter-clockwise polygon (M, 2) shrunk as support_constraints shrinks it: its edges' unit
    outward normals (E, 2) and bounds (E,), a point p inside where normals @ p <= bounds."""
    edge = np.roll(poly, -1, axis=0) - poly
    normal = np.column_stack([edge[:, 1], -edge[:, 0]])  # outward for a counter-clockwise hull
    length = np.linalg.norm(normal, axis=1)
    keep = length > 1e-9
    normal, start = normal[keep] / length[keep, None], poly[keep]
    reach = np.einsum("ij,ij->i", normal, start)
    shrink = margin_m
    if width_share is not None:  # the narrowest extent across an edge (a convex polygon's width)
        shrink = min(margin_m, width_share * float((reach - (poly @ normal.T).min(axis=0)).min()) / 2.0)
    return normal, reach - shrink


def _edge_rows(op: sparse.csr_matrix, entries: list[tuple[int, np.ndarray]]) -> sparse.csr_matrix:
    """One row per polygon edge: its outward normal (nx, ny) times sample k's row of op, on the
    stacked path (c_x, c_y) (2N,). Gathered at once, not a sparse product per sample (3 s of the H1
    walk's plan); the entries are the same products, zeros dropped as a sparse product drops them."""
    samples = np.concatenate([np.full(len(normal), k) for k, normal in entries])
    normals = np.concatenate([normal for _, normal in entries])
    start = op.indptr[samples]
    counts = op.indptr[samples + 1] - start
    edge = np.repeat(np.arange(len(samples)), counts)
    at = np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts) + np.repeat(start, counts)
    columns, values = op.indices[at], op.data[at]
    n = op.shape[1]
    out = sparse.csr_matrix((np.r_[normals[edge, 0] * values, normals[edge, 1] * values],
                             (np.r_[edge, edge], np.r_[columns, columns + n])), shape=(len(samples), 2 * n))
    out.eliminate_zeros()
    return out


def band_constraints(across: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> Constraints:
    """lo_k <= across_k . c_k <= hi_k (across (N, 2) unit; an infinite bound is not asked)."""
    rows = sparse.hstack([sparse.diags(across[:, 0]), sparse.diags(across[:, 1])]).tocsr()
    upper, lower = np.isfinite(hi), np.isfinite(lo)
    return Constraints(sparse.vstack([rows[upper], -rows[lower]]).tocsr(), np.r_[hi[upper], -lo[lower]])


def plan_path(target: np.ndarray, period_s: float, com_height_m: float | np.ndarray, jerk_weight: float,
              constraints: list[Constraints], order: int = 3, excess_weight: float = EXCESS_WEIGHT) -> PlannedPath:
    """The CoM path (N, 2) whose cart-table ZMP follows target (N, 2) with little jerk, meeting
    every constraint as far as they can be met together (module docstring). A linear programme
    (banded_lp's interior point, HiGHS where it does not converge, or HiGHS alone: SOLVER): the ZMP's
    error, the jerk and each constraint's excess weighed by their absolute values, the excess
    excess_weight times a metre of ZMP error. The path starts and ends still.
    order: the derivative weighed instead of the jerk (3); 4, the snap, keeps the CoM's
    acceleration and so the ZMP continuous (absolute values of the jerk let the ZMP jump)."""
    n = len(target)
    op = zmp_operator(n, period_s, com_height_m)
    jerk = jerk_weight * differences(n, order) / period_s ** order
    rows = sparse.vstack([c.rows for c in constraints]).tocsr()
    bound = np.concatenate([c.bound for c in constraints])
    z = _solve_interior(target, op, jerk, rows, bound, excess_weight) if SOLVER == "interior" and n > 8 else None
    if z is None:
        z, excess = _solve_highs(target, op, jerk, rows, bound, excess_weight)
    else:
        excess = np.maximum(rows @ z - bound, 0.0)
    com = z.reshape(2, n).T
    return PlannedPath(com, np.column_stack([op @ com[:, 0], op @ com[:, 1]]), float(excess.max(initial=0.0)),
                       int(np.sum(excess > SLACK_M)))


def _solve_interior(target: np.ndarray, op: sparse.csr_matrix, jerk: sparse.csr_matrix, rows: sparse.csr_matrix,
                    bound: np.ndarray, excess_weight: float) -> np.ndarray | None:
    """plan_path's path z (2N,) by the banded interior point, or None where it did not converge (its
    iteration cap, a non-finite iterate, a Newton matrix it could not factor short of the optimum): the
    caller plans by HiGHS, counted in `fallbacks`."""
    global fallbacks
    g, h, lo, hi, interleave = interior_programme(target, op, jerk, rows, bound, excess_weight)
    out = minimise(g, h, lo, hi, max_iter=INTERIOR_MAX_ITER)
    if not out.converged:
        fallbacks += 1
        logger.debug("lateral plan: the interior point stopped (%s, relative gap %.1e after %d iterations); HiGHS "
                     "plans it", out.stop, out.gap, out.iterations)
        return None
    return interleave @ out.y


def _both_axes(m: sparse.spmatrix) -> sparse.csr_matrix:
    """The same operator on x and y of the stacked path (c_x, c_y)."""
    return sparse.block_diag([m, m]).tocsr()


def interior_programme(target: np.ndarray, op: sparse.csr_matrix, jerk: sparse.csr_matrix, rows: sparse.csr_matrix,
                       bound: np.ndarray, excess_weight: float) -> tuple:
    """plan_path's programme as banded_lp.minimise takes it: (g, h, lo, hi, interleave), the path z (2N,) =
    interleave @ y. The ends held still by construction (the first three samples one unknown, the last three
    another), x and y interleaved per sample so that every row (ZMP, snap, support, band) touches
    neighbouring unknowns only; the ZMP's error and the snap weighed by their absolute values, each
    constraint row by its excess."""
    n = len(target)
    held = np.clip(np.arange(n) - 2, 0, n - 5)  # sample -> its unknown
    interleave = sparse.csr_matrix((np.ones(2 * n), (np.arange(2 * n), np.r_[2 * held, 2 * held + 1])),
                                   shape=(2 * n, 2 * (n - 4)))
    g = sparse.vstack([_both_axes(op) @ interleave, _both_axes(jerk) @ interleave, rows @ interleave]).tocsr()
    g.eliminate_zeros()
    free = 2 * n + 2 * jerk.shape[0]  # rows weighed by their absolute value; the rest by their excess
    h = np.r_[target[:, 0], target[:, 1], np.zeros(2 * jerk.shape[0]), bound]
    lo = np.r_[-np.ones(free), np.zeros(len(bound))]
    hi = np.r_[np.ones(free), np.full(len(bound), excess_weight)]
    return g, h, lo, hi, interleave


def _solve_highs(target: np.ndarray, op: sparse.csr_matrix, jerk: sparse.csr_matrix, rows: sparse.csr_matrix,
                 bound: np.ndarray, excess_weight: float) -> tuple[np.ndarray, np.ndarray]:
    """plan_path's programme by HiGHS (cutting planes, else every row at once): (path z (2N,), excess (m,))."""
    n = len(target)
    zmp, jerks = _both_axes(op), _both_axes(jerk)
    nz, nj = 2 * n, jerks.shape[0]
    # variables: z (path), r+ r- (zmp - target = r+ - r-), j+ j- (jerk = j+ - j-), and with each constraint row
    # its excess e >= 0 (_solve_whole, _solve_cutting):
    # each absolute value as an equality of two parts, not two inequalities, which halves HiGHS's time
    # (the H1 walk's plan: 3.3 s against 6.9 s, the same path to 2e-9 m)
    eye = lambda k: sparse.identity(k, format="csr")  # noqa: E731
    zero = lambda r, c: sparse.csr_matrix((r, c))  # noqa: E731
    goal = np.r_[target[:, 0], target[:, 1]]
    still = sparse.vstack([differences(n, 1)[:2], differences(n, 1)[-2:]])
    equal = sparse.vstack([
        sparse.hstack([zmp, -eye(nz), eye(nz), zero(nz, 2 * nj)]),
        sparse.hstack([jerks, zero(nj, 2 * nz), -eye(nj), eye(nj)]),
        sparse.hstack([_both_axes(still), zero(2 * still.shape[0], 2 * nz + 2 * nj)])]).tocsc()
    equal_bound = np.r_[goal, np.zeros(nj + 2 * still.shape[0])]
    cost = np.r_[np.zeros(nz), np.ones(2 * nz + 2 * nj)]
    solved = _solve_cutting(cost, equal, equal_bound, nz, rows, bound, excess_weight)
    if solved is None:
        solved = _solve_whole(cost, equal, equal_bound, nz, rows, bound, excess_weight)
    return solved


def _solve_whole(cost: np.ndarray, equal: sparse.csc_matrix, equal_bound: np.ndarray, nz: int,
                 rows: sparse.csr_matrix, bound: np.ndarray, excess_weight: float) -> tuple[np.ndarray, np.ndarray]:
    """plan_path's programme with every constraint row at once (linprog): (path z (nz,), excess (m,))."""
    m, width = len(bound), equal.shape[1]
    equal = sparse.hstack([equal, sparse.csr_matrix((equal.shape[0], m))]).tocsc()
    upper = sparse.hstack([rows, sparse.csr_matrix((m, width - nz)), -sparse.identity(m)]).tocsc()
    bounds = [(None, None)] * nz + [(0, None)] * (width - nz + m)
    out = linprog(np.r_[cost, np.full(m, excess_weight)], A_ub=upper, b_ub=bound, A_eq=equal, b_eq=equal_bound,
                  bounds=bounds, method="highs")
    if out.x is None:
        raise ValueError(f"lateral path: {out.message}")
    return out.x[:nz], out.x[width:]


def _solve_cutting(cost: np.ndarray, equal: sparse.csc_matrix, equal_bound: np.ndarray, nz: int,
                   rows: sparse.csr_matrix, bound: np.ndarray, excess_weight: float
                   ) -> tuple[np.ndarray, np.ndarray] | None:
    """The same programme with its constraint rows added as they bind: solved without them, then
    each round the rows the path breaks or comes within CUT_NEAR_M of (each with its excess) are
    added and HiGHS's dual simplex goes on from the basis it has, until the path breaks none. Of the
    H1 walk's 6,181 rows 198 bind. Against the whole programme (session 14, one BLAS thread): the walk
    1.3 against 2.4-3.0 s, the 10 s clip 2.2-2.4 against 4.0-4.4 s, the paths within 7e-9 / 6e-9 m (the
    tolerance its optimum is flat to); held 2.4 s on one foot (its plan infeasible: each round's path
    breaks hundreds of other rows, CUT_SLOW_SHARE) 5.6-6.0 against 4.5-4.7 s. None where HiGHS's own
    interface is not there (scipy's private module) or a round does not end optimal (HiGHS gave up
    at once on the rows of soles moved by 1e-7 m, tests/core/test_lateral.py): the caller solves the
    whole programme."""
    try:
        from scipy.optimize._highspy import _core as highs
    except ImportError:  # pragma: no cover - another scipy than the pinned one
        return None
    free = np.arange(equal.shape[1]) < nz  # the path; the other columns (parts of absolute values) >= 0
    solver = _equalities(highs, cost, equal, equal_bound, free)
    start = _block_basis(highs, cost, equal, equal_bound, free)
    if start is not None:
        solver.setBasis(start)
    path = rows.tocsr()  # on the path z alone
    added = np.zeros(len(bound), dtype=bool)
    order = np.zeros(0, dtype=int)  # the rows added, in the order of their excess columns
    rounds, last = 0, np.inf
    while True:
        if solver.run() == highs.HighsStatus.kError or solver.getModelStatus() != highs.HighsModelStatus.kOptimal:
            return None  # e.g. "Not Set" from a warm basis on rows of nearly parallel edges: the whole programme
        value = np.array(solver.getSolution().col_value)
        z = value[:nz]
        slack = bound - path @ z
        broken = int((~added & (slack < -CUT_TOL_M)).sum())
        if not broken:  # the path breaks no row left out: the whole programme's optimum
            excess = np.maximum(-slack, 0.0)
            excess[order] = value[equal.shape[1]:]
            return z, excess
        # every row left at once where the rows come slowly (each round's path breaking more than half as many
        # as the one before) or after CUT_ROUNDS: the whole programme, from the basis it has
        rounds, slow, last = rounds + 1, broken > CUT_SLOW_SHARE * last, broken
        new = np.flatnonzero(~added & ((slack < CUT_NEAR_M) | slow | (rounds >= CUT_ROUNDS)))
        columns, count = solver.getNumCol(), len(new)
        solver.addCols(count, np.full(count, excess_weight), np.zeros(count), np.full(count, np.inf), 0,
                       np.zeros(count, dtype=np.int32), np.zeros(0, dtype=np.int32), np.zeros(0))
        block = sparse.hstack([path[new], sparse.csr_matrix((count, columns - nz)), -sparse.identity(count)]).tocsr()
        solver.addRows(count, np.full(count, -np.inf), bound[new], block.nnz, block.indptr[:-1].astype(np.int32),
                       block.indices.astype(np.int32), block.data)
        added[new] = True
        order = np.r_[order, new]


def _equalities(highs, cost: np.ndarray, equal: sparse.csc_matrix, equal_bound: np.ndarray, free: np.ndarray):
    """A HiGHS solver holding min cost.x subject to equal x = equal_bound, x free where free else >= 0."""
    solver = highs._Highs()
    solver.setOptionValue("output_flag", False)
    # HiGHS's own scaling stopped one H1 walk's first solve at once ("Not Set"); unscaled, none of four plans did
    solver.setOptionValue("simplex_scale_strategy", 0)
    # Devex pricing, not dual steepest edge: cheaper iterations, about as many (session 15, one BLAS thread: the
    # H1 walk's plan 1.2 against 1.6 s, the 10 s clip's 1.9 against 2.9 s, held on one foot 5.5 against 7.1 s;
    # the paths within 4e-8 m, the tolerance the optimum is flat to)
    solver.setOptionValue("simplex_dual_edge_weight_strategy", 1)
    equal = equal.tocsc()
    lp = highs.HighsLp()
    lp.num_col_, lp.num_row_ = equal.shape[1], equal.shape[0]
    lp.a_matrix_.num_col_, lp.a_matrix_.num_row_ = equal.shape[1], equal.shape[0]
    lp.a_matrix_.format_ = highs.MatrixFormat.kColwise
    lp.a_matrix_.start_, lp.a_matrix_.index_, lp.a_matrix_.value_ = equal.indptr, equal.indices, equal.data
    lp.col_cost_ = cost
    lp.col_lower_ = np.where(free, -np.inf, 0.0)
    lp.col_upper_ = np.full(equal.shape[1], np.inf)
    lp.row_lower_ = lp.row_upper_ = equal_bound
    solver.passModel(lp)
    return solver


def _block_basis(highs, cost: np.ndarray, equal: sparse.csc_matrix, equal_bound: np.ndarray, free: np.ndarray):
    """The optimal basis of the programme without its constraint rows, solved block by block where its
    equalities fall apart (the path across x and along y: two programmes of half the size, each about half
    the iterations of the whole and each iteration cheaper; the H1 10 s clip's first solve 0.25 against
    0.40 s, the same optimum), or None with one block or where a block does not end optimal."""
    m, n = equal.shape
    count, label = connected_components(sparse.bmat([[None, equal], [equal.T, None]]).tocsr(), directed=False)
    if count < 2:
        return None
    cols, rows = [None] * n, [None] * m
    for block in range(count):
        r, c = np.flatnonzero(label[:m] == block), np.flatnonzero(label[m:] == block)
        part = _equalities(highs, cost[c], equal[r][:, c], equal_bound[r], free[c])
        if part.run() == highs.HighsStatus.kError or part.getModelStatus() != highs.HighsModelStatus.kOptimal:
            return None
        basis = part.getBasis()
        for index, status in zip(c, list(basis.col_status)):
            cols[index] = status
        for index, status in zip(r, list(basis.row_status)):
            rows[index] = status
    start = highs.HighsBasis()
    start.col_status, start.row_status, start.valid = cols, rows, True
    return start


CUT_NEAR_M = 0.002  # rows the path comes this near are added with those it breaks (fewer rounds)
CUT_ROUNDS = 4  # rounds of rows added before the rest all at once (the H1 walk needs four)
CUT_SLOW_SHARE = 0.5  # a round whose path breaks more than this share of the rows the one before broke adds the rest
CUT_TOL_M = 1e-9  # a row the path breaks by less than this is met (HiGHS's own tolerance is 1e-7)
