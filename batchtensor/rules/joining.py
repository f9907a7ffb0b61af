"""Joining and splitting: concatenate, stack, hstack, vstack, dstack, column_stack, block,
append, split, array_split, hsplit, vsplit, dsplit, unstack.

Joining copies anyway, so every array goes batch-first and unbatched ones are broadcast (views);
the result lands batch-first. A sequence argument given as one batched array (``np.stack(x)``)
is not a list of arrays the rule can see: the dispatcher sends that call to the loop.
"""

from __future__ import annotations

import math

import numpy as np

from ..plumbing import unwrap, wrap
from ..registry import DIRECT, batch_rule
from ..tensor import BatchedTensor, new_batched
from ._helpers import (as_array, batch_size_of, ensure_bdim, logical_rank, move_bdim_to_front,
                       require, shared_value, wrap_axis)
from .views import atleast_front


def _batched(arrays, bdims):
    """A batched value among ``arrays``: the backend Python values are made arrays on."""
    return next(a for a, b in zip(arrays, bdims) if b is not None)


def _all_front(arrays, bdims):
    """Every array batch-first; unbatched ones broadcast (views), since joining copies anyway."""
    n = batch_size_of(arrays, bdims)
    like = _batched(arrays, bdims)
    return [ensure_bdim(a, b, n, like) for a, b in zip(arrays, bdims)], n


def _all_front_atleast(arrays, bdims, nd: int, atleast):
    """Batch-first, each example raised to rank ``nd`` the way ``atleast`` (np.atleast_nd) does."""
    n = batch_size_of(arrays, bdims)
    like = _batched(arrays, bdims)
    return [atleast_front(a, b, nd) if b is not None
            else ensure_bdim(atleast(as_array(a, like)), None, n)
            for a, b in zip(arrays, bdims)]


@batch_rule(np.concatenate)
def concatenate_rule(arrays, arrays_bdims, /, axis=0, out=None, *, dtype=None,
                     casting="same_kind"):
    require(out is None, "np.concatenate with out=")
    if not len(arrays):
        raise ValueError("need at least one array to concatenate")
    xs, n = _all_front(arrays, arrays_bdims)
    kw = {"dtype": dtype, "casting": casting}
    if axis is None:
        flat = [np.reshape(x, (n, math.prod(x.shape[1:]))) for x in xs]
        return np.concatenate(flat, axis=1, **kw), 0
    ranks = {x.ndim - 1 for x in xs}
    if 0 in ranks:
        raise ValueError("zero-dimensional arrays cannot be concatenated")
    nd = xs[0].ndim - 1
    ax = wrap_axis(axis, nd) + 1
    if all(type(x) is np.ndarray for x in xs):
        # each example's result in a block of its own, in C order, as the loop makes it
        # (NumPy's own output follows the inputs' layout: batch-last inputs would interleave
        # the examples, which as_strided of the result could not view as the loop's)
        shape = list(xs[0].shape)
        shape[ax] = sum(x.shape[ax] for x in xs)
        if any(x.shape[:ax] + x.shape[ax + 1:] != xs[0].shape[:ax] + xs[0].shape[ax + 1:]
               for x in xs):
            return np.concatenate(xs, axis=ax, **kw), 0  # NumPy's error
        try:
            to = dtype if dtype is not None else np.result_type(*xs)
        except TypeError:  # (structured dtypes that do not promote: NumPy's error below)
            return np.concatenate(xs, axis=ax, **kw), 0
        out = np.empty(shape, dtype=to)
        return np.concatenate(xs, axis=ax, out=out, casting=casting), 0
    return np.concatenate(xs, axis=ax, **kw), 0


def _stack_fast(level, args, kwargs):
    """np.stack of examples that are all batch-first NumPy arrays of one level and shape."""
    if len(args) != 1 or (kwargs and set(kwargs) - {"axis"}):
        return NotImplemented
    arrays = args[0]
    if type(arrays) is not list and type(arrays) is not tuple or not arrays:
        return NotImplemented
    first = arrays[0]
    if type(first) is not BatchedTensor:
        return NotImplemented
    shape = first._value.shape
    axis = kwargs.get("axis", 0) if kwargs else 0
    nd = len(shape) - 1
    if type(axis) is not int or not -nd - 1 <= axis <= nd:
        return NotImplemented
    ax = axis % (nd + 1) + 1
    new = shape[:ax] + (1,) + shape[ax:]
    vals = []
    for a in arrays:
        if type(a) is not BatchedTensor or a._level is not level or a._bdim:
            return NotImplemented
        v = a._value
        if type(v) is not np.ndarray or v.shape != shape:
            return NotImplemented
        vals.append(v.reshape(new))  # a view with the new axis, where concatenate joins
    return new_batched(np.concatenate(vals, axis=ax), 0, level)


