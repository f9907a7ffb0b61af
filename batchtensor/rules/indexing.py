"""Indexing: ``x[key]`` and ``x[key] = v`` (the ``operator.getitem`` / ``operator.setitem``
rules), and index construction.

- ``x[key]`` / ``x[key] = v``: the index planner ``_plan`` (the three cases below), batched
  boolean masks (``mask_to_indices``, ``_Mask0d``), and ``x[mask] = v`` with a different count
  per example (``_masked_write``).
- Index construction: ix_, ravel_multi_index, unravel_index and tril_indices_from /
  triu_indices_from / diag_indices_from. They build index arrays rather than read or write an
  array's data (NumPy files them under "generating index arrays"), and ix_ turns a batched
  boolean argument into indices with the mask machinery above, so they live here.

Writes by position or mask (put, place, copyto, ...) are in ``placement.py``; selection (take,
where, choose, compress, ...) in ``selection.py``. Both import this module's shared helpers
(public, listed in ``__all__``): ``lift``, ``mask_to_indices``,
``drop_leading_ones``, ``flat_front``, ``in_c_order``; this module imports neither of them.

``x[key] = v`` writes per example into a batched target; a target that is not batched at the
level (or at an outer level) of the values written raises a SharedWriteError naming both,
on which ``vmap`` reruns the function per example unless the target is the caller's shared
state (an unmapped argument, a closure or global array): that keeps the clear error.
Data-dependent sizes (batched masks) work when every example has the same count; ``x[mask]``
with a different count per example is a ragged selection (``ragged.py``), which stays
vectorised through elementwise ops, reductions and ``x[mask] = selection``.

An index is translated into one physical index. Three cases (NumPy's own rules decide where the
dimensions of advanced indices land, so each case tracks where the batch axis ends up):

A. basic only (ints, slices, None, Ellipsis): insert ``slice(None)`` at the batch axis; a view;
B. advanced indices (integer/boolean arrays) none batched: batch axis first, prefix
   ``slice(None)``; the batch axis lands first, or after the broadcast index dimensions when the
   advanced indices are not adjacent;
C. some index batched: every example gathers with its own index, through an extra leading
   ``arange(B)`` advanced index; a boolean mask must select the same count in every example.
"""

from __future__ import annotations

import math
import operator
import re
from typing import Any

import numpy as np

from ..plumbing import innermost, scan_level, unwrap, wrap
from ..errors import BatchingError, DataDependentError, SharedWriteError
from ..registry import batch_rule
from ..tensor import BatchedTensor, new_batched, scalar_per_example
from .ragged import is_ragged, select, write_selection
from ._helpers import (align_front, as_array, ensure_bdim, logical_rank, logical_shape,
                       move_bdim_to_front, ndim_of, pad_to_rank, read_only, require)

_INT_TYPES = (int, np.integer)


def _is_bool_scalar(k) -> bool:
    return isinstance(k, (bool, np.bool_))


def _is_basic(k) -> bool:
    return (k is None or k is Ellipsis or type(k) is slice
            or (isinstance(k, _INT_TYPES) and not _is_bool_scalar(k)))


def _consumes(k) -> int:
    """How many logical dims an index entry consumes."""
    if k is None or k is Ellipsis or _is_bool_scalar(k) or type(k) is _Mask0d:
        return 0
    if isinstance(k, _INT_TYPES) or type(k) is slice:
        return 1
    if getattr(k, "dtype", None) is not None and k.dtype == bool:
        return max(k.ndim, 1) if k.ndim else 0
    return 1


def _as_index_array(k):
    """Lists in an index are arrays (NumPy's rule: an empty one is an empty integer index);
    arrays and BatchedTensors pass through."""
    if isinstance(k, (list, tuple)):
        if scan_level(k) is not None:  # a list holding batched values: stack them
            return np.stack([_as_index_array(e) for e in k]) if len(k) else np.asarray(k)
        ref = _array_in(k)  # a list holding arrays: on their backend
        a = np.asarray(k) if ref is None else np.asarray(k, like=ref)
        return a.astype(np.intp) if a.size == 0 and a.dtype.kind == "f" else a
    return k


