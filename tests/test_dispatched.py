"""Every argument position NumPy's own dispatchers treat as array-like (read from the installed
NumPy by ``opinfo/dispatched.py``) is batched by at least one OpInfo sample, or excluded with
a reason; and the shape-deciding arguments taken from a batch (split points, ``reps``) give
the loop's result or the data-dependent error."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import batchtensor as bt
from opinfo import DATABASE
from opinfo.dispatched import EXCLUDED_POSITIONS, batched_positions, dispatched_positions
from opinfo.universe import EXCLUDED
from tests.loop_reference import assert_same, loop_vmap

POSITIONS = dispatched_positions()


def test_positions_are_numpys_dispatchers():
    assert POSITIONS["take"] == ("a", "out")  # indices is not dispatched
    assert POSITIONS["full_like"] == ("a",)  # nor fill_value
    assert set(POSITIONS["searchsorted"]) == {"a", "v", "sorter"}
    assert POSITIONS["concatenate"] == ("arrays", "out")
    assert POSITIONS["zeros"] == ("like",)
    assert POSITIONS["add"] == ("x1", "x2", "out", "where")
    assert POSITIONS["matmul"] == ("x1", "x2", "out")  # a gufunc refuses where=
    assert POSITIONS["ufunc.at"] == ("a", "indices", "b")
    assert sum(map(len, POSITIONS.values())) > 700


def test_every_dispatched_position_is_batched_by_a_sample_or_excluded():
    batched = batched_positions(DATABASE)
    missing, stale = [], []
    for name, params in POSITIONS.items():
        for p in params:
            excluded = (name, p) in EXCLUDED_POSITIONS or name in EXCLUDED
            if (name, p) not in batched and not excluded:
                missing.append(f"{name}({p}=)")
            if (name, p) in EXCLUDED_POSITIONS and (name, p) in batched:
                stale.append(f"{name}({p}=)")
    assert not missing, ("array-like positions NumPy dispatches on that no OpInfo sample "
                         f"batches: {missing}")
    assert not stale, f"excluded positions that a sample batches after all: {stale}"
    assert all(p in POSITIONS.get(n, ()) for n, p in EXCLUDED_POSITIONS)


# ---- shape-deciding arguments taken from a batch ------------------------------------------
@pytest.mark.parametrize("f", [
    lambda x, k: np.split(x, k), lambda x, k: np.array_split(x, k, axis=0),
    lambda x, k: np.hsplit(x, k), lambda x, k: np.tile(x, k),
])
def test_shape_deciding_arguments_that_differ_rerun_per_example(f):
    xs = np.arange(24.0).reshape(4, 6)
    same = np.full(4, 2)
    assert_same(bt.vmap(f, fallback="error")(xs, same), loop_vmap(f)(xs, same))
    differ = np.array([2, 3, 2, 1])
    with pytest.raises(bt.BatchingError, match="differs between the examples"):
        bt.vmap(f, fallback="error")(xs, differ)
    g = lambda x, k: np.concatenate([np.ravel(p) for p in np.atleast_1d(f(x, k))])[:4]  # noqa: E731
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", bt.PerformanceWarning)
        assert_same(bt.vmap(g)(xs, differ), loop_vmap(g)(xs, differ))


def test_shape_deciding_arguments_at_nested_levels():
    xs = np.arange(48.0).reshape(2, 4, 6)
    ks = np.full((2, 4), 3)
    f = lambda x, k: np.split(x, k)[1]  # noqa: E731
    got = bt.vmap(bt.vmap(f), fallback="error")(xs, ks)
    assert_same(got, loop_vmap(loop_vmap(f))(xs, ks))
    ks[1] = 2  # the outer examples differ: rerun per outer example
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", bt.PerformanceWarning)
        got = bt.vmap(bt.vmap(lambda x, k: np.split(x, k)[0].sum()))(xs, ks)
    assert_same(got, loop_vmap(loop_vmap(lambda x, k: np.split(x, k)[0].sum()))(xs, ks))
