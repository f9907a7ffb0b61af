"""Arrays the function creates are per-example state: a batched write makes them batched.

The loop creates a fresh array for every example, so ``out = np.zeros(n)`` followed by
``out[i] = g(x[i])`` fills one array per example. Under vmap the write brings a batched value
into a plain array, which cannot hold it. So while a vmap's pass runs, the function's own module
sees NumPy's buffer makers (``zeros``, ``ones``, ``empty``, ``full``, their ``*_like`` of an
unbatched prototype, ``eye``, ``identity``, and ``copy`` / ``array`` copies of unbatched data)
return a ``LocalBuffer``: the plain array, wrapped. Until something batched is written into it,
it is that plain array to every read (NumPy functions, ufuncs, operators, methods and
attributes act on the plain array and give plain results; ``np.asarray`` and compiled code get
the array itself). The first batched write (``[]=``, in-place operators, ``out=``,
``np.copyto`` / ``put`` / ``place`` / ``putmask`` / ``fill`` / ``ufunc.at``) *promotes* it, in
place: the object becomes an ordinary BatchedTensor holding one copy of the contents per
example, then the write happens per example.

Only the function's own module sees the makers: its globals bound to the ``numpy`` module (or
to a maker, ``from numpy import zeros``) are swapped, for the pass, for a stand-in module whose
makers make buffers. Compiled code that creates arrays itself (``Generator.normal`` calls
``np.empty`` and writes through the raw pointer) must get real ndarrays, and it reaches NumPy
through its own reference to the module, which is untouched; so do NumPy's Python layer and
any other module. The function's module may be a library's (``bt.vmap(scipy.stats.norm.cdf)``:
SciPy's ``_distn_infrastructure`` fills ``zeros(...)`` with ``place``): there too the buffers
keep the fills vectorised (the real-code corpus: 143 of 404 functions fully vectorised with
SciPy's modules left out, 172 with them, none wrong), and a buffer that reaches compiled code
is refused there, which reruns. The same swap gives the module's names for foreign callables
with a batch rule their ``Primitive`` (``from scipy.ndimage import convolve`` in
scikit-image's filters), which ``foreign`` installs only in the callable's own package. For a
decorated function the module is the wrapped function's (``__wrapped__``), and the
decorator's is swapped as well (``WholeModule``).

Elsewhere one call at a time: a library function that fills ``out = np.zeros(n)`` with a
batched value fails in the first pass, and that call site is learnt from the failed write
(``MakerSites``, ``learn_from``): in every pass of the vmapped function after, that call (and
no other) makes a buffer, through NumPy's makers replaced in ``numpy`` while a vmap runs.
An array made at import, or kept beyond the call (a cache, a global, an attribute), is never
learnt, and a buffer that outlives its pass is never promoted: both are one array for every
example, as in the loop.

Promotion must not leave anyone holding the old plain array: a view taken earlier
(``row = out[0]``), or the array handed out by ``np.asarray(out)``, would no longer see the
writes. Every such alias holds a reference to the plain array, so promotion checks the array's
reference count and, where anything else still holds it, raises the conversion error instead,
which the whole-function fallback turns into a per-example rerun. The rerun is also the answer
where a buffer reaches code that needs a real ndarray (a compiled function with a typed
argument raises TypeError): vmap reruns a pass that made buffers and then raised a TypeError
not of batchtensor's making.

``isinstance(out, np.ndarray)`` is True for a LocalBuffer (its ``__class__`` says so, as the
plain array it stands for); ``type(out)`` is LocalBuffer. Promoted, it is a BatchedTensor, whose
``__class__`` answers the same for array examples.
"""

from __future__ import annotations

import ast
import dis
import functools
import inspect
import linecache
import operator
import re
import sys
import textwrap
import threading
import types
from types import FrameType
from typing import Any, Sequence

import numpy as np

from . import conversions
from .boxed.loop import running_examples
from .config import config
from .dispatch import WRITES_FIRST_ARGUMENT, function_call
from .foreign import PRIMITIVES
from .levels import Level, active_levels, current_level, memory_root
from .registry import ALIASES
from .tensor import BatchedTensor, compat_namespace, new_batched

__all__ = ["LocalBuffer", "pass_begins", "MAKERS", "LIKE_MAKERS", "SITE_MAKERS", "MakerSites", "WholeModule",
           "plain_of", "enter", "leave", "module_of", "learnt_modules", "learn_from"]


_CLASS = object.__dict__["__class__"]  # the slot under LocalBuffer's __class__ property


def _level_for_buffers() -> Level | None:
    """The level of the vmap pass whose function made this call (``Level.buffers`` is not
    None there: a level of ``vmap_level()`` or of a per-example rerun makes plain arrays)."""
    level = current_level()
    if level is None or level.buffers is None:
        return None
    for passing in active_levels():  # an outer pass made it too, through its inner vmap
        if passing.buffers is False:
            passing.buffers = True  # made one: a Type/ValueError in the pass reruns (api)
    return level


def batched_at_its_level(buffer: LocalBuffer, what: str) -> Any:
    """``buffer`` made batched now, a copy of its contents per example of the passes that
    made it (of a nested vmap's too: each outer example's inner pass makes its own), in place:
    every name of it sees the batched value; as it is outside a pass."""
    if _level_for_buffers() is None or running_examples():  # (the per-op loop: one example's)
        return buffer
    levels = [lv for lv in active_levels() if lv.buffers is not None]
    if any(lv.size is None for lv in levels):
        return buffer
    sizes: tuple[Any, ...] = tuple(lv.size for lv in levels)  # (ints: checked above)
    like: Any = np.zeros(sizes)
    for lv in levels:
        like = new_batched(like, 0, lv)
    buffer._promote((like,), what)
    return buffer


def plain_of(x: Any) -> Any:
    """The plain array of a LocalBuffer that is not promoted; anything else as it is."""
    return x._value if type(x) is LocalBuffer else x


def _plain_args(args: Any) -> Any:
    t = type(args)
    if t is LocalBuffer:
        return args._value
    if t is tuple or t is list:
        return t(_plain_args(a) for a in args)
    if t is dict:
        return {k: _plain_args(v) for k, v in args.items()}
    return args


def _batched_among(args: Any, found: list) -> list:
    t = type(args)
    if t is BatchedTensor:
        found.append(args)
    elif t is tuple or t is list:
        for a in args:
            _batched_among(a, found)
    elif t is dict:
        for a in args.values():
            _batched_among(a, found)
    return found


def _common_values(obj: Any) -> Any:
    """``obj`` (arguments, in tuples, lists and dicts) with each batched value replaced by the
    one value every example holds (``BatchedTensor._common_example``: a count that does not
    depend on the data), or None where some example differs: then each example makes its own
    array; where every example holds the same bounds, they make the same array."""
    try:
        return _replaced(obj)
    except _Differs:
        return None


class _Differs(Exception):
    """A batched value whose examples differ (``_common_values``)."""


def _replaced(obj: Any) -> Any:
    t = type(obj)
    if t is BatchedTensor:
        common = obj._common_example() if obj.ndim == 0 else None
        if common is None or type(common) is BatchedTensor:
            raise _Differs
        return common
    if t is tuple or t is list:
        return t(_replaced(v) for v in obj)
    if t is dict:
        return {k: _replaced(v) for k, v in obj.items()}
    return obj


def _levels_of(x: BatchedTensor) -> list:
    out = []
    while type(x) is BatchedTensor:
        out.append(x._level)
        x = x._value
    return out


