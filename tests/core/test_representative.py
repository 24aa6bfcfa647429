"""Representative points of a synthetic swing (issue 12's case)."""
from __future__ import annotations

import numpy as np
import pytest

from core.balance.representative import representative_times

FPS = 120.0


def _swing(seed: int = 0):
    """Off the ground 1.00-1.60 s: z a half sine of 8 cm, a sideways peak at 1.25 s, forward
    travel monotonic, 2 mm noise on every channel."""
    rng = np.random.default_rng(seed)
    t = np.arange(0.5, 2.1, 1.0 / FPS)
    s = np.clip((t - 1.0) / 0.6, 0.0, 1.0)
    z = 0.08 * np.sin(np.pi * s)
    y = 0.03 * np.exp(-((t - 1.25) / 0.06) ** 2)
    x = 0.4 * (s - np.sin(2 * np.pi * s) / (2 * np.pi))  # monotonic forward
    channels = np.stack([x, y, z], axis=1) + rng.normal(0.0, 0.002, (len(t), 3))
    return t, channels


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_merged_at_a_tenth_of_a_second(seed):
    t, channels = _swing(seed)
    points = representative_times(t, channels, 1.0, 1.6, merge_s=0.1)
    assert len(points) == 3
    assert points[0] == 1.0 and points[-1] == 1.6
    assert abs(points[1] - 1.275) <= 1.0 / FPS + 1e-9


def test_a_narrow_merge_keeps_the_sideways_and_the_height_peaks_apart():
    t, channels = _swing()
    points = representative_times(t, channels, 1.0, 1.6, merge_s=0.03)
    assert len(points) == 4  # they stay separate: each within a few samples of its peak (noise moves it)
    assert abs(points[1] - 1.25) <= 0.02 and abs(points[2] - 1.30) <= 0.02


def test_higher_sensitivity_never_gives_fewer_points():
    t, channels = _swing()
    counts = [len(representative_times(t, channels, 1.0, 1.6, sensitivity=s, merge_s=0.03))
              for s in (0.5, 1.0, 2.0, 4.0, 8.0, 16.0)]
    assert counts == sorted(counts) and counts[-1] > counts[0]


def test_prominent_peaks_are_scipys_find_peaks():
    """The peaks without scipy.signal are find_peaks(prominence=...)'s on noise, walks and signals
    with flat tops (rounded to half units), at thresholds from 0 up, and on the swing's channels."""
    from scipy.signal import find_peaks

    from core.balance.representative import prominent_peaks

    rng = np.random.default_rng(7)
    for trial in range(600):
        x = rng.normal(size=int(rng.integers(1, 80)))
        x = np.round(x * 2) / 2 if trial % 3 == 0 else x
        x = np.cumsum(x) if trial % 5 == 0 else x
        threshold = abs(rng.normal()) * 0.7 if trial % 7 else 0.0
        assert np.array_equal(prominent_peaks(x, threshold), find_peaks(x, prominence=threshold)[0]), (x, threshold)
    _, channels = _swing()
    for channel in channels.T:
        for signal in (channel, -channel):
            assert np.array_equal(prominent_peaks(signal, 0.2 * np.ptp(channel)),
                                  find_peaks(signal, prominence=0.2 * np.ptp(channel))[0])
