"""Cart-table model with preview control (Kajita et al. 2003): a centre of mass path whose
ZMP follows a target.

The body is a cart of state (x, x', x'') on a table of height z_c; its input is the jerk
and its ZMP p = x - (z_c / g) x''. The controller is the optimal preview servo of the
system augmented with the integral of the ZMP error (Katayama et al. 1985): gains from the
discrete algebraic Riccati equation, the feed-forward of the target over the preview
horizon. x and y are independent; both ends of the target are padded by standing still. The
closed loop is simulated mode by mode (a linear filter), not sample by sample.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np
from scipy.linalg import solve_discrete_are

from ..motion.iir import first_order_recursion
from .inertia import GRAVITY


@dataclass
class PreviewSettings:
    period_s: float = 0.005
    com_height_m: float = 0.8
    q: float = 1.0  # weight of the ZMP error
    r: float = 1e-6  # weight of the jerk
    preview_s: float = 1.6


@dataclass
class PreviewGains:
    a: np.ndarray  # (3, 3) cart dynamics over one period
    b: np.ndarray  # (3,)
    c: np.ndarray  # (3,) ZMP output
    gi: float  # integral gain
    gx: np.ndarray  # (3,) state gain
    gd: np.ndarray  # (N,) preview gains of the target, 1 .. N periods ahead

    _loop: tuple | None = field(default=None, init=False, repr=False, compare=False)  # _closed_loop's modes

    @classmethod
    def build(cls, settings: PreviewSettings) -> "PreviewGains":
        """The gains for settings, solved once per settings' values (bit for bit: -0.0 is not 0.0) and
        shared, read-only: a gait asks for the same two or three a dozen times (every correction's
        passes), and each is a Riccati solve and a horizon of 320 products."""
        values = np.array([settings.period_s, settings.com_height_m, settings.q, settings.r, settings.preview_s],
                          dtype=float)
        return _built(values.tobytes())

    @classmethod
    def solve(cls, settings: PreviewSettings) -> "PreviewGains":
        """The gains for settings, solved afresh (build shares them)."""
        dt, zc = settings.period_s, settings.com_height_m
        a = np.array([[1.0, dt, dt * dt / 2.0], [0.0, 1.0, dt], [0.0, 0.0, 1.0]])
        b = np.array([dt ** 3 / 6.0, dt * dt / 2.0, dt])
        c = np.array([1.0, 0.0, -zc / GRAVITY])
        a_aug = np.zeros((4, 4))
        a_aug[0, 0] = 1.0
        a_aug[0, 1:] = c @ a
        a_aug[1:, 1:] = a
        b_aug = np.concatenate([[c @ b], b])[:, None]
        q_aug = np.diag([settings.q, 0.0, 0.0, 0.0])
        r = np.array([[settings.r]])
        k = solve_discrete_are(a_aug, b_aug, q_aug, r)
        g = 1.0 / (settings.r + (b_aug.T @ k @ b_aug).item())
        unit = np.array([1.0, 0.0, 0.0, 0.0])[:, None]
        f_aug = np.vstack([c @ a, a])
        gi = g * (b_aug.T @ k @ unit).item()
        gx = g * (b_aug.T @ k @ f_aug)[0]
        closed = a_aug - b_aug @ (g * b_aug.T @ k @ a_aug)
        steps = max(1, int(round(settings.preview_s / dt)))
        gd = np.empty(steps)
        gd[0] = -gi
        x = -closed.T @ k @ unit
        for j in range(1, steps):
            gd[j] = g * (b_aug.T @ x).item()
            x = closed.T @ x
        return cls(a, b, c, gi, gx, gd)


@lru_cache(maxsize=16)
def _built(key: bytes) -> PreviewGains:
    """PreviewGains.build's gains for the settings' values packed as float64 bytes, arrays read-only."""
    gains = PreviewGains.solve(PreviewSettings(*(float(v) for v in np.frombuffer(key, dtype=float))))
    for array in (gains.a, gains.b, gains.c, gains.gx, gains.gd):
        array.setflags(write=False)
    return gains


def follow_zmp(target: np.ndarray, settings: PreviewSettings | None = None,
               gains: PreviewGains | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(centre of mass (F, D), the cart-table ZMP (F, D)) for a target ZMP (F, D) sampled at the
    period; D independent axes (x, y). The target is held at both ends (standing still)."""
    settings = settings or PreviewSettings()
    gains = gains or PreviewGains.build(settings)
    target = np.asarray(target, dtype=float)
    one_axis = target.ndim == 1
    target = target[:, None] if one_axis else target
    steps = len(gains.gd)
    target = np.concatenate([np.repeat(target[:1], steps, axis=0), target])  # stand still a horizon first
    frames = len(target)
    padded = np.concatenate([target, np.repeat(target[-1:], steps, axis=0)])
    # feed-forward of the target over the horizon: sum_j gd[j] p(k + 1 + j), for every k at once
    ahead = np.stack([np.correlate(axis, gains.gd, "valid")[:frames] for axis in padded[1:].T], axis=1)  # (F, D)
    com, zmp = _closed_loop(gains, target - target[0], ahead + gains.gx[0] * target[0])
    com, zmp = com[steps:] + target[0], zmp[steps:] + target[0]
    return (com[:, 0], zmp[:, 0]) if one_axis else (com, zmp)


def _closed_loop(gains: PreviewGains, target: np.ndarray, ahead: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The controlled cart from rest at 0: (CoM, ZMP) (F, D) for a target (F, D) and the
    feed-forward ahead (F, D). The loop, for every k,

        p = c s;  e += p - target[k];  u = -gi e - gx s - ahead[k];  s = a s + b u,

    is linear and time-invariant in z = (s, e before step k): z[k+1] = M z[k] + B w[k]. It runs
    as one first-order recursion per eigenmode of M (a banded solve, in LAPACK), not a Python loop
    over the samples."""
    poles, modes, into = _modes(gains)
    inputs = np.stack([target, ahead], axis=-1)  # (F, D, 2)
    forced = np.einsum("mi,fdi->mfd", into, inputs)  # (4, F, D)
    y = np.stack([first_order_recursion(pole, forced[i]) for i, pole in enumerate(poles)])
    state = np.einsum("sm,mfd->sfd", modes[:3], y).real  # (3, F, D)
    return state[0], np.einsum("s,sfd->fd", gains.c, state)


def _modes(gains: PreviewGains) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The closed loop's poles (4,), modes (4, 4) and the inputs (target, ahead) into them (4, 2), worked
    out once per gains (shared gains are asked for them at every pass)."""
    if gains._loop is None:
        a, b, c = gains.a, gains.b, gains.c
        m = np.zeros((4, 4))
        m[:3, :3] = a - np.outer(b, gains.gi * c + gains.gx)
        m[:3, 3] = -gains.gi * b
        m[3, :3] = c
        m[3, 3] = 1.0
        drive = np.zeros((4, 2))  # inputs (target, ahead)
        drive[:3, 0], drive[:3, 1] = gains.gi * b, -b
        drive[3, 0] = -1.0
        poles, modes = np.linalg.eig(m)
        gains._loop = (poles, modes, np.linalg.solve(modes, drive))  # into: (4, 2)
    return gains._loop
