"""Statistics: quantile percentile nanquantile nanpercentile average cov corrcoef bincount
histogram histogram_bin_edges histogram2d histogramdd diff ediff1d gradient trapezoid
packbits unpackbits."""

from __future__ import annotations

import numpy as np

from .core import OpInfo, SampleInput
from .samples import make_array, with_nans

METHODS = ("inverted_cdf", "averaged_inverted_cdf", "closest_observation",
           "interpolated_inverted_cdf", "hazen", "weibull", "linear", "median_unbiased",
           "normal_unbiased", "lower", "higher", "midpoint", "nearest")

_NAN_Q_LOOP = "NumPy's nanquantile works lane by lane (different counts per lane): a batched q " \
              "runs per example"


def _quantile_samples(scale: float, nan: bool):
    def q(rng, shape):
        v = rng.random(shape)
        if shape and shape[0] >= 3:
            v[0], v[-1] = 0.0, 1.0  # the ends of the range
        return np.asarray(v * scale)

    def loop(sample):
        if nan and isinstance(sample.args[1], np.ndarray):
            sample.loop_reason = _NAN_Q_LOOP
        if nan and "weights" in sample.kwargs:
            sample.loop_reason = "NumPy's weighted nanquantile works lane by lane: per example"
        return sample

    def gen(rng, dtype):
        x = lambda shape: make_array(rng, shape, dtype)  # noqa: E731
        S = lambda *a, **k: loop(SampleInput(*a, **k))  # noqa: E731
        yield S((x((7,)), 0.3 * scale), {}, "Python float q")
        yield S((x((7,)), q(rng, ())), {}, "0-d q")
        yield S((x((3, 5)), q(rng, (4,))), {"axis": 1}, "1-d q axis=1")
        yield S((x((3, 5)), q(rng, (2, 2))), {"axis": -2}, "2-d q axis=-2")
        yield S((x((2, 3, 4)), q(rng, (3,))), {"axis": (0, 2), "keepdims": True},
                "tuple axis keepdims")
        yield S((x((2, 3, 4)), q(rng, (3,))), {"keepdims": True}, "axis=None keepdims")
        yield S((x(()), q(rng, (3,))), {}, "0-d a")
        yield S((x((2, 0)), q(rng, (3,))), {"axis": 0}, "size-0 kept axis",
                loop_reason="NumPy's nan-variants give odd shapes for empty lanes" if nan
                else None)
        yield S((x((0,)), q(rng, ())), {}, "size-0 reduced axis raises")
        yield S((x((4, 6)), q(rng, (5,))), {"axis": 0, "method": "linear"}, "non-contiguous")
        for m in METHODS:
            yield S((x((3, 7)), q(rng, (5,))), {"axis": -1, "method": m}, f"method={m}")
        yield S((x((3, 4)), 0.25 * scale), {"axis": 0, "method": "nearest"}, "float q nearest")
        if np.dtype(dtype).kind == "f":
            a = with_nans(rng, x((4, 5)), 0.3 if nan else 0.15)
            if nan:
                a[rng.random(4) < 0.3] = np.nan  # all-NaN rows in some examples
            yield S((a, q(rng, (3,))), {"axis": 1}, "NaN and inf")
            yield S((with_nans(rng, x((4, 5))), q(rng, (3,))), {"axis": 1, "method": "lower"},
                    "NaN and inf, lower")
        yield S((x((5,)), rng.integers(0, 2, (2,)) * int(scale)), {}, "integer q")
        yield S((x((5,)), q(rng, (2,)).astype(np.float32)), {}, "float32 q")
        w = make_array(rng, (3, 6), np.float64, low=0, high=2)
        yield S((x((3, 6)), q(rng, (2,))), {"axis": 1, "method": "inverted_cdf", "weights": w},
                "weights= same shape")
        yield S((x((3, 6)), 0.5 * scale),
                {"axis": 0, "method": "inverted_cdf", "weights": w[:, 0].copy()},
                "1-d weights=")
        yield S((x((3, 6)), q(rng, (2,))), {"axis": 1, "weights": w}, "weights with linear raises")
        yield S((x((5,)), q(rng, (2,)) + 1.5 * scale), {}, "q out of range raises")
        yield S((x((5,)), q(rng, (2, 2, 2))), {}, "3-d q raises")
        yield S((x((5,)), q(rng, (2,))), {"method": "bogus"}, "bad method raises")
        yield S((x((3, 4)), q(rng, (2,))), {"axis": 2}, "axis out of range")
        yield S((make_array(rng, (5,), np.complex128), q(rng, (2,))), {}, "complex a raises")
    return gen


