"""Where the body parts are in a skeleton or a robot: legs, arms, head, pelvis.

Structure comes from topology and the geometry of a typical posture: feet are the
leaves lowest over the clip, the pelvis is where the legs meet, the arms are the
two long branches of the torso; never the file's rest pose. Names say which
leaves are rig helpers or props. What was guessed rather than seen goes into
the skeleton's notes, which auto-map reports.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..model.kinematics import PRISMATIC, KinematicTree
from ..motion.source import SourceMotion
from . import names as name_words

# A foot's end stays within this share of the body's height above its lowest point (median over
# the clip); hands hanging at the sides are at 0.4-0.5.
FOOT_HEIGHT = 0.3
ARM_PAIR_REACH = 0.7  # a legless robot's second branch reaching this share of the first's is its other arm
STANDING_COS = np.cos(np.radians(45.0))  # legs hanging and the body rising within 45 degrees of the vertical
LIMB_SHARE = 0.2  # a standing humanoid's legs and arms are each at least this share of its height (G1: 0.35-0.5)


@dataclass
class Skeleton:
    """The shape both sides share for mapping: nodes with joint positions in a typical posture."""

    names: list[str]
    parents: np.ndarray
    points: np.ndarray  # (N, 3) joint positions, metres, Z up
    ends: np.ndarray  # (N, 3) end of each leaf's own segment (bone tail, toe point)
    movable: np.ndarray  # (N,) bool
    low: np.ndarray | None = None  # (N,) height of each end above the body's lowest point, share of its height
    notes: list[str] = field(default_factory=list)  # what was guessed, in words, for the report
    helpers: set[str] = field(default_factory=set)  # leaves passed over as rig helpers or props
    continues: np.ndarray | None = None  # (N,) bool: the bone only continues its parent's segment
    sliding: np.ndarray | None = None  # (N,) bool: the node's joint slides (a robot's prismatic lift)
    robot: bool = False  # movable says which links have a joint, not which bones move in the clip

    def __post_init__(self):
        if self.low is None:
            self.low = relative_heights(self.points[None], self.ends[None])[0]
        if self.continues is None:
            self.continues = np.zeros(len(self.names), dtype=bool)
        if self.sliding is None:
            self.sliding = np.zeros(len(self.names), dtype=bool)

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
    if (markers := end_markers(motion)).any():
        motion = motion.without_leaves(markers)
    moving = motion.frames > 0 and np.isfinite(motion.heads).all()
    if not moving:
        return Skeleton(list(motion.bone_names), np.asarray(motion.parents), motion.rest_heads,
                        motion.rest_tails, np.ones(len(motion.bone_names), dtype=bool))
    f = reference_frame(motion)
    body = np.array([not name_words.auxiliary(n) for n in motion.bone_names])
    low = np.median(relative_heights(motion.heads, motion.tails, body), axis=0)
    return Skeleton(list(motion.bone_names), np.asarray(motion.parents), motion.heads[f],
                    motion.tails[f], moving_bones(motion), low, continues=continuing_bones(motion))


def end_markers(motion: SourceMotion) -> np.ndarray:
    """(B,) bool: leaf bones that only mark where their parent ends (an FBX's leaf bones, on by
    default in Blender's exporter: `Foot_end` from the foot's end, as long again). Named so, starting
    at the parent's end and never turning against it; their own far end is no point of the body,
    so the skeleton is read without them (a head's leaf outreached the arms and was mapped as one)."""
    out = np.zeros(len(motion.bone_names), dtype=bool)
    parents = np.asarray(motion.parents)
    named = [i for i, p in enumerate(parents)
             if p >= 0 and i not in parents and name_words.end_marker(motion.bone_names[i])]
    if not named:  # most clips: no bone is named so, and nothing is measured
        return out
    rigid = ~moving_bones(motion) if motion.frames >= 3 else np.ones(len(out), dtype=bool)
    for i in named:
        p = parents[i]
        if not rigid[i]:
            continue
        length = np.linalg.norm(motion.tails[:, p] - motion.heads[:, p], axis=1)
        gap = np.linalg.norm(motion.heads[:, i] - motion.tails[:, p], axis=1)
        out[i] = bool(np.all(gap <= np.maximum(0.02 * length, 1e-4)))
    return out


RIGID_DEG = 0.5  # a bone that keeps its angle to its parent within this over the clip is fixed to it


def moving_bones(motion: SourceMotion) -> np.ndarray:
    """(B,) bool: bones that turn against their parent somewhere in the clip. A robot's camera
    link, a prop or a face bone glued to the head never does; a captured joint always jitters.
    A clip of one or two frames shows nothing: every bone counts as moving."""
    out = np.ones(len(motion.bone_names), dtype=bool)
    if motion.frames < 3:
        return out
    vec = motion.tails - motion.heads
    unit = vec / np.maximum(np.linalg.norm(vec, axis=2, keepdims=True), 1e-12)
    for i, p in enumerate(motion.parents):
        if p < 0:
            continue
        angle = np.degrees(np.arccos(np.clip(np.einsum("fk,fk->f", unit[:, i], unit[:, p]), -1.0, 1.0)))
        reach = np.linalg.norm(motion.tails[:, i] - motion.heads[:, p], axis=1)
        out[i] = np.ptp(angle) > RIGID_DEG or np.ptp(reach) > 1e-3
    return out


SPLIT_DEG = 2.0  # a bone whose direction never leaves its parent's by more than this splits one segment


def continuing_bones(motion: SourceMotion) -> np.ndarray:
    """(B,) bool: bones that start where their parent ends, point along it on every frame and are
    named as its continuation, so the two are one rigid segment cut in two (twist bones,
    Rigify's thigh and thigh.001). A knee or an elbow that happens not to bend in a clip is
    still its own joint: the name has to say so too."""
    out = np.zeros(len(motion.bone_names), dtype=bool)
    direction = motion.tails - motion.heads
    length = np.linalg.norm(direction, axis=2)
    unit = direction / np.maximum(length, 1e-12)[..., None]
    for i, p in enumerate(motion.parents):
        if p < 0 or motion.frames < 2 or not name_words.continues(motion.bone_names[i], motion.bone_names[p]):
            continue
        joined = np.linalg.norm(motion.heads[:, i] - motion.tails[:, p], axis=1) <= 0.05 * np.maximum(length[:, p], 1e-9)
        cos = np.clip(np.einsum("fk,fk->f", unit[:, i], unit[:, p]), -1.0, 1.0)
        out[i] = bool(joined.all() and np.degrees(np.arccos(cos)).max() <= SPLIT_DEG)
    return out


def reference_frame(motion: SourceMotion) -> int:
    """The frame closest to the clip's median posture (positions relative to the root bone).

    A file's rest pose may be no posture at all (every bone along its parent's X); the
    animated frames are the actor, and the median ignores a calibration T-pose at the start.
    """
    rel = np.concatenate([motion.heads, motion.tails], axis=1) - motion.heads[:, :1]
    rel = np.nan_to_num(rel, nan=0.0)
    return int(np.argmin(np.abs(rel - np.median(rel, axis=0)).sum(axis=(1, 2))))


def robot_skeleton(tree: KinematicTree) -> Skeleton:
    """The robot's links in its zero pose, read upright: in its root frame turned by upright_turn
    (a URDF written Y-up is read standing, not lying on its back)."""
    turn = upright_turn(tree)
    return _robot_reading(tree, np.eye(3) if turn is None else turn)


def _robot_reading(tree: KinematicTree, turn: np.ndarray) -> Skeleton:
    """The skeleton with its points in the root frame turned by `turn` (3, 3): columns the new axes."""
    points = tree.zero_pose()[:, :3, 3] @ turn
    return Skeleton(list(tree.link_names), tree.parent.copy(), points, points.copy(), tree.qindex >= 0,
                    sliding=tree.kind == PRISMATIC, robot=True)


def upright_turn(tree: KinematicTree) -> np.ndarray | None:
    """The turn (3, 3) of `tree`'s root frame whose z is the robot's up, when a humanoid does not
    stand along the root's +z (a URDF written Y-up); None when it does, or when no axis reads as
    a standing humanoid (arms, manipulators, quadrupeds keep their frame). Found from the body,
    gravity-free: the root frame's six axis directions are tried as up, and one reads as standing
    when two legs hang from the hips and two arms leave the torso above them; of those, the one
    most along the feet-to-shoulders direction. Cached on the tree."""
    cache = tree.__dict__.setdefault("_upright", {})
    if "turn" not in cache:
        cache["turn"] = _upright_turn(tree)
    return cache["turn"]


def _upright_turn(tree: KinematicTree) -> np.ndarray | None:
    if _standing(_robot_reading(tree, np.eye(3))) is not None:
        return None
    best, turn = STANDING_COS, None
    for axis in (*np.eye(3), *-np.eye(3)):
        if axis[2] == 1.0:
            continue
        candidate = _turn_to(axis)
        score = _standing(_robot_reading(tree, candidate))
        if score is not None and score > best:
            best, turn = score, candidate
    return turn


def _turn_to(up: np.ndarray) -> np.ndarray:
    """The smallest turn (3, 3) whose z column is the unit axis `up` (about x when up is -z)."""
    z = np.array([0.0, 0.0, 1.0])
    axis = np.cross(z, up)
    if np.linalg.norm(axis) < 1e-12:
        axis = np.array([1.0, 0.0, 0.0])
    axis = axis / np.linalg.norm(axis)
    angle = float(np.arccos(np.clip(up @ z, -1.0, 1.0)))
    k = np.array([[0.0, -axis[2], axis[1]], [axis[2], 0.0, -axis[0]], [-axis[1], axis[0], 0.0]])
    return np.round(np.eye(3) + np.sin(angle) * k + (1.0 - np.cos(angle)) * k @ k, 12)


def _standing(sk: Skeleton) -> float | None:
    """How upright a humanoid stands in this reading (the cosine of the feet-to-shoulders direction
    with +z), None when it is not a standing humanoid: two legs whose hips are above their ankles
    within STANDING_COS of straight down, two arms, shoulders above the hips, each limb at least
    LIMB_SHARE of the body's height long."""
    parts = find_body_parts(sk)
    if len(parts.legs) != 2 or len(parts.arms) != 2:
        return None
    height = float(np.ptp(sk.points[:, 2]))
    if min(_path_length(sk, limb) for limb in parts.legs + parts.arms) < LIMB_SHARE * height:
        return None  # a stub taken for a limb (a quadruped on its side: a hip's collision link as a leg)
    for leg in parts.legs:
        drop = sk.points[leg[0]] - sk.points[leg[-1]]
        if drop[2] < STANDING_COS * np.linalg.norm(drop):
            return None
    shoulders = np.mean([sk.points[arm[0]] for arm in parts.arms], axis=0)
    if shoulders[2] <= sk.points[parts.pelvis, 2]:
        return None
    rise = shoulders - np.mean([sk.points[leg[-1]] for leg in parts.legs], axis=0)
    return float(rise[2] / max(np.linalg.norm(rise), 1e-9))


def segment_lengths(poly: np.ndarray) -> np.ndarray:
    return np.linalg.norm(np.diff(poly, axis=0), axis=1)


def _longest_path(sk: Skeleton, start: int, low: bool = False) -> list[int]:
    """Path from `start` to its farthest leaf (by arc length; lowest leaf first when `low`).

    Leaves named as rig helpers or props (an IK target, a sword) end no limb when the
    body offers another leaf.
    """
    leaves = _body_leaves(sk, [d for d in sk.descendants(start) if not sk.children(d)])
    def score(leaf):
        path = sk.path_to(start, leaf)
        length = segment_lengths(sk.polyline(path)).sum()
        return (-sk.low[leaf], length) if low else (length,)
    return sk.path_to(start, max(leaves, key=score))


def _body_leaves(sk: Skeleton, leaves: list[int]) -> list[int]:
    """The leaves that are not named as helpers or props (all of them when every one is)."""
    body = [n for n in leaves if not name_words.auxiliary(sk.names[n])]
    if body:
        sk.helpers.update(sk.names[n] for n in set(leaves) - set(body))
    return body or leaves


def _path_length(sk: Skeleton, path: list[int]) -> float:
    return float(segment_lengths(sk.polyline(path)).sum())


def _matched(sk: Skeleton, paths: list[list[int]]) -> list[list[int]]:
    """Two limbs of a pair end at leaves of similar reach: a prop or a long extra bone on one
    side (scrambled names say nothing) gives way to the leaf that matches the other side."""
    if len(paths) != 2:
        return paths
    lengths = [_path_length(sk, p) for p in paths]
    short, long = (0, 1) if lengths[0] <= lengths[1] else (1, 0)
    if lengths[long] <= 1.3 * lengths[short] or lengths[short] <= 0.0:  # a limb of no length matches nothing
        return paths
    start = paths[long][0]
    leaves = [d for d in sk.descendants(start) if not sk.children(d)]
    best = min(leaves, key=lambda leaf: abs(_path_length(sk, sk.path_to(start, leaf)) - lengths[short]))
    out = list(paths)
    out[long] = sk.path_to(start, best)
    sk.notes.append(f"{sk.names[paths[long][-1]]} reaches {lengths[long] / lengths[short]:.1f} times as far as "
                    f"{sk.names[paths[short][-1]]} on the other side: ended that limb at {sk.names[best]} instead")
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
    leg_roots: list[int] = []
    if len(feet) >= 2:
        pelvis = _lca(sk, feet)
        leg_roots = [c for c in sk.children(pelvis) if any(f in sk.descendants(c) for f in feet)]
        # the two longest branches that reach a foot: a helper bone near the ground is no leg
        reach = {c: _path_length(sk, _longest_path(sk, c, low=True)) for c in leg_roots}
        # a frame is no leg, nor a robot's branch without a joint (a gripper's fixed fingers hanging lowest)
        leg_roots = sorted((c for c in leg_roots if reach[c] > 0 and (_jointed(sk, c) or not sk.robot)),
                           key=lambda c: -reach[c])[:2]
        leg_roots = sorted(leg_roots)
    if len(leg_roots) < 2:
        pelvis, leg_roots = roots[0], []
    legs = _matched(sk, [_longest_path(sk, c, low=True) for c in leg_roots]) if len(leg_roots) >= 2 else []
    if legs and all(_named(sk, leg) == "arm" for leg in legs):
        # an upper body with its arms hanging lowest (a torso on a stand): arms, not legs
        sk.notes.append(f"the lowest limbs ({', '.join(sk.names[leg[0]] for leg in legs)}) are named as arms: "
                        "mapped as arms, no legs")
        return BodyParts(roots[0], [], legs, None)
    others = [c for c in sk.children(pelvis) if c not in leg_roots]
    if not legs:
        others = [pelvis]
    arms, head = [], None
    if others:
        leg_len = np.mean([segment_lengths(sk.polyline(p)).sum() for p in legs]) if legs else 0.0
        spine = max(others, key=lambda c: segment_lengths(sk.polyline(_longest_path(sk, c))).sum())
        hub, branches = _arm_hub(sk, spine, 0.25 * leg_len)
        if hub is not None and not legs:
            hub, branches = _two_armed_hub(sk, hub, branches)
        if hub is not None:
            ranked = _ranked(sk, branches)
            count = 2 if legs or _paired(sk, ranked) else 1
            arms = _matched(sk, [_past_lift(sk, _longest_path(sk, b)) for b in ranked[:count]])
            rest = [b for b in ranked[2:] if segment_lengths(sk.polyline(_longest_path(sk, b))).sum() > 0]
            top = max(rest, key=lambda b: max(sk.low[d] for d in sk.descendants(b)), default=None)
            head = _longest_path(sk, top) if top is not None and legs else None
    return BodyParts(pelvis, legs, arms, head)


def _ranked(sk: Skeleton, branches: list[int]) -> list[int]:
    """Arms first: jointed branches, farthest reaching from the chest first (a head with a face
    rig has more bone length, many small bones, but less reach)."""
    return sorted(branches, key=lambda b: (-_jointed(sk, b), -_reach(sk, b)))


def _two_armed_hub(sk: Skeleton, hub: int, branches: list[int]) -> tuple[int, list[int]]:
    """Without legs, fixed branches at the base (collision helpers, a pedestal, wheels) make no
    chest: where the hub has one jointed branch that splits into two arms reaching alike further
    on (Baxter's torso, Tiago's above its lift), that split is the chest; otherwise the hub stays."""
    inner, split = hub, branches
    while not _paired(sk, _ranked(sk, split)):
        # down the body (fixed links, a sliding lift) past wheels and casters to the torso (Tiago's)
        ranked = [b for b in _ranked(sk, split) if _jointed(sk, b)]
        if not ranked or (sk.robot and sk.movable[ranked[0]] and not sk.sliding[ranked[0]]):
            return hub, branches  # a robot's turning joint: the arm itself begins
        inner, split = _arm_hub(sk, ranked[0], 0.0)
        if inner is None:
            return hub, branches
    return inner, split


def _past_lift(sk: Skeleton, path: list[int]) -> list[int]:
    """A robot arm from its first turning joint on: a lift that slides the arm up and down and the
    column it rides on are the body's (Tiago's torso lift, 0.35 m, took the arm's place)."""
    turning = [k for k, n in enumerate(path) if sk.movable[n] and not sk.sliding[n]]
    if not turning or not sk.sliding[path[:turning[0]]].any():
        return path
    return path[turning[0]:]


def _paired(sk: Skeleton, ranked: list[int]) -> bool:
    """Two arms on a robot without legs (a dual-arm torso): its two farthest-reaching jointed
    branches reach alike; a single manipulator's other branches (a head, a camera) do not."""
    if len(ranked) < 2 or not (_jointed(sk, ranked[0]) and _jointed(sk, ranked[1])):
        return False
    return _reach(sk, ranked[1]) >= ARM_PAIR_REACH * _reach(sk, ranked[0])


def _named(sk: Skeleton, path: list[int]) -> str:
    """The role most of a limb's names say ("leg", "arm", ...) when three quarters agree, else ""."""
    role, share = name_words.majority_role([sk.names[n] for n in path])
    return role if share >= 0.75 else ""


def _jointed(sk: Skeleton, branch: int) -> bool:
    """A robot branch with a joint in it (an arm) before a fixed one (a camera, a lidar)."""
    return bool(sk.movable[sk.descendants(branch)].any())


def _reach(sk: Skeleton, branch: int) -> float:
    """How far a branch's joints and ends get from where it leaves the hub (metres, in the
    posture): from the hub's joint, a spine of one bone whose arms and neck start at the chest,
    its joint at the hips, had the neck reach as far as an arm and mapped as one."""
    nodes = sk.descendants(branch)
    points = np.concatenate([sk.points[nodes], sk.ends[nodes]])
    return float(np.linalg.norm(points - sk.points[branch], axis=1).max())


def _arm_hub(sk: Skeleton, start: int, min_length: float):
    """First node below `start` with two or more long branches (the chest), or the arm's root."""
    node = start
    while True:
        kids = sk.children(node)
        long = [k for k in kids if segment_lengths(sk.polyline(_longest_path(sk, k))).sum()
                + np.linalg.norm(sk.points[k] - sk.points[node]) > max(min_length, 1e-6)]
        if len(long) >= 2 or (len(long) == 1 and min_length == 0 and sk.movable[long[0]]):
            return node, long
        if not kids:
            return None, []
        node = max(kids, key=lambda k: segment_lengths(sk.polyline(_longest_path(sk, k))).sum())


