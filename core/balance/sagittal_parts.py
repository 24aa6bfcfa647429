"""The rolled waist's parts that are not its placement (core.balance.sagittal): the per-sample inputs a placement's
residuals read, side by side for several trials, and the linear algebra of its Gauss-Newton steps."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np
from scipy.linalg import LinAlgError, solve_banded, solveh_banded


@dataclass
class _Samples:
    """One placement's per-sample inputs and what each residual weighs (all (F, ...) arrays)."""

    xy: np.ndarray  # (F, 2) the command
    height: np.ndarray  # (F,)
    at: np.ndarray  # (F, 3) the command at its height: the upright waist's place
    base_rot: np.ndarray  # (F, 3, 3)
    across: np.ndarray  # (F, 3) the plan's waist's left on the ground
    upright: np.ndarray  # (F, 3) where the upper body's CoM is under the plan's waist at the command
    goals: list[np.ndarray]  # per leg (F, 4, 4)
    hips: list[np.ndarray]  # per leg (F,) weight of its hip's miss
    command: np.ndarray  # (F,) weight of the upper body's miss across
    roll_w: np.ndarray  # (F,) weight of the roll's miss from roll_to
    roll_to: np.ndarray
    yaw_w: np.ndarray
    yaw_to: np.ndarray  # also the yaw on one foot, where the family's curve does not set it
    curve: np.ndarray  # (F,) int: the double support whose roll-yaw curve sets the yaw (-1: none)
    slave: np.ndarray  # (F,) how far that curve sets it (both feet's down share)
    roll_lo: np.ndarray  # (F,) the roll's range
    roll_hi: np.ndarray
    aims: list[np.ndarray] | None = None  # per leg (F, 3) its tail's axis as its goal has it (SagittalWaist._aims)
    stacks: dict = field(default_factory=dict)  # per count of trials its _Stack (SagittalWaist._stack)
    across_column: np.ndarray | None = None  # SagittalWaist._across_column's

    def take(self, rows: np.ndarray) -> "_Samples":
        """The samples rows (their aims, stacks and across column worked out again when asked)."""
        return _Samples(*[[a[rows] for a in v] if isinstance(v, list) else v[rows] for k, v in vars(self).items()
                          if k not in WORKED_OUT])


class _Worked(NamedTuple):
    """A trial's residuals (F, R), legs' head angles (per leg (F, H)) and waist pose (rotation, position)."""

    res: np.ndarray
    heads: list[np.ndarray]
    pose: tuple[np.ndarray, np.ndarray]


WORKED_OUT = ("aims", "stacks", "across_column")  # _Samples' fields worked out from the others at their first use
TILED = ("base_rot", "at", "across", "upright", "command", "yaw_w", "yaw_to", "roll_w", "roll_to")


@dataclass
class _Stack:
    """A placement's samples side by side for T trials, trial after trial (the fields of _Samples named in TILED,
    (T F, ...)), and what the legs' hips stack (PlanarPair: each trial's left leg's rows, then its right's): built
    once per count of trials and placement, as the per-call set-up of a residual was."""

    base_rot: np.ndarray
    at: np.ndarray
    across: np.ndarray
    upright: np.ndarray
    command: np.ndarray
    yaw_w: np.ndarray
    yaw_to: np.ndarray
    roll_w: np.ndarray
    roll_to: np.ndarray
    targets: np.ndarray  # (2 T F, 3) the legs' tail axes as their goals have them
    goal_at: np.ndarray  # (2 T F, 3) the feet's places
    hips: np.ndarray  # (2, F) the weights of the hips' misses


PATH_BAND = 4  # the path's normal matrix couples a sample's (across, roll) with its two neighbours' either side


def _normal_rows(jac: np.ndarray, res: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each sample's J^T J (C, C, F) and J^T r (C, F) of jac (F, R, C) and res (F, R), entry by entry: R
    products summed in order by one reduce over (F, R): einsum's "fri,frj->fij" and "fri,fr->fi" bits (R
    below 7: the placements' 5) in a third of their time (F 400-1,700, C 2). One column: einsum itself,
    whose contiguous sum over r rounds otherwise."""
    count = jac.shape[2]
    if count == 1:
        return np.einsum("fri,frj->fij", jac, jac).transpose(1, 2, 0), np.einsum("fri,fr->fi", jac, res).T
    normal = np.empty((count, count, len(jac)))
    grad = np.empty((count, len(jac)))
    for i in range(count):
        col = jac[:, :, i]
        for j in range(i + 1):
            np.add.reduce(col * jac[:, :, j], 1, out=normal[i, j])
            normal[j, i] = normal[i, j]
        np.add.reduce(col * res, 1, out=grad[i])
    return normal, grad


def _banded_step(band: np.ndarray, block: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """The path's Gauss-Newton step (2F,): the normal matrix is the acceleration's (band, lower, (5, 2F))
    plus each sample's own J^T J (block (2, 2, F), _normal_rows), a banded symmetric matrix: a banded
    Cholesky solve, not a general sparse LU (SuperLU took a third of the control cycle's placements); LU
    with pivoting on the band where Cholesky fails."""
    ab = band.copy()
    ab[0, 0::2] += block[0, 0]
    ab[0, 1::2] += block[1, 1]
    ab[1, 0::2] += block[1, 0]
    try:
        return solveh_banded(ab, rhs, lower=True)
    except LinAlgError:
        width = ab.shape[0] - 1
        full = np.zeros((2 * width + 1, ab.shape[1]))
        full[width:] = ab
        for d in range(1, width + 1):  # the upper band, the lower's mirror
            full[width - d, d:] = ab[d, :-d]
        return solve_banded((width, width), full, rhs)
