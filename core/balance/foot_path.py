"""Where each foot is at every control cycle of a gait: flat and still in stance, and through
its swing's representative points in the air (issue 12, steps 3, 6 and 7).

A stance puts the foot level on the ground where the retargeted foot stood, turned to its
heading there. A swing starts at one stance pose and ends at the next; between them lie a
short straight lift right after lift-off, the person's representative points, and a
straight lowering onto the landing point before touch-down. Positions are a clamped cubic
spline through them (continuous velocity, zero at lift-off and touch-down); rotations the
same spline on the rotation vector from the lift-off pose (a foot turns far less than half
a turn in one swing), so the foot's angular velocity is continuous too.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np
from scipy.interpolate import CubicHermiteSpline, CubicSpline, PchipInterpolator
from scipy.spatial.transform import Rotation

from ..feet.contacts import flags_to_intervals
from ..feet.geometry import BodyPoints
from ..model.same_bits import same_bits
from ..model.transforms import axis_angle_to_matrix
from .phases import Swing
from .representative import representative_times

CLEARANCE_M = 0.01  # a swing foot's representative points stay at least this far above the ground
# the straight lift and lowering take FootSettings.prepare_s each, or of a shorter swing at most 1 / PREPARE_PARTS
PREPARE_PARTS = 5.0


@dataclass
class FootSettings:
    lift_m: float = 0.015  # the straight lift after lift-off and lowering before touch-down
    prepare_s: float = 0.06  # how long each takes (at most a fifth of the swing)
    sensitivity: float = 1.0
    merge_s: float = 0.1


@dataclass
class RepresentativePoint:
    foot: str
    time_s: float
    kind: str  # lift_off, preparatory, peak, touch_down


@dataclass
class SwingKnots:
    """One swing's representative points: times (K,) s, foot link poses (K, 4, 4), kinds."""

    times: np.ndarray
    poses: np.ndarray
    kinds: list[str]
    _kept: tuple | None = field(default=None, init=False, repr=False, compare=False)  # the last interpolated
    _pieces: dict = field(default_factory=dict, init=False, repr=False, compare=False)  # _interpolate's last pieces

    @property
    def person(self) -> np.ndarray:
        """(K,) True for the points taken from the person's swing (not lift-off, touch-down or
        the preparatory lift and lowering, which stand on the stances)."""
        return np.array([kind == "peak" for kind in self.kinds])

    def interpolated(self, times: np.ndarray) -> np.ndarray:
        """The foot's poses (N, 4, 4) at times through the knots (_interpolate), kept until the knots
        or the times change: a path refreshes all its swings where one moved (the G1's 10 s clip:
        49 refreshes, most swings unchanged)."""
        kept = self._kept
        if kept is not None and all(np.array_equal(a, b) for a, b in zip(kept, (self.times, self.poses, times))):
            return kept[3]
        out = _interpolate(self.times, self.poses, times, self._pieces)
        self._kept = (self.times.copy(), self.poses.copy(), times.copy(), out)
        return out


@dataclass
class FootPath:
    """One foot over the gait's samples (times (N,) s): link poses (N, 4, 4), whether it is down
    (N,), and the knots of its swings the poses in the air are interpolated through."""

    side: str
    times: np.ndarray
    poses: np.ndarray
    down: np.ndarray
    body: BodyPoints
    swings: list[SwingKnots] = field(default_factory=list)
    # (N,) down only because the clip starts with the foot in the air: the gait stands it on its first stance
    # from the start, where the person stood on the other foot until it landed
    placed: np.ndarray | None = None

    def __post_init__(self) -> None:
        if self.placed is None:
            self.placed = np.zeros(len(self.times), dtype=bool)

    @property
    def points(self) -> list[RepresentativePoint]:
        return [RepresentativePoint(self.side, float(t), kind) for knots in self.swings
                for t, kind in zip(knots.times, knots.kinds)]

    def refresh(self, swings: list[SwingKnots] | None = None) -> None:
        """Interpolate every swing (or only `swings`) again from its knots (after they moved)."""
        redone = np.zeros(len(self.times), dtype=bool) if swings is not None else ~self.down
        clear = np.zeros(len(self.times), dtype=bool)
        for knots in self.swings if swings is None else swings:
            inside = (self.times > knots.times[0]) & (self.times < knots.times[-1])
            self.poses[inside] = knots.interpolated(self.times[inside])
            redone |= inside & ~self.down
            if len(knots.times) >= 4:  # between the lift and the lowering the foot clears the ground
                clear |= (self.times >= knots.times[1]) & (self.times <= knots.times[-2]) & ~self.down
        _above_ground(self.poses, redone, self.body)
        _above_ground(self.poses, clear, self.body, CLEARANCE_M)