class LocalBuffer:
    """An array created inside a vmapped function, plain until a batched value is written
    into it (see the module docstring).

    >>> import numpy as np, batchtensor as bt
    >>> def squares(x):
    ...     out = np.zeros(3)              # a new array per example, as in the loop
    ...     for i in range(3):
    ...         out[i] = x[i] ** 2         # the first batched write makes it batched
    ...     return out
    >>> bt.vmap(squares)(np.arange(6.0).reshape(2, 3))
    array([[ 0.,  1.,  4.],
           [ 9., 16., 25.]])
    """

    __slots__ = ("_value", "_bdim", "_level", "_array0d")  # BatchedTensor's: promotion swaps
    __hash__ = None  # type: ignore[assignment]  # (unhashable, as the array it stands for)

    def __init__(self, value: Any, level: Level):
        self._value = value
        self._bdim = None
        self._level = level

    @property  # type: ignore[misc]  # (read-only: object's __class__ can be assigned)
    def __class__(self):
        return np.ndarray  # isinstance(out, np.ndarray), as for the plain array it stands for

    # ---- promotion --------------------------------------------------------------------------
    def _promote(self, values: Any, what: str) -> None:
        """Become a BatchedTensor holding one copy of the contents per example, batched at the
        levels of the BatchedTensors in ``values`` (the value, index or operands written)."""
        found = _batched_among(values, [])
        chains = [_levels_of(t) for t in found]
        like = found[max(range(len(found)), key=lambda i: len(chains[i]))]
        widest = set(chains[found.index(like)])
        if not self._level.alive:
            # made by a pass that has ended (kept in a cache, a global): shared by every
            # example now, as a plain array is
            err: Any = TypeError(
                f"cannot write a batched value or index into an array made by an earlier "
                f"vmap pass ({what}): it is kept beyond that pass (a cache, a global), so it "
                f"is shared by every example and cannot hold a different value per example. "
                f"Create the array inside the function.")
            err.batchtensor_conversion = True
            err.batchtensor_level = like._level
            err.batchtensor_what = "a batched write into an array kept from an earlier pass"
            err.batchtensor_target = self._value
            raise err
        # two references: the slot, and getrefcount's argument; any other is a view or an
        # array handed out, which would not see the writes after promotion; and a buffer
        # that is itself a view (``_DERIVED``) shares its memory with another array
        if sys.getrefcount(self._value) > 2 or self._value.base is not None or \
                not all(set(c) <= widest for c in chains):
            err = TypeError(  # (with the attributes of a refused conversion)
                f"{what}: a batched value is written into an array the function created, "
                f"which would make it batched, but a view of that array (or the array itself, "
                f"handed out by np.asarray) is still in use and would not see the write. Write "
                f"before taking views, or create the array batched: np.zeros_like(x, "
                f"shape=...) with x a batched value.")
            err.batchtensor_conversion = True
            err.batchtensor_level = like._level
            err.batchtensor_what = "a batched write into an array the function created and " \
                                   "had handed out"
            raise err
        plain = self._value
        promoted = np.empty_like(like, shape=plain.shape, dtype=plain.dtype)
        np.copyto(promoted, plain)
        _CLASS.__set__(self, BatchedTensor)
        self._value, self._bdim, self._level = promoted._value, promoted._bdim, promoted._level
        if getattr(promoted, "_array0d", False):  # np.zeros(()) is a 0-d array per example
            self._array0d = True

    # ---- NumPy's protocols: the plain array, until a batched value is written --------------
    def __array_namespace__(self, *, api_version: str | None = None) -> Any:
        """As a BatchedTensor's: array-api-compat's ``numpy`` wrapper where that library asks,
        the namespace it gives the plain array (and the batched values beside it)."""
        ns = self._value.__array_namespace__(api_version=api_version)
        if ns is np:
            return compat_namespace(sys._getframe(1)) or ns
        return ns

    def __array__(self, dtype=None, copy=None):
        if dtype is None and not copy:
            return self._value
        return np.array(self._value, dtype=dtype, copy=True if copy else None)

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        out = kwargs.get("out")
        targets = [t for t in (out or ()) if type(t) is LocalBuffer]
        if method == "at" and type(inputs[0]) is LocalBuffer:
            targets.append(inputs[0])
        if targets and _batched_among((inputs, kwargs), []):
            for t in targets:
                if type(t) is LocalBuffer:
                    t._promote((inputs, kwargs), f"np.{ufunc.__name__}(out=...)")
            return getattr(ufunc, method)(*_plain_args(inputs), **_plain_args(kwargs))
        res = getattr(ufunc, method)(*_plain_args(inputs), **_plain_args(kwargs))
        if out is not None:  # in place: the buffers written stay themselves
            res_t = res if type(res) is tuple else (res,)
            res_t = tuple(o if type(o) is LocalBuffer else r for o, r in zip(out, res_t))
            return res_t if type(res) is tuple else res_t[0]
        return res

    def __array_function__(self, func, types, args, kwargs):
        writes_into = args[0] if func in WRITES_FIRST_ARGUMENT and args else None
        out = kwargs.get("out")
        targets = [t for t in (writes_into, *(out if type(out) is tuple else (out,)))
                   if type(t) is LocalBuffer]
        if targets and _batched_among((args, kwargs), []):
            for t in targets:
                if type(t) is LocalBuffer:
                    t._promote((args, kwargs), getattr(func, "__name__", "a NumPy function"))
        res = func(*_plain_args(args), **_plain_args(kwargs))
        if type(out) is LocalBuffer and res is out._value:
            return out
        if type(res) is np.ndarray and func in _DERIVED and self._level.alive:
            # a plain array made from this one (a broadcast, a reshape): a buffer too, so that
            # a batched index reads it per example (``xp.broadcast_to(xp.arange(n), s)[mask]``)
            return LocalBuffer(res, self._level)
        return res

    # ---- indexing ---------------------------------------------------------------------------
    def __getitem__(self, key):
        found = _batched_among(key, [])
        if found and any(t.ndim == 0 and t.dtype.kind in "iu" for t in found) \
                and not _scalar_read(key, self._value.ndim):
            # NumPy reads a 0-d integer as an int (a view, basic indexing): NumPy's own
            # indexing asks it for that int (``__index__``), the one every example holds, or
            # the conversion error (a rerun); a gather per example would be a copy, which a
            # write through it, or into this buffer later, would tell apart. (Also where
            # nothing else holds the buffer, ``np.eye(n)[i]``: the reference count that would
            # say so differs once CPython specialises the instruction, 3.12 at least.)
            return self._value[key]
        if found:  # a batched index: each example reads with its own
            return function_call(operator.getitem, (self._value, key), {}, found[0])
        key = _plain_args(key)
        res = self._value[key]
        if type(res) is np.ndarray and _augmented(sys._getframe(1)):
            return _AugmentedRead(self, key, res)  # out[i] += v: see _AugmentedRead
        return res

    def __setitem__(self, key, value):
        if type(value) is LocalBuffer:
            value = value._value
        if _batched_among((key, value), []):
            self._promote((key, value), "x[key] = value")
            BatchedTensor.__setitem__(self, key, value)
            return
        self._value[_plain_args(key)] = value

    def copy(self, order: str = "C") -> Any:
        """A new array, per example as this one is: a buffer too (``out = made.copy()``)."""
        res = self._value.copy(order)
        return LocalBuffer(res, self._level) if self._level.alive else res

    def fill(self, value) -> None:
        if type(value) is BatchedTensor:
            self._promote(value, "x.fill(value)")
            BatchedTensor.fill(self, value)  # type: ignore[arg-type]  # (promoted: one now)
            return
        self._value.fill(value)

    # ---- everything else: the plain array's ---------------------------------------------------
    def __setattr__(self, name: str, value: Any) -> None:
        if name in LocalBuffer.__slots__:
            object.__setattr__(self, name, value)
        elif _batched_among(value, []) and name in ("real", "imag"):
            self._promote(value, f"x.{name} = value")
            setattr(self, name, value)  # now BatchedTensor's setter
        else:
            setattr(self._value, name, value)

    def __getattr__(self, name: str) -> Any:
        if name in ("__array_interface__", "__array_struct__"):
            # NumPy would build an array over the memory that holds no reference to the
            # plain array, which promotion could then not see: it takes __array__ instead
            raise AttributeError(name)
        return getattr(self._value, name)

    def __len__(self) -> int:
        return len(self._value)

    def __iter__(self):
        return iter(self._value)

    def __contains__(self, item) -> bool:
        return item in self._value

    def __bool__(self) -> bool:
        return bool(self._value)

    def __float__(self) -> float:
        return float(self._value)

    def __int__(self) -> int:
        return int(self._value)

    def __index__(self) -> int:
        return operator.index(self._value)

    def __complex__(self) -> complex:
        return complex(self._value)

    def __repr__(self) -> str:
        return repr(self._value)

    def __str__(self) -> str:
        return str(self._value)

    def __format__(self, spec: str) -> str:
        return format(self._value, spec)

    def __copy__(self):
        return self._value.copy()

    def __deepcopy__(self, memo):
        return self._value.copy()

    def __reduce_ex__(self, protocol):
        return self._value.__reduce_ex__(protocol)


