"""Regression tests for what the adversarial generator (opinfo/adversarial.py) found.

Each test compares vmap with the per-example loop on the smallest program that showed the
difference; the comment above it says what was wrong.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from loop_reference import assert_same, loop_vmap

import batchtensor as bt
from batchtensor.boxed.ufunc_methods import AT_CHECKS_INDICES_FIRST


def _copy(x):
    y = x.copy(order="K")
    y.flags.writeable = x.flags.writeable
    return y


def _raises_as_the_loop(f, xs) -> None:
    """The loop raises; vmap raises an exception of the same type (a rerun allowed)."""
    with pytest.raises(Exception) as loop_error:
        loop_vmap(f)(xs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", bt.PerformanceWarning)
        with pytest.raises(type(loop_error.value)):
            bt.vmap(f)(xs)


def _both(f, *xs, in_axes=0, out_axes=0):
    """(vmap result, loop result) of ``f`` on fresh copies of ``xs`` (same layout, same
    writeability; the loop hands 0-d examples to ``f`` as NumPy scalars, as ``for x in xs``
    does)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = bt.vmap(f, in_axes=in_axes, out_axes=out_axes)(*[_copy(x) for x in xs])
        want = loop_vmap(f, in_axes=in_axes, out_axes=out_axes)(*[_copy(x) for x in xs])
    return got, want


# ---- 0-d values: NumPy scalars and 0-d arrays ---------------------------------------------------
# These ops make a 0-d *array* of a 0-d example (most ops make a NumPy scalar): vmap took their
# results for scalars, so `v += 1` rebound instead of writing (an alias kept the old value) and
# np.copyto(v, ...) raised.
ZERO_D_ARRAYS = {
    "real_if_close": (lambda z: np.real_if_close(z), np.complex128),
    "fft.fftn": (lambda z: np.fft.fftn(z), np.complex128),
    "fft.ifftn": (lambda z: np.fft.ifftn(z), np.complex128),
    "isin": (lambda z: np.isin(z, [1.0, 2.0]), np.float64),
    "tile": (lambda z: np.tile(z, ()), np.float64),
    "pad": (lambda z: np.pad(z, 2), np.float64),
    "unique_inverse": (lambda z: np.unique_inverse(z).inverse_indices, np.float64),
    "unique_all": (lambda z: np.unique_all(z).inverse_indices, np.float64),
    "unique return_inverse": (lambda z: np.unique(z, return_inverse=True)[1], np.float64),
    "median keepdims": (lambda z: np.median(z, keepdims=True), np.float64),
    "nanmedian keepdims": (lambda z: np.nanmedian(z, keepdims=True), np.float64),
    "quantile keepdims": (lambda z: np.quantile(z, 0.5, keepdims=True), np.float64),
    "percentile keepdims": (lambda z: np.percentile(z, 50, axis=None, out=None,
                                                    overwrite_input=False, method="linear",
                                                    keepdims=True), np.float64),
}


@pytest.mark.parametrize("name", sorted(ZERO_D_ARRAYS))
def test_zero_d_array_results_are_arrays(name):
    op, dtype = ZERO_D_ARRAYS[name]

    def f(z):
        v = op(z)
        alias = v
        v += 1 if v.dtype != bool else True  # a 0-d array: written, the alias sees it
        out = np.zeros_like(v)
        np.copyto(out, v)
        return alias, v, out

    xs = np.array([1.0, 2.0, 5.0]).astype(dtype)
    got, want = _both(f, xs)
    assert_same(got, want)


def test_median_without_keepdims_is_a_scalar():
    def f(z):
        v = np.median(z)
        alias = v
        v += 1  # a NumPy scalar: rebinds, the alias keeps the old value
        return alias, v

    got, want = _both(f, np.array([1.0, 2.0, 5.0]))
    assert_same(got, want)


# What NumPy builds from a NumPy scalar (z[None], z[...], np.imag(z)[...]) is a new, writeable
# array. vmap handed out a view of the input's storage when it was read-only (a read-only
# view was taken for NumPy's own read-only result), so writing into it raised.
@pytest.mark.parametrize("key", [(None, None), (Ellipsis,), (Ellipsis, None, None), (None,),
                                 Ellipsis])
def test_array_from_a_read_only_scalar_is_writeable(key):
    def f(z):
        v = z[key]
        v[...] = 7
        return v

    xs = np.arange(3.0)
    xs.flags.writeable = False
    got, want = _both(f, xs)
    assert_same(got, want)


def test_imag_of_a_scalar_then_ellipsis_is_writeable():
    def f(z):
        v = np.imag(z)[...]  # np.imag of a real scalar: a scalar; [...]: a new 0-d array
        v += 3
        return v

    got, want = _both(f, np.arange(3))
    assert_same(got, want)


def test_broadcast_to_of_a_read_only_scalar_stays_read_only():
    def f(z):
        v = np.broadcast_to(z, (2,))
        try:
            v[0] = 1
        except ValueError:
            return np.zeros(2) + z
        return v

    xs = np.arange(3.0)
    xs.flags.writeable = False
    got, want = _both(f, xs)
    assert_same(got, want)


# ---- writes into read-only examples -------------------------------------------------------------
# NumPy refuses to write into a read-only array before it looks at anything else (x[key] = v,
# np.put, np.put_along_axis, np.putmask, and np.place even when nothing is placed), except
# ufunc.at, which checks its indices first (and then writes into the read-only array: a NumPy
# bug, where vmap raises NumPy's ValueError). vmap raised the other error first, or wrote
# nothing and raised nothing (np.place).
def _read_only(a):
    a = np.array(a)
    a.flags.writeable = False
    return a


_X = np.arange(10).reshape(2, 5)
_XF = np.arange(10.0).reshape(2, 5)
READ_ONLY_WRITES = {
    "setitem, mask and a 2-d value": (
        lambda x: x.__setitem__(np.array([0, 1, 0, 0, 0], bool), np.zeros((1, 1))), [_XF]),
    "place, nothing to place": (lambda x, m: np.place(x, m, []), [_XF, np.zeros((2, 5), bool)]),
    "putmask, a float into ints": (lambda x: np.putmask(x, np.ones(5, bool), np.ones(5) * 1.5),
                                   [_X]),
    "put_along_axis, out of bounds": (lambda x: np.put_along_axis(x, np.array([1, 9]), 5, None),
                                      [_X]),
    "put, out of bounds": (lambda x: np.put(x, [9], 5), [_X]),
    "add.at, out of bounds": (lambda x: np.add.at(x, [9], 1), [_X]),
}


@pytest.mark.parametrize("name", sorted(READ_ONLY_WRITES))
def test_write_into_read_only_example_raises_numpys_error(name):
    f, xs = READ_ONLY_WRITES[name]
    xs = [_read_only(xs[0])] + list(xs[1:])
    with pytest.raises(Exception) as loop_error:
        for i in range(2):
            f(*[x[i] for x in xs])
    with pytest.raises(type(loop_error.value)):
        bt.vmap(f)(*xs)


# ---- broadcast_arrays ---------------------------------------------------------------------------
# NumPy hands back an argument that already has the broadcast shape as it is (the same array:
# writes into it reach the caller's), and makes the others writeable broadcast views (with a
# FutureWarning on write). vmap made every output a read-only broadcast view, so writes raised.
def test_broadcast_arrays_hands_back_full_shape_arguments():
    def f(x, y):
        a, b = np.broadcast_arrays(x, y)  # b is y itself
        b[0, 0] = 9.0
        return a, b, y

    got, want = _both(f, np.arange(6.0).reshape(2, 3), np.arange(12.0).reshape(2, 2, 3))
    assert_same(got, want)


