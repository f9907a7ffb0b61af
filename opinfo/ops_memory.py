"""What an example reveals about its memory, and the methods that reinterpret or reallocate
it: ``x.strides``, ``x.flags``, ``x.base``, ``x.setflags``, ``x.view``, ``x.dtype = t``,
``x.shape = s``, ``x.getfield`` / ``x.setfield``, ``x.byteswap``, ``x.resize``, ``x.flat``.

The answers are the loop's, whose examples of a vmap input are views of the caller's array
(the sweep's layouts vary those views' strides and writeability). The nested variant is
skipped for the attributes that report memory: its inner-only run loops over copies of the
examples, not over views of the batched inputs, so their strides differ by construction
(``tests/test_ndarray_surface.py`` checks nested levels directly).
"""

from __future__ import annotations

import numpy as np

from batchtensor.tensor import (ndarray_base, ndarray_byteswap, ndarray_flags, ndarray_getfield,
                                ndarray_resize, ndarray_setflags, ndarray_strides, ndarray_view)

from .core import OpInfo, SampleInput
from .samples import make_array

S = SampleInput
F64 = (np.float64,)
_MEMORY = ("the nested variant's inner-only run loops over copies of the examples, whose "
           "memory differs from the views the batch gives (checked in tests/"
           "test_ndarray_surface.py)")
_FLAGS = ("c_contiguous", "f_contiguous", "writeable", "aligned", "writebackifcopy", "fnc",
          "forc", "behaved", "carray", "farray")


def _shapes(rng, dtype, noncontiguous=True):
    for shape in [(), (5,), (3, 4), (2, 0, 3), (2, 3, 4), (1, 4)]:
        yield S((make_array(rng, shape, dtype),), {}, f"{shape}")
    if noncontiguous:
        yield S((make_array(rng, (3, 4), dtype, noncontiguous=True),), {}, "non-contiguous")


def _owned_shapes(rng, dtype):
    for sample in _shapes(rng, dtype):
        if sample.name == "()":
            sample.vmap_error = ("x[...] of a NumPy scalar views a temporary array NumPy makes "
                                 "from it, which vmap cannot tell from a fresh one "
                                 "(docs/semantics.md)")
        yield sample


# ---- strides, flags, base -------------------------------------------------------------------
def _strides(x):
    return x.strides


def _strides_computed(x):
    # A view of a value computed inside f may report another stride along an axis of length
    # one, where any stride addresses the same memory (docs/semantics.md): left out here.
    def sized(y):
        return tuple(s for s, d in zip(y.strides, y.shape) if d != 1)

    return (x * 1).strides, sized(np.transpose(x * 1)), sized((x + 0)[..., ::2])


def _flags(x):
    f = x.flags
    return tuple(getattr(f, k) for k in _FLAGS) + (f["C"], f["W"], f["FORC"])


def _flags_computed(x):
    y = x * 1
    return _flags(y) + (y.flags.owndata,) + _flags(np.transpose(y))


def _owndata(x):
    return x.flags.owndata, x[...].flags.owndata, np.transpose(x).flags.owndata


def _base(x):
    return x.base is None, x[..., :1].base is None, (x * 1).base is None


def _base_is_caller(x):
    return x.base is not None and x.base is x[...].base


def _base_from_dlpack(x):
    # np.from_dlpack's result does not own its memory and its base is a capsule, at which
    # NumPy's collapse stops: a view of it has it as its base
    b = np.from_dlpack(x.copy())
    v = np.transpose(b)[..., :2]
    return (b.flags.owndata, v.flags.owndata, v.base.shape, v.base.size, v.base.itemsize,
            v.base * 1)


def _array_shapes(rng, dtype):
    for sample in _shapes(rng, dtype):
        if sample.name != "()":  # (a NumPy scalar per example: no __dlpack__ in the loop)
            yield sample


# ---- setflags ---------------------------------------------------------------------------------
def _read_only_copy(x):
    y = x.copy()
    y.setflags(write=False)
    return y, y.flags.writeable


def _read_only_attribute(x):
    y = x * 2
    y.flags.writeable = False
    try:
        y[...] = 0
    except ValueError:
        return y, True
    return y, False


def _read_only_input(x):
    x.flags["WRITEABLE"] = False
    return x, x.flags.writeable


def _writeable_again(x):
    y = x.copy()
    y.setflags(write=False)
    y.setflags(write=True)
    return y, y.flags.writeable


def _setflags_samples(rng, dtype):
    yield S((make_array(rng, (3, 4), dtype),), {}, "(3, 4)")
    yield S((make_array(rng, (0, 2), dtype),), {}, "size 0")


