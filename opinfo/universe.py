"""The universe of the coverage table: every NumPy callable a BatchedTensor can meet.

Computed from the installed NumPy and from ``BatchedTensor`` itself, never written by hand:

- every ``np.ufunc`` object in the ``numpy`` namespace (aliases such as ``abs``/``absolute``
  are one entry);
- every public callable of ``numpy``, ``numpy.linalg`` and ``numpy.fft`` that NumPy dispatches
  through ``__array_function__`` (it is in ``numpy._core.overrides.ARRAY_FUNCTIONS``;
  aliases such as ``concat``/``concatenate`` are one entry);
- the ufunc methods (``reduce accumulate reduceat outer at``), which ``__array_ufunc__`` sends
  to us for every ufunc;
- the public ``ndarray`` methods that ``BatchedTensor`` implements;
- the Python operators and protocols that ``BatchedTensor`` implements (``x + y`` with its
  reflected and in-place forms is one entry; indexing; ``len``; ``in``; ``bool()``; ...).

``EXCLUDED`` names the few callables that make no sense per example, each with its reason.

How OpInfo entries are matched to universe entries (``claims``):

- a function or ufunc entry claims every OpInfo whose ``covers`` is that object, except the
  OpInfos that are claimed by a method or operator entry;
- a method entry ``ndarray.NAME`` claims OpInfos named ``ndarray.NAME`` or ``ndarray.NAME.*``;
- an operator entry claims OpInfos whose ``op`` or ``covers`` is one of its ``operator``
  functions (``operator.add``, ``operator.iadd``, ``operator.getitem``, ...) or whose name is
  one of its dunders or ``operator.NAME`` (optionally followed by ``.variant``);
- a ufunc-method entry claims OpInfos whose ``covers`` is that method of any ufunc
  (``np.add.reduce``).

An OpInfo claimed by none of them is listed as an *extra* (outside the universe), which is only
allowed for the keys ``is_known_extra`` accepts (tests/test_coverage.py checks it).
"""

from __future__ import annotations

import copy
import inspect
import operator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.fft  # noqa: F401  (import before reading ARRAY_FUNCTIONS: registers the fft ones)
import numpy.linalg  # noqa: F401

from batchtensor.foreign import LAZY_RULES, is_foreign
from batchtensor.rules.vectorize import VECTORIZE_CALL

__all__ = ["Entry", "EXCLUDED", "universe", "claims", "is_known_extra", "NOT_DISPATCHED"]

#: Callables that make no sense per example, with the reason. Everything else must be covered.
EXCLUDED: dict[str, str] = {
    # file I/O and construction from bytes / text / iterables: no array argument to map (a
    # BatchedTensor can only arrive as ``like=``), or the op writes one file for the batch
    "save": "file I/O: writes one file; per-example files need a loop over the unwrapped batch",
    "savetxt": "file I/O: writes one text file; not an array computation",
    "savez": "file I/O: writes one archive; not an array computation",
    "savez_compressed": "file I/O: writes one archive; not an array computation",
    "fromfile": "file I/O: reads a file; no array argument to batch (only like=)",
    "loadtxt": "file I/O: reads a text file; no array argument to batch (only like=)",
    "genfromtxt": "file I/O: reads a text file; no array argument to batch (only like=)",
    "frombuffer": "builds an array from a bytes buffer; no array argument to batch (only like=)",
    "fromstring": "builds an array from a string; no array argument to batch (only like=)",
    "fromiter": "builds an array from a Python iterable; no array argument to batch (only like=)",
    # printing: the result is one string, not an array; there is nothing to stack
    "array2string": "printing: returns a str, which cannot be stacked into a batch",
    "array_repr": "printing: returns a str, which cannot be stacked into a batch",
    "array_str": "printing: returns a str, which cannot be stacked into a batch",
    "datetime_as_string": "printing: returns str arrays from datetime64 values",
    # calendar arithmetic on datetime64[D] with weekmasks/holiday lists: not numeric; CuPy has
    # no busday functions and ONNX no datetime type, so no rule can be written against the
    # NumPy-API contract. They still run correctly through the per-example loop.
    "busday_count": "datetime64 calendar helper (weekmask/holidays): no CuPy/ONNX counterpart; "
                    "works through the loop fallback",
    "busday_offset": "datetime64 calendar helper (weekmask/holidays): no CuPy/ONNX counterpart; "
                     "works through the loop fallback",
    "is_busday": "datetime64 calendar helper (weekmask/holidays): no CuPy/ONNX counterpart; "
                 "works through the loop fallback",
    # conversions that would drop the batch axis raise: a plain value cannot hold the batch
    "ndarray.item": "conversion to a Python scalar drops the batch axis: raises by design",
    "ndarray.tolist": "conversion to Python lists drops the batch axis: raises by design",
    "ndarray.tobytes": "conversion to bytes drops the batch axis: raises by design",
    "ndarray.tofile": "writes one example's bytes to a file: raises by design (a conversion)",
    "ndarray.dump": "pickles one example to a file: raises by design (a conversion)",
    "ndarray.dumps": "pickles one example to bytes: raises by design (a conversion)",
    "__array__": "conversion to a plain array drops the batch axis: raises by design",
    "int()": "conversion to a Python scalar drops the batch axis: raises by design",
    "float()": "conversion to a Python scalar drops the batch axis: raises by design",
    "complex()": "conversion to a Python scalar drops the batch axis: raises by design",
    "operator.index": "using a batched value as a size/index drops the batch axis: raises by "
                      "design",
    "pickle": "a BatchedTensor belongs to a live vmap level: raises by design",
}

