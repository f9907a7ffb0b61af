"""scipy.sparse with batched values (batchtensor/rules/scipy_sparse.py): COO's ``toarray()``
of batched coordinates or data in one call, and its ``tocsr()`` / ``tocsc()`` (a CSR / CSC
whose attributes are each example's, its methods batched), checked against the per-example
loop, on SciPy's own classes and on scikit-learn's metrics that build them (unchanged); what
stays per example (CSR from triplets, ``find``, the np.matrix of a sum beyond ravel /
asarray) reruns with the loop's result."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import batchtensor as bt
from batchtensor.registry import record_paths
from loop_reference import assert_same, loop_vmap, vectorised

sp = pytest.importorskip("scipy.sparse", reason="the SciPy rules need the scipy extra")
from batchtensor.rules import scipy_sparse  # noqa: E402

SHAPE = (3, 4)
DTYPES = (np.bool_, np.int8, np.int64, np.uint64, np.float32, np.float64, np.complex128)


def entries(rng, batch, nnz, dtype, shape=SHAPE):
    """``batch`` examples of ``nnz`` COO entries each, with duplicate cells."""
    coords = tuple(rng.integers(0, n, (batch, nnz)) for n in shape)
    data = rng.normal(size=(batch, nnz)) * 50
    if np.dtype(dtype).kind == "c":
        data = data + 1j * rng.normal(size=(batch, nnz))
    if np.dtype(dtype).kind in "biu":
        data = np.abs(data) % 3
    return coords, data.astype(dtype)


def coo_2d(row, col, data, shape=SHAPE, order=None, cls=sp.coo_array):
    return cls((data, (row, col)), shape=shape).toarray(order=order)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("batch", [1, 4])
def test_toarray_sums_duplicates_as_scipy(dtype, batch):
    rng = np.random.default_rng(0)
    (row, col), data = entries(rng, batch, 9, dtype)
    got = vectorised(coo_2d, row, col, data)
    assert got.dtype == np.dtype(dtype)


@pytest.mark.parametrize("in_axes", [(0, 0, 0), (-1, -1, -1), (0, None, 0), (None, None, 0),
                                     (0, 0, None), (-1, 0, None)])
def test_toarray_in_axes_and_unbatched_parts(in_axes):
    rng = np.random.default_rng(1)
    (row, col), data = entries(rng, 3, 7, np.float64)
    args = [row, col, data]
    args = [a[0] if ax is None else (a.T.copy() if ax == -1 else a)
            for a, ax in zip(args, in_axes)]
    vectorised(coo_2d, *args, in_axes=in_axes)


@pytest.mark.parametrize("fortran", [False, True])
def test_todense_op_batch_of_no_examples(fortran):
    """(SciPy's constructor asks ``bool()`` of its index checks, which no example answers at
    batch size 0; the op itself takes an empty batch.)"""
    rng = np.random.default_rng(2)
    (row, col), data = entries(rng, 0, 5, np.int64)
    got = bt.vmap(lambda r, c, d: scipy_sparse.coo_todense((r, c), d, SHAPE, np.int64, fortran),
                  fallback="error")(row, col, data)
    assert got.shape == (0, *SHAPE) and got.dtype == np.int64


@pytest.mark.parametrize("shape, nnz", [((0, 4), 0), ((3, 4), 0), ((1, 5), 4), ((5, 1), 4)])
def test_toarray_empty_and_degenerate_shapes(shape, nnz):
    rng = np.random.default_rng(3)
    (row, col), data = entries(rng, 3, nnz, np.float64, shape)
    for order in (None, "F"):
        vectorised(lambda r, c, d: coo_2d(r, c, d, shape, order), row, col, data)


@pytest.mark.parametrize("order", [None, "C", "F"])
def test_toarray_layout_of_each_example(order):
    rng = np.random.default_rng(4)
    (row, col), data = entries(rng, 3, 8, np.float64)

    def f(r, c, d):
        a = coo_2d(r, c, d, order=order)
        flags = np.array([a.flags.c_contiguous, a.flags.f_contiguous, a.flags.writeable])
        a[0, 0] = -1.0  # a fresh array: the write reaches nothing else
        return a, flags

    got = vectorised(f, row, col, data)
    assert np.all(got[1] == f(row[0], col[0], data[0])[1])
    assert np.all(data == entries(np.random.default_rng(4), 3, 8, np.float64)[1])


def test_toarray_matrix_one_and_three_dimensions():
    rng = np.random.default_rng(5)
    (row, col), data = entries(rng, 3, 6, np.float32)
    vectorised(lambda r, c, d: coo_2d(r, c, d, cls=sp.coo_matrix), row, col, data)
    vectorised(lambda i, d: sp.coo_array((d, (i,)), shape=(5,)).toarray(), row, data)
    (i, j, k), data3 = entries(rng, 3, 10, np.int32, (2, 3, 4))
    for order in (None, "F"):
        vectorised(lambda i, j, k, d: sp.coo_array((d, (i, j, k)), shape=(2, 3, 4))
                   .toarray(order=order), i, j, k, data3)


def test_toarray_nested():
    rng = np.random.default_rng(6)
    (row, col), data = entries(rng, 6, 7, np.float64)
    row, col, data = row.reshape(2, 3, 7), col.reshape(2, 3, 7), data.reshape(2, 3, 7)
    inner = bt.vmap(coo_2d, in_axes=(0, 0, None))  # data: the outer level's only
    with bt.config(fallback="error"):
        got = bt.vmap(inner, in_axes=(0, 0, 0))(row, col, data[:, 0])
    want = loop_vmap(loop_vmap(coo_2d, in_axes=(0, 0, None)))(row, col, data[:, 0])
    assert_same(got, want)
    with bt.config(fallback="error"):
        got = bt.vmap(bt.vmap(coo_2d, in_axes=(None, 0, 0)), in_axes=(0, 1, 0))(
            row[:, 0], np.swapaxes(col, 0, 1), data)
    want = loop_vmap(loop_vmap(coo_2d, in_axes=(None, 0, 0)), in_axes=(0, 1, 0))(
        row[:, 0], np.swapaxes(col, 0, 1), data)
    assert_same(got, want)


def test_toarray_is_served_by_the_rule():
    rng = np.random.default_rng(7)
    (row, col), data = entries(rng, 3, 5, np.int64)
    with record_paths() as log:
        bt.vmap(coo_2d, fallback="error")(row, col, data)
    assert (scipy_sparse.coo_todense, "rule") in log


def test_toarray_out_and_other_orders_rerun():
    rng = np.random.default_rng(8)
    (row, col), data = entries(rng, 3, 5, np.float64)

    def into(r, c, d):
        out = np.empty(SHAPE)
        return sp.coo_array((d, (r, c)), shape=SHAPE).toarray(out=out)

    with pytest.raises(TypeError):
        bt.vmap(into, fallback="error")(row, col, data)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", bt.PerformanceWarning)
        assert_same(bt.vmap(into)(row, col, data), loop_vmap(into)(row, col, data))
        with pytest.raises(ValueError):  # NumPy's own error, as in the loop
            bt.vmap(lambda r, c, d: coo_2d(r, c, d, order="A"))(row, col, data)


def test_plain_toarray_untouched_inside_vmap():
    m = sp.coo_array((np.array([1.0, 2.0]), (np.array([0, 0]), np.array([1, 1]))),
                     shape=(2, 2))
    got = bt.vmap(lambda x: m.toarray() + x, fallback="error")(np.zeros((3, 2, 2)))
    assert_same(got, np.broadcast_to(m.toarray(), (3, 2, 2)))
    assert sp.coo_array.toarray is not scipy_sparse.toarray  # outside vmap: SciPy's own


def test_csr_built_from_triplets_reruns_per_example():
    """``csr_array((data, (i, j)))`` converts in SciPy's compiled code: the rerun."""
    rng = np.random.default_rng(9)
    (row, col), data = entries(rng, 3, 8, np.float64)

    def f(r, c, d):
        m = sp.csr_array((d, (r, c)), shape=SHAPE)
        return m.data.sum(), m.toarray()

    with pytest.raises(TypeError):
        bt.vmap(f, fallback="error")(row, col, data)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", bt.PerformanceWarning)
        assert_same(bt.vmap(f)(row, col, data), loop_vmap(f)(row, col, data))


