"""Self-collision in a bake: what keeps bodies apart (the report's figures: core.collision.figures).

A term holds the checked capsule pairs some joints move relative to each other, with their
distances behind a broad phase (bodies' bounding spheres, then capsules') and the distance's
analytic gradient over those joints (the unit vector between the closest points): the chains
make room with it as a least change of their shape (core.chains.separation), the planted legs
carry it as hinge rows, weight * max(0, margin - distance), next to their foot goals
(core.feet.plant). Only frames near a contact pay: a clip without contacts costs a distance check.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass

import numpy as np

from ..model.kinematics import PRISMATIC, KinematicTree
from ..model.posing import Poser
from .distance import axis_bound, cross_rows, dot
from .figures import PENETRATION_M, collision_figures, colliding_links
from .hulls import proxy_distance
from .pairs import CollisionPairs
from .support import normal_turn, support_bound, tighten

# the report's figures left for core.collision.figures (session 30): their names stay reachable here, where the
# pipeline, tests, benches and the Blender side look for them
__all__ = ["PENETRATION_M", "Placed", "Separation", "SeparationTerm", "collision_figures", "colliding_links"]

SEPARATION_WEIGHT = 300.0  # sqrt weight per metre inside the margin: 1 mm costs what ~5 cm of chain shape does
NEAR_M = 0.05  # a solve carries the pairs that come this much beyond the margin somewhere
BOUND_SLACK_M = 1e-9  # a pair is measured unless its axis bound (axis_bound) is beyond `within` by more than this


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
        # the terms built, by joints and capsule pairs, kept with the robot's pairs: every bake asks for the same
        key = (self.margin, self.weight, tuple(tuple(sorted(chain)) for chain in chains))
        kept = self.pairs.__dict__.setdefault("_separation_terms", {})
        if kept.get(key, (None,))[0] is not tree:
            kept[key] = (tree, {})
        self._terms = kept[key][1]

    def term(self, variables, root: np.ndarray) -> "SeparationTerm | None":
        """The rows a solve of these joints (link indices: a chain's, or chains making room
        together) carries for root poses (F, 4, 4); None when they move no checked pair."""
        key = tuple(int(v) for v in variables)
        if key not in self._terms:
            self._terms[key] = self._term(list(key))
        term = self._terms[key]
        return None if term is None else term.at(root, self)

    def subset(self, term: "SeparationTerm", keep: np.ndarray) -> "SeparationTerm":
        """The term on its capsule pairs `keep` (Q,) bool (built once per bake and set of pairs)."""
        capsules = term.capsules[keep]
        key = (tuple(int(v) for v in term.variables), capsules.tobytes())
        if key not in self._terms:
            self._terms[key] = SeparationTerm(self, term.variables, capsules, term._all_moves, None)
        return self._terms[key].at(term.root, self)

    def _term(self, variables: list[int]) -> "SeparationTerm | None":
        caps = self.pairs.capsules
        if not variables:  # a solve without joints (a chain of fixed links) moves nothing
            return None
        moves = np.array([[v in self._ancestors[c] for c in range(len(self._ancestors))] for v in variables],
                         dtype=bool).reshape(len(variables), len(self._ancestors))  # (V, C)
        relative = (moves[:, caps[:, 0]] != moves[:, caps[:, 1]]).any(axis=0)
        rank = max((k for k, chain in enumerate(self._chains) if set(variables) & chain), default=None)
        if rank is not None:  # chains never give way to a body a later chain moves: that one makes room
            later = self._rank > rank  # (C,) capsules a later chain moves (a hand near the hip: the arm's, not the waist's)
            relative &= ~(later[caps[:, 0]] | later[caps[:, 1]])
        if not relative.any():
            return None
        return SeparationTerm(self, np.array(variables, dtype=int), self.pairs.capsules[relative], moves, None)


@dataclass
class Placed:
    """The capsules of the links a term's joints do not move, in the world over some frames
    (SeparationTerm.placed): capsules' ends (U, 2, 3, F), bodies' centres (B, 3, F), the still
    poses the moving links are posed from, the moving links' capsule entries and their poser,
    the hull proxies' vertices, and where their distances' last searches ended."""

    ends: np.ndarray
    centre: np.ndarray
    known: dict
    moving: list
    poser: Poser
    hulls: np.ndarray  # hull proxies' vertices (H, HULL_VERTICES, 3, F)
    axes: np.ndarray  # bodies' link frames (B, 4, 3, F): rotation columns and origin (core.collision.support; B 0 without it)
    searched: dict  # where each frame's hull distances' searches ended (SeparationTerm._searched), shared by copies
    frames: np.ndarray  # these frames' rows in `searched`

    def on(self, frames: np.ndarray) -> "Placed":
        """A copy on some frames (indices): a look fills in the moving links' rows. On all of them, the same
        arrays (a look over every frame copied megabytes: the moving rows are each look's own, filled before
        it reads them)."""
        if len(frames) == self.ends.shape[-1] and np.array_equal(frames, np.arange(len(frames))):
            return Placed(self.ends, self.centre, self.known, self.moving, self.poser, self.hulls, self.axes,
                          self.searched, self.frames)
        return Placed(self.ends[..., frames], self.centre[..., frames],
                      {link: pose[frames] for link, pose in self.known.items()}, self.moving, self.poser,
                      self.hulls[..., frames], self.axes[..., frames], self.searched, self.frames[frames])


class SeparationTerm:
    """One solve's hinge rows: the checked capsule pairs some of its joints move apart."""

    def __init__(self, separation: Separation, variables: np.ndarray, capsules: np.ndarray, moves: np.ndarray,
                 root: np.ndarray):
        tree, model = separation.tree, separation.pairs.model
        self.separation, self._all_moves = separation, moves
        self.tree, self.model, self.margin, self.weight = tree, model, separation.margin, separation.weight
        self.root, self.variables = root, variables
        self.still = None  # poses {link: LinkPose over root's frames} of the links the joints do not move, when kept
        self.placing = None  # their capsules in the world over root's frames (Placed), once a look asked (placed_on)
        self._kept = {}  # what the same joints and pairs give in any pose (reach's levers), shared by copies
        self.capsules = capsules  # (Q, 2)
        self.moves = moves[:, self.capsules]  # (V, Q, 2)
        self._links = sorted({int(link) for link in model.capsule_link[np.unique(self.capsules)]}
                             | {int(v) for v in variables})
        self._prismatic = np.array([tree.kind[v] == PRISMATIC for v in variables])
        self._scale = tree.qscale[variables]
        self._half = 0.5 * np.linalg.norm(model.ends[:, 1] - model.ends[:, 0], axis=-1) + model.radius
        self._broad_phase()

    def _broad_phase(self):
        """Body pairs (P, 2) of the term's capsule pairs and, per body pair, its capsule pairs (CSR):
        far bodies are told apart by their bounding spheres without looking at their capsules."""
        model = self.model
        body_pairs, owner = np.unique(model.capsule_body[self.capsules].reshape(-1, 2), axis=0, return_inverse=True)
        self._owner = owner.reshape(-1)  # (Q,) body pair of each capsule pair
        self._grouped = np.argsort(self._owner, kind="stable")
        self._counts = np.bincount(self._owner, minlength=len(body_pairs))
        self._starts = np.cumsum(self._counts) - self._counts
        bodies, local = np.unique(body_pairs, return_inverse=True)
        self._body_pairs = local.reshape(-1, 2)
        centre, radius = model.body_spheres()
        self._radius = radius[bodies]
        self._pair_radius = (self._radius[self._body_pairs[:, 0]] + self._radius[self._body_pairs[:, 1]])[:, None]
        slot = {int(model.body_links[b]): k for k, b in enumerate(bodies)}  # each body is one link's
        self._used, local = np.unique(self.capsules, return_inverse=True)  # the capsules read, and where
        self._local = local.reshape(self.capsules.shape)
        self._local_first, self._local_second = self._local[:, 0].copy(), self._local[:, 1].copy()
        links = model.capsule_link[self._used]
        # the hull proxies read: each used capsule row's place among them (-1: a capsule)
        hull = model.hull[self._used] if model.hull is not None else np.full(len(self._used), -1)
        self._hull_slot = np.full(len(self._used), -1)
        self._hull_slot[hull >= 0] = np.arange(int((hull >= 0).sum()))
        # per link: its capsules' rows, their ends, its hulls' vertices and then its body's centre in its
        # frame (one product for all), and its hulls' rows
        self._capsule_ends = []
        for link in np.unique(links):
            rows = np.flatnonzero(links == link)
            hulls = rows[hull[rows] >= 0]
            vertices = model.hull_points[hull[hulls]].reshape(-1, 3) if len(hulls) else np.zeros((0, 3))
            self._capsule_ends.append((int(link), rows, slot[int(link)],
                                       np.vstack([model.ends[self._used[rows]].reshape(-1, 3), vertices,
                                                  centre[bodies[slot[int(link)]]][None]]),
                                       self._hull_slot[hulls]))
        self._poser = Poser(self.tree, self._links)
        caps = self.capsules  # per capsule pair, gathered once: both capsules' half reaches
        self._half_pair = (self._half[caps[:, 0]], self._half[caps[:, 1]])
        # the axis bound (_axis_apart): each pair's shorter capsule's middle against the longer one's axis
        axis = 0.5 * np.linalg.norm(model.ends[caps, 1] - model.ends[caps, 0], axis=-1)  # (Q, 2) half axes
        self._short_first = axis[:, 0] <= axis[:, 1]
        self._bound_less = axis.min(axis=1) + model.radius[caps].sum(axis=1)
        self._capsules_only = not (self._hull_slot >= 0).any()  # hull proxies have no axis
        # ... but a smooth trunk proxy's capsule row bounds it (and holds no search to keep): the axis bound holds
        self._axis_bound = self._capsules_only or model.hull_planes is not None

    def placed(self, still: dict, frames: int) -> "Placed":
        """The capsules of the links in `still` (poses over `frames` frames, still_poses) put in the
        world once, and the poses the others are posed from: a correction's steps move none of them,
        so each step's look places only the links its joints move."""
        ends, centre, hulls, axes = self._room(frames)
        self._place([entry for entry in self._capsule_ends if entry[0] in still], still, ends, centre, hulls, axes)
        moving = [entry for entry in self._capsule_ends if entry[0] not in still]
        links = {entry[0] for entry in moving} | {int(v) for v in self.variables}
        above = {up for link in links for up in _ancestors(self.tree, link)}
        return Placed(ends, centre, {link: pose for link, pose in still.items() if link in above}, moving,
                      Poser(self.tree, links), hulls, axes, {"frames": frames}, np.arange(frames))

    def _room(self, frames: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Empty arrays for the capsules' ends (U, 2, 3, F), the bodies' centres (B, 3, F), the
        hulls' vertices (H, HULL_VERTICES, 3, F) and the bodies' link frames (B, 4, 3, F) in the world."""
        vertices = self.model.hull_points.shape[1] if self.model.hull is not None else 0
        bound = support_bound() and self.model.support_radius is not None  # no frames to place without the bound
        return (np.empty((len(self._used), 2, 3, frames)), np.empty((len(self._radius), 3, frames)),
                np.empty((int((self._hull_slot >= 0).sum()), vertices, 3, frames)),
                np.empty((len(self._radius) if bound else 0, 4, 3, frames)))

    def _place(self, entries: list, poses: dict, ends: np.ndarray, centre: np.ndarray, hulls: np.ndarray,
               axes: np.ndarray) -> None:
        """The capsules' ends, hulls' vertices, bodies' centres and link frames of some links
        (_capsule_ends entries) in the world, in place: one product per link."""
        for link, rows, body, local, hull_rows in entries:
            pose = poses[link]
            if len(axes):
                axes[body, :3], axes[body, 3] = pose.cols, pose.pos
            points = pose.apply(local)
            ends[rows] = points[:2 * len(rows)].reshape(len(rows), 2, 3, -1)
            if len(hull_rows):
                hulls[hull_rows] = points[2 * len(rows):-1].reshape(len(hull_rows), hulls.shape[1], 3, -1)
            centre[body] = points[-1]

    def _near(self, q: np.ndarray, root: np.ndarray, within: float, still: dict | None = None, dense: bool = True,
              placed: "Placed | None" = None, floor: np.ndarray | None = None):
        """Link poses, signed distances (F, Q) (a lower bound: bounding spheres of bodies, then of
        capsules; None unless `dense`) and the entries (f, p) whose capsules' spheres come within
        `within`, with their exact distances (K,), points on both cores (K, 3), their normals (K, 3) and,
        where the meshes' bound along the normal is larger (core.collision.support: then the distance,
        its support vertices the points), which entries (K,) bool, the capsules' closest points on both
        (K, 3) and their ends (K, 2, 2, 3), or None. still: poses (F frames) of links the term's joints do
        not move, on these frames (still_poses); placed: instead, their capsules placed on these frames
        (placed(still, F), placed_on(frames)), the others' filled in here. floor (F,): filled with each frame's
        least lower bound of the entries its bounds put beyond `within` (no less than `within`)."""
        # the capsules' ends in the world (U, 2, 3, F) and the bodies' centres (B, 3, F), one product per link
        if placed is None:
            poses = self._poser(q, root, still)  # frames last: every product below is a few vector operations
            ends, centre, hulls, axes = self._room(len(q))
            self._place(self._capsule_ends, poses, ends, centre, hulls, axes)
        else:
            poses = placed.poser(q, root, placed.known)
            ends, centre, hulls, axes = placed.ends, placed.centre, placed.hulls, placed.axes
            self._place(placed.moving, poses, ends, centre, hulls, axes)
        apart = _apart(centre, self._body_pairs, self._pair_radius)  # (F, P)
        dist = apart[:, self._owner] if dense else None
        f, pair = np.nonzero(apart < within)
        if floor is not None:  # the body pairs told apart by their spheres
            floor[:] = np.min(apart, axis=1, where=apart >= within, initial=np.inf)
        counts = self._counts[pair]
        begin = np.cumsum(counts) - counts
        p = self._grouped[np.repeat(self._starts[pair] - begin, counts) + np.arange(counts.sum())]
        f = np.repeat(f, counts)
        middle = _middles(ends)  # the capsules' bounding spheres' centres, (3, U * F): flat planes
        a, b = self._local_first[p], self._local_second[p]
        at_a, at_b = a * len(q) + f, b * len(q) + f  # the entries' places in a (U, F) plane
        gap = np.empty((len(p), 3))  # (K, 3)
        for axis, plane in enumerate(middle):
            np.subtract(plane.take(at_a), plane.take(at_b), out=gap[:, axis])
        spheres = np.sqrt(dot(gap, gap)) - self._half_pair[0].take(p) - self._half_pair[1].take(p)
        if dense:
            dist[f, p] = spheres
        keep = np.flatnonzero(spheres < within)  # positions: each array below is picked without a mask's scan
        if floor is not None:  # the capsule pairs told apart by theirs
            far = np.flatnonzero(spheres >= within)
            np.minimum.at(floor, f[far], spheres[far])
        f, p, a, b = f[keep], p[keep], a[keep], b[keep]
        if not dense and self._axis_bound:  # no (F, Q) array asked: an entry beyond `within` is dropped anyway
            axis = self._axis_apart(ends, middle, f, p, a, b)
            beyond = axis > within + BOUND_SLACK_M
            if floor is not None:
                np.minimum.at(floor, f[beyond], axis[beyond])
            keep = np.flatnonzero(~beyond)
            f, p, a, b = f[keep], p[keep], a[keep], b[keep]
        slot = self._hull_slot
        simplex = self._searched(placed, f, p)
        pair_ends = ends[np.stack([a, b], axis=1), :, :, f[:, None]]  # (K, 2, 2, 3), one gather
        exact, ca, cb, normal, _ = proxy_distance(
            self.model, self.capsules[p], pair_ends, lambda rows, side: hulls[slot[(a, b)[side][rows]], :, :, f[rows]],
            within, simplex)
        if simplex is not None:
            self._searched(placed, f, p, simplex)
        bound = None
        if len(axes):  # the meshes' bound on (_room)
            body = self._body_pairs[self._owner[p]]  # (K, 2) each entry's bodies' rows of `axes`
            bound = tighten(self.model, self.capsules[p], (exact, ca, cb, normal),
                            lambda rows, side: axes[body[rows, side], :, :, f[rows]], within)
        if dense:
            dist[f, p] = exact
        return poses, dist, (f, p, exact, ca, cb, normal, None if bound is None else (*bound, pair_ends))

    def _axis_apart(self, ends: np.ndarray, middle: np.ndarray, f: np.ndarray, p: np.ndarray, a: np.ndarray,
                    b: np.ndarray) -> np.ndarray:
        """(K,) a lower bound of the entries' distances (frames f, pairs p, capsule rows a, b into ends
        (U, 2, 3, F) and their middles' planes (3, U * F), _middles): the shorter capsule's middle's distance
        from the longer one's axis, less its half axis and both radii (axis_bound), never looser than the
        bounding spheres' (the G1 hop's looks without a dense array: 31 capsule pairs a frame pass the spheres,
        11 this bound, 7 come within reach)."""
        short, frames = self._short_first.take(p), ends.shape[-1]
        point, other = np.where(short, a, b), np.where(short, b, a)
        flat, row = np.ravel(ends), other * (6 * frames) + f  # each end's axis k at row + (3 * end + k) * F
        start, end = (np.stack([flat.take(row + (3 * side + axis) * frames) for axis in range(3)], axis=1)
                      for side in (0, 1))
        return axis_bound(_taken(middle, point * frames + f), start, end) - self._bound_less.take(p)

    def _searched(self, placed: "Placed | None", f: np.ndarray, p: np.ndarray, simplex: tuple | None = None):
        """Where the hull distances of entries (frames f into placed's, pairs p) last ended their search
        (core.collision.convex.core_search), kept with the placed capsules over a correction's steps
        (each step looks again a little further on); with `simplex`, kept. None without hulls or placed."""
        if placed is None or self._capsules_only or self.model.hull_planes is not None:
            return None  # smooth trunk proxies start no search
        store, key = placed.searched, (placed.frames[f], p)
        if "size" not in store:  # vertex indices < HULL_VERTICES: int8
            shape = (store["frames"], len(self.capsules))
            store.update(a=np.zeros(shape + (4,), np.int8), b=np.zeros(shape + (4,), np.int8),
                         size=np.zeros(shape, np.int8))
        if simplex is None:
            return tuple(store[name][key].astype(int) for name in ("a", "b", "size"))
        for name, x in zip(("a", "b", "size"), simplex):
            store[name][key] = x
        return simplex

    def still_poses(self, q: np.ndarray, root: np.ndarray) -> dict:
        """Poses {link: (F, 4, 4)} of the links the term reads (and their ancestors) that its joints
        do not move, for q (F, n) and root (F, 4, 4): the same on every step of a correction."""
        variables = {int(v) for v in self.variables}
        still = set()
        for link in self._links:
            path = _ancestors(self.tree, link)
            if not variables & set(path):
                still.update(path)
            else:  # the links above the highest joint that moves it
                top = max(k for k, up in enumerate(path) if up in variables)
                still.update(path[top + 1:])
        still.discard(0)
        if not still:
            return {}
        poses = Poser(self.tree, still)(q, root)
        return {link: poses[link] for link in still}

    def reach(self, change: np.ndarray) -> np.ndarray:
        """(F,) metres a change (F, V) of the term's joints can bring any of its pairs closer at most, in
        any pose: a joint that turns one side of a pair turns that body's bounding sphere (centre c,
        radius r) about an axis through the joint, no point of which is further from it than the links'
        offsets down to the body, |c| and r; a joint that moves both sides (or neither) leaves the pair
        as it is. A frame that far clear of the margin needs no look after that change."""
        levers = self._kept.get("levers")
        if levers is None:
            levers = self._kept["levers"] = self._levers()
        return (np.abs(change) @ levers).max(axis=1, initial=0.0)

    def _levers(self) -> np.ndarray:
        """(V, L) reach's levers: metres per unit of each joint that a pair can close by, one column per body pair
        (its capsule pairs' are the same: one body each side), a column no larger than another's everywhere
        left out, as is all but the first of equal ones (its max never wins: the G1 arm's 506 pairs, 1 column)."""
        tree, model = self.tree, self.model
        centre, radius = model.body_spheres()
        offset = np.linalg.norm(tree.origins[:, :3, 3], axis=-1)
        links = np.asarray(model.body_links, dtype=int)
        first = self._grouped[self._starts]  # (P,) one capsule pair of each body pair
        body = model.capsule_body[self.capsules[first]]  # (P, 2)
        moves = self.moves[:, first]  # (V, P, 2)
        levers = np.zeros((len(self.variables), len(first)))  # (V, P) metres per unit of each joint
        sphere = np.linalg.norm(centre, axis=-1) + radius  # (B,) each body's furthest point from its link's origin
        for j, v in enumerate(int(v) for v in self.variables):
            # the path from the joint's link down to each body's, else its sphere about any point (a slide)
            arm = np.ones(len(links)) if self._prismatic[j] else _below_all(tree, offset, v, links) + sphere
            one = moves[j, :, 0] != moves[j, :, 1]
            side = np.where(moves[j, :, 0], body[:, 0], body[:, 1])
            levers[j] = np.where(one, arm[side], 0.0) * abs(self._scale[j])
        no_more = (levers[:, :, None] <= levers[:, None, :]).all(axis=0)  # (P, P): column k nowhere above column i
        less = (levers[:, :, None] < levers[:, None, :]).any(axis=0)
        earlier = np.arange(len(first))[None, :] < np.arange(len(first))[:, None]  # column i before column k
        covered = no_more & (less | earlier)
        np.fill_diagonal(covered, False)
        return levers[:, ~covered.any(axis=1)]

    def with_still(self, q: np.ndarray) -> "SeparationTerm":
        """The same term keeping the poses of the links its joints do not move, for q (F, n) on its
        root's frames (still_poses): a solve that changes only the term's joints poses them once."""
        out = copy.copy(self)
        out.still, out.placing = self.still_poses(q, self.root), None
        return out

    def still_on(self, frames: np.ndarray) -> dict | None:
        """The kept still poses (with_still) on some frames (indices into root's), or None."""
        return None if self.still is None else {link: pose[frames] for link, pose in self.still.items()}

    def placed_on(self, frames: np.ndarray) -> "Placed | None":
        """The kept still links' capsules (with_still) on some frames (indices into root's), to
        be filled in by one look (distance, look, gradient), or None. Placed over all frames at the
        first ask: a chain that nothing comes near never asks."""
        if not self.still:
            return None
        if self.placing is None:
            self.placing = self.placed(self.still, len(self.root))
        return self.placing.on(frames)

    def kept_on(self, frames: np.ndarray) -> dict:
        """What a look on some frames (indices into root's) takes of what the term keeps (with_still):
        {"placed": placed_on(frames)}, the still links' capsules placed once for the clip, or
        {"still": still_on(frames)}, their poses (None: nothing kept)."""
        return {"placed": self.placed_on(frames)} if self.still else {"still": self.still_on(frames)}

    def on(self, frames: np.ndarray) -> "SeparationTerm":
        """The same term on some of its root's frames (indices), with its kept still poses there."""
        out = copy.copy(self)
        out.root, out.still = self.root[frames], self.still_on(frames)
        out.placing = None if self.placing is None else self.placing.on(frames)
        return out

    def distance(self, q: np.ndarray, root: np.ndarray | None = None, within: float | None = None,
                 still: dict | None = None, placed: "Placed | None" = None) -> np.ndarray:
        """Signed distances (F, Q) of the term's capsule pairs, exact up to `within` (default
        margin + NEAR_M); beyond, a lower bound (bounding spheres: far pairs cost a subtraction).
        still: these frames' poses of the links the joints do not move (still_poses); placed:
        instead, their capsules placed there (placed_on(frames))."""
        root = self.root if root is None else root
        return self._near(q, root, self.margin + NEAR_M if within is None else within, still, placed=placed)[1]

    def depth(self, q: np.ndarray, root: np.ndarray, still: dict | None = None,
              placed: "Placed | None" = None, signed: bool = False) -> np.ndarray:
        """(F,) how far each frame's closest pair is inside the margin, 0 where none is (the margin
        less distance's least, from the entries within the margin only: no (F, Q) array, no exact
        distance of a pair its bounds put beyond). still, placed: as distance. signed: where none is
        inside, minus how far clear of the margin the bounds that told its pairs apart put it at least
        (the same look: a frame that far clear needs no look after a change that reaches less)."""
        if signed:
            return self.margin - self.least(q, root, self.margin, still, placed)
        f, _, exact, *_ = self._near(q, root, self.margin, still, dense=False, placed=placed)[2]
        inside = exact < self.margin
        least = np.full(len(q), np.inf)
        np.minimum.at(least, f[inside], exact[inside])
        return np.maximum(0.0, self.margin - least)

    def least(self, q: np.ndarray, root: np.ndarray, within: float, still: dict | None = None,
              placed: "Placed | None" = None) -> np.ndarray:
        """(F,) each frame's least pair distance (m), exact below `within`; beyond, a lower bound no less than
        `within` (the least the bounds that told its pairs apart allow; inf: no pair). No (F, Q) array: a
        frame asked only whether it is `within` clear pays for the pairs its bounds do not put beyond.
        still, placed: as distance."""
        floor = np.full(len(q), np.inf)
        f, _, exact, *_ = self._near(q, root, within, still, dense=False, placed=placed, floor=floor)[2]
        np.minimum.at(floor, f, exact)
        return floor

    def near(self, q: np.ndarray, frames: np.ndarray, root: np.ndarray | None = None,
             reach: float = NEAR_M, dist: np.ndarray | None = None) -> "SeparationTerm":
        """The same term on only the pairs that come within margin + reach on some of `frames`
        of q (F, n) with root poses `root` (F, 4, 4; default the term's): the others cannot
        enter the margin within a solve's steps. dist: those frames' distances (or lower bounds)
        when already known."""
        root = self.root if root is None else root
        if dist is None:
            dist = self.distance(q[frames], root[frames], 0.0)  # lower bounds are enough
        keep = dist.min(axis=0) < self.margin + reach
        out = self.separation.subset(self, keep)
        out.still, out.placing = self.still, None  # the same joints: the same links stay still (fewer capsules: placed anew)
        return out

    def at(self, root: np.ndarray | None, separation: Separation | None = None) -> "SeparationTerm":
        """The same rows for other root poses (F, 4, 4) (and a bake's `separation`)."""
        out = copy.copy(self)
        out.root, out.still, out.placing = root, None, None
        out.separation = separation or self.separation
        return out

    def gradient(self, q: np.ndarray, root: np.ndarray, within: float, still: dict | None = None,
                 placed: "Placed | None" = None):
        """The frame-pair entries closer than `within`: frames (K,), pairs (K,), signed distances
        (K,) and their gradient (K, V) over the term's joints (the unit vector between the closest
        points, carried through each joint's motion). Sparse: most pairs of most frames are far.
        still: these frames' poses of the links the joints do not move (still_poses); placed:
        instead, their capsules placed there (placed_on(frames); filled in, so used once)."""
        return self.look(q, root, within, still, dense=False, placed=placed)[1]

    def look(self, q: np.ndarray, root: np.ndarray, within: float, still: dict | None = None, dense: bool = True,
             placed: "Placed | None" = None):
        """Signed distances (F, Q) as `distance` gives them (exact up to `within`; None unless
        `dense`) and the entries of `gradient`, from one evaluation: a correction's first step needs both."""
        poses, dist, (f, p, exact, ca, cb, normal, bound) = self._near(q, root, within, still, dense, placed)
        inside = np.flatnonzero(exact < within)
        f, p, exact, ca, cb, normal = f[inside], p[inside], exact[inside], ca[inside], cb[inside], normal[inside]
        bound = None if bound is None else tuple(x[inside] for x in bound)
        grad = np.zeros((len(f), len(self.variables)))
        if len(f) == 0:
            return dist, (f, p, exact, grad)
        normal = np.ascontiguousarray(normal.T)  # (3, K): entries last, as below (contiguous: each product reads it V times)
        # a turn about axis a through joint j moves point c at a x (c - j): along n at a.(c x n) + (j x a).n
        axis = np.stack([poses[int(v)].turn(self.tree.axes[v]) for v in self.variables])  # (V, 3, F)
        moment = cross_rows(np.stack([poses[int(v)].pos for v in self.variables]), axis)  # per frame, then per entry
        if self._prismatic.any():  # a slide: a.n
            slide = self._prismatic[:, None, None]
            moment, axis = np.where(slide, axis, moment), np.where(slide, 0.0, axis)
        axis, moment = axis[:, :, f], moment[:, :, f]  # (V, 3, K)
        along = (moment * normal).sum(axis=1)  # (V, K)
        rate_a = (axis * cross_rows(ca.T, normal)).sum(axis=1) + along
        rate_b = (axis * cross_rows(cb.T, normal)).sum(axis=1) + along
        grad[:] = (self._scale[:, None] * (rate_a * self.moves[:, p, 0] - rate_b * self.moves[:, p, 1])).T
        if bound is not None and bound[0].any():  # a bound along the capsules' normal: that normal turns too
            k = np.flatnonzero(bound[0])
            grad[k] += (self._scale[:, None] * normal_turn(
                ca[k] - cb[k], axis[:, :, k], moment[:, :, k], (self.moves[:, p[k], 0], self.moves[:, p[k], 1]),
                bound[3][k], bound[1][k], bound[2][k])).T
        return dist, (f, p, exact, grad)

    def residuals(self, q: np.ndarray, root: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Hinge residuals (F, Q) and their Jacobian (F, Q, V) over the term's joints, both
        computed only where a pair is inside the margin."""
        f, p, dist, grad = self.gradient(q, root, self.margin)
        res = np.zeros((len(q), len(self.capsules)))
        jac = np.zeros(res.shape + (len(self.variables),))
        res[f, p], jac[f, p] = self.weight * (self.margin - dist), -self.weight * grad
        return res, jac



def _apart(centre: np.ndarray, pairs: np.ndarray, reach: np.ndarray) -> np.ndarray:
    """(F, P) the distances of body pairs' (P, 2) centres (B, 3, F) less their summed radii `reach` (P, 1):
    sqrt((x^2 + y^2) + z^2), one axis at a time into one (P, F) array (a look over a clip's frames holds arrays
    of megabytes: gathering the three axes at once, (P, 3, F), and summing its planes took 3x the time)."""
    apart = None
    for axis in centre.transpose(1, 0, 2):  # (B, F) each
        gap = axis[pairs[:, 0]]
        gap -= axis[pairs[:, 1]]
        np.square(gap, out=gap)
        if apart is None:
            apart = gap
        else:
            apart += gap
    np.sqrt(apart, out=apart)
    apart -= reach
    return apart.T


def _middles(ends: np.ndarray) -> np.ndarray:
    """(3, U * F) the middles of capsules' ends (U, 2, 3, F), one flat plane per axis: an entry's coordinate is
    one take at u * F + f (a gather of 3-vectors across a frames-last array costs twice the instructions)."""
    count, frames = len(ends), ends.shape[-1]
    middle = np.add(ends[:, 0].transpose(1, 0, 2), ends[:, 1].transpose(1, 0, 2), out=np.empty((3, count, frames)))
    middle *= 0.5
    return middle.reshape(3, count * frames)


def _taken(planes: np.ndarray, at: np.ndarray) -> np.ndarray:
    """(K, 3) the points at flat places `at` of planes (3, U * F)."""
    out = np.empty((len(at), 3))
    for axis, plane in enumerate(planes):
        out[:, axis] = plane.take(at)
    return out


def _ancestors(tree: KinematicTree, link: int) -> list[int]:
    out = []
    while link >= 0:
        out.append(link)
        link = int(tree.parent[link])
    return out


def _below_all(tree: KinematicTree, offset: np.ndarray, joint: int, links: np.ndarray) -> np.ndarray:
    """(L,) the links' offsets (metres) summed from `joint`'s link down to each of `links` (from each link up,
    one level at a time): no point of a link's frame is further from the joint in any pose (inf where the joint
    is not above the link)."""
    length, link = np.zeros(len(links)), np.array(links, dtype=int)
    while True:
        live = (link != joint) & (link >= 0)
        if not live.any():
            break
        length[live] += offset[link[live]]
        link[live] = tree.parent[link[live]]
    length[link < 0] = np.inf
    return length
