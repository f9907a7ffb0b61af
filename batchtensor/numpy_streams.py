"""The random states the examples of the open vmap levels draw from, and one draw from them
as the per-example loop draws (``numpy_random`` says which objects are such states).

A ``Source`` is one random state as the examples see it: a *stream* of the caller's (NumPy's
global state, a generator passed in), which the loop's examples draw from one after the other,
or generators made inside the function, one per example (the same one where the examples'
generators are equal). ``draw(source, method, args, kwargs, call)`` is the method called for
every example: one NumPy call of the whole batch's size where NumPy's stream of one call is the
loop's stream of calls in turn (``tests/test_random_numpy.py`` checks each distribution), else
one NumPy call per example in the loop's order; a second draw from one stream while several
examples run together raises ``RandomOrderError`` (the whole-function rerun), and every level
that may rerun keeps the states its pass started from (``levels.rerun_hooks``).
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
from typing import cast

import numpy as np

from .diagnostics import user_site
from .errors import BatchingError, DataDependentError, RandomOrderError, SharedWriteError
from .levels import active_levels, note_write, rerun_hooks
from .tensor import BatchedTensor, new_batched

__all__ = ["Source", "draw", "GLOBAL", "RAND", "GENERATOR_METHODS", "RANDOMSTATE_METHODS",
           "vectorised_levels", "batched_in", "chain", "front", "example", "shared",
           "mode_error", "rerun_error", "state_key"]

_Generator = np.random.Generator
_RandomState = np.random.RandomState
RAND = np.random.mtrand._rand  # the global RandomState behind numpy.random's functions

#: Generator / RandomState methods that draw, by class
GENERATOR_METHODS = tuple(n for n in dir(_Generator) if not n.startswith("_")
                           and n != "bit_generator" and callable(getattr(_Generator, n)))
RANDOMSTATE_METHODS = tuple(n for n in dir(_RandomState) if not n.startswith("_")
                             and callable(getattr(_RandomState, n)))

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


_SIGNATURES: dict[str, dict[str, tuple[str, ...] | None]] = {
    "Generator": {n: _parameters(_Generator, n) for n in GENERATOR_METHODS},
    "RandomState": {n: _parameters(_RandomState, n) for n in RANDOMSTATE_METHODS},
}
_SIGNATURES["global"] = dict(_SIGNATURES["RandomState"], ranf=("size",), sample=("size",))


class _Global:
    """NumPy's global random state as a source of draws: numpy.random's functions, which are
    the methods of one RandomState (``numpy.random.mtrand._rand``)."""

    def __init__(self) -> None:
        for name in RANDOMSTATE_METHODS:
            if name != "seed":
                setattr(self, name, getattr(RAND, name))
        self.ranf = self.sample = RAND.random_sample

    @staticmethod
    def seed(seed=None):
        """``numpy.random.seed`` on the RandomState itself (NumPy's function reads it from its
        module, where a vmap puts the per-example stand-in)."""
        bits = RAND._bit_generator
        if isinstance(bits, np.random.MT19937):
            return RAND.seed(seed)
        bits.state = type(bits)(seed).state
        return None

    def __repr__(self) -> str:
        return "numpy.random (the global RandomState)"


GLOBAL = _Global()


class _Slot:
    """One example's own ``Generator``, kept as the state of its bit generator and drawn from
    through a carrier Generator that examples share (a state swap costs about a microsecond;
    a Generator of its own, seeding included, twenty)."""

    __slots__ = ("carrier", "state")

    def __init__(self, carrier, state) -> None:
        self.carrier, self.state = carrier, state

    def __getattr__(self, name: str):
        method = getattr(self.carrier, name)

        def swapped(*args, **kwargs):
            bits = self.carrier.bit_generator
            bits.state = self.state
            try:
                return method(*args, **kwargs)
            finally:
                self.state = bits.state

        return swapped

    @property
    def bit_generator(self):
        bits = self.carrier.bit_generator
        bits.state = self.state
        return bits


def _kind(gen) -> str:
    if gen is GLOBAL:
        return "global"
    return "Generator" if isinstance(gen, (_Generator, _Slot)) else "RandomState"


def _get_state(gen):
    if type(gen) is _Slot:
        return gen.state
    if isinstance(gen, _Generator):
        return gen.bit_generator.state
    return (RAND if gen is GLOBAL else gen).get_state(legacy=False)


def _set_state(gen, state) -> None:
    if type(gen) is _Slot:
        gen.state = state
    elif isinstance(gen, _Generator):
        gen.bit_generator.state = state
    else:
        (RAND if gen is GLOBAL else gen).set_state(state)


def _clone(gen):
    """An independent generator in the same state as ``gen``."""
    if type(gen) is _Slot:
        return _Slot(gen.carrier, gen.state)
    if isinstance(gen, _Generator):
        bits = gen.bit_generator
        twin = type(bits)(0)
        twin.state = bits.state
        return _Generator(twin)
    return copy.deepcopy(gen)


def state_key(gen):
    """What holds ``gen``'s state (two objects on one state are one stream)."""
    if gen is GLOBAL:
        return RAND
    return gen.bit_generator if isinstance(gen, _Generator) else gen


