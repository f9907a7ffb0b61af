"""scipy.ndimage filters (rules: batchtensor/rules/scipy_ndimage.py): per-axis arguments
(sigma, size, mode, origin, radius as sequences), axes= (an int, a tuple, negative), footprint
and weights given as lists (unbatched) or arrays (batched ones run per example), output= a
dtype, integer inputs (rounded results), 0-d and size-0 inputs, SciPy's own errors."""

from __future__ import annotations

import numpy as np

from .core import SampleInput
from .samples import make_array

try:
    from scipy import ndimage
except ImportError:  # scipy is an optional extra
    ndimage = None

_TOL = dict(rtol=1e-9, atol=1e-10, rtol32=1e-4, atol32=1e-4)
FOOT = [[True, False, True], [False, True, True]]


def _x(rng, shape, dtype, **kw):
    return make_array(rng, shape, dtype, **kw)


def _common(rng, dtype, name):
    yield SampleInput((_x(rng, (7,), dtype),), {}, "1-d")
    yield SampleInput((_x(rng, (5, 6), dtype),), {}, "2-d")
    yield SampleInput((_x(rng, (3, 4, 5), dtype),), {"mode": "nearest"}, "3-d nearest")
    yield SampleInput((_x(rng, (5, 6), dtype),), {"axes": (0,)}, "axes=(0,)")
    yield SampleInput((_x(rng, (3, 4, 5), dtype),), {"axes": (-1, 0)}, "axes=(-1, 0)")
    yield SampleInput((_x(rng, (5, 6), dtype),), {"mode": ["wrap", "mirror"]},
                      "a mode per axis")
    yield SampleInput((_x(rng, (5, 6), dtype),), {"mode": "constant", "cval": 1.5},
                      "constant cval")
    yield SampleInput((_x(rng, (5, 6), dtype, noncontiguous=True),), {}, "non-contiguous")
    yield SampleInput((_x(rng, (5, 6), dtype),), {"output": np.float32}, "output= a dtype")
    yield SampleInput((_x(rng, (5, 6), dtype),), {"axes": (0, 2)}, "axes out of range")
    yield SampleInput((_x(rng, (5, 6), dtype),), {"axes": (1, 1)}, "repeated axes")
    yield SampleInput((_x(rng, (5, 6), dtype),), {"mode": "bogus"}, "bad mode")


def gaussian_samples(rng, dtype):
    for s in _common(rng, dtype, "gaussian_filter"):
        yield SampleInput(s.args + (1.2,), s.kwargs, s.name)
    yield SampleInput((_x(rng, (5, 6), dtype), [0.5, 1.5]), {}, "a sigma per axis")
    yield SampleInput((_x(rng, (5, 6), dtype), 1.0), {"order": [0, 1]}, "order per axis")
    yield SampleInput((_x(rng, (5, 6), dtype), 2.0), {"radius": [1, 2], "axes": (1, 0)},
                      "radius per axis")
    yield SampleInput((_x(rng, (5, 6), dtype), 2.0), {"truncate": 1.0}, "truncate")
    yield SampleInput((_x(rng, (5, 6), dtype), [0.0, 1.0]), {}, "sigma 0 on one axis")
    yield SampleInput((_x(rng, (), dtype), 1.0), {}, "0-d")
    yield SampleInput((_x(rng, (0, 4), dtype), 1.0), {}, "size-0")
    yield SampleInput((_x(rng, (5, 6), dtype), [1.0, 2.0, 3.0]), {}, "too many sigmas")


def size_samples(rng, dtype):
    for s in _common(rng, dtype, "size"):
        yield SampleInput(s.args, {"size": 3, **s.kwargs}, s.name)
    yield SampleInput((_x(rng, (5, 6), dtype),), {"size": (2, 3), "origin": (0, -1)},
                      "size and origin per axis")
    yield SampleInput((_x(rng, (), dtype),), {"size": 3}, "0-d")
    yield SampleInput((_x(rng, (0, 4), dtype),), {"size": 2}, "size-0")


def footprint_samples(rng, dtype):
    yield from size_samples(rng, dtype)
    yield SampleInput((_x(rng, (5, 6), dtype),), {"footprint": FOOT}, "footprint")
    yield SampleInput((_x(rng, (3, 5, 6), dtype),), {"footprint": FOOT, "axes": (0, 2)},
                      "footprint over axes")
    yield SampleInput((_x(rng, (5, 6), dtype),), {"footprint": _x(rng, (2, 2), np.bool_)},
                      "footprint an array", loop_reason="a batched footprint")


def rank_samples(arg):
    def gen(rng, dtype):
        for s in footprint_samples(rng, dtype):
            yield SampleInput(s.args + (arg,), s.kwargs, s.name, loop_reason=s.loop_reason)
    return gen


