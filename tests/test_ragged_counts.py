"""The count of a selection whose size differs per example (``x[m].shape[0]``, ``len(x[m])``
in a truth test), ``np.bincount`` of a selection, selections in nested vmaps, and hashing a
value every example holds (``set(np.unique(y))``), each against the per-example loop."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import batchtensor as bt
from batchtensor.errors import ControlFlowError
from loop_reference import assert_same, loop_vmap, vectorised

RNG = np.random.default_rng(11)


def labels(shape, k=4, dtype=np.int64):
    return RNG.integers(0, k, shape).astype(dtype)


def grouped(f, *args, in_axes=0):
    """vmap's result where the examples may branch apart (groups, no rerun), and the loop's."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", bt.PerformanceWarning)
        got = bt.vmap(f, in_axes)(*args)
    assert_same(got, loop_vmap(f, in_axes)(*args))
    return got


# ---- the count's truth ------------------------------------------------------------------------
def sum_if_any_shape(x):
    s = x[x > 0]
    if s.shape[0]:
        return s.sum() * 2.0
    return x.sum()


def max_unless_empty_len(x):
    s = x[x > 0]
    if not len(s):
        return x.min()
    return s.max()


def while_len(x):
    s = x[x > 0]
    n = 0
    while len(s) and n < 2:
        n += 1
    return s.sum() * n


TRUTH = [sum_if_any_shape, max_unless_empty_len, while_len]


@pytest.mark.parametrize("f", TRUTH, ids=lambda f: f.__name__)
@pytest.mark.parametrize("in_axes", [0, -1])
def test_truth_of_the_count_where_every_example_selects_something(f, in_axes):
    xs = RNG.normal(size=(5, 7))
    xs[:, 0] = np.abs(xs[:, 0]) + 0.1  # counts differ, none zero
    vectorised(f, xs if in_axes == 0 else np.ascontiguousarray(xs.T), in_axes=in_axes)


@pytest.mark.parametrize("f", TRUTH, ids=lambda f: f.__name__)
def test_truth_of_the_count_where_examples_disagree_splits_into_groups(f):
    xs = RNG.normal(size=(6, 5))
    xs[[1, 4]] = -1.0  # these select nothing
    with pytest.raises(ControlFlowError):
        bt.vmap(f, fallback="error")(xs)
    grouped(f, xs)


@pytest.mark.parametrize("n", [0, 1])
def test_truth_of_the_count_small_batches(n):
    xs = np.abs(RNG.normal(size=(n, 4))) + 0.1
    got = bt.vmap(sum_if_any_shape, fallback="error")(xs)
    assert_same(got, loop_vmap(sum_if_any_shape)(xs) if n else np.zeros((0,)))


def test_the_count_as_a_shape():
    xs = RNG.normal(size=(5, 6, 2))
    xs[:, 0, 0] = 1.0

    def f(x):
        s = x[x[:, 0] > 0]  # rows: (count, 2) per example
        assert len(s.shape) == 2 and s.shape[1:] == (2,) and np.shape(s)[1] == 2
        return s.sum(axis=0) if s.shape[0] else x[0]

    vectorised(f, xs)


COUNT_AS_A_NUMBER = {
    "shape[0] * 1.0": lambda x: x[x > 0].shape[0] * 1.0,
    "len() + 1": lambda x: len(x[x > 0]) + 1,
    "len() or 5": lambda x: len(x[x > 0]) or 5,
    "shape[0] == 3": lambda x: 1.0 if x[x > 0].shape[0] == 3 else 0.0,
    "range(shape[0])": lambda x: sum(range(x[x > 0].shape[0])),
    "hash(shape)": lambda x: float(hash(x[x > 0].shape) % 2),
    "tuple ==": lambda x: 1.0 if x[x > 0].shape == (3,) else 0.0,
}


