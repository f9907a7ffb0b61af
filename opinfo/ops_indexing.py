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
        ((5,), (Ellipsis, 0), "Ellipsis then int -> a 0-d array"),
        ((3, 4), (0, 1, Ellipsis), "ints then Ellipsis -> a 0-d array"),
        ((3, 4), (Ellipsis, None), "Ellipsis, None"),
        ((3, 4), (None, Ellipsis), "None, Ellipsis"),
        ((5,), (slice(None), None), "slice, None"),
        ((3, 4), (Ellipsis, 4), "Ellipsis then int out of range"),
        ((3, 4), (0, 1, 2, None), "too many indices with None"),
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
    yield SampleInput((x(4, 3, 5), (slice(None), _idx(rng, (2,), 3), Ellipsis, _idx(rng, (2,), 5))),
                      name="an Ellipsis of no dims separates indices (NumPy)")
    yield SampleInput((x(2, 4), (None, _idx(rng, (2,), 2), Ellipsis, 0)),
                      name="None, index, empty Ellipsis, int")
    yield SampleInput((x(2, 3, 4), (_idx(rng, (3,), 2), None, Ellipsis)),
                      name="index, None, Ellipsis")
    yield SampleInput((x(2, 3, 4), (None, _idx(rng, (2,), 2), slice(None, None, -1),
                                    _idx(rng, (2,), 4))), name="None before non-adjacent")
    yield SampleInput((x(2, 3, 4), (slice(None), _idx(rng, (2, 2), 3), slice(1, 3))),
                      name="2-d index between slices")
    yield SampleInput((x(3, 4), [0, -1]), name="list index")
    yield SampleInput((x(3, 4), (slice(None), [2, 0, 1])), name="slice, list")
    yield SampleInput((x(5), [_idx(rng, (), 5), 0, _idx(rng, (), 5)]),
                      name="list holding 0-d index arrays")
    yield SampleInput((x(3, 4), (slice(None), [_idx(rng, (), 4), 1])),
                      name="slice, list holding a 0-d index array")
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
    yield SampleInput((x(3, 4), np.array(rng.random() < 2)), name="0-d True mask")
    yield SampleInput((x(3, 4), np.array(rng.random() > 2)), name="0-d False mask")
    yield SampleInput((x(3, 4), (1, np.array(rng.random() < 2), _idx(rng, (2,), 4))),
                      name="int, 0-d mask, index")
    yield SampleInput((x(2, 3, 4), (Ellipsis, np.array(rng.random() < 2), slice(1, 3))),
                      name="Ellipsis, 0-d mask, slice")
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
    yield SampleInput((x(4, 3, 5), (slice(None), _idx(rng, (2,), 3), Ellipsis, _idx(rng, (2,), 5)),
                       x(2, 4)), name="an Ellipsis of no dims separates indices")
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
    yield SampleInput((x(5), [_idx(rng, (), 5), 0], x(2)), name="list holding a 0-d index array")
    yield SampleInput((x(3, 4), (np.array(rng.random() < 2), 1), x(1)),
                      name="0-d mask and int")
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
    yield SampleInput((a(5), _idx(rng, (2,), 5, low=0).astype(np.uint8)), {"axis": -1},
                      "1-d, uint8 indices")
    yield SampleInput((a(5), _idx(rng, (2,), 5) + 5), {"axis": 0}, "1-d out of range (IndexError)")
    yield SampleInput((a(5), _idx(rng, (0,), 5)), {"axis": 0}, "1-d, empty indices")
    yield SampleInput((a(0), _idx(rng, (0,), 1)), {"axis": -1}, "1-d, size-0 arr and indices")
    yield SampleInput((a(8)[::2], _idx(rng, (3,), 4)), {"axis": 0}, "1-d non-contiguous arr")
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


