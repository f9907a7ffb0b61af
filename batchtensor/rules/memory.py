"""What an example reveals about its memory: ``x.strides``, ``x.flags``, ``x.base``,
``x.setflags``; and the ndarray methods that reinterpret or reallocate it: ``x.view``,
``x.getfield``, ``x.byteswap``, ``x.resize`` (``x.dtype = t`` and ``x.setfield`` build on them).

Each answers as the per-example loop would: an example's strides and contiguity are those of
one example as the loop sees it (``views.example_layout``: a vmap input's example is a view of
the caller's array, a value computed inside the function owns its memory); ``base`` and
``flags.owndata`` are the loop's where vmap can know them, and a clear error otherwise
(docs/semantics.md).
"""

from __future__ import annotations

import builtins
import math
import sys
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import as_strided

from ..errors import BatchingError, SubclassViewError
from ..levels import active_levels, is_input_memory, note_write
from ..plumbing import innermost
from ..registry import batch_rule
from ..tensor import (BatchedTensor, ndarray_base, ndarray_byteswap, ndarray_flags,
                      ndarray_getfield, ndarray_resize, ndarray_setflags, ndarray_strides,
                      ndarray_view, foreign_memory, new_batched, owner_of_view,
                      scalar_per_example)
from ._helpers import logical_shape, move_bdim_to_front
from .views import example_layout, example_strides, is_contiguous

__all__ = ["ExampleFlags", "example_owns_memory", "loop_base", "allocated_strides"]


# ---- strides, base, ownership -------------------------------------------------------------
@batch_rule(ndarray_strides, raw=True)
def strides_rule(level, args, kwargs):
    (x,) = args
    layout = example_layout(x)
    if layout is None:  # a backend without strides: as that backend's arrays
        return innermost(x).strides
    shape, strides = layout
    phys = innermost(x)
    if getattr(phys, "base", None) is None and not is_input_memory(phys):
        return allocated_strides(shape, strides, x.dtype.itemsize)
    return strides


def allocated_strides(shape: tuple, strides: tuple, itemsize: int) -> tuple:
    """The strides NumPy gives a new array of this layout: all zero when it is empty, the
    standard C or F strides when it is contiguous (also along axes of length one, whose
    strides in the batch are arbitrary), else as they are."""
    if 0 in shape:
        return (0,) * len(shape)
    for fortran in (False, True):
        if is_contiguous(shape, strides, itemsize, fortran):
            out, step = [], itemsize
            for d in (shape if fortran else shape[::-1]):
                out.append(step)
                step *= d
            return tuple(out if fortran else out[::-1])
    return strides


def loop_base(phys):
    """The ``base`` NumPy gives a view of ``phys``, collapsing the chain as NumPy does: down
    from ``phys`` to the first array that owns its memory, has no base, or whose base is not
    an array (a ``from_dlpack`` array's capsule, ``frombuffer``'s bytes: NumPy stops at that
    array). Another backend's view (CuPy's) has the array owning the memory as its base.

    None where NumPy would stop at an array whose base is an ndarray of another type (a
    memmap): the answer then depends on the type of the loop's example, which is the caller's
    memmap where vmap batched a plain view of it (``tensor.plain_array``)."""
    b = phys
    if not isinstance(phys, np.ndarray):
        while getattr(b, "base", None) is not None:
            b = b.base
        return b
    while not b.flags.owndata:
        nxt = b.base
        if nxt is None or not isinstance(nxt, np.ndarray):
            break
        if type(nxt) is not type(phys):
            return None
        b = nxt
    return b


def _callers_object(obj: Any) -> bool:
    """Is ``obj`` an input of a live level or an object down an input's chain of bases (an
    object of the caller's, which the loop's examples may hold as their base)?"""
    for level in active_levels():
        for x in level.inputs:
            while hasattr(x, "_level"):  # a BatchedTensor of an outer level
                x = x._value
            while x is not None:
                if x is obj:
                    return True
                x = getattr(x, "base", None)
    return False


