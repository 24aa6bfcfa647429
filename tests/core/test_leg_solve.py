"""core.balance.leg_solve: the legs' Levenberg-Marquardt with few numpy calls a step keeps the arithmetic of
the walk it replaced (leg_chain.down_last, rotation_errors_last: the same bits), and its packed samples
leave and stay as each sample's own solve would."""
from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from core.balance import leg_solve
from core.balance.leg_chain import (down_last, frames_last, frames_last_of, joint_frames_last, last_origin,
                                    stacked_walk)
from core.balance.legs import _solve_leg, _solve_together, _walk, at_sole, leg_iks
from core.balance.planar_leg import planar_legs, standing_legs
from core.balance.support import foot_links
from core.model.kinematics import KinematicTree
from core.model.transforms import pose_matrices
from core.model.urdf import parse_urdf
from tests.core.test_gait import ROBOTS


def _legs(robot: str, standing: bool = False):
    tree = KinematicTree(parse_urdf(ROBOTS[robot]))
    legs = leg_iks(tree, foot_links(tree))
    return tree, standing_legs(tree, legs) if standing else legs


def _frames(rng, count: int, height: float = 1.0) -> np.ndarray:
    return pose_matrices(Rotation.from_rotvec(rng.uniform(-0.3, 0.3, (count, 3))).as_matrix(),
                         rng.uniform(-0.1, 0.1, (count, 3)) + [0.0, 0.0, height])


def rotation_errors_last(cols: list[np.ndarray], goal: np.ndarray) -> np.ndarray:
    """The legs' rotation error (3, F) as core.balance.leg_chain worked it out before leg_solve, the reference
    leg_solve._rotation_errors keeps to the bit: the rotations by their columns (3 x (3, F)), the goals as
    goal[i, k] (3, 3, F)."""
    # m[i][j] = sum_k G[i, k] R[j, k]: G R^T, summed over k in order (as a sum over a stacked axis sums), entry
    # by entry: no (3, 3, 3, F) product to stack and reduce
    m = [[(goal[i, 0] * cols[0][j] + goal[i, 1] * cols[1][j]) + goal[i, 2] * cols[2][j] for j in range(3)]
         for i in range(3)]
    v = 0.5 * np.stack([m[2][1] - m[1][2], m[0][2] - m[2][0], m[1][0] - m[0][1]])
    sin = np.sqrt((v * v).sum(axis=0))
    cos = 0.5 * (m[0][0] + m[1][1] + m[2][2] - 1.0)
    angle = np.arctan2(sin, cos)
    return v * np.where(sin > 1e-12, angle / np.maximum(sin, 1e-12), 1.0)


def _reference(walk, revolute, x, frame, goal_rot, goal_pos):
    """The residual's pose part as core.balance.legs worked it out before leg_solve (unweighted)."""
    cols, pos, axes, origins = down_last(walk, x, frame)
    lever = pos - origins
    jac = np.empty((6,) + x.shape)
    for k, (i, j) in enumerate(((1, 2), (2, 0), (0, 1))):
        cross = axes[:, i] * lever[:, j] - axes[:, j] * lever[:, i]
        jac[k] = np.where(revolute[:, None], cross, axes[:, k])
        jac[3 + k] = np.where(revolute[:, None], axes[:, k], 0.0)
    return goal_pos - pos, rotation_errors_last(cols, goal_rot), jac


