"""Reductions and scans: sum mean std var min max amin amax prod ptp any all argmin argmax
cumsum cumprod, the nan* variants, median, count_nonzero, cumulative_sum/prod, their ndarray
methods, and ufunc.reduce / accumulate / reduceat; the bit-packing ops packbits unpackbits
(rules: batchtensor/rules/reductions.py)."""

from __future__ import annotations

import numpy as np

from .core import OpInfo, SampleInput
from .samples import ALL, FLOAT, INT, NUMERIC, SHAPES, make_array, out_variant, with_nans


def _axes_for(ndim):
    """Axis arguments that hit the edge cases for a ``ndim``-d example."""
    axes = [None]
    if ndim >= 1:
        axes += [0, -1]
    if ndim >= 2:
        axes += [(0, -1), (-1, 0) if ndim == 2 else (1,), ()]
    return axes


def reduction_samples(*, keepdims=True, tuple_axes=True, nans=True, extra=None, shapes=SHAPES):
    def gen(rng, dtype):
        for shape in shapes:
            for axis in _axes_for(len(shape)):
                if not tuple_axes and isinstance(axis, tuple):
                    continue
                kws = [{}] if axis is None else [{"axis": axis}]
                if keepdims:
                    kws.append({**kws[0], "keepdims": True})
                for kw in kws:
                    yield SampleInput((make_array(rng, shape, dtype),), kw, f"{shape} {kw}")
        yield SampleInput((make_array(rng, (3, 5), dtype, noncontiguous=True),), {"axis": 1},
                          "non-contiguous")
        if nans and np.dtype(dtype).kind == "f":
            yield SampleInput((with_nans(rng, make_array(rng, (4, 3), dtype)),), {"axis": 0},
                              "NaN and inf")
        # 0-d with an explicit axis: NumPy accepts it for some reductions, rejects for others
        yield SampleInput((make_array(rng, (), dtype),), {"axis": 0}, "0-d axis=0")
        yield SampleInput((make_array(rng, (3, 4), dtype),), {"axis": 2}, "axis out of range")
        if extra:
            yield from extra(rng, dtype)
    return gen


def _where_samples(rng, dtype):
    yield SampleInput((make_array(rng, (3, 4), dtype),),
                      {"axis": 1, "where": make_array(rng, (3, 4), np.bool_)}, "where= batched")
    yield SampleInput((make_array(rng, (3, 4), dtype),),
                      {"axis": 0, "where": make_array(rng, (4,), np.bool_)}, "where= broadcast")


def _sum_extra(rng, dtype):
    yield SampleInput((make_array(rng, (3, 4), dtype),), {"axis": 0, "dtype": np.float64},
                      "dtype=")
    yield SampleInput((make_array(rng, (3, 4), dtype),), {"initial": 5}, "initial=")
    yield from _where_samples(rng, dtype)
    # a short last axis over many rows: the column-by-column fast path (boxed/reduction.py)
    # (8 to 16 elements: NumPy's eight-accumulator pairwise sum, replicated for contiguous rows
    # of real floats. Not for complex: with the batch axis inside the memory NumPy's batched
    # reduce adds a row in another order than one example's, and inf + -inf then gives NaN in
    # one and inf in the other; see the closing note of this change.)
    lengths = (3, 7, 10, 16) if np.dtype(dtype).kind == "f" else (3, 7)
    for n in lengths:
        a = with_nans(rng, make_array(rng, (150, n), dtype), frac=0.02)
        if a.dtype.kind == "f":
            a[::5] = -0.0  # all -0.0 rows sum to +0.0
        yield SampleInput((a,), {"axis": -1}, f"(150, {n}) short last axis")
        yield SampleInput((a,), {"axis": 1, "keepdims": True}, f"(150, {n}) short, keepdims")


