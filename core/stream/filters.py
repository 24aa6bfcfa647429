"""Causal noise removal for a live stream (issue 14, item 3).

Offline bakes filter with zero phase (core.motion.filtering), which needs the future. Live,
the filter runs forward only and keeps its state between frames: a second-order-section
Butterworth (lag about its group delay) or a moving average over the latest N outputs (lag
(N - 1) / 2 frames). Its lag is reported so the prediction unit can cover it.
"""
from __future__ import annotations

from collections import deque

import numpy as np

from ..chains.frame import clip_values
from ..motion.filtering import butter_sos
from ..motion.iir import sos_dc_delay, sos_steady_state

FILTER_ORDER = 2  # a second-order Butterworth: the least lag that still removes mocap jitter


class CausalFilter:
    """Filter vectors (D,) one sample at a time, then clip them into [lower, upper]."""

    def __init__(self, method: str, rate_hz: float, cutoff_hz: float = 7.0, window: int = 5,
                 lower: np.ndarray | None = None, upper: np.ndarray | None = None):
        key = method.lower().replace("-", "_")
        if key not in ("butterworth", "moving_average", "none"):
            raise ValueError(f"unknown filter {method!r} (use butterworth, moving_average or none)")
        if key == "butterworth" and not 0 < cutoff_hz < 0.5 * rate_hz:
            key = "none"  # at or above Nyquist nothing would be removed
        self.method, self.rate_hz, self.cutoff_hz, self.window = key, rate_hz, cutoff_hz, max(1, int(window))
        self.lower, self.upper = lower, upper
        self.sos = np.array(butter_sos(FILTER_ORDER, float(cutoff_hz), float(rate_hz))) if key == "butterworth" else None
        self.state: np.ndarray | None = None
        self.recent: deque = deque(maxlen=self.window)
        self._lag: float | None = None

    @property
    def lag_s(self) -> float:
        """Delay of a slow signal through the filter, seconds (its group delay near 0 Hz)."""
        if self._lag is None:
            self._lag = 0.0
            if self.method == "moving_average":
                self._lag = (self.window - 1) / 2.0 / self.rate_hz
            elif self.method == "butterworth":
                self._lag = sos_dc_delay(self.sos) / self.rate_hz
        return self._lag

    def __call__(self, x: np.ndarray) -> np.ndarray:
        x = np.asarray(x, dtype=float)
        if self.method == "butterworth":
            if self.state is None:  # start at rest on the first sample: no transient from zero
                self.state = sos_steady_state(self.sos)[:, :, None] * x[None, None, :]
            out = x
            for (b0, b1, b2, _, a1, a2), z in zip(self.sos, self.state):  # direct form II transposed
                y = b0 * out + z[0]
                z[0] = b1 * out - a1 * y + z[1]
                z[1] = b2 * out - a2 * y
                out = y
        elif self.method == "moving_average":
            self.recent.append(x)
            out = np.mean(self.recent, axis=0)
        else:
            out = x.copy()
        if self.lower is not None:
            out = clip_values(out, self.lower, self.upper)
        return out
