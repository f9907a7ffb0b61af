"""scipy.signal: the filters work on each 1-d slice along ``axis`` alone, so the batch axis
rides along (first, so that each example's result is one block) and one call filters the batch.

Batched filter coefficients (``b``, ``a`` of ``lfilter``, ``sos`` of ``sosfilt``) differ per
example, so no compiled call serves the batch: the filter's recurrence runs in NumPy, one step
per sample over the whole batch, with the compiled kernel's arithmetic (the same operations in
the same order and dtype); where the signals are long for the batch's size, the compiled
filter once per example costs less, and the rule calls that instead (``_recurrence_pays``).
``filtfilt`` with batched coefficients runs its own Python code on
the batched values (its ``lfilter`` calls then take that path). Other batched coefficients
(breakpoints ``bp``, ``filtfilt(method="gust")``) run per example (correct, slow, warned).
``zi`` may be batched or not.
``detrend(overwrite_data=True)`` runs per example too: it may write into each example.

Compiled kernels that SciPy's Python code calls: ``_sigtools._convolve2d`` (``convolve2d``,
``correlate2d``) as the sum of shifted products over the batch, in the kernel's order and
dtype, or the kernel once per example where that costs less (``_shifted_pays``);
``_sigtools._medfilt2d`` (``medfilt2d``) as ndimage's median with a window of one along the
batch axis; the spline bases ``_cubic`` / ``_quadratic`` (``cspline1d_eval``,
``qspline1d_eval``) on the whole batch. ``upfirdn``: one call on the batch, or once per example
for a batched filter.
Loaded by ``batchtensor.foreign`` once ``scipy.signal`` is imported.
"""

from __future__ import annotations

import numpy as np
from scipy import ndimage, signal
from scipy.signal import _sigtools, _spline_filters

import functools
import inspect

from ..plumbing import innermost, unwrap, wrap_result
from ..scalars import ARRAY_0D, Array0d
from ._helpers import (NoValue, all_examples, any_example, as_array, batch_outermost,
                       logical_rank, logical_shape, require, wrap_axis)
from ._scipy import call, front, front_axis, moved_blocks, no_examples, scipy_rule, writes_into

lfilter, sosfilt = call(signal, "lfilter"), call(signal, "sosfilt")
#: the compiled kernels themselves (probes, and calls once per example on NumPy arrays)
_convolve2d = _sigtools._convolve2d


def _size(*pairs):
    return next(v.shape[d] for v, d in zip(pairs[::2], pairs[1::2]) if d is not None)


def _c_order(v):
    """``v`` laid out in C order (as the compiled kernels make their results): itself if it is,
    else a copy (a stack of per-step results follows the inputs' layout, a broadcast one's)."""
    if type(v) is np.ndarray and v.flags.c_contiguous:
        return v
    out = np.empty_like(v, order="C")
    np.copyto(out, v)
    return out


def _recurrence_pays(size: int, samples: int, taps: int) -> bool:
    """Whether the recurrence over the batch beats SciPy's compiled filter called once per
    example. The recurrence makes about 3 NumPy calls per tap and sample (~1 us each, plus
    ~2 ns per example); a compiled call costs ~10 us plus ~5 ns per tap and sample. Measured
    with bt.vmap(lfilter) and per-example coefficients against the loop: B=1000, 100
    samples, 5 taps: recurrence 5.5 ms, loop 12.7 ms; B=3, 12 samples: 0.40 ms against
    0.02 ms; B=10, 10^4 samples: 189 ms against 0.9 ms."""
    return size == 0 or samples * 3 * taps * (1.0 + 0.002 * size) < \
        size * (10.0 + 0.005 * samples * taps)


def _compiled_each(size: int, samples: int, taps: int, *values) -> bool:
    """Whether to call the compiled filter once per example: it is cheaper, and every value
    is a NumPy array (under a nested vmap they hold an inner level's examples: the recurrence
    serves those)."""
    return not _recurrence_pays(size, samples, taps) and \
        all(v is None or type(v) is np.ndarray for v in values)


