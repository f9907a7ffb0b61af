"""Masked arrays with a batch: ``numpy.ma`` on batched values, vectorised.

Per example, ``np.ma.masked_invalid(x)`` (``np.ma.asarray``, ``np.ma.array(x, mask=m)``...) makes
a ``MaskedArray``: data and a boolean mask. A batch of them is one ``MaskedArray`` whose first
axis is the batch axis (``BatchedMaskedArray._ma``): data and mask batched together. The code
``f`` runs sees a ``BatchedMaskedArray``, which looks like one example: ``isinstance(x,
np.ma.MaskedArray)`` and ``isinstance(x, np.ndarray)`` hold, ``.mask``, ``.data``, ``.filled()``,
``.count()``, ``.compressed()`` and the reductions answer per example.

Why a type of its own rather than a BatchedTensor holding a ``MaskedArray``: NumPy's functions on
a ``MaskedArray`` mostly ignore the mask or keep it by accident, and a batch rule may compute one
NumPy function through another (``np.median`` through a sort), which on a masked physical value
could give another answer than the loop. So only what this module knows to give the loop's
answer runs vectorised, each on the batched ``MaskedArray`` by ``numpy.ma``'s own code:

- ufuncs and ``numpy.ma``'s elementwise functions (``np.log``, ``np.ma.log``, ``x + y``: the
  operators call ``numpy.ma``'s functions, as ``MaskedArray``'s do); the mask of each element
  comes from the same elements in the batch as in one example;
- the constructors, masks by value (``masked_invalid``, ``masked_where``, ``masked_greater``...),
  ``getmask``/``getmaskarray``/``getdata``/``is_masked``/``filled``/``count``;
- reductions over the example's axes (``sum``, ``mean``, ``var``, ``std``, ``min``, ``max``,
  ``argmin``... as methods, ``np.ma`` functions and NumPy functions), ``np.ma.median`` and
  ``np.ma.average``; an axis of the example is an axis of the batch one further on;
- basic indexing and writes (``x[i]``, ``x[1:] = np.ma.masked``), shape methods;
- ``np.ma.dot``, ``np.ma.cov``, ``np.ma.corrcoef``, ``np.ma.concatenate`` and the stacking
  functions, as numpy.ma computes them, from the batched calls above;
- ``compressed()``: the kept elements of every example, a ragged selection (``rules/ragged.py``);
- ``np.ma.apply_along_axis``: ``func1d`` once per slice position, on the batch of the examples'
  slices; ``np.ma.mask_rowcols`` / ``mask_rows`` / ``mask_cols``; rows selected by a batched
  boolean mask that keeps as many in every example.

Everything else runs once per example (the per-op loop, warned), on the examples' own
``MaskedArray``s, so it gives the loop's answer at the loop's cost.

In a nested vmap, ``_ma`` has a batch axis for each level it is batched at, outermost first
(``_levels``): the rules above index past all of them, and a value of fewer levels takes a
length-1 axis for each level it lacks (``_physical``), so it broadcasts as each example sees
it. The per-op loop runs over the innermost level's examples, each still a masked batch of the
outer levels'.

``numpy.ma`` decides some things for the whole array it is given, which for the batch is every
example at once:

- whether a mask is ``nomask`` or holds any masked element (``mean`` without a mask is
  ``ndarray.mean``): an example without a masked element may take the masked path where the
  loop took the other; the paths give the same values (rounding aside);
- whether a result is one value: per example a reduction to one value is a NumPy scalar (or
  ``np.ma.masked``), and what follows is NumPy's scalar arithmetic, which masks no NaN, where
  ``numpy.ma``'s division of the batch's arrays would. That is redone as the examples do it
  (``_scalar_moment``; ``elementwise(..., scalars=)`` for operators and ufuncs of such values).

What stays different (docs/semantics.md, "Masked arrays made inside ``f``"): where the loop's
example holds ``nomask``, the batch may hold a mask of False (``x.mask is np.ma.nomask``
differs), and a reduction's fully masked example is ``np.ma.masked`` in the loop, a masked
element here.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import math
import operator
import sys
from typing import Any, Callable

import numpy as np
from numpy.lib.array_utils import normalize_axis_index, normalize_axis_tuple

from . import conversions
from .boxed import loop as _loop_module
from .buffers import LocalBuffer, batched_at_its_level
from .boxed.loop import loop_call
from .config import config
from .dispatch import truth_value
from .errors import BatchingError, DataDependentError, SharedWriteError, SubclassViewError
from .levels import Level, current_level, note_write
from .plumbing import innermost
from .registry import Path, record, slots
from .rules._helpers import move_bdim_to_front
from .rules.ragged import Ragged
from .tensor import (VIEW_AS_MASKED, AttributeOp, BatchedTensor, MethodOp, batch_axes_in_front,
                     new_batched, scalar_per_example)

__all__ = ["BatchedMaskedArray", "is_masked_batch"]

_MA = np.ma.MaskedArray
_NOMASK = np.ma.nomask
_MA_NAMESPACE = np.ma
_NUMERIC = "biufc"
_TYPE = type


def is_masked_batch(x: Any) -> bool:
    return type(x) is BatchedMaskedArray


# ---- operands ---------------------------------------------------------------------------------
# A masked batch of a nested vmap holds the examples of every level it is batched at: ``_ma``
# has one leading axis per level, outermost first (``Levels``: a tuple of levels by id). A
# value batched at fewer of those levels takes a length-1 axis for each level it lacks, so
# that it broadcasts as the examples do; one that is every example's (plain) has none.
Levels = tuple


def _not_numpy(what: str, level: Level | None) -> SubclassViewError:
    return SubclassViewError(
        f"{what}: a masked array meets a batched value whose array is not NumPy's (CuPy's, "
        f"the ONNX recorder's): masked arrays are NumPy's only", level)


def _is_batched(v: Any) -> bool:
    t = type(v)
    return t is BatchedTensor or t is BatchedMaskedArray or t is Ragged


def _first_batched(args: tuple, kwargs: dict) -> Any:
    for v in (*args, *kwargs.values()):
        if _is_batched(v):
            return v
        if type(v) is list or type(v) is tuple:
            for w in v:
                if _is_batched(w):
                    return w
    return None


def _levels_of(v: Any) -> Levels:
    """The vmap levels ``v`` is batched at, outermost first (``()`` for a plain value)."""
    t = type(v)
    if t is BatchedMaskedArray:
        return v._levels
    if t is BatchedTensor:
        levels = []
        while type(v) is BatchedTensor:  # (the levels alone: no view made)
            levels.append(v._level)
            v = v._value
        return tuple(reversed(levels))
    return ()


def _level_of(values) -> Levels:
    """Every vmap level the batched operands (in lists and tuples too) are batched at,
    outermost first."""
    found: dict = {}
    _collect_levels(values, found)
    if not found:
        raise TypeError("no batched operand")
    if len(found) == 1:
        return tuple(found.values())
    return tuple(sorted(found.values(), key=_by_id))


def _by_id(level: Level) -> int:
    return level.id


def _collect_levels(values, found: dict) -> None:
    for v in values:
        t = type(v)
        if t is list or t is tuple:
            _collect_levels(v, found)
        elif t is Ragged:
            raise v.no_batched_meaning("a numpy.ma function")
        elif t is BatchedMaskedArray or t is BatchedTensor:
            for level in _levels_of(v):
                found[level.id] = level


def _example_ndim(v: Any) -> int:
    t = type(v)
    if t is BatchedMaskedArray:
        return v._ma.ndim - len(v._levels)
    if t is BatchedTensor:
        return v.ndim
    return np.ndim(v)


def _unwrapped(v: BatchedTensor, what: str) -> Any:
    """The physical array of a BatchedTensor with the batch axis of each of its levels in
    front, outermost first (each a view)."""
    if type(v._value) is not BatchedTensor:
        p = v._value
        if not isinstance(p, np.ndarray):
            raise _not_numpy(what, v._level)
        return move_bdim_to_front(p, v._bdim)
    p = batch_axes_in_front(v)[0]
    if not isinstance(p, np.ndarray):
        raise _not_numpy(what, v._level)
    return p


def _physical(v: Any, levels: Levels, what: str) -> Any:
    """The physical value of an operand, with a batch axis for each of ``levels`` in front
    (length 1 where it is not batched at that level); a plain value as it is."""
    t = type(v)
    if t is BatchedMaskedArray:
        p, own = v._ma, v._levels
    elif t is BatchedTensor:
        p, own = _unwrapped(v, what), _levels_of(v)
    elif t is Ragged:
        raise v.no_batched_meaning(what)
    else:
        return v
    if own == levels:
        return p
    missing = [lv for lv in own if lv not in levels]
    if missing:
        raise SubclassViewError(
            f"{what}: a value batched at a vmap level that this masked value is not batched "
            f"at", missing[0])
    present = iter(p.shape[:len(own)])
    return p.reshape(tuple(next(present) if lv in own else 1 for lv in levels)
                     + p.shape[len(own):])


def _batch_shape(values, levels: Levels) -> tuple:
    """The sizes of ``levels``, from the batched ones of ``values``."""
    shape = [1] * len(levels)
    for v in values:
        if _is_batched(v):
            for i, d in enumerate(_physical(v, levels, "numpy.ma").shape[:len(levels)]):
                if d != 1:
                    shape[i] = d
    return tuple(shape)


def _aligned(values, levels: Levels, what: str) -> list:
    """Physical operands that broadcast as the examples do: a batched operand of fewer axes than
    the widest gets length-1 axes after its batch axes (a plain one broadcasts from the right,
    as it is)."""
    nds = [_example_ndim(v) for v in values]
    widest = max(nds, default=0)
    nb = len(levels)
    out = []
    for v, nd in zip(values, nds):
        p = _physical(v, levels, what)
        if p is not v and nd < widest:
            p = p.reshape(p.shape[:nb] + (1,) * (widest - nd) + p.shape[nb:])
        out.append(p)
    return out


def _scalar_operand(v: Any) -> bool:
    t = type(v)
    if t is BatchedMaskedArray:
        return v._scalar
    if t is BatchedTensor:
        return scalar_per_example(v)
    return True


def _batched(phys: Any, levels: Levels) -> BatchedTensor:
    """A physical array with the batch axes of ``levels`` in front, as a BatchedTensor."""
    for level in levels:
        phys = new_batched(phys, 0, level)
    return phys


def _wrap(res: Any, levels: Levels, scalar: bool = False) -> Any:
    """A physical result (batch axes first) as the examples' values. ``scalar``: each
    example's result is a NumPy scalar or ``np.ma.masked`` where it is 0-d (a reduction,
    ``x[i]``)."""
    nb = len(levels)
    if isinstance(res, _MA):
        if res.ndim == nb and scalar:
            m = res._mask  # type: ignore[attr-defined]  # (numpy.ma's)
            if m is _NOMASK or not m.any():
                return _batched(np.asarray(res.data), levels)
            if res.dtype.kind in _NUMERIC:
                # np.ma.masked is a float64: the loop's np.ma.stack promotes to it
                res = res.astype(_with_masked_dtype(res))
            return BatchedMaskedArray(levels, res, scalar=True)
        return BatchedMaskedArray(levels, res)
    if isinstance(res, np.ndarray):
        out = _batched(res.view(np.ndarray) if type(res) is not np.ndarray else res, levels)
        if res.ndim == nb and not scalar:
            out._array0d = True
        return out
    if type(res) is tuple:
        return tuple(_wrap(r, levels, scalar) for r in res)
    return res


def _with_masked_dtype(res: Any) -> np.dtype:
    """The dtype the loop's ``np.ma.stack`` gives 0-d results of which some are
    ``np.ma.masked`` (a float64): float64 where every example is, else promoted with it."""
    mask = np.ma.getmaskarray(res)
    if mask.size and bool(mask.all()):
        return np.dtype(np.float64)
    return np.result_type(res.dtype, np.float64)


def _per_example(op: Any, args: tuple, kwargs: dict, levels: Levels | None = None) -> Any:
    """The per-op loop: ``op`` once per example of the innermost level, on the examples' own
    masked arrays (still batched at the outer levels, in a nested vmap)."""
    if levels is None:
        levels = _level_of((*args, *kwargs.values()))
    record(op, Path.LOOP, "numpy.ma: no vectorised path for these arguments")
    return loop_call(op, args, kwargs, levels[-1])


def _note_write(levels: Levels, phys: Any) -> None:
    for level in levels:
        note_write(level, phys)


def _asmasked(v: Any) -> BatchedMaskedArray:
    """``np.ma.asanyarray`` of an operand: a masked batch as it is, a plain one without mask."""
    if type(v) is BatchedMaskedArray:
        return v
    levels = _levels_of(v)
    return BatchedMaskedArray(levels, _MA(_physical(v, levels, "numpy.ma")))


def _axes(axis: Any, nd: int, nb: int = 1) -> tuple:
    """The physical axes (after ``nb`` batch axes) of an example's ``axis`` (None: all)."""
    if axis is None:
        return tuple(range(nb, nd + nb))
    return tuple(a + nb for a in normalize_axis_tuple(axis, nd))


def _flat(m: Any, nb: int = 1) -> Any:
    """Each example flattened: ``(*batch, size)``."""
    return m.reshape(m.shape[:nb] + (math.prod(m.shape[nb:]),))  # (-1 fails with no example)


def _scalar_moment(m: Any, name: str, axes: tuple, dtype: Any = None, ddof: int = 0) -> Any:
    """``mean``/``var``/``std`` of each example to one value, where examples have masks: per
    example NumPy computes the last division on scalars (``np.float64 / count``), where the
    batch divides arrays with ``numpy.ma``'s division, which masks a non-finite quotient. So
    the division is redone as the examples do it: ``mean`` keeps a NaN or inf unmasked (only
    an example with nothing kept is ``np.ma.masked``); ``var`` divides with ``np.ma.divide``
    on the scalars, which masks a non-finite quotient (and a count of zero or less)."""
    cnt = m.count(axis=axes)
    with np.errstate(divide="ignore", invalid="ignore"):
        if name == "mean":
            if dtype is None and m.dtype.kind in "biu":  # as MaskedArray.mean
                dtype = np.dtype("f8")
            total = m.sum(axis=axes, dtype=dtype)
            data = np.ma.getdata(total) * 1.0 / cnt
            return _MA(data, mask=cnt == 0)
        cnt = cnt - ddof
        danom = m - m.mean(axis=axes, dtype=dtype, keepdims=True)
        danom = np.ma.absolute(danom) ** 2 if np.iscomplexobj(m) else danom * danom
        total = danom.sum(axis=axes)
        num = np.ma.getdata(total)
        data = num / cnt
        mask = np.ma.getmaskarray(total) | ~np.isfinite(data) | (
            np.absolute(num) * np.finfo(float).tiny >= np.absolute(cnt))
        res = _MA(data, mask=mask)
    return np.ma.sqrt(res) if name == "std" else res