def test_broadcast_arrays_writes_through_broadcast_views():
    def f(x, y):
        a, _ = np.broadcast_arrays(x, y)  # a broadcast view of x, writeable as in NumPy
        a[0, 1] = -1.0  # (one element of x, seen in every row of a)
        return a, x

    xs, ys = np.arange(6.0).reshape(2, 3), np.arange(12.0).reshape(2, 2, 3)
    got, want = _both(f, xs, ys)
    assert_same(got, want)
    # the caller's array is written as in the loop
    x1, x2 = _copy(xs), _copy(xs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        bt.vmap(f)(x1, ys)
        loop_vmap(f)(x2, ys)
    assert_same(x1, x2)


def test_broadcast_arrays_of_scalar_examples_are_new_arrays():
    def f(z):
        (a,) = np.broadcast_arrays(z)  # np.array(z): a new 0-d array
        alias = a
        a += 1
        return alias, z

    got, want = _both(f, np.arange(3.0))
    assert_same(got, want)


# np.polydiv's quotient is a new array per example; vmap returned a read-only broadcast view,
# so writing into it raised.
def test_polydiv_quotient_is_writeable():
    def f(u, v):
        q, r = np.polydiv(u, v)
        q[0] = 0.0
        r[-1] = 1.0
        return q, r

    got, want = _both(f, np.array([[2.0, -8.0, 5.0], [1.0, 2.0, 3.0]]),
                      np.array([[4.0, 3.0], [1.0, -1.0]]))
    assert_same(got, want)


# ---- NumPy's value checks under nested vmap -----------------------------------------------------
# A rule that raises NumPy's error when any example holds a bad value asked bool(np.any(...))
# of a value batched at an outer level: when the outer examples disagreed, that raised
# ControlFlowError instead of NumPy's error.
NESTED_CHECKS = {
    "geomspace with a zero endpoint": (lambda a: np.geomspace(a, 8.0, num=3),
                                       [[1.0, 2.0], [0.0, 3.0]]),
    "digitize, bins not monotonic": (lambda b: np.digitize(1.5, b),
                                     [[[0.0, 1, 2], [0, 1, 2]], [[0, 2, 1], [0, 1, 2]]]),
    "bincount of a negative value": (lambda x: np.bincount(x, minlength=5),
                                     [[[0, 1], [1, 2]], [[0, -1], [1, 2]]]),
    "histogram of an infinite range": (lambda x: np.histogram(x, bins=3)[0],
                                       [[[0.0, 1], [1, 2]], [[0, np.inf], [1, 2]]]),
    "quantile with q > 1": (lambda q: np.quantile(np.arange(4.0), q), [[0.5, 0.2], [1.5, 0.1]]),
    "cov with negative fweights": (lambda w: np.cov(np.arange(3.0), fweights=w),
                                   [[[1, 2, 1], [1, 1, 1]], [[1, -2, 1], [1, 1, 1]]]),
    "round of NaN": (lambda x: round(x), [[1.0, 2.0], [np.nan, 1.0]]),
}


@pytest.mark.parametrize("name", sorted(NESTED_CHECKS))
def test_value_checks_under_nested_vmap_raise_numpys_error(name):
    f, data = NESTED_CHECKS[name]
    xs = np.array(data)
    with pytest.raises(Exception) as loop_error:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            loop_vmap(loop_vmap(f))(xs)
    assert not isinstance(loop_error.value, bt.BatchingError)
    with pytest.raises(type(loop_error.value)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            bt.vmap(bt.vmap(f))(xs)


# np.real_if_close with a batch of size 0 crashed reshaping its empty test (0, -1).
def test_real_if_close_of_an_empty_batch():
    got = bt.vmap(bt.vmap(np.real_if_close))(np.zeros((2, 0, 3), complex))
    assert got.shape == (2, 0, 3) and got.dtype == np.float64


# np.shares_memory / np.may_share_memory under nested vmap with an inner batch of size 0
# crashed (IndexError) asking the first of no examples; an empty batch holds no memory to
# overlap: False, as a single vmap level already answers.
@pytest.mark.parametrize("op", [np.shares_memory, np.may_share_memory])
@pytest.mark.parametrize("shape", [(0, 0, 5), (2, 0, 5), (0, 2, 5)])
def test_overlap_queries_with_an_empty_batch(op, shape):
    f = bt.vmap(bt.vmap(lambda x: op(x, x[1:])))
    assert bool(np.all(f(np.zeros(shape)) == False))  # noqa: E712
    assert bt.vmap(lambda x: op(x, x[1:]))(np.zeros(shape[1:])).shape == (shape[1],)


# ---- a batch of size 0 --------------------------------------------------------------------------
# Rules that flattened each example with np.reshape(x, (n, -1)) crashed for n == 0 (-1 is
# ambiguous there); np.polydiv flattened its coefficients to (0, 0) and crashed with an
# IndexError (its remainder's length depends on the values: now the clear BatchingError).
EMPTY_BATCH = {
    "meshgrid": (lambda a, b: np.meshgrid(a, b), [(3,), (2,)]),
    "meshgrid ij": (lambda a, b: np.meshgrid(a, b, indexing="ij", copy=False), [(2, 2), (3,)]),
    "take_along_axis axis=None": (lambda a, i: np.take_along_axis(a, i, axis=None),
                                  [(2, 3), (4,)]),
    "polydiv": (lambda u, v: np.polydiv(u, v), [(5,), (2,)]),
}
NO_EXAMPLE = {"polydiv"}  # a value-dependent length: no example to take it from


@pytest.mark.parametrize("name", sorted(EMPTY_BATCH))
@pytest.mark.parametrize("nested", [False, True])
def test_empty_batch_shapes(name, nested):
    f, shapes = EMPTY_BATCH[name]
    ones = [np.ones((1, 1) + s if nested else (1,) + s,
                    np.intp if name.startswith("take") and k else float)
            for k, s in enumerate(shapes)]
    g = bt.vmap(bt.vmap(f)) if nested else bt.vmap(f)
    want = g(*ones)
    empty = [np.zeros((1, 0) + s if nested else (0,) + s, o.dtype) for s, o in zip(shapes, ones)]
    if name in NO_EXAMPLE:
        with pytest.raises(bt.BatchingError, match="empty"):
            g(*empty)
        return
    got = g(*empty)
    for w, o in zip(flatten_leaves(want), flatten_leaves(got)):
        cut = (1, 0) if nested else (0,)
        assert o.shape == cut + w.shape[len(cut):] and o.dtype == w.dtype


def flatten_leaves(tree):
    return [tree] if isinstance(tree, np.ndarray) else [x for t in tree for x in
                                                          flatten_leaves(t)]


# A batched boolean mask next to an index array: with no example, the number of elements the
# mask selects (which must broadcast with the index array) is unknown; vmap took 0 and raised
# NumPy's broadcasting IndexError. Now a BatchingError that says so.
def test_empty_batch_mask_next_to_an_index_array():
    f = bt.vmap(lambda x, m: x[m, np.array([0, 2])])
    assert f(np.ones((1, 3, 4)), np.array([[True, False, True]])).shape == (1, 2)
    with pytest.raises(bt.BatchingError, match="batch size 0"):
        f(np.ones((0, 3, 4)), np.zeros((0, 3), bool))


# x[mask] = v with a batched mask and no example: nothing to write (the mask's count, which v
# must broadcast to, is unknown); vmap raised NumPy's broadcasting ValueError.
def test_empty_batch_masked_write_is_a_no_op():
    def f(x, m, v):
        x = x.copy()
        x[m] = v
        return x

    got = bt.vmap(f, in_axes=(0, 0, None))(np.ones((0, 6)), np.zeros((0, 6), bool),
                                           np.arange(2.0))
    assert got.shape == (0, 6) and got.dtype == np.float64


# np.ix_ reshapes an (integer or float) array argument: a view, whatever its size. vmap copied
# an empty one into intp (a new, writeable array of another dtype).
@pytest.mark.parametrize("dtype", [np.int64, np.float64, np.int32])
@pytest.mark.parametrize("size", [0, 3])
def test_ix_gives_views_of_its_array_arguments(dtype, size):
    def f(a, b):
        i, j = np.ix_(a, b)
        if i.size:
            i[0, 0] = 2  # written through to a
        return i, j, a

    a = np.arange(2 * size, dtype=dtype).reshape(2, size)
    got, want = _both(f, a, np.array([[True, False], [False, True]]))
    assert_same(got, want)
    ro = _read_only(a)
    if size:
        with pytest.raises(ValueError):
            loop_vmap(f)(ro, np.array([[True, False], [False, True]]))
        with pytest.raises(ValueError):
            bt.vmap(f)(ro, np.array([[True, False], [False, True]]))


# np.linalg.lstsq raises LinAlgError ("SVD did not converge") for an `a` holding inf or NaN;
# vmap's batched SVD returned NaN solutions (or a BatchingError about the residuals' shapes).
@pytest.mark.parametrize("bad", [np.inf, -np.inf, np.nan])
@pytest.mark.parametrize("b_cols", [None, 0, 1])
def test_lstsq_of_a_non_finite_a_raises_linalgerror(bad, b_cols):
    a = np.array([[[-4.0, 1.5], [2.0, 0.0], [-1.5, -1.0], [3.0, 0.5]]] * 2)
    a[1, 1, 0] = bad
    b = np.ones((2, 4) if b_cols is None else (2, 4, b_cols))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(np.linalg.LinAlgError):
            loop_vmap(np.linalg.lstsq)(a, b)
        with pytest.raises(np.linalg.LinAlgError):
            bt.vmap(np.linalg.lstsq)(a, b)
        with pytest.raises(np.linalg.LinAlgError):
            bt.vmap(np.linalg.lstsq, in_axes=(None, 0))(a[1], b)


# Indices (or a condition) batched at an outer level, gathering from an array batched only at
# the inner level: the inner rule indexed its plain physical array with the outer level's
# value, which NumPy cannot convert (a TypeError) instead of dispatching there.
NESTED_GATHERS = {  # (f, indices: 2 outer x 2 inner examples, a: 2 inner examples)
    "compress": (lambda c, a: np.compress(c, a, axis=0),
                 [[[True, False], [False, True]], [[False, True], [True, False]]],
                 [[1.0, 2.0], [3.0, 4.0]]),
    "compress of 0-d examples": (lambda c, a: np.compress(c, a, axis=0),
                                 [[[True], [True]], [[True], [True]]], [5.0, 6.0]),
    "extract": (lambda c, a: np.extract(c, a),
                [[[True, False], [False, True]], [[False, True], [True, False]]],
                [[1.0, 2.0], [3.0, 4.0]]),
    "take": (lambda i, a: np.take(a, i), [[[1, 0], [0, 0]], [[0, 1], [1, 1]]],
             [[1.0, 2.0], [3.0, 4.0]]),
}


@pytest.mark.parametrize("name", sorted(NESTED_GATHERS))
def test_outer_batched_indices_into_an_inner_batched_array(name):
    f, idx, a = NESTED_GATHERS[name]
    idx, a = np.array(idx), np.array(a)
    want = loop_vmap(loop_vmap(f, (0, 0)), (0, None))(idx, a)
    got = bt.vmap(bt.vmap(f, (0, 0)), (0, None))(idx, a)
    assert_same(got, want)


# A batched value written into a plain array made inside f: NumPy converts it to a Python
# scalar (float()), which makes vmap rerun the function once per example (the loop's result).
# Into a bool, a datetime64 or a timedelta64 array NumPy asks otherwise: bool() (a
# ControlFlowError where the examples disagree, which NumPy wrapped in "setting an array
# element with a sequence") or no protocol at all ("Could not convert object to NumPy
# datetime"): ValueErrors that neither reran nor said why.
@pytest.mark.parametrize("dtype, values", [
    ("bool", [True, False]),
    ("datetime64[s]", np.array([1, 2], "datetime64[s]")),
    ("timedelta64[ms]", np.array([1, 2], "timedelta64[ms]")),
    ("float64", [1.0, 2.0]),
])
@pytest.mark.parametrize("key", [(), 0, Ellipsis])
def test_batched_value_into_a_plain_array_of_any_dtype(dtype, values, key):
    def f(v):
        out = np.zeros((2,) if key == 0 else (), dtype=dtype)
        out[key] = v
        return out

    got, want = _both(f, np.array(values))
    assert_same(got, want)


# A ufunc's out= that is read-only and not contiguous (vmap writes such outs through a
# contiguous stand-in): NumPy refuses the read-only out first; the writeable stand-in let the
# casting error come first instead.
@pytest.mark.parametrize("in_axes", [0, 1, 2])
def test_ufunc_into_a_read_only_strided_out(in_axes):
    def f(x, o):
        return np.fmod(x, x, out=o)

    xs = np.ones((3, 3, 4))
    out = np.moveaxis(np.ones((3, 3, 4), np.int64), 0, in_axes)[:, :, ::-1]
    out.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        loop_vmap(f, in_axes=(0, in_axes))(xs, out)
    with pytest.raises(ValueError, match="read-only"):
        bt.vmap(f, in_axes=(0, in_axes))(xs, out)


# np.meshgrid(..., copy=False) returns np.broadcast_arrays' views: writeable (with NumPy's
# warning), and an input already of the full shape as a view of it. vmap returned
# np.broadcast_to's read-only views, so writes raised.
@pytest.mark.parametrize("batched", [(0, None), (0, 0), (None, 0)])
def test_meshgrid_without_copy_writes_through(batched):
    def f(a, b):
        x, y = np.meshgrid(a, b, copy=False)
        x[0, 0] = -1.0  # (every row of x is a view of a)
        return x, y, a

    got, want = _both(f, np.arange(6.0).reshape(2, 3), np.arange(4.0).reshape(2, 2),
                      in_axes=batched)
    assert_same(got, want)


# x[mask] = v with a batched mask whose count differs between examples and a v of one value
# per selected element: NumPy raises its ValueError for an example whose count is not v's
# length; vmap raised a BatchingError (the counts differ) instead.
def test_masked_write_with_values_of_the_wrong_count():
    def f(x, v):
        x = x.copy()
        x[x] = v
        return x

    xs = np.array([[False, True, True], [True, False, False]])
    with pytest.raises(ValueError):
        loop_vmap(f, (0, None))(xs, np.array([False, False]))
    with pytest.raises(ValueError):
        bt.vmap(f, (0, None))(xs, np.array([False, False]))
    ys = np.array([[[True, False], [False, False], [True, True]],
                   [[False, False], [True, False], [False, False]]])
    with pytest.raises(ValueError):
        loop_vmap(f, (0, None))(ys, np.array([True, False, True]))
    with pytest.raises(ValueError):
        bt.vmap(f, (0, None))(ys, np.array([True, False, True]))


# x.fill(v) with a batched v that is not 0-d per example: NumPy's own TypeError (vmap raised
# a ValueError of its own).
@pytest.mark.parametrize("dtype", [np.float64, np.complex64, np.int32, np.bool_])
@pytest.mark.parametrize("vshape", [(2,), (1,), (1, 1)])
def test_fill_with_a_batched_array_value(vshape, dtype):
    def f(x, v):
        x = x.copy()
        x.fill(v)
        return x

    xs, vs = np.zeros((2, 3), dtype), np.ones((2,) + vshape, dtype)
    try:
        want = loop_vmap(f)(xs, vs)
    except Exception as e:  # noqa: BLE001
        with pytest.raises(type(e)):
            bt.vmap(f)(xs, vs)
        return
    assert_same(bt.vmap(f)(xs, vs), want)


# ---- ravel of an input's memory -----------------------------------------------------------------
# NumPy's ravel is a view only of an example contiguous in the order asked. An input mapped
# along another axis than its slowest (in_axes=1, 2, a Fortran-ordered one) hands the loop
# strided examples, so ravel copies there; vmap judged the examples as if each were stored on
# its own (right for values computed inside f, which are new contiguous arrays in the loop)
# and returned a view: a later write into the input showed through it.
@pytest.mark.parametrize("layout", ["in_axes=1", "in_axes=2", "fortran", "in_axes=0"])
@pytest.mark.parametrize("order", ["C", "F", "A", "K"])
@pytest.mark.parametrize("of", ["input", "view of input", "computed"])
def test_ravel_of_an_input_with_strided_examples(layout, order, of):
    def f(x):
        base = {"input": x, "view of input": x[::1], "computed": x * 1.0}[of]
        r = np.ravel(base, order)
        base[...] = 0.0  # a write after the ravel: seen through a view, not through a copy
        return r

    xs = np.arange(24.0).reshape(2, 3, 4)
    in_axes = 0
    if layout.startswith("in_axes"):
        in_axes = int(layout[-1])
        xs = np.ascontiguousarray(np.moveaxis(xs, 0, in_axes))
    elif layout == "fortran":
        xs = np.asfortranarray(xs)
    got, want = _both(f, xs, in_axes=in_axes)
    if of == "computed" and layout != "in_axes=0" and order in ("C", "A", "K"):
        # the documented limitation the other way round (docs/semantics.md, 'View or copy'):
        # a new value's examples are interleaved, so vmap copies where the loop views
        return
    assert_same(got, want)


# ---- chunk_size ---------------------------------------------------------------------------------
# With chunk_size, each chunk can be consistent on its own while the chunks' results differ in
# shape (a mask that selects 4 elements in one chunk and 3 in the next): the per-example
# results cannot be stacked, which is a BatchingError without chunks; with them, NumPy's
# concatenate raised its ValueError.
@pytest.mark.parametrize("chunk", [1, 2])
def test_chunks_whose_results_differ_in_shape(chunk):
    def f(x, m):
        return x[:, m]

    x = np.ones((3, 3, 4))
    m = np.array([[True, True, True, True], [True, True, True, True],
                  [True, False, True, True]])
    with pytest.raises(bt.BatchingError, match="stack"):
        bt.vmap(f, chunk_size=chunk)(x, m)
    with pytest.raises(bt.BatchingError):
        bt.vmap(f)(x, m)


# A write of batched values into an array that is not batched (documented BatchingError), with
# arguments NumPy refuses anyway: NumPy's error comes first, as in the loop (np.put,
# np.put_along_axis, np.place, np.putmask and np.fill_diagonal raised the BatchingError first).
SHARED_TARGET_BAD_ARGS = {
    "put_along_axis, shapes": (lambda a, i, v: np.put_along_axis(a, i, v, 0), (3, 4), (2, 3),
                               (1, 3)),
    "put, bad mode": (lambda a, i, v: np.put(a, i, v, mode="bad"), (6,), (2,), (2,)),
    "place, mask size": (lambda a, m, v: np.place(a, m > 0, v), (6,), (4,), (2,)),
    "putmask, mask size": (lambda a, m, v: np.putmask(a, m > 0, v), (6,), (4,), (2,)),
    "fill_diagonal, 1-d": (lambda a, m, v: np.fill_diagonal(a, v), (6,), (2,), ()),
}


@pytest.mark.parametrize("name", sorted(SHARED_TARGET_BAD_ARGS))
def test_numpys_argument_errors_before_the_shared_target_error(name):
    f, sa, si, sv = SHARED_TARGET_BAD_ARGS[name]
    a = np.zeros(sa)
    i = np.ones((2,) + si, np.intp)
    v = np.ones((2,) + sv)

    def g(a, i, v):
        f(a, i, v)
        return a

    with pytest.raises(Exception) as loop_error:
        loop_vmap(g, (None, 0, 0))(a.copy(), i, v)
    assert not isinstance(loop_error.value, bt.BatchingError)
    with pytest.raises(type(loop_error.value)):
        bt.vmap(g, (None, 0, 0))(a.copy(), i, v)


# The same with a batch of size 0: an empty read-only input shares no memory by NumPy's test,
# so the read-only view of it was kept, and writing into the new array raised.
def test_array_from_a_read_only_scalar_with_an_empty_batch():
    def f(z):
        v = z[...]
        np.maximum(v, 0.25, out=v)
        return v

    xs = np.zeros(0)
    xs.flags.writeable = False
    got = bt.vmap(f)(xs)
    assert got.shape == (0,) and got.dtype == np.float64


# ---- more indexing ------------------------------------------------------------------------------
# A batched boolean mask with no elements: NumPy does not check it against the axis it indexes
# (x[np.zeros(0, bool)] of a (2, 3) x is (0, 3)); vmap raised "boolean index did not match".
@pytest.mark.parametrize("key", ["m", "..., m, :", ":, m"])
def test_empty_batched_mask_is_not_checked_against_its_axis(key):
    f = eval(f"lambda x, m: x[{key}]")  # noqa: S307
    xs = np.zeros((2, 2, 3))
    ms = np.zeros((2, 0), bool)
    got, want = _both(f, xs, ms)
    assert_same(got, want)

    def g(x, m):
        x = x.copy()
        exec(f"x[{key}] = 5.0")  # noqa: S102  (writes nothing)
        return x

    got, want = _both(g, xs, ms)
    assert_same(got, want)


# x[idx] = v with an index that repeats: per example the last value written stays (NumPy
# writes in the index's order). With index or value arrays laid out backwards in memory
# (negative strides), vmap's one batched assignment wrote in another order.
@pytest.mark.parametrize("flip_index", [False, True])
@pytest.mark.parametrize("flip_value", [False, True])
@pytest.mark.parametrize("op", ["setitem", "put", "put_along_axis"])
def test_repeated_indices_write_in_order(flip_index, flip_value, op):
    def f(x, i, v):
        x = x.copy()
        if op == "setitem":
            x[i] = v
        elif op == "put":
            np.put(x, i, v)
        else:
            np.put_along_axis(x, i, v, 0)
        return x

    def args():  # (fresh, keeping the negative strides)
        idx = np.array([[2, 1, 2], [0, 0, 3], [1, 1, 1]], np.uint8)
        vals = np.arange(9, dtype=np.float32).reshape(3, 3)
        if flip_index:
            idx = np.flip(np.flip(idx).copy())
        if flip_value:
            vals = np.flip(np.flip(vals, 1).copy(), 1)
        return np.zeros((3, 4), np.float32), idx, vals

    assert_same(bt.vmap(f)(*args()), loop_vmap(f)(*args()))


# x[mask] = v with a mask batched at an outer level only and one value per example: a masked
# copy, whatever the counts (vmap asked every outer example for the same count).
def test_masked_write_with_an_outer_level_mask():
    def f(x, m, v):
        x = x.copy()
        x[m] = v
        return x

    xs = np.arange(24.0).reshape(2, 2, 6)
    ms = np.array([[False, False, True, True, True, False], [False, False, False, False, True,
                                                             True]])
    vs = np.array([[-1.0, 0.0], [5.0, 6.0]])
    want = loop_vmap(loop_vmap(f, (0, None, 0)), (0, 0, 0))(xs, ms, vs)
    got = bt.vmap(bt.vmap(f, (0, None, 0)), (0, 0, 0))(xs, ms, vs)
    assert_same(got, want)


# A batched value into a plain bool array with no example: bool() has no example to ask, and
# its BatchingError came wrapped in NumPy's "setting an array element with a sequence"; then
# the BatchingError itself (no example, so no rerun either). An array made with np.zeros in
# f's module is now a buffer, batched at that write: the result of no examples. One made
# elsewhere (a plain array's copy) still gives that BatchingError.
def test_batched_value_into_a_plain_bool_array_with_an_empty_batch():
    def f(v):
        out = np.zeros((), bool)
        out[()] = v
        return out

    got = bt.vmap(f)(np.zeros(0, bool))
    assert got.shape == (0,) and got.dtype == bool
    template = np.zeros((), bool)

    def g(v):
        out = template.copy()
        out[()] = v
        return out

    with pytest.raises(bt.BatchingError, match="batch size 0"):
        bt.vmap(g)(np.zeros(0, bool))


# np.place reads `vals` as it writes (NumPy makes no copy where vals overlaps arr): with vals
# arr itself, a later selected element takes a value an earlier one already overwrote. vmap
# read every value before writing.
@pytest.mark.parametrize("vals", ["a", "a[::-1]", "a[1:]"])
def test_place_with_values_overlapping_the_target(vals, silent_fallback):
    def f(a, m):
        a = a.copy()
        np.place(a, m, eval(vals))  # noqa: S307
        return a

    xs = np.array([[1.5, -0.5, 2.5, 3.5, 0.5, 4.5], [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]])
    ms = np.array([[True, False, True, False, True, True], [False, True, True, True, False,
                                                            True]])
    got, want = _both(f, xs, ms)
    assert_same(got, want)


# ufunc.at into a read-only example: where every index picks one element NumPy 2.4 checks the
# indices first (IndexError; and then writes anyway, a NumPy bug; 2.5 refuses the target
# first), where each picks a subarray it refuses the read-only target first (ValueError).
# vmap always checked the indices first.
_ONE_ELEMENT = IndexError if AT_CHECKS_INDICES_FIRST else ValueError


@pytest.mark.parametrize("shape, exc", [((5,), _ONE_ELEMENT), ((5, 1), _ONE_ELEMENT),
                                        ((5, 3), ValueError)])
@pytest.mark.parametrize("op", ["negative", "add"])
def test_ufunc_at_into_a_read_only_example(shape, exc, op):
    def f(a):
        if op == "negative":
            np.negative.at(a, [0, 5])
        else:
            np.add.at(a, [0, 5], 1)
        return a

    xs = _read_only(np.zeros((2,) + shape, np.int32))
    with pytest.raises(exc):
        loop_vmap(f)(xs)
    with pytest.raises(exc):
        bt.vmap(f)(xs)


# np.einsum(..., out=o) computes in o's dtype (float16 operands into a complex128 out: at
# complex128 precision). With only `out` batched, vmap computed the one result at the
# operands' dtype and copied it, at float16 precision.
def test_einsum_into_a_batched_out_of_another_dtype():
    a = np.array([[2.72, -0.16, -0.62], [-1.29, -0.93, 2.79], [-0.2, 1.79, 2.5]], np.float16)
    b = np.array([-0.095, 2.05, 0.852], np.float16)

    def f(o):
        o = o.copy()
        np.einsum("ii,i->i", a, b, out=o)
        return o

    got, want = _both(f, np.zeros((2, 3), complex))
    np.testing.assert_array_equal(got, want)


# ---- found when the buffers, shared-state writes and the ndarray surface were merged --------
# A function with no mapped argument (in_axes=None, axis_size=) that needs the per-example
# rerun: the rerun's one-argument fast path read the first mapped argument, of which there was
# none (IndexError). NumPy's TypeError from np.arange(array, 5) now starts that rerun.
def test_rerun_of_a_function_with_no_mapped_argument():
    def f(x):
        return np.arange(x, 5, dtype=bool)  # more than two booleans: NumPy's TypeError

    x = np.array(-1.3)
    with pytest.raises(TypeError, match="booleans"):
        loop_vmap(f, in_axes=None, axis_size=1)(x)
    with pytest.raises(TypeError, match="booleans"):
        bt.vmap(f, in_axes=None, axis_size=1, fallback="silent")(x)


# A write of per-example values into an array not batched at that level, with no example:
# nothing is written in the loop, and vmap raised the shared-write error.
def test_shared_write_with_no_example_does_nothing():
    def f(a0, a1):
        y = a0.copy()
        y.flat[1:7] = a1
        return np.zeros_like(a0) + y

    xs, vs = np.ones((0, 3, 4)), np.ones((0, 0, 6))
    got = bt.vmap(bt.vmap(f, in_axes=(None, 0)), in_axes=(0, 0))(xs, vs)
    assert got.shape == (0, 0, 3, 4) and got.dtype == np.float64


# A read-only out= given to an op the per-example loop fallback serves (np.fft.rfft) is the
# user's own read-only array: NumPy's ValueError, as in the loop, not the shared-write error.
def test_loop_fallback_keeps_numpys_error_for_a_read_only_out():
    a1 = np.arange(12.0).reshape(3, 4)
    outs = np.zeros((2, 3, 3), complex)
    outs.flags.writeable = False

    def f(o, a):
        return np.fft.rfft(a, out=o)

    with pytest.raises(ValueError, match="read-only"):
        loop_vmap(f, in_axes=(0, None))(outs, a1)
    with pytest.raises(ValueError, match="read-only"):
        bt.vmap(f, in_axes=(0, None))(outs, a1)


# np.take(a, i, out=o) checks out's shape, then its dtype, then its writeability, before it
# reads an index: vmap read the indices first (an IndexError where the loop raises about out).
# (NumPy 2.4 refuses a complex out for a float take, a 'safe' cast; 2.5 takes it: the loop
# says which error comes first.)
@pytest.mark.parametrize("out", [
    np.zeros((2, 3, 2), complex),  # complex out for a float take
    np.zeros((2, 3, 3)),  # the wrong shape: ValueError
    "read-only",  # ValueError
])
def test_take_checks_out_before_the_indices(out):
    if isinstance(out, str):
        out = np.zeros((2, 3, 2))
        out.flags.writeable = False
    a = np.arange(12.0).reshape(3, 4)

    def f(o):
        return np.take(a, [4, 2], axis=1, out=o)  # index 4 is out of bounds too

    with pytest.raises((TypeError, ValueError, IndexError)) as loop_error:
        loop_vmap(f)(out)
    with pytest.raises(loop_error.type):
        bt.vmap(f)(out)


# ndarray.resize of no examples reshaped with -1, which NumPy cannot infer from size 0.
def test_resize_of_no_examples():
    def f(x):
        y = np.asfortranarray(x * 1)
        y.resize((2, 7))
        return y

    assert_same(bt.vmap(f)(np.ones((0, 3, 4))), np.zeros((0, 2, 7)))
    got, want = _both(f, np.arange(24.0).reshape(2, 3, 4))
    assert_same(got, want)


# scipy.fft's one-axis transforms of 0-d examples (a 1-d input at in_axes=0): SciPy raises its
# own error per example (TypeError for complex ihfft, IndexError for the others); the rule
# normalised axis -1 against no axis and raised AxisError.
@pytest.mark.parametrize("name", ["ihfft", "fft", "dct"])
@pytest.mark.parametrize("dtype", [np.complex64, np.float64])
def test_scipy_fft_of_zero_d_examples_raises_scipys_error(name, dtype):
    fft = pytest.importorskip("scipy.fft", reason="the SciPy rules need SciPy")
    if name == "dct" and dtype is np.complex64:
        pytest.skip("dct of a complex input: SciPy transforms the parts (not this finding)")
    fn = getattr(fft, name)
    xs = np.array([0.5, -1.5], dtype)
    _raises_as_the_loop(fn, xs)


# ndarray.resize of a nested batched value that a view holds: the refcount check looked at the
# outer BatchedTensor only, which the view does not hold (it holds the physical array), so vmap
# resized where the loop raises.
def test_resize_of_a_referenced_value_under_a_nested_vmap():
    def f(x):
        y = x.copy()
        view = y[:1]
        y.resize((2, 8))
        return view

    xs = np.arange(72.0).reshape(2, 3, 3, 4)
    with pytest.raises(ValueError, match="referenced"):
        loop_vmap(loop_vmap(f))(xs)
    with pytest.raises(ValueError, match="referenced"):
        bt.vmap(bt.vmap(f))(xs)
    g = lambda x: (lambda y: (y.resize((2, 8)), y)[1])(x.copy())  # noqa: E731
    assert_same(bt.vmap(bt.vmap(g))(xs), loop_vmap(loop_vmap(g))(xs))


# scipy.special.logsumexp of 0-d examples: axis=None reduced no example axis, and SciPy took
# axes () for every axis, reducing the batch too (shape (1,) for a batch of none).
@pytest.mark.parametrize("kw", [{}, {"keepdims": True}, {"return_sign": True}])
@pytest.mark.parametrize("n", [0, 2])
def test_logsumexp_of_zero_d_examples(kw, n):
    special = pytest.importorskip("scipy.special", reason="the SciPy rules need SciPy")
    if n == 0 and kw.get("return_sign"):
        pytest.skip("no example, complex input: SciPy's sign of an empty complex array is "
                    "complex, of one element real; vmap has no example to learn it from")
    f = lambda x: special.logsumexp(x, **kw)  # noqa: E731
    xs = np.array([-4 - 4j, -1.5 - 0.5j])
    want = loop_vmap(f)(xs)  # (shapes of no example: those of the two, with 0 in front)
    got = bt.vmap(f)(xs[:n])
    if n:
        assert_same(got, want)
        return
    if not kw.get("return_sign"):
        got, want = (got,), (want,)
    for g, w in zip(got, want):
        assert g.shape == (0,) + np.shape(w)[1:] and g.dtype == np.asarray(w).dtype


# np.require(x, requirements="O") of an argument not mapped (in_axes=None): the loop gets the
# argument itself (it owns its data); vmap's first pass hands f a read-only view of it, which
# owns none, so np.require copies (docs/semantics.md, the per-example rerun): the values are
# the loop's, and the argument is left as the loop leaves it.
def test_require_owndata_of_an_unmapped_argument():
    def f(a, x):
        return np.require(a, requirements="O") + x

    a1, a2, xs = np.arange(3.0), np.arange(3.0), np.arange(6.0).reshape(2, 3)
    assert_same(bt.vmap(f, in_axes=(None, 0))(a1, xs), loop_vmap(f, in_axes=(None, 0))(a2, xs))
    np.testing.assert_array_equal(a1, a2)


# scipy.ndimage filters with axes= naming an axis the example lacks: SciPy checks the input's
# dtype (complex is refused) and then the axes; the rule checked the axes first (AxisError
# where the loop raises TypeError).
@pytest.mark.parametrize("dtype", [np.complex64, np.float64])
def test_ndimage_axes_out_of_range_raises_scipys_error(dtype):
    ndimage = pytest.importorskip("scipy.ndimage", reason="the SciPy rules need SciPy")
    f = lambda a: ndimage.percentile_filter(a, 30, size=3, axes=(0, 2))  # noqa: E731
    xs = np.ones((3, 5, 6), dtype)
    _raises_as_the_loop(f, xs)


# scipy.fft's n-axis transforms of examples with fewer axes than they transform: SciPy checks
# a complex input to a real transform first (TypeError); the rule checked the axes first.
@pytest.mark.parametrize("name", ["rfft2", "fft2"])
@pytest.mark.parametrize("dtype", [np.complex64, np.float64])
def test_scipy_fft_axes_out_of_range_raise_scipys_error(name, dtype):
    fft = pytest.importorskip("scipy.fft", reason="the SciPy rules need SciPy")
    fn = getattr(fft, name)
    xs = np.ones((3, 5), dtype)
    _raises_as_the_loop(fn, xs)


# A ufunc's out= (and ufunc.at) into an array not batched, with no example: the loop writes
# nothing, and vmap raised the shared-write error (as for np.put & co. before).
def test_ufunc_out_into_a_shared_array_with_no_example():
    def f(a, v):
        a += v
        np.add(a, v, out=a)
        np.add.at(a, [0], v[0])
        return a * 1

    a, vs = np.zeros(3), np.ones((0, 3))
    got = bt.vmap(f, in_axes=(None, 0))(a, vs)
    assert got.shape == (0, 3) and got.dtype == np.float64
    np.testing.assert_array_equal(a, 0)


# np.convolve / np.correlate of complex values with inf or NaN parts: NumPy's complex dot
# (BLAS) multiplies them otherwise than the ufunc the rule sums with (NaN in other places), and
# the rule's zero padding multiplied a real kernel's inf past the signal's ends (0 * inf is
# NaN where NumPy sums only the overlap). Both now run per example.
@pytest.mark.parametrize("op", [np.convolve, np.correlate])
@pytest.mark.parametrize("mode", ["full", "same", "valid"])
@pytest.mark.parametrize("dtype", [np.complex128, np.float64])
def test_convolve_and_correlate_with_inf_and_nan_match_the_loop(op, mode, dtype):
    rng = np.random.default_rng(7)
    a = rng.normal(size=(3, 6)).astype(dtype)
    v = rng.normal(size=(3, 4)).astype(dtype)
    a[0, 0], a[1, 3], v[2, 0], v[1, -1] = np.inf, np.nan, -np.inf, np.inf
    if dtype == np.complex128:
        a[2, 1] = complex(np.inf, 1.0)
    f = lambda x, y: op(x, y, mode)  # noqa: E731
    got, want = _both(f, a, v)
    assert_same(got, want)
    got, want = _both(f, v, a)  # the kernel longer than the signal: the two swap
    assert_same(got, want)


# chunk_size with a write into an argument that is not mapped, and results that are that
# argument: the loop's results all show its state after the last example, while each chunk
# stacked its results before the next chunk wrote (a rerun per example in the first chunk for
# another reason, or the write itself). The whole batch now runs at once there.
@pytest.mark.parametrize("chunk_size", [1, 2, 3])
@pytest.mark.parametrize("rerun_first", [False, True])
def test_chunks_and_a_returned_argument_written_example_after_example(chunk_size, rerun_first):
    def f(total, x):
        if rerun_first:
            x[0].item()  # a conversion: the first pass stops here, before the write
            total += x  # (in a vectorised pass: a value per example into shared state)
        else:
            total += 1.0  # accumulates: the loop adds it once per example
        return total, x * 2

    xs = np.arange(12.0).reshape(4, 3)
    total_v, total_l = np.zeros(3), np.zeros(3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", bt.PerformanceWarning)
        got = bt.vmap(f, in_axes=(None, 0), chunk_size=chunk_size)(total_v, xs)
    want = loop_vmap(f, in_axes=(None, 0))(total_l, xs)
    assert_same(got, want)
    np.testing.assert_array_equal(total_v, total_l)


# The per-op loop tells a write into an argument it froze (not batched at its level: the
# shared-write error) from a write into an array that is read-only of its own (NumPy's error,
# as in the loop); an example batched at an outer level is a BatchedTensor there, whose own
# read-only memory it did not look at, so np.quantile(..., out=read-only) raised the
# shared-write error instead of NumPy's.
def test_per_op_loop_into_a_read_only_out_batched_at_an_outer_level():
    def f(a, q, out):
        np.quantile(a, q, out=out, axis=0)
        return a

    a = np.random.default_rng(3).normal(size=(4, 5))
    q = np.array([[0.2, 0.9]])
    out = np.zeros((1, 2, 5, 1))
    out.flags.writeable = False
    inner = bt.vmap(f, in_axes=(0, None, -1), out_axes=-1)
    with pytest.raises(ValueError, match="read-only"):
        loop_vmap(loop_vmap(f, (0, None, -1), -1), (None, 0, 0), 3)(a[None], q, out)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", bt.PerformanceWarning)
        with pytest.raises(ValueError, match="read-only"):
            bt.vmap(inner, in_axes=(None, 0, 0), out_axes=3)(a[None], q, out)


# scipy.special.logsumexp over every axis of a batch of no examples: SciPy's path for an empty
# array fails on a tuple of axes, where the loop (no example, nothing called) does not.
@pytest.mark.parametrize("kw", [{}, {"axis": (0, 1)}, {"keepdims": True},
                                {"return_sign": True}])
def test_logsumexp_of_no_examples(kw):
    special = pytest.importorskip("scipy.special", reason="the SciPy rules need SciPy")
    xs = np.zeros((0, 3, 5), np.complex128 if "return_sign" not in kw else np.float64)
    got = bt.vmap(lambda a: special.logsumexp(a, **kw), fallback="error")(xs)
    one = special.logsumexp(np.zeros((3, 5), xs.dtype), **kw)
    for g, o in zip(got if isinstance(got, tuple) else (got,),
                    one if isinstance(one, tuple) else (one,)):
        assert g.shape == (0,) + np.shape(o) and g.dtype == np.asarray(o).dtype


# scipy.signal.filtfilt(method="gust") of a batch of no examples: Gustafsson's method solves a
# least-squares problem, which LAPACK refuses for no rows ("illegal value in 4-th argument").
@pytest.mark.parametrize("in_axes", [0, 1])
def test_filtfilt_gust_of_no_examples(in_axes):
    signal = pytest.importorskip("scipy.signal", reason="the SciPy rules need SciPy")
    f = lambda x: signal.filtfilt([0.25, 0.5, 0.125], [1.0, -0.4, 0.2], x, method="gust")  # noqa: E731
    xs = np.zeros((0, 20)) if in_axes == 0 else np.zeros((20, 0))
    got = bt.vmap(f, in_axes=in_axes, fallback="error")(xs)
    assert got.shape == (0, 20) and got.dtype == np.float64


# The first pass stopped at a conversion (a batched write into a plain array), then the rerun's
# examples gave results of different shapes: vmap re-raised the conversion's error, where the
# loop's np.stack failure calls for a BatchingError (the first pass's error is kept where it is
# about the shapes: a DataDependentError). The generator's own cases, judged by its oracle.
UNSTACKABLE_AFTER_A_CONVERSION = [
    'Case(inputs=[Input(name=\'a0\', shape=(12,), dtype=dtype(\'int64\'), axes=[1, None], source=(\'sample\', \'bincount\', \'int64\', 0, 0, 0), layout=(\'C\', None), readonly=False), Input(name=\'a1\', shape=(), dtype=dtype(\'float64\'), axes=[1, 0], source=(\'fresh\', 2007895497, (\'any\',)), layout=(\'strided\', None), readonly=False)], steps=[Step(kind=\'op\', code=\'v1 = np.bincount(a0, minlength=8)\', defines=(\'v1\',), target=None, values=\'None\', reads=(\'a0\',), op=\'bincount\', operand=\'a0\', arrays=\'()\', tags=(), target_pos=None), Step(kind=\'op\', code="v2 = OP[\'scipy.signal.lfilter\']([0.25, 0.5, 0.125], [1.0, -0.4, 0.2], a0)", defines=(\'v2\',), target=None, values=\'None\', reads=(\'a0\',), op=\'scipy.signal.lfilter\', operand=\'a0\', arrays=\'()\', tags=(), target_pos=None), Step(kind=\'create\', code="c3 = np.zeros((12,), dtype=np.dtype(\'float64\'))", defines=(\'c3\',), target=None, values=\'None\', reads=(\'v2\',), op=None, operand=None, arrays=\'()\', tags=(), target_pos=None), Step(kind=\'write\', code=\'c3[1] = a1\', defines=(), target=\'c3\', values=\'(a1,)\', reads=(\'c3\', \'a1\'), op=None, operand=None, arrays=\'()\', tags=(\'setitem\', \'basic\'), target_pos=None), Step(kind=\'op\', code="v4 = np.histogram(a0, bins=\'auto\')", defines=(\'v4\',), target=None, values=\'None\', reads=(\'a0\',), op=\'histogram\', operand=\'a0\', arrays=\'()\', tags=(), target_pos=None), Step(kind=\'create\', code=\'v5 = v4[0]\\nv6 = v4[1]\', defines=(\'v5\', \'v6\'), target=None, values=\'None\', reads=(\'v4\',), op=None, operand=None, arrays=\'()\', tags=(), target_pos=None), Step(kind=\'op\', code="v7 = OP[\'add.reduceat\'](v1, [0, 4, 1, 5])", defines=(\'v7\',), target=None, values=\'None\', reads=(\'v1\',), op=\'add.reduceat\', operand=\'v1\', arrays=\'()\', tags=(), target_pos=None)], outputs=[\'v7\', \'v2\', \'v5\'], out_form=\'tuple\', sizes=[2, 2], chunks=[None, None], out_axes=[(-2, 0, 2), (-2, 1, -2)], int_in_axes=[False, False], tol=0.0)',
    'Case(inputs=[Input(name=\'a0\', shape=(12,), dtype=dtype(\'int64\'), axes=[1, None], source=(\'sample\', \'bincount\', \'int64\', 0, 0, 0), layout=(\'C\', None), readonly=False), Input(name=\'a1\', shape=(), dtype=dtype(\'float64\'), axes=[1, 0], source=(\'fresh\', 2007895497, (\'any\',)), layout=(\'strided\', None), readonly=False)], steps=[Step(kind=\'op\', code=\'v1 = np.bincount(a0, minlength=8)\', defines=(\'v1\',), target=None, values=\'None\', reads=(\'a0\',), op=\'bincount\', operand=\'a0\', arrays=\'()\', tags=(), target_pos=None), Step(kind=\'op\', code="v2 = OP[\'scipy.signal.lfilter\']([0.25, 0.5, 0.125], [1.0, -0.4, 0.2], a0)", defines=(\'v2\',), target=None, values=\'None\', reads=(\'a0\',), op=\'scipy.signal.lfilter\', operand=\'a0\', arrays=\'()\', tags=(), target_pos=None), Step(kind=\'create\', code="c3 = np.zeros((12,), dtype=np.dtype(\'float64\'))", defines=(\'c3\',), target=None, values=\'None\', reads=(\'v2\',), op=None, operand=None, arrays=\'()\', tags=(), target_pos=None), Step(kind=\'write\', code=\'c3[0] = a1\', defines=(), target=\'c3\', values=\'(a1,)\', reads=(\'c3\', \'a1\'), op=None, operand=None, arrays=\'()\', tags=(\'setitem\', \'basic\'), target_pos=None), Step(kind=\'op\', code="v4 = np.histogram(a0, bins=\'auto\')", defines=(\'v4\',), target=None, values=\'None\', reads=(\'a0\',), op=\'histogram\', operand=\'a0\', arrays=\'()\', tags=(), target_pos=None), Step(kind=\'create\', code=\'v5 = v4[0]\\nv6 = v4[1]\', defines=(\'v5\', \'v6\'), target=None, values=\'None\', reads=(\'v4\',), op=None, operand=None, arrays=\'()\', tags=(), target_pos=None), Step(kind=\'op\', code="v7 = OP[\'add.reduceat\'](v1, [0, 4, 1, 5])", defines=(\'v7\',), target=None, values=\'None\', reads=(\'v1\',), op=\'add.reduceat\', operand=\'v1\', arrays=\'()\', tags=(), target_pos=None)], outputs=[\'v7\', \'v2\', \'v5\'], out_form=\'tuple\', sizes=[2, 2], chunks=[None, None], out_axes=[(-2, 0, 2), (-2, 1, -2)], int_in_axes=[False, False], tol=0.0)',
    'Case(inputs=[Input(name=\'a0\', shape=(12,), dtype=dtype(\'int64\'), axes=[1, None], source=(\'sample\', \'bincount\', \'int64\', 0, 0, 0), layout=(\'C\', None), readonly=False), Input(name=\'a1\', shape=(), dtype=dtype(\'float64\'), axes=[1, 0], source=(\'fresh\', 2007895497, (\'any\',)), layout=(\'strided\', None), readonly=False)], steps=[Step(kind=\'op\', code=\'v1 = np.bincount(a0, minlength=8)\', defines=(\'v1\',), target=None, values=\'None\', reads=(\'a0\',), op=\'bincount\', operand=\'a0\', arrays=\'()\', tags=(), target_pos=None), Step(kind=\'op\', code="v2 = OP[\'scipy.signal.lfilter\']([0.25, 0.5, 0.125], [1.0, -0.4, 0.2], a0)", defines=(\'v2\',), target=None, values=\'None\', reads=(\'a0\',), op=\'scipy.signal.lfilter\', operand=\'a0\', arrays=\'()\', tags=(), target_pos=None), Step(kind=\'create\', code="c3 = np.zeros((12,), dtype=np.dtype(\'float64\'))", defines=(\'c3\',), target=None, values=\'None\', reads=(\'v2\',), op=None, operand=None, arrays=\'()\', tags=(), target_pos=None), Step(kind=\'write\', code=\'c3[0] = a1\', defines=(), target=\'c3\', values=\'(a1,)\', reads=(\'c3\', \'a1\'), op=None, operand=None, arrays=\'()\', tags=(\'setitem\', \'basic\'), target_pos=None), Step(kind=\'op\', code="v4 = np.histogram(a0, bins=\'auto\')", defines=(\'v4\',), target=None, values=\'None\', reads=(\'a0\',), op=\'histogram\', operand=\'a0\', arrays=\'()\', tags=(), target_pos=None), Step(kind=\'create\', code=\'v5 = v4[0]\\nv6 = v4[1]\', defines=(\'v5\', \'v6\'), target=None, values=\'None\', reads=(\'v4\',), op=None, operand=None, arrays=\'()\', tags=(), target_pos=None), Step(kind=\'op\', code="v7 = OP[\'add.reduceat\'](v1, [0, 4, 1, 5])", defines=(\'v7\',), target=None, values=\'None\', reads=(\'v1\',), op=\'add.reduceat\', operand=\'v1\', arrays=\'()\', tags=(), target_pos=None)], outputs=[\'v7\', \'v2\', \'v5\'], out_form=\'tuple\', sizes=[2, 2], chunks=[None, None], out_axes=[(-2, 0, 2), (-2, 1, -2)], int_in_axes=[False, False], tol=0.0)',
]


@pytest.mark.parametrize("text", UNSTACKABLE_AFTER_A_CONVERSION)
def test_unstackable_rerun_after_a_conversion_raises_a_batching_error(text):
    pytest.importorskip("scipy.signal", reason="the programs call SciPy's rules (a test extra)")
    from opinfo import adversarial
    from opinfo.adversarial import Case, Input, Step

    case = eval(text, {"Case": Case, "Input": Input, "Step": Step,  # noqa: S307 (our repr)
                       "dtype": np.dtype})
    outcome = adversarial.check(case)
    assert outcome.ok, outcome.message


# np.pad with a batched constant NaN (or infinity) into an integer array: np.pad writes each
# value as a scalar, which raises there; vmap cast the values and returned garbage integers.
def test_pad_raises_for_a_nan_constant_into_integers_as_the_loop():
    a = np.array([-4, -9, 7, 0], dtype=np.int32)
    f = lambda c: np.pad(a, 2, constant_values=c)  # noqa: E731
    finite = np.array([-1.5, -4.0])
    assert_same(bt.vmap(f, fallback="error")(finite), loop_vmap(f)(finite))
    for bad in (np.array([-1.5, np.nan]), np.array([np.inf, 2.0])):
        _raises_as_the_loop(f, bad)
    g = lambda c: np.pad(a, (0, 2), constant_values=c)  # noqa: E731  (the NaN is written)
    _raises_as_the_loop(g, np.array([[np.nan, 1.0], [2.0, 3.0]]))


# np.median and the quantiles over several axes of a batch of no example: NumPy reshapes the
# batch with -1, which fails at size 0, where the loop has nothing to compute.
@pytest.mark.parametrize("op", [np.median, np.nanmedian, lambda x, axis: np.quantile(x, 0.3,
                                                                                    axis=axis)])
def test_several_axes_of_no_example(op):
    xs = np.zeros((0, 2, 3, 4))
    got = bt.vmap(lambda x: op(x, axis=(0, 2)), fallback="error")(xs)
    assert got.shape == (0, 3) and got.dtype == np.float64
    out = np.zeros((0, 3))
    bt.vmap(lambda x, o: np.median(x, axis=(0, 2), out=o), fallback="error")(xs, out)


# x.dtype = t of another itemsize in a nested vmap over no example: the check that one example
# may change its dtype used the strides of the empty batch, which say nothing of an example
# (NumPy refused: "the last axis must be contiguous"); the loop has no example to refuse.
DTYPE_CHANGE_OF_NO_EXAMPLE = 'Case(inputs=[Input(name=\'a0\', shape=(3, 4), dtype=dtype(\'float64\'), axes=[3, 0], source=(\'sample\', \'ndarray.dtype.set\', \'float64\', 0, 0, 1), layout=(\'perm\', (3, 2, 0, 1)), readonly=False), Input(name=\'a1\', shape=(4,), dtype=dtype(\'float64\'), axes=[0, 0], source=(\'sample\', \'ufunc.add.out\', \'float64\', 1, 0, 3), layout=(\'C\', None), readonly=False), Input(name=\'a2\', shape=(4,), dtype=dtype(\'float64\'), axes=[0, -2], source=(\'sample\', \'ufunc.add.out\', \'float64\', 1, 1, 3), layout=(\'C\', None), readonly=False)], steps=[Step(kind=\'op\', code="v1 = OP[\'ndarray.dtype.set\'](a0, np.int32)", defines=(\'v1\',), target=None, values=\'None\', reads=(\'a0\',), op=\'ndarray.dtype.set\', operand=\'a0\', arrays=\'()\', tags=(), target_pos=None), Step(kind=\'op\', code=\'v2 = np.add(a1, a2, out=a0)\', defines=(\'v2\',), target=None, values=\'None\', reads=(\'a1\', \'a2\', \'a0\'), op=\'ufunc.add.out\', operand=\'a1\', arrays=\'(a1, a2, a0)\', tags=(), target_pos=2)], outputs=[\'v2\', \'a2\'], out_form=\'tuple\', sizes=[1, 0], chunks=[2, None], out_axes=[0, (-2, -2)], int_in_axes=[False, True], tol=0.0)'


def test_dtype_change_of_no_example_in_a_nested_vmap():
    from opinfo import adversarial
    from opinfo.adversarial import Case, Input, Step

    case = eval(DTYPE_CHANGE_OF_NO_EXAMPLE, {"Case": Case, "Input": Input,  # noqa: S307
                                             "Step": Step, "dtype": np.dtype})
    outcome = adversarial.check(case)
    assert outcome.ok, outcome.message


# np.nanstd(x, mean=m) over several axes of a batch of no example: the stand-in of one example
# that gives the result's shape got the batch's mean=, of no example (NumPy: "non-broadcastable
# output operand"); the loop has nothing to compute.
@pytest.mark.parametrize("op", [np.nanstd, np.nanvar, np.var, np.std])
def test_a_mean_of_no_example(op):
    xs, means = np.zeros((0, 3, 4)), np.zeros((0, 1, 1))
    got = bt.vmap(lambda x, m: op(x, mean=m, ddof=1), fallback="error")(xs, means)
    assert got.shape == (0,) and got.dtype == np.float64
    where = np.ones((0, 3, 4), bool)
    got = bt.vmap(lambda x, w: op(x, where=w), fallback="error")(xs, where)
    assert got.shape == (0,)


# np.percentile of a complex array with a batched q of 3 dims: NumPy refuses the complex
# array first (TypeError), the rule refused the q first (ValueError).
def test_percentile_refuses_a_complex_array_before_the_q():
    a = np.ones((2, 5), complex)
    q = np.full((2, 2, 2, 2), 30.0)
    with pytest.raises(TypeError, match="real numbers"):
        np.percentile(a[0], q[0])
    with pytest.raises(TypeError, match="real numbers"):
        bt.vmap(np.percentile)(a, q)


# mean() of 0-d masked arrays, examples masked by np.True_ / np.False_: np.False_ *is*
# np.ma.nomask, and numpy.ma's mean of a 0-d array without a mask masks a non-finite value,
# where the batch (a mask of both) kept it: such a batch reruns per example.
def test_mean_of_0d_masked_arrays_some_without_a_mask():
    x, m = np.array([2.0, -np.inf]), np.array([True, False])
    f = lambda x, m: np.ma.getmaskarray(np.ma.array(x, mask=m).mean())  # noqa: E731
    want = np.stack([f(a, b) for a, b in zip(x, m)])
    with pytest.warns(bt.PerformanceWarning, match="reruns once per example"):
        np.testing.assert_array_equal(bt.vmap(f)(x, m), want)
    finite = np.array([2.0, -1.5])  # where the paths agree: vectorised
    got = bt.vmap(lambda x, m: np.ma.array(x, mask=m).mean(), fallback="error")(finite, m)
    assert np.ma.getmaskarray(got).tolist() == [True, False] and got[1] == -1.5


# np.ma.filled(m) of examples none of which holds a masked element is each example's data
# itself (writeable where it is): the batch's was made read-only, as if it were a copy.
def test_filled_without_masked_elements_is_the_data():
    def f(x, m):
        d = np.ma.filled(np.ma.array(x, mask=m), -2.0)
        d[0] = 7.0  # reaches x, as in the loop
        return x

    xs, ms = np.ones((2, 3)), np.zeros((2, 3), bool)
    got = bt.vmap(f, fallback="error")(xs.copy(), ms)
    np.testing.assert_array_equal(got, np.stack([f(x, m) for x, m in zip(xs.copy(), ms)]))


# scipy.signal.lfilter of an FIR filter (a == [1.0]) goes through np.apply_along_axis, which
# refuses a batch of no example; the loop over no example gives an empty result.
@pytest.mark.parametrize("chunk_size", [None, 3])
def test_fir_lfilter_of_no_example(chunk_size):
    signal = pytest.importorskip("scipy.signal", reason="the rule is for scipy.signal")
    x = np.zeros((0, 8), np.float32)
    f = lambda v: signal.lfilter([1.0, 2.0], [1.0], v)  # noqa: E731
    got = bt.vmap(f, chunk_size=chunk_size, fallback="error")(x)
    one = f(np.zeros(8, np.float32))
    assert got.shape == (0, 8) and got.dtype == one.dtype


# np.put_along_axis(axis=None) into a value made inside f, in nested vmaps of no example: the
# dry run that lets NumPy raise its own errors took the empty batch's strides for a layout that
# is not C contiguous, and NumPy refuses to write through the flat copy of such an example.
def test_put_along_axis_flat_into_a_new_value_of_no_example():
    def f(a, b, i, v):
        c = np.hstack([a, b])
        np.put_along_axis(c, i, v, None)
        return c

    a, b = np.zeros((0, 0, 3), np.int32), np.zeros((3, 0, 0), np.int32)
    i, v = np.zeros((0, 3, 0), np.int64), np.zeros((3, 0), np.int32)[::-1]
    inner = bt.vmap(f, in_axes=(0, 1, -2, None), chunk_size=1)
    got = bt.vmap(inner, in_axes=(0, 2, 2, 1), chunk_size=3)(a, b, i, v)
    assert got.shape == (0, 0, 6) and got.dtype == np.int32


#: programs of tests/test_adversarial_backlog.py that fixes resolved (each says which)
FROM_THE_BACKLOG = [
    # np.dot / multi_dot with a non-contiguous out= that NumPy refuses per example: the trial
    # pass for writes into unmapped arguments ran on compact copies of every array argument,
    # on which NumPy's check passed (api._same_layout_copy keeps the strides now)
    ('the loop raises ValueError: output array is not acceptable (must have the right datatype, number of ',
     "Case(inputs=[Input(name='a0', shape=(2, 3), dtype=dtype('float64'), axes=[0], source=('sample', 'linalg.multi_dot.out', 'float64', 0, 0, 4), layout=('C', None), readonly=False), Input(name='a1', shape=(3, 4), dtype=dtype('float64'), axes=[0], source=('sample', 'linalg.multi_dot.out', 'float64', 0, 1, 4), layout=('neg', (2,)), readonly=False), Input(name='a2', shape=(4, 2), dtype=dtype('float64'), axes=[None], source=('sample', 'linalg.multi_dot.out', 'float64', 0, 2, 4), layout=('C', None), readonly=False), Input(name='a3', shape=(2, 2), dtype=dtype('float64'), axes=[0], source=('sample', 'linalg.multi_dot.out', 'float64', 0, 3, 4), layout=('neg', (1, 2)), readonly=False)], steps=[Step(kind='op', code='v1 = np.linalg.multi_dot([a0, a1, a2], out=a3)', defines=('v1',), target=None, values='None', reads=('a0', 'a1', 'a2', 'a3'), op='linalg.multi_dot.out', operand='a0', arrays='(a0, a1, a2, a3)', tags=(), target_pos=3)], outputs=['a3'], out_form='single', sizes=[3], chunks=['auto'], out_axes=[2], int_in_axes=[True], tol=0.0)"),
    ('the loop raises ValueError: output array is not acceptable (must have the right datatype, number of ',
     "Case(inputs=[Input(name='a0', shape=(2, 3), dtype=dtype('float64'), axes=[0], source=('sample', 'linalg.multi_dot.out', 'float64', 0, 0, 4), layout=('C', None), readonly=False), Input(name='a1', shape=(3, 4), dtype=dtype('float64'), axes=[0], source=('sample', 'linalg.multi_dot.out', 'float64', 0, 1, 4), layout=('neg', (2,)), readonly=False), Input(name='a2', shape=(4, 2), dtype=dtype('float64'), axes=[None], source=('sample', 'linalg.multi_dot.out', 'float64', 0, 2, 4), layout=('C', None), readonly=False), Input(name='a3', shape=(2, 2), dtype=dtype('float64'), axes=[0], source=('sample', 'linalg.multi_dot.out', 'float64', 0, 3, 4), layout=('neg', (1, 2)), readonly=False)], steps=[Step(kind='op', code='v1 = np.linalg.multi_dot([a0, a1, a2], out=a3)', defines=('v1',), target=None, values='None', reads=('a0', 'a1', 'a2', 'a3'), op='linalg.multi_dot.out', operand='a0', arrays='(a0, a1, a2, a3)', tags=(), target_pos=3)], outputs=['a3'], out_form='single', sizes=[3], chunks=['auto'], out_axes=[2], int_in_axes=[True], tol=0.0)"),
    ('the loop raises ValueError: output array is not acceptable (must have the right datatype, number of ',
     "Case(inputs=[Input(name='a0', shape=(3, 4), dtype=dtype('int64'), axes=[0, 0], source=('sample', 'dot.out', 'int64', 1, 0, 1), layout=('strided', None), readonly=True), Input(name='a1', shape=(4,), dtype=dtype('int64'), axes=[None, None], source=('sample', 'dot.out', 'int64', 1, 1, 1), layout=('C', None), readonly=False), Input(name='a2', shape=(3,), dtype=dtype('int64'), axes=[2, 0], source=('sample', 'dot.out', 'int64', 1, 2, 1), layout=('C', None), readonly=False)], steps=[Step(kind='op', code='v1 = np.dot(a0, a1, out=a2)', defines=('v1',), target=None, values='None', reads=('a0', 'a1', 'a2'), op='dot.out', operand='a0', arrays='(a0, a1, a2)', tags=(), target_pos=2)], outputs=['a1'], out_form='single', sizes=[2, 3], chunks=[1, 3], out_axes=[-3, -2], int_in_axes=[False, False], tol=0.0)"),
    ('the loop raises ValueError: output array is not acceptable (must have the right datatype, number of ',
     "Case(inputs=[Input(name='a0', shape=(3, 4), dtype=dtype('int64'), axes=[0, 0], source=('sample', 'dot.out', 'int64', 0, 0, 1), layout=('strided', None), readonly=True), Input(name='a1', shape=(4, 2), dtype=dtype('int64'), axes=[None, None], source=('sample', 'dot.out', 'int64', 0, 1, 1), layout=('C', None), readonly=False), Input(name='a2', shape=(3, 2), dtype=dtype('int64'), axes=[3, 0], source=('sample', 'dot.out', 'int64', 0, 2, 1), layout=('C', None), readonly=False)], steps=[Step(kind='op', code='v1 = np.dot(a0, a1, out=a2)', defines=('v1',), target=None, values='None', reads=('a0', 'a1', 'a2'), op='dot.out', operand='a0', arrays='(a0, a1, a2)', tags=(), target_pos=2)], outputs=['a1'], out_form='single', sizes=[2, 3], chunks=[1, 3], out_axes=[-4, -3], int_in_axes=[False, False], tol=0.0)"),
    ('the loop raises ValueError: output array is not acceptable (must have the right datatype, number of ',
     "Case(inputs=[Input(name='a0', shape=(3, 4), dtype=dtype('int64'), axes=[0, 0], source=('sample', 'dot.out', 'int64', 0, 0, 1), layout=('strided', None), readonly=True), Input(name='a1', shape=(4, 2), dtype=dtype('int64'), axes=[None, None], source=('sample', 'dot.out', 'int64', 0, 1, 1), layout=('C', None), readonly=False), Input(name='a2', shape=(3, 2), dtype=dtype('int64'), axes=[3, 0], source=('sample', 'dot.out', 'int64', 0, 2, 1), layout=('C', None), readonly=False)], steps=[Step(kind='op', code='v1 = np.dot(a0, a1, out=a2)', defines=('v1',), target=None, values='None', reads=('a0', 'a1', 'a2'), op='dot.out', operand='a0', arrays='(a0, a1, a2)', tags=(), target_pos=2)], outputs=['a1'], out_form='single', sizes=[2, 3], chunks=[1, 3], out_axes=[-4, -3], int_in_axes=[False, False], tol=0.0)"),
    # the dry run of put_along_axis(axis=None) into the result of operator.mod, in nested vmaps
    # whose outer batch has no example (the put_along_axis fix above)
    ('vmap raised ValueError: assignment destination is read-only (at step 2); the loop returns a result',
     'Case(inputs=[Input(name=\'a0\', shape=(3, 4), dtype=dtype(\'float64\'), axes=[0, 0], source=(\'sample\', \'ufunc.isinf.out\', \'float64\', 0, 0, 0), layout=(\'neg\', (2,)), readonly=False), Input(name=\'a1\', shape=(3, 4), dtype=dtype(\'bool\'), axes=[0, 0], source=(\'sample\', \'ufunc.isinf.out\', \'float64\', 0, 1, 0), layout=(\'C\', None), readonly=False), Input(name=\'a2\', shape=(2, 3), dtype=dtype(\'uint8\'), axes=[0, 0], source=(\'sample\', \'operator.mod\', \'uint8\', 9, 0, 3), layout=(\'C\', None), readonly=False), Input(name=\'a3\', shape=(2,), dtype=dtype(\'int64\'), axes=[2, -1], source=(\'sample\', \'put_along_axis.inplace\', \'uint8\', 6, 1, 4), layout=(\'C\', None), readonly=False), Input(name=\'a4\', shape=(), dtype=dtype(\'uint8\'), axes=[1, 0], source=(\'sample\', \'put_along_axis.inplace\', \'uint8\', 6, 2, 4), layout=(\'C\', None), readonly=False), Input(name=\'a5\', shape=(5,), dtype=dtype(\'float64\'), axes=[0, -2], source=(\'sample\', \'nanargmax\', \'float64\', 11, 0, 0), layout=(\'C\', None), readonly=False)], steps=[Step(kind=\'op\', code=\'v1 = np.isinf(a0, out=a1)\', defines=(\'v1\',), target=None, values=\'None\', reads=(\'a0\', \'a1\'), op=\'ufunc.isinf.out\', operand=\'a0\', arrays=\'(a0, a1)\', tags=(), target_pos=1), Step(kind=\'op\', code="v2 = OP[\'operator.mod\'](a2, True)", defines=(\'v2\',), target=None, values=\'None\', reads=(\'a2\',), op=\'operator.mod\', operand=\'a2\', arrays=\'()\', tags=(), target_pos=None), Step(kind=\'op\', code=\'v3 = np.put_along_axis(v2, a3, a4, None)\', defines=(\'v3\',), target=None, values=\'None\', reads=(\'v2\', \'a3\', \'a4\'), op=\'put_along_axis.inplace\', operand=\'v2\', arrays=\'(v2, a3, a4)\', tags=(), target_pos=0), Step(kind=\'op\', code=\'v4 = np.nanargmax(a5, axis=0, keepdims=True)\', defines=(\'v4\',), target=None, values=\'None\', reads=(\'a5\',), op=\'nanargmax\', operand=\'a5\', arrays=\'()\', tags=(), target_pos=None)], outputs=[\'v4\'], out_form=\'tuple\', sizes=[0, 2], chunks=[None, None], out_axes=[-3, -1], int_in_axes=[True, True], tol=0.0)'),
    ('vmap raised ValueError: assignment destination is read-only (at step 2); the loop returns a result',
     'Case(inputs=[Input(name=\'a0\', shape=(3, 4), dtype=dtype(\'float64\'), axes=[0, -1], source=(\'sample\', \'ufunc.isinf.out\', \'float64\', 0, 0, 5), layout=(\'C\', None), readonly=False), Input(name=\'a1\', shape=(3, 4), dtype=dtype(\'bool\'), axes=[0, 0], source=(\'sample\', \'ufunc.isinf.out\', \'float64\', 0, 1, 5), layout=(\'F\', None), readonly=False), Input(name=\'a2\', shape=(2, 3), dtype=dtype(\'uint8\'), axes=[3, -3], source=(\'sample\', \'operator.mod\', \'uint8\', 9, 0, 3), layout=(\'C\', None), readonly=False), Input(name=\'a3\', shape=(2,), dtype=dtype(\'int64\'), axes=[0, 0], source=(\'sample\', \'put_along_axis.inplace\', \'uint8\', 6, 1, 0), layout=(\'perm\', (2, 0, 1)), readonly=False), Input(name=\'a4\', shape=(), dtype=dtype(\'uint8\'), axes=[1, -1], source=(\'sample\', \'put_along_axis.inplace\', \'uint8\', 6, 2, 0), layout=(\'strided\', None), readonly=False), Input(name=\'a5\', shape=(5,), dtype=dtype(\'float64\'), axes=[1, 0], source=(\'sample\', \'nanargmax\', \'float64\', 11, 0, 1), layout=(\'strided\', None), readonly=False)], steps=[Step(kind=\'op\', code=\'v1 = np.isinf(a0, out=a1)\', defines=(\'v1\',), target=None, values=\'None\', reads=(\'a0\', \'a1\'), op=\'ufunc.isinf.out\', operand=\'a0\', arrays=\'(a0, a1)\', tags=(), target_pos=1), Step(kind=\'op\', code="v2 = OP[\'operator.mod\'](a2, True)", defines=(\'v2\',), target=None, values=\'None\', reads=(\'a2\',), op=\'operator.mod\', operand=\'a2\', arrays=\'()\', tags=(), target_pos=None), Step(kind=\'op\', code=\'v3 = np.put_along_axis(v2, a3, a4, None)\', defines=(\'v3\',), target=None, values=\'None\', reads=(\'v2\', \'a3\', \'a4\'), op=\'put_along_axis.inplace\', operand=\'v2\', arrays=\'(v2, a3, a4)\', tags=(), target_pos=0), Step(kind=\'op\', code=\'v4 = np.nanargmax(a5, axis=0, keepdims=True)\', defines=(\'v4\',), target=None, values=\'None\', reads=(\'a5\',), op=\'nanargmax\', operand=\'a5\', arrays=\'()\', tags=(), target_pos=None)], outputs=[\'v4\', \'a0\'], out_form=\'dict\', sizes=[0, 2], chunks=[2, \'auto\'], out_axes=[(1, -3), (-2, 2)], int_in_axes=[False, False], tol=0.0)'),
]


@pytest.mark.parametrize("message, text", FROM_THE_BACKLOG)
def test_programs_from_the_backlog(message, text):
    from opinfo import adversarial
    from opinfo.adversarial import Case, Input, Step

    case = eval(text, {"Case": Case, "Input": Input, "Step": Step,  # noqa: S307 (our own repr)
                       "dtype": np.dtype})
    outcome = adversarial.check(case)
    assert outcome.ok, outcome.message


# np.copyto of a read-only 0-d view onto itself: NumPy copies an n-d array onto itself without
# looking at its flags, but refuses a read-only 0-d destination whatever the source; the batch
# of 0-d examples is 1-d, so NumPy let it pass.
def test_copyto_into_a_read_only_0d_view_of_itself():
    a = np.arange(15).reshape(5, 3)
    a.flags.writeable = False

    def f(x):
        v = x[..., -2]
        np.copyto(v, v)
        return v

    with pytest.raises(ValueError, match="read-only"):
        f(a[0])
    with pytest.raises(ValueError, match="read-only"):
        bt.vmap(f)(a)
    rows = np.arange(6.0).reshape(2, 3)
    rows.flags.writeable = False  # n-d examples onto themselves: NumPy lets it pass, per example
    g = lambda x: (np.copyto(x, x), x)[1]  # noqa: E731
    np.testing.assert_array_equal(bt.vmap(g)(rows), np.stack([g(r) for r in rows]))


# np.linalg.multi_dot(..., out=o) where each example of the mapped `o` is not C contiguous:
# NumPy refuses such an out= per example, but the trial pass for writes into unmapped arguments
# ran on compact copies of every array argument, on which NumPy's check passed.
def test_dot_into_a_non_contiguous_mapped_out_raises_as_the_loop():
    rng = np.random.default_rng(0)
    a, b, c = rng.normal(size=(4, 2, 3)), rng.normal(size=(4, 3, 4)), rng.normal(size=(4, 2))
    out = np.zeros((4, 2, 2, 2))[..., 0]  # examples with a gap between elements

    def f(a, b, c, o):
        return np.linalg.multi_dot([a, b, c], out=o)

    with pytest.raises(ValueError, match="not acceptable"):
        f(a[0], b[0], c, out[0])
    with pytest.raises(ValueError, match="not acceptable"):
        bt.vmap(f, in_axes=(0, 0, None, 0))(a, b, c, out)
    fine = np.zeros((4, 2, 2))
    got = bt.vmap(f, in_axes=(0, 0, None, 0))(a, b, c, fine)
    np.testing.assert_allclose(got, np.stack([a[i] @ b[i] @ c for i in range(4)]))
    np.testing.assert_allclose(fine, got)  # written into the caller's array, as the loop does


# The trial pass for writes into unmapped arguments copies the array arguments keeping their
# strides; an object array cannot be rebuilt in a byte buffer, so it is copied compact.
def test_unmapped_writes_beside_a_strided_object_argument():
    xs = np.empty((3, 4), dtype=object)
    xs[...] = 1.5
    xs = xs[:, ::2]

    def f(x, acc):
        acc[0] += 1.0
        return x * 2

    acc = np.zeros(1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", bt.PerformanceWarning)
        got = bt.vmap(f, in_axes=(0, None))(xs, acc)
    loop_acc = np.zeros(1)
    want = np.stack([f(x, loop_acc) for x in xs])
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(acc, loop_acc)


# An in-place operator on a batched read-only value (np.ma.getdata of an unmapped argument,
# through the OpInfo's wrapper) with no example: the loop runs none and writes nothing; vmap
# raised NumPy's "output array is read-only" from the operator's fast path.
def test_inplace_operator_with_no_example_writes_nothing():
    from opinfo import BY_NAME

    getdata = BY_NAME["ma.getdata"].op

    def f(a0, a1, a2):
        v1 = getdata(a0, a1)
        v1 /= a2
        return (v1,)

    a0 = np.array([0.18, -0.51, 0.04, 0.54, -3.99, -0.26])
    a2 = np.ones((0, 6))[:, ::-1]  # (negative strides, as found)
    (got,) = bt.vmap(f, in_axes=(None, 0, 0), out_axes=-2, chunk_size=3)(
        a0, np.ones((0, 6), bool), a2)
    assert got.shape == (0, 6) and got.dtype == np.float64
    np.testing.assert_array_equal(a0, [0.18, -0.51, 0.04, 0.54, -3.99, -0.26])


# scipy.ndimage's one-axis filters check the input's dtype before the axis: a 0-d complex
# example raises SciPy's TypeError in the loop, and the rule's axis check raised an AxisError
def test_one_axis_filter_of_a_0d_complex_example_raises_scipy_s_error():
    ndimage = pytest.importorskip("scipy.ndimage", reason="the SciPy rules need the scipy extra")

    def f(a):
        ndimage.minimum_filter1d(a, 2)
        return a

    xs = np.array([1 - 2j, 3 + 1j], np.complex64)
    with pytest.raises(TypeError, match="Complex type not supported"):
        loop_vmap(f)(xs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", bt.PerformanceWarning)
        with pytest.raises(TypeError, match="Complex type not supported"):
            bt.vmap(f)(xs)


# A boolean selection with no examples at an outer level: its per-example counts reshaped the
# mask to (0, -1), which NumPy cannot resolve for an empty array (scipy's apply_where, nested)
def test_a_mask_selection_with_no_outer_examples():
    def f(m, x):
        return x[m].sum()

    ms, xs = np.zeros((0, 3, 2), bool), np.zeros((0, 3, 2))
    got = bt.vmap(bt.vmap(f))(ms, xs)
    assert got.shape == (0, 3) and got.dtype == np.float64
    ms, xs = np.zeros((0, 3), bool), np.zeros((0, 3))
    got = bt.vmap(bt.vmap(f))(ms, xs)
    assert got.shape == (0, 3) and got.dtype == np.float64


# SciPy's real transforms return `xp.asarray(y)` through the array-api namespace, whose makers
# make buffers while a pass runs: for an empty batch `y` has no element, so np.may_share_memory
# said the result was new memory, and the rule's result was a buffer that escaped vmap as its
# output (found as dct, then np.ma.divide of masked arrays of it, with batch size 0)
@pytest.mark.parametrize("name", ["dct", "idct", "dst", "idst", "dctn", "idstn"])
def test_a_scipy_transform_of_an_empty_batch_gives_an_array(name):
    fft = pytest.importorskip("scipy.fft", reason="the SciPy rules need the scipy extra")

    def f(x, m):  # (the transform looked up when called, as `scipy.fft.dct(x)` in code is)
        y = getattr(fft, name)(x, norm="ortho")
        return np.ma.getdata(np.ma.array(y, mask=m))

    m = np.array([True, False, False, True, False, False])
    for size in (1, 3):
        xs = np.arange(size * 6.0).reshape(size, 6) ** 1.5
        got, want = _both(f, xs, m, in_axes=(0, None), out_axes=1)
        assert type(got) is np.ndarray
        assert_same(got, want)
    got = bt.vmap(f, in_axes=(0, None), out_axes=1)(np.zeros((0, 6)), m)
    assert type(got) is np.ndarray and got.shape == (6, 0) and got.dtype == np.float64


# np.array(x, copy=None) of an array with no element is that array, as in the loop, not a buffer
# (the test above's cause, in the function's own module)
def test_an_uncopied_array_with_no_element_is_the_array_itself():
    w = np.zeros((0, 2))

    def f(x):
        y = np.array(w, copy=None)
        return x + (y is w) + (np.asarray(w) is w)

    with bt.config(lean_passes=False):  # (a lean pass makes plain arrays: no buffer)
        got, want = _both(f, np.arange(3.0))
    assert_same(got, want)
    assert_same(got, np.arange(3.0) + 2)
