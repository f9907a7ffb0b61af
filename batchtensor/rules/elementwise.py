"""Elementwise functions that are not ufuncs.

- a table of functions registered with the POINTWISE boxed kind (every ufunc's ``__call__`` is
  pointwise automatically; this table is for the functions);
- rules for ops whose result is not one array of the input's layout: ``real_if_close`` (its
  dtype depends on the data), ``iscomplexobj`` / ``isrealobj`` (answered from the dtype),
  ``unwrap`` (along an axis), ``interp`` (a search in per-example sample points) and Python's
  ``round()`` of a NumPy scalar;
- decompositions of the whole-array predicates ``allclose``, ``array_equal`` and
  ``array_equiv`` (one bool per example).
"""

from __future__ import annotations

import math

import numpy as np

from ..boxed.pointwise import pointwise
from ..errors import DataDependentError
from ..plumbing import innermost
from ..registry import batch_rule, decomposition
from ._helpers import (all_examples, any_example, dry_run, ensure_bdim, logical_rank,
                       logical_shape, move_bdim_to_front, pad_to_rank, physical_axis, require,
                       wrap_axis)

#: op -> the parameters that are arrays broadcasting against each other
POINTWISE_FUNCTIONS = {
    np.clip: ("a", "a_min", "a_max", "min", "max"),
    np.isclose: ("a", "b", "rtol", "atol"),
    np.nan_to_num: ("x",),
    np.round: ("a",),
    np.around: ("a",),
    np.fix: ("x",),
    np.i0: ("x",),
    np.sinc: ("x",),
    np.angle: ("z",),
    np.iscomplex: ("x",),
    np.isreal: ("x",),
    np.isneginf: ("x",),
    np.isposinf: ("x",),
}
#: keyword arguments that an op passes on to a ufunc through ``**kwargs``
POINTWISE_WHERE = {np.clip}

for _op, _arrays in POINTWISE_FUNCTIONS.items():
    pointwise(_op, _arrays, where=_op in POINTWISE_WHERE)


# ---- data-dependent dtype / dtype-only answers ------------------------------------------------
@batch_rule(np.real_if_close)
def real_if_close_rule(a, a_bdim, tol=100):
    if not np.iscomplexobj(a):
        return a, a_bdim
    if tol > 1:
        tol = np.finfo(a.dtype).eps * tol
    a0 = move_bdim_to_front(a, a_bdim)
    close = np.abs(np.imag(a0)) < tol
    per_example = np.all(np.reshape(close, (close.shape[0], math.prod(close.shape[1:]))), axis=1)
    if all_examples(per_example):
        return np.real(a), a_bdim
    if not any_example(per_example):
        return a, a_bdim
    raise DataDependentError(
        "numpy.real_if_close: the result's dtype depends on the data, and the examples "
        "disagree: some have all imaginary parts within tol of zero (a real result), others "
        "do not (a complex result), so they cannot be stacked into one array. Use np.real(a) "
        "or keep the complex array, or decide with np.all(np.abs(a.imag) < tol) per example "
        "and select with np.where."
    )


@batch_rule(np.iscomplexobj)
def iscomplexobj_rule(x, x_bdim):
    return np.iscomplexobj(x), None


@batch_rule(np.isrealobj)
def isrealobj_rule(x, x_bdim):
    return np.isrealobj(x), None


# ---- round() of a NumPy scalar ------------------------------------------------------------------
@batch_rule(round)
def round_rule(number, number_bdim, ndigits=None):
    """``round(x)``. ndarray defines no ``__round__``; a 0-d example is almost always a NumPy
    scalar (indexing and reductions return scalars), whose ``round`` gives a Python int, or a
    scalar of its own dtype with ``ndigits``. A 0-d BatchedTensor follows the scalar."""
    x = number
    dt = x.dtype
    if x.ndim > 1 or dt.kind not in "fiu":
        what = "ndarray" if x.ndim > 1 else dt.type.__name__
        raise TypeError(f"type numpy.{what} doesn't define __round__ method")
    if ndigits is not None:
        return np.round(x, ndigits), number_bdim
    if dt.kind == "f":
        x = np.rint(x)  # round half to even, like Python's round
        if any_example(np.isnan(x)):
            raise ValueError("cannot convert float NaN to integer")
        if any_example(np.isinf(x)):
            raise OverflowError("cannot convert float infinity to integer")
    if any_example(x >= 2.0**63) or (dt.kind == "f" and any_example(x < -2.0**63)):
        raise DataDependentError(
            "round(): a value does not fit in int64, so the Python ints of the examples cannot "
            "be stacked into one integer array; use np.round(x) to keep the float dtype."
        )
    return x.astype(np.int64), number_bdim


