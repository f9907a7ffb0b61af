"""numpy.linalg: every function of the namespace (linalg.matrix_transpose is with the views).

Matrices come from ``spd`` / ``well_conditioned`` so that results are stable; singular or
indefinite ones check that vmap raises LinAlgError where the loop does. Eigenvectors and
singular vectors are compared as returned: the batched LAPACK calls run per matrix on the same
input, so they agree with the loop exactly, signs included.
"""

from __future__ import annotations

import numpy as np

from .core import OpInfo, SampleInput
from .samples import OUT_LOOP, make_array, out_variant, spd, well_conditioned

LA = np.linalg
F64, F32, I64, C128, BOOL = np.float64, np.float32, np.int64, np.complex128, np.bool_


def _is_int(dtype) -> bool:
    return np.dtype(dtype).kind in "iub"


def _wc(rng, n, dtype, batch=()):
    """A well-conditioned square matrix (integer dtypes: diagonally dominant integers)."""
    if _is_int(dtype):
        a = make_array(rng, batch + (n, n), dtype, low=-2, high=3)
        return (a + 9 * np.eye(n, dtype=dtype)).astype(dtype)
    return well_conditioned(rng, n, dtype, batch)


def _spd(rng, n, dtype, batch=()):
    if _is_int(dtype):
        return spd(rng, n, np.float64, batch).round().astype(dtype) + 2 * n * np.eye(n, dtype=dtype)
    return spd(rng, n, dtype, batch)


def _errors_1d(rng, dtype, *rest, **kw):
    yield SampleInput((make_array(rng, (3,), dtype),) + rest, kw, "1-d raises")
    yield SampleInput((make_array(rng, (), dtype),) + rest, kw, "0-d raises")


# ---- square-matrix ops --------------------------------------------------------------------------
def square_samples(*, kw_variants=({},), square_only=True, empty=True):
    def gen(rng, dtype):
        for kw in kw_variants:
            yield SampleInput((_wc(rng, 3, dtype),), dict(kw), f"3x3 {kw}")
        yield SampleInput((_wc(rng, 3, dtype, (2,)),), {}, "stack (2,3,3)")
        yield SampleInput((_wc(rng, 2, dtype, (2, 1)),), {}, "stack (2,1,2,2)")
        a = _wc(rng, 3, dtype)
        yield SampleInput((a.T,), {}, "transposed (F-ordered) input")
        if empty:
            yield SampleInput((make_array(rng, (0, 0), dtype),), {}, "0x0")
        if square_only:
            yield SampleInput((make_array(rng, (3, 4), dtype),), {}, "non-square raises")
        yield from _errors_1d(rng, dtype)
    return gen


def inv_samples(rng, dtype):
    yield from square_samples()(rng, dtype)
    yield SampleInput((_singular(rng, dtype),), {}, "singular raises")


def _singular(rng, dtype, n=3):
    """A rank-deficient matrix (last row = first row)."""
    a = make_array(rng, (n, n), dtype)
    a[-1] = a[0]
    return a


def det_samples(rng, dtype):
    yield from square_samples()(rng, dtype)
    yield SampleInput((_singular(rng, dtype),), {}, "singular")


def cholesky_samples(rng, dtype):
    yield SampleInput((_spd(rng, 3, dtype),), {}, "spd")
    yield SampleInput((_spd(rng, 3, dtype),), {"upper": True}, "upper=True")
    yield SampleInput((_spd(rng, 2, dtype, (2,)),), {}, "stack")
    yield SampleInput((make_array(rng, (0, 0), dtype),), {}, "0x0")
    yield SampleInput((-_spd(rng, 3, dtype),), {}, "not positive definite raises")
    yield SampleInput((make_array(rng, (3, 4), dtype),), {}, "non-square raises")
    yield from _errors_1d(rng, dtype)


def eig_samples(rng, dtype):
    yield SampleInput((make_array(rng, (3, 3), dtype),), {}, "general (complex eigenvalues)")
    yield SampleInput((_spd(rng, 3, dtype),), {}, "symmetric (real eigenvalues)")
    yield SampleInput((make_array(rng, (2, 3, 3), dtype),), {}, "stack")
    yield SampleInput((np.diag(make_array(rng, (3,), dtype)),), {}, "diagonal")
    yield SampleInput((make_array(rng, (3, 4), dtype),), {}, "non-square raises")
    a = make_array(rng, (3, 3), dtype)
    yield SampleInput((a * np.array([[np.inf, 1, 1]] * 3),), {}, "inf raises")
    yield from _errors_1d(rng, dtype)


