"""Plumbing between batched values and physical ones, shared by the dispatcher, the Python
operators, the boxed fallbacks and the rules.

- ``scan_level``: the current level of a call (the highest live level among its arguments);
- ``unwrap`` / ``wrap`` / ``wrap_result``: ``(value, bdim)`` pairs in and out of a level;
- ``innermost``: the physical array under any number of levels (for ``like=``);
- the *aligned fast path*: when the batched operands of an elementwise op already line up
  (one level, one batch axis position, one physical rank) or the others are scalars, the op
  runs on the physical values as they are. ``unary_fast_path`` / ``binary_fast_paths`` /
  ``inplace_fast_path`` build it for a ufunc (the Python operators *are* these functions, and
  ``dispatch.ufunc_call`` runs the same ones first), ``front_aligned`` is its second tier
  (ranks padded after a batch axis in front), ``aligned_fast`` the n-ary form for functions
  (``OpEntry.fast``), and ``matmul_fast`` the one GEMM of ``x @ w``.

The unchecked constructor ``new_batched`` and the hot-path entry ``enter`` live beside the
class in ``tensor`` (its own fast paths need them); this module builds on them.
"""

from __future__ import annotations

import types
from typing import Any, Callable, cast

import numpy as np

from .levels import note_write
from .registry import RECORDERS, Path, record, slots
from .tensor import BatchedTensor, enter, new_batched, scalar_per_example

__all__ = ["SCALAR_TYPES", "LEAF_TYPES", "scan_level", "unwrap", "wrap", "wrap_result",
           "innermost", "unary_fast", "unary_fast_path", "binary_fast_paths", "inplace_fast_path",
           "front_aligned", "aligned_fast", "matmul_fast", "EITHER"]

#: Python and NumPy scalar types: an operand of one of these broadcasts against any example
SCALAR_TYPES = frozenset({int, float, complex, bool, np.float64, np.float32, np.float16,
                          np.int64, np.int32, np.int16, np.int8, np.uint8, np.uint16,
                          np.uint32, np.uint64, np.bool_, np.complex128, np.complex64})

#: types that never hold a BatchedTensor: scans skip them without looking inside
LEAF_TYPES = frozenset({np.ndarray, int, float, complex, bool, str, type(None),
                        type(Ellipsis), type(np._NoValue), np.dtype, type}) | SCALAR_TYPES


# ---- the current level of a call ----------------------------------------------------------------
def _higher(level, t: BatchedTensor):
    lv = t._level
    if not lv.alive:
        lv.check_alive()
    if level is None or lv.id > level.id:
        return lv
    return level


def scan_level(obj: Any, level=None):
    """The highest live level among the BatchedTensors anywhere in ``obj`` (lists, tuples,
    dicts, slices), or ``level`` if none is higher. A BatchedTensor of a closed level raises
    the escaped-tensor error."""
    t = type(obj)
    if t is BatchedTensor:
        return _higher(level, obj)
    if t is tuple or t is list:
        for x in obj:
            tx = type(x)
            if tx is BatchedTensor:
                level = _higher(level, x)
            elif tx in LEAF_TYPES:
                continue
            else:
                level = scan_level(x, level)
    elif t is dict:
        for x in obj.values():
            level = scan_level(x, level)
    elif t in LEAF_TYPES:
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


# ---- (value, bdim) pairs ------------------------------------------------------------------------
def unwrap(x: Any, level) -> tuple[Any, int | None]:
    """``(physical value, bdim)`` if ``x`` is batched at ``level``, else ``(x, None)``."""
    if type(x) is BatchedTensor and x._level is level:
        return x._value, x._bdim
    return x, None


def wrap(value: Any, bdim: int | None, level) -> Any:
    """``value`` batched at ``level`` along ``bdim``; unbatched (as it is) if ``bdim`` is None."""
    if bdim is None:
        return value
    return new_batched(value, bdim, level)


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


