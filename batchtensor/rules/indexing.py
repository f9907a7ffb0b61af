"""Indexing: ``x[key]``, ``x[key] = v``, take, take_along_axis, where, copyto, fill.

An index is translated into one physical index. Three cases (NumPy's own rules decide where the
dimensions of advanced indices land, so each case tracks where the batch axis ends up):

A. basic only (ints, slices, None, Ellipsis): insert ``slice(None)`` at the batch axis; a view;
B. advanced indices (integer/boolean arrays) none batched: batch axis first, prefix
   ``slice(None)``; the batch axis lands first, or after the broadcast index dimensions when the
   advanced indices are not adjacent;
C. some index batched: every example gathers with its own index, through an extra leading
   ``arange(B)`` advanced index; a boolean mask must select the same count in every example.
"""

from __future__ import annotations

import math
import operator

import numpy as np

from ..dispatch import scan_level, unwrap, wrap
from ..errors import BatchingError
from ..registry import batch_rule
from ..tensor import BatchedTensor, _new, ndarray_astype, ndarray_fill
from ._helpers import (align_front, align_pointwise, ensure_bdim, logical_rank, move_bdim_to_front, pad_to_rank,
                       physical_axis, require, wrap_axis)

_INT_TYPES = (int, np.integer)


def _is_bool_scalar(k) -> bool:
    return isinstance(k, (bool, np.bool_))


def _is_basic(k) -> bool:
    return (k is None or k is Ellipsis or type(k) is slice
            or (isinstance(k, _INT_TYPES) and not _is_bool_scalar(k)))


def _consumes(k) -> int:
    """How many logical dims an index entry consumes."""
    if k is None or k is Ellipsis or _is_bool_scalar(k):
        return 0
    if isinstance(k, _INT_TYPES) or type(k) is slice:
        return 1
    if getattr(k, "dtype", None) is not None and k.dtype == bool:
        return max(k.ndim, 1) if k.ndim else 0
    return 1


def _as_index_array(k):
    """Lists in an index are arrays (NumPy's rule); arrays and BatchedTensors pass through."""
    if isinstance(k, (list, tuple)):
        return np.asarray(k)
    return k


def _expand(key: tuple, nd: int) -> list:
    """The key with Ellipsis expanded and trailing dims made explicit."""
    n_ell = sum(1 for k in key if k is Ellipsis)
    if n_ell > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    used = sum(_consumes(k) for k in key)
    if used > nd:
        raise IndexError(f"too many indices for array: array is {nd}-dimensional, but {used} "
                         f"were indexed")
    out = []
    for k in key:
        if k is Ellipsis:
            out.extend([slice(None)] * (nd - used))
        else:
            out.append(k)
    if not n_ell:
        out.extend([slice(None)] * (nd - used))
    return out


def _result_dims(k) -> int:
    """Result dims a basic entry produces."""
    if isinstance(k, _INT_TYPES) and not _is_bool_scalar(k):
        return 0
    return 1


# ---- case A: basic indexing --------------------------------------------------------------------
def _basic_key(key: list, bdim: int) -> tuple[tuple, int, bool]:
    """Physical key with ``slice(None)`` at the batch axis; the batch axis of the result; and
    whether one example's result is a scalar (NumPy returns a copy then)."""
    consumed = produced = 0
    out = []
    placed = None
    for k in key:
        c = _consumes(k)
        if placed is None and c and consumed == bdim:
            out.append(slice(None))
            placed = produced
        out.append(k)
        consumed += c
        produced += _result_dims(k)
    if placed is None:
        out.append(slice(None))
        placed = produced
    scalar = produced == 0
    return tuple(out), placed, scalar


# ---- advanced indexing --------------------------------------------------------------------------
def _adv_layout(key: list):
    """Positions of the advanced entries (integers count as advanced once any array is
    present), whether they are adjacent, and the result dims of basic entries before them."""
    if all(_is_basic(k) for k in key):
        return [], True, 0
    adv = [i for i, k in enumerate(key)
           if not _is_basic(k) or (isinstance(k, _INT_TYPES) and not _is_bool_scalar(k))]
    adjacent = adv == list(range(adv[0], adv[0] + len(adv)))
    n_pre = sum(_result_dims(key[i]) for i in range(adv[0]))
    return adv, adjacent, n_pre


def _index_shape(k) -> tuple:
    """Shape an advanced entry contributes to the broadcast (only its rank matters here)."""
    if isinstance(k, _INT_TYPES):
        return ()
    if k.dtype == bool:
        return (1,)  # one dimension: the number of selected elements
    return tuple(k.shape)


