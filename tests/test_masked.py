"""Masked arrays made inside the function (docs/semantics.md, "Masked arrays"): ``numpy.ma`` on
a batched value runs vectorised on one masked array that holds every example
(``batchtensor/masked.py``), with the loop's values and masks; what has no vectorised path runs
once per example (the per-op loop, warned)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import batchtensor as bt
from batchtensor.boxed.loop import reset_warnings
from batchtensor.masked import BatchedMaskedArray
from loop_reference import LAYOUTS, laid_out, on_threads

RNG = np.random.default_rng(23)
XS = RNG.normal(size=(5, 6))
XS[0, 1], XS[2, 3], XS[3, 0] = np.nan, np.inf, np.nan
XS[4] = np.nan  # an example with every element masked
CLEAN = RNG.normal(size=(4, 6))  # examples without an invalid value


def loop(f, *xs, in_axes=0):
    """The loop, stacked as np.ma.stack stacks masked results."""
    axes = in_axes if isinstance(in_axes, tuple) else (in_axes,) * len(xs)
    n = next(x.shape[a] for x, a in zip(xs, axes) if a is not None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        outs = [f(*(x if a is None else np.moveaxis(x, a, 0)[i] for x, a in zip(xs, axes)))
                for i in range(n)]  # (views: a write reaches the argument, as in vmap)
    if isinstance(outs[0], (tuple, list)):  # a pytree of results, as vmap returns it
        return type(outs[0])(_stack([o[j] for o in outs]) for j in range(len(outs[0])))
    return _stack(outs)


def _stack(outs):
    if any(isinstance(o, np.ma.MaskedArray) for o in outs):
        return np.ma.stack(outs)
    return np.stack(outs)


def assert_same_masked(got, want, rtol=1e-12):
    """Same masks, same data where unmasked, same dtype. The data under a mask is not
    compared: the loop's np.ma.masked holds 0, the batch's masked element what the
    computation left there (numpy.ma leaves it unspecified)."""
    if isinstance(want, (tuple, list)):
        assert type(got) is type(want) and len(got) == len(want)
        for g, w in zip(got, want):
            assert_same_masked(g, w, rtol)
        return
    mg, mw = np.ma.getmaskarray(got), np.ma.getmaskarray(want)
    np.testing.assert_array_equal(mg, mw)
    dg, dw = np.ma.getdata(got), np.ma.getdata(want)
    assert dg.shape == dw.shape and dg.dtype == dw.dtype, (dg.shape, dw.shape, dg.dtype,
                                                           dw.dtype)
    np.testing.assert_allclose(dg[~mw], dw[~mw], rtol=rtol, equal_nan=True)
    if mw.any():
        assert isinstance(got, np.ma.MaskedArray)


def vectorised(f, *xs, in_axes=0, rtol=1e-12):
    """``f`` runs without a per-example loop (``fallback="error"``) and gives the loop's
    result."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", bt.PerformanceWarning)
        got = bt.vmap(f, in_axes=in_axes, fallback="error")(*xs)
    assert_same_masked(got, loop(f, *xs, in_axes=in_axes), rtol)
    return got


