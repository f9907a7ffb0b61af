"""``bt.random``: random numbers that know about vmap.

NumPy's random functions take no array arguments, so NumPy never dispatches them: inside a
vmapped function ``np.random.default_rng(0).normal(size=x.shape)`` draws *one* sample that
every example shares. ``bt.random.default_rng(seed)`` wraps a ``numpy.random.Generator`` and
follows the ``randomness=`` of every enclosing vmap:

- ``"error"`` (the default): a draw raises, naming the call;
- ``"different"``: every example gets its own independent draw;
- ``"same"``: one draw, shared by the examples of that level.

Outside vmap the wrapper draws exactly what the wrapped NumPy Generator draws. Inside, draws
come from a counter-based generator (Philox4x32-10, vectorised over the batch): the numbers of
example ``i`` are a function of (seed, position of the draw in the function, ``i``), so they do
not depend on the batch size, on ``chunk_size``, or on ``control_flow="loop"`` reruns. The
arrays are created on the backend of the vmapped inputs (NumPy or CuPy) through NumPy-API calls.

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
from typing import Any

import numpy as np

from .dispatch import function_call
from .errors import BatchingError
from .levels import active_levels, current_session
from .plumbing import innermost
from .tensor import BatchedTensor, new_batched

__all__ = ["Generator", "default_rng", "philox4x32"]

_MASK = 0xFFFFFFFF
_M0, _M1 = 0xD2511F53, 0xCD9E8D57
_W0, _W1 = 0x9E3779B9, 0xBB67AE85
_TAG = 0x62742D72  # "bt-r": separates the vmap streams from the wrapped generator's seed
_BINOMIAL_BLOCK = 32  # trials per pass of binomial's sum of Bernoulli draws


def philox4x32(counter, key, rounds: int = 10):
    """Philox4x32 (Salmon et al., SC'11) on uint64 arrays holding 32-bit words.

    ``counter``: 4 arrays, ``key``: 2 arrays (broadcast together); returns 4 arrays.
    """
    c0, c1, c2, c3 = counter
    k0, k1 = key
    for r in range(rounds):
        if r:
            k0 = (k0 + _W0) & _MASK
            k1 = (k1 + _W1) & _MASK
        p0 = c0 * _M0
        p1 = c2 * _M1
        c0, c1, c2, c3 = (p1 >> 32) ^ c1 ^ k0, p1 & _MASK, (p0 >> 32) ^ c3 ^ k1, p0 & _MASK
    return c0, c1, c2, c3


def _levels_of(x) -> list:
    out = []
    while type(x) is BatchedTensor:
        out.append(x._level)
        x = x._value
    return out


def _any(cond) -> bool:
    """True if ``cond`` holds for any element of any example (no per-example control flow)."""
    return bool(np.any(innermost(cond)))


def _shape(x) -> tuple:
    if type(x) is BatchedTensor:
        return x.shape
    s = getattr(x, "shape", None)
    return tuple(s) if s is not None else np.shape(x)


def _size_tuple(size) -> tuple | None:
    if size is None:
        return None
    if isinstance(size, (int, np.integer)):
        size = (size,)
    size = tuple(operator.index(d) for d in size)
    if any(d < 0 for d in size):
        raise ValueError("negative dimensions are not allowed")
    return size


def _out_shape(method: str, size, *params) -> tuple:
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
    return size


def _u53(hi, lo):
    """A float64 in [0, 1) from two 32-bit words (53 random bits)."""
    return ((hi >> 5) * 67108864.0 + (lo >> 6)) * (1.0 / 9007199254740992.0)


def _mulhi64(raw, r):
    """``floor(raw * r / 2**64)`` for uint64 arrays (Lemire's multiply-shift: a value in
    ``[0, r)``, biased by at most ``r / 2**64``)."""
    rl, rh = raw & _MASK, raw >> 32
    gl, gh = r & _MASK, r >> 32
    b, c = rh * gl, rl * gh
    mid = ((rl * gl) >> 32) + (b & _MASK) + (c & _MASK)
    return rh * gh + (b >> 32) + (c >> 32) + (mid >> 32)


class _Draw:
    """One batch-aware draw: its Philox key, the levels it is batched at, the backend."""

    __slots__ = ("keys", "levels", "grid", "like")

    def __init__(self, key: tuple, levels: list, like):
        self.levels = levels
        self.like = like
        self.grid = tuple(lv.size for lv in levels)
        k0, k1 = key
        # One key per example: Philox of its global index tuple (three levels per pass).
        idx = []
        for d, lv in enumerate(levels):
            shape = [1] * len(levels)
            shape[d] = lv.size
            idx.append(np.reshape(self._arange(lv.size) + lv.offset, shape))
        groups = [idx[i:i + 3] for i in range(0, len(idx), 3)] or [[]]
        zero = self._zeros()
        for g, group in enumerate(groups):
            c = list(group) + [zero] * (3 - len(group))
            c.append(zero + ((g << 8) | len(levels)))
            out = philox4x32(c, (k0, k1))
            k0, k1 = out[0], out[1]
        self.keys = (k0, k1)

    def _arange(self, n):
        if self.like is None:
            return np.arange(n, dtype=np.uint64)
        return np.arange(n, dtype=np.uint64, like=self.like)

    def _zeros(self):
        if self.like is None:
            return np.zeros((), dtype=np.uint64)
        return np.zeros((), dtype=np.uint64, like=self.like)

    def words(self, shape: tuple, nwords: int, stream: int = 0, first_block: int = 0):
        """uint64 words (32 random bits each) of physical shape ``grid + shape + (nwords,)``.

        Word ``w`` of element ``e`` (flat index in ``shape``) is word ``w % 4`` of Philox at
        counter ``(e, e >> 32, first_block + w // 4, stream)`` under the example's key: it does
        not depend on the batch, and ``stream`` separates several draws in one call."""
        k = len(self.grid)
        m = math.prod(shape)
        nblocks = -(-nwords // 4)
        e = np.reshape(self._arange(m), (1,) * k + tuple(shape) + (1,))
        b = np.reshape(self._arange(nblocks) + first_block, (1,) * (k + len(shape)) + (nblocks,))
        k0, k1 = (np.reshape(x, np.shape(x) + (1,) * (len(shape) + 1)) for x in self.keys)
        out = philox4x32((e & _MASK, e >> 32, b, self._zeros() + stream), (k0, k1))
        full = self.grid + tuple(shape) + (nblocks,)
        w = np.stack([np.broadcast_to(o, full) for o in out], axis=-1)
        w = np.reshape(w, self.grid + tuple(shape) + (4 * nblocks,))
        return w[..., :nwords] if nwords != 4 * nblocks else w

    def wrap(self, phys):
        """Batch a physical value at the draw's levels (outermost first)."""
        for lv in self.levels:
            phys = new_batched(phys, 0, lv)
        return phys

    # ---- primitive distributions (wrapped) --------------------------------------------------
    def uniform01(self, shape, dtype=np.float64, stream=0):
        if np.dtype(dtype) == np.float32:
            w = self.words(shape, 1, stream)[..., 0]
            return self.wrap(((w >> 8) * (1.0 / 16777216.0)).astype(np.float32))
        w = self.words(shape, 2, stream)
        return self.wrap(_u53(w[..., 0], w[..., 1]))

    def normal01(self, shape, dtype=np.float64, stream=0):
        w = self.words(shape, 4, stream)
        u1 = 1.0 - _u53(w[..., 0], w[..., 1])  # (0, 1]: log is finite
        u2 = _u53(w[..., 2], w[..., 3])
        z = np.sqrt(-2.0 * np.log(u1)) * np.cos(2.0 * np.pi * u2)
        return self.wrap(z.astype(dtype, copy=False))

    def raw64(self, shape, stream=0):
        w = self.words(shape, 2, stream)
        return self.wrap((w[..., 0] << 32) | w[..., 1])


def _finish(res, size):
    """NumPy returns a scalar when no size is given and every parameter is a scalar."""
    if size is None and type(res) is not BatchedTensor and getattr(res, "ndim", 1) == 0:
        return res[()]
    return res


def _take_count(size) -> int:
    return 1 if size is None else math.prod(size)


class Generator:
    """A batch-aware ``numpy.random.Generator`` (see the module docstring).

    Methods: ``random``, ``standard_normal``, ``normal``, ``uniform``, ``integers``,
    ``choice``, ``permutation``, ``shuffle``, ``binomial``. Parameters may be batched values;
    ``size`` is the shape of one example's draw. Other ``numpy.random.Generator`` methods
    work outside vmap and raise inside (they would draw one sample shared by every example).
    """

    def __init__(self, generator: np.random.Generator):
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

    @property
    def numpy(self) -> np.random.Generator:
        """The wrapped ``numpy.random.Generator`` (draws one shared sample inside vmap)."""
        return self._np

    @property
    def bit_generator(self):
        return self._np.bit_generator

    def spawn(self, n_children: int) -> list:
        return [Generator(g) for g in self._np.spawn(n_children)]

    def __getattr__(self, name: str):
        attr = getattr(self._np, name)
        if not callable(attr) or name.startswith("_"):
            return attr

        def method(*args, **kwargs):
            if active_levels():
                raise BatchingError(
                    f"bt.random Generator.{name} is not batch-aware: inside vmap it would draw "
                    f"one sample shared by every example. Batch-aware methods: random, "
                    f"standard_normal, normal, uniform, integers, choice, permutation, shuffle, "
                    f"binomial; or draw outside the vmapped function and pass the samples in.")
            return attr(*args, **kwargs)

        method.__name__ = name
        return method

    # ---- context ----------------------------------------------------------------------------
    def _draw(self, method: str, *params) -> _Draw | None:
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

    def _key(self, session) -> tuple:
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
        k = ss.generate_state(2, np.uint32)
        return int(k[0]), int(k[1])

    # ---- continuous -------------------------------------------------------------------------
    def random(self, size=None, dtype=np.float64, out=None):
        """Floats in [0, 1), like ``numpy.random.Generator.random``."""
        return self._standard("random", "uniform01", size, dtype, out)

    def standard_normal(self, size=None, dtype=np.float64, out=None):
        return self._standard("standard_normal", "normal01", size, dtype, out)

    def _standard(self, name: str, sampler: str, size, dtype, out):
        """A parameterless float draw: NumPy's own outside vmap, else per example."""
        d = self._draw(name)
        if d is None:
            return getattr(self._np, name)(size, dtype=dtype, out=out)
        _no_out(name, out)
        dtype = _float_dtype(name, dtype)
        return _finish(getattr(d, sampler)(_size_tuple(size) or (), dtype), size)

    def normal(self, loc=0.0, scale=1.0, size=None):
        d = self._draw("normal", loc, scale)
        if d is None:
            return self._np.normal(loc, scale, size)
        if _any(np.less(innermost(scale), 0)):
            raise ValueError("bt.random Generator.normal: scale < 0")
        shape = _out_shape("normal", _size_tuple(size), loc, scale)
        return _finish(loc + scale * d.normal01(shape), size)

    def uniform(self, low=0.0, high=1.0, size=None):
        d = self._draw("uniform", low, high)
        if d is None:
            return self._np.uniform(low, high, size)
        span = high - low
        if _any(~np.isfinite(innermost(span))):
            raise OverflowError("bt.random Generator.uniform: high - low is not finite")
        shape = _out_shape("uniform", _size_tuple(size), low, high)
        return _finish(low + span * d.uniform01(shape), size)

    # ---- integers ---------------------------------------------------------------------------
    def integers(self, low, high=None, size=None, dtype=np.int64, endpoint=False):
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
            v = raw if int(r) == 0 else _mulhi64(raw, int(r))
        else:
            v = np.where(r == 0, raw, _mulhi64(raw, r))
        v = v + lo
        if dtype.kind == "i":
            v = v.astype(np.int64)
        return _finish(v.astype(dtype), size)

    # ---- sampling ---------------------------------------------------------------------------
    def permutation(self, x, axis=0):
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

    def shuffle(self, x, axis=0) -> None:
        """Shuffle ``x`` in place along ``axis`` (one permutation per example)."""
        d = self._draw("shuffle", x)
        if d is None:
            return self._np.shuffle(x, axis=axis)
        if not hasattr(x, "shape"):
            raise TypeError("bt.random Generator.shuffle: x must be an array inside vmap")
        mine = _levels_of(x)
        missing = [lv.id for lv in d.levels if lv not in mine]
        if missing:
            raise BatchingError(
                f"bt.random Generator.shuffle: x (shape {_shape(x)}) is not batched at vmap "
                f"level {missing[0]} (randomness='different'): it is shared by every example, "
                f"so it cannot be shuffled differently per example in place. Use "
                f"y = rng.permutation(x, axis=...) (a batched copy) instead.")
        nd = len(_shape(x))
        if nd == 0:
            raise TypeError("bt.random Generator.shuffle: x must be at least 1-dimensional")
        axis = np.lib.array_utils.normalize_axis_index(axis, nd)
        x[...] = function_call(np.take, (x, self._perm(d, _shape(x)[axis])), {"axis": axis})
        return None

    def _perm(self, d: _Draw, n: int, stream: int = 0):
        """A uniformly random permutation of ``range(n)``: argsort of 64-bit random keys."""
        return np.argsort(d.raw64((n,), stream), kind="stable")

    def choice(self, a, size=None, replace=True, p=None, axis=0, shuffle=True):
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
    def binomial(self, n, p, size=None):
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
            # Trial j of an element always uses the same Philox words (block j // 2), so an
            # example's count does not depend on the largest n in the batch.
            w = d.words(shape, 2 * t, first_block=t0 // 2)
            u = d.wrap(_u53(w[..., 0::2], w[..., 1::2]))
            trial = d._arange(t).astype(np.int64) + t0
            c = np.sum((u < pe) & (trial < ne), axis=-1, dtype=np.int64)
            count = c if count is None else count + c
        return _finish(count, size)


def _no_out(method: str, out) -> None:
    if out is not None:
        raise TypeError(f"bt.random Generator.{method}: out= is not supported inside vmap; "
                        f"use the returned value")


def _float_dtype(method: str, dtype):
    dt = np.dtype(dtype)
    if dt not in (np.float64, np.float32):
        raise TypeError(f"bt.random Generator.{method}: unsupported dtype {dt} (float32 or "
                        f"float64)")
    return dt


def _cmp(op, v, bound):
    """``op(v, bound)`` on every example of ``v`` (its physical root)."""
    return op(innermost(v), bound) if hasattr(v, "shape") else op(v, bound)


def _as_u64(v):
    """Integers as uint64 (two's complement): a Python int stays an int."""
    if isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)):
        return int(v) % 2**64
    if not hasattr(v, "dtype"):
        v = np.asarray(v)
    if v.dtype.kind == "u" or v.dtype == np.bool_:
        return v.astype(np.uint64)
    return v.astype(np.int64).astype(np.uint64)


def default_rng(seed: Any = None) -> Generator:
    """A batch-aware generator: ``numpy.random.default_rng(seed)`` wrapped (see the module).

    ``seed`` is anything ``numpy.random.default_rng`` takes (None, an int, a SeedSequence, a
    BitGenerator, a Generator), or a ``bt.random.Generator`` (returned unchanged).
    """
    if isinstance(seed, Generator):
        return seed
    return Generator(np.random.default_rng(seed))
