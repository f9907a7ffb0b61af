"""Functions vectorised with every argument mapped that used to rerun once per example with
some arguments shared (``in_axes=None``) or under nested vmaps, each against the per-example
loop:

- ``np.full_like(a, fill)`` with a prototype that is batched nowhere and a fill batched at
  two levels (SciPy's ``pearsonr`` through array-api-extra's ``apply_where``), a fill batched
  at the outer level only, and fills of a higher rank than the example (NumPy drops leading
  unit axes and refuses others: ``rules/creation.py``), and the ``*_like`` results' layout
  per example where the examples of the prototype lie interleaved (F-ordered, batch last);
- ``apply_where(cond, args, ...)`` of array-api-extra (SciPy's copy) with a batched ``cond``
  and shared arguments or fill (``rules/array_api_extra.py``);
- ``a = np.broadcast_to(a, shape)`` then ``a[mask]`` with a batched mask (a learnt site that
  makes a read-only view, ``buffers.py``: SciPy's ``skewnorm.cdf``);
- ``np.searchsorted`` / ``np.digitize`` of rows batched at both levels where only some outer
  examples hold a NaN or decreasing bins (the rule asked the outer examples to agree).
"""

from __future__ import annotations

import numpy as np
import pytest

import batchtensor as bt
from loop_reference import assert_same, loop_vmap, strict_vmap

RNG = np.random.default_rng(2027)
DTYPES = (np.float64, np.float32)