PATTERNS = {
    "masked_invalid().mean()": lambda x: np.ma.masked_invalid(x).mean(),
    "masked_invalid().std(ddof=1)": lambda x: np.ma.masked_invalid(x).std(ddof=1),
    "masked_invalid().var(axis=0)": lambda x: np.ma.masked_invalid(x.reshape(2, 3)).var(axis=0),
    "masked_where().filled(0)": lambda x: np.ma.masked_where(x > 0.5, x).filled(0.0),
    "masked_greater().sum()": lambda x: np.ma.masked_greater(x, 0.0).sum(),
    "masked_outside().count()": lambda x: np.ma.masked_outside(x, -1.0, 1.0).count(),
    "count(axis, keepdims)": lambda x: np.ma.masked_invalid(x.reshape(3, 2)).count(
        axis=-1, keepdims=True),
    "np.ma.log masks the domain": lambda x: np.ma.log(x),
    "np.log of a masked array": lambda x: np.log(np.ma.masked_invalid(x)),
    "operators": lambda x: (np.ma.masked_invalid(x) * 2 + 1) / np.ma.masked_less(x, 0),
    "comparison": lambda x: np.ma.masked_invalid(x) > 0,
    "getmaskarray": lambda x: np.ma.getmaskarray(np.ma.masked_invalid(x)),
    "getdata": lambda x: np.ma.getdata(np.ma.masked_invalid(x)) * 1.0,
    "is_masked": lambda x: np.ma.is_masked(np.ma.masked_invalid(x)),
    "median": lambda x: np.ma.median(np.ma.masked_invalid(x)),
    "median axis=0": lambda x: np.ma.median(np.ma.masked_invalid(x.reshape(2, 3)), axis=0),
    "average": lambda x: np.ma.average(np.ma.masked_invalid(x), weights=np.arange(6.0) + 1),
    "average returned": lambda x: np.ma.average(np.ma.masked_invalid(x.reshape(2, 3)),
                                                axis=1, weights=[1.0, 2.0, 3.0],
                                                returned=True),
    "argmin, argmax": lambda x: (np.ma.masked_invalid(x).argmin(),
                                 np.ma.masked_invalid(x.reshape(2, 3)).argmax(axis=1)),
    "min, max, ptp": lambda x: (np.ma.min(np.ma.masked_invalid(x)),
                                np.ma.masked_invalid(x).max(), np.ma.ptp(np.ma.masked_invalid(x))),
    "np.sum, np.mean on a masked array": lambda x: (np.sum(np.ma.masked_invalid(x)),
                                                    np.mean(np.ma.masked_invalid(x))),
    "cumsum": lambda x: np.ma.masked_invalid(x).cumsum(),
    "compressed().sum()": lambda x: np.ma.masked_invalid(x).compressed().sum(),
    "a masked array returned": lambda x: np.ma.masked_invalid(x),
    "fix_invalid": lambda x: np.ma.fix_invalid(x, fill_value=-1.0),
    "masked_values, 2-d": lambda x: np.ma.atleast_2d(np.ma.masked_values(x, 0.0)),
    "array(mask=)": lambda x: np.ma.array(x, mask=~np.isfinite(x)).sum(),
    "masked_array(mask=plain)": lambda x: np.ma.masked_array(
        x, mask=[True, False, False, False, False, True]).mean(),
    "MaskedArray(ndmin=2)": lambda x: np.ma.MaskedArray(x, ndmin=2),
    "x[i], x[1:]": lambda x: (np.ma.masked_invalid(x)[2], np.ma.masked_invalid(x)[1:]),
    "x[1:] = masked": lambda x: _set(np.ma.masked_invalid(x), slice(1, 3), np.ma.masked),
    "x[cond] = masked": lambda x: _set_where(np.ma.masked_invalid(x)),
    "x[argsort()[:2]] = masked": lambda x: _set_sorted(np.ma.masked_invalid(x)),
    "sort": lambda x: np.ma.sort(np.ma.masked_invalid(x)),
    "reshape, transpose, ravel": lambda x: np.ma.masked_invalid(x).reshape(2, 3).T.ravel(),
    "np.ma.minimum.reduce": lambda x: np.ma.minimum.reduce(np.ma.masked_invalid(x)),
    "np.ma.add.reduce": lambda x: np.ma.add.reduce(np.ma.masked_invalid(x)),
    "in place": lambda x: _iadd(np.ma.masked_invalid(x)),
    "cov": lambda x: np.ma.cov(np.ma.masked_invalid(x.reshape(2, 3))),
    "cov rowvar=False": lambda x: np.ma.cov(np.ma.masked_invalid(x.reshape(3, 2)), rowvar=False),
    "corrcoef": lambda x: np.ma.corrcoef(np.ma.masked_invalid(x.reshape(2, 3))),
    "dot": lambda x: np.ma.dot(np.ma.masked_invalid(x.reshape(2, 3)),
                               np.ma.masked_invalid(x.reshape(3, 2))),
    "dot of 1-d": lambda x: np.ma.dot(np.ma.masked_invalid(x), np.arange(6.0)),
    "concatenate": lambda x: np.ma.concatenate([np.ma.masked_invalid(x), x[:2]]),
    "concatenate without masks": lambda x: np.ma.concatenate([np.ma.asarray(x), x[:2]]),
    "stack, column_stack, vstack": lambda x: (
        np.ma.stack([np.ma.masked_invalid(x), np.ma.masked_greater(x, 0)], axis=1),
        np.ma.column_stack([np.ma.masked_invalid(x), x]),
        np.ma.vstack([np.ma.masked_invalid(x), np.ones(6)])),
    "diagonal": lambda x: np.ma.diagonal(np.ma.masked_invalid(x[:4].reshape(2, 2))),
    "allclose": lambda x: (np.ma.allclose(np.ma.masked_invalid(x), np.ma.masked_invalid(x) + 1e-9),
                           np.ma.allclose(np.ma.masked_invalid(x), x * 1.1),
                           np.ma.allclose(np.ma.masked_invalid(x), 0.0, masked_equal=False)),
    "allclose with infinities": lambda x: np.ma.allclose(x, np.where(np.isinf(x), x, x + 1e-12)),
    "**= writes in place": lambda x: _ipow(np.ma.masked_invalid(x)),
}


def _ipow(m):
    alias = m  # each example's m **= 2 writes into its own array, which alias sees
    m **= 2
    return alias


def _set(m, key, value):
    m[key] = value
    return m


def _set_where(m):
    m[(m > 0.5).filled(True)] = np.ma.masked
    return m


def _set_sorted(m):
    m[m.argsort()[:2]] = np.ma.masked
    return m


def _iadd(m):
    m += np.ma.masked_greater(np.ones(6), 2.0)
    return m


@pytest.mark.parametrize("name", PATTERNS)
def test_numpy_ma_patterns_run_vectorised(name):
    vectorised(PATTERNS[name], XS)


@pytest.mark.parametrize("name", ["masked_invalid().mean()", "median", "argmin, argmax",
                                  "a masked array returned", "x[argsort()[:2]] = masked"])
@pytest.mark.parametrize("dtype", [np.float32, np.int64])
def test_other_dtypes(name, dtype):
    xs = (XS * 10).astype(dtype) if dtype != np.int64 else np.nan_to_num(XS * 10).astype(dtype)
    vectorised(PATTERNS[name], xs, rtol=1e-5)