@pytest.mark.parametrize("name", sorted(COUNT_AS_A_NUMBER))
def test_the_count_used_as_a_number_reruns_per_example(name):
    xs = -np.abs(RNG.normal(size=(6, 5))) - 0.1
    xs[:, 0] = 0.5
    xs[::2, 1] = 0.7  # every example selects something: 2 or 1 elements
    f = COUNT_AS_A_NUMBER[name]
    with pytest.raises((bt.BatchingError, TypeError), match="selects between|__index__"):
        bt.vmap(f, fallback="error")(xs)
    with pytest.warns(bt.PerformanceWarning, match="once per example"):
        got = bt.vmap(f)(xs)
    assert_same(got, loop_vmap(f)(xs))


def test_a_count_every_example_of_a_group_shares_converts():
    # after the split at the `if`, the examples of each group agree on the count
    xs = np.array([[1.0, -1, -1], [2.0, 3.0, -1], [4.0, -1, -1], [5.0, 6.0, -1]])

    def f(x):
        s = x[x > 0]
        if x[1] > 0:
            return np.arange(float(s.shape[0]))[-1] + s.sum()
        return np.zeros(int(s.shape[0]))[0] + s.max()

    grouped(f, xs)


# ---- np.bincount of a selection ---------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.uint8, np.int8])
@pytest.mark.parametrize("in_axes", [0, -1])
def test_bincount_of_a_selection(dtype, in_axes):
    t, p = labels((6, 12), dtype=dtype), labels((6, 12), dtype=dtype)
    t[:, :4] = p[:, :4] = np.arange(4)  # every label selected: as many bins per example

    def f(a, b):
        return np.bincount(a[a == b], minlength=2)

    if in_axes == -1:
        t, p = np.ascontiguousarray(t.T), np.ascontiguousarray(p.T)
    vectorised(f, t, p, in_axes=in_axes)


def test_bincount_of_a_selection_with_weights_and_empty_examples():
    t, p = labels((5, 9)), labels((5, 9))
    t[2], p[2] = 0, 1  # example 2 selects nothing
    w = RNG.uniform(size=(5, 9)).astype(np.float32)

    def f(a, b, w):
        m = a == b
        return np.bincount(a[m], weights=w[m], minlength=4)

    vectorised(f, t, p, w)
    vectorised(lambda a, b: np.bincount(a[a == b], minlength=5), t, p)
    nothing = np.ones((3, 4), dtype=np.int64)
    vectorised(lambda a: np.bincount(a[a > 1], minlength=3), nothing)  # all empty
    vectorised(lambda a: np.bincount(a[a > 1]), nothing)  # all empty, no bins


def test_bincount_of_a_selection_unbatched_and_bool_values():
    t = labels((4, 10))
    t[:, 0] = 3
    vectorised(lambda a: np.bincount(np.arange(10)[a == 3] % 4, minlength=4), t)
    vectorised(lambda a: np.bincount((a > 1)[a != 0], minlength=2), t)


def test_bincount_of_a_selection_whose_bins_differ_reruns():
    t = np.array([[0, 1, 2, 3], [0, 1, 1, 0], [2, 0, 0, 1]])

    def f(a):
        return np.bincount(a[a > 0]).sum()  # 4, 2 and 3 bins

    with pytest.raises(bt.BatchingError, match="bincount"):
        bt.vmap(f, fallback="error")(t)
    with pytest.warns(bt.PerformanceWarning):
        assert_same(bt.vmap(f)(t), loop_vmap(f)(t))


@pytest.mark.parametrize("f, error", [
    (lambda a: np.bincount(a[a > -3] - 5, minlength=2), ValueError),  # negative values
    (lambda a: np.bincount(a[a > 0] * 1.0, minlength=2), TypeError),  # floats
    (lambda a: np.bincount(a[a > 0], minlength=-1), ValueError),
    (lambda a: np.bincount(a[a > 0], weights=a[a > 1], minlength=4), ValueError),
])
def test_bincount_of_a_selection_raises_as_the_loop(f, error):
    t = np.array([[0, 1, 2, 3], [0, 1, 1, 0], [2, 0, 0, 1]])
    with pytest.raises(error):
        loop_vmap(f)(t)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", bt.PerformanceWarning)
        with pytest.raises((error, bt.BatchingError)):
            bt.vmap(f)(t)


