"""Extrapolation, the prediction unit's plainest forecast (issue 14, item 5): a least-squares
polynomial through the latest samples, carried ahead. The pattern matcher forecasts relative to
it, and falls back on it."""
from __future__ import annotations

import functools
from collections import deque

import numpy as np


class Extrapolator:
    """Least-squares polynomial of `degree` through the latest `samples`, evaluated ahead."""

    name = "extrapolate"

    def __init__(self, samples: int = 3, degree: int = 1, damping: float = 1.0):
        if degree not in (1, 2):
            raise ValueError(f"extrapolation degree must be 1 or 2, got {degree}")
        self.degree, self.damping = degree, damping
        self.times: deque = deque(maxlen=max(2, samples))
        self.values: deque = deque(maxlen=max(2, samples))
        self._last: tuple | None = None  # (horizon, forecast) since the latest sample

    def update(self, time_s: float, x: np.ndarray) -> None:
        self.times.append(float(time_s))
        self.values.append(np.asarray(x, dtype=float))
        self._last = None

    def predict(self, horizon_s: float) -> np.ndarray:
        """The forecast `horizon_s` ahead of the latest sample (the same array when asked again)."""
        if self._last is None or self._last[0] != horizon_s:
            self._last = horizon_s, self._forecast(horizon_s)
        return self._last[1]

    def _forecast(self, horizon_s: float) -> np.ndarray:
        if not self.values:
            raise ValueError("no sample to predict from")
        degree = min(self.degree, len(self.values) - 1)
        if degree == 0 or horizon_s == 0.0:
            return self.values[-1].copy()
        latest = self.times[-1]
        weights = fit_weights(tuple(round(t - latest, 9) for t in self.times), round(horizon_s, 9), degree)
        last = self.values[-1]
        return last + self.damping * (weights @ np.asarray(self.values) - last)


@functools.lru_cache(maxsize=64)
def fit_weights(times: tuple, horizon_s: float, degree: int) -> np.ndarray:
    """The least-squares polynomial through samples at `times` (relative to the latest), evaluated
    `horizon_s` ahead, as weights (K,) of the samples: the same for every frame of a steady stream."""
    t = np.asarray(times)
    scale = max(-t[0], 1e-9)  # well-conditioned powers
    basis = np.vander(t / scale, degree + 1, increasing=True)  # (K, d + 1)
    ahead = (horizon_s / scale) ** np.arange(degree + 1)
    return basis @ np.linalg.solve(basis.T @ basis, ahead)
