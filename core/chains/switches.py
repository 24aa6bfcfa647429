"""Frames left inside where a run of close frames switches between two answers: a short window
of frames around each solved as one problem, so its path goes around the body.

A frame alone cannot get out there: its neighbours sit on two answers either side of the body,
and the joints' speed holds it between them. Together, the window's frames may all move: the
least change from where they are (the chain shape's metric), every close pair linearised on
every window frame, consecutive frames within the joints' speed (the frames just outside the
window held), taken again from where it lands (sequential quadratic programming; each solve a
least-distance problem, one NNLS: windows are few and small). A window is kept only where its
frames then overlap less; windows of 2, then 4, then 12 frames each side (the G1 hop's four
frames each came out with 2: 5 frames solved together).
"""
from __future__ import annotations

import numpy as np
from scipy.linalg import LinAlgError, block_diag, get_lapack_funcs, qr, qr_delete, qr_insert
from scipy.sparse import csr_matrix

try:  # the kernel behind a CSR matrix's product with a vector, without its checks (private: another scipy may move it)
    from scipy.sparse._sparsetools import csr_matvec
except ImportError:  # pragma: no cover - a scipy without that name: the public product (the same sums)
    def csr_matvec(rows, columns, indptr, indices, data, vector, out):
        out += csr_matrix((data, indices, indptr), shape=(rows, columns)) @ vector

SWITCH_HALF_WIDTHS = (2, 4, 12)  # frames each side of a frame left inside, tried in turn
SWITCH_STEPS = 6  # linearisations per window
SWITCH_STEP_RAD = 0.35  # no joint turns further per linearisation (the trust region)
SWITCH_AIM_M = 0.002  # the window aims this far beyond the margin: the linearisation falls short
SWITCH_LOOKAHEAD_M = 0.02  # pairs this far beyond the margin are kept from closing in (their rows taken first)
SWITCH_WATCH_M = 0.1  # pairs this far beyond are kept from closing in too, each taken in once a step breaks it:
#                       a pair crossing the lookahead's edge no longer changes the step (continuous in the input)
SLACK_SCALE = 1e-3  # a pair's shortfall of 1 mm costs as much as a unit of scaled change
INSIDE_M = 0.001  # a frame this far inside the margin is left inside
WARM_START = True  # a window's linearisation starts its NNLS from the rows that held the last one's answer


def solve_switches(problem, separation, x: np.ndarray, start: np.ndarray, max_step: np.ndarray,
                   room_rad: float, clear: np.ndarray | None = None, inside: np.ndarray | None = None,
                   smooth: float = 0.0, half_widths: tuple = SWITCH_HALF_WIDTHS,
                   steps: int = SWITCH_STEPS) -> np.ndarray:
    """x (F, V) with each window around a frame still inside the margin solved as one problem
    (module docstring). start: the columns before any room was made (F, V); no joint goes
    further than room_rad from them. max_step: (V,) per frame. clear: (F,) bool, frames already
    seen clear of the margin where they are (not measured again); inside: the frames inside,
    known (nothing measured first). smooth: the window's change also costs this times its
    second difference in time, squared, against its frames' mean metric (_smoothness): a
    detour that starts and ends gently instead of the least one. steps: linearisations per window."""
    if inside is None:
        moved = (np.abs(x - start) > 1e-9).any(axis=1)
        moved = np.flatnonzero(moved if clear is None else moved & ~clear)
        if len(moved) == 0:
            return x
        inside = moved[_violation(problem, separation, x, moved) > INSIDE_M]
    lower = np.maximum(problem.lower, start - room_rad)
    upper = np.minimum(problem.upper, start + room_rad)
    x = x.copy()
    for half in half_widths:
        if len(inside) == 0:
            break
        for window in _windows(inside, half, len(x)):
            _solve_window(problem, separation, x, window, lower, upper, max_step, smooth, steps)
        inside = inside[_violation(problem, separation, x, inside) > INSIDE_M]
    return x


def _windows(frames: np.ndarray, half: int, count: int) -> list:
    """Frame ranges [a, b) of `half` frames either side of each of `frames`, overlapping ones merged."""
    out = []
    for frame in frames:
        a, b = max(0, frame - half), min(count, frame + half + 1)
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return [np.arange(a, b) for a, b in out]


