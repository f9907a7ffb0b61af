"""NumPy's converting functions keep batched values batched while a vmap runs.

Library code converts its inputs: ``np.asarray(x)``, ``np.array([a, b, 1.0])``, ``np.r_[a, b]``.
NumPy does not dispatch these on their data (only on ``like=``), so without help each would
convert a BatchedTensor with ``__array__``, which must refuse (it would drop the batch axis).

While at least one vmap level is open on any thread, this module replaces those functions in the
``numpy`` module (``np.asarray`` as user and library code reach it) by thin wrappers. On a
thread with an open level, a wrapper whose data holds a BatchedTensor hands the call to the
dispatcher, as NumPy would for ``like=`` that value (NumPy's own ``like=`` path looks the
function up in ``numpy`` by name, which would find the wrapper), so each example is converted as
the loop would convert it (dtype, copy, order, ndmin: ``rules/creation.py``); every other call
goes straight to NumPy's own function. When the last level closes, every attribute of ``numpy``
is the original again. ``bt.config.intercept_numpy = False`` turns this off.

What it cannot reach: a name bound before the vmap (``from numpy import asarray``, or a module
that saved ``np.asarray`` at import time) and NumPy's C code. The names of the vmapped
function's module, and of the modules learnt to convert through such names
(``buffers.learn_from``), are swapped for the length of each pass by ``buffers.enter``.
"""

from __future__ import annotations

import functools
import operator
import sys
import threading
from collections import deque
from itertools import starmap
from typing import Any, TypeAlias

import numpy as np

from .boxed.loop import loop_call
from .config import config
from .dispatch import function_call
from .levels import current_level
from .registry import ALIASES
from .rules.ragged import Ragged
from .tensor import BatchedTensor, foreign_owner_view

__all__ = ["enter", "leave", "ORIGINALS", "installed", "intercept", "intercept_attribute",
           "CONVERTERS", "release", "replacement", "replacement_of",
           "pristine", "is_swapped", "before_first_enter", "on_new_modules", "always_installed"]

#: the functions replaced, by name in the ``numpy`` module (their first argument is the data)
_LIKE_CALLS = ("asarray", "asanyarray", "array", "ascontiguousarray", "asfortranarray",
               "require")
ORIGINALS: dict[str, Any] = {name: getattr(np, name) for name in
                             _LIKE_CALLS + ("asarray_chkfinite", "r_", "c_", "from_dlpack")}

#: batched types besides BatchedTensor that convert in their own way (``masked.py``'s):
#: type -> ``converter(name, original, value, args, kwargs)``
CONVERTERS: dict[type, Any] = {}

_NUMPY = vars(np)  # one dict update swaps them all (a tenth of nine setattr calls)
_lock = threading.Lock()
# (bound once: every outermost vmap call takes the lock twice, and looking the methods up on
# the lock each time cost as much again as taking and releasing it)
_acquire, _release = _lock.acquire, _lock.release
_users = 0  # levels open on all threads together
_full_users = 0  # of those, the ones whose passes want every replacement (enter(full=True))
_in = False  # whether every replacement is installed (enter / leave)
#: Whether the replacements every pass needs (all but LEAN_SKIPS) are installed now: a lean
#: pass inside another on the same thread (which entered, and leaves only after it) then needs
#: no ``enter`` and ``leave`` of its own. (A module attribute, not a function: one read per
#: nested vmap call.)
always_installed = False
#: What a lean pass (``enter(full=False)``: the first pass of a function, outside any other
#: vmap) goes without: the replacements in these namespaces only turn what NumPy's own code
#: would refuse into a vectorised call. Without them a batched value meets NumPy's own
#: function, which converts it (``__array__``: a refused conversion, noted by
#: ``errors.note_refusal``) or writes it into an array it made (``SharedWriteError``, noted
#: too), so the vmap sees the refusal and runs a full pass (``api.VmapFunction._pass``):
#: NumPy's conversions, the names ``undispatched`` and ``buffers`` replace in ``numpy`` and
#: ``numpy.linalg``, ``np.vectorize``'s call, ``as_strided`` (NumPy's converts its argument
#: with ``np.array`` first), and ``numpy.ma`` with ``MaskedArray``'s
#: ``__new__`` / ``__getitem__`` (a lean pass holds no masked batched value: those come from
#: masked arguments, which take full passes, or from these replacements). Every other
#: replacement goes in for every pass: ``numpy.random``'s (without them each example would
#: get the same draw, with no error), the rules of foreign functions (a rule registered for a
#: function takes effect in every pass), and the answers to type questions libraries ask.
LEAN_SKIPS = frozenset(map(id, (np, vars(np), np.linalg, np.ma, np.vectorize,
                                np.ma.MaskedArray, np.lib.stride_tricks)))
