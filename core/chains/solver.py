"""Batched Levenberg-Marquardt for one chain, all frames at once.

Every frame is its own small least-squares problem (a handful of joints);
solving them as stacked arrays with analytic Jacobians is what makes the
retarget run thousands of frames per second in numpy.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..motion.frames import BLOCK_FRAMES, frame_blocks
from .points import RobotChain
from ..model.kinematics import PRISMATIC, REVOLUTE, KinematicTree
from ..model.transforms import axis_angle_to_matrix


@dataclass
class ChainKinematics:
    """Precomputed index arrays to evaluate a chain's reference points quickly."""

    chain: RobotChain
    point_link: np.ndarray  # (M,) link per reference point, all paths stacked
    point_local: np.ndarray  # (M, 3)
    columns: np.ndarray  # (V,) q columns of the chain's variables
    mask: np.ndarray  # (M, V) True where variable v moves point i
    path_slices: list[slice]
    origin_mask: np.ndarray  # (V,) True where variable v moves the chain's origin
    groups: list[tuple[int, np.ndarray, np.ndarray]] = None  # (link, point rows, locals (P, 3)) per link

    @classmethod
    def build(cls, tree: KinematicTree, chain: RobotChain) -> "ChainKinematics":
        point_link = np.concatenate([p.point_link for p in chain.paths])
        point_local = np.concatenate([p.point_local for p in chain.paths])
        columns = np.array([tree.qindex[v] for v in chain.variables], dtype=int)
        def moves(link):
            ancestors = set()
            while link >= 0:
                ancestors.add(int(link))
                link = tree.parent[link]
            return [v in ancestors for v in chain.variables]
        mask = np.array([moves(link) for link in point_link], dtype=bool).reshape(len(point_link), -1)
        origin_mask = np.array(moves(chain.origin[0]), dtype=bool)
        slices, start = [], 0
        for p in chain.paths:
            slices.append(slice(start, start + len(p.point_link)))
            start += len(p.point_link)
        groups = [(int(link), np.flatnonzero(point_link == link), point_local[point_link == link])
                  for link in dict.fromkeys(point_link.tolist())]
        return cls(chain, point_link, point_local, columns, mask, slices, origin_mask, groups)

    def evaluate(self, tree: KinematicTree, anchor: np.ndarray, q: np.ndarray, jacobian: bool):
        """Reference points relative to the chain origin (F, M, 3), optionally with the Jacobian.

        anchor: (F, 4, 4) world pose of the chain's anchor link (root pose if none).
        Internally frames run along the LAST axis (rotations (3, 3, F), points
        (3, F)) so every product is a handful of contiguous vector operations.
        """
        frames, axes, origins = {}, {}, {}
        base = (np.ascontiguousarray(anchor[:, :3, :3].transpose(1, 2, 0)),
                np.ascontiguousarray(anchor[:, :3, 3].T))
        for link in self.chain.links:
            parent = int(tree.parent[link])
            rot, pos = frames.get(parent, base)
            if parent < 0:  # the chain starts at the root: the anchor is the root pose
                frames[link] = (rot, pos)
                continue
            origin = tree.origins[link]
            pos = pos + _apply(rot, origin[:3, 3])
            if tree.origin_rotates[link]:
                rot = np.einsum("imf,mk->ikf", rot, origin[:3, :3])
            kind = tree.kind[link]
            if kind != 0:
                value = tree.joint_value(q, link)
                axis = tree.axes[link]
                axis_w = _apply(rot, axis)
                axes[link], origins[link] = axis_w, pos
                if kind == REVOLUTE:
                    rot = _rotate_local(rot, axis, value)
                elif kind == PRISMATIC:
                    pos = pos + axis_w * value
            frames[link] = (rot, pos)
        rot, pos = frames[int(self.chain.origin[0])]
        origin = _apply(rot, self.chain.origin[1]) + pos
        points = np.empty((len(self.point_link), 3, anchor.shape[0]))  # (M, 3, F)
        for link, rows, local in self.groups:  # one product per link, however many points it carries
            rot, pos = frames[link]
            if len(rows) == 1:
                points[rows[0]] = _apply(rot, local[0]) + (pos - origin)
            else:
                turned = local @ rot.transpose(1, 0, 2).reshape(3, -1)  # (P, 3 * F)
                points[rows] = turned.reshape(len(rows), 3, -1) + (pos - origin)
        if not jacobian:
            return points.transpose(2, 0, 1), None
        columns = []
        for v, link in enumerate(self.chain.variables):
            axis_w = axes[link]
            if tree.kind[link] == REVOLUTE:
                # d(point - origin)/dq = axis x (point - origin): the joint's own offset cancels
                arm = points + (origin - origins[link]) * (1.0 - self.origin_mask[v])
                col = _cross(axis_w, arm)
            else:
                col = np.broadcast_to(axis_w * (1.0 - self.origin_mask[v]), points.shape)
            columns.append(col * self.mask[:, v][:, None, None] if not self.mask[:, v].all() else col)
        jac = np.stack(columns, axis=-1)  # (M, 3, F, V)
        return points.transpose(2, 0, 1), jac.transpose(2, 0, 1, 3)


