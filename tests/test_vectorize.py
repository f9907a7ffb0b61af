"""``np.vectorize`` objects called on batched values (``batchtensor.rules.vectorize``): with
``otypes`` one call on the whole batch, else the per-op loop; always the loop's result."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from loop_reference import assert_same, loop_vmap, on_threads, strict_vmap

import batchtensor as bt
from batchtensor import conversions

RNG = np.random.default_rng(5)
ORIGINAL_CALL = np.vectorize.__call__


def _clipped(a, b):
    return a * 2.0 + b if a > 0 else -1.0


CLIPPED = np.vectorize(_clipped, otypes="d")
INT_OUT = np.vectorize(lambda a: int(a > 0.5), otypes=[np.int32])
TWO_OUT = np.vectorize(lambda a, b: (a + b, a > b), otypes="d?")
KEYWORD = np.vectorize(lambda a, *, scale: a * scale, otypes="d")
EXCLUDED = np.vectorize(lambda a, table: table[int(a > 0)], otypes="d", excluded={1})
NO_OTYPES = np.vectorize(lambda a: a if a > 0 else 0)  # int or float: each example's own
SIGNATURE = np.vectorize(lambda v: v.sum(), signature="(n)->()", otypes="d")

VECTORISED = {
    "otypes": lambda x, y: CLIPPED(x, y),
    "scalar and array": lambda x, y: CLIPPED(x[0], y),
    "int otypes": lambda x, y: INT_OUT(x + y),
    "two outputs": lambda x, y: TWO_OUT(x, y),
    "keyword argument": lambda x, y: KEYWORD(x, scale=y),
    "unbatched excluded": lambda x, y: EXCLUDED(x, np.array([1.5, -2.0])) + y,
}
LOOPED = {
    "no otypes": lambda x, y: NO_OTYPES(x - y),
    "signature": lambda x, y: SIGNATURE(x * y),
    "batched excluded": lambda x, y: EXCLUDED(x, y),
}


@pytest.mark.parametrize("name", sorted(VECTORISED))
@pytest.mark.parametrize("in_axes", [0, -1, (0, None), (None, 0)])
def test_with_otypes_one_call_serves_the_batch(name, in_axes):
    f = VECTORISED[name]
    xs, ys = RNG.normal(size=(5, 4)), RNG.normal(size=(5, 4))
    if in_axes == -1:
        xs, ys = xs.T, ys.T
    args = [xs, ys]
    if isinstance(in_axes, tuple):
        args = [a if ax is not None else a[0] for a, ax in zip(args, in_axes)]
    assert_same(strict_vmap(f, in_axes)(*args), loop_vmap(f, in_axes)(*args))


@pytest.mark.parametrize("n", [0, 1])
def test_small_batches(n):
    f = VECTORISED["otypes"]
    xs, ys = RNG.normal(size=(n, 3)), RNG.normal(size=(n, 3))
    got = strict_vmap(f)(xs, ys)
    if n:
        assert_same(got, loop_vmap(f)(xs, ys))
    else:
        assert got.shape == (0, 3) and got.dtype == np.float64


def test_zero_d_examples_give_arrays_as_numpy_does():
    xs = RNG.normal(size=6)
    got = strict_vmap(lambda x: CLIPPED(x, 1.0))(xs)
    assert_same(got, loop_vmap(lambda x: CLIPPED(x, 1.0))(xs))
    # each example's result is a 0-d array (NumPy's asanyarray), so += writes into it
    bump = lambda x: (lambda r: (r.__iadd__(1.0), r)[1])(CLIPPED(x, 1.0))  # noqa: E731
    assert_same(strict_vmap(bump)(xs), loop_vmap(bump)(xs))


def test_nested_vmap():
    f = VECTORISED["scalar and array"]
    xs, ys = RNG.normal(size=(3, 2, 4)), RNG.normal(size=(3, 2, 4))
    with warnings.catch_warnings():
        warnings.simplefilter("error", bt.PerformanceWarning)
        got = bt.vmap(bt.vmap(f), fallback="error")(xs, ys)
    assert_same(got, loop_vmap(loop_vmap(f))(xs, ys))


@pytest.mark.parametrize("name", sorted(LOOPED))
def test_per_example_output_types_take_the_per_op_loop(name):
    f = LOOPED[name]
    xs = RNG.normal(size=(5, 4))
    xs[:, 0] = np.where(np.arange(5) % 2, 1.0, -1.0)  # first elements: some int, some float
    ys = RNG.normal(size=(5, 4))
    with pytest.raises(bt.BatchingError, match="vectorize"):
        bt.vmap(f, fallback="error")(xs, ys)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", bt.PerformanceWarning)
        got = bt.vmap(f)(xs, ys)
    assert_same(got, loop_vmap(f)(xs, ys))


def test_scipy_distribution_through_its_vectorize():
    """``skewnorm.cdf`` corrects Boost's left tail with the generic ``_cdf``, which integrates
    the pdf per element through ``vectorize(self._cdf_single, otypes='d')``."""
    stats = pytest.importorskip("scipy.stats", reason="SciPy is a test extra")
    f = lambda x, a: stats.skewnorm.cdf(x, a)  # noqa: E731
    # two points per example in the corrected tail (a selection of one size: the ragged
    # selection of sizes that differ is the ragged machinery's)
    xs = np.array([-12.0, -10.0, 0.0, 1.0, 2.0, 3.0]) + 0.1 * np.arange(3)[:, None]
    a = np.array([[4.0], [0.5], [3.0]]) * np.ones((3, 6))
    assert_same(strict_vmap(f)(xs, a), loop_vmap(f)(xs, a))
    grid, ga = xs[:, None, :] + [[0.0], [0.05]], a[:, None, :].repeat(2, 1)
    assert_same(strict_vmap(bt.vmap(f))(grid, ga), loop_vmap(loop_vmap(f))(grid, ga))


def test_numpy_is_pristine_outside_vmap_and_on_threads():
    assert np.vectorize.__call__ is ORIGINAL_CALL and conversions.pristine()
    f = VECTORISED["otypes"]
    xs, ys = RNG.normal(size=(8, 5, 3)), RNG.normal(size=(8, 5, 3))
    results: list = [None] * 8

    def work(i):
        for _ in range(5):
            results[i] = bt.vmap(f, fallback="error")(xs[i], ys[i])
            CLIPPED(xs[i], ys[i])  # plain arrays, on a thread with or without a level

    on_threads(work)
    for i in range(8):
        assert_same(results[i], loop_vmap(f)(xs[i], ys[i]))
    with pytest.raises(ZeroDivisionError):
        bt.vmap(lambda x: np.vectorize(lambda a: a / 0, otypes="d")(x.astype(int)))(
            np.ones((2, 2)))
    assert np.vectorize.__call__ is ORIGINAL_CALL and conversions.pristine()
