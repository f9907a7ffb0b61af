"""numpy.linalg: every function of the namespace.

Most of them take stacks of matrices already (LAPACK runs per matrix, in one call), so they are
VARIADIC_BDIMS ops: batch axis to the front, done. Before that, an example with fewer dims
than the op's core must raise NumPy's own error (else the batch axis would silently be read as
a matrix dim). Rules handle the rank special cases (``solve``'s 1-d ``b``, ``qr``'s raw mode,
``norm``'s ``axis``), vectorised rewrites where NumPy does not stack (``lstsq``, ``tensorinv``,
``tensorsolve``, ``multi_dot``), and array-valued tolerances (``pinv``, ``matrix_rank``). The
functions that only restate a numpy-namespace twin decompose onto it.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.lib.array_utils import normalize_axis_tuple

from ..boxed.pointwise import call_bound
from ..boxed.variadic import align_core, variadic_bdims
from ..plumbing import unwrap
from ..errors import DataDependentError
from ..registry import REGISTRY, batch_rule, decomposition, op_name
from ._helpers import (NoValue, all_examples, batch_outermost, batch_size_of, ensure_bdim,
                       expand_last, logical_rank, logical_shape, move_bdim_to_front, pad_to_rank,
                       require, squeeze_last, wrap_axis)
from .products import as_operand, raise_numpy_error, reshape_front, stand_in

LinAlgError = np.linalg.LinAlgError


# ---- ops that take stacks of matrices -----------------------------------------------------------
def stacked(op, core_ranks: dict) -> None:
    """Register ``op`` with ``variadic_bdims``, plus NumPy's error for an example whose rank is
    below the core rank of an operand."""
    variadic_bdims(op, core_ranks)
    entry = REGISTRY[op]
    generic = entry.fn

    def fn(entry, level, values, extra, extra_kw):
        for p, v in zip(entry.binder.params, values):
            core = core_ranks.get(p.name)
            if core is not None and logical_rank(*unwrap(v, level)) < core:
                ins = [stand_in(*unwrap(x, level)) for x in values]
                call_bound(op, entry.binder, ins, extra, extra_kw)  # raises NumPy's error
                require(False, f"{op_name(op)}: an example with fewer than {core} dims")
        return generic(entry, level, values, extra, extra_kw)

    entry.fn = fn


_STACKED = {
    "a": ["cholesky", "det", "eig", "eigh", "eigvals", "eigvalsh", "inv", "slogdet", "svd",
          "matrix_power"],
    "x": ["cond", "svdvals", "matrix_norm", "diagonal"],
}  # linalg.matrix_transpose is a view op: rules/views.py
for _arg, _names in _STACKED.items():
    for _name in _names:
        stacked(getattr(np.linalg, _name), {_arg: 2})


def _front_padded(v, bdim, rank: int):
    """A tolerance-like operand aligned with batch-first, ``rank``-loop-dim values: batched ->
    batch first and padded; unbatched arrays get a size-1 batch axis; scalars stay."""
    if bdim is not None:
        return pad_to_rank(move_bdim_to_front(v, bdim), rank)
    if getattr(v, "ndim", 0) == 0:
        return v
    return pad_to_rank(np.expand_dims(v, 0), rank)


def _matrix_and_tols(a, a_bdim, tols: list):
    """``a`` batch-first (broadcast if only a tolerance is batched) and the tolerances aligned
    with its loop dims, for ops that use ``tol[..., newaxis]`` against the singular values."""
    ra = logical_rank(a, a_bdim)
    loop = max([ra - 2] + [logical_rank(v, b) for v, b in tols if v is not None])
    size = batch_size_of([a] + [v for v, _ in tols], [a_bdim] + [b for _, b in tols])
    x = pad_to_rank(ensure_bdim(a, a_bdim, size), loop + 2)
    return x, [v if v is None else _front_padded(v, b, loop) for v, b in tols]


@batch_rule(np.linalg.pinv)
def pinv_rule(a, a_bdim, rcond=None, rcond_bdim=None, hermitian=False, *, rtol=NoValue,
              rtol_bdim=None):
    if logical_rank(a, a_bdim) < 2:
        raise_numpy_error(np.linalg.pinv, stand_in(a, a_bdim), rcond, hermitian, rtol=rtol)
    # rtol's default (NumPy's _NoValue) has rank 0 and passes through unchanged
    x, (rc, rt) = _matrix_and_tols(a, a_bdim, [(rcond, rcond_bdim), (rtol, rtol_bdim)])
    return np.linalg.pinv(x, rc, hermitian, rtol=rt), 0


@batch_rule(np.linalg.matrix_rank)
def matrix_rank_rule(A, A_bdim, tol=None, tol_bdim=None, hermitian=False, *, rtol=None,
                     rtol_bdim=None):
    if rtol is not None and tol is not None:
        raise ValueError("`tol` and `rtol` can't be both set.")
    ra = logical_rank(A, A_bdim)
    if ra < 2:
        if A_bdim is None:  # only a tolerance is batched; they are unused here
            return np.linalg.matrix_rank(A), None
        x = move_bdim_to_front(A, A_bdim)
        nonzero = np.any(x != 0, axis=tuple(range(1, ra + 1)))
        return nonzero.astype(np.intp), 0
    x, (t, rt) = _matrix_and_tols(A, A_bdim, [(tol, tol_bdim), (rtol, rtol_bdim)])
    return np.linalg.matrix_rank(x, t, hermitian, rtol=rt), 0


# ---- solve, lstsq -------------------------------------------------------------------------------
@batch_rule(np.linalg.solve)
def solve_rule(a, a_bdim, b, b_bdim):
    ra, rb = logical_rank(a, a_bdim), logical_rank(b, b_bdim)
    if ra < 2 or rb < 1:
        raise_numpy_error(np.linalg.solve, stand_in(a, a_bdim), stand_in(b, b_bdim))
    if rb == 1 and b_bdim is not None:
        # NumPy 2: b is a vector only if b.ndim == 1, so one example's vector becomes a
        # one-column matrix here (the batched b is 2-d physically).
        y = expand_last(move_bdim_to_front(b, b_bdim))
        x, y = align_core([a, y], [a_bdim, 0], [2, 2])
        return squeeze_last(np.linalg.solve(x, y)), 0
    x, y = align_core([a, b], [a_bdim, b_bdim], [2, 1 if rb == 1 else 2])
    return np.linalg.solve(x, y), 0


_REAL = {np.dtype(np.float32): np.float32, np.dtype(np.float64): np.float64}


def linalg_types(*dtypes) -> tuple:
    """NumPy's ``_commonType``: (computation type, result type) of numpy.linalg."""
    result: type[np.floating[Any]]
    result, cplx = np.float32, False
    for dt in map(np.dtype, dtypes):
        if dt.kind in "fc":
            cplx |= dt.kind == "c"
            real = _REAL.get(np.dtype(np.finfo(dt).dtype))
            if real is None:
                raise TypeError(f"array type {dt.name} is unsupported in linalg")
            if real is np.float64:
                result = np.float64
        else:
            result = np.float64
    if cplx:
        return np.complex128, {np.float32: np.complex64, np.float64: np.complex128}[result]
    return np.float64, result


