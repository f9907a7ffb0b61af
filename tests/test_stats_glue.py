"""The NumPy glue SciPy's statistics run on, vectorised: ``np.ma.apply_along_axis`` (func1d on
the batch of each slice position's slices), ``np.ma.mask_rowcols`` / ``mask_rows`` /
``mask_cols``, a masked array's rows selected by a batched boolean mask
(``batchtensor/masked.py``), ``np.result_type`` of a selection whose size differs per example
(``rules/ragged.py``) and ``scipy.linalg.eigh`` (``rules/scipy_linalg.py``); and the SciPy
functions they serve (``scipy.stats.mstats``' rankdata, scoreatpercentile, mquantiles,
spearmanr; the distributions' ``apply_where``; ``multivariate_normal``), each against
the per-example loop."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import batchtensor as bt
from batchtensor.boxed.loop import reset_warnings
from loop_reference import LAYOUTS, assert_same, laid_out, loop_vmap, strict_vmap

RNG = np.random.default_rng(41)


def _out(r):
    """A masked result as (data, 0 where masked; mask), which the loop's stacking keeps."""
    if isinstance(r, (tuple, list)):
        return tuple(_out(x) for x in r)
    mask = np.ma.getmaskarray(r)
    return np.where(mask, 0, np.ma.getdata(r)), np.array(mask, copy=True)


def _masked(x, frac=0.3):
    return np.ma.masked_where(np.abs(x) > 1.0 + frac, x)


def _per_op_loop(f, *args, in_axes=0):
    """``f`` under vmap through the per-op loop (warned), and the loop's result."""
    reset_warnings()
    with pytest.warns(bt.PerformanceWarning, match="once per example"):
        got = bt.vmap(f, in_axes)(*args)
    assert_same(got, loop_vmap(f, in_axes)(*args))


# ---- np.ma.apply_along_axis ---------------------------------------------------------------------
ALONG = {
    "a scalar per slice": (lambda r: r.count(), 0),
    "a masked slice per slice": (lambda r: r * 2.0 + 1.0, -1),
    "a plain array per slice": (lambda r: np.sort(r.filled(0.0)), 1),
    "a Python float per slice": (lambda r: 1.5, 0),
    "every slice the same masked constant": (lambda r: np.ma.masked, 1),
    "a slice of another length": (lambda r: r[:2].filled(-1.0), -2),
}


@pytest.mark.parametrize("name", ALONG)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_apply_along_axis_runs_once_per_slice_position(name, dtype):
    func1d, axis = ALONG[name]
    xs = RNG.normal(size=(4, 3, 5)).astype(dtype)
    f = lambda x: _out(np.ma.apply_along_axis(func1d, axis, _masked(x)))  # noqa: E731
    strict_vmap(f)(xs)  # (raises on a per-op loop or rerun)
    assert_same(strict_vmap(f)(xs), loop_vmap(f)(xs))


@pytest.mark.parametrize("layout", LAYOUTS)
def test_apply_along_axis_layouts(layout):
    xs = RNG.normal(size=(4, 6))
    f = lambda x: _out(np.ma.apply_along_axis(lambda r: r * 3.0, 0,  # noqa: E731
                                              _masked(x).reshape(2, 3)))
    ys, ax = laid_out(xs, layout)
    assert_same(strict_vmap(f, ax)(ys), loop_vmap(f, ax)(ys))


def test_apply_along_axis_batch_sizes_and_nested():
    f = lambda x: _out(np.ma.apply_along_axis(lambda r: r.mean(), 1,  # noqa: E731
                                              np.ma.asarray(x)))
    xs = RNG.normal(size=(1, 3, 4))
    assert_same(strict_vmap(f)(xs), loop_vmap(f)(xs))
    got = bt.vmap(f, fallback="error")(RNG.normal(size=(0, 3, 4)))
    assert got[0].shape == (0, 3) and got[1].shape == (0, 3)
    grid = RNG.normal(size=(2, 3, 3, 4))
    got = bt.vmap(bt.vmap(f), fallback="error")(grid)
    assert_same(got, loop_vmap(loop_vmap(f))(grid))