@pytest.mark.parametrize("robot,stacked", [("h1", True), ("h1", False), ("g1", False), ("g1", True)])
def test_the_residual_is_the_walk_s_to_the_bit(robot, stacked):
    tree, legs = _legs(robot, standing=robot == "h1")
    rng = np.random.default_rng(11)
    count = 37
    walks = [_walk(tree, leg) for leg in legs]
    walk = stacked_walk(walks, [count] * len(legs)) if stacked else walks[0]
    if walk is None:
        pytest.skip(f"the {robot}'s legs are not built alike")
    samples = count * (len(legs) if stacked else 1)
    leg = legs[0]
    lower, upper = leg.lower[:, None], leg.upper[:, None]
    x = np.clip(rng.uniform(-1.0, 1.0, (len(leg.columns), samples)), lower, upper)
    frame = frames_last(_frames(rng, samples))
    goal_rot = np.ascontiguousarray(Rotation.from_rotvec(rng.uniform(-0.5, 0.5, (samples, 3))).as_matrix()
                                    .transpose(1, 2, 0))
    goal_pos = rng.uniform(-0.3, 0.3, (3, samples))
    chain = leg_solve._chain(walk, leg.revolute)
    cols, pos, axis = leg_solve._head(chain, frame)
    shifts = np.array([chain.tail[k].shift[c] for k, c in chain.per_row]).reshape(-1, samples)
    g = {"cols": np.array(cols), "pos": pos, "axis": axis, "rotation": leg_solve._goal_rows(goal_rot),
         "position": goal_pos, "weights": np.ones((6, samples)),
         "rest": np.zeros_like(x), "prior": np.ones_like(x), "shifts": leg_solve._rows3(shifts)}
    err, jac = np.empty((6 + len(x), samples)), np.empty((6, len(x), samples))
    leg_solve._residual(chain, g, x, err, jac)
    position, rotation, reference = _reference(walk, leg.revolute, x, frame, goal_rot, goal_pos)
    assert np.array_equal(err[:3], position)
    assert np.array_equal(err[3:6], rotation)
    assert np.array_equal(jac, reference)
    assert np.array_equal(err[6:], -x)


def _reachable(tree, leg, rng, count: int, spread: float, height: float, knee: tuple[float, float] | None = None):
    """Base frames (count, 4, 4) at about height and the foot poses the leg reaches under them, its joints
    within spread of zero (the knee in the range knee when given)."""
    q = np.zeros((count, tree.dof))
    q[:, leg.columns] = np.clip(rng.uniform(-spread, spread, (count, len(leg.columns))), leg.lower, leg.upper)
    if knee is not None:
        q[:, leg.knee] = rng.uniform(*knee, count)
    base = _frames(rng, count, height)
    root = base @ np.linalg.inv(tree.link_transform(np.zeros((1, tree.dof)), leg.base, np.eye(4)[None])[0])
    return base, tree.link_transform(q, leg.foot, root)


def test_each_sample_solves_as_it_would_alone():
    """The samples leave the packed arrays as they converge, at different steps: each one's answer is the
    one it gets solved by itself (both under LAST_SMALL_BATCH, where the step is LAPACK's per system), and
    the G1's six-joint legs meet poses they can reach."""
    tree, legs = _legs("g1")
    leg = legs[0]
    count = 40
    base, goal = _reachable(tree, leg, np.random.default_rng(4), count, 0.6, 0.8)
    start, rest = np.zeros((count, len(leg.columns))), np.zeros((count, len(leg.columns)))
    prior = np.full(count, 0.002)
    bounds = (np.repeat(leg.lower[None], count, axis=0), np.repeat(leg.upper[None], count, axis=0))
    x, err = _solve_leg(tree, leg, base, goal, start, rest, prior, 40, bounds)
    alone = [_solve_leg(tree, leg, base[[k]], goal[[k]], start[[k]], rest[[k]], prior[[k]], 40,
                        (bounds[0][[k]], bounds[1][[k]])) for k in range(count)]
    assert np.array_equal(x, np.concatenate([a[0] for a in alone]))
    assert np.array_equal(err, np.concatenate([a[1] for a in alone]))
    assert np.median(np.linalg.norm(err[:, :3], axis=1)) < 1e-4


def test_the_hip_is_down_last_s_origin_to_the_bit():
    """The rolled waist's residual asks only where each hip is with its head aimed (planar_leg.plane_miss):
    last_origin walks there without the other joints' frames, to the same bits as joint_frames_last."""
    tree, legs = _legs("h1")
    rng = np.random.default_rng(7)
    count = 53
    frame = frames_last(_frames(rng, count))
    for planar in planar_legs(tree, legs):
        head = rng.uniform(-0.4, 0.4, (count, 2))
        _, origins = joint_frames_last(planar.head, np.column_stack([head, np.zeros(count)]), frame)
        assert np.array_equal(last_origin(planar.head, np.ascontiguousarray(head.T), frame).T, origins[:, -1])
        with pytest.raises(ValueError):
            last_origin(planar.head, np.zeros((3, count)), frame)
    poses = _frames(rng, count)
    assert np.array_equal(frames_last_of(poses[:, :3, :3], poses[:, :3, 3]), frames_last(poses))


