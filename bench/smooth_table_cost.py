#!/usr/bin/env python3
"""What a cheaper smooth trunk distance could cost: per query of one avoiding G1 bake's recorded smooth
distance calls (bench/smooth_distance_ab.py --record), replayed call by call as the bake makes them, CPU of

- the capsule axes' closest points (core.collision.distance.segment_closest: what a capsule pair costs),
- a table of the proxy's f on a grid in its frame (`--spacing`), read trilinearly at `--samples` points along
  each capsule's axis, the least sample taken (a prototype: no refinement, no gradient),
- f once at one point over a proxy's 64 planes (core.collision.smooth.soft_value: a floor for any search that
  evaluates f itself),
- the distance itself (smooth.capsule_to_smooth: the bracketed Newton search);

and how far the table's answer is from the search's where the search's is within the call's reach (above it:
the table would report a pair clearer than the proxy says, by the interpolation's overshoot on a convex f; far
below: axes whose samples miss the least, or points off the table, where f is bounded by its 1-Lipschitz
continuation). The table's box is the queries' own (1st-99th percentile, 2 cm more): a prototype's.

    ROBOT_RETARGET_SMOOTH_TRUNK=1 .venv/bin/python bench/smooth_distance_ab.py --record /tmp/calls --clips hop
    ROBOT_RETARGET_SMOOTH_TRUNK=1 .venv/bin/python bench/smooth_table_cost.py /tmp/calls/hop.pkl [--spacing 0.005]
        [--samples 16] [--rounds 3]
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[var] = "1"

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(ROOT))
import numpy as np  # noqa: E402

from core.collision import smooth  # noqa: E402
from core.collision.distance import segment_closest  # noqa: E402
from smooth_search_cost import recorded  # noqa: E402


def local_ends(model, placed: np.ndarray, proxy: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """The capsules' axis ends (K, 2, 3) in their proxies' frames (as capsule_to_smooth places them)."""
    turn, shift = smooth.local_frame(placed, model.hull_points[proxy, 0])
    return np.einsum("kji,kej->kei", turn, ends - shift[:, None])


class Table:
    """f of each smooth proxy on a regular grid (spacing m) over a box in its frame, read trilinearly."""

    def __init__(self, model, calls: list, spacing: float):
        self.spacing, self.grids = spacing, {}
        points: dict = {}
        for placed, proxy, ends, _, _ in calls:
            local = local_ends(model, placed, proxy, ends)
            for h in np.unique(proxy):
                points.setdefault(h, []).append(local[proxy == h].reshape(-1, 3))
        for h, seen in points.items():
            seen = np.concatenate(seen)
            low = np.percentile(seen, 1, axis=0) - 0.02
            count = np.ceil((np.percentile(seen, 99, axis=0) + 0.02 - low) / spacing).astype(int) + 1
            nodes = np.stack(np.meshgrid(*(low[i] + spacing * np.arange(count[i]) for i in range(3)), indexing="ij"),
                             axis=-1).reshape(-1, 3)
            f = np.concatenate([smooth.soft_value(nodes[i:i + 200_000], model.hull_planes[h], model.hull_slope[h])[0]
                                for i in range(0, len(nodes), 200_000)])
            self.grids[h] = (low, count, f)

    def read(self, h: int, points: np.ndarray) -> np.ndarray:
        """f (n,) at points (n, 3) of proxy h: trilinear inside the box, less the way out beyond it."""
        low, count, f = self.grids[h]
        at = (points - low) / self.spacing
        inside = np.clip(at, 0.0, count - 1.000001)
        out = np.linalg.norm(at - inside, axis=1) * self.spacing
        cell = inside.astype(int)
        part = inside - cell
        index = (cell[:, 0] * count[1] + cell[:, 1]) * count[2] + cell[:, 2]
        value = np.zeros(len(points))
        for dx in (0, 1):
            wx = part[:, 0] if dx else 1.0 - part[:, 0]
            for dy in (0, 1):
                w = wx * (part[:, 1] if dy else 1.0 - part[:, 1])
                corner = index + dx * count[1] * count[2] + dy * count[2]
                value += w * ((1.0 - part[:, 2]) * f[corner] + part[:, 2] * f[corner + 1])
        return value - out

    def distance(self, model, samples: np.ndarray, placed, proxy, ends, radius) -> np.ndarray:
        """The least sample's f along each capsule's axis, less the level and the radius (K,)."""
        local = local_ends(model, placed, proxy, ends)
        points = local[:, :1] + samples[None, :, None] * (local[:, 1:] - local[:, :1])  # (K, S, 3)
        value = np.empty((len(proxy), len(samples)))
        for h in np.unique(proxy):
            rows = proxy == h
            value[rows] = self.read(h, points[rows].reshape(-1, 3)).reshape(-1, len(samples))
        return value.min(axis=1) - model.hull_level[proxy] - radius


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("calls", type=Path)
    parser.add_argument("--spacing", type=float, default=0.005, help="the table's grid spacing (m)")
    parser.add_argument("--samples", type=int, default=16, help="points read along each capsule's axis")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    model, calls = recorded(args.calls)
    queries = sum(len(c[1]) for c in calls)
    started = time.process_time()
    table = Table(model, calls, args.spacing)
    print(f"{len(calls)} calls, {queries} queries; table {', '.join(str(g[1]) for g in table.grids.values())} nodes "
          f"in {time.process_time() - started:.1f} s; load {open('/proc/loadavg').read().split()[:3]}")
    samples = np.linspace(0.0, 1.0, args.samples)
    ways = {
        "capsule axes' closest points": lambda p, h, e, r, w: segment_closest(e[:, 0], e[:, 1], p[:, 0], p[:, 1]),
        f"table, {args.samples} samples": lambda p, h, e, r, w: table.distance(model, samples, p, h, e, r),
        "f at one point, 64 planes": lambda p, h, e, r, w: smooth.soft_value(  # one proxy's: the cost
            local_ends(model, p, h, e)[:, 0], model.hull_planes[0], model.hull_slope[0]),
        "the search (capsule_to_smooth)": lambda p, h, e, r, w: smooth.capsule_to_smooth(p, h, model, e, r, w),
    }
    best, outs = {}, {}
    for k in range(args.rounds):
        for name, way in (list(ways.items()) if k % 2 else list(ways.items())[::-1]):
            started = time.process_time()
            outs[name] = [way(*call) for call in calls]
            best[name] = min(best.get(name, np.inf), time.process_time() - started)
    for name in ways:
        print(f"{name:32s} {best[name] * 1e3:7.1f} ms CPU, {best[name] / queries * 1e6:6.2f} us a query")
    table_gap = np.concatenate(outs[f"table, {args.samples} samples"])
    search_gap = np.concatenate([out[0] for out in outs["the search (capsule_to_smooth)"]])
    near = search_gap < np.concatenate([np.full(len(c[1]), c[4]) for c in calls])
    over = (table_gap - search_gap)[near] * 1e3
    print(f"table - search within reach ({near.sum()}): mean {over.mean():.2f} mm, above by at most {over.max():.2f} mm "
          f"(99th percentile {np.percentile(over, 99):.2f}), below by at most {-over.min():.2f} mm "
          f"(1st percentile {-np.percentile(over, 1):.2f})")


if __name__ == "__main__":
    main()
