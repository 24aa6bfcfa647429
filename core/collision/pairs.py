"""Which bodies are checked against which: the allowed-collision matrix, computed once per robot.

Checked: every pair of bodies that are not parent and child, nor ancestor and
descendant within FOLD_JOINTS joints (a wrist or hip of stacked joints: the hand
turns on a point a few centimetres past the forearm, and their proxies meet
whenever it bends), minus pairs whose proxies already overlap or touch in the
zero pose (built that way: a hip motor inside the pelvis shell) and pairs no
posture within the joint limits brings within REACH_M (sampled). A mapping preset may allow more pairs to touch (a hand
clapping the other) or check pairs the matrix leaves out.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..model.kinematics import FIXED, KinematicTree
from .hulls import proxy_distance
from .proxies import CollisionModel, collision_model, per_robot
from .store import stored
from .support import tighten

FOLD_JOINTS = 3  # a body and its descendants this many joints down are not checked
ZERO_CLEARANCE_M = 0.005  # pairs closer than this in the zero pose touch by design
REACH_M = 0.03  # a pair is worth checking when some sampled posture brings it this close
SAMPLES = 1500  # random postures within the joint limits
SEED = 17
_PAIRS: dict = {}  # per robot file, for the process (core.collision.proxies.robot_key)


@dataclass
class CollisionPairs:
    """Checked body pairs (P, 2) and their capsule pairs (Q, 2), grouped by body pair."""

    model: CollisionModel
    bodies: np.ndarray  # (P, 2) body indices, checked
    capsules: np.ndarray  # (Q, 2) capsule indices, sorted by their body pair
    owner: np.ndarray  # (Q,) row of `bodies` each capsule pair belongs to
    starts: np.ndarray  # (P,) first capsule pair of each body pair

    def names(self, pair: int) -> tuple[str, str]:
        a, b = self.bodies[pair]
        return self.model.body_names[a], self.model.body_names[b]

    def body_distance(self, capsule_distance: np.ndarray) -> np.ndarray:
        """Signed distance (F, P) of each body pair: the least over its capsule pairs (F, Q)."""
        if len(self.bodies) == 0:
            return np.zeros(capsule_distance.shape[:-1] + (0,))
        return np.minimum.reduceat(capsule_distance, self.starts, axis=-1)

    def subset(self, keep: np.ndarray) -> "CollisionPairs":
        """Only the body pairs in `keep` (bool (P,) or indices)."""
        return _pairs(self.model, self.bodies[keep])


def collision_pairs(tree: KinematicTree, allow: list | None = None, check: list | None = None) -> CollisionPairs:
    """The robot's checked pairs (computed once per robot file and process), with a preset's overrides:
    allow: [[link, link], ...] pairs that may touch; check: pairs checked whatever the matrix says.
    A link name that is no body's raises KeyError naming it."""
    base = per_robot(tree, "_collision_pairs", _PAIRS, lambda t: stored(
        t, "pairs", default_pairs, lambda pairs: {"bodies": pairs.bodies},
        lambda arrays: _pairs(collision_model(t), arrays["bodies"].astype(int).reshape(-1, 2))))
    if not allow and not check:
        return base
    model = base.model
    wanted = {tuple(sorted(p)) for p in base.bodies.tolist()}
    for link_a, link_b in check or []:
        wanted.add(tuple(sorted((_body_of(tree, model, link_a), _body_of(tree, model, link_b)))))
    for link_a, link_b in allow or []:
        wanted.discard(tuple(sorted((_body_of(tree, model, link_a), _body_of(tree, model, link_b)))))
    return _pairs(model, np.array(sorted(wanted), dtype=int).reshape(-1, 2))


def _body_of(tree: KinematicTree, model, name: str) -> int:
    """The body a link belongs to: its own, or that of the link it is fixed to (G1's rubber hands
    are part of the wrist's body); KeyError naming a link the robot does not have."""
    if name in model.body_names:
        return model.body_index(name)
    if name not in tree.link_names:
        raise KeyError(f"robot {tree.robot.name!r} has no link {name!r}")
    link = tree.link_index(name)
    while link >= 0 and link not in model.body_links:
        link = int(tree.parent[link]) if tree.qindex[link] < 0 else -1
    if link < 0:
        return model.body_index(name)  # a moving link without geometry: the error lists the bodies
    return model.body_links.index(link)