@batch_rule(np.linalg.lstsq)
def lstsq_rule(a, a_bdim, b, b_bdim, rcond=None):
    """LAPACK's gelsd is not batched in NumPy; the same minimum-norm solution from one batched
    SVD, with gelsd's cut-off (``rcond`` outside (0, 1) means machine epsilon)."""
    like = a if a_bdim is not None else b
    a, b = as_operand(a, like), as_operand(b, like)
    sa, sb = logical_shape(a, a_bdim), logical_shape(b, b_bdim)
    if len(sa) != 2 or len(sb) not in (1, 2):
        raise_numpy_error(np.linalg.lstsq, stand_in(a, a_bdim), stand_in(b, b_bdim), rcond)
    m, n = sa
    if sb[0] != m:
        raise LinAlgError("Incompatible dimensions")
    t, result_t = linalg_types(a.dtype, b.dtype)
    real_t = np.dtype(result_t).type(0).real.dtype
    if rcond is None:
        rcond = np.finfo(t).eps * max(n, m)
    cut = rcond if 0 < rcond < 1 else np.finfo(t).eps / 2
    # A shared `a` (many right-hand sides) is factorised once; its rank and singular values are
    # then the same for every example and come back unbatched.
    x = (a if a_bdim is None else move_bdim_to_front(a, a_bdim)).astype(t)
    y = (b if b_bdim is None else move_bdim_to_front(b, b_bdim)).astype(t)
    if len(sb) == 1:
        y = np.expand_dims(y, -1)
    if not all_examples(np.isfinite(x)):  # LAPACK's gelsd does not converge (NumPy raises)
        raise LinAlgError("SVD did not converge in Linear Least Squares")
    u, s, vh = np.linalg.svd(x, full_matrices=False)
    large = s > cut * s[..., :1]
    rank = np.sum(large, axis=-1).astype(np.int32)
    sinv = np.divide(large, np.where(large, s, 1))  # 1/s, 0 where cut off
    uhb = np.matmul(np.conjugate(np.swapaxes(u, -1, -2)), y)
    sol = np.matmul(np.conjugate(np.swapaxes(vh, -1, -2)), sinv[..., None] * uhb)
    full = bool(np.all(rank == n)) if m > n else False
    if m > n and not full and bool(np.any(rank == n)):
        raise DataDependentError(
            "numpy.linalg.lstsq: the residuals have shape (k,) for the examples whose `a` has "
            "full column rank and shape (0,) for the others, so they cannot be stacked into one "
            "batched array. Compute the residuals yourself (np.sum(abs(a @ x - b)**2, axis=0)) "
            "or make every example full rank (or rank-deficient).")
    if full:
        resid = (np.sum(np.abs(y - np.matmul(x, sol)) ** 2, axis=-2).astype(real_t), 0)
    else:
        resid = (np.zeros((0,), dtype=real_t, like=s), None)
    if len(sb) == 1:
        sol = np.squeeze(sol, -1)
    ab = None if a_bdim is None else 0
    return (sol.astype(result_t), 0), resid, (rank, ab), (s.astype(real_t), ab)


