"""Every name of ``numpy.ndarray`` on a BatchedTensor: implemented with the per-example
meaning, a conversion (the clear error that makes vmap rerun the function per example), or
listed in ``tensor.NOT_PER_EXAMPLE`` with the error it raises.

Methods are compared with the loop by the OpInfo sweep (an ``ndarray.NAME`` entry each, run by
``tests/test_opinfo.py``); the attributes, the conversions and the refusals are tested here.
"""

from __future__ import annotations

import copy
import operator
import pickle
import sys
import types
import warnings

import numpy as np
import pytest

import batchtensor as bt
from batchtensor.errors import rerun_reason
from batchtensor.tensor import CONVERSIONS, NOT_PER_EXAMPLE, BatchedTensor
from opinfo import DATABASE
from opinfo.universe import universe
from tests.loop_reference import assert_same, loop_vmap

rng = np.random.default_rng(7)

#: names every Python object has, whose meaning ndarray does not change (attribute access,
#: construction, introspection): a BatchedTensor has them as any object does
PYTHON_OBJECT = {"__class__", "__delattr__", "__dir__", "__doc__", "__getattribute__",
                 "__init__", "__init_subclass__", "__new__", "__setattr__", "__subclasshook__",
                 "__sizeof__", "__getstate__"}
#: names that describe the batch rather than one example: printing shows what the value is
#: (docs/semantics.md); a string per example could not be batched
DESCRIBE_THE_BATCH = {"__repr__", "__str__"}
#: attributes (not methods), compared with the loop below
ATTRIBUTES = {"T", "mT", "base", "device", "dtype", "flags", "flat", "imag", "itemsize",
              "nbytes", "ndim", "real", "shape", "size", "strides", "__array_priority__"}
SETTERS = {"_set_shape", "_set_dtype"} & set(dir(np.ndarray))  # NumPy 2.5's
ATTRIBUTES |= SETTERS


@pytest.mark.parametrize("name", sorted(SETTERS) or [pytest.param(None, marks=pytest.mark.skip(
    reason="this NumPy (before 2.5) has no ndarray._set_shape / _set_dtype"))])
def test_numpy_2_5_setters_change_each_example_in_place(name):
    def f(x):
        y = x[::1]  # a view of the example's memory, whose shape or dtype changes in place
        if name == "_set_shape":
            y._set_shape((3, 2))
        else:
            y._set_dtype(np.int64)
        return y

    xs = rng.normal(size=(4, 6))
    assert_same(bt.vmap(f)(xs), loop_vmap(f)(xs))


def _operator_dunders() -> set:
    return {d for e in universe() if e.kind == "operator" for d in e.dunders}


def _swept_methods() -> set:
    names = {i.name for i in DATABASE}
    return {n for n in dir(np.ndarray) if not n.startswith("_")
            and any(m == f"ndarray.{n}" or m.startswith(f"ndarray.{n}.") for m in names)}


#: protocols tested by the whole suite (every NumPy call goes through them), with the test
PROTOCOLS = {"__array_function__": "tests/test_dispatch.py",
             "__array_ufunc__": "tests/test_pointwise.py",
             "__array_namespace__": "test_array_namespace_device_and_dlpack_device",
             "__dlpack_device__": "test_array_namespace_device_and_dlpack_device",
             "__class_getitem__": "test_class_getitem_and_delitem",
             "__delitem__": "test_class_getitem_and_delitem",
             "__contains__": "opinfo operator.contains", "__iter__": "opinfo iter()",
             "__len__": "opinfo len()"}


def test_every_ndarray_name_exists_on_batchedtensor():
    missing = sorted(set(dir(np.ndarray)) - set(dir(BatchedTensor)))
    assert not missing, f"numpy.ndarray names BatchedTensor lacks: {missing}"


