"""Views and reshapes: reshape ravel transpose moveaxis swapaxes expand_dims squeeze broadcast_to
flip roll diagonal real imag matrix_transpose copy astype rollaxis fliplr flipud rot90
atleast_1d/2d/3d broadcast_arrays sliding_window_view as_strided, np.shape/ndim/size, and the
ndarray methods routed to them."""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from batchtensor.tensor import ndarray_astype

from .core import OpInfo, SampleInput
from .samples import COMPLEX, make_array

S = SampleInput
F64 = (np.float64,)
F64_I32 = (np.float64, np.int32)
F64_C128 = (np.float64, np.complex128)


def _a(rng, shape, dtype, **kw):
    return make_array(rng, shape, dtype, **kw)


# ---- reshape / ravel ----------------------------------------------------------------------------
def reshape_samples(rng, dtype):
    yield S((_a(rng, (3, 4), dtype), (4, 3)), {}, "2-d -> 2-d")
    yield S((_a(rng, (3, 4), dtype), (-1,)), {}, "-1")
    yield S((_a(rng, (2, 3, 4), dtype), (4, -1)), {"order": "F"}, "order=F with -1")
    yield S((_a(rng, (3, 4), dtype, noncontiguous=True), (2, 6)), {}, "non-contiguous")
    yield S((_a(rng, (3, 4), dtype, noncontiguous=True), (6, 2)), {"order": "F"},
            "non-contiguous order=F")
    yield S((_a(rng, (), dtype), (1, 1)), {}, "0-d -> (1, 1)")
    yield S((_a(rng, (1, 1), dtype), ()), {}, "-> 0-d")
    yield S((_a(rng, (2, 0, 3), dtype), (0, 6)), {}, "size 0")
    yield S((_a(rng, (2, 0, 3), dtype), (3, -1)), {}, "size 0 with -1")
    yield S((_a(rng, (2, 0, 3), dtype), (-1, 0)), {}, "size 0, -1 undetermined")
    yield S((_a(rng, (3, 4), dtype), 12), {}, "int shape")
    yield S((_a(rng, (3, 4), dtype), (3, 4)), {"order": "A"}, "order=A, C-ordered")
    yield S((_a(rng, (3, 4), dtype), (2, 6)), {"order": "K"}, "order=K, C-ordered")
    yield S((_a(rng, (3, 4), dtype), (5, -1)), {}, "bad -1")
    yield S((_a(rng, (3, 4), dtype), (5, 2)), {}, "bad size")
    yield S((_a(rng, (3, 4), dtype), (-1, -1)), {}, "two -1")
    yield S((_a(rng, (3, 4), dtype), (2, 6)), {"copy": True}, "copy=True")
    # Splitting an axis is a view whatever the batch layout (merging axes may not be: the
    # examples are slices of one batched array; tests/test_shape.py checks that error).
    yield S((_a(rng, (12,), dtype), (3, 4)), {"copy": False}, "copy=False (a view)")
    yield S((_a(rng, (2, 6), dtype), (2, 3, 2)), {"copy": False, "order": "F"},
            "copy=False order=F")
    yield S((_a(rng, (3, 4), dtype), (4, 3)), {"order": "X"}, "bad order")


def _fortran_example(x):
    """A Fortran-ordered example, dense in every vmap variant (np.copy compacts gaps)."""
    return np.transpose(np.copy(x))


def _reshape_of_transposed(x, order):
    return np.reshape(_fortran_example(x), (-1,), order=order)


def _ravel_of_transposed(x, order):
    return np.ravel(_fortran_example(x), order)


def reshape_layout_samples(rng, dtype):
    for order in ("A", "a", "C", "F", "K"):
        yield S((_a(rng, (3, 4), dtype), order), {}, f"order={order} of an F-ordered example")


def ravel_samples(rng, dtype):
    for shape in [(), (0,), (5,), (3, 4), (2, 0, 3)]:
        yield S((_a(rng, shape, dtype),), {}, f"{shape}")
    yield S((_a(rng, (2, 3, 4), dtype),), {"order": "F"}, "order=F")
    yield S((_a(rng, (3, 4), dtype, noncontiguous=True),), {"order": "F"}, "non-contiguous F")
    yield S((_a(rng, (3, 4), dtype),), {"order": "A"}, "order=A")
    yield S((_a(rng, (3, 4), dtype, noncontiguous=True),), {"order": "K"}, "order=K")


