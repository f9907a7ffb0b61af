"""Plain NumPy randomness inside a vmapped function follows ``vmap(randomness=...)``.

NumPy's random functions take no array arguments, so NumPy never dispatches them: without
help, ``np.random.normal(size=3)`` inside ``f`` would draw once and every example would share
the draw. While a vmap level is open, this module replaces (``conversions.intercept``) the
module-level functions of ``numpy.random`` and the constructors ``default_rng``,
``Generator``, ``RandomState``, ``SeedSequence`` and the bit generators, and vmap wraps the
``Generator`` / ``RandomState`` objects passed to ``f`` as arguments. Every draw then does what
the per-example loop does, under the vmap's ``randomness=``:

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

import copy
import inspect
import itertools
import linecache
import math
import os
import threading
import weakref
from typing import Any, Callable

import numpy as np

from . import conversions
from .config import config
from .diagnostics import user_site
from .errors import BatchingError, DataDependentError, RandomOrderError, unbatched_out_error
from .levels import active_levels, note_write, rerun_hooks
from .tensor import BatchedTensor, new_batched

__all__ = ["stream_argument", "ORIGINALS", "BatchGenerator", "BatchRandomState"]

_Generator = np.random.Generator
_RandomState = np.random.RandomState
_BitGenerator = np.random.BitGenerator
_SeedSequence = np.random.SeedSequence
_BIT_GENERATORS = ("PCG64", "PCG64DXSM", "MT19937", "Philox", "SFC64")
_RAND = np.random.mtrand._rand  # the global RandomState behind numpy.random's functions

#: numpy.random's own attributes, taken at import (no level is open then)
ORIGINALS: dict[str, Any] = {name: getattr(np.random, name) for name in np.random.__all__}

#: Generator / RandomState methods that draw, by class
_GENERATOR_METHODS = tuple(n for n in dir(_Generator) if not n.startswith("_")
                           and n != "bit_generator" and callable(getattr(_Generator, n)))
_RANDOMSTATE_METHODS = tuple(n for n in dir(_RandomState) if not n.startswith("_")
                             and callable(getattr(_RandomState, n)))
#: the module-level functions of numpy.random that use its global RandomState
_GLOBAL_FUNCTIONS = tuple(n for n in np.random.__all__ if n[0].islower()
                          and n not in ("default_rng",))

#: methods with a structure of their own: not drawn as independent elements
_STRUCTURED = {"choice", "dirichlet", "multinomial", "multivariate_hypergeometric",
               "multivariate_normal", "permutation", "permuted", "shuffle", "bytes", "spawn",
               "get_state", "set_state", "seed", "rand", "randn", "tomaxint"}
#: methods whose result is no array: a batched run cannot hold one per example
_NOT_ARRAYS = {"bytes", "get_state", "spawn"}
#: methods that write into an argument (the per-example loop writes into each example)
_IN_PLACE = {"shuffle": "x"}
#: integer dtypes whose draws share 32-bit words within one call (NumPy's buffered bounded
#: integers), so one call of the whole batch's size is not the loop's stream
_BUFFERED = {np.dtype(t) for t in (np.bool_, np.int8, np.uint8, np.int16, np.uint16)}


def _parameters(cls, name: str) -> tuple | None:
    """The method's parameter names after ``self`` (None for ``*args``)."""
    try:
        params = list(inspect.signature(getattr(cls, name)).parameters.values())[1:]
    except (TypeError, ValueError):
        return None
    if any(p.kind is p.VAR_POSITIONAL for p in params):
        return None
    return tuple(p.name for p in params)


_SIGNATURES = {
    "Generator": {n: _parameters(_Generator, n) for n in _GENERATOR_METHODS},
    "RandomState": {n: _parameters(_RandomState, n) for n in _RANDOMSTATE_METHODS},
}
_SIGNATURES["global"] = dict(_SIGNATURES["RandomState"], ranf=("size",), sample=("size",))


