"""Selections by a batched boolean mask whose count differs per example (rules/ragged.py):
vectorised through elementwise ops, reductions and writes back, compared with the loop; every
other use reruns the function per example (or raises with fallback='error')."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import batchtensor as bt
from loop_reference import LAYOUTS, assert_same, laid_out, loop_vmap, vectorised

RNG = np.random.default_rng(7)


def vectorised_and_loop(f, *args, in_axes=0):
    """vmap's result with no rerun and no per-op loop allowed, the loop's, and both runs'
    inputs afterwards (writes into inputs must match too)."""
    a = [np.copy(x) if isinstance(x, np.ndarray) else x for x in args]
    b = [np.copy(x) if isinstance(x, np.ndarray) else x for x in args]
    with warnings.catch_warnings():
        warnings.simplefilter("error", bt.PerformanceWarning)
        got = bt.vmap(f, in_axes, fallback="error")(*a)
    want = loop_vmap(f, in_axes)(*b)
    return got, want, a, b


def check(f, *args, in_axes=0, rtol=None):
    got, want, a, b = vectorised_and_loop(f, *args, in_axes=in_axes)
    assert_same(got, want, rtol=rtol)
    for x, y in zip(a, b):
        if isinstance(x, np.ndarray):
            np.testing.assert_array_equal(x, y)
    return got


def scale_negatives(x, a=0.1):
    x[x < 0] = x[x < 0] * a
    return x


def scale_negatives_inplace(x):
    y = x.copy()
    y[y < 0] *= 3
    return y


def piecewise(x):
    y = np.zeros_like(x)
    m = x > 0
    y[m] = np.exp(-x[m]) + 1
    y[~m] = x[~m] ** 2
    return y


PATTERNS = {
    "x[m] = x[m] * a": lambda x: scale_negatives(x.copy()),
    "out[m] *= a": scale_negatives_inplace,
    "y[m] = g(x[m])": piecewise,
    "x[m].sum()": lambda x: x[x > 0].sum(),
    "x[m].mean()": lambda x: x[x > 0.3].mean(),
    "np.median(x[m])": lambda x: np.median(x[x > -0.2]),
    "std / var": lambda x: np.stack([x[x > -0.5].std(ddof=1), np.var(x[x > -0.5])]),
    "min / max / ptp": lambda x: np.stack([x[x > -1].min(), np.max(x[x > -1]),
                                            np.ptp(x[x > -1])]),
    "argmin / argmax": lambda x: np.stack([x[x > -1].argmin(), np.argmax(x[x > -1])]),
    "any / all": lambda x: np.stack([np.any(x[x > 0] > 1), x[x > 0].all()]),
    "count_nonzero": lambda x: np.count_nonzero(x[x > 0] > 0.5),
    "size in a truth test": lambda x: x[x > -3].sum() if x[x > -3].size else 0.0,
    "cumsum": lambda x: np.sum(np.cumsum(x[x > 0]) ** 2),
    "np.where on a selection": lambda x: np.where(x[x > 0] > 1, 1.0, x[x > 0]).sum(),
    "np.clip and round": lambda x: np.round(np.clip(x[x > -1], 0, 0.5), 2).sum(),
    "nansum / nanmean": lambda x: np.stack([np.nansum(x[x > 0]), np.nanmean(x[x > 0])]),
    "abs, neg, comparisons": lambda x: np.sum(-abs(x[x < 0.5]) >= -1),
    "per-example scalar operand": lambda x: (x[x > 0] * x.sum()).sum(),
    "a copy, then written": lambda x: (lambda s: (s.__imul__(2), x)[1])(x[x > 0]),
    "astype": lambda x: x[x > 0].astype(np.float32).sum(),
    "np.add.reduce": lambda x: np.add.reduce(x[x > 0]),
    "np.maximum.reduce": lambda x: np.maximum.reduce(x[x > -1]),
}


@pytest.mark.parametrize("name", sorted(PATTERNS))
def test_pattern_vectorised(name):
    xs = RNG.normal(size=(6, 9))
    check(PATTERNS[name], xs)


@pytest.mark.parametrize("name", ["x[m] = x[m] * a", "y[m] = g(x[m])", "x[m].sum()",
                                  "np.median(x[m])", "std / var", "argmin / argmax"])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_input_layouts(name, layout):
    xs, in_axes = laid_out(RNG.normal(size=(6, 9)), layout)
    check(PATTERNS[name], xs, in_axes=in_axes)


@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.int8, np.uint16, np.complex128,
                                   np.bool_])
def test_dtypes(dtype):
    xs = (RNG.normal(size=(5, 8)) * 4).astype(dtype) if dtype is not np.complex128 \
        else RNG.normal(size=(5, 8)) + 1j * RNG.normal(size=(5, 8))
    check(lambda x: x[x != 0].sum(), xs)
    check(lambda x: x[np.real(x) > 0].mean(), xs)
    check(lambda x: np.stack([np.cumsum(x[x != 0]).sum(), np.prod(x[x != 0]),
                              x[x != 0].any(), np.cumprod(x[x != 0]).sum()]), xs)
    if dtype is not np.complex128:
        check(lambda x: np.median(x[x > 0]), xs)
        check(lambda x: x[x > 0].max(initial=0), xs)
        check(lambda x: np.stack([x[x > 0].min(initial=9), x[x > 0].max(initial=0)]), xs)


def test_empty_selection_in_some_examples():
    xs = RNG.normal(size=(5, 6))
    xs[1] = -1.0  # example 1 selects nothing
    check(lambda x: x[x > 0].sum(), xs)
    check(lambda x: x[x > 0].sum() if np.size(x[x > -3]) else 0.0, xs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # mean of an empty slice, as the loop
        check(lambda x: x[x > 0].mean(), xs)
        check(lambda x: np.median(x[x > 0]), xs)
        check(lambda x: np.nanmean(x[x > 0]), xs)
    check(lambda x: x[x > 0].max(initial=-np.inf), xs)
    for f in (lambda x: x[x > 0].max(), lambda x: np.argmin(x[x > 0])):
        with pytest.raises(ValueError, match="empty|zero-size"):
            loop_vmap(f)(xs)
        with pytest.raises(ValueError, match="empty|zero-size"):
            bt.vmap(f, fallback="error")(xs)


@pytest.mark.parametrize("empty", [[4], [3, 4], [0, 4], [0], [1, 2]])
def test_empty_examples_anywhere_keep_the_others_elements(empty):
    # an empty example at the end once cut the example before it short by one element (its
    # segment's end was taken as the last element, not past it): a wrong sum, no error
    xs = RNG.normal(size=(5, 6)) + 0.5
    xs[empty] = -1.0
    for f in (lambda x: x[x > 0].sum(), lambda x: x[x > 0].prod(), lambda x: np.nansum(x[x > 0]),
              lambda x: x[x > 0].sum(axis=0),
              lambda x: np.count_nonzero(np.isnan(x[x > 0])) + x[x > 0].min(initial=9.0)):
        vectorised(f, xs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # mean of an empty selection
        vectorised(lambda x: np.nanmean(x[x > 0]), xs)


def test_nan_positions():
    xs = RNG.normal(size=(5, 7))
    xs[0, :] = np.abs(xs[0]) + 0.1
    xs[0, 3] = np.nan
    xs[2, 1] = np.nan
    for f in (lambda x: x[~(x < 0)].sum(), lambda x: np.median(x[~(x < 0)]),
              lambda x: x[~(x < 0)].max(), lambda x: np.nanmean(x[~(x < 0)]),
              lambda x: np.nansum(x[~(x < 0)]), lambda x: x[~(x < 0)].argmax()):
        check(f, xs)


@pytest.mark.filterwarnings("ignore:Mean of empty slice:RuntimeWarning",
                            "ignore:invalid value encountered:RuntimeWarning")
def test_selection_of_rows_reduces_along_either_axis():
    xs = RNG.normal(size=(5, 6, 3))
    check(lambda x: x[x[:, 0] > 0].sum(axis=(0, 1), keepdims=True), xs)
    check(lambda x: x[x[:, 0] > 0].min(axis=0, keepdims=True, initial=5.0), xs)
    check(lambda x: x[x[:, 0] > 0].max(axis=-1).sum(), xs)
    check(lambda x: x[x[:, 0] > 0].cumsum(axis=0).sum(axis=0), xs)
    check(lambda x: np.argmax(x[x[:, 0] > 0], axis=1).sum(), xs)

    def rows(x):
        sel = x[x[:, 0] > 0]  # whole rows: (count, 3) per example
        return np.stack([sel.sum(axis=0), sel.mean(axis=0), sel.max(axis=0, initial=-9)])

    check(rows, xs)
    check(lambda x: x[x[:, 0] > 0].sum(axis=1).sum(), xs)  # per row: still ragged, then total
    check(lambda x: x[x[:, 0] > 0].sum(), xs)

    def write_rows(x):
        y = x.copy()
        m = y[:, 1] < 0
        y[m] = y[m] * np.array([1.0, 2.0, 3.0])
        return y

    check(write_rows, xs)


def test_two_dimensional_mask():
    xs = RNG.normal(size=(4, 3, 5))
    check(lambda x: x[x > 0.5].sum() + x[x > 0.5].max(initial=0), xs)
    check(lambda x: scale_negatives(x.copy(), 7), xs)


def test_two_masks_with_equal_counts_combine_by_position():
    xs = RNG.normal(size=(5, 8))
    check(lambda x: (x[x > 0] * x[::-1][x[::-1] > 0]).sum(), xs)

    def swap_signs(x):
        y = x.copy()
        y[x > 0] = -x[::-1][x[::-1] > 0]
        return y

    check(swap_signs, xs)


def test_writes_into_the_mapped_input_reach_it():
    xs = RNG.normal(size=(5, 8))
    check(scale_negatives, xs)  # compares the inputs after both runs, too


def test_partially_mapped_and_unbatched_operands():
    xs = RNG.normal(size=(5, 8))
    check(lambda x, a: scale_negatives(x.copy(), a), xs, 0.25, in_axes=(0, None))
    scales = RNG.normal(size=5)
    check(lambda x, a: scale_negatives(x.copy(), a), xs, scales)
    check(lambda x, w: (x[x > 0] * w[0]).sum(), xs, np.array([2.0, 3.0]), in_axes=(0, None))


@pytest.mark.parametrize("name", ["y[m] = g(x[m])", "np.median(x[m])", "out[m] *= a"])
def test_nested_vmap(name):
    """Batched at two levels, the inner level reruns per example, and each of those runs is
    vectorised over the outer level (a selection holds one level's examples)."""
    xs = RNG.normal(size=(3, 4, 6))
    f = PATTERNS[name]
    assert_same(bt.vmap(bt.vmap(f), fallback="silent")(xs), loop_vmap(loop_vmap(f))(xs))
    ys = RNG.normal(size=(4, 6))  # only the outer level batched inside: vectorised
    with warnings.catch_warnings():
        warnings.simplefilter("error", bt.PerformanceWarning)
        got = bt.vmap(lambda x: bt.vmap(lambda y: f(x * y), in_axes=None, axis_size=2)(ys),
                      fallback="error")(xs[:, 0])
    assert_same(got, loop_vmap(lambda x: np.stack([f(x * ys)] * 2))(xs[:, 0]))


@pytest.mark.parametrize("n", [0, 1, 2])
def test_small_batches(n):
    xs = RNG.normal(size=(n, 7))
    for name in ("y[m] = g(x[m])", "x[m].sum()", "np.median(x[m])"):
        f = PATTERNS[name]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            got = bt.vmap(f, fallback="error")(xs)
            if n:
                assert_same(got, loop_vmap(f)(xs))
            else:  # no example to run: the shape and dtype of one example's result
                one = np.asarray(f(RNG.normal(size=7)))
                assert (got.shape, got.dtype) == ((0,) + one.shape, one.dtype)


NO_BATCHED_MEANING = {
    "len": lambda x: len(x[x > 0]) * 1.0,
    # a Python int times the loop's Python int stays a Python int (a NumPy value: weak)
    "size": lambda x: x[x > 0].size * 2,
    "np.size": lambda x: (np.size(x[x > 0]) + 1) / 2,
    "shape": lambda x: x[x > 0].shape[0] * 1.0,
    "index": lambda x: x[x > 0][0] if (x > 0).any() else 0.0,
    "np.sort": lambda x: np.sort(x[x > 0])[-1] if (x > 0).any() else 0.0,
    "returned": lambda x: x[x > 0],
    "different counts combined": lambda x: (x[x > 0] + x[x > 0.5]).sum(),
    "for loop": lambda x: sum(v for v in x[x > 0]),
}


@pytest.mark.parametrize("name", sorted(NO_BATCHED_MEANING))
def test_other_uses_rerun_per_example_or_raise(name):
    xs = RNG.normal(size=(6, 5))
    xs[:, 0] = np.abs(xs[:, 0]) + 0.7  # every example selects something, counts differ
    f = NO_BATCHED_MEANING[name]
    with pytest.raises(bt.BatchingError, match="boolean mask selects between"):
        bt.vmap(f, fallback="error")(xs)
    try:
        want = loop_vmap(f)(xs)
    except ValueError:  # the loop cannot stack or combine them: vmap raises too
        with pytest.raises((ValueError, bt.BatchingError)):
            bt.vmap(f, fallback="silent")(xs)
        return
    assert_same(bt.vmap(f, fallback="silent")(xs), want)


def test_equal_counts_stay_an_ordinary_batched_value():
    xs = RNG.normal(size=(4, 6))  # three positives in every example
    xs[:, :3] = -np.abs(xs[:, :3]) - 0.1
    xs[:, 3:] = np.abs(xs[:, 3:]) + 0.1
    got = bt.vmap(lambda x: x[x > 0] * 2)(xs)
    assert_same(got, loop_vmap(lambda x: x[x > 0] * 2)(xs))


# ---- selections from an unbatched array, and what rank computations do with them -------------------
TIES = RNG.integers(0, 4, (6, 9)).astype(float)  # ties: a different count of unique values


def test_an_unbatched_array_indexed_by_a_batched_mask():
    """``np.arange(n)[mask]`` with a mask whose count differs per example: each example
    selects from the same values (a selection, kept vectorised while it stays inside)."""
    def f(x):
        m = x > 1
        return (np.arange(9.0)[m] * 2).sum()

    check(f, TIES)


@pytest.mark.parametrize("append", ["scalar", "per example"])
def test_diff_of_a_selection_with_one_element_appended(append):
    def f(x):
        starts = np.arange(9)[np.concatenate([[True], x[1:] != x[:-1]])]
        end = 9 if append == "scalar" else np.asarray([x.size], dtype=starts.dtype)
        counts = np.diff(starts, append=end)
        return (counts * 1.5).sum() + counts.max()

    check(f, np.sort(TIES, axis=1))


@pytest.mark.parametrize("append", [True, 2, "per example"])
def test_diff_of_a_boolean_selection(append):
    """NumPy's diff compares booleans (not_equal); appending an int makes it subtract ints."""
    def f(x):
        s = x[x > 1] > 3
        end = np.asarray([x[0] > 0]) if append == "per example" else append
        return np.diff(s, append=end).sum()

    check(f, np.array([[0.0, 2, 5, 4], [2.0, 0, 0, 7], [3.0, 0, 0, 0]]))


def test_repeat_of_a_selection_by_its_counts_is_a_batch_again():
    def f(x):
        y = np.sort(x)
        keep = np.concatenate([[True], y[1:] != y[:-1]])
        starts = np.arange(y.size)[keep]
        counts = np.diff(starts, append=np.asarray([y.size], dtype=starts.dtype))
        return np.repeat(y[keep] * 10.0, counts)  # y again, each value times ten

    got, want, _, _ = vectorised_and_loop(f, TIES)
    assert_same(got, want)
    assert got.shape == TIES.shape


def test_asarray_of_a_selection_converts_its_elements():
    def f(x):
        s = x[x > 1]
        return (np.asarray(s, dtype=np.float32) + np.array(s)).sum()

    check(f, TIES)


@pytest.mark.parametrize("method", ["average", "min", "max", "dense", "ordinal"])
def test_scipy_rankdata_with_ties_is_vectorised(method):
    stats = pytest.importorskip("scipy.stats", reason="SciPy is a test extra")
    f = lambda x: stats.rankdata(x, method=method)  # noqa: E731
    with warnings.catch_warnings():
        warnings.simplefilter("error", bt.PerformanceWarning)
        got = bt.vmap(f, fallback="error")(TIES)
    assert_same(got, loop_vmap(f)(TIES))


# ---- np.repeat with repeats of their own per example ----------------------------------------------
def test_repeat_with_batched_counts_of_equal_totals():
    counts = np.array([[1, 2, 0], [0, 0, 3], [3, 0, 0], [1, 1, 1]])
    xs = RNG.normal(size=(4, 3))
    check(lambda x, c: np.repeat(x, c), xs, counts)
    check(lambda x, c: np.repeat(x, c, axis=-1), xs, counts)
    check(lambda x, c: x.repeat(c), xs, counts)
    check(lambda c: np.repeat(np.arange(3.0), c), counts)  # x unbatched


def test_repeat_with_batched_counts_of_different_totals_fails_as_the_loop():
    counts, xs = np.array([[1, 2, 0], [0, 0, 1]]), RNG.normal(size=(2, 3))
    f = lambda x, c: np.repeat(x, c)  # noqa: E731
    with pytest.raises(ValueError):
        loop_vmap(f)(xs, counts)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", bt.PerformanceWarning)
        with pytest.raises((ValueError, bt.BatchingError)):
            bt.vmap(f)(xs, counts)


# ---- np.extract and np.place: SciPy's distributions ---------------------------------------------
def log_where_positive(x):
    """SciPy's distributions' pattern: compute on np.extract(cond, x), np.place it back."""
    cond = x > 0
    out = np.zeros(x.shape)  # a buffer, batched by the first batched write
    out.fill(-np.inf)
    np.place(out, cond, np.log(np.extract(cond, x)))
    return out


def log_where_positive_of_plain(x):
    cond = x > 0
    base = np.arange(1.0, 1.0 + x.size).reshape(x.shape)  # plain: the same in every example
    out = np.zeros_like(x)  # batched from the start
    np.place(out, cond, np.sqrt(np.extract(cond, base)) * 2.0)
    return out


@pytest.mark.parametrize("f", [log_where_positive, log_where_positive_of_plain],
                         ids=lambda f: f.__name__)
@pytest.mark.parametrize("in_axes", [0, -1])
def test_extract_then_place_with_counts_that_differ(f, in_axes):
    xs = np.array([[1.0, -2.0, 3.0, 0.5], [-1.0, -1.0, 2.0, 4.0], [1.0, 2.0, 3.0, 4.0],
                   [-1.0, -2.0, -3.0, -4.0]])  # 3, 2, 4 and 0 selected
    xs = xs if in_axes == 0 else np.ascontiguousarray(xs.T)
    vectorised(f, xs, in_axes=in_axes)
    vectorised(f, xs.reshape((4, 2, 2)) if in_axes == 0 else xs.reshape((2, 2, 4)),
               in_axes=in_axes)


def test_extract_of_a_plain_structured_array():
    """A plain array of any dtype is copied per example by a gather (not by arithmetic, which
    has no structured dtype); a field of the selection then runs per example."""
    table = np.array([(1, 2.0), (3, 4.0), (5, 6.0)], dtype="i4,f8")

    def f(x):
        return np.extract(x > 0, table)["f0"].sum()

    xs = np.array([[1.0, -1.0, 1.0], [1.0, 1.0, 1.0], [-1.0, -1.0, -1.0]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", bt.PerformanceWarning)
        got = bt.vmap(f)(xs)
    assert_same(got, loop_vmap(f)(xs))
    vectorised(lambda x: np.extract(x > 0, table).size, xs)


def test_extract_with_equal_counts_is_a_batch():
    def f(x):
        return np.extract(x > 0, x) * 2.0

    xs = np.array([[1.0, -2.0, 3.0], [-1.0, 2.0, 4.0]])
    got = vectorised(f, xs)
    assert got.shape == (2, 2)


def test_place_of_a_selection_with_other_counts_runs_per_example():
    """np.place cycles fewer values than the mask selects: a selection by another mask has
    no batched meaning there, and the function runs once per example, as the loop."""
    def f(x):
        out = np.zeros_like(x)
        np.place(out, x > 0, np.extract(x > 1, x))
        return out

    xs = np.array([[0.5, 2.0, 3.0, -1.0], [2.0, 0.5, 1.7, 4.0]])  # 2 and 3 values, 3 and 4 places
    with pytest.warns(bt.PerformanceWarning, match="once per example"):
        got = bt.vmap(f)(xs)
    assert_same(got, loop_vmap(f)(xs))


@pytest.mark.parametrize("dtype", [np.bool_, np.int16, np.float32, np.complex64])
@pytest.mark.parametrize("exponent", [2, -1, 0.5, 3, 2.0])
def test_power_with_a_python_exponent_is_the_arrays_operator(dtype, exponent):
    # ndarray's ** computes x ** 2 as np.square (int8 for bool), ** -1 as reciprocal, ** 0.5
    # as sqrt: a selection is an array in every example, so it must do the same
    def f(x):
        s = x[x.real > 0.3].astype(dtype)
        r = s ** exponent
        if dtype is not np.bool_:
            s **= 1  # (the in-place form; NumPy cannot write bool ** 1's int64 into bool)
        return r.sum(), (r ** 1).dtype.itemsize, s.sum()
    xs = np.random.default_rng(3).random((4, 9))
    if exponent == -1 and dtype in (np.bool_, np.int16):
        with pytest.raises(ValueError, match="negative integer powers"):
            loop_vmap(f)(xs)
        with pytest.raises(ValueError, match="negative integer powers"):
            bt.vmap(f, fallback="error")(xs)
        return
    with np.errstate(all="ignore"):
        want = loop_vmap(f)(xs)
        got = bt.vmap(f, fallback="error")(xs)
    assert_same(got, want)
