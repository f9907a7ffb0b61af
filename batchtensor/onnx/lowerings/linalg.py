"""Products: matmul (ufunc), dot, einsum, tensordot, vecdot/matvec/vecmat, linalg.norm (the
vector and Frobenius norms)."""

from __future__ import annotations

import string

import numpy as np

from ..errors import UnsupportedOpError
from ..recorder import lowering
from ..symdim import SymDim
from ._common import BOOL, axes_of, dims_of, ndim_of, refuse

__all__: list = []


def _mm(g, a: str, b: str, dt, ra: int, rb: int) -> str:
    if dt == BOOL:
        i = np.dtype(np.int32)
        r = g.math("MatMul", [g.cast(a, i), g.cast(b, i)], i, rank=2)
        return g.math("Greater", [r, g.scalar(0, i)], i, out=BOOL)
    res = g.math("MatMul", [a, b], dt, rank=2)
    if dt == np.float64 and g.nodes[-1].op_type == "MatMul":
        g.f64_matmuls.append((g.nodes[-1], ra, rb))
    return res


def _check_kw(kwargs: dict, allowed=("dtype", "casting", "order", "subok")) -> None:
    for k, v in kwargs.items():
        if k not in allowed and v is not None:
            raise refuse(f"the keyword {k}=")


def _empty_product(g, out, *operands) -> str | None:
    """onnxruntime's MatMul/Einsum fail on zero-size operands: an empty result, or a sum over
    an empty axis, is all zeros of the result's shape."""
    if any(d == 0 for d in out.dims if type(d) is not SymDim) or any(
            d == 0 for x in operands for d in dims_of(x) if type(d) is not SymDim):
        return g.fill(g.shape_tensor(out.dims), 0, out.dtype)
    return None


def _gufunc_product(body):
    """matmul / vecdot / matvec / vecmat: NumPy's keywords checked, an empty result as zeros,
    else ``body(g, out, x1, x2, dtype)``."""
    def lower(g, out, x1, x2, **kwargs):
        _check_kw(kwargs)
        empty = _empty_product(g, out, x1, x2)
        return empty if empty is not None else body(g, out, x1, x2, out.dtype)

    lower.__name__ = body.__name__
    return lower


@lowering(np.matmul, onnx=("MatMul",))
@_gufunc_product
def lower_matmul(g, out, a, b, dt):
    return _mm(g, g.val(a, dt), g.val(b, dt), dt, ndim_of(a), ndim_of(b))


def _einsum_eq(eq: str) -> str:
    """Explicit form with lower-case letters only (what ONNX Einsum accepts)."""
    eq = eq.replace(" ", "")
    inputs, arrow, output = eq.partition("->")
    if not arrow:
        letters = [c for c in inputs if c.isalpha()]
        output = ("..." if "..." in inputs else "") + "".join(
            sorted(c for c in set(letters) if letters.count(c) == 1))
    used = sorted(set(c for c in inputs + output if c.isalpha()))
    if len(used) > 26:
        raise refuse("einsum with more than 26 distinct subscripts")
    lower = [c for c in string.ascii_lowercase]
    mapping = {c: c for c in used if c.islower()}
    free = [c for c in lower if c not in mapping.values()]
    for c in used:
        if c not in mapping:
            mapping[c] = free.pop(0)
    conv = lambda s: "".join(mapping.get(c, c) for c in s)  # noqa: E731
    return f"{conv(inputs)}->{conv(output)}"


def _einsum(g, out, eq: str, operands) -> str:
    dt = out.dtype
    empty = _empty_product(g, out, *operands)
    if empty is not None:
        return empty
    names = [g.val(x, dt) for x in operands]
    if dt == BOOL:
        raise refuse("einsum of booleans")
    return g.math("Einsum", names, dt, equation=_einsum_eq(eq), rank=2,
                  probe_attrs={"equation": "ij,jk->ik" if len(names) == 2 else
                               ",".join(["ij"] * len(names)) + "->ij"})