def ravel_layout_samples(rng, dtype):
    for order in ("A", "K", "k", "C", "F", None):
        yield S((_a(rng, (3, 4), dtype), order), {}, f"order={order} of an F-ordered example")


def _ravel_k_of(view):
    def call(x):
        return np.ravel(view(x), order="K")
    return call


def ravel_k_samples(rng, dtype):
    yield S((_a(rng, (3, 4), dtype),), {}, "(3, 4)")
    yield S((_a(rng, (2, 3, 4), dtype),), {}, "(2, 3, 4)")
    yield S((_a(rng, (2, 1, 4), dtype),), {}, "size-1 axis")


# ---- axis permutations --------------------------------------------------------------------------
def transpose_samples(rng, dtype):
    yield S((_a(rng, (), dtype),), {}, "0-d")
    yield S((_a(rng, (5,), dtype),), {}, "1-d")
    yield S((_a(rng, (3, 4), dtype),), {}, "2-d")
    yield S((_a(rng, (2, 3, 4), dtype),), {}, "3-d")
    yield S((_a(rng, (2, 3, 4), dtype), (1, -1, 0)), {}, "axes with negative")
    yield S((_a(rng, (2, 0, 4), dtype), [2, 0, 1]), {}, "axes list, size 0")
    yield S((_a(rng, (3, 4), dtype, noncontiguous=True),), {"axes": (1, 0)}, "axes= kw")
    yield S((_a(rng, (5,), dtype), 0), {}, "int axes on 1-d")
    yield S((_a(rng, (2, 3, 4), dtype), (0, 0, 1)), {}, "repeated axis")
    yield S((_a(rng, (2, 3, 4), dtype), (0, 1)), {}, "too few axes")
    yield S((_a(rng, (2, 3), dtype), (0, 2)), {}, "axis out of range")


def moveaxis_samples(rng, dtype):
    yield S((_a(rng, (2, 3, 4), dtype), 0, -1), {}, "0 -> -1")
    yield S((_a(rng, (2, 3, 4), dtype), -1, 0), {}, "-1 -> 0")
    yield S((_a(rng, (2, 3, 4), dtype), (0, 1), (-1, -2)), {}, "tuples")
    yield S((_a(rng, (2, 0, 4), dtype), [1], [0]), {}, "lists, size 0")
    yield S((_a(rng, (3, 4), dtype, noncontiguous=True), 0, 1), {}, "non-contiguous")
    yield S((_a(rng, (3, 4), dtype), 2, 0), {}, "source out of range")
    yield S((_a(rng, (3, 4), dtype), (0, 1), (0,)), {}, "length mismatch")
    yield S((_a(rng, (3, 4), dtype), (0, 0), (0, 1)), {}, "repeated source")
    yield S((_a(rng, (), dtype), 0, 0), {}, "0-d")


def swapaxes_samples(rng, dtype):
    yield S((_a(rng, (3, 4), dtype), 0, 1), {}, "2-d")
    yield S((_a(rng, (2, 3, 4), dtype), -1, 0), {}, "negative")
    yield S((_a(rng, (2, 0, 4), dtype), 1, 1), {}, "same axis, size 0")
    yield S((_a(rng, (3, 4), dtype, noncontiguous=True), 1, 0), {}, "non-contiguous")
    yield S((_a(rng, (3, 4), dtype), 0, 2), {}, "out of range")
    yield S((_a(rng, (5,), dtype), 0, -1), {}, "1-d")


def rollaxis_samples(rng, dtype):
    yield S((_a(rng, (2, 3, 4), dtype), 2), {}, "axis 2 to front")
    yield S((_a(rng, (2, 3, 4), dtype), 0, 3), {}, "to the end")
    yield S((_a(rng, (2, 3, 4), dtype), -1, 1), {}, "negative axis")
    yield S((_a(rng, (2, 3, 4), dtype), 1, -1), {}, "negative start")
    yield S((_a(rng, (2, 3, 4), dtype), 1, 1), {}, "no-op")
    yield S((_a(rng, (2, 0, 4), dtype), 1, 2), {}, "no-op after adjustment, size 0")
    yield S((_a(rng, (2, 3), dtype), 0, 3), {}, "start out of range")
    yield S((_a(rng, (2, 3), dtype), 0, -3), {}, "start too negative")
    yield S((_a(rng, (2, 3), dtype), 2), {}, "axis out of range")