def _setflags_input_samples(rng, dtype):
    # (a 0-d example is a NumPy scalar, which refuses: tests/test_ndarray_surface.py)
    yield S((make_array(rng, (5,), dtype),), {}, "(5,)")
    yield S((make_array(rng, (3, 4), dtype, noncontiguous=True),), {}, "non-contiguous")


# ---- view, dtype=, shape=, getfield, setfield, byteswap -------------------------------------
def _view(x, *args, **kwargs):
    return x.view(*args, **kwargs)


def _view_samples(rng, dtype):
    a = lambda *s, **kw: make_array(rng, s, dtype, **kw)  # noqa: E731
    yield S((a(3, 4),), {}, "no argument")
    yield S((a(3, 4), np.int64), {}, "same itemsize")
    yield S((a(3, 4), np.int32), {}, "smaller itemsize")
    yield S((a(3, 4), np.uint8), {}, "bytes")
    yield S((a(2, 4), np.complex128), {}, "larger itemsize")
    yield S((a(2, 3), np.complex128), {}, "larger itemsize that does not divide (ValueError)")
    yield S((a(), np.int64), {}, "0-d, same itemsize")
    yield S((a(), np.int32), {}, "0-d, another itemsize (ValueError)")
    yield S((a(3, 4, noncontiguous=True), np.int32), {}, "last axis strided (ValueError)")
    yield S((a(3, 4), np.ndarray), {}, "type in the dtype position")
    yield S((a(3, 4),), {"dtype": np.int32, "type": np.ndarray}, "dtype= and type=")
    yield S((a(0, 4), np.int32), {}, "size 0")


def _set_dtype(x, dtype):
    y = x.copy()
    y.dtype = dtype
    return y


def _set_dtype_samples(rng, dtype):
    yield S((make_array(rng, (3, 4), dtype), np.int32), {}, "smaller itemsize")
    yield S((make_array(rng, (3, 4), dtype), np.int64), {}, "same itemsize")


def _set_shape(x, shape):
    x.shape = shape
    return x


def _set_shape_samples(rng, dtype):
    yield S((make_array(rng, (3, 4), dtype), (4, 3)), {}, "(3, 4) -> (4, 3)")
    yield S((make_array(rng, (3, 4), dtype), (-1,)), {}, "-1")
    yield S((make_array(rng, (2, 3, 4), dtype), (2, 12)), {}, "3-d -> 2-d")
    yield S((make_array(rng, (3, 4), dtype, noncontiguous=True), (12,)), {},
            "a copy would be needed (AttributeError)")
    yield S((make_array(rng, (3, 4), dtype), (5, 3)), {}, "wrong size (ValueError)")


def _getfield(x, *args):
    return x.getfield(*args)


def _getfield_samples(rng, dtype):
    yield S((make_array(rng, (3, 4), np.complex128), np.float64, 8), {}, "imaginary part")
    yield S((make_array(rng, (3, 4), np.complex128), np.float64), {}, "real part")
    yield S((make_array(rng, (5,), np.float64), np.int32, 4), {}, "upper half")
    yield S((make_array(rng, (), np.complex128), np.float64, 8), {}, "0-d")
    yield S((make_array(rng, (5,), np.float64), np.int32, 6), {}, "past the item (ValueError)")


def _setfield(x, v, dtype, offset):
    y = x.copy()
    y.setfield(v, dtype, offset)
    return y


def _setfield_samples(rng, dtype):
    c = lambda *s: make_array(rng, s, np.complex128)  # noqa: E731
    f = lambda *s: make_array(rng, s, np.float64)  # noqa: E731
    yield S((c(3, 4), f(3, 4), np.float64, 8), {}, "imaginary part from an array")
    yield S((c(3, 4), f(4), np.float64, 0), {}, "real part, broadcast")
    yield S((c(3, 4), 2.5, np.float64, 8), {}, "a Python float")


def _byteswap(x, inplace=False):
    return x.byteswap(inplace)


def _byteswap_samples(rng, dtype):
    for shape in [(), (5,), (3, 4), (0, 2)]:
        yield S((make_array(rng, shape, dtype),), {}, f"{shape}")


def _byteswap_in_place(x):
    return x.byteswap(True)


def _byteswap_in_place_samples(rng, dtype):
    for shape in [(5,), (3, 4), (0, 2)]:
        yield S((make_array(rng, shape, dtype),), {}, f"{shape}")
    yield S((make_array(rng, (), dtype),), {}, "0-d: a scalar refuses (ValueError)")


