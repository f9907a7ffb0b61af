"""scipy.ndimage filters with ``output=`` an array the function made (``out = np.zeros(x.shape);
gaussian_filter(x, sigma, output=out)``, scikit-image's ``threshold_local``): the filter runs on
the batch with the array's dtype, the result goes into the array (which becomes batched, as the
loop's fresh array per example) and the array itself is returned. Each case against the loop."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from loop_reference import LAYOUTS, assert_same, laid_out, loop_vmap, strict_vmap

import batchtensor as bt

ndimage = pytest.importorskip("scipy.ndimage")

RNG = np.random.default_rng(7)


def into(filter_call, dtype):
    """``f(x)`` that fills ``out = np.zeros(x.shape, dtype)`` through ``filter_call`` and
    returns the filter's result, the array, and whether the two are one object."""
    def f(x):
        out = np.zeros(x.shape, dtype=dtype)
        res = filter_call(x, out)
        return res, out, np.bool_(res is out)
    return f


CALLS = {
    "gaussian_filter": lambda x, out: ndimage.gaussian_filter(x, 1.0, output=out),
    "gaussian_filter positional": lambda x, out: ndimage.gaussian_filter(x, 0.7, 0, out),
    "uniform_filter": lambda x, out: ndimage.uniform_filter(x, 3, output=out, mode="constant"),
    "median_filter": lambda x, out: ndimage.median_filter(x, 3, output=out),
    "gaussian_filter1d positional": lambda x, out: ndimage.gaussian_filter1d(x, 1.5, -1, 0, out),
    "convolve1d": lambda x, out: ndimage.convolve1d(x, [1.0, 2.0, 1.0], axis=0, output=out),
    "gaussian_gradient_magnitude":
        lambda x, out: ndimage.gaussian_gradient_magnitude(x, 1.0, out),
}


@pytest.mark.parametrize("name", sorted(CALLS))
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_output_an_array_the_function_made_runs_vectorised(name, dtype):
    f = into(CALLS[name], dtype)
    xs = RNG.normal(size=(4, 6, 5))
    assert_same(strict_vmap(f)(xs), loop_vmap(f)(xs))


@pytest.mark.parametrize("layout", LAYOUTS)
def test_every_layout(layout):
    f = into(CALLS["gaussian_filter"], np.float32)
    xs, ax = laid_out(RNG.normal(size=(3, 5, 4)), layout)
    assert_same(strict_vmap(f, ax)(xs), loop_vmap(f, ax)(xs))


@pytest.mark.parametrize("shape", [(1, 5, 4), (3, 0, 4), (3, 7)])
def test_batch_of_one_size_zero_axes_and_one_dimension(shape):
    f = into(CALLS["uniform_filter"], np.float64)
    xs = RNG.normal(size=shape)
    assert_same(bt.vmap(f)(xs), loop_vmap(f)(xs))


def test_batch_of_zero_gives_the_empty_stack_of_the_examples_results():
    f = into(CALLS["uniform_filter"], np.float32)
    one = loop_vmap(f)(RNG.normal(size=(1, 5, 4)))
    got = bt.vmap(f)(np.zeros((0, 5, 4)))
    assert [(g.shape, g.dtype) for g in got] == [((0,) + w.shape[1:], w.dtype) for w in one]


@pytest.mark.parametrize("dtype", [np.int32, np.uint8, np.float32])
def test_integer_inputs_and_outputs(dtype):
    f = into(CALLS["gaussian_filter"], dtype)
    xs = RNG.integers(0, 200, size=(3, 6, 6)).astype(np.int64)
    assert_same(strict_vmap(f)(xs), loop_vmap(f)(xs))


def test_unmapped_input_with_a_batched_sigma_runs_per_example():
    """Only ``input`` is batched by the rule: a batched ``sigma`` goes to the per-op loop,
    with ``output=`` the array's dtype, and the stacked results go into the array (the loop
    given the array itself would write every example into it)."""
    def f(x, s):
        out = np.zeros(x.shape)
        ndimage.gaussian_filter(x, s, output=out)
        return out

    x = RNG.normal(size=(5, 4))
    s = np.array([0.5, 1.0, 2.0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", bt.PerformanceWarning)  # (the per-op loop's)
        got = bt.vmap(f, in_axes=(None, 0))(x, s)
    assert_same(got, loop_vmap(f, (None, 0))(x, s))


def test_nested_vmaps():
    f = into(CALLS["gaussian_filter"], np.float64)
    grid = RNG.normal(size=(2, 3, 5, 4))
    assert_same(bt.vmap(bt.vmap(f))(grid), loop_vmap(loop_vmap(f))(grid))


def test_the_result_is_the_array_and_a_write_through_it_is_the_examples():
    def f(x):
        out = np.zeros(x.shape)
        res = ndimage.gaussian_filter(x, 1.0, output=out)
        res[0, 0] = -1.0  # the same array: out sees it
        return out

    xs = RNG.normal(size=(3, 5, 4))
    assert_same(strict_vmap(f)(xs), loop_vmap(f)(xs))


def test_output_of_another_shape_gives_the_loops_error():
    def f(x):
        out = np.zeros(x.shape[:1] + (x.shape[1] + 1,))
        return ndimage.gaussian_filter(x, 1.0, output=out)

    xs = RNG.normal(size=(3, 5, 4))
    with pytest.raises(RuntimeError) as loop_error:
        loop_vmap(f)(xs)
    with pytest.warns(bt.PerformanceWarning), pytest.raises(RuntimeError) as got:
        bt.vmap(f)(xs)
    assert str(got.value) == str(loop_error.value)


def test_output_the_caller_shares_with_every_example_is_the_clear_error():
    shared = np.zeros((5, 4))
    xs = RNG.normal(size=(3, 5, 4))
    with pytest.raises(bt.SharedWriteError):
        bt.vmap(lambda x: ndimage.gaussian_filter(x, 1.0, output=shared))(xs)
    np.testing.assert_array_equal(shared, 0.0)


def test_output_dtype_not_an_array_is_unchanged():
    def f(x):
        return ndimage.gaussian_filter(x, 1.0, output=np.float32)

    xs = RNG.normal(size=(3, 5, 4))
    assert_same(strict_vmap(f)(xs), loop_vmap(f)(xs))
