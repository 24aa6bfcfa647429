"""A chain's reference-point targets moved out of the bodies it is checked against, before its solve.

An arm solved to the actor's points with no knowledge of the trunk ends inside the pelvis or the
hips on most of a G1 clip's frames; the least change that takes it out afterwards (core.chains.separation)
is a costly search. Here each of an arm's targets (but its tip) that lies closer to a checked body (posed from the
chains solved so far) than that body's radius + margin + the radius of the robot body the point
sits on (+ AIM_M) is moved out along the body's surface normal to that distance; a hand (a chain
that gives a direction: its points a few centimetres from the wrist, its body a hand's length) turns
about its origin until its body, a segment along the ray through its tip point as wide as the
hand, is as far out. The chain's own least squares then decides the arm from targets outside, and
the filter and rate limit smooth it as any other motion.

By default (ARM_POINTS False) an arm's points are not pushed (that changed nothing on the G1's clips: a point
pushed along the body's normal leaves the plane of the arm, and the least squares then moves the wrist too).
Instead (SWIVEL) the arm's points but its tip turn about the line from its origin to its tip (the shoulder-wrist
line a viewer reads) until its elbow (its first point on the tip's link, where the forearm starts) is as far
out: the arm's plane turns, the line stays.

The push is continuous in the targets and the bodies' poses (a point at or beyond its distance
does not move; deep in, it moves at most SLOPE times its distance from the body's axis; no choice
between bodies: each is cleared in turn, the same order on every frame), so two neighbouring frames,
or the same motion written in another bone convention, get nearby targets.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..model.kinematics import FIXED, KinematicTree, ancestor_path
from ..model.posing import Poser
from ..model.transforms import axis_angle_to_matrix
from .distance import dot

AIM_M = 0.05  # a target is put this far beyond its distance (G1 hop limbs 1.91 deg at 5 mm, 1.70 at 5 cm)
SLOPE = 3.0  # a point is moved at most this many times its distance from the axis out: the push's steepness
SWEEPS = 2  # rounds over a point's bodies (out of one may be into the next: the pelvis against a hip)
TURNS = 1  # rounds of a hand's turns over the bodies it is checked against (3: the same inside %, 2x the turn's cost)
HAND_SPHERES = 3  # a hand's body is taken as this many spheres along its ray, its ends included
REACH_M = 0.05  # entries further than their clearance + this on a frame are not looked at there
PROBE_TURN_DEG = 20.0  # a hand's body is taken along its tip's ray when its far end lies within this angle of it
ARM_POINTS = False  # an arm's own points pushed out too (G1 hop: the same inside %, limbs 1.85: only cost)
# an arm's elbow swivelled out about its shoulder-wrist line (G1 walk / hop limbs 1.867 / 1.700 -> 1.839 / 1.661 deg,
# jerk 1,527 / 1,625 -> 1,470 / 1,575; the forearm's two points but the tip: 1.842 / 1.680; NOTE_s31-elbow.md). Little:
# where the G1's forearm (elbow_link) is inside the torso it is at its wrist end, which a swivel barely moves
SWIVEL = True
SWIVEL_AIM_M = 0.0  # the elbow is swivelled this far beyond its clearance (1 cm: walk 1.865, hop 1.649)
SWIVEL_AT_M = 0.05  # an elbow closer to the line than this turns as if it were this far out (no turn without a lever)
SWIVEL_SWEEPS = 1  # rounds over the trunk's capsules (2: G1 hop 1.653, walk 1.835 deg, but the G1 walk's room inputs
#                    2.4e-4 rad apart between two writings of one motion, test_steady_continuity asks < 1e-4; 1: 2.9e-6)
_EPS = 1e-9


@dataclass
class TargetClearance:
    """What a chain's targets are cleared of: the still capsules (ends in their link's frame) and, per
    entry, a reference point (row) checked against one of them and the distance it is kept at; a hand's probe."""

    tree: KinematicTree
    links: list  # still links whose poses place the capsules
    capsule_link: np.ndarray  # (C,) link of each still capsule
    ends: np.ndarray  # (C, 2, 3) their ends in that link's frame
    entries: tuple  # (rows (K,), capsules (K,), clearances (K,) metres), ordered by capsule
    probe: tuple | None  # a hand's body: (entries as above (row 0), its (near, far) span in tip distances, tip row)
    swivel: tuple | None = None  # an arm's elbow: (entries as above (its row), tip row): turns about the origin-tip line

    @classmethod
    def build(cls, tree: KinematicTree, term, kin, margin: float, hand: bool = False) -> "TargetClearance | None":
        """The clearance of a chain (core.chains.solver.ChainKinematics `kin`) against its separation term's
        still capsules (core.collision.avoid.SeparationTerm over the chain's joints, None: nothing); hand:
        the chain turns its body out instead of moving its points. None when nothing is checked."""
        if term is None:
            return None
        model = term.model
        moved = term.moves.any(axis=0)  # (Q, 2) sides the chain's joints move
        one = moved[:, 0] != moved[:, 1]
        mover = np.where(moved[one, 0], term.capsules[one, 0], term.capsules[one, 1])
        still = np.where(moved[one, 0], term.capsules[one, 1], term.capsules[one, 0])
        zero = tree.zero_pose()
        # a hand's points are a few centimetres from its origin, which the arm set: it only turns; an arm's tip
        # (the wrist: the end of the line a viewer reads) stays where the actor has it, its hand turns instead
        # (pushed out, the G1 hop's limbs ended 0.39 deg further from the actor's)
        entries = []
        for row, (link, local) in enumerate(zip(kin.point_link[:-1], kin.point_local[:-1])
                                             if not hand and ARM_POINTS else ()):
            body = _body(tree, model, int(link))
            if body is not None:
                own = _own_radius(zero, model, int(link), local, body)
                entries += [(row, int(c), model.radius[c] + margin + own + AIM_M)
                            for c in np.unique(still[model.capsule_body[mover] == body])]
        probe = _probe(tree, zero, model, kin, mover, still, margin) if hand else None
        elbow = _elbow(tree, zero, model, kin, mover, still, margin) if not hand and SWIVEL else []
        if not entries and probe is None and not elbow:
            return None
        capsules = _clearing_order(tree, tree.forward(tree.neutral[None])[0], model, kin, {c for _, c, _ in entries + elbow}
                                   | {c for _, c, _ in (probe[0] if probe else [])})
        index = {int(c): k for k, c in enumerate(capsules)}
        out = cls(tree, sorted({int(link) for link in model.capsule_link[capsules]}), model.capsule_link[capsules],
                  model.ends[capsules], _entries(entries, index), None)
        if probe is not None:
            out.probe = (_entries(probe[0], index), *probe[1:])
        if elbow:
            out.swivel = (_entries(elbow, index), len(kin.point_link) - 1)
        return out

    def __call__(self, q: np.ndarray, root: np.ndarray, origin: np.ndarray, targets: np.ndarray) -> np.ndarray:
        """The targets (F, M, 3), relative to the chain's origin (F, 3) in the world, moved out of the still
        capsules posed at q (F, n) and root (F, 4, 4): a new array (the actor's targets stay as they were)."""
        ends = self._posed(q, root)  # (F, C, 2, 3) in the world
        if self.swivel is not None:  # an arm, about its origin: the frames it leaves keep the actor's targets to the bit
            targets = _swivelled(targets, ends - origin[:, None, None], *self.swivel)
            if not len(self.entries[0]):
                return targets
        points = targets + origin[:, None]
        if self.probe is not None:
            entries, span, tip = self.probe
            ray = points[:, tip] - origin
            turn = rotation_between(ray, _turned(origin, ray, span, ends, entries))  # (F, 3, 3)
            points = origin[:, None] + np.einsum("fij,fmj->fmi", turn, points - origin[:, None])
        return _cleared(points, ends, self.entries) - origin[:, None]

    def _posed(self, q: np.ndarray, root: np.ndarray) -> np.ndarray:
        """The still capsules' ends (F, C, 2, 3) in the world at q (F, n) and root (F, 4, 4): the links posed frames
        last (core.model.posing: a fifth of KinematicTree.poses' instructions, the same transforms to rounding) and
        one product a link (an einsum over frames and capsules cost most of a call)."""
        poses = Poser(self.tree, self.links)(q, root)
        ends = np.empty((len(q), len(self.ends), 2, 3))
        for link in np.unique(self.capsule_link):
            cols = np.flatnonzero(self.capsule_link == link)
            world = poses[int(link)].apply(self.ends[cols].reshape(-1, 3))  # (2 capsules, 3, F)
            ends[:, cols] = world.transpose(2, 0, 1).reshape(len(q), len(cols), 2, 3)
        return ends


