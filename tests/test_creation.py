"""Creation and conversion beyond what the OpInfo sweep expresses: the calls NumPy never
dispatches (kept batched by batchtensor.conversions, and their clear errors where that is off),
view semantics of conversion, bit-exact ranges, closures in fromfunction, lists holding values
of two vmap levels. Every result is compared with the per-example loop."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from loop_reference import assert_same, loop_vmap

import batchtensor as bt
from batchtensor.rules.creation import _examples_contiguous

RNG = np.random.default_rng(1)
X = RNG.normal(size=(4, 3, 5))
Y = RNG.normal(size=(4, 3, 5))


def compare(f, *args, in_axes=0, exact=False):
    """vmap(f) against the loop on copies of the inputs: same outputs, same input mutations."""
    a = [np.copy(x) for x in args]
    b = [np.copy(x) for x in args]
    got = bt.vmap(f, in_axes)(*a)
    want = loop_vmap(f, in_axes)(*b)
    assert_same(got, want)
    if exact:  # bit for bit, NaN where NaN
        for g, w in zip(bt.pytree.flatten(got)[0], bt.pytree.flatten(want)[0]):
            assert np.array_equal(g, w, equal_nan=True), (g, w)
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)
    return got


# ---- conversion without like=: NumPy never asks; batchtensor.conversions keeps it batched -----
CONVERTERS = [np.array, np.asarray, np.asanyarray, np.ascontiguousarray, np.asfortranarray,
              np.require]
NAMES = ["array", "asarray", "asanyarray", "ascontiguousarray", "asfortranarray", "require"]


@pytest.mark.parametrize("name", NAMES)
def test_conversion_without_like_converts_each_example(name, strict):
    # looked up in numpy at call time, as library code reaches it (np.asarray(x))
    compare(lambda x: getattr(np, name)(x[1:]) * 2, X)
    compare(lambda x, y: getattr(np, name)([x[0], y[0], 1.0 + x[1]]), X, Y)


@pytest.mark.parametrize("name", NAMES)
def test_conversion_without_like_raises_with_the_fixes_when_not_intercepted(name):
    with bt.config(intercept_numpy=False, fallback="error"), \
            pytest.raises(TypeError) as info:
        bt.vmap(lambda x: getattr(np, name)(x))(X)
    msg = str(info.value)
    assert "use the value as it is" in msg
    assert "np.asarray(x, like=x)" in msg and "x.astype(dtype)" in msg


@pytest.mark.parametrize("fn", CONVERTERS, ids=lambda f: f.__name__)
def test_conversion_with_like_converts_each_example(fn, strict):
    compare(lambda x: fn(x[1:], like=x), X)


def test_list_of_batched_values_with_a_plain_like(strict):
    compare(lambda x, y: np.asarray([x, y]), X, Y)
    plain = np.zeros(1)
    with pytest.raises(TypeError, match="BatchedTensor"):  # like= a plain array: NumPy's code
        bt.vmap(lambda x, y: np.asarray([x, y], like=plain))(X, Y)
    # like= an array f created (a buffer): the call comes to batchtensor, as for like=x
    compare(lambda x, y: np.asarray([x, y], like=np.zeros(1)), X, Y)
    compare(lambda x, y: np.asarray([x, y], like=x), X, Y)
    compare(lambda x, y: np.array([[x[0, 0], 1.0], (y[1, 2], 2)], dtype=np.float32, like=y), X, Y)


def test_list_with_values_of_two_levels(strict):
    def f(x, y):
        return bt.vmap(lambda yy: np.asarray([x[0], yy[0], x[1]], like=yy))(y)

    compare(f, X, RNG.normal(size=(4, 2, 3, 5)))

    def g(x, y):  # a sub-list holding only values of the outer level
        return bt.vmap(lambda yy: np.asarray([[x[0], x[1]], [yy[0], x[2]]], like=yy))(y)

    compare(g, X, RNG.normal(size=(4, 2, 3, 5)))


def test_list_dtype_conversion_errors_as_numpy():
    # A Python scalar out of range for the requested dtype: NumPy's own OverflowError.
    with pytest.raises(OverflowError):
        bt.vmap(lambda x: np.asarray([x[0, 0], 300], dtype=np.int8, like=x))(X)


def test_asarray_with_like_is_a_view_that_writes_through(strict):
    def f(x):
        y = np.asarray(x, like=x)
        y[0] = 7.0  # writes into x, as np.asarray(example) would
        return x

    xs = np.copy(X)
    loop_in = np.copy(X)
    assert_same(bt.vmap(f)(xs), loop_vmap(f)(loop_in))
    assert (xs[:, 0] == 7).all() and (loop_in[:, 0] == 7).all()

    def g(x):
        y = np.array(x, like=x)  # copy=True: a fresh array per example
        y[0] = 7.0
        return x

    compare(g, X)


@pytest.mark.parametrize("in_axis", [0, 1, 2])
def test_ascontiguousarray_copies_only_non_contiguous_examples(in_axis, strict):
    # in_axes=0 leaves every example C-contiguous: no copy (the write reaches the input), as in
    # the loop; with the batch axis elsewhere an example is strided and gets copied, as in the
    # loop. Either way the input mutations match the loop's (compare checks them).
    def f(x):
        y = np.ascontiguousarray(x, like=x)
        y[0, 0] = -1.0
        return y

    compare(f, np.moveaxis(np.copy(X), 0, in_axis), in_axes=in_axis)


@pytest.mark.parametrize("fn, order", [(np.ascontiguousarray, "C"), (np.asfortranarray, "F"),
                                       (lambda x, like: np.asarray(x, order="F", like=like),
                                        "F"),
                                       (lambda x, like: np.require(x, None, "C", like=like),
                                        "C")])
@pytest.mark.parametrize("bdim", [0, 1, 2])
def test_ordered_conversion_makes_every_example_contiguous(fn, order, bdim):
    with bt.vmap_level():
        x = bt.BatchedTensor(np.moveaxis(np.copy(X), 0, bdim), bdim=bdim)
        y = fn(x, like=x)
        assert _examples_contiguous(y._value, y._bdim, order)
        np.testing.assert_array_equal(np.moveaxis(y._value, y._bdim, 0), X)


def _input_contiguous(a, bdim, order):
    """``_examples_contiguous`` of a vmap input: the loop's examples are views of ``a``."""
    with bt.vmap_level():
        bt.BatchedTensor(a, bdim=bdim)
        return _examples_contiguous(a, bdim, order)


