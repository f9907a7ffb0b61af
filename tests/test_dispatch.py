"""The dispatcher: registry order, registration decorators, binders, boxed kinds, the loop
fallback and its warnings, path recording."""

from __future__ import annotations

import warnings
from collections import namedtuple

import numpy as np
import pytest

import batchtensor as bt
from batchtensor.boxed.loop import loop_call, reset_warnings
from batchtensor.registry import record_paths
from batchtensor.errors import LoopFallback
from batchtensor.registry import REGISTRY, Binder, lookup, op_name

rng = np.random.default_rng(2)


@pytest.fixture
def restore_registry():
    saved = dict(REGISTRY)
    yield
    REGISTRY.clear()
    REGISTRY.update(saved)


@pytest.fixture
def fallback_mode():
    old = bt.config.fallback
    reset_warnings()
    yield
    bt.config.fallback = old


def paths_of(f, *args, **kw):
    with record_paths() as log:
        out = bt.vmap(f, **kw)(*args)
    return out, [(op_name(op), p) for op, p in log]


def test_each_path_is_recorded():
    a = rng.normal(size=(3, 4, 4))
    _, log = paths_of(lambda x: np.sum(np.sin(x)), a)
    assert ("numpy.sin", "boxed") in log and ("numpy.sum", "boxed") in log
    _, log = paths_of(lambda x: np.swapaxes(x, 0, 1), a)
    assert ("numpy.swapaxes", "rule") in log
    _, log = paths_of(lambda x: np.trace(x), a)
    assert log[0] == ("numpy.trace", "decomposition")
    assert ("numpy.diagonal", "rule") in log


def _repeat_rows(x, r):
    """np.repeat with repeats of their own per example over the rows of 2-d examples: the
    rule hands it to the per-example loop (1-d examples it vectorises)."""
    return np.repeat(x, r, axis=0)


def test_a_batched_parameter_the_rule_does_not_unwrap_goes_to_the_loop(fallback_mode):
    # repeats of their own per example over an axis of 2-d examples: the rule hands it on
    a = rng.normal(size=(3, 4, 2))
    reps = np.array([[1, 2, 1, 0], [0, 1, 2, 1], [2, 2, 0, 0]])  # 4 rows out each time
    bt.config.fallback = "silent"
    out, log = paths_of(lambda x, r: np.repeat(x, r, axis=0), a, reps)
    assert ("numpy.repeat", "loop") in log
    np.testing.assert_array_equal(out, [np.repeat(x, r, axis=0) for x, r in zip(a, reps)])


def test_loop_fallback_warns_once_per_op_naming_it(fallback_mode):
    a = rng.normal(size=(3, 4, 2))
    r = np.array([[1, 1, 1, 1]] * 3)
    with pytest.warns(bt.PerformanceWarning, match="numpy.repeat has no batch rule"):
        bt.vmap(_repeat_rows)(a, r)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        bt.vmap(_repeat_rows)(a, r)  # already warned: silent now


def test_fallback_modes(fallback_mode):
    a, r = rng.normal(size=(3, 4, 2)), np.ones((3, 4), int)
    bt.config.fallback = "error"
    with pytest.raises(bt.BatchingError, match="numpy.repeat.*fallback is 'error'"):
        bt.vmap(_repeat_rows)(a, r)
    bt.config.fallback = "silent"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        bt.vmap(_repeat_rows)(a, r)
    with pytest.raises(ValueError, match="fallback must be one of"):
        bt.config.fallback = "loud"


def test_loop_fallback_data_dependent_shapes_raise_clearly(fallback_mode):
    bt.config.fallback = "silent"
    a = np.ones((2, 3, 1))
    reps = np.array([[1, 1, 0], [1, 1, 1]])  # 2 rows out for example 0, 3 for example 1
    with pytest.raises(bt.BatchingError, match=r"numpy.repeat.*different shapes \(\(2, 1\) "
                                               r"for example 0, \(3, 1\) for example 1\)"):
        bt.vmap(_repeat_rows)(a, reps)
    # equal shapes stack fine
    np.testing.assert_array_equal(bt.vmap(_repeat_rows)(a, np.array([[1, 1, 0], [0, 2, 0]])),
                                  np.ones((2, 2, 1)))


def test_loop_fallback_refuses_results_of_different_dtypes(fallback_mode):
    bt.config.fallback = "silent"

    with bt.vmap_level() as level:
        x = bt.BatchedTensor(np.array([1.0, -1.0]))
        with pytest.raises(bt.BatchingError, match="different dtypes"):
            loop_call(lambda v: np.sqrt(v.astype(complex) if v < 0 else v), (x,), {}, level)


