"""A strict duck-array backend for tests: ``DuckArray``, CuPy's contract on a hidden ndarray.

A rule that serves NumPy must also serve CuPy, whose arrays NumPy hands every call through
``__array_function__`` / ``__array_ufunc__``. No GPU runs here, so this type plays CuPy: it
keeps its values in a hidden ``numpy.ndarray`` and does every NumPy function, ufunc, method and
operator on it, but refuses what CuPy refuses or what would only work on the host:

- ``__array__`` raises TypeError (so ``np.asarray(d)``, ``np.array(d)`` and every implicit
  conversion do); there is no ``__array_interface__``, ``__array_struct__`` nor buffer
  protocol (``memoryview(d)`` raises).
- ``item()``, ``tolist()``, ``tobytes()``, ``int()``, ``float()``, ``complex()`` and
  ``__index__`` raise TypeError. CuPy allows the first ones on a size-1 array through a device
  synchronisation; this backend is stricter, so that no rule reads a value on the host
  unnoticed. ``bool()`` of a size-1 array is allowed as in CuPy: it is the one host read that
  data-dependent control flow (``BatchedTensor.__bool__``) needs.
- A NumPy function, ufunc or operator called with a ``DuckArray`` and a plain ndarray (a
  0-d one included) raises TypeError, as CuPy does; Python and NumPy scalars mix freely. The
  exceptions are CuPy's host-to-device copies: the key of ``d[key]`` / ``d[key] = v`` (and
  ``ufunc.at``'s indices) may hold lists and plain ndarrays, and a creation function called
  with ``like=d`` takes host data (``np.asarray(host, like=d)``). (Stricter than CuPy: its
  ``take`` and some other functions copy host index arrays too; here they raise.)
- Creation functions honour ``like=``: NumPy forwards ``np.zeros(3, like=d)`` to
  ``__array_function__``, which makes a ``DuckArray``. Without ``like=`` they make plain
  ndarrays, which then fail at the first mixing.
- Results that NumPy gives as NumPy scalars (``np.sum(d)``) are 0-d ``DuckArray``s, as CuPy
  returns 0-d arrays.
- There is no ``flags.writeable`` and no read-only array: CuPy has neither (``flags`` has
  ``c_contiguous``, ``f_contiguous`` and ``owndata``).

It has CuPy's ndarray surface: ``shape``, ``ndim``, ``dtype``, ``size``, ``itemsize``,
``nbytes``, ``strides``, ``flags``, ``base`` (the owner's DuckArray, one object), ``T``,
``mT``, ``real``, ``imag``, ``flat``, ``len()``, iteration, ``in``, indexing and assignment,
the operators, and CuPy's methods (``reshape``,
``astype``, ``copy``, ``transpose``, ``sum``, ...), each done by the hidden array's own method.
A method meeting a ``BatchedTensor`` argument raises TypeError, as CuPy's would; the NumPy
functions and operators return ``NotImplemented`` instead so that the ``BatchedTensor``
dispatches.

``from_numpy`` and ``to_numpy`` are the test-only transfers (CuPy's ``asarray`` / ``.get()``);
no method gives the hidden array away.
"""

from __future__ import annotations

import operator
import weakref
from typing import Any, Callable

import numpy as np

from batchtensor.registry import register_physical_type
from batchtensor.tensor import BatchedTensor, is_plain_array

__all__ = ["DuckArray", "from_numpy", "to_numpy", "is_duck", "DuckMixingError",
           "DuckConversionError"]


class DuckMixingError(TypeError):
    """A NumPy call mixed a ``DuckArray`` with a plain ndarray (CuPy raises TypeError too)."""


class DuckConversionError(TypeError):
    """A ``DuckArray`` was asked for a host value (NumPy array, Python scalar, bytes)."""


_CONVERSION = ("DuckArray (the strict test backend, standing in for CuPy): {what} would copy "
               "device data to the host. Batch rules must call NumPy functions on the physical "
               "value and create arrays with like=; they never convert a value.")

