"""Set operations and other ops whose output shape depends on the data: nonzero, argwhere,
flatnonzero, unique (and the unique_* functions), isin, intersect1d, setdiff1d, setxor1d,
union1d, trim_zeros.

One call can only return one shape, so these give a result when every example has the same
output shape, and otherwise a clear error naming the op (the per-example loop could not stack
its results either). The rules work on the batch at once: sort each example's row, mark the
elements to keep, check that every row keeps as many, gather. The set operations are written
in terms of *runs* of equal values in the stably sorted concatenation of both inputs (the
first input's elements come first in each run), which gives true set semantics without
compacting each input first; NaN never equals NaN, and NaNs collapse as ``np.unique``'s
``equal_nan`` says.

Where NumPy's own answer depends on an algorithm choice rather than on set semantics
(``assume_unique=True`` with inputs that are not unique, ``unique(sorted=False)`` of integer
or complex values whose order comes from a hash table), the rule hands the call to the
per-example loop.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np
from numpy.lib._arraysetops_impl import (UniqueAllResult, UniqueCountsResult,
                                         UniqueInverseResult)

from ..errors import BatchingError, DataDependentError
from ..plumbing import innermost
from ..registry import batch_rule, is_physical_type, op_name
from ._helpers import (dry_run, logical_rank, move_bdim_to_front, require,
                       wrap_axes, wrap_axis)

# ---- helpers -------------------------------------------------------------------------------------


def _rows(x, bdim, size: int | None = None) -> Any:
    """Every example raveled: shape (B, n). An unbatched ``x`` is broadcast (a view)."""
    if bdim is None:
        flat = np.ravel(x)
        return np.broadcast_to(flat, (size,) + tuple(flat.shape))
    x = move_bdim_to_front(x, bdim)
    return np.reshape(x, (x.shape[0], math.prod(x.shape[1:])))


def logical_shape(x, bdim) -> tuple:
    s = tuple(x.shape)  # (np.shape would dispatch an outer level's BatchedTensor)
    return s if bdim is None else s[:bdim] + s[bdim + 1:]


def _batch(*pairs) -> int:
    return next(v.shape[b] for v, b in pairs if b is not None)


def _plain(*xs) -> bool:
    """Whether every value is a plain physical array (not a BatchedTensor of an outer level,
    whose values cannot be read on the host)."""
    return all(is_physical_type(type(x)) for x in xs)


def any_true(x) -> bool:
    """``bool(np.any(x))``; True when outer levels disagree (the caller is conservative)."""
    try:
        return bool(np.any(x))
    except BatchingError:
        return True


def _check_common_count(op, mask) -> None:
    """Every row of ``mask`` (B, n) must keep as many elements: the output size."""
    counts = np.sum(mask, axis=1)
    if counts.shape[0] == 0:
        raise BatchingError(f"{op_name(op)}: the output size depends on the data and the batch "
                            f"is empty, so there is no example to take it from")
    # (bool(): the one host read every backend answers; outer levels: their common answer,
    # or an error)
    if bool(np.all(counts == counts[:1])):
        return
    if type(counts) is np.ndarray:
        first = int(counts[0])
        i = int(np.argmax(counts != first))
        detail = f"{first} for example 0, {int(counts[i])} for example {i}"
    else:
        detail = "on the device" if _plain(counts) else "in an inner vmap level"
    raise DataDependentError(
        f"{op_name(op)}: the output size depends on the data and differs between examples "
        f"({detail}), so the results cannot be stacked into one batched array. Give every "
        f"example the same output size (pad, or use a fixed-size alternative such as a boolean "
        f"mask with np.where), or run this part outside vmap.")


def compress_rows(op, mask, *values) -> list:
    """The elements each row of ``mask`` keeps, from each of ``values`` (B, n): (B, k)."""
    _check_common_count(op, mask)
    b = mask.shape[0]
    rows: Sequence[Any] = values
    if not _plain(mask):  # a plain value cannot be indexed with an outer level's mask: lift it
        rows = [np.where(mask, v, v) if _plain(v) else v for v in values]
    return [np.reshape(v[mask], (b, -1)) for v in rows]


def _positions(mask):
    """np.arange(n) broadcast like ``mask`` (B, n)."""
    return np.broadcast_to(np.arange(mask.shape[1], like=innermost(mask)), mask.shape)


def _inverse_permutation(perm):
    return np.argsort(perm, axis=1)


def _has_nan(dtype) -> bool:
    return np.dtype(dtype).kind in "fc"


def _keep_first(aux, equal_nan: bool):
    """np.unique's mask over sorted rows: the first of every run of equal values."""
    b, n = aux.shape
    if n < 2:
        return np.ones((b, n), dtype=bool, like=aux)
    new = aux[:, 1:] != aux[:, :-1]
    if equal_nan and _has_nan(aux.dtype):
        nan = np.isnan(aux)
        new = new & ~(nan[:, 1:] & nan[:, :-1])
    return np.concatenate([np.ones((b, 1), dtype=bool, like=new), new], axis=1)