def test_apply_along_axis_extra_arguments_batched_or_not():
    def f(x, w):
        return _out(np.ma.apply_along_axis(lambda r, s, k=1.0: (r * s).sum() + k, 0,
                                           _masked(x), w, k=2.0))
    xs, ws = RNG.normal(size=(3, 4, 2)), RNG.normal(size=(3, 4))
    assert_same(strict_vmap(f)(xs, ws), loop_vmap(f)(xs, ws))
    assert_same(strict_vmap(f, (0, None))(xs, ws[0]), loop_vmap(f, (0, None))(xs, ws[0]))
    # the array unbatched, the extra argument batched
    assert_same(strict_vmap(f, (None, 0))(xs[0], ws), loop_vmap(f, (None, 0))(xs[0], ws))


def test_apply_along_axis_some_examples_masked_constants_run_per_example():
    # a scalar slice result np.ma.masked (a float64) in some examples and a float32 in others:
    # each example's own dtype, which one batch cannot hold
    xs = RNG.normal(size=(3, 4, 2)).astype(np.float32)
    xs[0, :, 0] = 9.0  # example 0: slice 0 fully masked
    f = lambda x: _out(np.ma.apply_along_axis(lambda r: r.sum(), 0, _masked(x)))  # noqa: E731
    _per_op_loop(f, xs)
    with pytest.raises(bt.BatchingError):
        bt.vmap(f, fallback="error")(xs)


def test_apply_along_axis_a_branch_the_examples_disagree_on_runs_per_example():
    def func1d(r):
        return r.filled(0.0) * (2.0 if r.count() > 2 else 3.0)
    xs = RNG.normal(size=(4, 4, 3))
    xs[1, :2] = 9.0
    f = lambda x: _out(np.ma.apply_along_axis(func1d, 0, _masked(x)))  # noqa: E731
    _per_op_loop(f, xs)


@pytest.mark.parametrize("shape, axis, error", [((3, 4), 2, np.exceptions.AxisError),
                                                ((0, 4), 1, IndexError),
                                                ((), 0, np.exceptions.AxisError)])
def test_apply_along_axis_raises_as_numpy_ma(shape, axis, error):
    xs = RNG.normal(size=(2,) + shape)
    f = lambda x: np.ma.apply_along_axis(lambda r: r, axis, np.ma.asarray(x))  # noqa: E731
    with pytest.raises(error):
        f(xs[0])
    with pytest.raises(error):
        bt.vmap(f, fallback="error")(xs)


# ---- np.ma.mask_rowcols ---------------------------------------------------------------------------
@pytest.mark.parametrize("op", ["rowcols", "rowcols 0", "rowcols 1", "rowcols -1",
                                "rowcols 2", "rows", "cols"])
def test_mask_rowcols_every_example_masked_or_none(op):
    fn = {"rowcols": lambda a: np.ma.mask_rowcols(a),
          "rowcols 0": lambda a: np.ma.mask_rowcols(a, 0),
          "rowcols 1": lambda a: np.ma.mask_rowcols(a, axis=1),
          "rowcols -1": lambda a: np.ma.mask_rowcols(a, -1),
          "rowcols 2": lambda a: np.ma.mask_rowcols(a, 2),
          "rows": lambda a: np.ma.mask_rows(a), "cols": lambda a: np.ma.mask_cols(a)}[op]
    xs = RNG.normal(size=(4, 3, 5))
    xs[:, 1, 2] = 9.0  # every example holds a masked element
    f = lambda x: _out(fn(_masked(x)))  # noqa: E731
    assert_same(strict_vmap(f)(xs), loop_vmap(f)(xs))
    clean = np.clip(xs, -1.0, 1.0)  # none does: the masked array itself
    assert_same(strict_vmap(f)(clean), loop_vmap(f)(clean))
    g = lambda x: _out(fn(np.ma.asarray(x)))  # noqa: E731  (nomask)
    assert_same(strict_vmap(g)(xs), loop_vmap(g)(xs))


