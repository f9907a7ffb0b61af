"""``return float(score)``: a Python scalar the function returns as it is stays vectorised.

The loop stacks the examples' Python scalars (float64, int64, complex128). Where the scalar goes
straight back to vmap, vmap returns the batched value cast so, with no rerun; anything else done
with the scalar still reruns the function per example. Every case is compared with the loop,
and the tests that expect no rerun turn the rerun's warning into an error."""

from __future__ import annotations

import contextlib
import functools
import math
import warnings

import numpy as np
import pytest
from loop_reference import assert_same, loop_vmap

import batchtensor as bt

RNG = np.random.default_rng(11)


@contextlib.contextmanager
def no_rerun():
    with warnings.catch_warnings():
        warnings.simplefilter("error", bt.PerformanceWarning)
        yield


def _mse(a, b):
    return float(np.mean((a - b) ** 2))


def _decorated(func):
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        with contextlib.nullcontext(), contextlib.nullcontext():
            return func(*args, **kwargs)
    return wrapper


def _in_try(x):
    try:
        return float(x.sum())
    except ValueError:
        return 0.0


VECTORISED = {
    "float of a reduction": (lambda x: float(x.sum()), "float64"),
    "float of float32": (lambda x: float(x.astype(np.float32).max()), "float64"),
    "float of an int": (lambda x: float((x > 0).sum()), "float64"),
    "float of a bool": (lambda x: float(x[0] > 0), "float64"),
    "int of an int": (lambda x: int(np.argmax(x)), "int64"),
    "int of an int32": (lambda x: int(np.argmax(x).astype(np.int32)), "int64"),
    "complex": (lambda x: complex(x[0] + 1j * x[1]), "complex128"),
    "item of a float": (lambda x: x.mean().item(), "float64"),
    "item of an int": (lambda x: np.argmin(x).item(), "int64"),
    "through a decorator with two with blocks": (_decorated(lambda x: float(x.min())), "float64"),
    "inside try": (_in_try, "float64"),
    "a function of two arguments": (None, "float64"),
}


@pytest.mark.parametrize("name", VECTORISED)
@pytest.mark.parametrize("size", [1, 4])
def test_a_returned_python_scalar_stays_vectorised(name, size):
    f, dtype = VECTORISED[name]
    xs = RNG.normal(size=(size, 5))
    args, in_axes = ((xs,), 0) if f is not None else ((xs, xs[::-1].copy()), 0)
    f = f or _mse
    with no_rerun():
        got = bt.vmap(f, in_axes)(*args)
    want = loop_vmap(f, in_axes)(*args)
    assert got.dtype == np.dtype(dtype)
    assert_same(got, want)


def test_a_function_the_interpreter_has_specialised_stays_vectorised():
    """Python 3.11 specialises a hot call: ``PRECALL`` then makes the call, and the frame
    stands there, not on ``CALL`` (the loop runs the function before vmap does here)."""
    def f(x):
        return float(x.sum())

    xs = RNG.normal(size=(4, 5))
    want = loop_vmap(f)(xs)
    for _ in range(50):
        loop_vmap(f)(xs)
    with no_rerun():
        assert_same(bt.vmap(f)(xs), want)


def test_real_sklearn_metrics_stay_vectorised():
    metrics = pytest.importorskip("sklearn.metrics", reason="scikit-learn is a test extra")
    a, b = RNG.normal(size=(2, 6, 9))
    for fn in (metrics.mean_squared_error, metrics.mean_absolute_error, metrics.max_error):
        with no_rerun():
            got = bt.vmap(fn)(a, b)
        assert_same(got, loop_vmap(fn)(a, b))


def _finally(x):
    try:
        return float(x.sum())
    finally:
        np.add(x, 1)  # code between the conversion and the return


