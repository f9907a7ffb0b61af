"""The op registry: NumPy callable -> how to batch it (rule, boxed kind, or decomposition).

Entries are keyed by the callable object itself (``np.sum``, ``np.add``, ``np.linalg.solve``).
Each entry carries a *binder* built once, at registration, from a signature: at call time it
maps ``(args, kwargs)`` to parameter values with a few dict look-ups, never ``inspect``.

Besides the table, this base module holds what every layer above shares without importing one
another: the record of which path served each op (``record_paths``), the set of array types
accepted as physical values, and ``slots``, the entry points that higher layers fill in when
they are imported (the dispatcher, the boxed fallbacks), so that a lower layer can call them
without importing upwards.
"""

from __future__ import annotations

import inspect
from contextlib import contextmanager
from enum import Enum
from typing import Any, Callable, Iterator

import numpy as np

__all__ = ["StrEnum", "Path", "ParamKind", "BoxedKind", "Param", "Binder", "OpEntry", "REGISTRY",
           "ALIASES", "DIRECT", "PER_EXAMPLE",
           "lookup", "register", "op_name", "batch_rule", "decomposition", "binder_from_signature",
           "RECORDERS", "record", "record_paths", "register_physical_type", "is_physical_type",
           "defers_to_us", "slots"]

_EMPTY = inspect.Parameter.empty
_POS_ONLY = inspect.Parameter.POSITIONAL_ONLY
_POS_KW = inspect.Parameter.POSITIONAL_OR_KEYWORD
_VAR_POS = inspect.Parameter.VAR_POSITIONAL
_KW_ONLY = inspect.Parameter.KEYWORD_ONLY
_VAR_KW = inspect.Parameter.VAR_KEYWORD


class StrEnum(str, Enum):
    """An Enum whose members are also their string values: ``Path.RULE == "rule"`` holds, and
    ``str()`` / f-strings give the value (as ``enum.StrEnum``, which needs Python 3.11)."""

    def __str__(self) -> str:
        return self.value

    # (str's methods on an Enum: typeshed types Enum.__format__ as a method of Enum only)
    __format__ = str.__format__  # type: ignore[assignment]
    __repr__ = str.__repr__


class Path(StrEnum):
    """Which mechanism served a call (what ``record_paths`` logs)."""

    RULE = "rule"
    BOXED = "boxed"
    DECOMPOSITION = "decomposition"
    LOOP = "loop"


class BoxedKind(StrEnum):
    """The classes of ops that a boxed fallback serves."""

    POINTWISE = "pointwise"
    REDUCTION = "reduction"
    VARIADIC_BDIMS = "variadic_bdims"


class ParamKind(Enum):
    """How the dispatcher treats one parameter of a registered op."""

    ARRAY = "array"  # unwrapped into (value, bdim)
    ARRAYS = "arrays"  # a sequence of arrays: (values, bdims)
    OTHER = "other"  # passed through; a value batched here sends the call to the loop


ARRAY, ARRAYS, OTHER = ParamKind.ARRAY, ParamKind.ARRAYS, ParamKind.OTHER


def op_name(op: Any) -> str:
    """``numpy.linalg.solve``, ``numpy.add``, ``ndarray.astype``: how messages name an op."""
    name = getattr(op, "__name__", None) or repr(op)
    owner: Any = getattr(op, "__self__", None)
    if type(owner).__name__ == "ufunc":  # np.add.reduce and the other ufunc methods
        return f"numpy.{owner.__name__}.{name}"
    if type(op).__name__ == "ufunc":
        return f"numpy.{name}"
    qual = getattr(op, "__qualname__", name)
    mod = getattr(op, "__module__", None)
    if mod is None:
        return qual
    if mod.startswith("numpy"):
        if mod.startswith(("numpy._core", "numpy.lib._")):
            mod = "numpy"
        elif mod.startswith("numpy.linalg"):
            mod = "numpy.linalg"
        elif mod.startswith("numpy.fft"):
            mod = "numpy.fft"
    elif "._" in mod:  # scipy.signal._signaltools -> scipy.signal, as users reach it
        mod = mod[:mod.index("._")]
    if mod in ("operator", "_operator"):
        return {"getitem": "x[...] (getitem)", "setitem": "x[...] = v (setitem)"}.get(qual, qual)
    if mod == "builtins":
        return qual
    return f"{mod}.{qual}"


