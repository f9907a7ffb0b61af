"""scipy.signal with coefficients that differ per example (``lfilter``'s ``b`` / ``a``,
``sosfilt``'s ``sos``), and the functions built on them, against the per-example loop."""

from __future__ import annotations

import functools
import importlib
import warnings

import numpy as np
import pytest

import batchtensor as bt
from loop_reference import assert_same, loop_vmap

pytest.importorskip("scipy", reason="needs the scipy extra")
from scipy import signal  # noqa: E402

DTYPES = (np.float64, np.float32, np.complex128)


def _ba(rng, n, dtype, nb=3, na=3):
    """``n`` stable filters: ``b`` of ``nb`` taps, ``a`` with poles inside the unit circle."""
    bs, as_ = [], []
    for _ in range(n):
        poles = rng.uniform(0.1, 0.8, na - 1) * np.exp(1j * rng.uniform(0, np.pi, na - 1))
        a = np.real(np.poly(np.concatenate([poles, poles.conj()])[:na - 1]))
        bs.append(rng.uniform(-1, 1, nb))
        as_.append(a * rng.uniform(0.5, 2.0))  # a[0] != 1: SciPy normalises
    return np.array(bs).astype(dtype), np.array(as_).astype(dtype)


def _sos(rng, n, dtype):
    return np.stack([signal.butter(4, rng.uniform(0.1, 0.6), output="sos")
                     for _ in range(n)]).astype(dtype)


def _check(f, args, in_axes=0, exact=False):
    with bt.config(fallback="error"):
        got = bt.vmap(f, in_axes)(*args)
    want = loop_vmap(f, in_axes)(*args)
    assert_same(got, want)
    if exact:  # the compiled kernel's arithmetic, operation for operation
        for g, w in zip(got if isinstance(got, tuple) else (got,),
                        want if isinstance(want, tuple) else (want,)):
            assert np.array_equal(g, w, equal_nan=True)
    return got


LFILTER = {
    "iir": lambda b, a, x: signal.lfilter(b, a, x),
    "iir axis 0": lambda b, a, x: signal.lfilter(b, a, x, axis=0),
    "longer b": lambda b, a, x: signal.lfilter(np.concatenate([b, b[:2]]), a, x),
    "longer a": lambda b, a, x: signal.lfilter(b[:2], a, x),
    "fir": lambda b, a, x: signal.lfilter(b, a[:1], x),
    "fir axis 0": lambda b, a, x: signal.lfilter(b, a[:1], x, axis=0),
    "scalar b": lambda b, a, x: signal.lfilter(b[0], a, x),
}



@pytest.fixture(autouse=True, params=["recurrence", "compiled per example"])
def strategy(request, monkeypatch):
    """Each test runs both ways the rules serve per-example coefficients: the recurrence over
    the batch, and SciPy's compiled filter once per example (chosen by cost)."""
    rules = importlib.import_module("batchtensor.rules.scipy_signal")
    monkeypatch.setattr(rules, "_recurrence_pays",
                        lambda size, samples, taps: request.param == "recurrence" or size == 0)
    return request.param

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", LFILTER)
def test_lfilter_batched_coefficients(name, dtype):
    rng = np.random.default_rng(0)
    b, a = _ba(rng, 4, dtype)
    x = rng.normal(size=(4, 3, 11)).astype(dtype)
    f = LFILTER[name]
    # (complex: the kernel's complex division rounds otherwise than NumPy's)
    _check(f, (b, a, x), exact=not name.startswith("fir") and dtype != np.complex128)
    _check(f, (b, a, x[0]), in_axes=(0, 0, None))  # the signal shared
    _check(f, (b, a[0], x), in_axes=(0, None, 0))  # one coefficient batched
    _check(f, (np.moveaxis(b, 0, -1), a, np.moveaxis(x, 0, -1)), in_axes=(-1, 0, -1))
    _check(f, (b[:1], a[:1], x[:1]))  # one example


@pytest.mark.parametrize("fir", [False, True])
def test_lfilter_batched_coefficients_with_zi(fir):
    rng = np.random.default_rng(1)
    b, a = _ba(rng, 4, np.float64)
    a = a[:, :1] if fir else a
    x, zi = rng.normal(size=(4, 3, 9)), rng.normal(size=(4, 3, 2))
    f = lambda b, a, x, zi: signal.lfilter(b, a, x, zi=zi)  # noqa: E731
    _check(f, (b, a, x, zi), exact=not fir)
    _check(f, (b, a, x, zi[0]), in_axes=(0, 0, 0, None))
    _check(f, (b, a, x[0], zi[0]), in_axes=(0, 0, None, None))
    g = lambda b, a, x, zi: signal.lfilter(b, a, x, axis=0, zi=zi)  # noqa: E731
    _check(g, (b, a, rng.normal(size=(4, 5, 3)), rng.normal(size=(4, 2, 3))))


