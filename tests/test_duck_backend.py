"""Backend neutrality without a GPU: the OpInfo sweep on the strict duck array of
``opinfo/duck.py`` (CuPy's contract on a hidden ndarray), the duck's own strictness, and one
test for each class of rule fix it led to.

The sweep here runs every entry that ``opinfo/backends.py`` does not exclude, at one dtype (the
entries' dtypes in turn), on every ``STRIDE``-th sample (rotating by entry) with at most
``MAX_COMBOS`` in_axes combinations per sample; ``python -m opinfo --backend duck`` runs all.
"""

from __future__ import annotations

import importlib.util

import hashlib
import operator

import numpy as np
import pytest

import batchtensor as bt
from opinfo import BY_NAME, DATABASE, sweep_op
from opinfo.backends import DUCK_EXCLUDED, DUCK_EXPECTED, HOST_OUTPUTS, duck_excluded
from opinfo.duck import DuckMixingError, from_numpy, is_duck, to_numpy

STRIDE = 3
MAX_COMBOS = 4


def _turn(name: str) -> int:
    return int(hashlib.sha256(name.encode()).hexdigest()[:8], 16)


CASES = [pytest.param(info, id=info.name) for info in DATABASE if duck_excluded(info) is None]


@pytest.mark.parametrize("info", CASES)
def test_duck_sweep(info):
    turn = _turn(info.name)
    dtype = info.dtypes[turn % len(info.dtypes)]
    sweep_op(info, dtype, backend="duck", max_combos=MAX_COMBOS,
             select=lambda k: (k + turn) % STRIDE == 0)


def test_most_of_the_database_runs_on_the_duck_backend():
    # (excluded as groups, and not counted: the foreign libraries' rules, whose compiled
    # kernels take host arrays (CuPy's users call cupyx.scipy instead), and numpy.ma, which
    # CuPy does not have)
    own = [i for i in DATABASE
           if not i.name.startswith(("scipy.", "sklearn.", "astropy.", "ma."))]
    assert sum(duck_excluded(i) is None for i in own) > 0.85 * len(own)


def test_exclusions_and_expected_differences_name_real_entries_and_samples():
    for group, (reason, patterns) in DUCK_EXCLUDED.items():
        assert reason
        for p in patterns:
            library = p.split(".")[0]
            if library in ("sklearn", "scipy", "astropy") and \
                    importlib.util.find_spec(library) is None:
                continue  # (an optional extra this environment lacks: no entries for it)
            hits = [i for i in DATABASE if i.name == p
                    or (p.endswith("*") and i.name.startswith(p[:-1]))]
            assert hits, f"{group}: {p!r} matches no OpInfo entry"
    for (name, sample), (scope, reason) in DUCK_EXPECTED.items():
        assert scope in ("all", "nested") and reason
        info = BY_NAME[name]
        if sample is not None:
            names = {s.name for dt in info.dtypes
                     for s in info.samples(np.random.default_rng(0), dt)}
            assert sample in names, f"{name} has no sample {sample!r}"
    assert HOST_OUTPUTS <= set(BY_NAME)


# ---- the duck array's strictness ---------------------------------------------------------------
@pytest.fixture
def d():
    return from_numpy(np.arange(6.0).reshape(2, 3).copy())


@pytest.mark.parametrize("convert", [np.asarray, np.array, np.ascontiguousarray, memoryview,
                                     lambda x: x.item(), lambda x: x.tolist(),
                                     lambda x: x.tobytes(), lambda x: float(x[0, 0]),
                                     lambda x: int(x[0, 0]), lambda x: complex(x[0, 0]),
                                     lambda x: operator.index(x[0, 0]), lambda x: [1, 2][x[0, 1]]],
                         ids=["asarray", "array", "ascontiguousarray", "memoryview", "item",
                              "tolist", "tobytes", "float", "int", "complex", "index",
                              "list index"])
def test_host_conversions_raise(d, convert):
    with pytest.raises(TypeError):
        convert(d)


def test_no_memory_interface(d):
    for name in ("__array_interface__", "__array_struct__", "__cuda_array_interface__",
                 "__buffer__"):
        assert not hasattr(d, name)
    assert not hasattr(d.flags, "writeable")  # CuPy has no read-only arrays


