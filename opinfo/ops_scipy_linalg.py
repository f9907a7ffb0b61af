"""scipy.linalg.norm (rule: batchtensor/rules/scipy_linalg.py): the BLAS 2-norm of a 1-d
example (scaled: huge and zero examples), other vector ords of a 1-d example, an int ``axis``
with vector ords and ``keepdims``, size-0 examples;
matrix norms through LAPACK, ``axis=None`` over several axes and a non-finite value without
``check_finite`` run per example; NaN with ``check_finite`` raises as in the loop.

scipy.linalg.eigh: one symmetric (Hermitian) matrix and a stack of them, ``lower=False``,
``eigvals_only``, ``subset_by_index``, another driver, 1x1; a matrix that is not square
raises as in the loop; fewer than two dimensions run per example (``subset_by_value``:
tests/test_stats_glue.py)."""

from __future__ import annotations

import numpy as np

from .core import SampleInput
from .samples import make_array

try:
    from scipy import linalg
except ImportError:  # scipy is an optional extra
    linalg = None

_TOL = dict(rtol=1e-9, atol=1e-11, rtol32=1e-4, atol32=1e-5)


def norm_samples(rng, dtype):
    x = make_array(rng, (7,), dtype)
    yield SampleInput((x,), {}, "1-d: BLAS nrm2")
    yield SampleInput((x * 1e150,), {}, "huge values (no overflow)")
    z = make_array(rng, (5,), dtype)
    z[::2] = 0
    yield SampleInput((z,), {}, "some zeros")
    yield SampleInput((make_array(rng, (9,), dtype, noncontiguous=True),), {"ord": 2},
                      "non-contiguous, ord=2")
    yield SampleInput((x,), {"ord": 3}, "1-d, ord=3 (np.linalg.norm)")
    yield SampleInput((x,), {"ord": -np.inf, "keepdims": True}, "1-d, ord=-inf, keepdims")
    yield SampleInput((x,), {"ord": "fro"}, "1-d, ord='fro' (NumPy's error)")
    yield SampleInput((make_array(rng, (3, 4), dtype),), {"axis": 1}, "axis=1")
    yield SampleInput((make_array(rng, (3, 4), dtype),), {"ord": 1, "axis": -2,
                                                          "keepdims": True},
                      "ord=1, axis=-2, keepdims")
    yield SampleInput((make_array(rng, (3, 4), dtype),), {"ord": np.inf, "axis": 0},
                      "ord=inf along an axis")
    yield SampleInput((make_array(rng, (3, 4), dtype),), {}, "a matrix: LAPACK / NumPy",
                      loop_reason="axis=None over a matrix")
    yield SampleInput((make_array(rng, (3, 4), dtype),), {"axis": 2}, "axis out of range")
    yield SampleInput((make_array(rng, (), dtype),), {}, "0-d",
                      loop_reason="a 0-d example: NumPy's norm of a scalar")
    yield SampleInput((make_array(rng, (0,), dtype),), {}, "size-0 (np.linalg.norm: 0.0)")
    yield SampleInput((make_array(rng, (0, 3), dtype),), {"axis": 0}, "size-0 axis")
    bad = make_array(rng, (6,), dtype)
    bad[2] = np.nan
    yield SampleInput((bad,), {}, "NaN: check_finite raises")
    yield SampleInput((bad,), {"check_finite": False}, "NaN without check_finite",
                      loop_reason="a non-finite value without check_finite")


def _symmetric(rng, shape, dtype):
    a = make_array(rng, shape, dtype)
    a = a + np.swapaxes(a, -1, -2).conj()
    return a + shape[-1] * np.eye(shape[-1], dtype=a.dtype)  # (eigenvalues apart)


def eigh_samples(rng, dtype):
    a = _symmetric(rng, (4, 4), dtype)
    yield SampleInput((a,), {}, "one matrix")
    yield SampleInput((a,), {"lower": False}, "the upper triangle")
    yield SampleInput((a,), {"eigvals_only": True}, "eigenvalues only")
    yield SampleInput((a,), {"subset_by_index": [1, 2]}, "subset_by_index")
    yield SampleInput((a,), {"driver": "evd"}, "driver evd")
    yield SampleInput((_symmetric(rng, (2, 3, 3), dtype),), {}, "a stack of matrices")
    yield SampleInput((_symmetric(rng, (1, 1), dtype),), {}, "1x1")
    yield SampleInput((np.asfortranarray(a),), {}, "F-ordered")
    yield SampleInput((_symmetric(rng, (4, 4), dtype)[::-1, ::-1],), {}, "negative strides")
    yield SampleInput((make_array(rng, (0, 0), dtype),), {}, "0x0")
    yield SampleInput((make_array(rng, (0, 3, 3), dtype),), {}, "a stack of no matrices")
    yield SampleInput((make_array(rng, (3, 4), dtype),), {}, "not square (ValueError)")
    yield SampleInput((make_array(rng, (4,), dtype),), {}, "1-d",
                      loop_reason="fewer than 2 dimensions: SciPy's error per example")


OPS = []
if linalg is not None:
    from .foreign import foreign_op

    OPS = [foreign_op(linalg, "norm", norm_samples,
                      dtypes=(np.float64, np.float32, np.complex128), **_TOL),
           foreign_op(linalg, "eigh", eigh_samples,
                      dtypes=(np.float64, np.float32, np.complex128), **_TOL)]