def test_loop_fallback_refuses_writes_into_unbatched_arguments(fallback_mode):
    bt.config.fallback = "silent"
    target = np.zeros(4)

    def write(t, i, v):
        t[i] = v

    with bt.vmap_level() as level:
        i = bt.BatchedTensor(np.array([0, 1]))
        v = bt.BatchedTensor(np.array([1.0, 2.0]))
        with pytest.raises(bt.BatchingError, match="write writes into an argument that is not "
                                                   "batched"):
            loop_call(write, (target, i, v), {}, level)
    assert target.flags.writeable and not target.any()


def test_loop_fallback_with_batch_size_zero_raises(fallback_mode):
    bt.config.fallback = "silent"
    with pytest.raises(bt.BatchingError, match="batch size 0"):
        bt.vmap(_repeat_rows)(np.zeros((0, 3, 2)), np.ones((0, 3), int))


def test_loop_call_stacks_namedtuples_scalars_and_passes_equal_constants():
    Res = namedtuple("Res", "value label")

    def op(x, scale):
        return Res(x * scale, "same")

    with bt.vmap_level() as level:
        x = bt.BatchedTensor(np.arange(6.0).reshape(3, 2))
        out = loop_call(op, (x, 2.0), {}, level)
        assert isinstance(out, Res) and out.label == "same"
        np.testing.assert_array_equal(level.unwrap(out.value), np.arange(6.0).reshape(3, 2) * 2)
        with pytest.raises(bt.BatchingError, match="example 1 returned"):
            loop_call(lambda v: str(v[0]), (x,), {}, level)
        scalars = loop_call(lambda v: float(v[0]), (x,), {}, level)
        np.testing.assert_array_equal(level.unwrap(scalars), [0.0, 2.0, 4.0])


def test_loop_call_returns_the_batched_out_argument():
    with bt.vmap_level() as level:
        x = bt.BatchedTensor(np.arange(6.0).reshape(3, 2))
        out = bt.BatchedTensor(np.zeros((3, 2)))
        res = loop_call(np.negative, (x,), {"out": out}, level)
        assert res is out
        np.testing.assert_array_equal(level.unwrap(out), -np.arange(6.0).reshape(3, 2))


def test_user_batch_rule_registration(restore_registry):
    calls = []

    @bt.batch_rule(np.flip, replace=True)
    def flip_rule(m, m_bdim, axis=None):
        calls.append((m.shape, m_bdim, axis))
        return np.flip(m, axis=axis + (axis >= m_bdim)), m_bdim

    a = rng.normal(size=(3, 4))
    np.testing.assert_array_equal(bt.vmap(lambda x: np.flip(x, 0), in_axes=1)(a),
                                  np.flip(a, 0).T)
    assert calls == [((3, 4), 1, 0)]
    assert lookup(np.flip).kind == "rule"


def test_registering_twice_without_replace_raises():
    with pytest.raises(ValueError, match="already has a batching entry"):
        bt.batch_rule(np.flip)(lambda m, m_bdim, axis=None: None)


def test_rule_can_hand_a_call_to_the_loop(restore_registry, fallback_mode):
    @bt.batch_rule(np.flip, replace=True)
    def flip_rule(m, m_bdim, axis=None):
        raise LoopFallback("testing")

    bt.config.fallback = "silent"
    a = rng.normal(size=(3, 4))
    out, log = paths_of(lambda x: np.flip(x), a)
    np.testing.assert_array_equal(out, a[:, ::-1])
    assert ("numpy.flip", "loop") in log


def test_boxed_registrations(restore_registry):
    bt.boxed.pointwise(np.isclose, arrays=("a", "b", "rtol", "atol"), replace=True)
    bt.boxed.reduction(np.nansum, replace=True)
    bt.boxed.variadic_bdims(np.linalg.det, core_ranks={"a": 2}, replace=True)
    a = rng.normal(size=(3, 2, 2))
    a[0, 0, 0] = np.nan
    np.testing.assert_allclose(bt.vmap(np.linalg.det)(a[1:]), np.linalg.det(a[1:]))
    np.testing.assert_allclose(bt.vmap(lambda x: np.nansum(x, axis=0))(a), np.nansum(a, axis=1))
    np.testing.assert_array_equal(bt.vmap(np.isclose, in_axes=(0, None))(a, a[1]),
                                  np.isclose(a, a[1]))
    for op, kind in [(np.isclose, "pointwise"), (np.nansum, "reduction"),
                     (np.linalg.det, "variadic_bdims")]:
        assert lookup(op).boxed_kind == kind


