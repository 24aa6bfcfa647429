"""Room made inside a chain's own solve (off: docs/notes/s21-insolve.md): the frames where a checked pair
comes within reach of the margin are solved again with hinge rows, weight * max(0, aim - distance),
next to the chain's shape (at SHAPE_SHARE) and, on a limb, the distance of its line from the actor's
(core.chains.change_cost's pull), a nonlinear least-squares answer instead of the linearised least
change; the end of the bake (core.chains.separation) then mends what filtering and planting moved
back inside. The rows come from outside (core.collision.avoid's SeparationTerm: chains never imports
it). Measured on the G1: more CPU than it saves at the bake's end, and the limbs further from the
actor's, so off.
"""
from __future__ import annotations

import os

import numpy as np

from .change_cost import PULL_WEIGHT, _limb_line
from .solver import ChainKinematics, ChainProblem, SolveOptions, _in_blocks, rate_limit

ROOM_IN_SOLVE = os.environ.get("ROBOT_RETARGET_ROOM_IN_SOLVE", "") == "1"  # off (docs/notes/s21-insolve.md)
SOLVE_SLACK_M = 0.003  # the solve keeps pairs this far beyond the margin: filtering and planting move them back a little
#                        (G1 walk: 0 mm left 7 %, 3 mm 7 %, 10 mm 5 % of frames inside once filtered; the limbs rise with it)
SHAPE_SHARE = 0.03  # a limb's shape weighs this share beside its line's pull in the solve again (as a whole step's)


class Hinge:
    """A term's hinge rows on some frames and their Jacobian over some of its joints (`part`, a slice of
    its variables: one chain of the group that makes room together, the others held); pull: (problem,
    line kinematics, tip weight) adds a limb line's rows (_line_rows)."""

    def __init__(self, term, aim: float, part: slice, pull: tuple | None = None):
        self.term, self.aim, self.part, self.pull = term, aim, part, pull
        self.width = len(range(*part.indices(len(term.variables))))

    def __call__(self, q: np.ndarray, frames: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Residuals (F, R) and Jacobian (F, R, V) at q (F, n) on frames (indices into the term's root)."""
        term = self.term
        f, p, dist, grad = term.gradient(q, term.root[frames], self.aim, placed=term.placed_on(frames))
        res = np.zeros((len(q), len(term.capsules)))
        jac = np.zeros(res.shape + (self.width,))
        res[f, p] = term.weight * (self.aim - dist)
        jac[f, p] = -term.weight * grad[:, self.part]
        if self.pull is None:
            return res, jac
        l_res, l_jac = _line_rows(*self.pull, q, frames)
        return np.concatenate([res, l_res], axis=1), np.concatenate([jac, l_jac], axis=1)


def _line_rows(problem: ChainProblem, line: ChainKinematics, tip_weight: float, q: np.ndarray,
               frames: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Residuals (F, 3) and Jacobian (F, 3, V): sqrt(PULL_WEIGHT * the tip's weight) times the limb
    line's tip across the actor's line (the rows of core.chains.change_cost._line_pull's model)."""
    points, jac = line.evaluate(problem.tree, problem.anchor[frames], q, True)
    count, tip = len(problem.kin.point_link), problem.kin.path_slices[0].stop - 1
    actor = problem.targets[frames, tip] - (points[:, tip] - points[:, count])
    actor /= np.maximum(np.linalg.norm(actor, axis=1, keepdims=True), 1e-9)
    across = np.eye(3) - actor[:, :, None] * actor[:, None, :]  # (F, 3, 3)
    weight = np.sqrt(PULL_WEIGHT * tip_weight)
    return weight * np.einsum("fij,fj->fi", across, points[:, count]), weight * across @ jac[:, count]


def room_in_solve(tree, kin: ChainKinematics, anchor: np.ndarray, q: np.ndarray, targets: np.ndarray,
                  weights: np.ndarray, term, part: slice, options: SolveOptions,
                  max_step: np.ndarray | None = None, limb: tuple | None = None) -> int:
    """The chain's columns of q (F, n, solved for its shape) solved again, in place, with hinge rows
    on the frames where one of `term`'s pairs is closer than margin + SOLVE_SLACK_M, then rate limited;
    part: the chain's joints among the term's (a hand's and its arm's together); limb: (base link, tip
    link) of the line a viewer reads, pulled toward the actor's. Returns how many frames were."""
    if term is None or len(kin.columns) == 0:
        return 0
    aim = term.margin + SOLVE_SLACK_M
    term = term.with_still(q)  # the links the chain does not move: posed once for every look
    dist = term.distance(q, within=aim, placed=term.placed_on(np.arange(len(q))))
    close = np.flatnonzero(dist.min(axis=1, initial=np.inf) < aim)
    if len(close) == 0:
        return 0
    term = term.near(q, close, dist=dist[close])  # only pairs the solve's steps can bring within reach
    shape = ChainProblem(tree, kin, anchor, q, targets, weights, options)
    line = _limb_line(shape, limb)
    problem = shape if line is None else ChainProblem(tree, kin, anchor, q, targets, weights * SHAPE_SHARE, options)
    tip = weights[kin.path_slices[0].stop - 1]
    problem.hinge = Hinge(term, aim, part, None if line is None else (problem, line, tip))
    cols = kin.columns
    x, _ = _in_blocks(problem, q[close][:, cols], close)
    q[close[:, None], cols] = x
    if max_step is not None:  # without: 3 % more of the walk's frames inside once filtered
        q[:, cols] = rate_limit(q[:, cols], max_step)
    return len(close)


def group_rooms(groups: list[list], term_of) -> dict:
    """{id(last plan of a group): [(plan, term, part)]}: the chains of each group that makes room
    together (core.retarget.pipeline.room_groups) make it in their solve once the group's last chain
    is solved, the hand before its arm (G1 walk: 7 / 2 % of the arms' frames left inside, arm first
    12 / 4 %), each with its group's term (term_of(joints); the hand's capsules kept off the body while
    the arm is solved) and its slice of that term's joints."""
    rooms = {}
    for group in groups:
        term = term_of([v for plan in group for v in plan.kin.chain.variables])
        if term is None:
            continue
        parts, start = [], 0
        for plan in group:
            parts.append((plan, term, slice(start, start + len(plan.kin.chain.variables))))
            start += len(plan.kin.chain.variables)
        rooms[id(group[-1])] = parts[::-1]
    return rooms