def _exact_common_dtype(*dtypes) -> bool:
    """Whether NumPy's answer is comparison in the common dtype whatever algorithm it picks:
    not so for int64 with uint64 (exact comparisons in one path, float64 in the other)."""
    kinds = {np.dtype(d).kind for d in dtypes}
    return not ({"i", "u"} <= kinds and np.result_type(*dtypes).kind == "f")


def _has_duplicates(rows) -> bool:
    """Whether any example has two equal elements (NaN equals nothing)."""
    if rows.shape[1] < 2:
        return False
    s = np.sort(rows, axis=1)
    return any_true(s[:, 1:] == s[:, :-1])


def _reverse_next(flags):
    """For every position p of each row, the first q >= p with flags[q] (n if none)."""
    n = flags.shape[1]
    idx = np.where(flags, np.arange(n, like=innermost(flags)), n)
    return np.flip(np.minimum.accumulate(np.flip(idx, axis=1), axis=1), axis=1)


class _Runs:
    """The stably sorted concatenation of two batches of rows, as runs of equal values.

    ``s``: sorted values (B, n1 + n2); ``order``: where each came from; ``second``: from the
    second input; ``start``: first of its run; ``has1`` / ``has2``: at a run's start, whether the
    run holds an element of the first / second input; ``nan``: NaN (each NaN is its own run).
    """

    def __init__(self, r1, r2):
        self.n1 = r1.shape[1]
        cat = np.concatenate([r1, r2], axis=1)
        self.order = np.argsort(cat, axis=1, kind="stable")
        self.s = np.take_along_axis(cat, self.order, axis=1)
        self.second = self.order >= self.n1
        b, n = self.s.shape
        new = self.s[:, 1:] != self.s[:, :-1]
        self.start = np.concatenate([np.ones((b, min(n, 1)), bool, like=new), new], axis=1)
        end = np.concatenate([new, np.ones((b, min(n, 1)), bool, like=new)], axis=1)
        # the first input sorts first within a run: the run holds a second-input element iff
        # its last element is one
        last = np.minimum(_reverse_next(end), n - 1)
        self.has1 = ~self.second
        self.has2 = np.take_along_axis(self.second, last, axis=1) if n else self.second
        self.nan = np.isnan(self.s) if _has_nan(self.s.dtype) else np.zeros((b, n), bool,
                                                                             like=new)

    def first_nan(self, second: bool):
        """The first NaN of the first (or second) input, in sorted order."""
        mine = self.nan & (self.second if second else ~self.second)
        return mine & (np.cumsum(mine, axis=1) == 1)

    def membership(self):
        """For each element of the first input, in its original order: is it in the second?"""
        member = self.has2 & ~self.second
        return np.take_along_axis(member, _inverse_permutation(self.order), axis=1)[:, :self.n1]


# ---- nonzero, argwhere, flatnonzero --------------------------------------------------------------
def _nonzero_front(op, x) -> list:
    """Indices of the nonzero elements of each example of ``x`` (batch first): one (B, k)
    array per logical axis."""
    b = x.shape[0]
    _check_common_count(op, np.reshape(x, (b, math.prod(x.shape[1:]))) != 0)
    return [np.reshape(i, (b, -1)) for i in np.nonzero(x)[1:]]


@batch_rule(np.nonzero)
def nonzero_rule(a, a_bdim):
    if logical_rank(a, a_bdim) == 0:
        dry_run(np.nonzero, (), a.dtype)  # NumPy raises for 0-d
    return tuple((i, 0) for i in _nonzero_front(np.nonzero, move_bdim_to_front(a, a_bdim)))