def test_every_ndarray_name_has_a_kind():
    """Each name is a method the sweep compares with the loop, an operator or protocol, an
    attribute tested here, a conversion, a refusal, or Python's own."""
    kinds = {
        "swept method": _swept_methods(), "operator": _operator_dunders(),
        "protocol": set(PROTOCOLS), "attribute": ATTRIBUTES, "conversion": set(CONVERSIONS),
        "not per example": set(NOT_PER_EXAMPLE), "python object": PYTHON_OBJECT,
        "describes the batch": DESCRIBE_THE_BATCH,
    }
    unclassified = [n for n in dir(np.ndarray) if not any(n in v for v in kinds.values())]
    assert not unclassified, f"ndarray names with no per-example test or table: {unclassified}"
    implemented = kinds["swept method"] | ATTRIBUTES | set(PROTOCOLS)
    assert not (set(NOT_PER_EXAMPLE) | set(CONVERSIONS)) & implemented
    assert len(kinds["swept method"]) >= 45


def test_the_tables_name_only_ndarray_names_with_reasons():
    for table in (NOT_PER_EXAMPLE, CONVERSIONS):
        assert set(table) <= set(dir(np.ndarray)), sorted(set(table) - set(dir(np.ndarray)))
        assert all(why for why in table.values())
    assert not set(NOT_PER_EXAMPLE) & set(CONVERSIONS)


# ---- refusals --------------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(NOT_PER_EXAMPLE))
def test_not_per_example_names_raise_naming_themselves(name):
    with bt.vmap_level():
        x = bt.BatchedTensor(np.ones((3, 2)))
        assert not hasattr(x, name)  # NumPy's conversion moves on to __array__
        with pytest.raises(AttributeError, match=f"BatchedTensor.{name}: ") as e:
            getattr(x, name)
    assert NOT_PER_EXAMPLE[name] in str(e.value)


def test_numpy_converts_through_array_not_the_interfaces():
    with pytest.raises(TypeError, match=r"__array__"), bt.config(intercept_numpy=False):
        bt.vmap(lambda x: np.asarray(x) + 1, fallback="error")(np.ones((3, 2)))
    # and the default reruns per example: the loop's result
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", bt.PerformanceWarning)
        with bt.config(intercept_numpy=False):
            got = bt.vmap(lambda x: np.asarray(x) + 1)(np.ones((3, 2)))
    assert_same(got, np.full((3, 2), 2.0))


# ---- conversions ------------------------------------------------------------------------------
def _bytes(b: bytes):
    return np.frombuffer(b, dtype=np.uint8)



class _Exported:
    """A capsule an array exported, handed to np.from_dlpack as the protocol's object."""

    def __init__(self, capsule):
        self.capsule = capsule

    def __dlpack__(self, **kwargs):
        return self.capsule

    def __dlpack_device__(self):
        return (1, 0)  # kDLCPU, device 0


CONVERT = {  # name -> a use per example whose result is an array, and the conversion's words
    "__array__": (lambda x: np.array(x.__array__()), "__array__"),
    "__int__": (lambda x: np.int64(int(x[0])), r"int\(\)"),
    "__float__": (lambda x: np.float64(float(x[0])), r"float\(\)"),
    "__complex__": (lambda x: np.complex128(complex(x[0])), r"complex\(\)"),
    "__index__": (lambda x: np.arange(4)[operator.index((x[0] * 1e3).astype(np.int64) % 4)],
                  "__index__"),
    "item": (lambda x: np.float64(x.item(1)), r"\.item\(\)"),
    "tolist": (lambda x: np.array(x.tolist()), r"\.tolist\(\)"),
    "tobytes": (lambda x: _bytes(x.tobytes()), r"\.tobytes\(\)"),
    "dumps": (lambda x: pickle.loads(x.dumps()), r"\.dumps\(\)"),
    "__reduce__": (lambda x: pickle.loads(pickle.dumps(x)), "Pickling"),
    "__reduce_ex__": (lambda x: pickle.loads(pickle.dumps(x, 4)), "Pickling"),
    # the protocol itself (np.from_dlpack of a batched value is each example's view inside a
    # vmap: tests/test_rerun.py)
    "__dlpack__": (lambda x: np.from_dlpack(_Exported(x.__dlpack__()), copy=True),
                   "__dlpack__"),
    "ctypes": (lambda x: np.float64(x.ctypes.data != 0), r"\.ctypes"),
    "data": (lambda x: np.frombuffer(x.data, dtype=x.dtype), r"\.data"),
    "__format__": (lambda x: np.float64(f"{x[0]:.3f}"), r"format\(\)"),
    "__hash__": (lambda x: np.int64(hash(x[0]) % 1000), r"hash\(\)"),
}