def matrix_transpose_samples(rng, dtype):
    yield S((_a(rng, (3, 4), dtype),), {}, "2-d")
    yield S((_a(rng, (2, 3, 4), dtype),), {}, "stacked")
    yield S((_a(rng, (2, 0, 4), dtype, noncontiguous=True),), {}, "size 0, non-contiguous")
    yield S((_a(rng, (4,), dtype),), {}, "1-d raises")


# ---- adding / removing axes ---------------------------------------------------------------------
def expand_dims_samples(rng, dtype):
    yield S((_a(rng, (), dtype), 0), {}, "0-d")
    yield S((_a(rng, (3, 4), dtype), 1), {}, "middle")
    yield S((_a(rng, (3, 4), dtype), -1), {}, "negative")
    yield S((_a(rng, (3, 4), dtype), (0, -1)), {}, "tuple")
    yield S((_a(rng, (2, 0), dtype), [3, 1]), {}, "list, size 0")
    yield S((_a(rng, (3, 4), dtype), 3), {}, "out of range")
    yield S((_a(rng, (3, 4), dtype), (1, 1)), {}, "repeated axis")


def squeeze_samples(rng, dtype):
    yield S((_a(rng, (1, 3, 1), dtype),), {}, "all")
    yield S((_a(rng, (1, 3, 1), dtype),), {"axis": -1}, "axis=-1")
    yield S((_a(rng, (1, 3, 1), dtype), (0, 2)), {}, "tuple")
    yield S((_a(rng, (1, 0, 1), dtype),), {"axis": 0}, "size 0")
    yield S((_a(rng, (), dtype),), {}, "0-d")
    yield S((_a(rng, (3, 4), dtype),), {}, "nothing to squeeze")
    yield S((_a(rng, (1, 3), dtype),), {"axis": 1}, "axis of size 3 raises")
    yield S((_a(rng, (1, 3), dtype),), {"axis": 2}, "out of range")


def broadcast_to_samples(rng, dtype):
    yield S((_a(rng, (), dtype), (2, 3)), {}, "0-d")
    yield S((_a(rng, (3,), dtype), (2, 3)), {}, "prepend")
    yield S((_a(rng, (2, 1), dtype), (2, 4)), {}, "stretch")
    yield S((_a(rng, (3,), dtype), 3), {}, "int shape")
    yield S((_a(rng, (1,), dtype), (2, 0)), {}, "to size 0")
    yield S((_a(rng, (3,), dtype), (2, 4)), {}, "incompatible")
    yield S((_a(rng, (2, 3), dtype), (3,)), {}, "fewer dims")
    yield S((_a(rng, (3,), dtype), (-1, 3)), {}, "negative")


def sliding_window_view_samples(rng, dtype):
    yield S((_a(rng, (6,), dtype), 3), {}, "1-d, int window")
    yield S((_a(rng, (4, 5), dtype), (2, 3)), {}, "2-d, a window per axis")
    yield S((_a(rng, (4, 5), dtype), 2), {"axis": 0}, "one axis")
    yield S((_a(rng, (4, 5), dtype), (2,)), {"axis": -1}, "negative axis")
    yield S((_a(rng, (4, 5), dtype), (2, 2)), {"axis": (1, 1)}, "an axis twice")
    yield S((_a(rng, (3, 4), dtype), 2), {"axis": 1, "writeable": True}, "writeable")
    yield S((_a(rng, (5,), dtype), 0), {}, "empty window")
    yield S((_a(rng, (0, 4), dtype), (0, 2)), {}, "size-0 axis")
    yield S((_a(rng, (), dtype), ()), {}, "0-d")
    yield S((_a(rng, (3,), dtype), 4), {}, "window larger than the axis")
    yield S((_a(rng, (3, 4), dtype), 2), {}, "too few window dims for axis=None")
    yield S((_a(rng, (3,), dtype), -1), {}, "negative window")