class _Global:
    """NumPy's global random state as a source of draws: numpy.random's functions, which are
    the methods of one RandomState (``numpy.random.mtrand._rand``)."""

    def __init__(self) -> None:
        for name in _RANDOMSTATE_METHODS:
            if name != "seed":
                setattr(self, name, getattr(_RAND, name))
        self.ranf = self.sample = _RAND.random_sample

    @staticmethod
    def seed(seed=None):
        """``numpy.random.seed`` on the RandomState itself (NumPy's function reads it from its
        module, where a vmap puts the per-example stand-in)."""
        bits = _RAND._bit_generator
        if isinstance(bits, np.random.MT19937):
            return _RAND.seed(seed)
        bits.state = type(bits)(seed).state
        return None

    def __repr__(self) -> str:
        return "numpy.random (the global RandomState)"


_GLOBAL = _Global()


def _kind(gen) -> str:
    if gen is _GLOBAL:
        return "global"
    return "Generator" if isinstance(gen, _Generator) else "RandomState"


def _get_state(gen):
    if isinstance(gen, _Generator):
        return gen.bit_generator.state
    return (_RAND if gen is _GLOBAL else gen).get_state(legacy=False)


def _set_state(gen, state) -> None:
    if isinstance(gen, _Generator):
        gen.bit_generator.state = state
    else:
        (_RAND if gen is _GLOBAL else gen).set_state(state)


def _clone(gen):
    """An independent generator in the same state as ``gen``."""
    if isinstance(gen, _Generator):
        bits = gen.bit_generator
        twin = type(bits)(0)
        twin.state = bits.state
        return _Generator(twin)
    return copy.deepcopy(gen)


def _state_key(gen):
    """What holds ``gen``'s state (two objects on one state are one stream)."""
    if gen is _GLOBAL:
        return _RAND
    return gen.bit_generator if isinstance(gen, _Generator) else gen


class _Source:
    """The random state the examples of the open vmap levels draw from through one object.

    ``levels``: the vmap levels open where it was made inside ``f`` (each example of the loop
    made its own there), ``()`` for a stream of the caller's. ``gens``: an object array with
    one axis per level of ``levels``, of that level's size where the examples' generators
    differ and of size 1 where they are one and the same. ``key``: what holds a stream's
    state (the examples of every level opened after ``levels`` draw from it in turn).
    ``error_level``: an unseeded generator made under ``randomness='error'`` (a draw raises).
    """

    __slots__ = ("gens", "levels", "key", "error_level", "what", "proto")

    def __init__(self, gens, levels: tuple = (), key=None, error_level=None, what: str = "",
                 proto=None):
        if not isinstance(gens, np.ndarray):
            one = np.empty((1,) * len(levels), dtype=object)
            one[(0,) * len(levels)] = gens
            gens = one
        self.gens = gens
        self.levels = tuple(levels)
        self.key = key if key is not None else self
        self.error_level = error_level
        self.what = what
        # one of the generators (a stand-in of their kind where there are none: no examples)
        self.proto = proto if proto is not None else gens.flat[0]

    @property
    def single(self):
        """The one generator every example shares, or None."""
        return self.gens.flat[0] if self.gens.size == 1 else None


# ---- which levels a draw runs at ------------------------------------------------------------

def _vectorised_levels() -> list:
    """This thread's open levels that run examples together (not a per-example rerun's)."""
    return [lv for lv in active_levels() if not lv.per_example]


def _chain(x) -> list:
    """``[(level, bdim)]`` of a batched value, innermost level first."""
    out = []
    while type(x) is BatchedTensor:
        out.append((x._level, x._bdim))
        x = x._value
    return out


def _batched_in(obj, found: list) -> None:
    t = type(obj)
    if t is BatchedTensor:
        found.append(obj)
    elif t is list or t is tuple:
        for item in obj:
            _batched_in(item, found)


