"""Every argument position NumPy's own dispatchers treat as array-like, and which OpInfo
samples batch each one.

NumPy decides which arguments of a call may hand it to ``__array_function__`` /
``__array_ufunc__`` with a *dispatcher* per function (``np.take``'s returns ``(a, out)``, so a
batched ``indices`` beside a plain ``a`` never reaches batchtensor). ``dispatched_positions``
reads those dispatchers from the installed NumPy, never from a hand-written list: it calls
each public function of the coverage universe (``opinfo/universe.py``) once with a probe
object of a class of its own in every parameter; the first probe NumPy asks receives the
classes of all relevant arguments, which names the parameters. A ufunc dispatches on its
operands, and ``out=`` / ``where=`` where a probe there reaches ``__array_ufunc__`` (gufuncs
refuse ``where=``); the ufunc methods are probed on ``np.add``.

``batched_positions`` runs every OpInfo sample once outside vmap with its array leaves tagged
(an ndarray subclass that records the outermost NumPy call it reaches and in which
parameters), so it knows which positions the sweep batches (the sweep maps every array leaf).
``EXCLUDED_POSITIONS`` lists, with the reason, the positions no sample batches on purpose;
``tests/test_dispatched.py`` checks that every position is one or the other.

``documented_undispatched`` lists the parameters NumPy documents as arrays but leaves out of
its dispatchers (``np.take``'s ``indices``): ``tests/test_undispatched.py`` checks that each
is handled by ``batchtensor/undispatched.py`` or excluded with a reason.
"""

from __future__ import annotations

import inspect
import re
import warnings
from functools import lru_cache
from typing import Any

import numpy as np

from batchtensor.pytree import flatten, unflatten

from .universe import UFUNC_METHODS, universe

__all__ = ["dispatched_positions", "batched_positions", "EXCLUDED_POSITIONS", "position_names",
           "documented_undispatched"]


# ---- NumPy's dispatchers -------------------------------------------------------------------------
class _Found(Exception):
    def __init__(self, types):
        super().__init__()
        self.types = types


def _probe(label: str):
    """An object of a class of its own, labelled with its parameter; iterable (one element of
    another class of its own), for dispatchers that iterate a sequence argument."""
    def array_function(self, func, types, args, kwargs):
        raise _Found(types)

    def array_ufunc(self, ufunc, method, *inputs, **kwargs):
        raise _Found([type(self)])

    element = type(f"{label}[i]", (), {"label": label, "__array_function__": array_function,
                                        "__array_ufunc__": array_ufunc})

    def getitem(self, i):
        if i not in (0, -1):
            raise IndexError(i)
        return element()

    cls = type(label, (), {"label": label, "__array_function__": array_function,
                           "__array_ufunc__": array_ufunc, "__len__": lambda self: 1,
                           "__iter__": lambda self: iter([element()]),
                           "__getitem__": getitem})
    return cls()


#: values for parameters that must be valid before NumPy dispatches (the creation functions'
#: dtype / shape are read by their C code before ``like=`` is looked at)
_PLAIN = {"dtype": None, "shape": 1, "order": "C", "N": 1, "M": None, "k": 0, "stop": 1,
          "start": 0, "step": 1, "copy": None, "ndmin": 0, "ndmax": 0, "subok": False,
          "count": -1, "object": None, "obj": None, "buffer": b"\x00" * 8, "offset": 0,
          "sep": "", "requirements": None, "device": None, "string": "1", "file": None,
          "iter": None, "function": None, "n": 1}


def _signature(fn) -> inspect.Signature | None:
    try:
        return inspect.signature(fn)
    except ValueError:  # np.fromstring has no text signature: read it from the docstring
        first = (fn.__doc__ or "").lstrip().splitlines()[0]
        src = f"def _{first[first.index('('):]}: pass"
        space: dict = {}
        exec(src, {"float": float}, space)  # noqa: S102  (NumPy's own signature line)
        return inspect.signature(space["_"])


def _relevant(fn, plain: frozenset = frozenset()) -> list[str]:
    sig = _signature(fn)
    args, kwargs = [], {}
    for p in sig.parameters.values():
        if p.kind is p.VAR_POSITIONAL:
            args += [_probe(f"*{p.name}"), _probe(f"*{p.name}")]
        elif p.kind is p.VAR_KEYWORD:
            continue
        elif p.name in plain:
            if p.kind is not p.KEYWORD_ONLY and not kwargs:
                args.append(_PLAIN[p.name])
        elif p.kind is not p.KEYWORD_ONLY and not kwargs:
            args.append(_probe(p.name))
        else:
            kwargs[p.name] = _probe(p.name)
    try:
        fn(*args, **kwargs)
    except _Found as e:
        return sorted({t.label for t in e.types})
    except Exception:  # noqa: BLE001  (a parameter read before dispatch: retry it plain)
        if not plain:
            return _relevant(fn, frozenset(_PLAIN))
        raise
    raise AssertionError(f"{fn!r} did not dispatch on any parameter")