def _posed(problem, values: np.ndarray, frames: np.ndarray) -> np.ndarray:
    """The whole joint vector (len(frames), n) of these frames with the group's columns `values`."""
    q = problem.q[frames].copy()
    q[:, problem.columns] = values
    return q


def _violation(problem, separation, x: np.ndarray, frames: np.ndarray, signed: bool = False) -> np.ndarray:
    """(len(frames),) how far each frame's closest pair is inside the margin (0 when clear): exact
    distances only below the margin (a pair beyond it reads 0 all the same; signed: minus a lower bound
    of how far clear, from the same look's bounds, core.collision.avoid.SeparationTerm.depth)."""
    q, root, kept = _posed(problem, x[frames], frames), separation.root[frames], separation.kept_on(frames)
    return separation.depth(q, root, **kept, signed=True) if signed else separation.depth(q, root, **kept)


def _solve_window(problem, separation, x: np.ndarray, frames: np.ndarray, lower: np.ndarray,
                  upper: np.ndarray, max_step: np.ndarray, smooth: float = 0.0, steps: int = SWITCH_STEPS) -> None:
    """The window's frames of x moved in place by `steps` linearised solves, kept only
    where their summed overlap with the margin is then smaller."""
    before = _violation(problem, separation, x, frames)
    count, width = len(frames), x.shape[1]
    origin = x[frames].copy()
    metric = problem.metric(_posed(problem, origin, frames), frames) + 1e-6 * np.eye(width)
    speed = _speed_rows(count, width, max_step, x, frames)
    # w = L' y per frame (H = L L'): the cost is 1/2 |w - w0|^2, a least-distance problem
    if smooth > 0.0:
        whole = block_diag(*metric) + _smoothness(count, width, smooth * np.trace(metric, axis1=1, axis2=2).mean()
                                                  / width)
        unscale = np.linalg.inv(np.linalg.cholesky(whole)).T
    else:
        unscale = block_diag(*np.linalg.inv(np.linalg.cholesky(metric)).transpose(0, 2, 1))  # y = T w
    w0 = np.linalg.solve(unscale, origin.ravel())
    y = origin.copy()
    binding = np.zeros(len(speed[0]), dtype=bool)  # speed rows that bound the last solve: taken first again
    held = None  # the rows that held the last solve (_row_keys): the next linearisation's NNLS starts from them
    for _ in range(steps):
        f, pair, dist, grad = separation.gradient(_posed(problem, y, frames), separation.root[frames],
                                                separation.margin + SWITCH_WATCH_M, **separation.kept_on(frames))
        if not (dist < separation.margin).any():
            break
        need = separation.margin + SWITCH_AIM_M - dist + np.einsum("kv,kv->k", grad, y[f])  # grad . y' >= need
        box = (np.maximum(lower[frames], np.minimum(y - SWITCH_STEP_RAD, origin)).ravel(),
               np.minimum(upper[frames], np.maximum(y + SWITCH_STEP_RAD, origin)).ravel())
        # the pairs within the lookahead, then any farther one the step breaks, until it breaks none: the
        # answer with every pair watched, so one crossing the lookahead's edge does not move it
        take = dist < separation.margin + SWITCH_LOOKAHEAD_M
        start = held
        while True:
            u, used, holding = _pair_step(unscale, w0, speed, binding, f[take], grad[take], need[take], box, width,
                                          pair[take], start if WARM_START else None)
            if u is None:
                break
            landed = (unscale @ (w0 + u[:len(w0)])).reshape(count, width)
            broken = ~take & (np.einsum("kv,kv->k", grad, landed[f]) < need - 1e-9)
            if not broken.any():
                break
            take |= broken
            start = holding  # the same problem with a few rows more: its NNLS starts from the rows that held this one
        if u is None:
            break  # the joints' speed and range alone leave no way: kept as it is
        binding, held = used[:len(speed[0])], holding
        y = np.clip(landed, lower[frames], upper[frames])
    trial = x.copy()
    trial[frames] = _within_speed(y, x, frames, max_step)
    if _violation(problem, separation, trial, frames).sum() < before.sum():
        x[frames] = trial[frames]


