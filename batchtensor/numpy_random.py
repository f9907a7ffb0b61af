"""Plain NumPy randomness inside a vmapped function follows ``vmap(randomness=...)``.

NumPy's random functions take no array arguments, so NumPy never dispatches them: without
help, ``np.random.normal(size=3)`` inside ``f`` would draw once and every example would share
the draw. While a vmap level is open, this module replaces (``conversions.intercept``) the
module-level functions of ``numpy.random``, ``numpy.random.mtrand._rand`` (the global
RandomState that ``check_random_state(None)`` returns in SciPy and scikit-learn) and the
constructors ``default_rng``, ``Generator``, ``RandomState``, ``SeedSequence`` and the bit
generators, and vmap wraps the ``Generator`` / ``RandomState`` objects passed to ``f`` as
arguments. Every draw then does what the per-example loop does, under the vmap's
``randomness=`` (``numpy_streams`` draws):

- a *stream* (NumPy's global state, a generator passed in or made inside ``f`` from a bit
  generator of the caller's): the loop draws example 0's numbers, then example 1's, ... from
  it. ``"different"`` draws exactly those numbers (one NumPy call of the whole batch's size
  where NumPy's stream is the same as the loop's, else one call per example in turn; a second
  draw from the same stream in one pass reruns ``f`` per example, as only that interleaves the
  examples' draws as the loop does); ``"same"`` draws once for every example; ``"error"``
  raises, naming the call and the line.
- a generator made inside ``f`` (``default_rng(seed)``, ``RandomState(seed)``,
  ``Generator(PCG64(seed))``): each example of the loop makes its own, so a seed the examples
  share gives every example the same numbers, whatever ``randomness=``; a batched seed one
  generator per example; no seed (fresh OS entropy) independent numbers per example under
  ``"different"``, one generator under ``"same"``, and an error at the first draw under
  ``"error"``.

A Generator captured from outside ``f`` (a closure, a global) is drawn from by its own C
methods, which nothing can intercept: it draws one sample for every example (docs/semantics.md
says so and what to do).

>>> import numpy as np, batchtensor as bt
>>> np.random.seed(0)
>>> loop = np.stack([x + np.random.normal(size=2) for x in np.zeros((3, 2))])
>>> np.random.seed(0)
>>> out = bt.vmap(lambda x: x + np.random.normal(size=2), randomness="different")(
...     np.zeros((3, 2)))
>>> bool((out == loop).all())
True
"""

from __future__ import annotations

import functools
import math
import threading
import weakref
from typing import Any, Callable

import numpy as np

from . import conversions
from .config import config
from .errors import BatchingError
from .numpy_streams import (GENERATOR_METHODS, GLOBAL, RAND, RANDOMSTATE_METHODS, Source,
                            batched_in, chain, draw, example, front, mode_error, rerun_error,
                            shared, state_key, vectorised_levels)
from .tensor import BatchedTensor

__all__ = ["stream_argument", "ORIGINALS", "BatchGenerator", "BatchRandomState"]

_Generator = np.random.Generator
_RandomState = np.random.RandomState
_BitGenerator = np.random.BitGenerator
_SeedSequence = np.random.SeedSequence
_BIT_GENERATORS = ("PCG64", "PCG64DXSM", "MT19937", "Philox", "SFC64")

#: numpy.random's own attributes, taken at import (no level is open then)
ORIGINALS: dict[str, Any] = {name: getattr(np.random, name) for name in np.random.__all__}
#: the module-level functions of numpy.random that use its global RandomState
_GLOBAL_FUNCTIONS = tuple(n for n in np.random.__all__ if n[0].islower()
                          and n not in ("default_rng",))


# ---- generators that draw per example -------------------------------------------------------

def _method(name: str, cls_name: str) -> Callable:
    def method(self, *args, **kwargs):
        return draw(self._bt_source, name, args, kwargs, f"{cls_name}.{name}()")

    method.__name__ = name
    method.__qualname__ = f"Batch{cls_name}.{name}"
    method.__doc__ = (f"``numpy.random.{cls_name}.{name}``, drawn for every example as the "
                      f"per-example loop draws (batchtensor.numpy_random).")
    return method