def _operator(name: str):
    plain = getattr(operator, name)

    def op(self, *other):
        return plain(self._value, *(_plain_args(o) for o in other))
    op.__name__ = f"__{name}__"
    return op


def _inplace(ufunc):
    def op(self, other):
        ufunc(self, other, out=(self,))
        return self
    return op


def _reflected(name: str):
    plain = getattr(operator, name)

    def op(self, other):
        return plain(_plain_args(other), self._value)
    return op


for _name in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and_",
              "or_", "xor", "lshift", "rshift", "lt", "le", "gt", "ge", "eq", "ne"):
    _dunder = _name.rstrip("_")
    setattr(LocalBuffer, f"__{_dunder}__", _operator(_name))
for _name in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and_",
              "or_", "xor", "lshift", "rshift"):
    setattr(LocalBuffer, f"__r{_name.rstrip('_')}__", _reflected(_name))
for _name, _ufunc in (("add", np.add), ("sub", np.subtract), ("mul", np.multiply),
                      ("truediv", np.true_divide), ("floordiv", np.floor_divide),
                      ("mod", np.remainder), ("pow", np.power), ("and", np.bitwise_and),
                      ("or", np.bitwise_or), ("xor", np.bitwise_xor),
                      ("lshift", np.left_shift), ("rshift", np.right_shift)):
    setattr(LocalBuffer, f"__i{_name}__", _inplace(_ufunc))
setattr(LocalBuffer, "__imatmul__", _inplace(np.matmul))
setattr(LocalBuffer, "__divmod__", lambda self, other: divmod(self._value, _plain_args(other)))
setattr(LocalBuffer, "__rdivmod__", lambda self, other: divmod(_plain_args(other), self._value))
setattr(LocalBuffer, "__neg__", lambda self: -self._value)
setattr(LocalBuffer, "__pos__", lambda self: +self._value)
setattr(LocalBuffer, "__abs__", lambda self: abs(self._value))
setattr(LocalBuffer, "__invert__", lambda self: ~self._value)


def _scalar_read(key: Any, ndim: int) -> bool:
    """Whether ``key`` is an integer for each of ``ndim`` axes (Python's, NumPy's, or 0-d
    integer arrays, batched or not): one element per example, a scalar copy in NumPy."""
    parts = key if type(key) is tuple else (key,)
    return len(parts) == ndim and all(
        isinstance(k, (int, np.integer)) and not isinstance(k, (bool, np.bool_))
        or getattr(k, "ndim", None) == 0 and getattr(k, "dtype", np.dtype(bool)).kind in "iu"
        for k in parts)


# ---- out[key] += v --------------------------------------------------------------------------
class _AugmentedRead:
    """``out[key]`` as ``out[key] += v`` reads it, ``out`` a LocalBuffer: Python runs
    ``t = out[key]; t = t.__iadd__(v); out[key] = t``. With a batched ``v`` the in-place
    operator cannot write into the plain ``out[key]``; the loop's example writes into its own
    array there. So the operator promotes ``out`` first (dropping the plain ``out[key]``, which
    only this read holds) and works on the batched ``out[key]``, which the store then writes
    into ``out`` again. With a plain ``v`` it is the plain in-place operator. Nothing but the
    in-place operator sees this object: it lives between the read and the store of one
    statement (``_augmented``)."""

    __slots__ = ("buffer", "key", "value")

    def __init__(self, buffer: LocalBuffer, key: Any, value: Any):
        self.buffer, self.key, self.value = buffer, key, value


def _augmented_operator(name: str, symbol: str):
    iop = getattr(operator, f"i{name.rstrip('_')}")

    def op(self, other):
        value, self.value = self.value, None
        if type(self.buffer) is LocalBuffer and _batched_among(other, []):
            del value  # (promotion counts the references to the plain array: drop ours)
            self.buffer._promote((other,), f"x[key] {symbol}= value")
            return iop(self.buffer[self.key], other)
        return iop(value, _plain_args(other))

    op.__name__ = f"__i{name.rstrip('_')}__"
    return op


for _name, _symbol in (("add", "+"), ("sub", "-"), ("mul", "*"), ("truediv", "/"),
                       ("floordiv", "//"), ("mod", "%"), ("pow", "**"), ("matmul", "@"),
                       ("and_", "&"), ("or_", "|"), ("xor", "^"), ("lshift", "<<"),
                       ("rshift", ">>")):
    setattr(_AugmentedRead, f"__i{_name.rstrip('_')}__", _augmented_operator(_name, _symbol))

_AUGMENTED: dict = {}  # (code, f_lasti) -> whether it reads the target of ``x[k] op= v``
_INPLACE_OPS = frozenset(range(13, 26))  # BINARY_OP's in-place operators (+= ... ^=)


def _augmented(frame: Any) -> bool:
    """Whether ``frame`` runs the read of ``x[key] op= v`` (its bytecode: ``COPY 2; COPY 2;
    BINARY_SUBSCR``, then after ``v`` the in-place ``BINARY_OP`` and ``SWAP 3; SWAP 2;
    STORE_SUBSCR``)."""
    key = (frame.f_code, frame.f_lasti)
    found = _AUGMENTED.get(key)
    if found is None:
        found = _AUGMENTED[key] = _reads_augmented(*key)
    return found


def _reads_augmented(code: Any, lasti: int) -> bool:
    instrs = [i for i in dis.get_instructions(code) if i.opname != "CACHE"]
    k = max((j for j, ins in enumerate(instrs) if ins.offset <= lasti), default=None)
    if k is None or k < 2 or instrs[k].opname != "BINARY_SUBSCR" \
            or any(ins.opname != "COPY" or ins.arg != 2 for ins in instrs[k - 2:k]):
        return False
    for j in range(k + 1, len(instrs) - 3):
        ops = [ins.opname for ins in instrs[j:j + 4]]
        if ops == ["BINARY_OP", "SWAP", "SWAP", "STORE_SUBSCR"]:
            return instrs[j].arg in _INPLACE_OPS and instrs[j + 1].arg == 3 \
                and instrs[j + 2].arg == 2
    return False