def _minmax_extra(rng, dtype):
    # a short last axis over many rows: one comparison per column (boxed/reduction.py)
    for n in (2, 10):
        a = with_nans(rng, make_array(rng, (150, n), dtype), frac=0.02)
        yield SampleInput((a,), {"axis": -1}, f"(150, {n}) short last axis")
        yield SampleInput((a,), {"axis": 1, "keepdims": True}, f"(150, {n}) short, keepdims")
    yield SampleInput((make_array(rng, (3, 4), dtype),), {"axis": 1, "initial": 0}, "initial=")
    yield SampleInput((make_array(rng, (3, 4), dtype),),
                      {"axis": 1, "initial": 0, "where": make_array(rng, (3, 4), np.bool_)},
                      "where= with initial")


def _stat_extra(rng, dtype):
    yield from _where_samples(rng, dtype)


def _var_extra(rng, dtype):
    yield SampleInput((make_array(rng, (4, 5), dtype),), {"axis": 1, "ddof": 1}, "ddof=1")
    yield SampleInput((make_array(rng, (4, 5), dtype),), {"ddof": 2, "keepdims": True}, "ddof=2")
    yield from _where_samples(rng, dtype)
    yield from _mean_samples(rng, dtype, lambda s: make_array(rng, s, dtype))


def _mean_samples(rng, dtype, draw):
    """``mean=`` (NumPy 2): each example's own mean, or another value, in the keepdims shape."""
    x = draw((4, 5))
    m = np.mean(x, axis=1, keepdims=True) if np.dtype(dtype).kind in "fc" else x[:, :1] * 1.0
    yield SampleInput((x,), {"axis": 1, "mean": m}, "mean= of the example")
    yield SampleInput((draw((4, 5)),), {"axis": 0, "mean": make_array(rng, (1, 5), np.float64)},
                      "mean= of another value")
    yield SampleInput((draw((3, 4)),), {"mean": make_array(rng, (1, 1), np.float64),
                                        "ddof": 1}, "mean= with axis=None")
    yield SampleInput((draw((2, 3, 4)),), {"axis": (0, 2), "ddof": 1, "keepdims": True,
                                           "mean": make_array(rng, (1, 3, 1), np.float64)},
                      "mean= over a tuple axis, keepdims")


def _index_extra(rng, dtype):
    x = make_array(rng, (4, 5), dtype)
    yield SampleInput((x,), {"axis": None, "keepdims": True}, "axis=None keepdims")
    if np.dtype(dtype).kind in "iu":
        yield SampleInput((make_array(rng, (6,), dtype, low=0, high=2),), {}, "ties")


def _scan_extra(rng, dtype):
    yield SampleInput((make_array(rng, (3, 4), dtype),), {"axis": 1, "dtype": np.float64},
                      "dtype=")


def _nan_rows(rng, shape, dtype, p=0.4):
    """An array with NaNs, inf, and some rows (random, so only some examples) all NaN."""
    a = with_nans(rng, make_array(rng, shape, dtype))
    rows = rng.random(shape[0]) < p
    if a.dtype.kind in "fc":
        a[rows] = np.nan
    return a


def _nan_extra(rng, dtype):
    if np.dtype(dtype).kind not in "fc":
        return
    yield SampleInput((_nan_rows(rng, (4, 3), dtype),), {"axis": 1}, "all-NaN rows axis=1")
    yield SampleInput((_nan_rows(rng, (4, 3), dtype),), {"axis": 0, "keepdims": True},
                      "all-NaN rows axis=0 keepdims")
    a = with_nans(rng, make_array(rng, (3, 2), dtype))
    if rng.random() < 0.5:
        a[...] = np.nan
    yield SampleInput((a,), {}, "all NaN in some examples, axis=None")


def _nanvar_extra(rng, dtype):
    yield from _nan_extra(rng, dtype)
    yield SampleInput((_nan_rows(rng, (4, 5), dtype),), {"axis": 1, "ddof": 1}, "ddof=1")


def _nan_mean_samples(rng, dtype):
    return _mean_samples(rng, dtype, lambda s: _nan_rows(rng, s, dtype))