def _average_samples(rng, dtype):
    x = lambda shape: make_array(rng, shape, dtype)  # noqa: E731
    w = lambda shape: make_array(rng, shape, np.float64, low=0.1, high=2)  # noqa: E731
    yield SampleInput((x((5,)),), {}, "1-d")
    yield SampleInput((x(()),), {}, "0-d")
    yield SampleInput((x((3, 4)),), {"axis": 1}, "axis=1")
    yield SampleInput((x((2, 3, 4)),), {"axis": (0, -1), "keepdims": True}, "tuple keepdims")
    yield SampleInput((x((3, 4)),), {"axis": 0, "returned": True}, "returned")
    yield SampleInput((x((3, 4)),), {"axis": -1, "weights": w((3, 4))}, "full weights")
    yield SampleInput((x((3, 4)),), {"axis": 0, "weights": w((3,)), "returned": True},
                      "1-d weights returned")
    yield SampleInput((x((2, 3, 4)),), {"axis": 1, "weights": w((3,)), "keepdims": True},
                      "1-d weights keepdims")
    yield SampleInput((x((3, 4)),), {"weights": w((3, 4)), "returned": True},
                      "axis=None weights")
    yield SampleInput((x((3, 4)), None, make_array(rng, (3, 4), np.int64, low=-1, high=2)),
                      {"axis": 1}, "int weights, some zero sums raise ZeroDivisionError")
    yield SampleInput((x((3, 4)),), {"weights": w((4,))}, "1-d weights without axis raise")
    yield SampleInput((x((3, 4)),), {"axis": 0, "weights": w((4,))}, "wrong length raises")
    yield SampleInput((x((3, 4)),), {"axis": 2}, "axis out of range")


def _cov_samples(rng, dtype):
    x = lambda shape: make_array(rng, shape, dtype)  # noqa: E731
    yield SampleInput((x((3, 6)),), {}, "3 variables")
    yield SampleInput((x((6,)),), {}, "1-d: a 0-d variance")
    yield SampleInput((x((6, 2)),), {"rowvar": False}, "rowvar=False")
    yield SampleInput((x((2, 5)), x((5,))), {}, "y=")
    yield SampleInput((x((5, 2)), x((5, 1))), {"rowvar": False}, "y= rowvar=False")
    yield SampleInput((x((3, 6)),), {"bias": True}, "bias")
    yield SampleInput((x((3, 6)),), {"ddof": 2}, "ddof=2")
    yield SampleInput((x((3, 4)),), {"ddof": 4}, "ddof = N: inf/nan with a warning")
    fw = make_array(rng, (6,), np.int64, low=0, high=4)
    aw = make_array(rng, (6,), np.float64, low=0.1, high=1)
    yield SampleInput((x((2, 6)),), {"fweights": fw}, "fweights")
    yield SampleInput((x((2, 6)),), {"aweights": aw}, "aweights")
    yield SampleInput((x((2, 6)),), {"fweights": fw + 1, "aweights": aw, "ddof": 1},
                      "fweights and aweights")
    yield SampleInput((x((2, 6)),), {"aweights": aw, "bias": True}, "aweights bias")
    yield SampleInput((x((2, 6)),), {"fweights": fw - 2}, "negative fweights raise")
    yield SampleInput((x((2, 6)),), {"fweights": aw}, "non-integer fweights raise")
    yield SampleInput((x((2, 6)),), {"aweights": aw[:4].copy()}, "wrong length raises")
    yield SampleInput((x((0, 4)),), {}, "no variables")
    yield SampleInput((x((2, 3, 4)),), {}, "3-d raises")
    yield SampleInput((x((3, 5)),), {"dtype": np.float32}, "dtype=float32")
    yield SampleInput((x((2, 4)),), {"ddof": 1.5}, "non-integer ddof raises")


