"""Sorting and searching: sort argsort (and the ndarray methods), partition argpartition lexsort
searchsorted digitize sort_complex."""

from __future__ import annotations

import numpy as np

from .core import OpInfo, SampleInput
from .samples import make_array, with_nans

_SORT_DTYPES = (np.float64, np.int32, np.complex128, np.bool_)


def _sort_samples(rng, dtype):
    for shape, axes in [((), (None,)), ((0,), (-1, None)), ((6,), (-1, None, 0)),
                        ((3, 5), (-1, 0, None)), ((2, 0, 3), (1, -1)), ((2, 3, 4), (1, -3))]:
        for axis in axes:
            yield SampleInput((make_array(rng, shape, dtype),), {"axis": axis},
                              f"{shape} axis={axis}")
    yield SampleInput((make_array(rng, (4, 5), dtype),), {}, "default axis=-1")
    yield SampleInput((make_array(rng, (3, 5), dtype, noncontiguous=True),), {"axis": 1},
                      "non-contiguous")
    # ties: the stable kinds must keep the order of equal elements, as per example
    ties = make_array(rng, (4, 7), dtype, low=0, high=2) if np.dtype(dtype).kind in "iub" \
        else np.round(make_array(rng, (4, 7), dtype, low=-2, high=2))
    yield SampleInput((ties,), {"axis": -1, "kind": "stable"}, "kind=stable with ties")
    yield SampleInput((ties,), {"axis": 0, "stable": True}, "stable=True with ties")
    yield SampleInput((ties,), {"axis": 1, "kind": "heapsort"}, "kind=heapsort")
    yield SampleInput((ties,), {"kind": "mergesort", "axis": None}, "kind=mergesort axis=None")
    if np.dtype(dtype).kind in "fc":
        yield SampleInput((with_nans(rng, make_array(rng, (3, 6), dtype), 0.3),), {"axis": 1},
                          "NaN and inf order last")
        yield SampleInput((with_nans(rng, make_array(rng, (3, 6), dtype), 0.3),),
                          {"axis": None}, "NaN axis=None")
    # errors NumPy raises: 0-d along an axis, axis out of range, kind and stable together
    yield SampleInput((make_array(rng, (), dtype),), {"axis": -1}, "0-d axis=-1 raises")
    yield SampleInput((make_array(rng, (3, 4), dtype),), {"axis": 2}, "axis out of range")
    yield SampleInput((make_array(rng, (3, 4), dtype),), {"kind": "quicksort", "stable": True},
                      "kind with stable raises")
    yield SampleInput((make_array(rng, (3, 4), dtype),), {"kind": "bogus"}, "bad kind raises")


def _method_sort_samples(rng, dtype):
    for s in _sort_samples(rng, dtype):
        if s.kwargs.get("axis", -1) is None:
            continue  # ndarray.sort has no axis=None (covered by its own error sample)
        yield s
    yield SampleInput((make_array(rng, (5,), dtype),), {"axis": None},
                      "axis=None raises TypeError for the method")


def _sort_in_place(x, **kw):
    x.sort(**kw)


def _sort_copy(x, **kw):
    y = x.copy()
    y.sort(**kw)
    return y


def _sort_view(x, **kw):
    x[1:].sort(**kw)  # sorting a view writes through to the argument


def _view_samples(rng, dtype):
    yield SampleInput((make_array(rng, (4, 5), dtype),), {"axis": 0}, "view axis=0")
    yield SampleInput((make_array(rng, (4, 5), dtype),), {"axis": -1}, "view axis=-1")


def _sort_samples_first_arg(rng, dtype):
    for shape in [(6,), (3, 5), (2, 0, 3), ()]:
        yield SampleInput((with_nans(rng, make_array(rng, shape, dtype)),), {}, f"{shape}")
    yield SampleInput((make_array(rng, (3, 5), dtype, noncontiguous=True),), {},
                      "non-contiguous")


def _argsort_method(x, *args, **kw):
    return x.argsort(*args, **kw)


_sort_in_place.__name__ = "ndarray.sort"
_argsort_method.__name__ = "ndarray.argsort"

def _partition_samples(rng, dtype):
    for shape, kth, axis in [((7,), 3, -1), ((7,), -1, 0), ((4, 6), [1, -2], -1),
                             ((4, 6), 0, 0), ((2, 3, 5), (0, 2, 4), 2), ((3, 4), 5, None),
                             ((0,), 0, None), ((2, 0), 0, 0), ((), 0, None)]:
        yield SampleInput((make_array(rng, shape, dtype), kth), {"axis": axis},
                          f"{shape} kth={kth} axis={axis}")
    yield SampleInput((make_array(rng, (3, 8), dtype, noncontiguous=True), 4), {},
                      "non-contiguous")
    ties = make_array(rng, (3, 9), dtype, low=0, high=3) if np.dtype(dtype).kind in "iu" \
        else with_nans(rng, make_array(rng, (3, 9), dtype))
    yield SampleInput((ties, [2, 6]), {}, "ties / NaN")
    yield SampleInput((make_array(rng, (3, 4), dtype), 4), {}, "kth out of range")
    yield SampleInput((make_array(rng, (3, 4), dtype), -5), {}, "negative kth out of range")
    yield SampleInput((make_array(rng, (3, 4), dtype), 1), {"axis": -3}, "axis out of range")


