"""Selection: take, take_along_axis, where, choose, select, compress, extract; the diagonals
and triangles (diag, diagflat, tril, triu); and piecewise, apply_along_axis, apply_over_axes.

- diag, diagflat, tril, triu are here: NumPy lists diag with take, choose, compress and select
  as an indexing-like operation (of a 2-d example it selects the diagonal), tril / triu select
  a triangle (``np.where`` with a triangular mask), and diagflat is diag of the flattened
  example. (``np.diagonal``, a view, is in ``views.py``; the ``*_indices_from`` helpers, which
  build index arrays, in ``indexing.py``.)
- piecewise, apply_along_axis and apply_over_axes call Python functions on batched selections:
  piecewise is np.select with functions (each function runs once on ``x[cond]``),
  apply_along_axis runs ``func1d`` on the 1-d slices, apply_over_axes ``func(a, axis)``. A
  function that cannot run on batched values sends the call to the per-example loop.

Data-dependent sizes (batched conditions) work when every example has the same count. Imports
the shared helpers ``like``, ``lift``, ``mask_to_indices`` and ``flat_front`` from
``indexing.py``.
"""

from __future__ import annotations

import functools
import math
import operator

import numpy as np

from ..config import config
from ..plumbing import innermost, scan_level, unwrap, wrap
from ..errors import unbatched_out_error
from ..plumbing import aligned_fast
from ..errors import BatchingError
from ..registry import batch_rule, decomposition, is_physical_type
from ..tensor import BatchedTensor, is_plain_array, new_batched
from ._helpers import (align_front, align_pointwise, clip_mode, ensure_bdim, flat_rows,
                       logical_rank, logical_shape, move_bdim_to_front, ndim_of, pad_to_rank,
                       physical_axis, require, wrap_axis)
from .indexing import flat_front, lift, mask_to_indices
from .setops import nonzero_rule


# ---- take, take_along_axis, where ---------------------------------------------------------------
def _along(a, a_bdim, axis):
    """``(a, a_bdim, axis)`` for take/compress: ``axis=None`` (and a 0-d example, which NumPy
    treats as 1-d here) means the flattened example."""
    if axis is None or logical_rank(a, a_bdim) == 0:
        if a_bdim is not None:
            a, a_bdim = flat_front(a, a_bdim), 0
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
        # NumPy's checks of out, in its order, before any index is read
        ashape, ishape = logical_shape(a, a_bdim), logical_shape(indices, indices_bdim)
        if axis is None:
            shape = ishape
        else:
            ax = wrap_axis(axis, len(ashape))
            shape = ashape[:ax] + ishape + ashape[ax + 1:]
        if shape != logical_shape(out, out_bdim):
            raise ValueError("output array does not match result of ndarray.take")
        # NumPy's own verdict on out's dtype, from a one-element take: NumPy 2.4 refuses a
        # cast from out's dtype to a's that is not 'safe', 2.5 casts (warning where the kind
        # changes)
        np.take(np.zeros(1, a.dtype), [0], out=np.zeros(1, out.dtype))
        if not getattr(getattr(innermost(out), "flags", None), "writeable", True):
            raise ValueError("WRITEBACKIFCOPY base is read-only")
        res, res_bdim = take_rule(a, a_bdim, indices, indices_bdim, axis, None, None, mode)
        np.copyto(move_bdim_to_front(out, out_bdim), move_bdim_to_front(res, res_bdim),
                  casting="unsafe")
        return out, out_bdim
    a, a_bdim, axis = _along(a, a_bdim, axis)
    if indices_bdim is None:
        pax = physical_axis(axis, a_bdim)
        if type(a) is not BatchedTensor and type(indices) is BatchedTensor:
            # np.take dispatches on `a` only: indices batched at an outer level need an `a`
            # that is a BatchedTensor there.
            a, pax = lift(a, indices), pax
        res = np.take(a, indices, axis=pax, mode=mode)
        if a_bdim is None or a_bdim < pax:
            return res, a_bdim
        return res, a_bdim + ndim_of(indices) - 1
    # Batched indices: every example gathers with its own indices (advanced indexing).
    mode = clip_mode(mode)  # None is "raise", as for NumPy
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
    bidx = np.reshape(np.arange(n, like=innermost(x)), (n,) + (1,) * ir)
    # (indices batched at an outer level than a: index a lifted there, so that it dispatches)
    res = lift(x, idx)[bidx, idx]  # (B, *index shape, *the other dims of the example)
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
        x = flat_rows(x) if arr_bdim is not None else np.ravel(x)
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
    if x is None and y is None:  # np.where(c) is np.asarray(c).nonzero()
        return nonzero_rule(condition, condition_bdim)
    if x is None or y is None:
        raise ValueError("either both or neither of x and y should be given")  # (NumPy's)
    vals, bdim = align_pointwise([condition, x, y], [condition_bdim, x_bdim, y_bdim])
    return np.where(*vals), bdim


