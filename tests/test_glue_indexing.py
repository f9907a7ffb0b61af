"""Glue for NumPy calls that convert a batched value themselves, compared with the loop:

- ``np.transpose`` of a list or tuple of batched values (``np.transpose(quantiles)``):
  ``batchtensor/undispatched.py``'s ``SEQUENCES`` convert the list batched first (not
  ``np.sum`` / ``np.min`` / ``np.max``, whose identity code asks: they rerun);
- ``table[idx]`` with a batched ``idx`` into a plain array made by a NumPy call
  (``table = np.cumsum(w)``): NumPy's ``ndarray.__getitem__`` converts the index without
  asking it; the call site is learnt from the failed read and makes a buffer in every pass
  after (``batchtensor/buffers.py``, ``_site_reader``), whose ``[]`` reads per example.
  What it cannot serve (an array from outside the function, a view, one kept beyond the
  call, a method's result) keeps rerunning per example."""

from __future__ import annotations

import importlib
import warnings

import numpy as np
import pytest

import batchtensor as bt
from batchtensor import buffers, conversions
from batchtensor.undispatched import ORIGINALS, SEQUENCES

ORIGINAL_MAX = np.max
from tests.loop_reference import assert_same, loop_vmap, strict_vmap

RNG = np.random.default_rng(5)


def rerun(f, *args, in_axes=0):
    """Only a per-example run gives the loop's result: fallback='error' raises, the default
    reruns (and says so) with the loop's result."""
    with pytest.raises((TypeError, ValueError, bt.BatchingError)):
        bt.vmap(f, in_axes, fallback="error")(*args)
    with pytest.warns(bt.PerformanceWarning, match="reruns once per example"):
        got = bt.vmap(f, in_axes)(*args)
    assert_same(got, loop_vmap(f, in_axes)(*args))


# ---- a list or tuple of batched values -------------------------------------------------------
LISTS = {
    "transpose of a list of rows": lambda x, y: np.transpose([x, y]),
    "transpose of a tuple, axes": lambda x, y: np.transpose((x, y, x * 2), (1, 0)),
    "transpose, keyword a=": lambda x, y: np.transpose(a=[x, y]),
    "transpose of 0-d values": lambda x, y: np.transpose([x.sum(), y[0], 1.5]),
    "transpose of nested lists": lambda x, y: np.transpose([[x, y], [y, x]], (2, 0, 1)),
}

#: reducers given a list: NumPy's own names stay (code asks ``func is np.max``), so they rerun
RERUN_LISTS = {
    "sum of a list": lambda x, y: np.sum([x, y]),
    "min of 0-d values": lambda x, y: 2 * np.min([x.sum(), 1 - x.sum()]),
    "max, axis -1, keepdims": lambda x, y: np.max([x, y], axis=-1, keepdims=True),
}


@pytest.mark.parametrize("name", list(RERUN_LISTS))
def test_a_reducer_of_a_list_of_batched_values_reruns(name):
    xs, ys = RNG.normal(size=(3, 4)), RNG.normal(size=(3, 4))
    rerun(RERUN_LISTS[name], xs, ys)


def test_numpy_s_reducers_keep_their_identity_inside_a_vmap():
    # code picks its path by ``func is np.max`` (a reducer passed as an argument)
    f = lambda x: x.max() if ORIGINAL_MAX is np.max else x.min()  # noqa: E731
    xs = RNG.normal(size=(3, 4))
    assert_same(strict_vmap(f)(xs), xs.max(axis=1))


@pytest.mark.parametrize("name", list(LISTS))
@pytest.mark.parametrize("n", [0, 1, 3])
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int32])
def test_a_list_of_batched_values_is_converted_batched(name, n, dtype):
    f = LISTS[name]
    xs = (RNG.normal(size=(n, 4)) * 10).astype(dtype)
    ys = (RNG.normal(size=(n, 4)) * 10).astype(dtype)
    got = strict_vmap(f)(xs, ys)
    if n:
        assert_same(got, loop_vmap(f)(xs, ys))
    else:  # (the loop has no example to stack: one example's shape and dtype)
        want = np.asarray(f(np.zeros(4, dtype), np.zeros(4, dtype)))
        assert got.shape == (0,) + want.shape and got.dtype == want.dtype


