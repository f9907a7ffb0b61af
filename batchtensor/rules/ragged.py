"""Selections by a batched boolean mask whose size differs per example, kept vectorised while
they stay inside the function.

``x[m]`` with a mask that selects a different count in each example has no batch: the examples'
results differ in shape. Real code mostly uses such a selection locally: it transforms it
elementwise, reduces it, or writes it back through a mask (``x[m] = x[m] * a``,
``y[m] = g(x[m])``, ``x[m].mean()``, ``np.median(x[x > 0])``). ``Ragged`` holds the selected
elements of all examples one after another, as a jagged array:

- ``values``: shape ``(N, *rest)``: example 0's ``x[m]``, then example 1's, ... (``N`` the
  total count; ``rest`` the axes of ``x`` the mask does not cover);
- ``counts``: shape ``(B,)``, each example's count.

Elementwise ops run on ``values`` alone, so only the selected elements compute (and warn, as in
the loop), at the speed of one plain NumPy call (a masked ``where=`` loop over the padded batch
measured 20-60 times slower on random masks). Two selections with the same counts pair their
elements in order, as the loop pairs them; a per-example value is repeated per element.
``x[m] = r`` is one boolean scatter: ``x[m]`` lists its elements in the same order. Reductions
over the selection are segment reductions (``ufunc.reduceat``) or, where NumPy's own
semantics are easier to keep on a rectangle (mean, var, median, argmin, cumsum), run on the
selection padded to ``(B, L, *rest)`` with ``where=`` or a padding that cannot win. A float
sum is always the rectangle's: NumPy adds each example's contiguous array pairwise, which the
masked reduction of its valid prefix repeats bit for bit (``reduceat`` adds in another order).

``np.dot`` of two integer selections with the same counts is each example's sum of products;
``np.take(a, i)`` by a selection of indices gathers each example's own ``a`` (a selection with
``i``'s counts: ``pi.take(nzx)`` after ``scipy.sparse.find``); ``np.vectorize`` with
``otypes`` calls its function once per selected element.

``x[m].shape[0]`` is a ``Count``: each example's count, which answers its truth
(``if tp.shape[0]:``, as scikit-learn's ``multilabel_confusion_matrix`` asks: examples that
disagree split into groups, as at any ``if``) and converts where every example holds the same
count; ``len(x[m])`` answers only where its result is used for nothing but its truth
(``diagnostics.only_truth_tested``). In arithmetic with a NumPy value the count is the loop's
weak Python int (``x[m].shape[0] * np.sum(d ** 2)`` has the sum's dtype). ``np.bincount`` of
a selection counts each example's elements, where every example has as many bins.

Every other use (arithmetic on ``len``, the count with a Python number, an index,
``np.sort``, returning it from the function) has no batched meaning: it raises
DataDependentError naming the op, which the whole-function fallback turns into a per-example
run of the function.
"""

from __future__ import annotations

import math
import operator
import sys
from typing import Any, Callable

import numpy as np
from numpy.lib.array_utils import normalize_axis_tuple

from ..diagnostics import only_truth_tested
from ..errors import DataDependentError, note_refusal
from ..levels import Level
from ..registry import slots
from ..tensor import BatchedTensor, batch_axes_in_front, new_batched
from ._helpers import NoValue, dry_run, given, move_bdim_to_front

__all__ = ["Ragged", "Count", "select", "write_selection", "is_ragged", "vectorize_call"]


def is_ragged(x: Any) -> bool:
    return type(x) is Ragged


def returned_count(x: Any) -> Any:
    """What vmap stacks for ``x`` returned as it is: a ``Count`` is each example's count as a
    batched integer (the loop stacks the examples' Python ints into int64); else ``x``."""
    return x._batched() if type(x) is Count else x


def _plain(v: Any) -> bool:
    """A physical value of a backend that can hold a ragged selection: NumPy's or CuPy's array
    (not a value batched at an outer level; not the ONNX recorder, whose shapes are fixed)."""
    t = type(v)
    return t is np.ndarray or (getattr(t, "__module__", "") or "").split(".")[0] == "cupy"


def _counts(mf: Any) -> Any:
    # (the row length spelt out: a reshape of no examples to (0, -1) is ambiguous to NumPy)
    return np.sum(np.reshape(mf, (mf.shape[0], math.prod(mf.shape[1:]))), axis=1,
                  dtype=np.intp)


def _in_front(v: Any, vb: int | None, level: Level) -> tuple[Any, tuple]:
    """``(physical, levels)``: a physical value at ``level`` (batched there at ``vb``, or not)
    with the batch axis of every level it is batched at in front, outermost first (views)."""
    if vb is not None:
        return batch_axes_in_front(new_batched(v, vb, level))
    if type(v) is BatchedTensor:
        return batch_axes_in_front(v)
    return v, ()


def _aligned(phys: Any, have: tuple, levels: tuple, sizes: tuple) -> Any:
    """``phys`` (its batch axes those of ``have``, in front) broadcast to every level of
    ``levels`` (a view): a value not batched at a level is every example's there."""
    for k, lv in enumerate(levels):
        if lv not in have:
            phys = np.expand_dims(phys, k)
    return np.broadcast_to(phys, sizes + tuple(phys.shape[len(levels):]))


def _levels_of(*found: tuple) -> tuple:
    """The levels any of ``found`` is batched at, outermost (the lowest id) first."""
    return tuple(sorted({lv for lvs in found for lv in lvs}, key=lambda lv: lv.id))


def select(level: Level, x: Any, xb: int | None, mask: Any, mb: int) -> Ragged | None:
    """``x[mask]`` for a mask that selects a different count per example, or None where the
    selection cannot be held (a backend whose shapes are fixed; NumPy's own errors). In a
    nested vmap the examples are those of every level, outermost first."""
    xf, x_levels = _in_front(x, xb, level)
    mf, m_levels = _in_front(mask, mb, level)
    if not (_plain(xf) and _plain(mf)):
        return None
    levels = _levels_of(x_levels, m_levels)
    sizes = tuple(mf.shape[m_levels.index(lv)] if lv in m_levels else
                  xf.shape[x_levels.index(lv)] for lv in levels)
    mf = _aligned(mf, m_levels, levels, sizes)
    # an unbatched x (``np.arange(n)[mask]``): every example selects from the same values
    xf = _aligned(xf, x_levels, levels, sizes)
    if tuple(xf.shape[:mf.ndim]) != tuple(mf.shape):
        return None  # NumPy's IndexError comes from the general path
    n = math.prod(sizes)
    mf = np.reshape(mf, (n,) + tuple(mf.shape[len(levels):]))
    xf = np.reshape(xf, (n,) + tuple(xf.shape[len(levels):]))
    return Ragged(levels, xf[mf], _counts(mf), sizes)  # example-major, in C order: a copy


