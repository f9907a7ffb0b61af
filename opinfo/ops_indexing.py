"""Indexing: ``x[key]`` and ``x[key] = v`` (``operator.getitem`` / ``operator.setitem``), and
index construction: ix_, ravel_multi_index, unravel_index, tril_indices_from,
triu_indices_from, diag_indices_from -- the ops whose rules are in
``batchtensor/rules/indexing.py``.

The sample helpers ``idx`` and ``mask`` and the dtype tuple ``F64_I64`` are shared with
``ops_placement.py`` and ``ops_selection.py``, which import them from here."""

from __future__ import annotations

import math
import operator

import numpy as np

from .core import OpInfo, SampleInput
from .samples import make_array

F64_I64 = (np.float64, np.int64)


def idx(rng, shape, n, low=None):
    """Integer indices valid for an axis of size ``n`` (negative ones included)."""
    return make_array(rng, shape, np.intp, low=-n if low is None else low, high=n)


def mask(rng, shape, count):
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
        ((3, 4, 5), (0, slice(None), True), "int and True scalar apart: advanced dims first"),
        ((3, 4), (True, True), "two True scalars: one dimension"),
        ((3, 4), (True, False), "True and False scalars: a dimension of length 0"),
        ((3, 4), (Ellipsis, False), "Ellipsis, False"),
        ((2, 3, 4), (slice(None), np.True_, 2), "NumPy bool scalar, then an int"),
        ((3, 4), (True, None, 0, None, True), "True scalars and None around an int"),
        ((), True, "True scalar into 0-d"),
        ((3, 4), [], "empty list: an empty integer index"),
        ((3, 4), ([], 0), "empty list and an int"),
        ((3, 4), (slice(None), []), "slice, empty list"),
        ((3, 4), 1.5, "float index raises"),
        ((3, 4), (0, 1.0), "float in a tuple raises"),
        ((3, 4), (slice(None), 9), "out of bounds on the second axis names axis 1"),
        ((3, 4), (Ellipsis, 5), "out of bounds after an Ellipsis"),
        ((3, 4), [0, 7], "index list out of bounds"),
        ((3, 4), [True, False], "boolean list of the wrong length"),
    ]


def getitem_basic_samples(rng, dtype):
    for shape, key, name in _basic_keys():
        yield SampleInput((make_array(rng, shape, dtype), key), name=name)
    yield SampleInput((make_array(rng, (4, 6), dtype, noncontiguous=True), (slice(None), 1)),
                      name="non-contiguous")


_RECORD = np.dtype([("a", np.float64), ("b", np.int32), ("c", np.float32, (2,))])


def _records(rng, shape):
    r = np.zeros(shape, _RECORD)
    r["a"] = rng.normal(size=shape)
    r["b"] = rng.integers(-5, 5, size=shape)
    r["c"] = rng.normal(size=shape + (2,))
    return r


def getitem_field_samples(rng, dtype):
    yield SampleInput((_records(rng, (3,)), "a"), name="one field")
    yield SampleInput((_records(rng, (2, 3)), "c"), name="a sub-array field")
    yield SampleInput((_records(rng, ()), "b"), name="0-d record")
    yield SampleInput((_records(rng, (3,)), "z"), name="no such field raises")


def setitem_field_samples(rng, dtype):
    yield SampleInput((_records(rng, (3,)), "a", make_array(rng, (3,), np.float64)),
                      name="one field")
    yield SampleInput((_records(rng, (3,)), "b", 4), name="a Python scalar")
    yield SampleInput((_records(rng, (2,)), "c", make_array(rng, (2, 2), np.float32)),
                      name="a sub-array field")


