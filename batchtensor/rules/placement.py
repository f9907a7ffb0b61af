"""Placement: writes into an array by position or by mask: copyto, ``ndarray.fill``, put,
put_along_axis, place, putmask, fill_diagonal, and their helpers.

``x[key] = v`` itself (and ``x[mask] = v``) is in ``indexing.py``, whose shared helpers
``like``, ``drop_leading_ones`` and ``flat_front`` this module imports.

In-place ops write per example into a batched target; a target that is not batched at the
level (or at an outer level) of the values written raises a SharedWriteError naming both,
on which ``vmap`` reruns the function per example unless the target is the caller's shared
state (an unmapped argument, a closure or global array): that keeps the clear error.
A batched mask may select a different count per example (place, putmask, copyto's where=).
"""

from __future__ import annotations

import math

import numpy as np

from ..plumbing import innermost, scan_level
from ..errors import SharedWriteError
from ..registry import batch_rule
from ..tensor import BatchedTensor, ndarray_fill
from ._helpers import (align_front, as_array, clip_mode, logical_shape, move_bdim_to_front,
                       ndim_of, pad_to_rank, read_only, require, wrap_axis)
from .indexing import drop_leading_ones, flat_front, in_c_order
from .views import example_strides, is_contiguous


# ---- copyto, fill -------------------------------------------------------------------------------
@batch_rule(np.copyto)
def copyto_rule(dst, dst_bdim, src, src_bdim, casting="same_kind", where=True,
                where_bdim=None):
    if dst_bdim is None:
        raise _shared_target("numpy.copyto", "dst", src=src_bdim, where=where_bdim)
    d = move_bdim_to_front(dst, dst_bdim)
    nd = d.ndim - 1
    if nd == 0 and read_only(dst):
        # NumPy copies an n-d array onto itself without a look at the flags, but refuses a
        # read-only 0-d destination whatever the source: the batch of 0-d examples is 1-d
        raise ValueError("assignment destination is read-only")
    s, w = align_front([src, where], [src_bdim, where_bdim], nd)
    if src_bdim is not None:
        s = drop_leading_ones(s, nd)  # NumPy's assignment drops them too
    np.copyto(d, s, casting=casting, where=w)
    return None, None


@batch_rule(ndarray_fill)
def fill_rule(x, x_bdim, value, value_bdim):
    if x_bdim is None:
        raise SharedWriteError(
            "ndarray.fill: cannot fill x, which is not batched at this vmap level (shared by "
            "every example), with a value that differs per example. Create x batched "
            "(np.empty_like(v)) or use np.full_like.")
    _check_outer("ndarray.fill", x, value)
    if value_bdim is None:
        ndarray_fill(x, value)
        return None, None
    if x_bdim is None:
        raise SharedWriteError(
            "ndarray.fill: cannot fill the array (not batched at this vmap level, so shared by "
            "every example) with a value that differs per example. Create the array batched: "
            "np.full_like(value, value, shape=...).")
    v = move_bdim_to_front(value, value_bdim)
    if v.ndim != 1:
        # NumPy's own error (its type depends on the dtypes), or a value of one element, which
        # NumPy takes as that element
        ndarray_fill(np.zeros(1, dtype=x.dtype), _example(value, value_bdim))
        v = flat_front(v, 0)[:, 0]
    target = move_bdim_to_front(x, x_bdim)
    target[...] = pad_to_rank(v, target.ndim - 1)
    return None, None


# ---- helpers ------------------------------------------------------------------------------------
def _example(x, bdim=None):
    """Zeros standing for one example of ``x`` (NumPy, for a dry run that lets NumPy check the
    arguments and raise its own error); Python scalars and lists as they are."""
    if type(x) is BatchedTensor or (hasattr(x, "shape") and hasattr(x, "dtype")):
        return np.zeros(logical_shape(x, bdim), dtype=x.dtype)
    return x


