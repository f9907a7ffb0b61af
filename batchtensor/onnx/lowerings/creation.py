"""Array creation with batch-dependent shapes (static ones are folded to constants):
zeros ones empty full and their ``_like`` forms, arange (``Range``)."""

from __future__ import annotations

import numpy as np

from ..recorder import TArray, lowering
from ._common import NoValue, given, refuse

__all__: list = []


def _filled(value):
    def lower(g, out, *args, **kwargs):
        return g.fill(g.shape_tensor(out.dims), value, out.dtype)
    return lower


# np.empty's memory is unspecified: zeros are one valid content.
lowering(np.zeros, np.empty, np.zeros_like, np.empty_like, onnx=("ConstantOfShape",))(
    _filled(0))
lowering(np.ones, np.ones_like, onnx=("ConstantOfShape",))(_filled(1))


def _full(g, out, fill_value):
    if type(fill_value) is TArray and fill_value.name is not None:
        return g.expand(g.val(fill_value, out.dtype), out.dims)
    v = fill_value.v if type(fill_value) is TArray else fill_value
    if np.ndim(v) != 0:
        return g.expand(g.val(np.asarray(v), out.dtype), out.dims)
    return g.fill(g.shape_tensor(out.dims), np.asarray(v).astype(out.dtype), out.dtype)


@lowering(np.full, onnx=("ConstantOfShape", "Expand"))
def lower_full(g, out, shape, fill_value, dtype=None, order="C", **kwargs):
    return _full(g, out, fill_value)


@lowering(np.full_like, onnx=("ConstantOfShape", "Expand"))
def lower_full_like(g, out, a, fill_value, dtype=None, order="K", subok=True, shape=None,
                    **kwargs):
    return _full(g, out, fill_value)


@lowering(np.arange, onnx=("Range",))
def lower_arange(g, out, start_or_stop, stop=NoValue, step=NoValue, dtype=None, **kwargs):
    if given(stop):
        start, limit = start_or_stop, stop
    else:
        start, limit = 0, start_or_stop
    step = step if given(step) else 1
    dt = out.dtype
    if dt.kind not in "if":
        raise refuse(f"np.arange of {dt}")
    wide = np.dtype(np.int64) if dt.kind == "i" else dt
    r = g.node("Range", [g.val(start, wide), g.val(limit, wide), g.val(step, wide)])
    return g.cast(r, dt) if wide != dt else r
