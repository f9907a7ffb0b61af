"""Memory behaviour under layouts, against the per-example loop over views of the same array.

Each test builds two copies of one physical layout, runs the loop over the views a user's
``for x in np.moveaxis(xs, ax, 0)`` gets and ``bt.vmap`` over the other, and compares what
the loop shows: the values, the exception type, whether a write into a result raises, and
whether it reaches the input. These are the regressions of the OpInfo sweep's layout / alias
dimension (``opinfo/sweep.py``), one per fixed rule.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import batchtensor as bt


def read_only(a):
    a = np.array(a)
    a.flags.writeable = False
    return a


def run(f):
    """(result, None) or (None, exception type)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return f(), None
    except Exception as e:  # noqa: BLE001  (the loop's exception type is the expectation)
        return None, type(e)


def per_example(xs, ax):
    """The examples of ``xs`` as the loop sees them: views (NumPy scalars for 0-d)."""
    front = np.moveaxis(xs, ax, 0)
    return [front[i] for i in range(front.shape[0])]


def loop(f, args, in_axes):
    cols = [per_example(a, ax) if ax is not None else [a] * 99 for a, ax in zip(args, in_axes)]
    n = min(len(c) for c in cols)
    outs = [f(*[c[i] for c in cols]) for i in range(n)]
    if isinstance(outs[0], tuple):
        return tuple(np.stack(o) for o in zip(*outs))
    return np.stack(outs)


def same(f, make, in_axes):
    """f under vmap and in the loop, each over its own ``make()`` arrays: the same values (or
    exception type), and the inputs the same afterwards."""
    a_loop, a_vmap = make(), make()
    want, want_exc = run(lambda: loop(f, a_loop, in_axes))
    got, got_exc = run(lambda: bt.vmap(f, in_axes=in_axes)(*a_vmap))
    assert got_exc is want_exc, (got_exc, want_exc)
    if want_exc is None:
        for g, w in zip(got if isinstance(got, tuple) else (got,),
                        want if isinstance(want, tuple) else (want,)):
            np.testing.assert_array_equal(g, w)
    for g, w in zip(a_vmap, a_loop):
        np.testing.assert_array_equal(g, w)
    return got, want_exc


def write_into(o):
    """Write into ``o`` (a value other than its own everywhere); None or the exception type."""
    try:
        o[...] = np.where(o == 1, 0, 1).astype(o.dtype)
        return None
    except Exception as e:  # noqa: BLE001
        return type(e)


# ---- ufunc out= -----------------------------------------------------------------------------
def test_read_only_strided_out_raises_the_read_only_error_before_the_casting_error():
    # The batch axis of `out` is its last: moved to the front, the out is neither C nor F
    # contiguous, and the ufunc wrote into a contiguous stand-in, whose casting error came first.
    def make():
        rng = np.random.default_rng(0)
        return rng.normal(size=(4, 3, 2)), read_only(rng.integers(0, 9, size=(3, 2, 4)))

    _, exc = same(lambda x, out: np.add(x, x, out=out), make, (0, 2))
    assert exc is ValueError


# ---- ravel: decided on the strides the loop's example has -----------------------------------
def _ravel_then_write(order):
    def f(x):
        r = np.ravel(x, order)
        values = r.copy()
        r[...] = -1.0  # reaches x exactly where the ravel is a view
        return values
    return f


@pytest.mark.parametrize("order", ["C", "F", "A", "K"])
@pytest.mark.parametrize("layout, in_axes", [("F", 0), ("C", 2), ("C", 1)])
def test_ravel_of_an_input_whose_batch_axis_is_inside_memory(order, layout, in_axes):
    # The loop's examples are views of the caller's array: with the batch axis innermost
    # (np.asfortranarray(xs)[i]) or in the middle, no example is contiguous, so NumPy's ravel
    # copies, and 'A' is C order. The rule judged the example as if stored on its own.
    def make():
        xs = np.random.default_rng(2).normal(size=(4, 3, 5))
        phys = np.moveaxis(xs, 0, in_axes)
        return (np.asfortranarray(phys) if layout == "F" else np.ascontiguousarray(phys),)

    same(_ravel_then_write(order), make, (in_axes,))