def _front(x, levels: list):
    """``x``'s physical array with one leading axis per level of ``levels`` (its batch axis
    there, or size 1), then its logical axes. A per-example rerun's level (of one example),
    which ``levels`` leaves out, gives its one example."""
    chain = _chain(x)
    phys = x
    while type(phys) is BatchedTensor:
        phys = phys._value
    axes = list(range(np.ndim(phys)))
    where = {}
    for level, bdim in reversed(chain):
        where[level] = axes.pop(bdim)
    present = [lv for lv in levels if lv in where]
    extra = [where[lv] for lv in where if lv not in levels]
    out = np.transpose(phys, extra + [where[lv] for lv in present] + axes)
    if extra:
        out = out[(0,) * len(extra)]
    shape = tuple(out.shape[present.index(lv)] if lv in where else 1 for lv in levels)
    return np.reshape(out, shape + np.shape(out)[len(present):])


def _wrap(phys, levels: list, array0d: bool = False):
    """A physical value with one leading axis per level of ``levels``, batched at them."""
    for lv in levels:
        phys = new_batched(phys, 0, lv)
    if array0d and type(phys) is BatchedTensor and phys._value.ndim == 1:
        phys._array0d = True
    return phys


# ---- what each level remembers: draws per stream, states for a rerun ------------------------

class _Record:
    __slots__ = ("draws", "states")

    def __init__(self) -> None:
        self.draws: dict = {}  # id(stream key) -> number of draws during the level
        self.states: dict = {}  # id(stream key) -> (source, gens, [states]) before the first


_records: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_records_lock = threading.Lock()


def _record(level) -> _Record:
    rec = _records.get(level)
    if rec is None:
        with _records_lock:
            rec = _records.setdefault(level, _Record())
    return rec


def _restore(level) -> None:
    """Before ``level``'s examples run again (a rerun): every stream the first pass drew from
    goes back to its state before that pass's first draw, so the rerun draws those numbers."""
    rec = _records.get(level)
    if rec is None:
        return
    for source, gens, states in rec.states.values():
        source.gens = gens
        for gen, state in zip(gens.flat, states):
            _set_state(gen, state)
    rec.states.clear()
    rec.draws.clear()


rerun_hooks.append(_restore)


def _before_draw(source: _Source, levels: list, stream_levels: list, call: str) -> None:
    """Count this draw at the stream's levels and keep the states a rerun will need.

    Two draws from one stream while a level of several examples runs them together: the loop
    draws example 0's numbers of both before example 1's, which one pass cannot do: rerun."""
    key = id(source.key)
    again = [lv for lv in stream_levels if lv.size > 1 and _record(lv).draws.get(key)]
    if again:
        lv = again[0]
        raise RandomOrderError(
            f"{call} draws from a random state that this vmapped function already drew from "
            f"(vmap level {lv.id}, randomness='different'){_here()}: the per-example loop "
            f"draws all of example 0's numbers before example 1's, so only a run once per "
            f"example draws the loop's numbers. vmap reruns the function per example unless "
            f"fallback='error'. To stay vectorised: draw everything in one call and split it, "
            f"or use bt.random.default_rng(seed) (reproducible, vectorised, not NumPy's "
            f"stream).", lv,
            "the function draws twice from one NumPy random state under randomness='different'")
    for lv in stream_levels:
        if lv.size > 1:
            draws = _record(lv).draws
            draws[key] = draws.get(key, 0) + 1
    for lv in levels:
        if lv.watches_writes and lv not in source.levels:
            states = _record(lv).states
            if key not in states:
                states[key] = (source, source.gens,
                               [_get_state(g) for g in source.gens.flat])


# ---- messages -------------------------------------------------------------------------------

def _here() -> str:
    """`` at `line` (file:n)`` for the user's line that called into numpy.random."""
    f, _ = user_site(2)
    if f is None:
        return ""
    line = linecache.getline(f.f_code.co_filename, f.f_lineno).strip()
    loc = f"{os.path.basename(f.f_code.co_filename)}:{f.f_lineno}"
    return f" at `{line}` ({loc})" if line else f" at {loc}"


def _mode_error(call: str, level) -> BatchingError:
    return BatchingError(
        f"{call} was called inside vmap with randomness='error' (the default; vmap level "
        f"{level.id}){_here()}. In the per-example loop each example draws its own numbers. "
        f"Pass randomness='different' to bt.vmap for the loop's draws (each example its own), "
        f"or randomness='same' for one draw shared by the examples of that level.")


