"""A live retarget session: frames in, robot poses out, never stopping (issue 14).

Per frame: check it (bad, late, repeated or NaN frames are counted and held or predicted,
never interpolated from the future), retarget it causally (StreamRetargeter), smooth it
(CausalFilter), keep the feet planted (CausalFeet), and forecast it at the chosen placement:
the source's bones before mapping ("model"), the robot's solution after mapping ("solution") or
the filtered output ("output"). An output is for its frame's time plus the horizon; the
forecast reaches the filter's lag further, since the filtered pose is that far behind. Forecasts
after mapping are held inside the joint and velocity limits. sample() resamples the latest
output to a control cycle.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field, replace

import numpy as np

from ..chains.frame import clip_values
from ..chains.mapping import Mapping
from ..model.kinematics import KinematicTree
from ..model.transforms import matrix_to_quat, quat_continuous, quat_to_matrix
from ..motion.bvh import BVHClip
from ..motion.source import SourceMotion
from .feet import CausalFeet
from .filters import CausalFilter
from .predict import PLACEMENTS, AutoPredictor, PatternMatcher, PredictSettings, make_predictor
from .retargeter import EVALUATIONS, RobotPose, StreamRetargeter


class FrameError(ValueError):
    """A frame that cannot be used (wrong value count); the message says why."""


@dataclass
class StreamSettings:
    predict_ms: float | None = None  # None: the measured pipeline latency (processing plus filter lag)
    placement: str = "output"
    predict: PredictSettings = field(default_factory=PredictSettings)
    filter: str = "butterworth"  # butterworth, moving_average or none
    filter_hz: float = 7.0
    window: int = 5
    evaluations: int = EVALUATIONS  # per chain and frame
    feet: bool = True
    scale: float = 1.0  # source units to metres (as for a BVH bake)
    up: str = "Y"  # the source's up axis


@dataclass
class StreamOutput:
    seq: int
    time_s: float  # the time the pose is for: the input time plus the horizon
    pose: RobotPose  # in the URDF's own root
    vector: np.ndarray = field(repr=False, default=None)  # the solved pose as filtered and forecast (_vector)
    input_time_s: float = 0.0  # of the frame it came from


class StreamSession:
    """Retarget a stream of frames onto `tree`: BVH channel values on `source`'s hierarchy (a
    BVHClip, its own MOTION lines not used; push), or posed skeletons (a SourceMotion whose rest
    is the skeleton, e.g. a live armature in Blender; push_frame)."""

    def __init__(self, source: BVHClip | SourceMotion, tree: KinematicTree, mapping: Mapping,
                 settings: StreamSettings | None = None, rate_hz: float | None = None,
                 library: list[BVHClip | SourceMotion] = ()):
        self.settings = settings = settings or StreamSettings()
        if settings.placement not in PLACEMENTS:
            raise ValueError(f"unknown prediction placement {settings.placement!r} (use {', '.join(PLACEMENTS)})")
        self.tree = tree
        if isinstance(source, BVHClip):
            self.clip, self.channels = source, sum(len(c) for c in source.channels)
            skeleton = source.to_source_motion(settings.scale, settings.up, rows=np.zeros((1, self.channels)))
        else:
            self.clip, self.channels, skeleton = None, 0, source
        self.bones = list(skeleton.bone_names)
        self.rate_hz = float(rate_hz or source.fps)
        self.retargeter = StreamRetargeter(skeleton, tree, mapping, evaluations=settings.evaluations)
        inner = self.retargeter.tree
        self.lower, self.upper, self.velocity = inner.lower, inner.upper, inner.velocity
        self.filter = CausalFilter(settings.filter, self.rate_hz, settings.filter_hz, settings.window,
                                   np.r_[np.full(7, -np.inf), self.lower], np.r_[np.full(7, np.inf), self.upper])
        self.feet = CausalFeet(skeleton, inner, mapping, self.retargeter.foot_links()) \
            if settings.feet and self.retargeter.floating else None
        self.predictor = make_predictor(self.rate_hz, settings.predict, *self._match_space(library, mapping),
                                        behind_s=self.filter.lag_s if settings.placement == "output" else 0.0)
        width = 8 + 6 * len(self.bones) if settings.placement == "model" else 7 + len(self.lower)  # see _model_vector, _vector
        for member in getattr(self.predictor, "members", [self.predictor]):
            if isinstance(member, PatternMatcher):
                member.prepare(width)  # before the first frame, not during it
        self.counts = {"nan": 0, "late": 0, "duplicate": 0, "missing": 0, "bad": 0}
        self.unusable = 0  # bad frames since the last good one
        self.latencies: list[float] = []
        self._measured = (-1, 0.0)  # (latencies // 16 when taken, the median latency)
        self.violations = 0
        self.warnings = list(self.retargeter.warnings)
        self.last: StreamOutput | None = None
        self.previous: StreamOutput | None = None
        self.last_seq: int | None = None
        self.last_time: float | None = None
        self.filtered: np.ndarray | None = None  # the last filtered pose, before any forecast
        self.last_model: np.ndarray | None = None  # the last frame's model data (placement "model")
        self.current: np.ndarray | None = None  # the latest frame's pose, unforecast (placement "output")

    # ------------------------------------------------------------------ frames in

    def parse(self, line: str, where: str = "") -> tuple[int, float, np.ndarray] | None:
        """`SEQ TIME_S v1 ... vK` -> (seq, time, values); None for `END`; FrameError otherwise."""
        words = line.split()
        if words == ["END"]:
            return None
        if len(words) != self.channels + 2:
            raise FrameError(f"{where}expected SEQ TIME_S and {self.channels} values, got {len(words)} fields "
                             f"({max(len(words) - 2, 0)} values)")
        try:
            return int(words[0]), float(words[1]), np.array(words[2:], dtype=float)
        except ValueError:
            raise FrameError(f"{where}not a number in {line[:60]!r}") from None

    def count_bad(self) -> None:
        """A frame that came but could not be used (wrong count, not numbers): counted once, as
        bad, and not again as missing when the next frame's number skips it."""
        self.counts["bad"] += 1
        self.unusable += 1

    def push(self, seq: int, time_s: float, values: np.ndarray, received_s: float | None = None,
             stop=None) -> StreamOutput | None:
        """The output for one frame, or a held or predicted one for a NaN frame; None for a frame
        that is late (an earlier time than one already used) or repeated.

        received_s: perf_counter() time of its receipt (now if None); stop(): a newer frame waits.
        """
        if self.clip is None:
            raise TypeError("this session takes posed skeletons (push_frame), not BVH channel values")
        received_s = time.perf_counter() if received_s is None else received_s
        if len(values) != self.channels:
            self.count_bad()
            raise FrameError(f"frame {seq}: expected {self.channels} values, got {len(values)}")
        frame = None
        if np.all(np.isfinite(values)):
            frame = self.clip.pose_frame(values, self.settings.scale, self.settings.up)
        return self.push_frame(seq, time_s, frame, received_s, stop)

    def push_frame(self, seq: int, time_s: float, frame: SourceMotion | None, received_s: float | None = None,
                   stop=None) -> StreamOutput | None:
        """push() for a posed skeleton (a one-frame SourceMotion on the session's bones); None or
        NaN values: a frame that did not come through."""
        received_s = time.perf_counter() if received_s is None else received_s
        if self.last_seq is not None and seq == self.last_seq:
            self.counts["duplicate"] += 1
            return None
        if self.last_time is not None and (time_s <= self.last_time or seq < self.last_seq):
            self.counts["late"] += 1
            return None
        if self.last_seq is not None and seq > self.last_seq + 1:  # frames never seen, not those that came bad
            self.counts["missing"] += max(0, seq - self.last_seq - 1 - self.unusable)
        self.unusable = 0
        if frame is None or not (np.all(np.isfinite(frame.heads)) and np.all(np.isfinite(frame.root_rotation))):
            self.counts["nan"] += 1
            out = self._hold(seq, time_s)
        else:
            out = self._process(seq, time_s, frame, stop)
        self.last_seq, self.last_time = seq, time_s
        if out is not None:
            self.latencies.append(time.perf_counter() - received_s)
            self.previous, self.last = self.last, out
        return out

    @property
    def dropped(self) -> int:
        return sum(self.counts.values())

    # ------------------------------------------------------------------ the pipeline

    def horizon_s(self) -> float:
        """How far ahead of its frame an output is for: --predict-ms, else the measured
        processing latency (from a frame's receipt to its pose). The forecast reaches the
        filter's lag further: the filtered pose is that much behind its frame."""
        if self.settings.predict_ms is not None:
            return self.settings.predict_ms / 1000.0
        count = len(self.latencies)
        if count < 16 or count // 16 != self._measured[0]:  # a median of the latest 200, taken every 16th frame
            self._measured = count // 16, float(np.median(self.latencies[-200:])) if count else 0.0
        return self._measured[1]

    def _process(self, seq, time_s, frame, stop) -> StreamOutput:
        forecast = self.settings.predict.predictor != "none"
        horizon = self.horizon_s() if forecast else 0.0
        ahead = horizon + self.filter.lag_s  # from a sample that will come out of (or has been through) the filter
        dt = (time_s - self.last_time) if self.last_time is not None else 1.0 / self.rate_hz
        place = self.settings.placement
        if place == "model":
            model = _model_vector(frame, self.retargeter.marks)
            if self.last_model is not None:  # the same turn as the last frame's: yaw unwrapped, quaternion's sign
                model[3] = self.last_model[3] + (model[3] - self.last_model[3] + np.pi) % (2 * np.pi) - np.pi
                model[-4:] *= -1.0 if model[-4:] @ self.last_model[-4:] < 0 else 1.0
            self.last_model = model
            self.predictor.update(time_s, model)
            if forecast:
                frame = _model_frame(frame, self.predictor.predict(ahead))
        q, root = self.retargeter.step(frame, time_s, stop)
        vector = _vector(q, root, None if self.last is None else self.last.vector)
        actual = vector.copy()  # the pose now, unfiltered: what an output forecast is checked against
        if place == "solution":
            self.predictor.update(time_s, vector)
            vector = self._held(self.predictor.predict(ahead), dt) if forecast else vector
        vector = self._held(self.filter(vector), dt, self.filtered)  # a low-pass may overshoot a limit or a speed
        self.filtered = vector
        if self.feet is not None:
            q, root = _pose(vector, len(q))
            offset = self.feet.step(frame, self.retargeter.foot_poses(q, root), max(dt, 1e-6))
            vector[:3] += offset
            actual[:3] += offset
        self.current = vector  # the pose now, before any forecast of the output
        if place == "output":
            if isinstance(self.predictor, AutoPredictor):  # its members scored on the pose, not its filtered lag
                self.predictor.update(time_s, vector, actual)
            else:
                self.predictor.update(time_s, vector)
            vector = self._held(self.predictor.predict(ahead), dt) if forecast else vector
        return self._output(seq, time_s, horizon, self._above_ground(vector) if forecast else vector)

    def _above_ground(self, vector: np.ndarray) -> np.ndarray:
        """A forecast raised where it would put a foot into the ground."""
        if self.feet is None or not self.feet.sides:
            return vector
        q, root = _pose(vector, len(self.lower))
        below = -self.feet.lowest(self.retargeter.foot_poses(q, root))
        if below > 0:
            vector = vector.copy()
            vector[2] += below
        return vector

    def _held(self, vector: np.ndarray, dt: float, last: np.ndarray | None = ...) -> np.ndarray:
        """A pose held inside the joint limits and within velocity reach (dt seconds) of `last`
        (default: the last output)."""
        q = vector[7:]
        last = (self.last.vector if self.last is not None else None) if last is ... else last
        if last is not None:
            reach = self.velocity * max(dt, 1e-6)
            q = clip_values(q, last[7:] - reach, last[7:] + reach)
        vector = vector.copy()
        vector[7:] = clip_values(q, self.lower, self.upper)
        return vector

    def _hold(self, seq: int, time_s: float) -> StreamOutput | None:
        """A NaN frame: the forecast for its time from what came before, else the last pose."""
        if self.last is None:
            return None
        horizon = self.last.time_s - self.last.input_time_s
        vector = self.last.vector
        if self.settings.predict.predictor != "none" and self.settings.placement != "model":
            ahead = time_s + horizon + self.filter.lag_s - self.last.input_time_s
            vector = self._held(self.predictor.predict(ahead), time_s - self.last.input_time_s)
        return self._output(seq, time_s, horizon, self._above_ground(vector))

    def pose_of(self, vector: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(q, root position, root rotation) in the URDF's own root for a pose vector."""
        q, root = _pose(vector, len(self.lower))
        pose = self.retargeter.output_pose(q, root)
        return pose.q, pose.root_position, pose.root_rotation

    def _output(self, seq: int, input_time_s: float, horizon: float, vector: np.ndarray) -> StreamOutput:
        q, root = _pose(vector, len(self.lower))
        outside = (q < self.lower - 1e-9) | (q > self.upper + 1e-9)
        self.violations += int(outside.sum())
        return StreamOutput(seq, input_time_s + horizon, self.retargeter.output_pose(q, root), vector, input_time_s)

    def _match_space(self, library: list, mapping: Mapping):
        """Weights, library series and the channels matched together in the space the predictor
        works in (see make_predictor): after mapping, the root and each chain's joints."""
        motions = [clip.to_source_motion(self.settings.scale, self.settings.up) if isinstance(clip, BVHClip)
                   else clip for clip in library]
        if self.settings.placement == "model":
            bones = len(self.bones)
            series = []
            for clip, motion in zip(library, motions):
                if motion.bone_names != self.bones:
                    raise ValueError(f"library clip {_name(clip)}: its hierarchy is not the stream's "
                                     f"({len(motion.bone_names)} bones, not {bones})")
                series.append(_resampled(_model_vector(motion, self.retargeter.marks), clip.fps, self.rate_hz))
            return np.r_[np.zeros(4), np.ones(6 * bones), np.zeros(4)], series, None  # where the actor stands is not posture
        from ..retarget.pipeline import retarget  # only a library needs the offline retarget
        weights = np.r_[0.0, 0.0, 1.0, np.ones(4), np.ones(len(self.lower))]
        series = []
        for clip, motion in zip(library, motions):
            # a clip on another hierarchy stopped with "chain 'spine': source has no bone 'Hips'", no file
            mapping.check_names(f"library clip {_name(clip)}", bones=motion.bone_names, source=motion.name)
            baked = retarget(motion, self.tree, mapping, contacts="auto")
            rows = np.column_stack([baked.root_position, baked.root_quaternion, baked.q])
            series.append(_resampled(rows, clip.fps, self.rate_hz))
        return weights, series, self._chain_channels()

    def _chain_channels(self) -> list[np.ndarray]:
        """Indices into a pose vector (_vector) of the root and of each chain's joints, and of
        joints no chain moves (one group)."""
        groups, taken = [np.arange(7)], set()
        for plan in self.retargeter.plans:
            cols = [int(c) for c in plan.kin.columns if int(c) not in taken]
            taken.update(cols)
            if cols:
                groups.append(7 + np.array(cols))
        rest = [c for c in range(len(self.lower)) if c not in taken]
        return groups + ([7 + np.array(rest)] if rest else [])

    # ------------------------------------------------------------------ the control cycle

    def sample(self, tick_s: float) -> StreamOutput | None:
        """The pose for control tick `tick_s` (plus the horizon): the latest output carried on
        by the last two outputs' velocity, inside the limits."""
        if self.last is None:
            return None
        last, previous = self.last, self.previous
        vector = last.vector
        ahead = tick_s - last.input_time_s
        if previous is not None and last.input_time_s > previous.input_time_s and ahead > 0:
            rate = (last.vector - previous.vector) / (last.input_time_s - previous.input_time_s)
            vector = self._above_ground(self._held(last.vector + rate * ahead, ahead))
        return self._output(last.seq, tick_s, last.time_s - last.input_time_s, vector)

    def report(self) -> dict:
        lat = np.asarray(self.latencies) * 1000.0 if self.latencies else np.zeros(1)
        return {"frames": len(self.latencies), "dropped": self.dropped, "dropped_by_reason": dict(self.counts),
                "latency_ms": {k: float(np.percentile(lat, p)) for k, p in
                               (("p50", 50), ("p95", 95), ("p99", 99), ("max", 100))},
                "predict_ms": 1000.0 * self.horizon_s() if self.settings.predict.predictor != "none" else 0.0,
                "forecast_ms": 1000.0 * (self.horizon_s() + self.filter.lag_s)
                if self.settings.predict.predictor != "none" else 0.0,
                "predictor": self.settings.predict.predictor, "placement": self.settings.placement,
                "filter": self.filter.method, "filter_lag_ms": 1000.0 * self.filter.lag_s,
                "limit_violations": self.violations, "warnings": self.warnings}


def _name(clip) -> str:
    return str(clip.path) if isinstance(clip, BVHClip) else clip.name


def _vector(q: np.ndarray, root: np.ndarray, last: np.ndarray | None) -> np.ndarray:
    """[root position (3), root quaternion wxyz (4), joints (n)]: what is filtered and forecast;
    the quaternion on the same side as the last one (a sign flip is no turn)."""
    quat = matrix_to_quat(root[:3, :3])
    if last is not None and quat @ last[3:7] < 0:
        quat = -quat
    return np.concatenate([root[:3, 3], quat, q])


def _pose(vector: np.ndarray, dof: int) -> tuple[np.ndarray, np.ndarray]:
    root = np.eye(4)
    root[:3, :3], root[:3, 3] = quat_to_matrix(vector[3:7]), vector[:3]  # a forecast quaternion is normalised there
    return vector[7:7 + dof], root


def _heading(motion, marks) -> np.ndarray:
    """Yaw (F,) radians of the source's hip line (else its root bone's x axis) about the up axis."""
    if marks.left is not None:
        across = motion.heads[:, marks.left] - motion.heads[:, marks.right]
        return np.unwrap(np.arctan2(across[:, 1], across[:, 0]))
    x = motion.root_rotation[:, :, 0]
    return np.unwrap(np.arctan2(x[:, 1], x[:, 0]))


def _yaw(angle: np.ndarray) -> np.ndarray:
    c, s = np.cos(angle), np.sin(angle)
    out = np.zeros(np.shape(angle) + (3, 3))
    out[..., 0, 0], out[..., 0, 1], out[..., 1, 0], out[..., 1, 1], out[..., 2, 2] = c, -s, s, c, 1.0
    return out


def _model_vector(motion, marks) -> np.ndarray:
    """The source's model data to forecast, (D,) for one frame or (F, D): where its root bone is
    (metres) and which way it faces (yaw, radians), then every bone's head and tail relative to
    the root in the facing frame (metres) and the root's rotation in it (wxyz): a posture reads
    the same wherever the actor walks to or turns."""
    root, yaw = motion.heads[:, 0], _heading(motion, marks)
    unturn = np.swapaxes(_yaw(yaw), 1, 2)
    rel = np.concatenate([motion.heads, motion.tails], axis=1) - root[:, None]
    rel = np.einsum("fij,fbj->fbi", unturn, rel)
    quat = quat_continuous(matrix_to_quat(unturn @ motion.root_rotation))
    out = np.column_stack([root, yaw, rel.reshape(len(root), -1), quat])
    return out[0] if len(out) == 1 else out


def _model_frame(frame, vector: np.ndarray):
    """A one-frame SourceMotion from a forecast model vector (see _model_vector)."""
    bones = len(frame.bone_names)
    turn = _yaw(vector[3])
    rel = vector[4:4 + 6 * bones].reshape(2 * bones, 3) @ turn.T + vector[:3]
    quat = vector[-4:] / max(float(np.linalg.norm(vector[-4:])), 1e-12)
    return replace(frame, heads=rel[None, :bones], tails=rel[None, bones:],
                   root_rotation=(turn @ quat_to_matrix(quat))[None])


def _resampled(rows: np.ndarray, fps: float, rate_hz: float) -> np.ndarray:
    """A series (T, D) at `fps` resampled to `rate_hz` by linear interpolation."""
    if abs(fps - rate_hz) < 1e-6 * rate_hz:
        return rows
    t = np.arange(len(rows)) / fps
    ticks = np.arange(0.0, t[-1] + 1e-9, 1.0 / rate_hz)
    return np.column_stack([np.interp(ticks, t, rows[:, k]) for k in range(rows.shape[1])])
