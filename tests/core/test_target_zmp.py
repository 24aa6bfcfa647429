"""The target ZMP walks from foot to foot without a step."""
from __future__ import annotations

import numpy as np

from core.balance.target import target_zmp


def _steps(frames: int = 400):
    """Stand 0-49, then left stance 50-149, double 150-179, right stance 180-279, double
    280-309, left 310-379, stand 380-: feet 0.2 m apart, stepping 0.3 m forward."""
    left = np.ones(frames, bool)
    right = np.ones(frames, bool)
    right[50:150] = False
    left[180:280] = False
    right[310:380] = False
    sole = {"left": np.tile([0.0, 0.1], (frames, 1)), "right": np.tile([0.0, -0.1], (frames, 1))}
    sole["right"][150:] += [0.3, 0.0]
    sole["left"][280:] += [0.6, 0.0]
    return sole, {"left": left, "right": right}


def test_under_the_stance_foot_and_continuous():
    sole, down = _steps()
    zmp = target_zmp(sole, down)
    np.testing.assert_allclose(zmp[60:150], sole["left"][60:150])
    np.testing.assert_allclose(zmp[190:280], sole["right"][190:280])
    np.testing.assert_allclose(zmp[0], (sole["left"][0] + sole["right"][0]) / 2, atol=1e-3)  # ramping from there
    step = np.linalg.norm(np.diff(zmp, axis=0), axis=1)
    assert step.max() < 0.03  # no jump: at most a few centimetres per frame across double support
    # during a double support the target stays between the two feet
    mid = zmp[150:180]
    assert np.all(mid[:, 1] <= 0.1 + 1e-12) and np.all(mid[:, 1] >= -0.1 - 1e-12)


def test_a_foot_that_only_touches_leaves_the_zmp_on_the_stance_foot():
    sole, down = _steps()
    down["right"][100:105] = True  # the swing foot brushes the floor
    zmp = target_zmp(sole, down)
    np.testing.assert_allclose(zmp[100:105], sole["left"][100:105])


def test_the_preview_controller_follows_the_stepping_target():
    """Target ZMP from the steps (at 100 Hz) through the cart-table preview controller: the
    centre of mass path keeps its ZMP within a centimetre of the target."""
    from core.balance.preview import PreviewSettings, follow_zmp

    sole, down = _steps()
    target = target_zmp(sole, down)
    com, zmp = follow_zmp(target, PreviewSettings(period_s=0.01))
    assert np.abs(zmp - target).max() < 0.01
    assert com[-1, 0] > 0.4  # the body travelled forward with the feet


def test_a_foot_placed_at_the_clips_start_takes_the_weight_only_once_it_lands():
    """A clip starting with the left foot in the air (the walk cut at frame 100): the gait stands that
    foot on its first stance from the start (placed), but the person stands on the right until the
    left lands. The target goes from between the feet to the right foot while the left is placed,
    then to the left over the double support before the right lifts, without a jump."""
    sole, down = _steps()
    placed = {"left": np.zeros(400, bool), "right": np.zeros(400, bool)}
    placed["left"][:30] = True  # the left foot lands at 30, the right lifts at 50
    zmp = target_zmp(sole, down, placed)
    np.testing.assert_allclose(zmp[0], (sole["left"][0] + sole["right"][0]) / 2)
    np.testing.assert_allclose(zmp[29], sole["right"][29], atol=2e-3)  # on the standing foot by the landing
    assert (np.diff(zmp[:30, 1]) < 0).all() and (np.diff(zmp[30:50, 1]) > 0).all()  # right, then left
    np.testing.assert_allclose(zmp[50:150], sole["left"][50:150])  # then the walk as before
    assert np.linalg.norm(np.diff(zmp[:60], axis=0), axis=1).max() < 0.03
    np.testing.assert_allclose(target_zmp(sole, down, None), target_zmp(sole, down))


def _walk_hulls():
    """The bundled walk's hips (F, 2), the hulls of its ankles and toes ten frames a hull shrunk by 2 cm
    (the fourth None: left where it is), and each frame's hull."""
    from pathlib import Path

    from scipy.spatial import ConvexHull

    from core.balance.lateral import shrunk_edges
    from core.motion.bvh import load_bvh

    motion = load_bvh(Path(__file__).resolve().parents[2] / "data" / "motion" / "cmu_131_01_walk_m.bvh")
    motion = motion.to_source_motion()
    names = list(motion.bone_names)
    feet = motion.heads[:, [names.index(n) for n in ("LeftAnkle", "LeftToe", "RightAnkle", "RightToe")], :2]
    feet = np.concatenate([feet, motion.tails[:, [names.index("LeftToe"), names.index("RightToe")], :2]], axis=1)
    frames = len(feet)
    polygons = [feet[f:f + 10].reshape(-1, 2) for f in range(0, frames, 10)]
    polygons = [p[ConvexHull(p).vertices] for p in polygons]  # counter-clockwise
    shrunk = [shrunk_edges(p, 0.02, None) for p in polygons]
    shrunk[3] = None  # left where it is
    return motion.heads[:, names.index("Hips"), :2] * 1.0, shrunk, np.arange(frames) // 10


def test_the_target_goes_into_its_support_with_the_plain_loops_bits():
    """target._into (the edges' pairs read once, np.clip(x, 0, None) as the np.maximum it calls, in place) gives
    the plain loop's bits: the bundled walk's hips pushed into the hulls of its ankles and toes, ten frames a
    hull. Taking the edges in another order fails this."""
    from core.balance.target import _into

    hips, shrunk, index = _walk_hulls()
    plain = hips.copy()
    for i, edges in enumerate(shrunk):
        rows = np.flatnonzero(index == i)
        if edges is None:
            continue
        p = plain[rows]
        for _ in range(4):
            for n, b in zip(*edges):
                p -= np.clip(p @ n - b, 0.0, None)[:, None] * n
        plain[rows] = p
    ours = _into(hips, shrunk, index)
    assert not np.array_equal(ours, hips)  # the hips were moved
    assert np.array_equal(ours, plain)


def test_the_eased_target_takes_the_first_answer_where_a_polygons_points_are_those_to_the_bit():
    """onto_support's second _into takes the first's answer for a polygon whose points did not move (to the
    bit: a -0.0 for a 0.0 is worked out again) and works the others out: the whole answer the plain call's."""
    from core.balance.target import _into

    hips, shrunk, index = _walk_hulls()
    eased = hips.copy()
    eased[index == 5] += 0.003  # one polygon's points moved
    zero = np.flatnonzero(index == 7)[0]
    hips[zero, 0], eased[zero, 0] = 0.0, -0.0  # another's point the same but for its zero's sign
    first = _into(hips, shrunk, index)
    marked = first.copy()
    marked[(index == 2) | (index == 7)] = 9.0  # the answer it is given for an unmoved polygon is the one it takes
    got = _into(eased, shrunk, index, (hips, marked))
    assert (got[index == 2] == 9.0).all() and not (got[index == 7] == 9.0).any()
    mask = index != 2
    assert np.array_equal(got[mask], _into(eased, shrunk, index)[mask])
    assert not np.array_equal(got[index == 5], first[index == 5])
