"""The mechanism's optimum along a path, picked continuously over the via points.

Searching each via point on its own lets a redundant arm answer with a
different IK branch and a far-turned orientation at every key (153 degree
turns between neighbouring keys on a smooth Panda arc). Here

- every candidate orientation is scored by the best objective the arm holds
  it with over the same IK starts (the chain's seed and fixed random joint
  values), so a score belongs to the orientation and not to the path's history;
- scores are taken over their range among a via point's candidates (0 the
  worst reached, 1 the best), and the via points' candidates are picked
  together (dynamic programming, best_sequence) against continuity x
  (turn / pi)^2 between neighbouring keys, the keyed start and end included,
  with a soft ceiling at max_turn_deg (turn_cost), so a small gain never buys
  a large turn, whatever the objective's units;
- each pick is then refined against its chosen neighbours.

The joint trajectory (trajectory.track) then follows one IK branch, warm-started
sample to sample. Two families of candidates:

- tangent_mechanism: the approach axis on the path tangent and a free roll
  theta about it, within max_roll_deg of the tangent mode's roll (a wrist
  has a limited range: rolls drifting further along the path would run it
  into its limit), on evenly spaced angles refined by halving steps;
  theta = 0 is the tangent mode's roll (from the interpolated orientation),
  and no roll scoring below it is taken, so the result holds the arm at
  least as well as tangent mode. Rolls are unwrapped along the path.
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

CEILING = 100.0  # how much more a turn beyond PathSearch.max_turn_deg costs
TOL_SCORE = 1e-12  # relative: a roll scoring this close to the tangent mode's counts as no worse


@dataclass(frozen=True)
class PathSearch:
    """How the via points' optima are searched along the path."""

    rolls: int = 24           # tangent_mechanism: coarse rolls per full turn about the tangent (15 degrees apart)
    max_roll_deg: float = 90.0  # tangent_mechanism: rolls searched within this of the tangent mode's
    refine: int = 3           # halving rounds around the winner
    continuity: float = 3.0   # weight of (turn from the previous key / pi)^2 against the normalised objective
    max_turn_deg: float = 45.0  # soft ceiling: turns between neighbouring keys beyond it cost CEILING x more
    restarts: int = 4         # fixed random IK starts besides the chain's seed (the same at every via)
    rng_seed: int = 0


@dataclass
class ViaOptimum:
    """The chosen orientation and IK solution at each via point."""

    quats: np.ndarray       # (V, 4)
    q: np.ndarray           # (V, C) rad, the joint values holding it best (from any of the starts)
    score: np.ndarray       # (V,) objective, larger is better; -inf where no candidate was reached
    base_score: np.ndarray  # (V,) the objective at the reference (tangent mode's roll / the interpolated)
    roll: np.ndarray        # (V,) rad, unwrapped roll about the tangent (tangent_mechanism), else NaN

    @property
    def reached(self) -> np.ndarray:
        return np.isfinite(self.score)


# ------------------------------------------------------------- scoring ---

def seeds_for(chain: mech.MechanismChain, warm, search: PathSearch, restarts: int | None = None) -> np.ndarray:
    """(S, C) IK starts: the warm start (if any), the chain's seed, then fixed random joint values."""
    count = search.restarts if restarts is None else restarts
    rows = [np.asarray(warm, float)[None]] if warm is not None else []
    rows += [chain.seed[None], mech.random_joint_values(chain, count, search.rng_seed)]
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


def turn_angles(a, b) -> np.ndarray:
    """Rotation angle (rad) between orientations a and b, sign-free, broadcast over leading axes."""
    dot = np.abs(np.sum(np.asarray(a, float) * np.asarray(b, float), axis=-1))
    return 2.0 * np.arccos(np.clip(dot, 0.0, 1.0))


def turn_cost(turn, search: PathSearch, ceiling: bool = True) -> np.ndarray:
    """The continuity cost of turning by `turn` (rad) between neighbouring keys.

    continuity x ((turn / pi)^2 + CEILING x excess / pi), the excess over
    max_turn_deg counted between via keys only (`ceiling`): a soft ceiling, so a
    path whose own tangent turns further between keys still gets
    orientations, the least turned ones. The turn from the keyed start (or to
    the end) is mostly the blend's, not the mechanism's choice: no ceiling.
    """
    over = np.maximum(np.asarray(turn) - np.radians(search.max_turn_deg), 0.0) * ceiling
    return search.continuity * ((np.asarray(turn) / np.pi) ** 2 + CEILING * over / np.pi)


def _totals(score, cost, scale, floor=None) -> np.ndarray:
    """Objective over its range among the candidates (0 worst, 1 best) minus the continuity `cost`;
    -inf where unreached or below `floor`. scale (P, 2): the range's low end and width."""
    total = (score - scale[..., :1]) / scale[..., 1:] - cost
    valid = np.isfinite(score)
    if floor is not None:
        valid &= ~(score < floor[..., None] - TOL_SCORE * np.abs(floor[..., None]))
    return np.where(valid, total, -np.inf)


