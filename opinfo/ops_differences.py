"""Differences and integrals: diff ediff1d gradient trapezoid (rules:
batchtensor/rules/differences.py)."""

from __future__ import annotations

import numpy as np

from .core import OpInfo, SampleInput
from .samples import make_array


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



OPS = [
    OpInfo("diff", np.diff, _diff_samples, "rule", dtypes=(np.float64, np.int64, np.bool_)),
    OpInfo("ediff1d", np.ediff1d, _ediff1d_samples, "rule", dtypes=(np.float64, np.int32)),
    OpInfo("gradient", np.gradient, _gradient_samples, "rule", dtypes=(np.float64, np.int64),
           rtol=1e-9, atol=1e-12),
    OpInfo("trapezoid", np.trapezoid, _trapezoid_samples, "rule",
           dtypes=(np.float64, np.int64, np.complex128), rtol=1e-9, atol=1e-12),
]