# ---- binding a call's arguments -----------------------------------------------------------------
class Param:
    __slots__ = ("name", "kind", "default", "positional", "keyword")

    def __init__(self, name: str, kind: ParamKind, default: Any, positional: bool,
                 keyword: bool):
        self.name = name
        self.kind = kind
        self.default = default  # _EMPTY if required
        self.positional = positional
        self.keyword = keyword


class Binder:
    """Maps a call's ``(args, kwargs)`` onto a fixed parameter list, fast.

    ``varargs``: the name of a ``*args`` parameter (collected into a tuple), or None.
    """

    __slots__ = ("op", "params", "index", "npos", "varargs", "varargs_kind", "varkw", "name")

    def __init__(self, op, params: list[Param], varargs=None, varargs_kind=OTHER, varkw=False):
        self.op = op
        self.name = op_name(op)
        self.params = params
        self.index = {p.name: i for i, p in enumerate(params) if p.keyword}
        self.npos = sum(1 for p in params if p.positional)
        self.varargs = varargs
        self.varargs_kind = varargs_kind
        self.varkw = varkw

    def bind(self, args: tuple, kwargs: dict) -> tuple[list, tuple, dict]:
        """Return (values in parameter order, extra positional, extra keywords)."""
        params = self.params
        npos = self.npos
        n = len(args)
        if n > npos:
            if self.varargs is None:
                raise TypeError(
                    f"{self.name}() takes at most {npos} positional arguments but {n} were given"
                )
            values = list(args[:npos])
            extra = tuple(args[npos:])
        else:
            values = list(args)
            extra = ()
        values.extend([_EMPTY] * (len(params) - len(values)))
        extra_kw = {}
        if kwargs:
            index = self.index
            for k, v in kwargs.items():
                i = index.get(k)
                if i is None:
                    if self.varkw:
                        extra_kw[k] = v
                        continue
                    raise TypeError(f"{self.name}() got an unexpected keyword argument {k!r}")
                if values[i] is not _EMPTY:
                    raise TypeError(f"{self.name}() got multiple values for argument {k!r}")
                values[i] = v
        for i, v in enumerate(values):
            if v is _EMPTY:
                p = params[i]
                if p.default is _EMPTY:
                    raise TypeError(f"{self.name}() missing required argument {p.name!r}")
                values[i] = p.default
        return values, extra, extra_kw


def binder_from_signature(op, sig: inspect.Signature, kinds: dict[str, ParamKind]) -> Binder:
    """A binder over ``sig``'s parameters; ``kinds`` marks array / array-sequence parameters."""
    params = []
    varargs = None
    varargs_kind = OTHER
    varkw = False
    for p in sig.parameters.values():
        if p.kind is _VAR_POS:
            varargs = p.name
            varargs_kind = kinds.get(p.name, OTHER)
            continue
        if p.kind is _VAR_KW:
            varkw = True
            continue
        params.append(Param(p.name, kinds.get(p.name, OTHER), p.default,
                            p.kind in (_POS_ONLY, _POS_KW), p.kind in (_POS_KW, _KW_ONLY)))
    return Binder(op, params, varargs, varargs_kind, varkw)


def _same_default(a: Any, b: Any) -> bool:
    if a is b:
        return True
    try:
        return type(a) is type(b) and bool(a == b)
    except Exception:  # noqa: BLE001  (an object without a usable ==)
        return False


