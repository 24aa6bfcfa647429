"""Splice robot clips where they are most alike, with a generated transition.

Clip A is joined to clip B at the pair of postures (one in A's end
preparatory movement, one in B's start preparatory movement) that are most
alike; what follows in A and what precedes in B is dropped and a transition
generated in joint space fills the gap. The main movements stay whole and keep
their tempo, instead of every clip returning to a home pose. Three or more
clips are joined pairwise in order. Periods come from core.splice.detect.

Root motion across a join: B is moved rigidly, a turn about the vertical and
a shift, so that its root continues from where A's ends: the robot carries
on from where it stands and in the direction it faces, instead of jumping back
to where B was recorded. Heights and tilts stay B's own (each clip was
grounded by its own retarget). During the transition the root follows a cubic
from A's position and velocity to B's moved ones and turns by a slerp.

Arrays are frames first; joint positions in radians, roots in metres with
quaternions w first, times in seconds from each clip's first frame.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

import numpy as np

from .detect import Clip, DetectSettings, Periods, SpliceError, check_clips, clip_periods
from .pairs import Candidate, PairTable, candidates, choose_pair, describe_choice, kept_preparation, pair_table, \
    rank_pairs
from .resample import common_rate
from .settings import SpliceSettings
from .transition import Transition, edge_velocity, hermite, make_transition, representative_speed
from ..model.transforms import matrix_to_quat, quat_continuous, quat_to_matrix

# Re-exported: callers import the whole splice vocabulary from here.
__all__ = ["Clip", "DetectSettings", "JoinResult", "PairTable", "Piece", "RootMove", "SpliceError", "SpliceResult",
           "SpliceSettings", "Transition", "choose_pair", "join_clips", "pair_table", "representative_speed",
           "splice"]

FALLBACK_SPEED = 1.0  # rad/s, when no clip has a moving main movement to measure


@dataclass
class JoinResult:
    """One join, as reported to the animator (times in each clip's own seconds)."""

    a_clip: str
    b_clip: str
    a_time_s: float
    b_time_s: float
    angle_difference_deg: float      # integrated over joints
    max_joint_difference_deg: float
    worst_joint: str
    transition_s: float
    discarded_s: float               # of A after the join plus of B before it
    kept_preparation_s: float        # preparatory time still played around the join
    time_saved_s: float              # against playing both whole with a cut through the home pose
    criteria_met: bool
    speed_rad_s: float
    velocity_jump_rad_s: float
    allowed_jump_rad_s: float
    out_time_s: float = 0.0          # where the transition starts in the spliced result
    message: str = ""
    mean_difference_deg: float = 0.0  # integrated over the joint count
    threshold_deg: float = 0.0       # the criterion's threshold used
    fallback: str = ""               # '' (passed), 'conditions' (within the angle only) or 'closest'
    speed_gap_rad_s: float = 0.0     # |A's - B's drive speed| by the speed measure
    transition_shape: str = "eased"
    pick: int = 0                    # which candidate was used (0: the best ranked)
    candidates: list[dict] = field(default_factory=list)  # the best distinct pairs, best first

    def to_dict(self) -> dict:
        return {k: (float(v) if isinstance(v, (float, np.floating)) else v) for k, v in asdict(self).items()}


@dataclass
class Piece:
    """A stretch of the result: clip frames first..last (inclusive), or a transition's 0..n."""

    kind: str       # 'clip' or 'transition'
    index: int      # clip index, or join index for a transition
    first: int
    last: int
    out_first: int  # result frame of `first` (a transition shares its ends with the clips)


@dataclass
class RootMove:
    """Rigid move applied to a clip's root: p' = R p + t, R' = R Rclip."""

    rotation: np.ndarray = field(default_factory=lambda: np.eye(3))
    translation: np.ndarray = field(default_factory=lambda: np.zeros(3))

    def apply(self, position: np.ndarray, rotation: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return position @ self.rotation.T + self.translation, self.rotation @ rotation

    @property
    def is_identity(self) -> bool:
        return bool(np.allclose(self.rotation, np.eye(3), atol=1e-9) and np.allclose(self.translation, 0, atol=1e-6))


@dataclass
class SpliceResult:
    """The spliced motion (frames first) and how it was made."""

    joint_names: list[str]
    clip_names: list[str]
    q: np.ndarray
    fps: float
    joins: list[JoinResult]
    pieces: list[Piece]
    transitions: list[Transition]
    periods: list[Periods]
    root_moves: list[RootMove]
    root_position: np.ndarray | None = None
    root_quaternion: np.ndarray | None = None
    warnings: list[str] = field(default_factory=list)
    resampled: list[dict] = field(default_factory=list)  # clips brought to `fps`: clip, from_fps, to_fps

    @property
    def time(self) -> np.ndarray:
        return np.arange(len(self.q)) / self.fps

    def report(self) -> dict:
        clips = [dict(name=name, **p.to_dict(self.fps)) for name, p in zip(self.clip_names, self.periods)]
        return {"frames": int(len(self.q)), "fps": float(self.fps), "duration_s": float(len(self.q) / self.fps),
                "joins": [j.to_dict() for j in self.joins], "clips": clips, "warnings": list(self.warnings),
                "resampled": [dict(r) for r in self.resampled]}


# ------------------------------------------------------------------- joins ---

def _home_seconds(a: Clip, b: Clip, speed: float) -> float:
    """A plain cut through the home pose: A played out, then straight to B's first posture."""
    return float(np.abs(np.asarray(b.q, float)[0] - np.asarray(a.q, float)[-1]).max() / speed)


def _candidate_dict(table: PairTable, kept: np.ndarray, c: Candidate, a: Clip, b: Clip, criterion: str) -> dict:
    i, j = c.row, c.col
    return {"a_time_s": float(table.a_frames[i] / a.fps), "b_time_s": float(table.b_frames[j] / b.fps),
            "angle_difference_deg": float(table.integrated_deg[i, j]),
            "criterion_deg": float(table.measure(criterion)[i, j]),
            "max_joint_difference_deg": float(table.max_joint_deg[i, j]),
            "kept_preparation_s": float(kept[i, j]), "speed_gap_rad_s": float(table.speed_gap[i, j]),
            "direction_ok": bool(table.direction_ok[i, j]), "criteria_met": c.tier <= 1, "passes": c.tier == 0}


def join_clips(a: Clip, pa: Periods, b: Clip, pb: Periods, settings: SpliceSettings, names: list[str],
               lower=None, upper=None, velocity=None, pick: int = 0) -> tuple[JoinResult, Transition, int, int]:
    """Rank the pairs, take the best (or candidate `pick`), build the transition, describe the join.

    Returns A's and B's join frames too.
    """
    table = pair_table(a, pa, b, pb, settings)
    kept = kept_preparation(table, a, pa, b, pb)
    offers = candidates(table, rank_pairs(table, kept, settings), a.fps, b.fps, settings)
    if not 0 <= pick < len(offers):
        raise SpliceError(f"join {a.name!r} -> {b.name!r}: candidate pair {pick + 1} picked, "
                          f"but there are {len(offers)}")
    choice = offers[pick]
    i, j = choice.row, choice.col
    a_frame, b_frame = int(table.a_frames[i]), int(table.b_frames[j])
    speed = representative_speed(a, pa, b, pb, settings)
    message = describe_choice(table, choice, a, b, settings)
    if speed is None:
        speed = FALLBACK_SPEED
        message = (message + " " if message else "") + (
            f"the main movements of {a.name!r} and {b.name!r} do not move: transition at {FALLBACK_SPEED:g} rad/s")
    qa, qb = np.asarray(a.q, float), np.asarray(b.q, float)
    transition = make_transition(qa, a_frame, qb, b_frame, a.fps, speed, settings, lower, upper, velocity)
    discarded = (a.frames - 1 - a_frame) / a.fps + b_frame / b.fps
    result = JoinResult(
        a.name, b.name, a_frame / a.fps, b_frame / b.fps, float(table.integrated_deg[i, j]),
        float(table.max_joint_deg[i, j]), names[int(table.worst_joint[i, j])], transition.duration_s,
        discarded, float(kept[i, j]), discarded + _home_seconds(a, b, speed) - transition.duration_s,
        choice.tier <= 1, speed, transition.velocity_jump_rad_s, transition.allowed_jump_rad_s, message=message,
        mean_difference_deg=float(table.measure("mean")[i, j]), threshold_deg=table.threshold_deg,
        fallback=("", "conditions", "closest")[choice.tier], speed_gap_rad_s=float(table.speed_gap[i, j]),
        transition_shape=settings.transition, pick=pick,
        candidates=[_candidate_dict(table, kept, c, a, b, settings.criterion) for c in offers])
    return result, transition, a_frame, b_frame


# -------------------------------------------------------------- root motion ---

def _yaw(rotation: np.ndarray) -> float:
    return float(math.atan2(rotation[1, 0], rotation[0, 0]))


def _turn(angle: float) -> np.ndarray:
    c, s = math.cos(angle), math.sin(angle)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def _slerp(q0: np.ndarray, q1: np.ndarray, s: np.ndarray) -> np.ndarray:
    """(len(s), 4) wxyz along the shorter arc."""
    q1 = -q1 if np.dot(q0, q1) < 0 else q1
    dot = min(float(np.dot(q0, q1)), 1.0)
    if dot > 0.9995:
        out = q0 + s[:, None] * (q1 - q0)
    else:
        theta = math.acos(dot)
        out = (np.sin((1 - s) * theta)[:, None] * q0 + np.sin(s * theta)[:, None] * q1) / math.sin(theta)
    return out / np.linalg.norm(out, axis=1, keepdims=True)


def _root_join(a_pos: np.ndarray, a_rot: np.ndarray, a_frame: int, b: Clip, b_frame: int, n: int,
               continue_root: bool) -> tuple[RootMove, np.ndarray, np.ndarray]:
    """B's root move and the transition's root (positions (n+1, 3), quaternions (n+1, 4))."""
    fps = b.fps
    b_pos, b_rot = np.asarray(b.root_position, float), quat_to_matrix(b.root_quaternion)
    v0 = edge_velocity(a_pos, a_frame, fps, True)
    move = RootMove()
    if continue_root:
        turn = _turn(_yaw(a_rot[a_frame]) - _yaw(b_rot[b_frame]))
        v1 = turn @ edge_velocity(b_pos, b_frame, fps, False)
        anchor = a_pos[a_frame] + (n / fps) * (v0 + v1) / 2
        anchor[2] = b_pos[b_frame, 2]
        move = RootMove(turn, anchor - turn @ b_pos[b_frame])
    moved_pos, moved_rot = move.apply(b_pos, b_rot)
    quats = matrix_to_quat(np.stack([a_rot[a_frame], moved_rot[b_frame]]))
    if n == 0:  # merged postures: B's root continues from A's
        return move, a_pos[a_frame][None].copy(), quats[:1]
    v1 = edge_velocity(moved_pos, b_frame, fps, False)
    position = hermite(a_pos[a_frame], v0, moved_pos[b_frame], v1, n, fps)
    s = np.arange(n + 1) / n
    return move, position, _slerp(quats[0], quats[1], 3 * s ** 2 - 2 * s ** 3)


# ------------------------------------------------------------------ splice ---

def splice(clips: list[Clip], settings: SpliceSettings | None = None, joint_names: list[str] | None = None,
           lower=None, upper=None, velocity=None, picks: list[int] | None = None) -> SpliceResult:
    """Join clips pairwise in order; lower/upper/velocity are the robot's joint limits (n,) if known.

    Clips at other frame rates are resampled to settings.fps (default: the
    first clip's) and the report lists them. picks[k] chooses candidate pair
    picks[k] of join k instead of the best (0); missing entries take the best.
    """
    settings = settings or SpliceSettings()
    settings.validate()
    names = check_clips(clips, joint_names)
    clips, resampled = common_rate(clips, settings.fps)
    periods = [clip_periods(clip, settings.detect) for clip in clips]
    picks = list(picks or [])
    if len(picks) > len(clips) - 1:
        raise SpliceError(f"{len(picks)} picks for {len(clips) - 1} join(s)")
    picks += [0] * (len(clips) - 1 - len(picks))
    joins = [join_clips(clips[k], periods[k], clips[k + 1], periods[k + 1], settings, names, lower, upper, velocity,
                        picks[k]) for k in range(len(clips) - 1)]
    result = _assemble(clips, periods, joins, settings, names)
    result.resampled = resampled
    result.warnings[:0] = [f"clip {r['clip']!r} resampled from {r['from_fps']:g} to {r['to_fps']:g} fps"
                           for r in resampled]
    return result


def _kept_ranges(clips: list[Clip], joins: list) -> list[tuple[int, int]]:
    """(first, last) clip frames kept; B starts after its join posture when it merged with A's."""
    starts = [0] + [b_frame + (len(t.q) == 1) for _, t, _, b_frame in joins]
    ends = [a_frame for _, _, a_frame, _ in joins] + [clips[-1].frames - 1]
    return [(min(first, last), last) for first, last in zip(starts, ends)]


def _assemble(clips: list[Clip], periods: list[Periods], joins: list, settings: SpliceSettings,
              names: list[str]) -> SpliceResult:
    """Concatenate the kept parts and transitions; carry each clip's root on from the one before."""
    fps, with_root = clips[0].fps, clips[0].has_root
    q_parts, pos_parts, rot_parts, pieces, moves, out = [], [], [], [], [RootMove()], 0
    for k, (first, last) in enumerate(_kept_ranges(clips, joins)):
        clip = clips[k]
        pieces.append(Piece("clip", k, first, last, out))
        q_parts.append(np.asarray(clip.q, float)[first:last + 1])
        if with_root:
            pos, rot = moves[k].apply(np.asarray(clip.root_position, float), quat_to_matrix(clip.root_quaternion))
            pos_parts.append(pos[first:last + 1])
            rot_parts.append(rot[first:last + 1])
        out += last - first + 1
        if k == len(joins):
            break
        join, transition, a_frame, b_frame = joins[k]
        n = len(transition.q) - 1
        if n > 0:
            pieces.append(Piece("transition", k, 0, n, out - 1))
        join.out_time_s = (out - 1) / fps
        q_parts.append(transition.q[1:-1])
        if with_root:
            move, t_pos, t_quat = _root_join(pos, rot, a_frame, clips[k + 1], b_frame, n, settings.continue_root)
            transition.root_position, transition.root_quaternion = t_pos, t_quat
            pos_parts.append(t_pos[1:-1])
            rot_parts.append(quat_to_matrix(t_quat[1:-1]))
        moves.append(move if with_root else RootMove())
        out += max(n - 1, 0)
    result = SpliceResult(names, [c.name for c in clips], np.concatenate(q_parts), fps, [j[0] for j in joins],
                          pieces, [j[1] for j in joins], periods, moves,
                          warnings=[j[0].message for j in joins if j[0].message])
    if with_root:
        result.root_position = np.concatenate(pos_parts)
        result.root_quaternion = quat_continuous(matrix_to_quat(np.concatenate(rot_parts)))
    return result