if hasattr(np.ndarray, "__buffer__"):  # Python 3.12 and later: memoryview(x) calls it
    CONVERT["__buffer__"] = (lambda x: np.frombuffer(memoryview(x), dtype=x.dtype),
                             "memoryview")


def _tofile(x, tmp_path):
    path = tmp_path / "example.bin"
    x.tofile(path)
    return np.fromfile(path)


def _dump(x, tmp_path):
    path = tmp_path / "dump.pkl"
    x.dump(path)
    return np.load(path, allow_pickle=True)


def test_every_conversion_has_a_use_here():
    assert set(CONVERSIONS) == set(CONVERT) | {"tofile", "dump"}


@pytest.mark.parametrize("name", sorted(CONVERT))
def test_conversions_raise_the_clear_error_and_rerun_per_example(name):
    use, words = CONVERT[name]
    xs = rng.normal(size=(4, 3))
    with pytest.raises(TypeError, match=words) as e:
        bt.vmap(use, fallback="error")(xs)
    assert "BatchedTensor" in str(e.value)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always", bt.PerformanceWarning)
        got = bt.vmap(use)(xs)
    assert any(issubclass(m.category, bt.PerformanceWarning) for m in w)
    assert_same(got, loop_vmap(use)(xs))


@pytest.mark.parametrize("use", [_tofile, _dump])
def test_file_conversions_rerun_per_example(use, tmp_path):
    xs = rng.normal(size=(3, 4))
    with pytest.raises(TypeError, match=r"\.(tofile|dump)\(\)"):
        bt.vmap(lambda x: use(x, tmp_path), fallback="error")(xs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", bt.PerformanceWarning)
        got = bt.vmap(lambda x: use(x, tmp_path))(xs)
    assert_same(got, xs)


def test_an_array_example_is_unhashable_as_an_ndarray():
    with pytest.raises(TypeError, match="unhashable type"):
        hash(np.ones(2))
    with pytest.raises(TypeError, match="unhashable type"):
        bt.vmap(lambda x: np.int64(hash(x)))(np.ones((3, 2)))


def test_format_without_a_spec_describes_and_of_an_array_raises_numpys_error():
    with bt.vmap_level():
        x = bt.BatchedTensor(np.ones((3, 2)))
        assert format(x) == str(x)
        with pytest.raises(TypeError, match="unsupported format string"):
            format(x, ".2f")


# ---- attributes against the loop -------------------------------------------------------------
def _layouts():
    base = rng.normal(size=(4, 3, 5))
    ro = base.copy()
    ro.flags.writeable = False
    yield "C", base.copy(), 0
    yield "F", np.asfortranarray(base), 0
    yield "last", np.ascontiguousarray(np.moveaxis(base, 0, -1)), -1
    yield "negative", base[::-1, ::-1], 0
    yield "strided", base[:, :, ::2], 0
    yield "read-only", ro, 0
    yield "broadcast", np.broadcast_to(base[:1], base.shape), 0
    yield "size 0", np.zeros((4, 0, 2)), 0
    yield "0-d examples", base[:, 0, 0].copy(), 0


def _attributes(x):
    f = x.flags
    flags = tuple(getattr(f, k) for k in ("c_contiguous", "f_contiguous", "writeable",
                                          "aligned", "writebackifcopy", "fnc", "forc",
                                          "behaved", "carray", "farray"))
    return (x.shape, x.ndim, x.dtype.num, x.size, x.itemsize, x.nbytes, x.strides,
            flags, f.owndata, f["C_CONTIGUOUS"], f["W"], x.base is None, x.device == "cpu",
            x.__array_priority__)


def _derived(x):
    """Views and fresh values computed inside the function."""
    y = x * 2
    out = [_attributes(y), y.flags.owndata, y.base is None]
    if x.ndim and x.shape[0]:
        out += [x[0].strides, x[..., ::-1].flags.c_contiguous, x.T.flags.f_contiguous,
                np.ascontiguousarray(x.T).strides, np.asfortranarray(y).flags.fnc,
                x[0].base is None]
    return tuple(out)


@pytest.mark.parametrize("layout, xs, ax", list(_layouts()), ids=[n for n, *_ in _layouts()])
@pytest.mark.parametrize("read", [_attributes, _derived], ids=["input", "derived"])
def test_attributes_are_the_loops(layout, xs, ax, read):
    assert_same(bt.vmap(read, in_axes=ax)(xs), loop_vmap(read, in_axes=ax)(xs))


def test_attributes_at_nested_levels():
    xs = np.asfortranarray(rng.normal(size=(2, 3, 4, 5)))
    inner = bt.vmap(_attributes, in_axes=1)
    assert_same(bt.vmap(inner, in_axes=0)(xs), loop_vmap(loop_vmap(_attributes, 1), 0)(xs))
    inner = bt.vmap(_derived, in_axes=-1)
    assert_same(bt.vmap(inner, in_axes=0)(xs), loop_vmap(loop_vmap(_derived, -1), 0)(xs))


def test_base_is_the_callers_array_as_in_the_loop():
    xs = rng.normal(size=(4, 3))
    seen = []
    bt.vmap(lambda x: seen.append(x.base is xs and x[1:].base is xs) or x)(xs)
    assert seen == [True] and all(x.base is xs for x in xs)
    view = xs[:, ::2]  # a caller's view: NumPy's base is the array owning the memory
    bt.vmap(lambda x: seen.append(x.base is xs) or x)(view)
    assert seen[-1] and view[0].base is xs


def test_base_of_a_view_made_inside_raises_clearly_or_reruns():
    def base(x):
        return np.float64((x * 2).T.base is None)

    def owndata(x):
        return np.float64((x * 2)[0].flags.owndata)

    xs = np.ones((3, 2, 2))
    with pytest.raises(bt.BatchingError, match=r"x\.base of a value computed inside.*"
                                               r"np\.shares_memory"):
        bt.vmap(base, fallback="error")(xs)
    with pytest.raises(bt.BatchingError, match=r"x\.flags\.owndata"):
        bt.vmap(owndata, fallback="error")(xs)
    for f in (base, owndata):  # only a run per example knows: the rerun gives the loop's
        with pytest.warns(bt.PerformanceWarning, match="reruns once per example"):
            got = bt.vmap(f)(xs)
        assert_same(got, loop_vmap(f)(xs))


def test_fresh_strides_are_numpys_for_a_new_array():
    xs = np.asfortranarray(rng.normal(size=(4, 1, 3)))  # a length-1 axis: any stride fits
    f = lambda x: (x * 1).strides  # noqa: E731
    assert_same(bt.vmap(f)(xs), loop_vmap(f)(xs))
    f = lambda x: np.zeros_like(x, shape=(2, 0)).strides  # noqa: E731
    assert_same(bt.vmap(f)(xs), loop_vmap(f)(xs))


def test_flat_reads_writes_and_iterates_per_example():
    xs = rng.normal(size=(3, 2, 4))[:, :, ::2]

    def f(x):
        y = x.copy()
        y.flat[[0, 3]] = -1.0
        y.flat = y.flat[::-1]  # a copy, read and written in C order
        it = x.flat
        first = next(it)
        return y, first, np.stack(list(it)), it.index, x.flat.base is x, len(x.flat)

    assert_same(bt.vmap(f)(xs), loop_vmap(f)(xs))


def test_flags_printing_and_equality():
    with bt.vmap_level():
        x = bt.BatchedTensor(np.ones((3, 2)))
        assert "C_CONTIGUOUS : True" in repr(x.flags) and "OWNDATA : False" in repr(x.flags)
        assert x.flags == x.flags
        with pytest.raises(KeyError):
            x.flags["NOPE"]
        with pytest.raises(AttributeError, match="not writable"):
            x.flags.c_contiguous = False


FLAG_NAMES = sorted(a for a in dir(np.ones(1).flags) if not a.startswith("_"))


@pytest.mark.parametrize("make, owner_known", [
    (lambda x: x, True),  # the caller's memory: owndata False
    (lambda x: x * 2, True),  # a fresh value: owndata True
    (lambda x: x[:, ::2], True),  # a view of the caller's memory
    (lambda x: (x * 2).T, False),  # a view of a value made inside f: owndata raises
])
def test_every_flag_of_numpy_is_the_loops(make, owner_known):
    """Every public attribute of numpy's flagsobj (``fortran``, ``contiguous``, ``num``...)."""
    xs = rng.normal(size=(3, 4, 2))
    names = [n for n in FLAG_NAMES if owner_known or n not in ("owndata", "num")]

    def f(x):
        y = make(x)
        return tuple(np.asarray(getattr(y.flags, n)) for n in names)

    assert_same(bt.vmap(f)(xs), loop_vmap(f)(xs))


# ---- writeability: setflags, flags.writeable = ---------------------------------------------------
def test_setflags_makes_the_example_read_only_not_the_callers_array():
    xs = rng.normal(size=(3, 4))

    def f(x):
        x.flags.writeable = False
        try:
            x[0] = 1.0
        except ValueError:
            return np.float64(1.0)
        return np.float64(0.0)

    assert_same(bt.vmap(f)(xs), loop_vmap(f)(xs))
    assert xs.flags.writeable  # the loop's example views cannot change the caller's flags
    xs[0, 0] = 2.0


def test_setflags_on_a_value_shared_with_asarray_is_one_object_as_in_numpy():
    def f(x):
        y = x * 2
        z = np.asarray(y)  # the same object in NumPy
        z.setflags(write=False)
        return np.float64(y.flags.writeable), np.float64(z.flags.writeable)

    xs = rng.normal(size=(3, 2))
    assert_same(bt.vmap(f)(xs), loop_vmap(f)(xs))


def test_setflags_errors_are_numpys():
    xs = rng.normal(size=(3, 2))
    ro = xs.copy()
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="cannot set WRITEABLE flag to True"):
        bt.vmap(lambda x: x.setflags(write=True) or x)(ro)
    with pytest.raises(ValueError, match="Cannot set flags on array scalars"):
        bt.vmap(lambda x: setattr(x[0].flags, "writeable", False) or x)(xs)
    z = xs[0, 0]
    z.setflags(write=False)  # a NumPy scalar's setflags changes nothing, as vmap's
    assert_same(bt.vmap(lambda x: x[0].setflags(write=False) or x)(xs), xs)