# ---- in-place placement: put, put_along_axis, place, putmask, fill_diagonal ---------------------
def _put(a, ind, v, **kwargs):
    np.put(a, ind, v, **kwargs)
    return a


def put_samples(rng, dtype):
    a = lambda *s: make_array(rng, s, dtype)  # noqa: E731
    yield SampleInput((a(5), _idx(rng, (3,), 5), a(3)), {}, "1-d")
    yield SampleInput((a(3, 4), _idx(rng, (4,), 12), a(2)), {}, "2-d a, values repeated")
    yield SampleInput((a(6), _idx(rng, (6,), 3, low=0), a(6)), {}, "duplicate indices")
    yield SampleInput((a(3, 4), _idx(rng, (5,), 30, low=-30), a(5)), {"mode": "wrap"},
                      "mode=wrap")
    yield SampleInput((a(3, 4), _idx(rng, (5,), 30, low=-30), a(1)), {"mode": "clip"},
                      "mode=clip")
    yield SampleInput((a(5), _idx(rng, (2,), 5), 7), {}, "python scalar v")
    yield SampleInput((a(5), _idx(rng, (2,), 5), a()), {}, "0-d v")
    yield SampleInput((a(5), _idx(rng, (4,), 5), a(2, 2)), {}, "2-d v is flattened")
    yield SampleInput((a(5), _idx(rng, (3,), 5), a(0)), {}, "empty v: nothing")
    yield SampleInput((a(5), _idx(rng, (0,), 5), a(2)), {}, "empty indices")
    yield SampleInput((a(), [0, 0], a(2)), {}, "0-d a")
    yield SampleInput((a(4, 6)[:, ::2], _idx(rng, (3,), 12), a(3)), {}, "non-contiguous a")
    yield SampleInput((a(5), make_array(rng, (3,), np.bool_), a(3)), {}, "bool indices are 0/1")
    yield SampleInput((a(5), _idx(rng, (2,), 5) + 5, a(2)), {}, "out of range (IndexError)")
    yield SampleInput((a(5), make_array(rng, (2,), np.float64), a(2)), {},
                      "float indices (TypeError)")
    yield SampleInput((a(0), _idx(rng, (2,), 3), a(2)), {"mode": "wrap"},
                      "empty a, mode=wrap (IndexError)")
    yield SampleInput((make_array(rng, (4,), np.uint8), _idx(rng, (2,), 4), 300), {},
                      "python int out of bounds (OverflowError)")


def _put_along_axis(arr, indices, values, axis):
    np.put_along_axis(arr, indices, values, axis)
    return arr


def put_along_axis_samples(rng, dtype):
    a = lambda *s: make_array(rng, s, dtype)  # noqa: E731
    yield SampleInput((a(3, 4), _idx(rng, (3, 2), 4), a(3, 2), 1), {}, "axis=1")
    yield SampleInput((a(3, 4), _idx(rng, (2, 4), 3), a(2, 4), 0), {}, "axis=0")
    yield SampleInput((a(2, 3, 4), _idx(rng, (2, 3, 5), 4, low=0), a(2, 3, 5), -1), {},
                      "axis=-1, duplicate indices")
    yield SampleInput((a(3, 4), _idx(rng, (1, 2), 4), a(3, 1), 1), {},
                      "indices and values broadcast")
    yield SampleInput((a(3, 4), _idx(rng, (3, 2), 4), 5, 1), {}, "python scalar values")
    yield SampleInput((a(3, 4), _idx(rng, (3,), 12), a(3), None), {}, "axis=None")
    yield SampleInput((a(3, 4), _idx(rng, (3,), 12), a(1, 1), None), {},
                      "axis=None, (1, 1) values")
    yield SampleInput((a(5), _idx(rng, (0,), 5), a(0), 0), {}, "empty indices")
    yield SampleInput((a(3, 4), _idx(rng, (3,), 4), a(3), 1), {}, "rank mismatch (ValueError)")
    yield SampleInput((a(3, 4), _idx(rng, (3, 2), 4) + 4, a(3, 2), 1), {},
                      "out of range (IndexError)")
    yield SampleInput((a(3, 4), _idx(rng, (3,), 12) + 12, a(3), None), {},
                      "axis=None out of range (IndexError)")
    yield SampleInput((a(3, 4), _idx(rng, (3, 2), 4), a(3, 3), 1), {},
                      "values do not broadcast (ValueError)")
    yield SampleInput((a(3, 4), _idx(rng, (3, 2), 4), a(3, 2), 2), {}, "axis out of range")


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


