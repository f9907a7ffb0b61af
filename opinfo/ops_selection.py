"""Selection: take, take_along_axis, where, choose, select, compress, extract; diag, diagflat,
tril, triu; piecewise, apply_along_axis, apply_over_axes -- the ops whose rules are in
``batchtensor/rules/selection.py``."""

from __future__ import annotations

import numpy as np

from .core import OpInfo, SampleInput
from .ops_indexing import F64_I64, idx, mask
from .samples import OUT_LOOP, make_array, out_variant


# ---- take, take_along_axis ----------------------------------------------------------------------
def take_samples(rng, dtype):
    a = lambda *s: make_array(rng, s, dtype)  # noqa: E731
    yield SampleInput((a(5), idx(rng, (3,), 5)), {}, "1-d, axis=None")
    yield SampleInput((a(3, 4), idx(rng, (2, 2), 12)), {}, "axis=None flattens")
    yield SampleInput((a(3, 4), idx(rng, (2,), 3)), {"axis": 0}, "axis=0")
    yield SampleInput((a(3, 4), idx(rng, (2, 3), 4)), {"axis": -1}, "axis=-1, 2-d indices")
    yield SampleInput((a(2, 3, 4), idx(rng, (2, 2), 3)), {"axis": 1}, "middle axis")
    yield SampleInput((a(2, 3, 4), idx(rng, (), 3)), {"axis": 1}, "0-d indices")
    yield SampleInput((a(3, 4), idx(rng, (0,), 4)), {"axis": 1}, "empty indices")
    yield SampleInput((a(3, 4), idx(rng, (5,), 20, low=-20)), {"axis": 1, "mode": "wrap"},
                      "mode=wrap")
    yield SampleInput((a(3, 4), idx(rng, (5,), 20, low=-20)), {"axis": 0, "mode": "clip"},
                      "mode=clip")
    yield SampleInput((a(3, 4), idx(rng, (5,), 20, low=4)), {"axis": 1},
                      "out of range (IndexError)")
    yield SampleInput((a(2, 0), idx(rng, (2,), 3)), {"axis": 1, "mode": "wrap"},
                      "non-empty take from an empty axis (IndexError)")
    yield SampleInput((a(2, 0), idx(rng, (0,), 1)), {"axis": 1, "mode": "clip"},
                      "empty take from an empty axis")
    yield SampleInput((a(), idx(rng, (2,), 1, low=0)), {}, "0-d a, axis=None")
    yield SampleInput((a(), idx(rng, (2,), 1, low=0)), {"axis": 0}, "0-d a, axis=0 (AxisError)")
    yield SampleInput((a(3, 4), idx(rng, (2,), 3)), {"axis": 2}, "axis out of range")
    yield SampleInput((a(3, 4), make_array(rng, (4,), np.bool_)), {"axis": 1},
                      "boolean indices are 0/1")
    yield SampleInput((a(3, 4), make_array(rng, (2,), np.float64)), {"axis": 1},
                      "float indices (TypeError)")
    yield SampleInput((a(3, 4), [0, -1]), {"axis": 1}, "list indices")
    yield SampleInput((a(3, 4), 2), {"axis": 1}, "int index")
    yield SampleInput((a(3, 8)[:, ::2], idx(rng, (3,), 4)), {"axis": 1, "mode": "clip"},
                      "non-contiguous a")
    yield SampleInput((a(3, 4), idx(rng, (2,), 4)), {"axis": 1, "mode": "bad"},
                      "bad mode (ValueError)")


def take_out_samples(rng, dtype):
    """``out`` first in the keywords: it is array leaf 2 in every sample (``inplace=2``)."""
    a = lambda *s: make_array(rng, s, dtype)  # noqa: E731
    yield SampleInput((a(3, 4), idx(rng, (2,), 4)), {"out": a(3, 2), "axis": 1}, "out=")
    yield SampleInput((a(5), idx(rng, (3,), 9)), {"out": a(3), "mode": "wrap"},
                      "out=, mode=wrap")
    yield SampleInput((a(3, 4), idx(rng, (2,), 3)),
                      {"out": make_array(rng, (2, 4), np.int8), "axis": 0},
                      "out= of another dtype")
    yield SampleInput((a(3, 4), idx(rng, (2,), 3)),
                      {"out": make_array(rng, (2, 4), np.complex128), "axis": 0},
                      "out= complex (TypeError)")
    yield SampleInput((a(3, 4), idx(rng, (2,), 3)), {"out": a(3, 4), "axis": 0},
                      "out= of the wrong shape (ValueError)")


def _take_method(a, *args, **kwargs):
    return a.take(*args, **kwargs)


