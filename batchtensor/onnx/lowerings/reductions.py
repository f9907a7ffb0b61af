"""Reductions and scans: sum prod mean max min any all argmax argmin std var ptp cumsum cumprod,
count_nonzero, the nan-reductions, and ``ufunc.reduce`` / ``ufunc.accumulate``.

NumPy semantics kept: the accumulator dtype is the eager result's (bool and small ints sum in
int64, integer means in float64); ``max``/``min``/``argmax``/``argmin`` propagate NaN like NumPy
(onnxruntime's kernels skip it); an empty ``axis=()`` reduces nothing (ONNX would reduce
everything); ``any``/``all`` of an empty axis give False/True.
"""

from __future__ import annotations

import numpy as np

from ..recorder import lowering
from ..symdim import SymDim
from ._common import BOOL, INT64, NoValue, axes_of, dims_of, given, ndim_of, refuse

__all__: list = []

_PROBE_AXES = (("<i8", (0,)),)


def _check(kw: dict, allowed: set) -> None:
    for k, v in kw.items():
        if k not in allowed and given(v) and v is not False:
            raise refuse(f"the keyword {k}=")


def _reduce(g, op_type: str, x: str, dt, axes: tuple, keepdims: bool, out=None) -> str:
    if not axes:  # NumPy reduces nothing; ONNX would reduce every axis
        return x
    return g.math(op_type, [x], dt, out=out, extra=[g.i64(axes)], probe_extra=_PROBE_AXES,
                  keepdims=int(keepdims))


def _any_nan(g, x: str, dt, axes, keepdims) -> str:
    nan = g.cast(g.math("IsNaN", [x], dt, out=BOOL), INT64)
    return g.math("Greater", [_reduce(g, "ReduceSum", nan, INT64, axes, keepdims),
                              g.scalar(0, INT64)], INT64, out=BOOL)


def _count(dims, axes):
    n = 1
    for a in axes:
        n = n * dims[a]
    return n


def _where_fill(g, x, where, fill, dt):
    if where is True or not given(where):
        return x
    return g.where(g.val(where, BOOL), x, g.scalar(fill, dt), dt)


def _sum_like(op_type: str, identity):
    def lower(g, out, a, axis=None, dtype=None, out_=None, keepdims=False, initial=NoValue,
              where=True):
        dt = out.dtype
        axes = axes_of(axis, ndim_of(a))
        x = _where_fill(g, g.val(a, dt), where, identity, dt)
        if not axes:
            r = g.node("Identity", [x])
        else:
            r = _reduce(g, op_type, x, dt, axes, keepdims)
        if given(initial):
            r = g.math("Add" if op_type == "ReduceSum" else "Mul", [r, g.val(initial, dt)], dt)
        return r
    return lower


lowering(np.sum, onnx=("ReduceSum",))(_sum_like("ReduceSum", 0))
lowering(np.prod, onnx=("ReduceProd",))(_sum_like("ReduceProd", 1))


@lowering(np.mean, onnx=("ReduceSum", "Div"))
def lower_mean(g, out, a, axis=None, dtype=None, out_=None, keepdims=False, *, where=True):
    dt = out.dtype
    acc = np.dtype(np.float32) if dt == np.float16 else dt
    axes = axes_of(axis, ndim_of(a))
    x = g.val(a, acc)
    if where is True or not given(where):
        if not axes:
            r = g.node("Identity", [x])
        else:
            s = _reduce(g, "ReduceSum", x, acc, axes, keepdims)
            r = g.math("Div", [s, g.cast(g.dim(_count(dims_of(a), axes)), acc)], acc)
    else:
        w = g.val(where, BOOL)
        s = _reduce(g, "ReduceSum", g.where(w, x, g.scalar(0, acc), acc), acc, axes, keepdims)
        shape = g.node("Shape", [x])
        cnt = _reduce(g, "ReduceSum", g.node("Expand", [g.cast(w, acc), shape]), acc, axes,
                      keepdims)
        r = g.math("Div", [s, cnt], acc)
    return g.cast(r, dt) if acc != dt else r