def _check_rule_signature(op, rule, params: list[inspect.Parameter]) -> None:
    """A rule's parameters (its ``_bdim`` ones left out) must be the op's own, in order, with
    the same kinds and defaults: the dispatcher binds the user's call with the rule's signature,
    so a renamed keyword, a positional-only mismatch or another default would bind a call
    differently from NumPy. A rule may end in ``*args`` / ``**kwargs`` to pass the rest on.
    Ops without an inspectable signature (ufuncs' methods, C builtins) are not checked."""
    try:
        theirs = [p for p in inspect.signature(op).parameters.values()
                  if p.name != "like"]  # NumPy consumes like= before it dispatches
    except (TypeError, ValueError):
        return
    problem = None
    for i, p in enumerate(params):
        if p.kind in (_VAR_POS, _VAR_KW):
            break  # the rest is passed on as the user gave it
        q = theirs[i] if i < len(theirs) else None
        if q is not None and (q.kind is _VAR_POS or (q.kind is _VAR_KW and p.kind is _KW_ONLY)):
            break  # what the op's own *args / **kwargs takes (a method stand-in, np.pad)
        if q is None or (p.name, p.kind) != (q.name, q.kind):
            theirs_desc = "nothing" if q is None else f"{q.name!r} ({q.kind.description})"
            problem = (f"parameter {i} is {p.name!r} ({p.kind.description}) where "
                       f"{op_name(op)} has {theirs_desc}")
            break
        if not _same_default(p.default, q.default):
            problem = f"parameter {p.name!r} defaults to {p.default!r}, not {q.default!r}"
            break
    else:
        if len(params) < len(theirs):
            problem = f"it lacks {', '.join(repr(q.name) for q in theirs[len(params):])}"
    if problem is not None:
        raise TypeError(
            f"the batch rule {getattr(rule, '__qualname__', rule)!r} for {op_name(op)} does not "
            f"match its signature {inspect.signature(op)}: {problem}. Name the rule's "
            f"parameters as the op names its own (adding x_bdim after each array x), or end "
            f"it in *args / **kwargs."
        )


def _rule_binder(op, rule) -> Binder:
    """Derive the binder from a rule's own signature.

    A parameter ``x`` followed by ``x_bdim`` is an array; one followed by ``xs_bdims`` is a
    sequence of arrays (``*xs`` with a keyword-only ``xs_bdims`` for variadic ops).
    """
    sig = inspect.signature(rule)
    ps = list(sig.parameters.values())
    names = [p.name for p in ps]
    kinds: dict[str, ParamKind] = {}
    kept = []
    for p in ps:
        if p.name.endswith("_bdims") and p.name[:-6] in names:
            kinds[p.name[:-6]] = ARRAYS
            continue
        if p.name.endswith("_bdim") and p.name[:-5] in names:
            kinds[p.name[:-5]] = ARRAY
            continue
        kept.append(p)
    _check_rule_signature(op, rule, kept)
    return binder_from_signature(op, sig.replace(parameters=kept), kinds)


# ---- the table ----------------------------------------------------------------------------------
class OpEntry:
    """How one op is batched: a rule, a boxed kind or a decomposition (``kind``)."""

    __slots__ = ("op", "kind", "fn", "binder", "name", "boxed_kind", "raw", "fast")

    def __init__(self, op, kind: Path, fn, binder: Binder | None = None,
                 boxed_kind: BoxedKind | None = None, raw: bool = False,
                 fast: Callable | None = None):
        self.op = op
        # optional hot path: fast(level, args, kwargs) -> result, or NotImplemented
        self.fast = fast
        self.kind = kind
        self.fn = fn
        self.binder = binder
        self.name = op_name(op)
        self.boxed_kind = boxed_kind
        self.raw = raw

    def __repr__(self) -> str:
        extra = f" ({self.boxed_kind})" if self.boxed_kind else ""
        return f"<{self.kind}{extra} for {self.name}>"


REGISTRY: dict[Any, OpEntry] = {}

#: ops whose fast hook (``OpEntry.fast``) ``BatchedTensor.__array_function__`` calls itself,
#: before the dispatcher: ``level_of(args, kwargs)`` names the level of a common call without
#: the dispatcher's scan of every argument (None: the dispatcher takes the call). Only for ops
#: outside ``scalars.ARRAY_0D`` and ``dispatch.WRITES_FIRST_ARGUMENT``, whose hook refuses
#: ``out=`` and any call in which a value of another level takes part (``np.stack``).
DIRECT: dict[Any, Callable[[tuple[Any, ...], dict[str, Any]], Any]] = {}

#: callables that stand for another op: ``conversions``' wrappers of ``np.asarray`` & co.,
#: which NumPy's own ``like=`` path hands to ``__array_function__`` in place of the original
#: (it looks the function up in the ``numpy`` module by name)
ALIASES: dict[Any, Any] = {}