# ---- along an axis ------------------------------------------------------------------------------
@batch_rule(np.unwrap)
def unwrap_rule(p, p_bdim, discont=None, discont_bdim=None, axis=-1, *, period=2 * np.pi):
    nd = logical_rank(p, p_bdim)
    if nd == 0:
        dry_run(np.unwrap, (), p.dtype, discont, axis, period=period)
    ax = wrap_axis(axis, nd)
    if discont_bdim is None:
        return np.unwrap(p, discont, axis=physical_axis(ax, p_bdim), period=period), p_bdim
    # A batched discont only meets the differences elementwise (|dp| < discont): lay it out
    # batch-first like p, right-aligned.
    size = discont.shape[discont_bdim]
    p = ensure_bdim(p, p_bdim, size)
    discont = pad_to_rank(move_bdim_to_front(discont, discont_bdim), nd)
    return np.unwrap(p, discont, axis=ax + 1, period=period), 0


# ---- interp -------------------------------------------------------------------------------------
def _rows(x, bdim, size: int):
    """``x`` as a (batch, n) array (a broadcast view if unbatched and 1-D)."""
    n = 1
    for d in logical_shape(x, bdim):
        n *= d
    return np.reshape(ensure_bdim(x, bdim, size), (size, n))


def _count_le(xp, x):
    """Per row: how many of the sorted ``xp[b]`` are <= each ``x[b, i]`` (searchsorted
    side="right"), by a vectorised bisection: log2(n) gathers over the whole batch."""
    n = xp.shape[1]
    lo = np.zeros(x.shape, dtype=np.intp, like=x)
    hi = np.full(x.shape, n, dtype=np.intp, like=x)
    for _ in range(int(n).bit_length()):
        mid = (lo + hi) // 2
        le = np.take_along_axis(xp, np.minimum(mid, n - 1), axis=1) <= x
        active = lo < hi
        lo = np.where(active & le, mid + 1, lo)
        hi = np.where(active & ~le, mid, hi)
    return lo


def _interp_part(x, xj, xj1, yj, yj1, slope):
    """NumPy's interpolation step, with its retry from the right end where the left end gives
    NaN (infinite values) and its fallback to the left value on flat segments."""
    res = slope * (x - xj) + yj
    retry = slope * (x - xj1) + yj1
    res = np.where(np.isnan(res), retry, res)
    return np.where(np.isnan(res) & (yj == yj1), yj, res)


def _fill(value, bdim, default, size: int, dtype):
    """``left`` / ``right`` as a scalar or a (batch, 1) column; ``default`` if None."""
    if value is None:
        return default
    if bdim is None:
        if type(value) is not np.ndarray and hasattr(value, "astype"):
            return value.astype(dtype)  # another backend's 0-d array (or an outer level's)
        return dtype.type(value)  # the scalar NumPy converts it to
    return np.reshape(value.astype(dtype), (size, 1))


