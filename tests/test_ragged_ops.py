"""Ragged selections (rules/ragged.py) in the ops that move real code: float sums that add in
NumPy's pairwise order (bit for bit), ``np.dot`` of two selections, ``np.take`` by a selection
of indices, a selection's count in arithmetic (a weak Python int), ``np.diff`` without
``append``, ``np.vectorize`` of a selection, ``scipy.sparse.find`` of a batched CSR
(rules/scipy_sparse.py). Every result is compared with the per-example loop exactly (values,
dtype, shape, signs of zeros), in_axes 0 and -1, nested vmaps, batch sizes 0 and 1, examples
whose counts differ (0 among them)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import batchtensor as bt
from loop_reference import loop_vmap

RNG = np.random.default_rng(11)


def assert_exact(got, want):
    """Same tree, shape, dtype and bits (NaN where NaN, the sign of zeros)."""
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want):
            assert_exact(g, w)
        return
    g, w = np.asarray(got), np.asarray(want)
    assert g.shape == w.shape and g.dtype == w.dtype, (g.shape, w.shape, g.dtype, w.dtype)
    np.testing.assert_array_equal(g, w)
    if w.dtype.kind in "fc":
        np.testing.assert_array_equal(np.signbit(g.real), np.signbit(w.real))


def _mapped(f, in_axes, nested, fallback):
    inner = bt.vmap(f, in_axes, fallback=fallback)
    return bt.vmap(inner, in_axes, fallback=fallback) if nested else inner


def exact(f, *args, in_axes=0, nested=False):
    """vmap's result (no rerun, no per-op loop) against the loop's, bit for bit. A batch of
    no examples: the result of no examples, typed as the loop's of the first example."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", bt.PerformanceWarning)
        got = _mapped(f, in_axes, nested, "error")(*[np.copy(a) for a in args])
    if args[0].shape[in_axes]:
        loop = loop_vmap(loop_vmap(f, in_axes), in_axes) if nested else loop_vmap(f, in_axes)
        assert_exact(got, loop(*[np.copy(a) for a in args]))
    return got


def empty_batch(f, *args):
    """``f`` mapped over none of ``args``' examples: shaped and typed as the loop's result
    of one example (stacked), with no element."""
    got = exact(f, *[a[:0] for a in args])
    want = loop_vmap(f)(*[a[:1] for a in args])
    for g, w in zip(got if isinstance(got, tuple) else (got,),
                    want if isinstance(want, tuple) else (want,)):
        assert g.shape == (0,) + w.shape[1:] and g.dtype == w.dtype, (g.shape, g.dtype, w.dtype)


def refused(f, *args, in_axes=0):
    """No batched meaning: the error with fallback='error', the loop's result (or error) by
    default."""
    with pytest.raises(bt.BatchingError):
        bt.vmap(f, in_axes, fallback="error")(*args)
    try:
        want = loop_vmap(f, in_axes)(*args)
    except Exception as e:  # noqa: BLE001  (the loop's own error, which vmap gives too)
        with pytest.raises(type(e)):
            bt.vmap(f, in_axes, fallback="silent")(*args)
        return
    assert_exact(bt.vmap(f, in_axes, fallback="silent")(*args), want)


def spread(shape, dtype=np.float64):
    """Values over many magnitudes (where summation order shows in the last bits)."""
    span = 2 if dtype == np.float16 else 4
    x = RNG.normal(size=shape) * 10.0 ** RNG.uniform(-span, span, shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * RNG.normal(size=shape)
    return x.astype(dtype)


def thresholds(b, *, empty=(0,)):
    """One threshold per example (counts differ), the examples in ``empty`` selecting none."""
    t = RNG.uniform(-1, 1, b)
    t[[e for e in empty if e < b]] = np.inf
    return t


# ---- float sums in NumPy's pairwise order --------------------------------------------------------
@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")  # (float16, as the loop)
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.float16, np.complex128])
@pytest.mark.parametrize("n", [5, 130, 3000, 20000])
def test_float_sum_adds_in_numpys_order(dtype, n):
    xs, t = spread((4, n), dtype), thresholds(4)
    exact(lambda x, t: x[x.real > t].sum(), xs, t)
    exact(lambda x, t: np.add.reduce(x[x.real > t], keepdims=True), xs, t)
    exact(lambda x, t: np.sum(x[x.real > t], initial=1.5), xs, t)
    exact(lambda x, t: np.nansum(x[x.real > t]), xs, t)


