"""``float(x)``, ``int(x)`` and ``math.sqrt(x)`` of a batched value, kept batched: a weak
float (int) per example.

Library code converts results to Python floats (scikit-learn's metrics: ``return
float(score)``, ``precision = float(_nanaverage(...))``; ``scipy.spatial.distance.cosine``,
``math.sqrt(uu * vv)``; ``tn = int(tn)``). The builtin must return an exact ``float`` (CPython
turns even a float subclass returned by ``__float__`` into one), so no batched result can come
through it: the conversion refuses and the function reruns per example. vmap learns from that
refusal (``learn_from``) where the refusing call is ``float(...)``, ``int(...)`` or
``math.<name>(...)`` (``_MATH_NAMES``) by those names, which mean the builtins and the module
``math``, and its next passes swap in callables of their own; for a value batched at a level
open on this thread whose examples differ they return a ``WeakFloat`` / ``WeakInt``, for
anything else (also a value every example holds alike: the builtin's common value) they are
the builtins. Two ways, both undone after each pass, also on error, and counted, so that passes
on several threads share one swap (``enter`` / ``leave``):

- a module whose code uses the name ``float`` for nothing but calls (every ``LOAD_GLOBAL float``
  is a callee: no ``isinstance(v, float)``, ``dtype=float``, ``float.fromhex``) gets a
  ``float`` of this module in its globals: every function of the module calls it;
- otherwise the function that made the call (``_Patch``): its function objects get, for the
  length of the pass, a copy of its code in which each *callee* load of ``float`` / ``int`` and
  each ``math`` of a ``math.<name>(...)`` call loads this module's object as a constant
  (``_rewritten``: same length, offsets, lines and exception table). Its other uses of the
  names (``isinstance(v, float)``, ``dtype=float``) and every other function of the module
  read the builtins: the module's globals never change. A comprehension or nested function,
  made anew by each call, is reached through the function that makes it.

Why not one object for every use of the name: ``type(v) is float``, ``dtype is float``,
``{float: ...}`` and ``np.dtype(float)`` ask for the builtin's identity, which no stand-in has
(a float subclass whose metaclass answers ``isinstance`` still gives ``np.dtype(F)`` object, and
``F is float`` False). Why not a copy of the function with globals of its own: a copy of the
module's dict goes stale (its ``global`` writes, later rebinding), and reaching the copy means
rebinding a name in the module or a decorator's closure. Swapping ``__code__`` changes only the
function object vmap learnt, and the rewritten code, also where a frame keeps running it after
the pass or another thread calls it meanwhile, computes the builtins' results (its float and int
are the builtins for every value not batched at a level open on the calling thread). The cost:
one function lookup (``gc.get_referrers``, once per learnt function) and, per vmap call, an
assignment of ``__code__`` on entering and one on leaving, about as much as the module's swap.

A ``WeakFloat`` holds a 0-d float64 BatchedTensor (one value per example) and has the surface
of a Python float, restricted to what gives the loop's result exactly; anything else refuses
with a conversion error (a rerun reason: ``errors.rerun_reason``), so vmap reruns the function
per example and the loop's own behaviour follows:

- ``bool(w)``: per example (examples that disagree go to vmap's groups, as ``if x > 0`` does);
- returned from the function, alone or in a tuple, list or dict: the loop stacks the Python
  floats into a float64 array (``as_batched``, at the output's unwrapping);
- ``+ - *`` and ``/``, ``-w``, ``+w``, ``abs(w)`` with a Python float, bool, int (up to 2**53
  in magnitude: exact as a float) or another WeakFloat: IEEE float64 per example *is* Python's
  float arithmetic (computed with NumPy's errors ignored: Python's floats neither warn nor
  raise), but for ``/``, where Python raises ZeroDivisionError: refused when a divisor is 0 for
  any example. ``%``, ``//``, ``**`` and ``divmod`` (Python's own rules: errors, complex
  results) refuse. Results are WeakFloats;
- comparisons with those: a ``WeakBool``, whose only uses are ``bool()`` and being returned
  (a Python bool in the loop: its arithmetic is not ``np.bool_``'s);
- NumPy ufuncs (``__call__``) with arrays, NumPy scalars and batched values, and the operators
  ``w + arr`` / ``arr + w``: NEP 50 treats a Python float as weak; ``ufunc.resolve_dtypes`` with
  ``float`` as its entry says which dtype NumPy casts it to, the value is cast to it and the
  ufunc called (checked: its result dtypes must be the resolved ones). A ufunc of weak operands
  only (``np.sqrt(w)``) gives NumPy float64 scalars, strong, as in the loop. ``**`` with arrays
  refuses too (``arr ** 0.5`` is ``np.sqrt`` in ndarray's operator);
- ``.real`` (itself), ``.imag`` (0.0), ``.conjugate()`` (itself); ``isinstance(w, float)`` is
  True (``__class__``), as it is in the loop, and so is ``isinstance(w, numbers.Real)``;
- ``math.<name>(w)`` in a learnt function, of a weak float or int or a value batched as
  ``float()`` takes it: a weak float per example. ``sqrt`` and ``fabs`` are NumPy's (IEEE's
  correctly rounded square root is the C library's, bit for bit; refused where an example is
  negative: Python raises ValueError, and the rerun raises the loop's own); ``exp``, ``log``,
  ``sin``, ``erf``, ``gamma``... call ``math``'s own function on each example's value (NumPy's
  need not round as the C library does), refused where one raises (``math.log(0.0)``,
  ``math.exp(1000.0)``); ``isnan``, ``isinf``, ``isfinite`` give a WeakBool. Other arguments,
  and ``math.log(x, base)``, are ``math``'s.

``int(x)`` gives a ``WeakInt``: one Python int per example, held as int64, of bools, integers
and finite floats (truncated toward zero) whose every example fits in int64 (else the builtin:
``int(nan)`` raises in the rerun, as in the loop). Python's ints do not overflow: ``+ - *`` of
ints are int64's where a bound of the operands' magnitudes keeps every result in range, refused
otherwise; ``-i`` and ``abs(i)`` refuse for int64's least value; with a float (or a weak float)
Python rounds the int to the nearest float, as NumPy's cast does, and the float's arithmetic
follows; ``i / j`` of ints is float64's division where both are exact as floats (up to 2**53:
Python divides the exact ints); comparisons with ints are int64's, with floats float64's where
the int is exact as a float (Python compares an int and a float exactly). ``float(i)`` is a
weak float, ``isinstance(i, int)`` True. ``//``, ``%``, ``**``, bit operations, ``__index__``
(``range(i)``, ``lst[i]``) and NumPy's ufuncs refuse (a Python int's NEP 50 casts check its
value against the array's dtype).

Everything else refuses: NumPy's functions (``__array_function__``), conversions (``__array__``,
``__float__``, ``__int__``, ``__index__``, ``math.*`` outside a learnt function), ``round``,
``str`` / ``repr`` / ``format``, ``hash``, pickling and copies, the float methods. ``__array__``,
``__array_function__``, ``__array_ufunc__`` and ``__index__`` (which a Python float lacks) are
visible on the class, where NumPy's protocols look them up, but refuse when read from the
value: ``hasattr(w, "__array__")``, which is False for a float, refuses rather than answer True.

A ufunc reached from batchtensor's own code (a batch rule that got ``w`` as a plain argument
and calls a ufunc on physical values, whose batch axis is data there) refuses: the frames
between the call and the innermost pass of vmap must be the function's own.

``type(w)`` is WeakFloat (WeakInt): code that tests ``type(v) is float`` sees no float where
the loop does. A learnt module cannot name ``float`` there, but a learnt function can, as can
code the value flows into, or ask without the name (``type(s) is type(0.0)``): a known
difference, documented in docs/running_existing_code.md. ``type(w)(...)`` refuses.
"""