class BatchGenerator(_Generator):
    """A ``numpy.random.Generator`` whose draws follow ``vmap(randomness=...)`` (the module
    docstring says how): what ``np.random.default_rng`` / ``np.random.Generator`` return inside
    a vmapped function, and what ``f`` sees of a Generator passed to it. Outside vmap it draws
    as the Generator it stands for.

    >>> import numpy as np, batchtensor as bt
    >>> f = lambda x, rng: x + rng.normal(size=2)
    >>> out = bt.vmap(f, in_axes=(0, None), randomness="different")(
    ...     np.zeros((3, 2)), np.random.default_rng(0))
    >>> bool((out == np.random.default_rng(0).normal(size=(3, 2))).all())
    True
    """

    _bt_source: Source  # (set by _generator)

    def __repr__(self) -> str:
        gen = self._bt_source.single
        return f"{gen!r} (batchtensor)" if gen is not None else \
            "Generator (batchtensor: one per example)"

    @property
    def bit_generator(self):
        gen = self._bt_source.single
        if gen is None:
            raise BatchingError("this Generator stands for one generator per example (made "
                                "inside a vmapped function from a batched or fresh seed): it "
                                "has no single bit generator")
        return gen.bit_generator

    def __reduce__(self):
        gen = self._bt_source.single
        if gen is None:
            raise BatchingError("a Generator that stands for one generator per example cannot "
                                "be pickled")
        return gen.__reduce__()

    def spawn(self, n_children: int) -> list:
        src = self._bt_source
        children = draw(src, "spawn", (n_children,), {}, "Generator.spawn()")
        levels = vectorised_levels()
        if not levels:
            return children
        return [_generator(Source(shared(c, levels), tuple(levels))) for c in children]


class BatchRandomState(_RandomState):
    """A ``numpy.random.RandomState`` whose draws follow ``vmap(randomness=...)``: what
    ``np.random.RandomState`` returns inside a vmapped function, and what ``f`` sees of one
    passed to it."""

    _bt_source: Source  # (set by _randomstate)

    def __repr__(self) -> str:
        return "RandomState (batchtensor)"

    def __reduce__(self):
        gen = self._bt_source.single
        if gen is None:
            raise BatchingError("a RandomState that stands for one per example cannot be "
                                "pickled")
        return (RAND if gen is GLOBAL else gen).__reduce__()


for _name in GENERATOR_METHODS:
    if _name != "spawn":
        setattr(BatchGenerator, _name, _method(_name, "Generator"))
for _name in RANDOMSTATE_METHODS:
    setattr(BatchRandomState, _name, _method(_name, "RandomState"))


def _generator(source: Source) -> BatchGenerator:
    obj = BatchGenerator(source.proto.bit_generator)
    obj._bt_source = source
    return obj


def _randomstate(source: Source) -> BatchRandomState:
    proto = source.proto
    obj = BatchRandomState(proto._bit_generator if proto is not GLOBAL else RAND._bit_generator)
    obj._bt_source = source
    return obj


def stream_argument(value: Any) -> Any:
    """What a vmapped function sees of an argument that is not mapped: a ``Generator`` or
    ``RandomState`` (also inside lists, tuples and dicts) becomes one whose draws follow
    ``randomness=`` (the loop draws from it example after example); anything else is returned
    as it is.

    >>> import numpy as np
    >>> from batchtensor.numpy_random import stream_argument
    >>> g = stream_argument(np.random.default_rng(0))
    >>> isinstance(g, np.random.Generator), g.normal() == np.random.default_rng(0).normal()
    (True, True)
    """
    t = type(value)
    if t is np.ndarray or t is BatchedTensor or not config.intercept_numpy:
        return value
    if isinstance(value, _Generator):
        if isinstance(value, BatchGenerator):
            return value
        return _generator(Source(value, (), state_key(value)))
    if isinstance(value, _RandomState):
        if isinstance(value, BatchRandomState):
            return value
        return _randomstate(Source(value, (), state_key(value)))
    if t is list or t is tuple:
        items = [stream_argument(v) for v in value]
        return value if all(a is b for a, b in zip(items, value)) else t(items)
    if t is dict:
        entries = {k: stream_argument(v) for k, v in value.items()}
        return value if all(entries[k] is v for k, v in value.items()) else entries
    return value


# ---- generators made inside f ---------------------------------------------------------------