def test_bool_of_one_element_is_a_device_sync(d):
    assert bool(d[0, 1]) is True
    with pytest.raises(ValueError):
        bool(d)


@pytest.mark.parametrize("mix", [lambda x, y: np.add(x, y), lambda x, y: x + y,
                                 lambda x, y: y * x, lambda x, y: np.concatenate([x, y]),
                                 lambda x, y: np.where(x > 1, x, y),
                                 lambda x, y: np.sum(x, where=np.asarray(y > 0))],
                         ids=["ufunc", "operator", "reflected", "function", "where", "kwarg"])
@pytest.mark.parametrize("plain", [np.ones((2, 3)), np.array(1.0)], ids=["n-d", "0-d"])
def test_mixing_with_plain_ndarrays_raises(d, mix, plain):
    with pytest.raises(DuckMixingError, match="like="):
        mix(d, plain)


def test_scalars_mix_and_results_stay_on_the_device(d):
    for res in (d + 1, 2.5 * d, d * np.float32(2), np.sin(d), np.sum(d), d.sum(axis=0),
                np.argmax(d), d.T, d[0], np.moveaxis(d, 0, 1)):
        assert is_duck(res), res
    assert np.sum(d).shape == ()  # a 0-d array, as CuPy returns, not a NumPy scalar
    np.testing.assert_array_equal(to_numpy(np.linalg.norm(d, axis=1)),
                                  np.linalg.norm(to_numpy(d), axis=1))


def test_creation_honours_like(d):
    for made in (np.zeros(3, like=d), np.arange(4, like=d), np.full((2,), 1.5, like=d),
                 np.asarray([1, 2], like=d), np.asarray(np.ones(2), like=d), np.eye(2, like=d),
                 np.fromfunction(lambda i: i * d[0, 1], (3,), like=d)):
        assert is_duck(made)
    assert type(np.zeros(3)) is np.ndarray
    with pytest.raises(DuckMixingError):
        d[0] + np.zeros(3)  # made without like=


def test_views_out_and_base(d):
    out = np.empty_like(d)
    assert is_duck(out) and np.add(d, 1, out=out) is out
    v = d[1:]
    assert v.base is d and v[:, 1].base is d  # one owner object, as CuPy's base
    v[0, 0] = 10.0
    assert to_numpy(d)[1, 0] == 10.0
    d += 1
    assert to_numpy(d)[0, 0] == 1.0


def test_indexing(d):
    idx = from_numpy(np.array([2, 0]))
    np.testing.assert_array_equal(to_numpy(d[:, idx]), to_numpy(d)[:, [2, 0]])
    np.testing.assert_array_equal(to_numpy(d[:, [2, 0]]), to_numpy(d)[:, [2, 0]])
    np.testing.assert_array_equal(to_numpy(d[d > 2]), to_numpy(d)[to_numpy(d) > 2])
    d[0] = from_numpy(np.array([7.0, 8.0, 9.0]))
    d[1, idx] = 0.0
    assert to_numpy(d).tolist() == [[7.0, 8.0, 9.0], [0.0, 4.0, 0.0]]
    with pytest.raises(DuckMixingError):
        d[0] = np.ones(3)
    assert 4.0 in d and 5.0 not in d
    assert [r.shape for r in d] == [(3,), (3,)] and len(d) == 2


def test_a_batched_value_dispatches_first(d):
    def f(x, y):
        return np.add(y, x), y * x, np.concatenate([y, x[None]])

    got = bt.vmap(f, in_axes=(0, None))(from_numpy(np.ones((4, 3))), d)
    assert all(is_duck(g) for g in got)
    assert to_numpy(got[0]).shape == (4, 2, 3)


# ---- each class of rule fix --------------------------------------------------------------------
def _vmap_duck(f, *args, in_axes=0):
    """vmap on DuckArrays (rules only, no loop fallback) against the loop on NumPy."""
    axes = in_axes if isinstance(in_axes, tuple) else (in_axes,) * len(args)
    got = bt.vmap(f, in_axes=in_axes, fallback="error")(*[from_numpy(a) for a in args])
    outs = got if isinstance(got, tuple) else (got,)
    assert all(is_duck(o) for o in outs), [type(o) for o in outs]
    n = next(a.shape[ax] for a, ax in zip(args, axes) if ax is not None)
    loop = [f(*[a if ax is None else np.take(a, i, axis=ax) for a, ax in zip(args, axes)])
            for i in range(n)]
    for k, o in enumerate(outs):
        want = np.stack([np.asarray(r[k] if isinstance(got, tuple) else r) for r in loop])
        np.testing.assert_allclose(to_numpy(o), want)