def _out_of_reach(tree, leg, rng, count: int, beyond_m: float):
    """H1 foot goals just beyond the leg's reach (a straight knee: Gauss-Newton's model there promises gains the
    trials do not buy, the legs' stragglers in the gait), with their base frames."""
    q = np.zeros((count, tree.dof))
    q[:, leg.columns] = np.clip(rng.uniform(-0.3, 0.3, (count, len(leg.columns))), leg.lower, leg.upper)
    q[:, leg.knee] = rng.uniform(0.0, 0.05, count)  # nearly straight
    base = _frames(rng, count, 1.0)
    root = base @ np.linalg.inv(tree.link_transform(np.zeros((1, tree.dof)), leg.base, np.eye(4)[None])[0])
    goal = tree.link_transform(q, leg.foot, root)
    hip = (base @ tree.origins[leg.hip])[:, :3, 3]
    away = goal[:, :3, 3] - hip
    goal[:, :3, 3] += away / np.linalg.norm(away, axis=1)[:, None] * beyond_m
    return base, goal


def _counted_residuals(monkeypatch) -> list[int]:
    """The sample count of every residual leg_solve works out from now on (a solve's cost is per residual)."""
    sizes = []
    residual = leg_solve._residual

    def counted(chain, g, x, *rest):
        sizes.append(x.shape[1])
        return residual(chain, g, x, *rest)
    monkeypatch.setattr(leg_solve, "_residual", counted)
    return sizes


def test_a_failed_trial_the_model_gives_little_ends_the_sample(monkeypatch):
    """PREDICTED_STOP: a sample whose trial failed where the damped step's model gain is under GAIN_TOL of its
    cost stops there (the tries after it, each more damped, promise less). On goals just out of reach its samples
    take fewer residuals in all, no more steps, and every sample's cost stays within GAIN_TOL of the solve that
    runs on."""
    tree, legs = _legs("h1")
    leg = legs[0]
    rng = np.random.default_rng(5)
    count = 60
    base, goal = _out_of_reach(tree, leg, rng, count, 0.02)
    joints = len(leg.columns)
    start = np.clip(rng.uniform(-0.2, 0.2, (count, joints)), leg.lower, leg.upper)
    rest = np.zeros((count, joints))
    bounds = (np.repeat(leg.lower[None], count, axis=0), np.repeat(leg.upper[None], count, axis=0))
    sizes = _counted_residuals(monkeypatch)
    solved = {}
    for stop in (False, True):
        monkeypatch.setattr(leg_solve, "PREDICTED_STOP", stop)
        sizes.clear()
        x, err = _solve_leg(tree, leg, base, goal, start, rest, np.full(count, 0.002), 40, bounds)
        solved[stop] = (x, (err ** 2).sum(1), sum(sizes), len(sizes))
    (x_on, cost_on, residuals_on, steps_on), (x_off, cost_off, residuals_off, steps_off) = solved[True], solved[False]
    assert residuals_on < residuals_off and steps_on <= steps_off
    assert not np.array_equal(x_on, x_off)
    assert (cost_on <= cost_off * (1.0 + leg_solve.GAIN_TOL)).all()
    assert np.sqrt(cost_on).max() > 0.015  # out of reach indeed


