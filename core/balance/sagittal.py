"""The waist of a robot whose legs have no ankle roll, placed where both its stance soles stay flat.

The lowest joints of such a leg (hip pitch, knee, ankle pitch on the H1) turn about one axis, so
with its sole level the first of them (the hip) stays in a vertical plane fixed to the foot, the
foot's fore-aft plane. The waist cannot then slide sideways over a standing foot: it moves across
by rolling about the stance hip. In double support both hips are held, w apart, in planes d apart:
the waist's roll theta and yaw phi keep cos(theta) cos(phi) = d / w, a circle of radius
arccos(d / w), and the upper body sways across only as far as that roll leans it.

`SagittalWaist.place` turns the correction's command (where an upright waist would stand) into a
waist pose on that family: the upper body's lever across where the command puts it, each hip whose
foot is down in its foot's plane, the yaw on the branch chosen for each double support.
"""
from __future__ import annotations

from itertools import islice

import numpy as np
from scipy.interpolate import PchipInterpolator
from scipy import sparse

from ..feet.contacts import flags_to_intervals
from ..model.kinematics import KinematicTree
from ..model.same_bits import same_bits
from ..model.transforms import pose_matrices, principal_turn, rotate_points
from .inertia import MassModel
from .leg_chain import frames_last_of
from .lateral import differences
from .planar_leg import PlanarLeg, PlanarPair
from .sagittal_parts import PATH_BAND, TILED, _banded_step, _normal_rows, _Samples, _Stack, _Worked
from .waist import heading as heading_of, wrap, yaw_bounds

try:  # the ufunc np.clip calls, without its Python wrapper (the same bounds; about 1,700 calls a gait, as leg_solve's)
    from numpy._core.umath import clip as _clip
except ImportError:  # pragma: no cover - a numpy without that name
    _clip = np.clip

HIP_WEIGHT = 30.0  # a metre of hip out of its foot's plane weighs like 30 m of the upper body's lever across
YAW_PRIOR = 0.02  # a radian of waist yaw off its branch weighs like 2 cm of lever (it only picks the branch)
ROLL_PRIOR = 0.01
GN_ITERATIONS = 12
FIT_STOP = 1e-7  # the per-sample fit stops once no step taken is longer (m, rad)
STEP_RAD = 1e-5  # finite-difference step of the waist's roll and yaw (and metres across)
MAX_ROLL_RAD = 0.4
PATH_ACC_S2 = 0.09  # the waist path's acceleration weighed as a 0.88 m CoM's ZMP weighs it (h / g)
PATH_HALVINGS = 6
PATH_STEPS = 4  # from the last placement. Since the target is the lateral plan's own ZMP and the fine passes start
#                from the coarse ones' best, 2 / 3 / 4 / 6 steps give the H1 walk ZMP RMS 6.6 / 10.6 / 7.0 / 7.4 mm,
#                outside 4.6 / 5.4 / 3.3 / 3.6 %; with 2 the hips stayed up to 7-19 mm off their feet's planes and the
#                legs turned the stance feet 2-8 degrees in 16 phases (slides 16-36 mm in five stances), with 4 in
#                3 phases (hips 8-10 mm off; slides 1.5-13 mm but for the two stances after the trailing ankle's
#                limit, 18 and 46 mm). Before those fixes 1 / 2 / 3 / 5 steps gave 50 / 43 / 41 / 44 mm
RAMP_S = 0.1
FAMILY_ROLLS = 33
TWIST_ROOM = 0.95  # share of a hip twist's range the yaw turned back with the plan's heading may use
STAND_M = 0.001  # a hip this near its foot's plane stands
LEAN_SHARE = 0.9  # of the family's roll a double support starts and ends at
BRANCH_START_RAD = 0.25  # the air share's ramp (core.balance.correction.PRIOR_RAMP_S)  # the waist rolls no further from its plan (the H1's hip roll stops at 0.43)


