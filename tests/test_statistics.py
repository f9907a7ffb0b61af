"""Statistics and searching behaviour the OpInfo sweep cannot express: data-dependent output
lengths (bincount, automatic histogram bins), the error messages that tell the user what to do,
and nested vmap for bincount (whose length must be read from the data)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import batchtensor as bt


def test_bincount_unequal_lengths_raise_and_name_minlength(strict):
    x = np.array([[0, 1, 2], [0, 1, 5]])
    with pytest.raises(bt.BatchingError, match=r"minlength=6"):
        bt.vmap(np.bincount)(x)
    got = bt.vmap(lambda v: np.bincount(v, minlength=6))(x)
    np.testing.assert_array_equal(got, np.stack([np.bincount(r, minlength=6) for r in x]))


def test_bincount_equal_lengths_without_minlength(strict):
    x = np.array([[0, 3, 3, 1], [3, 2, 2, 2]])
    got = bt.vmap(np.bincount)(x)
    np.testing.assert_array_equal(got, np.stack([np.bincount(r) for r in x]))


def test_bincount_nested_vmap_runs_inner_level_per_example():
    rng = np.random.default_rng(0)
    x = rng.integers(0, 4, size=(2, 3, 7))
    w = rng.random((2, 3, 7))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", bt.PerformanceWarning)
        got = bt.vmap(bt.vmap(lambda v, u: np.bincount(v, u, minlength=4)))(x, w)
    want = np.array([[np.bincount(x[i, j], w[i, j], minlength=4) for j in range(3)]
                     for i in range(2)])
    np.testing.assert_allclose(got, want)


def test_histogram_automatic_bins_that_differ_raise_clearly():
    x = np.stack([np.arange(10.0), np.r_[np.zeros(9), 100.0]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", bt.PerformanceWarning)
        with pytest.raises(bt.BatchingError, match="different shapes"):
            bt.vmap(lambda v: np.histogram(v, bins="auto"))(x)


def test_histogram_edges_per_example(strict):
    x = np.array([[0.0, 1.0, 2.0, 3.0], [10.0, 10.0, 20.0, 40.0]])
    hist, edges = bt.vmap(lambda v: np.histogram(v, bins=3))(x)
    for i in range(2):
        h, e = np.histogram(x[i], bins=3)
        np.testing.assert_array_equal(hist[i], h)
        np.testing.assert_array_equal(edges[i], e)


def test_nanargmax_all_nan_slice_raises_under_vmap(strict):
    x = np.array([[1.0, np.nan], [np.nan, np.nan]])
    with pytest.raises(ValueError, match="All-NaN"):
        bt.vmap(np.nanargmax)(x)


def test_lexsort_list_of_batched_keys_is_a_clear_error_or_a_rerun():
    # NumPy only dispatches a *tuple* of keys; a list is converted before we see it
    a, b = np.zeros((2, 3)), np.ones((2, 3))
    with pytest.raises(TypeError, match="BatchedTensor"):
        bt.vmap(lambda u, v: np.lexsort([u, v]), fallback="error")(a, b)
    got = bt.vmap(lambda u, v: np.lexsort([u, v]), fallback="silent")(a, b)
    np.testing.assert_array_equal(got, np.stack([np.lexsort([a[i], b[i]]) for i in range(2)]))
    got = bt.vmap(lambda u, v: np.lexsort((u, v)))(a, b)
    np.testing.assert_array_equal(got, np.stack([np.lexsort((a[i], b[i])) for i in range(2)]))


def _short_rows(rng, n, dtype, batch=6):
    # at least 512 elements in all, where the column-by-column paths start
    xs = rng.normal(size=(batch, 100, n)) * 10.0 ** rng.integers(-6, 6, size=(batch, 100, n))
    xs = xs.astype(dtype)
    xs[:, ::4] = -0.0
    xs[:, 1::9, 0] = np.nan
    xs[:, 2::9, -1] = np.inf
    return xs


@pytest.mark.parametrize("layout", ["C", "reversed rows", "transposed"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", [2, 3, 7, 8, 9, 12, 15, 16, 17])
def test_sum_over_a_short_last_axis_is_bit_exact(dtype, n, layout):
    """The column-by-column sum (boxed/reduction.py) must give the loop's bits: signed zeros,
    NaN and inf included; NumPy's pairwise sum of a row, also from 8 elements on, where the
    rows are contiguous (other layouts keep NumPy's own reduce)."""
    xs = _short_rows(np.random.default_rng(n), n, dtype)
    if layout == "reversed rows":
        xs = xs[..., ::-1]
    elif layout == "transposed":
        xs = np.ascontiguousarray(np.swapaxes(xs, 1, 2)).swapaxes(1, 2)
    f = lambda x: x.sum(axis=-1)  # noqa: E731
    got = bt.vmap(f)(xs)
    want = np.stack([f(x) for x in xs])
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))


