"""Foreign functions: batch rules for callables NumPy does not dispatch (SciPy, compiled code).

NumPy hands a call of ``np.sum`` on a BatchedTensor to us through ``__array_function__``; a call
of ``scipy.signal.lfilter`` never comes back to us. So a foreign callable gets its rule in two
steps: the rule goes into the registry (keyed by the callable, as for NumPy ops), and a
``Primitive`` (a stand-in that hands batched calls to the dispatcher) replaces the callable in
the modules code reaches it through, while a vmap level is open (``conversions.intercept``):
the public modules of its package (``scipy.signal``: by switching the module's class, which
serves ``scipy.signal.lfilter`` and ``from scipy.signal import lfilter``) and the module that
defines it where its own functions call it (``scipy.signal._signaltools``, where ``filtfilt``
calls ``lfilter``: in the namespace, which their global look-ups read). When no level is
open, every module is as it was.

What cannot be reached: a name bound before the vmap outside those modules
(``from scipy.signal import lfilter`` in a user module, a local variable, a default argument)
keeps the original, which meets the BatchedTensor as any library code does (the conversions,
the whole-function rerun). ``bt.primitive`` on the user's own function needs no interception:
the name is bound to the ``Primitive`` itself.

SciPy's rules (``rules/scipy_*.py``) are not imported with batchtensor (SciPy's subpackages
take 0.2-0.7 s to import): the first vmap level that opens after ``scipy.signal`` (...) was
imported loads that subpackage's rules (``LAZY_RULES``, ``load_pending``).
"""

from __future__ import annotations

import functools
import importlib
import importlib.machinery
import inspect
import sys
import types
import warnings
import weakref
from typing import Any, Callable, Iterable

import numpy as np
from numpy._core.overrides import ARRAY_FUNCTIONS

from . import conversions
from .dispatch import function_call
from .levels import current_level
from .plumbing import scan_level
from .registry import (PER_EXAMPLE, REGISTRY, batch_rule as register_rule, is_physical_type,
                       op_name)

__all__ = ["Primitive", "primitive", "batch_rule", "forget", "is_foreign", "stand_in",
           "intercepted_modules", "install", "load_pending", "LAZY_RULES", "PRIMITIVES",
           "ONNX_LOWERINGS"]

#: original callable -> its Primitive (the stand-in installed in its modules)
PRIMITIVES: dict[Any, "Primitive"] = {}
#: original callable -> ``(lowering, onnx op types)`` for ``bt.onnx`` (onnx/recorder.py)
ONNX_LOWERINGS: dict[Any, tuple] = {}
#: a package that, once imported, gets the rules of a module of ``batchtensor.rules``
LAZY_RULES: dict[str, str] = {
    "scipy._lib.array_api_extra": "array_api_extra",
    "scipy.fft": "scipy_fft",
    "scipy.linalg": "scipy_linalg",
    "scipy.ndimage": "scipy_ndimage",
    "scipy.signal": "scipy_signal",
    "scipy.sparse": "scipy_sparse",
    "scipy.spatial": "scipy_spatial",
    "scipy.special": "scipy_special",
    "scipy.stats": "scipy_stats",
    "sklearn.metrics": "sklearn_pairwise",
    "astropy.stats": "astropy_stats",
}
_pending = dict(LAZY_RULES)
_places: dict[Any, list] = {}  # original callable -> the modules it is intercepted in