#: Creation functions NumPy forwards through ``like=``; those taking array data may take host data.
#: (By name: while a vmap runs, ``numpy.asarray`` and its kin are batchtensor's stand-ins.)
_HOST_DATA = {"array", "asarray", "asanyarray", "ascontiguousarray", "asfortranarray", "require",
              "frombuffer", "fromiter", "fromstring", "loadtxt", "genfromtxt", "fromfile"}


def _is_plain(x: Any) -> bool:
    return is_plain_array(x)  # an ndarray (a subclass too), not a BatchedTensor


def _foreign(x: Any) -> bool:
    """An operand that has protocols of its own (a BatchedTensor, a dask array): it decides."""
    t = type(x)
    if t is DuckArray or t is np.ndarray:
        return False
    return t is BatchedTensor or (
        not isinstance(x, (np.ndarray, np.generic))
        and (hasattr(t, "__array_function__") or hasattr(t, "__array_ufunc__")))


def _mixing(where: str, x: Any) -> DuckMixingError:
    return DuckMixingError(
        f"DuckArray (the strict test backend, standing in for CuPy): {where} was called with a "
        f"plain {type(x).__name__} of shape {getattr(x, 'shape', '?')} beside a DuckArray; CuPy "
        f"refuses to mix host and device arrays. Create the array with like=<physical value>.")


def _unwrap(obj: Any, where: str, host_ok: bool = False) -> Any:
    """``obj`` with each DuckArray replaced by its hidden array, through lists, tuples and dicts.
    A plain ndarray raises ``DuckMixingError`` unless ``host_ok``."""
    t = type(obj)
    if t is DuckArray:
        return obj._a
    if t is list or t is tuple:
        return t(_unwrap(v, where, host_ok) for v in obj)
    if t is dict:
        return {k: _unwrap(v, where, host_ok) for k, v in obj.items()}
    if not host_ok and _is_plain(obj):
        raise _mixing(where, obj)
    return obj


def _has_foreign(obj: Any) -> bool:
    t = type(obj)
    if t is list or t is tuple:
        return any(_has_foreign(v) for v in obj)
    if t is dict:
        return any(_has_foreign(v) for v in obj.values())
    return _foreign(obj)


def _has_duck(obj: Any) -> bool:
    t = type(obj)
    if t is DuckArray:
        return True
    if t is list or t is tuple:
        return any(_has_duck(v) for v in obj)
    if t is dict:
        return any(_has_duck(v) for v in obj.values())
    return False


def _wrap(obj: Any, known: dict[int, DuckArray]) -> Any:
    """Results back on the device: ndarrays and NumPy scalars become DuckArrays (an input's own
    hidden array becomes that input again, as ``out=`` returns ``out``)."""
    if isinstance(obj, np.ndarray):
        if type(obj) is not np.ndarray:
            obj = obj.view(np.ndarray)
        d = known.get(id(obj))
        return d if d is not None else DuckArray(obj)
    if isinstance(obj, np.generic):
        return DuckArray(np.asarray(obj))
    t = type(obj)
    if t is list:
        return [_wrap(v, known) for v in obj]
    if isinstance(obj, tuple):
        items = [_wrap(v, known) for v in obj]
        return t(*items) if hasattr(obj, "_fields") else t(items)
    return obj


def _known(obj: Any, acc: dict[int, DuckArray]) -> dict[int, DuckArray]:
    t = type(obj)
    if t is DuckArray:
        acc[id(obj._a)] = obj
    elif t is list or t is tuple:
        for v in obj:
            _known(v, acc)
    elif t is dict:
        for v in obj.values():
            _known(v, acc)
    return acc


def _index(key: Any) -> Any:
    """An index with DuckArrays unwrapped; lists and plain ndarrays pass (CuPy copies them to
    the device), objects with protocols of their own (a BatchedTensor) raise."""
    if _has_foreign(key):
        raise TypeError(f"DuckArray: an index holding a {_first_foreign(key)} is not supported "
                        f"(CuPy cannot convert it either)")
    return _unwrap(key, "indexing", host_ok=True)


def _first_foreign(obj: Any) -> str:
    t = type(obj)
    if t is list or t is tuple:
        return next(_first_foreign(v) for v in obj if _has_foreign(v))
    if t is dict:
        return next(_first_foreign(v) for v in obj.values() if _has_foreign(v))
    return type(obj).__name__