# ---- selection: choose, select, compress, extract -----------------------------------------------
def choose_samples(rng, dtype):
    a = lambda *s: make_array(rng, s, dtype)  # noqa: E731
    yield SampleInput((_idx(rng, (4,), 3, low=0), [a(4), a(4), a(4)]), {}, "list of choices")
    yield SampleInput((_idx(rng, (3, 4), 2, low=0), a(2, 3, 4)), {}, "array of choices")
    yield SampleInput((_idx(rng, (3, 1), 2, low=0), [a(4), a(3, 4)]), {}, "broadcasting")
    yield SampleInput((_idx(rng, (4,), 2, low=0), [a(4), 1.5]), {}, "a python scalar choice")
    yield SampleInput((_idx(rng, (), 3, low=0), [a(2), a(2), a()]), {}, "0-d a")
    yield SampleInput((_idx(rng, (5,), 6, low=-6), [a(5), a(5)]), {"mode": "wrap"}, "mode=wrap")
    yield SampleInput((_idx(rng, (5,), 6, low=-6), a(3, 5)), {"mode": "clip"}, "mode=clip")
    yield SampleInput((_idx(rng, (4,), 3, low=2), [a(4), a(4)]), {},
                      "invalid entry (ValueError)")
    yield SampleInput((make_array(rng, (4,), np.float64), [a(4), a(4)]), {},
                      "float a (TypeError)")
    yield SampleInput((_idx(rng, (4,), 1, low=0), [a(4), a(3)]), {},
                      "shapes do not broadcast (ValueError)")


def select_samples(rng, dtype):
    a = lambda *s: make_array(rng, s, dtype)  # noqa: E731
    m = lambda *s: make_array(rng, s, np.bool_)  # noqa: E731
    yield SampleInput(([m(5), m(5)], [a(5), a(5)]), {}, "two conditions")
    yield SampleInput(([m(3, 4), m(4)], [a(3, 4), a(1)], a()), {}, "broadcasting, default=")
    yield SampleInput(([m(4)], [2]), {"default": -1}, "python scalar choice and default")
    yield SampleInput(([m(4), m(4)], [a(4), np.float32(1.5)]), {}, "promotion")
    yield SampleInput(([m()], [a()]), {}, "0-d")
    yield SampleInput(([m(4)], [a(2, 4)]), {}, "choices wider than the conditions")
    yield SampleInput(([make_array(rng, (4,), np.int64)], [a(4)]), {},
                      "int condition (TypeError)")
    yield SampleInput(([m(4), m(4)], [a(4)]), {}, "length mismatch (ValueError)")
    yield SampleInput(([m(3)], [a(4)]), {}, "shapes do not broadcast (ValueError)")


def _fixed_count(rng, n, count, pad=0):
    """A 1-d mask with ``count`` True values in its first ``n`` entries, then ``pad`` False."""
    return np.concatenate([_mask(rng, (n,), count), np.zeros(pad, bool)])