def test_a_reductions_fully_masked_example_promotes_as_the_loops_np_ma_stack():
    # the loop's np.ma.masked is a float64: np.ma.stack of it and float32 scalars is float64
    got = vectorised(lambda x: np.ma.masked_invalid(x).sum(), XS.astype(np.float32), rtol=1e-5)
    assert got.dtype == np.float64 and got.mask[4]
    # and without a fully masked example, the float32 scalars as they are, unmasked
    got = vectorised(lambda x: np.ma.masked_invalid(x).sum(), XS[:4].astype(np.float32),
                     rtol=1e-5)
    assert type(got) is np.ndarray and got.dtype == np.float32


def test_median_of_an_example_without_masked_elements_is_np_median():
    # numpy.ma.median takes np.median where nothing is masked (NaN for data with a NaN),
    # which the batch's masked path would not give
    xs = CLEAN.copy()
    xs[0, 2] = np.nan  # example 0: a NaN and nothing masked: np.median gives NaN
    f = lambda x: np.ma.median(np.ma.masked_greater(x, 1.0))  # noqa: E731
    got = vectorised(f, xs)
    assert np.isnan(got[0])


@pytest.mark.parametrize("in_axes", [0, 1, -1])
def test_in_axes(in_axes):
    xs = XS if in_axes == 0 else np.ascontiguousarray(np.moveaxis(XS, 0, in_axes))
    for name in ("a masked array returned", "masked_invalid().mean()", "x[1:] = masked"):
        vectorised(PATTERNS[name], xs, in_axes=in_axes)


def test_layouts_transposed_negative_strides_read_only():
    xs = np.asfortranarray(XS)
    ro = XS.copy()
    ro.flags.writeable = False
    for x in (xs, XS[::-1], ro, np.ascontiguousarray(XS.T).T):
        vectorised(PATTERNS["masked_invalid().std(ddof=1)"], x)
        vectorised(PATTERNS["a masked array returned"], x)


def test_partial_unbatched_arguments():
    w = RNG.normal(size=6)
    f = lambda x, w: np.ma.masked_invalid(x * w).sum() + np.ma.masked_less(w, 0).mean()  # noqa
    vectorised(f, XS, w, in_axes=(0, None))
    g = lambda x, w: np.ma.masked_where(w > 0, x).filled(0.0)  # noqa: E731  (plain condition)
    vectorised(g, XS, w, in_axes=(0, None))
    h = lambda w, x: np.ma.masked_where(x > 0, w)  # noqa: E731  (plain data, batched condition)
    vectorised(h, w, XS, in_axes=(None, 0))


def test_a_plain_masked_array_beside_a_batched_value():
    plain = np.ma.masked_greater(RNG.normal(size=6), 0.5)
    for f in (lambda x: x + plain, lambda x: plain * x, lambda x: np.add(x, plain),
              lambda x: np.sum(x * plain), lambda x: x > plain):
        vectorised(f, CLEAN)


# (2, 5, 6): every example different (its own generator: RNG's draws stay as they were)
GRID = np.stack([XS, np.random.default_rng(7).permutation(XS, axis=1)])


def nested_loop(f, grid):
    outs = [loop(f, g) for g in grid]
    if isinstance(outs[0], (tuple, list)):
        return type(outs[0])(_stack([o[j] for o in outs]) for j in range(len(outs[0])))
    return _stack(outs)


# a ragged selection is of one level's examples: in a nested vmap compressed() runs once per
# example of the inner level (each of those a batch of the outer level's examples)
NESTED_PER_OP = {"compressed().sum()"}


@pytest.mark.parametrize("layout", ["in_axes 0, 0", "outer in_axes 1", "inner in_axes -1"])
@pytest.mark.parametrize("name", PATTERNS)
def test_nested_vmap_runs_vectorised(name, layout):
    # the masked batch holds the examples of both levels (a batch axis for each)
    f = PATTERNS[name]
    if name in NESTED_PER_OP:
        reset_warnings()
        with pytest.warns(bt.PerformanceWarning, match="once per example"):
            got = bt.vmap(bt.vmap(f))(GRID)
        assert_same_masked(got, nested_loop(f, GRID))
        return
    if layout == "in_axes 0, 0":
        mapped, grid = bt.vmap(bt.vmap(f), fallback="error"), GRID
    elif layout == "outer in_axes 1":
        mapped = bt.vmap(bt.vmap(f), in_axes=1, fallback="error")
        grid = np.ascontiguousarray(GRID.transpose(1, 0, 2))
    else:
        mapped = bt.vmap(bt.vmap(f, in_axes=-1), fallback="error")
        grid = np.ascontiguousarray(GRID.transpose(0, 2, 1))
    with warnings.catch_warnings():
        warnings.simplefilter("error", bt.PerformanceWarning)
        got = mapped(grid)
    assert_same_masked(got, nested_loop(f, GRID))


@pytest.mark.parametrize("sizes", [(0, 5), (2, 0), (1, 1)])
def test_nested_vmap_batch_sizes(sizes):
    grid = GRID[:sizes[0], :sizes[1]]
    for name in ("masked_invalid().mean()", "a masked array returned", "median"):
        got = bt.vmap(bt.vmap(PATTERNS[name]), fallback="error")(grid)
        if grid.size:
            assert_same_masked(got, nested_loop(PATTERNS[name], grid))
        else:
            assert np.shape(got)[:2] == sizes