def _array_in(k):
    """The first array in a nested list of index entries, or None."""
    for e in k:
        r = _array_in(e) if isinstance(e, (list, tuple)) else e if hasattr(e, "ndim") else None
        if r is not None:
            return r
    return None


_INVALID_INDEX = ("only integers, slices (`:`), ellipsis (`...`), numpy.newaxis (`None`) and "
                  "integer or boolean arrays are valid indices")


def _check_index_types(key: tuple) -> None:
    """NumPy's IndexError for an entry that is no index at all (``x[1.5]``, ``x[{}]``)."""
    for k in key:
        if not (k is None or k is Ellipsis or type(k) is slice or isinstance(k, _INT_TYPES)
                or _is_bool_scalar(k) or isinstance(k, (list, tuple, BatchedTensor))
                or hasattr(k, "dtype") or hasattr(k, "__index__")):
            raise IndexError(_INVALID_INDEX)


def _is_field_key(key) -> bool:
    """``x['a']`` / ``x[['a', 'b']]``: fields of a structured dtype."""
    return isinstance(key, str) or (type(key) is list and len(key) > 0
                                    and all(isinstance(k, str) for k in key))


def _logical_index_error(e: IndexError, batch_axis: int) -> IndexError:
    """NumPy's message about the physical array, with its axis numbers made the example's
    (``index 5 is out of bounds for axis 1`` of the physical value is axis 0 of one example)."""
    msg = re.sub(r"\baxis (\d+)",
                 lambda m: f"axis {int(m.group(1)) - (int(m.group(1)) > batch_axis)}", str(e))
    return IndexError(msg)


def _expand(key: tuple, nd: int) -> list:
    """The key with Ellipsis expanded and trailing dims made explicit.

    The Ellipsis itself stays, in front of the slices it stands for: NumPy counts it as a
    separator between advanced indices even where it stands for no dimension (``x[:, i, ...,
    j]`` on a 3-d x puts the index dimensions first), and in a physical key whose dimensions
    are all explicit it stands for none again.
    """
    n_ell = sum(1 for k in key if k is Ellipsis)
    if n_ell > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    used = sum(_consumes(k) for k in key)
    if used > nd:
        raise IndexError(f"too many indices for array: array is {nd}-dimensional, but {used} "
                         f"were indexed")
    out = []
    for k in key:
        if k is Ellipsis:
            out.append(Ellipsis)
            out.extend([slice(None)] * (nd - used))
        else:
            out.append(k)
    if not n_ell:
        out.extend([slice(None)] * (nd - used))
    return out


def _result_dims(k) -> int:
    """Result dims a basic entry produces."""
    if (isinstance(k, _INT_TYPES) and not _is_bool_scalar(k)) or k is Ellipsis:
        return 0
    return 1


# ---- case A: basic indexing --------------------------------------------------------------------
def _basic_key(key: list, bdim: int) -> tuple[tuple, int, bool]:
    """Physical key with ``slice(None)`` at the batch axis; the batch axis of the result; and
    whether one example's result is a scalar (NumPy returns a copy then)."""
    consumed = produced = 0
    out = []
    placed = None
    for k in key:
        c = _consumes(k)
        if placed is None and c and consumed == bdim:
            out.append(slice(None))
            placed = produced
        out.append(k)
        consumed += c
        produced += _result_dims(k)
    if placed is None:
        out.append(slice(None))
        placed = produced
    scalar = produced == 0
    return tuple(out), placed, scalar


# ---- advanced indexing --------------------------------------------------------------------------
def _adv_layout(key: list):
    """Positions of the advanced entries (integers count as advanced once any array is
    present), whether they are adjacent, and the result dims of basic entries before them."""
    if all(_is_basic(k) for k in key):
        return [], True, 0
    adv = [i for i, k in enumerate(key)
           if not _is_basic(k) or (isinstance(k, _INT_TYPES) and not _is_bool_scalar(k))]
    adjacent = adv == list(range(adv[0], adv[0] + len(adv)))
    n_pre = sum(_result_dims(key[i]) for i in range(adv[0]))
    return adv, adjacent, n_pre