def getitem_int_array_samples(rng, dtype):
    x = lambda *s: make_array(rng, s, dtype)  # noqa: E731
    yield SampleInput((x(5), idx(rng, (3,), 5)), name="1-d index")
    yield SampleInput((x(5), idx(rng, (2, 3), 5)), name="2-d index")
    yield SampleInput((x(5), idx(rng, (), 5)), name="0-d index array")
    yield SampleInput((x(5), idx(rng, (0,), 5)), name="empty index")
    yield SampleInput((x(3, 4), idx(rng, (2,), 3)), name="index on the first of two axes")
    yield SampleInput((x(3, 4), (slice(None), idx(rng, (2,), 4))), name="slice, index")
    yield SampleInput((x(3, 4), (idx(rng, (2,), 3), idx(rng, (2,), 4))), name="two indices")
    yield SampleInput((x(3, 4), (idx(rng, (2, 1), 3), idx(rng, (3,), 4))),
                      name="two indices broadcasting")
    yield SampleInput((x(2, 3, 4), (slice(None), idx(rng, (2,), 3), idx(rng, (2,), 4))),
                      name="adjacent after a slice")
    yield SampleInput((x(2, 3, 4), (idx(rng, (2,), 2), slice(None), idx(rng, (2,), 4))),
                      name="non-adjacent: index dims move to the front")
    yield SampleInput((x(2, 3, 4), (0, slice(None), idx(rng, (2,), 4))),
                      name="int and index non-adjacent")
    yield SampleInput((x(2, 3, 4), (slice(None), 1, idx(rng, (2,), 4))),
                      name="int and index adjacent")
    yield SampleInput((x(2, 3, 4), (Ellipsis, idx(rng, (3,), 4))), name="Ellipsis, index")
    yield SampleInput((x(4, 3, 5), (slice(None), idx(rng, (2,), 3), Ellipsis, idx(rng, (2,), 5))),
                      name="an Ellipsis of no dims separates indices (NumPy)")
    yield SampleInput((x(2, 4), (None, idx(rng, (2,), 2), Ellipsis, 0)),
                      name="None, index, empty Ellipsis, int")
    yield SampleInput((x(2, 3, 4), (idx(rng, (3,), 2), None, Ellipsis)),
                      name="index, None, Ellipsis")
    yield SampleInput((x(2, 3, 4), (None, idx(rng, (2,), 2), slice(None, None, -1),
                                    idx(rng, (2,), 4))), name="None before non-adjacent")
    yield SampleInput((x(2, 3, 4), (slice(None), idx(rng, (2, 2), 3), slice(1, 3))),
                      name="2-d index between slices")
    yield SampleInput((x(3, 4), [0, -1]), name="list index")
    yield SampleInput((x(3, 4), (slice(None), [2, 0, 1])), name="slice, list")
    yield SampleInput((x(5), [idx(rng, (), 5), 0, idx(rng, (), 5)]),
                      name="list holding 0-d index arrays")
    yield SampleInput((x(3, 4), (slice(None), [idx(rng, (), 4), 1])),
                      name="slice, list holding a 0-d index array")
    yield SampleInput((x(2, 0, 3), (slice(None), slice(None), idx(rng, (2,), 3))),
                      name="size-0 axis")
    yield SampleInput((x(4, 6)[:, ::2], idx(rng, (2,), 4)), name="non-contiguous x")
    yield SampleInput((x(5), idx(rng, (2,), 5) + 5), name="out of range (IndexError)")
    yield SampleInput((x(3, 4), (idx(rng, (2,), 3), idx(rng, (3,), 4))),
                      name="shape mismatch (IndexError)")
    yield SampleInput((x(5), make_array(rng, (2,), np.float64)), name="float index (IndexError)")


