"""Elementwise ufuncs and functions (clip, where, round, isclose, nan_to_num).

Every ufunc call resolves its loop dtypes exactly as NumPy does (``ufunc.resolve_dtypes``, Python
scalars weak), casts each input to its loop dtype and emits one builder per ufunc. Where ONNX
semantics differ from NumPy's the builder spells NumPy's out: integer floor division and
modulo (ONNX ``Div`` truncates, division by zero gives 0 in NumPy), float floor division and
remainder (NumPy's ``divmod`` algorithm on ``fmod``), ``expm1``/``log1p`` without cancellation,
and float64 ``tan``/``sinh``/``cosh``, which onnxruntime only has in float32.
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np

from ..errors import UnsupportedOpError
from ..kernels import has_kernel
from ..recorder import TArray, lowering
from ._common import BOOL, NoValue, dtype_of, given, refuse

__all__ = ["UFUNCS", "ufunc_dtypes"]


def ufunc_dtypes(ufunc, inputs, kwargs: dict) -> tuple:
    """NumPy's loop dtypes for ``inputs`` under the call's ``dtype=`` / ``signature=`` /
    ``casting=`` (an ``out=`` array does not choose the loop: the result is cast into it)."""
    ins = tuple(dtype_of(x) for x in inputs)
    sig = kwargs.get("signature")
    if given(kwargs.get("dtype")):
        sig = (None,) * ufunc.nin + (np.dtype(kwargs["dtype"]),) * ufunc.nout
    kw = {"signature": sig} if given(sig) else {}
    return ufunc.resolve_dtypes(ins + (None,) * ufunc.nout,
                                casting=kwargs.get("casting", "same_kind"), **kw)


# ---- builder helpers: (g, names, loop dtypes) -> name ------------------------------------------
def _c(g, value, dt) -> str:
    return g.scalar(value, dt)


def _simple(op_type: str) -> Callable:
    def build(g, n, d):
        return g.math(op_type, n, d[0])
    return build


def _bool_or(op_type: str, bool_op: str) -> Callable:
    """``op_type`` on numbers, ``bool_op`` on bools (add: Or, maximum: Or, bitwise_and: And)."""
    def build(g, n, d):
        if d[0] == BOOL:
            return g.node(bool_op, n)
        return g.math(op_type, n, d[0])
    return build


def _cmp(op_type: str) -> Callable:
    def build(g, n, d):
        return g.math(op_type, n, d[0], out=BOOL)
    return build


def _not_equal(g, n, d):
    return g.node("Not", [g.math("Equal", n, d[0], out=BOOL)])


def _float_or_identity(op_type: str) -> Callable:
    def build(g, n, d):
        if d[0].kind != "f":
            return g.node("Identity", n)
        return g.math(op_type, n, d[0])
    return build


def _neg(g, n, d):
    if d[0].kind == "u":
        return g.math("Sub", [_c(g, 0, d[0]), n[0]], d[0])
    return g.math("Neg", n, d[0])


def _abs(g, n, d):
    if d[0] == BOOL or d[0].kind == "u":
        return g.node("Identity", n)
    return g.math("Abs", n, d[0])


def _has(g, op_type, dt) -> bool:
    return has_kernel(op_type, (dt.str,), g.opset)


def _with_f64_route(op_type: str, route: Callable) -> Callable:
    """``op_type`` where onnxruntime has it, else the exact rewrite ``route`` (float64)."""
    def build(g, n, d):
        if _has(g, op_type, d[0]) or d[0].itemsize < 8:
            return g.math(op_type, n, d[0])
        return route(g, n[0], d[0])
    return build


def _tan(g, x, dt):
    return g.math("Div", [g.math("Sin", [x], dt), g.math("Cos", [x], dt)], dt)


def _sinh(g, x, dt):
    # (e^x - e^-x) / 2 cancels for small |x|: there a short series is exact to rounding.
    e, em = g.math("Exp", [x], dt), g.math("Exp", [g.math("Neg", [x], dt)], dt)
    big = g.math("Div", [g.math("Sub", [e, em], dt), _c(g, 2, dt)], dt)
    x2 = g.math("Mul", [x, x], dt)
    series = g.math("Mul", [x, g.math("Add", [_c(g, 1, dt), g.math(
        "Mul", [x2, g.math("Add", [_c(g, 1 / 6, dt), g.math("Mul", [x2, _c(g, 1 / 120, dt)],
                                                                 dt)], dt)], dt)], dt)], dt)
    small = g.math("Less", [g.math("Abs", [x], dt), _c(g, 1e-3, dt)], dt, out=BOOL)
    return g.where(small, series, big, dt)


def _cosh(g, x, dt):
    e, em = g.math("Exp", [x], dt), g.math("Exp", [g.math("Neg", [x], dt)], dt)
    return g.math("Div", [g.math("Add", [e, em], dt), _c(g, 2, dt)], dt)


def _isnan(g, n, d):
    if d[0].kind != "f":
        return g.node("Not", [g.math("Equal", [n[0], n[0]], d[0], out=BOOL)])
    return g.math("IsNaN", n, d[0], out=BOOL)


def _isinf(g, n, d):
    if d[0].kind != "f":
        return g.node("Not", [g.math("Equal", [n[0], n[0]], d[0], out=BOOL)])
    return g.math("IsInf", n, d[0], out=BOOL)


def _isfinite(g, n, d):
    if d[0].kind != "f":
        return g.math("Equal", [n[0], n[0]], d[0], out=BOOL)
    return g.node("Not", [g.node("Or", [_isnan(g, n, d), _isinf(g, n, d)])])


def _to_bool(g, name, dt):
    return name if dt == BOOL else g.cast(name, BOOL)


def _logical(op_type: str) -> Callable:
    def build(g, n, d):
        return g.node(op_type, [_to_bool(g, x, dt) for x, dt in zip(n, d)])
    return build


def _logical_not(g, n, d):
    return g.node("Not", [_to_bool(g, n[0], d[0])])


def _shift(direction: str) -> Callable:
    def build(g, n, d):
        if d[0].kind != "u":
            raise UnsupportedOpError(
                f"{g.op_name}: shifts of signed integers cannot be exported (ONNX BitShift is "
                f"defined for unsigned integers only); use multiplication or floor division")
        return g.math("BitShift", n, d[0], direction=direction)
    return build


def _divide(g, n, d):
    return g.math("Div", n, d[0])


def _int_guard(g, a, b, dt):
    """``(b_safe, is_zero, is_minus_one)``: b with 0 and -1 replaced by 1 (ONNX integer Div/Mod
    trap on them where NumPy gives 0 and wraps)."""
    zero = g.math("Equal", [b, _c(g, 0, dt)], dt, out=BOOL)
    bad = zero
    m1 = None
    if dt.kind == "i":
        m1 = g.math("Equal", [b, _c(g, -1, dt)], dt, out=BOOL)
        bad = g.node("Or", [zero, m1])
    safe = g.where(bad, _c(g, 1, dt), b, dt)
    return safe, zero, m1


def _float_divmod(g, a, b, dt):
    """NumPy's npy_divmod for floats: (floor quotient, remainder)."""
    lt = lambda x, y: g.math("Less", [x, y], dt, out=BOOL)  # noqa: E731
    eq = lambda x, y: g.math("Equal", [x, y], dt, out=BOOL)  # noqa: E731
    zero, one = _c(g, 0, dt), _c(g, 1, dt)
    mod = g.math("Mod", [a, b], dt, fmod=1)
    div = g.math("Div", [g.math("Sub", [a, mod], dt), b], dt)
    mod_nz = g.node("Not", [eq(mod, zero)])
    adj = g.node("And", [mod_nz, g.node("Xor", [lt(b, zero), lt(mod, zero)])])
    mod_adj = g.where(adj, g.math("Add", [mod, b], dt), mod, dt)
    signed_zero_b = g.where(lt(b, zero), _c(g, -0.0, dt), zero, dt)
    rem = g.where(mod_nz, mod_adj, signed_zero_b, dt)
    div = g.where(adj, g.math("Sub", [div, one], dt), div, dt)
    fl = g.math("Floor", [div], dt)
    up = g.math("Greater", [g.math("Sub", [div, fl], dt), _c(g, 0.5, dt)], dt, out=BOOL)
    fl = g.where(up, g.math("Add", [fl, one], dt), fl, dt)
    q = g.math("Div", [a, b], dt)
    signed_zero_q = g.where(_signbit(g, [q], [dt]), _c(g, -0.0, dt), zero, dt)
    floordiv = g.where(eq(div, zero), signed_zero_q, fl, dt)
    b_zero = eq(b, zero)
    floordiv = g.where(b_zero, q, floordiv, dt)
    rem = g.where(b_zero, mod, rem, dt)
    return floordiv, rem


