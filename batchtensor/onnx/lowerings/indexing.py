"""Indexing: ``x[key]`` (basic: Slice/Squeeze/Unsqueeze; advanced: Gather/GatherND laid out by
NumPy's rules), take, take_along_axis, and the writes ``x[key] = v``, put_along_axis, copyto,
fill (functional: a new graph value for the written array).

A write scatters into the flat positions the same key selects from ``arange(x.size)`` shaped
like ``x``, so every key ``getitem`` lowers also works for writes. Boolean masks that depend on
the inputs select a data-dependent number of elements and are refused (masked writes through
``np.copyto(..., where=mask)`` are fine).
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from ...tensor import ndarray_fill
from ..recorder import TArray, lowering
from ..symdim import SymDim
from ._common import BOOL, INT64, INT64_MAX, INT64_MIN, along_axis, axes_of, dims_of, ndim_of, refuse, \
    sub_record

__all__: list = []


def _normalize_key(key, nd: int) -> list:
    """``[(kind, value)]`` with kinds new / slice / int / arr; Ellipsis expanded, constant
    boolean masks turned into integer arrays, trailing axes made explicit."""
    key = key if type(key) is tuple else (key,)
    ents: list[tuple[str, Any]] = []
    for k in key:
        if k is None:
            ents.append(("new", None))
        elif k is Ellipsis:
            ents.append(("ell", None))
        elif type(k) is slice:
            ents.append(("slice", k))
        elif isinstance(k, (bool, np.bool_)):
            raise refuse("indexing with a boolean scalar")
        elif isinstance(k, (int, np.integer)):
            ents.append(("int", int(k) if type(k) is not SymDim else k))
        else:
            if isinstance(k, (list, tuple)):
                k = np.asarray(k)
            if k.dtype == BOOL:
                if type(k) is TArray and k.name is not None:
                    raise refuse("boolean-mask indexing with a mask that depends on the inputs "
                                 "(the number of selected elements depends on the data; use "
                                 "np.where(mask, x, fill) or reductions with where=)")
                mask = k.v if type(k) is TArray else k
                for idx in np.nonzero(mask) if mask.ndim else [np.nonzero(mask)[0]]:
                    ents.append(("arr", idx.astype(np.int64)))
            else:
                if k.dtype.kind not in "iu":
                    raise IndexError("arrays used as indices must be of integer (or boolean) "
                                     "type")
                ents.append(("arr", k))
    used = sum(1 for kind, _ in ents if kind in ("slice", "int", "arr"))
    out: list[tuple[str, Any]] = []
    for kind, v in ents:
        if kind == "ell":
            out.extend([("slice", slice(None))] * (nd - used))
        else:
            out.append((kind, v))
    if not any(kind == "ell" for kind, _ in ents):
        out.extend([("slice", slice(None))] * (nd - used))
    return out


def _slice_bounds(s: slice):
    step = 1 if s.step is None else s.step
    if step == 0:
        raise ValueError("slice step cannot be zero")
    if s.start is None:
        start = 0 if step > 0 else INT64_MAX
    else:
        start = s.start
    if s.stop is None:
        stop = INT64_MAX if step > 0 else INT64_MIN
    else:
        stop = s.stop
    return start, stop, step


def _apply_slices(g, x: str, ents: list, dims: list) -> tuple[str, list]:
    """Slice every slice/int entry (keeping the rank); returns the value and the int axes."""
    starts, ends, axes, steps, int_axes = [], [], [], [], []
    ax = 0
    for kind, v in ents:
        if kind == "new":
            continue
        if kind == "slice":
            if v != slice(None):
                a, b, c = _slice_bounds(v)
                starts.append(a)
                ends.append(b)
                axes.append(ax)
                steps.append(c)
        elif kind == "int":
            i = v
            starts.append(i)
            ends.append(i + 1 if i != -1 else INT64_MAX)
            axes.append(ax)
            steps.append(1)
            int_axes.append(ax)
        ax += 1
    if axes:
        x = g.node("Slice", [x, g.shape_tensor(starts), g.shape_tensor(ends), g.i64(axes),
                             g.i64(steps)])
    return x, int_axes


def _basic(g, out, x: str, ents: list, dims: list) -> str:
    x, int_axes = _apply_slices(g, x, ents, dims)
    if int_axes:
        x = g.node("Squeeze", [x, g.i64(int_axes)])
    new_pos, pos = [], 0
    for kind, _ in ents:
        if kind == "new":
            new_pos.append(pos)
            pos += 1
        elif kind == "slice":
            pos += 1
    if new_pos:
        x = g.node("Unsqueeze", [x, g.i64(new_pos)])
    return x


def _index_value(g, k, dim) -> str:
    """An index array as int64, negatives wrapped (GatherND's are not portable)."""
    idx = g.val(k, INT64)
    neg = g.math("Less", [idx, g.scalar(0, INT64)], INT64, out=BOOL)
    wrapped = g.node("Add", [idx, g.node("Squeeze", [g.dim(dim)])])
    return g.where(neg, wrapped, idx, INT64)


def _advanced(g, out, x: str, ents: list, dims: list) -> str:
    # Integers count as (0-d) index arrays once any array is present (NumPy's rule).
    ents = [("arr", np.asarray(v, dtype=np.int64)) if kind == "int" and type(v) is not SymDim
            else (kind, v) for kind, v in ents]
    x, _ = _apply_slices(g, x, [e if e[0] != "arr" else ("slice", slice(None)) for e in ents],
                         dims)
    consumed = [e for e in ents if e[0] != "new"]
    adv_axes = [i for i, (kind, _) in enumerate(consumed) if kind == "arr"]
    basic_axes = [i for i, (kind, _) in enumerate(consumed) if kind != "arr"]
    perm = adv_axes + basic_axes
    if perm != list(range(len(perm))):
        x = g.node("Transpose", [x], perm=perm)
    arrays = [consumed[i][1] for i in adv_axes]
    vshape = np.broadcast_shapes(*[np.shape(a.v if type(a) is TArray else a) for a in arrays])
    sshape = np.broadcast_shapes(*[np.shape(a.s if type(a) is TArray else a) for a in arrays])
    sdims = g.dims_of(vshape, sshape)
    r = len(sdims)
    if len(arrays) == 1:
        res = g.node("Gather", [x, g.val(arrays[0], INT64)], axis=0)
    else:
        parts = []
        for a, ax in zip(arrays, adv_axes):
            idx = _index_value(g, a, dims[ax])
            parts.append(g.node("Unsqueeze", [g.expand(idx, sdims), g.i64([-1])]))
        res = g.node("GatherND", [x, g.node("Concat", parts, axis=-1)])
    # Where the broadcast index dims go: in place if the advanced entries are adjacent in the
    # key (no slice or None between them), else first.
    kinds = [kind for kind, _ in ents]
    first = kinds.index("arr")
    last = len(kinds) - 1 - kinds[::-1].index("arr")
    adjacent = all(k == "arr" for k in kinds[first:last + 1])
    tokens: list = []
    basic_i = 0
    if not adjacent:
        tokens.extend(("S", j) for j in range(r))
    for i, kind in enumerate(kinds):
        if kind == "new":
            tokens.append(("N", None))
        elif kind == "arr":
            if adjacent and i == first:
                tokens.extend(("S", j) for j in range(r))
        else:
            tokens.append(("B", basic_i))
            basic_i += 1
    current = [("S", j) for j in range(r)] + [("B", j) for j in range(basic_i)]
    target = [t for t in tokens if t[0] != "N"]
    order = [current.index(t) for t in target]
    if order != list(range(len(order))):
        res = g.node("Transpose", [res], perm=order)
    new_pos = [i for i, t in enumerate(tokens) if t[0] == "N"]
    if new_pos:
        res = g.node("Unsqueeze", [res, g.i64(new_pos)])
    return res


@lowering(operator.getitem, onnx=("Slice", "Squeeze", "Unsqueeze", "Gather", "GatherND"))
def lower_getitem(g, out, x, key):
    dims = dims_of(x)
    ents = _normalize_key(key, len(dims))
    xv = g.val(x)
    if any(kind == "arr" for kind, _ in ents):
        res = _advanced(g, out, xv, ents, dims)
    else:
        res = _basic(g, out, xv, ents, dims)
    return res


def _positions(x):
    """``arange(x.size)`` shaped like ``x`` (recorded): flat positions to scatter into."""
    return np.reshape(np.arange(x.size, like=x), x.shape)


def _scatter(g, x, region, value) -> str:
    """``x`` with ``value`` written at the flat positions ``region`` (a TArray)."""
    rdims = dims_of(region)
    v = g.val(value, x.dtype)
    vdims = dims_of(value) if hasattr(value, "shape") else []
    if len(vdims) > len(rdims):
        if any(d != 1 for d in vdims[:len(vdims) - len(rdims)]):
            raise ValueError(f"could not broadcast input array from shape {tuple(vdims)} into "
                             f"shape {tuple(rdims)}")
        v = g.reshape(v, vdims[len(vdims) - len(rdims):])
    v = g.expand(v, rdims)
    n = 1
    for d in rdims:
        n = n * d
    size = 1
    for d in dims_of(x):
        size = size * d
    flat = g.reshape(g.val(x), [size])
    idx = g.reshape(g.val(region, INT64), [n, 1])
    upd = g.reshape(v, [n])
    res = g.node("ScatterND", [flat, idx, upd])
    return g.reshape(res, dims_of(x))


@lowering(operator.setitem, onnx=("ScatterND",))
def lower_setitem(g, out, x, key, value):
    region = sub_record(lambda: _positions(x)[key])
    return _scatter(g, x, region, value)


@lowering(np.put_along_axis, onnx=("ScatterND",))
def lower_put_along_axis(g, out, arr, indices, values, axis):
    region = sub_record(lambda: np.take_along_axis(_positions(arr), indices, axis=axis))
    return _scatter(g, arr, region, values)


@lowering(np.copyto, onnx=("Where", "Expand"))
def lower_copyto(g, out, dst, src, casting="same_kind", where=True):
    dt = dst.dtype
    s = g.val(src, dt)
    if where is True:
        return g.expand(s, dims_of(dst))
    return g.where(g.val(where, BOOL), s, g.val(dst), dt)


@lowering(ndarray_fill, onnx=("Expand",))
def lower_fill(g, out, x, value):
    return g.expand(g.val(value, x.dtype), dims_of(x))


@lowering(np.take, onnx=("Gather",))
def lower_take(g, out, a, indices, axis=None, out_=None, mode="raise"):
    x = g.val(a)
    if axis is None:
        size = 1
        for d in dims_of(a):
            size = size * d
        x = g.reshape(x, [size])
        ax, n = 0, size
    else:
        ax = axes_of(axis, ndim_of(a))[0]
        n = dims_of(a)[ax]
    idx = g.val(indices, INT64)
    if mode == "wrap":
        idx = g.math("Mod", [idx, g.node("Squeeze", [g.dim(n)])], INT64, fmod=0)
    elif mode == "clip":
        hi = g.node("Sub", [g.node("Squeeze", [g.dim(n)]), g.scalar(1, INT64)])
        idx = g.math("Min", [g.math("Max", [idx, g.scalar(0, INT64)], INT64), hi], INT64)
    return g.node("Gather", [x, idx], axis=ax)


@lowering(np.take_along_axis, onnx=("Expand", "GatherElements"))
def lower_take_along_axis(g, out, arr, indices, axis=-1):
    x, adims, ax = along_axis(g, arr, axis)
    odims = out.dims
    idx = _index_value(g, indices, adims[ax])
    idx = g.expand(idx, odims)
    xdims = list(odims)
    xdims[ax] = adims[ax]
    x = g.expand(x, xdims)
    return g.node("GatherElements", [x, idx], axis=ax)