@lowering(np.einsum, onnx=("Einsum",))
def lower_einsum(g, out, *operands, out_=None, dtype=None, order="K", casting="safe",
                 optimize=False):
    if not operands or not isinstance(operands[0], str):
        raise refuse("einsum in the interleaved (operand, sublist) form")
    return _einsum(g, out, operands[0], operands[1:])


@lowering(np.dot, onnx=("MatMul", "Einsum", "Mul"))
def lower_dot(g, out, a, b, out_=None):
    dt = out.dtype
    ra, rb = ndim_of(a), ndim_of(b)
    empty = _empty_product(g, out, a, b)
    if empty is not None:
        return empty
    if ra == 0 or rb == 0:
        return g.math("Mul", [g.val(a, dt), g.val(b, dt)], dt)
    if rb <= 2:
        return _mm(g, g.val(a, dt), g.val(b, dt), dt, ra, rb)
    la = string.ascii_lowercase[:ra]
    lb = string.ascii_lowercase[ra:ra + rb - 1]
    k = la[-1]
    sb = lb[:-1] + k + lb[-1]
    return _einsum(g, out, f"{la},{sb}->{la[:-1]}{lb}", [a, b])


@lowering(np.tensordot, onnx=("Einsum",))
def lower_tensordot(g, out, a, b, axes=2):
    ra, rb = ndim_of(a), ndim_of(b)
    if isinstance(axes, (int, np.integer)):
        ax_a, ax_b = list(range(ra - axes, ra)), list(range(axes))
    else:
        ax_a, ax_b = axes
        ax_a = [ax_a] if isinstance(ax_a, (int, np.integer)) else list(ax_a)
        ax_b = [ax_b] if isinstance(ax_b, (int, np.integer)) else list(ax_b)
        ax_a = [x % ra for x in ax_a]
        ax_b = [x % rb for x in ax_b]
    letters = iter(string.ascii_lowercase)
    sa = [next(letters) for _ in range(ra)]
    sb = [next(letters) for _ in range(rb)]
    for i, j in zip(ax_a, ax_b):
        sb[j] = sa[i]
    outs = [c for i, c in enumerate(sa) if i not in ax_a] + \
        [c for j, c in enumerate(sb) if j not in ax_b]
    return _einsum(g, out, f"{''.join(sa)},{''.join(sb)}->{''.join(outs)}", [a, b])


@lowering(np.vecdot, onnx=("Mul", "ReduceSum"))
@_gufunc_product
def lower_vecdot(g, out, x1, x2, dt):
    p = g.math("Mul", [g.val(x1, dt), g.val(x2, dt)], dt)
    return g.math("ReduceSum", [p], dt, extra=[g.i64([-1])], probe_extra=(("<i8", (0,)),),
                  keepdims=0)


def _matrix_vector(g, x1, x2, dt, vector_axis: int):
    """matvec (the vector is x2, a column: axis -1) or vecmat (x1, a row: axis -2) as a
    MatMul with the vector made a one-column / one-row matrix."""
    axis = g.i64([vector_axis])
    if vector_axis == -1:
        v = g.node("Unsqueeze", [g.val(x2, dt), axis])
        prod = _mm(g, g.val(x1, dt), v, dt, ndim_of(x1), 2)
    else:
        v = g.node("Unsqueeze", [g.val(x1, dt), axis])
        prod = _mm(g, v, g.val(x2, dt), dt, 2, ndim_of(x2))
    return g.node("Squeeze", [prod, axis])


@lowering(np.matvec, onnx=("MatMul",))
@_gufunc_product
def lower_matvec(g, out, x1, x2, dt):
    return _matrix_vector(g, x1, x2, dt, -1)


@lowering(np.vecmat, onnx=("MatMul",))
@_gufunc_product
def lower_vecmat(g, out, x1, x2, dt):
    return _matrix_vector(g, x1, x2, dt, -2)