#: what the per-example loop calls in place of an op: a foreign callable's ``Primitive``
#: (``batchtensor.foreign``), through which an example's values batched at outer levels
#: are dispatched again, as NumPy dispatches them for its own functions
PER_EXAMPLE: dict[Any, Any] = {}


def register(entry: OpEntry, *, replace: bool = False) -> OpEntry:
    if not replace and entry.op in REGISTRY:
        raise ValueError(f"{entry.name} already has a batching entry: {REGISTRY[entry.op]!r}")
    REGISTRY[entry.op] = entry
    return entry


def lookup(op) -> OpEntry | None:
    try:
        return REGISTRY.get(op)
    except TypeError:  # unhashable callables
        return None


def batch_rule(op: Any, *, raw: bool = False, replace: bool = False,
               fast: Callable | None = None) -> Callable:
    """Register a C++-style batch rule for ``op``.

    The rule receives physical values and their batch axes and returns ``(out, out_bdim)``, or a
    tuple / list / namedtuple of such pairs for several outputs::

        @bt.batch_rule(np.expand_dims)
        def expand_dims_rule(a, a_bdim, axis):
            ...
            return out, out_bdim

    A parameter ``x`` followed by ``x_bdim`` is an array argument; ``xs`` followed by
    ``xs_bdims`` a sequence of arrays. The other parameters are the op's own, with its names,
    kinds and defaults (checked here: a mismatch would bind a call differently from the op).
    ``raw=True`` rules are called as ``rule(level, args, kwargs)`` and unwrap by themselves
    (indexing, einsum). ``fast(level, args, kwargs)`` is an optional hot path tried first,
    before any binding; it returns NotImplemented for anything but the common case it handles.
    """

    def deco(rule):
        binder = None if raw else _rule_binder(op, rule)
        register(OpEntry(op, Path.RULE, rule, binder, raw=raw, fast=fast), replace=replace)
        return rule

    return deco


def decomposition(op: Any, *, replace: bool = False) -> Callable:
    """Register a decomposition: ``op`` rewritten with other NumPy calls.

    The function receives the original (wrapped) arguments and must not call ``op`` itself.

    >>> import numpy as np, batchtensor as bt
    >>> @bt.decomposition(np.trace)                                  # doctest: +SKIP
    ... def trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    ...     return np.sum(np.diagonal(a, offset, axis1, axis2), axis=-1, dtype=dtype, out=out)
    """

    def deco(fn):
        register(OpEntry(op, Path.DECOMPOSITION, fn), replace=replace)
        return fn

    return deco


# ---- which path served each op ------------------------------------------------------------------
RECORDERS: list = []  # the open logs; hot paths test ``if RECORDERS:`` before recording


@contextmanager
def record_paths() -> Iterator[list]:
    """Collect ``(op, path)`` for every dispatched call, path in rule/boxed/decomposition/loop.

    >>> import numpy as np, batchtensor as bt
    >>> from batchtensor.registry import record_paths
    >>> with record_paths() as paths:
    ...     _ = bt.vmap(np.sum)(np.ones((2, 3)))
    >>> paths[0][1]
    'boxed'
    """
    log: list = []
    RECORDERS.append(log)
    try:
        yield log
    finally:
        RECORDERS.remove(log)


def record(op, path: Path, note: str | None = None) -> None:
    """Log ``(op, path)`` in every open log; a log that keeps more (``bt.explain``'s: its
    own thread's calls, each call's time, and ``note``, why the per-op loop served a call)
    takes them itself."""
    for log in RECORDERS:
        if type(log) is list:
            log.append((op, path))
        else:
            log.add(op, path, note)


def record_mark() -> list[int]:
    """How long every open log is now (``record_rewind`` drops what comes after)."""
    return [len(log) for log in RECORDERS]


def record_rewind(mark: list[int]) -> None:
    """Drop what the logs got since ``mark``: the calls of a pass whose result is not used
    because another pass runs the same examples instead (``api.VmapFunction._pass``)."""
    for log, n in zip(RECORDERS, mark):
        rewind = getattr(log, "rewind", None)
        if rewind is not None:
            rewind(n)
        else:
            del log[n:]