def test_examples_contiguous_reads_the_strides():
    a = np.zeros((4, 3, 5))
    assert _input_contiguous(a, 0, "C") and not _input_contiguous(a, 0, "F")
    assert not _input_contiguous(a, 2, "C")
    assert _input_contiguous(np.asfortranarray(a), 2, "F")
    assert _input_contiguous(np.zeros((4, 0, 5)), 0, "F")  # size 0: contiguous either way
    assert _input_contiguous(np.zeros((4, 1, 5))[:, :, ::2], 0, "F") is False
    # A value computed inside the function: in the loop each example owns its memory, C
    # ordered here, though the batch holds them interleaved.
    assert _examples_contiguous(a, 2, "C") and not _examples_contiguous(a, 2, "F")


# ---- full ---------------------------------------------------------------------------------------
def test_full_with_a_batched_fill_and_like(strict):
    compare(lambda x: np.full((2, 3), x[0, 0], like=x), X)
    compare(lambda x: np.full((2, 5), x[0] * 10, dtype=np.int8, order="F", like=x), X)
    compare(lambda x: np.full(4, x[0, 0] > 0, dtype=np.float32, like=x), X)


@pytest.mark.usefixtures("strict")
def test_full_with_a_batched_value(strict):
    # in the function's module np.full makes the value's batch (batchtensor.buffers) ...
    compare(lambda x: np.full((2, 3), x[0, 0]), X)
    compare(lambda x: np.full((2, 3), x[0, 0], dtype=np.float32), X)
    # ... and so does NumPy's own, reached through numpy elsewhere (batchtensor.undispatched)
    real = sys.modules["numpy"]
    compare(lambda x: real.full((2, 3), x[0, 0]), X)
    compare(lambda x: real.full((2, 3), x[0, 0], dtype=np.float32), X)


