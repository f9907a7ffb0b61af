"""REDUCTION: ops with an ``axis`` (and usually ``keepdims``). Logical axes are shifted past the
batch axis; ``axis=None`` means every logical axis. Three kinds:

- ``"reduce"``: axis None / int / tuple (``sum``, ``mean``, ``std``, ``max``, ``ufunc.reduce``);
- ``"index"``: int or None, where None flattens the example (``argmax``, ``argmin``);
- ``"scan"``: keeps the rank, None flattens (``cumsum``, ``cumprod``, ``ufunc.accumulate``).

``where=``, ``out=`` and ``mean=`` (of the variances) may be batched; a batched ``initial=`` or
``ddof=`` goes to the loop.
"""

from __future__ import annotations

import inspect
import math
from functools import partial
from typing import Any

import numpy as np

from ..errors import unbatched_out_error
from ..plumbing import unwrap, wrap
from ..registry import (ARRAY, RECORDERS, BoxedKind, OpEntry, Path, StrEnum,
                        binder_from_signature, record, register)
from ..rules._helpers import (NoValue, align_front, batch_outermost, dry_run, ensure_bdim,
                              move_bdim_to_front, physical_axis, require, truthy, wrap_axes,
                              wrap_axis)
from ..tensor import BatchedTensor, new_batched

__all__ = ["reduction", "reduce_physical", "ReductionKind", "REDUCE", "INDEX", "SCAN"]


class ReductionKind(StrEnum):
    """How a reduction treats its axis (the module docstring); ``"reduce"`` is
    ``ReductionKind.REDUCE``."""

    REDUCE = "reduce"
    INDEX = "index"
    SCAN = "scan"


REDUCE, INDEX, SCAN = ReductionKind.REDUCE, ReductionKind.INDEX, ReductionKind.SCAN


#: reductions that add an example's elements (NumPy sums them pairwise: see batch_outermost)
SUMMING = frozenset({np.sum, np.mean, np.var, np.std, np.nansum, np.nanmean, np.nanvar,
                     np.nanstd})


def _sums(op) -> bool:
    return op in SUMMING or getattr(op, "__self__", None) is np.add  # np.add.reduce


def _given_array(v: Any) -> bool:
    return not (v is None or v is True or v is NoValue)