def _nan_where_samples(rng, dtype):
    yield SampleInput((_nan_rows(rng, (3, 4), dtype),),
                      {"axis": 1, "where": make_array(rng, (3, 4), np.bool_)}, "where=")
    yield SampleInput((_nan_rows(rng, (3, 4), dtype),),
                      {"axis": 0, "where": make_array(rng, (4,), np.bool_)}, "where= broadcast")


def _nansum_extra(rng, dtype):
    yield from _nan_extra(rng, dtype)
    yield SampleInput((_nan_rows(rng, (3, 4), dtype),), {"axis": 0, "dtype": np.float64},
                      "dtype=")
    yield from _nan_where_samples(rng, dtype)


def _nanmean_extra(rng, dtype):
    yield from _nan_extra(rng, dtype)
    yield SampleInput((_nan_rows(rng, (3, 4), dtype),), {"axis": 0, "dtype": np.float64},
                      "dtype=")


def _nanminmax_extra(rng, dtype):
    yield from _nan_extra(rng, dtype)
    yield SampleInput((_nan_rows(rng, (3, 4), dtype),), {"axis": 1, "initial": -1.0,
                                                          "where": make_array(rng, (3, 4),
                                                                              np.bool_)},
                      "where= with initial")


def _nanindex_extra(rng, dtype):
    yield SampleInput((with_nans(rng, make_array(rng, (4, 5), dtype)),), {"axis": 1},
                      "NaN and inf (no all-NaN slice)")
    yield SampleInput((_nan_rows(rng, (4, 3), dtype),), {"axis": 1},
                      "all-NaN row in some examples raises ValueError")
    a = with_nans(rng, make_array(rng, (3, 2), dtype))
    a[rng.random() < 0.5] = np.nan
    yield SampleInput((a,), {}, "all NaN in some examples raises")
    yield SampleInput((make_array(rng, (0, 3), dtype),), {"axis": 0}, "empty axis raises")


def _median_extra(rng, dtype):
    yield SampleInput((with_nans(rng, make_array(rng, (4, 3), dtype)),), {"axis": 1},
                      "NaN propagates")
    yield SampleInput((make_array(rng, (4, 6), dtype),), {"axis": 1, "overwrite_input": True},
                      "overwrite_input=True")
    yield SampleInput((make_array(rng, (2, 3, 4), dtype),), {"axis": (0, 2), "keepdims": True},
                      "tuple axis keepdims")


def _nanmedian_extra(rng, dtype):
    yield from _nan_extra(rng, dtype)
    yield from _median_extra(rng, dtype)


def _cumulative_samples(rng, dtype):
    yield SampleInput((make_array(rng, (6,), dtype),), {}, "1-d axis=None")
    yield SampleInput((make_array(rng, (), dtype),), {}, "0-d")
    yield SampleInput((make_array(rng, (0,), dtype),), {"include_initial": True},
                      "size-0 include_initial")
    for axis in (0, 1, -1):
        yield SampleInput((make_array(rng, (3, 4), dtype),), {"axis": axis}, f"axis={axis}")
    yield SampleInput((make_array(rng, (2, 0, 3), dtype),), {"axis": 1}, "size-0 axis")
    yield SampleInput((make_array(rng, (3, 4), dtype),), {"axis": -2, "include_initial": True},
                      "include_initial=True")
    yield SampleInput((make_array(rng, (3, 4), dtype),), {"axis": 1, "dtype": np.float64},
                      "dtype=")
    yield SampleInput((make_array(rng, (3, 4), dtype, noncontiguous=True),), {"axis": 1},
                      "non-contiguous")
    yield SampleInput((make_array(rng, (3, 4), dtype),), {}, "2-d axis=None raises")
    yield SampleInput((make_array(rng, (3, 4), dtype),), {"axis": 2}, "axis out of range")


def _count_nonzero_extra(rng, dtype):
    yield SampleInput((make_array(rng, (4, 5), dtype, low=0, high=2),), {"axis": (0, 1)},
                      "many zeros, tuple axis")


