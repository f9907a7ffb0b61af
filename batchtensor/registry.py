"""The op registry: NumPy callable -> how to batch it (rule, boxed kind, or decomposition).

Entries are keyed by the callable object itself (``np.sum``, ``np.add``, ``np.linalg.solve``).
Each entry carries a *binder* built once, at registration, from a signature: at call time it
maps ``(args, kwargs)`` to parameter values with a few dict look-ups, never ``inspect``.
"""

from __future__ import annotations

import inspect
from typing import Any, Callable

__all__ = ["Param", "Binder", "OpEntry", "REGISTRY", "lookup", "register", "op_name",
           "batch_rule", "decomposition", "binder_from_signature"]

_EMPTY = inspect.Parameter.empty
_POS_ONLY = inspect.Parameter.POSITIONAL_ONLY
_POS_KW = inspect.Parameter.POSITIONAL_OR_KEYWORD
_VAR_POS = inspect.Parameter.VAR_POSITIONAL
_KW_ONLY = inspect.Parameter.KEYWORD_ONLY
_VAR_KW = inspect.Parameter.VAR_KEYWORD

ARRAY, ARRAYS, OTHER = "array", "arrays", "other"


def op_name(op: Any) -> str:
    """``numpy.linalg.solve``, ``numpy.add``, ``ndarray.astype``: how messages name an op."""
    name = getattr(op, "__name__", None) or repr(op)
    owner = getattr(op, "__self__", None)
    if type(owner).__name__ == "ufunc":  # np.add.reduce and the other ufunc methods
        return f"numpy.{owner.__name__}.{name}"
    if type(op).__name__ == "ufunc":
        return f"numpy.{name}"
    qual = getattr(op, "__qualname__", name)
    mod = getattr(op, "__module__", None)
    if mod is None:
        return qual
    if mod.startswith("numpy"):
        mod = {"numpy._core.multiarray": "numpy", "numpy._core.fromnumeric": "numpy",
               "numpy._core.numeric": "numpy", "numpy._core.shape_base": "numpy",
               "numpy._core.umath": "numpy"}.get(mod, mod)
        if mod.startswith(("numpy._core", "numpy.lib._")):
            mod = "numpy"
        if mod.startswith("numpy.linalg"):
            mod = "numpy.linalg"
        if mod.startswith("numpy.fft"):
            mod = "numpy.fft"
    if mod in ("operator", "_operator"):
        return {"getitem": "x[...] (getitem)", "setitem": "x[...] = v (setitem)"}.get(qual, qual)
    if mod == "builtins":
        return qual
    return f"{mod}.{qual}"


class Param:
    __slots__ = ("name", "kind", "default", "positional", "keyword")

    def __init__(self, name, kind, default, positional, keyword):
        self.name = name
        self.kind = kind  # ARRAY, ARRAYS or OTHER
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


def binder_from_signature(op, sig: inspect.Signature, kinds: dict[str, str]) -> Binder:
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


def _rule_binder(op, rule) -> Binder:
    """Derive the binder from a rule's own signature.

    A parameter ``x`` followed by ``x_bdim`` is an array; one followed by ``xs_bdims`` is a
    sequence of arrays (``*xs`` with a keyword-only ``xs_bdims`` for variadic ops).
    """
    sig = inspect.signature(rule)
    ps = list(sig.parameters.values())
    names = [p.name for p in ps]
    kinds: dict[str, str] = {}
    kept = []
    for i, p in enumerate(ps):
        if p.name.endswith("_bdims") and p.name[:-6] in names:
            kinds[p.name[:-6]] = ARRAYS
            continue
        if p.name.endswith("_bdim") and p.name[:-5] in names:
            kinds[p.name[:-5]] = ARRAY
            continue
        kept.append(p)
    return binder_from_signature(op, sig.replace(parameters=kept), kinds)


class OpEntry:
    """How one op is batched. ``kind`` is "rule", "boxed" or "decomposition"."""

    __slots__ = ("op", "kind", "fn", "binder", "name", "boxed_kind", "raw", "fast")

    def __init__(self, op, kind, fn, binder=None, boxed_kind=None, raw=False, fast=None):
        self.op = op
        # optional hot path: fast(level, args, kwargs) -> result, or NotImplemented
        self.fast = fast
        self.kind = kind
        self.fn = fn
        self.binder = binder
        self.name = op_name(op)
        self.boxed_kind = boxed_kind  # "pointwise", "reduction", "variadic_bdims"
        self.raw = raw

    @property
    def path(self) -> str:
        return self.kind

    def __repr__(self) -> str:
        extra = f" ({self.boxed_kind})" if self.boxed_kind else ""
        return f"<{self.kind}{extra} for {self.name}>"


REGISTRY: dict[Any, OpEntry] = {}


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
    ``xs_bdims`` a sequence of arrays. Other parameters pass through; their names must be the
    op's parameter names. ``raw=True`` rules are called as ``rule(level, args, kwargs)`` and
    unwrap by themselves (indexing, ufunc methods, einsum). ``fast(level, args, kwargs)`` is an
    optional hot path tried first, before any binding; it returns NotImplemented for anything
    but the common case it handles.
    """

    def deco(rule):
        binder = None if raw else _rule_binder(op, rule)
        register(OpEntry(op, "rule", rule, binder, raw=raw, fast=fast), replace=replace)
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
        register(OpEntry(op, "decomposition", fn), replace=replace)
        return fn

    return deco