@pytest.mark.parametrize("rest", [(1,), (3,), (2, 5)])
def test_float_sum_of_rows(rest):
    xs = spread((5, 400) + rest)
    t = thresholds(5, empty=(2,))
    m = (slice(None),) + (0,) * len(rest)
    exact(lambda x, t: x[x[m] > t].sum(axis=0), xs, t)
    exact(lambda x, t: x[x[m] > t].sum(axis=0, keepdims=True), xs, t)
    exact(lambda x, t: x[x[m] > t].sum(), xs, t)  # every axis: the example flattened
    exact(lambda x, t: x[x[m] > t].sum(axis=tuple(range(1 + len(rest)))), xs, t)


def test_float_sum_over_some_axes_with_the_count_axis_is_refused():
    xs = spread((4, 30, 3, 2))
    refused(lambda x: x[x[:, 0, 0] > 0].sum(axis=(0, 1)), xs)


def test_float_sum_with_a_cast():
    xs, t = spread((4, 3000), np.float32), thresholds(4)
    exact(lambda x, t: x[x > t].sum(dtype=np.float64), xs, t)
    exact(lambda x, t: (x > t)[x > t - 1].sum(dtype=np.float32), xs, t)
    # the loop adds a cast in chunks of NumPy's buffer: a longer selection is refused
    n = np.getbufsize() + 50
    big, first = spread((3, n), np.float32), np.array([0, 1, 2])
    refused(lambda x, t: x[np.arange(n) >= t].sum(dtype=np.float64), big, first)
    exact(lambda x, t: x[np.arange(n) >= t + 60].sum(dtype=np.float64), big, first)


def test_float_sum_small_batches():
    xs, t = spread((1, 50)), thresholds(1, empty=())
    exact(lambda x, t: x[x > t].sum(), xs, t)
    empty_batch(lambda x, t: x[x > t].sum(), xs, t)


def test_float_sum_in_axes_last_and_nested():
    xs = spread((300, 5))
    exact(lambda x: x[x > 0].sum(), xs, in_axes=-1)
    exact(lambda x: x[x > 0.5].sum(), spread((3, 4, 200)), nested=True)


def test_integer_sums_stay_exact():
    xs = RNG.integers(-50, 50, (5, 40)).astype(np.int8)
    exact(lambda x: x[x > 0].sum(), xs)
    exact(lambda x: x[x > 0].sum(dtype=np.int8), xs)


# ---- np.dot of two selections --------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.int8, np.uint16, np.bool_])
def test_dot_of_two_selections(dtype):
    xs = RNG.integers(0, 5, (6, 11)).astype(dtype)
    xs[2] = 0  # an example that selects nothing
    exact(lambda x: np.dot(x[x != 0], x[x != 0]), xs)
    exact(lambda x: np.inner(x[x != 0], x[x != 0] * x[x != 0]), xs)
    exact(lambda x: np.vdot(x[x != 0], x[x != 0]), xs)
    exact(lambda x: x[x != 0] @ x[x != 0], xs)
    exact(lambda x: np.matmul(x[x != 0], x[x != 0]), xs)


def test_dot_of_selections_small_batches_and_nested():
    exact(lambda x: np.dot(x[x > 1], x[x > 1]), RNG.integers(0, 4, (1, 7)))
    empty_batch(lambda x: np.dot(x[x > 1], x[x > 1]), RNG.integers(0, 4, (1, 7)))
    exact(lambda x: np.dot(x[x > 1], x[x > 1]), RNG.integers(0, 4, (7, 6)), in_axes=-1)
    exact(lambda x: np.dot(x[x > 1], x[x > 1]), RNG.integers(0, 4, (2, 3, 7)), nested=True)