@pytest.mark.parametrize("order", ["C", "F", "A", "K"])
def test_ravel_of_a_value_computed_from_such_an_input(order):
    # Each example of x * 1.0 owns its memory in the loop (F contiguous, following x's layout);
    # the batch holds the examples interleaved, and the rule judges one as stored on its own.
    def f(x):
        base = x * 1.0
        flat = np.ravel(base, order)
        base[...] = 0.0  # shows through the ravel exactly where it is a view
        return flat

    def make():
        return (np.asfortranarray(np.random.default_rng(3).normal(size=(4, 3, 5))),)

    same(f, make, (0,))


def same_writes(f, make, in_axes):
    """``same`` for ``f`` followed by a write into its result: the write raises (with the same
    exception type) in the loop exactly where it does under vmap, and reaches the inputs alike."""
    log = []

    def g(*args):
        r = f(*args)
        before = np.copy(r)
        log.append(write_into(r))
        return before

    got, exc = same(g, make, in_axes)
    assert exc is None, exc
    assert len(set(log)) == 1, f"the loop's writes {log[:-1]}, vmap's {log[-1]}"
    return log[0]


# ---- arrays made from a scalar example -------------------------------------------------------
_FROM_SCALAR = {  # name -> (f, what writing into the result raises in NumPy)
    "reshape": (lambda z: np.reshape(z, (1, 1)), None),
    "atleast_1d": (np.atleast_1d, None),
    "atleast_2d": (np.atleast_2d, None),
    "atleast_3d": (np.atleast_3d, None),
    "expand_dims": (lambda z: np.expand_dims(z, 0), None),
    "ravel": (np.ravel, None),
    "z[None]": (lambda z: z[None], None),
    "z[...]": (lambda z: z[...], None),
    "broadcast_to": (lambda z: np.broadcast_to(z, (2,)), ValueError),
}


@pytest.mark.parametrize("name", list(_FROM_SCALAR))
@pytest.mark.parametrize("layout", ["read-only", "broadcast"])
def test_an_array_made_from_a_scalar_example_of_a_read_only_input(name, layout):
    # Per example z is a NumPy scalar (xs[i] of a 1-d xs), which shares memory with nothing:
    # NumPy builds a new, writeable array from it (a read-only one only by np.broadcast_to).
    # The rule's view of the read-only batch was kept as it was: read-only.
    f, raises = _FROM_SCALAR[name]

    def make():
        xs = np.random.default_rng(4).normal(size=4)
        return (read_only(xs) if layout == "read-only" else np.broadcast_to(xs[:1], (4,)),)

    assert same_writes(f, make, (0,)) is raises


# ---- writes into a read-only or non-contiguous target ----------------------------------------
_R = np.random.default_rng(5)
_WRITES = {  # name -> (f, arguments per example besides the target)
    "put, nothing to put": (lambda a, i, v: np.put(a, i, v), [np.zeros((4, 3), int),
                                                           np.zeros((4, 0))]),
    "put, out of bounds": (lambda a, i, v: np.put(a, i, v), [np.full((4, 1), 9),
                                                          _R.normal(size=(4, 1))]),
    "putmask, nothing to put": (lambda a, m, v: np.putmask(a, m, v), [_R.random((4, 5)) < 0.5,
                                                                    np.zeros((4, 0))]),
    "place, nothing selected": (lambda a, m, v: np.place(a, m, v), [np.zeros((4, 5), bool),
                                                                  np.zeros((4, 0))]),
    "fill_diagonal, size 0": (lambda a: np.fill_diagonal(a, 1.0), []),
    "x[bad mask] = v": (lambda a, m: a.__setitem__(m, 1.0), [np.ones((4, 3), bool)]),
    "x[9] = v": (lambda a: a.__setitem__(9, 1.0), []),
}


@pytest.mark.parametrize("name", list(_WRITES))
@pytest.mark.parametrize("layout", ["read-only", "broadcast"])
def test_a_write_into_a_read_only_target_raises_numpys_error_first(name, layout):
    # NumPy checks that the destination is writeable before anything else, also where it
    # would write nothing; the rules' dry runs used a writeable stand-in.
    f, others = _WRITES[name]

    def make():
        xs = np.random.default_rng(6).normal(size=(4, 0, 3) if "size 0" in name else (4, 5))
        target = read_only(xs) if layout == "read-only" else np.broadcast_to(xs[:1], xs.shape)
        return (target, *[np.copy(o) for o in others])

    _, exc = same(f, make, (0,) * (1 + len(others)))
    assert exc is ValueError