X = np.random.default_rng(0).normal(size=(3, 5))


@pytest.mark.parametrize("f", [
    lambda x: np.append(x, [1.0, 2.0]), lambda x: np.concatenate([x, [0.5]]),
    lambda x: np.hstack([x, [0.5]]), lambda x: np.diff(x, prepend=0.0),
    lambda x: np.ediff1d(x, to_begin=-1.0), lambda x: np.add.outer(x, 2.0),
    lambda x: np.searchsorted(np.sort(x), 0.1), lambda x: np.polyval([1.0, 2.0], x),
    lambda x: np.polyadd(x, [1.0]), lambda x: x[np.array([[0, 1]])[0].tolist()],
    lambda x: np.pad(x, (1, 2), constant_values=((1.0, 2.0),))],
    ids=["append", "concatenate", "hstack", "diff", "ediff1d", "outer", "searchsorted",
         "polyval", "polyadd", "list index", "pad per-axis values"])
def test_python_values_are_made_arrays_on_the_backend(f):
    """A Python scalar or list beside a batched value: ``as_array`` / ``ensure_bdim(like=)``."""
    _vmap_duck(f, X)


def test_setitem_of_a_python_list():
    def f(x):
        y = x.reshape(5, 1) * np.ones((1, 2), like=x)
        y[0] = [1.0, 2.0]
        return y

    _vmap_duck(f, X)


@pytest.mark.parametrize("f", [
    lambda x: np.interp(x, [-1.0, 0.0, 1.0], [0.0, 1.0, 0.0]), lambda x: np.vander(x, 3),
    lambda x: np.polyder(x), lambda x: np.polyint(x), lambda x: np.poly(x[:3]),
    lambda x: np.delete(x, 1), lambda x: np.isin(x, x[:2]),
    lambda x: np.logspace(0.0, 1.0, 4, base=x[0])],
    ids=["interp", "vander", "polyder", "polyint", "poly", "delete", "isin", "logspace"])
def test_helper_arrays_are_made_with_like(f):
    _vmap_duck(f, X)


@pytest.mark.parametrize("f", [
    lambda x: np.unique(np.round(x)), lambda x: np.nonzero(x > 10)[0],
    lambda x: np.polymul(x[:2], x[:2]), lambda x: x[x > 10]],
    ids=["unique", "nonzero", "polymul", "mask"])
def test_sizes_are_checked_with_bool_not_int(f):
    """A data-dependent size is compared across examples by ``bool()`` (the host read every
    backend answers), so it works on the strict duck where ``int()`` would not."""
    _vmap_duck(f, np.stack([np.arange(5.0)] * 3))


def test_differing_sizes_still_raise_a_batching_error():
    with pytest.raises(bt.BatchingError):
        bt.vmap(np.unique, fallback="error")(from_numpy(np.array([[1.0, 1.0], [1.0, 2.0]])))
    with pytest.raises(bt.BatchingError):
        bt.vmap(lambda x: x[x > 0], fallback="error")(from_numpy(np.array([[1.0, 1.0],
                                                                           [1.0, -2.0]])))


@pytest.mark.parametrize("f", [lambda x: _set(x, 0, 1.0), lambda x: _put(x),
                               lambda x: _fill_diagonal(x)], ids=["setitem", "put",
                                                                  "fill_diagonal"])
def test_writes_need_no_writeable_flag(f):
    """CuPy's flags have no ``writeable``: ``read_only`` answers False for them."""
    _vmap_duck(f, X)


def _set(x, i, v):
    y = x.copy()
    y[i] = v
    return y


def _put(x):
    y = x.copy()
    np.put(y, [0, 2], [5.0, 6.0])
    return y


def _fill_diagonal(x):
    y = x[:4].reshape(2, 2).copy()
    np.fill_diagonal(y, [3.0, 4.0])
    return y


@pytest.mark.parametrize("f", [
    lambda x: _write(np.place, x, x > 0, [1.0, 2.0]),
    lambda x: _write(np.putmask, x, x > 0, [1.0, 2.0])], ids=["place", "putmask"])