class Source:
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

def vectorised_levels() -> list:
    """This thread's open levels that run examples together (not a per-example rerun's)."""
    return [lv for lv in active_levels() if not lv.per_example]


def chain(x) -> list:
    """``[(level, bdim)]`` of a batched value, innermost level first."""
    out = []
    while type(x) is BatchedTensor:
        out.append((x._level, x._bdim))
        x = x._value
    return out


def batched_in(obj, found: list) -> None:
    """Append the BatchedTensors of ``obj`` (a value, or lists / tuples of values) to ``found``.

    >>> import numpy as np, batchtensor as bt
    >>> from batchtensor.numpy_streams import batched_in
    >>> found = []
    >>> with bt.vmap_level():
    ...     batched_in((1.0, [bt.BatchedTensor(np.zeros((2, 3)))]), found)
    >>> len(found)
    1
    """
    t = type(obj)
    if t is BatchedTensor:
        found.append(obj)
    elif t is list or t is tuple:
        for item in obj:
            batched_in(item, found)


def front(x, levels: list):
    """``x``'s physical array with one leading axis per level of ``levels`` (its batch axis
    there, or size 1), then its logical axes. A per-example rerun's level (of one example),
    which ``levels`` leaves out, gives its one example.

    >>> import numpy as np, batchtensor as bt
    >>> from batchtensor.numpy_streams import front
    >>> with bt.vmap_level() as outer, bt.vmap_level() as inner:
    ...     x = bt.BatchedTensor(bt.BatchedTensor(np.zeros((4, 2, 3)), bdim=2, level=outer),
    ...                          bdim=0, level=inner)
    ...     y = bt.BatchedTensor(np.zeros((4, 2)), bdim=0, level=inner)
    ...     front(x, [outer, inner]).shape, front(y, [outer, inner]).shape
    ((3, 4, 2), (1, 4, 2))
    """
    links = chain(x)
    phys = x
    while type(phys) is BatchedTensor:
        phys = phys._value
    axes = list(range(np.ndim(phys)))
    where = {}
    for level, bdim in reversed(links):
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


def _before_draw(source: Source, levels: list, stream_levels: list, call: str) -> None:
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


def mode_error(call: str, level) -> BatchingError:
    """The error for a draw at a level of ``randomness='error'``, naming the call and line."""
    return BatchingError(
        f"{call} was called inside vmap with randomness='error' (the default; vmap level "
        f"{level.id}){_here()}. In the per-example loop each example draws its own numbers. "
        f"Pass randomness='different' to bt.vmap for the loop's draws (each example its own), "
        f"or randomness='same' for one draw shared by the examples of that level.")


def rerun_error(call: str, why: str, level) -> RandomOrderError:
    """What only a run once per example can draw: the rerun reason at ``level``."""
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


