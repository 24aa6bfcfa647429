"""numpy's transcendental functions with the same bits wherever the arrays sit in memory.

numpy 1.26 on AVX512 computes arctan2, arccos, exp, log, ... in SIMD loops (SVML) unless the output
looks as if it overlaps an input, then in a scalar loop that rounds other last bits. That look is
at the addresses: an output starting within 64 bytes of an input (arrays of fewer than 8 values),
or anywhere in an input's span taken as stride x count, which for a strided view (`m[:, 1, 0]`)
reaches past the array's own memory into where malloc puts the next array. So the same call gave
other bits when a fresh output happened to land right after its input: the H1 walk's bake in 1 run
of 3, its gait more often, and the chaotic gait carried that to another draw (docs/notes/s24-determinism.md).
Here the inputs are contiguous (their span is their memory) and the output starts 64 bytes inside
a buffer of its own: always the SIMD loop, the answer of the common case.
"""
from __future__ import annotations

import math

import numpy as np

CLEAR = 8  # values of padding each side of the output: 64 bytes, the loops' widest look


def same_bits(ufunc: np.ufunc, *args) -> np.ndarray:
    """ufunc(*args) in float64, by its SIMD loop whatever the layout (a numpy float for scalars)."""
    arrays = [np.asarray(a, dtype=float, order="C") for a in args]
    shape = arrays[0].shape
    if any(a.shape != shape for a in arrays):
        shape = np.broadcast_shapes(*(a.shape for a in arrays))
    size = math.prod(shape)
    out = np.empty(size + 2 * CLEAR)[CLEAR:CLEAR + size].reshape(shape)
    ufunc(*arrays, out=out)
    return out if out.ndim else out[()]


def equal_bits(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether two float64 arrays hold the same values to the bit (-0.0 is not 0.0, a NaN its own payload):
    the test for reusing an answer worked out from a, where np.array_equal would take -0.0 for 0.0."""
    a, b = np.ascontiguousarray(a, dtype=float), np.ascontiguousarray(b, dtype=float)
    return a.shape == b.shape and bool((a.view(np.int64) == b.view(np.int64)).all())