#: Public callables that NumPy does not dispatch (no ``__array_function__``): with a batched
#: argument they still work when they are written with dispatched calls.
NOT_DISPATCHED: dict[str, str] = {
    "fft.fftfreq": "not dispatched by NumPy; a batched `d` works through the ufuncs it calls",
    "fft.rfftfreq": "not dispatched by NumPy; a batched `d` works through the ufuncs it calls",
}

UFUNC_METHODS = ("reduce", "accumulate", "reduceat", "outer", "at")

# Python operator protocols: (entry name, dunders, operator functions).
_BINARY = ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "and", "or", "xor",
           "lshift", "rshift", "matmul")
_SYMBOL = {"add": "+", "sub": "-", "mul": "*", "truediv": "/", "floordiv": "//", "mod": "%",
           "pow": "**", "and": "&", "or": "|", "xor": "^", "lshift": "<<", "rshift": ">>",
           "matmul": "@", "lt": "<", "le": "<=", "eq": "==", "ne": "!=", "gt": ">", "ge": ">=",
           "neg": "-x", "pos": "+x", "abs": "abs()", "invert": "~"}


def _operator_table() -> list[tuple[str, tuple, tuple]]:
    ops = []
    for n in _BINARY:
        fn = getattr(operator, f"{n}_", None) or getattr(operator, n)
        ops.append((f"operator.{n}", (f"__{n}__", f"__r{n}__", f"__i{n}__"),
                    (fn, getattr(operator, f"__{n}__"), getattr(operator, f"i{n}"),
                     getattr(operator, f"__i{n}__"))))
    for n in ("lt", "le", "eq", "ne", "gt", "ge", "neg", "pos", "abs", "invert"):
        ops.append((f"operator.{n}", (f"__{n}__",), (getattr(operator, n),
                                                    getattr(operator, f"__{n}__"))))
    ops += [
        ("divmod", ("__divmod__", "__rdivmod__"), (divmod,)),
        ("operator.getitem", ("__getitem__",), (operator.getitem, operator.__getitem__)),
        ("operator.setitem", ("__setitem__",), (operator.setitem, operator.__setitem__)),
        ("operator.contains", ("__contains__",), (operator.contains, operator.__contains__)),
        ("len()", ("__len__",), (len,)),
        ("iter()", ("__iter__",), (iter,)),
        ("bool()", ("__bool__",), (bool, operator.truth)),
        ("round()", ("__round__",), (round,)),
        ("copy.copy", ("__copy__",), (copy.copy,)),
        ("copy.deepcopy", ("__deepcopy__",), (copy.deepcopy,)),
        # conversions (excluded: they raise by design)
        ("__array__", ("__array__",), ()),
        ("int()", ("__int__",), (int,)),
        ("float()", ("__float__",), (float,)),
        ("complex()", ("__complex__",), (complex,)),
        ("operator.index", ("__index__",), (operator.index,)),
        ("pickle", ("__reduce_ex__",), ()),
    ]
    return ops


@dataclass
class Entry:
    """One callable of the universe.

    ``kind``: "ufunc", "function", "ufunc_method", "method" or "operator". ``obj``: the object
    (the registry key for ufuncs and functions); ``keys``: every object that stands for it
    (operator functions, ``_MethodOp`` keys); ``aliases``: other public names.
    """

    name: str
    kind: str
    obj: Any = None
    aliases: tuple = ()
    keys: tuple = ()
    dunders: tuple = ()
    excluded: str | None = None
    extra_names: tuple = field(default=())


def _array_function_ids() -> set:
    from numpy._core.overrides import ARRAY_FUNCTIONS  # noqa: PLC0415

    return {id(f) for f in ARRAY_FUNCTIONS}


def _public(mod) -> list[tuple[str, Any]]:
    return [(n, getattr(mod, n)) for n in sorted(dir(mod)) if not n.startswith("_")]


