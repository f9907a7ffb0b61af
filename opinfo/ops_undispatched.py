"""Array arguments NumPy's dispatchers leave out (``batchtensor/undispatched.py``): each op
looks its function up in ``numpy`` when called, as user code does, so that under vmap it meets
the wrapper that hands a batched value in such a parameter to the dispatcher. The sweep's
combinations batch that argument alone (the first argument plain) as well as with the others;
NumPy's own function, without the wrapper, would convert it or write it into an array it made.
"""

from __future__ import annotations

import numpy as np

from batchtensor.undispatched import ORIGINALS, UNDISPATCHED

from .core import OpInfo, SampleInput
from .samples import make_array, with_nans

S = SampleInput
F64 = np.float64


def _through_numpy(dotted: str):
    mod, _, name = dotted.rpartition(".")

    def call(*args, **kwargs):
        return getattr(getattr(np, mod) if mod else np, name)(*args, **kwargs)

    call.__name__ = f"{name}.through_numpy"
    return call


def _take(rng, dtype):
    a = lambda *s: make_array(rng, s, dtype)  # noqa: E731
    yield S((a(3, 4), rng.integers(0, 12, size=5)), {}, "flat indices")
    yield S((a(3, 4), rng.integers(-4, 4, size=(2, 2))), {"axis": 1}, "axis=1, negative")
    yield S((a(5), rng.integers(0, 9, size=3)), {"mode": "clip"}, "mode=clip")
    yield S((a(5), rng.integers(-7, 7, size=3)), {"mode": "wrap"}, "mode=wrap")
    yield S((a(5), rng.integers(0, 5, size=())), {}, "0-d index")
    yield S((a(3, 4), rng.integers(0, 12, size=2)), {"mode": None}, "mode=None (raise)")
    yield S((a(5), rng.integers(-7, 7, size=3)), {"mode": 0}, "mode=0 (clip)")
    yield S((a(5), rng.integers(0, 5, size=3)), {"mode": "r"}, "mode='r' (ValueError)")
    yield S((a(5), rng.integers(5, 9, size=2)), {}, "out of bounds (IndexError)")