# ---- the buffer makers ----------------------------------------------------------------------
def _maker(name: str):
    original = getattr(np, name)

    def make(*args, **kwargs):
        level = _level_for_buffers()
        if level is None or "like" in kwargs:
            return original(*args, **kwargs)
        found = _batched_among((args, kwargs), [])
        if found:
            common = _common_values((args, kwargs))
            if common is None:
                # np.full(shape, v) with a batched v: batched from the start, v per example
                return original(*args, like=found[0], **kwargs)
            args, kwargs = common  # np.arange(1, n + 1) with n every example's alike
        return LocalBuffer(original(*args, **kwargs), level)

    make.__name__ = make.__qualname__ = name
    make.__doc__ = (f"``numpy.{name}``, whose result inside a vmap is per-example state "
                    f"(batchtensor.buffers).\n\n{original.__doc__ or ''}")
    make.__wrapped__ = original  # type: ignore[attr-defined]  # (a function's attribute)
    return make


def _like_maker(name: str):
    """``zeros_like`` and friends: a batched prototype dispatches as before (a batched
    result); an unbatched one makes a buffer."""
    original = getattr(np, name)

    def make(prototype, *args, **kwargs):
        level = _level_for_buffers()
        if level is None or type(prototype) is BatchedTensor:
            return original(prototype, *args, **kwargs)
        if _batched_among((args, kwargs), []):  # numpy's (batchtensor.undispatched) takes it
            return getattr(np, name)(prototype, *args, **kwargs)
        return LocalBuffer(original(plain_of(prototype), *args, **kwargs), level)

    make.__name__ = make.__qualname__ = name
    make.__doc__ = (f"``numpy.{name}``, whose result inside a vmap is per-example state "
                    f"(batchtensor.buffers).\n\n{original.__doc__ or ''}")
    make.__wrapped__ = original  # type: ignore[attr-defined]  # (a function's attribute)
    return make


def _same_memory(res: np.ndarray, src: np.ndarray) -> bool:
    """Whether ``res`` is ``src`` or a view of its memory. An array with no element shares
    memory with nothing as ``np.may_share_memory`` sees it, so there the owners of their
    memory are compared (``np.asarray(empty)`` is ``empty``, not a new array)."""
    if res is src:
        return True
    if res.size and src.size:
        return bool(np.may_share_memory(res, src))
    return memory_root(res) is memory_root(src)


def _copy_maker(convert):
    """``np.copy`` / ``np.array`` (for ``array``, the conversions' wrapper): a new array of
    unbatched data is a buffer; anything batched goes on as before."""

    def make(a, *args, **kwargs):
        level = _level_for_buffers()
        if level is None or "like" in kwargs or _batched_among((a, args, kwargs), []):
            return convert(a, *args, **kwargs)
        src = plain_of(a)
        res = convert(src, *args, **kwargs)
        if type(res) is not np.ndarray or (type(src) is np.ndarray
                                           and _same_memory(res, src)):
            return res  # not a new array (copy=False), or a subclass: not a buffer
        return LocalBuffer(res, level)

    make.__name__ = make.__qualname__ = convert.__name__
    make.__doc__ = convert.__doc__
    make.__wrapped__ = getattr(convert, "__wrapped__", convert)
    return make


MAKERS = ("zeros", "ones", "empty", "full", "eye", "identity", "arange")
LIKE_MAKERS = ("zeros_like", "ones_like", "empty_like", "full_like")



#: NumPy functions whose result, made from a buffer, is a buffer too (reads with a batched
#: index go per example; being views, they are never promoted)
_DERIVED = frozenset({np.broadcast_to, np.reshape, np.ravel, np.transpose, np.expand_dims,
                      np.squeeze, np.atleast_1d, np.atleast_2d})

_MAKERS: dict[int, Any] = {}  # id(NumPy's function) -> its maker
#: NumPy's own functions, by name (while a level is open, numpy's attribute may be another)
_NUMPY_MAKERS = {name: getattr(np, name) for name in MAKERS + LIKE_MAKERS + ("copy",)}
_MAKER_NAMED: dict[str, Any] = {}  # (NumPy's own: while a level is open, np.full is another)
for _name in MAKERS:
    _MAKERS[id(getattr(np, _name))] = _MAKER_NAMED[_name] = _maker(_name)
for _name in LIKE_MAKERS:
    _MAKERS[id(getattr(np, _name))] = _MAKER_NAMED[_name] = _like_maker(_name)
_MAKERS[id(np.copy)] = _copy_maker(np.copy)
_MAKERS[id(conversions.ORIGINALS["array"])] = _copy_maker(conversions.replacement("array"))
for _maker_fn in _MAKERS.values():
    # NumPy's like= path looks a C function up by name in numpy's namespace; a call that
    # reaches BatchedTensor.__array_function__ through a maker must name NumPy's function
    ALIASES[_maker_fn] = _maker_fn.__wrapped__


class _NumpyForTheFunction(types.ModuleType):
    """What the function's module sees as ``numpy`` during a pass: NumPy, but for the buffer
    makers. Attributes are looked up in NumPy on first use and kept (``dict`` speed after),
    but for the names swapped in NumPy while a vmap runs (``conversions``), read each time."""

    def __getattr__(self, name: str) -> Any:
        value = getattr(np, name)
        if not conversions.is_swapped(np, name):
            self.__dict__[name] = value
        return value

    def __dir__(self):
        return dir(np)


_STAND_IN = _NumpyForTheFunction("numpy", np.__doc__)
_STAND_IN.__dict__.update({fn.__name__: fn for fn in _MAKERS.values()})
_STAND_IN.__dict__.update(__file__=np.__file__, __path__=np.__path__, __spec__=np.__spec__,
                          __version__=np.__version__)

_lock = threading.Lock()
_swapped: dict[int, list] = {}  # id(globals) -> [passes running, [(name, original, stand-in)]]
#: id(globals) -> (its size, (name, its value, its stand-in) for each name to swap there)
_bound: dict[int, tuple] = {}
_primitives_seen = 0  # len(foreign.PRIMITIVES) when _bound was last cleared
_NOT_SWAPPED = ("numpy", "batchtensor")  # NumPy's own code needs NumPy's own functions


def _python_function(func: Any) -> Any:
    """The Python function under partials, bound methods and callable objects, or None."""
    for _ in range(4):
        if type(getattr(func, "__globals__", None)) is dict:
            return func
        func = getattr(func, "func", None) or getattr(func, "__func__", None) \
            or getattr(type(func), "__call__", None)
        if func is None:
            return None
    return None


def _unwrapped(fn: Any) -> Any:
    """``fn`` through decorators that keep the function they wrap (``functools.wraps``'s
    ``__wrapped__``: scikit-learn's ``validate_params``, SciPy's ``_axis_nan_policy``)."""
    for _ in range(8):
        inner = getattr(fn, "__wrapped__", None)
        if type(getattr(inner, "__globals__", None)) is not dict:
            break
        fn = inner
    return fn


def _own(g: dict) -> bool:
    name = str(g.get("__name__", ""))
    # (a doctest's globals are a copy of its module's, under its name: user code)
    return name.startswith(_NOT_SWAPPED) and getattr(sys.modules.get(name), "__dict__",
                                                     None) is g


def module_of(func: Any) -> dict | None:
    """The globals of ``func``'s module (through partials, bound methods and callable
    objects, and through decorators to the function they wrap: ``__wrapped__``), or None
    where it is NumPy's or batchtensor's own. (The decorator's module is swapped too: it is
    the first entry of ``learnt_modules``.)"""
    fn = _python_function(func)
    if fn is None:
        return None
    g = _unwrapped(fn).__globals__
    return None if _own(g) else g