def test_nested_values_of_one_level_meet():
    # a masked array of the outer level's examples meets one of the inner level's: each
    # broadcasts along the other's batch axis, as the examples do
    ws = np.random.default_rng(8).normal(size=(2, 6))

    def outer(w, xs):
        m = np.ma.masked_less(w, 0.0)  # batched at the outer level only
        return bt.vmap(lambda x: (np.ma.masked_invalid(x) * m).sum(axis=0) + m.mean())(xs)

    got = bt.vmap(outer, in_axes=(0, None), fallback="error")(ws, XS)
    want = np.ma.stack([loop(lambda x: (np.ma.masked_invalid(x) * np.ma.masked_less(w, 0.0))
                             .sum(axis=0) + np.ma.masked_less(w, 0.0).mean(), XS) for w in ws])
    assert_same_masked(got, want)

    def outer2(w, xs):  # the inner level's masked batch written with the outer's values
        def inner(x):
            m = np.ma.masked_invalid(x)
            m[:2] = w[:2]
            return m
        return bt.vmap(inner)(xs)

    with pytest.raises(bt.BatchingError):
        bt.vmap(outer2, in_axes=(0, None), fallback="error")(ws, XS)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = bt.vmap(outer2, in_axes=(0, None))(ws, XS)

    def inner_loop(w):
        def inner(x):
            m = np.ma.masked_invalid(x)
            m[:2] = w[:2]
            return m
        return loop(inner, XS)
    assert_same_masked(got, np.ma.stack([inner_loop(w) for w in ws]))


def test_nested_writes_reach_the_inputs_as_the_loops_do():
    def f(x):
        m = np.ma.asarray(x)  # a view of x: a write through it reaches x
        m[1:3] = -1.0
        return m.sum()

    grid, want_grid = GRID.copy(), GRID.copy()
    got = bt.vmap(bt.vmap(f), fallback="error")(grid)
    want = np.stack([loop(f, g) for g in want_grid])
    assert_same_masked(got, want)
    np.testing.assert_array_equal(grid, want_grid)


def test_nested_per_op_loop_gives_the_loops_result():
    f = lambda x: np.ma.mask_rowcols(np.ma.masked_invalid(x.reshape(2, 3)))  # noqa: E731
    reset_warnings()  # (each op's loop warning is shown once a process)
    with pytest.warns(bt.PerformanceWarning, match="once per example"):
        got = bt.vmap(bt.vmap(f))(GRID)
    assert_same_masked(got, nested_loop(f, GRID))


def test_the_per_op_loop_serves_the_rest_and_says_so():
    f = lambda x: np.ma.mask_rowcols(np.ma.masked_invalid(x.reshape(2, 3)))  # noqa: E731
    reset_warnings()  # (each op's loop warning is shown once a process)
    with pytest.warns(bt.PerformanceWarning, match="once per example"):
        got = bt.vmap(f)(XS)
    assert_same_masked(got, loop(f, XS))
    with pytest.raises(bt.BatchingError, match="mask_rowcols"):
        bt.vmap(f, fallback="error")(XS)


def test_explain_names_the_masked_paths():
    report = bt.explain(PATTERNS["masked_invalid().mean()"], XS)
    paths = {op.op: op.path for op in report.ops}
    assert paths and set(paths.values()) == {"rule"}, paths
    assert "masked_invalid" in str(report)


def test_looks_like_a_masked_array():
    seen = {}

    def f(x):
        m = np.ma.masked_invalid(x)
        seen.setdefault("types", (isinstance(m, np.ma.MaskedArray), isinstance(m, np.ndarray),
                                  type(m) is BatchedMaskedArray, np.ma.isMaskedArray(m),
                                  np.ma.isMaskedArray(x)))
        seen.setdefault("shape", (m.shape, m.ndim, m.size, m.dtype, len(m)))
        return m.filled(0.0)

    vectorised(f, XS)  # (vmap first: the loop's examples answer after it)
    assert seen["types"] == (True, True, True, True, False)
    assert seen["shape"] == ((6,), 1, 6, np.float64, 6)


def test_branches_on_a_masked_value_run_as_groups():
    def f(x):
        m = np.ma.masked_invalid(x)
        if m.count() > 5:
            return m.mean()
        return m.sum()

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", bt.PerformanceWarning)
        got = bt.vmap(f)(XS)
    assert_same_masked(got, loop(f, XS))


def test_batch_sizes_one_and_zero():
    vectorised(PATTERNS["a masked array returned"], XS[:1])
    vectorised(PATTERNS["masked_invalid().mean()"], XS[4:])  # one fully masked example
    got = bt.vmap(PATTERNS["a masked array returned"])(XS[:0])
    assert isinstance(got, np.ma.MaskedArray) and got.shape == (0, 6)


def test_zero_d_and_size_zero_examples():
    vectorised(lambda x: np.ma.masked_invalid(x).sum(), XS[:, 0])
    vectorised(lambda x: np.ma.masked_invalid(x) * 2, XS[:, 0])
    vectorised(lambda x: np.ma.masked_invalid(x).sum(axis=0), XS[:, :0])


