"""Feet that stay planted: the root and the legs solved again around the source's foot contacts.

Runs after the chains are solved and filtered (q never depends on the root's
position, so the chain shapes are kept):

1. Root. Horizontally the root moves so that a planted foot stays where it
   is (the stance foot carries the body, as in walking); in flight it keeps
   the source's velocity. The path is integrated from the clip's first frame,
   where it starts at the source's (scaled) root, and pulled nowhere: a clip
   cut from a longer one gets the same path moved rigidly. It is smoothed:
   the feet's frame-to-frame jitter, summed into the root, would shake the
   pelvis (the legs take up the difference).
   Vertically it takes the lowest height at which every planted foot
   reaches the ground, smoothed, and carried across flights.
2. Foot targets (core.feet.targets). A contact's first frame fixes the
   foot's position and heading, laid flat; during the contact the foot
   tilts only when the source's does (heel strike, toe-off), rolling over
   its heel or toe; before and after, the targets blend from and back to
   the free foot.
3. Legs. Each leg is solved again for its foot targets (heavily weighted
   sole points, a 6D pose), its chain shape, no foot point below the
   ground, and a weak pull toward its unplanted solution, inside the joint
   limits and velocity limits (a leg too slow to follow its frames' solutions
   is solved again frame by frame at its pace: core.feet.pace).
4. Bodies that are not feet (knees, hands) may touch the ground but are
   lifted out of it by raising the root.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.ndimage import maximum_filter1d

from ..chains.points import RobotPath
from .contacts import Contacts
from ..motion.filtering import butterworth_lowpass, step_limits
from ..motion.frames import frame_blocks
from .leg_problem import LegProblem
from .pace import keep_pace
from .geometry import (BodyPoints, Bodies, body_points, ground_candidates, lowest_points, pivot_weights,
                       sole_indices, solve_points, standing_rotation, subtree_links)
from .targets import FootFrames, foot_goals, free_sole
from ..model.kinematics import KinematicTree
from ..model.transforms import pose_matrices
from ..chains.solver import ChainKinematics, rate_limit


SINK_TOLERANCE_M = 0.01
REDO_M = 1e-4  # a later pass solves the legs again only where the root moved more than this


@dataclass
class PlantSettings:
    """How strongly and how smoothly feet are planted (times in seconds, angles in degrees)."""

    blend_s: float = 0.1  # targets blend in before a contact and out after it
    flat_deg: float = 8.0  # foot tilts up to this (from its stance tilt) count as flat
    turn_deg: float = 4.0  # a planted foot keeps its heading until the source turns it further
    foot_weight: float = 300.0  # sole points vs the chain shape (shape tip weight is ~3)
    prior: float = 0.02  # pull toward the unplanted joint angles
    iterations: int = 12
    track_iterations: int = 3  # per re-solve of a frame that jumped, from its predecessor (0: no tracking)
    smooth_hz: float = 3.0  # root height changes are smoothed below this
    path_hz: float = 3.5  # the root's horizontal path is smoothed below this (a walk's sway kept, the 9 Hz shake gone)
    stance_s: float = 1.75  # a foot's stance tilt: the median over contact frames this near a contact (targets)
    float_m: float = 0.004  # a planted foot further than this from its goal moves the root for another pass
    max_change_rad: float = 0.5  # no joint moves further from its unplanted angle (no branch flips)
    passes: int = 3  # solve passes; each moves the root toward feet that missed their goals
    lift: bool = True  # raise the root where another body sinks (off for a draft plant whose root is dropped)
    ground_weight: float = 10.0  # a foot point below the ground, against one off its goal
    pivot_weight: float = 10.0  # the point a planted foot stands on, against its other sole points
    reach_gain: float = 0.5  # share of a planted foot's horizontal miss the root moves toward it


@dataclass
class Leg:
    """One leg as planting needs it: its chain solve, and its foot as points."""

    side: str
    kin: ChainKinematics  # chain-shape kinematics (points relative to the chain origin)
    targets: np.ndarray  # (F, M, 3) chain-shape targets, metres, relative to the chain origin
    weights: np.ndarray  # (M,) chain-shape weights (1/length² included)
    anchor: int  # link carrying the chain, -1 for the root
    foot: BodyPoints  # the foot points the solve carries (geometry.solve_points), in the foot link frame
    sole: np.ndarray  # indices of foot points on a flat floor
    body: BodyPoints  # every point of the foot body, for the ground checks and the report
    flat: np.ndarray  # (3, 3) foot link rotation standing flat (its zero pose)
    solve_kin: ChainKinematics  # kin's points, then the foot points relative to the hip joint (which no
    length: float  # leg length, metres                  leg joint moves): both from one evaluation

    @classmethod
    def build(cls, tree: KinematicTree, side: str, kin: ChainKinematics, targets: np.ndarray,
              weights: np.ndarray, anchor: int) -> "Leg":
        chain = kin.chain
        link, tip = int(chain.paths[0].tip_local[0]), chain.paths[0].tip_local[1]
        # a sole on a link past the tip is the foot; a leg with no geometry stands on its tip point
        # (the link holding it is the shin, whose origin is the knee: simple_humanoid's knees were planted)
        body = body_points(tree, link, subtree_links(tree, link), bare=tip)
        flat = standing_rotation(body, tree.zero_pose()[link, :3, :3])  # level by its sole, whatever its zero
        foot = solve_points(body, flat)
        path = RobotPath(chain.paths[0].links, np.full(len(foot.points), link), foot.points, 1.0,
                         (link, foot.points[0]))
        solve_kin = ChainKinematics.build(tree, chain, extra=[(path, (chain.links[0], np.zeros(3)))])
        return cls(side, kin, targets, weights, anchor, foot, sole_indices(foot, flat), body, flat,
                   solve_kin, float(chain.paths[0].length))

    @property
    def shape_rows(self) -> slice:
        """Rows of solve_kin's points that are kin's (the chain shape); the foot points follow."""
        return slice(0, len(self.kin.point_link))

    @property
    def link(self) -> int:
        return self.foot.link


@dataclass
class PlantResult:
    q: np.ndarray  # (F, n) joint positions
    root_position: np.ndarray  # (F, 3) metres
    lifted_m: float  # how far bodies other than the feet lifted the root at most, metres


def plant_feet(tree: KinematicTree, legs: list[Leg], q: np.ndarray, root_rot: np.ndarray,
               root_pos: np.ndarray, contacts: Contacts, fps: float,
               settings: PlantSettings | None = None, separation=None) -> PlantResult | None:
    """Solve root and legs so that feet in contact stay put; None when no leg has a contact.

    separation: None, or what keeps the robot's bodies apart (core.collision.avoid.Separation):
    a leg's frames where a checked pair comes closer than its margin are solved again with it."""
    settings = settings or PlantSettings()
    legs = [leg for leg in legs if leg.side in contacts.feet and contacts.feet[leg.side].any()]
    if not legs:
        return None
    frames, root, goals = _first_root(tree, legs, q, root_rot, root_pos, contacts, fps, settings)
    check = _Check(tree, legs, Bodies(tree), settings)
    q_out, redo = q, None
    for done in range(1, settings.passes + 1):
        world = pose_matrices(root_rot, root)
        q_out = _solve_legs(tree, legs, q, q_out, world, frames, goals, fps, settings, redo, separation)
        move = check.root_change(q_out, world, goals) if done < settings.passes else None
        if move is None:
            break
        change = _smooth_change(move, fps, settings)
        root += change
        redo = np.abs(change).max(axis=1) > REDO_M  # a frame whose root did not move keeps its legs
    depth = check.body_depth(q_out, pose_matrices(root_rot, root)) if settings.lift else np.zeros(len(q))
    lift = np.maximum(_envelope(depth, fps, settings), depth) if depth.max() >= 1e-3 else 0.0 * depth
    root[:, 2] += lift  # the last word: nothing passes through the ground
    return PlantResult(q_out, root, float(lift.max(initial=0.0)))