def test_full_without_interception_raises_with_the_fix():
    with bt.config(intercept_numpy=False):
        with pytest.raises(TypeError, match=r"np.full\(shape, value, like=value\)"):
            bt.vmap(lambda x: np.full((2, 3), x[0, 0]), fallback="error")(X)


# ---- fromfunction -------------------------------------------------------------------------------
def test_fromfunction_closing_over_batched_values():
    # f runs once on the plain coordinate arrays; the batched values in its body batch it.
    compare(lambda x: np.fromfunction(lambda i, j: i * x[0, 0] + j, (2, 3)), X)
    compare(lambda x: np.fromfunction(lambda i, j: x[i, j], (3, 5), dtype=int, like=x), X)


def test_fromfunction_with_a_batched_keyword(strict):
    compare(lambda x: np.fromfunction(lambda i, c: i * c, (4,), like=x, c=x[0, 0]), X)


# ---- like= functions give plain arrays ----------------------------------------------------------
def test_like_only_creation_is_plain(strict):
    made = {}

    def f(x):
        made.update(eye=np.eye(3, k=1, like=x), tri=np.tri(2, 4, like=x),
                    identity=np.identity(2, like=x), arange=np.arange(1, 4, like=x),
                    fromfunction=np.fromfunction(lambda i: i, (3,), like=x),
                    asarray=np.asarray([1, 2], like=x), full=np.full(2, 1.5, like=x))
        return x

    bt.vmap(f)(X)
    assert {type(v) for v in made.values()} == {np.ndarray}


# ---- ranges: bit for bit ------------------------------------------------------------------------
def _ends(rng, dtype, shape):
    if np.dtype(dtype).kind == "c":
        return (rng.normal(size=shape) + 1j * rng.normal(size=shape)).astype(dtype)
    if np.dtype(dtype).kind in "iu":
        return rng.integers(-20, 20, size=shape).astype(dtype)
    return (rng.normal(size=shape) * 10).astype(dtype)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, np.int32,
                                   np.complex64])
def test_linspace_bit_exact(dtype, strict):
    rng = np.random.default_rng(7)
    for _ in range(40):
        shape = [(), (3,), (2, 3)][rng.integers(3)]
        a, b = _ends(rng, dtype, (6,) + shape), _ends(rng, dtype, (6,) + shape)
        same = rng.random(6) < 0.4
        b[same] = a[same]  # zero steps in some examples only
        num = int(rng.integers(0, 30))
        kw = {"endpoint": bool(rng.integers(2)), "axis": int(rng.integers(-1, len(shape) + 1))}
        if np.dtype(dtype).kind != "c" and rng.random() < 0.5:
            kw["dtype"] = np.int64
        compare(lambda s, t: np.linspace(s, t, num, retstep=True, **kw), a, b, exact=True)


def test_linspace_denormal_and_equal_endpoints(strict):
    # NumPy's branch for a zero step (gh-5437) per example: tiny deltas next to plain ones
    a = np.array([0.0, 0.0, 1.0, 3.0])
    b = np.array([5e-324, 22.0, 1.0, 2.0])
    compare(lambda s, t: np.linspace(s, t, 22, endpoint=False, dtype=np.int64), a, b,
            exact=True)
    compare(lambda s, t: np.linspace(s, t, 7, retstep=True), a, b, exact=True)