@pytest.mark.parametrize("op", [np.max, np.min])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.uint8])
@pytest.mark.parametrize("n", [2, 5, 10, 16, 17])
def test_max_min_over_a_short_last_axis_match_the_loop(op, dtype, n):
    """Max / min over a short last axis go column by column: the same values and NaN positions
    as NumPy's row-by-row reduce (only the sign of a tying zero is NumPy's own choice)."""
    rng = np.random.default_rng(n)
    if np.dtype(dtype).kind == "f":
        xs = _short_rows(rng, n, dtype)
        xs[:, 3::7, n // 2] = -np.inf
    else:
        xs = rng.integers(0, 200, size=(6, 100, n)).astype(dtype)
    rows = xs.reshape(-1, n)  # 600 examples of one short row each (a softmax's max)
    for f, data in [(lambda x: op(x, axis=-1), xs), (lambda x: op(x, -1, keepdims=True), xs),
                    (lambda x: op(x), rows), (lambda x: x.max() if op is np.max else x.min(),
                                              rows)]:
        got = bt.vmap(f)(data)
        want = np.stack([f(x) for x in data])
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want)


_SUMS = [np.sum, np.mean, np.var, np.std, np.nansum, np.nanmean, np.nanvar, np.nanstd,
         np.add.reduce, np.average, np.trapezoid, np.linalg.vector_norm,
         lambda x: x.sum(), lambda x: x.mean(keepdims=True), lambda x: np.sum(x, axis=-1)]


@pytest.mark.parametrize("op", _SUMS, ids=lambda f: getattr(f, "__name__", "method"))
@pytest.mark.parametrize("in_axes", [1, -1])
def test_sums_keep_pairwise_accuracy_with_the_batch_axis_innermost(op, in_axes):
    """With the batch axis innermost in memory, the batched sum's inner loop ran over the
    batch, adding each example's elements one after the other: float16 ones stopped at 2048
    (the loop gives 16384) and float32 lost digits. Each example is now summed as the loop
    sums it: bit for bit for 1-d examples."""
    rng = np.random.default_rng(3)
    ones = np.ones((16384, 3), np.float16)
    normal = rng.normal(size=(50_000, 4)).astype(np.float32)
    for xs in (ones, normal):
        got = bt.vmap(op, in_axes=in_axes)(xs)
        want = np.stack([op(x) for x in np.moveaxis(xs, in_axes, 0)])
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("axis", [None, 0, 1])
def test_sums_of_2d_examples_with_the_batch_axis_innermost(axis):
    xs = np.random.default_rng(4).normal(size=(300, 200, 3)).astype(np.float32)
    got = bt.vmap(lambda x: np.sum(x, axis=axis), in_axes=2)(xs)
    want = np.stack([np.sum(xs[..., i], axis=axis) for i in range(3)])
    np.testing.assert_array_equal(got, want)
    half = np.ones((8, 4096, 3), np.float16)  # 32768 ones per example: pairwise is exact
    got = bt.vmap(lambda x: np.sum(x, axis=axis), in_axes=-1)(half)
    np.testing.assert_array_equal(got, np.stack([np.sum(half[..., i], axis=axis)
                                                 for i in range(3)]))


@pytest.mark.parametrize("op", [
    np.average, lambda x: np.average(x, weights=np.arange(1.0, 5.0)),
    lambda x: np.average(x, axis=0, returned=True), lambda x: np.nanpercentile(x, 30),
    lambda x: np.nanquantile(x, [0.2, 0.4]), lambda x: np.nanquantile(x, [[0.2], [0.4]]),
    np.nanmedian, np.median, lambda x: np.percentile(x, [10, 90]),
])
def test_batch_size_zero_gives_the_examples_shape_and_dtype(op):
    """np.average divided by zero and the nan-quantiles went to the loop fallback, which
    cannot run without an example; they now give an empty batch of the right shape."""
    one = op(np.zeros(4))
    got = bt.vmap(op)(np.zeros((0, 4)))
    for g, w in zip(got if isinstance(got, tuple) else (got,),
                    one if isinstance(one, tuple) else (one,)):
        w = np.asarray(w)
        assert g.shape == (0,) + w.shape and g.dtype == w.dtype


@pytest.mark.parametrize("op", [np.percentile, np.quantile])
@pytest.mark.parametrize("method", ["linear", "hazen", "nearest"])
@pytest.mark.parametrize("q_dtype", [np.float64, np.float32])
def test_batched_q_gives_the_loops_dtype_on_this_numpy(op, method, q_dtype):
    """A batched q runs NumPy's formulas in the rule; whether NumPy's own result keeps a
    float32 sample's dtype with a float64 q differs between NumPy releases (2.4.0 keeps it,
    2.4.6 promotes): the rule asks NumPy, so the dtype is the loop's on every release."""
    rng = np.random.default_rng(3)
    xs = rng.normal(size=(4, 3, 5)).astype(np.float32)
    scale = 100 if op is np.percentile else 1
    qs = (rng.uniform(0, 1, size=(4, 2)) * scale).astype(q_dtype)
    f = lambda x, q: op(x, q, axis=-1, method=method)  # noqa: E731
    want = np.stack([f(x, q) for x, q in zip(xs, qs)])
    got = bt.vmap(f)(xs, qs)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-6)