# ---- COO's tocsr() / tocsc(): a BatchedCSR ------------------------------------------------------
SPARSE = [(sp.coo_matrix, "tocsr"), (sp.coo_matrix, "tocsc"), (sp.coo_array, "tocsr"),
          (sp.coo_array, "tocsc")]


def compressed(r, c, d, cls=sp.coo_matrix, to="tocsr", shape=SHAPE):
    return getattr(cls((d, (r, c)), shape=shape), to)()


def reads(m):
    """What code reads of a CSR / CSC: each example's attributes, sums, products."""
    n, k = m.shape
    v = np.arange(1, k + 1, dtype=np.int32)
    u = np.arange(1, n + 1, dtype=np.float32)
    return (m.indptr, m.sum(), np.ravel(m.sum(axis=0)), np.asarray(m.sum(axis=1)).ravel(),
            np.ravel(m.sum(axis=-1, dtype=np.float32)), (m.data ** 2).sum(),
            m.indices.sum(), m.dot(v), m.transpose().dot(u), m @ v, m.toarray(),
            m.transpose().toarray(order="F"), m.astype(np.float32).toarray(),
            m.power(3).toarray(), (m * 3).toarray(), m.copy().toarray(), m.tocsr().toarray(),
            m.tocsc().toarray(), m.count_nonzero())