class _Plan:
    """A physical index for ``x[key]`` and where the batch axis of the result lands.

    ``x`` is the physical value laid out for ``key``; ``raw_bdim`` the batch axis of
    ``x[key]``; ``moves`` a ``(src, dst)`` moveaxis that puts the raw result in the logical
    layout (batch first), or None; ``region_rank`` the logical rank of one example's result.
    """

    __slots__ = ("x", "key", "raw_bdim", "moves", "region_rank", "scalar")

    def __init__(self, x, key, raw_bdim, moves, region_rank, scalar=False):
        self.x, self.key, self.raw_bdim = x, key, raw_bdim
        self.moves, self.region_rank, self.scalar = moves, region_rank, scalar


def _plan(level, xv, xb, key_in) -> _Plan:
    key = key_in if type(key_in) is tuple else (key_in,)
    for k in key:
        if type(k) is slice:
            require(scan_level(k) is not level, "a batched slice bound")
    batched = any(type(k) is BatchedTensor and k._level is level for k in key)
    nd = xv.ndim - (xb is not None)
    if not batched and all(_is_basic(k) or _is_bool_scalar(k) for k in key):
        ekey = _expand(key, nd)
        pkey, bdim, scalar = _basic_key(ekey, xb)
        rank = sum(_result_dims(k) for k in ekey)
        return _Plan(xv, pkey, bdim, None, rank, scalar)
    require(not any(_is_bool_scalar(k) for k in key), "a boolean scalar with array indices")
    key = tuple(_as_index_array(k) for k in key)
    if not batched:
        ekey = _expand(key, nd)
        adv, adjacent, _ = _adv_layout(ekey)
        shapes = [_index_shape(ekey[i]) for i in adv]
        r = len(np.broadcast_shapes(*shapes))
        rest = sum(_result_dims(k) for i, k in enumerate(ekey) if i not in adv)
        x = move_bdim_to_front(xv, xb)
        pkey = (slice(None),) + tuple(ekey)
        return _Plan(x, pkey, 0 if adjacent else r, None, r + rest)

    # Case C: batched index arrays.
    n = next(k._value.shape[k._bdim] for k in key if type(k) is BatchedTensor
             and k._level is level)
    x = ensure_bdim(xv, xb, n)
    entries = []
    for k in key:
        kv, kb = unwrap(k, level)
        if getattr(kv, "dtype", None) is not None and kv.dtype == bool:
            entries.extend(_mask_to_indices(kv, kb, n))
        else:
            entries.append((kv, kb))
    ekey = _expand(tuple(e[0] if e[1] is None else _Batched(e) for e in entries), nd)
    adv, adjacent, n_pre = _adv_layout(ekey)
    shapes = [_logical_index_shape(ekey[i]) for i in adv]
    r = len(np.broadcast_shapes(*shapes))
    pkey = [np.reshape(np.arange(n, like=_like(x)), (n,) + (1,) * r)]
    for k in ekey:
        if isinstance(k, _Batched):
            pkey.append(pad_to_rank(move_bdim_to_front(k.value, k.bdim), r))
        else:
            pkey.append(k)
    rest = sum(_result_dims(k) for i, k in enumerate(ekey) if i not in adv)
    moves = None
    if adjacent and adv[0] > 0 and n_pre:
        moves = (list(range(1, 1 + r)), list(range(1 + n_pre, 1 + n_pre + r)))
    return _Plan(x, tuple(pkey), 0, moves, r + rest)


class _Batched:
    __slots__ = ("value", "bdim")

    def __init__(self, pair):
        self.value, self.bdim = pair


def _like(x):
    while type(x) is BatchedTensor:
        x = x._value
    return x


def _logical_index_shape(k) -> tuple:
    if isinstance(k, _Batched):
        s = k.value.shape
        return tuple(s[:k.bdim]) + tuple(s[k.bdim + 1:])
    return _index_shape(k)


def _mask_to_indices(mask, bdim, n) -> list:
    """A boolean mask -> one integer index per mask dimension (batched if the mask is)."""
    if bdim is None:
        return [(i, None) for i in np.nonzero(mask)]
    m = move_bdim_to_front(mask, bdim)
    counts = np.count_nonzero(np.reshape(m, (n, -1)) if m.size else np.zeros((n, 0), bool),
                              axis=1)
    if n and int(np.min(counts)) != int(np.max(counts)):
        raise BatchingError(
            f"indexing with a batched boolean mask: the mask selects between "
            f"{int(np.min(counts))} and {int(np.max(counts))} elements depending on the "
            f"example, so the results have different shapes and cannot be batched. Keep shapes "
            f"fixed with np.where(mask, x, fill), or reduce with where=mask."
        )
    c = int(counts[0]) if n else 0
    nz = np.nonzero(m)
    return [(np.reshape(i, (n, c)), 0) for i in nz[1:]]


