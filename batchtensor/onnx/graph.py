"""The graph under construction: nodes, deduplicated initializers, symbolic dims, dtype-aware
compute nodes. Lowerings receive it as ``g``.

Conventions. Every value is a name. Batch-dependent sizes are never literals: a dimension is
an int or a ``SymDim``; ``g.dim(d)`` gives a 1-element int64 tensor computed from ``Shape`` of a
graph input (the canonical source of each batch symbol) for a SymDim, a constant otherwise.
``g.math`` emits a compute node in a dtype onnxruntime implements, widening exactly (small ints
to int32, float16 to float32, bool to uint8) or refusing with an ``UnsupportedOpError``.
"""

from __future__ import annotations

import itertools
import math as _math
from typing import Any, Sequence

import numpy as np

from .errors import UnsupportedOpError
from .kernels import has_kernel, onnx_type
from .recorder import TArray
from .symdim import SymDim

__all__ = ["Graph", "Symbol"]

INT64 = np.dtype(np.int64)
BOOL = np.dtype(np.bool_)

# Exact widenings, tried in order when onnxruntime lacks a kernel for a dtype.
_WIDEN = {
    np.dtype(np.bool_): (np.dtype(np.uint8), np.dtype(np.int32)),
    np.dtype(np.int8): (np.dtype(np.int32), INT64),
    np.dtype(np.int16): (np.dtype(np.int32), INT64),
    np.dtype(np.uint8): (np.dtype(np.int32), INT64),
    np.dtype(np.uint16): (np.dtype(np.int32), INT64),
    np.dtype(np.int32): (INT64,),
    np.dtype(np.uint32): (INT64,),
    np.dtype(np.float16): (np.dtype(np.float32),),
}

SUPPORTED_KINDS = "biuf"


class Symbol:
    """One symbolic batch axis: its graph name, trace size and shadow size."""

    __slots__ = ("name", "trace", "shadow", "source")

    def __init__(self, name: str, trace: int, shadow: int):
        self.name, self.trace, self.shadow = name, trace, shadow
        self.source: Any = None  # (graph input name, axis), set when an input carries it


def _key(attrs: dict) -> tuple:
    return tuple(sorted((k, tuple(v) if isinstance(v, list) else v) for k, v in attrs.items()))


