"""The steady room's detours are continuous in their input: a tiny change of input, a tiny change of
the room made (README *Self-collision*; docs/history/self_collision.md, session 16, s16-steady).

A detour window's linearised step kept only pairs within 2 cm of the margin from closing in. A pair
just beyond that edge was free, and a step that carried it 4 cm in was the window's answer; just
inside, it bound. With every frame solved from its own start, the G1 walk in an A-pose rest reached
its steady room 4e-5 rad from the original's, and between the two inputs one 1e-12 rad apart moved
the left arm 0.75 rad on the clip's last 10 frames (a frame left 2 cm inside, so the frame-by-frame
answer blended in): 1.13 deg RMS in test_invariance_avoidance.py.
"""
from __future__ import annotations

import dataclasses
import types

import numpy as np
import pytest

from core.chains import corrections, separation, switches
from core.model.kinematics import KinematicTree
from core.model.urdf import parse_urdf
from core.motion.bvh import load_bvh
from core.retarget import pipeline
from core.retarget.automap import auto_map
from tests import variants as V
from tests.core.test_invariance import ARMS, G1, WALK, _short

MARGIN = 0.01


class _Planes:
    """Pairs whose distances are linear in the two joints (exact linearisations): d = c + g y."""

    def __init__(self, c: np.ndarray, g: np.ndarray, frames: int):
        self.c, self.g, self.margin = c, g, MARGIN
        self.root = np.repeat(np.eye(4)[None], frames, axis=0)

    def kept_on(self, frames):
        return {}

    def distance(self, q, root, within=None):
        return self.c[None] + q @ self.g.T  # (F, P)

    def depth(self, q, root):
        return np.maximum(0.0, self.margin - self.distance(q, root).min(axis=1))

    def gradient(self, q, root, within):
        dist = self.distance(q, root)
        f, p = np.nonzero(dist < within)
        return f, p, dist[f, p], self.g[p]


def _window(far_m: float, steps: int = 1) -> np.ndarray:
    """Three frames 3 cm inside a body (pair 0, cleared by the first joint); the first joint's way
    out closes pair 1, which starts far_m beyond the margin."""
    frames = 3
    problem = types.SimpleNamespace(q=np.zeros((frames, 2)), columns=np.arange(2),
                                    metric=lambda q, rows: np.repeat(np.eye(2)[None], len(rows), axis=0))
    pairs = _Planes(np.array([MARGIN - 0.03, MARGIN + far_m]), np.array([[1.0, 0.0], [-1.0, 1.0]]), frames)
    x = np.zeros((frames, 2))
    bound = np.ones((frames, 2))
    switches._solve_window(problem, pairs, x, np.arange(frames), -bound, bound, np.ones(2), 0.0, steps)
    return x, pairs


def test_a_pair_crossing_the_lookahead_edge_does_not_move_the_step():
    """The same window with the far pair 1e-9 m either side of the lookahead's edge: the same step
    (before: 0.014 rad apart, the pair beyond left 12 mm inside), and every pair out."""
    edge = switches.SWITCH_LOOKAHEAD_M
    inner, pairs = _window(edge - 1e-9)
    outer, _ = _window(edge + 1e-9)
    np.testing.assert_allclose(outer, inner, atol=1e-7)
    assert (pairs.distance(outer, None) >= MARGIN + switches.SWITCH_AIM_M - 1e-6).all()
    farther, _ = _window(edge + 0.01)  # 3 cm beyond: still kept out, with less of the second joint
    assert (_window(edge + 0.01)[1].distance(farther, None) >= MARGIN - 1e-6).all()
    assert 0.0 < farther[0, 1] < inner[0, 1]


def _held(short_m: float) -> np.ndarray:
    """With HOLD_AT_BOUND, the step of one frame of two joints coupled in the metric and one pair, whose
    least change carries the first joint to `short_m` rad before its upper bound (negative: past it)."""
    metric = np.array([[[1.0, 0.8], [0.8, 1.0]]])
    grad, need = np.array([[1.0, 0.5]]), 0.3  # the free least change: (0.4, -0.2)
    dist = np.array([MARGIN + corrections.AIM_M - need])
    upper = np.array([[0.4 + short_m, 1.0]])
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(corrections, "HOLD_AT_BOUND", True)
        return corrections._least_change((metric, np.linalg.inv(metric)), np.zeros(1, dtype=int), dist, grad, MARGIN,
                                         np.zeros((1, 2)), -np.ones((1, 2)), upper, radius=1.0)


