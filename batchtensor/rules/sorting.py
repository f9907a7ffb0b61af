"""Sorting and searching: sort argsort partition argpartition lexsort sort_complex searchsorted
digitize.

Sorts run on the physical value along the shifted axis: every lane is sorted by the same
routine as the example alone would be, so unstable kinds and ``partition`` give the same order
as the per-example loop. ``searchsorted`` with a batched sorted array is a vectorised binary
search in NumPy's sort order (NaN last).
"""

from __future__ import annotations

import math

import numpy as np

from ..plumbing import unwrap, wrap
from ..registry import batch_rule
from ._helpers import (all_examples, any_example, as_array, batch_size_of, dry_run, ensure_bdim,
                       logical_rank, logical_shape, move_bdim_to_front, physical_axis, require,
                       wrap_axis)


def _flat_examples(a, a_bdim):
    """Every example flattened: shape (B, size)."""
    x = move_bdim_to_front(a, a_bdim)
    return np.reshape(x, (x.shape[0], math.prod(x.shape[1:])))


def _along_axis(op, *, zero_d_is_1d: bool):
    """A rule for ``op(a, <arg>, axis=...)``-style sorts; ``axis=None`` sorts the flattened
    example. ``zero_d_is_1d``: NumPy treats a 0-d example as shape (1,) (argsort, argpartition)."""

    def apply(a, a_bdim, axis, call):
        if axis is None or (zero_d_is_1d and logical_rank(a, a_bdim) == 0):
            if axis is not None:
                wrap_axis(axis, 1)  # the 0-d example acts as 1-d: axis must be 0 or -1
            return call(_flat_examples(a, a_bdim), 1), 0
        pax = physical_axis(wrap_axis(axis, logical_rank(a, a_bdim)), a_bdim)
        return call(a, pax), a_bdim

    return apply


_sort_apply = _along_axis(np.sort, zero_d_is_1d=False)
_argsort_apply = _along_axis(np.argsort, zero_d_is_1d=True)


@batch_rule(np.sort)
def sort_rule(a, a_bdim, axis=-1, kind=None, order=None, *, stable=None, **later):
    # (``later``: keywords of NumPy versions after 2.4, ``descending=`` of 2.5, which go to
    # NumPy's own sort along the example's axis as they are)
    return _sort_apply(a, a_bdim, axis, lambda x, ax: np.sort(x, axis=ax, kind=kind, order=order,
                                                              stable=stable, **later))


@batch_rule(np.argsort)
def argsort_rule(a, a_bdim, axis=-1, kind=None, order=None, *, stable=None, **later):
    return _argsort_apply(a, a_bdim, axis, lambda x, ax: np.argsort(
        x, axis=ax, kind=kind, order=order, stable=stable, **later))


@batch_rule(np.partition)
def partition_rule(a, a_bdim, kth, axis=-1, kind="introselect", order=None):
    return _sort_apply(a, a_bdim, axis, lambda x, ax: np.partition(x, kth, axis=ax, kind=kind,
                                                                   order=order))


@batch_rule(np.argpartition)
def argpartition_rule(a, a_bdim, kth, axis=-1, kind="introselect", order=None):
    return _argsort_apply(a, a_bdim, axis, lambda x, ax: np.argpartition(
        x, kth, axis=ax, kind=kind, order=order))


@batch_rule(np.sort_complex)
def sort_complex_rule(a, a_bdim):
    nd = logical_rank(a, a_bdim)
    wrap_axis(-1, nd)  # a 0-d example raises AxisError, as np.sort_complex does
    if a_bdim == nd:  # the batch axis is last: move it out of the sorted axis
        return np.sort_complex(np.moveaxis(a, a_bdim, 0)), 0
    return np.sort_complex(a), a_bdim


def _lexsort_batched(keys, bdims, axis):
    n = batch_size_of(keys, bdims)
    ks = [ensure_bdim(k, b, n) for k, b in zip(keys, bdims)]
    if len({k.shape[1:] for k in ks}) != 1:
        raise ValueError("all keys need to be the same shape")
    nd = ks[0].ndim - 1
    if nd == 0:  # 0-d keys: one element, its index is 0
        wrap_axis(axis, 1)
        return np.zeros((n,), dtype=np.intp, like=ks[0]), 0
    return np.lexsort(tuple(ks), axis=wrap_axis(axis, nd) + 1), 0  # a tuple dispatches


