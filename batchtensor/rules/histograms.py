"""Histograms and counts: bincount histogram histogram_bin_edges histogramdd histogram2d.

Split from statistics.py by subject: counting each example's values into bins (integer bins for
bincount, bin edges for the histograms). digitize, which finds bins without counting, stays
with searchsorted in rules/sorting.py.

Histograms compute every example's bin edges (a fixed count, so shapes agree even when the
edges differ per example) and count all examples with one ``bincount``.
"""

from __future__ import annotations

import math
import operator
import warnings

import numpy as np

from ..errors import DataDependentError
from ..plumbing import innermost, unwrap, wrap
from ..registry import batch_rule, decomposition
from ..tensor import BatchedTensor
from ._helpers import (all_examples, any_example, batch_size_of, dry_run, ensure_bdim,
                       logical_rank, logical_shape, move_bdim_to_front, ndim_of, require)
from .sorting import batched_searchsorted


# ---- bincount -----------------------------------------------------------------------------------
def _concrete(v) -> int:
    """A Python int from a physical 0-d value. An outer level's BatchedTensor has none (its
    examples may differ), so such a call is handed to the loop."""
    require(type(v) is not BatchedTensor, "a data-dependent length under nested vmap")
    return int(v)


@batch_rule(np.bincount)
def bincount_rule(x, x_bdim, /, weights=None, weights_bdim=None, minlength=0):
    n = batch_size_of((x, weights), (x_bdim, weights_bdim))
    lshape = logical_shape(x, x_bdim)
    wl = None if weights is None else np.zeros(logical_shape(weights, weights_bdim),
                                               dtype=weights.dtype)
    # NumPy's rank, dtype, length and minlength checks on one example of zeros
    dry_run(np.bincount, lshape if len(lshape) != 1 else (lshape[0],), x.dtype, weights=wl,
            minlength=minlength)
    xv = ensure_bdim(x, x_bdim, n).astype(np.intp)
    size = xv.shape[1]
    if size and n:
        if any_example(xv < 0):
            raise ValueError("'list' argument must have no negative elements")
        # every example's length, at every level (x batched at outer levels too)
        lengths = innermost(np.maximum(np.max(xv, axis=1) + 1, minlength))
        length, least = _concrete(np.max(lengths)), _concrete(np.min(lengths))
        if n and least != length:
            raise DataDependentError(
                f"numpy.bincount: the output length is max(x) + 1, which differs between the "
                f"examples (from {least} to {length}), so the results "
                f"cannot be stacked into one batch. Pass minlength={length} (or any bound on "
                f"the values) so that every example has the same length.")
    else:
        length = operator.index(minlength)
    flat = np.reshape(xv + np.reshape(np.arange(n, like=xv) * length, (n, 1)), (-1,))
    wf = None
    if weights is not None:
        wf = np.reshape(ensure_bdim(weights, weights_bdim, n), (-1,))
    out = np.bincount(flat, weights=wf, minlength=n * length)
    return np.reshape(out, (n, length)), 0


# ---- histograms ---------------------------------------------------------------------------------
def _dtype_of(v):
    return v.dtype if hasattr(v, "dtype") else v


def _linspace(first, last, num: int, dtype=None):
    """np.linspace(first, last, num) for every example: first/last (B,) -> (B, num); the
    same arithmetic as NumPy's (so the same edges as one example's call)."""
    dt = np.result_type(_dtype_of(first), _dtype_of(last), float(num))
    delta = np.subtract(last, first, dtype=type(dt))[:, None]
    y = np.reshape(np.arange(0, num, dtype=dt, like=delta), (1, num))
    div = num - 1
    if div > 0:
        step = delta / div
        y = y / div * delta if any_example(step == 0) else y * step
    else:
        y = y * delta
    y = y + first[:, None]
    if num > 1:
        y = np.concatenate((y[:, :-1], np.broadcast_to(last[:, None], (y.shape[0], 1))
                            .astype(y.dtype)), axis=1)
    return y.astype(dt if dtype is None else dtype, copy=False)


