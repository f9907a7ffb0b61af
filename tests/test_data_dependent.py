"""Ops whose output shape (or answer) depends on the data: a result when every example agrees,
a clear error naming the op when they do not. (The OpInfo sweep stacks per-example results, so
the disagreeing cases live here.)"""

from __future__ import annotations

import numpy as np
import pytest

import batchtensor as bt


@pytest.fixture(autouse=True)
def no_loop():
    old = bt.config.fallback
    bt.config.fallback = "error"  # these must be served by their rules, not the loop
    yield
    bt.config.fallback = old


DIFFERENT_SIZES = [
    ("numpy.nonzero", np.nonzero, [np.array([1.0, 0.0, 2.0]), np.array([1.0, 3.0, 2.0])]),
    ("numpy.argwhere", np.argwhere, [np.array([1, 0]), np.array([0, 0])]),
    ("numpy.argwhere", np.argwhere, [np.array(True), np.array(False)]),  # 0-d
    ("numpy.flatnonzero", np.flatnonzero, [np.array([[1, 0]]), np.array([[1, 1]])]),
    ("numpy.unique", np.unique, [np.array([1, 1, 2]), np.array([1, 2, 3])]),
    ("numpy.unique_counts", np.unique_counts, [np.array([1.0, 1.0]), np.array([1.0, 2.0])]),
    ("numpy.trim_zeros", np.trim_zeros, [np.array([0, 1, 2, 0]), np.array([0, 1, 0, 0])]),
    ("numpy.trim_zeros", np.trim_zeros, [np.array([0, 0, 0]), np.array([0, 1, 0])]),
]


@pytest.mark.parametrize("name, op, examples", DIFFERENT_SIZES,
                         ids=[f"{n}-{i}" for i, (n, _, _) in enumerate(DIFFERENT_SIZES)])
def test_different_output_sizes_raise_naming_the_op(name, op, examples):
    with pytest.raises(bt.BatchingError, match=f"{name}: the output size depends on the data"):
        bt.vmap(op)(np.stack(examples))


@pytest.mark.parametrize("op", [np.intersect1d, np.setdiff1d, np.setxor1d, np.union1d])
def test_set_ops_with_different_sizes_raise(op):
    a = np.array([[1, 2, 3], [1, 2, 3]])
    b = np.array([[1, 5, 6], [1, 2, 6]])
    with pytest.raises(bt.BatchingError, match=f"numpy.{op.__name__}: the output size"):
        bt.vmap(op)(a, b)


def test_trim_zeros_all_zero_examples():
    x = np.zeros((3, 4))
    assert bt.vmap(np.trim_zeros)(x).shape == (3, 0)
    assert bt.vmap(np.trim_zeros)(np.zeros((2, 3, 2))).shape == (2, 0, 0)


def test_trim_zeros_same_window_is_a_view_inside_and_a_new_array_outside():
    x = np.array([[0, 1, 2, 0], [0, 3, 4, 0]])

    def f(v):
        t = np.trim_zeros(v)
        t[...] = t * 10  # a view per example, as in NumPy: writes reach v
        return v

    out = bt.vmap(np.trim_zeros, out_axes=0)(x)
    np.testing.assert_array_equal(out, [[1, 2], [3, 4]])
    assert not np.shares_memory(out, x)  # the loop's np.stack copies
    np.testing.assert_array_equal(bt.vmap(f)(x.copy()), np.stack([f(v) for v in x.copy()]))


def test_min_scalar_type_of_disagreeing_0d_values():
    with pytest.raises(bt.BatchingError, match="numpy.min_scalar_type: the answer depends"):
        bt.vmap(lambda x: np.zeros((), np.min_scalar_type(x)))(np.array([1, -1]))
    got = bt.vmap(lambda x: np.zeros((), np.min_scalar_type(x)))(np.array([1, 200]))
    assert got.dtype == np.uint8


def test_shares_memory_answers_per_example():
    base = np.zeros(6)
    x = base[:4].reshape(2, 2)  # examples base[0:2], base[2:4]
    y = np.lib.stride_tricks.as_strided(base, (2, 2), (4 * base.itemsize, base.itemsize))
    # y's examples are base[0:2] (overlaps x's example 0) and base[4:6] (overlaps nothing)
    with pytest.raises(bt.BatchingError, match="numpy.shares_memory: the answer depends"):
        bt.vmap(np.shares_memory)(x, y)
    # the physical arrays overlap, but example i of x and of x[::-1] never do
    assert not bt.vmap(np.shares_memory)(x, x[::-1]).any()
    assert bt.vmap(np.may_share_memory)(x, x[:, ::-1]).all()