_replacements: dict[str, Any] = {}


def _batched(data: Any) -> BatchedTensor | None:
    """The first BatchedTensor in ``data`` (a value, or lists / tuples of values)."""
    t = type(data)
    if t is BatchedTensor:
        return data
    if t is list or t is tuple:
        for item in data:
            found = _batched(item)
            if found is not None:
                return found
    return None


def _like_call(name: str):
    original = ORIGINALS[name]

    def convert(a, *args, **kwargs):
        if "like" not in kwargs and type(a) is not np.ndarray and current_level() is not None \
                and config.intercept_numpy:
            like = _batched(a)
            if like is not None:
                return function_call(original, (a,) + args, kwargs, like)
            if type(a) is Ragged:  # x[mask] of a count per example: its elements converted
                return a.converted(original, args, kwargs)
            converter = CONVERTERS.get(type(a))
            if converter is not None:  # a masked batch (masked.py)
                return converter(name, original, a, args, kwargs)
        return original(a, *args, **kwargs)

    convert.__name__ = convert.__qualname__ = name
    convert.__doc__ = (f"``numpy.{name}``, which keeps a batched value batched inside a vmap "
                       f"(batchtensor.conversions).\n\n{original.__doc__ or ''}")
    convert.__wrapped__ = original  # type: ignore[attr-defined]  # (a function's attribute)
    return convert


def _asarray_chkfinite(a, dtype=None, order=None):
    """``numpy.asarray_chkfinite`` that keeps a batched value batched inside a vmap: NumPy's
    ValueError when any example holds an inf or a NaN, as the loop raises at the first one."""
    if current_level() is None or _batched(a) is None or not config.intercept_numpy:
        return ORIGINALS["asarray_chkfinite"](a, dtype, order)
    res = function_call(ORIGINALS["asarray"], (a, dtype, order), {}, _batched(a))
    if res.dtype.char in np.typecodes["AllFloat"] and not bool(np.all(np.isfinite(res))):
        raise ValueError("array must not contain infs or NaNs")
    return res


class _Concatenator:
    """``np.r_`` / ``np.c_`` with batched items, as NumPy's index tricks build them: slices
    become aranges, the items are made at least 1-d in the dtype of them all (Python scalars
    weak), ``np.c_`` makes 1-d items columns, then one ``np.concatenate``. A string directive
    (``np.r_['0,2', ...]``) runs once per example through the loop fallback, which is exact."""

    def __init__(self, original, columns: bool):
        self._original = original
        self._columns = columns

        def per_example(*items):
            return original[items if len(items) > 1 else items[0]]

        per_example.__module__ = "numpy"  # how the loop fallback's warning names it
        per_example.__qualname__ = per_example.__name__ = "c_[...]" if columns else "r_[...]"
        self._per_example = per_example

    def __getitem__(self, key):
        items = key if type(key) is tuple else (key,)
        like = _batched(items) if current_level() is not None and config.intercept_numpy \
            else None
        if like is None:
            return self._original[key]
        if any(isinstance(k, str) for k in items):
            return loop_call(self._per_example, items, {}, like._level)
        objs = [self._original[k] if type(k) is slice else k for k in items]  # slice: arange
        dtype = np.result_type(*objs)
        parts = []
        for a in objs:
            a = function_call(ORIGINALS["array"], (a,), {"copy": None, "ndmin": 1,
                                                          "dtype": dtype}, like)
            if self._columns and a.ndim == 1:
                a = np.reshape(a, (-1, 1))
            parts.append(a)
        return np.concatenate(parts, axis=-1 if self._columns else 0)

    def __len__(self) -> int:
        return 0  # as numpy's index tricks: they are not sequences

    def __repr__(self) -> str:
        return f"{self._original!r} (batchtensor.conversions)"