def _vector_norm(g, dt, v: str, axes, kd: int, ord) -> str:
    red = lambda op, t: g.math(op, [t], dt, extra=[g.i64(axes)],  # noqa: E731
                               probe_extra=(("<i8", (0,)),), keepdims=kd)
    a = g.math("Abs", [v], dt)
    if ord is None or ord == 2:
        return g.math("Sqrt", [red("ReduceSum", g.math("Mul", [v, v], dt))], dt)
    if ord == 1:
        return red("ReduceSum", a)
    if ord == np.inf:
        return red("ReduceMax", a)
    if ord == -np.inf:
        return red("ReduceMin", a)
    if ord == 0:
        nz = g.cast(g.node("Not", [g.math("Equal", [v, g.scalar(0, dt)], dt, out=BOOL)]), dt)
        return red("ReduceSum", nz)
    if isinstance(ord, (int, float)) and not isinstance(ord, bool):
        p = g.scalar(ord, dt)
        s = red("ReduceSum", g.math("Pow", [a, p], dt))
        return g.math("Pow", [s, g.scalar(1.0 / ord, dt)], dt)
    raise UnsupportedOpError(f"{g.op_name}: a vector norm with ord={ord!r} cannot be exported")


def _matrix_norm(g, dt, v: str, ax0: int, ax1: int, kd: int, ord) -> str:
    def red(op, t, axes, keep):
        return g.math(op, [t], dt, extra=[g.i64(axes)], probe_extra=(("<i8", (0,)),),
                      keepdims=keep)

    if ord is None or ord == "fro":
        return g.math("Sqrt", [red("ReduceSum", g.math("Mul", [v, v], dt), [ax0, ax1], kd)],
                      dt)
    a = g.math("Abs", [v], dt)
    if ord in (1, -1, np.inf, -np.inf):
        inner, outer = (ax0, ax1) if ord in (1, -1) else (ax1, ax0)
        sums = red("ReduceSum", a, [inner], 1)
        r = red("ReduceMax" if ord in (1, np.inf) else "ReduceMin", sums, [outer], 1)
        return r if kd else g.node("Squeeze", [r, g.i64(sorted([ax0, ax1]))])
    raise UnsupportedOpError(f"{g.op_name}: a matrix norm with ord={ord!r} cannot be exported "
                             f"(it needs singular values; 'fro', 1, -1, inf, -inf do)")


def _norm_dtype(g, out):
    dt = out.dtype
    if dt.kind != "f":
        raise refuse(f"a norm with result dtype {dt}")
    return dt


@lowering(np.linalg.norm, onnx=("ReduceSum", "ReduceMax", "Abs", "Sqrt"))
def lower_norm(g, out, x, ord=None, axis=None, keepdims=False):
    dt = _norm_dtype(g, out)
    v = g.val(x, dt)
    nd = ndim_of(x)
    kd = int(bool(keepdims))
    if axis is None:
        if ord is not None and not (ord == "fro" and nd == 2) and not (nd == 1):
            raise refuse("np.linalg.norm with ord= and axis=None")
        if nd == 2 and ord is not None:
            return _matrix_norm(g, dt, v, 0, 1, kd, ord)
        return _vector_norm(g, dt, v, tuple(range(nd)), kd, ord)
    axes = axes_of(axis, nd)
    if len(axes) == 1:
        return _vector_norm(g, dt, v, axes, kd, ord)
    return _matrix_norm(g, dt, v, axes[0], axes[1], kd, ord)


@lowering(np.linalg.vector_norm, onnx=("ReduceSum", "ReduceMax", "Abs", "Sqrt"))
def lower_vector_norm(g, out, x, /, *, axis=None, keepdims=False, ord=2):
    dt = _norm_dtype(g, out)
    axes = axes_of(axis, ndim_of(x))
    return _vector_norm(g, dt, g.val(x, dt), axes, int(bool(keepdims)), ord)


@lowering(np.linalg.matrix_norm, onnx=("ReduceSum", "ReduceMax", "Abs", "Sqrt"))
def lower_matrix_norm(g, out, x, /, *, keepdims=False, ord="fro"):
    dt = _norm_dtype(g, out)
    nd = ndim_of(x)
    return _matrix_norm(g, dt, g.val(x, dt), nd - 2, nd - 1, int(bool(keepdims)), ord)
