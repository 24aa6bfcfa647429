"""Cart-table model with preview control (Kajita et al. 2003): a centre of mass path whose
ZMP follows a target.

The body is a cart of state (x, x', x'') on a table of height z_c; its input is the jerk
and its ZMP p = x - (z_c / g) x''. The controller is the optimal preview servo of the
system augmented with the integral of the ZMP error (Katayama et al. 1985): gains from the
discrete algebraic Riccati equation, the feed-forward of the target over the preview
horizon. x and y are independent; both ends of the target are padded by standing still.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.linalg import solve_discrete_are

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

    @classmethod
    def build(cls, settings: PreviewSettings) -> "PreviewGains":
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
    windows = np.lib.stride_tricks.sliding_window_view(padded[1:], steps, axis=0)[:frames]  # (F, D, N)
    ahead = windows @ gains.gd
    state = np.zeros((target.shape[1], 3))
    state[:, 0] = target[0]
    integral = np.zeros(target.shape[1])
    com, zmp = np.empty_like(target), np.empty_like(target)
    for k in range(frames):
        p = state @ gains.c
        integral += p - target[k]
        u = -gains.gi * integral - state @ gains.gx - ahead[k]
        com[k], zmp[k] = state[:, 0], p
        state = state @ gains.a.T + u[:, None] * gains.b
    com, zmp = com[steps:], zmp[steps:]
    return (com[:, 0], zmp[:, 0]) if one_axis else (com, zmp)
