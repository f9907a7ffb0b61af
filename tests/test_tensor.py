"""BatchedTensor: the logical view, conversions, bool(), escapes, operators, levels."""

from __future__ import annotations

import copy
import operator
import pickle

import numpy as np
import pytest

import batchtensor as bt
from batchtensor.errors import EscapedBatchedTensorError

rng = np.random.default_rng(1)


def batched(shape=(4, 3, 2), bdim=0, level=None):
    return bt.BatchedTensor(rng.normal(size=shape), bdim=bdim, level=level)


def test_logical_metadata():
    with bt.vmap_level():
        x = batched((3, 5, 2), bdim=1)  # 5 examples of shape (3, 2)
        assert x.shape == (3, 2) and x.ndim == 2 and x.size == 6 and len(x) == 3
        assert x.dtype == np.float64 and x.itemsize == 8 and x.nbytes == 48
        assert x.batch_size == 5 and x.bdim == 1
        assert x.T.shape == (2, 3) and x.mT.shape == (2, 3)
        assert [row.shape for row in x] == [(2,)] * 3
        r = repr(x)
        assert "shape=(3, 2)" in r and "batch_size=5" in r and "bdim=1" in r and "level=" in r


def test_len_and_iter_of_0d_raise_like_numpy():
    with bt.vmap_level():
        x = bt.BatchedTensor(np.arange(3.0))
        with pytest.raises(TypeError, match="unsized"):
            len(x)
        with pytest.raises(TypeError, match="0-d"):
            iter(x).__next__()


def test_iteration_gives_per_example_rows():
    xs = rng.normal(size=(4, 3, 2))
    got = bt.vmap(lambda x: np.stack([r.sum() for r in x]))(xs)
    np.testing.assert_allclose(got, xs.sum(-1))


@pytest.mark.parametrize("convert", [
    np.asarray, np.array, int, float, complex, operator.index,
    lambda x: x.item(), lambda x: x.tolist(), pickle.dumps,
    lambda x: np.zeros(5)[x], lambda x: range(x),
])
def test_conversions_that_drop_the_batch_axis_raise(convert):
    with bt.vmap_level():
        x = bt.BatchedTensor(np.arange(3))
        with pytest.raises(TypeError, match="BatchedTensor"):
            convert(x)


def test_conversion_message_says_why_and_what_to_do():
    with bt.vmap_level(), bt.config(intercept_numpy=False):
        x = bt.BatchedTensor(np.arange(3.0))
        with pytest.raises(TypeError) as e:
            np.asarray(x)
    assert "drop the batch axis" in str(e.value) and "np.zeros_like" in str(e.value)


@pytest.mark.parametrize("name", ["__array_interface__", "__array_struct__",
                                  "__cuda_array_interface__"])
def test_no_attribute_passthrough_to_the_physical_array(name):
    with bt.vmap_level():
        assert not hasattr(batched(), name)


@pytest.mark.parametrize("read", [lambda x: x.__dlpack__(), lambda x: x.data,
                                  lambda x: x.ctypes])
def test_memory_exports_are_conversions(read):
    with bt.vmap_level():
        with pytest.raises(TypeError, match="on a BatchedTensor is not allowed"):
            read(batched())


def test_memory_attributes_are_one_examples_not_the_physical_arrays():
    with bt.vmap_level():
        x = batched()
        assert x.strides == x.physical.strides[1:] and len(x.strides) == x.ndim
        assert x.base is x.physical  # the caller's array, as the loop's x.base
        assert x.flags.c_contiguous and not x.flags.owndata


def test_bool_returns_the_common_truth_value():
    assert bt.vmap(lambda x: 1.0 if x > 0 else -1.0)(np.array([1.0, 2.0])).tolist() == [1, 1]
    assert bt.vmap(lambda x: 1.0 if x > 0 else -1.0)(np.array([-1.0, -2.0])).tolist() == [-1, -1]


def test_bool_disagreement_raises_pointing_at_np_where():
    with pytest.raises(bt.BatchingError, match="np.where"):
        bt.vmap(lambda x: x if x > 0 else -x, fallback="error")(np.array([1.0, -2.0]))