def reduce_physical(op, name: str, kind: str, level, x, bd, axis, kw: dict, *,
                    where: Any = NoValue, out: Any = None, out_tuple: bool = False,
                    none_flattens: bool = True, mean: Any = NoValue) -> Any:
    """Run reduction ``op`` over logical ``axis`` of the physical ``x`` (batch axis ``bd``).

    ``kw`` holds the op's other keyword arguments (passed through). ``mean`` (of ``var`` /
    ``std`` / ``nanvar`` / ``nanstd``) has the keepdims shape of one example, as ``where``
    broadcasts against it. Returns the wrapped result, or the ``out`` object itself when one
    was given.
    """
    kw = dict(kw)
    has_where = _given_array(where)
    w, wb = unwrap(where, level) if has_where else (where, None)
    has_mean = _given_array(mean)
    m, mb = unwrap(mean, level) if has_mean else (mean, None)
    o: Any
    ob: Any  # (not None where out is given: an unbatched out raises below)
    o, ob = unwrap(out, level) if out is not None else (None, None)
    if out is not None and ob is None:
        raise unbatched_out_error(name)
    if bd is None:  # only where=, mean= or out= is batched
        size = w.shape[wb] if wb is not None else m.shape[mb] if mb is not None \
            else o.shape[ob]
        x, bd = ensure_bdim(x, None, size), 0
    elif kind is REDUCE and x.dtype.kind in "fc" and _sums(op):
        x, bd = batch_outermost(x, bd), 0
    nd = x.ndim - 1
    keepdims = truthy(kw.get("keepdims", False))
    if has_where or has_mean:
        x, bd = move_bdim_to_front(x, bd), 0
    if has_where:
        kw["where"] = align_front([w], [wb], nd)[0]
    if has_mean:
        kw["mean"] = align_front([m], [mb], nd)[0]

    flatten = False
    if axis is not None and nd == 0:
        # NumPy accepts some axes on 0-d inputs (np.sum(x, axis=0)) and rejects others
        # (np.mean(x, axis=0)): let it decide on a 0-d example.
        small = {k: v for k, v in kw.items() if k not in ("where", "out")}
        dry_run(op, (), x.dtype, axis=axis, **small)
    call_axis: Any  # one axis or a tuple of them
    if kind is REDUCE:
        laxes = tuple(range(nd)) if axis is None else () if nd == 0 else wrap_axes(axis, nd)
        call_axis = tuple(physical_axis(a, bd) for a in laxes)
        out_bdim = bd if keepdims else bd - sum(1 for p in call_axis if p < bd)
        if len(call_axis) == 1:
            call_axis = call_axis[0]
    elif axis is None or nd == 0:
        if axis is None and not none_flattens:
            dry_run(op, (1,) * nd, x.dtype, axis=axis)  # NumPy raises its own error
        flatten = True
    else:
        call_axis = physical_axis(wrap_axis(axis, nd), bd)
        out_bdim = bd if (kind is SCAN or keepdims) else bd - (call_axis < bd)

    post_shape = None
    if flatten:
        require(out is None and not has_where, f"{name}: out=/where= with a flattening axis")
        lshape = x.shape[:bd] + x.shape[bd + 1:]
        m = math.prod(lshape)
        x = move_bdim_to_front(x, bd)
        x = np.reshape(x, (-1, m) if m else (x.shape[0], 0))
        call_axis, out_bdim = 1, 0
        if kind is INDEX and keepdims:
            kw["keepdims"] = False
            post_shape = (1,) * nd

    if out is not None:
        o = np.moveaxis(o, ob, out_bdim) if ob != out_bdim else o
        kw["out"] = (o,) if out_tuple else o
    if not flatten and x.shape[bd] == 0 and type(call_axis) is tuple and x.size == 0 \
            and math.prod(x.shape[:bd] + x.shape[bd + 1:]):
        # no example, several axes: NumPy's median and quantiles reshape the batch with -1,
        # which fails at size 0 (one example's result shape, taken from a stand-in, then none)
        one = np.zeros(x.shape[:bd] + (1,) + x.shape[bd + 1:], dtype=x.dtype, like=x)
        small = {k: v for k, v in kw.items() if k != "out"}
        for k in ("where", "mean"):  # (batch axis first, as x's: of the stand-in's one example)
            v: Any = small.get(k)
            if getattr(v, "ndim", 0) == x.ndim and v.shape[0] == 0:
                small[k] = np.ones((1,) + v.shape[1:], dtype=v.dtype, like=v)
        res = op(one, axis=call_axis, **small)
        if out is not None:  # nothing to write into an out= of no example
            return out[0] if out_tuple and isinstance(out, tuple) else out
        return wrap(res[(slice(None),) * out_bdim + (slice(0, 0),)], out_bdim, level)
    res = op(x, axis=call_axis, **kw)
    if out is not None:
        return out[0] if out_tuple and isinstance(out, tuple) else out
    if post_shape is not None:
        res = np.reshape(res, (-1,) + post_shape if res.shape[0] else (0,) + post_shape)
    return wrap(res, out_bdim, level)


def _reduction_handler(spec: tuple, entry, level, values, extra, extra_kw):
    kind, array, none_flattens = spec
    named = {p.name: v for p, v in zip(entry.binder.params, values)}
    x, bd = unwrap(named.pop(array), level)
    axis = named.pop("axis", None)
    where = named.pop("where", NoValue)
    mean = named.pop("mean", NoValue)
    out = named.pop("out", None)
    kw = {k: v for k, v in named.items() if v is not NoValue}
    kw.update(extra_kw)
    return reduce_physical(entry.op, entry.name, kind, level, x, bd, axis, kw,
                           where=where, out=out, none_flattens=none_flattens, mean=mean)


#: reductions that, on a NumPy array, are exactly one ufunc.reduce (what NumPy itself calls)
_UFUNC_REDUCTIONS = {np.sum: (np.add, None), np.prod: (np.multiply, None),
                     np.max: (np.maximum, None), np.amax: (np.maximum, None),
                     np.min: (np.minimum, None), np.amin: (np.minimum, None),
                     np.any: (np.logical_or, np.bool_), np.all: (np.logical_and, np.bool_)}


def _sum_short_last_axis(v, keepdims: bool):
    """``np.add.reduce(v, axis=-1)`` for a last axis of 2 to 16 floats, bit for bit.

    NumPy runs one inner loop per row there (many rows of 3 cost ~14 µs per 1000); one
    vectorised add per column costs a third of that. This is NumPy's pairwise sum of a row,
    column by column. Below 8 elements it is plain left-to-right from 0.0: ((v0 + v1) + v2)
    ... + 0.0 (the final + 0.0 turns an all -0.0 row into +0.0, as starting from 0.0 does).
    From 8 it keeps eight partial sums r0..r7 (r_j = v_j, plus v_(8+j) for 16 elements),
    combines them as ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7)) and adds the rest left
    to right; the caller makes sure the rows are C-contiguous there, so that NumPy too sums
    each example's row with that routine (``tests/test_statistics.py`` checks both)."""
    n = v.shape[-1]
    if n < 8:
        res = v[..., 0] + v[..., 1]
        rest = range(2, n)
    else:
        r = [v[..., j] for j in range(8)]
        if n == 16:
            r = [r[j] + v[..., 8 + j] for j in range(8)]
        res = (r[0] + r[1]) + (r[2] + r[3])
        res += (r[4] + r[5]) + (r[6] + r[7])
        rest = range(16 if n == 16 else 8, n)
    for k in rest:
        res += v[..., k]
    res += 0.0
    return res[..., None] if keepdims else res