def _from_dlpack(x, /, *, device=None, copy=None):
    """``numpy.from_dlpack`` that keeps a batched value batched inside a vmap: each example's
    ``from_dlpack`` is a view of the example's memory (a copy with ``copy=True``), writeable
    as the example is, that does not own its memory and whose base is not an array (NumPy's
    capsule: ``tensor.foreign_owner_view``). (scikit-learn moves arrays between namespaces
    with it, and takes another path where it raises.)"""
    if type(x) is BatchedTensor and current_level() is not None and config.intercept_numpy \
            and device in (None, "cpu") and copy in (None, True, False):
        return foreign_owner_view(x.copy() if copy else x)  # (a capsule's base either way)
    return ORIGINALS["from_dlpack"](x, device=device, copy=copy)


def _build() -> dict[str, Any]:
    made = {name: _like_call(name) for name in _LIKE_CALLS}
    made["asarray_chkfinite"] = _asarray_chkfinite
    made["from_dlpack"] = _from_dlpack
    made["r_"] = _Concatenator(ORIGINALS["r_"], columns=False)
    made["c_"] = _Concatenator(ORIGINALS["c_"], columns=True)
    for name in _LIKE_CALLS:
        ALIASES[made[name]] = ORIGINALS[name]
    return made


def installed() -> bool:
    """Whether the replacements are in ``numpy`` now."""
    return np.asarray is not ORIGINALS["asarray"]


def replacement(name: str) -> Any:
    """This module's replacement for ``numpy.<name>`` (built on first use)."""
    with _lock:
        if not _replacements:
            _replacements.update(_build())
        return _replacements[name]


def replacement_of(module: Any, name: str) -> Any:
    """What ``module.name`` is while a vmap level is open: this module's replacement, or the
    one ``intercept`` installs, or else the module's own attribute (to wrap it further)."""
    namespace = vars(module)
    if namespace is _NUMPY and name in ORIGINALS:
        return replacement(name)
    with _lock:
        for swap in _swaps:
            if type(swap.namespace) is _ClassSwitch:
                if swap.namespace.module is module and type(vars(swap.replacements).get(name)) \
                        is _Shadow:
                    return vars(swap.replacements)[name].value
            elif swap.namespace is namespace and swap.originals is not ORIGINALS \
                    and name in swap.replacements:
                return swap.replacements[name]
    return namespace[name]


def is_swapped(module: Any, name: str) -> bool:
    """Whether ``module.name`` is one of the attributes replaced while a vmap runs."""
    namespace = vars(module)
    if namespace is _NUMPY and name in ORIGINALS:
        return True
    for swap in _swaps:
        if type(swap.namespace) is _ClassSwitch:  # intercepted by class
            if swap.namespace.module is module and name in vars(swap.replacements):
                return True
        elif swap.namespace is namespace and name in swap.originals:
            return True
    return False


def pristine() -> bool:
    """Whether every attribute this module (or ``intercept``) replaces is its original (and
    every module intercepted by class has its own class)."""
    for swap in _swaps:
        if type(swap.namespace) is _ClassSwitch:
            if type(swap.namespace.module) is not swap.originals:
                return False
        elif any(swap.namespace.get(name) is not fn for name, fn in swap.originals.items()):
            return False
    return not installed()