def _clearing_order(tree: KinematicTree, posed: np.ndarray, model, kin, capsules: set, decimals: int = 6) -> np.ndarray:
    """The still capsules (C,) in the order they are cleared of (the pushes run one capsule after another, so
    the order decides where a target ends): by the movable joints above their link, then by how far their middle
    lies from the chain's origin in `posed` (rounded), then where: the robot's own order, not its URDF's
    (the G1 listed in another order turned its left hand 0.8 rad apart) nor a side's (a hand clears the hip on
    its own side first, either hand), nor the pose it is zeroed in: posed (L, 4, 4) is the links' poses halfway
    between their limits (KinematicTree.neutral; read in the zero pose, the G1 with its arms zeroed sideways, limits
    shifted to match, cleared its hands in another order: its avoiding walk 0.27 rad apart)."""
    link, local = kin.chain.origin
    origin = (posed[link] @ np.r_[local, 1.0])[:3]
    keys = []
    for c in capsules:
        pose = posed[int(model.capsule_link[c])]
        middle = pose[:3, :3] @ model.ends[c].mean(axis=0) + pose[:3, 3]
        keys.append((tree.movable_depth(int(model.capsule_link[c])), round(float(np.linalg.norm(middle - origin)),
                                                                          decimals),
                     *(np.round(middle, decimals) + 0.0), np.round(model.radius[c], decimals), int(c)))
    return np.array([key[-1] for key in sorted(keys)], dtype=int)