def _extreme_short_last_axis(ufunc, v, keepdims: bool):
    """``np.maximum.reduce`` / ``np.minimum.reduce`` over a last axis of 2 to 16 elements, one
    vectorised comparison per column instead of NumPy's inner loop per row (3-4x faster for
    1000 rows of 10). The same values and NaN positions: max and min round nothing, and NaN
    propagates through both. Where -0.0 and +0.0 tie for the extreme, the sign of the zero
    may differ, as it does between NumPy's own SIMD and scalar loops."""
    res = ufunc(v[..., 0], v[..., 1])
    for k in range(2, v.shape[-1]):
        ufunc(res, v[..., k], out=res)
    return res[..., None] if keepdims else res


#: (rank of an example, batch axis) -> the physical axes of all its axes (axis=None), made once
_EVERY_AXIS: dict[tuple[int, int], tuple[int, ...]] = {}


def _physical_axes(axis, nd: int, bd: int) -> tuple | None:
    """The physical axes of reducing logical ``axis`` (None, an int or a tuple of ints) of an
    ``nd``-d example with the batch axis at ``bd``; None for anything a hot path leaves to the
    general path (out of range, repeated, an axis of a 0-d example: NumPy's own errors)."""
    if axis is None:
        every = _EVERY_AXIS.get((nd, bd))
        if every is None:
            every = _EVERY_AXIS[nd, bd] = tuple(i for i in range(nd + 1) if i != bd)
        return every
    if type(axis) is int:
        axis = (axis,)
    elif type(axis) is not tuple or not nd:
        return None
    paxes = []
    for a in axis:
        if type(a) is not int or not -nd <= a < nd:
            return None
        a %= nd
        paxes.append(a + (a >= bd))
    return tuple(paxes) if len(set(paxes)) == len(paxes) else None


def _plain_reduction_call(level, args, kwargs, accepted: frozenset, outer: bool):
    """``(value, bdim, axis, keywords)`` of ``op(x[, axis], **kwargs)`` where ``x`` is batched
    at ``level`` on a numeric NumPy array (or, with ``outer``, on a value of an outer level)
    and the only other keywords are in ``accepted``; None for anything else."""
    n = len(args)
    x = args[0] if n else None
    if n > 2 or type(x) is not BatchedTensor or x._level is not level:
        return None
    v = x._value
    tv = type(v)
    if not (tv is np.ndarray or (outer and tv is BatchedTensor)) or v.dtype.kind not in "biufc":
        return None
    axis = args[1] if n == 2 else None
    kw = {}
    for k, val in kwargs.items():
        if k == "axis" and n == 1:
            axis = val
        elif k in accepted:
            kw[k] = val
        else:
            return None
    return v, x._bdim, axis, kw


def _fast_reduction(op, kind: str):
    """Hot path, before binding, for the other reductions (mean, std, var, the nan-functions,
    median, ptp, count_nonzero), the index reductions and the scans over an int axis: ``op``
    on the physical NumPy array over the mapped axes, with ``keepdims`` / ``ddof`` / ``dtype``
    passed as given. where=, out=, other arguments, an index or scan over axis=None of an
    example of more than one dimension (which flattens it) and values of an outer level return
    NotImplemented (the general path)."""
    params = inspect.signature(op).parameters
    passed = frozenset(k for k in ("keepdims", "ddof", "dtype") if k in params)
    summing = op in SUMMING

    def fast(level, args, kwargs):
        call = _plain_reduction_call(level, args, kwargs, passed, outer=False)
        if call is None:
            return NotImplemented
        v, bd, axis, kw = call
        if summing and v.dtype.kind in "fc" and (bd or not v.flags.c_contiguous):
            v, bd = batch_outermost(v, bd), 0
        keepdims = kw.get("keepdims", False)
        keepdims = keepdims is not NoValue and bool(keepdims)
        nd = v.ndim - 1
        if kind is not REDUCE and type(axis) is not int:
            if axis is not None or nd != 1:
                return NotImplemented
            axis = 0  # flattening a 1-d example leaves it as it is
        paxes = _physical_axes(axis, nd, bd)
        if paxes is None or (len(paxes) > 1 and not v.shape[bd]):
            return NotImplemented  # (no example over several axes: reduce_physical)
        if kind is SCAN:
            out_bdim = bd
        else:
            out_bdim = bd if keepdims or not bd else bd - sum(1 for p in paxes if p < bd)
        res = op(v, axis=paxes[0] if len(paxes) == 1 else paxes, **kw)
        return new_batched(res, out_bdim, level)

    return fast


