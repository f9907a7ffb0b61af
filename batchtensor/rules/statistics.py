"""Statistics: quantile percentile nanquantile nanpercentile average cov corrcoef bincount
histogram histogram_bin_edges histogramdd histogram2d, and differences and integrals: diff
ediff1d gradient trapezoid.

Order statistics with an unbatched ``q`` are one NumPy call over the shifted axes (the ``q``
dimensions come first in the output, as in NumPy). A batched ``q`` is computed here on the
sorted examples with NumPy's own formulas (virtual index, gamma, lerp) for every ``method``.
Histograms compute every example's bin edges (a fixed count, so shapes agree even when the
edges differ per example) and count all examples with one ``bincount``.
"""

from __future__ import annotations

import math
import operator
import warnings

import numpy as np

from ..errors import unbatched_out_error
from ..plumbing import unwrap, wrap
from ..errors import BatchingError
from ..registry import batch_rule, decomposition
from ..tensor import BatchedTensor
from ._helpers import (batch_size_of, dry_run, ensure_bdim, logical_rank, logical_shape,
                       move_bdim_to_front, ndim_of, physical_axis, require, truthy, wrap_axes,
                       wrap_axis)
from .sorting import batched_searchsorted


def _reduced_axes(axis, nd: int) -> tuple:
    return tuple(range(nd)) if axis is None else wrap_axes(axis, nd)


def _small(shape) -> tuple:
    """A shape of the same rank with every non-zero length 1 (cheap argument validation)."""
    return tuple(min(d, 1) for d in shape)


# ---- quantiles ----------------------------------------------------------------------------------
def _cvi(alpha: float, beta: float):
    return lambda n, q: n * q + (alpha + q * (1 - alpha - beta)) - 1


def _discrete(index, cond):
    prev = np.floor(index)
    res = np.where(cond(index - prev, index), prev, prev + 1).astype(np.intp)
    return np.maximum(res, 0)


#: method -> (virtual index from (n, q), gamma fix or None for methods with integer indices);
#: NumPy's table (numpy/lib/_function_base_impl.py), written with plain array functions.
_QUANTILE_METHODS = {
    "inverted_cdf": (lambda n, q: _discrete(n * q - 1, lambda g, i: g == 0), None),
    "averaged_inverted_cdf": (lambda n, q: (n * q) - 1,
                              lambda g, i: np.where(g == 0, 0.5, 1.0)),
    "closest_observation": (lambda n, q: _discrete(
        (n * q) - 1 - 0.5, lambda g, i: (g == 0) & (np.floor(i) % 2 == 1)), None),
    "interpolated_inverted_cdf": (_cvi(0, 1), lambda g, i: g),
    "hazen": (_cvi(0.5, 0.5), lambda g, i: g),
    "weibull": (_cvi(0, 0), lambda g, i: g),
    "linear": (lambda n, q: (n - 1) * q, lambda g, i: g),
    "median_unbiased": (_cvi(1 / 3.0, 1 / 3.0), lambda g, i: g),
    "normal_unbiased": (_cvi(3 / 8.0, 3 / 8.0), lambda g, i: g),
    "lower": (lambda n, q: np.floor((n - 1) * q).astype(np.intp), None),
    "higher": (lambda n, q: np.ceil((n - 1) * q).astype(np.intp), None),
    "midpoint": (lambda n, q: 0.5 * (np.floor((n - 1) * q) + np.ceil((n - 1) * q)),
                 lambda g, i: np.where(i % 1 == 0, 0.0, 0.5)),
    "nearest": (lambda n, q: np.around((n - 1) * q).astype(np.intp), None),
}


def _gather(xs, idx, nq: int):
    """xs (B, *rest, n), idx (B, *qs) -> (B, *qs, *rest): example b's values at its indices."""
    nrest = xs.ndim - 2
    xe = np.reshape(xs, xs.shape[:1] + (1,) * nq + xs.shape[1:])
    ie = np.reshape(idx, idx.shape + (1,) * (nrest + 1))
    return np.take_along_axis(xe, ie, axis=-1)[..., 0]


