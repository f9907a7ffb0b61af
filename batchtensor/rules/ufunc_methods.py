"""The ufunc methods other than ``__call__``: reduce, accumulate, reduceat, outer, at."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..boxed.pointwise import unbatched_out_error
from ..boxed.reduction import REDUCE, SCAN, reduce_physical
from ..dispatch import _RECORDERS, _record, scan_level, unwrap, wrap
from ..registry import op_name
from ._helpers import (NoValue, dry_run, logical_rank, move_bdim_to_front, pad_to_rank,
                       physical_axis, require, wrap_axis)

__all__ = ["UFUNC_METHODS"]


def _begin(ufunc, method: str, inputs, kwargs, path: str):
    op = getattr(ufunc, method)
    level = scan_level(kwargs, scan_level(inputs))
    if _RECORDERS:
        _record(op, path)
    return op, op_name(op), level


def _first_out(kwargs: dict):
    out = kwargs.pop("out", None)
    if isinstance(out, tuple):
        out = out[0] if len(out) == 1 else out
    return out


def _reduce_like(kind: str, method: str, default_axis):
    def handler(ufunc, inputs, kwargs):
        op, name, level = _begin(ufunc, method, inputs, kwargs, "boxed")
        kw = dict(kwargs)
        out = _first_out(kw)
        axis = kw.pop("axis", default_axis)
        where = kw.pop("where", NoValue)
        require(scan_level(kw) is not level, f"{name}: batched initial= or dtype=")
        (array,) = inputs
        x, bd = unwrap(array, level)
        return reduce_physical(op, name, kind, level, x, bd, axis, kw, where=where, out=out,
                               out_tuple=True, none_flattens=False)

    return handler


def _reduceat(ufunc, inputs, kwargs):
    op, name, level = _begin(ufunc, "reduceat", inputs, kwargs, "rule")
    array, indices = inputs
    kw = dict(kwargs)
    require("out" not in kw, f"{name}: out=")
    require(scan_level(indices) is not level and scan_level(kw) is not level,
            f"{name}: batched indices")
    axis = kw.pop("axis", 0)
    x, bd = unwrap(array, level)
    nd = x.ndim - 1
    if nd == 0:
        dry_run(op, (), x.dtype, indices, axis=axis, **kw)
    pax = physical_axis(wrap_axis(axis, nd), bd)
    return wrap(op(x, indices, axis=pax, **kw), bd, level)


def _outer(ufunc, inputs, kwargs):
    op, name, level = _begin(ufunc, "outer", inputs, kwargs, "rule")
    require("out" not in kwargs and "where" not in kwargs, f"{name}: out=/where=")
    (a, ab), (b, bb) = (unwrap(x, level) for x in inputs)
    ra, rb = logical_rank(a, ab), logical_rank(b, bb)
    # Example shapes (*sa) and (*sb) give (*sa, *sb): lay a out as (B, *sa, 1...) and b as
    # (B, 1..., *sb); an unbatched operand broadcasts right-aligned as it is.
    if ab is not None:
        a = np.expand_dims(move_bdim_to_front(a, ab), tuple(range(1 + ra, 1 + ra + rb)))
    elif bb is not None and rb:
        a = np.expand_dims(a, tuple(range(ra, ra + rb)))
    if bb is not None:
        b = np.expand_dims(move_bdim_to_front(b, bb), tuple(range(1, 1 + ra)))
    return wrap(ufunc(a, b, **kwargs), 0, level)


def _at(ufunc, inputs, kwargs):
    op, name, level = _begin(ufunc, "at", inputs, kwargs, "rule")
    a, indices = inputs[0], inputs[1]
    b = inputs[2] if len(inputs) > 2 else None
    x, xb = unwrap(a, level)
    if xb is None:
        raise unbatched_out_error(name, "a (the array written in place)")
    require(scan_level(indices) is not level, f"{name}: batched indices")
    idx = indices if isinstance(indices, tuple) else (indices,)
    require(all(not isinstance(i, slice) and i is not Ellipsis and i is not None for i in idx),
            f"{name}: slices in the index")
    x = move_bdim_to_front(x, xb)
    args = [x, (slice(None),) + idx]
    if b is not None:
        bv, bb = unwrap(b, level)
        if bb is not None:
            region_rank = np.broadcast_shapes(*(np.shape(i) for i in idx)).__len__() \
                + logical_rank(x, 0) - len(idx)
            bv = pad_to_rank(move_bdim_to_front(bv, bb), region_rank)
        args.append(bv)
    op(*args, **kwargs)
    return None


UFUNC_METHODS: dict[str, Any] = {
    "reduce": _reduce_like(REDUCE, "reduce", 0),
    "accumulate": _reduce_like(SCAN, "accumulate", 0),
    "reduceat": _reduceat,
    "outer": _outer,
    "at": _at,
}