def _converters() -> dict[int, Any]:
    """id(NumPy's conversion function) -> the conversions' replacement, for names a module
    bound at import (``from numpy import asarray``), which swapping numpy's cannot reach."""
    if not _CONVERTERS:
        _CONVERTERS.update({id(fn): conversions.replacement(name)
                            for name, fn in conversions.ORIGINALS.items()})
    return _CONVERTERS


_CONVERTERS: dict[int, Any] = {}


def _stand_in_for(value: Any) -> Any:
    if value is np:
        return _STAND_IN
    maker = _MAKERS.get(id(value))
    if maker is not None:
        return maker
    converter = _converters().get(id(value))
    if converter is not None:
        return converter
    try:  # a foreign callable with a rule, bound by name (from scipy.ndimage import convolve)
        return PRIMITIVES.get(value)
    except TypeError:  # unhashable
        return None


# ---- array-api-compat's NumPy namespace ----------------------------------------------------
#: creation functions of array-api-compat's NumPy namespace (vendored by SciPy and
#: scikit-learn: ``xp = array_namespace(x); out = xp.zeros(n)``), which call NumPy's own
#: through a reference of their own: during a pass they make buffers as the function's module
#: does (scikit-learn's ``xp.zeros(n)`` then ``out[mask] = ...`` in its metrics). Code reaches
#: them as attributes of the namespace module, so they are intercepted by switching that
#: module's class while any level is open (``conversions.intercept``: one assignment per
#: module when the outermost level opens and closes); outside a pass, on any thread, the
#: replacement calls the namespace's own function.
_NAMESPACE_MAKERS = ("empty", "zeros", "ones", "full", "eye", "arange", "empty_like",
                     "zeros_like", "ones_like", "full_like", "asarray")
#: the namespace's ``asarray`` of plain data that is not an array already (``clip``'s bounds:
#: ``b = xp.asarray(max)``, then ``out[m] = b[m]`` with a batched ``m``) makes a buffer, as
#: ``np.array`` of plain data in the function's module does; of an array, that array
_MAKER_NAMED["asarray"] = _copy_maker(conversions.replacement("asarray"))
_NAMESPACE_SUFFIX = "array_api_compat.numpy"
_namespaces_found: set = set()  # the names of the namespace modules intercepted


def _namespace_maker(name: str, original: Any) -> Any:
    maker = _MAKER_NAMED[name]

    def make(*args, device=None, **kwargs):
        if device not in (None, "cpu") or _level_for_buffers() is None:
            return original(*args, device=device, **kwargs)
        return maker(*args, **kwargs)

    make.__name__ = make.__qualname__ = name
    make.__wrapped__ = original  # type: ignore[attr-defined]  # (a function's attribute)
    return make


def _namespace_solve(original: Any) -> Any:
    """The namespace's ``linalg.solve`` (array-api-compat's own for NumPy, which converts its
    arguments with NumPy's ``_makearray``): with a batched argument, ``np.linalg.solve``,
    whose meaning NumPy 2 made the array API's (``x2`` a vector only where it is 1-d)."""

    def solve(x1, x2, /):
        if current_level() is not None and _batched_among((x1, x2), []):
            return np.linalg.solve(x1, x2)
        return original(x1, x2)

    solve.__name__ = solve.__qualname__ = "solve"
    solve.__doc__ = original.__doc__
    solve.__wrapped__ = original  # type: ignore[attr-defined]  # (a function's attribute)
    return solve


def intercept_namespaces() -> None:
    """Intercept the creation functions of the namespace modules imported since the last look
    (``conversions.on_new_modules``), and their ``linalg.solve``."""
    for key, mod in list(sys.modules.items()):
        if key.endswith(_NAMESPACE_SUFFIX + ".linalg") and key not in _namespaces_found:
            _namespaces_found.add(key)
            original = vars(mod).get("solve")
            if callable(original):
                conversions.intercept(mod, "solve", _namespace_solve(original), by_class=True)
            continue
        if not key.endswith(_NAMESPACE_SUFFIX) or key in _namespaces_found:
            continue
        _namespaces_found.add(key)
        for name in _NAMESPACE_MAKERS:
            original = vars(mod).get(name)
            if callable(original):
                conversions.intercept(mod, name, _namespace_maker(name, original),
                                      by_class=True)


conversions.on_new_modules.append(intercept_namespaces)


def enter(g: Any, whole: bool = True) -> Any:
    """A vmap pass of a function of the module with globals ``g`` (``module_of``) starts: its
    names for NumPy become the stand-in's, and its names for NumPy's conversion functions the
    conversions'. ``whole=False`` (a module the function calls into, ``learn_from``): the
    names bound to NumPy's functions only, not the name of the ``numpy`` module, whose
    stand-in is not ``numpy`` (``xp is np`` there would change its answer). ``g`` may also be
    an entry of ``learnt_modules`` that names maker calls (``MakerSites``): they make buffers
    on this thread until ``leave``. Returns what ``leave`` takes (with the same ``whole``)."""
    if g is None or not config.intercept_numpy:
        return None
    if type(g) is MakerSites:
        return _open_sites(g)
    if type(g) is WholeModule:
        return g if enter(g.g) is not None else None
    key = id(g) if whole else -id(g)
    _lock.acquire()
    try:
        entry = _swapped.get(key)
        if entry is None:
            global _primitives_seen
            if len(PRIMITIVES) != _primitives_seen:  # rules loaded since: learn modules anew
                _bound.clear()
                _primitives_seen = len(PRIMITIVES)
            size, swaps = _bound.get(id(g), (None, None))
            # learnt once per module and learnt again where the module has gained names since
            # (a script or notebook that imports as it goes) or rebound one of those names
            if size != len(g) or any(g.get(n) is not v for n, v, _ in swaps):
                size = len(g)
                names = [n for n, v in list(g.items()) if _stand_in_for(v) is not None]
                swaps = [(n, v, _stand_in_for(v)) for n, v in ((n, g.get(n)) for n in names)]
                swaps = tuple(t for t in swaps if t[2] is not None)
                _bound[id(g)] = (size, swaps)
            if not whole:
                swaps = tuple(t for t in swaps if t[1] is not np)
            if not swaps:
                return None
            for n, _, stand_in in swaps:
                g[n] = stand_in
            entry = _swapped[key] = [0, swaps]
        entry[0] += 1
    finally:
        _lock.release()
    return g


# ---- modules the function calls that bound NumPy's conversions by name ------------------------
#: For each vmapped function (by its code), the globals of the modules it calls into that were
#: found to convert a batched value through a NumPy conversion function they bound at import
#: (``from numpy import asarray`` in ``scipy.signal._waveforms``): every pass of that function
#: swaps their names as it swaps its own module's (``enter``), so the value stays batched
#: there. Learnt from the conversion's error (``learn_from``), once per function and module.
#: Per function, not for every vmap: swapping a module's names costs about 2.5 us a pass.
_LEARNT: dict = {}


class WholeModule:
    """An entry of ``learnt_modules``: a module swapped as the function's own is
    (``enter(g, whole=True)``), the module of a decorator around the function (its own
    module is the decorated function's: ``module_of``)."""

    __slots__ = ("g",)

    def __init__(self, g: dict):
        self.g = g


def function_key(func: Any) -> Any:
    """What every vmap of the same code shares what it learns under: the code of the Python
    function (under partials, bound methods and decorators), else ``func`` itself."""
    fn = _python_function(func)
    return _unwrapped(fn).__code__ if fn is not None else func