# ---- scalar examples: methods NumPy scalars lack ---------------------------------------------
@pytest.mark.parametrize("use, error", [
    (lambda z: z.partition(0), AttributeError), (lambda z: z.argpartition(0), AttributeError),
    (lambda z: z.byteswap(inplace=True), ValueError),
    (lambda z: setattr(z.flags, "writeable", False), ValueError),
])
def test_scalar_examples_raise_as_numpy_scalars(use, error):
    xs = rng.normal(size=(3,))
    with pytest.raises(error):
        use(xs[0])  # the loop's example: a NumPy scalar
    with pytest.raises(error):
        bt.vmap(use)(xs)


# ---- device, namespace, typing -----------------------------------------------------------------
def test_array_namespace_device_and_dlpack_device():
    def f(x):
        return (x.__array_namespace__() is sys.modules["numpy"], x.device == "cpu",
                x.__dlpack_device__(),
                x.to_device("cpu") is x)

    xs = rng.normal(size=(2, 3))
    assert_same(bt.vmap(f)(xs), loop_vmap(f)(xs))
    with pytest.raises(ValueError, match="Unsupported device"):
        bt.vmap(lambda x: x.to_device("gpu"))(xs)


def test_class_getitem_and_delitem():
    assert isinstance(BatchedTensor[int], types.GenericAlias)
    with pytest.raises(ValueError, match="cannot delete array elements"), bt.vmap_level():
        del bt.BatchedTensor(np.ones((3, 2)))[0]