@batch_rule(np.lexsort, raw=True)
def lexsort_rule(level, args, kwargs):
    """``keys`` is one array (its first axis enumerates the keys) or a sequence of arrays.

    NumPy dispatches a *tuple* of keys to us; a list of batched keys is converted by NumPy
    before we see it (a clear conversion error): pass a tuple."""
    keys = args[0] if args else kwargs["keys"]
    axis = args[1] if len(args) > 1 else kwargs.get("axis", -1)
    if isinstance(keys, (list, tuple)):
        if not len(keys):
            raise TypeError("need sequence of keys with len > 0 in lexsort")
        pairs = [unwrap(k, level) for k in keys]
        vals = [v if hasattr(v, "ndim") else np.asarray(v) for v, _ in pairs]
        return wrap(*_lexsort_batched(vals, [b for _, b in pairs], axis), level)
    v, b = unwrap(keys, level)
    if logical_rank(v, b) == 0:
        raise TypeError("need sequence of keys with len > 0 in lexsort")
    k = np.moveaxis(v, b, 1) if b != 1 else v  # (nkeys, B, ...)
    return wrap(*_lexsort_batched(list(k), [0] * k.shape[0], axis), level)


# ---- searching ----------------------------------------------------------------------------------
def _nan_aware_less(a, b):
    """``a < b`` in NumPy's sort order (NaN last; complex lexicographic, as npysort's LT)."""
    if a.dtype.kind == "c" or getattr(b, "dtype", np.dtype(float)).kind == "c":
        ar, ai, br, bi = np.real(a), np.imag(a), np.real(b), np.imag(b)
        a_ok, b_nan = ~np.isnan(ai), np.isnan(bi)
        eq = (ar == br) | (np.isnan(ar) & np.isnan(br))
        return np.where(ar < br, a_ok | b_nan,
                        np.where(ar > br, b_nan & a_ok,
                                 np.where(eq, (ai < bi) | (b_nan & a_ok), np.isnan(br))))
    return np.less(a, b) | (np.isnan(b) & ~np.isnan(a))


def _has_nan(x) -> bool:
    return x.dtype.kind in "fc" and any_example(np.isnan(x))  # (outer examples need not agree)


#: up to this many comparisons (values x row length), counting every row's edges below each
#: value beats a binary search: the count's sum over a short last axis costs per comparison and
#: per value, the search's log2(n) + 1 steps of four ops cost per call (bench/NOTES.md,
#: "searchsorted of batched rows")
_FEW_COMPARISONS = 8192


def batched_searchsorted(a, v, side: str = "left"):
    """Row-wise searchsorted: ``a`` (B, n) sorted rows, ``v`` (B, m) -> (B, m) intp.

    A branch-free binary search with the same step for every element (all rows have length
    n), comparing in NumPy's sort order: plain ``<`` unless NaN or complex values are present.
    """
    if side not in ("left", "right"):
        raise ValueError(f"side must be 'left' or 'right' (got {side!r})")
    b, n = a.shape
    if n == 0:
        return np.zeros(v.shape, dtype=np.intp, like=a)
    simple = a.dtype.kind != "c" and v.dtype.kind != "c" and not _has_nan(a) and not _has_nan(v)
    less = np.less if simple else _nan_aware_less
    if v.size * n <= _FEW_COMPARISONS:  # count the edges below each value: no gathers
        ae, ve = a[:, None, :], v[:, :, None]
        hits = less(ae, ve) if side == "left" else ~less(ve, ae)
        return np.sum(hits, axis=-1, dtype=np.intp)
    # positions into the flattened rows, each row's start included: one take per step
    flat = np.reshape(a, (-1,))
    starts = np.reshape(np.arange(b, dtype=np.intp, like=a) * n, (b, 1))

    def goes_right(at):  # is flat position ``at`` still left of where v belongs?
        edge = np.take(flat, at)
        return less(edge, v) if side == "left" else ~less(v, edge)

    at = np.broadcast_to(starts, v.shape)
    size = n
    while size > 1:
        half = size // 2
        mid = at + half
        at = np.where(goes_right(mid), mid, at)
        size -= half
    return at - starts + goes_right(at)