def learnt_modules(func: Any) -> list:
    """The list of modules learnt for ``func`` (shared by every vmap of the same code: of
    the function a decorator wraps, ``module_of``)."""
    fn = _python_function(func)
    key = function_key(func)
    with _lock:
        entry = _LEARNT.get(id(key))
        if entry is None or entry[0] is not key:
            entry = _LEARNT[id(key)] = (key, [])  # (the key kept alive: its id stays its own)
        learnt: list = entry[1]
        outer = fn.__globals__ if fn is not None else None
        if outer is not None and outer is not _unwrapped(fn).__globals__ and not _own(outer) \
                and not any(type(m) is WholeModule and m.g is outer for m in learnt):
            learnt.insert(0, WholeModule(outer))
    return learnt


_SUBSCRIPTS = frozenset(dis.opmap[name] for name in ("STORE_SUBSCR", "STORE_SLICE",
                                                      "BINARY_SUBSCR", "BINARY_SLICE")
                        if name in dis.opmap)


def _is_store(exc: BaseException) -> bool:
    """A refused conversion of ``out[i] = x`` into a plain array (``diagnostics``)."""
    return any(str(e).startswith("cannot write a batched value") for e in (exc, exc.__cause__)
               if e is not None)


_pass = threading.local()  # .learnt: (the learnt list, its length) when this thread's pass began


def pass_begins(learnt: list) -> None:
    """A pass on this thread enters ``learnt`` as it is now (``learn_from`` tells a module
    another thread learnt meanwhile, which a new pass gets, from one the pass had)."""
    _pass.learnt = (learnt, len(learnt))


def _pass_had(learnt: list, g: Any) -> bool:
    had, n = getattr(_pass, "learnt", (None, 0))
    if had is not learnt:
        return True  # (no record of this list: as before, no new pass)
    return any(m is g for m in learnt[:n])


def learn_from(exc: BaseException, learnt: list, own: dict | None) -> bool:
    """Whether ``exc``, a refused conversion, happened in code whose module (not NumPy's,
    batchtensor's, or ``own``, the function's, swapped already) bound one of NumPy's
    conversion functions by name and names it on that line, or indexed a plain array there
    (``out[i] = x``, ``out[idx] = v``, ``w[idx]``) and bound NumPy's buffer makers by name
    (``from numpy import zeros``): then that module joins ``learnt`` and a new pass may get
    past it (where that was not it, the new pass fails alike and reruns: one pass more,
    once). Its ``np`` stays ``numpy`` (``enter(g, whole=False)``); instead, where the array
    written was made by ``np.zeros(...)`` (or another of NumPy's makers reached through the
    ``numpy`` module) straight into a variable of that frame or of a caller's that holds it,
    that call joins ``learnt`` (``MakerSites``) and makes a buffer in the new pass."""
    tb = exc.__traceback__ or getattr(exc.__cause__, "__traceback__", None)
    frame: FrameType | None
    lineno: Any
    lasti: Any  # (ints wherever frame is set)
    frame = lineno = lasti = None
    frames: list[FrameType] = []  # outside NumPy and batchtensor, the innermost first
    while tb is not None:
        name = str(tb.tb_frame.f_globals.get("__name__", ""))
        if not name.startswith(_NOT_SWAPPED):
            frame, lineno, lasti = tb.tb_frame, tb.tb_lineno, tb.tb_lasti
            frames.insert(0, frame)
        tb = tb.tb_next
    if frame is None or not config.intercept_numpy:
        return False
    whole = [own] + [m.g for m in learnt if type(m) is WholeModule]  # (makers make buffers)
    if _learn_sites(exc, [f for f in frames if not any(f.f_globals is w for w in whole)],
                    learnt):
        return True
    read = _subscripted(frame, lasti)
    if read is not None and _learn_sites(exc, frames, learnt, read):
        return True
    g = frame.f_globals
    if any(m is g for m in learnt):
        # learnt already; by another thread after this pass began, the pass lacked it
        return not _pass_had(learnt, g)
    if type(g) is not dict or any(g is w for w in whole):
        return False
    code = frame.f_code.co_code
    if _is_store(exc) or (0 <= lasti < len(code) and code[lasti] in _SUBSCRIPTS):
        # out[i] = x into a plain array, plain[idx] with a batched index: where the array was
        # made in this module by a maker bound by name (zeros(n)), a new pass makes it a
        # buffer, as the function's own module does
        if not any(v is not np and _stand_in_for(v) is not None for v in list(g.values())):
            return False
    else:
        converters = _converters()
        names = [n for n, v in list(g.items()) if id(v) in converters and type(n) is str]
        line = linecache.getline(frame.f_code.co_filename, lineno)
        if not any(re.search(rf"\b{re.escape(n)}\b", line) for n in names):  # map(asarray, .)
            return False
    with _lock:
        if not any(m is g for m in learnt):
            learnt.append(g)
    return True


# ---- maker calls learnt from a write that failed ----------------------------------------------
#: NumPy's makers whose call at a learnt site makes a buffer (``array`` and ``asarray``, which
#: the conversions replace in ``numpy``, are not among them)
SITE_MAKERS = MAKERS + LIKE_MAKERS + ("copy",)


class MakerSites:
    """An entry of ``learnt_modules``: calls of NumPy's makers in one code object
    (``out = np.zeros(n)`` in a library function the vmapped function calls) whose result
    that code went on to write a batched value into, which failed (a plain array). During
    every pass of the function after, those calls make buffers, as the function's own
    module's makers do; nothing else changes in that module (its ``np`` stays ``numpy``).

    A call is told by its code object and the instruction running it (``f_lasti``), learnt
    from the bytecode: the store of the call's result straight into the variable written
    (``name = np.zeros(...)``), the callable loaded as an attribute of a global bound to
    ``numpy``, and no jump among the arguments. An array made anywhere else is untouched:
    one made at import or kept in a cache by an earlier call is a plain array, whose batched
    write stays the error or the rerun it was; a buffer whose pass has ended is never
    promoted (``LocalBuffer._promote``)."""

    __slots__ = ("code", "lastis")

    def __init__(self, code: Any):
        self.code = code
        self.lastis: set[int] = set()


class _OpenSites(tuple):
    """What ``enter`` gives for a ``MakerSites``: the ``(code, lasti)`` keys it opened."""

    __slots__ = ()


#: per thread: .active, (code, lasti) -> passes that opened it now; .seen, every key opened
_site_state = threading.local()
_sites_open = 0  # MakerSites open on all threads together: the makers' cheap first test
_site_makers: dict[str, Any] = {}  # name -> the replacement installed in numpy (once learnt)


def _open_sites(sites: MakerSites) -> _OpenSites:
    global _sites_open
    keys = _OpenSites((sites.code, lasti) for lasti in tuple(sites.lastis))
    active = getattr(_site_state, "active", None)
    if active is None:
        active = _site_state.active = {}
    for key in keys:
        active[key] = active.get(key, 0) + 1
    seen = getattr(_site_state, "seen", None)
    if seen is None:
        seen = _site_state.seen = set()
    seen.update(keys)
    with _lock:
        _sites_open += 1
    return keys


def _close_sites(keys: _OpenSites) -> None:
    global _sites_open
    active = _site_state.active
    for key in keys:
        n = active[key] - 1
        if n:
            active[key] = n
        else:
            del active[key]
    with _lock:
        _sites_open -= 1