def _scale(score: np.ndarray) -> np.ndarray:
    """(P, 2) the lowest reached score and the range's width (a tiny width when all are equal)."""
    reached = np.isfinite(score)
    low = np.min(np.where(reached, score, np.inf), axis=-1)
    high = np.max(np.where(reached, score, -np.inf), axis=-1)
    low = np.where(np.isfinite(low), low, 0.0)
    width = np.where(np.isfinite(high), high - low, 0.0)
    return np.stack([low, np.maximum(width, 1e-12 * np.maximum(np.abs(low), 1.0))], axis=-1)


# ------------------------------------------------------------- choosing ---

@dataclass
class _Best:
    quats: np.ndarray  # (P, 4)
    q: np.ndarray      # (P, C)
    score: np.ndarray  # (P,)
    total: np.ndarray  # (P,)


def choose(chain, positions, candidates, seeds, objective, previous, search: PathSearch, floor=None):
    """The candidate (P, K, 4) of best total per position; previous (P, 4) or None (no turn cost)."""
    q, score = hold_scores(chain, positions, candidates, seeds, objective)
    cost = 0.0 if previous is None else turn_cost(turn_angles(candidates, previous[:, None]), search)
    scale = _scale(score)
    total = _totals(score, cost, scale, floor)
    pick = np.argmax(total, axis=1)
    rows = np.arange(score.shape[0])
    best = _Best(candidates[rows, pick].copy(), q[rows, pick].copy(), score[rows, pick].copy(), total[rows, pick])
    return best, scale, pick


def improve(chain, positions, best: _Best, trials, objective, previous, search: PathSearch, scale, floor=None,
            seeds=None) -> np.ndarray:
    """Replace each winner by a trial (P, T, 4) when its total is higher; IK from `seeds` (P, S, C),
    by default warm-started from the winner's joint values.

    Returns the (P,) index of the trial taken, -1 where the winner stayed.
    """
    q, score = hold_scores(chain, positions, trials, best.q[:, None] if seeds is None else seeds, objective)
    cost = 0.0 if previous is None else turn_cost(turn_angles(trials, previous[:, None]), search)
    total = _totals(score, cost, scale, floor)
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

def best_sequence(gain: np.ndarray, candidates: np.ndarray, previous, following, search: PathSearch) -> np.ndarray:
    """(V,) candidate per via maximising the summed gain minus the turn_cost between neighbours
    (the start key `previous` and the end key `following` included), by dynamic programming.

    gain (V, K) is -inf for a candidate that may not be taken; candidates (V, K, 4).
    """
    count = gain.shape[0]
    cost = lambda a, b, ceiling=True: turn_cost(turn_angles(a[:, None], b[None]), search, ceiling)  # noqa: E731
    value = gain[0] - (0.0 if previous is None else cost(np.asarray(previous)[None], candidates[0], False)[0])
    back = np.zeros(gain.shape, dtype=int)
    for i in range(1, count):
        step = value[:, None] - cost(candidates[i - 1], candidates[i])  # (K from, K to)
        back[i] = np.argmax(step, axis=0)
        value = step[back[i], np.arange(gain.shape[1])] + gain[i]
    if following is not None:
        value = value - cost(candidates[-1], np.asarray(following)[None], False)[:, 0]
    pick = np.empty(count, dtype=int)
    pick[-1] = int(np.argmax(value))
    for i in range(count - 1, 0, -1):
        pick[i - 1] = back[i, pick[i]]
    return pick


def _gains(score: np.ndarray, floor: np.ndarray | None = None) -> np.ndarray:
    """(V, K) objective over its range per via (0 worst reached, 1 best); -inf unreached or below floor."""
    return _totals(score, 0.0, _scale(score), floor)


def tangent_mechanism_search(chain, via, tangents, reference, approach_axis, objective: str = "manipulability",
                             search: PathSearch = PathSearch(), previous=None, following=None) -> ViaOptimum:
    """Approach axis on each tangent, the roll about it chosen by the mechanism, continuous along the path.

    previous / following (4,) are the start and end keys' orientations; the
    rolls are picked together (best_sequence), then refined one by one.
    """
    via = np.asarray(via, float).reshape(-1, 3)
    count = via.shape[0]
    aligned = align_axis(reference, approach_axis, tangents)
    axes = quat_to_matrix(aligned) @ (np.asarray(approach_axis, float) / np.linalg.norm(approach_axis))
    step = 2.0 * np.pi / search.rolls
    side = np.arange(1, int(np.floor(np.radians(min(search.max_roll_deg, 180.0)) / step + 1e-9)) + 1) * step
    thetas = np.concatenate([[0.0], side, -side[side < np.pi - 1e-9]])  # thetas[0] = 0: tangent mode's roll
    rolled = lambda i, angles: quat_mul(axis_turns(np.broadcast_to(axes[i], (len(angles), 3)), angles), aligned[i])  # noqa: E731
    candidates = np.stack([rolled(i, thetas) for i in range(count)])  # (V, R, 4)
    seeds = np.ascontiguousarray(np.broadcast_to(seeds_for(chain, None, search), (count,) + (search.restarts + 1, chain.columns.size)))
    q, score = hold_scores(chain, via, candidates, seeds, objective)
    base = score[:, 0]
    floor = np.where(np.isfinite(base), base, -np.inf)
    gain = _gains(score, floor)
    out = _empty(count, chain)
    out.base_score[:] = base
    reached = np.any(np.isfinite(gain), axis=1)
    out.quats[:] = aligned
    if not np.any(reached):
        return out
    pick = best_sequence(np.where(reached[:, None], gain, 0.0), candidates, previous, following, search)
    theta = thetas[pick]
    rows = np.arange(count)
    out.quats[reached], out.q[reached], out.score[reached] = (candidates[rows, pick][reached], q[rows, pick][reached],
                                                              score[rows, pick][reached])
    scale = _scale(score)
    step = np.pi / search.rolls
    limit = np.radians(search.max_roll_deg)
    for _ in range(search.refine):
        for i in np.flatnonzero(reached):
            angles = np.clip(theta[i] + np.array([0.0, -step, step]), -limit, limit)
            k = _refine(chain, out, i, via, rolled(i, angles), seeds[i], objective, (previous, following), search,
                        scale[i], floor[i])
            theta[i] = angles[k]
        step *= 0.5
    out.roll[:] = np.unwrap(np.where(reached, theta, 0.0))
    return out


