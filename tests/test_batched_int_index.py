"""``x[i]`` with an integer ``i`` per example: in the loop a view of ``x`` (basic indexing).

A gather with each example's integer gives the right values but a copy, so a write through
the row, or into ``x`` after the row was taken, would not reach the other as it does in the
loop. Where every example holds the same integer the view is exact; where they differ vmap
reruns per example (a DataDependentError under ``fallback="error"``). A 0-d *array* index, an
integer for every axis (a scalar) or an array entry make NumPy copy too: those stay gathers.
"""

from __future__ import annotations

import numpy as np
import pytest

import batchtensor as bt
from batchtensor.errors import DataDependentError
from tests.loop_reference import assert_same, loop_vmap


def _write_through_row(x, i):
    y = x * 1.0
    row = y[i]
    row[0] = -1.0
    return y


def _write_into_source(x, i):
    y = x * 1.0
    row = y[i, ...]
    y[...] = 7.0
    return row


def _write_into_input(x, i):
    row = x[:, i]
    row += 1.0
    return row.sum()


@pytest.mark.parametrize("f", [_write_through_row, _write_into_source, _write_into_input])
@pytest.mark.parametrize("same", [True, False], ids=["same-i", "i-per-example"])
@pytest.mark.parametrize("batch", [1, 3])
def test_writes_through_a_row_picked_per_example_reach_as_in_the_loop(f, same, batch):
    rng = np.random.default_rng(batch)
    xs = rng.normal(size=(batch, 4, 5))
    idx = np.full(batch, 2) if same else np.arange(batch) % 4
    want_x, got_x = xs.copy(), xs.copy()
    with np.errstate(all="ignore"):
        want = loop_vmap(f)(want_x, idx)
        got = bt.vmap(f, fallback="silent")(got_x, idx)
    assert_same(got, want)
    np.testing.assert_array_equal(got_x, want_x)  # the caller's input, written alike


def test_the_same_integer_in_every_example_stays_vectorised():
    xs = np.arange(24.0).reshape(2, 3, 4)
    got = bt.vmap(_write_through_row, fallback="error")(xs, np.array([1, 1]))
    assert_same(got, loop_vmap(_write_through_row)(xs, np.array([1, 1])))


def test_integers_that_differ_refuse_under_fallback_error():
    xs = np.arange(24.0).reshape(2, 3, 4)
    with pytest.raises(DataDependentError, match="view of x"):
        bt.vmap(_write_through_row, fallback="error")(xs, np.array([0, 2]))


def test_batch_size_zero_gathers_nothing():
    got = bt.vmap(_write_through_row, fallback="error")(np.zeros((0, 4, 5)), np.zeros(0, int))
    assert got.shape == (0, 4, 5) and got.dtype == np.float64


@pytest.mark.parametrize("f", [
    lambda x, i: x[i, 2],                 # one element: NumPy gives a scalar, a copy
    lambda x, i: x[np.array([1, 2]), i],  # an array entry: advanced indexing copies
    lambda x, i: x[[i]][0],               # the copy the error message suggests
], ids=["scalar", "array-entry", "list"])
def test_copies_in_the_loop_stay_gathers(f):
    xs = np.arange(60.0).reshape(3, 4, 5)
    i = np.array([0, 3, 1])
    assert_same(bt.vmap(f, fallback="error")(xs, i), loop_vmap(f)(xs, i))


def test_a_row_only_read_reruns_where_the_integers_differ():
    f = lambda x, i: np.stack([x, x])[:, i] * 1  # noqa: E731  (a view in the loop, never written)
    xs = np.arange(12.0).reshape(3, 4)
    i = np.array([0, 3, 1])
    with pytest.raises(DataDependentError):
        bt.vmap(f, fallback="error")(xs, i)
    assert_same(bt.vmap(f, fallback="silent")(xs, i), loop_vmap(f)(xs, i))


def test_a_zero_d_array_index_per_example_is_a_copy_in_the_loop_too():
    def f(x, i):
        row = x[np.asarray(i, dtype=np.intp)[()] * 0 + np.asarray(i)]  # 0-d array index
        row[0] = -5.0
        return x.sum()
    xs = np.arange(24.0).reshape(2, 3, 4)
    idx = np.array([0, 2])
    want_x, got_x = xs.copy(), xs.copy()
    want = loop_vmap(f)(want_x, idx)
    got = bt.vmap(f, fallback="silent")(got_x, idx)
    assert_same(got, want)
    np.testing.assert_array_equal(got_x, want_x)


def test_nested_vmap():
    xs = np.arange(2 * 3 * 4 * 5.0).reshape(2, 3, 4, 5)
    idx = np.array([[0, 1, 2], [3, 3, 3]])
    want_x, got_x = xs.copy(), xs.copy()
    want = loop_vmap(loop_vmap(_write_through_row))(want_x, idx)
    got = bt.vmap(bt.vmap(_write_through_row), fallback="silent")(got_x, idx)
    assert_same(got, want)
