"""Small helpers shared by the lowerings."""

from __future__ import annotations

from typing import Any, cast

import numpy as np
from numpy.lib.array_utils import normalize_axis_tuple

from ..errors import UnsupportedOpError
from ..graph import BOOL, INT64
from ..recorder import TArray, current_graph
from ..symdim import SymDim

__all__ = ["BOOL", "INT64", "dtype_of", "ndim_of", "axes_of", "refuse", "given", "dims_of",
           "sub_record", "NoValue", "INT64_MIN", "INT64_MAX", "scalar_dtype"]

NoValue = np._NoValue
INT64_MIN = -(2 ** 63)
INT64_MAX = 2 ** 63 - 1


def given(v: Any) -> bool:
    return v is not None and v is not NoValue


def dtype_of(x: Any) -> Any:
    """The dtype NumPy's type resolution sees: arrays their dtype, Python int/float/complex the
    Python type (weak, NEP 50), a Python bool the bool dtype."""
    if isinstance(x, (TArray, np.ndarray, np.generic)):
        return x.dtype
    if isinstance(x, bool):
        return np.dtype(np.bool_)
    if type(x) is SymDim:
        return np.dtype(np.int64)
    if isinstance(x, (int, float, complex)):
        return type(x)
    raise UnsupportedOpError(f"{current_graph().op_name}: cannot export an argument of type "
                             f"{type(x).__name__}")


def scalar_dtype(x: Any) -> np.dtype:
    d = dtype_of(x)
    return np.dtype(d) if isinstance(d, np.dtype) else np.result_type(d(0))


def ndim_of(x: Any) -> int:
    return cast(int, getattr(x, "ndim", None) if hasattr(x, "ndim") else np.ndim(x))


def dims_of(x: Any) -> list:
    """Dims of ``x`` (ints and SymDims)."""
    if type(x) is TArray:
        return list(x.shape)
    return list(np.shape(x))


def axes_of(axis: Any, ndim: int) -> tuple:
    if axis is None:
        return tuple(range(ndim))
    return normalize_axis_tuple(axis, ndim)


def refuse(what: str) -> UnsupportedOpError:
    return UnsupportedOpError(f"{current_graph().op_name}: {what} cannot be exported")


def sub_record(fn, *args, **kwargs) -> Any:
    """Run ``fn`` (NumPy calls on TArrays, recorded as usual) from inside a lowering."""
    g = current_graph()
    saved = g.op_name, g.site
    try:
        return fn(*args, **kwargs)
    finally:
        g.op_name, g.site = saved


def along_axis(g, a: Any, axis: Any) -> tuple:
    """``(value, dims, axis)`` of ``a`` for an op along one axis: ``axis=None`` means along the
    flattened array (NumPy's sort/argsort/take_along_axis convention)."""
    x = g.val(a)
    dims = dims_of(a)
    if axis is None:
        size = 1
        for d in dims:
            size = size * d
        return g.reshape(x, [size]), [size], 0
    return x, dims, axes_of(axis, len(dims))[0]