# ---- resize -------------------------------------------------------------------------------------
def _resize_copy(x, *shape, **kw):
    y = x.copy()
    y.resize(*shape, **kw)
    return y


def _resize_computed_f(x, *shape):
    y = np.asfortranarray(x * 1)
    y.resize(*shape)
    return y


def _resize_input(x, *shape):
    x.resize(*shape)
    return x


def _resize_samples(rng, dtype):
    a = lambda *s: make_array(rng, s, dtype)  # noqa: E731
    yield S((a(3, 4), (2, 8)), {}, "grow: zeros after the data")
    yield S((a(3, 4), 5), {}, "shrink to 1-d, an int")
    yield S((a(3, 4), 2, 3), {}, "ints")
    yield S((a(3, 4), (2, 8)), {"refcheck": False}, "refcheck=False")
    yield S((a(3, 4),), {}, "no shape: unchanged")
    yield S((a(), (3,)), {}, "0-d: a scalar is not resized")
    yield S((a(0, 2), (2, 2)), {}, "from size 0")
    yield S((a(3, 4), (-1, 2)), {}, "negative (ValueError)")


def _resize_f_samples(rng, dtype):
    yield S((make_array(rng, (3, 4), dtype), (2, 7)), {}, "F-ordered data in memory order")


def _resize_input_samples(rng, dtype):
    yield S((make_array(rng, (3, 4), dtype), (2, 8)), {},
            "an input's example views the caller's array (ValueError)")


def _resize_referenced(x):
    y = x.copy()
    view = y[:1]
    y.resize((2, 8))
    return view


def _resize_referenced_samples(rng, dtype):
    yield S((make_array(rng, (3, 4), dtype),), {}, "a view holds it (ValueError)")


# ---- device -------------------------------------------------------------------------------------
def _to_device(x):
    return (x.to_device("cpu"), x.device == "cpu", x.__array_namespace__() is np,
            x.__dlpack_device__())


def _to_device_samples(rng, dtype):
    yield S((make_array(rng, (3, 4), dtype),), {}, "cpu")
    yield S((make_array(rng, (), dtype),), {}, "0-d")


def _to_other_device(x):
    return x.to_device("gpu")


def _to_other_device_samples(rng, dtype):
    yield S((make_array(rng, (3,), dtype),), {}, "another device (ValueError)")


# ---- flat ---------------------------------------------------------------------------------------
def _flat_get(x, key):
    return x.flat[key]


def _flat_get_samples(rng, dtype):
    a = lambda *s, **kw: make_array(rng, s, dtype, **kw)  # noqa: E731
    yield S((a(3, 4), 5), {}, "int")
    yield S((a(3, 4), -1), {}, "negative int")
    yield S((a(3, 4), slice(2, 9, 3)), {}, "slice")
    yield S((a(3, 4, noncontiguous=True), slice(None)), {}, "non-contiguous, all")
    yield S((a(2, 3), Ellipsis), {}, "Ellipsis")
    yield S((a(3, 4), rng.integers(0, 12, size=(2, 3))), {}, "index array (batched)")
    yield S((a(6), rng.permutation(6) < 2), {}, "boolean mask (batched), two True")
    yield S((a(), 0), {}, "0-d")
    yield S((a(3, 4), 12), {}, "out of range (IndexError)")
    yield S((a(3, 4), (1, 2)), {}, "a tuple (IndexError)")


def _flat_set(x, key, v):
    y = x.copy()
    y.flat[key] = v
    return y


def _flat_set_samples(rng, dtype):
    a = lambda *s: make_array(rng, s, dtype)  # noqa: E731
    yield S((a(3, 4), slice(1, 7), a(6)), {}, "slice, values per element")
    yield S((a(3, 4), rng.integers(0, 12, size=3), a(3)), {}, "index array (batched)")
    yield S((a(3, 4), [0, 5, 11], a(2)), {}, "values repeated")
    yield S((a(3, 4), 4, a()), {}, "int, 0-d value")
    yield S((a(3, 4), Ellipsis, 2), {}, "Ellipsis, a Python scalar")


def _flat_assign(x, v):
    y = x.copy()
    y.flat = v
    return y


def _flat_assign_samples(rng, dtype):
    yield S((make_array(rng, (3, 4), dtype), make_array(rng, (5,), dtype)), {},
            "values repeated")
    yield S((make_array(rng, (2, 3), dtype), make_array(rng, (), dtype)), {}, "0-d value")


def _flat_iter(x):
    it = x.flat
    first = next(it)
    return first, it.index, it.coords, np.stack(list(it)), len(x.flat), x.flat.copy()