def test_dot_of_float_selections_or_other_counts_is_refused():
    xs = RNG.normal(size=(5, 8))
    xs[:, 0] = 1.0
    refused(lambda x: np.dot(x[x > 0], x[x > 0]), xs)  # BLAS adds in its own order
    ints = RNG.integers(0, 4, (5, 8))
    ints[:, 0] = 3
    refused(lambda x: np.dot(x[x > 0], x[x > 1]), ints)
    refused(lambda x: np.dot(x[x > 0], np.ones(1, dtype=x.dtype)), ints)


# ---- np.take by a selection of indices -----------------------------------------------------------
def indices_of(m):
    """Each position's index, selected by the mask ``m`` (an index per selected element)."""
    return (np.cumsum(np.ones_like(m, dtype=np.intp)) - 1)[m]


@pytest.mark.parametrize("dtype", [np.float64, np.int32, np.bool_, np.complex64])
def test_take_by_a_selection_of_indices(dtype):
    xs = spread((5, 9)).astype(dtype)
    ms = RNG.random((5, 9)) < 0.5
    ms[3] = False
    exact(lambda x, m: np.take(x, indices_of(m)).sum(), xs, ms)
    exact(lambda x, m: (x.take(indices_of(m)) == x[m]).all(), xs, ms)
    exact(lambda x, m: np.take(x[::-1], 8 - indices_of(m)).sum(), xs, ms)
    exact(lambda x, m: np.take(x, -1 - indices_of(m), mode="raise").sum(), xs, ms)
    exact(lambda x, m: np.take(x, indices_of(m) + 4, mode="wrap").sum(), xs, ms)
    exact(lambda x, m: np.take(x, indices_of(m) * 3 - 5, mode="clip").sum(), xs, ms)
    # a plain array taken by each example's indices
    exact(lambda m: np.take(np.arange(9.0) ** 2, indices_of(m)).sum(), ms)


def test_take_rows_by_a_selection():
    xs, ms = spread((4, 6, 3)), RNG.random((4, 6)) < 0.5
    ms[0] = False
    exact(lambda x, m: np.take(x, indices_of(m), axis=0).sum(axis=0), xs, ms)
    exact(lambda x, m: np.take(x, indices_of(m)).sum(), xs, ms)  # axis None: flattened
    refused(lambda x, m: np.take(x, indices_of(m[:3]), axis=1).sum(), xs, ms)


def test_take_out_of_bounds_raises_as_the_loop():
    xs, ms = spread((4, 6)), RNG.random((4, 6)) < 0.7
    ms[:, 5] = True
    f = lambda x, m: np.take(x, indices_of(m) + 1).sum()  # noqa: E731
    with pytest.raises(IndexError, match="out of bounds"):
        loop_vmap(f)(xs, ms)
    with pytest.raises(IndexError, match="out of bounds"):
        bt.vmap(f, fallback="error")(xs, ms)


def test_take_small_batches_in_axes_last_and_nested():
    exact(lambda x: np.take(x, indices_of(x > 0)).sum(), spread((1, 7)))
    empty_batch(lambda x: np.take(x, indices_of(x > 0)).sum(), spread((1, 7)))
    exact(lambda x: np.take(x, indices_of(x > 0)).sum(), spread((7, 5)), in_axes=-1)
    exact(lambda x: np.take(x, indices_of(x > 0)).sum(), spread((2, 3, 7)), nested=True)


# ---- a selection's count in arithmetic: the loop's weak Python int -------------------------------
@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")  # (uint8, as the loop)
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.float16, np.int16, np.uint8,
                                   np.bool_, np.complex64])