@batch_rule(np.argwhere)
def argwhere_rule(a, a_bdim):
    x = move_bdim_to_front(a, a_bdim)
    if x.ndim == 1:  # 0-d examples: NumPy returns shape (0 or 1, 0)
        nz = np.reshape(x != 0, (x.shape[0], 1))
        (kept,) = compress_rows(np.argwhere, nz, nz)
        return kept[:, :, None][:, :, :0].astype(np.intp), 0
    return np.stack(_nonzero_front(np.argwhere, x), axis=-1), 0


@batch_rule(np.flatnonzero)
def flatnonzero_rule(a, a_bdim):
    return _nonzero_front(np.flatnonzero, _rows(a, a_bdim))[0], 0


# ---- unique --------------------------------------------------------------------------------------
_HASHED = "iuc"  # dtype kinds np.unique orders by a hash table when sorted=False


def _unique(op, a, a_bdim, return_index=False, return_inverse=False, return_counts=False,
            axis=None, equal_nan=True, sorted=True) -> tuple:
    lshape = logical_shape(a, a_bdim)
    if axis is not None:
        require(len(lshape) == 1, "np.unique with axis= on an example of rank > 1")
        wrap_axis(axis, 1)
    optional = return_index or return_inverse
    require(sorted or optional or return_counts or np.dtype(a.dtype).kind not in _HASHED,
            "np.unique(sorted=False) of integer or complex values (hash-table order)")
    x = _rows(a, a_bdim)
    b, n = x.shape
    # Without extra outputs NumPy hashes integer and complex values, and of the complex NaNs
    # it keeps the first one met, not the first one in sorted order.
    require(optional or return_counts or not equal_nan or x.dtype.kind != "c"
            or not any_true(np.isnan(x)), "np.unique of complex values with NaNs")
    if optional:
        perm = np.argsort(x, axis=1, kind="stable" if return_index else None)
        aux = np.take_along_axis(x, perm, axis=1)
    else:
        aux = np.sort(x, axis=1)
    mask = _keep_first(aux, equal_nan)
    wanted = [aux] + ([perm] if return_index else []) + ([_positions(mask)] if return_counts
                                                        else [])
    kept = compress_rows(op, mask, *wanted)
    out = [(kept[0], 0)]
    if return_index:
        out.append((kept[1], 0))
    if return_inverse:
        rank = np.cumsum(mask, axis=1) - 1
        inv = np.take_along_axis(rank, _inverse_permutation(perm), axis=1)
        out.append((np.reshape(inv, (b,) + lshape), 0))
    if return_counts:
        pos = kept[-1]
        end = np.full((b, min(pos.shape[1], 1)), n, dtype=np.intp, like=pos)
        out.append((np.concatenate([pos[:, 1:], end], axis=1) - pos, 0))
    return tuple(out)


def _shared(values, bdim):
    """Unique values that are the same in every example (the labels of a classification
    metric, where each example holds every class): one plain array, as the value every
    example has, so that code iterating or hashing them (``set(np.unique(y))``) runs as in
    the loop. A value per example otherwise."""
    if type(values) is np.ndarray and values.shape[0] and values.dtype.kind in "biumMUS" \
            and bool(np.all(values == values[:1])):
        return values[0].copy(), None
    return values, bdim


@batch_rule(np.unique)
def unique_rule(ar, ar_bdim, return_index=False, return_inverse=False, return_counts=False,
                axis=None, *, equal_nan=True, sorted=True):
    out = _unique(np.unique, ar, ar_bdim, return_index, return_inverse, return_counts, axis,
                  equal_nan, sorted)
    return _shared(*out[0]) if len(out) == 1 else out


@batch_rule(np.unique_values)
def unique_values_rule(x, x_bdim):
    return _shared(*_unique(np.unique_values, x, x_bdim, equal_nan=False, sorted=False)[0])


@batch_rule(np.unique_counts)
def unique_counts_rule(x, x_bdim):
    return UniqueCountsResult(*_unique(np.unique_counts, x, x_bdim, return_counts=True,
                                       equal_nan=False))