def write_selection(level: Level, x: Any, xb: int, mask: Any, mb: int, value: Ragged) -> None:
    """``x[mask] = value`` for a ragged ``value``: each example's selection must have the
    mask's count there (the loop broadcasts a length-1 selection too: that runs per example)."""
    xf, x_levels = _in_front(x, xb, level)
    mf, m_levels = _in_front(mask, mb, level)
    if not (_plain(xf) and _plain(mf)) or value._level is not level or \
            x_levels != value._levels:
        raise value.no_batched_meaning("x[mask] = selection, with values batched at other "
                                       "levels than x")
    sizes = tuple(xf.shape[:len(x_levels)])
    mf = _aligned(mf, m_levels, x_levels, sizes)
    n = math.prod(sizes)
    if not np.array_equal(_counts(np.reshape(mf, (n,) + tuple(mf.shape[len(sizes):]))),
                          value.counts):
        raise value.no_batched_meaning("x[mask] = selection, where the mask selects other "
                                       "counts")
    xf[mf] = value.values  # (a view of x: the batch axes moved to the front)


class Ragged:
    """A selection ``x[mask]`` whose size differs per example (see the module docstring)."""

    __slots__ = ("_levels", "_sizes", "_level", "values", "counts", "_starts")

    def __init__(self, levels: Level | tuple, values: Any, counts: Any,
                 sizes: tuple | None = None):
        if type(levels) is not tuple:  # one level's examples
            levels, sizes = (levels,), (counts.shape[0],)
        self._levels: tuple = levels  # every level the examples belong to, outermost first
        self._sizes: tuple = sizes if sizes is not None else (counts.shape[0],)  # their sizes
        self._level = levels[-1]
        self.values = values
        self.counts = counts  # one per example of every level (row-major over the levels)
        self._starts = None

    def _like(self, values: Any) -> Ragged:
        """Another selection with these counts (its starts shared)."""
        r = Ragged(self._levels, values, self.counts, self._sizes)
        r._starts = self._starts
        return r

    def wrap(self, res: Any) -> BatchedTensor:
        """A result with one row per example (``(B, ...)``, B over every level) as the batched
        value, nested where the selection's examples are of several levels."""
        if len(self._levels) == 1:
            return new_batched(res, 0, self._level)
        out: Any = np.reshape(res, self._sizes + tuple(res.shape[1:]))
        for lv in self._levels:
            out = new_batched(out, 0, lv)
        return out

    @property
    def starts(self) -> Any:
        """Where each example's elements start in ``values``."""
        if self._starts is None:
            ends = np.cumsum(self.counts)
            self._starts = ends - self.counts
        return self._starts

    def _rest(self) -> tuple:
        return tuple(self.values.shape[1:])

    def padded(self, fill: Any) -> tuple[Any, Any]:
        """``(data, valid)``: the selection as a ``(B, L, *rest)`` rectangle, each example's
        elements first and ``fill`` after them; ``valid`` ``(B, L)`` marks the elements."""
        n = self.counts.shape[0]
        longest = int(np.max(self.counts)) if n else 0
        valid = np.arange(longest, like=self.counts) < self.counts[:, None]
        data = np.full((n, longest) + self._rest(), fill, dtype=self.values.dtype,
                       like=self.values)
        data[valid] = self.values
        return data, valid

    def _from_padded(self, data: Any, valid: Any) -> Ragged:
        return self._like(data[valid])

    # ---- what has a batched meaning ---------------------------------------------------------
    @property
    def dtype(self) -> np.dtype:
        return self.values.dtype

    @property
    def ndim(self) -> int:
        return self.values.ndim

    @property
    def size(self) -> Count:
        """Each example's element count, a ``Count``: the loop has a Python int, which
        promotes as a weak scalar (``size * np.float32(2)`` is float32), which no batched
        integer does: its truth, a count every example shares and arithmetic with a NumPy
        value (``Count``) have a meaning."""
        return Count(self, math.prod(self._rest()))

    @property
    def real(self) -> Ragged:
        return self._elementwise(np.real, (self,), {})

    @property
    def imag(self) -> Ragged:
        return self._elementwise(np.imag, (self,), {})

    def __repr__(self) -> str:
        lo, hi = self._count_range()
        return (f"<a selection by a batched mask: {lo} to {hi} elements of "
                f"{self.dtype} per example, {self.counts.shape[0]} examples>")

    # ---- what has none -----------------------------------------------------------------------
    def _count_range(self) -> tuple[int, int]:
        c = self.counts
        return (int(np.min(c)), int(np.max(c))) if c.shape[0] else (0, 0)

    def no_batched_meaning(self, op: str) -> DataDependentError:
        slots.note_if_caught(self._level, f"{op} of a selection of a size per example")
        lo, hi = self._count_range()
        return DataDependentError(
            f"{op}: x[mask] with a batched boolean mask selects between {lo} and {hi} "
            f"elements depending on the example, so the selections have different shapes. "
            f"Inside a vmap such a selection works with elementwise ops, reductions and "
            f"x[mask] = selection, but not with {op}. Keep shapes fixed with "
            f"np.where(mask, x, fill), or reduce with where=mask.", self._level)

    @property
    def shape(self) -> tuple:
        """``(count, *rest)``: the count a ``Count``, the other axes plain ints."""
        return (Count(self),) + self._rest()

    def __len__(self) -> int:
        # len() must return an int: where only its truth is used, 1 or 0 says all of it
        if only_truth_tested(sys._getframe(1), len):
            return int(bool(Count(self)))
        raise self.no_batched_meaning("len()")

    def __iter__(self):
        raise self.no_batched_meaning("iterating over the selection")

    def __bool__(self) -> bool:
        raise self.no_batched_meaning("bool()")

    def __array__(self, dtype=None, copy=None):
        what = "converting the selection to an array"
        note_refusal(self._level, what)  # (NumPy's own conversion: a lean pass is not used)
        raise self.no_batched_meaning(what)

    def __getitem__(self, key):
        raise self.no_batched_meaning("indexing the selection")

    def __setitem__(self, key, value):
        raise self.no_batched_meaning("writing into the selection by index")

    def __reduce_ex__(self, protocol):
        raise self.no_batched_meaning("pickling the selection")

    # ---- elementwise ------------------------------------------------------------------------
    def _operand(self, v: Any, what: str) -> Any:
        """``v`` as an operand of ``values``: one element per selected element where ``v``
        is a selection or a per-example value; a plain value broadcasts as it is. One example
        of ``v`` must broadcast against one selected element (or be a length-1 axis in front
        of one), so that the count stays the leading axis, as in the loop."""
        rest = len(self._rest())
        if type(v) is Ragged:
            if v._levels != self._levels or not (
                    v.counts is self.counts or np.array_equal(v.counts, self.counts)):
                raise self.no_batched_meaning(f"{what} of two selections with different counts")
            return v.values
        if type(v) is BatchedTensor:
            phys, have = batch_axes_in_front(v)
            if not set(have) <= set(self._levels) or not _plain(phys):
                raise self.no_batched_meaning(f"{what} with a value batched at another level")
            sizes = self._sizes
            phys = _aligned(phys, have, self._levels, sizes)
            phys = np.reshape(phys, (math.prod(sizes),) + tuple(phys.shape[len(sizes):]))
            shape = tuple(phys.shape[1:])
            if len(shape) == rest + 1 and shape[0] == 1:
                phys, shape = phys[:, 0], shape[1:]
            elif len(shape) > rest:
                raise self.no_batched_meaning(f"{what} with an operand that has a count axis")
            phys = np.reshape(phys, phys.shape[:1] + (1,) * (rest - len(shape)) + shape)
            return np.repeat(phys, self.counts, axis=0)
        shape = np.shape(v)
        if len(shape) > rest + 1 or (len(shape) == rest + 1 and shape[0] != 1):
            raise self.no_batched_meaning(f"{what} with an operand that has a count axis")
        return v

    def _elementwise(self, fn: Callable, args: tuple, kwargs: dict) -> Ragged:
        """A NumPy function computed per element (``np.where``, ``np.clip``, ``np.real``)."""
        what = getattr(fn, "__name__", "the function")
        phys = [self._operand(a, what) if _holds_data(a) else a for a in args]
        return self._like(fn(*phys, **kwargs))

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if method == "reduce":
            return _reduce_ufunc(ufunc, inputs, kwargs)
        if method == "accumulate":
            return _accumulate(ufunc, inputs, kwargs)
        name = f"np.{ufunc.__name__}"
        if ufunc is np.matmul and method == "__call__" and len(inputs) == 2 and \
                set(kwargs) <= {"out"}:
            return _dot(*inputs, out=kwargs.get("out"))
        if method != "__call__" or ufunc.signature is not None or "where" in kwargs:
            raise self.no_batched_meaning(f"{name}.{method}" if method != "__call__" else name)
        out = kwargs.pop("out", None)
        if out is not None:
            if any(type(t) is not Ragged for t in out):
                raise self.no_batched_meaning(f"{name}(out=...) into an array that is not a "
                                              f"selection")
            kwargs["out"] = tuple(self._operand(t, name) for t in out)
        res = ufunc(*[self._operand(v, name) for v in inputs], **kwargs)
        if out is not None:
            return out if ufunc.nout > 1 else out[0]
        return tuple(self._like(r) for r in res) if ufunc.nout > 1 else self._like(res)

    def __array_function__(self, func, types, args, kwargs):
        handler = _FUNCTIONS.get(func)
        if handler is None:
            raise self.no_batched_meaning(f"np.{func.__name__}")
        return handler(*args, **kwargs)

    # ---- reductions over the selection ------------------------------------------------------
    def _axes(self, axis: Any) -> tuple:
        nd = self.ndim
        return tuple(range(nd)) if axis is None else normalize_axis_tuple(axis, nd)

    def _within(self, fn: Callable, axes: tuple, keepdims: bool, **kwargs) -> Ragged:
        """A reduction within each selected element (over ``rest`` axes only)."""
        return self._like(fn(self.values, axis=axes, keepdims=bool(keepdims), **kwargs))

    def _empty_examples(self) -> bool:
        return bool(self.counts.shape[0]) and int(np.min(self.counts)) == 0

    def segment_reduce(self, ufunc, vals: Any, dtype: Any) -> Any:
        """``ufunc`` over each example's rows of ``vals`` (one row per selected element, at
        least one row): one ``reduceat`` over the examples that have elements (an empty
        example's start is the next one's, or the end, which ``reduceat`` cannot take: the
        example before it would lose its last element); an empty example's row is garbage."""
        if not self._empty_examples():
            return ufunc.reduceat(vals, self.starts, axis=0, dtype=dtype)
        some = self.counts > 0
        part = ufunc.reduceat(vals, self.starts[some], axis=0, dtype=dtype)
        res = np.zeros(self.counts.shape + tuple(part.shape[1:]), dtype=part.dtype, like=part)
        res[some] = part
        return res

    def _segments(self, ufunc, axes: tuple, keepdims: bool, dtype: Any = None,
                  initial: Any = NoValue) -> BatchedTensor:
        """``ufunc`` over each example's elements (``axes`` includes the count axis): one
        ``reduceat``; an example with no element gets ``initial``, or the identity."""
        vals = self.values
        inner = tuple(a for a in axes if a)
        if dtype is None:  # NumPy's result dtype for this reduction (np.sum of int8: int64)
            dtype = vals.dtype if ufunc.identity is None else ufunc.reduce(vals[:0], axis=0).dtype
        if ufunc is np.add and np.dtype(dtype).kind in "fc":
            return self._float_sum(axes, keepdims, np.dtype(dtype), initial)
        if inner:
            vals = ufunc.reduce(vals, axis=inner, dtype=dtype, keepdims=True)
        n_total = vals.shape[0]
        if n_total:
            res = self.segment_reduce(ufunc, vals, dtype)
        else:
            res = np.zeros((self.counts.shape[0],) + tuple(vals.shape[1:]), dtype=dtype,
                           like=vals)
        if given(initial):
            res = ufunc(initial, res, dtype=dtype)
        if self._empty_examples():
            start = initial if given(initial) else ufunc.identity
            empty = np.reshape(self.counts == 0, (-1,) + (1,) * (res.ndim - 1))
            res = np.where(empty, np.array(start, dtype=dtype, like=res), res)
        if keepdims:
            res = np.expand_dims(res, 1)  # the count axis, as one
        else:
            res = np.reshape(res, res.shape[:1] + tuple(
                d for i, d in enumerate(res.shape[1:]) if i + 1 not in axes))
        return self.wrap(res)

    def _float_sum(self, axes: tuple, keepdims: bool, dtype: np.dtype, initial: Any) -> Any:
        """A float sum over the selection, as the loop's ``np.sum`` of each example's fresh
        contiguous array adds: pairwise along a contiguous run (``reduceat`` adds in another
        order). NumPy's masked reduction of the padded selection adds each example's prefix
        of valid elements as that run: over the count axis alone (rows added in order) or over
        every axis (the example flattened, one run). A cast (``dtype=``) buffers the loop's
        run in chunks of ``np.getbufsize()`` elements, each added pairwise: one chunk only."""
        rest = self._rest()
        every = axes == tuple(range(self.ndim))
        if not (every or axes == (0,)):
            raise self.no_batched_meaning("a float sum over the count axis and some others")
        vals = self.values
        if vals.dtype != dtype:
            n = self.counts.shape[0]
            if n and int(np.max(self.counts)) * math.prod(rest) > np.getbufsize():
                raise self.no_batched_meaning("a float sum with a cast of more elements than "
                                              "NumPy's buffer")
            vals = vals.astype(dtype)
        data, valid = self._like(vals).padded(0)
        where = np.reshape(valid, valid.shape + (1,) * len(rest))
        extra = {"initial": initial} if given(initial) else {}
        if every:
            b = data.shape[0]
            n = math.prod(data.shape[1:])  # (not -1: ambiguous where b is 0)
            data = np.reshape(data, (b, n))
            where = np.reshape(np.broadcast_to(where, valid.shape + rest), (b, n))
        res = np.add.reduce(data, axis=1, where=where, **extra)
        if keepdims:
            res = np.reshape(res, res.shape[:1] + (1,) * self.ndim) if every else \
                np.expand_dims(res, 1)
        return self.wrap(res)

    def _reduce(self, ufunc, name: str, axis, keepdims, dtype=None, initial=NoValue) -> Any:
        axes = self._axes(axis)
        if 0 not in axes:
            extra = {} if initial is NoValue else {"initial": initial}
            return self._like(ufunc.reduce(self.values, axis=axes, keepdims=bool(keepdims),
                                           dtype=dtype, **extra))
        if ufunc.identity is None and not given(initial) and self._empty_examples():
            raise ValueError(f"zero-size array to reduction operation {name} which has no "
                             f"identity")
        return self._segments(ufunc, axes, keepdims, dtype, initial)

    def _rectangle(self, fn: Callable, axis, keepdims, **kwargs) -> Any:
        """A reduction with NumPy's own ``where=`` on the padded selection (mean, var, std)."""
        axes = self._axes(axis)
        if 0 not in axes:
            return self._within(fn, axes, keepdims, **kwargs)
        data, valid = self.padded(0)
        where = np.reshape(valid, valid.shape + (1,) * (data.ndim - 2))
        res = fn(data, axis=tuple(a + 1 for a in axes), keepdims=bool(keepdims), where=where,
                 **kwargs)
        return self.wrap(res)

    def sum(self, axis=None, dtype=None, out=None, keepdims=False, initial=NoValue,
            where=NoValue):
        _no_out(self, "sum", out, where)
        return self._reduce(np.add, "add", axis, keepdims, dtype, initial)

    def prod(self, axis=None, dtype=None, out=None, keepdims=False, initial=NoValue,
             where=NoValue):
        _no_out(self, "prod", out, where)
        return self._reduce(np.multiply, "multiply", axis, keepdims, dtype, initial)

    def any(self, axis=None, out=None, keepdims=False, *, where=NoValue):
        _no_out(self, "any", out, where)
        return np.not_equal(self, 0)._reduce(np.logical_or, "any", axis, keepdims)

    def all(self, axis=None, out=None, keepdims=False, *, where=NoValue):
        _no_out(self, "all", out, where)
        return np.not_equal(self, 0)._reduce(np.logical_and, "all", axis, keepdims)

    def min(self, axis=None, out=None, keepdims=False, initial=NoValue, where=NoValue):
        _no_out(self, "min", out, where)
        return self._reduce(np.minimum, "minimum", axis, keepdims, None, initial)

    def max(self, axis=None, out=None, keepdims=False, initial=NoValue, where=NoValue):
        _no_out(self, "max", out, where)
        return self._reduce(np.maximum, "maximum", axis, keepdims, None, initial)

    def ptp(self, axis=None, out=None, keepdims=False):
        _no_out(self, "ptp", out, NoValue)
        return np.subtract(self.max(axis, keepdims=keepdims), self.min(axis, keepdims=keepdims))

    def mean(self, axis=None, dtype=None, out=None, keepdims=False, *, where=NoValue):
        _no_out(self, "mean", out, where)
        return self._rectangle(np.mean, axis, keepdims, dtype=dtype)

    def var(self, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=NoValue,
            mean=NoValue, correction=NoValue):
        _no_out(self, "var", out, where)
        if given(mean):
            raise self.no_batched_meaning("var(mean=...)")
        extra = {} if correction is NoValue else {"correction": correction}
        return self._rectangle(np.var, axis, keepdims, dtype=dtype, ddof=ddof, **extra)

    def std(self, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=NoValue,
            mean=NoValue, correction=NoValue):
        _no_out(self, "std", out, where)
        if given(mean):
            raise self.no_batched_meaning("std(mean=...)")
        extra = {} if correction is NoValue else {"correction": correction}
        return self._rectangle(np.std, axis, keepdims, dtype=dtype, ddof=ddof, **extra)

    def _arg(self, fn: Callable, name: str, axis, keepdims) -> Any:
        """argmin / argmax over the selection: the position within each example's ``x[m]``;
        the padding repeats each example's first element, so it is never the first extreme."""
        if axis is not None and self._axes(axis) != (0,):
            if 0 in self._axes(axis):
                raise self.no_batched_meaning(f"np.{name}")
            return self._within(fn, self._axes(axis)[0], keepdims)
        if axis is None and self.ndim > 1:
            raise self.no_batched_meaning(f"np.{name} over a selection of rows")
        if self._empty_examples():
            raise ValueError(f"attempt to get {name} of an empty sequence")
        data, valid = self.padded(0)
        data = np.where(valid, data, data[:, :1])
        return self.wrap(fn(data, axis=1, keepdims=bool(keepdims)))

    def argmin(self, axis=None, out=None, *, keepdims=False):
        _no_out(self, "argmin", out, NoValue)
        return self._arg(np.argmin, "argmin", axis, keepdims)

    def argmax(self, axis=None, out=None, *, keepdims=False):
        _no_out(self, "argmax", out, NoValue)
        return self._arg(np.argmax, "argmax", axis, keepdims)

    def cumsum(self, axis=None, dtype=None, out=None):
        if dtype is None:  # NumPy's: np.cumsum of int8 is int64
            dtype = np.cumsum(self.values[:0]).dtype
        return _accumulate(np.add, (self,), {"axis": axis, "dtype": dtype, "out": out})

    def cumprod(self, axis=None, dtype=None, out=None):
        if dtype is None:
            dtype = np.cumprod(self.values[:0]).dtype
        return _accumulate(np.multiply, (self,), {"axis": axis, "dtype": dtype, "out": out})

    def astype(self, dtype, order="K", casting="unsafe", subok=True, copy=True):
        return self._like(self.values.astype(dtype, casting=casting))

    def converted(self, convert: Callable, args: tuple, kwargs: dict) -> Ragged:
        """``np.asarray(x[mask], dtype=...)`` and the other conversions (``convert``) of the
        selection: its elements, converted (a dtype, a copy); what would change the shape of
        an example (``ndmin``, ``np.require``'s flags) has no batched meaning."""
        name = getattr(convert, "__name__", "the conversion")
        known = {"dtype", "copy", "order"}
        if name not in ("asarray", "asanyarray", "array", "ascontiguousarray") or \
                len(args) > 1 or set(kwargs) - known or \
                kwargs.get("order") not in (None, "C", "K", "A"):
            raise self.no_batched_meaning(f"np.{name} with these arguments")
        values = convert(self.values, *args, **kwargs)
        return self if values is self.values else self._like(values)

    def copy(self, order="C"):
        return self._like(self.values.copy())

    def conj(self):
        return np.conjugate(self)

    conjugate = conj

    def clip(self, min=None, max=None, out=None, **kwargs):
        _no_out(self, "clip", out, NoValue)
        return self._elementwise(np.clip, (self, min, max), kwargs)

    def round(self, decimals=0, out=None):
        _no_out(self, "round", out, NoValue)
        return self._elementwise(np.round, (self, decimals), {})