def _int_floordiv(g, a, b, dt):
    safe, zero, m1 = _int_guard(g, a, b, dt)
    q = g.math("Div", [a, safe], dt)
    if dt.kind == "i":
        r = g.math("Sub", [a, g.math("Mul", [q, safe], dt)], dt)
        lt0 = lambda x: g.math("Less", [x, _c(g, 0, dt)], dt, out=BOOL)  # noqa: E731
        adj = g.node("And", [g.node("Not", [g.math("Equal", [r, _c(g, 0, dt)], dt, out=BOOL)]),
                             g.node("Xor", [lt0(r), lt0(safe)])])
        q = g.where(adj, g.math("Sub", [q, _c(g, 1, dt)], dt), q, dt)
        q = g.where(m1, g.math("Sub", [_c(g, 0, dt), a], dt), q, dt)
    return g.where(zero, _c(g, 0, dt), q, dt)


def _int_mod(g, a, b, dt, fmod: int):
    safe, zero, _ = _int_guard(g, a, b, dt)
    r = g.math("Mod", [a, safe], dt, fmod=fmod)
    return g.where(zero, _c(g, 0, dt), r, dt)


def _floor_divide(g, n, d):
    dt = d[0]
    if dt == BOOL:
        raise refuse("floor division of booleans")
    if dt.kind == "f":
        return _float_divmod(g, n[0], n[1], dt)[0]
    return _int_floordiv(g, n[0], n[1], dt)