def test_count_times_a_numpy_value(dtype):
    xs = spread((6, 9))
    xs[1] = -1.0
    s = np.ones(3, dtype=dtype)
    exact(lambda x: x[x > 0].shape[0] * np.sum(x.astype(dtype)), xs)
    exact(lambda x: x[x > 0].size * s, xs)
    exact(lambda x: x[x > 0].shape[0] - s[0], xs)
    exact(lambda x: x[x > 0].shape[0] / np.float32(3), xs)


def test_count_not_held_by_the_dtype_or_with_python_numbers_is_refused():
    xs = np.ones((3, 300))
    xs[1, :10] = -1
    refused(lambda x: x[x > 0].shape[0] * np.int8(1), xs)  # the loop: OverflowError
    refused(lambda x: x[x > 0].shape[0] * 2, xs)  # a Python int stays one in the loop
    refused(lambda x: x[x > 0].shape[0] * x[x > 0].shape[0] * np.float64(1), xs)


def test_count_arithmetic_small_batches_and_nested():
    exact(lambda x: x[x > 0].shape[0] * np.float32(0.1), spread((1, 6)))
    empty_batch(lambda x: x[x > 0].shape[0] * np.float32(0.1), spread((1, 6)))
    exact(lambda x: x[x > 0].shape[0] * np.float32(0.1), spread((6, 5)), in_axes=-1)
    exact(lambda x: x[x > 0].shape[0] * x.sum(), spread((2, 3, 6)), nested=True)


# ---- np.diff of a selection ----------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float64, np.int32, np.bool_])
def test_diff_without_append(dtype):
    xs = (spread((7, 9)) > 0).astype(dtype) if dtype is np.bool_ else \
        RNG.integers(-5, 5, (7, 9)).astype(dtype)
    t = np.array([9, 9, 4, 0, -1, 2, 3])  # counts 0, 0, ... and some of one element
    exact(lambda x, t: np.diff(x[np.arange(9) >= t]).sum(), xs, t)
    exact(lambda x, t: (np.diff(x[np.arange(9) >= t]) ** 2).astype(np.float64).sum(), xs, t)
    exact(lambda x: np.diff(x[x > 0]).sum(), xs[:1].astype(np.int64))
    empty_batch(lambda x: np.diff(x[x > 0]).sum(), xs[:1].astype(np.int64))
    exact(lambda x: np.diff(x[x > 0]).sum(), RNG.integers(-3, 3, (2, 3, 8)), nested=True)


# ---- np.vectorize of a selection -----------------------------------------------------------------
def test_vectorize_of_a_selection():
    calls = []

    def g(v, k):
        calls.append(v)
        return float(v) * k + 1.0

    vec = np.vectorize(g, otypes=[float])
    xs, t = spread((6, 8)), thresholds(6)
    exact(lambda x, t: vec(x[x > t], 3).sum(), xs, t)
    exact(lambda x, t: vec(x[x > t], x.max()).sum(), xs, t)  # a per-example operand
    calls.clear()
    bt.vmap(lambda x, t: vec(x[x > t], 2).sum(), fallback="error")(xs, t)
    assert len(calls) == int(np.sum(xs > t[:, None]))  # once per selected element
    exact(lambda x: vec(x[x > 0], 2).sum(), spread((2, 3, 6)), nested=True)


def test_vectorize_without_otypes_is_refused():
    vec = np.vectorize(lambda v: v * 2)
    xs = spread((5, 6))
    xs[:, 0] = 1.0
    refused(lambda x: vec(x[x > 0]).sum(), xs)


# ---- scipy.sparse.find of a batched CSR ----------------------------------------------------------
sparse = pytest.importorskip("scipy.sparse")


def contingency_like(kind, dtype):
    def f(i, j, v):
        m = getattr(sparse, f"coo_{'array' if kind.endswith('array') else 'matrix'}")(
            (v, (i, j)), shape=(3, 4))
        return sparse.find(m.tocsr() if kind.startswith("csr") else m.tocsc())
    return f


