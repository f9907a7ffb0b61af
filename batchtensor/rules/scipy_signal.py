"""scipy.signal: the filters work on each 1-d slice along ``axis`` alone, so the batch axis
rides along (first, so that each example's result is one block) and one call filters the batch.

Filter coefficients (``b``, ``a``, ``sos``, breakpoints ``bp``) are not unwrapped: batched ones
send the call to the per-example loop (correct, slow, warned). ``zi`` may be batched or not.
``detrend(overwrite_data=True)`` runs per example too: it may write into each example.
Loaded by ``batchtensor.foreign`` once ``scipy.signal`` is imported.
"""

from __future__ import annotations

import numpy as np
from scipy import signal

from ._helpers import batch_outermost, logical_rank, require
from ._scipy import call, front, front_axis, moved_blocks, no_examples, scipy_rule, writes_into

lfilter, sosfilt = call(signal, "lfilter"), call(signal, "sosfilt")


def _size(x, x_bdim, zi, zi_bdim):
    return x.shape[x_bdim] if x_bdim is not None else zi.shape[zi_bdim]


@scipy_rule(signal.lfilter)
def lfilter_rule(b, a, x, x_bdim, axis=-1, zi=None, zi_bdim=None):
    size = _size(x, x_bdim, zi, zi_bdim)
    ax = front_axis(axis, logical_rank(x, x_bdim))
    if zi is None:
        # (an FIR filter goes through np.apply_along_axis, which refuses a batch of size 0)
        empty = no_examples(x, x_bdim, lambda e: lfilter(b, a, e, axis))
        if empty is not None:
            return empty
        return lfilter(b, a, front(x, x_bdim, size), ax), 0
    x = front(x, x_bdim, size)
    y, zf = lfilter(b, a, x, ax, front(zi, zi_bdim, size))  # lfilter broadcasts zi's batch
    return (y, 0), (zf, 0)


@scipy_rule(signal.sosfilt)
def sosfilt_rule(sos, x, x_bdim, axis=-1, zi=None, zi_bdim=None):
    size = _size(x, x_bdim, zi, zi_bdim)
    ax = front_axis(axis, logical_rank(x, x_bdim))
    x = front(x, x_bdim, size)
    if zi is None:
        return sosfilt(sos, x, ax), 0
    # zi is (sections, *x.shape with 2 at axis): the batch axis goes second
    y, zf = sosfilt(sos, x, ax, np.moveaxis(front(zi, zi_bdim, size), 0, 1))
    return (y, 0), (zf, 1)


def move(x, x_bdim):
    """A batched ``x`` with its batch axis first."""
    return front(x, x_bdim, None)


@scipy_rule(signal.filtfilt)
def filtfilt_rule(b, a, x, x_bdim, axis=-1, padtype="odd", padlen=None, method="pad",
                  irlen=None):
    ax = front_axis(axis, logical_rank(x, x_bdim))
    fn = call(signal, "filtfilt")
    if method == "gust":  # Gustafsson's method solves a least-squares problem of the batch
        empty = no_examples(x, x_bdim, lambda e: fn(b, a, e, axis, padtype, padlen, method,
                                                    irlen))
        if empty is not None:  # (LAPACK refuses one of no rows)
            return empty
    return fn(b, a, move(x, x_bdim), ax, padtype, padlen, method, irlen), 0


@scipy_rule(signal.sosfiltfilt)
def sosfiltfilt_rule(sos, x, x_bdim, axis=-1, padtype="odd", padlen=None):
    ax = front_axis(axis, logical_rank(x, x_bdim))
    return call(signal, "sosfiltfilt")(sos, move(x, x_bdim), ax, padtype, padlen), 0


@scipy_rule(signal.detrend)
def detrend_rule(data, data_bdim, axis=-1, type="linear", bp=0, overwrite_data=False):
    if overwrite_data:
        writes_into(data)
        require(False, "detrend(overwrite_data=True) may write into each example")
    fn = call(signal, "detrend")
    empty = no_examples(data, data_bdim, lambda e: fn(e, axis, type, bp))
    if empty is not None:
        return empty
    ax = front_axis(axis, logical_rank(data, data_bdim))
    if type in ("constant", "c"):  # data - mean: laid out as the data, so each example
        return fn(batch_outermost(data, data_bdim), ax, type, bp), 0
    # a least-squares fit on a C-ordered copy with axis first, moved back
    return moved_blocks(fn(move(data, data_bdim), ax, type, bp), ax), 0


@scipy_rule(signal.hilbert)
def hilbert_rule(x, x_bdim, N=None, axis=-1):
    ax = front_axis(axis, logical_rank(x, x_bdim))
    return call(signal, "hilbert")(move(x, x_bdim), N, ax), 0


@scipy_rule(signal.savgol_filter)
def savgol_filter_rule(x, x_bdim, window_length, polyorder, deriv=0, delta=1.0, axis=-1,
                       mode="interp", cval=0.0):
    fn = call(signal, "savgol_filter")
    args = (window_length, polyorder, deriv, delta)
    empty = no_examples(x, x_bdim, lambda e: fn(e, *args, axis, mode, cval))
    if empty is not None:
        return empty
    ax = front_axis(axis, logical_rank(x, x_bdim))
    return fn(move(x, x_bdim), *args, ax, mode, cval), 0


@scipy_rule(signal.decimate)
def decimate_rule(x, x_bdim, q, n=None, ftype="iir", axis=-1, zero_phase=True):
    ax = front_axis(axis, logical_rank(x, x_bdim))
    return call(signal, "decimate")(move(x, x_bdim), q, n, ftype, ax, zero_phase), 0


@scipy_rule(signal.resample_poly)
def resample_poly_rule(x, x_bdim, up, down, axis=0, window=("kaiser", 5.0), padtype="constant",
                       cval=None):
    ax = front_axis(axis, logical_rank(x, x_bdim))
    return call(signal, "resample_poly")(move(x, x_bdim), up, down, ax, window, padtype,
                                         cval), 0