def eigh_samples(rng, dtype):
    yield SampleInput((_spd(rng, 3, dtype),), {}, "spd")
    yield SampleInput((_spd(rng, 3, dtype),), {"UPLO": "U"}, "UPLO='U'")
    yield SampleInput((make_array(rng, (3, 3), dtype),), {}, "non-symmetric (lower used)")
    yield SampleInput((_spd(rng, 2, dtype, (2,)),), {}, "stack")
    yield SampleInput((make_array(rng, (0, 0), dtype),), {}, "0x0")
    yield SampleInput((_spd(rng, 3, dtype),), {"UPLO": "X"}, "bad UPLO raises")
    yield from _errors_1d(rng, dtype)


def slogdet_samples(rng, dtype):
    yield from square_samples()(rng, dtype)
    yield SampleInput((_singular(rng, dtype),), {}, "singular: sign 0, -inf")


def matrix_power_samples(rng, dtype):
    for n in (0, 1, 2, 3, -1, -2) if not _is_int(dtype) else (0, 1, 2, 3):
        yield SampleInput((_wc(rng, 3, dtype), n), {}, f"n={n}")
    yield SampleInput((_wc(rng, 2, dtype, (2,)), 3), {}, "stack")
    yield SampleInput((make_array(rng, (3, 4), dtype), 2), {}, "non-square raises")
    yield SampleInput((_wc(rng, 3, dtype), 1.5), {}, "non-integer n raises")
    yield SampleInput((make_array(rng, (3,), dtype), 2), {}, "1-d raises")


# ---- decompositions with shapes -----------------------------------------------------------------
def svd_samples(rng, dtype):
    for shape in [(3, 4), (4, 3), (2, 3, 3)]:
        yield SampleInput((make_array(rng, shape, dtype),), {}, f"{shape}")
    yield SampleInput((make_array(rng, (4, 3), dtype),), {"full_matrices": False},
                      "full_matrices=False")
    yield SampleInput((make_array(rng, (2, 3, 4), dtype),), {"compute_uv": False},
                      "compute_uv=False")
    yield SampleInput((_spd(rng, 3, dtype),), {"hermitian": True}, "hermitian=True")
    yield SampleInput((_spd(rng, 3, dtype),), {"hermitian": True, "compute_uv": False},
                      "hermitian, no uv")
    yield SampleInput((make_array(rng, (3, 4), dtype, noncontiguous=True),), {},
                      "non-contiguous")
    yield SampleInput((make_array(rng, (0, 3), dtype),), {}, "0x3")
    yield from _errors_1d(rng, dtype)


def svdvals_samples(rng, dtype):
    for shape in [(3, 4), (4, 3), (2, 3, 3), (0, 2)]:
        yield SampleInput((make_array(rng, shape, dtype),), {}, f"{shape}")
    yield from _errors_1d(rng, dtype)


def qr_samples(rng, dtype):
    for mode in ("reduced", "complete", "r", "raw"):
        for shape in [(4, 3), (3, 4), (2, 3, 3)]:
            yield SampleInput((make_array(rng, shape, dtype), mode), {}, f"{shape} {mode}")
    yield SampleInput((make_array(rng, (2, 1, 4, 3), dtype),), {"mode": "raw"},
                      "raw, 2 loop dims")
    yield SampleInput((make_array(rng, (4, 3), dtype),), {}, "default mode")
    yield SampleInput((make_array(rng, (4, 3), dtype),), {"mode": "economic"},
                      "deprecated 'economic'")
    yield SampleInput((make_array(rng, (4, 3), dtype),), {"mode": "full"}, "deprecated 'full'")
    yield SampleInput((make_array(rng, (4, 3), dtype),), {"mode": "bad"}, "bad mode raises")
    yield from _errors_1d(rng, dtype)