def _batched_q_quantile(xs, q, method: str):
    """Quantiles ``q`` (B, *qs; fractions) of the sorted examples ``xs`` (B, *rest, n)."""
    try:
        virtual_index, fix_gamma = _QUANTILE_METHODS[method]
    except KeyError:
        raise ValueError(f"{method!r} is not a valid method. Use one of: "
                         f"{_QUANTILE_METHODS.keys()}") from None
    n = xs.shape[-1]
    nq = q.ndim - 1
    vi = virtual_index(n, q)
    if fix_gamma is None or (method == "linear" and np.issubdtype(vi.dtype, np.integer)):
        res = _gather(xs, vi, nq)
    else:
        prev = np.floor(vi)
        above, below = vi >= n - 1, vi < 0
        prev = np.where(above, -1, np.where(below, 0, prev))
        nxt = np.where(above, -1, np.where(below, 0, prev + 1))
        gamma = fix_gamma(vi - prev, vi).astype(vi.dtype, copy=False)
        gamma = np.reshape(gamma, gamma.shape + (1,) * (xs.ndim - 2))
        to_index = lambda i: np.where(i < 0, n + i, i).astype(np.intp)  # noqa: E731
        a, b = _gather(xs, to_index(prev), nq), _gather(xs, to_index(nxt), nq)
        diff = b - a
        res = np.where(gamma >= 0.5, b - diff * (1 - gamma), a + diff * gamma)
    if np.issubdtype(xs.dtype, np.inexact) and n:
        last = xs[..., -1]
        last = np.reshape(last, last.shape[:1] + (1,) * nq + last.shape[1:])
        res = np.where(np.isnan(last), last, res).astype(res.dtype, copy=False)
    return res


def _batched_q_weighted(x, w, q):
    """Weighted ``inverted_cdf`` quantiles (NumPy's algorithm): x, w (B, *rest, n) unsorted,
    q (B, *qs) -> (B, *qs, *rest)."""
    n = x.shape[-1]
    order = np.argsort(x, axis=-1)
    xs = np.take_along_axis(x, order, axis=-1)
    cdf = np.cumsum(np.take_along_axis(w, order, axis=-1), axis=-1, dtype=np.float64)
    cdf = cdf / cdf[..., -1:]
    if bool(np.any(np.isnan(cdf[..., -1]))):
        raise ValueError("Weights included NaN, inf or were all zero.")
    if q.dtype.kind == "f":
        cdf = cdf.astype(q.dtype)
    cdf = np.where(cdf == 0, -1, cdf)  # zero weights first: q=0 picks the first weighted value
    rest, qs = x.shape[1:-1], q.shape[1:]
    lanes = np.reshape(cdf, (-1, n))
    qb = np.reshape(q, q.shape[:1] + (1,) * len(rest) + (math.prod(qs),))
    qb = np.reshape(np.broadcast_to(qb, x.shape[:-1] + qb.shape[-1:]), (lanes.shape[0], -1))
    idx = np.minimum(batched_searchsorted(lanes, qb, "left"), n - 1)
    res = np.take_along_axis(xs, np.reshape(idx, x.shape[:-1] + (-1,)), axis=-1)
    if np.issubdtype(x.dtype, np.inexact):
        res = np.where(np.isnan(xs[..., -1:]), xs[..., -1:], res)
    res = np.moveaxis(res, -1, 1)  # (B, Q, *rest)
    return np.reshape(res, q.shape + rest)


