"""scipy.signal's compiled kernels under vmap (``_sigtools._convolve2d`` for ``convolve2d`` /
``correlate2d``, ``_sigtools._medfilt2d`` for ``medfilt2d``, the spline bases of
``cspline1d_eval``), ``upfirdn``, and ``np.roots`` whose examples disagree on real / complex
(``freqs``, ``tf2zpk``), against the per-example loop."""

from __future__ import annotations

import importlib
import platform
import warnings

import numpy as np
import pytest

import batchtensor as bt
from loop_reference import assert_same, loop_vmap

pytest.importorskip("scipy", reason="needs the scipy extra")
from scipy import signal  # noqa: E402

#: the kernel's sums in the same order and dtype (SciPy 1.17's: four taps at a time): the same
#: bits where neither rounds a fused multiply-add (x86-64's baseline has none)
BITWISE = platform.machine() in ("x86_64", "AMD64")


@pytest.fixture(params=["shifted products", "kernel per example"])
def strategy(request, monkeypatch):
    """Both ways the rule serves ``_convolve2d``: the sum of shifted products over the batch
    (in chunks of 40 outputs, so that a batch takes several), or the kernel once per example
    (chosen by cost)."""
    rules = importlib.import_module("batchtensor.rules.scipy_signal")
    monkeypatch.setattr(rules, "_shifted_pays",
                        lambda size, out, taps: request.param == "shifted products")
    monkeypatch.setattr(rules, "_CHUNK", 40)
    return request.param


def _draw(rng, shape, dtype):
    dt = np.dtype(dtype)
    if dt.kind == "u":
        return rng.integers(0, 256, shape).astype(dt)
    if dt.kind == "i":
        return rng.integers(-100, 100, shape).astype(dt)  # (int8 products wrap, as in C)
    x = rng.normal(size=shape) * 3
    if dt.kind == "c":
        x = x + 1j * rng.normal(size=shape)
    return x.astype(dt)


def _check(f, args, in_axes=0, exact=True):
    with bt.config(fallback="error"):
        got = bt.vmap(f, in_axes)(*args)
    want = loop_vmap(f, in_axes)(*args)
    assert_same(got, want)
    if exact and BITWISE:
        assert np.array_equal(got, want, equal_nan=True)
    return got


PAIRS = [(np.float64, np.float64), (np.float32, np.float32), (np.float32, np.float64),
         (np.uint8, np.float64), (np.int64, np.int64), (np.int8, np.int8),
         (np.complex128, np.float64), (np.complex64, np.complex64)]


@pytest.mark.parametrize("fn", [signal.convolve2d, signal.correlate2d])
@pytest.mark.parametrize("mode", ["full", "same", "valid"])
@pytest.mark.parametrize("boundary", ["fill", "wrap", "symm"])
def test_convolve2d_every_mode_and_boundary(strategy, fn, mode, boundary):
    rng = np.random.default_rng(0)
    images, kernels = rng.normal(size=(4, 6, 7)), rng.normal(size=(4, 3, 5))
    f = lambda a, k: fn(a, k, mode=mode, boundary=boundary)  # noqa: E731
    _check(f, (images, kernels))
    _check(f, (images, kernels[0]), in_axes=(0, None))  # one kernel
    _check(f, (images[0], kernels), in_axes=(None, 0))  # one image
    _check(f, (np.moveaxis(images, 0, -1), kernels), in_axes=(-1, 0))
    _check(f, (images[:1], kernels[:1]))  # one example
    g = lambda a, k: fn(a, k, mode=mode, boundary=boundary, fillvalue=-2.5)  # noqa: E731
    _check(g, (images, kernels))