def test_copy_protocols_are_per_example_copies():
    xs = rng.normal(size=(3, 2))
    f = lambda x: (copy.copy(x), copy.deepcopy(x))  # noqa: E731
    assert_same(bt.vmap(f)(xs), loop_vmap(f)(xs))


# ---- a plain array's methods with a batched argument --------------------------------------------
P = np.random.default_rng(11).normal(size=(3, 4))
S = np.sort(P[0])
_G = np.random.default_rng(12)


def _bf(*s):
    return _G.normal(size=(4,) + s)


def _bb(*s):
    return _G.random((4,) + s) < 0.6


def _mutated(method, *args, **kwargs):
    def run(*batched):
        y = P.copy()
        getattr(y, method)(*[b if b is not _B else batched[0] for b in args],
                           **{k: (batched[0] if v is _B else v) for k, v in kwargs.items()})
        return y
    return run


_B = object()  # where the batched argument goes

#: NumPy's Python code behind these methods reaches a dispatched function or ufunc with the
#: batched argument: vectorised, the loop's result
DISPATCHING = {
    "all(where=)": (lambda w: P.all(axis=0, where=w), _bb(3, 4)),
    "any(where=)": (lambda w: P.any(where=w), _bb(3, 4)),
    "clip(min)": (lambda m: P.clip(m), _bf(3, 4)),
    "clip(max=)": (lambda m: P.clip(max=m), _bf(4)),
    "clip(out=)": (lambda o: P.clip(-1, 1, out=o), _bf(3, 4)),
    "max(out=)": (lambda o: P.max(axis=0, out=o), _bf(4)),
    "max(where=)": (lambda w: P.max(axis=0, where=w, initial=-9.0), _bb(3, 4)),
    "min(where=)": (lambda w: P.min(axis=1, where=w, initial=9.0), _bb(3, 4)),
    "sum(where=)": (lambda w: P.sum(axis=0, where=w), _bb(3, 4)),
    "sum(out=)": (lambda o: P.sum(axis=1, out=o), _bf(3)),
    "prod(where=)": (lambda w: P.prod(where=w), _bb(3, 4)),
    # NumPy's _var divides in place where its result is an ndarray (isinstance), as per example
    "var(mean=)": (lambda m: P.var(axis=1, mean=m), _bf(3, 1)),
    "__add__": (lambda b: P + b, _bf(4)), "__matmul__": (lambda b: P @ b, _bf(4)),
    "__divmod__": (lambda b: divmod(P, b)[1], _bf(4)), "__eq__": (lambda b: P == b, _bf(3, 4)),
}
#: NumPy's C code converts the batched argument (``__array__``, ``float()``, ``__index__``):
#: the clear conversion error, and with the default fallback the rerun per example
CONVERTING = {
    "take(indices)": (lambda i: P.take(i), _G.integers(0, 12, size=(4, 3))),
    "searchsorted(v)": (lambda v: S.searchsorted(v), _bf(3)),
    "dot(b)": (lambda b: P.dot(b), _bf(4)),
    "compress(condition)": (lambda c: S.compress(c), np.tile([True, False, True, False], (4, 1))),
    "choose(choices)": (lambda c: np.array([0, 1, 0]).choose([c, -c]), _bf(3)),
    "argpartition(kth)": (lambda k: S.argpartition(k), _G.integers(0, 4, size=4)),
    "partition(kth)": (_mutated("partition", _B, axis=1), _G.integers(0, 4, size=4)),
    "put(indices)": (_mutated("put", _B, 0.0), _G.integers(0, 12, size=(4, 2))),
    "put(values)": (_mutated("put", [0, 5], _B), _bf(2)),
    "fill(value)": (_mutated("fill", _B), _bf()),
    "setfield(val)": (_mutated("setfield", _B, np.float64), _bf(3, 4)),
    "repeat(repeats)": (lambda r: S.repeat(r), np.full(4, 2)),
    "reshape(shape)": (lambda s: P.reshape(s), np.array([12, -1, 12, -1])),  # (they differ)
    "sum(initial=)": (lambda i: P.sum(initial=i), _bf()),
    "mean(where=)": (lambda w: P.mean(where=w | np.eye(3, 4, dtype=bool)), _bb(3, 4)),
    "__getitem__(key)": (lambda i: P[i], _G.integers(0, 3, size=(4, 2))),
    "__setitem__(key)": (_mutated("__setitem__", _B, 0.0), _G.integers(0, 3, size=(4, 2))),
    "__setitem__(value)": (_mutated("__setitem__", 0, _B), _bf(4)),
    "__contains__": (lambda v: np.asarray(v in P), _bf()),
    "flat[index]": (lambda i: P.flat[i], _G.integers(0, 12, size=(4, 2))),
    "flat[i] = v": (lambda v: (lambda y: (y.flat.__setitem__(3, v), y)[1])(P.copy()), _bf()),
}
#: NumPy's C code checks that out= is an ndarray before anything: its own TypeError, raised
#: outside batchtensor, so vmap reruns per example (each example's out is a plain array
#: there). np.argmax(x, out=o) and the other functions dispatch on out= (docs/semantics.md).
REFUSING_OUT = {
    "argmax(out=)": (lambda o: P.argmax(axis=0, out=o), _G.integers(0, 3, size=(4, 4))),
    "cumsum(out=)": (lambda o: P.cumsum(axis=0, out=o), _bf(3, 4)),
    "take(out=)": (lambda o: P.take([0, 1], out=o), _bf(2)),
    "round(out=)": (lambda o: P.round(1, out=o), _bf(3, 4)),
    "dot(out=)": (lambda o: P.dot(S, out=o), _bf(3)),
}