def _fresh(levels: list, make: Callable, call: str) -> Source:
    """One generator per example of each "different" level, from fresh OS entropy, as the
    loop's examples each make one; shared across "same" levels; a draw raises under "error"."""
    error = next((lv for lv in levels if lv.randomness == "error"), None)
    for lv in levels:
        if lv.randomness == "different" and lv.size is None:
            raise BatchingError(f"{call}: vmap level {lv.id} has no batch size yet")
    shape = tuple(lv.size if lv.randomness == "different" else 1 for lv in levels)
    children = _SeedSequence().spawn(math.prod(shape))
    gens = np.empty(shape, dtype=object)
    for idx, child in zip(np.ndindex(*shape), children):
        gens[idx] = make(child)
    proto = gens.flat[0] if gens.size else make(_SeedSequence(0))
    return Source(gens, tuple(levels), error_level=error, what="fresh", proto=proto)


def _per_seed(levels: list, seed, make: Callable) -> Source:
    """One generator per example of the levels ``seed`` is batched at, from its example."""
    found: list = []
    batched_in(seed, found)
    at = [lv for lv in levels if any(lv is l2 for x in found for l2, _ in chain(x))]
    fronts = {id(x): front(x, levels) for x in found}
    shape = tuple(lv.size if lv in at else 1 for lv in levels)
    gens = np.empty(shape, dtype=object)
    for idx in np.ndindex(*shape):
        gens[idx] = make(example(seed, fronts, idx))
    proto = gens.flat[0] if gens.size else make(0)
    return Source(gens, tuple(levels), what="seeded per example", proto=proto)


_made_lock = threading.Lock()
#: bit generators made inside f: innermost level -> {id: (bit generator, fresh)}
_made: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _made_inside(bits, levels: list):
    """``(levels, fresh)`` for a bit generator made inside ``f`` at ``levels``, else None."""
    for i in range(len(levels) - 1, -1, -1):
        entry = _made.get(levels[i], {}).get(id(bits))
        if entry is not None and entry[0] is bits:
            return levels[:i + 1], entry[1]
    return None


def _has_batched(obj) -> bool:
    found: list = []
    batched_in(obj, found)
    return bool(found)


def _default_rng(seed=None):
    levels = vectorised_levels()
    if not levels or not config.intercept_numpy:
        return ORIGINALS["default_rng"](seed)
    original = ORIGINALS["default_rng"]
    if isinstance(seed, BatchGenerator):
        return seed
    if isinstance(seed, _Generator):
        return stream_argument(seed)  # default_rng returns it: the caller's stream
    if isinstance(seed, _BitGenerator):
        return _from_bits(seed, levels, _Generator, "np.random.default_rng()")
    if seed is None:
        return _generator(_fresh(levels, original, "np.random.default_rng()"))
    if _has_batched(seed):
        return _generator(_per_seed(levels, seed, original))
    return _generator(Source(shared(original(seed), levels), tuple(levels)))


def _from_bits(bits, levels: list, cls, call: str):
    """``cls(bits)`` made inside ``f``."""
    made = _made_inside(bits, levels)
    box = _generator if cls is _Generator else _randomstate
    if made is None:  # the caller's bit generator: the loop's examples draw from it in turn
        if cls is _RandomState and any(lv.randomness == "different" and (lv.size or 0) > 1
                                       for lv in levels):
            raise rerun_error(call, "makes a RandomState per example around one bit generator "
                            "of the caller's (each with its own normal-deviate cache)",
                            levels[0])
        return box(Source(cls(bits), (), bits))
    at, fresh = made
    if fresh:
        kind = type(bits)
        return box(_fresh(at, lambda ss: cls(kind(ss)), call))
    return box(Source(shared(cls(bits), at), tuple(at)))


class _Intercepted(type):
    """The metaclass of the stand-ins for numpy.random's classes while a vmap runs:
    ``isinstance`` / ``issubclass`` answer for the original class, and a call constructs
    through batchtensor (a subclass made meanwhile constructs as usual)."""

    def __instancecheck__(cls, obj) -> bool:
        return isinstance(obj, cls.__dict__.get("_bt_original", cls.__mro__[1]))

    def __subclasscheck__(cls, sub) -> bool:
        return issubclass(sub, cls.__dict__.get("_bt_original", cls.__mro__[1]))

    def __call__(cls, *args, **kwargs):
        make = cls.__dict__.get("_bt_construct")
        if make is None:
            return super().__call__(*args, **kwargs)
        return make(*args, **kwargs)


def _stand_in(original: type, construct: Callable) -> type:
    return _Intercepted(original.__name__, (original,), {
        "_bt_original": original, "_bt_construct": construct,
        "__module__": original.__module__, "__qualname__": original.__qualname__,
        "__doc__": original.__doc__})