def take_along_axis_samples(rng, dtype):
    a = lambda *s: make_array(rng, s, dtype)  # noqa: E731
    yield SampleInput((a(5), idx(rng, (3,), 5)), {"axis": 0}, "1-d")
    yield SampleInput((a(5), idx(rng, (2,), 5, low=0).astype(np.uint8)), {"axis": -1},
                      "1-d, uint8 indices")
    yield SampleInput((a(5), idx(rng, (2,), 5) + 5), {"axis": 0}, "1-d out of range (IndexError)")
    yield SampleInput((a(5), idx(rng, (0,), 5)), {"axis": 0}, "1-d, empty indices")
    yield SampleInput((a(0), idx(rng, (0,), 1)), {"axis": -1}, "1-d, size-0 arr and indices")
    yield SampleInput((a(8)[::2], idx(rng, (3,), 4)), {"axis": 0}, "1-d non-contiguous arr")
    yield SampleInput((a(3, 4), idx(rng, (3, 2), 4)), {"axis": 1}, "axis=1")
    yield SampleInput((a(3, 4), idx(rng, (2, 4), 3)), {"axis": 0}, "axis=0")
    yield SampleInput((a(3, 4), idx(rng, (3, 4), 4)), {}, "default axis=-1")
    yield SampleInput((a(2, 3, 4), idx(rng, (1, 3, 4), 2)), {"axis": 0},
                      "broadcast indices")
    yield SampleInput((a(2, 3, 4), idx(rng, (2, 5, 1), 3)), {"axis": -2},
                      "middle axis, broadcast")
    yield SampleInput((a(3, 4), idx(rng, (5,), 12)), {"axis": None}, "axis=None")
    yield SampleInput((a(3, 4), idx(rng, (3, 0), 4)), {"axis": 1}, "empty")
    yield SampleInput((a(3, 4), idx(rng, (3,), 4)), {"axis": 1}, "rank mismatch (ValueError)")
    yield SampleInput((a(3, 4), idx(rng, (3, 2), 4)), {"axis": None},
                      "axis=None, 2-d indices (ValueError)")
    yield SampleInput((a(3, 4), idx(rng, (3, 2), 4) + 4), {"axis": 1},
                      "out of range (IndexError)")
    yield SampleInput((a(3, 4), idx(rng, (3, 2), 4)), {"axis": 2}, "axis out of range")
    yield SampleInput((a(3, 4), make_array(rng, (3, 2), np.float64)), {"axis": 1},
                      "float indices (IndexError)")


# ---- where --------------------------------------------------------------------------------------
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
    yield SampleInput((mask(rng, (3, 4), 5),), {}, "one argument: nonzero")
    yield SampleInput((mask(rng, (6,), 2),), {}, "one argument, 1-d")
    yield SampleInput((c(0, 3),), {}, "one argument, size 0")
    yield SampleInput((mask(rng, (3, 4), 5).astype(np.int64) * 3,), {},
                      "one argument, int condition")
    yield SampleInput((make_array(rng, (), np.bool_),), {}, "one argument, 0-d (ValueError)")
    yield SampleInput((c(3, 4), a(3, 4)), {}, "x without y (ValueError)")