def _on_backend(arr, x):
    """A NumPy array we built, moved to ``x``'s backend (CuPy) where ``x`` is not NumPy's
    (the backend of the physical array under an outer level's BatchedTensor)."""
    x = innermost(x)
    if type(x) is np.ndarray:
        return arr
    return np.asarray(arr, like=x)


def _outer_edges(x, rng_, n: int):
    """(first, last) per example of the raveled ``x`` (B, N): Python values for a given
    ``range`` (shared by every example), arrays (B,) from each example's min and max otherwise."""
    if rng_ is not None:
        first, last = rng_
        if first > last:
            raise ValueError("max must be larger than min in range parameter.")
        if not (np.isfinite(first) and np.isfinite(last)):
            raise ValueError(f"supplied range of [{first}, {last}] is not finite")
        if first == last:
            first, last = first - 0.5, last + 0.5
        return first, last
    if x.shape[1] == 0:
        return 0, 1
    first, last = np.min(x, axis=1), np.max(x, axis=1)
    finite = np.isfinite(first) & np.isfinite(last)
    if not all_examples(finite):
        if type(first) is not np.ndarray and type(first) is not BatchedTensor:
            raise ValueError("autodetected range is not finite")  # (values stay on the device)
        i = _concrete(np.argmin(finite))
        raise ValueError(f"autodetected range of [{first[i]}, {last[i]}] is not finite")
    same = first == last
    if any_example(same):
        first = np.where(same, first - 0.5, first)
        last = np.where(same, last + 0.5, last)
    return first, last


def _check_increasing(edges, msg: str):
    if any_example(edges[..., :-1] > edges[..., 1:]):
        raise ValueError(msg)


def _edges(x, bins, bins_bdim, rng_, n: int, *, shared_dtype: bool, what: str = "`bins`"):
    """The bin edges of every example: ``(edges, batched)``; ``edges`` is (nbins+1,) when
    shared by every example, else (B, nbins+1). ``shared_dtype``: np.histogram's rule (edges
    in the data's float type); np.histogramdd uses linspace's default."""
    if bins_bdim is None and ndim_of(bins) == 0:
        if isinstance(bins, str):
            require(False, "np.histogram with an automatic bin count (data-dependent)")
        try:
            count = operator.index(bins)
        except TypeError as e:
            raise TypeError(f"{what} must be an integer, a string, or an array") from e
        if count < 1:
            raise ValueError(f"{what} must be positive, when an integer")
        first, last = _outer_edges(x, rng_, n)
        dtype = None
        if shared_dtype:
            dtype = np.result_type(_dtype_of(first), _dtype_of(last), x.dtype)
            if np.issubdtype(dtype, np.integer):
                dtype = np.result_type(dtype, float)
        if ndim_of(first) == 0:
            edges = _on_backend(np.linspace(first, last, count + 1, endpoint=True,
                                            dtype=dtype), x)
            batched = False
        else:
            edges, batched = _linspace(first, last, count + 1, dtype), True
        if shared_dtype and bool(np.any(edges[..., :-1] >= edges[..., 1:])):
            raise ValueError(f"Too many bins for data range. Cannot create {count} "
                             f"finite-sized bins.")
        return edges, batched
    if bins_bdim is None:
        edges = bins if hasattr(bins, "ndim") else _on_backend(np.asarray(bins), x)
        if edges.ndim != 1:
            raise ValueError(f"{what} must be 1d, when an array")
        _check_increasing(edges, f"{what} must increase monotonically, when an array")
        return edges, False
    require(logical_rank(bins, bins_bdim) != 0, "a batched bin count (the shape is data)")
    if logical_rank(bins, bins_bdim) != 1:
        raise ValueError(f"{what} must be 1d, when an array")
    edges = move_bdim_to_front(bins, bins_bdim)
    _check_increasing(edges, f"{what} must increase monotonically, when an array")
    return edges, True


def _bin_index(x, edges, batched: bool):
    """np.searchsorted(edges, x, side='right') per example: x (B, N)."""
    if not batched:
        return np.searchsorted(edges, x, side="right")
    return batched_searchsorted(edges, x, "right")