def getitem_bool_samples(rng, dtype):
    x = lambda *s: make_array(rng, s, dtype)  # noqa: E731
    yield SampleInput((x(6), mask(rng, (6,), 3)), name="1-d mask")
    yield SampleInput((x(3, 4), mask(rng, (3, 4), 5)), name="full mask")
    yield SampleInput((x(3, 4), mask(rng, (3,), 2)), name="leading-axis mask")
    yield SampleInput((x(3, 4), (slice(None), mask(rng, (4,), 2))), name="slice, mask")
    yield SampleInput((x(2, 3, 4), (Ellipsis, mask(rng, (4,), 3))), name="Ellipsis, mask")
    yield SampleInput((x(2, 3, 4), (mask(rng, (2,), 1), slice(None), idx(rng, (1,), 4))),
                      name="mask and index non-adjacent")
    yield SampleInput((x(3, 4), (mask(rng, (3,), 2), idx(rng, (2,), 4))),
                      name="mask and index adjacent")
    yield SampleInput((x(5), mask(rng, (5,), 0)), name="mask selects nothing")
    yield SampleInput((x(5), mask(rng, (5,), 5)), name="mask selects everything")
    yield SampleInput((x(3, 4), np.array(rng.random() < 2)), name="0-d True mask")
    yield SampleInput((x(3, 4), np.array(rng.random() > 2)), name="0-d False mask")
    yield SampleInput((x(3, 4), (1, np.array(rng.random() < 2), idx(rng, (2,), 4))),
                      name="int, 0-d mask, index")
    yield SampleInput((x(2, 3, 4), (Ellipsis, np.array(rng.random() < 2), slice(1, 3))),
                      name="Ellipsis, 0-d mask, slice")
    yield SampleInput((x(3, 4), mask(rng, (4,), 2)), name="bad mask shape (IndexError)")
    yield SampleInput((x(3, 4), mask(rng, (3, 4, 1), 2)), name="mask rank too high")


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
    yield SampleInput((x(6), idx(rng, (3,), 6), x(3)), name="index array")
    yield SampleInput((x(6), idx(rng, (2, 2), 6), x(2)), name="2-d index, broadcast value")
    yield SampleInput((x(3, 4), (idx(rng, (2,), 3), idx(rng, (2,), 4)), x(2)),
                      name="two indices")
    yield SampleInput((x(2, 3, 4), (idx(rng, (2,), 2), slice(None), idx(rng, (2,), 4)),
                       x(2, 3)), name="non-adjacent indices")
    yield SampleInput((x(2, 3, 4), (slice(None), idx(rng, (2,), 3), idx(rng, (2,), 4)),
                       x(2, 2)), name="adjacent after a slice")
    yield SampleInput((x(2, 3, 4), (0, slice(None), idx(rng, (2,), 4)), x(2, 3)),
                      name="int and index non-adjacent")
    yield SampleInput((x(4, 3, 5), (slice(None), idx(rng, (2,), 3), Ellipsis, idx(rng, (2,), 5)),
                       x(2, 4)), name="an Ellipsis of no dims separates indices")
    yield SampleInput((x(6), mask(rng, (6,), 2), x(2)), name="mask, same count")
    yield SampleInput((x(6), make_array(rng, (6,), np.bool_), 0), name="mask, scalar value")
    yield SampleInput((x(3, 4), make_array(rng, (3, 4), np.bool_), x()),
                      name="mask, 0-d value")
    yield SampleInput((x(3, 4), make_array(rng, (3,), np.bool_), x(4)),
                      name="leading mask, row value")
    yield SampleInput((x(3, 4), make_array(rng, (4,), np.bool_), x()),
                      name="bad mask shape (IndexError)")
    yield SampleInput((x(5), 7, x()), name="int out of range (IndexError)")
    yield SampleInput((x(5), idx(rng, (2,), 5), x(3)), name="value shape mismatch")
    yield SampleInput((x(4, 6)[:, ::2], (slice(None), 1), x(4)), name="non-contiguous x")
    yield SampleInput((x(3, 4), 1, x(1, 4)), name="value with an extra leading 1")
    yield SampleInput((x(6), make_array(rng, (6,), np.bool_), x(1)),
                      name="mask, value of shape (1,)")
    yield SampleInput((x(3, 4), (slice(None), [0, 2]), 1), name="list index, scalar")
    yield SampleInput((x(5), [idx(rng, (), 5), 0], x(2)), name="list holding a 0-d index array")
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


