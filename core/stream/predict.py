"""The prediction unit (issue 14, item 5): values a little ahead of the latest sample, so the
whole delay between the actor and the robot does not show.

Every predictor takes samples (time, vector) one at a time and forecasts the vector at the
latest time plus a horizon. Vectors are whatever the placement predicts: the source's channel
values before mapping, the robot's root and joints after it, or the filtered output.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np

from .extrapolate import Extrapolator
from .match import PatternMatcher

__all__ = ["PREDICTORS", "PLACEMENTS", "PredictSettings", "Extrapolator", "PatternMatcher", "AutoPredictor", "Hold",
           "make_predictor"]

PREDICTORS = ("none", "extrapolate", "match", "auto")
# Where a session forecasts: the source's bones before mapping, the robot's solution, or the filtered
# output (core.stream.session); here, with the predictors, so a parser needs no solver to list them.
PLACEMENTS = ("model", "solution", "output")
SHARPNESS = 8  # auto's weights: recent mean squared error to this power, a softened choice of the closest
LEFT_OUT = 1e-3  # auto: a member with less than this share of the blend is left out of it...
RECHECK = 8  # ...and forecasts only every this many samples, to keep its error measured


@dataclass
class PredictSettings:
    predictor: str = "auto"
    samples: int = 3  # K: the latest samples an extrapolation fits
    match_samples: int = 8  # the latest samples a match compares
    degree: int = 1  # of the extrapolating polynomial (1 or 2)
    threshold: float = 0.1  # similarity (0-1] a chain's match must reach, else its extrapolation alone
    history_s: float = 20.0  # of the stream kept for matching
    neighbours: int = 10  # nearest distinct stretches whose bends are averaged, per chain
    stride: int = 4  # samples between two stretches that count as distinct
    refresh: int = 6  # forecasts per full search (each scans a slice; the places found are followed)
    damping: float = 1.0  # share of an extrapolated change kept (less: a straight line overshoots every turn)


class AutoPredictor:
    """Runs extrapolation and matching side by side and forecasts with all of them, each
    weighted by its recent mean squared error (its own forecasts, checked when their time came)
    to the power -SHARPNESS: nearly always the closest lately, without the jump of switching
    from one to another (walk and hop onto G1, 100 ms ahead: 25-31 % below holding when
    switching, 34-37 % blended; the exponent keeps the lag under 1 ms). Besides the set
    extrapolation, an undamped quadratic one: over a few tens of milliseconds (a filter's lag)
    it follows a curve without lag, where a damped line would lag behind; over a tenth of a
    second it overshoots, and the running errors weigh the two.

    A member whose share of the blend is below LEFT_OUT forecasts only every RECHECK-th sample
    (still fed every one), which keeps its error measured (each check then counts for the
    samples it stands for), and is left out of the blend in between: the output moves by less
    than that share of its distance to the blend. Only the matcher is left out so: its search is
    most of a forecast's cost, and at the default horizon (tens of milliseconds) it is that far
    behind on most frames (walk and hop onto G1: 71 and 79 %); 100 ms ahead it never is."""

    name = "auto"

    def __init__(self, rate_hz: float, settings: PredictSettings, weights=None, library=(), groups=None,
                 behind_s: float = 0.0):
        line = Extrapolator(settings.samples, settings.degree, settings.damping)
        self.members = [line, Extrapolator(settings.samples + 1, 2, 1.0), Extrapolator(settings.samples, 2, 0.6),
                        PatternMatcher(rate_hz, settings, weights, library, groups, line)]  # the matcher bends the line
        self.error = np.zeros(len(self.members))  # running mean squared error per member
        self.pending: deque = deque()  # (due time, forecasts (members, D), which members forecast)
        self.samples = 0  # forecasts asked for so far
        self.cheap = np.array([not isinstance(m, PatternMatcher) for m in self.members])  # never left out
        self.made_at = np.zeros(len(self.members))  # the forecast each member last made
        self.behind_s = behind_s  # how far the samples lag the pose a forecast is for (a filter's lag)
        self.time: float | None = None
        self.actual: np.ndarray | None = None  # the latest pose forecasts are checked against

    def update(self, time_s: float, x: np.ndarray, actual: np.ndarray | None = None) -> None:
        """x: the sample to forecast from; actual: the pose at time_s that forecasts are checked
        against, where x lags it (behind_s; default x itself). A forecast is checked at the time
        it is for, between the two samples around it."""
        x = np.asarray(x, dtype=float)
        actual = x if actual is None else np.asarray(actual, dtype=float)
        while self.pending and self.pending[0][0] <= time_s + 1e-9:
            due, forecasts, stands_for = self.pending.popleft()
            value = actual
            if self.actual is not None and time_s > self.time:
                value = self.actual + (actual - self.actual) * ((due - self.time) / (time_s - self.time))
            miss = forecasts - value  # (members, D)
            keep = 0.95 ** stands_for  # a forecast made after n left out counts for n samples
            self.error = keep * self.error + (1.0 - keep) * (miss * miss).sum(axis=1) / miss.shape[1]
        for member in self.members:
            member.update(time_s, x)
        self.time, self.actual = time_s, actual

    def predict(self, horizon_s: float) -> np.ndarray:
        weights = (1.0 / (self.error + 1e-12)) ** SHARPNESS  # inverse mean squared error: the closest lately weigh most
        self.samples += 1
        made = (weights >= LEFT_OUT * weights.sum()) | (self.samples % RECHECK == 0) | self.cheap
        weights = np.where(made, weights, 0.0)
        first = self.members[int(np.argmax(made))].predict(horizon_s)
        forecasts = np.array([member.predict(horizon_s) if use else first for member, use in zip(self.members, made)])
        stands_for = np.where(made, self.samples - self.made_at, 0.0)  # samples since each one's last forecast
        self.made_at = np.where(made, self.samples, self.made_at)
        self.pending.append((self.time + horizon_s - self.behind_s, forecasts, stands_for))
        return weights @ forecasts / weights.sum()


class Hold:
    """No prediction: the latest sample."""

    name = "none"

    def __init__(self):
        self.last = None

    def update(self, time_s: float, x: np.ndarray) -> None:
        self.last = np.asarray(x, dtype=float)

    def predict(self, horizon_s: float) -> np.ndarray:
        return self.last.copy()


def make_predictor(rate_hz: float, settings: PredictSettings, weights: np.ndarray | None = None,
                   library: list[np.ndarray] = (), groups: list[np.ndarray] | None = None, behind_s: float = 0.0):
    """The predictor settings.predictor names; library: series (T, D) in the predicted space;
    groups: the channels a match compares together (see PatternMatcher); behind_s: see AutoPredictor."""
    kind = settings.predictor
    if kind == "none":
        return Hold()
    if kind == "extrapolate":
        return Extrapolator(settings.samples, settings.degree, settings.damping)
    if kind == "match":
        return PatternMatcher(rate_hz, settings, weights, library, groups)
    if kind == "auto":
        return AutoPredictor(rate_hz, settings, weights, library, groups, behind_s)
    raise ValueError(f"unknown predictor {kind!r} (use {', '.join(PREDICTORS)})")
