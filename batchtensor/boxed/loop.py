"""The slow, always-correct fallback: call the op once per example and stack the results."""

from __future__ import annotations

import threading
import warnings
from typing import Any

import numpy as np

from ..config import config
from ..diagnostics import user_stacklevel
from ..errors import (BatchingError, DataDependentError, LeanPassStopped, PerformanceWarning,
                      SharedWriteError, note_refusal, unbatched_out_error)
from ..levels import active_levels
from ..pytree import flatten, unflatten
from ..registry import op_name, slots
from ..plumbing import innermost
from ..tensor import BatchedTensor, new_batched

__all__ = ["announce_loop", "loop_call", "reset_warnings", "running_examples"]

_warned: set = set()


class _Running(threading.local):
    depth = 0  # per-op loops running on this thread (their calls are one example's each)


_running = _Running()


def running_examples() -> bool:
    """Whether this thread is inside the per-op loop: the code running is one example's."""
    return _running.depth > 0

#: batched types besides BatchedTensor (``masked.py``'s): type -> ``example(x, level, i)``;
#: each has ``_level`` and ``batch_size``
EXAMPLES: dict = {}
#: and type -> its physical array (whose memory a result of the loop may view)
MEMORY: dict = {}


def reset_warnings() -> None:
    """Forget which ops already warned (tests use it)."""
    _warned.clear()


def _batch_size(obj: Any, level) -> int | None:
    t = type(obj)
    if t is BatchedTensor:
        if obj._level is level:
            return obj._value.shape[obj._bdim]
        return None
    if isinstance(obj, (list, tuple)):
        for x in obj:
            n = _batch_size(x, level)
            if n is not None:
                return n
    elif isinstance(obj, dict):
        for x in obj.values():
            n = _batch_size(x, level)
            if n is not None:
                return n
    elif t is slice:
        return _batch_size((obj.start, obj.stop, obj.step), level)
    elif t in EXAMPLES:
        return obj.batch_size if obj._level is level else None
    return None


def _select(obj: Any, level, i: int, sources: dict) -> Any:
    """``obj`` with every BatchedTensor of ``level`` replaced by its i-th example (a view)."""
    t = type(obj)
    if t is BatchedTensor:
        if obj._level is not level:
            return obj
        b = obj._bdim
        example = obj._value[(slice(None),) * b + (i, Ellipsis)]
        sources[id(example)] = (obj, example)
        return example
    if t is list or t is tuple:
        return t(_select(x, level, i, sources) for x in obj)
    if t is dict:
        return {k: _select(v, level, i, sources) for k, v in obj.items()}
    if t is slice:
        return slice(*(_select(x, level, i, sources) for x in (obj.start, obj.stop, obj.step)))
    if t in EXAMPLES:
        example = EXAMPLES[t](obj, level, i)
        if example is not obj:
            sources[id(example)] = (obj, example)
        return example
    if isinstance(obj, tuple) and hasattr(type(obj), "_fields"):
        return t(*(_select(x, level, i, sources) for x in obj))
    return obj


def announce_loop(name: str, why: str | None = None) -> None:
    """The per-op loop is about to serve ``name``: an error under ``fallback="error"``, else a
    PerformanceWarning, once per name (unless ``"silent"``). ``why``: what makes it loop,
    where that is not a missing batch rule."""
    lean = [lv for lv in active_levels() if lv.lean]
    if lean:
        note_refusal(lean[0], name)  # (the pass is not used even where f catches the error)
        raise LeanPassStopped(name)
    mode = config.fallback
    reason = why or "has no batch rule for these arguments"
    if mode == "error":
        remedy = ("Register one with bt.batch_rule / bt.decomposition, or set "
                  "bt.config.fallback = 'warn'." if why is None else
                  "Set bt.config.fallback = 'warn' to let it loop.")
        raise BatchingError(f"{name} {reason} and would run once per example, but "
                            f"bt.config.fallback is 'error'. {remedy}")
    if mode == "warn" and name not in _warned:
        _warned.add(name)
        warnings.warn(
            f"{name} {reason}: it runs once per example through the slow loop fallback. Set "
            f"bt.config.fallback = 'silent' to hide this warning.",
            PerformanceWarning,
            stacklevel=user_stacklevel(),
        )