def test_a_joint_reaching_its_bound_does_not_move_the_step():
    """A joint the free step carries 1e-9 rad short of its bound and one held on it 1e-9 past: the same
    step (before: the held joint's coupling to the other was left out, the other stayed where it was,
    0.2 rad apart here; the G1 walk's shoulder yaw moved the room 0.16 rad between inputs 1e-15 apart
    with the smooth trunk); held further in, the least change with the joint on its bound."""
    short, past = _held(1e-9), _held(-1e-9)
    np.testing.assert_allclose(past, short, atol=1e-6)
    np.testing.assert_allclose(short[0], [0.4, -0.2], atol=1e-6)
    # on its bound at 0.35, the pair asks the other for -0.1 at least, the metric's coupling for -0.28
    np.testing.assert_allclose(_held(-0.05)[0], [0.35, -0.1], atol=1e-6)


def _stepped(start: float, held_on_bound: bool) -> np.ndarray:
    """The default step (HOLD_AT_BOUND off) of _held's frame from its first joint at `start`, its upper bound 0.35:
    the free least change (0.4, -0.2) carries it past."""
    metric = np.array([[[1.0, 0.8], [0.8, 1.0]]])
    grad, need = np.array([[1.0, 0.5]]), 0.3
    dist = np.array([MARGIN + corrections.AIM_M - need])
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(corrections, "HELD_ON_BOUND", held_on_bound)
        return corrections._least_change((metric, np.linalg.inv(metric)), np.zeros(1, dtype=int), dist, grad, MARGIN,
                                         np.array([[start, 0.0]]), -np.ones((1, 2)), np.array([[0.35, np.inf]]),
                                         radius=1.0)  # the other joint unbounded above: no bound to hold it on


def test_a_joint_short_of_its_bound_steps_as_one_on_it():
    """By default a joint the free step carries out of its range is held on its bound wherever it stood, the other
    solved again: from 3e-6 rad short of the bound the same step as from on it (the pair asks the other for 0.6).
    Held only where it already stood on it (HELD_ON_BOUND False), the joint 3e-6 short was cut at the bound and the
    other kept the free step's -0.2: 0.8 rad apart, a jump inputs 1e-3 apart fell either side of (the avoiding G1
    walk ended 9 frames earlier, 0.012 rad on a shoulder 1.5 s before the end)."""
    short, on = _stepped(0.35 - 3e-6, True), _stepped(0.35, True)
    np.testing.assert_allclose(on[0], [0.0, 0.6], atol=1e-5)
    np.testing.assert_allclose(short, on, atol=1e-5)
    assert abs(_stepped(0.35 - 3e-6, False)[0, 1] - _stepped(0.35, False)[0, 1]) > 0.5  # the cut: a jump


def test_the_held_least_change_is_exact_whatever_the_pairs_order():
    """With HOLD_AT_BOUND a step is the exact least change within the range (core.chains.dual.exact_step):
    on frames of seven joints with eight pairs, the same as SLSQP's answer of that quadratic problem where
    one meets every pair within the range (the others fall short of a pair at SLACK_SCALE's price), and on
    every frame the same with the pairs in another order (projected sweeps stopped at DUAL_SWEEPS move
    with the order: on the G1 walk's deepest frames by tenths of a radian)."""
    from scipy.optimize import minimize

    from core.chains.dual import exact_step

    rng = np.random.default_rng(26)
    a = rng.normal(size=(4, 7, 7))
    metric = a @ a.transpose(0, 2, 1) + 0.05 * np.eye(7)
    g, need = rng.normal(size=(4, 8, 7)), rng.normal(scale=0.3, size=(4, 8))
    low, high = -np.full((4, 7), 0.3), np.full((4, 7), 0.4)
    step = exact_step(metric, np.linalg.inv(metric), g, need, low, high, switches.SLACK_SCALE, corrections.DUAL_SWEEPS)
    order = rng.permutation(8)
    again = exact_step(metric, np.linalg.inv(metric), g[:, order], need[:, order], low, high, switches.SLACK_SCALE,
                       corrections.DUAL_SWEEPS)
    np.testing.assert_allclose(again, step, atol=1e-9)
    solved = 0
    for h, rows, asks, dx in zip(metric, g, need, step):
        best = minimize(lambda d: 0.5 * d @ h @ d, np.zeros(7), jac=lambda d: h @ d, method="SLSQP",
                        bounds=list(zip(low[0], high[0])), options={"ftol": 1e-15, "maxiter": 1000},
                        constraints=[{"type": "ineq", "fun": lambda d: rows @ d - asks, "jac": lambda d: rows}])
        if best.success:
            np.testing.assert_allclose(dx, best.x, atol=1e-5)
            solved += 1
        assert (low[0] - 1e-9 <= dx).all() and (dx <= high[0] + 1e-9).all()
    assert solved >= 2


