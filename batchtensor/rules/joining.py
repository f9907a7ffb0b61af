"""Joining and splitting: concatenate, stack, split."""

from __future__ import annotations

import math

import numpy as np

from ..registry import batch_rule
from ._helpers import (batch_size_of, ensure_bdim, logical_rank, move_bdim_to_front, require,
                       wrap_axis)


def _all_front(arrays, bdims):
    """Every array batch-first; unbatched ones broadcast (views), since joining copies anyway."""
    n = batch_size_of(arrays, bdims)
    return [ensure_bdim(a, b, n) for a, b in zip(arrays, bdims)], n


@batch_rule(np.concatenate)
def concatenate_rule(arrays, arrays_bdims, axis=0, out=None, *, dtype=None, casting="same_kind"):
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
    return np.concatenate(xs, axis=wrap_axis(axis, nd) + 1, **kw), 0


@batch_rule(np.stack)
def stack_rule(arrays, arrays_bdims, axis=0, out=None, *, dtype=None, casting="same_kind"):
    require(out is None, "np.stack with out=")
    if not len(arrays):
        raise ValueError("need at least one array to stack")
    xs, n = _all_front(arrays, arrays_bdims)
    shapes = {x.shape[1:] for x in xs}
    if len(shapes) != 1:
        raise ValueError("all input arrays must have the same shape")
    nd = xs[0].ndim - 1
    return np.stack(xs, axis=wrap_axis(axis, nd + 1) + 1, dtype=dtype, casting=casting), 0


@batch_rule(np.split)
def split_rule(ary, ary_bdim, indices_or_sections, axis=0):
    x = move_bdim_to_front(ary, ary_bdim)
    nd = logical_rank(x, 0)
    parts = np.split(x, indices_or_sections, axis=wrap_axis(axis, nd) + 1)
    return [(p, 0) for p in parts]