class Count:
    """``x[m].shape[0]`` (or ``x[m].size``) of a selection: each example's count, where the
    loop has a Python int.

    What has the loop's meaning: its truth (``if x[m].shape[0]:``: every example's count
    tested, as at any ``if`` on a batched value), ``int()`` / ``operator.index()`` where
    every example holds the same count (as for any batched count), and arithmetic with a
    NumPy value (``x[m].shape[0] * np.sum(d ** 2)``), in which the loop's int is weak.
    Everything else (arithmetic with Python numbers or another count, comparisons, hashing)
    has no batched meaning: DataDependentError."""

    __slots__ = ("_of", "_per")

    def __init__(self, of: Ragged, per: int = 1):
        self._of, self._per = of, per  # (per: the elements of one selected row, for .size)

    def _batched(self) -> BatchedTensor:
        return self._of.wrap(self._of.counts * self._per)

    def __bool__(self) -> bool:
        return bool(self._of.wrap(self._of.counts * self._per != 0))

    def __index__(self) -> int:
        return operator.index(self._batched())

    def __int__(self) -> int:
        return self.__index__()

    def __float__(self) -> float:
        return float(self.__index__())

    def __repr__(self) -> str:
        lo, hi = self._of._count_range()
        return f"<the count of a selection by a batched mask: {lo} to {hi} per example>"

    def _refuse(self, *args: Any) -> Any:
        raise self._of.no_batched_meaning("the selection's count used as a number")

    def _weak(self, other: Any, ufunc: Any, reflected: bool) -> Any:
        """``count op x`` with a NumPy value ``x`` (batched or not): the loop's Python int
        takes ``x``'s dtype (NEP 50: ``n * np.float32(s)`` is float32; bool gives the default
        int). A count that dtype does not hold exactly (the loop's OverflowError, a rounded
        float) has no batched meaning."""
        if not (type(other) is BatchedTensor or isinstance(other, (np.ndarray, np.generic))) \
                or other.dtype.kind not in "biufc":
            self._refuse()
        counts = self._of.counts * self._per
        cast = counts.astype(np.result_type(other.dtype, 0))
        if not np.array_equal(cast, counts):
            self._refuse()
        n = self._of.wrap(cast)
        return ufunc(other, n) if reflected else ufunc(n, other)

    __hash__ = _refuse  # type: ignore[assignment]