def test_mask_rowcols_shares_the_mask_where_nothing_is_masked_and_copies_it_otherwise():
    def f(x):
        a = _masked(x)
        r = np.ma.mask_rowcols(a, 0)
        r[0, 0] = np.ma.masked  # reaches a's mask only where mask_rowcols shared it
        return _out((a, r))
    clean = np.clip(RNG.normal(size=(3, 2, 3)), -1.0, 1.0)
    assert_same(strict_vmap(f)(clean), loop_vmap(f)(clean))
    every = clean.copy()
    every[:, 1, 1] = 9.0
    assert_same(strict_vmap(f)(every), loop_vmap(f)(every))
    mixed = clean.copy()
    mixed[0, 1, 1] = 9.0  # one example with a masked element, the others none
    _per_op_loop(f, mixed)


def test_mask_rowcols_of_a_vector_raises_as_numpy_ma():
    f = lambda x: np.ma.mask_rowcols(_masked(x))  # noqa: E731
    with pytest.raises(NotImplementedError):
        bt.vmap(f, fallback="error")(RNG.normal(size=(2, 5)))


def test_mask_rowcols_nested():
    grid = RNG.normal(size=(2, 3, 4, 3))
    grid[..., 0, 0] = 9.0
    f = lambda x: _out(np.ma.mask_rowcols(_masked(x)))  # noqa: E731
    assert_same(bt.vmap(bt.vmap(f), fallback="error")(grid), loop_vmap(loop_vmap(f))(grid))


# ---- rows selected by a batched boolean mask ------------------------------------------------------
def _two_rows(x):
    a = _masked(x)
    keep = np.argsort(x[:, 0], kind="stable") < 2  # two rows of each example, by its data
    return _out((a[keep], a[keep, :], a[keep, ...], a[~keep]))


@pytest.mark.parametrize("layout", LAYOUTS)
def test_rows_kept_alike_in_every_example(layout):
    xs = RNG.normal(size=(4, 5, 3))
    ys, ax = laid_out(xs.reshape(4, 15), layout)
    f = lambda y: _two_rows(y.reshape(5, 3))  # noqa: E731
    assert_same(strict_vmap(f, ax)(ys), loop_vmap(f, ax)(ys))


def test_rows_kept_batch_sizes_and_nested():
    for n in (1, 3):
        xs = RNG.normal(size=(n, 5, 3))
        assert_same(strict_vmap(_two_rows)(xs), loop_vmap(_two_rows)(xs))
    grid = RNG.normal(size=(2, 3, 5, 3))
    assert_same(bt.vmap(bt.vmap(_two_rows), fallback="error")(grid),
                loop_vmap(loop_vmap(_two_rows))(grid))


def test_rows_kept_in_different_counts_run_per_example():
    f = lambda x: _out(_masked(x)[x[:, 0] > 0].sum(axis=0))  # noqa: E731
    xs = RNG.normal(size=(4, 6, 2))
    xs[0, :, 0], xs[1, :, 0] = 1.0, -1.0
    _per_op_loop(f, xs)


def test_a_row_mask_of_another_length_raises_as_numpy():
    f = lambda x: _masked(x)[x[:2, 0] > 0]  # noqa: E731
    with pytest.raises(IndexError):
        bt.vmap(f)(RNG.normal(size=(2, 4, 3)))


def test_a_masked_key_selects_by_its_data():
    # NumPy indexes by a masked array's data, its mask left out (SciPy's pointbiserialr)
    def f(x, y):
        k = np.ma.masked_greater(x, 1.0) > -5.0  # every row kept, some masked
        return _out((_masked(y)[k], _masked(y)[~k]))
    xs, ys = RNG.normal(size=(4, 6)), RNG.normal(size=(4, 6))
    assert_same(strict_vmap(f)(xs, ys), loop_vmap(f)(xs, ys))


