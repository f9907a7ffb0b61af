"""The ufunc methods other than ``__call__``: reduce, accumulate, reduceat, outer, at."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..errors import unbatched_out_error
from ..plumbing import innermost, scan_level, unwrap, wrap
from ..registry import RECORDERS, Path, is_physical_type, op_name, record, slots
from ..tensor import is_plain_array
from ..rules._helpers import (NoValue, as_array, dry_run, ensure_bdim, logical_rank,
                              move_bdim_to_front, pad_to_rank, physical_axis, require, wrap_axis)
from .reduction import REDUCE, SCAN, reduce_physical

__all__ = ["UFUNC_METHODS"]


def _at_checks_indices_first() -> bool:
    """Whether this NumPy's ``ufunc.at`` checks the indices before a read-only target (NumPy
    2.4, which then writes into it; 2.5 refuses the target first): an out-of-bounds index
    into a read-only array says which, and writes nothing either way."""
    a = np.zeros(1)
    a.flags.writeable = False
    try:
        np.add.at(a, [1], 0.0)
    except IndexError:
        return True
    except ValueError:
        return False
    return False


AT_CHECKS_INDICES_FIRST = _at_checks_indices_first()


def _begin(ufunc, method: str, inputs, kwargs, path: Path):
    op = getattr(ufunc, method)
    level = scan_level(kwargs, scan_level(inputs))
    if RECORDERS:
        record(op, path)
    return op, op_name(op), level


def _first_out(kwargs: dict):
    out = kwargs.pop("out", None)
    if isinstance(out, tuple):
        out = out[0] if len(out) == 1 else out
    return out


def _reduce_like(kind: str, method: str, default_axis):
    def handler(ufunc, inputs, kwargs):
        op, name, level = _begin(ufunc, method, inputs, kwargs, Path.BOXED)
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
    op, name, level = _begin(ufunc, "reduceat", inputs, kwargs, Path.RULE)
    array, indices = inputs
    kw = dict(kwargs)
    out = _first_out(kw)
    require(scan_level(indices) is not level and scan_level(kw) is not level,
            f"{name}: batched indices")
    axis = kw.pop("axis", 0)
    x, bd = unwrap(array, level)
    o, ob = unwrap(out, level)
    if out is not None and ob is None:
        raise unbatched_out_error(name)
    if bd is None:  # only out= is batched: the same reduction into every example
        x, bd = ensure_bdim(x, None, o.shape[ob]), 0
    nd = x.ndim - 1
    if nd == 0:
        dry_run(op, (), x.dtype, indices, axis=axis, **kw)
    pax = physical_axis(wrap_axis(axis, nd), bd)
    if out is None:
        return wrap(op(x, indices, axis=pax, **kw), bd, level)
    op(x, indices, axis=pax, out=np.moveaxis(o, ob, bd), **kw)  # a view of out's memory
    return out


def _numpy_error(op, args: list, kwargs: dict, name: str):
    """Let NumPy raise its own error for a call it rejects (a gufunc's ``outer``, a unary
    ufunc's ``outer``, the wrong number of operands), on small dummy arrays."""
    op(*args, **{k: v for k, v in kwargs.items() if k not in ("out", "where")})
    require(False, f"{name}: arguments not handled by the rule")


def _outer(ufunc, inputs, kwargs):
    op, name, level = _begin(ufunc, "outer", inputs, kwargs, Path.RULE)
    if len(inputs) != 2 or ufunc.nin != 2 or ufunc.signature is not None:
        _numpy_error(op, [np.zeros(1)] * len(inputs), kwargs, name)
    kw = dict(kwargs)
    out = kw.pop("out", None)
    (a, ab), (b, bb) = (unwrap(x, level) for x in inputs)
    # outer converts its operands to arrays: a Python scalar is not weak here.
    a, b = as_array(a, b if hasattr(b, "ndim") else None), as_array(b, a)
    ra, rb = logical_rank(a, ab), logical_rank(b, bb)
    # Example shapes (*sa) and (*sb) give (*sa, *sb): lay a out as (B, *sa, 1...) and b as
    # (B, 1..., *sb); an unbatched operand broadcasts right-aligned as it is.
    if ab is not None:
        a = np.expand_dims(move_bdim_to_front(a, ab), tuple(range(1 + ra, 1 + ra + rb)))
    elif rb:
        a = np.expand_dims(a, tuple(range(ra, ra + rb)))
    if bb is not None:
        b = np.expand_dims(move_bdim_to_front(b, bb), tuple(range(1, 1 + ra)))
    if "where" in kw:
        w, wb = unwrap(kw["where"], level)
        kw["where"] = w if wb is None else pad_to_rank(move_bdim_to_front(w, wb), ra + rb)
    if out is not None:
        outs = out if isinstance(out, tuple) else (out,)
        phys = []
        for o in outs:
            ov, ob = unwrap(o, level)
            if o is not None and ob is None:
                raise unbatched_out_error(name)
            phys.append(None if o is None else move_bdim_to_front(ov, ob))
        res = ufunc(a, b, out=tuple(phys), **kw)
        if ufunc.nout == 1:
            return outs[0]
        return tuple(o if o is not None else wrap(r, 0, level) for o, r in zip(outs, res))
    res = ufunc(a, b, **kw)
    if ufunc.nout == 1:
        return wrap(res, 0, level)
    return tuple(wrap(r, 0, level) for r in res)


def _index_kind(i) -> str:
    """How one entry of an index tuple indexes: "int", "array", "slice", "ellipsis", "other"."""
    if isinstance(i, (bool, np.bool_)):
        return "other"
    if isinstance(i, (int, np.integer)):
        return "int"
    if isinstance(i, slice):
        return "slice"
    if i is Ellipsis:
        return "ellipsis"
    if isinstance(i, list) or is_plain_array(i):
        return "array"
    if is_physical_type(type(i)):
        return "array"  # an unbatched array of another backend (CuPy)
    return "other"


def _consumed(i) -> int:
    """How many axes of the indexed array one advanced index consumes."""
    dt = getattr(i, "dtype", None)
    if dt is None and isinstance(i, list):
        dt = np.asarray(i).dtype  # a host-side index list, not a batched value
    return np.ndim(i) if dt is not None and dt == np.bool_ else 1


def _at(ufunc, inputs, kwargs):
    op, name, level = _begin(ufunc, "at", inputs, kwargs, Path.RULE)
    if ufunc.signature is not None or len(inputs) != ufunc.nin + 1 or kwargs:
        _numpy_error(op, [np.zeros(1), [0]] + [np.zeros(1)] * (len(inputs) - 2), kwargs, name)
    a, indices = inputs[0], inputs[1]
    x, xb = unwrap(a, level)
    if xb is None:
        raise unbatched_out_error(name, f"`a` (the array {name} writes in place)")
    x = move_bdim_to_front(x, xb)
    if scan_level(indices) is level:
        return _at_batched_indices(op, name, level, x, indices, inputs)
    require(scan_level(indices) is None, f"{name}: batched indices")
    idx = indices if isinstance(indices, tuple) else (indices,)
    kinds = [_index_kind(i) for i in idx]
    require("other" not in kinds, f"{name}: an index with None, a bool or an unknown type")
    # Advanced indices (arrays, and ints next to arrays) that are not next to each other put
    # their broadcast dims first in the indexed region, ahead of the batch axis.
    adv = [k for k, kind in enumerate(kinds) if kind == "array"]
    if adv:
        adv = [k for k, kind in enumerate(kinds) if kind in ("array", "int")]
    split = bool(adv) and adv[-1] - adv[0] + 1 != len(adv)
    require(not (split and "ellipsis" in kinds[adv[0]:adv[-1]]),
            f"{name}: an Ellipsis between advanced indices")
    args = [x, (slice(None),) + idx]
    phys = innermost(x)
    if AT_CHECKS_INDICES_FIRST and type(phys) is np.ndarray and not phys.flags.writeable \
            and all(k in ("array", "int") for k in kinds) \
            and math.prod(x.shape[1 + len(idx):]) == 1:
        # Where every index picks one element, NumPy 2.4's fast path checks the indices first
        # (a zero-copy broadcast view indexed raises the same IndexError) and then writes even
        # into a read-only array (a NumPy bug; vmap refuses it). Otherwise, and in NumPy 2.5,
        # NumPy refuses the read-only target first, and so does the call below.
        np.broadcast_to(np.zeros((), dtype=np.int8), tuple(x.shape[1:]))[idx]
    if len(inputs) == 3:
        bv, bb = unwrap(inputs[2], level)
        if bb is not None or (split and hasattr(bv, "ndim")):
            # The per-example region a[idx] (a zero-copy broadcast view indexed: NumPy checks
            # the index and raises its own IndexError).
            example = np.broadcast_to(np.zeros((), dtype=np.int8, like=phys),
                                      tuple(x.shape[1:]))
            region = example[idx].shape
            if bb is not None:
                bv = pad_to_rank(move_bdim_to_front(bv, bb), len(region))
            else:
                bv = np.expand_dims(bv, tuple(range(len(region) + 1 - bv.ndim)))
            if split:
                consumed = sum(_consumed(idx[k]) for k in adv)
                n_adv = len(region) - (len(example.shape) - consumed)
                bv = np.moveaxis(bv, 0, n_adv)
        args.append(bv)
    op(*args)
    return None


def _at_batched_indices(op, name: str, level, x, indices, inputs) -> None:
    """``ufunc.at(a, idx, b)`` with index arrays that differ per example (``a`` batched, its
    batch axis in front): integer arrays only, one per leading axis of the example (each
    example's own, or one for all). The batch axis becomes one more index array, so one
    unbuffered call writes every example's elements (repeated indices add up, as in each
    example's call)."""
    parts = indices if isinstance(indices, tuple) else (indices,)
    require(0 < len(parts) <= x.ndim - 1, f"{name}: more indices than the example's axes")
    phys = innermost(x)
    if type(phys) is np.ndarray and not phys.flags.writeable:
        # NumPy's error for a read-only target (NumPy 2.4 writes into a 1-d one where every
        # index picks one element, a NumPy bug; vmap refuses it, as for a plain index)
        raise ValueError("operand array with iterator write flag set is read-only")
    found, shapes = [], []
    for j, p in enumerate(parts):
        v, b = unwrap(p, level)
        if b is None and isinstance(v, list):
            v = np.asarray(v)  # a host-side index list
        require(hasattr(v, "dtype") and v.dtype.kind in "iu",
                f"{name}: a batched index beside slices, masks or scalars")
        if b is not None:
            v = move_bdim_to_front(v, b)
        shapes.append(tuple(v.shape[1:] if b is not None else v.shape))
        n = x.shape[1 + j]
        if type(v) is np.ndarray and v.size:  # NumPy's error, with the example's axis
            lo, hi = int(v.min()), int(v.max())
            if hi >= n or lo < -n:
                raise IndexError(f"index {hi if hi >= n else lo} is out of bounds for axis "
                                 f"{j} with size {n}")
        found.append((v, b))
    try:
        bshape = np.broadcast_shapes(*shapes)
    except ValueError:
        require(False, f"{name}: index arrays that do not broadcast together")
    region = bshape + tuple(x.shape[1 + len(parts):])  # one example's a[idx]
    size = x.shape[0]
    rows = np.arange(size, like=phys).reshape((size,) + (1,) * len(bshape))
    args = [x, (rows,) + tuple(pad_to_rank(v, len(bshape)) if b is not None else v
                               for v, b in found)]
    if len(inputs) == 3:
        bv, bb = unwrap(inputs[2], level)
        if bb is not None:
            bv = move_bdim_to_front(bv, bb)
        shape = tuple(np.shape(bv)[1:] if bb is not None else np.shape(bv))
        try:
            ok = np.broadcast_shapes(shape, region) == region
        except ValueError:
            ok = False
        require(ok, f"{name}: values that do not broadcast to a[idx]")
        if bb is not None:
            bv = pad_to_rank(bv, len(region))
        args.append(bv)
    op(*args)
    return None


UFUNC_METHODS: dict[str, Any] = {
    "reduce": _reduce_like(REDUCE, "reduce", 0),
    "accumulate": _reduce_like(SCAN, "accumulate", 0),
    "reduceat": _reduceat,
    "outer": _outer,
    "at": _at,
}

slots.ufunc_methods.update(UFUNC_METHODS)