class _Swap:
    """Names of one module replaced while any level is open: the module's namespace, the
    originals and the replacements (one ``dict.update`` each way); or, for a module
    intercepted by class, a ``_ClassSwitch`` and the two classes."""

    __slots__ = ("namespace", "originals", "replacements")

    def __init__(self, namespace: Any, originals: Any, replacements: Any):
        self.namespace, self.originals, self.replacements = namespace, originals, replacements


_swaps: list[_Swap] = []  # numpy's conversions first, built at the first enter()
#: the calls that install and restore every swap (``_plan``); None after ``_swaps`` changed
_plans: tuple[Plan, Plan, Plan, Plan] | None = None
#: ``_plans[0]`` and ``_plans[1]`` where those are a few partials (``_FEW``), for ``enter`` and
#: ``leave`` to call in place (every outermost vmap call runs them); None otherwise
_always_in: tuple[functools.partial[Any], ...] | None = None
_always_out: tuple[functools.partial[Any], ...] | None = None


def _is_always(swap: _Swap) -> bool:
    """Whether every pass needs ``swap``, a lean one too (``LEAN_SKIPS``)."""
    ns = swap.namespace
    owner = ns.module if type(ns) is _ClassSwitch else \
        ns.cls if type(ns) is _ClassAttributes else ns
    return id(owner) not in LEAN_SKIPS


#: calls that install or restore swaps: ``(function, *arguments)`` tuples, run by one
#: ``starmap``; or, for a few of them, ``functools.partial`` objects, called one by one
Plan: TypeAlias = "list[tuple[Any, ...]] | tuple[functools.partial[Any], ...]"
_FEW = 8  # a plan of up to this many calls is partials (see _plan)


def _plan() -> tuple[Plan, Plan, Plan, Plan]:
    """``_swaps`` as lists of ``(function, *arguments)``, run by ``_run`` in C (one
    ``starmap``): a swap costs its ``dict.update`` or ``setattr`` alone, where a Python loop
    over the swaps' own ``update`` methods cost about as much again per swap (with SciPy's
    modules imported, about 50 swaps each way per outermost vmap call). A plan of a few calls
    (NumPy's alone: two each way) is ``functools.partial`` objects instead: calling two of
    them took 0.29 us where making a ``starmap`` and a ``deque`` for them took 0.48 us.
    A namespace swap of one name is an ``operator.setitem`` (about half the instructions of
    a ``dict.update`` with a dict of one); ``intercept`` and ``release`` call ``_changed``
    when they add or remove a name, so that the plan is made again.
    Four plans: install and restore the swaps every pass needs, install and restore those
    of ``LEAN_SKIPS``."""
    global _plans, _always_in, _always_out
    plans = _plans
    if plans is None:
        lists: tuple[list[tuple[Any, ...]], ...] = ([], [], [], [])
        for swap in _swaps:
            install, restore = lists[0:2] if _is_always(swap) else lists[2:4]
            ns = swap.namespace
            if type(ns) is _ClassSwitch:
                install.append((setattr, ns.module, "__class__", swap.replacements))
                restore.append((setattr, ns.module, "__class__", swap.originals))
            elif type(ns) is _ClassAttributes:
                install.extend((setattr, ns.cls, k, v) for k, v in swap.replacements.items())
                restore.extend((setattr, ns.cls, k, v) for k, v in swap.originals.items())
            elif len(swap.replacements) == 1:
                (name, value), = swap.replacements.items()
                install.append((operator.setitem, ns, name, value))
                restore.append((operator.setitem, ns, name, swap.originals[name]))
            else:  # a namespace: its dicts themselves
                install.append((dict.update, ns, swap.replacements))
                restore.append((dict.update, ns, swap.originals))
        built: Any = tuple(
            tuple(functools.partial(*call) for call in calls)  # type: ignore[misc, operator]
            if len(calls) <= _FEW else calls
            for calls in lists)
        plans = _plans = built
        _always_in, _always_out = (
            (built[0], built[1]) if type(built[0]) is type(built[1]) is tuple else (None, None))
    return plans


def _live(swap: _Swap) -> bool:
    """Whether ``swap``'s tier is installed now (a swap added then goes in at once)."""
    return always_installed if _is_always(swap) else _in


