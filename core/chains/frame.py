"""One chain, one frame: the kinematics and the solve a live stream needs every few milliseconds.

core.chains.solver is shaped for thousands of frames at once (frames on the last axis, one
numpy call per link serving them all); called on one frame its cost is Python overhead per
link and per point. Here a chain's joint transforms are built for all its links in a few
batched calls, chained by one 4x4 product per link, and the Jacobian comes in a handful of
vector operations: the same reference points and derivatives (tests/core/test_stream.py
checks them against ChainKinematics.evaluate), about four times faster on one frame.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.linalg import lapack

from ..model.kinematics import PRISMATIC, REVOLUTE, KinematicTree
from .solver import ChainKinematics, SolveOptions


def _skew(axis: np.ndarray) -> np.ndarray:
    x, y, z = axis
    return np.array([[0.0, -z, y], [z, 0.0, -x], [-y, x, 0.0]])


class FrameKinematics:
    """ChainKinematics evaluated for one frame: points (M, 3) and Jacobian (M, 3, V).

    Given a list of chains of one shape (the same links below one another, variables and
    points; a robot's left and right limbs), all of them are evaluated in the same few calls,
    each its own anchor and joints: a batch axis B first (see solve_frame)."""

    def __init__(self, tree: KinematicTree, kin: ChainKinematics | list[ChainKinematics]):
        self.single = isinstance(kin, ChainKinematics)
        kins = [kin] if self.single else list(kin)
        self.kin, self.kins = kins[0], kins
        per = [_ChainArrays(tree, k) for k in kins]
        first = per[0]
        for other, k in zip(per[1:], kins[1:]):
            if other.shape != first.shape:
                raise ValueError(f"chain {k.chain.name!r} is not shaped like {kins[0].chain.name!r}")
        self.links = first.links  # the first chain's (see members' own in links_of)
        self.links_of = [a.links for a in per]
        self.parent_slot, self.at_root, self.serial = first.parent_slot, first.at_root, first.serial
        self.variable_slot, self.place_slot, self.points = first.variable_slot, first.place_slot, first.points

        def stack(name):
            return np.stack([getattr(a, name) for a in per])

        self.columns, self.scale, self.offset = stack("columns"), stack("scale"), stack("offset")  # (B, L)
        self.revolute, self.prismatic = stack("revolute"), stack("prismatic")
        self.basis = stack("basis")  # (B, L, 4, 16)
        self.variable_columns = np.stack([k.columns for k in kins])  # (B, V)
        self.variable_axis, self.variable_skew = stack("variable_axis"), stack("variable_skew")
        self.variable_prismatic = stack("variable_prismatic")  # (B, V)
        self.any_prismatic = bool(self.variable_prismatic.any())
        self.place_local = stack("place_local")  # (B, 2M, 4, 1)
        self.free_rows, self.mask = stack("free_rows"), stack("mask")  # (B, V, M, 1)
        count = len(kins)
        self.coef = np.zeros((count, len(self.links), 1, 4))
        self.coef[:, :, 0, 0] = 1.0
        self.phase = np.array([0.0, 0.5 * np.pi])  # sin(angle + phase) = (sin, cos) in one call
        self.batch = np.zeros((count, len(self.links) + 1, 4, 4))  # each chain's anchor, then its links
        self._local = np.empty((count, len(self.links), 4, 4))

    @property
    def frames(self) -> np.ndarray:
        """The latest placed link poses: (L + 1, 4, 4) for one chain, (B, L + 1, 4, 4) for several."""
        return self.batch[0] if self.single else self.batch

    def place(self, anchor: np.ndarray, q: np.ndarray) -> np.ndarray:
        """Every chain link's world pose for q (n,): self.frames, the anchor (4, 4) first (the root
        pose if none; (B, 4, 4) for several chains)."""
        self.place_batch(anchor, q)
        return self.frames

    def place_batch(self, anchor: np.ndarray, q: np.ndarray) -> np.ndarray:
        value = q[self.columns] * self.scale + self.offset  # (B, L)
        coef = self.coef
        coef[:, :, 0, 1:3] = np.sin((value * self.revolute)[:, :, None] + self.phase)
        coef[:, :, 0, 3] = value * self.prismatic
        local = np.matmul(coef, self.basis, out=self._local.reshape(len(coef), -1, 1, 16)).reshape(self._local.shape)
        frames = self.batch
        frames[:, 0] = anchor
        if self.serial:
            for k in range(local.shape[1]):
                np.matmul(frames[:, k], local[:, k], out=frames[:, k + 1])
        else:
            for k, parent in enumerate(self.parent_slot):
                if self.at_root[k]:  # the chain starts at the root: its frame is the anchor
                    frames[:, k + 1] = frames[:, 0]
                else:
                    np.matmul(frames[:, parent], local[:, k], out=frames[:, k + 1])
        return frames

    def evaluate(self, anchor: np.ndarray, q: np.ndarray, jacobian: bool = True):
        """Points (M, 3) relative to their references and, optionally, the Jacobian (M, 3, V).

        anchor: (4, 4) world pose of the chain's anchor link (the root pose if none); q: (n,).
        Also leaves every chain link's world pose in self.frames[1:] (anchor in [0]). Several
        chains: anchor (B, 4, 4), points (B, M, 3), Jacobian (B, M, 3, V).
        """
        rel, jac = self.evaluate_rows(anchor, q, jacobian)
        jac = None if jac is None else jac.transpose(0, 2, 3, 1)
        return (rel[0], None if jac is None else jac[0]) if self.single else (rel, jac)

    def evaluate_rows(self, anchor: np.ndarray, q: np.ndarray, jacobian: bool = True):
        """evaluate() for all chains, the Jacobian in the solver's layout: points (B, M, 3) and
        Jacobian (B, V, M, 3) (a variable's row of point derivatives)."""
        frames = self.place_batch(anchor, q)
        placed = (frames[:, self.place_slot] @ self.place_local)[:, :, :3, 0]  # (B, 2M, 3): points, then references
        m = self.points
        row_refs = placed[:, m:]
        rel = placed[:, :m] - row_refs
        if not jacobian:
            return rel, None
        joints = frames[:, self.variable_slot]  # (B, V, 4, 4): a joint's axis and origin ride on its link
        turn = joints[:, :, :3, :3]
        arm = rel[:, None] + (row_refs[:, None] - joints[:, :, None, :3, 3]) * self.free_rows  # (B, V, M, 3)
        jac = arm @ (turn @ self.variable_skew @ turn.transpose(0, 1, 3, 2))  # axis x arm, the axis in the world
        if self.any_prismatic:
            slide = self.variable_prismatic
            axis = (turn @ self.variable_axis[..., None])[:, :, None, :, 0]  # (B, V, 1, 3)
            jac[slide] = np.broadcast_to(axis, arm.shape)[slide] * self.free_rows[slide]
        jac *= self.mask
        return rel, jac


class _ChainArrays:
    """What FrameKinematics keeps of one chain (see there)."""

    def __init__(self, tree: KinematicTree, kin: ChainKinematics):
        links = [int(link) for link in kin.chain.links]
        slot = {link: k + 1 for k, link in enumerate(links)}  # frames[0] is the anchor
        self.links = links
        self.parent_slot = [slot.get(int(tree.parent[link]), 0) for link in links]
        self.at_root = [int(tree.parent[link]) < 0 for link in links]
        origins = tree.origins[links]  # (L, 4, 4)
        kind = tree.kind[links]
        axes = tree.axes[links]
        self.revolute = (kind == REVOLUTE).astype(float)
        self.prismatic = (kind == PRISMATIC).astype(float)
        turn, turn2, slide = (np.zeros((len(links), 4, 4)) for _ in range(3))
        for k, axis in enumerate(axes):
            skew = _skew(axis)
            turn[k, :3, :3], turn2[k, :3, :3] = skew, skew @ skew
            slide[k, :3, 3] = axis
        column = tree.qindex[links]
        self.columns = np.maximum(column, 0)
        moving = (column >= 0).astype(float)
        self.scale, self.offset = tree.qscale[links] * moving, tree.qoffset[links] * moving
        # local = origin @ (I + sin K + (1 - cos) K^2 + slide p) = O (I + K^2) + sin O K - cos O K^2 + p O S:
        # every link's local transform is one product of (L, 1, 4) coefficients with this basis
        basis = np.stack([origins @ (np.eye(4) + turn2), origins @ turn, -(origins @ turn2), origins @ slide],
                         axis=1)  # (L, 4, 4, 4)
        self.basis = basis.reshape(len(links), 4, 16)
        self.serial = all(parent == k for k, parent in enumerate(self.parent_slot)) and not any(self.at_root)
        variables = list(kin.chain.variables)
        self.variable_slot = np.array([slot[int(v)] for v in variables], dtype=int)
        self.variable_axis = axes[[links.index(int(v)) for v in variables]] if variables else np.zeros((0, 3))
        self.variable_skew = np.array([_skew(-a) for a in self.variable_axis]).reshape(-1, 3, 3)  # arm @ it: a x arm
        self.variable_prismatic = np.array([tree.kind[v] == PRISMATIC for v in variables], dtype=bool)
        point_slot = np.array([slot[int(link)] for link in kin.point_link], dtype=int)
        reference_slot = np.array([slot.get(int(link), 0) for link, _ in kin.references], dtype=int)
        reference_local = np.array([local for _, local in kin.references], dtype=float).reshape(-1, 3)
        # each point and its row's reference, placed by one product of their links' frames
        m = len(point_slot)
        self.place_slot = np.concatenate([point_slot, reference_slot[kin.row_reference]])
        self.place_local = np.concatenate([np.column_stack([kin.point_local, np.ones(m)]),
                                           np.column_stack([reference_local[kin.row_reference],
                                                            np.ones(m)])])[:, :, None]  # (2M, 4, 1)
        self.points = m
        free = 1.0 - kin.reference_mask.T.astype(float)  # (V, R)
        self.free_rows = free[:, kin.row_reference][:, :, None]  # (V, M, 1)
        self.mask = kin.mask.T[:, :, None].astype(float)  # (V, M, 1)
        self.shape = (len(links), tuple(self.parent_slot), tuple(self.at_root), tuple(self.variable_slot),
                      tuple(self.place_slot))


def _solve_spd(system: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """system^-1 rhs for a damped normal matrix (symmetric positive definite): Cholesky, a few
    microseconds where a general solve costs several times more on one small system."""
    _, x, info = lapack.dposv(system, rhs)
    return x if info == 0 else np.linalg.solve(system, rhs)


def clip_values(x: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
    """np.clip without its Python wrapper (a third of its cost on a handful of values)."""
    return np.minimum(np.maximum(x, lower), upper)


def _damped_step(hess: np.ndarray, grad: np.ndarray, lam: list[float], regular: float) -> np.ndarray:
    """Each chain's Levenberg-Marquardt step (B, V): its normal matrix (B, V, V) with the diagonal
    scaled by 1 + lam and raised by the smoothness and prior weights (`regular`), solved."""
    count, size = grad.shape
    system = hess.copy()
    diagonal = system.reshape(count, -1)[:, ::size + 1]  # a view of each (V, V) matrix's diagonal
    damping = np.array(lam)[:, None]
    diagonal *= 1.0 + damping
    diagonal += regular + 1e-6 * damping
    if count == 1:
        return _solve_spd(system[0], grad[0])[None]
    return np.array([_solve_spd(system[b], grad[b]) for b in range(count)])


def _take_better(better: list[bool], active: list[bool], cost: list[float], step_x: np.ndarray, best_x: np.ndarray,
                 best_cost: list[float], lam: list[float]) -> np.ndarray:
    """The chains' best points (B, V) after an evaluation: a chain whose step lowered its cost takes it
    and eases its damping, an active one whose step did not damps harder; best_cost and lam updated in
    place (plain numbers: a chain or two costs less than arrays)."""
    if all(better):
        best_cost[:] = cost
        lam[:] = [max(v * 0.3, 1e-7) for v in lam]
        return step_x
    best_x = best_x.copy()
    for b, up in enumerate(better):
        if up:
            best_x[b], best_cost[b], lam[b] = step_x[b], cost[b], max(lam[b] * 0.3, 1e-7)
        elif active[b]:
            lam[b] = min(lam[b] * 10.0, 1e7)
    return best_x


def _normal_equations(jac: np.ndarray, res: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each chain's J^T r (B, V) and Gauss-Newton matrix J^T J (B, V, V) from its weighted Jacobian
    (B, V, M, 3) and residual (B, 3M)."""
    count, size = jac.shape[:2]
    jwt = jac.reshape(count, size, -1)  # (B, V, 3M)
    return (jwt @ res[:, :, None])[:, :, 0], jwt @ jwt.transpose(0, 2, 1)


def _take_rows(better: list[bool], new: tuple, old: tuple | None) -> tuple:
    """new's rows where a chain improved, old's elsewhere (new whole where every chain did)."""
    if all(better) or old is None:
        return new
    for b, up in enumerate(better):
        if up:
            for kept, fresh in zip(old, new):
                kept[b] = fresh[b]
    return old


@dataclass
class FrameSolve:
    """What one frame's solve of a chain (or of several chains together) did."""

    cost: np.ndarray  # (B,) or a number for one chain
    evaluations: int
    stopped: bool  # ended early by `stop` (a newer frame arrived)


def solve_frame(fk: FrameKinematics, lower: np.ndarray, upper: np.ndarray, anchor: np.ndarray, q: np.ndarray,
                targets: np.ndarray, weights: np.ndarray, options: SolveOptions, previous: np.ndarray,
                evaluations: int, stop=None, check: bool = True) -> FrameSolve:
    """Levenberg-Marquardt for one chain on one frame, warm-started from q (n,), updated in place.

    previous: the chain's values in the last output (the smoothness term pulls toward it);
    evaluations: the budget (each iteration costs one evaluation); stop(): True when the
    iterate must be output now. The best evaluated point is kept, so q stays inside the limits
    and fk.frames holds its link poses. check=False: the last evaluation is not spent checking
    the last step, which is taken as it is (inside the limits; the next frame's first
    evaluation measures it) and fk.frames are left at the point before it: for a chain no other
    chain hangs from.

    Several chains of one shape (fk built on a list) are solved side by side, each with its own
    damping, best point and convergence, all of them in the same calls: lower, upper, previous
    (B, V), anchor (B, 4, 4), targets (B, M, 3), weights (B, M).
    """
    if fk.single:
        lower, upper, previous, anchor = lower[None], upper[None], previous[None], anchor[None]
        targets, weights = targets[None], weights[None]
    cols = fk.variable_columns  # (B, V)
    count, size = cols.shape
    chains = range(count)
    sw = np.sqrt(weights)[:, :, None]  # (B, M, 1)
    sw_rows = sw[:, None]  # (B, 1, M, 1): the Jacobian's rows weighted alike
    add = np.add.reduce  # (ndarray.sum without its Python wrapper)
    rest = clip_values(0.0 if options.rest is None else options.rest[cols], lower, upper)
    smooth, prior = options.smoothness, options.rest_prior
    x = clip_values(q[cols], lower, upper)
    # per chain, in plain numbers (a chain or two: cheaper than arrays): damping, best cost,
    # whether it still iterates (not converged) and whether its latest evaluation is its best
    lam, best_cost, active, latest_best = [1e-3] * count, [np.inf] * count, [True] * count, [True] * count
    best_x, step_x, used, stopped, grad, hess = x, x, 0, False, None, None
    for used in range(1, evaluations + 1):
        if not check and used == evaluations and used > 1:
            best_x, used = step_x, used - 1  # a converged chain's step_x is its best
            break
        q[cols] = step_x
        points, jac = fk.evaluate_rows(anchor, q, jacobian=used < evaluations)  # the last one only checks a step
        res = ((points - targets) * sw).reshape(count, -1)
        to_prev, to_rest = step_x - previous, step_x - rest
        cost = (add(res * res, axis=1) + add(smooth * to_prev * to_prev + prior * to_rest * to_rest, axis=1)).tolist()
        better = [a and c <= b for a, c, b in zip(active, cost, best_cost)]
        best_x = _take_better(better, active, cost, step_x, best_x, best_cost, lam)
        latest_best = [up or not a for up, a in zip(better, active)]  # a converged chain was evaluated at its best
        if jac is not None and any(better):
            descent, normal = _normal_equations(jac * sw_rows, res)
            grad, hess = _take_rows(better, (descent + smooth * to_prev + prior * to_rest, normal),
                                    None if grad is None else (grad, hess))
        if used == evaluations or (stop is not None and stop()):
            stopped = used < evaluations
            break
        step_x = clip_values(best_x - _damped_step(hess, grad, lam, smooth + prior), lower, upper)
        moved = np.maximum.reduce(np.abs(step_x - best_x), axis=1).tolist()
        active = [a and m >= 1e-5 for a, m in zip(active, moved)]  # converged chains stop here
        if not any(active):
            break
        if not all(active):
            for b in chains:
                if not active[b]:
                    step_x[b] = best_x[b]  # evaluated at its best again, nothing taken from it
    q[cols] = best_x
    if check and not all(latest_best):  # fk.frames hold a rejected trial: evaluate the kept points again
        fk.evaluate_rows(anchor, q, jacobian=False)
    return FrameSolve(best_cost[0] if fk.single else np.array(best_cost), used, stopped)