def _remainder(g, n, d):
    dt = d[0]
    if dt.kind == "f":
        return _float_divmod(g, n[0], n[1], dt)[1]
    return _int_mod(g, n[0], n[1], dt, 0)


def _fmod(g, n, d):
    dt = d[0]
    if dt.kind == "f":
        return g.math("Mod", n, dt, fmod=1)
    return _int_mod(g, n[0], n[1], dt, 1)


def _divmod(g, n, d):
    dt = d[0]
    if dt.kind == "f":
        return list(_float_divmod(g, n[0], n[1], dt))
    return [_int_floordiv(g, n[0], n[1], dt), _int_mod(g, n[0], n[1], dt, 0)]


def _power(g, n, d):
    if d[0].kind in "iu":
        return _int_power(g, n[0], n[1], d[0])
    return g.math("Pow", n, d[0])


def _int_power(g, a, b, dt):
    """NumPy's integer power: exact, wrapping on overflow. onnxruntime's integer ``Pow`` goes
    through double (``12345**4`` is off by one), so square-and-multiply runs in a ``Loop`` over
    the exponent's bits, in int64 (the low bits of a wrapped product are those of the narrow
    type's product). Negative exponents raise in NumPy; the graph's value there is unspecified."""
    from onnx import helper  # noqa: PLC0415

    if dt == np.uint64:
        raise refuse("integer power of uint64")
    i64 = np.dtype(np.int64)
    x, e = g.cast(a, i64) if dt != i64 else a, g.cast(b, i64) if dt != i64 else b
    zero, one, two = (_c(g, v, i64) for v in (0, 1, 2))
    x0 = g.node("Add", [x, g.node("Mul", [e, zero])])  # all three in the broadcast shape
    e0 = g.node("Add", [e, g.node("Mul", [x, zero])])
    r0 = g.node("Add", [g.node("Mul", [x0, zero]), one])
    t = helper.make_tensor_value_info
    ty = helper.np_dtype_to_tensor_dtype
    names = [g.fresh("pow") for _ in range(12)]
    it, cond, r, x_, e_, bit, set_, rx, r2, x2, e2, cond2 = names
    body = helper.make_graph(
        [helper.make_node("Mod", [e_, two], [bit]),
         helper.make_node("Equal", [bit, one], [set_]),
         helper.make_node("Mul", [r, x_], [rx]),
         helper.make_node("Where", [set_, rx, r], [r2]),
         helper.make_node("Mul", [x_, x_], [x2]),
         helper.make_node("Div", [e_, two], [e2]),
         helper.make_node("Identity", [cond], [cond2])],
        g.fresh("int_power_body"),
        [t(it, ty(i64), []), t(cond, ty(np.dtype(bool)), []), t(r, ty(i64), None),
         t(x_, ty(i64), None), t(e_, ty(i64), None)],
        [t(cond2, ty(np.dtype(bool)), []), t(r2, ty(i64), None), t(x2, ty(i64), None),
         t(e2, ty(i64), None)])
    bits = dt.itemsize * 8 - (dt.kind == "i")
    res = g.node("Loop", [g.scalar(bits, i64), "", r0, x0, e0], n_out=3, body=body)[0]
    return g.cast(res, dt) if dt != i64 else res