def example_owns_memory(x: BatchedTensor, what: str) -> bool:
    """Whether the loop's example of ``x`` owns its memory (``flags.owndata``, ``base is
    None``): a NumPy scalar does; a view of a vmap input's memory does not; a value computed
    inside the function does if its physical array owns its memory (a rule makes views
    exactly where NumPy does). A view of memory made inside the function may be the loop's
    view of another value or a fresh result laid out by a rule: a BatchingError then, which,
    as a conversion does, makes vmap rerun the function per example, where NumPy answers."""
    if scalar_per_example(x):
        return True
    phys = innermost(x)
    if is_input_memory(phys) or foreign_memory(phys):  # (np.from_dlpack's result, its views)
        return False
    if getattr(phys, "base", None) is None:
        return True
    raise _unknown_base(x, what)


def _unknown_base(x: BatchedTensor, what: str) -> BatchingError:
    err: Any = BatchingError(  # (with the attributes of a refused conversion)
        f"{what} of a value computed inside the vmapped function that views other memory: "
        f"the loop's example may view another value made inside the function or own fresh "
        f"memory, and vmap does not track which. Test sharing with np.shares_memory(a, b) "
        f"or np.may_share_memory(a, b), which answer per example, or copy the value "
        f"(x = x.copy()) where you need memory of its own.")
    err.batchtensor_conversion = True  # only a run per example knows: the rerun
    err.batchtensor_level = x._level
    err.batchtensor_what = f"{what} of a view made inside the function"
    return err


@batch_rule(ndarray_base, raw=True)
def base_rule(level, args, kwargs):
    (x,) = args
    owner = owner_of_view(innermost(x))  # a view of np.from_dlpack's result: that result
    if owner is not None:
        return owner
    if example_owns_memory(x, "x.base"):
        return None
    found = loop_base(innermost(x))  # the caller's array (the loop's examples view it) ...
    if found is not None and _callers_object(found):
        return found
    # ... unless NumPy's collapse stops at an array made inside the function (a view of
    # another type, as a masked array's data): that array is the example's own
    raise _unknown_base(x, "x.base")


# ---- flags --------------------------------------------------------------------------------------
_KEYS = {"C_CONTIGUOUS": "c_contiguous", "C": "c_contiguous", "CONTIGUOUS": "c_contiguous",
         "F_CONTIGUOUS": "f_contiguous", "F": "f_contiguous", "FORTRAN": "f_contiguous",
         "OWNDATA": "owndata", "O": "owndata", "WRITEABLE": "writeable", "W": "writeable",
         "ALIGNED": "aligned", "A": "aligned", "WRITEBACKIFCOPY": "writebackifcopy",
         "X": "writebackifcopy", "BEHAVED": "behaved", "B": "behaved", "CARRAY": "carray",
         "CA": "carray", "FARRAY": "farray", "FA": "farray", "FNC": "fnc", "FORC": "forc"}
_SETTABLE = {"writeable": "write", "aligned": "align", "writebackifcopy": "uic"}


