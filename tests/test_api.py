"""vmap(): in_axes / out_axes pytrees, axis_size, chunk_size, nesting, decorator forms, errors."""

from __future__ import annotations

import warnings
from collections import namedtuple

import numpy as np
import pytest

import batchtensor as bt
from batchtensor.levels import active_levels

rng = np.random.default_rng(0)


def loop(f, in_axes, *args, out_axis=0):
    """The reference: f per example, stacked."""
    n = next(a.shape[ax] for a, ax in zip(args, in_axes) if ax is not None)
    outs = [f(*[a if ax is None else np.take(a, i, axis=ax) for a, ax in zip(args, in_axes)])
            for i in range(n)]
    return np.stack(outs, axis=out_axis)


def test_readme_example_equals_loop():
    xs, w = rng.normal(size=(6, 3)), rng.normal(size=(4, 3))
    f = lambda x, w: np.tanh(w @ x).sum()  # noqa: E731
    got = bt.vmap(f, in_axes=(0, None))(xs, w)
    np.testing.assert_allclose(got, loop(f, (0, None), xs, w), rtol=1e-13)
    assert got.shape == (6,) and got.dtype == np.float64


def test_pairwise_distances_by_nested_vmap():
    a, b = rng.normal(size=(5, 3)), rng.normal(size=(7, 3))
    dist = lambda x, y: np.sqrt(((x - y) ** 2).sum())  # noqa: E731
    got = bt.vmap(bt.vmap(dist, (None, 0)), (0, None))(a, b)
    want = np.sqrt(((a[:, None, :] - b[None, :, :]) ** 2).sum(-1))
    np.testing.assert_allclose(got, want, rtol=1e-13)


def test_out_axes_1():
    xs = rng.normal(size=(4, 3, 2))
    f = lambda x: x * 2 + 1  # noqa: E731
    got = bt.vmap(f, out_axes=1)(xs)
    np.testing.assert_array_equal(got, loop(f, (0,), xs, out_axis=1))
    assert got.shape == (3, 4, 2)


def test_negative_axes_in_and_out():
    xs = rng.normal(size=(3, 2, 5))
    got = bt.vmap(lambda x: x.sum(0), in_axes=-1, out_axes=-1)(xs)
    np.testing.assert_allclose(got, xs.sum(0))


def test_dict_inputs_with_per_key_in_axes():
    d = {"x": rng.normal(size=(5, 3)), "w": rng.normal(size=(3,)), "s": 2.0}
    f = lambda d: (d["x"] * d["w"]).sum() * d["s"]  # noqa: E731
    got = bt.vmap(f, in_axes=({"x": 0, "w": None, "s": None},))(d)
    np.testing.assert_allclose(got, [(x * d["w"]).sum() * 2.0 for x in d["x"]])


def test_namedtuple_list_and_nested_prefixes():
    P = namedtuple("P", "a b")
    p = P(rng.normal(size=(4, 2)), rng.normal(size=(2, 4)))
    f = lambda p, lst: p.a * p.b + lst[0] - lst[1]  # noqa: E731
    lst = [rng.normal(size=(4, 2)), rng.normal(size=(2,))]
    got = bt.vmap(f, in_axes=(P(0, 1), [0, None]))(p, lst)
    want = np.stack([p.a[i] * p.b[:, i] + lst[0][i] - lst[1] for i in range(4)])
    np.testing.assert_allclose(got, want)


def test_top_level_list_in_axes_is_accepted():
    xs = rng.normal(size=(3, 2))
    np.testing.assert_allclose(bt.vmap(lambda x, y: x + y, in_axes=[0, None])(xs, 1.0), xs + 1)


def test_pytree_outputs_with_out_axes_prefix():
    xs = rng.normal(size=(3, 4))
    f = lambda x: {"s": x.sum(), "pair": (x, x.max())}  # noqa: E731
    got = bt.vmap(f, out_axes={"s": 0, "pair": (1, 0)})(xs)
    np.testing.assert_allclose(got["s"], xs.sum(1))
    np.testing.assert_allclose(got["pair"][0], xs.T)
    np.testing.assert_allclose(got["pair"][1], xs.max(1))


def test_chunk_size_equals_unchunked():
    xs = rng.normal(size=(10, 3))
    f = lambda x: np.outer(x, x).sum(0)  # noqa: E731
    np.testing.assert_allclose(bt.vmap(f, chunk_size=3)(xs), bt.vmap(f)(xs))
    np.testing.assert_allclose(bt.vmap(f, chunk_size=3)(xs), loop(f, (0,), xs))