# ---- index construction -------------------------------------------------------------------------
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
    yield SampleInput((idx(rng, (3,), 5), idx(rng, (2,), 4)), {}, "two int arrays")
    yield SampleInput((idx(rng, (2,), 5), mask(rng, (4,), 2), idx(rng, (1,), 3)), {},
                      "bool array, same count")
    yield SampleInput((idx(rng, (0,), 5), make_array(rng, (2,), np.float64)), {},
                      "empty and float")
    yield SampleInput((idx(rng, (2, 2), 5),), {}, "2-d (ValueError)")


def ravel_multi_index_samples(rng, dtype):
    yield SampleInput(((idx(rng, (4,), 3, low=0), idx(rng, (4,), 5, low=0)), (3, 5)), {},
                      "tuple of arrays")
    yield SampleInput(((idx(rng, (3, 1), 3, low=0), idx(rng, (4,), 5, low=0)), (3, 5)),
                      {"order": "F"}, "broadcasting, order=F")
    yield SampleInput((idx(rng, (2, 4), 3, low=0), (3, 3)), {}, "one 2-d array")
    yield SampleInput(((idx(rng, (4,), 9, low=-9), idx(rng, (4,), 9, low=-9)), (3, 5)),
                      {"mode": ("wrap", "clip")}, "modes per axis")
    yield SampleInput(((1, idx(rng, (3,), 5, low=0)), (3, 5)), {}, "python int coordinate")
    yield SampleInput(((idx(rng, (), 3, low=0), idx(rng, (), 5, low=0)), (3, 5)), {}, "0-d")
    yield SampleInput(((idx(rng, (2,), 3, low=0) + 3, idx(rng, (2,), 5, low=0)), (3, 5)), {},
                      "invalid entry (ValueError)")
    yield SampleInput(((make_array(rng, (2,), np.float64), idx(rng, (2,), 5, low=0)), (3, 5)),
                      {}, "float coordinates (TypeError)")
    yield SampleInput(((idx(rng, (2,), 3, low=0),), (3, 5)), {}, "too few (ValueError)")


def unravel_index_samples(rng, dtype):
    yield SampleInput((idx(rng, (4,), 12, low=0), (3, 4)), {}, "1-d")
    yield SampleInput((idx(rng, (2, 3), 24, low=0), (2, 3, 4)), {"order": "F"},
                      "2-d, order=F")
    yield SampleInput((idx(rng, (), 12, low=0), (3, 4)), {}, "0-d")
    yield SampleInput((idx(rng, (2,), 12, low=0) + 12, (3, 4)), {},
                      "out of bounds (ValueError)")
    yield SampleInput((make_array(rng, (2,), np.float64), (3, 4)), {}, "float (TypeError)")


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
    OpInfo("getitem.field", _getitem, getitem_field_samples, "rule", covers=operator.getitem,
           unbatched_self=True, notes="structured dtypes: the sample builds its own records"),
    OpInfo("setitem.field", _setitem, setitem_field_samples, "rule", covers=operator.setitem,
           inplace=0, unbatched_self=True),
    OpInfo("tril_indices_from", np.tril_indices_from, indices_from_samples, "rule"),
    OpInfo("triu_indices_from", np.triu_indices_from, indices_from_samples, "rule"),
    OpInfo("diag_indices_from", np.diag_indices_from, diag_indices_from_samples, "rule"),
    OpInfo("ix_", np.ix_, ix_samples, "rule", dtypes=(np.int64,)),
    OpInfo("ravel_multi_index", np.ravel_multi_index, ravel_multi_index_samples, "rule",
           dtypes=(np.int64,)),
    OpInfo("unravel_index", np.unravel_index, unravel_index_samples, "rule", dtypes=(np.int64,)),
]


__all__ = ["F64_I64", "idx", "mask"]
