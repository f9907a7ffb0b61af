"""Helpers for writing ``sample_inputs`` generators: random arrays of every dtype family,
standard edge-case shapes, non-contiguous arrays, ``out=`` variants."""

from __future__ import annotations

import warnings

import numpy as np

from .core import SampleInput

FLOAT = (np.float64, np.float32)
INT = (np.int64, np.int32, np.uint8)
COMPLEX = (np.complex128,)
BOOL = (np.bool_,)
NUMERIC = FLOAT + INT
ALL = FLOAT + INT + COMPLEX + BOOL

#: per-example shapes that hit the usual edge cases: 0-d, size-0 axes, 1-d, n-d
SHAPES = [(), (0,), (5,), (3, 4), (2, 0, 3), (2, 3, 4)]
SHAPES_ND = [(5,), (3, 4), (2, 0, 3), (2, 3, 4)]  # at least 1-d


def make_array(rng: np.random.Generator, shape, dtype, *, low=None, high=None,
               noncontiguous: bool = False) -> np.ndarray:
    """A random array: floats ~ N(0, 2²) (or uniform in [low, high)), ints in [-9, 10)
    (unsigned [0, 10)), bools fair coins, complex with random real and imaginary parts."""
    dt = np.dtype(dtype)
    shape = tuple(shape)
    full = shape[:-1] + (2 * shape[-1],) if noncontiguous and shape else shape
    if dt == np.bool_:
        a = rng.random(full) < 0.5
    elif dt.kind in "iu":
        lo = (0 if dt.kind == "u" else -9) if low is None else low
        hi = 10 if high is None else high
        a = rng.integers(lo, hi, size=full).astype(dt)
    elif dt.kind == "c":
        part = dt.type(0).real.dtype
        a = (make_array(rng, full, part, low=low, high=high)
             + 1j * make_array(rng, full, part, low=low, high=high)).astype(dt)
    elif dt.kind == "f":
        if low is not None or high is not None:
            a = rng.uniform(-5 if low is None else low, 5 if high is None else high, size=full)
        else:
            a = rng.normal(scale=2.0, size=full)
        a = a.astype(dt)
    else:
        raise TypeError(f"make_array: unsupported dtype {dt}")
    a = np.asarray(a)
    if noncontiguous and shape:
        a = a[..., ::2]
    return a


def with_nans(rng: np.random.Generator, a: np.ndarray, frac: float = 0.2) -> np.ndarray:
    """A float copy of ``a`` with some NaNs (and an inf) at random places."""
    a = np.array(a)
    if a.dtype.kind in "fc" and a.size:
        mask = rng.random(a.shape) < frac
        a[mask] = np.nan
        if a.size > 2:
            a.flat[rng.integers(a.size)] = np.inf
    return a


def spd(rng: np.random.Generator, n: int, dtype=np.float64, batch=()) -> np.ndarray:
    """A symmetric (Hermitian) positive definite matrix, well conditioned."""
    a = make_array(rng, batch + (n, n), dtype)
    return (a @ np.conj(np.swapaxes(a, -1, -2)) + n * np.eye(n, dtype=dtype)).astype(dtype)


def well_conditioned(rng: np.random.Generator, n: int, dtype=np.float64, batch=()) -> np.ndarray:
    """A square matrix far from singular (diagonally dominant)."""
    a = make_array(rng, batch + (n, n), dtype, low=-1, high=1)
    return (a + (2 * n) * np.eye(n, dtype=dtype)).astype(dtype)


def is_float(dtype) -> bool:
    return np.dtype(dtype).kind in "fc"


#: the loop_reason of ``out=`` samples of ops without a vectorised out= (a rare argument)
OUT_LOOP = ("out= without a vectorised path: the per-example loop writes each example's "
            "result into its example of out")


def out_variant(op, cases):
    """Samples of ``op(*args, out=o, **kwargs)`` for each ``(args, kwargs, name)`` that
    ``cases(rng, dtype)`` yields: ``o`` is drawn from ``rng`` with the shape and dtype of the
    op's result for these arguments. ``out`` comes first among the keywords, so the OpInfo's
    ``inplace`` is the number of leaves in ``args``."""
    def gen(rng, dtype):
        for args, kwargs, name in cases(rng, dtype):
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                res = np.asarray(op(*args, **kwargs))
            out = make_array(rng, res.shape, res.dtype)
            yield SampleInput(args, {"out": out, **kwargs}, f"{name}, out=")
    return gen
