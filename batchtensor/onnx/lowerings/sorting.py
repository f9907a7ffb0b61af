"""sort and argsort along an axis, through TopK: a stable ascending TopK on the values with NaN
moved past +inf, then a second stable pass that puts NaN last (NumPy's order). Ties come out in
index order, as NumPy's stable sort gives them. NumPy's default (non-stable) sort may order equal
keys differently, which never changes ``sort``'s values but does change ``argsort``: argsort
exports only with ``stable=True`` / ``kind='stable'``."""

from __future__ import annotations

import numpy as np

from ..recorder import lowering
from ._common import BOOL, along_axis, refuse

__all__: list = []


def _topk(g, x: str, dt, k: str, ax: int) -> tuple[str, str]:
    vals, idx = g.math("TopK", [x], dt, extra=[k], n_out=2, probe_extra=(("<i8", (1,)),),
                       axis=ax, largest=0, sorted=1)
    return vals, idx


def _argsort(g, a, axis) -> tuple[str, str, int]:
    x, dims, ax = along_axis(g, a, axis)
    dt = a.dtype
    k = g.dim(dims[ax])
    if dt == BOOL:
        x, dt = g.cast(x, np.uint8), np.dtype(np.uint8)
    if dt.kind != "f":
        _, idx = _topk(g, x, dt, k, ax)
        return x, idx, ax
    nan = g.math("IsNaN", [x], dt, out=BOOL)
    key = g.where(nan, g.scalar(np.inf, dt), x, dt)
    _, idx1 = _topk(g, key, dt, k, ax)
    nan_sorted = g.cast(g.node("GatherElements", [nan, idx1], axis=ax), np.dtype(np.float32))
    _, idx2 = _topk(g, nan_sorted, np.dtype(np.float32), k, ax)
    return x, g.node("GatherElements", [idx1, idx2], axis=ax), ax


def _check(kind, order):
    if order is not None:
        raise refuse("sorting with order= (structured arrays)")


@lowering(np.argsort, onnx=("TopK", "GatherElements"))
def lower_argsort(g, out, a, axis=-1, kind=None, order=None, *, stable=None):
    _check(kind, order)
    if not (stable is True or kind in ("stable", "mergesort")):
        raise refuse(
            "np.argsort without stable=True (NumPy's default sort orders equal keys in an "
            "implementation-defined way, e.g. by SIMD sorting networks, which the graph cannot "
            "reproduce); use np.argsort(x, stable=True), whose order the graph matches")
    return _argsort(g, a, axis)[1]


@lowering(np.sort, onnx=("TopK", "GatherElements"))
def lower_sort(g, out, a, axis=-1, kind=None, order=None, *, stable=None):
    _check(kind, order)
    x, idx, ax = _argsort(g, a, axis)
    res = g.node("GatherElements", [x, idx], axis=ax)
    return g.cast(res, out.dtype) if a.dtype == BOOL else res