# ---- the batched masked array -----------------------------------------------------------------
class BatchedMaskedArray:
    """A batch of masked arrays (see the module docstring): ``_ma`` holds them batch first.

    >>> import numpy as np, batchtensor as bt
    >>> xs = np.array([[1.0, np.nan, 3.0], [4.0, 5.0, np.inf]])
    >>> bt.vmap(lambda x: np.ma.masked_invalid(x).mean())(xs)
    array([2. , 4.5])
    """

    __slots__ = ("_level", "_levels", "_ma", "_scalar", "_shared")

    def __init__(self, levels: Levels, ma: Any, scalar: bool = False):
        self._levels = levels  # outermost first: ``_ma`` has a batch axis for each in front
        self._level = levels[-1]
        self._ma = ma
        self._scalar = scalar  # each example a NumPy scalar or np.ma.masked (a reduction's)
        self._shared = False  # the data is one plain array every example shares

    # ---- what one example looks like -----------------------------------------------------
    @property  # type: ignore[misc]  # (read-only: object's __class__ can be assigned)
    def __class__(self):
        """``np.ma.MaskedArray``, as for each example (``isinstance`` checks pass). Where each
        example is a reduction's NumPy scalar or ``np.ma.masked``: the scalar's type where no
        example is masked, ``np.ma.masked``'s where every one is, and where they differ no
        one answer is every example's: a DataDependentError (``isinstance`` raises it, and
        vmap reruns per example) where the code asking is not batchtensor's own (which tells
        its values apart by type, and gets this class)."""
        if not self._scalar:
            return type(self._ma)
        if str(sys._getframe(1).f_globals.get("__name__", "")).startswith("batchtensor"):
            return BatchedMaskedArray
        masked = np.ma.getmaskarray(self._ma)
        if not masked.any():
            return self._ma.dtype.type
        if masked.all():
            return type(np.ma.masked)
        raise DataDependentError(
            "isinstance of a masked reduction's result: it is np.ma.masked (a MaskedArray) "
            "in the examples with no kept element and a NumPy scalar in the others",
            self._level)

    @property
    def shape(self) -> tuple:
        return tuple(self._ma.shape[len(self._levels):])

    @property
    def ndim(self) -> int:
        return self._ma.ndim - len(self._levels)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def dtype(self) -> np.dtype:
        return self._ma.dtype

    @property
    def itemsize(self) -> int:
        return self._ma.dtype.itemsize

    @property
    def nbytes(self) -> int:
        return self.size * self._ma.dtype.itemsize

    @property
    def batch_size(self) -> int:
        return self._ma.shape[len(self._levels) - 1]  # the innermost level's

    @property
    def device(self) -> str:
        return "cpu"  # NumPy's (masked arrays are NumPy's only)

    @property
    def level(self) -> Level:
        return self._level

    def __repr__(self) -> str:
        return (f"BatchedMaskedArray(shape={self.shape}, dtype={self.dtype}, "
                f"level={self._level.id}, batch_size={self.batch_size})")

    def _arrays_only(self, what: str) -> None:
        """Each example is a NumPy scalar or np.ma.masked: one has ``what``, the other not."""
        if self._scalar:
            raise DataDependentError(
                f"{what} of a reduction's result: per example it is a NumPy scalar where the "
                f"example has kept elements and np.ma.masked where it has none, and only "
                f"np.ma.masked has {what}", self._level)

    # ---- mask and data ---------------------------------------------------------------------
    @property
    def mask(self) -> Any:
        self._arrays_only("the mask")
        m = self._ma._mask
        return _NOMASK if m is _NOMASK else _wrap(m, self._levels)

    @mask.setter
    def mask(self, value: Any) -> None:
        self._arrays_only("the mask")
        self._refuse_shared_write("x.mask = ...")
        if _is_batched(value):
            if not set(_levels_of(value)) <= set(self._levels):
                _per_example(setattr, (self, "mask", value), {})
                return
            nb = len(self._levels)
            value = _physical(value, self._levels, "x.mask = ...")
            value = np.broadcast_to(value.reshape(value.shape[:nb] + (1,) * (
                self._ma.ndim - value.ndim) + value.shape[nb:]), self._ma.shape)
        _note_write(self._levels, self._ma)
        self._ma.mask = value

    _mask = mask

    @property
    def data(self) -> BatchedTensor:
        self._arrays_only("the data")
        return _wrap(self._ma.data, self._levels)

    _data = data

    @property
    def fill_value(self) -> Any:
        return self._ma.fill_value

    @fill_value.setter
    def fill_value(self, value: Any) -> None:
        if _is_batched(value):
            _per_example(setattr, (self, "fill_value", value), {})
            return
        self._ma.fill_value = value

    @property
    def hardmask(self) -> bool:
        return self._ma.hardmask

    @property
    def sharedmask(self) -> bool:
        return self._ma.sharedmask

    @property
    def baseclass(self) -> type:
        return self._ma.baseclass

    def harden_mask(self) -> BatchedMaskedArray:
        self._ma.harden_mask()
        return self

    def soften_mask(self) -> BatchedMaskedArray:
        self._ma.soften_mask()
        return self

    def _update_from(self, obj: Any) -> None:
        """The attributes (fill value, hard mask...) of ``obj``, as ``numpy.ma`` copies them
        onto a result."""
        if type(obj) is BatchedMaskedArray:
            obj = obj._ma
        elif _is_batched(obj):
            return
        self._ma._update_from(obj)

    def unshare_mask(self) -> BatchedMaskedArray:
        self._ma.unshare_mask()
        return self

    def filled(self, fill_value: Any = None) -> Any:
        """The data, ``fill_value`` where masked. Per example NumPy returns the data itself
        (a view) where nothing is masked, a copy otherwise; where the examples differ, the
        batch's copy is read-only, so that a write into it raises instead of missing the
        data the loop's views would write into."""
        self._arrays_only("filled()")
        if _is_batched(fill_value):
            return _per_example(MethodOp("filled"), (self, fill_value), {}, self._levels)
        record(_MA.filled, Path.RULE)
        m, nb = self._ma, len(self._levels)
        res = m.filled(fill_value)
        mask = m._mask
        # (m._data is a new view each time: the data itself is returned where nothing is
        # masked, which a write reaches in every example alike)
        if mask is not _NOMASK and m.size and not np.may_share_memory(res, m.data):
            some = _flat(mask, nb).any(axis=nb)
            if not some.all() and m.shape[nb:]:
                res.flags.writeable = False
        return _wrap(res, self._levels)

    def count(self, axis: Any = None, keepdims: Any = np._NoValue) -> Any:
        self._arrays_only("count()")
        nd, nb = self.ndim, len(self._levels)
        axes = _axes(axis, nd, nb)
        kd = keepdims is not np._NoValue and bool(keepdims)
        m = self._ma._mask
        if m is _NOMASK:
            m = np.zeros(self._ma.shape, dtype=bool)
        res = np.sum(~m, axis=axes, dtype=np.intp, keepdims=kd)
        record(_MA.count, Path.RULE)
        return _wrap(res, self._levels, scalar=res.ndim == nb)

    def compressed(self) -> Any:
        """The kept elements of each example: as many per example as it keeps."""
        self._arrays_only("compressed()")
        m, nb = self._ma, len(self._levels)
        counts = np.sum(~np.ma.getmaskarray(_flat(m, nb)), axis=nb, dtype=np.intp)
        if counts.size and np.all(counts == counts.flat[0]):
            record(_MA.compressed, Path.RULE)
            return _batched(m.compressed().reshape(counts.shape + (int(counts.flat[0]),)), self._levels)
        if nb > 1:  # (a ragged selection is of one level's examples)
            return _per_example(MethodOp("compressed"), (self,), {}, self._levels)
        record(_MA.compressed, Path.RULE)
        return Ragged(self._level, m.compressed(), counts)

    # ---- reductions ------------------------------------------------------------------------
    def _reduce(self, name: str, axis: Any = None, *args: Any, **kwargs: Any) -> Any:
        out = kwargs.get("out")
        if args or out is not None or self.dtype == np.float16 or any(
                k not in ("dtype", "keepdims", "ddof", "fill_value")
                or _is_batched(v) for k, v in kwargs.items()):
                return _per_example(MethodOp(name), (self, axis) + args, kwargs, self._levels)
        self._arrays_only(f"{name}()")
        kwargs = {k: v for k, v in kwargs.items() if v is not np._NoValue}
        m, nd, nb = self._ma, self.ndim, len(self._levels)
        keepdims = bool(kwargs.pop("keepdims", False))
        if name in ("argmin", "argmax", "cumsum", "cumprod"):
            if axis is None:
                res = getattr(_flat(m, nb), name)(axis=nb, **kwargs)
                if keepdims and name in ("argmin", "argmax"):
                    res = res.reshape(res.shape[:nb] + (1,) * nd)
            else:
                ax = normalize_axis_index(axis, nd) + nb
                if keepdims:
                    kwargs["keepdims"] = True
                res = getattr(m, name)(axis=ax, **kwargs)
        elif name in ("mean", "var", "std") and not keepdims and m._mask is not _NOMASK \
                and len(_axes(axis, nd)) == nd:
            if nd == 0:
                self._refuse_undecided_moment(name)
            res = _scalar_moment(m, name, _axes(axis, nd, nb), **kwargs)
            if name == "var":  # a 0-d masked array per example, or np.ma.masked (a float64)
                record(_MA.var, Path.RULE)
                if res.mask.any() and res.dtype.kind in _NUMERIC:
                    res = res.astype(_with_masked_dtype(res))
                return _wrap(res, self._levels)
        else:
            res = getattr(m, name)(axis=_axes(axis, nd, nb), keepdims=keepdims, **kwargs)
        record(getattr(_MA, name), Path.RULE)
        return _wrap(res, self._levels, scalar=True)

    def _refuse_undecided_moment(self, name: str) -> None:
        """``mean``/``var``/``std`` of 0-d examples of which some are masked: an unmasked
        example of the loop may hold ``nomask`` (a mask given as ``np.False_``, which *is*
        ``np.ma.nomask``) or a mask of False, which the batch cannot tell apart. Per example
        the two divide differently: without a mask ``numpy.ma``'s division masks a non-finite
        or huge quotient, with one NumPy's scalars keep it. Where an unmasked example holds
        such a value, only a run per example answers as the loop."""
        m = self._ma
        kept = np.asarray(m.data)[~np.ma.getmaskarray(m)]
        if kept.dtype.kind in "fc" and not bool(np.all(
                np.isfinite(kept) & (np.absolute(kept) * np.finfo(np.float64).tiny < 1))):
            raise DataDependentError(
                f"numpy.ma: {name}() of 0-d masked arrays, some masked and some holding a "
                f"non-finite value: the loop's unmasked examples may hold no mask "
                f"(np.ma.nomask), which masks that value's {name}, or a mask of False, which "
                f"does not; one batch cannot tell them apart", self._level)

    def sum(self, axis=None, *args, **kwargs):
        return self._reduce("sum", axis, *args, **kwargs)

    def prod(self, axis=None, *args, **kwargs):
        return self._reduce("prod", axis, *args, **kwargs)

    product = prod

    def mean(self, axis=None, *args, **kwargs):
        return self._reduce("mean", axis, *args, **kwargs)

    def var(self, axis=None, *args, **kwargs):
        return self._reduce("var", axis, *args, **kwargs)

    def std(self, axis=None, *args, **kwargs):
        return self._reduce("std", axis, *args, **kwargs)

    def min(self, axis=None, *args, **kwargs):
        return self._reduce("min", axis, *args, **kwargs)

    def max(self, axis=None, *args, **kwargs):
        return self._reduce("max", axis, *args, **kwargs)

    def ptp(self, axis=None, *args, **kwargs):
        return self._reduce("ptp", axis, *args, **kwargs)

    def all(self, axis=None, *args, **kwargs):
        return self._reduce("all", axis, *args, **kwargs)

    def any(self, axis=None, *args, **kwargs):
        return self._reduce("any", axis, *args, **kwargs)

    def argmin(self, axis=None, *args, **kwargs):
        return self._reduce("argmin", axis, *args, **kwargs)

    def argmax(self, axis=None, *args, **kwargs):
        return self._reduce("argmax", axis, *args, **kwargs)

    def cumsum(self, axis=None, *args, **kwargs):
        return self._reduce("cumsum", axis, *args, **kwargs)

    def cumprod(self, axis=None, *args, **kwargs):
        return self._reduce("cumprod", axis, *args, **kwargs)

    def argsort(self, axis: Any = np._NoValue, *args: Any, **kwargs: Any) -> Any:
        nd = self.ndim
        if args or nd == 0 or (axis is np._NoValue and nd > 1) or any(
                _is_batched(v) for v in kwargs.values()):
            return _per_example(MethodOp("argsort"), (self, axis) + args, kwargs, self._levels)
        self._arrays_only("argsort()")
        nb = len(self._levels)
        if axis is None:
            res = _flat(self._ma, nb).argsort(axis=nb, **kwargs)
        else:
            ax = -1 if axis is np._NoValue else normalize_axis_index(axis, nd) + nb
            res = self._ma.argsort(axis=ax, **kwargs)
        record(_MA.argsort, Path.RULE)
        return _wrap(res, self._levels)

    def view(self, dtype: Any = None, type: Any = None) -> Any:  # noqa: A002  (NumPy's name)
        """``x.view(np.ndarray)``: the data; ``x.view()``/``x.view(np.ma.MaskedArray)``: a new
        masked view; a view as another dtype, once per example."""
        if isinstance(dtype, _TYPE) and issubclass(dtype, np.ndarray) and type is None:
            dtype, type = None, dtype
        if dtype is None and (type is None or type is _MA) and not self._scalar:
            return self._same_batch(self._ma.view(), _MA.view)
        if dtype is None and type is np.ndarray and not self._scalar:
            record(_MA.view, Path.RULE)
            return self.data
        return _per_example(MethodOp("view"), (self, dtype) + (() if type is None else (type,)),
                            {}, self._levels)

    def sort(self, axis: Any = -1, *args: Any, **kwargs: Any) -> None:
        nd = self.ndim
        if args or nd == 0 or axis is None or any(_is_batched(v) for v in kwargs.values()):
            _per_example(MethodOp("sort"), (self, axis) + args, kwargs, self._levels)
            return
        self._arrays_only("sort()")
        _note_write(self._levels, self._ma)
        self._ma.sort(axis=normalize_axis_index(axis, nd) + len(self._levels), **kwargs)
        record(_MA.sort, Path.RULE)

    def diagonal(self, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Any:
        """Each example's diagonal (a view, as NumPy's: read-only)."""
        nd, nb = self.ndim, len(self._levels)
        if self._scalar or nd < 2 or _is_batched(offset):
            return _per_example(MethodOp("diagonal"), (self, offset, axis1, axis2), {},
                                self._levels)
        a1, a2 = normalize_axis_index(axis1, nd) + nb, normalize_axis_index(axis2, nd) + nb
        return self._same_batch(self._ma.diagonal(offset, a1, a2), _MA.diagonal)

    # ---- shape ------------------------------------------------------------------------------
    def _same_batch(self, m: Any, op: Any = None) -> BatchedMaskedArray:
        if op is not None:
            record(op, Path.RULE)
        return BatchedMaskedArray(self._levels, m, self._scalar and m.ndim == len(self._levels))

    def copy(self, order: str = "C") -> BatchedMaskedArray:
        return self._same_batch(self._ma.copy(order), _MA.copy)

    def __copy__(self) -> BatchedMaskedArray:
        return self.copy()

    def __deepcopy__(self, memo) -> BatchedMaskedArray:
        return self.copy()

    def astype(self, dtype: Any, *args: Any, **kwargs: Any) -> BatchedMaskedArray:
        return self._same_batch(self._ma.astype(dtype, *args, **kwargs), _MA.astype)

    def reshape(self, *shape: Any, order: str = "C", **kwargs: Any) -> Any:
        if len(shape) == 1 and not isinstance(shape[0], int):
            shape = tuple(shape[0])
        if order != "C" or kwargs:
            return _per_example(MethodOp("reshape"), (self, *shape),
                                dict(kwargs, order=order))
        if -1 in shape:  # one example's reshape says what -1 is (the batch may have none)
            shape = np.empty(self.shape, dtype=bool).reshape(shape).shape
        return self._same_batch(self._ma.reshape(self._ma.shape[:len(self._levels)] +
                                                 tuple(shape)), _MA.reshape)

    def ravel(self, order: str = "C") -> Any:
        if order != "C":
            return _per_example(MethodOp("ravel"), (self,), {"order": order})
        return self._same_batch(_flat(self._ma, len(self._levels)), _MA.ravel)

    def flatten(self, order: str = "C") -> Any:
        return self.ravel(order).copy()

    def transpose(self, *axes: Any) -> BatchedMaskedArray:
        if len(axes) == 1 and (axes[0] is None or not isinstance(axes[0], int)):
            axes = () if axes[0] is None else tuple(axes[0])
        nd = self.ndim
        perm = tuple(range(nd - 1, -1, -1)) if not axes else normalize_axis_tuple(axes, nd)
        nb = len(self._levels)
        return self._same_batch(self._ma.transpose(tuple(range(nb)) + tuple(a + nb for a in perm)),
                                _MA.transpose)

    @property
    def T(self) -> BatchedMaskedArray:
        return self.transpose()

    def swapaxes(self, axis1: int, axis2: int) -> BatchedMaskedArray:
        nd = self.ndim
        nb = len(self._levels)
        a, b = normalize_axis_index(axis1, nd) + nb, normalize_axis_index(axis2, nd) + nb
        return self._same_batch(self._ma.swapaxes(a, b), _MA.swapaxes)

    def squeeze(self, axis: Any = None) -> BatchedMaskedArray:
        nd = self.ndim
        if axis is None:
            axis = tuple(i for i, d in enumerate(self.shape) if d == 1)
        return self._same_batch(self._ma.squeeze(_axes(axis, nd, len(self._levels))
                                                 if axis != () else ()),
                                _MA.squeeze)

    # ---- indexing ---------------------------------------------------------------------------
    def _physical_key(self, key: Any) -> tuple | None:
        """``key`` for the batch (the batch axis kept first), or None where the examples'
        indexing would not carry over (several advanced indices, a batched index other than
        one integer array)."""
        levels = self._levels
        nb = len(levels)
        if type(key) is BatchedTensor and key.dtype.kind in "iu" and self.ndim and \
                set(_levels_of(key)) <= set(levels) and \
                type(innermost(key)) is np.ndarray:
            # x[idx], idx batched: each example's rows idx of its own array (a gather)
            idx = _physical(key, levels, "x[idx]")
            if key.ndim == 0 and self.ndim > 1 and scalar_per_example(key) and idx.size:
                # an integer per example picks a row: the loop's is a view of x, which a
                # gathered copy cannot stand for (a write through either would tell): the
                # integer every example holds, else a rerun
                first = int(idx.ravel()[0])
                if not bool(np.all(idx == first)):
                    raise DataDependentError(
                        "numpy.ma: x[i] with an integer i that differs between examples: the "
                        "loop's x[i] is a view of x, which one batched array cannot be for a "
                        "different row in each example", self._level)
                return (slice(None),) * nb + (first,)
            ones = (1,) * (idx.ndim - nb)
            return tuple(np.arange(n).reshape((1,) * j + (n,) + (1,) * (nb - 1 - j) + ones)
                         for j, n in enumerate(self._ma.shape[:nb])) + (idx,)
        k = key if type(key) is tuple else (key,)
        arrays = ints = 0
        for i in k:
            if i is None or i is Ellipsis or type(i) is slice:
                continue
            if isinstance(i, (int, np.integer)) and not isinstance(i, (bool, np.bool_)):
                ints += 1
            elif type(i) is np.ndarray and i.dtype.kind in "iub" and i.ndim:
                arrays += 1
            else:
                return None
        if arrays > 1 or (arrays and ints):
            return None
        return (slice(None),) * nb + k

    def _rows_selected(self, key: Any) -> Any:
        """``x[m]`` / ``x[m, :]`` with a batched boolean ``m`` over the first axis that keeps
        as many rows in every example: ``x[idx]``, ``idx`` each example's kept rows in
        order (None for any other key, and where the examples keep different counts). A
        masked ``m`` selects by its data, as NumPy's indexing takes it."""
        k = key if type(key) is tuple else (key,)
        m = k[0] if k else None
        if type(m) is BatchedMaskedArray and not m._scalar:
            m = m.data  # (NumPy indexes by a masked array's data: its mask left out)
        levels, nb = self._levels, len(self._levels)
        if type(m) is not BatchedTensor or m.dtype != bool or m.ndim != 1 or not self.ndim \
                or m.shape[0] != self.shape[0] or not set(_levels_of(m)) <= set(levels) or \
                type(innermost(m)) is not np.ndarray or \
                any(i is not Ellipsis and not (type(i) is slice and i == slice(None))
                    for i in k[1:]):
            return None
        batch = self._ma.shape[:nb]
        p = np.broadcast_to(_physical(m, levels, "x[mask]"), batch + m.shape)
        counts = np.count_nonzero(p, axis=nb)
        if not counts.size or not np.all(counts == counts.flat[0]):
            return None
        idx = np.nonzero(p)[nb].reshape(batch + (int(counts.flat[0]),))
        return _batched(idx, levels)

    def __getitem__(self, key: Any) -> Any:
        if self._scalar:
            self._arrays_only("indexing")
        rows = self._rows_selected(key)
        if rows is not None:
            key = rows
        k = self._physical_key(key)
        if k is None:
            return _per_example(operator.getitem, (self, key), {}, self._levels)
        res = self._ma[k]
        record(operator.getitem, Path.RULE)
        return _wrap(res, self._levels, scalar=res.ndim == len(self._levels) and self.ndim > 0)

    def __setitem__(self, key: Any, value: Any) -> None:
        self._arrays_only("writing by index")
        self._refuse_shared_write("x[...] = value")
        levels = self._levels
        if type(key) in (BatchedTensor, BatchedMaskedArray) and key.dtype == bool and \
                key.shape == self.shape and _levels_of(key) == levels and \
                not _is_batched(value) and np.ndim(value) == 0 and \
                not getattr(key, "_scalar", False):
            # x[mask] = v, one value (np.ma.masked too) wherever each example's mask is True;
            # a masked mask as numpy.ma takes one (its data; the mask left as it is)
            _note_write(levels, self._ma)
            phys = _physical(key, levels, "x[mask] = v")
            self._ma[phys if type(phys) is _MA else np.asarray(phys)] = value
            record(operator.setitem, Path.RULE)
            return
        k = self._physical_key(key)
        if k is None or type(value) is Ragged or not set(_levels_of(value)) <= set(levels):
            self._ensure_mask()  # each example's own view must write into the batch's mask
            _per_example(operator.setitem, (self, key, value), {}, levels)
            return
        _note_write(levels, self._ma)
        if _is_batched(value):
            nb = len(levels)
            target = k[-1].ndim + self.ndim - 1 if type(key) is BatchedTensor else \
                self._ma[k].ndim
            value = _physical(value, levels, "x[...] = value")
            value = value.reshape(value.shape[:nb] + (1,) * (target - value.ndim) +
                                  value.shape[nb:])
        self._ma[k] = value

    def _refuse_shared_write(self, what: str) -> None:
        if self._shared:
            raise SharedWriteError(
                f"{what}: this masked array's data or mask is not batched "
                f"(np.ma.array(data, mask=m) with the same data, or the same boolean mask "
                f"array, in every example), so every example would write into that one array "
                f"(each example's masked array holds it itself, without copy=True). Make its "
                f"own copy per example: np.ma.array(data, mask=m, copy=True).")

    def _ensure_mask(self) -> None:
        if self._ma._mask is _NOMASK:
            self._ma._mask = np.zeros(self._ma.shape, dtype=np.ma.make_mask_descr(self.dtype))

    # ---- what has no batched meaning -------------------------------------------------------
    def _plain_data(self) -> BatchedTensor:
        return _batched(np.asarray(self._ma.data), self._levels)

    def __bool__(self) -> bool:
        m = self._ma
        if self._scalar:  # np.ma.masked is falsy: its data is 0
            truth = np.logical_and(m.data.astype(bool), ~np.ma.getmaskarray(m))
            return truth_value(_batched(truth, self._levels))
        return truth_value(self._plain_data())

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __iter__(self):
        if not self.shape:
            raise TypeError("iteration over a 0-d array")
        return (self[i] for i in range(self.shape[0]))

    def __float__(self):
        return float(self._plain_data())

    def __int__(self):
        return int(self._plain_data())

    def __complex__(self):
        return complex(self._plain_data())

    def __index__(self):
        return operator.index(self._plain_data())

    def __array__(self, dtype=None, copy=None):
        return self._plain_data().__array__(dtype, copy)

    def item(self, *args):
        return self._plain_data().item(*args)

    def tolist(self):
        return self._plain_data().tolist()

    def __hash__(self):
        raise TypeError("unhashable type: 'MaskedArray'")

    def __reduce_ex__(self, protocol):
        return self._plain_data().__reduce_ex__(protocol)

    # ---- NumPy's protocols ----------------------------------------------------------------
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        return ufunc_call(ufunc, method, inputs, kwargs)

    def __array_function__(self, func, types, args, kwargs):
        for t in types:
            if t is not BatchedMaskedArray and t is not BatchedTensor and not issubclass(
                    t, np.ndarray):
                return NotImplemented
        return function_call(func, args, kwargs)

    def __getattr__(self, name: str) -> Any:
        """Any other attribute of a ``MaskedArray`` (``anom``, ``ids``, ``torecords``...): once
        per example. The attributes numpy.ma keeps for the whole array (``_fill_value``,
        ``_hardmask``...: numpy.ma's own code reads them) are the batch's, one for all."""
        if name in _ARRAY_WIDE:
            return getattr(self._ma, name)
        attr = getattr(_MA, name, None)
        if attr is None or name.startswith("__"):
            raise AttributeError(f"'MaskedArray' object has no attribute {name!r}")
        if callable(attr):
            return _bound_loop(self, name)
        return _per_example(AttributeOp(name), (self,), {}, self._levels)


_ARRAY_WIDE = frozenset(("_fill_value", "_hardmask", "_sharedmask", "_baseclass", "_isfield",
                         "_optinfo", "_basedict"))


def _bound_loop(x: BatchedMaskedArray, name: str) -> Callable:
    def method(*args: Any, **kwargs: Any) -> Any:
        return _per_example(MethodOp(name), (x,) + args, kwargs, x._levels)
    method.__name__ = name
    return method


# ---- elementwise --------------------------------------------------------------------------------
def elementwise(fn: Any, inputs: tuple, kwargs: dict, scalars: Any = None) -> Any:
    """``fn(*inputs, **kwargs)`` elementwise (a ufunc, ``np.ma.log``, ``np.ma.add``) on the
    aligned physical values.

    ``scalars``: the plain ufunc that computes ``fn`` where every operand is a NumPy scalar
    or ``np.ma.masked`` per example (a reduction's result): an operator or a ufunc of two
    NumPy scalars is NumPy's own, which neither masks a NaN nor a domain error, and
    ``np.ma.masked`` makes any result masked. ``numpy.ma``'s functions mask the same on
    scalars as on arrays (None)."""
    levels = _level_of(inputs)
    if any(_is_batched(v) for v in kwargs.values()) or any(
            type(v) is BatchedMaskedArray and v.dtype == np.float16 for v in inputs):
        return _per_example(fn, inputs, kwargs, levels)
    phys = _aligned(inputs, levels, getattr(fn, "__name__", "ufunc"))
    scalar = all(_scalar_operand(v) for v in inputs if _is_batched(v))
    if scalars is not None and scalar and all(
            _is_batched(v) or np.ndim(v) == 0 for v in inputs):
        masks = [np.ma.getmaskarray(p) for p in phys if isinstance(p, _MA)]
        with np.errstate(all="ignore") if any(m.any() for m in masks) else _NO_CONTEXT:
            res = scalars(*(np.ma.getdata(p) for p in phys), **kwargs)
        mask = functools.reduce(np.logical_or, masks) if masks else False
        res = tuple(_MA(r, mask=mask) for r in res) if type(res) is tuple else \
            _MA(res, mask=mask)
    else:
        res = fn(*phys, **kwargs)
        first = res[0] if type(res) is tuple else res
        if getattr(first, "ndim", None) == len(levels) and not scalar:
            if not isinstance(fn, np.ufunc):
                scalar = True  # numpy.ma's functions give 0-d results as scalars or masked
            elif isinstance(first, _MA) and getattr(first, "_mask") is not _NOMASK \
                    and first.mask.any():
                res = _promoted(res)  # np.ma.masked (a float64) where masked
    record(fn, Path.RULE)
    return _wrap(res, levels, scalar=scalar)


def _promoted(res: Any) -> Any:
    """A result whose masked 0-d examples are ``np.ma.masked``, a float64: the dtype the loop's
    ``np.ma.stack`` gives."""
    if type(res) is tuple:
        return tuple(_promoted(r) for r in res)
    if isinstance(res, _MA) and res.dtype.kind in _NUMERIC:
        return res.astype(_with_masked_dtype(res))
    return res


def ufunc_call(ufunc: np.ufunc, method: str, inputs: tuple, kwargs: dict) -> Any:
    """A NumPy ufunc with a masked batch (or a plain masked array beside a batched value)."""
    if method != "__call__" or ufunc.signature is not None or kwargs.get("out") is not None \
            or "where" in kwargs:
        op = ufunc if method == "__call__" else getattr(ufunc, method)
        return _per_example(op, inputs, kwargs)
    return elementwise(ufunc, inputs, kwargs, scalars=ufunc)


def _binary_operator(ma_function: Any, reflected: bool = False) -> Callable:
    """``MaskedArray``'s operators call ``numpy.ma``'s functions (``x + y`` is
    ``np.ma.add(x, y)``): data under the mask is the left operand's, not the sum."""
    scalars = _PLAIN_OPERATIONS.get(ma_function, ma_function)

    def forward(self, other):
        if getattr(type(other), "__array_ufunc__", False) is None:
            return NotImplemented
        return elementwise(ma_function, (other, self) if reflected else (self, other), {},
                           scalars=scalars)
    return forward


_NO_CONTEXT = contextlib.nullcontext()
_PLAIN_OPERATIONS = {np.ma.add: np.add, np.ma.subtract: np.subtract,
                     np.ma.multiply: np.multiply, np.ma.true_divide: np.true_divide,
                     np.ma.floor_divide: np.floor_divide, np.ma.remainder: np.remainder,
                     np.ma.power: np.power}


def _inplace_operator(name: str) -> Callable:
    def inplace(self, other):
        if self._scalar:  # a NumPy scalar per example: z += 1 makes a new value
            return getattr(self, f"__{name}__")(other)
        levels = self._levels
        self._refuse_shared_write(f"x {name}= y")
        extra = [lv for lv in _levels_of(other) if lv not in levels]
        if extra:
            raise SharedWriteError(
                f"x {name}= y: y is batched at a vmap level that x is not (an outer vmap's): "
                f"every example of that level would write into x. Make x batched there too "
                f"(x = x {_SYMBOLS[name]} y makes a new array).", extra[0])
        _note_write(levels, self._ma)
        getattr(self._ma, f"__i{name}__")(_aligned((self, other), levels, f"x {name}= y")[1])
        record(getattr(_MA, f"__i{name}__"), Path.RULE)
        return self
    return inplace


_SYMBOLS = {"add": "+", "sub": "-", "mul": "*", "truediv": "/", "floordiv": "//", "mod": "%",
            "pow": "**"}
_OPERATORS = {"add": np.ma.add, "sub": np.ma.subtract, "mul": np.ma.multiply,
              "truediv": np.ma.true_divide, "floordiv": np.ma.floor_divide,
              "mod": np.ma.remainder, "pow": np.ma.power}
for _name, _fn in _OPERATORS.items():
    setattr(BatchedMaskedArray, f"__{_name}__", _binary_operator(_fn))
    setattr(BatchedMaskedArray, f"__r{_name}__", _binary_operator(_fn, reflected=True))
    # (without __ipow__, Python would run ``x = x ** y``: a new array, where each example's
    # ``**=`` writes into its own, which other names of it see)
    setattr(BatchedMaskedArray, f"__i{_name}__", _inplace_operator(_name))
for _name, _op in {"eq": operator.eq, "ne": operator.ne, "lt": operator.lt, "le": operator.le,
                   "gt": operator.gt, "ge": operator.ge, "and": operator.and_,
                   "or": operator.or_, "xor": operator.xor}.items():
    setattr(BatchedMaskedArray, f"__{_name}__", _binary_operator(_op))
for _name, _op in {"and": operator.and_, "or": operator.or_, "xor": operator.xor}.items():
    setattr(BatchedMaskedArray, f"__r{_name}__", _binary_operator(_op, reflected=True))
for _name, _uf in {"neg": np.negative, "pos": np.positive, "abs": np.absolute,
                   "invert": np.invert}.items():
    setattr(BatchedMaskedArray, f"__{_name}__",
            functools.partialmethod(lambda self, uf: elementwise(uf, (self,), {}, uf), _uf))


# ---- NumPy's functions on a masked batch --------------------------------------------------------
def _method_of(name: str, params: tuple) -> Callable:
    """A NumPy function that calls the method of the same name on a non-ndarray (``np.sum``,
    ``np.mean``...): its positional parameters after the array, by name."""
    def call(a, *args, **kwargs):
        if type(a) is not BatchedMaskedArray:
            return None
        kwargs.update(zip(params, args))
        kwargs = {k: v for k, v in kwargs.items() if v is not np._NoValue}
        if kwargs.get("dtype", 0) is None:
            del kwargs["dtype"]
        if kwargs.get("out", 0) is None:
            del kwargs["out"]
        return getattr(a, name)(**kwargs)
    return call


def _atleast_nd(fn: Any) -> Callable:
    """``np.atleast_1d/2d/3d`` of masked batches: each reshaped as NumPy reshapes one
    example (the same object where it has axes enough)."""
    def call(*arys):
        out = []
        for a in arys:
            if type(a) is BatchedMaskedArray and not a._scalar:
                shape = fn(np.empty(a.shape, dtype=bool)).shape
                out.append(a if shape == a.shape else a.reshape(shape))
            elif _is_batched(a):
                return None
            else:
                out.append(fn(a))
        return out[0] if len(out) == 1 else tuple(out)
    return call


def _overlap(op: Any) -> Callable:
    """``np.may_share_memory`` / ``np.shares_memory``: a masked array's memory is its data's
    (as NumPy asks it), so each masked batch stands in by its data."""
    def call(a, b, *args, **kwargs):
        a, b = (_batched(x._ma.data, x._levels) if type(x) is BatchedMaskedArray else x
                for x in (a, b))
        return op(a, b, *args, **kwargs)
    return call


_REDUCTION_PARAMS = ("axis", "dtype", "out", "keepdims")
_FUNCTIONS: dict[Any, Callable] = {
    np.sum: _method_of("sum", _REDUCTION_PARAMS),
    np.prod: _method_of("prod", _REDUCTION_PARAMS),
    np.mean: _method_of("mean", _REDUCTION_PARAMS),
    np.std: _method_of("std", _REDUCTION_PARAMS[:3] + ("ddof", "keepdims")),
    np.var: _method_of("var", _REDUCTION_PARAMS[:3] + ("ddof", "keepdims")),
    np.min: _method_of("min", ("axis", "out", "keepdims")),
    np.max: _method_of("max", ("axis", "out", "keepdims")),
    np.amin: _method_of("min", ("axis", "out", "keepdims")),
    np.amax: _method_of("max", ("axis", "out", "keepdims")),
    np.ptp: _method_of("ptp", ("axis", "out", "keepdims")),
    np.all: _method_of("all", ("axis", "out", "keepdims")),
    np.any: _method_of("any", ("axis", "out", "keepdims")),
    np.argmin: _method_of("argmin", ("axis", "out")),
    np.argmax: _method_of("argmax", ("axis", "out")),
    np.cumsum: _method_of("cumsum", ("axis", "dtype", "out")),
    np.cumprod: _method_of("cumprod", ("axis", "dtype", "out")),
    np.transpose: _method_of("transpose", ("axes",)),
    np.ravel: _method_of("ravel", ("order",)),
    np.squeeze: _method_of("squeeze", ("axis",)),
    np.swapaxes: _method_of("swapaxes", ("axis1", "axis2")),
    np.result_type: lambda *arrays: np.result_type(
        *(a.dtype if type(a) is BatchedMaskedArray else a for a in arrays)),
    np.iscomplexobj: lambda x: x.dtype.kind == "c",
    np.isrealobj: lambda x: x.dtype.kind != "c",
    np.atleast_1d: _atleast_nd(np.atleast_1d),
    np.atleast_2d: _atleast_nd(np.atleast_2d),
    np.atleast_3d: _atleast_nd(np.atleast_3d),
    np.broadcast_to: lambda array, shape, subok=False: None if subok or type(
        array) is not BatchedMaskedArray or array._scalar else np.broadcast_to(array.data, shape),
    np.may_share_memory: _overlap(np.may_share_memory),
    np.shares_memory: _overlap(np.shares_memory),
    np.shape: lambda a: a.shape,
    np.ndim: lambda a: a.ndim,
    np.size: lambda a, axis=None: a.size if axis is None else a.shape[axis],
}


def function_call(func: Any, args: tuple, kwargs: dict) -> Any:
    """A NumPy function with a masked batch among its arguments."""
    handler = _FUNCTIONS.get(func)
    if handler is not None:
        res = handler(*args, **kwargs)
        if res is not None:
            return res
    return _per_example(func, args, kwargs)


# ---- numpy.ma's own functions -------------------------------------------------------------------
def _prepared_mask(mask: Any, shape: tuple, batch: tuple, levels: Levels,
                   copy: bool = True) -> Any:
    """``mask=`` for a batch of examples of ``shape``: ``MaskedArray`` takes a mask of the
    data's size in any shape and reshapes it (or one value for all); the batch's mask is
    each example's so reshaped. None where no example would take it (the loop then raises
    what NumPy raises). A plain boolean array taken without ``copy`` is every example's
    mask itself (a write into one example's mask reaches it, and so the examples after it):
    a read-only view of it then, which ``_SharedMask`` tells apart (a batched mask that is
    every example's of an outer level too). ``batch``: the sizes of ``levels``."""
    if mask is _NOMASK or mask is None or isinstance(mask, (bool, np.bool_)):
        return mask
    size = math.prod(shape)
    if _is_batched(mask):
        nb = len(levels)
        p = _physical(mask, levels, "mask=")
        per = math.prod(p.shape[nb:])
        own = p.shape[:nb] == batch
        if per == size:
            if type(p) is np.ndarray and p.dtype == bool and not (
                    type(mask) is BatchedTensor and scalar_per_example(mask)):
                if own:
                    return p.reshape(batch + shape)  # the examples' masks themselves
                if not copy:
                    return _SharedMask(np.broadcast_to(p.reshape(p.shape[:nb] + shape),
                                                       batch + shape))
            return np.broadcast_to(np.array(np.ma.getdata(p), dtype=bool).reshape(
                p.shape[:nb] + shape), batch + shape).copy()
        if per == 1:
            return np.broadcast_to(np.array(np.ma.getdata(p), dtype=bool).reshape(
                p.shape[:nb] + (1,) * len(shape)), batch + shape).copy()
        return None
    if not isinstance(mask, (np.ndarray, list, tuple)):
        return None
    m = np.array(mask, dtype=bool)
    if m.size == 1:
        return m
    if m.size == size:
        if not copy and type(mask) is np.ndarray and mask.dtype == bool:
            return _SharedMask(np.broadcast_to(mask.reshape(shape), batch + shape))
        return np.broadcast_to(m.reshape(shape), batch + shape).copy()
    return None


class _SharedMask:
    """A plain mask every example's masked array holds itself (``_prepared_mask``)."""

    __slots__ = ("view",)

    def __init__(self, view: Any):
        self.view = view


_CONSTRUCTOR_KEYS = ("data", "a")


def _construct(original: Any, args: tuple, kwargs: dict) -> Any:
    """``np.ma.array``, ``np.ma.asarray``, ``np.ma.asanyarray``, ``np.ma.masked_array`` /
    ``MaskedArray(...)`` of a batched value or mask."""
    sig = _SIGNATURES.get(original) or _SIGNATURES.setdefault(original,
                                                              inspect.signature(original))
    try:
        bound = sig.bind(*args, **kwargs)
    except TypeError:
        return original(*args, **kwargs)
    params = bound.arguments
    key = "data" if "data" in params else "a"
    data = params.get(key)
    mask = params.get("mask", _NOMASK)
    levels = _level_of((data, mask))
    nb = len(levels)
    cls = params.get("cls", _MA)
    # a NumPy scalar per example: np.ma.array of it is a new array (not a view of the batch)
    scalar_data = type(data) is BatchedTensor and scalar_per_example(data)
    shared = None  # plain data under a mask per example: the examples share that data
    if not _is_batched(data) and _is_batched(mask) and not isinstance(data, _MA) \
            and type(mask) is not BatchedMaskedArray and data is not None:
        shared = np.asarray(data)
        # read-only: a write into it reaches every example
        data = _batched(np.broadcast_to(shared, _batch_shape((mask,), levels) + shared.shape),
                        levels)
    elif type(data) is BatchedTensor and _is_batched(mask) and \
            type(mask) is not BatchedMaskedArray and _levels_of(data) != levels:
        # data of an outer level only (a nested vmap), a mask per example of the inner one:
        # the inner level's examples share the outer example's data
        shared = _physical(data, levels, "numpy.ma")
        data = _batched(np.broadcast_to(shared, _batch_shape((data, mask), levels) +
                                        shared.shape[nb:]), levels)
    if not _is_batched(data) or cls is not _MA or _first_batched(
            (), {k: v for k, v in params.items() if k not in (key, "mask")}) is not None \
            or (type(data) is BatchedMaskedArray and data._scalar) or \
            _levels_of(data) != levels:  # (data every example's of a level the mask is not)
        return _per_example(original, args, kwargs, levels)
    if original is _ASANYARRAY and type(data) is BatchedMaskedArray and (
            params.get("dtype") is None or np.dtype(params["dtype"]) == data.dtype):
        return data
    phys = _physical(data, levels, "numpy.ma")
    if (shared is not None and params.get("copy")) or scalar_data:
        phys = phys.copy()
    shape = tuple(phys.shape[nb:])
    ndmin = params.get("ndmin", 0) or 0
    if ndmin > len(shape):
        shape = (1,) * (ndmin - len(shape)) + shape
        phys = phys.reshape(phys.shape[:nb] + shape)
        params["ndmin"] = 0
    params[key] = phys
    if type(mask) is BatchedTensor and scalar_per_example(mask):
        # each example's mask is np.False_ (which *is* np.ma.nomask) or np.True_
        # (where they differ, the batch holds a mask of both: the masked examples' results
        # are np.ma.masked, and the loop's np.ma.stack gives what the batch's masked path does)
        truth = np.asarray(_physical(mask, levels, "mask="), dtype=bool)
        if not truth.any():
            mask = params["mask"] = _NOMASK
        elif truth.all():
            mask = params["mask"] = True
    mask_shared = False
    if "mask" in params:
        m = _prepared_mask(mask, shape, phys.shape[:nb], levels, bool(params.get("copy")))
        if m is None:
            return _per_example(original, args, kwargs, levels)
        if type(m) is _SharedMask:
            m, mask_shared = m.view, True
        params["mask"] = m
    # NumPy's MaskedArray copies data with an axis that runs backwards, where each example
    # (without the batch axes) is kept as a view: the batch goes in forwards, and comes out as
    # it was
    flips = tuple(slice(None, None, -1 if step < 0 else 1) for step in phys.strides[:nb]) \
        if type(phys) is np.ndarray else ()
    backwards = any(f.step < 0 for f in flips)
    if backwards:
        params[key] = phys[flips]
        if isinstance(params.get("mask"), np.ndarray) and params["mask"].ndim == phys.ndim:
            params["mask"] = params["mask"][flips]
    res = original(*bound.args, **bound.kwargs)
    if backwards and isinstance(res, np.ndarray):
        res = res[flips]
    record(original, Path.RULE)
    if type(data) is BatchedMaskedArray and res is data._ma:
        return data
    if (shared is not None and not params.get("copy")) or mask_shared:
        out = _wrap(res, levels)
        out._shared = True
        return out
    dtype = params.get("dtype")
    copied = bool(params.get("copy")) or (dtype is not None and np.dtype(dtype) != phys.dtype)
    if isinstance(res, np.ndarray) and isinstance(phys, np.ndarray) and not copied and \
            _read_only(phys) and res.flags.writeable:
        # each example's masked array views its read-only data, so is read-only (the batch's
        # may be a writeable copy: MaskedArray copies a broadcast batch, a view of a whole
        # broadcast array would be writeable)
        res.flags.writeable = False
    return _wrap(res, levels)


def _read_only(a: Any) -> bool:
    """Whether ``a`` or an array it views is read-only (a view of a broadcast array may say
    it is writeable, where each example's view of it is not)."""
    while isinstance(a, np.ndarray):
        if not a.flags.writeable:
            return True
        a = a.base
    return False


def _masking(params: tuple, fill_params: tuple = ()) -> Callable:
    """``masked_where``, ``masked_greater``, ``masked_inside``...: the array ``params[0]``
    is masked where a condition of it (and of the other ``params``, elementwise) holds.
    ``fill_params`` also set the result's fill value (one per batch: batched, they loop)."""
    def handler(original: Any, args: tuple, kwargs: dict) -> Any:
        sig = _SIGNATURES.get(original) or _SIGNATURES.setdefault(
            original, inspect.signature(original))
        bound = sig.bind(*args, **kwargs)
        p = bound.arguments
        levels = _level_of(bound.args + tuple(bound.kwargs.values()))
        names = [n for n in params if n in p]
        data_name = params[-1] if original is _MASKED_WHERE else params[0]
        data = p[data_name]
        if any(_is_batched(p.get(n)) for n in fill_params) or any(
                _is_batched(v) for n, v in p.items() if n not in params) or (
                type(data) is BatchedMaskedArray and data._scalar) or (
                _is_batched(data) and _levels_of(data) != levels and (
                    type(data) is not BatchedTensor or not p.get("copy", True))):
            return _per_example(original, args, kwargs, levels)
        batch = _batch_shape([p[n] for n in names], levels)
        if _is_batched(data) and _levels_of(data) != levels:
            # data of an outer level only, copied for each example of the inner one
            shape = data.shape
            p[data_name] = data = _batched(np.broadcast_to(
                _physical(data, levels, original.__name__), batch + shape), levels)
        if not _is_batched(data):
            if not p.get("copy", True):  # each example's result would share the plain data
                return _per_example(original, args, kwargs, levels)
            plain = np.asanyarray(data)
            p[data_name] = np.broadcast_to(plain, batch + plain.shape)
            shape = plain.shape
        else:
            shape = data.shape
        for n in names:
            if n == data_name:
                if _is_batched(p[n]):
                    p[n] = _physical(p[n], levels, original.__name__)
                continue
            v = p[n]
            if original is _MASKED_WHERE:  # the condition has the data's shape
                if tuple(np.shape(v) if not _is_batched(v) else v.shape) != shape:
                    return _per_example(original, args, kwargs, levels)
                p[n] = np.broadcast_to(_physical(v, levels, "masked_where") if _is_batched(v)
                                       else np.asanyarray(v), batch + shape)
            elif _is_batched(v):
                p[n] = _aligned((data, v), levels, original.__name__)[1]
        if "mask" in p:
            m = _prepared_mask(p["mask"], shape, batch, levels, bool(p.get("copy", True)))
            if m is None or type(m) is _SharedMask:  # (fix_invalid(copy=False) writes it)
                return _per_example(original, args, kwargs, levels)
            p["mask"] = m
        res = original(*bound.args, **bound.kwargs)
        record(original, Path.RULE)
        return _wrap(res, levels)
    return handler


def _via_method(name: str) -> Callable:
    """``np.ma.sum(a, ...)`` and the other functions that call ``asanyarray(a).name(...)``."""
    def handler(original: Any, args: tuple, kwargs: dict) -> Any:
        if not args or not _is_batched(args[0]):
            return _per_example(original, args, kwargs)
        _level_of(args[:1])  # (a ragged value has no batched meaning here)
        return getattr(_asmasked(args[0]), name)(*args[1:], **kwargs)
    return handler


def _getmask(original: Any, args: tuple, kwargs: dict) -> Any:
    (a,) = args
    record(original, Path.RULE)
    return a.mask if type(a) is BatchedMaskedArray else _NOMASK


def _getmaskarray(original: Any, args: tuple, kwargs: dict) -> Any:
    (a,) = args
    x = _asmasked(a)
    record(original, Path.RULE)
    return _wrap(np.ma.getmaskarray(x._ma), x._levels)


def _getdata(original: Any, args: tuple, kwargs: dict) -> Any:
    a = args[0] if args else kwargs.get("a")
    if type(a) is BatchedMaskedArray and not a._scalar and not (args[1:] or len(kwargs) > (
            "a" in kwargs)):
        record(original, Path.RULE)
        return a.data
    if type(a) is BatchedTensor and len(args) + len(kwargs) == 1:
        record(original, Path.RULE)
        return a  # np.array(a, copy=None): the array itself
    if type(a) is BatchedMaskedArray and a._scalar and len(args) + len(kwargs) == 1:
        # np.array(scalar) per example, or np.ma.masked's data: a 0-d array holding 0
        record(original, Path.RULE)
        m = a._ma
        return _wrap(np.where(np.ma.getmaskarray(m), np.zeros((), m.dtype), m.data), a._levels)
    return _per_example(original, args, kwargs)


def _is_masked(original: Any, args: tuple, kwargs: dict) -> Any:
    (x,) = args
    if type(x) is not BatchedMaskedArray:
        return False
    if x._scalar:
        return _per_example(original, args, kwargs)
    m = x._ma._mask
    if m is _NOMASK:
        return False
    record(original, Path.RULE)
    nb = len(x._levels)
    return _batched(np.asarray(_flat(m, nb).any(axis=nb)), x._levels)


def _filled(original: Any, args: tuple, kwargs: dict) -> Any:
    a = args[0] if args else kwargs.get("a")
    record(original, Path.RULE)
    if type(a) is BatchedTensor:
        return a
    if type(a) is BatchedMaskedArray and a._scalar:
        # per example np.array(scalar), or np.ma.masked filled: 0-d arrays
        fill = args[1] if args[1:] else kwargs.get("fill_value")
        if _is_batched(fill):
            return _per_example(original, args, kwargs)
        m = a._ma
        fill = np.ma.default_fill_value(m.data) if fill is None else fill
        out = _wrap(np.where(np.ma.getmaskarray(m), np.asarray(fill, dtype=m.dtype), m.data),
                    a._levels)
        return out
    if type(a) is BatchedMaskedArray:
        return a.filled(*args[1:], **{k: v for k, v in kwargs.items() if k != "a"})
    return _per_example(original, args, kwargs)


def _median(original: Any, args: tuple, kwargs: dict) -> Any:
    """``np.ma.median`` over the example's axes (each example flattened for ``axis=None``)."""
    sig = _signature(original)
    p = sig.bind(*args, **kwargs).arguments
    a = p.get("a")
    if not _is_batched(a) or p.get("out") is not None or p.get("overwrite_input") or (
            _first_batched((), {k: v for k, v in p.items() if k != "a"}) is not None) or (
            type(a) is BatchedMaskedArray and (a._scalar or a.dtype == np.float16)):
        return _per_example(original, args, kwargs)
    x = _asmasked(a)
    m, nd, nb = x._ma, x.ndim, len(x._levels)
    keepdims = bool(p.get("keepdims", False))
    axis = p.get("axis")
    ax: Any
    if axis is None:
        m, ax = _flat(m, nb), nb
    else:
        axes = _axes(axis, nd, nb)
        ax = axes[0] if len(axes) == 1 else axes
    with np.errstate(divide="ignore", invalid="ignore"):
        res = np.ma.median(m, axis=ax)
    if keepdims:
        shape = tuple(1 if i in _axes(axis, nd, nb) else d
                      for i, d in enumerate(x._ma.shape[nb:], nb))
        res = res.reshape(x._ma.shape[:nb] + shape)
    record(original, Path.RULE)
    return _wrap(res, x._levels, scalar=True)


def _average(original: Any, args: tuple, kwargs: dict) -> Any:
    """``np.ma.average``: the weights, per example of the data's shape or 1-d along
    ``axis``, made the batch's shape."""
    sig = _signature(original)
    bound = sig.bind(*args, **kwargs)
    p = bound.arguments
    a = p.get("a")
    w = p.get("weights")
    axis = p.get("axis")
    if (not _is_batched(a) and not _is_batched(w)) or (type(a) is BatchedMaskedArray and (
            a._scalar or a.dtype == np.float16)) or _is_batched(axis) or \
            _first_batched((), {k: v for k, v in p.items() if k not in ("a", "weights")}):
        return _per_example(original, args, kwargs)
    levels = _level_of((a, w))
    if _is_batched(a):
        if _levels_of(a) != levels:  # (weights batched at a level the data is not)
            return _per_example(original, args, kwargs, levels)
        x = _asmasked(a)
    else:  # the same data for every example, weights per example: read, never written
        plain = np.ma.asanyarray(a)
        shape = _batch_shape((w,), levels) + plain.shape
        x = BatchedMaskedArray(levels, _MA(np.broadcast_to(plain.data, shape), mask=np.broadcast_to(
            np.ma.getmaskarray(plain), shape)))
    nd, nb = x.ndim, len(levels)
    full = x._ma.shape
    if w is not None:
        wshape = w.shape if _is_batched(w) else np.shape(w)
        if tuple(wshape) == x.shape:
            wp = _aligned((x, w), levels, "average")[1]
        elif len(wshape) == 1 and isinstance(axis, (int, np.integer)) and nd and \
                wshape[0] == x.shape[axis]:
            ax = normalize_axis_index(int(axis), nd)
            wp = _physical(w, levels, "average") if _is_batched(w) else np.asanyarray(w)
            lead = wp.shape[:nb] if _is_batched(w) else ()
            wp = wp.reshape(lead + (1,) * ax + wshape + (1,) * (nd - ax - 1))
        else:
            return _per_example(original, args, kwargs, levels)
        p["weights"] = np.broadcast_to(wp, full)
    if axis is None:
        p["a"] = _flat(x._ma, nb)
        if w is not None:
            p["weights"] = _flat(np.ma.asanyarray(p["weights"]), nb)
        p["axis"] = nb
    else:
        p["a"] = x._ma
        p["axis"] = _axes(axis, nd, nb) if not isinstance(axis, (int, np.integer)) else \
            normalize_axis_index(int(axis), nd) + nb
    res = original(*bound.args, **bound.kwargs)
    if not p.get("keepdims") and (axis is None or len(_axes(axis, nd)) == nd):
        # per example the last division is of scalars, which masks no NaN or inf (an
        # example with nothing kept is np.ma.masked); the batch's masks a non-finite
        # quotient: where they differ, once per example
        avg = res[0] if type(res) is tuple else res
        kept = np.asarray(_physical(x.count(axis), levels, "average"))
        if not np.array_equal(np.ma.getmaskarray(avg), kept == 0):
            return _per_example(original, args, kwargs, levels)
    if axis is None and p.get("keepdims"):
        res = tuple(r.reshape(r.shape[:nb] + (1,) * nd) for r in res) \
            if type(res) is tuple else res.reshape(res.shape[:nb] + (1,) * nd)
    record(original, Path.RULE)
    return _wrap(res, levels, scalar=True)


def _elementwise_handler(original: Any, args: tuple, kwargs: dict) -> Any:
    return elementwise(original, args, kwargs)


def _extremum(original: Any, args: tuple, kwargs: dict) -> Any:
    """``np.ma.maximum(a, b)`` elementwise; with one array, a reduction: once per example."""
    if len(args) == 2 and not kwargs and args[1] is not None:
        return elementwise(original, args, kwargs)
    return _per_example(original, args, kwargs)


def _atleast(original: Any, args: tuple, kwargs: dict) -> Any:
    """``np.ma.atleast_1d/2d/3d``: each argument as ``np.atleast_*d`` makes it, masked with
    its reshaped ``getmaskarray``."""
    if kwargs:
        return _per_example(original, args, kwargs)
    levels = _level_of(args)
    plain_version = getattr(np, original.__name__)
    out = []
    for a in args:
        if not _is_batched(a):
            out.append(original(a))
            continue
        if type(a) is BatchedMaskedArray and a._scalar:
            return _per_example(original, args, kwargs, levels)
        x = _asmasked(a)
        shape = plain_version(np.empty(x.shape, dtype=bool)).shape
        m, nb = x._ma, len(x._levels)
        out.append(BatchedMaskedArray(x._levels, _MA(
            np.asarray(m.data).reshape(m.shape[:nb] + shape),
            mask=np.ma.getmaskarray(m).reshape(m.shape[:nb] + shape))))
    record(original, Path.RULE)
    return out[0] if len(out) == 1 else out


def _where(original: Any, args: tuple, kwargs: dict) -> Any:
    if len(args) == 3 and not kwargs:
        return elementwise(original, args, kwargs)
    return _per_example(original, args, kwargs)


_REDUCIBLE = ("_MaskedBinaryOperation", "_extrema_operation")


def _ma_reduce(original: Any, args: tuple, kwargs: dict) -> Any:
    """``np.ma.add.reduce(x, axis)``, ``np.ma.minimum.reduce(x, axis)``: over the example's
    axis, one further on in the batch."""
    sig = _SIGNATURES.get(original.__func__) or _SIGNATURES.setdefault(
        original.__func__, inspect.signature(original))
    bound = sig.bind(*args, **kwargs)
    p = bound.arguments
    target = p.get("target")
    axis = p.get("axis", sig.parameters["axis"].default)
    if not _is_batched(target) or _first_batched((), {k: v for k, v in p.items()
                                                      if k != "target"}) is not None or (
            type(target) is BatchedMaskedArray and target._scalar):
        return _per_example(original, args, kwargs)
    x = _asmasked(target)
    levels, nd, nb = x._levels, x.ndim, len(x._levels)
    if axis is np._NoValue:
        if nd > 1:  # NumPy warns that the default will change: as the loop, per example
            return _per_example(original, args, kwargs, levels)
        axis = 0
    if nd == 0 or not (axis is None or isinstance(axis, (int, np.integer))):
        return _per_example(original, args, kwargs, levels)
    if axis is None:
        p["target"], p["axis"] = _flat(x._ma, nb), nb
    else:
        p["target"], p["axis"] = x._ma, normalize_axis_index(int(axis), nd) + nb
    res = original(*bound.args, **bound.kwargs)
    record(original, Path.RULE)
    # add.reduce gives np.ma.masked for a fully masked example; minimum.reduce a 0-d masked
    # array of the data's dtype
    return _wrap(res, levels, scalar=type(original.__self__).__name__ != "_extrema_operation")


def _sort(original: Any, args: tuple, kwargs: dict) -> Any:
    """``np.ma.sort``: a sorted copy (of the flattened example for ``axis=None``)."""
    sig = _signature(original)
    p = sig.bind(*args, **kwargs).arguments
    a = p.pop("a")
    if not _is_batched(a) or _first_batched((), p) is not None or (
            type(a) is BatchedMaskedArray and a._scalar):
        return _per_example(original, args, kwargs)
    x = _asmasked(a).copy()
    axis = p.pop("axis", -1)
    if axis is None:
        x, axis = x.ravel(), 0
    x.sort(axis, **p)
    return x


def _signature(fn: Any) -> Any:
    """``inspect.signature(fn)``, computed once (it costs ~20 µs a call)."""
    sig = _SIGNATURES.get(fn)
    if sig is None:
        sig = _SIGNATURES[fn] = inspect.signature(fn)
    return sig


def _joining(npfunc: Any) -> Callable:
    """``np.ma.stack``, ``hstack``, ``vstack``, ``column_stack``, ``dstack``: as numpy.ma
    makes them, NumPy's function of the data and of ``getmaskarray`` of each array, which on
    batched values are batched NumPy calls."""
    def handler(original: Any, args: tuple, kwargs: dict) -> Any:
        arys: Any = args[0] if args else None
        if type(arys) not in (list, tuple) or _first_batched(args[1:], kwargs) is not None or \
                any(type(a) is Ragged or (type(a) is BatchedMaskedArray and a._scalar)
                    for a in arys):
            return _per_example(original, args, kwargs)
        data = npfunc(tuple(np.asarray(a) for a in arys), *args[1:], **kwargs)
        mask = npfunc(tuple(np.ma.getmaskarray(a) for a in arys), *args[1:], **kwargs)
        record(original, Path.RULE)
        return np.ma.masked_array(data=data, mask=mask)
    return handler


def _concatenate(original: Any, args: tuple, kwargs: dict) -> Any:
    """``np.ma.concatenate``: the data concatenated, and the masks where any array has one
    (no mask where no example has a masked element: per example, ``_shrink_mask``)."""
    sig = _signature(original)
    p = sig.bind(*args, **kwargs).arguments
    arrays, axis = p.get("arrays"), p.get("axis", 0)
    if type(arrays) not in (list, tuple) or _is_batched(axis) or any(
            type(a) is Ragged or (type(a) is BatchedMaskedArray and a._scalar) for a in arrays):
        return _per_example(original, args, kwargs)
    data = np.concatenate([np.ma.getdata(a) for a in arrays], axis)
    record(original, Path.RULE)
    if all(np.ma.getmask(a) is _NOMASK for a in arrays):
        return np.ma.masked_array(data)
    mask = np.concatenate([np.ma.getmaskarray(a) for a in arrays], axis)
    return _shrunk(np.ma.masked_array(data, mask=mask))


def _shrunk(x: Any) -> Any:
    """``x`` without a mask where no example holds a masked element."""
    if type(x) is BatchedMaskedArray and x._ma._mask is not _NOMASK and not x._ma._mask.any():
        x._ma._mask = _NOMASK
    return x


def _dot(original: Any, args: tuple, kwargs: dict) -> Any:
    """``np.ma.dot(a, b)``: the product of the data filled with 0, masked where no pair of
    unmasked elements met (``strict`` or ``out=``: once per example)."""
    sig = _signature(original)
    p = sig.bind(*args, **kwargs).arguments
    a, b = p.get("a"), p.get("b")
    if p.get("strict") or p.get("out") is not None or any(
            type(v) is Ragged or (type(v) is BatchedMaskedArray and v._scalar) for v in (a, b)):
        return _per_example(original, args, kwargs)
    kept_a, kept_b = ~np.ma.getmaskarray(a), ~np.ma.getmaskarray(b)
    data = np.dot(np.ma.filled(a, 0), np.ma.filled(b, 0))
    mask = ~np.dot(kept_a, kept_b)
    if np.ndim(data) == 0:  # a 0-d masked array per example (np.asarray of the scalar)
        data = np.array(data)
        mask = np.array(mask)
    record(original, Path.RULE)
    return np.ma.masked_array(data, mask=mask)


def _cov(original: Any, args: tuple, kwargs: dict) -> Any:
    """``np.ma.cov(x)`` as numpy.ma computes it (``_covhelper``, then the products of the
    centred data filled with 0 over the counts of kept pairs), on the batch; with ``y``, or
    ``allow_masked=False`` (which asks whether anything is masked), once per example."""
    sig = _signature(original)
    p = sig.bind(*args, **kwargs).arguments
    x = p.get("x")
    ddof, bias, rowvar = p.get("ddof"), p.get("bias", False), p.get("rowvar", True)
    if p.get("y") is not None or not p.get("allow_masked", True) or type(x) is Ragged or \
            (type(x) is BatchedMaskedArray and x._scalar) or _first_batched(
                (), {k: v for k, v in p.items() if k != "x"}) is not None or (
                ddof is not None and ddof != int(ddof)):
        return _per_example(original, args, kwargs)
    record(original, Path.RULE)
    return _covariance(x, rowvar, 1 if ddof is None and not bias else int(ddof or 0))


def _covariance(x: Any, rowvar: Any, ddof: int) -> Any:
    x = np.ma.array(x, ndmin=2, copy=True, dtype=float)
    xmask = np.ma.getmaskarray(x)
    if x.shape[0] == 1:
        rowvar = True
    rowvar = int(bool(rowvar))
    tup = (slice(None), None) if rowvar else (None, slice(None))
    xnm_dtype = np.float64 if x.shape[0] > 2 ** 24 or x.shape[1] > 2 ** 24 else np.float32
    kept = np.logical_not(xmask).astype(xnm_dtype)
    x -= x.mean(axis=rowvar)[tup]
    # (the data is real: float, so its conj() is itself)
    if not rowvar:
        fact = np.dot(kept.T, kept) - ddof
        with np.errstate(divide="ignore", invalid="ignore"):
            data = np.dot(np.ma.filled(x.T, 0), np.ma.filled(x, 0)) / fact
    else:
        fact = np.dot(kept, kept.T) - ddof
        with np.errstate(divide="ignore", invalid="ignore"):
            data = np.dot(np.ma.filled(x, 0), np.ma.filled(x.T, 0)) / fact
    mask = np.less_equal(fact, 0, dtype=bool)
    return np.ma.array(data, mask=mask).squeeze()


def _corrcoef(original: Any, args: tuple, kwargs: dict) -> Any:
    """``np.ma.corrcoef(x)``: the covariance over the outer product of its diagonal's square
    roots, as numpy.ma computes it."""
    sig = _signature(original)
    p = sig.bind(*args, **kwargs).arguments
    x = p.get("x")
    if p.get("y") is not None or not p.get("allow_masked", True) or type(x) is Ragged or \
            (type(x) is BatchedMaskedArray and x._scalar) or _first_batched(
                (), {k: v for k, v in p.items() if k != "x"}) is not None:
        return _per_example(original, args, kwargs)
    corr = _covariance(x, p.get("rowvar", True), 1)
    if type(corr) is not BatchedMaskedArray or corr.ndim < 2:
        return _per_example(original, args, kwargs)  # (one variable: np.ma.masked per example)
    record(original, Path.RULE)
    std = np.ma.sqrt(corr.diagonal())
    std_data, std_mask = np.ma.getdata(std), np.ma.getmaskarray(std)
    corr /= np.ma.masked_array(np.multiply.outer(std_data, std_data),
                               mask=np.logical_or.outer(std_mask, std_mask))
    return corr


def _masks_fit(a: Any, b: Any) -> bool:
    """Whether numpy.ma's allclose masks ``a`` with a mask of ``a``'s shape: ``b`` of the same
    shape, or without a mask and broadcasting to ``a``'s (of other shapes numpy.ma masks one
    array with the other's mask, which broadcasts or raises: once per example)."""
    sa, sb = tuple(np.shape(a)), tuple(np.shape(b))
    if sa == sb:
        return True
    unmasked = not isinstance(b, _MA) or (type(b) is BatchedMaskedArray and
                                           b._ma._mask is _NOMASK) or \
        (type(b) is _MA and b._mask is _NOMASK)  # type: ignore[attr-defined]  # (numpy.ma's)
    try:
        return unmasked and np.broadcast_shapes(sa, sb) == sa
    except ValueError:
        return False


def _allclose(original: Any, args: tuple, kwargs: dict) -> Any:
    """``np.ma.allclose(a, b)``: per example one bool, as numpy.ma decides it: infinities in
    the same places and equal there, every other pair close (``masked_equal``: what a masked
    pair counts as)."""
    sig = _signature(original)
    p = sig.bind(*args, **kwargs).arguments
    a, b = p.get("a"), p.get("b")
    masked_equal, rtol, atol = p.get("masked_equal", True), p.get("rtol", 1e-5), \
        p.get("atol", 1e-8)
    if _first_batched((), {"me": masked_equal, "r": rtol, "t": atol}) is not None or any(
            type(v) is Ragged or (type(v) is BatchedMaskedArray and v._scalar) for v in (a, b)) \
            or not _masks_fit(a, b):
        return _per_example(original, args, kwargs)
    levels = _level_of((a, b))
    x, y = np.ma.asanyarray(a), np.ma.asanyarray(b)
    dtype = np.result_type(y.dtype, 1.0)
    if y.dtype != dtype:
        y = y.astype(dtype)
    px, py = _aligned((x, y), levels, "allclose")
    full = np.broadcast_shapes(np.shape(px), np.shape(py))
    nb = len(levels)
    if len(full) < nb:  # (two 0-d plain values: the loop's own answer)
        return _per_example(original, args, kwargs, levels)
    mask = np.broadcast_to(np.ma.getmaskarray(px) | np.ma.getmaskarray(py), full)
    dx, dy = np.broadcast_to(np.ma.getdata(px), full), np.broadcast_to(np.ma.getdata(py), full)
    with np.errstate(invalid="ignore", over="ignore"):
        xinf = np.isinf(dx) & ~mask  # (numpy.ma: x's infinities under both masks, y's under
        yinf = np.isinf(dy) & ~np.broadcast_to(np.ma.getmaskarray(py), full)  # its own)
        close = np.where(mask, bool(masked_equal),
                         np.where(xinf, dx == dy,
                                  np.absolute(dx - dy) <= atol + rtol * np.absolute(dy)))
    axes = tuple(range(nb, len(full)))
    same_infs = np.all(xinf == yinf, axis=axes)
    record(original, Path.RULE)
    return _batched(np.asarray(same_infs & np.all(close, axis=axes)), levels)


def _mask_rowcols(original: Any, args: tuple, kwargs: dict) -> Any:
    """``np.ma.mask_rowcols(a, axis)`` as numpy.ma computes it, on the batch: each row
    (``axis`` 0 or None) and column (``axis`` None, 1 or -1) that holds a masked element
    masked, over the same data. Per example numpy.ma returns ``a`` with its mask shared
    where nothing is masked, and otherwise a copy of the mask: where the examples differ
    in that, the batch cannot share for some and copy for others, and runs per example."""
    p = _signature(original).bind(*args, **kwargs).arguments
    return _rowcols(original, args, kwargs, p.get("a"), p.get("axis"))


def _mask_rows_or_cols(axis: int) -> Callable:
    """``np.ma.mask_rows(a)`` / ``np.ma.mask_cols(a)``: ``mask_rowcols(a, 0)`` / ``(a, 1)``
    (with ``axis=``, which numpy.ma ignores with a warning, per example)."""
    def handler(original: Any, args: tuple, kwargs: dict) -> Any:
        if len(args) != 1 or kwargs:
            return _per_example(original, args, kwargs)
        return _rowcols(original, args, kwargs, args[0], axis)
    return handler


def _rowcols(original: Any, args: tuple, kwargs: dict, a: Any, axis: Any) -> Any:
    if type(a) not in (BatchedMaskedArray, BatchedTensor) or _is_batched(axis) or (
            type(a) is BatchedMaskedArray and a._scalar):
        return _per_example(original, args, kwargs)
    x = np.ma.array(a, subok=False)
    if type(x) is not BatchedMaskedArray:
        return x  # (numpy.ma's answer, the per-op loop's)
    if x.ndim != 2:
        raise NotImplementedError("mask_rowcols works for 2D arrays only.")
    m, nb = x._ma._mask, len(x._levels)
    if m is _NOMASK:
        record(original, Path.RULE)
        return x
    some = _flat(m, nb).any(axis=nb)
    if not some.any():
        record(original, Path.RULE)
        return x
    if not some.all() or x.dtype.names is not None:
        return _per_example(original, args, kwargs, x._levels)
    mask = m.copy()
    if not axis:
        mask |= m.any(axis=nb + 1, keepdims=True)
    if axis in [None, 1, -1]:
        mask |= m.any(axis=nb, keepdims=True)
    x._ma._mask = mask
    record(original, Path.RULE)
    return x


def _apply_along_axis(original: Any, args: tuple, kwargs: dict) -> Any:
    """``np.ma.apply_along_axis(func1d, axis, arr, *args)``: numpy.ma's loop over the 1-d
    slices, each slice a batch of the examples' slices, so ``func1d`` runs once per slice
    position on the whole batch (as ``np.apply_along_axis``'s rule does). The results are
    put together as numpy.ma puts each example's: the largest of their dtypes, and a masked
    result where a result is masked (0 under a masked scalar, a masked result's data under
    its mask). Where ``func1d`` cannot run on batched slices, or its results are ones whose
    per-example types the batch cannot tell (0-d results of which some examples are
    ``np.ma.masked``, a float64, and others not), the call runs per example."""
    try:
        func1d, axis, arr, fargs, fkw = _aaa_args(*args, **kwargs)
    except TypeError:
        return _per_example(original, args, kwargs)
    if _is_batched(func1d) or _is_batched(axis) or type(arr) is Ragged or \
            (type(arr) is BatchedMaskedArray and arr._scalar) or \
            type(_first_batched(fargs, fkw)) is Ragged:
        return _per_example(original, args, kwargs)
    before = _writeable_snapshot(arr)
    arr = np.ma.array(arr, copy=False, subok=True)
    nd = arr.ndim
    axis = normalize_axis_index(axis, nd)
    outer = tuple(arr.shape[:axis] + arr.shape[axis + 1:])
    # (numpy.ma takes the first slice also where there is none: its IndexError)
    positions = list(np.ndindex(outer)) or [(0,) * len(outer)]
    try:
        results = [func1d(arr[ind[:axis] + (slice(None),) + ind[axis:]], *fargs, **fkw)
                   for ind in positions]
        out = _along_axis_result(results, axis, outer, (arr, *fargs, *fkw.values()))
    except BatchingError:
        if config.fallback == "error":
            raise  # (the op inside func1d that cannot be batched is the news)
        out = None
    if out is None:
        _put_back(before)  # (func1d may have written into its slices: the loop writes once)
        return _per_example(original, args, kwargs)
    record(original, Path.RULE)
    return out


def _writeable_snapshot(arr: Any) -> Any:
    """``(masked batch, its data, its mask)`` as they are, where a write could reach them."""
    if type(arr) is not BatchedMaskedArray or not arr._ma.flags.writeable:
        return None
    m = arr._ma
    return m, np.copy(m.data), (None if m._mask is _NOMASK else np.copy(m._mask))


def _put_back(before: Any) -> None:
    if before is not None:
        m, data, mask = before
        m.data[...] = data
        if mask is not None and m._mask is not _NOMASK:
            m._mask[...] = mask


def _shape(v: Any) -> tuple:
    """One example's shape."""
    return tuple(v.shape) if _is_batched(v) else tuple(np.shape(v))


def _aaa_args(func1d: Any, axis: Any, arr: Any, *args: Any, **kwargs: Any) -> tuple:
    return func1d, axis, arr, args, kwargs


def _along_axis_result(results: list, axis: int, outer: tuple, inputs: tuple) -> Any:
    """The batch of numpy.ma's ``apply_along_axis`` results from the results at each slice
    position (None where the batch cannot give the loop's)."""
    first = results[0]
    asscalar = np.isscalar(first)
    if not asscalar:
        try:
            len(first)
        except TypeError:
            asscalar = True
    dtypes: list = []
    data: list = []
    masks: list = []
    levels = _level_of(inputs + tuple(r for r in results if _is_batched(r)))
    for r in results:
        if type(r) in (Ragged, list, tuple) or _shape(r) != (() if asscalar else _shape(first)):
            return None
        p = _physical(r, levels, "np.ma.apply_along_axis")
        if type(r) is BatchedMaskedArray and r._scalar:
            mask = np.ma.getmaskarray(p)
            if mask.any() and not mask.all():
                return None  # (np.ma.masked is a float64, the other examples' scalars not)
            dtypes.append(np.dtype(np.float64) if mask.any() else p.dtype)
        elif r is np.ma.masked:
            dtypes.append(np.asarray(r).dtype)
        else:
            dtypes.append(p.dtype if isinstance(p, np.ndarray) else np.asarray(p).dtype)
        if isinstance(p, _MA) and p._mask is not _NOMASK:  # type: ignore[attr-defined]
            m = np.ma.getmaskarray(p)
            d = np.where(m, np.zeros((), p.dtype), p.data) if asscalar else p.data
            masks.append(m)
        else:
            d, m = np.ma.getdata(p), None
            masks.append(m)
        data.append(d)
    top = np.dtype(np.asarray(dtypes).max())
    if top.kind not in _NUMERIC or not all(np.can_cast(d, top) for d in dtypes):
        return None
    nb = len(levels)
    batch = _batch_shape(inputs + tuple(results), levels)
    rshape = () if asscalar else _shape(first)
    full = batch + rshape

    def stacked(parts: list, dtype: np.dtype) -> Any:
        parts = [np.broadcast_to(q.astype(dtype) if q.dtype != dtype else q, full)
                 for q in parts]
        res = np.stack(parts, axis=nb).reshape(batch + outer + rshape)
        dims = list(range(res.ndim))
        rnd = len(rshape)
        return np.transpose(res, dims[:nb + axis] + dims[res.ndim - rnd:] +
                            dims[nb + axis:res.ndim - rnd])

    out_data = np.ascontiguousarray(stacked([np.asarray(d) for d in data], top))
    if all(m is None for m in masks):
        res = _MA(out_data)
    else:
        falses = np.zeros(full, dtype=bool)
        res = _MA(out_data, mask=np.ascontiguousarray(
            stacked([falses if m is None else m for m in masks], np.dtype(bool))))
    res.fill_value = np.ma.default_fill_value(res)
    return BatchedMaskedArray(levels, res)


def _frommethod_name(fn: Any) -> str | None:
    """The method name of ``numpy.ma``'s functions made from methods (``np.ma.sum``)."""
    code = getattr(fn, "__code__", None)
    if code is None or code is not getattr(np.ma.sum, "__code__", None):
        return None
    try:
        return inspect.getclosurevars(fn).nonlocals.get("methodname")
    except (TypeError, ValueError):
        return None


def _as_it_is(original: Any, args: tuple, kwargs: dict) -> Any:
    """A question about the type (``isMaskedArray``: ``isinstance``), which a batched value
    answers as one example."""
    return original(*args, **kwargs)


_ASANYARRAY = np.ma.asanyarray
_MASKED_WHERE = np.ma.masked_where
_ORIGINAL_NEW = _MA.__new__
_ORIGINAL_GETITEM = _MA.__getitem__
_SIGNATURES: dict = {}

_HANDLERS: dict[str, Callable] = {
    "array": _construct, "asarray": _construct, "asanyarray": _construct,
    "masked_invalid": _masking(("a",)),
    "masked_where": _masking(("condition", "a")),
    "masked_equal": _masking(("x",), ("value",)),
    "masked_not_equal": _masking(("x",), ("value",)),
    "masked_greater": _masking(("x", "value")),
    "masked_greater_equal": _masking(("x", "value")),
    "masked_less": _masking(("x", "value")),
    "masked_less_equal": _masking(("x", "value")),
    "masked_inside": _masking(("x", "v1", "v2")),
    "masked_outside": _masking(("x", "v1", "v2")),
    "masked_values": _masking(("x",), ("value",)),
    "fix_invalid": _masking(("a",), ("fill_value",)),
    "getmask": _getmask, "getmaskarray": _getmaskarray, "getdata": _getdata,
    "is_masked": _is_masked, "filled": _filled,
    "min": _via_method("min"), "max": _via_method("max"), "ptp": _via_method("ptp"),
    "median": _median, "average": _average,
    "maximum": _extremum, "minimum": _extremum,
    "atleast_1d": _atleast, "atleast_2d": _atleast, "atleast_3d": _atleast,
    "where": _where, "power": _elementwise_handler, "sort": _sort,
    "isMaskedArray": _as_it_is, "isMA": _as_it_is, "isarray": _as_it_is,
    "compressed": _via_method("compressed"),
    "concatenate": _concatenate, "dot": _dot, "cov": _cov, "corrcoef": _corrcoef,
    "allclose": _allclose, "apply_along_axis": _apply_along_axis,
    "mask_rowcols": _mask_rowcols, "mask_rows": _mask_rows_or_cols(0),
    "mask_cols": _mask_rows_or_cols(1),
    "stack": _joining(np.stack), "hstack": _joining(np.hstack), "vstack": _joining(np.vstack),
    "row_stack": _joining(np.vstack), "column_stack": _joining(np.column_stack),
    "dstack": _joining(np.dstack),
}
_ELEMENTWISE_TYPES = ("_MaskedUnaryOperation", "_MaskedBinaryOperation",
                      "_DomainedBinaryOperation")


def _handler_for(name: str, fn: Any) -> Callable:
    handler = _HANDLERS.get(name)
    if handler is not None:
        return handler
    if type(fn).__name__ in _ELEMENTWISE_TYPES:
        return _elementwise_handler
    method = _frommethod_name(fn)
    if method is not None:
        return _via_method(method)
    return _per_example_handler


def _per_example_handler(original: Any, args: tuple, kwargs: dict) -> Any:
    return _per_example(original, args, kwargs)


class _Intercepted:
    """``numpy.ma.<name>`` while a vmap level is open: the original, unless a batched value
    is among the arguments on a thread with an open level."""

    def __init__(self, original: Any, handler: Callable):
        self.original = original
        self.handler = handler
        self.__name__ = getattr(original, "__name__", type(original).__name__)
        self.__qualname__ = getattr(original, "__qualname__", self.__name__)
        self.__doc__ = getattr(original, "__doc__", None)
        self.__wrapped__ = original

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if current_level() is not None and config.intercept_numpy and \
                _first_batched(args, kwargs) is not None:
            return self.handler(self.original, args, kwargs)
        return self.original(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        """``np.ma.add.reduce``, ``np.ma.minimum.reduce`` (vectorised), ``.outer``,
        ``.accumulate`` (once per example, batched)."""
        attr = getattr(self.original, name)
        if callable(attr) and not isinstance(attr, type):
            if name == "reduce" and type(self.original).__name__ in _REDUCIBLE:
                return _Intercepted(attr, _ma_reduce)
            return _Intercepted(attr, _per_example_handler)
        return attr

    def __repr__(self) -> str:
        return repr(self.original)


def _masked_new(cls, data=None, *args, **kwargs):
    """``MaskedArray.__new__`` while a vmap level is open (``np.ma.masked_array(x, ...)``,
    ``np.ma.MaskedArray(x, ...)``: the class itself, which no name swap can replace)."""
    if current_level() is not None and config.intercept_numpy:
        if type(data) is LocalBuffer:
            data = _batched_buffer(data)
        if _is_batched(data) or _first_batched(args, kwargs) is not None:
            return _construct(_ORIGINAL_NEW, (cls, data) + args, kwargs)
    return _ORIGINAL_NEW(cls, data, *args, **kwargs)


def _masked_getitem(self, indx):
    """``MaskedArray.__getitem__`` while a vmap level is open: a plain masked array (made
    outside the function, or by a method) indexed by a batched boolean or integer array,
    whose conversion numpy.ma's own ``self.data[indx]`` would refuse. Each example's result
    is a copy (advanced indexing), so the batch's is the same selection from the array
    repeated along the batch (a read-only view, shared as the examples share it)."""
    t = type(indx)
    if (t is BatchedTensor or t is BatchedMaskedArray) and type(self) is _MA and \
            current_level() is not None and config.intercept_numpy and self.ndim and \
            indx.ndim and indx.dtype.kind in "biu" and not getattr(indx, "_scalar", False) \
            and type(innermost(indx.data if t is BatchedMaskedArray else indx)) is np.ndarray:
        levels = _levels_of(indx)
        full = _batch_shape((indx,), levels) + self.shape
        mask = self._mask  # type: ignore[attr-defined]  # (numpy.ma's)
        phys = _ORIGINAL_NEW(_MA, np.broadcast_to(self.data, full), mask=_NOMASK if
                             mask is _NOMASK else np.broadcast_to(mask, full), copy=False)
        phys._update_from(self)  # type: ignore[attr-defined]  # (the fill value, hardmask)
        batch = BatchedMaskedArray(levels, phys)
        batch._shared = True
        return batch[indx]
    return _ORIGINAL_GETITEM(self, indx)


def _batched_buffer(buffer: LocalBuffer) -> Any:
    """A masked array over an array the function created (``ma.array(np.empty((n, m)),
    mask=True)``, then ``out[k, :len(v)] = v``: scipy.stats.mstats' ``argstoarray``): each
    example's masked array views its own new array, which a batched write will fill per
    example. NumPy's masked array of the buffer's plain array would be one array for every
    example, which no batched write can go into; so the buffer becomes batched first (a copy
    per example, in place: every name of it sees the same memory), and the masked array views
    that."""
    return batched_at_its_level(buffer, "np.ma.array of an array the function created")


def _example(x: BatchedMaskedArray, level: Level, i: int) -> Any:
    """Example ``i`` of a masked batch for the per-op loop: a view of the batch (its mask a
    view of the batch's mask)."""
    if x._level is not level:
        return x
    m, nb = x._ma, len(x._levels)
    if nb > 1:  # in a nested vmap: still a batch of the outer levels' examples
        out = BatchedMaskedArray(x._levels[:-1], m[(slice(None),) * (nb - 1) + (i,)], x._scalar)
        out._shared = x._shared
        return out
    if m.ndim == 1 and not x._scalar:  # a 0-d masked array per example
        return m[i:i + 1].reshape(())
    return m[i]


def _memory(x: BatchedMaskedArray) -> Any:
    """The data array of a masked batch, for the per-op loop's memory checks."""
    return x._ma.data


def _stack(col: list, level: Level, read_only: bool = False) -> Any:
    """The per-op loop's results, some of them masked: stacked as ``np.ma.stack`` stacks, but
    without a mask where no example has one (``np.ma.stack`` makes one of False), so that
    what follows takes the examples' ``nomask`` paths (``mean`` of nothing is NaN there, and
    ``np.ma.masked`` with a mask). ``read_only``: some example's result is a view of an
    argument (or read-only), which the stacked copy is not: it is made read-only, so that a write
    through it raises instead of missing the argument the loop's views would write into."""
    res = _stacked(col, level)
    if read_only:
        (res._ma if type(res) is BatchedMaskedArray else innermost(res)).flags.writeable = False
    return res


def _stacked(col: list, level: Level) -> Any:
    scalar = not any(isinstance(x, _MA) and type(x) is not np.ma.core.MaskedConstant
                     for x in col)
    shapes = {np.shape(x) for x in col}
    if len(shapes) > 1:
        raise DataDependentError(
            f"numpy.ma: the per-example results have different shapes ({sorted(shapes)}), so "
            f"they cannot be stacked into one batched masked array (the output shape depends "
            f"on the data, as with a boolean mask)", level)
    if any(_is_batched(x) for x in col):  # a nested vmap: batched at the outer levels too
        outer = _level_of(col)
        batch = _batch_shape(col, outer)
        col = [_outer_batch(x, outer, batch) for x in col]
        levels = outer + (level,)
        axis = len(outer)
    else:
        levels, axis = (level,), 0
    # (numpy.ma's private attribute, which NumPy's stubs leave out)
    if all(type(x) is _MA and x._mask is _NOMASK for x in col):  # type: ignore[attr-defined]
        return _wrap(_MA(np.stack([x.data for x in col], axis=axis)), levels, scalar=scalar)
    return _wrap(np.ma.stack(col, axis=axis), levels, scalar=scalar)


def _outer_batch(x: Any, levels: Levels, batch: tuple) -> Any:
    """One example's result of the per-op loop in a nested vmap, as a masked array with the
    batch axes of the outer ``levels`` in front (a value that is every example's of a level
    repeated along its axis)."""
    nb = len(levels)
    p = _physical(x, levels, "the per-op loop")
    if p is x:
        p = np.ma.asanyarray(x)
        p = p.reshape((1,) * nb + p.shape)
    full = batch + p.shape[nb:]
    if p.shape == full:
        return p if isinstance(p, _MA) else _MA(p)
    mask = np.ma.getmask(p)
    return _MA(np.broadcast_to(np.ma.getdata(p), full),
               mask=_NOMASK if mask is _NOMASK else np.broadcast_to(mask, full))


def _converted(name: str, original: Any, a: BatchedMaskedArray, args: tuple,
               kwargs: dict) -> Any:
    """``np.asarray(x)`` and NumPy's other conversions of a masked batch: the data, as
    each example's converts (``np.asanyarray`` and ``subok=True`` keep the masked array)."""
    if a._scalar:
        m = a._ma
        mask = np.ma.getmaskarray(m)
        if name in ("asarray", "asanyarray") and not args and not kwargs and not mask.any():
            # each example a NumPy scalar (none np.ma.masked): a new 0-d array of it
            out = _batched(np.array(m.data), a._levels)
            out._array0d = True
            record(original, Path.RULE)
            return out
        if name == "asanyarray" and not args and not kwargs and mask.all() and \
                m.dtype == np.float64:
            record(original, Path.RULE)
            return a  # each example np.ma.masked, which np.asanyarray returns as it is
        return _per_example(original, (a,) + args, kwargs, a._levels)
    if name == "asanyarray" and not args[1:] and set(kwargs) <= {"dtype", "order"} and \
            kwargs.get("order") is None:
        dtype = kwargs.get("dtype", args[0] if args else None)
        if dtype is None or np.dtype(dtype) == a.dtype:
            return a  # the masked array itself
        return a.astype(dtype)
    if name in ("asanyarray", "require") or kwargs.get("subok"):
        return _per_example(original, (a,) + args, kwargs, a._levels)
    return conversions.replacement(name)(a.data, *args, **kwargs)  # (the data, batched)


def _plain_masked_operator(ufunc: Any, a: Any, b: Any) -> Any:
    """``batched op plain_masked`` (either side): as one example's ``x + m`` calls
    ``MaskedArray.__radd__``, which is ``np.ma.add``."""
    fn = _MA_OPERATORS.get(ufunc)
    if fn is None:
        return ufunc_call(ufunc, "__call__", (a, b), {})
    return elementwise(fn, (a, b), {})


_MA_OPERATORS = {np.add: np.ma.add, np.subtract: np.ma.subtract, np.multiply: np.ma.multiply,
                 np.true_divide: np.ma.true_divide, np.floor_divide: np.ma.floor_divide,
                 np.remainder: np.ma.remainder, np.power: np.ma.power,
                 np.equal: operator.eq, np.not_equal: operator.ne, np.less: operator.lt,
                 np.less_equal: operator.le, np.greater: operator.gt,
                 np.greater_equal: operator.ge}


def _view_as_masked(x: BatchedTensor) -> Any:
    """``x.view(np.ma.MaskedArray)`` (``numpy.ma``'s own functions do it to a plain
    operand): each example a masked array without a mask, over its data."""
    return BatchedMaskedArray(_levels_of(x),
                              _unwrapped(x, "x.view(np.ma.MaskedArray)").view(_MA))


# ---- array-api-extra's question of whether an array is writeable --------------------------------
_AT_SUFFIX = "array_api_extra._lib._at"
_at_modules_found: set = set()


def _writeable_answer(original: Callable) -> Callable:
    """array-api-extra's ``at(x, i).set(v)`` writes in place where ``is_writeable_array(x)``,
    and otherwise copies with ``xp.asarray`` and selects with ``xp.where``. That asks
    ``type(x)``, which answers False for a batched value where the loop's example (an array)
    answers True: the batch would take the copying path, which for a masked array drops the
    mask (``np.asarray``). So a batched value answers as its examples' arrays would: by its
    flags (a masked batch of reduction results, whose examples are NumPy scalars or
    ``np.ma.masked``, False). A BatchedTensor that is a NumPy scalar per example (a
    reduction's result, ``x[i]`` of a vector: ``tensor.scalar_per_example``) answers False,
    as a NumPy scalar does: ``at`` then copies it with ``xp.asarray(x, copy=True)``, a
    writeable 0-d array per example as the loop's copy is (``scalars.ARRAY_0D``), and writes
    into that. (``at`` without ``copy=`` promises nothing about writing in place, so its
    callers use the value it returns.)"""
    def is_writeable_array(x: Any) -> Any:
        t = type(x)
        if t is BatchedMaskedArray:
            return not x._scalar and bool(x._ma.flags.writeable)
        if t is BatchedTensor:
            if scalar_per_example(x):
                return False
            v = x._value
            while type(v) is BatchedTensor:  # batched at outer levels too
                v = v._value
            if type(v) is np.ndarray:
                return bool(v.flags.writeable)
        return original(x)

    # (a function's attribute, which mypy does not know)
    is_writeable_array.__wrapped__ = original  # type: ignore[attr-defined]
    return is_writeable_array


def _intercept_in_copies(suffix: str, found: set, name: str, answer: Callable) -> None:
    """Intercept ``name`` (``answer(original)`` while a vmap runs) in the modules whose name
    ends with ``suffix`` imported since the last look (``conversions.on_new_modules``): the
    vendored copies of array-api-extra / array-api-compat read it from their module globals."""
    for key, mod in list(sys.modules.items()):
        if not key.endswith(suffix) or key in found:
            continue
        found.add(key)
        original = vars(mod).get(name)
        if callable(original):
            conversions.intercept(mod, name, answer(original))


def _intercept_writeable_questions() -> None:
    _intercept_in_copies(_AT_SUFFIX, _at_modules_found, "is_writeable_array", _writeable_answer)


# ---- array-api-compat's question of whether an array is lazy ------------------------------------
_LAZY_SUFFIX = "array_api_compat.common._helpers"
_lazy_modules_found: set = set()


def _lazy_answer(original: Callable) -> Callable:
    """array-api-compat's ``is_lazy_array(x)`` probes an array type it does not know with
    ``bool()`` of one element, and calls it lazy where that raises, as ``bool()`` of a
    batched value does where the examples disagree; SciPy's statistics then skip their
    axis handling (``_axis_nan_policy``) and compute along another axis than the loop's.
    The loop's examples are NumPy arrays, not lazy: so is a batched value."""
    def _is_lazy_cls(cls: type) -> Any:
        if cls is BatchedTensor or cls is BatchedMaskedArray:
            return False
        return original(cls)

    _is_lazy_cls.__wrapped__ = original  # type: ignore[attr-defined]
    return _is_lazy_cls


def _intercept_lazy_questions() -> None:
    _intercept_in_copies(_LAZY_SUFFIX, _lazy_modules_found, "_is_lazy_cls", _lazy_answer)


# ---- array-api-compat's question of whether an array is NumPy's --------------------------------
_numpy_question_modules: set = set()


def _numpy_answer(original: Callable) -> Callable:
    """array-api-compat's ``is_numpy_array(x)`` asks ``type(x)``, which for a batched value is
    not NumPy's; the loop's examples are NumPy arrays (or scalars) where the physical value
    is, and code branches on the answer (scikit-learn's ``calinski_harabasz_score`` casts
    ``X`` to float64 only where it is True)."""
    def is_numpy_array(x: Any) -> Any:
        t = type(x)
        if t is BatchedMaskedArray:
            return True
        if t is BatchedTensor:
            v = x._value
            while type(v) is BatchedTensor:
                v = v._value
            return type(v) is np.ndarray or original(v)
        return original(x)

    is_numpy_array.__wrapped__ = original  # type: ignore[attr-defined]
    return is_numpy_array


def _intercept_numpy_questions() -> None:
    """Wherever a module binds array-api-compat's ``is_numpy_array`` (its own module, and
    scikit-learn's that import it by name)."""
    for key, mod in list(sys.modules.items()):
        if key in _numpy_question_modules:
            continue
        _numpy_question_modules.add(key)
        try:
            original = vars(mod).get("is_numpy_array")
        except TypeError:  # (not a module: a stand-in some packages put in sys.modules)
            continue
        if callable(original) and str(getattr(original, "__module__", "")).endswith(
                _LAZY_SUFFIX):
            conversions.intercept(mod, "is_numpy_array", _numpy_answer(original))


def _install() -> None:
    for name in np.ma.__all__:
        fn = getattr(np.ma, name)
        if isinstance(fn, type) or not callable(fn) or type(fn).__name__ == "module":
            continue
        conversions.intercept(np.ma, name, _Intercepted(fn, _handler_for(name, fn)),
                              by_class=True)
    # (MaskedArray's operators are not replaced: a plain masked array on the left of a batched
    # value runs numpy.ma's own operator on it, which branches on whether anything is masked,
    # so such examples run in groups; replacing 18 operators of the class at each vmap call
    # cost 17 us a call, bench/revisions.py)
    conversions.intercept_attribute(_MA, "__new__", staticmethod(_masked_new))
    conversions.intercept_attribute(_MA, "__getitem__", _masked_getitem)
    _loop_module.EXAMPLES[BatchedMaskedArray] = _example
    _loop_module.MEMORY[BatchedMaskedArray] = _memory
    slots.stack_masked = _stack
    slots.masked_ufunc = ufunc_call
    slots.masked_function = function_call
    slots.masked_operator = _plain_masked_operator
    slots.masked_view = _view_as_masked
    conversions.CONVERTERS[BatchedMaskedArray] = _converted
    VIEW_AS_MASKED.add(BatchedMaskedArray)
    conversions.on_new_modules.append(_intercept_writeable_questions)
    conversions.on_new_modules.append(_intercept_lazy_questions)
    conversions.on_new_modules.append(_intercept_numpy_questions)


_install()
