"""The batched Cholesky solve against numpy's, on the systems the solves build."""
import numpy as np

from core.chains.batched import LAST_SMALL_BATCH, spd_inverse, spd_solve, spd_solve_last


def test_spd_solve_matches_numpy_on_damped_normal_equations():
    rng = np.random.default_rng(3)
    for count in (200, LAST_SMALL_BATCH + 100):  # a vector: numpy's solve below LAST_SMALL_BATCH, Cholesky above
        jac = rng.normal(size=(count, 12, 7))
        system = jac.transpose(0, 2, 1) @ jac + 1e-6 * np.eye(7)
        rhs = rng.normal(size=(count, 7))
        np.testing.assert_allclose(spd_solve(system, rhs), np.linalg.solve(system, rhs[..., None])[..., 0],
                                   rtol=1e-8, atol=1e-10)
    many = rng.normal(size=(count, 7, 6))  # above SMALL_BATCH: the factorisation's own path
    np.testing.assert_allclose(spd_solve(system, many), np.linalg.solve(system, many), rtol=1e-8, atol=1e-10)


def test_spd_solve_falls_back_where_a_matrix_is_not_positive_definite():
    rng = np.random.default_rng(4)
    bad = np.stack([np.diag([1.0, -1.0, 3.0]), np.array([[0., 1., 0.], [1., 0., 0.], [0., 0., 1.]])])
    for count in (40, LAST_SMALL_BATCH):  # a batch numpy's solve takes, and one the factorisation takes
        system = np.concatenate([np.tile(np.eye(3) * 2.0, (count, 1, 1)), bad])
        rhs = rng.normal(size=(len(system), 3))
        np.testing.assert_allclose(spd_solve(system, rhs), np.linalg.solve(system, rhs[..., None])[..., 0],
                                   atol=1e-12)
        many = rng.normal(size=(len(system), 3, 2))
        np.testing.assert_allclose(spd_solve(system, many), np.linalg.solve(system, many), atol=1e-12)


def test_spd_inverse_is_the_inverse():
    rng = np.random.default_rng(5)
    m = rng.normal(size=(50, 7, 7))
    system = m @ m.transpose(0, 2, 1) + 0.1 * np.eye(7)
    np.testing.assert_allclose(spd_inverse(system) @ system, np.broadcast_to(np.eye(7), system.shape), atol=1e-9)


def test_spd_solve_last_matches_numpy_frames_last_above_and_below_its_small_batch():
    rng = np.random.default_rng(6)
    for count in (LAST_SMALL_BATCH // 2, 3 * LAST_SMALL_BATCH):  # numpy's path, then the factorisation's
        jac = rng.normal(size=(count, 6, 6))  # a leg's damped normal equations (core.balance.legs)
        system = jac.transpose(0, 2, 1) @ jac + 1e-4 * np.eye(6)
        rhs = rng.normal(size=(count, 6))
        got = spd_solve_last(np.ascontiguousarray(system.transpose(1, 2, 0)), np.ascontiguousarray(rhs.T))
        np.testing.assert_allclose(got.T, np.linalg.solve(system, rhs[..., None])[..., 0], rtol=1e-8, atol=1e-10)


def test_spd_solve_last_falls_back_where_a_matrix_is_not_positive_definite():
    rng = np.random.default_rng(7)
    bad = np.stack([np.diag([1.0, -1.0, 3.0]), np.array([[0., 1., 0.], [1., 0., 0.], [0., 0., 1.]])])
    system = np.concatenate([np.tile(np.eye(3) * 2.0, (LAST_SMALL_BATCH, 1, 1)), bad])
    rhs = rng.normal(size=(len(system), 3))
    got = spd_solve_last(np.ascontiguousarray(system.transpose(1, 2, 0)), np.ascontiguousarray(rhs.T))
    np.testing.assert_allclose(got.T, np.linalg.solve(system, rhs[..., None])[..., 0], atol=1e-12)
