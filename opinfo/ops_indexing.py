"""Indexing and in-place writes: ``x[key]``, ``x[key] = v``, take, take_along_axis, where,
copyto, ``ndarray.fill``, and the index/selection/placement part of the NumPy API."""

from __future__ import annotations

import math
import operator

import numpy as np

from batchtensor.tensor import ndarray_astype, ndarray_fill

from .core import OpInfo, SampleInput
from .samples import make_array

F64_I64 = (np.float64, np.int64)


def _idx(rng, shape, n, low=None):
    """Integer indices valid for an axis of size ``n`` (negative ones included)."""
    return make_array(rng, shape, np.intp, low=-n if low is None else low, high=n)


def _mask(rng, shape, count):
    """A boolean mask with exactly ``count`` True values at random places."""
    size = math.prod(shape)
    m = np.zeros(size, bool)
    m[rng.permutation(size)[:count]] = True
    return m.reshape(shape)


# ---- x[key] -------------------------------------------------------------------------------------
def _getitem(x, key):
    return x[key]


def _basic_keys():
    """(example shape, key, name) for basic indexing: ints, slices, None, Ellipsis."""
    return [
        ((5,), 2, "int"),
        ((5,), -1, "negative int"),
        ((3, 4), 1, "int on 2-d"),
        ((3, 4), (1, -2), "two ints -> 0-d"),
        ((3, 4), slice(1, 3), "slice"),
        ((6,), slice(None, None, -2), "negative step"),
        ((6,), slice(4, 1, -1), "negative step with bounds"),
        ((6,), slice(-10, 20), "slice out of range"),
        ((6,), slice(5, 2), "empty slice"),
        ((3, 4), (slice(None), 2), "slice then int"),
        ((3, 4), (None, 1, None), "None"),
        ((2, 3, 4), (Ellipsis, 1), "Ellipsis then int"),
        ((2, 3, 4), (1, Ellipsis, None), "int, Ellipsis, None"),
        ((2, 3, 4), (slice(None, None, -1), None, 0, slice(1, None)), "mixed basic"),
        ((), (), "0-d with ()"),
        ((), Ellipsis, "0-d with Ellipsis"),
        ((), None, "0-d with None"),
        ((2, 0, 3), (slice(None), slice(None), 1), "size-0 axis"),
        ((5,), 5, "int out of range"),
        ((5,), -6, "negative int out of range"),
        ((3, 4), (0, 0, 0), "too many indices"),
        ((), 0, "int into 0-d"),
        ((3, 4), (Ellipsis, 0, Ellipsis), "two ellipses"),
        ((3, 4), True, "True scalar"),
        ((3, 4), False, "False scalar"),
        ((3, 4), (0, True), "int and True scalar"),
    ]


def getitem_basic_samples(rng, dtype):
    for shape, key, name in _basic_keys():
        yield SampleInput((make_array(rng, shape, dtype), key), name=name)
    yield SampleInput((make_array(rng, (4, 6), dtype, noncontiguous=True), (slice(None), 1)),
                      name="non-contiguous")