# ---- qr, norms ----------------------------------------------------------------------------------
@batch_rule(np.linalg.qr)
def qr_rule(a, a_bdim, mode="reduced"):
    if logical_rank(a, a_bdim) < 2:
        raise_numpy_error(np.linalg.qr, stand_in(a, a_bdim), mode)
    res = np.linalg.qr(move_bdim_to_front(a, a_bdim), mode)
    if isinstance(res, tuple):  # QRResult, or raw mode's (h, tau)
        items = [(r, 0) for r in res]
        return type(res)(*items) if hasattr(type(res), "_fields") else tuple(items)
    return res, 0


def _norm_axes(axis, nd: int) -> tuple:
    """``norm``'s ``axis`` as a tuple of logical axes (its own TypeError for bad types)."""
    if isinstance(axis, tuple):
        return axis
    try:
        return (int(axis),)
    except Exception as e:  # noqa: BLE001  (NumPy's own conversion)
        raise TypeError("'axis' must be None, an integer or a tuple of integers") from e


@batch_rule(np.linalg.norm)
def norm_rule(x, x_bdim, ord=None, axis=None, keepdims=False):
    v = batch_outermost(x, x_bdim)  # norms sum squares: the loop's pairwise order
    nd = v.ndim - 1
    if axis is None:
        if ord is None or (ord in ("f", "fro") and nd == 2) or (ord == 2 and nd == 1):
            # the 2-norm of the flattened example
            flat = reshape_front(v, (math.prod(v.shape[1:]),))
            r = np.linalg.norm(flat, axis=1)
            return (reshape_front(r, (1,) * nd) if keepdims else r), 0
        axis = tuple(range(nd))
    axes = _norm_axes(axis, nd)
    if len(axes) not in (1, 2):
        raise ValueError("Improper number of dimensions to norm.")
    phys = tuple(wrap_axis(a, nd) + 1 for a in axes)
    return np.linalg.norm(v, ord, phys, keepdims), 0