# ---- choose, select, compress, extract ----------------------------------------------------------
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
    (idx,) = mask_to_indices(c, 0, c.shape[0], ("numpy.compress (or numpy.extract) with a "
                                                "batched condition: the condition",
                                                "np.place / np.putmask write with any counts"))
    return take_rule(a, a_bdim, idx.value, 0, axis)


@decomposition(np.extract)
def extract_decomposition(condition, arr):
    cond, flat = np.ravel(condition), np.ravel(arr)
    if type(cond) is BatchedTensor and cond.size == flat.size:
        # a selection by a batched mask: where its count differs per example, a ragged one
        # (``rules/ragged.py``: SciPy's distributions compute on np.extract(cond, x) and
        # np.place the results back)
        if type(flat) is not BatchedTensor:  # every example's copy of the plain values
            at = np.zeros_like(cond, dtype=np.intp) + np.arange(flat.size, like=flat)
            flat = np.take(flat, at)  # (a gather: any dtype, structured ones too)
        return flat[cond != 0]
    return np.compress(cond, flat)


# ---- allocation batched at outer levels (diag, piecewise) ---------------------------------------
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
    proto = next((innermost(r) for r in refs if hasattr(r, "shape")), None)
    z = np.zeros(tuple(n for _, n in levels) + tuple(shape), dtype=dtype,
                 **({} if proto is None else {"like": proto}))
    for lv, _ in levels:
        z = new_batched(z, 0, lv)
    return z


# ---- diagonals and triangles --------------------------------------------------------------------
def _diag_matrix(x, k: int):
    """``(B, n)`` -> ``(B, N, N)`` with each row on the k-th diagonal."""
    n_ex, n = x.shape[0], x.shape[1]
    size = n + abs(k)
    res = _zeros_physical((n_ex, size, size), x.dtype, [x])
    i = np.arange(n, like=innermost(x))
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
    return _diag_matrix(flat_front(v, v_bdim), operator.index(k)), 0


def _triangle(op, lower: bool):
    def rule(m, m_bdim, k=0):
        x = move_bdim_to_front(m, m_bdim)
        # NumPy: tri(*m.shape[-2:]): a 1-d example broadcasts to a square, 0-d raises.
        mask = np.tri(*x.shape[1:][-2:], k=k if lower else k - 1, dtype=bool, like=innermost(x))
        x = pad_to_rank(x, 2)
        zero = np.zeros(1, dtype=x.dtype, like=innermost(x))
        return (np.where(mask, x, zero) if lower else np.where(mask, zero, x)), 0

    rule.__name__ = f"{op.__name__}_rule"
    return batch_rule(op)(rule)


tril_rule = _triangle(np.tril, lower=True)
triu_rule = _triangle(np.triu, lower=False)


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
        if not (isinstance(c0, list) or is_plain_array(c0) or is_physical_type(type(c0))
                or (type(c0) is BatchedTensor and c0.ndim > 0)) and xnd != 0:
            condlist = [condlist]
    if type(condlist) is BatchedTensor:
        conds = condlist.astype(bool)
    else:
        # (another backend's condition stays there: like=)
        conds = [c.astype(bool) if type(c) is BatchedTensor else
                 np.asarray(c, dtype=bool, like=c if is_physical_type(type(c)) else None)
                 for c in condlist]
        conds = np.asarray(conds) if all(type(c) is np.ndarray for c in conds) \
            else np.stack(conds)
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
            ci = innermost(counts[:, i])
            varying |= bool(ci.size) and not bool(np.all(ci == ci.flat[0]))
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
