"""scipy.sparse with batched values (batchtensor/rules/scipy_sparse.py): COO's ``toarray()``
of batched coordinates or data in one call, checked against the per-example loop, on SciPy's
own classes and on scikit-learn's metrics that build them (unchanged); what stays per
example (CSR from batched data) reruns with the loop's result."""

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


def test_csr_of_batched_data_reruns_per_example():
    """Duplicates summed into a per-example number of stored entries: no batch can hold it."""
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


def test_sklearn_labels_differing_per_example(metrics):
    """Each example's own label set: the loop's matrices, by the rerun."""
    yt = np.array([[0, 1, 2, 2], [0, 1, 3, 3]])
    yp = np.array([[0, 2, 2, 1], [3, 1, 0, 3]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", bt.PerformanceWarning)
        got = bt.vmap(metrics.confusion_matrix)(yt, yp)
    assert_same(got, loop_vmap(metrics.confusion_matrix)(yt, yp))