def _lift(x, key):
    """A plain physical value indexed with BatchedTensors of outer levels: broadcast it to the
    highest of those levels (a view) so the physical indexing dispatches there."""
    if type(x) is BatchedTensor:
        return x
    low = scan_level(key)
    if low is None:
        return x
    n = low.size
    return _new(np.broadcast_to(x[None], (n,) + tuple(x.shape)), 0, low)


@batch_rule(operator.getitem, raw=True)
def getitem_rule(level, args, kwargs):
    x, key = args
    xv, xb = unwrap(x, level)
    plan = _plan(level, xv, xb, key)
    xp = plan.x
    if scan_level(plan.key) is not None:
        xp = _lift(xp, plan.key)
    res = xp[plan.key]
    if plan.scalar:
        res = np.copy(res)  # NumPy returns a scalar copy for one example, never a view
    if plan.moves is not None:
        res = np.moveaxis(res, *plan.moves)
    return wrap(res, plan.raw_bdim, level)


@batch_rule(operator.setitem, raw=True)
def setitem_rule(level, args, kwargs):
    x, key, value = args
    xv, xb = unwrap(x, level)
    if xb is None:
        raise BatchingError(
            "cannot write a batched value into an array that is not batched at this vmap level "
            "(x[...] = v with v, or the index, differing per example, while x is shared by "
            "every example). If x was created inside the function, create it batched: "
            "np.zeros_like(v) / np.empty_like(v), or np.zeros(shape, like=v)."
        )
    vv, vb = unwrap(value, level)
    key_t = key if type(key) is tuple else (key,)
    if _masked_write(level, xv, xb, key_t, vv, vb):
        return None
    plan = _plan(level, xv, xb, key)
    if vb is None and not hasattr(vv, "ndim"):
        plan.x[plan.key] = vv  # a scalar broadcasts anywhere
        return None
    v = move_bdim_to_front(vv, vb) if vb is not None else np.expand_dims(vv, 0)
    v = pad_to_rank(v, plan.region_rank)
    if plan.moves is not None:
        v = np.moveaxis(v, plan.moves[1], plan.moves[0])
    if plan.raw_bdim:
        v = np.moveaxis(v, 0, plan.raw_bdim)
    plan.x[plan.key] = v
    return None


def _masked_write(level, xv, xb, key, vv, vb) -> bool:
    """``x[mask] = v`` with a batched mask and a ``v`` that does not depend on the count: a
    masked copy, which allows a different count per example (``x[x < 0] = 0``)."""
    if len(key) != 1:
        return False
    (mask,) = key
    if not (type(mask) is BatchedTensor and mask._level is level and mask.dtype == bool):
        return False
    mv, mb = mask._value, mask._bdim
    nd = xv.ndim - 1
    k = mv.ndim - 1
    vnd = logical_rank(vv, vb) if hasattr(vv, "ndim") else 0
    if vnd > nd - k:
        return False
    x = move_bdim_to_front(xv, xb)
    m = move_bdim_to_front(mv, mb)
    if m.shape[1:] != x.shape[1:1 + k]:
        raise IndexError(f"boolean index did not match indexed array: array shape "
                         f"{x.shape[1:]}, mask shape {m.shape[1:]}")
    m = np.reshape(m, m.shape + (1,) * (nd - k))
    v = pad_to_rank(move_bdim_to_front(vv, vb), nd) if vb is not None else vv
    np.copyto(x, v, casting="unsafe", where=m)
    return True


