"""scipy.signal (rules: batchtensor/rules/scipy_signal.py): lfilter / sosfilt with and without
``zi`` (batched or not: the sweep maps it), filtfilt / sosfiltfilt (pad and gust), detrend,
hilbert, savgol_filter, decimate, resample_poly, upfirdn; along the last, first and a middle
axis, 0-d and size-0 inputs, coefficients as arrays (batched ones run per example). The
compiled kernel of convolve2d / correlate2d (both directions, every mode and boundary, kernels
larger than the image, NaN and inf, empty inputs), medfilt2d, and the spline bases of
cspline1d_eval / qspline1d_eval."""

from __future__ import annotations

import numpy as np

from .core import OpInfo, SampleInput
from .foreign import through_module
from .samples import make_array

try:
    from scipy import signal
    from scipy.signal import _sigtools, _spline_filters
except ImportError:  # scipy is an optional extra
    signal = None

B, A = [0.25, 0.5, 0.125], [1.0, -0.4, 0.2]  # an IIR filter, the same in every example
A2 = [2.0, -0.8]  # a[0] != 1: SciPy normalises
SOS = [[0.0675, 0.135, 0.0675, 1.0, -1.143, 0.4128],
       [1.0, 2.0, 1.0, 1.0, -1.4, 0.6]]
_TOL = dict(rtol=1e-9, atol=1e-11, rtol32=1e-4, atol32=1e-5)


def _x(rng, shape, dtype, **kw):
    return make_array(rng, shape, dtype, **kw)


def lfilter_samples(rng, dtype):
    yield SampleInput((B, A, _x(rng, (12,), dtype)), {}, "1-d")
    yield SampleInput((B, A, _x(rng, (3, 12), dtype)), {}, "2-d along the last axis")
    yield SampleInput((B, A, _x(rng, (12, 3), dtype)), {"axis": 0}, "axis=0")
    yield SampleInput((B, A, _x(rng, (2, 9, 3), dtype)), {"axis": -2}, "a middle axis")
    yield SampleInput(([1.0, 2.0], [1.0], _x(rng, (8,), dtype)), {}, "FIR")
    yield SampleInput(([1.0, 0.5], A2, _x(rng, (8,), dtype)), {}, "a[0] != 1")
    yield SampleInput((B, A, _x(rng, (12,), dtype)), {"zi": _x(rng, (2,), dtype)}, "zi")
    yield SampleInput((B, A, _x(rng, (3, 12), dtype)), {"zi": _x(rng, (3, 2), dtype)},
                      "zi 2-d")
    yield SampleInput((B, A, _x(rng, (12, 3), dtype)),
                      {"axis": 0, "zi": _x(rng, (2, 1), dtype)}, "zi broadcast along axis 1")
    yield SampleInput((B, A, _x(rng, (3, 12), dtype, noncontiguous=True)), {},
                      "non-contiguous")
    yield SampleInput((B, A, _x(rng, (0,), dtype)), {}, "size-0 signal")
    yield SampleInput((B, A, _x(rng, (0, 5), dtype)), {}, "size-0 other axis")
    yield SampleInput((B, A, _x(rng, (), dtype)), {}, "0-d: SciPy raises")
    yield SampleInput((B, A, _x(rng, (4,), dtype)), {"axis": 1}, "axis out of range")
    yield SampleInput((B, A, _x(rng, (6,), dtype)), {"zi": _x(rng, (3,), dtype)},
                      "zi of the wrong length: SciPy raises")
    yield SampleInput((_x(rng, (3,), np.float64), A, _x(rng, (8,), dtype)), {},
                      "b an array (batched: per example)",
                      loop_reason="batched filter coefficients")