def test_writes_reach_the_input_as_in_the_loop():
    # np.ma.asarray keeps the data: a write into it is a write into the argument
    f = lambda x: _set(np.ma.asarray(x), 0, 7.0).sum()  # noqa: E731
    mine, theirs = XS.copy(), XS.copy()
    bt.vmap(f, fallback="error")(mine)
    loop(f, theirs)
    np.testing.assert_array_equal(mine, theirs)
    assert (mine[:, 0] == 7.0).all()


def test_threads():
    def run(i):
        xs = XS + i
        for _ in range(5):
            for name in ("masked_where().filled(0)", "median", "x[cond] = masked"):
                f = PATTERNS[name]
                assert_same_masked(bt.vmap(f, fallback="error")(xs), loop(f, xs))
                grid = GRID + i  # nested too
                assert_same_masked(bt.vmap(bt.vmap(f), fallback="error")(grid),
                                   nested_loop(f, grid))

    on_threads(run)


def test_masked_inputs_are_refused_with_what_to_pass():
    with pytest.raises(ValueError, match="masked array"):
        bt.vmap(lambda x: x)(np.ma.masked_invalid(XS))


def test_no_level_no_change():
    # outside a vmap, numpy.ma is NumPy's own
    assert np.ma.masked_invalid.__module__ == "numpy.ma.core"
    assert np.ma.MaskedArray.__new__ is vars(np.ma.MaskedArray)["__new__"].__func__


# ---- real code, unchanged: SciPy's statistics of masked data -----------------------------------
MSTATS = [("gmean", {}), ("hmean", {}), ("tmean", {}), ("tvar", {}), ("tmin", {}),
          ("tmax", {}), ("skew", {}), ("kurtosis", {}), ("variation", {}), ("sem", {}),
          ("zscore", {}), ("trimmed_mean", {"limits": (0.1, 0.2)}),
          ("trimboth", {"proportiontocut": 0.2}), ("winsorize", {"limits": (0.1, 0.1)}),
          ("idealfourths", {})]
# a count of kept elements that differs per example sets a length (int(n * 0.2), len(x)):
# these run once per example on data with invalid values, vectorised on data without
COUNTED = {"trimmed_mean", "trimboth", "winsorize", "idealfourths"}
# SciPy's wrapper asks whether anything is masked (np.any(mask)): examples with and without
# invalid values take different branches, which run as groups
BRANCHING = {"gmean", "hmean"}


@pytest.mark.parametrize("name, kw", MSTATS)
def test_scipy_mstats_runs_vectorised(name, kw):
    mstats = pytest.importorskip("scipy.stats.mstats", reason="SciPy is not installed")
    fn = getattr(mstats, name)
    f = lambda x: fn(np.ma.masked_invalid(x), **kw)  # noqa: E731
    vectorised(f, np.abs(CLEAN) + 0.5, rtol=1e-10)
    with_invalid = np.abs(XS[:4]) + 0.5
    if name in COUNTED or name in BRANCHING:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", bt.PerformanceWarning)
            assert_same_masked(bt.vmap(f)(with_invalid), loop(f, with_invalid), 1e-10)
    else:
        vectorised(f, with_invalid, rtol=1e-10)


# ---- memory: views, copies and shared data, as the loop's --------------------------------------
def test_filled_is_a_view_where_nothing_is_masked_and_a_copy_otherwise():
    def write_into_filled(x):
        d = np.ma.masked_greater(x, 10.0, copy=False).filled(0.0)  # x itself: nothing masked
        d[0] = 7.0
        return d

    def write_into_asarray(x):
        d = np.ma.asarray(x).filled(0.0)  # nomask: the data itself
        d[0] = 7.0
        return d

    for f in (write_into_filled, write_into_asarray):
        mine, theirs = CLEAN.copy(), CLEAN.copy()
        vectorised(f, mine)
        loop(f, theirs)
        np.testing.assert_array_equal(mine, theirs)
        assert (mine[:, 0] == 7.0).all()
    # every example masks something: copies, the input untouched
    g = lambda x: _set(np.ma.masked_greater(x, -10.0, copy=False).filled(0.0), 0, 7.0)  # noqa
    mine = CLEAN.copy()
    vectorised(g, mine)
    np.testing.assert_array_equal(mine, CLEAN)


def test_filled_of_examples_that_differ_is_read_only():
    # the loop's views write into x for the examples without a masked element only
    def f(x):
        d = np.ma.masked_invalid(x).filled(0.0)
        d[0] = 7.0
        return d

    with pytest.raises(ValueError, match="read-only"):
        bt.vmap(f, fallback="error")(XS.copy())
    got = vectorised(lambda x: np.ma.masked_invalid(x).filled(0.0) + 1, XS)  # reading is fine
    assert got.shape == XS.shape


def test_plain_data_under_a_batched_mask_is_shared_as_in_the_loop():
    data = RNG.normal(size=6)
    masks = RNG.random((4, 6)) < 0.4
    vectorised(lambda m: np.ma.array(data, mask=m).mean(), masks)
    vectorised(lambda m: np.ma.array(data, mask=m, copy=True).filled(0.0), masks)
    with pytest.raises(bt.SharedWriteError, match="copy=True"):
        bt.vmap(lambda m: _set(np.ma.array(data, mask=m), 0, 1.0).sum())(masks)
    vectorised(lambda m: _set(np.ma.array(data, mask=m, copy=True), 0, 1.0).sum(), masks)