def _target_example(x, bdim):
    """``_example`` of a target written in place: as writeable as the batch, and C contiguous
    exactly where the loop's example is (``views.example_strides``), so that NumPy's dry run
    raises its read-only error first, as it does for one example (also where nothing would be
    written, and for ``put_along_axis(axis=None)``, which writes through ``np.array(a.flat)``:
    a read-only copy of an example that is not C contiguous)."""
    ex = _example(x, bdim)
    # (an unbatched target: the dry run comes before the shared-target error)
    strides = example_strides(x, bdim) if bdim is not None else getattr(x, "strides", None)
    # (a batch of no example has no strides to read an example's layout from: the loop's
    # fresh examples are C contiguous)
    if strides is not None and innermost(x).size \
            and not is_contiguous(ex.shape, strides, ex.itemsize, False):
        ex = np.zeros(ex.shape + (2,), ex.dtype)[..., 0]
    if read_only(x):
        ex.flags.writeable = False
    return ex


def _any(x) -> bool:
    """Whether any element of ``x`` is true, over every example at every vmap level."""
    return bool(np.any(innermost(x)))


def _is_scalar(x) -> bool:
    return type(x) is not BatchedTensor and ndim_of(x) == 0


def _as_intp(idx):
    """Integer indices as intp (booleans become 0/1, never a mask)."""
    return idx if idx.dtype == np.intp else idx.astype(np.intp)


def _cycle(vflat, k: int):
    """``(B|1, m)`` values repeated along axis 1 to length ``k`` (NumPy's flat assignment)."""
    m = vflat.shape[1]
    if m == k:
        return vflat
    return np.take(vflat, np.arange(k, like=innermost(vflat)) % m, axis=1)


def _check_flat_bounds(idx, size: int) -> None:
    base = innermost(idx)  # every example at every level
    bad = (base < -size) | (base >= size)
    if np.any(bad):
        # (the index is read on the host for NumPy's message only: not from another backend)
        which = f" {int(base[bad][0])}" if type(base) is np.ndarray else ""
        raise IndexError(f"index{which} is out of bounds for axis 0 with size {size}")


def _check_outer(name: str, target, *others) -> None:
    """A write into a physical target that is a plain array, of values batched at an outer
    level: every example of that level would write into the same array."""
    outer = scan_level(others)
    if type(target) is not BatchedTensor and outer is not None:
        e = SharedWriteError(
            f"{name}: the array written into is not batched at an outer vmap level at which "
            f"the values or indices are batched, so the examples of that level would all write "
            f"into it. Create it from a batched value of that level (np.zeros_like(x), "
            f"x.copy()).", level=outer)
        e.targets = (target,)
        raise e


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
    target[(np.reshape(np.arange(n, like=innermost(target)), (n, 1)),) + coords] = vals


def _shared_target(name: str, target: str, **others) -> SharedWriteError:
    batched = [k for k, b in others.items() if b is not None]
    what = " and ".join(batched) or "an argument"
    return SharedWriteError(
        f"{name}: cannot write into `{target}`, which is not batched at this vmap level (shared "
        f"by every example), while `{what}` differ{'s' if len(batched) == 1 else ''} per example. "
        f"Create `{target}` from a batched value (np.zeros_like(x), x.copy()) so that every "
        f"example has its own, or compute the result without writing (np.where, np.select)."
    )


# ---- in-place writes ----------------------------------------------------------------------------
@batch_rule(np.put)
def put_rule(a, a_bdim, ind, ind_bdim, v, v_bdim, mode="raise"):
    np.put(_target_example(a, a_bdim), _example(ind, ind_bdim), _example(v, v_bdim), mode=mode)
    if a_bdim is None:  # (after NumPy's own argument errors, which the loop meets first)
        raise _shared_target("numpy.put", "a", ind=ind_bdim, v=v_bdim)
    mode = clip_mode(mode)  # None is "raise", as for NumPy
    target = move_bdim_to_front(a, a_bdim)
    size = math.prod(target.shape[1:])
    idx = _as_intp(flat_front(ind, ind_bdim))
    k = idx.shape[1]
    if _is_scalar(v) and v_bdim is None:
        vals = v  # a Python scalar stays one (NEP 50)
    else:
        vflat = flat_front(as_array(v, target), v_bdim)  # (a list: on target's backend)
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
    return pad_to_rank(drop_leading_ones(move_bdim_to_front(v, bdim), rank), rank)