def _holds_data(a: Any) -> bool:
    return type(a) in (Ragged, BatchedTensor) or isinstance(a, np.ndarray)


def _no_out(r: Ragged, name: str, out: Any, where: Any) -> None:
    if out is not None:
        raise r.no_batched_meaning(f"{name}(out=...)")
    if where is not NoValue and where is not True:
        raise r.no_batched_meaning(f"{name}(where=...)")


def _first_ragged(args: Any) -> Ragged:
    for a in args:
        if type(a) is Ragged:
            return a
    raise TypeError("no selection among the arguments")  # unreachable through NumPy


def _reduce_ufunc(ufunc, inputs: tuple, kwargs: dict) -> Any:
    r = inputs[0]
    _no_out(r, f"np.{ufunc.__name__}.reduce", kwargs.get("out"), kwargs.get("where", NoValue))
    return r._reduce(ufunc, ufunc.__name__, kwargs.get("axis", 0), kwargs.get("keepdims"),
                     kwargs.get("dtype"), kwargs.get("initial", NoValue))


def _accumulate(ufunc, inputs: tuple, kwargs: dict) -> Ragged:
    """Running totals along the selection, on the padded rectangle: the padding comes after
    each example's elements, so it cannot change their totals."""
    r = inputs[0]
    if kwargs.get("out") is not None:
        raise r.no_batched_meaning(f"np.{ufunc.__name__}.accumulate(out=...)")
    axis = kwargs.get("axis", 0)
    if axis is None:  # cumsum without an axis runs over the flattened example
        if r.ndim > 1:
            raise r.no_batched_meaning(f"np.{ufunc.__name__}.accumulate over a selection of "
                                       f"rows")
        axis = 0
    (axis,) = normalize_axis_tuple(axis, r.ndim)
    if axis:
        return r._like(ufunc.accumulate(r.values, axis=axis, dtype=kwargs.get("dtype")))
    data, valid = r.padded(0)
    return r._from_padded(ufunc.accumulate(data, axis=1, dtype=kwargs.get("dtype")), valid)


