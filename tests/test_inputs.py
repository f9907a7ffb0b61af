"""What vmap maps: the input policy for every kind of array-like (docs/semantics.md, "What vmap
maps"). Each kind is batched with the per-example loop's meaning, or refused with a message
that says what to pass instead."""

from __future__ import annotations

import numpy as np
import pytest

import batchtensor as bt

X = np.arange(12.0).reshape(3, 4)


def _loop(f, xs):
    return np.stack([f(x) for x in xs])


def test_memmap_is_batched_as_its_buffer(tmp_path):
    mm = np.memmap(tmp_path / "m.dat", dtype=np.float64, mode="w+", shape=(3, 4))
    mm[:] = X
    out = bt.vmap(lambda x: x)(mm)
    assert type(out) is np.ndarray and not np.shares_memory(out, mm)  # the loop stacks copies

    def bump(x):
        x += 1.0  # writes reach the file, as they do in the loop
        return x * 2

    np.testing.assert_array_equal(bt.vmap(bump)(mm), (X + 1) * 2)
    np.testing.assert_array_equal(np.memmap(tmp_path / "m.dat", np.float64, "r", shape=(3, 4)),
                                  X + 1)


@pytest.mark.parametrize("value, match", [
    (np.matrix(X), "numpy.matrix. A matrix is always 2-d"),
    (np.ma.masked_array(X, X > 3), "masked array .*np.ma.getdata"),
    (X.view(type("Units", (np.ndarray,), {})), "subclass of numpy.ndarray.*x.view"),
    (np.rec.fromarrays([X[:, 0], X[:, 1]]), "numpy.rec.recarray, a subclass"),
])
def test_subclasses_with_their_own_behaviour_are_refused(value, match):
    """np.matrix gave (3, 4) matrices where the loop's rows are 1 x 4 matrices (wrong shape),
    and a masked array's mask was dropped: both silently wrong."""
    with pytest.raises(ValueError, match=match):
        bt.vmap(lambda x: x + 1)(value)
    with bt.vmap_level(), pytest.raises(ValueError, match=match):
        bt.BatchedTensor(value, 0)
    if value.dtype.names is None:  # unmapped, the value is used as it is, as in the loop
        got = bt.vmap(lambda x, v: x + v.sum(), in_axes=(0, None))(X, value)
        np.testing.assert_array_equal(got, _loop(lambda x: x + value.sum(), X))


class _ArrayLike:
    """Like a pandas Series or a torch CPU tensor: NumPy converts it with ``__array__``."""

    def __init__(self, a):
        self.a = a

    def __array__(self, dtype=None, copy=None):
        return self.a if dtype is None else self.a.astype(dtype)


class _Interface:
    def __init__(self, a):
        self.a = a
        self.__array_interface__ = a.__array_interface__


@pytest.mark.parametrize("wrap", [_ArrayLike, _Interface])
def test_objects_numpy_converts_are_converted(wrap):
    f = lambda x: np.tanh(x) * 2  # noqa: E731
    np.testing.assert_array_equal(bt.vmap(f)(wrap(X)), _loop(f, X))


@pytest.mark.parametrize("value, match", [
    (X.tolist(), r"args\[0\]\[0\]\[0\] .* is a float, not an array"),  # a list is a pytree
    (np.float64(2.0), "has shape \\(\\)"),
    (np.array(2.0), "a 0-d array cannot be mapped"),
    ("abc", "is a str, not an array"),
])
def test_values_that_are_not_arrays_are_refused_clearly(value, match):
    with pytest.raises(ValueError, match=match):
        bt.vmap(lambda x: x)(value)


def test_python_scalars_unmapped_stay_weak():
    got = bt.vmap(lambda x, s: x * s, in_axes=(0, None))(X.astype(np.float32), 2.0)
    assert got.dtype == np.float32
