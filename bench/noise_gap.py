"""The keep_apart noise probes' one measure: how far the room made from noisy input joints lies from the clean one's."""
from __future__ import annotations

import numpy as np


def noisy_input(q: np.ndarray, eps: float, seed: int = 0) -> np.ndarray:
    """q (F, V, rad) plus uniform noise of +-eps rad, the same draw every run (of each seed)."""
    return q + np.random.default_rng(seed).uniform(-eps, eps, q.shape)


def print_gap(name: str, eps: float, joint_names: list[str], clean: np.ndarray, noisy: np.ndarray) -> None:
    """Print the largest joint gap (rad), its joint and frame, and the frames over 1e-3 rad."""
    d = np.abs(noisy - clean)
    f, j = np.unravel_index(d.argmax(), d.shape)
    print(f"{name} eps {eps:g}: max {d.max():.2e} rad ({joint_names[j]}, frame {f}), "
          f"frames over 1e-3: {(d.max(1) > 1e-3).sum()} of {len(d)}")