def _ufunc_inputs(uf: np.ufunc) -> list[str]:
    return ["x"] if uf.nin == 1 else [f"x{i + 1}" for i in range(uf.nin)]


def _ufunc_positions(uf: np.ufunc) -> list[str]:
    """Every operand, ``out`` and, where NumPy checks it (not for gufuncs, which refuse it),
    ``where``."""
    found = _ufunc_inputs(uf)
    for name in ("out", "where"):
        value = _probe(name)
        if name == "out" and uf.nout > 1:
            value = (value,) * uf.nout
        try:
            uf(*[np.zeros((2, 2))] * uf.nin, **{name: value})
        except _Found:
            found.append(name)
        except TypeError:  # a keyword the ufunc does not take
            pass
    return found


@lru_cache(maxsize=None)
def dispatched_positions() -> dict[str, tuple[str, ...]]:
    """``{universe name: parameters NumPy dispatches on}`` for every ufunc, every dispatched
    public function and every ufunc method (``ufunc.reduce``...); ``*args`` parameters are
    named ``*name``."""
    out: dict[str, tuple[str, ...]] = {}
    for e in universe():
        if e.kind == "ufunc":
            out[e.name] = tuple(_ufunc_positions(e.obj))
        elif e.kind == "function":
            out[e.name] = tuple(_relevant(e.obj))
        elif e.kind == "ufunc_method":
            out[e.name] = tuple(_ufunc_method_positions(e.obj))
    return out


def _ufunc_method_positions(method: str) -> list[str]:
    """The operands NumPy checks for ``np.add.<method>`` (its own parameter names)."""
    params = {"reduce": ("array", "axis", "dtype", "out", "keepdims", "initial", "where"),
              "accumulate": ("array", "axis", "dtype", "out"),
              "reduceat": ("array", "indices", "axis", "dtype", "out"),
              "outer": ("A", "B", "out", "where"), "at": ("a", "indices", "b")}[method]
    found = []
    for name in params:
        kwargs = {}
        args: list[Any] = [np.ones(3), [0, 1]][:1 if method in ("reduce", "accumulate") else 2]
        if method == "outer":
            args = [np.ones(2), np.ones(2)]
        elif method == "at":
            args = [np.ones(3), [0], 1.0]
        if name in ("A", "B", "a", "b", "array", "indices"):
            k = {"A": 0, "B": 1, "a": 0, "array": 0, "indices": 1, "b": 2}[name]
            args[k] = _probe(name)
        elif name in ("out", "where"):
            kwargs[name] = _probe(name)
        else:
            continue
        try:
            getattr(np.add, method)(*args, **kwargs)
        except _Found:
            found.append(name)
        except Exception:  # noqa: BLE001  (not an operand NumPy checks)
            pass
    return found


# ---- which positions the OpInfo samples batch ----------------------------------------------------
class _Tagged(np.ndarray):
    """An array leaf of a sample: records the outermost NumPy call it reaches."""

    log: list = []
    depth = 0

    def __array_function__(self, func, types, args, kwargs):
        return _Tagged._run(func, args, kwargs, lambda: _function_params(func, args, kwargs))

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        op = ufunc if method == "__call__" else getattr(ufunc, method)
        return _Tagged._run(op, inputs, kwargs,
                            lambda: _ufunc_params(ufunc, method, inputs, kwargs))

    @staticmethod
    def _run(op, args, kwargs, params):
        if _Tagged.depth == 0:
            _Tagged.log.append((op, params()))
        _Tagged.depth += 1
        try:
            return op(*_plain(args), **_plain(kwargs))
        finally:
            _Tagged.depth -= 1


def _plain(tree):
    leaves, td = flatten(tree)
    return unflatten(td, [x.view(np.ndarray) if isinstance(x, _Tagged) else x for x in leaves])


def _tagged(value) -> bool:
    return any(isinstance(x, _Tagged) for x in flatten(value)[0])


def _function_params(func, args, kwargs) -> set[str]:
    sig = _signature(func)
    bound = sig.bind_partial(*args, **{k: v for k, v in kwargs.items()
                                       if k in sig.parameters or any(
                                           p.kind is p.VAR_KEYWORD
                                           for p in sig.parameters.values())})
    found = set()
    for name, value in bound.arguments.items():
        kind = sig.parameters[name].kind
        if kind is inspect.Parameter.VAR_KEYWORD:
            continue
        if _tagged(value):
            found.add(f"*{name}" if kind is inspect.Parameter.VAR_POSITIONAL else name)
    if "like" in sig.parameters:
        found.add("like")  # these dispatch on like= only, which NumPy takes out of the call
    return found