def _as_strided(x, view, *args, **kwargs):
    """``as_strided`` as code calls it: shape and strides computed from ``x.strides`` (one
    example's as the loop sees them), through the module, where a vmap intercepts it."""
    shape, strides = _STRIDED_VIEWS[view](x, *args)
    return np.lib.stride_tricks.as_strided(x, shape, strides, **kwargs)


def _frames(x, n, hop):
    count = 1 + (x.shape[-1] - n) // hop
    step = x.strides[-1]
    return x.shape[:-1] + (count, n), x.strides[:-1] + (step * hop, step)


_STRIDED_VIEWS = {
    "frames": _frames,
    "same": lambda x: (None, None),
    "transposed": lambda x: (x.shape[::-1], x.strides[::-1]),
    "diagonal": lambda x: ((min(x.shape),), (sum(x.strides),)),
    "repeated": lambda x, k: ((k,) + x.shape, (0,) + x.strides),
    "too few strides": lambda x: (x.shape, x.strides[1:]),
}


def as_strided_samples(rng, dtype):
    yield S((_a(rng, (9,), dtype), "frames", 3, 2), {}, "overlapping frames of 1-d")
    yield S((_a(rng, (2, 7), dtype), "frames", 4, 1), {}, "frames of each row")
    yield S((_a(rng, (3, 4), dtype), "same"), {}, "shape and strides left out")
    yield S((_a(rng, (3, 4), dtype), "transposed"), {}, "strides reversed")
    yield S((_a(rng, (3, 4), dtype), "diagonal"), {}, "the diagonal by the summed strides")
    yield S((_a(rng, (), dtype), "repeated", 3), {}, "0-d, repeated with stride 0")
    yield S((_a(rng, (2, 3), dtype), "repeated", 2), {"writeable": False}, "writeable=False")
    yield S((_a(rng, (0, 4), dtype), "frames", 2, 2), {}, "size-0 axis")
    yield S((_a(rng, (4,), dtype), "repeated", 0), {}, "a size-0 view")
    yield S((_a(rng, (3, 4), dtype), "too few strides"), {}, "shape and strides of two lengths")


def atleast_samples(rng, dtype):
    for shape in [(), (4,), (2, 3), (2, 0, 3), (1, 2, 3, 1)]:
        yield S((_a(rng, shape, dtype),), {}, f"{shape}")
    yield S((_a(rng, (), dtype), _a(rng, (3,), dtype), _a(rng, (2, 3), dtype)), {},
            "several")


def broadcast_arrays_samples(rng, dtype):
    yield S((_a(rng, (3,), dtype), _a(rng, (2, 1), dtype)), {}, "two")
    yield S((_a(rng, (), dtype), _a(rng, (2, 3), dtype), _a(rng, (3,), dtype)), {}, "three")
    yield S((_a(rng, (2, 3), dtype),), {}, "one")
    yield S((_a(rng, (0, 1), dtype), _a(rng, (3,), dtype)), {}, "size 0")
    yield S((_a(rng, (2, 3), dtype), _a(rng, (2, 3), dtype)), {}, "same shape")
    yield S((_a(rng, (3,), dtype), 5), {}, "with a Python scalar")
    yield S((_a(rng, (3,), dtype), _a(rng, (4,), dtype)), {}, "incompatible")


# ---- reversing and rotating ---------------------------------------------------------------------
def flip_samples(rng, dtype):
    yield S((_a(rng, (5,), dtype),), {}, "1-d all")
    yield S((_a(rng, (3, 4), dtype),), {"axis": 1}, "axis=1")
    yield S((_a(rng, (2, 3, 4), dtype),), {"axis": (0, -1)}, "tuple")
    yield S((_a(rng, (2, 0, 4), dtype),), {"axis": -2}, "size 0")
    yield S((_a(rng, (), dtype),), {}, "0-d")
    yield S((_a(rng, (3, 4), dtype),), {"axis": 2}, "out of range")


def fliplr_samples(rng, dtype):
    yield S((_a(rng, (3, 4), dtype),), {}, "2-d")
    yield S((_a(rng, (2, 3, 4), dtype, noncontiguous=True),), {}, "3-d")
    yield S((_a(rng, (2, 0), dtype),), {}, "size 0")
    yield S((_a(rng, (3,), dtype),), {}, "1-d raises")


