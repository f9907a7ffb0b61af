"""Shape ops: reshape ravel transpose/moveaxis/swapaxes expand_dims squeeze broadcast_to
broadcast_arrays concatenate stack split array_split flip roll diagonal tile repeat pad tril triu
copy astype atleast_*d.

Target shapes come from the eager result's dims (ints and SymDims), so a rule's spelling of a
shape never reaches the graph: a reshape puts ``-1`` at its one batch-dependent position (when
unambiguous) and spells everything else as constants; otherwise every dim comes from ``Shape``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...tensor import ndarray_astype
from ..recorder import lowering
from ..symdim import SymDim
from ._common import INT64_MIN, axes_of, dims_of, ndim_of, refuse, sub_record

__all__: list = []


def _layout_order(a, order: str) -> str:
    if order in ("A", "K"):
        v = a.v if hasattr(a, "v") else np.asarray(a)
        return "F" if (v.flags.f_contiguous and not v.flags.c_contiguous) else "C"
    return order


def _reshape_to(g, x: str, dims: list, order: str = "C", in_ndim: int = 0) -> str:
    if order == "F":
        rev_in = list(range(in_ndim))[::-1]
        t = g.node("Transpose", [x], perm=rev_in) if in_ndim > 1 else x
        r = g.reshape(t, dims[::-1])
        return g.node("Transpose", [r], perm=list(range(len(dims)))[::-1]) if len(dims) > 1 \
            else r
    return g.reshape(x, dims)


@lowering(np.reshape, onnx=("Reshape",))
def lower_reshape(g, out, a, shape=None, order="C", *, newshape=None, copy=None):
    return _reshape_to(g, g.val(a), out.dims, _layout_order(a, order), ndim_of(a))


@lowering(np.ravel, onnx=("Reshape",))
def lower_ravel(g, out, a, order="C"):
    return _reshape_to(g, g.val(a), out.dims, _layout_order(a, order), ndim_of(a))


def _as_reshape(g, out, a, *args, **kwargs):
    return g.reshape(g.val(a), out.dims)


_op: Any
for _op in (np.atleast_1d, np.atleast_2d, np.atleast_3d):
    lowering(_op, onnx=("Reshape",))(
        lambda g, out, *arys: _as_reshape(g, out, arys[0]) if len(arys) == 1 else
        [_as_reshape(g, o, x) for o, x in zip(out, arys)])


def _perm_of(fn, nd: int, *args, **kwargs) -> list:
    """The axis permutation ``fn`` applies, read off a probe array with distinct sizes."""
    probe = np.empty(tuple(range(2, 2 + nd)), dtype=np.int8)
    return [s - 2 for s in fn(probe, *args, **kwargs).shape]


def _permute(fn):
    def lower(g, out, a, *args, **kwargs):
        perm = _perm_of(fn, ndim_of(a), *args, **kwargs)
        x = g.val(a)
        if perm == list(range(len(perm))):
            return g.node("Identity", [x])
        return g.node("Transpose", [x], perm=perm)
    return lower


for _op in (np.transpose, np.moveaxis, np.swapaxes, np.matrix_transpose, np.permute_dims,
            np.rollaxis):
    lowering(_op, onnx=("Transpose",))(_permute(_op))


@lowering(np.expand_dims, onnx=("Unsqueeze",))
def lower_expand_dims(g, out, a, axis):
    axes = axes_of(axis, out.ndim)
    return g.node("Unsqueeze", [g.val(a), g.i64(sorted(axes))])


@lowering(np.squeeze, onnx=("Squeeze",))
def lower_squeeze(g, out, a, axis=None):
    dims = dims_of(a)
    if axis is None:
        axes = [i for i, d in enumerate(dims) if type(d) is not SymDim and d == 1]
    else:
        axes = list(axes_of(axis, len(dims)))
    if any(type(dims[i]) is SymDim for i in axes):
        raise refuse("squeezing a batch axis")
    if not axes:
        return g.node("Identity", [g.val(a)])
    return g.node("Squeeze", [g.val(a), g.i64(sorted(axes))])


@lowering(np.broadcast_to, onnx=("Expand",))
def lower_broadcast_to(g, out, array, shape, subok=False):
    return g.expand(g.val(array), out.dims)


@lowering(np.broadcast_arrays, onnx=("Expand",))
def lower_broadcast_arrays(g, out, *args, subok=False):
    return [g.expand(g.val(a), o.dims) for o, a in zip(out, args)]


@lowering(np.concatenate, np.concat, onnx=("Concat",))
def lower_concatenate(g, out, arrays, axis=0, out_=None, *, dtype=None, casting="same_kind"):
    dt = out.dtype
    if axis is None:
        names = [g.reshape(g.val(a, dt), [_size(a)]) for a in arrays]
        ax = 0
    else:
        names = [g.val(a, dt) for a in arrays]
        ax = axes_of(axis, out.ndim)[0]
    return names[0] if len(names) == 1 else g.node("Concat", names, axis=ax)


def _size(a):
    n = 1
    for d in dims_of(a):
        n = n * d
    return n


@lowering(np.stack, onnx=("Unsqueeze", "Concat"))
def lower_stack(g, out, arrays, axis=0, out_=None, *, dtype=None, casting="same_kind"):
    dt = out.dtype
    ax = axes_of(axis, out.ndim)[0]
    names = [g.node("Unsqueeze", [g.val(a, dt), g.i64([ax])]) for a in arrays]
    return names[0] if len(names) == 1 else g.node("Concat", names, axis=ax)


def _split(g, out, ary, axis):
    ax = axes_of(axis, ndim_of(ary))[0]
    if type(dims_of(ary)[ax]) is SymDim:
        raise refuse("splitting along a batch axis")
    x = g.val(ary)
    res, start = [], 0
    for o in out:
        n = o.v.shape[ax]
        res.append(g.node("Slice", [x, g.i64([start]), g.i64([start + n]), g.i64([ax])]))
        start += n
    return res


@lowering(np.split, onnx=("Slice",))
def lower_split(g, out, ary, indices_or_sections, axis=0):
    return _split(g, out, ary, axis)


@lowering(np.array_split, onnx=("Slice",))
def lower_array_split(g, out, ary, indices_or_sections, axis=0):
    return _split(g, out, ary, axis)


@lowering(np.flip, onnx=("Slice",))
def lower_flip(g, out, m, axis=None):
    axes = axes_of(axis, ndim_of(m))
    x = g.val(m)
    if not axes:
        return g.node("Identity", [x])
    n = len(axes)
    return g.node("Slice", [x, g.i64([-1] * n), g.i64([INT64_MIN] * n), g.i64(list(axes)),
                            g.i64([-1] * n)])


@lowering(np.roll, onnx=("Slice", "Concat"))
def lower_roll(g, out, a, shift, axis=None):
    if axis is None:
        raise refuse("np.roll with axis=None on a batched value")
    nd = ndim_of(a)
    shifts = np.broadcast_to(np.asarray(shift), np.broadcast_shapes(np.shape(shift),
                                                                       np.shape(axis)))
    axes = np.broadcast_to(np.asarray(axis), shifts.shape)
    total: dict = {}
    for s, ax in zip(shifts.ravel(), axes.ravel()):
        ax = axes_of(int(ax), nd)[0]
        total[ax] = total.get(ax, 0) + int(s)
    x = g.val(a)
    dims = dims_of(a)
    for ax, s in total.items():
        n = dims[ax]
        if type(n) is SymDim:
            raise refuse("np.roll along a batch axis")
        if n == 0 or s % n == 0:
            continue
        k = s % n
        head = g.node("Slice", [x, g.i64([n - k]), g.i64([n]), g.i64([ax])])
        tail = g.node("Slice", [x, g.i64([0]), g.i64([n - k]), g.i64([ax])])
        x = g.node("Concat", [head, tail], axis=ax)
    return x


@lowering(np.linalg.diagonal, onnx=("Transpose", "Reshape", "Gather"))
def lower_linalg_diagonal(g, out, x, /, *, offset=0):
    return lower_diagonal(g, out, x, offset, -2, -1)


@lowering(np.diagonal, onnx=("Transpose", "Reshape", "Gather"))
def lower_diagonal(g, out, a, offset=0, axis1=0, axis2=1):
    nd = ndim_of(a)
    ax1, ax2 = axes_of(axis1, nd)[0], axes_of(axis2, nd)[0]
    dims = dims_of(a)
    n, m = dims[ax1], dims[ax2]
    if type(n) is SymDim or type(m) is SymDim:
        raise refuse("np.diagonal over a batch axis")
    rest = [i for i in range(nd) if i not in (ax1, ax2)]
    x = g.node("Transpose", [g.val(a)], perm=rest + [ax1, ax2])
    flat = g.reshape(x, [dims[i] for i in rest] + [n * m])
    idx = np.diagonal(np.arange(n * m, dtype=np.int64).reshape(n, m), offset)
    return g.node("Gather", [flat, g.const(idx)], axis=len(rest))


@lowering(np.tile, onnx=("Reshape", "Tile"))
def lower_tile(g, out, A, reps):
    reps = (reps,) if np.ndim(reps) == 0 else tuple(reps)
    dims = dims_of(A)
    nd = max(len(dims), len(reps))
    x = g.val(A)
    if len(dims) < nd:
        x = g.reshape(x, [1] * (nd - len(dims)) + dims)
    reps = (1,) * (nd - len(reps)) + reps
    if any(type(r) is SymDim for r in reps):
        return g.node("Tile", [x, g.shape_tensor(reps)])
    return g.node("Tile", [x, g.i64(reps)])


@lowering(np.repeat, onnx=("Gather",))
def lower_repeat(g, out, a, repeats, axis=None):
    if hasattr(repeats, "v") and not getattr(repeats, "is_const", True):
        raise refuse("np.repeat with repeats that depend on the inputs")
    x = g.val(a)
    if axis is None:
        x = g.reshape(x, [_size(a)])
        ax = 0
        n = _size(a)
    else:
        ax = axes_of(axis, ndim_of(a))[0]
        n = dims_of(a)[ax]
    if type(n) is SymDim:
        raise refuse("np.repeat along a batch axis")
    reps = repeats.v if hasattr(repeats, "v") else repeats
    idx = np.repeat(np.arange(n, dtype=np.int64), reps)
    return g.node("Gather", [x, g.const(idx)], axis=ax)


@lowering(np.pad, onnx=("Pad",))
def lower_pad(g, out, array, pad_width, mode="constant", **kwargs):
    nd = ndim_of(array)
    pw = np.broadcast_to(np.asarray(pad_width, dtype=np.int64), (nd, 2))
    dims = dims_of(array)
    for i in range(nd):
        if type(dims[i]) is SymDim and (pw[i] != 0).any():
            raise refuse("padding a batch axis")
    pads = g.i64(list(pw[:, 0]) + list(pw[:, 1]))
    x = g.val(array)
    if mode == "empty":
        mode, kwargs = "constant", {}
    if mode == "constant":
        cv = kwargs.pop("constant_values", 0)
        if hasattr(cv, "v"):
            if cv.name is not None:
                raise refuse("np.pad with constant_values that depend on the inputs")
            cv = cv.v
        if np.ndim(cv) != 0 and len(set(np.ravel(cv).tolist())) > 1:
            if kwargs:
                raise refuse(f"np.pad keywords {sorted(kwargs)}")
            return g.val(sub_record(_pad_blocks, array, pw,
                                    np.broadcast_to(np.asarray(cv), (nd, 2)), out.dtype))
        if kwargs:
            raise refuse(f"np.pad keywords {sorted(kwargs)}")
        cval = g.const(np.asarray(np.ravel(cv)[0] if np.ndim(cv) else cv).astype(out.dtype))
        return g.node("Pad", [x, pads, cval], mode="constant")
    if mode in ("edge", "reflect"):
        if kwargs.get("reflect_type", "even") != "even":
            raise refuse("np.pad reflect_type='odd'")
        if mode == "reflect":
            for i in range(nd):
                if (pw[i] > 0).any() and type(dims[i]) is not SymDim and pw[i].max() >= dims[i]:
                    raise refuse("np.pad mode='reflect' with a pad as large as the axis")
        return g.node("Pad", [x, pads], mode=mode)
    raise refuse(f"np.pad mode={mode!r} (constant, edge and reflect export)")


def _pad_blocks(x, pw, cv, dtype):
    """Constant padding with per-side values: concatenation with filled blocks, one axis after
    another (later axes own the corners, as in np.pad)."""
    for ax in range(len(pw)):
        parts = []
        for side in (0, 1):
            if pw[ax, side]:
                shape = list(x.shape)
                shape[ax] = int(pw[ax, side])
                parts.append(np.full(tuple(shape), cv[ax, side], dtype=dtype, like=x))
        if parts:
            x = np.concatenate(([parts[0]] if pw[ax, 0] else []) + [x]
                               + ([parts[-1]] if pw[ax, 1] else []), axis=ax)
    return x


def _trilu(upper: int):
    def lower(g, out, m, k=0):
        if ndim_of(m) < 2:
            raise refuse("np.tril / np.triu of a 1-d value")
        return g.math("Trilu", [g.val(m)], out.dtype, extra=[g.scalar(k, np.int64)],
                      probe_extra=(("<i8", 0),), rank=2, upper=upper)
    return lower


lowering(np.tril, onnx=("Trilu",))(_trilu(0))
lowering(np.triu, onnx=("Trilu",))(_trilu(1))


@lowering(np.copy, np.ascontiguousarray, np.asfortranarray, onnx=("Identity",))
def lower_copy(g, out, a, *args, **kwargs):
    return g.node("Identity", [g.val(a, out.dtype)])


@lowering(ndarray_astype, onnx=("Cast",))
def lower_astype(g, out, x, dtype, **kwargs):
    g.check_dtype(out.dtype)
    v = g.val(x)
    if x.dtype == out.dtype:
        return g.node("Identity", [v])
    return g.cast(v, out.dtype)


@lowering(np.real, onnx=("Identity",))
def lower_real(g, out, val):
    return g.node("Identity", [g.val(val)])


@lowering(np.imag, onnx=("ConstantOfShape",))
def lower_imag(g, out, val):
    return g.fill(g.node("Shape", [g.val(val)]), 0, out.dtype)


@lowering(np.unstack, onnx=("Gather",))
def lower_unstack(g, out, x, /, *, axis=0):
    ax = axes_of(axis, ndim_of(x))[0]
    if type(dims_of(x)[ax]) is SymDim:
        raise refuse("np.unstack along a batch axis")
    return [g.node("Gather", [g.val(x), g.scalar(i, np.int64)], axis=ax)
            for i in range(len(out))]


@lowering(np.rot90, onnx=("Slice", "Transpose"))
def lower_rot90(g, out, m, k=1, axes=(0, 1)):
    def rot(m):
        nd = ndim_of(m)
        a0, a1 = (ax % nd for ax in axes)
        kk = k % 4
        if kk == 0:
            return np.copy(m)
        if kk == 2:
            return np.flip(np.flip(m, a0), a1)
        perm = list(range(nd))
        perm[a0], perm[a1] = perm[a1], perm[a0]
        if kk == 1:
            return np.transpose(np.flip(m, a1), perm)
        return np.flip(np.transpose(m, perm), a1)
    return g.val(sub_record(rot, m))


def _stack_decomp(fn):
    def lower(g, out, tup, *args, **kwargs):
        res = sub_record(fn, list(tup), *args, **kwargs)
        return g.val(res)
    return lower


def _hstack(tup, dtype=None, casting="same_kind"):
    arrs = [np.atleast_1d(a) for a in tup]
    return np.concatenate(arrs, axis=0 if arrs[0].ndim == 1 else 1, dtype=dtype,
                          casting=casting)


def _vstack(tup, dtype=None, casting="same_kind"):
    return np.concatenate([np.atleast_2d(a) for a in tup], axis=0, dtype=dtype,
                          casting=casting)


def _dstack(tup):
    return np.concatenate([np.atleast_3d(a) for a in tup], axis=2)


def _column_stack(tup):
    arrs = [a if ndim_of(a) >= 2 else np.expand_dims(a, 1) for a in tup]
    return np.concatenate(arrs, axis=1)


lowering(np.hstack, onnx=("Concat",))(_stack_decomp(_hstack))
lowering(np.vstack, onnx=("Concat",))(_stack_decomp(_vstack))
lowering(np.dstack, onnx=("Concat",))(_stack_decomp(_dstack))
lowering(np.column_stack, onnx=("Concat",))(_stack_decomp(_column_stack))