def _pair_step(unscale: np.ndarray, w0: np.ndarray, speed: tuple, binding: np.ndarray, f: np.ndarray,
               grad: np.ndarray, need: np.ndarray, box: tuple, width: int, pair: np.ndarray | None = None,
               held: np.ndarray | None = None) -> tuple:
    """One linearised solve of a window (_solve_window): (u, rows used, the rows that held it as _row_keys)
    of the least-distance problem in w (y = unscale w) from w0 with the speed rows, the pairs' rows
    (frame f, pair `pair`, grad . y >= need) and the box (low, high) of y; (None, None, None) when none
    meets them. held: the rows that held the last linearisation's (_row_keys), where its NNLS starts."""
    pairs = np.zeros((len(f), len(w0)))
    pairs[np.arange(len(f))[:, None], f[:, None] * width + np.arange(width)] = grad  # frame f's block of columns
    rows = np.vstack([speed[0], pairs])  # in y: a speed row two joints, a pair one frame's (the box one joint: below)
    a = np.vstack([rows @ unscale, unscale, -unscale])  # the box's rows: unscale itself, no product
    b = np.concatenate([speed[1], need, box[0], -box[1]])
    first = np.zeros(len(a) + len(f), dtype=bool)
    first[:len(speed[0])], first[len(speed[0]):len(speed[0]) + len(f)] = binding, True  # and the pairs
    h = np.concatenate([b - a @ w0, np.zeros(len(f))])
    # e = [g'; h'] of _least_distance written at once (g = [[a, slack], [0, I]]: each pair may fall short at a
    # steep price, slack t, SLACK_SCALE t of it, so always solvable): the blocks stacked were 25 MB of copies
    at_pairs, each = len(speed[0]) + np.arange(len(f)), np.arange(len(f))
    e = np.zeros((len(w0) + len(f) + 1, len(a) + len(f)))
    e[:len(w0), :len(a)] = a.T
    e[len(w0) + each, at_pairs] = SLACK_SCALE
    e[len(w0) + each, len(a) + each] = 1.0
    e[-1] = h
    sparse_rows = _sparse_rows(speed[0], f, grad, width)

    def gradient(residual: np.ndarray) -> np.ndarray:
        """e' residual (_least_distance's e = [g'; h']) through the rows' few entries in y: a product
        with the dense g (rows x unscale) would read ten times the memory on every NNLS iteration."""
        u, t, last = residual[:len(w0)], residual[len(w0):-1], residual[-1]
        out = np.empty(len(h))
        moved = unscale @ u  # the box's rows pick it (+ and -) as it is
        out[:len(rows)] = 0.0  # sparse_rows @ moved by the kernel it calls, without its checks (the same sums)
        csr_matvec(len(rows), len(moved), sparse_rows.indptr, sparse_rows.indices, sparse_rows.data, moved,
                   out[:len(rows)])
        out[len(rows):len(rows) + len(w0)] = moved
        np.negative(moved, out=out[len(rows) + len(w0):len(a)])
        out[at_pairs] += SLACK_SCALE * t
        out[len(a):] = t
        return out + h * last

    keys = None if pair is None else _row_keys(len(speed[0]), f, pair, len(w0))  # no pairs named: no warm start
    start = None if held is None or keys is None else np.isin(keys, held)
    tol = _window_tolerance(a, h, at_pairs)
    u, used, passive = _least_distance(e[:-1].T, h, first, gradient, start, e, tol)
    return u, used, None if passive is None or keys is None else keys[passive]


def _window_tolerance(a: np.ndarray, h: np.ndarray, at_pairs: np.ndarray) -> float:
    """_tolerance of _pair_step's e from its blocks: each column's sum of magnitudes, row by row as the
    sum over e's rows takes it (a's rows, a pair's slack, h; zeros add nothing), so the same bits, for
    the few hundred thousand entries of a instead of e's million."""
    sums = np.abs(a).T.copy().sum(axis=0)  # C order: summed row after row, as e's columns are
    sums[at_pairs] += SLACK_SCALE
    pairs = len(h) - len(a)
    sums = np.concatenate([sums, np.ones(pairs)]) + np.abs(h)
    shape = (a.shape[1] + pairs + 1, len(h))  # e's
    return 10 * max(shape) * np.spacing(1.0) * sums.max(initial=1.0)