def _raveled(a, a_bdim, n: int):
    x = ensure_bdim(a, a_bdim, n)
    if x.dtype == np.bool_:
        warnings.warn(f"Converting input from {x.dtype} to {np.uint8} for compatibility.",
                      RuntimeWarning, stacklevel=5)
        x = x.astype(np.uint8)
    return np.reshape(x, (n, math.prod(x.shape[1:])))


def _weights_like(weights, weights_bdim, a, a_bdim, n: int):
    if weights is None:
        return None
    if logical_shape(weights, weights_bdim) != logical_shape(a, a_bdim):
        raise ValueError("weights should have the same shape as a.")
    w = ensure_bdim(weights, weights_bdim, n)
    return np.reshape(w, (n, math.prod(w.shape[1:])))


def _counts(idx, keep, w, nbins: int, n: int, ntype):
    """Per-example bincount of ``idx`` (B, N) over ``nbins``; elements not kept are dropped."""
    idx = np.where(keep, idx, nbins)  # one spare bin per example for the dropped elements
    flat = np.reshape(idx + np.reshape(np.arange(n, like=idx) * (nbins + 1), (n, 1)), (-1,))

    def count(weights):
        wf = None if weights is None else np.reshape(weights, (-1,))
        c = np.bincount(flat, weights=wf, minlength=n * (nbins + 1))
        return np.reshape(c, (n, nbins + 1))[:, :nbins]

    if w is not None and np.dtype(ntype).kind == "c":
        out = np.zeros((n, nbins), dtype=ntype, like=idx)
        out.real, out.imag = count(np.real(w)), count(np.imag(w))
        return out
    return count(w).astype(ntype)


def _histogram(a, a_bdim, bins, bins_bdim, range, weights, weights_bdim):
    n = batch_size_of((a, bins, weights), (a_bdim, bins_bdim, weights_bdim))
    x = _raveled(a, a_bdim, n)
    w = _weights_like(weights, weights_bdim, a, a_bdim, n)
    if w is not None:
        require(np.can_cast(w.dtype, np.double) or np.can_cast(w.dtype, complex),
                "np.histogram with weights of a non-numeric dtype")
    edges, batched = _edges(x, bins, bins_bdim, range, n, shared_dtype=True)
    return x, w, edges, batched, n


@batch_rule(np.histogram)
def histogram_rule(a, a_bdim, bins=10, bins_bdim=None, range=None, density=None, weights=None,
                   weights_bdim=None):
    x, w, edges, batched, n = _histogram(a, a_bdim, bins, bins_bdim, range, weights,
                                         weights_bdim)
    nbins = edges.shape[-1] - 1
    e = edges if batched else edges[None, :]
    if ndim_of(bins) == 0 and not isinstance(bins, str) and bins_bdim is None:
        x = x.astype(edges.dtype, copy=False)  # NumPy compares in the edges' type
    keep = (x >= e[:, :1]) & (x <= e[:, -1:])
    idx = np.minimum(_bin_index(x, edges, batched) - 1, nbins - 1)
    hist = _counts(idx, keep, w, nbins, n, np.intp if w is None else w.dtype)
    if density:
        db = np.diff(e, axis=1).astype(float)
        hist = hist / db / np.sum(hist, axis=1, keepdims=True)
    return (hist, 0), (edges, 0 if batched else None)


@batch_rule(np.histogram_bin_edges)
def histogram_bin_edges_rule(a, a_bdim, bins=10, bins_bdim=None, range=None, weights=None,
                             weights_bdim=None):
    _, _, edges, batched, _ = _histogram(a, a_bdim, bins, bins_bdim, range, weights,
                                         weights_bdim)
    return edges, 0 if batched else None


def _dd_sample(sample, level, n_hint):
    """``sample`` of np.histogramdd as (B, N, D) batch-first, from an array or a sequence."""
    if hasattr(sample, "shape"):
        v, b = unwrap(sample, level)
        nd = logical_rank(v, b)
        x = ensure_bdim(v, b, n_hint)
        if nd == 1:
            return np.reshape(x, x.shape + (1,))
        if nd != 2:  # NumPy: np.atleast_2d(sample).T cannot be unpacked into (N, D)
            raise ValueError(f"too many values to unpack (expected 2, got {nd})")
        return x
    cols = []
    for s in sample:
        v, b = unwrap(s, level)
        v = v if hasattr(v, "ndim") else np.asarray(v)
        if logical_rank(v, b) != 1:
            require(False, "np.histogramdd with a sequence of non-1-d samples")
        cols.append(ensure_bdim(v, b, n_hint))
    if len({c.shape[1] for c in cols}) != 1:
        raise ValueError("all input arrays must have the same shape")
    return np.stack(tuple(cols), axis=-1)


