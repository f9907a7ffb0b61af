"""Histograms and counts: bincount histogram histogram_bin_edges histogram2d histogramdd
(rules: batchtensor/rules/histograms.py)."""

from __future__ import annotations

import numpy as np

from .core import OpInfo, SampleInput
from .samples import make_array, with_nans


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



OPS = [
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
]