@batch_rule(np.interp)
def interp_rule(x, x_bdim, xp, xp_bdim, fp, fp_bdim, left=None, left_bdim=None, right=None,
                right_bdim=None, period=None):
    if xp_bdim is None and fp_bdim is None and left_bdim is None and right_bdim is None:
        # Only the query points are batched: interp is elementwise in x.
        return np.interp(x, xp, fp, left, right, period), x_bdim
    # Let NumPy check shapes, dtypes, period=0 and left/right on one small example (made on
    # the arguments' backend: the unbatched ones take part as they are).
    examples = []
    for v, b in ((x, x_bdim), (xp, xp_bdim), (fp, fp_bdim), (left, left_bdim),
                 (right, right_bdim)):
        examples.append(v if b is None else np.zeros(logical_shape(v, b), dtype=v.dtype,
                                                     like=innermost(v)))
    if np.size(examples[0]) > 1:
        x0 = innermost(x)  # (a Python list: NumPy's)
        examples[0] = np.zeros((1,), dtype=_dtype_of(examples[0]),
                               like=x0 if hasattr(x0, "__array_function__") else None)
    np.interp(*examples, period=period)

    size = next(v.shape[b] for v, b in ((x, x_bdim), (xp, xp_bdim), (fp, fp_bdim),
                                        (left, left_bdim), (right, right_bdim)) if b is not None)
    out_dtype = np.dtype(np.complex128 if np.iscomplexobj(fp) else np.float64)
    xshape = logical_shape(x, x_bdim)
    xs = _rows(x, x_bdim, size).astype(np.float64)
    xps = _rows(xp, xp_bdim, size).astype(np.float64)
    fps = _rows(fp, fp_bdim, size).astype(out_dtype)
    if period is not None:
        period = abs(period)
        left = right = None
        left_bdim = right_bdim = None
        xs = xs % period
        xps = xps % period
        order = np.argsort(xps, axis=1)
        xps = np.take_along_axis(xps, order, axis=1)
        fps = np.take_along_axis(fps, order, axis=1)
        xps = np.concatenate((xps[:, -1:] - period, xps, xps[:, :1] + period), axis=1)
        fps = np.concatenate((fps[:, -1:], fps, fps[:, :1]), axis=1)
    n, m = xps.shape[1], xs.shape[1]
    out_shape = (size,) + tuple(xshape)
    if m == 0:
        return np.zeros(out_shape, dtype=out_dtype, like=xs), 0
    lval = _fill(left, left_bdim, fps[:, :1], size, out_dtype)
    rval = _fill(right, right_bdim, fps[:, -1:], size, out_dtype)
    if n == 1:
        res = np.where(xs < xps, lval, np.where(xs > xps, rval, fps))
        return np.reshape(res, out_shape), 0
    # NumPy's binary search assumes increasing sample points; so does this one.
    require(bool(np.all(xps[:, 1:] >= xps[:, :-1])),
            "numpy.interp: sample points xp that are not increasing")
    j = _count_le(xps, xs) - 1
    jc = np.clip(j, 0, n - 2)
    xj, xj1 = np.take_along_axis(xps, jc, axis=1), np.take_along_axis(xps, jc + 1, axis=1)
    yj, yj1 = np.take_along_axis(fps, jc, axis=1), np.take_along_axis(fps, jc + 1, axis=1)
    with np.errstate(all="ignore"):
        if out_dtype.kind == "c":
            inv_dx = 1.0 / (xj1 - xj)
            parts = [_interp_part(xs, xj, xj1, part(yj), part(yj1), (part(yj1) - part(yj)) * inv_dx)
                     for part in (np.real, np.imag)]
            mid = parts[0].astype(out_dtype)  # (re + 1j * im would turn an infinite im
            np.copyto(np.imag(mid), parts[1])  # into a NaN real part)
            nan = xs.astype(out_dtype)
        else:
            mid = _interp_part(xs, xj, xj1, yj, yj1, (yj1 - yj) / (xj1 - xj))
            nan = xs
    res = np.where(xj == xs, yj, mid)
    res = np.where(j == n - 1, fps[:, -1:], res)
    res = np.where(xs > xps[:, -1:], rval, res)
    res = np.where(xs < xps[:, :1], lval, res)
    res = np.where(np.isnan(xs), nan, res)
    return np.reshape(res.astype(out_dtype, copy=False), out_shape), 0


# ---- whole-array predicates: one bool per example -----------------------------------------------
def _dtype_of(x):
    dt = getattr(x, "dtype", None)
    return dt if dt is not None else np.asarray(x).dtype  # a Python scalar or list


def _shape_of(x) -> tuple:
    s = getattr(x, "shape", None)
    return tuple(s) if s is not None else np.shape(x)


def _comparable(a1, a2) -> bool:
    """Whether ``a1 == a2`` compares elementwise (NumPy's ``==`` of dtypes without a common
    type, such as numbers and strings, is plain ``False``)."""
    try:
        np.equal.resolve_dtypes((_dtype_of(a1), _dtype_of(a2), None))
    except TypeError:  # no loop for these dtypes
        return False
    return True


@decomposition(np.allclose)
def allclose(a, b, rtol=1.e-5, atol=1.e-8, equal_nan=False):
    return np.all(np.isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan))


@decomposition(np.array_equal)
def array_equal(a1, a2, equal_nan=False):
    if _shape_of(a1) != _shape_of(a2) or not _comparable(a1, a2):
        return False
    if equal_nan and a1 is a2:
        return True
    eq = np.equal(a1, a2)
    if equal_nan and not all(_dtype_of(a).kind in "biu" for a in (a1, a2)):
        eq = eq | (np.isnan(a1) & np.isnan(a2))
    return np.all(eq)


@decomposition(np.array_equiv)
def array_equiv(a1, a2):
    try:
        np.broadcast_shapes(_shape_of(a1), _shape_of(a2))
    except ValueError:
        return False
    if not _comparable(a1, a2):
        return False
    return np.all(np.equal(a1, a2))