def _index_shape(k) -> tuple:
    """Shape an advanced entry contributes to the broadcast (only its rank matters here)."""
    if _is_bool_scalar(k):
        return (1,)  # a 0-d boolean index: one dimension of length 1 (True) or 0 (False)
    if isinstance(k, _INT_TYPES):
        return ()
    if k.dtype == bool:
        return (1,)  # one dimension: the number of selected elements
    return tuple(k.shape)


class _Plan:
    """A physical index for ``x[key]`` and where the batch axis of the result lands.

    ``x`` is the physical value laid out for ``key`` (its batch axis at ``batch_axis``);
    ``raw_bdim`` the batch axis of ``x[key]``; ``moves`` a ``(src, dst)`` moveaxis that puts
    the raw result in the logical layout (batch first), or None; ``region_rank`` the logical
    rank of one example's result.
    """

    __slots__ = ("x", "key", "raw_bdim", "moves", "region_rank", "scalar", "batch_axis")

    def __init__(self, x, key, raw_bdim, moves, region_rank, scalar=False, batch_axis=0):
        self.x, self.key, self.raw_bdim = x, key, raw_bdim
        self.moves, self.region_rank, self.scalar = moves, region_rank, scalar
        self.batch_axis = batch_axis

    def get(self, x):
        try:
            return x[self.key]
        except IndexError as e:
            raise _logical_index_error(e, self.batch_axis) from None

    def set(self, value) -> None:
        try:
            self.x[self.key] = value
        except IndexError as e:
            raise _logical_index_error(e, self.batch_axis) from None


def _common_bounds(k: slice, level) -> slice:
    """A slice whose batched bounds hold one integer for every example (``x[n - m:]`` with a
    count ``n`` that does not depend on the data) as that plain slice; other bounds stay."""
    def bound(v):
        if type(v) is BatchedTensor and v._level is level and v.dtype.kind in "iu":
            common = v._common_example()
            if type(common) is BatchedTensor:  # every example's, batched at an outer level
                return common
            if common is not None:
                return int(common)
        return v
    return slice(bound(k.start), bound(k.stop), bound(k.step))


def _plan(level, xv, xb, key_in) -> _Plan:
    key = key_in if type(key_in) is tuple else (key_in,)
    _check_index_types(key)
    if any(type(k) is list and scan_level(k) is not None for k in key):
        key = tuple(_as_index_array(k) if type(k) is list else k for k in key)
    if any(type(k) is slice and scan_level(k) is level for k in key):
        key = tuple(_common_bounds(k, level) if type(k) is slice else k for k in key)
    for k in key:
        if type(k) is slice:
            require(scan_level(k) is not level, "a batched slice bound")
    batched = any(type(k) is BatchedTensor and k._level is level for k in key)
    nd = xv.ndim - (xb is not None)
    bools = any(_is_bool_scalar(k) for k in key)
    if not batched and not bools and all(_is_basic(k) for k in key):
        ekey = _expand(key, nd)
        pkey, bdim, scalar = _basic_key(ekey, xb)
        rank = sum(_result_dims(k) for k in ekey)
        # NumPy: a 0-d result is a scalar copy unless the key holds an Ellipsis (a 0-d view).
        scalar = scalar and not any(k is Ellipsis for k in key)
        return _Plan(xv, pkey, bdim, None, rank, scalar, batch_axis=xb)
    # NumPy reads a boolean scalar as a 0-d boolean *array*, an advanced index: with one in the
    # key, integers are advanced indices too, and advanced entries separated by a slice put
    # their dimension first (x[0, :, True] of a (4, 5) example is (1, 5)).
    require(not bools or all(_is_basic(k) or _is_bool_scalar(k) for k in key),
            "a boolean scalar with array indices")
    key = tuple(_as_index_array(k) for k in key)
    if not batched:
        ekey = _expand(key, nd)
        adv, adjacent, _ = _adv_layout(ekey)
        r = _broadcast_rank([_index_shape(ekey[i]) for i in adv])
        rest = sum(_result_dims(k) for i, k in enumerate(ekey) if i not in adv)
        x = move_bdim_to_front(xv, xb)
        pkey = (slice(None),) + tuple(ekey)
        return _Plan(x, pkey, 0 if adjacent else r, None, r + rest)

    # Case C: batched index arrays.
    n = next(k._value.shape[k._bdim] for k in key if type(k) is BatchedTensor
             and k._level is level)
    x = ensure_bdim(xv, xb, n)
    entries: list[Any] = []
    for k in key:
        kv, kb = unwrap(k, level)
        if kb is not None and kv.dtype == bool:
            entries.append(_Mask0d(kv, n) if kv.ndim == 1 else None)
            if kv.ndim > 1:
                entries[-1:] = mask_to_indices(kv, kb, n)
        else:
            entries.append((kv, kb))
    ekey = _expand(tuple(e if type(e) in (_Batched, _Mask0d) else e[0] if e[1] is None
                         else _Batched(e) for e in entries), nd)
    x, ekey = _open_mask0d_axes(x, ekey)
    _check_mask_dims(ekey, x.shape[1:])
    adv, adjacent, n_pre = _adv_layout(ekey)
    try:
        r = _broadcast_rank([_logical_index_shape(ekey[i]) for i in adv])
    except IndexError:
        if n == 0 and any(type(k) is _Batched and k.mask_size is not None for k in ekey):
            raise BatchingError(
                "indexing with a batched boolean mask next to other index arrays, with batch "
                "size 0: the number of elements the mask selects, which the other index arrays "
                "must broadcast with, is known only from an example") from None
        raise
    index: list[Any] = [np.reshape(np.arange(n, like=innermost(x)), (n,) + (1,) * r)]
    for k in ekey:
        if isinstance(k, _Batched):
            index.append(pad_to_rank(move_bdim_to_front(k.value, k.bdim), r))
        else:
            index.append(k)
    rest = sum(_result_dims(k) for i, k in enumerate(ekey) if i not in adv)
    moves = None
    if adjacent and adv[0] > 0 and n_pre:
        moves = (list(range(1, 1 + r)), list(range(1 + n_pre, 1 + n_pre + r)))
    return _Plan(x, tuple(index), 0, moves, r + rest)