def compress_samples(rng, dtype):
    a = lambda *s: make_array(rng, s, dtype)  # noqa: E731
    yield SampleInput((_fixed_count(rng, 5, 2), a(5)), {}, "1-d")
    yield SampleInput((_fixed_count(rng, 12, 5), a(3, 4)), {}, "axis=None flattens")
    yield SampleInput((_fixed_count(rng, 3, 2), a(3, 4)), {"axis": 0}, "axis=0")
    yield SampleInput((_fixed_count(rng, 4, 1), a(2, 4, 3)), {"axis": -2}, "axis=-2")
    yield SampleInput((_fixed_count(rng, 2, 1), a(3, 4)), {"axis": 1}, "shorter condition")
    yield SampleInput((_fixed_count(rng, 4, 2, pad=3), a(3, 4)), {"axis": 1},
                      "longer condition, False beyond")
    yield SampleInput((_fixed_count(rng, 5, 0), a(5)), {}, "selects nothing")
    yield SampleInput((_fixed_count(rng, 4, 2).astype(np.int64) * 3, a(4)), {},
                      "int condition")
    yield SampleInput((_fixed_count(rng, 1, 1), a()), {"axis": 0}, "0-d a")
    yield SampleInput((np.concatenate([_fixed_count(rng, 3, 1), [True]]), a(3)), {},
                      "True beyond the axis (IndexError)")
    yield SampleInput((_mask(rng, (2, 2), 2), a(4)), {}, "2-d condition (ValueError)")
    yield SampleInput((_fixed_count(rng, 3, 1), a(3, 4)), {"axis": 2}, "axis out of range")


def extract_samples(rng, dtype):
    a = lambda *s: make_array(rng, s, dtype)  # noqa: E731
    yield SampleInput((_mask(rng, (3, 4), 5), a(3, 4)), {}, "same shape")
    yield SampleInput((_fixed_count(rng, 6, 2), a(2, 4)), {}, "shorter condition")
    yield SampleInput((_mask(rng, (2, 2), 2).astype(np.float64) * 2.5, a(4)), {},
                      "float condition")
    yield SampleInput((np.concatenate([_fixed_count(rng, 4, 1), [True]]), a(4)), {},
                      "True beyond the end (IndexError)")


# ---- diagonals, triangles, index helpers --------------------------------------------------------
def diag_samples(rng, dtype):
    a = lambda *s: make_array(rng, s, dtype)  # noqa: E731
    for k in (0, 2, -1):
        yield SampleInput((a(4),), {"k": k}, f"1-d, k={k}")
    for k in (0, 1, -2, 7):
        yield SampleInput((a(3, 4),), {"k": k}, f"2-d, k={k}")
    yield SampleInput((a(0),), {"k": 1}, "empty 1-d")
    yield SampleInput((a(6, 8)[:, ::2],), {}, "non-contiguous")
    yield SampleInput((a(),), {}, "0-d (ValueError)")
    yield SampleInput((a(2, 2, 2),), {}, "3-d (ValueError)")


def diagflat_samples(rng, dtype):
    a = lambda *s: make_array(rng, s, dtype)  # noqa: E731
    yield SampleInput((a(2, 2),), {}, "2-d is flattened")
    yield SampleInput((a(3),), {"k": -2}, "k=-2")
    yield SampleInput((a(),), {"k": 1}, "0-d")
    yield SampleInput((a(0),), {}, "empty")


def tri_samples(rng, dtype):
    a = lambda *s: make_array(rng, s, dtype)  # noqa: E731
    for k in (0, 1, -1):
        yield SampleInput((a(4, 4),), {"k": k}, f"square, k={k}")
    yield SampleInput((a(3, 5),), {"k": 2}, "wide")
    yield SampleInput((a(2, 4, 3),), {}, "stack of matrices")
    yield SampleInput((a(4),), {}, "1-d broadcasts to a square (as NumPy)")
    yield SampleInput((a(0, 3),), {}, "size 0")
    yield SampleInput((a(4, 8)[:, ::2],), {"k": -1}, "non-contiguous")
    yield SampleInput((a(),), {}, "0-d (TypeError)")