def _minmax(op_type: str):
    def lower(g, out, a, axis=None, out_=None, keepdims=False, initial=NoValue, where=True,
              dtype=None):
        dt = out.dtype
        axes = axes_of(axis, ndim_of(a))
        x = g.val(a, dt)
        if where is not True and given(where):
            if not given(initial):
                raise refuse("where= without initial=")
            x = g.where(g.val(where, BOOL), x, g.val(initial, dt), dt)
        if not axes:
            return g.node("Identity", [x])
        r = _reduce(g, op_type, x, dt, axes, keepdims)
        if given(initial):
            r = g.math("Max" if op_type == "ReduceMax" else "Min", [r, g.val(initial, dt)], dt)
        if dt.kind == "f":
            r = g.where(_any_nan(g, x, dt, axes, keepdims), g.scalar(np.nan, dt), r, dt)
        return r
    return lower


lowering(np.max, np.amax, onnx=("ReduceMax", "IsNaN"))(
    _minmax("ReduceMax"))
lowering(np.min, np.amin, onnx=("ReduceMin", "IsNaN"))(
    _minmax("ReduceMin"))


def _anyall(is_all: bool):
    def lower(g, out, a, axis=None, out_=None, keepdims=False, *, where=True, dtype=None,
              initial=NoValue):
        axes = axes_of(axis, ndim_of(a))
        b = g.val(a, BOOL)
        if not axes:
            r = g.node("Identity", [b])
            return g.cast(r, out.dtype) if out.dtype != BOOL else r
        probe = g.node("Not", [b]) if is_all else b
        if where is not True and given(where):
            probe = g.node("And", [probe, g.val(where, BOOL)])
        cnt = _reduce(g, "ReduceSum", g.cast(probe, INT64), INT64, axes, keepdims)
        r = g.math("Equal" if is_all else "Greater", [cnt, g.scalar(0, INT64)], INT64, out=BOOL)
        return g.cast(r, out.dtype) if out.dtype != BOOL else r
    return lower


lowering(np.all, onnx=("ReduceSum", "Not"))(_anyall(True))
lowering(np.any, onnx=("ReduceSum",))(_anyall(False))


def _arg(op_type: str):
    def lower(g, out, a, axis=None, out_=None, *, keepdims=False):
        dt = a.dtype if hasattr(a, "dtype") else np.result_type(a)
        x = g.val(a)
        if axis is None:
            x = g.reshape(x, [_count(dims_of(a), range(ndim_of(a)))])
            ax = 0
        else:
            ax = axes_of(axis, ndim_of(a))[0]
        kd = int(bool(keepdims))
        r = g.math(op_type, [x], dt, out=INT64, axis=ax, keepdims=kd, select_last_index=0)
        if dt.kind == "f":
            nan = g.cast(g.math("IsNaN", [x], dt, out=BOOL), np.int32)
            first = g.math("ArgMax", [nan], np.dtype(np.int32), out=INT64, axis=ax, keepdims=kd,
                           select_last_index=0)
            has = _any_nan(g, x, dt, (ax,), kd)
            r = g.where(has, first, r, INT64)
        return r
    return lower


lowering(np.argmax, onnx=("ArgMax",))(_arg("ArgMax"))
lowering(np.argmin, onnx=("ArgMin",))(_arg("ArgMin"))