def innermost(x: Any) -> Any:
    """The physical array under ``x``'s levels (``x`` itself if it is not batched): the array
    whose backend a new array must be created on (``like=``)."""
    while type(x) is BatchedTensor:
        x = x._value
    return x


# ---- the aligned fast path ----------------------------------------------------------------------
# Locals bound as default arguments below: each global look-up saved is ~20 ns on paths that
# cost ~300 ns in all (a Python operator on two aligned values).

def unary_fast(x, ufunc=None, single: bool = True, _bt=BatchedTensor, _make=object.__new__,
               _rec=RECORDERS):
    """``ufunc(x)`` of one batched value (``single``: ``ufunc`` has one output): the ufunc on
    the physical value, batch axis where it was. A value whose physical array is itself batched
    (an outer level) goes straight to the outer level's dispatcher instead of through NumPy's
    protocol."""
    level = x._level
    if not level.alive:
        level.check_alive()
    if _rec:
        record(ufunc, Path.BOXED)
    v = x._value
    res = ufunc(v) if type(v) is not _bt else slots.ufunc_call(ufunc, "__call__", (v,), {})
    if single:
        r = _make(_bt)
        r._value = res
        r._bdim = x._bdim
        r._level = level
        return r
    return tuple(new_batched(r, x._bdim, level) for r in res)


def unary_fast_path(ufunc, name: str) -> Callable:
    """``unary_fast`` with ``ufunc`` bound, as a method called ``name`` (``__neg__``): the same
    code object with another default, not a function that calls it (a unary operator costs
    ~0.5 µs above NumPy, and one more call would add a sixth)."""
    fast = types.FunctionType(unary_fast.__code__, unary_fast.__globals__, name,
                              (ufunc, ufunc.nout == 1)
                              + cast(tuple, unary_fast.__defaults__)[2:])
    fast.__qualname__ = f"BatchedTensor.{name}"
    fast.__doc__ = f"``numpy.{ufunc.__name__}(self)``: see ``plumbing.unary_fast``."
    return fast


#: ufunc -> ``binary_fast_paths(ufunc)[2]`` (its ``either``), made by ``dispatch.ufunc_call``
#: at its first call for the ufunc, and run first by every caller
EITHER: dict = {}


def binary_fast_paths(ufunc, on_miss: Callable | None = None) -> tuple:
    """``(forward, reflected, either)`` for binary ufunc ``ufunc``: ``forward(x, y)`` is
    ``ufunc(x, y)`` and ``reflected(x, y)`` is ``ufunc(y, x)`` for a BatchedTensor ``x`` (the
    operators ``__add__`` and ``__radd__``); ``either(a, b)`` is ``ufunc(a, b)`` where either
    operand may be the BatchedTensor (``dispatch.ufunc_call``). On the physical values when
    they line up:

    - both batched at one level with the same batch axis and physical rank;
    - one batched, the other a Python or NumPy scalar;
    - one batched with its batch axis first, the other a plain ndarray of lower rank (it
      broadcasts right-aligned against one example as it is);

    then ``front_aligned`` (ranks padded); otherwise ``on_miss(ufunc, a, b)`` with the operands
    in the ufunc's order (None if not given: the caller's general path follows). ``forward``
    and ``reflected`` are the same steps with the operands in the other order, written out
    twice because they are the Python operators themselves, where one more call would cost a
    tenth of the interception."""
    def forward(self, other, _bt=BatchedTensor, _make=object.__new__, _rec=RECORDERS,
                _scalars=SCALAR_TYPES, _nd=np.ndarray):
        level = self._level
        t = type(other)
        if level.alive:
            v = self._value
            if t is _bt:
                ov = other._value
                if other._level is level and other._bdim == self._bdim and ov.ndim == v.ndim:
                    if _rec:
                        record(ufunc, Path.BOXED)
                    r = _make(_bt)
                    r._value = ufunc(v, ov)
                    r._bdim = self._bdim
                    r._level = level
                    return r
            elif t in _scalars or (t is _nd and not self._bdim and other.ndim < v.ndim):
                if _rec:
                    record(ufunc, Path.BOXED)
                r = _make(_bt)
                r._value = ufunc(v, other)
                r._bdim = self._bdim
                r._level = level
                return r
        res = front_aligned(ufunc, self, other, _bt, t)
        if res is not None or on_miss is None:
            return res
        return on_miss(ufunc, self, other)

    def reflected(self, other, _bt=BatchedTensor, _make=object.__new__, _rec=RECORDERS,
                  _scalars=SCALAR_TYPES, _nd=np.ndarray):
        level = self._level
        t = type(other)
        if level.alive:
            v = self._value
            if t in _scalars or (t is _nd and not self._bdim and other.ndim < v.ndim):
                if _rec:
                    record(ufunc, Path.BOXED)
                r = _make(_bt)
                r._value = ufunc(other, v)
                r._bdim = self._bdim
                r._level = level
                return r
        res = front_aligned(ufunc, other, self, t, _bt)
        if res is not None or on_miss is None:
            return res
        return on_miss(ufunc, other, self)

    def either(a, b, _bt=BatchedTensor):
        if type(a) is _bt:
            return forward(a, b)
        if type(b) is _bt:
            return reflected(b, a)
        return None if on_miss is None else on_miss(ufunc, a, b)

    return forward, reflected, either