def _stack_level(args, kwargs):
    """The level of ``np.stack([x, ...])`` whose first value is batched at a live level, for
    ``BatchedTensor.__array_function__`` to call the fast hook with (``registry.DIRECT``): the
    hook refuses a call where any other value is not of that level, so the dispatcher's scan
    of the arguments is not needed."""
    if args:
        arrays = args[0]
        if (type(arrays) is list or type(arrays) is tuple) and arrays:
            first = arrays[0]
            if type(first) is BatchedTensor and first._level.alive:
                return first._level
    return None


DIRECT[np.stack] = _stack_level


@batch_rule(np.stack, fast=_stack_fast)
def stack_rule(arrays, arrays_bdims, axis=0, out=None, *, dtype=None, casting="same_kind"):
    require(out is None, "np.stack with out=")
    if not len(arrays):
        raise ValueError("need at least one array to stack")
    xs, n = _all_front(arrays, arrays_bdims)
    shapes = {x.shape[1:] for x in xs}
    if len(shapes) != 1:
        raise ValueError("all input arrays must have the same shape")
    nd = xs[0].ndim - 1
    ax = wrap_axis(axis, nd + 1) + 1
    if all(type(x) is np.ndarray for x in xs):
        # what np.stack does, minus its Python overhead: a size-1 axis (a view), concatenate
        shape = xs[0].shape
        new = shape[:ax] + (1,) + shape[ax:]
        return np.concatenate([x.reshape(new) for x in xs], axis=ax, dtype=dtype,
                              casting=casting), 0
    return np.stack(xs, axis=ax, dtype=dtype, casting=casting), 0


@batch_rule(np.vstack)
def vstack_rule(tup, tup_bdims, *, dtype=None, casting="same_kind"):
    xs = _all_front_atleast(tup, tup_bdims, 2, np.atleast_2d)
    return np.concatenate(xs, axis=1, dtype=dtype, casting=casting), 0


@batch_rule(np.hstack)
def hstack_rule(tup, tup_bdims, *, dtype=None, casting="same_kind"):
    xs = _all_front_atleast(tup, tup_bdims, 1, np.atleast_1d)
    axis = 1 if xs[0].ndim == 2 else 2  # 1-d examples join along their only axis
    return np.concatenate(xs, axis=axis, dtype=dtype, casting=casting), 0


@batch_rule(np.dstack)
def dstack_rule(tup, tup_bdims):
    return np.concatenate(_all_front_atleast(tup, tup_bdims, 3, np.atleast_3d), axis=3), 0


def _as_column(a, b, n):
    """One argument of np.column_stack, batch-first: 0-d and 1-d examples become columns."""
    x = ensure_bdim(a, b, n)
    r = x.ndim - 1
    if r == 0:
        return np.expand_dims(x, (1, 2))
    if r == 1:
        return np.expand_dims(x, 2)
    return x


@batch_rule(np.column_stack)
def column_stack_rule(tup, tup_bdims):
    n = batch_size_of(tup, tup_bdims)
    return np.concatenate([_as_column(a, b, n) for a, b in zip(tup, tup_bdims)], axis=2), 0


@batch_rule(np.append)
def append_rule(arr, arr_bdim, values, values_bdim, axis=None):
    # np.append is concatenate((ravel(arr), ravel(values))) for axis=None, which is
    # concatenate's own axis=None.
    return concatenate_rule([arr, values], [arr_bdim, values_bdim], axis=axis)


# ---- block --------------------------------------------------------------------------------------
def _block_leaves(obj, level, out: list) -> None:
    if type(obj) is list:
        for x in obj:
            _block_leaves(x, level, out)
    elif type(obj) is tuple:
        raise TypeError("np.block: a tuple among the blocks. Only lists can be used to arrange "
                        "blocks, and np.block does not allow implicit conversion from tuple to "
                        "ndarray.")
    else:
        out.append(unwrap(obj, level))