@pytest.mark.parametrize("dtypes", PAIRS, ids=lambda p: f"{np.dtype(p[0])}-{np.dtype(p[1])}")
def test_convolve2d_dtypes(strategy, dtypes):
    """SciPy's dtype (its common type), integers wrapping as its C sums do; complex products
    round as NumPy's (with fused multiply-adds), within rounding of the kernel's."""
    rng = np.random.default_rng(1)
    images, kernels = _draw(rng, (3, 5, 6), dtypes[0]), _draw(rng, (3, 4, 6), dtypes[1])
    exact = np.result_type(*dtypes).kind != "c"
    for fn in (signal.convolve2d, signal.correlate2d):
        for boundary in ("fill", "symm"):
            f = lambda a, k: fn(a, k, "same", boundary, 3)  # noqa: E731
            got = _check(f, (images, kernels), exact=exact)
            assert got.dtype == np.result_type(*dtypes)


def test_convolve2d_kernels_larger_than_the_image(strategy):
    """Mirrored and wrapped again and again past the image, the inputs swapped in 'valid'."""
    rng = np.random.default_rng(2)
    images, kernels = rng.normal(size=(3, 2, 3)), rng.normal(size=(3, 5, 9))
    for boundary in ("fill", "wrap", "symm"):
        for mode in ("full", "same"):
            f = lambda a, k: signal.convolve2d(a, k, mode, boundary)  # noqa: E731
            _check(f, (images, kernels))
    _check(lambda a, k: signal.correlate2d(a, k, "valid"), (images, kernels))
    _check(lambda a, k: signal.convolve2d(k, a, "valid"), (images, kernels))


def test_convolve2d_edge_cases(strategy):
    rng = np.random.default_rng(3)
    f = lambda a, k: signal.convolve2d(a, k, "full", "fill", 1.5)  # noqa: E731
    kernels = rng.normal(size=(3, 2, 2))
    _check(f, (np.zeros((3, 0, 4)), kernels))  # an empty image: the fill only
    _check(f, (rng.normal(size=(3, 4, 5)), np.zeros((3, 0, 2))))  # an empty kernel
    _check(lambda a, k: signal.convolve2d(a, k, "valid"),
           (rng.normal(size=(3, 4, 5)), rng.normal(size=(3, 5, 6))))  # no rows
    images = rng.normal(size=(3, 5, 6))
    images[0, 1, 2], images[1, 3, 3], images[2, 0, 0] = np.nan, np.inf, -np.inf
    for boundary in ("fill", "wrap", "symm"):
        _check(lambda a, k: signal.correlate2d(a, k, "same", boundary), (images, kernels))
    # no examples
    one = signal.convolve2d(images[0], kernels[0])
    with bt.config(fallback="error"):
        got = bt.vmap(signal.convolve2d)(images[:0], kernels[:0])
    assert got.shape == (0,) + one.shape and got.dtype == one.dtype
    # layouts: F order, negative strides, read-only, a batch axis in the middle
    ro = np.asfortranarray(images)
    ro.flags.writeable = False
    _check(signal.convolve2d, (ro, kernels[:, ::-1, ::-1]))
    _check(signal.convolve2d, (np.moveaxis(images, 0, 1), kernels), in_axes=(1, 0))


def test_convolve2d_complex_infinities_take_the_kernel_per_example(strategy):
    """C's complex product recovers infinities where NumPy's gives NaN: such batches run the
    kernel once per example, whatever the cost says."""
    rng = np.random.default_rng(4)
    images = _draw(rng, (3, 4, 5), np.complex128)
    kernels = _draw(rng, (3, 2, 3), np.complex128)
    images[1, 2, 2] = complex(np.inf, 0)
    got = _check(signal.convolve2d, (images, kernels), exact=False)
    assert np.array_equal(np.isnan(got), np.isnan(loop_vmap(signal.convolve2d)(images, kernels)))
    nested = np.stack([images, images[::-1]])
    kn = np.stack([kernels, kernels])
    with bt.config(fallback="error"):
        got = bt.vmap(bt.vmap(signal.convolve2d))(nested, kn)
    want = np.stack([loop_vmap(signal.convolve2d)(a, k) for a, k in zip(nested, kn)])
    assert_same(got, want)