@batch_rule(np.unique_inverse)
def unique_inverse_rule(x, x_bdim):
    return UniqueInverseResult(*_unique(np.unique_inverse, x, x_bdim, return_inverse=True,
                                        equal_nan=False))


@batch_rule(np.unique_all)
def unique_all_rule(x, x_bdim):
    return UniqueAllResult(*_unique(np.unique_all, x, x_bdim, return_index=True,
                                    return_inverse=True, return_counts=True, equal_nan=False))


# ---- isin and the set operations ----------------------------------------------------------------
def _two_rows(a, a_bdim, b, b_bdim):
    n = _batch((a, a_bdim), (b, b_bdim))
    return _rows(a, a_bdim, n), _rows(b, b_bdim, n)


@batch_rule(np.isin)
def isin_rule(element, element_bdim, test_elements, test_elements_bdim, assume_unique=False,
              invert=False, *, kind=None):
    if kind not in (None, "sort", "table"):
        raise ValueError(f"Invalid kind: '{kind}'. Please use None, 'sort' or 'table'.")
    require(kind != "table", "np.isin(kind='table')")
    r1, r2 = _two_rows(element, element_bdim, test_elements, test_elements_bdim)
    require(_exact_common_dtype(r1.dtype, r2.dtype), "np.isin of values whose common dtype "
                                                     "is inexact (int64 and float/uint64)")
    # With assume_unique=True NumPy's answer is plain membership only if `element` really has
    # no repeated values; otherwise it depends on the algorithm NumPy picks.
    require(not assume_unique or not _has_duplicates(r1),
            "np.isin(assume_unique=True) with repeated elements")
    member = _Runs(r1, r2).membership() if r1.shape[1] and r2.shape[1] else \
        np.zeros(r1.shape, dtype=bool, like=r1)
    if invert:
        member = ~member
    return np.reshape(member, (r1.shape[0],) + logical_shape(element, element_bdim)), 0


@batch_rule(np.union1d)
def union1d_rule(ar1, ar1_bdim, ar2, ar2_bdim):
    r1, r2 = _two_rows(ar1, ar1_bdim, ar2, ar2_bdim)
    cat = np.concatenate([r1, r2], axis=1)
    return _unique(np.union1d, cat, 0)[0]


@batch_rule(np.intersect1d)
def intersect1d_rule(ar1, ar1_bdim, ar2, ar2_bdim, assume_unique=False, return_indices=False):
    r1, r2 = _two_rows(ar1, ar1_bdim, ar2, ar2_bdim)
    if assume_unique:  # NumPy's own algorithm, run on every row
        cat = np.concatenate([r1, r2], axis=1)
        order = np.argsort(cat, axis=1, kind="stable")
        aux = np.take_along_axis(cat, order, axis=1)
        mask = aux[:, 1:] == aux[:, :-1]
        if not return_indices:
            return compress_rows(np.intersect1d, mask, aux[:, :-1])[0], 0
        vals, i1, i2 = compress_rows(np.intersect1d, mask, aux[:, :-1], order[:, :-1], order[:, 1:])
        return (vals, 0), (i1, 0), (i2 - r1.shape[1], 0)
    runs = _Runs(r1, r2)
    keep = runs.start & runs.has1 & runs.has2
    if not return_indices:
        return compress_rows(np.intersect1d, keep, runs.s)[0], 0
    # first occurrences: the run's first element (stable sort), and its first second-input one
    first2 = np.minimum(_reverse_next(runs.second), runs.s.shape[1] - 1)
    vals, i1, i2 = compress_rows(np.intersect1d, keep, runs.s, runs.order,
                             np.take_along_axis(runs.order, first2, axis=1))
    return (vals, 0), (i1, 0), (i2 - runs.n1, 0)