def _corrcoef_samples(rng, dtype):
    x = lambda shape: make_array(rng, shape, dtype)  # noqa: E731
    yield SampleInput((x((3, 6)),), {}, "3 variables")
    yield SampleInput((x((6,)),), {}, "1-d: 1.0")
    yield SampleInput((x((6, 2)),), {"rowvar": False}, "rowvar=False")
    yield SampleInput((x((2, 5)), x((5,))), {}, "y=")
    const = x((2, 5))
    const[1] = 0
    yield SampleInput((const,), {}, "a constant variable: nan")
    yield SampleInput((x((0, 4)),), {}, "no variables")


def _bincount_samples(rng, dtype):
    xs = lambda shape, hi=6: make_array(rng, shape, dtype, low=0, high=hi)  # noqa: E731
    yield SampleInput((xs((12,)),), {"minlength": 8}, "minlength fixes the length")
    yield SampleInput((xs((12,)),), {"minlength": 6, "weights": make_array(rng, (12,),
                                                                           np.float64)},
                      "weights=")
    yield SampleInput((xs((0,)),), {"minlength": 3}, "empty")
    yield SampleInput((xs((0,)),), {}, "empty, no minlength")
    yield SampleInput((xs((3, 4)),), {"minlength": 8}, "2-d raises")
    yield SampleInput((xs(()),), {"minlength": 8}, "0-d raises")
    yield SampleInput((xs((5,)),), {"minlength": -1}, "negative minlength raises")
    yield SampleInput((xs((5,)),), {"minlength": 8, "weights": np.ones(4)},
                      "weights of another length raise")


def _bincount_neg(rng, dtype):
    yield SampleInput((make_array(rng, (6,), dtype, low=-2, high=5),), {"minlength": 8},
                      "negative values raise")


def _hist_samples(rng, dtype):
    x = lambda shape: make_array(rng, shape, dtype)  # noqa: E731
    yield SampleInput((x((20,)),), {}, "default 10 bins, each example's own range")
    yield SampleInput((x((4, 5)),), {"bins": 4}, "2-d is raveled")
    yield SampleInput((x((20,)),), {"bins": 5, "range": (-2, 3)}, "range=")
    yield SampleInput((x((20,)),), {"bins": 5, "range": (-2.5, 3.5), "density": True},
                      "density")
    yield SampleInput((x((20,)),), {"bins": 6, "density": True}, "density own range")
    yield SampleInput((x((20,)),), {"bins": 5, "weights": make_array(rng, (20,), np.float64)},
                      "weights=")
    yield SampleInput((x((20,)),), {"bins": 5, "range": (-3, 3),
                                    "weights": make_array(rng, (20,), np.int64)},
                      "int weights")
    yield SampleInput((x((20,)),), {"bins": np.sort(make_array(rng, (6,), np.float64))},
                      "array bins")
    yield SampleInput((x((20,)),), {"bins": np.array([-1.0, 0.0, 0.0, 2.0])},
                      "array bins with a repeated edge")
    yield SampleInput((x(()),), {"bins": 3}, "0-d")
    yield SampleInput((x((0,)),), {"bins": 3}, "empty")
    yield SampleInput((np.full((5,), rng.integers(0, 3), dtype),), {"bins": 4},
                      "constant data (range +-0.5)")
    if np.dtype(dtype).kind == "f":
        yield SampleInput((with_nans(rng, x((10,))),), {"bins": 3, "range": (-1, 1)},
                          "NaN ignored with range=")
        yield SampleInput((with_nans(rng, x((10,))),), {"bins": 3},
                          "NaN without range raises")
    yield SampleInput((x((10,)),), {"bins": 0}, "bins=0 raises")
    yield SampleInput((x((10,)),), {"bins": 3, "range": (2, 1)}, "bad range raises")
    yield SampleInput((x((10,)),), {"bins": np.array([2.0, 1.0, 3.0])},
                      "decreasing bins raise")
    # one set of values, shuffled: the automatic bin count agrees across the examples
    yield SampleInput((rng.permutation(np.arange(12)).astype(dtype),), {"bins": "auto"},
                      "automatic bin count", loop_reason="the bin count depends on the data")