def universe() -> list[Entry]:
    """Every entry, in table order: ufuncs, functions, ufunc methods, methods, operators."""
    from batchtensor import tensor as bt_tensor  # noqa: PLC0415

    entries: list[Entry] = []
    # ufuncs: one entry per object, named by the ufunc's own name
    by_id: dict[int, list] = {}
    for n, o in _public(np):
        if isinstance(o, np.ufunc):
            by_id.setdefault(id(o), [o, []])[1].append(n)
    for o, names in sorted(by_id.values(), key=lambda t: t[0].__name__):
        aliases = tuple(n for n in names if n != o.__name__)
        entries.append(Entry(o.__name__, "ufunc", o, aliases, (o,)))
    # __array_function__-dispatched callables of numpy, numpy.linalg, numpy.fft
    af = _array_function_ids()
    funcs: dict[int, list] = {}
    for prefix, mod in (("", np), ("linalg.", np.linalg), ("fft.", np.fft)):
        for n, o in _public(mod):
            if id(o) in af and not isinstance(o, np.ufunc):
                funcs.setdefault(id(o), [o, []])[1].append(prefix + n)
    for o, names in funcs.values():
        own = getattr(o, "__name__", names[0])
        main = next((n for n in names if n.rsplit(".", 1)[-1] == own), names[0])
        aliases = tuple(n for n in names if n != main)
        entries.append(Entry(main, "function", o, aliases, (o,), excluded=EXCLUDED.get(main)))
    # ufunc methods: __array_ufunc__ hands every one of them to the dispatcher
    for m in UFUNC_METHODS:
        entries.append(Entry(f"ufunc.{m}", "ufunc_method", m))
    # ndarray methods BatchedTensor implements
    cls = bt_tensor.BatchedTensor
    method_keys = {o.method: o for o in vars(bt_tensor).values()
                   if isinstance(o, bt_tensor.MethodOp)
                   and not isinstance(o, bt_tensor.AttributeOp)}
    for n in sorted(vars(cls)):
        if n.startswith("_") or not hasattr(np.ndarray, n):
            continue
        if not inspect.isfunction(inspect.getattr_static(cls, n)):
            continue  # properties (shape, T, real, ...) are attributes, not callables
        key = method_keys.get(n)
        entries.append(Entry(f"ndarray.{n}", "method", key, keys=(key,) if key else (),
                             excluded=EXCLUDED.get(f"ndarray.{n}")))
    # Python operators and protocols BatchedTensor implements
    for name, dunders, fns in _operator_table():
        have = tuple(d for d in dunders if d in vars(cls))
        if not have:
            continue
        entries.append(Entry(name, "operator", fns[0] if fns else None, keys=fns,
                             dunders=have, excluded=EXCLUDED.get(name)))
    return entries


def _variant_of(name: str, base: str) -> bool:
    return name == base or name.startswith(base + ".")


def _ufunc_method_name(key: Any) -> str | None:
    owner = getattr(key, "__self__", None)
    if isinstance(owner, np.ufunc):
        return getattr(key, "__name__", None)
    return None


def _same(a: Any, b: Any) -> bool:
    if a is b:
        return True
    try:
        return type(a) is type(b) and bool(a == b)
    except Exception:  # noqa: BLE001
        return False


def claims(entry: Entry, info: Any) -> bool:
    """Whether OpInfo ``info`` tests universe ``entry`` (see the module docstring)."""
    name = info.name
    if entry.kind == "method":
        return _variant_of(name, entry.name)
    if entry.kind == "operator":
        if _ufunc_method_name(info.covers) is not None:
            return False  # np.divmod.outer is a ufunc method, not the divmod() builtin
        if any(_same(info.op, k) or _same(info.covers, k) for k in entry.keys):
            return True
        bases = (entry.name,) + entry.dunders + tuple(f"operator.{d}" for d in entry.dunders)
        return any(_variant_of(name, b) for b in bases)
    if entry.kind == "ufunc_method":
        return _ufunc_method_name(info.covers) == entry.obj
    if name.startswith("ndarray.") or name.startswith("operator.") or name.startswith("__"):
        return False  # claimed by a method / operator entry
    return any(_same(info.covers, k) for k in entry.keys)


def is_known_extra(key: Any) -> bool:
    """Registry keys that are legitimately outside the universe: NumPy callables that are not
    public in numpy/linalg/fft but are dispatched (``numpy.lib.scimath``, ``sliding_window_view``,
    ...), undispatched ones listed in ``NOT_DISPATCHED``, ufunc methods, ``ndarray`` method keys,
    ``operator`` / builtin functions, ``numpy.ma``'s functions and methods, and foreign callables
    (SciPy's)."""
    if id(key) in _array_function_ids() or isinstance(key, np.ufunc):
        return True
    if _ufunc_method_name(key) is not None:
        return True
    if type(key).__name__ in ("MethodOp", "AttributeOp"):  # ndarray methods and attributes
        return True
    if getattr(key, "__module__", None) in ("operator", "_operator", "builtins", "copy"):
        return True
    if str(getattr(key, "__module__", None)).startswith("numpy.ma"):
        return True  # numpy.ma's functions and MaskedArray's methods (batchtensor/masked.py)
    if is_foreign(key) or str(getattr(key, "__module__", None)).startswith(tuple(LAZY_RULES)):
        return True  # a foreign callable with a rule of batchtensor's (batchtensor.foreign)
    if str(getattr(key, "__module__", None)).startswith("batchtensor.rules."):
        return True  # an op of batchtensor's own standing for a foreign library's compiled
        # call, which its rule intercepts (scipy.sparse's coo_todense)
    if key is VECTORIZE_CALL:
        return True  # an np.vectorize object's call, which NumPy does not dispatch
    for name in NOT_DISPATCHED:
        mod, _, attr = name.rpartition(".")
        if getattr(getattr(np, mod) if mod else np, attr, None) is key:
            return True
    return False