def _packbits_samples(rng, dtype):
    x = lambda shape: make_array(rng, shape, dtype, low=0, high=2)  # noqa: E731
    yield SampleInput((x((13,)),), {}, "1-d")
    yield SampleInput((x((3, 10)),), {"axis": 1}, "axis=1")
    yield SampleInput((x((10, 3)),), {"axis": 0, "bitorder": "little"}, "little")
    yield SampleInput((x((2, 3, 4)),), {}, "axis=None flattens")
    yield SampleInput((x(()),), {}, "0-d")
    yield SampleInput((x(()),), {"axis": 0}, "0-d axis=0")
    yield SampleInput((x((0, 3)),), {"axis": 0}, "size-0")
    yield SampleInput((make_array(rng, (5,), np.float64),), {}, "float raises")


def _unpackbits_samples(rng, dtype):
    x = lambda shape: make_array(rng, shape, np.uint8, low=0, high=256)  # noqa: E731
    yield SampleInput((x((3,)),), {}, "1-d")
    yield SampleInput((x((2, 3)),), {"axis": 1, "count": 20}, "count > bits")
    yield SampleInput((x((2, 3)),), {"axis": 0, "count": -3, "bitorder": "little"},
                      "negative count")
    yield SampleInput((x((2, 3)),), {}, "axis=None flattens")
    yield SampleInput((x(()),), {}, "0-d")
    yield SampleInput((make_array(rng, (3,), np.int64),), {}, "int64 raises")


_FLOAT_TOL = dict(rtol=1e-6, atol=1e-9)

