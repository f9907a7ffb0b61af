"""BatchedTensor: a physical array plus one batch axis at one vmap level.

To the code it flows through it looks like one example (the *logical* view): ``shape``,
``ndim``, ``len``, iteration, indexing and methods all speak per example. Every NumPy call on
it is routed to the dispatcher, which this module reaches through ``registry.slots`` (the
dispatcher is a layer above: it needs this class). The Python operators are installed on the
class by ``operators``.

Also here, because the class's own hot paths need them and everything above builds on them:
``new_batched`` (the unchecked constructor), ``enter`` (the alive check and path record of a
hot path) and ``scalar_per_example`` (whether an example is a NumPy scalar or a 0-d array).
"""

from __future__ import annotations

import importlib
import itertools
import math
import operator
import struct
import sys
import types
import weakref
from typing import TYPE_CHECKING, Any, Callable, Iterator, NoReturn, TypeVar, cast

import numpy as np
from numpy.typing import DTypeLike, NDArray

from .diagnostics import conversion_message, returned_as_is
from .errors import BatchingError, note_refusal
from .levels import Level, current_level
from .registry import ALIASES, DIRECT, RECORDERS, REGISTRY, Path, defers_to_us, record, slots

__all__ = ["BatchedTensor", "new_batched", "is_plain_array", "returned_scalar", "take_returned", "enter", "scalar_per_example",
           "plain_array", "compat_namespace", "reshape_view", "transpose_view", "ints_or_sequence", "batch_axes_in_front",
           "ndarray_transpose", "ndarray_astype",
           "ndarray_fill", "MethodOp", "AttributeOp", "FlatIter", "NOT_PER_EXAMPLE",
           "CONVERSIONS", "ndarray_view", "ndarray_byteswap", "ndarray_getfield",
           "ndarray_resize", "ndarray_strides", "ndarray_flags", "ndarray_base",
           "ndarray_setflags", "BaseStop", "foreign_owner_view", "owner_of_view",
           "foreign_memory", "note_in_place_change", "innermost_array"]

_T = TypeVar("_T")
_ALL = slice(None)
_new_object = object.__new__  # (hot paths build a BatchedTensor without a constructor call)
#: ``x.view(cls)`` for these makes a masked batch (``masked.py`` adds its class: numpy.ma's
#: functions view a result as the class of their masked operand)
VIEW_AS_MASKED: set[type] = {np.ma.MaskedArray}
_PICKLE = "Pickling (one batch cannot be pickled as one example; unwrap it: level.unwrap)"
_INDEX_BOUND = (int, type(None))


def _plain_slice(k: slice[Any, Any, Any]) -> bool:
    return (type(k.start) in _INDEX_BOUND and type(k.stop) in _INDEX_BOUND
            and type(k.step) in _INDEX_BOUND)


