"""Polynomials: poly polyadd polyder polydiv polyfit polyint polymul polysub polyval roots
vander. Coefficient arrays are 1-D (0-d ones act as length 1); leading zeros are trimmed by
polymul / roots (data-dependent lengths: every example here keeps as many)."""

from __future__ import annotations

import numpy as np

from .core import OpInfo, SampleInput
from .samples import make_array

NESTED_EIGVALS = ("np.linalg.eigvals on an outer level's BatchedTensor needs the linalg "
                  "family's rule; the inner level is vectorised")
_TOL = dict(rtol=1e-7, atol=1e-9, rtol32=1e-4, atol32=1e-4)


def _c(rng, n, dtype, **kw):
    """Coefficients with a nonzero leading coefficient."""
    a = make_array(rng, (n,), dtype, **kw)
    if n and np.dtype(dtype).kind in "iu":
        a[0] = rng.integers(1, 5)
    elif n:
        a[0] = rng.uniform(1, 3)
    return a


def addsub_samples(rng, dtype):
    for n1, n2 in [(3, 3), (2, 5), (5, 2), (1, 4), (0, 3)]:
        yield SampleInput((make_array(rng, (n1,), dtype), make_array(rng, (n2,), dtype)), {},
                          f"lengths {n1}, {n2}")
    yield SampleInput((make_array(rng, (), dtype), make_array(rng, (3,), dtype)), {}, "0-d a1")
    yield SampleInput((make_array(rng, (4,), dtype), make_array(rng, (2,), np.float32)), {},
                      "mixed dtypes")
    yield SampleInput((make_array(rng, (6,), dtype, noncontiguous=True),
                       make_array(rng, (3,), dtype)), {}, "non-contiguous")


def polyval_samples(rng, dtype):
    yield SampleInput((make_array(rng, (4,), dtype), make_array(rng, (5,), dtype)), {}, "1-d x")
    yield SampleInput((make_array(rng, (3,), dtype), make_array(rng, (2, 3), dtype)), {}, "2-d x")
    yield SampleInput((make_array(rng, (1,), dtype), make_array(rng, (3,), dtype)), {},
                      "constant")
    yield SampleInput((make_array(rng, (3,), dtype), make_array(rng, (), dtype)), {}, "0-d x")
    yield SampleInput((make_array(rng, (3,), dtype), make_array(rng, (0,), dtype)), {},
                      "size-0 x")
    yield SampleInput((make_array(rng, (4,), dtype), 1.5), {}, "Python float x")
    yield SampleInput((make_array(rng, (3,), dtype), make_array(rng, (4,), np.float32)), {},
                      "float32 x")
    yield SampleInput((make_array(rng, (0,), dtype), make_array(rng, (3,), dtype)), {},
                      "no coefficients", loop_reason="np.polyval with no coefficients")
    yield SampleInput((make_array(rng, (5,), dtype, noncontiguous=True),
                       make_array(rng, (4,), dtype, noncontiguous=True)), {}, "non-contiguous")


def polyder_samples(rng, dtype):
    p = make_array(rng, (5,), dtype)
    for m in (0, 1, 2, 4, 6):
        yield SampleInput((p,), {"m": m}, f"m={m}")
    yield SampleInput((make_array(rng, (0,), dtype),), {}, "empty")
    yield SampleInput((make_array(rng, (3,), dtype),), {"m": -1}, "m < 0 (ValueError)")


def polyint_samples(rng, dtype):
    p = make_array(rng, (4,), dtype)
    for m in (0, 1, 3):
        yield SampleInput((p,), {"m": m}, f"m={m}")
    # NumPy dispatches polyint on p only: a batched k with an unbatched p never reaches the
    # rule (NumPy's own code runs), so k is static here.
    yield SampleInput((p,), {"m": 2, "k": [1.0, -2.0]}, "k of length m")
    yield SampleInput((p,), {"m": 3, "k": 0.5}, "scalar k")
    yield SampleInput((p,), {"m": 1, "k": [3]}, "integer k")
    yield SampleInput((make_array(rng, (0,), dtype),), {}, "empty")
    yield SampleInput((p,), {"m": 3, "k": [1.0, 2.0]}, "k too short")
    yield SampleInput((p,), {"m": -1}, "m < 0 (ValueError)")