def _ufunc_params(ufunc, method, inputs, kwargs) -> set[str]:
    if method == "__call__":
        names = _ufunc_inputs(ufunc)
    else:
        names = {"reduce": ["array"], "accumulate": ["array"], "reduceat": ["array", "indices"],
                 "outer": ["A", "B"], "at": ["a", "indices", "b"]}[method]
    found = {n for n, x in zip(names, inputs) if _tagged(x)}
    found |= {k for k in ("out", "where") if k in kwargs and _tagged(kwargs[k])}
    return found


def position_names() -> dict[int, str]:
    """``id(callable) -> universe name`` for every callable whose positions are listed."""
    names: dict[int, str] = {}
    for e in universe():
        if e.kind in ("ufunc", "function"):
            for key in e.keys:
                names[id(key)] = e.name
    return names


def batched_positions(database) -> dict[tuple[str, str], list[str]]:
    """``{(universe name, parameter): [OpInfo names whose samples batch it]}``: every sample of
    every dtype, run once with its array leaves tagged, outside vmap."""
    names = position_names()
    out: dict[tuple[str, str], list[str]] = {}
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        for info in database:
            _record(info, names, out)
    return out


def _record(info, names: dict, out: dict) -> None:
    """Run each sample of ``info`` once with tagged array leaves; note what they reached."""
    for dtype in info.dtypes:
        for sample in info.samples(np.random.default_rng(0), dtype):
            leaves, td = flatten((sample.args, sample.kwargs))
            leaves = [x.view(_Tagged) if type(x) is np.ndarray else x for x in leaves]
            args, kwargs = unflatten(td, leaves)
            _Tagged.log, _Tagged.depth = [], 0
            try:
                info.op(*args, **kwargs)
            except Exception:  # noqa: BLE001  (error samples batch their arguments too)
                pass
            for op, params in _Tagged.log:
                name = _owner_name(op, names)
                for p in params:
                    users = out.setdefault((name, p), [])
                    if info.name not in users:
                        users.append(info.name)


def _owner_name(op, names: dict[int, str]) -> str | None:
    owner = getattr(op, "__self__", None)
    if isinstance(owner, np.ufunc) and op.__name__ in UFUNC_METHODS:
        return f"ufunc.{op.__name__}"
    return names.get(id(op))

#: ``(universe name, parameter) -> reason`` for the positions no OpInfo sample batches on
#: purpose. (Every position of a function the universe excludes, ``universe.EXCLUDED``, is
#: excluded for the function's reason.)
EXCLUDED_POSITIONS: dict[tuple[str, str], str] = {
    ("astype", "dtype"): "a dtype, not data: NumPy lists it so that another library's dtype "
                         "objects can claim the call; a batched array is not a dtype (NumPy's "
                         "own TypeError, as in the loop)",
}


# ---- array arguments the dispatchers leave out ------------------------------------------------------
_SECTION = re.compile(r"\n\s*Parameters\n\s*-+\n(.*?)(?:\n\s*(?:Returns|Yields|Raises|See Also|"
                      r"Notes|Examples|Other Parameters)\n\s*-+\n|\Z)", re.S)
_ENTRY = re.compile(r"^\s{0,8}(\*{0,2}[A-Za-z_][\w, *]*?)\s*:\s*(.*)$")
_ARRAYISH = re.compile(r"array[_ ]?like|ndarray|\barray\b|sequence of (?:arrays|ndarrays)", re.I)


def documented_undispatched() -> dict[str, tuple[str, ...]]:
    """``{universe name: parameters}`` whose documented type (NumPy's numpydoc docstrings) is an
    array (``array_like``, ``ndarray``, ``array``) but that NumPy's dispatcher leaves out."""
    positions = dispatched_positions()
    out: dict[str, tuple[str, ...]] = {}
    for e in universe():
        if e.kind != "function":
            continue
        sig = _signature(e.obj)
        found = _SECTION.search(e.obj.__doc__ or "")
        names = []
        for line in (found.group(1) if found else "").splitlines():
            entry = _ENTRY.match(line)
            if not entry or not _ARRAYISH.search(entry.group(2)):
                continue
            for name in entry.group(1).split(","):
                name = name.strip().lstrip("*")
                p = sig.parameters.get(name)
                if p is None or p.kind is p.VAR_KEYWORD:
                    continue
                label = f"*{name}" if p.kind is p.VAR_POSITIONAL else name
                if label not in positions[e.name] and label not in names:
                    names.append(label)
        if names:
            out[e.name] = tuple(names)
    return out