def _var(g, out, a, axis, dtype, keepdims, ddof, correction, where, mean, sqrt):
    if given(mean):
        raise refuse("mean= of np.var / np.std")
    if given(correction):
        ddof = correction
    dt = out.dtype
    if dt.kind != "f":
        raise refuse(f"np.var / np.std with result dtype {dt}")
    axes = axes_of(axis, ndim_of(a))
    x = g.val(a, dt)
    masked = where is not True and given(where)
    if masked:
        w = g.val(where, BOOL)
        cnt = _reduce(g, "ReduceSum", g.node("Expand", [g.cast(w, dt), g.node("Shape", [x])]),
                      dt, axes, True)
        x0 = g.where(w, x, g.scalar(0, dt), dt)
    else:
        cnt = g.cast(g.dim(_count(dims_of(a), axes)), dt)
        x0 = x
    s = _reduce(g, "ReduceSum", x0, dt, axes, True) if axes else x0
    m = g.math("Div", [s, cnt], dt)
    d = g.math("Sub", [x, m], dt)
    sq = g.math("Mul", [d, d], dt)
    if masked:
        sq = g.where(w, sq, g.scalar(0, dt), dt)
        if not keepdims and axes:
            cnt = g.node("Squeeze", [cnt, g.i64(axes)])
    ss = _reduce(g, "ReduceSum", sq, dt, axes, keepdims) if axes else sq
    denom = g.math("Max", [g.math("Sub", [cnt, g.val(ddof, dt)], dt), g.scalar(0, dt)], dt)
    r = g.math("Div", [ss, denom], dt)
    return g.math("Sqrt", [r], dt) if sqrt else r


@lowering(np.var, onnx=("ReduceSum", "Div", "Mul"))
def lower_var(g, out, a, axis=None, dtype=None, out_=None, ddof=0, keepdims=False, *,
              where=True, mean=NoValue, correction=NoValue):
    return _var(g, out, a, axis, dtype, keepdims, ddof, correction, where, mean, False)


@lowering(np.std, onnx=("ReduceSum", "Div", "Mul", "Sqrt"))
def lower_std(g, out, a, axis=None, dtype=None, out_=None, ddof=0, keepdims=False, *,
              where=True, mean=NoValue, correction=NoValue):
    return _var(g, out, a, axis, dtype, keepdims, ddof, correction, where, mean, True)


@lowering(np.ptp, onnx=("ReduceMax", "ReduceMin", "Sub"))
def lower_ptp(g, out, a, axis=None, out_=None, keepdims=False):
    hi = _minmax("ReduceMax")(g, out, a, axis, keepdims=keepdims)
    lo = _minmax("ReduceMin")(g, out, a, axis, keepdims=keepdims)
    return g.math("Sub", [hi, lo], out.dtype)


def _scan_axis(a, axis):
    if axis is None:
        raise refuse("a cumulative op with axis=None on a batched value")
    return axes_of(axis, ndim_of(a))[0]


@lowering(np.cumsum, onnx=("CumSum",))
def lower_cumsum(g, out, a, axis=None, dtype=None, out_=None):
    dt = out.dtype
    ax = _scan_axis(a, axis)
    return g.math("CumSum", [g.val(a, dt)], dt, extra=[g.scalar(ax, INT64)],
                  probe_extra=(("<i8", 0),))


_MAX_UNROLL = 256


def _slices(g, a, axis, what: str):
    """(value, axis, the static length) for an op unrolled along ``axis``."""
    ax = _scan_axis(a, axis)
    n = dims_of(a)[ax]
    if type(n) is SymDim or n > _MAX_UNROLL:
        raise refuse(f"{what} along an axis of length {n} (it is unrolled; at most "
                     f"{_MAX_UNROLL}, and not along a batch axis)")
    return ax, n


def _unrolled_scan(combine):
    """A scan with no ONNX op: unrolled along a static axis, in NumPy's order."""
    def lower(g, out, a, axis=None, dtype=None, out_=None):
        dt = out.dtype
        ax, n = _slices(g, a, axis, g.op_name)
        x = g.val(a, dt)
        if n == 0:
            return g.node("Identity", [x])
        parts, acc = [], None
        for i in range(n):
            s = g.node("Slice", [x, g.i64([i]), g.i64([i + 1]), g.i64([ax])])
            acc = s if acc is None else combine(g, acc, s, dt)
            parts.append(acc)
        return parts[0] if n == 1 else g.node("Concat", parts, axis=ax)
    return lower


