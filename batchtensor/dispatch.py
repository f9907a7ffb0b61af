"""Dispatch: one entry point per protocol; picks rule -> boxed -> decomposition -> loop.

For a call of NumPy callable F with BatchedTensor arguments:
1. the current level is the highest level among the BatchedTensor arguments; tensors of lower
   levels are unbatched at it and dispatch again, at their own level, inside the physical call;
2. the arguments of the current level are unwrapped into ``(value, bdim)``;
3. the registry entry for F runs: a rule, a boxed kind or a decomposition; otherwise the
   per-example loop;
4. outputs are rewrapped at the current level.

The class reaches this module through ``registry.slots`` (filled at the bottom), and this module
reaches the boxed fallbacks (the loop, the ufunc handlers) the same way: both sit on either side
of it in the layers.
"""

from __future__ import annotations

import dis
import functools
import operator
import sys
from types import FrameType
from typing import Any

import numpy as np

from .errors import (BatchingError, ControlFlowError, DataDependentError, LoopFallback,
                     SharedWriteError)
from .plumbing import (EITHER, LEAF_TYPES, SCALAR_TYPES, binary_fast_paths, innermost,
                       matmul_fast, scan_level, unary_fast, unwrap, wrap_result)
from .registry import (ALIASES, ARRAY, ARRAYS, PER_EXAMPLE, RECORDERS, REGISTRY, Path,
                       defers_to_us, op_name, record, slots)
from .scalars import (ARRAY_0D, Array0d, detach_from_scalars, mark_array0d,
                      refuse_scalar_targets, scalar_args)
from .levels import Level, active_levels, note_write
from .tensor import BatchedTensor, ndarray_fill, scalar_per_example

__all__ = ["function_call", "ufunc_call", "truth_value", "setitem", "note_writes",
           "WRITES_FIRST_ARGUMENT"]


# ---- __array_function__ and methods -------------------------------------------------------------
def function_call(op, args: tuple, kwargs: dict, like: Any = None) -> Any:
    """Dispatch a NumPy function call whose arguments contain BatchedTensors.

    ``like``: the object whose ``__array_function__`` NumPy called (``self``)."""
    if kwargs and kwargs.get("out") is not None:
        refuse_scalar_targets(kwargs["out"], f"{op_name(op)}(out=...)")
        note_writes(kwargs["out"])
    if op in WRITES_FIRST_ARGUMENT and args:
        note_writes(args[0])
    level = scan_level(args)
    if kwargs:
        level = scan_level(kwargs, level)
    if level is None:  # e.g. np.zeros(3, like=x): nothing batched reaches the op
        return _like_call(op, args, kwargs, like)
    entry = REGISTRY.get(op)
    if entry is None and op in ALIASES:  # numpy's name for it while a level is open
        op = ALIASES[op]
        entry = REGISTRY.get(op)
    if entry is not None and entry.fast is not None:
        res = entry.fast(level, args, kwargs)
        if res is not NotImplemented:  # hooks build new arrays: nothing to detach
            if RECORDERS:
                record(op, entry.kind)
            how = ARRAY_0D.get(op)
            return res if how is None else mark_array0d(op, args, res, kwargs)
    how = ARRAY_0D.get(op)
    if how is Array0d.WRITES or how is Array0d.WRITES_OR_NOTHING:
        target = args[0] if args else None
        if type(target) is BatchedTensor and scalar_per_example(target):
            if how is Array0d.WRITES:
                refuse_scalar_targets(target, f"{op_name(op)}(target, ...)")
            return None  # NumPy's put / fill into a scalar convert it and change nothing
        return _run_entry(op, entry, args, kwargs, level)
    scalars = scalar_args(args)
    res = _run_entry(op, entry, args, kwargs, level)
    if how is not None:
        res = mark_array0d(op, args, res, kwargs)
    return detach_from_scalars(res, scalars, op) if scalars else res


