"""Semantics users hit in real code: creation, in-place writes, control flow, batch size 0,
threads, exceptions and input safety. Every result is compared with the per-example loop."""

from __future__ import annotations

import operator
import sys
import threading
import warnings

import numpy as np
import pytest
from loop_reference import assert_same, loop_vmap

import batchtensor as bt
from batchtensor.boxed.loop import loop_call
from batchtensor.levels import active_levels
from batchtensor.pytree import flatten

RNG = np.random.default_rng(0)
X = RNG.normal(size=(4, 3, 5))
V = RNG.normal(size=(4, 5))
IDX = RNG.integers(0, 3, size=4)


def compare(f, *args, in_axes=0, out_axes=0, **kw):
    """vmap(f) against the loop on copies of the inputs: same outputs, same input mutations."""
    a = [np.copy(x) for x in args]
    b = [np.copy(x) for x in args]
    got = bt.vmap(f, in_axes, out_axes, **kw)(*a)
    want = loop_vmap(f, in_axes, out_axes)(*b)
    assert_same(got, want)
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)
    return got


# ---- creation ----------------------------------------------------------------------------------
CREATION = {
    "zeros_like": lambda x: np.zeros_like(x),
    "ones_like_int": lambda x: np.ones_like(x, dtype=np.int32),
    "empty_like_shape": lambda x: np.empty_like(x, shape=(2, 0)),
    "full_like": lambda x: np.full_like(x, 2.5),
    "full_like_shape_F": lambda x: np.full_like(x, 7, dtype=np.int16, order="F", shape=(2, 3)),
    "zeros_like_C": lambda x: np.zeros_like(x.T, order="C"),
    "full_like_batched_fill": lambda x: np.full_like(x, x[0, 0]),
    "full_like_batched_row": lambda x: np.full_like(x, x[1], dtype=np.float32),
    "ones_like_scalar_shape": lambda x: np.ones_like(x, shape=4),
    "zeros_like_0d": lambda x: np.zeros_like(x[0, 0]),
}


@pytest.mark.parametrize("name", sorted(CREATION))
def test_like_creation_matches_loop(name, strict):
    compare(CREATION[name], X)


@pytest.mark.parametrize("name", ["zeros_like", "full_like", "full_like_batched_fill"])
def test_like_creation_is_batched_and_writable(name, strict):
    def f(x):
        out = CREATION[name](x)
        assert isinstance(out, bt.BatchedTensor) == isinstance(x, bt.BatchedTensor)
        out[0] = x[2]  # a different value per example
        return out

    compare(f, X)


def test_zeros_like_does_not_share_memory_between_examples(strict):
    def f(x):
        out = np.zeros_like(x, shape=(3,))
        out[0] = x[0, 0]
        out[1] = x.sum()
        out[2] = out[0] * 2
        return out

    compare(f, X)


def test_like_keyword_creates_plain_arrays_on_the_physical_backend(strict):
    seen = {}

    def f(x):
        made = {"zeros": np.zeros(3, like=x), "ones": np.ones((2, 2), like=x),
                "empty": np.empty(0, like=x), "full": np.full(2, 4.0, like=x),
                "arange": np.arange(5, like=x), "array": np.array([1, 2], like=x),
                "asarray": np.asarray([1.5], like=x), "eye": np.eye(2, like=x)}
        seen.update({k: type(v) for k, v in made.items()})
        return made["arange"] * x[0, 0] + made["zeros"].sum()

    compare(f, X)
    assert set(seen.values()) == {np.ndarray}


def test_like_keyword_in_nested_levels(strict):
    def f(x):
        z = np.zeros(x.shape, like=x)
        assert type(z) is np.ndarray
        return z + x

    compare(bt.vmap(f), X)


def test_like_of_an_escaped_tensor_raises():
    leak = []
    bt.vmap(lambda x: leak.append(x) or x)(X)
    with pytest.raises(bt.EscapedBatchedTensorError):
        np.zeros(3, like=leak[0])


# ---- the most reported complaint: writes into a plain array ------------------------------------
def test_write_into_plain_array_names_target_and_fix():
    shared = np.zeros(3)

    def f(x):
        out = shared.copy()  # a method's result: vmap cannot see it made inside f
        out[0] = x[0, 0]
        return out

    with pytest.raises(TypeError, match=r"cannot write a batched value or index into 'out' "
                                        r"\(a plain numpy.ndarray of shape \(3,\), float64\)"
                       ) as info:
        bt.vmap(f, fallback="error")(X)
    assert "out[0] = x[0, 0]" in str(info.value) and "np.zeros_like(x, shape=" in str(info.value)
    with pytest.warns(bt.PerformanceWarning, match=r"float\(\)\) at `out\[0\] = x\[0, 0\]`"):
        assert_same(bt.vmap(f)(X), loop_vmap(f)(X))  # by default: the rerun per example