@pytest.mark.parametrize("in_axes, shapes", [((1, None), ((4, 3), (4,))),
                                              ((None, -1), ((4,), (4, 3))),
                                              ((-1, 0), ((4, 3), (3, 4)))])
def test_a_list_with_unbatched_items_and_other_axes(in_axes, shapes):
    f = LISTS["transpose of a list of rows"]
    args = [RNG.normal(size=s) for s in shapes]
    assert_same(strict_vmap(f, in_axes)(*args), loop_vmap(f, in_axes)(*args))


def test_the_transpose_of_a_list_is_a_view_of_a_new_array_not_of_the_inputs():
    def f(x):
        t = np.transpose([x, x])
        return t, np.shares_memory(t, x), t.flags.writeable, t.flags.c_contiguous

    xs = RNG.normal(size=(3, 4))
    got = strict_vmap(f)(xs)
    want = loop_vmap(f)(xs)
    assert_same(got, want)


def test_nested_vmaps_and_read_only_inputs():
    f = lambda x, y: np.transpose([x, y]) + np.min(x)  # noqa: E731
    xs, ys = RNG.normal(size=(2, 3, 4)), RNG.normal(size=(2, 3, 4))
    xs.flags.writeable = False
    got = strict_vmap(lambda a, b: bt.vmap(f, fallback="error")(a, b))(xs, ys)
    assert_same(got, np.stack([loop_vmap(f)(a, b) for a, b in zip(xs, ys)]))


def test_a_list_of_plain_values_is_numpy_s_own_call():
    def f(x):
        t = np.transpose([[1.0, 2.0], [3.0, 4.0]])
        assert type(t) is np.ndarray
        return x + t.sum() + np.min([3, 1]) + np.sum((1, 2))

    xs = RNG.normal(size=(3, 2))
    assert_same(strict_vmap(f)(xs), loop_vmap(f)(xs))


def test_a_list_whose_items_differ_in_shape_raises_as_the_loop_does():
    f = lambda x: np.transpose([x, x[:2]])  # noqa: E731
    with pytest.raises(ValueError):
        f(np.zeros(3))
    with pytest.raises(ValueError):
        bt.vmap(f)(RNG.normal(size=(3, 3)))


def test_the_wrappers_are_numpy_s_own_outside_a_vmap():
    for name in SEQUENCES:
        assert getattr(np, name) is ORIGINALS[name]
    assert conversions.pristine()


# ---- a plain array made by a NumPy call, read with a batched index ---------------------------
LIBRARY = '''
import numpy as np

TABLE = np.cumsum(np.arange(1.0, 9.0))  # made at import: one array for every call
_KEPT = []


def lookup(w, idx):
    table = np.cumsum(w)            # a new array per example in the loop
    return table[idx]


def _read(table, groups):
    return np.diff(table[groups])   # read in the function it is handed to


def handed_on(w, idx):
    table = np.cumsum(w)            # scikit-learn's _dcg_sample_scores
    return _read(table, idx)


def lookup_2d(w, rows, cols):
    grid = np.outer(w, w)
    return grid[rows, cols] == 0.0


def read_then_written(w, idx, v):
    table = np.cumsum(w)
    first = table[idx]
    table[0] = v.sum()              # a batched write: the buffer becomes batched
    return first, table


def plain_writes_stay_plain(w, idx):
    table = np.cumsum(w)
    table[1] = -1.0
    return table[idx], table


def from_import(idx):
    return TABLE[idx]


def kept(w, idx):
    table = np.cumsum(w)
    _KEPT.append(table)             # kept beyond the call: shared, not per example
    return table[idx]


def a_view(w, idx):
    table = np.transpose(w)         # a view of the argument
    return table[idx]


def by_a_method(w, idx):
    table = w.cumsum()              # a method: not reached through numpy
    return table[idx]


def the_argument(w, idx):
    return w[idx]
'''
_LIBRARIES = iter(range(10 ** 6))