def _square(g, n, d):
    return g.math("Mul", [n[0], n[0]], d[0])


def _reciprocal(g, n, d):
    if d[0].kind != "f":
        raise refuse("np.reciprocal of integers (integer division 1 // x)")
    return g.math("Reciprocal", n, d[0])


def _scaled(factor: float) -> Callable:
    def build(g, n, d):
        return g.math("Mul", [n[0], _c(g, factor, d[0])], d[0])
    return build


def _exp2(g, n, d):
    return g.math("Pow", [_c(g, 2, d[0]), n[0]], d[0])


def _log_base(base: float) -> Callable:
    def build(g, n, d):
        return g.math("Div", [g.math("Log", n, d[0]), _c(g, math.log(base), d[0])], d[0])
    return build


def _expm1(g, n, d):
    # Kahan: u = e^x; (u - 1) * x / log(u), exact where u rounds to 1 or overflows.
    dt, x = d[0], n[0]
    u = g.math("Exp", [x], dt)
    um1 = g.math("Sub", [u, _c(g, 1, dt)], dt)
    r = g.math("Div", [g.math("Mul", [um1, x], dt), g.math("Log", [u], dt)], dt)
    r = g.where(g.math("Equal", [um1, _c(g, -1, dt)], dt, out=BOOL), um1, r, dt)
    r = g.where(g.math("IsInf", [u], dt, out=BOOL), u, r, dt)
    return g.where(g.math("Equal", [u, _c(g, 1, dt)], dt, out=BOOL), x, r, dt)


def _log1p_name(g, x, dt):
    # Goldberg: u = 1 + x; log(u) * x / (u - 1), exact where u rounds to 1.
    u = g.math("Add", [x, _c(g, 1, dt)], dt)
    r = g.math("Div", [g.math("Mul", [g.math("Log", [u], dt), x], dt),
                       g.math("Sub", [u, _c(g, 1, dt)], dt)], dt)
    posinf = g.node("And", [g.math("IsInf", [x], dt, out=BOOL),
                            g.math("Greater", [x, _c(g, 0, dt)], dt, out=BOOL)])
    r = g.where(posinf, x, r, dt)
    r = g.where(g.math("Equal", [u, _c(g, 0, dt)], dt, out=BOOL), g.math("Log", [u], dt), r, dt)
    return g.where(g.math("Equal", [u, _c(g, 1, dt)], dt, out=BOOL), x, r, dt)


def _log1p(g, n, d):
    return _log1p_name(g, n[0], d[0])


def _cbrt(g, n, d):
    dt, x = d[0], n[0]
    third = _c(g, 1 / 3, dt)
    pos = g.math("Pow", [g.math("Abs", [x], dt), third], dt)
    neg = g.math("Less", [x, _c(g, 0, dt)], dt, out=BOOL)
    return g.where(neg, g.math("Neg", [pos], dt), pos, dt)


def _trunc(g, n, d):
    dt, x = d[0], n[0]
    if dt.kind != "f":
        return g.node("Identity", [x])
    neg = g.math("Less", [x, _c(g, 0, dt)], dt, out=BOOL)
    return g.where(neg, g.math("Ceil", [x], dt), g.math("Floor", [x], dt), dt)