def _median(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    """The median of each example's selection: sorted with the padding as +inf (after every
    selected value but NaN), then its middle one or two values, as ``np.median`` takes them."""
    r = a
    _no_out(r, "np.median", out, NoValue)
    if r.ndim != 1 or r._axes(axis) != (0,) or r.dtype.kind not in "biuf":
        raise r.no_batched_meaning("np.median over a selection of rows or complex values")
    vals = r.values if r.dtype.kind == "f" else r.values.astype(np.float64)
    data, valid = r._like(vals).padded(np.inf)
    data = np.sort(data, axis=1)
    c = r.counts
    last = max(data.shape[1] - 1, 0)
    lo = np.take_along_axis(data, np.minimum(np.maximum(c - 1, 0) // 2, last)[:, None],
                            axis=1)[:, 0] if data.shape[1] else np.zeros(c.shape, vals.dtype)
    hi = np.take_along_axis(data, np.minimum(c // 2, last)[:, None], axis=1)[:, 0] \
        if data.shape[1] else lo
    res = np.where(c % 2 == 1, lo, np.mean(np.stack([lo, hi], axis=-1), axis=-1))
    has_nan = np.any(np.isnan(data), axis=1)  # NaN sorts after the padding's +inf
    res = np.where(has_nan, res.dtype.type(np.nan), res)
    if r._empty_examples():
        # what the loop gives for an empty example: NaN, and NumPy's warning
        res = np.where(c == 0, np.mean(np.zeros((0,), dtype=res.dtype)), res)
    if keepdims:
        res = res[:, None]
    return r.wrap(res)


def _size(a, axis=None):
    if axis is None:
        return a.size
    raise a.no_batched_meaning("np.size(..., axis)")


def _ndim(a):
    return a.ndim


def _method(name: str) -> Callable:
    def call(a, *args, **kwargs):
        return getattr(a, name)(*args, **kwargs)
    call.__name__ = name
    return call


def _average(a, axis=None, weights=None, returned=False, *, keepdims=False):
    if weights is not None or returned:
        raise a.no_batched_meaning("np.average(weights=... or returned=True)")
    return a.mean(axis, keepdims=keepdims)


def _count_nonzero(a, axis=None, *, keepdims=False):
    return np.sum(np.not_equal(a, 0), axis=axis, keepdims=keepdims)


def _elementwise_function(fn: Callable) -> Callable:
    def call(*args, **kwargs):
        return _first_ragged(args)._elementwise(fn, args, kwargs)
    call.__name__ = fn.__name__
    return call


def _nan_reduction(name: str, fill: Any) -> Callable:
    """``np.nansum`` and the like on a selection: NaN taken as ``fill`` (nansum, nanprod), or
    left out of the selection (nanmean, nanvar, nanstd)."""
    plain = getattr(np, name[3:])

    def call(a, axis=None, *args, **kwargs):
        if fill is not None:
            return plain(np.where(np.isnan(a), fill, a), axis, *args, **kwargs)
        if a.ndim > 1 or (axis is not None and a._axes(axis) != (0,)) or args \
                or kwargs.get("out") is not None or "where" in kwargs:
            raise a.no_batched_meaning(f"np.{name} over a selection of rows or with out/where")
        kwargs.pop("out", None)
        keep = ~np.isnan(a.values)
        numbers = Ragged(a._levels, a.values[keep], np.where(
            a.counts == 0, 0, a.segment_reduce(np.add, keep, np.intp))
            if keep.shape[0] else a.counts, a._sizes)
        return getattr(numbers, name[3:])(**kwargs)
    call.__name__ = name
    return call


def _diff(a, n=1, axis=-1, prepend=NoValue, append=NoValue):
    """``np.diff`` of each example's 1-d selection, with at most one element appended per
    example (``np.diff(starts, append=size)``, as rank computations write it), or none (a
    selection of one element fewer per example)."""
    if type(a) is not Ragged or a.ndim != 1 or n != 1 or axis not in (0, -1) \
            or prepend is not NoValue:
        raise _first_ragged((a, prepend, append)).no_batched_meaning("np.diff")
    values = a.values
    if append is NoValue:  # one element fewer per example: the pairs within an example
        keep = np.ones(max(values.shape[0] - 1, 0), dtype=bool, like=values)
        ends = a.starts + a.counts - 1
        keep[ends[(a.counts > 0) & (ends < keep.shape[0])]] = False
        diff = np.not_equal(values[1:], values[:-1]) if values.dtype == np.bool_ else \
            values[1:] - values[:-1]
        return Ragged(a._levels, diff[keep], np.maximum(a.counts - 1, 0), a._sizes)
    ends = (a.starts + a.counts - 1)[a.counts > 0]  # each (non-empty) example's last element
    if type(append) is BatchedTensor:  # one value per example, repeated per element
        per = a._operand(append, "np.diff(append=...)")
        if np.ndim(per) != 1:
            raise a.no_batched_meaning("np.diff with more than one element appended")
        last = per[ends]
    elif np.size(append) == 1:
        last = np.reshape(append, ())  # (np.diff takes it as an array: int64 for an int)
    else:
        raise a.no_batched_meaning("np.diff with more than one element appended")
    nxt = np.empty_like(values, shape=values.shape, dtype=np.result_type(values, last))
    nxt[:-1] = values[1:]
    nxt[ends] = last
    # NumPy's diff compares booleans (not_equal) and subtracts anything else
    return a._like(np.not_equal(nxt, values) if nxt.dtype == np.bool_ else nxt - values)


def _repeat(a, repeats, axis=None):
    """``np.repeat`` of a selection by a selection of counts with the same counts (each
    element repeated its own number of times): where every example ends up with as many
    elements, the batch of them (the rank computations' ``repeat(ranks, counts)``)."""
    if type(a) is not Ragged or a.ndim != 1 or axis not in (None, 0, -1) or \
            type(repeats) is not Ragged:
        raise _first_ragged((a, repeats)).no_batched_meaning("np.repeat")
    times = a._operand(repeats, "np.repeat")
    values = np.repeat(a.values, times)
    total = np.zeros(a.counts.shape[0], dtype=np.intp)
    np.add.at(total, np.repeat(np.arange(a.counts.shape[0]), a.counts), times)
    if total.shape[0] and np.all(total == total[0]):
        return a.wrap(np.reshape(values, (total.shape[0], int(total[0]))))
    return Ragged(a._levels, values, total, a._sizes)


def _bincount(x, weights=None, minlength=0):
    """``np.bincount`` of each example's selection: example i's values shifted past the bins
    of the examples before it, one ``bincount``. Every example must have as many bins
    (``max(minlength, largest + 1)``), else the data decides the shape. ``weights`` must be a
    selection with the same counts (the loop needs one weight per element)."""
    r = _first_ragged((x, weights))
    if type(x) is not Ragged or x.ndim != 1 or x.dtype.kind not in "biu" or \
            not np.can_cast(x.dtype, np.intp) or (weights is not None and (
                type(weights) is not Ragged or weights.ndim != 1)):
        raise r.no_batched_meaning("np.bincount of these arguments")
    w = None if weights is None else x._operand(weights, "np.bincount(weights=...)")
    # NumPy's checks of minlength and of the weights' dtype, on one empty example
    dry_run(np.bincount, (0,), x.dtype, weights=None if w is None else w[:0],
            minlength=minlength)
    vals = x.values.astype(np.intp)
    n = x.counts.shape[0]
    if vals.shape[0] and bool(np.any(vals < 0)):
        raise ValueError("'list' argument must have no negative elements")
    if vals.shape[0]:
        top = np.where(x.counts > 0, x.segment_reduce(np.maximum, vals, np.intp), -1)
    else:
        top = np.full(n, -1, dtype=np.intp, like=vals)
    lengths = np.maximum(top + 1, operator.index(minlength))
    if n and not bool(np.all(lengths == lengths[0])):
        raise x.no_batched_meaning("np.bincount, whose number of bins (the largest value "
                                   "plus one) differs between the examples,")
    length = int(lengths[0]) if n else operator.index(minlength)
    shift = np.repeat(np.arange(n, dtype=np.intp, like=vals) * length, x.counts)
    out = np.bincount(vals + shift, weights=w, minlength=n * length)
    return x.wrap(np.reshape(out, (n, length)))


def _place(arr, mask, vals):
    """``np.place(arr, mask, vals)`` with a selection ``vals`` (SciPy's distributions:
    ``place(output, cond, f(*np.extract(cond, x)))``): where each example's ``vals`` has as
    many elements as its mask selects, NumPy puts them in order, which is ``arr[mask] =
    vals`` (``write_selection`` checks the counts; NumPy's cycling of fewer values has no
    batched meaning)."""
    if not is_ragged(vals):
        raise _first_ragged((arr, mask)).no_batched_meaning("np.place")
    m = mask if getattr(mask, "dtype", None) == bool else np.not_equal(mask, 0)
    arr[m] = vals


def _per_example(r: Ragged, v: Any, what: str) -> Any:
    """``v`` (batched at the selection's levels, or at none of them) as one row per example of
    the selection: ``(examples, *v's shape)`` (a view where it can be)."""
    if type(v) is BatchedTensor:
        phys, have = batch_axes_in_front(v)
        if not set(have) <= set(r._levels) or not _plain(phys):
            raise r.no_batched_meaning(f"{what} with a value batched at another level")
        phys = _aligned(phys, have, r._levels, r._sizes)
    elif _plain(v):
        phys = _aligned(v, (), r._levels, r._sizes)
    else:
        raise r.no_batched_meaning(what)
    return np.reshape(phys, (math.prod(r._sizes),) + tuple(phys.shape[len(r._levels):]))


def _take(a, indices, axis=None, out=None, mode="raise"):
    """``np.take(a, i)`` by a selection of integer indices ``i`` (``pi.take(nzx)``, after
    ``scipy.sparse.find``): each example's ``a`` (flattened for ``axis=None``) gathered at its
    own indices, a selection with ``i``'s counts, of ``a``'s rows for ``axis=0``."""
    r = indices
    if type(r) is not Ragged or type(a) is Ragged or out is not None or r.ndim != 1 or \
            r.dtype.kind not in "iu" or mode not in ("raise", "wrap", "clip"):
        raise _first_ragged((a, indices)).no_batched_meaning("np.take of these arguments")
    rows = _per_example(r, a, "np.take")
    if axis is None:
        rows = np.reshape(rows, (rows.shape[0], math.prod(rows.shape[1:])))
    elif rows.ndim < 2 or normalize_axis_tuple(axis, rows.ndim - 1) != (0,):
        raise r.no_batched_meaning("np.take along an axis other than the first")
    size = rows.shape[1]
    idx = r.values.astype(np.intp)
    if mode == "wrap":
        idx = np.mod(idx, size) if size else idx
    elif mode == "clip":
        idx = np.clip(idx, 0, size - 1)
    if idx.shape[0] and (size == 0 or bool(np.any((idx < -size) | (idx >= size)))):
        bad = idx[(idx < -size) | (idx >= size)][0]
        raise IndexError(f"index {bad} is out of bounds for axis 0 with size {size}")
    example = np.repeat(np.arange(rows.shape[0], like=idx), r.counts)
    return r._like(rows[example, np.where(idx < 0, idx + size, idx)])


def _dot(a, b, out=None):
    """``np.dot`` (``inner``, ``vdot``, ``@``) of two 1-d selections with the same counts:
    each example's sum of products, of integers or booleans only (any order of their sums
    gives the loop's value; a float dot is BLAS's, whose order is its own)."""
    r = _first_ragged((a, b))
    if type(a) is not Ragged or type(b) is not Ragged or a.ndim != 1 or b.ndim != 1 or \
            out is not None:
        raise r.no_batched_meaning("np.dot of these arguments")
    dtype = np.result_type(a.dtype, b.dtype)
    if dtype.kind not in "biu":
        raise r.no_batched_meaning("np.dot of float selections")
    if dtype.kind == "b":
        return np.any(np.logical_and(a, b))
    prod = np.multiply(a.values, a._operand(b, "np.dot"), dtype=dtype)
    return a._like(prod).sum(dtype=dtype)


def vectorize_call(vec: Any, call: Callable, args: tuple, kwargs: dict) -> Any:
    """``np.vectorize(pyfunc, otypes=...)(..., x[m], ...)`` (``call``: the class's own call):
    ``pyfunc`` on each selected element, once, as in the loop (SciPy's ``apply_where`` hands
    its selections to one). Without ``otypes`` (each example's first element decides the
    output type) or with a ``signature``, or a selection it excludes, no batched meaning."""
    r = _first_ragged((*args, *kwargs.values()))
    excluded = vec.excluded
    if not vec.otypes or vec.signature is not None or any(
            type(v) in (Ragged, BatchedTensor) for k, v in (*enumerate(args), *kwargs.items())
            if k in excluded):
        raise r.no_batched_meaning("np.vectorize without otypes, with a signature, or "
                                   "excluding a selection")

    def operand(k: Any, v: Any) -> Any:
        return r._operand(v, "np.vectorize") if k not in excluded and _holds_data(v) else v
    res = call(vec, *[operand(k, v) for k, v in enumerate(args)],
               **{k: operand(k, v) for k, v in kwargs.items()})
    return tuple(r._like(x) for x in res) if type(res) is tuple else r._like(res)


def _result_type(*arrays_and_dtypes):
    """``np.result_type``: each example's selection is an array (never 0-d), so its dtype
    answers (NEP 50: an array's dtype is never weak), as for a batched value."""
    return np.result_type(*[a.dtype if type(a) in (Ragged, BatchedTensor) else a
                             for a in arrays_and_dtypes])


_FUNCTIONS: dict[Callable, Callable] = {
    np.result_type: _result_type,
    np.dot: _dot, np.inner: _dot, np.vdot: _dot, np.take: _take,
    np.diff: _diff, np.repeat: _repeat, np.place: _place, np.bincount: _bincount,
    np.shape: lambda a: a.shape,
    np.sum: _method("sum"), np.prod: _method("prod"), np.any: _method("any"),
    np.all: _method("all"), np.mean: _method("mean"), np.var: _method("var"),
    np.std: _method("std"), np.min: _method("min"), np.max: _method("max"),
    np.amin: _method("min"), np.amax: _method("max"), np.ptp: _method("ptp"),
    np.argmin: _method("argmin"), np.argmax: _method("argmax"),
    np.cumsum: _method("cumsum"), np.cumprod: _method("cumprod"),
    np.median: _median, np.average: _average, np.count_nonzero: _count_nonzero,
    np.size: _size, np.ndim: _ndim, np.copy: lambda a, *args, **kwargs: a.copy(),
    np.nansum: _nan_reduction("nansum", 0), np.nanprod: _nan_reduction("nanprod", 1),
    np.nanmean: _nan_reduction("nanmean", None), np.nanvar: _nan_reduction("nanvar", None),
    np.nanstd: _nan_reduction("nanstd", None),
    np.where: _elementwise_function(np.where), np.clip: _elementwise_function(np.clip),
    np.round: _elementwise_function(np.round), np.around: _elementwise_function(np.around),
    np.nan_to_num: _elementwise_function(np.nan_to_num),
    np.isclose: _elementwise_function(np.isclose), np.real: _elementwise_function(np.real),
    np.imag: _elementwise_function(np.imag),
}


def _operator(ufunc, reflected: bool = False) -> Callable:
    if reflected:
        def op(self, other):
            return ufunc(other, self)
    else:
        def op(self, other):
            return ufunc(self, other)
    return op


def _inplace(ufunc) -> Callable:
    def op(self, other):
        return ufunc(self, other, out=(self,))
    return op


for _name, _ufunc in [("add", np.add), ("sub", np.subtract), ("mul", np.multiply),
                      ("truediv", np.true_divide), ("floordiv", np.floor_divide),
                      ("mod", np.remainder), ("pow", np.power), ("and", np.bitwise_and),
                      ("or", np.bitwise_or), ("xor", np.bitwise_xor),
                      ("lshift", np.left_shift), ("rshift", np.right_shift)]:
    setattr(Ragged, f"__{_name}__", _operator(_ufunc))
    setattr(Ragged, f"__r{_name}__", _operator(_ufunc, reflected=True))
    setattr(Ragged, f"__i{_name}__", _inplace(_ufunc))
for _name, _ufunc in [("lt", np.less), ("le", np.less_equal), ("gt", np.greater),
                      ("ge", np.greater_equal), ("eq", np.equal), ("ne", np.not_equal)]:
    setattr(Ragged, f"__{_name}__", _operator(_ufunc))


def _power(self, other):
    # ndarray's ``**`` with a Python exponent computes x ** 2, x ** -1, x ** 0.5 as np.square,
    # reciprocal, sqrt (int8 for bool ** 2, other last bits for complex): each example's
    # selection is an array, so the values' own operator does what the loop's does
    if type(other) is int or type(other) is float:
        return self._like(self.values ** other)
    return np.power(self, other)


def _inplace_power(self, other):
    if type(other) is int or type(other) is float:
        values = self.values
        values **= other
        return self
    return np.power(self, other, out=(self,))


setattr(Ragged, "__pow__", _power)
setattr(Ragged, "__ipow__", _inplace_power)
setattr(Ragged, "__divmod__", _operator(np.divmod))
setattr(Ragged, "__rdivmod__", _operator(np.divmod, reflected=True))
setattr(Ragged, "__neg__", lambda self: np.negative(self))
setattr(Ragged, "__pos__", lambda self: np.positive(self))
setattr(Ragged, "__abs__", lambda self: np.absolute(self))
setattr(Ragged, "__invert__", lambda self: np.invert(self))
setattr(Ragged, "__hash__", None)
setattr(Ragged, "__matmul__", _operator(np.matmul))
setattr(Ragged, "__rmatmul__", _operator(np.matmul, reflected=True))
for _name, _ufunc in [("add", np.add), ("sub", np.subtract), ("mul", np.multiply),
                      ("truediv", np.true_divide), ("floordiv", np.floor_divide),
                      ("mod", np.remainder), ("pow", np.power)]:
    setattr(Count, f"__{_name}__", lambda self, other, u=_ufunc: self._weak(other, u, False))
    setattr(Count, f"__r{_name}__", lambda self, other, u=_ufunc: self._weak(other, u, True))
for _name in ("and", "or", "xor", "lshift", "rshift", "matmul", "divmod"):
    setattr(Count, f"__{_name}__", Count._refuse)
    setattr(Count, f"__r{_name}__", Count._refuse)
for _name in ("lt", "le", "gt", "ge", "eq", "ne", "neg", "pos", "abs", "invert", "round",
              "trunc", "floor", "ceil", "complex"):
    setattr(Count, f"__{_name}__", Count._refuse)