def _run(calls: Plan) -> None:
    if type(calls) is tuple:
        for call in calls:
            call()
    else:
        deque(starmap(operator.call, calls), 0)  # type: ignore[arg-type]


def _changed() -> None:
    """``_swaps`` changed (under ``_lock``): the plan is built again at its next use."""
    global _plans, _always_in, _always_out
    _plans = _always_in = _always_out = None


def intercept(module: Any, name: str, replacement: Any, *, by_class: bool = False) -> None:
    """Make ``module.name`` be ``replacement`` while any vmap level is open (on any thread),
    and the original again when none is; the mechanism NumPy's conversions use, for other
    functions user code reaches by module attribute (``np.random.normal``,
    ``scipy.signal.lfilter``). The replacement must call the original where no level is open
    on its own thread. ``bt.config.intercept_numpy = False`` turns every replacement off.

    ``by_class=True`` leaves the module's namespace alone and switches the module's class
    instead, to a subclass whose data descriptors shadow the names replaced: one assignment
    per module each way, whatever the number of names (replacing names in the namespace
    costs about 0.05 us per name each way, bench/foreign.py). It serves ``module.name`` and
    ``from module import name``, not the module's own functions, which read their globals
    from the namespace."""
    if by_class:
        _intercept_by_class(module, name, replacement)
        return
    namespace = vars(module)
    with _lock:
        for swap in _swaps:
            # (not numpy's conversions' own swap, whose tables are ORIGINALS and _replacements)
            if swap.namespace is namespace and swap.originals is not ORIGINALS:
                break
        else:
            swap = _Swap(namespace, {}, {})
            _swaps.append(swap)
            _changed()
        swap.originals.setdefault(name, namespace[name])
        swap.replacements[name] = replacement
        _changed()
        if _users and _live(swap):
            namespace[name] = replacement


class _Shadow:
    """A module class's data descriptor: the replacement of one name (writes and deletes go
    to the module's namespace, as without it)."""

    __slots__ = ("value", "name")

    def __init__(self, value: Any, name: str):
        self.value, self.name = value, name

    def __get__(self, module: Any, owner: Any = None) -> Any:
        return self if module is None else self.value

    def __set__(self, module: Any, value: Any) -> None:
        vars(module)[self.name] = value

    def __delete__(self, module: Any) -> None:
        del vars(module)[self.name]


class _ClassSwitch:
    """What ``_Swap`` updates for a module intercepted by class: ``update(cls)`` switches the
    module's class (a C-level call: ``setattr(module, "__class__", cls)``)."""

    __slots__ = ("module", "update")

    def __init__(self, module: Any):
        self.module = module
        self.update = functools.partial(setattr, module, "__class__")


class _ClassAttributes:
    """What ``_Swap`` updates for an attribute of a class (``intercept_attribute``)."""

    __slots__ = ("cls",)

    def __init__(self, cls: type):
        self.cls = cls

    def update(self, values: dict) -> None:
        for name, value in values.items():
            setattr(self.cls, name, value)

    def get(self, name: str) -> Any:
        return vars(self.cls).get(name)


def intercept_attribute(cls: type, name: str, replacement: Any) -> None:
    """Make the class attribute ``cls.name`` be ``replacement`` while any vmap level is open,
    as ``intercept`` does for a module's names (``MaskedArray.__new__``: a class that code
    calls by name cannot be swapped for a function without breaking ``isinstance``)."""
    with _lock:
        swap = _Swap(_ClassAttributes(cls), {name: vars(cls)[name]}, {name: replacement})
        _swaps.append(swap)
        _changed()
        if _users and _live(swap):
            swap.namespace.update(swap.replacements)