# ---- solve, lstsq, pinv, matrix_rank ------------------------------------------------------------
def solve_samples(rng, dtype):
    cases = [((3,), (3,), "vector b"), ((3,), (3, 2), "matrix b"),
             ((2,), (3,), "stacked a, vector b"),
             ((2,), (2, 3, 2), "stacked a and b"), ((), (2, 3, 2), "a broadcast to b's stack"),
             ((2, 1), (3,), "a with 2 loop dims, vector b"), ((), (3, 0), "0 columns")]
    for abatch, bshape, name in cases:
        yield SampleInput((_wc(rng, 3, dtype, abatch), make_array(rng, bshape, dtype)), {}, name)
    yield SampleInput((_wc(rng, 3, dtype), make_array(rng, (3,), dtype, noncontiguous=True)),
                      {}, "non-contiguous vector b")
    yield SampleInput((_wc(rng, 1, dtype, (2,)), make_array(rng, (1,), dtype)), {},
                      "1 x 1 systems, vector b")
    yield SampleInput((_wc(rng, 3, dtype, (0,)), make_array(rng, (3,), dtype)), {},
                      "an empty stack of a, vector b")
    yield SampleInput((_wc(rng, 3, dtype, (2,)), make_array(rng, (2, 3), dtype)), {},
                      "NumPy 2: 2-d b is a matrix (raises)")
    yield SampleInput((_singular(rng, dtype), make_array(rng, (3,), dtype)), {},
                      "singular raises")
    yield SampleInput((_wc(rng, 3, dtype), make_array(rng, (4,), dtype)), {}, "mismatch raises")
    yield SampleInput((_wc(rng, 3, dtype), make_array(rng, (), dtype)), {}, "0-d b raises")
    yield SampleInput((make_array(rng, (3,), dtype), make_array(rng, (3,), dtype)), {},
                      "1-d a raises")


def lstsq_samples(rng, dtype):
    for sa, sb in [((5, 3), (5,)), ((5, 3), (5, 2)), ((3, 5), (3,)), ((3, 3), (3, 2)),
                   ((0, 3), (0,)), ((4, 0), (4,)), ((4, 2), (4, 0))]:
        yield SampleInput((make_array(rng, sa, dtype), make_array(rng, sb, dtype)), {},
                          f"{sa} {sb}")
    a = make_array(rng, (5, 3), dtype)
    a[:, 2] = a[:, 0]
    yield SampleInput((a, make_array(rng, (5,), dtype)), {}, "rank deficient: no residuals")
    for rcond in (1e-3, -1, 0, 2.0, None):
        yield SampleInput((make_array(rng, (5, 3), dtype), make_array(rng, (5,), dtype), rcond),
                          {}, f"rcond={rcond}")
    yield SampleInput((make_array(rng, (5, 3), dtype, noncontiguous=True),
                       make_array(rng, (5, 2), dtype)), {}, "non-contiguous")
    yield SampleInput((make_array(rng, (2, 5, 3), dtype), make_array(rng, (5,), dtype)), {},
                      "3-d a raises")
    yield SampleInput((make_array(rng, (5, 3), dtype), make_array(rng, (4,), dtype)), {},
                      "incompatible raises")
    yield SampleInput((make_array(rng, (5,), dtype), make_array(rng, (5,), dtype)), {},
                      "1-d a raises")


def pinv_samples(rng, dtype):
    for shape in [(3, 4), (4, 3), (2, 3, 3), (0, 3)]:
        yield SampleInput((make_array(rng, shape, dtype),), {}, f"{shape}")
    yield SampleInput((make_array(rng, (3, 4), dtype), 0.1), {}, "rcond=0.1")
    yield SampleInput((make_array(rng, (3, 4), dtype), make_array(rng, (), F64, low=0, high=0.5)),
                      {}, "rcond array (per example)")
    yield SampleInput((make_array(rng, (2, 3, 4), dtype),
                       make_array(rng, (2,), F64, low=0, high=0.5)),
                      {}, "rcond per matrix of the stack")
    yield SampleInput((make_array(rng, (3, 4), dtype),), {"rtol": None}, "rtol=None")
    yield SampleInput((make_array(rng, (3, 4), dtype),),
                      {"rtol": make_array(rng, (), F64, low=0, high=0.5)}, "rtol array")
    yield SampleInput((_spd(rng, 3, dtype),), {"hermitian": True}, "hermitian")
    yield SampleInput((make_array(rng, (3, 4), dtype), 0.1), {"rtol": 0.1}, "rcond and rtol raise")
    yield from _errors_1d(rng, dtype)