class Primitive:
    """A foreign callable as batchtensor sees it: a call with an argument batched at an open
    level goes to the dispatcher (the registered batch rule, else the per-example loop); a
    call with a recording array of ``bt.onnx`` goes to the recorder (the ``onnx=`` lowering);
    every other call goes to ``original`` untouched. ``bt.primitive`` makes them.

    ``def_batch_rule`` / ``def_onnx`` register the rule and the ONNX lowering (decorators)."""

    def __init__(self, original: Callable):
        functools.update_wrapper(self, original)  # __name__, __doc__, __wrapped__, ...
        self.original = original

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if current_level() is not None:
            level = scan_level(args)
            if kwargs:
                level = scan_level(kwargs, level)
            if level is not None:
                return function_call(self.original, args, kwargs)
            for a in (*args, *kwargs.values()):
                t = type(a)
                if t is not np.ndarray and is_physical_type(t):  # bt.onnx's recording array
                    return t.__array_function__(a, self.original, (t,), args, kwargs)
        return self.original(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<batchtensor primitive {op_name(self.original)}>"

    def __get__(self, obj: Any, owner: Any = None) -> Any:
        return self if obj is None else types.MethodType(self, obj)

    def def_batch_rule(self, rule: Callable | None = None, **options: Any) -> Callable:
        """Register the batch rule (as ``bt.batch_rule``: the parameters are the function's,
        with ``x_bdim`` after each array ``x``); usable as a decorator."""
        deco = register_rule(self.original, **options)
        return deco if rule is None else deco(rule)

    def def_onnx(self, lowering: Callable | None = None, *, onnx_ops: Iterable[str] = ()
                 ) -> Callable:
        """Register how ``bt.onnx.export`` writes a call: ``lowering(g, out, *args, **kwargs)``
        returns the graph name of the result (``g.node(op_type, inputs, domain=...)`` adds a
        node, ``g.val(x, dtype)`` gives an argument as a graph value; see docs/foreign.md).
        The batch rule must call the primitive itself on its physical values, so that the
        export sees the call."""

        def deco(fn: Callable) -> Callable:
            ONNX_LOWERINGS[self.original] = (fn, tuple(onnx_ops))
            return fn

        return deco if lowering is None else deco(lowering)


# ---- where a callable is reachable --------------------------------------------------------------
def _public(name: str) -> bool:
    return not any(part.startswith("_") for part in name.split(".")[1:])


def intercepted_modules(fn: Any) -> list:
    """The imported modules of ``fn``'s package that hold it under its own name and through
    which code calls it: the public ones (``scipy.signal``), and the module that defines it
    where its own functions call it (``scipy.signal._signaltools``: ``filtfilt`` calls
    ``lfilter``) or that is compiled (``scipy.signal._sigtools``). Other private modules
    that call it are left alone: each name replaced in a namespace costs every outermost
    vmap call about 0.1 us (bench/foreign.py)."""
    name = getattr(fn, "__name__", None)
    home = getattr(fn, "__module__", None)
    if not isinstance(name, str) or not isinstance(home, str):
        return []
    top = home.partition(".")[0]
    found = []
    for mod_name, mod in list(sys.modules.items()):
        if mod_name.partition(".")[0] != top:
            continue
        try:
            held = vars(mod).get(name)
        except TypeError:  # not a module (a stand-in some packages put in sys.modules)
            continue
        if (held is fn or (type(held) is Primitive and held.original is fn)) and (
                _public(mod_name) or (mod_name == home and (
                    name in _names_called(mod) or _compiled(mod)))):
            found.append(mod)
    return found


def _compiled(mod: Any) -> bool:
    """Is ``mod`` an extension module? Python code reaches its functions as its attributes
    (``_sigtools._convolve2d(...)`` in ``scipy.signal._signaltools``)."""
    return str(getattr(mod, "__file__", None)).endswith(
        tuple(importlib.machinery.EXTENSION_SUFFIXES))


_called: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _names_called(mod: Any) -> frozenset:
    """The global names the functions defined in ``mod`` refer to (decorated ones included)."""
    try:
        return _called[mod]
    except (KeyError, TypeError):
        pass
    found: set = set()

    def scan(code: types.CodeType) -> None:
        found.update(code.co_names)
        for c in code.co_consts:
            if isinstance(c, types.CodeType):
                scan(c)

    key = getattr(mod, "__name__", "")
    for value in list(vars(mod).values()):
        for _ in range(4):  # a decorated function: the ones it wraps
            if isinstance(value, types.FunctionType) and value.__module__ == key:
                scan(value.__code__)
            try:
                value = inspect.getattr_static(value, "__wrapped__")
            except AttributeError:
                break
    names = frozenset(found)
    try:
        _called[mod] = names
    except TypeError:  # not weakly referenceable: not cached
        pass
    return names


def _unreachable(fn: Any) -> str | None:
    """Why calls of ``fn`` cannot be intercepted, or None."""
    owner = getattr(fn, "__self__", None)
    if owner is not None and not isinstance(owner, types.ModuleType):
        return (f"it is a method bound to {type(owner).__name__!r} objects, and a method "
                f"cannot be replaced where callers reach it")
    if not callable(fn):
        return f"it is {type(fn).__name__!r}, not a callable"
    if not intercepted_modules(fn):
        return (f"it is not an attribute of any imported module of its package under its "
                f"own name {getattr(fn, '__name__', '?')!r} (a lambda, a nested function, "
                f"or a module not imported yet)")
    return None


def is_numpy_op(op: Any) -> bool:
    """Does NumPy (or batchtensor itself) hand calls of ``op`` to the dispatcher? Ufuncs, their
    methods, the functions NumPy dispatches, anything of numpy or ``operator``."""
    if isinstance(op, np.ufunc) or isinstance(getattr(op, "__self__", None), np.ufunc):
        return True
    if op in ARRAY_FUNCTIONS or hasattr(op, "_implementation"):  # NEP 18 dispatched
        return True
    mod = getattr(op, "__module__", None) or ""
    return mod.partition(".")[0] in ("numpy", "operator", "_operator", "builtins")


def stand_in(func: Any) -> Any:
    """What ``bt.vmap(func)`` calls: the Primitive of a foreign callable (``bt.vmap(
    scipy.signal.lfilter)``, also bound by ``functools.partial``), ``func`` itself otherwise."""
    if type(func) is functools.partial:
        inner = stand_in(func.func)
        return func if inner is func.func else functools.partial(inner, *func.args,
                                                                 **func.keywords)
    try:
        return PRIMITIVES.get(func, func)
    except TypeError:  # unhashable
        return func


def is_foreign(op: Any) -> bool:
    """Is ``op`` a callable batchtensor intercepts (it has a ``Primitive``)?"""
    try:
        return op in PRIMITIVES
    except TypeError:
        return False


def install(op: Any, modules: Iterable = ()) -> Primitive:
    """``op``'s Primitive, installed in every module that holds it (and in ``modules``)."""
    prim = PRIMITIVES.get(op)
    if prim is None:
        prim = PRIMITIVES[op] = PER_EXAMPLE[op] = Primitive(op)
    name = op.__name__
    places = _places.setdefault(op, [])
    found = intercepted_modules(op)
    for mod in [*found, *modules]:
        if vars(mod).get(name) is not op and vars(mod).get(name) is not prim:
            raise TypeError(f"bt.primitive: module {mod.__name__!r} has no attribute {name!r} "
                            f"holding {op_name(op)}")
        # Code that reads the module's globals (its own functions; any function of the
        # defining module or of a module named in `modules`) needs the name replaced in the
        # namespace: about 0.05 us per name each way at each outermost vmap call. Attribute
        # access alone (`scipy.signal.lfilter`) is served by switching the module's class:
        # one assignment per module each way, whatever the number of names.
        by_class = any(m is mod for m in found) and name not in _names_called(mod)
        conversions.intercept(mod, name, prim, by_class=by_class)
        if all(m is not mod for m in places):
            places.append(mod)
    return prim


def forget(op: Any) -> None:
    """Undo ``bt.batch_rule`` / ``bt.primitive`` for a foreign ``op``: its rule, lowering and
    interception are dropped, and every module holds the original again (tests use it)."""
    prim = PRIMITIVES.pop(op, None)
    PER_EXAMPLE.pop(op, None)
    ONNX_LOWERINGS.pop(op, None)
    REGISTRY.pop(op, None)
    if prim is not None:
        for mod in _places.pop(op, ()):
            conversions.release(mod, op.__name__)


# ---- SciPy's rules, loaded when SciPy is -------------------------------------------------------
def load_pending() -> None:
    """Load the rules of every package in ``LAZY_RULES`` imported since the last call, and
    install their callables. Runs when the first vmap level opens (``conversions.enter``)."""
    if not _pending or ("scipy" not in sys.modules and "astropy" not in sys.modules):
        return
    for package in [p for p in _pending if p in sys.modules]:
        _load(package)


def _load(package: str) -> None:
    module = _pending.pop(package, None)
    if module is None:
        return
    try:
        rules = importlib.import_module(f"{__package__}.rules.{module}")
        for cls, name, replacement in getattr(rules, "METHODS", ()):  # (scipy.sparse's)
            conversions.intercept_attribute(cls, name, replacement)
        for mod, name, op in getattr(rules, "CALLED_AS", ()):  # (a kernel bound by name)
            conversions.intercept(mod, name, install(op))
        conversions.CONVERTERS.update(getattr(rules, "CONVERTERS", {}))  # (scipy.sparse's)
        for op in list(REGISTRY):
            mod = getattr(op, "__module__", None)
            if isinstance(mod, str) and mod.startswith(package + ".") and op not in PRIMITIVES:
                install(op)
    except Exception as e:  # noqa: BLE001  (another SciPy version: run unbatched, say why)
        warnings.warn(f"batchtensor's batch rules for {package} could not be loaded ({e!r}); "
                      f"its functions run through the per-example fallbacks", RuntimeWarning,
                      stacklevel=2)


conversions.before_first_enter.append(load_pending)


# ---- the public entry points ---------------------------------------------------------------------
def batch_rule(op: Any, **options: Any) -> Callable:
    """Register a batch rule for ``op``: a NumPy callable, or a foreign one (SciPy, compiled
    code) that user code calls through a module attribute (``scipy.signal.lfilter(...)``).

    The rule receives physical values and their batch axes and returns ``(out, out_bdim)``;
    its parameters are the op's own, with ``x_bdim`` after each array ``x`` (see
    docs/writing_rules.md). For a foreign ``op`` the rule takes effect where code reaches the
    callable through its package's public modules or the module that defines it; a callable
    that cannot be reached so (a bound method, a lambda) raises a TypeError here. Options:
    ``raw``, ``replace``, ``fast`` (see ``batchtensor.registry.batch_rule``).

    >>> import numpy as np, batchtensor as bt, scipy.signal
    >>> @bt.batch_rule(scipy.signal.medfilt)
    ... def medfilt_rule(volume, volume_bdim, kernel_size=None):
    ...     k = 3 if kernel_size is None else kernel_size
    ...     volume = np.moveaxis(volume, volume_bdim, 0)      # the batch axis first,
    ...     return scipy.signal.medfilt(volume, [1, k]), 0     # with a window of 1
    >>> bt.vmap(scipy.signal.medfilt)(np.array([[1.0, 9.0, 2.0], [5.0, 0.0, 4.0]]))
    array([[1., 2., 2.],
           [0., 4., 0.]])
    """
    if type(op) is Primitive:
        return register_rule(op.original, **options)
    owner = getattr(op, "__self__", None)
    if is_numpy_op(op) and (owner is None or isinstance(owner, (types.ModuleType, np.ufunc))):
        return register_rule(op, **options)
    for package in list(_pending):  # SciPy's own rule first: replacing it must say so
        if (getattr(op, "__module__", None) or "").startswith(package + "."):
            _load(package)
    why = _unreachable(op)
    if why is not None:
        raise TypeError(
            f"bt.batch_rule({op_name(op)}): the rule would never run, because {why}: "
            f"NumPy does not hand calls of foreign functions to batchtensor, so they are "
            f"intercepted where code reaches them through a module attribute. Wrap the "
            f"function instead: f = bt.primitive(f) and call f, or register the rule "
            f"on a module-level function.")
    deco = register_rule(op, **options)

    def register_and_install(rule: Callable) -> Callable:
        rule = deco(rule)
        install(op)
        return rule

    return register_and_install


def primitive(fn: Callable | None = None, *, rule: Callable | None = None,
              onnx: Callable | None = None, onnx_ops: Iterable[str] = (),
              modules: Iterable = ()) -> Any:
    """Declare ``fn`` an op of its own: its batch rule (``rule``), and how ``bt.onnx.export``
    writes it (``onnx``, a lowering; the export then keeps it as one node).

    ``bt.primitive(scipy.signal.lfilter, rule=...)`` makes a foreign callable an op where code
    reaches it through its modules (as ``bt.batch_rule``) and returns its ``Primitive``;
    ``@bt.primitive`` on a function of your own (or ``@bt.primitive(rule=..., onnx=...)``)
    makes the function itself the ``Primitive``, so every call reaches it. A call with no
    batched argument runs ``fn`` untouched; a batched call runs the rule, or ``fn`` once per
    example if it has none (slow, warned: never vmap's vectorised run of ``fn``'s insides).
    ``modules``: further modules to intercept ``fn`` in (a module of your own that did
    ``from scipy.signal import lfilter``).

    >>> import numpy as np, batchtensor as bt
    >>> @bt.primitive
    ... def smooth(x, axis=-1):
    ...     x = np.asarray(x)                                # say, a compiled routine
    ...     return (x + np.roll(x, 1, axis) + np.roll(x, -1, axis)) / 3
    >>> @smooth.def_batch_rule
    ... def smooth_rule(x, x_bdim, axis=-1):
    ...     axis = axis % (x.ndim - 1)                       # the example's axis ...
    ...     return smooth(x, axis + (axis >= x_bdim)), x_bdim  # ... past the batch axis
    >>> bt.vmap(smooth)(np.eye(3))
    array([[0.33333333, 0.33333333, 0.33333333],
           [0.33333333, 0.33333333, 0.33333333],
           [0.33333333, 0.33333333, 0.33333333]])
    """
    if fn is None:
        return lambda f: primitive(f, rule=rule, onnx=onnx, onnx_ops=onnx_ops,
                                   modules=modules)
    if type(fn) is Primitive:
        prim = install(fn.original, modules) if modules else fn
    else:
        owner = getattr(fn, "__self__", None)
        if not callable(fn) or (owner is not None and not isinstance(owner, types.ModuleType)):
            raise TypeError(f"bt.primitive: {fn!r} {_unreachable(fn)}; make a module-level "
                            f"function that calls it and declare that one")
        if is_numpy_op(fn):
            raise TypeError(f"bt.primitive({op_name(fn)}): NumPy already hands its calls to "
                            f"batchtensor; register a rule with bt.batch_rule instead")
        prim = install(fn, modules)
    if rule is not None:
        prim.def_batch_rule(rule)
    if onnx is not None:
        prim.def_onnx(onnx, onnx_ops=onnx_ops)
    return prim


# ---- NumPy functions that NumPy does not dispatch ----------------------------------------------
#: NumPy functions that NumPy does not dispatch and that read an array's memory themselves
#: (``as_strided`` reads ``__array_interface__``, which a BatchedTensor refuses), with rules in
#: ``batchtensor.rules``: intercepted as foreign callables are, and also in every module that
#: bound one by name at import, as libraries do (``from numpy.lib.stride_tricks import
#: as_strided`` in scikit-image, scikit-learn and SciPy), since their calls reach nothing else.
BOUND_BY_NAME = (np.lib.stride_tricks.as_strided,)


def _holds(module: Any, name: str, op: Any) -> bool:
    try:
        held = vars(module).get(name)
    except TypeError:  # not a module (a stand-in some packages put in sys.modules)
        return False
    return held is op or (type(held) is Primitive and held.original is op)


def install_bound_by_name() -> None:
    """Intercept ``BOUND_BY_NAME`` in every module that holds one (``conversions.on_new_modules``:
    again whenever modules were imported since). NumPy's own modules keep NumPy's functions."""
    for op in BOUND_BY_NAME:
        name = op.__name__
        install(op, [m for key, m in list(sys.modules.items())
                     if not key.startswith(("numpy.", "batchtensor.")) and _holds(m, name, op)])


install_bound_by_name()
conversions.on_new_modules.append(install_bound_by_name)