def _entries(entries: list, index: dict) -> tuple:
    """(rows (K,), capsules (K,) as indices into the still capsules, clearances (K,)), by capsule."""
    entries = sorted(entries, key=lambda entry: index[entry[1]])
    return (np.array([e[0] for e in entries], dtype=int), np.array([index[e[1]] for e in entries], dtype=int),
            np.array([e[2] for e in entries], dtype=float))


def _turned(origin: np.ndarray, ray: np.ndarray, span: tuple, ends: np.ndarray, entries: tuple) -> np.ndarray:
    """The ray (F, 3) from the origin (F, 3) through a hand's tip point turned, capsule by capsule, TURNS rounds,
    so that the hand's body (HAND_SPHERES spheres from span[0] to span[1] times the ray, out from the origin) is
    as far from each capsule (F, C, 2, 3) as its entry says: where a sphere is closer, the ray turns about the
    origin by what moves it out (`pushed`), on the frames that come within clearance + REACH_M."""
    _, capsules, clear = entries
    lo, hi = span
    length = np.linalg.norm(ray, axis=-1, keepdims=True)
    middle = (ends[:, :, 0] + ends[:, :, 1]) / 2  # (F, C, 3): ends.mean(axis=2)'s bits at a fraction of its cost
    half = 0.5 * np.linalg.norm(ends[0, :, 1] - ends[0, :, 0], axis=-1)
    centre = origin + 0.5 * (lo + hi) * ray
    gap = centre[:, None] - middle[:, capsules]
    bound = np.sqrt(dot(gap, gap)) - half[capsules] - 0.5 * (hi - lo) * length  # (F, K)
    k, f = np.nonzero((bound < clear + REACH_M).T)  # entry-major: by capsule (the entries are), frames in order
    aim = ray.copy()
    if len(f) == 0:
        return aim
    cuts = np.flatnonzero(np.diff(k)) + 1
    groups = [(f[a:b], capsules[k[a]], clear[k[a:b]]) for a, b in zip(np.r_[0, cuts], np.r_[cuts, len(f)])]
    alongs = np.linspace(lo, hi, HAND_SPHERES)  # spheres: a segment's closest point jumps when parallel
    for _ in range(TURNS):
        for frames, c, distance in groups:
            base, tip, a, b = origin[frames], aim[frames], ends[frames, c, 0], ends[frames, c, 1]
            near = _reached(base, tip, alongs, a, b, distance)  # the others stay as they are
            frames, base, tip, a, b, distance = frames[near], base[near], tip[near], a[near], b[near], distance[near]
            size = length[frames]
            for along in alongs:
                point = base + along * tip
                tip = tip + (pushed(point, a, b, distance) - point) / along
                tip *= size / np.sqrt(dot(tip, tip))[:, None]
            aim[frames] = tip
    return aim