def _run_entry(op, entry, args: tuple, kwargs: dict, level) -> Any:
    """The registered rule, boxed kind or decomposition of ``op`` (the loop if none)."""
    if entry is None:
        return _loop(op, args, kwargs, level, note=_NO_ENTRY)
    kind = entry.kind
    if kind is Path.DECOMPOSITION:
        if RECORDERS:
            record(op, Path.DECOMPOSITION)
        return entry.fn(*args, **kwargs)
    if entry.raw:
        values = extra = extra_kw = None
    else:
        binder = entry.binder
        values, extra, extra_kw = binder.bind(args, kwargs)
        if _needs_loop(binder, binder.params, values, extra, extra_kw, level):
            return _loop(op, args, kwargs, level, note=_NOT_UNWRAPPED)
    if RECORDERS:
        record(op, kind)
    try:
        if entry.raw:
            return entry.fn(level, args, kwargs)
        if kind is Path.BOXED:
            return entry.fn(entry, level, values, extra, extra_kw)
        return wrap_result(_call_rule(entry, level, values, extra, extra_kw), level)
    except LoopFallback as e:
        if RECORDERS:
            record(op, Path.LOOP, str(e))
        return _loop(op, args, kwargs, level, recorded=True)
    except (DataDependentError, SharedWriteError) as e:
        if e.level is None:
            e.level = level  # the level whose examples differ: its vmap reruns per example
        note_if_caught(e.level, f"{op_name(op)}: {str(e).split(':')[0]}")
        if type(e) is SharedWriteError:
            if op in WRITES_FIRST_ARGUMENT and e.level.size == 0:
                return None  # no example writes: the loop over none leaves the array as it is
            if e.targets is None:  # vmap tells the arguments apart from arrays made in f
                out = kwargs.get("out")
                e.targets = (out if type(out) is tuple else (out,)) if out is not None else \
                    args[:1] if op in WRITES_FIRST_ARGUMENT else ()
        raise


def _like_call(op, args: tuple, kwargs: dict, like: Any) -> Any:
    """``np.zeros(3, like=x)``: NumPy removed ``like=`` and nothing batched reaches ``op``.

    The per-example result does not depend on the batch, so it is unbatched; it is created on
    ``x``'s physical backend (``like=`` the physical array under every level)."""
    if type(like) is not BatchedTensor:
        return op(*args, **kwargs)
    like._level.check_alive()
    if RECORDERS:
        record(op, Path.RULE)  # the dispatcher's own rule for creation with like=: no loop
    return op(*args, like=innermost(like), **kwargs)


def _needs_loop(binder, params, values, extra, extra_kw, level) -> bool:
    """True if a value batched at ``level`` sits where the rule does not unwrap it.

    (A batched ``repeats`` of np.repeat, a batched entry of ``pad_width``, an array argument
    given as a list of batched values...) Only the per-example loop treats those correctly.
    """
    for p, v in zip(params, values):
        t = type(v)
        if t in LEAF_TYPES:
            continue
        kind = p.kind
        if kind is ARRAY:
            if t is not BatchedTensor and scan_level(v) is level:
                return True
        elif kind is ARRAYS:
            if t is list or t is tuple:
                for e in v:
                    te = type(e)
                    if te is not BatchedTensor and te not in LEAF_TYPES \
                            and scan_level(e) is level:
                        return True
            elif scan_level(v) is level:
                return True
        elif t is BatchedTensor:
            if v._level is level:
                return True
        elif scan_level(v) is level:
            return True
    if extra:
        for e in extra:
            if (binder.varargs_kind is not ARRAYS or type(e) is not BatchedTensor) \
                    and scan_level(e) is level:
                return True
    for v in extra_kw.values():
        if scan_level(v) is level:
            return True
    return False


def _call_rule(entry, level, values, extra, extra_kw):
    params = entry.binder.params
    call: list = []
    kw: dict = {}
    for p, v in zip(params, values):
        if p.kind is ARRAY:
            val, bd = unwrap(v, level)
            if p.positional:
                call.append(val)
                call.append(bd)
            else:
                kw[p.name] = val
                kw[p.name + "_bdim"] = bd
        elif p.kind is ARRAYS:
            if isinstance(v, (list, tuple)):
                pairs = [unwrap(e, level) for e in v]
                vals = [a for a, _ in pairs]
                bds = [b for _, b in pairs]
            else:
                vals, bds = v, None
            if p.positional:
                call.append(vals)
                call.append(bds)
            else:
                kw[p.name] = vals
                kw[p.name + "_bdims"] = bds
        elif p.positional:
            call.append(v)
        else:
            kw[p.name] = v
    binder = entry.binder
    if binder.varargs is not None:
        if binder.varargs_kind is ARRAYS:
            pairs = [unwrap(e, level) for e in extra]
            call.extend(a for a, _ in pairs)
            kw[binder.varargs + "_bdims"] = [b for _, b in pairs]
        else:
            call.extend(extra)
    if extra_kw:
        kw.update(extra_kw)
    return entry.fn(*call, **kw)