@pytest.mark.parametrize("layout", ["C", "F", "transposed", "negative"])
def test_put_along_axis_without_axis_writes_only_into_a_c_contiguous_example(layout):
    # With axis=None NumPy writes through np.array(arr.flat): the example itself where it is C
    # contiguous, else a read-only copy, and the write raises.
    def make():
        xs = np.random.default_rng(7).normal(size=(4, 3, 5))
        phys = {"C": xs, "F": np.asfortranarray(xs),
                "transposed": np.ascontiguousarray(xs.transpose(0, 2, 1)).transpose(0, 2, 1),
                "negative": np.ascontiguousarray(xs[::-1, ::-1, ::-1])[::-1, ::-1, ::-1]}
        return phys[layout], np.tile([0, 7], (4, 1)), np.full((4, 2), -1.0)

    _, exc = same(lambda a, i, v: np.put_along_axis(a, i, v, None), make, (0, 0, 0))
    assert (exc is None) == (layout == "C")


# ---- 0-d results that NumPy makes arrays, not scalars ----------------------------------------
_ZERO_D_ARRAYS = {  # name -> (f of one example, the per-example shape)
    "cross of 2-vectors": (lambda a: np.cross(a, a[::-1]), (2,)),
    "fft.fftn": (lambda z: np.fft.fftn(z + 0j), ()),
    "fft.ifftn": (lambda z: np.fft.ifftn(z + 0j), ()),
    "full((), v)": (lambda a: np.full((), a[0], like=a), (3,)),
    "isin": (lambda z: np.isin(z, [0.5]), ()),
    "pad": (lambda z: np.pad(z, 2), ()),
    "real_if_close": (lambda z: np.real_if_close(z + 0j), ()),
    "resize to ()": (lambda a: np.resize(a, ()), (2, 3)),
    "tile": (lambda z: np.tile(z, ()), ()),
    "unique's inverse": (lambda z: np.unique(z, return_inverse=True)[1], ()),
    "unique_inverse": (lambda z: np.unique_inverse(z).inverse_indices, ()),
    "unique_all": (lambda z: np.unique_all(z).inverse_indices, ()),
    "median keepdims": (lambda z: np.median(z, keepdims=True), ()),
    "nanmedian keepdims": (lambda z: np.nanmedian(z, None, None, False, True), ()),
    "quantile keepdims": (lambda z: np.quantile(z, 0.5, keepdims=True), ()),
    "nanpercentile keepdims": (lambda z: np.nanpercentile(z, 50, keepdims=True), ()),
    "sliding_window_view(writeable=True)": (
        lambda z: np.lib.stride_tricks.sliding_window_view(z, (), writeable=True), ()),
}


def _cross_of_2_vectors() -> bool:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # (since NumPy 2.0)
            np.cross(np.zeros(2), np.zeros(2))
    except ValueError:
        return False
    return True


@pytest.mark.parametrize("name", [
    pytest.param(n, marks=pytest.mark.skip(reason="this NumPy (2.5) refuses 2-vectors in "
                                                  "np.cross, as vmap does"))
    if n == "cross of 2-vectors" and not _cross_of_2_vectors() else n for n in _ZERO_D_ARRAYS])
def test_a_0d_result_numpy_makes_an_array_is_writeable(name):
    # vmap treated these 0-d results as NumPy scalars, so a write into one raised a TypeError
    # where NumPy writes.
    f, shape = _ZERO_D_ARRAYS[name]

    def make():
        return (np.random.default_rng(8).normal(size=(4,) + shape),)

    assert same_writes(f, make, (0,)) is None


# ---- np.broadcast_arrays' views --------------------------------------------------------------
_BROADCASTS = {
    "broadcast_arrays[0]": (lambda x, y: np.broadcast_arrays(x, y)[0], (0, 0)),
    "broadcast_arrays[1]": (lambda x, y: np.broadcast_arrays(x, y)[1], (0, 0)),
    "broadcast_arrays, same shape": (lambda x, y: np.broadcast_arrays(x, x)[0], (0, 0)),
    "meshgrid(copy=False)[0]": (lambda x, y: np.meshgrid(x, y[:, 0], copy=False)[0], (0, 0)),
    "meshgrid(copy=False)[1]": (lambda x, y: np.meshgrid(x, y[:, 0], copy=False)[1], (0, 0)),
}