def _each_example(fn, size, args, bdims, *rest):
    """SciPy's compiled ``fn`` on each example's arguments (where that is cheaper than the
    rule's vectorised path: ``_recurrence_pays``, ``_shifted_pays``), its results stacked, as
    the loop stacks them."""
    fronts = [front(v, d, size) if d is not None else v for v, d in zip(args, bdims)]
    results = [fn(*(v[i] if d is not None else v for v, d in zip(fronts, bdims)), *rest)
               for i in range(size)]
    if type(results[0]) is tuple:
        return tuple((_stacked(r), 0) for r in zip(*results))
    return _stacked(results), 0


def _stacked(results):
    """The examples' results in one batch-first array, each example laid out as its own
    (SciPy's layout depends on the axis filtered)."""
    one = results[0]
    if type(one) is not np.ndarray:  # (values of other vmaps' levels, inside them)
        return np.stack(results)
    order = sorted(range(one.ndim), key=lambda k: -abs(one.strides[k]))  # outermost first
    out = np.empty((len(results),) + tuple(one.shape[k] for k in order), dtype=one.dtype,
                   like=one)
    view = np.transpose(out, (0,) + tuple(1 + order.index(k) for k in range(one.ndim)))
    for i, r in enumerate(results):
        view[i] = r
    return view


def _taps(c, c_bdim, size, dtype, nd):
    """1-d coefficients (one row per example) as a list of arrays, tap ``k`` shaped
    ``(B, 1, ..., 1)`` to broadcast against ``nd`` more axes, cast to ``dtype``."""
    c = front(c, c_bdim, size).astype(dtype)
    return [np.reshape(c[:, k], (size,) + (1,) * nd) for k in range(c.shape[1])]


def _coefficients(c, c_bdim, like, what):
    """``np.atleast_1d`` of one example's coefficients, or the per-example loop (which raises
    as SciPy does) for any other rank or an empty array."""
    c = as_array(c, like)
    if logical_rank(c, c_bdim) == 0:
        c = np.expand_dims(c, -1)
    require(logical_rank(c, c_bdim) == 1 and logical_shape(c, c_bdim)[0] > 0,
            f"{what} is not a non-empty 1-d array per example")
    return c


def _state(zi, zi_bdim, size, ax, dtype):
    """The example's ``zi`` (its state axis at ``ax``) as a list of arrays, one per delay."""
    z = np.moveaxis(front(zi, zi_bdim, size), ax + 1, -1).astype(dtype)
    return [z[..., k] for k in range(z.shape[-1])]