def _check_out(kwargs: dict, level, name: str) -> None:
    """Every example would write into one shared ``out=`` array (the last one wins): refuse."""
    out = kwargs.get("out")
    for o in out if isinstance(out, tuple) else (out,):
        if o is not None and not (type(o) is BatchedTensor and o._level is level):
            raise unbatched_out_error(name)


def loop_call(op, args: tuple, kwargs: dict, level) -> Any:
    """Run ``op`` per example of ``level`` and stack the results along a new axis 0."""
    name = op_name(op)
    _check_out(kwargs, level, name)
    announce_loop(name)
    n = _batch_size((args, kwargs), level)
    if n is None:
        n = level.size
    if n == 0:
        raise BatchingError(
            f"{name} has no batch rule and the per-example loop fallback cannot run with batch "
            f"size 0: it learns the output shape from the examples, and there are none."
        )
    results = []
    sources: dict = {}
    frozen = _freeze_unbatched((args, kwargs), level)
    at = getattr(op, "__name__", None) == "at" and type(getattr(op, "__self__", None)) is np.ufunc
    _running.depth += 1
    try:
        for i in range(n):
            sources.clear()
            a = _select(args, level, i, sources)
            k = _select(kwargs, level, i, sources)
            if at and a and type(a[0]) is np.ndarray and not a[0].flags.writeable:
                # NumPy's ufunc.at writes even into a read-only array where every index picks
                # one element (a NumPy bug): refused here as NumPy refuses the other cases
                raise ValueError("output array is read-only")
            res = op(*a, **k)
            results.append(_mark_inputs(res, sources, frozen))
    except ValueError as e:
        if frozen and "read-only" in str(e) and not _own_read_only((a, k), frozen):
            raise SharedWriteError(
                f"{name} writes into an argument that is not batched at this vmap level: every "
                f"example would write into the same array (the last one would win). Make the "
                f"target batched: create it inside the function from a batched value "
                f"(np.zeros_like(x), np.empty_like(x)) or copy a batched value."
            ) from e
        raise
    finally:
        _running.depth -= 1
        for arr in frozen:
            arr.flags.writeable = True
    return stack_results(results, level, name)


def _own_read_only(example: Any, frozen: list) -> bool:
    """Whether an array of the example is read-only of its own (not frozen by the loop): then
    NumPy's read-only error may be the user's, which the loop meets too, and stays as it is."""
    leaves, _ = flatten(example)
    # an example of a value batched at an outer level is a BatchedTensor there: its memory
    # is its physical array's
    arrays = [innermost(x) if type(x) is BatchedTensor else x for x in leaves]
    return any(type(x) is np.ndarray and not x.flags.writeable
               and not any(np.shares_memory(x, f) for f in frozen) for x in arrays)


def _freeze_unbatched(obj: Any, level, found: list | None = None) -> list:
    """Make the NumPy arrays among the arguments that are *not* batched at ``level`` read-only
    while the loop runs (and return them to be thawed): an op that writes into one of them
    would write every example into the same array, so it must fail, not be silently wrong."""
    found = [] if found is None else found
    t = type(obj)
    if t is np.ndarray:
        if obj.flags.writeable:
            obj.flags.writeable = False
            found.append(obj)
    elif t is BatchedTensor:
        if obj._level is not level:
            _freeze_unbatched(obj._value, level, found)
    elif isinstance(obj, (list, tuple)):
        for x in obj:
            _freeze_unbatched(x, level, found)
    elif isinstance(obj, dict):
        for x in obj.values():
            _freeze_unbatched(x, level, found)
    return found


class _Input:
    """Marks a per-example result that *is* one of the op's batched inputs (``out=``, a method
    that returns self, np.asarray of an array)."""

    __slots__ = ("source",)

    def __init__(self, source):
        self.source = source