def _first_root(tree, legs: list[Leg], q, root_rot, root_pos, contacts: Contacts, fps: float,
                settings: PlantSettings) -> tuple[dict, np.ndarray, dict]:
    """Each leg's unplanted foot (FootFrames), the root (F, 3) the first pass stands on, and each
    planted foot's goals (FootGoals) under it; legs: those with a contact."""
    flags = {leg.side: contacts.feet[leg.side] for leg in legs}
    frames = {leg.side: FootFrames.measure(tree, leg, q, root_rot, flags[leg.side], fps, settings) for leg in legs}
    root = _root(root_pos, _hip_offset(tree, legs, root_rot), frames, flags, fps, settings)
    goals = {leg.side: foot_goals(leg, frames[leg.side], pose_matrices(root_rot, root), flags[leg.side], fps,
                                  settings) for leg in legs}
    return frames, root, goals


def _solve_legs(tree, legs: list[Leg], q, guess, world, frames: dict, goals: dict, fps: float,
                settings: PlantSettings, redo: np.ndarray | None = None, separation=None) -> np.ndarray:
    """q with every leg solved again for its foot goals (starting from `guess`), inside
    velocity limits. redo (F,): only these frames are solved again, the others keep `guess`
    (a later pass re-solves only where the root moved, never frames already converged)."""
    out = q.copy()
    solved = []
    for leg in legs:
        points, active = goals[leg.side].at(free_sole(leg, frames[leg.side], world))
        term = separation.term(leg.kin.chain.variables, world) if separation is not None else None
        solved.append(_solve_leg(tree, leg, out, guess, world, points, goals[leg.side].weight,
                                 active if redo is None else active & redo, fps, settings, term))
    if redo is not None:
        out[~redo] = guess[~redo]
    steps = step_limits(tree.velocity, fps)
    for problem in solved:  # a leg too slow to follow its own solution: solved again at its pace
        if problem is not None:
            keep_pace(problem, out, steps, settings.blend_s * fps)
    return rate_limit(out, steps)