def flipud_samples(rng, dtype):
    yield S((_a(rng, (5,), dtype),), {}, "1-d")
    yield S((_a(rng, (3, 4), dtype, noncontiguous=True),), {}, "2-d")
    yield S((_a(rng, (0, 2), dtype),), {}, "size 0")
    yield S((_a(rng, (), dtype),), {}, "0-d raises")


def rot90_samples(rng, dtype):
    for k in (0, 1, 2, 3, -1, 5):
        yield S((_a(rng, (3, 4), dtype), k), {}, f"k={k}")
    yield S((_a(rng, (2, 3, 4), dtype),), {"k": 1, "axes": (2, 0)}, "axes=(2, 0)")
    yield S((_a(rng, (2, 3, 4), dtype), 1, (-1, 1)), {}, "negative axes")
    yield S((_a(rng, (2, 0, 4), dtype),), {"axes": (1, 2)}, "size 0")
    yield S((_a(rng, (3, 4), dtype),), {"axes": (0, 0)}, "same axes")
    yield S((_a(rng, (3, 4), dtype),), {"axes": (0, -2)}, "same axes via negative")
    yield S((_a(rng, (3, 4), dtype),), {"axes": (0, 2)}, "out of range")
    yield S((_a(rng, (3, 4), dtype),), {"axes": (0, 1, 2)}, "three axes")
    yield S((_a(rng, (4,), dtype),), {}, "1-d raises")


def roll_samples(rng, dtype):
    yield S((_a(rng, (5,), dtype), 2), {}, "1-d")
    yield S((_a(rng, (3, 4), dtype), -1), {}, "axis=None flattens")
    yield S((_a(rng, (3, 4), dtype), [1, 2]), {}, "several shifts, axis=None")
    yield S((_a(rng, (3, 4), dtype), 1), {"axis": -1}, "axis=-1")
    yield S((_a(rng, (2, 3, 4), dtype), (1, -2)), {"axis": (0, 2)}, "tuples")
    yield S((_a(rng, (2, 3, 4), dtype), (1, 2)), {"axis": 1}, "shifts broadcast on one axis")
    yield S((_a(rng, (2, 0, 4), dtype), 3), {"axis": 1}, "size 0")
    yield S((_a(rng, (), dtype), 1), {}, "0-d")
    yield S((_a(rng, (3, 4), dtype, noncontiguous=True), 5), {"axis": 0}, "non-contiguous")
    yield S((_a(rng, (3, 4), dtype), 1), {"axis": 2}, "out of range")
    yield S((_a(rng, (3, 4), dtype), (1, 2, 3)), {"axis": (0, 1)}, "mismatched")


def diagonal_samples(rng, dtype):
    yield S((_a(rng, (3, 4), dtype),), {}, "2-d")
    yield S((_a(rng, (3, 4), dtype), 1), {}, "offset 1")
    yield S((_a(rng, (3, 4), dtype), -2), {}, "offset -2")
    yield S((_a(rng, (3, 4), dtype), 5), {}, "offset past the end")
    yield S((_a(rng, (2, 3, 4), dtype),), {"axis1": -1, "axis2": 0}, "axes")
    yield S((_a(rng, (2, 0, 4), dtype),), {"axis1": 1, "axis2": 2}, "size 0")
    yield S((_a(rng, (4,), dtype),), {}, "1-d raises")
    yield S((_a(rng, (3, 4), dtype),), {"axis1": 1, "axis2": -1}, "same axes raise")
    yield S((_a(rng, (3, 4), dtype),), {"axis2": 2}, "out of range")


def complex_part_samples(rng, dtype):
    for shape in [(), (0,), (3, 4)]:
        yield S((_a(rng, shape, dtype),), {}, f"{shape}")
    yield S((_a(rng, (3, 4), dtype, noncontiguous=True),), {}, "non-contiguous")


def copy_samples(rng, dtype):
    for shape in [(), (0, 2), (3, 4)]:
        yield S((_a(rng, shape, dtype),), {}, f"{shape}")
    for order in ("C", "F", "A", "K"):
        yield S((_a(rng, (2, 3, 4), dtype, noncontiguous=True),), {"order": order},
                f"order={order}")