def _cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a (3, F) cross b (..., 3, F) over the component axis, written out."""
    out = np.empty(np.broadcast_shapes(a.shape, b.shape))
    out[..., 0, :] = a[1] * b[..., 2, :] - a[2] * b[..., 1, :]
    out[..., 1, :] = a[2] * b[..., 0, :] - a[0] * b[..., 2, :]
    out[..., 2, :] = a[0] * b[..., 1, :] - a[1] * b[..., 0, :]
    return out


def _apply(rot: np.ndarray, vec: np.ndarray) -> np.ndarray:
    """rot (3, 3, F) times a constant vector (3,) -> (3, F), skipping zero components."""
    out = None
    for k in range(3):
        if vec[k] != 0.0:
            term = rot[:, k] * vec[k]
            out = term if out is None else out + term
    return np.zeros(rot.shape[::2]) if out is None else out


def _rotate_local(rot: np.ndarray, axis: np.ndarray, angle: np.ndarray) -> np.ndarray:
    """rot @ Rot(axis, angle) for rotations (3, 3, F).

    URDF axes are nearly always +-x, +-y or +-z: then only two columns mix.
    """
    principal = np.flatnonzero(np.abs(axis) == 1.0)
    out = np.empty_like(rot)
    if len(principal) == 1:
        k = int(principal[0])
        i, j = (k + 1) % 3, (k + 2) % 3
        c, s = np.cos(angle), axis[k] * np.sin(angle)
        out[:, k] = rot[:, k]
        out[:, i] = c * rot[:, i] + s * rot[:, j]
        out[:, j] = c * rot[:, j] - s * rot[:, i]
        return out
    turn = axis_angle_to_matrix(axis, angle)  # (F, 3, 3)
    for k in range(3):
        out[:, k] = rot[:, 0] * turn[:, 0, k] + rot[:, 1] * turn[:, 1, k] + rot[:, 2] * turn[:, 2, k]
    return out


@dataclass
class SolveOptions:
    iterations: int = 8
    smoothness: float = 0.02
    rest_prior: float = 0.01
    objective: str = "l2"


def solve_chain(tree: KinematicTree, kin: ChainKinematics, anchor: np.ndarray, q: np.ndarray,
                targets: np.ndarray, weights: np.ndarray, options: SolveOptions | None = None,
                max_step: np.ndarray | None = None) -> None:
    """Move the chain's joint columns of q (F, n) so its points reach targets (F, M, 3).

    weights (M,) already include the 1/length normalisation. Joint limits are
    hard bounds (projected steps). All frames are solved at once from the
    current q; then frames that jump further than `max_step` (V,) from their
    predecessor are solved again starting from it, so a motion that reaches a
    limit stays on one branch instead of flipping between two equally good ones.
    """
    options = options or SolveOptions()
    cols = kin.columns
    if len(cols) == 0:
        return
    problem = _Problem(tree, kin, anchor, q, targets, weights, options)
    x, cost = _coarse_to_fine(problem, np.clip(q[:, cols], problem.lower, problem.upper))
    if max_step is not None:
        max_step = np.asarray(max_step, dtype=float)
        x = rate_limit(_repair_jumps(problem, x, cost, max_step), max_step)
    q[:, cols] = x


def rate_limit(x: np.ndarray, max_step: np.ndarray) -> np.ndarray:
    """Limit every joint's change per frame: where a limit forces a switch of
    branch, the robot moves there at its top speed instead of teleporting."""
    out = x.copy()
    jumps = np.flatnonzero((np.abs(np.diff(x, axis=0)) > max_step).any(axis=1))
    if len(jumps) == 0:
        return out
    for f in range(int(jumps[0]) + 1, len(out)):
        out[f] = out[f - 1] + np.clip(x[f] - out[f - 1], -max_step, max_step)
    return out


def _coarse_to_fine(problem: "_Problem", x: np.ndarray, stride: int = 8):
    """Solve every `stride`-th frame fully, then refine all frames from the interpolation.

    Neighbouring frames of a capture differ little, so the interpolated coarse
    solution starts every frame close to its answer and in the same basin as
    its neighbours; the full-rate pass then needs only a few iterations.
    """
    frames = len(x)
    if frames < 8 * stride:
        return _in_blocks(problem, x, np.arange(frames))
    coarse = np.unique(np.append(np.arange(0, frames, stride), frames - 1))
    xc, _ = _in_blocks(problem, x[coarse], coarse)
    every = np.arange(frames)
    start = np.column_stack([np.interp(every, coarse, xc[:, k]) for k in range(x.shape[1])])
    return _in_blocks(problem, start, every, iterations=max(2, (problem.options.iterations + 2) // 3))


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
                  horizon: int = 16, iterations: int = 3) -> np.ndarray:
    """Track past each jump frame by frame, warm-started from the frame before.

    All jumps advance together (one batched solve per step). Tracking stops
    where it meets the first solution again, or where staying on the branch
    costs clearly more than the free optimum (a real change of posture).
    """
    x, cost = x.copy(), cost.copy()
    active = np.flatnonzero((np.abs(np.diff(x, axis=0)) > max_step).any(axis=1)) + 1
    tracker = _Problem(problem.tree, problem.kin, problem.anchor, problem.q, problem.targets,
                       problem.weights, SolveOptions(iterations, problem.options.smoothness,
                                                     problem.options.rest_prior, problem.options.objective))
    for _ in range(horizon):
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


class _Problem:
    """One chain's weighted least-squares problem over frames, with LM iterations."""

    def __init__(self, tree, kin, anchor, q, targets, weights, options: SolveOptions):
        self.tree, self.kin, self.anchor, self.q = tree, kin, anchor, q
        self.targets, self.weights, self.options = targets, weights, options
        cols = kin.columns
        self.lower, self.upper = tree.lower[cols], tree.upper[cols]
        self.rest = np.clip(0.0, self.lower, self.upper)

    def solve(self, x: np.ndarray, ref: np.ndarray | None, frames: np.ndarray | None = None,
              tolerance: float = 1e-3, iterations: int | None = None):
        """LM from x on `frames` (all if None). ref None: pull toward the previous frame.

        Frames whose step falls below `tolerance` (radians) leave the active set,
        so late iterations only pay for the frames still moving.
        """
        opts, cols = self.options, self.kin.columns
        sel = slice(None) if frames is None else frames
        anchor, targets = self.anchor[sel], self.targets[sel]
        q = self.q[sel].copy()
        x = x.copy()
        nframes, nvar = x.shape
        weights = np.broadcast_to(self.weights, targets.shape[:2])
        lam = np.full(nframes, 1e-3)
        eye = np.eye(nvar)
        smooth, prior = opts.smoothness, opts.rest_prior

        def reference(rows):
            if ref is not None:
                return ref[rows]
            if isinstance(rows, slice):
                return np.concatenate([x[:1], x[:-1]], axis=0)
            return x[np.maximum(rows - 1, 0)]

        def evaluate(xv, rows, sw):
            qr = q[rows]
            qr[:, cols] = xv
            pts, jac = self.kin.evaluate(self.tree, anchor[rows], qr, True)
            res = (pts - targets[rows]) * sw[..., None]
            cost = ((res ** 2).sum((1, 2)) + smooth * ((xv - reference(rows)) ** 2).sum(1)
                    + prior * ((xv - self.rest) ** 2).sum(1))
            return pts, jac, res, cost

        sw = np.sqrt(weights)
        pts, jac, res, cost = evaluate(x, slice(None), sw)
        active = np.arange(nframes)
        for _ in range(opts.iterations if iterations is None else iterations):
            if len(active) == 0:
                break
            if len(active) == nframes:  # views instead of gathered copies while all frames move
                active = slice(None)
            sw_a = sw[active]
            xa = x[active].copy()  # x changes below; xa is where this step started
            if opts.objective == "l1":  # iteratively reweighted least squares
                dist = np.linalg.norm(pts[active] - targets[active], axis=-1)
                sw_a = np.sqrt(weights[active] / np.maximum(dist, 1e-3))
                res[active] = (pts[active] - targets[active]) * sw_a[..., None]
                # the cost a trial must beat is the one under the new weights
                cost[active] = ((res[active] ** 2).sum((1, 2))
                                + smooth * ((xa - reference(active)) ** 2).sum(1)
                                + prior * ((xa - self.rest) ** 2).sum(1))
            count = len(xa)
            jw = (jac[active] * sw_a[..., None, None]).reshape(count, -1, nvar)
            jwt = jw.transpose(0, 2, 1)
            hess = jwt @ jw
            grad = ((jwt @ res[active].reshape(count, -1, 1))[..., 0]
                    + smooth * (xa - reference(active)) + prior * (xa - self.rest))
            diag = np.einsum("fii->fi", hess)
            system = hess + (smooth + prior) * eye + lam[active, None, None] * (eye * (diag[:, None, :] + 1e-6))
            step = -np.linalg.solve(system, grad[..., None])[..., 0]
            trial = np.clip(xa + step, self.lower, self.upper)
            t_pts, t_jac, t_res, t_cost = evaluate(trial, active, sw_a)
            better = t_cost <= cost[active]
            gain = cost[active] - t_cost
            rows = np.arange(nframes) if isinstance(active, slice) else active
            won = rows[better]
            x[won], pts[won], jac[won] = trial[better], t_pts[better], t_jac[better]
            res[won], cost[won] = t_res[better], t_cost[better]
            lam[active] = np.where(better, np.maximum(lam[active] * 0.3, 1e-7), np.minimum(lam[active] * 10.0, 1e7))
            # a frame is done when its step is tiny or no longer buys a relative gain
            moving = (np.abs(trial - xa).max(axis=1) >= tolerance) & (gain > 1e-3 * t_cost + 1e-12)
            active = rows[(moving | ~better) & (lam[rows] < 1e6)]
        return x, cost
