"""Differences and integrals: diff ediff1d gradient trapezoid.

Split from statistics.py by subject: finite differences along an axis (diff, ediff1d,
gradient) and the trapezoid rule built on them (trapezoid). ``reduced_axes`` comes from
quantiles.py.
"""

from __future__ import annotations

import math

import numpy as np

from ..registry import batch_rule
from ._helpers import (batch_outermost, batch_size_of, ensure_bdim, logical_rank,
                       physical_axis, wrap_axis)
from .quantiles import reduced_axes


# ---- differences and integrals ------------------------------------------------------------------
def _edge_piece(v, bdim, n: int, x, ax: int):
    """``prepend``/``append`` of np.diff batch-first: a 0-d example is broadcast to ``x``'s shape
    with length 1 along the axis (NumPy's rule), anything else is joined as it is."""
    if logical_rank(v, bdim) == 0:
        shape = list(x.shape)
        shape[ax + 1] = 1
        v = ensure_bdim(v, bdim, n, x)
        return np.broadcast_to(np.reshape(v, (n,) + (1,) * (x.ndim - 1)), tuple(shape))
    return ensure_bdim(v, bdim, n, x)


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
        v = ensure_bdim(v, b, size, x)
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
    axes = reduced_axes(axis, nd)
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
    return np.sum(batch_outermost(d * (yv[hi] + yv[lo]) / 2.0, 0), axis=ax + 1), 0