# ---- physical array types -----------------------------------------------------------------------
_PHYSICAL_TYPES: dict[type, bool] = {np.ndarray: True}


def register_physical_type(t: type) -> None:
    """Accept values of type ``t`` (CuPy arrays, the ONNX recorder's array) as physical arrays."""
    _PHYSICAL_TYPES[t] = True


def is_physical_type(t: type) -> bool:
    """Whether values of type ``t`` can be the physical value under a BatchedTensor: NumPy's
    ndarray, CuPy's (recognised by module, so that cupy is never imported here) and the types
    registered with ``register_physical_type``."""
    ok = _PHYSICAL_TYPES.get(t)
    if ok is None:
        ok = (getattr(t, "__module__", "") or "").split(".")[0] == "cupy"
        _PHYSICAL_TYPES[t] = ok
    return ok


_DEFERS: dict[type, bool] = {}


def defers_to_us(t: type) -> bool:
    """Whether an operand of type ``t`` beside a BatchedTensor leaves the call to us: a
    physical array type, or an ndarray subclass that keeps NumPy's own ``__array_ufunc__`` and
    ``__array_function__`` (NumPy would only hand the call on: ``np.memmap``, ``np.matrix``,
    masked arrays, user subclasses). A type with protocols of its own (dask, xarray...) gets
    the call first, as NumPy orders them."""
    ok = _DEFERS.get(t)
    if ok is None:
        ok = is_physical_type(t) or (
            issubclass(t, np.ndarray)
            and getattr(t, "__array_ufunc__", None) is np.ndarray.__array_ufunc__
            and getattr(t, "__array_function__", None) is np.ndarray.__array_function__)
        _DEFERS[t] = ok
    return ok


# ---- entry points filled in by higher layers ----------------------------------------------------
def _not_loaded(*args: Any, **kwargs: Any) -> Any:
    raise RuntimeError("batchtensor's dispatcher is not loaded: import batchtensor")


class Slots:
    """Entry points of higher layers that lower ones call.

    ``BatchedTensor``'s protocol methods reach the dispatcher, and the dispatcher reaches the
    boxed fallbacks, through these attributes. ``dispatch`` and ``boxed`` fill them in when they
    are imported (``import batchtensor`` imports both), so that no module imports one above it.

    - ``function_call(op, args, kwargs, like=None)``, ``ufunc_call(ufunc, method, inputs,
      kwargs)``, ``truth_value(x)``, ``setitem(x, key, value)``: the dispatcher;
    - ``loop_call(op, args, kwargs, level)``: the per-example loop fallback;
    - ``ufunc_pointwise(ufunc, inputs, kwargs)``, ``gufunc_call(...)``: the boxed handlers of
      a ufunc's ``__call__`` (elementwise, generalised);
    - ``ufunc_methods``: ``{"reduce": handler, "accumulate": ..., ...}``;
    - ``masked_ufunc``, ``masked_function``, ``masked_operator(ufunc, a, b)``,
      ``stack_masked(results, level)``, ``masked_view(x)``: masked batches (``masked.py``), for a plain masked
      array beside a BatchedTensor and masked results of the per-op loop.
    """

    __slots__ = ("function_call", "ufunc_call", "truth_value", "note_if_caught", "setitem",
                 "loop_call", "ufunc_pointwise", "gufunc_call", "ufunc_methods", "masked_ufunc",
                 "masked_function", "masked_operator", "stack_masked", "masked_view")

    function_call: Callable[..., Any]
    ufunc_call: Callable[..., Any]
    truth_value: Callable[..., bool]
    note_if_caught: Callable[..., None]
    setitem: Callable[..., None]
    loop_call: Callable[..., Any]
    ufunc_pointwise: Callable[..., Any]
    gufunc_call: Callable[..., Any]
    ufunc_methods: dict[str, Callable[..., Any]]
    masked_ufunc: Callable[..., Any]
    masked_function: Callable[..., Any]
    masked_operator: Callable[..., Any]
    stack_masked: Callable[..., Any]
    masked_view: Callable[..., Any]

    def __init__(self) -> None:
        for name in self.__slots__:
            setattr(self, name, _not_loaded)
        self.ufunc_methods = {}


slots = Slots()