class _Flags:
    """CuPy's ``ndarray.flags``: ``c_contiguous``, ``f_contiguous``, ``owndata``; no
    ``writeable`` (CuPy has no read-only arrays)."""

    __slots__ = ("c_contiguous", "f_contiguous", "owndata")

    def __init__(self, f: Any) -> None:
        self.c_contiguous = bool(f.c_contiguous)
        self.f_contiguous = bool(f.f_contiguous)
        self.owndata = bool(f.owndata)

    def __getitem__(self, name: str) -> bool:
        keys = {"C_CONTIGUOUS": "c_contiguous", "F_CONTIGUOUS": "f_contiguous",
                "OWNDATA": "owndata"}
        return bool(getattr(self, keys[name]))

    def __repr__(self) -> str:
        return (f"  C_CONTIGUOUS : {self.c_contiguous}\n  F_CONTIGUOUS : {self.f_contiguous}\n"
                f"  OWNDATA : {self.owndata}")


class _FlatIter:
    """CuPy's ``ndarray.flat``: indexing the array in C order, as a 1-d one."""

    __slots__ = ("_d",)

    def __init__(self, d: DuckArray) -> None:
        self._d = d

    def __len__(self) -> int:
        return self._d.size

    def __getitem__(self, key: Any) -> DuckArray:
        return _wrap(self._d._a.flat[_index(key)], {})

    def __setitem__(self, key: Any, value: Any) -> None:
        if _foreign(value):
            raise TypeError(f"DuckArray.flat: cannot write a {type(value).__name__}")
        self._d._a.flat[_index(key)] = _unwrap(value, "assignment into DuckArray.flat")


def _method(name: str) -> Callable[..., Any]:
    def method(self: DuckArray, *args: Any, **kwargs: Any) -> Any:
        where = f"DuckArray.{name}"
        if _has_foreign((args, kwargs)):
            raise TypeError(f"{where}: an argument of type {_first_foreign((args, kwargs))} is "
                            f"not supported (CuPy's methods take CuPy arrays and scalars)")
        known = _known((self, args, kwargs), {})
        res = getattr(self._a, name)(*_unwrap(args, where), **_unwrap(kwargs, where))
        return _wrap(res, known)

    method.__name__ = name
    method.__doc__ = f"``ndarray.{name}`` on the hidden array."
    return method


def _binary(op: Callable[[Any, Any], Any], reflected: bool = False) -> Callable[..., Any]:
    def method(self: DuckArray, other: Any) -> Any:
        t = type(other)
        if t is DuckArray:
            o = other._a
        elif isinstance(other, (int, float, complex, bool, np.generic)):
            o = other
        elif _is_plain(other):
            raise _mixing(f"the operator {op.__name__}", other)
        else:
            return NotImplemented
        res = op(o, self._a) if reflected else op(self._a, o)
        return _wrap(res, {})

    return method


def _inplace(op: Callable[[Any, Any], Any], ufunc: np.ufunc) -> Callable[..., Any]:
    def method(self: DuckArray, other: Any) -> Any:
        t = type(other)
        if t is DuckArray:
            o = other._a
        elif isinstance(other, (int, float, complex, bool, np.generic)):
            o = other
        elif _is_plain(other):
            raise _mixing(f"the operator {op.__name__}", other)
        else:
            # a BatchedTensor: the ufunc with out=self, which the other operand's protocol
            # answers (a write of a batched value into this array is its error to raise)
            return ufunc(self, other, out=(self,))
        self._a = op(self._a, o)  # an ndarray's in-place operator returns itself
        return self

    return method


#: id(ndarray that owns its memory) -> the DuckArray that wraps it
_OWNERS: weakref.WeakValueDictionary[int, DuckArray] = weakref.WeakValueDictionary()