def _reached(base: np.ndarray, tip: np.ndarray, alongs: np.ndarray, a: np.ndarray, b: np.ndarray,
             clear: np.ndarray) -> np.ndarray:
    """(n,) which frames have a sphere (`alongs` times the ray `tip` (n, 3) out from `base`) closer than its
    clearance (n,) to the segment a-b (n, 3), the ray as it is: only those a push moves (on the G1's clips two
    thirds of the frames in reach are not, and their three pushes, which left the ray as it was but for its last
    bits, cost most of a turn). The spheres lie on one line: six dot products a frame serve all of them."""
    d, rel = b - a, base - a
    dd, rd, td = np.maximum(dot(d, d), _EPS), dot(rel, d), dot(tip, d)
    rr, rt, tt = dot(rel, rel), dot(rel, tip), dot(tip, tip)
    near = np.zeros(len(a), dtype=bool)
    for along in alongs:
        towards = rd + along * td  # the sphere's centre - a, along d
        t = np.clip(towards / dd, 0.0, 1.0)
        near |= rr + along * (2.0 * rt + along * tt) - t * (2.0 * towards - t * dd) < clear * clear
    return near


def _cleared(points: np.ndarray, ends: np.ndarray, entries: tuple) -> np.ndarray:
    """Points (F, M, 3) pushed out of capsules (F, C, 2, 3) per entry (rows, capsules, clearances), capsule by
    capsule, SWEEPS rounds, on the frames where an entry comes within its clearance + REACH_M (the others are
    too far for a push to bring them in): a new array."""
    points = points.copy()
    for _ in range(SWEEPS if len(entries[0]) else 0):  # none: a hand, it only turns
        for frames, at, c, distance in _near(points, ends, entries):
            points[frames, at] = pushed(points[frames, at], ends[frames, c, 0], ends[frames, c, 1], distance)
    return points


def _swivelled(points: np.ndarray, ends: np.ndarray, entries: tuple, tip: int) -> np.ndarray:
    """An arm's points (F, M, 3) but its tip turned about the line from its origin (0, where points and capsules
    (F, C, 2, 3) are measured from) to its tip, capsule by capsule (entries: its elbow's row against each), SWIVEL_SWEEPS
    rounds: each time by the angle that carries the elbow along its circle about that line as far as its push out
    of the capsule (`pushed`) points along the circle.
    The arm's plane turns, the line a viewer reads stays. Continuous in the targets: no side is chosen (an elbow
    pushed straight toward or away from the line does not turn), and near the line the turn is bounded
    (SWIVEL_AT_M). On the frames that come within clearance + REACH_M: a new array."""
    points = points.copy()
    near = _near(points, ends, entries) if len(entries[0]) else []
    axis = points[:, tip] / np.maximum(np.linalg.norm(points[:, tip], axis=-1, keepdims=True), _EPS)
    moving = np.delete(np.arange(points.shape[1]), tip)
    for _ in range(SWIVEL_SWEEPS):
        for frames, at, c, distance in near:
            u, elbow = axis[frames], points[frames, at]
            lever = np.cross(u, elbow)  # the elbow's way round the line, as long as it is far from it
            away = elbow - _foot(elbow, ends[frames, c, 0], ends[frames, c, 1])
            # pushed's move, exactly 0 outside (no turn by rounding: frames clear keep the actor's targets)
            push = away * (np.clip(distance / np.maximum(np.sqrt(dot(away, away)), _EPS), 1.0, SLOPE) - 1.0)[:, None]
            angle = dot(push, lever) / np.maximum(dot(lever, lever), SWIVEL_AT_M ** 2)
            turn = axis_angle_to_matrix(u, angle)  # (n, 3, 3)
            points[frames[:, None], moving] = np.einsum("fij,fpj->fpi", turn, points[frames[:, None], moving])
    return points