@pytest.mark.parametrize("dtype", [np.float64, np.int64, np.complex128, np.float32])
def test_write_into_plain_array_error_for_every_dtype(dtype):
    shared = np.zeros(4, dtype=dtype)

    def f(x):
        out = shared.copy()
        out[1] = x[0, 0]
        return out

    with pytest.raises(TypeError, match="cannot write a batched value or index into 'out'"):
        bt.vmap(f, fallback="error")(X)


def test_slice_write_and_like_array_into_plain_array():
    def f(x):
        out = np.zeros(5, like=x)  # like= only picks the backend: still plain
        out[:] = x[0]
        return out

    with pytest.raises(TypeError, match=r"'out' \(a plain numpy.ndarray of shape \(5,\)"):
        bt.vmap(f, fallback="error")(X)


def test_inplace_operator_on_plain_array_raises_naming_out():
    shared = np.zeros(5)

    def f(x):
        out = shared.copy()  # plain: a method's result
        out += x[0]
        return out

    with pytest.raises(bt.BatchingError, match=r"numpy.add: cannot write a batched result into "
                                               r"out="):
        bt.vmap(f, fallback="error")(X)
    with pytest.warns(bt.PerformanceWarning, match="shared by every example"):
        assert_same(bt.vmap(f)(X), loop_vmap(f)(X))  # a copy made in the call: the rerun


def test_the_fix_works(strict):
    def f(x):
        out = np.zeros_like(x, shape=(3,))
        out[0] = x[0, 0]
        out[2] = x[1, 1]
        return out

    compare(f, X)


# ---- in-place writes on batched targets ---------------------------------------------------------
def _copy(x):
    return x.copy()


INPLACE = {
    "setitem_row": lambda x, v: (lambda a: (a.__setitem__(1, v), a)[1])(_copy(x)),
    "setitem_col": lambda x, v: (lambda a: (a.__setitem__((slice(None), 2), v[:3]), a)[1])(
        _copy(x)),
    "setitem_adv": lambda x, v: (lambda a: (a.__setitem__([0, 2], v), a)[1])(_copy(x)),
    "setitem_mask": lambda x, v: (lambda a: (a.__setitem__(a > 0, v[0]), a)[1])(_copy(x)),
    "setitem_ellipsis": lambda x, v: (lambda a: (a.__setitem__(Ellipsis, 3.0), a)[1])(_copy(x)),
    "iadd": lambda x, v: (lambda a: a.__iadd__(v))(_copy(x)),
    "imul_broadcast": lambda x, v: (lambda a: a.__imul__(v[:3, None]))(_copy(x)),
    "ufunc_out": lambda x, v: (lambda a: (np.multiply(a, v, out=a), a)[1])(_copy(x)),
    "ufunc_out_where": lambda x, v: (lambda a: (np.add(a, 1.0, out=a, where=v > 0), a)[1])(
        _copy(x)),
    "reduction_out": lambda x, v: (lambda a: (np.sum(x, axis=0, out=a), a)[1])(_copy(v)),
    "cumsum_out": lambda x, v: (lambda a: (np.cumsum(a, axis=1, out=a), a)[1])(_copy(x)),
    "copyto": lambda x, v: (lambda a: (np.copyto(a, v), a)[1])(np.empty_like(x)),
    "copyto_where": lambda x, v: (lambda a: (np.copyto(a, v, where=v > 0), a)[1])(_copy(x)),
    "fill": lambda x, v: (lambda a: (a.fill(v[0]), a)[1])(_copy(x)),
    "put_along_axis": lambda x, v: (lambda a: (np.put_along_axis(
        a, np.argsort(x, axis=1)[:, :2], v[:3, None], axis=1), a)[1])(_copy(x)),
    "putmask": lambda x, v: (lambda a: (np.putmask(a, a > 0, -a), a)[1])(_copy(x)),
    "fill_diagonal": lambda x, v: (lambda a: (np.fill_diagonal(a, v[0]), a)[1])(_copy(x)),
    "ufunc_at": lambda x, v: (lambda a: (np.add.at(a, ([0, 0, 1], [1, 1, 2]), v[0]), a)[1])(
        _copy(x)),
    "sort_method": lambda x, v: (lambda a: (a.sort(axis=1), a)[1])(_copy(x)),
    "real_setter": lambda x, v: (lambda a: (setattr(a, "real", v[:3, None]), a)[1])(_copy(x)),
}


@pytest.mark.parametrize("name", sorted(INPLACE))
def test_inplace_on_batched_target_matches_loop(name, strict):
    compare(INPLACE[name], X, V)


@pytest.mark.parametrize("in_axes", [(0, None), (None, 0), (1, -1), (-1, 0)])
@pytest.mark.parametrize("name", ["setitem_row", "iadd", "ufunc_out", "copyto", "fill"])
def test_inplace_with_other_in_axes(name, in_axes, strict):
    x = np.moveaxis(X, 0, in_axes[0]) if in_axes[0] is not None else X[0]
    v = np.moveaxis(V, 0, in_axes[1]) if in_axes[1] is not None else V[0]
    if in_axes[0] is None and name != "copyto":
        # the target is x.copy() of an unbatched x: a method's result is plain, so writing v
        # raises (np.empty_like(x), copyto's target, is a buffer: batched at the write)
        with pytest.raises(TypeError if name in ("setitem_row", "fill") else bt.BatchingError):
            bt.vmap(INPLACE[name], in_axes)(x, v)
    else:
        compare(INPLACE[name], x, v, in_axes=in_axes)