def matrix_rank_samples(rng, dtype):
    yield SampleInput((make_array(rng, (3, 4), dtype),), {}, "full rank")
    low = make_array(rng, (4, 2), dtype) @ make_array(rng, (2, 4), dtype)
    yield SampleInput((low,), {}, "rank 2")
    yield SampleInput((make_array(rng, (2, 3, 3), dtype),), {}, "stack")
    yield SampleInput((make_array(rng, (3, 4), dtype), 1.0), {}, "tol=1.0")
    yield SampleInput((make_array(rng, (3, 4), dtype), make_array(rng, (), F64, low=0, high=3)),
                      {}, "tol array (per example)")
    yield SampleInput((make_array(rng, (2, 3, 4), dtype),
                       make_array(rng, (2,), F64, low=0, high=3)),
                      {}, "tol per matrix")
    yield SampleInput((make_array(rng, (3, 4), dtype),), {"rtol": 0.3}, "rtol")
    yield SampleInput((_spd(rng, 3, dtype),), {"hermitian": True}, "hermitian")
    yield SampleInput((make_array(rng, (3,), dtype, low=0, high=2),), {}, "1-d: any nonzero")
    yield SampleInput((make_array(rng, (), dtype, low=-1, high=2),), {}, "0-d")
    yield SampleInput((make_array(rng, (0, 3), dtype),), {}, "0x3")
    yield SampleInput((make_array(rng, (3, 4), dtype), 1.0), {"rtol": 0.1}, "tol and rtol raise")


# ---- norms, cond --------------------------------------------------------------------------------
def norm_samples(rng, dtype):
    vec = make_array(rng, (5,), dtype)
    for ord in (None, 2, 1, np.inf, -np.inf, 0, 3, -1, 0.5):
        yield SampleInput((make_array(rng, (5,), dtype), ord), {}, f"vector ord={ord}")
    for ord in (None, "fro", "f", "nuc", 1, -1, 2, -2, np.inf, -np.inf):
        yield SampleInput((make_array(rng, (3, 4), dtype), ord), {}, f"matrix ord={ord}")
    x3 = (2, 3, 4)
    for kw in [{}, {"axis": 0}, {"axis": -1}, {"axis": (0, 1)}, {"axis": (2, 0), "ord": 1},
               {"axis": (-1, -2), "ord": "nuc"}, {"axis": 1, "ord": 3}, {"keepdims": True},
               {"axis": 1, "keepdims": True}, {"axis": (0, 2), "keepdims": True, "ord": -2},
               {"axis": 1.0}]:
        yield SampleInput((make_array(rng, x3, dtype),), kw, f"{x3} {kw}")
    yield SampleInput((make_array(rng, (3, 4), dtype),), {"ord": "fro", "keepdims": True},
                      "fro keepdims")
    yield SampleInput((make_array(rng, (3, 4), dtype),), {"ord": 2, "keepdims": True},
                      "2-norm keepdims, axis None")
    yield SampleInput((make_array(rng, (), dtype),), {}, "0-d")
    yield SampleInput((make_array(rng, (), dtype),), {"keepdims": True}, "0-d keepdims")
    yield SampleInput((make_array(rng, (0, 3), dtype),), {"axis": 1}, "size 0")
    yield SampleInput((make_array(rng, (3, 4), dtype, noncontiguous=True),), {}, "non-contiguous")
    yield SampleInput((make_array(rng, x3, dtype), 2), {}, "3-d with ord raises")
    yield SampleInput((make_array(rng, (), dtype), 2), {}, "0-d with ord raises")
    yield SampleInput((vec, "fro"), {"axis": 0}, "'fro' for a vector raises")
    yield SampleInput((make_array(rng, (3, 4), dtype), 3), {}, "matrix ord=3 raises")
    yield SampleInput((make_array(rng, (3, 4), dtype),), {"axis": 2}, "axis out of range")
    yield SampleInput((make_array(rng, (3, 4), dtype),), {"axis": (1, 1)}, "duplicate axes")
    yield SampleInput((make_array(rng, x3, dtype),), {"axis": (0, 1, 2)}, "3 axes raise")
    yield SampleInput((make_array(rng, x3, dtype),), {"axis": [0]}, "list axis raises")