@pytest.fixture
def library(tmp_path, monkeypatch):
    """A fresh module (learnt sites are kept per code object: each test gets its own)."""
    name = f"reads_with_a_batched_index_{next(_LIBRARIES)}"
    (tmp_path / f"{name}.py").write_text(LIBRARY)
    monkeypatch.syspath_prepend(str(tmp_path))
    return importlib.import_module(name)


W = np.linspace(0.5, 4.0, 8)


def _indices(n, size=5, high=8):
    return RNG.integers(-high, high, size=(n, size))


@pytest.mark.parametrize("n", [1, 2, 5])
def test_a_table_made_by_a_numpy_call_reads_per_example(library, n):
    f = lambda idx: library.lookup(W, idx)  # noqa: E731
    idx = _indices(n)
    assert_same(strict_vmap(f)(idx), loop_vmap(f)(idx))
    # (sites are told by code object: equal code in an earlier test's module counts too)
    assert any(type(m) is buffers.MakerSites and m.code == library.lookup.__code__
               for m in buffers.learnt_modules(f))
    assert_same(strict_vmap(f)(idx[::-1]), loop_vmap(f)(idx[::-1]))  # learnt: one pass
    assert library.np is np and conversions.pristine()


def test_a_batch_of_no_examples(library):
    f = lambda idx: library.lookup(W, idx)  # noqa: E731
    got = bt.vmap(f, fallback="error")(np.zeros((0, 5), dtype=np.intp))
    assert got.shape == (0, 5) and got.dtype == np.float64


def test_batched_table_and_batched_index(library):
    f = library.lookup
    ws, idx = RNG.normal(size=(3, 8)), _indices(3)
    assert_same(strict_vmap(f)(ws, idx), loop_vmap(f)(ws, idx))


@pytest.mark.parametrize("in_axes", [(None, 0), (None, 1), (0, -1)])
def test_the_array_handed_to_another_function(library, in_axes):
    ws = W if in_axes[0] is None else np.stack([W, W[::-1], W * 2])
    idx = np.sort(RNG.integers(0, 8, size=(3, 4)), axis=-1)
    idx = idx if in_axes[1] == 0 else np.ascontiguousarray(idx.T)
    assert_same(strict_vmap(library.handed_on, in_axes)(ws, idx),
                loop_vmap(library.handed_on, in_axes)(ws, idx))


def test_a_tuple_index_and_a_0d_batched_index(library):
    f = lambda r, c: library.lookup_2d(W - 2.0, r, c)  # noqa: E731
    rows, cols = RNG.integers(0, 8, size=(4, 6)), RNG.integers(0, 8, size=(4, 6))
    assert_same(strict_vmap(f)(rows, cols), loop_vmap(f)(rows, cols))
    g = lambda i: library.lookup(W, i)  # noqa: E731
    scalars = np.array([3, -1, 0])  # one element per example: a scalar copy, vectorised
    assert_same(strict_vmap(g)(scalars), loop_vmap(g)(scalars))


def row_written_through(i):
    table = np.ones((4, 3))     # a buffer (this module's maker)
    row = table[i]              # a 0-d integer: a view of the table in the loop
    row[0] = -1.0
    return table, np.shares_memory(row, table)


def test_a_0d_batched_integer_read_is_a_view_per_example():
    """NumPy reads a 0-d integer index as an int: ``table[i]`` of a 2-d table is a view of
    it, and a write through it reaches the table. Where every example holds the same ``i``
    that is the view; where they differ no one view can be, and the function reruns."""
    same = np.array([2, 2, 2])
    assert_same(strict_vmap(row_written_through)(same), loop_vmap(row_written_through)(same))
    rerun(row_written_through, np.array([0, 2, 3]))