def lfilter_batched(b, b_bdim, a, a_bdim, x, x_bdim, axis, zi, zi_bdim):
    """``lfilter`` with coefficients that differ per example: the direct form II transposed
    recurrence of SciPy's compiled filter (``len(a) > 1``) or the convolution of its FIR
    path (``len(a) == 1``), over the batch at once."""
    size = _size(b, b_bdim, a, a_bdim, x, x_bdim, zi, zi_bdim)
    like = next(v for v, d in ((b, b_bdim), (a, a_bdim), (x, x_bdim)) if d is not None)
    b, a = _coefficients(b, b_bdim, like, "b"), _coefficients(a, a_bdim, like, "a")
    zi = None if zi is None else as_array(zi, like)
    zi = None if zi is None else as_array(zi, like)
    nd = logical_rank(x, x_bdim)
    require(nd >= 1, "lfilter of a 0-d x")
    ax = wrap_axis(axis, nd)
    shape = logical_shape(x, x_bdim)
    nb, na = logical_shape(b, b_bdim)[0], logical_shape(a, a_bdim)[0]
    fir = na == 1
    taps = nb if fir else max(na, nb)
    x = as_array(x, like)
    dtype = np.result_type(*(v.dtype for v in (b, a, x, zi) if v is not None))
    require(dtype.char in "fdFD", f"lfilter in dtype {dtype}")
    if zi is not None:
        want = shape[:ax] + (taps - 1,) + shape[ax + 1:]
        require(logical_shape(zi, zi_bdim) == want, "lfilter: zi of another shape than x's")
    bs, as_ = _taps(b, b_bdim, size, dtype, nd - 1), _taps(a, a_bdim, size, dtype, nd - 1)
    a0 = as_[0]
    if not fir:
        require(not bool(np.any(a0 == 0)), "lfilter: a[0] == 0")
    if not fir and _compiled_each(size, shape[ax], taps, b, a, x, zi):
        # (SciPy's FIR path is a convolution: the rule's takes a few calls whatever the length)
        if zi is None:
            return _each_example(lfilter, size, (b, a, x), (b_bdim, a_bdim, x_bdim), axis)
        return _each_example(lambda bi, ai, xi, zii: lfilter(bi, ai, xi, axis, zii), size,
                             (b, a, x, zi), (b_bdim, a_bdim, x_bdim, zi_bdim))
    xs = np.moveaxis(front(x, x_bdim, size), ax + 1, -1)  # (B, *rest, n)
    if fir:  # (NumPy's b /= a[0] there: it warns as NumPy does)
        return _fir([bk / a0 for bk in bs], xs, ax, zi, zi_bdim, size, dtype)
    zero = 0.0 if dtype.kind == "f" else 0j  # (NumPy's zeros of the compiled filter's state)
    z = [zero] * (taps - 1) if zi is None else _state(zi, zi_bdim, size, ax, dtype)
    ys = []
    with np.errstate(all="ignore"):  # (compiled code sets no floating-point flags)
        bs, as_ = [bk / a0 for bk in bs], [ak / a0 for ak in as_]
        bs += [zero] * (taps - nb)  # the compiled filter pads both to one length with zeros
        as_ += [zero] * (taps - na)
        for t in range(xs.shape[-1]):
            xt = xs[..., t]
            yt = z[0] + bs[0] * xt
            z = [z[k + 1] + xt * bs[k + 1] - yt * as_[k + 1] for k in range(taps - 2)] + \
                [xt * bs[-1] - yt * as_[-1]]
            ys.append(yt)
    # fresh results laid out as the compiled filter's (C order, each example one block)
    y = _c_order(np.stack(ys, axis=ax + 1) if ys else
                 np.moveaxis(xs.astype(dtype), -1, ax + 1))
    if zi is None:
        return y, 0
    if not ys:
        z = _state(zi, zi_bdim, size, ax, dtype)
    return (y, 0), (_c_order(np.stack(z, axis=ax + 1)), 0)


def _fir(bs, xs, ax, zi, zi_bdim, size, dtype):
    """SciPy's FIR path: the full convolution of each 1-d slice (laid out as
    ``np.apply_along_axis`` lays it out), ``zi`` added to its head, cut at the signal's end."""
    n, nb = xs.shape[-1], len(bs)
    require(n > 0 and all(xs.shape[1:-1]), "lfilter's FIR path of an empty signal")
    xs = xs.astype(dtype, copy=False)
    pad = [(0, 0)] * (xs.ndim - 1)
    with np.errstate(all="ignore"):  # (np.convolve sets no floating-point flags)
        full = functools.reduce(np.add, [np.pad(bk[..., None] * xs, pad + [(k, nb - 1 - k)])
                                         for k, bk in enumerate(bs)])
    if zi is not None and nb > 1:
        head = full[..., :nb - 1] + np.moveaxis(front(zi, zi_bdim, size), ax + 1, -1)
        full = np.concatenate([head, full[..., nb - 1:]], axis=-1)
    full = np.moveaxis(_c_order(full), -1, ax + 1)
    index = (slice(None),) * (ax + 1)
    y = full[index + (slice(n),)]
    if zi is None:
        return y, 0
    return (y, 0), (full[index + (slice(n, None),)], 0)


@scipy_rule(signal.lfilter)
def lfilter_rule(b, b_bdim, a, a_bdim, x, x_bdim, axis=-1, zi=None, zi_bdim=None):
    if b_bdim is not None or a_bdim is not None:
        return lfilter_batched(b, b_bdim, a, a_bdim, x, x_bdim, axis, zi, zi_bdim)
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


