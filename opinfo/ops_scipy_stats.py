"""scipy.stats moments (rules: batchtensor/rules/scipy_stats.py): moment (one order or
several, center=), skew, kurtosis, variation, sem, zscore; axis= None / int / negative /
tuple, keepdims, nan_policy propagate / omit / raise with NaNs, integer data, 0-d and size-0
inputs."""

from __future__ import annotations

import numpy as np

from .core import SampleInput
from .samples import make_array, with_nans

try:
    from scipy import stats
except ImportError:  # scipy is an optional extra
    stats = None

_TOL = dict(rtol=1e-8, atol=1e-10, rtol32=1e-3, atol32=1e-4)


def _x(rng, shape, dtype, **kw):
    return make_array(rng, shape, dtype, **kw)


def _reduction(rng, dtype, *extra):
    def s(shape, kwargs, name, **kw):
        return SampleInput((_x(rng, shape, dtype), *extra), kwargs, name, **kw)

    yield s((6,), {}, "1-d")
    yield s((5, 4), {}, "axis=0 (the default)")
    yield s((3, 5), {"axis": -1}, "axis=-1")
    yield s((2, 3, 4), {"axis": None}, "axis=None: the whole example")
    yield s((2, 3, 4), {"axis": (0, 2), "keepdims": True}, "tuple axes keepdims")
    yield s((3, 5), {"axis": 1, "keepdims": True}, "keepdims")
    yield SampleInput((with_nans(rng, _x(rng, (3, 6), dtype)), *extra),
                      {"axis": 1, "nan_policy": "omit"}, "nan_policy=omit")
    yield SampleInput((with_nans(rng, _x(rng, (3, 6), dtype)), *extra),
                      {"axis": 1, "nan_policy": "raise"}, "nan_policy=raise")
    yield s((3, 6), {"axis": 1}, "non-contiguous")
    yield s((0, 3), {}, "size-0 reduced axis")
    yield s((3, 0), {}, "size-0 other axis")
    yield s((), {"axis": None}, "0-d")
    yield s((), {"axis": None, "keepdims": True}, "0-d keepdims")
    yield s((), {}, "0-d, axis=0")
    yield s((3, 4), {"axis": 2}, "axis out of range")


def moment_samples(rng, dtype):
    yield from _reduction(rng, dtype, 3)
    yield SampleInput((_x(rng, (4, 5), dtype), [1, 2, 3]), {"axis": -1}, "several orders")
    yield SampleInput((_x(rng, (4, 5), dtype), [2, 4]), {"axis": None, "keepdims": True},
                      "several orders, axis=None")
    yield SampleInput((_x(rng, (4, 5), dtype),), {"order": 2, "center": 0.5}, "center=")
    yield SampleInput((_x(rng, (4, 5), dtype),), {"order": 2, "center": [0.5] * 5},
                      "center= an array", loop_reason="moment(center=) is an array")


def skew_samples(rng, dtype):
    yield from _reduction(rng, dtype)
    yield SampleInput((_x(rng, (4, 6), dtype),), {"axis": 1, "bias": False}, "bias=False")


def kurtosis_samples(rng, dtype):
    yield from skew_samples(rng, dtype)
    yield SampleInput((_x(rng, (4, 6), dtype),), {"fisher": False}, "fisher=False")


def ddof_samples(rng, dtype):
    yield from _reduction(rng, dtype)
    yield SampleInput((_x(rng, (4, 6), dtype),), {"axis": 1, "ddof": 2}, "ddof=2")


def zscore_samples(rng, dtype):
    yield SampleInput((_x(rng, (6,), dtype),), {}, "1-d")
    yield SampleInput((_x(rng, (5, 4), dtype),), {}, "axis=0")
    yield SampleInput((_x(rng, (3, 5), dtype),), {"axis": -1, "ddof": 1}, "axis=-1 ddof=1")
    yield SampleInput((_x(rng, (2, 3, 4), dtype),), {"axis": None}, "axis=None")
    yield SampleInput((with_nans(rng, _x(rng, (3, 6), dtype)),),
                      {"axis": 1, "nan_policy": "omit"}, "nan_policy=omit")
    yield SampleInput((with_nans(rng, _x(rng, (3, 6), dtype)),),
                      {"axis": None, "nan_policy": "omit"}, "nan_policy=omit, axis=None")
    yield SampleInput((_x(rng, (3, 6), dtype, noncontiguous=True),), {"axis": 1},
                      "non-contiguous")
    yield SampleInput((_x(rng, (0, 3), dtype),), {}, "size-0")
    yield SampleInput((_x(rng, (0, 3), dtype),), {"axis": None}, "size-0, axis=None")
    yield SampleInput((_x(rng, (), dtype),), {"axis": None}, "0-d")
    yield SampleInput((_x(rng, (), dtype),), {}, "0-d, axis=0")
    yield SampleInput((_x(rng, (3, 4), dtype),), {"axis": 2}, "axis out of range")


OPS = []
if stats is not None:
    from .foreign import foreign_op

    F = (np.float64, np.float32)
    OPS = [
        foreign_op(stats, "moment", moment_samples, dtypes=F + (np.int64,), **_TOL),
        foreign_op(stats, "skew", skew_samples, dtypes=F, **_TOL),
        foreign_op(stats, "kurtosis", kurtosis_samples, dtypes=(np.float64,), **_TOL),
        foreign_op(stats, "variation", ddof_samples, dtypes=(np.float64,), **_TOL),
        foreign_op(stats, "sem", ddof_samples, dtypes=(np.float64, np.int64), **_TOL),
        foreign_op(stats, "zscore", zscore_samples, dtypes=F + (np.int64,), **_TOL),
    ]