class _Check:
    """What is left to fix after a pass: feet off their goals, bodies under the ground."""

    def __init__(self, tree, legs: list[Leg], bodies: Bodies, settings: PlantSettings):
        self.tree, self.legs, self.bodies, self.settings = tree, legs, bodies, settings
        self.feet = {i for leg in legs for i in subtree_links(tree, leg.link)}
        self.links = None  # links that may reach the ground, found on the first check

    def body_depth(self, q, world) -> np.ndarray:
        """How deep (F,) the lowest body other than the feet is below the ground (0 if above)."""
        if self.links is None:
            self.links = ground_candidates(self.tree, q, world, bodies=self.bodies)
        lowest = lowest_points(self.tree, q, world, self.feet, self.bodies, links=self.links, exact_below=0.0)
        depth = np.clip(-lowest, 0.0, None)  # exact below the ground, where a depth is not 0
        depth[~np.isfinite(depth)] = 0.0
        return depth

    def root_change(self, q, world, goals: dict) -> np.ndarray | None:
        """Root move (F, 3) that brings planted feet to their goals and bodies out of the
        ground: up where something sinks or a planted foot is below its goal, down where it
        floats above it, sideways toward an unreachable foot; None when nothing is off by more
        than `float_m`. The legs' angles held, the root moves the feet by as much
        (tests/core/test_plant_root.py)."""
        up = self.body_depth(q, world)
        down = np.zeros(len(q))
        reach, count = np.zeros((len(q), 2)), np.zeros(len(q))
        for leg in self.legs:
            planted = goals[leg.side].weight >= 1.0
            pose = self.tree.link_transform(q, leg.link, world)
            # a foot the leg could not keep above ground (an edge a few mm down is a tilt the leg
            # cannot undo, e.g. without ankle roll: not worth lifting the other foot off for)
            up = np.maximum(up, -leg.body.lowest(pose) - SINK_TOLERANCE_M)
            pts = leg.foot.world(pose)[:, leg.sole]
            goal = goals[leg.side].planted
            w = pivot_weights(goal[..., 2] - leg.foot.radius[leg.sole])
            miss = np.einsum("fs,fsi->fi", w, goal - pts) * planted[:, None]  # where the foot must go
            up, down = np.maximum(up, miss[:, 2]), np.maximum(down, -miss[:, 2])
            reach += miss[:, :2]
            count += planted
        limit = self.settings.float_m
        if max(up.max(), down.max(), np.abs(reach).max()) <= limit:
            return None
        vertical = np.where(up > limit, up, np.where(down > limit, -down, 0.0))
        gain = self.settings.reach_gain
        return np.column_stack([gain * reach / np.maximum(count, 1.0)[:, None], vertical])