class _Mask0d:
    """A batched 0-d boolean index: it adds an axis of length 0 or 1 (the same in every
    example). Indexing a new size-1 axis of x with ``count`` zeros does exactly that."""

    __slots__ = ("count",)

    def __init__(self, mask, n):
        base = innermost(mask)  # every example at every level
        hi = bool(np.any(base))
        if n and hi != bool(np.all(base)):
            raise DataDependentError(
                "indexing with a batched 0-d boolean index: it is True for some examples and "
                "False for others, so the results have different shapes (1 or 0 along the new "
                "axis). Use np.where(mask, x, fill) to keep shapes fixed.")
        self.count = int(hi)


def _open_mask0d_axes(x, ekey):
    """Insert x's size-1 axis for each batched 0-d boolean index, which becomes a batched
    integer index (zeros of length 0 or 1) into it."""
    if not any(type(k) is _Mask0d for k in ekey):
        return x, ekey
    out = []
    pos = 0
    for k in ekey:
        if type(k) is _Mask0d:
            n = x.shape[0]
            x = np.expand_dims(x, 1 + pos)
            k = _Batched((np.zeros((n, k.count), dtype=np.intp, like=innermost(x)), 0), 1)
        out.append(k)
        pos += _consumes(k)
    return x, out


def _broadcast_rank(shapes) -> int:
    try:
        return len(np.broadcast_shapes(*shapes))
    except ValueError:
        raise IndexError(f"shape mismatch: indexing arrays could not be broadcast together "
                         f"with shapes {' '.join(map(str, shapes))}") from None


class _Batched:
    """A batched index entry; ``mask_size``: the size of the mask axis it was made from."""

    __slots__ = ("value", "bdim", "mask_size")

    def __init__(self, pair, mask_size=None):
        self.value, self.bdim = pair
        self.mask_size = mask_size


def _check_mask_dims(ekey, shape) -> None:
    """NumPy's check that every axis of a boolean mask matches the axis it indexes."""
    pos = 0
    for k in ekey:
        if type(k) is _Batched and k.mask_size is not None and k.mask_size != shape[pos]:
            raise IndexError(f"boolean index did not match indexed array along axis {pos}; "
                             f"size of axis is {shape[pos]} but size of corresponding boolean "
                             f"axis is {k.mask_size}")
        pos += _consumes(k)