def test_bool_of_non_scalar_raises_numpys_error():
    with pytest.raises(ValueError, match="ambiguous"):
        bt.vmap(lambda x: bool(x))(np.ones((2, 3)))


def test_bool_nested_levels():
    a = np.array([[1.0, 2.0], [3.0, 4.0]])
    got = bt.vmap(bt.vmap(lambda v: v * 2 if v > 0 else v))(a)
    np.testing.assert_array_equal(got, a * 2)
    with pytest.raises(bt.BatchingError):
        bt.vmap(bt.vmap(lambda v: v * 2 if v > 2 else v), fallback="error")(a)


def test_escaped_tensor_raises_on_use():
    leaked = []
    bt.vmap(lambda x: leaked.append(x) or x)(np.zeros((3, 2)))
    (x,) = leaked
    for use in (lambda: x + 1, lambda: np.sin(x), lambda: x[0], lambda: x.sum(),
                lambda: bool(x), lambda: -x):
        with pytest.raises(EscapedBatchedTensorError, match="escaped its vmap level"):
            use()


def test_construction_errors():
    with pytest.raises(bt.BatchingError, match="active vmap level"):
        bt.BatchedTensor(np.zeros(3))
    with bt.vmap_level():
        with pytest.raises(ValueError, match="bdim=2 is out of range"):
            bt.BatchedTensor(np.zeros((3, 2)), bdim=2)
        with pytest.raises(TypeError, match="must be an array"):
            bt.BatchedTensor([1, 2, 3])
        with pytest.raises(TypeError, match="bdim must be an int"):
            bt.BatchedTensor(np.zeros(3), bdim=None)
        bt.BatchedTensor(np.zeros((3, 2)))
        with pytest.raises(ValueError, match="batch size 2 but vmap level"):
            bt.BatchedTensor(np.zeros((2, 2)))


def test_wrapping_a_tensor_of_the_same_or_an_inner_level_is_refused():
    with bt.vmap_level() as outer:
        x = bt.BatchedTensor(np.zeros((2, 3)))
        with pytest.raises(bt.BatchingError, match="outer"):
            bt.BatchedTensor(x, level=outer)


def test_negative_bdim_is_normalised():
    with bt.vmap_level():
        x = bt.BatchedTensor(np.zeros((2, 3, 4)), bdim=-1)
        assert x.bdim == 2 and x.shape == (2, 3)


# ---- operators ----------------------------------------------------------------------------------
OPS = [operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv,
       operator.mod, operator.pow, operator.lt, operator.le, operator.eq, operator.ne,
       operator.gt, operator.ge]


@pytest.mark.parametrize("op", OPS)
def test_binary_operators_at_every_layout(op):
    a = rng.uniform(1, 3, size=(4, 3))
    b = rng.uniform(1, 3, size=(4, 3))
    want = op(a, b)
    for ia, ib in [(0, 0), (0, 1), (1, 0), (1, 1), (None, 0), (0, None)]:
        A = a if ia != 1 else a.T.copy()
        B = b if ib != 1 else b.T.copy()
        if ia is None:
            A, got_want = a[0], op(a[0], b)
        elif ib is None:
            B, got_want = b[0], op(a, b[0])
        else:
            got_want = want
        got = bt.vmap(op, in_axes=(ia, ib))(A, B)
        np.testing.assert_allclose(got, got_want, err_msg=f"{op} in_axes={(ia, ib)}")


@pytest.mark.parametrize("op", OPS)
def test_operators_with_scalars_arrays_and_reflection(op):
    a = rng.uniform(1, 3, size=(4, 3))
    row = rng.uniform(1, 3, size=(3,))
    for other in (2, 2.5, np.float32(2), row):
        np.testing.assert_allclose(bt.vmap(lambda x: op(x, other))(a), op(a, other))
        np.testing.assert_allclose(bt.vmap(lambda x: op(other, x))(a), op(other, a))