def test_written_python_lists_are_made_arrays_on_the_target_backend(f):
    _vmap_duck(f, X)


def _write(fn, x, *args):
    y = x.copy()
    fn(y, *args)
    return y


@pytest.mark.parametrize("f, c", [
    (lambda x, c: np.asarray([x, c]), X[0]),
    (lambda x, c: np.piecewise(x, [c > 0, c <= 0], [1.0, -1.0]), X[0]),
    (lambda x, c: np.interp(x, [0.0, 1.0], [2.0, 3.0], left=c), X[0, 0]),
    (lambda x, c: x[[c, 0, c]], np.array(2)),
    (lambda x, c: np.pad(x, 1, constant_values=c), np.array(7.0)),
    (lambda x, c: x.astype(np.common_type(x, c)), X[0].astype(np.float32))],
    ids=["asarray of a list", "piecewise conditions", "interp left", "index list", "pad value",
         "common_type"])
def test_unbatched_device_arrays_stay_on_their_backend(f, c):
    _vmap_duck(f, X, c, in_axes=(0, None))


def test_error_messages_read_no_device_value():
    """NumPy's messages quote a value; on another backend the rule raises the same error
    type without reading it on the host."""
    with pytest.raises(IndexError, match="out of bounds"):
        bt.vmap(lambda x: np.put(x.copy(), [9], [1.0]), fallback="error")(from_numpy(X))
    with pytest.raises(ValueError, match="not finite"):
        bt.vmap(lambda x: np.histogram(x, bins=3), fallback="error")(
            from_numpy(np.full((2, 4), np.nan)))


def test_nested_histogram_edges_and_flat_writes_stay_on_the_backend():
    xs = from_numpy(np.random.default_rng(1).normal(size=(2, 3, 20)))
    got = bt.vmap(bt.vmap(lambda x: np.histogram_bin_edges(x, bins=4, range=(-2, 2))))(xs)
    assert is_duck(got) and to_numpy(got).shape == (2, 3, 5)

    def flat_write(x, i):
        y = x.copy()
        y.flat[i] = 0.0
        return y

    _vmap_duck(flat_write, X, np.array([1, 3, 0]), in_axes=(0, 0))


# ---- writes into unmapped arguments on a backend without read-only arrays -------------------
def _accumulate(x, acc):
    acc += 1.0
    return x * 2.0


def test_writes_into_an_unmapped_argument_repeat_per_example():
    """No read-only view guards a CuPy (here: duck) argument; vmap copies it before the pass
    and, where the pass changed it, puts it back and runs once per example, as the loop."""
    acc = np.zeros(3)
    got = bt.vmap(_accumulate, in_axes=(0, None), fallback="silent")(
        from_numpy(np.ones((4, 3))), from_numpy(acc))
    assert acc.tolist() == [4.0, 4.0, 4.0]  # as the loop: once per example
    assert is_duck(got) and to_numpy(got).tolist() == [[2.0] * 3] * 4


def test_a_write_into_an_unmapped_argument_under_fallback_error_raises_and_leaves_it():
    acc = np.zeros(3)
    with pytest.raises(bt.BatchingError, match="not mapped"):
        bt.vmap(_accumulate, in_axes=(0, None), fallback="error")(
            from_numpy(np.ones((4, 3))), from_numpy(acc))
    assert acc.tolist() == [0.0, 0.0, 0.0]


def test_a_batched_write_into_an_unmapped_argument_is_the_shared_state_error():
    acc = np.zeros(3)
    with pytest.raises(bt.SharedWriteError):
        bt.vmap(lambda x, a: np.add(x, 1.0, out=a), in_axes=(0, None))(
            from_numpy(np.ones((4, 3))), from_numpy(acc))
    assert acc.tolist() == [0.0, 0.0, 0.0]


def test_an_unmapped_argument_left_alone_is_not_rerun():
    calls = []

    def f(x, w):
        calls.append(1)
        return x * w

    w = from_numpy(np.arange(3.0))
    got = bt.vmap(f, in_axes=(0, None), fallback="error")(from_numpy(np.ones((4, 3))), w)
    assert len(calls) == 1 and to_numpy(got).tolist() == [[0.0, 1.0, 2.0]] * 4