def sosfilt_samples(rng, dtype):
    yield SampleInput((SOS, _x(rng, (12,), dtype)), {}, "1-d")
    yield SampleInput((SOS, _x(rng, (3, 12), dtype)), {}, "2-d")
    yield SampleInput((SOS, _x(rng, (12, 3), dtype)), {"axis": 0}, "axis=0")
    yield SampleInput((SOS, _x(rng, (12,), dtype)), {"zi": _x(rng, (2, 2), dtype)}, "zi")
    yield SampleInput((SOS, _x(rng, (2, 9, 3), dtype)),
                      {"axis": 1, "zi": _x(rng, (2, 2, 2, 3), dtype)}, "zi, a middle axis")
    yield SampleInput((SOS, _x(rng, (0, 4), dtype)), {}, "size-0")
    yield SampleInput((SOS, _x(rng, (), dtype)), {}, "0-d: SciPy raises")
    yield SampleInput((SOS, _x(rng, (6,), dtype)), {"zi": _x(rng, (2,), dtype)},
                      "zi of the wrong shape: SciPy raises")
    yield SampleInput((_x(rng, (1, 6), np.float64, low=0.1, high=0.3), _x(rng, (8,), dtype)),
                      {}, "sos an array (batched: per example)",
                      loop_reason="batched filter coefficients")


def filtfilt_samples(rng, dtype):
    yield SampleInput((B, A, _x(rng, (20,), dtype)), {}, "1-d")
    yield SampleInput((B, A, _x(rng, (20, 3), dtype)), {"axis": 0}, "axis=0")
    yield SampleInput((B, A, _x(rng, (2, 3, 20), dtype)), {"padtype": "even"}, "padtype=even")
    yield SampleInput((B, A, _x(rng, (3, 20), dtype)), {"padtype": None}, "padtype=None")
    yield SampleInput((B, A, _x(rng, (3, 20), dtype)), {"padlen": 0}, "padlen=0")
    yield SampleInput((B, A, _x(rng, (3, 20), dtype)), {"method": "gust"}, "method=gust")
    yield SampleInput((B, A, _x(rng, (5,), dtype)), {}, "shorter than padlen: SciPy raises")


def sosfiltfilt_samples(rng, dtype):
    yield SampleInput((SOS, _x(rng, (20,), dtype)), {}, "1-d")
    yield SampleInput((SOS, _x(rng, (20, 3), dtype)), {"axis": 0}, "axis=0")
    yield SampleInput((SOS, _x(rng, (3, 20), dtype)), {"padtype": "constant", "padlen": 4},
                      "padtype=constant")
    yield SampleInput((SOS, _x(rng, (4,), dtype)), {}, "shorter than padlen: SciPy raises")


def detrend_samples(rng, dtype):
    yield SampleInput((_x(rng, (10,), dtype),), {}, "linear")
    yield SampleInput((_x(rng, (10,), dtype),), {"type": "constant"}, "constant")
    yield SampleInput((_x(rng, (10, 3), dtype),), {"axis": 0}, "axis=0")
    yield SampleInput((_x(rng, (2, 10, 3), dtype),), {"axis": 1, "bp": [3, 7]},
                      "breakpoints, a middle axis")
    yield SampleInput((_x(rng, (3, 10), dtype, noncontiguous=True),), {}, "non-contiguous")
    yield SampleInput((_x(rng, (0, 4), dtype),), {"type": "constant"}, "size-0 other axis")
    yield SampleInput((_x(rng, (), dtype),), {}, "0-d: SciPy raises")
    yield SampleInput((_x(rng, (10,), dtype),), {"type": "quadratic"}, "bad type")
    # overwrite_data=True runs per example (tests/test_foreign.py): its results are views of
    # the input, which the loop fallback hands back as read-only copies (docs/foreign.md)


def hilbert_samples(rng, dtype):
    yield SampleInput((_x(rng, (9,), dtype),), {}, "1-d")
    yield SampleInput((_x(rng, (8, 3), dtype),), {"axis": 0, "N": 10}, "axis=0, N=")
    yield SampleInput((_x(rng, (), dtype),), {}, "0-d")


def savgol_samples(rng, dtype):
    yield SampleInput((_x(rng, (11,), dtype), 5, 2), {}, "interp")
    yield SampleInput((_x(rng, (11, 3), dtype), 5, 2), {"axis": 0, "mode": "nearest"},
                      "axis=0, nearest")
    yield SampleInput((_x(rng, (2, 11), dtype), 7, 3), {"deriv": 1, "delta": 0.5}, "deriv=1")
    yield SampleInput((_x(rng, (4,), dtype), 5, 2), {}, "shorter than the window")


