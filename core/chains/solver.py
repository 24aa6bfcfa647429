"""Batched Levenberg-Marquardt for one chain, all frames at once.

Every frame is its own small least-squares problem (a handful of joints);
solving them as stacked arrays with analytic Jacobians is what makes the
retarget run thousands of frames per second in numpy.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ..motion.filtering import rate_limit  # noqa: F401  (per-frame step limit; long imported from here)
from ..motion.frames import BLOCK_FRAMES, frame_blocks
from .batched import spd_solve
from .points import RobotChain, RobotPath
from ..model.kinematics import FIXED, PRISMATIC, REVOLUTE, KinematicTree
from ..model.transforms import axis_angle_to_matrix


@dataclass
class ChainKinematics:
    """Precomputed index arrays to evaluate a chain's reference points quickly.

    Points are measured from the chain's origin, the points of `extra` paths (see build)
    from their own reference point: one evaluation serves several sets of points on the
    same links (a leg's shape and its foot).
    """

    chain: RobotChain
    point_link: np.ndarray  # (M,) link per reference point, all paths stacked
    point_local: np.ndarray  # (M, 3)
    columns: np.ndarray  # (V,) q columns of the chain's variables
    mask: np.ndarray  # (M, V) True where variable v moves point i
    path_slices: list[slice]  # rows of the chain's own paths
    origin_mask: np.ndarray  # (V,) True where variable v moves the chain's origin
    groups: list[tuple[int, np.ndarray, np.ndarray, int]]  # (link, rows, locals (P, 3), reference)
    references: list[tuple[int, np.ndarray]]  # (link, local point) points are measured from; [0]: origin
    row_reference: np.ndarray  # (M,) index into references per point
    reference_mask: np.ndarray  # (R, V) True where variable v moves reference r

    @classmethod
    def build(cls, tree: KinematicTree, chain: RobotChain,
              extra: list[tuple[RobotPath, tuple[int, np.ndarray]]] = ()) -> "ChainKinematics":
        """extra: further paths on the chain's links (moved by the same variables only), each
        with the reference (link, local point) its points are measured from; their rows follow
        the chain's own."""
        paths = list(chain.paths) + [path for path, _ in extra]
        references = [(int(link), np.asarray(local, dtype=float)) for link, local in
                      [chain.origin] + [reference for _, reference in extra]]
        point_link = np.concatenate([p.point_link for p in paths])
        point_local = np.concatenate([p.point_local for p in paths])
        row_reference = np.concatenate([np.full(len(p.point_link), 0) for p in chain.paths]
                                       + [np.full(len(p.point_link), r + 1) for r, (p, _) in enumerate(extra)])
        columns = np.array([tree.qindex[v] for v in chain.variables], dtype=int)
        def moves(link):
            ancestors = set()
            while link >= 0:
                ancestors.add(int(link))
                link = tree.parent[link]
            return [v in ancestors for v in chain.variables]
        mask = np.array([moves(link) for link in point_link], dtype=bool).reshape(len(point_link), -1)
        reference_mask = np.array([moves(link) for link, _ in references], dtype=bool).reshape(len(references), -1)
        slices, start = [], 0
        for p in chain.paths:
            slices.append(slice(start, start + len(p.point_link)))
            start += len(p.point_link)
        groups = []
        for link, ref in dict.fromkeys(zip(point_link.tolist(), row_reference.tolist())):
            rows = np.flatnonzero((point_link == link) & (row_reference == ref))
            groups.append((int(link), rows, point_local[rows], int(ref)))
        return cls(chain, point_link, point_local, columns, mask, slices, reference_mask[0], groups,
                   references, row_reference, reference_mask)

    def __post_init__(self):
        self._steps = None  # read from the tree on the first evaluate (see _prepare)

    def _prepare(self, tree: KinematicTree) -> list:
        """What evaluate does per chain link, read from the tree once."""
        variables = list(self.chain.variables)
        self._steps, self._joints = _steps(tree, self.chain)
        self._free = 1.0 - self.reference_mask.T.astype(float)  # (V, R) 1 where v does not move reference r
        self._reference_runs = _runs(self.row_reference)  # (reference, rows) in order: rows share a reference
        self._unmoved = [_runs(~moved) for moved in self.mask.T]  # per variable: runs of points it does not move
        self._prismatic = [variables.index(v) for v in variables if tree.kind[v] == PRISMATIC]
        return self._steps

    def evaluate(self, tree: KinematicTree, anchor: np.ndarray, q: np.ndarray, jacobian: bool):
        """Reference points (F, M, 3) relative to the chain origin (an extra path's relative to
        its reference), optionally with the Jacobian (F, M, 3, V).

        anchor: (F, 4, 4) world pose of the chain's anchor link (root pose if none).
        Internally frames run along the LAST axis: a rotation is its three columns, each
        (3, F), a point is (3, F), so every product is a handful of contiguous vector operations.
        """
        steps = self._steps or self._prepare(tree)
        nframes = anchor.shape[0]
        base = (tuple(np.ascontiguousarray(anchor[:, :3, k].T) for k in range(3)),
                np.ascontiguousarray(anchor[:, :3, 3].T))
        frames, axes, joints = self._link_frames(steps, base, q)
        refs, points = self._points(frames, nframes)
        if not jacobian:
            return points.transpose(2, 0, 1), None
        return points.transpose(2, 0, 1), self._jacobian(points, refs, axes, joints, nframes)

    def _link_frames(self, steps: list, base: tuple, q: np.ndarray) -> tuple[dict, dict, dict]:
        """Each chain link's pose (its rotation's columns and position, each (3, F)), and each variable
        joint's world axis and position, link by link from the anchor `base`."""
        values, cos, sin = self._joints.values(q)
        frames, axes, joints = {}, {}, {}
        for link, parent, shift, turn, kind, axis, principal, sign, variable, row in steps:
            cols, pos = frames.get(parent, base)
            if parent < 0:  # the chain starts at the root: the anchor is the root pose
                frames[link] = base
                continue
            if shift is not None:
                pos = pos + _apply(cols, shift)
            if turn is not None:
                cols = tuple(_apply(cols, turn[:, k]) for k in range(3))
            if kind != FIXED:
                if sign == 0.0:
                    axis_w = _apply(cols, axis)
                else:
                    axis_w = cols[principal] if sign == 1.0 else -cols[principal]
                if variable:
                    axes[link], joints[link] = axis_w, pos
                if kind == REVOLUTE:
                    cols = _rotate_local(cols, axis, principal, sign, values[row], cos[row], sin[row])
                elif kind == PRISMATIC:
                    pos = pos + axis_w * values[row]
            frames[link] = (cols, pos)
        return frames, axes, joints

    def _points(self, frames: dict, nframes: int) -> tuple[list, np.ndarray]:
        """The references (each (3, F)) and the reference points (M, 3, F), each relative to its reference."""
        refs = []
        for link, local in self.references:
            cols, pos = frames[link]
            refs.append(_apply(cols, local) + pos if local.any() else pos)
        points = np.empty((len(self.point_link), 3, nframes))  # (M, 3, F)
        for link, rows, local, ref in self.groups:  # one product per link, however many points it carries
            cols, pos = frames[link]
            if len(rows) == 1:
                points[rows[0]] = _apply(cols, local[0]) + (pos - refs[ref])
            else:
                turned = local @ np.concatenate(cols).reshape(3, -1)  # (P, 3 * F): np.stack's rows, a C call
                points[rows] = turned.reshape(len(rows), 3, -1) + (pos - refs[ref])
        return refs, points

    def _jacobian(self, points: np.ndarray, refs: list, axes: dict, joints: dict, nframes: int) -> np.ndarray:
        """(F, M, 3, V) of the points (M, 3, F): d(point - reference)/dq_v = axis_v x (point - joint_v)
        - [v moves the reference] axis_v x (reference - joint_v)
        = axis_v x (point - reference + (reference - joint_v) * (1 - [v moves it])).

        Worked axis-major, frames last ((3, M, V, F)): every operand of the products is one contiguous run
        but an axis row repeated over the points, so numpy's buffered iteration copies long runs instead of
        a frame's few numbers at a time (arm and products laid (V, M, 3, F) and read an axis at a time: the
        gait's retarget spent 554 M instructions here, 0.40 G now); the same products and differences, their bits."""
        variables = self.chain.variables
        axes = np.array([axes[v] for v in variables])  # (V, 3, F)
        joints = np.array([joints[v] for v in variables])
        offset = (np.array(refs)[None] - joints[:, None]) * self._free[:, :, None, None]  # (V, R, 3, F)
        arm = np.empty((3, len(self.point_link), len(variables), nframes))  # (3, M, V, F)
        turned = points.transpose(1, 0, 2)[:, :, None]  # (3, M, 1, F)
        for ref, rows in self._reference_runs:
            np.add(turned[:, rows], offset[:, ref].transpose(1, 0, 2)[:, None], out=arm[:, rows])
        for v, unmoved in enumerate(self._unmoved):  # 0 where v does not move the point (x * 0, as the mask did)
            for rows in unmoved:
                arm[:, rows, v] *= 0.0
        a = axes.transpose(1, 0, 2)  # (3, V, F): each row multiplies every point's
        jac = np.empty((nframes, len(self.point_link), 3, len(variables)))
        cross = jac.transpose(2, 1, 3, 0)  # (3, M, V, F), written through
        np.subtract(a[1] * arm[2], a[2] * arm[1], out=cross[0])
        np.subtract(a[2] * arm[0], a[0] * arm[2], out=cross[1])
        np.subtract(a[0] * arm[1], a[1] * arm[0], out=cross[2])
        for v in self._prismatic:
            cross[:, :, v] = axes[v][:, None] * (self._free[v, self.row_reference] * self.mask[:, v])[:, None]
        return jac


def _runs(flags: np.ndarray) -> list:
    """Runs of equal values in `flags` (M,) as (value, slice); for a boolean array, the True runs' slices."""
    if len(flags) == 0:
        return []
    cuts = np.flatnonzero(np.diff(flags.astype(int))) + 1
    runs = [(flags[a].item(), slice(int(a), int(b))) for a, b in zip(np.r_[0, cuts], np.r_[cuts, len(flags)])]
    return [rows for value, rows in runs if value is True] if flags.dtype == bool else runs


def _steps(tree: KinematicTree, chain: RobotChain) -> tuple[list, "_JointValues"]:
    """Per chain link, parents first: (link, parent, origin shift or None, origin rotation or None,
    joint kind, axis, principal axis index, its sign (0.0: not a principal axis), chain variable?,
    row of its joint value); and how to read the joint values from q."""
    steps, variables, joints = [], set(int(v) for v in chain.variables), []
    for link in chain.links:
        origin = tree.origins[link]
        shift = origin[:3, 3].copy() if origin[:3, 3].any() else None
        turn = origin[:3, :3].copy() if tree.origin_rotates[link] else None
        axis = np.asarray(tree.axes[link], dtype=float).copy()
        principal = np.flatnonzero(np.abs(axis) == 1.0)
        k, sign = (int(principal[0]), float(axis[principal[0]])) if len(principal) == 1 else (0, 0.0)
        kind = int(tree.kind[link])
        row = -1
        if kind != FIXED:
            row = len(joints)
            joints.append((int(tree.qindex[link]), float(tree.qscale[link]), float(tree.qoffset[link]), sign))
        steps.append((int(link), int(tree.parent[link]), shift, turn, kind, axis, k, sign, int(link) in variables, row))
    return steps, _JointValues(joints)


class _JointValues:
    """Joint positions (J, F) of a chain's joints from q (F, n), with cos and sin(angle) * axis sign."""

    def __init__(self, joints: list[tuple[int, float, float, float]]):
        col = np.array([j[0] for j in joints], dtype=int)
        self.columns = np.maximum(col, 0)
        self.scale = np.array([j[1] if j[0] >= 0 else 0.0 for j in joints])[:, None]
        self.offset = np.array([j[2] if j[0] >= 0 else 0.0 for j in joints])[:, None]
        self.sign = np.array([j[3] if j[3] != 0.0 else 1.0 for j in joints])[:, None]
        self.plain = bool(np.all(col >= 0) and np.all(self.scale == 1.0) and np.all(self.offset == 0.0))
        self.signed = bool(np.any(self.sign != 1.0))

    def values(self, q: np.ndarray):
        if len(self.columns) == 0:
            return None, None, None
        values = q[:, self.columns].T
        values = values.copy() if self.plain else values * self.scale + self.offset
        sin = np.sin(values)
        return values, np.cos(values), sin * self.sign if self.signed else sin


def _apply(cols: tuple, vec: np.ndarray) -> np.ndarray:
    """A rotation given by its columns (3 x (3, F)) times a constant vector (3,) -> (3, F),
    skipping zero components."""
    out = None
    for k in range(3):
        if vec[k] != 0.0:
            term = cols[k] * vec[k]
            out = term if out is None else out + term
    return np.zeros(cols[0].shape) if out is None else out


def _rotate_local(cols: tuple, axis: np.ndarray, principal: int, sign: float, angle: np.ndarray,
                  cos: np.ndarray, sin: np.ndarray) -> tuple:
    """rot @ Rot(axis, angle) for a rotation given by its columns; sin is sin(angle) * sign.

    URDF axes are nearly always +-x, +-y or +-z (sign != 0): then only two columns mix.
    """
    if sign != 0.0:
        k = principal
        i, j = (k + 1) % 3, (k + 2) % 3
        out = list(cols)
        out[i] = cos * cols[i] + sin * cols[j]
        out[j] = cos * cols[j] - sin * cols[i]
        return tuple(out)
    turn = axis_angle_to_matrix(axis, angle)  # (F, 3, 3)
    return tuple(cols[0] * turn[:, 0, k] + cols[1] * turn[:, 1, k] + cols[2] * turn[:, 2, k] for k in range(3))


FREE_SHARE = 0.01  # a direction whose Gauss-Newton eigenvalue is below this share of the mean is free


@dataclass
class SolveOptions:
    iterations: int = 8
    smoothness: float = 0.02
    rest_prior: float = 0.01
    objective: str = "l2"
    rest: np.ndarray | None = None  # (n,) posture the prior leans toward; None: the zero pose (clipped)
    free_prior: float = 0.0  # pull toward `rest` along only the directions the targets leave free (free_metric)


def solve_chain(tree: KinematicTree, kin: ChainKinematics, anchor: np.ndarray, q: np.ndarray,
                targets: np.ndarray, weights: np.ndarray, options: SolveOptions | None = None,
                max_step: np.ndarray | None = None) -> None:
    """Move the chain's joint columns of q (F, n) so its points reach targets (F, M, 3).

    weights (M,) already include the 1/length normalisation. Joint limits are
    hard bounds (projected steps). All frames are solved at once from the
    current q; then frames that jump further than `max_step` (V,) from their
    predecessor are solved again starting from it, so a motion that reaches a
    limit stays on one branch instead of flipping between two equally good ones.

    Bodies kept apart: core.chains.separation.separate_chain after this solve.
    """
    options = options or SolveOptions()
    cols = kin.columns
    if len(cols) == 0:
        return
    problem = _Problem(tree, kin, anchor, q, targets, weights, options)
    # every frame from its own start, none from an interpolation of others: a grid of frames solved
    # first made the motion depend on where the clip starts (a held pose before it moved the grid).
    # (Three more iterations, the grid's refinement, buy the H1's legs at their limits 0.02 deg of limb
    # direction for 1.3x the solve's CPU: not spent.)
    x, cost = _in_blocks(problem, np.clip(q[:, cols], problem.lower, problem.upper), np.arange(len(q)))
    if max_step is not None:
        max_step = np.asarray(max_step, dtype=float)
        x = rate_limit(_repair_jumps(problem, x, cost, max_step), max_step)
    q[:, cols] = x


def _in_blocks(problem: "_Problem", x: np.ndarray, frames: np.ndarray, iterations: int | None = None,
               size: int = 4 * BLOCK_FRAMES) -> tuple[np.ndarray, np.ndarray]:
    """problem.solve over `frames` in blocks, so a long clip's Jacobians never all exist at once.

    Up to `size` frames this is one solve; beyond, each block's first frame is pulled toward
    itself rather than toward the last frame of the block before (the smoothness term is weak).
    """
    if len(x) <= size:
        return problem.solve(x, None, None if len(frames) == len(problem.q) else frames, iterations=iterations)
    out_x, out_cost = np.empty_like(x), np.empty(len(x))
    for block in frame_blocks(len(x), size):
        out_x[block], out_cost[block] = problem.solve(x[block], None, frames[block], iterations=iterations)
    return out_x, out_cost


def _repair_jumps(problem: "_Problem", x: np.ndarray, cost: np.ndarray, max_step: np.ndarray,
                  horizon: int | None = None, iterations: int = 3) -> np.ndarray:
    """Track past each jump frame by frame, warm-started from the frame before.

    All jumps advance together (one batched solve per step). Tracking stops
    where it meets the first solution again, or where staying on the branch
    costs clearly more than the free optimum (a real change of posture);
    `horizon` frames at most (None: no bound). A bound of 16 frames left the
    last 14 of the H1's 30 frames in a worse basin at the walk's crouch (a leg
    1.2 rad off, 3x the reach error) once no grid carried the good one there.
    """
    x, cost = x.copy(), cost.copy()
    active = np.flatnonzero((np.abs(np.diff(x, axis=0)) > max_step).any(axis=1)) + 1
    tracker = _Problem(problem.tree, problem.kin, problem.anchor, problem.q, problem.targets,
                       problem.weights, replace(problem.options, iterations=iterations))
    for _ in range(len(x) if horizon is None else horizon):
        if len(active) == 0:
            break
        prev = x[active - 1]
        trial, trial_cost = tracker.solve(prev.copy(), prev, active)
        step_new = np.abs(trial - prev) / max_step
        step_old = np.abs(x[active] - prev) / max_step
        keep = (trial_cost <= 1.5 * cost[active] + 1e-4) & (step_new.max(axis=1) < step_old.max(axis=1))
        x[active[keep]], cost[active[keep]] = trial[keep], trial_cost[keep]
        nxt = active[keep] + 1
        nxt = nxt[nxt < len(x)]
        jumping = (np.abs(x[nxt] - x[nxt - 1]) > max_step).any(axis=1)
        active = nxt[jumping]
    return x


def kept_better(better: np.ndarray, held: tuple, tried: tuple) -> tuple:
    """Per frame of an LM step the trial's arrays where it did better, else the ones held: the trial's own
    arrays when every frame did (no copy), else the held ones written over in place.

    A step's points, residuals and Jacobians are kept for the frames still moving only, so no step gathers
    them from, or scatters them back into, arrays over all the frames (the same values, fewer copies)."""
    if better.all():
        return tried
    for old, new in zip(held, tried):
        old[better] = new[better]
    return held


class _Problem:
    """One chain's weighted least-squares problem over frames, with LM iterations."""

    def __init__(self, tree, kin, anchor, q, targets, weights, options: SolveOptions):
        self.tree, self.kin, self.anchor, self.q = tree, kin, anchor, q
        self.targets, self.weights, self.options = targets, weights, options
        cols = kin.columns
        self.lower, self.upper = tree.lower[cols], tree.upper[cols]
        self.rest = np.clip(0.0 if options.rest is None else options.rest[cols], self.lower, self.upper)

    def solve(self, x: np.ndarray, ref: np.ndarray | None, frames: np.ndarray | None = None,
              tolerance: float = 1e-3, iterations: int | None = None):
        """LM from x on `frames` (all if None). ref None: pull toward the previous frame.

        Frames whose step falls below `tolerance` (radians) leave the active set,
        so late iterations only pay for the frames still moving.
        """
        opts = self.options
        run = _Run(self, x, ref, frames)
        nframes = len(run.x)
        weights = np.broadcast_to(self.weights, run.targets.shape[:2])
        lam = np.full(nframes, 1e-3)
        smooth, prior = opts.smoothness, opts.rest_prior
        sw = np.sqrt(weights)
        pts, jac, res, cost = run.evaluate(run.x, slice(None), sw)  # then the active frames' only, in order
        x, targets = run.x, run.targets
        active = np.arange(nframes)
        for _ in range(opts.iterations if iterations is None else iterations):
            if len(active) == 0:
                break
            if len(active) == nframes:  # views instead of gathered copies while all frames move
                active = slice(None)
            sw_a = sw[active]
            xa = x[active].copy()  # x changes below; xa is where this step started
            if opts.objective == "l1":  # iteratively reweighted least squares
                dist = np.linalg.norm(pts - targets[active], axis=-1)
                sw_a = np.sqrt(weights[active] / np.maximum(dist, 1e-3))
                res = (pts - targets[active]) * sw_a[..., None]
                # the cost a trial must beat is the one under the new weights
                cost[active] = ((res ** 2).sum((1, 2))
                                + smooth * ((xa - run.reference(active)) ** 2).sum(1)
                                + prior * ((xa - self.rest) ** 2).sum(1))
            system, grad, metric = self._system(run, jac, res, sw_a, xa, active, lam[active])
            if metric is not None:  # the metric is the start's: the step and the trial both pay it
                cost[active] = cost[active] + _quadratic(metric, xa - self.rest)
            step = -spd_solve(system, grad)
            trial = np.clip(xa + step, self.lower, self.upper)
            t_pts, t_jac, t_res, t_cost = run.evaluate(trial, active, sw_a)
            if metric is not None:
                t_cost = t_cost + _quadratic(metric, trial - self.rest)
            better = t_cost <= cost[active]
            gain = cost[active] - t_cost
            rows = np.arange(nframes) if isinstance(active, slice) else active
            won = rows[better]
            x[won], cost[won] = trial[better], t_cost[better]
            pts, jac, res = kept_better(better, (pts, jac, res), (t_pts, t_jac, t_res))
            if metric is not None:  # the next metric is measured where each frame then stands
                cost[rows] -= _quadratic(metric, x[rows] - self.rest)
            lam[active] = np.where(better, np.maximum(lam[active] * 0.3, 1e-7), np.minimum(lam[active] * 10.0, 1e7))
            # a frame is done when its step is tiny or no longer buys a relative gain
            moving = (np.abs(trial - xa).max(axis=1) >= tolerance) & (gain > 1e-3 * t_cost + 1e-12)
            going = (moving | ~better) & (lam[rows] < 1e6)
            active = rows[going]
            if not going.all():
                pts, jac, res = pts[going], jac[going], res[going]
        return x, cost

    def _system(self, run: "_Run", jac: np.ndarray, res: np.ndarray, sw: np.ndarray, xa: np.ndarray, active,
                lam: np.ndarray):
        """The damped Gauss-Newton system (F, V, V) and gradient (F, V) at xa of the active frames, and the
        free prior's metric (None without it), added to both."""
        opts = self.options
        smooth, prior = opts.smoothness, opts.rest_prior
        count, nvar = xa.shape
        eye = np.eye(nvar)
        jw = (jac * sw[..., None, None]).reshape(count, -1, nvar)
        jwt = jw.transpose(0, 2, 1)
        hess = jwt @ jw
        grad = ((jwt @ res.reshape(count, -1, 1))[..., 0]
                + smooth * (xa - run.reference(active)) + prior * (xa - self.rest))
        diag = np.einsum("fii->fi", hess)
        system = hess + (smooth + prior) * eye + lam[:, None, None] * (eye * (diag[:, None, :] + 1e-6))
        metric = None
        if opts.free_prior > 0.0:
            metric = opts.free_prior * free_metric(hess)
            system = system + metric
            grad = grad + (metric @ (xa - self.rest)[..., None])[..., 0]
        return system, grad, metric


class _Run:
    """One solve's frames of a _Problem: their joint values x (F, V), updated in place, and how a trial of
    some of them is evaluated (points, Jacobian, weighted residuals, cost)."""

    def __init__(self, problem: _Problem, x: np.ndarray, ref: np.ndarray | None, frames: np.ndarray | None):
        sel = slice(None) if frames is None else frames
        self.problem, self.ref = problem, ref
        self.anchor, self.targets = problem.anchor[sel], problem.targets[sel]
        self.q = problem.q[sel].copy()
        self.x = x.copy()

    def reference(self, rows):
        """Where the smoothness term pulls the rows: ref, else each frame's predecessor (the first itself)."""
        if self.ref is not None:
            return self.ref[rows]
        if isinstance(rows, slice):
            return np.concatenate([self.x[:1], self.x[:-1]], axis=0)
        return self.x[np.maximum(rows - 1, 0)]

    def evaluate(self, xv: np.ndarray, rows, sw: np.ndarray):
        p = self.problem
        opts = p.options
        qr = self.q[rows]
        qr[:, p.kin.columns] = xv
        pts, jac = p.kin.evaluate(p.tree, self.anchor[rows], qr, True)
        res = (pts - self.targets[rows]) * sw[..., None]
        cost = ((res ** 2).sum((1, 2)) + opts.smoothness * ((xv - self.reference(rows)) ** 2).sum(1)
                + opts.rest_prior * ((xv - p.rest) ** 2).sum(1))
        return pts, jac, res, cost


def free_metric(hess: np.ndarray, share: float = FREE_SHARE) -> np.ndarray:
    """(F, V, V) ~1 along the directions the targets leave free, ~0 along those they decide: eps (H + eps I)^-1
    of the targets' Gauss-Newton matrix H (F, V, V), eps `share` of its mean eigenvalue. A hand given a direction
    only leaves one turn free (its roll with a compensating bend): a pull toward rest along it alone decides
    that turn by the least rotation from rest, on every frame alike, and barely moves (eps / eigenvalue) what the
    targets decide. The costs solve returns leave it out: the jump repair compares the targets' fit."""
    nvar = hess.shape[-1]
    eps = share * np.einsum("fii->f", hess)[:, None, None] / nvar + 1e-12
    return eps * np.linalg.inv(hess + eps * np.eye(nvar))


def _quadratic(metric: np.ndarray, d: np.ndarray) -> np.ndarray:
    """(F,) d^T metric d for d (F, V) and metric (F, V, V)."""
    return np.einsum("fi,fij,fj->f", d, metric, d)


ChainProblem = _Problem  # one chain's problem: its shape is what making room costs (core.chains.separation)