def test_nested_vmaps(library):
    f = lambda idx: library.lookup(W, idx)  # noqa: E731
    idx = RNG.integers(0, 8, size=(2, 3, 4))
    got = strict_vmap(lambda i: bt.vmap(f, fallback="error")(i))(idx)
    assert_same(got, np.stack([loop_vmap(f)(i) for i in idx]))


def test_a_batched_write_after_the_read_makes_the_table_batched(library):
    f = lambda idx, v: library.read_then_written(W, idx, v)  # noqa: E731
    idx, vs = _indices(3), RNG.normal(size=(3, 2))
    assert_same(strict_vmap(f)(idx, vs), loop_vmap(f)(idx, vs))


def test_plain_writes_into_the_table(library):
    f = lambda idx: library.plain_writes_stay_plain(W, idx)  # noqa: E731
    idx = _indices(3)
    assert_same(strict_vmap(f)(idx), loop_vmap(f)(idx))


def test_an_out_of_bounds_index_raises_as_the_loop_does(library):
    f = lambda idx: library.lookup(W, idx)  # noqa: E731
    with pytest.raises(IndexError):
        bt.vmap(f)(np.array([[0, 1], [2, 8]]))


@pytest.mark.parametrize("name", ["from_import", "kept", "a_view", "by_a_method",
                                  "the_argument"])
def test_what_the_sites_do_not_serve_reruns_per_example(library, name):
    """An array from outside the function (made at import, or the caller's argument), one
    kept beyond the call, a method's result: not learnt, the rerun per example (as before).
    A view of the argument: its call is learnt, but a view is no new array per example, so
    it stays plain, and the function reruns too."""
    fn = getattr(library, name)
    f = (lambda idx: fn(idx)) if name == "from_import" else (lambda idx: fn(W, idx))
    rerun(f, _indices(3))
    rerun(f, _indices(3))  # (learnt or not, again alike)
    assert any(type(m) is buffers.MakerSites and m.code == fn.__code__
               for m in buffers.learnt_modules(f)) == (name == "a_view")


def test_a_kept_table_is_not_a_buffer_after_the_vmap(library):
    f = lambda idx: library.kept(W, idx)  # noqa: E731
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", bt.PerformanceWarning)
        bt.vmap(f)(_indices(2))
    assert all(type(t) is np.ndarray for t in library._KEPT)


def test_the_site_reader_leaves_numpy_as_it_was(library):
    f = lambda idx: library.lookup(W, idx)  # noqa: E731
    strict_vmap(f)(_indices(2))
    g = lambda x: x.cumsum() + np.cumsum(x, axis=-1)  # noqa: E731  (dispatched as before)
    xs = RNG.normal(size=(3, 4))
    assert_same(strict_vmap(g)(xs), loop_vmap(g)(xs))
    assert np.cumsum(np.ones(3)).tolist() == [1.0, 2.0, 3.0]
    assert type(np.cumsum(np.ones(3))) is np.ndarray
    assert conversions.pristine()
    assert type(library.lookup(W, np.array([1, 2]))) is np.ndarray  # outside a vmap


# ---- the real code these serve ---------------------------------------------------------------
def test_scikit_learn_dcg_score_is_vectorised():
    metrics = pytest.importorskip("sklearn.metrics", reason="scikit-learn is a test extra")
    yt, ys = RNG.random((3, 2, 5)), RNG.normal(size=(3, 2, 5))
    assert_same(strict_vmap(metrics.dcg_score)(yt, ys), loop_vmap(metrics.dcg_score)(yt, ys))


def test_scikit_learn_robust_scale_is_vectorised():
    preprocessing = pytest.importorskip("sklearn.preprocessing",
                                        reason="scikit-learn is a test extra")
    f = lambda x: preprocessing.robust_scale(x, quantile_range=(10.0, 90.0))  # noqa: E731
    xs = RNG.normal(size=(3, 8, 2))
    assert_same(strict_vmap(f)(xs), loop_vmap(f)(xs))