def test_the_examples_own_masks_are_their_masks():
    # np.ma.array(x, mask=m) keeps m itself (copy=False): a write into the mask reaches m
    def f(x, m):
        a = np.ma.array(x, mask=m)
        a[0] = np.ma.masked
        return a.sum()

    masks = RNG.random((4, 6)) < 0.3
    mine, theirs = masks.copy(), masks.copy()
    vectorised(f, CLEAN, mine)
    loop(f, CLEAN, theirs)
    np.testing.assert_array_equal(mine, theirs)
    assert mine[:, 0].all()


def test_a_numpy_bool_per_example_as_the_mask():
    # np.False_ *is* np.ma.nomask: those examples have no mask, the others are masked
    xs = RNG.normal(size=(4,)).astype(np.float32)
    for ms in (np.array([False, True, False, True]), np.zeros(4, bool), np.ones(4, bool)):
        vectorised(lambda x, m: np.ma.array(x, mask=m).mean(), xs, ms, rtol=1e-6)
        vectorised(lambda x, m: np.ma.array(x, mask=m) * 2, xs, ms, rtol=1e-6)


def test_a_plain_masked_array_on_the_left_of_an_operator():
    # numpy.ma's own operator runs on the batched operand (its operators are not replaced):
    # it asks whether anything is masked, so examples that differ there run as groups
    plain = np.ma.masked_greater(RNG.normal(size=6), 0.5)
    for f in (lambda x: plain + np.ma.masked_invalid(x), lambda x: plain / x,
              lambda x: plain < np.ma.masked_invalid(x), lambda x: plain ** 2 - x):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", bt.PerformanceWarning)
            assert_same_masked(bt.vmap(f)(XS), loop(f, XS))
    vectorised(lambda x: plain * 2 + np.ma.masked_invalid(x), XS)  # batched on the left


def test_array_api_extra_at_set_answers_as_the_examples_do():
    xpx = pytest.importorskip("scipy._lib.array_api_extra", reason="SciPy is not installed")

    def f(x):
        m = np.ma.masked_invalid(x)
        return xpx.at(m, m > 1.0).set(np.nan)  # in place, as for each example's masked array

    vectorised(f, XS)
    vectorised(lambda x: xpx.at(x, x > 1.0).set(0.0), CLEAN)


def _clipped_then_set(x):
    """As SciPy's ``pearsonr`` ends: a reduction's result (a NumPy scalar per example), then
    ``at(r, cond).set(nan)``, which copies a scalar into a 0-d array and writes into that."""
    xpx = pytest.importorskip("scipy._lib.array_api_extra", reason="SciPy is not installed")
    r = np.clip(np.sum(x * x[::-1]) / 10.0, -1.0, 1.0)
    return xpx.at(r, x[0] > 0).set(np.nan)


def test_array_api_extra_at_set_on_a_scalar_per_example_writes_into_a_0d_copy():
    """``is_writeable_array`` of a NumPy scalar per example is False, as NumPy's scalar
    answers: ``at`` takes its copy (a writeable 0-d array per example, as the loop's) and
    writes there, vectorised. A 0-d array per example answers True, as the loop's does."""
    xpx = pytest.importorskip("scipy._lib.array_api_extra", reason="SciPy is not installed")
    from scipy._lib.array_api_extra._lib import _at

    xs = RNG.normal(size=(6, 5))
    for layout in LAYOUTS:  # in_axes=-1, read-only, ...
        arr, in_axes = laid_out(xs, layout)
        vectorised(_clipped_then_set, arr, in_axes=in_axes)
    for n in (0, 1):
        got = bt.vmap(_clipped_then_set, fallback="error")(xs[:n])
        assert got.shape == (n,) and got.dtype == np.float64
        if n:
            np.testing.assert_array_equal(got, loop(_clipped_then_set, xs[:n]))
    with warnings.catch_warnings():
        warnings.simplefilter("error", bt.PerformanceWarning)
        got = bt.vmap(bt.vmap(_clipped_then_set), fallback="error")(xs.reshape(2, 3, 5))
    np.testing.assert_array_equal(got, np.stack([loop(_clipped_then_set, r)
                                                 for r in xs.reshape(2, 3, 5)]))

    def answers(x):
        s = np.sum(x)
        a = np.asarray(s)
        assert not _at.is_writeable_array(s) and _at.is_writeable_array(a)
        assert xpx.at(a, x[0] > 0).set(0.0) is a  # in place, as in the loop's example
        return a

    vectorised(answers, xs)


# ---- what the adversarial generator found (tests/test_adversarial_found.py for the others) ----
def test_reshape_with_minus_one_of_no_example():
    got = bt.vmap(lambda x: np.ma.masked_invalid(x).reshape(-1, 2), fallback="error")(XS[:0])
    assert got.shape == (0, 3, 2)


