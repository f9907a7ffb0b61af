"""``export``: record ``vmap(func)`` once and write it as an ONNX model with symbolic batch axes.

The trace runs the real batch rules on ``TArray`` physical values (see ``recorder``), at an
unusual batch size per vmap level (7, 11, ...), with a shadow run at other sizes. ``func`` may
itself be a ``bt.vmap(...)`` of a function (any depth): each level becomes one symbolic axis,
``B`` for one level, ``B0``, ``B1``, ... for nested levels.
"""

from __future__ import annotations

import inspect
from typing import AbstractSet, Any, Callable, Sequence

import numpy as np

from ..api import VmapFunction, unwrap_outputs, vmap, vmap_level
from ..config import config
from ..errors import BatchingError
from ..pytree import broadcast_prefix, flatten, leaf_paths, unflatten
from ..tensor import BatchedTensor, is_plain_array, new_batched
from .errors import BatchSizeLeakError, ExportError, ExportValidationError
from .graph import Graph, Symbol
from .kernels import ir_version_for, onnx_type
from .recorder import TArray, tracing
from .symdim import SymDim

__all__ = ["export", "validate", "find_leaks", "VALIDATION_SIZES"]

_PRIMES = (7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47)
_SHADOW = (5, 3, 2, 53, 59, 61)
#: batch sizes validate() runs per symbol (one column per run)
VALIDATION_SIZES = ((1, 3, 7), (2, 4, 5), (3, 1, 2), (2, 2, 3))


class _Level:
    __slots__ = ("in_axes", "out_axes")

    def __init__(self, in_axes, out_axes):
        self.in_axes, self.out_axes = in_axes, out_axes


def _peel(func: Callable, in_axes: Any, out_axes: Any) -> tuple[Callable, list]:
    """The innermost function and one ``_Level`` per vmap level (export's own first)."""
    levels = [_Level(in_axes, out_axes)]
    while isinstance(func, VmapFunction):
        if func.chunk_size not in (None, "auto"):  # (peeled: "auto" sizes eager calls only)
            raise ExportError("bt.onnx.export: a nested bt.vmap with chunk_size=N cannot be "
                              "exported (chunking loops over a concrete batch size); drop it")
        levels.append(_Level(func.in_axes, func.out_axes))
        func = func.func
    return func, levels


def _axes_per_leaf(spec: Any, args: tuple, n: int) -> list:
    if spec is None or (isinstance(spec, int) and not isinstance(spec, bool)):
        return [spec] * n
    if isinstance(spec, (tuple, list)) and len(spec) != len(args):
        raise ValueError(f"bt.onnx.export: in_axes has {len(spec)} entries but {len(args)} "
                         f"arguments were given")
    return broadcast_prefix(tuple(spec), args, "in_axes", "args")