def level_rotation(rotation: np.ndarray, flat: np.ndarray) -> np.ndarray:
    """The foot's rotation (…, 3, 3) laid flat: its heading about world z kept, its tilt gone.
    flat: the foot's rotation standing level (its zero pose)."""
    turn = rotation @ flat.T
    heading = same_bits(np.arctan2, turn[..., 1, 0], turn[..., 0, 0])  # strided: see core.model.same_bits
    return axis_angle_to_matrix(np.array([0.0, 0.0, 1.0]), heading) @ flat


def sole_height(body: BodyPoints, flat: np.ndarray) -> float:
    """Height of the foot link above the ground when the foot stands level on it."""
    return float(-((body.points @ flat.T)[:, 2] - body.radius).min())


@dataclass
class Stance:
    """One contact of one foot: clip frames [start, end), the level pose it stands in, and how far
    (x, y) the step limit moved it from where the retargeted foot stood."""

    side: str
    start: int
    end: int
    pose: np.ndarray  # (4, 4)
    shift: np.ndarray  # (2,) metres
    reference: "Stance | None" = None  # the other foot's stance it was stepped to from


def _stance_pose(poses: np.ndarray, flat: np.ndarray, height: float) -> np.ndarray:
    """A level foot on the ground where the retargeted foot stands over a contact's frames."""
    middle = poses[len(poses) // 2]
    out = np.eye(4)
    out[:3, :3] = level_rotation(middle[:3, :3], flat)
    out[:2, 3] = np.median(poses[:, :2, 3], axis=0)
    out[2, 3] = height
    return out


Limit = Callable[[Stance, np.ndarray, Stance], np.ndarray]


def plan_stances(clip_poses: dict[str, np.ndarray], flags: dict[str, np.ndarray], bodies: dict[str, BodyPoints],
                 flats: dict[str, np.ndarray], limit: Limit | None = None,
                 aims: dict[str, np.ndarray] | None = None,
                 repeated: np.ndarray | None = None) -> tuple[dict[str, list[Stance]], int]:
    """Every contact's stance, in time order over both feet. Each foot aims where the retargeted
    foot stood; where the robot cannot step there from its other foot's stance, it steps to the
    nearest place it can (`limit(reference stance, the aimed pose (4, 4), stance)` -> pose). A
    shortened step is not carried into the rest of the walk: the next steps aim at the person's
    footprints again and make up the distance where the person's steps are shorter than the
    robot's (turns, stops). Also how many steps were changed. aims: per side, the link poses (F, 4, 4)
    whose footprints the feet aim at, if not clip_poses' (the stances' shift is from clip_poses').
    repeated: (F,) frames that repeat a held one (core.balance.phases.held_frames), left out of a
    stance's pose: a clip's first frame held 0.85 s moved the first stance's middle frame, and the H1's
    turn-bounded steps carried its 0.08 rad to every later stance (the 10 s clip against the walk)."""
    def counted(a: int, b: int) -> np.ndarray:  # a stance's frames, each pose once
        frames = np.arange(a, b)
        kept = frames if repeated is None else frames[~repeated[a:b]]
        return kept if len(kept) else frames

    out: dict[str, list[Stance]] = {side: [] for side in flags}
    for side, side_flags in flags.items():
        contacts = flags_to_intervals(side_flags)
        if not contacts:
            raise ValueError(f"the {side} foot never touches the ground in the clip")
        height = sole_height(bodies[side], flats[side])
        out[side] = [Stance(side, a, b, _stance_pose(clip_poses[side][counted(a, b)], flats[side], height),
                            np.zeros(2)) for a, b in contacts]
    changed = 0
    latest: dict[str, Stance] = {}  # per side: its last stance
    for stance in sorted((st for items in out.values() for st in items), key=lambda st: st.start):
        others = [v for k, v in latest.items() if k != stance.side]
        original = stance.pose
        aim = original if aims is None else _stance_pose(aims[stance.side][counted(stance.start, stance.end)],
                                                         flats[stance.side], original[2, 3])
        stance.pose = aim
        if others:
            stance.reference = others[0]
        if others and limit is not None:
            stance.pose = limit(others[0], aim, stance)
            changed += not np.allclose(stance.pose, aim, atol=1e-6)
        stance.shift = stance.pose[:2, 3] - original[:2, 3]
        latest[stance.side] = stance
    return out, changed


def foot_path(side: str, clip_poses: np.ndarray, stances: list[Stance], fps: float, frames: int,
              times: np.ndarray, body: BodyPoints, settings: FootSettings,
              warnings: list[str], flat: np.ndarray | None = None) -> tuple[FootPath, list[Swing]]:
    """The foot `side` at sample times (N,) s, from its retargeted link poses (F, 4, 4) at the
    clip's fps and its stances; and its swings. flat: the foot's rotation standing level (None:
    its link frame is level and faces forward)."""
    end_s = (frames - 1) / fps
    if stances[0].start > 0:
        warnings.append(f"the {side} foot is in the air at the clip's start (0.00-{stances[0].start / fps:.2f} s): "
                        "the gait starts with it on the ground")
    if stances[-1].end < frames:
        warnings.append(f"the {side} foot is in the air at the clip's end ({stances[-1].end / fps:.2f}-"
                        f"{end_s:.2f} s): the gait ends with it on the ground")
    poses = np.empty((len(times), 4, 4))
    down = np.ones(len(times), dtype=bool)
    owner = np.searchsorted([st.start / fps for st in stances], times, side="right") - 1
    poses[:] = np.array([st.pose for st in stances])[np.clip(owner, 0, None)]  # the latest stance (the first before it)
    swings, knots = [], []
    clip_time = np.arange(frames) / fps
    for before, after in zip(stances, stances[1:]):
        swing = Swing(side, before.end / fps, after.start / fps)
        swings.append(swing)
        knots.append(SwingKnots(*_swing_knots(swing, clip_time, clip_poses, body, before, after, settings,
                                              np.eye(3) if flat is None else flat)))
        down[(times > swing.lift_off_s) & (times < swing.touch_down_s)] = False
    path = FootPath(side, times, poses, down, body, knots, times < stances[0].start / fps)
    path.refresh()
    return path, swings


def _swing_knots(swing: Swing, clip_time, clip_poses, body, before: Stance, after: Stance, settings: FootSettings,
                 flat: np.ndarray):
    """The swing's representative times (K,) s, the foot's poses there (K, 4, 4) and their kinds.
    The toe and the foot's angles are the level foot's (flat), whatever way its link frame points:
    a G1 whose feet's frames were turned read other angles and kept other points (with the sole's
    centre, support.sole_centre: worst margin +20.0 mm against +18.9, joints 0.29 rad apart)."""
    lift, touch = swing.lift_off_s, swing.touch_down_s
    prepare = min(settings.prepare_s, (touch - lift) / PREPARE_PARTS)
    ahead = body.points @ flat[0]  # forward with the foot level; corners tied within rounding: the first listed
    toe = body.points[np.flatnonzero(ahead >= ahead.max() - 1e-9)[0]]
    channels = _channels(clip_poses, toe, flat)
    person = representative_times(clip_time, channels, lift, touch, settings.sensitivity, settings.merge_s)
    margin = prepare + settings.merge_s / 2
    person = [t for t in person[1:-1] if lift + margin < t < touch - margin]
    start, landing = before.pose, after.pose
    up = np.array([0.0, 0.0, settings.lift_m])
    raised_start, raised_landing = start.copy(), landing.copy()
    raised_start[:3, 3] += up
    raised_landing[:3, 3] += up
    times = [lift, lift + prepare, *person, touch - prepare, touch]
    kinds = ["lift_off", "preparatory", *["peak"] * len(person), "preparatory", "touch_down"]
    poses = [start, raised_start, *[_sample(clip_poses, clip_time, t) for t in person], raised_landing, landing]
    poses = np.array(poses)
    middle = slice(2, 2 + len(person))
    share = (np.asarray(person) - lift) / (touch - lift)  # the person's points move with the stances
    poses[middle, :2, 3] += (1 - share)[:, None] * before.shift + share[:, None] * after.shift
    floor = CLEARANCE_M - body.lowest(poses[middle])
    poses[middle, 2, 3] += np.clip(floor, 0.0, None)
    return np.asarray(times), poses, kinds


def _channels(poses: np.ndarray, toe: np.ndarray, flat: np.ndarray) -> np.ndarray:
    """The toe's x, y, z (metres) and the foot's roll, pitch, yaw (radians) from standing level
    (flat, its level rotation) per clip frame."""
    position = poses[:, :3, :3] @ toe + poses[:, :3, 3]
    angles = np.unwrap(Rotation.from_matrix(poses[:, :3, :3] @ flat.T).as_euler("xyz"), axis=0)
    return np.column_stack([position, angles])


def _sample(poses: np.ndarray, time: np.ndarray, t: float) -> np.ndarray:
    """The retargeted foot's pose at time t (between clip frames: the nearer frame's rotation)."""
    i = int(np.clip(np.searchsorted(time, t), 1, len(time) - 1))
    w = (t - time[i - 1]) / (time[i] - time[i - 1])
    out = poses[i if w >= 0.5 else i - 1].copy()
    out[:3, 3] = (1 - w) * poses[i - 1, :3, 3] + w * poses[i, :3, 3]
    return out


def _interpolate(t: np.ndarray, poses: np.ndarray, times: np.ndarray, kept: dict | None = None) -> np.ndarray:
    """Foot poses (N, 4, 4) at `times` through poses (K, 4, 4) at t (K,): the lift, the swing
    between the preparatory points and the lowering each a clamped spline, so the foot is still
    at lift-off, above its lift-off and landing points, and at touch-down (no landing at speed).
    kept: each piece's last knots, values and times with its curve's values there (a swing's own, across its
    calls): a piece whose inputs are those to the bit takes them (the H1 10 s clip: 134 of 234 pieces, the
    lift and the lowering, which stay while the person's points between them move)."""
    start = poses[0]
    turn = Rotation.from_matrix(poses[:, :3, :3] @ start[:3, :3].T).as_rotvec()
    values = np.concatenate([poses[:, :3, 3], turn], axis=1)
    out_values = np.empty((len(times), 6))
    pieces = [slice(0, 2), slice(1, len(t) - 1), slice(len(t) - 2, len(t))] if len(t) >= 4 else [slice(0, len(t))]
    for k, piece in enumerate(pieces):
        tp = t[piece]
        inside = (times >= tp[0]) & (times <= tp[-1])
        key = (tp.tobytes(), values[piece].tobytes(), times[inside].tobytes())
        if kept is not None and kept.get(k, (None,))[0] == key:
            out_values[inside] = kept[k][1]
            continue
        out_values[inside] = _still_ends(tp, values[piece])(times[inside])
        if kept is not None:
            kept[k] = (key, out_values[inside])
    out = np.tile(np.eye(4), (len(times), 1, 1))
    out[:, :3, :3] = Rotation.from_rotvec(out_values[:, 3:]).as_matrix() @ start[:3, :3]
    out[:, :3, 3] = out_values[:, :3]
    return out


def _still_ends(t: np.ndarray, values: np.ndarray) -> CubicHermiteSpline:
    """A curve through values (K, C) at t (K,) with zero velocity at both ends and no overshoot
    between knots (monotone cubic slopes inside): a clamped spline through a quick turn and then a
    long hold swung the held foot 130 degrees past it and back."""
    if len(t) < 3:
        return CubicSpline(t, values, bc_type="clamped")
    slopes = PchipInterpolator(t, values, axis=0).derivative()(t)
    slopes[[0, -1]] = 0.0
    return CubicHermiteSpline(t, values, slopes, axis=0)


def _above_ground(poses: np.ndarray, air: np.ndarray, body: BodyPoints, clearance: float = 0.0) -> None:
    """No sample of a swing foot below the ground, or `clearance` above it (metres): a spline may dip
    where the foot tilts, and a leg in the air meets its goal to a millimetre or two, not exactly."""
    if air.any():
        lowest = body.lowest(poses[air])
        poses[air, 2, 3] += np.clip(clearance - lowest, 0.0, None)


def reanchor(path: FootPath, turn: Callable[[float], tuple[np.ndarray, np.ndarray]]) -> None:
    """Carry the person's swing points with the waist when it turns: turn(t) gives the rotation
    (3, 3) applied to the waist at time t and the point (3,) it turned about."""
    for knots in path.swings:
        for k in np.flatnonzero(knots.person):
            rotation, centre = turn(float(knots.times[k]))
            knots.poses[k, :3, :3] = rotation @ knots.poses[k, :3, :3]
            knots.poses[k, :3, 3] = centre + rotation @ (knots.poses[k, :3, 3] - centre)
    path.refresh()


def tame_swing(path: FootPath, knots: SwingKnots, share: float) -> None:
    """Bring a swing's person points `share` of the way back toward the robot's plain step (the
    straight line between the preparatory points, the foot turned as at lift-off): a kick the
    robot cannot swing that fast without its feet leaving the ground."""
    person = np.flatnonzero(knots.person)
    if len(person) == 0:
        return
    first, last = person[0] - 1, person[-1] + 1  # the preparatory points around them
    t0, t1 = knots.times[first], knots.times[last]
    for k in person:
        s = (knots.times[k] - t0) / max(t1 - t0, 1e-9)
        base = (1 - s) * knots.poses[first, :3, 3] + s * knots.poses[last, :3, 3]
        knots.poses[k, :3, 3] = base + (1 - share) * (knots.poses[k, :3, 3] - base)
        turn = Rotation.from_matrix(knots.poses[k, :3, :3] @ knots.poses[0, :3, :3].T).as_rotvec()
        knots.poses[k, :3, :3] = Rotation.from_rotvec((1 - share) * turn).as_matrix() @ knots.poses[0, :3, :3]
    path.refresh([knots])


PROJECT_TOL_M = 0.005


def project_person_points(path: FootPath, times: np.ndarray, reached: np.ndarray) -> bool:
    """Move the person's swing points the leg could not reach to where it got (reached: the
    foot's link poses (M, 4, 4) at times (M,) s); whether any moved."""
    moved = False
    for knots in path.swings:
        for k in np.flatnonzero(knots.person):
            i = int(np.clip(np.searchsorted(times, knots.times[k]), 0, len(times) - 1))
            if np.linalg.norm(reached[i, :3, 3] - knots.poses[k, :3, 3]) > PROJECT_TOL_M:
                knots.poses[k] = reached[i]
                moved = True
    if moved:
        path.refresh()
    return moved
