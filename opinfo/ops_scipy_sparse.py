"""scipy.sparse (rule: batchtensor/rules/scipy_sparse.py): COO's ``toarray()`` of batched
coordinates and data: duplicate cells (summed in order), every data type SciPy stores, C and F
``order``, a matrix of no entries, size-0 axes, a 1-d array, index arrays of another dtype;
index arrays out of range raise as in the loop. COO's ``tocsr()`` / ``tocsc()`` (a
``BatchedCSR``), read as code reads it: its index arrays, sums, a product with a vector,
``transpose``, ``astype``, ``power``, dense again, ``scipy.sparse.find``; each example storing
its own count of cells."""

from __future__ import annotations

import numpy as np

from .core import OpInfo, SampleInput
from .samples import make_array

try:
    from scipy import sparse
except ImportError:  # scipy is an optional extra
    sparse = None


def coo_toarray(data, *coords, shape, order=None, matrix=False):
    """``sparse.coo_array((data, coords), shape).toarray(order)``, through the module."""
    cls = sparse.coo_matrix if matrix else sparse.coo_array
    return cls((data, coords), shape=shape).toarray(order=order)


def _coords(rng, shape, nnz, dtype=np.int64):
    return tuple(rng.integers(0, n, nnz).astype(dtype) for n in shape)


def toarray_samples(rng, dtype):
    data = make_array(rng, (9,), dtype)
    yield SampleInput((data, *_coords(rng, (3, 4), 9)), {"shape": (3, 4)}, "duplicates")
    yield SampleInput((data, *_coords(rng, (3, 4), 9, np.int32)), {"shape": (3, 4),
                                                                   "order": "F"}, "order F")
    yield SampleInput((make_array(rng, (6,), dtype, noncontiguous=True),
                       *_coords(rng, (2, 5), 6)), {"shape": (2, 5), "matrix": True},
                      "coo_matrix, non-contiguous data")
    yield SampleInput((make_array(rng, (0,), dtype), *_coords(rng, (3, 4), 0)),
                      {"shape": (3, 4)}, "no entries")
    yield SampleInput((make_array(rng, (0,), dtype), *_coords(rng, (0, 4), 0)),
                      {"shape": (0, 4)}, "size-0 axis")
    yield SampleInput((make_array(rng, (5,), dtype), *_coords(rng, (6,), 5)),
                      {"shape": (6,)}, "1-d")
    yield SampleInput((data, *_coords(rng, (2, 3, 2), 9)), {"shape": (2, 3, 2),
                                                            "order": "F"}, "3-d, order F")
    yield SampleInput((data, rng.integers(3, 6, 9), rng.integers(0, 4, 9)),
                      {"shape": (3, 4)}, "row index out of range (SciPy's error)")


def coo_compressed(data, *coords, shape, to="tocsr", matrix=False):
    """COO's ``tocsr()`` / ``tocsc()``, read as code reads a CSR / CSC."""
    cls = sparse.coo_matrix if matrix else sparse.coo_array
    m = getattr(cls((data, coords), shape=shape), to)()
    v = np.arange(shape[1], dtype=np.int32)
    return (m.indptr, m.indices.sum(), m.sum(), np.ravel(m.sum(axis=0)),
            np.ravel(m.sum(axis=-1)), m.dot(v), m.transpose().toarray(),
            m.astype(np.complex128).toarray(order="F"), m.power(3).toarray(),
            (m.data * 2).sum(), *_found(sparse.find(m)))


def _found(found):
    """``sparse.find``'s rows, columns and values, reduced (a count per example)."""
    rows, cols, vals = found
    return (rows * 7 + cols).sum(), (vals * (rows + 1)).sum(), rows.dtype.num, vals.dtype.num


def compressed_samples(rng, dtype):
    data = make_array(rng, (9,), dtype)
    yield SampleInput((data, *_coords(rng, (3, 4), 9)), {"shape": (3, 4)}, "duplicates")
    yield SampleInput((data, *_coords(rng, (3, 4), 9, np.int32)),
                      {"shape": (3, 4), "to": "tocsc"}, "tocsc")
    yield SampleInput((make_array(rng, (6,), dtype, noncontiguous=True),
                       *_coords(rng, (2, 5), 6)), {"shape": (2, 5), "matrix": True},
                      "coo_matrix (int32 indices), non-contiguous data")
    yield SampleInput((data, *_coords(rng, (4, 3), 9)),
                      {"shape": (4, 3), "to": "tocsc", "matrix": True}, "csc_matrix")
    yield SampleInput((make_array(rng, (0,), dtype), *_coords(rng, (3, 4), 0)),
                      {"shape": (3, 4)}, "no entries")
    yield SampleInput((make_array(rng, (4,), dtype), *_coords(rng, (1, 5), 4)),
                      {"shape": (1, 5), "matrix": True}, "one row")
    yield SampleInput((data, rng.integers(3, 6, 9), rng.integers(0, 4, 9)),
                      {"shape": (3, 4)}, "row index out of range (SciPy's error)")


OPS = []
if sparse is not None:
    from batchtensor.rules import scipy_sparse

    OPS = [OpInfo("scipy.sparse.coo_array.toarray", coo_toarray, toarray_samples, "rule",
                  covers=scipy_sparse.coo_todense,
                  dtypes=(np.float64, np.float32, np.int64, np.uint8, np.bool_,
                          np.complex128)),
           OpInfo("scipy.sparse.coo_array.tocsr", coo_compressed, compressed_samples, "rule",
                  covers=scipy_sparse.coo_todense,
                  dtypes=(np.float64, np.float32, np.int64, np.uint8, np.bool_,
                          np.complex128))]
