"""Placement: writes into an array by position or by mask: copyto, ``ndarray.fill``, put,
put_along_axis, place, putmask, fill_diagonal -- the ops whose rules are in
``batchtensor/rules/placement.py``. (``x[key] = v`` is in ``ops_indexing.py``; ``ops_inplace.py``
covers the same rules with write-through samples of every dtype family.)"""

from __future__ import annotations

import numpy as np

from batchtensor.tensor import ndarray_fill

from .core import OpInfo, SampleInput
from .ops_indexing import F64_I64, idx
from .samples import make_array


# ---- copyto, fill -------------------------------------------------------------------------------
def _copyto(dst, src, **kwargs):
    np.copyto(dst, src, **kwargs)
    return dst


def copyto_samples(rng, dtype):
    a = lambda *s: make_array(rng, s, dtype)  # noqa: E731
    yield SampleInput((a(3, 4), a(3, 4)), {}, "same shape")
    yield SampleInput((a(3, 4), a(4)), {}, "broadcast src")
    yield SampleInput((a(3, 4), 7), {}, "python scalar src")
    yield SampleInput((a(), a()), {}, "0-d")
    yield SampleInput((a(2, 0), a(0)), {}, "size 0")
    yield SampleInput((a(3, 4), a(3, 4)), {"where": make_array(rng, (3, 4), np.bool_)},
                      "where=")
    yield SampleInput((a(3, 4), a(4)), {"where": make_array(rng, (3, 1), np.bool_)},
                      "where= broadcast")
    yield SampleInput((a(3, 4), make_array(rng, (3, 4), np.float64) * 3),
                      {"casting": "unsafe"}, "casting=unsafe")
    yield SampleInput((make_array(rng, (3,), np.int64), make_array(rng, (3,), np.float64)), {},
                      "float into int, same_kind (TypeError)")
    yield SampleInput((a(3, 4), a(3, 4).astype(np.float32)), {"casting": "safe"},
                      "casting=safe")
    yield SampleInput((a(3, 4), a(2, 4)), {}, "shapes do not broadcast (ValueError)")
    yield SampleInput((a(3, 8)[:, ::2], a(3, 4)), {}, "non-contiguous dst")
    yield SampleInput((a(4), a(1, 4)), {}, "src with an extra leading 1")


def _fill(x, value):
    x.fill(value)
    return x


def fill_samples(rng, dtype):
    a = lambda *s: make_array(rng, s, dtype)  # noqa: E731
    yield SampleInput((a(3, 4), a()), {}, "0-d value")
    yield SampleInput((a(3, 4), 2), {}, "python int")
    yield SampleInput((a(), a()), {}, "0-d x")
    yield SampleInput((a(2, 0), a()), {}, "size 0")
    yield SampleInput((a(3, 8)[:, ::2], a()), {}, "non-contiguous x")
    yield SampleInput((a(3), np.array(make_array(rng, (), np.float64) * 3)), {},
                      "float value")
    yield SampleInput((a(3), a(2)), {}, "1-d value (ValueError)")
    yield SampleInput((make_array(rng, (3,), np.uint8), 300), {},
                      "python int out of bounds (OverflowError)")


# ---- in-place placement: put, put_along_axis, place, putmask, fill_diagonal ---------------------
def _put(a, ind, v, **kwargs):
    if kwargs.get("mode") in ("wrap", 1) and np.size(a):
        # NumPy's wrap mode steps a negative index up by the size once per step: an index
        # near -2**63, which the adversarial programs make, takes days. Such indices are
        # wrapped here, for the loop and vmap alike, to what NumPy would write to.
        far = np.greater_equal(ind, 2**31) | np.less_equal(ind, -(2**31))  # (abs overflows)
        ind = np.where(far, np.remainder(ind, np.size(a)), ind)
    np.put(a, ind, v, **kwargs)
    return a


