"""Centre of mass, multibody ZMP and the support margin on the bundled robots.

Independent checks: the centre of mass summed link by link with link_transform; a
robot standing still has its ZMP at the centre of mass's ground projection; an arm
accelerated forward pushes the ZMP backward; a robot standing on both feet has its
ZMP inside the support polygon, and pushed far forward it leaves it.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from core.balance import BalanceError, MassModel, balance_readout, centre_of_mass, multibody_zmp
from core.model.kinematics import KinematicTree
from core.model.urdf import parse_urdf, parse_urdf_string

ROOT = Path(__file__).resolve().parents[2]
G1 = ROOT / "data" / "robots" / "g1" / "unitree_g1_29dof.urdf"
H1 = ROOT / "tests" / "data" / "robots" / "unitree_h1_19dof.urdf"
FPS = 100.0


@pytest.fixture(scope="module", params=["g1", "h1"])
def robot(request):
    return KinematicTree(parse_urdf({"g1": G1, "h1": H1}[request.param]))


def _standing(tree: KinematicTree, frames: int = 50) -> tuple[np.ndarray, np.ndarray]:
    """Zero pose with the lowest foot point on the ground (z = 0)."""
    q = np.tile(np.clip(0.0, tree.lower, tree.upper), (frames, 1))
    root = np.tile(np.eye(4), (frames, 1, 1))
    from core.balance.support import foot_bodies, foot_links

    feet = foot_links(tree)
    poses = tree.poses(q[:1], root[:1], feet)
    lowest = min(float(body.lowest(poses[body.link])[0]) for body in foot_bodies(tree, feet))
    root[:, 2, 3] = -lowest
    return q, root


@pytest.mark.parametrize("path,kg", [(G1, 33.34), (H1, 51.62)])
def test_masses(path, kg):
    model = MassModel.build(KinematicTree(parse_urdf(path)))
    assert model.total == pytest.approx(kg, abs=0.01)
    assert np.all(model.mass > 0) and np.allclose(model.inertia_local, np.swapaxes(model.inertia_local, 1, 2))


def test_centre_of_mass_link_by_link(robot):
    rng = np.random.default_rng(1)
    q = rng.uniform(np.maximum(robot.lower, -1), np.minimum(robot.upper, 1), (4, robot.dof))
    root = np.tile(np.eye(4), (4, 1, 1))
    root[:, :3, 3] = [0.3, -0.2, 0.9]
    expected, total = np.zeros((4, 3)), 0.0
    for i, name in enumerate(robot.link_names):
        inertial = robot.robot.links[name].inertial
        if inertial is None or inertial.mass <= 0:
            continue
        pose = robot.link_transform(q, i, root) @ inertial.origin
        expected += inertial.mass * pose[:, :3, 3]
        total += inertial.mass
    np.testing.assert_allclose(centre_of_mass(robot, q, root), expected / total, atol=1e-12)
    # the correction's own (its links posed frames last, core.model.posing): the same body
    from core.balance.correction import CorrectionSettings, Corrector
    from core.balance.legs import leg_iks
    from core.balance.support import foot_links

    feet = foot_links(robot)
    level = {foot: np.tile(np.eye(4), (4, 1, 1)) for foot in feet}
    corrector = Corrector(robot, leg_iks(robot, feet), MassModel.build(robot), level,
                          {foot: np.ones(4, dtype=bool) for foot in feet}, root[:, :3, :3], np.zeros(4), q, 0.01,
                          CorrectionSettings())
    np.testing.assert_allclose(corrector.centre_of_mass(q, root), expected / total, atol=1e-12)


def test_standing_still_the_zmp_is_under_the_centre_of_mass(robot):
    q, root = _standing(robot)
    zmp, com = multibody_zmp(robot, q, root, FPS)
    np.testing.assert_allclose(zmp, com[:, :2], atol=1e-3)


def test_an_arm_accelerated_forward_pushes_the_zmp_back():
    g1 = KinematicTree(parse_urdf(G1))
    q, root = _standing(g1, frames=200)
    t = np.arange(len(q)) / FPS
    col = g1.joint_names.index("right_shoulder_pitch_joint")
    q[:, col] = -0.8 * np.sin(2 * np.pi * 1.0 * t)  # negative pitch swings the arm forward
    zmp, com = multibody_zmp(g1, q, root, FPS)
    hand = g1.link_transform(q, g1.link_index("right_rubber_hand"), root)[:, 0, 3]
    forward_acc = np.gradient(np.gradient(hand, 1 / FPS), 1 / FPS)
    lag = zmp[:, 0] - com[:, 0]
    inner = slice(10, -10)
    assert np.corrcoef(forward_acc[inner], lag[inner])[0, 1] < -0.9
    assert np.ptp(lag[inner]) > 0.01  # a 1 Hz swing of a 2 kg arm moves it by centimetres


def test_standing_readout_is_inside_and_a_push_leaves_the_support(robot):
    q, root = _standing(robot)
    readout = balance_readout(robot, q, root, FPS, per_frame=True)
    assert readout["frames"] == len(q) and readout["zmp_outside_support_pct"] == 0.0
    assert 0.02 < readout["min_support_margin_m"] < 0.3
    leaning = root.copy()
    tilt = np.radians(25.0)
    leaning[:, :3, :3] = [[np.cos(tilt), 0, np.sin(tilt)], [0, 1, 0], [-np.sin(tilt), 0, np.cos(tilt)]]
    fallen = balance_readout(robot, q, leaning, FPS)
    assert fallen["zmp_outside_support_pct"] == 100.0


def test_rigid_parts_weigh_as_one_body(robot):
    """inertia.rigid_bodies: a link a fixed joint holds moves with its parent, so the two are one body to the
    CoM and, for light parts (the H1's 1 g foot spheres riding on its ankles), to the ZMP within micrometres
    (the low-pass smooths a body's points, not its parts'); a body of one link keeps its numbers to the bit.
    The correction weighs the legs so (correction._SplitBody): the G1's legs have no rigid parts, its model
    there is the same."""
    from core.balance.correction import CorrectionSettings, Corrector
    from core.balance.inertia import rigid_bodies
    from core.balance.legs import leg_iks
    from core.balance.support import foot_links
    from core.model.kinematics import FIXED

    model = MassModel.build(robot)
    merged = rigid_bodies(robot, model)
    fixed = [int(k) for k in model.links if k > 0 and robot.kind[k] == FIXED]
    assert len(merged.links) == len(model.links) - len(fixed)
    assert merged.total == pytest.approx(model.total, abs=1e-12)
    assert not set(fixed) & {int(k) for k in merged.links}
    alone = [i for i, k in enumerate(model.links)
             if k in merged.links and not any(robot.parent[f] == k for f in fixed)]
    at = [list(merged.links).index(model.links[i]) for i in alone]
    assert np.array_equal(merged.com_local[at], model.com_local[alone])
    assert np.array_equal(merged.inertia_local[at], model.inertia_local[alone])
    # the arms and legs swinging at 1 Hz over a walking waist
    t = np.arange(300) / FPS
    rng = np.random.default_rng(3)
    q = np.clip(0.3 * np.sin(2 * np.pi * t[:, None] + rng.uniform(0, 6, robot.dof)), robot.lower, robot.upper)
    root = np.tile(np.eye(4), (len(t), 1, 1))
    root[:, :3, 3] = np.column_stack([0.4 * t, 0.05 * np.sin(2 * np.pi * t), 0.9 + 0 * t])
    np.testing.assert_allclose(centre_of_mass(robot, q, root, merged), centre_of_mass(robot, q, root, model),
                               atol=1e-12)
    feet = foot_links(robot)
    level = {foot: np.tile(np.eye(4), (len(t), 1, 1)) for foot in feet}
    down = {foot: np.ones(len(t), dtype=bool) for foot in feet}
    corrector = Corrector(robot, leg_iks(robot, feet), model, level, down, root[:, :3, :3], np.zeros(len(t)), q,
                          1.0 / FPS, CorrectionSettings())
    whole, _ = multibody_zmp(robot, q, root, FPS, model=model)
    zmp, _ = corrector.zmp(q, root[:, :3, 3])
    leg_links = {int(link) for leg in corrector.legs for link in leg.links}
    parts = [k for k in fixed if int(robot.parent[k]) in leg_links]
    if parts:  # the H1: its ankles' 1 g parts weighed with the ankles
        assert max(model.mass[list(model.links).index(k)] for k in parts) < 0.01
        assert not set(parts) & {int(k) for k in corrector.split.moving.links}
        assert np.abs(zmp - whole).max() < 1e-5
    else:  # the G1: the legs' links as the model has them, the ZMP the readout's to rounding
        assert np.abs(zmp - whole).max() < 1e-9


def _links_moving(robot: KinematicTree, model: MassModel, seed: int):
    """Times (F,), root poses (F, 4, 4) and the model's links' poses (F, K, 4, 4) of the robot's joints
    swinging at random phases while its root walks."""
    t = np.arange(240) / FPS
    rng = np.random.default_rng(seed)
    q = np.clip(0.4 * np.sin(2 * np.pi * t[:, None] + rng.uniform(0, 6, robot.dof)), robot.lower, robot.upper)
    root = np.tile(np.eye(4), (len(t), 1, 1))
    root[:, :3, 3] = np.column_stack([0.4 * t, 0.05 * np.sin(2 * np.pi * t), 0.9 + 0 * t])
    poses = robot.poses(q, root, [int(k) for k in model.links])
    return t, root, np.stack([poses[int(k)] for k in model.links], axis=1)


def test_link_motion_on_frames_last_columns_keeps_its_bits(robot):
    """LinkMotion.of_parts works on each rotation entry's (K, F) block: on the passes' frames-last columns
    (correction._motion) and on frames-first poses (the readout's) the same centres of mass and accelerations to
    the bit; the rates' central differences are numpy's gradient's bits; the torque sums the links in each
    layout's order (numpy's on the (F, K) products before: link after link, pairwise), apart by rounding only."""
    from core.balance.inertia import LinkMotion, _gradient_last

    model = MassModel.build(robot)
    t, _, first = _links_moving(robot, model, 24)
    cols = np.ascontiguousarray(first[..., :3, :3].transpose(3, 2, 1, 0))  # (3, 3, K, F): [b, a] = R[a, b]
    places = np.ascontiguousarray(first[..., :3, 3].transpose(2, 1, 0))
    last = LinkMotion.of_parts(cols.transpose(3, 2, 1, 0), places.transpose(2, 1, 0), model, FPS)
    ahead = LinkMotion.of(first, model, FPS)
    assert np.array_equal(last.com, ahead.com) and np.array_equal(last.acc, ahead.acc)
    assert np.abs(last.torque - ahead.torque).max() <= 1e-12 * max(1.0, np.abs(ahead.torque).max())
    for frames in (2, 3, len(t)):
        part = np.ascontiguousarray(cols[..., :frames])
        assert np.array_equal(_gradient_last(part, 1.0 / FPS), np.gradient(part, 1.0 / FPS, axis=-1))


def test_a_calls_low_passes_in_one_filter_call_are_each_alone(robot):
    """LinkMotion.of_parts low-passes its links' CoMs, their momentum and a carried translation's path with one
    filter call, their columns side by side: each part as filtered alone, to the bit, and the carried links
    joined as moved_by and joined put them (the passes' multibody ZMP, correction._SplitBody)."""
    from core.balance.inertia import ACCELERATION_CUTOFF_HZ, LinkMotion, _smooth, _smooth_each

    model = MassModel.build(robot)
    t, root, first = _links_moving(robot, model, 26)
    rng = np.random.default_rng(26)
    parts = [first[..., :3, 3], first[:, 0, :3, 0], root[:, :3, 3] + rng.normal(0, 1e-3, (len(t), 3))]
    for each, alone in zip(_smooth_each(parts, FPS, ACCELERATION_CUTOFF_HZ), parts):
        assert each.shape == alone.shape
        assert np.array_equal(each, _smooth(alone, FPS, ACCELERATION_CUTOFF_HZ))
    half = len(model.links) // 2
    these, others = model.subset(np.arange(len(model.links)) < half), model.subset(np.arange(len(model.links)) >= half)
    other = LinkMotion.of(first[:, half:], others, FPS)
    shift = parts[2]
    joined = LinkMotion.of_parts(first[:, :half, :3, :3], first[:, :half, :3, 3], these, FPS, carrying=(other, shift))
    apart = LinkMotion.of_parts(first[:, :half, :3, :3], first[:, :half, :3, 3], these, FPS)
    apart = apart.joined(other.moved_by(shift, FPS))
    for name in ("com", "acc", "torque"):
        assert np.array_equal(getattr(joined, name), getattr(apart, name))


def test_a_robot_without_masses_gets_a_clear_error():
    arm = KinematicTree(parse_urdf_string(
        '<robot name="bare"><link name="a"/><link name="b"/><joint name="j" type="revolute"><parent link="a"/>'
        '<child link="b"/><axis xyz="0 0 1"/><limit lower="-1" upper="1" effort="1" velocity="1"/></joint></robot>'))
    with pytest.raises(BalanceError, match="'bare'.*inertial"):
        MassModel.build(arm)


def test_feet_of_many_points_give_the_all_pairs_margins(monkeypatch):
    """A foot given as a mesh hull has hundreds of points (Talos's: 308; the all-pairs test asked
    for 217 GiB): each frame's ground points are reduced to their hull first, same margins."""
    from core.balance import support
    from core.balance.support import foot_bodies, foot_links
    from core.feet.geometry import BodyPoints

    tree = KinematicTree(parse_urdf(G1))
    q, root = _standing(tree, frames=6)
    root[3:, 2, 3] += 0.05  # last frames: in the air
    root[1, :3, :3] = [[1, 0, 0], [0, np.cos(0.2), -np.sin(0.2)], [0, np.sin(0.2), np.cos(0.2)]]  # on an edge
    feet = foot_links(tree)
    rng = np.random.default_rng(7)
    bodies = []
    for b in foot_bodies(tree, feet):  # the G1's feet are 4 spheres each: add 60 points on their segments
        i, j = rng.integers(0, len(b.points), (2, 60))
        t = rng.random((60, 1))
        bodies.append(BodyPoints(b.link, np.concatenate([b.points, (1 - t) * b.points[i] + t * b.points[j]]),
                                 np.concatenate([b.radius, (1 - t[:, 0]) * b.radius[i] + t[:, 0] * b.radius[j]])))
    poses = tree.poses(q, root, feet)
    points = np.concatenate([b.points @ poses[b.link][:, :3, :3].transpose(0, 2, 1) + poses[b.link][:, None, :3, 3]
                             for b in bodies], axis=1)
    radius = np.concatenate([b.radius for b in bodies])
    assert points.shape[1] > support.ALL_PAIRS_POINTS
    zmp = np.array([[0.0, 0.0], [0.02, 0.1], [0.3, 0.0], [0.0, 0.0], [0.1, 0.1], [0.0, 0.0]])
    by_hull = support.support_margins(points, zmp, 0.0, radius)
    monkeypatch.setattr(support, "ALL_PAIRS_POINTS", 10 ** 6)
    monkeypatch.setattr(support, "ALL_PAIRS_BUDGET", 10 ** 6)  # frame blocks of one or two frames
    all_pairs = support.support_margins(points, zmp, 0.0, radius)
    np.testing.assert_allclose(by_hull, all_pairs, atol=1e-6)  # the hull rounds to micrometres
    assert np.isfinite(by_hull[:3]).all() and np.isneginf(by_hull[3:]).all()


def test_ground_patterns_group_the_frames_as_their_rows():
    """support._ground_patterns: the distinct ground patterns and each frame's, as bits of one integer up to 62
    points (numpy's unique of the rows beyond): every frame's row is its pattern's, and no pattern repeats."""
    from core.balance.support import _ground_patterns

    rng = np.random.default_rng(24)
    for points in (12, 62, 70):
        down = rng.random((300, points)) < 0.5
        down[::3] = down[0]  # repeated patterns
        patterns, group = _ground_patterns(down)
        assert np.array_equal(patterns[group], down)
        assert len(np.unique(patterns, axis=0)) == len(patterns)


def test_frames_the_ground_cannot_push_have_no_zmp_and_count_as_outside():
    """The robot bobbing down and up faster than it could fall (2 Hz, 16 cm: the top of each bob
    accelerates down at 1.3 g) while swaying: there the ground would have to pull, the ZMP's
    divisor crosses zero, and it is not a place (metres to kilometres away) but undefined. Those
    frames are counted and outside; the worst margin comes from the frames that are supported."""
    g1 = KinematicTree(parse_urdf(G1))
    q, root = _standing(g1, frames=300)
    t = np.arange(len(q)) / FPS
    still = balance_readout(g1, q, root, FPS)
    root[:, 2, 3] -= 0.08 * (1.0 - np.cos(2 * np.pi * 2.0 * t))
    root[:, 0, 3] += 0.02 * np.sin(2 * np.pi * 2.0 * t)
    readout = balance_readout(g1, q, root, FPS, per_frame=True)
    light = [m is None for m in readout["support_margin_m"]]
    assert still["frames_without_ground_force"] == 0
    assert 0 < readout["frames_without_ground_force"] == sum(light) - readout["frames_without_support"]
    assert readout["zmp_outside_support_pct"] >= 100.0 * readout["frames_without_ground_force"] / len(q)
    # where the ground pushes with at least a tenth of the weight the sway's 3 m/s^2 puts the ZMP
    # within about a metre; all frames counted, it reached 5.3 m from the centre of mass
    assert -1.5 < readout["min_support_margin_m"] < 0.3


def test_a_robot_rooted_at_a_foot_reads_the_same_balance():
    """A URDF rooted at its left foot (joints reversed up the leg) is the same robot: the same
    motion, its root given as that foot's pose, reads the same balance. Its feet are found from
    the pelvis; from its root the whole robot hangs off the left foot (it had found no legs)."""
    import dataclasses

    from core.motion.bvh import load_bvh
    from core.retarget.automap import auto_map
    from core.retarget.pipeline import retarget
    from tests.robot_variants import rooted_at

    tree = KinematicTree(parse_urdf(G1))
    walk = load_bvh(ROOT / "data" / "motion" / "cmu_131_01_walk_m.bvh").to_source_motion()
    walk = dataclasses.replace(walk, heads=walk.heads[:240], tails=walk.tails[:240],
                               root_rotation=walk.root_rotation[:240])
    result = retarget(walk, tree, auto_map(walk, tree), contacts="auto")  # planted: on the ground
    root = np.tile(np.eye(4), (len(result.q), 1, 1))
    root[:, :3, :3], root[:, :3, 3] = result.root_rotation, result.root_position
    plain = balance_readout(tree, result.q, root, walk.fps, per_frame=True)

    foot = KinematicTree(rooted_at(tree.robot, "left_ankle_roll_link"))
    q = result.q[:, [tree.joint_names.index(name) for name in foot.joint_names]]
    rooted = balance_readout(foot, q, tree.link_transform(result.q, tree.link_index("left_ankle_roll_link"), root),
                             walk.fps, per_frame=True)
    assert plain["frames_without_support"] < len(result.q) // 2  # the walk stands on its feet
    for key in ("zmp_outside_support_pct", "frames_without_support", "frames_without_ground_force"):
        assert rooted[key] == plain[key], key
    np.testing.assert_allclose(rooted["zmp_m"], plain["zmp_m"], atol=1e-6)
    margins = [np.array([np.nan if m is None else m for m in r["support_margin_m"]]) for r in (plain, rooted)]
    np.testing.assert_allclose(margins[1], margins[0], atol=1e-6)