OPS = [
    OpInfo("sum", np.sum, reduction_samples(extra=_sum_extra), "boxed", dtypes=ALL),
    OpInfo("prod", np.prod, reduction_samples(extra=_sum_extra), "boxed",
           dtypes=FLOAT + INT + ("complex128",)),
    OpInfo("mean", np.mean, reduction_samples(extra=_stat_extra), "boxed",
           dtypes=FLOAT + INT + ("complex128",)),
    OpInfo("std", np.std, reduction_samples(extra=_var_extra), "boxed",
           dtypes=FLOAT + INT + ("complex128",), **_FLOAT_TOL),
    OpInfo("var", np.var, reduction_samples(extra=_var_extra), "boxed",
           dtypes=FLOAT + INT + ("complex128",), **_FLOAT_TOL),
    OpInfo("max", np.max, reduction_samples(extra=_minmax_extra), "boxed", dtypes=NUMERIC),
    OpInfo("min", np.min, reduction_samples(extra=_minmax_extra), "boxed", dtypes=NUMERIC),
    OpInfo("amax", np.amax, reduction_samples(), "boxed", dtypes=(np.float64, np.int64)),
    OpInfo("amin", np.amin, reduction_samples(), "boxed", dtypes=(np.float64, np.int64)),
    OpInfo("ptp", np.ptp, reduction_samples(), "boxed", dtypes=NUMERIC),
    OpInfo("any", np.any, reduction_samples(extra=_where_samples), "boxed", dtypes=ALL),
    OpInfo("all", np.all, reduction_samples(extra=_where_samples), "boxed", dtypes=ALL),
    OpInfo("argmax", np.argmax,
           reduction_samples(tuple_axes=False, extra=_index_extra), "boxed", dtypes=NUMERIC),
    OpInfo("argmin", np.argmin,
           reduction_samples(tuple_axes=False, extra=_index_extra), "boxed", dtypes=NUMERIC),
    OpInfo("nansum", np.nansum, reduction_samples(extra=_nansum_extra), "boxed",
           dtypes=(np.float64, np.float32, np.int64)),
    OpInfo("nanprod", np.nanprod, reduction_samples(extra=_nansum_extra), "boxed",
           dtypes=(np.float64,)),
    OpInfo("nanmean", np.nanmean, reduction_samples(extra=_nanmean_extra), "boxed",
           dtypes=(np.float64, np.float32), **{"rtol": 1e-6, "atol": 1e-9}),
    OpInfo("nanstd", np.nanstd, reduction_samples(extra=_nanvar_extra), "boxed",
           dtypes=(np.float64, np.complex128), rtol=1e-6, atol=1e-9),
    OpInfo("nanvar", np.nanvar, reduction_samples(extra=_nanvar_extra), "boxed",
           dtypes=(np.float64, np.float32), rtol=1e-6, atol=1e-9),
    # NumPy's nanmean/nanstd/nanvar do not dispatch on ``where``: with a plain ``a`` and a
    # batched ``where`` NumPy's own code meets the BatchedTensor and fails with our clear
    # conversion error (accepted like an unbatched method ``self``).
    *[OpInfo(f"{f.__name__}.where", f, _nan_where_samples, "boxed", dtypes=(np.float64,),
             unbatched_self=True, rtol=1e-6, atol=1e-9,
             notes="unbatched a with batched where= raises a conversion TypeError")
      for f in (np.nanmean, np.nanstd, np.nanvar)],
    # nor on ``mean``: with a plain ``a`` NumPy's own code writes the batched mean into an
    # array it made (the clear error)
    *[OpInfo(f"{f.__name__}.mean", f, _nan_mean_samples, "boxed", dtypes=(np.float64,),
             undispatched=(1,), rtol=1e-6, atol=1e-9) for f in (np.nanstd, np.nanvar)],
    OpInfo("nanmax", np.nanmax, reduction_samples(extra=_nanminmax_extra), "boxed",
           dtypes=(np.float64, np.int32)),
    OpInfo("nanmin", np.nanmin, reduction_samples(extra=_nanminmax_extra), "boxed",
           dtypes=(np.float32,)),
    OpInfo("nanargmax", np.nanargmax,
           reduction_samples(tuple_axes=False, nans=False, extra=_nanindex_extra), "boxed",
           dtypes=(np.float64,)),
    OpInfo("nanargmin", np.nanargmin,
           reduction_samples(tuple_axes=False, nans=False, extra=_nanindex_extra), "boxed",
           dtypes=(np.float32,)),
    OpInfo("median", np.median, reduction_samples(nans=False, extra=_median_extra), "boxed",
           dtypes=(np.float64, np.int64)),
    OpInfo("nanmedian", np.nanmedian, reduction_samples(nans=False, extra=_nanmedian_extra),
           "boxed", dtypes=(np.float64,)),
    OpInfo("count_nonzero", np.count_nonzero,
           reduction_samples(nans=False, extra=_count_nonzero_extra), "boxed",
           dtypes=(np.float64, np.int32, np.bool_)),
    OpInfo("nancumsum", np.nancumsum,
           reduction_samples(keepdims=False, tuple_axes=False, extra=_scan_extra), "boxed",
           dtypes=(np.float64, np.int64)),
    OpInfo("nancumprod", np.nancumprod,
           reduction_samples(keepdims=False, tuple_axes=False, extra=_scan_extra), "boxed",
           dtypes=(np.float64,)),
    OpInfo("cumulative_sum", np.cumulative_sum, _cumulative_samples, "boxed",
           dtypes=(np.float64, np.int32, np.bool_)),
    OpInfo("cumulative_prod", np.cumulative_prod, _cumulative_samples, "boxed",
           dtypes=(np.float64, np.int64)),
    OpInfo("cumsum", np.cumsum,
           reduction_samples(keepdims=False, tuple_axes=False, extra=_scan_extra), "boxed",
           dtypes=ALL),
    OpInfo("cumprod", np.cumprod,
           reduction_samples(keepdims=False, tuple_axes=False, extra=_scan_extra), "boxed",
           dtypes=FLOAT + INT),
    OpInfo("packbits", np.packbits, _packbits_samples, "rule", dtypes=(np.bool_, np.uint8)),
    OpInfo("unpackbits", np.unpackbits, _unpackbits_samples, "rule", dtypes=(np.uint8,)),
]


# ---- ndarray methods: routed to the same functions ----------------------------------------------
def _method(name):
    def call(x, *args, **kwargs):
        return getattr(x, name)(*args, **kwargs)

    call.__name__ = f"ndarray.{name}"
    return call