# ---- selection: choose, select, compress, extract -----------------------------------------------
def choose_samples(rng, dtype):
    a = lambda *s: make_array(rng, s, dtype)  # noqa: E731
    yield SampleInput((idx(rng, (4,), 3, low=0), [a(4), a(4), a(4)]), {}, "list of choices")
    yield SampleInput((idx(rng, (3, 4), 2, low=0), a(2, 3, 4)), {}, "array of choices")
    yield SampleInput((idx(rng, (3, 1), 2, low=0), [a(4), a(3, 4)]), {}, "broadcasting")
    yield SampleInput((idx(rng, (4,), 2, low=0), [a(4), 1.5]), {}, "a python scalar choice")
    yield SampleInput((idx(rng, (), 3, low=0), [a(2), a(2), a()]), {}, "0-d a")
    yield SampleInput((idx(rng, (5,), 6, low=-6), [a(5), a(5)]), {"mode": "wrap"}, "mode=wrap")
    yield SampleInput((idx(rng, (5,), 6, low=-6), a(3, 5)), {"mode": "clip"}, "mode=clip")
    yield SampleInput((idx(rng, (4,), 3, low=2), [a(4), a(4)]), {},
                      "invalid entry (ValueError)")
    yield SampleInput((make_array(rng, (4,), np.float64), [a(4), a(4)]), {},
                      "float a (TypeError)")
    yield SampleInput((idx(rng, (4,), 1, low=0), [a(4), a(3)]), {},
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
    return np.concatenate([mask(rng, (n,), count), np.zeros(pad, bool)])


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
    yield SampleInput((mask(rng, (2, 2), 2), a(4)), {}, "2-d condition (ValueError)")
    yield SampleInput((_fixed_count(rng, 3, 1), a(3, 4)), {"axis": 2}, "axis out of range")


def extract_samples(rng, dtype):
    a = lambda *s: make_array(rng, s, dtype)  # noqa: E731
    yield SampleInput((mask(rng, (3, 4), 5), a(3, 4)), {}, "same shape")
    yield SampleInput((_fixed_count(rng, 6, 2), a(2, 4)), {}, "shorter condition")
    yield SampleInput((mask(rng, (2, 2), 2).astype(np.float64) * 2.5, a(4)), {},
                      "float condition")
    yield SampleInput((np.concatenate([_fixed_count(rng, 4, 1), [True]]), a(4)), {},
                      "True beyond the end (IndexError)")


# ---- diagonals and triangles --------------------------------------------------------------------
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
    m1 = mask(rng, (6,), 2)
    yield SampleInput((a(6), [m1, ~m1], [_double, _plus_one]), {}, "two conditions, same counts")
    m2 = mask(rng, (6,), 3)
    yield SampleInput((a(6), [m2], [_centre, 0.5]), {}, "otherwise value, non-elementwise f")
    m3 = mask(rng, (2, 3), 4)
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
    yield SampleInput((a(4), [mask(rng, (4,), 2)], [_double, _plus_one, _double]), {},
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


def _compress_method(condition, a, **kw):
    return a.compress(condition, **kw)


def _choose_method(a, choices, **kw):
    return a.choose(choices, **kw)


OPS = [
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
    OpInfo("choose", np.choose, choose_samples, "rule", dtypes=F64_I64),
    # NumPy's select does not dispatch on `default`: a batched default with plain conditions
    # and choices meets NumPy's own code (a clear conversion error).
    OpInfo("select", np.select, select_samples, "decomposition", dtypes=(np.float64, np.int32),
           undispatched=(-1,), notes="default= is not dispatched by NumPy"),
    OpInfo("compress", np.compress, compress_samples, "rule", dtypes=F64_I64),
    # a plain array's own method meets a batched argument it converts: the clear error
    OpInfo("ndarray.compress", _compress_method, compress_samples, "rule", covers=np.compress,
           dtypes=F64_I64, undispatched=(0,)),
    OpInfo("ndarray.choose", _choose_method, choose_samples, "rule", covers=np.choose,
           dtypes=F64_I64, unbatched_self=True),
    OpInfo("extract", np.extract, extract_samples, "decomposition", dtypes=(np.float64,)),
    OpInfo("diag", np.diag, diag_samples, "rule", dtypes=(np.float64, np.bool_)),
    OpInfo("diagflat", np.diagflat, diagflat_samples, "rule", dtypes=(np.float64,)),
    OpInfo("tril", np.tril, tri_samples, "rule", dtypes=(np.float64, np.bool_)),
    OpInfo("triu", np.triu, tri_samples, "rule", dtypes=(np.float64, np.int32)),
    OpInfo("piecewise", np.piecewise, piecewise_samples, "rule", dtypes=(np.float64,)),
    # apply_along_axis dispatches on `arr` only (extra arguments with a plain arr: NumPy's own).
    OpInfo("apply_along_axis", _apply_along_axis, apply_along_axis_samples, "rule",
           dtypes=(np.float64, np.int64), covers=np.apply_along_axis, unbatched_self=True),
    OpInfo("apply_over_axes", np.apply_over_axes, apply_over_axes_samples, "decomposition",
           dtypes=(np.float64,)),
]


def _choose_out_cases(rng, dtype):
    a = lambda *s: make_array(rng, s, dtype)  # noqa: E731
    yield (idx(rng, (3, 4), 2, low=0), [a(3, 4), a(3, 4)]), {}, "two choices"
    # (mode="raise": NumPy 2.4's unbuffered clip / wrap modes write wrong values into a
    # non-contiguous out, in the loop as under vmap)
    yield (idx(rng, (3, 4), 2, low=0), [a(4), a(3, 4)]), {}, "broadcast"


def _compress_out_cases(rng, dtype):
    a = lambda *s: make_array(rng, s, dtype)  # noqa: E731
    yield (_fixed_count(rng, 3, 2), a(3, 4)), {"axis": 0}, "axis=0"
    yield (_fixed_count(rng, 4, 2), a(3, 4)), {"axis": 1}, "axis=1"


OPS += [
    OpInfo("choose.out", np.choose, out_variant(np.choose, _choose_out_cases), "loop",
           dtypes=F64_I64, inplace=3, loop_reason=OUT_LOOP),
    OpInfo("compress.out", np.compress, out_variant(np.compress, _compress_out_cases), "loop",
           dtypes=F64_I64, inplace=2, loop_reason=OUT_LOOP),
]
