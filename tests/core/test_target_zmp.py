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


def test_the_target_goes_into_its_support_with_the_plain_loops_bits():
    """target._into (the edges' pairs read once, np.clip(x, 0, None) as the np.maximum it calls, in place) gives
    the plain loop's bits: the bundled walk's hips pushed into the hulls of its ankles and toes, ten frames a
    hull. Taking the edges in another order fails this."""
    from pathlib import Path

    from scipy.spatial import ConvexHull

    from core.balance.lateral import shrunk_edges
    from core.balance.target import _into
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
    index = np.arange(frames) // 10
    hips = motion.heads[:, names.index("Hips"), :2] * 1.0
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
