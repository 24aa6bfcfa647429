"""rotate_points / rotate_each (core.model.transforms) against each frame's rotation applied alone."""
import numpy as np

from core.model.transforms import axis_angle_to_matrix, rotate_each, rotate_points


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