def _sparse_rows(speed: np.ndarray, f: np.ndarray, grad: np.ndarray, width: int) -> csr_matrix:
    """The speed rows (dense, (S, n)) and the pairs' rows (frame f's block of `width` columns holds grad)
    as one CSR matrix, their nonzero entries in row order as csr_matrix of the dense rows has them (the
    same products), written from the entries: converting the dense rows scanned every zero of them."""
    srow, scol = np.nonzero(speed)
    kept = grad != 0.0
    pcol = (f[:, None] * width + np.arange(width))[kept]
    counts = np.concatenate([np.bincount(srow, minlength=len(speed)), kept.sum(axis=1)])
    indptr = np.concatenate([[0], np.cumsum(counts)])
    shape = (len(speed) + len(f), speed.shape[1])
    return csr_matrix((np.concatenate([speed[srow, scol], grad[kept]]), np.concatenate([scol, pcol]), indptr), shape)


def _row_keys(speed: int, f: np.ndarray, pair: np.ndarray, size: int) -> np.ndarray:
    """A key for each of a window's rows (_pair_step's order: speed, pairs, box low, box high, the pairs'
    slacks) that names the same row in another linearisation of the window (a pair by its frame and pair)."""
    block = np.int64(1) << 40
    pairs = f.astype(np.int64) * (1 << 20) + pair
    return np.concatenate([np.arange(speed), block + pairs, 2 * block + np.arange(size), 3 * block + np.arange(size),
                           4 * block + pairs])


def _smoothness(count: int, width: int, weight: float) -> np.ndarray:
    """(count * width,) squared: weight x the sum of the window's change's squared second
    differences in time, the frames either side (unchanged) included, joint by joint."""
    second = np.zeros((count + 2, count + 4))
    for k in range(count + 2):
        second[k, k:k + 3] = (1.0, -2.0, 1.0)
    inner = second[:, 2:-2]  # the held frames either side change nothing
    return weight * np.kron(inner.T @ inner, np.eye(width))


def _speed_rows(count: int, width: int, max_step: np.ndarray, x: np.ndarray, frames: np.ndarray) -> tuple:
    """(A, b) with A z >= b keeping consecutive window frames, and the first and last against the
    frames just outside (held), within max_step of each other."""
    rows, need = [], []
    eye = np.eye(width)
    for k in range(count - 1):
        diff = np.zeros((width, count * width))
        diff[:, (k + 1) * width:(k + 2) * width], diff[:, k * width:(k + 1) * width] = eye, -eye
        rows += [diff, -diff]
        need += [-max_step, -max_step]
    for k, outside in ((0, frames[0] - 1), (count - 1, frames[-1] + 1)):
        if 0 <= outside < len(x):
            pick = np.zeros((width, count * width))
            pick[:, k * width:(k + 1) * width] = eye
            rows += [pick, -pick]
            need += [x[outside] - max_step, -x[outside] - max_step]
    return np.vstack(rows), np.concatenate(need)


def _within_speed(y: np.ndarray, x: np.ndarray, frames: np.ndarray, max_step: np.ndarray) -> np.ndarray:
    """y with each frame held within max_step of the one before it (the frame before the window
    held), so a solve that ended a hair over the joints' speed keeps it."""
    out = y.copy()
    last = x[frames[0] - 1] if frames[0] > 0 else out[0]
    for k in range(len(out)):
        out[k] = np.clip(out[k], last - max_step, last + max_step)
        last = out[k]
    return out


def _least_distance(g: np.ndarray, h: np.ndarray, first: np.ndarray, gradient=None,
                    start: np.ndarray | None = None, e: np.ndarray | None = None, tol: float | None = None) -> tuple:
    """(u, rows used): the u of least |u| with g u >= h (Lawson and Hanson's least distance
    programming: one nonnegative least squares on [g'; h']); (None, None) when no u meets them.
    The rows `first` (bool) are taken first, any other only once the answer breaks it: most of
    the window's speed and range rows never bind. Rows taken in later continue the same NNLS
    from where it stopped (_nnls): its answer so far is a start of the larger problem. gradient: e' r for a
    residual r of e = [g'; h'], cheaper than the dense product (default). start: (bool) rows whose NNLS
    columns it starts from, taken too (a linearisation's answer is held by nearly the rows the last one's was).
    Also (bool) the rows that hold the answer (their multipliers positive); None with no answer. e: [g'; h']
    when already written (g its view); tol: _tolerance(e), when already known."""
    use = first.copy() if start is None else first | start
    e = np.vstack([g.T, h[None, :]]) if e is None else e
    target = np.zeros(len(e))
    target[-1] = 1.0
    lam, passive, factors = _positive_start(e, target, start)
    tol = _tolerance(e) if tol is None else tol  # once: each continuation of the NNLS reads the same e
    if factors is None:  # (a start comes with the factors of its passive columns, ascending: these)
        factors = _PassiveQR(e, target, np.flatnonzero(passive))  # and goes on with the same factors
    while True:
        lam, passive = _nnls(e, target, use, lam, passive, gradient, tol, factors)
        r = e[:, passive] @ lam[passive] - target
        if abs(r[-1]) < 1e-12:
            return None, None, None
        u = -r[:-1] / r[-1]
        broken = ~use & (g @ u < h - 1e-9)
        if not broken.any():
            return u, use, passive
        use |= broken


