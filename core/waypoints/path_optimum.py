"""The mechanism's optimum along a path, picked continuously from one via point to the next.

Searching each via point on its own lets a redundant arm answer with a
different IK branch and a far-turned orientation at every key (153 degree
turns between neighbouring keys on a smooth Panda arc). Here the via points
are taken in path order and each search

- solves IK warm-started from the previous via point's joint values (plus
  the chain's seed and a few fixed random starts), so the arm's branch
  carries over when it can;
- scores a candidate by the objective normalised by the best reached score,
  minus `continuity` x (turn from the previous key / pi)^2, so a small gain
  never buys a large turn.

Two families of candidates:

- tangent_mechanism: the approach axis on the path tangent and a free roll
  theta about it, searched on `rolls` evenly spaced angles, then refined by
  halving steps; theta = 0 is the tangent mode's roll (from the interpolated
  orientation), and no roll scoring below it is taken, so the result holds
  the arm at least as well as tangent mode. Rolls are unwrapped along the path.
- mechanism: orientations over SO(3) (the chain's candidates, or the lookup
  table's single-branch answer), refined by small turns about x, y, z.

Positions in metres in the chain's root-link frame, quaternions (w, x, y, z),
angles in radians, via points first on every array.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..model.transforms import axis_angle_to_matrix, matrix_to_quat, quat_to_matrix
from . import mechanism as mech
from .orientations import align_axis, quat_mul

TOL_SCORE = 1e-12  # relative: a roll scoring this close to the tangent mode's counts as no worse


@dataclass(frozen=True)
class PathSearch:
    """How the via points' optima are searched along the path."""

    rolls: int = 24           # tangent_mechanism: coarse rolls about the tangent (15 degrees apart)
    refine: int = 3           # halving rounds around the winner
    continuity: float = 1.0   # weight of (turn from the previous key / pi)^2 against the normalised objective
    restarts: int = 4         # random IK starts besides the warm start and the chain's seed
    rng_seed: int = 0


@dataclass
class ViaOptimum:
    """The chosen orientation and IK solution at each via point."""

    quats: np.ndarray       # (V, 4)
    q: np.ndarray           # (V, C) rad, the joint values holding it
    score: np.ndarray       # (V,) objective, larger is better; -inf where no candidate was reached
    base_score: np.ndarray  # (V,) the objective at the reference (tangent mode's roll / the interpolated)
    roll: np.ndarray        # (V,) rad, unwrapped roll about the tangent (tangent_mechanism), else NaN

    @property
    def reached(self) -> np.ndarray:
        return np.isfinite(self.score)


# ------------------------------------------------------------- scoring ---

def seeds_for(chain: mech.MechanismChain, warm, search: PathSearch, restarts: int | None = None) -> np.ndarray:
    """(S, C) IK starts: the warm start (if any), the chain's seed, then fixed random joint values."""
    lo, hi = mech._limits(chain.tree, chain.columns)
    count = search.restarts if restarts is None else restarts
    rows = [np.asarray(warm, float)[None]] if warm is not None else []
    rows += [chain.seed[None], np.random.default_rng(search.rng_seed).uniform(lo, hi, (count, lo.size))]
    return np.vstack(rows)


def hold_scores(chain: mech.MechanismChain, positions, quats, seeds, objective: str):
    """Best objective over the IK starts of holding each candidate orientation at its position.

    positions (P, 3), quats (P, K, 4), seeds (P, S, C) -> q (P, K, C), score (P, K) (-inf unreached).
    """
    positions = np.asarray(positions, float).reshape(-1, 3)
    quats = np.asarray(quats, float)
    p, k, s = quats.shape[0], quats.shape[1], seeds.shape[1]
    result = mech.solve_ik(chain, np.repeat(positions, k * s, axis=0), np.repeat(quats.reshape(-1, 4), s, axis=0),
                           np.repeat(seeds, k, axis=0).reshape(-1, seeds.shape[-1]), objective)
    score = result.score.reshape(p, k, s)
    pick = np.argmax(score, axis=2)
    q = result.q.reshape(p, k, s, -1)
    return np.take_along_axis(q, pick[..., None, None], 2)[:, :, 0], np.take_along_axis(score, pick[..., None], 2)[..., 0]


def standard_scores(chain, position, candidates, warm, objective: str, search: PathSearch):
    """hold_scores from the chain's seed and the fixed restarts, the same starts for every via point,
    so a candidate's score is the arm's own and not the path's history (mechanism.orientation_scores
    with restarts=search.restarts gives the same); from the warm start when those hold nothing."""
    q, score = hold_scores(chain, position[None], candidates[None], seeds_for(chain, None, search)[None], objective)
    if warm is not None and not np.any(np.isfinite(score)):
        q, score = hold_scores(chain, position[None], candidates[None], np.asarray(warm, float)[None, None], objective)
    return q, score