class ExampleFlags:
    """``x.flags`` of a batched ``x``: each example's ``numpy.flagsobj`` as the loop sees it.
    ``x.flags.writeable = False`` (or ``x.flags["W"] = False``) calls ``x.setflags``."""

    __slots__ = ("_x",)

    _x: BatchedTensor

    def __init__(self, x: BatchedTensor):
        object.__setattr__(self, "_x", x)

    def _layout(self) -> tuple:
        x = self._x
        found = example_layout(x)
        return found if found is not None else (x.shape, None)

    def _contiguous(self, fortran: bool) -> bool:
        shape, strides = self._layout()
        if strides is None:
            return not fortran or len(shape) <= 1
        return is_contiguous(shape, strides, self._x.dtype.itemsize, fortran)

    @property
    def c_contiguous(self) -> bool:
        return self._contiguous(False)

    @property
    def f_contiguous(self) -> bool:
        return self._contiguous(True)

    @property
    def owndata(self) -> bool:
        return example_owns_memory(self._x, "x.flags.owndata")

    @property
    def writeable(self) -> bool:
        if scalar_per_example(self._x):
            return False  # a NumPy scalar
        return bool(innermost(self._x).flags.writeable)

    @property
    def aligned(self) -> bool:
        return bool(innermost(self._x).flags.aligned)

    @property
    def writebackifcopy(self) -> bool:
        return False

    @property
    def behaved(self) -> bool:
        return self.aligned and self.writeable

    @property
    def carray(self) -> bool:
        return self.behaved and self.c_contiguous

    @property
    def farray(self) -> bool:  # NumPy's own test: any of the three, and not C contiguous
        return (self.aligned or self.writeable or self.f_contiguous) and not self.c_contiguous

    @property
    def fnc(self) -> bool:
        return self.f_contiguous and not self.c_contiguous

    @property
    def forc(self) -> bool:
        return self.f_contiguous or self.c_contiguous

    contiguous = c_contiguous  # NumPy's older names
    fortran = f_contiguous

    @property
    def num(self) -> int:
        """The flags as NumPy's bit mask (``NPY_ARRAY_C_CONTIGUOUS`` = 1, ...)."""
        bits = ((self.c_contiguous, 0x1), (self.f_contiguous, 0x2), (self.owndata, 0x4),
                (self.aligned, 0x100), (self.writeable, 0x400), (self.writebackifcopy, 0x2000))
        return sum(bit for on, bit in bits if on)

    def __getitem__(self, key: str) -> bool:
        name = _KEYS.get(key.upper() if isinstance(key, str) else key)
        if name is None:
            raise KeyError("Unknown flag")
        return getattr(self, name)

    def __setitem__(self, key: str, value) -> None:
        name = _KEYS.get(key.upper() if isinstance(key, str) else key)
        if name not in _SETTABLE:
            raise KeyError("Unknown flag")
        setattr(self, name, value)

    def __setattr__(self, name: str, value) -> None:
        if name not in _SETTABLE:
            raise AttributeError(f"attribute '{name}' of 'numpy.flagsobj' objects is not "
                                 f"writable")
        if scalar_per_example(self._x):
            raise ValueError("Cannot set flags on array scalars.")
        self._x.setflags(**{_SETTABLE[name]: value})

    def __eq__(self, other) -> bool:
        if not isinstance(other, ExampleFlags):
            return NotImplemented
        return all(getattr(self, k) == getattr(other, k) for k in _NAMES)

    __hash__ = None  # type: ignore[assignment]  # (unhashable, as numpy.flagsobj)

    def __repr__(self) -> str:
        return "\n".join(f"  {k.upper()} : {getattr(self, k)}" for k in _NAMES) + "\n"


_NAMES = ("c_contiguous", "f_contiguous", "owndata", "writeable", "aligned", "writebackifcopy")


@batch_rule(ndarray_flags, raw=True)
def flags_rule(level, args, kwargs):
    (x,) = args
    return ExampleFlags(x)


def _new_views(x):
    """``x`` over a new view of its physical array at every level (another array object, the
    same memory)."""
    if type(x) is not BatchedTensor:
        return x.view()
    res = new_batched(_new_views(x._value), x._bdim, x._level)
    if getattr(x, "_array0d", False):
        res._array0d = True
    return res


def _caller_object(phys) -> bool:
    """Whether ``phys`` is the very array a caller passed to a live vmap level."""
    return any(innermost(v) is phys for level in active_levels() for v in level.inputs)


@batch_rule(ndarray_setflags, raw=True)
def setflags_rule(level, args, kwargs):
    """The flags of the physical array change, as those of the one array object an example
    is in NumPy (values that share the physical object are one object there too: ``asarray``,
    ``real`` of real values). A vmap input's physical array is the caller's, whose flags the
    loop's example views cannot change: that value gets a view of its own first."""
    x, write, align, uic = args
    if scalar_per_example(x):
        return  # a NumPy scalar's setflags changes nothing (its flags object refuses)
    if _caller_object(innermost(x)):
        fresh = _new_views(x._value)
        innermost(fresh).setflags(write=write, align=align, uic=uic)  # NumPy's checks
        x._value = fresh
    else:
        innermost(x).setflags(write=write, align=align, uic=uic)


# ---- view, getfield, byteswap -----------------------------------------------------------------
def _check_like_one_example(x, bdim, change) -> None:
    """Run ``change`` (a metadata change such as ``a.view(dtype)``) on a stand-in with one
    example's shape and strides as the loop sees them, for NumPy's own error where the loop's
    example has one. The stand-in's memory is one element and is never read."""
    if bdim is not None and x.shape[bdim] == 0:
        return  # no example (the strides of an empty batch say nothing of one)
    strides = example_strides(x, bdim)
    if strides is not None:
        change(as_strided(np.zeros(1, x.dtype), logical_shape(x, bdim), strides,
                          writeable=False))