def astype_samples(rng, dtype):
    for target in (np.float32, np.int16, np.complex128, np.bool_):
        yield S((_a(rng, (3, 4), dtype), target), {}, f"-> {np.dtype(target)}")
    yield S((_a(rng, (), dtype), np.float64), {"copy": False}, "0-d copy=False")
    yield S((_a(rng, (2, 0), dtype), "int8"), {}, "size 0, dtype string")


def astype_method_samples(rng, dtype):
    yield from astype_samples(rng, dtype)
    yield S((_a(rng, (3, 4), dtype), np.int32), {"casting": "safe"}, "casting=safe")
    yield S((_a(rng, (3, 4), dtype, noncontiguous=True), np.float32), {"order": "F"},
            "order=F")


def _astype(x, *args, **kwargs):
    return x.astype(*args, **kwargs)


def astype_targets_samples(rng, dtype):
    a = lambda *s: make_array(rng, s, dtype)  # noqa: E731
    for target in (np.float32, np.int64, np.bool_, np.complex128):
        yield SampleInput((a(3, 4), target), {}, f"to {np.dtype(target)}")
    yield SampleInput((a(), np.int32), {}, "0-d")
    yield SampleInput((a(3, 4), dtype), {"copy": False}, "copy=False")
    yield SampleInput((a(3, 4), np.int8), {"casting": "safe"}, "casting=safe")


def copy_layouts_samples(rng, dtype):
    a = lambda *s: make_array(rng, s, dtype)  # noqa: E731
    yield SampleInput((a(3, 4),), {}, "2-d")
    yield SampleInput((a(),), {}, "0-d")
    yield SampleInput((a(3, 8)[:, ::2],), {"order": "F"}, "order=F")
    yield SampleInput((a(2, 0),), {}, "size 0")


def _meta_samples(rng, dtype):
    for shape in [(), (0,), (3, 4), (2, 0, 3)]:
        yield S((_a(rng, shape, dtype),), {}, f"{shape}")


def size_samples(rng, dtype):
    yield from _meta_samples(rng, dtype)
    yield S((_a(rng, (3, 4), dtype),), {"axis": -1}, "axis=-1")
    yield S((_a(rng, (2, 3, 4), dtype), (0, 2)), {}, "tuple axis")
    yield S((_a(rng, (2, 3, 4), dtype), (0, 0)), {}, "repeated axis")
    yield S((_a(rng, (3, 4), dtype),), {"axis": 2}, "out of range")


