"""``bt.random``: random numbers that know about vmap.

NumPy's random functions take no array arguments, so NumPy never dispatches them: inside a
vmapped function ``np.random.default_rng(0).normal(size=x.shape)`` draws *one* sample that
every example shares. ``bt.random.default_rng(seed)`` wraps a ``numpy.random.Generator`` and
follows the ``randomness=`` of every enclosing vmap:

- ``"error"`` (the default): a draw raises, naming the call;
- ``"different"``: every example gets its own independent draw;
- ``"same"``: one draw, shared by the examples of that level.

Outside vmap the wrapper draws exactly what the wrapped NumPy Generator draws. Inside, draws
come from a counter-based generator, Philox4x64-10: the numbers of example ``i`` are a
function of (seed, position of the draw in the function, ``i``), so they do not depend on the
batch size, on ``chunk_size``, or on whole-function reruns. On NumPy the random words come
from NumPy's compiled ``Philox`` (one call per draw: example ``i``'s words are a block of
counters of its own); on another backend (CuPy) ``philox4x64`` computes the same words in
NumPy-API calls there. Every ``numpy.random.Generator`` method is batch-aware: most are
transforms of those words over the whole batch (Box-Muller normals, ``-log(1 - u)``
exponentials, ...); the samplers whose rejection loops take a varying number of words per value
(``PER_EXAMPLE``: gamma, poisson, ...) run NumPy's own sampler once per example, keyed by the
example, and warn as the loop fallback does. The numbers are not those NumPy's Generator would
draw for the same seed (its samplers consume words in their own order), but they follow the same
laws.

>>> import numpy as np, batchtensor as bt
>>> rng = bt.random.default_rng(0)
>>> noisy = bt.vmap(lambda x: x + rng.normal(size=x.shape), randomness="different")
>>> noisy(np.zeros((4, 3))).shape
(4, 3)
"""

from __future__ import annotations

import math
import operator
import threading
import warnings
from typing import Any, Callable, Literal, Sequence, cast

import numpy as np
from numpy.typing import DTypeLike

from .boxed.loop import announce_loop
from .dispatch import function_call
from .errors import BatchingError
from .levels import active_levels, current_session
from .numpy_random import ORIGINALS
from .plumbing import innermost, scan_level
from .registry import RECORDERS, Path, record
from .tensor import BatchedTensor, new_batched

_Size = int | Sequence[int] | None  # the shape of one example's draw

__all__ = ["Generator", "default_rng", "philox4x64"]

_MASK = 0xFFFFFFFF
# Philox4x64-10's multipliers and key increments (the constants of NumPy's ``Philox``)
_M0, _M1 = 0xD2E7470EE14C6C93, 0xCA5A826395121157
_W0, _W1 = 0x9E3779B97F4A7C15, 0xBB67AE8584CAA73B
_TAG = 0x62742D72  # "bt-r": separates the vmap streams from the wrapped generator's seed
_BINOMIAL_BLOCK = 32  # trials per pass of binomial's sum of Bernoulli draws
_2_53 = 1.0 / 9007199254740992.0
# NumPy's own classes: while a vmap runs ``np.random``'s constructors are stand-ins that make
# generators follow randomness= (numpy_random), which these per-example draws must bypass
_PHILOX, _GENERATOR = ORIGINALS["Philox"], ORIGINALS["Generator"]


def philox4x64(counter: Any, key: Any, rounds: int = 10) -> Any:
    """Philox4x64 (Salmon et al., SC'11), NumPy's ``Philox``, on uint64 arrays: 4 counter
    words and 2 key words (broadcast together) to 4 random words, in NumPy-API calls (so on
    any backend). ``np.random.Philox(key=k, counter=c)`` gives ``philox4x64(c + 1, k)`` first.
    """
    c0, c1, c2, c3 = (np.asarray(c, dtype=np.uint64) if not hasattr(c, "dtype") else c
                      for c in counter)
    k0, k1 = (np.asarray(k, dtype=np.uint64) if not hasattr(k, "dtype") else k for k in key)
    with np.errstate(over="ignore"):  # (a 0-d array's arithmetic gives NumPy scalars, which warn)
        for r in range(rounds):
            if r:
                k0, k1 = k0 + np.uint64(_W0), k1 + np.uint64(_W1)
            hi0, lo0 = _mulhi64(c0, _M0), c0 * np.uint64(_M0)
            hi1, lo1 = _mulhi64(c2, _M1), c2 * np.uint64(_M1)
            c0, c1, c2, c3 = hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0
    return c0, c1, c2, c3


def _levels_of(x: Any) -> list[Any]:
    out = []
    while type(x) is BatchedTensor:
        out.append(x._level)
        x = x._value
    return out


def _any(cond: Any) -> bool:
    """True if ``cond`` holds for any element of any example (no per-example control flow)."""
    return bool(np.any(innermost(cond)))


def _shape(x: Any) -> tuple[Any, ...]:
    if type(x) is BatchedTensor:
        return x.shape
    s = getattr(x, "shape", None)
    return tuple(s) if s is not None else np.shape(x)


def _size_tuple(size: Any) -> tuple[Any, ...] | None:
    if size is None:
        return None
    if isinstance(size, (int, np.integer)):
        size = (size,)
    dims = tuple(operator.index(d) for d in size)
    if any(d < 0 for d in dims):
        raise ValueError("negative dimensions are not allowed")
    return dims


def _out_shape(method: str, size: Any, *params: Any) -> tuple[Any, ...]:
    """The per-example output shape: ``size``, or the parameters' broadcast shape."""
    shapes = [_shape(p) for p in params]
    try:
        full = np.broadcast_shapes(*shapes)
    except ValueError:
        raise ValueError(f"bt.random Generator.{method}: the parameters' shapes {shapes} do not "
                         f"broadcast together") from None
    if size is None:
        return full
    try:
        ok = np.broadcast_shapes(size, full) == size
    except ValueError:
        ok = False
    if not ok:
        raise ValueError(f"bt.random Generator.{method}: size={size} is not compatible with the "
                         f"parameters' shape {full} (they must broadcast to size)")
    return tuple(size)


def _u53(w: Any) -> Any:
    """Float64s in [0, 1) from 64-bit words (their top 53 bits, as NumPy's ``random``)."""
    # (through int64: converting uint64 to float64 is several times slower on x86)
    return (w >> np.uint64(11)).view(np.int64) * _2_53


def _open01(w: Any) -> Any:
    """Float64s in (0, 1) from 64-bit words (for logarithms of both u and 1 - u)."""
    return ((w >> np.uint64(11)).view(np.int64) + 0.5) * _2_53