def test_lfilter_batched_coefficients_edge_cases():
    rng = np.random.default_rng(2)
    b, a = _ba(rng, 3, np.float32)
    f = LFILTER["iir"]
    one = f(b[0], a[0], np.zeros((2, 5), np.float32))
    with bt.config(fallback="error"):  # no examples
        got = bt.vmap(f)(b[:0], a[:0], np.zeros((0, 2, 5), np.float32))
    assert got.shape == (0,) + one.shape and got.dtype == one.dtype
    _check(f, (b, a, np.zeros((3, 2, 0), np.float32)))  # an empty signal
    # float32 coefficients, float64 signal: float64 as in SciPy; integers are promoted
    _check(f, (b, a, rng.normal(size=(3, 7))))
    _check(f, (b, a, rng.integers(-5, 5, size=(3, 7))))
    # NaN and inf travel as in the compiled filter
    x = rng.normal(size=(3, 8)).astype(np.float32)
    x[0, 2], x[1, 4] = np.nan, np.inf
    _check(f, (b, a, x), exact=True)
    _check(LFILTER["fir"], (b, a, x))


def test_lfilter_cases_it_leaves_to_the_loop():
    """a[0] == 0 in some example (SciPy raises), another dtype SciPy's kernel has no loop for
    (object), a zi of another shape: the per-example loop, which raises or computes as SciPy."""
    rng = np.random.default_rng(3)
    b, a = _ba(rng, 3, np.float64)
    x = rng.normal(size=(3, 6))
    bad = a.copy()
    bad[1, 0] = 0.0
    with bt.config(fallback="error"), pytest.raises(bt.BatchingError, match="lfilter"):
        bt.vmap(LFILTER["iir"])(b, bad, x)
    with pytest.raises(ValueError), warnings.catch_warnings():
        warnings.simplefilter("ignore", bt.PerformanceWarning)
        bt.vmap(LFILTER["iir"])(b, bad, x)
    f = lambda b, a, x, zi: signal.lfilter(b, a, x, zi=zi)  # noqa: E731
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", bt.PerformanceWarning)
        assert_same(bt.vmap(f)(b, a, x, np.ones((3, 2))), loop_vmap(f)(b, a, x, np.ones((3, 2))))


def test_lfilter_results_are_laid_out_as_the_loop():
    rng = np.random.default_rng(4)
    b, a = _ba(rng, 3, np.float64)
    x = rng.normal(size=(3, 4, 6))
    for f in (LFILTER["iir axis 0"], LFILTER["fir axis 0"], LFILTER["fir"]):
        for args, axes in (((b, a, x), 0), ((b, a, x[0]), (0, 0, None))):
            with bt.config(fallback="error"):
                got = bt.vmap(f, axes)(*args)
            one = f(b[0], a[0], x[0])
            for i in range(3):
                assert got[i].flags.c_contiguous == one.flags.c_contiguous
                assert got[i].flags.f_contiguous == one.flags.f_contiguous
            assert not np.shares_memory(got, x)


def test_lfilter_nested():
    rng = np.random.default_rng(5)
    b, a = _ba(rng, 6, np.float64)
    b, a = b.reshape(2, 3, 3), a.reshape(2, 3, 3)
    x = rng.normal(size=(2, 3, 10))
    f = LFILTER["iir"]
    with bt.config(fallback="error"):
        assert_same(bt.vmap(bt.vmap(f))(b, a, x), loop_vmap(loop_vmap(f))(b, a, x))
        # coefficients batched at the outer level only, the signal at the inner one
        g = lambda b, a: bt.vmap(lambda x: f(b, a, x))(x[0])  # noqa: E731
        want = loop_vmap(lambda b, a: loop_vmap(lambda x: f(b, a, x))(x[0]))(b[0], a[0])
        assert_same(bt.vmap(g)(b[0], a[0]), want)