OPS = [
    OpInfo("reshape", np.reshape, reshape_samples, "rule", dtypes=F64_I32),
    OpInfo("reshape.layout", _reshape_of_transposed, reshape_layout_samples, "rule",
           covers=np.reshape),
    OpInfo("ravel", np.ravel, ravel_samples, "rule", dtypes=F64_C128),
    OpInfo("ravel.layout", _ravel_of_transposed, ravel_layout_samples, "rule", covers=np.ravel),
    OpInfo("ravel.K_flipped", _ravel_k_of(lambda x: np.flip(np.copy(x), 0)), ravel_k_samples,
           "rule", covers=np.ravel, notes="negative strides: K reads in index order"),
    OpInfo("ravel.K_moved", _ravel_k_of(lambda x: np.moveaxis(np.copy(x), 0, -1)),
           ravel_k_samples, "rule", covers=np.ravel),
    OpInfo("ravel.K_broadcast", _ravel_k_of(lambda x: np.broadcast_to(x[..., :1], x.shape)),
           ravel_k_samples, "rule", covers=np.ravel, notes="zero strides keep C order"),
    OpInfo("transpose", np.transpose, transpose_samples, "rule", dtypes=F64_I32 + (np.bool_,)),
    OpInfo("moveaxis", np.moveaxis, moveaxis_samples, "rule", dtypes=F64_I32),
    OpInfo("swapaxes", np.swapaxes, swapaxes_samples, "rule", dtypes=F64_C128),
    OpInfo("rollaxis", np.rollaxis, rollaxis_samples, "rule", dtypes=(np.int8,)),
    OpInfo("matrix_transpose", np.matrix_transpose, matrix_transpose_samples, "rule",
           dtypes=F64_I32),
    OpInfo("linalg.matrix_transpose", np.linalg.matrix_transpose, matrix_transpose_samples,
           "rule", notes="a different function object from np.matrix_transpose in NumPy 2.4"),
    OpInfo("expand_dims", np.expand_dims, expand_dims_samples, "rule",
           dtypes=(np.float64, np.bool_)),
    OpInfo("squeeze", np.squeeze, squeeze_samples, "rule", dtypes=(np.float64, np.bool_)),
    OpInfo("broadcast_to", np.broadcast_to, broadcast_to_samples, "rule", dtypes=F64_I32),
    OpInfo("broadcast_arrays", np.broadcast_arrays, broadcast_arrays_samples, "rule",
           dtypes=F64_I32),
    OpInfo("lib.stride_tricks.as_strided", _as_strided, as_strided_samples, "rule",
           covers=np.lib.stride_tricks.as_strided, dtypes=(np.float64, np.int32, np.bool_)),
    OpInfo("lib.stride_tricks.sliding_window_view", sliding_window_view,
           sliding_window_view_samples, "rule", dtypes=(np.float64, np.int32, np.bool_)),
    OpInfo("atleast_1d", np.atleast_1d, atleast_samples, "rule", dtypes=F64_C128),
    OpInfo("atleast_2d", np.atleast_2d, atleast_samples, "rule", dtypes=(np.int64,)),
    OpInfo("atleast_3d", np.atleast_3d, atleast_samples, "rule", dtypes=(np.bool_,)),
    OpInfo("flip", np.flip, flip_samples, "rule", dtypes=F64_I32),
    OpInfo("fliplr", np.fliplr, fliplr_samples, "rule", dtypes=(np.complex128,)),
    OpInfo("flipud", np.flipud, flipud_samples, "rule", dtypes=(np.uint8,)),
    OpInfo("rot90", np.rot90, rot90_samples, "rule", dtypes=F64_I32),
    OpInfo("roll", np.roll, roll_samples, "rule", dtypes=F64_I32),
    OpInfo("diagonal", np.diagonal, diagonal_samples, "rule", dtypes=F64_C128),
    OpInfo("real", np.real, complex_part_samples, "rule", dtypes=(np.complex128, np.float64)),
    OpInfo("imag", np.imag, complex_part_samples, "rule", dtypes=(np.complex64, np.float64)),
    OpInfo("copy", np.copy, copy_samples, "rule", dtypes=(np.float64, np.bool_)),
    OpInfo("astype", np.astype, astype_samples, "rule", dtypes=(np.float64, np.int64)),
    OpInfo("ndarray.astype.targets", _astype, astype_targets_samples, "rule",
           dtypes=(np.float64, np.int64), covers=ndarray_astype, unbatched_self=True),
    OpInfo("copy.layouts", np.copy, copy_layouts_samples, "rule", dtypes=(np.float64,)),
    OpInfo("ndim", np.ndim, _meta_samples, "rule"),
    OpInfo("shape", np.shape, _meta_samples, "rule"),
    OpInfo("size", np.size, size_samples, "rule"),
]


# ---- ndarray methods and attributes: routed to the same functions -------------------------------
def _method(name):
    def call(x, *args, **kwargs):
        return getattr(x, name)(*args, **kwargs)

    call.__name__ = f"ndarray.{name}"
    return call


def _attr(name):
    def get(x):
        return getattr(x, name)

    get.__name__ = f"ndarray.{name}"
    return get


def reshape_method_samples(rng, dtype):
    yield S((_a(rng, (3, 4), dtype), 4, 3), {}, "varargs")
    yield S((_a(rng, (3, 4), dtype), (2, -1)), {}, "tuple")
    yield S((_a(rng, (3, 4), dtype), -1), {}, "one int")
    yield S((_a(rng, (2, 3, 4), dtype), 4, 6), {"order": "F"}, "varargs order=F")
    yield S((_a(rng, (1,), dtype),), {}, "no shape: 0-d")
    yield S((_a(rng, (3, 4), dtype), 5, -1), {}, "bad varargs")


