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
    """A ChainKinematics evaluated for one frame: points (M, 3) and Jacobian (M, 3, V)."""

    def __init__(self, tree: KinematicTree, kin: ChainKinematics):
        self.kin = kin
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
        self.axes = axes
        # local = origin @ (I + sin K + (1 - cos) K^2 + slide p) = O (I + K^2) + sin O K - cos O K^2 + p O S:
        # every link's local transform is one product of (L, 1, 4) coefficients with this basis
        basis = np.stack([origins @ (np.eye(4) + turn2), origins @ turn, -(origins @ turn2), origins @ slide],
                         axis=1)  # (L, 4, 4, 4)
        self.basis = basis.reshape(len(links), 4, 16)
        self.coef = np.zeros((len(links), 1, 4))
        self.coef[:, 0, 0] = 1.0
        self.phase = np.array([0.0, 0.5 * np.pi])  # sin(angle + phase) = (sin, cos) in one call
        self.serial = all(parent == k for k, parent in enumerate(self.parent_slot)) and not any(self.at_root)
        variables = list(kin.chain.variables)
        self.variable_slot = np.array([slot[int(v)] for v in variables], dtype=int)
        self.variable_axis = axes[[links.index(int(v)) for v in variables]] if variables else np.zeros((0, 3))
        self.variable_skew = np.array([_skew(-a) for a in self.variable_axis]).reshape(-1, 3, 3)  # arm @ it: a x arm
        self.variable_prismatic = np.array([tree.kind[v] == PRISMATIC for v in variables], dtype=bool)
        self.any_prismatic = bool(self.variable_prismatic.any())
        self.point_slot = np.array([slot[int(link)] for link in kin.point_link], dtype=int)
        self.point_local = kin.point_local
        self.reference_slot = np.array([slot.get(int(link), 0) for link, _ in kin.references], dtype=int)
        self.reference_local = np.array([local for _, local in kin.references], dtype=float).reshape(-1, 3)
        self.row_reference = kin.row_reference
        # each point and its row's reference, placed by one product of their links' frames
        m = len(self.point_slot)
        self.place_slot = np.concatenate([self.point_slot, self.reference_slot[self.row_reference]])
        self.place_local = np.concatenate([np.column_stack([self.point_local, np.ones(m)]),
                                           np.column_stack([self.reference_local[self.row_reference],
                                                            np.ones(m)])])[:, :, None]  # (2M, 4, 1)
        self.points = m
        free = 1.0 - kin.reference_mask.T.astype(float)  # (V, R)
        self.free_rows = free[:, kin.row_reference][:, :, None]  # (V, M, 1)
        self.mask = kin.mask.T[:, :, None].astype(float)  # (V, M, 1)
        self.frames = np.empty((len(links) + 1, 4, 4))
        self._local = np.empty((len(links), 4, 4))

    def place(self, anchor: np.ndarray, q: np.ndarray) -> np.ndarray:
        """Every chain link's world pose for q (n,): self.frames (L + 1, 4, 4), the anchor (4, 4)
        first (the root pose if none)."""
        value = q[self.columns] * self.scale + self.offset
        coef = self.coef
        coef[:, 0, 1:3] = np.sin((value * self.revolute)[:, None] + self.phase)
        coef[:, 0, 3] = value * self.prismatic
        local = np.matmul(coef, self.basis, out=self._local.reshape(-1, 1, 16)).reshape(-1, 4, 4)
        frames = self.frames
        frames[0] = anchor
        if self.serial:
            for k in range(len(local)):
                np.matmul(frames[k], local[k], out=frames[k + 1])
        else:
            for k, parent in enumerate(self.parent_slot):
                if self.at_root[k]:  # the chain starts at the root: its frame is the anchor
                    frames[k + 1] = anchor
                else:
                    np.matmul(frames[parent], local[k], out=frames[k + 1])
        return frames

    def evaluate(self, anchor: np.ndarray, q: np.ndarray, jacobian: bool = True):
        """Points (M, 3) relative to their references and, optionally, the Jacobian (M, 3, V).

        anchor: (4, 4) world pose of the chain's anchor link (the root pose if none); q: (n,).
        Also leaves every chain link's world pose in self.frames[1:] (anchor in [0]).
        """
        frames = self.place(anchor, q)
        placed = (frames[self.place_slot] @ self.place_local)[:, :3, 0]  # (2M, 3): points, then their references
        m = self.points
        row_refs = placed[m:]
        rel = placed[:m] - row_refs
        if not jacobian:
            return rel, None
        joints = frames[self.variable_slot]  # (V, 4, 4): a joint's axis and origin ride on its link
        turn = joints[:, :3, :3]
        arm = rel + (row_refs - joints[:, None, :3, 3]) * self.free_rows  # (V, M, 3)
        jac = arm @ (turn @ self.variable_skew @ turn.transpose(0, 2, 1))  # axis x arm, the axis turned into the world
        if self.any_prismatic:
            axis = (turn @ self.variable_axis[:, :, None])[:, None, :, 0]  # (V, 1, 3)
            jac[self.variable_prismatic] = np.broadcast_to(axis, arm.shape)[self.variable_prismatic] * \
                self.free_rows[self.variable_prismatic]
        jac *= self.mask
        return rel, jac.transpose(1, 2, 0)