def _partition_0d(rng, dtype):
    yield SampleInput((make_array(rng, (), dtype), 0), {}, "0-d axis=-1")


def _partition_in_place(a, kth, **kw):
    a.partition(kth, **kw)
    return a


def _argpartition_method(a, kth, **kw):
    return a.argpartition(kth, **kw)


def _argpartition_method_samples(rng, dtype):
    # (a 0-d example is a NumPy scalar, which has no argpartition: the sweep's loop would
    # retry over 0-d arrays; tests/test_ndarray_surface.py checks the AttributeError)
    return (s for s in _partition_samples(rng, dtype) if s.args[0].ndim)


def _lexsort_samples(rng, dtype):
    k = lambda shape, hi=3: make_array(rng, shape, dtype, low=0, high=hi)  # noqa: E731
    yield SampleInput(((k((8,)), k((8,))),), {}, "two 1-d keys with ties")
    yield SampleInput(((k((8,)), k((8,)), k((8,))),), {}, "three keys")
    yield SampleInput(((k((3, 5)), k((3, 5))),), {"axis": 0}, "2-d keys axis=0")
    yield SampleInput(((k((3, 5)), k((3, 5))),), {"axis": -1}, "2-d keys axis=-1")
    yield SampleInput((k((2, 6)),), {}, "keys as one 2-d array")
    yield SampleInput((k((3, 2, 4)),), {"axis": 0}, "keys as one 3-d array axis=0")
    yield SampleInput(((k((0,)),),), {}, "size-0 key")
    yield SampleInput(((k(()), k(())),), {}, "0-d keys")
    yield SampleInput(((k((4,)), k((5,))),), {}, "keys of different shapes raise")
    yield SampleInput(((k((3, 4)),),), {"axis": 2}, "axis out of range")


def _sorted(rng, shape, dtype, nans=False):
    a = make_array(rng, shape, dtype, low=-6, high=6)
    if nans:
        a = with_nans(rng, a)
    return np.sort(a, axis=-1)


def _searchsorted_samples(rng, dtype, sorter=True):
    nan = np.dtype(dtype).kind in "fc"
    v = lambda shape: make_array(rng, shape, dtype, low=-7, high=7)  # noqa: E731
    yield SampleInput((_sorted(rng, (9,), dtype), v((5,))), {}, "1-d v")
    yield SampleInput((_sorted(rng, (9,), dtype), v((2, 3))), {"side": "right"}, "2-d v right")
    yield SampleInput((_sorted(rng, (8,), dtype), v(())), {}, "0-d v")
    yield SampleInput((_sorted(rng, (7,), dtype, nans=nan), v((6,))), {"side": "left"},
                      "NaN in a (sorted last)")
    yield SampleInput((_sorted(rng, (7,), dtype), with_nans(rng, v((6,)), 0.4)),
                      {"side": "right"}, "NaN in v")
    ties = make_array(rng, (10,), dtype, low=0, high=3)
    yield SampleInput((np.sort(ties), make_array(rng, (4,), dtype, low=0, high=3)),
                      {"side": "left"}, "ties left")
    yield SampleInput((np.sort(ties), make_array(rng, (4,), dtype, low=0, high=3)),
                      {"side": "right"}, "ties right")
    yield SampleInput((_sorted(rng, (0,), dtype), v((3,))), {}, "empty a")
    yield SampleInput((_sorted(rng, (5,), dtype), v((0,))), {}, "empty v")
    yield SampleInput((_sorted(rng, (6,), dtype), 1), {}, "scalar v")
    # more comparisons than the rule counts (values x length > 8192 even for one example):
    # its binary search
    many = make_array(rng, (12, 20), dtype, low=-7, high=7)
    yield SampleInput((_sorted(rng, (40,), dtype, nans=nan), with_nans(rng, many, 0.2)),
                      {"side": "right"}, "many values: binary search, NaN in a and v")
    yield SampleInput((np.sort(make_array(rng, (40,), dtype, low=0, high=5)),
                       make_array(rng, (240,), dtype, low=-1, high=6)),
                      {"side": "left"}, "many values: binary search, ties")
    if sorter:
        # a fixed permutation, so that every in_axes combination pairs a with its sorter
        perm = np.array([3, 0, 5, 1, 4, 2])
        un = np.empty(6, dtype)
        un[perm] = _sorted(rng, (6,), dtype)
        yield SampleInput((un, v((4,))), {"sorter": perm}, "sorter=")
    yield SampleInput((_sorted(rng, (3, 4), dtype), v((2,))), {}, "2-d a raises")
    yield SampleInput((_sorted(rng, (5,), dtype), v((2,))), {"side": "middle"}, "bad side")


