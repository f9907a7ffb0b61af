"""0-d semantics: a NumPy scalar per example versus a 0-d array per example.

Per example, most 0-d results are immutable NumPy scalars (ufuncs, reductions, ``x[i]``), and
an in-place operator on one rebinds the name instead of writing (``tensor.scalar_per_example``
tells them apart by the ``_array0d`` mark). The dispatcher keeps that distinction through
every call with the helpers here:

- ``ARRAY_0D``: the ops whose 0-d results are arrays (so ``+=`` on them writes), and the ops
  that write into their first argument;
- ``mark_array0d``: marks such a result;
- ``scalar_args`` / ``detach_from_scalars``: a result that shares memory with a scalar
  argument is copied (writing into it must not change the scalar);
- ``refuse_scalar_targets``: NumPy cannot write into a scalar, so neither can we;
- ``scalar_sqrt_power``: ``z ** 0.5`` of a NumPy float scalar is C's ``pow``.
"""

from __future__ import annotations

import operator
from enum import Enum
from typing import Any

import numpy as np

from .levels import memory_root
from .plumbing import innermost
from .tensor import (BatchedTensor, ndarray_astype, ndarray_fill, ndarray_view, new_batched,
                     scalar_per_example)

__all__ = ["Array0d", "ARRAY_0D", "scalar_args", "detach_from_scalars", "mark_array0d",
           "refuse_scalar_targets", "scalar_sqrt_power"]


class Array0d(Enum):
    """What an op in ``ARRAY_0D`` does with 0-d values."""

    ALWAYS = "a 0-d result is an array"
    ARRAY_IN = "an array in gives an array out, a scalar in a scalar"
    ELLIPSIS = "x[0, ...] and s[...] give a 0-d array; x[0] and a[()] a scalar"
    WRITES = "writes into its first argument: NumPy refuses a scalar target"
    WRITES_OR_NOTHING = "writes into its first argument: into a converted copy of a scalar"
    KEEPDIMS = "a 0-d result is an array with keepdims=True, else a scalar"


ARRAY_0D: dict[Any, Array0d] = {op: Array0d.ALWAYS for op in (
    np.array, np.asarray, np.asanyarray, np.ascontiguousarray, np.asfortranarray,
    np.asarray_chkfinite, np.require, np.copy, np.zeros_like, np.ones_like, np.empty_like,
    np.full_like, np.where, np.select, np.piecewise, np.i0, np.tensordot, np.cov,
    np.broadcast_to, np.roll, np.cross, np.fft.fftn, np.fft.ifftn, np.full, np.isin, np.pad,
    np.real_if_close, np.resize, np.tile, np.unique, np.unique_inverse, np.unique_all,
    np.lib.stride_tricks.sliding_window_view, np.broadcast_arrays)}
ARRAY_0D.update({op: Array0d.ARRAY_IN for op in (
    np.reshape, np.squeeze, np.transpose, np.swapaxes, np.moveaxis, np.rollaxis, np.real,
    np.imag, ndarray_astype, ndarray_view)})
ARRAY_0D[operator.getitem] = Array0d.ELLIPSIS
# The order statistics return np.asarray(...) of a 0-d result when keepdims=True; the position
# of keepdims among each one's positional parameters:
KEEPDIMS_AT = {np.median: 4, np.nanmedian: 4, np.quantile: 6, np.percentile: 6,
               np.nanquantile: 6, np.nanpercentile: 6}
ARRAY_0D.update({op: Array0d.KEEPDIMS for op in KEEPDIMS_AT})
# Functions that write into their first argument: NumPy refuses a scalar target, or (np.put,
# ndarray.fill) writes into a converted copy, so the scalar keeps its value.
ARRAY_0D.update({np.copyto: Array0d.WRITES, np.place: Array0d.WRITES,
                 np.putmask: Array0d.WRITES, np.put: Array0d.WRITES_OR_NOTHING,
                 ndarray_fill: Array0d.WRITES_OR_NOTHING})


def scalar_args(args: tuple) -> list:
    """The arguments (or items of a list/tuple argument) that are NumPy scalars per example."""
    found = []
    for a in args:
        t = type(a)
        if t is BatchedTensor:
            if scalar_per_example(a):
                found.append(a)
        elif t is list or t is tuple:
            found.extend(e for e in a if type(e) is BatchedTensor and scalar_per_example(e))
    return found


#: Ops whose results are read-only views in NumPy, also of a scalar.
READ_ONLY_VIEWS = {np.broadcast_to, np.lib.stride_tricks.sliding_window_view}