@pytest.mark.parametrize("cls, to", SPARSE)
@pytest.mark.parametrize("dtype", [np.int64, np.int8, np.uint8, np.float64, np.float32,
                                   np.bool_])
def test_compressed_reads_as_each_example(cls, to, dtype):
    rng = np.random.default_rng(20)
    (row, col), data = entries(rng, 4, 7, dtype)  # duplicates; 5 to 7 cells per example
    if dtype is not np.bool_:
        data[:, 0] = 0  # an explicit zero: stored, as SciPy stores it
    vectorised(lambda r, c, d: reads(compressed(r, c, d, cls, to)), row, col, data)
    vectorised(lambda r, c, d: reads(compressed(r, c, d, cls, to)), row[:1], col[:1], data[:1])


@pytest.mark.parametrize("in_axes", [(0, 0, None), (None, None, 0), (-1, 0, 0), (0, -1, None)])
def test_compressed_in_axes_and_unbatched_parts(in_axes):
    rng = np.random.default_rng(21)
    (row, col), data = entries(rng, 3, 6, np.int64)
    args = [a[0] if ax is None else (a.T.copy() if ax == -1 else a)
            for a, ax in zip((row, col, data), in_axes)]
    vectorised(lambda r, c, d: reads(compressed(r, c, d)), *args, in_axes=in_axes)


def test_compressed_counts_agreeing_and_degenerate_shapes():
    """Every example storing as many entries (batched attributes, no selection); a matrix
    of no entries; a size-0 axis; one row, one column."""
    rng = np.random.default_rng(22)
    row = np.array([[0, 1, 2], [2, 1, 0]])
    col = np.array([[1, 1, 3], [0, 3, 3]])
    data = rng.integers(1, 5, (2, 3))
    vectorised(lambda r, c, d: reads(compressed(r, c, d)), row, col, data)
    for shape, nnz in [((3, 4), 0), ((1, 5), 4), ((5, 1), 4)]:
        (row, col), data = entries(rng, 3, nnz, np.float64, shape)
        for cls, to in SPARSE:
            vectorised(lambda r, c, d: reads(compressed(r, c, d, cls, to, shape)),
                       row, col, data)
    (row, col), data = entries(rng, 3, 0, np.float64, (0, 4))
    vectorised(lambda r, c, d: (np.ravel(compressed(r, c, d, shape=(0, 4)).sum(axis=0)),
                                compressed(r, c, d, shape=(0, 4)).astype(int).toarray()),
               row, col, data)