def _blend(depth_m: float) -> tuple:
    """The steady room's last resort (steady._blended) on 60 frames of two joints: the smoothed room
    y = 0, the frame-by-frame answer x = 1 (another answer, out of the body), frame 30 left depth_m
    inside where y is, and out once 0.4 of the way to x (depth linear in the first joint)."""
    from core.chains import steady

    y, x = np.zeros((60, 2)), np.ones((60, 2))

    def inside(room, frames):
        return np.where(frames == 30, depth_m * (1.0 - room[frames, 0] / 0.4), 0.0).clip(0.0)
    look = np.arange(20, 41)
    return steady._blended(x, y, look, inside(y, look), 2, np.full(2, 0.2), inside), inside(y, look), inside


def test_the_last_resort_blend_moves_with_the_depth_not_at_a_threshold():
    """A frame a hair either side of INSIDE_M takes nearly the same blend (before: none on one side,
    the whole frame-by-frame answer around it on the other, 1 rad apart); a frame well inside takes
    it all around it and comes out."""
    from core.chains import steady

    below, _, _ = _blend(steady.INSIDE_M - 1e-9)
    above, _, _ = _blend(steady.INSIDE_M + 1e-9)
    assert np.abs(above - below).max() < 1e-5
    deep, _, inside = _blend(0.005)
    assert deep[30, 0] == pytest.approx(1.0) and inside(deep, np.array([30]))[0] == 0.0
    assert (np.abs(np.diff(deep, axis=0)) <= 0.2 + 1e-12).all()  # within the joints' speed


def test_the_blend_reads_the_finished_answer_no_further_than_its_reach():
    """The steady room's finish is worked out only within steady.blend_reach of the frames left inside
    (separation's finish): the blend's answer is the same whatever the finished answer is beyond that reach
    (here at 120 fps: 15 frames) but for rounding, and moves with it within the first widening's reach."""
    from core.chains import steady

    fps, frames, left = 120.0, 120, 60
    reach = steady.blend_reach(fps)
    y = np.zeros((frames, 2))

    def inside(room, at):  # frame `left` 3 mm inside where y is, out 0.4 of the way to the other answer
        return np.where(at == left, 0.003 * (1.0 - room[at, 0] / 0.4), 0.0).clip(0.0)
    look = np.arange(frames)

    def blended(x):
        return steady._blended(x, y, look, inside(y, look), steady._half(fps), np.full(2, 0.2), inside)
    x = np.ones((frames, 2))
    base = blended(x)
    beyond = x.copy()
    beyond[np.abs(np.arange(frames) - left) > reach] = -5.0  # another finished answer beyond the reach
    np.testing.assert_allclose(blended(beyond), base, rtol=0, atol=1e-12)  # the running averages' rounding: 1e-17 weights
    near = x.copy()
    near[left + 2] = 0.5  # within the first widening's reach: read
    assert np.abs(blended(near) - base).max() > 0.01


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    return captured_inputs(tmp_path_factory.mktemp)


