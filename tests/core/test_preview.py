"""The cart-table preview controller follows a stepping ZMP target (issue 12's numbers)."""
from __future__ import annotations

import numpy as np
import pytest

from core.balance.preview import PreviewSettings, follow_zmp


def _lateral_target(period: float, seconds: float = 8.0) -> np.ndarray:
    """+-0.1 m, switching every 0.8 s with 0.1 s ramps, starting and ending at 0."""
    t = np.arange(0.0, seconds, period)
    phase = np.floor(t / 0.8)
    level = np.where(phase % 2 == 0, 0.1, -0.1)
    level[(t < 0.8) | (t >= seconds - 0.8)] = 0.0
    ramp = max(1, int(round(0.1 / period)))
    kernel = np.ones(ramp) / ramp
    return np.convolve(np.pad(level, (ramp, ramp), mode="edge"), kernel, mode="same")[ramp:-ramp]


def test_the_zmp_follows_a_stepping_target():
    settings = PreviewSettings(period_s=0.005, com_height_m=0.8, q=1.0, r=1e-6, preview_s=1.6)
    target = _lateral_target(settings.period_s)
    com, zmp = follow_zmp(target, settings)
    error = zmp - target
    assert np.abs(error).max() <= 0.010
    assert np.sqrt(np.mean(error ** 2)) <= 0.001
    # the centre of mass sways less than the ZMP and leads it: it never reaches the feet
    assert np.abs(com).max() < 0.1 and np.abs(com).max() > 0.02


def test_two_axes_at_once_equal_one_at_a_time():
    settings = PreviewSettings(period_s=0.01)
    target = _lateral_target(settings.period_s, 4.0)
    both, _ = follow_zmp(np.stack([target, 0.5 * target], axis=1), settings)
    alone, _ = follow_zmp(target, settings)
    np.testing.assert_allclose(both[:, 0], alone, atol=1e-12)
    np.testing.assert_allclose(both[:, 1], 0.5 * alone, atol=1e-12)


def test_the_filtered_loop_is_the_controllers_recursion():
    """follow_zmp runs the closed loop mode by mode; the controller itself is the recursion
    p = c s, e += p - target, u = -gi e - gx s - sum_j gd[j] target[k + 1 + j], s = a s + b u,
    from standing (the target held a horizon before and after)."""
    from core.balance.preview import PreviewGains

    settings = PreviewSettings(period_s=0.01, com_height_m=0.7)
    gains = PreviewGains.build(settings)
    rng = np.random.default_rng(3)
    target = 0.2 + np.cumsum(rng.normal(0.0, 0.01, 300))
    steps = len(gains.gd)
    padded = np.r_[np.full(steps, target[0]), target, np.full(steps + 1, target[-1])]
    state, error, com, zmp = np.array([target[0], 0.0, 0.0]), 0.0, [], []
    for k in range(steps + len(target)):
        p = gains.c @ state
        error += p - padded[k]
        u = -gains.gi * error - gains.gx @ state - gains.gd @ padded[k + 1:k + 1 + steps]
        com.append(state[0])
        zmp.append(p)
        state = gains.a @ state + gains.b * u
    got_com, got_zmp = follow_zmp(target, settings, gains)
    np.testing.assert_allclose(got_com, com[steps:], atol=1e-10)
    np.testing.assert_allclose(got_zmp, zmp[steps:], atol=1e-10)


def test_gains_built_once_per_settings_follow_as_gains_solved_afresh():
    """PreviewGains.build shares one solve per settings' values (read-only): the path it gives is a fresh
    solve's to the bit, the closed loop's modes too (worked out once per gains); other values, even -0.0
    for 0.0, are other gains."""
    from core.balance.preview import PreviewGains

    settings = PreviewSettings(period_s=0.01, com_height_m=0.7)
    shared = PreviewGains.build(settings)
    assert PreviewGains.build(PreviewSettings(period_s=0.01, com_height_m=0.7)) is shared
    assert PreviewGains.build(PreviewSettings(period_s=0.01, com_height_m=0.71)) is not shared
    assert PreviewGains.build(PreviewSettings(q=0.0)) is not PreviewGains.build(PreviewSettings(q=-0.0))
    with pytest.raises(ValueError):
        shared.gd[0] = 0.0
    rng = np.random.default_rng(5)
    target = np.cumsum(rng.normal(0.0, 0.01, (400, 2)), axis=0)
    for _ in range(2):  # the second call on the modes worked out by the first
        com, zmp = follow_zmp(target, settings, shared)
        fresh_com, fresh_zmp = follow_zmp(target, settings, PreviewGains.solve(settings))
        assert np.array_equal(com, fresh_com) and np.array_equal(zmp, fresh_zmp)