def _no_batch(call: str, why: str, level) -> RandomOrderError:
    return RandomOrderError(
        f"{call}{_here()}: {why}, which one vectorised pass cannot give (vmap level "
        f"{level.id}). vmap reruns the function once per example unless fallback='error'.",
        level, f"{call} {why}")


# ---- one draw -------------------------------------------------------------------------------

def _bind(names: tuple | None, args: tuple, kwargs: dict) -> dict | None:
    if names is None or len(args) > len(names):
        return None
    bound = dict(zip(names, args))
    for k in kwargs:
        if k in bound or k not in names:
            return None  # NumPy's own call raises the TypeError
    bound.update(kwargs)
    return bound


def draw(source: _Source, name: str, args: tuple, kwargs: dict, call: str):
    """``getattr(generator, name)(*args, **kwargs)`` for every example, as the loop draws."""
    levels = _vectorised_levels()
    single = source.single
    if not levels:
        if single is None:
            _outside(source, call)
        return getattr(single, name)(*args, **kwargs)
    missing = [lv for lv in source.levels if lv not in levels]
    if missing:
        if single is None or any(lv.alive for lv in missing):
            _outside(source, call)
        source.levels, source.gens = (), source.gens.reshape(())  # a shared one, as it is
        missing = []
    inner = [lv for lv in levels if lv not in source.levels]
    for lv in inner:
        if lv.randomness == "error":
            raise _mode_error(call, lv)
    if source.error_level is not None:
        raise _mode_error(f"{call} of a generator made inside the function without a seed",
                          source.error_level)
    different = [lv for lv in inner if lv.randomness == "different"]
    for lv in different:
        if lv.size is None:
            raise BatchingError(f"{call}: vmap level {lv.id} has no batch size yet (wrap a "
                                f"value first, or give vmap_level a size)")
    found: list = []
    _batched_in(args, found)
    _batched_in(list(kwargs.values()), found)
    at = {lv for x in found for lv, _ in _chain(x) if lv in levels}
    own = [lv for lv, n in zip(source.levels, source.gens.shape) if n != 1]
    batch = [lv for lv in levels if lv in different or lv in at or lv in own]
    if name in _NOT_ARRAYS:
        if batch and math.prod(lv.size for lv in batch) != 1:
            raise _no_batch(call, "returns something other than an array, which differs per "
                            "example", batch[0])
        _before_draw(source, levels, different, call)
        return getattr(source.gens.flat[0], name)(*args, **kwargs)
    _before_draw(source, levels, different, call)
    kind = _kind(source.proto)
    if single is not None and not (at - set(different)):
        res = _one_call(single, kind, name, args, kwargs, different, found)
        if res is not _NO:
            return res
    return _per_example(source, kind, name, args, kwargs, batch, different, found, call)


_NO = object()


def _outside(source: _Source, call: str):
    raise BatchingError(
        f"{call}: this generator was made inside a vmapped function, one per example, and is "
        f"used outside that vmap (or on another thread): return the numbers from the "
        f"function instead of the generator")