#: why the per-op loop served a call (``bt.explain``), besides a rule's own LoopFallback
_NO_ENTRY = "no batch rule, boxed kind or decomposition is registered for this op"
_NOT_UNWRAPPED = ("a batched value sits in an argument that the op's rule takes as a plain "
                  "value (a shape, a count, an option)")


def _loop(op, args, kwargs, level, recorded: bool = False, note: str = _NO_ENTRY):
    if not recorded and RECORDERS:
        record(op, Path.LOOP, note)
    return slots.loop_call(PER_EXAMPLE.get(op, op), args, kwargs, level)


#: the ops that write into their first argument (besides ``out=``)
WRITES_FIRST_ARGUMENT = frozenset({operator.setitem, np.copyto, np.place, np.putmask, np.put,
                                   np.put_along_axis, np.fill_diagonal, ndarray_fill})


def note_writes(targets: Any) -> None:
    """Writes are about to go into ``targets`` (a value or a tuple): a level that watches for
    writes into its inputs learns of them (``levels.note_write``)."""
    for t in targets if type(targets) is tuple else (targets,):
        if type(t) is BatchedTensor and t._level.watches_writes:
            note_write(t._level, innermost(t._value))


# ---- __array_ufunc__ ----------------------------------------------------------------------------
# (plumbing.EITHER: the aligned fast path of each binary ufunc, built here on first use)


_MASKED = np.ma.MaskedArray
_MATMUL = np.matmul


