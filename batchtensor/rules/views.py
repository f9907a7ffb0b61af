"""Shape and view rules: reshape, ravel, transpose, moveaxis, swapaxes, rollaxis,
matrix_transpose, expand_dims, squeeze, atleast_1d/2d/3d, broadcast_to, broadcast_arrays, flip,
fliplr, flipud, rot90, roll, diagonal, real, imag, astype (np.astype and ndarray.astype),
copy (np.copy). Views stay views where NumPy returns views."""

from __future__ import annotations

import math
import operator
from typing import Sequence

import numpy as np
from numpy.exceptions import AxisError
from numpy.lib.array_utils import normalize_axis_tuple
from numpy.lib import stride_tricks
from numpy.lib.stride_tricks import sliding_window_view

from ..errors import BatchingError, LayoutError
from ..levels import is_input_memory
from ..plumbing import innermost
from ..registry import batch_rule
from ..tensor import (BatchedTensor, is_plain_array, ndarray_astype, reshape_view,
                      transpose_view)
from ._helpers import (batch_size_of, logical_shape, move_bdim_to_front,
                       pad_to_rank, physical_axis, wrap_axes, wrap_axis)


# ---- reshape / ravel ----------------------------------------------------------------------------
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


def example_layout(x, compact: bool = True) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
    """(shape, strides) of one example of ``x`` at every outer level, as the loop would see it
    (see ``example_strides``); with ``compact=False``, as it lies in memory (an outer level's
    batch axis just left out). None when the backend has no strides."""
    if type(x) is BatchedTensor:
        inner = example_layout(x._value, compact)
        if inner is None:
            return None
        own = compact and not is_input_memory(innermost(x._value), (x._level,))
        return drop_batch_axis(*inner, x._bdim, own)
    strides = getattr(x, "strides", None)
    return None if strides is None else (tuple(x.shape), tuple(strides))