def _one_call(gen, kind: str, name: str, args: tuple, kwargs: dict, different: list,
              found: list):
    """The whole batch's draw in one NumPy call where that is the loop's stream (one stream,
    the parameters batched only at levels whose examples draw in turn), else ``_NO``."""
    if not different:
        return getattr(gen, name)(*args, **kwargs)  # one draw for every example
    grid = tuple(lv.size for lv in different)
    method = getattr(gen, name)
    if name in ("rand", "randn"):
        if found or kwargs:
            return _NO
        dims = tuple(int(d) for d in args)
        sample = "random_sample" if name == "rand" else "standard_normal"
        return _wrap(getattr(gen, sample)(size=grid + dims), different)
    bound = _bind(_SIGNATURES[kind].get(name), args, kwargs)
    if bound is None or bound.get("out") is not None:
        return _NO
    size = bound.get("size")
    per = None if size is None else ((int(size),) if np.ndim(size) == 0
                                    else tuple(int(s) for s in size))
    batched = {k for k, v in bound.items() if type(v) is BatchedTensor}
    if sum(type(v) is BatchedTensor for v in bound.values()) != len(found):
        return _NO  # batched values inside lists: one call per example
    if name not in _STRUCTURED:
        if name in ("integers", "randint") and np.dtype(bound.get("dtype", int)) in _BUFFERED:
            return _NO
        params = _SIGNATURES[kind][name]
        params = params[:params.index("size")]
        if any(k not in params for k in batched):
            return _NO
        if per is None:
            try:
                per = np.broadcast_shapes(*(_logical_shape(bound[k]) for k in params
                                            if k in bound))
            except ValueError:
                return _NO  # NumPy's own error, from the per-example calls
        for k in batched:
            x = _front(bound[k], different)
            pad = len(per) - (x.ndim - len(grid))
            if pad < 0:
                return _NO  # NumPy's own error, from the per-example calls
            bound[k] = np.reshape(x, x.shape[:len(grid)] + (1,) * pad + x.shape[len(grid):])
    elif name in ("choice", "dirichlet", "multinomial", "multivariate_normal") and not batched:
        if name == "choice" and (not bound.get("replace", True) or bound.get("axis", 0) != 0):
            return _NO
        if per is None:
            per = np.shape(bound["n"]) if name == "multinomial" else ()
    else:
        return _NO
    bound["size"] = grid + per
    return _wrap(method(**bound), different, array0d=size is not None and not per)


def _logical_shape(v) -> tuple:
    if type(v) is BatchedTensor:
        return v.shape
    return np.shape(v)


def _per_example(source: _Source, kind: str, name: str, args: tuple, kwargs: dict,
                 batch: list, different: list, found: list, call: str):
    """One NumPy call per example, in the loop's order, stacked. Examples of a "same" level
    that differ only by their parameters draw from the same state (one draw, shared)."""
    grid = tuple(lv.size for lv in batch)
    own = [lv in source.levels for lv in batch]
    at_own = {lv for x in found for lv, _ in _chain(x)} & set(source.levels)
    gens = source.gens
    if at_own and any(gens.shape[source.levels.index(lv)] == 1 for lv in at_own):
        gens = _diverge(source, at_own)  # each example's own generator from here on
    gens_b = np.reshape(gens, tuple(gens.shape[source.levels.index(lv)] if o else 1
                                    for lv, o in zip(batch, own)))
    shared_axes = [i for i, lv in enumerate(batch) if lv not in different and not own[i]]
    fronts = {id(x): _front(x, batch) for x in found}
    target = _IN_PLACE.get(name)
    if target is not None or "out" in kwargs:
        _check_target(name, args, kwargs, target, batch, call)
    if gens_b.size == 1 and not found and not shared_axes:  # the same call, n times in turn
        method = getattr(gens_b.flat[0], name)
        results = [method(*args, **kwargs) for _ in range(math.prod(grid))]
    else:
        results = _calls(gens_b, name, args, kwargs, grid, shared_axes, fronts)
    if target is not None:
        return None
    if "out" in kwargs and kwargs["out"] is not None:
        return kwargs["out"]
    if not results:
        return _empty(source.proto, name, args, kwargs, grid, batch, found, call)
    if all(r is None for r in results):
        return None
    try:
        phys = np.stack(results)
    except ValueError as e:
        raise DataDependentError(f"{call}: the examples' draws differ in shape, so they cannot "
                                 f"be stacked (the loop's np.stack fails too)", batch[0]) from e
    phys = np.reshape(phys, grid + phys.shape[1:])
    return _wrap(phys, batch, array0d=type(results[0]) is np.ndarray)