@batch_rule(np.put_along_axis)
def put_along_axis_rule(arr, arr_bdim, indices, indices_bdim, values, values_bdim, axis):
    np.put_along_axis(_target_example(arr, arr_bdim), _example(indices, indices_bdim),
                      _example(values, values_bdim), axis)
    if arr_bdim is None:  # (after NumPy's own argument errors, which the loop meets first)
        raise _shared_target("numpy.put_along_axis", "arr", indices=indices_bdim,
                             values=values_bdim)
    target = move_bdim_to_front(arr, arr_bdim)
    if axis is None:  # arr.flat[indices] = values (broadcast, not repeated)
        idx = _as_intp(flat_front(indices, indices_bdim))
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
    np.put_along_axis(target, in_c_order(i), in_c_order(_value_front(values, values_bdim, nd)),
                      ax + 1)
    return None, None


def _mask_front(mask, bdim, lshape):
    """A mask of the same size as the target, batch first and in the target's shape."""
    m = flat_front(mask, bdim)
    m = m if m.dtype == bool else m.astype(bool)
    return m, np.reshape(m, (m.shape[0],) + tuple(lshape))


@batch_rule(np.place)
def place_rule(arr, arr_bdim, mask, mask_bdim, vals, vals_bdim):
    np.place(_target_example(arr, arr_bdim), _example(mask, mask_bdim),
             _example(vals, vals_bdim))
    if arr_bdim is None:  # (after NumPy's own argument errors, which the loop meets first)
        raise _shared_target("numpy.place", "arr", mask=mask_bdim, vals=vals_bdim)
    target = move_bdim_to_front(arr, arr_bdim)
    m, where = _mask_front(mask, mask_bdim, target.shape[1:])
    if _is_scalar(vals) and vals_bdim is None:
        np.copyto(target, vals, where=where)
        return None, None
    v, t = innermost(vals), innermost(target)
    require(type(v) is not np.ndarray or type(t) is not np.ndarray
            or not np.may_share_memory(v, t),
            "np.place with vals in arr's memory: NumPy reads vals as it writes")
    vflat = flat_front(as_array(vals, target), vals_bdim)
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
    np.putmask(_target_example(a, a_bdim), _example(mask, mask_bdim),
               _example(values, values_bdim))
    if a_bdim is None:  # (after NumPy's own argument errors, which the loop meets first)
        raise _shared_target("numpy.putmask", "a", mask=mask_bdim, values=values_bdim)
    target = move_bdim_to_front(a, a_bdim)
    lshape = tuple(target.shape[1:])
    _, where = _mask_front(mask, mask_bdim, lshape)
    if _is_scalar(values) and values_bdim is None:
        np.copyto(target, values, casting="unsafe", where=where)  # putmask casts like setitem
        return None, None
    vflat = flat_front(as_array(values, target), values_bdim)
    if not vflat.shape[1]:
        return None, None  # NumPy: nothing to put
    # Position n takes values.flat[n % len(values)].
    picked = _cycle(vflat, math.prod(lshape))
    np.copyto(target, np.reshape(picked, (picked.shape[0],) + lshape), casting="unsafe",
              where=where)
    return None, None


@batch_rule(np.fill_diagonal)
def fill_diagonal_rule(a, a_bdim, val, val_bdim, wrap=False):
    np.fill_diagonal(_target_example(a, a_bdim), _example(val, val_bdim), wrap)
    if a_bdim is None:  # (after NumPy's own argument errors, which the loop meets first)
        raise _shared_target("numpy.fill_diagonal", "a", val=val_bdim)
    target = move_bdim_to_front(a, a_bdim)
    lshape = tuple(target.shape[1:])
    size = math.prod(lshape)
    if len(lshape) == 2:
        step = lshape[1] + 1
        end = None if wrap else lshape[1] * lshape[1]
    else:
        step = 1 + sum(math.prod(lshape[:i + 1]) for i in range(len(lshape) - 1))
        end = None
    pos = np.arange(size, like=innermost(target))[:end:step]
    k = pos.shape[0]
    if not k:
        return None, None
    if _is_scalar(val) and val_bdim is None:
        vals = val
    else:
        vflat = flat_front(as_array(val, target), val_bdim)
        if not vflat.shape[1]:
            return None, None
        vals = _cycle(vflat, k)
    _check_outer("numpy.fill_diagonal", target, vals)
    target[(slice(None),) + tuple(np.unravel_index(pos, lshape))] = vals
    return None, None