def _full_like(rng, dtype):
    a = lambda *s: make_array(rng, s, dtype)  # noqa: E731
    yield S((a(3, 4), a()), {}, "0-d fill")
    yield S((a(3, 4), a(4)), {}, "fill broadcast")
    yield S((a(2, 3), a(3)), {"dtype": np.float32, "order": "F"}, "dtype= order=")
    yield S((a(2, 3), a(2)), {"shape": (3, 2)}, "shape=")
    yield S((a(2, 3), a(2)), {}, "fill does not broadcast (ValueError)")
    yield S((a(4), a(1, 1, 4)), {}, "fill with leading unit axes")
    yield S((a(4), a(4, 4)), {}, "fill of a higher rank (ValueError)")
    # a prototype that is no argument of vmap's (unbatched at every level of a nested run):
    # the result is batched wherever the fill is
    proto = [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    yield S((proto, a()), {}, "list prototype")
    yield S((proto, a(3)), {"order": "F"}, "list prototype, fill broadcast, order=F")
    yield S((proto, a(2, 1)), {"shape": (4, 2, 3), "dtype": np.int32}, "list prototype, shape=")


def _full(rng, dtype):
    yield S(((2, 3), make_array(rng, (), dtype)), {}, "0-d fill")
    yield S(((2, 3), make_array(rng, (3,), dtype)), {"order": "F"}, "fill broadcast, order=F")
    yield S(((2, 3), make_array(rng, (3,), dtype)), {"dtype": np.float32}, "dtype=")


def _nan_where(rng, dtype):
    x = with_nans(rng, make_array(rng, (3, 4), dtype))
    yield S((x, 1), {"where": rng.random((3, 4)) < 0.7}, "where=")
    yield S((with_nans(rng, make_array(rng, (3, 4), dtype)),), {"where": rng.random(4) < 0.7},
            "where= broadcast")


def _nan_mean(rng, dtype):
    x = with_nans(rng, make_array(rng, (4, 5), dtype))
    yield S((x, 1), {"mean": np.nanmean(x, axis=1, keepdims=True)}, "mean= of the example")
    yield S((with_nans(rng, make_array(rng, (4, 5), dtype)),),
            {"axis": 0, "ddof": 1, "mean": make_array(rng, (1, 5), F64)}, "mean= of another")


def _select(rng, dtype):
    a = lambda *s: make_array(rng, s, dtype)  # noqa: E731
    yield S(([rng.random((3, 4)) < 0.3, rng.random((3, 4)) < 0.5], [a(3, 4), a(3, 4)], a()),
            {}, "0-d default")
    yield S(([rng.random(4) < 0.5], [a(4)]), {"default": a(4)}, "default= keyword")


def _nan_to_num(rng, dtype):
    x = np.array([np.nan, np.inf, -np.inf, 1.5, -2.0], dtype=dtype)
    x = x * make_array(rng, (5,), dtype, low=1, high=2)
    yield S((x,), {"nan": make_array(rng, (), dtype)}, "nan=")
    yield S((x,), {"posinf": make_array(rng, (), dtype), "neginf": make_array(rng, (), dtype)},
            "posinf= neginf=")


def _interp(rng, dtype):
    x, xp = np.array([-1.0, 0.25, 0.5, 2.0]), np.array([0.0, 0.5, 1.0])
    fp = make_array(rng, (3,), dtype)
    yield S((x, xp, fp, make_array(rng, (), dtype)), {}, "left")
    yield S((x, xp, fp), {"right": make_array(rng, (), dtype)}, "right=")
    yield S((x, xp, fp), {"period": make_array(rng, (), dtype, low=1.5, high=3)}, "period=",
            loop_reason="a batched period: the per-example loop (rare)")


def _repeat(rng, dtype):
    loop = "batched repeats: the per-example loop (the results' shapes may differ)"
    yield S((make_array(rng, (3,), dtype), np.array(2)), {}, "0-d repeats", loop_reason=loop)
    yield S((make_array(rng, (2, 3), dtype), rng.permutation(np.array([1, 0, 2]))), {"axis": 1},
            "repeats per element, summing to the same", loop_reason=loop)


def _pad(rng, dtype):
    a = lambda *s: make_array(rng, s, dtype)  # noqa: E731
    yield S((a(3, 4), 1), {"constant_values": a()}, "constant_values=")
    yield S((a(3, 4), ((1, 0), (0, 2))), {"constant_values": a(2, 2)},
            "constant_values per side")
    yield S((a(5), 2), {"mode": "linear_ramp", "end_values": a()}, "end_values=",
            loop_reason="a batched end_values: the per-example loop (rare)")
    yield S((a(3, 4), np.array(1)), {}, "pad_width as an array",
            loop_reason="a batched pad_width decides the shape: the per-example loop (rare)")


def _pinv(rng, dtype):
    yield S((make_array(rng, (3, 4), dtype), make_array(rng, (), F64, low=0, high=0.5)), {},
            "rcond")
    yield S((make_array(rng, (2, 3, 4), dtype),), {"rtol": make_array(rng, (2,), F64, low=0,
                                                                         high=0.5)}, "rtol=")


def _matrix_rank(rng, dtype):
    low = make_array(rng, (4, 2), dtype) @ make_array(rng, (2, 4), dtype)
    yield S((low, make_array(rng, (), F64, low=0, high=3)), {}, "tol")
    yield S((make_array(rng, (3, 4), dtype),), {"rtol": make_array(rng, (), F64, low=0,
                                                                     high=0.8)}, "rtol=")


_SAMPLES = {  # name -> (samples, dtypes, path)
    "take": (_take, (np.float64, np.int64), "rule"),
    "full": (_full, (np.float64, np.int32), "rule"),
    "full_like": (_full_like, (np.float64, np.int64), "rule"),
    "nanmean": (_nan_where, (np.float64,), "boxed"),
    "nanstd": (lambda rng, dt: (*_nan_where(rng, dt), *_nan_mean(rng, dt)), (np.float64,),
               "boxed"),
    "nanvar": (lambda rng, dt: (*_nan_where(rng, dt), *_nan_mean(rng, dt)), (np.float64,),
               "boxed"),
    "select": (_select, (np.float64, np.int32), "decomposition"),
    "nan_to_num": (_nan_to_num, (np.float64,), "loop"),
    "interp": (_interp, (np.float64,), "rule"),
    "repeat": (_repeat, (np.float64,), "rule"),
    "pad": (_pad, (np.float64, np.int32), "rule"),
    "linalg.pinv": (_pinv, (np.float64,), "rule"),
    "linalg.matrix_rank": (_matrix_rank, (np.float64,), "rule"),
}
_LOOP = {"nan_to_num": "a batched nan= / posinf= / neginf=: the per-example loop (rare)"}

OPS = [OpInfo(f"{name}.through_numpy", _through_numpy(name), samples, path, dtypes=dtypes,
              covers=ORIGINALS[name], loop_reason=_LOOP.get(name), rtol=1e-6, atol=1e-9)
       for name, (samples, dtypes, path) in _SAMPLES.items()]
assert set(_SAMPLES) == set(UNDISPATCHED), "every intercepted function needs samples here"
