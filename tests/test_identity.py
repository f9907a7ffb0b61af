"""Type identity of a batched value (docs/semantics.md, "What isinstance answers"):
``isinstance(x, np.ndarray)`` answers as for one example, ``type(x)`` is BatchedTensor, and
batchtensor's own code tells plain from batched by type; compared with the loop."""

from __future__ import annotations

import copy
import pickle
import warnings

import numpy as np
import pytest

import batchtensor as bt
from batchtensor.api import rerun_reason
from batchtensor.buffers import LocalBuffer
from batchtensor.tensor import is_plain_array
from loop_reference import assert_same, loop_vmap, vectorised

RNG = np.random.default_rng(19)
XS = RNG.normal(size=(4, 5, 3))


def library_center(X):
    """Library-style validation: its own error for anything that is not an ndarray."""
    if not isinstance(X, np.ndarray):
        raise ValueError(f"X must be a numpy.ndarray, got {type(X).__name__}")
    return X - X.mean(axis=0)


def reruns(f, xs, match=None):
    """``fallback="error"``: a TypeError that is a rerun reason; by default the rerun, warned,
    with the loop's result."""
    with pytest.raises(TypeError, match=match) as e:
        bt.vmap(f, fallback="error")(xs)
    assert rerun_reason(e.value) is not None
    with pytest.warns(bt.PerformanceWarning, match="reruns once per example"):
        got = bt.vmap(f)(xs)
    assert_same(got, loop_vmap(f)(xs))


# ---- what isinstance and type answer -------------------------------------------------------------
def test_a_batched_array_is_an_ndarray_and_a_batched_tensor():
    seen = []

    def f(x):
        seen.append(dict(ndarray=isinstance(x, np.ndarray), batched=isinstance(x, bt.BatchedTensor),
                    type_is=type(x) is bt.BatchedTensor, type_nd=type(x) is np.ndarray,
                    subclass=issubclass(type(x), np.ndarray), cls=x.__class__))
        return x * 2

    vectorised(f, XS)  # vmap's run first, then the loop's
    assert seen[0] == dict(ndarray=True, batched=True, type_is=True, type_nd=False,
                        subclass=False, cls=np.ndarray)


PER_EXAMPLE = {
    "the input": lambda x: x,
    "an op's result": lambda x: x * 2 + 1,
    "a view": lambda x: x.T[1:],
    "x[0] (1-d)": lambda x: x[0],
    "a 0-d array": lambda x: np.array(x.sum()),
    "x[0, 0, ...] (0-d array)": lambda x: x[0, 0, ...],
    "a reduction (NumPy scalar)": lambda x: x.sum(),
    "x[0, 0] (NumPy scalar)": lambda x: x[0, 0],
    "np.asarray": lambda x: np.asarray(x, dtype=np.float32),
    "a made array": lambda x: np.zeros(3),
}


@pytest.mark.parametrize("name", list(PER_EXAMPLE))
@pytest.mark.parametrize("cls", [float, np.generic, np.floating, np.float32, int, complex],
                         ids=lambda c: c.__name__)
def test_isinstance_of_a_scalar_type_answers_as_for_one_example(name, cls):
    import numbers
    g = PER_EXAMPLE[name]
    vectorised(lambda x: np.array([isinstance(g(x), cls), isinstance(g(x), numbers.Real)]), XS)
    vectorised(lambda x: np.array([isinstance(g(x.astype(np.float32)), cls)]), XS)


@pytest.mark.parametrize("name", list(PER_EXAMPLE))
def test_isinstance_ndarray_answers_as_for_one_example(name):
    g = PER_EXAMPLE[name]
    vectorised(lambda x: np.bool_(isinstance(g(x), np.ndarray)), XS)


@pytest.mark.parametrize("name", list(PER_EXAMPLE))
def test_isinstance_ndarray_answers_as_for_one_example_nested(name):
    g = PER_EXAMPLE[name]

    def f(x):
        return np.bool_(isinstance(g(x), np.ndarray))

    xs = RNG.normal(size=(2, 3, 5, 3))
    with warnings.catch_warnings():
        warnings.simplefilter("error", bt.PerformanceWarning)
        got = bt.vmap(bt.vmap(f, fallback="error"), fallback="error")(xs)
    assert_same(got, loop_vmap(loop_vmap(f))(xs))


def test_an_array_made_in_f_is_an_ndarray_before_and_after_its_batched_write():
    seen = []

    def f(x):
        out = np.zeros(3)
        seen.append((type(out) is LocalBuffer, isinstance(out, np.ndarray)))
        out[0] = x.sum()
        seen.append((type(out) is bt.BatchedTensor, isinstance(out, np.ndarray)))
        return out

    with bt.config(lean_passes=False):  # (a lean pass makes a plain array: no buffer)
        vectorised(f, XS)
    assert seen[:2] == [(True, True), (True, True)]


# ---- library checks pass, and the result is the loop's ---------------------------------------
@pytest.mark.parametrize("n", [1, 3])
def test_a_library_isinstance_check_is_vectorised(n):
    xs = XS[:n]
    got = vectorised(library_center, xs)
    assert_same(got, np.stack([library_center(x) for x in xs]))


def test_a_library_check_with_in_axes_and_out_axes():
    xs = np.moveaxis(XS, 0, 2)
    got = bt.vmap(library_center, in_axes=2, out_axes=1, fallback="error")(xs)
    assert_same(got, loop_vmap(library_center, 2, 1)(xs))