def getitem_int_array_samples(rng, dtype):
    x = lambda *s: make_array(rng, s, dtype)  # noqa: E731
    yield SampleInput((x(5), _idx(rng, (3,), 5)), name="1-d index")
    yield SampleInput((x(5), _idx(rng, (2, 3), 5)), name="2-d index")
    yield SampleInput((x(5), _idx(rng, (), 5)), name="0-d index array")
    yield SampleInput((x(5), _idx(rng, (0,), 5)), name="empty index")
    yield SampleInput((x(3, 4), _idx(rng, (2,), 3)), name="index on the first of two axes")
    yield SampleInput((x(3, 4), (slice(None), _idx(rng, (2,), 4))), name="slice, index")
    yield SampleInput((x(3, 4), (_idx(rng, (2,), 3), _idx(rng, (2,), 4))), name="two indices")
    yield SampleInput((x(3, 4), (_idx(rng, (2, 1), 3), _idx(rng, (3,), 4))),
                      name="two indices broadcasting")
    yield SampleInput((x(2, 3, 4), (slice(None), _idx(rng, (2,), 3), _idx(rng, (2,), 4))),
                      name="adjacent after a slice")
    yield SampleInput((x(2, 3, 4), (_idx(rng, (2,), 2), slice(None), _idx(rng, (2,), 4))),
                      name="non-adjacent: index dims move to the front")
    yield SampleInput((x(2, 3, 4), (0, slice(None), _idx(rng, (2,), 4))),
                      name="int and index non-adjacent")
    yield SampleInput((x(2, 3, 4), (slice(None), 1, _idx(rng, (2,), 4))),
                      name="int and index adjacent")
    yield SampleInput((x(2, 3, 4), (Ellipsis, _idx(rng, (3,), 4))), name="Ellipsis, index")
    yield SampleInput((x(2, 3, 4), (_idx(rng, (3,), 2), None, Ellipsis)),
                      name="index, None, Ellipsis")
    yield SampleInput((x(2, 3, 4), (None, _idx(rng, (2,), 2), slice(None, None, -1),
                                    _idx(rng, (2,), 4))), name="None before non-adjacent")
    yield SampleInput((x(2, 3, 4), (slice(None), _idx(rng, (2, 2), 3), slice(1, 3))),
                      name="2-d index between slices")
    yield SampleInput((x(3, 4), [0, -1]), name="list index")
    yield SampleInput((x(3, 4), (slice(None), [2, 0, 1])), name="slice, list")
    yield SampleInput((x(2, 0, 3), (slice(None), slice(None), _idx(rng, (2,), 3))),
                      name="size-0 axis")
    yield SampleInput((x(4, 6)[:, ::2], _idx(rng, (2,), 4)), name="non-contiguous x")
    yield SampleInput((x(5), _idx(rng, (2,), 5) + 5), name="out of range (IndexError)")
    yield SampleInput((x(3, 4), (_idx(rng, (2,), 3), _idx(rng, (3,), 4))),
                      name="shape mismatch (IndexError)")
    yield SampleInput((x(5), make_array(rng, (2,), np.float64)), name="float index (IndexError)")


def getitem_bool_samples(rng, dtype):
    x = lambda *s: make_array(rng, s, dtype)  # noqa: E731
    yield SampleInput((x(6), _mask(rng, (6,), 3)), name="1-d mask")
    yield SampleInput((x(3, 4), _mask(rng, (3, 4), 5)), name="full mask")
    yield SampleInput((x(3, 4), _mask(rng, (3,), 2)), name="leading-axis mask")
    yield SampleInput((x(3, 4), (slice(None), _mask(rng, (4,), 2))), name="slice, mask")
    yield SampleInput((x(2, 3, 4), (Ellipsis, _mask(rng, (4,), 3))), name="Ellipsis, mask")
    yield SampleInput((x(2, 3, 4), (_mask(rng, (2,), 1), slice(None), _idx(rng, (1,), 4))),
                      name="mask and index non-adjacent")
    yield SampleInput((x(3, 4), (_mask(rng, (3,), 2), _idx(rng, (2,), 4))),
                      name="mask and index adjacent")
    yield SampleInput((x(5), _mask(rng, (5,), 0)), name="mask selects nothing")
    yield SampleInput((x(5), _mask(rng, (5,), 5)), name="mask selects everything")
    yield SampleInput((x(3, 4), np.array(rng.random() < 2)), name="0-d True mask",
                      loop_reason="a batched 0-d boolean index adds an axis of size 0 or 1")
    yield SampleInput((x(3, 4), _mask(rng, (4,), 2)), name="bad mask shape (IndexError)")
    yield SampleInput((x(3, 4), _mask(rng, (3, 4, 1), 2)), name="mask rank too high")


# ---- x[key] = v ---------------------------------------------------------------------------------
def _setitem(x, key, v):
    x[key] = v
    return x