def _input_names(func: Callable, args: tuple) -> list[str]:
    try:
        params = [p.name for p in inspect.signature(func).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        params = []
    names = []
    for path in leaf_paths(args):
        head = params[path[0]] if path[0] < len(params) else f"arg{path[0]}"
        names.append("_".join([head] + [str(k) for k in path[1:]]))
    seen: dict = {}
    out = []
    for n in names:
        k = seen.get(n, 0)
        seen[n] = k + 1
        out.append(n if not k else f"{n}_{k}")
    return out


class _Plan:
    """Which leaves are mapped where, the example batch sizes, and the symbols."""

    def __init__(self, func, levels, args):
        self.leaves, self.treedef = flatten(args)
        self.levels = levels
        n = len(self.leaves)
        self.maps: list[list] = [[] for _ in range(n)]  # per leaf: [(level, physical axis)]
        self.sizes: list = [None] * len(levels)  # examples available per level
        for k, lv in enumerate(levels):
            axes = _axes_per_leaf(lv.in_axes, args, n)
            for i, ax in enumerate(axes):
                if ax is None:
                    continue
                leaf = self.leaves[i]
                if not is_plain_array(leaf):
                    raise ValueError(f"bt.onnx.export: argument leaf {i} is mapped by in_axes "
                                     f"but is a {type(leaf).__name__}, not a NumPy array")
                remaining = [a for a in range(leaf.ndim) if a not in
                             [p for _, p in self.maps[i]]]
                nd = len(remaining)
                if not -nd <= ax < nd:
                    raise ValueError(f"bt.onnx.export: in_axes={ax} is out of range for "
                                     f"argument leaf {i} of shape {leaf.shape} at level {k}")
                p = remaining[ax % nd]
                self.maps[i].append((k, p))
                size = leaf.shape[p]
                if self.sizes[k] is None:
                    self.sizes[k] = size
                elif self.sizes[k] != size:
                    raise ValueError(f"bt.onnx.export: inconsistent batch sizes at vmap level "
                                     f"{k}: {self.sizes[k]} and {size}")
        for k, s in enumerate(self.sizes):
            if s is None:
                raise ValueError(f"bt.onnx.export: no argument is mapped at vmap level {k}; "
                                 f"every level needs a mapped input to carry its batch axis")
            if s == 0:
                raise ValueError("bt.onnx.export: the example arguments have batch size 0; "
                                 "give at least one example")
        self.names = _input_names(func, args)

    def static_dims(self) -> set:
        dims: set = set()
        for i, leaf in enumerate(self.leaves):
            if is_plain_array(leaf):
                mapped = {p for _, p in self.maps[i]}
                dims.update(d for a, d in enumerate(leaf.shape) if a not in mapped)
        return dims

    def take(self, sizes: Sequence[int], offset: int = 0) -> list:
        """Leaves resampled to ``sizes[k]`` examples along level k's axis (cyclically)."""
        out = []
        for i, leaf in enumerate(self.leaves):
            for k, p in self.maps[i]:
                n = self.sizes[k]
                idx = (np.arange(sizes[k]) + offset * (k + 1)) % n
                leaf = np.take(leaf, idx, axis=p)
            out.append(np.ascontiguousarray(leaf) if self.maps[i] else leaf)
        return out


def _choose_sizes(plan: _Plan, trace_batch_size: Any) -> list[Symbol]:
    nlev = len(plan.levels)
    static = {d for d in plan.static_dims() if d > 1}
    if trace_batch_size is not None:
        given = (trace_batch_size,) if isinstance(trace_batch_size, int) \
            else tuple(trace_batch_size)
        if len(given) != nlev or any(t < 2 for t in given) or len(set(given)) != nlev:
            raise ValueError(f"bt.onnx.export: trace_batch_size must give {nlev} distinct "
                             f"sizes >= 2 (one per vmap level), got {trace_batch_size!r}")
        traces = list(given)
    else:
        traces = [p for p in _PRIMES if not any(d % p == 0 for d in static)][:nlev]
    shadows = [p for p in _SHADOW if p not in traces][:nlev]
    names = ["B"] if nlev == 1 else [f"B{k}" for k in range(nlev)]
    return [Symbol(n, t, s) for n, t, s in zip(names, traces, shadows)]


def _const_leaf(x: Any) -> Any:
    if (is_plain_array(x) or isinstance(x, (np.generic, bool, int, float))) \
            and not isinstance(x, SymDim):
        a = np.asarray(x)
        return TArray(a, a.copy(), None)
    return x


def _trace(base: Callable, plan: _Plan, g: Graph,
           kwargs: dict) -> tuple[Any, list[tuple[Any, Any, Any]]]:
    symbols = g.symbols
    tv = plan.take([s.trace for s in symbols])
    sv = plan.take([s.shadow for s in symbols])
    leaves: list = []
    leaves_in = leaves
    graph_inputs = []
    for i, (leaf, a, b) in enumerate(zip(plan.leaves, tv, sv)):
        if not plan.maps[i]:
            leaves.append(leaf)
            continue
        name = plan.names[i]
        g.op_name = f"input {name!r}"
        g.check_dtype(a.dtype)
        t = TArray(a, b, name)
        for k, p in plan.maps[i]:
            if symbols[k].source is None:
                symbols[k].source = (name, p)
        graph_inputs.append((name, a, b))
        leaves.append(t)

    def run(k: int, leaves: list) -> Any:
        if k == len(plan.levels):
            return base(*unflatten(plan.treedef, leaves), **kwargs)
        lv = plan.levels[k]
        axes = _axes_per_leaf(lv.in_axes, unflatten(plan.treedef, leaves), len(leaves))
        with vmap_level() as level:
            src, p = symbols[k].source
            level.size = SymDim(symbols[k].trace, symbols[k].shadow, ("shape", src, p))
            level.size.like = next(t for t in leaves_in if type(t) is TArray)
            wrapped = []
            for leaf, ax in zip(leaves, axes):
                if ax is None:
                    wrapped.append(leaf)
                else:
                    wrapped.append(new_batched(leaf, ax % leaf.ndim, level))
            out = run(k + 1, wrapped)
            out_leaves, td = flatten(out)
            out = unflatten(td, [_const_leaf(x) for x in out_leaves])
            return unwrap_outputs(level, out, lv.out_axes, "out_axes")

    try:
        # no per-example loop or rerun: they unroll over a concrete batch size
        with tracing(g), config(fallback="error"):
            out = run(0, leaves)
    except BatchingError as e:
        if "bt.config.fallback is 'error'" in str(e):
            raise ExportError(
                f"{e}\nIn bt.onnx.export the per-example loop fallback cannot be recorded (it "
                f"unrolls over a concrete batch size): the op needs a batch rule, a boxed kind "
                f"or a decomposition to export.") from None
        raise
    return out, graph_inputs


def _dims_for(g: Graph, v_shape, s_shape) -> list:
    dims: list = []
    for a, b in zip(v_shape, s_shape):
        if a == b:
            dims.append(int(a))
            continue
        sym = g.symbol_of(int(a), int(b))
        dims.append(sym.name if sym is not None else None)
    return dims


def _value_info(name, dtype, dims):
    from onnx import helper  # noqa: PLC0415

    return helper.make_tensor_value_info(name, onnx_type(dtype), dims)


def export(func: Callable, *example_args: Any, in_axes: Any = 0, out_axes: Any = 0,
           opset: int = 18, validate: bool = True, path: str | None = None,
           trace_batch_size: Any = None, rtol: float | None = None, atol: float | None = None,
           output_names: Sequence[str] | None = None, **kwargs: Any):
    """Export ``vmap(func, in_axes, out_axes)`` as an ONNX model whose batch axes are symbolic.

    ``example_args``: batched example inputs (like the arguments of the vmapped function).
    Mapped arrays become graph inputs with the symbol ``"B"`` at their batch axis; arrays with
    ``in_axes=None`` and arrays the function closes over become initializers. ``func`` may be a
    ``bt.vmap(...)`` itself: each nested level adds a symbol (``B0``, ``B1``, ...). Keyword
    arguments are passed to ``func`` unchanged (constants of the graph).

    The trace runs at an unusual batch size per level (``trace_batch_size``; default: the
    smallest prime >= 7 that divides no per-example dimension). ``validate=True`` runs
    ``validate(model, ...)``: the ONNX checker, shape inference (the batch symbols must survive
    on every output), and onnxruntime at three batch sizes against eager ``bt.vmap``.
    ``path``: also save the model there. Returns the ``onnx.ModelProto``.
    """
    from onnx import helper  # noqa: PLC0415

    if opset < 18:
        raise ValueError(f"bt.onnx.export: opset must be >= 18 (reduce ops take axes as "
                         f"inputs from 18 on), got {opset}")
    base, levels = _peel(func, in_axes, out_axes)
    plan = _Plan(base, levels, example_args)
    symbols = _choose_sizes(plan, trace_batch_size)
    g = Graph(opset, symbols)
    out, graph_inputs = _trace(base, plan, g, kwargs)

    out_leaves, out_td = flatten(out)
    if not out_leaves:
        raise ExportError("bt.onnx.export: the function returns no arrays")
    if output_names is None:
        paths = leaf_paths(out)
        output_names = ["output" if not p else "output_" + "_".join(str(k) for k in p)
                        for p in paths] if len(out_leaves) > 1 else ["output"]
    if len(output_names) != len(out_leaves):
        raise ValueError(f"bt.onnx.export: {len(output_names)} output names for "
                         f"{len(out_leaves)} outputs")
    outputs = []
    for name, leaf in zip(output_names, out_leaves):
        if type(leaf) is BatchedTensor:
            raise ExportError("bt.onnx.export: an output is still batched at an inner level")
        if type(leaf) is not TArray or leaf.name is None:
            raise ExportError(f"bt.onnx.export: output {name!r} does not depend on the inputs "
                              f"and has no batch axis; return it outside the export")
        g.site = f"output {name!r}"
        g.nodes.append(helper.make_node("Identity", [g.val(leaf)], [name]))
        dims = _dims_for(g, leaf.v.shape, leaf.s.shape)
        if None in dims:
            raise ExportError(f"bt.onnx.export: output {name!r} has a dimension that is not "
                              f"one batch symbol ({leaf.v.shape} at the trace sizes)")
        outputs.append(_value_info(name, leaf.dtype, dims))

    g.finalize()
    inputs = [_value_info(n, a.dtype, _dims_for(g, a.shape, b.shape)) for n, a, b in graph_inputs]
    graph = helper.make_graph(g.nodes, "batchtensor_export", inputs, outputs,
                              initializer=g.initializers)
    domains = sorted({n.domain for n in g.nodes if n.domain})  # a primitive's own ops
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)]
                              + [helper.make_opsetid(d, 1) for d in domains],
                              ir_version=ir_version_for(opset), producer_name="batchtensor")
    leaks = find_leaks(model, [s.trace for s in symbols], exclude=plan.static_dims())
    if leaks:
        raise BatchSizeLeakError(
            "the exported graph contains the trace batch size as a literal:\n  "
            + "\n  ".join(leaks)
            + "\nA batch rule turned the batch size into a number (int(), len(), level.size, "
              "np.broadcast_shapes); it must read it from x.shape[bdim] and pass that on. If "
              "such a constant is a genuine per-example size, trace with another size "
              "(trace_batch_size=11).")
    model.metadata_props.add(key="batch_symbols",
                             value=",".join(s.name for s in symbols))
    if validate:
        _validate(model, func, in_axes, out_axes, plan, kwargs, symbols, rtol, atol)
    if path is not None:
        import onnx  # noqa: PLC0415

        onnx.save(model, path)
    return model


