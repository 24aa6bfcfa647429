"""The waist's tilt against the stance legs' limits: a robot keeps only as much of the person's
pelvis tilt as its standing feet allow.

A person holding a leg up lets the pelvis drop on the swing side, the stance hip adducting far;
a robot's hip roll stops sooner (the G1's at 0.52 rad), and with the pelvis tilted like the
person's the stance foot cannot stay flat on the ground under it. Where a foot that is down
cannot stand, the waist's tilt is taken back toward upright (at the same heading) as far as
lets it, smoothly over time; the waist's height is fitted only for what untilting cannot mend
(core.balance.correction.Corrector.fit_height).
"""
from __future__ import annotations

import numpy as np

from ..model.transforms import pose_matrices
from .legs import solve_legs, stretch
from .waist import keep_tilt

TILT_SHARES = np.array([1.0, 0.0])  # of the waist's tilt tried where a foot that is down cannot stand, most first
TRIAL_ITERATIONS = 12  # each trial is a quick solve from the legs as they are
HEIGHT_TOL_M = 0.00025  # the found step is bisected toward the one before it to this: the height asked is the least
#   that stands, continuous in the fit's input (a step's whole 1-2 cm flipped by a micrometre made the H1 gait chaotic)
HEIGHT_HEADROOM_M = 0.002  # added to the least height that stands, the way it moved: at the bare threshold the
#   later stages moved the H1 10 s clip's legs off it (worst margin +8.85 / +8.15 mm from two starts; 2 mm: +10.63 / +10.80)
FINE_HEIGHT = False  # True: the found step bisected (least_height); off: with it the H1 gait stays a draw
#   downstream and misses its margin on the H1 scaled 1.1 / 0.9 (docs/history/balanced_gait.md, session 22 s22-heightfit)


