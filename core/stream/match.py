"""Pattern matching, the prediction unit's memory (issue 14, item 5): where the stream, or a
library clip, once moved like its latest samples, what followed tells how the motion bends.

Each chain's values are matched at once (the root, each limb, the spine: a gait's legs repeat
while its arms may do something else), on the path of the latest samples relative to the
latest one (how the chain has been moving, wherever it is now). The forecast is the stream's
own extrapolation plus what the matched stretches did beyond theirs: their continuation less
the same line fitted through their own latest samples. A stretch that moved exactly like the
stream continues it exactly; weak matches add little to the line, averaged over many.

The search keeps a per-frame cost flat: each forecast scans a slice of the history and library
(all of them every `refresh` forecasts), and the places found move on one sample with every
sample, their distances measured again, so a full search never lands on one frame.
"""
from __future__ import annotations

import functools

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from .extrapolate import Extrapolator, fit_weights

SIMILAR_M = 0.01  # a window whose path is this far (RMS, metres or radians) from the latest samples' is half similar
ROOM = np.iinfo(np.int64).max // 2  # a history row's room: bounded by the newest sample instead


class PatternMatcher:
    """Forecast by the stream's extrapolation corrected by matched stretches (see the module).

    weights: per channel (0 for channels that are not posture, such as where the root is on the
    floor); groups: index arrays of the channels matched together (default: all at once);
    library: series (T, D) at the stream's rate; line: the extrapolation to correct when another
    predictor keeps it up to date (default: its own, from settings). Similarity is 1 / (1 + d / SIMILAR_M), d the RMS
    distance between paths; a group whose nearest place is below the threshold extrapolates.
    """

    name = "match"

    def __init__(self, rate_hz: float, settings, weights: np.ndarray | None = None, library: list[np.ndarray] = (),
                 groups: list[np.ndarray] | None = None, line: Extrapolator | None = None):
        self.rate_hz, self.settings = rate_hz, settings
        self.owns_line = line is None  # else the line is another's, fed by it
        self.fallback = line or Extrapolator(settings.samples, settings.degree, settings.damping)
        self.line_samples = self.fallback.values.maxlen
        self.samples = max(2, settings.match_samples, self.line_samples)
        self.neighbours, self.gap, self.refresh = max(1, settings.neighbours), max(1, settings.stride), \
            max(1, settings.refresh)
        self.weights, self.groups = weights, groups
        self.library = [np.asarray(clip, dtype=float) for clip in library if len(clip) > self.samples + 1]
        self.capacity = max(self.samples + 2, int(settings.history_s * rate_hz))
        self.data: np.ndarray | None = None  # library rows, then the history; laid out at the first sample
        self.last_similarity = 0.0
        self.matched = 0  # forecasts a match corrected

    # ------------------------------------------------------------------ samples in

    def _layout(self, width: int) -> None:
        """Channels reordered so each group is one slice; library clips end to end, the history after;
        with each row, the path of the window ending there (K x D, relative to its last sample,
        weighted) and its squared length per group, so a search is one product."""
        groups = [np.asarray(g, dtype=int) for g in (self.groups or [np.arange(width)])]
        self.order = np.concatenate(groups)
        if sorted(self.order.tolist()) != list(range(width)):
            raise ValueError(f"match groups must hold each of the {width} channels once")
        sizes = np.array([len(g) for g in groups])
        self.group_of = np.repeat(np.arange(len(groups)), sizes)  # per reordered channel
        self.indicator = (self.group_of[:, None] == np.arange(len(groups))[None]).astype(float)  # (D, G)
        self.blocks = np.tile(self.indicator, (self.samples, 1))  # (K D, G)
        self.sums = np.ascontiguousarray(self.blocks.T)  # (G, K D): a path's products summed per group
        self.path_group = np.tile(self.group_of, self.samples)  # (K D,) the group of each path column
        self.path_column = np.arange(self.samples * width)[:, None]
        self.scale = (np.ones(width) if self.weights is None else np.asarray(self.weights, dtype=float))[self.order]
        self.norm = 1.0 / (self.samples * sizes)  # a mean over a window's samples and its group's channels
        self.channel = np.arange(width)[:, None]
        rows = sum(len(clip) for clip in self.library)
        self.data = np.empty((rows + 2 * self.capacity, width))
        self.paths = np.zeros((len(self.data), self.samples * width))
        self.lengths = np.zeros((len(self.data), len(groups)))
        # samples known after the window ending at each row (-1: no whole window ends there); the
        # history's, growing with it, is counted from its newest row instead (ROOM)
        self.room = np.full(len(self.data), -1)
        row = 0
        for clip in self.library:
            n = len(clip)
            self.data[row:row + n] = clip[:, self.order]
            windows = sliding_window_view(self.data[row:row + n] * self.scale, self.samples, axis=0)  # (W, D, K)
            self._paths(row + self.samples - 1, windows.transpose(0, 2, 1))
            self.room[row + self.samples - 1:row + n] = np.arange(n - self.samples, -1, -1)
            row += n
        self.groups_at = np.arange(len(groups))[:, None]
        self.history_row, self.end, self.kept = rows, rows, 0  # history: rows [end - kept, end)
        self.pool_rows = np.zeros((len(groups), self.neighbours), dtype=int)  # per group, the places followed
        self.pool_dist = np.full((len(groups), self.neighbours), np.inf)
        self.sweep = 0  # the next row a scan starts from

    def _paths(self, row: int, windows: np.ndarray) -> None:
        """Store the paths of windows (W, K, D) (weighted) ending at rows row, row + 1, ..."""
        path = windows - windows[:, -1:]
        self.paths[row:row + len(path)] = path.reshape(len(path), -1)
        self.lengths[row:row + len(path)] = (path * path).sum(axis=1) @ self.indicator

    def prepare(self, width: int) -> None:
        """Lay the buffers out for samples of `width` channels before the first one comes (a
        few megabytes allocated and the library's paths stored: no frame's work)."""
        if self.data is None:
            self._layout(width)

    def update(self, time_s: float, x: np.ndarray) -> None:
        x = np.asarray(x, dtype=float)
        self.prepare(len(x))
        if self.end == len(self.data):  # keep the latest capacity - 1 history rows at the front
            keep, base = self.capacity - 1, self.history_row
            shift = self.end - keep - base
            for array in (self.data, self.paths, self.lengths, self.room):
                array[base:base + keep] = array[self.end - keep:self.end]
            self.room[base:base + self.samples - 1] = -1  # their windows began in rows let go
            self.end, self.kept = self.end - shift, keep
            moved = self.pool_rows >= base
            self.pool_rows[moved] -= shift
            self.pool_dist[moved & (self.pool_rows < base)] = np.inf
            self.sweep = 0
        self.data[self.end] = x[self.order]
        self.end += 1
        if self.kept == self.capacity:  # the oldest row went: the window it began ends no more
            self.room[self.end - 1 - self.capacity + self.samples - 1] = -1
        self.kept = min(self.kept + 1, self.capacity)
        if self.kept >= self.samples:
            self._paths(self.end - 1, (self.data[self.end - self.samples:self.end] * self.scale)[None])
            self.room[self.end - 1] = ROOM
        self.pool_rows += 1  # the places followed move on with the stream
        if self.owns_line:
            self.fallback.update(time_s, x)

    # ------------------------------------------------------------------ forecasts

    def predict(self, horizon_s: float) -> np.ndarray:
        line = self.fallback.predict(horizon_s)
        if self.data is None or self.kept < self.samples or horizon_s <= 0.0:
            return line
        ahead = horizon_s * self.rate_hz  # samples
        whole, part = int(np.floor(ahead)), ahead - np.floor(ahead)
        path = self.paths[self.end - 1]
        probe = path[:, None] * self.blocks  # (K D, G): the latest path, one column per group
        own = self.lengths[self.end - 1]
        self._follow(path, own, whole + 1)
        self._scan(probe, own, whole + 1)
        near, rows = self.pool_dist, self.pool_rows  # (G, N), nearest first
        similarity = 1.0 / (1.0 + near[:, 0] / SIMILAR_M)
        self.last_similarity = float(similarity.min())
        passing = similarity >= self.settings.threshold
        if not passing.any():
            return line
        self.matched += 1
        weight = np.where(np.isfinite(near) & passing[:, None], 1.0 / (near + 1e-3 * SIMILAR_M), 0.0)[self.group_of]
        rows = np.where(weight > 0, rows[self.group_of], self.samples - 1)  # (D, N); any readable row if unused
        offsets, bend_of = self._bend(horizon_s, whole, part)
        stretch = self.data[rows[..., None] + offsets, self.channel[..., None]]  # (D, N, k + 2)
        bend = (weight * (stretch @ bend_of)).sum(axis=1) / np.maximum(weight.sum(axis=1), 1e-300)
        correction = np.empty(len(line))
        correction[self.order] = bend
        return line + correction

    def _bend(self, horizon_s: float, whole: int, part: float) -> tuple[np.ndarray, np.ndarray]:
        """A stretch's continuation less the fallback's line through its latest samples, both
        `horizon_s` ahead, as weights of its samples at these offsets from its end: the latest
        k, then the two the continuation lies between."""
        if getattr(self, "_bends", (None,))[0] != horizon_s:
            k = self.line_samples
            times = tuple(round((j + 1 - k) / self.rate_hz, 9) for j in range(k))
            line = fit_weights(times, round(horizon_s, 9), min(self.fallback.degree, k - 1))
            line = self.fallback.damping * line
            line[-1] += 1.0 - self.fallback.damping  # last + damping (fit - last)
            self._bends = horizon_s, np.r_[np.arange(1 - k, 1), whole, whole + 1], np.r_[-line, 1.0 - part, part]
        return self._bends[1], self._bends[2]

    def _valid(self, rows: np.ndarray, need: int) -> np.ndarray:
        """Whether a window may end at each row: whole within one clip or the history, and the
        `need` samples after it known."""
        return (self.room[rows] >= need) & ((rows < self.history_row) | (rows < self.end - need))

    @staticmethod
    def _distance(squared: np.ndarray, norm: np.ndarray) -> np.ndarray:
        """RMS distance from sum_i |u_i - p_i|^2 per group."""
        return np.sqrt(np.maximum(squared, 0.0) * norm)

    def _follow(self, path: np.ndarray, own: np.ndarray, need: int) -> None:
        """The places followed, with their distances to the latest path (K D,): each group's
        columns of its own places' paths only."""
        rows = self.pool_rows
        valid = np.isfinite(self.pool_dist) & self._valid(rows, need)
        rows = np.where(valid, rows, self.samples - 1)
        cross = self.sums @ (self.paths[rows[self.path_group], self.path_column] * path[:, None])  # (G, N)
        distance = self._distance(self.lengths[rows, self.groups_at] - 2.0 * cross + own[:, None], self.norm[:, None])
        self.pool_rows, self.pool_dist = rows, np.where(valid, distance, np.inf)

    def _scan(self, probe: np.ndarray, own: np.ndarray, need: int) -> None:
        """Distances of the windows ending in the next slice of rows, all groups in one product
        (|u - p|^2 = |u|^2 - 2 u.p + |p|^2), the nearest few of each group joining its places."""
        start = self.sweep
        stop = min(self.end, start + -(-self.end // self.refresh))
        self.sweep = 0 if stop >= self.end else stop
        rows = np.arange(start, stop)
        distance = self._distance(self.lengths[start:stop] - 2.0 * (self.paths[start:stop] @ probe) + own,
                                  self.norm)  # (n, G)
        distance[~self._valid(rows, need)] = np.inf
        best = np.argsort(distance, axis=0)[:self.neighbours] if len(rows) <= self.neighbours else \
            np.argpartition(distance, self.neighbours - 1, axis=0)[:self.neighbours]  # (count, G)
        self._merge(rows[best].T, distance[best, self.groups_at.T].T)

    def _merge(self, rows: np.ndarray, distance: np.ndarray) -> None:
        """The places followed and those just found, one per stretch (none within `gap` rows of a
        nearer one), nearest first."""
        rows = np.concatenate([self.pool_rows, rows], axis=1)
        distance = np.concatenate([self.pool_dist, distance], axis=1)
        order = np.argsort(distance, axis=1, kind="stable")
        rows, distance = rows[self.groups_at, order], distance[self.groups_at, order]
        nearer = _nearer(rows.shape[1])  # [i, j]: j is nearer than i
        close = np.abs(rows[:, :, None] - rows[:, None, :]) < self.gap
        shadowed = (close & nearer).any(axis=2)  # one shadowed by a place at no distance (inf) is inf already
        distance = np.where(shadowed, np.inf, distance)
        order = np.argsort(distance, axis=1, kind="stable")[:, :self.pool_rows.shape[1]]
        self.pool_rows, self.pool_dist = rows[self.groups_at, order], distance[self.groups_at, order]


@functools.lru_cache(maxsize=8)
def _nearer(count: int) -> np.ndarray:
    return np.tri(count, k=-1, dtype=bool)
