"""The prediction unit (issue 14, item 5): values a little ahead of the latest sample, so the
whole delay between the actor and the robot does not show.

Every predictor takes samples (time, vector) one at a time and forecasts the vector at the
latest time plus a horizon. Vectors are whatever the placement predicts: the source's channel
values before mapping, the robot's root and joints after it, or the filtered output.
"""
from __future__ import annotations

import functools
from collections import deque
from dataclasses import dataclass

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

PREDICTORS = ("none", "extrapolate", "match", "auto")
SHARPNESS = 8  # auto's weights: recent mean squared error to this power, a softened choice of the closest
SIMILAR_M = 0.01  # a window whose path is this far (RMS, metres) from the latest samples' is half similar


@dataclass
class PredictSettings:
    predictor: str = "auto"
    samples: int = 3  # K: the latest samples an extrapolation fits
    match_samples: int = 6  # the latest samples a match compares
    degree: int = 1  # of the extrapolating polynomial (1 or 2)
    threshold: float = 0.5  # similarity (0-1] a match must reach, else extrapolation
    history_s: float = 20.0  # of the stream kept for matching
    neighbours: int = 5  # nearest windows whose continuations are averaged
    stride: int = 4  # windows first compared every stride-th sample, then around the nearest
    refresh: int = 6  # samples between full searches (the places found are followed in between)
    damping: float = 1.0  # share of an extrapolated change kept (less: a straight line overshoots every turn)


class Extrapolator:
    """Least-squares polynomial of `degree` through the latest `samples`, evaluated ahead."""

    name = "extrapolate"

    def __init__(self, samples: int = 3, degree: int = 1, damping: float = 1.0):
        if degree not in (1, 2):
            raise ValueError(f"extrapolation degree must be 1 or 2, got {degree}")
        self.degree, self.damping = degree, damping
        self.times: deque = deque(maxlen=max(2, samples))
        self.values: deque = deque(maxlen=max(2, samples))

    def update(self, time_s: float, x: np.ndarray) -> None:
        self.times.append(float(time_s))
        self.values.append(np.asarray(x, dtype=float))

    def predict(self, horizon_s: float) -> np.ndarray:
        if not self.values:
            raise ValueError("no sample to predict from")
        degree = min(self.degree, len(self.values) - 1)
        if degree == 0 or horizon_s == 0.0:
            return self.values[-1].copy()
        weights = _fit_weights(tuple(round(t - self.times[-1], 9) for t in self.times), round(horizon_s, 9), degree)
        last = self.values[-1]
        return last + self.damping * (weights @ np.asarray(self.values) - last)


@functools.lru_cache(maxsize=64)
def _fit_weights(times: tuple, horizon_s: float, degree: int) -> np.ndarray:
    """The least-squares polynomial through samples at `times` (relative to the latest), evaluated
    `horizon_s` ahead, as weights (K,) of the samples: the same for every frame of a steady stream."""
    t = np.asarray(times)
    scale = max(-t[0], 1e-9)  # well-conditioned powers
    basis = np.vander(t / scale, degree + 1, increasing=True)  # (K, d + 1)
    ahead = (horizon_s / scale) ** np.arange(degree + 1)
    return basis @ np.linalg.solve(basis.T @ basis, ahead)


class _Series:
    """The latest `capacity` samples (T, D) as one array, appended in amortised O(D)."""

    def __init__(self, capacity: int):
        self.capacity, self.data, self.end, self.appended = capacity, None, 0, 0

    def append(self, x: np.ndarray) -> None:
        if self.data is None:
            self.data = np.empty((2 * self.capacity, len(x)))
        if self.end == len(self.data):  # keep the latest capacity - 1 at the front
            keep = self.capacity - 1
            self.data[:keep] = self.data[self.end - keep:self.end]
            self.end = keep
        self.data[self.end] = x
        self.end += 1
        self.appended += 1

    def __len__(self) -> int:
        return min(self.end, self.capacity)

    def view(self) -> np.ndarray:
        return self.data[self.end - len(self):self.end]