def vector_norm_samples(rng, dtype):
    for kw in [{}, {"axis": 0}, {"axis": -1}, {"axis": (0, 2)}, {"axis": (2, 0)}, {"axis": ()},
               {"keepdims": True}, {"axis": (1, -1), "keepdims": True}, {"ord": 1},
               {"ord": np.inf, "axis": 1}, {"ord": -np.inf}, {"ord": 0}, {"ord": 3, "axis": 0},
               {"ord": -1.5}]:
        yield SampleInput((make_array(rng, (2, 3, 4), dtype),), kw, f"{kw}")
    yield SampleInput((make_array(rng, (), dtype),), {}, "0-d")
    yield SampleInput((make_array(rng, (0, 3), dtype),), {"axis": 0}, "size 0")
    yield SampleInput((make_array(rng, (2, 3), dtype),), {"axis": (0, 0)}, "duplicate raises")
    yield SampleInput((make_array(rng, (2, 3), dtype),), {"axis": 2}, "axis out of range")
    yield SampleInput((make_array(rng, (2, 3), dtype),), {"ord": "fro"}, "'fro' raises")


def matrix_norm_samples(rng, dtype):
    for ord in ("fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf):
        yield SampleInput((make_array(rng, (2, 3, 4), dtype),), {"ord": ord}, f"ord={ord}")
    yield SampleInput((make_array(rng, (3, 4), dtype),), {"keepdims": True}, "keepdims")
    yield SampleInput((make_array(rng, (3, 4), dtype),), {"ord": 3}, "bad ord raises")
    yield from _errors_1d(rng, dtype)


def cond_samples(rng, dtype):
    for p in (None, 2, -2, 1, -1, np.inf, -np.inf, "fro", "nuc"):
        yield SampleInput((_wc(rng, 3, dtype), p), {}, f"p={p}")
    yield SampleInput((_wc(rng, 3, dtype, (2,)),), {}, "stack")
    yield SampleInput((make_array(rng, (3, 4), dtype),), {}, "non-square, p=None")
    yield SampleInput((_singular(rng, dtype), 1), {}, "singular: inf")
    yield SampleInput((make_array(rng, (3, 4), dtype), 1), {}, "non-square p=1 raises")
    yield SampleInput((_wc(rng, 3, dtype), 3), {}, "bad p raises")
    yield from _errors_1d(rng, dtype)


# ---- tensor ops, multi_dot ----------------------------------------------------------------------
def tensorinv_samples(rng, dtype):
    yield SampleInput((np.reshape(_wc(rng, 6, dtype), (2, 3, 6)),), {}, "ind=2 default")
    yield SampleInput((np.reshape(_wc(rng, 6, dtype), (6, 2, 3)), 1), {}, "ind=1")
    yield SampleInput((np.reshape(_wc(rng, 4, dtype), (2, 2, 2, 2)), 2), {}, "4-d")
    yield SampleInput((np.reshape(_wc(rng, 6, dtype), (6, 6)), 1), {}, "matrix")
    yield SampleInput((make_array(rng, (2, 3, 4), dtype), 2), {}, "not square raises")
    yield SampleInput((make_array(rng, (6, 6), dtype), 0), {}, "ind=0 raises")
    yield SampleInput((make_array(rng, (0, 3), dtype), 1), {}, "size 0 raises")


def tensorsolve_samples(rng, dtype):
    yield SampleInput((np.reshape(_wc(rng, 6, dtype), (2, 3, 6)), make_array(rng, (2, 3), dtype)),
                      {}, "(2,3,6) (2,3)")
    yield SampleInput((np.reshape(_wc(rng, 6, dtype), (6, 2, 3)), make_array(rng, (6,), dtype)),
                      {}, "(6,2,3) (6,)")
    yield SampleInput((np.reshape(_wc(rng, 6, dtype), (6, 2, 3)),
                       make_array(rng, (6,), dtype, noncontiguous=True)), {}, "non-contiguous b")
    yield SampleInput((np.reshape(_wc(rng, 6, dtype), (6, 2, 3)), make_array(rng, (2, 3), dtype)),
                      {"axes": (0,)}, "axes=(0,)")
    yield SampleInput((np.reshape(_wc(rng, 4, dtype), (2, 2, 4)), make_array(rng, (2, 2), dtype)),
                      {"axes": (1, 0)}, "axes=(1, 0)")
    yield SampleInput((make_array(rng, (2, 3, 4), dtype), make_array(rng, (2, 3), dtype)), {},
                      "not square raises")
    yield SampleInput((np.reshape(_wc(rng, 6, dtype), (2, 3, 6)), make_array(rng, (2, 3), dtype)),
                      {"axes": (-1,)}, "negative axes raise")


def multi_dot_samples(rng, dtype):
    cases = [[(2, 3), (3, 4), (4, 2)], [(5, 3), (3, 1), (1, 4)], [(3,), (3, 4), (4, 2)],
             [(2, 3), (3, 4), (4,)], [(3,), (3, 4), (4,)], [(2, 3), (3, 4), (4, 5), (5, 2)],
             [(6, 2), (2, 7), (7, 3), (3, 1), (1, 4)], [(2, 3, 4), (4,)], [(3,), (3,)]]
    for shapes in cases:
        yield SampleInput(([make_array(rng, s, dtype) for s in shapes],), {}, f"{shapes}")
    yield SampleInput(([make_array(rng, s, dtype) for s in [(2, 3), (2, 3, 4), (4, 2)]],), {},
                      "3-d middle raises")
    yield SampleInput(([make_array(rng, s, dtype) for s in [(2, 3), (4, 2), (2, 2)]],), {},
                      "mismatch raises")
    yield SampleInput(([make_array(rng, (2, 3), dtype)],), {}, "one array raises")


# ---- the namespace twins ------------------------------------------------------------------------
def pair_samples(cases, errors=()):
    def gen(rng, dtype):
        for sa, sb, kw in cases:
            yield SampleInput((make_array(rng, sa, dtype), make_array(rng, sb, dtype)), dict(kw),
                              f"{sa} {sb} {kw}")
        for sa, sb, kw in errors:
            yield SampleInput((make_array(rng, sa, dtype), make_array(rng, sb, dtype)), dict(kw),
                              f"{sa} {sb} {kw} raises")
    return gen


def one_samples(cases):
    def gen(rng, dtype):
        for shape, kw in cases:
            yield SampleInput((make_array(rng, shape, dtype),), dict(kw), f"{shape} {kw}")
    return gen


_FLOATS = dict(rtol=1e-6, atol=1e-9)

OPS = [
    OpInfo("linalg.inv", LA.inv, inv_samples, "boxed", dtypes=(F64, F32, C128, I64), **_FLOATS),
    OpInfo("linalg.det", LA.det, det_samples, "boxed", dtypes=(F64, C128, I64), **_FLOATS),
    OpInfo("linalg.slogdet", LA.slogdet, slogdet_samples, "boxed", dtypes=(F64, C128),
           **_FLOATS),
    OpInfo("linalg.cholesky", LA.cholesky, cholesky_samples, "boxed", dtypes=(F64, C128),
           **_FLOATS),
    OpInfo("linalg.eig", LA.eig, eig_samples, "boxed", dtypes=(F64, C128), **_FLOATS),
    OpInfo("linalg.eigvals", LA.eigvals, eig_samples, "boxed", dtypes=(F64,), **_FLOATS),
    OpInfo("linalg.eigh", LA.eigh, eigh_samples, "boxed", dtypes=(F64, C128), **_FLOATS),
    OpInfo("linalg.eigvalsh", LA.eigvalsh, eigh_samples, "boxed", dtypes=(F64, F32), **_FLOATS),
    OpInfo("linalg.matrix_power", LA.matrix_power, matrix_power_samples, "boxed",
           dtypes=(F64, I64), **_FLOATS),
    OpInfo("linalg.svd", LA.svd, svd_samples, "boxed", dtypes=(F64, C128), **_FLOATS),
    OpInfo("linalg.svdvals", LA.svdvals, svdvals_samples, "boxed", dtypes=(F64, I64), **_FLOATS),
    OpInfo("linalg.qr", LA.qr, qr_samples, "rule", dtypes=(F64, C128), **_FLOATS),
    OpInfo("linalg.solve", LA.solve, solve_samples, "rule", dtypes=(F64, C128, I64), **_FLOATS),
    OpInfo("linalg.lstsq", LA.lstsq, lstsq_samples, "rule", dtypes=(F64, C128, F32), rtol=1e-6,
           atol=1e-8),
    # pinv / matrix_rank dispatch on their first argument only: with `a` unbatched and a batched
    # tolerance NumPy's own function runs and the conversion error is the clear answer.
    OpInfo("linalg.pinv", LA.pinv, pinv_samples, "rule", dtypes=(F64, C128), unbatched_self=True,
           **_FLOATS),
    OpInfo("linalg.matrix_rank", LA.matrix_rank, matrix_rank_samples, "rule",
           dtypes=(F64, C128, I64), unbatched_self=True),
    OpInfo("linalg.norm", LA.norm, norm_samples, "rule", dtypes=(F64, C128, I64), **_FLOATS),
    OpInfo("linalg.vector_norm", LA.vector_norm, vector_norm_samples, "rule",
           dtypes=(F64, C128, I64), **_FLOATS),
    OpInfo("linalg.matrix_norm", LA.matrix_norm, matrix_norm_samples, "boxed",
           dtypes=(F64, I64), **_FLOATS),
    OpInfo("linalg.cond", LA.cond, cond_samples, "boxed", dtypes=(F64, C128), **_FLOATS),
    OpInfo("linalg.tensorinv", LA.tensorinv, tensorinv_samples, "rule", dtypes=(F64, C128),
           **_FLOATS),
    OpInfo("linalg.tensorsolve", LA.tensorsolve, tensorsolve_samples, "rule",
           dtypes=(F64, C128), **_FLOATS),
    OpInfo("linalg.multi_dot", LA.multi_dot, multi_dot_samples, "decomposition",
           dtypes=(F64, I64), **_FLOATS),
    OpInfo("linalg.diagonal", LA.diagonal,
           one_samples([((3, 4), {}), ((3, 4), {"offset": 1}), ((2, 3, 4), {"offset": -1}),
                        ((4,), {})]), "boxed", dtypes=(F64, I64)),
    OpInfo("linalg.trace", LA.trace,
           one_samples([((3, 4), {}), ((2, 3, 3), {"offset": 1}), ((3, 4), {"dtype": F64}),
                        ((4,), {})]), "decomposition", dtypes=(F64, I64, BOOL)),
    OpInfo("linalg.matmul", LA.matmul,
           pair_samples([((3, 4), (4, 2), {}), ((4,), (2, 4, 3), {}), ((2, 3, 4), (4,), {})],
                        [((), (3,), {}), ((3, 4), (3, 4), {})]), "decomposition",
           dtypes=(F64, I64)),
    OpInfo("linalg.outer", LA.outer,
           pair_samples([((3,), (4,), {}), ((0,), (2,), {})], [((2, 3), (4,), {})]),
           "decomposition", dtypes=(F64, BOOL)),
    OpInfo("linalg.cross", LA.cross,
           pair_samples([((3,), (3,), {}), ((4, 3), (3,), {}), ((3, 4), (3, 4), {"axis": 0})],
                        [((2,), (2,), {}), ((3,), (3,), {"axis": 1})]), "decomposition",
           dtypes=(F64, I64)),
    OpInfo("linalg.tensordot", LA.tensordot,
           pair_samples([((2, 3, 4), (3, 4, 5), {}), ((3, 4), (4, 2), {"axes": 1}),
                         ((3, 4), (4, 3), {"axes": ([0], [1])})], [((3, 4), (5, 4), {"axes": 1})]),
           "decomposition", dtypes=(F64, I64)),
    OpInfo("linalg.vecdot", LA.vecdot,
           pair_samples([((3, 4), (4,), {}), ((4, 3), (4, 3), {"axis": 0})],
                        [((3,), (4,), {})]), "decomposition", dtypes=(F64, C128)),
]


def _multi_dot_out_cases(rng, dtype):
    a = lambda *s: make_array(rng, s, dtype)  # noqa: E731
    yield ([a(2, 3), a(3, 4), a(4, 2)],), {}, "three matrices"
    yield ([a(3), a(3, 4), a(4, 2)],), {}, "a vector first"


OPS.append(OpInfo("linalg.multi_dot.out", LA.multi_dot,
                  out_variant(LA.multi_dot, _multi_dot_out_cases), "loop", dtypes=(F64,),
                  inplace=3, loop_reason=OUT_LOOP))