def _positive_start(e: np.ndarray, target: np.ndarray, start: np.ndarray | None) -> tuple:
    """(x, passive, their QR factors or None) to start _nnls from: the least squares answer on the `start`
    columns, those whose multiplier comes out non-positive dropped until all are positive (Lawson and
    Hanson's active set needs no more: each of its steps lowers the residual from any such start); none
    without a start. The factors (_PassiveQR, columns ascending) are those the NNLS goes on with."""
    x, passive = np.zeros(e.shape[1]), np.zeros(e.shape[1], dtype=bool)
    columns = np.flatnonzero(start) if start is not None else np.zeros(0, dtype=int)
    while 0 < len(columns) <= len(e):
        factors = _PassiveQR(e, target, columns)
        idx, z = factors.solve()
        if (z > 0.0).all():
            x[idx], passive[idx] = z, True
            return x, passive, factors
        columns = idx[z > 0.0]
    return x, passive, None


def _tolerance(e: np.ndarray) -> float:
    """The NNLS's tolerance on e's gradient entries (scipy's rule: e's size, eps, its largest column sum)."""
    return 10 * max(e.shape) * np.spacing(1.0) * np.abs(e).sum(axis=0).max(initial=1.0)


def _nnls(e: np.ndarray, target: np.ndarray, allowed: np.ndarray, x: np.ndarray, passive: np.ndarray,
          gradient=None, tol: float | None = None, qr: "_PassiveQR | None" = None) -> tuple:
    """(x, passive): x >= 0 of least |e x - target| over the columns `allowed` (bool), by Lawson and
    Hanson's active set from x, the least squares answer on its `passive` columns (all of x > 0).
    Each step solves only the passive columns (the few rows that hold: 11-44 of a window's
    300), where scipy's nnls forms e'e over every column first (0.1-0.5 s a G1 hop window); their
    QR factors are updated as a column comes or goes (_PassiveQR), not computed again. gradient: e' r
    for a residual r (default the product with e). tol: _tolerance(e), when already known. qr: the
    passive columns' factors (_PassiveQR), updated in place: a continuation goes on with them (a new
    factorisation of ~100 columns on each of the G1 hop's 18 continuations was a tenth of the NNLS)."""
    x, passive = x.copy(), passive.copy()
    tol = _tolerance(e) if tol is None else tol
    qr = _PassiveQR(e, target, np.flatnonzero(passive)) if qr is None else qr
    refused = np.zeros(len(x), dtype=bool)  # a column that came back at once: not taken again until x moves
    columns = np.flatnonzero(allowed)  # the only columns that may come in (most of a window's rows never may)
    for _ in range(3 * len(x) + 50):
        # the gradient over every column, then the allowed ones': a product over those alone rounds otherwise
        # (BLAS blocks by shape), and a near tie between two columns then goes the other way (G1 hop 7e-7 rad)
        residual = qr.residual()  # x is the least squares answer on the passive columns: their factors' residual
        w = (e.T @ residual if gradient is None else gradient(residual))[columns]
        free = np.flatnonzero((w > tol) & ~(passive | refused)[columns])
        # as many passive columns as rows fit target exactly: a w above tol is rounding there, and one more
        # column left the QR factors non-square (solve_triangular's ValueError: an infeasible window's NNLS)
        if len(free) == 0 or len(qr.columns) >= len(e):  # (the factors' columns are the passive ones)
            return x, passive
        j = columns[free[w[free].argmax()]]
        passive[j] = True
        qr.add(j)
        while True:
            idx, z = qr.solve()
            if (z > 0).all():
                x[:] = 0.0
                x[idx] = z
                refused[:] = False
                break
            if passive[j] and x[j] == 0.0 and z[idx == j][0] <= 0.0 and (z[idx != j] > 0).all():
                passive[j], refused[j] = False, True  # rounding's column: x stays
                qr.remove(j)
                break
            now = x[idx]
            bad = z <= 0.0
            step = now[bad] / (now[bad] - z[bad])
            alpha = step.min()
            moved = now + alpha * (z - now)
            moved[np.flatnonzero(bad)[step.argmin()]] = 0.0
            x[:] = 0.0
            x[idx] = np.maximum(moved, 0.0)
            for column in idx[moved <= tol]:
                passive[column] = False
                qr.remove(column)
            refused[:] = False
    # Not settled: the reference method, imported here (scipy.optimize costs 0.17 G instructions to import,
    # which every bake paid at its start whether or not a window came this far)
    from scipy.optimize import nnls

    lam, _ = nnls(e[:, allowed], target, maxiter=50 * len(e[0]) + 50)
    x[:] = 0.0
    x[allowed] = lam
    qr.factor(np.flatnonzero(x > 0.0))
    return x, x > 0.0