def _signbit(g, n, d):
    dt, x = d[0], n[0]
    zero = _c(g, 0, dt)
    neg = g.math("Less", [x, zero], dt, out=BOOL)
    if dt.kind != "f":
        return neg
    negzero = g.node("And", [g.math("Equal", [x, zero], dt, out=BOOL),
                             g.math("Less", [g.math("Div", [_c(g, 1, dt), x], dt), zero], dt,
                                    out=BOOL)])
    return g.node("Or", [neg, negzero])


def _copysign(g, n, d):
    dt = d[0]
    a = g.math("Abs", [n[0]], dt)
    return g.where(_signbit(g, [n[1]], d[1:]), g.math("Neg", [a], dt), a, dt)


def _fmaxmin(op_type: str) -> Callable:
    def build(g, n, d):
        dt = d[0]
        r = g.math(op_type, n, dt) if dt != BOOL else g.node("Or" if op_type == "Max" else "And",
                                                               n)
        if dt.kind != "f":
            return r
        r = g.where(g.math("IsNaN", [n[1]], dt, out=BOOL), n[0], r, dt)
        return g.where(g.math("IsNaN", [n[0]], dt, out=BOOL), n[1], r, dt)
    return build


def _hypot(g, n, d):
    dt = d[0]
    s = g.math("Add", [g.math("Mul", [n[0], n[0]], dt), g.math("Mul", [n[1], n[1]], dt)], dt)
    r = g.math("Sqrt", [s], dt)
    inf = g.node("Or", [g.math("IsInf", [n[0]], dt, out=BOOL),
                        g.math("IsInf", [n[1]], dt, out=BOOL)])
    return g.where(inf, _c(g, np.inf, dt), r, dt)


def _logaddexp(base2: bool) -> Callable:
    def build(g, n, d):
        dt, x, y = d[0], n[0], n[1]
        m = g.math("Max", [x, y], dt)
        diff = g.math("Neg", [g.math("Abs", [g.math("Sub", [x, y], dt)], dt)], dt)
        if base2:
            t = g.math("Pow", [_c(g, 2, dt), diff], dt)
            r = g.math("Add", [m, g.math("Div", [_log1p_name(g, t, dt),
                                                  _c(g, math.log(2), dt)], dt)], dt)
            same = g.math("Add", [x, _c(g, 1, dt)], dt)
        else:
            r = g.math("Add", [m, _log1p_name(g, g.math("Exp", [diff], dt), dt)], dt)
            same = g.math("Add", [x, _c(g, math.log(2), dt)], dt)
        return g.where(g.math("Equal", [x, y], dt, out=BOOL), same, r, dt)
    return build


def _heaviside(g, n, d):
    dt, x, h = d[0], n[0], n[1]
    zero = _c(g, 0, dt)
    r = g.where(g.math("Greater", [x, zero], dt, out=BOOL), _c(g, 1, dt), zero, dt)
    r = g.where(g.math("Equal", [x, zero], dt, out=BOOL), h, r, dt)
    return g.where(g.math("IsNaN", [x], dt, out=BOOL), x, r, dt)


def _identity(g, n, d):
    return g.node("Identity", [n[0]])


def _sign(g, n, d):
    if d[0] == BOOL:
        raise refuse("np.sign of booleans")
    return g.math("Sign", n, d[0])


