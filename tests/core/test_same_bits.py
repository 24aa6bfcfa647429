"""core.model.same_bits: numpy's arctan2 and kin give one answer wherever their output lands.

numpy 1.26's AVX512 loops take a scalar path when the output seems to overlap an input; a strided
view's span (stride x count) reaches past its array, so an output allocated right after the array
took the other path and other last bits (the bake's feet and the gait's legs, from process to
process). Here the output is put where malloc may put it, and where it may not.
"""
from __future__ import annotations

import numpy as np
import pytest

from core.model.same_bits import equal_bits, same_bits


def _laid_out(values: np.ndarray, gap: int) -> tuple[np.ndarray, np.ndarray]:
    """`values` copied into a buffer and an output `gap` values after their last one."""
    buffer = np.zeros(values.size + gap + values.shape[0] + 16)
    inside = buffer[:values.size].reshape(values.shape)
    inside[...] = values
    start = values.size + gap
    return inside, buffer[start:start + values.shape[0]]


def _rotations(frames: int) -> np.ndarray:
    angle = np.random.default_rng(3).uniform(-np.pi, np.pi, frames)
    out = np.zeros((frames, 3, 3))
    out[:, 0, 0], out[:, 0, 1], out[:, 1, 0], out[:, 1, 1], out[:, 2, 2] = (np.cos(angle), -np.sin(angle),
                                                                             np.sin(angle), np.cos(angle), 1.0)
    return out


@pytest.mark.parametrize("frames", [5, 300])
def test_a_heading_of_strided_views_is_the_same_wherever_the_output_lands(frames):
    turn = _rotations(frames)
    answers = []
    for gap in (0, 1, 2, 9, 40):
        inside, out = _laid_out(turn, gap)
        np.arctan2(inside[:, 1, 0], inside[:, 0, 0], out=out)
        answers.append(out.copy())
        np.testing.assert_array_equal(same_bits(np.arctan2, inside[:, 1, 0], inside[:, 0, 0]),
                                      same_bits(np.arctan2, turn[:, 1, 0], turn[:, 0, 0]))
    far = answers[-1]
    # the helper's answer is numpy's own for an output far away (the SIMD loop, the common case) ...
    np.testing.assert_array_equal(same_bits(np.arctan2, turn[:, 1, 0], turn[:, 0, 0]), far)
    # ... and it is exact to the last bit or two, whichever loop numpy took
    for answer in answers:
        np.testing.assert_allclose(answer, far, rtol=0, atol=4e-16)


def test_small_arrays_and_scalars_keep_their_shapes_and_values():
    x = np.array([0.1, -0.4, 0.9])
    np.testing.assert_array_equal(same_bits(np.arccos, x), np.arccos(x))
    assert same_bits(np.arctan2, 1.0, -1.0) == np.arctan2(1.0, -1.0) == 0.75 * np.pi
    assert isinstance(same_bits(np.arctan2, 1.0, -1.0), np.floating)
    assert same_bits(np.exp, np.zeros((2, 0))).shape == (2, 0)
    np.testing.assert_array_equal(same_bits(np.arctan2, np.ones((2, 3)), np.ones(3)), np.full((2, 3), np.pi / 4))


def test_equal_bits_tells_a_signed_zero_and_holds_for_strided_views():
    """equal_bits: the same values to the bit (a -0.0 is not 0.0 as np.array_equal has it), on strided views
    as on their copies, and arrays of other shapes are not equal."""
    a = np.arange(12.0).reshape(3, 4)
    assert equal_bits(a[:, 1], a[:, 1].copy()) and equal_bits(a, a + 0.0)
    b = a.copy()
    b[0, 0] = -0.0
    assert np.array_equal(a, b) and not equal_bits(a, b)
    b[0, 0] = np.nextafter(0.0, 1.0)
    assert not equal_bits(a, b)
    assert not equal_bits(a, a.T) and not equal_bits(a[:, :2], a)