def _logical_index_shape(k) -> tuple:
    if isinstance(k, _Batched):
        s = k.value.shape
        return tuple(s[:k.bdim]) + tuple(s[k.bdim + 1:])
    return _index_shape(k)


_MASK_WHAT = ("indexing with a batched boolean mask: the mask",
              "x[mask] = value works with any counts")


def mask_to_indices(mask, bdim, n, what: tuple = _MASK_WHAT) -> list:
    """A batched boolean mask -> one batched integer index per mask dimension.

    Every example must select the same number of elements (else the results differ in shape).
    A mask that is itself batched at an outer level is converted with NumPy calls that dispatch
    there (a stable argsort puts the selected positions first, in order).
    """
    m = move_bdim_to_front(mask, bdim)
    mshape = tuple(m.shape[1:])
    size = math.prod(mshape)
    flat = np.reshape(m, (n, size))
    counts = innermost(np.sum(flat, axis=1))  # every example at every level
    if counts.size and not bool(np.all(counts == np.reshape(counts, -1)[:1])):  # (every backend)
        between = (f"between {int(np.min(counts))} and {int(np.max(counts))}"
                   if type(counts) is np.ndarray else "a different number of")
        raise DataDependentError(
            f"{what[0]} selects {between} elements depending on the example, so "
            f"the results have different shapes and cannot be batched. Keep shapes fixed with "
            f"np.where(mask, x, fill), or reduce with where=mask ({what[1]})."
        )
    if type(m) is not BatchedTensor:
        idx = [np.reshape(i, (n, -1) if n else (0, 0)) for i in np.nonzero(m)[1:]]
    else:
        c = int(counts.flat[0]) if counts.size else 0
        pos = np.argsort(~flat, axis=1, kind="stable")[:, :c]
        idx = [np.remainder(np.floor_divide(pos, math.prod(mshape[i + 1:])), d)
               if len(mshape) > 1 else pos for i, d in enumerate(mshape)]
    # (NumPy checks a mask's shape against the axes it indexes only if it has elements)
    return [_Batched((i, 0), d if size else None) for i, d in zip(idx, mshape)]


def lift(x, key):
    """A plain physical value indexed with BatchedTensors of outer levels: broadcast it to the
    highest of those levels (a view) so the physical indexing dispatches there."""
    if type(x) is BatchedTensor:
        return x
    low = scan_level(key)
    if low is None:
        return x
    n = low.size
    return new_batched(np.broadcast_to(x[None], (n,) + tuple(x.shape)), 0, low)


@batch_rule(operator.getitem, raw=True)
def getitem_rule(level, args, kwargs):
    x, key = args
    xv, xb = unwrap(x, level)
    if _is_field_key(key):
        return wrap(xv[key], xb, level)  # a field view: the batch axis stays where it is
    key = _one_row_per_example(level, key, logical_rank(xv, xb))
    try:
        plan = _plan(level, xv, xb, key)
    except DataDependentError:
        mask = _level_mask(level, key)
        selection = None if mask is None else select(level, xv, xb, mask._value, mask._bdim)
        if selection is None:
            raise
        return selection  # kept vectorised while it stays inside the function (ragged.py)
    xp = plan.x
    if scan_level(plan.key) is not None:
        xp = lift(xp, plan.key)
    res = plan.get(xp)
    if plan.scalar:
        res = np.copy(res)  # NumPy returns a scalar copy for one example, never a view
    if plan.moves is not None:
        res = np.moveaxis(res, *plan.moves)
    return wrap(res, plan.raw_bdim, level)