def sosfilt_batched(sos, sos_bdim, x, x_bdim, axis, zi, zi_bdim):
    """``sosfilt`` with sections that differ per example: the cascade of SciPy's compiled
    ``_sosfilt`` (each section a direct form II transposed biquad), over the batch at once."""
    size = _size(sos, sos_bdim, x, x_bdim, zi, zi_bdim)
    like = sos
    sos, x = as_array(sos, like), as_array(x, like)
    if logical_rank(sos, sos_bdim) == 1:
        sos = np.expand_dims(sos, -2)  # (np.atleast_2d)
    require(logical_rank(sos, sos_bdim) == 2 and logical_shape(sos, sos_bdim)[1] == 6,
            "sosfilt: sos is not (n_sections, 6) per example")
    sections = logical_shape(sos, sos_bdim)[0]
    require(bool(np.all(front(sos, sos_bdim, size)[:, :, 3] == 1)), "sosfilt: sos[:, 3] != 1")
    nd = logical_rank(x, x_bdim)
    require(nd >= 1, "sosfilt of a 0-d x")
    ax = wrap_axis(axis, nd)
    shape = logical_shape(x, x_bdim)
    if zi is not None:
        zi = as_array(zi, like)
        want = (sections,) + shape[:ax] + (2,) + shape[ax + 1:]
        require(logical_shape(zi, zi_bdim) == want, "sosfilt: zi of another shape")
    dtype = np.result_type(*(v.dtype for v in (sos, x, zi) if v is not None))
    require(dtype.char in "fdFD", f"sosfilt in dtype {dtype}")
    if _compiled_each(size, shape[ax], 2 * sections, sos, x, zi):
        if zi is None:
            return _each_example(sosfilt, size, (sos, x), (sos_bdim, x_bdim), axis)
        return _each_example(lambda si, xi, zii: sosfilt(si, xi, axis, zii), size,
                             (sos, x, zi), (sos_bdim, x_bdim, zi_bdim))
    coef = np.moveaxis(front(sos, sos_bdim, size).astype(dtype), 1, -1)  # (B, 6, S)
    coef = np.reshape(coef, (size, 6, sections) + (1,) * (nd - 1))
    b0, b1, b2, _, a1, a2 = (coef[:, j] for j in range(6))
    if zi is None:
        zero = 0.0 if dtype.kind == "f" else 0j  # (the compiled filter's zeroed state)
        z0, z1 = [zero] * sections, [zero] * sections
    else:  # the example's (sections, ..., 2 at axis, ...) as the state of each section
        state = np.moveaxis(front(zi, zi_bdim, size).astype(dtype), (1, ax + 2), (-2, -1))
        z0 = [state[..., s, 0] for s in range(sections)]
        z1 = [state[..., s, 1] for s in range(sections)]
    xs = np.moveaxis(front(x, x_bdim, size), ax + 1, -1).astype(dtype)  # SciPy's cast copy
    ys = []
    with np.errstate(all="ignore"):  # (compiled code sets no floating-point flags)
        for t in range(xs.shape[-1]):
            cur = xs[..., t]
            for s in range(sections):
                new = b0[:, s] * cur + z0[s]
                z0[s] = b1[:, s] * cur - a1[:, s] * new + z1[s]
                z1[s] = b2[:, s] * cur - a2[:, s] * new
                cur = new
            ys.append(cur)
    # laid out as SciPy's: C order with the axis last, moved back to its place
    y = np.moveaxis(_c_order(np.stack(ys, axis=-1) if ys else xs), -1, ax + 1)
    if zi is None:
        return y, 0
    if not ys:
        z0 = [state[..., s, 0] for s in range(sections)]
        z1 = [state[..., s, 1] for s in range(sections)]
    zf = _c_order(np.stack([np.stack([p, q], axis=-1) for p, q in zip(z0, z1)], axis=-2))
    return (y, 0), (np.moveaxis(zf, (-2, -1), (1, ax + 2)), 0)


@scipy_rule(signal.sosfilt)
def sosfilt_rule(sos, sos_bdim, x, x_bdim, axis=-1, zi=None, zi_bdim=None):
    if sos_bdim is not None:
        return sosfilt_batched(sos, sos_bdim, x, x_bdim, axis, zi, zi_bdim)
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