def test_chunked_unbatched_output_and_out_axes_none():
    xs = rng.normal(size=(7, 2))
    got = bt.vmap(lambda x: (x, np.ones(2)), out_axes=(0, None), chunk_size=3)(xs)
    np.testing.assert_array_equal(got[0], xs)
    np.testing.assert_array_equal(got[1], np.ones(2))


def test_manual_vmap_level_form():
    xs, w = rng.normal(size=(6, 3)), rng.normal(size=(4, 3))
    with bt.vmap_level() as level:
        y = np.tanh(w @ bt.BatchedTensor(xs, bdim=0)).sum()
        got = level.unwrap(y)
    np.testing.assert_allclose(got, [np.tanh(w @ x).sum() for x in xs])


def test_manual_level_composes_with_vmap():
    xs, ys = rng.normal(size=(3, 2)), rng.normal(size=(4, 2))
    with bt.vmap_level() as level:
        x = bt.BatchedTensor(xs, bdim=0)
        inner = bt.vmap(lambda y: (x * y).sum())(ys)  # inner vmap over ys, x batched outside
        got = level.unwrap(inner)
    np.testing.assert_allclose(got, xs @ ys.T)


def test_three_levels_deep():
    a = rng.normal(size=(2, 3, 4, 5))
    f = bt.vmap(bt.vmap(bt.vmap(lambda v: v.sum() * v.max())))
    np.testing.assert_allclose(f(a), a.sum(-1) * a.max(-1))


def test_inner_vmap_with_other_axes():
    a = rng.normal(size=(3, 4, 5))
    f = bt.vmap(bt.vmap(lambda v: v * 2, in_axes=1, out_axes=1), in_axes=2, out_axes=0)
    np.testing.assert_allclose(f(a), np.moveaxis(a, 2, 0) * 2)


def test_decorator_forms():
    @bt.vmap
    def double(x):
        return 2 * x

    @bt.vmap(in_axes=(None, 0))
    def scale(a, x):
        return a * x

    xs = rng.normal(size=(3, 2))
    np.testing.assert_array_equal(double(xs), 2 * xs)
    np.testing.assert_array_equal(scale(3.0, xs), 3 * xs)
    assert double.__name__ == "double"


def test_keyword_arguments_are_not_mapped():
    xs = rng.normal(size=(4, 3))
    got = bt.vmap(lambda x, *, w: x @ w)(xs, w=np.ones((3, 2)))
    np.testing.assert_allclose(got, xs @ np.ones((3, 2)))


def test_axis_size_when_nothing_is_mapped():
    got = bt.vmap(lambda c: c * 2, in_axes=None, axis_size=3)(np.arange(2.0))
    assert got.shape == (3, 2)
    np.testing.assert_array_equal(got, [[0, 2]] * 3)


def test_unbatched_output_is_a_broadcast_view():
    w = rng.normal(size=(2, 3))
    got = bt.vmap(lambda x: w, in_axes=0)(rng.normal(size=(5, 4)))
    assert got.shape == (5, 2, 3)
    assert np.shares_memory(got, w)
    assert not got.flags.writeable


def test_python_and_numpy_scalar_outputs_become_arrays():
    got = bt.vmap(lambda x: (1.5, np.float32(2)), in_axes=0)(np.zeros((3, 2)))
    assert got[0].shape == (3,) and got[0].dtype == np.float64
    assert got[1].shape == (3,) and got[1].dtype == np.float32


def test_batch_size_one_and_identity_output():
    xs = rng.normal(size=(1, 3))
    got = bt.vmap(lambda x: x)(xs)
    np.testing.assert_array_equal(got, xs)


def test_level_stack_restored_when_function_raises():
    before = active_levels()
    with pytest.raises(ZeroDivisionError):
        bt.vmap(lambda x: 1 / 0)(np.zeros(3))
    with pytest.raises(ValueError):
        bt.vmap(bt.vmap(lambda x: np.reshape(x, (7,))))(np.zeros((2, 3, 4)))
    assert active_levels() == before


# ---- errors -------------------------------------------------------------------------------------
def test_mismatched_sizes_names_each_argument():
    def f(x, y):
        return x + y

    with pytest.raises(ValueError) as e:
        bt.vmap(f, in_axes=(0, 1))(np.zeros((3, 4)), np.zeros((2, 5)))
    msg = str(e.value)
    assert "inconsistent sizes" in msg
    assert "argument 'x'" in msg and "axis 0" in msg and "size 3" in msg
    assert "argument 'y'" in msg and "axis 1" in msg and "size 5" in msg