def captured_inputs(mktemp) -> dict:
    """The left arm group's separate_chains inputs in the walk's original and A-pose bakes (HOLD_AT_BOUND,
    avoidance on: test_invariance_avoidance.py's setting); mktemp(name) -> a new folder."""
    tree = KinematicTree(parse_urdf(G1))
    clip = _short(load_bvh(WALK))
    found = {}
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(corrections, "HOLD_AT_BOUND", True)

        def capture(tree, chains, q, term, options, max_step, fps, name=None):
            if term is not None and name not in found:
                found[name] = (tree, [tuple(np.copy(c) if isinstance(c, np.ndarray) else c for c in chain)
                                      for chain in chains], q.copy(), term.separation, term.variables,
                               term.root.copy(), options, max_step, fps)
        for name, changed in (("original", clip), ("A-pose", V.arms_posed(clip, ARMS, 45.0))):
            motion = load_bvh(V.write_bvh(changed, mktemp(name) / "v.bvh")).to_source_motion()
            mapping = auto_map(motion, tree)
            mapping.settings = dataclasses.replace(mapping.settings, avoid_self_collision=True)
            patch.setattr(pipeline, "separate_chains", lambda *a, n=name: capture(*a, name=n))
            pipeline.retarget(motion, tree, mapping)
    return found


def _room(inputs, t: float) -> np.ndarray:
    """The room made from inputs t of the way from the original's to the A-pose's (arrays mixed linearly)."""
    a, b = inputs["original"], inputs["A-pose"]

    def mix(u, v):
        return u + t * (v - u) if isinstance(u, np.ndarray) and u.dtype.kind == "f" else u
    tree, chains, q, apart, variables, root, options, max_step, fps = a
    chains = [tuple(mix(u, v) for u, v in zip(ca, cb)) for ca, cb in zip(chains, b[1])]
    q = mix(q, b[2])
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(corrections, "HOLD_AT_BOUND", True)
        separation.separate_chains(tree, chains, q, apart.term(variables, mix(root, b[5])), options, max_step, fps)
    return q


def test_room_made_moves_little_between_two_close_inputs_on_the_g1_walk(inputs):
    """Between the original's and the A-pose's inputs (4.4e-5 rad apart), the room made at eleven
    points on the way: each within 0.01 rad of the next (before: 0.71 rad between t = 0.1 and 0.2,
    the left arm's last 10 frames), and the ends within 0.005 rad."""
    step = np.abs(inputs["A-pose"][2] - inputs["original"][2]).max()
    assert 1e-6 < step < 1e-4  # the variant is the same motion within the BVH text's precision
    rooms = [_room(inputs, t) for t in np.linspace(0.0, 1.0, 11)]
    apart = [np.abs(b - a).max() for a, b in zip(rooms, rooms[1:])]
    assert max(apart) < 0.01, apart
    assert np.abs(rooms[-1] - rooms[0]).max() < 0.005


def test_the_sampled_rooms_ramp_counts_frames_not_samples():
    """The sampled room's frames are not all `every` apart (where two runs' grids meet or at a clip's end: 2-7 at
    120 fps on the G1 walk): its ramp in time (room_in_time) on the samples, their frames given, is the ramp on every
    frame read at them, and a shape at top speed over an uneven gap is left where it is. Read as evenly spaced, the
    ramp reached a 7-frame gap's neighbour 4 frames' worth and the rate limit held the shape back."""
    tree = KinematicTree(parse_urdf(G1))
    walk = load_bvh(WALK).to_source_motion()
    q = pipeline.retarget(walk, tree, auto_map(walk, tree), contacts="off", figures=False).q[:200]
    max_step = tree.velocity / walk.fps  # rad a frame at each joint's top speed
    sample = np.r_[np.arange(0, 93, 4), np.arange(99, 196, 4), 197, 199]  # gaps of 2, 4 and 7 frames, as grids give
    moved = q.copy()
    moved[99] += 0.3  # a room made on one frame
    slow = max_step / 20.0  # a ramp over about 20 frames, across the uneven gaps
    dense = separation.room_in_time(q, moved, slow)
    np.testing.assert_allclose(separation.room_in_time(q[sample], moved[sample], slow, at=sample), dense[sample],
                               rtol=0, atol=1e-12)
    shape = np.cumsum(np.tile(0.999 * max_step, (200, 1)), axis=0)  # every joint at just under its top speed
    steps = np.diff(sample)[:, None] * max_step
    np.testing.assert_array_equal(separation.rate_limit(shape[sample], steps), shape[sample])
    assert (np.abs(separation.rate_limit(shape[sample], 4 * max_step) - shape[sample]) > 1e-6).any()  # even: held back