def detach_from_scalars(res: Any, scalars: list, op: Any = None) -> Any:
    """Per example these arguments are NumPy scalars, which share storage with nothing: what
    NumPy builds from one (``np.atleast_1d(z)``, ``z[None]``, ``np.asarray(z)``) is a new,
    writeable array. A rule may return a view of the batch of scalars instead (read-only where
    the scalars are examples of a read-only input); an array result that shares one is copied,
    so that writing into it cannot change the scalar, and it is writeable. (A scalar result
    cannot be written into, so it may share; so may the read-only view ``op`` makes in NumPy
    too, which also keeps NumPy's layout: ``np.broadcast_to(z, (2,)).ravel()`` must copy, as
    it does in NumPy.)"""
    if type(res) is BatchedTensor:
        a = innermost(res._value)
        if op in READ_ONLY_VIEWS and type(a) is np.ndarray and not a.flags.writeable:
            return res  # np.broadcast_to(z, ...): nothing writes through it
        if not scalar_per_example(res) and all(res is not x for x in scalars):
            for x in scalars:
                b = innermost(x._value)
                if type(a) is not np.ndarray or type(b) is not np.ndarray \
                        or np.may_share_memory(a, b) \
                        or (not a.size and memory_root(a) is memory_root(b)):
                    # a view of the copy: NumPy's result views a temporary array made
                    # from the scalar (or owns one), which ``x.base`` cannot tell apart;
                    # an empty view shares no memory by NumPy's test: its owner tells
                    copy = new_batched(res._value.copy()[...], res._bdim, res._level)
                    if getattr(res, "_array0d", False):
                        copy._array0d = True
                    return copy
        return res
    if type(res) in (tuple, list):
        return type(res)(detach_from_scalars(r, scalars, op) for r in res)
    return res


def mark_array0d(op, args: tuple, res: Any, kwargs: dict | None = None) -> Any:
    """Mark ``res`` (or each of its outputs) a 0-d array per example where ``op`` (in
    ``ARRAY_0D``) makes one."""
    if type(res) is not BatchedTensor:
        if isinstance(res, tuple):  # np.unique(z, return_inverse=True): the inverse is 0-d
            for r in res:
                mark_array0d(op, args, r, kwargs)
        return res
    if res._value.ndim != 1:
        return res
    how = ARRAY_0D[op]
    if how is Array0d.KEEPDIMS:
        at = KEEPDIMS_AT[op]
        keep = kwargs.get("keepdims", False) if kwargs else False
        if len(args) > at:
            keep = args[at]
        if not keep:
            return res
    if how is Array0d.ELLIPSIS:
        key = args[1]
        if not (key is Ellipsis or (type(key) is tuple and any(k is Ellipsis for k in key))):
            return res
    x = args[0] if args else None
    if how is Array0d.ARRAY_IN:
        if type(x) is BatchedTensor:
            if scalar_per_example(x):
                return res  # a scalar in, a scalar out
        elif not (hasattr(x, "ndim") and not isinstance(x, np.generic)):
            return res
    if res is x:
        return res  # np.asarray(scalar) handed back as it is: left a scalar (it rebinds)
    res._array0d = True  # (a view of a scalar's storage is copied by detach_from_scalars)
    return res


def refuse_scalar_targets(out: Any, what: str) -> None:
    """NumPy cannot write into a NumPy scalar; writing into its physical batch would change
    values the per-example code cannot reach (a vmap input, an earlier result)."""
    for t in out if type(out) is tuple else (out,):
        if type(t) is BatchedTensor and scalar_per_example(t):
            err: Any = TypeError(  # (with the attributes of a refused conversion)
                f"{what}: the target is a NumPy scalar in each example (a 0-d result of a "
                f"ufunc, a reduction or x[i], or a 0-d input), and NumPy cannot write into a "
                f"scalar ({t.dtype} does not support item assignment / is not an ArrayType). "
                f"Rebind instead (z = z + 1), or make it an array first: z = np.array(z, like=z)"
            )
            # Code that checks ``type(x)`` first copies a NumPy scalar before writing (array
            # API helpers such as ``at(x)[i].set(v)``), which a BatchedTensor cannot pass: the
            # per-example rerun gives the loop's result, or NumPy's own TypeError
            err.batchtensor_conversion = True
            err.batchtensor_level = t._level
            err.batchtensor_what = f"{what} into a NumPy scalar per example"
            raise err


def scalar_sqrt_power(x: BatchedTensor, res: BatchedTensor) -> BatchedTensor:
    """A NumPy float scalar's ``z ** 0.5`` is C's pow: ``(-inf) ** 0.5`` is inf and
    ``(-0.0) ** 0.5`` is +0.0, where np.power (which takes sqrt for 0.5) gives nan and -0.0.
    ``res`` is np.power's result; the two cases are fixed in it."""
    fixed = np.where(x._value == -np.inf, np.inf, res._value) + 0.0  # + 0.0: -0.0 -> +0.0
    return new_batched(fixed.astype(res._value.dtype, copy=False), res._bdim, res._level)