def _near(points: np.ndarray, ends: np.ndarray, entries: tuple) -> list:
    """[(frames, rows, capsule, clearances)] per capsule (F, C, 2, 3) of the entries (rows, capsules, clearances)
    whose point (F, M, 3) comes within clearance + REACH_M on those frames (the others are too far for a push
    to bring them in), the capsules in their entries' order."""
    rows, capsules, clear = entries
    middle = (ends[:, :, 0] + ends[:, :, 1]) / 2  # (F, C, 3), as _turned has it
    half = 0.5 * np.linalg.norm(ends[0, :, 1] - ends[0, :, 0], axis=-1)  # rigid: any frame's
    gap = points[:, rows] - middle[:, capsules]  # (F, K, 3)
    bound = np.sqrt(dot(gap, gap)) - half[capsules]  # (F, K) no closer than this
    f, k = np.nonzero(bound < clear + REACH_M)
    order = np.argsort(capsules[k], kind="stable")  # np.nonzero runs frame-major: regrouped by capsule
    f, k = f[order], k[order]
    cuts = np.flatnonzero(np.diff(capsules[k])) + 1
    return [(f[a:b], rows[k[a:b]], capsules[k[a]], clear[k[a:b]])
            for a, b in zip(np.r_[0, cuts], np.r_[cuts, len(f)]) if b > a]


def pushed(points: np.ndarray, a: np.ndarray, b: np.ndarray, clear: np.ndarray) -> np.ndarray:
    """Points (F, P, 3) closer than `clear` (P,) metres to segments a-b (F, 1 or P, 3) moved out along the
    segment's normal to that distance, or SLOPE times as far from the axis as they were where that is less
    (deep in, the normal turns fast: a point on the axis, with no normal, stays)."""
    foot = _foot(points, a, b)
    away = points - foot
    dist = np.sqrt(dot(away, away))
    return foot + away * np.clip(clear / np.maximum(dist, _EPS), 1.0, SLOPE)[..., None]