def array_ufunc(self: BatchedTensor, ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
    """``BatchedTensor.__array_ufunc__`` (installed below): ``ufunc_call``, with its
    commonest calls answered first in this frame: ``w @ x`` (``ndarray.__matmul__`` of a
    plain ``w`` reaches us here), a unary ufunc such as ``np.tanh(x)`` and the aligned fast
    path of a binary one (``np.add(x, y)``). One Python call fewer is about a tenth of such
    an op's cost above NumPy's.

    Each skips only steps that do nothing for it: ``matmul_fast`` and the aligned fast path
    answer only for ndarray, BatchedTensor and scalar operands (no type of its own to defer
    to; anything else is None, and ``ufunc_call`` follows), and a unary call's only operand
    is ``self``."""
    if not kwargs and method == "__call__":
        if ufunc is _MATMUL:
            if len(inputs) == 2:
                res = matmul_fast(*inputs)
                if res is not None:
                    return res
        elif ufunc.signature is None:
            if len(inputs) == 1:
                return unary_fast(self, ufunc, ufunc.nout == 1)
            fast = EITHER.get(ufunc)  # (built by ufunc_call at its first call)
            if fast is not None and len(inputs) == 2:
                res = fast(*inputs)
                if res is not None:
                    return res
    return ufunc_call(ufunc, method, inputs, kwargs)


def ufunc_call(ufunc, method: str, inputs: tuple, kwargs: dict) -> Any:
    """Dispatch ``ufunc.method(*inputs, **kwargs)`` whose operands contain BatchedTensors."""
    for x in inputs if not kwargs or "out" not in kwargs else inputs + kwargs["out"]:
        t = type(x)
        # (a plain ndarray, the common other operand, defers to us: no more checks)
        if t is not BatchedTensor and t is not np.ndarray and t not in SCALAR_TYPES \
                and hasattr(t, "__array_ufunc__") and not isinstance(x, np.generic):
            if issubclass(t, _MASKED):  # per example, a masked result
                return slots.masked_ufunc(ufunc, method, inputs, kwargs)
            if not defers_to_us(t):
                return NotImplemented  # as NumPy orders them: a type of its own goes first
    if kwargs and "out" in kwargs:
        refuse_scalar_targets(kwargs["out"], f"{ufunc.__name__}(out=...)")
        note_writes(kwargs["out"])
    elif method == "at" and inputs:
        refuse_scalar_targets(inputs[0], f"{ufunc.__name__}.at(target, ...)")
        note_writes(inputs[0])
    if ufunc is np.matmul and method == "__call__" and not kwargs and len(inputs) == 2:
        res = matmul_fast(*inputs)  # also w @ x from ndarray.__matmul__, NumPy's protocol
        if res is not None:
            return res
    if method == "__call__" and ufunc.signature is None:
        if not kwargs:  # the aligned fast path (one level, operands lined up)
            if len(inputs) == 1:
                if type(inputs[0]) is BatchedTensor:
                    return unary_fast(inputs[0], ufunc, ufunc.nout == 1)
            elif len(inputs) == 2 and ufunc.nout == 1:
                fast = EITHER.get(ufunc)
                if fast is None:
                    fast = EITHER[ufunc] = binary_fast_paths(ufunc)[2]
                res = fast(*inputs)
                if res is not None:
                    return res
        entry = REGISTRY.get(ufunc)
        if entry is not None:
            return function_call(ufunc, inputs, kwargs)
        handler = slots.ufunc_pointwise
    elif method == "__call__":
        entry = REGISTRY.get(ufunc)
        if entry is not None:
            return function_call(ufunc, inputs, kwargs)
        handler = slots.gufunc_call
    else:
        handler = slots.ufunc_methods[method]
    try:
        return handler(ufunc, inputs, kwargs)
    except (DataDependentError, SharedWriteError) as e:
        if e.level is None:
            e.level = scan_level(kwargs, scan_level(inputs))
        if type(e) is SharedWriteError:
            out: Any = kwargs.get("out")
            if e.level is not None and e.level.size == 0 and (out or method == "at"):
                # no example writes: the loop over none leaves the arrays as they are
                return None if method == "at" else out[0] if len(out) == 1 else out
            if e.targets is None:
                e.targets = out or (inputs[:1] if method == "at" else ())
        raise
    except LoopFallback as e:
        op = getattr(ufunc, method) if method != "__call__" else ufunc
        level = scan_level(kwargs, scan_level(inputs))
        if RECORDERS:
            record(op, Path.LOOP, str(e))
        return _loop(op, inputs, kwargs, level, recorded=True)


# ---- bool() -------------------------------------------------------------------------------------
def truth_value(x: BatchedTensor) -> bool:
    """``bool(x)``: the examples' common truth value; an error if they disagree, except in
    a pass of vmap's groups (``Level.group_pass``), which answers for the examples it
    follows."""
    x._level.check_alive()
    shape = x.shape
    if x.size != 1:
        # Let NumPy raise its own error for this logical shape (size 0 or > 1).
        return bool(np.broadcast_to(np.zeros((), dtype=x.dtype), shape))
    n = x.batch_size
    if n == 0:
        raise BatchingError(
            "bool() of a batched value with batch size 0: there is no example to take the "
            "truth value from. Avoid Python control flow on batched values (use np.where)."
        )
    value = x._value
    level = x._level
    truth = None
    stack = active_levels()
    if len(stack) > 1:  # vmaps inside vmaps: the examples of every level open are cells
        cells = _cell_truth(x, stack)
        if cells is not None:
            level, truth = cells
    elif type(value) is np.ndarray:
        truth = np.moveaxis(value, x._bdim, 0).reshape(n).astype(bool)
    group_pass = level.group_pass
    if truth is not None and group_pass is not None:
        # only the examples the pass still follows answer (``GroupPass``)
        agreed = group_pass.agreed(truth)
        if agreed is not None:
            return agreed
        if not caught_on_the_way(level.pass_frame):
            side = group_pass.follow(truth)
            if side is not None:
                return side
    elif truth is not None:
        if truth.all():
            return True
        if not truth.any():
            return False
    elif bool(np.all(value)):
        return True
    elif not bool(np.any(value)):
        return False
    e = ControlFlowError(
        "data-dependent control flow: bool() of a batched value is True for some examples and "
        "False for others, so a Python `if`/`while` on it would take different branches per "
        "example. Compute both branches and select with np.where(cond, a, b); or, unless "
        "fallback='error', bt.vmap reruns the function once per example.", level
    )
    e.truth = truth  # each example's (cell's) truth value: vmap splits the batch by it
    note_if_caught(level, "bool() of a value whose examples disagree")
    raise e


def note_if_caught(level: Level | None, what: str) -> None:
    """A batched value of ``level`` is about to refuse ``what`` with an error: where code of
    the function's (outside batchtensor) would catch it before the pass's frame, the pass
    goes on along a path none of the loop's examples takes (``try: bool(x) except: ...``),
    so ``level.caught`` marks the pass: vmap then reruns the function per example."""
    if level is not None and level.caught is None and level.pass_frame is not None \
            and caught_on_the_way(level.pass_frame):
        level.caught = what


def _cell_truth(x: BatchedTensor, stack: tuple[Level, ...]) -> tuple[Level, Any] | None:
    """``bool(x)`` (one element per example) inside nested vmaps: the innermost level open at
    which ``x`` is batched answers (a level of one example of a rerun aside), for each *cell*:
    one example of every level open up to it (outermost first, flattened; ``x`` is the same
    along a level it is not batched at), since that level's vmap can run its examples for
    some cells only (``GroupPass``). The levels inside it see no disagreement: their examples
    agree. None where that cannot be told (another backend, a level of no known size or
    none)."""
    axis_of: dict[int, int] = {}  # level id -> its axis in the physical array
    v: Any = x
    while type(v) is BatchedTensor:
        b = v._bdim
        axis_of = {i: a + (a >= b) for i, a in axis_of.items()}
        axis_of[v._level.id] = b
        v = v._value
    if type(v) is not np.ndarray:
        return None
    k = len(stack) - 1
    while k and (stack[k].per_example or stack[k].id not in axis_of):
        k -= 1
    grid = stack[:k + 1]
    sizes = [lv.size or 0 for lv in grid]
    if not all(sizes):  # (size 0: the old path raises as for one level)
        return None
    ids = {lv.id for lv in grid}
    if any(i not in ids and v.shape[a] != 1 for i, a in axis_of.items()):
        return None
    there = [lv for lv in grid if lv.id in axis_of]
    t = np.moveaxis(v, [axis_of[lv.id] for lv in there], range(len(there)))
    t = t.reshape([s if lv.id in axis_of else 1 for lv, s in zip(grid, sizes)])
    return grid[-1], np.broadcast_to(t, sizes).reshape(-1).astype(bool)


def caught_on_the_way(stop) -> bool:
    """Whether an exception raised here would meet an ``except`` (or a ``finally`` with a
    body) in a frame outside batchtensor before the frame ``stop``: code that asks ``bool(x)``
    inside a ``try`` may take another path where it raises (array-api-compat's
    ``is_lazy_array`` does, for a value that refuses ``bool()``), as the first pass of vmap's
    groups saw it do, so a group's pass raises there too rather than follow one side. Where
    the exception table cannot be read (Python 3.10), yes."""
    frame: FrameType | None = sys._getframe(1)
    while frame is not None and frame is not stop:
        if not frame.f_globals.get("__name__", "").startswith("batchtensor") \
                and _handled(frame.f_code, frame.f_lasti):
            return True
        frame = frame.f_back
    return False


def _handled(code, offset: int) -> bool:
    """Whether an exception at ``offset`` of ``code`` reaches a handler that may keep it
    (an ``except``, or a ``finally`` with a body), through ``with`` blocks, whose ``__exit__``
    passes it on."""
    handlers = _handlers(code)
    if handlers is None:
        return True
    seen = set()
    while offset not in seen:
        seen.add(offset)
        entry = next((h for h in handlers if h[0] <= offset < h[1]), None)
        if entry is None:
            return False
        if entry[3] == "keeps":
            return True
        offset = entry[2]  # the handler passes it on: where does it go from there
    return False


@functools.lru_cache(maxsize=512)
def _handlers(code) -> tuple | None:
    """``code``'s exception table as ``(start, end, target, kind)``: kind ``"with"`` (a
    ``with`` block's ``__exit__``), ``"passes"`` (a ``finally`` that only re-raises),
    ``"cleanup"`` (the interpreter's, around a handler), ``"keeps"`` (any other)."""
    try:
        bytecode = dis.Bytecode(code)
        # (Python 3.11's exception table, which typeshed's Bytecode leaves out)
        entries = bytecode.exception_entries  # type: ignore[attr-defined]
    except AttributeError:
        return None
    names = {i.offset: i.opname for i in bytecode}
    table = []
    for e in entries:
        first, second = names.get(e.target), names.get(e.target + 2)
        if first != "PUSH_EXC_INFO":
            kind = "cleanup"
        elif second == "WITH_EXCEPT_START":
            kind = "with"
        elif second == "RERAISE":
            kind = "passes"
        else:
            kind = "keeps"
        table.append((e.start, e.end, e.target, kind))
    return tuple(table)


def setitem(x: BatchedTensor, key: Any, value: Any) -> None:
    """``x[key] = value``."""
    if scalar_per_example(x):
        refuse_scalar_targets(x, "x[...] = value")
    function_call(operator.setitem, (x, key, value), {})


slots.function_call = function_call
slots.ufunc_call = ufunc_call
BatchedTensor.__array_ufunc__ = array_ufunc  # type: ignore[assignment, method-assign]
slots.truth_value = truth_value
slots.note_if_caught = note_if_caught
slots.setitem = setitem
