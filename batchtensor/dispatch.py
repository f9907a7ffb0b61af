"""Dispatch: one entry point per protocol; picks rule -> boxed -> decomposition -> loop.

For a call of NumPy callable F with BatchedTensor arguments (DESIGN §4):
1. the current level is the highest level among the BatchedTensor arguments; tensors of lower
   levels are unbatched at it and dispatch again, at their own level, inside the physical call;
2. the arguments of the current level are unwrapped into ``(value, bdim)``;
3. the registry entry for F runs: a rule, a boxed kind or a decomposition; otherwise the
   per-example loop;
4. outputs are rewrapped at the current level.
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from .errors import BatchingError, ControlFlowError, LoopFallback
from .paths import _RECORDERS, _record, record_paths
from .registry import ARRAY, ARRAYS, REGISTRY, op_name
from .tensor import (_SCALAR_TYPES, BatchedTensor, _new, _rebinds, matmul_fast,
                     ndarray_astype, ndarray_fill)

__all__ = ["function_call", "ufunc_call", "unwrap", "wrap", "wrap_result", "find_level",
           "scan_level", "record_paths", "truth_value", "is_physical_type",
           "register_physical_type"]

# ---- physical types -----------------------------------------------------------------------------
_PHYSICAL_TYPES: dict[type, bool] = {np.ndarray: True}


def register_physical_type(t: type) -> None:
    """Accept values of type ``t`` (CuPy arrays, the ONNX recorder's array) as physical arrays."""
    _PHYSICAL_TYPES[t] = True


def is_physical_type(t: type) -> bool:
    ok = _PHYSICAL_TYPES.get(t)
    if ok is None:
        ok = (getattr(t, "__module__", "") or "").split(".")[0] == "cupy"
        _PHYSICAL_TYPES[t] = ok
    return ok


# ---- levels -------------------------------------------------------------------------------------
def _higher(level, t: BatchedTensor):
    lv = t._level
    if not lv.alive:
        lv.check_alive()
    if level is None or lv.id > level.id:
        return lv
    return level


def scan_level(obj: Any, level=None):
    """The highest live level among the BatchedTensors anywhere in ``obj`` (lists, tuples,
    dicts, slices), or ``level`` if none is higher."""
    t = type(obj)
    if t is BatchedTensor:
        return _higher(level, obj)
    if t is tuple or t is list:
        for x in obj:
            tx = type(x)
            if tx is BatchedTensor:
                level = _higher(level, x)
            elif tx in _LEAF_TYPES:
                continue
            else:
                level = scan_level(x, level)
    elif t is dict:
        for x in obj.values():
            level = scan_level(x, level)
    elif t in _LEAF_TYPES:
        return level
    elif t is slice:
        for x in (obj.start, obj.stop, obj.step):
            level = scan_level(x, level)
    elif isinstance(obj, (tuple, list)):
        for x in obj:
            level = scan_level(x, level)
    elif isinstance(obj, dict):
        for x in obj.values():
            level = scan_level(x, level)
    return level


_LEAF_TYPES = frozenset({np.ndarray, int, float, complex, bool, str, type(None),
                         type(Ellipsis), type(np._NoValue), np.dtype, type}) | _SCALAR_TYPES


def find_level(*values: Any):
    return scan_level(values)


def unwrap(x: Any, level) -> tuple[Any, int | None]:
    """``(physical value, bdim)`` if ``x`` is batched at ``level``, else ``(x, None)``."""
    if type(x) is BatchedTensor and x._level is level:
        return x._value, x._bdim
    return x, None


def wrap(value: Any, bdim: int | None, level) -> Any:
    if bdim is None:
        return value
    return _new(value, bdim, level)


def wrap_result(res: Any, level) -> Any:
    """Rewrap a rule's ``(out, bdim)`` or a container of such pairs."""
    if type(res) is tuple and len(res) == 2 and (res[1] is None or type(res[1]) is int):
        return wrap(res[0], res[1], level)
    if isinstance(res, (tuple, list)):
        items = [wrap_result(r, level) for r in res]
        if hasattr(type(res), "_fields"):
            return type(res)(*items)
        return type(res)(items)
    raise TypeError(
        f"a batch rule must return (out, out_bdim) or a tuple/list of such pairs, got {res!r}"
    )


# ---- __array_function__ and methods -------------------------------------------------------------
def function_call(op, args: tuple, kwargs: dict, like: Any = None) -> Any:
    """Dispatch a NumPy function call whose arguments contain BatchedTensors.

    ``like``: the object whose ``__array_function__`` NumPy called (``self``)."""
    if kwargs and kwargs.get("out") is not None:
        _refuse_scalar_targets(kwargs["out"], f"{op_name(op)}(out=...)")
    level = scan_level(args)
    if kwargs:
        level = scan_level(kwargs, level)
    if level is None:  # e.g. np.zeros(3, like=x): nothing batched reaches the op
        return _like_call(op, args, kwargs, like)
    entry = REGISTRY.get(op)
    if entry is not None and entry.fast is not None:
        res = entry.fast(level, args, kwargs)
        if res is not NotImplemented:  # hooks build new arrays: nothing to detach
            if _RECORDERS:
                _record(op, entry.kind)
            how = _ARRAY_0D.get(op)
            return res if how is None else _mark_array0d(op, args, res)
    how = _ARRAY_0D.get(op)
    if how is not None and how.startswith("writes"):
        target = args[0] if args else None
        if type(target) is BatchedTensor and _rebinds(target):
            if how == "writes":
                _refuse_scalar_targets(target, f"{op_name(op)}(target, ...)")
            return None  # NumPy's put / fill into a scalar convert it and change nothing
        return _run_entry(op, entry, args, kwargs, level)
    scalars = _scalar_args(args)
    res = _run_entry(op, entry, args, kwargs, level)
    if how is not None:
        res = _mark_array0d(op, args, res)
    return _detach_from_scalars(res, scalars) if scalars else res


def _scalar_args(args: tuple) -> list:
    """The arguments (or items of a list/tuple argument) that are NumPy scalars per example."""
    found = []
    for a in args:
        t = type(a)
        if t is BatchedTensor:
            if _rebinds(a):
                found.append(a)
        elif t is list or t is tuple:
            found.extend(e for e in a if type(e) is BatchedTensor and _rebinds(e))
    return found


# Per example, most 0-d results are immutable NumPy scalars (ufuncs, reductions, x[i]), and an
# in-place operator on one rebinds (tensor._rebinds). These ops return 0-d *arrays* instead,
# which in-place operators write into: "always", or "array in" (an array in gives an array out,
# a scalar in gives a scalar). The loop fallback marks them from the per-example results.
_ARRAY_0D = {op: "always" for op in (
    np.array, np.asarray, np.asanyarray, np.ascontiguousarray, np.asfortranarray,
    np.asarray_chkfinite, np.require, np.copy, np.zeros_like, np.ones_like, np.empty_like,
    np.full_like, np.where, np.select, np.piecewise, np.i0, np.tensordot, np.cov,
    np.broadcast_to, np.roll)}
_ARRAY_0D.update({op: "array in" for op in (
    np.reshape, np.squeeze, np.transpose, np.swapaxes, np.moveaxis, np.rollaxis, np.real,
    np.imag, ndarray_astype)})
_ARRAY_0D[operator.getitem] = "ellipsis"  # x[0, ...], s[...]: a 0-d array; x[0], a[()]: not
# Functions that write into their first argument: NumPy refuses a scalar target, or (np.put,
# ndarray.fill) writes into a converted copy, so the scalar keeps its value.
_ARRAY_0D.update({np.copyto: "writes", np.place: "writes", np.putmask: "writes",
                  np.put: "writes or nothing", ndarray_fill: "writes or nothing"})


def _root(v: Any) -> Any:
    while type(v) is BatchedTensor:
        v = v._value
    return v


def _detach_from_scalars(res: Any, scalars: list) -> Any:
    """Per example these arguments are NumPy scalars, which share storage with nothing: what
    NumPy builds from one (``np.atleast_1d(z)``, ``z[None]``, ``np.asarray(z)``) is a new array.
    A rule may return a view of the batch of scalars instead; an array result that shares one
    is copied, so that writing into it cannot change the scalar. (A scalar result cannot be
    written into, so it may share; so may a read-only view, which also keeps NumPy's layout:
    ``np.broadcast_to(z, (2,)).ravel()`` must copy, as it does in NumPy.)"""
    if type(res) is BatchedTensor:
        a = _root(res._value)
        if type(a) is np.ndarray and not a.flags.writeable:
            return res  # a read-only view (np.broadcast_to(z, ...)): nothing writes through it
        if not _rebinds(res) and all(res is not x for x in scalars):
            for x in scalars:
                b = _root(x._value)
                if type(a) is not np.ndarray or type(b) is not np.ndarray \
                        or np.may_share_memory(a, b):
                    copy = _new(res._value.copy(), res._bdim, res._level)
                    if getattr(res, "_array0d", False):
                        copy._array0d = True
                    return copy
        return res
    if type(res) in (tuple, list):
        return type(res)(_detach_from_scalars(r, scalars) for r in res)
    return res


def _mark_array0d(op, args: tuple, res: Any) -> Any:
    if type(res) is not BatchedTensor or res._value.ndim != 1:
        return res
    how = _ARRAY_0D[op]
    if how == "ellipsis":
        key = args[1]
        if not (key is Ellipsis or (type(key) is tuple and any(k is Ellipsis for k in key))):
            return res
    x = args[0] if args else None
    if how == "array in":
        if type(x) is BatchedTensor:
            if _rebinds(x):
                return res  # a scalar in, a scalar out
        elif not (hasattr(x, "ndim") and not isinstance(x, np.generic)):
            return res
    if res is x:
        return res  # np.asarray(scalar) handed back as it is: left a scalar (it rebinds)
    res._array0d = True  # (a view of a scalar's storage is copied by _detach_from_scalars)
    return res


def _run_entry(op, entry, args: tuple, kwargs: dict, level) -> Any:
    """The registered rule, boxed kind or decomposition of ``op`` (the loop if none)."""
    if entry is None:
        return _loop(op, args, kwargs, level)
    kind = entry.kind
    if kind == "decomposition":
        if _RECORDERS:
            _record(op, "decomposition")
        return entry.fn(*args, **kwargs)
    if entry.raw:
        values = extra = extra_kw = None
    else:
        binder = entry.binder
        values, extra, extra_kw = binder.bind(args, kwargs)
        if _needs_loop(binder, binder.params, values, extra, extra_kw, level):
            return _loop(op, args, kwargs, level)
    if _RECORDERS:
        _record(op, kind)
    try:
        if entry.raw:
            return entry.fn(level, args, kwargs)
        if kind == "boxed":
            return entry.fn(entry, level, values, extra, extra_kw)
        return wrap_result(_call_rule(entry, level, values, extra, extra_kw), level)
    except LoopFallback:
        if _RECORDERS:
            _record(op, "loop")
        return _loop(op, args, kwargs, level, record=False)


def _like_call(op, args: tuple, kwargs: dict, like: Any) -> Any:
    """``np.zeros(3, like=x)``: NumPy removed ``like=`` and nothing batched reaches ``op``.

    The per-example result does not depend on the batch, so it is unbatched; it is created on
    ``x``'s physical backend (``like=`` the physical array under every level)."""
    if type(like) is not BatchedTensor:
        return op(*args, **kwargs)
    like._level.check_alive()
    if _RECORDERS:
        _record(op, "rule")  # the dispatcher's own rule for creation with like=: no loop
    while type(like) is BatchedTensor:
        like = like._value
    return op(*args, like=like, **kwargs)


def _needs_loop(binder, params, values, extra, extra_kw, level) -> bool:
    """True if a value batched at ``level`` sits where the rule does not unwrap it.

    (A batched ``repeats`` of np.repeat, a batched entry of ``pad_width``, an array argument
    given as a list of batched values...) Only the per-example loop treats those correctly.
    """
    for p, v in zip(params, values):
        t = type(v)
        if t in _LEAF_TYPES:
            continue
        kind = p.kind
        if kind is ARRAY:
            if t is not BatchedTensor and scan_level(v) is level:
                return True
        elif kind is ARRAYS:
            if t is list or t is tuple:
                for e in v:
                    te = type(e)
                    if te is not BatchedTensor and te not in _LEAF_TYPES \
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


def _loop(op, args, kwargs, level, record: bool = True):
    from .boxed.loop import loop_call  # noqa: PLC0415  (loop imports this module)

    if record and _RECORDERS:
        _record(op, "loop")
    return loop_call(op, args, kwargs, level)


# ---- __array_ufunc__ ----------------------------------------------------------------------------
def _pad_after_front(v: np.ndarray, rank: int) -> np.ndarray:
    missing = rank - v.ndim
    return v if missing <= 0 else v.reshape(v.shape[:1] + (1,) * missing + v.shape[1:])


def _binary_front(ufunc, a, b, ta, tb):
    """Second-tier hot path for a binary ufunc whose operand of the current (highest) level is
    a batch-first NumPy array: the other operand is of the same level and batch-first too, or
    unbatched here (a plain array, or a BatchedTensor of an outer level, which dispatches again
    inside the call). Ranks are padded with a reshape (a view). None if it does not apply."""
    if ta is BatchedTensor and (tb is not BatchedTensor or b._level.id <= a._level.id):
        cur, other, to, swap = a, b, tb, False
    elif tb is BatchedTensor:
        cur, other, to, swap = b, a, ta, True
    else:
        return None
    lv = cur._level
    cv = cur._value
    if cur._bdim or type(cv) is not np.ndarray or not lv.alive:
        return None
    outer = False
    if to is BatchedTensor and other._level is lv:
        ov = other._value
        if other._bdim or type(ov) is not np.ndarray:
            return None
        rank = max(cv.ndim, ov.ndim)
        cv, ov = _pad_after_front(cv, rank), _pad_after_front(ov, rank)
    elif to is np.ndarray or to is BatchedTensor:
        ov = other
        cv = _pad_after_front(cv, ov.ndim + 1)
        outer = to is BatchedTensor
    else:
        return None
    if _RECORDERS:
        _record(ufunc, "boxed")
    if outer:  # an outer level's value: its dispatcher, without NumPy's protocol
        res = ufunc_call(ufunc, "__call__", (ov, cv) if swap else (cv, ov), {})
    else:
        res = ufunc(ov, cv) if swap else ufunc(cv, ov)
    return _new(res, 0, lv)


def ufunc_call(ufunc, method: str, inputs: tuple, kwargs: dict) -> Any:
    """Dispatch ``ufunc.method(*inputs, **kwargs)`` whose operands contain BatchedTensors."""
    for x in inputs:
        t = type(x)
        if t is not BatchedTensor and t not in _SCALAR_TYPES and hasattr(t, "__array_ufunc__") \
                and not is_physical_type(t) and not isinstance(x, np.generic):
            return NotImplemented
    if kwargs and "out" in kwargs:
        _refuse_scalar_targets(kwargs["out"], f"{ufunc.__name__}(out=...)")
    elif method == "at" and inputs:
        _refuse_scalar_targets(inputs[0], f"{ufunc.__name__}.at(target, ...)")
    if ufunc is np.matmul and method == "__call__" and not kwargs and len(inputs) == 2:
        res = matmul_fast(*inputs)  # also w @ x from ndarray.__matmul__, NumPy's protocol
        if res is not None:
            return res
    if method == "__call__" and ufunc.signature is None:
        if not kwargs:
            # Hot path: one level, batch axes aligned, nothing to move or pad.
            if len(inputs) == 1:
                x = inputs[0]
                if type(x) is BatchedTensor:
                    lv = x._level
                    if not lv.alive:
                        lv.check_alive()
                    if _RECORDERS:
                        _record(ufunc, "boxed")
                    v = x._value
                    res = ufunc(v) if type(v) is not BatchedTensor else \
                        ufunc_call(ufunc, "__call__", (v,), {})  # skips NumPy's protocol
                    if ufunc.nout == 1:
                        return _new(res, x._bdim, lv)
                    return tuple(_new(r, x._bdim, lv) for r in res)
            elif len(inputs) == 2 and ufunc.nout == 1:
                a, b = inputs
                ta, tb = type(a), type(b)
                if ta is BatchedTensor:
                    if tb is BatchedTensor:
                        if a._level is b._level and a._bdim == b._bdim \
                                and a._value.ndim == b._value.ndim and a._level.alive:
                            if _RECORDERS:
                                _record(ufunc, "boxed")
                            return _new(ufunc(a._value, b._value), a._bdim, a._level)
                    elif tb in _SCALAR_TYPES and a._level.alive:
                        if _RECORDERS:
                            _record(ufunc, "boxed")
                        return _new(ufunc(a._value, b), a._bdim, a._level)
                elif tb is BatchedTensor and ta in _SCALAR_TYPES and b._level.alive:
                    if _RECORDERS:
                        _record(ufunc, "boxed")
                    return _new(ufunc(a, b._value), b._bdim, b._level)
                res = _binary_front(ufunc, a, b, ta, tb)
                if res is not None:
                    return res
        from .boxed.pointwise import ufunc_pointwise  # noqa: PLC0415

        entry = REGISTRY.get(ufunc)
        if entry is not None:
            return function_call(ufunc, inputs, kwargs)
        handler = ufunc_pointwise
    elif method == "__call__":
        entry = REGISTRY.get(ufunc)
        if entry is not None:
            return function_call(ufunc, inputs, kwargs)
        from .boxed.variadic import gufunc_call as handler  # noqa: PLC0415
    else:
        from .rules.ufunc_methods import UFUNC_METHODS  # noqa: PLC0415

        handler = UFUNC_METHODS[method]
    try:
        return handler(ufunc, inputs, kwargs)
    except LoopFallback:
        op = getattr(ufunc, method) if method != "__call__" else ufunc
        level = scan_level(kwargs, scan_level(inputs))
        if _RECORDERS:
            _record(op, "loop")
        return _loop(op, inputs, kwargs, level, record=False)


def _refuse_scalar_targets(out: Any, what: str) -> None:
    """NumPy cannot write into a NumPy scalar; writing into its physical batch would change
    values the per-example code cannot reach (a vmap input, an earlier result)."""
    for t in out if type(out) is tuple else (out,):
        if type(t) is BatchedTensor and _rebinds(t):
            raise TypeError(
                f"{what}: the target is a NumPy scalar in each example (a 0-d result of a "
                f"ufunc, a reduction or x[i], or a 0-d input), and NumPy cannot write into a "
                f"scalar ({t.dtype} does not support item assignment / is not an ArrayType). "
                f"Rebind instead (z = z + 1), or make it an array first: z = np.array(z, like=z)"
            )


# ---- bool() -------------------------------------------------------------------------------------
def truth_value(x: BatchedTensor) -> bool:
    """``bool(x)``: the examples' common truth value; an error if they disagree."""
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
    all_true = bool(np.all(value))
    if all_true:
        return True
    if not bool(np.any(value)):
        return False
    raise ControlFlowError(
        "data-dependent control flow: bool() of a batched value is True for some examples and "
        "False for others, so a Python `if`/`while` on it would take different branches per "
        "example. Compute both branches and select with np.where(cond, a, b), or pass "
        "control_flow='loop' to bt.vmap to rerun the function per example.", x._level
    )


def describe_op(op) -> str:
    return op_name(op)