def _hist_edges_samples(rng, dtype):
    for s in _hist_samples(rng, dtype):
        s.kwargs.pop("density", None)
        yield s


def _hist_batched_bins(rng, dtype):
    yield SampleInput((make_array(rng, (15,), dtype),
                       np.sort(make_array(rng, (5,), np.float64))), {}, "batched edges")
    yield SampleInput((make_array(rng, (15,), dtype), make_array(rng, (5,), np.float64)), {},
                      "non-monotonic edges raise (in some examples)")


def _hist2d_samples(rng, dtype):
    x = lambda shape: make_array(rng, shape, dtype)  # noqa: E731
    yield SampleInput((x((12,)), x((12,))), {}, "default")
    yield SampleInput((x((12,)), x((12,))), {"bins": (3, 4), "range": ((-2, 2), (-3, 3))},
                      "bins pair, range")
    yield SampleInput((x((12,)), x((12,))), {"bins": 3, "density": True,
                                             "weights": make_array(rng, (12,), np.float64,
                                                                   low=0, high=1)},
                      "density weights")
    yield SampleInput((x((12,)), x((12,))), {"bins": np.array([-2.0, 0.0, 1.0, 3.0])},
                      "one array of edges for both")
    yield SampleInput((x((12,)), x((12,))),
                      {"bins": [np.array([-1.0, 0.0, 1.0]), 3]}, "edges and a count")
    yield SampleInput((x((0,)), x((0,))), {"bins": 2}, "empty")
    yield SampleInput((x((5,)), x((6,))), {}, "lengths differ raises")


def _histdd_samples(rng, dtype):
    x = lambda shape: make_array(rng, shape, dtype)  # noqa: E731
    yield SampleInput((x((15, 3)),), {"bins": 3}, "(N, D) sample")
    yield SampleInput((x((15, 2)),), {"bins": (2, 4), "range": [(-2, 2), None]},
                      "per-dimension bins and range")
    yield SampleInput((x((15,)),), {"bins": 4}, "1-d sample: D=1")
    yield SampleInput(((x((10,)), x((10,)), x((10,))),), {"bins": 2, "density": True},
                      "sequence of 1-d samples, density")
    yield SampleInput((x((10, 2)),), {"bins": [np.array([-3.0, 0.0, 3.0]), 2],
                                      "weights": make_array(rng, (10,), np.float64)},
                      "edges array, weights")
    yield SampleInput((x((10, 2)),), {"bins": (2, 3, 4)}, "wrong bins length raises")
    yield SampleInput((x((10, 2)),), {"bins": 2, "range": [(0, 1)]}, "wrong range length")
    yield SampleInput((x((10, 2)),), {"bins": 0}, "bins=0 raises")


