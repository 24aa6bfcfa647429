"""rotate_points / rotate_each (core.model.transforms) against each frame's rotation applied alone; principal_turn and
the waist's angle wrap against the general formulas they stand in for, to the bit."""
import numpy as np

from core.balance.waist import wrap
from core.model.transforms import axis_angle_to_matrix, principal_turn, rotate_each, rotate_points


def _rotations(rng, frames):
    axes = rng.normal(size=(frames, 3))
    return np.stack([axis_angle_to_matrix(a / np.linalg.norm(a), angle)
                     for a, angle in zip(axes, rng.uniform(-np.pi, np.pi, frames))])


def test_rotate_points_turns_the_same_points_by_each_frame():
    rng = np.random.default_rng(7)
    rot = _rotations(rng, 9)
    poses = np.zeros((9, 4, 4))
    poses[:, :3, :3] = rot  # a strided slice, as the bake passes link poses
    for points in (rng.normal(size=(5, 3)), rng.normal(size=(4, 2, 3)), rng.normal(size=(0, 3))):
        want = np.stack([points @ r.T for r in rot])
        got = rotate_points(poses[:, :3, :3], points)
        assert got.shape == want.shape and got.flags.c_contiguous
        np.testing.assert_allclose(got, want, atol=1e-14)


def test_rotate_each_turns_each_frames_points_by_its_rotation():
    rng = np.random.default_rng(8)
    rot, points = _rotations(rng, 6), rng.normal(size=(6, 5, 3))
    want = np.stack([p @ r.T for p, r in zip(points, rot)])
    np.testing.assert_allclose(rotate_each(rot, points), want, atol=1e-14)


def test_principal_turn_is_axis_angle_to_matrix_to_the_bit():
    """The rolled waist's roll and yaw (core.balance.sagittal) are built by principal_turn: it must give
    axis_angle_to_matrix's own bits on a unit axis (the H1's gait amplifies a last bit into another draw),
    signed zeros included."""
    rng = np.random.default_rng(17)
    angles = np.r_[rng.normal(0.0, 0.3, 5000), rng.uniform(-10.0, 10.0, 5000), 0.0, -0.0, np.pi, -np.pi,
                   np.pi / 2, 1e-300, -1e-300]
    for axis in range(3):
        want = axis_angle_to_matrix(np.eye(3)[axis], angles)
        got = principal_turn(axis, angles)
        assert np.array_equal(got, want) and np.array_equal(np.signbit(got), np.signbit(want)), axis
    assert principal_turn(0, np.zeros((2, 3))).shape == (2, 3, 3, 3)


def test_one_vector_turned_by_every_frame_is_the_stacked_products():
    """rotate_points of one vector (one BLAS product over the frames' rows) gives rotation @ vector (numpy's
    stacked product, a BLAS call per frame) to the last bit or two: the same three products summed, in an order
    the BLAS kernel picks. The bits agree under OpenBLAS's Haswell kernels (where sessions 25-26 measured the
    rolled waist's change as bit-for-bit) but not under its AVX-512 ones, which fuse multiply-adds (a 2026-12-05
    machine: 479 of 1,655 frames a last bit apart); the gait is deterministic on one machine either way."""
    rng = np.random.default_rng(24)
    for frames in (1, 7, 64, 1655):
        rotation = _rotations(rng, frames) * 10.0 ** rng.uniform(-2, 2, (frames, 3, 3))
        vector = rng.normal(size=3)
        got, want = rotate_points(rotation, vector[None])[:, 0], rotation @ vector
        bound = 4 * np.finfo(float).eps * (np.abs(rotation) @ np.abs(vector))  # three products' rounding
        assert got.shape == want.shape and (np.abs(got - want) <= bound).all(), frames


def test_wrap_is_the_remainder_formula_to_the_bit():
    """core.balance.waist.wrap skips numpy's float remainder where every angle is already within a turn of
    -pi; inside, outside and at the ends it must give (a + pi) % 2 pi - pi's bits."""
    rng = np.random.default_rng(18)
    formula = lambda a: (a + np.pi) % (2 * np.pi) - np.pi  # noqa: E731
    inside = rng.uniform(-np.pi, np.pi, 4000)
    edges = np.array([-np.pi, np.pi, np.nextafter(np.pi, 0.0), np.nextafter(-np.pi, -4.0), 0.0, -0.0, 2 * np.pi])
    for angles in (inside, np.r_[inside, rng.normal(0.0, 20.0, 4000)], edges, inside.reshape(-1, 2)):
        got = wrap(angles)
        assert np.array_equal(got, formula(angles)) and np.array_equal(np.signbit(got), np.signbit(formula(angles)))
    assert wrap(7.0) == formula(7.0) and wrap(-0.5) == formula(-0.5)


def test_wrap_within_a_turn_either_side_is_the_remainders_sum_to_the_bit():
    """Within a turn either side of [-pi, pi) wrap adds or takes 2 pi by one sum instead of the remainder: the
    remainder's bits there (Sterbenz above, fmod's x plus 2 pi below), at the ends of each turn, for tiny angles
    that round onto 2 pi and for float32 angles (which keep the remainder)."""
    rng = np.random.default_rng(24)
    formula = lambda a: (a + np.pi) % (2 * np.pi) - np.pi  # noqa: E731
    ends = np.array([-3 * np.pi, 3 * np.pi, -np.pi, np.pi]) - np.pi
    shifted_ends = np.r_[ends, np.nextafter(ends, -10.0), np.nextafter(ends, 10.0), -1e-20 - np.pi, -1e-300]
    cases = [rng.uniform(-3 * np.pi, 3 * np.pi, 20000), shifted_ends + np.pi, np.array([np.nan, 1.0]),
             rng.uniform(-3 * np.pi, 3 * np.pi, 2000).astype(np.float32), rng.uniform(-3.0, 3.0, (2, 500)) * np.pi]
    for angles in cases:
        got, want = wrap(angles), formula(angles)
        assert got.dtype == want.dtype
        assert np.array_equal(got, want, equal_nan=True) and np.array_equal(np.signbit(got), np.signbit(want))
