"""``float(x)`` of a batched value in a learnt module: a weak float per example
(batchtensor/pyfloat.py), against the per-example loop.

The functions live in pyfloat_cases.py (a module that calls ``float`` and uses the name for
nothing else, so vmap learns it) and pyfloat_not_learnt.py (``isinstance(v, float)``: never
learnt). What the weak float supports must stay vectorised (no rerun) and give the loop's values
and dtypes; every other use must rerun per example and give the loop's result."""

from __future__ import annotations

import functools
import warnings

import numpy as np
import pyfloat_cases as cases
import pyfloat_not_learnt
import pytest
from loop_reference import (assert_same, assert_same_bits, loop_vmap, no_rerun, on_threads,
                            nested_bit_exact, random_examples, vectorised_bit_exact)

import batchtensor as bt
from batchtensor import pyfloat

RNG = np.random.default_rng(7)
DTYPES = [np.float32, np.float64, np.int64, np.float16]


_xs = functools.partial(random_examples, RNG)  # (this file's own seeded draws)


def _reruns_like_the_loop(f, *args, in_axes=0):
    want = loop_vmap(f, in_axes)(*args)
    with pytest.warns(bt.PerformanceWarning, match="reruns once per example"):
        got = bt.vmap(f, in_axes)(*args)
    assert_same(got, want)


# ---- what stays vectorised --------------------------------------------------------------------
SUPPORTED = ["arithmetic", "chained", "compared", "truthy", "min_max", "in_containers",
             "with_batched", "weak_only", "with_numpy_scalars", "logged", "as_int"]
BRANCHING = {"truthy", "min_max"}  # (bool() per example: groups where the examples disagree)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("name", SUPPORTED)
@pytest.mark.parametrize("n", [1, 3])
def test_supported_uses_stay_vectorised(name, dtype, n):
    f = getattr(cases, name)
    xs = _xs(n, dtype)
    if name in BRANCHING:
        xs[:, 0] = np.abs(xs[:, 0]) + 1
        xs[:, 1] = xs[:, 0] - 1  # (x[1] < x[0] in every example: min_max's max agrees)
        xs[0, 0] = 0  # (one example 0.0, the others not: vmap's groups, no rerun)
        want = loop_vmap(f)(xs)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", bt.PerformanceWarning)
            got = bt.vmap(f)(xs)
        assert not [w for w in caught if "reruns once per example" in str(w.message)]
        assert_same_bits(got, want)
        return
    vectorised_bit_exact(f, xs)


def test_branches_on_a_weak_float_run_as_groups():
    xs = _xs(4)
    xs[:2] = np.abs(xs[:2])
    xs[2:] = -np.abs(xs[2:])
    want = loop_vmap(cases.branches)(xs)
    with pytest.warns(bt.PerformanceWarning, match="each group of examples"):
        got = bt.vmap(cases.branches)(xs)
    assert_same_bits(got, want)
    vectorised_bit_exact(cases.branches, np.abs(xs))  # examples that agree