def test_convolve2d_nested_vmaps(strategy):
    rng = np.random.default_rng(5)
    images, kernels = rng.normal(size=(2, 3, 5, 6)), rng.normal(size=(2, 3, 3, 3))
    f = lambda a, k: signal.correlate2d(a, k, "same", "symm")  # noqa: E731
    with bt.config(fallback="error"):
        got = bt.vmap(bt.vmap(f))(images, kernels)
        got_inner = bt.vmap(bt.vmap(f, (0, None)), (None, 0))(images[0], kernels[:, 0])
    assert_same(got, np.stack([loop_vmap(f)(a, k) for a, k in zip(images, kernels)]))
    assert_same(got_inner, np.stack([loop_vmap(f, (0, None))(images[0], k)
                                     for k in kernels[:, 0]]))


def test_convolve2d_cases_it_leaves_to_the_loop():
    """A fill value that differs per example, and arguments SciPy refuses: the loop (its
    result, or SciPy's error)."""
    rng = np.random.default_rng(6)
    images, kernels = rng.normal(size=(3, 4, 5)), rng.normal(size=(3, 2, 2))
    fills = np.array([0.0, 1.0, -1.0])
    f = lambda a, k, v: signal.convolve2d(a, k, fillvalue=v)  # noqa: E731
    with pytest.warns(bt.PerformanceWarning):
        got = bt.vmap(f)(images, kernels, fills)
    assert_same(got, loop_vmap(f)(images, kernels, fills))
    with pytest.raises(ValueError, match="boundary"):
        bt.vmap(lambda a, k: signal.convolve2d(a, k, boundary="reflect"))(images, kernels)
    with pytest.raises(ValueError, match="not available for this type"):
        bt.vmap(signal.convolve2d)(images > 0, kernels > 0)


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.uint8])
def test_medfilt2d(dtype):
    rng = np.random.default_rng(7)
    images = _draw(rng, (4, 6, 7), dtype)
    if dtype != np.uint8:
        images = np.round(images)  # ties, and zeros beside the padding's
        images[0, 1, 1], images[1, 2, 3] = np.inf, -np.inf
    _check(signal.medfilt2d, (images,))
    for size in (3, 5, [5, 3], (1, 7)):
        _check(lambda x: signal.medfilt2d(x, size), (images,))
    _check(lambda x: signal.medfilt2d(x, 5), (images[:, :2, :3],))  # window past the image
    _check(signal.medfilt2d, (np.moveaxis(images, 0, -1),), in_axes=-1)
    _check(signal.medfilt2d, (images[:1],))
    one = signal.medfilt2d(images[0])
    with bt.config(fallback="error"):
        got = bt.vmap(signal.medfilt2d)(images[:0])
    assert got.shape == (0,) + one.shape and got.dtype == one.dtype
    with bt.config(fallback="error"):
        got = bt.vmap(bt.vmap(signal.medfilt2d))(np.stack([images, images[::-1]]))
    assert_same(got, np.stack([loop_vmap(signal.medfilt2d)(images),
                               loop_vmap(signal.medfilt2d)(images[::-1])]))


