"""Self-collision in a bake: the separation term the solves carry, and the report's figures.

The term is a hinge per checked capsule pair, weight * max(0, margin - distance), with its
analytic Jacobian over a chain's joints (the gradient of a capsule distance is the unit
vector between the closest points): a solve adds its rows to the chain-shape residuals only
on the frames where a pair comes closer than the margin, so a clip without contacts costs one
distance check per chain.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..model.kinematics import PRISMATIC, KinematicTree
from ..motion.frames import frame_blocks
from .distance import capsule_distance
from .pairs import CollisionPairs, body_distances, pair_distances

PENETRATION_M = 0.005  # a frame collides when a checked pair overlaps deeper than this
SEPARATION_WEIGHT = 300.0  # sqrt weight per metre inside the margin: 1 mm costs what ~5 cm of chain shape does
TOP_PAIRS = 5
NEAR_M = 0.05  # a solve carries the pairs that come this much beyond the margin somewhere


@dataclass
class Separation:
    """Checked pairs kept `margin` (metres) apart by every solve that carries it."""

    tree: KinematicTree
    pairs: CollisionPairs
    margin: float = 0.01
    weight: float = SEPARATION_WEIGHT
    order: list | None = None  # each chain's joints (link indices) in solve order: a chain gives way to earlier ones

    def __post_init__(self):
        tree, model = self.tree, self.pairs.model
        self._ancestors = [set(_ancestors(tree, int(link))) for link in model.capsule_link]
        chains = [{int(v) for v in variables} for variables in (self.order or [])]
        # the last chain that moves each capsule (-1: none, the root's)
        self._rank = np.array([max((k for k, chain in enumerate(chains) if chain & up), default=-1)
                               for up in self._ancestors], dtype=int)
        self._chains = chains

    def term(self, variables, root: np.ndarray) -> "SeparationTerm | None":
        """The rows a solve of these joints (link indices) carries for root poses (F, 4, 4);
        None when they move no checked pair."""
        variables = [int(v) for v in variables]
        caps = self.pairs.capsules
        moves = np.array([[v in self._ancestors[c] for c in range(len(self._ancestors))] for v in variables],
                         dtype=bool).reshape(len(variables), -1)  # (V, C)
        relative = (moves[:, caps[:, 0]] != moves[:, caps[:, 1]]).any(axis=0)
        rank = next((k for k, chain in enumerate(self._chains) if set(variables) <= chain), None)
        if rank is not None:  # a chain never gives way to a body a later chain moves: that one makes room
            still = ~moves.any(axis=0) & (self._rank > rank)  # (C,) capsules a later chain moves, these not
            relative &= ~(still[caps[:, 0]] | still[caps[:, 1]])
        if not relative.any():
            return None
        return SeparationTerm(self, np.array(variables, dtype=int), self.pairs.capsules[relative], moves, root)


class SeparationTerm:
    """One solve's hinge rows: the checked capsule pairs some of its joints move apart."""

    def __init__(self, separation: Separation, variables: np.ndarray, capsules: np.ndarray, moves: np.ndarray,
                 root: np.ndarray):
        tree, model = separation.tree, separation.pairs.model
        self.separation, self._all_moves = separation, moves
        self.tree, self.model, self.margin, self.weight = tree, model, separation.margin, separation.weight
        self.root, self.variables = root, variables
        self.capsules = capsules  # (Q, 2)
        self.moves = moves[:, self.capsules]  # (V, Q, 2)
        self._used, local = np.unique(self.capsules, return_inverse=True)  # the capsules read, and where
        self._local = local.reshape(self.capsules.shape)
        self._links = sorted({int(link) for link in model.capsule_link[self._used]} | {int(v) for v in variables})
        self._prismatic = np.array([tree.kind[v] == PRISMATIC for v in variables])
        self._scale = tree.qscale[variables]
        half = 0.5 * np.linalg.norm(model.ends[:, 1] - model.ends[:, 0], axis=-1) + model.radius
        self._reach = half[self.capsules[:, 0]] + half[self.capsules[:, 1]]  # bounding spheres' radii

    def _closest(self, q: np.ndarray, root: np.ndarray):
        poses = self.tree.poses(q, root, self._links)
        ends = self.model.world_ends(poses, self._used)  # (F, U, 2, 3)
        a, b = self._local[:, 0], self._local[:, 1]
        radius = self.model.radius
        dist, ca, cb = capsule_distance(ends[:, a, 0], ends[:, a, 1], radius[self.capsules[:, 0]],
                                        ends[:, b, 0], ends[:, b, 1], radius[self.capsules[:, 1]])
        return poses, ends, dist, ca, cb

    def distance(self, q: np.ndarray, root: np.ndarray | None = None) -> np.ndarray:
        """Signed distances (F, Q) of the term's capsule pairs, exact up to margin + NEAR_M; beyond,
        the distance of their bounding spheres (a lower bound: far pairs cost a subtraction)."""
        root = self.root if root is None else root
        ends = self.model.world_ends(self.tree.poses(q, root, self._links), self._used)  # (F, U, 2, 3)
        a, b = self._local[:, 0], self._local[:, 1]
        middle = 0.5 * (ends[:, :, 0] + ends[:, :, 1])  # (F, U, 3)
        dist = np.linalg.norm(middle[:, a] - middle[:, b], axis=-1) - self._reach
        f, p = np.nonzero(dist < self.margin + NEAR_M)
        radius = self.model.radius
        dist[f, p] = capsule_distance(ends[f, a[p], 0], ends[f, a[p], 1], radius[self.capsules[p, 0]],
                                      ends[f, b[p], 0], ends[f, b[p], 1], radius[self.capsules[p, 1]])[0]
        return dist

    def near(self, q: np.ndarray, frames: np.ndarray, root: np.ndarray | None = None,
             reach: float = NEAR_M) -> "SeparationTerm":
        """The same term on only the pairs that come within margin + reach on some of `frames`
        of q (F, n) with root poses `root` (F, 4, 4; default the term's): the others cannot
        enter the margin within a solve's steps."""
        root = self.root if root is None else root
        keep = self.distance(q[frames], root[frames]).min(axis=0) < self.margin + reach
        return SeparationTerm(self.separation, self.variables, self.capsules[keep], self._all_moves, self.root)

    def residuals(self, q: np.ndarray, root: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Hinge residuals (F, Q) and their Jacobian (F, Q, V) over the term's joints, the
        Jacobian computed only where a pair is inside the margin."""
        poses, ends, dist, ca, cb = self._closest(q, root)
        inside = dist < self.margin
        res = np.where(inside, self.weight * (self.margin - dist), 0.0)
        jac = np.zeros(dist.shape + (len(self.variables),))
        f, p = np.nonzero(inside)
        if len(f) == 0:
            return res, jac
        ca, cb = ca[f, p], cb[f, p]
        gap = ca - cb
        # overlapping axes: push along the line between the capsules' middles instead
        mid = ends[f, self._local[p, 0]].mean(axis=1) - ends[f, self._local[p, 1]].mean(axis=1)
        fallback = np.where(np.linalg.norm(mid, axis=-1, keepdims=True) > 1e-9, mid, [0.0, 0.0, 1.0])
        normal = np.where(np.linalg.norm(gap, axis=-1, keepdims=True) > 1e-9, gap, fallback)
        normal /= np.linalg.norm(normal, axis=-1, keepdims=True)
        for k, v in enumerate(self.variables):
            pose = poses[int(v)][f]
            axis = pose[:, :3, :3] @ self.tree.axes[v]  # (K, 3)
            if self._prismatic[k]:
                rate_a = rate_b = np.einsum("ki,ki->k", axis, normal)
            else:
                joint = pose[:, :3, 3]
                rate_a = np.einsum("ki,ki->k", np.cross(axis, ca - joint), normal)
                rate_b = np.einsum("ki,ki->k", np.cross(axis, cb - joint), normal)
            jac[f, p, k] = -self.weight * self._scale[k] * (rate_a * self.moves[k, p, 0] - rate_b * self.moves[k, p, 1])
        return res, jac


def _ancestors(tree: KinematicTree, link: int) -> list[int]:
    out = []
    while link >= 0:
        out.append(link)
        link = int(tree.parent[link])
    return out


def collision_figures(tree: KinematicTree, pairs: CollisionPairs, q: np.ndarray, root: np.ndarray) -> dict:
    """The report's self-collision figures for a bake (q (F, n), root poses (F, 4, 4)).

    self_collision_pct: frames where a checked pair overlaps deeper than PENETRATION_M;
    self_collision_worst: the deepest overlap (pair, depth_m >= 0, frame); self_collision_pairs:
    the pairs overlapping on most frames with their frame counts; self_collision_frames: those frames.
    """
    frames = len(q)
    closest, which, deep = _overlaps(tree, pairs, q, root, 0.0)  # exact where bodies may overlap
    if frames and closest.min() >= 0.0:  # nothing overlaps: the closest pair's distance exact too
        closest, which, deep = _overlaps(tree, pairs, q, root, NEAR_M)
    hit = deep.any(axis=1)
    counts = deep.sum(axis=0)
    worst = {"pair": None, "depth_m": 0.0, "frame": None}
    if frames and np.isfinite(closest).any():
        f = int(np.argmin(closest))
        worst = {"pair": list(pairs.names(int(which[f]))), "depth_m": float(max(0.0, -closest[f])), "frame": f}
    order = [int(p) for p in np.argsort(-counts, kind="stable")[:TOP_PAIRS] if counts[p] > 0]
    return {"self_collision_pct": float(100.0 * hit.mean()) if frames else 0.0,
            "self_collision_worst": worst,
            "self_collision_pairs": [{"pair": list(pairs.names(p)), "frames": int(counts[p])} for p in order],
            "self_collision_frames": [int(f) for f in np.flatnonzero(hit)]}


def _overlaps(tree, pairs, q, root, exact_below: float):
    """Per frame: the least body-pair distance (F,) and its pair (F,), and which pairs overlap
    deeper than PENETRATION_M (F, P); exact where a pair may be closer than `exact_below`."""
    closest = np.full(len(q), np.inf)
    which = np.zeros(len(q), dtype=int)
    deep = np.zeros((len(q), len(pairs.bodies)), dtype=bool)
    for block in frame_blocks(len(q)):
        dist = body_distances(tree, pairs, q[block], root[block], exact_below=exact_below)
        if dist.shape[1] == 0:
            break
        which[block], closest[block] = dist.argmin(axis=1), dist.min(axis=1)
        deep[block] = dist < -PENETRATION_M
    return closest, which, deep


def colliding_links(tree: KinematicTree, pairs: CollisionPairs, q: np.ndarray, root: np.ndarray,
                    depth: float = PENETRATION_M) -> list[tuple[str, str, float]]:
    """(link, link, depth m) of every checked pair overlapping deeper than `depth` in one pose
    (q (n,), root (4, 4)): what a viewport highlights at the current frame."""
    dist = pairs.body_distance(pair_distances(tree, pairs, q[None], root[None]))[0]
    return [(*pairs.names(int(p)), float(-dist[p])) for p in np.flatnonzero(dist < -depth)]
