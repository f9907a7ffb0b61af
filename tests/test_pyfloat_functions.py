"""``float(x)`` and ``math.<name>(x)`` of a batched value in a function vmap learnt on its own
(batchtensor/pyfloat.py, ``_Patch``): its code is swapped for a rewritten copy for the length
of each pass, the module's globals never change. Against the per-example loop, bit for bit."""

from __future__ import annotations

import functools
import math
import warnings

import numpy as np
import pyfloat_functions as fns
import pytest
from loop_reference import (assert_same, assert_same_bits, loop_vmap, no_rerun, on_threads,
                            nested_bit_exact, random_examples, vectorised_bit_exact)

import batchtensor as bt

RNG = np.random.default_rng(11)
DTYPES = [np.float64, np.float32, np.int64, np.float16]


_xs = functools.partial(random_examples, RNG)  # (this file's own seeded draws)


def _reruns_like_the_loop(f, *args):
    want = loop_vmap(f)(*args)
    with pytest.warns(bt.PerformanceWarning, match="reruns once per example"):
        got = bt.vmap(f)(*args)
    assert_same_bits(got, want)


def _pristine():
    """The module's globals and every function's code as they were imported."""
    assert "float" not in vars(fns) and vars(fns)["math"] is math
    for name, f in vars(fns).items():
        if callable(f) and getattr(f, "__module__", None) == fns.__name__:
            assert f.__code__.co_consts == compile_consts(name), name


_CONSTS: dict = {}


def compile_consts(name):
    """The constants of ``name``'s code compiled from the module's source (no object of
    batchtensor's among them)."""
    if not _CONSTS:
        with open(fns.__file__) as f:
            top = compile(f.read(), fns.__file__, "exec")
        for c in top.co_consts:
            if hasattr(c, "co_name"):
                _CONSTS[c.co_name] = c.co_consts
    return _CONSTS[name]


# ---- float() in a function whose module uses the name otherwise ------------------------------
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("n", [1, 3])
@pytest.mark.parametrize("name", ["float_as_value", "calls_a_helper", "in_a_comprehension"])
def test_float_in_a_function_stays_vectorised(name, dtype, n):
    f = getattr(fns, name)
    vectorised_bit_exact(f, _xs(n, dtype))
    _pristine()


def test_the_builtin_float_is_what_other_uses_see():
    """``isinstance(v, float)``, ``dtype=float``, ``float.fromhex`` in the learnt function
    read the builtin: only the calls are rewritten."""
    xs = _xs(3)
    vectorised_bit_exact(fns.float_as_value, xs)
    got = no_rerun(fns.float_as_value, xs)
    assert got[2].dtype == np.float64 and got[1].dtype == np.bool_ and got[1].all()


def test_transposed_and_unbatched_arguments():
    xs = _xs(3).T.copy()
    vectorised_bit_exact(fns.roots, xs, in_axes=1)
    y = _xs(1)[0]
    vectorised_bit_exact(lambda x, c: fns.float_as_value(x + c), _xs(3), y,
                              in_axes=(0, None))


def test_batch_size_zero_after_learning():
    vectorised_bit_exact(fns.float_as_value, _xs(2))
    got = bt.vmap(fns.float_as_value)(_xs(0))
    assert got[0].shape == (0,) and got[0].dtype == np.float64
    vectorised_bit_exact(fns.roots, _xs(2))
    assert bt.vmap(fns.roots)(_xs(0))[0].shape == (0,)


def test_nested_vmaps():
    xs = _xs(6, np.float32).reshape(2, 3, 5)
    for f in (fns.float_as_value, fns.roots, fns.logs, fns.in_a_comprehension):
        nested_bit_exact(f, xs)
    _pristine()


# ---- math ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("n", [1, 4])
@pytest.mark.parametrize("name", ["roots", "logs", "tests"])
def test_math_stays_vectorised(name, dtype, n):
    vectorised_bit_exact(getattr(fns, name), _xs(n, dtype))


def test_math_of_special_values():
    xs = _xs(5)
    xs[:, 0] = [np.nan, -0.0, np.inf, 0.0, 1e-310]
    xs[:, 1] = [np.inf, -np.inf, np.nan, 700.0, -750.0]
    xs[:, 2] = [np.inf, np.nan, 1e300, -0.0, 2.0]
    for f in (fns.sqrt_of_each, fns.tests):
        vectorised_bit_exact(f, xs)
    vectorised_bit_exact(fns.exp_of_each, xs[:, 1:])
    vectorised_bit_exact(fns.log_of_each, np.abs(xs[[0, 2, 4]]))