def _owner(a: np.ndarray, d: DuckArray) -> DuckArray | None:
    """The ``base`` of a new DuckArray ``d`` on ``a``: None if ``d`` is the first on memory
    ``a`` owns, else the DuckArray on the owner (made once, kept alive by its views)."""
    root: Any = a
    while type(root) is np.ndarray and root.base is not None:
        root = root.base
    if type(root) is not np.ndarray:
        return None  # memory NumPy does not own (a buffer): this array stands for its owner
    owner = _OWNERS.get(id(root))
    if owner is not None and owner._a is root:
        return owner
    if root is a:
        _OWNERS[id(a)] = d
        return None
    return DuckArray(root)


def _fromfunction(function: Callable[..., Any], shape: Any, *, dtype: Any = float,
                  **kwargs: Any) -> Any:
    """CuPy's ``fromfunction``: ``function`` called with device index arrays."""
    return function(*(_wrap(i, {}) for i in np.indices(shape, dtype=dtype)), **kwargs)


class DuckArray:
    """An array that behaves as CuPy's ``ndarray`` towards NumPy, on a hidden ``ndarray``.

    Make one with ``from_numpy`` (or a creation function with ``like=``); read it back with
    ``to_numpy``. See the module docstring for what it refuses and why.
    """

    __slots__ = ("_a", "_base", "__weakref__")
    __hash__ = None  # type: ignore[assignment]  # unhashable, as ndarray

    _a: np.ndarray
    _base: DuckArray | None

    def __init__(self, a: np.ndarray) -> None:
        if type(a) is not np.ndarray:
            raise TypeError(f"DuckArray wraps a numpy.ndarray, got {type(a).__name__}")
        self._a = a
        self._base = _owner(a, self)

    # ---- metadata ---------------------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        return self._a.shape

    @shape.setter
    def shape(self, value: Any) -> None:
        self._a.shape = value

    @property
    def ndim(self) -> int:
        return self._a.ndim

    @property
    def dtype(self) -> np.dtype:
        return self._a.dtype

    @property
    def size(self) -> int:
        return self._a.size

    @property
    def itemsize(self) -> int:
        return self._a.itemsize

    @property
    def nbytes(self) -> int:
        return self._a.nbytes

    @property
    def strides(self) -> tuple[int, ...]:
        return self._a.strides

    @property
    def flags(self) -> _Flags:
        return _Flags(self._a.flags)

    @property
    def base(self) -> DuckArray | None:
        """The DuckArray that owns the memory a view shows, always the same object (as
        CuPy's ``base``); None for an array that owns its memory."""
        return self._base

    @property
    def T(self) -> DuckArray:
        return DuckArray(self._a.T)

    @property
    def mT(self) -> DuckArray:
        return DuckArray(self._a.mT)

    @property
    def real(self) -> DuckArray:
        return DuckArray(self._a.real)

    @real.setter
    def real(self, value: Any) -> None:
        self._a.real = _unwrap(value, "DuckArray.real")

    @property
    def imag(self) -> DuckArray:
        return DuckArray(self._a.imag)

    @imag.setter
    def imag(self, value: Any) -> None:
        self._a.imag = _unwrap(value, "DuckArray.imag")

    @property
    def flat(self) -> _FlatIter:
        return _FlatIter(self)

    def __repr__(self) -> str:
        return f"DuckArray(shape={self.shape}, dtype={self.dtype})"

    def __len__(self) -> int:
        return len(self._a)

    def __contains__(self, value: Any) -> bool:
        return bool(np.any(self == value))

    def __iter__(self) -> Any:
        for i in range(len(self._a)):
            yield DuckArray(self._a[i, ...])

    # ---- host conversions: refused ----------------------------------------------------------
    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        raise DuckConversionError(_CONVERSION.format(what="converting to a NumPy array "
                                                          "(np.asarray, np.array, __array__)"))

    def __bool__(self) -> bool:
        return bool(self._a)  # size 1 only, as NumPy and CuPy (a device synchronisation)

    def __int__(self) -> int:
        raise DuckConversionError(_CONVERSION.format(what="int()"))

    def __float__(self) -> float:
        raise DuckConversionError(_CONVERSION.format(what="float()"))

    def __complex__(self) -> complex:
        raise DuckConversionError(_CONVERSION.format(what="complex()"))

    def __index__(self) -> int:
        raise DuckConversionError(_CONVERSION.format(what="using it as a Python int "
                                                          "(__index__)"))

    def item(self, *args: Any) -> Any:
        """Refused: a host read."""
        raise DuckConversionError(_CONVERSION.format(what=".item()"))

    def tolist(self) -> Any:
        """Refused: a host read."""
        raise DuckConversionError(_CONVERSION.format(what=".tolist()"))

    def tobytes(self, order: str = "C") -> bytes:
        """Refused: a host read."""
        raise DuckConversionError(_CONVERSION.format(what=".tobytes()"))

    def __reduce__(self) -> Any:
        raise DuckConversionError(_CONVERSION.format(what="pickling"))

    def __copy__(self) -> DuckArray:
        return DuckArray(self._a.copy())

    def __deepcopy__(self, memo: Any) -> DuckArray:
        return DuckArray(self._a.copy())

    # ---- NumPy protocols --------------------------------------------------------------------
    def __array_function__(self, func: Any, types: Any, args: tuple, kwargs: dict) -> Any:
        for t in types:
            if t is not DuckArray and (t is BatchedTensor or not issubclass(t, np.ndarray)):
                return NotImplemented  # a BatchedTensor, a dask array: theirs to dispatch
        if getattr(func, "__name__", None) == "fromfunction":
            return _fromfunction(*args, **kwargs)
        where = getattr(func, "__name__", repr(func))
        if _has_foreign((args, kwargs)):
            # an argument NumPy does not dispatch on (np.sum's where=) holds a BatchedTensor:
            # CuPy's function would meet it, and cannot take it
            raise TypeError(f"DuckArray: np.{where} got a {_first_foreign((args, kwargs))} in "
                            f"an argument NumPy does not dispatch on; CuPy cannot take it")
        host_ok = where in _HOST_DATA and not _has_duck((args, kwargs))  # like=: host to device
        known = _known((args, kwargs), {})
        res = func(*_unwrap(args, f"np.{where}", host_ok), **_unwrap(kwargs, f"np.{where}",
                                                                         host_ok))
        return _wrap(res, known)

    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
        if _has_foreign((inputs, kwargs)):
            return NotImplemented
        where = f"np.{ufunc.__name__}" + ("" if method == "__call__" else f".{method}")
        known = _known((inputs, kwargs), {})
        if method == "at" and len(inputs) >= 2:  # the indices: an index, as CuPy takes it
            inputs = (_unwrap(inputs[0], where), _index(inputs[1]),
                      *_unwrap(inputs[2:], where))
        else:
            inputs = _unwrap(inputs, where)
        res = getattr(ufunc, method)(*inputs, **_unwrap(kwargs, where))
        return _wrap(res, known)

    # ---- indexing -----------------------------------------------------------------------------
    def __getitem__(self, key: Any) -> DuckArray:
        return _wrap(self._a[_index(key)], {})

    def __setitem__(self, key: Any, value: Any) -> None:
        if _foreign(value):
            raise TypeError(f"DuckArray: cannot write a {type(value).__name__} into a DuckArray "
                            f"(CuPy cannot convert it either)")
        self._a[_index(key)] = _unwrap(value, "assignment into a DuckArray")

    # ---- operators ----------------------------------------------------------------------------
    __add__, __radd__ = _binary(operator.add), _binary(operator.add, True)
    __sub__, __rsub__ = _binary(operator.sub), _binary(operator.sub, True)
    __mul__, __rmul__ = _binary(operator.mul), _binary(operator.mul, True)
    __truediv__, __rtruediv__ = _binary(operator.truediv), _binary(operator.truediv, True)
    __floordiv__, __rfloordiv__ = _binary(operator.floordiv), _binary(operator.floordiv, True)
    __mod__, __rmod__ = _binary(operator.mod), _binary(operator.mod, True)
    __divmod__, __rdivmod__ = _binary(divmod), _binary(divmod, True)
    __pow__, __rpow__ = _binary(operator.pow), _binary(operator.pow, True)
    __matmul__, __rmatmul__ = _binary(operator.matmul), _binary(operator.matmul, True)
    __and__, __rand__ = _binary(operator.and_), _binary(operator.and_, True)
    __or__, __ror__ = _binary(operator.or_), _binary(operator.or_, True)
    __xor__, __rxor__ = _binary(operator.xor), _binary(operator.xor, True)
    __lshift__, __rlshift__ = _binary(operator.lshift), _binary(operator.lshift, True)
    __rshift__, __rrshift__ = _binary(operator.rshift), _binary(operator.rshift, True)
    __eq__ = _binary(operator.eq)  # type: ignore[assignment]
    __ne__ = _binary(operator.ne)  # type: ignore[assignment]
    __lt__, __le__ = _binary(operator.lt), _binary(operator.le)
    __gt__, __ge__ = _binary(operator.gt), _binary(operator.ge)
    __iadd__ = _inplace(operator.iadd, np.add)
    __isub__ = _inplace(operator.isub, np.subtract)
    __imul__ = _inplace(operator.imul, np.multiply)
    __itruediv__ = _inplace(operator.itruediv, np.true_divide)
    __ifloordiv__ = _inplace(operator.ifloordiv, np.floor_divide)
    __imod__ = _inplace(operator.imod, np.remainder)
    __ipow__ = _inplace(operator.ipow, np.power)
    __imatmul__ = _inplace(operator.imatmul, np.matmul)
    __iand__ = _inplace(operator.iand, np.bitwise_and)
    __ior__ = _inplace(operator.ior, np.bitwise_or)
    __ixor__ = _inplace(operator.ixor, np.bitwise_xor)
    __ilshift__ = _inplace(operator.ilshift, np.left_shift)
    __irshift__ = _inplace(operator.irshift, np.right_shift)

    def __neg__(self) -> DuckArray:
        return _wrap(-self._a, {})

    def __pos__(self) -> DuckArray:
        return _wrap(+self._a, {})

    def __abs__(self) -> DuckArray:
        return _wrap(abs(self._a), {})

    def __invert__(self) -> DuckArray:
        return _wrap(~self._a, {})

    # ---- CuPy's ndarray methods, each the hidden array's own ------------------------------
    all = _method("all")
    any = _method("any")
    argmax = _method("argmax")
    argmin = _method("argmin")
    argpartition = _method("argpartition")
    argsort = _method("argsort")
    astype = _method("astype")
    choose = _method("choose")
    clip = _method("clip")
    compress = _method("compress")
    conj = _method("conj")
    conjugate = _method("conjugate")
    copy = _method("copy")
    cumprod = _method("cumprod")
    cumsum = _method("cumsum")
    diagonal = _method("diagonal")
    dot = _method("dot")
    fill = _method("fill")
    flatten = _method("flatten")
    max = _method("max")
    mean = _method("mean")
    min = _method("min")
    nonzero = _method("nonzero")
    partition = _method("partition")
    prod = _method("prod")
    put = _method("put")
    ravel = _method("ravel")
    repeat = _method("repeat")
    reshape = _method("reshape")
    round = _method("round")
    sort = _method("sort")
    squeeze = _method("squeeze")
    std = _method("std")
    sum = _method("sum")
    swapaxes = _method("swapaxes")
    take = _method("take")
    trace = _method("trace")
    transpose = _method("transpose")
    var = _method("var")
    view = _method("view")


register_physical_type(DuckArray)


def is_duck(x: Any) -> bool:
    """Whether ``x`` is a ``DuckArray``."""
    return type(x) is DuckArray


def from_numpy(a: Any) -> DuckArray:
    """``a`` on the duck backend (a host-to-device copy in CuPy's terms; here the same memory,
    strides kept, so that non-contiguous inputs stay non-contiguous)."""
    if isinstance(a, np.generic):
        a = np.asarray(a)
    if not isinstance(a, np.ndarray):
        raise TypeError(f"from_numpy takes a NumPy array, got {type(a).__name__}")
    return DuckArray(a if type(a) is np.ndarray else a.view(np.ndarray))


def to_numpy(d: DuckArray) -> np.ndarray:
    """The hidden array of ``d`` (the test-only device-to-host read, CuPy's ``.get()``)."""
    if type(d) is not DuckArray:
        raise TypeError(f"to_numpy takes a DuckArray, got {type(d).__name__}")
    return d._a