def _smooth_change(move: np.ndarray, fps: float, settings: PlantSettings) -> np.ndarray:
    """A root change smoothed over time; vertical moves keep their peaks (a short miss at a
    lift-off needs its full correction). Up wins, over the whole pass: the rise's envelope is
    nowhere negative, so where any frame asks the root up, no frame of that pass goes down (a
    floating foot lowers the root only in a pass where nothing rises; letting the drops act away
    from the rises was tried in session 22 and floated and slid more: docs/history/planted_feet.md)."""
    out = butterworth_lowpass(move, fps, settings.smooth_hz, order=2)
    up, down = np.clip(move[:, 2], 0.0, None), np.clip(-move[:, 2], 0.0, None)
    out[:, 2] = -np.maximum(_envelope(down, fps, settings), down) if down.max(initial=0.0) > 0 else 0.0
    if up.max(initial=0.0) > 0:
        out[:, 2] = np.maximum(out[:, 2], np.maximum(_envelope(up, fps, settings), up))
    return out


# ----------------------------------------------------------------------- root ---

def _hip_offset(tree: KinematicTree, legs: list[Leg], root_rot: np.ndarray) -> np.ndarray:
    """Where the hips' centre is from the root link's origin (F, 3), metres, in the world: the
    point whose path is smoothed, as the root's origin is wherever the URDF puts it."""
    zero = tree.zero_pose()
    hips = np.mean([zero[leg.kin.chain.paths[0].links[0], :3, 3] for leg in legs], axis=0)
    return root_rot @ hips


def _root(plain: np.ndarray, hips: np.ndarray, frames: dict, flags: dict, fps: float,
          settings: PlantSettings) -> np.ndarray:
    """Root positions (F, 3): horizontally carried by planted feet, vertically on the ground;
    hips (F, 3): the hips' centre from the root's origin (_hip_offset)."""
    out = plain.copy()
    out[:, :2] = _root_xy(plain[:, :2], hips[:, :2], frames, flags, fps, settings)
    out[:, 2] = _root_z(plain[:, 2], frames, flags, fps, settings)
    return out