_SHAPE_ROLES = {"Reshape": (1,), "Expand": (1,), "ConstantOfShape": (0,), "Tile": (1,),
                "Range": (0, 1)}


def find_leaks(model, trace_sizes: Sequence[int],
               exclude: AbstractSet[int] = frozenset()) -> list[str]:
    """Shape-like int constants (Reshape/Expand/ConstantOfShape/Tile/Range inputs) holding a
    nonzero multiple of a trace batch size (other than the per-example dims in ``exclude``).
    Returns one description per suspicious constant."""
    from onnx import numpy_helper  # noqa: PLC0415

    inits = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    found = []
    for node in model.graph.node:
        for idx in _SHAPE_ROLES.get(node.op_type, ()):
            if idx >= len(node.input) or node.input[idx] not in inits:
                continue
            arr = inits[node.input[idx]]
            if arr.dtype.kind not in "iu":
                continue
            bad = [int(x) for x in arr.ravel()
                   if x and int(x) not in exclude
                   and any(int(x) % t == 0 for t in trace_sizes)]
            if bad:
                where = node.doc_string or node.name or node.output[0]
                found.append(f"{node.op_type} input {idx} = {arr.tolist()} ({where})")
    return found


# ---- validation ---------------------------------------------------------------------------------
def validate(model, func: Callable, *example_args: Any, in_axes: Any = 0, out_axes: Any = 0,
             rtol: float | None = None, atol: float | None = None, **kwargs) -> None:
    """Check an exported model: ONNX checker (full), shape inference with data propagation
    (every output keeps its batch symbols), and onnxruntime at three batch sizes against eager
    ``bt.vmap(func)``. Raises ``ExportValidationError`` on the first problem."""
    base, levels = _peel(func, in_axes, out_axes)
    plan = _Plan(base, levels, example_args)
    names = [p.value for p in model.metadata_props if p.key == "batch_symbols"]
    symbols = [Symbol(n, 0, 0) for n in (names[0].split(",") if names else ["B"])]
    _validate(model, func, in_axes, out_axes, plan, kwargs, symbols, rtol, atol)