def _flat_iter_samples(rng, dtype):
    yield S((make_array(rng, (3, 4), dtype),), {}, "(3, 4)")
    yield S((make_array(rng, (2, 3, 4), dtype, noncontiguous=True),), {}, "non-contiguous")


OPS = [
    OpInfo("ndarray.strides", _strides, _shapes, "rule", dtypes=(np.float64, np.int16),
           covers=ndarray_strides, skip_nested=_MEMORY, unbatched_self=True),
    OpInfo("ndarray.strides.computed", _strides_computed, _shapes, "rule",
           covers=ndarray_strides, skip_nested=_MEMORY),
    OpInfo("ndarray.flags", _flags, _shapes, "rule", dtypes=(np.float64, np.int8),
           covers=ndarray_flags, skip_nested=_MEMORY, unbatched_self=True),
    OpInfo("ndarray.flags.computed", _flags_computed, _shapes, "rule", covers=ndarray_flags,
           skip_nested=_MEMORY),
    OpInfo("ndarray.flags.owndata", _owndata, _owned_shapes, "rule", covers=ndarray_flags,
           skip_nested=_MEMORY),
    OpInfo("ndarray.base", _base, _shapes, "rule", covers=ndarray_base, skip_nested=_MEMORY),
    OpInfo("ndarray.base.caller", _base_is_caller, _shapes, "rule", covers=ndarray_base,
           skip_nested=_MEMORY),
    OpInfo("ndarray.base.from_dlpack", _base_from_dlpack, _array_shapes, "rule",
           dtypes=(np.float64, np.int32, np.uint8), covers=ndarray_base),
    OpInfo("ndarray.setflags", _read_only_copy, _setflags_samples, "rule",
           covers=ndarray_setflags),
    OpInfo("ndarray.setflags.attribute", _read_only_attribute, _setflags_samples, "rule",
           covers=ndarray_setflags),
    OpInfo("ndarray.setflags.input", _read_only_input, _setflags_input_samples, "rule",
           covers=ndarray_setflags),
    OpInfo("ndarray.setflags.again", _writeable_again, _setflags_samples, "rule",
           covers=ndarray_setflags),
    OpInfo("ndarray.view", _view, _view_samples, "rule", dtypes=(np.float64, np.int32),
           covers=ndarray_view, unbatched_self=True),
    OpInfo("ndarray.dtype.set", _set_dtype, _set_dtype_samples, "rule", covers=ndarray_view),
    OpInfo("ndarray.shape.set", _set_shape, _set_shape_samples, "rule", covers=np.reshape,
           dtypes=(np.float64, np.int32)),
    OpInfo("ndarray.getfield", _getfield, _getfield_samples, "rule", covers=ndarray_getfield),
    OpInfo("ndarray.setfield", _setfield, _setfield_samples, "rule", covers=ndarray_getfield,
           unbatched_self=True),
    OpInfo("ndarray.byteswap", _byteswap, _byteswap_samples, "rule",
           dtypes=(np.float64, np.int32, np.complex64), covers=ndarray_byteswap),
    OpInfo("ndarray.byteswap.inplace", _byteswap_in_place, _byteswap_in_place_samples, "rule",
           dtypes=(np.int64,), covers=ndarray_byteswap, inplace=0),
    OpInfo("ndarray.resize", _resize_copy, _resize_samples, "rule", covers=ndarray_resize,
           dtypes=(np.float64, np.int32)),
    OpInfo("ndarray.resize.fortran", _resize_computed_f, _resize_f_samples, "rule",
           covers=ndarray_resize),
    OpInfo("ndarray.resize.input", _resize_input, _resize_input_samples, "rule",
           covers=ndarray_resize),
    OpInfo("ndarray.resize.referenced", _resize_referenced, _resize_referenced_samples, "rule",
           covers=ndarray_resize),
    OpInfo("ndarray.to_device", _to_device, _to_device_samples, "rule"),
    OpInfo("ndarray.to_device.other", _to_other_device, _to_other_device_samples, "rule"),
    OpInfo("ndarray.flat.getitem", _flat_get, _flat_get_samples, "rule", covers=np.ravel,
           unbatched_self=True),
    OpInfo("ndarray.flat.setitem", _flat_set, _flat_set_samples, "rule", covers=np.put,
           unbatched_self=True),
    OpInfo("ndarray.flat.assign", _flat_assign, _flat_assign_samples, "rule", covers=np.put,
           unbatched_self=True),
    OpInfo("ndarray.flat.iter", _flat_iter, _flat_iter_samples, "rule", covers=np.ravel),
]