def _root_xy(plain: np.ndarray, hips: np.ndarray, frames: dict, flags: dict, fps: float,
             settings: PlantSettings) -> np.ndarray:
    """Integrate the hips' velocity: the root's minus the planted feet's, the source's in flight;
    smoothed; the root's origin (F, 2) is the hips' centre less `hips` (F, 2).

    The hips' centre, not the root link's origin, is the point smoothed: the origin is wherever
    the URDF puts it, and the pelvis' sway turns a point off the hips about them (a G1 re-rooted
    at its ankle has its pelvis frame at the left hip: its knees baked 0.09 rad apart).
    Anchored at the first frame's source root and nowhere else: a pull back to the source's
    travel (a 0.05 Hz low-pass of the difference) reached over the whole clip, so a walk cut at
    frame 400 had its root moved by 15-54 mm, varying, and its ankles by up to 0.3 rad. The robot
    travels as far as its own planted feet carry it (the walk onto the G1: 2.26 m, the scaled
    source 2.00 m); its velocity depends on nearby frames only, so a cut clip's path is the
    whole clip's moved rigidly."""
    n = len(plain)
    if n < 2:
        return plain.copy()
    carried, count = np.zeros((n - 1, 2)), np.zeros(n - 1)
    for side, foot in frames.items():
        held = (flags[side][:-1] & flags[side][1:]).astype(float)
        carried -= held[:, None] * foot.pivot_step  # the root's origin moves as the foot moves back
        count += held
    share = np.minimum(count, 1.0)[:, None]
    centre = plain + hips
    velocity = share * (carried / np.maximum(count, 1.0)[:, None] + np.diff(hips, axis=0)) \
        + (1.0 - share) * np.diff(centre, axis=0)
    xy = centre[0] + np.concatenate([np.zeros((1, 2)), np.cumsum(velocity, axis=0)])
    return butterworth_lowpass(xy, fps, settings.path_hz, order=2) - hips


def _root_z(plain: np.ndarray, frames: dict, flags: dict, fps: float, settings: PlantSettings) -> np.ndarray:
    """The lowest root height that puts each planted foot on the ground, smoothed from above.

    Lower is always reachable (a knee bends), higher may not be: the smoothed
    curve is pushed down until it is nowhere above what a planted foot needs.
    """
    want = np.full(len(plain), np.inf)
    for side, foot in frames.items():
        want = np.where(flags[side], np.minimum(want, foot.root_height), want)
    down = np.isfinite(want)
    keys = np.flatnonzero(down)
    offset = np.interp(np.arange(len(plain)), keys, (want - plain)[keys])
    smooth = butterworth_lowpass(offset, fps, settings.smooth_hz, order=2)
    for _ in range(4):
        excess = np.where(down, smooth - offset, 0.0).clip(min=0.0)
        if excess.max(initial=0.0) < 1e-4:
            break
        smooth -= _envelope(excess, fps, settings)
    return plain + smooth


def _envelope(excess: np.ndarray, fps: float, settings: PlantSettings) -> np.ndarray:
    """A smooth bump (F,) at least as high as `excess` where it is large."""
    width = max(1, int(round(2 * settings.blend_s * fps)) | 1)
    wide = maximum_filter1d(excess, width, mode="nearest")
    return np.maximum(butterworth_lowpass(wide, fps, settings.smooth_hz, order=2), 0.0) * 1.1


# ------------------------------------------------------------------------ legs ---

def _solve_leg(tree: KinematicTree, leg: Leg, q: np.ndarray, guess: np.ndarray, world: np.ndarray,
               points: np.ndarray, weight: np.ndarray, active: np.ndarray, fps: float,
               settings: PlantSettings, apart=None) -> "LegProblem | None":
    """Move the leg's columns of q (the unplanted solution) toward its sole goals `points`
    (F, S, 3) weighted by `weight` (F,), starting from `guess`, in place, on the `active`
    frames only; apart (a SeparationTerm): frames closer than its margin are solved again with it.
    Returns the leg's problem over those frames (None when there are none)."""
    rows = np.flatnonzero(active)
    if len(rows) == 0:
        return None
    cols = leg.kin.columns
    anchor = world if leg.anchor < 0 else tree.link_transform(q, leg.anchor, world)
    hip = tree.link_transform(q, leg.kin.chain.links[0], world)[:, :3, 3]
    start = np.clip(q[rows][:, cols], tree.lower[cols], tree.upper[cols])
    problem = LegProblem(tree, leg, rows, q[rows], anchor[rows], hip[rows], points[rows], weight[rows], start,
                          settings)
    init = np.clip(guess[rows][:, cols], problem.lower, problem.upper)
    x, cost = np.empty_like(init), np.empty(len(rows))
    for block in frame_blocks(len(rows)):  # frames are independent problems: solve them in blocks
        x[block], cost[block] = problem.solve(init[block], np.arange(len(rows))[block], settings.iterations)
    max_step = step_limits(tree.velocity[cols], fps)
    x = _track(problem, x, cost, rows, max_step, settings.track_iterations) if settings.track_iterations else x
    if apart is not None:
        x = _apart(problem, apart, x, world[rows], settings.iterations)
    q[rows[:, None], cols] = x
    return problem