_SMALL_RANGE = 2048  # (2**53 - 1) * r < 2**64: the top 53 bits times r is exact in uint64


def _below(raw: Any, r: Any, small: bool) -> Any:
    """Integers in ``[0, r)`` from 64-bit words: the top 53 bits times ``r``, shifted down,
    for ranges below ``_SMALL_RANGE`` (a third of the operations of ``_mulhi64``; bias at
    most ``r / 2**53``), else ``_mulhi64``."""
    if small:
        return ((raw >> np.uint64(11)) * np.uint64(r) if isinstance(r, int)
                else (raw >> np.uint64(11)) * r) >> np.uint64(53)
    return _mulhi64(raw, r)


def _mulhi64(raw: Any, r: Any) -> Any:
    """``floor(raw * r / 2**64)`` for uint64 arrays (Lemire's multiply-shift: a value in
    ``[0, r)``, biased by at most ``r / 2**64``)."""
    m = np.uint64(_MASK)
    s32 = np.uint64(32)
    rl, rh = raw & m, raw >> s32
    if isinstance(r, int):
        r = np.uint64(r)
    gl, gh = r & m, r >> s32
    b, c = rh * gl, rl * gh
    mid = ((rl * gl) >> s32) + (b & m) + (c & m)
    return rh * gh + (b >> s32) + (c >> s32) + (mid >> s32)


def _derive_keys(key: tuple[Any, ...], indices: list[Any]) -> tuple[Any, ...]:
    """One Philox key per index tuple: the base ``key`` run through Philox with the indices
    (arrays that broadcast to the grid, three per pass) as the counter."""
    k0, k1 = np.uint64(key[0]), np.uint64(key[1])
    if not indices:
        return k0, k1
    zero = np.zeros((), dtype=np.uint64, like=indices[0])
    for g in range(0, len(indices), 3):
        group = list(indices[g:g + 3])
        c = group + [zero] * (3 - len(group)) + [zero + np.uint64((g << 8) | len(indices))]
        k0, k1, _, _ = philox4x64(c, (k0, k1))
    return k0, k1