from __future__ import annotations

import dis
import gc
import math
import sys
import threading
import tokenize
import types
from typing import Any, Callable, NoReturn, cast

import numpy as np

from .config import config
from .errors import note_refusal
from .levels import Level, active_levels
from .registry import slots
from .tensor import BatchedTensor, new_batched

__all__ = ["WeakFloat", "WeakInt", "WeakBool", "as_batched", "learnt_floats", "learn_from",
           "enter", "leave"]

_NOT_USER = ("numpy", "batchtensor")
_EXACT_INT = 2 ** 53  # Python ints up to this magnitude are exact as floats
_F8 = np.dtype(np.float64)


# ---- refusals -----------------------------------------------------------------------------------
def _refuse(v: Any, use: str, what: str | None = None) -> NoReturn:
    """A conversion error for ``use`` of a weak value holding the BatchedTensor ``v``: a rerun
    reason (``errors.rerun_reason``) for ``v``'s level, noted where the function's own code
    would catch it (``dispatch.note_if_caught``)."""
    level = v._level
    kind = "int" if v.dtype.kind == "i" else "float"
    what = what or f"{kind}() per example used in {use}"
    err: Any = TypeError(
        f"{use}: {kind}() on a BatchedTensor gave a Python {kind} per example, which supports "
        f"only bool(), being returned, + - * / and comparisons with Python numbers"
        f"{', and NumPy ufuncs' if kind == 'float' else ''}; anything else needs one Python "
        f"{kind} per run, so vmap reruns the function once per example")
    err.batchtensor_target = None
    err.batchtensor_conversion = True
    err.batchtensor_level = level
    err.batchtensor_what = what
    note_refusal(level, what)
    slots.note_if_caught(level, what)
    raise err


