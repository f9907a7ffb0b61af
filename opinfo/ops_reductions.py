"""Reductions and scans: sum mean std var min max amin amax prod ptp any all argmin argmax
cumsum cumprod, their ndarray methods, and ufunc.reduce / accumulate / reduceat."""

from __future__ import annotations

import numpy as np

from .core import OpInfo, SampleInput
from .samples import ALL, FLOAT, INT, NUMERIC, SHAPES, make_array, with_nans


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


def _minmax_extra(rng, dtype):
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


def _index_extra(rng, dtype):
    x = make_array(rng, (4, 5), dtype)
    yield SampleInput((x,), {"axis": None, "keepdims": True}, "axis=None keepdims")
    if np.dtype(dtype).kind in "iu":
        yield SampleInput((make_array(rng, (6,), dtype, low=0, high=2),), {}, "ties")


def _scan_extra(rng, dtype):
    yield SampleInput((make_array(rng, (3, 4), dtype),), {"axis": 1, "dtype": np.float64},
                      "dtype=")


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
    OpInfo("cumsum", np.cumsum,
           reduction_samples(keepdims=False, tuple_axes=False, extra=_scan_extra), "boxed",
           dtypes=ALL),
    OpInfo("cumprod", np.cumprod,
           reduction_samples(keepdims=False, tuple_axes=False, extra=_scan_extra), "boxed",
           dtypes=FLOAT + INT),
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