def fit_waist(corrector, q: np.ndarray, root_pos: np.ndarray, bad: np.ndarray, steps: np.ndarray, width: int,
              envelope) -> np.ndarray:
    """Where the feet that are down cannot stand (rows `bad` of the legs q (N, n) solved for the
    waist at root_pos (N, 3)): the smallest change of the waist's height (of `steps`, metres,
    smallest first) with which they stand, keeping as much of the waist's tilt as lets them at
    that height (TILT_SHARES). Every trial is one batch (each sample its own problem). The tilt
    given up is spread over `width` samples by envelope(drop, width) (a smooth curve never below
    it) and the corrector's root_rot turned accordingly; returns the height change each sample
    needs (N,) (0 where none stands), for the caller to smooth."""
    need = np.zeros(len(q))
    if len(bad) == 0:
        return need
    changes = np.r_[0.0, steps]
    trials = len(changes) * len(TILT_SHARES)
    # the tilt given up only where a leg that is down stands at a joint's limit: elsewhere it is no
    # cause, and those trials are not solved
    tried = np.tile(np.tile(TILT_SHARES == 1.0, len(changes)), len(bad)) | np.repeat(at_limit(corrector, q, bad), trials)
    if corrector.planar:  # legs without an ankle roll: only the height the cause asks for (the upright H1 walk's
        # waist too: asked everywhere, a 10 cm raise stood one sample at 1.09 s and the new foot left the ground,
        # worst margin -184 mm; -22 mm with the cause, 2026-12-03)
        way = height_cause(corrector, q, root_pos, bad)
        tried &= (np.sign(np.repeat(changes, len(TILT_SHARES)))[None, :] * way[:, None] > 0).ravel()
    rows = np.repeat(bad, trials)[tried]
    share = np.tile(np.tile(TILT_SHARES, len(changes)), len(bad))[tried]
    position = root_pos[rows].copy()
    position[:, 2] += np.tile(np.repeat(changes, len(TILT_SHARES)), len(bad))[tried]
    root = pose_matrices(keep_tilt(corrector.root_rot[rows], share), position)
    ok = np.zeros(len(tried), dtype=bool)
    ok[tried] = _trial_stands(corrector, q, rows, root)
    ok = ok.reshape(len(bad), trials)
    found = ok.any(axis=1)
    first = np.argmax(ok[found], axis=1)  # the smallest height change, then the most tilt kept
    need[bad[found]] = changes[first // len(TILT_SHARES)]
    if FINE_HEIGHT:
        fine = bad[found]
        need[fine] = least_height(corrector, q, root_pos, fine, need[fine], TILT_SHARES[first % len(TILT_SHARES)],
                                  changes)
    drop = np.zeros(len(q))
    drop[bad[found]] = 1.0 - TILT_SHARES[first % len(TILT_SHARES)]
    if drop.any():
        kept = 1.0 - np.clip(envelope(drop, width), 0.0, 1.0)
        corrector.untilt(kept)
    return need


def least_height(corrector, q: np.ndarray, root_pos: np.ndarray, rows: np.ndarray, found: np.ndarray,
                 share: np.ndarray, changes: np.ndarray) -> np.ndarray:
    """The least change of height (len(rows),) between each found step (found, metres, stands) and the
    step before it the same way (or none), bisected to HEIGHT_TOL_M with the tilt share each stood with:
    one batched quick solve a halving, of the samples not yet that fine, each from the legs q as they are
    (not from the last halving's), so the answer moves with the input as a threshold does, by a fraction
    of a millimetre, not by a step."""
    hi = found.copy()
    lo = np.array([max((c for c in changes if c * f > 0 and abs(c) < abs(f)), key=abs, default=0.0)
                   for f in found])
    rot = keep_tilt(corrector.root_rot[rows], share)
    while True:
        open_ = np.flatnonzero(np.abs(hi - lo) > HEIGHT_TOL_M)
        if len(open_) == 0:
            return hi + np.sign(hi) * HEIGHT_HEADROOM_M
        mid = 0.5 * (lo[open_] + hi[open_])
        at = rows[open_]
        position = root_pos[at].copy()
        position[:, 2] += mid
        stands = _trial_stands(corrector, q, at, pose_matrices(rot[open_], position))
        hi[open_] = np.where(stands, mid, hi[open_])
        lo[open_] = np.where(stands, lo[open_], mid)


def _trial_stands(corrector, q: np.ndarray, rows: np.ndarray, root: np.ndarray) -> np.ndarray:
    """(len(rows),) whether the legs of samples `rows` (indices into q, possibly repeated), quickly solved
    again from q under the waist poses root (len(rows), 4, 4), stand: one trial of the height fit."""
    goals = {foot: goal[rows] for foot, goal in corrector.goals.items()}
    air = {foot: corrector.air_share[foot][rows] for foot in corrector.goals}
    q_trial, _ = solve_legs(corrector.tree, corrector.legs, q[rows], root, goals, corrector.rest[rows], air,
                            TRIAL_ITERATIONS, quick=True)
    return corrector.standing(q_trial, root, rows)


LIMIT_TOL_RAD = 1e-3


def height_cause(corrector, q: np.ndarray, root_pos: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """(len(rows),) which way a height change can mend a foot that is down: -1 (lower) where a hip is
    beyond its leg's reach of its foot's goal, else as a leg that is down at its ankle's limit asks
    (ankle_cause), 0 where neither (a foot turned or tilted by the waist's roll and yaw: no height
    mends it). The H1 walk's height fit, asked everywhere, found a trial height that happened to stand
    and raised the waist up to 14 cm over 0.8 s, the straight stance leg off its foot."""
    root = pose_matrices(corrector.root_rot[rows], root_pos[rows])
    goals = {foot: goal[rows] for foot, goal in corrector.goals.items()}
    down = {foot: d[rows] for foot, d in corrector.down.items()}
    reach = [corrector.settings.reach * length for length in corrector.full_reach]
    far = stretch(corrector.tree, corrector.legs, reach, q[rows], root, goals, down) > 0.0
    return np.where(far, -1, ankle_cause(corrector, q[rows], root, down))


def ankle_cause(corrector, q: np.ndarray, root: np.ndarray, down: dict[int, np.ndarray]) -> np.ndarray:
    """(F,) which way the waist's height relieves the legs that are down at their ankle's limit (q (F,
    n), root (F, 4, 4), down per foot, at the same samples): a shin leaning back (the ankle behind the
    knee, a trailing leg) leans less with the waist higher, the knee less bent; a shin leaning forward
    (the ankle ahead, a leading leg reaching) leans less with it lower, the knee bent under the hip.
    +1, -1, or 0 (none at a limit, or both ways: no height mends both). Raising for both (as before)
    asked the H1 walk's waist up over its last landing (6.70-6.90 s), that foot ahead at its ankle's
    limit with its hip already out of reach."""
    forward = root[:, :2, 0] / np.linalg.norm(root[:, :2, 0], axis=1, keepdims=True)
    up, low = np.zeros(len(q), dtype=bool), np.zeros(len(q), dtype=bool)
    tree = corrector.tree
    for leg in corrector.legs:
        ankle = q[:, leg.columns[-1]]
        bent = down[leg.foot] & ((ankle <= leg.lower[-1] + LIMIT_TOL_RAD) | (ankle >= leg.upper[-1] - LIMIT_TOL_RAD))
        ahead = np.zeros(len(q), dtype=bool)  # a leg without a knee: raise, as before
        if leg.knee >= 0:
            knee_link, ankle_link = (next(link for link in leg.links if tree.qindex[link] == column)
                                     for column in (leg.knee, leg.columns[-1]))
            shin = (tree.link_transform(q, ankle_link, root)[:, :2, 3]
                    - tree.link_transform(q, knee_link, root)[:, :2, 3])
            ahead = np.einsum("fi,fi->f", shin, forward) > 0.0
        up |= bent & ~ahead
        low |= bent & ahead
    return np.where(up & low, 0, np.where(up, 1, np.where(low, -1, 0)))


def at_limit(corrector, q: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """(len(rows),) True where a leg whose foot is down has a joint at its limit (q (N, n))."""
    out = np.zeros(len(rows), dtype=bool)
    for leg in corrector.legs:
        x = q[rows][:, leg.columns]
        stuck = ((x <= leg.lower + LIMIT_TOL_RAD) | (x >= leg.upper - LIMIT_TOL_RAD)).any(axis=1)
        out |= stuck & corrector.down[leg.foot][rows]
    return out