def test_every_example_masked_gives_the_masked_constants_float64():
    # the loop's examples are all np.ma.masked (a float64), whatever the data's dtype
    xs = (XS + 1j * XS).astype(np.complex128)
    xs[:, 0] = np.nan
    got = vectorised(lambda x: np.ma.masked_invalid(x)[0], xs)
    assert got.dtype == np.float64 and got.mask.all()
    xs[1, 0] = 2.0  # one example kept: complex, as np.ma.stack promotes
    assert vectorised(lambda x: np.ma.masked_invalid(x)[0], xs).dtype == np.complex128


def test_a_nested_value_is_not_taken_for_an_array():
    # inside a nested vmap the inner value holds a BatchedTensor, which says it is an
    # ndarray: a masked array of it once reached NumPy's constructor (a TypeError); now the
    # masked batch holds both levels' examples
    f = lambda x: np.ma.masked_array(x, mask=x > 0).sum()  # noqa: E731
    assert bt.vmap(bt.vmap(f), fallback="error")(np.zeros((0, 3, 4))).shape == (0, 3)
    assert bt.vmap(bt.vmap(f), fallback="error")(np.zeros((2, 0, 4))).shape == (2, 0)
    grid = RNG.normal(size=(2, 3, 4))
    got = bt.vmap(bt.vmap(f), fallback="error")(grid)
    assert_same_masked(got, np.stack([loop(f, g) for g in grid]))


def test_a_per_op_loop_view_of_a_masked_argument_is_not_a_silent_copy():
    # np.ma.expand_dims runs once per example: each result views its example's masked array,
    # and a write through it reaches that array; the stacked copy would miss it, so it is
    # read-only and the write raises (as through NumPy's read-only views)
    def f(x):
        m = np.ma.masked_greater(x, 100.0)
        v = np.ma.expand_dims(m, 0)
        v[0, 0] = -1.0
        return m

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", bt.PerformanceWarning)
        with pytest.raises(ValueError, match="read-only"):
            bt.vmap(f)(CLEAN.copy())
        # a read of the view is as the loop's
        g = lambda x: np.ma.expand_dims(np.ma.masked_greater(x, 0.5), 0).sum(axis=1)  # noqa
        assert_same_masked(bt.vmap(g)(CLEAN), loop(g, CLEAN))


def test_per_op_loop_results_without_masks_keep_no_mask():
    # the examples' x[m] of a masked array without a mask have none; np.ma.stack would give
    # them a mask of False, and the mean of an empty one would then be np.ma.masked where the
    # loop's (ndarray.mean) is NaN (scipy.stats.mstats.pointbiserialr's y[~x])
    f = lambda x: np.ma.asarray(x)[x > 10.0].mean()  # noqa: E731  (nothing selected)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = bt.vmap(f)(CLEAN)
        assert_same_masked(got, loop(f, CLEAN))
    assert np.isnan(got).all() and not np.ma.is_masked(got)


def test_a_plain_boolean_mask_is_every_examples_own_mask():
    # np.ma.array(x, mask=m) keeps a plain boolean m itself: a write into one example's mask
    # reaches m, which the later examples of the loop then see; the batch refuses the write
    m = np.array([True, False, False, False, False, True])
    vectorised(lambda x: np.ma.array(x, mask=m).mean(), XS)  # read only: vectorised
    with pytest.raises(bt.SharedWriteError, match="copy=True"):
        bt.vmap(lambda x: _set(np.ma.array(x, mask=m), 1, np.ma.masked).sum())(XS)
    np.testing.assert_array_equal(m, [True, False, False, False, False, True])
    vectorised(lambda x: _set(np.ma.array(x, mask=m, copy=True), 1, np.ma.masked).sum(), XS)
    vectorised(lambda x: _set(np.ma.array(x, mask=m.tolist()), 1, np.ma.masked).sum(), XS)


def test_a_batch_laid_out_backwards_stays_a_view():
    # NumPy's MaskedArray copies an array whose first axis runs backwards, where each example
    # (without that axis) stays a view: np.ma.asarray(x) of such an input is still x
    f = lambda x: _set(np.ma.getdata(np.ma.asarray(x)), 0, 7.0)  # noqa: E731
    mine, theirs = CLEAN.copy(), CLEAN.copy()
    bt.vmap(f, fallback="error")(mine[::-1])
    loop(f, theirs[::-1])
    np.testing.assert_array_equal(mine, theirs)
    assert (mine[:, 0] == 7.0).all()


# ---- masked arrays over arrays the function created ------------------------------------------------
def _filled_rows(x):
    out = np.ma.array(np.empty((2, 6)), mask=True)  # as scipy.stats.mstats' argstoarray
    out[0] = x
    out[1, :3] = x[:3] * 2
    return out


def _through_the_buffer(x):
    buf = np.zeros(6)
    m = np.ma.array(buf)  # a view of buf: a write through m reaches buf, as in the loop
    m[1:3] = x[1:3]
    m[4] = np.ma.masked
    return buf, m.mean()


@pytest.mark.parametrize("f", [_filled_rows, _through_the_buffer])
def test_a_masked_array_over_an_array_the_function_created(f):
    vectorised(f, CLEAN)
    got = bt.vmap(bt.vmap(f), fallback="error")(GRID)
    assert_same_masked(got, nested_loop(f, GRID))