class _PassiveQR:
    """The economic QR factors of e's passive columns (in the order they came), for their least
    squares answer to target: a column in or out is an update (microseconds), where a new
    factorisation of 40 columns of 300 costs about 0.2 ms."""

    def __init__(self, e: np.ndarray, target: np.ndarray, columns: np.ndarray):
        self.e, self.target = e, target
        # _least_distance's target is the last unit vector: q' target is q's last row (the same bits)
        self.last = target[-1] == 1.0 and not target[:-1].any()
        self.factor(columns)

    def factor(self, columns: np.ndarray) -> None:
        """The factors of these columns, computed anew."""
        self.columns = list(int(c) for c in columns)
        self.q, self.r = qr(self.e[:, self.columns], mode="economic") if self.columns else \
            (np.zeros((len(self.e), 0)), np.zeros((0, 0)))

    def add(self, column: int) -> None:
        self.q, self.r = qr_insert(self.q, self.r, self.e[:, column], len(self.columns), which="col",
                                   check_finite=False)
        self.columns.append(int(column))

    def remove(self, column: int) -> None:
        self.q, self.r = qr_delete(self.q, self.r, self.columns.index(int(column)), which="col", check_finite=False)
        self.columns.remove(int(column))

    def residual(self) -> np.ndarray:
        """target less its least squares fit by the columns, q q' target: a product with the contiguous q
        (e's passive columns gathered and multiplied took ten times as long on the G1 hop's windows)."""
        q = self.q[:, :len(self.columns)]
        return self.target - q @ (q[-1] if self.last else q.T @ self.target)

    def solve(self) -> tuple[np.ndarray, np.ndarray]:
        """(columns, ascending; their least squares answer)."""
        k = len(self.columns)
        z = _upper_solve(self.r[:k, :k], self.q[-1, :k] if self.last else self.q[:, :k].T @ self.target)
        columns = np.array(self.columns, dtype=int)  # int when none is left: an index
        order = columns.argsort()  # (np.argsort of the list converts it first: half the call)
        return columns[order], z[order]


_TRTRS = get_lapack_funcs(("trtrs",), (np.zeros((1, 1)),))[0]


def _upper_solve(r: np.ndarray, b: np.ndarray) -> np.ndarray:
    """r^-1 b for an upper triangular r: scipy's solve_triangular(r, b, check_finite=False) without its checks
    (the same LAPACK call, so the same bits; a third of its time on the windows' NNLS was the checks)."""
    if len(r) == 0:  # every column gone: no answer to solve for (LAPACK refuses an empty system)
        return np.zeros(0)
    if r.flags.f_contiguous:
        z, info = _TRTRS(r, b, lower=False, trans=0, unitdiag=False)
    else:  # as solve_triangular: trtrs expects Fortran order, so the transposed system
        z, info = _TRTRS(r.T, b, lower=True, trans=1, unitdiag=False)
    if info > 0:
        raise LinAlgError(f"singular matrix: resolution failed at diagonal {info - 1}")
    if info < 0:
        raise ValueError(f"illegal value in {-info}th argument of internal trtrs")
    return z
