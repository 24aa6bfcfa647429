"""Trajectory filters: attenuation, zero phase, limits, edges, NaN bridging."""
from __future__ import annotations

import numpy as np
import pytest

from core.motion.filtering import bridge_nans, butterworth_lowpass, lowpass, mean_abs_jerk, moving_average

FPS = 120.0


def _two_tones(seconds: float = 4.0):
    t = np.arange(int(seconds * FPS)) / FPS
    slow = np.sin(2 * np.pi * 1.0 * t)
    fast = 0.5 * np.sin(2 * np.pi * 30.0 * t)
    return t, slow, fast


def _amplitude(x: np.ndarray, t: np.ndarray, hz: float) -> float:
    """Amplitude of the hz component by projection (whole number of cycles assumed)."""
    c, s = np.cos(2 * np.pi * hz * t), np.sin(2 * np.pi * hz * t)
    return float(np.hypot(2 * np.mean(x * c), 2 * np.mean(x * s)))


def test_butterworth_separates_tones_without_lag():
    t, slow, fast = _two_tones()
    q = np.stack([slow + fast, 2 * (slow + fast)], axis=1)
    out = butterworth_lowpass(q, FPS, 6.0)
    assert out.shape == q.shape
    core = slice(int(FPS), -int(FPS))  # judge away from the padded ends
    for col, gain in ((0, 1.0), (1, 2.0)):
        fast_left = _amplitude(out[core, col], t[core], 30.0)
        slow_left = _amplitude(out[core, col], t[core], 1.0)
        assert fast_left < 0.05 * 0.5 * gain
        assert slow_left == pytest.approx(gain, rel=0.02)
    # Zero phase: the slow peaks land on the same frames as in the clean signal.
    peaks_in = [i for i in range(1, len(t) - 1) if slow[i] >= slow[i - 1] and slow[i] >= slow[i + 1]]
    for i in peaks_in[1:-1]:
        window = out[i - 10:i + 11, 0]
        assert abs(int(np.argmax(window)) - 10) <= 1


def test_butterworth_reduces_jerk_and_handles_edge_cases():
    t, slow, fast = _two_tones(2.0)
    q = (slow + fast)[:, None]
    out = butterworth_lowpass(q, FPS, 6.0)
    assert mean_abs_jerk(out, FPS) < 0.1 * mean_abs_jerk(q, FPS)
    # At or above Nyquist: unchanged copy.
    same = butterworth_lowpass(q, FPS, 60.0)
    np.testing.assert_array_equal(same, q)
    assert same is not q
    # 1-D input and very short clips work.
    assert butterworth_lowpass(slow, FPS, 6.0).shape == slow.shape
    for frames in (1, 2, 5):
        short = np.linspace(0.0, 1.0, frames * 3).reshape(frames, 3)
        res = butterworth_lowpass(short, FPS, 6.0)
        assert res.shape == short.shape and np.isfinite(res).all()
    with pytest.raises(ValueError):
        butterworth_lowpass(q, FPS, 0.0)


def test_moving_average_keeps_constants_and_ramps_including_ends():
    const = np.full((20, 3), 1.7)
    np.testing.assert_allclose(moving_average(const, 5), const)
    ramp = np.linspace(-1.0, 3.0, 30)[:, None] * [1.0, -2.0]
    np.testing.assert_allclose(moving_average(ramp, 7), ramp, atol=1e-12)
    noisy = np.random.default_rng(0).normal(size=(200, 2))
    smooth = moving_average(noisy, 9)
    assert smooth.std() < 0.5 * noisy.std()
    np.testing.assert_allclose(smooth[0], noisy[0])  # window shrinks to one frame at the ends
    # An even window behaves as the next odd one.
    np.testing.assert_allclose(moving_average(noisy, 4), moving_average(noisy, 5))
    np.testing.assert_allclose(moving_average(noisy, 1), noisy)
    assert moving_average(noisy[:5], 11).shape == (5, 2)