def turn_angles(a, b) -> np.ndarray:
    """Rotation angle (rad) between orientations a and b, sign-free, broadcast over leading axes."""
    dot = np.abs(np.sum(np.asarray(a, float) * np.asarray(b, float), axis=-1))
    return 2.0 * np.arccos(np.clip(dot, 0.0, 1.0))


def _totals(score, turn, scale, continuity: float, floor=None) -> np.ndarray:
    """Normalised objective minus the continuity cost; -inf where unreached or below `floor`."""
    total = score / scale[..., None] - continuity * (turn / np.pi) ** 2
    valid = np.isfinite(score)
    if floor is not None:
        valid &= ~(score < floor[..., None] - TOL_SCORE * scale[..., None])
    return np.where(valid, total, -np.inf)


def _scale(score: np.ndarray) -> np.ndarray:
    best = np.max(np.where(np.isfinite(score), np.abs(score), 0.0), axis=-1)
    return np.maximum(best, 1e-12)


# ------------------------------------------------------------- choosing ---

@dataclass
class _Best:
    quats: np.ndarray  # (P, 4)
    q: np.ndarray      # (P, C)
    score: np.ndarray  # (P,)
    total: np.ndarray  # (P,)


def choose(chain, positions, candidates, seeds, objective, previous, continuity, floor=None):
    """The candidate (P, K, 4) of best total per position; previous (P, 4) or None (no turn cost)."""
    q, score = hold_scores(chain, positions, candidates, seeds, objective)
    turn = np.zeros(score.shape) if previous is None else turn_angles(candidates, previous[:, None])
    scale = _scale(score)
    total = _totals(score, turn, scale, continuity, floor)
    pick = np.argmax(total, axis=1)
    rows = np.arange(score.shape[0])
    best = _Best(candidates[rows, pick].copy(), q[rows, pick].copy(), score[rows, pick].copy(), total[rows, pick])
    return best, scale, pick


def improve(chain, positions, best: _Best, trials, objective, previous, continuity, scale, floor=None,
            seeds=None) -> np.ndarray:
    """Replace each winner by a trial (P, T, 4) when its total is higher; IK from `seeds` (P, S, C),
    by default warm-started from the winner's joint values.

    Returns the (P,) index of the trial taken, -1 where the winner stayed.
    """
    q, score = hold_scores(chain, positions, trials, best.q[:, None] if seeds is None else seeds, objective)
    turn = np.zeros(score.shape) if previous is None else turn_angles(trials, previous[:, None])
    total = _totals(score, turn, scale, continuity, floor)
    pick = np.argmax(total, axis=1)
    rows = np.arange(score.shape[0])
    gain = total[rows, pick] > best.total
    best.quats[gain], best.q[gain] = trials[rows, pick][gain], q[rows, pick][gain]
    best.score[gain], best.total[gain] = score[rows, pick][gain], total[rows, pick][gain]
    return np.where(gain, pick, -1)


def axis_turns(axes, angles) -> np.ndarray:
    """Quaternions (..., 4) turning by `angles` about unit `axes` (..., 3)."""
    return matrix_to_quat(axis_angle_to_matrix(np.asarray(axes, float), np.asarray(angles, float)))


# ------------------------------------------------------------- searches ---

