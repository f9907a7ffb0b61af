"""Array arguments NumPy's dispatchers leave out: ``batchtensor/undispatched.py`` hands them to
the dispatcher when user code reaches the function through ``numpy`` (the OpInfo sweep's
``*.through_numpy`` entries compare each with the loop). Here: the table against NumPy's
dispatchers and documentation, the reported cases, and the mechanism's edges."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import batchtensor as bt
from batchtensor.undispatched import ORIGINALS, UNDISPATCHED
from opinfo.dispatched import dispatched_positions, documented_undispatched
from tests.loop_reference import assert_same, loop_vmap

#: parameters NumPy documents as arrays, leaves out of its dispatcher, and that the wrappers
#: do not take, with the reason
NOT_WRAPPED = {
    **{(f, "axes"): "axis numbers, not data: a batched value converts (__index__) and vmap "
                    "reruns the function per example"
       for f in ("apply_over_axes", "rot90", "tensordot", "linalg.tensordot")},
    **{(f, p): "a conversion: batchtensor.conversions keeps a batched value batched"
       for f, p in (("array", "object"), ("asarray", "a"), ("asanyarray", "a"),
                    ("ascontiguousarray", "a"), ("asfortranarray", "a"), ("require", "a"))},
    ("fill_diagonal", "val"): "it writes into its first argument: a batched value cannot go "
                              "into a plain target (NumPy converts it: the rerun per example)",
    ("histogram2d", "range"): "NumPy's code hands it to np.linspace, which dispatches on it",
    **{(f, "where"): "NumPy's code hands it to ufunc.reduce, which dispatches on where="
       for f in ("sum", "prod", "max", "min", "nansum", "nanprod", "nanmax", "nanmin")},
    **{(f, "out"): "NumPy's code hands it to np.argmax / np.argmin, which dispatch on out="
       for f in ("nanargmax", "nanargmin")},
}


def test_the_table_names_parameters_numpy_does_not_dispatch():
    positions = dispatched_positions()
    for name, params in UNDISPATCHED.items():
        assert params and not set(params) & set(positions[name]), name
        mod, _, attr = name.rpartition(".")
        assert getattr(getattr(np, mod) if mod else np, attr) is ORIGINALS[name]  # restored


def test_every_documented_undispatched_array_parameter_is_wrapped_or_excluded():
    missing = [(f, p) for f, params in documented_undispatched().items() for p in params
               if p not in UNDISPATCHED.get(f, ()) and (f, p) not in NOT_WRAPPED]
    assert not missing, f"array parameters NumPy does not dispatch on: {missing}"
    documented = {(f, p) for f, params in documented_undispatched().items() for p in params}
    assert set(NOT_WRAPPED) <= documented, sorted(set(NOT_WRAPPED) - documented)


PLAIN = np.random.default_rng(3).normal(size=(3, 4))
REPORTED = {  # the reported cases: a plain first argument, a batched value NumPy ignores
    "np.take(plain, idx)": (lambda i: np.take(PLAIN, i), np.array([[0, 5], [11, 2], [3, 3]])),
    "np.full_like(plain, v)": (lambda v: np.full_like(PLAIN, v), np.arange(3.0)),
    "np.nanmean(plain, where=w)": (lambda w: np.nanmean(PLAIN, axis=1, where=w),
                                   np.random.default_rng(0).random((3, 3, 4)) < 0.8),
    "np.nanvar(plain, mean=m)": (lambda m: np.nanvar(PLAIN, axis=1, mean=m),
                                 np.random.default_rng(1).normal(size=(3, 3, 1))),
    "np.searchsorted(plain, v)": (lambda v: np.searchsorted(np.sort(PLAIN[0]), v),
                                  np.random.default_rng(2).normal(size=(3, 5))),
    "np.take(x, idx, mode=None)": (lambda i: np.take(PLAIN * 1, i, mode=None),
                                   np.array([[0, 5], [11, 2], [3, 3]])),
}


@pytest.mark.parametrize("name", list(REPORTED))
def test_reported_cases_are_vectorised(name):
    f, xs = REPORTED[name]
    with bt.config(fallback="error"):
        assert_same(bt.vmap(f)(xs), loop_vmap(f)(xs))


def test_without_interception_numpy_converts_and_vmap_reruns():
    f, xs = REPORTED["np.take(plain, idx)"]
    with bt.config(intercept_numpy=False):
        with pytest.raises(TypeError, match="inside numpy.take"):
            bt.vmap(f, fallback="error")(xs)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", bt.PerformanceWarning)
            assert_same(bt.vmap(f)(xs), loop_vmap(f)(xs))


def test_a_name_bound_before_the_vmap_is_not_reached():
    take = np.take  # bound outside any vmap: NumPy's own function
    f = lambda i: take(PLAIN, i)  # noqa: E731
    with pytest.raises(TypeError, match="BatchedTensor"):
        bt.vmap(f, fallback="error")(np.array([[0, 1], [2, 3]]))


def test_numpy_is_itself_again_after_the_vmap():
    inside = []
    with bt.config(lean_passes=False):  # (a lean pass leaves numpy's names as they are)
        bt.vmap(lambda x: inside.append(np.take) or x)(np.ones((2, 3)))
    assert inside[0] is not ORIGINALS["take"] and inside[0].__wrapped__ is ORIGINALS["take"]
    assert np.take is ORIGINALS["take"] and np.linalg.pinv is ORIGINALS["linalg.pinv"]
    assert np.take(np.arange(5), [1, 3]).tolist() == [1, 3]