@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")  # NumPy's log10 of -x too
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.complex128])
def test_logspace_and_geomspace_bit_exact(dtype, strict):
    rng = np.random.default_rng(3)
    for _ in range(15):
        a, b = _ends(rng, dtype, (5, 3)), _ends(rng, dtype, (5, 3))
        a[a == 0] = 1
        b[b == 0] = -2
        base = rng.uniform(1.5, 3, size=(5, 3))
        num = int(rng.integers(0, 12))
        endpoint = bool(rng.integers(2))
        compare(lambda s, t: np.geomspace(s, t, num, endpoint=endpoint, axis=-1), a, b,
                exact=True)
        compare(lambda s, t, c: np.logspace(s / 10, t / 10, num, endpoint=endpoint, base=c),
                a, b, base, exact=True)
        compare(lambda c: np.logspace(0, 2, num, base=c, dtype=np.float32), base, exact=True)


def test_geomspace_zero_in_one_example_raises_as_the_loop():
    a = np.array([1.0, 2.0, 0.0])
    with pytest.raises(ValueError, match="Geometric sequence cannot include zero"):
        loop_vmap(lambda s: np.geomspace(s, 10, 4))(a)
    with pytest.raises(ValueError, match="Geometric sequence cannot include zero"):
        bt.vmap(lambda s: np.geomspace(s, 10, 4))(a)


# ---- meshgrid -----------------------------------------------------------------------------------
def test_meshgrid_mixed_batched_and_plain(strict):
    grid = np.arange(4.0)

    def f(x):
        gx, gy = np.meshgrid(x[0], grid)
        assert type(gy) is np.ndarray  # a plain vector gives a plain grid
        return gx, gy

    compare(f, X)
    compare(lambda x: np.meshgrid(grid, x[0], x[1, :2], indexing="ij", sparse=True), X)


def test_require_owndata_and_writeable_copy_as_the_loop(strict):
    # Every example is a view into the batch (in the loop: a slice of the input), so OWNDATA
    # always copies; a read-only example (a broadcast view) is copied for WRITEABLE.
    def f(x):
        y = np.require(x, requirements="O", like=x)
        y[0] = 7.0
        z = np.require(np.broadcast_to(x[0], (2, 5)), requirements=["W"], like=x)
        z[0, 0] = 1.0
        return y, z

    compare(f, X)


# ---- np.arange with batched bounds ----------------------------------------------------------------
def _ranked(x):
    n = np.count_nonzero(np.isfinite(x))  # every example's alike where none holds a NaN
    out = np.empty(x.shape[0])
    out[np.argsort(x)[:n]] = np.arange(1, n + 1)  # ranks, as scipy.stats.mstats.rankdata
    return out * np.arange(n, like=x).sum()


def test_arange_of_bounds_every_example_holds_alike_is_one_range():
    xs = RNG.normal(size=(4, 6))
    got = bt.vmap(_ranked, fallback="error")(xs)
    assert_same(got, loop_vmap(_ranked)(xs))
    grid = RNG.normal(size=(2, 3, 6))  # nested: alike at both levels
    got = bt.vmap(bt.vmap(_ranked), fallback="error")(grid)
    assert_same(got, loop_vmap(loop_vmap(_ranked))(grid))
    got = bt.vmap(bt.vmap(_ranked, in_axes=-1), in_axes=1, fallback="error")(
        np.ascontiguousarray(grid.transpose(2, 0, 1)))
    assert_same(got, loop_vmap(loop_vmap(_ranked))(grid))


def test_arange_of_bounds_that_differ_runs_per_example():
    start = np.array([0, 1, 2])
    f = lambda s: np.arange(s, s + 4)  # noqa: E731  (one length: the per-op loop)
    with pytest.warns(bt.PerformanceWarning):
        assert_same(bt.vmap(f)(start), loop_vmap(f)(start))
    with pytest.raises(bt.BatchingError):
        bt.vmap(f, fallback="error")(start)
    xs = RNG.normal(size=(3, 6))
    xs[1, 2] = np.nan  # example 1 counts 5: its ranges are shorter (a rerun, as the loop)
    with pytest.warns(bt.PerformanceWarning, match="reruns once per example"):
        got = bt.vmap(_ranked)(xs)
    assert_same(got, loop_vmap(_ranked)(xs))