def drop_batch_axis(shape, strides, bdim,
                    compact: bool = True) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The layout of one example: the batch axis dropped and (``compact``), where it sits
    inside the example's axes, its factor divided out of the outer strides."""
    shape, st = list(shape), list(strides)
    n, bs = shape.pop(bdim), st.pop(bdim)
    if compact and n > 1 and bs != 0:
        span = abs(bs) * n
        st = [s // n if abs(s) >= span and s % n == 0 else s for s in st]
    return tuple(shape), tuple(st)


def example_strides(x, bdim) -> tuple | None:
    """One example's strides as the per-example loop sees them; None means C order (a backend
    without strides).

    Where ``x``'s memory is a vmap input's, the loop's example is a view of it: its strides are
    the physical ones with the batch axis left out (``np.asfortranarray(xs)[i]`` is not
    contiguous). Where it is a value computed inside the function, each example of the loop
    owns its memory, while the batch may hold the examples interleaved (a result that follows
    an input whose batch axis is inside the examples' memory): its strides are those of an
    example stored on its own, the batch axis' factor divided out (``drop_batch_axis``)."""
    found = example_layout(x)
    if found is None:
        return None
    return drop_batch_axis(*found, bdim, not is_input_memory(innermost(x)))[1]


def is_contiguous(shape, strides, itemsize, fortran: bool) -> bool:
    """NumPy's C / F contiguity flag for this layout."""
    if 0 in shape:
        return True
    pairs = zip(shape, strides) if fortran else zip(reversed(shape), reversed(strides))
    expected = itemsize
    for d, s in pairs:
        if d != 1:
            if s != expected:
                return False
            expected *= d
    return True


def _any_order(x, bdim) -> str:
    """order='A': 'F' if one example is Fortran contiguous and not C contiguous, else 'C'."""
    st = example_strides(x, bdim)
    if st is None:
        return "C"
    shape = logical_shape(x, bdim)
    size = x.dtype.itemsize
    fortran = is_contiguous(shape, st, size, True) and not is_contiguous(shape, st, size, False)
    return "F" if fortran else "C"


def _keep_order_perm(x, bdim) -> tuple | None:
    """order='K': one example's logical axes from slowest to fastest in memory, ordered as
    NumPy's iterator orders them (stable; zero and size-1 strides are ambiguous and keep C order;
    signs ignored). None means C order."""
    st: Sequence[int] | None = example_strides(x, bdim)
    if st is None:
        return None
    shape = logical_shape(x, bdim)
    st = [0 if d == 1 else abs(s) for d, s in zip(shape, st)]
    perm = list(range(len(shape)))[::-1]  # fastest axis first, as the iterator stores them
    for i0 in range(1, len(perm)):
        j0 = perm[i0]
        pos = i0
        for i1 in range(i0 - 1, -1, -1):
            s0, s1 = st[j0], st[perm[i1]]
            if s0 == 0 or s1 == 0:
                continue
            if s1 <= s0:
                break
            pos = i1
        if pos != i0:
            perm[pos + 1:i0 + 1] = perm[pos:i0]
            perm[pos] = j0
    return tuple(perm[::-1])


def _normalise_order(order):
    if order is None:
        return "C"
    return order.upper() if isinstance(order, str) and len(order) == 1 else order


def _batched_reshape(x, bdim, lshape: tuple, order, copy=None):
    """Reshape every example to ``lshape``; returns (out, out_bdim).

    ``order='A'`` follows one example's layout, judged as if it were stored on its own (the
    batch axis compacted out), so it agrees with a loop over separately stored examples."""
    kw = {} if copy is None else {"copy": copy}
    order = _normalise_order(order)
    if order == "A":
        order = _any_order(x, bdim)
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


def _reshape_fast(level, args, kwargs):
    """``np.reshape(x, shape)`` in C order: ``tensor.reshape_view`` (the method's hot path)."""
    if len(args) != 2 or (kwargs and kwargs != {"order": "C"}):
        return NotImplemented
    x = args[0]
    if type(x) is not BatchedTensor or x._level is not level:
        return NotImplemented
    res = reshape_view(x, args[1])
    return NotImplemented if res is None else res


@batch_rule(np.reshape, fast=_reshape_fast)
def reshape_rule(a, a_bdim, /, shape, order="C", *, copy=None):
    if _normalise_order(order) == "K":
        raise ValueError("order 'K' is not permitted for reshaping")
    lshape = logical_shape(a, a_bdim)
    target = resolve_shape(shape, math.prod(lshape))
    try:
        return _batched_reshape(a, a_bdim, target, order, copy)
    except ValueError as e:
        if copy is False and "copy" in str(e):
            raise ValueError(
                f"{e} Under vmap the examples are slices of one batched array, and this reshape "
                f"of each example cannot be a view into that layout (an example stored on its "
                f"own might allow one). Use copy=None to let it copy.") from None
        raise


def _ravel_copies(x, bdim, order) -> bool:
    """Whether NumPy's ravel of one example is a new array rather than a view (PyArray_Ravel):
    'C' / 'F' give a view only of a C / F contiguous example ('A' is 'F' for an example that is
    F and not C contiguous), 'K' also of one that is contiguous in another axis order with
    positive strides. A reshape of the batch can be a view where that of one example is not
    (``np.diagonal(x).ravel()``), so the rule must copy then: a later write into ``x`` would
    otherwise show through the result."""
    st = example_strides(x, bdim)
    if st is None:
        return False  # a backend without strides (the ONNX recorder) has no views to mind
    shape = logical_shape(x, bdim)
    item = x.dtype.itemsize
    c, f = is_contiguous(shape, st, item, False), is_contiguous(shape, st, item, True)
    order = _normalise_order(order)
    if order == "A":
        order = "F" if f and not c else "C"
    if order == "C":
        return not c
    if order == "F":
        return not f
    if c or f:
        return False
    expected = item  # 'K': the strides, smallest first, must tile memory without gaps
    for stride, d in sorted(((s, d) for s, d in zip(st, shape) if d != 1), key=lambda p:
                            abs(p[0])):
        if stride != expected:
            return True
        expected *= d
    return False


@batch_rule(np.ravel)
def ravel_rule(a, a_bdim, order="C"):
    size = math.prod(logical_shape(a, a_bdim))
    copy = True if _ravel_copies(a, a_bdim, order) else None
    if _normalise_order(order) == "K":
        perm = _keep_order_perm(a, a_bdim)
        x = move_bdim_to_front(a, a_bdim)
        if perm is not None:
            x = np.transpose(x, (0,) + tuple(p + 1 for p in perm))
        return _batched_reshape(x, 0, (size,), "C", copy)
    return _batched_reshape(a, a_bdim, (size,), order, copy)


# ---- axis permutations --------------------------------------------------------------------------
def _transpose_fast(level, args, kwargs):
    """``np.transpose(x)`` (all axes reversed): ``tensor.transpose_view``, as ``x.T``."""
    x = args[0] if len(args) == 1 else None
    if kwargs or type(x) is not BatchedTensor or x._level is not level:
        return NotImplemented
    res = transpose_view(x)
    return NotImplemented if res is None else res


@batch_rule(np.transpose, fast=_transpose_fast)
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


def matrix_transpose_rule(x, x_bdim, /):
    if x.ndim - 1 < 2:
        raise ValueError(f"Input array must be at least 2-dimensional, but it is {x.ndim - 1}")
    return np.swapaxes(move_bdim_to_front(x, x_bdim), -1, -2), 0


# NumPy 2.4 has two function objects (np.matrix_transpose, np.linalg.matrix_transpose).
for _op in {np.matrix_transpose, np.linalg.matrix_transpose}:
    batch_rule(_op)(matrix_transpose_rule)


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


@batch_rule(np.rollaxis)
def rollaxis_rule(a, a_bdim, axis, start=0):
    n = a.ndim - 1
    axis = wrap_axis(axis, n)
    if start < 0:
        start += n
    if not 0 <= start < n + 1:
        raise AxisError(f"'start' arg requires {-n} <= start < {n + 1}")
    if axis < start:
        start -= 1
    if axis == start:
        return a, a_bdim
    axes = [ax for ax in range(n) if ax != axis]
    axes.insert(start, axis)
    return np.transpose(move_bdim_to_front(a, a_bdim), (0,) + tuple(ax + 1 for ax in axes)), 0


# ---- adding and removing axes -------------------------------------------------------------------
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


# Where np.atleast_{1,2,3}d put the new axes of a rank-r example (NumPy's placement).
_ATLEAST_AXES: dict[int, dict[int, tuple[int, ...]]] = {
    1: {0: (0,)},
    2: {0: (0, 1), 1: (0,)},
    3: {0: (0, 1, 2), 1: (0, 2), 2: (2,)},
}


def atleast_front(x, bdim, n: int):
    """Batch-first view of one batched argument of np.atleast_{n}d, NumPy's axes added."""
    x = move_bdim_to_front(x, bdim)
    axes = _ATLEAST_AXES[n].get(x.ndim - 1)
    return x if axes is None else np.expand_dims(x, tuple(ax + 1 for ax in axes))


def _atleast_rule(op, n: int):
    def rule(*arys, arys_bdims):
        res = [(atleast_front(a, b, n), 0) if b is not None else (op(a), None)
               for a, b in zip(arys, arys_bdims)]
        return res[0] if len(res) == 1 else tuple(res)

    rule.__name__ = f"atleast_{n}d_rule"
    return batch_rule(op)(rule)


atleast_1d_rule = _atleast_rule(np.atleast_1d, 1)
atleast_2d_rule = _atleast_rule(np.atleast_2d, 2)
atleast_3d_rule = _atleast_rule(np.atleast_3d, 3)


# ---- broadcasting -------------------------------------------------------------------------------
@batch_rule(np.broadcast_to)
def broadcast_to_rule(array, array_bdim, shape, subok=False):
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    x = pad_to_rank(move_bdim_to_front(array, array_bdim), len(shape))
    if x.ndim - 1 > len(shape):
        raise ValueError("input operand has more dimensions than allowed by the axis remapping")
    return np.broadcast_to(x, (x.shape[0],) + shape, subok=subok), 0


@batch_rule(sliding_window_view)
def sliding_window_view_rule(x, x_bdim, window_shape, axis=None, *, subok=False,
                             writeable=False):
    """The windows of every example at once: the batch axis in front, the example's axes
    shifted past it. A view, read-only unless ``writeable=True``, as NumPy's. NumPy's own
    argument errors come from the same call on a stride-0 stand-in of one example (it
    allocates nothing), so that they speak of the example's dimensions."""
    v = move_bdim_to_front(x, x_bdim)
    example = np.broadcast_to(np.zeros((), dtype=v.dtype), v.shape[1:])
    sliding_window_view(example, window_shape, axis)
    window = tuple(window_shape) if np.iterable(window_shape) else (window_shape,)
    if axis is None:
        axes = tuple(range(1, v.ndim))
    else:
        axes = tuple(a + 1 for a in normalize_axis_tuple(axis, v.ndim - 1,
                                                           allow_duplicate=True))
    return sliding_window_view(v, window, axes, subok=subok, writeable=writeable), 0


@batch_rule(stride_tricks.as_strided)
def as_strided_rule(x, x_bdim, shape=None, strides=None, subok=False, writeable=True, **later):
    """Every example's view at once: the batch axis in front with its own stride, then the
    example's ``shape`` and ``strides``, which code computes from ``x.strides`` (one example's,
    as the loop sees them). That is the loop's view where the batch holds each example in the
    layout the loop gives it, as it holds a vmap input's (the loop's example is a view of it)
    or a value made batch first. A value made inside the function with the batch axis inside
    its examples' memory (``x * 2`` of an input mapped along its last axis) holds them
    interleaved, while each example of the loop owns its memory: no view of the batch reads
    what the loop's would, so the function runs per example (a ``LayoutError``).

    ``as_strided`` is called through ``numpy.lib.stride_tricks``, where it is the stand-in
    that batches again at an outer level while a vmap runs (``foreign.install``)."""
    found = example_layout(x)
    if found is None:
        raise BatchingError("np.lib.stride_tricks.as_strided: this backend's arrays have no "
                            "strides; use np.lib.stride_tricks.sliding_window_view or "
                            "indexing instead")
    own = not is_input_memory(innermost(x))
    example = drop_batch_axis(*found, x_bdim, own)
    in_batch = drop_batch_axis(*found, x_bdim, False)
    if example != in_batch:
        raise LayoutError("np.lib.stride_tricks.as_strided: the examples of this value lie "
                          "interleaved in the batch's memory, where each example of the loop "
                          "owns its memory; it runs per example")
    shape = example[0] if shape is None else tuple(shape)
    strides = example[1] if strides is None else tuple(strides)
    if len(shape) != len(strides):
        raise ValueError("mismatch in length of strides and shape")
    v = move_bdim_to_front(x, x_bdim)
    # (``later``: keywords of NumPy versions after 2.4, ``check_bounds=`` of 2.5, which NumPy
    # checks on the whole batch's view)
    return stride_tricks.as_strided(v, (v.shape[0],) + shape, (found[1][x_bdim],) + strides,
                                    subok=subok, writeable=writeable, **later), 0


def broadcast_examples(values, bdims, shape: tuple, n: int, subok=False) -> list:
    """``np.broadcast_arrays`` of every example to ``shape``: ``(out, out_bdim)`` per value.

    NumPy's own ``broadcast_arrays`` runs on the physical values (the batched ones batch first
    and padded, broadcast to ``(n,) + shape``; the plain ones to ``shape``), so each result is
    what NumPy gives one example: the value itself where it has that shape already, else a
    view that is writeable where the value is (and warns when written, NumPy's deprecation).
    ``np.broadcast_to`` would make them read-only."""
    front = [pad_to_rank(move_bdim_to_front(v, b), len(shape))
             for v, b in zip(values, bdims) if b is not None]
    plain = [v for v, b in zip(values, bdims) if b is None]
    like = innermost(front[0]) if front else None

    def to(vals, full):  # a stand-in of the full shape makes every value broadcast to it
        stand_in = np.broadcast_to(np.empty((), dtype=bool, like=like), full)
        return iter(np.broadcast_arrays(*vals, stand_in, subok=subok)[:-1])

    got_b = to(front, (n,) + shape) if front else iter(())
    got_p = to(plain, shape) if plain else iter(())
    return [(next(got_b), 0) if b is not None else (next(got_p), None) for b in bdims]


@batch_rule(np.broadcast_arrays)
def broadcast_arrays_rule(*args, args_bdims, subok=False):
    shapes = [logical_shape(a, b) for a, b in zip(args, args_bdims)]
    shape = np.broadcast_shapes(*shapes)
    n = batch_size_of(args, args_bdims)
    return tuple(broadcast_examples(args, args_bdims, shape, n, subok))


# ---- reversing, rotating, rolling ---------------------------------------------------------------
@batch_rule(np.flip)
def flip_rule(m, m_bdim, axis=None):
    nd = m.ndim - 1
    axes = range(nd) if axis is None else wrap_axes(axis, nd)
    if nd == 0:  # NumPy indexes a 0-d array with (): a scalar, a copy that later writes miss
        return np.copy(m), m_bdim
    return np.flip(m, tuple(physical_axis(ax, m_bdim) for ax in axes)), m_bdim


@batch_rule(np.fliplr)
def fliplr_rule(m, m_bdim):
    if m.ndim - 1 < 2:
        raise ValueError("Input must be >= 2-d.")
    return np.flip(m, physical_axis(1, m_bdim)), m_bdim


@batch_rule(np.flipud)
def flipud_rule(m, m_bdim):
    if m.ndim - 1 < 1:
        raise ValueError("Input must be >= 1-d.")
    return np.flip(m, physical_axis(0, m_bdim)), m_bdim


@batch_rule(np.rot90)
def rot90_rule(m, m_bdim, k=1, axes=(0, 1)):
    nd = m.ndim - 1
    axes = tuple(axes)
    if len(axes) != 2:
        raise ValueError("len(axes) must be 2.")
    if axes[0] == axes[1] or abs(axes[0] - axes[1]) == nd:
        raise ValueError("Axes must be different.")
    if not (-nd <= axes[0] < nd and -nd <= axes[1] < nd):
        raise ValueError(f"Axes={axes} out of range for array of ndim={nd}.")
    phys = tuple(physical_axis(ax % nd, m_bdim) for ax in axes)
    return np.rot90(m, k, phys), m_bdim


@batch_rule(np.roll)
def roll_rule(a, a_bdim, shift, axis=None):
    x = move_bdim_to_front(a, a_bdim)
    if axis is None:
        flat = np.reshape(x, (x.shape[0], math.prod(x.shape[1:])))
        # Several shifts on the one flat axis add up, as they do in np.roll itself.
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


# ---- elementwise views and casts ----------------------------------------------------------------
def _elementwise_keep_bdim(op):
    @batch_rule(op)
    def rule(val, val_bdim):
        return op(val), val_bdim

    rule.__name__ = f"{op.__name__}_rule"
    return rule


real_rule = _elementwise_keep_bdim(np.real)
imag_rule = _elementwise_keep_bdim(np.imag)


@batch_rule(np.astype)
def astype_rule(x, x_bdim, dtype, /, *, copy=True, device=None):
    if is_plain_array(x):
        return np.astype(x, dtype, copy=copy, device=device), x_bdim
    # np.astype accepts only NumPy arrays; other backends (and outer levels) have the method.
    return x.astype(dtype, copy=copy), x_bdim


@batch_rule(ndarray_astype)
def ndarray_astype_rule(x, x_bdim, dtype, order="K", casting="unsafe", copy=True):
    return ndarray_astype(x, dtype, order=order, casting=casting, copy=copy), x_bdim


@batch_rule(np.copy)
def copy_rule(a, a_bdim, order="K", subok=False):
    return np.copy(a, order=order, subok=subok), a_bdim


__all__ = ["resolve_shape", "atleast_front", "example_layout", "example_strides",
           "drop_batch_axis", "is_contiguous", "broadcast_examples"]