UFUNCS: dict = {
    np.add: (_bool_or("Add", "Or"), ("Add",)),
    np.subtract: (_simple("Sub"), ("Sub",)),
    np.multiply: (_bool_or("Mul", "And"), ("Mul",)),
    np.true_divide: (_divide, ("Div",)),
    np.floor_divide: (_floor_divide, ("Div", "Mod", "Where")),
    np.remainder: (_remainder, ("Mod", "Where")),
    np.fmod: (_fmod, ("Mod",)),
    np.divmod: (_divmod, ("Div", "Mod", "Where")),
    np.power: (_power, ("Pow", "Loop (integers)")),
    np.float_power: (_power, ("Pow",)),
    np.negative: (_neg, ("Neg",)),
    np.positive: (_identity, ("Identity",)),
    np.absolute: (_abs, ("Abs",)),
    np.fabs: (_abs, ("Abs",)),
    np.sign: (_sign, ("Sign",)),
    np.exp: (_simple("Exp"), ("Exp",)),
    np.exp2: (_exp2, ("Pow",)),
    np.expm1: (_expm1, ("Exp", "Log", "Where")),
    np.log: (_simple("Log"), ("Log",)),
    np.log2: (_log_base(2), ("Log", "Div")),
    np.log10: (_log_base(10), ("Log", "Div")),
    np.log1p: (_log1p, ("Log", "Where")),
    np.sqrt: (_simple("Sqrt"), ("Sqrt",)),
    np.cbrt: (_cbrt, ("Pow", "Where")),
    np.square: (_square, ("Mul",)),
    np.reciprocal: (_reciprocal, ("Reciprocal",)),
    np.sin: (_simple("Sin"), ("Sin",)),
    np.cos: (_simple("Cos"), ("Cos",)),
    np.tan: (_with_f64_route("Tan", _tan), ("Tan", "Sin/Cos (float64)")),
    np.arcsin: (_simple("Asin"), ("Asin",)),
    np.arccos: (_simple("Acos"), ("Acos",)),
    np.arctan: (_simple("Atan"), ("Atan",)),
    np.sinh: (_with_f64_route("Sinh", _sinh), ("Sinh", "Exp (float64)")),
    np.cosh: (_with_f64_route("Cosh", _cosh), ("Cosh", "Exp (float64)")),
    np.tanh: (_simple("Tanh"), ("Tanh",)),
    np.arcsinh: (_simple("Asinh"), ("Asinh",)),
    np.arccosh: (_simple("Acosh"), ("Acosh",)),
    np.arctanh: (_simple("Atanh"), ("Atanh",)),
    np.deg2rad: (_scaled(math.pi / 180), ("Mul",)),
    np.rad2deg: (_scaled(180 / math.pi), ("Mul",)),
    np.radians: (_scaled(math.pi / 180), ("Mul",)),
    np.degrees: (_scaled(180 / math.pi), ("Mul",)),
    np.floor: (_float_or_identity("Floor"), ("Floor",)),
    np.ceil: (_float_or_identity("Ceil"), ("Ceil",)),
    np.trunc: (_trunc, ("Floor", "Ceil", "Where")),
    np.rint: (_float_or_identity("Round"), ("Round",)),
    np.isnan: (_isnan, ("IsNaN",)),
    np.isinf: (_isinf, ("IsInf",)),
    np.isfinite: (_isfinite, ("IsNaN", "IsInf")),
    np.signbit: (_signbit, ("Less", "Equal")),
    np.copysign: (_copysign, ("Abs", "Where")),
    np.logical_and: (_logical("And"), ("And",)),
    np.logical_or: (_logical("Or"), ("Or",)),
    np.logical_xor: (_logical("Xor"), ("Xor",)),
    np.logical_not: (_logical_not, ("Not",)),
    np.bitwise_and: (_bool_or("BitwiseAnd", "And"), ("BitwiseAnd",)),
    np.bitwise_or: (_bool_or("BitwiseOr", "Or"), ("BitwiseOr",)),
    np.bitwise_xor: (_bool_or("BitwiseXor", "Xor"), ("BitwiseXor",)),
    np.invert: (_bool_or("BitwiseNot", "Not"), ("BitwiseNot",)),
    np.left_shift: (_shift("LEFT"), ("BitShift",)),
    np.right_shift: (_shift("RIGHT"), ("BitShift",)),
    np.equal: (_cmp("Equal"), ("Equal",)),
    np.not_equal: (_not_equal, ("Equal", "Not")),
    np.less: (_cmp("Less"), ("Less",)),
    np.less_equal: (_cmp("LessOrEqual"), ("LessOrEqual",)),
    np.greater: (_cmp("Greater"), ("Greater",)),
    np.greater_equal: (_cmp("GreaterOrEqual"), ("GreaterOrEqual",)),
    np.maximum: (_bool_or("Max", "Or"), ("Max",)),
    np.minimum: (_bool_or("Min", "And"), ("Min",)),
    np.fmax: (_fmaxmin("Max"), ("Max", "IsNaN", "Where")),
    np.fmin: (_fmaxmin("Min"), ("Min", "IsNaN", "Where")),
    np.hypot: (_hypot, ("Mul", "Sqrt")),
    np.logaddexp: (_logaddexp(False), ("Exp", "Log", "Max")),
    np.logaddexp2: (_logaddexp(True), ("Pow", "Log", "Max")),
    np.heaviside: (_heaviside, ("Where",)),
    np.conjugate: (_identity, ("Identity",)),
}

