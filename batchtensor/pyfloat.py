"""``float(x)`` of a batched value, kept batched: a weak float per example.

Library code converts results to Python floats (scikit-learn's metrics: ``return
float(score)``, ``precision = float(_nanaverage(...))``; ``scipy.spatial.distance.cosine``).
The builtin must return an exact ``float`` (CPython turns even a float subclass returned by
``__float__`` into one), so no batched result can come through it: the conversion refuses and
the function reruns per example. Where the refusing call is ``float(...)`` in a module whose
code uses the name ``float`` for nothing but calls (every ``LOAD_GLOBAL float`` is a callee:
no ``isinstance(v, float)``, ``dtype=float``, ``float.fromhex``), vmap learns that module
(``learn_from``) and its next passes put a ``float`` of their own into the module's globals
(``enter`` / ``leave``: removed after the pass, also on error; counted, so that passes on
several threads share one). For a value batched at a level open on this thread it returns a
``WeakFloat``; for anything else it is the builtin.

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
  True (``__class__``), as it is in the loop, and so is ``isinstance(w, numbers.Real)``.

Everything else refuses: NumPy's functions (``__array_function__``), conversions (``__array__``,
``__float__``, ``__int__``, ``__index__``, ``math.*``), ``round``, ``str`` / ``repr`` /
``format``, ``hash``, pickling and copies, the float methods. ``__array__``,
``__array_function__``, ``__array_ufunc__`` and ``__index__`` (which a Python float lacks) are
visible on the class, where NumPy's protocols look them up, but refuse when read from the
value: ``hasattr(w, "__array__")``, which is False for a float, refuses rather than answer True.

A ufunc reached from batchtensor's own code (a batch rule that got ``w`` as a plain argument
and calls a ufunc on physical values, whose batch axis is data there) refuses: the frames
between the call and the innermost pass of vmap must be the function's own.

``type(w)`` is WeakFloat: code that tests ``type(v) is float`` sees no float where the loop
does. The learnt module cannot name ``float`` there, but it can ask without the name
(``type(s) is type(0.0)``), and code the value flows into can ask either way: a known
difference, documented in docs/running_existing_code.md. ``type(w)(...)`` refuses.
"""

from __future__ import annotations

import dis
import sys
import threading
import tokenize
import types
from typing import Any, Callable, NoReturn

import numpy as np

from .config import config
from .errors import note_refusal
from .levels import Level, active_levels
from .registry import slots
from .tensor import BatchedTensor, new_batched

__all__ = ["WeakFloat", "WeakBool", "as_batched", "learnt_floats", "learn_from", "enter",
           "leave"]

_NOT_USER = ("numpy", "batchtensor")
_EXACT_INT = 2 ** 53  # Python ints up to this magnitude are exact as floats
_F8 = np.dtype(np.float64)


# ---- refusals -----------------------------------------------------------------------------------
def _refuse(v: Any, use: str, what: str | None = None) -> NoReturn:
    """A conversion error for ``use`` of a weak value holding the BatchedTensor ``v``: a rerun
    reason (``errors.rerun_reason``) for ``v``'s level, noted where the function's own code
    would catch it (``dispatch.note_if_caught``)."""
    level = v._level
    what = what or f"float() per example used in {use}"
    err: Any = TypeError(
        f"{use}: float() on a BatchedTensor gave a Python float per example, which supports "
        f"only bool(), being returned, + - * / and comparisons with Python numbers, and NumPy "
        f"ufuncs; anything else needs one Python float per run, so vmap reruns the function "
        f"once per example")
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
    return None


def _array_operand(other: Any) -> bool:
    """An operand NumPy's protocols take: a NumPy array, scalar or a batched value."""
    t = type(other)
    return t is BatchedTensor or t is np.ndarray or issubclass(t, np.generic)


def _has_zero(v: Any) -> bool:
    """Whether a divisor is 0 for any example (of any level): Python raises there."""
    if type(v) is float:
        return v == 0.0
    while type(v) is BatchedTensor:
        v = v._value
    return bool((v == 0).any())


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
    if type(self) is WeakBool or method != "__call__" or kwargs \
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