def tangent_mechanism_search(chain, via, tangents, reference, approach_axis, objective: str = "manipulability",
                             search: PathSearch = PathSearch(), previous=None, warm=None) -> ViaOptimum:
    """Approach axis on each tangent, roll chosen by the mechanism, via point by via point.

    previous (4,) is the orientation before the first via (the start key), warm
    (C,) the joint values holding it; both carry over from via to via.
    """
    via = np.asarray(via, float).reshape(-1, 3)
    aligned = align_axis(reference, approach_axis, tangents)
    axes = quat_to_matrix(aligned) @ (np.asarray(approach_axis, float) / np.linalg.norm(approach_axis))
    thetas = 2.0 * np.pi * np.arange(search.rolls) / search.rolls  # thetas[0] = 0: tangent mode's roll
    out = _empty(via.shape[0], chain)
    for i in range(via.shape[0]):
        candidates = quat_mul(axis_turns(np.broadcast_to(axes[i], (thetas.size, 3)), thetas), aligned[i])
        prev = None if previous is None else np.asarray(previous, float)[None]
        q, score = standard_scores(chain, via[i], candidates, warm, objective, search)
        out.base_score[i] = score[0, 0]
        if not np.any(np.isfinite(score)):
            out.quats[i] = aligned[i]
            continue
        floor = score[:, 0] if np.isfinite(score[0, 0]) else None
        turn = np.zeros(score.shape) if prev is None else turn_angles(candidates, prev)[None]
        scale = _scale(score)
        total = _totals(score, turn, scale, search.continuity, floor)
        k = int(np.argmax(total[0]))
        best = _Best(candidates[k][None].copy(), q[0, k][None].copy(), score[0, k][None].copy(), total[0, k][None])
        theta, step = thetas[k], np.pi / search.rolls
        for _ in range(search.refine):
            trial_angles = theta + np.array([-step, step])
            trials = quat_mul(axis_turns(np.broadcast_to(axes[i], (2, 3)), trial_angles), aligned[i])[None]
            taken = improve(chain, via[i:i + 1], best, trials, objective, prev, search.continuity, scale, floor,
                            seeds_for(chain, None, search)[None])
            if taken[0] >= 0:
                theta = trial_angles[taken[0]]
            step *= 0.5
        if i > 0 and np.isfinite(out.roll[i - 1]):  # unwrap: the representative nearest the last roll
            theta = out.roll[i - 1] + (theta - out.roll[i - 1] + np.pi) % (2 * np.pi) - np.pi
        out.quats[i], out.q[i], out.score[i], out.roll[i] = best.quats[0], best.q[0], best.score[0], theta
        previous, warm = best.quats[0], best.q[0]
    return out


def mechanism_search(chain, via, reference, objective: str = "manipulability", search: PathSearch = PathSearch(),
                     previous=None, warm=None, table=None) -> ViaOptimum:
    """The orientation over SO(3) the arm holds best, via point by via point, kept continuous.

    With a lookup table its single-branch answer (plus the previous key's
    orientation and the reference) replaces the full candidate set, and the
    small-turn refinement polishes it.
    """
    via = np.asarray(via, float).reshape(-1, 3)
    reference = np.asarray(reference, float).reshape(-1, 4)
    looked = table.lookup(via) if table is not None else np.full((via.shape[0], 4), np.nan)
    out = _empty(via.shape[0], chain)
    for i in range(via.shape[0]):
        extra = [reference[i]] + ([np.asarray(previous, float)] if previous is not None else [])
        if np.isnan(looked[i, 0]):
            candidates, restarts = np.vstack([*extra, chain.candidates]), 0
        else:
            candidates, restarts = np.vstack([*extra, looked[i]]), search.restarts
        seeds = seeds_for(chain, warm, search, restarts)[None]
        prev = None if previous is None else np.asarray(previous, float)[None]
        best, scale, _ = choose(chain, via[i:i + 1], candidates[None], seeds, objective, prev, search.continuity)
        out.base_score[i] = hold_scores(chain, via[i:i + 1], reference[i][None, None], seeds, objective)[1][0, 0]
        if not np.isfinite(best.score[0]):
            out.quats[i] = reference[i]
            continue
        for round_ in range(search.refine):
            turns = axis_turns(np.vstack([np.eye(3), -np.eye(3)]), np.full(6, 0.2 * 0.5 ** round_))
            improve(chain, via[i:i + 1], best, quat_mul(turns, best.quats[0])[None], objective, prev,
                    search.continuity, scale)
        out.quats[i], out.q[i], out.score[i] = best.quats[0], best.q[0], best.score[0]
        previous, warm = best.quats[0], best.q[0]
    return out


def start_solution(chain, position, quat, objective: str = "manipulability",
                   search: PathSearch = PathSearch()) -> np.ndarray | None:
    """(C,) joint values holding the start key best over the seed and restarts, or None if unreachable."""
    q, score = hold_scores(chain, np.asarray(position, float)[None], np.asarray(quat, float)[None, None],
                           seeds_for(chain, None, search)[None], objective)
    return q[0, 0] if np.isfinite(score[0, 0]) else None


def _empty(count: int, chain) -> ViaOptimum:
    return ViaOptimum(np.full((count, 4), np.nan), np.tile(chain.seed, (count, 1)), np.full(count, -np.inf),
                      np.full(count, -np.inf), np.full(count, np.nan))


__all__ = ["PathSearch", "ViaOptimum", "tangent_mechanism_search", "mechanism_search", "start_solution",
           "hold_scores", "seeds_for", "turn_angles", "choose", "improve", "axis_turns"]