def _solve_spd(system: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """system^-1 rhs for a damped normal matrix (symmetric positive definite): Cholesky, a few
    microseconds where a general solve costs several times more on one small system."""
    _, x, info = lapack.dposv(system, rhs)
    return x if info == 0 else np.linalg.solve(system, rhs)


def _clip(x: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
    """np.clip without its Python wrapper (a third of its cost on a handful of values)."""
    return np.minimum(np.maximum(x, lower), upper)


@dataclass
class FrameSolve:
    """What one frame's solve of one chain did."""

    cost: float
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
    """
    cols = fk.kin.columns
    sw = np.sqrt(weights)[:, None]
    rest = _clip(0.0 if options.rest is None else options.rest[cols], lower, upper)
    smooth, prior = options.smoothness, options.rest_prior
    x = _clip(q[cols], lower, upper)
    best_x, best_cost, lam, best_is_last = x, np.inf, 1e-3, True
    step_x, used, stopped = x, 0, False
    for used in range(1, evaluations + 1):
        if not check and used == evaluations and used > 1:
            best_x, used = step_x, used - 1
            break
        q[cols] = step_x
        points, jac = fk.evaluate(anchor, q, jacobian=used < evaluations)  # the last one only checks a step
        res = ((points - targets) * sw).ravel()
        to_prev, to_rest = step_x - previous, step_x - rest
        cost = float(res @ res) + smooth * float(to_prev @ to_prev) + prior * float(to_rest @ to_rest)
        best_is_last = cost <= best_cost
        if best_is_last:
            best_x, best_cost, lam = step_x, cost, max(lam * 0.3, 1e-7)
        if best_is_last and jac is not None:
            jwt = (jac.transpose(2, 0, 1) * sw).reshape(len(cols), -1)  # (V, 3M): evaluate's own layout
            grad = jwt @ res + smooth * to_prev + prior * to_rest
            hess = jwt @ jwt.T
        elif not best_is_last:
            lam = min(lam * 10.0, 1e7)
        if used == evaluations or (stop is not None and stop()):
            stopped = used < evaluations
            break
        system = hess.copy()
        diagonal = system.reshape(-1)[::len(cols) + 1]  # a view of the (V, V) matrix's diagonal
        diagonal *= 1.0 + lam
        diagonal += smooth + prior + 1e-6 * lam
        step_x = _clip(best_x - _solve_spd(system, grad), lower, upper)
        if np.maximum.reduce(np.abs(step_x - best_x)) < 1e-5:
            break
    q[cols] = best_x
    if check and not best_is_last:  # fk.frames hold the rejected trial: evaluate the kept point again
        fk.evaluate(anchor, q, jacobian=False)
    return FrameSolve(best_cost, used, stopped)