_filtfilt = signal.filtfilt  # (the function itself: the rules load before it is intercepted)
_FILTFILT = inspect.signature(_filtfilt)


@scipy_rule(signal.filtfilt, raw=True)
def filtfilt_rule(level, args, kwargs):
    """Batched coefficients: ``filtfilt``'s own code on the batched values (its ``lfilter``
    calls filter the batch, coefficients and all); else one call on the batch."""
    p = _FILTFILT.bind(*args, **kwargs)
    p.apply_defaults()
    b, a, x, axis, padtype, padlen, method, irlen = p.arguments.values()
    if unwrap(b, level)[1] is not None or unwrap(a, level)[1] is not None:
        require(method == "pad", "filtfilt(method='gust') with batched coefficients")
        return _filtfilt(*args, **kwargs)
    x, x_bdim = unwrap(x, level)
    ax = front_axis(axis, logical_rank(x, x_bdim))
    fn = call(signal, "filtfilt")
    if method == "gust":  # Gustafsson's method solves a least-squares problem of the batch
        empty = no_examples(x, x_bdim, lambda e: fn(b, a, e, axis, padtype, padlen, method,
                                                    irlen))
        if empty is not None:  # (LAPACK refuses one of no rows)
            return wrap_result(empty, level)
    return wrap_result((fn(b, a, move(x, x_bdim), ax, padtype, padlen, method, irlen), 0),
                       level)


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


@scipy_rule(signal.upfirdn)
def upfirdn_rule(h, h_bdim, x, x_bdim, up=1, down=1, axis=-1, mode="constant", cval=0):
    if h_bdim is not None:  # each example's filter: SciPy's polyphase filter once per example
        size = _size(h, h_bdim, x, x_bdim)
        require(size > 0, "upfirdn with a batched filter and no examples")
        fn = call(signal, "upfirdn")
        return _each_example(lambda hi, xi: fn(hi, xi, up, down, axis, mode, cval), size,
                             (h, x), (h_bdim, x_bdim))
    ax = front_axis(axis, logical_rank(x, x_bdim))
    return call(signal, "upfirdn")(h, move(x, x_bdim), up, down, ax, mode, cval), 0


def _spline_basis(name: str) -> None:
    """``cspline1d_eval`` / ``qspline1d_eval`` evaluate their B-spline basis (``_cubic``,
    ``_quadratic``: compiled, element by element) at each point: one call on the batch."""
    op, fn = getattr(_spline_filters, name), call(_spline_filters, name)

    @scipy_rule(op)
    def rule(x, x_bdim):
        return fn(x), x_bdim

    rule.__name__ = f"{name}_rule"
    ARRAY_0D[op] = Array0d.ALWAYS  # (a 0-d point gives a 0-d array)


for _name in ("_cubic", "_quadratic"):
    _spline_basis(_name)


# ---- scipy.signal._sigtools: the compiled 2-d convolution and median filter ---------------------
#: ``_convolve2d``'s boundary flags (``_bvalfromboundary``): fill 0, symm 4, wrap 8; its modes
#: (``_valfrommode``): valid 0, same 1, full 2
_PAD, _SYMM = 0, 4
#: output elements per pass of the sum of shifted products (its temporaries stay in cache)
_CHUNK = 1 << 16