def default_pairs(tree: KinematicTree) -> CollisionPairs:
    """Non-adjacent body pairs, minus those overlapping in the zero pose or never brought close."""
    model = collision_model(tree)
    count = len(model.body_links)
    candidates = []
    for a in range(count):
        for b in range(a + 1, count):
            if _joints_between(tree, model.body_links[a], model.body_links[b]) <= FOLD_JOINTS:
                continue  # parent and child, or a short fold of stacked joints
            candidates.append((a, b))
    pairs = _pairs(model, np.array(candidates, dtype=int).reshape(-1, 2))
    if len(pairs.bodies) == 0:  # a robot without geometry, or one body: nothing to check
        return pairs
    zero = np.zeros((1, tree.dof))
    sampled = sampled_postures(tree, SAMPLES, SEED)
    # the capsules decide which pairs are checked (the meshes' bound only tightens their distances)
    at_zero = pairs.body_distance(pair_distances(tree, pairs, zero, None, support=False))[0]
    closest = body_distances(tree, pairs, sampled, None, exact_below=REACH_M, support=False).min(axis=0)
    return pairs.subset((at_zero > ZERO_CLEARANCE_M) & (closest < REACH_M))


def sampled_postures(tree: KinematicTree, count: int, seed: int) -> np.ndarray:
    """(count, n) random joint positions within the limits (+-pi where a joint has none), each joint's column
    drawn in an order the robot's geometry sets (canonical_joints), not its URDF's: the same robot listed
    in another order samples the same postures, so it checks the same pairs (the G1 reordered: 4 pairs
    missing, 3 more, and its avoiding walk 0.53 rad apart)."""
    lower = np.where(np.isfinite(tree.lower), tree.lower, -np.pi)
    upper = np.where(np.isfinite(tree.upper), tree.upper, np.pi)
    drawn = np.random.default_rng(seed).random((count, tree.dof))
    out = np.empty_like(drawn)
    out[:, canonical_joints(tree)] = drawn
    return lower + out * (upper - lower)


def canonical_joints(tree: KinematicTree, decimals: int = 6) -> np.ndarray:
    """The q columns in an order of the robot's own: by depth (movable joints above), then where the joint
    sits and how its axis points in the zero pose (world, rounded to `decimals`), then its URDF order; neither
    the names nor the order a URDF lists its parts in changes it."""
    zero = tree.zero_pose()
    keys = []
    for column, joint in enumerate(tree.robot.movable_joints):
        link = tree.link_index(joint.child)
        depth = tree.movable_depth(link)
        place = np.round(zero[link][:3, 3], decimals) + 0.0  # + 0.0: no -0.0
        axis = np.round(zero[link][:3, :3] @ tree.axes[link], decimals) + 0.0
        keys.append((depth, *place, *axis, column))
    return np.array([key[-1] for key in sorted(keys)], dtype=int)


def pair_distances(tree: KinematicTree, pairs: CollisionPairs, q: np.ndarray, root: np.ndarray | None,
                   support: bool = True) -> np.ndarray:
    """Signed capsule-pair distances (F, Q) for joint positions q (F, n) and root poses (F, 4, 4)
    (support: tightened by the meshes' separating-axis bound, core.collision.support)."""
    model = pairs.model
    if len(pairs.capsules) == 0:
        return np.zeros((len(q), 0))
    poses = tree.poses(q, root, [int(link) for link in np.unique(model.capsule_link)])
    frames = np.repeat(np.arange(len(q)), len(pairs.capsules))
    capsules = np.tile(pairs.capsules, (len(q), 1))
    return _exact(model, poses, frames, capsules, support=support).reshape(len(q), -1)


def _exact(model: CollisionModel, poses: dict, frames: np.ndarray, capsules: np.ndarray,
           ends: np.ndarray | None = None, within: float = np.inf, support: bool = True) -> np.ndarray:
    """Signed distances (K,) of capsule pairs (K, 2) on frames (K,) of link poses {link: (F, 4, 4)}
    (ends: their capsules' world ends (F, C, 2, 3) when known): capsules as capsules, hulls as hulls
    (core.collision.hulls) where they may be closer than `within` (beyond, a lower bound); with
    `support`, tightened by the meshes' separating-axis bound (core.collision.support.tighten)."""
    ends = model.world_ends(poses) if ends is None else ends
    world = model.world_hulls(poses) if model.hull is not None and (model.hull[capsules] >= 0).any() else None
    out = proxy_distance(model, capsules, ends[frames[:, None], capsules],
                         lambda rows, side: world[frames[rows], model.hull[capsules[rows, side]]], within)[:4]
    if support:
        tighten(model, capsules, out, lambda rows, side: _frames(poses, model, frames[rows],
                                                                   model.capsule_link[capsules[rows, side]]), within)
    return out[0]