def _quantile_like(op, scale: float, nan: bool):
    name = op.__name__
    unit = "Percentiles must be in the range [0, 100]" if scale == 100 else \
        "Quantiles must be in the range [0, 1]"

    keepdims_default = np._NoValue if nan else False  # as NumPy's own signatures

    def rule(a, a_bdim, q, q_bdim, axis=None, out=None, overwrite_input=False, method="linear",
             keepdims=keepdims_default, *, weights=None, weights_bdim=None):
        if out is not None:
            raise unbatched_out_error(f"numpy.{name}")
        nd = logical_rank(a, a_bdim)
        laxes = _reduced_axes(axis, nd)
        kw = {"method": method, "overwrite_input": overwrite_input}
        if keepdims is not np._NoValue:
            kw["keepdims"] = keepdims
        n = batch_size_of((a, q, weights), (a_bdim, q_bdim, weights_bdim))
        x = ensure_bdim(a, a_bdim, n)
        w = None
        if weights is not None:
            # NumPy validates method, shapes and axis; the weighted nan-variants run per lane
            dry_run(op, _small(x.shape[1:]), x.dtype, 0.5 * scale, axis=axis, method=method,
                    weights=np.ones(_small(logical_shape(weights, weights_bdim))))
            require(not nan, f"numpy.{name} with weights=")
            w = ensure_bdim(weights, weights_bdim, n)
            if w.ndim != x.ndim:  # 1-d weights along the one reduced axis
                shape = [1] * x.ndim
                shape[0], shape[laxes[0] + 1] = n, w.shape[1]
                w = np.reshape(w, tuple(shape))
            w = np.broadcast_to(w, x.shape)
        if q_bdim is None:
            # NumPy's nan-variants give odd shapes for empty lanes (apply_along_axis): per example
            require(not nan or all(x.shape), f"numpy.{name} of an empty array")
            if w is not None:
                kw["weights"] = w
            res = op(x, q, axis=tuple(a + 1 for a in laxes), **kw)
            return res, ndim_of(q)
        require(not nan, f"numpy.{name} with a batched q")
        qv = move_bdim_to_front(q, q_bdim)
        if qv.ndim - 1 > 2:
            raise ValueError("q must be a scalar or 1d")
        if np.issubdtype(x.dtype, np.complexfloating):
            raise TypeError("a must be an array of real numbers")
        if scale != 1:
            qv = np.true_divide(qv, scale)
        if bool(np.any(~((qv >= 0) & (qv <= 1)))):
            raise ValueError(unit)
        lshape = x.shape[1:]
        kept = [d for d in range(nd) if d not in laxes]
        xs = np.transpose(x, (0,) + tuple(d + 1 for d in kept) + tuple(d + 1 for d in laxes))
        lanes = xs.shape[:1 + len(kept)] + (math.prod(lshape[d] for d in laxes),)
        xs = np.reshape(xs, lanes)
        if w is not None:
            if bool(np.any(w < 0)):
                raise ValueError("Weights must be non-negative.")
            ws = np.transpose(w, (0,) + tuple(d + 1 for d in kept) + tuple(d + 1 for d in laxes))
            res = _batched_q_weighted(xs, np.reshape(ws, lanes), qv)
        else:
            res = _batched_q_quantile(np.sort(xs, axis=-1), qv, method)
        if truthy(keepdims):
            nq = qv.ndim - 1
            res = np.reshape(res, res.shape[:1 + nq]
                             + tuple(1 if d in laxes else lshape[d] for d in range(nd)))
        return res, 0

    rule.__name__ = f"{name}_rule"
    return batch_rule(op)(rule)


quantile_rule = _quantile_like(np.quantile, 1, nan=False)
percentile_rule = _quantile_like(np.percentile, 100, nan=False)
nanquantile_rule = _quantile_like(np.nanquantile, 1, nan=True)
nanpercentile_rule = _quantile_like(np.nanpercentile, 100, nan=True)


# ---- average, cov, corrcoef ---------------------------------------------------------------------
def _full_weights(w, x, laxes, argname: str = "weights"):
    """Batch-first weights broadcast to the batch-first ``x``; a 1-d example of weights lies
    along the one reduced axis (NumPy's rule)."""
    if w.ndim != x.ndim:
        shape = [1] * x.ndim
        shape[0], shape[laxes[0] + 1] = w.shape[0], w.shape[1]
        w = np.reshape(w, tuple(shape))
    return np.broadcast_to(w, x.shape)


@batch_rule(np.average)
def average_rule(a, a_bdim, axis=None, weights=None, weights_bdim=None, returned=False, *,
                 keepdims=np._NoValue):
    nd = logical_rank(a, a_bdim)
    laxes = _reduced_axes(axis, nd)
    n = batch_size_of((a, weights), (a_bdim, weights_bdim))
    x = ensure_bdim(a, a_bdim, n)
    kw = {} if keepdims is np._NoValue else {"keepdims": keepdims}
    if weights is not None:
        # NumPy's shape checks on one example (ones: no division by zero)
        dry_run(np.average, _small(x.shape[1:]), x.dtype, axis=axis,
                weights=np.ones(_small(logical_shape(weights, weights_bdim))))
        kw["weights"] = _full_weights(ensure_bdim(weights, weights_bdim, n), x, laxes)
    res = np.average(x, axis=tuple(d + 1 for d in laxes), returned=returned, **kw)
    return ((res[0], 0), (res[1], 0)) if returned else (res, 0)


