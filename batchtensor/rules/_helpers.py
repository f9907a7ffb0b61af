"""Small shared helpers for batch rules (functorch's BatchRulesHelper, in NumPy).

Conventions: ``x`` is a physical value, ``bdim`` its batch axis or None (unbatched). Logical
axes are the per-example axes; ``physical_axis`` maps one to the physical value. The batch size
is read from a batched value's shape (``x.shape[bdim]``), never from elsewhere, so that a
recording backend can keep it symbolic.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np
from numpy.lib.array_utils import normalize_axis_index, normalize_axis_tuple

from ..errors import BatchingError, DataDependentError, LoopFallback
from ..levels import active_levels
from ..plumbing import innermost, scan_level, unwrap, wrap
from ..tensor import BatchedTensor

NoValue = np._NoValue

__all__ = ["NoValue", "given", "truthy", "move_bdim_to_front", "logical_rank", "wrap_axis",
           "wrap_axes", "physical_axis", "as_array", "ensure_bdim", "pad_to_rank", "batch_size_of",
           "align_front", "align_pointwise", "logical_shape", "ndim_of", "dry_run", "read_only",
           "LoopFallback", "require", "batch_outermost", "shared_value", "clip_mode",
           "any_example", "all_examples", "flat_rows", "levels_of", "plain_value",
           "batched_as", "expand_last", "squeeze_last"]


def given(v: Any) -> bool:
    """Was an optional argument given (not None and not NumPy's ``_NoValue``)?"""
    return v is not None and v is not NoValue


def truthy(v: Any) -> bool:
    return v is not NoValue and bool(v)


def ndim_of(x: Any) -> int:
    n = getattr(x, "ndim", None)
    return np.ndim(x) if n is None else n


def logical_rank(x: Any, bdim: int | None) -> int:
    """Rank of one example of ``x``."""
    return ndim_of(x) - (bdim is not None)


def logical_shape(x: Any, bdim: int | None) -> tuple:
    # x.shape first: an unbatched operand may be a BatchedTensor of an outer level, whose
    # np.shape would dispatch (to the per-example loop) instead of giving its logical shape.
    s = tuple(x.shape) if hasattr(x, "shape") else tuple(np.shape(x))
    if bdim is None:
        return s
    return s[:bdim] + s[bdim + 1:]


def wrap_axis(axis: Any, ndim: int) -> int:
    """Normalise a logical axis (negative allowed); AxisError as NumPy raises it."""
    return normalize_axis_index(axis, ndim)


def wrap_axes(axis: Any, ndim: int, argname: str = "axis") -> tuple:
    """Normalise an int or a tuple of logical axes; duplicates raise as in NumPy."""
    return normalize_axis_tuple(axis, ndim, argname)


def physical_axis(axis: int, bdim: int | None) -> int:
    """The physical position of normalised logical ``axis`` when the batch axis is ``bdim``."""
    if bdim is None:
        return axis
    return axis + (axis >= bdim)


def move_bdim_to_front(x: Any, bdim: int | None) -> Any:
    """A view of ``x`` with its batch axis first (no-op if unbatched or already first)."""
    if bdim is None or bdim == 0:
        return x
    if type(x) is np.ndarray:  # fast path: np.moveaxis costs ~3 µs of Python
        perm = list(range(x.ndim))
        del perm[bdim]
        return x.transpose([bdim] + perm)
    return np.moveaxis(x, bdim, 0)


def batch_size_of(vals: Sequence, bdims: Sequence) -> int:
    for v, b in zip(vals, bdims):
        if b is not None:
            return v.shape[b]
    raise ValueError("no batched value")


def as_array(x: Any, like: Any = None) -> Any:
    """``x`` itself if it is an array (of any backend, or batched); a Python scalar or list
    made an array on the backend of the physical value ``like`` (``like=``), where one is
    given: never a NumPy array beside another backend's."""
    if hasattr(x, "ndim"):
        return x
    return np.asarray(x) if like is None else np.asarray(x, like=innermost(like))


def ensure_bdim(x: Any, bdim: int | None, size: int, like: Any = None) -> Any:
    """``x`` with a batch axis first: moved if batched, broadcast (a view, no copy) if not
    (a Python value made an array on ``like``'s backend first: ``as_array``)."""
    if bdim is not None:
        return move_bdim_to_front(x, bdim)
    x = as_array(x, like)
    like = getattr(size, "like", None)
    if like is not None and type(x) is np.ndarray:
        # A recording backend's symbolic batch size names the array it was read from: move the
        # constant there first, or NumPy would bake the concrete size into it.
        x = np.asarray(x, like=like)
    return np.broadcast_to(np.expand_dims(x, 0), (size,) + tuple(x.shape))


def batch_outermost(x: Any, bdim: int | None) -> Any:
    """``x`` with its batch axis first and outermost in memory, for a sum over example axes.

    NumPy sums an example's elements pairwise when its innermost loop runs over them. If the
    batch axis lies inside the examples' memory (``in_axes=-1``, a transposed input), the
    innermost loop of the batched sum runs over the batch instead, and each example is summed
    element after element: float16 ones then stop growing at 2048, and float32 loses digits.
    Where that is so (a NumPy array whose batch axis is not the largest stride), this is a copy
    in which each example is one block, its axes in the order they had in memory (the loop's
    order); otherwise the batch axis moved to the front (a view)."""
    x = move_bdim_to_front(x, bdim)
    if type(x) is not np.ndarray or x.ndim < 2 or x.shape[0] < 2 or x.flags.c_contiguous:
        return x
    strides = [abs(s) for s in x.strides]
    inner = [i for i in range(1, x.ndim) if x.shape[i] > 1]
    if all(strides[i] <= strides[0] for i in inner):
        return x
    order = sorted(range(1, x.ndim), key=lambda i: -strides[i])  # outer to inner, as in memory
    perm = (0, *order)
    blocks = np.empty(tuple(x.shape[p] for p in perm), dtype=x.dtype)
    out = blocks.transpose(tuple(np.argsort(perm)))
    out[...] = x
    return out


def expand_last(x: Any) -> Any:
    """``np.expand_dims(x, -1)``: a view of ``x`` with a last axis of size 1 added."""
    if type(x) is np.ndarray:  # fast path: np.expand_dims runs ~150 bytecodes of Python
        return x.reshape(x.shape + (1,))
    return np.expand_dims(x, -1)


def squeeze_last(x: Any) -> Any:
    """``np.squeeze(x, -1)`` for an ``x`` whose last axis has size 1: a view without it."""
    if type(x) is np.ndarray:  # (a reshape, as np.squeeze gives: an array even at 0-d)
        return x.reshape(x.shape[:-1])
    return np.squeeze(x, -1)


def pad_to_rank(x: Any, rank: int) -> Any:
    """Insert size-1 axes after the (front) batch axis until the logical rank is ``rank``.

    Makes a batched value broadcast right-aligned like the example it stands for.
    """
    missing = rank - (x.ndim - 1)
    if missing <= 0:
        return x
    if type(x) is np.ndarray:  # fast path: a reshape that only inserts 1s is always a view
        return x.reshape(x.shape[:1] + (1,) * missing + x.shape[1:])
    return np.expand_dims(x, tuple(range(1, 1 + missing)))


def align_front(vals: Sequence, bdims: Sequence, rank: int | None = None) -> list:
    """Batched values to the front and, if ``rank`` is given, padded to that logical rank;
    unbatched values untouched (they broadcast right-aligned)."""
    out = []
    for v, b in zip(vals, bdims):
        if b is None:
            out.append(v)
        else:
            v = move_bdim_to_front(v, b)
            out.append(v if rank is None else pad_to_rank(v, rank))
    return out


def align_pointwise(vals: Sequence, bdims: Sequence) -> tuple[list, int]:
    """Align values for an elementwise op under NumPy's right-aligned broadcasting.

    Returns ``(values, out_bdim)``. When every batched value has the same bdim and full rank
    and the unbatched ones are scalars, nothing moves and the batch axis stays where it is.
    """
    rank = 0
    common: Any = -1  # (bdim, ndim) the batched values share; None: they differ; -1: none yet
    for v, b in zip(vals, bdims):
        nd = ndim_of(v)
        if b is None:
            if nd:
                common = None
            rank = max(rank, nd)
        else:
            rank = max(rank, nd - 1)
            if common == -1:
                common = (b, nd)
            elif common != (b, nd):
                common = None
    if common not in (None, -1) and common[1] == rank + 1:
        return list(vals), common[0]
    return align_front(vals, bdims, rank), 0


def dry_run(fn, shape: tuple, example_dtype, /, *args, **kwargs) -> Any:
    """Run ``fn`` on a small NumPy example of the given logical shape, to let NumPy validate
    arguments (and raise its own error) in edge cases a rule does not translate."""
    example = np.zeros(shape, dtype=example_dtype)
    return fn(example, *args, **kwargs)


def flat_rows(x: Any) -> Any:
    """A batch-first ``x`` as ``(B, size of one example)``: ``np.reshape(x, (B, -1))``, which
    NumPy refuses when B is 0 (the -1 is ambiguous there)."""
    n = x.shape[0]
    return np.reshape(x, (n, -1) if type(n) is not int or n else (0, math.prod(x.shape[1:])))


def read_only(x: Any) -> bool:
    """Whether the physical array under ``x`` refuses writes (NumPy's ``flags.writeable``);
    an array of a backend without read-only arrays (CuPy's flags have no ``writeable``, the
    ONNX recorder's array no flags) never does."""
    return not getattr(getattr(innermost(x), "flags", None), "writeable", True)


def any_example(x: Any) -> bool:
    """Whether any element of ``x`` is true in any example at any vmap level: NumPy's value
    checks (raise if one example holds a bad value). ``bool(np.any(x))`` of a value batched at
    an outer level would ask the outer examples to agree instead (a ControlFlowError)."""
    return bool(np.any(innermost(x)))


def all_examples(x: Any) -> bool:
    """Whether every element of ``x`` is true in every example at every vmap level."""
    return bool(np.all(innermost(x)))


def require(cond: object, reason: str) -> None:
    """Hand the call to the per-example loop when ``cond`` is false."""
    if not cond:
        raise LoopFallback(reason)


def shared_value(v: Any, bdim: int | None, what: str) -> Any:
    """The one value every example holds in ``v`` (an argument that decides the shapes of the
    results, such as split points or ``reps``), unbatched at every level; a DataDependentError
    (vmap reruns per example) where the examples of a level differ, as their results' shapes
    may."""
    level = None  # the current level (the dispatcher names it); then each outer one
    while bdim is not None:
        v = move_bdim_to_front(v, bdim)
        if v.shape[0] == 0:
            raise BatchingError(f"{what} is batched, with batch size 0: there is no example "
                                f"to take it from, and the results' shapes depend on it")
        first = v[0]
        if not bool(np.all(v == first)):
            raise DataDependentError(
                f"{what} differs between the examples, and the results' shapes depend on it, "
                f"so no batch can hold them. Pass the same value to every example "
                f"(unbatched).", level)
        v = first
        bdim = getattr(v, "_bdim", None)  # a BatchedTensor of an outer level
        if bdim is not None:
            level, v = v._level, v._value
    return v


def clip_mode(mode: Any) -> str:
    """``"raise"``, ``"wrap"`` or ``"clip"``: what NumPy makes of the ``mode=`` of ``take`` /
    ``put`` / ``choose`` (also None, bytes and the ints 0 / 1 / 2), with NumPy's error for
    anything else."""
    if isinstance(mode, str) and mode in ("raise", "wrap", "clip"):
        return mode
    try:  # position 4 of three elements: clip gives the last, wrap the second, raise refuses
        got = np.take(np.arange(3), [4], mode=mode)[0]
    except IndexError:
        return "raise"
    return "clip" if got == 2 else "wrap"


# ---- plain arguments made batched where another argument is ------------------------------------
# Library code that indexes or calls a method of a plain array with a batched argument
# (``plain[cond]``, ``plain.searchsorted(batched)``) meets NumPy's conversion, which batchtensor
# cannot intercept; a rule for the calling function makes such arguments broadcast views batched
# at the same levels first, and runs the library's own code.

def levels_of(values: Sequence[Any]) -> list:
    """``(level, batch size)`` of every level one of ``values`` is batched at, the outermost
    first."""
    found: dict = {}
    for x in values:
        level = scan_level(x)
        while level is not None:
            x, bdim = unwrap(x, level)
            found.setdefault(id(level), x.shape[bdim])
            level = scan_level(x)
    return [(lv, found[id(lv)]) for lv in active_levels() if id(lv) in found]


def plain_value(x: Any, scalars: bool) -> bool:
    """An unbatched array (also one the function made, a buffer; not a subclass: a broadcast
    would drop a mask), or a scalar where ``scalars``, that ``np.broadcast_arrays`` makes a
    plain array of."""
    if type(x) is BatchedTensor:
        return False
    if isinstance(x, (bool, int, float, complex, np.generic)):
        return scalars
    return hasattr(x, "shape") and hasattr(x, "dtype") and not (
        issubclass(type(x), np.ndarray) and type(x) is not np.ndarray)


def batched_as(x: Any, levels: list, like: Any) -> Any:
    """``x`` broadcast (a view) at each of ``levels`` (``levels_of``), the outermost first."""
    if hasattr(x, "shape") and not isinstance(x, np.generic):
        x = x[...]  # (a view; of a buffer, of the plain array it stands for)
    for level, n in levels:
        x = wrap(ensure_bdim(x, None, n, like=like), 0, level)
    return x