def _calls(gens, name: str, args: tuple, kwargs: dict, grid: tuple, shared_axes: list,
           fronts: dict) -> list:
    """``getattr(gen, name)(*example args)`` for every example, in the loop's order; the
    examples along ``shared_axes`` start from one state."""
    gen_axes = [k for k, n in enumerate(gens.shape) if n != 1]
    methods = np.empty(gens.shape, dtype=object)
    for i, gen in enumerate(gens.flat):
        methods.flat[i] = getattr(gen, name)
    methods = methods.reshape(tuple(gens.shape[k] for k in gen_axes))
    results, starts = [], {}
    for idx in itertools.product(*map(range, grid)):
        gi = tuple(idx[k] for k in gen_axes)
        method = methods[gi]
        if shared_axes:
            gen = gens[tuple(idx[k] if k in gen_axes else 0 for k in range(len(idx)))]
            first = tuple(0 if k in shared_axes else i for k, i in enumerate(idx))
            if first == idx:
                starts[first] = _get_state(gen)
            else:
                _set_state(gen, starts[first])
        if fronts:
            results.append(method(*_example(args, fronts, idx), **_example(kwargs, fronts, idx)))
        else:
            results.append(method(*args, **kwargs))
    return results


def _example(obj, fronts: dict, idx: tuple):
    """``obj`` with each batched value replaced by its example ``idx`` (a view)."""
    t = type(obj)
    if t is BatchedTensor:
        ph = fronts[id(obj)]
        return ph[tuple(i if ph.shape[k] > 1 else 0 for k, i in enumerate(idx))]
    if t is list or t is tuple:
        return t(_example(v, fronts, idx) for v in obj)
    if t is dict:
        return {k: _example(v, fronts, idx) for k, v in obj.items()}
    return obj


def _diverge(source: _Source, levels: set) -> np.ndarray:
    """Give every example of ``levels`` its own copy of the generator it shares (the examples'
    draws differ from here on); returns the new array of generators."""
    old = source.gens
    shape = tuple(lv.size if lv in levels else n for lv, n in zip(source.levels, old.shape))
    new = np.empty(shape, dtype=object)
    for idx in np.ndindex(*shape):
        gen = old[tuple(i if n > 1 else 0 for i, n in zip(idx, old.shape))]
        new[idx] = _clone(gen)
    source.gens = new
    return new


def _check_target(name: str, args: tuple, kwargs: dict, target, batch: list,
                  call: str) -> None:
    """An in-place draw writes into each example: its target must be batched at every level
    the draw runs at (NumPy's errors for the rest come from the calls)."""
    if target is not None:
        x = args[0] if args else kwargs.get(target)
    else:
        x = kwargs.get("out")
        if x is None:
            return
    mine = {lv for lv, _ in _chain(x)}
    if any(lv not in mine for lv in batch):
        if target is None:
            raise unbatched_out_error(call)
        raise _no_batch(call, f"shuffles {target} in place, and {target} is shared by examples "
                        f"that draw different numbers", next(lv for lv in batch
                                                             if lv not in mine))
    phys = x
    while type(phys) is BatchedTensor:
        phys = phys._value
    for lv, _ in _chain(x):
        note_write(lv, phys)


def _empty(gen, name: str, args: tuple, kwargs: dict, grid: tuple, batch: list, found: list,
           call: str):
    """The draw of no examples: its shape and dtype from a draw of nothing (the batch's draw
    in one call), or from one example's draw, on a copy of the state."""
    if gen is _GLOBAL:
        gen, name = copy.deepcopy(_RAND), _ALIASES.get(name, name)
    else:
        gen = _clone(gen)
    res = _one_call(gen, _kind(gen), name, args, kwargs, batch, found)
    if res is not _NO:
        return res
    if found:
        raise BatchingError(f"{call} runs once per example here and learns its result's shape "
                            f"from the examples: with batch size 0 there are none")
    one = np.asarray(getattr(gen, name)(*args, **kwargs))
    return _wrap(np.empty(grid + one.shape, dtype=one.dtype), batch)


_ALIASES = {"ranf": "random_sample", "sample": "random_sample"}


# ---- generators that draw per example -------------------------------------------------------

def _method(name: str, cls_name: str) -> Callable:
    def method(self, *args, **kwargs):
        return draw(self._bt_source, name, args, kwargs, f"{cls_name}.{name}()")

    method.__name__ = name
    method.__qualname__ = f"Batch{cls_name}.{name}"
    method.__doc__ = getattr(getattr(np.random, cls_name), name).__doc__
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

    def __repr__(self) -> str:
        gen = self._bt_source.single
        return f"{gen!r} (batchtensor: per example)" if gen is not None else \
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
        levels = _vectorised_levels()
        if not levels:
            return children
        return [_generator(_Source(_shared(c, levels), tuple(levels))) for c in children]