@pytest.mark.parametrize("name", list(_BROADCASTS))
@pytest.mark.parametrize("layout", ["C", "read-only"])
def test_broadcast_arrays_views_are_as_writeable_as_numpys(name, layout):
    # NumPy's broadcast_arrays returns writeable views (that warn when written) of writeable
    # arrays, and an array that already has the shape as it is; the rule made read-only
    # np.broadcast_to views.
    f, in_axes = _BROADCASTS[name]

    def make():
        rng = np.random.default_rng(9)
        x, y = rng.normal(size=(4, 3)), rng.normal(size=(4, 2, 1))
        return (read_only(x), read_only(y)) if layout == "read-only" else (x, y)

    assert same_writes(f, make, in_axes) is (ValueError if layout == "read-only" else None)


@pytest.mark.parametrize("layout", ["C", "read-only"])
def test_broadcast_arrays_view_of_a_plain_argument(layout):
    # Every example broadcasts the same y: a view of y, writeable where y is (and each
    # example's write goes to y, so it writes a constant here).
    def f(x, y):
        r = np.broadcast_arrays(x, y)[1]
        r[...] = 5.0
        return x

    def make():
        rng = np.random.default_rng(10)
        y = rng.normal(size=(2, 1))
        return rng.normal(size=(4, 3)), read_only(y) if layout == "read-only" else y

    _, exc = same(f, make, (0, None))
    assert exc is (ValueError if layout == "read-only" else None)


def test_polydiv_quotient_is_writeable():
    # The quotient is a new array in NumPy; the rule returned a read-only np.broadcast_to view.
    def make():
        rng = np.random.default_rng(11)
        return rng.normal(size=(4, 5)), rng.normal(size=(4, 2)) + 3.0

    assert same_writes(lambda u, v: np.polydiv(u, v)[0], make, (0, 0)) is None


@pytest.mark.parametrize("dtype", [np.int64, np.float64])
@pytest.mark.parametrize("layout", ["C", "read-only"])
def test_ix_of_an_empty_example_is_a_view_of_it(dtype, layout):
    # NumPy converts an empty argument to intp only when it is not an array; an example is
    # one, so its result is a view of it, of its dtype (the rule copied it to intp).
    def make():
        x = np.zeros((4, 0), dtype)
        return (read_only(x) if layout == "read-only" else x), np.ones((4, 2), int)

    got, _ = same(lambda a, b: np.ix_(a, b)[0], make, (0, 0))
    assert got.dtype == dtype
    assert same_writes(lambda a, b: np.ix_(a, b)[0], make, (0, 0)) is (
        ValueError if layout == "read-only" else None)


# ---- trim_zeros: views at a different offset per example -------------------------------------
def test_trim_zeros_at_one_offset_is_a_view_of_each_example():
    def make():
        x = np.zeros((4, 7))
        x[:, 2:5] = np.random.default_rng(12).normal(size=(4, 3))
        return (x,)

    assert same_writes(np.trim_zeros, make, (0,)) is None


def test_trim_zeros_at_different_offsets_raises_instead_of_copying():
    # NumPy returns a view of each example at its own offset; one batched array cannot be
    # those views, and the copy the rule made did not see writes into filt (nor write into it).
    x = np.zeros((3, 7))
    for i in range(3):
        x[i, 1 + i:4 + i] = 1.0 + i
    want = [np.trim_zeros(e) for e in x]
    assert all(np.shares_memory(w, x) for w in want)
    with pytest.raises(bt.BatchingError, match=r"numpy.trim_zeros: .*'filt'.*different offsets"
                       r".*np.take_along_axis"):
        bt.vmap(np.trim_zeros)(x)


def test_a_0d_sliding_window_view_is_a_read_only_array():
    # NumPy's window of a 0-d example is a 0-d read-only array: a write raises ValueError (vmap
    # treated it as a NumPy scalar: TypeError).
    def make():
        return (np.random.default_rng(13).normal(size=4),)

    f = lambda z: np.lib.stride_tricks.sliding_window_view(z, ())  # noqa: E731
    assert same_writes(f, make, (0,)) is ValueError