def test_decomposition_registration(restore_registry):
    @bt.decomposition(np.fliplr, replace=True)
    def fliplr(m):
        return np.flip(m, axis=1)

    a = rng.normal(size=(3, 4, 5))
    out, log = paths_of(np.fliplr, a)
    np.testing.assert_array_equal(out, a[:, :, ::-1])
    assert log[0] == ("numpy.fliplr", "decomposition")


def test_binder_errors_match_python():
    b = Binder(np.flip, [])
    with pytest.raises(TypeError, match="at most 0 positional"):
        b.bind((1,), {})
    a = rng.normal(size=(3, 4))
    with pytest.raises(TypeError, match="unexpected keyword argument 'axes'"):
        bt.vmap(lambda x: np.flip(x, axes=0))(a)
    swap = lookup(np.swapaxes).binder
    with pytest.raises(TypeError, match="missing required argument 'axis2'"):
        swap.bind((a, 0), {})
    with pytest.raises(TypeError, match="multiple values for argument 'axis'"):
        bt.vmap(lambda x: np.flip(x, 0, axis=0))(a)


def test_op_names():
    assert op_name(np.add) == "numpy.add"
    assert op_name(np.add.reduce) == "numpy.add.reduce"
    assert op_name(np.linalg.solve) == "numpy.linalg.solve"
    assert op_name(np.sum) == "numpy.sum"


def test_loop_fallback_keeps_read_only_and_view_results_unwritable():
    """Per example these ops return a read-only array, or a view that a write would go
    through to the argument; the loop fallback stacks copies, so it makes them read-only: a
    write raises, as through NumPy's read-only views, instead of silently missing the input."""
    xs = np.arange(12.0).reshape(3, 4)

    def every_other(x):  # a view of the argument
        return x[::2]

    def read_only(x):
        return np.broadcast_to(x[:1], (2,))

    for op in (every_other, read_only):
        with bt.vmap_level() as level:
            res = loop_call(op, (bt.BatchedTensor(xs, 0),), {}, level)
            with pytest.raises(ValueError, match="read-only"):
                res[0] = -1.0
            np.testing.assert_array_equal(level.unwrap(res), np.stack([op(x) for x in xs]))
    with bt.vmap_level() as level:  # a fresh result stays writeable
        res = loop_call(lambda x: x * 2, (bt.BatchedTensor(xs, 0),), {}, level)
        res[0] = -1.0
        assert level.unwrap(res)[:, 0].tolist() == [-1.0] * 3


def test_sliding_window_view_is_a_read_only_view_as_in_numpy():
    from numpy.lib.stride_tricks import sliding_window_view

    xs = np.arange(24.0).reshape(2, 3, 4)

    def windows(x):
        w = sliding_window_view(x, 2, axis=1)
        try:
            w[0, 0, 0] = -1.0
        except ValueError as e:
            assert "read-only" in str(e)
        v = sliding_window_view(x, 2, axis=1, writeable=True)
        v[0, 0, 0] = -1.0  # reaches x, as in the loop
        return w

    a, b = xs.copy(), xs.copy()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a rule, not the loop fallback
        got = bt.vmap(windows)(a)
    want = np.stack([windows(x) for x in b])
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(a, b)


def test_slow_path_warnings_point_at_the_users_line():
    """The per-op loop's warning and the whole-function rerun's name the user's file and line,
    not batchtensor's or NumPy's (np.median, NumPy's Python code, calls the op that loops)."""
    import sys

    reset_warnings()  # (each op's loop warning is shown once a process)
    xs = np.array([[0.0, 1.0, -1.0], [-2.0, -2.0, 3.0]])

    doubled = np.vectorize(lambda a: 2.0 * a)  # no otypes: the per-op loop

    def first_positive(x):
        return doubled(x)[:1]

    def scaled(x):
        return np.full(2, float(x.sum()))  # float(): the rerun

    lines = {}
    for f in (first_positive, scaled):
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            lines[f.__name__] = sys._getframe().f_lineno + 1
            bt.vmap(f)(xs)
        (w,) = [w for w in seen if issubclass(w.category, bt.PerformanceWarning)]
        assert w.filename == __file__
        want = (f.__code__.co_firstlineno + 1 if f is first_positive
                else lines[f.__name__])  # the loop: f's line; the rerun: the vmap call's
        assert w.lineno == want, (f.__name__, w.lineno, want)