class PatternMatcher:
    """Find where the stream (or a library clip) was most like its latest samples, and
    continue from there; below the similarity threshold, extrapolate instead.

    Similarity is 1 / (1 + d / SIMILAR_M), d the RMS distance between the paths of the whole
    window, every channel weighted (0 for channels that are not posture, such as where the root
    is on the floor; bone positions in metres, joint angles in radians). "What followed" is
    added as a change to the latest sample, so a match in another place still continues here.
    """

    name = "match"

    def __init__(self, rate_hz: float, settings: PredictSettings, weights: np.ndarray | None = None,
                 library: list[np.ndarray] = ()):
        self.rate_hz, self.settings = rate_hz, settings
        self.samples = max(2, settings.match_samples)
        self.weights = weights
        self.history = _Series(max(self.samples + 2, int(settings.history_s * rate_hz)))
        self.library = [np.asarray(clip, dtype=float) for clip in library if len(clip) > self.samples + 1]
        self.fallback = Extrapolator(settings.samples, settings.degree, settings.damping)
        self.last_similarity = 0.0
        self.matched = 0  # forecasts that came from a match
        self.tracked: list[tuple[int, int]] = []  # (library clip, or len(library) for the history; sample)
        self.since = 0  # samples since the last full search

    def update(self, time_s: float, x: np.ndarray) -> None:
        self.history.append(np.asarray(x, dtype=float))
        self.fallback.update(time_s, x)

    def predict(self, horizon_s: float) -> np.ndarray:
        ahead = horizon_s * self.rate_hz  # samples
        found = self._nearest(ahead) if len(self.history) >= self.samples else []
        if not found:
            return self.fallback.predict(horizon_s)
        whole, part = int(np.floor(ahead)), ahead - np.floor(ahead)
        change, total = 0.0, 0.0
        for distance, series, end, _ in found:  # the nearest few, closer ones counting more
            later = (1 - part) * series[end + whole] + part * series[min(end + whole + 1, len(series) - 1)]
            weight = 1.0 / (distance + 1e-3 * SIMILAR_M)
            change, total = change + weight * (later - series[end]), total + weight
        self.matched += 1
        return self.history.view()[-1] + change / total

    def _nearest(self, ahead: float) -> list:
        """[(distance, series, index of its sample matching the latest)] of the `neighbours`
        nearest windows, or [] when the nearest is below the similarity threshold.

        A full search runs every `refresh` samples; in between, the places found last move on
        by one sample each (a match keeps matching as both go on), and a full search runs again
        as soon as one of them falls below the threshold."""
        k, need = self.samples, int(np.ceil(ahead)) + 1
        history = self.history.view()
        query = history[-k:]  # (K, D)
        weights = np.reshape(1.0 if self.weights is None else self.weights, (1, -1, 1))
        candidates = list(self.library)
        past = history[:-k - need]  # its continuation must be known
        if len(past) > k + need:
            candidates.append(past)
        first = self.history.appended - len(history)  # sample number of history[0]
        if self.since < self.settings.refresh and self.tracked:
            self.since += 1
            found = self._follow(candidates[-1] if len(candidates) > len(self.library) else None, first, query,
                                 weights, k, need)
            if found is not None:
                return found
        self.since = 0
        found = self._search(candidates, query, weights, k, need)
        # where each place is, as (library clip or -1 for the history, sample number) to follow it
        self.tracked = [(which, index + first if which < 0 else index) for _, _, index, which in found]
        return self._passing(found)

    def _follow(self, past, first: int, query, weights, k: int, need: int) -> list | None:
        """The tracked places one sample on, or None when one has run out or stopped matching."""
        found, tracked = [], []
        for which, at in self.tracked:
            at += 1
            series, index = (past, at - first) if which < 0 else (self.library[which], at)
            if series is None or not k - 1 <= index <= len(series) - need - 1:  # its continuation is known
                return None
            window = series[index - k + 1:index + 1].T[None]  # (1, D, K)
            found.append((float(self._distance(window, query, weights)[0]), series, index, which))
            tracked.append((which, at))
        self.tracked = tracked
        found.sort(key=lambda item: item[0])
        return self._passing(found) or None

    def _passing(self, found: list) -> list:
        self.last_similarity = 1.0 / (1.0 + found[0][0] / SIMILAR_M) if found else 0.0
        return found[:self.settings.neighbours] if self.last_similarity >= self.settings.threshold else []

    def _search(self, candidates, query, weights, k: int, need: int) -> list:
        """The nearest few distinct windows over every candidate series."""
        found = []
        for which, series in enumerate(candidates):
            which = which if which < len(self.library) else -1
            usable = len(series) - need - k + 1
            if usable <= 0:
                continue
            windows = sliding_window_view(series[:usable + k - 1], k, axis=0)  # (N, D, K)
            stride = max(1, self.settings.stride)
            coarse = np.arange(0, usable, stride)  # every stride-th window, then around the nearest
            distance = self._distance(windows[coarse], query, weights)
            best = coarse[np.argsort(distance)[:3 * self.settings.neighbours]]
            near = np.unique(np.clip(best[:, None] + np.arange(-stride + 1, stride), 0, usable - 1))
            distance = self._distance(windows[near], query, weights)
            taken: list[int] = []  # one window per place: the nearest few distinct stretches
            for j in np.argsort(distance):
                if len(taken) == self.settings.neighbours:
                    break
                if all(abs(int(near[j]) - t) >= stride for t in taken):
                    taken.append(int(near[j]))
                    found.append((float(distance[j]), series, int(near[j]) + k - 1, which))
        found.sort(key=lambda item: item[0])
        return found[:self.settings.neighbours]

    @staticmethod
    def _distance(windows: np.ndarray, query: np.ndarray, weights: np.ndarray) -> np.ndarray:
        """RMS distance of each window's path (its samples less its last) to the query's: how the
        body has been moving, wherever it is now."""
        path = windows - windows[:, :, -1:]
        wanted = (query - query[-1]).T[None]
        diff = (path - wanted) * weights
        return np.sqrt(np.mean(diff * diff, axis=(1, 2)))