#: this module calls ``float`` and uses the name for nothing else, so vmap learns it from the
#: first refusal and its next pass gives ``float(x)`` a weak float per example (batchtensor.pyfloat)
WEAK = {
    "used after": lambda x: float(x.sum()) + 1.0,
    "in a tuple": lambda x: (float(x.sum()), float(x.max())),
    "in a list": lambda x: [float(v) for v in x[:2]],
    "stored first": lambda x: (lambda s: s)(float(x.sum())) * 2,
    "finally": _finally,
    "a callable named float": lambda x: _float(x.sum()),
    "int of a float": lambda x: int(x.sum()),  # (a weak int: batchtensor/pyfloat.py)
    "math.sqrt of a batched value": lambda x: math.sqrt(x.sum() ** 2),
}


@pytest.mark.parametrize("name", WEAK)
def test_a_python_scalar_used_otherwise_is_a_weak_float(name):
    f = WEAK[name]
    xs = RNG.normal(size=(4, 5))
    with no_rerun():
        got = bt.vmap(f)(xs)
    assert_same(got, loop_vmap(f)(xs))


RERUN = {
    "an int used where it refuses": lambda x: int(x.sum()) // 2,
    "item with an index": lambda x: x.item(0),
    # math.floor's compiled code calls float() inside a call that is returned as it is: the
    # stand-in must never reach it (it would compute with a NaN)
    "compiled code converting inside a returned call": lambda x: math.floor(x.sum() ** 2),
    "a weak float used where it refuses": lambda x: float(x.sum()) // 2,
}


def _float(v):  # a function of another name, which converts: not the builtin
    return float(v) * 2


@pytest.mark.parametrize("name", RERUN)
def test_a_python_scalar_used_otherwise_reruns_as_before(name):
    f = RERUN[name]
    xs = RNG.normal(size=(4, 5))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # float() of a 1-d array
        with pytest.warns(bt.PerformanceWarning, match="reruns once per example"):
            got = bt.vmap(f)(xs)
        want = loop_vmap(f)(xs)
    assert_same(got, want)