def as_batched(x: Any) -> Any:
    """The batched value of a WeakFloat or WeakBool (a function's output: the loop stacks the
    examples' Python floats into a float64 array, its bools into a bool array); else ``x``."""
    t = type(x)
    return x._v if t is WeakFloat or t is WeakBool else x


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


def _float(*args: Any, **kwargs: Any) -> Any:
    if len(args) == 1 and not kwargs:
        x = args[0]
        t = type(x)
        if t is WeakFloat:
            return x
        if t is BatchedTensor:
            w = _weak(x)
            if w is not None:
                return w
    return float(*args, **kwargs)


_float.__name__ = _float.__qualname__ = "float"
_float.__doc__ = float.__doc__


# ---- learning the modules -----------------------------------------------------------------------
_lock = threading.Lock()
_FLOATS: dict[int, tuple[Any, list]] = {}  # id(a function's learnt list) -> (it, its modules)
_verdicts: dict[int, tuple[dict, Any]] = {}  # id(globals) -> (them, codes | None)
_injected: dict[int, list] = {}  # id(globals) -> [passes running, globals]


def learnt_floats(key: Any) -> list:
    """The modules learnt for a function (whose ``buffers.learnt_modules`` list is ``key``:
    shared by every vmap of the same code)."""
    with _lock:
        entry = _FLOATS.get(id(key))
        if entry is None or entry[0] is not key:
            entry = _FLOATS[id(key)] = (key, [])  # (key kept alive: its id stays its own)
        return entry[1]


def learn_from(exc: BaseException, learnt: list) -> bool:
    """Whether ``exc`` is a refused ``float()`` called by the name ``float`` in a module whose
    code uses that name for calls only: then the module joins ``learnt`` and a new pass puts
    ``float`` of this module into its globals (``enter``)."""
    if not config.intercept_numpy or getattr(exc, "batchtensor_what", None) != "float()":
        return False
    tb = exc.__traceback__
    frame: types.FrameType | None = None
    lasti = -1
    while tb is not None:
        if not str(tb.tb_frame.f_globals.get("__name__", "")).startswith(_NOT_USER):
            frame, lasti = tb.tb_frame, tb.tb_lasti
        tb = tb.tb_next
    if frame is None:
        return False
    g = frame.f_globals
    if type(g) is not dict or "float" in g or frame.f_builtins.get("float") is not float \
            or not _calls_float(frame.f_code, lasti) or not _only_called(g, frame.f_code):
        return False
    with _lock:
        if any(m is g for m in learnt):
            return False
        learnt.append(g)
    return True


def _calls_float(code: types.CodeType, offset: int) -> bool:
    """Whether the instruction at ``offset`` calls, with one argument, a callable loaded by
    ``LOAD_GLOBAL float``: the call's source starts where that load's does (``float(...)``;
    Python 3.11's PRECALL may make the call itself)."""
    instrs = [i for i in dis.get_instructions(code) if i.opname != "CACHE"]
    k = max((j for j, ins in enumerate(instrs) if ins.offset <= offset), default=None)
    if k is None:
        return False
    if instrs[k].opname == "PRECALL" and k + 1 < len(instrs) and instrs[k + 1].opname == "CALL":
        k += 1
    call = instrs[k]
    if call.opname != "CALL" or call.arg != 1 or call.positions is None:
        return False
    at = (call.positions.lineno, call.positions.col_offset)
    return at[0] is not None and any(
        ins.opname == "LOAD_GLOBAL" and ins.argval == "float" and (ins.arg or 0) & 1
        and ins.positions is not None
        and (ins.positions.lineno, ins.positions.col_offset) == at for ins in instrs[:k])


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


def enter(learnt: list) -> list | None:
    """A pass of a function whose learnt modules are ``learnt`` starts: each gets this
    module's ``float`` in its globals (unless it bound a ``float`` of its own since).
    Returns what ``leave`` takes."""
    if not learnt or not config.intercept_numpy:
        return None
    entered = []
    with _lock:
        for g in learnt:
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
    """The pass ``enter`` started ends: the last pass of a module takes its ``float`` out."""
    if not entered:
        return
    with _lock:
        for g in entered:
            entry = _injected[id(g)]
            entry[0] -= 1
            if not entry[0]:
                del _injected[id(g)]
                if g.get("float") is _float:
                    del g["float"]