def _as_variables(v, bdim, n, rowvar: bool, name: str):
    """One example's ``m``/``y`` as (B, variables, observations), as np.cov reads it."""
    nd = logical_rank(v, bdim)
    if nd > 2:
        raise ValueError(f"{name} has more than 2 dimensions")
    x = ensure_bdim(v, bdim, n)
    if nd < 2:  # np.array(m, ndmin=2)
        x = np.reshape(x, (n, 1, x.shape[1] if nd else 1))
    return x


def _check_obs_weights(w, bdim, n, nobs: int, name: str, frequency: bool):
    if logical_rank(w, bdim) > 1:
        raise RuntimeError(f"cannot handle multidimensional {name}")
    w = ensure_bdim(w, bdim, n).astype(np.float64)
    if w.shape[1] != nobs:
        raise RuntimeError(f"incompatible numbers of samples and {name}")
    if frequency and not bool(np.all(w == np.around(w))):
        raise TypeError("fweights must be integer")
    if bool(np.any(w < 0)):
        raise ValueError(f"{name} cannot be negative")
    return w


def _batched_cov(m, m_bdim, y, y_bdim, rowvar, bias, ddof, fweights, fweights_bdim, aweights,
                 aweights_bdim, dtype):
    """np.cov per example; returns (B, V, V) before NumPy's final squeeze."""
    if ddof is not None and ddof != int(ddof):
        raise ValueError("ddof must be integer")
    n = batch_size_of((m, y, fweights, aweights), (m_bdim, y_bdim, fweights_bdim, aweights_bdim))
    if dtype is None:
        dts = [m.dtype] + ([y.dtype] if y is not None else [])
        dtype = np.result_type(*dts, np.float64)
    mnd = logical_rank(m, m_bdim)
    X = _as_variables(m, m_bdim, n, rowvar, "m").astype(dtype)
    if not rowvar and mnd != 1:
        X = np.swapaxes(X, 1, 2)
    if X.shape[1] == 0:
        return None, n
    if y is not None:
        Y = _as_variables(y, y_bdim, n, rowvar, "y").astype(dtype)
        if not rowvar and Y.shape[1] != 1:
            Y = np.swapaxes(Y, 1, 2)
        X = np.concatenate((X, Y), axis=1)
    if ddof is None:
        ddof = 1 if bias == 0 else 0
    nobs = X.shape[2]
    w = None
    if fweights is not None:
        w = _check_obs_weights(fweights, fweights_bdim, n, nobs, "fweights", True)
    aw = None
    if aweights is not None:
        aw = _check_obs_weights(aweights, aweights_bdim, n, nobs, "aweights", False)
        w = aw if w is None else w * aw
    if w is None:
        avg = np.mean(X, axis=2)
        fact = nobs - ddof
        bad = fact <= 0
        fact = 0.0 if bad else fact
    else:
        avg, w_sum = np.average(X, axis=2, weights=np.broadcast_to(w[:, None, :], X.shape),
                                returned=True)
        w_sum = w_sum[:, 0]
        if ddof == 0:
            fact = w_sum
        elif aweights is None:
            fact = w_sum - ddof
        else:
            fact = w_sum - ddof * np.sum(w * aw, axis=1) / w_sum
        bad = bool(np.any(fact <= 0))
        fact = np.reshape(np.where(fact <= 0, 0.0, fact), (n, 1, 1))
    if bad:
        warnings.warn("Degrees of freedom <= 0 for slice", RuntimeWarning, stacklevel=5)
    X = X - avg[:, :, None]
    X_T = np.swapaxes(X if w is None else X * w[:, None, :], 1, 2)
    c = np.matmul(X, np.conj(X_T))
    c *= np.true_divide(1, fact)  # in place, as NumPy: c keeps its dtype
    return c, n