_METHODS = {
    "sum": ("sum", reduction_samples(extra=_sum_extra), ALL),
    "mean": ("mean", reduction_samples(), FLOAT + INT),
    "std": ("std", reduction_samples(extra=_var_extra), FLOAT),
    "var": ("var", reduction_samples(extra=_var_extra), FLOAT),
    "max": ("max", reduction_samples(), NUMERIC),
    "min": ("min", reduction_samples(), NUMERIC),
    "prod": ("prod", reduction_samples(), FLOAT + INT),
    "any": ("any", reduction_samples(), ALL),
    "all": ("all", reduction_samples(), ALL),
    "argmax": ("argmax", reduction_samples(tuple_axes=False), NUMERIC),
    "argmin": ("argmin", reduction_samples(tuple_axes=False), NUMERIC),
    "cumsum": ("cumsum", reduction_samples(keepdims=False, tuple_axes=False), NUMERIC),
    "cumprod": ("cumprod", reduction_samples(keepdims=False, tuple_axes=False), FLOAT),
}
for _name, (_meth, _gen, _dtypes) in _METHODS.items():
    _fn = getattr(np, _name)
    OPS.append(OpInfo(f"ndarray.{_name}", _method(_meth), _gen, "boxed", dtypes=_dtypes,
                      covers=_fn, unbatched_self=True, **(_FLOAT_TOL if _name in ("std", "var") else {})))


# ---- ufunc.reduce / accumulate / reduceat -------------------------------------------------------
def _ufunc_reduce_samples(rng, dtype):
    for shape in SHAPES:
        if not shape:
            continue
        for axis in _axes_for(len(shape)):
            yield SampleInput((make_array(rng, shape, dtype),), {"axis": axis}, f"{shape} {axis}")
    yield SampleInput((make_array(rng, (3, 4), dtype),), {}, "default axis=0")
    yield SampleInput((make_array(rng, (3, 4), dtype),), {"axis": 1, "keepdims": True},
                      "keepdims")
    yield SampleInput((make_array(rng, (), dtype),), {"axis": 0}, "0-d axis=0")
    yield SampleInput((make_array(rng, (3, 4), dtype),),
                      {"axis": 1, "where": make_array(rng, (3, 4), np.bool_), "initial": 0},
                      "where= initial=")


def _accumulate_samples(rng, dtype):
    for shape in [(5,), (3, 4), (2, 0, 3), (2, 3, 4)]:
        for axis in (0, -1):
            yield SampleInput((make_array(rng, shape, dtype),), {"axis": axis}, f"{shape} {axis}")
    yield SampleInput((make_array(rng, (3, 4), dtype),), {}, "default axis=0")
    yield SampleInput((make_array(rng, (3, 4), dtype),), {"axis": None}, "axis=None rejected")
    yield SampleInput((make_array(rng, (), dtype),), {"axis": 0}, "0-d rejected")


def _reduceat_samples(rng, dtype):
    yield SampleInput((make_array(rng, (8,), dtype), [0, 4, 1, 5]), {}, "1-d")
    yield SampleInput((make_array(rng, (3, 6), dtype), [0, 2]), {"axis": 1}, "axis=1")
    yield SampleInput((make_array(rng, (3, 6), dtype), [0, 2]), {"axis": -2}, "axis=-2")


for _uf in (np.add, np.multiply, np.maximum, np.subtract, np.logical_or):
    _dts = (np.float64, np.int64) if _uf is not np.logical_or else (np.bool_,)
    OPS.append(OpInfo(f"{_uf.__name__}.reduce", _uf.reduce, _ufunc_reduce_samples, "boxed",
                      dtypes=_dts))
    OPS.append(OpInfo(f"{_uf.__name__}.accumulate", _uf.accumulate, _accumulate_samples, "boxed",
                      dtypes=_dts))
OPS.append(OpInfo("add.reduceat", np.add.reduceat, _reduceat_samples, "rule",
                  dtypes=(np.float64, np.int64)))