@pytest.mark.parametrize("dtype", DTYPES)
def test_sosfilt_batched_sections(dtype):
    rng = np.random.default_rng(6)
    sos = _sos(rng, 4, dtype)
    x = rng.normal(size=(4, 3, 12)).astype(dtype)
    f = lambda s, x: signal.sosfilt(s, x)  # noqa: E731
    g = lambda s, x: signal.sosfilt(s, x, axis=0)  # noqa: E731
    for h in (f, g):
        _check(h, (sos, x), exact=dtype != np.complex128)
        _check(h, (sos, x[0]), in_axes=(0, None))
        _check(h, (sos[:1], x[:1]))
    zi = rng.normal(size=(4, 2, 3, 2)).astype(dtype)
    fz = lambda s, x, z: signal.sosfilt(s, x, zi=z)  # noqa: E731
    _check(fz, (sos, x, zi), exact=dtype != np.complex128)
    _check(fz, (sos, x, zi[0]), in_axes=(0, 0, None))
    gz = lambda s, x, z: signal.sosfilt(s, x, axis=0, zi=z)  # noqa: E731
    _check(gz, (sos, x, rng.normal(size=(4, 2, 2, 12)).astype(dtype)))


def test_sosfilt_batched_sections_layout_nested_and_empty():
    rng = np.random.default_rng(7)
    sos = _sos(rng, 6, np.float64)
    x = rng.normal(size=(6, 4, 5))
    g = lambda s, x: signal.sosfilt(s, x, axis=0)  # noqa: E731
    with bt.config(fallback="error"):
        got = bt.vmap(g, (0, None))(sos, x[0])
        assert_same(bt.vmap(bt.vmap(g))(sos.reshape(2, 3, 2, 6), x.reshape(2, 3, 4, 5)),
                    loop_vmap(loop_vmap(g))(sos.reshape(2, 3, 2, 6), x.reshape(2, 3, 4, 5)))
        empty = bt.vmap(g)(sos[:0], x[:0])
    one = g(sos[0], x[0])
    assert empty.shape == (0,) + one.shape
    for i in range(6):
        assert got[i].flags.c_contiguous == one.flags.c_contiguous
        assert got[i].flags.f_contiguous == one.flags.f_contiguous
    bad = sos.copy()
    bad[2, 0, 3] = 2.0  # SciPy refuses sos[:, 3] != 1: the loop raises it
    with pytest.raises(ValueError), warnings.catch_warnings():
        warnings.simplefilter("ignore", bt.PerformanceWarning)
        bt.vmap(g)(bad, x)


def test_filtfilt_and_deconvolve_with_batched_coefficients():
    rng = np.random.default_rng(8)
    b, a = _ba(rng, 4, np.float64)
    x = rng.normal(size=(4, 2, 30))
    f = lambda b, a, x: signal.filtfilt(b, a, x)  # noqa: E731
    _check(f, (b, a, x))
    _check(f, (b, a, x[0]), in_axes=(0, 0, None))
    _check(lambda b, a, x: signal.filtfilt(b, a, x, axis=0, padlen=1), (b, a, x))
    den = np.concatenate([np.ones((4, 1)), rng.uniform(-0.4, 0.4, (4, 2))], axis=1)
    d = lambda num, den: signal.deconvolve(num, den)  # noqa: E731
    _check(d, (rng.normal(size=(4, 12)), den))
    # Gustafsson's method with batched coefficients: per example (correct, warned)
    gust = lambda b, a, x: signal.filtfilt(b, a, x, method="gust")  # noqa: E731
    with bt.config(fallback="error"), pytest.raises(bt.BatchingError, match="filtfilt"):
        bt.vmap(gust)(b, a, x)


def test_vmap_of_a_partial_of_a_scipy_function_takes_its_rule():
    """``bt.vmap(functools.partial(scipy.signal.savgol_filter, ...))``: the rule serves it,
    and the function's own module keeps NumPy's names (its compiled calls get plain arrays),
    also under a vmap of it with ``fallback=`` (a ``FallbackVmapFunction``)."""
    x = np.random.default_rng(9).normal(size=(2, 3, 40))
    for f in (functools.partial(signal.savgol_filter, window_length=7, polyorder=2),
              functools.partial(signal.decimate, q=2),
              functools.partial(signal.resample_poly, up=3, down=2)):
        with bt.config(fallback="error"):
            assert_same(bt.vmap(f)(x[0]), loop_vmap(f)(x[0]))
        assert_same(bt.vmap(bt.vmap(f, fallback="error"), fallback="error")(x),
                    loop_vmap(loop_vmap(f))(x))