@pytest.mark.parametrize("name", sorted(INPLACE))
def test_inplace_into_a_buffer_created_inside_f(name, strict, monkeypatch):
    """np.copy(x) of an unbatched x inside f is a buffer: every kind of batched write into it
    makes it batched, as the loop's fresh copy per example."""
    monkeypatch.setattr(sys.modules[__name__], "_copy", lambda a: np.copy(a))
    compare(INPLACE[name], X[0], V, in_axes=(None, 0))


def test_loop_fallback_with_batched_out_writes_per_example():
    def f(x, v):
        out = np.zeros_like(x, shape=(2,))
        np.take(v, [3, 0], out=out)  # np.take with out= runs per example
        return out

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", bt.PerformanceWarning)
        compare(f, X, V)


def test_inplace_with_loop_fallback_ops_per_example():
    def f(x, v):
        a = x.copy()
        np.put(a, [0, 3, 7], v[:2])  # cyclic values: per example through the loop
        np.place(a, a > 1, [9.0, 8.0])
        return a

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", bt.PerformanceWarning)
        compare(f, X, V)


VIEWS = {
    "basic_row": lambda x, v: (lambda a: (a[0].__setitem__(Ellipsis, v), a)[1])(_copy(x)),
    "reshape": lambda x, v: (lambda a: (a.reshape(15).__setitem__(slice(0, 5), v), a)[1])(
        _copy(x)),
    "transpose": lambda x, v: (lambda a: (a.T.__setitem__(0, v[:3]), a)[1])(_copy(x)),
    "strided_iadd": lambda x, v: (lambda a: (a[:, ::2].__iadd__(1.0), a)[1])(_copy(x)),
    "swapaxes": lambda x, v: (lambda a: (np.swapaxes(a, 0, 1).__setitem__(1, v[:3]), a)[1])(
        _copy(x)),
    "nested_views": lambda x, v: (lambda a: (a[1:][::-1][0].__imul__(v), a)[1])(_copy(x)),
    "expand_dims": lambda x, v: (lambda a: (np.expand_dims(a, 0)[0, 2].__setitem__(
        Ellipsis, v), a)[1])(_copy(x)),
}


@pytest.mark.parametrize("name", sorted(VIEWS))
def test_views_write_through(name, strict):
    compare(VIEWS[name], X, V)


def test_read_only_views_stay_read_only():
    def f(x):
        np.diagonal(x)[0] = 1.0
        return x

    with pytest.raises(ValueError, match="read-only"):
        f(X[0].copy())
    with pytest.raises(ValueError, match="read-only"):
        bt.vmap(f)(X.copy())


SHARED_WRITES = {
    "setitem": (lambda a, v: a.__setitem__(0, v), bt.BatchingError),
    "iadd": (lambda a, v: a.__iadd__(v), bt.BatchingError),
    "ufunc_out": (lambda a, v: np.add(v, 1.0, out=a), bt.BatchingError),
    "copyto": (lambda a, v: np.copyto(a, v), bt.BatchingError),
    "fill": (lambda a, v: a.fill(v[0]), bt.BatchingError),
    "put_along_axis": (lambda a, v: np.put_along_axis(a, np.zeros((3, 1), int), v[:3, None], 1),
                       bt.BatchingError),
    # (a mask of a's size: NumPy's own size error would come first, as in the loop)
    "putmask": (lambda a, v: np.putmask(a, np.broadcast_to(v > 0, a.shape), 1.0),
                bt.BatchingError),
    "ufunc_at": (lambda a, v: np.add.at(a, [0, 1], v[0]), bt.BatchingError),
    "reduction_out": (lambda a, v: np.sum(v[None] * a, axis=0, out=a[0]), bt.BatchingError),
    "loop_fallback_out": (lambda a, v: np.take(v, [0, 1, 2, 3], out=a[0, :4]), bt.BatchingError),
}


@pytest.mark.parametrize("name", sorted(SHARED_WRITES))
def test_batched_write_into_unbatched_target_raises(name):
    """The target is batched at an outer level only: shared by every inner example."""
    write, exc = SHARED_WRITES[name]

    def inner(a, v):
        write(a, v)
        return a

    def outer(x, v):
        return bt.vmap(inner, in_axes=(None, 0))(x, v)

    with pytest.raises(exc):
        bt.vmap(outer, in_axes=(0, None))(X.copy(), V)


# ---- 0-d values: NumPy scalars per example, unless NumPy made a 0-d array -----------------------
def _acc_in_list(x):
    hist, v = [], x.sum()
    for _ in range(3):
        hist.append(v)
        v += 1.0  # a NumPy scalar: rebinds, the list keeps the old values
    return np.stack(hist)