class BatchRandomState(_RandomState):
    """A ``numpy.random.RandomState`` whose draws follow ``vmap(randomness=...)``: what
    ``np.random.RandomState`` returns inside a vmapped function, and what ``f`` sees of one
    passed to it."""

    def __repr__(self) -> str:
        return "RandomState (batchtensor)"

    def __reduce__(self):
        gen = self._bt_source.single
        if gen is None:
            raise BatchingError("a RandomState that stands for one per example cannot be "
                                "pickled")
        return (_RAND if gen is _GLOBAL else gen).__reduce__()


for _name in _GENERATOR_METHODS:
    if _name != "spawn":
        setattr(BatchGenerator, _name, _method(_name, "Generator"))
for _name in _RANDOMSTATE_METHODS:
    setattr(BatchRandomState, _name, _method(_name, "RandomState"))


def _generator(source: _Source) -> BatchGenerator:
    obj = BatchGenerator(source.proto.bit_generator)
    obj._bt_source = source
    return obj


def _randomstate(source: _Source) -> BatchRandomState:
    proto = source.proto
    obj = BatchRandomState(proto._bit_generator if proto is not _GLOBAL else _RAND._bit_generator)
    obj._bt_source = source
    return obj


def stream_argument(value: Any) -> Any:
    """What a vmapped function sees of an argument that is not mapped: a ``Generator`` or
    ``RandomState`` (also inside lists, tuples and dicts) becomes one whose draws follow
    ``randomness=`` (the loop draws from it example after example); anything else is returned
    as it is."""
    t = type(value)
    if t is np.ndarray or t is BatchedTensor or not config.intercept_numpy:
        return value
    if isinstance(value, _Generator):
        if isinstance(value, BatchGenerator):
            return value
        return _generator(_Source(value, (), _state_key(value)))
    if isinstance(value, _RandomState):
        if isinstance(value, BatchRandomState):
            return value
        return _randomstate(_Source(value, (), _state_key(value)))
    if t is list or t is tuple:
        items = [stream_argument(v) for v in value]
        return value if all(a is b for a, b in zip(items, value)) else t(items)
    if t is dict:
        items = {k: stream_argument(v) for k, v in value.items()}
        return value if all(items[k] is v for k, v in value.items()) else items
    return value


# ---- generators made inside f ---------------------------------------------------------------

def _shared(gen, levels: list) -> np.ndarray:
    out = np.empty((1,) * len(levels), dtype=object)
    out[(0,) * len(levels)] = gen
    return out


def _fresh(levels: list, make: Callable, call: str) -> _Source:
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
    return _Source(gens, tuple(levels), error_level=error, what="fresh", proto=proto)


def _per_seed(levels: list, seed, make: Callable) -> _Source:
    """One generator per example of the levels ``seed`` is batched at, from its example."""
    found: list = []
    _batched_in(seed, found)
    at = [lv for lv in levels if any(lv is l2 for x in found for l2, _ in _chain(x))]
    fronts = {id(x): _front(x, levels) for x in found}
    shape = tuple(lv.size if lv in at else 1 for lv in levels)
    gens = np.empty(shape, dtype=object)
    for idx in np.ndindex(*shape):
        gens[idx] = make(_example(seed, fronts, idx))
    proto = gens.flat[0] if gens.size else make(0)
    return _Source(gens, tuple(levels), what="seeded per example", proto=proto)


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
    _batched_in(obj, found)
    return bool(found)


def _default_rng(seed=None):
    levels = _vectorised_levels()
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
    return _generator(_Source(_shared(original(seed), levels), tuple(levels)))