def _squeeze_cov(c):
    return (c[:, 0, 0], 0) if c.shape[1] == 1 else (c, 0)


def _empty_cov(m, n):
    return np.zeros((n, 0, 0), dtype=np.float64, like=m), 0


@batch_rule(np.cov)
def cov_rule(m, m_bdim, y=None, y_bdim=None, rowvar=True, bias=False, ddof=None,
             fweights=None, fweights_bdim=None, aweights=None, aweights_bdim=None, *,
             dtype=None):
    c, n = _batched_cov(m, m_bdim, y, y_bdim, rowvar, bias, ddof, fweights, fweights_bdim,
                        aweights, aweights_bdim, dtype)
    return _empty_cov(m, n) if c is None else _squeeze_cov(c)


@batch_rule(np.corrcoef)
def corrcoef_rule(x, x_bdim, y=None, y_bdim=None, rowvar=True, *, dtype=None):
    c, n = _batched_cov(x, x_bdim, y, y_bdim, rowvar, False, None, None, None, None, None,
                        dtype)
    if c is None:
        c = np.zeros((n, 0, 0), dtype=np.float64, like=x)
        return c / c, 0  # NumPy divides the empty covariance too (keeps its dtype)
    if c.shape[1] == 1:  # a scalar covariance: nan if 0/nan/inf, else 1
        c = c[:, 0, 0]
        return c / c, 0
    d = np.diagonal(c, axis1=1, axis2=2)
    stddev = np.sqrt(np.real(d))
    c = c / stddev[:, :, None]
    c = c / stddev[:, None, :]
    if c.dtype.kind == "c":
        re, im = np.clip(np.real(c), -1, 1), np.clip(np.imag(c), -1, 1)
        c = np.copy(c)
        c.real, c.imag = re, im
        return c, 0
    return np.clip(c, -1, 1), 0


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
        if bool(np.any(xv < 0)):
            raise ValueError("'list' argument must have no negative elements")
        lengths = np.maximum(np.max(xv, axis=1) + 1, minlength)
        length = _concrete(np.max(lengths))
        if n and _concrete(np.min(lengths)) != length:
            raise BatchingError(
                f"numpy.bincount: the output length is max(x) + 1, which differs between the "
                f"examples (from {_concrete(np.min(lengths))} to {length}), so the results "
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
        y = y / div * delta if bool(np.any(step == 0)) else y * step
    else:
        y = y * delta
    y = y + first[:, None]
    if num > 1:
        y = np.concatenate((y[:, :-1], np.broadcast_to(last[:, None], (y.shape[0], 1))
                            .astype(y.dtype)), axis=1)
    return y.astype(dt if dtype is None else dtype, copy=False)


def _on_backend(arr, x):
    """A NumPy array we built, moved to ``x``'s backend (CuPy) where ``x`` is not NumPy's.
    (An outer level's BatchedTensor takes plain arrays as they are.)"""
    if type(x) is np.ndarray or type(x) is BatchedTensor:
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
    if not bool(np.all(finite)):
        i = _concrete(np.argmin(finite))
        raise ValueError(f"autodetected range of [{first[i]}, {last[i]}] is not finite")
    same = first == last
    if bool(np.any(same)):
        first = np.where(same, first - 0.5, first)
        last = np.where(same, last + 0.5, last)
    return first, last


def _check_increasing(edges, msg: str):
    if bool(np.any(edges[..., :-1] > edges[..., 1:])):
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
    nobs, D = x.shape[1], x.shape[2]
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


# ---- differences and integrals ------------------------------------------------------------------
def _edge_piece(v, bdim, n: int, x, ax: int):
    """``prepend``/``append`` of np.diff batch-first: a 0-d example is broadcast to ``x``'s shape
    with length 1 along the axis (NumPy's rule), anything else is joined as it is."""
    if logical_rank(v, bdim) == 0:
        shape = list(x.shape)
        shape[ax + 1] = 1
        v = ensure_bdim(v, bdim, n)
        return np.broadcast_to(np.reshape(v, (n,) + (1,) * (x.ndim - 1)), tuple(shape))
    return ensure_bdim(v, bdim, n)


@batch_rule(np.diff)
def diff_rule(a, a_bdim, n=1, axis=-1, prepend=np._NoValue, prepend_bdim=None,
              append=np._NoValue, append_bdim=None):
    if n == 0:
        return a, a_bdim
    if n < 0:
        raise ValueError("order must be non-negative but got " + repr(n))
    nd = logical_rank(a, a_bdim)
    if nd == 0:
        raise ValueError("diff requires input that is at least one dimensional")
    ax = wrap_axis(axis, nd)
    if prepend is np._NoValue and append is np._NoValue:
        return np.diff(a, n, axis=physical_axis(ax, a_bdim)), a_bdim
    size = batch_size_of((a, prepend, append), (a_bdim, prepend_bdim, append_bdim))
    x = ensure_bdim(a, a_bdim, size)
    parts = [x]
    if prepend is not np._NoValue:
        parts.insert(0, _edge_piece(prepend, prepend_bdim, size, x, ax))
    if append is not np._NoValue:
        parts.append(_edge_piece(append, append_bdim, size, x, ax))
    return np.diff(np.concatenate(tuple(parts), axis=ax + 1), n, axis=ax + 1), 0


@batch_rule(np.ediff1d)
def ediff1d_rule(ary, ary_bdim, to_end=None, to_end_bdim=None, to_begin=None,
                 to_begin_bdim=None):
    size = batch_size_of((ary, to_end, to_begin), (ary_bdim, to_end_bdim, to_begin_bdim))
    x = ensure_bdim(ary, ary_bdim, size)
    x = np.reshape(x, (size, math.prod(x.shape[1:])))
    dtype = x.dtype
    parts = [x[:, 1:] - x[:, :-1]]
    for name, v, b in (("to_begin", to_begin, to_begin_bdim), ("to_end", to_end, to_end_bdim)):
        if v is None:
            continue
        v = ensure_bdim(v, b, size)
        if not np.can_cast(v.dtype, dtype, casting="same_kind"):
            raise TypeError(f"dtype of `{name}` must be compatible with input `ary` under the "
                            f"`same_kind` rule.")
        v = np.reshape(v, (size, math.prod(v.shape[1:]))).astype(dtype)
        if name == "to_begin":
            parts.insert(0, v)
        else:
            parts.append(v)
    return (parts[0], 0) if len(parts) == 1 else (np.concatenate(tuple(parts), axis=1), 0)


@batch_rule(np.gradient)
def gradient_rule(f, f_bdim, *varargs, axis=None, edge_order=1):
    nd = logical_rank(f, f_bdim)
    axes = _reduced_axes(axis, nd)
    if not axes:  # a 0-d example (or axis=()): no gradients at all, as in NumPy
        return ()
    res = np.gradient(f, *varargs, axis=tuple(physical_axis(a, f_bdim) for a in axes),
                      edge_order=edge_order)
    if len(axes) == 1:
        return res, f_bdim
    return tuple((r, f_bdim) for r in res)


@batch_rule(np.trapezoid)
def trapezoid_rule(y, y_bdim, x=None, x_bdim=None, dx=1.0, axis=-1):
    size = batch_size_of((y, x), (y_bdim, x_bdim))
    yv = ensure_bdim(y, y_bdim, size)
    nd = yv.ndim - 1
    if nd == 0:  # NumPy indexes a list of per-axis slices with ``axis``
        raise IndexError("list assignment index out of range")
    ax = wrap_axis(axis, nd)
    if x is None:
        d = dx
    else:
        xv = ensure_bdim(x, x_bdim, size)
        xnd = xv.ndim - 1
        if xnd == 1:
            d = np.diff(xv, axis=1)
            shape = [size] + [1] * nd
            shape[ax + 1] = d.shape[1]
            d = np.reshape(d, tuple(shape))
        else:
            d = np.diff(xv, axis=wrap_axis(axis, xnd) + 1)
            if xnd < nd:
                d = np.expand_dims(d, tuple(range(1, 1 + nd - xnd)))
    hi = (slice(None),) * (ax + 1) + (slice(1, None),)
    lo = (slice(None),) * (ax + 1) + (slice(None, -1),)
    return np.sum(d * (yv[hi] + yv[lo]) / 2.0, axis=ax + 1), 0
