"""What a change of the chains' joints costs while they make room (core.chains.separation): the
chain shape's Gauss-Newton matrix; on a limb, beside it, the turn of the line a viewer reads
(base to tip: shoulder to wrist), so a swivel about it, a bend or the hand make room first; and,
for a limb's whole change, the distance of that line from the actor's (what a viewer compares).
A group holds the chains making room together (an arm and the hand hanging from it) and puts
their costs side by side on its columns.
"""
from __future__ import annotations

import copy

import numpy as np

from .points import RobotPath
from .solver import ChainKinematics, ChainProblem

HUNG_SHAPE_WEIGHT = 0.3  # a hand's turn costs this share of its shape (G1 walk: limbs +1.65 -> +1.38 deg)
LINE_WEIGHT = 0.3  # a turn of a limb's line costs this share of its tip's weight beyond its shape (docs/history/self_collision.md)
PULL_WEIGHT = 3.0  # the limb line's distance from the actor's costs this share of its tip's weight in them


class ChainGroup:
    """Chains making room together: their columns, limits and the cost of a change to their shapes."""

    def __init__(self, problems: list, limbs: list | None = None):
        self.problems = problems
        self.columns = np.concatenate([p.kin.columns for p in problems]) if problems else np.zeros(0, dtype=int)
        self.lower = np.concatenate([p.lower for p in problems]) if problems else np.zeros(0)
        self.upper = np.concatenate([p.upper for p in problems]) if problems else np.zeros(0)
        self.q = problems[0].q if problems else None
        self.lines = [_limb_line(p, limb) for p, limb in zip(problems, limbs or [None] * len(problems))]
        self._last = {}  # per chain, the limb line's last evaluation (_evaluated)

    def on(self, frames: np.ndarray) -> "ChainGroup":
        """The same chains on some frames only (indices), with their own copy of q there."""
        q = self.q[frames].copy()
        out = copy.copy(self)
        out.problems = [ChainProblem(p.tree, p.kin, p.anchor[frames], q, p.targets[frames], p.weights, p.options)
                        for p in self.problems]
        out.q, out._last = q, {}
        return out

    def _evaluated(self, k: int, q: np.ndarray, rows: np.ndarray, jacobian: bool) -> tuple:
        """Chain k's limb line evaluated at q (R, n) on its rows (points, Jacobian or None), the last evaluation's
        again where it was at the same rows and joints (the same numbers: a polish and a whole step ask for the
        metric, the pull and its cost at one pose; the line's points with the Jacobian are those without)."""
        problem, line = self.problems[k], self.lines[k]
        last = self._last.get(k)
        if (last is not None and (last[3] is not None or not jacobian) and np.array_equal(last[0], rows)
                and np.array_equal(last[1], q)):
            return last[2], last[3]
        points, jac = line.evaluate(problem.tree, problem.anchor[rows], q, jacobian)
        self._last[k] = (np.array(rows, copy=True), np.array(q, copy=True), points, jac)
        return points, jac

    def metric(self, q: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """(R, V, V): each chain's metric on its own columns (block diagonal): a limb's by where
        its line points (_limb_metric), any other's by its shape, the chains hanging from the
        first (its hand) at HUNG_SHAPE_WEIGHT: where a limb points is what a viewer reads."""
        out = np.zeros((len(rows), len(self.columns), len(self.columns)))
        start = 0
        for k, (problem, line) in enumerate(zip(self.problems, self.lines)):
            end = start + len(problem.kin.columns)
            block = (_shape_metric(problem, q, rows) if line is None
                     else _limb_metric(problem, line, q, rows, self._evaluated(k, q, rows, True)))
            out[:, start:end, start:end] = block * (1.0 if start == 0 else HUNG_SHAPE_WEIGHT)
            start = end
        return out

    def pull(self, q: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        """What moving away from the actor's limb lines costs at q (R, n), as a Gauss-Newton
        model over the group's columns: (matrix (R, V, V), gradient (R, V)); None without a line."""
        if all(line is None for line in self.lines):
            return None
        matrix = np.zeros((len(rows), len(self.columns), len(self.columns)))
        gradient = np.zeros((len(rows), len(self.columns)))
        start = 0
        for k, (problem, line) in enumerate(zip(self.problems, self.lines)):
            end = start + len(problem.kin.columns)
            if line is not None:
                matrix[:, start:end, start:end], gradient[:, start:end] = _line_pull(
                    problem, line, q, rows, self._evaluated(k, q, rows, True))
            start = end
        return matrix, gradient

    def pull_cost(self, q: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """(R,) what the limb lines' distances from the actor's cost at q (R, n): the value of the
        model `pull` gives (0 without a line)."""
        out = np.zeros(len(rows))
        for k, (problem, line) in enumerate(zip(self.problems, self.lines)):
            if line is not None:
                out += _line_cost(problem, line, q, rows, self._evaluated(k, q, rows, False))
        return out


def _shape_metric(problem: ChainProblem, q: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """What a joint change costs the chain's shape on these frames: its Gauss-Newton matrix
    (R, V, V) at q (R, n), with the solve's weak pulls (previous frame, neutral) on the diagonal."""
    _, jac = problem.kin.evaluate(problem.tree, problem.anchor[rows], q, True)  # (R, M, 3, V)
    return _gauss_newton(problem, jac)


def _gauss_newton(problem: ChainProblem, jac: np.ndarray) -> np.ndarray:
    """The shape's Gauss-Newton matrix (R, V, V) from its points' Jacobian (R, M, 3, V)."""
    options, count = problem.options, jac.shape[-1]
    jw = (jac * np.sqrt(np.broadcast_to(problem.weights, jac.shape[:2]))[..., None, None]).reshape(
        len(jac), -1, count)
    return jw.transpose(0, 2, 1) @ jw + (options.smoothness + options.rest_prior) * np.eye(count)


def _limb_line(problem: ChainProblem, limb: tuple | None) -> ChainKinematics | None:
    """The chain's points followed by its limb line's tip measured from its base (limb: (base
    link, tip link), their origins, as a viewer measures the limb); None without one, or when the
    chain does not hold both links."""
    chain = problem.kin.chain
    if limb is None or not set(limb) <= set(chain.links):
        return None
    base, tip = (int(link) for link in limb)
    line = RobotPath([tip], np.array([tip]), np.zeros((1, 3)), 0.0, (tip, np.zeros(3)))
    return ChainKinematics.build(problem.tree, chain, extra=[(line, (base, np.zeros(3)))])


def _limb_metric(problem: ChainProblem, line: ChainKinematics, q: np.ndarray, rows: np.ndarray,
                 evaluated: tuple | None = None) -> np.ndarray:
    """What a joint change costs a limb (R, V, V): its shape's metric plus, LINE_WEIGHT times at
    the weight of the chain's tip point, the move of the line's tip across the line (a turn of
    the line a viewer reads; a move along it or a swivel about it adds nothing), so an arm bends,
    swivels or turns its hand before it points elsewhere. Charging the turn alone, the rest of
    the shape at a tenth, let the G1's arms make room by swivels and bends that linearised steps
    overrate: limbs +1.50 / +2.00 deg where the shape alone costs +1.39 / +1.83 (docs/history/self_collision.md).
    evaluated: the line's (points, Jacobian) at q when known (ChainGroup._evaluated)."""
    points, jac = evaluated or line.evaluate(problem.tree, problem.anchor[rows], q, True)  # (R, M + 1, 3), (R, M + 1, 3, V)
    count = len(problem.kin.point_link)
    along = points[:, count] / np.maximum(np.linalg.norm(points[:, count], axis=1, keepdims=True), 1e-9)
    move = jac[:, count]  # (R, 3, V)
    across = move - along[:, :, None] * np.einsum("ri,riv->rv", along, move)[:, None]
    tip = problem.weights[problem.kin.path_slices[0].stop - 1]
    return LINE_WEIGHT * tip * across.transpose(0, 2, 1) @ across + _gauss_newton(problem, jac[:, :count])


def _line_pull(problem: ChainProblem, line: ChainKinematics, q: np.ndarray, rows: np.ndarray,
               evaluated: tuple | None = None) -> tuple:
    """(matrix (R, V, V), gradient (R, V)): the Gauss-Newton model at q of PULL_WEIGHT times the
    tip's weight times the squared distance of the limb line's tip from the actor's line (through
    the line's base, toward where the shape's targets put the chain's tip): what a viewer reads. evaluated:
    as _limb_metric's."""
    points, jac = evaluated or line.evaluate(problem.tree, problem.anchor[rows], q, True)
    count, tip = len(problem.kin.point_link), problem.kin.path_slices[0].stop - 1
    actor = problem.targets[rows, tip] - (points[:, tip] - points[:, count])  # from the line's base
    actor /= np.maximum(np.linalg.norm(actor, axis=1, keepdims=True), 1e-9)
    across = np.eye(3) - actor[:, :, None] * actor[:, None, :]  # (R, 3, 3)
    weight = PULL_WEIGHT * problem.weights[tip]
    seen = jac[:, count].transpose(0, 2, 1) @ across  # (R, V, 3)
    return weight * seen @ jac[:, count], weight * np.einsum("rvi,ri->rv", seen, points[:, count])


def _line_cost(problem: ChainProblem, line: ChainKinematics, q: np.ndarray, rows: np.ndarray,
               evaluated: tuple | None = None) -> np.ndarray:
    """(R,) the value at q of the cost _line_pull models: PULL_WEIGHT times the tip's weight times
    half the squared distance of the limb line's tip from the actor's line. evaluated: as _limb_metric's
    (its Jacobian unread)."""
    points, _ = evaluated or line.evaluate(problem.tree, problem.anchor[rows], q, False)
    count, tip = len(problem.kin.point_link), problem.kin.path_slices[0].stop - 1
    actor = problem.targets[rows, tip] - (points[:, tip] - points[:, count])
    actor /= np.maximum(np.linalg.norm(actor, axis=1, keepdims=True), 1e-9)
    across = points[:, count] - actor * np.einsum("ri,ri->r", actor, points[:, count])[:, None]
    return 0.5 * PULL_WEIGHT * problem.weights[tip] * np.einsum("ri,ri->r", across, across)