def _shifted_pays(size: int, out: int, taps: int) -> bool:
    """Whether the sum of shifted products over the batch beats SciPy's kernel called once
    per example. The sum costs ~25 us, ~6 us per tap and chunk of ``_CHUNK`` outputs, ~2 ns
    per tap and output; a compiled call ~5 us, ~4 ns per tap and output. Measured (float64,
    'same', 'symm') against the loop: B=6, 5x5 images, 3x3 kernel: 80 us against 30 us;
    B=6, 64x64, 3x3: 0.3 ms against 0.7 ms; B=100, 64x64, 15x15: 0.26 s against 0.49 s;
    B=1000, 32x32, 9x9: 0.22 s against 0.48 s."""
    chunks = max(1, -(-size * out // _CHUNK))
    return size == 0 or 25 + 6 * taps * chunks + 0.002 * size * out * taps < \
        size * (5 + 0.004 * out * taps)


def _window(n: int, taps: int, mode: int, flip: bool) -> tuple[int, int, int]:
    """Along one axis of ``_convolve2d``: the output's length, the input index tap 0 reads
    for its first element, and the lowest index any tap reads for it."""
    out = (n - taps + 1, n, n + taps - 1)[mode]
    if mode == 2:
        start = 0 if flip else 1 - taps
    elif mode == 1:
        start = (taps - 1) >> 1 if flip else -((taps - 1) >> 1)
    else:
        start = taps - 1 if flip else 0
    return out, start, start - (taps - 1) if flip else start


def _extended(x, ax, n, low, length, boundary, fill):
    """``x``'s elements ``low .. low + length - 1`` along ``ax`` as the kernel reads them:
    past the ends ``fill`` (fill), mirrored again and again (symm), periodic (wrap)."""
    if boundary == _PAD:
        before, after = max(0, -low), max(0, low + length - n)
        if before or after:
            pad = [(0, 0)] * x.ndim
            pad[ax] = (before, after)
            x = np.pad(x, pad, constant_values=fill)
        index = [slice(None)] * x.ndim
        index[ax] = slice(low + before, low + before + length)
        return x[tuple(index)]
    r = np.arange(low, low + length, like=innermost(x))
    if boundary == _SYMM:
        r = np.where(r >= 0, r, -1 - r) % (2 * n)
        r = np.where(r >= n, 2 * n - 1 - r, r)
    return np.take(x, r % n, axis=ax)


def _shifted_sum(ext, kernel, batched_kernel, geo, flip, acc):
    """The kernel's sum into ``acc`` (batch first), in its order: row by row, each row's taps
    four at a time (their products summed left to right, then added), the rest one by one,
    onto a zeroed sum. ``ext``: the extended input, batch first where batched."""
    (o0, s0, low0), (o1, s1, low1) = geo
    s0, s1 = s0 - low0, s1 - low1  # (tap 0's first element in ``ext``)
    rows, cols = kernel.shape[-2:]
    plain = type(ext) is np.ndarray and type(kernel) is np.ndarray
    group = np.empty(acc.shape, acc.dtype) if plain else None
    term = np.empty(acc.shape, acc.dtype) if plain else None
    total = None

    def product(j, k, out):
        w = kernel[:, j, k, None, None] if batched_kernel else kernel[j, k]
        at0, at1 = (s0 - j, s1 - k) if flip else (s0 + j, s1 + k)
        return np.multiply(w, ext[..., at0:at0 + o0, at1:at1 + o1], out=out)

    whole = cols - cols % 4
    parts = [(k, k + 4) for k in range(0, whole, 4)] + [(k, k + 1) for k in range(whole, cols)]
    for j in range(rows):
        for lo, hi in parts:
            g = product(j, lo, group)
            for k in range(lo + 1, hi):
                g += product(j, k, term)
            if total is None:
                total = np.add(g, acc.dtype.type(0), out=acc if plain else None)
            else:
                total += g
    return acc if total is None else total


@scipy_rule(_sigtools._convolve2d)
def convolve2d_rule(in1, in1_bdim, in2, in2_bdim, flip=1, mode=2, boundary=0,
                    fillvalue=NoValue, /):
    """``convolve2d`` / ``correlate2d``'s kernel: the sum of shifted products over the batch,
    in the kernel's order and dtype (the same values to the bit for real dtypes on x86-64),
    or the kernel once per example where that costs less (``_shifted_pays``)."""
    size = _size(in1, in1_bdim, in2, in2_bdim)
    like = in1 if in1_bdim is not None else in2
    in1, in2 = as_array(in1, like), as_array(in2, like)
    require(logical_rank(in1, in1_bdim) == 2 and logical_rank(in2, in2_bdim) == 2,
            "_convolve2d of arrays that are not 2-d")
    require(fillvalue is NoValue or type(fillvalue) in (int, float, complex)
            or isinstance(fillvalue, (np.generic, np.ndarray)), "_convolve2d: a fillvalue")
    fill = () if fillvalue is NoValue else (fillvalue,)
    # SciPy's own errors for the dtypes, flags and fill value, and the dtype it computes in
    dtype = _convolve2d(np.zeros((1, 1), in1.dtype), np.zeros((1, 1), in2.dtype), flip, mode,
                        boundary, *fill).dtype
    require(mode in (0, 1, 2) and boundary in (0, 4, 8), "_convolve2d: flags past SciPy's")
    n, taps = logical_shape(in1, in1_bdim), logical_shape(in2, in2_bdim)
    geo = [_window(n[a], taps[a], mode, bool(flip)) for a in (0, 1)]
    out = (geo[0][0], geo[1][0])
    require(min(out) >= 0, "_convolve2d: no part of the output is valid")
    reads = out[0] * out[1] * taps[0] * taps[1] > 0
    require(boundary == _PAD or min(n) > 0 or not reads,
            "_convolve2d wraps or mirrors an empty image")  # (SciPy divides by zero)
    plain = type(in1) is np.ndarray and type(in2) is np.ndarray  # (else: inside other vmaps)
    # (complex infinities: the kernel's complex product recovers them, NumPy's does not)
    finite = dtype.kind != "c" or (all_examples(np.isfinite(in1))
                                   and all_examples(np.isfinite(in2)))
    if size and (not finite or plain and not _shifted_pays(size, out[0] * out[1],
                                                           taps[0] * taps[1])):
        return _each_example(call(_sigtools, "_convolve2d"), size, (in1, in2),
                             (in1_bdim, in2_bdim), flip, mode, boundary, *fill)
    value = np.zeros((), dtype) if boundary != _PAD or not fill else \
        np.reshape(np.array(fillvalue, dtype), ())  # (SciPy's cast: checked above)
    x = in1 if in1_bdim is None else move(in1, in1_bdim)
    x = x.astype(dtype, copy=False)
    kernel = (in2 if in2_bdim is None else move(in2, in2_bdim)).astype(dtype, copy=False)
    acc = np.zeros((size,) + out, dtype, like=innermost(like))
    if not reads:
        return acc, 0
    for a in (0, 1):
        o, _, low = geo[a]
        x = _extended(x, x.ndim - 2 + a, n[a], low, o + taps[a] - 1, boundary, value[()])
    per = size if not plain else max(1, _CHUNK // (out[0] * out[1]))
    with np.errstate(all="ignore"):  # (compiled code sets no floating-point flags)
        if per >= size:
            return _shifted_sum(x, kernel, in2_bdim is not None, geo, bool(flip), acc), 0
        for s in range(0, size, per):
            part = slice(s, s + per)
            _shifted_sum(x if in1_bdim is None else x[part],
                         kernel if in2_bdim is None else kernel[part], in2_bdim is not None,
                         geo, bool(flip), acc[part])
    return acc, 0


@scipy_rule(_sigtools._medfilt2d)
def medfilt2d_rule(image, image_bdim, size=NoValue, /):
    """``medfilt2d``'s kernel, the median of each zero-padded window: ndimage's median with a
    window of one along the batch axis selects the same element (not with NaN, whose place
    in SciPy's selection depends on the order it meets them: the per-example loop)."""
    require(logical_rank(image, image_bdim) == 2 and image.dtype in _MEDIAN_DTYPES,
            "_medfilt2d of an image that is not 2-d uint8, float32 or float64")
    window = [3, 3] if size is NoValue else size
    require(isinstance(window, (list, tuple, np.ndarray)) and np.ndim(window) == 1
            and len(window) >= 2, "_medfilt2d: a window size")
    window = [int(k) for k in window[:2]]
    require(min(window) > 0, "_medfilt2d: an empty window")
    require(image.dtype.kind != "f" or not any_example(np.isnan(image)), "_medfilt2d of NaN")
    return call(ndimage, "median_filter")(move(image, image_bdim), size=[1] + window,
                                          mode="constant", cval=0), 0


_MEDIAN_DTYPES = (np.dtype(np.uint8), np.dtype(np.float32), np.dtype(np.float64))