def indices_from_samples(rng, dtype):
    a = lambda *s: make_array(rng, s, dtype)  # noqa: E731
    yield SampleInput((a(4, 4),), {}, "square")
    yield SampleInput((a(3, 5),), {"k": 1}, "wide, k=1")
    yield SampleInput((a(5, 2),), {"k": -1}, "tall, k=-1")
    yield SampleInput((a(4),), {}, "1-d (ValueError)")


def diag_indices_from_samples(rng, dtype):
    a = lambda *s: make_array(rng, s, dtype)  # noqa: E731
    yield SampleInput((a(3, 3),), {}, "square")
    yield SampleInput((a(2, 2, 2),), {}, "3-d")
    yield SampleInput((a(2, 3),), {}, "not square (ValueError)")
    yield SampleInput((a(3),), {}, "1-d (ValueError)")


def ix_samples(rng, dtype):
    yield SampleInput((_idx(rng, (3,), 5), _idx(rng, (2,), 4)), {}, "two int arrays")
    yield SampleInput((_idx(rng, (2,), 5), _mask(rng, (4,), 2), _idx(rng, (1,), 3)), {},
                      "bool array, same count")
    yield SampleInput((_idx(rng, (0,), 5), make_array(rng, (2,), np.float64)), {},
                      "empty and float")
    yield SampleInput((_idx(rng, (2, 2), 5),), {}, "2-d (ValueError)")


def ravel_multi_index_samples(rng, dtype):
    yield SampleInput(((_idx(rng, (4,), 3, low=0), _idx(rng, (4,), 5, low=0)), (3, 5)), {},
                      "tuple of arrays")
    yield SampleInput(((_idx(rng, (3, 1), 3, low=0), _idx(rng, (4,), 5, low=0)), (3, 5)),
                      {"order": "F"}, "broadcasting, order=F")
    yield SampleInput((_idx(rng, (2, 4), 3, low=0), (3, 3)), {}, "one 2-d array")
    yield SampleInput(((_idx(rng, (4,), 9, low=-9), _idx(rng, (4,), 9, low=-9)), (3, 5)),
                      {"mode": ("wrap", "clip")}, "modes per axis")
    yield SampleInput(((1, _idx(rng, (3,), 5, low=0)), (3, 5)), {}, "python int coordinate")
    yield SampleInput(((_idx(rng, (), 3, low=0), _idx(rng, (), 5, low=0)), (3, 5)), {}, "0-d")
    yield SampleInput(((_idx(rng, (2,), 3, low=0) + 3, _idx(rng, (2,), 5, low=0)), (3, 5)), {},
                      "invalid entry (ValueError)")
    yield SampleInput(((make_array(rng, (2,), np.float64), _idx(rng, (2,), 5, low=0)), (3, 5)),
                      {}, "float coordinates (TypeError)")
    yield SampleInput(((_idx(rng, (2,), 3, low=0),), (3, 5)), {}, "too few (ValueError)")


def unravel_index_samples(rng, dtype):
    yield SampleInput((_idx(rng, (4,), 12, low=0), (3, 4)), {}, "1-d")
    yield SampleInput((_idx(rng, (2, 3), 24, low=0), (2, 3, 4)), {"order": "F"},
                      "2-d, order=F")
    yield SampleInput((_idx(rng, (), 12, low=0), (3, 4)), {}, "0-d")
    yield SampleInput((_idx(rng, (2,), 12, low=0) + 12, (3, 4)), {},
                      "out of bounds (ValueError)")
    yield SampleInput((make_array(rng, (2,), np.float64), (3, 4)), {}, "float (TypeError)")


# ---- ops that call Python functions -------------------------------------------------------------
def _double(v):
    return v * 2


def _plus_one(v):
    return v + 1


def _centre(v):
    return v - np.mean(v)  # not elementwise: a 1-d selection per call, as in NumPy


def _sign_branch(v):
    return v * 2 if v[0] > 0 else v  # Python control flow on data


