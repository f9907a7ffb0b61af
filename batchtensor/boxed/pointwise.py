"""POINTWISE: elementwise ops. Batch axes go to the front and batched values are padded to the
common logical rank, so NumPy's right-aligned broadcasting sees each example as it would alone.
Unbatched values are never materialised.

Every ufunc's ``__call__`` is pointwise automatically (NumPy's, SciPy's, ``np.frompyfunc``
ones); ``pointwise(op, arrays=...)`` registers a function such as ``np.clip``.
"""

from __future__ import annotations

import inspect
from functools import partial
from typing import Any, Sequence

import numpy as np

from ..errors import unbatched_out_error
from ..plumbing import aligned_fast, scan_level, unwrap, wrap
from ..registry import (ARRAY, RECORDERS, BoxedKind, OpEntry, Path, binder_from_signature,
                        op_name, record, register, slots)
from ..rules._helpers import (align_front, align_pointwise, ensure_bdim, given, logical_rank,
                              pad_to_rank, require)

__all__ = ["pointwise", "ufunc_pointwise", "call_bound"]


def _is_array_arg(x: Any) -> bool:
    return not (x is True or x is None or x is np._NoValue)


def ufunc_pointwise(ufunc, inputs: Sequence, kwargs: dict) -> Any:
    """``ufunc(*inputs, **kwargs)`` when any operand, ``out`` or ``where`` is batched."""
    out = kwargs.get("out")
    where = kwargs.get("where", True)
    level = scan_level(inputs)
    if out is not None:
        level = scan_level(out, level)
    if _is_array_arg(where):
        level = scan_level(where, level)
    if level is None:
        return ufunc(*inputs, **kwargs)
    if RECORDERS:
        record(ufunc, Path.BOXED)
    name = op_name(ufunc)
    pairs = [unwrap(x, level) for x in inputs]
    vals = [v for v, _ in pairs]
    bdims = [b for _, b in pairs]
    kw = dict(kwargs)
    if out is None and not _is_array_arg(where):
        vals, out_bdim = align_pointwise(vals, bdims)
        res = ufunc(*vals, **kw)
        if ufunc.nout == 1:
            return wrap(res, out_bdim, level)
        return tuple(wrap(r, out_bdim, level) for r in res)

    # With out= and/or where=: everything batch-first, padded to one logical rank.
    outs = out if isinstance(out, tuple) else (out,) if out is not None else ()
    out_pairs = [unwrap(o, level) if o is not None else (None, None) for o in outs]
    for (o, ob), orig in zip(out_pairs, outs):
        if orig is not None and ob is None:
            raise unbatched_out_error(name)
    has_where = _is_array_arg(where)
    w, wb = unwrap(where, level) if has_where else (where, None)
    rank = max([logical_rank(v, b) for v, b in zip(vals, bdims)]
               + [logical_rank(o, ob) for o, ob in out_pairs if o is not None]
               + ([logical_rank(w, wb)] if has_where else []))
    vals = align_front(vals, bdims, rank)
    if all(b is None for b in bdims) and wb is not None and not outs:
        # Only `where` is batched: give the output its batch axis through an array input
        # (a broadcast view). Python scalars must stay weak, so never convert one.
        i: Any = next((i for i, v in enumerate(vals) if hasattr(v, "ndim")), None)
        require(i is not None, "where= is batched and every input is a Python scalar")
        vals[i] = pad_to_rank(ensure_bdim(vals[i], None, w.shape[wb]), rank)
    if has_where:
        kw["where"] = align_front([w], [wb], rank)[0]
    if not outs:
        res = ufunc(*vals, **kw)
        if ufunc.nout == 1:
            return wrap(res, 0, level)
        return tuple(wrap(r, 0, level) for r in res)
    phys_outs: tuple[Any, ...] = tuple(None if o is None else align_front([o], [ob], rank)[0]
                      for o, ob in out_pairs)
    staged = tuple(_staging_for(o) for o in phys_outs)
    kw["out"] = tuple(o if t is None else t for o, t in zip(phys_outs, staged))
    res = ufunc(*vals, **kw)
    for o, t in zip(phys_outs, staged):
        if t is not None:
            np.copyto(o, t, where=kw.get("where", True))
    if ufunc.nout == 1:
        return outs[0]
    # Outputs without an out= array are new arrays of the iteration shape, which includes
    # the batched out= arrays: batched at 0.
    return tuple(orig if orig is not None else wrap(r, 0, level) for orig, r in zip(outs, res))


def _staging_for(out: Any) -> Any:
    """A contiguous stand-in for a NumPy ``out`` array whose elements are not contiguous, or
    None. Batch axes moved to the front often give such outs, where one example's out is a
    plain scalar or a contiguous array, and NumPy 2.4's SIMD loops write wrong values into some
    of them: ``np.negative`` when the out's stride is 4 elements (float32, int32) or 8
    (float64, int64), the int-to-float ufuncs (``log1p``, ``sinh``, ``expm1``...) into an out
    with a negative stride, ``isnan`` / ``isinf`` / ``isfinite`` / ``signbit`` into a strided
    bool out. The ufunc writes into the stand-in (same dtype, so the same loop and casting)
    and the result is copied into ``out`` where ``where`` is set. A read-only ``out`` gets
    none: the ufunc itself raises NumPy's read-only error, before any casting error, as it
    does for one example."""
    if type(out) is not np.ndarray or out.flags.c_contiguous or out.flags.f_contiguous \
            or not out.flags.writeable:
        return None
    return np.empty(out.shape, out.dtype)


