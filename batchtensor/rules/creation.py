"""Array creation and conversion.

- From a prototype (zeros_like, ones_like, empty_like, full_like): ``np.zeros_like(x)`` of a
  batched ``x`` is batched: a fresh, writable array per example (so ``out = np.zeros_like(x,
  shape=(3,)); out[0] = x[0]`` works per example). A batched ``fill_value`` of ``full_like``
  makes the result batched even for an unbatched prototype.
- From a shape (zeros, ones, empty, full, arange, eye, identity, tri, fromfunction) with
  ``like=x``: NumPy removes ``like`` and asks ``x``; nothing batched reaches the op, so
  ``dispatch`` creates a plain (unbatched) array on ``x``'s physical backend. The exceptions
  have rules here: ``np.full(shape, v, like=x)`` with a batched ``v`` (batched, ``v`` per
  example) and ``np.fromfunction(f, shape, like=x, **kw)`` with batched keywords.
- Conversion (array, asarray, asanyarray, ascontiguousarray, asfortranarray, require) of a
  batched value with ``like=``: the example converted, batch axis kept.
- Ranges from array endpoints (linspace, logspace, geomspace) and meshgrid: batched endpoints,
  bases and grid vectors give one range / grid per example.
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from ..errors import BatchingError, DataDependentError
from ..plumbing import innermost, scan_level, unwrap, wrap
from ..registry import batch_rule, decomposition, is_physical_type
from ..tensor import BatchedTensor, scalar_per_example
from ._helpers import (LoopFallback, align_front, any_example, flat_rows, logical_rank,
                       logical_shape, move_bdim_to_front, pad_to_rank, require, shared_value,
                       wrap_axis)
from .views import broadcast_examples, example_layout, example_strides, is_contiguous


def _shape_arg(shape) -> tuple:
    if isinstance(shape, (int, np.integer)):
        return (operator.index(shape),)
    return tuple(operator.index(d) for d in shape)


def _example_order(a, a_bdim: int, order: str) -> str:
    """K where ``a``'s batch axis is outermost in memory, so that keeping its layout gives
    each example its own block, laid out as NumPy lays out one example's; else C or F, the
    layout NumPy gives one example for K or A (for K: an input mapped along its last axis or
    F-ordered, whose examples lie interleaved)."""
    found = example_layout(a, compact=False)
    if found is None:
        return order
    shape, strides = found
    span = sum(abs(s) * (d - 1) for ax, (d, s) in enumerate(zip(shape, strides)) if ax != a_bdim)
    if order == "K" and (shape[a_bdim] <= 1 or abs(strides[a_bdim]) > span):
        return order
    eshape, st = logical_shape(a, a_bdim), example_strides(a, a_bdim)
    if st is None:
        return "C"
    size = a.dtype.itemsize
    if is_contiguous(eshape, st, size, False):
        return "C"
    if is_contiguous(eshape, st, size, True):
        return "F"
    moving = [abs(s) for d, s in zip(eshape, st) if d > 1]  # K: the example's stride order
    return "F" if order == "K" and moving == sorted(moving) and moving[0] < moving[-1] else "C"


def _batched_like(make, a, a_bdim, n, dtype, order, subok, shape, device):
    """``make`` (an ``*_like`` function) per example: returns ``(out, out_bdim)``.

    With ``order`` K/A and no ``shape`` the physical layout (batch axis included) is kept;
    otherwise every example gets the requested order: batch axis first for C, last for F.
    """
    kw = {"dtype": dtype, "subok": subok}
    if device is not None:
        kw["device"] = device
    if a_bdim is not None and shape is None and order in ("K", "A"):
        order = _example_order(a, a_bdim, order)
        if order == "K":
            return make(a, order=order, **kw), a_bdim
    if shape is not None:
        lshape = _shape_arg(shape)
    elif a_bdim is None:  # a plain array, a list, or a BatchedTensor of an outer level
        lshape = tuple(a.shape) if hasattr(a, "shape") else np.shape(a)
    else:  # (a.shape, not np.shape: a may be a BatchedTensor of an outer level)
        lshape = tuple(a.shape[:a_bdim]) + tuple(a.shape[a_bdim + 1:])
    if a_bdim is not None:
        a = move_bdim_to_front(a, a_bdim)
    if order == "F":
        return make(a, order="F", shape=lshape + (n,), **kw), len(lshape)
    if order not in ("C", "K", "A"):
        raise ValueError(f"order must be one of 'C', 'F', 'A', or 'K' (got {order!r})")
    return make(a, order="C", shape=(n,) + lshape, **kw), 0


def _like_rule(op):
    def rule(a, a_bdim, dtype=None, order="K", subok=True, shape=None, *, device=None):
        return _batched_like(op, a, a_bdim, a.shape[a_bdim], dtype, order, subok, shape, device)

    rule.__name__ = f"{op.__name__}_rule"
    return batch_rule(op)(rule)


zeros_like_rule = _like_rule(np.zeros_like)
ones_like_rule = _like_rule(np.ones_like)


@batch_rule(np.empty_like)
def empty_like_rule(prototype, prototype_bdim, /, dtype=None, order="K", subok=True,
                    shape=None, *, device=None):
    n = prototype.shape[prototype_bdim]
    return _batched_like(np.empty_like, prototype, prototype_bdim, n, dtype, order, subok, shape,
                         device)


def _order_like(a, order: Any) -> str:
    """C or F: the layout NumPy gives a new array like the unbatched ``a`` with ``order``
    K or A, as one example made alike shows (C where it is neither)."""
    one = np.empty_like(a, order=order)
    return "F" if one.flags.f_contiguous and not one.flags.c_contiguous else "C"


def _fill_for(fill, lead: int, example: tuple):
    """``fill`` (its first ``lead`` axes batch axes) as NumPy copies it into one example of
    shape ``example``: leading unit axes past the example's rank dropped, other extra axes
    refused (else they would meet the batch axis)."""
    shape = tuple(fill.shape[lead:])
    extra = len(shape) - len(example)
    if extra <= 0:
        return fill
    if any(d != 1 for d in shape[:extra]):
        raise ValueError(f"could not broadcast input array from shape {shape} into shape "
                         f"{example}")
    return np.reshape(fill, tuple(fill.shape[:lead]) + shape[extra:])


def _on_levels_of(out, proto):
    """An empty ``out`` made again batched at the outer levels ``proto`` is batched at (nested
    vmaps), each outer example laid out as ``out`` is; ``out`` itself where its layout is
    neither C nor F (the copy into it then refuses, and the function reruns)."""
    for fortran, order in ((False, "C"), (True, "F")):
        if is_contiguous(out.shape, out.strides, out.itemsize, fortran):
            return np.empty_like(proto, dtype=out.dtype, order=order, shape=out.shape)
    return out


@batch_rule(np.full_like)
def full_like_rule(a, a_bdim, fill_value, fill_value_bdim, dtype=None, order="K", subok=True,
                   shape=None, *, device=None):
    if fill_value_bdim is None and np.ndim(fill_value) == 0:
        def make(x, **kw):
            return np.full_like(x, fill_value, **kw)

        return _batched_like(make, a, a_bdim, a.shape[a_bdim], dtype, order, subok, shape,
                             device)
    # A fill value per example, or an array fill that must broadcast against each example (not
    # against the batch, whose axis may lie among its trailing axes): an empty result of a's
    # dtype, then one copy into it batch-first (as NumPy copies).
    n = fill_value.shape[fill_value_bdim] if fill_value_bdim is not None else a.shape[a_bdim]
    if dtype is None:
        # (a list prototype: NumPy's empty_like tells its dtype; result_type reads a list as
        # a structured dtype's fields)
        dtype = a.dtype if hasattr(a, "dtype") else np.empty_like(a, shape=0).dtype
    if a_bdim is None and not hasattr(a, "shape"):
        # a list or scalar prototype: the result is made on the fill's backend, a's shape
        shape, a = (np.shape(a) if shape is None else shape), fill_value
    elif a_bdim is None and shape is None and order in ("K", "A"):
        order = _order_like(a, order)
    out, out_bdim = _batched_like(np.empty_like, a, a_bdim, n, dtype, order, subok, shape,
                                  device)
    if type(fill_value) is BatchedTensor and type(out) is not BatchedTensor and not (
            isinstance(out, np.ndarray) and type(out) is not np.ndarray):
        out = _on_levels_of(out, fill_value)  # a fill batched at outer levels that a is not
    target = move_bdim_to_front(out, out_bdim)
    if fill_value_bdim is None:
        fill = _fill_for(fill_value, 0, tuple(target.shape[1:]))
    else:
        fill = _fill_for(move_bdim_to_front(fill_value, fill_value_bdim), 1,
                         tuple(target.shape[1:]))
        fill = pad_to_rank(fill, target.ndim - 1)
    np.copyto(target, fill, casting="unsafe")
    return out, out_bdim


# ---- full / fromfunction with like= and a batched argument -------------------------------------
@batch_rule(np.full)
def full_rule(shape, fill_value, fill_value_bdim, dtype=None, order="C", *, device=None):
    """``np.full(shape, v, like=x)`` with a batched ``v``: ``v`` per example (NumPy dispatches
    ``full`` only through ``like=``; without it a batched ``v`` is converted and raises)."""
    lshape = _shape_arg(shape)
    n = fill_value.shape[fill_value_bdim]
    if dtype is None:
        dtype = fill_value.dtype
    kw = {} if device is None else {"device": device}
    np.empty(0, order=order, **kw)  # NumPy's errors for order= and device=
    # empty_like: the target is batched at every outer level ``fill_value`` is batched at
    if order == "F":  # batch axis last: every example is F-contiguous
        out = np.empty_like(fill_value, dtype, order="F", shape=lshape + (n,), **kw)
        out_bdim = len(lshape)
    else:
        out = np.empty_like(fill_value, dtype, order="C", shape=(n,) + lshape, **kw)
        out_bdim = 0
    fill = pad_to_rank(move_bdim_to_front(fill_value, fill_value_bdim), len(lshape))
    np.copyto(move_bdim_to_front(out, out_bdim), fill, casting="unsafe")
    return out, out_bdim


def _physical_like(obj):
    """The physical array under every level of the first BatchedTensor in ``obj``."""
    stack = [obj]
    while stack:
        x = stack.pop()
        if type(x) is BatchedTensor:
            return innermost(x)
        if isinstance(x, (list, tuple)):
            stack.extend(x)
        elif isinstance(x, dict):
            stack.extend(x.values())
    return None


@decomposition(np.fromfunction)
def fromfunction_decomposition(function, shape, *, dtype=float, **kwargs):
    """``np.fromfunction(f, shape, like=x, c=v)`` with a batched keyword ``v``: ``f`` runs once
    on the plain coordinate arrays (on ``x``'s backend) and ``v`` batches its result.

    A function that closes over batched values needs nothing from here: ``f`` runs once on the
    plain coordinates and the batched values in its body dispatch as usual, so the result is
    whatever ``f`` makes of them (batched if it uses them), exactly as in the loop.
    """
    idx = np.indices(shape, dtype=dtype)
    ref = _physical_like(kwargs)
    if ref is not None and type(ref) is not np.ndarray:
        idx = np.asarray(idx, like=ref)
    return function(*idx, **kwargs)


# ---- conversion: array, asarray, asanyarray, ascontiguousarray, asfortranarray, require --------
# NumPy dispatches these only through ``like=``: ``np.asarray(x, like=x)`` comes here, while
# ``np.asarray(x)`` of a batched ``x`` never asks us and ends in ``BatchedTensor.__array__``,
# which raises a TypeError (use the value as it is, ``np.asarray(x, like=x)``, ``x.astype``).
# The result is the example converted: dtype=, copy=, order= (per example: a C-order example is
# C-contiguous), ndmin= (new *logical* leading axes). No copy is made where none is needed, so
# the result is a view that writes through, as in the loop.
#
# A list or tuple holding batched values (``np.asarray([x, y, 1.0], like=x)``) is stacked per
# example, with NumPy's dtype discovery (Python scalars count as int64 / float64 / complex128,
# as in ``np.array``); NumPy's dispatcher does not look inside it, so ``like=`` must be given.

_COPY_ERROR = "Unable to avoid copy while creating an array as requested."
_FLAGS = {"C": "C", "C_CONTIGUOUS": "C", "CONTIGUOUS": "C", "F": "F", "F_CONTIGUOUS": "F",
          "FORTRAN": "F", "A": "A", "ALIGNED": "A", "W": "W", "WRITEABLE": "W", "O": "O",
          "OWNDATA": "O", "E": "E", "ENSUREARRAY": "E"}


def _first_tensor(obj):
    for x in obj:
        if type(x) is BatchedTensor:
            return x
        if isinstance(x, (list, tuple)):
            t = _first_tensor(x)
            if t is not None:
                return t
    return None


def _stack_nested(obj, level, dtype):
    """A (nested) list/tuple holding values batched at ``level``: ``(value, 0)``, batch first.

    Sub-sequences without batched values are converted by NumPy (with ``dtype``: NumPy's own
    per-element conversion and errors); batched leaves are cast unsafely, as ``np.array`` does
    with arrays inside a list."""
    items = []
    for e in obj:
        if type(e) is BatchedTensor:
            v, b = unwrap(e, level)
        elif isinstance(e, (list, tuple)) and scan_level(e) is level:
            v, b = _stack_nested(e, level, dtype)
        elif isinstance(e, (list, tuple)) and scan_level(e) is not None:
            # only values of outer levels inside: converted at their own level
            v, b = np.asarray(e, dtype=dtype, like=_first_tensor(e)), None
        else:
            v, b = e, None
        if b is None and type(v) is not BatchedTensor:  # (another backend's array stays there)
            v = np.asarray(v, dtype=dtype, like=v if is_physical_type(type(v)) else None)
        elif dtype is not None and v.dtype != np.dtype(dtype):
            v = v.astype(dtype)
        items.append((v, b))
    n = next(v.shape[b] for v, b in items if b is not None)
    like = next(v for v, b in items if b is not None)
    moved = []
    for v, b in items:
        if b is None:
            if type(v) is np.ndarray and type(like) is not np.ndarray:
                v = np.asarray(v, like=like)
            v = np.broadcast_to(np.expand_dims(v, 0), (n,) + tuple(v.shape))
        else:
            v = move_bdim_to_front(v, b)
        moved.append(v)
    return np.stack(moved, axis=1), 0


def _examples_contiguous(x, bdim, order: str) -> bool:
    """Whether every example of ``x`` is C- (``order="C"``) or F-contiguous as the loop sees it
    (``views.example_strides``; also inside a nested vmap). False where the backend has no
    strides (then a copy in that order is made)."""
    strides = example_strides(x, bdim)
    if strides is None:
        return False
    return is_contiguous(logical_shape(x, bdim), strides, x.dtype.itemsize,
                         fortran=order == "F")


def _convert(level, a, *, dtype=None, copy=None, order=None, subok=True, ndmin=0, ndmax=None,
             device=None):
    """``np.array(a, ...)`` per example for a batched ``a`` (or a sequence holding some)."""
    fresh = False
    if type(a) is BatchedTensor:
        x, bdim = unwrap(a, level)
    else:
        require(isinstance(a, (list, tuple)), "a batched value inside a non-sequence")
        require(dtype is None or np.dtype(dtype) != object,
                "a sequence of batched values with dtype=object (arrays as elements)")
        require(ndmax is None, "a sequence of batched values with ndmax=")
        x, bdim = _stack_nested(a, level, dtype)
        fresh = True
    require(bdim is not None, "the value to convert is not batched at this level")
    nd = x.ndim - 1
    # NumPy validates the arguments (dtype, order, ndmin, ndmax, device) on a size-0 stand-in
    # (ndmax only if given: with a dtype cast, ndmax=0 rejects any array with axes).
    stand_in = np.zeros((0,) * nd, x.dtype)
    extra = {} if ndmax is None else {"ndmax": ndmax}
    np.array(stand_in, dtype=dtype, order=order, ndmin=ndmin, **extra)
    if device is not None:
        np.asarray(stand_in, device=device)
    if fresh and copy is False:
        raise ValueError(_COPY_ERROR)
    kw = {"dtype": dtype, "subok": subok}
    if order in ("C", "F"):
        if _examples_contiguous(x, bdim, order):
            x = np.array(x, copy=copy if not fresh else None, order="K", like=x, **kw)
        elif copy is False:
            raise ValueError(_COPY_ERROR)
        elif order == "C":
            x, bdim = np.array(move_bdim_to_front(x, bdim), order="C", like=x, **kw), 0
        else:
            x, bdim = np.array(np.moveaxis(x, bdim, -1), order="F", like=x, **kw), nd
    else:
        x = np.array(x, copy=copy if not fresh else None, order=order or "K", like=x, **kw)
    if ndmin > nd:
        k = ndmin - nd
        if bdim == 0:
            x = np.expand_dims(x, tuple(range(1, 1 + k)))
        else:  # the first logical axis is physical axis 0
            x, bdim = np.expand_dims(x, tuple(range(k))), bdim + k
    if not fresh and x is a._value and not scalar_per_example(a):
        return a  # NumPy hands an array that needs no conversion back itself: `z is y`
    return wrap(x, bdim, level)


def _raw(op, impl):
    def rule(level, args, kwargs):
        return impl(level, *args, **kwargs)

    rule.__name__ = f"{op.__name__}_rule"
    return batch_rule(op, raw=True)(rule)


@batch_rule(np.arange, raw=True)
def arange_rule(level, args, kwargs):
    """``np.arange(1, n + 1, like=x)`` with batched bounds: where every example (at every
    level) holds the same bounds, a count that does not depend on the data, the one range
    they all make, unbatched; otherwise once per example (ranges of one length stack)."""
    def common(v):
        if type(v) is not BatchedTensor:
            return v
        value, bdim = unwrap(v, level)
        try:
            return shared_value(value, bdim, "np.arange's bounds")
        except (DataDependentError, BatchingError):
            raise LoopFallback("np.arange: the examples' bounds differ") from None

    return np.arange(*(common(a) for a in args), **{k: common(v) for k, v in kwargs.items()})


def _array(level, object, dtype=None, *, copy=True, order="K", subok=False, ndmin=0,
           ndmax=None):
    return _convert(level, object, dtype=dtype, copy=copy, order=order, subok=subok,
                    ndmin=ndmin, ndmax=ndmax)


def _asarray(level, a, dtype=None, order=None, *, device=None, copy=None):
    return _convert(level, a, dtype=dtype, copy=copy, order=order, subok=False, device=device)


def _asanyarray(level, a, dtype=None, order=None, *, device=None, copy=None):
    return _convert(level, a, dtype=dtype, copy=copy, order=order, subok=True, device=device)


def _ascontiguousarray(level, a, dtype=None):
    return _convert(level, a, dtype=dtype, copy=None, order="C", subok=False, ndmin=1)


def _asfortranarray(level, a, dtype=None):
    return _convert(level, a, dtype=dtype, copy=None, order="F", subok=False, ndmin=1)


def _require(level, a, dtype=None, requirements=None):
    if not requirements:
        return _convert(level, a, dtype=dtype, copy=None, subok=True)
    reqs = {_FLAGS[r.upper()] for r in requirements}  # KeyError for an unknown flag, as NumPy
    subok = "E" not in reqs
    reqs.discard("E")
    if reqs >= {"C", "F"}:
        raise ValueError('Cannot specify both "C" and "F" order')
    order = "C" if "C" in reqs else "F" if "F" in reqs else "A"
    reqs -= {"C", "F"}
    out = _convert(level, a, dtype=dtype, copy=None, order=order, subok=subok)
    # OWNDATA: an example is a view into the batch (as in the loop, where it is a slice of the
    # input), so it never owns its data: always a copy. ALIGNED / WRITEABLE: the physical flags
    # (backends without them, e.g. CuPy, are aligned and writeable).
    flags = getattr(out._value, "flags", None)
    if "O" in reqs or any(not getattr(flags, name, True)
                          for r, name in (("A", "aligned"), ("W", "writeable")) if r in reqs):
        out = _convert(level, out, copy=True, order=order, subok=subok)
    return out


array_rule = _raw(np.array, _array)
asarray_rule = _raw(np.asarray, _asarray)
asanyarray_rule = _raw(np.asanyarray, _asanyarray)
ascontiguousarray_rule = _raw(np.ascontiguousarray, _ascontiguousarray)
asfortranarray_rule = _raw(np.asfortranarray, _asfortranarray)
require_rule = _raw(np.require, _require)


# ---- linspace, logspace, geomspace --------------------------------------------------------------
# NumPy's arithmetic, op for op, on batch-first values with the sample axis at 1. One branch of
# NumPy's linspace is data-dependent (when any step of an example is 0 it computes
# ``arange / div * delta`` instead of ``arange * step``): it is taken per example with a
# ``where``, so every example gets the bits the loop gives it (integer dtypes floor them).
def _python_scalar(v) -> bool:
    return isinstance(v, (int, float, complex)) and not isinstance(v, np.generic)


def _as_array(v, ref, ndmin=0):
    """``np.array(v, copy=None, subok=True, ndmin=ndmin)`` of an unbatched value, on ``ref``'s
    backend when ``v`` is not an array itself."""
    like = v if hasattr(v, "__array_function__") else ref
    return np.array(v, copy=None, subok=True, ndmin=ndmin, like=like)


def _lin(start, sbd, stop, tbd, num, endpoint, rank, device=None):
    """``(y, step, dt)``: y of physical shape ``(B, num, *S)`` (S: the examples' broadcast shape
    of ``start`` and ``stop``, at least ``rank`` axes), step ``(B, *S)`` or NaN; at least one
    of start, stop is batched."""
    num = operator.index(num)
    if num < 0:
        raise ValueError(f"Number of samples, {num}, must be non-negative.")
    div = (num - 1) if endpoint else num
    dt = np.result_type(start, stop, 0.0)  # Python scalars are weak, as in NumPy's converter
    start, stop = align_front([start, stop], [sbd, tbd], rank)
    delta = np.expand_dims(np.subtract(stop, start, dtype=dt), 1)
    kw = {} if device is None else {"device": device}
    ar = np.arange(0, num, dtype=dt, like=delta, **kw)
    ar = np.reshape(ar, (1, num) + (1,) * (delta.ndim - 2))
    if div > 0:
        step = delta / div
        zero = np.any(step == 0, axis=tuple(range(1, step.ndim)), keepdims=True)
        y = np.where(zero, ar / div * delta, ar * step)
        step = step[:, 0]
    else:
        step = np.nan
        y = ar * delta
    y = y + (np.expand_dims(start, 1) if sbd is not None else start)
    if endpoint and num > 1:
        y[:, -1] = stop
    return y, step, dt


@batch_rule(np.linspace)
def linspace_rule(start, start_bdim, stop, stop_bdim, num=50, endpoint=True, retstep=False,
                  dtype=None, axis=0, *, device=None):
    rank = max(logical_rank(start, start_bdim), logical_rank(stop, stop_bdim))
    y, step, dt = _lin(start, start_bdim, stop, stop_bdim, num, endpoint, rank, device)
    ax = wrap_axis(axis, y.ndim - 1)
    y = np.moveaxis(y, 1, ax + 1)
    if dtype is None:
        dtype = dt
    elif np.issubdtype(dtype, np.integer):
        y = np.floor(y)
    y = y.astype(dtype, copy=False)
    if retstep:
        return (y, 0), (step, 0 if step is not np.nan else None)
    return y, 0


@batch_rule(np.logspace)
def logspace_rule(start, start_bdim, stop, stop_bdim, num=50, endpoint=True, base=10.0,
                  base_bdim=None, dtype=None, axis=0):
    ranks = [logical_rank(start, start_bdim), logical_rank(stop, stop_bdim)]
    rb = logical_rank(base, base_bdim)
    full_base = not isinstance(base, (float, int)) and rb > 0
    ref = next(v for v, b in ((start, start_bdim), (stop, stop_bdim), (base, base_bdim))
               if b is not None)
    if full_base:  # NumPy broadcasts start, stop and base first (np.array(..., ndmin=))
        ranks.append(rb)
        start, stop = (_as_array(v, ref) if _python_scalar(v) else v for v in (start, stop))
    rank = max(ranks)
    if start_bdim is None and stop_bdim is None:
        # (scalars made arrays on the batched base's backend, so that y is made there too)
        start, stop = (_as_array(v, ref, rank if full_base else 0) for v in (start, stop))
        y = np.linspace(start, stop, num=num, endpoint=endpoint, axis=axis)
        ax = wrap_axis(axis, y.ndim)
        y_bdim = None
    else:
        y, _, _ = _lin(start, start_bdim, stop, stop_bdim, num, endpoint, rank)
        ax = wrap_axis(axis, y.ndim - 1)
        y, y_bdim = np.moveaxis(y, 1, ax + 1), 0
    if full_base:
        if base_bdim is None:
            base = np.expand_dims(_as_array(base, ref, rank), ax)
        else:
            base = np.expand_dims(pad_to_rank(move_bdim_to_front(base, base_bdim), rank), ax + 1)
    elif base_bdim is not None:
        base = pad_to_rank(move_bdim_to_front(base, base_bdim), rank + 1)
    out = np.power(base, y)
    if dtype is not None:
        out = out.astype(dtype, copy=False)
    return out, (0 if base_bdim is not None or y_bdim is not None else None)


@batch_rule(np.geomspace)
def geomspace_rule(start, start_bdim, stop, stop_bdim, num=50, endpoint=True, dtype=None,
                   axis=0):
    like = start if start_bdim is not None else stop
    # NumPy converts both with asanyarray: Python scalars are int64 / float64 here, not weak
    start, stop = (_as_array(v, like) if _python_scalar(v) else v for v in (start, stop))
    rank = max(logical_rank(start, start_bdim), logical_rank(stop, stop_bdim))
    start, stop = align_front([start, stop], [start_bdim, stop_bdim], rank)
    if any_example(start == 0) or any_example(stop == 0):
        raise ValueError("Geometric sequence cannot include zero")
    dt = np.result_type(start, stop, float(num), np.dtype(dtype))
    dtype = dt if dtype is None else np.dtype(dtype)
    sbd = None if start_bdim is None else 0  # batch-first now; stop / out_sign below is always
    start = start.astype(dt, copy=True)
    out_sign = np.sign(start)
    start = start / out_sign
    stop = stop.astype(dt, copy=True) / out_sign
    y, _, _ = _lin(np.log10(start), sbd, np.log10(stop), 0, num, endpoint, rank)
    result = np.power(10.0, y).astype(dt, copy=False)
    if num > 0:  # the endpoints exactly, as NumPy sets them
        result[:, 0] = start
        if num > 1 and endpoint:
            result[:, -1] = stop
    result *= out_sign if sbd is None else np.expand_dims(out_sign, 1)
    ax = wrap_axis(axis, result.ndim - 1)
    return np.moveaxis(result, 1, ax + 1).astype(dtype, copy=False), 0


# ---- meshgrid -----------------------------------------------------------------------------------
@batch_rule(np.meshgrid)
def meshgrid_rule(*xi, xi_bdims, copy=True, sparse=False, indexing="xy"):
    """Every input raveled (per example) and laid along its own axis; the batched ones keep a
    batch axis in front, the plain ones stay plain. Not sparse: the views NumPy's
    ``broadcast_arrays`` makes (``views.broadcast_examples``), or copies with ``copy=True``
    (the default)."""
    if indexing not in ["xy", "ij"]:
        raise ValueError("Valid values for `indexing` are 'xy' and 'ij'.")
    ndim = len(xi)
    ref, n = next((v, v.shape[b]) for v, b in zip(xi, xi_bdims) if b is not None)
    flat = []
    for v, b in zip(xi, xi_bdims):
        if b is None:
            v = v if hasattr(v, "__array_function__") else np.asarray(v, like=ref)
            flat.append((np.reshape(v, (-1,)), None))
        else:
            flat.append((flat_rows(move_bdim_to_front(v, b)), 0))
    sizes = [v.shape[-1] for v, _ in flat]
    axes = list(range(ndim))
    if indexing == "xy" and ndim > 1:
        axes[0], axes[1] = 1, 0
    out = []
    for (v, b), ax in zip(flat, axes):
        shape = [1] * ndim
        shape[ax] = v.shape[-1]
        out.append((np.reshape(v, tuple(shape) if b is None else (n,) + tuple(shape)), b))
    if not sparse:
        full = [1] * ndim
        for s_, ax in zip(sizes, axes):
            full[ax] = s_
        out = broadcast_examples([v for v, _ in out], [b for _, b in out], tuple(full), n,
                                 subok=True)
    if copy:
        return tuple((np.copy(v), b) for v, b in out)
    return tuple(out) if not sparse else out