# ---- selections in nested vmaps ---------------------------------------------------------------
NESTED = {
    "sum": lambda x: x[x > 0].sum(),
    "median": lambda x: np.median(x[x > -0.3]),
    "write back": lambda x: (lambda y: (y.__setitem__(y < 0, y[y < 0] * 3), y)[1])(x.copy()),
    "bincount": lambda x: np.bincount((x[x > 0] * 3).astype(np.int64) % 3, minlength=3),
    "truth": sum_if_any_shape,
}


@pytest.mark.parametrize("name", sorted(NESTED))
def test_selection_in_a_nested_vmap_is_vectorised(name):
    xs = RNG.normal(size=(3, 4, 6))
    xs[..., 0] = 0.5  # every example selects something
    f = NESTED[name]
    with warnings.catch_warnings():
        warnings.simplefilter("error", bt.PerformanceWarning)
        got = bt.vmap(bt.vmap(f), fallback="error")(xs)
    assert_same(got, loop_vmap(loop_vmap(f))(xs))


def test_selection_in_a_nested_vmap_with_operands_of_one_level():
    xs, scale = RNG.normal(size=(3, 4, 6)), RNG.normal(size=3)

    def outer(x, a):
        return bt.vmap(lambda r: (r[r > 0] * a + r.sum()).sum())(x)

    def inner_only(x):
        return bt.vmap(lambda r: (np.arange(6.0)[r > 0] * x.sum()).sum(), in_axes=None,
                       axis_size=2)(x[0])

    for f, args in ((outer, (xs, scale)), (inner_only, (xs,))):
        with warnings.catch_warnings():
            warnings.simplefilter("error", bt.PerformanceWarning)
            got = bt.vmap(f, fallback="error")(*args)
        want = np.stack([f(*[a[i] for a in args]) for i in range(3)])
        assert_same(got, want)


def test_nested_write_through_a_mask_of_the_inner_level_only():
    xs, cs = RNG.normal(size=(3, 6)), RNG.normal(size=(4, 6))

    def f(x):
        def g(c):
            y = x * 1.0 + c  # batched at both levels
            m = c > 0  # the inner level's examples only
            y[m] = y[m] * 2.0 + x.sum()
            return y
        return bt.vmap(g)(cs)

    with warnings.catch_warnings():
        warnings.simplefilter("error", bt.PerformanceWarning)
        got = bt.vmap(f, fallback="error")(xs)
    assert_same(got, np.stack([f(x) for x in xs]))


def test_a_selection_of_the_outer_level_with_an_inner_operand_reruns():
    xs = RNG.normal(size=(3, 4, 6))

    def f(x):  # x[0][x[0] > 0] holds the outer level's examples only
        return bt.vmap(lambda c: (x[0][x[0] > 0] * c).sum())(np.arange(2.0))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", bt.PerformanceWarning)
        got = bt.vmap(f)(xs)
    assert_same(got, np.stack([f(x) for x in xs]))


# ---- hashing a value every example holds ------------------------------------------------------
def sorted_labels(y):
    return np.asarray(sorted(set(np.unique(y)))) + y[:1] * 0


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.float64])
def test_set_of_unique_labels_in_a_nested_vmap(dtype):
    ys = labels((2, 3, 8), dtype=dtype)
    ys[..., :4] = np.arange(4)  # every example holds every label
    vectorised(bt.vmap(sorted_labels), ys)
    vectorised(sorted_labels, ys[0])


def test_hash_of_a_value_the_examples_disagree_on_reruns():
    ys = labels((2, 3, 8))
    ys[0, 0, :4] = np.arange(4)
    ys[..., 0] = 7  # example (0, 0) holds 0..3 and 7, the others fewer
    ys[1, :, 1:] = 1
    f = bt.vmap(lambda y: float(len(set(np.unique(y)))))
    with pytest.raises(bt.BatchingError):
        bt.vmap(f, fallback="error")(ys)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", bt.PerformanceWarning)
        assert_same(bt.vmap(f)(ys), loop_vmap(loop_vmap(lambda y: float(len(set(np.unique(y))))))(ys))