def test_nested_vmap_data_dependent():
    # 2 x 3 examples with two nonzeros each: both levels vectorised
    rng = np.random.default_rng(0)
    x = np.zeros((2, 3, 5))
    for i in range(2):
        for j in range(3):
            x[i, j, rng.permutation(5)[:2]] = rng.normal(size=2)
    got = bt.vmap(bt.vmap(np.flatnonzero))(x)
    want = np.array([[np.flatnonzero(x[i, j]) for j in range(3)] for i in range(2)])
    np.testing.assert_array_equal(got, want)
    x[1, 0, :] = 1.0  # one inner example with 5 nonzeros
    with pytest.raises(bt.BatchingError):
        bt.vmap(bt.vmap(np.flatnonzero))(x)


def test_unique_sorted_false_of_ints_takes_the_loop():
    bt.config.fallback = "silent"
    x = np.array([[3, 1, 3, 2], [5, 5, 4, 6]])
    got = bt.vmap(lambda v: np.unique(v, sorted=False))(x)
    want = np.stack([np.unique(r, sorted=False) for r in x])
    np.testing.assert_array_equal(got, want)


def test_roots_data_dependent_length_and_dtype():
    with pytest.raises(bt.BatchingError, match="numpy.roots: the output size"):
        bt.vmap(np.roots)(np.array([[0.0, 1, 2, 0], [1.0, 2, 0, 0]]))
    with pytest.raises(bt.BatchingError, match="numpy.roots: the result is real for some"):
        bt.vmap(np.roots)(np.array([[1.0, 0, -1], [1.0, 0, 1]]))
    assert bt.vmap(np.roots)(np.zeros((2, 3))).shape == (2, 0)  # all zero: no roots


def test_polymul_and_polydiv_trimming():
    a = np.array([[0.0, 1, 2], [0.0, 3, 4]])  # one leading zero in every example: trimmed
    got = bt.vmap(np.polymul)(a, np.array([[1.0, 1], [2.0, 1]]))
    np.testing.assert_allclose(got, [np.polymul(a[0], [1.0, 1]), np.polymul(a[1], [2.0, 1])])
    with pytest.raises(bt.BatchingError, match="numpy.polymul: the output size"):
        bt.vmap(np.polymul)(np.array([[0.0, 1], [1.0, 1]]), np.array([[1.0], [1.0]]))
    # divided by x^2 + 1: remainder 5 (length 1) and x + 5 (length 2)
    u = np.array([[1.0, 1, 1, 6], [1.0, 1, 2, 6]])
    with pytest.raises(bt.BatchingError, match="numpy.polydiv: the output size"):
        bt.vmap(np.polydiv, in_axes=(0, None))(u, np.array([1.0, 0, 1]))


# ---- unique values the same in every example: one plain array -----------------------------------
def test_unique_values_the_same_in_every_example_are_one_plain_array():
    """Every example holds every class: ``np.unique(y)`` is the same array per example, so it
    is one plain array (the value every example has), and code that iterates or hashes it
    (``set(np.unique(y))``, as scikit-learn's label checks do) runs vectorised."""
    y = np.array([[0, 2, 1, 1], [2, 2, 0, 1], [1, 0, 2, 0]])

    def labels(y):
        classes = np.unique(y)
        assert type(classes) is np.ndarray  # plain: the same for every example
        mapping = {c: i for i, c in enumerate(sorted(set(classes.tolist())))}
        return np.searchsorted(classes, y) + len(mapping)

    got = bt.vmap(labels, fallback="error")(y)
    np.testing.assert_array_equal(got, np.stack([labels(r) for r in y]))
    # values that differ per example stay a value per example (the counts equal here)
    differ = np.array([[0, 1, 1], [2, 3, 3]])
    got = bt.vmap(lambda v: np.unique(v) * 1, fallback="error")(differ)
    np.testing.assert_array_equal(got, [[0, 1], [2, 3]])


def test_sklearn_label_metrics_are_vectorised_where_every_example_has_every_class():
    metrics = pytest.importorskip("sklearn.metrics", reason="scikit-learn is a test extra")
    rng = np.random.default_rng(5)
    y = np.stack([rng.permutation(np.r_[0:3, rng.integers(0, 3, 9)]) for _ in range(4)])
    p = np.stack([rng.permutation(np.r_[0:3, rng.integers(0, 3, 9)]) for _ in range(4)])
    for fn in (metrics.accuracy_score, metrics.hamming_loss):
        got = bt.vmap(fn, fallback="error")(y, p)
        np.testing.assert_allclose(got, [fn(a, b) for a, b in zip(y, p)])