class SagittalWaist:
    """Waist poses on the family where each foot that is down stays flat (module docstring).

    On one foot the waist rolls about the stance hip as far as puts the upper body where the
    command has it. Through each double support the roll sweeps from leaning over the foot that
    stood to leaning over the foot that will stand, the yaw through its branch's side of the circle
    (toward the leading foot), as one planned path: the command does not move the waist there."""

    def __init__(self, tree: KinematicTree, legs: list[PlanarLeg], model: MassModel, rest: np.ndarray,
                 down_share: dict[int, np.ndarray], period_s: float, turn_back: bool = False):
        self.legs, self.period_s = legs, period_s
        self.turn_back = turn_back  # a double support's yaw turned back as the plan's heading turns (CorrectionSettings)
        self.lever = _upper_lever(tree, legs, model, rest)  # (3,) the upper body's CoM in the waist frame
        self.down_share = [down_share[p.leg.foot] for p in legs]  # per leg (N,): 1 on the ground, 0 in the air
        self.lean = [-p.left for p in legs]  # the roll's sign leaning the upper body over each foot
        self.params: np.ndarray | None = None  # the last placement's (across, roll, yaw): the next starts there
        self.planned: tuple | None = None  # per sample (slave, yaw_to, curve, roll_lo, roll_hi): _plan
        self.table = np.zeros((1, FAMILY_ROLLS))  # per double support the yaw at each of the family's rolls
        self.turn = np.zeros(0)  # per sample (N,) radians: its double support's middle heading less its own
        zero = tree.zero_pose()
        self.standing = [p.leg.flat @ zero[p.leg.base, :3, :3] for p in legs]  # each foot's level rotation, upright
        self.twist_room = [yaw_bounds(tree, p.leg, TWIST_ROOM) for p in legs]
        self.yaw_room = (np.zeros(0), np.zeros(0))  # per sample (N,) the yaw's range where each hip twists (_plan)
        self._terms: tuple | None = None  # _fit_path's sparse parts for one path length (_path_terms)
        self.pair = PlanarPair.build(legs)  # both legs' hips in one head solve (None: each apart)

    def place(self, xy: np.ndarray, height: np.ndarray, base_rot: np.ndarray, q: np.ndarray,
              goals: dict[int, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        """The waist's rotation (N, 3, 3) and position (N, 3) for the command xy (N, 2) at height (N,),
        the plan's rotation base_rot (N, 3, 3) turned by a roll about its fore-aft axis and a yaw; the
        feet at goals (N, 4, 4) per foot link; q (N, n) the legs' joints as they were."""
        samples, heads = self._samples(xy, height, base_rot, q, goals)
        params = self.params
        if params is None or len(params) != len(xy):
            zero = np.zeros(len(xy))
            params = np.column_stack([zero, _clip(zero, samples.roll_lo, samples.roll_hi), zero])
            params, heads = self._fit(params, np.array([True, True, False]), samples, heads)
        # each sample's fit stops within a fraction of a millimetre, and h / g = 0.09 s^2 turns a
        # millimetre's jitter between 10 ms samples into a metre of ZMP: the place is fitted as one
        # path, its acceleration weighed as the ZMP weighs it (from the last placement: the fit per
        # sample only starts it)
        known = None  # params' residuals, head angles and pose, from the step that took them (_Worked)
        for _ in range(PATH_STEPS):
            fitted, known = self._fit_path(params, samples, heads, known)
            if fitted is params:  # no step gained: the next ones, from the same start, would repeat this one
                break
            params = fitted
        self.params = params
        return known.pose[0].copy(), known.pose[1].copy()  # _pose(params, samples)'s, worked out with its residuals

    def _fit_path(self, params: np.ndarray, samples: _Samples, heads: list[np.ndarray],
                  known: "_Worked | None" = None) -> tuple[np.ndarray, "_Worked"]:
        """Gauss-Newton on the whole path of (across, roll) (N, 2 of params' 3): each sample's
        residuals (the hips in their feet's planes, the upper body where the command has it) and the
        path's acceleration, PATH_ACC_S2 s^2 times the upper body's across (m/s^2): one banded solve
        a step. known: params' residuals, head angles and pose where the step before worked them out.
        Returns (the params stepped to, or params itself where no step gains; their known)."""
        n, cols = len(params), [0, 1]
        trial = _stepped(params, 1)
        if known is None:  # params' residuals and the roll's finite difference in one stack, this from params' answers
            known, stepped = self._residuals([params, trial], samples, [heads, None])
        else:
            stepped = self._residuals([trial], samples, [known.heads])[0]
        res, heads, stepped = known.res, known.heads, stepped.res
        jac = np.empty(res.shape + (2,))
        jac[..., 0] = self._across_column(samples)
        jac[..., 1] = (stepped - res) / STEP_RAD
        smooth, band = self._path_terms(n, cols)
        now = params[:, :2].ravel()
        block, grad = _normal_rows(jac, res)
        bend = smooth @ now
        step = _banded_step(band, block, -(grad.T.ravel() + smooth.T @ bend))
        step = step.reshape(n, 2)
        cost = (res ** 2).sum() + (bend ** 2).sum()
        # the halvings in turn, the first gaining taken: the first and the second each alone (on the H1 10 s clip
        # 30 steps gain at the first, 6 at the second, none later), the rest, where those did not gain, in one
        # stack (a step that gains at neither tries 1-4 more: each a residual, about its per-call work apart)
        tries = self._halvings(params, step, samples, smooth, cost)
        for group in (1, 1, PATH_HALVINGS):
            trials = list(islice(tries, group))
            if not trials:
                break
            for (trial, bent), worked in zip(trials, self._residuals([t for t, _ in trials], samples,
                                                                     [heads] * len(trials))):
                if (worked.res ** 2).sum() + bent < cost:
                    return trial, worked
        return params, known

    def _halvings(self, params: np.ndarray, step: np.ndarray, samples: _Samples, smooth, cost: float):
        """_fit_path's trials (params, the path's acceleration cost) in turn, the step halved each time, but for
        those whose acceleration alone costs the start's whole cost: they cannot gain, and their residuals (both
        legs' head solves) are not worked out. The control cycle's placements start from the coarse path
        resampled, a few samples past their roll's range: clipped, every halving's path bends there (the H1
        walk: each such step 8 residuals, none gaining); the same steps taken as before."""
        for _ in range(PATH_HALVINGS):
            trial = params.copy()
            trial[:, :2] += _clip(step, -MAX_STEP[:2], MAX_STEP[:2])
            trial = _bounded(trial)
            trial[:, 1] = _clip(trial[:, 1], samples.roll_lo, samples.roll_hi)
            bent = ((smooth @ trial[:, :2].ravel()) ** 2).sum()
            if bent < cost:
                yield trial, bent
            step = step / 2.0

    def _across_column(self, samples: _Samples) -> np.ndarray:
        """d residuals / d across (F, R), in closed form: moving the waist across turns nothing, so the
        head joints stay and each hip moves with it (its miss by its plane's normal . across), the
        upper body's lever too; the yaw and roll residuals do not move. A finite difference gave
        the same to rounding at the cost of a residual (both legs' head solves) per step. The same for
        every step of a placement: worked out at its first."""
        if samples.across_column is None:
            column = [samples.command * np.einsum("fi,fi->f", samples.across, samples.across)]
            for aim, weight in zip(self._aims(samples), samples.hips):
                column.append(weight * np.einsum("fi,fi->f", aim, samples.across))
            zero = np.zeros(len(samples.across))
            samples.across_column = np.column_stack(column + [zero, zero])
        return samples.across_column

    def _path_terms(self, n: int, cols: list[int]):
        """_fit_path's parts that depend only on the path's length, built once per length: the weighted
        second differences of the path (the acceleration's residuals) and their normal matrix with the
        solve's ridge, as its lower band (5, 2n) over the path's (across, roll) pairs."""
        key = (n, tuple(cols))
        if self._terms is None or self._terms[0] != key:
            second = differences(n, 2) / self.period_s ** 2
            weights = PATH_ACC_S2 * np.array([1.0, max(abs(self.lever[2]), 1e-3)])  # the roll leans the lever across
            smooth = sparse.vstack([sparse.kron(second, sparse.csr_matrix(np.diag(np.eye(2)[c] * weights)))
                                    for c in cols]).tocsr()
            gram = (smooth.T @ smooth + 1e-9 * sparse.identity(2 * n)).todia()
            band = np.zeros((PATH_BAND + 1, 2 * n))
            for d in range(PATH_BAND + 1):
                band[d, :2 * n - d] = gram.diagonal(-d)
            self._terms = (key, smooth, band)
        return self._terms[1:]

    def leaning(self, xy: np.ndarray, height: np.ndarray, base_rot: np.ndarray, q: np.ndarray,
                goals: dict[int, np.ndarray], side: float) -> tuple[np.ndarray, np.ndarray]:
        """The waist (rotation, position) rolled to the end of each sample's range (side +1: its
        highest roll, -1: its lowest), whatever the command: how far across the legs can carry the
        body there (core.balance.lateral)."""
        samples, heads = self._samples(xy, height, base_rot, q, goals)
        samples.command = np.zeros(len(xy))
        samples.roll_to = samples.roll_hi if side > 0 else samples.roll_lo
        samples.roll_w = np.full(len(xy), 10.0)
        start = np.column_stack([np.zeros(len(xy)), samples.roll_to, np.zeros(len(xy))])
        params, _ = self._fit(start, np.array([True, True, False]), samples, heads)
        return self._pose(params, samples)

    def _samples(self, xy: np.ndarray, height: np.ndarray, base_rot: np.ndarray, q: np.ndarray,
                 goals: dict[int, np.ndarray]) -> tuple["_Samples", list[np.ndarray]]:
        """place's per-sample inputs (the double supports planned once) and the legs' head angles."""
        forward = base_rot[:, :, 0].copy()
        forward[:, 2] = 0.0
        forward /= np.linalg.norm(forward, axis=1, keepdims=True)
        across = np.column_stack([-forward[:, 1], forward[:, 0], np.zeros(len(xy))])
        at = np.column_stack([xy, height])
        upright = at + rotate_points(base_rot, self.lever[None])[:, 0]
        zero = np.zeros(len(xy))
        samples = _Samples(xy, height, at, base_rot, across, upright, [goals[p.leg.foot] for p in self.legs],
                           [HIP_WEIGHT * share for share in self.down_share], zero + 1.0, zero, zero, zero, zero,
                           np.full(len(xy), -1), zero, zero - MAX_ROLL_RAD, zero + MAX_ROLL_RAD)
        heads = [q[:, p.head_columns].copy() for p in self.legs]
        if self.planned is None or len(self.planned[0]) != len(xy):
            self.planned = self._plan(samples, heads, forward)
        samples.slave, samples.yaw_to, samples.curve, samples.roll_lo, samples.roll_hi = self.planned
        return samples, heads

    def _plan(self, samples: _Samples, heads: list[np.ndarray], forward: np.ndarray):
        """Per sample: how far both feet are down, the yaw on one foot (from one double support's
        last to the next one's first), the double support whose curve sets the yaw, the roll's range."""
        n = len(samples.xy)
        share = np.minimum(*self.down_share)
        full = share > 1.0 - 1e-9
        yaw, curve = np.zeros(n), np.full(n, -1)
        lo, hi = np.full(n, -MAX_ROLL_RAD), np.full(n, MAX_ROLL_RAD)
        spans = flags_to_intervals(full)
        self.turn = np.zeros(n)
        if not spans:
            self.table = np.zeros((1, FAMILY_ROLLS))
            return share, yaw, curve, lo, hi
        # the waist's yaw kept within each standing hip's twist (_yaw): the H1 walk's left hip yaw stood on its
        # limit through the double support after the right's touch-down at 5.37 s, and the foot turned instead
        # (slid 1.4-1.6 mm from four starts)
        self.yaw_room = self._twist_room(samples, forward)
        mids = np.array([(a + b - 1) // 2 for a, b in spans])
        grid, yaws, stands = self._family(samples, heads, mids, forward)
        self.table = np.array([np.interp(grid, grid[ok], y[ok]) if ok.any() else np.zeros(len(grid))
                               for y, ok in zip(yaws, stands)])
        ramp = _ramp_samples(self.period_s)
        heading = same_bits(np.arctan2, forward[:, 1], forward[:, 0])  # strided: see core.model.same_bits
        for k, ((a, b), ok) in enumerate(zip(spans, stands)):
            low, high = (grid[ok].min(), grid[ok].max()) if ok.any() else (0.0, 0.0)
            ends = [lean * LEAN_SHARE * (high if lean > 0 else -low) for lean in
                    (self._standing_before(a), self._standing_after(b))]
            near = slice(max(0, a - ramp), min(n, b + ramp))
            curve[near] = k
            # the curve is the waist's yaw from the plan's heading at the middle: the feet stand still, so where
            # the plan's waist turns within a long double support (the person's pelvis turning as they stand)
            # the yaw that keeps both hips in their feet's planes turns back by as much
            if self.turn_back:
                self.turn[near] = wrap(heading[mids[k]] - heading[near])
            yaw[a], yaw[b - 1] = np.interp(ends, grid, self.table[k]) + self.turn[[a, b - 1]]
            lo[a:b], hi[a:b] = low, high
        inside = np.flatnonzero(full & ((np.r_[True, ~full[:-1]]) | (np.r_[~full[1:], True])))  # each one's ends
        yaw = PchipInterpolator(inside, yaw[inside], extrapolate=False)(np.arange(n)) if len(inside) > 1 else yaw
        yaw = np.where(np.isnan(yaw), np.interp(np.arange(n), inside, yaw[inside]), yaw)
        return np.where(curve >= 0, share, 0.0), yaw, curve, lo, hi

    def _twist_room(self, samples: _Samples, forward: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per sample (N,) the lowest and highest waist yaw from the plan's heading at which each foot
        that is down stays within its hip's twist (core.balance.waist.yaw_bounds), -inf/inf where none is
        down."""
        base = same_bits(np.arctan2, forward[:, 1], forward[:, 0])
        low, high = np.full(len(base), -np.inf), np.full(len(base), np.inf)
        for goal, standing, (lo, hi), share in zip(samples.goals, self.standing, self.twist_room, self.down_share):
            foot = heading_of(goal[:, :3, :3] @ standing.T)
            down = share > 1.0 - 1e-9
            low = np.where(down, np.maximum(low, wrap(foot - hi - base)), low)
            high = np.where(down, np.minimum(high, wrap(foot - lo - base)), high)
        return low, high

    def _family(self, samples: _Samples, heads: list[np.ndarray], mids: np.ndarray, forward: np.ndarray):
        """The roll-yaw family of the double supports at samples mids: the rolls tried (R,), per
        double support the yaw at each (D, R) and whether both feet stand there (D, R). The yaw's
        branch is the one toward the leading foot (its hip forward), else the other where that one
        rolls less far."""
        grid = np.linspace(-MAX_ROLL_RAD, MAX_ROLL_RAD, FAMILY_ROLLS)
        rows = np.repeat(mids, len(grid))
        part = samples.take(rows)
        part.command, part.slave = np.zeros(len(rows)), np.zeros(len(rows))
        part.roll_w, part.roll_to = np.full(len(rows), 10.0), np.tile(grid, len(mids))
        part.yaw_w, part.yaw_to = np.full(len(rows), YAW_PRIOR), np.zeros(len(rows))
        ahead = np.einsum("fi,fi->f", part.goals[1][:, :3, 3] - part.goals[0][:, :3, 3], forward[rows])
        lead = np.where(np.abs(ahead) > 0.02, np.sign(ahead) * self.lean[1], 1.0)  # the leading foot's hip forward
        # both branches' starts fitted as one stack of samples, each stopping on its own (_fit's groups)
        both = part.take(np.tile(np.arange(len(rows)), 2))
        start = np.column_stack([np.zeros(2 * len(rows)), both.roll_to, np.r_[lead, -lead] * BRANCH_START_RAD])
        params, hip_heads = self._fit(start, np.ones(3, bool), both, [np.tile(h[rows], (2, 1)) for h in heads], 2)
        res, _ = self._residual(params, both, hip_heads)
        ok = (np.abs(res[:, 1:3]) < HIP_WEIGHT * STAND_M).all(axis=1) & (np.abs(params[:, 1] - both.roll_to) < 1e-3)
        first, second = [(params[k, 2].reshape(len(mids), -1), ok[k].reshape(len(mids), -1))
                         for k in (slice(None, len(rows)), slice(len(rows), None))]
        take = second[1].sum(axis=1) > first[1].sum(axis=1)
        return grid, np.where(take[:, None], second[0], first[0]), np.where(take[:, None], second[1], first[1])

    def _standing_before(self, a: int) -> float:
        """The lean over the foot that stood alone before sample a (0 at the clip's start)."""
        for i in range(a - 1, -1, -1):
            alone = [k for k, share in enumerate(self.down_share) if share[i] > 0.5]
            if len(alone) == 1:
                return float(self.lean[alone[0]])
        return 0.0

    def _standing_after(self, b: int) -> float:
        for i in range(b, len(self.down_share[0])):
            alone = [k for k, share in enumerate(self.down_share) if share[i] > 0.5]
            if len(alone) == 1:
                return float(self.lean[alone[0]])
        return 0.0

    def _fit(self, params: np.ndarray, free: np.ndarray, samples: _Samples, heads: list[np.ndarray], groups: int = 1):
        """Damped Gauss-Newton per sample on the free ones of (across, roll, yaw): (params, head angles). groups:
        the samples are so many equal blocks (fits from several starts), each stopping when its own steps do
        (a stopped block's samples are held), as each would fitted alone: a sample's arithmetic is its own."""
        cols = np.flatnonzero(free)
        turned = [int(k) for k in cols if k != 0]  # the columns by finite differences (across: _across_column)
        # params' residuals and the first iteration's finite differences in one stack, these from params' answers
        first = self._residuals([params] + [_stepped(params, k) for k in turned], samples,
                                [heads] + [None] * len(turned))
        res, heads, stepped = first[0].res, first[0].heads, [w.res for w in first[1:]]  # stepped: at params stepped
        cost = (res ** 2).sum(axis=1)
        damping = np.full(len(params), 1e-4)
        across = self._across_column(samples) if free[0] else None
        moved = None  # the samples whose params or head angles moved since `stepped` was worked out
        block = np.repeat(np.arange(groups), len(params) // groups)
        going = np.ones(groups, bool)  # the blocks still stepping
        for iteration in range(GN_ITERATIONS):
            if iteration:
                stepped = self._residuals_again([_stepped(params, k) for k in turned], samples, heads, stepped, moved)
            jac = np.empty(res.shape + (len(cols),))
            for j, k in enumerate(cols):
                jac[..., j] = across if k == 0 else (stepped[turned.index(k)] - res) / STEP_RAD
            normal, grad = _normal_rows(jac, res)
            for i in range(len(cols)):  # the damping on the diagonal
                normal[i, i] += damping * (normal[i, i] + 1e-6)
            step = np.zeros_like(params)
            step[:, cols] = -np.linalg.solve(normal.transpose(2, 0, 1), grad.T[..., None])[..., 0]
            step = _clip(step, -MAX_STEP, MAX_STEP)
            trial = _bounded(params + step)
            trial[:, 1] = _clip(trial[:, 1], samples.roll_lo, samples.roll_hi)
            trial_res, trial_heads = self._residual(trial, samples, heads)
            trial_cost = (trial_res ** 2).sum(axis=1)
            better = (trial_cost < cost) & going[block]
            params[better], res[better], cost[better] = trial[better], trial_res[better], trial_cost[better]
            heads = [np.where(better[:, None], t, h) for t, h in zip(trial_heads, heads)]
            moved = np.flatnonzero(better)
            damping = np.where(better, damping * 0.3, damping * 10.0)
            for k in np.flatnonzero(going):
                going[k] = np.abs(step[better & (block == k)]).max(initial=0.0) >= FIT_STOP
            if not going.any():
                break
        return params, heads

    def _pose(self, params: np.ndarray, samples: _Samples,
              yaw: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """The waist's rotation and position for params; yaw: their _yaw where the caller has it."""
        roll = principal_turn(0, params[:, 1])
        yaw = principal_turn(2, self._yaw(params, samples) if yaw is None else yaw)
        rot = yaw @ samples.base_rot @ roll
        pos = samples.at + params[:, :1] * samples.across
        return rot, pos

    def _yaw(self, params: np.ndarray, samples: _Samples) -> np.ndarray:
        """The waist's yaw: where samples.slave > 0 the double support's curve at the roll, blended with
        yaw_to; elsewhere params' own (free) yaw; within the standing hips' twist (yaw_room)."""
        if not samples.slave.any():
            return params[:, 2]
        spot = _clip((params[:, 1] + MAX_ROLL_RAD) / (2 * MAX_ROLL_RAD) * (FAMILY_ROLLS - 1), 0, FAMILY_ROLLS - 1 - 1e-9)
        cell = spot.astype(int)
        frac = spot - cell
        row = np.maximum(samples.curve, 0)
        at = row * FAMILY_ROLLS + cell  # the table's flat index: one gather each, not a fancy (row, cell) index
        table = self.table.ravel()
        on_curve = table.take(at) * (1.0 - frac) + table.take(at + 1) * frac
        if self.turn_back and len(self.turn) == len(row):  # turned back as the plan's heading turns, within the twist
            low, high = self.yaw_room
            on_curve = _clip(on_curve + self.turn, np.minimum(low, on_curve), np.maximum(high, on_curve))
        yaw = samples.slave * on_curve + (1.0 - samples.slave) * samples.yaw_to
        if len(self.yaw_room[0]) == len(yaw):  # within the standing hips' twist (where both allow one)
            low, high = self.yaw_room
            yaw = np.where(low <= high, _clip(yaw, low, high), yaw)
        return yaw

    def _aims(self, samples: _Samples) -> list[np.ndarray]:
        """Each leg's tail axis as its goal has it (F, 3): the same for every residual of one placement."""
        if samples.aims is None:
            samples.aims = [planar.aim_of(goal) for planar, goal in zip(self.legs, samples.goals)]
        return samples.aims

    def _residuals_again(self, trials: list[np.ndarray], samples: _Samples, heads: list[np.ndarray],
                         known: list[np.ndarray | None], rows: np.ndarray | None) -> list[np.ndarray]:
        """_residual's residuals (F, R) of each of trials where known has them from the same samples but at rows
        (None: all), whose params or heads moved since: a sample's residuals are its own inputs' alone, and _fit's
        finite differences of the samples a step did not better (about half of them) are the ones before."""
        if known[0] is None or rows is None:
            return [worked.res for worked in self._residuals(trials, samples, [heads] * len(trials))]
        if len(rows):
            for res, part in zip(known, self._residuals(trials, samples, [heads] * len(trials), rows)):
                res[rows] = part.res
        return known

    def _residual(self, params: np.ndarray, samples: _Samples, heads: list[np.ndarray],
                  rows: np.ndarray | None = None):
        """The residuals (F, R) of params and the legs' head angles; rows: of those samples only (the yaw taken
        over all of them: _yaw reads its tables by the whole samples' length)."""
        return self._residuals([params], samples, [heads], rows)[0][:2]

    def _residuals(self, trials: list[np.ndarray], samples: _Samples, heads: list[list[np.ndarray] | None],
                   rows: np.ndarray | None = None) -> list["_Worked"]:
        """_residual of each of trials (F, 3), from its legs' head angles heads (None: the first trial's answer),
        worked out as one stack of samples, trial after trial, both legs' hips in one head solve (PlanarPair): the
        per-call work once. A sample's arithmetic is its own alone (elementwise, the stacked 3x3 products a frame
        each, one BLAS dot product a row for the lever), so each trial gets the bits it gets apart; legs that do
        not pair are worked out apart."""
        yaws = [self._yaw(params, samples) for params in trials]
        if rows is not None:
            aims = self._aims(samples)
            trials, yaws, samples = [p[rows] for p in trials], [y[rows] for y in yaws], samples.take(rows)
            heads = [None if h is None else [x[rows] for x in h] for h in heads]
            samples.aims = [aim[rows] for aim in aims]
        if self.pair is None:
            return self._apart(trials, yaws, samples, heads)
        count, n = len(trials), len(samples.xy)
        stack = self._stack(samples, count)
        params, yaw = (trials[0], yaws[0]) if count == 1 else (np.concatenate(trials), np.concatenate(yaws))
        rot, pos = self._pose(params, stack, yaw)
        hips = self.pair.plane_misses(rot, pos, stack.targets, stack.goal_at, heads)
        if hips is None:  # some sample cannot be aimed in closed form: each leg and trial apart
            return self._apart(trials, yaws, samples, heads)
        miss, aimed = hips
        res = np.empty((count, n, 5))
        res[:, :, 0] = self._command_miss(rot, pos, stack).reshape(count, n)
        res[:, :, 1:3] = (stack.hips * miss).transpose(0, 2, 1)
        res[:, :, 3] = (stack.yaw_w * (yaw - stack.yaw_to)).reshape(count, n)
        res[:, :, 4] = (stack.roll_w * (params[:, 1] - stack.roll_to) + ROLL_PRIOR * params[:, 1]).reshape(count, n)
        return [_Worked(res[k], [aimed[(2 * k + leg) * n:(2 * k + leg + 1) * n] for leg in range(2)],
                        (rot[k * n:(k + 1) * n], pos[k * n:(k + 1) * n])) for k in range(count)]

    def _apart(self, trials: list[np.ndarray], yaws: list[np.ndarray], samples: _Samples,
               heads: list[list[np.ndarray] | None]) -> list["_Worked"]:
        """_residuals one trial and leg at a time (legs that do not pair, or a sample not aimed in closed form)."""
        out = []
        for params, yaw, start in zip(trials, yaws, heads):
            rot, pos = self._pose(params, samples, yaw)
            frame = frames_last_of(rot, pos)
            res = [self._command_miss(rot, pos, samples)]
            out_heads = []
            for planar, head, goal, weight, aim in zip(self.legs, out[0][1] if start is None else start,
                                                       samples.goals, samples.hips, self._aims(samples)):
                miss, head = planar.plane_miss(None, goal, head, aim, frame)
                res.append(weight * miss)
                out_heads.append(head)
            res.append(samples.yaw_w * (yaw - samples.yaw_to))
            res.append(samples.roll_w * (params[:, 1] - samples.roll_to) + ROLL_PRIOR * params[:, 1])
            out.append(_Worked(np.column_stack(res), out_heads, (rot, pos)))
        return out

    def _command_miss(self, rot: np.ndarray, pos: np.ndarray, samples: "_Samples | _Stack") -> np.ndarray:
        """The upper body's miss across (F,) of the waist at rot, pos: rot @ lever as one BLAS product over the
        frames' rows (numpy's stacked product calls BLAS once a frame): the same bits, a tenth of the time."""
        lever = rotate_points(rot, self.lever[None])[:, 0]
        return samples.command * np.einsum("fi,fi->f", pos + lever - samples.upright, samples.across)

    def _stack(self, samples: _Samples, count: int) -> _Stack:
        """samples side by side for count trials (_Stack), built at its first use in a placement."""
        stack = samples.stacks.get(count)
        if stack is None:
            def tiled(a: np.ndarray) -> np.ndarray:
                return a if count == 1 else np.concatenate([a] * count)
            legs = np.concatenate(self._aims(samples)), np.concatenate([goal[:, :3, 3] for goal in samples.goals])
            stack = _Stack(*[tiled(getattr(samples, name)) for name in TILED], *[tiled(a) for a in legs],
                           np.stack(samples.hips))
            samples.stacks[count] = stack
        return stack


def _stepped(params: np.ndarray, column: int) -> np.ndarray:
    """params with their column moved by the finite-difference step."""
    out = params.copy()
    out[:, column] += STEP_RAD
    return out


def _ramp_samples(period_s: float) -> int:
    return max(1, int(round(RAMP_S / period_s)))


MAX_STEP = np.array([0.02, 0.1, 0.1])  # one iteration moves the waist at most this far across (m), in roll, in yaw
MAX_YAW_RAD = 0.33  # the hip's twist follows the foot within 20 degrees (core.balance.legs)


def _bounded(params: np.ndarray) -> np.ndarray:
    out = params.copy()
    out[:, 1] = _clip(out[:, 1], -MAX_ROLL_RAD, MAX_ROLL_RAD)
    out[:, 2] = _clip(out[:, 2], -MAX_YAW_RAD, MAX_YAW_RAD)
    return out


def _upper_lever(tree: KinematicTree, legs: list[PlanarLeg], model: MassModel, rest: np.ndarray) -> np.ndarray:
    """The CoM of the links no leg joint moves, in the waist's frame, at the median posture."""
    moved = {link for p in legs for link in p.leg.links}
    keep = np.array([int(k) not in moved for k in model.links])
    upper = model.subset(keep)
    q = np.median(rest, axis=0)[None]
    poses = tree.forward(q, pose_matrices(np.eye(3)[None], np.zeros((1, 3))))[0, upper.links]
    com = np.einsum("kij,kj->ki", poses[:, :3, :3], upper.com_local) + poses[:, :3, 3]
    return np.einsum("k,ki->i", upper.mass, com) / upper.total