def _alias_of_indexed(x):
    z = x[0, 0] * 2.0
    w = z
    z *= 3.0
    return w, z


def _int_scalar_rebinds_to_float(x):
    n = np.argmax(x[0])
    n += 0.5  # np.int64 += float: a new float64 scalar (an int array would refuse the cast)
    return n


def _zero_d_input(v):
    y = v[0]
    y += 1.0
    return v


def _array_0d_aliases(x):
    a = np.array(x[0, 0], like=x)  # a 0-d array: written in place, b sees it
    b = a
    a += 1.0
    return b


def _ellipsis_view_writes_through(x):
    z = x[0, 0, ...]
    z += 10.0
    return x


def _where_is_an_array(x):
    z = np.where(x[0, 0] > 0, x[0, 0], x[0, 1])
    w = z
    z -= 1.0
    return w


def _put_and_fill_do_nothing(x):
    z = x[0, 0] + 0.0
    np.put(z, 0, 5.0)  # NumPy converts the scalar and writes into the copy
    z.fill(7.0)
    return z


def _flip_of_0d_array_is_a_scalar(x):
    x = x * 1.0
    z = x[0, 0, ...]  # a 0-d array, a view of x
    f = np.flip(z)  # NumPy indexes it with (): a scalar, a copy
    x[...] = 100.0
    return f, z


def _astype_of_0d_array_is_an_array(x):
    a = np.where(x[0, 0] > 0, x[0, 0], 0.0)  # a 0-d array
    b = a.astype(np.float32)  # a new 0-d array: written in place, c sees it
    c = b
    b += 1.0
    np.copyto(a.astype(a.dtype, copy=False), 5.0)  # the same 0-d array
    s = x[0, 1].astype(np.float32)  # a scalar in, a scalar out: rebinds
    t = s
    s += 1.0
    return c, a, t


def _i0_of_a_scalar_is_an_array(x):
    r = np.i0(x[0, 0] * 1.0)  # NumPy's i0 makes a 0-d array, also through the hot path
    s = r
    r += 1.0
    return s, np.where(x[0, 0] > 0, x[0, 0], 0.0) + 0.0


SCALAR_CASES = {f.__name__: f for f in (
    _acc_in_list, _alias_of_indexed, _int_scalar_rebinds_to_float, _array_0d_aliases,
    _ellipsis_view_writes_through, _where_is_an_array, _put_and_fill_do_nothing,
    _flip_of_0d_array_is_a_scalar, _astype_of_0d_array_is_an_array,
    _i0_of_a_scalar_is_an_array)}


@pytest.mark.parametrize("name", sorted(SCALAR_CASES))
def test_zero_d_values_follow_numpy_scalar_or_array_semantics(name, strict):
    compare(SCALAR_CASES[name], X)


def test_zero_d_inputs_are_scalars(strict):
    compare(_zero_d_input, V)  # v[0] is a scalar: V is not written
    compare(lambda v: _acc_in_list(v[0]), V)


def test_zero_d_results_in_nested_vmap_rebind(strict):
    got = bt.vmap(bt.vmap(_acc_in_list))(X)
    want = np.stack([np.stack([_acc_in_list(x) for x in xs]) for xs in X])
    np.testing.assert_array_equal(got, want)


FROM_SCALAR = {
    "asarray": lambda z, x: np.asarray(z, like=x), "array": lambda z, x: np.array(z, like=x),
    "ascontiguousarray": lambda z, x: np.ascontiguousarray(z, like=x),
    "require": lambda z, x: np.require(z, like=x), "z[...]": lambda z, x: z[...],
    "z[None]": lambda z, x: z[None], "z[None, ...]": lambda z, x: z[None, ...],
    "reshape": lambda z, x: np.reshape(z, (1, 1)), "atleast_1d": lambda z, x: np.atleast_1d(z),
    "expand_dims": lambda z, x: np.expand_dims(z, 0), "ravel": lambda z, x: np.ravel(z),
    "stack": lambda z, x: np.stack([z]),
    "atleast_1d of two": lambda z, x: np.atleast_1d(x, z)[1],
}


@pytest.mark.parametrize("name", sorted(FROM_SCALAR))
def test_arrays_built_from_a_scalar_do_not_share_its_storage(name, strict):
    """NumPy builds a new array from a scalar; a rule's view of the batch of scalars must not
    let a write into that array change the scalar."""
    conv = FROM_SCALAR[name]

    def f(x):
        z = x[0, 0] * 1.0
        a = conv(z, x)
        a += 1.0
        return a, z

    compare(f, X)


def _ravel_of_broadcast_scalar(x):
    b = np.broadcast_to(x[0, 0] * 1.0, (2,))
    r = b.ravel()  # stride 0: NumPy copies, and the copy is writeable
    r *= 3.0
    return r, b