def test_weak_python_scalars_keep_float32():
    a = rng.normal(size=(3, 2)).astype(np.float32)
    assert bt.vmap(lambda x: x * 2.0 + 1)(a).dtype == np.float32
    assert bt.vmap(lambda x: 2.0 - x)(a).dtype == np.float32
    assert bt.vmap(lambda x: x * np.float64(2.0))(a).dtype == np.float64


def test_unary_operators_and_builtins():
    a = rng.normal(size=(4, 3))
    i = rng.integers(-5, 5, size=(4, 3))
    np.testing.assert_array_equal(bt.vmap(lambda x: -x)(a), -a)
    np.testing.assert_array_equal(bt.vmap(lambda x: +x)(a), a)
    np.testing.assert_array_equal(bt.vmap(abs)(a), abs(a))
    np.testing.assert_array_equal(bt.vmap(lambda x: ~x)(i), ~i)
    # round() of one 0-d example is a NumPy scalar's round; of an array NumPy raises
    np.testing.assert_array_equal(bt.vmap(lambda x: round(x[0], 1))(a), np.round(a[:, 0], 1))
    with pytest.raises(TypeError, match="__round__"):
        bt.vmap(lambda x: round(x, 1))(a)
    q, r = bt.vmap(divmod)(a, a[::-1] + 5)
    np.testing.assert_array_equal(q, np.floor_divide(a, a[::-1] + 5))
    np.testing.assert_array_equal(r, np.remainder(a, a[::-1] + 5))


def test_inplace_operators_write_per_example():
    a = rng.normal(size=(4, 3))

    def f(x, y):
        x = x.copy()
        x += y
        x *= 2
        x[0] -= 1
        return x

    got = bt.vmap(f, in_axes=(0, 1))(a, a.T.copy())
    np.testing.assert_allclose(got, [(lambda r: np.r_[r[0] - 1, r[1:]])(2 * (r + r)) for r in a])


def test_inplace_batched_into_unbatched_raises():
    w = np.zeros(3)

    def into_shared(x):
        w_local = w  # the caller's array: the loop would add every example into it
        w_local += x
        return w_local

    def into_copy(x):
        w_local = w.copy()  # each example's own copy, as in the loop: the function reruns
        w_local += x
        return w_local

    xs = np.arange(6.0).reshape(2, 3)
    with pytest.raises(bt.BatchingError, match="out="):
        bt.vmap(into_shared)(xs)
    np.testing.assert_array_equal(w, 0)
    with pytest.raises(bt.BatchingError, match="out="):
        bt.vmap(into_copy, fallback="error")(xs)
    with pytest.warns(bt.PerformanceWarning, match="written into an array shared"):
        np.testing.assert_array_equal(bt.vmap(into_copy)(xs), xs)


def test_matmul_operator_and_hash():
    a, b = rng.normal(size=(4, 2, 3)), rng.normal(size=(3, 5))
    np.testing.assert_allclose(bt.vmap(lambda x: x @ b)(a), a @ b)
    np.testing.assert_allclose(bt.vmap(lambda x: b.T @ np.swapaxes(x, 0, 1))(a),
                               b.T @ np.swapaxes(a, 1, 2))
    with bt.vmap_level():
        with pytest.raises(TypeError, match="unhashable"):
            hash(batched())


def test_copy_module_and_methods():
    a = rng.normal(size=(3, 4))
    got = bt.vmap(lambda x: (copy.copy(x), copy.deepcopy(x), x.flatten(), x.conj()))(a)
    for g in got:
        np.testing.assert_array_equal(g, a)


def test_unknown_array_function_types_are_declined():
    class Other:
        def __array_function__(self, func, types, args, kwargs):
            return "other"

    with bt.vmap_level():
        x = batched()
        assert np.concatenate([x, Other()]) == "other"


def test_sort_method_sorts_in_place():
    a = rng.normal(size=(3, 5))

    def f(x):
        y = x.copy()
        y.sort()
        return y

    np.testing.assert_array_equal(bt.vmap(f)(a), np.sort(a, axis=1))