def _diff_samples(rng, dtype):
    x = lambda shape: make_array(rng, shape, dtype)  # noqa: E731
    yield SampleInput((x((6,)),), {}, "1-d")
    yield SampleInput((x((3, 5)),), {"n": 2, "axis": 0}, "n=2 axis=0")
    yield SampleInput((x((2, 3, 4)),), {"axis": -2}, "axis=-2")
    yield SampleInput((x((3, 0)),), {}, "size-0 axis")
    yield SampleInput((x((4,)),), {"n": 5}, "n > length")
    yield SampleInput((x((3, 4)),), {"n": 0}, "n=0 returns the input")
    yield SampleInput((x((3, 4)),), {"prepend": x(()), "append": x(())}, "0-d prepend/append")
    yield SampleInput((x((3, 4)),), {"axis": 0, "prepend": x((1, 4)), "append": x((2, 4))},
                      "prepend/append arrays")
    yield SampleInput((x((3, 4)),), {"prepend": 0}, "Python scalar prepend")
    yield SampleInput((x((5, 4)), 1, 0), {}, "positional n, axis")
    yield SampleInput((make_array(rng, (3, 5), dtype, noncontiguous=True),), {},
                      "non-contiguous")
    yield SampleInput((x(()),), {}, "0-d raises")
    yield SampleInput((x((4,)),), {"n": -1}, "negative n raises")
    yield SampleInput((x((3, 4)),), {"prepend": x((4,))}, "prepend of another rank raises")
    yield SampleInput((x((3, 4)),), {"axis": 2}, "axis out of range")


def _ediff1d_samples(rng, dtype):
    x = lambda shape: make_array(rng, shape, dtype)  # noqa: E731
    yield SampleInput((x((6,)),), {}, "1-d")
    yield SampleInput((x((2, 3)),), {}, "2-d is raveled")
    yield SampleInput((x(()),), {}, "0-d")
    yield SampleInput((x((5,)),), {"to_begin": x(()), "to_end": x((2,))}, "to_begin/to_end")
    yield SampleInput((x((5,)),), {"to_end": x((2, 2))}, "2-d to_end is raveled")
    yield SampleInput((x((5,)),), {"to_begin": -1}, "scalar to_begin")
    yield SampleInput((x((5,)),), {"to_end": make_array(rng, (2,), np.complex128)},
                      "incompatible to_end raises")


def _gradient_samples(rng, dtype):
    x = lambda shape: make_array(rng, shape, dtype)  # noqa: E731
    yield SampleInput((x((6,)),), {}, "1-d")
    yield SampleInput((x((4, 5)),), {}, "2-d: a tuple")
    yield SampleInput((x((4, 5)), 2.0), {}, "scalar spacing")
    yield SampleInput((x((4, 5)), 2.0, 0.5), {}, "spacing per axis")
    yield SampleInput((x((4, 5)), np.cumsum(make_array(rng, (5,), np.float64, low=0.1,
                                                       high=1))), {"axis": -1},
                      "coordinates along axis=-1",
                      loop_reason="batched coordinate arrays (varargs) run per example")
    yield SampleInput((x((3, 4, 5)),), {"axis": (0, 2), "edge_order": 2}, "tuple axis order 2")
    yield SampleInput((x(()),), {}, "0-d: no gradients")
    yield SampleInput((x((2, 5)),), {"edge_order": 2}, "too small for edge_order raises")
    yield SampleInput((x((3, 4)),), {"axis": 2}, "axis out of range")


def _trapezoid_samples(rng, dtype):
    y = lambda shape: make_array(rng, shape, dtype)  # noqa: E731
    xs = lambda shape: np.cumsum(make_array(rng, shape, np.float64, low=0.1, high=1),  # noqa
                                 axis=-1)
    yield SampleInput((y((6,)),), {}, "1-d")
    yield SampleInput((y((3, 5)),), {"dx": 0.5, "axis": 0}, "dx axis=0")
    yield SampleInput((y((3, 5)), xs((5,))), {}, "1-d x")
    yield SampleInput((y((3, 5)), xs((3,))), {"axis": 0}, "1-d x along axis=0")
    yield SampleInput((y((3, 5)), xs((3, 5))), {}, "x of y's shape")
    yield SampleInput((y((2, 3, 4)), xs((3, 4))), {}, "x broadcast")
    yield SampleInput((y((3, 0)),), {}, "size-0 axis")
    yield SampleInput((y(()),), {}, "0-d raises")
    yield SampleInput((y((3, 5)), xs((4,))), {}, "x of another length raises")


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