def test_read_only_view_of_a_scalar_stays_read_only():
    """np.broadcast_to(z, ...) of a scalar is a read-only view in NumPy; it is not copied off
    the scalar's storage (nothing writes through it), so the loop's error and layout stay."""
    def f(x):
        b = np.broadcast_to(x[0, 0] * 1.0, (2,))
        b += 1.0
        return b

    with pytest.raises(ValueError, match="read-only"):
        f(X[0])
    with pytest.raises(ValueError, match="read-only"):
        bt.vmap(f)(X)
    np.testing.assert_array_equal(bt.vmap(lambda x: np.broadcast_to(x[0, 0], (2,)) * 2)(X),
                                  np.stack([np.broadcast_to(x[0, 0], (2,)) * 2 for x in X]))
    compare(_ravel_of_broadcast_scalar, X)


@pytest.mark.parametrize("write", [
    lambda z: np.add(z, 1.0, out=z),
    lambda z: np.copyto(z, 1.0),
    lambda z: np.add.at(z, (), 1.0),
    lambda z: operator.setitem(z, ..., 1.0),
    lambda z: np.einsum("i,i->", np.ones(2), np.ones(2), out=z),
], ids=["ufunc-out", "copyto", "ufunc.at", "setitem", "einsum-out"])
def test_writes_into_a_scalar_raise_like_numpy(write):
    def f(x):
        z = x[0, 0] * 1.0
        write(z)
        return z

    with pytest.raises(TypeError) as loop_error:
        f(X[0])  # NumPy refuses: a scalar is not an array
    with pytest.raises(TypeError, match="NumPy scalar in each example"):
        bt.vmap(f, fallback="error")(X)
    with pytest.warns(bt.PerformanceWarning, match="NumPy scalar per example"):
        with pytest.raises(TypeError) as vmap_error:
            bt.vmap(f)(X)  # the rerun per example meets NumPy's own refusal
    assert str(vmap_error.value) == str(loop_error.value)


# ---- control flow ------------------------------------------------------------------------------
def branchy(x):
    if x.sum() > 0:
        return x * 2
    return -x


def whiley(x):
    n = 0
    while np.abs(x).max() > 1:
        x = x / 2
        n += 1
    return x


def test_agreeing_control_flow_takes_the_common_branch(strict):
    compare(branchy, np.abs(X) + 1)
    compare(branchy, -np.abs(X) - 1)
    compare(whiley, np.full((3, 4), 8.0))


def test_disagreeing_control_flow_raises_pointing_at_where_with_fallback_error():
    xs = np.stack([np.ones(3), -np.ones(3)])
    with pytest.raises(bt.BatchingError, match=r"np\.where\(cond, a, b\)") as info:
        bt.vmap(branchy, fallback="error")(xs)
    assert "fallback='error'" in str(info.value)
    assert active_levels() == ()


@pytest.mark.parametrize("f", [branchy, whiley], ids=["if", "while"])
@pytest.mark.parametrize("chunk_size", [None, 4])
def test_disagreeing_control_flow_runs_each_group_of_examples_vectorised(f, chunk_size):
    xs = RNG.normal(size=(5, 3)) * np.array([[1], [-3], [2], [-1], [4]])
    with pytest.warns(bt.PerformanceWarning, match="each group of examples"):
        got = bt.vmap(f, fallback="warn", chunk_size=chunk_size)(xs)
    assert_same(got, loop_vmap(f)(xs))


@pytest.mark.parametrize("f", [branchy, whiley], ids=["if", "while"])
def test_disagreeing_control_flow_reruns_per_example_where_groups_cannot_do(f):
    """randomness other than "error" keys each example's draws by its index: no groups."""
    xs = RNG.normal(size=(5, 3)) * np.array([[1], [-3], [2], [-1], [4]])
    with pytest.warns(bt.PerformanceWarning, match="reruns once per example"):
        got = bt.vmap(f, randomness="different")(xs)
    assert_same(got, loop_vmap(f)(xs))


def test_agreeing_control_flow_does_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = bt.vmap(branchy, fallback="warn")(np.abs(X) + 1)
    assert_same(got, loop_vmap(branchy)(np.abs(X) + 1))


def test_rerun_nested():
    xs = RNG.normal(size=(3, 4, 2))
    f = bt.vmap(bt.vmap(branchy))
    with pytest.warns(bt.PerformanceWarning):
        got = f(xs)
    assert_same(got, loop_vmap(loop_vmap(branchy))(xs))


def test_outer_level_disagreement_in_inner_vmap_reruns_the_outer_function():
    """bool() of an outer value inside an inner vmap: the outer vmap reruns, per outer example,
    and the inner one then runs vectorised."""
    def outer(x, y):
        def inner(b):
            return b * (1.0 if x.sum() > 0 else -1.0)
        return bt.vmap(inner)(y)

    xs = np.array([[1.0], [-1.0], [2.0]])
    ys = RNG.normal(size=(3, 4))
    with pytest.warns(bt.PerformanceWarning, match="vmap\\(outer\\)"):
        got = bt.vmap(outer)(xs, ys)
    assert_same(got, np.sign(xs) * ys)
    with pytest.raises(bt.BatchingError, match="data-dependent control flow"):
        bt.vmap(outer, fallback="error")(xs, ys)