def _apart(problem: LegProblem, apart, x: np.ndarray, world: np.ndarray, iterations: int) -> np.ndarray:
    """x with the rows where the leg comes closer to another body than the margin solved again,
    the separation rows added to the leg's residuals."""
    q = problem.q.copy()
    q[:, problem.leg.kin.columns] = x
    dist = apart.distance(q, world, apart.margin)
    close = np.flatnonzero(dist.min(axis=1, initial=np.inf) < apart.margin)
    if len(close) == 0:
        return x
    problem.apart, problem.apart_root = apart.near(q, close, world, dist=dist[close]), world
    try:
        out = x.copy()
        out[close], _ = problem.solve(x[close], close, iterations)
    finally:
        problem.apart = None
    return out


def _track(problem: LegProblem, x: np.ndarray, cost: np.ndarray, frames: np.ndarray,
           max_step: np.ndarray, iterations: int, horizon: int = 40) -> np.ndarray:
    """Frames whose solution jumps away from the frame before are solved again starting
    from that frame's, so a leg stays on one branch instead of flipping between two."""
    x, cost = x.copy(), cost.copy()
    follows = np.flatnonzero(np.diff(frames) == 1) + 1  # local rows whose frame directly follows the row before
    for _ in range(horizon):
        jump = follows[(np.abs(x[follows] - x[follows - 1]) > max_step).any(axis=1)]
        if len(jump) == 0:
            break
        trial, t_cost = problem.solve(x[jump - 1], jump, iterations)
        closer = (np.abs(trial - x[jump - 1]) / max_step).max(1) < (np.abs(x[jump] - x[jump - 1]) / max_step).max(1)
        keep = closer & (t_cost <= 2.0 * cost[jump] + 1e-6)
        if not keep.any():
            break
        x[jump[keep]], cost[jump[keep]] = trial[keep], t_cost[keep]
    return x


def cancel_residual_slide(tree: KinematicTree, legs: list[Leg], q: np.ndarray, root_rot: np.ndarray,
                          root_pos: np.ndarray, contacts: Contacts) -> np.ndarray:
    """Root positions (F, 3) shifted horizontally so planted contact points stop creeping.

    Smoothing the legs lets a planted foot creep by millimetres per frame; moving
    the whole body back by the creep of the feet that are down (their mean when
    both are) removes it without touching a joint. The running correction is
    summed from the first frame, like the root's path (_root_xy), and not high-passed: a
    0.1 Hz high-pass reached over the whole clip, so where a clip was cut moved the root.
    """
    world = pose_matrices(root_rot, root_pos)
    steps, down = [], []
    for leg in legs:
        flags = contacts.feet.get(leg.side)
        if flags is None:
            continue
        pts = leg.body.world(tree.link_transform(q, leg.link, world))  # (F, K, 3)
        weights = pivot_weights(pts[:-1, :, 2] - leg.body.radius)
        steps.append(np.einsum("fk,fki->fi", weights, pts[1:, :, :2] - pts[:-1, :, :2]))
        down.append(flags[:-1] & flags[1:])
    if not steps or len(q) < 8:
        return root_pos
    steps, down = np.array(steps), np.array(down, dtype=float)  # (S, F-1, 2), (S, F-1)
    count = down.sum(axis=0)
    creep = np.einsum("sf,sfi->fi", down, steps) / np.maximum(count, 1.0)[:, None]
    correction = np.vstack([np.zeros((1, 2)), -np.cumsum(creep, axis=0)])
    out = root_pos.copy()
    out[:, :2] += correction
    return out