@pytest.mark.parametrize("kind", ["csr_matrix", "csr_array", "csc_matrix", "csc_array"])
@pytest.mark.parametrize("dtype", [np.int64, np.float64, np.bool_])
def test_sparse_find_of_a_batched_csr(kind, dtype):
    b, nnz = 6, 7
    i, j = RNG.integers(0, 3, (b, nnz)), RNG.integers(0, 4, (b, nnz))
    v = RNG.integers(-1, 2, (b, nnz)).astype(dtype)  # explicit zeros and duplicates
    v[2] = 0  # an example with no nonzero entry
    f = contingency_like(kind, dtype)

    def use(i, j, v):  # the three selections, used as code uses them
        rows, cols, vals = f(i, j, v)
        return np.stack([(rows * 4 + cols).sum(), (vals * (rows + 1)).astype(float).sum()])

    exact(use, i, j, v)
    seen = []

    def dtypes(i, j, v):
        seen.append([a.dtype for a in f(i, j, v)])
        return v

    bt.vmap(dtypes, fallback="error")(i, j, v)
    dtypes(i[0], j[0], v[0])
    assert seen[0] == seen[-1]  # SciPy's index and data dtypes for this class
    exact(use, i[:1], j[:1], v[:1])  # (no batch of 0: SciPy's constructor asks bool())
    exact(use, i.T.copy(), j.T.copy(), v.T.copy(), in_axes=-1)
    exact(use, i.reshape(2, 3, nnz), j.reshape(2, 3, nnz), v.reshape(2, 3, nnz), nested=True)


# ---- real code -----------------------------------------------------------------------------------
def labels(b, n, k):
    y = RNG.integers(0, k, (b, n))
    y[:, :k] = np.arange(k)  # every class in every example: the contingency shape is fixed
    return y


@pytest.mark.parametrize("name", ["mutual_info_score", "homogeneity_score", "v_measure_score",
                                  "completeness_score"])
def test_sklearn_mutual_information(name):
    metrics = pytest.importorskip("sklearn.metrics")
    f = getattr(metrics, name)
    a, b = labels(6, 40, 3), labels(6, 40, 5)
    exact(f, a, b)
    exact(f, a.T.copy(), b.T.copy(), in_axes=-1)
    exact(f, a.reshape(2, 3, 40), b.reshape(2, 3, 40), nested=True)
    # one example: the same values on any path (no batch of 0: the code asks bool())
    assert_exact(bt.vmap(f, fallback="silent")(a[:1], b[:1]), loop_vmap(f)(a[:1], b[:1]))


def test_sklearn_fowlkes_mallows():
    """``np.dot(c.data, c.data)`` of the contingency matrix's entries (a count per example)."""
    metrics = pytest.importorskip("sklearn.metrics")
    f = metrics.fowlkes_mallows_score
    a, b = labels(6, 30, 3), labels(6, 30, 4)
    a[:, 4:] = b[:, 4:] % 3  # (agreeing examples: fowlkes_mallows asks ``if tk != 0``)
    exact(f, a, b)
    exact(f, a.T.copy(), b.T.copy(), in_axes=-1)
    exact(f, a.reshape(2, 3, 30), b.reshape(2, 3, 30), nested=True)


def test_sklearn_calinski_harabasz():
    metrics = pytest.importorskip("sklearn.metrics")
    for dtype in (np.float32, np.float64):
        xs = spread((5, 60, 3), dtype)
        exact(metrics.calinski_harabasz_score, xs, labels(5, 60, 4))
    exact(metrics.calinski_harabasz_score, spread((2, 3, 30, 2)),
          labels(6, 30, 3).reshape(2, 3, 30), nested=True)


def test_scipy_wilcoxon():
    stats = pytest.importorskip("scipy.stats")
    x, y = spread((6, 14)), spread((6, 14))
    exact(lambda a, b: tuple(stats.wilcoxon(a, b)), x, y)
    exact(lambda a, b: tuple(stats.wilcoxon(a, b, alternative="less")), x.T.copy(),
          y.T.copy(), in_axes=-1)