def test_writes_into_inputs_reach_them_once_and_are_never_repeated():
    def f(x):
        x += 1
        return x

    xs = np.ones((3, 2))
    np.testing.assert_array_equal(bt.vmap(f)(xs), 2.0)
    np.testing.assert_array_equal(xs, 2.0)  # the loop's effect, once

    def g(x):
        x += 1
        return branchy(x)  # then a rerun would write again

    xs = np.stack([np.ones(2), -np.ones(2) * 5, np.ones(2)])
    ys = xs.copy()
    with pytest.warns(bt.PerformanceWarning, match="reruns once per example"):
        got = bt.vmap(g)(xs)  # the rerun starts from the caller's values: written once
    want = np.stack([g(y) for y in ys])
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(xs, ys)


def test_rerun_with_batch_size_zero_raises():
    with pytest.raises(bt.BatchingError, match="batch size 0"):
        bt.vmap(branchy, fallback="warn")(np.zeros((0, 3)))


def test_other_errors_propagate_without_a_rerun():
    calls = []

    def f(x):
        calls.append(1)
        raise KeyError("boom")

    with pytest.raises(KeyError):
        bt.vmap(f)(X)
    assert active_levels() == () and len(calls) == 1


# ---- batch size 0 ------------------------------------------------------------------------------
EMPTY_FUNCS = {
    "sin": lambda x: np.sin(x), "add": lambda x: x + 1, "sum": lambda x: x.sum(),
    "sum_axis": lambda x: x.sum(0), "mean": lambda x: x.mean(axis=-1, keepdims=True),
    "argmax": lambda x: np.argmax(x), "cumsum": lambda x: np.cumsum(x, axis=1),
    "matmul": lambda x: x @ x.T, "reshape": lambda x: x.reshape(-1), "T": lambda x: x.T,
    "getitem": lambda x: x[0], "getitem_adv": lambda x: x[[0, 1]],
    "take": lambda x: np.take(x, [0, 2], axis=1), "concat": lambda x: np.concatenate([x, x]),
    "stack": lambda x: np.stack([x, x]), "split": lambda x: np.split(x, 2, axis=1),
    "sort": lambda x: np.sort(x), "argsort": lambda x: np.argsort(x, axis=0),
    "where": lambda x: np.where(x > 0, x, 0), "clip": lambda x: np.clip(x, -1, 1),
    "zeros_like": lambda x: np.zeros_like(x), "full_like": lambda x: np.full_like(x, 2, shape=3),
    "setitem": lambda x: (lambda a: (a.__setitem__(0, 1.0), a)[1])(x.copy()),
    "trace": lambda x: np.trace(x), "astype": lambda x: x.astype(np.int32),
    "std": lambda x: x.std(axis=-1), "outer": lambda x: np.multiply.outer(x[0], x[1]),
    "accumulate": lambda x: np.maximum.accumulate(x, axis=0),
    "take_along": lambda x: np.take_along_axis(x, np.argsort(x, axis=1), axis=1),
    "random": lambda x: x + bt.random.default_rng(0).normal(size=x.shape),
    "permutation": lambda x: bt.random.default_rng(0).permutation(x),
    "integers": lambda x: bt.random.default_rng(0).integers(0, 5, size=3),
    "bool_int": lambda x: (x > 0).astype(int) + 1,
    "tuple_out": lambda x: (x.sum(), x.max(axis=0)),
}


@pytest.mark.parametrize("name", sorted(EMPTY_FUNCS))
@pytest.mark.parametrize("in_axis, out_axis", [(0, 0), (-1, -1), (1, 0)])
def test_batch_size_zero_shapes_and_dtypes(name, in_axis, out_axis, strict):
    f = EMPTY_FUNCS[name]
    full = np.moveaxis(RNG.normal(size=(2, 4, 4)), 0, in_axis)
    ref = bt.vmap(f, in_axis, out_axis, randomness="different")(full)
    empty = np.take(full, [], axis=in_axis)
    got = bt.vmap(f, in_axis, out_axis, randomness="different")(empty)
    for g, r in zip(flatten(got)[0], flatten(ref)[0]):
        want = list(r.shape)
        want[out_axis] = 0
        assert g.shape == tuple(want) and g.dtype == r.dtype, (g.shape, g.dtype, want, r.dtype)


def test_batch_size_zero_nested_and_chunked(strict):
    f = bt.vmap(lambda x: np.sin(x).sum(axis=0))
    assert bt.vmap(f)(np.zeros((0, 3, 4))).shape == (0, 3)
    assert bt.vmap(f)(np.zeros((2, 0, 4))).shape == (2, 0)
    assert bt.vmap(np.sum, chunk_size=2)(np.zeros((0, 3))).shape == (0,)
    assert bt.vmap(lambda x: x, axis_size=0, in_axes=None)(np.ones(3)).shape == (0, 3)