@batch_rule(np.take)
def take_rule(a, a_bdim, indices, indices_bdim, axis=None, out=None, mode="raise"):
    require(out is None, "np.take with out=")
    if axis is None:  # take from the flattened example
        if a_bdim is not None:
            x = move_bdim_to_front(a, a_bdim)
            a, a_bdim = np.reshape(x, (x.shape[0], math.prod(x.shape[1:]))), 0
        else:
            a = np.ravel(a)
        axis = 0
    else:
        axis = wrap_axis(axis, logical_rank(a, a_bdim))
    if indices_bdim is None:
        pax = physical_axis(axis, a_bdim)
        res = np.take(a, indices, axis=pax, mode=mode)
        if a_bdim is None or a_bdim < pax:
            return res, a_bdim
        return res, a_bdim + np.ndim(indices) - 1
    # Batched indices: every example gathers with its own indices (advanced indexing).
    n = indices.shape[indices_bdim]
    x = ensure_bdim(a, a_bdim, n)
    idx = move_bdim_to_front(indices, indices_bdim)
    size = x.shape[1 + axis]
    if mode == "wrap" and size:
        idx = np.remainder(idx, size)
    elif mode == "clip" and size:
        idx = np.clip(idx, 0, size - 1)
    elif mode not in ("raise", "wrap", "clip"):
        raise ValueError(f"clipmode must be one of 'clip', 'raise', or 'wrap' (got {mode!r})")
    ir = idx.ndim - 1
    x = np.moveaxis(x, 1 + axis, 1)
    bidx = np.reshape(np.arange(n, like=_like(x)), (n,) + (1,) * ir)
    res = x[bidx, idx]  # (B, *index shape, *the other dims of the example)
    if axis:
        res = np.moveaxis(res, list(range(1, 1 + ir)), list(range(1 + axis, 1 + axis + ir)))
    return res, 0


@batch_rule(np.take_along_axis)
def take_along_axis_rule(arr, arr_bdim, indices, indices_bdim, axis=-1):
    if axis is None:
        x = move_bdim_to_front(arr, arr_bdim) if arr_bdim is not None else arr
        x = np.reshape(x, (x.shape[0], -1)) if arr_bdim is not None else np.ravel(x)
        arr, arr_bdim, axis = x, (0 if arr_bdim is not None else None), 0
        if logical_rank(indices, indices_bdim) != 1:
            raise ValueError("when axis=None, `indices` must have a single dimension.")
    nd = logical_rank(arr, arr_bdim)
    if logical_rank(indices, indices_bdim) != nd:
        raise ValueError("`indices` and `arr` must have the same number of dimensions")
    axis = wrap_axis(axis, nd)
    x = move_bdim_to_front(arr, arr_bdim) if arr_bdim is not None else np.expand_dims(arr, 0)
    i = (move_bdim_to_front(indices, indices_bdim) if indices_bdim is not None
         else np.expand_dims(indices, 0))
    return np.take_along_axis(x, i, axis=axis + 1), 0


@batch_rule(np.where)
def where_rule(condition, condition_bdim, x=None, x_bdim=None, y=None, y_bdim=None, /):
    require(x is not None and y is not None, "one-argument np.where (np.nonzero)")
    vals, bdim = align_pointwise([condition, x, y], [condition_bdim, x_bdim, y_bdim])
    return np.where(*vals), bdim


@batch_rule(np.copyto)
def copyto_rule(dst, dst_bdim, src, src_bdim, casting="same_kind", where=True,
                where_bdim=None):
    if dst_bdim is None:
        raise BatchingError(
            "numpy.copyto: cannot copy a batched value into dst, which is not batched at this "
            "vmap level (shared by every example). Create dst batched: np.empty_like(src)."
        )
    d = move_bdim_to_front(dst, dst_bdim)
    nd = d.ndim - 1
    s, w = align_front([src, where], [src_bdim, where_bdim], nd)
    np.copyto(d, s, casting=casting, where=w)
    return None, None


@batch_rule(ndarray_fill)
def fill_rule(x, x_bdim, value, value_bdim):
    if value_bdim is None:
        ndarray_fill(x, value)
        return None, None
    if x_bdim is None:
        raise BatchingError(
            "ndarray.fill: cannot fill the array (not batched at this vmap level, so shared by "
            "every example) with a value that differs per example. Create the array batched: "
            "np.full_like(value, value, shape=...).")
    if logical_rank(value, value_bdim) != 0:
        raise ValueError("fill: the value must be a scalar (one per example)")
    target = move_bdim_to_front(x, x_bdim)
    target[...] = pad_to_rank(move_bdim_to_front(value, value_bdim), target.ndim - 1)
    return None, None


@batch_rule(ndarray_astype)
def astype_rule(x, x_bdim, dtype, order="K", casting="unsafe", copy=True):
    return ndarray_astype(x, dtype, order=order, casting=casting, copy=copy), x_bdim


@batch_rule(np.copy)
def copy_rule(a, a_bdim, order="K", subok=False):
    return np.copy(a, order=order, subok=subok), a_bdim


__all__ = ["getitem_rule", "setitem_rule"]