def test_a_restart_that_has_not_come_under_its_rival_by_race_steps_stops(monkeypatch):
    """beat (a restart's rival cost, RACE_STEPS): a sample still above the cost it would have to beat after
    RACE_STEPS steps stops there; one that can beat it solves exactly as without a rival (each sample is its own
    problem). H1 goals the leg reaches, solved from a bent rest as solve_legs restarts."""
    tree, legs = _legs("h1")
    leg = legs[0]
    count = 40
    base, goal = _reachable(tree, leg, np.random.default_rng(9), count, 0.4, 1.0, (0.3, 1.2))
    joints = len(leg.columns)
    start, rest = np.zeros((count, joints)), np.zeros((count, joints))
    start[:, list(leg.columns).index(leg.knee)] = leg.bend
    bounds = (np.repeat(leg.lower[None], count, axis=0), np.repeat(leg.upper[None], count, axis=0))
    prior = np.full(count, 0.002)
    beat = np.where(np.arange(count) % 2 == 0, np.inf, 0.0)  # odd samples' rivals cannot be beaten
    sizes = _counted_residuals(monkeypatch)
    monkeypatch.setattr(leg_solve, "RACE_STEPS", 4)
    free, free_err = _solve_leg(tree, leg, base, goal, start, rest, prior, 40, bounds)
    steps_free = len(sizes)
    sizes.clear()
    x, err = _solve_leg(tree, leg, base, goal, start, rest, prior, 40, bounds, beat=beat)
    assert np.array_equal(x[::2], free[::2]) and np.array_equal(err[::2], free_err[::2])
    assert not np.array_equal(x[1::2], free[1::2])
    sizes.clear()
    _solve_leg(tree, leg, base, goal, start, rest, prior, 40, bounds, beat=np.zeros(count))
    assert len(sizes) == 1 + 4 < steps_free  # the first residual and four steps' trials, then none is left


def _pair_problems(tree, legs, counts: list[int]) -> list[tuple]:
    """solve_legs' problems (leg, base, goal, start, rest, prior, bounds) for the legs, counts[k] samples each:
    goals the leg reaches mixed with goals just beyond its reach (samples that stop at different steps), a
    standing foot's prior and a swinging foot's."""
    rng = np.random.default_rng(17)
    problems = []
    for leg, count in zip(legs, counts):
        near = count // 2
        base, goal = _reachable(tree, leg, rng, near, 0.4, 1.0, (0.2, 1.0))
        far_base, far_goal = _out_of_reach(tree, leg, rng, count - near, 0.02)
        base, goal = np.concatenate([base, far_base]), at_sole(np.concatenate([goal, far_goal]), leg.sole)
        joints = len(leg.columns)
        start = np.clip(rng.uniform(-0.2, 0.2, (count, joints)), leg.lower, leg.upper)
        prior = np.where(rng.random(count) < 0.3, 0.02, 0.002)
        bounds = (np.repeat(leg.lower[None], count, axis=0), np.repeat(leg.upper[None], count, axis=0))
        problems.append((leg, base, goal, start, np.zeros((count, joints)), prior, bounds))
    return problems


@pytest.mark.parametrize("counts,all_lapack", [([70, 53], False), ([300, 260], True)])
def test_both_legs_stacked_solve_as_each_leg_alone(monkeypatch, counts, all_lapack):
    """legs._solve_together runs the H1's two legs (built alike, mirrored shifts) as one Levenberg-Marquardt call,
    the shifts per row: each sample's joints and error are the bits its leg's own call gives, though its samples
    stop at different steps. The step's solve is the one size choice that parts them (LAPACK below
    LAST_SMALL_BATCH systems, spd_solve_last from it: bench/leg_pair_bits.py); with LAPACK throughout, a stack of
    560 against legs of 300 and 260 also crosses NORMAL_ROWS_FROM and INDEX_GATHER_FROM to the same bits."""
    tree, legs = _legs("h1", standing=True)
    problems = _pair_problems(tree, legs, counts)
    assert stacked_walk([_walk(tree, leg) for leg in legs], counts) is not None
    if all_lapack:
        monkeypatch.setattr(leg_solve, "LAST_SMALL_BATCH", 10 ** 9)
        assert sum(counts) >= leg_solve.NORMAL_ROWS_FROM > max(counts)
    else:
        assert sum(counts) < leg_solve.LAST_SMALL_BATCH
    sizes = _counted_residuals(monkeypatch)
    stacked = _solve_together(tree, problems, 40)
    assert sizes[0] == sum(counts) and len(set(sizes)) > 5  # one call, its samples leaving at many steps
    for problem, (x, err) in zip(problems, stacked):
        alone_x, alone_err = _solve_together(tree, [problem], 40)[0]
        assert np.array_equal(x, alone_x) and np.array_equal(err, alone_err)
        miss = np.linalg.norm(err[:, :3], axis=1)
        assert np.median(miss[:len(miss) // 2]) < 3e-3 < 1e-2 < np.median(miss[len(miss) // 2:])  # reached; beyond