_Q_TOL = dict(rtol=1e-9, atol=1e-12)

OPS = [
    OpInfo("quantile", np.quantile, _quantile_samples(1.0, False), "rule",
           dtypes=(np.float64, np.int64), **_Q_TOL),
    OpInfo("percentile", np.percentile, _quantile_samples(100.0, False), "rule",
           dtypes=(np.float32,), **_Q_TOL),
    OpInfo("nanquantile", np.nanquantile, _quantile_samples(1.0, True), "rule",
           dtypes=(np.float64,), **_Q_TOL),
    OpInfo("nanpercentile", np.nanpercentile, _quantile_samples(100.0, True), "rule",
           dtypes=(np.float64,), **_Q_TOL),
    OpInfo("average", np.average, _average_samples, "rule", dtypes=(np.float64, np.int64),
           rtol=1e-9, atol=1e-12),
    OpInfo("cov", np.cov, _cov_samples, "rule", dtypes=(np.float64, np.complex128),
           rtol=1e-9, atol=1e-12),
    OpInfo("corrcoef", np.corrcoef, _corrcoef_samples, "rule",
           dtypes=(np.float64, np.complex128), rtol=1e-9, atol=1e-12),
    OpInfo("bincount", np.bincount, _bincount_samples, "rule", dtypes=(np.int64, np.uint8),
           skip_nested="the output length is data: under nested vmap the inner level hands "
                       "bincount to the loop (tests/test_statistics.py covers it)"),
    OpInfo("bincount.negative", np.bincount, _bincount_neg, "rule", dtypes=(np.int64,)),
    OpInfo("histogram", np.histogram, _hist_samples, "rule", dtypes=(np.float64, np.int64),
           rtol=1e-9, atol=1e-12),
    OpInfo("histogram.float32", np.histogram, _hist_samples, "rule", dtypes=(np.float32,)),
    OpInfo("histogram.batched_bins", np.histogram, _hist_batched_bins, "rule",
           dtypes=(np.float64,)),
    OpInfo("histogram_bin_edges", np.histogram_bin_edges, _hist_edges_samples, "rule",
           dtypes=(np.float64, np.int32)),
    OpInfo("histogram2d", np.histogram2d, _hist2d_samples, "decomposition",
           covers=np.histogram2d, dtypes=(np.float64,), rtol=1e-9, atol=1e-12),
    OpInfo("histogramdd", np.histogramdd, _histdd_samples, "rule",
           dtypes=(np.float64, np.float32), rtol=1e-9, atol=1e-12),
    OpInfo("diff", np.diff, _diff_samples, "rule", dtypes=(np.float64, np.int64, np.bool_)),
    OpInfo("ediff1d", np.ediff1d, _ediff1d_samples, "rule", dtypes=(np.float64, np.int32)),
    OpInfo("gradient", np.gradient, _gradient_samples, "rule", dtypes=(np.float64, np.int64),
           rtol=1e-9, atol=1e-12),
    OpInfo("trapezoid", np.trapezoid, _trapezoid_samples, "rule",
           dtypes=(np.float64, np.int64, np.complex128), rtol=1e-9, atol=1e-12),
    OpInfo("packbits", np.packbits, _packbits_samples, "rule", dtypes=(np.bool_, np.uint8)),
    OpInfo("unpackbits", np.unpackbits, _unpackbits_samples, "rule", dtypes=(np.uint8,)),
]