class BatchedTensor:
    """A batch of arrays that looks like a single example.

    ``BatchedTensor(x, bdim=0, level=None)`` wraps the physical array ``x`` whose axis ``bdim``
    indexes the examples, at ``level`` (default: the innermost active ``vmap_level``).

    >>> import numpy as np, batchtensor as bt
    >>> xs = np.arange(12.0).reshape(3, 4)          # 3 examples of shape (4,)
    >>> with bt.vmap_level() as level:
    ...     x = bt.BatchedTensor(xs, bdim=0)
    ...     x.shape, level.unwrap(x.sum())
    ((4,), array([ 6., 22., 38.]))
    """

    # ``_array0d`` is set (True) only on 0-d values that are 0-d *arrays* per example; unset, a
    # 0-d value is a NumPy scalar per example (see ``scalar_per_example``).
    __slots__ = ("_value", "_bdim", "_level", "_array0d")

    _value: Any  # the physical value: a NumPy or CuPy array, a BatchedTensor of an outer level...
    _bdim: int
    _level: Level
    _array0d: bool

    def __init__(self, value: Any, bdim: int | np.integer[Any] = 0,
                 level: Level | None = None) -> None:
        if level is None:
            level = current_level()
            if level is None:
                raise BatchingError(
                    "BatchedTensor(...) needs an active vmap level: create it inside "
                    "`with bt.vmap_level():`, or use bt.vmap(f)(x)"
                )
        level.check_alive()
        if not hasattr(value, "ndim") or not hasattr(value, "shape"):
            raise TypeError(
                f"BatchedTensor: value must be an array (numpy.ndarray, cupy.ndarray or a "
                f"BatchedTensor of an outer level), got {type(value).__name__}"
            )
        if isinstance(value, np.generic):
            value = np.asarray(value)
        elif is_plain_array(value):
            value = plain_array(value, "BatchedTensor: the value")
        if type(value) is BatchedTensor and value._level.id >= level.id:
            raise BatchingError(
                f"BatchedTensor: cannot wrap a BatchedTensor of level {value._level.id} at "
                f"level {level.id}: the wrapped value must belong to an outer (lower) level"
            )
        if isinstance(bdim, bool) or not isinstance(bdim, (int, np.integer)):
            raise TypeError(f"BatchedTensor: bdim must be an int, got {bdim!r}")
        ndim = value.ndim
        if not -ndim <= bdim < ndim:
            raise ValueError(
                f"BatchedTensor: bdim={bdim} is out of range for a value of shape "
                f"{tuple(value.shape)}; expected {-ndim} <= bdim < {ndim}"
            )
        axis = int(bdim) % ndim
        level.set_size(int(value.shape[axis]), f"BatchedTensor(value of shape "
                                                f"{tuple(value.shape)}, bdim={axis})")
        self._value = value
        self._bdim = axis
        self._level = level
        level.inputs.append(value)  # a user's value: its examples are views of its memory

    # ---- logical metadata -------------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        s = self._value.shape
        b = self._bdim
        return tuple(s[:b]) + tuple(s[b + 1:])

    @shape.setter
    def shape(self, shape: Any) -> None:
        """``x.shape = s``: each example reshaped in place, a view; NumPy's AttributeError
        where that needs a copy."""
        try:
            res: Any = np.reshape(self, shape, copy=False)
        except ValueError as e:
            if "copy" not in str(e):
                raise
            raise AttributeError("Incompatible shape for in-place modification. Use "
                                 "`.reshape()` to make a copy with the desired shape.") from None
        note_in_place_change(self)
        self._value, self._bdim = res._value, res._bdim

    def _set_shape(self, shape: Any) -> None:
        """NumPy 2.5's ``x._set_shape(s)``, which ``x.shape = s`` (deprecated there) does."""
        self.shape = shape

    def _set_dtype(self, dtype: DTypeLike) -> None:
        """NumPy 2.5's ``x._set_dtype(t)``, which ``x.dtype = t`` (deprecated there) does."""
        self.dtype = dtype

    @property
    def ndim(self) -> int:
        nd: int = self._value.ndim
        return nd - 1

    @property
    def dtype(self) -> np.dtype[Any]:
        dtype: np.dtype[Any] = self._value.dtype
        return dtype

    @dtype.setter
    def dtype(self, dtype: DTypeLike) -> None:
        """``x.dtype = t``: each example's memory read as ``t`` in place (``x.view(t)``)."""
        res = self.view(dtype)
        note_in_place_change(self)
        self._value, self._bdim = res._value, res._bdim

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def itemsize(self) -> int:
        itemsize: int = self._value.dtype.itemsize
        return itemsize

    @property
    def nbytes(self) -> int:
        itemsize: int = self._value.dtype.itemsize
        return self.size * itemsize

    # (NumPy's functions of a BatchedTensor give the dispatcher's BatchedTensor, where NumPy's
    # stubs say ndarray or want one; "unused-ignore": the stubs differ between NumPy versions)
    @property
    def T(self) -> BatchedTensor:
        res = transpose_view(self)
        if res is None:
            return np.transpose(self)  # type: ignore[return-value, unused-ignore]
        return res

    @property
    def mT(self) -> BatchedTensor:
        if self.ndim < 2:
            raise ValueError("matrix transpose with ndim < 2 is undefined")
        return np.swapaxes(self, -1, -2)  # type: ignore[return-value, unused-ignore]

    @property
    def real(self) -> BatchedTensor:
        return np.real(self)

    @real.setter
    def real(self, value: Any) -> None:
        self.real[...] = value

    @property
    def imag(self) -> BatchedTensor:
        return np.imag(self)

    @imag.setter
    def imag(self, value: Any) -> None:
        self.imag[...] = value

    # ---- type identity ----------------------------------------------------------------------
    @property  # type: ignore[misc]  # (read-only: object's __class__ can be assigned)
    def __class__(self) -> type:
        """What ``isinstance`` asks when ``type(x)`` does not answer: the backend's array class
        (``numpy.ndarray``; CuPy's or the ONNX recorder's for theirs: the class of the
        innermost physical value), or, for NumPy's, the NumPy scalar type where each example
        is a NumPy scalar (``np.float64``: ``isinstance(s, float)`` holds, as in the loop).

        Real code checks its input with ``isinstance(X, np.ndarray)`` and raises its own error
        otherwise, which no rerun can help; one example *is* an ndarray, so the check passes.
        ``type(x)`` stays BatchedTensor, so NumPy's C code, compiled code and every ``type(x)
        is`` check (dispatch included) see no ndarray, and a conversion still raises (the
        rerun). A NumPy scalar example is no ndarray but a ``np.generic`` (and ``float``,
        ``numbers.Real``... as its type is), and code that takes a Python number's path on it
        (``float(s)``) meets the conversion's refusal there, as for any batched value.
        batchtensor's own code tells plain from batched by type (``is_plain_array``); where
        it asks isinstance of a NumPy scalar per example, it gets BatchedTensor."""
        v = self._value
        while type(v) is BatchedTensor:
            v = v._value
        if self._value.ndim == 1 and not getattr(self, "_array0d", False):
            # a NumPy scalar per example (scalar_per_example). Another backend's code may take
            # a NumPy scalar for a host value to convert (CuPy's operators do): there the
            # answer stays BatchedTensor, as for batchtensor's own code
            if type(v) is not np.ndarray or \
                    str(sys._getframe(1).f_globals.get("__name__", "")).startswith("batchtensor"):
                return BatchedTensor
            return cast(type, v.dtype.type)
        return type(v)

    # ---- batch metadata ---------------------------------------------------------------------
    @property
    def level(self) -> Level:
        """The vmap level this tensor is batched at."""
        return self._level

    @property
    def bdim(self) -> int:
        """Position of the batch axis in the physical value."""
        return self._bdim

    @property
    def batch_size(self) -> int:
        size: int = self._value.shape[self._bdim]
        return size

    @property
    def physical(self) -> Any:
        """The physical value (batch axis at ``bdim``). For debugging and rule authors."""
        return self._value

    def __repr__(self) -> str:
        alive = "" if self._level.alive else ", level closed"
        return (f"BatchedTensor(shape={self.shape}, dtype={self.dtype}, level={self._level.id}, "
                f"batch_size={self.batch_size}, bdim={self._bdim}{alive})")

    # ---- sequence protocol ------------------------------------------------------------------
    def __len__(self) -> int:
        shape = self.shape
        if not shape:
            raise TypeError("len() of unsized object")
        return shape[0]

    def __iter__(self) -> Iterator[Any]:
        shape = self.shape
        if not shape:  # raised by iter() itself, as ndarray does (np.iterable relies on it)
            raise TypeError("iteration over a 0-d array")
        return (self[i] for i in range(shape[0]))

    def __contains__(self, item: object) -> bool:
        return bool(np.any(self == item))

    def __getitem__(self, key: Any) -> Any:
        # Fast path: batch axis first and a key of ints and slices (x[0], x[1:], x[:, 2]).
        # One example's x[i] of a 1-d array is a NumPy scalar, a copy: so is ours.
        t = type(key)
        if t is int and self._bdim == 0:  # x[i]: the commonest index of all
            v = self._value
            nd = v.ndim
            if nd > 1:
                level = self._level
                if not level.alive:
                    level.check_alive()
                try:
                    res = v[_ALL, key]
                except IndexError:  # out of bounds: the general path says so per example
                    return slots.function_call(operator.getitem, (self, key), {})
                if RECORDERS:
                    record(operator.getitem, Path.RULE)
                if nd == 2:  # one example's x[i] is a NumPy scalar: a copy, never a view
                    res = res.copy() if type(res) is np.ndarray else np.copy(res)
                # (new_batched written out: a call is a sixth of this path, bench/NOTES.md)
                r = _new_object(BatchedTensor)
                r._value = res
                r._bdim = 0
                r._level = level
                return r
        if key is None and self._bdim == 0:
            level = self._level
            if not level.alive:
                level.check_alive()
            if RECORDERS:
                record(operator.getitem, Path.RULE)
            v = self._value
            if v.ndim == 1 and scalar_per_example(self):  # scalar[None] is a new array, not a view
                return new_batched(v[_ALL, None].copy(), 0, level)
            return new_batched(v[_ALL, None], 0, level)
        if self._bdim == 0 and (t is int or (t is slice and _plain_slice(key)) or (
                t is tuple and len(key) <= 3 and all(
                    type(k) is int or (type(k) is slice and _plain_slice(k)) for k in key))):
            level = self._level
            if not level.alive:
                level.check_alive()
            v = self._value
            if t is not tuple:
                key = (key,)
            if len(key) < v.ndim:
                try:
                    res = v[(_ALL,) + key]
                except IndexError:  # out of bounds: the general path says so per example
                    return slots.function_call(operator.getitem, (self, key), {})
                if RECORDERS:
                    record(operator.getitem, Path.RULE)
                if len(key) == v.ndim - 1 and all(type(k) is int for k in key):
                    res = res.copy() if type(res) is np.ndarray else np.copy(res)
                return new_batched(res, 0, level)
        if t is tuple and self._bdim == 0 and len(key) <= 4:
            res = _getitem_with_ellipsis_or_none(self, key)
            if res is not None:
                return res
        return slots.function_call(operator.getitem, (self, key), {})

    def __setitem__(self, key: Any, value: Any) -> None:
        slots.setitem(self, key, value)

    # ---- conversions that would drop the batch axis ----------------------------------------
    def _no_conversion(self, what: str) -> NoReturn:
        message, target = conversion_message(what, BatchedTensor)
        err: Any = TypeError(message)  # (with the attributes vmap reads: errors.rerun_reason)
        err.batchtensor_target = target  # out[i] = x: the plain array written (or None)
        err.batchtensor_conversion = True  # vmap unwraps NumPy's "setting an array element" wrap
        err.batchtensor_level = self._level  # the level whose examples a rerun would separate
        err.batchtensor_what = what
        note_refusal(self._level, what)
        slots.note_if_caught(self._level, what)
        raise err

    def _the_example(self) -> Any:
        """The one example of a value at a per-example level (a whole-function rerun: the
        level exists only so that ``bt.random`` draws example i's numbers), which converts as
        that example would; everywhere else, the clear conversion error."""
        level = self._level
        if not level.per_example:
            return None
        level.check_alive()
        return self._value[(_ALL,) * self._bdim + (0,)]

    def _example_or_refuse(self, what: str) -> Any:
        """The one example where a rerun runs per example; else the clear conversion error."""
        example = self._the_example()
        if example is None:
            self._no_conversion(what)
        return example

    def __array__(self, dtype: DTypeLike | None = None, copy: bool | None = None) -> NDArray[Any]:
        example = self._the_example()
        if example is None:
            self._no_conversion("Converting to a NumPy array (__array__)")
        return np.asarray(example, dtype=dtype, copy=copy)

    def __int__(self) -> int:
        example = self._the_example()
        if example is None:
            return self._returned_or_refuse(int, "int()")
        return int(example)

    def __float__(self) -> float:
        example = self._the_example()
        if example is None:
            return self._returned_or_refuse(float, "float()")
        return float(example)

    def __complex__(self) -> complex:
        example = self._the_example()
        if example is None:
            return self._returned_or_refuse(complex, "complex()")
        return complex(example)

    def _returned_or_refuse(self, kind: Callable[[Any], _T], what: str,
                            callee: Any = None) -> _T:
        """``float(x)`` (``int``, ``complex``, ``x.item()``) whose result the function returns
        as it is: a stand-in Python scalar for vmap to replace (``returned_scalar``); any
        other conversion, the clear error."""
        token = returned_scalar(self, kind, sys._getframe(2), callee or kind)
        if token is None:
            example = self._common_example()
            if example is None:
                self._no_conversion(what)
            return example.item() if callee == "item" else kind(example)
        return cast(_T, token)  # (a stand-in of kind's type)

    def _common_example(self) -> Any:
        """The one 0-d value every example holds (the examples a pass of vmap's groups
        follows; at least two), or None. Converting it (``int(n)``, ``range(n)``, ``np.zeros(n)``) gives
        what each example of the loop gets, so the pass goes on with it: a count that does not
        depend on the data (``n = x.size``-like values computed by NumPy) is common."""
        v = self._value
        if type(v) is BatchedTensor:
            return self._common_outer_example()
        if type(v) is not np.ndarray or v.ndim != 1 or v.shape[0] < 2:
            return None  # (one example: a rerun costs no more, and keeps its other paths)
        active = self._active_examples()
        if active is not None:
            if len(active) < 2:
                return None
            v = v[active]
        first = v[0]
        return first if _all_same(v, first) else None

    def _active_examples(self) -> Any:
        """The indices of the examples a pass of vmap's groups still follows (None: all)."""
        group_pass = self._level.group_pass
        return None if group_pass is None else group_pass.active

    def _common_outer_example(self) -> Any:
        """In a nested vmap (the value is batched at outer levels too): the value, batched at
        the outer levels, that every example of this level holds, or None. Converting it
        converts at the outer level (which may find a common value there too, or rerun)."""
        if self.ndim != 0:
            return None
        phys, levels = batch_axes_in_front(self)
        if type(phys) is not np.ndarray:
            return None
        axis = len(levels) - 1  # this level's, after the outer ones
        if phys.shape[axis] < 2:
            return None
        active = self._active_examples()
        if active is not None:
            if len(active) < 2:
                return None
            phys = np.take(phys, active, axis=axis)
        first = phys[(slice(None),) * axis + (slice(0, 1),)]
        if not _all_same(phys, first):
            return None
        index = 0 if active is None else int(active[0])
        return self._value[(slice(None),) * self._bdim + (index,)]

    def __index__(self) -> int:
        example = self._the_example()
        if example is None:
            example = self._common_example()
            if example is None or self.dtype.kind not in "iub":
                self._no_conversion("Using as an index or size (__index__)")
        return operator.index(example)

    def item(self, *args: Any) -> Any:
        example = self._the_example()
        if example is None:
            kind = _ITEM_KINDS.get(self.dtype.kind) if not args else None
            if kind is not None:
                return self._returned_or_refuse(kind, ".item()", "item")
            self._no_conversion(".item()")
        return example.item(*args)

    def tolist(self) -> Any:
        example = self._the_example()
        if example is None:
            self._no_conversion(".tolist()")
        return example.tolist()

    def tobytes(self, order: Any = "C") -> bytes:
        return cast(bytes, self._example_or_refuse(".tobytes()").tobytes(order))

    def tofile(self, fid: Any, sep: str = "",
               format: str = "%s") -> None:  # noqa: A002  (ndarray's own name)
        self._example_or_refuse(".tofile()").tofile(fid, sep, format)

    def dump(self, file: Any) -> None:
        self._example_or_refuse(".dump()").dump(file)

    def dumps(self) -> bytes:
        return cast(bytes, self._example_or_refuse(".dumps()").dumps())

    def __dlpack__(self, *, stream: Any = None, max_version: tuple[int, int] | None = None,
                   dl_device: Any = None, copy: bool | None = None) -> Any:
        example = self._example_or_refuse("Exporting the memory (__dlpack__)")
        kwargs = {} if max_version is None else {"max_version": max_version}
        return example.__dlpack__(stream=stream, dl_device=dl_device, copy=copy, **kwargs)

    @property
    def ctypes(self) -> Any:
        example = self._example_or_refuse("The memory address (.ctypes)")
        return example.ctypes

    @property
    def data(self) -> memoryview:
        return cast(memoryview, self._example_or_refuse("The memory (.data)").data)

    def __buffer__(self, flags: int) -> memoryview:
        """``memoryview(x)`` (the buffer protocol of Python 3.12): one example's memory."""
        return memoryview(self._example_or_refuse("The buffer (memoryview)"))

    def __format__(self, spec: str) -> str:
        if not spec:
            return str(self)
        if self.ndim:
            raise TypeError("unsupported format string passed to numpy.ndarray.__format__")
        return format(self._example_or_refuse("format()"), spec)

    def __hash__(self) -> int:
        """As an example's: an array is unhashable (its ``==`` is elementwise), a NumPy scalar
        hashes as its value (a conversion: no batch can hold the hashes), which is the one
        value every example holds where they agree (``set(np.unique(y))`` in a nested vmap)."""
        if not scalar_per_example(self):
            raise TypeError("unhashable type: 'numpy.ndarray'")
        example = self._the_example()
        if example is None:
            example = self._common_example()
            if example is None or example != example:  # (NaN hashes by identity)
                self._no_conversion("hash()")
        return hash(example)

    def __reduce_ex__(self, protocol: Any) -> Any:
        return self._example_or_refuse(_PICKLE).__reduce_ex__(protocol)

    def __reduce__(self) -> Any:
        return self.__reduce_ex__(2)

    def __bool__(self) -> bool:
        return slots.truth_value(self)

    # ---- protocols --------------------------------------------------------------------------
    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
        # (``dispatch.array_ufunc`` takes this method's place once dispatch is imported: the
        # same call, with the commonest ufunc calls answered without a second Python call)
        return slots.ufunc_call(ufunc, method, inputs, kwargs)

    def __array_function__(self, func: Any, types: Any, args: tuple[Any, ...],
                           kwargs: dict[str, Any]) -> Any:
        level_of = DIRECT.get(func)
        if level_of is not None:  # (np.stack of one level's values: no scan, no dispatcher)
            level = level_of(args, kwargs)
            entry = REGISTRY.get(func)
            if level is not None and entry is not None and entry.fast is not None:
                res = entry.fast(level, args, kwargs)
                if res is not NotImplemented:
                    if RECORDERS:
                        record(func, entry.kind)
                    return res
        for t in types:
            if t is not BatchedTensor and t is not np.ndarray:  # (an ndarray defers to us)
                if issubclass(t, np.ma.MaskedArray):  # per example, a masked computation
                    return slots.masked_function(func, args, kwargs)
                if not defers_to_us(t):
                    return NotImplemented
        return slots.function_call(ALIASES.get(func, func), args, kwargs, self)

    # ---- ndarray methods (routed through the same dispatcher as the NumPy functions) ---------
    def sum(self, *args: Any, **kwargs: Any) -> Any:
        return slots.function_call(np.sum, (self,) + args, kwargs)

    def mean(self, *args: Any, **kwargs: Any) -> Any:
        return slots.function_call(np.mean, (self,) + args, kwargs)

    def std(self, *args: Any, **kwargs: Any) -> Any:
        return slots.function_call(np.std, (self,) + args, kwargs)

    def var(self, *args: Any, **kwargs: Any) -> Any:
        return slots.function_call(np.var, (self,) + args, kwargs)

    def min(self, *args: Any, **kwargs: Any) -> Any:
        return slots.function_call(np.min, (self,) + args, kwargs)

    def max(self, *args: Any, **kwargs: Any) -> Any:
        return slots.function_call(np.max, (self,) + args, kwargs)

    def prod(self, *args: Any, **kwargs: Any) -> Any:
        return slots.function_call(np.prod, (self,) + args, kwargs)

    def argmin(self, *args: Any, **kwargs: Any) -> Any:
        return slots.function_call(np.argmin, (self,) + args, kwargs)

    def argmax(self, *args: Any, **kwargs: Any) -> Any:
        return slots.function_call(np.argmax, (self,) + args, kwargs)

    def cumsum(self, *args: Any, **kwargs: Any) -> Any:
        return slots.function_call(np.cumsum, (self,) + args, kwargs)

    def cumprod(self, *args: Any, **kwargs: Any) -> Any:
        return slots.function_call(np.cumprod, (self,) + args, kwargs)

    def any(self, *args: Any, **kwargs: Any) -> Any:
        return slots.function_call(np.any, (self,) + args, kwargs)

    def all(self, *args: Any, **kwargs: Any) -> Any:
        return slots.function_call(np.all, (self,) + args, kwargs)

    def reshape(self, *shape: Any, order: Any = "C", copy: bool | None = None) -> Any:
        if not shape:
            raise TypeError("reshape() takes exactly 1 argument (0 given)")
        shape = ints_or_sequence(shape)
        if order == "C" and copy is None:
            res = reshape_view(self, shape)
            if res is not None:
                return res
        return np.reshape(self, shape, order=order, copy=copy)

    def transpose(self, *axes: Any) -> Any:
        return ndarray_transpose(self, axes)

    def swapaxes(self, axis1: Any, axis2: Any) -> Any:
        return np.swapaxes(self, axis1, axis2)

    def squeeze(self, axis: Any = None) -> Any:
        return np.squeeze(self, axis)

    def ravel(self, order: Any = "C") -> Any:
        return np.ravel(self, order)

    def flatten(self, order: Any = "C") -> Any:
        return np.ravel(self, order).copy()

    def astype(self, dtype: DTypeLike, order: Any = "K", casting: Any = "unsafe",
               subok: bool = True, copy: bool = True) -> Any:
        return slots.function_call(
            ndarray_astype, (self, dtype), dict(order=order, casting=casting, copy=copy))

    def copy(self, order: Any = "C") -> Any:
        res: Any = np.copy(self, order)
        if scalar_per_example(self) and getattr(res, "_array0d", False):
            del res._array0d  # scalar.copy() is a scalar; np.copy(scalar) a 0-d array
        return res

    def __copy__(self) -> Any:
        return np.copy(self)

    def __deepcopy__(self, memo: Any) -> Any:
        return np.copy(self)

    def clip(self, min: Any = None, max: Any = None, out: Any = None, **kwargs: Any) -> Any:
        return np.clip(self, min, max, out=out, **kwargs)

    def round(self, decimals: int = 0, out: Any = None) -> Any:
        return np.round(self, decimals, out)

    def dot(self, b: Any, out: Any = None) -> Any:
        return np.dot(self, b, out)

    def take(self, indices: Any, axis: Any = None, out: Any = None, mode: Any = "raise") -> Any:
        return np.take(self, indices, axis, out, mode)

    def repeat(self, repeats: Any, axis: Any = None) -> Any:
        return np.repeat(self, repeats, axis)

    def sort(self, axis: Any = -1, kind: Any = None, order: Any = None, *,
             stable: bool | None = None) -> None:
        """In place, like ``ndarray.sort``."""
        if axis is None:  # as ndarray.sort: there is no flattened in-place sort
            raise TypeError("'NoneType' object cannot be interpreted as an integer")
        self[...] = np.sort(self, axis=axis, kind=kind, order=order, stable=stable)

    def argsort(self, axis: Any = -1, kind: Any = None, order: Any = None, *,
                stable: bool | None = None) -> Any:
        return np.argsort(self, axis=axis, kind=kind, order=order, stable=stable)

    def conj(self) -> Any:
        # ndarray.conj() of a non-complex array is the array itself (writes show through it);
        # a NumPy scalar is immutable, so handing it back is the same as a new equal scalar
        if self._value.dtype.kind in "biuf":
            if not self._level.alive:
                self._level.check_alive()
            return self
        return np.conjugate(self)

    conjugate = conj

    def diagonal(self, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Any:
        return np.diagonal(self, offset, axis1, axis2)

    def trace(self, offset: int = 0, axis1: int = 0, axis2: int = 1, dtype: DTypeLike | None = None,
              out: Any = None) -> Any:
        return np.trace(self, offset, axis1, axis2, dtype, out)

    def nonzero(self) -> Any:
        return np.nonzero(self)

    def searchsorted(self, v: Any, side: Any = "left", sorter: Any = None) -> Any:
        return np.searchsorted(self, v, side, sorter)

    def fill(self, value: Any) -> None:
        slots.function_call(ndarray_fill, (self, value), {})

    def compress(self, condition: Any, axis: Any = None, out: Any = None) -> Any:
        return np.compress(condition, self, axis, out)

    def partition(self, kth: Any, axis: Any = -1, kind: Any = "introselect",
                  order: Any = None) -> None:
        """In place, like ``ndarray.partition``."""
        self._array_only("partition")
        if axis is None:  # as ndarray.partition: there is no flattened in-place partition
            raise TypeError("'NoneType' object cannot be interpreted as an integer")
        self[...] = np.partition(self, kth, axis=axis, kind=kind, order=order)

    def argpartition(self, kth: Any, axis: Any = -1, kind: Any = "introselect",
                     order: Any = None) -> Any:
        self._array_only("argpartition")
        return np.argpartition(self, kth, axis=axis, kind=kind, order=order)

    def put(self, indices: Any, values: Any, mode: Any = "raise") -> None:
        np.put(self, indices, values, mode)  # type: ignore[arg-type, unused-ignore]  # (see T)

    def choose(self, choices: Any, out: Any = None, mode: Any = "raise") -> Any:
        return np.choose(self, choices, out, mode)

    def view(self, *args: Any, **kwargs: Any) -> Any:
        cls = kwargs.get("type", args[-1] if args else None)
        if cls in VIEW_AS_MASKED and len(args) + len(kwargs) == 1:
            return slots.masked_view(self)  # each example a masked array without a mask
        return slots.function_call(ndarray_view, (self,) + args, kwargs)

    def byteswap(self, inplace: bool = False) -> Any:
        return slots.function_call(ndarray_byteswap, (self, inplace), {})

    def getfield(self, dtype: DTypeLike, offset: int = 0) -> Any:
        return slots.function_call(ndarray_getfield, (self, dtype, offset), {})

    def setfield(self, val: Any, dtype: DTypeLike, offset: int = 0) -> None:
        self.getfield(dtype, offset)[...] = val

    def resize(self, *new_shape: Any, refcheck: bool = True) -> None:
        """In place, like ``ndarray.resize``: the example's new elements are zeros."""
        slots.function_call(ndarray_resize, (self, ints_or_sequence(new_shape) if new_shape
                                             else None), {"refcheck": refcheck})

    def setflags(self, write: bool | None = None, align: bool | None = None,
                 uic: bool | None = None) -> None:
        slots.function_call(ndarray_setflags, (self, write, align, uic), {})

    @property
    def flags(self) -> Any:
        """Each example's flags as the loop sees them (``docs/semantics.md``)."""
        return slots.function_call(ndarray_flags, (self,), {})

    @property
    def strides(self) -> tuple[int, ...]:
        """One example's strides as the loop sees them (``docs/semantics.md``)."""
        strides: tuple[int, ...] = slots.function_call(ndarray_strides, (self,), {})
        return strides

    @property
    def base(self) -> Any:
        """The loop's ``base`` of an example, where vmap knows it (``docs/semantics.md``)."""
        return slots.function_call(ndarray_base, (self,), {})

    @property
    def flat(self) -> FlatIter:
        return FlatIter(self)

    @flat.setter
    def flat(self, value: Any) -> None:
        FlatIter(self)[...] = value

    @property
    def device(self) -> Any:
        return self._value.device

    def to_device(self, device: Any, /, *, stream: Any = None) -> BatchedTensor:
        res = self._value.to_device(device, stream=stream)  # the backend's own checks
        return self if res is self._value else new_batched(res, self._bdim, self._level)

    def __dlpack_device__(self) -> Any:
        return self._value.__dlpack_device__()

    def __array_namespace__(self, *, api_version: str | None = None) -> Any:
        ns = self._value.__array_namespace__(api_version=api_version)
        if ns is np:
            return compat_namespace(sys._getframe(1)) or ns
        return ns

    @property
    def __array_priority__(self) -> float:
        """An example's: NumPy scalars have -1000000.0, arrays 0.0. (Results of NumPy calls
        on BatchedTensors are BatchedTensors whatever the priorities.)"""
        return -1000000.0 if scalar_per_example(self) else 0.0
    __class_getitem__: classmethod[Any, [Any], types.GenericAlias] = classmethod(types.GenericAlias)

    def __delitem__(self, key: Any) -> NoReturn:
        raise ValueError("cannot delete array elements")

    def _array_only(self, name: str) -> None:
        """A method NumPy scalars lack: the loop's AttributeError for a scalar example."""
        if scalar_per_example(self):
            raise AttributeError(f"'{np.dtype(self.dtype).type.__name__}' object has no "
                                 f"attribute '{name}'")

    def __round__(self, ndigits: int | None = None) -> Any:
        args = (self,) if ndigits is None else (self, ndigits)
        return slots.function_call(round, args, {})

    # Python operators are installed on the class by ``operators``; for type checkers:
    if TYPE_CHECKING:
        def __add__(self, other: Any) -> Any: ...
        def __radd__(self, other: Any) -> Any: ...
        def __iadd__(self, other: Any) -> Any: ...
        def __sub__(self, other: Any) -> Any: ...
        def __rsub__(self, other: Any) -> Any: ...
        def __isub__(self, other: Any) -> Any: ...
        def __mul__(self, other: Any) -> Any: ...
        def __rmul__(self, other: Any) -> Any: ...
        def __imul__(self, other: Any) -> Any: ...
        def __truediv__(self, other: Any) -> Any: ...
        def __rtruediv__(self, other: Any) -> Any: ...
        def __itruediv__(self, other: Any) -> Any: ...
        def __floordiv__(self, other: Any) -> Any: ...
        def __rfloordiv__(self, other: Any) -> Any: ...
        def __ifloordiv__(self, other: Any) -> Any: ...
        def __mod__(self, other: Any) -> Any: ...
        def __rmod__(self, other: Any) -> Any: ...
        def __imod__(self, other: Any) -> Any: ...
        def __pow__(self, other: Any) -> Any: ...
        def __rpow__(self, other: Any) -> Any: ...
        def __ipow__(self, other: Any) -> Any: ...
        def __matmul__(self, other: Any) -> Any: ...
        def __rmatmul__(self, other: Any) -> Any: ...
        def __imatmul__(self, other: Any) -> Any: ...
        def __and__(self, other: Any) -> Any: ...
        def __rand__(self, other: Any) -> Any: ...
        def __iand__(self, other: Any) -> Any: ...
        def __or__(self, other: Any) -> Any: ...
        def __ror__(self, other: Any) -> Any: ...
        def __ior__(self, other: Any) -> Any: ...
        def __xor__(self, other: Any) -> Any: ...
        def __rxor__(self, other: Any) -> Any: ...
        def __ixor__(self, other: Any) -> Any: ...
        def __lshift__(self, other: Any) -> Any: ...
        def __rlshift__(self, other: Any) -> Any: ...
        def __ilshift__(self, other: Any) -> Any: ...
        def __rshift__(self, other: Any) -> Any: ...
        def __rrshift__(self, other: Any) -> Any: ...
        def __irshift__(self, other: Any) -> Any: ...
        def __divmod__(self, other: Any) -> Any: ...
        def __rdivmod__(self, other: Any) -> Any: ...
        def __lt__(self, other: Any) -> Any: ...
        def __le__(self, other: Any) -> Any: ...
        def __gt__(self, other: Any) -> Any: ...
        def __ge__(self, other: Any) -> Any: ...
        def __eq__(self, other: object) -> Any: ...
        def __ne__(self, other: object) -> Any: ...
        def __neg__(self) -> Any: ...
        def __pos__(self) -> Any: ...
        def __abs__(self) -> Any: ...
        def __invert__(self) -> Any: ...


class MethodOp:
    """A callable that calls an ndarray method by name, so that one key serves every backend."""

    def __init__(self, method: str) -> None:
        self.method = method
        self.__name__ = method
        self.__qualname__ = f"ndarray.{method}"
        # (no module: op_name names it "ndarray.<method>"; typeshed's __module__ is a str)
        self.__module__ = None  # type: ignore[assignment]

    def __call__(self, x: Any, *args: Any, **kwargs: Any) -> Any:
        return getattr(x, self.method)(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<ndarray method {self.method}>"


class AttributeOp(MethodOp):
    """A callable that reads an ndarray attribute by name (``x.strides``, ``x.flags``)."""

    def __call__(self, x: Any) -> Any:
        return getattr(x, self.method)

    def __repr__(self) -> str:
        return f"<ndarray attribute {self.method}>"


ndarray_view = MethodOp("view")
ndarray_byteswap = MethodOp("byteswap")
ndarray_getfield = MethodOp("getfield")
ndarray_resize = MethodOp("resize")
ndarray_setflags = MethodOp("setflags")
ndarray_strides = AttributeOp("strides")
ndarray_flags = AttributeOp("flags")
ndarray_base = AttributeOp("base")


# ---- owners that NumPy's base collapse stops at -------------------------------------------------
class BaseStop(np.ndarray):
    """Stands, in the chain of bases of a physical array, for an object that is not an array
    (``np.from_dlpack``'s capsule): NumPy's base collapse stops at the array above it, as the
    loop's collapse stops at its example. ``layers``: the (level, bdim) of each level the
    owner is batched at, outermost first (the levels held weakly); ``changed``: whether a
    ``x.shape = s`` / ``x.dtype = t`` changed the owner in place (its examples are then not
    what ``layers`` describes)."""

    layers: tuple[tuple[Any, int], ...]
    changed: bool


def foreign_owner_view(x: BatchedTensor) -> BatchedTensor:
    """``x.view()`` whose examples, as the loop's ``np.from_dlpack(example)``, are arrays that
    do not own their memory and whose base is not an array: a view made of one later has it
    as its base (``owner_of_view``)."""
    y: BatchedTensor = x.view()
    if scalar_per_example(x) or type(innermost_array(y)) is not np.ndarray:
        return y
    if x.ndim == 0:
        y._array0d = True  # a 0-d array per example, as x is
    chain = [y]
    while type(chain[-1]._value) is BatchedTensor:
        chain.append(chain[-1]._value)
    phys = chain[-1]._value
    # two views of the stop's type: NumPy's collapse stops where the base's type differs
    stop = phys.view(BaseStop).view(BaseStop)
    stop.layers = tuple((weakref.ref(t._level), t._bdim) for t in reversed(chain))
    stop.changed = False
    chain[-1]._value = stop.view(np.ndarray)
    return y


def innermost_array(x: BatchedTensor) -> Any:
    """The physical array under every level of ``x``."""
    v = x._value
    while type(v) is BatchedTensor:
        v = v._value
    return v


def _stop_above(phys: Any) -> BaseStop | None:
    """The BaseStop below ``phys``: ``phys`` is the owner's physical array (its base is the
    stop) or a view of it (its base is the owner's array)."""
    b = getattr(phys, "base", None)
    if type(b) is BaseStop:
        return b
    if type(b) is np.ndarray and type(b.base) is BaseStop:
        return b.base
    return None


def _alive(stop: BaseStop) -> bool:
    """Are the owner's levels open (it was made in this pass, not by an inner vmap that has
    returned: the loop's inner vmap returns a stacked array of its own)?"""
    for ref, _ in stop.layers:
        level = ref()
        if level is None or not level.alive:
            return False
    return True


def foreign_memory(phys: Any) -> bool:
    """Is ``phys`` the physical array of an owner of a BaseStop of open levels, or a view of
    one? Its examples do not own their memory in the loop."""
    if type(phys) is not np.ndarray:
        return False
    stop = _stop_above(phys)
    return stop is not None and _alive(stop)


def note_in_place_change(x: BatchedTensor) -> None:
    """``x.shape = s`` / ``x.dtype = t`` on the owner of a BaseStop (or on a view of it that
    stands for the same examples): its views' base is no longer known."""
    stop = _stop_above(innermost_array(x))
    if stop is not None:
        stop.changed = True


def owner_of_view(phys: Any) -> BatchedTensor | None:
    """For a physical array that views the owner of a BaseStop: the owner, each example the
    loop's base of the view's example (its ``base``); None where that is not known."""
    b = getattr(phys, "base", None)
    if type(phys) is not np.ndarray or type(b) is not np.ndarray \
            or type(b.base) is not BaseStop:
        return None
    stop: BaseStop = b.base
    if stop.changed or not _alive(stop):
        return None
    owner: Any = b
    for ref, bdim in stop.layers:
        owner = new_batched(owner, bdim, ref())
        if owner._value.ndim == 1:
            owner._array0d = True  # from_dlpack's result: an array, never a NumPy scalar
    return cast(BatchedTensor, owner)


def _holds_batched(key: Any) -> bool:
    if type(key) is BatchedTensor:
        return True
    return isinstance(key, (tuple, list)) and any(_holds_batched(k) for k in key)


class FlatIter:
    """``x.flat`` of a batched ``x``: each example's ``numpy.flatiter``. Indexing reads a copy
    of the elements in C order (``x.flat[i]``, ``x.flat[1:4]``, ``x.flat[idx]``), assigning
    writes them (``x.flat[idx] = v``, values repeated as needed), and iterating yields each
    element in turn."""

    __slots__ = ("base", "index")

    def __init__(self, x: BatchedTensor):
        self.base = x
        self.index = 0

    @property
    def coords(self) -> tuple[int, ...]:
        return tuple(int(i) for i in np.unravel_index(self.index, self.base.shape))

    def __len__(self) -> int:
        return self.base.size

    def __iter__(self) -> FlatIter:
        return self

    def __next__(self) -> Any:
        if self.index >= self.base.size:
            raise StopIteration
        item = self[self.index]
        self.index += 1
        return item

    def __getitem__(self, key: Any) -> Any:
        if type(key) is tuple and len(key) != 1:
            raise IndexError(f"too many indices for flat iterator: flat iterator is "
                             f"1-dimensional, but {len(key)} were indexed")
        res: Any = np.ravel(self.base)[key]
        if type(res) is BatchedTensor and not scalar_per_example(res):
            res = np.copy(res)  # the flat iterator reads copies, never views
        return res

    def __setitem__(self, key: Any, value: Any) -> None:
        if type(key) is tuple and len(key) != 1:
            raise IndexError(f"too many indices for flat iterator: flat iterator is "
                             f"1-dimensional, but {len(key)} were indexed")
        positions = np.arange(self.base.size, like=self.base)  # (on the base's backend)
        if _holds_batched(key):  # positions per example, for a batched index
            positions = positions + np.zeros_like(np.ravel(self.base), dtype=positions.dtype)
        # (NumPy's stubs want an ndarray: see BatchedTensor.T)
        np.put(self.base, positions[key], value)  # type: ignore[arg-type, unused-ignore]

    def copy(self) -> Any:
        return np.ravel(self.base).copy()

    def __array__(self, dtype: DTypeLike | None = None, copy: bool | None = None) -> NDArray[Any]:
        return np.ravel(self.base.__array__(dtype, copy))

    def __repr__(self) -> str:
        return f"FlatIter({self.base!r})"


#: ndarray names that have no per-example meaning a BatchedTensor can give: each raises the
#: error below (AttributeError, so that ``hasattr`` is False and NumPy's conversion goes on to
#: ``__array__``, which refuses with the conversion error). ``tests/test_ndarray_surface.py``
#: checks every name of ``dir(numpy.ndarray)`` is implemented, a conversion, or listed here.
NOT_PER_EXAMPLE: dict[str, str] = {
    "__array_interface__": (
        "the memory interface describes one array in memory; the batch's would show its batch "
        "axis as data. NumPy converts through __array__ instead, which keeps the batch (inside "
        "bt.vmap it reruns the function per example where a plain array is needed)"),
    "__array_struct__": (
        "the C memory interface describes one array in memory; the batch's would show its "
        "batch axis as data. NumPy converts through __array__ instead"),
    "__array_finalize__": (
        "a hook NumPy calls on instances of ndarray subclasses; a BatchedTensor is not one, "
        "and NumPy functions on it already return BatchedTensors"),
    "__array_wrap__": (
        "a hook NumPy calls to turn results into an ndarray subclass; NumPy functions on a "
        "BatchedTensor already return BatchedTensors, so there is nothing to wrap"),
    "__setstate__": (
        "unpickling: a BatchedTensor belongs to a live vmap level and cannot be pickled or "
        "unpickled; unwrap it first (level.unwrap) and pickle the plain array"),
}

#: ndarray names that convert an example to something that is not an array (a Python object,
#: bytes, memory): per example they exist, but no batch can hold their results. Each raises
#: the conversion TypeError, which makes ``bt.vmap`` rerun the function once per example
#: (where they give the example's), or raises with ``fallback="error"``.
CONVERSIONS: dict[str, str] = {
    "__array__": "Converting to a NumPy array (__array__)",
    "__int__": "int()", "__float__": "float()", "__complex__": "complex()",
    "__index__": "Using as an index or size (__index__)",
    "item": ".item()", "tolist": ".tolist()", "tobytes": ".tobytes()",
    "tofile": ".tofile()", "dump": ".dump()", "dumps": ".dumps()",
    "__dlpack__": "Exporting the memory (__dlpack__)", "ctypes": "The memory address (.ctypes)",
    "data": "The memory (.data)", "__format__": "format()",
    "__reduce__": _PICKLE, "__reduce_ex__": _PICKLE, "__hash__": "hash() of a NumPy scalar",
}
if hasattr(np.ndarray, "__buffer__"):  # Python 3.12's buffer protocol in Python: memoryview(x)
    CONVERSIONS["__buffer__"] = "The buffer (memoryview)"


def _refusal(name: str, why: str) -> property:
    def get(self: BatchedTensor) -> NoReturn:
        err: Any = AttributeError(f"BatchedTensor.{name}: {why}.")
        if name in _MEMORY_INTERFACES:
            # Python code that reads it (a library's own as_strided, bound before the vmap)
            # needs one example's memory: per example it has it, so vmap reruns the function
            # once per example for this error, as for a conversion
            err.batchtensor_conversion = True
            err.batchtensor_level = self._level
            err.batchtensor_what = f"its memory interface ({name})"
        raise err

    return property(get, doc=f"Raises AttributeError: {why}.")


_MEMORY_INTERFACES = ("__array_interface__", "__array_struct__")
for _name, _why in NOT_PER_EXAMPLE.items():
    setattr(BatchedTensor, _name, _refusal(_name, _why))


def _example_shape(shape: Any, example: tuple[int, ...]) -> tuple[int, ...] | None:
    """The target shape of reshaping one ``example``-shaped array to ``shape`` (Python ints, at
    most one -1), or None where NumPy would raise or the case is unusual (the rule decides)."""
    if type(shape) is int:
        shape = (shape,)
    elif type(shape) is not tuple or not all(type(d) is int for d in shape):
        return None
    size = math.prod(example)
    if -1 in shape:
        known = math.prod(d for d in shape if d != -1)
        if shape.count(-1) > 1 or known <= 0 or size % known or min(shape) < -1:
            return None
        shape = tuple(size // known if d == -1 else d for d in shape)
    return shape if min(shape, default=0) >= 0 and math.prod(shape) == size else None


def enter(x: BatchedTensor, op: Any, path: Path = Path.RULE) -> Level:
    """The level of ``x`` for a hot path serving ``op``: checked alive (the escaped-tensor
    error otherwise), and the path recorded for ``record_paths``."""
    level = x._level
    if not level.alive:
        level.check_alive()
    if RECORDERS:
        record(op, path)
    return level


def _batch_first_array(x: BatchedTensor) -> bool:
    """The hot paths' common case: batch axis first, a NumPy array of at least 1-d examples."""
    v = x._value
    return not x._bdim and type(v) is np.ndarray and v.ndim >= 2


def reshape_view(x: BatchedTensor, shape: Any) -> BatchedTensor | None:
    """``x.reshape(shape)`` (C order) of a batch-first example of at least one dimension into
    at least one: the physical reshape, a view exactly where NumPy's reshape of one example is
    one. None for anything else (the reshape rule, with NumPy's errors)."""
    if not _batch_first_array(x):
        return None
    v = x._value
    target = _example_shape(shape, v.shape[1:])
    if not target:
        return None
    return new_batched(v.reshape((v.shape[0],) + target), 0, enter(x, np.reshape))


def transpose_view(x: BatchedTensor) -> BatchedTensor | None:
    """``x.T`` / ``np.transpose(x)`` of a batch-first example of at least one dimension: the
    example axes reversed behind the batch axis (a view). None for anything else."""
    if not _batch_first_array(x):
        return None
    v = x._value
    return new_batched(v.transpose((0,) + tuple(range(v.ndim - 1, 0, -1))), 0,
                       enter(x, np.transpose))


def ints_or_sequence(args: tuple[Any, ...]) -> Any:
    """ndarray methods take ``x.reshape(2, 3)`` or ``x.reshape((2, 3))``: the one sequence."""
    if len(args) == 1 and not isinstance(args[0], (int, np.integer)):
        return args[0]
    return args


def ndarray_transpose(x: Any, axes: tuple[Any, ...]) -> Any:
    """``x.transpose()``, ``x.transpose(None)``, ``x.transpose(1, 0)``, ``x.transpose((1, 0))``."""
    if not axes or (len(axes) == 1 and axes[0] is None):
        return np.transpose(x)
    return np.transpose(x, ints_or_sequence(axes))


ndarray_astype = MethodOp("astype")
ndarray_fill = MethodOp("fill")


def _getitem_with_ellipsis_or_none(x: BatchedTensor,
                                   key: tuple[Any, ...]) -> BatchedTensor | None:
    """``x[..., None]``, ``x[:, None]``, ``x[..., 0]``: a basic index of ints, plain slices,
    None and one Ellipsis on an example of at least one dimension, batch axis first. The
    physical key is the same with the batch axis in front (the Ellipsis spans only example
    axes). A 0-d result through an Ellipsis is a 0-d array view, as in NumPy. None for
    anything else (the general indexing path)."""
    v = x._value
    if type(v) is not np.ndarray or v.ndim < 2:
        return None
    used = ellipses = 0
    for k in key:
        tk = type(k)
        if tk is int or (tk is slice and _plain_slice(k)):
            used += 1
        elif k is Ellipsis:
            ellipses += 1
        elif k is not None:
            return None
    if used > v.ndim - 1 or ellipses > 1 or (not ellipses and None not in key):
        return None  # out of range (NumPy's error), or no Ellipsis / None: the paths above
    try:
        res = v[(_ALL,) + key]
    except IndexError:  # out of bounds: the general path says so per example
        return None
    out = new_batched(res, 0, enter(x, operator.getitem))
    if out._value.ndim == 1:
        out._array0d = True  # x[0, ...] of a 1-d example: a 0-d array, written in place
    return out


def batch_axes_in_front(t: BatchedTensor) -> tuple[Any, tuple[Level, ...]]:
    """``(physical, levels)``: the physical array under ``t``'s levels with the batch axis of
    each in front, outermost first (views), and those levels in that order."""
    chain: list[BatchedTensor] = []
    while type(t) is BatchedTensor:  # a BatchedTensor of an inner level wraps the outer's
        chain.append(t)
        t = t._value
    phys: Any = t
    for k, c in enumerate(reversed(chain)):
        # (an inner level's batch axis is an axis of the outer level's example: after the k
        # outer batch axes in front)
        phys = np.moveaxis(phys, k + c._bdim, k)
    return phys, tuple(c._level for c in reversed(chain))


def _all_same(v: NDArray[Any], first: Any) -> bool:
    """Whether every element of ``v`` is ``first`` (broadcast): NaN is NaN's value, and -0.0
    is not 0.0 (``1 / x`` differs)."""
    same = v == first
    if v.dtype.kind in "fc":
        same |= np.isnan(v) & np.isnan(first)
        same &= np.signbit(v.real) == np.signbit(first.real)
    return bool(np.all(same))


def scalar_per_example(t: BatchedTensor) -> bool:
    """True if ``t`` is a NumPy *scalar* per example, so ``t += 1`` must rebind, not write.

    Per example, ufuncs, reductions and integer indexing return immutable NumPy scalars, and
    ``z += 1`` on one makes a new object: a list or another name holding the old ``z`` keeps
    the old value. Writing into the shared physical value instead would change those too.
    Only 0-d values marked as arrays (``np.array(v)``, ``x[0, ...]``...: ``dispatch``) are
    written in place."""
    return t._value.ndim == 1 and not getattr(t, "_array0d", False)


def plain_array(x: NDArray[Any], what: str) -> NDArray[Any]:
    """An ndarray (or a subclass) to batch, as a plain ndarray, or a ValueError saying why not.

    A batch is one physical array whose examples are slices of it, and the loop's examples of
    a subclass are instances of that subclass with its own behaviour, which slices of a plain
    array would not have. So: ``np.memmap`` is batched as the plain array over its buffer
    (writes still reach the file; ops on a memmap give plain arrays anyway); ``np.matrix`` (its
    rows are 2-d matrices, its ``*`` a matrix product), ``np.ma.MaskedArray`` (its mask) and
    every other subclass are refused, with what to pass instead."""
    t = type(x)
    if t is np.ndarray:
        return x
    if not issubclass(t, np.ndarray):  # it says it is one (``__class__``): the array it holds
        return plain_array(x.__array__(), what)
    if isinstance(x, np.memmap):
        return x.view(np.ndarray)
    name = f"{t.__module__}.{t.__qualname__}"
    if isinstance(x, np.matrix):
        raise ValueError(
            f"{what} is a numpy.matrix. A matrix is always 2-d (one row of it is a 1 x n "
            f"matrix, and * multiplies matrices), which a slice of a batch cannot be. Pass "
            f"np.asarray(m) and write the products with @.")
    if name.startswith("numpy.ma."):
        raise ValueError(
            f"{what} is a masked array ({name}); vmap does not batch masks. Pass the data and "
            f"the mask as two arrays (np.ma.getdata(x), np.ma.getmaskarray(x)), or "
            f"x.filled(value).")
    raise ValueError(
        f"{what} is a {name}, a subclass of numpy.ndarray: vmap batches plain arrays only, "
        f"because a subclass's own behaviour (units, masks, fields as attributes...) would not "
        f"carry over to the slices of a batch. Pass x.view(np.ndarray) to batch its data as a "
        f"plain array.")


def compat_namespace(frame: Any) -> Any:
    """Where array-api-compat's ``array_namespace`` asks a NumPy-backed value for its
    namespace (``frame``: the caller of ``__array_namespace__``): the namespace that copy of
    array-api-compat gives a NumPy array, its ``numpy`` wrapper, unless the call asked for
    NumPy itself (``use_compat=False``). It tells a NumPy array by ``type(x)``, which a
    BatchedTensor is not, and the loop's examples are NumPy arrays: the same namespace keeps
    the library on the loop's code (its ``clip`` makes its result with the wrapper's
    ``empty``, which vmap sees; SciPy and scikit-learn each vendor a copy). None elsewhere."""
    name = frame.f_globals.get("__name__", "")
    at = name.find("array_api_compat")
    if at < 0 or frame.f_locals.get("use_compat") is False:
        return None
    root = name[:at] + "array_api_compat"
    try:
        return importlib.import_module(root + ".numpy")
    except ImportError:
        return None


def is_plain_array(x: Any) -> bool:
    """``isinstance(x, np.ndarray)`` but False for a BatchedTensor: a NumPy array (or a
    subclass), or an array ``f`` made that is not batched yet (``buffers.LocalBuffer``).

    ``isinstance(x, np.ndarray)`` alone is True for a batched value (``BatchedTensor``'s
    ``__class__``), so batchtensor's own code never uses it to tell plain from batched."""
    return type(x) is not BatchedTensor and isinstance(x, np.ndarray)


# ---- Python scalars returned as they are --------------------------------------------------------
# ``return float(score)`` ends many library functions (scikit-learn's metrics). The loop stacks
# the examples' Python floats into a float64 array, so where the float goes straight back to
# vmap (``diagnostics.returned_as_is``), the conversion returns a stand-in: a float NaN whose
# payload bits are unique (an int beyond any int64 for int(); a complex whose real part is such
# a NaN for complex()), and vmap puts the batched value, cast as the loop's stacking casts the
# scalars, in its place. Nothing can read the stand-in on the way: every frame returns it at once.
_NAN_TOKENS = itertools.count(1)
_QUIET_NAN = 0x7FF8_0000_0000_0000
_INT_TOKEN_BASE = 1 << 100
#: which Python scalar each kind of dtype converts to, and the dtype the loop stacks those to
_SCALAR_DTYPES: dict[Callable[[Any], Any], type] = {float: np.float64, int: np.int64,
                                                    complex: np.complex128}
_CONVERTIBLE: dict[Callable[[Any], Any], str] = {float: "biuf", int: "bi", complex: "biufc"}
_ITEM_KINDS = {"f": float, "i": int, "c": complex}


def returned_scalar(x: BatchedTensor, kind: Callable[[Any], Any], frame: Any,
                    callee: Any) -> int | float | complex | None:
    """A stand-in for ``kind(x)`` (``float``, ``int``, ``complex``; ``callee``: that builtin,
    or ``"item"``) called in ``frame``, when ``x`` is 0-d per example and the result goes
    straight back to the vmap pass of ``x``'s level; else None."""
    level = x._level
    until = level.pass_frame
    if until is None or x.ndim != 0 or x.dtype.kind not in _CONVERTIBLE[kind] \
            or (kind is int and x.dtype.itemsize == 8 and x.dtype.kind == "u") \
            or not returned_as_is(frame, until, callee):
        return None
    n = next(_NAN_TOKENS) & 0x3_FFFF_FFFF_FFFF
    token: int | float | complex
    if kind is int:
        token = _INT_TOKEN_BASE + n
        key: Any = ("i", token)
    else:
        bits = _QUIET_NAN | 0x4_0000_0000_0000 | n
        real = struct.unpack("<d", struct.pack("<Q", bits))[0]
        token = real if kind is float else complex(real, 0.0)
        key = ("f", bits)
    if level.returned is None:
        level.returned = {}
    level.returned[key] = x.astype(_SCALAR_DTYPES[kind])
    return token


def take_returned(level: Level, out: Any) -> Any:
    """The batched value a stand-in of ``returned_scalar`` stands for, or ``out`` itself."""
    t = type(out)
    if t is int:
        key: Any = ("i", out)
    elif t is float or t is complex:
        real = out if t is float else out.real
        if real == real:
            return out
        key = ("f", struct.unpack("<Q", struct.pack("<d", real))[0])
    else:
        return out
    # (vmap calls it where level.returned holds stand-ins)
    return level.returned.get(key, out)  # type: ignore[union-attr]


def new_batched(value: Any, bdim: int, level: Level) -> BatchedTensor:
    """A BatchedTensor without the constructor's checks, for values the library built itself
    (``bdim`` already normalised, ``level`` alive and of the right size)."""
    t = object.__new__(BatchedTensor)
    t._value = value
    t._bdim = bdim
    t._level = level
    return t