def test_axis_size_disagreeing_with_mapped_size():
    with pytest.raises(ValueError, match="axis_size=4"):
        bt.vmap(lambda x: x, axis_size=4)(np.zeros((3,)))


def test_in_axes_wrong_length():
    with pytest.raises(ValueError, match="length 1 but the function was called with 2"):
        bt.vmap(lambda x, y: x, in_axes=(0,))(np.zeros(2), np.zeros(2))


def test_in_axes_wrong_structure_names_the_path():
    with pytest.raises(ValueError, match=r"in_axes\[0\] has keys \['a'\] but args\[0\] has keys"):
        bt.vmap(lambda d: d, in_axes=({"a": 0},))({"a": np.zeros(2), "b": np.zeros(2)})
    with pytest.raises(ValueError, match=r"in_axes\[0\] is a tuple of length 2"):
        bt.vmap(lambda t: t, in_axes=((0, 0),))((np.zeros(2),))


def test_axis_out_of_range_names_argument_axis_and_shape():
    with pytest.raises(ValueError) as e:
        bt.vmap(lambda x: x, in_axes=2)(np.zeros((3, 4)))
    assert "args[0] (argument 'x')" in str(e.value)
    assert "axis 2" in str(e.value) and "(3, 4)" in str(e.value)
    with pytest.raises(ValueError, match="0-d array cannot be mapped"):
        bt.vmap(lambda x: x)(np.float64(1.0))


def test_non_array_mapped_leaf():
    with pytest.raises(ValueError, match=r"args\[1\] \(argument 'n'\).*is an int, not an array"):
        bt.vmap(lambda x, n: x * n)(np.zeros(3), 4)
    # a list is a pytree node, so its elements are the leaves
    with pytest.raises(ValueError, match=r"args\[0\]\['k'\]\[0\] .*is an int"):
        bt.vmap(lambda d: d)({"k": [1, 2, 3]})


def test_nothing_mapped_needs_axis_size():
    with pytest.raises(ValueError, match="axis_size"):
        bt.vmap(lambda x: x, in_axes=None)(np.zeros(3))


def test_out_axes_none_on_batched_output():
    with pytest.raises(ValueError, match=r"out_axes\[1\] is None but this output is batched"):
        bt.vmap(lambda x: (x, x), out_axes=(0, None))(np.zeros((3, 2)))


def test_out_axes_out_of_range_and_bad_output_type():
    with pytest.raises(ValueError, match="out_axes=3 is out of range"):
        bt.vmap(lambda x: x, out_axes=3)(np.zeros((3, 2)))
    with pytest.raises(ValueError, match=r"returned a str where out_axes\[1\]=0 expects an array"):
        bt.vmap(lambda x: (x, "label"))(np.zeros(3))
    np.testing.assert_array_equal(
        bt.vmap(lambda x: (x, "label"), out_axes=(0, None))(np.zeros(3))[1], "label")


def test_invalid_arguments_to_vmap():
    f = lambda x: x  # noqa: E731
    with pytest.raises(ValueError, match="bool"):
        bt.vmap(f, in_axes=True)
    with pytest.raises(ValueError, match="top level"):
        bt.vmap(f, in_axes={"x": 0})
    with pytest.raises(ValueError, match="chunk_size"):
        bt.vmap(f, chunk_size=0)
    with pytest.raises(ValueError, match="randomness"):
        bt.vmap(f, randomness="sometimes")
    with pytest.raises(ValueError, match="axis_size"):
        bt.vmap(f, axis_size=-1)
    with pytest.raises(TypeError, match="expected a function"):
        bt.vmap(3)
    with pytest.raises(ValueError, match=r"in_axes\[0\] must be an int, None"):
        bt.vmap(f, in_axes=("zero",))(np.zeros(3))


def test_chunk_size_auto_splits_only_large_examples():
    calls = []

    def f(x):
        calls.append(x.shape)
        return np.tanh(x).sum(-1)

    small = rng.normal(size=(50, 8))
    np.testing.assert_allclose(bt.vmap(f, chunk_size="auto")(small), np.tanh(small).sum(-1))
    assert len(calls) == 1  # small examples: one vectorised pass
    calls.clear()
    # 640 KB per example: 3 per ~2 MiB chunk (the inputs, under 8 MiB, are not measured)
    large = rng.normal(size=(6, 2, 40_000))
    np.testing.assert_allclose(bt.vmap(f, chunk_size="auto")(large), np.tanh(large).sum(-1))
    assert len(calls) == 2
    calls.clear()
    huge = rng.normal(size=(3, 2, 80_000))  # 1.25 MiB per example: not two per chunk, one pass
    np.testing.assert_allclose(bt.vmap(f, chunk_size="auto")(huge), np.tanh(huge).sum(-1))
    assert len(calls) == 1
    calls.clear()
    # from 8 MiB of inputs a first chunk measures what an example allocates
    many = rng.normal(size=(9, 2, 80_000))
    np.testing.assert_allclose(bt.vmap(f, chunk_size="auto")(many), np.tanh(many).sum(-1))
    assert len(calls) == 2
    calls.clear()
    np.testing.assert_allclose(bt.vmap(f, chunk_size=None)(huge), np.tanh(huge).sum(-1))
    assert len(calls) == 1
    with pytest.raises(ValueError, match="'auto' or a positive int"):
        bt.vmap(f, chunk_size="big")