@pytest.mark.parametrize("in_axes", [(None, 0), (None, -1)])
def test_a_plain_masked_array_indexed_by_a_batched_key(in_axes):
    y = np.ma.masked_greater(RNG.normal(size=(6, 2)), 1.0)
    y.fill_value = -7.0

    def f(k):
        order = np.argsort(k, kind="stable")
        rows, idx = y[order < 3], y[order[:4]]  # (y from outside the function)
        rows[0] = 99.0  # a copy per example: y stays as it was
        return _out((rows, idx)), rows.fill_value
    ks = RNG.normal(size=(4, 6))
    arg = np.ascontiguousarray(ks.T) if in_axes[1] == -1 else ks
    before = y.copy()
    # (the loop's result whatever path vmap takes: in one CI run on Python 3.13 the subscript
    # reached ndarray's own C code with no numpy.ma frame in between, so the interception of
    # MaskedArray.__getitem__ was bypassed; not reproduced since, see the closing note of the
    # session that saw it. The default fallback reruns there, the strict one raises.)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", bt.PerformanceWarning)
        got = bt.vmap(f, in_axes[1])(arg)
    assert_same(got, loop_vmap(f)(ks))
    assert np.array_equal(y.data, before.data) and np.array_equal(y.mask, before.mask)
    with pytest.raises(IndexError):
        bt.vmap(lambda k: y[np.argsort(k)[:2] + 10])(ks)


@pytest.mark.parametrize("masked", ["none", "every", "some"])
def test_asanyarray_of_a_masked_scalar_per_example(masked):
    def f(x):
        s = np.ma.masked_greater(x, 100.0).mean()  # a NumPy scalar or np.ma.masked
        a = np.asanyarray(s)
        return _out(np.ma.where(a < 1.0, a, 1.0))
    xs = RNG.normal(size=(3, 4))
    if masked == "every":
        xs = xs + 200.0
    elif masked == "some":
        xs[1] += 200.0
    if masked == "some":
        _per_op_loop(f, xs)
    else:
        assert_same(strict_vmap(f)(xs), loop_vmap(f)(xs))


# ---- np.result_type of a selection ----------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int16])
def test_result_type_of_selections_is_their_dtype(dtype):
    def f(x, y):
        s, t = x[x > 0], y[y < 1]  # counts that differ per example
        return np.zeros((), np.result_type(s, t, 1.0)), np.zeros((), np.result_type(s, y))
    xs = (RNG.normal(size=(4, 6)) * 3).astype(dtype)
    ys = RNG.normal(size=(4, 5)).astype(np.float32)
    got = strict_vmap(f)(xs, ys)
    assert_same(got, loop_vmap(f)(xs, ys))


# ---- scipy.linalg.eigh ---------------------------------------------------------------------------
def _spd(n, k, dtype=np.float64):
    a = RNG.normal(size=(n, k, k))
    return (a @ np.swapaxes(a, 1, 2) + k * np.eye(k)).astype(dtype)


@pytest.mark.parametrize("kw", [{}, {"lower": False}, {"eigvals_only": True},
                                {"subset_by_index": [0, 1]}, {"driver": "evd"}])
def test_eigh_is_the_examples_lapack_calls(kw):
    linalg = pytest.importorskip("scipy.linalg", reason="SciPy is not installed")
    f = lambda a: linalg.eigh(a, **kw)  # noqa: E731
    xs = _spd(4, 3)
    got = strict_vmap(f)(xs)
    want = loop_vmap(f)(xs)
    assert_same(got, want, rtol=0)  # the same LAPACK call per example: the same bits
    assert_same(strict_vmap(f, -1)(np.ascontiguousarray(np.moveaxis(xs, 0, -1))), want, 0)
    grid = _spd(6, 3).reshape(2, 3, 3, 3)
    assert_same(bt.vmap(bt.vmap(f), fallback="error")(grid), loop_vmap(loop_vmap(f))(grid), 0)
    one = xs[:1]
    assert_same(strict_vmap(f)(one), loop_vmap(f)(one), 0)
    stacks = _spd(6, 3).reshape(3, 2, 3, 3)  # a stack per example: SciPy returns a list
    got = strict_vmap(f)(stacks)
    assert type(got) is type(f(stacks[0]))
    assert_same(got, loop_vmap(f)(stacks), 0)