def _binop(op_type, bool_op=None):
    def combine(g, a, b, dt):
        if dt == BOOL and bool_op:
            return g.node(bool_op, [a, b])
        return g.math(op_type, [a, b], dt)
    return combine


lower_cumprod = _unrolled_scan(_binop("Mul", "And"))
lowering(np.cumprod, onnx=("Slice", "Mul", "Concat"))(lower_cumprod)


@lowering((np.subtract, "reduce"), onnx=("Slice", "Sub"))
def lower_subtract_reduce(g, out, array, axis=0, dtype=None, out_=None, keepdims=False,
                          initial=NoValue, where=True):
    """``a[0] - a[1] - ...`` in NumPy's order (unrolled along a static axis)."""
    if isinstance(axis, tuple) and not axis:
        return g.node("Identity", [g.val(array, out.dtype)])
    if axis is None or isinstance(axis, tuple) and len(axis) != 1:
        raise refuse("np.subtract.reduce over several axes")
    if where is not True or given(initial):
        raise refuse("np.subtract.reduce with where= or initial=")
    axis = axis[0] if isinstance(axis, tuple) else axis
    dt = out.dtype
    ax, n = _slices(g, array, axis, "np.subtract.reduce")
    x = g.val(array, dt)
    acc = None
    for i in range(n):
        s = g.node("Slice", [x, g.i64([i]), g.i64([i + 1]), g.i64([ax])])
        acc = s if acc is None else g.math("Sub", [acc, s], dt)
    return acc if keepdims else g.node("Squeeze", [acc, g.i64([ax])])


@lowering(np.count_nonzero, onnx=("ReduceSum", "Not", "Equal"))
def lower_count_nonzero(g, out, a, axis=None, *, keepdims=False):
    b = g.val(a, BOOL)
    axes = axes_of(axis, ndim_of(a))
    r = _reduce(g, "ReduceSum", g.cast(b, INT64), INT64, axes, keepdims) if axes \
        else g.cast(b, INT64)
    return g.cast(r, out.dtype) if out.dtype != INT64 else r


def _nan_sum_like(op_type: str, identity):
    def lower(g, out, a, axis=None, dtype=None, out_=None, keepdims=False, initial=NoValue,
              where=True):
        dt = out.dtype
        axes = axes_of(axis, ndim_of(a))
        x = g.val(a, dt)
        if dt.kind == "f":
            x = g.where(g.math("IsNaN", [x], dt, out=BOOL), g.scalar(identity, dt), x, dt)
        x = _where_fill(g, x, where, identity, dt)
        r = _reduce(g, op_type, x, dt, axes, keepdims) if axes else x
        if given(initial):
            r = g.math("Add" if op_type == "ReduceSum" else "Mul", [r, g.val(initial, dt)], dt)
        return r
    return lower


lowering(np.nansum, onnx=("ReduceSum", "IsNaN"))(_nan_sum_like("ReduceSum", 0))
lowering(np.nanprod, onnx=("ReduceProd", "IsNaN"))(_nan_sum_like("ReduceProd", 1))


@lowering(np.nanmean, onnx=("ReduceSum", "IsNaN", "Div"))
def lower_nanmean(g, out, a, axis=None, dtype=None, out_=None, keepdims=False, *, where=True):
    dt = out.dtype
    if where is not True and given(where):
        raise refuse("where= of np.nanmean")
    axes = axes_of(axis, ndim_of(a))
    x = g.val(a, dt)
    ok = g.node("Not", [g.math("IsNaN", [x], dt, out=BOOL)])
    s = _reduce(g, "ReduceSum", g.where(ok, x, g.scalar(0, dt), dt), dt, axes, keepdims)
    c = _reduce(g, "ReduceSum", g.cast(ok, dt), dt, axes, keepdims)
    return g.math("Div", [s, c], dt)


