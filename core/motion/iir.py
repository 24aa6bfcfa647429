"""Butterworth low-pass design and second-order-section filtering without scipy.signal.

Importing scipy.signal imports scipy.stats with it: about 1 G instructions, 14 % of a G1 bake
command, for three functions. The design follows scipy.signal.butter step by step (analog
prototype poles, prewarped cutoff, bilinear transform, scipy's "nearest" pairing into sections,
the gain in the first section), so the coefficients are scipy's bits (all 1,256 designs checked:
orders 1-8, 24-1000 Hz, cutoffs up to 0.49 of the rate). Each section's recursion runs as a unit
lower-triangular banded solve (LAPACK's dtbtrs, every channel at once). Frames on axis 0.
"""
from __future__ import annotations

import numpy as np

BILINEAR_RATE = 4.0  # 2 x scipy's normalised rate (2, Nyquist = 1): the bilinear transform's 2 fs


def butter_lowpass_sos(order: int, cutoff_hz: float, fps: float) -> np.ndarray:
    """A digital Butterworth low-pass (order >= 1, 0 < cutoff < fps / 2) as second-order sections
    (sections, 6) = [b0 b1 b2 1 a1 a2], the least resonant section first: scipy.signal.butter(order,
    cutoff_hz, fs=fps, output='sos') computed the same way."""
    if not (order >= 1 and 0 < cutoff_hz < 0.5 * fps):
        raise ValueError(f"need order >= 1 and 0 < cutoff < fps / 2, got {order}, {cutoff_hz}, {fps}")
    wn = cutoff_hz / (fps / 2)  # in half-cycles per sample, as scipy normalises it
    warped = BILINEAR_RATE * np.tan(np.pi * wn / 2.0)  # the analog cutoff the bilinear transform maps onto wn
    m = np.arange(-order + 1, order, 2)
    analog = warped * -np.exp(1j * np.pi * m / (2 * order))  # the prototype's poles, on a circle of radius warped
    poles = (BILINEAR_RATE + analog) / (BILINEAR_RATE - analog)
    gain = float(warped) ** order * np.real(1.0 / np.prod(BILINEAR_RATE - analog))
    half = order // 2  # poles[:half] have positive imaginary parts; poles[-1 - i] is poles[i]'s conjugate
    pairs = (poles[:half] + poles[::-1][:half].conj()) / 2  # one of each pair, averaged as scipy does

    sos = np.zeros(((order + 1) // 2, 6))
    origin_zero = order % 2 == 1  # an odd order's sections carry one zero at 0 (and a pole there)
    worst_first = np.argsort(np.abs(1 - np.abs(pairs)), kind="stable")  # nearest the unit circle last
    for section, pole in zip(range(len(sos) - 1, -1, -1), pairs[worst_first]):
        sos[section, 3:] = np.poly([pole, pole.conj()]).real
        if origin_zero and abs(pole) < abs(pole + 1):  # the zero at 0 is nearer than the ones at -1
            sos[section, :3] = (1.0, 1.0, 0.0)
            origin_zero = False
        else:
            sos[section, :3] = (1.0, 2.0, 1.0)
    if order % 2:  # the real pole (the least resonant), paired with the pole at 0
        real = poles[half].real
        sos[0, :3] = (1.0, 1.0, 0.0) if origin_zero else (1.0, 2.0, 1.0)
        sos[0, 3:] = (1.0, -real, 0.0)
    sos[0, :3] *= gain
    return sos


def sos_steady_state(sos: np.ndarray) -> np.ndarray:
    """Each section's state (sections, 2) after a unit step has settled: scipy.signal.sosfilt_zi (the
    same 2 x 2 solve per section, scaled by the gains of the sections before it)."""
    zi = np.empty((len(sos), 2))
    scale = 1.0
    for section, (b, a) in enumerate(zip(sos[:, :3], sos[:, 3:])):
        i_minus_a = np.array([[1.0 + a[1], -1.0], [a[2], 1.0]])  # I - companion(a).T
        zi[section] = scale * np.linalg.solve(i_minus_a, b[1:] - a[1:] * b[0])
        scale *= b.sum() / a.sum()
    return zi


def sos_filter(sos: np.ndarray, zi: np.ndarray, x: np.ndarray, backward: bool = False) -> np.ndarray:
    """x (frames, channels) through the sections in direct form from the states zi (sections, 2,
    channels), like scipy.signal.sosfilt(sos, x, axis=0, zi=zi)[0] (on x[::-1] when backward, returned
    in x's order). Returns a new Fortran-ordered array (each channel's frames in a row).

    A section's recursion y[n] + a1 y[n-1] + a2 y[n-2] = b0 x[n] + b1 x[n-1] + b2 x[n-2] is a unit
    lower-triangular system with two subdiagonals, the states entering its first two equations; run
    backward in time it is that matrix's transpose. LAPACK's banded triangular solve (dtbtrs) runs it
    on every channel in one call."""
    from scipy.linalg import lapack  # here: the module's users that never filter need no scipy

    frames = len(x)
    x = np.asfortranarray(x)
    band = np.empty((3, frames))  # LAPACK's lower band storage: the diagonal (1, not read), a1, a2
    first, second = (-1, -2) if backward else (0, 1)  # the equations the states enter
    for (b0, b1, b2, _, a1, a2), z in zip(sos, zi):
        # r = B x: shifted along the channels flattened (in a row, so 1-D and contiguous: a third of the
        # instructions of shifting the 2-D array); the first two rows, which mix channels, are redone
        r = np.multiply(x, b0, order="F")
        flat, src = r.reshape(-1, order="F"), x.reshape(-1, order="F")
        if backward:
            flat[:-1] += b1 * src[1:]
            flat[:-2] += b2 * src[2:]
        else:
            flat[1:] += b1 * src[:-1]
            flat[2:] += b2 * src[:-2]
        r[first] = b0 * x[first] + z[0]
        if frames < 2:  # one equation: y = r
            x = r
            continue
        r[second] = b0 * x[second] + b1 * x[first] + z[1]
        band[1], band[2] = a1, a2
        x, info = lapack.dtbtrs(band, r, uplo="L", trans="T" if backward else "N", diag="U", overwrite_b=1)
        if info:
            raise ValueError(f"dtbtrs argument {-info} is invalid")
    return x


def first_order_recursion(pole: complex, x: np.ndarray) -> np.ndarray:
    """y[n] = pole y[n-1] + x[n-1] from y[0] = 0, along axis 0 of x (frames, ...), real or complex:
    scipy.signal.lfilter([0, 1], [1, -pole], x, axis=0). One unit lower-bidiagonal solve (LAPACK's
    ztbtrs, every channel at once) instead of a Python loop over the frames."""
    from scipy.linalg import lapack  # here, as in sos_filter

    x = np.asarray(x)
    frames, shape = len(x), x.shape
    r = np.zeros((frames, int(np.prod(shape[1:], dtype=int))), dtype=complex, order="F")
    r[1:] = x[:-1].reshape(frames - 1, -1) if frames > 1 else r[1:]
    band = np.empty((2, frames), dtype=complex)
    band[0], band[1] = 1.0, -pole  # the diagonal (unit, not read) and the subdiagonal
    y, info = lapack.ztbtrs(band, r, uplo="L", trans="N", diag="U", overwrite_b=1)
    if info:
        raise ValueError(f"ztbtrs argument {-info} is invalid")
    y = y.reshape(shape)
    return y if np.iscomplexobj(x) or np.iscomplexobj(pole) else y.real


def sos_dc_delay(sos: np.ndarray) -> float:
    """The sections' group delay at 0 Hz, in samples: how far a slow signal lags behind. Each
    polynomial's phase slope at 0 is its coefficients' centroid, sum(k c_k) / sum(c_k); a section
    delays by its numerator's centroid less its denominator's (scipy.signal.group_delay near 0 Hz)."""
    k = np.arange(3.0)
    b, a = sos[:, :3], sos[:, 3:]
    return float(np.sum(b @ k / b.sum(axis=1) - a @ k / a.sum(axis=1)))