@batch_rule(np.setdiff1d)
def setdiff1d_rule(ar1, ar1_bdim, ar2, ar2_bdim, assume_unique=False):
    r1, r2 = _two_rows(ar1, ar1_bdim, ar2, ar2_bdim)
    require(_exact_common_dtype(r1.dtype, r2.dtype), "np.setdiff1d of values whose common "
                                                     "dtype is inexact")
    if assume_unique:  # ar1 keeps its order; plain membership if ar1 has no repeats
        require(not _has_duplicates(r1), "np.setdiff1d(assume_unique=True) with repeated "
                                         "elements")
        keep = ~_Runs(r1, r2).membership() if r2.shape[1] else np.ones(r1.shape, bool, like=r1)
        return compress_rows(np.setdiff1d, keep, r1)[0], 0
    runs = _Runs(r1, r2)
    keep = (runs.start & runs.has1 & ~runs.has2 & ~runs.nan) | runs.first_nan(False)
    # the kept elements all come from ar1: read them from ar1, in ar1's dtype
    (where,) = compress_rows(np.setdiff1d, keep, runs.order)
    return np.take_along_axis(r1, where, axis=1), 0


@batch_rule(np.setxor1d)
def setxor1d_rule(ar1, ar1_bdim, ar2, ar2_bdim, assume_unique=False):
    r1, r2 = _two_rows(ar1, ar1_bdim, ar2, ar2_bdim)
    if assume_unique:  # NumPy's own algorithm, run on every row
        aux = np.sort(np.concatenate([r1, r2], axis=1), axis=1)
        b, n = aux.shape
        if n == 0:
            return aux, 0
        edge = np.ones((b, 1), dtype=bool, like=aux)
        flag = np.concatenate([edge, aux[:, 1:] != aux[:, :-1], edge], axis=1)
        return compress_rows(np.setxor1d, flag[:, 1:] & flag[:, :-1], aux)[0], 0
    runs = _Runs(r1, r2)
    keep = ((runs.start & (runs.has1 ^ runs.has2) & ~runs.nan)
            | runs.first_nan(False) | runs.first_nan(True))
    return compress_rows(np.setxor1d, keep, runs.s)[0], 0


# ---- trim_zeros ----------------------------------------------------------------------------------
@batch_rule(np.trim_zeros)
def trim_zeros_rule(filt, filt_bdim, trim="fb", axis=None):
    trim = trim.lower()
    if trim not in {"fb", "bf", "f", "b"}:
        raise ValueError(f"unexpected character(s) in `trim`: {trim!r}")
    x = move_bdim_to_front(filt, filt_bdim)
    nd = x.ndim - 1
    axes = tuple(range(nd)) if axis is None else wrap_axes(axis, nd, "axis")
    if not axes:
        return filt, filt_bdim  # NumPy returns the input unmodified
    b = x.shape[0]
    nz = x != 0
    anywhere = np.any(np.reshape(nz, (b, math.prod(x.shape[1:]))), axis=1)
    for ax in axes:
        other = tuple(i + 1 for i in range(nd) if i != ax)
        profile = np.any(nz, axis=other) if other else nz  # (B, L)
        length = profile.shape[1]
        keep = np.ones((b, length), dtype=bool, like=profile)
        if "f" in trim:  # from the first nonzero on
            keep = keep & (np.cumsum(profile, axis=1) > 0)
        if "b" in trim:  # up to the last nonzero
            keep = keep & np.flip(np.cumsum(np.flip(profile, axis=1), axis=1) > 0, axis=1)
        keep = keep & np.reshape(anywhere, (b, 1))  # an all-zero example: empty everywhere
        (idx,) = compress_rows(np.trim_zeros, keep, _positions(keep))  # (B, size)
        size = idx.shape[1]
        starts = innermost(idx[:, 0]) if size else None  # every example at every level
        if size and starts.size and not bool(np.all(starts == starts.flat[0])):
            raise BatchingError(
                f"numpy.trim_zeros: the examples of 'filt' are trimmed at different offsets "
                f"along axis {ax} (from {int(np.min(starts))} to {int(np.max(starts))}). "
                f"NumPy returns each example's result as a view of filt, and no one batched "
                f"array can view every example at its own offset; a copy would differ from the "
                f"loop silently (a write into it would not reach filt, a later write into filt "
                f"would not show through it). Where a copy is what you need, select the "
                f"elements with np.take_along_axis (a copy in NumPy too), e.g. "
                f"np.take_along_axis(filt, start + np.arange(length), axis) with start = "
                f"np.argmax(filt != 0, axis).")
        lo = int(starts.flat[0]) if size and starts.size else 0
        x = x[(slice(None),) * (ax + 1) + (slice(lo, lo + size),)]  # a view, as NumPy's
    return x, 0