def _nanminmax(op_type: str):
    def lower(g, out, a, axis=None, out_=None, keepdims=False, initial=NoValue, where=True):
        dt = out.dtype
        if dt.kind != "f":
            return _minmax(op_type)(g, out, a, axis, keepdims=keepdims, initial=initial,
                                    where=where)
        if (where is not True and given(where)) or given(initial):
            raise refuse("where=/initial= of np.nanmax / np.nanmin")
        axes = axes_of(axis, ndim_of(a))
        x = g.val(a, dt)
        nan = g.math("IsNaN", [x], dt, out=BOOL)
        fill = g.scalar(-np.inf if op_type == "ReduceMax" else np.inf, dt)
        r = _reduce(g, op_type, g.where(nan, fill, x, dt), dt, axes, keepdims)
        ok = g.cast(g.node("Not", [nan]), INT64)
        none = g.math("Equal", [_reduce(g, "ReduceSum", ok, INT64, axes, keepdims),
                                g.scalar(0, INT64)], INT64, out=BOOL)
        return g.where(none, g.scalar(np.nan, dt), r, dt)
    return lower


lowering(np.nanmax, onnx=("ReduceMax", "IsNaN"))(_nanminmax("ReduceMax"))
lowering(np.nanmin, onnx=("ReduceMin", "IsNaN"))(_nanminmax("ReduceMin"))


@lowering(np.average, onnx=("ReduceSum", "Div"))
def lower_average(g, out, a, axis=None, weights=None, returned=False, *, keepdims=NoValue):
    if weights is not None or returned:
        raise refuse("np.average with weights= or returned=")
    return lower_mean(g, out, a, axis, keepdims=given(keepdims) and keepdims)


def _ufunc_method(fn):
    """``ufunc.reduce`` / ``ufunc.accumulate`` default to axis 0 and take dtype= third."""
    def lower(g, out, array, axis=0, dtype=None, out_=None, **kw):
        return fn(g, out, array, axis=axis, **kw)
    return lower


_ONNX = {(np.add, "reduce"): ("ReduceSum",), (np.multiply, "reduce"): ("ReduceProd",),
         (np.maximum, "reduce"): ("ReduceMax", "IsNaN"),
         (np.minimum, "reduce"): ("ReduceMin", "IsNaN"),
         (np.logical_and, "reduce"): ("ReduceSum", "Not"),
         (np.logical_or, "reduce"): ("ReduceSum",), (np.add, "accumulate"): ("CumSum",),
         (np.multiply, "accumulate"): ("Slice", "Mul", "Concat"),
         (np.maximum, "accumulate"): ("Slice", "Max", "Concat"),
         (np.minimum, "accumulate"): ("Slice", "Min", "Concat"),
         (np.subtract, "accumulate"): ("Slice", "Sub", "Concat"),
         (np.logical_and, "accumulate"): ("Slice", "And", "Concat"),
         (np.logical_or, "accumulate"): ("Slice", "Or", "Concat")}
for _uf, _method, _fn in [
        (np.add, "reduce", _sum_like("ReduceSum", 0)),
        (np.multiply, "reduce", _sum_like("ReduceProd", 1)),
        (np.maximum, "reduce", _minmax("ReduceMax")),
        (np.minimum, "reduce", _minmax("ReduceMin")),
        (np.logical_and, "reduce", _anyall(True)),
        (np.logical_or, "reduce", _anyall(False)),
        (np.add, "accumulate", lower_cumsum),
        (np.multiply, "accumulate", lower_cumprod),
        (np.maximum, "accumulate", _unrolled_scan(_binop("Max", "Or"))),
        (np.minimum, "accumulate", _unrolled_scan(_binop("Min", "And"))),
        (np.subtract, "accumulate", _unrolled_scan(_binop("Sub"))),
        (np.logical_and, "accumulate", _unrolled_scan(lambda g, a, b, dt: g.node(
            "And", [g.cast(a, BOOL), g.cast(b, BOOL)]))),
        (np.logical_or, "accumulate", _unrolled_scan(lambda g, a, b, dt: g.node(
            "Or", [g.cast(a, BOOL), g.cast(b, BOOL)])))]:
    lowering((_uf, _method), onnx=_ONNX[_uf, _method])(_ufunc_method(_fn))
