"""Quantiles: quantile percentile nanquantile nanpercentile.

Split from statistics.py by subject: order statistics of the reduced axes (an unbatched or a
batched ``q``, every ``method``, weighted ``inverted_cdf``). median and nanmedian are boxed
reductions (rules/reductions.py), not here.

Order statistics with an unbatched ``q`` are one NumPy call over the shifted axes (the ``q``
dimensions come first in the output, as in NumPy). A batched ``q`` is computed here on the
sorted examples with NumPy's own formulas (virtual index, gamma, lerp) for every ``method``.

This module also holds the two small helpers that moments.py and differences.py share with it,
public (``__all__``): ``reduced_axes`` (moments.py, differences.py) and ``small``
(moments.py). The other statistics modules import them from here, never the other way round.
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import unbatched_out_error
from ..registry import batch_rule
from ._helpers import (any_example, batch_size_of, dry_run, ensure_bdim, logical_rank,
                       logical_shape, move_bdim_to_front, ndim_of, require, truthy, wrap_axes)
from .sorting import batched_searchsorted


# ---- shared helpers (public, in __all__: moments.py and differences.py import them) -------------
def reduced_axes(axis, nd: int) -> tuple:
    return tuple(range(nd)) if axis is None else wrap_axes(axis, nd)


def small(shape) -> tuple:
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
    if any_example(np.isnan(cdf[..., -1])):
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


def _nan_quantile_one_axis(op, x, q, laxes: tuple, kw: dict):
    """One example's ``op(x, q)`` (axis=None) for every example of the physical ``x`` (batch
    axis first), for a nan-variant and a q of two or more dimensions: the example's axes
    merged into one. Given the batch's axes as a tuple, NumPy's nanquantile interleaves q's
    dimensions with the others (a (2, 2) q over ``axis=(1, 2)`` of a (3, 4, 5) array gives
    (2, 3, 2)), where one example's ``axis=None`` gives q's shape."""
    nd = x.ndim - 1
    kept = [d for d in range(nd) if d not in laxes]
    perm = (0,) + tuple(d + 1 for d in kept) + tuple(d + 1 for d in laxes)
    lanes = tuple(x.shape[d + 1] for d in kept) + (math.prod(x.shape[d + 1] for d in laxes),)
    kw = dict(kw)
    keepdims = truthy(kw.pop("keepdims", False))
    if "weights" in kw:
        kw["weights"] = np.reshape(np.transpose(kw["weights"], perm), x.shape[:1] + lanes)
    res = op(np.reshape(np.transpose(x, perm), x.shape[:1] + lanes), q, axis=-1, **kw)
    if keepdims:
        res = np.reshape(res, res.shape[:ndim_of(q) + 1]
                         + tuple(1 if d in laxes else x.shape[d + 1] for d in range(nd)))
    return res


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
        laxes = reduced_axes(axis, nd)
        kw = {"method": method, "overwrite_input": overwrite_input}
        if keepdims is not np._NoValue:
            kw["keepdims"] = keepdims
        n = batch_size_of((a, q, weights), (a_bdim, q_bdim, weights_bdim))
        x = ensure_bdim(a, a_bdim, n)
        w = None
        if weights is not None:
            # NumPy validates method, shapes and axis; the weighted nan-variants run per lane
            dry_run(op, small(x.shape[1:]), x.dtype, 0.5 * scale, axis=axis, method=method,
                    weights=np.ones(small(logical_shape(weights, weights_bdim))))
            require(not nan, f"numpy.{name} with weights=")
            w = ensure_bdim(weights, weights_bdim, n)
            if w.ndim != x.ndim:  # 1-d weights along the one reduced axis
                shape = [1] * x.ndim
                shape[0], shape[laxes[0] + 1] = n, w.shape[1]
                w = np.reshape(w, tuple(shape))
            w = np.broadcast_to(w, x.shape)
        if q_bdim is None:
            # NumPy's nan-variants give odd shapes for empty lanes (apply_along_axis): per example
            require(not nan or all(x.shape[1:]), f"numpy.{name} of an empty array")
            if not n and (nan or len(laxes) > 1):
                # NumPy's nan-variants shape zero lanes oddly, and over several axes NumPy
                # reshapes the batch with -1, which fails at size 0: one example's
                res, bd = rule(np.zeros((1,) + x.shape[1:], x.dtype, like=x), 0, q, None,
                               axis, None, overwrite_input, method, keepdims)
                return res[(slice(None),) * bd + (slice(0, 0),)], bd
            if w is not None:
                kw["weights"] = w
            if nan and len(laxes) > 1 and ndim_of(q) > 1:
                # NumPy's own result for several axes interleaves q's dimensions with the
                # kept ones (one example's too, so the loop's shape is that odd one)
                require(axis is None, f"numpy.{name} with a q of 2 or more dims over several "
                                      f"axes")
                return _nan_quantile_one_axis(op, x, q, laxes, kw), ndim_of(q)
            res = op(x, q, axis=tuple(a + 1 for a in laxes), **kw)
            return res, ndim_of(q)
        require(not nan, f"numpy.{name} with a batched q")
        qv = move_bdim_to_front(q, q_bdim)
        if np.issubdtype(x.dtype, np.complexfloating):  # (NumPy asks this first)
            raise TypeError("a must be an array of real numbers")
        if qv.ndim - 1 > 2:
            raise ValueError("q must be a scalar or 1d")
        if scale != 1:
            qv = np.true_divide(qv, scale)
        if any_example(~((qv >= 0) & (qv <= 1))):
            raise ValueError(unit)
        lshape = x.shape[1:]
        kept = [d for d in range(nd) if d not in laxes]
        xs = np.transpose(x, (0,) + tuple(d + 1 for d in kept) + tuple(d + 1 for d in laxes))
        lanes = xs.shape[:1 + len(kept)] + (math.prod(lshape[d] for d in laxes),)
        xs = np.reshape(xs, lanes)
        if w is not None:
            if any_example(w < 0):
                raise ValueError("Weights must be non-negative.")
            ws = np.transpose(w, (0,) + tuple(d + 1 for d in kept) + tuple(d + 1 for d in laxes))
            res = _batched_q_weighted(xs, np.reshape(ws, lanes), qv)
        else:
            res = _batched_q_quantile(np.sort(xs, axis=-1), qv, method)
            # NumPy's formulas promote a float32 sample with a float64 q; whether NumPy's own
            # result keeps float32 differs between its releases (2.4.0 promotes its formulas
            # too, later ones keep it): one example's dtype, from NumPy itself
            one = dry_run(op, (1,) * nd, x.dtype, np.full(small(qv.shape[1:]), 0.5 * scale,
                                                          dtype=qv.dtype), method=method)
            if res.dtype != one.dtype:
                res = res.astype(one.dtype)
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


__all__ = ["reduced_axes", "small"]