def _one_row_per_example(level, key, rank: int):
    """``x[i]`` where ``i`` is an integer (a NumPy scalar) per example: the loop's result is a
    view of ``x`` (basic indexing), so writes through either reach the other. Where every
    example holds the same integer, that integer gives the same view here; where they differ,
    no strided view can stand for every example's and a gathered copy would lose those
    writes: a DataDependentError (vmap reruns per example). A 0-d *array* index, any array
    among the entries, or an integer for every axis (a scalar) makes NumPy's result a copy
    too, which the gather gives exactly."""
    entries = key if type(key) is tuple else (key,)
    at = [j for j, k in enumerate(entries) if type(k) is BatchedTensor and k._level is level]
    if not at or not all(_basic_or_scalar(k) for k in entries):
        return key
    phys = [innermost(entries[j]._value) for j in at]
    if phys[0].size == 0 or not all(_holds_data(v) for v in phys):
        return key  # (no example; or a recording's symbolic values, whose model has no views)
    if len(entries) == rank and all(type(k) is BatchedTensor or isinstance(k, _INT_TYPES)
                                    for k in entries):
        return key  # one element: NumPy gives a scalar, a copy, as the gather does
    first = [int(v.ravel()[0]) for v in phys]
    if any(not bool(np.all(v == f)) for v, f in zip(phys, first)):
        raise DataDependentError(
            "x[i] with an integer i that differs between examples: the loop's x[i] is a view "
            "of x (a write through either reaches the other), and one batched array cannot "
            "view a different position of x in each example. Index with a 1-element array "
            "(x[[i]][0] or np.take(x, i, axis=0)) for a copy.", level)
    out = list(entries)
    for j, v in zip(at, first):
        out[j] = v
    return tuple(out) if type(key) is tuple else out[0]


def _holds_data(v) -> bool:
    t = type(v)
    return t is np.ndarray or (getattr(t, "__module__", "") or "").split(".")[0] == "cupy"


def _basic_or_scalar(k) -> bool:
    if type(k) is BatchedTensor:
        return k.ndim == 0 and k.dtype.kind in "iu" and scalar_per_example(k)
    return k is None or k is Ellipsis or type(k) is slice or \
        (isinstance(k, _INT_TYPES) and not _is_bool_scalar(k))


_SETITEM_HELP = ("If x was created inside the function, create it from a batched value: "
                 "np.zeros_like(v), or np.zeros_like(v, shape=...) for another shape "
                 "(np.zeros(shape, like=v) only picks the backend, it is not batched); or build "
                 "the result with np.where instead of writing.")


@batch_rule(operator.setitem, raw=True)
def setitem_rule(level, args, kwargs):
    x, key, value = args
    xv, xb = unwrap(x, level)
    if xb is None:
        raise SharedWriteError(
            "x[key] = v: cannot write into x, which is not batched at this vmap level (shared by "
            "every example), with v or the index differing per example. " + _SETITEM_HELP)
    if read_only(xv):
        # NumPy checks the destination before the index and the value
        raise ValueError("assignment destination is read-only")
    if _is_field_key(key):  # write into the field view, as x['a'][...] = v
        return setitem_rule(level, (new_batched(xv[key], xb, level), Ellipsis, value), kwargs)
    key_t = key if type(key) is tuple else (key,)
    if is_ragged(value):
        mask = _level_mask(level, key)
        if mask is None:
            raise value.no_batched_meaning("x[key] = selection, with a key other than one mask,")
        write_selection(level, xv, xb, mask._value, mask._bdim, value)
        return None
    vv, vb = unwrap(value, level)
    if len(key_t) == 1 and getattr(key_t[0], "dtype", None) == bool \
            and ndim_of(key_t[0]) == xv.ndim - 1 and logical_rank(vv, vb) > 1:
        raise TypeError(f"NumPy boolean array indexing assignment requires a 0 or "
                        f"1-dimensional input, input has {logical_rank(vv, vb)} dimensions")
    if _masked_write(level, xv, xb, key_t, vv, vb):
        return None
    if len(key_t) == 1 and type(key_t[0]) is BatchedTensor and key_t[0]._level is level \
            and key_t[0].dtype == bool:
        _check_mask_counts(key_t[0], xv.ndim - 1, vv, vb)
    plan = _plan(level, xv, xb, key)
    outer = scan_level((plan.key, vv))
    if type(plan.x) is not BatchedTensor and outer is not None:
        e = SharedWriteError(
            "x[key] = v: x is not batched at an outer vmap level at which v or the index is "
            "batched, so every example of that level would write into the same array. "
            + _SETITEM_HELP, level=outer)
        e.targets = (plan.x,)
        raise e
    if vb is None and type(vv) is not BatchedTensor and ndim_of(vv) == 0:
        plan.set(vv)  # a scalar broadcasts anywhere
        return None
    v = move_bdim_to_front(vv, vb) if vb is not None else np.expand_dims(as_array(vv, xv), 0)
    v = drop_leading_ones(v, plan.region_rank)
    v = pad_to_rank(v, plan.region_rank)
    if plan.moves is not None:
        v = np.moveaxis(v, plan.moves[1], plan.moves[0])
    if plan.raw_bdim:
        v = np.moveaxis(v, 0, plan.raw_bdim)
    if any(type(k) is np.ndarray for k in plan.key):  # an advanced index: repeats in order
        plan.key = tuple(in_c_order(k) for k in plan.key)
        v = in_c_order(v)
    try:
        plan.set(v)
    except (ValueError, IndexError):
        if xv.shape[xb] == 0 and any(type(k) is BatchedTensor and k._level is level
                                     and k.dtype == bool for k in key_t):
            return None  # no example: nothing to write (the count v must match is unknown)
        raise
    return None