def _site_maker(name: str, fallback: Any) -> Any:
    """``numpy.<name>`` while a vmap runs: a buffer where the caller's instruction is an open
    learnt site on this thread, else ``fallback`` (NumPy's, or the replacement of another
    module of batchtensor: ``undispatched``'s ``full``)."""
    maker = _MAKERS[id(_NUMPY_MAKERS[name])]

    def make(*args, **kwargs):
        if _sites_open:
            active = getattr(_site_state, "active", None)
            if active:
                f = sys._getframe(1)
                if (f.f_code, f.f_lasti) in active:
                    return maker(*args, **kwargs)
        return fallback(*args, **kwargs)

    make.__name__ = make.__qualname__ = name
    make.__doc__ = maker.__doc__
    make.__wrapped__ = _NUMPY_MAKERS[name]  # type: ignore[attr-defined]  # (a function's)
    return make


def _install_site_makers() -> None:
    """Replace NumPy's makers in ``numpy`` while a vmap runs (``conversions.intercept``), from
    the first site learnt on: a process that learns none pays nothing."""
    with _lock:
        if _site_makers:
            return
        for name in SITE_MAKERS:
            original = _NUMPY_MAKERS[name]
            made = _site_makers[name] = _site_maker(name, conversions.replacement_of(np, name))
            ALIASES[made] = original  # (NumPy's like= path names it: the dispatcher's table)
            # (a module imported during a pass that binds it by name: a maker there too)
            _MAKERS[id(made)] = _MAKERS[id(original)]
    for name, made in _site_makers.items():
        conversions.intercept(np, name, made, by_class=True)


_site_readers: dict[str, Any] = {}  # name -> the replacement installed in numpy (once learnt)


def _site_reader(name: str, fallback: Any) -> Any:
    """``numpy.<name>`` while a vmap runs: where the caller's instruction is an open learnt
    site on this thread (``name = np.cumsum(x)``, whose result the code then read with a
    batched index), a new array it returns is a buffer, as a maker's is, and so is a
    read-only view (``a = np.broadcast_to(a, shape)``, then ``a[mask]``: SciPy's
    ``skewnorm.cdf``), which reads per example and is never promoted (a view); else
    ``fallback``'s result as it is (NumPy's function, or another replacement of
    batchtensor's)."""

    def call(*args, **kwargs):
        res = fallback(*args, **kwargs)
        if _sites_open and type(res) is np.ndarray and (
                res.base is None or not res.flags.writeable):
            active = getattr(_site_state, "active", None)
            if active:
                f = sys._getframe(1)
                if (f.f_code, f.f_lasti) in active and not any(res is a for a in args):
                    level = _level_for_buffers()
                    if level is not None:
                        return LocalBuffer(res, level)
        return res

    call.__name__ = call.__qualname__ = name
    call.__doc__ = fallback.__doc__
    call.__wrapped__ = _numpy_function(name)  # type: ignore[attr-defined]  # (a function's)
    return call


def _numpy_function(name: str) -> Any:
    """NumPy's own ``numpy.<name>`` (under the replacements installed while a vmap runs)."""
    fn = getattr(np, name, None)
    for _ in range(4):  # (through batchtensor's wrappers only: NumPy's have __wrapped__ too)
        if not str(getattr(fn, "__module__", "")).startswith("batchtensor"):
            break
        fn = getattr(fn, "__wrapped__", None)
    return fn


def _reads_per_example(name: str) -> bool:
    """Whether a learnt call ``np.<name>(...)`` may make a buffer (``_site_reader``): a
    NumPy function (not a class, a ufunc, a conversion or a maker, which the makers serve)."""
    fn = _numpy_function(name)
    return callable(fn) and not isinstance(fn, (type, np.ufunc)) \
        and name not in conversions.ORIGINALS and name not in SITE_MAKERS \
        and str(getattr(fn, "__module__", "")).startswith("numpy")


def _install_site_readers(names: set) -> None:
    """Replace ``numpy.<name>`` for each of ``names`` while a vmap runs, once."""
    made = {}
    with _lock:
        for name in names:
            if name not in _site_readers:
                made[name] = _site_readers[name] = _site_reader(
                    name, conversions.replacement_of(np, name))
                ALIASES[made[name]] = _numpy_function(name)
    for name, reader in made.items():
        conversions.intercept(np, name, reader, by_class=True)
        _STAND_IN.__dict__.pop(name, None)  # (read from numpy each time, as it is swapped now)


def _subscripted(frame: Any, lasti: Any) -> Any:
    """The plain array that ``frame`` reads at ``lasti`` with ``a[key]`` (a variable of the
    frame), where that is the instruction there; else None. NumPy converts a batched key there
    without asking it: where the array was made by a NumPy call stored straight into a
    variable, that call is learnt (``_learn_sites``) and makes a buffer in every pass after,
    whose ``[]`` reads per example."""
    if lasti is None:
        return None
    instrs = _instructions(frame.f_code)
    k = next((j for j, ins in enumerate(instrs) if ins[4] == lasti), None)
    if k is None or instrs[k][0] != "BINARY_SUBSCR":
        return None
    need, j = 2, k - 1  # back over the key, to the load of the array
    try:
        while j >= 0:
            opname, opcode, arg, _, _ = instrs[j]
            if opcode in _JUMPS:
                return None
            need -= dis.stack_effect(opcode, arg if opcode >= dis.HAVE_ARGUMENT else None,
                                     jump=False)
            if need <= 0:
                break
            j -= 1
    except ValueError:
        return None
    if need != 0 or j < 0 or instrs[j][0] not in ("LOAD_FAST", "LOAD_DEREF"):
        return None
    value = frame.f_locals.get(instrs[j][3])
    return value if type(value) is np.ndarray else None


def _written_arrays(exc: BaseException) -> list:
    """The plain arrays a refused write went into: the array of ``out[i] = x`` (NumPy may wrap
    that error), or a SharedWriteError's targets."""
    found: list = []
    for e in (exc, exc.__cause__):
        if e is None:
            continue
        target = getattr(e, "batchtensor_target", None)
        if target is not None:
            found.append(target)
        found.extend(getattr(e, "targets", None) or ())
    return [t for t in found if type(t) is np.ndarray]


def _learn_sites(exc: BaseException, frames: list, learnt: list, read: Any = None) -> bool:
    """Whether the write ``exc`` refused went into an array made, in the code of one of
    ``frames`` (the innermost first: the writer, then its callers), at a maker call not
    learnt yet (``MakerSites``): then that call joins ``learnt``. ``read``: instead, the
    array read with a batched key (``_subscripted``), made by a maker or another NumPy
    function (``_site_reader``)."""
    targets = _written_arrays(exc) if read is None else [read]
    if not targets:
        return False
    readers: set | None = None if read is None else set()
    for frame in frames:
        g = frame.f_globals
        numpy_names = {n for n, v in list(g.items()) if v is np and type(n) is str}
        if not numpy_names:
            continue
        names = {n for n, v in list(frame.f_locals.items()) if type(v) is np.ndarray and any(
            t is v or (read is None and t.base is v) for t in targets)}
        lastis = _maker_sites(frame.f_code, names, numpy_names, readers) if names else set()
        if lastis:
            break
    else:
        return False
    with _lock:
        entry = next((m for m in learnt if type(m) is MakerSites and m.code is frame.f_code),
                     None)
        if entry is not None and lastis <= entry.lastis:
            # learnt already: by a pass on another thread while this one ran without them
            # (a new pass opens them), else the array came from elsewhere (no new pass)
            seen = getattr(_site_state, "seen", ())
            return any((frame.f_code, lasti) not in seen for lasti in lastis)
        if entry is None:
            entry = MakerSites(frame.f_code)
            learnt.append(entry)
        entry.lastis |= lastis
    _install_site_makers()
    if readers:
        _install_site_readers(readers)
    return True