def test_nan_and_minus_zero_per_example():
    xs = _xs(3)
    xs[0, 0], xs[1, 0] = np.nan, -0.0
    want = loop_vmap(cases.nan_and_zero)(xs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", bt.PerformanceWarning)  # (s == s disagrees: groups)
        assert_same_bits(bt.vmap(cases.nan_and_zero)(xs), want)
    vectorised_bit_exact(cases.arithmetic, xs)


ARRAY_DTYPES = [np.float16, np.float32, np.float64, np.int8, np.int64, np.uint8, np.bool_,
                np.complex64]


@pytest.mark.parametrize("adtype", ARRAY_DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("xdtype", [np.float32, np.float64])
def test_ufuncs_with_arrays_cast_the_weak_float_as_numpy(adtype, xdtype):
    """NEP 50: ``a + s`` with a float32 ``a`` is float32, with an int8 ``a`` float64; the value
    is cast to that dtype (0.1 is not float32's 0.1: the comparisons tell)."""
    xs = _xs(3, xdtype)
    xs[0, 0] = 0.1
    xs[1, 0] = 1e30 if adtype is not np.float16 else 70000.0  # beyond float16's range
    a = (RNG.normal(size=4) * 3).astype(adtype)
    a[0] = a.dtype.type(0.1) if a.dtype.kind in "fc" else a[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # (overflow in the cast: the loop too)
        f = cases.with_complex_array if adtype is np.complex64 else cases.with_array
        vectorised_bit_exact(f, xs, a, in_axes=(0, None))
        vectorised_bit_exact(cases.strong_after, xs, a, in_axes=(0, None))


@pytest.mark.parametrize("name", ["add", "subtract", "multiply", "true_divide", "less",
                                  "greater_equal", "equal", "not_equal", "maximum", "fmin",
                                  "hypot", "copysign", "nextafter", "arctan2", "logaddexp",
                                  "fmod", "heaviside"])
@pytest.mark.parametrize("adtype", [np.float16, np.float32, np.int16])
def test_binary_ufuncs_match_numpys_python_float_operand(name, adtype):
    xs = _xs(3)
    xs[:, 1] = [0.1, -1e-30, 3.4028235e38]
    a = (RNG.normal(size=6) * 5).astype(adtype)
    with np.errstate(all="ignore"):
        vectorised_bit_exact(cases.ufunc_of(name), xs, a, in_axes=(0, None))


def test_batched_float32_values_keep_their_dtype():
    xs = _xs(3, np.float32)
    got = no_rerun(cases.with_batched, xs)
    assert got[0].dtype == np.float32  # x + s: float32, as in the loop
    vectorised_bit_exact(cases.with_batched, xs)


def test_isinstance_float_is_true_as_in_the_loop():
    vectorised_bit_exact(cases.kind, _xs(3))
    w = object.__new__(pyfloat.WeakFloat)  # (no value: the class answers)
    assert isinstance(w, float) and type(w) is pyfloat.WeakFloat
    import numbers
    assert isinstance(w, numbers.Real)


@pytest.mark.parametrize("dtype", [np.float64, np.int64])
def test_a_weak_float_made_again_by_its_type_reruns(dtype):
    # type(s)(1) is float(1) in the loop: no weak value holds a 1 (or an int per example)
    _reruns_like_the_loop(cases.rebuilt_by_its_type, _xs(3, dtype))


@pytest.mark.parametrize("dtype", [np.float32, np.int64])
def test_batch_size_zero_after_learning_is_empty_float64(dtype):
    vectorised_bit_exact(cases.chained, _xs(2, dtype))  # (learnt by now)
    got = bt.vmap(cases.chained)(_xs(0, dtype))
    assert got.shape == (0,) and got.dtype == np.float64


# ---- nested vmaps -------------------------------------------------------------------------------
def test_nested_vmaps():
    xs = _xs(6, np.float32).reshape(2, 3, 5)
    for f in (cases.chained, cases.arithmetic, cases.with_batched, cases.in_containers):
        nested_bit_exact(f, xs)


def test_nested_vmaps_branching_per_cell():
    xs = _xs(6).reshape(2, 3, 5)
    want = loop_vmap(loop_vmap(cases.branches))(xs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", bt.PerformanceWarning)
        got = bt.vmap(bt.vmap(cases.branches))(xs)
    assert_same_bits(got, want)


def test_an_inner_float_of_a_value_of_the_outer_level():
    xs, ys = _xs(2), _xs(6).reshape(2, 3, 5)
    want = loop_vmap(cases.nested_value_of_outer)(xs, ys)
    with warnings.catch_warnings():
        warnings.simplefilter("error", bt.PerformanceWarning)
        got = bt.vmap(cases.nested_value_of_outer, fallback="error")(xs, ys)
    assert_same_bits(got, want)


# ---- what refuses reruns per example, with the loop's result -----------------------------------
REFUSED = {
    "divided_by_zero": "zero", "weak_divided_by_zero": "zero", "zero_divided_by_weak": "zero",
    "formatted": None, "method_clip": None, "probed": None, "as_array": None,
    "written": None, "powered": None, "floor_divided": None, "rounded": None,
    "hashed": None, "copied": None, "huge_int": None, "bool_arithmetic": None,
    "compared_to_text": None, "indexed_by_bool": None, "reduced": None, "as_float64": None,
}


@pytest.mark.parametrize("name", REFUSED)
def test_uses_it_cannot_prove_rerun_with_the_loops_result(name):
    xs = _xs(3)
    if REFUSED[name] == "zero":
        xs[1, 0] = 0.0  # Python raises ZeroDivisionError for this example only
        vectorised_bit_exact(getattr(cases, name), np.abs(xs[[0, 2]]) + 1)
    _reruns_like_the_loop(getattr(cases, name), xs)


def test_numpy_functions_that_are_not_ufuncs_refuse():
    """np.clip is no ufunc: NEP 50 would make its float32 result keep a bound cast to float32;
    the weak float refuses (``__array_function__``) and the loop's result comes from a rerun."""
    xs = _xs(3)
    a32 = (RNG.normal(size=5) * 4).astype(np.float32)
    _reruns_like_the_loop(cases.clipped, xs, a32, in_axes=(0, None))
    _reruns_like_the_loop(cases.power_of_array, xs, a32, in_axes=(0, None))


def test_a_module_that_uses_float_otherwise_is_never_given_one():
    """Its functions are learnt one by one (their code rewritten for the length of a pass:
    tests/test_pyfloat_functions.py); its globals never change."""
    xs = _xs(3)
    for f in (pyfloat_not_learnt.halved, pyfloat_not_learnt.uses_dtype):
        for _ in range(2):  # (the second call starts from what the first learnt)
            vectorised_bit_exact(f, xs)
    assert "float" not in vars(pyfloat_not_learnt)


def test_the_module_is_pristine_after_a_pass_and_after_an_error():
    xs = _xs(3)
    no_rerun(cases.chained, xs)
    assert "float" not in vars(cases)
    xs[0, 0] = 0.0
    with pytest.raises(ZeroDivisionError):  # the loop's error, from the rerun
        bt.vmap(lambda x: 1.0 / float(x[0]))(xs)
    with pytest.raises(TypeError):
        bt.vmap(cases.powered, fallback="error")(xs)
    assert "float" not in vars(cases)
    assert cases.total(np.ones(3)) == 3.0 and type(cases.total(np.ones(3))) is float


def test_threads_outside_vmap_get_the_builtins_float():
    xs = _xs(3)
    want = loop_vmap(cases.chained)(xs)

    def run(i):
        for _ in range(20):
            if i % 2:
                assert_same_bits(no_rerun(cases.chained, xs), want)
            else:
                r = cases.total(xs[0])
                assert type(r) is float and r == float(np.sum(xs[0]))

    on_threads(run)
    assert "float" not in vars(cases)


# ---- real library functions ---------------------------------------------------------------------
def _bools(n, k=9):
    return RNG.random((n, k)) > 0.5


@pytest.mark.parametrize("n", [1, 3])
def test_scipy_boolean_distances_stay_vectorised(n):
    distance = pytest.importorskip("scipy.spatial.distance", reason="SciPy is a test extra")
    u, v = _bools(n), _bools(n)
    u[:, 0] = v[:, 0] = True  # (no example with an empty union: SciPy divides by it)
    for f in (distance.rogerstanimoto, distance.russellrao, distance.sokalsneath):
        vectorised_bit_exact(f, u, v)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sklearn_d2_tweedie_score(dtype):
    metrics = pytest.importorskip("sklearn.metrics", reason="scikit-learn is a test extra")
    y, p = np.abs(_xs(3, dtype)) + 0.5, np.abs(_xs(3, dtype)) + 0.5
    vectorised_bit_exact(functools.partial(metrics.d2_tweedie_score, power=1.5), y, p)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sklearn_calinski_harabasz_score(dtype):
    # (float32: scikit-learn casts X to float64 where array-api-compat's is_numpy_array(X)
    # says so, which asks type(X): masked.py's interception answers as for the loop's X)
    metrics = pytest.importorskip("sklearn.metrics", reason="scikit-learn is a test extra")
    X = _xs(3 * 12, dtype, 2).reshape(3, 12, 2)
    labels = np.tile(np.arange(3), 4)
    vectorised_bit_exact(metrics.calinski_harabasz_score, X, labels, in_axes=(0, None))