@pytest.mark.parametrize("f, bad, error", [
    (fns.sqrt_of_each, -1.0, ValueError), (fns.log_of_each, 0.0, ValueError),
    (fns.log_of_each, -2.0, ValueError), (fns.exp_of_each, 1000.0, OverflowError)])
def test_math_raises_as_the_loop_where_one_example_does(f, bad, error):
    xs = np.abs(_xs(3)) + 0.5
    vectorised_bit_exact(f, xs)  # (learnt: the other examples stay vectorised)
    xs[1, 0] = bad
    with pytest.raises(error):
        loop_vmap(f)(xs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", bt.PerformanceWarning)
        with pytest.raises(error):
            bt.vmap(f)(xs)
    _pristine()


@pytest.mark.parametrize("name", ["math_two_arguments", "math_as_a_value", "math_then_power"])
def test_math_uses_it_cannot_prove_rerun(name):
    _reruns_like_the_loop(getattr(fns, name), _xs(3))
    _pristine()


# ---- the module and the functions after the passes ------------------------------------------
def test_pristine_after_an_error_and_after_a_rerun():
    xs = _xs(3)
    vectorised_bit_exact(fns.roots, xs)
    with pytest.raises(TypeError):
        bt.vmap(fns.math_then_power, fallback="error")(xs)
    _pristine()
    assert fns.roots(xs[0])[0] == loop_vmap(fns.roots)(xs[:1])[0][0]
    assert type(fns.float_as_value(xs[0])[0]) is float


def test_threads_outside_vmap_see_the_builtins():
    xs = _xs(3)
    want = loop_vmap(fns.roots)(xs)
    vectorised_bit_exact(fns.roots, xs)

    def through(x):  # (another vmapped function, learnt on its own: the same patch of roots)
        return fns.roots(x)

    def run(i):
        for _ in range(20):
            if i % 3 == 1:
                assert_same_bits(no_rerun(fns.roots, xs), want)
            elif i % 3 == 2:
                assert_same_bits(bt.vmap(through, fallback="silent")(xs), want)
            else:  # (may run the rewritten code: its float and math give the builtins')
                r = fns.roots(xs[0])
                assert type(r[0]) is float and r[0] == math.sqrt(float(xs[0].sum() ** 2))

    on_threads(run)
    _pristine()


# ---- real library functions ---------------------------------------------------------------------
def test_sklearn_classification_metrics_stay_vectorised():
    metrics = pytest.importorskip("sklearn.metrics", reason="scikit-learn is a test extra")
    import sklearn.metrics._classification as classification
    # (its own draws, whatever ran before: some labels make class_likelihood_ratios branch
    # per example, which this test is not about)
    rng = np.random.default_rng(11)
    a, b = rng.integers(0, 2, (3, 12)), rng.integers(0, 2, (3, 12))
    code = classification.precision_recall_fscore_support.__wrapped__.__code__
    for f in (metrics.f1_score, metrics.precision_score, metrics.zero_one_loss,
              metrics.class_likelihood_ratios):
        vectorised_bit_exact(f, a, b)
    assert "float" not in vars(classification)
    assert classification.precision_recall_fscore_support.__wrapped__.__code__ is code


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_scipy_correlation_and_boxcox_llf_stay_vectorised(dtype):
    distance = pytest.importorskip("scipy.spatial.distance", reason="SciPy is a test extra")
    from scipy import stats
    u, v = _xs(3, dtype), _xs(3, dtype)
    for f in (distance.cosine, distance.correlation):
        vectorised_bit_exact(f, u, v)
    data = np.abs(_xs(1, dtype, 12)[0]) + 0.1
    vectorised_bit_exact(stats.boxcox_llf, np.array([0.5, -1.0, 2.0], dtype), data,
                              in_axes=(0, None))


# ---- int() --------------------------------------------------------------------------------------
INT_DTYPES = [np.int64, np.int32, np.uint8, np.float64, np.float32]


@pytest.mark.parametrize("dtype", INT_DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("n", [1, 4])
@pytest.mark.parametrize("name", ["int_arithmetic", "int_counts", "int_of_floats",
                                  "int_common_count"])
def test_int_stays_vectorised(name, dtype, n):
    if name == "int_common_count" and n == 1:
        pytest.skip("one example is no common value: np.zeros(n) reruns, which costs no more")
    xs = _xs(n, dtype)
    if name == "int_counts":
        xs[:, :2] = np.abs(xs[:, :2]) % 50 + 1  # (no example takes the early return)
    vectorised_bit_exact(getattr(fns, name), xs)


def test_int_of_floats_truncates_toward_zero():
    xs = np.array([[2.7, -2.7, 0], [-0.5, 0.5, 0], [-0.0, 1e18, 0], [4.5e15, -7.9, 0]])
    vectorised_bit_exact(fns.int_of_floats, xs)


def test_int_of_large_values():
    xs = np.zeros((3, 5), np.int64)
    xs[:, 0] = [2 ** 62, -(2 ** 62), 2 ** 53 + 1]  # exact as ints, not as floats
    xs[:, 1] = [1, -1, 3]
    want = loop_vmap(fns.int_arithmetic)(xs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", bt.PerformanceWarning)
        assert_same_bits(bt.vmap(fns.int_arithmetic)(xs), want)
    xs[:, 0] = [2 ** 31, -(2 ** 31), 2 ** 40]  # (a * b stays in range)
    vectorised_bit_exact(fns.int_arithmetic, xs)
    u = np.array([[2 ** 64 - 1, 1], [3, 1]], np.uint64)  # beyond int64: the builtin's, a rerun
    want = loop_vmap(fns.int_of_floats)(u)
    with pytest.warns(bt.PerformanceWarning, match="reruns once per example"):
        assert_same(bt.vmap(fns.int_of_floats)(u), want)


@pytest.mark.parametrize("name", ["int_overflowing", "int_floor_divided", "int_as_index"])
def test_int_uses_it_cannot_prove_rerun(name):
    xs = _xs(3, np.int64)
    # (examples whose int * 2 ** 62 leaves int64: drawn at random, |x[0]| < 2 would fit, and
    # then the vectorised pass is right and nothing reruns; which values the shared RNG gives
    # depends on the tests that ran before on the worker)
    xs[:, 0] = [3, -2, 5]
    _reruns_like_the_loop(getattr(fns, name), xs)
    _pristine()


def test_int_with_an_array_reruns():
    a, xs = np.arange(4, dtype=np.int8), _xs(3, np.int64)
    want = loop_vmap(fns.int_with_array, (0, None))(xs, a)
    with pytest.warns(bt.PerformanceWarning, match="reruns once per example"):
        assert_same_bits(bt.vmap(fns.int_with_array, (0, None))(xs, a), want)


def test_int_of_nan_raises_as_the_loop():
    xs = _xs(3)
    vectorised_bit_exact(fns.int_of_nan, xs)
    xs[2, 0] = np.nan
    with pytest.raises(ValueError):
        loop_vmap(fns.int_of_nan)(xs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", bt.PerformanceWarning)
        with pytest.raises(ValueError):
            bt.vmap(fns.int_of_nan)(xs)
    _pristine()


def test_int_in_nested_vmaps_and_batch_size_zero():
    xs = _xs(6, np.int64).reshape(2, 3, 5)
    want = loop_vmap(loop_vmap(fns.int_arithmetic))(xs)
    with warnings.catch_warnings():
        warnings.simplefilter("error", bt.PerformanceWarning)
        assert_same_bits(bt.vmap(bt.vmap(fns.int_arithmetic), fallback="error")(xs), want)
    got = bt.vmap(fns.int_arithmetic)(_xs(0, np.int64))
    assert got[0].shape == (0,) and got[0].dtype == np.int64


def test_sklearn_adjusted_rand_score_stays_vectorised():
    metrics = pytest.importorskip("sklearn.metrics", reason="scikit-learn is a test extra")
    a, b = RNG.integers(0, 3, (4, 12)), RNG.integers(0, 3, (4, 12))
    vectorised_bit_exact(metrics.adjusted_rand_score, a, b)


@pytest.mark.parametrize("name", ["type_is_float", "type_in_tuple", "type_named"])
def test_a_function_that_could_ask_the_type_by_name_is_not_rewritten(name):
    f = getattr(fns, name)
    for _ in range(2):  # (nothing learnt: the second call reruns too)
        _reruns_like_the_loop(f, _xs(3, np.int64))
    _pristine()