def _fast_ufunc_reduce(op):
    """Hot path for a plain sum/prod/max/min/any/all of a NumPy array over None or one axis
    (``np.sum(x, axis)`` *is* ``np.add.reduce(x, axis)`` for an ndarray), before any binding.
    Anything else (where=, out=, initial=, tuple axes, other arrays) returns NotImplemented."""
    ufunc, dtype0 = _UFUNC_REDUCTIONS[op]
    takes_dtype = op in (np.sum, np.prod)
    accepted = frozenset({"keepdims", "dtype"} if takes_dtype else {"keepdims"})

    def fast(level, args, kwargs):
        call = _plain_reduction_call(level, args, kwargs, accepted, outer=True)
        if call is None:
            return NotImplemented
        v, bd, axis, kw = call
        tv = type(v)
        if ufunc is np.add and tv is np.ndarray and v.dtype.kind in "fc" and (
                bd or not v.flags.c_contiguous):
            v, bd = batch_outermost(v, bd), 0
        keepdims = kw.get("keepdims", False)
        keepdims = keepdims is not NoValue and bool(keepdims)
        dtype = kw.get("dtype", dtype0)
        nd = v.ndim - 1
        paxes = _EVERY_AXIS.get((nd, bd)) if axis is None else None  # (the common sum())
        if paxes is None:
            paxes = _physical_axes(axis, nd, bd)
            if paxes is None:
                return NotImplemented
        out_bdim = bd if keepdims or not bd else bd - sum(1 for p in paxes if p < bd)
        if len(paxes) == 1:
            paxes = paxes[0]
        if tv is np.ndarray:
            short = paxes == nd and dtype is None and 2 <= v.shape[nd] <= 16 and v.size >= 512
            kind = v.dtype.kind
            if short and ufunc is np.add and kind == "f" and v.dtype.itemsize >= 4 and (
                    v.shape[nd] < 8 or v.flags.c_contiguous):
                res = _sum_short_last_axis(v, keepdims)
            elif short and (ufunc is np.maximum or ufunc is np.minimum) and kind in "fiu":
                res = _extreme_short_last_axis(ufunc, v, keepdims)
            else:
                res = ufunc.reduce(v, axis=paxes, dtype=dtype, keepdims=keepdims)
        else:  # a BatchedTensor of an outer level: its own hot path, without NumPy's protocol
            kw = {"axis": paxes, "keepdims": keepdims}
            if takes_dtype:
                kw["dtype"] = dtype
            res = fast(v._level, (v,), kw)
            if res is NotImplemented:
                res = op(v, **kw)
            elif RECORDERS:
                record(op, Path.BOXED)
        return new_batched(res, out_bdim, level)

    return fast


def reduction(op: Any, kind: str | ReductionKind = REDUCE, *, array: str = "a",
              replace: bool = False,
              none_flattens: bool = True) -> Any:
    """Register ``op`` as a reduction over its ``axis`` parameter (kinds: module docstring).

    ``none_flattens=False``: for an index/scan op whose ``axis=None`` is only valid for a 1-d
    example (``cumulative_sum``), NumPy raises its own error for other ranks.

    >>> import numpy as np, batchtensor as bt
    >>> bt.boxed.reduction(np.nansum)                              # doctest: +SKIP
    """
    if kind not in (REDUCE, INDEX, SCAN):
        raise ValueError(f"reduction kind must be 'reduce', 'index' or 'scan', got {kind!r}")
    kind = ReductionKind(kind)
    sig = inspect.signature(op)
    kinds = {array: ARRAY}
    for name in ("where", "out", "mean"):
        if name in sig.parameters:
            kinds[name] = ARRAY
    binder = binder_from_signature(op, sig, kinds)
    fast = _fast_ufunc_reduce(op) if op in _UFUNC_REDUCTIONS else _fast_reduction(op, kind)
    register(OpEntry(op, Path.BOXED, partial(_reduction_handler, (kind, array, none_flattens)),
                     binder, boxed_kind=BoxedKind.REDUCTION, fast=fast), replace=replace)
    return op