class _TypeOnly:
    """A method NumPy looks up on the class (``__array_ufunc__``, ``__array_function__``,
    ``__array__``; Python's ``__index__`` slot) that refuses when read from the value
    (``hasattr(w, "__array__")``, ``np.asarray(w)``, ``operator.index(w)``)."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn
        self.name = fn.__name__

    def __get__(self, obj: Any, owner: Any = None) -> Any:
        if obj is None:
            return self.fn
        _refuse(obj._v, self.name)


def _refusing(use: str, what: str | None = None) -> Any:
    def refuse(self: Any, *args: Any, **kwargs: Any) -> NoReturn:
        _refuse(self._v, use, what)

    refuse.__name__ = use
    return refuse


# ---- the operands -------------------------------------------------------------------------------
def _python_operand(other: Any) -> Any:
    """``other`` as a float64 operand of Python's float arithmetic: a Python float, a
    BatchedTensor (a WeakFloat's value), or None where Python's rules are not IEEE float64's."""
    t = type(other)
    if t is WeakFloat:
        return other._v
    if t is float:
        return other
    if (t is int or t is bool) and -_EXACT_INT <= other <= _EXACT_INT:
        return float(other)
    if t is WeakInt and _magnitude(other._v) <= _EXACT_INT:
        return other._v.astype(np.float64)
    return None


def _magnitude(v: Any) -> int:
    """The largest magnitude of any example of ``v`` (a Python int, or a BatchedTensor of
    integers of any level: its physical values), as a Python int."""
    if type(v) is int:
        return abs(v)
    while type(v) is BatchedTensor:
        v = v._value
    return max(abs(int(v.max())), abs(int(v.min()))) if v.size else 0


def _array_operand(other: Any) -> bool:
    """An operand NumPy's protocols take: a NumPy array, scalar or a batched value."""
    t = type(other)
    return t is BatchedTensor or t is np.ndarray or issubclass(t, np.generic)


def _has_zero(v: Any) -> bool:
    """Whether a divisor is 0 for any example (of any level): Python raises there."""
    if type(v) is float:
        return v == 0.0
    return _any_example(v, np.equal)


def _any_example(v: BatchedTensor, compare: np.ufunc) -> bool:
    """Whether ``compare(value, 0)`` holds for any example of ``v`` (of any level)."""
    while type(v) is BatchedTensor:
        v = v._value
    return bool(compare(v, 0).any())


def _arithmetic(ufunc: np.ufunc, symbol: str, reflected: bool = False) -> Callable:
    def op(self: WeakFloat, other: Any) -> Any:
        o = _python_operand(other)
        if o is None:
            if _array_operand(other) and ufunc is not np.power:
                return ufunc(other, self) if reflected else ufunc(self, other)
            _refuse(self._v, f"w {symbol} {type(other).__name__}")
        divisor = self._v if reflected else o
        if ufunc is np.true_divide and _has_zero(divisor):
            _refuse(self._v, "a division by zero (Python raises ZeroDivisionError)")
        with np.errstate(all="ignore"):  # Python's float arithmetic neither warns nor raises
            res = ufunc(o, self._v) if reflected else ufunc(self._v, o)
        return WeakFloat(res)

    op.__name__ = f"__{'r' if reflected else ''}{ufunc.__name__}__"
    return op


def _comparison(ufunc: np.ufunc, symbol: str) -> Callable:
    def op(self: WeakFloat, other: Any) -> Any:
        o = _python_operand(other)
        if o is None:
            if _array_operand(other):
                return ufunc(self, other)
            _refuse(self._v, f"w {symbol} {type(other).__name__}")
        return WeakBool(ufunc(self._v, o))

    op.__name__ = f"__{ufunc.__name__}__"
    return op


# ---- NumPy's protocols --------------------------------------------------------------------------
def _called_from_user(levels: tuple[Level, ...]) -> bool:
    """Whether the frames from the caller up to the innermost pass of vmap are the function's
    own (NumPy's and this module's aside): not batchtensor's, whose rules compute on physical
    values, in which the batch axis is data."""
    passes = [lv.pass_frame for lv in levels if lv.pass_frame is not None]
    frame: types.FrameType | None = sys._getframe(2)
    while frame is not None:
        if any(frame is p for p in passes):
            return True
        name = str(frame.f_globals.get("__name__", ""))
        if name.startswith("batchtensor") and name != __name__:
            return False
        frame = frame.f_back
    return False


def _array_ufunc(self: Any, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
    """``ufunc(...)`` with WeakFloats among its operands, as NumPy computes it with Python
    floats there (NEP 50: weak, cast to the dtype the ufunc resolves them to)."""
    if type(self) is not WeakFloat or method != "__call__" or kwargs \
            or ufunc in (np.power, np.float_power):
        _refuse(self._v, f"numpy.{ufunc.__name__}{'' if method == '__call__' else '.' + method}"
                         f"{' with keyword arguments' if kwargs else ''}")
    if not _called_from_user(active_levels()):
        _refuse(self._v, f"numpy.{ufunc.__name__} called by batchtensor's own code")
    entries: list[Any] = []
    strong = False
    for x in inputs:
        t = type(x)
        if t is WeakFloat:
            entries.append(float)
        elif t is float or t is complex:
            entries.append(t)
        elif t is int and -_EXACT_INT <= x <= _EXACT_INT:
            entries.append(int)
        elif t is bool:
            entries.append(np.dtype(np.bool_))
        elif _array_operand(x):
            entries.append(x.dtype)
            strong = True
        else:
            _refuse(self._v, f"numpy.{ufunc.__name__} with {t.__name__}")
    if not strong:
        # Python scalars only: NumPy takes the Python floats as float64 (and its result is a
        # float64 scalar, strong), as the value already is
        entries = [_F8 if e is float else e for e in entries]
    try:
        resolved = ufunc.resolve_dtypes(tuple(entries) + (None,) * ufunc.nout)
    except (TypeError, ValueError):
        _refuse(self._v, f"numpy.{ufunc.__name__} of these dtypes")
    args = []
    with np.errstate(under="ignore"):  # (NumPy's cast of a weak float does not report it)
        for x, dt in zip(inputs, resolved):
            if type(x) is WeakFloat:
                x = x._v if dt == _F8 else x._v.astype(dt)
            args.append(x)
    res = ufunc(*args)
    for r, dt in zip(res if ufunc.nout > 1 else (res,), resolved[ufunc.nin:]):
        if getattr(r, "dtype", None) != dt:
            _refuse(self._v, f"numpy.{ufunc.__name__} (its result dtype differs from NumPy's "
                             f"with a Python float)")
    return res


def _array_function(self: Any, func: Any, types: Any, args: Any, kwargs: Any) -> NoReturn:
    _refuse(self._v, f"numpy.{getattr(func, '__name__', func)}")


def _array(self: Any, *args: Any, **kwargs: Any) -> NoReturn:
    _refuse(self._v, "__array__")


def _index(self: Any) -> NoReturn:
    _refuse(self._v, "__index__")


_array_ufunc.__name__ = "__array_ufunc__"
_array_function.__name__ = "__array_function__"
_array.__name__ = "__array__"
_index.__name__ = "__index__"


# ---- the weak values ----------------------------------------------------------------------------
class _Weak:
    """What WeakFloat and WeakBool share: the batched value, NumPy's protocols (refusing
    where not exact), the uses that refuse."""

    __slots__ = ("_v",)
    _DTYPE: np.dtype

    def __init__(self, v: Any) -> None:
        if type(v) is not BatchedTensor or v.ndim or v.dtype != self._DTYPE:
            # ``type(w)(1)`` in the function, which the loop's ``float(1)`` answers: refused
            # (a rerun), as no weak value holds anything but a batch of the loop's values
            if type(v) is BatchedTensor:
                _refuse(v, f"{type(self).__name__}(...)")
            levels = active_levels()
            if not levels:
                raise TypeError(f"{type(self).__name__} values are made by vmap only")
            _refuse(new_batched(np.zeros(1), 0, levels[-1]), f"{type(self).__name__}(...)")
        self._v = v  # a BatchedTensor, 0-d per example: a NumPy scalar per example

    def __bool__(self) -> bool:
        return bool(self._v)  # per example: vmap's groups where the examples disagree

    __array_ufunc__ = _TypeOnly(_array_ufunc)
    __array_function__ = _TypeOnly(_array_function)
    __array__ = _TypeOnly(_array)
    __index__ = _TypeOnly(_index)

    __float__ = _refusing("float()", "float()")
    __int__ = _refusing("int()", "int()")
    __complex__ = _refusing("complex()", "complex()")
    __hash__ = _refusing("hash()")  # type: ignore[assignment]
    __repr__ = _refusing("repr()")
    __str__ = _refusing("str()")
    __format__ = _refusing("format()")
    __round__ = _refusing("round()")
    __trunc__ = _refusing("math.trunc()")
    __floor__ = _refusing("math.floor()")
    __ceil__ = _refusing("math.ceil()")
    __reduce__ = _refusing("pickling")
    __reduce_ex__ = _refusing("pickling")
    __copy__ = _refusing("copy.copy()")
    __deepcopy__ = _refusing("copy.deepcopy()")
    __getnewargs__ = _refusing("pickling")
    __getstate__ = _refusing("pickling")
    __sizeof__ = _refusing("sys.getsizeof()")


class WeakFloat(_Weak):
    """``float(x)`` of a value batched at an open level: one Python float per example, with
    the uses whose result is the loop's (module docstring)."""

    _DTYPE = np.dtype(np.float64)

    __slots__ = ()

    @property  # type: ignore[misc]  # (read-only: object's __class__ can be assigned)
    def __class__(self) -> type:
        """``isinstance(w, float)``, as for each example's Python float; ``type(w)`` stays."""
        return float

    __add__ = _arithmetic(np.add, "+")
    __radd__ = _arithmetic(np.add, "+", reflected=True)
    __sub__ = _arithmetic(np.subtract, "-")
    __rsub__ = _arithmetic(np.subtract, "-", reflected=True)
    __mul__ = _arithmetic(np.multiply, "*")
    __rmul__ = _arithmetic(np.multiply, "*", reflected=True)
    __truediv__ = _arithmetic(np.true_divide, "/")
    __rtruediv__ = _arithmetic(np.true_divide, "/", reflected=True)
    __lt__ = _comparison(np.less, "<")
    __le__ = _comparison(np.less_equal, "<=")
    __gt__ = _comparison(np.greater, ">")
    __ge__ = _comparison(np.greater_equal, ">=")
    __eq__ = _comparison(np.equal, "==")  # type: ignore[assignment]
    __ne__ = _comparison(np.not_equal, "!=")  # type: ignore[assignment]
    __hash__ = _Weak.__hash__  # (a class that defines __eq__ gets None otherwise)
    __floordiv__ = __rfloordiv__ = _refusing("//")
    __mod__ = __rmod__ = _refusing("%")
    __divmod__ = __rdivmod__ = _refusing("divmod()")
    __pow__ = __rpow__ = _refusing("**")

    def __neg__(self) -> WeakFloat:
        return WeakFloat(np.negative(self._v))

    def __pos__(self) -> WeakFloat:
        return self

    def __abs__(self) -> WeakFloat:
        return WeakFloat(np.absolute(self._v))

    @property
    def real(self) -> WeakFloat:
        return self

    @property
    def imag(self) -> float:
        return 0.0

    def conjugate(self) -> WeakFloat:
        return self

    is_integer = _refusing("float.is_integer()")
    hex = _refusing("float.hex()")
    fromhex = _refusing("float.fromhex()")
    as_integer_ratio = _refusing("float.as_integer_ratio()")


class WeakBool(_Weak):
    """A comparison of a WeakFloat: a Python bool per example, for ``bool()`` (``if``,
    ``and``, ``not``) and to be returned; its arithmetic (a Python int's) refuses."""

    _DTYPE = np.dtype(np.bool_)

    __slots__ = ()

    @property  # type: ignore[misc]
    def __class__(self) -> type:
        return bool

    __eq__ = _refusing("== of a comparison")  # type: ignore[assignment]
    __ne__ = _refusing("!= of a comparison")  # type: ignore[assignment]
    __hash__ = _Weak.__hash__


for _name in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "divmod", "and", "or",
              "xor", "lshift", "rshift", "matmul", "lt", "le", "gt", "ge"):
    for _prefix in ("__", "__r"):
        if _prefix == "__r" and _name in ("lt", "le", "gt", "ge"):
            continue
        setattr(WeakBool, f"{_prefix}{_name}__", _refusing(f"arithmetic of a comparison"))
for _name in ("neg", "pos", "abs", "invert"):
    setattr(WeakBool, f"__{_name}__", _refusing("arithmetic of a comparison"))
for _name in ("and", "or", "xor", "lshift", "rshift", "matmul", "invert"):
    for _prefix in ("__", "__r"):
        if not hasattr(WeakFloat, f"{_prefix}{_name}__"):
            setattr(WeakFloat, f"{_prefix}{_name}__", _refusing(f"operator {_name}"))


_INT64 = 2 ** 63  # a WeakInt's values and results stay below this in magnitude


def _int_operand(other: Any) -> Any:
    """``other`` as an operand of Python's int arithmetic: a Python int (or bool) in int64's
    range, a WeakInt's BatchedTensor; else None."""
    t = type(other)
    if t is WeakInt:
        return other._v
    if (t is int or t is bool) and -_INT64 < other < _INT64:
        return int(other)
    return None


def _int_arithmetic(ufunc: np.ufunc, symbol: str, reflected: bool = False) -> Callable:
    """``+ - *`` of Python ints, in int64 where no example can leave its range (Python's ints
    do not overflow: refused where a bound of the operands says one could); with a Python
    float or a WeakFloat, Python converts the int to a float (rounded to nearest, as NumPy's
    int64 to float64 cast) and the WeakFloat's arithmetic follows."""
    def op(self: WeakInt, other: Any) -> Any:
        o = _int_operand(other)
        if o is None:
            if type(other) is float or type(other) is WeakFloat:
                w = WeakFloat(self._v.astype(np.float64))
                return getattr(w, f"__{'r' if reflected else ''}{_DUNDER[ufunc]}__")(other)
            _refuse(self._v, f"i {symbol} {type(other).__name__}")
        a, b = _magnitude(self._v), _magnitude(o)
        if (a * b if ufunc is np.multiply else a + b) >= _INT64:
            _refuse(self._v, f"i {symbol} i where int64 could overflow")
        res = ufunc(o, self._v) if reflected else ufunc(self._v, o)
        return WeakInt(res)

    op.__name__ = f"__{'r' if reflected else ''}{_DUNDER[ufunc]}__"
    return op


_DUNDER: dict[Any, str] = {np.add: "add", np.subtract: "sub", np.multiply: "mul"}


def _int_division(reflected: bool = False) -> Callable:
    """``/``: of two ints, Python's quotient is the exact one rounded: float64's division of
    both as floats where both are exact as floats (up to 2**53); with floats, the float's."""
    def op(self: WeakInt, other: Any) -> Any:
        o = _int_operand(other)
        if o is not None:
            if max(_magnitude(self._v), _magnitude(o)) > _EXACT_INT:
                _refuse(self._v, "i / i beyond 2**53")
            other = float(o) if type(o) is int else WeakFloat(o.astype(np.float64))
        elif type(other) is not float and type(other) is not WeakFloat:
            _refuse(self._v, f"i / {type(other).__name__}")
        w = WeakFloat(self._v.astype(np.float64))
        return w.__rtruediv__(other) if reflected else w.__truediv__(other)

    op.__name__ = f"__{'r' if reflected else ''}truediv__"
    return op


def _int_comparison(ufunc: np.ufunc, symbol: str) -> Callable:
    """Comparisons: with ints in int64; with floats (Python compares an int and a float
    exactly) as float64 where every example's int is exact as a float."""
    def op(self: WeakInt, other: Any) -> Any:
        o = _int_operand(other)
        if o is not None and type(other) is not float:
            return WeakBool(ufunc(self._v, o))
        if (type(other) is float or type(other) is WeakFloat) \
                and _magnitude(self._v) <= _EXACT_INT:
            f: Any = other if type(other) is float else cast(WeakFloat, other)._v
            return WeakBool(ufunc(self._v.astype(np.float64), f))
        _refuse(self._v, f"i {symbol} {type(other).__name__}")

    op.__name__ = f"__{ufunc.__name__}__"
    return op


class WeakInt(_Weak):
    """``int(x)`` of a value batched at an open level: one Python int per example, held as
    int64, with the uses whose result is the loop's (module docstring)."""

    _DTYPE = np.dtype(np.int64)

    __slots__ = ()

    @property  # type: ignore[misc]
    def __class__(self) -> type:
        return int

    __add__ = _int_arithmetic(np.add, "+")
    __radd__ = _int_arithmetic(np.add, "+", reflected=True)
    __sub__ = _int_arithmetic(np.subtract, "-")
    __rsub__ = _int_arithmetic(np.subtract, "-", reflected=True)
    __mul__ = _int_arithmetic(np.multiply, "*")
    __rmul__ = _int_arithmetic(np.multiply, "*", reflected=True)
    __truediv__ = _int_division()
    __rtruediv__ = _int_division(reflected=True)
    __lt__ = _int_comparison(np.less, "<")
    __le__ = _int_comparison(np.less_equal, "<=")
    __gt__ = _int_comparison(np.greater, ">")
    __ge__ = _int_comparison(np.greater_equal, ">=")
    __eq__ = _int_comparison(np.equal, "==")  # type: ignore[assignment]
    __ne__ = _int_comparison(np.not_equal, "!=")  # type: ignore[assignment]
    __hash__ = _Weak.__hash__

    def __neg__(self) -> WeakInt:
        if _magnitude(self._v) >= _INT64:
            _refuse(self._v, "-i of int64's least value")
        return WeakInt(np.negative(self._v))

    def __pos__(self) -> WeakInt:
        return self

    def __abs__(self) -> WeakInt:
        if _magnitude(self._v) >= _INT64:
            _refuse(self._v, "abs(i) of int64's least value")
        return WeakInt(np.absolute(self._v))

    @property
    def real(self) -> WeakInt:
        return self

    @property
    def imag(self) -> int:
        return 0

    def conjugate(self) -> WeakInt:
        return self


for _name in ("floordiv", "mod", "pow", "divmod", "and", "or", "xor", "lshift", "rshift",
              "matmul"):
    for _prefix in ("__", "__r"):
        setattr(WeakInt, f"{_prefix}{_name}__", _refusing(f"operator {_name} of an int"))
for _name in ("invert", "floor", "ceil", "trunc", "round"):
    setattr(WeakInt, f"__{_name}__", _refusing(f"{_name} of an int"))
for _name in ("bit_length", "bit_count", "to_bytes", "from_bytes", "as_integer_ratio",
              "is_integer"):
    setattr(WeakInt, _name, _refusing(f"int.{_name}()"))
for _name in ("numerator", "denominator"):
    setattr(WeakInt, _name, property(_refusing(f"int.{_name}")))


def as_batched(x: Any) -> Any:
    """The batched value of a WeakFloat, WeakInt or WeakBool (a function's output: the loop
    stacks the examples' Python floats into a float64 array, ints into int64, bools into a
    bool array); else ``x``."""
    t = type(x)
    return x._v if t is WeakFloat or t is WeakBool or t is WeakInt else x


# ---- the float() put into a learnt module ------------------------------------------------------
def _weak(x: BatchedTensor) -> WeakFloat | None:
    """``float(x)`` kept batched, where ``x`` is 0-d per example, of a real dtype NumPy holds
    (bool, integer, floating: their conversion to float64 is the builtin's), batched at a level
    this thread has open and runs vectorised; else None (the builtin: it converts or refuses)."""
    level = x._level
    if not level.alive or level.per_example or not any(lv is level for lv in active_levels()):
        return None
    inner = x._value
    while type(inner) is BatchedTensor:
        inner = inner._value
    if type(inner) is not np.ndarray or x.ndim != 0 or x.dtype.kind not in "biuf":
        return None
    v = x if x.dtype == _F8 else x.astype(np.float64)
    return WeakFloat(v[()])  # (a NumPy scalar per example, as NumPy's ufuncs of a float give)


def _common(x: BatchedTensor) -> bool:
    """Whether every example holds the same value (not in nested vmaps): the builtin's
    conversion gives that one Python scalar (``BatchedTensor._common_example``), which does
    all a weak value does and more."""
    return type(x._value) is np.ndarray and x._common_example() is not None


def _float(*args: Any, **kwargs: Any) -> Any:
    if len(args) == 1 and not kwargs:
        x = args[0]
        t = type(x)
        if t is WeakFloat:
            return x
        if t is WeakInt:  # (Python rounds an int to the nearest float, as NumPy's cast)
            return WeakFloat(x._v.astype(np.float64))
        if t is BatchedTensor and not _common(x):
            w = _weak(x)
            if w is not None:
                return w
    return float(*args, **kwargs)


def _weak_int(x: BatchedTensor) -> WeakInt | None:
    """``int(x)`` kept batched, where ``x`` is 0-d per example (``_weak``'s conditions), of
    bools, integers or finite floats (truncated, as ``int`` does) whose every example fits in
    int64; else None (the builtin: it converts, raises as in the loop, or refuses)."""
    level = x._level
    if not level.alive or level.per_example or not any(lv is level for lv in active_levels()):
        return None
    inner = x._value
    while type(inner) is BatchedTensor:
        inner = inner._value
    if type(inner) is not np.ndarray or x.ndim != 0 or x.dtype.kind not in "biuf":
        return None
    if x.dtype.kind == "f":
        if not np.isfinite(inner).all() or (np.abs(inner) >= float(_INT64)).any():
            return None  # (int(nan), int(inf) raise in the loop; beyond int64, a big int)
        x = cast(BatchedTensor, np.trunc(x))
    elif x.dtype.kind == "u" and inner.size and int(inner.max()) >= _INT64:
        return None
    v = x if x.dtype == np.int64 else x.astype(np.int64)
    return WeakInt(v[()])


def _int(*args: Any, **kwargs: Any) -> Any:
    if len(args) == 1 and not kwargs:
        x = args[0]
        t = type(x)
        if t is WeakInt:
            return x
        if t is WeakFloat or t is WeakBool:
            x, t = x._v, BatchedTensor
        if t is BatchedTensor and not _common(x):
            w = _weak_int(x)
            if w is not None:
                return w
        x = args[0]
    return int(*args, **kwargs)


_int.__name__ = _int.__qualname__ = "int"
_int.__doc__ = int.__doc__
_float.__name__ = _float.__qualname__ = "float"
_float.__doc__ = float.__doc__


# ---- the math functions put into a learnt function ----------------------------------------------
#: ``math``'s functions of one float that give a float, computed per example: ``sqrt`` and
#: ``fabs`` with NumPy (IEEE's correctly rounded square root, an exact absolute value: NumPy's
#: and the C library's agree bit for bit), the others by calling ``math``'s own function on each
#: example's value (NumPy's ``log``, ``exp``, ... need not round as the C library does).
_MATH_NUMPY = {"sqrt": np.sqrt, "fabs": np.absolute}
_MATH_EACH = ("exp", "expm1", "log", "log2", "log10", "log1p", "sin", "cos", "tan", "asin",
              "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "erf", "erfc",
              "gamma", "lgamma", "cbrt", "exp2")
_MATH_TESTS = {"isnan": np.isnan, "isinf": np.isinf, "isfinite": np.isfinite}


def _map_physical(t: Any, fn: Callable[[Any], Any]) -> Any:
    """``t`` (a BatchedTensor, of BatchedTensors in nested vmaps) with ``fn`` applied to its
    physical array, whose shape ``fn`` keeps."""
    if type(t) is BatchedTensor:
        return new_batched(_map_physical(t._value, fn), t._bdim, t._level)
    return fn(t)


def _each(fn: Callable[[float], float], name: str, v: BatchedTensor) -> WeakFloat:
    def apply(a: Any) -> Any:
        try:
            out = [fn(e) for e in a.ravel().tolist()]
        except (ValueError, OverflowError):  # the loop raises there: its own error, rerun
            _refuse(v, f"math.{name} of a value it raises for")
        return np.array(out, dtype=np.float64).reshape(a.shape)

    return WeakFloat(_map_physical(v, apply))


def _math_function(name: str) -> Callable[..., Any]:
    fn = getattr(math, name)

    def call(*args: Any, **kwargs: Any) -> Any:
        if len(args) == 1 and not kwargs:
            x = args[0]
            t = type(x)
            w = x if t is WeakFloat else _weak(x) if t is BatchedTensor and not _common(x) \
                else WeakFloat(x._v.astype(np.float64)) if t is WeakInt else None
            if w is not None:
                v = w._v
                if name in _MATH_TESTS:
                    return WeakBool(_MATH_TESTS[name](v))
                if name not in _MATH_NUMPY:
                    return _each(fn, name, v)
                if name == "sqrt" and _any_example(v, np.less):  # (sqrt(-0.0) is -0.0 in both)
                    _refuse(v, "math.sqrt of a negative value (Python raises ValueError)")
                with np.errstate(all="ignore"):
                    return WeakFloat(_MATH_NUMPY[name](v))
        return fn(*args, **kwargs)

    call.__name__ = call.__qualname__ = name
    call.__doc__ = fn.__doc__
    return call


class _Math:
    """What a rewritten ``math.<name>(x)`` loads in place of the module ``math``: only the
    names in ``_MATH_NAMES`` are ever read from it (``_rewritten``)."""

    __slots__ = tuple(_MATH_NUMPY) + _MATH_EACH + tuple(_MATH_TESTS)


_MATH_NAMES = frozenset(_Math.__slots__)
_math = _Math()
for _name in _MATH_NAMES:
    setattr(_math, _name, _math_function(_name))


# ---- learning the modules -----------------------------------------------------------------------
_lock = threading.Lock()
_FLOATS: dict[int, tuple[Any, list]] = {}  # id(a function's learnt list) -> (it, its modules)
_verdicts: dict[int, tuple[dict, Any]] = {}  # id(globals) -> (them, codes | None)
_injected: dict[int, list] = {}  # id(globals) -> [passes running, globals]


def learnt_floats(key: Any) -> list:
    """The modules and functions learnt for a function (whose ``buffers.learnt_modules`` list
    is ``key``: shared by every vmap of the same code)."""
    with _lock:
        entry = _FLOATS.get(id(key))
        if entry is None or entry[0] is not key:
            entry = _FLOATS[id(key)] = (key, [])  # (key kept alive: its id stays its own)
        return entry[1]


def learn_from(exc: BaseException, learnt: list) -> bool:
    """Whether ``exc`` is a refused ``float()`` or ``int()`` (of a batched value or a weak one)
    made by a call ``float(x)``, ``int(x)`` or ``math.<name>(x)`` (``_MATH_NAMES``) in a module
    whose ``float``, ``int`` and ``math`` are the builtins and the module: then ``learnt`` gets
    the module (``float(x)``, in a module whose code uses that name for calls only:
    ``_only_called``) or the function that made the call (``_Patch``), and a new pass swaps
    them in (``enter``)."""
    if not config.intercept_numpy \
            or getattr(exc, "batchtensor_what", None) not in ("float()", "int()"):
        return False
    tb = exc.__traceback__
    frames: list[tuple[types.FrameType, int]] = []  # the function's own, outermost first
    while tb is not None:
        if not str(tb.tb_frame.f_globals.get("__name__", "")).startswith(_NOT_USER):
            frames.append((tb.tb_frame, tb.tb_lasti))
        tb = tb.tb_next
    if not frames:
        return False
    frame, lasti = frames[-1]
    g = frame.f_globals
    if type(g) is not dict or g.get("float", _float) is not _float or "int" in g \
            or frame.f_builtins.get("float") is not float \
            or frame.f_builtins.get("int") is not int:
        return False  # (a module learnt for float() has it during the pass: math is learnt)
    callee = _callee(frame.f_code, lasti)
    if callee is None or (callee == "math" and g.get("math") is not math):
        return False
    if callee == "float" and _only_called(g, frame.f_code):
        with _lock:
            if any(m is g for m in learnt):
                return False
            learnt.append(g)
        return True
    patch = _patch_for(frame.f_code, g, [f.f_code for f, _ in reversed(frames[:-1])
                                         if f.f_globals is g])
    if patch is None:
        return False
    with _lock:
        if any(m is patch for m in learnt):
            # learnt by a pass on another thread after this one started without it: the next
            # pass swaps it in (one that had it swapped in learns nothing new)
            return not any(m is patch for m in getattr(_left, "entered", ())) \
                and patch.applies()
        learnt.append(patch)
    return True


def _instructions(code: types.CodeType) -> list[dis.Instruction]:
    return [i for i in dis.get_instructions(code) if i.opname != "CACHE"]


def _start(ins: dis.Instruction) -> tuple[Any, Any] | None:
    p = ins.positions
    return None if p is None or p.lineno is None else (p.lineno, p.col_offset)


def _callee(code: types.CodeType, offset: int) -> str | None:
    """``"float"``, ``"int"`` or ``"math"`` where the instruction at ``offset`` calls, with one
    argument, a callable loaded by ``LOAD_GLOBAL float`` / ``int`` (CPython 3.11-3.13 mark a
    global loaded as a callee with the low bit of the oparg) or ``math.<name>`` (``_math_call``);
    else None. The call's source starts where that load's does (``float(...)``; Python 3.11's
    PRECALL may make the call itself)."""
    instrs = _instructions(code)
    k = max((j for j, ins in enumerate(instrs) if ins.offset <= offset), default=None)
    if k is None:
        return None
    if instrs[k].opname == "PRECALL" and k + 1 < len(instrs) and instrs[k + 1].opname == "CALL":
        k += 1
    call = instrs[k]
    at = _start(call)
    if call.opname != "CALL" or call.arg != 1 or at is None:
        return None
    for j, ins in enumerate(instrs[:k]):
        if ins.opname != "LOAD_GLOBAL" or _start(ins) != at:
            continue
        if ins.argval in _BUILTINS and (ins.arg or 0) & 1:
            return str(ins.argval)
        if ins.argval == "math" and _math_call(instrs, j):
            return "math"
    return None


def _math_call(instrs: list[dis.Instruction], j: int) -> bool:
    """Whether ``instrs[j]``, a ``LOAD_GLOBAL math``, loads the callee of a call
    ``math.<name>(...)`` with ``name`` in ``_MATH_NAMES``: the next instruction reads that
    attribute, and exactly one call's source starts where the load's does (``y = math.sqrt``,
    which would hand out another object than ``math.sqrt``, has none)."""
    at = _start(instrs[j])
    return (j + 1 < len(instrs) and instrs[j + 1].opname in ("LOAD_ATTR", "LOAD_METHOD")
            and instrs[j + 1].argval in _MATH_NAMES and at is not None
            and sum(1 for ins in instrs if ins.opname == "CALL" and _start(ins) == at) == 1)


def _only_called(g: dict, code: types.CodeType) -> bool:
    """Whether every code object of the module (compiled from its source: functions, nested
    functions, methods, lambdas) loads the global ``float`` only to call it (CPython 3.11-3.13
    mark a global loaded as a callee with the low bit of the oparg: "NULL + float") and never
    binds it, and ``code`` (the refusing frame's) is among them (the source is the one that
    runs). Once per module."""
    with _lock:
        entry = _verdicts.get(id(g))
    if entry is None or entry[0] is not g:
        entry = (g, _codes_if_only_called(g))
        with _lock:
            _verdicts[id(g)] = entry
    codes = entry[1]
    return codes is not None and (code.co_name, code.co_firstlineno, code.co_code) in codes


def _codes_if_only_called(g: dict) -> set | None:
    path = g.get("__file__")
    if type(path) is not str or not path.endswith(".py"):
        return None
    try:
        with tokenize.open(path) as f:
            top = compile(f.read(), path, "exec", dont_inherit=True)
    except (OSError, SyntaxError, ValueError):
        return None
    found = set()
    todo = [top]
    while todo:
        code = todo.pop()
        found.add((code.co_name, code.co_firstlineno, code.co_code))
        todo.extend(c for c in code.co_consts if type(c) is types.CodeType)
        if "float" not in code.co_names:
            continue
        for ins in dis.get_instructions(code):
            if ins.argval != "float":
                continue
            if ins.opname in ("STORE_GLOBAL", "DELETE_GLOBAL") or (
                    ins.opname == "LOAD_GLOBAL" and not (ins.arg or 0) & 1):
                return None
    return found


_BUILTINS = {"float": _float, "int": _int}  # the callees a rewritten function loads


# ---- learning a function: its code rewritten for the length of a pass --------------------------
_OPS = dis.opmap
_NULL_FIRST = sys.version_info < (3, 13)  # where LOAD_GLOBAL's NULL goes, below the value or above


class _Patch:
    """A function (every function object of its code, in its module) whose code, for the length
    of a pass, is a copy in which the callee loads of ``float`` and ``math`` load this module's
    ``float`` and ``_math`` (``_rewritten``); the module's globals stay as they are."""

    __slots__ = ("fns", "original", "patched", "g", "math")

    def __init__(self, fns: list, original: types.CodeType, patched: types.CodeType,
                 g: dict) -> None:
        self.fns, self.original, self.patched, self.g = fns, original, patched, g
        self.math = _loads(patched, _math)

    def applies(self) -> bool:
        """Whether the names the copy stops reading still mean the builtins and the module
        (a module learnt for ``float()`` holds this module's during a pass)."""
        g = self.g
        return g.get("float", _float) is _float and "int" not in g \
            and (not self.math or g.get("math") is math)


def _loads(code: types.CodeType, obj: Any) -> bool:
    return any(c is obj or (type(c) is types.CodeType and _loads(c, obj))
               for c in code.co_consts)


def _contains(outer: types.CodeType, code: types.CodeType) -> bool:
    return any(c is code or (type(c) is types.CodeType and _contains(c, code))
               for c in outer.co_consts)


def _patch_for(code: types.CodeType, g: dict, outer: list[types.CodeType]) -> _Patch | None:
    """The patch of the function whose code is ``code`` or, where ``code``'s function is made
    anew by each call (a nested function, a comprehension), of the innermost function of
    ``outer`` (the traceback's, innermost first) whose code holds ``code``."""
    for c in [code] + outer:
        if (c is not code and not _contains(c, code)) or any(_contains(o, c) for o in outer):
            continue  # (a function an outer one makes anew: the frame holds this call's)
        with _lock:
            known = _patches.get(id(c))
        if known is not None and known.original is c:
            return known  # (one patch per function: passes on other threads count on it)
        fns = [f for f in gc.get_referrers(c)
               if type(f) is types.FunctionType and f.__code__ is c and f.__globals__ is g]
        if fns:
            patched = _rewritten(c) if _asks_no_type(c) else None
            if patched is None:
                return None
            with _lock:
                return _patches.setdefault(id(c), _Patch(fns, c, patched, g))
    return None


_patches: dict[int, _Patch] = {}  # id(a function's code) -> its patch (the code kept alive)


_AS_ARGUMENT = ("LOAD_ATTR", "LOAD_METHOD", "KW_NAMES", "PRECALL", "CALL", "CALL_KW")


def _asks_no_type(code: types.CodeType) -> bool:
    """Whether ``code`` (and the code nested in it) cannot tell a weak value's type from the
    loop's by name: it never calls ``type`` (``type(s) is type(0.0)``, ``type(s).__name__``),
    and reads ``float`` / ``int`` other than to call them only as an attribute's owner
    (``float.fromhex``), a call's last argument (``dtype=float``, ``np.dtype(float)``) or inside
    ``isinstance(...)`` / ``issubclass(...)`` (which a weak value answers as the loop's): not in
    ``type(s) is float``, ``t in (int, float)``, ``{float: ...}``. Else the function is not
    rewritten (its conversions rerun)."""
    instrs = _instructions(code)
    spans: list[tuple[tuple[Any, Any], tuple[Any, Any]]] = []
    for j, ins in enumerate(instrs):
        if ins.opname == "LOAD_GLOBAL" and ins.argval in ("isinstance", "issubclass"):
            at = _start(ins)
            call = next((c for c in instrs[j + 1:] if c.opname == "CALL" and _start(c) == at),
                        None)
            p = None if call is None else call.positions
            if at is not None and p is not None and p.end_lineno is not None:
                spans.append((at, (p.end_lineno, p.end_col_offset)))
    for j, ins in enumerate(instrs[:-1]):
        if ins.opname != "LOAD_GLOBAL" or ins.argval not in ("type", "float", "int"):
            continue
        if ins.argval == "type":
            return False
        if (ins.arg or 0) & 1:
            continue  # (a callee: rewritten)
        nxt = instrs[j + 1]
        if nxt.opname in _AS_ARGUMENT or (nxt.opname == "LOAD_CONST" and j + 2 < len(instrs)
                                          and instrs[j + 2].opname == "CALL_KW"):
            continue
        at, q = _start(ins), ins.positions
        end = None if q is None or q.end_lineno is None else (q.end_lineno, q.end_col_offset)
        if at is None or end is None or not any(a <= at and end <= b for a, b in spans):
            return False
    return all(_asks_no_type(c) for c in code.co_consts if type(c) is types.CodeType)


def _rewritten(code: types.CodeType) -> types.CodeType | None:
    """``code`` (and the code objects nested in it) with each ``LOAD_GLOBAL float`` that loads a
    callee and each ``LOAD_GLOBAL math`` of a ``math.<name>(...)`` call (``_math_call``)
    replaced by a ``LOAD_CONST`` of this module's ``float`` / ``_math`` (and the ``PUSH_NULL``
    the load made), padded with ``NOP`` to the load's length (its inline caches): every offset,
    jump, line and exception entry stays. None where nothing changed."""
    consts = list(code.co_consts)
    changed = False
    for i, c in enumerate(consts):
        if type(c) is types.CodeType:
            r = _rewritten(c)
            if r is not None:
                consts[i], changed = r, True
    raw = bytearray(code.co_code)
    instrs = _instructions(code)
    for j, ins in enumerate(instrs[:-1]):
        if ins.opname != "LOAD_GLOBAL" or (j and instrs[j - 1].opname == "EXTENDED_ARG"):
            continue  # (a site with EXTENDED_ARG stays: its float refuses, a rerun)
        null = (ins.arg or 0) & 1
        if ins.argval in _BUILTINS and null:
            obj: Any = _BUILTINS[ins.argval]
        elif ins.argval == "math" and _math_call(instrs, j):
            obj = _math
        else:
            continue
        k = next((n for n, x in enumerate(consts) if x is obj), None)
        if k is None:
            k = len(consts)
            consts.append(obj)
        if k >= 1 << 16:
            continue
        load = ([(_OPS["EXTENDED_ARG"], k >> 8)] if k > 255 else []) \
            + [(_OPS["LOAD_CONST"], k & 255)]
        seq = load if not null else [(_OPS["PUSH_NULL"], 0)] + load if _NULL_FIRST \
            else load + [(_OPS["PUSH_NULL"], 0)]
        units = (instrs[j + 1].offset - ins.offset) // 2
        if len(seq) > units:
            continue
        seq += [(_OPS["NOP"], 0)] * (units - len(seq))
        raw[ins.offset:ins.offset + 2 * units] = bytes(b for op in seq for b in op)
        changed = True
    if not changed:
        return None
    return code.replace(co_code=bytes(raw), co_consts=tuple(consts))


_patched: dict[int, list] = {}  # id(patch) -> [passes running, patch]
_left = threading.local()  # .entered: what the last pass on this thread had swapped in


def enter(learnt: list) -> list | None:
    """A pass of a function whose learnt modules and functions are ``learnt`` starts: each
    module gets this module's ``float`` in its globals (unless it bound a ``float`` of its own
    since), each function its rewritten code (unless its names changed meaning). Counted, so
    that passes on several threads share one swap. Returns what ``leave`` takes."""
    if not learnt or not config.intercept_numpy:
        return None
    entered: list = []
    with _lock:
        for item in learnt:
            if type(item) is _Patch:
                entry = _patched.get(id(item))
                if entry is None:
                    if not item.applies():
                        continue
                    for fn in item.fns:
                        if fn.__code__ is item.original:
                            fn.__code__ = item.patched
                    entry = _patched[id(item)] = [0, item]
                entry[0] += 1
                entered.append(item)
                continue
            g = item
            entry = _injected.get(id(g))
            if entry is None:
                if "float" in g:
                    continue
                g["float"] = _float
                entry = _injected[id(g)] = [0, g]
            entry[0] += 1
            entered.append(g)
    return entered


def leave(entered: list | None) -> None:
    """The pass ``enter`` started ends: the last pass of a module takes its ``float`` out, the
    last pass of a function gives it its own code back."""
    _left.entered = entered or ()
    if not entered:
        return
    with _lock:
        for item in entered:
            if type(item) is _Patch:
                entry = _patched[id(item)]
                entry[0] -= 1
                if not entry[0]:
                    del _patched[id(item)]
                    for fn in item.fns:
                        if fn.__code__ is item.patched:
                            fn.__code__ = item.original
                continue
            g = item
            entry = _injected[id(g)]
            entry[0] -= 1
            if not entry[0]:
                del _injected[id(g)]
                if g.get("float") is _float:
                    del g["float"]