def test_batch_size_zero_loop_fallback_raises_clearly():
    def loop_only(x):
        # a batched `repeats` over the rows of 2-d examples: only the loop treats it
        return np.repeat(x[:, None], x.astype(int), axis=0)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", bt.PerformanceWarning)
        with pytest.raises(bt.BatchingError, match="batch size 0"):
            bt.vmap(loop_only)(np.zeros((0, 3)))


# ---- threads -----------------------------------------------------------------------------------
THREAD_FUNCS = [
    (lambda x, w: np.tanh(x @ w).sum(axis=-1), (0, None), {}),
    (lambda x, w: bt.vmap(lambda r: r * w[0])(x), (0, None), {}),
    (lambda x, w: np.sort(x, axis=0)[::-1] + w[0, 0], (1, None), {"chunk_size": 3}),
    (lambda x, w: (lambda a: (a.__setitem__(0, w[0, 0]), a)[1])(x.copy()), (0, None), {}),
    (lambda x, w: branchy(x), (0, None), {"fallback": "silent"}),
]


def test_concurrent_vmaps_match_serial():
    data = [(RNG.normal(size=(7, 4)), RNG.normal(size=(4, 4))) for _ in range(8)]
    calls = [(f, ia, kw, x, w) for (f, ia, kw) in THREAD_FUNCS for x, w in data]

    def run(call):
        f, ia, kw, x, w = call
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", bt.PerformanceWarning)
            return bt.vmap(f, in_axes=ia, **kw)(x, w)

    serial = [run(c) for c in calls]
    out = [[None] * len(calls) for _ in range(8)]
    errors = []

    def worker(t):
        try:
            for _ in range(3):
                for i in range(t, len(calls)) if t % 2 else range(len(calls) - 1, -1, -1):
                    out[t][i] = run(calls[i])
                assert active_levels() == ()
        except BaseException as e:  # noqa: BLE001  (reported below)
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for t in range(8):
        for i, r in enumerate(out[t]):
            if r is not None:
                np.testing.assert_array_equal(r, serial[i])


def test_levels_are_thread_local():
    started, release = threading.Event(), threading.Event()
    seen = {}

    def hold(x):
        started.set()
        release.wait(5)
        return x

    t = threading.Thread(target=lambda: bt.vmap(hold)(np.zeros(2)))
    t.start()
    started.wait(5)
    seen["other"] = active_levels()
    release.set()
    t.join()
    assert seen["other"] == ()


# ---- exception safety --------------------------------------------------------------------------
class Boom(Exception):
    pass


def _raise(*a):
    raise Boom


@pytest.mark.parametrize("make", [
    lambda: bt.vmap(_raise),
    lambda: bt.vmap(bt.vmap(_raise)),
    lambda: bt.vmap(lambda x: bt.vmap(lambda y: _raise() if y.sum() > -1e9 else y)(x)),
    lambda: bt.vmap(_raise, chunk_size=1),
    lambda: bt.vmap(_raise, randomness="different", fallback="warn"),
    lambda: bt.vmap(lambda x: np.sum(x, axis=7)),
], ids=["flat", "nested", "deep", "chunked", "loop_mode", "numpy_error"])
def test_exception_inside_f_leaves_no_level(make):
    with pytest.raises((Boom, np.exceptions.AxisError)):
        make()(np.ones((3, 2, 2)))
    assert active_levels() == ()
    assert_same(bt.vmap(np.sum)(np.ones((3, 2))), np.full(3, 2.0))


def _numpy_names() -> dict:
    return {name: id(getattr(np, name)) for name in dir(np) if not name.startswith("__")}


class _PerExample:
    """A callable with no batch rule (the loop fallback runs it) that raises at example 2."""

    def __init__(self, exc):
        self.exc, self.calls = exc, 0

    def __call__(self, x, w):
        self.calls += 1
        if self.calls == 3:
            raise self.exc
        return x * w


@pytest.mark.parametrize("exc", [Boom(), KeyboardInterrupt(), MemoryError()],
                         ids=lambda e: type(e).__name__)
@pytest.mark.parametrize("where", ["flat", "nested", "chunked", "loop fallback", "rerun mode"])
def test_any_exception_leaves_nothing_behind(exc, where):
    """A KeyboardInterrupt or MemoryError inside f (not only an Exception) closes every level,
    leaves numpy's namespace as it was, the arguments writeable (the loop fallback makes the
    unbatched ones read-only while it runs, the loop mode makes views), and the config."""
    before = _numpy_names()
    x, w = np.ones((4, 3)), np.ones(3)

    def boom(x, w):
        raise exc

    f = {"flat": bt.vmap(boom, in_axes=(0, None)),
         "nested": bt.vmap(bt.vmap(boom, in_axes=(0, None)), in_axes=(0, None)),
         "chunked": bt.vmap(boom, in_axes=(0, None), chunk_size=1),
         "loop fallback": bt.vmap(lambda x, w: loop_call(_PerExample(exc), (x, w), {}, x.level),
                                  in_axes=(0, None)),
         "rerun mode": bt.vmap(lambda x, w: boom(x, w) if float(x[0]) else x,
                               in_axes=(0, None), fallback="warn")}[where]
    arg = np.ones((2, 4, 3)) if where == "nested" else x
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", bt.PerformanceWarning)
        with pytest.raises(type(exc)):
            f(arg, w)
    assert active_levels() == ()
    assert arg.flags.writeable and w.flags.writeable
    assert bt.config.fallback == "warn"
    assert _numpy_names() == before