class AutoPredictor:
    """Runs extrapolation and matching side by side and forecasts with all of them, each
    weighted by its recent mean squared error (its own forecasts, checked when their time came)
    to the power -SHARPNESS: nearly always the closest lately, without the jump of switching
    from one to another (walk and hop onto G1, 100 ms ahead: 25-31 % below holding when
    switching, 34-37 % blended; the exponent keeps the lag under 1 ms). Besides the set
    extrapolation, an undamped quadratic one: over a few tens of milliseconds (a filter's lag)
    it follows a curve without lag, where a damped line would lag behind; over a tenth of a
    second it overshoots, and the running errors weigh the two."""

    name = "auto"

    def __init__(self, rate_hz: float, settings: PredictSettings, weights=None, library=()):
        self.members = [Extrapolator(settings.samples, settings.degree, settings.damping),
                        Extrapolator(settings.samples + 1, 2, 1.0),
                        Extrapolator(settings.samples, 2, 0.6),
                        PatternMatcher(rate_hz, settings, weights, library)]
        self.error = np.zeros(len(self.members))  # running mean squared error per member
        self.pending: deque = deque()  # (due time, forecasts)

    def update(self, time_s: float, x: np.ndarray) -> None:
        x = np.asarray(x, dtype=float)
        while self.pending and self.pending[0][0] <= time_s + 1e-9:
            _, forecasts = self.pending.popleft()
            for k, forecast in enumerate(forecasts):
                miss = forecast - x
                self.error[k] = 0.95 * self.error[k] + 0.05 * float(miss @ miss) / len(miss)
        for member in self.members:
            member.update(time_s, x)
        self.time = time_s

    def predict(self, horizon_s: float) -> np.ndarray:
        forecasts = [member.predict(horizon_s) for member in self.members]
        self.pending.append((self.time + horizon_s, forecasts))
        weights = (1.0 / (self.error + 1e-12)) ** SHARPNESS  # inverse mean squared error: the closest lately weigh most
        return sum(w * f for w, f in zip(weights, forecasts)) / weights.sum()


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
                   library: list[np.ndarray] = ()):
    """The predictor settings.predictor names; library: series (T, D) in the predicted space."""
    kind = settings.predictor
    if kind == "none":
        return Hold()
    if kind == "extrapolate":
        return Extrapolator(settings.samples, settings.degree, settings.damping)
    if kind == "match":
        return PatternMatcher(rate_hz, settings, weights, library)
    if kind == "auto":
        return AutoPredictor(rate_hz, settings, weights, library)
    raise ValueError(f"unknown predictor {kind!r} (use {', '.join(PREDICTORS)})")