@batch_rule(ndarray_view)
def view_rule(x, x_bdim, dtype=None, type=None):  # noqa: A002  (ndarray.view's own name)
    if isinstance(dtype, builtins.type) and issubclass(dtype, np.ndarray):
        dtype, type = None, dtype  # x.view(np.ndarray): a type in the dtype position
    if type is not None and type is not np.ndarray:
        raise SubclassViewError(
            f"x.view(type={type.__module__}.{type.__qualname__}): the examples of a "
            f"BatchedTensor are plain arrays, and vmap does not batch ndarray subclasses, so "
            f"the function runs once per example. To stay vectorised, view the data per "
            f"example with x.view(np.ndarray) or x.view(dtype), and keep a mask as a second "
            f"array (np.where(mask, x, fill)).")
    if dtype is None:
        return x.view(), x_bdim
    dtype = np.dtype(dtype)
    if dtype.itemsize != x.dtype.itemsize:
        _check_like_one_example(x, x_bdim, lambda a: a.view(dtype))
        if x_bdim == x.ndim - 1:  # the batch axis last: the examples' last axis before it
            x, x_bdim = np.moveaxis(x, x_bdim, 0), 0
        try:
            return x.view(dtype), x_bdim
        except ValueError:  # examples interleaved in memory made inside f: docs/semantics.md
            x = move_bdim_to_front(x, x_bdim)
            return np.ascontiguousarray(x, like=x).view(dtype), 0
    return x.view(dtype), x_bdim


@batch_rule(ndarray_getfield)
def getfield_rule(x, x_bdim, dtype, offset=0):
    return x.getfield(dtype, offset), x_bdim


@batch_rule(ndarray_byteswap, raw=True)
def byteswap_rule(level, args, kwargs):
    x, inplace = args
    if not inplace:
        return new_batched(x._value.byteswap(False), x._bdim, level)
    if scalar_per_example(x):
        raise ValueError("cannot byteswap a scalar in-place")
    note_write(level, innermost(x))
    x._value.byteswap(True)
    return x


# ---- resize -------------------------------------------------------------------------------------
def _referenced(x: BatchedTensor) -> bool:
    """Whether anything but ``x`` holds its physical value, at any level of nesting (a view
    holds the array it views): each holds two references, its holder's slot and the
    ``getrefcount`` argument."""
    v = x._value
    while True:
        if sys.getrefcount(v) > 3:  # + this frame's name for it
            return True
        if type(v) is not BatchedTensor:
            return False
        v = v._value


@batch_rule(ndarray_resize, raw=True)
def resize_rule(level, args, kwargs):
    x, new_shape = args
    refcheck = kwargs.get("refcheck", True)
    if scalar_per_example(x):
        return None  # a NumPy scalar's resize changes nothing
    if new_shape is None:
        return None  # x.resize() keeps the shape
    shape = (new_shape,) if isinstance(new_shape, (int, np.integer)) else tuple(new_shape)
    shape = tuple(int(d) for d in shape)
    if any(d < 0 for d in shape):
        raise ValueError("negative dimensions not allowed")
    if not example_owns_memory(x, "x.resize(...)"):
        raise ValueError("cannot resize this array: it does not own its data")
    if refcheck and _referenced(x):
        raise ValueError("cannot resize an array that references or is referenced\nby "
                         "another array in this way.\nUse the np.resize function or "
                         "refcheck=False")
    flags = ExampleFlags(x)
    order = "F" if flags.f_contiguous and not flags.c_contiguous else "C"
    v = move_bdim_to_front(x._value, x._bdim)
    n, size, old = v.shape[0], math.prod(shape), math.prod(v.shape[1:])  # (no -1: n may be 0)
    flat = np.reshape(v, (n, old), order=order) if order == "C" else np.reshape(
        np.transpose(v, (0,) + tuple(range(v.ndim - 1, 0, -1))), (n, old))
    out = np.zeros_like(flat, shape=(n, size))
    keep = min(size, flat.shape[1])
    out[:, :keep] = flat[:, :keep]
    if order == "C":
        x._value = np.reshape(out, (n,) + shape)
    else:  # an F-ordered example keeps its memory order and its layout
        back = tuple(range(len(shape), 0, -1))
        x._value = np.transpose(np.reshape(out, (n,) + shape[::-1]), (0,) + back)
    x._bdim = 0
    return None