def _generator_class(bit_generator):
    levels = vectorised_levels()
    if not levels or not config.intercept_numpy or not isinstance(bit_generator, _BitGenerator):
        return _Generator(bit_generator)
    return _from_bits(bit_generator, levels, _Generator, "np.random.Generator()")


def _randomstate_class(seed=None):
    levels = vectorised_levels()
    if not levels or not config.intercept_numpy:
        return _RandomState(seed)
    call = "np.random.RandomState()"
    if isinstance(seed, _BitGenerator):
        return _from_bits(seed, levels, _RandomState, call)
    if seed is None:
        return _randomstate(_fresh(levels, lambda ss: _RandomState(np.random.MT19937(ss)),
                                   call))
    if _has_batched(seed):
        return _randomstate(_per_seed(levels, seed, _RandomState))
    return _randomstate(Source(shared(_RandomState(seed), levels), tuple(levels)))


def _bits_class(name: str) -> Callable:
    original = ORIGINALS[name]

    def construct(seed=None, *args, **kwargs):
        levels = vectorised_levels()
        if not levels or not config.intercept_numpy:
            return original(seed, *args, **kwargs)
        call = f"np.random.{name}()"
        if _has_batched((seed,) + args) or _has_batched(list(kwargs.values())):
            raise rerun_error(call, "is seeded with a batched value (one bit generator per "
                            "example)", levels[0])
        fresh = seed is None and not args and kwargs.get("key") is None
        bits = original(seed, *args, **kwargs)
        with _made_lock:
            _made.setdefault(levels[-1], {})[id(bits)] = (bits, fresh)
        return bits

    construct.__name__ = name
    return construct


def _seedsequence_class(entropy=None, **kwargs):
    levels = vectorised_levels()
    original = ORIGINALS["SeedSequence"]
    if not levels or not config.intercept_numpy:
        return original(entropy, **kwargs)
    call = "np.random.SeedSequence()"
    if _has_batched(entropy):
        raise rerun_error(call, "is given a batched entropy (one seed sequence per example)",
                        levels[0])
    if entropy is None:
        for lv in levels:
            if lv.randomness == "error":
                raise mode_error(call + " (fresh entropy)", lv)
        different = [lv for lv in levels if lv.randomness == "different" and (lv.size or 0) > 1]
        if different:
            raise rerun_error(call, "draws fresh entropy, which every example of the loop draws "
                            "anew", different[0])
    return original(entropy, **kwargs)


# ---- the module-level functions -------------------------------------------------------------

def _global_function(name: str) -> Callable:
    original = ORIGINALS[name]
    call = f"np.random.{name}()"

    def replacement(*args, **kwargs):
        if not config.intercept_numpy or not vectorised_levels():
            return original(*args, **kwargs)
        return draw(_GLOBAL_SOURCE, name, args, kwargs, call)

    replacement.__name__ = replacement.__qualname__ = name
    replacement.__doc__ = original.__doc__
    replacement.__wrapped__ = original  # type: ignore[attr-defined]  # (a function's attribute)
    return replacement


_GLOBAL_SOURCE = Source(GLOBAL, (), RAND, what="global")
#: ``numpy.random.mtrand._rand`` while a vmap runs (what ``check_random_state(None)`` returns in
#: SciPy and scikit-learn): the global state, drawn as numpy.random's functions draw
_GLOBAL_RANDOMSTATE = None

# numpy.random intercepted by class: its ~60 names switch with one assignment per vmap call
# (replacing each in the namespace costs about 0.05 us per name each way)
_intercept = functools.partial(conversions.intercept, np.random, by_class=True)
for _name in _GLOBAL_FUNCTIONS:
    _intercept(_name, _global_function(_name))
_GLOBAL_RANDOMSTATE = _randomstate(_GLOBAL_SOURCE)
conversions.intercept(np.random.mtrand, "_rand", _GLOBAL_RANDOMSTATE)  # read as a global there
_intercept("default_rng", _default_rng)
_intercept("Generator", _stand_in(_Generator, _generator_class))
_intercept("RandomState", _stand_in(_RandomState, _randomstate_class))
_intercept("SeedSequence", _stand_in(_SeedSequence, _seedsequence_class))
for _name in _BIT_GENERATORS:
    _intercept(_name, _stand_in(ORIGINALS[_name], _bits_class(_name)))