def test_exception_in_manual_level_closes_it():
    with pytest.raises(Boom):
        with bt.vmap_level() as level:
            bt.BatchedTensor(np.ones((3, 2)), 0)
            _raise()
    assert active_levels() == () and not level.alive


def test_random_session_is_released_after_exception():
    from batchtensor import levels

    rng = bt.random.default_rng(0)
    for kw in ({}, {"chunk_size": 2}, {"fallback": "warn"}):
        with pytest.raises(Boom):
            bt.vmap(lambda x: (rng.random(), _raise()), randomness="different", **kw)(np.ones(3))
        assert getattr(levels._state, "session", None) is None


# ---- inputs are never mutated unless f mutates them --------------------------------------------
PURE = [
    lambda x, y: x + y, lambda x, y: np.sort(x, axis=0), lambda x, y: x.T @ y,
    lambda x, y: np.cumsum(x, axis=1), lambda x, y: x.reshape(-1)[::2],
    lambda x, y: np.clip(x, -0.1, 0.1), lambda x, y: (lambda a: (a.__setitem__(0, 0.0), a)[1])(
        x.copy()),
    lambda x, y: np.where(x > 0, x, y[0]), lambda x, y: np.concatenate([x.ravel(), y.ravel()]),
    lambda x, y: np.full_like(x * y.sum(), y.ravel()[0]),
    lambda x, y: np.take_along_axis(x, np.argsort(x, 1), 1),
    lambda x, y: np.add.reduce(x, axis=0), lambda x, y: np.linalg.norm(x, axis=0),
]


@pytest.mark.parametrize("i", range(len(PURE)))
@pytest.mark.parametrize("in_axes", [0, (1, 0), (None, 0), (-1, None)])
def test_inputs_are_not_mutated(i, in_axes):
    x = RNG.normal(size=(3, 3, 3))
    y = RNG.normal(size=(3, 3))
    x0, y0 = x.copy(), y.copy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", bt.PerformanceWarning)
        bt.vmap(PURE[i], in_axes=in_axes)(x, y)
        bt.vmap(PURE[i], in_axes=in_axes, chunk_size=2)(x, y)
    np.testing.assert_array_equal(x, x0)
    np.testing.assert_array_equal(y, y0)


@pytest.mark.parametrize("f", [lambda x: x, lambda x: x[0], lambda x: x.T,
                               lambda x: (x[1:], 2 * x), lambda x: {"a": np.reshape(x, -1)}])
@pytest.mark.parametrize("fallback", ["error", "warn"])
def test_outputs_are_new_arrays_like_np_stack(f, fallback):
    """f returning (a view of) its input: the loop's np.stack copies, so vmap's result must not
    be the caller's array, or writing into it would change the input."""
    xs = X.copy()
    out = bt.vmap(f, fallback=fallback)(xs)
    for leaf in flatten(out)[0]:
        assert not np.shares_memory(leaf, xs)
        assert leaf.flags.writeable
        leaf[...] = 0
    np.testing.assert_array_equal(xs, X)


def test_mutating_f_mutates_inputs_like_the_loop():
    def f(x, v):
        x[0] = v  # writes into the caller's array, per example
        x *= 2
        return x.sum()

    compare(f, X, V)


# ---- docs/semantics.md runs as written ---------------------------------------------------------
def test_semantics_doc_examples_run():
    import pathlib
    import re

    text = (pathlib.Path(__file__).parent.parent / "docs" / "semantics.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert len(blocks) >= 8
    namespace: dict = {}
    for block in blocks:
        exec(compile(block, "docs/semantics.md", "exec"), namespace)  # noqa: S102
    assert active_levels() == ()


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_scalar_and_array_powers_follow_their_numpy_operator(dtype):
    """z ** 0.5 of a NumPy scalar is C's pow ((-inf) ** 0.5 = inf, (-0.0) ** 0.5 = +0.0); of an
    array it is np.sqrt (nan, -0.0). x ** 2 of a bool array is int8 (np.power gives int64)."""
    xs = np.array([[-np.inf, 1.0], [-0.0, 2.0], [4.0, np.nan], [np.nan, -0.0], [-2.0, -np.inf]],
                  dtype=dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for f in (lambda x: x[0] ** 0.5, lambda x: x ** 0.5, lambda x: x.sum() ** 0.5,
                  lambda x: (x > 0) ** 2, lambda x: (x[0] > 0) ** 2):
            got, want = bt.vmap(f)(xs), np.stack([f(x) for x in xs])
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(got, want)
            np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