def test_chunk_size_auto_inside_an_outer_vmap_counts_the_outer_examples():
    # pairwise distances: each inner example (a row of b, 32 KiB) meets all 64 outer rows of
    # a, so its values weigh 2 MiB: "auto" runs the inner vmap one row of b at a time (still
    # vectorised over the 64 outer examples), where alone it would not chunk such a row (each
    # of its intermediates takes 2 MiB: the cache-sized chunks are kept).
    calls = []

    def dist(u, v):
        calls.append(1)
        return np.sqrt(((u - v) ** 2).sum())

    a, b = rng.normal(size=(64, 4096)), rng.normal(size=(64, 4096))
    inner = bt.vmap(dist, (None, 0), chunk_size="auto")
    outer = bt.vmap(inner, (0, None), chunk_size="auto")
    got = outer(a, b)
    assert len(calls) == 64  # the outer level did not chunk; the inner one ran 64 chunks
    calls.clear()
    outer(a, b)
    assert len(calls) == 64  # (sized from the first call's measurement)
    want = np.stack([np.stack([dist(u, v) for v in b]) for u in a])
    np.testing.assert_array_equal(got, want)
    calls.clear()
    bt.vmap(dist, (None, 0), chunk_size="auto")(a[0], b)
    assert len(calls) == 1  # without an outer vmap, a 32 KiB example is not chunked
    calls.clear()
    small = rng.normal(size=(4, 8))  # 4 outer examples x 64 B: too small to chunk
    bt.vmap(bt.vmap(dist, (None, 0), chunk_size="auto"), (0, None))(small, small)
    assert len(calls) == 1


@pytest.mark.parametrize("spec", [np.int64(0), (np.int32(0),), [np.int64(-2)], np.int8(-2)])
def test_numpy_integers_as_axes(spec):
    """An axis read from an array is a NumPy integer: in_axes=np.int64(0) raised a TypeError
    (len() of an int) inside the argument handling."""
    xs = np.arange(6.0).reshape(3, 2)
    want = bt.vmap(np.sum, in_axes=_plain(spec))(xs)
    np.testing.assert_array_equal(bt.vmap(np.sum, in_axes=spec)(xs), want)
    np.testing.assert_array_equal(bt.vmap(lambda x: x, out_axes=np.int64(1))(xs), xs.T)
    with pytest.raises(ValueError, match="got the bool"):
        bt.vmap(np.sum, in_axes=np.bool_(True))(xs)


def _plain(spec):
    if isinstance(spec, np.integer):
        return int(spec)
    return type(spec)(int(s) for s in spec)


def test_scipy_result_objects_with_more_fields_than_the_tuple():
    """SciPy's TtestResult / KstestResult are namedtuples that keep more fields as attributes
    (``df``, ``statistic_location``): the output is one such object whose every field and
    numeric attribute is the loop's, stacked; its other attributes are as one example has them."""
    st = pytest.importorskip("scipy.stats", reason="SciPy's result objects need SciPy")
    rng = np.random.default_rng(3)
    xs, ys = rng.normal(size=(4, 10)), rng.normal(size=(4, 12))
    for f, args in [(lambda x: st.ttest_1samp(x, 0.1), (xs,)), (st.ks_2samp, (xs, ys)),
                    (st.ttest_ind, (xs, ys[:, :10]))]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", bt.PerformanceWarning)
            got = bt.vmap(f)(*args)
        want = [f(*a) for a in zip(*args)]
        assert type(got) is type(want[0])
        for i in range(len(got)):
            np.testing.assert_allclose(got[i], [w[i] for w in want], rtol=1e-12)
        for k, v in vars(want[0]).items():
            if isinstance(v, (np.generic, np.ndarray, int, float)):
                np.testing.assert_allclose(getattr(got, k), [getattr(w, k) for w in want])
            else:
                assert getattr(got, k) == v or getattr(got, k) is v, k