def setitem_samples(rng, dtype):
    x = lambda *s: make_array(rng, s, dtype)  # noqa: E731
    yield SampleInput((x(5), 2, x()), name="int")
    yield SampleInput((x(5), 1, 7), name="python scalar")
    yield SampleInput((x(3, 4), 1, x(4)), name="row")
    yield SampleInput((x(3, 4), (slice(None), -1), x(3)), name="column")
    yield SampleInput((x(3, 4), (slice(None), -1), x(1)), name="column, broadcast value")
    yield SampleInput((x(3, 4), slice(None, None, -2), x(2, 4)), name="negative step")
    yield SampleInput((x(3, 4), (None, Ellipsis, 0), x()), name="None, Ellipsis")
    yield SampleInput((x(), (), x()), name="0-d")
    yield SampleInput((x(), Ellipsis, x()), name="0-d Ellipsis")
    yield SampleInput((x(6), _idx(rng, (3,), 6), x(3)), name="index array")
    yield SampleInput((x(6), _idx(rng, (2, 2), 6), x(2)), name="2-d index, broadcast value")
    yield SampleInput((x(3, 4), (_idx(rng, (2,), 3), _idx(rng, (2,), 4)), x(2)),
                      name="two indices")
    yield SampleInput((x(2, 3, 4), (_idx(rng, (2,), 2), slice(None), _idx(rng, (2,), 4)),
                       x(2, 3)), name="non-adjacent indices")
    yield SampleInput((x(2, 3, 4), (slice(None), _idx(rng, (2,), 3), _idx(rng, (2,), 4)),
                       x(2, 2)), name="adjacent after a slice")
    yield SampleInput((x(2, 3, 4), (0, slice(None), _idx(rng, (2,), 4)), x(2, 3)),
                      name="int and index non-adjacent")
    yield SampleInput((x(6), _mask(rng, (6,), 2), x(2)), name="mask, same count")
    yield SampleInput((x(6), make_array(rng, (6,), np.bool_), 0), name="mask, scalar value")
    yield SampleInput((x(3, 4), make_array(rng, (3, 4), np.bool_), x()),
                      name="mask, 0-d value")
    yield SampleInput((x(3, 4), make_array(rng, (3,), np.bool_), x(4)),
                      name="leading mask, row value")
    yield SampleInput((x(3, 4), make_array(rng, (4,), np.bool_), x()),
                      name="bad mask shape (IndexError)")
    yield SampleInput((x(5), 7, x()), name="int out of range (IndexError)")
    yield SampleInput((x(5), _idx(rng, (2,), 5), x(3)), name="value shape mismatch")
    yield SampleInput((x(4, 6)[:, ::2], (slice(None), 1), x(4)), name="non-contiguous x")
    yield SampleInput((x(3, 4), 1, x(1, 4)), name="value with an extra leading 1")
    yield SampleInput((x(6), make_array(rng, (6,), np.bool_), x(1)),
                      name="mask, value of shape (1,)")
    yield SampleInput((x(3, 4), (slice(None), [0, 2]), 1), name="list index, scalar")
    yield SampleInput((x(3, 4), 0, [1, 2, 3, 4]), name="list value")
    yield SampleInput((x(3, 4), make_array(rng, (3, 4), np.bool_), x(3, 1)),
                      name="full mask, 2-d value (TypeError)")
    yield SampleInput((x(5), make_array(rng, (5,), np.bool_), x(1, 1)),
                      name="full mask, (1, 1) value (TypeError)")
    yield SampleInput((x(3, 4), make_array(rng, (3,), np.bool_), x(1, 1, 4)),
                      name="leading mask, (1, 1, 4) value")
    yield SampleInput((x(3, 4), make_array(rng, (3,), np.bool_), x(2)),
                      name="leading mask, value that cannot broadcast")
    yield SampleInput((make_array(rng, (5,), np.uint8), make_array(rng, (5,), np.bool_), 300),
                      name="python int out of bounds for uint8 (OverflowError)")
    yield SampleInput((make_array(rng, (5,), np.uint8), 1, 300),
                      name="python int out of bounds, int index")
    yield SampleInput((x(5), make_array(rng, (5,), np.bool_), 1.5), name="float into x")


# ---- take, take_along_axis ----------------------------------------------------------------------
def take_samples(rng, dtype):
    a = lambda *s: make_array(rng, s, dtype)  # noqa: E731
    yield SampleInput((a(5), _idx(rng, (3,), 5)), {}, "1-d, axis=None")
    yield SampleInput((a(3, 4), _idx(rng, (2, 2), 12)), {}, "axis=None flattens")
    yield SampleInput((a(3, 4), _idx(rng, (2,), 3)), {"axis": 0}, "axis=0")
    yield SampleInput((a(3, 4), _idx(rng, (2, 3), 4)), {"axis": -1}, "axis=-1, 2-d indices")
    yield SampleInput((a(2, 3, 4), _idx(rng, (2, 2), 3)), {"axis": 1}, "middle axis")
    yield SampleInput((a(2, 3, 4), _idx(rng, (), 3)), {"axis": 1}, "0-d indices")
    yield SampleInput((a(3, 4), _idx(rng, (0,), 4)), {"axis": 1}, "empty indices")
    yield SampleInput((a(3, 4), _idx(rng, (5,), 20, low=-20)), {"axis": 1, "mode": "wrap"},
                      "mode=wrap")
    yield SampleInput((a(3, 4), _idx(rng, (5,), 20, low=-20)), {"axis": 0, "mode": "clip"},
                      "mode=clip")
    yield SampleInput((a(3, 4), _idx(rng, (5,), 20, low=4)), {"axis": 1},
                      "out of range (IndexError)")
    yield SampleInput((a(2, 0), _idx(rng, (2,), 3)), {"axis": 1, "mode": "wrap"},
                      "non-empty take from an empty axis (IndexError)")
    yield SampleInput((a(2, 0), _idx(rng, (0,), 1)), {"axis": 1, "mode": "clip"},
                      "empty take from an empty axis")
    yield SampleInput((a(), _idx(rng, (2,), 1, low=0)), {}, "0-d a, axis=None")
    yield SampleInput((a(), _idx(rng, (2,), 1, low=0)), {"axis": 0}, "0-d a, axis=0 (AxisError)")
    yield SampleInput((a(3, 4), _idx(rng, (2,), 3)), {"axis": 2}, "axis out of range")
    yield SampleInput((a(3, 4), make_array(rng, (4,), np.bool_)), {"axis": 1},
                      "boolean indices are 0/1")
    yield SampleInput((a(3, 4), make_array(rng, (2,), np.float64)), {"axis": 1},
                      "float indices (TypeError)")
    yield SampleInput((a(3, 4), [0, -1]), {"axis": 1}, "list indices")
    yield SampleInput((a(3, 4), 2), {"axis": 1}, "int index")
    yield SampleInput((a(3, 8)[:, ::2], _idx(rng, (3,), 4)), {"axis": 1, "mode": "clip"},
                      "non-contiguous a")
    yield SampleInput((a(3, 4), _idx(rng, (2,), 4)), {"axis": 1, "mode": "bad"},
                      "bad mode (ValueError)")