class Graph:
    def __init__(self, opset: int, symbols: Sequence[Symbol]):
        self.opset = opset
        self.symbols = list(symbols)
        self.nodes: list = []
        self.initializers: list = []
        self._consts: dict = {}
        self._dims: dict = {}
        self._casts: dict = {}
        self._ids = itertools.count()
        self.op_name = "?"  # the physical op being lowered (for messages)
        self.site = ""  # where it was called from (node doc strings)
        self.target = None  # the TArray an in-place op / out= writes, while it is lowered
        self.shape_consts: list = []  # (node, input index) of shape-like int64 constants
        self.f64_matmuls: list = []  # (MatMul node, rank a, rank b) in float64

    # ---- names, nodes, constants ------------------------------------------------------------
    def fresh(self, hint: str = "v") -> str:
        return f"{hint}_{next(self._ids)}"

    def node(self, op_type: str, inputs: Sequence[str], n_out: int = 1, **attrs) -> Any:
        from onnx import helper  # noqa: PLC0415

        outs = [self.fresh(op_type.lower()) for _ in range(n_out)]
        nd = helper.make_node(op_type, list(inputs), outs, **attrs)
        if self.site:
            nd.doc_string = self.site
        self.nodes.append(nd)
        return outs[0] if n_out == 1 else outs

    def const(self, value: Any, dtype: Any = None) -> str:
        """A deduplicated initializer holding ``value`` (converted to ``dtype`` if given)."""
        from onnx import numpy_helper  # noqa: PLC0415

        arr = np.asarray(value) if dtype is None else np.asarray(value).astype(dtype)
        self.check_dtype(arr.dtype)
        if not arr.flags.c_contiguous:
            arr = arr.copy(order="C")
        key = (arr.dtype.str, arr.shape, arr.tobytes())
        name = self._consts.get(key)
        if name is None:
            name = f"c{len(self._consts)}"
            self._consts[key] = name
            self.initializers.append(numpy_helper.from_array(arr, name))
        return name

    def i64(self, values: Sequence[int]) -> str:
        return self.const(np.array([int(v) for v in values], dtype=np.int64))

    def scalar(self, value: Any, dtype: Any) -> str:
        return self.const(np.array(value, dtype=dtype))

    def check_dtype(self, dtype) -> None:
        dt = np.dtype(dtype)
        if dt.kind not in SUPPORTED_KINDS:
            raise UnsupportedOpError(
                f"{self.op_name}: dtype {dt} cannot be exported (supported: bool, integers, "
                f"float16/32/64; complex, string, object and datetime values have no "
                f"onnxruntime kernels). Keep such values outside the exported function.")

    def cast(self, name: str, to: Any) -> str:
        to = np.dtype(to)
        self.check_dtype(to)
        key = (name, to.str)
        out = self._casts.get(key)
        if out is None:
            out = self.node("Cast", [name], to=onnx_type(to))
            self._casts[key] = out
        return out

    # ---- values -------------------------------------------------------------------------------
    def val(self, x: Any, dtype: Any = None) -> str:
        """The graph name of ``x`` (recorded array, constant array, Python scalar, SymDim),
        cast to ``dtype`` if given. Python scalars take ``dtype`` (NEP 50: weak scalars)."""
        if type(x) is TArray:
            x.check_fresh()
            if x.name is None:
                return self.const(x.v, dtype)
            name, cur = x.name, x.v.dtype
        elif type(x) is SymDim:
            name, cur = self.node("Squeeze", [self.dim(x)]), INT64
        elif isinstance(x, (np.ndarray, np.generic, list, tuple)):
            return self.const(np.asarray(x), dtype)
        elif isinstance(x, (bool, int, float)):
            if dtype is None:
                dtype = np.result_type(x)
            return self.const(np.array(x, dtype=dtype))
        else:
            raise UnsupportedOpError(
                f"{self.op_name}: cannot use a {type(x).__name__} as an array in the graph")
        if dtype is not None and np.dtype(dtype) != cur:
            return self.cast(name, dtype)
        return name

    # ---- batch-dependent sizes ---------------------------------------------------------------
    def monomial(self, v: int, s: int):
        """``(c, exponents)`` with ``v = c * prod(trace**e)`` and ``s = c * prod(shadow**e)``."""
        for exps in itertools.product(range(4), repeat=len(self.symbols)):
            if not any(exps):
                continue
            tv = _math.prod(sym.trace ** e for sym, e in zip(self.symbols, exps))
            sv = _math.prod(sym.shadow ** e for sym, e in zip(self.symbols, exps))
            if v % tv == 0 and (v // tv) * sv == s:
                return v // tv, exps
        return None

    def symbol_of(self, v: int, s: int):
        """The Symbol whose sizes are exactly ``(v, s)``, or None."""
        for sym in self.symbols:
            if sym.trace == v and sym.shadow == s:
                return sym
        return None

    def dim(self, d: Any) -> str:
        """A 1-element int64 tensor holding dimension ``d`` (an int or a SymDim)."""
        if type(d) is not SymDim:
            return self.i64([d])
        key = (int(d), d.s)
        name: Any = self._dims.get(key)  # (a str once built)
        if name is not None:
            return name
        mono = self.monomial(int(d), d.s)
        if mono is not None:
            c, exps = mono
            name = None
            for sym, e in zip(self.symbols, exps):
                for _ in range(e):
                    t = self._symbol_tensor(sym)
                    name = t if name is None else self.node("Mul", [name, t])
            if c != 1:
                name = self.node("Mul", [name, self.i64([c])])
        else:
            name = self._lower_expr(d.expr)
        self._dims[key] = name
        return name

    def _symbol_tensor(self, sym: Symbol) -> str:
        key = ("sym", sym.name)
        name = self._dims.get(key)
        if name is None:
            src, axis = sym.source
            saved, self.site = self.site, f"size of the batch axis {sym.name}"
            name = self.node("Shape", [src], start=axis, end=axis + 1)
            self.site = saved
            self._dims[key] = name
        return name

    def _lower_expr(self, expr: Any) -> str:
        if isinstance(expr, int) and type(expr) is not SymDim:
            return self.i64([expr])
        if type(expr) is SymDim:
            return self.dim(expr)
        if expr is None:
            raise UnsupportedOpError(f"{self.op_name}: a batch-dependent size that is not a "
                                     f"product of batch sizes and constants")
        op = expr[0]
        if op == "shape":
            _, name, axis = expr
            return self.node("Shape", [name], start=axis, end=axis + 1)
        a, b = self._lower_expr(expr[1]), self._lower_expr(expr[2])
        onnx_op = {"+": "Add", "-": "Sub", "*": "Mul", "//": "Div", "%": "Mod"}[op]
        return self.node(onnx_op, [a, b])

    def dims_of(self, vshape: Sequence[int], sshape: Sequence[int]) -> list:
        """Dims (int or SymDim) of a value traced with shape ``vshape``, shadowed ``sshape``."""
        out = []
        for a, b in zip(vshape, sshape):
            if a == b:
                out.append(int(a))
            else:
                if self.monomial(int(a), int(b)) is None:
                    raise UnsupportedOpError(
                        f"{self.op_name}: an output dimension ({a} at the trace sizes, {b} at "
                        f"the shadow sizes) is not a product of batch sizes and constants; its "
                        f"size depends on the data or on the batch size in a way ONNX cannot "
                        f"express here")
                out.append(SymDim(int(a), int(b), None))
        return out

    def shape_tensor(self, dims: Sequence[Any]) -> str:
        """A 1-D int64 tensor of ``dims`` (ints and SymDims): one constant when static."""
        dims = list(dims)
        if not any(type(d) is SymDim for d in dims):
            return self.i64(dims)
        parts: list[str] = []
        run: list[Any] = []
        for d in dims:
            if type(d) is SymDim:
                if run:
                    parts.append(self.i64(run))
                    run = []
                parts.append(self.dim(d))
            else:
                run.append(int(d))
        if run:
            parts.append(self.i64(run))
        return parts[0] if len(parts) == 1 else self.node("Concat", parts, axis=0)

    def reshape(self, name: str, dims: Sequence[Any]) -> str:
        """Reshape to ``dims``: ``-1`` at the one batch-dependent position when that is
        unambiguous, else every dim spelled out (``allowzero=1``, since 0 is a real size)."""
        dims = list(dims)
        dyn = [i for i, d in enumerate(dims) if type(d) is SymDim]
        if len(dyn) == 1 and all(d != 0 for d in dims):
            target = [int(d) for d in dims]
            target[dyn[0]] = -1
            idx = len(self.nodes)
            out = self.node("Reshape", [name, self.i64(target)])
            self.shape_consts.append((idx, 1))
            return out
        if not dyn and all(d != 0 for d in dims):
            idx = len(self.nodes)
            out = self.node("Reshape", [name, self.i64(dims)])
            self.shape_consts.append((idx, 1))
            return out
        return self.node("Reshape", [name, self.shape_tensor(dims)], allowzero=1)

    def expand(self, name: str, dims: Sequence[Any]) -> str:
        idx = len(self.nodes)
        out = self.node("Expand", [name, self.shape_tensor(dims)])
        self.shape_consts.append((idx, 1))
        return out

    def fill(self, shape: str, value: Any, dtype: Any) -> str:
        """``ConstantOfShape(shape)`` filled with ``value`` of ``dtype``."""
        from onnx import numpy_helper  # noqa: PLC0415

        self.check_dtype(dtype)
        t = numpy_helper.from_array(np.array([value], dtype=dtype), "value")
        return self.node("ConstantOfShape", [shape], value=t)

    def finalize(self) -> None:
        """Graph rewrites that protect NumPy's results from onnxruntime's optimizer."""
        self._unfuse_f64_matmul_scales()

    def _unfuse_f64_matmul_scales(self) -> None:
        """onnxruntime (<= 1.31) fuses ``MatMul`` with a neighbouring Mul/Div by a scalar
        constant into ``FusedMatMul``, whose scale is a float32 attribute: float64 models then
        lose precision (attention's ``q @ k.T / sqrt(d)``). Such float64 MatMuls are written as
        the equivalent ``Einsum``, which that fusion does not touch."""
        if not self.f64_matmuls:
            return
        from onnx import helper  # noqa: PLC0415

        scalar_consts = {t.name for t in self.initializers
                         if int(np.prod(t.dims)) == 1}
        producers = {o: n for n in self.nodes for o in n.output}
        consumers: dict = {}
        for n in self.nodes:
            for i in n.input:
                consumers.setdefault(i, []).append(n)

        def is_scale(n) -> bool:
            return n is not None and n.op_type in ("Mul", "Div") and any(
                i in scalar_consts for i in n.input)

        for mm, ra, rb in self.f64_matmuls:
            near = [producers.get(i) for i in mm.input] + consumers.get(mm.output[0], [])
            if not any(is_scale(n) for n in near):
                continue
            a, b = mm.input
            pre = []
            if ra >= 2 and rb >= 2 and ra != rb:
                k = abs(ra - rb)
                name = self.fresh("unsqueeze")
                target = a if ra < rb else b
                pre.append(helper.make_node("Unsqueeze", [target, self.i64(range(k))], [name]))
                a, b = (name, b) if ra < rb else (a, name)
            lhs = "...ij" if ra >= 2 else "j"
            rhs = "...jk" if rb >= 2 else "j"
            if ra >= 2 and rb >= 2:
                res = "...ik"
            elif ra >= 2:
                res = "...i"
            elif rb >= 2:
                res = "...k"
            else:
                res = ""
            node = helper.make_node("Einsum", [a, b], list(mm.output),
                                    equation=f"{lhs},{rhs}->{res}")
            node.doc_string = mm.doc_string
            idx = next(i for i, n in enumerate(self.nodes) if n is mm)
            self.nodes[idx:idx + 1] = pre + [node]

    # ---- compute nodes in a supported dtype ---------------------------------------------------
    def math(self, op_type: str, names: Sequence[str], dtype: Any, *, out: Any = None,
             extra: Sequence[str] = (), probe_extra: tuple = (), rank: int = 1,
             probe_attrs: dict | None = None, n_out: int = 1, widen: bool = True,
             **attrs) -> Any:
        """Emit ``op_type`` on ``names`` (all of ``dtype``) plus ``extra`` inputs.

        ``out``: the output dtype if it is not ``dtype`` (comparisons: bool). If onnxruntime
        has no kernel for ``dtype``, compute in an exact wider dtype and cast back.
        """
        dt = np.dtype(dtype)
        out_dt = None if out is None else np.dtype(out)
        if probe_attrs is None:
            probe_attrs = {k: (0 if k == "axis" else v) for k, v in attrs.items()}
        pattrs = _key(probe_attrs)

        def ok(d):
            return has_kernel(op_type, (d.str,) * len(names), self.opset, pattrs, probe_extra,
                              None if out_dt is None else out_dt.str, rank, n_out)

        if ok(dt):
            return self.node(op_type, list(names) + list(extra), n_out=n_out, **attrs)
        if widen:
            for wide in _WIDEN.get(dt, ()):
                if ok(wide):
                    res = self.node(op_type, [self.cast(n, wide) for n in names] + list(extra),
                                    n_out=n_out, **attrs)
                    if out_dt is None:
                        if n_out == 1:
                            return self.cast(res, dt)
                        return [self.cast(res[0], dt)] + list(res[1:])
                    return res
        raise UnsupportedOpError(
            f"{self.op_name}: onnxruntime has no {dt} kernel for the ONNX op {op_type} (opset "
            f"{self.opset}) and there is no exact way around it. It is not computed in another "
            f"precision silently: cast the values yourself (e.g. x.astype(np.float32)) if "
            f"that is acceptable, or keep this op outside the exported function.")

    def where(self, cond: str, a: str, b: str, dtype: Any) -> str:
        """``Where(cond, a, b)`` with ``a``, ``b`` of ``dtype`` (bool branches go through
        uint8: onnxruntime has no bool Where)."""
        dt = np.dtype(dtype)
        for cand in (dt,) + _WIDEN.get(dt, ()):
            if has_kernel("Where", (BOOL.str, cand.str, cand.str), self.opset):
                if cand == dt:
                    return self.node("Where", [cond, a, b])
                res = self.node("Where", [cond, self.cast(a, cand), self.cast(b, cand)])
                return self.cast(res, dt)
        raise UnsupportedOpError(f"{self.op_name}: onnxruntime has no Where kernel for {dt}")
