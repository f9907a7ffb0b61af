"""Moments: average cov corrcoef (rules: batchtensor/rules/moments.py)."""

from __future__ import annotations

import numpy as np

from .core import OpInfo, SampleInput
from .samples import make_array


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



OPS = [
    OpInfo("average", np.average, _average_samples, "rule", dtypes=(np.float64, np.int64),
           rtol=1e-9, atol=1e-12),
    OpInfo("cov", np.cov, _cov_samples, "rule", dtypes=(np.float64, np.complex128),
           rtol=1e-9, atol=1e-12),
    OpInfo("corrcoef", np.corrcoef, _corrcoef_samples, "rule",
           dtypes=(np.float64, np.complex128), rtol=1e-9, atol=1e-12),
]