def take_out_samples(rng, dtype):
    """``out`` first in the keywords: it is array leaf 2 in every sample (``inplace=2``)."""
    a = lambda *s: make_array(rng, s, dtype)  # noqa: E731
    yield SampleInput((a(3, 4), _idx(rng, (2,), 4)), {"out": a(3, 2), "axis": 1}, "out=")
    yield SampleInput((a(5), _idx(rng, (3,), 9)), {"out": a(3), "mode": "wrap"},
                      "out=, mode=wrap")
    yield SampleInput((a(3, 4), _idx(rng, (2,), 3)),
                      {"out": make_array(rng, (2, 4), np.int8), "axis": 0},
                      "out= of another dtype")
    yield SampleInput((a(3, 4), _idx(rng, (2,), 3)),
                      {"out": make_array(rng, (2, 4), np.complex128), "axis": 0},
                      "out= complex (TypeError)")
    yield SampleInput((a(3, 4), _idx(rng, (2,), 3)), {"out": a(3, 4), "axis": 0},
                      "out= of the wrong shape (ValueError)")


def _take_method(a, *args, **kwargs):
    return a.take(*args, **kwargs)


def take_along_axis_samples(rng, dtype):
    a = lambda *s: make_array(rng, s, dtype)  # noqa: E731
    yield SampleInput((a(5), _idx(rng, (3,), 5)), {"axis": 0}, "1-d")
    yield SampleInput((a(3, 4), _idx(rng, (3, 2), 4)), {"axis": 1}, "axis=1")
    yield SampleInput((a(3, 4), _idx(rng, (2, 4), 3)), {"axis": 0}, "axis=0")
    yield SampleInput((a(3, 4), _idx(rng, (3, 4), 4)), {}, "default axis=-1")
    yield SampleInput((a(2, 3, 4), _idx(rng, (1, 3, 4), 2)), {"axis": 0},
                      "broadcast indices")
    yield SampleInput((a(2, 3, 4), _idx(rng, (2, 5, 1), 3)), {"axis": -2},
                      "middle axis, broadcast")
    yield SampleInput((a(3, 4), _idx(rng, (5,), 12)), {"axis": None}, "axis=None")
    yield SampleInput((a(3, 4), _idx(rng, (3, 0), 4)), {"axis": 1}, "empty")
    yield SampleInput((a(3, 4), _idx(rng, (3,), 4)), {"axis": 1}, "rank mismatch (ValueError)")
    yield SampleInput((a(3, 4), _idx(rng, (3, 2), 4)), {"axis": None},
                      "axis=None, 2-d indices (ValueError)")
    yield SampleInput((a(3, 4), _idx(rng, (3, 2), 4) + 4), {"axis": 1},
                      "out of range (IndexError)")
    yield SampleInput((a(3, 4), _idx(rng, (3, 2), 4)), {"axis": 2}, "axis out of range")
    yield SampleInput((a(3, 4), make_array(rng, (3, 2), np.float64)), {"axis": 1},
                      "float indices (IndexError)")