def put_samples(rng, dtype):
    a = lambda *s: make_array(rng, s, dtype)  # noqa: E731
    yield SampleInput((a(5), idx(rng, (3,), 5), a(3)), {}, "1-d")
    yield SampleInput((a(3, 4), idx(rng, (4,), 12), a(2)), {}, "2-d a, values repeated")
    yield SampleInput((a(6), idx(rng, (6,), 3, low=0), a(6)), {}, "duplicate indices")
    yield SampleInput((a(3, 4), idx(rng, (5,), 30, low=-30), a(5)), {"mode": "wrap"},
                      "mode=wrap")
    yield SampleInput((a(3, 4), idx(rng, (5,), 30, low=-30), a(1)), {"mode": "clip"},
                      "mode=clip")
    yield SampleInput((a(3, 4), idx(rng, (2,), 12), a(2)), {"mode": None}, "mode=None (raise)")
    yield SampleInput((a(3, 4), idx(rng, (5,), 30, low=-30), a(5)), {"mode": 1}, "mode=1 (wrap)")
    yield SampleInput((a(5), idx(rng, (2,), 5), 7), {}, "python scalar v")
    yield SampleInput((a(5), idx(rng, (2,), 5), a()), {}, "0-d v")
    yield SampleInput((a(5), idx(rng, (4,), 5), a(2, 2)), {}, "2-d v is flattened")
    yield SampleInput((a(5), idx(rng, (3,), 5), a(0)), {}, "empty v: nothing")
    yield SampleInput((a(5), idx(rng, (0,), 5), a(2)), {}, "empty indices")
    yield SampleInput((a(), [0, 0], a(2)), {}, "0-d a")
    yield SampleInput((a(4, 6)[:, ::2], idx(rng, (3,), 12), a(3)), {}, "non-contiguous a")
    yield SampleInput((a(5), make_array(rng, (3,), np.bool_), a(3)), {}, "bool indices are 0/1")
    yield SampleInput((a(5), idx(rng, (2,), 5) + 5, a(2)), {}, "out of range (IndexError)")
    yield SampleInput((a(5), make_array(rng, (2,), np.float64), a(2)), {},
                      "float indices (TypeError)")
    yield SampleInput((a(0), idx(rng, (2,), 3), a(2)), {"mode": "wrap"},
                      "empty a, mode=wrap (IndexError)")
    yield SampleInput((make_array(rng, (4,), np.uint8), idx(rng, (2,), 4), 300), {},
                      "python int out of bounds (OverflowError)")


def _put_along_axis(arr, indices, values, axis):
    np.put_along_axis(arr, indices, values, axis)
    return arr


def put_along_axis_samples(rng, dtype):
    a = lambda *s: make_array(rng, s, dtype)  # noqa: E731
    yield SampleInput((a(3, 4), idx(rng, (3, 2), 4), a(3, 2), 1), {}, "axis=1")
    yield SampleInput((a(3, 4), idx(rng, (2, 4), 3), a(2, 4), 0), {}, "axis=0")
    yield SampleInput((a(2, 3, 4), idx(rng, (2, 3, 5), 4, low=0), a(2, 3, 5), -1), {},
                      "axis=-1, duplicate indices")
    yield SampleInput((a(3, 4), idx(rng, (1, 2), 4), a(3, 1), 1), {},
                      "indices and values broadcast")
    yield SampleInput((a(3, 4), idx(rng, (3, 2), 4), 5, 1), {}, "python scalar values")
    yield SampleInput((a(3, 4), idx(rng, (3,), 12), a(3), None), {}, "axis=None")
    yield SampleInput((a(3, 4), idx(rng, (3,), 12), a(1, 1), None), {},
                      "axis=None, (1, 1) values")
    yield SampleInput((a(5), idx(rng, (0,), 5), a(0), 0), {}, "empty indices")
    yield SampleInput((a(3, 4), idx(rng, (3,), 4), a(3), 1), {}, "rank mismatch (ValueError)")
    yield SampleInput((a(3, 4), idx(rng, (3, 2), 4) + 4, a(3, 2), 1), {},
                      "out of range (IndexError)")
    yield SampleInput((a(3, 4), idx(rng, (3,), 12) + 12, a(3), None), {},
                      "axis=None out of range (IndexError)")
    yield SampleInput((a(3, 4), idx(rng, (3, 2), 4), a(3, 3), 1), {},
                      "values do not broadcast (ValueError)")
    yield SampleInput((a(3, 4), idx(rng, (3, 2), 4), a(3, 2), 2), {}, "axis out of range")


def _place(arr, mask, vals):
    np.place(arr, mask, vals)
    return arr


def place_samples(rng, dtype):
    a = lambda *s: make_array(rng, s, dtype)  # noqa: E731
    m = lambda *s: make_array(rng, s, np.bool_)  # noqa: E731
    yield SampleInput((a(6), m(6), a(6)), {}, "counts differ per example")
    yield SampleInput((a(3, 4), m(3, 4), a(2)), {}, "values repeated")
    yield SampleInput((a(3, 4), m(12), a(3)), {}, "mask of another shape, same size")
    yield SampleInput((a(5), m(5), 7), {}, "python scalar")
    yield SampleInput((a(5), make_array(rng, (5,), np.int64, low=0, high=3), a(2)), {},
                      "int mask")
    yield SampleInput((a(5), np.zeros(5, bool), a(0)), {}, "empty values, nothing selected")
    yield SampleInput((a(5), m(5) | np.eye(5, dtype=bool)[0], a(0)), {},
                      "empty values (ValueError)")
    yield SampleInput((a(5), m(4), a(2)), {}, "size mismatch (ValueError)")
    yield SampleInput((a(), m(), a(1)), {}, "0-d")
    yield SampleInput((a(4, 6)[:, ::2], m(4, 3), a(5)), {}, "non-contiguous arr")
    yield SampleInput((make_array(rng, (4,), np.uint8), m(4), make_array(rng, (2,), np.int64)),
                      {}, "unsafe cast of an array (TypeError)")