def mechanism_search(chain, via, reference, objective: str = "manipulability", search: PathSearch = PathSearch(),
                     previous=None, following=None, table=None) -> ViaOptimum:
    """The orientation over SO(3) the arm holds best at each via point, continuous along the path.

    Candidates per via: the chain's orientation set (or the lookup table's
    single-branch answer) and the reference; picked together by best_sequence,
    then refined by small turns about x, y, z against the chosen neighbours.
    """
    if table is not None and not mech.same_objective(table.objective, objective):
        raise ValueError(f"the lookup table was built for {table.objective!r}, not {objective!r}")
    via = np.asarray(via, float).reshape(-1, 3)
    count = via.shape[0]
    reference = np.asarray(reference, float).reshape(-1, 4)
    looked = table.lookup(via) if table is not None else np.full((count, 4), np.nan)
    pool = np.where(np.isnan(looked[:, None, :1]), chain.candidates[None], looked[:, None])  # (V, K, 4)
    candidates = np.concatenate([reference[:, None], pool], axis=1)
    seeds = np.ascontiguousarray(np.broadcast_to(seeds_for(chain, None, search, 1), (count, 2, chain.columns.size)))
    q, score = hold_scores(chain, via, candidates, seeds, objective)
    gain = _gains(score)
    out = _empty(count, chain)
    out.base_score[:] = score[:, 0]
    out.quats[:] = reference
    reached = np.any(np.isfinite(gain), axis=1)
    if not np.any(reached):
        return out
    pick = best_sequence(np.where(reached[:, None], gain, 0.0), candidates, previous, following, search)
    rows = np.arange(count)
    out.quats[reached], out.q[reached], out.score[reached] = (candidates[rows, pick][reached], q[rows, pick][reached],
                                                              score[rows, pick][reached])
    scale = _scale(score)
    for round_ in range(search.refine):
        turns = axis_turns(np.vstack([np.eye(3), -np.eye(3)]), np.full(6, 0.2 * 0.5 ** round_))
        for i in np.flatnonzero(reached):
            trials = np.vstack([out.quats[i][None], quat_mul(turns, out.quats[i])])
            _refine(chain, out, i, via, trials, np.vstack([out.q[i][None], seeds[i]]), objective,
                    (previous, following), search, scale[i])
    return out


def _refine(chain, out: ViaOptimum, i: int, via, trials, seeds, objective: str, ends, search: PathSearch,
            scale, floor=None) -> int:
    """Take the trial (T, 4) at via i with the best objective less its turn costs to the chosen
    neighbours (or the keyed ends); trial 0 is the current choice. Returns the index taken."""
    count = out.quats.shape[0]
    around = [(out.quats[i - 1], True) if i > 0 else (ends[0], False),
              (out.quats[i + 1], True) if i + 1 < count else (ends[1], False)]
    q, score = hold_scores(chain, via[i:i + 1], trials[None], seeds[None], objective)
    cost = sum(turn_cost(turn_angles(trials, other), search, between_vias)
               for other, between_vias in around if other is not None)
    total = _totals(score, cost, scale[None], None if floor is None else np.atleast_1d(floor))[0]
    k = int(np.argmax(total))
    if not np.isfinite(total[k]):
        return 0
    out.quats[i], out.q[i], out.score[i] = trials[k], q[0, k], score[0, k]
    return k


def _empty(count: int, chain) -> ViaOptimum:
    return ViaOptimum(np.full((count, 4), np.nan), np.tile(chain.seed, (count, 1)), np.full(count, -np.inf),
                      np.full(count, -np.inf), np.full(count, np.nan))


__all__ = ["PathSearch", "ViaOptimum", "tangent_mechanism_search", "mechanism_search", "best_sequence",
           "hold_scores", "seeds_for", "turn_angles", "turn_cost", "choose", "improve", "axis_turns"]