@pytest.mark.parametrize("base", [sp.csr_matrix, sp.csc_array])
def test_compressed_batch_of_no_examples_and_its_class(base):
    """(SciPy's constructor asks ``bool()`` of its index checks, which no example answers at
    batch size 0: the object is made from a dense batch here.) It is SciPy's class, to
    ``isinstance`` and ``issparse``."""
    def f(d, s):
        m = scipy_sparse.batched_compressed(base, d, s, np.dtype(np.int32))
        assert isinstance(m, base) and sp.issparse(m) and m.format == base((1, 1)).format
        return m.indptr, np.ravel(m.sum(axis=0)), m.dot(np.arange(4.0)), m.transpose().toarray()

    rng = np.random.default_rng(27)
    for b in (0, 3):
        d = rng.normal(size=(b, 3, 4))
        got = bt.vmap(f, fallback="error")(d, d > 0)
        assert [g.shape[0] for g in got] == [b] * 4
        if b:
            assert_same(got, loop_vmap(f)(d, d > 0))


def test_compressed_nested():
    rng = np.random.default_rng(23)
    (row, col), data = entries(rng, 6, 7, np.int64)
    row, col, data = row.reshape(2, 3, 7), col.reshape(2, 3, 7), data.reshape(2, 3, 7)

    def f(r, c, d):
        m = compressed(r, c, d)
        return np.ravel(m.sum(axis=1)), (m.data ** 2).sum(), m.dot(np.ravel(m.sum(axis=0)))

    inner = bt.vmap(f, in_axes=(0, 0, None))
    with bt.config(fallback="error"):
        got = bt.vmap(inner, in_axes=(0, 0, 0))(row, col, data[:, 0])
    assert_same(got, loop_vmap(loop_vmap(f, in_axes=(0, 0, None)))(row, col, data[:, 0]))