def _frames(poses: dict, model: CollisionModel, frames: np.ndarray, links: np.ndarray) -> np.ndarray:
    """Link frames (K, 4, 3) (rotation columns, then origin) of links (K,) on frames (K,) of poses
    {link: (F, 4, 4)}, as core.collision.support reads them."""
    out = np.empty((len(links), 4, 3))
    for link in np.unique(links):
        rows = np.flatnonzero(links == link)
        pose = poses[int(link)][frames[rows]]
        out[rows, :3], out[rows, 3] = pose[:, :3, :3].transpose(0, 2, 1), pose[:, :3, 3]
    return out


def body_distances(tree: KinematicTree, pairs: CollisionPairs, q: np.ndarray, root: np.ndarray | None,
                   exact_below: float, support: bool = True) -> np.ndarray:
    """Signed distances (F, P) of the checked body pairs, exact where a pair may be closer than
    `exact_below`; elsewhere the distance between the bodies' bounding spheres, a lower bound
    above it (most pairs of most frames are far apart: their capsules are never paired)."""
    model = pairs.model
    if len(pairs.capsules) == 0:
        return np.zeros((len(q), len(pairs.bodies)))
    poses = tree.poses(q, root, [int(link) for link in np.unique(model.capsule_link)])
    centre, reach = model.body_spheres()
    world = np.stack([poses[link][:, :3, :3] @ centre[body] + poses[link][:, :3, 3]
                      for body, link in enumerate(model.body_links)], axis=1)  # (F, B, 3)
    first, second = pairs.bodies[:, 0], pairs.bodies[:, 1]
    gram = world @ world.transpose(0, 2, 1)  # (F, B, B): every centre distance from one product
    square = np.einsum("fbb->fb", gram)
    apart = np.sqrt(np.clip(square[:, first] + square[:, second] - 2.0 * gram[:, first, second], 0.0, None))
    dist = apart - reach[first] - reach[second]
    f, p = np.nonzero(dist < exact_below)
    if len(f) == 0:
        return dist
    counts = np.diff(np.append(pairs.starts, len(pairs.capsules)))[p]
    begin = np.cumsum(counts) - counts
    rows = np.repeat(np.arange(len(f)), counts)
    k = pairs.starts[p][rows] + np.arange(counts.sum()) - begin[rows]  # every capsule pair of each near pair
    a, b = pairs.capsules[k, 0], pairs.capsules[k, 1]
    frames = f[rows]
    ends = model.world_ends(poses)  # (F, C, 2, 3)
    middle = ends.mean(axis=2)
    reach = 0.5 * np.linalg.norm(model.ends[:, 1] - model.ends[:, 0], axis=-1) + model.radius
    each = np.linalg.norm(middle[frames, a] - middle[frames, b], axis=-1) - reach[a] - reach[b]  # capsules' spheres
    near = np.flatnonzero(each < exact_below)
    each[near] = _exact(model, poses, frames[near], np.stack([a[near], b[near]], axis=1), ends, exact_below, support)
    dist[f, p] = np.minimum.reduceat(each, begin)
    return dist


def _pairs(model: CollisionModel, bodies: np.ndarray) -> CollisionPairs:
    capsules, owner, starts = [], [], []
    by_body = [np.flatnonzero(model.capsule_body == b) for b in range(len(model.body_links))]
    for row, (a, b) in enumerate(bodies.tolist()):
        starts.append(len(capsules))
        for ca in by_body[a]:
            for cb in by_body[b]:
                capsules.append((ca, cb))
                owner.append(row)
    return CollisionPairs(model, bodies.reshape(-1, 2), np.array(capsules, dtype=int).reshape(-1, 2),
                          np.array(owner, dtype=int), np.array(starts, dtype=int))


def _joints_between(tree: KinematicTree, a: int, b: int) -> int:
    """Movable joints from one link down to the other when one descends from the other, else a large number."""
    for top, low in ((a, b), (b, a)):
        count, link = 0, low
        while link > top:
            count += int(tree.kind[link] != FIXED)
            link = int(tree.parent[link])
        if link == top:
            return count
    return 1 << 30
