"""Ufuncs, operators and elementwise functions: what the OpInfo sweep cannot express (errors
where the loop would stack mixed results, coverage of the ufunc table, layouts that hit a
NumPy bug, arguments NumPy's dispatcher does not pass to us)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import batchtensor as bt
from opinfo import BY_NAME
from opinfo.ops_ufuncs import NUMPY_UFUNCS


@pytest.fixture(autouse=True)
def _no_loop():
    old = bt.config.fallback
    bt.config.fallback = "error"
    yield
    bt.config.fallback = old


def test_every_numpy_ufunc_has_an_opinfo():
    ufuncs = {u for n in dir(np) if isinstance(u := getattr(np, n), np.ufunc)}
    assert ufuncs == set(NUMPY_UFUNCS)
    missing = [u.__name__ for u in ufuncs
               if u is not np.matmul and f"ufunc.{u.__name__}" not in BY_NAME]
    assert not missing
    missing_out = [u.__name__ for u in ufuncs
                   if u.signature is None and f"ufunc.{u.__name__}.out" not in BY_NAME]
    assert not missing_out


def test_real_if_close_examples_that_disagree_raise():
    a = np.array([[1 + 1e-20j, 2], [1 + 1j, 2]])  # example 0 is real, example 1 is not
    with pytest.raises(bt.BatchingError, match="real_if_close"):
        bt.vmap(np.real_if_close)(a)


def test_round_of_a_scalar_gives_int64_and_refuses_what_int64_cannot_hold():
    x = np.array([2.5, -0.5, 3.7])
    got = bt.vmap(lambda v: round(v[()]))(x)
    assert got.dtype == np.int64 and got.tolist() == [round(v) for v in x]
    with pytest.raises(bt.BatchingError, match="int64"):
        bt.vmap(lambda v: round(v[()]))(np.array([1.0, 1e30]))
    with pytest.raises(TypeError, match="__round__"):
        bt.vmap(round)(np.ones((3, 2)))


@pytest.mark.parametrize("ufunc", [np.isnan, np.isinf, np.isfinite, np.signbit])
def test_bool_out_with_strided_layout(ufunc):
    # NumPy 2.4's SIMD loops write wrong values into a strided bool out= of 16+ elements;
    # a batch axis moved to the front makes that layout.
    rng = np.random.default_rng(0)
    x = rng.normal(size=(40, 3))
    x[rng.random(x.shape) < 0.3] = np.nan
    x[rng.random(x.shape) < 0.2] = -np.inf
    out = np.zeros((40, 3), dtype=bool)
    bt.vmap(lambda v, o: ufunc(v, out=o), in_axes=(1, 1))(x, out)
    assert np.array_equal(out, ufunc(x))


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.float64, np.int64])
def test_negative_into_a_strided_out(dtype):
    """NumPy 2.4's np.negative writes wrong values into an out whose stride is 4 (float32,
    int32) or 8 (float64, int64) elements, the layout of a column of a batch with that many
    columns; per example the out is one element. The ufunc writes into a contiguous stand-in
    (boxed/pointwise.py, _staging_for) and the result is copied."""
    def f(x):
        x1 = x * 1
        a = x1[0, ...]  # a 0-d array, a view into x1
        np.negative(a, out=a)
        return x1

    for cols in (4, 8):
        xs = (np.random.default_rng(cols).normal(size=(9, cols)) * 10).astype(dtype)
        np.testing.assert_array_equal(bt.vmap(f)(xs), np.stack([f(x) for x in xs]))


@pytest.mark.parametrize("ufunc", [np.log1p, np.sinh, np.expm1, np.cbrt, np.arcsinh])
def test_int_to_float_ufunc_into_a_reversed_out(ufunc):
    """NumPy 2.4 writes wrong values when an int input goes into a float out with a negative
    stride; a batch read backwards (xs[::-1]) gives that layout."""
    xs = np.arange(1, 41, dtype=np.int64)[::-1]  # a batch read backwards
    buf = np.zeros((40, 1))[::-1]

    def f(x, b):
        o = b[0, ...]  # a 0-d array: one element per example, nothing for NumPy to get wrong
        ufunc(x, out=o)
        return o * 1.0

    want = np.stack([f(x, np.zeros(1)) for x in xs])
    np.testing.assert_array_equal(bt.vmap(f)(xs, buf), want)
    np.testing.assert_array_equal(buf[:, 0], want)


def test_inplace_into_plain_array_raises():
    x = np.ones((4, 3))

    shared = np.zeros(3)

    def f(v):
        target = shared.copy()  # a method's result: plain (np.zeros(3) here would be a buffer)
        target += v
        return target

    with pytest.raises(bt.BatchingError, match="not batched"):
        bt.vmap(f)(x)

    eye = np.eye(3)

    def g(v):
        target = eye.copy()
        target @= v
        return target

    with pytest.raises(bt.BatchingError, match="not batched"):
        bt.vmap(g)(np.ones((4, 3, 3)))

    def made_inside(v):  # np.eye here is a buffer: batched at the write, as the loop's
        target = np.eye(3)
        target @= v
        return target

    vs = np.random.default_rng(0).normal(size=(4, 3, 3))
    np.testing.assert_allclose(bt.vmap(made_inside, fallback="error")(vs),
                               np.stack([made_inside(v) for v in vs]))


def test_float32_plus_python_float_stays_float32():
    x = np.ones((4, 3), dtype=np.float32)
    for f in (lambda v: v + 2.0, lambda v: 2.0 * v, lambda v: v / 3, lambda v: np.add(v, 2.0)):
        assert bt.vmap(f)(x).dtype == np.float32
    assert bt.vmap(lambda v: v + np.float64(2.0))(x).dtype == np.float64


def test_unwrap_with_a_batched_discont():
    rng = np.random.default_rng(1)
    p = np.cumsum(rng.normal(size=(4, 3, 6)) * 3, axis=-1)
    d = rng.uniform(1, 5, size=4)
    for in_axes, pp in (((0, 0), p), ((2, 0), np.moveaxis(p, 0, 2))):
        got = bt.vmap(np.unwrap, in_axes=in_axes)(pp, d)
        want = np.stack([np.unwrap(p[i], d[i]) for i in range(4)])
        np.testing.assert_allclose(got, want)
    got = bt.vmap(lambda a, b: np.unwrap(a, b, axis=0))(p, d[:, None, None] * np.ones((4, 1, 6)))
    want = np.stack([np.unwrap(p[i], d[i] * np.ones((1, 6)), axis=0) for i in range(4)])
    np.testing.assert_allclose(got, want)


def test_arguments_numpy_does_not_dispatch_fail_clearly():
    # np.unwrap dispatches on p only: with it plain, NumPy's own code runs and meets the
    # batched value. It must fail clearly, never silently.
    p = np.cumsum(np.ones((3, 6)) * 3, axis=-1)
    with pytest.raises(bt.BatchingError):
        bt.vmap(np.unwrap, in_axes=(None, 0))(p, np.array([1.0, 2.0]))
    # np.interp dispatches on (x, xp, fp); a batched left= reached through numpy is handed to
    # batchtensor (batchtensor.undispatched), NumPy's own function raises the conversion error
    f = lambda left: np.interp([0.0, 5.0], [1.0, 2.0], [3.0, 4.0], left=left)  # noqa: E731
    assert bt.vmap(f, fallback="error")(np.array([1.0, 2.0])).tolist() == [[1.0, 4.0],
                                                                           [2.0, 4.0]]
    own = {"interp": np.interp}["interp"]  # as another module bound it before the vmap
    with pytest.raises(TypeError, match="BatchedTensor"):
        bt.vmap(lambda left: own([0.0, 5.0], [1.0, 2.0], [3.0, 4.0], left=left),
                fallback="error")(np.array([1.0, 2.0]))


def test_ufunc_outer_of_a_unary_ufunc_or_a_gufunc_raises_numpys_error():
    x = np.ones((2, 3))
    with pytest.raises(ValueError, match="binary"):
        bt.vmap(np.sin.outer)(x, x)
    with pytest.raises(TypeError, match="signature"):
        bt.vmap(np.vecdot.outer)(x, x)


def test_ufunc_at_batched_indices_take_the_loop():
    a = np.zeros((3, 5))
    idx = np.array([[0, 0, 1], [4, 4, 4], [2, 3, 2]])
    bt.config.fallback = "silent"

    def f(v, i):
        np.add.at(v, i, 1.0)
        return v

    got = bt.vmap(f)(a.copy(), idx)
    want = np.stack([f(a[k].copy(), idx[k]) for k in range(3)])
    assert np.array_equal(got, want)


def test_nested_vmap_of_interp_with_batched_sample_points():
    rng = np.random.default_rng(2)
    x = rng.uniform(-3, 3, size=(2, 3, 5))
    xp = np.sort(rng.uniform(-2, 2, size=(2, 3, 4)), axis=-1)
    fp = rng.normal(size=(2, 3, 4)) + 1j * rng.normal(size=(2, 3, 4))
    got = bt.vmap(bt.vmap(np.interp))(x, xp, fp)
    want = np.array([[np.interp(x[i, j], xp[i, j], fp[i, j]) for j in range(3)]
                     for i in range(2)])
    assert np.array_equal(got, want)


def test_weak_scalar_left_operands():
    x = np.arange(6, dtype=np.int8).reshape(2, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for f in (lambda v: 3 - v, lambda v: 2 ** v, lambda v: 7 // (v + 1), lambda v: 1 << v):
            got = bt.vmap(f)(x)
            want = np.stack([f(r) for r in x])
            assert got.dtype == want.dtype == np.int8 and np.array_equal(got, want)