@batch_rule(np.linalg.vector_norm)
def vector_norm_rule(x, x_bdim, /, *, axis=None, keepdims=False, ord=2):
    v = batch_outermost(x, x_bdim)
    shape = v.shape[1:]
    nd = len(shape)
    if axis is None:
        axes = tuple(range(nd))
    elif isinstance(axis, tuple):
        axes = normalize_axis_tuple(axis, nd)
    else:
        axes = (wrap_axis(_norm_axes(axis, nd)[0], nd),)
    rest = [i for i in range(nd) if i not in axes]
    # the reduced axes (in the given order) flattened into one last axis
    v = np.transpose(v, [0] + [i + 1 for i in rest] + [i + 1 for i in axes])
    v = reshape_front(v, tuple(shape[i] for i in rest) + (math.prod(shape[i] for i in axes),))
    r = np.linalg.vector_norm(v, axis=-1, ord=ord)
    if keepdims:
        r = reshape_front(r, tuple(1 if i in axes else shape[i] for i in range(nd)))
    return r, 0


# ---- tensorinv, tensorsolve ---------------------------------------------------------------------
@batch_rule(np.linalg.tensorinv)
def tensorinv_rule(a, a_bdim, ind=2):
    shape = logical_shape(a, a_bdim)
    if not ind > 0:
        raise ValueError("Invalid ind argument.")
    invshape = shape[ind:] + shape[:ind]
    prod = math.prod(shape[ind:])
    size = math.prod(shape)
    if prod == 0 or size % prod:
        raise_numpy_error(np.linalg.tensorinv, stand_in(a, a_bdim), ind)
    inv = np.linalg.inv(reshape_front(move_bdim_to_front(a, a_bdim), (prod, size // prod)))
    return reshape_front(inv, invshape), 0


@batch_rule(np.linalg.tensorsolve)
def tensorsolve_rule(a, a_bdim, b, b_bdim, axes=None):
    sa, sb = logical_shape(a, a_bdim), logical_shape(b, b_bdim)
    an = len(sa)
    perm = list(range(an))
    if axes is not None:
        for k in axes:  # NumPy's own moves (and its errors for bad axes)
            perm.remove(k)
            perm.insert(an, k)
    st = tuple(sa[i] for i in perm)
    oldshape = st[-(an - len(sb)):]
    prod = math.prod(oldshape)
    if math.prod(sa) != prod ** 2:
        raise LinAlgError("Input arrays must satisfy the requirement "
                          "prod(a.shape[b.ndim:]) == prod(a.shape[:b.ndim])")
    if a_bdim is None:
        x = np.reshape(np.transpose(a, perm), (prod, prod))
    else:
        x = np.transpose(move_bdim_to_front(a, a_bdim), [0] + [i + 1 for i in perm])
        x = reshape_front(x, (prod, prod))
    if b_bdim is None:
        res = np.linalg.solve(x, np.ravel(b))
    else:
        y = move_bdim_to_front(b, b_bdim)
        y = expand_last(reshape_front(y, (math.prod(sb),)))
        res = squeeze_last(np.linalg.solve(x, y))
    return reshape_front(res, oldshape), 0


# ---- decompositions -----------------------------------------------------------------------------
def _arraylike(x):
    return x if hasattr(x, "ndim") else np.asarray(x)


def _chain_order(shapes: list) -> dict:
    """NumPy's matrix-chain order for multi_dot (costs from the shapes, same tie-breaking)."""
    n = len(shapes)
    p = [s[0] for s in shapes] + [shapes[-1][1]]
    cost = {(i, i): 0.0 for i in range(n)}
    split = {}
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i, j] = math.inf
            for k in range(i, j):
                q = cost[i, k] + cost[k + 1, j] + float(p[i] * p[k + 1] * p[j + 1])
                if q < cost[i, j]:
                    cost[i, j] = q
                    split[i, j] = k
    return split


def _chain(arrays, split, i, j, out=None):
    if i == j:
        return arrays[i]
    k = split[i, j]
    return np.dot(_chain(arrays, split, i, k), _chain(arrays, split, k + 1, j), out=out)


@decomposition(np.linalg.multi_dot)
def multi_dot(arrays, *, out=None):
    """The same dots in the same order as NumPy (the order depends on the shapes only)."""
    n = len(arrays)
    if n < 2:
        raise ValueError("Expecting at least two arrays.")
    if n == 2:
        return np.dot(arrays[0], arrays[1], out=out)
    arrays = [_arraylike(a) for a in arrays]
    nd_first, nd_last = arrays[0].ndim, arrays[-1].ndim
    if nd_first == 1:
        arrays[0] = np.reshape(arrays[0], (1, -1))
    if nd_last == 1:
        arrays[-1] = np.reshape(arrays[-1], (-1, 1))
    for a in arrays:
        if a.ndim != 2:
            raise LinAlgError(f"{a.ndim}-dimensional array given. Array must be two-dimensional")
    if n == 3:
        (a0, a1b0), (b1c0, c1) = arrays[0].shape, arrays[2].shape
        if a0 * b1c0 * (a1b0 + c1) < a1b0 * c1 * (a0 + b1c0):
            result = np.dot(np.dot(arrays[0], arrays[1]), arrays[2], out=out)
        else:
            result = np.dot(arrays[0], np.dot(arrays[1], arrays[2]), out=out)
    else:
        result = _chain(arrays, _chain_order([a.shape for a in arrays]), 0, n - 1, out=out)
    if nd_first == 1 and nd_last == 1:
        return result[0, 0]
    if nd_first == 1 or nd_last == 1:
        return np.ravel(result)
    return result


@decomposition(np.linalg.matmul)
def linalg_matmul(x1, x2, /):
    return np.matmul(x1, x2)


@decomposition(np.linalg.tensordot)
def linalg_tensordot(x1, x2, /, *, axes=2):
    return np.tensordot(x1, x2, axes=axes)


@decomposition(np.linalg.trace)
def linalg_trace(x, /, *, offset=0, dtype=None):
    return np.trace(x, offset, axis1=-2, axis2=-1, dtype=dtype)


@decomposition(np.linalg.vecdot)
def linalg_vecdot(x1, x2, /, *, axis=-1):
    return np.vecdot(x1, x2, axis=axis)


@decomposition(np.linalg.outer)
def linalg_outer(x1, x2, /):
    x1, x2 = _arraylike(x1), _arraylike(x2)
    if x1.ndim != 1 or x2.ndim != 1:
        raise ValueError("Input arrays must be one-dimensional, but they are "
                         f"x1.ndim={x1.ndim} and x2.ndim={x2.ndim}.")
    return np.outer(x1, x2)


@decomposition(np.linalg.cross)
def linalg_cross(x1, x2, /, *, axis=-1):
    x1, x2 = _arraylike(x1), _arraylike(x2)
    if not (-x1.ndim <= axis < x1.ndim and -x2.ndim <= axis < x2.ndim):
        # NumPy's own error (2.4 an IndexError, 2.5 an AxisError), from stand-ins of the ranks
        np.linalg.cross(np.zeros((1,) * x1.ndim), np.zeros((1,) * x2.ndim), axis=axis)
    if x1.shape[axis] != 3 or x2.shape[axis] != 3:
        raise ValueError(
            "Both input arrays must be (arrays of) 3-dimensional vectors, "
            f"but they are {x1.shape[axis]} and {x2.shape[axis]} dimensional instead.")
    return np.cross(x1, x2, axis=axis)