def inplace_fast_path(ufunc, on_miss: Callable) -> Callable:
    """``x op= y`` (``ufunc(x, y, out=x)``) where ``x`` is batched: written into ``x``'s
    physical value when ``y`` lines up with it or is a scalar; otherwise ``on_miss(ufunc, x,
    y)``. A NumPy scalar per example rebinds instead (NotImplemented: Python then computes
    ``x op y`` and rebinds the name), as ``z += 1`` does on a NumPy scalar."""
    def inplace(self, other, _bt=BatchedTensor, _rec=RECORDERS, _scalars=SCALAR_TYPES):
        level = self._level
        if not level.alive:
            level.check_alive()
        t = type(other)
        v = self._value
        if v.ndim == 1 and scalar_per_example(self):
            return NotImplemented
        if level.watches_writes:
            note_write(level, innermost(v))
        if level.size == 0:
            return self  # the loop runs no example: nothing is written (or refused)
        if (t is _bt and other._level is level and other._bdim == self._bdim
                and other._value.ndim == v.ndim) or t in _scalars:
            if _rec:
                record(ufunc, Path.BOXED)
            ufunc(v, other._value if t is _bt else other, out=v)
            return self
        return on_miss(ufunc, self, other)

    return inplace


def _pad_after_front(v: np.ndarray, rank: int) -> np.ndarray:
    missing = rank - v.ndim
    return v if missing <= 0 else v.reshape(v.shape[:1] + (1,) * missing + v.shape[1:])


def front_aligned(ufunc, a, b, ta: type, tb: type) -> BatchedTensor | None:
    """The aligned fast path's second tier, for a binary ufunc whose operand of the current
    (highest) level is a batch-first NumPy array: the other operand is of the same level and
    batch-first too, or unbatched here (a plain array, or a BatchedTensor of an outer level,
    which dispatches again inside the call). Ranks are padded with a reshape (a view). None if
    it does not apply."""
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
    elif to is np.ndarray:
        ov = other
        cv = _pad_after_front(cv, ov.ndim + 1)
    elif to is BatchedTensor:
        ov = other
        cv = _pad_after_front(cv, ov._value.ndim)  # (its logical rank + 1, without .ndim's call)
        outer = True
    else:
        return None
    if RECORDERS:
        record(ufunc, Path.BOXED)
    if outer:  # an outer level's value: its fast path or its dispatcher, not NumPy's protocol
        args = (ov, cv) if swap else (cv, ov)
        either = EITHER.get(ufunc)  # (what ufunc_call runs first for these two operands)
        res = either(*args) if either is not None else None
        if res is None:
            res = slots.ufunc_call(ufunc, "__call__", args, {})
    else:
        res = ufunc(ov, cv) if swap else ufunc(cv, ov)
    return new_batched(res, 0, lv)


