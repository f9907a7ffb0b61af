"""``np.asarray(y) is y``: NumPy hands back an array that needs no conversion itself, and code
relies on it (``z = np.asarray(y); z.shape = ...`` reshapes ``y`` too). Under vmap the
conversion must be the same object exactly where the loop's is, and a new one elsewhere."""

from __future__ import annotations

import numpy as np
import pytest
from loop_reference import assert_same, loop_vmap

import batchtensor as bt

# (each looks numpy's function up when called: a function bound before the vmap is NumPy's own,
# which vmap cannot reach; docs/running_existing_code.md)
CONVERSIONS = {
    "asarray": lambda y: np.asarray(y),
    "asanyarray": lambda y: np.asanyarray(y),
    "array(copy=False)": lambda y: np.array(y, copy=False),
    "array": lambda y: np.array(y),
    "asarray(float32)": lambda y: np.asarray(y, dtype=np.float32),
    "asarray(same dtype)": lambda y: np.asarray(y, dtype=y.dtype),
    "ascontiguousarray": lambda y: np.ascontiguousarray(y),
    "asfortranarray": lambda y: np.asfortranarray(y),
    "require": lambda y: np.require(y),
    "require('C')": lambda y: np.require(y, requirements="C"),
}


def _identities(y):
    return np.array([conv(y) is y for conv in CONVERSIONS.values()])


@pytest.mark.parametrize("in_axes, shape", [(0, (3, 4)), (-1, (4, 3)), (0, (3, 2, 2)),
                                            (1, (2, 3, 2)), (0, (3, 0)), (0, (1, 4))])
def test_a_conversion_is_the_value_itself_where_the_loop_s_is(in_axes, shape):
    xs = np.arange(np.prod(shape), dtype=np.float64).reshape(shape)
    assert_same(bt.vmap(_identities, in_axes=in_axes, fallback="error")(xs),
                loop_vmap(_identities, in_axes=in_axes)(xs))


def test_no_example():
    out = bt.vmap(_identities, fallback="error")(np.zeros((0, 4)))
    assert out.shape == (0, len(CONVERSIONS)) and out.dtype == np.bool_


def test_a_scalar_per_example_converts_to_a_new_array():
    def f(x):
        s = x.sum()  # a NumPy scalar in the loop: np.asarray makes a 0-d array of it
        return np.array([np.asarray(s) is s, np.asanyarray(s) is s])

    xs = np.arange(6.0).reshape(2, 3)
    assert_same(bt.vmap(f, fallback="error")(xs), loop_vmap(f)(xs))


def test_reshaping_the_conversion_reshapes_the_value():
    def f(y):
        z = np.asarray(y)
        z.shape = (z.size, 1)
        return y

    xs = np.arange(6.0).reshape(2, 3)
    assert_same(bt.vmap(f, fallback="error")(xs), loop_vmap(f)(xs))


def test_nested():
    xs = np.arange(24.0).reshape(2, 3, 4)
    assert_same(bt.vmap(bt.vmap(_identities), fallback="error")(xs), loop_vmap(loop_vmap(_identities))(xs))
    assert_same(bt.vmap(bt.vmap(_identities, in_axes=1), fallback="error")(xs),
                loop_vmap(loop_vmap(_identities, in_axes=1))(xs))