def polymul_samples(rng, dtype):
    for n1, n2 in [(3, 3), (2, 5), (1, 4)]:
        yield SampleInput((_c(rng, n1, dtype), _c(rng, n2, dtype)), {}, f"lengths {n1}, {n2}")
    a = _c(rng, 4, dtype)
    a[0], a[1] = 0, 1 + abs(a[1])
    yield SampleInput((a, _c(rng, 3, dtype)), {}, "a leading zero in every example")
    yield SampleInput((make_array(rng, (0,), dtype), _c(rng, 3, dtype)), {}, "empty a1 -> [0]")
    yield SampleInput((np.zeros(3, dtype) * _c(rng, 3, dtype), _c(rng, 2, dtype)), {},
                      "all-zero a1 -> [0]")
    yield SampleInput((np.asarray(_c(rng, 1, dtype)[0]), _c(rng, 3, dtype)), {}, "0-d a1")


def polydiv_samples(rng, dtype):
    for n1, n2 in [(5, 2), (4, 4), (3, 1), (2, 4)]:
        yield SampleInput((_c(rng, n1, dtype), _c(rng, n2, dtype)), {}, f"lengths {n1}, {n2}")
    v = _c(rng, 2, dtype)
    if np.dtype(dtype).kind == "f":
        # u = v * (x - 2) exactly representable: the remainder is trimmed to one zero
        u = np.convolve(v, [1.0, -2.0]).astype(dtype)
        yield SampleInput((u, v), {}, "exact division: remainder trimmed")
    yield SampleInput((make_array(rng, (0,), dtype), v), {}, "empty u (IndexError)")


def polyfit_samples(rng, dtype):
    x = np.linspace(-1, 2, 7).tolist()
    y = make_array(rng, (7,), dtype)
    yield SampleInput((x, y, 2), {}, "deg=2")
    yield SampleInput((x, make_array(rng, (7, 3), dtype), 1), {}, "2-d y")
    yield SampleInput((x, y, 3), {"full": True}, "full=True")
    yield SampleInput((x, make_array(rng, (7, 2), dtype), 2), {"full": True}, "full, 2-d y")
    yield SampleInput((x, y, 2), {"w": np.linspace(0.5, 1.5, 7).tolist()}, "w=")
    yield SampleInput((x, y, 2), {"cov": True}, "cov=True")
    yield SampleInput((x, make_array(rng, (7, 2), dtype), 1), {"cov": True}, "cov, 2-d y")
    yield SampleInput((x, y, 2), {"cov": "unscaled"}, "cov=unscaled")
    yield SampleInput((x, y, 1), {"rcond": 1e-3}, "rcond=")
    yield SampleInput((x[:3], y[:3], 3), {"cov": True}, "too few points for cov (ValueError)")
    yield SampleInput((x, y, -1), {}, "deg < 0 (ValueError)")
    yield SampleInput((x, make_array(rng, (), dtype), 1), {}, "0-d y (TypeError)")
    yield SampleInput((make_array(rng, (7,), dtype), y, 2), {}, "batched x",
                      loop_reason="np.polyfit with a batched x or w")
    yield SampleInput((x, y, 2), {"w": make_array(rng, (7,), dtype, low=0.5, high=1.5)},
                      "batched w", loop_reason="np.polyfit with a batched x or w")


def roots_samples(rng, dtype):
    for n in (2, 3, 5):
        yield SampleInput((_c(rng, n, dtype),), {}, f"degree {n - 1}")
    p = _c(rng, 5, dtype)
    p[:2] = 0
    p[2] = 1 + abs(p[2])
    yield SampleInput((p,), {}, "two leading zeros")
    p = _c(rng, 5, dtype)
    p[-2:] = 0
    yield SampleInput((p,), {}, "two trailing zeros (zero roots)")
    yield SampleInput((_c(rng, 1, dtype),), {}, "constant: no roots")
    yield SampleInput((make_array(rng, (2, 2), dtype),), {}, "2-d (ValueError)")