def test_nested_vmaps_and_an_outer_value():
    xs = RNG.normal(size=(3, 4, 5))
    with no_rerun():
        got = bt.vmap(bt.vmap(lambda x: float(x.sum())))(xs)
    assert_same(got, loop_vmap(loop_vmap(lambda x: float(x.sum())))(xs))

    def outer(x, ys):  # the inner function converts a value of the outer level: a rerun there
        return bt.vmap(lambda y: float(x.sum()) // 1)(ys)

    with pytest.warns(bt.PerformanceWarning):
        got = bt.vmap(outer)(xs[:, 0], xs)
    assert_same(got, loop_vmap(outer)(xs[:, 0], xs))


def test_with_no_example_the_result_is_empty_and_float64():
    got = bt.vmap(lambda x: float(x.sum()))(np.ones((0, 3), np.float32))
    assert got.shape == (0,) and got.dtype == np.float64


def test_fallback_error_still_refuses_what_is_not_returned():
    with pytest.raises(TypeError, match="float"):  # (examples whose sums differ)
        bt.vmap(lambda x: float(x.sum()) // 2, fallback="error")(np.arange(6.0).reshape(2, 3))
    got = bt.vmap(lambda x: float(x.sum()), fallback="error")(np.ones((2, 3)))
    assert_same(got, np.full(2, 3.0))


def test_the_stand_in_never_outlives_the_call():
    xs = RNG.normal(size=(3, 4))
    out = bt.vmap(lambda x: float(x.sum()))(xs)
    assert type(out) is np.ndarray and not np.isnan(out).any()


# ---- a value every example holds alike converts to that value -----------------------------------
def _counted(x):
    n = np.count_nonzero(np.isfinite(x))  # the same in every example without a NaN
    head = x[: n // 2]  # a batched slice bound
    return head.sum() * float(n) + np.zeros(int(n)).size + len(range(n)) + n.item()


def test_a_value_every_example_holds_alike_converts_without_a_rerun():
    xs = RNG.normal(size=(4, 6))
    with warnings.catch_warnings():
        warnings.simplefilter("error", bt.PerformanceWarning)
        got = bt.vmap(_counted, fallback="error")(xs)
    assert_same(got, loop_vmap(_counted)(xs))


def test_values_that_differ_per_example_still_rerun():
    xs = RNG.normal(size=(4, 6))
    xs[1, 2] = np.nan  # example 1 counts 5
    with pytest.raises((TypeError, bt.BatchingError)):  # (a slice bound: the per-op loop)
        bt.vmap(_counted, fallback="error")(xs)
    with pytest.warns(bt.PerformanceWarning, match="reruns once per example"):
        got = bt.vmap(_counted)(xs)
    assert_same(got, loop_vmap(_counted)(xs))


@pytest.mark.parametrize("value", [np.nan, -0.0])
def test_nan_is_alike_and_minus_zero_is_not_zero(value):
    xs = np.zeros((3, 2))
    xs[0, 0] = value  # NaN everywhere is one value; -0.0 beside 0.0 is not (1 / x differs)
    if np.isnan(value):
        xs[:, 0] = np.nan
    f = lambda x: 1.0 / float(x[0]) if float(x[0]) == float(x[0]) else 0.0  # noqa: E731
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        if np.isnan(value):
            assert_same(bt.vmap(f, fallback="error")(xs), loop_vmap(f)(xs))
        else:
            with pytest.raises(TypeError, match="float"):
                bt.vmap(f, fallback="error")(xs)


def test_one_example_reruns_as_before():
    xs = RNG.normal(size=(1, 6))
    with pytest.raises((TypeError, bt.BatchingError)):
        bt.vmap(_counted, fallback="error")(xs)


def test_in_a_group_pass_only_the_followed_examples_count():
    def f(x):
        n = np.count_nonzero(x > 0)
        if x[0] > 0:  # the examples disagree: groups; those that follow agree on n
            return x[: int(n)].sum()
        return -x.sum()

    xs = np.abs(RNG.normal(size=(8, 5))) + 0.1
    xs[::2, 0] *= -1  # examples 0, 2, 4, 6 take the other branch
    xs[::2, 1] *= -1  # and count differently
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", bt.PerformanceWarning)
        got = bt.vmap(f)(xs)
    assert_same(got, loop_vmap(f)(xs))


def test_nested_a_value_every_example_holds_alike_converts_without_a_rerun():
    # in a nested vmap the inner level's value wraps the outer level's: every example of both
    # levels holding one value converts to it (a slice bound, int(), float(), range, .item())
    grid = RNG.normal(size=(2, 3, 6))
    got = bt.vmap(bt.vmap(_counted), fallback="error")(grid)
    assert_same(got, loop_vmap(loop_vmap(_counted))(grid))
    got = bt.vmap(bt.vmap(_counted), in_axes=-1, fallback="error")(
        np.ascontiguousarray(np.moveaxis(grid, 0, -1)))
    assert_same(got, loop_vmap(loop_vmap(_counted))(grid))
    got = bt.vmap(bt.vmap(_counted, in_axes=-1), fallback="error")(np.moveaxis(grid, 1, -1))
    assert_same(got, loop_vmap(loop_vmap(_counted))(grid))


def test_nested_a_value_alike_at_the_inner_level_only_converts_at_the_outer():
    # the inner level's examples agree, the outer level's do not: the conversion goes on at
    # the outer level, which reruns per example there (its examples differ)
    grid = RNG.normal(size=(2, 3, 6))
    grid[1, :, 2] = np.nan  # every inner example of outer example 1 counts 5, of 0 counts 6
    with pytest.raises((TypeError, bt.BatchingError)):
        bt.vmap(bt.vmap(_counted), fallback="error")(grid)
    with pytest.warns(bt.PerformanceWarning, match="reruns once per example"):
        got = bt.vmap(bt.vmap(_counted))(grid)
    assert_same(got, loop_vmap(loop_vmap(_counted))(grid))
    grid[0, 1, 3] = np.nan  # and now the inner examples of outer example 0 differ
    with pytest.warns(bt.PerformanceWarning, match="reruns once per example"):
        got = bt.vmap(bt.vmap(_counted))(grid)
    assert_same(got, loop_vmap(loop_vmap(_counted))(grid))
