"""The rules for scipy.stats' and astropy.stats' compiled kernels (batchtensor/rules/
scipy_stats.py, astropy_stats.py: once per example, rules/_kernels.py) and for the elementwise
Kolmogorov-Smirnov distribution, against the per-example loop: the real library functions
called unchanged (siegelslopes, weightedtau, kstest, kstwo), the kernels themselves, batch
sizes 0, 1 and 3, in_axes -1, unmapped arguments, nested vmaps, float32, ties and NaN, the
layouts a kernel refuses, and writes into the coefficients ``swilk`` fills."""

from __future__ import annotations

import functools
import warnings

import numpy as np
import pytest

import batchtensor as bt
from loop_reference import assert_same, loop_vmap, strict_vmap

pytest.importorskip("scipy")
from scipy import stats  # noqa: E402
from scipy.stats import (_continuous_distns, _morestats, _stats_mstats_common,  # noqa: E402
                         _stats_py, mstats)

RNG = np.random.default_rng(11)


def related(b, n=12, dtype=np.float64):
    x = RNG.normal(size=(b, n))
    return (0.6 * x + RNG.normal(size=(b, n))).astype(dtype), x.astype(dtype)


def strict(f, *args, in_axes=0, rtol=None):
    """Fully vectorised (no fallback of any kind), and the loop's result."""
    got = strict_vmap(f, in_axes)(*args)
    assert_same(got, loop_vmap(f, in_axes)(*args), rtol)
    return got


def default(f, *args, in_axes=0):
    """The default path (a fallback allowed, warned) gives the loop's result."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", bt.PerformanceWarning)
        got = bt.vmap(f, in_axes)(*args)
    assert_same(got, loop_vmap(f, in_axes)(*args))


def same_outcome(f, *args, in_axes=0):
    """vmap (fallback="error") raises what the loop raises, or returns its result."""
    try:
        want = loop_vmap(f, in_axes)(*args)
    except Exception as e:  # noqa: BLE001  (compared below)
        with pytest.raises(type(e)), bt.config(fallback="error"):
            bt.vmap(f, in_axes)(*args)
        return
    assert_same(bt.vmap(f, in_axes, fallback="error")(*args), want)


def empty_batch(f, *examples):
    """Batch size 0: the shapes and dtypes of one example's results, with no example."""
    got = strict_vmap(f)(*(np.empty((0, *np.shape(e)), np.asarray(e).dtype) for e in examples))
    one = f(*examples)
    for g, w in zip(got if type(got) is tuple else (got,), one if type(one) is tuple else (one,)):
        assert g.shape == (0, *np.shape(w)) and g.dtype == np.asarray(w).dtype


# ---- siegelslopes: the Pythran kernel -----------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("method", ["hierarchical", "separate"])
def test_siegelslopes(dtype, method):
    y, x = related(3, dtype=dtype)
    f = functools.partial(stats.siegelslopes, method=method)
    strict(f, y, x)
    strict(f, y.T.copy(), x.T.copy(), in_axes=-1)  # each example strided: copied contiguous
    strict(f, y, x[0], in_axes=(0, None))
    strict(lambda y: stats.siegelslopes(y, method=method), y)  # x = arange(len(y))
    strict(f, y[:1], x[:1])
    strict(mstats.siegelslopes, y, x)


def test_siegelslopes_ties_nested_and_no_examples():
    y, x = related(6, n=9)
    x = np.round(x)  # repeated x: the kernel skips the pairs
    got = bt.vmap(bt.vmap(stats.siegelslopes), fallback="error")(
        y.reshape(2, 3, 9), x.reshape(2, 3, 9))
    assert_same(got, loop_vmap(loop_vmap(stats.siegelslopes))(y.reshape(2, 3, 9),
                                                               x.reshape(2, 3, 9)))
    # (no example: SciPy's NaN check, bool() of a batched value, has no example to ask; the
    # kernel's rule gives the results' shapes and dtypes)
    empty_batch(lambda y, x: _stats_mstats_common.siegelslopes_pythran(y, x, "separate"),
                y[0], x[0])