def transpose_method_samples(rng, dtype):
    yield S((_a(rng, (2, 3, 4), dtype),), {}, "none")
    yield S((_a(rng, (2, 3, 4), dtype), None), {}, "None")
    yield S((_a(rng, (2, 3, 4), dtype), 2, 0, 1), {}, "varargs")
    yield S((_a(rng, (2, 3, 4), dtype), (1, -1, 0)), {}, "tuple")
    yield S((_a(rng, (2, 3, 4), dtype), [0, 2, 1]), {}, "list")
    yield S((_a(rng, (2, 3, 4), dtype), 0, 0, 1), {}, "repeated axis")


def squeeze_method_samples(rng, dtype):
    yield S((_a(rng, (1, 3, 1), dtype),), {}, "all")
    yield S((_a(rng, (1, 3, 1), dtype), -1), {}, "positional axis")
    yield S((_a(rng, (1, 3, 1), dtype),), {"axis": (0, 2)}, "tuple")
    yield S((_a(rng, (1, 3), dtype), 1), {}, "axis of size 3 raises")


def ravel_method_samples(rng, dtype):
    yield S((_a(rng, (3, 4), dtype),), {}, "C")
    yield S((_a(rng, (2, 3, 4), dtype), "F"), {}, "F")
    yield S((_a(rng, (), dtype),), {}, "0-d")
    yield S((_a(rng, (2, 0), dtype), "A"), {}, "A, size 0")
    yield S((_a(rng, (3, 4), dtype, noncontiguous=True), "K"), {}, "K")


def copy_method_samples(rng, dtype):
    yield S((_a(rng, (3, 4), dtype),), {}, "default")
    yield S((_a(rng, (3, 4), dtype), "F"), {}, "F")
    yield S((_a(rng, (), dtype),), {"order": "A"}, "0-d A")


def attr_samples(min_ndim=0):
    def gen(rng, dtype):
        for shape in [(), (5,), (3, 4), (2, 0, 3), (2, 3, 4)]:
            if len(shape) >= min_ndim:
                yield S((_a(rng, shape, dtype),), {}, f"{shape}")
        if min_ndim:
            yield S((_a(rng, (5,), dtype),), {}, "ndim too small")
    return gen


def swapaxes_method_samples(rng, dtype):
    yield S((_a(rng, (2, 3, 4), dtype), 0, -1), {}, "negative")
    yield S((_a(rng, (3, 4), dtype), 0, 2), {}, "out of range")


def diagonal_method_samples(rng, dtype):
    yield S((_a(rng, (3, 4), dtype),), {}, "default")
    yield S((_a(rng, (2, 3, 4), dtype), 1, 2, 0), {}, "positional")
    yield S((_a(rng, (2, 3, 4), dtype),), {"offset": -1, "axis1": -1, "axis2": -2}, "keywords")


_METHODS = [
    ("reshape", reshape_method_samples, np.reshape, F64_I32),
    ("transpose", transpose_method_samples, np.transpose, F64),
    ("swapaxes", swapaxes_method_samples, np.swapaxes, F64),
    ("squeeze", squeeze_method_samples, np.squeeze, F64),
    ("ravel", ravel_method_samples, np.ravel, F64),
    ("flatten", ravel_method_samples, np.ravel, (np.float64, np.int16)),
    ("copy", copy_method_samples, np.copy, F64),
    ("astype", astype_method_samples, ndarray_astype, (np.float64, np.int64)),
    ("diagonal", diagonal_method_samples, np.diagonal, F64),
]
for _name, _gen, _fn, _dtypes in _METHODS:
    OPS.append(OpInfo(f"ndarray.{_name}", _method(_name), _gen, "rule", dtypes=_dtypes,
                      covers=_fn, unbatched_self=True))

_ATTRS = [
    ("T", attr_samples(), np.transpose, F64),
    ("mT", attr_samples(min_ndim=2), np.swapaxes, F64),
    ("real", attr_samples(), np.real, COMPLEX + (np.float32,)),
    ("imag", attr_samples(), np.imag, COMPLEX + (np.int64,)),
]
for _name, _gen, _fn, _dtypes in _ATTRS:
    OPS.append(OpInfo(f"ndarray.{_name}", _attr(_name), _gen, "rule", dtypes=_dtypes,
                      covers=_fn, unbatched_self=True))