def draw(source: Source, name: str, args: tuple, kwargs: dict, call: str):
    """``getattr(generator, name)(*args, **kwargs)`` for every example, as the loop draws.

    >>> import numpy as np, batchtensor as bt
    >>> from batchtensor.numpy_streams import GLOBAL, RAND, Source, draw
    >>> np.random.seed(0)
    >>> with bt.vmap_level(3, randomness="different") as level:
    ...     z = level.unwrap(draw(Source(GLOBAL, (), RAND), "normal", (), {"size": 2},
    ...                           "np.random.normal()"))
    >>> np.random.seed(0)
    >>> bool((z == np.random.normal(size=(3, 2))).all())
    True
    """
    levels = vectorised_levels()
    for lv in levels:
        lv.drew_numpy = True
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
            raise mode_error(call, lv)
    if source.error_level is not None:
        raise mode_error(f"{call} of a generator made inside the function without a seed",
                          source.error_level)
    different = [lv for lv in inner if lv.randomness == "different"]
    for lv in different:
        if lv.size is None:
            raise BatchingError(f"{call}: vmap level {lv.id} has no batch size yet (wrap a "
                                f"value first, or give vmap_level a size)")
    found: list = []
    batched_in(args, found)
    batched_in(list(kwargs.values()), found)
    at = {lv for x in found for lv, _ in chain(x) if lv in levels}
    own = [lv for lv, n in zip(source.levels, source.gens.shape) if n != 1]
    batch = [lv for lv in levels if lv in different or lv in at or lv in own]
    if name in _NOT_ARRAYS:
        if batch and math.prod(lv.size for lv in batch) != 1:
            raise rerun_error(call, "returns something other than an array, which differs per "
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


def _outside(source: Source, call: str):
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
        params = cast(tuple, _SIGNATURES[kind][name])  # (not None: bound above)
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
            x = front(bound[k], different)
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


def _per_example(source: Source, kind: str, name: str, args: tuple, kwargs: dict,
                 batch: list, different: list, found: list, call: str):
    """One NumPy call per example, in the loop's order, stacked. Examples of a "same" level
    that differ only by their parameters draw from the same state (one draw, shared)."""
    grid = tuple(lv.size for lv in batch)
    own = [lv in source.levels for lv in batch]
    at_own = {lv for x in found for lv, _ in chain(x)} & set(source.levels)
    gens = source.gens
    if at_own and any(gens.shape[source.levels.index(lv)] == 1 for lv in at_own):
        gens = _diverge(source, at_own)  # each example's own generator from here on
    gens_b = np.reshape(gens, tuple(gens.shape[source.levels.index(lv)] if o else 1
                                    for lv, o in zip(batch, own)))
    shared_axes = [i for i, lv in enumerate(batch) if lv not in different and not own[i]]
    fronts = {id(x): front(x, batch) for x in found}
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
            results.append(method(*example(args, fronts, idx), **example(kwargs, fronts, idx)))
        else:
            results.append(method(*args, **kwargs))
    return results


def example(obj, fronts: dict, idx: tuple):
    """``obj`` with each batched value replaced by its example ``idx`` (a view)."""
    t = type(obj)
    if t is BatchedTensor:
        ph = fronts[id(obj)]
        return ph[tuple(i if ph.shape[k] > 1 else 0 for k, i in enumerate(idx))]
    if t is list or t is tuple:
        return t(example(v, fronts, idx) for v in obj)
    if t is dict:
        return {k: example(v, fronts, idx) for k, v in obj.items()}
    return obj


def _diverge(source: Source, levels: set) -> np.ndarray:
    """Give every example of ``levels`` its own copy of the generator it shares (the examples'
    draws differ from here on); returns the new array of generators."""
    old = source.gens
    shape = tuple(lv.size if lv in levels else n for lv, n in zip(source.levels, old.shape))
    new = np.empty(shape, dtype=object)
    for idx in np.ndindex(*shape):
        gen = old[tuple(i if n > 1 else 0 for i, n in zip(idx, old.shape))]
        if isinstance(gen, _Generator):  # the shared one carries its examples' states now
            gen = _Slot(gen, gen.bit_generator.state)
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
    mine = {lv for lv, _ in chain(x)}
    missing = [lv for lv in batch if lv not in mine]
    phys = x
    while type(phys) is BatchedTensor:
        phys = phys._value
    if missing:  # the loop writes each example's numbers into its own array, or in turn
        what = "shuffles x in place" if target is not None else "writes into out="
        e = SharedWriteError(
            f"{call}{_here()}: {what}, an array that is not batched at vmap level "
            f"{missing[0].id} (one array for examples that draw different numbers). vmap "
            f"reruns the function once per example if the array was made during the call, "
            f"unless fallback='error'; make it per example (np.empty_like(x)) to stay "
            f"vectorised.", missing[0])
        e.targets = (phys,)  # vmap refuses the rerun where it is the caller's shared array
        raise e
    for lv, _ in chain(x):
        note_write(lv, phys)


def _empty(gen, name: str, args: tuple, kwargs: dict, grid: tuple, batch: list, found: list,
           call: str):
    """The draw of no examples: its shape and dtype from a draw of nothing (the batch's draw
    in one call), or from one example's draw, on a copy of the state."""
    if gen is GLOBAL:
        gen, name = copy.deepcopy(RAND), _ALIASES.get(name, name)
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



def shared(gen, levels: list) -> np.ndarray:
    """``gen`` as the one generator of every example of ``levels`` (a ``Source``'s gens).

    >>> import numpy as np
    >>> from batchtensor.numpy_streams import shared
    >>> shared("g", [None, None]).shape
    (1, 1)
    """
    out = np.empty((1,) * len(levels), dtype=object)
    out[(0,) * len(levels)] = gen
    return out

