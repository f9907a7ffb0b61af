"""array-api-compat's ``is_lazy_array`` answers False for a batched value, as for the loop's
NumPy arrays: its ``bool()`` probe of one element raises where the examples disagree, and
SciPy's statistics would then skip their axis handling (a wrong axis, silently)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from loop_reference import assert_same, loop_vmap

import batchtensor as bt

RNG = np.random.default_rng(12)
COMPAT = ["scipy._lib.array_api_compat", "sklearn.externals.array_api_compat"]


@pytest.mark.parametrize("name", COMPAT)
def test_a_batched_value_is_not_lazy(name):
    compat = pytest.importorskip(name, reason="SciPy / scikit-learn are test extras")
    xs = np.array([[0.0, 1.0], [1.0, 0.0]])  # the first elements disagree in truth
    got = bt.vmap(lambda x: np.float64(compat.is_lazy_array(x)), fallback="error")(xs)
    assert_same(got, np.zeros(2))
    assert not compat.is_lazy_array(xs)


@pytest.mark.parametrize("in_axes", [0, -1])
def test_scipy_mode_of_2d_examples_along_the_loops_axis(in_axes):
    stats = pytest.importorskip("scipy.stats", reason="SciPy is a test extra")
    xs = RNG.integers(0, 4, size=(3, 12, 3))
    xs[:, 0, 0] = [0, 2, 1]  # the probed element's truth differs per example
    f = lambda x: stats.mode(x)  # noqa: E731
    args = xs if in_axes == 0 else np.moveaxis(xs, 0, -1)
    with warnings.catch_warnings():
        warnings.simplefilter("error", bt.PerformanceWarning)
        got = bt.vmap(f, in_axes=in_axes, fallback="error")(args)
    want = loop_vmap(f)(xs)
    assert_same(tuple(got), tuple(want))