def test_siegelslopes_kernel_refuses_what_the_loop_refuses():
    kernel = _stats_mstats_common.siegelslopes_pythran  # (called through its module)
    y, x = related(3)
    f = lambda y, x: _stats_mstats_common.siegelslopes_pythran(y, x, "separate")  # noqa: E731
    strict(f, y, x)
    # the batch axis last in a vmap input: each example is a strided view, which Pythran
    # refuses (in the loop too)
    with pytest.raises(TypeError):
        loop_vmap(f, in_axes=1)(y.T.copy(), x.T.copy())
    same_outcome(f, y.T.copy(), x.T.copy(), in_axes=1)
    same_outcome(f, y, x.astype(np.float32))  # two dtypes: no signature
    assert _stats_mstats_common.siegelslopes_pythran is kernel  # the original again


# ---- weightedtau: _weightedrankedtau ------------------------------------------------------------
def weigher(r):
    return 1.0 / (3.0 + r)


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64])
def test_weightedtau(dtype):
    y, x = related(3, n=10)
    x, y = (x * 3).astype(dtype), (y * 3).astype(dtype)
    strict(stats.weightedtau, x, y)
    strict(functools.partial(stats.weightedtau, rank=False), x, y)
    strict(functools.partial(stats.weightedtau, rank=np.arange(10)[::-1], weigher=weigher,
                             additive=False), x, y)
    strict(stats.weightedtau, x, y[0], in_axes=(0, None))
    strict(stats.weightedtau, x.T.copy(), y.T.copy(), in_axes=-1)


def test_weightedtau_batched_rank_nan_ties_and_constant():
    y, x = related(3, n=10)
    ranks = np.stack([RNG.permutation(10) for _ in range(3)])
    strict(lambda x, y, r: stats.weightedtau(x, y, rank=r), x, y, ranks)
    x[:, 4] = np.nan  # ranked by _toint64 (NaN lowest)
    x[2] = np.round(x[2])
    strict(stats.weightedtau, x, y)
    x[1, 4] = 0.5  # NaN in some examples only: they branch apart (groups)
    default(stats.weightedtau, x, y)
    x = np.round(related(3, n=10)[1])
    x[0] = 1.5  # constant: NaN
    strict(stats.weightedtau, x, y)
    empty_batch(lambda x, y: (_stats_py._weightedrankedtau(x, y, None, None, True),),
                x[1], y[1])


def test_weightedrankedtau_dtypes_differ_as_in_the_loop():
    f = lambda x, y: _stats_py._weightedrankedtau(x, y, None, None, True)  # noqa: E731
    x, y = RNG.normal(size=(2, 3, 6))
    with pytest.raises(ValueError):
        loop_vmap(f)(x, y.astype(np.float32))
    same_outcome(f, x, y.astype(np.float32))
    ro = x.copy()
    ro.flags.writeable = False  # (the kernel takes read-only buffers)
    same_outcome(f, ro, y)


def test_toint64():
    f = lambda x: _stats_py._toint64(x)  # noqa: E731
    x = np.round(RNG.normal(size=(3, 8)))
    x[0, 2] = x[2, 5] = x[2, 6] = np.nan
    strict(f, x)
    strict(f, x.T.copy(), in_axes=-1)
    same_outcome(f, x[:, 0])  # 0-d: no len()
    empty_batch(f, x[0])


# ---- kendalltau's _kendall_dis ----------------------------------------------------------------
def test_kendall_dis():
    f = lambda x, y: _stats_py._kendall_dis(x, y)  # noqa: E731
    x = np.sort(RNG.integers(1, 5, (3, 12)), axis=1).astype(np.intp)
    y = RNG.integers(1, 7, (3, 12)).astype(np.intp)
    got = strict(f, x, y)
    assert got.dtype == np.int64
    strict(f, x[::-1, ::-1], y)  # negative strides: the kernel takes strided buffers
    strict(f, x, y[0], in_axes=(0, None))
    x.flags.writeable = False  # the kernel refuses a read-only buffer, per example too
    with pytest.raises(ValueError), bt.config(fallback="error"):
        bt.vmap(f)(x, y)