def test_medfilt2d_with_nan_and_other_dtypes_as_the_loop():
    """NaN: SciPy's selection meets it in its own order, so the loop serves it; other dtypes
    go to ``medfilt`` (ndimage's rank filter)."""
    rng = np.random.default_rng(8)
    images = rng.normal(size=(3, 5, 6))
    images[1, 2, 2] = np.nan
    with pytest.warns(bt.PerformanceWarning):
        got = bt.vmap(signal.medfilt2d)(images)
    assert_same(got, loop_vmap(signal.medfilt2d)(images))
    ints = rng.integers(-50, 50, (3, 5, 6))
    _check(signal.medfilt2d, (ints,))
    with pytest.raises(ValueError, match="odd"):
        bt.vmap(lambda x: signal.medfilt2d(x, 4))(images)


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.complex128])
def test_upfirdn(dtype):
    rng = np.random.default_rng(9)
    hs, xs = _draw(rng, (3, 5), dtype), _draw(rng, (3, 4, 11), dtype)
    for kw in ({}, {"up": 3, "down": 2}, {"down": 3, "mode": "symmetric"},
               {"up": 2, "mode": "constant", "cval": 1.5}, {"up": 2, "axis": 0}):
        f = lambda h, x: signal.upfirdn(h, x, **kw)  # noqa: E731
        _check(f, (hs[0], xs), in_axes=(None, 0))  # one filter: one call on the batch
        _check(f, (hs, xs))  # a filter per example: SciPy's filter once per example
        _check(f, (hs, xs[0]), in_axes=(0, None))
    _check(lambda h, x: signal.upfirdn(h, x, 2), (hs[0], np.moveaxis(xs, 0, -1)),
           in_axes=(None, -1))
    with bt.config(fallback="error"):
        got = bt.vmap(bt.vmap(lambda h, x: signal.upfirdn(h, x, 2)))(
            np.stack([hs, hs[::-1]]), np.stack([xs, xs]))
    assert_same(got, np.stack([loop_vmap(lambda h, x: signal.upfirdn(h, x, 2))(h, x)
                               for h, x in ((hs, xs), (hs[::-1], xs))]))


@pytest.mark.parametrize("fn", [signal.cspline1d_eval, signal.qspline1d_eval])
def test_spline_eval(fn):
    """Points inside the spline's range: its basis evaluated on the batch at once."""
    rng = np.random.default_rng(10)
    coefs, points = rng.normal(size=(3, 12)), rng.uniform(0, 11, (3, 7))
    _check(fn, (coefs, points))
    _check(fn, (coefs, points[:, 0]))  # a 0-d point
    _check(lambda c, x: fn(c, x, dx=0.5, x0=1.0), (coefs, points / 2 + 1.0))
    _check(fn, (coefs, points[0]), in_axes=(0, None))
    # points past the range mirror into it through a ragged selection: a rerun, correct
    far = rng.uniform(-6, 18, (3, 7))
    with pytest.warns(bt.PerformanceWarning):
        got = bt.vmap(fn)(coefs, far)
    assert_same(got, loop_vmap(fn)(coefs, far))


ROOTS = np.array([[1.0, -3.0, 2.0], [1.0, 0.0, 1.0], [1.0, 2.0, 1.0], [2.0, 1.0, 3.0],
                  [1.0, -5.0, 6.0]])  # real, complex, real, complex, real roots


def test_roots_real_and_complex_examples_run_as_groups():
    """NumPy's ``if all(w.imag == 0)`` is a branch on the data: each side a group."""
    with pytest.warns(bt.PerformanceWarning, match="group"):
        got = bt.vmap(np.roots)(ROOTS)
    want = loop_vmap(np.roots)(ROOTS)
    assert_same(got, want)
    assert got.dtype == want.dtype == np.complex128
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert bt.vmap(np.roots)(ROOTS[[0, 2, 4]]).dtype == np.float64  # all real: one pass
    with pytest.raises(bt.BatchingError, match="real for some examples and complex"):
        bt.vmap(np.roots, fallback="error")(ROOTS)
    with pytest.warns(bt.PerformanceWarning):  # nested: the inner vmap splits
        got = bt.vmap(bt.vmap(np.roots))(np.stack([ROOTS, ROOTS[::-1]]))
    assert_same(got, np.stack([want, want[::-1]]))


@pytest.mark.parametrize("fn", ["freqs", "tf2zpk"])
def test_filter_design_with_real_and_complex_roots(fn):
    rng = np.random.default_rng(11)
    bs, as_ = rng.uniform(-1, 1, (6, 3)), np.tile([1.0, 0.3, 0.5], (6, 1))
    as_[::2, 1] = 3.0  # real poles in every other example, complex in the others
    f = (lambda b, a: signal.freqs(b, a, worN=8)) if fn == "freqs" else signal.tf2zpk
    with pytest.warns(bt.PerformanceWarning, match="group"):
        got = bt.vmap(f)(bs, as_)
    for g, w in zip(got, loop_vmap(f)(bs, as_)):
        assert_same(g, w)