def aligned_fast(op: Any, max_args: int, min_args: int = 1) -> Callable:
    """A hot path before any binding (``OpEntry.fast``) for an elementwise function called
    with ``min_args`` to ``max_args`` positional arguments, each a value batched at this level
    with the batch axis first and one physical rank, or a scalar: ``op`` on the physical
    values, which already line up. Anything else (keywords, plain arrays, other ranks or
    levels) returns NotImplemented for the general path. (``dispatch.function_call`` marks
    0-d array results of the ops in ``scalars.ARRAY_0D``, such as ``np.where``.)"""
    def fast(level, args, kwargs):
        if kwargs or not min_args <= len(args) <= max_args:
            return NotImplemented
        vals = []
        nd = 0
        for a in args:
            t = type(a)
            if t is BatchedTensor:
                v = a._value
                if a._level is not level or a._bdim or type(v) is not np.ndarray \
                        or (nd and v.ndim != nd):
                    return NotImplemented
                nd = v.ndim
                vals.append(v)
            elif t in SCALAR_TYPES:
                vals.append(a)
            else:
                return NotImplemented
        if not nd:
            return NotImplemented
        res = op(*vals)
        if isinstance(res, tuple):
            return tuple(new_batched(r, 0, level) for r in res)
        return new_batched(res, 0, level)

    return fast


def matmul_fast(a, b, _bt=BatchedTensor, _nd=np.ndarray, _make=object.__new__,
                _rec=RECORDERS) -> BatchedTensor | None:
    """``a @ b`` where the batched operands have their batch axis first (and one level), and a
    plain operand is a matrix or, beside a batched matrix, a vector: the one ``np.matmul`` the
    matmul rule makes of it (a batch of vectors beside a plain matrix is one GEMM), without the
    dispatcher. None for every other case (the rule takes it)."""
    ta, tb = type(a), type(b)
    if ta is _bt:
        av, level = a._value, a._level
        if a._bdim or type(av) is not _nd:
            return None
        na = av.ndim
        if tb is _bt:
            bv = b._value
            if b._level is not level or b._bdim or type(bv) is not _nd:
                return None
            nb = bv.ndim
            if na == nb and na >= 3:
                res = np.matmul(av, bv)
            elif na == 3 and nb == 2:  # matrix @ vector per example
                res = np.matmul(av, bv[:, :, None])[:, :, 0]
            elif na == 2 and nb == 3:  # vector @ matrix per example
                res = np.matmul(av[:, None, :], bv)[:, 0, :]
            elif na == 2 and nb == 2:  # vector @ vector per example
                res = np.matmul(av[:, None, :], bv[:, :, None])[:, 0, 0]
            else:
                return None
        elif tb is _nd and na >= 2 and (b.ndim == 2 or (b.ndim == 1 and na >= 3)):
            # (a 0-d example, na == 1, must reach the rule: NumPy refuses it, and (B,) @ w
            # would contract the batch axis instead)
            res = np.matmul(av, b)  # x_i @ w for every i: (B, k) @ w is one GEMM
        else:
            return None
    elif tb is _bt and ta is _nd:
        bv, level = b._value, b._level
        if b._bdim or type(bv) is not _nd:
            return None
        if bv.ndim == 2 and a.ndim == 2:
            res = np.matmul(bv, a.T)  # w @ x_i for every i: (B, k) @ w.T
        elif bv.ndim >= 3 and 1 <= a.ndim <= 2:
            res = np.matmul(a, bv)
        else:
            return None
    else:
        return None
    # (new_batched and tensor.enter, in place: a GEMM of a small batch costs about as much as
    # the two calls would)
    if not level.alive:
        level.check_alive()
    if _rec:
        record(np.matmul, Path.RULE)
    r = _make(_bt)
    r._value = res
    r._bdim = 0
    r._level = level
    return r