_ALLOWED_KW = {"dtype", "casting", "order", "subok", "signature", "where"}


def _make_ufunc_lowering(ufunc, build):
    def lower(g, out, *inputs, **kwargs):
        target = g.target  # the out= array (None: a new result)
        _check_ufunc_kwargs(g, kwargs)
        outs = out if isinstance(out, list) else [out]
        dts = ufunc_dtypes(ufunc, inputs, kwargs)
        if target is None and tuple(o.dtype for o in outs) != tuple(dts[ufunc.nin:]):
            raise refuse(f"this call (NumPy's loop {dts} does not give the result dtypes "
                         f"{tuple(o.dtype for o in outs)})")
        for dt in dts:
            g.check_dtype(dt)
        # NumPy's float16 loops compute in float32 and round once: so does the graph.
        cdts = tuple(np.dtype(np.float32) if np.dtype(d) == np.float16 else np.dtype(d)
                     for d in dts)
        names = [g.val(x, dt) for x, dt in zip(inputs, cdts)]
        res = build(g, names, cdts[:ufunc.nin])
        res = res if isinstance(res, list) else [res]
        final = []
        for r, o, dt in zip(res, outs, cdts[ufunc.nin:]):
            final.append(g.cast(r, o.dtype) if np.dtype(dt) != o.dtype else r)
        if target is not None:
            final[0] = _into_target(g, final[0], outs[0], inputs, kwargs.get("where", True))
        return final if isinstance(out, list) else final[0]

    lower.__name__ = f"lower_{ufunc.__name__}"
    return lower


def _into_target(g, name: str, out, inputs, where) -> str:
    """The new content of the ``out=`` array ``g.target``: the result broadcast to its shape,
    and its old content where ``where`` is False."""
    if not _fills_out(inputs, out):
        name = g.expand(name, out.dims)
    if where is not True:
        name = g.where(g.val(where, BOOL), name, g.val(g.target), out.dtype)
    return name


def _check_ufunc_kwargs(g, kwargs: dict) -> None:
    for k in kwargs:
        if k not in _ALLOWED_KW:
            raise refuse(f"the keyword {k}=")
    if kwargs.get("where", True) is not True and g.target is None:
        raise refuse("where= without out= (NumPy leaves the masked-out elements "
                     "uninitialised)")


def _fills_out(inputs, out) -> bool:
    """Whether the operands broadcast to ``out``'s whole shape (at both traced sizes)."""
    def shapes(which):
        return [np.shape(getattr(x, which)) if type(x) is TArray else np.shape(x)
                for x in inputs]
    return (np.broadcast_shapes(*shapes("v")) == out.v.shape
            and np.broadcast_shapes(*shapes("s")) == out.s.shape)


for _uf, (_build, _ops) in UFUNCS.items():
    lowering(_uf, onnx=_ops)(_make_ufunc_lowering(_uf, _build))


# ---- elementwise functions ----------------------------------------------------------------------
@lowering(np.clip, onnx=("Max", "Min"))
def lower_clip(g, out, a, a_min=NoValue, a_max=NoValue, *, min=NoValue, max=NoValue, **kwargs):
    lo = a_min if given(a_min) else min
    hi = a_max if given(a_max) else max
    _check_ufunc_kwargs(g, kwargs)
    bounds = [b for b in (lo, hi) if given(b)]
    if given(kwargs.get("dtype")):
        dt = np.dtype(kwargs["dtype"])
    elif g.target is None:
        dt = out.dtype
    else:  # the dtype NumPy computes in before casting into out=
        dt = np.result_type(*(x.dtype if type(x) is TArray else x for x in [a] + bounds))
    if dt == BOOL:
        raise refuse("np.clip of booleans")
    g.check_dtype(dt)
    x = g.val(a, dt)
    if given(lo):
        x = g.math("Max", [x, g.val(lo, dt)], dt)
    if given(hi):
        x = g.math("Min", [x, g.val(hi, dt)], dt)
    if dt != out.dtype:
        x = g.cast(x, out.dtype)
    if g.target is not None:
        x = _into_target(g, x, out, [a] + bounds, kwargs.get("where", True))
    return x