_STORE_NAMES = frozenset({"STORE_FAST", "STORE_NAME", "STORE_DEREF"})
_JUMPS = frozenset(dis.hasjrel) | frozenset(dis.hasjabs)
#: Python 3.13's superinstructions, as the two they stand for
_PAIRS = {"LOAD_FAST_LOAD_FAST": ("LOAD_FAST", "LOAD_FAST"),
          "STORE_FAST_LOAD_FAST": ("STORE_FAST", "LOAD_FAST"),
          "STORE_FAST_STORE_FAST": ("STORE_FAST", "STORE_FAST")}


@functools.lru_cache(maxsize=256)
def _instructions(code: Any) -> tuple:
    """``code``'s instructions as ``(opname, opcode, arg, argval, offset)``, no caches, each
    superinstruction as the two it stands for. Kept per code object: a function that reruns
    at every call (a write into an array vmap cannot learn) asks again each time, and
    disassembling cost about 0.5 ms a call there (``bench/rerun.py``)."""
    out: list[tuple[str, int, Any, Any, int]] = []
    for ins in dis.get_instructions(code):
        pair = _PAIRS.get(ins.opname)
        if pair is not None:
            for name, value in zip(pair, ins.argval):
                out.append((name, dis.opmap[name], 0, value, ins.offset))
        elif ins.opname != "CACHE":
            out.append((ins.opname, ins.opcode, ins.arg, ins.argval, ins.offset))
    return tuple(out)


def _maker_call(instrs: Sequence, k: int, numpy_names: set,
                readers: set | None = None) -> int | None:
    """Where ``instrs[k]`` stores the result of a call ``np.<maker>(...)`` (``np`` a name in
    ``numpy_names``, no jump among the arguments): the index of the call's first
    instruction (PRECALL or CALL), else None. With ``readers`` (a set), any NumPy function
    ``_reads_per_example`` takes too, whose name joins ``readers``."""
    call = instrs[k - 1] if k else None
    if call is None or call[0] not in ("CALL", "CALL_KW"):
        return None
    first = k - 2 if k >= 2 and instrs[k - 2][0] == "PRECALL" else k - 1
    j, need = first - 1, (call[2] or 0) + (call[0] == "CALL_KW")
    try:
        while need > 0 and j >= 0:  # back over the arguments, to the callable's load
            opname, opcode, arg, _, _ = instrs[j]
            if opcode in _JUMPS:
                return None
            need -= dis.stack_effect(opcode, arg if opcode >= dis.HAVE_ARGUMENT else None,
                                     jump=False)
            j -= 1
    except ValueError:
        return None
    if j >= 1 and instrs[j][0] == "PUSH_NULL":  # (Python 3.13: after the callable's load)
        j -= 1
    if need != 0 or j < 1:
        return None
    load, module = instrs[j], instrs[j - 1]
    if load[0] not in ("LOAD_METHOD", "LOAD_ATTR") or module[0] not in (
            "LOAD_GLOBAL", "LOAD_NAME") or module[3] not in numpy_names:
        return None
    if load[3] in SITE_MAKERS:
        return first
    if readers is not None and _reads_per_example(load[3]):
        readers.add(load[3])
        return first
    return None


#: methods that keep their argument in a container (``cache.append(out)``)
_KEEPERS = frozenset({"append", "appendleft", "extend", "insert", "add", "setdefault",
                      "update", "put", "__setitem__"})


def _kept_local(code: Any, name: str) -> bool:
    """Whether the source of ``code`` never hands the variable ``name`` to a global, another
    variable, an attribute or a container (``cache[key] = name``, ``self.w = name``,
    ``kept.append(name)``, ``global name``): an array it holds could be kept beyond the
    call there (a cache), which no example of the loop owns. No source: False."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(code)))
    except (OSError, TypeError, SyntaxError, ValueError):
        return False
    fn = next((n for n in ast.walk(tree)
               if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))), None)
    if fn is None:
        return False

    def holds(value: Any) -> bool:  # the value is the variable, or a tuple / list holding it
        if isinstance(value, ast.Name):
            return value.id == name
        return isinstance(value, (ast.Tuple, ast.List)) and any(map(holds, value.elts))

    for node in ast.walk(fn):
        if isinstance(node, (ast.Global, ast.Nonlocal)) and name in node.names:
            return False
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.NamedExpr)) and node.value \
                is not None and holds(node.value):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if not all(isinstance(t, ast.Name) and t.id == name for t in targets):
                return False
        if isinstance(node, ast.Call) and any(holds(a) for a in node.args) and (
                isinstance(node.func, ast.Attribute) and node.func.attr in _KEEPERS
                or isinstance(node.func, ast.Name) and node.func.id == "setattr"):
            return False
    return True


def _maker_sites(code: Any, names: set, numpy_names: set,
                 readers: set | None = None) -> set[int]:
    """The ``f_lasti`` values of ``code``'s calls ``name = np.<maker>(...)`` for ``name`` in
    ``names`` (a variable nothing keeps beyond the call: ``_kept_local``) and ``np`` in
    ``numpy_names`` (read from the bytecode, once per learning); with ``readers``, of other
    NumPy functions too (``_maker_call``)."""
    instrs = _instructions(code)
    found: set[int] = set()
    todo, seen = list(names), set(names)
    while todo:
        name = todo.pop()
        for k, ins in enumerate(instrs):
            if ins[0] in _STORE_NAMES and ins[3] == name:
                source = _copied_from(instrs, k)
                if source is not None and source not in seen:
                    # ``out = made.copy()``: a copy is a new array per example, as ``made``
                    # would be as a buffer (``LocalBuffer.copy``): learn where ``made`` is made
                    seen.add(source)
                    todo.append(source)
                    continue
                first = _maker_call(instrs, k, numpy_names, readers) \
                    if _kept_local(code, name) else None
                if first is not None:
                    found.update(range(instrs[first][4], ins[4], 2))
    return found


def _copied_from(instrs: Sequence, k: int) -> str | None:
    """Where ``instrs[k]`` stores ``name.copy()`` (no arguments), ``name``, else None."""
    if k < 3 or instrs[k - 1][0] != "CALL" or instrs[k - 1][2]:
        return None
    j = k - 3 if instrs[k - 2][0] == "PRECALL" else k - 2
    if j >= 1 and instrs[j][0] == "PUSH_NULL":
        j -= 1
    if j < 1 or instrs[j][0] not in ("LOAD_METHOD", "LOAD_ATTR") or instrs[j][3] != "copy":
        return None
    load = instrs[j - 1]
    return load[3] if load[0] in ("LOAD_FAST", "LOAD_DEREF") else None


def leave(g: Any, whole: bool = True) -> None:
    """The pass ends: the last one on this module puts its names back. (A pass entering the
    module whole and one entering its function names only swap apart: where one puts a name
    back while the other runs, the other meets NumPy's own there, which converts: a rerun.)"""
    if g is None:
        return
    if type(g) is _OpenSites:
        _close_sites(g)
        return
    if type(g) is WholeModule:
        leave(g.g)
        return
    key = id(g) if whole else -id(g)
    _lock.acquire()
    try:
        entry = _swapped[key]
        entry[0] -= 1
        if entry[0] == 0:
            del _swapped[key]
            for n, original, stand_in in entry[1]:
                if g.get(n) is stand_in:  # unless the function rebound it
                    g[n] = original
    finally:
        _lock.release()
