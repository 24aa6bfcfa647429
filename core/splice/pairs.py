"""Which posture pair joins clip A to clip B: the comparison table, the ranking, the candidates.

Every posture of A's end preparatory movement is compared with every posture
of B's start preparatory movement. A pair passes when the chosen criterion is
under its threshold and every switched-on condition holds (the same drive
direction of every joint moving in both, drive speeds within a tolerance).
Pairs are ranked in three tiers:

0. pairs that pass, ordered by the policy: least preparatory time kept
   ('shortest', keeps the tempo), most alike ('similar'), or closest drive
   speed ('speed': integrated over joints, or of the joint that changes most);
1. when the conditions leave none: the pairs within the angle threshold,
   shortest preparation first (the method's fallback);
2. the rest, closest first, so a join is always made and the report says so.

The first ranked pair is the join; the best few distinct ones are offered as
candidates the animator may pick instead. Frames are clip frames; degrees.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .detect import Clip, Periods, interval_frames
from .settings import CRITERIA, THRESHOLD_RANGE, SpliceSettings

CRITERION_LABELS = {"integrated": "sum", "mean": "mean", "max_joint": "largest joint"}
TIER_NAMES = ("", "conditions", "closest")


@dataclass
class PairTable:
    """Every candidate pair: A's end-preparatory postures (rows) x B's start-preparatory ones."""

    a_frames: np.ndarray        # (P,) clip frames of A
    b_frames: np.ndarray        # (Q,) clip frames of B
    integrated_deg: np.ndarray  # (P, Q) sum over joints of |angle_A - angle_B|
    max_joint_deg: np.ndarray   # (P, Q) largest single-joint difference
    worst_joint: np.ndarray     # (P, Q) column of that joint
    direction_ok: np.ndarray    # (P, Q) no joint drives the opposite way
    speed_a: np.ndarray         # (P, Q) A's drive speed by the speed measure, rad/s
    speed_b: np.ndarray         # (P, Q) B's
    speed_ok: np.ndarray        # (P, Q) drive speeds within the tolerance
    angle_ok: np.ndarray        # (P, Q) the criterion under its threshold
    passes: np.ndarray          # (P, Q) the criterion and every switched-on condition
    threshold_deg: float        # the criterion's threshold used
    joints: int

    def measure(self, criterion: str) -> np.ndarray:
        if criterion == "mean":
            return self.integrated_deg / self.joints
        return self.integrated_deg if criterion == "integrated" else self.max_joint_deg

    @property
    def speed_gap(self) -> np.ndarray:
        """(P, Q) |speed_a - speed_b|, rad/s."""
        return np.abs(self.speed_a - self.speed_b)


@dataclass(frozen=True)
class Candidate:
    """One ranked pair: table row and column, and its tier (0 passes, 1 fallback, 2 closest)."""

    row: int
    col: int
    tier: int


def _thinned(frames: np.ndarray, limit: int) -> np.ndarray:
    if len(frames) <= limit:
        return frames
    return np.unique(np.round(np.linspace(frames[0], frames[-1], limit)).astype(int))


def _drive(q: np.ndarray, frames: np.ndarray, fps: float, interval_s: float, ahead: bool) -> np.ndarray:
    """(P, n) rad/s over the interval: arriving at A's postures (behind), leaving B's (ahead)."""
    h = interval_frames(fps, interval_s)
    other = np.minimum(frames + h, len(q) - 1) if ahead else np.maximum(frames - h, 0)
    span = np.abs(other - frames)
    change = (q[other] - q[frames]) if ahead else (q[frames] - q[other])
    return change * fps / np.maximum(span, 1)[:, None]


def _speeds(va: np.ndarray, vb: np.ndarray, measure: str) -> tuple[np.ndarray, np.ndarray]:
    """(P, Q) drive speeds of A's and B's postures: summed over joints, or of the joint that changes most.

    The joint that changes most is, for each pair, the one with the fastest
    drive in either posture; both postures are measured on that same joint.
    """
    sa, sb = np.abs(va), np.abs(vb)
    if measure == "integrated":
        return np.broadcast_arrays(sa.sum(axis=1)[:, None], sb.sum(axis=1)[None, :])
    fastest = np.maximum(sa[:, None, :], sb[None, :, :]).argmax(axis=-1)  # (P, Q)
    return sa[np.arange(len(sa))[:, None], fastest], sb[np.arange(len(sb))[None, :], fastest]


def pair_table(a: Clip, pa: Periods, b: Clip, pb: Periods, settings: SpliceSettings) -> PairTable:
    """Compare every posture of A's end preparatory movement with every one of B's start."""
    af = _thinned(pa.end_frames(a.frames), settings.max_candidates)
    bf = _thinned(pb.start_frames(), settings.max_candidates)
    qa, qb = np.asarray(a.q, float), np.asarray(b.q, float)
    diff = np.abs(qa[af][:, None, :] - qb[bf][None, :, :])
    integrated, largest = np.degrees(diff.sum(axis=-1)), np.degrees(diff.max(axis=-1))
    va = _drive(qa, af, a.fps, settings.interval_s, ahead=False)
    vb = _drive(qb, bf, b.fps, settings.interval_s, ahead=True)
    still = np.radians(settings.still_deg_s)
    sa, sb = np.sign(va) * (np.abs(va) >= still), np.sign(vb) * (np.abs(vb) >= still)
    direction_ok = ~((sa[:, None, :] * sb[None, :, :]) < 0).any(axis=-1)
    speed_a, speed_b = _speeds(va, vb, settings.speed_measure)
    speed_ok = np.abs(speed_a - speed_b) <= settings.speed_tolerance * np.maximum(np.maximum(speed_a, speed_b), still)
    empty = np.zeros(integrated.shape, dtype=bool)
    threshold = settings.threshold_for(qa.shape[1])
    table = PairTable(af, bf, integrated, largest, diff.argmax(axis=-1), direction_ok, speed_a, speed_b,
                      speed_ok, empty, empty.copy(), threshold, qa.shape[1])
    table.angle_ok = table.measure(settings.criterion) <= threshold + 1e-9
    table.passes = table.angle_ok.copy()
    if settings.match_direction:
        table.passes &= direction_ok
    if settings.match_speed:
        table.passes &= speed_ok
    return table


def kept_preparation(table: PairTable, a: Clip, pa: Periods, b: Clip, pb: Periods) -> np.ndarray:
    """(P, Q) seconds of preparatory movement still played around the join."""
    return (table.a_frames[:, None] - pa.main_end) / a.fps + (pb.main_start - table.b_frames[None, :]) / b.fps


def rank_pairs(table: PairTable, kept: np.ndarray, settings: SpliceSettings) -> np.ndarray:
    """(P*Q, 3) rows (row, column, tier), best first (see the module docstring)."""
    measure = np.round(table.measure(settings.criterion), 9)
    primary = {"shortest": kept, "similar": measure, "speed": table.speed_gap}[settings.policy]
    secondary = measure if settings.policy == "shortest" else kept
    tier = np.where(table.passes, 0, np.where(table.angle_ok, 1, 2))
    first = np.where(tier == 0, np.round(primary, 9), np.where(tier == 1, kept, measure))
    second = np.where(tier == 0, secondary, np.where(tier == 1, measure, kept))
    order = np.lexsort((second.ravel(), first.ravel(), tier.ravel()))
    rows, cols = np.unravel_index(order, measure.shape)
    return np.column_stack([rows, cols, tier.ravel()[order]])


def candidates(table: PairTable, ranked: np.ndarray, a_fps: float, b_fps: float,
               settings: SpliceSettings) -> list[Candidate]:
    """The best `settings.candidates` ranked pairs, each at least one interval away from every pair
    before it on one side at least, so the list offers real alternatives, not neighbouring frames."""
    ha, hb = interval_frames(a_fps, settings.interval_s), interval_frames(b_fps, settings.interval_s)
    chosen: list[Candidate] = []
    for row, col, tier in ranked:
        fa, fb = table.a_frames[row], table.b_frames[col]
        if any(abs(fa - table.a_frames[c.row]) < ha and abs(fb - table.b_frames[c.col]) < hb for c in chosen):
            continue
        chosen.append(Candidate(int(row), int(col), int(tier)))
        if len(chosen) == settings.candidates:
            break
    return chosen


def choose_pair(table: PairTable, a: Clip, pa: Periods, b: Clip, pb: Periods,
                settings: SpliceSettings) -> tuple[int, int, bool]:
    """(row, column, criteria met) of the best ranked pair; met when it is within the angle threshold."""
    row, col, tier = rank_pairs(table, kept_preparation(table, a, pa, b, pb), settings)[0]
    return int(row), int(col), bool(tier <= 1)


def _suggestions(table: PairTable, i: int, j: int) -> str:
    """Thresholds that would let the chosen pair pass, only those the tool accepts."""
    offers = []
    for criterion in CRITERIA:
        needed = math.ceil(float(table.measure(criterion)[i, j]) * 10.0) / 10.0
        low, high = THRESHOLD_RANGE[criterion]
        if needed <= high:
            offers.append(f"the {CRITERION_LABELS[criterion]} criterion at {max(needed, low):g} deg")
    if not offers:
        return "No threshold the tool accepts would pass this pair; "
    return "It would pass with " + " or ".join(offers) + "; "


def describe_choice(table: PairTable, pick: Candidate, a: Clip, b: Clip, settings: SpliceSettings) -> str:
    """Empty for a passing pair; otherwise what was chosen instead, and how to get a real match."""
    i, j = pick.row, pick.col
    chosen = f"{a.name} {table.a_frames[i] / a.fps:.2f} s, {b.name} {table.b_frames[j] / b.fps:.2f} s"
    label = f"{CRITERION_LABELS[settings.criterion]} difference <= {table.threshold_deg:g} deg"
    if pick.tier == 0:
        return ""
    if pick.tier == 1:
        failed = ["the same drive direction"] * settings.match_direction + ["close drive speeds"] * settings.match_speed
        return (f"no posture pair of clip {a.name!r} and clip {b.name!r} within the {label} has "
                f"{' and '.join(failed)}; joined at the pair with the shortest preparation among "
                f"{int(table.angle_ok.sum())} within the threshold ({chosen})")
    conditions = [label] + ["same drive direction"] * settings.match_direction
    conditions += ["close drive speed"] * settings.match_speed
    window_a = f"{table.a_frames[0] / a.fps:.2f}-{table.a_frames[-1] / a.fps:.2f} s"
    window_b = f"{table.b_frames[0] / b.fps:.2f}-{table.b_frames[-1] / b.fps:.2f} s"
    return (f"no posture pair of clip {a.name!r} (end, {window_a}) and clip {b.name!r} (start, {window_b}) "
            f"meets {' and '.join(conditions)}; joined at the closest pair ({chosen}, "
            f"{table.integrated_deg[i, j]:.1f} deg integrated). {_suggestions(table, i, j)}"
            f"or widen the preparatory windows (marker main_end earlier in {a.name!r}, main_start later in "
            f"{b.name!r}), or give both clips a shared home posture.")