def _batch_size_raw(level, *objs):
    """The batch size from the first value batched at ``level`` (in sequences too)."""
    for o in objs:
        for v in (o if isinstance(o, (list, tuple)) else (o,)):
            x, b = unwrap(v, level)
            if b is not None:
                return x.shape[b]
    raise ValueError("no batched value")


@batch_rule(np.histogramdd, raw=True)
def histogramdd_rule(level, args, kwargs):
    names = ("sample", "bins", "range", "density", "weights")
    bound = dict(zip(names, args))
    bound.update(kwargs)
    sample, bins = bound["sample"], bound.get("bins", 10)
    rng_, density, weights = bound.get("range"), bound.get("density"), bound.get("weights")
    n = _batch_size_raw(level, sample, bins, weights)
    x = _dd_sample(sample, level, n)
    D = x.shape[2]
    w = None
    if weights is not None:
        wv, wb = unwrap(weights, level)
        w = ensure_bdim(wv if hasattr(wv, "ndim") else np.asarray(wv), wb, n)
    try:
        if len(bins) != D:
            raise ValueError("The dimension of bins must be equal to the dimension of the "
                             "sample x.")
    except TypeError:  # an integer
        bins = D * [bins]
    if rng_ is None:
        rng_ = (None,) * D
    elif len(rng_) != D:
        raise ValueError("range argument must have one entry per dimension")
    edges, counts, batched = [], [], []
    for i in range(D):
        bv, bb = unwrap(bins[i], level)
        if bb is None and ndim_of(bv) > 1 or bb is not None and logical_rank(bv, bb) != 1:
            raise ValueError(f"`bins[{i}]` must be a scalar or 1d array")
        col = x[:, :, i]
        e, eb = _edges(col, bv, bb, rng_[i], n, shared_dtype=False, what=f"`bins[{i}]`")
        idx = _bin_index(col, e, eb)
        idx = np.where(col == (e[:, -1:] if eb else e[-1]), idx - 1, idx)  # last edge inclusive
        edges.append(e)
        batched.append(eb)
        counts.append(idx)
    nbin = tuple(e.shape[-1] + 1 for e in edges)  # an outlier bin on each end
    total = math.prod(nbin)
    xy = 0
    for i, c in enumerate(counts):  # np.ravel_multi_index(counts, nbin), C order
        xy = xy + c * math.prod(nbin[i + 1:])
    flat = np.reshape(xy + np.reshape(np.arange(n, like=xy) * total, (n, 1)), (-1,))
    wf = None if w is None else np.reshape(w, (-1,))
    hist = np.bincount(flat, wf, minlength=n * total)
    hist = np.reshape(hist, (n,) + nbin).astype(float, casting="safe")
    hist = hist[(slice(None),) + D * (slice(1, -1),)]
    if density:
        s = np.sum(hist, axis=tuple(range(1, D + 1)), keepdims=True)
        for i in range(D):
            shape = [1] * (D + 1)
            shape[i + 1] = nbin[i] - 2
            de = np.diff(edges[i], axis=-1)
            if batched[i]:
                shape[0] = n
            hist = hist / np.reshape(de, tuple(shape))
        hist = hist / s
    return wrap(hist, 0, level), [wrap(e, 0, level) if eb else e
                                  for e, eb in zip(edges, batched)]


@decomposition(np.histogram2d)
def histogram2d(x, y, bins=10, range=None, density=None, weights=None):
    try:
        nb = len(bins)
    except TypeError:
        nb = 1
    if nb != 1 and nb != 2:
        bins = [bins, bins]  # one array of edges for both dimensions
    hist, edges = np.histogramdd((x, y), bins, range, density, weights)
    return hist, edges[0], edges[1]
