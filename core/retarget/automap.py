"""Fill a chain mapping automatically for characters and robots never seen before.

Structure comes from topology and the geometry of the clip's typical posture
(feet are the low leaves, the pelvis is where the legs meet, the arms are the
two long branches of the torso), never from the file's rest pose; names only
settle left and right when they say so.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ..feet.geometry import body_points
from ..model.kinematics import KinematicTree
from ..model.reroot import hung_from
from ..chains.mapping import ChainMapping, Mapping
from ..motion.robot_source import tail_offsets
from ..motion.source import SourceMotion
from . import names as name_words


# Where the hand goes is what a viewer reads first; where a robot elbow cannot fold as far as
# a human's, the wrist direction should win over the forearm's shape (walk onto G1: right arm
# tip-direction error 2.7 deg at the chain default 3, 1.6 deg at 8, mean distance +0.002).
ARM_TIP_WEIGHT = 8.0


# A foot's end stays within this share of the body's height above its lowest point (median over
# the clip); hands hanging at the sides are at 0.4-0.5.
FOOT_HEIGHT = 0.3


class AutoMapError(ValueError):
    """Nothing mappable was found; the message says what was looked for."""


@dataclass
class Skeleton:
    """The shape both sides share for mapping: nodes with joint positions at rest."""

    names: list[str]
    parents: np.ndarray
    points: np.ndarray  # (N, 3) joint positions, metres, Z up
    ends: np.ndarray  # (N, 3) end of each leaf's own segment (bone tail, toe point)
    movable: np.ndarray  # (N,) bool
    low: np.ndarray | None = None  # (N,) height of each end above the body's lowest point, share of its height

    def __post_init__(self):
        if self.low is None:
            self.low = relative_heights(self.points[None], self.ends[None])[0]

    def children(self, i: int) -> list[int]:
        return [int(j) for j in np.flatnonzero(self.parents == i)]

    def descendants(self, i: int) -> list[int]:
        out, stack = [], [i]
        while stack:
            node = stack.pop()
            out.append(node)
            stack.extend(self.children(node))
        return out

    def path_to(self, i: int, leaf: int) -> list[int]:
        out = [leaf]
        while out[-1] != i:
            out.append(int(self.parents[out[-1]]))
        return out[::-1]

    def polyline(self, path: list[int]) -> np.ndarray:
        return np.concatenate([self.points[path], self.ends[path[-1:]]])


def relative_heights(points: np.ndarray, ends: np.ndarray, body: np.ndarray | None = None) -> np.ndarray:
    """Height (F, N) of each end above the lowest point of the body, as a share of its height;
    `body` (N,) marks the nodes that measure the body (not IK targets or props)."""
    body = np.ones(points.shape[-2], dtype=bool) if body is None or not body.any() else body
    low = np.minimum(points[..., body, 2].min(axis=-1), ends[..., body, 2].min(axis=-1))[..., None]
    height = np.maximum(points[..., body, 2].max(axis=-1)[..., None] - low, 1e-6)
    return (ends[..., 2] - low) / height


def source_skeleton(motion: SourceMotion) -> Skeleton:
    """The clip's skeleton in its most typical posture (reference_frame), not its rest pose;
    how low each bone ends is its median over the clip (the feet carry the weight most of the time)."""
    moving = motion.frames > 0 and np.isfinite(motion.heads).all()
    if not moving:
        return Skeleton(list(motion.bone_names), np.asarray(motion.parents), motion.rest_heads,
                        motion.rest_tails, np.ones(len(motion.bone_names), dtype=bool))
    f = reference_frame(motion)
    body = np.array([not name_words.auxiliary(n) for n in motion.bone_names])
    low = np.median(relative_heights(motion.heads, motion.tails, body), axis=0)
    return Skeleton(list(motion.bone_names), np.asarray(motion.parents), motion.heads[f],
                    motion.tails[f], np.ones(len(motion.bone_names), dtype=bool), low)


def reference_frame(motion: SourceMotion) -> int:
    """The frame closest to the clip's median posture (positions relative to the root bone).

    A file's rest pose may be no posture at all (every bone along its parent's X); the
    animated frames are the actor, and the median ignores a calibration T-pose at the start.
    """
    rel = np.concatenate([motion.heads, motion.tails], axis=1) - motion.heads[:, :1]
    rel = np.nan_to_num(rel, nan=0.0)
    return int(np.argmin(np.abs(rel - np.median(rel, axis=0)).sum(axis=(1, 2))))


def robot_skeleton(tree: KinematicTree) -> Skeleton:
    zero = tree.zero_pose()
    points = zero[:, :3, 3]
    return Skeleton(list(tree.link_names), tree.parent.copy(), points, points.copy(), tree.qindex >= 0)


def _lengths(poly: np.ndarray) -> np.ndarray:
    return np.linalg.norm(np.diff(poly, axis=0), axis=1)


def _longest_path(sk: Skeleton, start: int, low: bool = False) -> list[int]:
    """Path from `start` to its farthest leaf (by arc length; lowest leaf first when `low`).

    Leaves named as rig helpers or props (an IK target, a sword) end no limb when the
    body offers another leaf.
    """
    leaves = _body_leaves(sk, [d for d in sk.descendants(start) if not sk.children(d)])
    def score(leaf):
        path = sk.path_to(start, leaf)
        length = _lengths(sk.polyline(path)).sum()
        return (-sk.low[leaf], length) if low else (length,)
    return sk.path_to(start, max(leaves, key=score))


def _limb_span(sk: Skeleton, path: list[int], robot: bool) -> tuple[int, int]:
    """(base, tip) positions in `path`: the limb's first joint and its wrist or ankle.

    The tip is where the last long segment ends (hand and foot segments are
    short); the base is the first movable link (robot) or the start of the two
    long segments before the tip (a character's thigh or upper arm). The last
    node's own segment counts too: an arm that ends at an End Site after the
    elbow has its wrist there, at tip == len(path) (the last bone's tail).
    """
    seg = _lengths(sk.polyline(path))
    if not seg.any():
        return 0, 0
    long = np.flatnonzero(seg > 0.15 * seg.sum())
    tip = int(long[-1]) + 1
    if robot:
        base = next((k for k, n in enumerate(path) if sk.movable[n]), 0)
    else:
        base = int(long[-2]) if len(long) > 1 else max(tip - 2, 0)
    return min(base, tip - 1), tip


def _body_leaves(sk: Skeleton, leaves: list[int]) -> list[int]:
    """The leaves that are not named as helpers or props (all of them when every one is)."""
    body = [n for n in leaves if not name_words.auxiliary(sk.names[n])]
    return body or leaves


def _path_length(sk: Skeleton, path: list[int]) -> float:
    return float(_lengths(sk.polyline(path)).sum())


def _matched(sk: Skeleton, paths: list[list[int]]) -> list[list[int]]:
    """Two limbs of a pair end at leaves of similar reach: a prop or a long extra bone on one
    side (scrambled names say nothing) gives way to the leaf that matches the other side."""
    if len(paths) != 2:
        return paths
    lengths = [_path_length(sk, p) for p in paths]
    short, long = (0, 1) if lengths[0] <= lengths[1] else (1, 0)
    if lengths[long] <= 1.3 * lengths[short]:
        return paths
    start = paths[long][0]
    leaves = [d for d in sk.descendants(start) if not sk.children(d)]
    best = min(leaves, key=lambda leaf: abs(_path_length(sk, sk.path_to(start, leaf)) - lengths[short]))
    out = list(paths)
    out[long] = sk.path_to(start, best)
    return out


def _lca(sk: Skeleton, nodes: list[int]) -> int:
    roots = [n for n in range(len(sk.names)) if sk.parents[n] < 0]
    paths = [next(sk.path_to(r, n) for r in roots if r in _ancestors(sk, n)) for n in nodes]
    common = 0
    for level in zip(*paths):
        if len(set(level)) != 1:
            break
        common = level[0]
    return common


def _ancestors(sk: Skeleton, n: int) -> set[int]:
    out = {n}
    while sk.parents[n] >= 0:
        n = int(sk.parents[n])
        out.add(n)
    return out


@dataclass
class BodyParts:
    """Where the limbs are: node paths (pelvis first) per part, with a side."""

    pelvis: int
    legs: list[list[int]]
    arms: list[list[int]]
    head: list[int] | None


def find_body_parts(sk: Skeleton) -> BodyParts:
    """Legs end at the low leaves; the pelvis joins them; arms are the torso's two long branches."""
    leaves = _body_leaves(sk, [n for n in range(len(sk.names)) if not sk.children(n)])
    feet = [n for n in leaves if sk.low[n] <= FOOT_HEIGHT]
    roots = [n for n in range(len(sk.names)) if sk.parents[n] < 0]
    if len(feet) >= 2:
        pelvis = _lca(sk, feet)
        leg_roots = [c for c in sk.children(pelvis) if any(f in sk.descendants(c) for f in feet)]
        # the two longest branches that reach a foot: a helper bone near the ground is no leg
        leg_roots = sorted(leg_roots, key=lambda c: -_path_length(sk, _longest_path(sk, c, low=True)))[:2]
        leg_roots = sorted(leg_roots)
    else:
        pelvis, leg_roots = roots[0], []
    legs = _matched(sk, [_longest_path(sk, c, low=True) for c in leg_roots]) if len(leg_roots) >= 2 else []
    others = [c for c in sk.children(pelvis) if c not in leg_roots]
    if not legs:
        others = [pelvis]
    arms, head = [], None
    if others:
        leg_len = np.mean([_lengths(sk.polyline(p)).sum() for p in legs]) if legs else 0.0
        spine = max(others, key=lambda c: _lengths(sk.polyline(_longest_path(sk, c))).sum())
        hub, branches = _arm_hub(sk, spine, 0.25 * leg_len)
        if hub is not None:
            ranked = sorted(branches, key=lambda b: -_lengths(sk.polyline(_longest_path(sk, b))).sum())
            arms = _matched(sk, [_longest_path(sk, b) for b in (ranked[:2] if legs else ranked[:1])])
            rest = [b for b in ranked[2:] if _lengths(sk.polyline(_longest_path(sk, b))).sum() > 0]
            head = _longest_path(sk, rest[0]) if rest and legs else None
    return BodyParts(pelvis, legs, arms, head)


def _arm_hub(sk: Skeleton, start: int, min_length: float):
    """First node below `start` with two or more long branches (the chest), or the arm's root."""
    node = start
    while True:
        kids = sk.children(node)
        long = [k for k in kids if _lengths(sk.polyline(_longest_path(sk, k))).sum()
                + np.linalg.norm(sk.points[k] - sk.points[node]) > max(min_length, 1e-6)]
        if len(long) >= 2 or (len(long) == 1 and min_length == 0 and sk.movable[long[0]]):
            return node, long
        if not kids:
            return None, []
        node = max(kids, key=lambda k: _lengths(sk.polyline(_longest_path(sk, k))).sum())


def _span_path(sk: Skeleton, path: list[int], robot: bool, role: str) -> list[int]:
    """The part of a limb path that decides its tip: a robot leg stops at its last joint."""
    if robot and role == "leg":
        last = max((k for k, n in enumerate(path) if sk.movable[n]), default=len(path) - 1)
        return path[: last + 1]
    return path


def _sides(sk: Skeleton, limbs: list[list[int]], forward: np.ndarray) -> list[str]:
    """Left/right per limb: from names when they say so, else from the body's geometry."""
    named = [name_words.side(sk.names[p[0]]) or name_words.side(sk.names[p[-1]]) for p in limbs]
    if sorted(named) == ["left", "right"]:
        return named
    left_axis = np.cross([0.0, 0.0, 1.0], forward)
    # whole limbs, not their first joints: a hip or collar joint often sits on the midline
    means = [sk.points[p].mean(axis=0) for p in limbs]
    centre = np.mean(means, axis=0)
    sides = ["left" if np.dot(m - centre, left_axis) >= 0 else "right" for m in means]
    if len(set(sides)) < len(sides):
        order = np.argsort([np.dot(m - centre, left_axis) for m in means])
        sides = ["right" if k == order[0] else "left" for k in range(len(limbs))]
    return sides


def _source_forward(sk: Skeleton, parts: BodyParts) -> np.ndarray:
    """Toes point forward: the mean horizontal direction from ankle to toe tip."""
    dirs = []
    for leg in parts.legs:
        _, tip = _limb_span(sk, leg, robot=False)
        ankle = sk.points[leg[min(tip, len(leg) - 1)]]  # a leg may end at its ankle's tail
        d = sk.ends[leg[-1]] - ankle
        dirs.append(d * [1, 1, 0])
    fwd = np.sum(dirs, axis=0) if dirs else np.array([0.0, -1.0, 0.0])
    if np.linalg.norm(fwd) < 1e-9:
        fwd = np.array([0.0, -1.0, 0.0])
    return fwd / np.linalg.norm(fwd)


def foot_tip_offset(tree: KinematicTree, ankle: int) -> tuple[int, list[float]] | None:
    """(foot link, toe point in its frame) from collision/visual primitives of the foot.

    The foot link is the last jointed link below the ankle; the toe point is the
    mean of its forward-most geometry (x is forward in a URDF base, REP 103).
    A foot modelled by meshes only is measured on their hull points, so its
    sole link ends the leg chain even when no primitive marks the toe.
    """
    zero = tree.zero_pose()
    below = [ankle]
    for i in range(len(tree.link_names)):
        if tree.parent[i] in below:
            below.append(i)
    foot = max((i for i in below if tree.qindex[i] >= 0), key=tree.depth, default=ankle)
    points = []
    for i in below:
        link = tree.robot.links[tree.link_names[i]]
        points.append(zero[i, :3, 3])
        for geom in list(link.collisions) + list(link.visuals):
            if geom.kind != "mesh":
                points.append((zero[i] @ geom.origin)[:3, 3])
    points = np.array(points)
    if points[:, 0].max() - zero[ankle, 0, 3] < 0.02:  # no primitive shows the toe: the meshes do
        hulls = [body_points(tree, i) for i in below]
        points = np.concatenate([points] + [b.points @ zero[b.link, :3, :3].T + zero[b.link, :3, 3] for b in hulls])
    forward = points[:, 0]
    if forward.max() - zero[ankle, 0, 3] < 0.02:
        return None
    toe = points[forward >= forward.max() - 0.01].mean(axis=0)
    toe[1] = zero[foot, 1, 3]  # centre the toe across the foot
    local = zero[foot, :3, :3].T @ (toe - zero[foot, :3, 3])
    return foot, [float(v) for v in local]


def auto_map(motion: SourceMotion, tree: KinematicTree) -> Mapping:
    """A mapping from the clip's skeleton to the robot: spine, legs, feet, arms, hands, head.

    A robot whose legs hang from a link below its root (a URDF rooted at the torso) is
    mapped as seen from that link, its pelvis: `Mapping.robot_root` names it and the
    retarget solves on the robot re-rooted there (core.model.reroot).
    """
    src_sk, rob_sk = source_skeleton(motion), robot_skeleton(tree)
    src, rob = find_body_parts(src_sk), find_body_parts(rob_sk)
    if rob.legs and rob.pelvis != 0:
        tree, _ = hung_from(tree, rob_sk.names[rob.pelvis])
        rob_sk = robot_skeleton(tree)
        rob = find_body_parts(rob_sk)
    if not rob.legs and not rob.arms:
        raise AutoMapError(f"robot {tree.robot.name!r}: found no legs or arms (no jointed branches)")
    src_legs = dict(zip(_sides(src_sk, src.legs, _source_forward(src_sk, src)), src.legs)) if src.legs else {}
    src_arms = dict(zip(_sides(src_sk, src.arms, _source_forward(src_sk, src)), src.arms)) if src.arms else {}
    fwd = zero_forward = tree.zero_pose()[0, :3, 0]
    rob_legs = dict(zip(_sides(rob_sk, rob.legs, zero_forward), rob.legs)) if rob.legs else {}
    rob_arms = dict(zip(_sides(rob_sk, rob.arms, fwd), rob.arms)) if len(rob.arms) == 2 else {}
    chains: list[ChainMapping] = []
    for side in ("left", "right"):
        if side in src_legs and side in rob_legs:
            chains += _limb_chains(src_sk, rob_sk, tree, src_legs[side], rob_legs[side], "leg", side)
    for side in ("left", "right"):
        if side in src_arms and side in rob_arms:
            chains += _limb_chains(src_sk, rob_sk, tree, src_arms[side], rob_arms[side], "arm", side)
    if len(rob.arms) == 1 and src_arms:  # a robot arm: one human arm drives it
        side = "right" if "right" in src_arms else next(iter(src_arms))
        chains += _limb_chains(src_sk, rob_sk, tree, src_arms[side], rob.arms[0], "arm", "")
    arm_chains = {c.side: c for c in chains if c.role == "arm" and c.side}
    if src.legs and rob.legs and set(arm_chains) == {"left", "right"}:
        sides = ("left", "right")
        chains.insert(0, ChainMapping("spine", src_sk.names[src.pelvis], [arm_chains[s].source_base for s in sides],
                                      rob_sk.names[rob.pelvis], [arm_chains[s].robot_base for s in sides],
                                      role="spine", tip_weight=1.0))
    if src.head and rob.head and any(rob_sk.movable[n] for n in rob.head):
        base = next(n for n in rob.head if rob_sk.movable[n])
        chains.append(ChainMapping("head", src_sk.names[src.head[0]], [src_sk.names[src.head[-1]]],
                                   rob_sk.names[base], [rob_sk.names[rob.head[-1]]], role="head",
                                   source_tip_tail=True))
    chains = [c for c in chains if _has_motion(tree, c)]
    if not chains:
        raise AutoMapError(f"robot {tree.robot.name!r}: no chain of the source matches a jointed chain of the robot")
    if _is_this_robot(motion, tree):
        chains = [_identity(tree, c) for c in chains]
    return Mapping(chains, src_sk.names[src.pelvis], rob_sk.names[rob.pelvis])


def _is_this_robot(motion: SourceMotion, tree: KinematicTree) -> bool:
    """The clip is this robot's own motion (core.motion.robot_source): its bones are the
    robot's links with the same parents, so every chain maps onto itself."""
    if sorted(motion.bone_names) != sorted(tree.link_names):
        return False
    parent_of = lambda names, parents, i: names[parents[i]] if parents[i] >= 0 else None  # noqa: E731
    return all(parent_of(motion.bone_names, motion.parents, motion.index(name))
               == parent_of(tree.link_names, tree.parent, i) for i, name in enumerate(tree.link_names))


def _identity(tree: KinematicTree, chain: ChainMapping) -> ChainMapping:
    """The chain with its source side on exactly its robot side's links; a robot tip point
    (a toe) becomes the tip bone's tail, which robot_source fixes in the same link."""
    tail = chain.robot_tip_offset is not None
    offset = [float(v) for v in tail_offsets(tree)[tree.link_index(chain.robot_tips[0])]] if tail else None
    return replace(chain, source_base=chain.robot_base, source_tips=list(chain.robot_tips),
                   source_landmarks=chain.robot_landmarks, source_fractions=chain.robot_fractions,
                   source_tip_tail=tail, robot_tip_offset=offset, robot_start=None)


def _has_motion(tree: KinematicTree, chain: ChainMapping) -> bool:
    """A robot chain is worth solving when it has length and a joint that moves it."""
    for tip in chain.robot_tips:
        path = tree.path(chain.robot_base, tip)
        if (len(path) > 1 or chain.robot_tip_offset is not None) and any(tree.qindex[i] >= 0 for i in path):
            return True
    return False


def _limb_chains(src_sk, rob_sk, tree, src_path, rob_path, role, side) -> list[ChainMapping]:
    """A leg from hip to toe (knee and ankle as landmarks), or an arm from shoulder to
    wrist (elbow as landmark) followed by its hand."""
    sb, st = _limb_span(src_sk, src_path, robot=False)
    rb, rt = _limb_span(rob_sk, _span_path(rob_sk, rob_path, True, role), robot=True)
    s_mid = [src_sk.names[src_path[_joint_before(src_sk, src_path, sb, st)]]]
    r_mid = [rob_sk.names[rob_path[_joint_before(rob_sk, rob_path, rb, rt)]]]
    name = f"{side}_{role}" if side else role
    start = _shape_start(rob_sk, rob_path, rb, rt)
    if role == "leg":
        toe = foot_tip_offset(tree, rob_path[rt])
        if toe is not None and len(src_path) - 1 > st:
            foot, offset = toe
            return [ChainMapping(name, src_sk.names[src_path[sb]], [src_sk.names[src_path[-1]]],
                                 rob_sk.names[rob_path[rb]], [rob_sk.names[foot]], role=role, side=side,
                                 source_tip_tail=True, robot_tip_offset=offset,
                                 source_landmarks=s_mid + [src_sk.names[src_path[st]]],
                                 robot_landmarks=r_mid + [rob_sk.names[rob_path[rt]]], robot_start=start)]
    at_end = st == len(src_path)  # the limb ends at the last bone's tail (an End Site): no hand follows
    out = [ChainMapping(name, src_sk.names[src_path[sb]], [src_sk.names[src_path[st - 1 if at_end else st]]],
                        rob_sk.names[rob_path[rb]], [rob_sk.names[rob_path[rt]]], role=role, side=side,
                        source_tip_tail=at_end, source_landmarks=s_mid, robot_landmarks=r_mid, robot_start=start,
                        tip_weight=ARM_TIP_WEIGHT if role == "arm" else ChainMapping.tip_weight)]
    src_end, rob_end = src_path[st:], rob_path[rt:]
    if role == "arm" and src_end and len(rob_end) >= 2 and any(rob_sk.movable[n] for n in rob_end[:-1]):
        out.append(ChainMapping(f"{side}_hand" if side else "hand", src_sk.names[src_end[0]],
                                [src_sk.names[src_end[-1]]], rob_sk.names[rob_end[0]], [rob_sk.names[rob_end[-1]]],
                                role="hand", side=side, source_tip_tail=True))
    return out


def _shape_start(sk: Skeleton, path: list[int], base: int, tip: int) -> str | None:
    """Where a robot limb's shape begins: the first joint followed by a long segment.

    Hips and shoulders built from stacked joints start with short sideways
    offsets that a human limb does not have; comparing shapes from there on
    keeps those offsets from tilting the whole limb.
    """
    seg = _lengths(sk.points[path[: tip + 1]])
    total = seg[base:tip].sum()
    first = next((k for k in range(base, tip) if seg[k] > 0.15 * total), base)
    return sk.names[path[first]] if first > base else None


def _joint_before(sk: Skeleton, path: list[int], base: int, tip: int) -> int:
    """The middle joint of a limb (knee, elbow): where the last long segment before the tip starts."""
    seg = _lengths(sk.polyline(path))[:tip]
    long = [k for k in range(base, tip) if seg[k] > 0.15 * seg[base:tip].sum()]
    return long[-1] if long and long[-1] > base else max(base, tip - 1)