def decimate_samples(rng, dtype):
    yield SampleInput((_x(rng, (40,), dtype), 2), {}, "iir")
    yield SampleInput((_x(rng, (40, 2), dtype), 3), {"ftype": "fir", "axis": 0}, "fir, axis=0")
    yield SampleInput((_x(rng, (2, 40), dtype), 2), {"zero_phase": False}, "zero_phase=False")


def resample_poly_samples(rng, dtype):
    yield SampleInput((_x(rng, (12,), dtype), 3, 2), {}, "1-d")
    yield SampleInput((_x(rng, (3, 12), dtype), 2, 3), {"axis": -1}, "axis=-1")
    yield SampleInput((_x(rng, (12, 2), dtype), 1, 2), {"padtype": "mean"}, "padtype=mean")


def _special(x):
    """``x`` with a NaN and an inf (floats): they travel as in the compiled kernel."""
    if x.dtype.kind in "fc" and x.size > 2:
        x.flat[1], x.flat[-1] = np.nan, np.inf
    return x


def convolve2d_samples(rng, dtype):
    """``_sigtools._convolve2d(in1, in2, flip, mode, boundary, fillvalue)``: flip 1 convolves
    (``convolve2d``), 0 correlates; modes valid 0, same 1, full 2; boundaries fill 0, symm 4,
    wrap 8 (SciPy's Python code gives the kernel arrays, so the entry calls it directly)."""
    image, kernel = _x(rng, (5, 6), dtype), _x(rng, (3, 2), dtype)
    for flip in (1, 0):
        for mode in (0, 1, 2):
            for boundary in (0, 4, 8):
                yield SampleInput((image, kernel, flip, mode, boundary), {},
                                  f"flip {flip}, mode {mode}, boundary {boundary}")
    yield SampleInput((image, kernel, 1, 2, 0, 3), {}, "a fill value")
    yield SampleInput((image, kernel, 0, 1, 0, 2.5), {}, "a fill value, correlating")
    yield SampleInput((_x(rng, (2, 3), dtype), _x(rng, (5, 7), dtype), 1, 2, 4), {},
                      "a kernel larger than the image: mirrored again and again")
    yield SampleInput((_x(rng, (2, 3), dtype), _x(rng, (4, 5), dtype), 0, 1, 8), {},
                      "wrapped again and again")
    yield SampleInput((_x(rng, (4, 9), dtype), _x(rng, (2, 6), dtype), 1, 1, 0), {},
                      "six columns: taps summed four at a time")
    yield SampleInput((_special(_x(rng, (4, 5), dtype)), kernel, 1, 1, 0), {}, "NaN and inf")
    yield SampleInput((image, _x(rng, (6, 2), dtype), 1, 0, 0), {}, "valid: no rows")
    yield SampleInput((_x(rng, (0, 4), dtype), kernel, 1, 2, 0), {}, "an empty image")
    yield SampleInput((image, _x(rng, (0, 2), dtype), 0, 2, 4), {}, "an empty kernel")
    yield SampleInput((_x(rng, (5, 6), dtype, noncontiguous=True), kernel, 1, 1, 4), {},
                      "non-contiguous")
    yield SampleInput((image, kernel, 1, 1, 16), {}, "a bad boundary flag: SciPy raises")
    yield SampleInput((image, _x(rng, (7, 2), dtype), 1, 0, 0), {},
                      "nothing valid: SciPy raises", loop_reason="SciPy's error")