def piecewise_samples(rng, dtype):
    a = lambda *s: make_array(rng, s, dtype)  # noqa: E731
    m1 = _mask(rng, (6,), 2)
    yield SampleInput((a(6), [m1, ~m1], [_double, _plus_one]), {}, "two conditions, same counts")
    m2 = _mask(rng, (6,), 3)
    yield SampleInput((a(6), [m2], [_centre, 0.5]), {}, "otherwise value, non-elementwise f")
    m3 = _mask(rng, (2, 3), 4)
    yield SampleInput((a(2, 3), m3, [_double]), {}, "one condition array (promoted)")
    yield SampleInput((a(2, 3), [m3], [1, 2]), {}, "scalar values")
    yield SampleInput((a(), [np.array(rng.random() < 2)], [_double, 1.5]), {},
                      "0-d x, one 0-d condition")
    c = np.array(rng.random() < 0.5)
    yield SampleInput((a(), [c, np.logical_not(c, out=np.empty((), bool))], [_centre, _double]),
                      {},
                      "0-d x, conditions differ per example")
    yield SampleInput((a(5), [make_array(rng, (5,), np.bool_)], [_double, _plus_one]), {},
                      "counts differ per example",
                      loop_reason="a condition selects a different number of elements per "
                                  "example: a batched selection is impossible")
    yield SampleInput((a(4), [_mask(rng, (4,), 2)], [_double, _plus_one, _double]), {},
                      "too many functions (ValueError)")


def _apply_along_axis(func1d, axis, arr, *args):
    return np.apply_along_axis(func1d, axis, arr, *args)


def _diff(v):
    return v[1:] - v[:-1]


def _outer(v, w):
    return v[:, None] * w


def _first_then_float(v):
    return v[0] * 1.5  # a float result; the loop's buffer keeps the first result's dtype


def apply_along_axis_samples(rng, dtype):
    a = lambda *s: make_array(rng, s, dtype)  # noqa: E731
    yield SampleInput((np.sum, 0, a(3, 4)), {}, "reduce, axis=0")
    yield SampleInput((_centre, -1, a(2, 3, 4)), {}, "vector result, axis=-1")
    yield SampleInput((_diff, 1, a(2, 5, 3)), {}, "shorter result, middle axis")
    yield SampleInput((_outer, 0, a(3, 2), a(2)), {}, "matrix result, extra argument")
    yield SampleInput((_first_then_float, 1, a(3, 4)), {}, "scalar result")
    yield SampleInput((_sign_branch, 1, a(3, 4)), {}, "control flow on data",
                      loop_reason="func1d branches on data: batched slices would take "
                                  "different branches, so the call runs per example")
    yield SampleInput((np.sum, 0, a()), {}, "0-d (AxisError)")
    yield SampleInput((np.sum, 1, a(0, 3)), {}, "empty iteration dims (ValueError)")


def _sum_keep(a, axis):
    return np.sum(a, axis=axis, keepdims=True)


def _bad_shape(a, axis):
    return np.sum(a)


def apply_over_axes_samples(rng, dtype):
    a = lambda *s: make_array(rng, s, dtype)  # noqa: E731
    yield SampleInput((np.sum, a(2, 3, 4), (0, 2)), {}, "sum over (0, 2)")
    yield SampleInput((np.mean, a(3, 4), -1), {}, "mean, negative axis")
    yield SampleInput((_sum_keep, a(3, 4), [1]), {}, "function keeping dims")
    yield SampleInput((_bad_shape, a(2, 3, 4), 0), {}, "wrong result shape (ValueError)")