def test_lowpass_dispatch_and_limits():
    t, slow, fast = _two_tones(2.0)
    q = np.stack([slow + fast, 0.2 * slow], axis=1)
    lower, upper = np.array([-0.8, -np.inf]), np.array([0.8, np.inf])
    for method in ("butterworth", "moving_average", "none"):
        out = lowpass(q, FPS, method=method, lower=lower, upper=upper)
        assert out.shape == q.shape
        assert (out[:, 0] >= -0.8).all() and (out[:, 0] <= 0.8).all()
        assert out[:, 0].max() == pytest.approx(0.8)  # the limit is actually reached, not avoided
    np.testing.assert_allclose(lowpass(q, FPS, method="none"), q)
    np.testing.assert_allclose(lowpass(q, FPS, cutoff_hz=6.0), butterworth_lowpass(q, FPS, 6.0))
    assert mean_abs_jerk(lowpass(q, FPS), FPS) < mean_abs_jerk(q, FPS)
    with pytest.raises(ValueError, match="kalman"):
        lowpass(q, FPS, method="kalman")


def test_filtered_result_respects_tight_limits():
    # A square wave at the limits overshoots under a Butterworth; clipping must fix that.
    q = np.where((np.arange(240) // 30) % 2 == 0, 0.5, -0.5)[:, None]
    raw = butterworth_lowpass(q, FPS, 6.0)
    assert raw.max() > 0.5  # the overshoot this guards against
    out = lowpass(q, FPS, lower=np.array([-0.5]), upper=np.array([0.5]))
    assert out.max() <= 0.5 and out.min() >= -0.5


def test_mean_abs_jerk():
    t = np.arange(50) / FPS
    np.testing.assert_allclose(mean_abs_jerk((t ** 3)[:, None], FPS), 6.0, rtol=1e-6)
    assert mean_abs_jerk(np.stack([t, t ** 2], axis=1), FPS) == pytest.approx(0.0, abs=1e-6)
    assert mean_abs_jerk(np.zeros((3, 2)), FPS) == 0.0


def test_bridge_nans_linear_gap_and_edges():
    ramp = np.stack([np.arange(10.0), 5.0 - 2.0 * np.arange(10.0)], axis=1)
    holed = ramp.copy()
    holed[3:6] = np.nan
    filled, mask = bridge_nans(holed)
    np.testing.assert_allclose(filled, ramp, atol=1e-12)
    assert mask.tolist() == [i in (3, 4, 5) for i in range(10)]
    assert np.isnan(holed).any()  # input untouched

    edged = ramp.copy()
    edged[:2, 0] = np.nan
    edged[-3:, 1] = np.nan
    filled, mask = bridge_nans(edged)
    assert filled[0, 0] == filled[1, 0] == ramp[2, 0]
    assert (filled[-3:, 1] == ramp[-4, 1]).all()
    np.testing.assert_array_equal(filled[2:-3], ramp[2:-3])
    assert mask.sum() == 5


def test_bridge_nans_multidimensional_and_errors():
    x = np.arange(24.0).reshape(4, 2, 3)
    y = x.copy()
    y[1, 0, 2] = np.nan
    filled, mask = bridge_nans(y)
    np.testing.assert_allclose(filled, x)
    assert mask.tolist() == [False, True, False, False]
    clean, clean_mask = bridge_nans(x)
    np.testing.assert_array_equal(clean, x)
    assert not clean_mask.any()
    with pytest.raises(ValueError, match="every value"):
        bridge_nans(np.full((5, 2), np.nan))
    one_dead = np.ones((5, 2))
    one_dead[:, 1] = np.nan
    with pytest.raises(ValueError, match=r"\[1\]"):
        bridge_nans(one_dead)


def test_short_clip_every_method():
    q = np.array([[0.0, 1.0], [0.1, 1.2], [0.3, 0.9], [0.2, 1.1], [0.4, 1.0]])
    for method in ("butterworth", "moving_average", "none"):
        out = lowpass(q, FPS, method=method, lower=np.array([0.0, 0.95]), upper=np.array([0.35, 1.15]))
        assert out.shape == q.shape and np.isfinite(out).all()
        assert (out >= [0.0, 0.95]).all() and (out <= [0.35, 1.15]).all()
    assert mean_abs_jerk(q, FPS) > 0.0


# Cutoffs and rates the bakes and gaits filter with (joint angles, steady legs, plants, contacts,
# waist, inertia) and the extremes around them: a low cutoff at a high rate puts the poles nearest 1.
DESIGNS = [(fps, cutoff) for fps in (24.0, 30.0, 60.0, 100.0, 120.0, 200.0, 500.0)
           for cutoff in (0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0, 18.0, 0.3 * fps, 0.45 * fps)
           if cutoff < 0.5 * fps]


def test_butterworth_design_is_scipys():
    """The sections and their steady states are scipy.signal.butter's and sosfilt_zi's (orders 1-8:
    odd orders pair the real pole and place the zero at 0 as scipy's nearest pairing does), and the
    design refuses what scipy refuses."""
    from scipy import signal

    from core.motion.iir import butter_lowpass_sos, sos_steady_state

    for order in range(1, 9):
        for fps, cutoff in DESIGNS:
            expected = signal.butter(order, cutoff, fs=fps, output="sos")
            ours = butter_lowpass_sos(order, cutoff, fps)
            np.testing.assert_allclose(ours, expected, rtol=1e-12, atol=1e-12 * np.abs(expected).max())
            zi = signal.sosfilt_zi(expected)
            np.testing.assert_allclose(sos_steady_state(ours), zi, rtol=1e-12, atol=1e-12 * np.abs(zi).max())
    for bad in ((4, 60.0, 120.0), (4, 0.0, 120.0), (0, 6.0, 120.0)):
        with pytest.raises(ValueError):
            butter_lowpass_sos(*bad)


def _clips():
    """The bundled walk's joint heads and the hop's (frames, bones, 3), and steps and ramps."""
    from pathlib import Path

    from core.motion.bvh import load_bvh

    root = Path(__file__).resolve().parents[2]
    walk = load_bvh(root / "data" / "motion" / "cmu_131_01_walk_m.bvh").to_source_motion().heads
    hop = load_bvh(root / "tests" / "data" / "motion" / "cmu_131_03_hop.bvh").to_source_motion().heads
    t = np.arange(500)
    edges = np.stack([np.where(t >= 250, 1.0, 0.0), np.where(t >= 3, -2.0, 5.0), 0.01 * t, 4.0 - 0.03 * t], axis=1)
    return walk, hop, edges


def test_forward_backward_is_sosfiltfilt():
    """The low-pass without scipy.signal gives scipy's sosfiltfilt to rounding (1e-10 of the signal:
    the banded solve rounds differently from sosfilt's direct form), on the bundled clips' joint
    heads (1-3 dimensional), steps and ramps, at every pad the low-pass uses and none, clips down to
    two frames, orders 1-8 at the designs the bakes use and the extremes."""
    from scipy import signal

    from core.motion.filtering import PAD_RATE_HZ, butter_sos, butter_zi, forward_backward

    walk, hop, edges = _clips()
    worst = 0.0
    for order in range(1, 9):
        for fps, cutoff in ((120.0, 6.0), (120.0, 1.5), (120.0, 18.0), (500.0, 1.0), (30.0, 12.0)):
            sos = butter_sos(order, cutoff, fps)
            zi = butter_zi(order, cutoff, fps)
            full = int(round(3 * (2 * len(sos) + 1) * fps / PAD_RATE_HZ))
            for x in (walk[:, 0, 2], walk[:, :4, 0], hop[:, :3], edges):
                for frames, padlen in ((len(x), full), (40, 39), (len(x), 0), (2, 1), (2, 0)):
                    q = np.array(x[:frames], dtype=float)
                    ours = forward_backward(sos, zi, q, padlen)
                    expected = signal.sosfiltfilt(sos.copy(), q, axis=0, padlen=padlen)
                    assert ours.shape == q.shape
                    worst = max(worst, float(np.abs(ours - expected).max() / np.abs(q).max()))
    assert worst < 1e-10
    assert np.array_equal(butterworth_lowpass(walk[:, :4, 1], 120.0, 6.0),
                          forward_backward(butter_sos(4, 6.0, 120.0), butter_zi(4, 6.0, 120.0), walk[:, :4, 1], 15))


def test_butterworth_keeps_constants_and_imports_no_signal():
    """A constant stays constant to rounding at every length (its steady state starts both passes; a
    few 1e-12 at 1 Hz and 500 Hz, as with scipy's sosfiltfilt: the steady state's own rounding),
    the ends of a step settle on its levels, and filtering imports no scipy.signal (with scipy.stats
    it cost 1 G instructions, 14 % of a bake command)."""
    import subprocess
    import sys
    from pathlib import Path

    for frames in (2, 3, 5, 16, 300):
        for order in (1, 2, 4, 7):
            q = np.full((frames, 3), [0.25, -1.5, 3.0])
            out = butterworth_lowpass(q, 500.0, 1.0, order)
            np.testing.assert_allclose(out, q, rtol=1e-10, atol=0)
    step = np.where(np.arange(600) >= 300, 2.0, -1.0)[:, None]
    out = butterworth_lowpass(step, 120.0, 6.0)
    assert np.isfinite(out).all()
    assert abs(out[0, 0] + 1.0) < 1e-9 and abs(out[-1, 0] - 2.0) < 1e-9
    root = Path(__file__).resolve().parents[2]
    code = ("import sys; import numpy as np; from core.motion.filtering import butterworth_lowpass; "
            "butterworth_lowpass(np.random.default_rng(0).normal(size=(200, 4)), 120.0, 6.0); "
            "print('scipy.signal' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


def test_first_order_recursion_is_lfilters():
    """The preview loop's per-mode recursion is scipy.signal.lfilter([0, 1], [1, -pole]) to rounding for
    real and complex poles near and far from the unit circle, one frame to many, and neither the balance
    package nor the live stream imports scipy.signal (with scipy.stats, 1 G instructions a gait command)."""
    import subprocess
    import sys
    from pathlib import Path

    from scipy.signal import lfilter

    from core.motion.iir import first_order_recursion

    rng = np.random.default_rng(3)
    for pole in (0.9, -0.3 + 0.5j, 0.99 + 0.01j, np.complex128(0.5)):
        for shape in ((1, 3), (2,), (50, 3), (400, 2, 2)):
            x = rng.normal(size=shape)
            want = lfilter([0.0, 1.0], [1.0, -pole], x, axis=0)
            got = first_order_recursion(pole, x)
            assert got.dtype == want.dtype and got.shape == want.shape
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    root = Path(__file__).resolve().parents[2]
    code = ("import sys, core.balance.gait, core.balance.foot_path, core.stream.session; "
            "print('scipy.signal' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


def test_dc_delay_is_scipys_group_delay_near_zero():
    """The live filter's lag: the sections' group delay at 0 Hz is scipy.signal.group_delay's at 1 mHz
    (to 1e-6 of it: the phase slope changes with the square of the frequency), for orders 1-4."""
    from scipy import signal

    from core.motion.filtering import butter_sos
    from core.motion.iir import sos_dc_delay

    for order in (1, 2, 3, 4):
        for cutoff_hz, fps in ((7.0, 120.0), (7.0, 60.0), (2.0, 200.0), (20.0, 100.0)):
            sos = butter_sos(order, cutoff_hz, fps)
            _, delay = signal.group_delay(signal.sos2tf(sos), w=[1e-3], fs=fps)
            assert abs(sos_dc_delay(sos) - delay[0]) < 1e-6 * delay[0], (order, cutoff_hz, fps)