# ---- out= ---------------------------------------------------------------------------------------
def _out_cases(tuple_axes=True, scan=False):
    """``(args, kwargs, name)`` of reductions (or scans) whose results ``out_variant`` writes
    into a batched or unbatched ``out=``."""
    def cases(rng, dtype):
        a = lambda *s, **kw: make_array(rng, s, dtype, **kw)  # noqa: E731
        yield (a(3, 4),), {"axis": 0}, "axis=0"
        yield (a(3, 4, noncontiguous=True),), {"axis": -1}, "non-contiguous, axis=-1"
        if not scan:
            yield (a(3, 4),), {"axis": 1, "keepdims": True}, "keepdims"
        if tuple_axes:
            yield (a(2, 3, 4),), {"axis": (0, 2)}, "tuple axis"
    return cases


_OUT = [  # (function, dtypes, scan, tuple axes)
    (np.sum, (np.float64, np.int64), False, True), (np.prod, (np.float64,), False, True),
    (np.mean, (np.float64, np.int64), False, True), (np.std, (np.float64,), False, True),
    (np.var, (np.float64,), False, True), (np.max, (np.float64,), False, True),
    (np.min, (np.int64,), False, True), (np.amax, (np.float64,), False, True),
    (np.amin, (np.float64,), False, True), (np.ptp, (np.float64,), False, True),
    (np.any, (np.float64,), False, True), (np.all, (np.bool_,), False, True),
    (np.argmax, (np.float64,), False, False), (np.argmin, (np.int64,), False, False),
    (np.nansum, (np.float64,), False, True), (np.nanprod, (np.float64,), False, True),
    (np.nanmean, (np.float64,), False, True), (np.nanstd, (np.float64,), False, True),
    (np.nanvar, (np.float64,), False, True), (np.nanmax, (np.float64,), False, True),
    (np.nanmin, (np.float64,), False, True), (np.median, (np.float64,), False, True),
    (np.nanmedian, (np.float64,), False, True), (np.cumsum, (np.float64,), True, False),
    (np.cumprod, (np.int64,), True, False), (np.nancumsum, (np.float64,), True, False),
    (np.nancumprod, (np.float64,), True, False),
    (np.cumulative_sum, (np.float64,), True, False),
    (np.cumulative_prod, (np.float64,), True, False),
]
for _fn, _dts, _scan, _tuple in _OUT:
    OPS.append(OpInfo(f"{_fn.__name__}.out", _fn, out_variant(_fn, _out_cases(_tuple, _scan)),
                      "boxed", dtypes=_dts, inplace=1, **_FLOAT_TOL))
for _uf in (np.add, np.maximum):
    OPS.append(OpInfo(f"{_uf.__name__}.reduce.out", _uf.reduce,
                      out_variant(_uf.reduce, _out_cases(True)), "boxed", inplace=1))
    OPS.append(OpInfo(f"{_uf.__name__}.accumulate.out", _uf.accumulate,
                      out_variant(_uf.accumulate, _out_cases(False, True)), "boxed", inplace=1))


def _reduceat_out_cases(rng, dtype):
    yield (make_array(rng, (8,), dtype), [0, 4, 1, 5]), {}, "1-d"
    yield (make_array(rng, (3, 6), dtype), [0, 4, 1, 5]), {"axis": 1}, "axis=1"


def _reduceat_indices_samples(rng, dtype):
    yield SampleInput((make_array(rng, (8,), dtype), rng.integers(0, 8, size=3)), {},
                      "indices batched")
    yield SampleInput((make_array(rng, (3, 6), dtype), rng.integers(0, 6, size=2)),
                      {"axis": 1}, "indices batched, axis=1")


OPS.append(OpInfo("add.reduceat.out", np.add.reduceat,
                  out_variant(np.add.reduceat, _reduceat_out_cases), "rule", inplace=5))
OPS.append(OpInfo("add.reduceat.indices", np.add.reduceat, _reduceat_indices_samples, "loop",
                  dtypes=(np.float64, np.int64),
                  loop_reason="batched reduceat indices: each example reduces its own segments "
                              "(rare; the per-example loop)"))