@pytest.mark.parametrize("name", list(DISPATCHING))
def test_plain_methods_that_dispatch_give_the_loops_result(name):
    f, xs = DISPATCHING[name]
    assert_same(bt.vmap(f, fallback="error")(xs), loop_vmap(f)(xs))


@pytest.mark.parametrize("name", list(CONVERTING))
def test_plain_methods_that_convert_raise_clearly_and_rerun(name):
    f, xs = CONVERTING[name]
    with pytest.raises((TypeError, ValueError)) as e:
        bt.vmap(f, fallback="error")(xs)
    assert rerun_reason(e.value) is not None  # the conversion, or NumPy's error replacing it
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always", bt.PerformanceWarning)
        got = bt.vmap(f)(xs)
    assert any("reruns" in str(m.message) for m in w)
    assert_same(got, loop_vmap(f)(xs))


def test_a_size_every_example_holds_alike_needs_no_rerun():
    # the one value every example converts to (docs/semantics.md, converting a batched value)
    for f, xs in ((lambda s: P.reshape(s), np.full(4, 12)),
                  (lambda s: (lambda y: (y.resize(s), y)[1])(P.copy()), np.full(4, 5))):
        assert_same(bt.vmap(f, fallback="error")(xs), loop_vmap(f)(xs))


@pytest.mark.parametrize("name", list(REFUSING_OUT))
def test_plain_methods_refuse_a_batched_out(name):
    """NumPy's C methods take no out= they cannot write into: its TypeError, on which vmap
    reruns per example (a TypeError raised outside batchtensor), writing each example's out."""
    f, xs = REFUSING_OUT[name]
    with pytest.raises(TypeError, match="must be an array"):
        bt.vmap(f, fallback="error")(xs)
    with pytest.warns(bt.PerformanceWarning, match="reruns once per example"):
        got = bt.vmap(f)(xs)
    assert_same(got, loop_vmap(f)(xs))


def test_plain_index_with_a_batched_key_reruns_or_raises_clearly():
    idx = np.array([[0, 2], [1, 1], [2, 0]])
    with pytest.raises(TypeError, match=r"np\.take_along_axis"):
        bt.vmap(lambda i: P[i], fallback="error")(idx)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", bt.PerformanceWarning)
        assert_same(bt.vmap(lambda i: P[i])(idx), loop_vmap(lambda i: P[i])(idx))


@pytest.mark.parametrize("view", [lambda a: a.view(), lambda a: a.view(np.int64),
                                  lambda a: a.view(np.ndarray), lambda a: a.T,
                                  lambda a: a.reshape(()), lambda a: a[...]])
def test_a_view_of_a_0d_array_example_is_a_0d_array_that_writes_through(view):
    """``a.view()`` of a 0-d array per example is a 0-d array view in the loop, so ``v += 1``
    writes into ``a``; it was a NumPy scalar per example, whose ``+=`` rebinds ``v``."""
    def f(x):
        a = np.array(x.sum())
        v = view(a)
        v += 1
        return a, v

    xs = np.arange(6.0).reshape(2, 3)
    assert_same(bt.vmap(f, fallback="error")(xs), loop_vmap(f)(xs))