def _intercept_by_class(module: Any, name: str, replacement: Any) -> None:
    with _lock:
        for swap in _swaps:
            if type(swap.namespace) is _ClassSwitch and swap.namespace.module is module:
                break
        else:
            base = type(module)
            shadowing = type(base.__name__, (base,), {"__module__": base.__module__,
                                                     "__slots__": ()})
            swap = _Swap(_ClassSwitch(module), base, shadowing)  # classes, not names
            _swaps.append(swap)
            _changed()
        setattr(swap.replacements, name, _Shadow(replacement, name))
        if _users and _live(swap):
            module.__class__ = swap.replacements


def release(module: Any, name: str) -> None:
    """Undo ``intercept(module, name, ...)``: ``module.name`` is the original again, now and
    whenever a level opens."""
    namespace = vars(module)
    with _lock:
        for swap in _swaps:
            if type(swap.namespace) is _ClassSwitch and swap.namespace.module is module:
                shadowing = swap.replacements
                if name in vars(shadowing):
                    delattr(shadowing, name)
                    if not any(type(v) is _Shadow for v in vars(shadowing).values()):
                        if _users and _live(swap):
                            module.__class__ = swap.originals
                        _swaps.remove(swap)
                        _changed()
                    return
            elif swap.namespace is namespace and name in swap.replacements:
                if _users and _live(swap):
                    namespace[name] = swap.originals[name]
                del swap.replacements[name], swap.originals[name]
                if not swap.replacements:
                    _swaps.remove(swap)
                _changed()
                return


#: called when a level opens while none is open and modules were imported since the last
#: call (one ``len(sys.modules)`` otherwise), before the replacements are installed (and
#: outside the lock, so that they may call ``intercept``): foreign.load_pending, which loads
#: the rules of a package once it is imported
before_first_enter: list = []
#: called right after ``before_first_enter`` (the modules those imported are seen here):
#: hooks that look for names in every module
on_new_modules: list = []
_modules_seen = 0  # len(sys.modules) when on_new_modules last ran


def enter(full: bool = True) -> None:
    """A vmap level opens: the first one (on any thread) installs the replacements; with
    ``full=False`` (a lean pass) all but those of ``LEAN_SKIPS``, until a full one opens."""
    global _users, _full_users, _modules_seen, always_installed
    if not _users and len(sys.modules) != _modules_seen:
        for hook in before_first_enter:
            hook()
        _modules_seen = len(sys.modules)
        for hook in on_new_modules:
            hook()
    _acquire()
    _users += 1
    # (not only at the first level: a thread that opened the first one with the replacements
    # off, ``bt.config(intercept_numpy=False)``, must not keep them off for the levels other
    # threads open meanwhile; each replacement asks its own thread's setting)
    if full:
        _full_users += 1
        if not _in:
            _install(True)
    elif not always_installed:
        calls = _always_in
        if calls is not None and config.intercept_everywhere:  # (a lean pass: in place)
            for call in calls:
                call()
            always_installed = True
        else:
            _install(False)
    _release()


def _install(full: bool) -> None:
    """``enter``'s first level of a tier (under ``_lock``): its swaps go in."""
    global _in, always_installed
    intercept = config.intercept_everywhere
    if not (config.intercept_numpy if intercept is None else intercept):
        return
    if not _replacements:
        _replacements.update(_build())
    if not _swaps or _swaps[0].replacements is not _replacements:  # (always first)
        _swaps.insert(0, _Swap(_NUMPY, ORIGINALS, _replacements))
        _changed()
    plans = _plans or _plan()
    if not always_installed:
        _run(plans[0])
        always_installed = True
    if full and not _in:
        _run(plans[2])
        _in = True


def leave(full: bool = True) -> None:
    """A vmap level closes: the last one puts the original functions back (the last full
    one, those of ``LEAN_SKIPS``)."""
    global _users, _full_users, _in, always_installed
    _acquire()
    _users -= 1
    if full:
        _full_users -= 1
    if not _full_users and _in:
        _run((_plans or _plan())[3])
        _in = False
    if not _users and always_installed:
        calls = _always_out
        if calls is None:
            _run((_plans or _plan())[1])
        else:
            for call in calls:
                call()
        always_installed = False
    _release()