class _Draw:
    """One batch-aware draw: its key, the levels whose examples draw their own numbers, the
    backend.

    Example ``(g_1, ..., g_k)`` (global indices at those levels, outermost first) draws
    under the key of ``(g_1, ..., g_{k-1})`` (``_derive_keys``); its words are Philox's at
    counters ``(g_k * blocks + j + 1, stream, part, 0)`` for ``j < blocks`` (``words``): a
    function of the seed, the draw's place in ``f`` and the example's index alone, not of the
    batch or its chunks. On NumPy one compiled ``np.random.Philox`` call makes them for all
    ``g_k`` of an outer example (NumPy's Philox steps the counter's first word); elsewhere
    ``philox4x64`` computes the same words in NumPy-API calls."""

    __slots__ = ("key", "levels", "grid", "like")

    def __init__(self, key: tuple[Any, ...], levels: list[Any], like: Any) -> None:
        self.key = key
        self.levels = levels
        self.like = like
        self.grid = tuple(lv.size for lv in levels)

    def _arange(self, n: Any, offset: Any = 0) -> Any:
        if self.like is None:
            return np.arange(offset, offset + n, dtype=np.uint64)
        return np.arange(offset, offset + n, dtype=np.uint64, like=self.like)

    def _index(self, d: int, ndim: int) -> Any:
        """Level ``d``'s global example indices, on an axis of their own among ``ndim``."""
        shape = [1] * ndim
        lv = self.levels[d]
        shape[d] = lv.size
        return np.reshape(self._arange(lv.size, lv.offset), shape)

    def example_keys(self) -> Any:
        """Every example's own key (grid + (2,)): for NumPy's samplers, run per example."""
        k = len(self.levels)
        k0, k1 = _derive_keys(self.key, [self._index(d, k) for d in range(k)])
        if not k:
            return np.stack([k0, k1]) if self.like is None else \
                np.asarray([int(k0), int(k1)], dtype=np.uint64)
        return np.stack(np.broadcast_arrays(k0, k1), axis=-1)

    def words(self, shape: tuple[Any, ...], nwords: int, stream: int = 0, part: int = 0) -> Any:
        """uint64 random words of physical shape ``grid + shape + (nwords,)``."""
        m = math.prod(shape) * nwords
        per_example = tuple(shape) + (nwords,)
        if not self.levels:
            k0, k1 = self.key
            return np.reshape(self._block_words(k0, k1, 0, 1, m, stream, part), per_example)
        k = len(self.levels) - 1
        inner = self.levels[-1]
        k0, k1 = _derive_keys(self.key, [self._index(d, k) for d in range(k)])
        if self.like is None:  # one compiled Philox call per outer example
            k0, k1 = np.broadcast_to(k0, self.grid[:-1]), np.broadcast_to(k1, self.grid[:-1])
            flat = np.empty(self.grid + (m,), dtype=np.uint64)
            for o in np.ndindex(*self.grid[:-1]):
                flat[o] = self._block_words(k0[o], k1[o], inner.offset, inner.size, m, stream,
                                            part)
        else:
            k0, k1 = (np.reshape(x, np.shape(x) + (1, 1)) for x in (k0, k1))
            flat = self._block_words(k0, k1, inner.offset, inner.size, m, stream, part)
            flat = np.broadcast_to(flat, self.grid + (m,))
        return np.reshape(flat, self.grid + per_example)

    def _block_words(self, k0: Any, k1: Any, offset: int, n: int, m: int, stream: int,
                     part: int) -> Any:
        """``(n, m)``: ``m`` words of each of the examples ``offset .. offset + n - 1`` of the
        innermost level under the key ``(k0, k1)`` (arrays of shape ``(..., 1, 1)`` off NumPy:
        the result is then ``(..., n, m)``)."""
        blocks = -(-m // 4)
        if self.like is None:
            # (arrays: NumPy casts a list of Python ints through int64)
            bg = _PHILOX(key=np.array([k0, k1], dtype=np.uint64),
                                  counter=np.array([offset * blocks, stream, part, 0],
                                                   dtype=np.uint64))
            return np.reshape(bg.random_raw(n * 4 * blocks), (n, 4 * blocks))[:, :m]
        g = np.reshape(self._arange(n, offset), (n, 1))
        c0 = g * np.uint64(blocks) + np.reshape(self._arange(blocks, 1), (1, blocks))
        zero = self._arange(1)[:1] * np.uint64(0)
        out = philox4x64((c0, zero + np.uint64(stream), zero + np.uint64(part), zero),
                         (k0, k1))
        full = np.broadcast_shapes(*(np.shape(o) for o in out))
        w = np.stack([np.broadcast_to(o, full) for o in out], axis=-1)
        return np.reshape(w, full[:-1] + (4 * blocks,))[..., :m]

    def wrap(self, phys: Any) -> Any:
        """Batch a physical value at the draw's levels (outermost first)."""
        for lv in self.levels:
            phys = new_batched(phys, 0, lv)
        return phys

    # ---- primitive distributions (wrapped) --------------------------------------------------
    def uniform01(self, shape: Any, dtype: Any = np.float64, stream: Any = 0) -> Any:
        w = self.words(shape, 1, stream)[..., 0]
        if np.dtype(dtype) == np.float32:
            return self.wrap(((w >> np.uint64(40)).view(np.int64) * (1.0 / 16777216.0))
                             .astype(np.float32))
        return self.wrap(_u53(w))

    def open01(self, shape: Any, stream: Any = 0) -> Any:
        """Uniform float64s in (0, 1) (0 excluded: a logarithm of them is finite)."""
        return self.wrap(_open01(self.words(shape, 1, stream)[..., 0]))

    def exponential01(self, shape: Any, dtype: Any = np.float64, stream: Any = 0) -> Any:
        """Standard exponential: -log(1 - u), u in [0, 1)."""
        u = _u53(self.words(shape, 1, stream)[..., 0])
        return self.wrap((-np.log1p(-u)).astype(dtype, copy=False))

    def normal01(self, shape: Any, dtype: Any = np.float64, stream: Any = 0) -> Any:
        """Standard normals by Box-Muller, both of each pair (one 64-bit word per normal).

        The angle is drawn in the first quadrant and each normal's sign from a low bit of
        the angle's word (bits the 53-bit float leaves out): reflections of a uniform angle
        on [0, pi/2) are uniform on the circle, and sin/cos of the small range cost about
        half of those of [0, 2 pi)."""
        m = math.prod(shape)
        pairs = -(-m // 2)
        w = self.words((2 * pairs,), 1, stream)[..., 0]
        k = len(self.grid)
        u1, u2 = w[(slice(None),) * k + (slice(0, pairs),)], w[(slice(None),) * k
                                                               + (slice(pairs, None),)]
        r = np.sqrt(-2.0 * np.log1p(-_u53(u1)))  # 1 - u in (0, 1]: the log is finite
        t = (0.5 * np.pi) * _u53(u2)
        z = np.empty(self.grid + (2 * pairs,), dtype=np.float64, like=self.like)
        first, second = (slice(None),) * k + (slice(0, pairs),), (slice(None),) * k + (
            slice(pairs, None),)
        np.multiply(r, np.cos(t), out=z[first])
        np.multiply(r, np.sin(t), out=z[second])
        one, top = np.uint64(1), np.uint64(63)
        bits = z.view(np.uint64)
        np.bitwise_xor(bits[first], u2 << top, out=bits[first])
        np.bitwise_xor(bits[second], (u2 >> one) << top, out=bits[second])
        z = np.reshape(z[(slice(None),) * k + (slice(0, m),)], self.grid + tuple(shape))
        return self.wrap(z.astype(dtype, copy=False))

    def raw64(self, shape: Any, stream: Any = 0) -> Any:
        return self.wrap(self.words(shape, 1, stream)[..., 0])


def _finish(res: Any, size: Any) -> Any:
    """NumPy returns a scalar when no size is given and every parameter is a scalar."""
    if size is None and type(res) is not BatchedTensor and getattr(res, "ndim", 1) == 0:
        return res[()]
    return res


def _take_count(size: Any) -> int:
    return 1 if size is None else math.prod(size)


class Generator:
    """A batch-aware ``numpy.random.Generator`` (see the module docstring).

    Every ``numpy.random.Generator`` method; parameters may be batched values and ``size`` is
    the shape of one example's draw. Inside vmap most draw vectorised from each example's
    Philox words (transforms of uniform, exponential and normal draws); those of
    ``PER_EXAMPLE`` run NumPy's own sampler once per example (their rejection loops take a
    varying number of words). ``bytes`` has no per-example form (it is not an array).
    """

    def __init__(self, generator: np.random.Generator) -> None:
        self._np = generator
        self._lock = threading.Lock()
        self._epoch = 0
        ss = getattr(generator.bit_generator, "seed_seq", None)
        if isinstance(ss, np.random.SeedSequence):
            self._entropy, self._spawn_key = ss.entropy, tuple(ss.spawn_key)
        else:  # a bit generator built from a state: take key material from it, once
            self._entropy = [int(v) for v in generator.integers(0, 2**32, 4, dtype=np.uint64)]
            self._spawn_key = ()

    def __repr__(self) -> str:
        return f"bt.random.Generator({self._np.bit_generator.__class__.__name__})"

    def __getstate__(self) -> dict[str, Any]:
        """Pickled without its lock (a dask worker or a process pool gets a copy)."""
        state = dict(self.__dict__)
        del state["_lock"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    @property
    def numpy(self) -> np.random.Generator:
        """The wrapped ``numpy.random.Generator`` (draws one shared sample inside vmap)."""
        return self._np

    @property
    def bit_generator(self) -> Any:
        return self._np.bit_generator

    def spawn(self, n_children: int) -> list[Any]:
        return [Generator(g) for g in self._np.spawn(n_children)]

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._np, name)
        if not callable(attr) or name.startswith("_"):
            return attr

        def method(*args: Any, **kwargs: Any) -> Any:
            if active_levels():
                raise BatchingError(
                    f"bt.random Generator.{name} is not batch-aware: inside vmap it would draw "
                    f"one sample shared by every example. Draw outside the vmapped function "
                    f"and pass the samples in.")
            return attr(*args, **kwargs)

        method.__name__ = name
        return method

    # ---- context ----------------------------------------------------------------------------
    def _draw(self, method: str, *params: Any) -> _Draw | None:
        """The batch-aware draw for this call, or None to call the wrapped NumPy Generator."""
        levels = active_levels()
        like = None
        for p in params:
            r = innermost(p)
            if hasattr(r, "shape") and type(r) is not np.ndarray:
                like = r
        if not levels:
            if like is None:
                return None
            return _Draw(self._key(None), [], like)  # a CuPy (...) parameter outside vmap
        for lv in levels:
            if lv.randomness == "error":
                raise BatchingError(
                    f"bt.random Generator.{method}() was called inside vmap with "
                    f"randomness='error' (the default; vmap level {lv.id}). Pass "
                    f"randomness='different' to bt.vmap for an independent draw per example, "
                    f"or randomness='same' for one draw shared by the batch.")
        different = [lv for lv in levels if lv.randomness == "different"]
        for lv in different:
            if lv.size is None:
                raise BatchingError(f"bt.random Generator.{method}(): vmap level {lv.id} has "
                                    f"no batch size yet (wrap a value first)")
            if like is None and lv.like is not None:
                like = lv.like
        if like is None and levels[-1].like is not None:
            like = levels[-1].like
        if like is not None:
            like = innermost(like)
        return _Draw(self._key(current_session()), different, like)

    def _key(self, session: Any) -> tuple[Any, ...]:
        """A fresh Philox key for one draw: (seed, epoch of this generator, tick)."""
        with self._lock:
            if session is None:
                epoch, tick = self._epoch, 0
                self._epoch += 1
            else:
                epoch = session.epochs.get(self)
                if epoch is None:
                    epoch = session.epochs[self] = self._epoch
                    self._epoch += 1
                tick = session.tick
                session.tick += 1
        ss = np.random.SeedSequence(self._entropy, spawn_key=self._spawn_key + (_TAG, epoch, tick))
        k = ss.generate_state(2, np.uint64)
        return int(k[0]), int(k[1])

    # ---- continuous -------------------------------------------------------------------------
    def random(self, size: _Size = None, dtype: DTypeLike = np.float64, out: Any = None) -> Any:
        """Floats in [0, 1), like ``numpy.random.Generator.random``."""
        return self._standard("random", "uniform01", size, dtype, out)

    def standard_normal(self, size: _Size = None, dtype: DTypeLike = np.float64,
                        out: Any = None) -> Any:
        return self._standard("standard_normal", "normal01", size, dtype, out)

    def _standard(self, name: str, sampler: str, size: Any, dtype: Any, out: Any) -> Any:
        """A parameterless float draw: NumPy's own outside vmap, else per example."""
        d = self._draw(name)
        if d is None:
            return getattr(self._np, name)(size, dtype=dtype, out=out)
        _no_out(name, out)
        dtype = _float_dtype(name, dtype)
        return _finish(getattr(d, sampler)(_size_tuple(size) or (), dtype), size)

    def normal(self, loc: Any = 0.0, scale: Any = 1.0, size: _Size = None) -> Any:
        d = self._draw("normal", loc, scale)
        if d is None:
            return self._np.normal(loc, scale, size)
        if _any(np.less(innermost(scale), 0)):
            raise ValueError("bt.random Generator.normal: scale < 0")
        shape = _out_shape("normal", _size_tuple(size), loc, scale)
        z = d.normal01(shape)
        if type(loc) in (int, float) and loc == 0 and type(scale) in (int, float) and scale == 1:
            return _finish(z, size)  # (the defaults: two passes over the draw saved)
        return _finish(loc + scale * z, size)

    def uniform(self, low: Any = 0.0, high: Any = 1.0, size: _Size = None) -> Any:
        d = self._draw("uniform", low, high)
        if d is None:
            return self._np.uniform(low, high, size)
        span = high - low
        if _any(~np.isfinite(innermost(span))):
            raise OverflowError("bt.random Generator.uniform: high - low is not finite")
        shape = _out_shape("uniform", _size_tuple(size), low, high)
        return _finish(low + span * d.uniform01(shape), size)

    # ---- integers ---------------------------------------------------------------------------
    def integers(self, low: Any, high: Any = None, size: _Size = None,
                 dtype: DTypeLike = np.int64, endpoint: bool = False) -> Any:
        """Integers in [low, high) (or [low, high] with ``endpoint=True``)."""
        d = self._draw("integers", low, high)
        if d is None:
            return self._np.integers(low, high, size, dtype=dtype, endpoint=endpoint)
        if high is None:
            low, high = 0, low
        dtype = np.dtype(dtype)
        if dtype != np.bool_ and dtype.kind not in "iu":
            raise TypeError(f"bt.random Generator.integers: unsupported dtype {dtype!r} for "
                            f"integers")
        info = (np.iinfo(dtype) if dtype != np.bool_
                else type("b", (), {"min": 0, "max": 1})())
        for name, v in (("low", low), ("high", high)):
            vd = getattr(v, "dtype", None)
            if vd is not None and vd.kind not in "iub":
                raise TypeError(f"bt.random Generator.integers: {name} must be integers, got "
                                f"dtype {vd}")
        hi_lim = info.max if endpoint else info.max + 1
        if _any(_cmp(np.less, low, info.min)):
            raise ValueError(f"low is out of bounds for {dtype}")
        if _any(_cmp(np.greater, high, hi_lim)):
            raise ValueError(f"high is out of bounds for {dtype}")
        if _any((np.greater if endpoint else np.greater_equal)(low, high)):  # per example
            raise ValueError("low > high" if endpoint else "low >= high")
        shape = _out_shape("integers", _size_tuple(size), low, high)
        lo = _as_u64(low)
        hi_u = _as_u64(high)
        if isinstance(hi_u, int) and isinstance(lo, int):
            r = (hi_u - lo + endpoint) % 2**64  # 0 stands for the full 2**64 range
        else:
            r = hi_u - lo + (1 if endpoint else 0)  # uint64 arithmetic wraps the same way
        raw = d.raw64(shape)
        if isinstance(r, (int, np.integer)):
            v = raw if int(r) == 0 else _below(raw, int(r), 0 < int(r) < _SMALL_RANGE)
        else:
            small = not _any(np.equal(r, 0) | np.greater_equal(r, _SMALL_RANGE))
            v = _below(raw, r, True) if small else np.where(r == 0, raw, _mulhi64(raw, r))
        v = v + lo
        if dtype.kind == "i":
            v = v.astype(np.int64)
        return _finish(v.astype(dtype), size)

    # ---- sampling ---------------------------------------------------------------------------
    def permutation(self, x: Any, axis: int = 0) -> Any:
        """A permuted range (int ``x``) or a permuted copy of ``x`` along ``axis``."""
        d = self._draw("permutation", x)
        if d is None:
            return self._np.permutation(x, axis=axis)
        if isinstance(x, (int, np.integer)):
            return self._perm(d, int(x))
        nd = len(_shape(x))
        if nd == 0:
            raise np.exceptions.AxisError("x must be an integer or at least 1-dimensional")
        axis = np.lib.array_utils.normalize_axis_index(axis, nd)
        return function_call(np.take, (x, self._perm(d, _shape(x)[axis])), {"axis": axis})

    def shuffle(self, x: Any, axis: int = 0) -> None:
        """Shuffle ``x`` in place along ``axis`` (one permutation per example)."""
        d = self._draw("shuffle", x)
        if d is None:
            return self._np.shuffle(x, axis=axis)
        if not hasattr(x, "shape"):
            raise TypeError("bt.random Generator.shuffle: x must be an array inside vmap")
        self._check_batched_target("shuffle", "x", x, d, "shuffled",
                                   "y = rng.permutation(x, axis=...) (a batched copy)")
        nd = len(_shape(x))
        if nd == 0:
            raise TypeError("bt.random Generator.shuffle: x must be at least 1-dimensional")
        axis = np.lib.array_utils.normalize_axis_index(axis, nd)
        x[...] = function_call(np.take, (x, self._perm(d, _shape(x)[axis])), {"axis": axis})
        return None

    def _perm(self, d: _Draw, n: int, stream: int = 0) -> Any:
        """A uniformly random permutation of ``range(n)``: argsort of 64-bit random keys."""
        return np.argsort(d.raw64((n,), stream), kind="stable")

    def choice(self, a: Any, size: _Size = None, replace: bool = True, p: Any = None,
               axis: int = 0, shuffle: bool = True) -> Any:
        """Samples from ``range(a)`` (int ``a``) or from ``a`` along ``axis``."""
        d = self._draw("choice", a, p)
        if d is None:
            return self._np.choice(a, size, replace, p, axis, shuffle)
        shape = _size_tuple(size)
        k = _take_count(shape)
        if isinstance(a, (int, np.integer)):
            n, pop = int(a), None
            if n < 0 or (n == 0 and k):
                raise ValueError("a must be a positive integer unless no samples are taken")
        else:
            sa = _shape(a)
            if not sa:
                raise ValueError("a must be a sequence or an integer, not a 0-d array")
            axis = np.lib.array_utils.normalize_axis_index(axis, len(sa))
            n, pop = sa[axis], a
            if n == 0 and k:
                raise ValueError("a cannot be empty unless no samples are taken")
        if p is not None:
            if _shape(p) != (n,):
                raise ValueError("p must be 1-dimensional and the same size as a"
                                 if len(_shape(p)) == 1 else "p must be 1-dimensional")
            if _any(np.less(innermost(p), 0)) or _any(np.isnan(innermost(p))):
                raise ValueError("probabilities are not non-negative")
            tol = np.sqrt(np.finfo(np.float64).eps)
            if _any(np.abs(np.sum(p, axis=-1) - 1.0) > tol):
                raise ValueError("probabilities do not sum to 1")
        if replace:
            if p is None:
                idx = d.raw64(shape or ())
                idx = _mulhi64(idx, n).astype(np.int64)
            else:
                cdf = np.cumsum(p, axis=-1)
                cdf = cdf / cdf[..., -1:]
                u = d.uniform01(shape or ())
                idx = np.sum(np.expand_dims(u, -1) >= cdf, axis=-1, dtype=np.int64)
        else:
            if k > n:
                raise ValueError("Cannot take a larger sample than population when "
                                 "replace is False")
            if p is None:
                order = self._perm(d, n)
            else:
                if _any(np.sum(np.greater(p, 0), axis=-1) < k):
                    raise ValueError("Fewer non-zero entries in p than size")
                # Efraimidis–Spirakis: the k smallest Exp(1)/p keys are a weighted sample
                # without replacement (the same law as drawing one at a time, renormalising).
                e = -np.log(1.0 - d.uniform01((n,)))
                with np.errstate(divide="ignore"):
                    order = np.argsort(e / p, kind="stable")
            idx = np.reshape(order[:k], shape or ())
        if pop is None:
            return _finish(idx, size)
        # np.take dispatches on its array only, not on batched indices: call the rule path.
        return function_call(np.take, (pop, idx), {"axis": axis})

    # ---- discrete ---------------------------------------------------------------------------
    def binomial(self, n: Any, p: Any, size: _Size = None) -> Any:
        """Binomial(n, p) counts, as a sum of ``n`` Bernoulli(p) trials (O(n) per element)."""
        d = self._draw("binomial", n, p)
        if d is None:
            return self._np.binomial(n, p, size)
        if _any(np.less(innermost(n), 0)):
            raise ValueError("n < 0")
        pr = innermost(p)
        if _any(np.less(pr, 0)) or _any(np.greater(pr, 1)) or _any(np.isnan(pr)):
            raise ValueError("p < 0, p > 1 or p is NaN")
        shape = _out_shape("binomial", _size_tuple(size), n, p)
        nmax = int(np.max(innermost(n))) if np.size(innermost(n)) else 0
        if nmax == 0:  # every count is 0, whatever the example
            return _finish(np.zeros(shape, dtype=np.int64) if d.like is None
                           else np.zeros(shape, dtype=np.int64, like=d.like), size)
        t = _BINOMIAL_BLOCK
        pe = np.expand_dims(p, -1) if hasattr(p, "shape") else p
        ne = np.expand_dims(n, -1) if hasattr(n, "shape") else n
        count = None
        for t0 in range(0, nmax, t):
            # Trial j of an element always uses the same Philox words (pass j // t), so an
            # example's count does not depend on the largest n in the batch.
            u = d.wrap(_u53(d.words(shape, t, part=t0 // t)))
            trial = d._arange(t).astype(np.int64) + t0
            c = np.sum((u < pe) & (trial < ne), axis=-1, dtype=np.int64)
            count = c if count is None else count + c
        return _finish(count, size)


    # ---- more continuous distributions: transforms of uniform, exponential, normal draws --
    def standard_exponential(self, size: _Size = None, dtype: DTypeLike = np.float64,
                             method: Any = "zig", out: Any = None) -> Any:
        """Standard exponentials: ``-log(1 - u)``."""
        d = self._draw("standard_exponential")
        if d is None:
            # (NumPy's stubs take only the float dtypes: checked at run time, as NumPy does)
            return cast(Any, self._np).standard_exponential(size, dtype=dtype, method=method,
                                                            out=out)
        _no_out("standard_exponential", out)
        dtype = _float_dtype("standard_exponential", dtype)
        return _finish(d.exponential01(_size_tuple(size) or (), dtype), size)

    def _transform(self, name: str, params: tuple[Any, ...], size: _Size,
                   refusals: Sequence[tuple[Any, Any, Any, str]],
                   draw: Callable[[_Draw, tuple[int, ...]], Any]) -> Any:
        """A law drawn as a transform of uniform, exponential or normal draws: NumPy's own
        outside vmap; inside, NumPy's ValueError where any example's parameters fail a check
        (``refusals``: ``(ufunc, a, b, message)`` refuses where ``ufunc(a, b)``), then
        ``draw(the draw, one example's shape)``."""
        d = self._draw(name, *params)
        if d is None:
            return getattr(self._np, name)(*params, size)
        for ufunc, a, b, message in refusals:
            _refuse(ufunc(a, b), message)
        return _finish(draw(d, _out_shape(name, _size_tuple(size), *params)), size)

    def exponential(self, scale: Any = 1.0, size: _Size = None) -> Any:
        return self._transform("exponential", (scale,), size, [(np.less, scale, 0, "scale < 0")],
                               lambda d, shape: scale * d.exponential01(shape))

    def laplace(self, loc: Any = 0.0, scale: Any = 1.0, size: _Size = None) -> Any:
        def draw(d: _Draw, shape: tuple[int, ...]) -> Any:
            u = d.open01(shape)  # (0, 1): both logarithms are finite
            return loc + scale * np.where(u < 0.5, np.log(2.0 * u), -np.log(2.0 - 2.0 * u))

        return self._transform("laplace", (loc, scale), size,
                               [(np.less, scale, 0, "scale < 0")], draw)

    def logistic(self, loc: Any = 0.0, scale: Any = 1.0, size: _Size = None) -> Any:
        def draw(d: _Draw, shape: tuple[int, ...]) -> Any:
            u = d.open01(shape)
            return loc + scale * np.log(u / (1.0 - u))

        return self._transform("logistic", (loc, scale), size,
                               [(np.less, scale, 0, "scale < 0")], draw)

    def gumbel(self, loc: Any = 0.0, scale: Any = 1.0, size: _Size = None) -> Any:
        return self._transform("gumbel", (loc, scale), size, [(np.less, scale, 0, "scale < 0")],
                               lambda d, shape: loc - scale * np.log(-np.log(d.open01(shape))))

    def lognormal(self, mean: Any = 0.0, sigma: Any = 1.0, size: _Size = None) -> Any:
        return self._transform("lognormal", (mean, sigma), size,
                               [(np.less, sigma, 0, "sigma < 0")],
                               lambda d, shape: np.exp(mean + sigma * d.normal01(shape)))

    def rayleigh(self, scale: Any = 1.0, size: _Size = None) -> Any:
        return self._transform("rayleigh", (scale,), size, [(np.less, scale, 0, "scale < 0")],
                               lambda d, shape: scale * np.sqrt(2.0 * d.exponential01(shape)))

    def weibull(self, a: Any, size: _Size = None) -> Any:
        def draw(d: _Draw, shape: tuple[int, ...]) -> Any:
            e = d.exponential01(shape)
            with np.errstate(divide="ignore"):  # a == 0 gives 0, as NumPy's
                return np.where(np.equal(a, 0), 0.0, e ** (1.0 / a))

        return self._transform("weibull", (a,), size, [(np.less, a, 0, "a < 0")], draw)

    def pareto(self, a: Any, size: _Size = None) -> Any:
        return self._transform("pareto", (a,), size, [(np.less_equal, a, 0, "a <= 0")],
                               lambda d, shape: np.expm1(d.exponential01(shape) / a))

    def power(self, a: Any, size: _Size = None) -> Any:
        return self._transform(
            "power", (a,), size, [(np.less_equal, a, 0, "a <= 0")],
            lambda d, shape: (-np.expm1(-d.exponential01(shape))) ** (1.0 / a))

    def standard_cauchy(self, size: _Size = None) -> Any:
        return self._transform("standard_cauchy", (), size, [],
                               lambda d, shape: d.normal01(shape) / d.normal01(shape, stream=1))

    def triangular(self, left: Any, mode: Any, right: Any, size: _Size = None) -> Any:
        def draw(d: _Draw, shape: tuple[int, ...]) -> Any:
            u = d.uniform01(shape)
            base, left_part, right_part = right - left, mode - left, right - mode
            return np.where(u <= left_part / base, left + np.sqrt(u * base * left_part),
                            right - np.sqrt((1.0 - u) * base * right_part))

        return self._transform("triangular", (left, mode, right), size,
                               [(np.greater, left, mode, "left > mode"),
                                (np.greater, mode, right, "mode > right"),
                                (np.equal, left, right, "left == right")], draw)

    def wald(self, mean: Any, scale: Any, size: _Size = None) -> Any:
        """Inverse Gaussian (Michael, Schucany and Haas: one normal and one uniform)."""
        def draw(d: _Draw, shape: tuple[int, ...]) -> Any:
            y = d.normal01(shape)
            y = mean * y * y
            x = mean + mean / (2.0 * scale) * (y - np.sqrt(4.0 * scale * y + y * y))
            u = d.uniform01(shape, stream=1)
            return np.where(u <= mean / (mean + x), x, mean * mean / x)

        return self._transform("wald", (mean, scale), size,
                               [(np.less_equal, mean, 0, "mean <= 0"),
                                (np.less_equal, scale, 0, "scale <= 0")], draw)

    def multivariate_normal(self, mean: Any, cov: Any, size: _Size = None,
                            check_valid: Literal["warn", "raise", "ignore"] = "warn",
                            tol: float = 1e-8, *,
                            method: Literal["svd", "eigh", "cholesky"] = "svd") -> Any:
        """``mean + z @ factor`` for standard normals ``z``, ``factor`` of ``cov`` as NumPy
        makes it (``method``: 'svd', 'eigh' or 'cholesky'); ``check_valid`` per example."""
        d = self._draw("multivariate_normal", mean, cov)
        if d is None:
            return self._np.multivariate_normal(mean, cov, size, check_valid, tol,
                                                method=method)
        if method not in {"svd", "eigh", "cholesky"}:
            raise ValueError("method must be one of {'eigh', 'svd', 'cholesky'}")
        ms, cs = _shape(mean), _shape(cov)
        if len(ms) != 1:
            raise ValueError("mean must be 1 dimensional")
        if len(cs) != 2 or cs[0] != cs[1]:
            raise ValueError("cov must be 2 dimensional and square")
        if ms[0] != cs[0]:
            raise ValueError("mean and cov must have same length")
        if check_valid not in ("warn", "raise", "ignore"):
            raise ValueError("check_valid must equal 'warn', 'raise', or 'ignore'")
        shape = _size_tuple(size) or ()
        z = d.normal01(shape + ms)
        if method == "cholesky":
            factor = np.swapaxes(np.linalg.cholesky(cov), -1, -2)
        else:
            if method == "eigh":
                s, u = np.linalg.eigh(cov)
                psd = not _any(np.less(s, -tol))
                factor = np.swapaxes(u * np.sqrt(np.abs(s)), -1, -2)
            else:
                u, s, vh = np.linalg.svd(cov)
                rebuilt = np.matmul(np.swapaxes(vh, -1, -2) * np.expand_dims(s, -2), vh)
                psd = not _any(~np.isclose(rebuilt, cov, rtol=tol, atol=tol))
                factor = np.expand_dims(np.sqrt(s), -1) * vh
            if not psd and check_valid == "warn":
                warnings.warn("covariance is not symmetric positive-semidefinite.",
                              RuntimeWarning, stacklevel=2)
            elif not psd and check_valid == "raise":
                raise ValueError("covariance is not symmetric positive-semidefinite.")
        return np.matmul(z, factor) + mean

    # ---- discrete, by transforms ------------------------------------------------------------
    def geometric(self, p: Any, size: _Size = None) -> Any:
        """Trials to the first success: ``ceil(log(u) / log1p(-p))`` for u in (0, 1)."""
        def draw(d: _Draw, shape: tuple[int, ...]) -> Any:
            with np.errstate(divide="ignore"):  # p == 1: log1p(-1) is -inf, one trial
                k = np.ceil(np.log(d.open01(shape)) / np.log1p(-p))
            return np.maximum(k, 1.0).astype(np.int64)

        message = "p <= 0, p > 1 or p contains NaNs"
        return self._transform("geometric", (p,), size,
                               [(np.less_equal, p, 0, message), (np.greater, p, 1, message),
                                (np.not_equal, p, p, message)], draw)

    # ---- sampling ---------------------------------------------------------------------------
    def permuted(self, x: Any, axis: int | None = None, out: Any = None) -> Any:
        """A copy of ``x`` with each 1-d slice along ``axis`` (the whole array if None)
        permuted independently, per example."""
        d = self._draw("permuted", x, out)
        if d is None:
            return self._np.permuted(x, axis=axis, out=out)
        xs = _shape(x)
        if axis is None:
            order = np.argsort(d.raw64((math.prod(xs),)), kind="stable")
            res = np.reshape(function_call(np.take, (np.ravel(x), order), {}), xs)
        else:
            axis = np.lib.array_utils.normalize_axis_index(axis, len(xs))
            order = np.argsort(d.raw64(xs), axis=axis, kind="stable")
            res = function_call(np.take_along_axis, (x, order), {"axis": axis})
        if out is None:
            return res
        if _shape(out) != xs:
            raise ValueError("out must have the same shape as x")
        self._check_batched_target("permuted", "out", out, d)
        out[...] = res
        return out

    def bytes(self, length: int) -> Any:
        """Random bytes: one shared draw; per example it has no batched form (bytes is not an
        array)."""
        d = self._draw("bytes")
        if d is None:
            return self._np.bytes(length)
        if d.levels:
            raise BatchingError(
                "bt.random Generator.bytes returns a Python bytes object, which cannot hold a "
                "different value per example (randomness='different'). Draw "
                "integers(0, 256, size=length, dtype=np.uint8) instead (an array per example), "
                "and call .tobytes() where the bytes leave the vmapped function.")
        return _GENERATOR(_PHILOX(key=d.example_keys())).bytes(length)

    # ---- distributions drawn by NumPy's own samplers, one example at a time ------------------
    def _per_example(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """NumPy's sampler for ``name`` (rejection samplers, whose number of words per value
        varies), called once per example on a NumPy Generator over Philox keyed by the example
        (correct and reproducible, at the speed of a loop: it warns as the loop fallback)."""
        params = [v for v in (*args, *kwargs.values()) if v is not None]
        d = self._draw(name, *params)
        if d is None:
            return getattr(self._np, name)(*args, **kwargs)
        if d.like is not None:
            raise BatchingError(
                f"bt.random Generator.{name} draws with NumPy's sampler, once per example, and "
                f"takes NumPy arrays only: vmap's inputs here are {type(d.like).__name__}. "
                f"Draw it outside the vmapped function and pass the samples in.")
        if scan_level((args, kwargs)) is None:  # parameters shared: one bit generator, rekeyed
            if not d.levels:  # randomness='same': one draw, as NumPy returns it
                return getattr(_GENERATOR(_PHILOX(key=d.example_keys())), name)(*args, **kwargs)
            announce_loop(f"bt.random.Generator.{name}", _REJECTION)
            if RECORDERS:  # (bt.explain: the path the dispatcher would have recorded)
                record(_numpy_sampler(name), Path.LOOP, _REJECTION)
            return d.wrap(_draw_each(name, d.example_keys(), d.grid, args, kwargs))
        keys = d.wrap(d.example_keys())  # the per-op loop, which announces itself
        return function_call(_numpy_sampler(name), (keys,) + tuple(args), dict(kwargs))

    def _check_batched_target(self, method: str, what: str, x: Any, d: _Draw,
                              done: str = "written", instead: str = "the returned value") -> None:
        """A target written in place must be batched at every level that draws per example."""
        mine = _levels_of(x)
        missing = [lv.id for lv in d.levels if lv not in mine]
        if missing:
            raise BatchingError(
                f"bt.random Generator.{method}: {what} (shape {_shape(x)}) is not batched at vmap "
                f"level {missing[0]} (randomness='different'): it is shared by every example, "
                f"so it cannot be {done} differently per example in place. Use {instead} "
                f"instead.")


def _per_example_method(name: str) -> Any:
    def method(self: Generator, *args: Any, **kwargs: Any) -> Any:
        return self._per_example(name, args, kwargs)

    numpy_doc = getattr(np.random.Generator, name).__doc__ or ""
    method.__name__ = method.__qualname__ = name
    method.__doc__ = (f"NumPy's ``Generator.{name}``, drawn per example inside vmap (a loop over "
                      f"the examples, each with its own key).\n\n" + numpy_doc.split("\n\n")[0])
    return method


_REJECTION = ("draws with NumPy's sampler, whose rejection loop takes a varying number of random "
              "words per value")
#: methods drawn by NumPy's samplers per example (their rejection loops take a varying number
#: of words per value, so no fixed block of words per example can feed them vectorised)
PER_EXAMPLE = ("beta", "chisquare", "dirichlet", "f", "gamma", "hypergeometric", "logseries",
               "multinomial", "multivariate_hypergeometric", "negative_binomial",
               "noncentral_chisquare", "noncentral_f", "poisson", "standard_gamma", "standard_t",
               "vonmises", "zipf")
for _name in PER_EXAMPLE:
    setattr(Generator, _name, _per_example_method(_name))

_SAMPLERS: dict[str, Any] = {}


def _numpy_sampler(name: str) -> Any:
    """One example's draw: NumPy's ``Generator.{name}`` on Philox keyed by the example's key.
    Called by the per-op loop with one example of the innermost level; with outer levels'
    batched values still in its arguments it dispatches again (their loop)."""
    fn = _SAMPLERS.get(name)
    if fn is not None:
        return fn

    def sampler(key: Any, *args: Any, **kwargs: Any) -> Any:
        if scan_level((key, args, kwargs)) is not None:
            return function_call(sampler, (key,) + args, kwargs)
        gen = _GENERATOR(_PHILOX(key=np.asarray(key, dtype=np.uint64)))
        return getattr(gen, name)(*args, **kwargs)

    sampler.__name__ = name
    sampler.__qualname__ = f"Generator.{name}"
    sampler.__module__ = "bt.random"  # how messages name it: bt.random.Generator.gamma
    fn = _SAMPLERS[name] = sampler
    return fn


def _philox_state(key: Any) -> dict[str, Any]:
    """A fresh Philox state under ``key`` (as ``Philox(key=key)`` starts)."""
    zeros = np.zeros(4, dtype=np.uint64)
    return {"bit_generator": "Philox", "state": {"counter": zeros, "key": key},
            "buffer": zeros, "buffer_pos": 4, "has_uint32": 0, "uinteger": 0}


def _draw_each(name: str, keys: Any, grid: tuple[Any, ...], args: tuple[Any, ...],
               kwargs: dict[str, Any]) -> Any:
    """NumPy's ``Generator.{name}(*args, **kwargs)`` once per example, under each example's key
    (``keys``: grid + (2,)), stacked into ``grid + the draw's shape``. One bit generator is
    rekeyed for each example (setting a state costs a seventh of making a Philox)."""
    bits = _PHILOX()
    method = getattr(_GENERATOR(bits), name)
    flat = np.reshape(keys, (-1, 2))
    draws = []
    for key in flat if len(flat) else np.zeros((1, 2), dtype=np.uint64):
        bits.state = _philox_state(key)
        draws.append(np.asarray(method(*args, **kwargs)))
    if not len(flat):  # no example: the shape and dtype of one, none of its numbers
        return np.empty(grid + draws[0].shape, dtype=draws[0].dtype)
    return np.reshape(np.stack(draws), grid + draws[0].shape)


def _refuse(cond: Any, message: str) -> None:
    """NumPy's ValueError where any example's parameters are invalid."""
    if _any(cond):
        raise ValueError(message)


def _no_out(method: str, out: Any) -> None:
    if out is not None:
        raise TypeError(f"bt.random Generator.{method}: out= is not supported inside vmap; "
                        f"use the returned value")


def _float_dtype(method: str, dtype: Any) -> Any:
    dt = np.dtype(dtype)
    if dt not in (np.float64, np.float32):
        raise TypeError(f"bt.random Generator.{method}: unsupported dtype {dt} (float32 or "
                        f"float64)")
    return dt


def _cmp(op: Any, v: Any, bound: Any) -> Any:
    """``op(v, bound)`` on every example of ``v`` (its physical root)."""
    return op(innermost(v), bound) if hasattr(v, "shape") else op(v, bound)


def _as_u64(v: Any) -> Any:
    """Integers as uint64 (two's complement): a Python int stays an int."""
    if isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)):
        return int(v) % 2**64
    if not hasattr(v, "dtype"):
        v = np.asarray(v)
    if v.dtype.kind == "u" or v.dtype == np.bool_:
        return v.astype(np.uint64)
    return v.astype(np.int64).astype(np.uint64)


def stream_identity(generator: Generator) -> tuple[Any, ...]:
    """What tells ``generator``'s vmap streams apart from every other generator's, the same in
    each copy of it (a pickled copy in another process is another object): its seed material.

    >>> import batchtensor as bt
    >>> a, b = bt.random.default_rng(1), bt.random.default_rng(1)
    >>> bt.random.stream_identity(a) == bt.random.stream_identity(b)
    True
    """
    entropy = generator._entropy
    if entropy is not None and not isinstance(entropy, int):
        entropy = tuple(int(v) for v in entropy)
    return entropy, tuple(generator._spawn_key)


class PortableEpochs(dict[Any, Any]):
    """A random session's epochs (generator -> epoch, ``levels.RandomSession.epochs``) that a
    copy of a generator finds too, by its ``stream_identity``: a block of a vmap over dask
    arrays runs in another process on copies of the caller's generators, or on a module's own
    generator imported there, and must key its draws as the caller's pass did. Seeds shared by
    generators with other epochs are left out (such a generator takes a fresh epoch).

    >>> import pickle, batchtensor as bt
    >>> g = bt.random.default_rng(1)
    >>> bt.random.PortableEpochs({g: 3}).get(pickle.loads(pickle.dumps(g)))
    3
    """

    def __init__(self, epochs: dict[Any, Any]) -> None:
        super().__init__(epochs)
        by_seed: dict[Any, Any] = {}
        for generator, epoch in epochs.items():
            if isinstance(generator, Generator):
                key = stream_identity(generator)
                by_seed[key] = epoch if by_seed.get(key, epoch) == epoch else None
        self.by_seed = by_seed

    def get(self, generator: Any, default: Any = None) -> Any:
        epoch = dict.get(self, generator)
        if epoch is None and isinstance(generator, Generator):
            epoch = self.by_seed.get(stream_identity(generator))
            if epoch is not None:
                self[generator] = epoch
        return default if epoch is None else epoch


def default_rng(seed: Any = None) -> Generator:
    """A batch-aware generator: ``numpy.random.default_rng(seed)`` wrapped (see the module).

    ``seed`` is anything ``numpy.random.default_rng`` takes (None, an int, a SeedSequence, a
    BitGenerator, a Generator), or a ``bt.random.Generator`` (returned unchanged).
    """
    if isinstance(seed, Generator):
        return seed
    return Generator(np.random.default_rng(seed))
