"""What the SciPy rule families share (``rules/scipy_*.py``).

SciPy's functions that take an ``axis`` / ``axes`` argument work on each slice along it alone,
so a batch rule moves the batch axis to the front (each example's result is then one
contiguous block of the fresh result, as in the loop), maps the example's axes past it, and
calls the function once on the whole batch.

A rule calls the function through its module (``call(signal, "lfilter")``), not the object
it captured: while a vmap runs that attribute is the function's ``foreign.Primitive``, so an
argument batched at an outer level (which a rule sees as an unbatched BatchedTensor) is
batched there in turn.
"""

from __future__ import annotations

import warnings
from typing import Any, Callable

import numpy as np

from ..levels import active_levels, current_level, note_write
from ..plumbing import innermost
from ..registry import batch_rule, op_name
from ..tensor import BatchedTensor
from ._helpers import ensure_bdim, logical_shape, move_bdim_to_front, wrap_axis

__all__ = ["call", "front", "front_axis", "logical_axes", "front_axes", "is_array",
           "require_no_output_array", "no_examples", "moved_blocks", "writes_into",
           "scipy_rule"]


def scipy_rule(op: Any, **options: Any) -> Callable:
    """``batch_rule(op)`` for a SciPy function. Where the installed SciPy's signature differs
    from the one the rule was written for, the rule is left out with a warning (the function
    then runs through the per-example fallbacks) rather than bind a call wrongly."""

    def deco(rule: Callable) -> Callable:
        try:
            return batch_rule(op, **options)(rule)
        except TypeError as e:
            warnings.warn(f"batchtensor has no batch rule for {op_name(op)} with this SciPy "
                          f"({e})", RuntimeWarning, stacklevel=2)
            return rule

    return deco


def call(module: Any, name: str) -> Callable:
    """``module.name`` as it is when called (the Primitive while a vmap runs).

    SciPy's code run by a rule works on physical values, so the arrays it makes are not
    the vmapped function's per-example state: while it runs, the array-api namespace's
    makers it calls (``xp.zeros``, ``xp.asarray``; ``batchtensor.buffers``) make plain
    arrays. Made buffers there, a rule could hand one back as a physical value (``dct`` of
    an empty batch returns ``xp.asarray(y)``, a new buffer where ``y`` has no element)."""

    def through_module(*args: Any, **kwargs: Any) -> Any:
        level = current_level()
        if level is None or level.buffers is None:
            return getattr(module, name)(*args, **kwargs)
        made = level.buffers
        level.buffers = None
        try:
            return getattr(module, name)(*args, **kwargs)
        finally:
            level.buffers = made

    return through_module


def front(x: Any, bdim: int | None, size: Any) -> Any:
    """``x`` with the batch axis first: moved (a view), or broadcast if unbatched (a view)."""
    return ensure_bdim(x, bdim, size) if bdim is None else move_bdim_to_front(x, bdim)


def front_axis(axis: Any, nd: int) -> int:
    """The physical axis of the example's ``axis`` (rank ``nd``) once the batch axis is first;
    NumPy's AxisError (a ValueError and an IndexError) if it is out of range."""
    return wrap_axis(axis, nd) + 1


def logical_axes(axes: Any, nd: int) -> tuple:
    """``axes`` (None: every axis; an int; a sequence, repeats kept) normalised one by one."""
    if axes is None:
        return tuple(range(nd))
    if isinstance(axes, (int, np.integer)):
        return (wrap_axis(axes, nd),)
    return tuple(wrap_axis(a, nd) for a in axes)


def front_axes(axes: Any, nd: int) -> tuple:
    """``logical_axes`` past a batch axis at the front."""
    return tuple(a + 1 for a in logical_axes(axes, nd))


def is_array(x: Any) -> bool:
    return isinstance(x, (np.ndarray, BatchedTensor)) or hasattr(x, "__array_function__")


def require_no_output_array(output: Any, name: str) -> None:
    """``output=`` an array that is not batched here (a batched one sends the call to the
    per-example loop before the rule runs, and each example writes into its own): SciPy would
    convert the batched input and fail, and so does the rule, with the conversion error that
    makes vmap rerun the function once per example. Per example, the array may be one each
    example made for itself, or one every example shares: only the rerun can tell, and the
    per-op loop would write every example into it."""
    if is_array(output):
        err: Any = TypeError(  # (with the attributes of a refused conversion)
            f"scipy.ndimage.{name}(output=...) into an array that is not batched at this vmap "
            f"level: batchtensor cannot batch the call, which converts the batched "
            f"input as SciPy would")
        err.batchtensor_conversion = True  # errors.rerun_reason: a rerun per example
        err.batchtensor_level = current_level()
        err.batchtensor_what = f"scipy.ndimage.{name}(output=an unbatched array)"
        raise err


def no_examples(x: Any, bdim: int, per_example: Callable) -> tuple | None:
    """With batch size 0, ``(empty result, 0)`` of the shape and dtype ``per_example`` gives
    one zero example (for functions that fail on an empty batch: a least-squares fit of no
    columns); None otherwise."""
    n = x.shape[bdim]
    if type(n) is not int or n:
        return None
    one = per_example(np.zeros(logical_shape(x, bdim), dtype=x.dtype))
    return np.empty((0,) + tuple(np.shape(one)), dtype=one.dtype), 0


def moved_blocks(res: Any, axis: int) -> Any:
    """``res`` (batch first) laid out as a function that moves ``axis`` to the front, works
    on a C-ordered copy and moves it back lays out each example: one block per example, each
    block C-ordered with ``axis`` first (a copy)."""
    moved = np.moveaxis(res, axis, 1)
    out = np.empty_like(moved, order="C")
    np.copyto(out, moved)
    return np.moveaxis(out, 1, axis)


def writes_into(x: Any) -> None:
    """SciPy is about to write into ``x`` (``overwrite_x=True``, ``overwrite_data=True``):
    the levels that watch for writes into their inputs learn of it, as for NumPy's writes, so
    that a whole-function rerun after it is refused instead of rerunning on changed data."""
    phys = innermost(x)
    for level in active_levels():
        note_write(level, phys)
