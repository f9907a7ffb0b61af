"""In-place writes by function: put_along_axis, putmask, put, place, fill_diagonal.

A batched target is written per example. An unbatched target (a plain array, or a value of an
outer level) is shared by every example, so writing a batched value or index into it raises,
naming both (the per-example loop would let the last example win: a silent wrong result).
``x[key] = v``, ``copyto``, ``fill``, ``out=`` and ``ufunc.at`` live with their families.
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import BatchingError
from ..registry import batch_rule
from ..tensor import BatchedTensor
from ._helpers import logical_rank, move_bdim_to_front, pad_to_rank, require, wrap_axis


def shared_target_error(op: str, target: str, value, batched: list[str]) -> BatchingError:
    shape = tuple(value.shape) if hasattr(value, "shape") else np.shape(value)
    what = " and ".join(batched)
    return BatchingError(
        f"{op}: cannot write into {target} (shape {shape}), which is not batched at this vmap "
        f"level, with {what} that differ per example: {target} is shared by every example. "
        f"Make {target} batched first, e.g. {target} = np.zeros_like(x, shape={shape}) (x any "
        f"batched value) or {target} = {target} + np.zeros_like(x, shape={shape}), then write."
    )


def _batched_names(**bdims) -> list[str]:
    return [name for name, b in bdims.items() if b is not None]


@batch_rule(np.put_along_axis)
def put_along_axis_rule(arr, arr_bdim, indices, indices_bdim, values, values_bdim, axis):
    if arr_bdim is None:
        raise shared_target_error("numpy.put_along_axis", "arr", arr,
                                  _batched_names(indices=indices_bdim, values=values_bdim))
    if axis is None:
        return _put_flat(arr, arr_bdim, indices, indices_bdim, values, values_bdim)
    nd = arr.ndim - 1
    if logical_rank(indices, indices_bdim) != nd:
        raise ValueError("`indices` and `arr` must have the same number of dimensions")
    axis = wrap_axis(axis, nd)
    a = move_bdim_to_front(arr, arr_bdim)
    idx = (move_bdim_to_front(indices, indices_bdim) if indices_bdim is not None
           else np.expand_dims(indices, 0))
    if values_bdim is not None:
        values = pad_to_rank(move_bdim_to_front(values, values_bdim), nd)
    np.put_along_axis(a, idx, values, axis + 1)
    return None, None


def _root(x):
    while type(x) is BatchedTensor:
        x = x._value
    return x


def _put_flat(arr, arr_bdim, indices, indices_bdim, values, values_bdim):
    """put_along_axis(axis=None): flat indices into each example, written through a multi-index
    (NumPy writes via ``np.array(arr.flat)``, which is read-only for a strided example)."""
    if logical_rank(indices, indices_bdim) != 1:
        raise ValueError("when axis=None, `indices` must have a single dimension.")
    a = move_bdim_to_front(arr, arr_bdim)
    lshape = tuple(a.shape[1:])
    size = math.prod(lshape)
    idx = (move_bdim_to_front(indices, indices_bdim) if indices_bdim is not None
           else np.expand_dims(indices, 0))
    flat = _root(idx)
    if flat.size:  # the bounds of every example, outer levels included
        lo, hi = int(np.min(flat)), int(np.max(flat))
        bad = hi if hi >= size else lo if lo < -size else None
        if bad is not None:
            raise IndexError(f"index {bad} is out of bounds for axis 0 with size {size}")
    if size == 0:
        return None, None  # (no index can be in bounds: idx is empty)
    idx = np.where(idx < 0, idx + size, idx)
    multi, stride = [], size
    for d in lshape:  # unravel with ufuncs (they dispatch on outer levels too)
        stride //= d
        multi.append((idx // stride) % d)
    rows = np.reshape(np.arange(a.shape[0], like=a), (-1, 1))
    if values_bdim is not None:
        values = pad_to_rank(move_bdim_to_front(values, values_bdim), 1)
    a[(rows,) + tuple(multi)] = values
    return None, None


@batch_rule(np.putmask)
def putmask_rule(a, a_bdim, mask, mask_bdim, values, values_bdim, /):
    if a_bdim is None:
        raise shared_target_error("numpy.putmask", "a", a,
                                  _batched_names(mask=mask_bdim, values=values_bdim))
    nd = a.ndim - 1
    lshape = a.shape[:a_bdim] + a.shape[a_bdim + 1:]
    vshape = tuple(np.shape(values)) if values_bdim is None else (
        values.shape[:values_bdim] + values.shape[values_bdim + 1:])
    # putmask repeats a smaller `values` cyclically; the same shape (or a scalar) is a copy.
    require(vshape in ((), lshape), "putmask with values of another shape (cyclic repeat)")
    if logical_rank(mask, mask_bdim) != nd and np.size(mask) != 1:
        raise ValueError("putmask: mask and data must be the same size")
    target = move_bdim_to_front(a, a_bdim)
    m = pad_to_rank(move_bdim_to_front(mask, mask_bdim), nd) if mask_bdim is not None else mask
    v = pad_to_rank(move_bdim_to_front(values, values_bdim), nd) if values_bdim is not None \
        else values
    np.copyto(target, v, casting="unsafe", where=m)
    return None, None


@batch_rule(np.put)
def put_rule(a, a_bdim, ind, ind_bdim, v, v_bdim, mode="raise"):
    if a_bdim is None:
        raise shared_target_error("numpy.put", "a", a, _batched_names(ind=ind_bdim, v=v_bdim))
    require(False, "np.put on a batched target (flat indices, cyclic values: per example)")


@batch_rule(np.place)
def place_rule(arr, arr_bdim, mask, mask_bdim, vals, vals_bdim):
    if arr_bdim is None:
        raise shared_target_error("numpy.place", "arr", arr,
                                  _batched_names(mask=mask_bdim, vals=vals_bdim))
    require(False, "np.place on a batched target (count depends on the mask: per example)")


@batch_rule(np.fill_diagonal)
def fill_diagonal_rule(a, a_bdim, val, val_bdim, wrap=False):
    if a_bdim is None:
        raise shared_target_error("numpy.fill_diagonal", "a", a, ["val"])
    nd = a.ndim - 1
    if nd < 2:
        raise ValueError("array must be at least 2-d")
    lshape = a.shape[:a_bdim] + a.shape[a_bdim + 1:]
    require(nd == 2 and not wrap and logical_rank(val, val_bdim) == 0,
            "fill_diagonal with wrap=, n-d arrays or array values")
    target = move_bdim_to_front(a, a_bdim)
    i = np.arange(min(lshape), like=target)
    if val_bdim is not None:
        val = np.expand_dims(move_bdim_to_front(val, val_bdim), 1)
    target[:, i, i] = val
    return None, None


__all__ = ["put_along_axis_rule", "putmask_rule", "put_rule", "place_rule",
           "fill_diagonal_rule", "shared_target_error"]