def _pointwise_handler(arr_idx, out_idx, where_idx, entry, level, values, extra, extra_kw):
    name = entry.name
    present = [i for i in arr_idx if given(values[i])]
    pairs = [unwrap(values[i], level) for i in present]
    vals, bdims = [v for v, _ in pairs], [b for _, b in pairs]
    out = values[out_idx] if out_idx is not None else None
    if type(out) is tuple and len(out) == 1:
        out = out[0]
    where = values[where_idx] if where_idx is not None else _OMIT
    values = list(values)
    if out is None and where is _OMIT:
        aligned, out_bdim = align_pointwise(vals, bdims)
    else:
        # out= and/or where=: everything batch-first, padded to one logical rank.
        o, ob = unwrap(out, level)
        if out is not None and ob is None:
            raise unbatched_out_error(name)
        w, wb = unwrap(where, level) if where is not _OMIT else (None, None)
        rank = max([logical_rank(v, b) for v, b in pairs]
                   + ([logical_rank(o, ob)] if out is not None else [])
                   + ([logical_rank(w, wb)] if where is not _OMIT else []))
        require(out is not None or any(b is not None for b in bdims),
                f"{name}: only where= is batched")
        aligned, out_bdim = align_front(vals, bdims, rank), 0
        if out is not None and bdims and bdims[0] is None and hasattr(aligned[0], "ndim"):
            # Give the main array its batch axis (a broadcast view): ndarray.round's out=
            # must have the input's shape, it does not broadcast.
            aligned[0] = pad_to_rank(ensure_bdim(aligned[0], None, o.shape[ob]), rank)
        if out is not None:
            values[out_idx] = align_front([o], [ob], rank)[0]
        if wb is not None:
            values[where_idx] = align_front([w], [wb], rank)[0]
    for i, v in zip(present, aligned):
        values[i] = v
    res = call_bound(entry.op, entry.binder, values, extra, extra_kw)
    if out is not None:
        return out
    if isinstance(res, tuple):
        return tuple(wrap(r, out_bdim, level) for r in res)
    return wrap(res, out_bdim, level)


#: default of the parameters ``pointwise(..., where=True)`` adds: left out of the call
_OMIT = object()


def call_bound(op, binder, values: list, extra: tuple = (), extra_kw: dict | None = None):
    """Call ``op`` with bound values: positional parameters by position, the rest by name."""
    args = []
    kw = {}
    for p, v in zip(binder.params, values):
        if v is _OMIT:
            continue
        if p.positional:
            args.append(v)
        else:
            kw[p.name] = v
    if extra:
        args.extend(extra)
    if extra_kw:
        kw.update(extra_kw)
    return op(*args, **kw)


def pointwise(op: Any, arrays: Sequence[str], *, where: bool = False,
              replace: bool = False) -> Any:
    """Register ``op`` as elementwise over the parameters named in ``arrays``.

    A parameter ``out`` is written per example (it must be batched when anything else is).
    ``where=True``: ``op`` passes a ufunc ``where=`` mask on through ``**kwargs`` (``np.clip``);
    it is aligned like the arrays.

    >>> import numpy as np, batchtensor as bt
    >>> def soft_clip(a, lo, hi):  # an elementwise function of your own...
    ...     return np.minimum(np.maximum(a, lo), hi)
    >>> bt.boxed.pointwise(soft_clip, arrays=("a", "lo", "hi"))  # doctest: +SKIP
    """
    sig = inspect.signature(op)
    kinds = {name: ARRAY for name in arrays}
    if "out" in sig.parameters:
        kinds["out"] = ARRAY
    if where:
        params = list(sig.parameters.values())
        at = next((i for i, p in enumerate(params) if p.kind is p.VAR_KEYWORD), len(params))
        params.insert(at, inspect.Parameter("where", inspect.Parameter.KEYWORD_ONLY,
                                            default=_OMIT))
        sig = sig.replace(parameters=params)
        kinds["where"] = ARRAY
    binder = binder_from_signature(op, sig, kinds)
    names = [p.name for p in binder.params]
    arr_idx = [names.index(n) for n in arrays]
    out_idx = names.index("out") if "out" in names else None
    where_idx = names.index("where") if where else None
    handler = partial(_pointwise_handler, arr_idx, out_idx, where_idx)
    # Positional arguments up to the first that is not an array (``out``, ``copy``...): those
    # the hot path may pass through untouched.
    leading = next((i for i, n in enumerate(names) if n not in arrays), len(names))
    register(OpEntry(op, Path.BOXED, handler, binder, boxed_kind=BoxedKind.POINTWISE,
                     fast=aligned_fast(op, leading)), replace=replace)
    return op


slots.ufunc_pointwise = ufunc_pointwise