def _level_mask(level, key):
    """The key's one batched boolean mask of this level, else None."""
    if type(key) is tuple:
        if len(key) != 1:
            return None
        key = key[0]
    if type(key) is BatchedTensor and key._level is level and key.dtype == bool:
        return key
    return None


def _check_mask_counts(mask: BatchedTensor, nd: int, vv, vb) -> None:
    """``x[mask] = v`` with one value per selected element: where the counts differ between
    examples, some example's count is not v's length, and NumPy raises its ValueError there
    (not a batching problem: the loop raises too)."""
    m = flat_front(mask._value, mask._bdim)
    counts = innermost(np.sum(m, axis=1))
    if not counts.size or bool(np.all(counts == counts.flat[0])):
        return
    rank = nd - (mask.ndim) + 1  # the selected region: (count, *the unmasked dims)
    v = move_bdim_to_front(vv, vb) if vb is not None else np.expand_dims(vv, 0)
    v = drop_leading_ones(v, rank)
    k = v.shape[1] if v.ndim - 1 == rank else 1
    if k == 1:
        return
    bad = next(int(c) for c in np.ravel(counts) if int(c) != k)
    raise ValueError(f"NumPy boolean array indexing assignment cannot assign {k} input values "
                     f"to the {bad} output values where the mask is true")


def drop_leading_ones(v, rank: int):
    """A batch-first value whose example has more than ``rank`` dims, the extra leading ones of
    size 1 (NumPy assigns those by dropping them): drop them."""
    extra = v.ndim - 1 - rank
    if extra <= 0 or any(d != 1 for d in v.shape[1:1 + extra]):
        return v  # NumPy raises its own broadcast error below
    return v[(slice(None),) + (0,) * extra]


def _masked_write(level, xv, xb, key, vv, vb) -> bool:
    """``x[mask] = v`` with a batched mask and a ``v`` that does not depend on the count: a
    masked copy, which allows a different count per example (``x[x < 0] = 0``)."""
    if len(key) != 1:
        return False
    (mask,) = key
    if not (type(mask) is BatchedTensor and mask.dtype == bool):
        return False
    mv, mb = unwrap(mask, level)  # (a mask batched at an outer level only: mb is None)
    if mb is None:
        if type(xv) is not BatchedTensor:
            return False  # (x plain there: the general path raises the shared-target error)
        mv, mb = np.expand_dims(mv, 0), 0
    nd = xv.ndim - 1
    k = mv.ndim - 1
    if k > nd:
        raise IndexError(f"too many indices for array: array is {nd}-dimensional, but {k} "
                         f"were indexed")
    scalar = vb is None and type(vv) is not BatchedTensor and ndim_of(vv) == 0
    if not scalar:
        v = move_bdim_to_front(vv, vb) if vb is not None else np.expand_dims(vv, 0)
        v = drop_leading_ones(v, nd - k)
        if v.ndim - 1 > nd - k:
            return False  # one value per selected element: needs the same count everywhere
    x = move_bdim_to_front(xv, xb)
    m = move_bdim_to_front(mv, mb)
    if not math.prod(m.shape[1:]):
        return True  # a mask with no elements selects nothing (and NumPy checks no shape)
    for ax, (a, b) in enumerate(zip(x.shape[1:], m.shape[1:])):
        if a != b:
            raise IndexError(f"boolean index did not match indexed array along axis {ax}; "
                             f"size of axis is {a} but size of corresponding boolean axis is "
                             f"{b}")
    m = np.reshape(m, tuple(m.shape) + (1,) * (nd - k))
    v = vv if scalar else pad_to_rank(v, nd)  # a Python scalar stays one (NEP 50)
    np.copyto(x, v, casting="unsafe", where=m)
    return True