def real_roots_samples(rng, dtype):
    """Polynomials with real roots only: (x - r1)(x - r2)(x - r3) with distinct r."""
    r = np.sort(rng.uniform(-3, 3, 3)) + np.array([0, 1, 2])
    yield SampleInput((np.poly(r).astype(dtype),), {}, "three real roots")


def poly_samples(rng, dtype):
    yield SampleInput((make_array(rng, (3,), dtype),), {}, "roots")
    yield SampleInput((make_array(rng, (1,), dtype),), {}, "one root")
    # (0-d and size-0 inputs: NumPy's dispatcher for poly iterates its argument, so a 0-d
    # BatchedTensor raises TypeError and a size-0 one is not dispatched at all)
    yield SampleInput((make_array(rng, (2, 3), dtype),), {}, "2-d non-square (ValueError)")
    if np.dtype(dtype).kind == "c":
        z = make_array(rng, (2,), dtype)
        yield SampleInput((np.concatenate([z, np.conj(z)]),), {}, "conjugate pairs -> real")


def poly_matrix_samples(rng, dtype):
    yield SampleInput((make_array(rng, (3, 3), dtype),), {}, "characteristic polynomial")
    s = make_array(rng, (3, 3), dtype)
    yield SampleInput((s + s.T,), {}, "symmetric: real eigenvalues")


def vander_samples(rng, dtype):
    x = make_array(rng, (4,), dtype)
    yield SampleInput((x,), {}, "square")
    yield SampleInput((x,), {"N": 2}, "N=2")
    yield SampleInput((x,), {"N": 6, "increasing": True}, "N=6 increasing")
    yield SampleInput((x,), {"N": 1}, "N=1")
    yield SampleInput((x,), {"N": 0}, "N=0")
    yield SampleInput((make_array(rng, (0,), dtype),), {}, "empty")
    yield SampleInput((make_array(rng, (6,), dtype, noncontiguous=True),), {"N": 3},
                      "non-contiguous")
    yield SampleInput((make_array(rng, (2, 2), dtype),), {}, "2-d (ValueError)")
    yield SampleInput((x,), {"N": -1}, "N < 0 (ValueError)")


F = (np.float64, np.float32)
OPS = [
    OpInfo("polyadd", np.polyadd, addsub_samples, "rule", dtypes=(np.float64, np.int64)),
    OpInfo("polysub", np.polysub, addsub_samples, "rule", dtypes=(np.complex128, np.int32)),
    OpInfo("polyval", np.polyval, polyval_samples, "rule", dtypes=(np.float64, np.int64),
           **_TOL),
    OpInfo("polyder", np.polyder, polyder_samples, "rule", dtypes=(np.float32, np.int64)),
    OpInfo("polyint", np.polyint, polyint_samples, "rule", dtypes=(np.float64, np.int64)),
    OpInfo("polymul", np.polymul, polymul_samples, "rule", dtypes=(np.float64, np.int64),
           **_TOL),
    OpInfo("polydiv", np.polydiv, polydiv_samples, "rule", dtypes=(np.float64, np.complex128),
           **_TOL),
    OpInfo("polyfit", np.polyfit, polyfit_samples, "rule", dtypes=(np.float64,),
           rtol=1e-6, atol=1e-8),
    OpInfo("roots", np.roots, roots_samples, "rule", dtypes=(np.complex128,),
           skip_nested=NESTED_EIGVALS, rtol=1e-6, atol=1e-8),
    OpInfo("roots.real", np.roots, real_roots_samples, "rule", dtypes=(np.float64, np.int64),
           skip_nested=NESTED_EIGVALS, rtol=1e-6, atol=1e-8),
    OpInfo("poly", np.poly, poly_samples, "rule", dtypes=(np.float64, np.int64, np.complex128),
           **_TOL),
    OpInfo("poly.matrix", np.poly, poly_matrix_samples, "rule", dtypes=(np.float64,),
           skip_nested=NESTED_EIGVALS, rtol=1e-6, atol=1e-8),
    OpInfo("vander", np.vander, vander_samples, "rule", dtypes=(np.float64, np.int32, np.bool_)),
]
