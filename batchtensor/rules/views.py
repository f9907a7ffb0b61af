"""Shape and view rules: reshape, ravel, transpose, moveaxis, swapaxes, expand_dims, squeeze,
broadcast_to, flip, roll, diagonal, real, imag. Views stay views where NumPy returns views."""

from __future__ import annotations

import math
import operator

import numpy as np

from ..registry import batch_rule
from ._helpers import (NoValue, logical_shape, move_bdim_to_front, pad_to_rank, physical_axis,
                       require, wrap_axes, wrap_axis)


def resolve_shape(shape, size: int) -> tuple:
    """The logical target shape of a reshape with any ``-1`` filled in (NumPy's errors)."""
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
    shape = tuple(operator.index(d) for d in shape)
    unknown = [i for i, d in enumerate(shape) if d == -1]
    if len(unknown) > 1:
        raise ValueError("can only specify one unknown dimension")
    if any(d < -1 for d in shape):
        raise ValueError("negative dimensions not allowed")
    known = math.prod(d for d in shape if d != -1)
    if unknown:
        if known == 0 or size % known:
            raise ValueError(f"cannot reshape array of size {size} into shape {shape}")
        shape = shape[:unknown[0]] + (size // known,) + shape[unknown[0] + 1:]
    elif known != size:
        raise ValueError(f"cannot reshape array of size {size} into shape {shape}")
    return shape


def _example_is_c_ordered(x, bdim) -> bool:
    """Whether one example's memory order is C order (so order='K'/'A' mean 'C')."""
    strides = getattr(x, "strides", None)
    if strides is None:
        return True
    dims = [(s, st) for i, (s, st) in enumerate(zip(x.shape, strides)) if i != bdim and s != 1]
    return all(st > 0 for _, st in dims) and all(
        dims[i][1] >= dims[i + 1][1] * dims[i + 1][0] for i in range(len(dims) - 1))


def _batched_reshape(x, bdim, lshape: tuple, order: str, copy=None):
    """Reshape every example to ``lshape``; returns (out, out_bdim)."""
    kw = {} if copy is None else {"copy": copy}
    if order in ("A", "K"):
        require(_example_is_c_ordered(x, bdim), f"reshape/ravel order={order!r} of an example "
                                                f"whose memory order is not C")
        order = "C"
    if order == "F":
        # Batch axis last: in Fortran order each example is then one contiguous block.
        x = np.moveaxis(x, bdim, -1) if bdim != x.ndim - 1 else x
        n = x.shape[-1]
        target = lshape + ((-1,) if math.prod(lshape) else (n,))
        return np.reshape(x, target, order="F", **kw), len(lshape)
    x = move_bdim_to_front(x, bdim)
    n = x.shape[0]
    target = ((-1,) if math.prod(lshape) else (n,)) + lshape
    return np.reshape(x, target, order=order, **kw), 0


@batch_rule(np.reshape)
def reshape_rule(a, a_bdim, shape=None, order="C", *, newshape=None, copy=None):
    if shape is None:
        shape = newshape
    if shape is None:
        raise TypeError("reshape() missing required argument 'shape' (pos 2)")
    lshape = logical_shape(a, a_bdim)
    target = resolve_shape(shape, math.prod(lshape))
    return _batched_reshape(a, a_bdim, target, order, copy)


@batch_rule(np.ravel)
def ravel_rule(a, a_bdim, order="C"):
    lshape = logical_shape(a, a_bdim)
    return _batched_reshape(a, a_bdim, (math.prod(lshape),), order)


@batch_rule(np.transpose)
def transpose_rule(a, a_bdim, axes=None):
    nd = a.ndim - 1
    x = move_bdim_to_front(a, a_bdim)
    if axes is None:
        perm = tuple(range(nd, 0, -1))
    else:
        axes = tuple(axes) if not isinstance(axes, (int, np.integer)) else (axes,)
        if len(axes) != nd:
            raise ValueError("axes don't match array")
        perm = tuple(wrap_axis(ax, nd) + 1 for ax in axes)
        if len(set(perm)) != nd:
            raise ValueError("repeated axis in transpose")
    return np.transpose(x, (0,) + perm), 0


@batch_rule(np.matrix_transpose)
def matrix_transpose_rule(x, x_bdim, /):
    if x.ndim - 1 < 2:
        raise ValueError(f"Input array must be at least 2-dimensional, but it is {x.ndim - 1}")
    return np.swapaxes(move_bdim_to_front(x, x_bdim), -1, -2), 0


@batch_rule(np.moveaxis)
def moveaxis_rule(a, a_bdim, source, destination):
    nd = a.ndim - 1
    src = tuple(a + 1 for a in wrap_axes(source, nd, "source"))
    dst = tuple(a + 1 for a in wrap_axes(destination, nd, "destination"))
    if len(src) != len(dst):
        raise ValueError("`source` and `destination` arguments must have the same number of "
                         "elements")
    return np.moveaxis(move_bdim_to_front(a, a_bdim), src, dst), 0


@batch_rule(np.swapaxes)
def swapaxes_rule(a, a_bdim, axis1, axis2):
    nd = a.ndim - 1
    ax1, ax2 = wrap_axis(axis1, nd), wrap_axis(axis2, nd)
    return np.swapaxes(a, physical_axis(ax1, a_bdim), physical_axis(ax2, a_bdim)), a_bdim


@batch_rule(np.expand_dims)
def expand_dims_rule(a, a_bdim, axis):
    nd = a.ndim - 1
    if not isinstance(axis, (tuple, list)):
        axis = (axis,)
    axes = wrap_axes(tuple(axis), nd + len(axis))
    return np.expand_dims(move_bdim_to_front(a, a_bdim), tuple(ax + 1 for ax in axes)), 0


@batch_rule(np.squeeze)
def squeeze_rule(a, a_bdim, axis=None):
    x = move_bdim_to_front(a, a_bdim)
    lshape = x.shape[1:]
    if axis is None:
        axes = tuple(i for i, d in enumerate(lshape) if d == 1)
    else:
        axes = wrap_axes(axis, len(lshape))
        for ax in axes:
            if lshape[ax] != 1:
                raise ValueError("cannot select an axis to squeeze out which has size not "
                                 "equal to one")
    return np.squeeze(x, tuple(ax + 1 for ax in axes)), 0


@batch_rule(np.broadcast_to)
def broadcast_to_rule(array, array_bdim, shape, subok=False):
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    x = pad_to_rank(move_bdim_to_front(array, array_bdim), len(shape))
    if x.ndim - 1 > len(shape):
        raise ValueError("input operand has more dimensions than allowed by the axis remapping")
    return np.broadcast_to(x, (x.shape[0],) + shape, subok=subok), 0


@batch_rule(np.flip)
def flip_rule(m, m_bdim, axis=None):
    nd = m.ndim - 1
    axes = range(nd) if axis is None else wrap_axes(axis, nd)
    return np.flip(m, tuple(physical_axis(ax, m_bdim) for ax in axes)), m_bdim


@batch_rule(np.roll)
def roll_rule(a, a_bdim, shift, axis=None):
    x = move_bdim_to_front(a, a_bdim)
    if axis is None:
        lshape = x.shape[1:]
        flat = np.reshape(x, (x.shape[0], math.prod(lshape)))
        require(np.ndim(shift) == 0, "np.roll with several shifts and axis=None")
        return np.reshape(np.roll(flat, shift, axis=1), x.shape), 0
    nd = x.ndim - 1
    if isinstance(axis, (tuple, list)):
        axes = tuple(wrap_axis(ax, nd) + 1 for ax in axis)
    else:
        axes = wrap_axis(axis, nd) + 1
    return np.roll(x, shift, axis=axes), 0


@batch_rule(np.diagonal)
def diagonal_rule(a, a_bdim, offset=0, axis1=0, axis2=1):
    nd = a.ndim - 1
    if nd < 2:
        raise ValueError("diag requires an array of at least two dimensions")
    ax1, ax2 = wrap_axis(axis1, nd), wrap_axis(axis2, nd)
    if ax1 == ax2:
        raise ValueError("axis1 and axis2 cannot be the same")
    # Diagonal removes both axes and appends the diagonal last: the batch axis stays first.
    return np.diagonal(move_bdim_to_front(a, a_bdim), offset, ax1 + 1, ax2 + 1), 0


def _elementwise_keep_bdim(op):
    @batch_rule(op)
    def rule(val, val_bdim):
        return op(val), val_bdim

    rule.__name__ = f"{op.__name__}_rule"
    return rule


real_rule = _elementwise_keep_bdim(np.real)
imag_rule = _elementwise_keep_bdim(np.imag)

__all__ = ["resolve_shape", "NoValue"]