def _draw(shape, dtype=np.float64, rng=RNG):
    if np.dtype(dtype).kind in "iu":
        return rng.integers(-5, 6, size=shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def _nested(f, *args, in_axes=0):
    """``f`` under vmap of vmap (fully vectorised) against the loop of loops."""
    want = loop_vmap(loop_vmap(f, in_axes))(*args)
    got = strict_vmap(strict_vmap(f, in_axes))(*args)
    assert_same(got, want)
    return got


def _flat(f, *args, in_axes=0):
    want = loop_vmap(f, in_axes)(*args)
    got = strict_vmap(f, in_axes)(*args)
    assert_same(got, want)
    return got


def _empty_batch(f, *args, in_axes=0):
    """Batch size 0 (of ``args``' batches): the shape and dtype of one example's result,
    stacked over none."""
    axes = in_axes if isinstance(in_axes, tuple) else (in_axes,) * len(args)
    got = strict_vmap(f, in_axes)(*(a if ax is None else np.take(a, [], axis=ax)
                                    for a, ax in zip(args, axes)))
    assert got.flags.writeable
    one = f(*(a if ax is None else np.take(a, 0, axis=ax) for a, ax in zip(args, axes)))
    assert got.shape == (0, *np.shape(one)) and got.dtype == np.asarray(one).dtype


# ---- np.full_like --------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", (np.float64, np.float32, np.int64))
@pytest.mark.parametrize("proto", [np.array(True), np.zeros((2, 3)), np.zeros((2, 3), order="F"),
                                   [[0.0, 1.0, 2.0]], 7],
                         ids=["0-d bool", "2-d", "F-ordered", "list", "int"])
def test_full_like_of_a_plain_prototype_with_a_fill_batched_at_two_levels(dtype, proto):
    def f(v):
        r = np.full_like(proto, v, dtype=dtype)
        return r, np.asarray(r.flags.writeable), np.asarray(r.flags.c_contiguous)

    fills = _draw((2, 3), dtype)
    _nested(f, fills)
    _nested(f, fills.T.copy(), in_axes=-1)
    rows = _draw((2, 3, 3), dtype)  # a fill per example that broadcasts against the prototype
    if np.ndim(proto) == 2:
        _nested(lambda v: np.full_like(proto, v), rows)


@pytest.mark.parametrize("order", ["K", "C", "F"])
def test_full_like_layout_of_the_result_is_the_loops(order):
    proto = np.zeros((2, 3))

    def f(v):
        r = np.full_like(proto, v, order=order)
        return r, np.asarray(r.flags.c_contiguous), np.asarray(r.flags.f_contiguous)

    _nested(f, _draw((2, 3, 3)))
    _flat(f, _draw((4, 3)))


def test_full_like_of_an_inner_argument_with_a_fill_of_the_outer_level_only():
    xs, ws = _draw((2, 3, 4)), _draw((2, 4))

    def inner(x, w):
        return np.full_like(x, w)

    want = loop_vmap(lambda x, w: loop_vmap(inner, (0, None))(x, w))(xs, ws)
    got = strict_vmap(lambda x, w: strict_vmap(inner, (0, None))(x, w))(xs, ws)
    assert_same(got, want)


@pytest.mark.parametrize("n, rows", [(1, 2), (2, 2), (4, 4)])
def test_full_like_fill_of_a_higher_rank_raises_as_the_loop_does(n, rows):
    """A shared fill of shape (rows, 4) for examples of shape (4,): the loop's copy refuses
    it (a batch of as many examples as rows must not take it for one row per example)."""
    xs, fill = _draw((n, 4)), _draw((rows, 4))
    with pytest.raises(ValueError):
        loop_vmap(lambda x: np.full_like(x, fill))(xs)
    with pytest.raises(ValueError):
        bt.vmap(lambda x: np.full_like(x, fill), fallback="error")(xs)


@pytest.mark.parametrize("in_axes", [(0, None), (0, 0), (None, 0), (-1, 0)])
def test_full_like_fill_with_leading_unit_axes(in_axes):
    xs, fills = _draw((3, 4)), _draw((3, 1, 1, 4))
    if in_axes[0] == -1:
        xs = xs.T.copy()
    args = (xs, fills if in_axes[1] is not None else fills[0])
    _flat(lambda x, v: np.full_like(x, v), *args, in_axes=in_axes)


@pytest.mark.parametrize("n", [0, 1])
def test_full_like_small_batches(n):
    proto = np.zeros((2, 3))
    if n:
        _flat(lambda v: np.full_like(proto, v), _draw((n, 3)))
    else:
        _empty_batch(lambda v: np.full_like(proto, v), _draw((2, 3)))


_LAYOUTS = {"C": lambda xs: (xs, 0), "F": lambda xs: (np.asfortranarray(xs), 0),
            "batch last": lambda xs: (np.ascontiguousarray(np.moveaxis(xs, 0, -1)), -1),
            "examples transposed": lambda xs: (
                np.ascontiguousarray(xs.transpose(0, 2, 1)).transpose(0, 2, 1), 0),
            "negative strides": lambda xs: (xs[::-1, ::-1], 0),
            "strided": lambda xs: (xs[:, :, ::2], 0)}


@pytest.mark.parametrize("layout", _LAYOUTS)
@pytest.mark.parametrize("make", [np.zeros_like, lambda a: np.full_like(a, 2.5),
                                  lambda a: np.empty_like(a, order="A"),
                                  lambda a: np.ones_like(a * 2, order="A"),
                                  lambda a: np.full_like(a.T, 1, order="K")],
                         ids=["zeros_like", "full_like", "empty_like A", "ones_like A of a "
                              "computed value", "full_like of a transposed view"])
def test_like_results_lay_out_each_example_as_the_loop(layout, make):
    """NumPy's K and A lay out a new array after its prototype's example; vmap's result must
    give each example that layout (not the batch's, where the examples lie interleaved)."""
    xs, ax = _LAYOUTS[layout](_draw((3, 4, 6)))

    def f(a):
        r = make(a)
        r[...] = 1.0  # (empty_like: defined values)
        return r

    got = strict_vmap(f, ax)(xs)
    want = loop_vmap(f, ax)(xs)
    assert_same(got, want)
    for i in range(len(got)):
        one = f(np.moveaxis(xs, ax, 0)[i])
        assert (got[i].flags.c_contiguous, got[i].flags.f_contiguous) == (
            one.flags.c_contiguous, one.flags.f_contiguous)


# ---- array-api-extra's apply_where (SciPy's copy) -------------------------------------------
xpx = pytest.importorskip("scipy._lib.array_api_extra")


def _logsum(x, p):
    return np.log(np.abs(x) + 1) + p


def _minus(x, p):
    return x - p


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("ax", [0, -1])
def test_apply_where_with_shared_arguments(dtype, ax):
    xs, p = _draw((3, 5), dtype), _draw((5,), dtype)
    if ax == -1:
        xs = xs.T.copy()

    def with_fill(x):
        return xpx.apply_where(x > 0, (x, p), _logsum, fill_value=np.nan)

    def with_f2(x):
        return xpx.apply_where(x > 0, (x, p), _logsum, _minus)

    def shared_only(x):  # only cond is batched
        return xpx.apply_where(x > 0, (p, p), _logsum, _minus)

    def array_fill(x):
        return xpx.apply_where(x > 0, x, np.exp, fill_value=p)

    for f in (with_fill, with_f2, shared_only, array_fill):
        _flat(f, xs, in_axes=ax)


def test_apply_where_shared_fill_with_a_plain_cond():
    xs, cond, fill = _draw((3, 4)), RNG.random(4) < 0.5, _draw((4,))
    _flat(lambda x: xpx.apply_where(cond, x, np.exp, fill_value=fill), xs)


@pytest.mark.parametrize("dtype", DTYPES)
def test_apply_where_nested_with_shared_and_outer_arguments(dtype):
    xs, ws, p = _draw((2, 3, 4), dtype), _draw((2, 4), dtype), _draw((4,), dtype)

    def inner(x, w):
        return (xpx.apply_where(x > 0, (x, p), _logsum, fill_value=0.0),
                xpx.apply_where(w > 0, (w, p), _logsum, _minus),  # cond of the outer level
                xpx.apply_where(x > 0, (w, p), _logsum, fill_value=p))

    want = loop_vmap(lambda x, w: loop_vmap(inner, (0, None))(x, w))(xs, ws)
    got = strict_vmap(lambda x, w: strict_vmap(inner, (0, None))(x, w))(xs, ws)
    assert_same(got, want)
    _nested(lambda x: xpx.apply_where(x > 0, (x, p), _logsum, _minus), xs)


@pytest.mark.parametrize("n", [0, 1])
def test_apply_where_small_batches(n):
    p = _draw((4,))

    def f(x):
        return xpx.apply_where(x > 0, (x, p), _logsum, fill_value=np.nan)

    if n:
        _flat(f, _draw((n, 4)))
    else:
        _empty_batch(f, _draw((2, 4)))


def test_apply_where_with_arrays_the_function_made():
    xs = _draw((3, 4))

    def f(x):
        p = np.ones(4)  # a buffer of the function's own module
        return (xpx.apply_where(x > 0, (x, p), _logsum, fill_value=np.zeros(4)),
                xpx.apply_where(x > 0, p, np.exp, fill_value=-1.0))

    _flat(f, xs)


def test_apply_where_leaves_its_shared_arguments_alone():
    xs, p = _draw((3, 4)), _draw((4,))
    before = p.copy()
    got = strict_vmap(lambda x: xpx.apply_where(x > 0, (x, p), _logsum, _minus))(xs)
    assert np.array_equal(p, before) and got.flags.writeable


stats = pytest.importorskip("scipy.stats")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("method", ["gamma.logsf", "lognorm.pdf", "genextreme.cdf",
                                    "skewnorm.cdf"])
def test_distributions_with_a_shared_shape_parameter(method, dtype):
    dist, name = method.split(".")
    f = getattr(getattr(stats, dist), name)
    xs = (RNG.uniform(0.05, 4.0, (3, 6)) if method != "skewnorm.cdf"
          else RNG.standard_normal((3, 6)) * 3).astype(dtype)
    shape = np.asarray(RNG.uniform(0.5, 3.0)).astype(dtype)
    if method == "genextreme.cdf":  # a support every example's points lie in
        xs, shape = (RNG.uniform(-1.0, 1.0, (3, 6))).astype(dtype), np.asarray(0.3, dtype)
    _flat(f, xs, shape, in_axes=(0, None))
    _flat(f, xs[:1], shape, in_axes=(0, None))
    _flat(f, xs.T.copy(), shape, in_axes=(-1, None))


# ---- a read-only view a learnt site makes ------------------------------------------------
def _pick_positive(x, p):
    a = np.broadcast_to(p, x.shape)
    return a[x > 0].sum() + x[x > 0].sum()


@pytest.mark.parametrize("ax", [0, -1])
def test_read_of_a_broadcast_shared_value_with_a_batched_mask(ax):
    xs, p = _draw((3, 6)), _draw((6,))
    if ax == -1:
        xs = xs.T.copy()
    _flat(_pick_positive, xs, p, in_axes=(ax, None))
    _nested(lambda x: _pick_positive(x, p), _draw((2, 3, 6)))


def test_write_into_a_broadcast_shared_value_is_the_loops_error():
    xs, p = _draw((3, 6)), _draw((6,))

    def f(x):
        a = np.broadcast_to(p, x.shape)
        b = a[x > 0]
        a[x > 0] = b  # read-only: NumPy's ValueError in every example
        return a

    with pytest.raises(ValueError):
        loop_vmap(f)(xs)
    with pytest.warns(bt.PerformanceWarning, match="once per example"), \
            pytest.raises(ValueError):
        bt.vmap(f)(xs)  # (the write refuses the view: a rerun, whose examples raise)


# ---- the corpus's functions ------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("fn", ["pearsonr", "pointbiserialr", "mstats.pearsonr"])
def test_correlations_under_nested_vmap(fn, dtype):
    f = stats.mstats.pearsonr if fn == "mstats.pearsonr" else getattr(stats, fn)
    x = _draw((2, 3, 12), dtype)
    y = (0.6 * x + _draw((2, 3, 12), dtype)).astype(dtype)
    if fn == "pointbiserialr":
        x = (x > 0).astype(dtype)

    def g(a, b):
        r = f(a, b)
        return np.asarray(r[0]), np.asarray(r[1])

    want = loop_vmap(loop_vmap(g))(x, y)
    got = strict_vmap(strict_vmap(g))(x, y)
    assert_same(got, want, rtol=1e-5 if dtype == np.float32 else None)


@pytest.mark.parametrize("side", ["left", "right"])
@pytest.mark.parametrize("n", [5, 40])  # (few comparisons: counted; many: a binary search)
def test_searchsorted_with_nan_in_some_outer_examples(n, side):
    a = np.sort(_draw((2, 3, n)), axis=-1)
    a[0, 1, -1] = np.nan  # (sorted last, as np.sort puts it)
    v = _draw((2, 3, 240))
    v[1, 0, :3] = np.nan
    _nested(lambda r, q: np.searchsorted(r, q, side=side), a, v)


@pytest.mark.parametrize("right", [False, True])
@pytest.mark.parametrize("n", [5, 40])
def test_digitize_with_decreasing_bins_in_some_outer_examples(n, right):
    bins = np.sort(_draw((2, 3, n)), axis=-1)
    bins[1] = bins[1, :, ::-1]
    x = _draw((2, 3, 240))
    _nested(lambda v, b: np.digitize(v, b, right=right), x, bins)