def test_eigh_what_runs_per_example():
    linalg = pytest.importorskip("scipy.linalg", reason="SciPy is not installed")
    xs = _spd(3, 3)
    _per_op_loop(lambda a: linalg.eigh(a, xs[0]), xs)
    _per_op_loop(lambda a: linalg.eigh(a, eigvals_only=True, subset_by_value=(-np.inf, 100.0)),
                 xs * np.array([1.0, 1.0, 1.0])[:, None, None])
    with pytest.raises(ValueError):
        bt.vmap(lambda a: linalg.eigh(a))(RNG.normal(size=(2, 3, 4)))


# ---- the SciPy functions they serve ------------------------------------------------------------
def _mstats():
    return pytest.importorskip("scipy.stats.mstats", reason="SciPy is not installed")


def _direct(fn, args, in_axes=0, rtol=None, **kw):
    """``bt.vmap(fn)`` of a SciPy function itself (so that its module's arrays are the
    function's own, as for any function vmap is given), fully vectorised, against the loop."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", bt.PerformanceWarning)
        got = bt.vmap(fn, in_axes, fallback="error")(*args, **kw)
    want = loop_vmap(lambda *a: _out(fn(*a, **kw)), in_axes)(*args)
    assert_same(_out(got), want, rtol)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_mstats_functions_run_fully_vectorised(dtype):
    ms = _mstats()
    rtol = 1e-5 if dtype == np.float32 else None
    xs = RNG.normal(size=(4, 12)).astype(dtype)
    _direct(ms.rankdata, (xs.reshape(4, 3, 4),), rtol=rtol, axis=0)
    _direct(ms.rankdata, (np.ascontiguousarray(xs.reshape(4, 3, 4).T),), -1, rtol=rtol,
            axis=1)
    _direct(ms.scoreatpercentile, (xs,), rtol=rtol, per=30.0)
    _direct(ms.mquantiles, (xs.reshape(4, 6, 2),), rtol=rtol, prob=[0.3, 0.6], axis=0)
    _direct(ms.spearmanr, (xs[:, :6], xs[:, 6:]), rtol=rtol)
    _direct(ms.spearmanr, (xs[:, :6], xs[0, 6:]), (0, None), rtol=rtol)


@pytest.mark.parametrize("dist, gen", [("gamma.logsf", lambda n: (RNG.uniform(0.05, 4, (n, 6)),
                                                                   RNG.uniform(0.5, 3, n))),
                                       ("lognorm.pdf", lambda n: (RNG.uniform(0.05, 4, (n, 6)),
                                                                   RNG.uniform(0.5, 3, n)))])
def test_distributions_apply_where_with_selections_of_their_own_sizes(dist, gen):
    stats = pytest.importorskip("scipy.stats", reason="SciPy is not installed")
    name, method = dist.split(".")
    fn = getattr(getattr(stats, name), method)
    x, s = gen(4)
    assert_same(strict_vmap(fn)(x, s), loop_vmap(fn)(x, s))
    grid_x, grid_s = gen(6)
    got = bt.vmap(bt.vmap(fn), fallback="error")(grid_x.reshape(2, 3, 6), grid_s.reshape(2, 3))
    assert_same(got, loop_vmap(loop_vmap(fn))(grid_x.reshape(2, 3, 6), grid_s.reshape(2, 3)))


@pytest.mark.parametrize("in_axes", [0, -1, (0, None, None)])
def test_multivariate_normal_pdf(in_axes):
    stats = pytest.importorskip("scipy.stats", reason="SciPy is not installed")
    xs, means, covs = RNG.normal(size=(4, 5, 3)), RNG.normal(size=(4, 3)), _spd(4, 3)
    if in_axes == -1:
        args = tuple(np.ascontiguousarray(np.moveaxis(v, 0, -1)) for v in (xs, means, covs))
    elif in_axes == 0:
        args = (xs, means, covs)
    else:
        args = (xs, means[0], covs[0])
    with warnings.catch_warnings():
        warnings.simplefilter("error", bt.PerformanceWarning)
        got = bt.vmap(stats.multivariate_normal.pdf, in_axes, fallback="error")(*args)
    assert_same(got, loop_vmap(stats.multivariate_normal.pdf, in_axes)(*args))