class _View:
    """Marks a per-example result that is read-only or a view of an argument
    (``sliding_window_view``, ``broadcast_to``, a slice): the stacked batch is a copy, so it is
    made read-only too. A write through it then raises, as it does through NumPy's read-only
    views; through a writeable view it would have reached the argument in the loop, and would
    not through the copy."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value


def _memory(x: Any) -> Any:
    """The array whose memory ``x`` is (a batched value's physical array)."""
    t = type(x)
    if t is BatchedTensor:
        return innermost(x)
    memory = MEMORY.get(t)
    return x if memory is None else memory(x)


def _mark_inputs(res: Any, sources: dict, frozen: list) -> Any:
    leaves, td = flatten(res)
    marked = []
    for x in leaves:
        if id(x) in sources:
            x = _Input(sources[id(x)][0])
        elif type(x) is np.ndarray or (isinstance(x, _MASKED) and type(x) is not _MASKED_CONSTANT):
            # (a masked array: NumPy's, or a masked batch of the outer levels in a nested vmap)
            mem = _memory(x)
            if not mem.flags.writeable or any(
                    np.may_share_memory(mem, _memory(a))
                    for a in (*(e for _, e in sources.values()), *frozen)):
                x = _View(x)
        marked.append(x)
    return unflatten(td, marked)


_MASKED = np.ma.MaskedArray
_MASKED_CONSTANT = type(np.ma.masked)


def _is_arraylike(x: Any) -> bool:
    return hasattr(x, "shape") and hasattr(x, "dtype") or isinstance(x, (int, float, complex))


def stack_results(results: list, level, name: str) -> Any:
    leaves0, td0 = flatten(results[0])
    columns = [[x] for x in leaves0]
    for i, res in enumerate(results[1:], 1):
        leaves, td = flatten(res)
        if len(leaves) != len(leaves0):
            raise DataDependentError(
                f"{name}: example {i} returned {len(leaves)} arrays but example 0 returned "
                f"{len(leaves0)}; the per-example results cannot be stacked into one batch", level)
        for col, x in zip(columns, leaves):
            col.append(x)
    return unflatten(td0, [_stack_column(col, level, name) for col in columns])


def _stack_column(col: list, level, name: str) -> Any:
    read_only = any(isinstance(x, _View) for x in col)
    if read_only:
        col = [x.value if isinstance(x, _View) else x for x in col]
    first = col[0]
    if any(isinstance(x, np.ma.MaskedArray) for x in col):
        # as np.ma.stack stacks: the masks kept
        return slots.stack_masked(col, level, read_only)
    if isinstance(first, _Input):
        if all(isinstance(x, _Input) and x.source is first.source for x in col):
            return first.source
        raise DataDependentError(f"{name}: some examples returned an input and others a new array",
                                 level)
    if _is_arraylike(first):
        shape0 = np.shape(first)
        dtype0 = getattr(first, "dtype", None)
        if dtype0 is not None:
            for i, x in enumerate(col):
                dt = getattr(x, "dtype", None)
                if dt is not None and dt != dtype0:
                    raise DataDependentError(
                        f"{name}: the per-example results have different dtypes ({dtype0} for "
                        f"example 0, {dt} for example {i}): the result type depends on the "
                        f"data, so one batched array cannot hold them without changing one.", level)
        for i, x in enumerate(col):
            if not _is_arraylike(x) or np.shape(x) != shape0:
                raise DataDependentError(
                    f"{name}: the per-example results have different shapes ({shape0} for "
                    f"example 0, {np.shape(x) if _is_arraylike(x) else type(x).__name__} for "
                    f"example {i}), so they cannot be stacked into one batched array. The output "
                    f"shape of this op depends on the data (as with np.unique, np.nonzero or a "
                    f"boolean mask): give every example the same output size (e.g. pad, or use a "
                    f"fixed-size alternative), or run this part outside vmap.", level)
        res = new_batched(np.stack(col), 0, level)
        if read_only:
            res._value.flags.writeable = False
        if type(first) is np.ndarray and first.ndim == 0:
            res._array0d = True  # a 0-d array per example, not a NumPy scalar
        return res
    for i, x in enumerate(col):
        same = x is first
        if not same:
            try:
                same = bool(x == first)
            except Exception:  # noqa: BLE001  (an object without a usable ==)
                same = False
        if not same:
            raise DataDependentError(
                f"{name}: example {i} returned {x!r} but example 0 returned {first!r}; results "
                f"that are not arrays must agree across the batch", level)
    return first


slots.loop_call = loop_call