@batch_rule(np.searchsorted)
def searchsorted_rule(a, a_bdim, v, v_bdim, side="left", sorter=None, sorter_bdim=None):
    if logical_rank(a, a_bdim) != 1:
        raise ValueError("object of too small depth for desired array" if
                         logical_rank(a, a_bdim) == 0 else "object too deep for desired array")
    if a_bdim is None and sorter_bdim is None:  # one sorted array for all: NumPy does it
        return np.searchsorted(a, v, side=side, sorter=sorter), v_bdim
    x = move_bdim_to_front(a, a_bdim) if a_bdim is not None else a
    n = batch_size_of((a, v, sorter), (a_bdim, v_bdim, sorter_bdim))
    x = ensure_bdim(x, 0 if a_bdim is not None else None, n)
    if sorter is not None:
        s = ensure_bdim(sorter, sorter_bdim, n)
        if s.shape[1:] != x.shape[1:]:
            raise ValueError("sorter.size must equal a.size")
        if s.shape[1] and (np.any(s < 0) or np.any(s >= s.shape[1])):
            raise ValueError("Sorter index out of range.")
        x = np.take_along_axis(x, s.astype(np.intp, copy=False), axis=1)
    if v_bdim is None:
        vv = as_array(v, x)
        vshape = tuple(vv.shape)
        vf = np.broadcast_to(np.reshape(vv, (1, -1)), (n, math.prod(vshape)))
    else:
        vv = move_bdim_to_front(v, v_bdim)
        vshape = tuple(vv.shape[1:])
        vf = np.reshape(vv, (n, math.prod(vshape)))
    out = batched_searchsorted(x, vf, side)
    return np.reshape(out, (n,) + vshape), 0


def _monotonicity(bins):
    """Per row of ``bins`` (B, n): 1 if non-decreasing, -1 if non-increasing and not constant,
    0 otherwise (NumPy's rule: leading repeats are skipped, a constant row is increasing)."""
    lo, hi = bins[:, :-1], bins[:, 1:]
    inc = np.all(hi >= lo, axis=1)
    dec = np.all(hi <= lo, axis=1) & np.any(hi < lo, axis=1)
    return np.where(inc, 1, np.where(dec, -1, 0))


@batch_rule(np.digitize)
def digitize_rule(x, x_bdim, bins, bins_bdim, right=False):
    if not hasattr(x, "dtype"):
        x = np.asarray(x)
    if np.issubdtype(x.dtype, np.complexfloating):
        raise TypeError("x may not be complex")
    if bins_bdim is None:  # one set of bins for all: NumPy does it
        return np.digitize(x, bins, right=right), x_bdim
    if logical_rank(bins, bins_bdim) != 1:
        dry_run(np.digitize, (), np.float64, np.zeros(logical_shape(bins, bins_bdim)))
    b = move_bdim_to_front(bins, bins_bdim)
    require(not (b.dtype.kind in "fc" and any_example(np.isnan(b))),
            "np.digitize with NaN in batched bins")
    mono = _monotonicity(b)
    if any_example(mono == 0):
        raise ValueError("bins must be monotonically increasing or decreasing")
    n = b.shape[0]
    xv = ensure_bdim(x, x_bdim, n)
    xshape = tuple(xv.shape[1:])
    xf = np.reshape(xv, (n, math.prod(xshape)))
    side = "left" if right else "right"
    decreasing = mono == -1
    # (of every example at every level: bins batched at an outer vmap too need not agree)
    any_down, all_down = any_example(decreasing), all_examples(decreasing)
    if not any_down:
        out = batched_searchsorted(b, xf, side)
    else:
        out = b.shape[1] - batched_searchsorted(b[:, ::-1], xf, side)
        if not all_down:
            out = np.where(np.reshape(decreasing, (n, 1)), out, batched_searchsorted(b, xf, side))
    return np.reshape(out, (n,) + xshape), 0