@lowering(np.where, onnx=("Where",))
def lower_where(g, out, condition, x=NoValue, y=NoValue):
    if not given(x) or not given(y):
        raise refuse("np.where(condition) with one argument (its output size depends on the "
                     "data)")
    dt = out.dtype
    c = g.val(condition, BOOL)
    return g.where(c, g.val(x, dt), g.val(y, dt), dt)


@lowering(np.round, np.around, onnx=("Round", "Mul", "Div"))
def lower_round(g, out, a, decimals=0):
    # rounded in the input's dtype, then cast into an out= array of another dtype
    dt = out.dtype if g.target is None else np.dtype(a.dtype)
    r = _round(g, g.val(a, dt), dt, decimals)
    return g.cast(r, out.dtype) if dt != out.dtype else r


def _round(g, x, dt, decimals):
    if dt.kind != "f":
        if decimals >= 0:
            return g.node("Identity", [x])
        raise refuse("np.round of integers with negative decimals")
    if decimals == 0:
        return g.math("Round", [x], dt)
    if decimals > 0:
        f = _c(g, 10.0 ** decimals, dt)
        return g.math("Div", [g.math("Round", [g.math("Mul", [x, f], dt)], dt), f], dt)
    f = _c(g, 10.0 ** -decimals, dt)
    return g.math("Mul", [g.math("Round", [g.math("Div", [x, f], dt)], dt), f], dt)


@lowering(np.isclose, onnx=("Abs", "Sub", "LessOrEqual"))
def lower_isclose(g, out, a, b, rtol=1e-5, atol=1e-8, equal_nan=False):
    dt = np.result_type(*(d if isinstance(d, np.dtype) else d(0) for d in
                          (dtype_of(a), dtype_of(b))), 1.0)
    if dt.kind != "f":
        raise refuse(f"np.isclose of {dt}")
    x, y = g.val(a, dt), g.val(b, dt)
    tol = g.math("Add", [g.val(atol, dt), g.math("Mul", [g.val(rtol, dt),
                                                         g.math("Abs", [y], dt)], dt)], dt)
    close = g.math("LessOrEqual", [g.math("Abs", [g.math("Sub", [x, y], dt)], dt), tol], dt,
                   out=BOOL)
    res = g.node("And", [close, _isfinite(g, [y], [dt])])
    res = g.node("Or", [res, g.math("Equal", [x, y], dt, out=BOOL)])
    if equal_nan:
        res = g.node("Or", [res, g.node("And", [_isnan(g, [x], [dt]), _isnan(g, [y], [dt])])])
    return res


@lowering(np.nan_to_num, onnx=("IsNaN", "IsInf", "Where"))
def lower_nan_to_num(g, out, x, copy=True, nan=0.0, posinf=None, neginf=None):
    dt = out.dtype
    v = g.val(x, dt)
    if dt.kind != "f":
        return g.node("Identity", [v])
    info = np.finfo(dt)
    zero = _c(g, 0, dt)
    v2 = g.where(g.math("IsNaN", [v], dt, out=BOOL), g.val(nan, dt), v, dt)
    inf = g.math("IsInf", [v], dt, out=BOOL)
    pos = g.node("And", [inf, g.math("Greater", [v, zero], dt, out=BOOL)])
    neg = g.node("And", [inf, g.math("Less", [v, zero], dt, out=BOOL)])
    v2 = g.where(pos, g.val(info.max if posinf is None else posinf, dt), v2, dt)
    return g.where(neg, g.val(info.min if neginf is None else neginf, dt), v2, dt)