def _from_bits(bits, levels: list, cls, call: str):
    """``cls(bits)`` made inside ``f``."""
    made = _made_inside(bits, levels)
    box = _generator if cls is _Generator else _randomstate
    if made is None:  # the caller's bit generator: the loop's examples draw from it in turn
        if cls is _RandomState and any(lv.randomness == "different" and (lv.size or 0) > 1
                                       for lv in levels):
            raise _no_batch(call, "makes a RandomState per example around one bit generator "
                            "of the caller's (each with its own normal-deviate cache)",
                            levels[0])
        return box(_Source(cls(bits), (), bits))
    at, fresh = made
    if fresh:
        kind = type(bits)
        return box(_fresh(at, lambda ss: cls(kind(ss)), call))
    return box(_Source(_shared(cls(bits), at), tuple(at)))


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
    levels = _vectorised_levels()
    if not levels or not config.intercept_numpy or not isinstance(bit_generator, _BitGenerator):
        return _Generator(bit_generator)
    return _from_bits(bit_generator, levels, _Generator, "np.random.Generator()")


def _randomstate_class(seed=None):
    levels = _vectorised_levels()
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
    return _randomstate(_Source(_shared(_RandomState(seed), levels), tuple(levels)))


def _bits_class(name: str) -> Callable:
    original = ORIGINALS[name]

    def construct(seed=None, *args, **kwargs):
        levels = _vectorised_levels()
        if not levels or not config.intercept_numpy:
            return original(seed, *args, **kwargs)
        call = f"np.random.{name}()"
        if _has_batched((seed,) + args) or _has_batched(list(kwargs.values())):
            raise _no_batch(call, "is seeded with a batched value (one bit generator per "
                            "example)", levels[0])
        fresh = seed is None and not args and kwargs.get("key") is None
        bits = original(seed, *args, **kwargs)
        with _made_lock:
            _made.setdefault(levels[-1], {})[id(bits)] = (bits, fresh)
        return bits

    construct.__name__ = name
    return construct


def _seedsequence_class(entropy=None, **kwargs):
    levels = _vectorised_levels()
    original = ORIGINALS["SeedSequence"]
    if not levels or not config.intercept_numpy:
        return original(entropy, **kwargs)
    call = "np.random.SeedSequence()"
    if _has_batched(entropy):
        raise _no_batch(call, "is given a batched entropy (one seed sequence per example)",
                        levels[0])
    if entropy is None:
        for lv in levels:
            if lv.randomness == "error":
                raise _mode_error(call + " (fresh entropy)", lv)
        different = [lv for lv in levels if lv.randomness == "different" and (lv.size or 0) > 1]
        if different:
            raise _no_batch(call, "draws fresh entropy, which every example of the loop draws "
                            "anew", different[0])
    return original(entropy, **kwargs)


# ---- the module-level functions -------------------------------------------------------------

def _global_function(name: str) -> Callable:
    original = ORIGINALS[name]
    call = f"np.random.{name}()"

    def replacement(*args, **kwargs):
        if not config.intercept_numpy or not _vectorised_levels():
            return original(*args, **kwargs)
        return draw(_GLOBAL_SOURCE, name, args, kwargs, call)

    replacement.__name__ = replacement.__qualname__ = name
    replacement.__doc__ = original.__doc__
    replacement.__wrapped__ = original
    return replacement


_GLOBAL_SOURCE = _Source(_GLOBAL, (), _RAND, what="global")
#: ``numpy.random.mtrand._rand`` while a vmap runs (what ``check_random_state(None)`` returns in
#: SciPy and scikit-learn): the global state, drawn as numpy.random's functions draw
_GLOBAL_RANDOMSTATE = None

for _name in _GLOBAL_FUNCTIONS:
    conversions.intercept(np.random, _name, _global_function(_name))
_GLOBAL_RANDOMSTATE = _randomstate(_GLOBAL_SOURCE)
conversions.intercept(np.random.mtrand, "_rand", _GLOBAL_RANDOMSTATE)
conversions.intercept(np.random, "default_rng", _default_rng)
conversions.intercept(np.random, "Generator", _stand_in(_Generator, _generator_class))
conversions.intercept(np.random, "RandomState", _stand_in(_RandomState, _randomstate_class))
conversions.intercept(np.random, "SeedSequence", _stand_in(_SeedSequence, _seedsequence_class))
for _name in _BIT_GENERATORS:
    conversions.intercept(np.random, _name, _stand_in(ORIGINALS[_name], _bits_class(_name)))
