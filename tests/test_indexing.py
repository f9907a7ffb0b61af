"""Indexing semantics the OpInfo sweep cannot express: data-dependent counts, copies versus
views, writes across nested levels, and the errors for writes into shared arrays."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import batchtensor as bt


def loop(f, *xs):
    return np.stack([np.asarray(f(*ex)) for ex in zip(*xs)])


@pytest.fixture
def rng():
    return np.random.default_rng(0)


def test_getitem_mask_with_different_counts_raises(rng):
    xs = rng.normal(size=(4, 6))
    with pytest.raises(bt.BatchingError, match="boolean mask.*different shapes"):
        bt.vmap(lambda x: x[x > 0])(xs)


def test_getitem_nested_mask_with_different_counts_raises(rng):
    xs = rng.normal(size=(2, 3, 6))
    with pytest.raises(bt.BatchingError, match="boolean mask"):
        bt.vmap(bt.vmap(lambda x: x[x > 0]))(xs)


def test_getitem_mask_with_same_count_works(rng):
    xs = rng.normal(size=(4, 6))
    ms = np.argsort(rng.random((4, 6)), axis=1) < 2  # two True per row, different places
    np.testing.assert_array_equal(bt.vmap(lambda x, m: x[m])(xs, ms),
                                  loop(lambda x, m: x[m], xs, ms))


@pytest.mark.parametrize("value", [0, 2.5, "batched"])
def test_setitem_mask_with_different_counts(rng, value):
    xs = rng.normal(size=(4, 3, 5))
    vs = rng.normal(size=(4,))

    def f(x, v):
        x = x.copy()
        x[x > 0] = v if value == "batched" else value
        return x

    np.testing.assert_array_equal(bt.vmap(f)(xs, vs), loop(f, xs, vs))


def test_setitem_leading_mask_with_row_value(rng):
    xs = rng.normal(size=(4, 3, 5))
    rows = rng.normal(size=(4, 5))

    def f(x, r):
        x = x.copy()
        x[x[:, 0] > 0] = r
        return x

    np.testing.assert_array_equal(bt.vmap(f)(xs, rows), loop(f, xs, rows))


def test_zero_d_result_is_a_scalar_not_a_view():
    xs = np.arange(12.0).reshape(3, 4)
    before = xs.copy()

    def write(x):
        y = x[0]
        y[...] = 100.0  # NumPy: x[0] of a 1-d array is a scalar, which refuses item assignment
        return y

    def bump(x):
        y = x[0]
        y += 100.0  # a scalar: rebinds, x is untouched
        return x

    with pytest.raises(TypeError, match="item assignment"):
        write(xs[0])
    with pytest.raises(TypeError, match="scalar"):
        bt.vmap(write, fallback="error")(xs)
    with pytest.raises(TypeError, match="item assignment"):  # the rerun meets NumPy's own error
        bt.vmap(write, fallback="silent")(xs)
    np.testing.assert_array_equal(bt.vmap(bump)(xs), np.stack([bump(x) for x in xs]))
    np.testing.assert_array_equal(xs, before)


def test_ellipsis_keeps_a_zero_d_view():
    xs = np.arange(6.0).reshape(2, 3)

    def f(x):
        y = x[0, ...]  # NumPy: a 0-d view, not a scalar copy
        y[...] = 100.0
        return x

    def g(x):
        y = x[...]
        y[...] = 7.0
        return x

    np.testing.assert_array_equal(bt.vmap(f)(xs.copy()), [[100.0, 1, 2], [100.0, 4, 5]])
    # a 0-d example of an input is a NumPy scalar (for x in xs): x[...] is a new 0-d array
    # that the write changes, x keeps its value
    np.testing.assert_array_equal(bt.vmap(g)(np.arange(2.0)), [g(x) for x in np.arange(2.0)])
    np.testing.assert_array_equal(bt.vmap(g)(np.arange(2.0)), [0.0, 1.0])


def test_basic_slice_is_a_view():
    xs = np.arange(12.0).reshape(3, 4)
    want = xs.copy()
    want[:, 1] = -1.0

    def f(x):
        z = x[1:]
        z[0] = -1.0
        return x

    np.testing.assert_array_equal(bt.vmap(f)(xs), want)
    np.testing.assert_array_equal(xs, want)  # written through the view, as in NumPy


def test_index_batched_at_outer_level_x_at_inner(rng):
    xs = rng.normal(size=(3, 5))
    idx = rng.integers(-5, 5, size=(2, 4))
    got = bt.vmap(lambda i: bt.vmap(lambda x: x[i])(xs))(idx)
    want = np.stack([np.stack([x[i] for x in xs]) for i in idx])
    np.testing.assert_array_equal(got, want)


def test_x_batched_at_outer_level_index_at_inner(rng):
    xs = rng.normal(size=(3, 5))
    idx = rng.integers(-5, 5, size=(2, 4))
    got = bt.vmap(lambda x: bt.vmap(lambda i: x[i])(idx))(xs)
    want = np.stack([np.stack([x[i] for i in idx]) for x in xs])
    np.testing.assert_array_equal(got, want)


def test_mask_batched_at_outer_level_x_at_inner(rng):
    xs = rng.normal(size=(3, 5))
    ms = np.argsort(rng.random((2, 5)), axis=1) < 3
    got = bt.vmap(lambda m: bt.vmap(lambda x: x[m])(xs))(ms)
    want = np.stack([np.stack([x[m] for x in xs]) for m in ms])
    np.testing.assert_array_equal(got, want)


def test_setitem_into_array_not_batched_at_the_index_level(rng):
    xs = rng.normal(size=(3, 5))
    idx = rng.integers(0, 5, size=(2,))

    def inner(x, i):
        x[i] = 0.0
        return x

    # xs itself is the caller's array: every outer example would zero it, a clear error
    with pytest.raises(bt.BatchingError, match="outer vmap level"):
        bt.vmap(lambda i: bt.vmap(lambda x: inner(x, i))(xs))(idx)
    # a copy made per outer example is that example's own array: the outer level reruns
    with pytest.raises(bt.BatchingError, match="outer vmap level"):
        bt.vmap(lambda i: bt.vmap(lambda x: inner(x, i))(xs.copy()), fallback="error")(idx)
    with pytest.warns(bt.PerformanceWarning, match="written into an array shared"):
        got = bt.vmap(lambda i: bt.vmap(lambda x: inner(x, i))(xs.copy()))(idx)
    np.testing.assert_array_equal(got, [[inner(x, i) for x in xs.copy()] for i in idx])


def test_batched_value_into_unbatched_target_raises(rng):
    vs = rng.normal(size=(3, 4))
    xs = rng.normal(size=(3, 4))

    shared = np.zeros((2, 4))

    def plain(v):
        out = shared[0].copy()  # a plain array: NumPy's own __setitem__ meets the batched value
        out[:] = v
        return out

    def copyto(v):
        out = shared.copy()
        np.copyto(out, v)
        return out

    def made_inside(v):  # np.zeros inside f: a buffer, batched at the write, as in the loop
        out = np.zeros((2, 4))
        np.copyto(out, v)
        out[0, :2] = v[1:3]
        return out

    np.testing.assert_array_equal(bt.vmap(made_inside, fallback="error")(vs),
                                  loop(made_inside, vs))

    def outer_only(x):
        def inner(v):
            x[:] = v  # x is batched at the outer level only: shared by the inner examples
            return x
        return bt.vmap(inner)(vs)

    with pytest.raises(TypeError, match="BatchedTensor"):
        bt.vmap(plain, fallback="error")(vs)
    # out is a copy made inside f, so every example has its own: the write reruns per example
    with pytest.raises(bt.BatchingError, match="numpy.copyto.*dst"):
        bt.vmap(copyto, fallback="error")(vs)
    with pytest.warns(bt.PerformanceWarning, match="written into an array shared"):
        np.testing.assert_array_equal(bt.vmap(copyto)(vs), loop(copyto, vs))
    with pytest.raises(bt.BatchingError, match="shared by every example"):
        bt.vmap(outer_only)(xs)


@pytest.mark.filterwarnings("ignore::batchtensor.PerformanceWarning")  # zeros_like: another family
def test_setitem_into_zeros_like_works(rng):
    vs = rng.normal(size=(3, 4))

    def f(v):
        out = np.zeros_like(v)
        out[1:] = v[:-1]
        return out

    np.testing.assert_array_equal(bt.vmap(f)(vs), loop(f, vs))


def test_batched_slice_bound_takes_the_loop(rng):
    xs = rng.normal(size=(3, 6))
    starts = np.array([0, 2, 3])

    def f(x, s):
        return x[s:s + 2]

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", bt.PerformanceWarning)
        got = bt.vmap(f)(xs, starts)
    np.testing.assert_array_equal(got, loop(f, xs, starts))


def test_one_argument_where_with_different_counts_raises(rng):
    xs = rng.normal(size=(4, 6))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", bt.PerformanceWarning)
        with pytest.raises(bt.BatchingError,
                           match="different shapes|output size depends on the data"):
            bt.vmap(lambda x: np.where(x > 0))(xs)


# ---- the placement / selection family -----------------------------------------------------------
@pytest.mark.parametrize("op", [
    lambda c, x: np.compress(c, x),
    lambda c, x: np.extract(c, x),
    lambda c, x: np.ix_(c),
])
def test_data_dependent_sizes_with_different_counts_raise(rng, op):
    cs = rng.random((4, 6)) < 0.5
    cs[0] = False
    cs[1] = True
    xs = rng.normal(size=(4, 6))
    with pytest.raises(bt.BatchingError, match="different shapes"):
        bt.vmap(op)(cs, xs)


def test_compress_with_the_same_count_works(rng):
    cs = np.argsort(rng.random((4, 6)), axis=1) < 3
    xs = rng.normal(size=(4, 6))
    np.testing.assert_array_equal(bt.vmap(np.compress)(cs, xs), loop(np.compress, cs, xs))


@pytest.mark.parametrize("name, call, target, batched", [
    ("numpy.put", lambda a, i, v: np.put(a, i, v), "a", "ind"),
    ("numpy.put_along_axis", lambda a, i, v: np.put_along_axis(a, i, v, 0), "arr", "indices"),
    ("numpy.place", lambda a, i, v: np.place(a, i > 2, v), "arr", "mask"),
    ("numpy.putmask", lambda a, i, v: np.putmask(a, i > 2, v), "a", "mask"),
    ("numpy.copyto", lambda a, i, v: np.copyto(a, v, where=i > 2), "dst", "where"),
])
def test_batched_write_into_shared_target_names_both(rng, name, call, target, batched):
    a = np.zeros(2)
    idx = rng.integers(0, 2, size=(3, 2))

    def f(i):
        call(a, i, 1.0)
        return a

    with pytest.raises(bt.BatchingError, match=f"{name}.*`{target}`.*`{batched}`"):
        bt.vmap(f)(idx)
    assert not a.any()  # nothing was written


def test_in_place_ops_write_per_example(rng):
    xs = rng.normal(size=(3, 4, 4))
    vals = rng.normal(size=(3, 4))

    def f(x, v):
        x = x.copy()
        np.fill_diagonal(x, v)
        np.putmask(x, x < 0, v[0])
        np.place(x, x > 1, v)
        return x

    np.testing.assert_array_equal(bt.vmap(f)(xs, vals), loop(f, xs, vals))


def test_piecewise_with_different_counts_takes_the_loop(rng):
    xs = rng.normal(size=(4, 6))

    def f(x):
        return np.piecewise(x, [x < 0], [lambda v: v - np.mean(v), lambda v: 2 * v])

    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        got = bt.vmap(f)(xs)
    np.testing.assert_allclose(got, loop(f, xs))
    assert any(issubclass(x.category, bt.PerformanceWarning) for x in w)


def test_apply_along_axis_calls_func_on_batched_slices(rng):
    xs = rng.normal(size=(5, 3, 4))
    calls = []

    def func1d(v):
        calls.append(v.shape)
        return v - np.mean(v)

    got = bt.vmap(lambda x: np.apply_along_axis(func1d, 1, x))(xs)
    assert calls == [(4,)] * 3  # one call per slice position, each on a batched slice
    np.testing.assert_allclose(got, loop(lambda x: np.apply_along_axis(func1d, 1, x), xs))


def test_apply_along_axis_with_data_dependent_branch_takes_the_loop(rng):
    xs = rng.normal(size=(4, 3, 5))

    def func1d(v):
        return v * 2 if v[0] > 0 else -v

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", bt.PerformanceWarning)
        got = bt.vmap(lambda x: np.apply_along_axis(func1d, 1, x))(xs)
    np.testing.assert_array_equal(got, loop(lambda x: np.apply_along_axis(func1d, 1, x), xs))


def test_take_with_indices_batched_at_outer_level(rng):
    xs = rng.normal(size=(3, 4, 5))
    idx = rng.integers(-4, 4, size=(2, 6))
    got = bt.vmap(lambda i: bt.vmap(lambda x: np.take(x, i, axis=1), in_axes=1)(xs))(idx)
    want = np.stack([np.stack([np.take(x, i, axis=1) for x in np.moveaxis(xs, 1, 0)])
                     for i in idx])
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("write", [
    lambda x, v: np.put(x, [0, 2], v),
    lambda x, v: np.fill_diagonal(x, v),
    lambda x, v: x.fill(v[0]),
    lambda x, v: np.copyto(x, v[0]),
])
def test_write_outer_level_values_into_inner_only_target_raises(rng, write):
    xs = rng.normal(size=(3, 2, 2))
    vs = rng.normal(size=(4, 2))

    def inner(x, v):
        write(x, v)
        return x

    def nested(v):  # xs.copy() is made per outer example: each has its own target
        return bt.vmap(lambda x: inner(x, v))(xs.copy())

    with pytest.raises(bt.BatchingError, match="outer vmap level|not batched at this vmap"):
        bt.vmap(nested, fallback="error")(vs)
    with pytest.warns(bt.PerformanceWarning, match="written into an array shared"):
        got = bt.vmap(nested)(vs)
    want = np.stack([np.stack([inner(x, v) for x in xs.copy()]) for v in vs])
    np.testing.assert_array_equal(got, want)


def test_piecewise_zero_d_with_a_comparison_condition(rng):
    xs = rng.normal(size=(5,))

    def f(x):
        return np.piecewise(x, x > 0, [lambda v: 2 * v, -1.0])  # x > 0: a NumPy scalar per example

    def g(x):
        return np.piecewise(x, [x < 0, x >= 0], [lambda v: np.sqrt(-v), np.sqrt])

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no loop fallback, no warning from discarded values
        np.testing.assert_array_equal(bt.vmap(f)(xs), loop(f, xs))
        np.testing.assert_array_equal(bt.vmap(g)(xs), loop(g, xs))


def test_loop_fallback_refuses_a_shared_out(rng):
    xs = rng.normal(size=(3, 2))
    out = np.zeros(2)

    def f(x):
        np.fix(x, out=out)  # np.fix has no rule: the per-example loop would write into `out`
        return out

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", bt.PerformanceWarning)
        with pytest.raises(bt.BatchingError, match="out="):
            bt.vmap(f)(xs)


@pytest.mark.parametrize("in_axes", [0, 1])
@pytest.mark.parametrize("key", [[], ([], 0), (slice(None), []), 1.5, (0, 1.0), 7, (slice(None), 9),
                                 (Ellipsis, 5), [0, 7], [True, False, True]],
                         ids=repr)
def test_index_edge_cases_match_the_loop_or_its_error(key, in_axes):
    """x[[]] is an empty integer index (it raised about float indices); x[1.5] is NumPy's
    IndexError (it was an AttributeError); an index out of bounds names the example's axis,
    not the physical one."""
    xs = np.arange(24.0).reshape(2, 3, 4)
    examples = np.moveaxis(xs, in_axes, 0)
    try:
        want = np.stack([x[key] for x in examples])
    except IndexError as e:
        with pytest.raises(IndexError) as got:
            bt.vmap(lambda x: x[key], in_axes=in_axes)(xs)
        assert str(got.value) == str(e)
    else:
        got = bt.vmap(lambda x: x[key], in_axes=in_axes)(xs)
        assert got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


def test_fields_of_a_structured_dtype_read_and_write_per_example():
    rec = np.zeros((3, 2), [("a", np.float64), ("b", np.int32)])
    rec["a"] = np.arange(6.0).reshape(3, 2)

    def f(r):
        both = r[["a", "b"]]  # a view with several fields
        r["b"] = r["a"] * 2
        view = r["a"]
        view += 1.0  # writes through the field view into r
        return r, both["b"]

    a, b = rec.copy(), rec.copy()
    got = bt.vmap(f)(a)
    want = [np.stack(col) for col in zip(*[f(r) for r in b])]
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match="no field of name z"):
        bt.vmap(lambda r: r["z"])(rec)