def _validate(model, func, in_axes, out_axes, plan, kwargs, symbols, rtol, atol) -> None:
    import onnx  # noqa: PLC0415

    try:
        onnx.checker.check_model(model, full_check=True)
    except Exception as e:  # noqa: BLE001
        raise ExportValidationError(f"onnx.checker rejected the exported model: {e}") from e
    try:
        inferred = onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True,
                                                     data_prop=True)
    except Exception as e:  # noqa: BLE001
        raise ExportValidationError(f"ONNX shape inference failed on the exported model: "
                                    f"{e}") from e
    declared = {o.name: o for o in model.graph.output}
    for o in inferred.graph.output:
        want = declared[o.name].type.tensor_type.shape.dim
        got = o.type.tensor_type.shape.dim
        for ax, (w, h) in enumerate(zip(want, got)):
            if w.dim_param and h.dim_param != w.dim_param:
                raise BatchSizeLeakError(
                    f"after shape inference, output {o.name!r} axis {ax} is "
                    f"{h.dim_value if h.HasField('dim_value') else h.dim_param!r} instead of "
                    f"the batch symbol {w.dim_param!r}: a literal batch size reached the graph")
    _run_ort(model, func, in_axes, out_axes, plan, kwargs, len(symbols), rtol, atol)


def _run_ort(model, func, in_axes, out_axes, plan, kwargs, nsym, rtol, atol) -> None:
    try:
        import onnxruntime as ort  # noqa: PLC0415
    except ImportError as e:
        raise ImportError("validate=True needs onnxruntime: pip install 'batchtensor[onnx]'"
                          ) from e
    opts = ort.SessionOptions()
    opts.log_severity_level = 3
    try:
        sess = ort.InferenceSession(model.SerializeToString(), opts,
                                    providers=["CPUExecutionProvider"])
    except Exception as e:  # noqa: BLE001
        raise ExportValidationError(f"onnxruntime cannot load the exported model: {e}") from e
    in_names = [i.name for i in model.graph.input]
    out_names = [o.name for o in model.graph.output]
    vm = vmap(func, in_axes=in_axes, out_axes=out_axes)
    for run in range(3):
        sizes = [VALIDATION_SIZES[k % len(VALIDATION_SIZES)][run] for k in range(nsym)]
        leaves = plan.take(sizes, offset=run + 1)
        feeds = {}
        j = 0
        for i, leaf in enumerate(leaves):
            if plan.maps[i]:
                feeds[in_names[j]] = leaf.copy()  # eager vmap may write its arguments in place
                j += 1
        want, _ = flatten(vm(*unflatten(plan.treedef, leaves), **kwargs))
        try:
            got = sess.run(out_names, feeds)
        except Exception as e:  # noqa: BLE001
            raise ExportValidationError(
                f"onnxruntime failed at batch sizes {sizes}: {e}") from e
        for name, w, h in zip(out_names, want, got):
            _compare(name, np.asarray(w), h, sizes, rtol, atol)


def _compare(name, want, got, sizes, rtol, atol) -> None:
    where = f"output {name!r} at batch sizes {tuple(sizes)}"
    if want.shape != got.shape:
        raise ExportValidationError(f"{where}: onnxruntime gave shape {got.shape}, eager vmap "
                                    f"{want.shape}")
    if want.dtype != got.dtype:
        raise ExportValidationError(f"{where}: onnxruntime gave dtype {got.dtype}, eager vmap "
                                    f"{want.dtype}")
    if want.dtype.kind == "f":
        size = want.dtype.itemsize
        r = rtol if rtol is not None else {2: 2e-3, 4: 1e-4}.get(size, 1e-7)
        a = atol if atol is not None else {2: 1e-3, 4: 1e-5}.get(size, 1e-9)
        ok = np.isclose(got, want, rtol=r, atol=a, equal_nan=True)
    else:
        ok = got == want
    if not np.all(ok):
        idx = tuple(int(i) for i in np.argwhere(~ok)[0])
        raise ExportValidationError(
            f"{where}: onnxruntime and eager vmap differ at index {idx}: {got[idx]!r} vs "
            f"{want[idx]!r} ({int(np.size(ok) - np.count_nonzero(ok))} of {np.size(ok)} "
            f"elements differ)")
