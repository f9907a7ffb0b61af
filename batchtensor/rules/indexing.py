"""Indexing and in-place writes.

``x[key]``, ``x[key] = v``, take, take_along_axis, where, copyto, fill, astype, copy; then
(second half of the file) the placement and selection ops: put, put_along_axis, place,
putmask, fill_diagonal, choose, select, compress, extract, diag, diagflat, tril, triu, the
``*_indices_from`` helpers, ix_, ravel_multi_index, unravel_index, and piecewise /
apply_along_axis / apply_over_axes, which call Python functions.

In-place ops write per example into a batched target; a target that is not batched at the
level (or at an outer level) of the values written raises a BatchingError naming both.
Data-dependent sizes (batched masks, conditions) work when every example has the same count.

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

import functools

import math
import operator

import numpy as np

from ..config import config
from ..plumbing import scan_level, unwrap, wrap
from ..plumbing import aligned_fast
from ..errors import unbatched_out_error
from ..errors import BatchingError
from ..registry import batch_rule, decomposition
from ..tensor import BatchedTensor, ndarray_astype, ndarray_fill, new_batched
from ._helpers import (align_front, align_pointwise, ensure_bdim, logical_rank, logical_shape,
                       move_bdim_to_front, ndim_of, pad_to_rank, physical_axis, require,
                       wrap_axis)

_INT_TYPES = (int, np.integer)


def _is_bool_scalar(k) -> bool:
    return isinstance(k, (bool, np.bool_))


def _is_basic(k) -> bool:
    return (k is None or k is Ellipsis or type(k) is slice
            or (isinstance(k, _INT_TYPES) and not _is_bool_scalar(k)))


def _consumes(k) -> int:
    """How many logical dims an index entry consumes."""
    if k is None or k is Ellipsis or _is_bool_scalar(k) or type(k) is _Mask0d:
        return 0
    if isinstance(k, _INT_TYPES) or type(k) is slice:
        return 1
    if getattr(k, "dtype", None) is not None and k.dtype == bool:
        return max(k.ndim, 1) if k.ndim else 0
    return 1


def _as_index_array(k):
    """Lists in an index are arrays (NumPy's rule); arrays and BatchedTensors pass through."""
    if isinstance(k, (list, tuple)):
        if scan_level(k) is not None:  # a list holding batched values: stack them
            return np.stack([_as_index_array(e) for e in k]) if len(k) else np.asarray(k)
        return np.asarray(k)
    return k


def _expand(key: tuple, nd: int) -> list:
    """The key with Ellipsis expanded and trailing dims made explicit.

    The Ellipsis itself stays, in front of the slices it stands for: NumPy counts it as a
    separator between advanced indices even where it stands for no dimension (``x[:, i, ...,
    j]`` on a 3-d x puts the index dimensions first), and in a physical key whose dimensions
    are all explicit it stands for none again.
    """
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
            out.append(Ellipsis)
            out.extend([slice(None)] * (nd - used))
        else:
            out.append(k)
    if not n_ell:
        out.extend([slice(None)] * (nd - used))
    return out


def _result_dims(k) -> int:
    """Result dims a basic entry produces."""
    if (isinstance(k, _INT_TYPES) and not _is_bool_scalar(k)) or k is Ellipsis:
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
    if any(type(k) is list and scan_level(k) is not None for k in key):
        key = tuple(_as_index_array(k) if type(k) is list else k for k in key)
    for k in key:
        if type(k) is slice:
            require(scan_level(k) is not level, "a batched slice bound")
    batched = any(type(k) is BatchedTensor and k._level is level for k in key)
    nd = xv.ndim - (xb is not None)
    if not batched and all(_is_basic(k) or _is_bool_scalar(k) for k in key):
        ekey = _expand(key, nd)
        pkey, bdim, scalar = _basic_key(ekey, xb)
        rank = sum(_result_dims(k) for k in ekey)
        # NumPy: a 0-d result is a scalar copy unless the key holds an Ellipsis (a 0-d view).
        scalar = scalar and not any(k is Ellipsis for k in key)
        return _Plan(xv, pkey, bdim, None, rank, scalar)
    require(not any(_is_bool_scalar(k) for k in key), "a boolean scalar with array indices")
    key = tuple(_as_index_array(k) for k in key)
    if not batched:
        ekey = _expand(key, nd)
        adv, adjacent, _ = _adv_layout(ekey)
        r = _broadcast_rank([_index_shape(ekey[i]) for i in adv])
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
        if kb is not None and kv.dtype == bool:
            entries.append(_Mask0d(kv, n) if kv.ndim == 1 else None)
            if kv.ndim > 1:
                entries[-1:] = _mask_to_indices(kv, kb, n)
        else:
            entries.append((kv, kb))
    ekey = _expand(tuple(e if type(e) in (_Batched, _Mask0d) else e[0] if e[1] is None
                         else _Batched(e) for e in entries), nd)
    x, ekey = _open_mask0d_axes(x, ekey)
    _check_mask_dims(ekey, x.shape[1:])
    adv, adjacent, n_pre = _adv_layout(ekey)
    r = _broadcast_rank([_logical_index_shape(ekey[i]) for i in adv])
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


class _Mask0d:
    """A batched 0-d boolean index: it adds an axis of length 0 or 1 (the same in every
    example). Indexing a new size-1 axis of x with ``count`` zeros does exactly that."""

    __slots__ = ("count",)

    def __init__(self, mask, n):
        base = _like(mask)  # every example at every level
        hi = bool(np.any(base))
        if n and hi != bool(np.all(base)):
            raise BatchingError(
                "indexing with a batched 0-d boolean index: it is True for some examples and "
                "False for others, so the results have different shapes (1 or 0 along the new "
                "axis). Use np.where(mask, x, fill) to keep shapes fixed.")
        self.count = int(hi)


def _open_mask0d_axes(x, ekey):
    """Insert x's size-1 axis for each batched 0-d boolean index, which becomes a batched
    integer index (zeros of length 0 or 1) into it."""
    if not any(type(k) is _Mask0d for k in ekey):
        return x, ekey
    out = []
    pos = 0
    for k in ekey:
        if type(k) is _Mask0d:
            n = x.shape[0]
            x = np.expand_dims(x, 1 + pos)
            k = _Batched((np.zeros((n, k.count), dtype=np.intp, like=_like(x)), 0))
        out.append(k)
        pos += _consumes(k)
    return x, out


def _broadcast_rank(shapes) -> int:
    try:
        return len(np.broadcast_shapes(*shapes))
    except ValueError:
        raise IndexError(f"shape mismatch: indexing arrays could not be broadcast together "
                         f"with shapes {' '.join(map(str, shapes))}") from None


class _Batched:
    """A batched index entry; ``mask_size``: the size of the mask axis it was made from."""

    __slots__ = ("value", "bdim", "mask_size")

    def __init__(self, pair, mask_size=None):
        self.value, self.bdim = pair
        self.mask_size = mask_size


def _check_mask_dims(ekey, shape) -> None:
    """NumPy's check that every axis of a boolean mask matches the axis it indexes."""
    pos = 0
    for k in ekey:
        if type(k) is _Batched and k.mask_size is not None and k.mask_size != shape[pos]:
            raise IndexError(f"boolean index did not match indexed array along axis {pos}; "
                             f"size of axis is {shape[pos]} but size of corresponding boolean "
                             f"axis is {k.mask_size}")
        pos += _consumes(k)


def _like(x):
    while type(x) is BatchedTensor:
        x = x._value
    return x


def _logical_index_shape(k) -> tuple:
    if isinstance(k, _Batched):
        s = k.value.shape
        return tuple(s[:k.bdim]) + tuple(s[k.bdim + 1:])
    return _index_shape(k)


_MASK_WHAT = ("indexing with a batched boolean mask: the mask",
              "x[mask] = value works with any counts")


def _mask_to_indices(mask, bdim, n, what: tuple = _MASK_WHAT) -> list:
    """A batched boolean mask -> one batched integer index per mask dimension.

    Every example must select the same number of elements (else the results differ in shape).
    A mask that is itself batched at an outer level is converted with NumPy calls that dispatch
    there (a stable argsort puts the selected positions first, in order).
    """
    m = move_bdim_to_front(mask, bdim)
    mshape = tuple(m.shape[1:])
    size = math.prod(mshape)
    flat = np.reshape(m, (n, size))
    counts = _like(np.sum(flat, axis=1))  # every example at every level
    lo, hi = (int(np.min(counts)), int(np.max(counts))) if counts.size else (0, 0)
    if lo != hi:
        raise BatchingError(
            f"{what[0]} selects between {lo} and {hi} elements depending on the example, so "
            f"the results have different shapes and cannot be batched. Keep shapes fixed with "
            f"np.where(mask, x, fill), or reduce with where=mask ({what[1]})."
        )
    c = hi
    if type(m) is not BatchedTensor:
        idx = [np.reshape(i, (n, c)) for i in np.nonzero(m)[1:]]
    else:
        pos = np.argsort(~flat, axis=1, kind="stable")[:, :c]
        idx = [np.remainder(np.floor_divide(pos, math.prod(mshape[i + 1:])), d)
               if len(mshape) > 1 else pos for i, d in enumerate(mshape)]
    return [_Batched((i, 0), d) for i, d in zip(idx, mshape)]


def _lift(x, key):
    """A plain physical value indexed with BatchedTensors of outer levels: broadcast it to the
    highest of those levels (a view) so the physical indexing dispatches there."""
    if type(x) is BatchedTensor:
        return x
    low = scan_level(key)
    if low is None:
        return x
    n = low.size
    return new_batched(np.broadcast_to(x[None], (n,) + tuple(x.shape)), 0, low)


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


_SETITEM_HELP = ("If x was created inside the function, create it from a batched value: "
                 "np.zeros_like(v), or np.zeros_like(v, shape=...) for another shape "
                 "(np.zeros(shape, like=v) only picks the backend, it is not batched); or build "
                 "the result with np.where instead of writing.")


@batch_rule(operator.setitem, raw=True)
def setitem_rule(level, args, kwargs):
    x, key, value = args
    xv, xb = unwrap(x, level)
    if xb is None:
        raise BatchingError(
            "x[key] = v: cannot write into x, which is not batched at this vmap level (shared by "
            "every example), with v or the index differing per example. " + _SETITEM_HELP)
    vv, vb = unwrap(value, level)
    key_t = key if type(key) is tuple else (key,)
    if len(key_t) == 1 and getattr(key_t[0], "dtype", None) == bool \
            and ndim_of(key_t[0]) == xv.ndim - 1 and logical_rank(vv, vb) > 1:
        raise TypeError(f"NumPy boolean array indexing assignment requires a 0 or "
                        f"1-dimensional input, input has {logical_rank(vv, vb)} dimensions")
    if _masked_write(level, xv, xb, key_t, vv, vb):
        return None
    plan = _plan(level, xv, xb, key)
    if type(plan.x) is not BatchedTensor and scan_level((plan.key, vv)) is not None:
        raise BatchingError(
            "x[key] = v: x is not batched at an outer vmap level at which v or the index is "
            "batched, so every example of that level would write into the same array. "
            + _SETITEM_HELP)
    if vb is None and type(vv) is not BatchedTensor and ndim_of(vv) == 0:
        plan.x[plan.key] = vv  # a scalar broadcasts anywhere
        return None
    v = move_bdim_to_front(vv, vb) if vb is not None else np.expand_dims(vv, 0)
    v = _drop_leading_ones(v, plan.region_rank)
    v = pad_to_rank(v, plan.region_rank)
    if plan.moves is not None:
        v = np.moveaxis(v, plan.moves[1], plan.moves[0])
    if plan.raw_bdim:
        v = np.moveaxis(v, 0, plan.raw_bdim)
    plan.x[plan.key] = v
    return None


def _drop_leading_ones(v, rank: int):
    """A batch-first value whose example has more than ``rank`` dims, the extra leading ones of
    size 1 (NumPy assigns those by dropping them): drop them."""
    extra = v.ndim - 1 - rank
    if extra <= 0 or any(d != 1 for d in v.shape[1:1 + extra]):
        return v  # NumPy raises its own broadcast error below
    return v[(slice(None),) + (0,) * extra]


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
    if k > nd:
        raise IndexError(f"too many indices for array: array is {nd}-dimensional, but {k} "
                         f"were indexed")
    scalar = vb is None and type(vv) is not BatchedTensor and ndim_of(vv) == 0
    if not scalar:
        v = move_bdim_to_front(vv, vb) if vb is not None else np.expand_dims(vv, 0)
        v = _drop_leading_ones(v, nd - k)
        if v.ndim - 1 > nd - k:
            return False  # one value per selected element: needs the same count everywhere
    x = move_bdim_to_front(xv, xb)
    m = move_bdim_to_front(mv, mb)
    for ax, (a, b) in enumerate(zip(x.shape[1:], m.shape[1:])):
        if a != b:
            raise IndexError(f"boolean index did not match indexed array along axis {ax}; "
                             f"size of axis is {a} but size of corresponding boolean axis is "
                             f"{b}")
    m = np.reshape(m, tuple(m.shape) + (1,) * (nd - k))
    v = vv if scalar else pad_to_rank(v, nd)  # a Python scalar stays one (NEP 50)
    np.copyto(x, v, casting="unsafe", where=m)
    return True


def _along(a, a_bdim, axis):
    """``(a, a_bdim, axis)`` for take/compress: ``axis=None`` (and a 0-d example, which NumPy
    treats as 1-d here) means the flattened example."""
    if axis is None or logical_rank(a, a_bdim) == 0:
        if a_bdim is not None:
            a, a_bdim = _flat_front(a, a_bdim), 0
        else:
            a = np.ravel(a)
        return a, a_bdim, 0 if axis is None else wrap_axis(axis, 1)
    return a, a_bdim, wrap_axis(axis, logical_rank(a, a_bdim))


@batch_rule(np.take)
def take_rule(a, a_bdim, indices, indices_bdim, axis=None, out=None, out_bdim=None,
              mode="raise"):
    if out is not None:
        if out_bdim is None:
            raise unbatched_out_error("numpy.take")
        res, res_bdim = take_rule(a, a_bdim, indices, indices_bdim, axis, None, None, mode)
        if logical_shape(res, res_bdim) != logical_shape(out, out_bdim):
            raise ValueError("output array does not match result of ndarray.take")
        if not np.can_cast(out.dtype, res.dtype, "safe"):  # NumPy buffers out as a's dtype
            raise TypeError(f"Cannot cast array data from {out.dtype!r} to {res.dtype!r} "
                            f"according to the rule 'safe'")
        np.copyto(move_bdim_to_front(out, out_bdim), move_bdim_to_front(res, res_bdim),
                  casting="unsafe")
        return out, out_bdim
    a, a_bdim, axis = _along(a, a_bdim, axis)
    if indices_bdim is None:
        pax = physical_axis(axis, a_bdim)
        if type(a) is not BatchedTensor and type(indices) is BatchedTensor:
            # np.take dispatches on `a` only: indices batched at an outer level need an `a`
            # that is a BatchedTensor there.
            a, pax = _lift(a, indices), pax
        res = np.take(a, indices, axis=pax, mode=mode)
        if a_bdim is None or a_bdim < pax:
            return res, a_bdim
        return res, a_bdim + ndim_of(indices) - 1
    # Batched indices: every example gathers with its own indices (advanced indexing).
    if mode not in ("raise", "wrap", "clip"):
        raise ValueError(f"clipmode must be one of 'clip', 'raise', or 'wrap' (got {mode!r})")
    if indices.dtype != np.intp:
        if not np.can_cast(indices.dtype, np.intp, "same_kind"):
            raise TypeError(f"Cannot cast array data from {indices.dtype!r} to "
                            f"{np.dtype(np.intp)!r} according to the rule 'same_kind'")
        indices = indices.astype(np.intp)  # booleans are 0/1 here, not a mask
    n = indices.shape[indices_bdim]
    x = ensure_bdim(a, a_bdim, n)
    idx = move_bdim_to_front(indices, indices_bdim)
    size = x.shape[1 + axis]
    if mode == "wrap" and size:
        idx = np.remainder(idx, size)
    elif mode == "clip" and size:
        idx = np.clip(idx, 0, size - 1)
    ir = idx.ndim - 1
    x = np.moveaxis(x, 1 + axis, 1)
    bidx = np.reshape(np.arange(n, like=_like(x)), (n,) + (1,) * ir)
    res = x[bidx, idx]  # (B, *index shape, *the other dims of the example)
    if axis:
        res = np.moveaxis(res, list(range(1, 1 + ir)), list(range(1 + axis, 1 + axis + ir)))
    return res, 0


def _take_along_axis_fast(level, args, kwargs):
    """Both arguments batch-first NumPy arrays of one level, the same rank, an int axis."""
    if len(args) == 3 and not kwargs:
        arr, indices, axis = args
    elif len(args) == 2 and set(kwargs) <= {"axis"}:
        (arr, indices), axis = args, kwargs.get("axis", -1)
    else:
        return NotImplemented
    if type(arr) is not BatchedTensor or type(indices) is not BatchedTensor \
            or type(axis) is not int:
        return NotImplemented
    a, i = arr._value, indices._value
    if arr._level is not level or indices._level is not level or arr._bdim or indices._bdim \
            or type(a) is not np.ndarray or type(i) is not np.ndarray or a.ndim != i.ndim \
            or i.dtype.kind not in "iu":
        return NotImplemented
    nd = a.ndim - 1
    if not -nd <= axis < nd:
        return NotImplemented
    if nd == 1:  # what np.take_along_axis does, minus building the row index every call
        return new_batched(a[_row_index(a.shape[0]), i], 0, level)
    return new_batched(np.take_along_axis(a, i, axis=axis % nd + 1), 0, level)


@functools.lru_cache(maxsize=16)
def _row_index(n: int) -> np.ndarray:
    rows = np.arange(n)[:, None]
    rows.flags.writeable = False
    return rows


@batch_rule(np.take_along_axis, fast=_take_along_axis_fast)
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


@batch_rule(np.where, fast=aligned_fast(np.where, 3, min_args=3))
def where_rule(condition, condition_bdim, x=None, x_bdim=None, y=None, y_bdim=None, /):
    require(x is not None and y is not None, "one-argument np.where (np.nonzero)")
    vals, bdim = align_pointwise([condition, x, y], [condition_bdim, x_bdim, y_bdim])
    return np.where(*vals), bdim


@batch_rule(np.copyto)
def copyto_rule(dst, dst_bdim, src, src_bdim, casting="same_kind", where=True,
                where_bdim=None):
    if dst_bdim is None:
        raise _shared_target("numpy.copyto", "dst", src=src_bdim, where=where_bdim)
    d = move_bdim_to_front(dst, dst_bdim)
    nd = d.ndim - 1
    s, w = align_front([src, where], [src_bdim, where_bdim], nd)
    if src_bdim is not None:
        s = _drop_leading_ones(s, nd)  # NumPy's assignment drops them too
    np.copyto(d, s, casting=casting, where=w)
    return None, None


@batch_rule(ndarray_fill)
def fill_rule(x, x_bdim, value, value_bdim):
    if x_bdim is None:
        raise BatchingError(
            "ndarray.fill: cannot fill x, which is not batched at this vmap level (shared by "
            "every example), with a value that differs per example. Create x batched "
            "(np.empty_like(v)) or use np.full_like.")
    _check_outer("ndarray.fill", x, value)
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




# =================================================================================================
# Placement and selection: put, put_along_axis, place, putmask, fill_diagonal (in place); choose,
# select, compress, extract, diag, diagflat, tril, triu, the *_indices_from helpers, ix_,
# ravel_multi_index, unravel_index; and the ops that take Python callables.
# =================================================================================================
def _example(x, bdim=None):
    """Zeros standing for one example of ``x`` (NumPy, for a dry run that lets NumPy check the
    arguments and raise its own error); Python scalars and lists as they are."""
    if type(x) is BatchedTensor or (hasattr(x, "shape") and hasattr(x, "dtype")):
        return np.zeros(logical_shape(x, bdim), dtype=x.dtype)
    return x


def _stand_in(x, bdim):
    """A broadcast (allocation-free, read-only) stand-in of one example, on x's backend: for
    ops that read only the shape."""
    return np.broadcast_to(np.zeros((), dtype=x.dtype, like=_like(x)), logical_shape(x, bdim))


def _any(x) -> bool:
    """Whether any element of ``x`` is true, over every example at every vmap level."""
    return bool(np.any(_like(x)))


def _is_scalar(x) -> bool:
    return type(x) is not BatchedTensor and ndim_of(x) == 0


def _flat_front(x, bdim):
    """Every example flattened: ``(B, size)`` if batched, ``(1, size)`` if not."""
    if bdim is None:
        return np.reshape(x, (1, -1))
    f = move_bdim_to_front(x, bdim)
    return np.reshape(f, (f.shape[0], math.prod(f.shape[1:])))


def _as_intp(idx):
    """Integer indices as intp (booleans become 0/1, never a mask)."""
    return idx if idx.dtype == np.intp else idx.astype(np.intp)


def _cycle(vflat, k: int):
    """``(B|1, m)`` values repeated along axis 1 to length ``k`` (NumPy's flat assignment)."""
    m = vflat.shape[1]
    if m == k:
        return vflat
    return np.take(vflat, np.arange(k, like=_like(vflat)) % m, axis=1)


def _check_flat_bounds(idx, size: int) -> None:
    base = _like(idx)  # every example at every level
    bad = (base < -size) | (base >= size)
    if np.any(bad):
        raise IndexError(f"index {int(base[bad][0])} is out of bounds for axis 0 with size "
                         f"{size}")


def _check_outer(name: str, target, *others) -> None:
    """A write into a physical target that is a plain array, of values batched at an outer
    level: every example of that level would write into the same array."""
    if type(target) is not BatchedTensor and scan_level(others) is not None:
        raise BatchingError(
            f"{name}: the array written into is not batched at an outer vmap level at which "
            f"the values or indices are batched, so the examples of that level would all write "
            f"into it. Create it from a batched value of that level (np.zeros_like(x), "
            f"x.copy()).")


def _scatter_flat(name: str, target, flat, vals) -> None:
    """``target[b].flat[flat[b]] = vals[b]`` for every example, written through the view
    ``target`` (batch first); ``flat`` holds non-negative in-range positions."""
    _check_outer(name, target, flat, vals)
    lshape = tuple(target.shape[1:])
    if not lshape:
        target, lshape = np.expand_dims(target, 1), (1,)
    n = target.shape[0]
    coords = tuple(np.remainder(np.floor_divide(flat, math.prod(lshape[i + 1:])), d)
                   for i, d in enumerate(lshape))
    target[(np.reshape(np.arange(n, like=_like(target)), (n, 1)),) + coords] = vals


def _shared_target(name: str, target: str, **others) -> BatchingError:
    batched = [k for k, b in others.items() if b is not None]
    what = " and ".join(batched) or "an argument"
    return BatchingError(
        f"{name}: cannot write into `{target}`, which is not batched at this vmap level (shared "
        f"by every example), while `{what}` differ{'s' if len(batched) == 1 else ''} per example. "
        f"Create `{target}` from a batched value (np.zeros_like(x), x.copy()) so that every "
        f"example has its own, or compute the result without writing (np.where, np.select)."
    )


def _outer_levels(refs) -> list:
    """(level, size) of every vmap level the physical values ``refs`` are batched at,
    outermost first."""
    found = {}
    for r in refs:
        while type(r) is BatchedTensor:
            found[r._level.id] = (r._level, r._value.shape[r._bdim])
            r = r._value
    return [found[k] for k in sorted(found)]


def _zeros_physical(shape, dtype, refs):
    """Fresh zeros of physical ``shape`` (batch axis included), batched at every outer level
    any of ``refs`` is batched at, so that writing their data into it dispatches there."""
    levels = _outer_levels(refs)
    like = next((_like(r) for r in refs if hasattr(r, "shape")), None)
    z = np.zeros(tuple(n for _, n in levels) + tuple(shape), dtype=dtype,
                 **({} if like is None else {"like": like}))
    for lv, _ in levels:
        z = new_batched(z, 0, lv)
    return z


# ---- in-place writes ----------------------------------------------------------------------------
@batch_rule(np.put)
def put_rule(a, a_bdim, ind, ind_bdim, v, v_bdim, mode="raise"):
    if a_bdim is None:
        raise _shared_target("numpy.put", "a", ind=ind_bdim, v=v_bdim)
    np.put(_example(a, a_bdim), _example(ind, ind_bdim), _example(v, v_bdim), mode=mode)
    target = move_bdim_to_front(a, a_bdim)
    size = math.prod(target.shape[1:])
    idx = _as_intp(_flat_front(ind, ind_bdim))
    k = idx.shape[1]
    if _is_scalar(v) and v_bdim is None:
        vals = v  # a Python scalar stays one (NEP 50)
    else:
        vflat = _flat_front(v, v_bdim)
        if not vflat.shape[1]:
            return None, None  # NumPy: nothing to put
        vals = _cycle(vflat, k)
    if not k:
        return None, None
    if mode == "raise":
        _check_flat_bounds(idx, size)
        idx = np.remainder(idx, size)
    elif mode == "wrap":
        idx = np.remainder(idx, size)
    else:
        idx = np.clip(idx, 0, size - 1)
    _scatter_flat("numpy.put", target, idx, vals)
    return None, None


def _value_front(v, bdim, rank: int):
    """A value to be assigned into a region of logical rank ``rank``: batch first and padded
    (extra leading size-1 dims dropped, as NumPy's assignment does); unbatched ones as they are
    (they broadcast right-aligned)."""
    if bdim is None:
        return v
    return pad_to_rank(_drop_leading_ones(move_bdim_to_front(v, bdim), rank), rank)


@batch_rule(np.put_along_axis)
def put_along_axis_rule(arr, arr_bdim, indices, indices_bdim, values, values_bdim, axis):
    if arr_bdim is None:
        raise _shared_target("numpy.put_along_axis", "arr", indices=indices_bdim,
                             values=values_bdim)
    np.put_along_axis(_example(arr, arr_bdim), _example(indices, indices_bdim),
                      _example(values, values_bdim), axis)
    target = move_bdim_to_front(arr, arr_bdim)
    if axis is None:  # arr.flat[indices] = values (broadcast, not repeated)
        idx = _as_intp(_flat_front(indices, indices_bdim))
        size = math.prod(target.shape[1:])
        if idx.shape[1]:
            _check_flat_bounds(idx, size)
            _scatter_flat("numpy.put_along_axis", target, np.remainder(idx, size),
                          _value_front(values, values_bdim, 1))
        return None, None
    nd = target.ndim - 1
    ax = wrap_axis(axis, nd)
    i = (move_bdim_to_front(indices, indices_bdim) if indices_bdim is not None
         else np.expand_dims(indices, 0))
    np.put_along_axis(target, i, _value_front(values, values_bdim, nd), ax + 1)
    return None, None


def _mask_front(mask, bdim, lshape):
    """A mask of the same size as the target, batch first and in the target's shape."""
    m = _flat_front(mask, bdim)
    m = m if m.dtype == bool else m.astype(bool)
    return m, np.reshape(m, (m.shape[0],) + tuple(lshape))


@batch_rule(np.place)
def place_rule(arr, arr_bdim, mask, mask_bdim, vals, vals_bdim):
    if arr_bdim is None:
        raise _shared_target("numpy.place", "arr", mask=mask_bdim, vals=vals_bdim)
    np.place(_example(arr, arr_bdim), _example(mask, mask_bdim), _example(vals, vals_bdim))
    target = move_bdim_to_front(arr, arr_bdim)
    m, where = _mask_front(mask, mask_bdim, target.shape[1:])
    if _is_scalar(vals) and vals_bdim is None:
        np.copyto(target, vals, where=where)
        return None, None
    vflat = _flat_front(vals, vals_bdim)
    nv = vflat.shape[1]
    if not nv:
        if _any(m):
            raise ValueError("Cannot insert from an empty array!")
        return None, None
    # The k-th selected element (counted per example) takes vals[k % len(vals)].
    rank = np.remainder(np.cumsum(m, axis=1) - 1, nv)
    picked = np.take_along_axis(vflat, rank, axis=1)
    np.copyto(target, np.reshape(picked, (picked.shape[0],) + tuple(target.shape[1:])),
              casting="unsafe", where=where)
    return None, None


@batch_rule(np.putmask)
def putmask_rule(a, a_bdim, /, mask, mask_bdim, values, values_bdim):
    if a_bdim is None:
        raise _shared_target("numpy.putmask", "a", mask=mask_bdim, values=values_bdim)
    np.putmask(_example(a, a_bdim), _example(mask, mask_bdim), _example(values, values_bdim))
    target = move_bdim_to_front(a, a_bdim)
    lshape = tuple(target.shape[1:])
    _, where = _mask_front(mask, mask_bdim, lshape)
    if _is_scalar(values) and values_bdim is None:
        np.copyto(target, values, casting="unsafe", where=where)  # putmask casts like setitem
        return None, None
    vflat = _flat_front(values, values_bdim)
    if not vflat.shape[1]:
        return None, None  # NumPy: nothing to put
    # Position n takes values.flat[n % len(values)].
    picked = _cycle(vflat, math.prod(lshape))
    np.copyto(target, np.reshape(picked, (picked.shape[0],) + lshape), casting="unsafe",
              where=where)
    return None, None


@batch_rule(np.fill_diagonal)
def fill_diagonal_rule(a, a_bdim, val, val_bdim, wrap=False):
    if a_bdim is None:
        raise _shared_target("numpy.fill_diagonal", "a", val=val_bdim)
    np.fill_diagonal(_example(a, a_bdim), _example(val, val_bdim), wrap)
    target = move_bdim_to_front(a, a_bdim)
    lshape = tuple(target.shape[1:])
    size = math.prod(lshape)
    if len(lshape) == 2:
        step = lshape[1] + 1
        end = None if wrap else lshape[1] * lshape[1]
    else:
        step = 1 + sum(math.prod(lshape[:i + 1]) for i in range(len(lshape) - 1))
        end = None
    pos = np.arange(size, like=_like(target))[:end:step]
    k = pos.shape[0]
    if not k:
        return None, None
    if _is_scalar(val) and val_bdim is None:
        vals = val
    else:
        vflat = _flat_front(val, val_bdim)
        if not vflat.shape[1]:
            return None, None
        vals = _cycle(vflat, k)
    _check_outer("numpy.fill_diagonal", target, vals)
    target[(slice(None),) + tuple(np.unravel_index(pos, lshape))] = vals
    return None, None


# ---- selection ----------------------------------------------------------------------------------
def _choose_args(a, choices, out=None, mode="raise"):
    return a, choices, out, mode


@batch_rule(np.choose, raw=True)
def choose_rule(level, args, kwargs):
    a, choices, out, mode = _choose_args(*args, **kwargs)
    if out is not None:
        if unwrap(out, level)[1] is None:
            raise unbatched_out_error("numpy.choose")
        require(False, "np.choose with a batched out=")
    av, ab = unwrap(a, level)
    cv, cb = unwrap(choices, level)
    if cb is not None:  # one batched array: its first logical axis lists the choices
        c = move_bdim_to_front(cv, cb)
        items = [(c[:, j], 0) for j in range(c.shape[1])]
    elif isinstance(choices, (list, tuple)):
        items = [unwrap(e, level) for e in choices]
    else:  # an unbatched array of choices (plain, or batched at an outer level)
        rank = max(logical_rank(av, ab), ndim_of(cv) - 1)
        return wrap(np.choose(align_front([av], [ab], rank)[0], cv, mode=mode), 0, level)
    vals = [av] + [v for v, _ in items]
    bdims = [ab] + [b for _, b in items]
    rank = max(logical_rank(v, b) for v, b in zip(vals, bdims))
    aligned = align_front(vals, bdims, rank)
    return wrap(np.choose(aligned[0], aligned[1:], mode=mode), 0, level)


def _dtype_of(x):
    return x.dtype if hasattr(x, "dtype") else np.asarray(x).dtype


def _shape_of(x):
    return tuple(x.shape) if hasattr(x, "shape") else np.shape(x)


@decomposition(np.select)
def select_decomposition(condlist, choicelist, default=0):
    """NumPy's select as a chain of np.where, last condition first (the first one wins)."""
    if len(condlist) != len(choicelist):
        raise ValueError("list of cases must be same length as list of conditions")
    if len(condlist) == 0:
        raise ValueError("select with an empty condition list is not possible")
    # As NumPy: Python scalars stay weak for the result dtype, everything else is an array.
    choices = [c if hasattr(c, "dtype") or type(c) in (int, float, complex) else np.asarray(c)
               for c in list(choicelist) + [default]]
    try:
        dtype = np.result_type(*[c.dtype if hasattr(c, "dtype") else c for c in choices])
    except TypeError as e:
        raise TypeError(f"Choicelist and default value do not have a common dtype: {e}") \
            from None
    choices, default = choices[:-1], choices[-1]
    np.broadcast_shapes(*[_shape_of(c) for c in condlist])
    np.broadcast_shapes(*[_shape_of(c) for c in choices + [default]])  # NumPy's ValueError
    for i, c in enumerate(condlist):
        if _dtype_of(c) != bool:
            raise TypeError(f"invalid entry {i} in condlist: should be boolean ndarray")
    result = default
    for cond, choice in zip(condlist[::-1], choices[::-1]):
        result = np.where(cond, choice, result)
    return result.astype(dtype, copy=False)


@batch_rule(np.compress)
def compress_rule(condition, condition_bdim, a, a_bdim, axis=None, out=None):
    if out is not None:  # a batched out= goes to the loop before the rule is called
        raise unbatched_out_error("numpy.compress")
    if logical_rank(condition, condition_bdim) != 1:
        raise ValueError("condition must be a 1-d array")
    a, a_bdim, axis = _along(a, a_bdim, axis)
    if condition_bdim is None:
        pax = physical_axis(axis, a_bdim)
        return np.compress(condition, a, axis=pax), a_bdim
    # A batched condition: every example keeps its own elements; the counts must agree.
    c = move_bdim_to_front(condition, condition_bdim)
    c = c if c.dtype == bool else c.astype(bool)
    (idx,) = _mask_to_indices(c, 0, c.shape[0], ("numpy.compress (or numpy.extract) with a "
                                                 "batched condition: the condition",
                                                 "np.place / np.putmask write with any counts"))
    return take_rule(a, a_bdim, idx.value, 0, axis)


@decomposition(np.extract)
def extract_decomposition(condition, arr):
    return np.compress(np.ravel(condition), np.ravel(arr))


# ---- diagonals and triangles --------------------------------------------------------------------
def _diag_matrix(x, k: int):
    """``(B, n)`` -> ``(B, N, N)`` with each row on the k-th diagonal."""
    n_ex, n = x.shape[0], x.shape[1]
    size = n + abs(k)
    res = _zeros_physical((n_ex, size, size), x.dtype, [x])
    i = np.arange(n, like=_like(x))
    res[:, i + max(-k, 0), i + max(k, 0)] = x
    return res


@batch_rule(np.diag)
def diag_rule(v, v_bdim, k=0):
    nd = logical_rank(v, v_bdim)
    x = move_bdim_to_front(v, v_bdim)
    if nd == 1:
        return _diag_matrix(x, operator.index(k)), 0
    if nd == 2:
        return np.diagonal(x, k, 1, 2), 0
    raise ValueError("Input must be 1- or 2-d.")


@batch_rule(np.diagflat)
def diagflat_rule(v, v_bdim, k=0):
    return _diag_matrix(_flat_front(v, v_bdim), operator.index(k)), 0


def _triangle(op, lower: bool):
    def rule(m, m_bdim, k=0):
        x = move_bdim_to_front(m, m_bdim)
        # NumPy: tri(*m.shape[-2:]): a 1-d example broadcasts to a square, 0-d raises.
        mask = np.tri(*x.shape[1:][-2:], k=k if lower else k - 1, dtype=bool, like=_like(x))
        x = pad_to_rank(x, 2)
        zero = np.zeros(1, dtype=x.dtype, like=_like(x))
        return (np.where(mask, x, zero) if lower else np.where(mask, zero, x)), 0

    rule.__name__ = f"{op.__name__}_rule"
    return batch_rule(op)(rule)


tril_rule = _triangle(np.tril, lower=True)
triu_rule = _triangle(np.triu, lower=False)


def _static_indices(op):
    """Ops whose result depends on the example's shape only: unbatched outputs."""
    def rule(arr, arr_bdim, *args, **kwargs):
        return tuple((r, None) for r in op(_stand_in(arr, arr_bdim), *args, **kwargs))

    rule.__name__ = f"{op.__name__}_rule"
    return batch_rule(op)(rule)


tril_indices_from_rule = _static_indices(np.tril_indices_from)
triu_indices_from_rule = _static_indices(np.triu_indices_from)
diag_indices_from_rule = _static_indices(np.diag_indices_from)


# ---- index construction -------------------------------------------------------------------------
@batch_rule(np.ix_)
def ix_rule(*args, args_bdims):
    n = len(args)
    out = []
    for i, (x, b) in enumerate(zip(args, args_bdims)):
        shape = (1,) * i + (-1,) + (1,) * (n - i - 1)
        if b is None:
            (one,) = np.ix_(x)
            out.append((np.reshape(one, shape), None))
            continue
        f = move_bdim_to_front(x, b)
        if f.ndim != 2:
            raise ValueError("Cross index must be 1 dimensional")
        if f.dtype == bool:
            (e,) = _mask_to_indices(f, 0, f.shape[0], (f"numpy.ix_: the batched boolean "
                                                        f"argument {i}",
                                                        "or index with integer arrays"))
            f = e.value
        elif not f.shape[1]:
            f = f.astype(np.intp)
        out.append((np.reshape(f, (f.shape[0],) + tuple(f.shape[1] if d == -1 else 1
                                                          for d in shape)), 0))
    return tuple(out)


def _rmi_args(multi_index, dims, mode="raise", order="C"):
    return multi_index, dims, mode, order


@batch_rule(np.ravel_multi_index, raw=True)
def ravel_multi_index_rule(level, args, kwargs):
    multi_index, dims, mode, order = _rmi_args(*args, **kwargs)
    mv, mb = unwrap(multi_index, level)
    if mb is not None:  # one batched array: its first logical axis lists the coordinates
        f = move_bdim_to_front(mv, mb)
        pairs = [(f[:, j], 0) for j in range(f.shape[1])]
    else:
        pairs = [unwrap(e, level) for e in multi_index]
    rank = max([logical_rank(v, b) for v, b in pairs] + [0])
    aligned = align_front([v for v, _ in pairs], [b for _, b in pairs], rank)
    return wrap(np.ravel_multi_index(tuple(aligned), dims, mode=mode, order=order), 0, level)


@batch_rule(np.unravel_index)
def unravel_index_rule(indices, indices_bdim, shape, order="C"):
    return tuple((r, indices_bdim) for r in np.unravel_index(indices, shape, order=order))


# ---- ops that call Python functions -------------------------------------------------------------
def _pw_args(x, condlist, funclist, *args, **kw):
    return x, condlist, funclist, args, kw


def _batched_at(x, level, n: int):
    """``x`` as a BatchedTensor of ``level`` (a broadcast view if it is not batched there)."""
    if type(x) is BatchedTensor and x._level is level:
        return x
    if not hasattr(x, "shape"):
        x = np.asarray(x)
    return new_batched(np.broadcast_to(np.expand_dims(x, 0), (n,) + tuple(x.shape)), 0, level)


@batch_rule(np.piecewise, raw=True)
def piecewise_rule(level, args, kwargs):
    """NumPy's own algorithm on batched values: each function is called once, on the batched
    selection ``x[cond]`` -- a batched 1-d array, as NumPy passes each function a 1-d array of
    the selected elements -- and never on elements its condition does not select (which
    ``np.where(cond, f(x), ...)`` would do). A batched selection needs every condition to select
    the same number of elements in every example; otherwise, or if a function cannot run on
    batched values (``BatchingError``), the call runs per example (the loop). For a 0-d ``x``
    (a function vmapped over scalars) each function instead runs on every example's value, a
    1-element array as in NumPy, and the result is kept where the condition holds: exact, with
    floating-point warnings from the discarded values silenced."""
    x, condlist, funclist, fargs, fkw = _pw_args(*args, **kwargs)
    xv, xb = unwrap(x, level)
    xnd = logical_rank(xv, xb)
    # NumPy: a single condition is promoted to a list of one condition (a 0-d BatchedTensor
    # stands for a NumPy scalar here, as it would be per example).
    if np.isscalar(condlist) or (type(condlist) is BatchedTensor and condlist.ndim == 0):
        condlist = [condlist]
    else:
        c0 = condlist[0]
        if not (isinstance(c0, (list, np.ndarray))
                or (type(c0) is BatchedTensor and c0.ndim > 0)) and xnd != 0:
            condlist = [condlist]
    if type(condlist) is BatchedTensor:
        conds = condlist.astype(bool)
    else:
        conds = [c.astype(bool) if type(c) is BatchedTensor else np.asarray(c, dtype=bool)
                 for c in condlist]
        conds = np.stack(conds) if scan_level(conds) is not None else np.asarray(conds)
    n, n2 = len(conds), len(funclist)
    if n == n2 - 1:
        conds = np.concatenate([conds, ~np.any(conds, axis=0, keepdims=True)], axis=0)
        n += 1
    elif n != n2:
        raise ValueError(f"with {n} condition(s), either {n} or {n + 1} functions are expected")
    cv, cb = unwrap(conds, level)
    size = (xv if xb is not None else cv).shape[xb if xb is not None else cb]
    varying = False
    if cb is not None:
        front = move_bdim_to_front(cv, cb)
        counts = np.sum(np.reshape(front, (size, n, math.prod(front.shape[2:]))), axis=2)
        for i in range(n):
            ci = _like(counts[:, i])
            varying |= bool(ci.size) and int(np.min(ci)) != int(np.max(ci))
    # A 0-d x: each function sees a 1-element array, so calling it on every example's value
    # (keeping it where its condition holds) is exact, also when the conditions differ.
    every = varying and xnd == 0
    require(not varying or every, "np.piecewise with a condition that selects a different "
                                  "number of elements per example")
    xw = _batched_at(x, level, size)
    # y is batched wherever x, the conditions, constant values or extra arguments are.
    refs = [xw._value, cv] + [f for f in funclist if not callable(f)] + list(fargs) \
        + list(fkw.values())
    out_phys = _zeros_physical((size,) + tuple(xw.shape), xw.dtype,
                               [unwrap(r, level)[0] for r in refs])
    y = new_batched(out_phys, 0, level)
    y._array0d = True  # np.piecewise's own output buffer, written below
    try:
        for cond, func in zip(conds, funclist):
            if not callable(func):
                y[cond] = func
            elif every:
                with np.errstate(all="ignore"):  # values the loop would not have computed
                    y[cond] = func(xw[None], *fargs, **fkw)
            else:
                vals = xw[cond]
                if vals.size > 0:
                    y[cond] = func(vals, *fargs, **fkw)
    except BatchingError as e:
        if config.fallback == "error":
            raise  # the op inside the function that cannot be batched is the news
        require(False, f"np.piecewise: a function cannot run on batched values ({e})")
    return y


def _aaa_args(func1d, axis, arr, *args, **kwargs):
    return func1d, axis, arr, args, kwargs


@batch_rule(np.apply_along_axis, raw=True)
def apply_along_axis_rule(level, args, kwargs):
    """NumPy's own loop over the 1-d slices, each slice batched: ``func1d`` sees the same 1-d
    slices as in NumPy (one call per slice position, not one per example and position), and
    each result is cast to the dtype of the first one as NumPy's buffer does. If ``func1d``
    cannot run on batched values (it raises ``BatchingError``, e.g. control flow that differs
    between examples), the call runs per example (the loop)."""
    func1d, axis, arr, fargs, fkw = _aaa_args(*args, **kwargs)
    nd = arr.ndim
    axis = wrap_axis(axis, nd)
    view = np.moveaxis(arr, axis, -1)
    outer = tuple(view.shape[:-1])
    if not math.prod(outer):
        raise ValueError("Cannot apply_along_axis when any iteration dimensions are 0")
    try:
        results = [func1d(view[ind + (Ellipsis,)], *fargs, **fkw) for ind in np.ndindex(outer)]
    except BatchingError as e:
        if config.fallback == "error":
            raise  # the op inside func1d that cannot be batched is the news
        require(False, f"np.apply_along_axis: func1d cannot run on batched slices ({e})")
    first = results[0]
    rshape = _shape_of(first)
    rnd = len(rshape)
    buff = np.reshape(np.stack(results), outer + rshape).astype(_dtype_of(first), copy=False)
    dims = list(range(buff.ndim))
    perm = dims[:axis] + dims[buff.ndim - rnd:] + dims[axis:buff.ndim - rnd]
    return np.transpose(buff, perm)


@decomposition(np.apply_over_axes)
def apply_over_axes_decomposition(func, a, axes):
    """NumPy's own loop, with ``func(a, axis)`` called on the whole batched value."""
    val = a
    n = a.ndim
    if np.ndim(axes) == 0:
        axes = (axes,)
    for axis in axes:
        if axis < 0:
            axis = n + axis
        res = func(val, axis)
        if res.ndim == val.ndim:
            val = res
        else:
            res = np.expand_dims(res, axis)
            if res.ndim == val.ndim:
                val = res
            else:
                raise ValueError("function is not returning an array of the correct shape")
    return val