OPS = [
    OpInfo("getitem.basic", _getitem, getitem_basic_samples, "rule", dtypes=(np.float64,),
           covers=operator.getitem, unbatched_self=True),
    OpInfo("getitem.int_array", _getitem, getitem_int_array_samples, "rule",
           dtypes=(np.float64, np.bool_), covers=operator.getitem, unbatched_self=True),
    OpInfo("getitem.bool_mask", _getitem, getitem_bool_samples, "rule",
           dtypes=(np.float64, np.complex128),
           covers=operator.getitem, unbatched_self=True),
    OpInfo("setitem", _setitem, setitem_samples, "rule", dtypes=F64_I64 + (np.complex128,),
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
    OpInfo("ndarray.astype.targets", _astype, astype_samples, "rule", dtypes=(np.float64, np.int64),
           covers=ndarray_astype, unbatched_self=True),
    OpInfo("copy.layouts", np.copy, copy_samples, "rule", dtypes=(np.float64,)),
    OpInfo("put", _put, put_samples, "rule", dtypes=F64_I64 + (np.complex128,), covers=np.put,
           inplace=0),
    OpInfo("put_along_axis", _put_along_axis, put_along_axis_samples, "rule", dtypes=F64_I64,
           covers=np.put_along_axis, inplace=0),
    OpInfo("place", _place, place_samples, "rule", dtypes=F64_I64, covers=np.place, inplace=0),
    OpInfo("putmask", _putmask, putmask_samples, "rule", dtypes=F64_I64, covers=np.putmask,
           inplace=0),
    # fill_diagonal dispatches on `a` only: with a plain `a` NumPy's own code meets a batched
    # value and raises the conversion error (unbatched_self).
    OpInfo("fill_diagonal", _fill_diagonal, fill_diagonal_samples, "rule", dtypes=F64_I64,
           covers=np.fill_diagonal, inplace=0, unbatched_self=True),
    OpInfo("choose", np.choose, choose_samples, "rule", dtypes=F64_I64),
    # NumPy's select does not dispatch on `default`: a batched default with plain conditions
    # and choices meets NumPy's own code (a clear conversion error).
    OpInfo("select", np.select, select_samples, "decomposition", dtypes=(np.float64, np.int32),
           undispatched=(-1,), notes="default= is not dispatched by NumPy"),
    OpInfo("compress", np.compress, compress_samples, "rule", dtypes=F64_I64),
    OpInfo("extract", np.extract, extract_samples, "decomposition", dtypes=(np.float64,)),
    OpInfo("diag", np.diag, diag_samples, "rule", dtypes=(np.float64, np.bool_)),
    OpInfo("diagflat", np.diagflat, diagflat_samples, "rule", dtypes=(np.float64,)),
    OpInfo("tril", np.tril, tri_samples, "rule", dtypes=(np.float64, np.bool_)),
    OpInfo("triu", np.triu, tri_samples, "rule", dtypes=(np.float64, np.int32)),
    OpInfo("tril_indices_from", np.tril_indices_from, indices_from_samples, "rule"),
    OpInfo("triu_indices_from", np.triu_indices_from, indices_from_samples, "rule"),
    OpInfo("diag_indices_from", np.diag_indices_from, diag_indices_from_samples, "rule"),
    OpInfo("ix_", np.ix_, ix_samples, "rule", dtypes=(np.int64,)),
    OpInfo("ravel_multi_index", np.ravel_multi_index, ravel_multi_index_samples, "rule",
           dtypes=(np.int64,)),
    OpInfo("unravel_index", np.unravel_index, unravel_index_samples, "rule", dtypes=(np.int64,)),
    OpInfo("piecewise", np.piecewise, piecewise_samples, "rule", dtypes=(np.float64,)),
    # apply_along_axis dispatches on `arr` only (extra arguments with a plain arr: NumPy's own).
    OpInfo("apply_along_axis", _apply_along_axis, apply_along_axis_samples, "rule",
           dtypes=(np.float64, np.int64), covers=np.apply_along_axis, unbatched_self=True),
    OpInfo("apply_over_axes", np.apply_over_axes, apply_over_axes_samples, "decomposition",
           dtypes=(np.float64,)),
]