def test_batch_size_0():
    got = bt.vmap(library_center, fallback="error")(np.zeros((0, 5, 3)))
    assert got.shape == (0, 5, 3) and got.dtype == np.float64


def test_nested_vmap():
    xs = RNG.normal(size=(2, 3, 5, 4))
    seen = set()

    def f(x):
        seen.add((x.__class__, type(x)))
        return library_center(x)

    got = bt.vmap(bt.vmap(f, fallback="error"), fallback="error")(xs)
    assert_same(got, np.stack([np.stack([library_center(x) for x in row]) for row in xs]))
    assert seen == {(np.ndarray, bt.BatchedTensor)}


def test_manual_levels():
    with bt.vmap_level() as outer:
        a = bt.BatchedTensor(XS, bdim=0)
        with bt.vmap_level() as inner:
            b = bt.BatchedTensor(a, bdim=1)  # an outer level's value is wrapped, not converted
            assert isinstance(b, np.ndarray) and type(b) is bt.BatchedTensor
            y = inner.unwrap(library_center(b))
        got = outer.unwrap(y)
    want = np.stack([np.stack([library_center(XS[i][:, j]) for j in range(3)])
                     for i in range(4)])
    assert_same(got, want)


def test_a_check_then_a_conversion_still_reruns():
    def f(x):
        if not isinstance(x, np.ndarray):
            raise ValueError("not an array")
        return x * round(float(x.sum()), 6)  # a Python float per example, rounded: the rerun

    reruns(f, XS)


def test_validation_helpers_of_sklearn():
    validation = pytest.importorskip("sklearn.utils.validation",
                                     reason="scikit-learn is an optional test dependency")
    vectorised(lambda x: validation.check_array(x, dtype=np.float64) * 2, XS)
    vectorised(lambda x: validation.column_or_1d(x[:, 0]) + 1, XS)
    vectorised(lambda x: x * validation._num_samples(x), XS)


def test_validation_helpers_of_scipy():
    util = pytest.importorskip("scipy._lib._util", reason="SciPy is an optional test dependency")
    vectorised(lambda x: util._asarray_validated(x) * 2, XS)


# ---- our own code tells plain from batched by type ----------------------------------------------
def test_is_plain_array():
    plain = np.ones(3)
    seen = []

    def f(x):
        out = np.zeros(2)
        seen.append((is_plain_array(x), is_plain_array(out), is_plain_array(plain),
                     is_plain_array(x.sum()), is_plain_array([1.0])))
        return x

    vectorised(f, XS)
    assert seen[0] == (False, True, True, False, False)
    assert is_plain_array(np.float64(1.0)) is False
    assert is_plain_array(np.ma.masked_array([1.0])) is True


def test_onnx_recorder_class():
    pytest.importorskip("onnx", reason="the ONNX exporter needs the onnx extra")
    from batchtensor.onnx.recorder import TArray
    seen = set()

    def f(x):
        seen.add((x.__class__, isinstance(x, np.ndarray), type(x)))
        return x * 2

    bt.onnx.export(f, XS, validate=False)
    assert seen == {(TArray, False, bt.BatchedTensor)}


# ---- inputs that are ndarray subclasses: as before -----------------------------------------------
def test_memmap_input(tmp_path):
    mm = np.memmap(tmp_path / "x.dat", dtype=np.float64, mode="w+", shape=XS.shape)
    mm[:] = XS
    got = vectorised(library_center, mm)
    assert type(got) is np.ndarray

    def write(x):
        x[0] = -1.0  # writes through to the file, as the loop's per-example memmap views do
        return x.sum()

    bt.vmap(write)(mm)
    assert (np.memmap(tmp_path / "x.dat", dtype=np.float64, mode="r",
                      shape=XS.shape)[:, 0] == -1.0).all()


def test_matrix_input_is_refused():
    with pytest.raises(ValueError, match="numpy.matrix"):
        bt.vmap(library_center)(np.asmatrix(XS[:, :, 0]))


# ---- copy, pickle, repr, np.asanyarray, np.ma.asarray ---------------------------------------
def test_copy_and_deepcopy_are_the_loops():
    vectorised(lambda x: copy.copy(x) * 2, XS)
    vectorised(lambda x: copy.deepcopy([x, x.sum()])[0] + 1, XS)
    vectorised(lambda x: copy.deepcopy(x.sum()) * 2, XS)

    def no_alias(x):
        y = copy.copy(x)
        y[0] = 0.0  # a copy: the argument is not written
        return x

    vectorised(no_alias, XS)


def test_repr_describes_the_batch():
    seen = []
    vectorised(lambda x: (seen.append(repr(x)), x)[1], XS)
    assert seen[0].startswith("BatchedTensor(shape=(5, 3)") and "batch_size=4" in seen[0]


def test_pickle_is_a_conversion_that_reruns():
    def f(x):
        return pickle.loads(pickle.dumps(x)) * 2

    reruns(f, XS, match="Pickling")


def test_asanyarray_is_vectorised():
    vectorised(lambda x: np.asanyarray(x) * 2, XS)
    vectorised(lambda x: np.asanyarray(x.sum()) + 1, XS)


def test_masked_asarray_is_vectorised():
    # (tests/test_masked.py: numpy.ma on batched values)
    vectorised(lambda x: np.ma.asarray(x).filled(0.0) * 2, XS)