def medfilt2d_samples(rng, dtype):
    yield SampleInput((_x(rng, (6, 7), dtype),), {}, "3x3")
    yield SampleInput((_x(rng, (6, 7), dtype),), {"kernel_size": 5}, "5x5")
    yield SampleInput((_x(rng, (6, 7), dtype),), {"kernel_size": [5, 3]}, "5x3")
    yield SampleInput((_x(rng, (2, 3), dtype),), {"kernel_size": 5},
                      "a window larger than the image")
    yield SampleInput((_x(rng, (6, 7), dtype, noncontiguous=True),), {}, "non-contiguous")
    yield SampleInput((_x(rng, (0, 3), dtype),), {}, "an empty image")
    yield SampleInput((_x(rng, (6, 7), dtype),), {"kernel_size": 4}, "even: SciPy raises")
    # (NaN runs the per-example loop, which the duck backend cannot run: see
    # tests/test_foreign_signal_kernels.py)


def upfirdn_samples(rng, dtype):
    h = _x(rng, (5,), dtype)
    yield SampleInput((h, _x(rng, (12,), dtype)), {}, "1-d")
    yield SampleInput((h, _x(rng, (12,), dtype)), {"up": 3, "down": 2}, "up 3, down 2")
    yield SampleInput((h, _x(rng, (12, 3), dtype)), {"up": 2, "axis": 0}, "axis=0")
    yield SampleInput((h, _x(rng, (2, 9, 3), dtype)), {"down": 2, "axis": 1}, "a middle axis")
    yield SampleInput((h, _x(rng, (12,), dtype)), {"mode": "symmetric", "up": 2}, "symmetric")
    yield SampleInput((h, _x(rng, (3, 12), dtype)), {"mode": "constant", "cval": 2.0},
                      "cval")
    yield SampleInput((h, _x(rng, (), dtype)), {}, "0-d: SciPy raises")


def spline_basis_samples(rng, dtype):
    yield SampleInput((_x(rng, (7,), dtype, low=-3, high=3),), {}, "1-d, past the support")
    yield SampleInput((_x(rng, (2, 3), dtype, low=-3, high=3),), {}, "2-d")
    yield SampleInput((_x(rng, (), dtype, low=-3, high=3),), {}, "0-d")
    yield SampleInput((_special(_x(rng, (5,), dtype)),), {}, "NaN and inf")
    yield SampleInput((_x(rng, (0,), dtype),), {}, "no points")


OPS = []
if signal is not None:
    from .foreign import foreign_op

    F = (np.float64, np.float32)
    OPS = [
        foreign_op(signal, "lfilter", lfilter_samples, dtypes=F + (np.complex128, np.int64),
                   **_TOL),
        foreign_op(signal, "sosfilt", sosfilt_samples, dtypes=F, **_TOL),
        foreign_op(signal, "filtfilt", filtfilt_samples, dtypes=F, **_TOL),
        foreign_op(signal, "sosfiltfilt", sosfiltfilt_samples, dtypes=(np.float64,), **_TOL),
        foreign_op(signal, "detrend", detrend_samples, dtypes=F + (np.int64,), **_TOL),
        foreign_op(signal, "hilbert", hilbert_samples, dtypes=(np.float64, np.complex128),
                   **_TOL),
        foreign_op(signal, "savgol_filter", savgol_samples, dtypes=F, **_TOL),
        foreign_op(signal, "decimate", decimate_samples, dtypes=(np.float64,), **_TOL),
        foreign_op(signal, "resample_poly", resample_poly_samples, dtypes=F, **_TOL),
        foreign_op(signal, "upfirdn", upfirdn_samples, dtypes=F + (np.complex128,), **_TOL),
    ]
    OPS += [foreign_op(_sigtools, "_convolve2d", convolve2d_samples,
                       dtypes=F + (np.complex128, np.int64, np.uint8), **_TOL),
            # (medfilt2d's compiled kernel has the rule: ``covers`` is the kernel)
            OpInfo("scipy.signal.medfilt2d", through_module(signal, "medfilt2d"),
                   medfilt2d_samples, covers=_sigtools._medfilt2d, path="rule",
                   dtypes=F + (np.uint8,), **_TOL)]
    # cspline1d_eval / qspline1d_eval's bases (the functions index an unbatched ``cj`` by
    # batched positions, which reruns: the realcode corpus runs them)
    OPS += [foreign_op(_spline_filters, name, spline_basis_samples, dtypes=F + (np.int64,),
                       **_TOL) for name in ("_cubic", "_quadratic")]