def _putmask(a, mask, values):
    np.putmask(a, mask, values)
    return a


def putmask_samples(rng, dtype):
    a = lambda *s: make_array(rng, s, dtype)  # noqa: E731
    m = lambda *s: make_array(rng, s, np.bool_)  # noqa: E731
    yield SampleInput((a(3, 4), m(3, 4), a(3, 4)), {}, "same shape")
    yield SampleInput((a(6), m(6), a(4)), {}, "values repeated by position")
    yield SampleInput((a(5), m(5), 3), {}, "python scalar")
    yield SampleInput((a(5), m(1, 5), a(1)), {}, "mask of another shape")
    yield SampleInput((a(5), make_array(rng, (5,), np.int64, low=0, high=3), a(5)), {},
                      "int mask")
    yield SampleInput((a(5), m(5), a(0)), {}, "empty values: nothing")
    yield SampleInput((a(), m(), a()), {}, "0-d")
    yield SampleInput((a(5), m(4), a(5)), {}, "size mismatch (ValueError)")
    yield SampleInput((a(4, 6)[:, ::2], m(4, 3), a(12)), {}, "non-contiguous a")
    yield SampleInput((make_array(rng, (4,), np.int64), m(4), make_array(rng, (4,), np.float64)),
                      {}, "unsafe cast of an array (TypeError)")


def _fill_diagonal(a, val, **kwargs):
    np.fill_diagonal(a, val, **kwargs)
    return a


def fill_diagonal_samples(rng, dtype):
    a = lambda *s: make_array(rng, s, dtype)  # noqa: E731
    yield SampleInput((a(3, 3), 5), {}, "python scalar")
    yield SampleInput((a(3, 3), a()), {}, "0-d value")
    yield SampleInput((a(4, 4), a(3)), {}, "values repeated")
    yield SampleInput((a(3, 3), a(5)), {}, "more values than the diagonal")
    yield SampleInput((a(7, 3), a(2)), {"wrap": True}, "tall, wrap=True")
    yield SampleInput((a(7, 3), a(2)), {}, "tall")
    yield SampleInput((a(3, 5), a(2)), {}, "wide")
    yield SampleInput((a(2, 2, 2), a()), {}, "3-d")
    yield SampleInput((a(0, 3), 1), {}, "size 0")
    yield SampleInput((a(3, 3), a(0)), {}, "empty values: nothing")
    yield SampleInput((a(3, 3), a(2, 2)), {}, "2-d values are flattened")
    yield SampleInput((a(2, 2, 3), 1), {}, "unequal dims (ValueError)")
    yield SampleInput((a(4), 1), {}, "1-d (ValueError)")
    yield SampleInput((a(6, 6)[:, ::2], a(2)), {}, "non-contiguous a")
    yield SampleInput((make_array(rng, (3, 3), np.uint8), 300), {},
                      "python int out of bounds (OverflowError)")


def _put_method(a, ind, v, **kw):
    a.put(ind, v, **kw)
    return a


OPS = [
    OpInfo("copyto", _copyto, copyto_samples, "rule", dtypes=(np.float64, np.int64),
           covers=np.copyto, inplace=0),
    OpInfo("ndarray.fill", _fill, fill_samples, "rule", dtypes=(np.float64, np.int64),
           covers=ndarray_fill, inplace=0, unbatched_self=True),
    OpInfo("put", _put, put_samples, "rule", dtypes=F64_I64 + (np.complex128,), covers=np.put,
           inplace=0),
    OpInfo("ndarray.put", _put_method, put_samples, "rule", dtypes=F64_I64, covers=np.put,
           inplace=0, unbatched_self=True),
    OpInfo("put_along_axis", _put_along_axis, put_along_axis_samples, "rule", dtypes=F64_I64,
           covers=np.put_along_axis, inplace=0),
    OpInfo("place", _place, place_samples, "rule", dtypes=F64_I64, covers=np.place, inplace=0),
    OpInfo("putmask", _putmask, putmask_samples, "rule", dtypes=F64_I64, covers=np.putmask,
           inplace=0),
    # fill_diagonal dispatches on `a` only: with a plain `a` NumPy's own code meets a batched
    # value and raises the conversion error (unbatched_self).
    OpInfo("fill_diagonal", _fill_diagonal, fill_diagonal_samples, "rule", dtypes=F64_I64,
           covers=np.fill_diagonal, inplace=0, unbatched_self=True),
]