def _searchsorted_method_samples(rng, dtype):
    # (a plain ndarray's method cannot take a batched sorter: NumPy raises before we see it)
    return _searchsorted_samples(rng, dtype, sorter=False)


def _searchsorted_method(a, v, **kw):
    return a.searchsorted(v, **kw)


def _digitize_samples(rng, dtype):
    x = lambda shape: make_array(rng, shape, dtype, low=-6, high=6)  # noqa: E731
    inc = lambda n: np.sort(make_array(rng, (n,), dtype, low=-5, high=5))  # noqa: E731
    for right in (False, True):
        yield SampleInput((x((7,)), inc(5)), {"right": right}, f"increasing right={right}")
        yield SampleInput((x((2, 3)), inc(4)[::-1].copy()), {"right": right},
                          f"decreasing right={right}")
    mixed = inc(5)
    yield SampleInput((x((6,)), mixed[::-1].copy() if rng.random() < 0.5 else mixed), {},
                      "increasing in some examples, decreasing in others")
    yield SampleInput((x(()), inc(3)), {}, "0-d x")
    many = inc(40)  # (values x bins > 8192: the rule's binary search)
    yield SampleInput((x((12, 20)), many), {"right": True}, "many values: binary search")
    yield SampleInput((x((240,)), many[::-1].copy() if rng.random() < 0.5 else many), {},
                      "many values, increasing in some examples, decreasing in others")
    yield SampleInput((x((4,)), np.zeros(3, dtype)), {}, "constant bins")
    yield SampleInput((x((4,)), inc(0)), {}, "empty bins")
    if np.dtype(dtype).kind == "f":
        yield SampleInput((with_nans(rng, x((6,))), inc(4)), {}, "NaN in x")
    yield SampleInput((x((4,)), np.array([1, 0, 2], dtype)), {}, "non-monotonic raises")
    yield SampleInput((x((4,)), x((2, 3))), {}, "2-d bins raise")


OPS = [
    OpInfo("sort", np.sort, _sort_samples, "rule", dtypes=_SORT_DTYPES),
    OpInfo("argsort", np.argsort, _sort_samples, "rule", dtypes=_SORT_DTYPES),
    OpInfo("ndarray.sort", _sort_in_place, _method_sort_samples, "rule", covers=np.sort,
           inplace=0, dtypes=(np.float64, np.int32, np.complex128)),
    OpInfo("ndarray.sort.copy", _sort_copy, _method_sort_samples, "rule", covers=np.sort,
           dtypes=(np.float64,)),
    OpInfo("ndarray.sort.view", _sort_view, _view_samples, "rule", covers=np.sort, inplace=0,
           dtypes=(np.float64,)),
    OpInfo("ndarray.argsort", _argsort_method, _sort_samples, "rule", covers=np.argsort,
           dtypes=(np.float64, np.int32)),
    OpInfo("partition", np.partition, _partition_samples, "rule",
           dtypes=(np.float64, np.int64)),
    OpInfo("partition.0d", np.partition, _partition_0d, "rule", dtypes=(np.float64,)),
    OpInfo("argpartition", np.argpartition, _partition_samples, "rule",
           dtypes=(np.float64, np.int64)),
    OpInfo("argpartition.0d", np.argpartition, _partition_0d, "rule", dtypes=(np.float64,)),
    OpInfo("ndarray.partition", _partition_in_place, _partition_samples, "rule",
           covers=np.partition, dtypes=(np.float64, np.int64), inplace=0),
    OpInfo("ndarray.partition.0d", _partition_in_place, _partition_0d, "rule",
           covers=np.partition, inplace=0),
    OpInfo("ndarray.argpartition", _argpartition_method, _argpartition_method_samples, "rule",
           covers=np.argpartition, dtypes=(np.float64, np.int64), unbatched_self=True),
    OpInfo("lexsort", np.lexsort, _lexsort_samples, "rule", dtypes=(np.int64, np.float64)),
    OpInfo("sort_complex", np.sort_complex, _sort_samples_first_arg, "rule",
           dtypes=(np.complex128, np.float32, np.int8)),
    OpInfo("searchsorted", np.searchsorted, _searchsorted_samples, "rule",
           dtypes=(np.float64, np.int64, np.complex128)),
    OpInfo("ndarray.searchsorted", _searchsorted_method, _searchsorted_method_samples, "rule",
           covers=np.searchsorted, unbatched_self=True, dtypes=(np.float64,)),
    OpInfo("digitize", np.digitize, _digitize_samples, "rule", dtypes=(np.float64, np.int64)),
]