def _block_depth(obj) -> int:
    depth = 0
    while type(obj) is list and obj:
        obj = obj[0]
        depth += 1
    return depth


def _block_rebuild(obj, it):
    if type(obj) is list:
        return [_block_rebuild(x, it) for x in obj]
    return next(it)


@batch_rule(np.block, raw=True)
def block_rule(level, args, kwargs):
    """np.block on batch-first blocks raised to the result's logical rank: NumPy joins along
    the last ``depth`` axes, all logical, and checks the nesting itself."""
    (arrays,) = args if args else (kwargs["arrays"],)
    pairs: list = []
    _block_leaves(arrays, level, pairs)
    rank = max([_block_depth(arrays)] + [logical_rank(v, b) if b is not None else np.ndim(v)
                                         for v, b in pairs])
    n = batch_size_of([v for v, _ in pairs], [b for _, b in pairs])
    like = _batched([v for v, _ in pairs], [b for _, b in pairs])
    leaves = []
    for v, b in pairs:
        if b is None:
            v = as_array(v, like)
        x = ensure_bdim(v, b, n)
        missing = rank - (x.ndim - 1)
        if missing > 0:
            x = np.expand_dims(x, tuple(range(1, 1 + missing)))
        leaves.append(x)
    res = np.block(_block_rebuild(arrays, iter(leaves)))
    return wrap(res, 0, level)


# ---- splitting ----------------------------------------------------------------------------------
# Batched split points are taken when every example holds the same ones (shared_value): the
# pieces' shapes depend on them.
def _split(x, bdim, points, points_bdim, axis, fn=np.split):
    points = shared_value(points, points_bdim, f"numpy.{fn.__name__}: indices_or_sections")
    if bdim is None:
        return [(p, None) for p in fn(x, points, axis=axis)]
    x = move_bdim_to_front(x, bdim)
    nd = x.ndim - 1
    parts = fn(x, points, axis=wrap_axis(axis, nd) + 1)
    return [(p, 0) for p in parts]


@batch_rule(np.split)
def split_rule(ary, ary_bdim, indices_or_sections, indices_or_sections_bdim, axis=0):
    return _split(ary, ary_bdim, indices_or_sections, indices_or_sections_bdim, axis)


@batch_rule(np.array_split)
def array_split_rule(ary, ary_bdim, indices_or_sections, indices_or_sections_bdim, axis=0):
    return _split(ary, ary_bdim, indices_or_sections, indices_or_sections_bdim, axis,
                  np.array_split)


def _directional_split(fn, ary, ary_bdim, points, points_bdim, min_nd: int, axis):
    nd = ary.ndim - (ary_bdim is not None)
    if nd < min_nd:
        raise ValueError(f"{fn.__name__} only works on arrays of {min_nd} or more dimensions")
    return _split(ary, ary_bdim, points, points_bdim, axis(nd), np.split)


@batch_rule(np.hsplit)
def hsplit_rule(ary, ary_bdim, indices_or_sections, indices_or_sections_bdim):
    return _directional_split(np.hsplit, ary, ary_bdim, indices_or_sections,
                              indices_or_sections_bdim, 1, lambda nd: 1 if nd > 1 else 0)


@batch_rule(np.vsplit)
def vsplit_rule(ary, ary_bdim, indices_or_sections, indices_or_sections_bdim):
    return _directional_split(np.vsplit, ary, ary_bdim, indices_or_sections,
                              indices_or_sections_bdim, 2, lambda nd: 0)


@batch_rule(np.dsplit)
def dsplit_rule(ary, ary_bdim, indices_or_sections, indices_or_sections_bdim):
    return _directional_split(np.dsplit, ary, ary_bdim, indices_or_sections,
                              indices_or_sections_bdim, 3, lambda nd: 2)


@batch_rule(np.unstack)
def unstack_rule(x, x_bdim, /, *, axis=0):
    nd = x.ndim - 1
    if nd == 0:
        raise ValueError("Input array must be at least 1-d.")
    parts = np.unstack(move_bdim_to_front(x, x_bdim), axis=wrap_axis(axis, nd) + 1)
    return tuple((p, 0) for p in parts)
