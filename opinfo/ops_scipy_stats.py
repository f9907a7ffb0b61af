"""scipy.stats moments (rules: batchtensor/rules/scipy_stats.py): moment (one order or
several, center=), skew, kurtosis, variation, sem, zscore; axis= None / int / negative /
tuple, keepdims, nan_policy propagate / omit / raise with NaNs, integer data, 0-d and size-0
inputs. The compiled kernels the tests call once per example (``swilk``, ``_kendall_dis``,
``_weightedrankedtau``, Siegel's repeated medians) with their branches (sizes, ties,
constant data, precomputed coefficients) and the inputs they refuse (dtype, read-only or
strided buffers: the sweep's layouts), and the elementwise Kolmogorov-Smirnov distribution
(``kolmogn`` / ``kolmognp`` / ``kolmogni``)."""

from __future__ import annotations

import numpy as np

from .core import SampleInput
from .samples import make_array, with_nans

try:
    from scipy import stats
    from scipy.stats import (_continuous_distns, _morestats, _stats_mstats_common,
                             _stats_py)
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


def _centred(rng, n, dtype=np.float64):
    """What ``shapiro`` hands ``swilk``: sorted data less a middle value."""
    x = np.sort(make_array(rng, (n,), dtype))
    return x - x[n // 2]


def swilk_samples(rng, dtype):
    for n in (12, 3, 5, 8, 25):
        yield SampleInput((_centred(rng, n), np.zeros(n // 2)), {}, f"{n} values")
    a = np.zeros(6)
    _morestats.swilk(_centred(rng, 12), a)  # the coefficients of 12 values
    yield SampleInput((_centred(rng, 12), a), {"init": True}, "precomputed coefficients")
    yield SampleInput((np.full(9, rng.normal()), np.zeros(4)), {}, "constant data (zero range)")
    yield SampleInput((_centred(rng, 2), np.zeros(1)), {}, "too few values")
    yield SampleInput((_centred(rng, 8), np.zeros(5)), {}, "coefficients too long")
    yield SampleInput((_centred(rng, 8, np.float32), np.zeros(4)), {}, "float32 (refused)")


def _ranks(rng, n, k):
    """Dense ranks 1..k (``_kendall_dis`` needs ranks from 1: 0 never ends its loop)."""
    return rng.integers(1, k + 1, n).astype(np.intp)


def kendall_dis_samples(rng, dtype):
    yield SampleInput((np.sort(_ranks(rng, 12, 12)), _ranks(rng, 12, 12)), {}, "ranks")
    yield SampleInput((np.sort(_ranks(rng, 12, 3)), _ranks(rng, 12, 4)), {}, "ties")
    yield SampleInput((np.ones(5, np.intp), _ranks(rng, 5, 5)), {}, "one x rank")
    yield SampleInput((np.sort(_ranks(rng, 6, 6)), _ranks(rng, 6, 6).astype(np.int32)), {},
                      "int32 (refused)")


def cdf_distance_samples(rng, dtype):
    """``_cdf_distance(p, u, v, u_weights, v_weights)``: distributions of other sizes, ties,
    weights on one side or both (the sweep's unbatched variants give a plain distribution
    beside a batched one, the case its rule is for)."""
    u, v = make_array(rng, (7,), dtype), make_array(rng, (5,), dtype)
    wu, wv = rng.uniform(0.5, 2.0, 7), rng.uniform(0.5, 2.0, 5)
    yield SampleInput((1, u, v), {}, "p=1")
    yield SampleInput((2, u, v), {}, "p=2")
    yield SampleInput((1, u, v, wu, wv), {}, "weights")
    yield SampleInput((3, u, v, None, wv), {}, "p=3, weights on one side")
    yield SampleInput((1, np.round(u / 4).astype(dtype), v[:1]), {}, "ties, one value")


def _weigher(r):
    return 1.0 / (2.0 + r)


def weightedrankedtau_samples(rng, dtype):
    x, y = make_array(rng, (10,), dtype), make_array(rng, (10,), dtype)
    rank = rng.permutation(10).astype(np.intp)
    yield SampleInput((x, y, None, None, True), {}, "rank=None")
    yield SampleInput((x, y, rank, None, False), {}, "a rank, not additive")
    yield SampleInput((x, y, rank, _weigher, True), {}, "a weigher")
    ties = np.round(make_array(rng, (10,), dtype) / 4).astype(dtype)
    yield SampleInput((ties, y, None, None, True), {}, "ties")
    yield SampleInput((np.ones(6, dtype), y[:6], None, None, True), {}, "constant x: NaN")
    yield SampleInput((x, y.astype(np.float32 if dtype == np.float64 else np.float64), None,
                       None, True), {}, "dtypes differ (refused)")


def toint64_samples(rng, dtype):
    # (never of an empty array: it writes out of bounds; weightedtau returns before)
    x = np.round(make_array(rng, (9,), dtype))
    yield SampleInput((x,), {}, "ties")
    if np.dtype(dtype).kind == "f":
        x = x.copy()
        x[[1, 5]] = np.nan
        yield SampleInput((x,), {}, "NaN lowest")
    yield SampleInput((x[0, ...],), {}, "0-d (refused)")


def siegelslopes_samples(rng, dtype):
    x = make_array(rng, (12,), dtype)
    y = (0.6 * x + make_array(rng, (12,), dtype)).astype(dtype)
    yield SampleInput((y, x, "hierarchical"), {}, "hierarchical")
    yield SampleInput((y, x, "separate"), {}, "separate")
    yield SampleInput((y[:2], x[:2], "hierarchical"), {}, "two points")
    yield SampleInput((y, np.round(x).astype(dtype), "hierarchical"), {}, "ties in x")


def kolmogn_samples(rng, dtype):
    x = make_array(rng, (5,), dtype, low=0.0, high=1.0)
    yield SampleInput((12, x), {}, "cdf")
    yield SampleInput((12, x), {"cdf": False}, "sf")
    yield SampleInput((np.array([3, 12, 40, 12, 7]), x), {}, "n an array")
    yield SampleInput((20, x[0, ...]), {"cdf": False}, "0-d")
    yield SampleInput((9, make_array(rng, (3, 4), dtype, low=0.0, high=1.0)), {}, "2-d",
                      loop_reason="examples of two axes that are not C-contiguous (some "
                                  "layouts): the iterator lays the result out as they lie")
    yield SampleInput((12.5, x), {}, "n not integral", loop_reason="SciPy's error")
    yield SampleInput((12, x.astype(np.float32)), {}, "float32 x",
                      loop_reason="the iterator asks float64 without buffering: it raises, or "
                                  "not, by the example's shape")
    yield SampleInput((12, x[0, ...].astype(np.float32)), {}, "float32 x, 0-d",
                      loop_reason="as float32 x")


def kolmognp_samples(rng, dtype):
    x = make_array(rng, (5,), dtype, low=0.0, high=1.0)
    yield SampleInput((12, x), {}, "pdf")
    yield SampleInput((np.array([3, 12, 40, 12, 7]), x[:1]), {}, "n an array")


def kolmogni_samples(rng, dtype):
    q = make_array(rng, (4,), dtype, low=0.01, high=0.99)
    yield SampleInput((12, q), {}, "ppf")
    yield SampleInput((12, q), {"cdf": False}, "isf")
    yield SampleInput((np.array([3, 12, 40, 7]), q), {}, "n an array")


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
        foreign_op(_morestats, "swilk", swilk_samples, **_TOL),
        foreign_op(_stats_py, "_kendall_dis", kendall_dis_samples, dtypes=(np.intp,)),
        foreign_op(_stats_py, "_weightedrankedtau", weightedrankedtau_samples,
                   dtypes=F + (np.int64,), **_TOL),
        foreign_op(_stats_py, "_toint64", toint64_samples, dtypes=F + (np.int64,)),
        foreign_op(_stats_py, "_cdf_distance", cdf_distance_samples, dtypes=F, **_TOL),
        foreign_op(_stats_mstats_common, "siegelslopes_pythran", siegelslopes_samples,
                   dtypes=F, **_TOL),
        # (where SciPy's distribution kstwo calls them)
        foreign_op(_continuous_distns, "kolmogn", kolmogn_samples, **_TOL),
        foreign_op(_continuous_distns, "kolmognp", kolmognp_samples, dtypes=F, **_TOL),
        foreign_op(_continuous_distns, "kolmogni", kolmogni_samples, dtypes=F, **_TOL),
    ]