def _foot(points: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The closest points (..., 3) of segments a-b to points (..., 3), broadcast."""
    d = b - a
    along = np.clip(dot(points - a, d) / np.maximum(dot(d, d), _EPS), 0.0, 1.0)
    return a + d * along[..., None]


def rotation_between(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """(F, 3, 3) the least rotation taking the directions of u (F, 3) to v's (the identity where they agree;
    not for opposite directions, which a push never makes)."""
    u = u / np.maximum(np.linalg.norm(u, axis=-1, keepdims=True), _EPS)
    v = v / np.maximum(np.linalg.norm(v, axis=-1, keepdims=True), _EPS)
    k = np.cross(u, v)
    c = dot(u, v)
    skew = np.zeros(u.shape[:-1] + (3, 3))
    skew[..., 0, 1], skew[..., 0, 2], skew[..., 1, 2] = -k[..., 2], k[..., 1], -k[..., 0]
    skew[..., 1, 0], skew[..., 2, 0], skew[..., 2, 1] = k[..., 2], -k[..., 1], k[..., 0]
    return np.eye(3) + skew + skew @ skew / np.maximum(1.0 + c, _EPS)[..., None, None]


def _body(tree: KinematicTree, model, link: int) -> int | None:
    """The collision body a link belongs to: its own or the one it is fixed to (None: no geometry)."""
    while link >= 0:
        if link in model.body_links:
            return model.body_links.index(link)
        if tree.kind[link] != FIXED:
            return None
        link = int(tree.parent[link])
    return None


def _own_radius(zero: np.ndarray, model, link: int, local: np.ndarray, body: int) -> float:
    """The radius of the capsule of `body` that a point (`local` in `link`'s frame) lies deepest in, at the
    zero pose: how far the robot's body reaches beyond the point."""
    body_link = model.body_links[body]
    point = np.linalg.solve(zero[body_link], zero[link] @ np.r_[local, 1.0])[:3]
    capsules = np.flatnonzero(model.capsule_body == body)
    a, b = model.ends[capsules, 0], model.ends[capsules, 1]
    gap = np.linalg.norm(_foot(point, a, b) - point, axis=-1) - model.radius[capsules]
    return float(model.radius[capsules[np.argmin(gap)]])


def _elbow(tree, zero, model, kin, mover, still, margin) -> list:
    """[(row, still capsule, clearance)] of an arm's elbow: its first point on its tip's link (where the forearm
    starts), when that is not the tip, against the capsules its body is checked against on the trunk it hangs
    from (the links between the root and the arm's origin: a leg's or the other arm's are left to keep_apart,
    and each link posed costs every frame); [] otherwise."""
    tip = len(kin.point_link) - 1
    row = int(np.flatnonzero(kin.point_link == kin.point_link[tip])[0])
    link = int(kin.point_link[row])
    body = _body(tree, model, link)
    if row == tip or body is None:
        return []
    trunk = set(ancestor_path(tree.parent, 0, int(kin.chain.origin[0])))  # the root's index is 0
    own = _own_radius(zero, model, link, kin.point_local[row], body)
    return [(row, int(c), model.radius[c] + margin + own + SWIVEL_AIM_M)
            for c in np.unique(still[model.capsule_body[mover] == body]) if int(model.capsule_link[c]) in trunk]


def _probe(tree, zero, model, kin, mover, still, margin) -> tuple | None:
    """(entries [(0, still capsule, clearance)], (near, far) span, tip row) of a hand's body: the segment along
    the ray from the chain's origin through its tip point that its tip body's capsule ends span (in tip
    distances), when its far end lies within PROBE_TURN_DEG of that ray; clearances with the body's reach
    across the ray (its widest capsule end off it); None otherwise."""
    tip = len(kin.point_link) - 1
    link = int(kin.point_link[tip])
    body = _body(tree, model, link)
    if body is None:
        return None
    origin_link, origin_local = kin.chain.origin
    origin = (zero[origin_link] @ np.r_[origin_local, 1.0])[:3]
    point = (zero[link] @ np.r_[kin.point_local[tip], 1.0])[:3] - origin
    capsules = np.flatnonzero(model.capsule_body == body)
    ends = model.ends[capsules].reshape(-1, 3) @ zero[model.body_links[body]][:3, :3].T \
        + zero[model.body_links[body]][:3, 3] - origin
    far = ends[np.argmax(np.linalg.norm(ends, axis=-1))]
    length = np.linalg.norm(point)
    if length < _EPS or dot(far, point) < np.cos(np.radians(PROBE_TURN_DEG)) * np.linalg.norm(far) * length:
        return None
    unit = point / length
    along = ends @ unit
    across = np.linalg.norm(ends - np.outer(along, unit), axis=-1) + np.repeat(model.radius[capsules], 2)
    against = np.unique(still[model.capsule_body[mover] == body])
    if len(against) == 0:
        return None
    own = float(across.max())
    return ([(0, int(c), model.radius[c] + margin + own + AIM_M) for c in against],
            (float(max(along.min(), 0.0) / length), float(along.max() / length)), tip)