def in_c_order(x):
    """A NumPy array laid out in C order (copied only if it is not): an index or value array of
    a write, so that NumPy writes in the examples' logical order and, where an index repeats,
    the value written last per example stays, as in the loop (NumPy follows the memory order
    of a backwards-strided index or value)."""
    if type(x) is np.ndarray and x.ndim and not x.flags.c_contiguous:
        return np.ascontiguousarray(x)
    return x


# ---- flat layout (shared with placement.py and selection.py) ------------------------------------
def flat_front(x, bdim):
    """Every example flattened: ``(B, size)`` if batched, ``(1, size)`` if not."""
    if bdim is None:
        return np.reshape(x, (1, -1))
    f = move_bdim_to_front(x, bdim)
    return np.reshape(f, (f.shape[0], math.prod(f.shape[1:])))


# ---- index construction -------------------------------------------------------------------------
def _stand_in(x, bdim):
    """A broadcast (allocation-free, read-only) stand-in of one example, on x's backend: for
    ops that read only the shape."""
    return np.broadcast_to(np.zeros((), dtype=x.dtype, like=innermost(x)), logical_shape(x, bdim))


def _static_indices(op):
    """Ops whose result depends on the example's shape only: unbatched outputs."""
    def rule(arr, arr_bdim, *args, **kwargs):
        return tuple((r, None) for r in op(_stand_in(arr, arr_bdim), *args, **kwargs))

    rule.__name__ = f"{op.__name__}_rule"
    return batch_rule(op)(rule)


tril_indices_from_rule = _static_indices(np.tril_indices_from)
triu_indices_from_rule = _static_indices(np.triu_indices_from)
diag_indices_from_rule = _static_indices(np.diag_indices_from)


@batch_rule(np.ix_)
def ix_rule(*args, args_bdims):
    n = len(args)
    out = []
    for i, (x, b) in enumerate(zip(args, args_bdims)):
        shape = (1,) * i + (-1,) + (1,) * (n - i - 1)
        if b is None:
            (one,) = np.ix_(x)
            out.append((np.reshape(one, shape), None))
            continue
        f = move_bdim_to_front(x, b)
        if f.ndim != 2:
            raise ValueError("Cross index must be 1 dimensional")
        if f.dtype == bool:
            (e,) = mask_to_indices(f, 0, f.shape[0], (f"numpy.ix_: the batched boolean "
                                                       f"argument {i}",
                                                       "or index with integer arrays"))
            f = e.value
        # (NumPy gives an empty argument the intp type only when it is not an array already;
        # each example here is one, and its result a view of it)
        out.append((np.reshape(f, (f.shape[0],) + tuple(f.shape[1] if d == -1 else 1
                                                          for d in shape)), 0))
    return tuple(out)


def _rmi_args(multi_index, dims, mode="raise", order="C"):
    return multi_index, dims, mode, order


@batch_rule(np.ravel_multi_index, raw=True)
def ravel_multi_index_rule(level, args, kwargs):
    multi_index, dims, mode, order = _rmi_args(*args, **kwargs)
    mv, mb = unwrap(multi_index, level)
    if mb is not None:  # one batched array: its first logical axis lists the coordinates
        f = move_bdim_to_front(mv, mb)
        pairs = [(f[:, j], 0) for j in range(f.shape[1])]
    else:
        pairs = [unwrap(e, level) for e in multi_index]
    rank = max([logical_rank(v, b) for v, b in pairs] + [0])
    aligned = align_front([v for v, _ in pairs], [b for _, b in pairs], rank)
    return wrap(np.ravel_multi_index(tuple(aligned), dims, mode=mode, order=order), 0, level)


@batch_rule(np.unravel_index)
def unravel_index_rule(indices, indices_bdim, shape, order="C"):
    return tuple((r, indices_bdim) for r in np.unravel_index(indices, shape, order=order))


__all__ = ["lift", "mask_to_indices", "drop_leading_ones", "flat_front", "in_c_order"]
