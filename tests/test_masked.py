"""Masked arrays made inside the function (docs/semantics.md, "Masked arrays"): ``numpy.ma``
on a batched value gives the loop's result, by a rerun once per example (warned), and masked
results come back as a masked array stacked as ``np.ma.stack`` stacks them (the data the
loop's ``np.stack`` gives, and the masks with it)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import batchtensor as bt
from batchtensor.errors import SubclassViewError
from loop_reference import on_threads

RNG = np.random.default_rng(23)
XS = RNG.normal(size=(5, 6))
XS[0, 1], XS[2, 3], XS[3, 0] = np.nan, np.inf, np.nan
XS[4] = np.nan  # an example with every element masked


def loop(f, xs, in_axes=0):
    """The loop, stacked as np.ma.stack stacks masked results."""
    examples = [np.take(xs, i, in_axes) for i in range(xs.shape[in_axes])]
    outs = [f(x) for x in examples]
    if any(isinstance(o, np.ma.MaskedArray) for o in outs):
        return np.ma.stack(outs)
    return np.stack(outs)


def assert_same_masked(got, want):
    assert isinstance(got, np.ma.MaskedArray) == isinstance(want, np.ma.MaskedArray)
    np.testing.assert_array_equal(np.ma.getmaskarray(got), np.ma.getmaskarray(want))
    np.testing.assert_array_equal(np.ma.getdata(got), np.ma.getdata(want))
    assert np.ma.getdata(got).dtype == np.ma.getdata(want).dtype


def reruns(f, xs, in_axes=0):
    with pytest.warns(bt.PerformanceWarning, match="reruns once per example"):
        got = bt.vmap(f, in_axes=in_axes)(xs)
    assert_same_masked(got, loop(f, xs, in_axes))
    return got


PATTERNS = {
    "masked_invalid().mean()": lambda x: np.ma.masked_invalid(x).mean(),
    "masked_invalid().std(ddof=1)": lambda x: np.ma.masked_invalid(x).std(ddof=1),
    "masked_where().filled(0)": lambda x: np.ma.masked_where(x > 0.5, x).filled(0.0),
    "masked_greater().sum()": lambda x: np.ma.masked_greater(x, 0.0).sum(),
    "masked_outside().count()": lambda x: np.ma.masked_outside(x, -1.0, 1.0).count(),
    "np.ma.log masks the domain": lambda x: np.ma.log(x),
    "getmaskarray": lambda x: np.ma.getmaskarray(np.ma.masked_invalid(x)),
    "median": lambda x: np.ma.median(np.ma.masked_invalid(x)),
    "compressed().sum()": lambda x: np.ma.masked_invalid(x).compressed().sum(),
    "a masked array returned": lambda x: np.ma.masked_invalid(x),
    "fix_invalid": lambda x: np.ma.fix_invalid(x, fill_value=-1.0),
    "masked_values, 2-d": lambda x: np.ma.atleast_2d(np.ma.masked_values(x, 0.0)),
}


@pytest.mark.parametrize("name", PATTERNS)
def test_numpy_ma_patterns_give_the_loops_result(name):
    reruns(PATTERNS[name], XS)


@pytest.mark.parametrize("in_axes", [0, 1, -1])
def test_in_axes(in_axes):
    xs = XS if in_axes == 0 else np.ascontiguousarray(XS.T)
    reruns(PATTERNS["a masked array returned"], xs, in_axes)


def test_partial_and_nested():
    w = RNG.normal(size=6)
    f = lambda x, w: np.ma.masked_invalid(x * w).sum()  # noqa: E731
    with pytest.warns(bt.PerformanceWarning):
        got = bt.vmap(f, in_axes=(0, None))(XS, w)
    assert_same_masked(got, loop(lambda x: f(x, w), XS))
    grid = np.stack([XS, XS[::-1]])
    g = PATTERNS["masked_invalid().mean()"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", bt.PerformanceWarning)
        got = bt.vmap(bt.vmap(g))(grid)
    assert_same_masked(got, np.ma.stack([loop(g, xs) for xs in grid]))


def test_fallback_error_raises_the_clear_error():
    with pytest.raises(SubclassViewError, match="ndarray subclasses"):
        bt.vmap(PATTERNS["masked_invalid().mean()"], fallback="error")(XS)


def test_batch_sizes_one_and_zero():
    reruns(PATTERNS["a masked array returned"], XS[:1])
    # no example to rerun, and no example's result to take the shape from: the loop's
    # np.stack of nothing raises too
    with pytest.raises(bt.BatchingError, match="ndarray subclasses"):
        bt.vmap(lambda x: np.ma.masked_invalid(x).filled(0.0))(XS[:0])


def test_threads():
    def run(i):
        xs = XS + i
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", bt.PerformanceWarning)
            for _ in range(5):
                f = PATTERNS["masked_where().filled(0)"]
                assert_same_masked(bt.vmap(f)(xs), loop(f, xs))

    on_threads(run)


def test_masked_inputs_are_refused_with_what_to_pass():
    with pytest.raises(ValueError, match="masked array"):
        bt.vmap(lambda x: x)(np.ma.masked_invalid(XS))


# ---- real code, unchanged: SciPy's statistics of masked data -----------------------------------
@pytest.mark.parametrize("name, kw", [("gmean", {}), ("hmean", {}), ("trimmed_mean", {}),
                                      ("tmean", {}), ("skew", {}), ("kurtosis", {}),
                                      ("variation", {}), ("sem", {})])
def test_scipy_mstats_of_masked_data(name, kw):
    mstats = pytest.importorskip("scipy.stats.mstats", reason="SciPy is not installed")
    fn = getattr(mstats, name)
    positive = np.abs(XS[:4]) + 0.5
    f = lambda x: fn(np.ma.masked_invalid(x), **kw)  # noqa: E731
    reruns(f, positive)