def test_compressed_dot_skips_cells_not_stored():
    """``m @ v`` multiplies stored entries only: an inf of ``v`` meets no zero (no NaN)."""
    rng = np.random.default_rng(24)
    (row, col), data = entries(rng, 3, 3, np.float64)
    v = np.array([np.inf, 1.0, -np.inf, 2.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        vectorised(lambda r, c, d: compressed(r, c, d).dot(v), row, col, np.abs(data) + 1)


def rerun_like_loop(f, *args):
    with pytest.raises((TypeError, bt.BatchingError)):
        bt.vmap(f, fallback="error")(*args)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", bt.PerformanceWarning)
        assert_same(bt.vmap(f)(*args), loop_vmap(f)(*args))


def test_compressed_uses_without_a_batched_meaning_rerun():
    """The np.matrix of an spmatrix's sum beyond ravel / asarray / astype, SciPy's compiled
    methods (indexing, a sparse product) and a count that differs per example: the rerun."""
    rng = np.random.default_rng(25)
    (row, col), data = entries(rng, 3, 7, np.int64)
    uses = [lambda m: m.sum(axis=1) * m.sum(axis=0),  # a matrix product per example
            lambda m: m.sum(axis=0)[0],  # a 1 x n matrix per example
            lambda m: np.asanyarray(m.sum(axis=1)),
            lambda m: m.sum(axis=0).A1,
            lambda m: m[0].toarray(),
            lambda m: (m @ m.transpose()).toarray(),
            lambda m: np.float64(m.nnz)]
    for use in uses:
        rerun_like_loop(lambda r, c, d: np.asarray(use(compressed(r, c, d))), row, col, data)


@pytest.mark.parametrize("change", ["data", "alias", "indptr", "assign"])
@pytest.mark.parametrize("counts", ["ragged", "same"])
def test_compressed_writes_and_assignments_as_the_loop(change, counts):
    """Writes into ``data`` / ``indptr`` (also through a name held before) and assignments:
    the methods then see what the loop's example holds (SciPy's own, or the rerun)."""
    rng = np.random.default_rng(26)
    (row, col), data = entries(rng, 3, 7, np.float64)
    if counts == "same":
        row, col = np.stack([np.arange(7) % 3] * 3), np.stack([np.arange(7) % 4] * 3)

    def f(r, c, d):
        m = compressed(r, c, d)
        held = m.data
        if change == "data":
            m.data *= 2
        elif change == "alias":
            held += 1.5
        elif change == "indptr":
            m.indptr[1] = m.indptr[2]  # row 0 takes row 1's first entries
        else:
            m.data = m.data * 3
        return (np.ravel(m.sum(axis=1)), m.sum(), m.dot(np.arange(4.0)), m.toarray(),
                m.transpose().toarray())

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", bt.PerformanceWarning)
        assert_same(bt.vmap(f)(row, col, data), loop_vmap(f)(row, col, data))


def test_compressed_batch_of_one_and_plain_untouched():
    m = sp.coo_matrix((np.array([1.0, 2.0]), (np.array([0, 0]), np.array([1, 1]))),
                      shape=(2, 2)).tocsr()
    got = bt.vmap(lambda x: np.ravel(m.sum(axis=1)) + x, fallback="error")(np.zeros((3, 2)))
    assert_same(got, np.broadcast_to(np.ravel(m.sum(axis=1)), (3, 2)))
    assert type(m) is sp.csr_matrix
    assert sp.coo_array.tocsr is not scipy_sparse.tocsr  # outside vmap: SciPy's own


# ---- scikit-learn's metrics, unchanged ---------------------------------------------------------
def labels(rng, batch, n=12, k=3, dtype=np.int64):
    """Class labels 0..k-1, every class present in every example."""
    ys = [rng.permutation(np.concatenate([np.arange(k), rng.integers(0, k, n - k)]))
          for _ in range(batch)]
    return np.stack(ys).astype(dtype)


@pytest.fixture(scope="module")
def metrics():
    return pytest.importorskip("sklearn.metrics", reason="scikit-learn is an optional extra")


@pytest.mark.parametrize("name, kwargs", [
    ("confusion_matrix", {}),
    ("confusion_matrix", {"labels": [0, 1, 2, 3]}),
    ("confusion_matrix", {"normalize": "true"}),
    ("balanced_accuracy_score", {}),
    ("balanced_accuracy_score", {"adjusted": True}),
    ("cohen_kappa_score", {}),
    ("cohen_kappa_score", {"weights": "quadratic"}),
    ("matthews_corrcoef", {}),
])
@pytest.mark.parametrize("dtype", [np.int64, np.int32])
def test_sklearn_confusion_metrics_vectorised(metrics, name, kwargs, dtype):
    fn = getattr(metrics, name)
    rng = np.random.default_rng(10)
    yt, yp = labels(rng, 4, dtype=dtype), labels(rng, 4, dtype=dtype)

    def f(a, b):
        return fn(a, b, **kwargs)

    vectorised(f, yt, yp)
    vectorised(f, yt.T.copy(), yp.T.copy(), in_axes=-1)
    vectorised(f, yt, yp[0], in_axes=(0, None))
    vectorised(f, yt[:1], yp[:1])


@pytest.mark.parametrize("weights", [np.int64, np.float64, np.float32])
def test_sklearn_confusion_matrix_sample_weight(metrics, weights):
    rng = np.random.default_rng(11)
    yt, yp = labels(rng, 3), labels(rng, 3)
    w = (rng.uniform(0, 3, yt.shape) * 3).astype(weights)
    got = vectorised(lambda a, b, w: metrics.confusion_matrix(a, b, sample_weight=w), yt, yp, w)
    assert got.dtype == (np.int64 if weights is np.int64 else np.float64)
    vectorised(lambda a, b, w: metrics.confusion_matrix(a, b, sample_weight=w), yt[0], yp[0],
               w, in_axes=(None, None, 0))


@pytest.mark.parametrize("name", ["cluster.pair_confusion_matrix", "rand_score"])
@pytest.mark.parametrize("dtype", [np.int64, np.int32])
def test_sklearn_pair_confusion_vectorised(metrics, name, dtype):
    """scikit-learn's sparse contingency matrix (``tocsr``, ``sum(axis)``, ``.data``,
    ``dot``, ``transpose``), each example storing its own count of cells."""
    fn = metrics
    for part in name.split("."):
        fn = getattr(fn, part)
    rng = np.random.default_rng(12)
    yt, yp = labels(rng, 5, n=10, k=4, dtype=dtype), labels(rng, 5, n=10, k=3, dtype=dtype)
    vectorised(fn, yt, yp)
    vectorised(fn, yt.T.copy(), yp.T.copy(), in_axes=-1)
    vectorised(fn, yt, yp[0], in_axes=(0, None))
    vectorised(fn, yt[:1], yp[:1])
    same = np.stack([np.arange(10) % 2] * 3)  # one cell pattern in every example
    vectorised(fn, same, same[:, ::-1].copy())


def test_sklearn_sparse_contingency_reruns_where_it_must(metrics):
    """NMI's conversions: the loop's values, by the rerun (``np.dot`` of ``.data`` and
    ``sp.find`` of a per-example count of cells, in fowlkes_mallows, ARI and mutual
    information: tests/test_ragged_ops.py)."""
    rng = np.random.default_rng(13)
    yt, yp = labels(rng, 4), labels(rng, 4)
    rerun_like_loop(metrics.normalized_mutual_info_score, yt, yp)


def test_sklearn_labels_differing_per_example(metrics):
    """Each example's own label set: the loop's matrices, by the rerun."""
    yt = np.array([[0, 1, 2, 2], [0, 1, 3, 3]])
    yp = np.array([[0, 2, 2, 1], [3, 1, 0, 3]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", bt.PerformanceWarning)
        got = bt.vmap(metrics.confusion_matrix)(yt, yp)
    assert_same(got, loop_vmap(metrics.confusion_matrix)(yt, yp))


# ---- found in review: the sum's type, and data shared with the matrix --------------------------
_ROWS, _COLS = np.array([[0, 1], [0, 1]]), np.array([[0, 0], [0, 0]])  # column 0: two cells


def _csr(r, c, d):
    return sp.coo_array((d, (r, c)), shape=(2, 2)).tocsr()


@pytest.mark.parametrize("axis, dtype, rows, cols, data", [
    (0, bool, _ROWS, _COLS, np.array([[1, -1], [1, 1]])),             # 1 + -1 is False
    (1, np.int64, _COLS, _ROWS, np.array([[1.5, 1.5], [0.6, 0.6]])),  # 3.0, not 1 + 1
])
def test_a_sum_with_a_dtype_adds_in_scipys_type_first(axis, dtype, rows, cols, data):
    f = lambda r, c, d: _csr(r, c, d).sum(axis=axis, dtype=dtype)  # noqa: E731
    assert_same(bt.vmap(f, fallback="error")(rows, cols, data), loop_vmap(f)(rows, cols, data))


def _through_transpose(r, c, d):
    m = _csr(r, c, d)
    t = m.transpose()
    t.data *= 2
    return m.toarray()


def _before_transpose(r, c, d):
    m = _csr(r, c, d)
    t = m.T
    m.data *= 2
    return t.toarray()


def _through_real(r, c, d):
    m = _csr(r, c, d)
    m.real.data *= 2
    return m.toarray()


@pytest.mark.parametrize("f", [_through_transpose, _before_transpose, _through_real])
def test_transpose_and_real_share_data_with_the_matrix(f):
    # (after the write the matrices are SciPy's own, whose compiled toarray reruns)
    data = np.array([[1.5, 2.5], [0.5, 4.0]])
    assert_same(bt.vmap(f, fallback="silent")(_ROWS, _COLS, data),
                loop_vmap(f)(_ROWS, _COLS, data))


# ---- CSR / CSC built from batched (data, indices, indptr): toarray() -------------------------
def csr_parts(rng, batch, dtype, fmt, nnz=7, major=3, minor=4):
    """``batch`` examples of a CSR (CSC) of ``nnz`` entries: indices with duplicate cells and
    unsorted within a row, an indptr whose rows hold other counts per example."""
    data = entries(rng, batch, nnz, dtype)[1]
    indices = rng.integers(0, minor, (batch, nnz)).astype(np.int32)
    cuts = np.sort(rng.integers(0, nnz + 1, (batch, major - 1)), axis=1)
    indptr = np.concatenate([np.zeros((batch, 1), int), cuts, np.full((batch, 1), nnz)],
                            axis=1).astype(np.int32)
    return data, indices, indptr


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("fmt, cls", [("csr", sp.csr_array), ("csc", sp.csc_array),
                                      ("csr", sp.csr_matrix), ("csc", sp.csc_matrix)])
def test_compressed_toarray_of_batched_attributes(dtype, fmt, cls):
    shape = (3, 4) if fmt == "csr" else (4, 3)

    def f(data, indices, indptr):
        return cls((data, indices, indptr), shape=shape).toarray()

    args = csr_parts(np.random.default_rng(7), 4, dtype, fmt)
    got = vectorised(f, *args)
    assert got[0].flags.f_contiguous == (fmt == "csc")  # SciPy's order: C for CSR, F for CSC
    vectorised(f, args[0], args[1][0], args[2][0], in_axes=(0, None, None))
    vectorised(f, *(a.T for a in args), in_axes=-1)


def test_compressed_toarray_of_one_example_and_nested():
    def f(data, indices, indptr):
        return sp.csr_array((data, indices, indptr), shape=(3, 4)).toarray()

    args = csr_parts(np.random.default_rng(8), 6, np.float64, "csr")
    with warnings.catch_warnings():  # (SciPy's int(indptr[-1]): one example reruns, as cheap)
        warnings.simplefilter("ignore", bt.PerformanceWarning)
        assert_same(bt.vmap(f)(*(a[:1] for a in args)), loop_vmap(f)(*(a[:1] for a in args)))
    nested = [a.reshape(2, 3, -1) for a in args]
    with warnings.catch_warnings():  # (SciPy's int(indptr[-1]) as an index: a rerun)
        warnings.simplefilter("ignore", bt.PerformanceWarning)
        assert_same(bt.vmap(bt.vmap(f))(*nested), loop_vmap(loop_vmap(f))(*nested))


def test_compressed_toarray_in_the_other_order_or_into_out_runs_scipy_s_own():
    def f(data, indices, indptr):
        m = sp.csc_array((data, indices, indptr), shape=(4, 3))
        return m.toarray(order="C")  # SciPy converts to CSR first: its order of duplicates

    def g(data, indices, indptr):
        out = np.zeros((3, 4))
        sp.csr_array((data, indices, indptr), shape=(3, 4)).toarray(out=out)
        return out

    args = csr_parts(np.random.default_rng(9), 3, np.float64, "csc")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", bt.PerformanceWarning)
        assert_same(bt.vmap(f)(*args), loop_vmap(f)(*args))
        assert_same(bt.vmap(g)(*args), loop_vmap(g)(*args))


def test_compressed_entries_outside_indptr_are_not_added():
    def f(data, indices, indptr):
        return sp.csr_array((data, indices, indptr), shape=(2, 3)).toarray()

    data = np.array([[1.0, 2.0, 4.0, 8.0], [16.0, 32.0, 64.0, -0.0]])
    indices = np.array([[0, 1, 2, 0], [2, 2, 1, 0]], np.int32)
    indptr = np.array([[0, 1, 3], [0, 3, 3]], np.int32)  # the last entry past indptr[-1]
    vectorised(f, data, indices, indptr)