def weights_samples(rng, dtype):
    w = [[1.0, -2.0, 0.5], [0.25, 1.0, 2.0]]
    for s in _common(rng, dtype, "weights"):
        ws = [1.0, 2.0, -1.0] if s.kwargs.get("axes") == (0,) else w
        if s.kwargs.get("axes") == (-1, 0):
            ws = w
        if len(s.args[0].shape) == 1:
            ws = [1.0, 2.0, -1.0]
        elif len(s.args[0].shape) == 3 and "axes" not in s.kwargs:
            ws = [w, w]
        yield SampleInput(s.args + (ws,), s.kwargs, s.name)
    yield SampleInput((_x(rng, (5, 6), dtype), w), {"origin": [0, 1]}, "origin per axis")
    yield SampleInput((_x(rng, (5, 6), dtype), _x(rng, (2, 3), np.float64)), {},
                      "weights an array", loop_reason="batched weights")
    yield SampleInput((_x(rng, (5, 6), dtype), [1.0, 2.0]), {}, "weights of another rank")


def laplace_samples(rng, dtype):
    yield from _common(rng, dtype, "laplace")
    yield SampleInput((_x(rng, (), dtype),), {}, "0-d")


def sigma_samples(rng, dtype):
    for s in _common(rng, dtype, "gaussian_laplace"):
        yield SampleInput(s.args + (1.0,), s.kwargs, s.name)
    yield SampleInput((_x(rng, (5, 6), dtype), [0.7, 1.3]), {"truncate": 2.0},
                      "a sigma per axis, truncate")


def filter1d_samples(first):
    def gen(rng, dtype):
        yield SampleInput((_x(rng, (7,), dtype), first), {}, "1-d")
        yield SampleInput((_x(rng, (5, 6), dtype), first), {"axis": 0}, "axis=0")
        yield SampleInput((_x(rng, (3, 4, 5), dtype), first), {"axis": -2, "mode": "wrap"},
                          "a middle axis, wrap")
        yield SampleInput((_x(rng, (5, 6), dtype), first), {"mode": "constant", "cval": -1.0},
                          "constant")
        yield SampleInput((_x(rng, (5, 6), dtype, noncontiguous=True), first), {},
                          "non-contiguous")
        yield SampleInput((_x(rng, (5, 6), dtype), first), {"output": np.float64},
                          "output= a dtype")
        yield SampleInput((_x(rng, (0, 3), dtype), first), {}, "size-0")
        yield SampleInput((_x(rng, (), dtype), first), {}, "0-d: no axis -1")
        yield SampleInput((_x(rng, (5, 6), dtype), first), {"axis": 2}, "axis out of range")
    return gen


OPS = []
if ndimage is not None:
    from .foreign import foreign_op

    F = (np.float64, np.float32)
    OPS = [
        foreign_op(ndimage, "gaussian_filter", gaussian_samples,
                   dtypes=F + (np.int64, np.complex128), **_TOL),
        foreign_op(ndimage, "uniform_filter", size_samples, dtypes=F + (np.int64,), **_TOL),
        foreign_op(ndimage, "median_filter", footprint_samples, dtypes=F + (np.int64,),
                   **_TOL),
        foreign_op(ndimage, "maximum_filter", footprint_samples, dtypes=(np.float64, np.uint8),
                   **_TOL),
        foreign_op(ndimage, "minimum_filter", footprint_samples, dtypes=(np.float32, np.int64),
                   **_TOL),
        foreign_op(ndimage, "percentile_filter", rank_samples(30), dtypes=(np.float64,),
                   **_TOL),
        foreign_op(ndimage, "rank_filter", rank_samples(-1), dtypes=(np.int64,), **_TOL),
        foreign_op(ndimage, "convolve", weights_samples, dtypes=F + (np.complex128,), **_TOL),
        foreign_op(ndimage, "correlate", weights_samples, dtypes=(np.float64, np.int64),
                   **_TOL),
        foreign_op(ndimage, "laplace", laplace_samples, dtypes=F, **_TOL),
        foreign_op(ndimage, "gaussian_laplace", sigma_samples, dtypes=(np.float64,), **_TOL),
        foreign_op(ndimage, "gaussian_gradient_magnitude", sigma_samples,
                   dtypes=(np.float64,), **_TOL),
        foreign_op(ndimage, "gaussian_filter1d", filter1d_samples(1.1), dtypes=F, **_TOL),
        foreign_op(ndimage, "uniform_filter1d", filter1d_samples(3), dtypes=F + (np.int64,),
                   **_TOL),
        foreign_op(ndimage, "minimum_filter1d", filter1d_samples(2), dtypes=(np.float64,),
                   **_TOL),
        foreign_op(ndimage, "maximum_filter1d", filter1d_samples(3), dtypes=(np.int64,),
                   **_TOL),
        foreign_op(ndimage, "convolve1d", filter1d_samples([1.0, -2.0, 0.5]), dtypes=F,
                   **_TOL),
        foreign_op(ndimage, "correlate1d", filter1d_samples([0.5, 2.0]), dtypes=(np.float64,),
                   **_TOL),
    ]