# ---- where, copyto, fill, astype, copy ----------------------------------------------------------
def where_samples(rng, dtype):
    a = lambda *s: make_array(rng, s, dtype)  # noqa: E731
    c = lambda *s: make_array(rng, s, np.bool_)  # noqa: E731
    yield SampleInput((c(3, 4), a(3, 4), a(3, 4)), {}, "same shapes")
    yield SampleInput((c(4), a(3, 4), a(3, 1)), {}, "broadcasting")
    yield SampleInput((c(), a(3), a()), {}, "0-d condition")
    yield SampleInput((c(), a(), a()), {}, "all 0-d")
    yield SampleInput((c(2, 0), a(2, 0), a(0)), {}, "size 0")
    yield SampleInput((c(3, 4), a(3, 4), 0), {}, "python scalar y")
    yield SampleInput((c(3, 4), 1.5, a(4)), {}, "python float x")
    yield SampleInput((make_array(rng, (3, 4), np.int64), a(3, 4), a(3, 4)), {},
                      "int condition")
    yield SampleInput((c(3, 4), a(3, 4), make_array(rng, (3, 4), np.float32)), {},
                      "promotion")
    yield SampleInput((c(3, 8)[:, ::2], a(3, 4), a(3, 4)), {}, "non-contiguous")
    yield SampleInput((c(3), a(4), a(4)), {}, "shapes do not broadcast (ValueError)")
    yield SampleInput((_mask(rng, (3, 4), 5),), {}, "one argument: nonzero",
                      loop_reason="one-argument np.where is np.nonzero (data-dependent size)")


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


def _astype(x, *args, **kwargs):
    return x.astype(*args, **kwargs)


def astype_samples(rng, dtype):
    a = lambda *s: make_array(rng, s, dtype)  # noqa: E731
    for target in (np.float32, np.int64, np.bool_, np.complex128):
        yield SampleInput((a(3, 4), target), {}, f"to {np.dtype(target)}")
    yield SampleInput((a(), np.int32), {}, "0-d")
    yield SampleInput((a(3, 4), dtype), {"copy": False}, "copy=False")
    yield SampleInput((a(3, 4), np.int8), {"casting": "safe"}, "casting=safe")


def copy_samples(rng, dtype):
    a = lambda *s: make_array(rng, s, dtype)  # noqa: E731
    yield SampleInput((a(3, 4),), {}, "2-d")
    yield SampleInput((a(),), {}, "0-d")
    yield SampleInput((a(3, 8)[:, ::2],), {"order": "F"}, "order=F")
    yield SampleInput((a(2, 0),), {}, "size 0")


OPS = [
    OpInfo("getitem.basic", _getitem, getitem_basic_samples, "rule", dtypes=(np.float64,),
           covers=operator.getitem, unbatched_self=True),
    OpInfo("getitem.int_array", _getitem, getitem_int_array_samples, "rule",
           dtypes=(np.float64,), covers=operator.getitem, unbatched_self=True),
    OpInfo("getitem.bool_mask", _getitem, getitem_bool_samples, "rule", dtypes=(np.float64,),
           covers=operator.getitem, unbatched_self=True),
    OpInfo("setitem", _setitem, setitem_samples, "rule", dtypes=F64_I64,
           covers=operator.setitem, inplace=0, unbatched_self=True),
    # np.take dispatches on `a` only: with a plain `a` NumPy's own take meets the batched
    # indices and raises the clear conversion error (unbatched_self).
    OpInfo("take", np.take, take_samples, "rule", dtypes=F64_I64, unbatched_self=True),
    OpInfo("take.out", np.take, take_out_samples, "rule", dtypes=(np.float64,),
           unbatched_self=True, inplace=2),
    OpInfo("ndarray.take", _take_method, take_samples, "rule", covers=np.take,
           unbatched_self=True),
    OpInfo("take_along_axis", np.take_along_axis, take_along_axis_samples, "rule",
           dtypes=F64_I64),
    OpInfo("where", np.where, where_samples, "rule", dtypes=(np.float64, np.int32, np.bool_)),
    OpInfo("copyto", _copyto, copyto_samples, "rule", dtypes=(np.float64, np.int64),
           covers=np.copyto, inplace=0),
    OpInfo("ndarray.fill", _fill, fill_samples, "rule", dtypes=(np.float64, np.int64),
           covers=ndarray_fill, inplace=0, unbatched_self=True),
    OpInfo("ndarray.astype", _astype, astype_samples, "rule", dtypes=(np.float64, np.int64),
           covers=ndarray_astype, unbatched_self=True),
    OpInfo("copy", np.copy, copy_samples, "rule", dtypes=(np.float64,)),
]
