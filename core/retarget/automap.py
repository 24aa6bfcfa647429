"""Fill a chain mapping automatically for characters and robots never seen before.

The body parts come from core.retarget.body_parts (topology and the clip's typical
posture, never the file's rest pose); this module pairs them into chains (spine,
legs to the toes, arms to the wrists, hands, head), decides left and right, and
says in the mapping's notes what it guessed.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..feet.geometry import body_points, standing_rotation
from ..model.kinematics import KinematicTree
from ..model.reroot import hung_from
from ..chains.mapping import ChainMapping, Mapping
from ..motion.robot_source import tail_offsets
from ..motion.source import SourceMotion
from . import names as name_words
from .body_parts import BodyParts, Skeleton, find_body_parts, robot_skeleton, segment_lengths, source_skeleton
from .facing import solved_robot, up_note


# Where the hand goes is what a viewer reads first; where a robot elbow cannot fold as far as
# a human's, the wrist direction should win over the forearm's shape (walk onto G1: right arm
# tip-direction error 2.7 deg at the chain default 3, 1.6 deg at 8, mean distance +0.002).
ARM_TIP_WEIGHT = 8.0


class AutoMapError(ValueError):
    """Nothing mappable was found; the message says what was looked for."""


def _segments(sk: Skeleton, path: list[int]) -> list[tuple[int, int, float]]:
    """(first point, last point, length) of each rigid segment along a limb's polyline: bones
    that only split one segment (twist bones, Rigify's thigh and thigh.001) count as one."""
    seg = segment_lengths(sk.polyline(path))
    out: list[list] = []
    for k, length in enumerate(seg):
        if out and k < len(path) and sk.continues[path[k]]:
            out[-1][1], out[-1][2] = k + 1, out[-1][2] + length
        else:
            out.append([k, k + 1, float(length)])
    return [tuple(s) for s in out]


def _limb_span(sk: Skeleton, path: list[int], robot: bool) -> tuple[int, int]:
    """(base, tip) positions in `path`: the limb's first joint and its wrist or ankle.

    The tip is where the last long segment ends (hand and foot segments are
    short); the base is the first movable link (robot) or the start of the two
    long segments before the tip (a character's thigh or upper arm). The last
    node's own segment counts too: an arm that ends at an End Site after the
    elbow has its wrist there, at tip == len(path) (the last bone's tail).
    """
    segments = _segments(sk, path)
    total = sum(length for _, _, length in segments)
    if total <= 0:
        return 0, 0
    long = [(a, b) for a, b, length in segments if length > 0.15 * total]
    tip = long[-1][1]
    if robot:
        base = next((k for k, n in enumerate(path) if sk.movable[n]), 0)
    else:
        base = long[-2][0] if len(long) > 1 else max(tip - 2, 0)
    return min(base, tip - 1), tip


def _span_path(sk: Skeleton, path: list[int], robot: bool, role: str) -> list[int]:
    """The part of a limb path that decides its tip: a robot leg stops at its last joint."""
    if robot and role == "leg":
        last = max((k for k, n in enumerate(path) if sk.movable[n]), default=len(path) - 1)
        return path[: last + 1]
    return path


def _sides(sk: Skeleton, limbs: list[list[int]], forward: np.ndarray, what: str) -> list[str]:
    """Left/right per limb: from names when they say so, else from the body's geometry (the
    limbs' mean positions across the facing direction); a disagreement goes into the notes."""
    left_axis = np.cross([0.0, 0.0, 1.0], forward)
    # whole limbs, not their first joints: a hip or collar joint often sits on the midline
    means = [sk.points[p].mean(axis=0) for p in limbs]
    centre = np.mean(means, axis=0)
    across = [float(np.dot(m - centre, left_axis)) for m in means]
    seen = ["left" if a >= 0 else "right" for a in across]
    if len(set(seen)) < len(seen):
        order = np.argsort(across)
        seen = ["right" if k == order[0] else "left" for k in range(len(limbs))]
    named = [name_words.side(sk.names[p[0]]) or name_words.side(sk.names[p[-1]]) for p in limbs]
    bones = " and ".join(sk.names[p[0]] for p in limbs)
    if sorted(named) == ["left", "right"]:
        if len(limbs) == 2 and named != seen:
            sk.notes.append(f"{what} {bones}: the names say {'/'.join(named)}, the posture says "
                            f"{'/'.join(seen)}; followed the names (a mirrored rig maps mirrored)")
        return named
    if len(limbs) == 2:
        sk.notes.append(f"{what} {bones}: the names do not say left and right; took "
                        f"{'/'.join(seen)} from where they are, facing where the feet point")
    return seen


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
    mean of its forward-most geometry (x is forward in a URDF base, REP 103),
    measured with the foot laid level on its sole (core.feet.geometry.standing_rotation):
    a zero pose with bent knees pitches the foot, and its forward-most points were
    then another part of it (Talos with its knees zeroed 0.6 rad bent: ankles 39
    degrees off). A foot modelled by meshes only is measured on their hull points,
    so its sole link ends the leg chain even when no primitive marks the toe.
    """
    zero = tree.zero_pose()
    below = [ankle]
    for i in range(len(tree.link_names)):
        if tree.parent[i] in below:
            below.append(i)
    foot = max((i for i in below if tree.qindex[i] >= 0), key=tree.depth, default=ankle)
    level = standing_rotation(body_points(tree, foot), zero[foot, :3, :3])
    turn, about = level @ zero[foot, :3, :3].T, zero[foot, :3, 3]  # lays the foot level about its origin
    points = []
    for i in below:
        link = tree.robot.links[tree.link_names[i]]
        points.append(zero[i, :3, 3])
        for geom in list(link.collisions) + list(link.visuals):
            if geom.kind != "mesh":
                points.append((zero[i] @ geom.origin)[:3, 3])
    points = (np.array(points) - about) @ turn.T + about
    ankle_x = ((zero[ankle, :3, 3] - about) @ turn.T + about)[0]
    if points[:, 0].max() - ankle_x < 0.02:  # no primitive shows the toe: the meshes do
        hulls = [body_points(tree, i) for i in below]
        laid = [(b.points @ zero[b.link, :3, :3].T + zero[b.link, :3, 3] - about) @ turn.T + about for b in hulls]
        points = np.concatenate([points] + laid)
    forward = points[:, 0]
    if forward.max() - ankle_x < 0.02:
        return None
    toe = points[forward >= forward.max() - 0.01].mean(axis=0)
    toe[1] = about[1]  # centre the toe across the foot
    local = level.T @ (toe - about)
    return foot, [float(v) for v in local]


AUTO_MAP_FRAMES = 120  # frames of a clip auto-map looks at (evenly spread)


def automap_frames(first: int, last: int, count: int = AUTO_MAP_FRAMES) -> np.ndarray:
    """Up to `count` whole frames spread evenly over first..last: auto-map reads the body from
    the motion, not from one pose (the same frames in Blender and headless)."""
    return np.unique(np.round(np.linspace(first, last, min(count, last - first + 1))))


def auto_map(motion: SourceMotion, tree: KinematicTree) -> Mapping:
    """A mapping from the clip's skeleton to the robot: spine, legs, feet, arms, hands, head.

    A robot whose legs hang from a link below its root (a URDF rooted at the torso) is
    mapped as seen from that link, its pelvis: `Mapping.robot_root` names it and the
    retarget solves on the robot re-rooted there (core.model.reroot).
    """
    src_sk = source_skeleton(motion)
    src = find_body_parts(src_sk)
    tree, rob_sk, rob = robot_body(tree)
    if not rob.legs and not rob.arms:
        raise AutoMapError(f"robot {tree.robot.name!r}: found no legs or arms (no jointed branches). "
                           f"{_found(rob_sk, rob, 'the robot')} Map the chains by hand (Robot tab > Chains).")
    facing = _source_forward(src_sk, src)
    src_legs = dict(zip(_sides(src_sk, src.legs, facing, "legs"), src.legs)) if src.legs else {}
    src_arms = dict(zip(_sides(src_sk, src.arms, facing, "arms"), src.arms)) if src.arms else {}
    forward = tree.zero_pose()[0, :3, 0]  # x is forward in a URDF base (REP 103)
    rob_legs = dict(zip(_sides(rob_sk, rob.legs, forward, "legs"), rob.legs)) if rob.legs else {}
    rob_arms = dict(zip(_sides(rob_sk, rob.arms, forward, "arms"), _apart(rob_sk, rob.arms))) if len(rob.arms) == 2 else {}
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
        raise AutoMapError(f"source {motion.name!r} onto robot {tree.robot.name!r}: no chain to map. "
                           f"{_found(src_sk, src, 'the source')} {_found(rob_sk, rob, 'the robot')} "
                           "Map the chains by hand (Robot tab > Chains) or load a mapping preset.")
    if _is_this_robot(motion, tree):
        chains = [_identity(tree, c) for c in chains]
    chains = [_validated(src_sk, rob_sk, c) for c in chains]
    for sk in (src_sk, rob_sk):
        if sk.helpers:
            sk.notes.insert(0, f"not limb ends (named as rig helpers or props): {', '.join(sorted(sk.helpers))}")
    notes = [f"source: {n}" for n in src_sk.notes] + [f"robot: {n}" for n in rob_sk.notes]
    notes += _missing(src_sk, src, rob_sk, rob, chains)
    return Mapping(chains, src_sk.names[src.pelvis], rob_sk.names[rob.pelvis], notes=notes)


SHARED_BASE_M = 0.01  # two arms whose first joints are closer than this start at one point (a sternum)


def _apart(sk: Skeleton, arms: list[list[int]]) -> list[list[int]]:
    """Two robot arms from where their joints first stand apart: clavicles jointed at the sternum (example-robot-
    data's human.urdf) gave both arms, and the spine's two tips, one base point, and no shoulder line to turn
    the torso by (its orientation 90 degrees off); the arms then start at the joints after (the shoulders), as a
    character's do, the spine reaching them through the clavicles (said in the notes)."""
    arms = [list(arm) for arm in arms]
    moved = []
    while True:
        firsts = [next((k for k, n in enumerate(arm) if sk.movable[n]), None) for arm in arms]
        if None in firsts or np.linalg.norm(sk.points[arms[0][firsts[0]]] - sk.points[arms[1][firsts[1]]]) \
                >= SHARED_BASE_M:
            break
        rests = [arm[k + 1:] for arm, k in zip(arms, firsts)]
        if not all(any(sk.movable[n] for n in rest) for rest in rests):
            break
        moved += [sk.names[arm[k]] for arm, k in zip(arms, firsts)]
        arms = rests
    if moved:
        sk.notes.append(f"the arms' first joints ({', '.join(moved)}) stand at one point: the arms start at the "
                        "joints after them (the spine reaches them through those joints)")
    return arms


def robot_body(tree: KinematicTree) -> tuple[KinematicTree, Skeleton, BodyParts]:
    """The robot's tree, skeleton and body parts seen from its pelvis: a URDF rooted above it
    (a world frame) or below it (the torso) is hung from the pelvis, and so is a humanoid's
    rooted in a leg (at a foot, a knee), whose legs only show from the middle of the body; a
    legged robot's root frame is turned to face where its body does (core.retarget.facing)."""
    hung, sk, parts = _hung_body(tree)
    if not parts.legs:
        return hung, sk, parts
    turned, _ = solved_robot(tree, sk.names[parts.pelvis])
    note = up_note(tree, sk.names[parts.pelvis])
    if note is not None:
        sk.notes.append(note)
    if turned is hung:
        return hung, sk, parts
    turned_sk = robot_skeleton(turned)
    turned_parts = find_body_parts(turned_sk)
    turned_sk.notes, turned_sk.helpers = sk.notes, sk.helpers | turned_sk.helpers  # the same body, said once
    return turned, turned_sk, turned_parts


def _hung_body(tree: KinematicTree) -> tuple[KinematicTree, Skeleton, BodyParts]:
    """robot_body before the facing turn."""
    rob_sk = robot_skeleton(tree)
    rob = find_body_parts(rob_sk)
    if not (rob.legs and rob.arms):  # rooted in a leg, the parts found from the root are not the body's
        middle, _ = hung_from(tree, rob_sk.names[_centroid(rob_sk)])
        middle_sk = robot_skeleton(middle)
        parts = find_body_parts(middle_sk)
        root = tree.robot.root_link
        if any(root in (middle_sk.names[n] for n in leg) for leg in parts.legs):
            pelvis = middle_sk.names[parts.pelvis]
            hung, _ = hung_from(tree, pelvis)
            hung_sk = robot_skeleton(hung)
            hung_parts = find_body_parts(hung_sk)
            if len(hung_parts.legs) == 2 and len(hung_parts.arms) == 2:  # not an arm's fingers taken for legs
                hung_sk.notes.append(f"the URDF is rooted at {root}, in a leg: mapped from {pelvis} as the pelvis")
                return hung, hung_sk, hung_parts
    if rob.legs and rob.pelvis != 0:
        tree, _ = hung_from(tree, rob_sk.names[rob.pelvis])
        rob_sk = robot_skeleton(tree)
        rob = find_body_parts(rob_sk)
    return tree, rob_sk, rob


def _centroid(sk: Skeleton) -> int:
    """The link whose removal leaves the smallest largest piece of the body (a tree's centroid):
    the middle of the robot, wherever its URDF is rooted."""
    n = len(sk.names)
    size = np.ones(n, dtype=int)
    for i in range(n - 1, 0, -1):  # parents come before their children
        if sk.parents[i] >= 0:
            size[sk.parents[i]] += size[i]
    pieces = [max([n - size[i]] + [size[c] for c in sk.children(i)]) for i in range(n)]
    return int(np.argmin(pieces))


def _found(sk: Skeleton, parts: BodyParts, who: str) -> str:
    """What `who` looks like, in words: its legs, arms and longest branch."""
    if parts.legs or parts.arms:
        return f"In {who}: {len(parts.legs)} leg(s), {len(parts.arms)} arm(s)."
    roots = [n for n in range(len(sk.names)) if sk.parents[n] < 0]
    leaves = [n for n in range(len(sk.names)) if not sk.children(n)]
    if not roots or not leaves:
        return f"{who.capitalize()} is empty."
    longest = max(leaves, key=lambda leaf: segment_lengths(sk.polyline(sk.path_to(roots[0], leaf))).sum()
                  if leaf in sk.descendants(roots[0]) else -1.0)
    path = sk.path_to(roots[0], longest)
    shape = "a single chain (an arm or a tail?)" if len(leaves) <= 2 else f"a tree with {len(leaves)} ends"
    return (f"{who.capitalize()} has no pair of legs and no arms: it looks like {shape}; its longest branch "
            f"runs {sk.names[path[0]]} to {sk.names[path[-1]]} ({len(path)} bones).")


def _missing(src_sk, src, rob_sk, rob, chains) -> list[str]:
    """Notes on body parts one side has and the other lacks (what the bake will leave still)."""
    notes = []
    names = {c.role for c in chains}
    if src.legs and not rob.legs:
        notes.append("robot: no legs; the source's legs are not used and the robot's base stays fixed")
    if rob.legs and not src.legs:
        named = [n for n in src_sk.names if name_words.role(n) == "leg"]
        if named:  # leg bones that do not end low: the clip is upside down or lying
            notes.append(f"source: bones named like legs ({', '.join(named[:3])}...) do not end near the ground: "
                         "is the clip upside down or lying? (a file read with the wrong up axis: Blender's BVH "
                         "import Up axis, the CLI's --source-up Y or Z)")
        else:
            notes.append("source: no pair of legs found (an upper-body clip?): the robot's legs keep their neutral pose")
    if rob.arms and not src.arms:
        notes.append("source: no arms found: the robot's arms keep their neutral pose")
    if len(rob.arms) == 1:
        notes.append("robot: one arm (a manipulator): driven by the actor's right arm")
    if "spine" not in names and src.legs and rob.legs and len(rob.arms) == 2:
        notes.append("no spine chain: the source has no arms, so the robot's torso keeps its neutral pose"
                     if not src.arms else "no spine chain: the arms were not found on both sides")
    return notes


def _validated(src_sk: Skeleton, rob_sk: Skeleton, chain: ChainMapping) -> ChainMapping:
    """The chain as auto-map will hand it over: landmarks that do not run from base to tip on
    both sides are dropped (the chain is solved without them), and a leg whose base is not
    above its tip in the posture is noted; every step says so in the skeletons' notes."""
    ok = True
    for sk, base, tips, marks in ((src_sk, chain.source_base, chain.source_tips, chain.source_landmarks),
                                  (rob_sk, chain.robot_base, chain.robot_tips, chain.robot_landmarks)):
        path = sk.path_to(sk.names.index(base), sk.names.index(tips[0]))
        order = [path.index(sk.names.index(m)) if m in sk.names and sk.names.index(m) in path else -1
                 for m in marks or []]
        ok = ok and all(0 <= a < b for a, b in zip([0] + order, order)) and all(k >= 0 for k in order)
        if chain.role == "leg" and sk.points[path[0], 2] <= sk.points[path[-1], 2]:
            sk.notes.append(f"{chain.name}: its base {base} is not above its tip {tips[0]} in the posture")
    if not ok:
        src_sk.notes.append(f"{chain.name}: landmarks {chain.source_landmarks} / {chain.robot_landmarks} do not "
                            "run from base to tip on both sides; mapped without them")
        chain = replace(chain, source_landmarks=None, robot_landmarks=None)
    return chain


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
    # A wrist of stacked joints with no link beyond (all at one point) has no shape to aim: no hand.
    if (role == "arm" and src_end and len(rob_end) >= 2 and any(rob_sk.movable[n] for n in rob_end[:-1])
            and segment_lengths(rob_sk.points[rob_end]).sum() > 1e-6):
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
    seg = segment_lengths(sk.points[path[: tip + 1]])
    total = seg[base:tip].sum()
    first = next((k for k in range(base, tip) if seg[k] > 0.15 * total), base)
    return sk.names[path[first]] if first > base else None


def _joint_before(sk: Skeleton, path: list[int], base: int, tip: int) -> int:
    """The middle joint of a limb (knee, elbow): where the last long segment before the tip starts."""
    segments = [(a, b, length) for a, b, length in _segments(sk, path) if a >= base and b <= tip]
    total = sum(length for _, _, length in segments)
    long = [a for a, _, length in segments if length > 0.15 * total]
    return long[-1] if long and long[-1] > base else max(base, tip - 1)
