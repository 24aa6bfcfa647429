"""The mechanism's optimum precomputed on a grid, on one IK branch, for fast lookup.

Searching every grid point on its own lets neighbouring points answer with
different IK branches, and averaging their quaternions gives an orientation
that neither branch holds well (25-170 degree turns between keys on a Panda
arc). The grid is therefore searched from its centre: every point is
warm-started from the centre's joint values and pays a continuity cost for
turning away from the centre's orientation, and a lookup averages only the
surrounding grid orientations within BRANCH_DEG of the nearest one.
Positions in metres in the chain's root-link frame; quaternions (w, x, y, z).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .mechanism import MechanismChain, chain_frames, random_joint_values
from .orientations import quat_average
from .path_optimum import PathSearch, axis_turns, choose, improve, mechanism_search, seeds_for, turn_angles
from .orientations import quat_mul

BRANCH_DEG = 30.0  # grid orientations further than this from the nearest one are another branch


@dataclass
class OrientationTable:
    """The best orientation at grid points over (part of) the reachable workspace, for fast lookup."""

    lower: np.ndarray    # (3,) m, the first grid point
    spacing: np.ndarray  # (3,) m between grid points (any value on an axis with one point)
    quats: np.ndarray    # (Nx, Ny, Nz, 4), NaN where the chain cannot reach
    objective: str

    def lookup(self, positions, min_weight: float = 0.5) -> np.ndarray:
        """Trilinear mean (V, 4) of the surrounding grid orientations on the nearest one's branch;
        NaN where less than `min_weight` of the weight falls on such points (search those directly)."""
        positions = np.asarray(positions, float).reshape(-1, 3)
        shape = np.array(self.quats.shape[:3])
        x = (positions - self.lower) / np.where(self.spacing > 0, self.spacing, 1.0)
        i0 = np.clip(np.floor(x), 0, np.maximum(shape - 2, 0)).astype(int)
        frac = np.where(shape > 1, np.clip(x - i0, 0.0, 1.0), 0.0)
        offsets = np.array([[a, b, c] for a in (0, 1) for b in (0, 1) for c in (0, 1)])
        idx = np.minimum(i0[:, None] + offsets[None], shape - 1)  # (V, 8, 3)
        weight = np.prod(np.where(offsets[None] == 1, frac[:, None], 1.0 - frac[:, None]), axis=-1)
        q = self.quats[idx[..., 0], idx[..., 1], idx[..., 2]]
        valid = ~np.isnan(q[..., 0])
        weight = np.where(valid, weight, 0.0)
        nearest = q[np.arange(q.shape[0]), np.argmax(weight, axis=1)]  # (V, 4)
        same = valid & (turn_angles(np.where(valid[..., None], q, 0.0), nearest[:, None])
                        <= np.radians(BRANCH_DEG))
        weight = np.where(same, weight, 0.0)
        total = weight.sum(axis=1)
        out = quat_average(np.where(same[..., None], q, 0.0), weight / np.maximum(total, 1e-12)[:, None])
        out[total < min_weight] = np.nan
        return out

    def save(self, path) -> None:
        np.savez(Path(path), lower=self.lower, spacing=self.spacing, quats=self.quats,
                 objective=np.array(self.objective))

    @classmethod
    def load(cls, path) -> "OrientationTable":
        with np.load(Path(path)) as data:
            return cls(data["lower"], data["spacing"], data["quats"], str(data["objective"]))


def workspace_bounds(chain: MechanismChain, samples: int = 2000, rng_seed: int = 0) -> np.ndarray:
    """(2, 3) m, the box around tip positions of random joint values inside the limits."""
    tips = chain_frames(chain, random_joint_values(chain, samples, rng_seed))[:, chain.tip, :3, 3]
    return np.stack([tips.min(axis=0), tips.max(axis=0)])


def build_table(chain: MechanismChain, objective: str = "manipulability", resolution: int = 6,
                bounds=None, refine: int = 1, search: PathSearch = PathSearch()) -> OrientationTable:
    """Search the best orientation at resolution^3 grid points once, all on the centre's branch.

    bounds (2, 3) m limits the grid to a region (e.g. around an animation's
    keys) so a small grid is fine; by default the whole reachable workspace.
    """
    if resolution < 1:
        raise ValueError(f"resolution must be >= 1, got {resolution}")
    box = workspace_bounds(chain) if bounds is None else np.asarray(bounds, float).reshape(2, 3)
    axes = [np.linspace(box[0, i], box[1, i], resolution) for i in range(3)]
    grid = np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1)
    points = grid.reshape(-1, 3)
    centre = mechanism_search(chain, points[np.argmin(np.linalg.norm(points - box.mean(axis=0), axis=1))],
                              np.array([[1.0, 0.0, 0.0, 0.0]]), objective, search)
    quats = np.full((points.shape[0], 4), np.nan)
    if centre.reached[0]:
        count = points.shape[0]
        candidates = np.broadcast_to(np.vstack([centre.quats, chain.candidates]), (count,) + (1 + len(chain.candidates), 4))
        seeds = np.broadcast_to(seeds_for(chain, centre.q[0], search, 0), (count, 2, chain.columns.size))
        previous = np.broadcast_to(centre.quats[0], (count, 4))
        best, scale, _ = choose(chain, points, np.ascontiguousarray(candidates), np.ascontiguousarray(seeds),
                                objective, previous, search)
        for round_ in range(refine):
            turns = axis_turns(np.vstack([np.eye(3), -np.eye(3)]), np.full(6, 0.2 * 0.5 ** round_))
            improve(chain, points, best, quat_mul(turns[None], best.quats[:, None]), objective, previous,
                    search, scale)
        quats = np.where(np.isfinite(best.score)[:, None], best.quats, np.nan)
    spacing = (box[1] - box[0]) / max(resolution - 1, 1)
    return OrientationTable(box[0].copy(), spacing, quats.reshape(grid.shape[:3] + (4,)), objective)


__all__ = ["OrientationTable", "build_table", "workspace_bounds", "BRANCH_DEG"]
