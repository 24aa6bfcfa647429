"""What an animator can choose about a join: the criterion and its threshold, the optional
conditions, the selection policy, the transition, and the common frame rate.

The three criteria compare two postures joint by joint: the sum over joints of
|angle_A - angle_B| (the method's integrated difference), the mean over joints
(the sum over the joint count, so one threshold fits an arm and a humanoid)
and the largest single joint. The sum's default grows with the robot: 15
degrees up to 6 joints (the method's default), 2.5 degrees per joint beyond,
so on a 29-joint humanoid the sum and the mean criterion agree. Every range
below is also what the Blender panel and the command line accept, so a
warning that suggests a threshold only suggests one inside its range.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .detect import DetectSettings, SpliceError

POLICIES = ("shortest", "similar", "speed")
CRITERIA = ("integrated", "mean", "max_joint")
CRITERION_NAMES = {"sum": "integrated", "largest": "max_joint"}  # the command line's words for them
SPEED_MEASURES = ("integrated", "largest_joint")
SPEED_SOURCES = ("a", "b", "both")
SPEED_STATISTICS = ("mean", "median", "mode")
TRANSITIONS = ("eased", "linear")

# (lowest, highest) threshold in degrees per criterion: the UI, the CLI and the warnings use these.
THRESHOLD_RANGE = {"integrated": (5.0, 300.0), "mean": (0.5, 30.0), "max_joint": (0.5, 90.0)}
SUM_DEFAULT_DEG = 15.0          # the method's default for small robots
PER_JOINT_DEFAULT_DEG = 2.5     # the mean's default; the sum's beyond 6 joints
MAX_JOINT_DEFAULT_DEG = 8.0     # the largest of 40 joints ~2.5 deg apart is about 8 deg


def default_sum_threshold(joints: int) -> float:
    """15 deg up to 6 joints, 2.5 deg per joint beyond (capped by the accepted range)."""
    return float(min(max(SUM_DEFAULT_DEG, PER_JOINT_DEFAULT_DEG * joints), THRESHOLD_RANGE["integrated"][1]))


def check_range(name: str, value: float, criterion: str) -> None:
    low, high = THRESHOLD_RANGE[criterion]
    if not (math.isfinite(value) and low <= value <= high):
        raise SpliceError(f"{name} {value:g} is outside {low:g}-{high:g} degrees")


@dataclass
class SpliceSettings:
    """Join criteria, conditions, policy and transition; ranges as the animators' tool offers them."""

    threshold_deg: float | None = None  # sum criterion; None: default_sum_threshold(joints)
    criterion: str = "integrated"    # 'integrated' (sum), 'mean' over joints, or 'max_joint'
    mean_deg: float = PER_JOINT_DEFAULT_DEG     # threshold of the 'mean' criterion
    max_joint_deg: float = MAX_JOINT_DEFAULT_DEG  # threshold of the 'max_joint' criterion
    policy: str = "shortest"         # least preparatory time kept, 'similar', or closest drive 'speed'
    match_direction: bool = False    # every joint moving in both postures moves the same way
    match_speed: bool = False        # drive speeds (speed_measure) within speed_tolerance
    speed_measure: str = "integrated"  # or 'largest_joint': the speed of the joint that changes most
    speed_tolerance: float = 0.3     # relative
    interval_s: float = 0.2          # drive direction/speed from the change over this interval
    still_deg_s: float = 2.0         # slower joints count as still
    speed_source: str = "both"       # whose main movement sets the transition speed: 'a', 'b', 'both'
    speed_statistic: str = "median"  # 'mean', 'median' or 'mode' of the joint speeds
    speed_rad_s: float | None = None  # given speed, overrides the statistic
    transition: str = "eased"        # velocity-blended cubic, or 'linear' at the representative speed
    max_stretch: float = 4.0         # an eased transition may grow this much to avoid velocity jumps
    continue_root: bool = True       # B's root continues from A's (else as recorded)
    max_candidates: int = 240        # postures compared per side (evenly thinned beyond)
    candidates: int = 5              # best distinct pairs listed per join, for the animator to pick
    fps: float | None = None         # common frame rate; None: the first clip's
    detect: DetectSettings = field(default_factory=DetectSettings)

    def __post_init__(self) -> None:
        self.criterion = CRITERION_NAMES.get(self.criterion, self.criterion)

    def validate(self) -> None:
        for name, allowed in (("criterion", CRITERIA), ("policy", POLICIES), ("speed_measure", SPEED_MEASURES),
                              ("speed_source", SPEED_SOURCES), ("speed_statistic", SPEED_STATISTICS),
                              ("transition", TRANSITIONS)):
            if getattr(self, name) not in allowed:
                raise SpliceError(f"{name} {getattr(self, name)!r}: expected one of {', '.join(allowed)}")
        if self.threshold_deg is not None:
            check_range("threshold_deg", self.threshold_deg, "integrated")
        check_range("mean_deg", self.mean_deg, "mean")
        check_range("max_joint_deg", self.max_joint_deg, "max_joint")
        for name in ("speed_rad_s", "fps"):
            value = getattr(self, name)
            if value is not None and not (np.isfinite(value) and value > 0):
                raise SpliceError(f"{name} must be positive, got {value!r}")
        checks = {"speed_tolerance": self.speed_tolerance >= 0, "interval_s": self.interval_s > 0,
                  "still_deg_s": self.still_deg_s >= 0, "max_stretch": self.max_stretch >= 1,
                  "max_candidates": self.max_candidates >= 2, "candidates": self.candidates >= 1}
        for name, ok in checks.items():
            if not ok:
                raise SpliceError(f"{name} has an invalid value {getattr(self, name)!r}")
        self.detect.validate()

    def threshold_for(self, joints: int) -> float:
        """The chosen criterion's threshold in degrees for a robot of `joints` joints."""
        if self.criterion == "mean":
            return self.mean_deg
        if self.criterion == "max_joint":
            return self.max_joint_deg
        return self.threshold_deg if self.threshold_deg is not None else default_sum_threshold(joints)