@pytest.mark.parametrize("f", [stats.kendalltau, mstats.kendalltau, stats.shapiro])
def test_functions_that_still_rerun_give_the_loops_result(f):
    # past the kernel, kendalltau converts a count with int() and shapiro its statistic with
    # np.float64(): the whole-function rerun (correct, warned)
    y, x = related(3)
    default(f, y, x) if f is not stats.shapiro else default(f, y)


# ---- swilk -------------------------------------------------------------------------------------
def centred(b, n):
    x = np.sort(RNG.normal(size=(b, n)), axis=1)
    return x - x[:, n // 2:n // 2 + 1]


@pytest.mark.parametrize("n", [3, 5, 12, 30])
def test_swilk_fills_each_examples_coefficients(n):
    def f(x, a):
        w, pw, ifault = _morestats.swilk(x, a)
        return w, pw, ifault, a

    x = centred(3, n)
    strict(f, x, np.zeros((3, n // 2)))

    def g(x, c):
        a = c * 0.0  # made here, laid out as c: the batch axis inside its memory
        w, pw, ifault = _morestats.swilk(x, a)
        return w, pw, ifault, a

    # the kernel fills contiguous copies, copied back into each example
    strict(g, x, np.ones((n // 2, 3)), in_axes=(0, 1))
    # a vmap input with the batch axis inside: each example is strided, which the kernel
    # refuses in the loop too
    same_outcome(f, x, np.zeros((n // 2, 3)), in_axes=(0, 1))


def test_swilk_coefficients_not_batched():
    # every example writes the same coefficients into one array, as the loop does
    a, want_a = np.zeros(6), np.zeros(6)
    x = centred(3, 12)
    got = strict_vmap(lambda x: _morestats.swilk(x, a))(x)
    want = loop_vmap(lambda x: _morestats.swilk(x, want_a))(x)
    assert_same(got, want)
    assert_same(a, want_a)
    # precomputed coefficients are read
    strict(lambda x: _morestats.swilk(x, want_a, True), x)


def test_swilk_edge_cases():
    f = lambda x, a: _morestats.swilk(x, a)  # noqa: E731
    strict(f, np.ones((3, 7)) * RNG.normal(size=(3, 1)), np.zeros((3, 3)))  # zero range
    strict(f, centred(3, 2), np.zeros((3, 1)))  # too few values
    strict(f, centred(1, 9), np.zeros((1, 4)))
    x = centred(3, 9)
    same_outcome(f, x.astype(np.float32), np.zeros((3, 4)))  # not a double buffer
    same_outcome(f, x.T.copy(), np.zeros((3, 4)), in_axes=(1, 0))  # strided examples
    ro = np.zeros((3, 4))
    ro.flags.writeable = False  # the kernel writes the coefficients
    same_outcome(f, x, ro)
    x.flags.writeable = False  # and only reads the data
    same_outcome(f, x, np.zeros((3, 4)))
    got = bt.vmap(f, fallback="error")(np.empty((0, 9)), np.zeros((0, 4)))
    assert [g.dtype for g in got] == [np.float64, np.float64, np.int64]


# ---- the Kolmogorov-Smirnov distribution and kstest ------------------------------------------
@pytest.mark.parametrize("alternative", ["two-sided", "less", "greater"])
def test_kstest(alternative):
    x = RNG.normal(size=(3, 12))
    f = functools.partial(stats.kstest, cdf="norm", alternative=alternative)
    strict(f, x)
    strict(f, x.T.copy(), in_axes=-1)
    strict(f, x[:1])
    got = bt.vmap(bt.vmap(f), fallback="error")(x.reshape(1, 3, 12))
    assert_same(got, loop_vmap(loop_vmap(f))(x.reshape(1, 3, 12)))


def test_kstwo():
    d = RNG.uniform(0.15, 0.6, (3, 4))  # (inside the support for every n here)
    strict(lambda d: stats.kstwo.sf(d, 12), d)
    strict(lambda d: stats.kstwo.cdf(d, 7), d)
    # (pdf and ppf branch per example and convert in SciPy's own code: a fallback serves them)
    default(lambda d: stats.kstwo.pdf(d, 12), d)
    default(lambda q: stats.kstwo.ppf(q, 12), d)
    strict(lambda d, n: stats.kstwo.sf(d, n), d, np.array([3, 12, 40]))


def test_kolmogn_elementwise():
    f = lambda n, x: _continuous_distns.kolmogn(n, x, cdf=False)  # noqa: E731
    x = RNG.uniform(0.0, 1.0, (3, 5))
    n = RNG.integers(1, 30, (3, 5))
    got = strict(f, n, x)
    assert got.flags.c_contiguous
    strict(f, n.T.copy(), x.T.copy(), in_axes=-1)  # each example C-ordered, as the loop's
    strict(f, 12, x[:, 0], in_axes=(None, 0))  # 0-d: a 0-d array per example
    strict(f, n[0], x[:, :1], in_axes=(None, 0))
    n_bad = n.astype(float)
    n_bad[1, 2] = 2.5
    with pytest.raises(ValueError), bt.config(fallback="error"):
        bt.vmap(f)(n_bad, x)
    x2 = RNG.uniform(0.0, 1.0, (3, 2, 4))
    strict(f, 9, x2, in_axes=(None, 0))
    # examples of two axes laid out F-ordered: the iterator follows them, so does the loop
    default(f, 9, np.asfortranarray(x2.transpose(0, 2, 1)).transpose(0, 2, 1),
            in_axes=(None, 0))
    # float32: the iterator refuses it without buffering (or not, by shape): the loop decides
    default(lambda x: _continuous_distns.kolmogn(12, x), x[:, 0].astype(np.float32))


# ---- astropy: kuiper_two's ks_2samp --------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64])
def test_astropy_ks_2samp(dtype):
    pytest.importorskip("astropy")
    from astropy.stats import _stats

    f = lambda a, b: _stats.ks_2samp(a, b)  # noqa: E731
    a = np.sort(RNG.normal(size=(3, 20)) * 3, axis=1).astype(dtype)
    b = np.sort(RNG.normal(size=(3, 15)) * 3, axis=1).astype(dtype)
    strict(f, a, b)
    strict(f, a, b[0], in_axes=(0, None))
    strict(f, a.T.copy(), b.T.copy(), in_axes=-1)
    strict(f, a[:, :0], b)
    empty_batch(f, a[0], b[0])
    same_outcome(f, a.astype(np.float64), b.astype(np.float32))  # two dtypes: no signature
    ro = a.copy()
    ro.flags.writeable = False
    same_outcome(f, ro, b)


def test_astropy_kuiper_two():
    astropy_stats = pytest.importorskip("astropy.stats")
    a, b = RNG.uniform(size=(3, 20)), RNG.uniform(size=(3, 15))
    # the statistic runs vectorised; its false-positive probability branches per example
    default(astropy_stats.kuiper_two, a, b)


# ---- np.nditer over a batched value --------------------------------------------------------------
def test_nditer_over_a_batched_value_reruns_with_a_clear_reason():
    def doubled(x):
        it = np.nditer([x, None])
        for a, z in it:
            z[...] = 2 * a
        return it.operands[-1]

    x = RNG.normal(size=(3, 4))
    with pytest.raises(TypeError, match="np.nditer over a batched value"), \
            bt.config(fallback="error"):
        bt.vmap(doubled)(x)
    with pytest.warns(bt.PerformanceWarning, match="np.nditer over a batched value"):
        got = bt.vmap(doubled)(x)
    assert_same(got, loop_vmap(doubled)(x))
    assert type(np.nditer) is type  # numpy's own again
