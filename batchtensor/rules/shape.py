"""Shape queries and shape-changing copies: ndim, shape, size, tile, repeat, resize, pad,
insert, delete.

Index arguments (``obj``, ``repeats``, ``reps``, ``pad_width``, ``new_shape``) are shared by
every example here; a batched one sends the call to the per-example loop (the dispatcher does
that), which stacks equal output shapes and raises on unequal ones.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.lib.array_utils import normalize_axis_tuple

from ..errors import DataDependentError
from ..plumbing import innermost, scan_level
from ..registry import batch_rule
from ..tensor import BatchedTensor
from ._helpers import (NoValue, ensure_bdim, logical_rank, logical_shape, move_bdim_to_front,
                       pad_to_rank, require, shared_value, wrap_axis)


def _unbatched(value, what: str) -> None:
    """Hand the call to the loop if ``value`` (an index-like argument the rule reads in Python)
    holds a value batched at an outer level; the loop lets that level dispatch it."""
    require(scan_level(value) is None, f"{what} batched at an outer vmap level")


def _flat(x):
    """Batch-first ``x`` with every example flattened (C order)."""
    return np.reshape(x, (x.shape[0], math.prod(x.shape[1:])))


# ---- queries: answered for the logical (per-example) array, unbatched ---------------------------
@batch_rule(np.ndim)
def ndim_rule(a, a_bdim):
    return logical_rank(a, a_bdim), None


@batch_rule(np.shape)
def shape_rule(a, a_bdim):
    return logical_shape(a, a_bdim), None


@batch_rule(np.size)
def size_rule(a, a_bdim, axis=None):
    shape = logical_shape(a, a_bdim)
    if axis is None:
        return math.prod(shape), None
    axes = normalize_axis_tuple(axis, len(shape), allow_duplicate=False)
    return math.prod(shape[ax] for ax in axes), None


# ---- repeating ----------------------------------------------------------------------------------
@batch_rule(np.tile)
def tile_rule(A, A_bdim, reps, reps_bdim):
    reps = shared_value(reps, reps_bdim, "numpy.tile: reps")  # it decides the result's shape
    if A_bdim is None:
        return np.tile(A, reps), None
    try:
        tup = tuple(reps)
    except TypeError:
        tup = (reps,)
    x = pad_to_rank(move_bdim_to_front(A, A_bdim), len(tup))
    tup = (1,) * (x.ndim - 1 - len(tup)) + tup
    return np.tile(x, (1,) + tup), 0


@batch_rule(np.repeat)
def repeat_rule(a, a_bdim, repeats, repeats_bdim=None, axis=None):
    x = move_bdim_to_front(a, a_bdim) if a_bdim is not None else a
    if repeats_bdim is not None:
        return _repeat_per_example(x, a_bdim, move_bdim_to_front(repeats, repeats_bdim), axis)
    if axis is None or x.ndim == 1:
        x = _flat(x)  # NumPy treats a 0-d array as 1-d here, also with axis=0 or -1
    if axis is None:
        return np.repeat(x, repeats, axis=1), 0
    return np.repeat(x, repeats, axis=wrap_axis(axis, x.ndim - 1) + 1), 0


def _repeat_per_example(x, x_bdim, counts, axis):
    """``np.repeat`` of 1-d examples by counts of their own (``repeats`` batched, as rank
    computations write ``repeat(ranks, counts)``): one repeat of every example's elements
    after another, cut into the examples again where each gets as many elements; a total
    that differs per example has no batch (DataDependentError, which reruns). Values batched
    at an outer level too take the same steps through that level's rules."""
    n = counts.shape[0]
    if x_bdim is None:
        x = np.broadcast_to(x, (n,) + tuple(np.shape(x)))
    flat = x.ndim <= 2 and counts.ndim <= 2 and (axis is None or (x.ndim == 2 and
                                                                   axis in (0, -1)))
    require(flat, "np.repeat with repeats of their own per example over an axis of a "
                  "multi-dimensional example")
    if not n:
        raise DataDependentError("np.repeat with repeats of their own per example and no "
                                 "example: the number of elements of a result is unknown")
    x = np.reshape(x, (n, -1))
    counts = np.broadcast_to(np.reshape(counts, (n, -1)), x.shape)  # one count or one each
    totals = np.sum(counts, axis=1)
    if not bool(np.all(totals == totals[:1])):  # (at an outer level: its examples agree)
        raise DataDependentError("np.repeat: the repeats give the examples different numbers "
                                 "of elements, so the results cannot be batched")
    values = np.repeat(np.reshape(x, (-1,)), np.reshape(counts, (-1,)))
    return np.reshape(values, (n, values.shape[0] // n)), 0


@batch_rule(np.resize)
def resize_rule(a, a_bdim, new_shape):
    """Each example is flattened and repeated cyclically to fill ``new_shape``."""
    if isinstance(new_shape, (int, np.integer)):
        new_shape = (new_shape,)
    new_shape = tuple(new_shape)
    new_size = 1
    for d in new_shape:
        new_size *= d
        if d < 0:
            raise ValueError("all elements of `new_shape` must be non-negative")
    x = _flat(move_bdim_to_front(a, a_bdim))
    n, size = x.shape
    if size == 0 or new_size == 0:
        return np.zeros((n,) + new_shape, dtype=x.dtype, like=innermost(x)), 0
    reps = -(-new_size // size)
    filled = np.tile(x, (1, reps))[:, :new_size]
    return np.reshape(filled, (n,) + new_shape), 0


# ---- pad ----------------------------------------------------------------------------------------
_VALUE_KWARGS = {"constant_values": (0, 0), "end_values": (0, 0), "stat_length": (1, 1)}


def _pad_pairs(pad_width, nd: int) -> list:
    """``pad_width`` as ``nd`` (before, after) pairs, validated as np.pad validates it."""
    pw = np.asarray(pad_width)
    if pw.dtype.kind != "i":
        raise TypeError("`pad_width` must be of integral type.")
    pw = np.round(pw).astype(np.intp, copy=False)
    if pw.ndim < 3 and (pw.size == 1 or (pw.size == 2 and pw.shape != (2, 1))):
        flat = pw.ravel()
        pair = (int(flat[0]), int(flat[-1]))
        if min(pair) < 0:
            raise ValueError("index can't contain negative values")
        return [pair] * nd
    if pw.size and pw.min() < 0:
        raise ValueError("index can't contain negative values")
    return [tuple(p) for p in np.broadcast_to(pw, (nd, 2)).tolist()]


def _per_axis_value(value, nd: int, batch_row):
    """A value argument of np.pad for the batch-first physical array.

    Forms that mean the same for every axis (scalar, (before, after)) pass unchanged: the
    batch axis gets no padding, so its value is never used. A per-axis form gets a row for the
    batch axis in front (on the value's backend; a NumPy table as a list, which np.pad takes
    on every backend)."""
    if value is None:
        return value
    shape = tuple(value.shape) if hasattr(value, "shape") else np.shape(value)
    size = math.prod(shape)
    if len(shape) < 3 and (size == 1 or (size == 2 and shape != (2, 1))):
        return value
    v = np.asarray(value, like=value if hasattr(value, "__array_function__") else None)
    per_axis = np.broadcast_to(v, (nd, 2))
    table = np.concatenate([np.asarray([batch_row], dtype=v.dtype, like=v), per_axis])
    return table.tolist() if type(table) is np.ndarray else table


def _value_pairs(v, vdim, nd: int, dtype):
    """A batched ``constant_values`` as a batch-first (B, nd, 2) table, cast to ``dtype``
    (np.pad writes the values into the padded array)."""
    v = move_bdim_to_front(v, vdim)
    n = v.shape[0]
    r = v.ndim - 1
    if r < 3 and math.prod(v.shape[1:]) == 1:
        t = np.reshape(v, (n, 1, 1))
    elif r < 3 and math.prod(v.shape[1:]) == 2 and v.shape[1:] != (2, 1):
        t = np.reshape(v, (n, 1, 2))
    else:
        t = pad_to_rank(v, 2)
    return np.broadcast_to(t, (n, nd, 2)).astype(dtype)


def _pad_with_batched_values(x, pairs, table):
    """Constant padding, one axis after another (later axes own the corners, as in np.pad)."""
    n = x.shape[0]
    nd = x.ndim - 1
    for k, (before, after) in enumerate(pairs):
        parts = []
        for width, side in ((before, 0), (after, 1)):
            shape = x.shape[:k + 1] + (width,) + x.shape[k + 2:]
            fill = np.reshape(table[:, k, side], (n,) + (1,) * nd)
            parts.append(np.broadcast_to(fill, shape))
        x = np.concatenate([parts[0], x, parts[1]], axis=k + 1)
    return x


@batch_rule(np.pad)
def pad_rule(array, array_bdim, pad_width, mode="constant", *, constant_values=NoValue,
             constant_values_bdim=None, **kwargs):
    require(not callable(mode), "np.pad with a callable mode (it is told the axis number)")
    _unbatched((pad_width, kwargs), "np.pad's pad_width or value arguments")
    n = array.shape[array_bdim] if array_bdim is not None else \
        constant_values.shape[constant_values_bdim]
    x = ensure_bdim(array, array_bdim, n)
    nd = x.ndim - 1
    pairs = _pad_pairs(pad_width, nd)
    if constant_values_bdim is not None or type(constant_values) is BatchedTensor:
        if mode != "constant" or kwargs:
            raise ValueError(f"unsupported keyword arguments for mode '{mode}': "
                             f"{set(kwargs) | {'constant_values'}}")
        if not pairs:
            return np.copy(x), 0
        cv = ensure_bdim(constant_values, constant_values_bdim, n)
        if x.dtype.kind in "iub" and cv.dtype.kind in "fc":
            # np.pad writes each value as a scalar (also into a side of no width): NaN or
            # infinity into an integer array raises there, where a cast would give a number
            values = _value_pairs(cv, 0, nd, cv.dtype)
            if not bool(np.all(np.isfinite(values))):
                if bool(np.any(np.isnan(values))):
                    raise ValueError("cannot convert float NaN to integer")
                raise OverflowError("cannot convert float infinity to integer")
        table = _value_pairs(cv, 0, nd, x.dtype)
        return _pad_with_batched_values(x, pairs, table), 0
    if constant_values is not NoValue:
        kwargs["constant_values"] = constant_values
    for name, row in _VALUE_KWARGS.items():
        if name in kwargs:
            kwargs[name] = _per_axis_value(kwargs[name], nd, row)
    return np.pad(x, [(0, 0)] + pairs, mode, **kwargs), 0


# ---- insert / delete ----------------------------------------------------------------------------
def _axis_and_flat(x, axis):
    """(batch-first x, logical axis): flattened per example when ``axis`` is None."""
    if axis is None:
        return _flat(x), 0
    return x, wrap_axis(axis, x.ndim - 1)


@batch_rule(np.delete)
def delete_rule(arr, arr_bdim, obj, axis=None):
    _unbatched(obj, "np.delete's obj")
    x, ax = _axis_and_flat(move_bdim_to_front(arr, arr_bdim), axis)
    # np.delete on the positions themselves: NumPy's own index checks, the kept positions.
    keep = np.delete(np.arange(x.shape[ax + 1], like=innermost(x)), obj)
    return np.take(x, keep, axis=ax + 1), 0


def _fit(v, slot: tuple, n: int, like):
    """Broadcast a batch-first value to ``(n,) + slot`` as ``new[...] = v`` would (extra leading
    size-1 axes are dropped). An unbatched NumPy ``v`` first moves to ``like``'s backend."""
    if type(v) is np.ndarray and type(like) is not np.ndarray:
        v = np.asarray(v, like=like)
    while v.ndim - 1 > len(slot) and v.shape[1] == 1:
        v = np.reshape(v, v.shape[:1] + v.shape[2:])
    return np.broadcast_to(pad_to_rank(v, len(slot)), (n,) + slot)


def _insert_values(values, values_bdim, n: int, dtype, ndmin: int | None):
    """``values`` batch-first, cast to ``dtype``; logical rank padded to ``ndmin`` if given."""
    if values_bdim is not None:
        v = move_bdim_to_front(values, values_bdim).astype(dtype, copy=False)
    else:
        if hasattr(values, "ndim"):
            v = values.astype(dtype, copy=False)
        else:
            v = np.array(values, dtype=dtype)
        v = np.expand_dims(v, 0)
    if ndmin is not None:
        v = pad_to_rank(v, ndmin)
    return v


@batch_rule(np.insert)
def insert_rule(arr, arr_bdim, obj, values, values_bdim, axis=None):
    _unbatched(obj, "np.insert's obj")
    n = arr.shape[arr_bdim] if arr_bdim is not None else values.shape[values_bdim]
    x, ax = _axis_and_flat(ensure_bdim(arr, arr_bdim, n), axis)
    nd = x.ndim - 1
    N = x.shape[ax + 1]
    if isinstance(obj, slice):
        indices = np.arange(*obj.indices(N), dtype=np.intp)
    else:
        indices = np.array(obj)
        if indices.dtype == bool:
            if obj.ndim != 1:
                raise ValueError("boolean array argument obj to insert must be one dimensional")
            indices = np.flatnonzero(obj)
        elif indices.ndim > 1:
            raise ValueError("index array argument obj to insert must be one dimensional or "
                             "scalar")
    pax = ax + 1
    if indices.size == 1:
        index = indices.item()
        if index < -N or index > N:
            raise IndexError(f"index {obj} is out of bounds for axis {ax} with size {N}")
        if index < 0:
            index += N
        v = _insert_values(values, values_bdim, n, x.dtype, nd)
        if indices.ndim == 0:
            v = np.moveaxis(v, 1, pax)  # obj=i inserts like a[..., i:i+1, ...] = values
        slot = x.shape[1:pax] + (v.shape[pax],) + x.shape[pax + 1:]
        v = _fit(v, slot, n, innermost(x))
        before = x[(slice(None),) * pax + (slice(None, index),)]
        after = x[(slice(None),) * pax + (slice(index, None),)]
        return np.concatenate([before, v, after], axis=pax), 0
    if indices.size == 0 and not isinstance(obj, np.ndarray):
        indices = indices.astype(np.intp)
    indices[indices < 0] += N
    numnew = len(indices)
    order = indices.argsort(kind="mergesort")
    indices[order] += np.arange(numnew)
    old_mask = np.ones(N + numnew, dtype=bool)
    old_mask[indices] = False
    # Positions of the result in concatenate([x, values]) along the axis.
    perm = np.empty(N + numnew, dtype=np.intp)
    perm[old_mask] = np.arange(N)
    perm[indices] = N + np.arange(numnew)
    slot = x.shape[1:pax] + (numnew,) + x.shape[pax + 1:]
    v = _fit(_insert_values(values, values_bdim, n, x.dtype, None), slot, n, innermost(x))
    both = np.concatenate([x, v], axis=pax)
    return np.take(both, np.asarray(perm, like=innermost(x)), axis=pax), 0


__all__ = ["ndim_rule", "shape_rule", "size_rule"]
