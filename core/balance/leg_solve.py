"""The legs' Levenberg-Marquardt iterations (core.balance.legs), frames last, with few numpy calls a step.

Every sample is its own small problem (a leg's five or six joints), all solved at once over the samples'
axis, and the cost of a step is mostly per numpy call, not per sample: of the H1 10 s gait's 1,524
residuals, 1,058 are on fewer than 50 samples (the stragglers after most have converged), each about 200
numpy calls. So a step here makes fewer and cheaper calls with each element's arithmetic unchanged (the
same bits as the code before, which worked field by field and entry by entry):

- the per-sample data live in two arrays with the samples last, the goals (fixed in a solve) and the state
  (joints, error, Jacobian, cost) the iterations take over: one copyto a step and one gather a drop of the
  converged samples instead of one per field;
- the walk down the leg to its first joint (the pelvis to the hip's first axis) is done once per solve, and
  every joint's cosine and sine in one call each;
- the joints' axes are written straight into the Jacobian's rotation rows, and the rotation error's G R^T
  is three products over stacked (3, 3, S) entries, not nine sums;
- the walk's fixed numbers are numpy's (a Python float costs a conversion at every product), reductions are
  the ufuncs' own (not the methods' wrappers), and a few systems go to LAPACK's solve without numpy's checks.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache, partial

import numpy as np

from ..chains.batched import LAST_SMALL_BATCH, spd_solve_last
from ..model.same_bits import same_bits
from .leg_chain import Link, combine, fixed_step, turned, world_axis

STEP_TOL_RAD = 1e-6
GAIN_TOL = 1e-3  # a sample stops once an iteration buys less than this share of its cost
PREDICTED_STOP = False  # True: a sample whose trial failed also stops where the step's model gain is below GAIN_TOL
#                        (session 24: a tenth fewer residuals, but the H1 walk's draw then falls back to HiGHS)
RACE_STEPS: int | None = None  # 6: a sample given a cost to beat (a restart's rival: solve_legs gives one to the
#                                 samples that miss) still above it after these steps stops; session 25: the H1 10 s
#                                 clip's leg residuals 1,430 for 1,517, 0.990 of its instructions, scaled 1.1's
#                                 float32 start then a draw (+10.29 mm): off. Session 26: every race tried (5-10
#                                 steps, the misses only or every restart) parts 3-7 of 11 rounded starts of the H1
#                                 walk by about 2 mm (main: none; bench/start_spread.py)
RACE_RIVAL = 1e-2  # a rival costlier than this (a foot about 10 cm off) is raced to the end: a restart from far
#                   needs more steps to come under it (a G1 reach probe's foot 494 mm off instead of 113 mm)
NORMAL_ROWS_FROM = 500  # samples from which _normal's row by row beats its one broadcast product
INDEX_GATHER_FROM = 64  # samples from which a drop gathers the kept columns by index, not by mask
try:  # numpy's own ufunc and gufunc behind np.clip and np.linalg.solve, without their Python wrappers (the same
    # bits); private names (numpy 2's, also numpy 1.26's), so a numpy that moves them falls back to the wrappers
    from numpy._core.umath import clip as _clip
    from numpy.linalg._umath_linalg import solve as _gufunc_solve

    def _lapack_solve(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return _gufunc_solve(a, b, signature="dd->d")
except ImportError:  # pragma: no cover - only on a numpy without those names
    _clip = np.clip
    _lapack_solve = np.linalg.solve


@dataclass
class _Chain:
    """A walk split where the joints start: `head` (the links down to the first joint's axis, which no
    joint moves: walked once per solve) and `tail` (every link after it, its fixed numbers as numpy's),
    with the joints' scale and offset, their revolute flags and, for principal axes, their signs."""

    head: list[Link]
    tail: list[Link]
    joints: list[Link]  # the links with a joint, in order
    scale: np.ndarray | None  # (J, 1); None: every joint's value is its angle (scale 1, offset 0)
    offset: np.ndarray | None
    signs: np.ndarray | None  # (J, 1) each principal axis' sign; None when every one is +1
    revolute: np.ndarray  # (J,)
    per_row: list[tuple[int, int]]  # (tail link, component) of each shift given per row (legs stacked)
    rows_at: list[tuple[int, ...]]  # each tail link's components given per row (most links: none)


def _per_row(value) -> bool:
    return isinstance(value, np.ndarray) and value.ndim > 0


def _chain(walk: list[Link], revolute: np.ndarray) -> _Chain:
    first = next(k for k, link in enumerate(walk) if link.axis is not None)
    tail = [Link([v if _per_row(v) else np.float64(v) for v in link.shift], link.turn, link.axis, link.principal,
                 link.prismatic, link.scale, link.offset) for link in walk[first + 1:]]
    joints = [walk[first]] + [link for link in tail if link.axis is not None]
    signs = np.array([[link.axis[link.principal] if link.principal >= 0 else 1.0] for link in joints])
    scale, offset = np.array([[link.scale] for link in joints]), np.array([[link.offset] for link in joints])
    plain = bool((scale == 1.0).all() and (offset == 0.0).all())
    return _Chain(walk[:first + 1], tail, joints, None if plain else scale, None if plain else offset,
                  None if (signs == 1.0).all() else signs, np.asarray(revolute, bool),
                  [(k, c) for k, link in enumerate(tail) for c in range(3) if _per_row(link.shift[c])],
                  [tuple(c for c in range(3) if _per_row(link.shift[c])) for link in tail])


class _Rows:
    """Named blocks of rows of one (R, S) array, the samples last: views by name, all samples gathered at once."""

    def __init__(self, parts: list[tuple[str, np.ndarray]], samples: int):
        self.layout, start = [], 0
        for name, value in parts:
            shape = value.shape[:-1]
            size = int(np.prod(shape))
            self.layout.append((name, start, start + size, shape))
            start += size
        self.data = np.empty((start, samples))
        for (_, a, b, shape), (_, value) in zip(self.layout, parts):  # each part copied once (most are transposed)
            self.data[a:b].reshape(shape + (samples,))[...] = value

    def views(self) -> dict[str, np.ndarray]:
        samples, data = self.data.shape[1], self.data
        return {name: data[a:b] if len(shape) == 1 else data[a:b].reshape(shape + (samples,))
                for name, a, b, shape in self.layout}


def _head(chain: _Chain, frame: np.ndarray) -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
    """The walk down to the first joint, under the base frame (4, 3, S): the frame's columns there, its
    position (the first joint's origin) and the first joint's world axis (3, S); as leg_chain.down_last."""
    cols, pos = [frame[0], frame[1], frame[2]], frame[3]
    for link in chain.head:
        cols, pos = fixed_step(cols, pos, link)
    return cols, pos, world_axis(cols, chain.head[-1])


CROSS = ((1, 2), (2, 0), (0, 1))  # the Jacobian's position row k: axis[a] lever[b] - axis[b] lever[a]
SKEW = (np.array([7, 2, 3]), np.array([5, 6, 1]))  # m21 - m12, m02 - m20, m10 - m01 of m (9, S)


def _residual(chain: _Chain, g: dict, x: np.ndarray, err: np.ndarray, jac: np.ndarray) -> None:
    """The weighted pose error and prior (6 + J, S) of the joints x (J, S) into err, and the pose error's
    Jacobian (6, J, S) into jac: the legs' residual before (leg_chain.down_last's walk, the cross
    products, the rotation error: tests/core/test_leg_solve.py), each element's operations in their order."""
    values = x + 0.0 if chain.scale is None else x * chain.scale + chain.offset  # x * 1 is x to the bit
    axes, origins = jac[3:6], np.empty((3,) + x.shape)  # axes[:, j] joint j's world axis
    cols, pos = _down(chain, g, values, axes, origins)
    np.subtract(g["position"], pos, out=err[:3])
    np.subtract(pos[:, None], origins, out=origins)  # the levers
    for k, (a, b) in enumerate(CROSS):
        np.multiply(axes[a], origins[b], out=jac[k])
        jac[k] -= axes[b] * origins[a]
    if not chain.revolute.all():  # a sliding joint moves the foot along its axis and turns nothing
        slides = ~chain.revolute
        jac[:3, slides] = axes[:, slides]
        axes[:, slides] = 0.0
    _rotation_errors(cols, g["rotation"], err[3:6])
    if "roll_axis" in g:  # the turn about the goal's long axis scaled: (I + (s - 1) a a^T) on error and Jacobian
        axis, more = g["roll_axis"], g["roll_more"][0]
        products = axis * err[3:6]
        along = more * ((products[0] + products[2]) + products[1])
        err[3:6] += along * axis
        spread = more * (axis[0] * jac[3] + axis[1] * jac[4] + axis[2] * jac[5])  # (J, S)
        jac[3:6] += spread * axis[:, None]
    err[:6] *= g["weights"]
    jac *= g["weights"][:, None]
    np.subtract(g["rest"], x, out=err[6:])
    err[6:] *= g["prior"]


def _down(chain: _Chain, g: dict, values: np.ndarray, axes: np.ndarray,
          origins: np.ndarray) -> tuple[list[np.ndarray], np.ndarray]:
    """The walk from the first joint to the foot (leg_chain.down_last's), the joints' values (J, S): each
    joint's world axis and origin into axes and origins (3, J, S); the foot's columns and position."""
    cos, sin = _rows3(np.cos(values)), _rows3(np.sin(values))  # (J, 3, S): a turn's products on whole blocks
    if chain.signs is not None:
        sin *= chain.signs[:, :, None]
    cols, pos = [g["cols"][0], g["cols"][1], g["cols"][2]], g["pos"]
    axes[:, 0], origins[:, 0] = g["axis"], pos
    shifts = iter(g["shifts"])
    j = 0
    for link, rows in zip([None] + chain.tail, [()] + chain.rows_at):
        if link is not None:
            if rows:  # this step's rows of the shifts given per row
                shift = list(link.shift)
                for c in rows:
                    shift[c] = next(shifts)
                link = Link(shift, link.turn, link.axis, link.principal)
            cols, pos = fixed_step(cols, pos, link)
            if link.axis is None:
                continue
            k = link.principal
            if k < 0:
                axes[:, j] = combine(cols, link.axis)
            elif link.axis[k] == 1.0:
                axes[:, j] = cols[k]
            else:
                np.multiply(cols[k], link.axis[k], out=axes[:, j])
            origins[:, j] = pos
        joint = chain.joints[j]
        if joint.prismatic:
            pos = pos + axes[:, j] * values[j]
        elif joint.principal >= 0:
            k = joint.principal
            a, b = (k + 1) % 3, (k + 2) % 3
            ca, cb = cols[a], cols[b]
            cols = list(cols)
            cols[a] = ca * cos[j] + cb * sin[j]
            cols[b] = cb * cos[j] - ca * sin[j]
        else:
            cols = turned(cols, joint, values[j])
        j += 1
    return cols, pos


def _rows3(rows: np.ndarray) -> np.ndarray:
    """Rows (N, S) each repeated three times (N, 3, S): a product with a frame's column (3, S) then runs on
    two contiguous blocks (numpy 1.26 copies a row broadcast over (3, S) through its buffers on every product)."""
    out = np.empty((rows.shape[0], 3, rows.shape[1]))
    out[...] = rows[:, None]
    return out


def _rotation_errors(cols: list[np.ndarray], goal: np.ndarray, out: np.ndarray) -> None:
    """The turn (3, S) that takes the rotations (their columns, 3 x (3, S)) to their goals (G[i, k] as goal[k, i, j]
    (3, 3, 3, S), repeated along j: _goal_rows), as rotation vectors, into out: m = G R^T as three products over
    the stacked (3, 3, S) entries (each entry's sum over k in order), then m's rotation vector."""
    column = np.empty(goal.shape[1:])  # the rotation's column k repeated along i (3, 3, S): whole blocks
    column[...] = cols[0]
    m = goal[0] * column
    for k in (1, 2):
        column[...] = cols[k]
        column *= goal[k]
        m += column
    flat = m.reshape(9, -1)
    v = flat.take(SKEW[0], axis=0)
    v -= flat.take(SKEW[1], axis=0)
    v *= 0.5
    sin = np.sqrt(np.add.reduce(v * v, 0))
    cos = 0.5 * (flat[0] + flat[4] + flat[8] - 1.0)
    angle = same_bits(np.arctan2, sin, cos)  # few samples: see core.model.same_bits
    np.multiply(v, np.where(sin > 1e-12, angle / np.maximum(sin, 1e-12), 1.0), out=out)


@lru_cache(maxsize=None)
def _triangle(count: int) -> tuple[np.ndarray, np.ndarray]:
    return np.triu_indices(count)


def _goal_rows(rotation: np.ndarray) -> np.ndarray:
    """Goal rotations G[i, k] (3, 3, S) as [k, i, j] (3, 3, 3, S), each G[i, k] repeated along j: the rotation
    error's products then run on contiguous blocks (numpy 1.26 copies broadcast operands through its buffers)."""
    out = np.empty((3, 3, 3, rotation.shape[-1]))
    out[...] = rotation.transpose(1, 0, 2)[:, :, None]
    return out


def _normal(jac: np.ndarray) -> np.ndarray:
    """J^T J (J, J, S) of Jacobians (6, J, S), each entry's six products summed in order (as numpy's
    matmul of J^T and J sums them: the same bits). Few samples: the upper triangle's two factors gathered
    into contiguous blocks first (numpy 1.26 copies broadcast operands through its buffers: 300 samples,
    0.7 of the time of all products broadcast at once); many: the upper triangle row by row (4,000
    samples: half the time of all products at once)."""
    count = jac.shape[1]
    if jac.shape[2] < NORMAL_ROWS_FROM:
        first, second = _triangle(count)
        products = jac.take(first, axis=1)
        products *= jac.take(second, axis=1)
        upper = np.add.reduce(products, 0)  # (T, S)
        out = np.empty((count, count, jac.shape[2]))
        out[first, second] = upper
        out[second, first] = upper
        return out
    out = np.empty((count, count, jac.shape[2]))
    for a in range(count):
        np.add.reduce(jac[:, a, None] * jac[:, a:], 0, out=out[a, a:])
        out[a + 1:, a] = out[a, a + 1:]
    return out


def _step(hess: np.ndarray, grad: np.ndarray) -> np.ndarray:
    """spd_solve_last(hess, grad): below its LAST_SMALL_BATCH, the LAPACK solve np.linalg.solve runs, called
    without numpy's checks and error state (a third of its time on a few systems; the same bits), and
    spd_solve_last where it fails (a singular system: numpy's solve raises there, after numpy's warning here;
    the damping keeps every system positive definite)."""
    if grad.shape[1] >= LAST_SMALL_BATCH:
        return spd_solve_last(hess, grad)
    out = _lapack_solve(hess.transpose(2, 0, 1), grad.T[..., None])[..., 0].T
    if not np.isfinite(out).all():
        return spd_solve_last(hess, grad)
    return out


def _packed(chain: _Chain, frame: np.ndarray, parts: list[tuple[str, np.ndarray]]) -> _Rows:
    """A solve's goals in one array: the walk's head under the base frame (4, 3, S) (its columns, position and
    first axis), `parts` (each (..., S)) and the tail's shifts given per row."""
    samples = frame.shape[-1]
    cols, pos, axis = _head(chain, frame)
    shifts = [chain.tail[k].shift[c] for k, c in chain.per_row]
    return _Rows([("cols", np.array(cols)), ("pos", pos), ("axis", axis)] + parts
                 + [("shifts", _rows3(np.array(shifts)) if shifts else np.zeros((0, 3, samples)))], samples)


def _goal_parts(rotation: np.ndarray, position: np.ndarray, weights: np.ndarray, rest: np.ndarray, prior: np.ndarray,
                lower: np.ndarray, upper: np.ndarray, roll_axis: np.ndarray | None,
                roll_more: np.ndarray | None) -> list[tuple[str, np.ndarray]]:
    """levenberg_marquardt's goals by name, the rotation and the prior repeated where their products want whole
    blocks (_goal_rows; the prior (J, S) over the joints)."""
    return ([("rotation", _goal_rows(rotation)), ("position", position), ("weights", weights), ("rest", rest),
             ("prior", np.repeat(prior[None], len(rest), axis=0)), ("prior2", (prior * prior)[None]),
             ("lower", lower), ("upper", upper), ("low", lower + 1e-9),
             ("high", upper - 1e-9)]  # low, high: at a bound within a nano-radian
            + ([] if roll_axis is None else [("roll_axis", roll_axis), ("roll_more", roll_more[None])]))


def _gradient(jac: np.ndarray, err: np.ndarray, prior: np.ndarray) -> np.ndarray:
    """The descent direction (J, S) (error = goal - pose): J^T e, the error's rows first repeated over the joints
    (a product of whole blocks), plus the prior's part (the prior (J, S) times the identity) by hand."""
    terms = np.empty_like(jac)
    terms[...] = err[:6, None]
    terms *= jac
    return np.add.reduce(terms, 0) + prior * err[6:]


def _model_gain(step: np.ndarray, grad: np.ndarray, lam: np.ndarray) -> np.ndarray:
    """The cost the damped step (J, S) buys by the linear model, (S,): 2 d^T g - d^T H d, which is
    d^T (g + lam d) since (H + lam I) d = g (g the descent direction J^T e, bounded joints' rows 0); grad is
    overwritten."""
    grad += lam * step
    grad *= step
    return np.add.reduce(grad, 0)


def _parts(block: np.ndarray, count: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A solve's state (8 J + 7, S) as its rows: joints x (J, S), error (6 + J, S), Jacobian (6, J, S), cost (S,)."""
    jac = block[2 * count + 6:8 * count + 6].reshape(6, count, block.shape[1])
    return block[:count], block[count:2 * count + 6], jac, block[8 * count + 6]


def levenberg_marquardt(walk: list[Link], revolute: np.ndarray, frame: np.ndarray, rotation: np.ndarray,
                        position: np.ndarray, weights: np.ndarray, start: np.ndarray, rest: np.ndarray,
                        prior: np.ndarray, lower: np.ndarray, upper: np.ndarray, roll_axis: np.ndarray | None,
                        roll_more: np.ndarray | None, iterations: int, beat: np.ndarray | None = None,
                        gain_tol: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Projected Levenberg-Marquardt, every sample its own problem, frames last: the base frame (4, 3, S)
    (leg_chain.frames_last), the goal's rotation G[i, k] (3, 3, S) and position (3, S), the pose error's
    weights (6, S), the start, rest and bounds (J, S), the prior (S,), for a weighted roll the goal's long
    axis (3, S) and its extra weight (S,). Samples drop out as they converge. beat: a cost (S,) each sample
    must come under to be of use (a restart's rival, solve_legs): after RACE_STEPS steps a sample still above
    a rival under RACE_RIVAL stops (a restart that finds a better branch is under its rival in a few steps;
    the rest only crawl to about its cost). gain_tol: GAIN_TOL unless given (a solve with no restart after it
    stops on less: solve_legs' quick). Returns the joints (J, S) and weighted error (6 + J, S)."""
    gain_tol = GAIN_TOL if gain_tol is None else gain_tol
    chain = _chain(walk, revolute)
    count, samples = start.shape
    goals = _packed(chain, frame, _goal_parts(rotation, position, weights, rest, prior, lower, upper, roll_axis,
                                              roll_more))
    g = goals.views()
    state = np.empty((8 * count + 7, samples))  # _parts: taken over from a trial in one copyto
    parts_of = partial(_parts, count=count)
    x, err, jac, cost = parts_of(state)
    _clip(start, g["lower"], g["upper"], out=x)
    _residual(chain, g, x, err, jac)
    out_x, out_err = x.copy(), err.copy()
    np.add.reduce(np.square(err), 0, out=cost)
    lam = np.full(samples, 1e-4)
    rows = np.arange(samples)  # the samples still solved, in the arrays above
    for done in range(iterations):
        if len(rows) == 0:
            break
        trial, (t_x, t_err, t_jac, t_cost), step, grad = _damped_trial(chain, g, x, err, jac, lam, state)
        better = t_cost < cost
        gaining = (cost - t_cost) > gain_tol * t_cost + 1e-16
        # done: the step is below a micro-radian, or it buys no relative gain
        keep = (np.maximum.reduce(np.abs(t_x - x), 0) > STEP_TOL_RAD) & (gaining | ~better)
        if PREDICTED_STOP:  # the tries after a failed one, each more damped, promise less than it did
            keep &= better | (_model_gain(step, grad, lam) > gain_tol * cost)
        if better.all():  # the trial is the state (a fresh array each step), no masked copy of every row
            state = trial
            x, err, jac, cost = t_x, t_err, t_jac, t_cost
        else:  # the better samples taken over in place: x, error, Jacobian, cost
            np.copyto(state, trial, where=better)
        lam = np.where(better, np.maximum(lam * 0.3, 1e-9), np.minimum(lam * 10.0, 1e6))
        keep &= lam < 1e5
        if beat is not None and RACE_STEPS is not None and done + 1 >= RACE_STEPS:
            keep &= (cost <= beat) | (beat > RACE_RIVAL)
        if not keep.all():  # the samples done leave the arrays
            out_x[:, rows], out_err[:, rows] = x, err
            # many samples: their indices gather the columns in half the time of the mask (a few: the mask)
            keep = np.flatnonzero(keep) if len(keep) >= INDEX_GATHER_FROM else keep
            rows, lam = rows[keep], lam[keep]
            beat = None if beat is None else beat[keep]
            state, goals.data = state[:, keep], goals.data[:, keep]
            x, err, jac, cost = parts_of(state)
            g = goals.views()
    out_x[:, rows], out_err[:, rows] = x, err
    return out_x, out_err


def _damped_trial(chain, g: dict, x: np.ndarray, err: np.ndarray, jac: np.ndarray, lam: np.ndarray,
                  state: np.ndarray) -> tuple[np.ndarray, tuple, np.ndarray, np.ndarray]:
    """(trial state, its parts (_parts), step (J, S), gradient (J, S)): one damped Gauss-Newton step of every sample, a joint on
    its bound that the gradient pushes outward held (its row and column of the normal matrix cleared, its
    gradient 0), the trial's joints, error, Jacobian and cost evaluated in a fresh state array (_parts)."""
    count = len(x)
    grad = _gradient(jac, err, g["prior"])
    free = ~(((x <= g["low"]) & (grad < 0)) | ((x >= g["high"]) & (grad > 0)))
    hess = _normal(jac)
    diagonal = hess.reshape(count * count, -1)[::count + 1]  # a view of hess[j, j]
    diagonal += g["prior2"][0]
    hess *= free[:, None] & free[None]
    diagonal += ~free + lam
    trial = np.empty_like(state)
    t_x, t_err, t_jac, t_cost = _parts(trial, count=count)
    step = _step(hess, np.multiply(grad, free, out=grad))  # grad's bounded rows 0 (kept for _model_gain)
    np.add(x, step, out=t_x)
    _clip(t_x, g["lower"], g["upper"], out=t_x)
    _residual(chain, g, t_x, t_err, t_jac)
    np.add.reduce(np.square(t_err), 0, out=t_cost)
    return trial, (t_x, t_err, t_jac, t_cost), step, grad