def test_mstats_one_way_tests_run_vectorised():
    mstats = pytest.importorskip("scipy.stats.mstats",
                                 reason="SciPy is an optional test dependency")
    # vmapped themselves: their module's np.empty makes the buffers (a module a function
    # only calls into keeps NumPy's np: batchtensor.buffers.learn_from)
    a, b, c = RNG.normal(size=(3, 4, 8))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for f in (mstats.f_oneway, mstats.kruskal):
            got = bt.vmap(f, fallback="error")(a, b, c)
            want = [f(x, y, z) for x, y, z in zip(a, b, c)]
            for j in range(2):
                assert_same_masked(np.asarray(got[j]), np.stack([w[j] for w in want]))


def _ranks_by_row(x):
    def rank1d(row):  # one example's row: the per-op loop runs np.ma.apply_along_axis
        rk = np.empty(row.size)  # an array created there, that example's (scipy's _rank1d)
        m = np.ma.array(rk)
        m[:] = row.argsort()
        return rk
    return np.ma.apply_along_axis(rank1d, 1, np.ma.masked_invalid(x.reshape(2, 3)))


def test_a_masked_array_over_a_created_array_in_the_per_op_loop_is_one_examples():
    # made batched there, the array would reach NumPy's own apply_along_axis, which writes it
    # into a plain array (a conversion, and a rerun): it stays the one example's
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        assert_same_masked(bt.vmap(_ranks_by_row)(XS), loop(_ranks_by_row, XS))
    assert not [w for w in seen if "reruns once per example" in str(w.message)]
    with warnings.catch_warnings():  # (nested, the row is the outer level's: a rerun there)
        warnings.simplefilter("ignore", bt.PerformanceWarning)
        assert_same_masked(bt.vmap(bt.vmap(_ranks_by_row))(GRID),
                           nested_loop(_ranks_by_row, GRID))


def test_allclose_of_two_shapes_runs_per_example_as_numpy_ma_decides():
    # numpy.ma masks one array with the other's mask: of two shapes it broadcasts or raises
    f = lambda x: np.ma.allclose(np.ma.masked_invalid(x.reshape(2, 3)),  # noqa: E731
                                 np.ma.masked_invalid(x[:3]))
    with pytest.warns(bt.PerformanceWarning, match="once per example"):
        reset_warnings()
        got = bt.vmap(f)(XS)
    np.testing.assert_array_equal(got, loop(f, XS))
    # a second array without a mask broadcasts, as numpy.ma's arithmetic: vectorised
    g = lambda x: np.ma.allclose(np.ma.masked_invalid(x.reshape(2, 3)), x[:3])  # noqa: E731
    np.testing.assert_array_equal(bt.vmap(g, fallback="error")(XS), loop(g, XS))


def test_may_share_memory_of_masked_batches_asks_their_data():
    def f(x):
        m = np.ma.masked_invalid(x)
        v = m[1:]
        return (np.may_share_memory(m, v), np.shares_memory(m, np.ma.copy(m)),
                np.may_share_memory(m, x))

    want = f(XS[0])
    assert want == (True, False, False)  # (every example answers alike)
    for got in (bt.vmap(f, fallback="error")(XS), bt.vmap(bt.vmap(f), fallback="error")(GRID)):
        for g, w in zip(got, want):
            assert np.all(np.asarray(g) == w), (got, want)


def _row_written_through(x, i):
    m = np.ma.masked_invalid(x)
    row = m[i]  # an integer per example: a view of m in the loop
    row[0] = -1.0
    return m.filled(0.0)


@pytest.mark.parametrize("idx", [[2, 2, 2], [0, 2, 3]], ids=["same row", "a row per example"])
def test_a_row_picked_by_an_integer_per_example_is_the_loops_view(idx):
    xs = RNG.normal(size=(3, 4, 3))
    xs[0, 1, 1] = np.nan
    idx = np.array(idx)
    want = np.stack([_row_written_through(x, i) for x, i in zip(xs, idx)])
    got = bt.vmap(_row_written_through, fallback="silent")(xs, idx)
    np.testing.assert_array_equal(got, want)
    if idx[0] == idx[1]:
        bt.vmap(_row_written_through, fallback="error")(xs, idx)  # the view: vectorised
    else:
        with pytest.raises(bt.BatchingError, match="differs between examples"):
            bt.vmap(_row_written_through, fallback="error")(xs, idx)


def _doubles_its_slices(x, m):
    a = np.ma.array(x, mask=m)

    def g(r):
        r *= 2  # writes into the slice, once per example in the loop
        return r.max()

    np.ma.apply_along_axis(g, 1, a)
    return a.data


def test_apply_along_axis_that_falls_back_writes_once():
    # example 1 has a fully masked row (its max is np.ma.masked, the others' a scalar): the
    # batched run gives way to the per-example one, which must start from the caller's values
    xs = np.arange(1.0, 13.0).reshape(2, 2, 3)
    ms = np.zeros(xs.shape, bool)
    ms[1, 1, :] = True
    want = np.stack([_doubles_its_slices(x, m) for x, m in zip(xs.copy(), ms)])
    got = bt.vmap(_doubles_its_slices, fallback="silent")(xs.copy(), ms)
    np.testing.assert_array_equal(got, want)
